/* neon_i8mm_kernels.c — the "neon_i8mm" table (aarch64): neon_impl.h compiled with the dot product and
 * the int8 matrix multiply (CMakeLists.txt gives this file -march=armv8.2-a+dotprod+i8mm). Its packed
 * Q8_0 layout and kernels use SMMLA (ARMv8.6 FEAT_I8MM: Cortex-A510/A710/X2 and later, Neoverse
 * V1/N2); everything else is neon_dotprod's. Only reached after fg_arm_cpu_has_i8mm() (neon_cpu.c). */
#include "kernels/arm/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD) && defined(__ARM_FEATURE_MATMUL_INT8)
#  define FG_NEON_TABLE fg_kernels_neon_i8mm
#  define FG_NEON_TABLE_NAME "neon_i8mm"
#  include "kernels/arm/neon_impl.h"
#else
const fg_kernels *fg_kernels_neon_i8mm(void) { return NULL; }
#endif
