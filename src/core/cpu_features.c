/* cpu_features.c — cpuid/xgetbv feature detection. This file is compiled without ISA flags: it only
 * asks the CPU what it has; the kernels that use the answers live in kernels/x86. */
#include "core/cpu_features.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#  include <cpuid.h>
#  define FG_CPU_X86 1
#else
#  define FG_CPU_X86 0
#endif

static fg_cpu_features g_features; /* written once under g_once */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

// ----------------------------------------------------------------------------
// x86: cpuid leaves 1 and 7, OS state from XCR0

#if FG_CPU_X86
static unsigned long long fg_xgetbv0(void) {
  unsigned int eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((unsigned long long)edx << 32) | eax;
}

static void fg_detect_x86(fg_cpu_features *f) {
  unsigned int eax, ebx, ecx, edx;
  f->x86 = true;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return;
  const bool osxsave = (ecx >> 27) & 1u;
  const bool avx_hw = (ecx >> 28) & 1u;
  const bool fma_hw = (ecx >> 12) & 1u;
  const bool f16c_hw = (ecx >> 29) & 1u;
  unsigned long long xcr0 = osxsave ? fg_xgetbv0() : 0;
  const bool ymm_os = (xcr0 & 0x6u) == 0x6u;    /* SSE + AVX state */
  const bool zmm_os = (xcr0 & 0xe6u) == 0xe6u;  /* + opmask, ZMM_Hi256, Hi16_ZMM */
  const bool tile_os = (xcr0 & 0x60000u) == 0x60000u; /* XTILECFG + XTILEDATA */
  f->avx = avx_hw && ymm_os;
  f->fma = f->avx && fma_hw;
  f->f16c = f->avx && f16c_hw;

  unsigned int max_leaf = __get_cpuid_max(0, NULL);
  if (max_leaf < 7) return;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const unsigned int max_sub7 = eax;
  f->avx2 = f->avx && ((ebx >> 5) & 1u);
  f->avx512f = zmm_os && ((ebx >> 16) & 1u);
  f->avx512dq = f->avx512f && ((ebx >> 17) & 1u);
  f->avx512bw = f->avx512f && ((ebx >> 30) & 1u);
  f->avx512vl = f->avx512f && ((ebx >> 31) & 1u);
  f->avx512vnni = f->avx512f && ((ecx >> 11) & 1u);
  f->amx_bf16 = tile_os && ((edx >> 22) & 1u);
  f->amx_tile = tile_os && ((edx >> 24) & 1u);
  f->amx_int8 = tile_os && ((edx >> 25) & 1u);
  if (max_sub7 >= 1) {
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    f->avx_vnni = f->avx && ((eax >> 4) & 1u);
    f->avx512bf16 = f->avx512f && ((eax >> 5) & 1u);
  }
}
#endif

static void fg_detect(void) {
  fg_cpu_features f;
  memset(&f, 0, sizeof f);
#if FG_CPU_X86
  fg_detect_x86(&f);
#endif
  g_features = f;
}

const fg_cpu_features *fg_cpu_features_get(void) {
  pthread_once(&g_once, fg_detect);
  return &g_features;
}
