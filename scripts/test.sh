#!/usr/bin/env bash
# Builds fgemma and runs the whole test suite, as CI does:
#   1. installs what the project needs (scripts/setup.sh: Debian packages, npm oracles),
#   2. a release build and every ctest test (unit, session, tokenizer, llama.cpp parity),
#   3. the same suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
# Generated models are shared by both build trees (build/models). Usage: scripts/test.sh [--no-asan]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${FG_JOBS:-2}

bash scripts/setup.sh

step() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }

step "release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFG_TEST_MODELS="$root/build/models" >/dev/null
cmake --build build -j "$jobs"

step "tests (release)"
ctest --test-dir build -j "$jobs" --output-on-failure --timeout 1800

# The model and session tests once more per kernel level the CPU has (FG_ISA forces the table;
# test_kernels already runs once per level through ctest).
for isa in ref avx2; do
  if [ "$isa" = avx2 ] && ! grep -qw avx2 /proc/cpuinfo; then continue; fi
  step "model and session tests with FG_ISA=$isa"
  FG_ISA=$isa ctest --test-dir build -j "$jobs" --output-on-failure -R '^test_(model|session|session_270m)$'
done

if [ "${1:-}" != "--no-asan" ]; then
  step "ASan + UBSan build"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFG_SANITIZE_ADDRESS=ON \
    -DFG_SANITIZE_UNDEFINED=ON -DFG_BUILD_BENCH=OFF -DFG_TEST_MODELS="$root/build/models" >/dev/null
  cmake --build build-asan -j "$jobs"
  step "tests (ASan + UBSan)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan -j "$jobs" --output-on-failure --timeout 3600
fi
step "done"
