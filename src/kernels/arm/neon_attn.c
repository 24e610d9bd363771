/* neon_attn.c — NEON versions of the attention products (kernels/attn.h: qk and pv), the plain-C table's
 * (which is bit for bit the AVX2 table's): every output element is the same chain of fused
 * multiply-adds in the same order, only several elements at a time.
 *
 * aarch64: bit for bit. AArch64 NEON is IEEE (FPCR left at its default by Linux/Android), so vfmaq_f32
 * rounds exactly like fmaf. Softmax, fold, GELU and argmax are NEON too (the same operations; argmax the
 * same answer); exp, exp1 and the f16 conversion are the C table's.
 *
 * armv7: softmax, fold and GELU are bit for bit the C table's, flush to zero notwithstanding (each says
 * why: the cases where flushing could matter go to the C code or cannot change a result; GELU divides in
 * scalar VFP code); argmax, exp, exp1 and the f16 conversion are the C table's. qk and pv: AArch32
 * Advanced SIMD always flushes denormals to zero (VFMA.F32 on Q registers rounds like fmaf otherwise: round to nearest even, one rounding). So the
 * armv7 table is the spec with flush-to-zero: bit for bit the C table's wherever no operand, product or
 * partial sum is denormal (|x| < 2^-126), which tests/test_arm_kernels.c checks on ordinary data; where
 * one is, each affected operation differs by less than 2^-126 in absolute terms (tested there too). A
 * denormal term cannot change a sum that holds any normal term of ordinary size, so logits, greedy ids
 * and answers match the other tables' (the ARM ids and snapshot checks compare them with the host's).
 * armv7 has 16 quad registers (aarch64 32): its tiles are 2 rows x 16 keys or columns. */
#include "kernels/arm/neon.h"

#if defined(__ARM_NEON)
#  include "kernels/arm/neon_compat.h"

#  include <arm_neon.h>
#  include <math.h>
#  include <pthread.h>
#  include <string.h>

static inline float ld1(const void *p, size_t i, uint32_t type) {
  if (type == FG_TYPE_F16) {
    uint16_t h;
    memcpy(&h, (const uint8_t *)p + 2 * i, 2);
    return fg_fp16_to_f32(h);
  }
  return ((const float *)p)[i];
}

/* The tile: TW = 4 NV consecutive keys (qk) or columns (pv) of two rows, held in 2 NV named quad
 * accumulators a0.. and b0.. (named, not an array, and the element type decided outside the loops: GCC
 * at -O2 kept an array of them in memory, a load and a store around every fused multiply-add).
 * aarch64 (32 quad registers): NV = 8, a whole block of 32 keys per tile; armv7 (16): NV = 4, two tiles
 * per block, so that 8 accumulators, 4 loaded vectors and 2 broadcast weights fit. */
#  if FG_ATTN_BLK != 32
#    error "qk_neon is written for blocks of 32 keys"
#  endif
#  if defined(__aarch64__)
#    define NV 8
/* TW consecutive f16 or f32 values as NV named float32x4 n##0 .. (declared here) */
#    define LDV_F16(n, p)                                                                                  \
      const uint16x8x4_t n##h = vld1q_u16_x4(p);                                                           \
      const float32x4_t n##0 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(n##h.val[0])));              \
      const float32x4_t n##1 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(n##h.val[0])));             \
      const float32x4_t n##2 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(n##h.val[1])));              \
      const float32x4_t n##3 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(n##h.val[1])));             \
      const float32x4_t n##4 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(n##h.val[2])));              \
      const float32x4_t n##5 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(n##h.val[2])));             \
      const float32x4_t n##6 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(n##h.val[3])));              \
      const float32x4_t n##7 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(n##h.val[3])))
#    define LDV_F32(n, p)                                                                                  \
      const float32x4x4_t n##a = vld1q_f32_x4(p), n##b = vld1q_f32_x4((p) + 16);                           \
      const float32x4_t n##0 = n##a.val[0], n##1 = n##a.val[1], n##2 = n##a.val[2], n##3 = n##a.val[3];    \
      const float32x4_t n##4 = n##b.val[0], n##5 = n##b.val[1], n##6 = n##b.val[2], n##7 = n##b.val[3]
/* OP(i) for each vector i of a tile */
#    define EACH(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7)
#  else
#    define NV 4
#    define LDV_F16(n, p)                                                                                  \
      const uint16x8_t n##h0 = vld1q_u16(p), n##h1 = vld1q_u16((p) + 8);                                   \
      const float32x4_t n##0 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(n##h0)));                    \
      const float32x4_t n##1 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(n##h0)));                   \
      const float32x4_t n##2 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(n##h1)));                    \
      const float32x4_t n##3 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(n##h1)))
#    define LDV_F32(n, p)                                                                                  \
      const float32x4_t n##0 = vld1q_f32(p), n##1 = vld1q_f32((p) + 4), n##2 = vld1q_f32((p) + 8),          \
                        n##3 = vld1q_f32((p) + 12)
