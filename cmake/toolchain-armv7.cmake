# toolchain-armv7.cmake — 32-bit ARM, the armeabi-v7a class of device: armv7-a + NEON + VFPv4, hard
# float, with Debian's cross compiler; ctest runs every test executable under qemu-arm.
#
#   cmake -S . -B build-armv7 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armv7.cmake
#   ctest --test-dir build-armv7 -LE oracle
#
# Needs what `FG_SETUP_ARM=1 scripts/setup.sh` installs: gcc-arm-linux-gnueabihf, qemu-user, and
# Debian's libcjson armhf packages unpacked under FG_CROSS_ROOT (environment variable; default
# /opt/fgemma-cross/armhf). docs/ARM.md has the details and the Android NDK equivalent.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7-a)
set(FG_CROSS_TRIPLE arm-linux-gnueabihf)

set(CMAKE_C_COMPILER ${FG_CROSS_TRIPLE}-gcc)
# NEON and VFPv4 (fused multiply-add) are baseline for every ARMv8 core running 32-bit code.
# (-mfp16-format=ieee, for the F16 kernels' half -> single conversion, is added per file in CMakeLists.txt.)
set(CMAKE_C_FLAGS_INIT "-march=armv7-a -mfpu=neon-vfpv4 -mfloat-abi=hard")

if(DEFINED ENV{FG_CROSS_ROOT})
  set(FG_CROSS_ROOT $ENV{FG_CROSS_ROOT})
else()
  set(FG_CROSS_ROOT /opt/fgemma-cross/armhf)
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
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm -L /usr/${FG_CROSS_TRIPLE} -E LD_LIBRARY_PATH=${FG_CROSS_LIBDIR}
    -E FG_TEST_EMULATED=1)
