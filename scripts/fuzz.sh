#!/usr/bin/env bash
# Fuzzes fgemma with libFuzzer: builds every tests/fuzz/fuzz_<name>.c with clang
# (-fsanitize=fuzzer,address,undefined, the library compiled from its sources with the same
# sanitizers) and runs each target for a while, one after the other, at low priority.
#
#   scripts/fuzz.sh [--time SECONDS] [--out DIR] [NAME ...]   fuzz (default: every target, 60 s each)
#   scripts/fuzz.sh --build-only                              only build the fuzzers
#   scripts/fuzz.sh --minimize [NAME ...]                     shrink the committed corpora
#
# Fuzzing never writes into tests/fuzz/corpus/. Each target reads its committed corpus and writes what
# it finds into a scratch directory (DIR/scratch/NAME); afterwards the finds are merged against the
# committed corpus and only the inputs that add coverage are copied to DIR/new/NAME for review.
# Crashes land in DIR/crashes/NAME/; to keep one as a regression test, copy it to
# tests/fuzz/corpus/NAME/crash-<short-description> (tests/fuzz.cmake replays every corpus file).
# DIR/summary.txt lists executions, coverage (cov = edges, ft = features) and crashes per target.
#
# --minimize runs `-merge=1` over a committed corpus and deletes the files that add no coverage,
# keeping the original names of the rest; files named crash-* are always kept.
#
# Environment: FG_FUZZ_CORPUS (corpus root, default tests/fuzz/corpus), FG_FUZZ_NICE (default 10),
# FG_ISA (kernel table, e.g. avx2; see src/kernels/dispatch.c), FG_FUZZ_MODEL (a GGUF for the tokenizer/snapshot targets;
# by default they use built-in or generated tiny models), CC_FUZZ (default clang).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

time_s=60
out="$root/build-fuzz/runs"
mode=fuzz
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time) time_s=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --minimize) mode=minimize; shift ;;
    --build-only) mode=build; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
if [ ${#names[@]} -eq 0 ]; then
  for f in tests/fuzz/fuzz_*.c; do n=$(basename "$f" .c); names+=("${n#fuzz_}"); done
fi
cc=${CC_FUZZ:-clang}
corpora=${FG_FUZZ_CORPUS:-tests/fuzz/corpus}
nice_n=${FG_FUZZ_NICE:-10}
bdir="$root/build-fuzz"

# ---- build: the library with sanitizers and fuzzer instrumentation, then one binary per target ----
san="-fsanitize=address,undefined -fno-sanitize-recover=all"
CC=$cc cmake -S . -B "$bdir/lib" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFG_BUILD_TESTS=OFF \
  -DFG_BUILD_BENCH=OFF -DFG_WERROR=OFF -DFG_SANITIZE_ADDRESS=ON -DFG_SANITIZE_UNDEFINED=ON \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null
nice -n "$nice_n" cmake --build "$bdir/lib" --target fgemma_static -j 2 >/dev/null
cjson_flags=$(pkg-config --cflags --libs libcjson 2>/dev/null || echo "-lcjson")
for n in "${names[@]}"; do
  src="tests/fuzz/fuzz_$n.c"
  [ -f "$src" ] || { echo "fuzz.sh: no such target: $src" >&2; exit 2; }
  bin="$bdir/fuzz_$n"
  if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ] || [ "$bdir/lib/libfgemma.a" -nt "$bin" ]; then
    # shellcheck disable=SC2086 # $san and $cjson_flags are option lists, split on purpose
    nice -n "$nice_n" "$cc" -g -O1 -fsanitize=fuzzer $san -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 \
      -Iinclude -Isrc -Itests "$src" "$bdir/lib/libfgemma.a" $cjson_flags -lm -lpthread -o "$bin"
  fi
done
[ "$mode" = build ] && { echo "fuzzers in $bdir"; exit 0; }

# per-target options
opts_for() {
  local o="-timeout=30 -rss_limit_mb=2048 -print_final_stats=1"
  case "$1" in
    catalog) o="$o -max_len=8192" ;;
    callparse) o="$o -max_len=4096" ;;
    tokenizer) o="$o -max_len=4096" ;;
    snapshot) o="$o -max_len=32768" ;;
    gguf) o="$o -max_len=65536" ;;
    safetensors) o="$o -max_len=4096" ;;
    hfvocab) o="$o -max_len=32768" ;;
  esac
  [ -f "tests/fuzz/$1.dict" ] && o="$o -dict=tests/fuzz/$1.dict"
  echo "$o"
}