#    define EACH(OP) OP(0) OP(1) OP(2) OP(3)
#  endif
#  define TW (4 * NV)
/* the accumulators of both rows: declared from src (o * c) or zero */
#  define DECL_ZERO(i) float32x4_t a##i = vdupq_n_f32(0.0f), b##i = a##i;
#  define DECL_SCALED(i)                                                                                   \
    float32x4_t a##i = vmulq_n_f32(vld1q_f32(o0 + i0 + 4 * (i)), c0), b##i = vmulq_n_f32(vld1q_f32(o1 + i0 + 4 * (i)), c1);
#  define FMA_AB(i)                                                                                        \
    a##i = vfmaq_f32(a##i, w0, x##i);                                                                      \
    b##i = vfmaq_f32(b##i, w1, x##i);
#  define STORE_A(i) vst1q_f32(da + 4 * (i), a##i);
#  define STORE_B(i) vst1q_f32(db + 4 * (i), b##i);

#  if !defined(__aarch64__)
/* armv7, f32 keys or values: the tile in assembly (GCC recomputed the four load addresses every step: 21
 * instructions a step, 12.5 here, and the tile's set-up and stores in C cost pv a third of its loop). The
 * accumulators a0..a3 (q0-q3) and b0..b3 (q4-q7) start from 0 (ca == NULL: qk) or from a[i] * *ca and
 * b[i] * *cb (pv: o * c, as DECL_SCALED); n steps, step t loading 16 values x[t] (x advances stride bytes a
 * step) and the weights w0[t], w1[t], then a_i = fma(w0[t], x_i, a_i) and b_i = fma(w1[t], x_i, b_i): the
 * fused multiply-adds of FMA_AB in the same order. Stores b[0..15], then a[0..15] (b may be a: then both
 * rows are the same row). */
#    define FMA_TILE_A32_STEP                     \
  "vld1.32 {d16-d19}, [%[x]]!\n\t"                \
  "vld1.32 {d20-d23}, [%[x]], %[step]\n\t"        \
  "vld1.32 {d24[], d25[]}, [%[w0]]!\n\t"          \
  "vld1.32 {d26[], d27[]}, [%[w1]]!\n\t"          \
  "vfma.f32 q0, q12, q8\n\t"                      \
  "vfma.f32 q4, q13, q8\n\t"                      \
  "vfma.f32 q1, q12, q9\n\t"                      \
  "vfma.f32 q5, q13, q9\n\t"                      \
  "vfma.f32 q2, q12, q10\n\t"                     \
  "vfma.f32 q6, q13, q10\n\t"                     \
  "vfma.f32 q3, q12, q11\n\t"                     \
  "vfma.f32 q7, q13, q11\n\t"
/* n % 4 single steps, then n / 4 times four steps (the loop's count and branch once per four steps: 12.5
 * instructions a step against 14) */
#    define FMA_TILE_A32_LOOP                     \
  "ands %[rem], %[n], #3\n\t"                     \
  "beq 3f\n\t"                                    \
  "4:\n\t"                                        \
  FMA_TILE_A32_STEP                               \
  "subs %[rem], %[rem], #1\n\t"                   \
  "bne 4b\n\t"                                    \
  "3:\n\t"                                        \
  "lsrs %[n], %[n], #2\n\t"                       \
  "beq 2f\n\t"                                    \
  "1:\n\t"                                        \
  FMA_TILE_A32_STEP                               \
  FMA_TILE_A32_STEP                               \
  FMA_TILE_A32_STEP                               \
  FMA_TILE_A32_STEP                               \
  "subs %[n], %[n], #1\n\t"                       \
  "bne 1b\n\t"                                    \
  "2:\n\t"                                        \
  "vstmia %[b], {d8-d15}\n\t"                     \
  "vstmia %[a], {d0-d7}\n\t"
#    define FMA_TILE_A32_REGS                                                                                \
  : [x] "+r"(x), [w0] "+r"(w0), [w1] "+r"(w1), [n] "+r"(n), [rem] "=&r"(rem)                                 \
  : [a] "r"(a), [b] "r"(b), [ca] "r"(ca), [cb] "r"(cb), [step] "r"(step)                                     \
  : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13",  \
    "d14", "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28", \
    "d29", "d30", "d31"
static void fma_tile_a32(float *a, float *b, const float *ca, const float *cb, const float *x, size_t stride,
                         const float *w0, const float *w1, size_t n) {
  const size_t step = stride - 32;
  size_t rem;
  if (ca == NULL) {
    __asm__ volatile(
        FG_A32_ZERO_Q0_Q7 FMA_TILE_A32_LOOP FMA_TILE_A32_REGS);
  } else {
    __asm__ volatile(
        "vldmia %[a], {d0-d7}\n\t"
        "vldmia %[b], {d8-d15}\n\t"
        "vld1.32 {d28[], d29[]}, [%[ca]]\n\t"
        "vld1.32 {d30[], d31[]}, [%[cb]]\n\t"
        "vmul.f32 q0, q0, q14\n\t"
        "vmul.f32 q1, q1, q14\n\t"
        "vmul.f32 q2, q2, q14\n\t"
        "vmul.f32 q3, q3, q14\n\t"
        "vmul.f32 q4, q4, q15\n\t"
        "vmul.f32 q5, q5, q15\n\t"
        "vmul.f32 q6, q6, q15\n\t"
        "vmul.f32 q7, q7, q15\n\t" FMA_TILE_A32_LOOP FMA_TILE_A32_REGS);
  }
}
#    undef FMA_TILE_A32_LOOP
#    undef FMA_TILE_A32_STEP
#    undef FMA_TILE_A32_REGS
#  endif

