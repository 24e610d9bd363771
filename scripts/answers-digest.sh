#!/usr/bin/env bash
# Prints the answers `fgemma call` gives on the dev sets, timings removed, one line per
# (model, mode, utterance), then their sha256. A change meant to keep behaviour (a renovation, a
# faster kernel) must print the same digest before and after it:
#
#   scripts/answers-digest.sh build/fgemma > before.txt    # on the old commit
#   scripts/answers-digest.sh build/fgemma > after.txt     # on the new one
#   diff before.txt after.txt
#
# Models: tv-mini Q8_0 on training/tv-dev.jsonl (from the build's test models, FG_TEST_MODELS or
# build/models), and the real Gemma 3 270M Q4_K_M with models/tv-270m-lora.gguf on
# training/tv270m-dev.jsonl (from .cache/models, scripts/setup.sh). Modes: call-or-text,
# call-only and off, each with speculation on and off. Options: --quick (every 4th utterance).
set -euo pipefail
usage() { sed -n '2,13s/^# \{0,1\}//p' "$0"; }
fg=""; every=1
for a in "$@"; do
  case "$a" in
    -h|--help) usage; exit 0 ;;
    --quick) every=4 ;;
    -*) echo "answers-digest: unknown option '$a'" >&2; usage >&2; exit 2 ;;
    *) fg="$a" ;;
  esac
done
[ -n "$fg" ] || { usage >&2; exit 2; }
[ -x "$fg" ] || { echo "answers-digest: '$fg' is not an executable fgemma" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
models="${FG_TEST_MODELS:-$root/build/models}"
tvmini="$models/tv-mini-q8_0.gguf"
base="$root/.cache/models/gemma-3-270m-q4_k_m.gguf"
for f in "$tvmini" "$base"; do
  [ -f "$f" ] || { echo "answers-digest: missing $f (build the tests' models / run scripts/setup.sh)" >&2; exit 2; }
done
tools="$root/tests/data/nlu/tv-catalog.json"
utts() { python3 -c 'import json,sys
for i,l in enumerate(open(sys.argv[1])):
    if i % int(sys.argv[2]) == 0: print(json.loads(l)["utterance"])' "$1" "$every"; }
strip() { python3 -c 'import json,sys
for l in sys.stdin:
    o = json.loads(l); o.pop("ms", None); print(sys.argv[1], json.dumps(o, sort_keys=True, ensure_ascii=False))' "$1"; }
out="$(mktemp)"; trap 'rm -f "$out"' EXIT
for mode in call-or-text call-only off; do
  for spec in on off; do
    utts "$root/training/tv-dev.jsonl" | "$fg" call -m "$tvmini" --tools "$tools" -t 2 \
      --constrained "$mode" --speculate "$spec" 2>/dev/null | strip "tv-mini/$mode/$spec" >> "$out"
    utts "$root/training/tv270m-dev.jsonl" | "$fg" call -m "$base" --lora "$root/models/tv-270m-lora.gguf" \
      --tools "$tools" -t 2 --constrained "$mode" --speculate "$spec" 2>/dev/null | strip "tv-270m/$mode/$spec" >> "$out"
  done
done
cat "$out"
echo "lines $(wc -l < "$out") sha256 $(sha256sum < "$out" | cut -d' ' -f1)"
