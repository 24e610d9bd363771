#!/usr/bin/env bash
# Builds fgemma and runs the whole test suite, as CI does (.ci/run):
#   1. installs what the project needs (scripts/setup.sh: Debian packages, npm oracles; with the ARM
#      step also the cross compilers, qemu-user and the targets' cJSON: FG_SETUP_ARM=1),
#   2. a release build, the docs check (scripts/check-docs.py: dead links and paths, the README's
#      command table against --help), the layer check (scripts/check-layers.py), and every ctest test (unit, session, tokenizer, llama.cpp parity, and the tv-mini
#      call-accuracy gates: the trained test model unpacked from models/tv-mini.gguf.xz, docs/TV-MINI.md), then the
#      manylinux wheel built from a clean clone, its pytest suite in a fresh venv, and the wheel run with
#      the system's cJSON and libmicrohttpd hidden (scripts/test-python.sh),
#      `fgemma serve` against the openai client on tv-mini and tv-270m (scripts/test-serve.sh; also under
#      ASan and TSan below),
#   3. the same suite again under AddressSanitizer + UndefinedBehaviorSanitizer (without
#      test_session_270m, see below),
#   4. ThreadSanitizer (gcc) on the threaded tests: test_kernels (thread pool), test_session
#      (concurrent forks of one snapshot), test_reliability abort errmsg free (abort from another
#      thread, per-thread messages, teardown), test_lifetime (models and catalogs freed while forks
#      run on other threads), test_spec's session parts (speculative passes on 2 threads),
#      test_nlu_fork (NLU engines forked and asked on 3 threads), `fgemma serve` (scripts/test-serve.sh):
#      docs/RELIABILITY.md "Sanitizers and threads",
#   5. ARM under qemu-user (scripts/test-arm.sh): armv7 (NEON) and aarch64 (NEON + dot product) cross
#      builds, each tree's ctest suite without the x86-only oracle tests, without test_session_270m
#      (f32 270m, 600 positions: ~17 CPU-minutes under qemu-arm; the 270m Q8_0 ids check covers that
#      path on the product format; test_constrain runs an emulated subset), including the checks that greedy ids of the ARM build equal this
#      x86 build's on the tiny preset (5 types) and the 270m preset Q8_0 past the 512 window
#      (tests/arm.cmake). Times and the reasons for each exclusion: docs/ARM.md "CI".
# Generated models are shared by every build tree (build/models); the ARM trees never generate the
# 270m models under emulation (the x86 suite has written them by then).
#
# Usage: scripts/test.sh [--no-asan] [--no-tsan] [--no-arm]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${FG_JOBS:-2}
asan=1 tsan=1 arm=1
for a in "$@"; do
  case "$a" in
    --no-asan) asan=0 ;;
    --no-tsan) tsan=0 ;;
    --no-arm) arm=0 ;;
    *) echo "usage: scripts/test.sh [--no-asan] [--no-tsan] [--no-arm]" >&2; exit 2 ;;
  esac
done

FG_SETUP_ARM=$arm bash scripts/setup.sh

step() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }
# timed LABEL CMD...: runs CMD, then prints its wall and CPU time (children included)
timed() {
  local label=$1
  shift
  /usr/bin/time -f "time: $label: %e s wall, %U s user + %S s sys CPU" "$@"
}

step "release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFG_TEST_MODELS="$root/build/models" \
  -DFG_TV_MINI_GATES=ON >/dev/null
cmake --build build -j "$jobs"

step "docs: links, paths and the README's command table (scripts/check-docs.py)"
python3 scripts/check-docs.py --fgemma build/fgemma
step "layers: every #include follows docs/ARCHITECTURE.md's one-way table (scripts/check-layers.py)"
python3 scripts/check-layers.py

step "tests (release)"
ctest --test-dir build -j "$jobs" --output-on-failure --timeout 1800

# The numeric tests once more per kernel level the CPU has (FG_ISA forces the table; the release run
# above took the best one): model, session, LoRA, quantization, repacking, heads and convert, whose
# tolerances follow the spec of the table that runs (tests/testutil.h fg_test_logit_tol). test_kernels
# already runs once per level through ctest (test_kernels_isa_*). The plain-C table leaves out
# test_session_270m (f32 270m, 600 positions: 101 s wall, 138 CPU-s with it; test_kernels holds that
# table to the specs, and the tiny and small presets run it through sessions here); AVX2 keeps it
# where the release run above took AVX-512.
numeric='model|session|lora|quant|quant_blocks|repack|head|trimmed_head|convert|convert_peft'
for isa in ref avx2; do
  if [ "$isa" = avx2 ] && ! grep -qw avx2 /proc/cpuinfo; then continue; fi
  # without AVX-512 the release run above already ran the AVX2 table
  if [ "$isa" = avx2 ] && ! grep -qw avx512f /proc/cpuinfo; then continue; fi
  step "numeric tests with FG_ISA=$isa"
  tests="^test_($numeric|session_270m)\$"
  [ "$isa" != ref ] || tests="^test_($numeric)\$"
  FG_ISA=$isa ctest --test-dir build -j "$jobs" --output-on-failure -R "$tests"