#  if defined(__aarch64__)
/* aarch64, f32 keys or values: the tile in assembly, as fma_tile_a32 (GCC's loop took 25 instructions a step:
 * the weights loaded one at a time by index, the key pointer copied and advanced apart; here 19 a step in
 * passes of four, the weights of four steps in one load per row). The accumulators a0..a7 (v0-v7) and
 * b0..b7 (v8-v15) start from 0 (ca == NULL: qk) or from a[i] * *ca and b[i] * *cb (pv: o * c, as
 * DECL_SCALED); n steps, step t loading the 32 values x[t] (x advances stride bytes a step) and the
 * weights w0[t], w1[t], then a_i = fma(w0[t], x_i, a_i) and b_i = fma(w1[t], x_i, b_i): FMA_AB's fused
 * multiply-adds in the same order. Stores b[0..31], then a[0..31] (b may be a: then both rows are the same
 * row). */
#    define FMA_TILE_A64_FMAS(l)                                                                            \
  "fmla v0.4s, v16.4s, v24.s[" l "]\n\t"                                                                   \
  "fmla v8.4s, v16.4s, v25.s[" l "]\n\t"                                                                   \
  "fmla v1.4s, v17.4s, v24.s[" l "]\n\t"                                                                   \
  "fmla v9.4s, v17.4s, v25.s[" l "]\n\t"                                                                   \
  "fmla v2.4s, v18.4s, v24.s[" l "]\n\t"                                                                   \
  "fmla v10.4s, v18.4s, v25.s[" l "]\n\t"                                                                  \
  "fmla v3.4s, v19.4s, v24.s[" l "]\n\t"                                                                   \
  "fmla v11.4s, v19.4s, v25.s[" l "]\n\t"                                                                  \
  "fmla v4.4s, v20.4s, v24.s[" l "]\n\t"                                                                   \
  "fmla v12.4s, v20.4s, v25.s[" l "]\n\t"                                                                  \
  "fmla v5.4s, v21.4s, v24.s[" l "]\n\t"                                                                   \
  "fmla v13.4s, v21.4s, v25.s[" l "]\n\t"                                                                  \
  "fmla v6.4s, v22.4s, v24.s[" l "]\n\t"                                                                   \
  "fmla v14.4s, v22.4s, v25.s[" l "]\n\t"                                                                  \
  "fmla v7.4s, v23.4s, v24.s[" l "]\n\t"                                                                   \
  "fmla v15.4s, v23.4s, v25.s[" l "]\n\t"
#    define FMA_TILE_A64_LDX                                                                                \
  "ld1 {v16.4s-v19.4s}, [%[x]], #64\n\t"                                                                   \
  "ld1 {v20.4s-v23.4s}, [%[x]], %[step]\n\t"
/* n % 4 single steps, then n / 4 passes of four steps */
#    define FMA_TILE_A64_LOOP                                                                               \
  "ands %[rem], %[n], #3\n\t"                                                                              \
  "b.eq 3f\n\t"                                                                                            \
  "4:\n\t"                                                                                                 \
  "ldr s24, [%[w0]], #4\n\t"                                                                               \
  "ldr s25, [%[w1]], #4\n\t" FMA_TILE_A64_LDX FMA_TILE_A64_FMAS("0")                                       \
  "subs %[rem], %[rem], #1\n\t"                                                                            \
  "b.ne 4b\n\t"                                                                                            \
  "3:\n\t"                                                                                                 \
  "lsr %[n], %[n], #2\n\t"                                                                                 \
  "cbz %[n], 2f\n\t"                                                                                       \
  "1:\n\t"                                                                                                 \
  "ldr q24, [%[w0]], #16\n\t"                                                                              \
  "ldr q25, [%[w1]], #16\n\t" FMA_TILE_A64_LDX FMA_TILE_A64_FMAS("0") FMA_TILE_A64_LDX FMA_TILE_A64_FMAS("1") \
  FMA_TILE_A64_LDX FMA_TILE_A64_FMAS("2") FMA_TILE_A64_LDX FMA_TILE_A64_FMAS("3")                          \
  "subs %[n], %[n], #1\n\t"                                                                                \
  "b.ne 1b\n\t"                                                                                            \
  "2:\n\t"                                                                                                 \
  "st1 {v8.4s-v11.4s}, [%[b]], #64\n\t"                                                                    \
  "st1 {v12.4s-v15.4s}, [%[b]]\n\t"                                                                        \
  "st1 {v0.4s-v3.4s}, [%[a]], #64\n\t"                                                                     \
  "st1 {v4.4s-v7.4s}, [%[a]]\n\t"
