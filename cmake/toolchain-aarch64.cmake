# toolchain-aarch64.cmake — 64-bit ARM, the arm64-v8a class of device: armv8-a (NEON is always
# there), with Debian's cross compiler; ctest runs every test executable under qemu-aarch64. The
# dot-product kernels (src/kernels/arm/neon_dotprod*.c) are compiled for armv8.2-a+dotprod and chosen
# at run time only on CPUs that report HWCAP_ASIMDDP; the int8 matrix-multiply ones (neon_i8mm*.c) for
# armv8.2-a+dotprod+i8mm, chosen only with HWCAP2_I8MM too.
#
#   cmake -S . -B build-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
#   ctest --test-dir build-aarch64 -LE oracle
#
# Needs what `FG_SETUP_ARM=1 scripts/setup.sh` installs: gcc-aarch64-linux-gnu, qemu-user, and
# Debian's libcjson arm64 packages unpacked under FG_CROSS_ROOT (environment variable; default
# /opt/fgemma-cross/arm64). docs/ARM.md has the details and the Android NDK equivalent.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(FG_CROSS_TRIPLE aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${FG_CROSS_TRIPLE}-gcc)
set(CMAKE_C_FLAGS_INIT "-march=armv8-a")
# Release at -O2: Debian's aarch64 GCC 12.2 crashes (internal compiler error in
# vect_transform_reduction) on an fmin/fmax loop in tests/test_gen_model.c at -O3.
set(CMAKE_C_FLAGS_RELEASE "-O2 -DNDEBUG" CACHE STRING "Flags used by the C compiler during RELEASE builds.")

if(DEFINED ENV{FG_CROSS_ROOT})
  set(FG_CROSS_ROOT $ENV{FG_CROSS_ROOT})
else()
  set(FG_CROSS_ROOT /opt/fgemma-cross/arm64)
endif()
set(FG_CROSS_LIBDIR ${FG_CROSS_ROOT}/usr/lib/${FG_CROSS_TRIPLE})

# Libraries and headers from the target sysroots only; programs (pkg-config, node) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/${FG_CROSS_TRIPLE} ${FG_CROSS_ROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_LIBDIR} ${FG_CROSS_LIBDIR}/pkgconfig)
set(ENV{PKG_CONFIG_SYSROOT_DIR} ${FG_CROSS_ROOT})
set(ENV{PKG_CONFIG_PATH} "")

# qemu-user: -L finds the target's dynamic loader and libc; libcjson comes from FG_CROSS_ROOT.
# FG_TEST_EMULATED=1 tells tests that wall-clock bounds do not apply (qemu runs 10-50x slower).
# QEMU_CPU (e.g. cortex-a53, without the dot product) picks another CPU model for a run.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/${FG_CROSS_TRIPLE} -E LD_LIBRARY_PATH=${FG_CROSS_LIBDIR}
    -E FG_TEST_EMULATED=1)
