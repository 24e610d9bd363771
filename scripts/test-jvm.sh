#!/usr/bin/env bash
# test-jvm.sh: the JVM binding and libfgemma as a dependency (issue 13; bindings/jvm/README.md):
#   1. mvn verify: the JNI library (release, cJSON compiled in), every JUnit test with -Xcheck:jni
#      on the tiny and 270m models of build/models (native/models.sh makes missing ones);
#   2. the JNI glue under ASan + UBSan: the JNI library of build-asan/ (scripts/test.sh's ASan tree,
#      configured here with FG_BUILD_JNI=ON), the tests not tagged "slow", libasan preloaded into the
#      test JVM (handle_segv=0: HotSpot uses SIGSEGV itself; leaks off: the JVM's are not ours);
#   3. the JNI library cross-built for armv7 and aarch64: dependencies and 16 KB LOAD alignment
#      (bindings/jvm/native/cross-check.sh; the stand-in for the NDK route);
#   4. scripts/test-install.sh: cmake --install and examples/c-api against it (needs build/).
# Runs scripts/setup.sh first unless FG_JVM_SETUP=0 (scripts/test.sh has run it by then).
#
# Usage: scripts/test-jvm.sh [--no-asan] [--no-cross] [--no-install]
# Environment: FG_TEST_MODELS (default build/models), FG_JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
asan=1 cross=1 install=1
for a in "$@"; do
  case "$a" in
    --no-asan) asan=0 ;;
    --no-cross) cross=0 ;;
    --no-install) install=0 ;;
    *) echo "usage: scripts/test-jvm.sh [--no-asan] [--no-cross] [--no-install]" >&2; exit 2 ;;
  esac
done
export FG_TEST_MODELS=${FG_TEST_MODELS:-$root/build/models}
pom=bindings/jvm/pom.xml

step() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }
timed() {
  local label=$1
  shift
  /usr/bin/time -f "time: $label: %e s wall, %U s user + %S s sys CPU" "$@"
}

if [ "${FG_JVM_SETUP:-1}" = 1 ]; then
  FG_SETUP_ARM=$cross bash scripts/setup.sh
fi

step "JVM binding: mvn verify (-Xcheck:jni)"
timed "mvn verify" mvn -B -ntp -f "$pom" verify
# the license travels in the JAR (and so in the AAR's classes.jar): the POM's and the files
python3 - bindings/jvm/target/fgemma-*.jar licenses <<'PY'
import os, sys, zipfile
jars = [j for j in sys.argv[1:-1] if os.path.isfile(j)]
assert len(jars) == 1, "expected one JAR in bindings/jvm/target, found %s" % jars
names = set(zipfile.ZipFile(jars[0]).namelist())
want = ["META-INF/fgemma/LICENSE", "META-INF/fgemma/NOTICE"] + \
    ["META-INF/fgemma/licenses/" + f for f in sorted(os.listdir(sys.argv[-1]))]
missing = [f for f in want if f not in names]
assert not missing, "not in %s: %s" % (jars[0], ", ".join(missing))
pom = [n for n in names if n.endswith("/pom.xml")]
assert pom and b"<name>Apache-2.0</name>" in zipfile.ZipFile(jars[0]).read(pom[0]), "no Apache-2.0 in the JAR's POM"
print("test-jvm: LICENSE, NOTICE and %d license texts in %s" % (len(want) - 2, os.path.basename(jars[0])))
PY

if [ "$asan" = 1 ]; then
  step "JVM binding: JNI glue under ASan + UBSan"
  # the JNI library of the ASan tree scripts/test.sh builds (the same configuration plus FG_BUILD_JNI:
  # only the glue is compiled here; the library's objects are the ASan suite's)
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFG_SANITIZE_ADDRESS=ON \
    -DFG_SANITIZE_UNDEFINED=ON -DFG_BUILD_BENCH=OFF -DFG_TEST_MODELS="$root/build/models" -DFG_BUILD_JNI=ON >/dev/null
  timed "ASan JNI library" cmake --build build-asan -j "${FG_JOBS:-2}" --target fgemma_jni
  timed "mvn verify (ASan)" mvn -B -ntp -f "$pom" verify -DexcludedGroups=slow \
    -Dfgemma.test.native.lib="$root/build-asan/bindings/jvm/native/libfgemma_jni.so" \
    -Dfgemma.test.preload="$(gcc -print-file-name=libasan.so)" \
    -Dfgemma.test.asan.options=detect_leaks=0:handle_segv=0:allow_user_segv_handler=1:abort_on_error=1
fi

if [ "$cross" = 1 ]; then
  step "JVM binding: JNI library for armv7 and aarch64 (dependencies, 16 KB pages)"
  timed "cross-check" bash bindings/jvm/native/cross-check.sh
fi

if [ "$install" = 1 ]; then
  step "libfgemma as a dependency: cmake --install + examples/c-api"
  timed "test-install" bash scripts/test-install.sh build "$FG_TEST_MODELS/tiny-vocab-f32.gguf"
fi
step "JVM done"