#    define FMA_TILE_A64_REGS                                                                               \
  : [x] "+r"(x), [w0] "+r"(w0), [w1] "+r"(w1), [n] "+r"(n), [rem] "=&r"(rem), [a] "+r"(a), [b] "+r"(b)     \
  : [ca] "r"(ca), [cb] "r"(cb), [step] "r"(step)                                                           \
  : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", \
    "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27"
static void fma_tile_a64(float *a, float *b, const float *ca, const float *cb, const float *x, size_t stride,
                         const float *w0, const float *w1, size_t n) {
  const size_t step = stride - 64;
  size_t rem;
  if (ca == NULL) {
    __asm__ volatile(
        FG_A64_ZERO_V0_V7
        "movi v8.4s, #0\n\t"
        "movi v9.4s, #0\n\t"
        "movi v10.4s, #0\n\t"
        "movi v11.4s, #0\n\t"
        "movi v12.4s, #0\n\t"
        "movi v13.4s, #0\n\t"
        "movi v14.4s, #0\n\t"
        "movi v15.4s, #0\n\t" FMA_TILE_A64_LOOP FMA_TILE_A64_REGS);
  } else {
    __asm__ volatile(
        "ld1 {v0.4s-v3.4s}, [%[a]]\n\t"
        "ldr q4, [%[a], #64]\n\t"
        "ldr q5, [%[a], #80]\n\t"
        "ldr q6, [%[a], #96]\n\t"
        "ldr q7, [%[a], #112]\n\t"
        "ld1 {v8.4s-v11.4s}, [%[b]]\n\t"
        "ldr q12, [%[b], #64]\n\t"
        "ldr q13, [%[b], #80]\n\t"
        "ldr q14, [%[b], #96]\n\t"
        "ldr q15, [%[b], #112]\n\t"
        "ld1r {v26.4s}, [%[ca]]\n\t"
        "ld1r {v27.4s}, [%[cb]]\n\t"
        "fmul v0.4s, v0.4s, v26.4s\n\t"
        "fmul v1.4s, v1.4s, v26.4s\n\t"
        "fmul v2.4s, v2.4s, v26.4s\n\t"
        "fmul v3.4s, v3.4s, v26.4s\n\t"
        "fmul v4.4s, v4.4s, v26.4s\n\t"
        "fmul v5.4s, v5.4s, v26.4s\n\t"
        "fmul v6.4s, v6.4s, v26.4s\n\t"
        "fmul v7.4s, v7.4s, v26.4s\n\t"
        "fmul v8.4s, v8.4s, v27.4s\n\t"
        "fmul v9.4s, v9.4s, v27.4s\n\t"
        "fmul v10.4s, v10.4s, v27.4s\n\t"
        "fmul v11.4s, v11.4s, v27.4s\n\t"
        "fmul v12.4s, v12.4s, v27.4s\n\t"
        "fmul v13.4s, v13.4s, v27.4s\n\t"
        "fmul v14.4s, v14.4s, v27.4s\n\t"
        "fmul v15.4s, v15.4s, v27.4s\n\t" FMA_TILE_A64_LOOP FMA_TILE_A64_REGS);
  }
}
#    undef FMA_TILE_A64_LOOP
#    undef FMA_TILE_A64_LDX
#    undef FMA_TILE_A64_FMAS
#    undef FMA_TILE_A64_REGS
#  endif

/* s[r][j] = fma(q[r][i], kt[i][j], s[r][j]) for i = 0 .. hk-1, from 0; two query rows share each loaded
 * key vector */
static void qk_neon(const float *FG_RESTRICT q, size_t ldq, size_t R, size_t hk, const void *FG_RESTRICT kt,
                    uint32_t k_type, float *FG_RESTRICT s) {
  for (size_t r = 0; r < R; r += 2) {
    const int two = r + 1 < R;
    const float *q0 = q + r * ldq, *q1 = two ? q0 + ldq : q0;
    for (size_t j0 = 0; j0 < FG_ATTN_BLK; j0 += TW) {
      EACH(DECL_ZERO)
      /* one loop per key type, the type decided outside it */
#  define QK_LOOP(T, LD)                                                                                   \
      do {                                                                                                 \
        const T *krow = (const T *)kt + j0;                                                                \
        for (size_t i = 0; i < hk; i++, krow += FG_ATTN_BLK) {                                             \
          LD(x, krow);                                                                                     \
          const float32x4_t w0 = vld1q_dup_f32(q0 + i), w1 = vld1q_dup_f32(q1 + i);                        \
          EACH(FMA_AB)                                                                                     \
        }                                                                                                  \
      } while (0)
      float *da = s + r * FG_ATTN_BLK + j0, *db = da + FG_ATTN_BLK;
      if (k_type != FG_TYPE_F16) {
        float tb[TW];
#  if defined(__aarch64__)
        fma_tile_a64(da, two ? db : tb, NULL, NULL, (const float *)kt + j0, FG_ATTN_BLK * sizeof(float), q0, q1, hk);
#  else
        fma_tile_a32(da, two ? db : tb, NULL, NULL, (const float *)kt + j0, FG_ATTN_BLK * sizeof(float), q0, q1, hk);
#  endif
        continue;
      }
      if (k_type == FG_TYPE_F16) QK_LOOP(uint16_t, LDV_F16);
      else QK_LOOP(float, LDV_F32);
#  undef QK_LOOP
      EACH(STORE_A)
      if (two) { EACH(STORE_B) }
    }
  }
}

