#!/usr/bin/env bash
# ------------------------------------------------------------------------------------------------
# compare_ids.sh: greedy ids of an ARM build (run through its emulator) must equal the host (x86)
# build's on the same model and prompt. Registered by tests/arm.cmake in cross-compiled ARM trees.
#
#   compare_ids.sh --host HOST_FGEMMA --model FILE.gguf --gen "GEN-MODEL ARGS" --vocab N
#                  --prompt N --steps N --seed S [--threads T] [--isa ISA] [--host-isa ISA]
#                  -- EMULATOR... TARGET_FGEMMA
#   compare_ids.sh --gen-only --host HOST_FGEMMA --model FILE.gguf --gen "GEN-MODEL ARGS"
#
# The model is generated with the HOST binary when FILE is missing (`fgemma gen-model GEN-MODEL ARGS`,
# byte-identical to what the tests' fg_test_ensure_model writes): never under emulation. The prompt is
# <bos> followed by PROMPT-1 ids drawn from 300..VOCAB-1 by a MINSTD generator seeded with S, so a different
# seed gives a different prompt. --isa forces the target's kernel table (FG_ISA; the run fails when
# the build or CPU lacks it), so the check cannot silently pass on the reference kernels; --host-isa
# does the same for the host: avx2 follows the same numerical specs as NEON (the fma and q8 specs of
# src/kernels/kernels.h), while AVX-512's BF16 kernels follow the bf16dp spec and the reference
# kernels quantize no activations, so those may pick other ids.
# --gen none: the model is a given file (the real Gemma 3 270M from scripts/setup.sh), never generated;
# a missing one fails the check with a message.
# Exit 0 when both runs succeed and print the same ids, 1 otherwise (both id lists are printed).
set -euo pipefail

host='' model='' gen='' vocab='' prompt='' steps='' seed='' threads=2 isa='' host_isa='' gen_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --gen-only) gen_only=1; shift ;;
    --host) host=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --gen) gen=$2; shift 2 ;;
    --vocab) vocab=$2; shift 2 ;;
    --prompt) prompt=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --isa) isa=$2; shift 2 ;;
    --host-isa) host_isa=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "compare_ids.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
target=("$@")
required=(host model gen)
[ "$gen_only" = 1 ] || required+=(vocab prompt steps seed)
for v in "${required[@]}"; do
  [ -n "${!v}" ] || { echo "compare_ids.sh: --$v is required" >&2; exit 2; }
done
[ "$gen_only" = 1 ] || [ ${#target[@]} -gt 0 ] || { echo "compare_ids.sh: no target command after --" >&2; exit 2; }
if [ ! -x "$host" ]; then
  echo "compare_ids.sh: host fgemma '$host' is missing: configure the ARM tree with" \
       "-DFG_HOST_FGEMMA=<x86 build>/fgemma (scripts/test-arm.sh does)" >&2
  exit 1
fi

# ---- model: generated natively if missing -------------------------------------------------------
if [ ! -s "$model" ] && [ "$gen" = none ]; then
  echo "compare_ids.sh: $model is missing (run scripts/setup.sh: it fetches the real model)" >&2
  exit 1
fi
if [ ! -s "$model" ]; then
  tmp="$model.tmp.$$"
  # shellcheck disable=SC2086  # GEN-MODEL ARGS are words
  "$host" gen-model $gen -o "$tmp"
  mv -f "$tmp" "$model"
fi
if [ "$gen_only" = 1 ]; then
  echo "model $model present"
  exit 0
fi

# ---- prompt: <bos> + PROMPT-1 pseudo-random ids --------------------------------------------------
ids=$(awk -v n="$prompt" -v seed="$seed" -v vocab="$vocab" 'BEGIN {
  # MINSTD (x = 48271 x mod 2^31-1): every product stays below 2^53, exact in awk doubles
  m = 2147483647; x = (seed * 7919 + 12345) % m; if (x == 0) x = 1
  out = "2"
  for (i = 1; i < n; i++) { x = (x * 48271) % m; out = out " " (300 + x % (vocab - 300)) }
  print out }')

# ---- both runs -----------------------------------------------------------------------------------
echo "model $model, prompt $prompt ids (seed $seed), $steps greedy steps, $threads threads"
start=$(date +%s)
# FG_ISA empty = the dispatcher's choice
want=$(FG_ISA="$host_isa" "$host" generate -m "$model" --ids "$ids" -n "$steps" -t "$threads")
echo "host   (${host_isa:-default kernels}, $(( $(date +%s) - start )) s): $want"
start=$(date +%s)
got=$(FG_ISA="$isa" "${target[@]}" generate -m "$model" --ids "$ids" -n "$steps" -t "$threads")
echo "target (${isa:-default kernels}, $(( $(date +%s) - start )) s): $got"
n_got=$(wc -w <<<"$got")
if [ "$n_got" -ne "$steps" ]; then
  echo "FAIL: the target printed $n_got ids, want $steps" >&2
  exit 1
fi
if [ "$want" != "$got" ]; then
  echo "FAIL: greedy ids differ between the host and the target build" >&2
  exit 1
fi
echo "ok: $steps greedy ids equal"
