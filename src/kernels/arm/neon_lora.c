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
#  else
  /* aarch64: the 32-output tile in assembly too (GCC: 24 instructions per q, with the row address advanced
   * apart; here 21 for single q, 18.75 in passes of four q that load t[q..q+3] once and multiply by
   * element), the same fmul and fadd in the same order: a0..a7 in v0-v7, the row in v17-v24 */
#    define FG_LORA_A64_Q(t)                                                                                 "ld1 {v17.4s-v20.4s}, [%[row]], #64\n\t"                                                                   "ld1 {v21.4s-v24.4s}, [%[row]], %[step]\n\t"                                                               "fmul v17.4s, v17.4s, " t "\n\t"                                                                          "fmul v18.4s, v18.4s, " t "\n\t"                                                                          "fmul v19.4s, v19.4s, " t "\n\t"                                                                          "fmul v20.4s, v20.4s, " t "\n\t"                                                                          "fmul v21.4s, v21.4s, " t "\n\t"                                                                          "fmul v22.4s, v22.4s, " t "\n\t"                                                                          "fmul v23.4s, v23.4s, " t "\n\t"                                                                          "fmul v24.4s, v24.4s, " t "\n\t"                                                                          "fadd v0.4s, v0.4s, v17.4s\n\t"                                                                            "fadd v1.4s, v1.4s, v18.4s\n\t"                                                                            "fadd v2.4s, v2.4s, v19.4s\n\t"                                                                            "fadd v3.4s, v3.4s, v20.4s\n\t"                                                                            "fadd v4.4s, v4.4s, v21.4s\n\t"                                                                            "fadd v5.4s, v5.4s, v22.4s\n\t"                                                                            "fadd v6.4s, v6.4s, v23.4s\n\t"                                                                            "fadd v7.4s, v7.4s, v24.4s\n\t"
  for (; r0 + 32 <= n; r0 += 32) {
    const float *row = bt + r0, *tq = t;
    const size_t step = ld * sizeof(float) - 64;
    size_t k = nq, rem;
    float *o = y + r0;
    __asm__ volatile(
        FG_A64_ZERO_V0_V7
        "ands %[rem], %[k], #3\n\t"
        "b.eq 3f\n\t"
        "4:\n\t"
        "ld1r {v16.4s}, [%[t]], #4\n\t" FG_LORA_A64_Q("v16.4s")
        "subs %[rem], %[rem], #1\n\t"
        "b.ne 4b\n\t"
        "3:\n\t"
        "lsr %[k], %[k], #2\n\t"
        "cbz %[k], 2f\n\t"
        "1:\n\t"
        "ldr q16, [%[t]], #16\n\t" FG_LORA_A64_Q("v16.s[0]") FG_LORA_A64_Q("v16.s[1]") FG_LORA_A64_Q("v16.s[2]")
        FG_LORA_A64_Q("v16.s[3]")
        "subs %[k], %[k], #1\n\t"
        "b.ne 1b\n\t"
        "2:\n\t"
        "ld1 {v16.4s-v19.4s}, [%[o]]\n\t" /* y += a, as below */
        "fadd v16.4s, v16.4s, v0.4s\n\t"
        "fadd v17.4s, v17.4s, v1.4s\n\t"
        "fadd v18.4s, v18.4s, v2.4s\n\t"
        "fadd v19.4s, v19.4s, v3.4s\n\t"
        "st1 {v16.4s-v19.4s}, [%[o]], #64\n\t"
        "ld1 {v16.4s-v19.4s}, [%[o]]\n\t"
        "fadd v16.4s, v16.4s, v4.4s\n\t"
        "fadd v17.4s, v17.4s, v5.4s\n\t"
        "fadd v18.4s, v18.4s, v6.4s\n\t"
        "fadd v19.4s, v19.4s, v7.4s\n\t"
        "st1 {v16.4s-v19.4s}, [%[o]]\n\t"
        : [t] "+r"(tq), [row] "+r"(row), [k] "+r"(k), [rem] "=&r"(rem), [o] "+r"(o)
        : [step] "r"(step)
        : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v16", "v17", "v18", "v19", "v20", "v21",
          "v22", "v23", "v24");
  }
#    undef FG_LORA_A64_Q
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
