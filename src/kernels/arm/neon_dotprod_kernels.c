/* neon_dotprod_kernels.c — the "neon_dotprod" table: neon_impl.h compiled with the int8 dot-product
 * extension (CMakeLists.txt gives this file -march=armv8.2-a+dotprod, plus -mfpu=neon-fp-armv8 on
 * armv7, where the instructions are VSDOT/VUDOT of AArch32). Only reached after fg_arm_cpu_has_dotprod()
 * (neon_cpu.c), which on armv7 may run fg_neon_dotprod_probe below under a SIGILL guard. */
#include "kernels/arm/neon.h"

#if defined(__ARM_NEON) && defined(__ARM_FEATURE_DOTPROD)
#  define FG_NEON_TABLE fg_kernels_neon_dotprod
#  define FG_NEON_TABLE_NAME "neon_dotprod"
#  include "kernels/arm/neon_impl.h"

int fg_neon_dotprod_probe(void) {
  /* volatile operands: the compiler must emit the instruction, not fold it */
  volatile int8_t a = 3, b = -2;
  volatile int32_t acc = 1;
  const int32x4_t s = vdotq_s32(vdupq_n_s32(acc), vdupq_n_s8(a), vdupq_n_s8(b));
  volatile int32_t lane = vgetq_lane_s32(s, 0);
  return lane == 1 - 4 * 6;
}
#else
const fg_kernels *fg_kernels_neon_dotprod(void) { return NULL; }
int fg_neon_dotprod_probe(void) { return 0; }
#endif
