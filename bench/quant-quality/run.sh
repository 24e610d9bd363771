#!/usr/bin/env bash
# bench/quant-quality/run.sh SOURCE.gguf [WORKDIR] — fgemma's quantizers against llama-quantize's.
#
# SOURCE: any gemma3 GGUF (e.g. google/gemma-3-270m's Q4_K_M file). It is turned into an F32 source
# (fgemma convert --type f32: exact dequantization); every type/mix of $TYPES is then written from
# that same source twice: by `fgemma convert --type T` and by llama.cpp's llama_model_quantize
# (tests/tools/llama_quantize.py, node-llama-cpp's prebuilt libllama: the code of llama-quantize).
# For each pair it prints
#   - the weight RMSE per tensor type against the F32 source (build/bench/bench_quant_rmse), and
#   - the next-token KL divergence to the F32 source over the first $POSITIONS tokens of the GPL-3
#     text (tests/data/real/gpl-3.0.txt), top-1 agreement and cosine: `fgemma eval --text`, i.e.
#     fgemma's forward on both files.
# Environment: TYPES (default below), POSITIONS (128), THREADS (2), FGEMMA (build/fgemma).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
src=${1:?usage: run.sh SOURCE.gguf [WORKDIR]}
work=${2:-$root/build/quant-quality}
fgemma=${FGEMMA:-$root/build/fgemma}
rmse=$root/build/bench/bench_quant_rmse
types=${TYPES:-"q4_1 q5_0 q5_1 q2_k q3_k_m q4_k_m q5_k_m q6_k iq4_nl iq4_xs"}
positions=${POSITIONS:-128}
threads=${THREADS:-2}
text=$root/tests/data/real/gpl-3.0.txt
mkdir -p "$work"
f32=$work/source-f32.gguf
[ -s "$f32" ] || "$fgemma" convert "$src" -o "$f32" --type f32
models=()
for t in $types; do
  [ -s "$work/fgemma-$t.gguf" ] || { /usr/bin/time -f "fgemma convert $t: %e s wall, %U s user, %M KiB" \
      "$fgemma" convert "$f32" -o "$work/fgemma-$t.gguf" --type "$t" 2>&1 | grep -v '^convert: wrote' >&2; }
  [ -s "$work/llama-$t.gguf" ] || { /usr/bin/time -f "llama-quantize $t: %e s wall, %U s user, %M KiB" \
      python3 "$root/tests/tools/llama_quantize.py" "$f32" "$work/llama-$t.gguf" "$t" --threads 1 \
      > "$work/llama-$t.log" 2>&1 || { cat "$work/llama-$t.log" >&2; exit 1; }; tail -1 "$work/llama-$t.log" >&2; }
  models+=("$work/fgemma-$t.gguf" "$work/llama-$t.gguf")
done
echo "== weight RMSE against the F32 source (per tensor type)"
"$rmse" "$f32" "${models[@]}" | tee "$work/rmse.tsv"
echo "== next-token agreement with the F32 source over $positions positions of $(basename "$text")"
list=$(IFS=,; echo "${models[*]}")
"$fgemma" eval --text "$text" --positions "$positions" --threads "$threads" -m "$src,$list" --reference "$f32" \
  | tee "$work/kl.txt"
