/* bench_peak.c — the compute ceilings the kernels are measured against: instruction throughput of
 * one core for the multiply-add instructions the x86 tables use, with 12 independent accumulators
 * (enough to hide their latency), and what that means in multiply-adds per second.
 *
 *   bench_peak [--seconds S]
 *
 * Prints, per instruction the CPU has: instructions per second, multiply-adds per instruction and
 * GMAC/s on one core (two cores: twice that at best). docs/PERFORMANCE.md uses these numbers to say
 * how far a GEMM is from its ceiling. On other architectures it says so and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#  include <immintrin.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#  define R12(m) m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7) m(8) m(9) m(10) m(11)

/* PEAK_LOOP defines a function that runs n rounds of 12 independent multiply-adds (STEP(acc)) on
 * accumulators of type VT started by INIT(i), and returns a value that depends on all of them (LANE0
 * of each), so nothing can be folded away; seed keeps the inputs unknown to the compiler. */
#  define PEAK_LOOP(name, isa, VT, INIT, STEP, LANE0)                                    \
    __attribute__((target(isa))) static float name(long n, float seed) {               \
      VT a[12];                                                                         \
      for (int i = 0; i < 12; i++) a[i] = INIT(i);                                      \
      for (long k = 0; k < n; k++) {                                                    \
        R12(PEAK_STEP)                                                                  \
      }                                                                                 \
      float s = 0;                                                                      \
      for (int i = 0; i < 12; i++) s += (float)LANE0(a[i]);                             \
      return s;                                                                         \
    }
/* the 12 steps are spelled out so the accumulators stay in registers */
#  define PEAK_STEP(i) a[i] = STEP(a[i]);

#  define STEP(acc) _mm256_fmadd_ps(acc, _mm256_set1_ps(seed), _mm256_set1_ps(1.0f - seed))
#  define INIT(i) _mm256_set1_ps(seed * (float)((i) + 1))
PEAK_LOOP(loop_fma256, "avx2,fma", __m256, INIT, STEP, _mm256_cvtss_f32)
#  undef STEP
#  undef INIT
#  define STEP(acc) _mm512_fmadd_ps(acc, _mm512_set1_ps(seed), _mm512_set1_ps(1.0f - seed))
#  define INIT(i) _mm512_set1_ps(seed * (float)((i) + 1))
PEAK_LOOP(loop_fma512, "avx512f", __m512, INIT, STEP, _mm512_cvtss_f32)
#  undef STEP
#  define STEP(acc) \
    _mm512_dpbf16_ps(acc, (__m512bh)_mm512_set1_epi16((short)(0x3f80 + (int)seed)), (__m512bh)_mm512_set1_epi16(0x3f81))
PEAK_LOOP(loop_bf16dp512, "avx512f,avx512bf16", __m512, INIT, STEP, _mm512_cvtss_f32)
#  undef STEP
#  undef INIT
#  define LANE0_512I(v) _mm_cvtsi128_si32(_mm512_castsi512_si128(v))
#  define LANE0_256I(v) _mm_cvtsi128_si32(_mm256_castsi256_si128(v))
#  define STEP(acc) _mm512_dpbusd_epi32(acc, _mm512_set1_epi8((char)(3 + (int)seed)), _mm512_set1_epi8(5))
#  define INIT(i) _mm512_set1_epi32((int)seed + (i))
PEAK_LOOP(loop_vnni512, "avx512f,avx512vnni", __m512i, INIT, STEP, LANE0_512I)
#  undef STEP
#  undef INIT
#  define STEP(acc) _mm256_dpbusd_avx_epi32(acc, _mm256_set1_epi8((char)(3 + (int)seed)), _mm256_set1_epi8(5))
#  define INIT(i) _mm256_set1_epi32((int)seed + (i))
PEAK_LOOP(loop_vnni256, "avx2,avxvnni", __m256i, INIT, STEP, LANE0_256I)
#  undef STEP
#  undef INIT

typedef struct peak_case {
  const char *name;
  const char *feature; /* for __builtin_cpu_supports */
  const char *feature2;
  int macs;            /* multiply-adds per instruction */
  const char *what;
  float (*loop)(long, float);
} peak_case;

int main(int argc, char **argv) {
  double seconds = 0.3;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = atof(argv[++i]);
    } else {
      fprintf(stderr, "usage: bench_peak [--seconds S]\n");
      return strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ? 0 : 2;
    }
  }
  if (!(seconds > 0 && seconds < 60)) {
    fprintf(stderr, "bench_peak: --seconds must be in (0, 60)\n");
    return 2;
  }
  static const peak_case cases[] = {
      {"vfmadd231ps ymm", "avx2", "fma", 8, "f32 FMA (avx2 tables)", loop_fma256},
      {"vfmadd231ps zmm", "avx512f", "avx512f", 16, "f32 FMA (avx512 F32/F16, attention)", loop_fma512},
      {"vdpbf16ps zmm", "avx512f", "avx512bf16", 32, "bf16 pairs into f32 (avx512 BF16)", loop_bf16dp512},
      {"vpdpbusd zmm", "avx512f", "avx512vnni", 64, "u8 x s8 into s32 (avx512 Q8_0/Q4_0)", loop_vnni512},
      {"vpdpbusd ymm (AVX-VNNI)", "avx2", "avxvnni", 32, "u8 x s8 into s32, VEX form", loop_vnni256},
  };
  __builtin_cpu_init();
  printf("%-26s %10s %6s %10s  %s\n", "instruction (1 core)", "G instr/s", "MACs", "GMAC/s", "used for");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const peak_case *pc = &cases[c];
    /* __builtin_cpu_supports needs string literals: check the few names used above */
    int ok = 1;
    const char *f[2] = {pc->feature, pc->feature2};
    for (int k = 0; k < 2; k++) {
      if (strcmp(f[k], "avx2") == 0) ok &= __builtin_cpu_supports("avx2") != 0;
      else if (strcmp(f[k], "fma") == 0) ok &= __builtin_cpu_supports("fma") != 0;
      else if (strcmp(f[k], "avx512f") == 0) ok &= __builtin_cpu_supports("avx512f") != 0;
      else if (strcmp(f[k], "avx512bf16") == 0) ok &= __builtin_cpu_supports("avx512bf16") != 0;
      else if (strcmp(f[k], "avx512vnni") == 0) ok &= __builtin_cpu_supports("avx512vnni") != 0;
      else if (strcmp(f[k], "avxvnni") == 0) ok &= __builtin_cpu_supports("avxvnni") != 0;
      else ok = 0;
    }
    if (!ok) {
      printf("%-26s %10s %6d %10s  %s (not on this CPU)\n", pc->name, "-", pc->macs, "-", pc->what);
      continue;
    }
    long n = 1 << 16;
    double dt = 0;
    volatile float sink = 0;
    for (;;) { /* grow the loop until it runs long enough to time */
      const double t0 = now_s();
      sink += pc->loop(n, 1.0f + (float)argc * 1e-3f);
      dt = now_s() - t0;
      if (dt >= seconds || n > (1L << 40)) break;
      n *= dt > seconds / 16 ? 2 : 8;
    }
    const double ips = (double)n * 12.0 / dt;
    printf("%-26s %10.2f %6d %10.1f  %s\n", pc->name, ips / 1e9, pc->macs, ips * pc->macs / 1e9, pc->what);
    (void)sink;
  }
  return 0;
}

#else

int main(void) {
  printf("bench_peak: only the x86 instructions are measured; nothing to do on this architecture\n");
  return 0;
}

#endif