done

# The Python package (bindings/python): clean clone, fresh venv, python -m build, pytest against the
# CLI and the models of the release tree above
step "Python package (scripts/test-python.sh)"
timed "Python package" bash scripts/test-python.sh

# fgemma serve against the official openai client (tests/serve/test_serve.py; docs/SERVER.md "Tests")
step "fgemma serve (scripts/test-serve.sh)"
timed "serve" bash scripts/test-serve.sh

if [ "$asan" = 1 ]; then
  step "ASan + UBSan build"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFG_SANITIZE_ADDRESS=ON \
    -DFG_SANITIZE_UNDEFINED=ON -DFG_BUILD_BENCH=OFF -DFG_TEST_MODELS="$root/build/models" >/dev/null
  cmake --build build-asan -j "$jobs"
  step "tests (ASan + UBSan)"
  # every test except test_session_270m: a numeric check of the 270m preset (600 positions past the
  # 512 window, 4.6 CPU-minutes under ASan) whose code paths the tiny and small presets cover under
  # ASan too (window wrap: test_session; past 512 with the real vocabulary: test_convert's small
  # checkpoints); the release run above keeps it (and FG_ISA=avx2 on AVX-512 machines). Nor the tests
  # on the real Gemma 3 270M (label real: minutes under ASan); the new block types' code paths run
  # under ASan in test_quant_blocks and test_kernels. Nor oracle_270m_f32 (the 270m preset against
  # llama.cpp: 3 minutes under ASan for paths the small presets' oracle tests cover). Of the llama.cpp
  # comparisons of every block type, LoRA scale and converted checkpoint, one of each family runs here
  # (oracle_quant_q4_k_m: the real file's mix; oracle_lora_small_f32_s*: the adapter applied;
  # oracle_convert_small_*_q8_0): the others load and run the same code over other types
  # (test_quant_blocks, test_kernels and test_lora run every type and adapter path under ASan), 5
  # CPU-minutes of the run. FG_TEST_EMULATED=1 gives the tests that know it their subset for slow runs
  # (as under qemu): test_constrain (the tiny preset on 3 utterances), test_spec, test_lifetime,
  # test_reliability, test_tokenizer; the release run above keeps their full sets
  FG_TEST_EMULATED=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan -j "$jobs" --output-on-failure --timeout 3600 \
    -E '^(test_session_270m|oracle_270m_f32|oracle_quant_(q2_k|q3_k_m|q4_1|q5_0|q5_1|q5_k_m|q6_k|iq4_nl|iq4_xs)|oracle_lora_small_f32_s[0-9.]+_ref|oracle_convert_small_.*_(f32|f16|bf16|q4_0))$' \
    -LE '^real$'
  step "fgemma serve under ASan + UBSan (scripts/test-serve.sh --quick)"
  # the server's leaks count at exit (its exit status); RSS is not checked (the allocator's quarantine).
  # tv-270m's pass is left out here (said so): 95-100 s under ASan for the server code the tv-mini pass
  # runs; the release run above serves tv-270m, and test_lora runs the adapter code under ASan
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    timed "serve (ASan)" bash scripts/test-serve.sh --fgemma build-asan/fgemma --cli build/fgemma --quick \
    --threads 4 --requests 5 --rss-slack-mb 0 \
    --skip-270m "CI time: 95-100 s under ASan for server code the tv-mini pass covers; the release run serves tv-270m"
fi