/* o[r][i] *= c[r]; then o[r][i] = fma(p[r][j], v_j[i], o[r][i]) for j = ja .. jb-1; columns in tiles of
 * TW held in registers over all j, two rows sharing each loaded value vector */
static void pv_neon(float *FG_RESTRICT o, size_t ldo, size_t R, size_t hv, const float *FG_RESTRICT c,
                    const float *FG_RESTRICT p, uint32_t ja, uint32_t jb, const void *FG_RESTRICT v, size_t v_stride,
                    uint32_t v_type) {
  for (size_t r = 0; r < R; r += 2) {
    const int two = r + 1 < R;
    float *o0 = o + r * ldo, *o1 = two ? o0 + ldo : o0;
    const float *p0 = p + r * FG_ATTN_BLK, *p1 = two ? p0 + FG_ATTN_BLK : p0;
    const float c0 = c[r], c1 = two ? c[r + 1] : c[r];
    size_t i0 = 0;
    for (; i0 + TW <= hv; i0 += TW) {
      if (v_type != FG_TYPE_F16) { /* one row (!two): o1 == o0, c1 == c0, p1 == p0, so b is a */
#  if defined(__aarch64__)
        fma_tile_a64(o0 + i0, o1 + i0, &c0, &c1, (const float *)v + i0, v_stride, p0 + ja, p1 + ja, jb - ja);
#  else
        fma_tile_a32(o0 + i0, o1 + i0, &c0, &c1, (const float *)v + i0, v_stride, p0 + ja, p1 + ja, jb - ja);
#  endif
        continue;
      }
      EACH(DECL_SCALED)
#  define PV_LOOP(T, LD)                                                                                   \
      do {                                                                                                 \
        for (uint32_t j = ja; j < jb; j++) {                                                               \
          const T *vrow = (const T *)(const void *)((const uint8_t *)v + (size_t)(j - ja) * v_stride) + i0;  \
          LD(x, vrow);                                                                                     \
          const float32x4_t w0 = vld1q_dup_f32(p0 + j), w1 = vld1q_dup_f32(p1 + j);                        \
          EACH(FMA_AB)                                                                                     \
        }                                                                                                  \
      } while (0)
      if (v_type == FG_TYPE_F16) PV_LOOP(uint16_t, LDV_F16);
      else PV_LOOP(float, LDV_F32);
#  undef PV_LOOP
      float *da = o0 + i0, *db = o1 + i0;
      EACH(STORE_A)
      if (two) { EACH(STORE_B) }
    }
    for (; i0 < hv; i0++) { /* columns past the last whole tile, one at a time (scalar: IEEE everywhere) */
      float s0 = o0[i0] * c0, s1 = o1[i0] * c1;
      for (uint32_t j = ja; j < jb; j++) {
        const float x = ld1((const uint8_t *)v + (size_t)(j - ja) * v_stride, i0, v_type);
        s0 = fmaf(p0[j], x, s0);
        s1 = fmaf(p1[j], x, s1);
      }
      o0[i0] = s0;
      if (two) o1[i0] = s1;
    }
  }
}

/* The C table's exp_lane, 4 lanes: the same clamp (NaN -> FG_EXP_HI), the same fused reductions and
 * polynomial, the same 2^n scaling. armv7 has no VRINTN: n = rint(x log2e) is rounded to nearest even by
 * adding and subtracting 1.5 * 2^23 (exact for |x log2e| <= 2^22; here <= 127). Bit for bit on armv7 too,
 * flush to zero notwithstanding: after the clamp the only denormal that can appear is a denormal x (then
 * n = 0 and r = x or 0, and both give y + 1 = 1 exactly), r is 0 or at least 2^-37 in magnitude where
 * n != 0, r * r is denormal only where |r| < 2^-63 (then y r^2 + r rounds to r either way), and the result
 * y 2^n is at least 2^-126 (n = -126 only where r > 0, i.e. y > 1). */
static inline float32x4_t exp4(float32x4_t x, const int nonpos) {
#  if defined(__aarch64__)
  (void)nonpos;
  x = vbslq_f32(vcltq_f32(x, vdupq_n_f32(FG_EXP_HI)), x, vdupq_n_f32(FG_EXP_HI));
  x = vbslq_f32(vcgtq_f32(x, vdupq_n_f32(FG_EXP_LO)), x, vdupq_n_f32(FG_EXP_LO));
  const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, FG_EXP_LOG2E));
