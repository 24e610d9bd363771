/* neon.h — the ARM NEON kernel tables (src/kernels/arm/) and the CPU check dispatch.c needs for them.
 * The tables do not check the CPU; dispatch.c does. */
#ifndef FG_NEON_H
#define FG_NEON_H

#include "kernels/attn.h"
#include "kernels/kernels.h"

#include <stdbool.h>

/* "neon": every NEON unit (armv7 with NEON + VFPv4, every aarch64). NULL when not compiled in. */
const fg_kernels *fg_kernels_neon(void);
/* "neon_dotprod": the int8 dot-product extension (SDOT on aarch64, VSDOT on armv7: ARMv8.2 cores in
 * either state). NULL when not compiled in. */
const fg_kernels *fg_kernels_neon_dotprod(void);
/* "neon_i8mm": aarch64 with the dot product and the int8 matrix multiply (SMMLA); NULL when not
 * compiled in (armv7 builds never have it). */
const fg_kernels *fg_kernels_neon_i8mm(void);
/* One dot product with the table's instructions (the table's file, built for +dotprod): 1 when it
 * computed the right value. Raises SIGILL on a CPU without them; only fg_arm_probe_sigill calls it. */
int fg_neon_dotprod_probe(void);

/* Whether this CPU runs the dot-product instructions (detected once per process, thread-safe):
 * aarch64: HWCAP_ASIMDDP in AT_HWCAP; armv7: the AArch32 HWCAP_ASIMDDP bit where the kernel reports it,
 * else a SIGILL-guarded probe (neon_cpu.c); false on other systems. */
bool fg_arm_cpu_has_dotprod(void);

/* How it was found: */
enum { FG_ARM_DP_NONE = 0, FG_ARM_DP_HWCAP = 1, FG_ARM_DP_PROBE = 2 };
int fg_arm_dotprod_source(void);
/* The decision itself, for tests: hwcap = getauxval(AT_HWCAP) of a 64-bit (is_aarch64) or 32-bit
 * process; probe (32-bit only, may be NULL) runs under fg_arm_probe_sigill when the bit is absent. */
int fg_arm_dotprod_decide(unsigned long hwcap, int is_aarch64, int (*probe)(void));
/* Whether this CPU runs SMMLA and SDOT (aarch64: HWCAP2_I8MM in AT_HWCAP2 and HWCAP_ASIMDDP; false
 * elsewhere). fg_arm_i8mm_decide: the decision from the two words, for tests. */
bool fg_arm_cpu_has_i8mm(void);
bool fg_arm_i8mm_decide(unsigned long hwcap, unsigned long hwcap2);
/* Runs fn with SIGILL caught (armv7 Linux; elsewhere returns 0 without calling fn): 1 when fn
 * returned 1, 0 when it returned anything else or raised SIGILL. Restores the previous SIGILL
 * disposition and signal mask; one call at a time. */
int fg_arm_probe_sigill(int (*fn)(void));

/* The attention table of the NEON matmul tables: NEON qk, pv, softmax, fold, GELU (neon_attn.c; aarch64
 * also argmax) and lora_bt (neon_lora.c), the C table's other kernels. aarch64: bit for bit the C table;
 * armv7: softmax, fold and GELU too, qk, pv and lora_bt the same with AArch32 NEON's flush of denormals
 * to zero (bit for bit on data without them; the bound in neon_attn.c). NULL where NEON is not compiled
 * in. */
const fg_attn_kernels *fg_attn_neon(void);
/* Its lora_bt (neon_lora.c): the C table's rounded products and sums, 4 lanes. */
void fg_lora_bt_neon(float *FG_RESTRICT y, const float *FG_RESTRICT t, size_t nq, const float *FG_RESTRICT bt, size_t ld,
                     size_t n);

#endif /* FG_NEON_H */
