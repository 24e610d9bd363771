#!/usr/bin/env bash
# test-install.sh: fgemma as a dependency. Installs a built tree (cmake --install) into a scratch
# prefix, then builds examples/c-api against it three ways — the CMake package (fgemma::fgemma,
# shared, and fgemma::fgemma_static) and pkg-config (shared, and --static) — and checks that each
# binary answers an utterance with exactly the `result` the CLI prints for it. Also checks the
# shared library's SONAME and that it exports only fg_ symbols.
#
# Usage: scripts/test-install.sh [BUILD_DIR] [MODEL.gguf]
#   BUILD_DIR defaults to build/; MODEL to build/models/tiny-vocab-f32.gguf (any model with a
#   vocabulary; the tests generate that one).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${1:-build}
model=${2:-$build/models/tiny-vocab-f32.gguf}
catalog=$root/examples/tv-catalog.json
utt="Schalte auf ZDF um"

die() { printf 'test-install: FAIL: %s\n' "$*" >&2; exit 1; }
[ -x "$build/fgemma" ] || die "$build/fgemma not found: build first (cmake --build $build)"
[ -f "$model" ] || die "$model not found (ctest -R test_engine generates it)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null

libdir=$(dirname "$(find "$prefix" -name 'libfgemma.so' | head -n 1)")
[ -n "$libdir" ] || die "no libfgemma.so installed"
for f in "$prefix/include/fgemma.h" "$libdir/libfgemma.a" "$libdir/pkgconfig/fgemma.pc" \
         "$libdir/cmake/fgemma/fgemmaConfig.cmake" "$prefix/bin/fgemma"; do
  [ -e "$f" ] || die "not installed: ${f#"$prefix"/}"
done
soname=$(readelf -d "$libdir/libfgemma.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ -z "$soname" ] || [ ! -e "$libdir/$soname" ]; then die "libfgemma.so has no SONAME, or $soname is not installed"; fi
foreign=$(nm -D --defined-only "$libdir/libfgemma.so" | awk '{print $3}' | grep -v '^fg_' || true)
[ -z "$foreign" ] || die "libfgemma.so exports non-fg_ symbols: $foreign"

want=$("$build/fgemma" call -m "$model" --tools "$catalog" --constrained call-only "$utt" 2>/dev/null |
  sed -n 's/.*"result":\(.*\),"raw":.*/\1/p')
[ -n "$want" ] || die "the CLI gave no result for '$utt'"

check() { # LABEL BINARY [LD_LIBRARY_PATH]
  local got
  got=$(LD_LIBRARY_PATH=${3:-} "$2" "$model" "$catalog" "$utt") || die "$1: exit status $?"
  [ "$got" = "$want" ] || die "$1: got $got, want $want"
  printf 'test-install: %-28s %s\n' "$1" "$got"
}

# CMake package
cmake -S examples/c-api -B "$tmp/ex" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/ex" >/dev/null
readelf -d "$tmp/ex/nlu_hello" | grep -q "NEEDED.*\[$soname\]" || die "nlu_hello does not link $soname"
if readelf -d "$tmp/ex/nlu_hello_static" | grep -q 'NEEDED.*libfgemma'; then die "nlu_hello_static links libfgemma.so"; fi
check "cmake fgemma::fgemma" "$tmp/ex/nlu_hello"
check "cmake fgemma::fgemma_static" "$tmp/ex/nlu_hello_static"

# pkg-config
export PKG_CONFIG_PATH=$libdir/pkgconfig
[ "$(pkg-config --modversion fgemma)" = "$(sed -n 's/^project(fgemma VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)" ] ||
  die "fgemma.pc has another version than CMakeLists.txt"
# shellcheck disable=SC2046 # pkg-config's flags are meant to be split
cc -std=c11 -o "$tmp/pc_shared" examples/c-api/nlu_hello.c $(pkg-config --cflags --libs fgemma)
# shellcheck disable=SC2046
cc -std=c11 -o "$tmp/pc_static" examples/c-api/nlu_hello.c $(pkg-config --cflags fgemma) \
  -Wl,-Bstatic $(pkg-config --libs-only-L fgemma) -lfgemma -Wl,-Bdynamic $(pkg-config --static --libs-only-l fgemma | sed 's/-lfgemma//')
check "pkg-config (shared)" "$tmp/pc_shared" "$libdir"
check "pkg-config --static" "$tmp/pc_static"
echo "test-install: ok"
