/* neon_dotprod_kernels.c — the "neon_dotprod" table: neon_impl.h compiled with the int8 dot-product
 * extension (CMakeLists.txt gives this file -march=armv8.2-a+dotprod on aarch64). Only reached after
 * fg_arm_cpu_has_dotprod(); on armv7 the table is absent (the getter returns NULL and dispatch never offers it). */
#include "kernels/arm/neon.h"

#if defined(__ARM_NEON) && defined(__ARM_FEATURE_DOTPROD) && defined(__aarch64__)
#  define FG_NEON_TABLE fg_kernels_neon_dotprod
#  define FG_NEON_TABLE_NAME "neon_dotprod"
#  include "kernels/arm/neon_impl.h"
#else
const fg_kernels *fg_kernels_neon_dotprod(void) { return NULL; }
#endif
