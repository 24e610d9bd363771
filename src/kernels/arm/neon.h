/* neon.h — the ARM NEON kernel tables (src/kernels/arm/) and the CPU check dispatch.c needs for them.
 * The tables do not check the CPU; dispatch.c does. */
#ifndef FG_NEON_H
#define FG_NEON_H

#include "kernels/kernels.h"

#include <stdbool.h>

/* "neon": every NEON unit (armv7 with NEON + VFPv4, every aarch64). NULL when not compiled in. */
const fg_kernels *fg_kernels_neon(void);
/* "neon_dotprod": the int8 dot-product extension (aarch64 builds only). NULL when not compiled in. */
const fg_kernels *fg_kernels_neon_dotprod(void);

/* Whether this CPU runs the dot-product instructions: HWCAP_ASIMDDP from getauxval(AT_HWCAP) on
 * Linux/Android aarch64; false everywhere else (armv7 builds do not use them). */
bool fg_arm_cpu_has_dotprod(void);

#endif /* FG_NEON_H */