#  else
  /* GCC turns float vector comparisons into scalar code on armv7: the clamp by vmin and vmax (the same for
   * every x but NaN, which gets FG_EXP_HI through an integer test of its bits; nonpos: x is <= 0 and
   * not NaN, only the lower clamp) */
  if (nonpos) {
    x = vmaxq_f32(x, vdupq_n_f32(FG_EXP_LO));
  } else {
    const uint32x4_t nan = vcgtq_u32(vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x7fffffffu)), vdupq_n_u32(0x7f800000u));
    x = vmaxq_f32(vminq_f32(x, vdupq_n_f32(FG_EXP_HI)), vdupq_n_f32(FG_EXP_LO));
    x = vbslq_f32(nan, vdupq_n_f32(FG_EXP_HI), x);
  }
  const float32x4_t n = vsubq_f32(vaddq_f32(vmulq_n_f32(x, FG_EXP_LOG2E), vdupq_n_f32(0x1.8p23f)), vdupq_n_f32(0x1.8p23f));
#  endif
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(FG_EXP_C1));
  r = vfmsq_f32(r, n, vdupq_n_f32(FG_EXP_C2));
  float32x4_t y = vdupq_n_f32(FG_EXP_P0);
  y = vfmaq_f32(vdupq_n_f32(FG_EXP_P1), y, r);
  y = vfmaq_f32(vdupq_n_f32(FG_EXP_P2), y, r);
  y = vfmaq_f32(vdupq_n_f32(FG_EXP_P3), y, r);
  y = vfmaq_f32(vdupq_n_f32(FG_EXP_P4), y, r);
  y = vfmaq_f32(vdupq_n_f32(FG_EXP_P5), y, r);
  y = vfmaq_f32(r, y, vmulq_f32(r, r));
  y = vaddq_f32(y, vdupq_n_f32(1.0f));
  const int32x4_t bits = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(y, vreinterpretq_f32_s32(bits));
}

/* The online-softmax update of the C table (softmax_c), a row's 32 keys in 8 vectors. The row's maximum as
 * a tree of vmax: where it is finite and not zero it is the value of every entry that equals it, so the same
 * bits as softmax_c's scan (which keeps the first of equal entries: +0 and -0 tie, NaN entries skipped
 * unless the first); a row whose maximum is NaN, infinite or zero (armv7: also a denormal maximum, which
 * vmax flushes to zero) is left to softmax_c. Then every valid x = s_j - mn is <= 0 and not NaN, so
 * exp4 is exp_lane; masked keys (a partial row: copied with -inf there) get 0 after the exp. armv7: a
 * denormal s_j or mn only changes an x of magnitude below 2^-99, whose exp is 1 either way. The weights
 * are summed in softmax_c's 8-lane order (lanes k and k + 4 of its 8 are lanes k of the vectors of keys
 * 0-3, 8-11, 16-19, 24-27 and of 4-7, 12-15, 20-23, 28-31), c, l and m in scalar code as there. */
