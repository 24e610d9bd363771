#!/usr/bin/env bash
# test-serve.sh: `fgemma serve` against the official openai Python client (tests/serve/test_serve.py),
# on 127.0.0.1, in two passes (between them, outside --quick, three replicas behind Debian's nginx:
# tests/serve/test_lb.py):
#   1. tv-mini: everything test_serve.py checks (the demo utterances' calls, streaming, tool_choice,
#      /v1/nlu against `fgemma call`, concurrency, hostile clients, RSS, the limits server).
#   2. tv-270m: the real google/gemma-3-270m Q4_K_M base (.cache/models, fetched by scripts/setup.sh)
#      with --lora models/tv-270m-lora.gguf, the openai part only (test_serve.py --openai-only): the 12
#      demo utterances give their expected calls, streaming reassembles to the same answers,
#      tool_choice none / required / named / unknown, then 4 client threads x 3 requests identical to
#      the sequential answers. With --quick (the sanitizer runs) the 4-utterance subset and no
#      concurrent round. The server's --timeout is 600 s there: under ASan the catalog prefill on one
#      thread alone takes ~30 s on a loaded machine. A missing base is an error (it names
#      scripts/setup.sh), never a silent skip; only --skip-270m leaves the pass out, and says why.
# The client lives in a venv under .cache/serve-venv (pip install of the pinned version below, once;
# PyPI is the only download).
#
# Usage: scripts/test-serve.sh [--fgemma PATH] [--models DIR] [--base GGUF] [--skip-270m REASON]
#                              [test_serve.py options...]
#   --fgemma  the binary to test (default build/fgemma; the sanitizer trees pass theirs)
#   --models  directory of tv-mini-q8_0.gguf (default build/models, where the tvmini_models fixture
#             unpacks it)
#   --base    the tv-270m base (default .cache/models/gemma-3-270m-q4_k_m.gguf)
#   --skip-270m REASON  leave the tv-270m pass out, saying so with REASON (scripts/test.sh's TSan run:
#             the 4-utterance pass had not finished after 7 CPU-minutes there)
# The remaining options go to the tv-mini pass of test_serve.py (e.g. --requests 10 under the
# sanitizers); of them, --quick also makes the tv-270m pass short.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
openai_version=3.60.0
fgemma=build/fgemma
models=build/models
base=.cache/models/gemma-3-270m-q4_k_m.gguf
adapter=models/tv-270m-lora.gguf
skip270=""
quick=()
rest=()
while [ $# -gt 0 ]; do
  case "$1" in
    --fgemma) fgemma=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --skip-270m) skip270=$2; shift 2 ;;
    --quick) quick=(--quick); rest+=("$1"); shift ;;
    *) rest+=("$1"); shift ;;
  esac
done
# the tv-270m pass needs the real base: fail before anything runs rather than after the tv-mini pass
if [ -z "$skip270" ] && [ ! -f "$base" ]; then
  echo "test-serve: ERROR: the tv-270m pass needs the real Gemma 3 270M base $base;" \
       "scripts/setup.sh fetches it (step 3), or pass --base PATH" >&2
  exit 1
fi
if [ ! -f "$adapter" ]; then
  echo "test-serve: ERROR: $adapter is missing (it is committed: check out the whole tree)" >&2
  exit 1
fi
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
echo "test-serve: pass 1/2, tv-mini ($models/tv-mini-q8_0.gguf)"
rc=0
"$venv/bin/python" tests/serve/test_serve.py --fgemma "$fgemma" --model "$models/tv-mini-q8_0.gguf" \
  --tools tests/data/nlu/tv-catalog.json --expected tests/tvmini/utterances-de.expected.jsonl \
  ${rest[@]+"${rest[@]}"} || rc=$?
# replicas behind nginx (tests/serve/test_lb.py): in the release run only (--quick: the sanitizer runs,
# whose server code the pass above covers); a few seconds
if [ ${#quick[@]} -eq 0 ]; then
  echo "test-serve: three replicas behind nginx, one shared --snapshot-dir (tests/serve/test_lb.py)"
  nginx=$root/.cache/nginx/pkg/usr/sbin/nginx # scripts/setup.sh unpacks Debian's package there
  [ -x "$nginx" ] || nginx=$(command -v nginx || echo /usr/sbin/nginx)
  "$venv/bin/python" tests/serve/test_lb.py --fgemma "$fgemma" --model "$models/tv-mini-q8_0.gguf" \
    --tools tests/data/nlu/tv-catalog.json --nginx "$nginx" || rc=$?
fi
if [ ${#quick[@]} -gt 0 ]; then
  concurrent=(--requests 0)
  what="4 demo utterances, streaming, tool_choice (--quick)"
else
  concurrent=(--threads 4 --requests 3)
  what="12 demo utterances, streaming, tool_choice, 4 x 3 concurrent requests"
fi
if [ -n "$skip270" ]; then
  echo "test-serve: pass 2/2, tv-270m: SKIPPED ($skip270)"
else
  echo "test-serve: pass 2/2, tv-270m ($base + $adapter): $what"
  "$venv/bin/python" tests/serve/test_serve.py --fgemma "$fgemma" --model "$base" --lora "$adapter" \
    --tools tests/data/nlu/tv-catalog.json --expected tests/tvmini/utterances-de.expected.jsonl \
    --openai-only --server-timeout 600 ${quick[@]+"${quick[@]}"} "${concurrent[@]}" || rc=$?
fi
if [ "$rc" -ne 0 ]; then
  echo "test-serve: FAILED (exit status $rc)" >&2
fi
exit "$rc"
