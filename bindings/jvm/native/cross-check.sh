#!/usr/bin/env bash
# cross-check.sh: the JNI library for 32-bit ARM (armv7-a + NEON + VFPv4) and aarch64, cross-built
# with Debian's compilers (cmake/toolchain-*.cmake, as scripts/test-arm.sh) and checked with
# check-lib.sh: only libc/libm/libdl (+ the glibc loader) needed, LOAD segments 16 KB aligned, only JNI
# symbols exported. This stands in for the NDK build (android/build-aar.sh), which CI cannot run:
# the same sources, CMake files and link flags. No JVM runs the ARM libraries here.
#
# Usage: cross-check.sh [BUILD_ROOT]   (default bindings/jvm/target/cross)
# Needs FG_SETUP_ARM=1 scripts/setup.sh (cross compilers) and scripts/setup.sh (cJSON source, JDK
# headers). FG_JOBS (default 2).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$root/bindings/jvm/target/cross}
cjson=${FG_CJSON_SRC:-$root/.cache/cjson-src}
[ -f "$cjson/cJSON.c" ] || { echo "cross-check: no cJSON source in $cjson: run scripts/setup.sh" >&2; exit 1; }
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
libs=()
for t in armv7 aarch64; do
  b=$out/$t
  cmake -S "$root" -B "$b" "${gen[@]}" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-$t.cmake" \
    -DCMAKE_BUILD_TYPE=Release -DFG_BUILD_JNI=ON -DFG_BUILD_TESTS=OFF -DFG_BUILD_BENCH=OFF \
    -DFG_CJSON_SOURCE_DIR="$cjson" >/dev/null
  cmake --build "$b" -j "${FG_JOBS:-2}" --target fgemma_jni
  libs+=("$b/bindings/jvm/native/libfgemma_jni.so")
done
bash "$here/check-lib.sh" "${libs[@]}"