static void softmax_neon(float *FG_RESTRICT s, size_t R, const uint32_t *FG_RESTRICT j0, const uint32_t *FG_RESTRICT j1,
                         float *FG_RESTRICT m, float *FG_RESTRICT l, float *FG_RESTRICT c) {
  for (size_t r = 0; r < R; r++) {
    float *sr = s + r * FG_ATTN_BLK; /* (FG_ATTN_BLK) */
    const uint32_t a = j0[r], b = j1[r];
    if (a >= b) {
      c[r] = 1.0f;
      memset(sr, 0, FG_ATTN_BLK * sizeof(float));
      continue;
    }
    float t[FG_ATTN_BLK] __attribute__((aligned(16)));    /* a partial row: -inf outside [a, b) */
    uint32_t k[FG_ATTN_BLK] __attribute__((aligned(16))); /* and its mask of valid keys */
    const int part = a > 0 || b < FG_ATTN_BLK;
    const float *src = sr;
    if (part) {
      for (uint32_t j = 0; j < FG_ATTN_BLK; j++) {
        const int in = j >= a && j < b;
        t[j] = in ? sr[j] : -INFINITY;
        k[j] = in ? UINT32_MAX : 0;
      }
      src = t;
    }
    float32x4_t v0 = vld1q_f32(src), v1 = vld1q_f32(src + 4), v2 = vld1q_f32(src + 8), v3 = vld1q_f32(src + 12);
    float32x4_t v4 = vld1q_f32(src + 16), v5 = vld1q_f32(src + 20), v6 = vld1q_f32(src + 24), v7 = vld1q_f32(src + 28);
    const float32x4_t mq = vmaxq_f32(vmaxq_f32(vmaxq_f32(v0, v1), vmaxq_f32(v2, v3)), vmaxq_f32(vmaxq_f32(v4, v5), vmaxq_f32(v6, v7)));
    float32x2_t m2 = vpmax_f32(vget_low_f32(mq), vget_high_f32(mq));
    m2 = vpmax_f32(m2, m2);
    const float mx = vget_lane_f32(m2, 0);
    if (!(mx != 0.0f && mx - mx == 0.0f)) { /* NaN, infinite or zero */
      fg_attn_ref()->softmax(sr, 1, j0 + r, j1 + r, m + r, l + r, c + r);
      continue;
    }
    const float mn = m[r] > mx ? m[r] : mx;
    const float32x4_t vb = vdupq_n_f32(mn);
#  define SM_EXP(i) v##i = exp4(vsubq_f32(v##i, vb), 1);
    SM_EXP(0) SM_EXP(1) SM_EXP(2) SM_EXP(3) SM_EXP(4) SM_EXP(5) SM_EXP(6) SM_EXP(7)
#  undef SM_EXP
    if (part) {
#  define SM_MASK(i) v##i = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v##i), vld1q_u32(k + 4 * (i))));
      SM_MASK(0) SM_MASK(1) SM_MASK(2) SM_MASK(3) SM_MASK(4) SM_MASK(5) SM_MASK(6) SM_MASK(7)
#  undef SM_MASK
    }
    vst1q_f32(sr, v0), vst1q_f32(sr + 4, v1), vst1q_f32(sr + 8, v2), vst1q_f32(sr + 12, v3);
    vst1q_f32(sr + 16, v4), vst1q_f32(sr + 20, v5), vst1q_f32(sr + 24, v6), vst1q_f32(sr + 28, v7);
    const float32x4_t lo = vaddq_f32(vaddq_f32(vaddq_f32(v0, v2), v4), v6); /* softmax_c's lanes 0..3 */
    const float32x4_t hi = vaddq_f32(vaddq_f32(vaddq_f32(v1, v3), v5), v7); /* and 4..7 */
    const float32x4_t u = vaddq_f32(lo, hi);                                 /* lanes k + (k + 4) */
    const float32x2_t w = vadd_f32(vget_low_f32(u), vget_high_f32(u));      /* (0+4) + (2+6), (1+5) + (3+7) */
    const float sum = vget_lane_f32(w, 0) + vget_lane_f32(w, 1);
    const float cr = m[r] == -INFINITY ? 0.0f : fg_attn_exp1(m[r] - mn);
    const float lc = l[r] * cr; /* a rounded product, then a rounded sum */
    c[r] = cr;
    l[r] = lc + sum;
    m[r] = mn;
  }
}

/* fold_c, 4 lanes: o = fma(c2, x, o c1). armv7, 16 values at a time, stored only where every o, x and
 * result is a normal number (the exponent field neither 0 nor 255: checked as (bits << 1) - 2^24 below
 * 254 * 2^24, unsigned, the lanes' maximum), and c1, c2 are too: then no operand, product or result is
 * flushed and NaN payloads cannot differ; other values (zeros included) are done by fold_c's code. */
static void fold_neon(float *FG_RESTRICT o, float c1, const float *FG_RESTRICT x, float c2, size_t n) {
  const float32x4_t vc1 = vdupq_n_f32(c1), vc2 = vdupq_n_f32(c2);
  size_t i = 0;
#  if defined(__aarch64__)
  for (; i + 4 <= n; i += 4) vst1q_f32(o + i, vfmaq_f32(vmulq_f32(vld1q_f32(o + i), vc1), vc2, vld1q_f32(x + i)));
#  else
  uint32_t cb1, cb2;
  memcpy(&cb1, &c1, 4);
  memcpy(&cb2, &c2, 4);
  const uint32x4_t lo = vdupq_n_u32(1u << 24);
  if ((cb1 << 1) - (1u << 24) < 254u << 24 && (cb2 << 1) - (1u << 24) < 254u << 24)
    for (; i + 16 <= n; i += 16) {
      float32x4_t r[4];
      uint32x4_t mx = vdupq_n_u32(0);
      for (int q = 0; q < 4; q++) {
        const float32x4_t ov = vld1q_f32(o + i + 4 * q), xv = vld1q_f32(x + i + 4 * q);
        r[q] = vfmaq_f32(vmulq_f32(ov, vc1), vc2, xv);
        mx = vmaxq_u32(mx, vsubq_u32(vshlq_n_u32(vreinterpretq_u32_f32(ov), 1), lo));
        mx = vmaxq_u32(mx, vsubq_u32(vshlq_n_u32(vreinterpretq_u32_f32(xv), 1), lo));
        mx = vmaxq_u32(mx, vsubq_u32(vshlq_n_u32(vreinterpretq_u32_f32(r[q]), 1), lo));
      }
      uint32x2_t m2 = vpmax_u32(vget_low_u32(mx), vget_high_u32(mx));
      m2 = vpmax_u32(m2, m2);
      if (vget_lane_u32(m2, 0) >= 254u << 24) break; /* from here fold_c's code */
      for (int q = 0; q < 4; q++) vst1q_f32(o + i + 4 * q, r[q]);
    }
#  endif
  if (i < n) fg_attn_ref()->fold(o + i, c1, x + i, c2, n - i);
}

