#!/usr/bin/env bash
# build-aar.sh: the Android library of the JVM binding, fgemma-<version>.aar, with libfgemma_jni.so
# for armeabi-v7a (NEON + VFPv4), arm64-v8a and x86_64, built with the Android NDK.
#
#   ANDROID_NDK=/path/to/android-ndk-r27c bindings/jvm/android/build-aar.sh [OUT_DIR]
#
# Needs: the NDK (ANDROID_NDK or ANDROID_NDK_HOME), CMake >= 3.25, a JDK and Maven (for classes.jar),
# and cJSON's source (FG_CJSON_SRC, default .cache/cjson-src: scripts/setup.sh fetches Debian's; any
# cJSON 1.7 source tree works). Each library is linked with -Wl,-z,max-page-size=16384 (16 KB pages),
# compiles cJSON in, and is checked: it needs only libc, libm, libdl and liblog, every LOAD segment is
# 16 KB aligned, and it exports only the JNI functions (native/check-lib.sh).
#
# Environment: FG_ANDROID_ABIS (default "armeabi-v7a arm64-v8a x86_64"), FG_ANDROID_API (minSdk,
# default 24), FG_JOBS (default 2).
# The AAR holds classes.jar (the binding without the desktop library), jni/<abi>/libfgemma_jni.so,
# AndroidManifest.xml, proguard.txt (the consumer keep rules) and an empty R.txt. The app adds
# kotlin-stdlib and kotlinx-coroutines-android itself (bindings/jvm/README.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
jvm=$(cd "$here/.." && pwd)
root=$(cd "$jvm/../.." && pwd)
out=$(mkdir -p "${1:-$jvm/target/android}" && cd "${1:-$jvm/target/android}" && pwd)
ndk=${ANDROID_NDK:-${ANDROID_NDK_HOME:-}}
api=${FG_ANDROID_API:-24}
read -r -a abis <<<"${FG_ANDROID_ABIS:-armeabi-v7a arm64-v8a x86_64}"
cjson=${FG_CJSON_SRC:-$root/.cache/cjson-src}

die() { printf 'build-aar: %s\n' "$*" >&2; exit 1; }
[ -n "$ndk" ] || die "set ANDROID_NDK to the NDK's folder (r26 or newer)"
toolchain=$ndk/build/cmake/android.toolchain.cmake
[ -f "$toolchain" ] || die "$toolchain not found: is ANDROID_NDK=$ndk an NDK?"
[ -f "$cjson/cJSON.c" ] || die "no cJSON source in $cjson: run scripts/setup.sh or set FG_CJSON_SRC"
# a tool of the NDK's LLVM (prebuilt/<host>/bin), or nothing
ndk_tool() {
  local f
  for f in "$ndk"/toolchains/llvm/prebuilt/*/bin/"$1"; do
    if [ -x "$f" ]; then
      printf '%s\n' "$f"
      return
    fi
  done
}
readelf_bin=$(ndk_tool llvm-readelf)
[ -n "$readelf_bin" ] || readelf_bin=$(command -v readelf || true)
[ -n "$readelf_bin" ] || die "no readelf (the NDK's llvm-readelf or binutils)"
version=$(sed -n 's/^project(fgemma VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")

stage=$out/aar
rm -rf "$stage"
mkdir -p "$stage"
for abi in "${abis[@]}"; do
  case "$abi" in
    armeabi-v7a) extra=(-DANDROID_ARM_NEON=ON "-DCMAKE_C_FLAGS=-mfpu=neon-vfpv4") ;;
    arm64-v8a | x86_64) extra=() ;;
    *) die "unknown ABI $abi (armeabi-v7a, arm64-v8a, x86_64)" ;;
  esac
  build=$out/build-$abi
  printf '== %s\n' "$abi"
  cmake -S "$root" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DANDROID_ABI="$abi" \
    -DANDROID_PLATFORM="android-$api" -DCMAKE_BUILD_TYPE=Release -DFG_BUILD_JNI=ON -DFG_BUILD_TESTS=OFF \
    -DFG_BUILD_BENCH=OFF -DFG_CJSON_SOURCE_DIR="$cjson" "${extra[@]}" >/dev/null
  cmake --build "$build" -j "${FG_JOBS:-2}" --target fgemma_jni
  lib=$build/bindings/jvm/native/libfgemma_jni.so
  READELF=$readelf_bin bash "$jvm/native/check-lib.sh" "$lib"
  mkdir -p "$stage/jni/$abi"
  # the NDK's llvm-strip when present: smaller, same symbols table for JNI (dynamic symbols stay)
  strip_bin=$(ndk_tool llvm-strip)
  if [ -n "$strip_bin" ]; then
    "$strip_bin" --strip-unneeded -o "$stage/jni/$abi/libfgemma_jni.so" "$lib"
  else
    cp "$lib" "$stage/jni/$abi/libfgemma_jni.so"
  fi
done

printf '== classes.jar\n'
mvn -B -q -f "$jvm/pom.xml" -Dfgemma.native.skip=true -DskipTests package
classes=$out/classes
rm -rf "$classes"
cp -r "$jvm/target/classes" "$classes"
rm -rf "$classes/dev/fgemma/native" # the desktop library does not belong into an APK
(cd "$classes" && jar cf "$stage/classes.jar" .)
cp "$jvm/src/main/resources/META-INF/proguard/fgemma.pro" "$stage/proguard.txt"
: >"$stage/R.txt"
cat >"$stage/AndroidManifest.xml" <<MANIFEST
<?xml version="1.0" encoding="utf-8"?>
<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="dev.fgemma">
    <uses-sdk android:minSdkVersion="$api" />
</manifest>
MANIFEST
aar=$out/fgemma-$version.aar
rm -f "$aar"
(cd "$stage" && jar cfM "$aar" .)
printf 'build-aar: %s\n' "$aar"
jar tf "$aar" | sed 's/^/  /'
