/* neon_cpu.c — run-time CPU checks for the ARM kernel tables (Linux and Android: getauxval). Built
 * without ISA flags, like core/cpu_features.c. */
#include "kernels/arm/neon.h"

#if defined(__aarch64__) && defined(__linux__)
#  include <sys/auxv.h>
#  ifndef HWCAP_ASIMDDP
#    define HWCAP_ASIMDDP (1UL << 20) /* arch/arm64/include/uapi/asm/hwcap.h */
#  endif
#endif

bool fg_arm_cpu_has_dotprod(void) {
#if defined(__aarch64__) && defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
  return false;
#endif
}
