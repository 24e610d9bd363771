#!/usr/bin/env bash
# check-lib.sh: what an app developer must be able to rely on for libfgemma_jni.so, checked with
# readelf on a build for any architecture:
#   - NEEDED: only libc, libm, libdl (and liblog on Android); on glibc also its dynamic loader
#     (ld-linux*.so, for thread-local storage) — no libc++_shared, libomp, libcjson or libgcc_s;
#   - every LOAD segment aligned to at least 16 KB (Android 15's 16 KB pages; Google Play requires it
#     for 64-bit apps);
#   - exported: JNI_OnLoad and Java_dev_fgemma_* only.
# Usage: check-lib.sh LIB.so...   (READELF: another readelf, e.g. the NDK's llvm-readelf)
set -euo pipefail
readelf=${READELF:-readelf}
status=0
fail() { printf 'check-lib: FAIL: %s\n' "$*" >&2; status=1; }
for lib in "$@"; do
  [ -f "$lib" ] || { fail "$lib: no such file"; continue; }
  arch=$("$readelf" -h "$lib" | sed -n 's/^ *Machine: *//p')
  needed=$("$readelf" -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  for n in $needed; do
    case "$n" in
      libc.so | libc.so.6 | libm.so | libm.so.6 | libdl.so | libdl.so.2 | liblog.so | ld-linux*.so.* | ld-linux*.so) ;;
      *) fail "$lib: depends on $n (allowed: libc, libm, libdl, liblog)" ;;
    esac
  done
  aligns=$("$readelf" -lW "$lib" | awk '$1 == "LOAD" { print $NF }' | tr '\n' ' ')
  [ -n "$aligns" ] || fail "$lib: no LOAD segments"
  for a in $aligns; do
    [ $((a)) -ge 16384 ] || fail "$lib: a LOAD segment is aligned to $a bytes, not 16384"
  done
  exported=$("$readelf" --dyn-syms -W "$lib" | awk '$5 == "GLOBAL" && $7 != "UND" { print $8 }' | sed 's/@.*//' |
    grep -v -E '^(JNI_OnLoad|Java_dev_fgemma_.*)$' | tr '\n' ' ' || true)
  [ -z "$exported" ] || fail "$lib: exports more than the JNI entry points: $exported"
  n_jni=$("$readelf" --dyn-syms -W "$lib" | awk '$7 != "UND" { print $8 }' | grep -c '^Java_dev_fgemma_' || true)
  [ "$n_jni" -gt 0 ] || fail "$lib: no Java_dev_fgemma_* functions exported"
  [ $status -eq 0 ] && printf 'check-lib: %s (%s): NEEDED %s; LOAD alignment %s; %s JNI functions\n' \
    "$lib" "$arch" "$needed" "$aligns" "$n_jni"
done
exit $status