if [ "$tsan" = 1 ]; then
  step "TSan build (threaded tests)"
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFG_SANITIZE_THREAD=ON \
    -DFG_BUILD_BENCH=OFF -DFG_TEST_MODELS="$root/build/models" >/dev/null
  timed "TSan build" cmake --build build-tsan -j "$jobs" --target test_kernels test_session test_reliability \
    test_lifetime test_spec test_nlu_fork test_lora_view fgemma
  step "tests (TSan: thread pool, concurrent forks, abort from another thread)"
  # die_after_fork=0: test_session's persistence test forks a child while the pool's threads exist
  # (the child itself runs single-threaded); halt_on_error: the first report fails the step
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:die_after_fork=0
  # Two lanes side by side, each test mostly one thread (3.5 min instead of 5.2 on 2 cores; each lane's
  # output is printed when both are done). test_kernels on every float type, the two file-format q8
  # kernels and one of each new family (a 32-block type, a K-quant with half-block scales, one with a
  # minimum): the pool's threading, not every decoder (the release and ASan runs test all 15 types; all
  # of them under TSan took ~10 min). The server: workers, libmicrohttpd's threads, the reaper, the
  # abort callback, concurrent clients; tv-mini only: the tv-270m pass (the real 270M base + adapter,
  # one thread per worker) had not finished its 4 utterances after 7 CPU-minutes under TSan (ASan:
  # 93 s); it runs in the release and ASan runs
  tsan_lane1() {
    FG_TEST_KERNEL_TYPES=f32,f16,bf16,q8_0,q4_0,q5_0,q6_k,q4_k timed "TSan test_kernels" build-tsan/tests/test_kernels &&
      timed "TSan test_session" build-tsan/tests/test_session &&
      timed "TSan test_spec" build-tsan/tests/test_spec batch rollback fail enginefail
  }
  tsan_lane2() {
    timed "TSan test_reliability" build-tsan/tests/test_reliability abort errmsg free &&
      timed "TSan test_lifetime" build-tsan/tests/test_lifetime &&
      timed "TSan test_lora_view" build-tsan/tests/test_lora_view &&
      timed "TSan test_nlu_fork" build-tsan/tests/test_nlu_fork threads &&
      timed "TSan serve" bash scripts/test-serve.sh --fgemma build-tsan/fgemma --cli build/fgemma --quick \
        --skip-270m "too slow under TSan: over 7 CPU-minutes for the 4-utterance pass; release and ASan run it" \
        --threads 4 --requests 5 --rss-slack-mb 0
  }
  tsan_log=$(mktemp -d)
  tsan_lane1 >"$tsan_log/1" 2>&1 &
  lane1=$!
  tsan_lane2 >"$tsan_log/2" 2>&1 &
  lane2=$!
  tsan_rc=0
  wait "$lane1" || tsan_rc=1
  wait "$lane2" || tsan_rc=1
  for l in 1 2; do
    printf -- '-- TSan lane %s\n' "$l"
    cat "$tsan_log/$l"
  done
  rm -rf "$tsan_log"
  [ "$tsan_rc" = 0 ] || { echo "TSan: a lane failed (its output above)" >&2; exit 1; }
  unset TSAN_OPTIONS
fi

# The JVM binding (bindings/jvm) and libfgemma as a dependency: mvn verify (-Xcheck:jni), the JNI
# glue under ASan (the JNI library of build-asan above), the JNI library cross-built for armv7 and
# aarch64 (dependencies, 16 KB pages), cmake --install + examples/c-api
jvm_args=()
[ "$asan" = 1 ] || jvm_args+=(--no-asan)
[ "$arm" = 1 ] || jvm_args+=(--no-cross)
step "JVM binding and install (scripts/test-jvm.sh)"
FG_JVM_SETUP=0 timed "JVM binding and install" bash scripts/test-jvm.sh "${jvm_args[@]}"

if [ "$arm" = 1 ]; then
  step "ARM: armv7 and aarch64 under qemu-user (scripts/test-arm.sh)"
  # Left out of both emulated runs (the x86 runs above keep them): test_session_270m (see the
  # header), test_nlu_fork (engine forks: portable engine code whose parts test_engine, test_spec and
  # test_constrain run there; it would add minutes of emulation) and the real-model tests real_* (x86
  # runs them; arm_ids_real_q4_k_m checks the ARM builds on the real file). test_constrain runs its
  # emulated subset there (tiny preset, 3 utterances).
  # test_convert_mix (the searched quantizers of `fgemma convert`: portable C, ~6 emulated minutes)
  # too, and test_kernels_isa_ref: test_kernels tests every table of the target, the plain-C one
  # included (its emulated scalar code is most of test_kernels' 4 minutes; the per-ISA run repeated it). aarch64 runs the tests of what differs from armv7 there (the NEON dot-product and i8mm
  # tables, the repacked layout, attention, the model, sessions and the ids checks, the loaders and
  # tokenizer on a 64-bit target) and leaves the engine-level tests of portable code to armv7, whose
  # 32-bit build is the stricter target for them (docs/ARM.md "CI").
  FG_ARM_SETUP=0 FG_HOST_FGEMMA="$root/build/fgemma" FG_ARM_MODELS="$root/build/models" \
    FG_ARM_EXCLUDE='^(test_session_270m|test_nlu_fork|test_convert_mix|test_kernels_isa_ref|real_.*)$' \
    FG_ARM_EXCLUDE_AARCH64='^(test_constrain|test_engine|test_lifetime|test_reliability|test_spec|test_nlu|test_convert|test_convert_peft|test_gen_model|test_cli|test_tv_targets.*)$' \
    timed "ARM (both targets)" bash scripts/test-arm.sh armv7 aarch64
fi
step "done"
