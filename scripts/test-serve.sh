#!/usr/bin/env bash
# test-serve.sh: `fgemma serve` against the official openai Python client (tests/serve/test_serve.py),
# serving tv-mini on 127.0.0.1. The client lives in a venv under .cache/serve-venv (pip install of the
# pinned version below, once; PyPI is the only download).
#
# Usage: scripts/test-serve.sh [--fgemma PATH] [--models DIR] [test_serve.py options...]
#   --fgemma  the binary to test (default build/fgemma; the sanitizer trees pass theirs)
#   --models  directory of tv-mini-q8_0.gguf (default build/models, where the tvmini_models fixture
#             unpacks it)
# The remaining options go to test_serve.py (e.g. --requests 10 under the sanitizers).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
openai_version=3.60.0
fgemma=build/fgemma
models=build/models
rest=()
while [ $# -gt 0 ]; do
  case "$1" in
    --fgemma) fgemma=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    *) rest+=("$1"); shift ;;
  esac
done
venv="$root/.cache/serve-venv"
if ! "$venv/bin/python" -c "import openai, sys; sys.exit(openai.__version__ != '$openai_version')" 2>/dev/null; then
  echo "test-serve: creating $venv with openai==$openai_version"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "openai==$openai_version"
fi
if [ ! -f "$models/tv-mini-q8_0.gguf" ]; then
  # the release tree's fixture unpacks models/tv-mini.gguf.xz and converts it
  ctest --test-dir build -R '^tvmini_models$' --output-on-failure >/dev/null
fi
exec "$venv/bin/python" tests/serve/test_serve.py --fgemma "$fgemma" --model "$models/tv-mini-q8_0.gguf" \
  --tools tests/data/nlu/tv-catalog.json --expected tests/tvmini/utterances-de.expected.jsonl ${rest[@]+"${rest[@]}"}
