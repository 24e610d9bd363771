/* neon_lora.c — the NEON B product of run-time LoRA adapters (attn.h, fg_attn_kernels.lora_bt), the C
 * table's sums: per output a rounded product, then a rounded sum, in q order from 0 in an accumulator of
 * its own. Built with -ffp-contract=off (CMakeLists.txt): GCC would otherwise fuse vmulq and vaddq into
 * one fused multiply-add on aarch64. 32 outputs per tile (8 quad registers, within armv7's 16), then 4,
 * then one at a time.
 * aarch64: bit for bit the C table. armv7: the same with AArch32 NEON's flush of denormals to zero, the
 * tolerance of neon_attn.c (a loss below 2^-126 per operation; adapter products are far above it). */
#include "kernels/arm/neon.h"

#if defined(__ARM_NEON)
#  include "kernels/arm/neon_compat.h"

#  include <arm_neon.h>

void fg_lora_bt_neon(float *FG_RESTRICT y, const float *FG_RESTRICT t, size_t nq, const float *FG_RESTRICT bt, size_t ld,
                     size_t n) {
  size_t r0 = 0;
#  if !defined(__aarch64__)
  /* armv7: the 32-output tile in assembly (GCC recomputed the eight row addresses: 37 instructions per q,
   * 23 here), the same vmul and vadd in the same order: a0..a7 in q0-q7, t[q] broadcast in q8 */
  if (nq > 0)
    for (; r0 + 32 <= n; r0 += 32) {
      const float *row = bt + r0, *tq = t;
      const size_t step = ld * sizeof(float) - 96;
      size_t k = nq;
      float *o = y + r0;
      __asm__ volatile(
          FG_A32_ZERO_Q0_Q7
          "1:\n\t"
          "vld1.32 {d16[], d17[]}, [%[t]]!\n\t"
          "vld1.32 {d18-d21}, [%[row]]!\n\t"
          "vld1.32 {d22-d25}, [%[row]]!\n\t"
          "vmul.f32 q9, q9, q8\n\t"
          "vmul.f32 q10, q10, q8\n\t"
          "vmul.f32 q11, q11, q8\n\t"
          "vmul.f32 q12, q12, q8\n\t"
          "vadd.f32 q0, q0, q9\n\t"
          "vadd.f32 q1, q1, q10\n\t"
          "vadd.f32 q2, q2, q11\n\t"
          "vadd.f32 q3, q3, q12\n\t"
          "vld1.32 {d18-d21}, [%[row]]!\n\t"
          "vld1.32 {d22-d25}, [%[row]], %[step]\n\t"
          "vmul.f32 q9, q9, q8\n\t"
          "vmul.f32 q10, q10, q8\n\t"
          "vmul.f32 q11, q11, q8\n\t"
          "vmul.f32 q12, q12, q8\n\t"
          "vadd.f32 q4, q4, q9\n\t"
          "vadd.f32 q5, q5, q10\n\t"
          "vadd.f32 q6, q6, q11\n\t"
          "vadd.f32 q7, q7, q12\n\t"
          "subs %[k], %[k], #1\n\t"
          "bne 1b\n\t"
          "vld1.32 {d16-d19}, [%[o]]\n\t" /* y += a, as below */
          "vadd.f32 q8, q8, q0\n\t"
          "vadd.f32 q9, q9, q1\n\t"
          "vst1.32 {d16-d19}, [%[o]]!\n\t"
          "vld1.32 {d16-d19}, [%[o]]\n\t"
          "vadd.f32 q8, q8, q2\n\t"
          "vadd.f32 q9, q9, q3\n\t"
          "vst1.32 {d16-d19}, [%[o]]!\n\t"
          "vld1.32 {d16-d19}, [%[o]]\n\t"
          "vadd.f32 q8, q8, q4\n\t"
          "vadd.f32 q9, q9, q5\n\t"
          "vst1.32 {d16-d19}, [%[o]]!\n\t"
          "vld1.32 {d16-d19}, [%[o]]\n\t"
          "vadd.f32 q8, q8, q6\n\t"
          "vadd.f32 q9, q9, q7\n\t"
          "vst1.32 {d16-d19}, [%[o]]\n\t"
          : [t] "+r"(tq), [row] "+r"(row), [k] "+r"(k), [o] "+r"(o)
          : [step] "r"(step)
          : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13",
            "d14", "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25");
    }
#  endif
  for (; r0 + 32 <= n; r0 += 32) {
    const float32x4_t z = vdupq_n_f32(0.0f);
    float32x4_t a0 = z, a1 = z, a2 = z, a3 = z, a4 = z, a5 = z, a6 = z, a7 = z;
    for (size_t q = 0; q < nq; q++) {
      const float32x4_t tq = vld1q_dup_f32(t + q);
      const float *row = bt + q * ld + r0;
      a0 = vaddq_f32(a0, vmulq_f32(vld1q_f32(row), tq));
      a1 = vaddq_f32(a1, vmulq_f32(vld1q_f32(row + 4), tq));
      a2 = vaddq_f32(a2, vmulq_f32(vld1q_f32(row + 8), tq));
      a3 = vaddq_f32(a3, vmulq_f32(vld1q_f32(row + 12), tq));
      a4 = vaddq_f32(a4, vmulq_f32(vld1q_f32(row + 16), tq));
      a5 = vaddq_f32(a5, vmulq_f32(vld1q_f32(row + 20), tq));
      a6 = vaddq_f32(a6, vmulq_f32(vld1q_f32(row + 24), tq));
      a7 = vaddq_f32(a7, vmulq_f32(vld1q_f32(row + 28), tq));
    }
    float *o = y + r0;
    vst1q_f32(o, vaddq_f32(vld1q_f32(o), a0));
    vst1q_f32(o + 4, vaddq_f32(vld1q_f32(o + 4), a1));
    vst1q_f32(o + 8, vaddq_f32(vld1q_f32(o + 8), a2));
    vst1q_f32(o + 12, vaddq_f32(vld1q_f32(o + 12), a3));
    vst1q_f32(o + 16, vaddq_f32(vld1q_f32(o + 16), a4));
    vst1q_f32(o + 20, vaddq_f32(vld1q_f32(o + 20), a5));
    vst1q_f32(o + 24, vaddq_f32(vld1q_f32(o + 24), a6));
    vst1q_f32(o + 28, vaddq_f32(vld1q_f32(o + 28), a7));
  }
  for (; r0 + 4 <= n; r0 += 4) {
    float32x4_t a = vdupq_n_f32(0.0f);
    for (size_t q = 0; q < nq; q++) a = vaddq_f32(a, vmulq_f32(vld1q_f32(bt + q * ld + r0), vld1q_dup_f32(t + q)));
    vst1q_f32(y + r0, vaddq_f32(vld1q_f32(y + r0), a));
  }
  for (; r0 < n; r0++) {
    float a = 0.0f;
    for (size_t q = 0; q < nq; q++) a += bt[q * ld + r0] * t[q];
    y[r0] += a;
  }
}
#endif
