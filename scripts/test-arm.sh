#!/usr/bin/env bash
# Cross-builds fgemma for 32-bit ARM (armv7-a + NEON + VFPv4, hard float) and aarch64 with Debian's
# cross compilers and runs the ctest suite of each under qemu-user, with the NEON kernels active (the
# dispatcher picks them; FG_ISA is left alone). Only the llama.cpp oracle tests (ctest label `oracle`)
# are left out: they drive the CLI from node, whose llama.cpp binary is x86-only.
#
#   scripts/test-arm.sh                  # both targets
#   scripts/test-arm.sh armv7            # one target (armv7 | aarch64)
#
# Environment: FG_JOBS (default 2) for builds and ctest; FG_ARM_MODELS: where tests find or generate
# their models (default build/models, shared with the x86 tree of scripts/test.sh, since generating
# the 270m models under emulation takes minutes: the files are identical on every architecture);
# FG_ARM_SETUP=0 skips the install step; FG_ARM_EXCLUDE: a ctest -E regex of further tests to leave
# out (printed; empty by default: the 270m session test alone takes about 17 CPU-minutes
# under qemu-arm, more than its 900 s ctest timeout on a busy machine). Details and measured times: docs/ARM.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${FG_JOBS:-2}
models=${FG_ARM_MODELS:-$root/build/models}
targets=("$@")
failed=()
[ ${#targets[@]} -gt 0 ] || targets=(armv7 aarch64)

step() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }

if [ "${FG_ARM_SETUP:-1}" = 1 ]; then
  step "setup (cross compilers, qemu-user, target cJSON)"
  FG_SETUP_ARM=1 bash scripts/setup.sh
fi

for t in "${targets[@]}"; do
  case "$t" in
    armv7) triple=arm-linux-gnueabihf qemu=qemu-arm ;;
    aarch64) triple=aarch64-linux-gnu qemu=qemu-aarch64 ;;
    *) echo "test-arm.sh: unknown target '$t' (armv7 | aarch64)" >&2; exit 2 ;;
  esac
  for tool in "$triple-gcc" "$qemu"; do
    command -v "$tool" >/dev/null || { echo "test-arm.sh: $tool is missing: run FG_SETUP_ARM=1 scripts/setup.sh" >&2; exit 1; }
  done

  step "$t: cross build"
  mkdir -p "$models"
  cmake -S . -B "build-$t" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchain-$t.cmake" \
    -DCMAKE_BUILD_TYPE=Release -DFG_TEST_MODELS="$models" >/dev/null
  cmake --build "build-$t" -j "$jobs"

  step "$t: ctest under $qemu (without label oracle)"
  # test_arm_kernels checks that the dispatcher's default here is a NEON table
  exclude=()
  if [ -n "${FG_ARM_EXCLUDE:-}" ]; then
    echo "test-arm.sh: NOT running tests matching '$FG_ARM_EXCLUDE' (FG_ARM_EXCLUDE)"
    exclude=(-E "$FG_ARM_EXCLUDE")
  fi
  start=$(date +%s)
  if ctest --test-dir "build-$t" -j "$jobs" -LE oracle "${exclude[@]}" --output-on-failure --timeout 3600; then
    echo "$t: all tests passed in $(( $(date +%s) - start )) s"
  else
    echo "$t: FAILED after $(( $(date +%s) - start )) s"
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  step "FAILED: ${failed[*]}"
  exit 1
fi
step "done"
