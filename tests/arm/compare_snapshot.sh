#!/usr/bin/env bash
# compare_snapshot.sh: a catalog snapshot written by one build and kernel table is loaded by another,
# through `fgemma call --snapshot-dir` (the directory an app ships, or replicas share), and answers as the
# writer did.
#
#   compare_snapshot.sh --host FGEMMA --model GGUF --tools CATALOG.json --host-isa ISA
#                       [--isa ISA | --x86-tables] [--same-bytes] -- TARGET COMMAND...
#
# --x86-tables: the target is run once per other x86 table this CPU has (ref always; avx512 where the
# CPU has AVX-512 with VNNI and BF16), each loading the host's snapshot.
#
# The host binary (FG_ISA=--host-isa) prefills the catalog and writes the snapshot into a new directory,
# answering three utterances; the target command (an ARM build through its emulator, or the host itself
# with another FG_ISA) must report "loaded from snapshot" for the same file and give the same calls. With
# --same-bytes (tables of one numerical spec: the host's avx2 and ARM's neon) the whole answer lines must
# be identical (raw text, stop, token counts), timings aside.
set -euo pipefail
host="" model="" tools="" host_isa="" isa="" same=0
while [ $# -gt 0 ]; do
  case "$1" in
    --host) host=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --tools) tools=$2; shift 2 ;;
    --host-isa) host_isa=$2; shift 2 ;;
    --isa) isa=$2; shift 2 ;;
    --same-bytes) same=1; shift ;;
    --x86-tables)
      isa=ref
      if grep -qw avx512f /proc/cpuinfo && grep -qw avx512_vnni /proc/cpuinfo && grep -qw avx512_bf16 /proc/cpuinfo; then
        isa="ref avx512"
      fi
      shift ;;
    --) shift; break ;;
    *) echo "compare_snapshot.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
target=("$@")
for v in host model tools host_isa; do
  [ -n "${!v}" ] || { echo "compare_snapshot.sh: --${v//_/-} is required" >&2; exit 2; }
done
[ ${#target[@]} -gt 0 ] || { echo "compare_snapshot.sh: no target command after --" >&2; exit 2; }
[ -x "$host" ] || { echo "compare_snapshot.sh: host fgemma '$host' is missing" >&2; exit 1; }
[ -s "$model" ] || { echo "compare_snapshot.sh: $model is missing (the x86 suite unpacks tv-mini)" >&2; exit 1; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
utts=("Ton aus" "Schalte auf ZDF um" "Mach bitte etwas lauter")
# the answer lines without their timings
strip() { sed -E 's/,"ms":\{[^}]*\}\}$/}/'; }
calls() { sed -E 's/^.*"result":(\{"calls":.*\],"text":"[^"]*"\}).*$/\1/'; }

FG_ISA="$host_isa" "$host" call -m "$model" --tools "$tools" --snapshot-dir "$dir" -t 1 "${utts[@]}" \
  >"$dir/want" 2>"$dir/want.err"
grep -q "snapshot written" "$dir/want.err" || { echo "FAIL: the host wrote no snapshot:" >&2; cat "$dir/want.err" >&2; exit 1; }
file=$(ls "$dir"/*.fgsnap)
echo "host (${host_isa}): wrote $(basename "$file") ($(stat -c %s "$file") bytes)"

for t in ${isa:-default}; do
  [ "$t" = default ] && t=""
  FG_ISA="$t" "${target[@]}" call -m "$model" --tools "$tools" --snapshot-dir "$dir" -t 1 "${utts[@]}" \
    >"$dir/got" 2>"$dir/got.err"
  if ! grep -q "loaded from snapshot" "$dir/got.err"; then
    echo "FAIL: the target (${t:-default kernels}) did not load the snapshot:" >&2
    cat "$dir/got.err" >&2
    exit 1
  fi
  [ "$(ls "$dir"/*.fgsnap)" = "$file" ] || { echo "FAIL: the target wrote another snapshot" >&2; exit 1; }
  if [ "$same" = 1 ]; then
    if ! diff <(strip <"$dir/want") <(strip <"$dir/got") >&2; then
      echo "FAIL: the answers from the loaded snapshot differ from the writer's (${t:-default kernels})" >&2
      exit 1
    fi
  elif ! diff <(calls <"$dir/want") <(calls <"$dir/got") >&2; then
    echo "FAIL: the calls from the loaded snapshot differ from the writer's (${t:-default kernels})" >&2
    exit 1
  fi
  echo "ok: ${target[*]##*/} (${t:-default kernels}) loaded it and answered ${#utts[@]} utterances as the writer"
done