#  if defined(__aarch64__)
/* gelu_mul_c, 4 lanes: x / (1 + exp(-2 K x (1 + A x^2))) * up, the same operations in the same order */
static void gelu_mul_neon(float *FG_RESTRICT g, const float *FG_RESTRICT up, size_t n) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t x = vld1q_f32(g + i);
    const float32x4_t u =
        vmulq_f32(vmulq_n_f32(x, FG_GELU_K), vfmaq_f32(vdupq_n_f32(1.0f), vdupq_n_f32(FG_GELU_A), vmulq_f32(x, x)));
    const float32x4_t e = exp4(vmulq_n_f32(u, -2.0f), 0);
    vst1q_f32(g + i, vmulq_f32(vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), e)), vld1q_f32(up + i)));
  }
  if (i < n) fg_attn_ref()->gelu_mul(g + i, up + i, n - i);
}

#  else
/* armv7: gelu_mul_c with its exp in NEON (exp4, bit for bit) and the division and the product by up in
 * scalar VFP code (IEEE; AArch32 NEON has no division), 16 at a time. The NEON u = (K x) (1 + A x^2) is
 * gelu_mul_c's except where K x is denormal (|x| < 2^-126 / K): flushed, u = 0 and exp(-0) = 1, where the
 * scalar code's exp of a denormal -2u is 1 too; 1 + A x^2 >= 1, so u is never denormal otherwise, and
 * 1 + exp(..) >= 1. NaN and infinite x take the clamp as in exp_lane. */
static void gelu_mul_neon(float *FG_RESTRICT g, const float *FG_RESTRICT up, size_t n) {
  float d[16] __attribute__((aligned(16))); /* 1 + exp(-2u) of 16 values */
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
#    pragma GCC unroll 1
    for (int q = 0; q < 4; q++) { /* one vector at a time: unrolled, GCC spilled the exp's constants */
      const float32x4_t x = vld1q_f32(g + i + 4 * q);
      const float32x4_t u =
          vmulq_f32(vmulq_n_f32(x, FG_GELU_K), vfmaq_f32(vdupq_n_f32(1.0f), vdupq_n_f32(FG_GELU_A), vmulq_f32(x, x)));
      vst1q_f32(d + 4 * q, vaddq_f32(vdupq_n_f32(1.0f), exp4(vmulq_n_f32(u, -2.0f), 0)));
    }
    for (int j = 0; j < 16; j++) g[i + j] = g[i + j] / d[j] * up[i + j];
  }
  if (i < n) fg_attn_ref()->gelu_mul(g + i, up + i, n - i);
}
#  endif

#  if defined(__aarch64__)
/* Two passes: the largest non-NaN value (FMAXNM ignores a NaN beside a number; the lanes start at -inf),
 * then the first entry equal to it, 16 at a time. Both are the C scan's answer: it keeps the first of
 * the entries that equal the maximum, and +0 == -0. */
static size_t argmax_neon(const float *x, size_t n) {
  float32x4_t m0 = vdupq_n_f32(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const float32x4x4_t v = vld1q_f32_x4(x + i);
    m0 = vmaxnmq_f32(m0, v.val[0]);
    m1 = vmaxnmq_f32(m1, v.val[1]);
    m2 = vmaxnmq_f32(m2, v.val[2]);
    m3 = vmaxnmq_f32(m3, v.val[3]);
  }
  float m = vmaxnmvq_f32(vmaxnmq_f32(vmaxnmq_f32(m0, m1), vmaxnmq_f32(m2, m3)));
  for (; i < n; i++)
    if (x[i] > m) m = x[i];
  const float32x4_t mv = vdupq_n_f32(m);
  for (i = 0; i + 16 <= n; i += 16) {
    const float32x4x4_t v = vld1q_f32_x4(x + i);
    const uint32x4_t eq = vorrq_u32(vorrq_u32(vceqq_f32(v.val[0], mv), vceqq_f32(v.val[1], mv)),
                                    vorrq_u32(vceqq_f32(v.val[2], mv), vceqq_f32(v.val[3], mv)));
    if (vmaxvq_u32(eq)) break;
  }
  for (; i < n; i++)
    if (x[i] == m) return i;
  return SIZE_MAX; /* every entry NaN: m stayed -inf and nothing equals it */
}

#  endif /* __aarch64__ */

static fg_attn_kernels g_neon_attn;
static pthread_once_t g_neon_attn_once = PTHREAD_ONCE_INIT;

static void neon_attn_init(void) {
  g_neon_attn = *fg_attn_ref();
  g_neon_attn.name = "neon";
  g_neon_attn.qk = qk_neon;
  g_neon_attn.pv = pv_neon;
  g_neon_attn.lora_bt = fg_lora_bt_neon;
  g_neon_attn.softmax = softmax_neon;
  g_neon_attn.fold = fold_neon;
  g_neon_attn.gelu_mul = gelu_mul_neon;
#  if defined(__aarch64__)
  g_neon_attn.argmax = argmax_neon;
#  endif
}

const fg_attn_kernels *fg_attn_neon(void) {
  pthread_once(&g_neon_attn_once, neon_attn_init);
  return &g_neon_attn;
}
#else
const fg_attn_kernels *fg_attn_neon(void) { return NULL; }
#endif
