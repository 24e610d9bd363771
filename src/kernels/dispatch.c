/* dispatch.c — picks the kernel table once per process from the CPU's features, or from FG_ISA
 * (ref|avx2|avx512|neon|neon_dotprod|neon_i8mm|auto). The table is the library's only global, written
 * once under pthread_once. */
#include "kernels/kernels.h"
#include "core/cpu_features.h"
#if defined(__ARM_NEON) /* ARM tables: src/kernels/arm, docs/ARM.md */
#  include "kernels/arm/neon.h"
#endif

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#  define FG_DISPATCH_X86 1
#else
#  define FG_DISPATCH_X86 0
#endif

// ----------------------------------------------------------------------------
// support checks

#if FG_DISPATCH_X86
static bool fg_isa_avx2_ok(const fg_cpu_features *f) { return f->avx2 && f->fma && f->f16c; }

/* the Sapphire Rapids / Zen 4 level: int8 and bf16 dot products included */
static bool fg_isa_avx512_ok(const fg_cpu_features *f) {
  return fg_isa_avx2_ok(f) && f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->avx512vnni &&
         f->avx512bf16;
}
#endif

const fg_kernels *fg_kernels_by_name(const char *isa) {
  if (!isa) return NULL;
  if (strcmp(isa, "ref") == 0) return fg_kernels_ref();
#if FG_DISPATCH_X86
  const fg_cpu_features *f = fg_cpu_features_get();
  if (strcmp(isa, "avx2") == 0) return fg_isa_avx2_ok(f) ? fg_kernels_avx2() : NULL;
  if (strcmp(isa, "avx512") == 0) return fg_isa_avx512_ok(f) ? fg_kernels_avx512() : NULL;
#endif
#if defined(__ARM_NEON) /* ARM tables: src/kernels/arm, docs/ARM.md */
  if (strcmp(isa, "neon") == 0) return fg_kernels_neon();
  if (strcmp(isa, "neon_dotprod") == 0) return fg_arm_cpu_has_dotprod() ? fg_kernels_neon_dotprod() : NULL;
  if (strcmp(isa, "neon_i8mm") == 0) return fg_arm_cpu_has_i8mm() ? fg_kernels_neon_i8mm() : NULL;
#endif
  return NULL;
}

// ----------------------------------------------------------------------------
// the process-wide table

static const fg_kernels *g_kernels;  /* NULL if FG_ISA named something unusable */
static char g_kernels_msg[160];
static pthread_once_t g_kernels_once = PTHREAD_ONCE_INIT;

static void fg_kernels_choose(void) {
  const char *env = getenv("FG_ISA");
  if (env && env[0] && strcmp(env, "auto") != 0) {
    g_kernels = fg_kernels_by_name(env);
    if (!g_kernels)
      snprintf(g_kernels_msg, sizeof g_kernels_msg,
               "FG_ISA=%.40s is unknown or not supported by this CPU/build (try ref, avx2, avx512, neon, "
               "neon_dotprod, neon_i8mm, auto)",
               env);
    return;
  }
  /* names of another architecture are simply not found */
  static const char *const k_best_first[] = {"avx512", "avx2", "neon_i8mm", "neon_dotprod", "neon"};
  for (size_t i = 0; i < sizeof k_best_first / sizeof k_best_first[0]; i++) {
    const fg_kernels *k = fg_kernels_by_name(k_best_first[i]);
    if (k) {
      g_kernels = k;
      return;
    }
  }
  g_kernels = fg_kernels_ref();
}

fg_status fg_kernels_get(const fg_kernels **out, fg_error *err) {
  pthread_once(&g_kernels_once, fg_kernels_choose);
  *out = g_kernels;
  if (!g_kernels) return fg_err(err, FG_ERR_UNSUPPORTED, "%s", g_kernels_msg);
  return FG_OK;
}

const char *fg_ops_isa(void) {
  const fg_kernels *k;
  if (fg_kernels_get(&k, NULL) != FG_OK) return "unsupported";
  return k->name;
}

const char *fg_kernels_name(void) { return fg_ops_isa(); }

#if !FG_DISPATCH_X86
const fg_kernels *fg_kernels_avx2(void) { return NULL; }
const fg_kernels *fg_kernels_avx512(void) { return NULL; }
#endif