hashes() { # sha1 of every file in a directory, one per line
  [ -d "$1" ] && find "$1" -maxdepth 1 -type f -exec sha1sum {} + | cut -d' ' -f1 | sort -u
  return 0
}

# ---- --minimize: shrink the committed corpora in place -------------------------------------------
if [ "$mode" = minimize ]; then
  for n in "${names[@]}"; do
    corpus="$corpora/$n"
    [ -d "$corpus" ] || continue
    tmp=$(mktemp -d)
    # shellcheck disable=SC2046 # opts_for prints libFuzzer options, split on purpose
    nice -n "$nice_n" "$bdir/fuzz_$n" -merge=1 $(opts_for "$n") -artifact_prefix="$tmp.crash-" "$tmp" "$corpus" \
      >"$tmp.log" 2>&1 ||
      { echo "fuzz.sh: merge of $n failed, see $tmp.log" >&2; exit 1; }
    keep=$(hashes "$tmp")
    before=$(find "$corpus" -maxdepth 1 -type f | wc -l)
    for f in "$corpus"/*; do
      [ -f "$f" ] || continue
      case "$(basename "$f")" in crash-*) continue ;; esac
      h=$(sha1sum "$f" | cut -d' ' -f1)
      grep -qx "$h" <<<"$keep" || rm -f "$f"
    done
    after=$(find "$corpus" -maxdepth 1 -type f | wc -l)
    "$bdir/fuzz_$n" -runs=0 -artifact_prefix="$tmp.crash-" "$corpus" >/dev/null 2>&1 ||
      { echo "fuzz.sh: $n: replay after minimizing failed" >&2; exit 1; }
    echo "$n: $before -> $after files"
    rm -rf "$tmp" "$tmp.log"
  done
  exit 0
fi

# ---- fuzz: each target in turn, finds into scratch directories ----------------------------------
mkdir -p "$out"
summary="$out/summary.txt"
printf '%-10s %8s %12s %10s %8s %8s %6s %7s\n' target seconds executions exec/s cov ft corpus crashes >"$summary"
status=0
for n in "${names[@]}"; do
  work="$out/scratch/$n"; crashes="$out/crashes/$n"; log="$out/logs/$n.log"
  mkdir -p "$work" "$crashes" "$out/logs"
  echo "== fuzz_$n for ${time_s}s (log: $log)"
  set +e
  # shellcheck disable=SC2046 # the same
  nice -n "$nice_n" "$bdir/fuzz_$n" $(opts_for "$n") -max_total_time="$time_s" \
    -artifact_prefix="$crashes/" "$work" "$corpora/$n" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(grep -o 'cov: [0-9]*' <<<"$last" | grep -o '[0-9]*' || true)
  ft=$(grep -o 'ft: [0-9]*' <<<"$last" | grep -o '[0-9]*' || true)
  corp=$(grep -o 'corp: [0-9]*' <<<"$last" | grep -o '[0-9]*' || true)
  [ "$rc" -ne 0 ] && status=1
  # new coverage beyond the committed corpus, for review (never copied into tests/fuzz/corpus)
  merged="$out/merged/$n"; new="$out/new/$n"
  rm -rf "$merged" "$new"; mkdir -p "$merged" "$new"
  cp "$corpora/$n"/* "$merged"/ 2>/dev/null || true
  # shellcheck disable=SC2046 # the same
  nice -n "$nice_n" "$bdir/fuzz_$n" -merge=1 $(opts_for "$n") -artifact_prefix="$crashes/" "$merged" "$work" \
    >"$out/logs/$n.merge.log" 2>&1 || true
  old=$(hashes "$corpora/$n")
  for f in "$merged"/*; do
    [ -f "$f" ] || continue
    grep -qx "$(sha1sum "$f" | cut -d' ' -f1)" <<<"$old" || cp "$f" "$new"/
  done
  ncrash=$(find "$crashes" -type f | wc -l) # the run's and the merge's
  [ "$ncrash" -ne 0 ] && status=1
  printf '%-10s %8s %12s %10s %8s %8s %6s %7s\n' "$n" "$time_s" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
    "${ft:-?}" "${corp:-?}" "$ncrash" >>"$summary"
  echo "   executions ${execs:-?}, cov ${cov:-?}, ft ${ft:-?}, crashes $ncrash, new coverage: $(find "$new" -mindepth 1 -maxdepth 1 | wc -l) files in $new"
done
echo
cat "$summary"
exit $status
