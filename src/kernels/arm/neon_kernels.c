/* neon_kernels.c — the "neon" table: NEON without the dot-product extension, armv7 and aarch64.
 * The kernels are in neon_impl.h (shared with neon_dotprod_kernels.c). The specs need a fused
 * multiply-add, which 32-bit NEON has only with VFPv4 (-mfpu=neon-vfpv4, every ARMv8 core); a build
 * for older FPUs gets no NEON table and runs the reference kernels. */
#include "kernels/arm/neon.h"

#if defined(__ARM_NEON) && (defined(__aarch64__) || defined(__ARM_FEATURE_FMA))
#  define FG_NEON_TABLE fg_kernels_neon
#  define FG_NEON_TABLE_NAME "neon"
#  include "kernels/arm/neon_impl.h"
#else
const fg_kernels *fg_kernels_neon(void) { return NULL; }
#endif
