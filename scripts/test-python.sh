#!/usr/bin/env bash
# Builds the Python package from a clean clone and runs its tests, as CI does (scripts/test.sh):
#   1. git clone of this checkout's HEAD into a temporary folder (uncommitted changes are not in it),
#   2. a fresh venv; `python -m build` there makes the sdist and, from the sdist, the wheel
#      (scikit-build-core compiles the library with the repository's CMake: 1-3 minutes on 2 cores),
#   3. pip install of that wheel with the test extras (pytest, numpy), then pytest over
#      bindings/python/tests, run outside the source tree so that the installed package is imported.
# The tests need the generated models (the C tests write them) and the CLI of the same source:
#   FGEMMA_TEST_MODELS (default build/models), FGEMMA_CLI (default build/fgemma).
# Needs python3 with venv and its C headers (scripts/setup.sh installs python3-venv, python3-dev) and
# PyPI for build, scikit-build-core, pytest and numpy.
#
# Usage: scripts/test-python.sh [PYTEST ARGS...]     e.g. scripts/test-python.sh -k "not parity"
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
python=${PYTHON:-python3}
export FGEMMA_TEST_MODELS=${FGEMMA_TEST_MODELS:-$root/build/models}
export FGEMMA_CLI=${FGEMMA_CLI:-$root/build/fgemma}
die() { printf 'test-python: ERROR: %s\n' "$*" >&2; exit 1; }
[ -x "$FGEMMA_CLI" ] || die "no fgemma CLI at $FGEMMA_CLI (build the CMake tree first, or set FGEMMA_CLI)"
[ -d "$FGEMMA_TEST_MODELS" ] || die "no test models in $FGEMMA_TEST_MODELS (run the C tests first, or set FGEMMA_TEST_MODELS)"

work=$(mktemp -d "${TMPDIR:-/tmp}/fgemma-python.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  echo "test-python: note: the working tree has uncommitted changes; the clean clone tests HEAD only"
fi
git clone -q --no-local "$root" "$work/src"
echo "test-python: clean clone of $(git -C "$work/src" log -1 --format='%h %s' | cut -c1-72)"

"$python" -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q build
t0=$(date +%s)
"$py" -m build --outdir "$work/dist" "$work/src" >"$work/build.log" 2>&1 || { tail -50 "$work/build.log"; die "python -m build failed"; }
sdist=$(ls "$work"/dist/fgemma-*.tar.gz)
wheel=$(ls "$work"/dist/fgemma-*.whl)
echo "test-python: built $(basename "$sdist") and $(basename "$wheel") in $(($(date +%s) - t0)) s"
"$py" -m pip install -q "${wheel}[test]"

# outside the source tree: `import fgemma` must find the installed package
cd "$work"
"$py" -m pytest -p no:cacheprovider -c "$work/src/pyproject.toml" --rootdir "$work/src" \
  "$work/src/bindings/python/tests" -ra "$@"
