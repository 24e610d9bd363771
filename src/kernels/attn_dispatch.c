/* attn_dispatch.c — the choice of attention/GELU table (kernels/attn.h): the one that matches the
 * process-wide matmul table's ISA, or one by name. The tables themselves are attn.c (plain C),
 * x86/avx2_attn.c, x86/avx512_attn.c and arm/neon_attn.c; this file is the only one that knows them all. */
#include "kernels/attn.h"
#include "kernels/kernels.h"
#if defined(__ARM_NEON) /* ARM tables: src/kernels/arm, docs/ARM.md */
#  include "kernels/arm/neon.h"
#endif

#include <string.h>

// ----------------------------------------------------------------------------------------------
// choice

const fg_attn_kernels *fg_attn_by_name(const char *isa) {
  if (!isa) return NULL;
  if (strcmp(isa, "ref") == 0) return fg_attn_ref();
  if (!fg_kernels_by_name(isa)) return NULL; /* unknown, or this CPU lacks it */
  if (strcmp(isa, "avx2") == 0) return fg_attn_avx2();
  if (strcmp(isa, "avx512") == 0) return fg_attn_avx512();
#if defined(__ARM_NEON) /* neon, neon_dotprod: aarch64's NEON qk/pv where compiled in, else the C table */
  if (fg_attn_neon()) return fg_attn_neon();
#endif
  return fg_attn_ref();
}

const fg_attn_kernels *fg_attn_get(void) {
  const fg_kernels *k = NULL;
  if (fg_kernels_get(&k, NULL) != FG_OK || !k) return fg_attn_ref();
  const fg_attn_kernels *a = fg_attn_by_name(k->name);
  return a ? a : fg_attn_ref();
}
