#!/usr/bin/env bash
# build.sh: the JNI library for this machine, as `mvn` runs it (process-resources): configures the
# repository with CMake (-DFG_BUILD_JNI=ON, cJSON compiled in from FG_CJSON_SRC, default
# .cache/cjson-src from scripts/setup.sh), builds libfgemma_jni.so and the CLI (the tests compare
# against it), checks the library's dependencies (check-lib.sh) and copies it to OUT_DIR, from where it
# goes into the JAR.
#
# Usage: build.sh BUILD_DIR OUT_DIR
# Environment: FG_JOBS (default 2); FG_JNI_CMAKE_ARGS: more CMake arguments, e.g.
#   "-DFG_SANITIZE_ADDRESS=ON -DFG_SANITIZE_UNDEFINED=ON" for the ASan run (then the dependency check
#   is skipped: the library needs libasan).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
[ $# -eq 2 ] || { echo "usage: build.sh BUILD_DIR OUT_DIR" >&2; exit 2; }
build=$1 out=$2
cjson=${FG_CJSON_SRC:-$root/.cache/cjson-src}
if [ ! -f "$cjson/cJSON.c" ]; then
  echo "fgemma: no cJSON source in $cjson: run scripts/setup.sh (it fetches Debian's), or set FG_CJSON_SRC" >&2
  exit 1
fi
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
extra=()
if [ -n "${FG_JNI_CMAKE_ARGS:-}" ]; then
  read -r -a extra <<<"$FG_JNI_CMAKE_ARGS"
fi
# a tree configured with another generator cannot be reused
if [ -f "$build/CMakeCache.txt" ] && ! grep -q "CMAKE_GENERATOR:INTERNAL=${gen[1]:-Unix Makefiles}\$" "$build/CMakeCache.txt"; then
  rm -rf "$build"
fi
cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DFG_BUILD_JNI=ON -DFG_BUILD_TESTS=OFF \
  -DFG_BUILD_BENCH=OFF -DFG_CJSON_SOURCE_DIR="$cjson" "${extra[@]}" >/dev/null
cmake --build "$build" -j "${FG_JOBS:-2}" --target fgemma_jni fgemma
lib=$build/bindings/jvm/native/libfgemma_jni.so
case " ${FG_JNI_CMAKE_ARGS:-} " in
  *SANITIZE*) ;;
  *) bash "$here/check-lib.sh" "$lib" ;;
esac
mkdir -p "$out"
cp "$lib" "$out/libfgemma_jni.so.tmp"
mv "$out/libfgemma_jni.so.tmp" "$out/libfgemma_jni.so"
