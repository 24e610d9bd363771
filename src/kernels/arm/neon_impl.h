/* neon_impl.h — the NEON kernel table, one source for armv7 (AArch32) and aarch64, with and without
 * the dot-product extension. Included by neon_kernels.c (table "neon"), neon_dotprod_kernels.c (table
 * "neon_dotprod", built with +dotprod) and on aarch64 neon_i8mm_kernels.c (table "neon_i8mm", built
 * with +dotprod+i8mm); FG_NEON_TABLE and FG_NEON_TABLE_NAME name the result. Only the int8 products
 * differ between them (neon_i8mm: the packed Q8_0 layout and its kernels).
 *
 * Same specs as the x86 tables (kernels.h), bit for bit:
 *  - F32/F16/BF16 (fma spec): the 16 strided column lanes of the spec are four float32x4 (columns
 *    j..j+3, .., j+12..j+15); R rows × B activations of accumulators; the halving tree finishes each
 *    output. Weights are widened to f32 (F16 by the hardware conversion, BF16 by a shift).
 *  - Q8_0/Q4_0 (q8 spec): activations quantized by the spec's code (aarch64: its operations in NEON); per 32-block, four rows' exact
 *    int8 dots are reduced into the lanes of one int32x4 (lane r = row r), converted, scaled by
 *    dw_r * dx and accumulated with one fused multiply-add in block order.
 *
 * armv7: AArch32 NEON flushes denormal inputs and results to zero (neon_compat.h). A fused
 * multiply-add chain is still exact when every nonzero operand has |v| >= 2^-40: each value is then a
 * multiple of 2^-63, every product and (rounded) partial sum a multiple of 2^-126, so no result can be
 * a nonzero denormal and nothing is flushed. The armv7 kernels check that condition (activation rows
 * and Q8 scales once per call in act_prep, F32/BF16 weights as they stream; F16 weights and Q8_0/Q4_0
 * block scales always meet it) and compute any output that fails it with the plain-C spec (scalar VFP
 * is IEEE). Real model data never gets near 2^-40; the tests' denormal cases do. */
#ifndef FG_NEON_IMPL_H
#define FG_NEON_IMPL_H

#include "kernels/kernels.h"
#include "kernels/arm/neon.h"
#include "kernels/arm/neon_compat.h"

#include <string.h>

#if !FG_NEON_A64 && !defined(__ARM_FP16_FORMAT_IEEE)
#  error "armv7 NEON kernels need the IEEE half-precision format (GCC: -mfp16-format=ieee, set in CMakeLists.txt)"
#endif

#define FG_Q_ROWS 4                    /* rows per int8 tile: one int32x4 of row sums */
#define FG_F_RMAX 4
#define FG_F_BMAX 2
#if FG_NEON_A64
#  define FG_F_VEC_ROWS 4              /* 16 accumulators + 8 operands of 32 registers */
#else
#  define FG_F_VEC_ROWS 2              /* armv7 has 16 q registers */
#endif
#define FG_TINY_BITS 0x2B800000u       /* 2^-40 as f32 bits: the armv7 exactness threshold */

// ----------------------------------------------------------------------------
// helpers

/* Row pointers of one tile; slots past n repeat the first row (computed, never stored). */
FG_NEON_INLINE void fg_tile_rows(const fg_mm_args *a, size_t i0, size_t n, size_t cap, const uint8_t **rp) {
  for (size_t r = 0; r < cap; r++) {
    const size_t i = i0 + (r < n ? r : 0);
    const size_t row = a->rows ? (size_t)a->rows[i] : i;
    rp[r] = a->w + row * a->row_bytes;
  }
}

/* lanes with 0 < |v| < 2^-40 (f32 bits; sign ignored): all ones */
FG_NEON_INLINE uint32x4_t fg_tiny_u32(uint32x4_t bits) {
  return vcltq_u32(vsubq_u32(vshlq_n_u32(bits, 1), vdupq_n_u32(1)), vdupq_n_u32(2 * FG_TINY_BITS - 1));
}

FG_NEON_INLINE int fg_any_u32(uint32x4_t m) {
  const uint32x2_t o = vorr_u32(vget_low_u32(m), vget_high_u32(m));
  return (vget_lane_u32(o, 0) | vget_lane_u32(o, 1)) != 0;
}

#if FG_NEON_FTZ
/* 1 if every element of x[0..n) is 0, inf/NaN or has |x| >= 2^-40 (see the file comment) */
static int fg_f32_row_safe(const float *x, size_t n) {
  uint32x4_t m = vdupq_n_u32(0);
  size_t j = 0;
  for (; j + 4 <= n; j += 4) m = vorrq_u32(m, fg_tiny_u32(vreinterpretq_u32_u8(vld1q_u8((const uint8_t *)(x + j)))));
  int bad = fg_any_u32(m);
  for (; j < n; j++) {
    uint32_t b;
    memcpy(&b, x + j, 4);
    b &= 0x7fffffffu;
    bad |= b != 0 && b < FG_TINY_BITS;
  }
  return !bad;
}
#endif

// ----------------------------------------------------------------------------
// F32 / F16 / BF16 (fma spec)

enum { FG_K_F32 = 0, FG_K_F16 = 1, FG_K_BF16 = 2 };

/* 16 weights from column j of a row as f32 (nc < 16: zero padded, nothing read past the row).
 * *tiny collects weights below the armv7 threshold (F32/BF16; F16 values are never that small). */
FG_NEON_INLINE void fg_w16(const uint8_t *row, size_t j, size_t nc, const int kind, float32x4_t w[4], uint32x4_t *tiny) {
  const size_t es = kind == FG_K_F32 ? 4 : 2;
  uint8_t tmp[64];
  const uint8_t *p = row + j * es;
  if (nc < 16) {
    memset(tmp, 0, sizeof tmp);
    memcpy(tmp, p, nc * es);
    p = tmp;
  }
  if (kind == FG_K_F32) {
    for (int i = 0; i < 4; i++) {
      const uint32x4_t u = vreinterpretq_u32_u8(vld1q_u8(p + 16 * i));
      if (FG_NEON_FTZ) *tiny = vorrq_u32(*tiny, fg_tiny_u32(u));
      w[i] = vreinterpretq_f32_u32(u);
    }
    return;
  }
  const uint16x8_t h0 = vreinterpretq_u16_u8(vld1q_u8(p)), h1 = vreinterpretq_u16_u8(vld1q_u8(p + 16));
  if (kind == FG_K_F16) {
    w[0] = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h0)));
    w[1] = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h0)));
    w[2] = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h1)));
    w[3] = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h1)));
    return;
  }
  const uint32x4_t u0 = vshll_n_u16(vget_low_u16(h0), 16), u1 = vshll_n_u16(vget_high_u16(h0), 16);
  const uint32x4_t u2 = vshll_n_u16(vget_low_u16(h1), 16), u3 = vshll_n_u16(vget_high_u16(h1), 16);
  if (FG_NEON_FTZ)
    *tiny = vorrq_u32(*tiny, vorrq_u32(vorrq_u32(fg_tiny_u32(u0), fg_tiny_u32(u1)), vorrq_u32(fg_tiny_u32(u2), fg_tiny_u32(u3))));
  w[0] = vreinterpretq_f32_u32(u0);
  w[1] = vreinterpretq_f32_u32(u1);
  w[2] = vreinterpretq_f32_u32(u2);
  w[3] = vreinterpretq_f32_u32(u3);
}

FG_NEON_INLINE void fg_x16(const float *x, size_t nc, float32x4_t xv[4]) {
  float tmp[16];
  if (nc < 16) {
    memset(tmp, 0, sizeof tmp);
    memcpy(tmp, x, nc * sizeof(float));
    x = tmp;
  }
  for (int i = 0; i < 4; i++) xv[i] = vreinterpretq_f32_u8(vld1q_u8((const uint8_t *)(x + 4 * i)));
}

/* the spec's halving tree: lanes l + 8, l + 4, l + 2, l + 1 */
FG_NEON_INLINE float fg_fold16(const float32x4_t s[4]) {
  const float32x4_t t = vaddq_f32(vaddq_f32(s[0], s[2]), vaddq_f32(s[1], s[3]));
  const float32x2_t u = vadd_f32(vget_low_f32(t), vget_high_f32(t));
  return vget_lane_f32(vpadd_f32(u, u), 0);
}

static const uint32_t k_fg_type_of_kind[3] = {FG_TYPE_F32, FG_TYPE_F16, FG_TYPE_BF16};

/* Outputs t0 .. t0+nr of activations b0 .. b0+B (R >= nr rows in rp). xsafe: per-activation armv7 flags. */
FG_NEON_INLINE void fg_ftile(const fg_mm_args *a, const uint8_t *const *rp, size_t t0, size_t nr, size_t b0, const int R,
                             const int B, const int kind, const uint32_t *xsafe) {
  const size_t cols = a->cols;
  float32x4_t acc[FG_F_RMAX][FG_F_BMAX][4];
  const float *xf[FG_F_BMAX];
  uint32x4_t tiny = vdupq_n_u32(0);
  for (int b = 0; b < B; b++) {
    xf[b] = a->x + (b0 + (size_t)b) * a->ldx;
    for (int r = 0; r < R; r++)
      for (int i = 0; i < 4; i++) acc[r][b][i] = vdupq_n_f32(0.0f);
  }
  for (size_t j = 0; j < cols; j += 16) {
    const size_t nc = FG_MIN((size_t)16, cols - j);
    float32x4_t xv[FG_F_BMAX][4];
    for (int b = 0; b < B; b++) fg_x16(xf[b] + j, nc, xv[b]);
    for (int r = 0; r < R; r++) {
      float32x4_t w[4];
      fg_w16(rp[r], j, nc, kind, w, &tiny);
      for (int b = 0; b < B; b++)
        for (int i = 0; i < 4; i++) acc[r][b][i] = vfmaq_f32(acc[r][b][i], w[i], xv[b][i]);
    }
  }
  const int wtiny = FG_NEON_FTZ && fg_any_u32(tiny);
  for (int b = 0; b < B; b++) {
    float *y = a->y + (b0 + (size_t)b) * a->ldy + t0;
    const int exact = !FG_NEON_FTZ || (!wtiny && xsafe[b0 + (size_t)b]);
    for (size_t r = 0; r < nr; r++)
      y[r] = exact ? fg_fold16(acc[r][b]) : fg_spec_dot_fma(k_fg_type_of_kind[kind], rp[r], xf[b], cols);
  }
}

FG_NEON_INLINE void fg_frun(const fg_mm_args *a, size_t i0, size_t i1, const int kind, const int R, const int B) {
  const uint32_t *xsafe = a->act; /* (nb) armv7 only */
  for (size_t t0 = i0; t0 < i1; t0 += (size_t)R) {
    const size_t nr = FG_MIN((size_t)R, i1 - t0);
    const uint8_t *rp[FG_F_RMAX];
    fg_tile_rows(a, t0, nr, (size_t)R, rp);
    size_t b = 0;
    for (; b + (size_t)B <= a->nb; b += (size_t)B) fg_ftile(a, rp, t0, nr, b, R, B, kind, xsafe);
    for (; b < a->nb; b++) fg_ftile(a, rp, t0, nr, b, R, 1, kind, xsafe);
  }
}

#if FG_NEON_FTZ
/* armv7: one flag per activation row (FG_F_* kernels read x itself) */
static size_t fg_f_flags_size(size_t cols, size_t nb) {
  (void)cols;
  return nb > SIZE_MAX / sizeof(uint32_t) - 64 ? SIZE_MAX : nb * sizeof(uint32_t);
}
static void fg_f_flags_prep(const float *x, size_t ldx, size_t cols, size_t nb, size_t b0, size_t b1, void *act) {
  (void)nb;
  uint32_t *safe = act; /* (nb) */
  for (size_t b = b0; b < b1; b++) safe[b] = (uint32_t)fg_f32_row_safe(x + b * ldx, cols);
}
#  define FG_F_ACT fg_f_flags_size, fg_f_flags_prep
#else
#  define FG_F_ACT NULL, NULL
#endif

static void fg_f32_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, FG_K_F32, FG_F_VEC_ROWS, 1); }
static void fg_f16_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, FG_K_F16, FG_F_VEC_ROWS, 1); }
static void fg_bf16_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, FG_K_BF16, FG_F_VEC_ROWS, 1); }
static void fg_f32_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, FG_K_F32, 2, 2); }
static void fg_f16_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, FG_K_F16, 2, 2); }
static void fg_bf16_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, FG_K_BF16, 2, 2); }

// ----------------------------------------------------------------------------
// Q8 activations: nb rows of fg_act_q8_row_bytes(cols) (the spec's quantization: its own code on armv7,
// the same operations in NEON on aarch64), then one uint32 per row: 1 if every block scale is 0 or
// >= 2^-40 (armv7 exactness)

static size_t fg_q8_rows_size(size_t cols, size_t nb) {
  uint64_t n;
  if (!fg_mul_u64(fg_act_q8_row_bytes(cols) + sizeof(uint32_t), nb, &n) || n > SIZE_MAX - 64) return SIZE_MAX;
  return (size_t)n;
}

FG_NEON_INLINE uint32_t *fg_q8_flags(const void *act, size_t cols, size_t nb) {
  return (uint32_t *)(void *)((uint8_t *)(uintptr_t)act + nb * fg_act_q8_row_bytes(cols));
}

#if FG_NEON_A64
/* fg_spec_quantize_act_q8 with 4 lanes, the same operations: amax by FMAXNM over |x| from 0 (a NaN is
 * passed over, as fmaxf does), the scalar scale, x * id clamped by compare-and-select (a NaN becomes
 * -127), FCVTNS (round to nearest even, as rintf), the exact integer sum. */
/* t >= -127 ? t : -127 (a NaN becomes -127), then t <= 127 ? t : 127 */
FG_NEON_INLINE float32x4_t fg_q8_clamp(float32x4_t t, float32x4_t lo, float32x4_t hi) {
  t = vbslq_f32(vcgeq_f32(t, lo), t, lo);
  return vbslq_f32(vcleq_f32(t, hi), t, hi);
}

static void fg_q8_quantize_a64(const float *FG_RESTRICT x, size_t cols, fg_act_q8_row out) {
  const float32x4_t lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f);
  for (size_t k = 0; k < cols / 32; k++) {
    const float *xb = x + k * 32;
    const float32x4x4_t va = vld1q_f32_x4(xb), vb = vld1q_f32_x4(xb + 16);
    float32x4_t m = vmaxnmq_f32(vdupq_n_f32(0.0f), vabsq_f32(va.val[0]));
    m = vmaxnmq_f32(m, vabsq_f32(va.val[1]));
    m = vmaxnmq_f32(m, vabsq_f32(va.val[2]));
    m = vmaxnmq_f32(m, vabsq_f32(va.val[3]));
    m = vmaxnmq_f32(m, vabsq_f32(vb.val[0]));
    m = vmaxnmq_f32(m, vabsq_f32(vb.val[1]));
    m = vmaxnmq_f32(m, vabsq_f32(vb.val[2]));
    m = vmaxnmq_f32(m, vabsq_f32(vb.val[3]));
    const float amax = vmaxnmvq_f32(m);
    const float d = amax >= FG_ACT_Q8_MIN_AMAX ? amax / 127.0f : 0.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    /* named values, not arrays: GCC at -O2 kept arrays of vectors on the stack */
    const float32x4_t idv = vdupq_n_f32(id);
#  define FG_Q8Q(v) vcvtnq_s32_f32(fg_q8_clamp(vmulq_f32((v), idv), lo, hi))
    const int32x4_t q0 = FG_Q8Q(va.val[0]), q1 = FG_Q8Q(va.val[1]), q2 = FG_Q8Q(va.val[2]), q3 = FG_Q8Q(va.val[3]);
    const int32x4_t q4 = FG_Q8Q(vb.val[0]), q5 = FG_Q8Q(vb.val[1]), q6 = FG_Q8Q(vb.val[2]), q7 = FG_Q8Q(vb.val[3]);
#  undef FG_Q8Q
    const int16x8_t h0 = vcombine_s16(vmovn_s32(q0), vmovn_s32(q1)), h1 = vcombine_s16(vmovn_s32(q2), vmovn_s32(q3));
    const int16x8_t h2 = vcombine_s16(vmovn_s32(q4), vmovn_s32(q5)), h3 = vcombine_s16(vmovn_s32(q6), vmovn_s32(q7));
    vst1q_s8(out.qs + k * 32, vcombine_s8(vmovn_s16(h0), vmovn_s16(h1)));
    vst1q_s8(out.qs + k * 32 + 16, vcombine_s8(vmovn_s16(h2), vmovn_s16(h3)));
    const int32x4_t sum = vaddq_s32(vaddq_s32(vaddq_s32(q0, q1), vaddq_s32(q2, q3)), vaddq_s32(vaddq_s32(q4, q5), vaddq_s32(q6, q7)));
    out.d[k] = d;
    out.isum[k] = vaddvq_s32(sum);
  }
}
#  define fg_q8_quantize fg_q8_quantize_a64
#else
#  define fg_q8_quantize fg_spec_quantize_act_q8
#endif

static void fg_q8_rows_prep(const float *x, size_t ldx, size_t cols, size_t nb, size_t b0, size_t b1, void *act) {
  const size_t stride = fg_act_q8_row_bytes(cols);
  uint32_t *safe = fg_q8_flags(act, cols, nb); /* (nb) */
  for (size_t b = b0; b < b1; b++) {
    const fg_act_q8_row r = fg_act_q8_row_at((uint8_t *)act + b * stride, cols);
    fg_q8_quantize(x + b * ldx, cols, r);
    uint32_t ok = 1;
    if (FG_NEON_FTZ)
      for (size_t k = 0; k < cols / 32; k++) {
        uint32_t bits;
        memcpy(&bits, &r.d[k], 4);
        ok &= bits == 0 || bits >= FG_TINY_BITS; /* d >= 0 */
      }
    safe[b] = ok;
  }
}

// ----------------------------------------------------------------------------
// Q8_0 / Q4_0: tiles of 4 outputs (4 rows x 1 activation, or 2 rows x 2 activations on armv7), whose
// four exact block dots are reduced into the lanes of one int32x4; B such quads share each loaded
// weight block (aarch64 gemm: 4 rows x 2 activations). Every output lane then gets its spec fma:
// fma(dw * dx, (float)isum, acc) in block order. The weight pointers walk the rows block by block.

/* 32 int8 weights or activations of a block as two vectors. Q8_0 on armv7 loads them de-interleaved
 * (one vld2: even bytes, odd bytes): the same permutation for weights and activations leaves every
 * block dot unchanged and saves an instruction. */
#if FG_NEON_A64
#  define FG_Q8_DEINTERLEAVE 0
#else
#  define FG_Q8_DEINTERLEAVE 1
#endif
FG_NEON_INLINE void fg_ld32(const int8_t *p, const int deint, int8x16_t *v0, int8x16_t *v1) {
  if (deint) {
    const int8x16x2_t v = vld2q_s8(p);
    *v0 = v.val[0];
    *v1 = v.val[1];
  } else {
#if FG_NEON_A64
    const int8x16x2_t v = vld1q_s8_x2(p); /* one LD1 of two registers */
    *v0 = v.val[0];
    *v1 = v.val[1];
#else
    *v0 = vld1q_s8(p);
    *v1 = vld1q_s8(p + 16);
#endif
  }
}

/* the block's 32 int8 weights; q points just past its 2-byte scale */
FG_NEON_INLINE void fg_wq(const uint8_t *q, const int is_q4, int8x16_t *w0, int8x16_t *w1) {
  if (is_q4) {
    const uint8x16_t v = vld1q_u8(q);
    const int8x16_t eight = vdupq_n_s8(8);
    *w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0f))), eight);
    *w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), eight);
  } else {
    fg_ld32((const int8_t *)q, FG_Q8_DEINTERLEAVE, w0, w1);
  }
}

/* Row r's next block: its f16 scale into lane L of h, its weights into w0/w1; p advances one block
 * (two increments that match the loads, so armv7 can use post-incrementing loads). */
#define FG_NEXT_BLOCK(p, h, L, is_q4, w0, w1)                                    \
  do {                                                                           \
    (h) = vld1_lane_u16((const uint16_t *)(const void *)(p), (h), (L));          \
    (p) += 2;                                                                    \
    fg_wq((p), (is_q4), (w0), (w1));                                             \
    (p) += (is_q4) ? 16 : 32;                                                    \
  } while (0)

/* the exact int8 dot of one weight block and one activation block, spread over the lanes (only the
 * lane total is meaningful); activations are in -127..127 */
FG_NEON_INLINE int32x4_t fg_qdot(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
#if FG_NEON_HAVE_DOTPROD
  return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
#else
  int16x8_t p = vmull_s8(vget_low_s8(w0), vget_low_s8(x0));
  p = vmlal_s8(p, vget_high_s8(w0), vget_high_s8(x0));
  int16x8_t q = vmull_s8(vget_low_s8(w1), vget_low_s8(x1));
  q = vmlal_s8(q, vget_high_s8(w1), vget_high_s8(x1));
  return vpadalq_s16(vpaddlq_s16(p), q);
#endif
}

FG_NEON_INLINE void fg_store4(float *y, size_t n, float32x4_t v) {
  if (n >= 4) {
    vst1q_u8((uint8_t *)y, vreinterpretq_u8_f32(v));
    return;
  }
  float tmp[4];
  vst1q_f32(tmp, v);
  for (size_t i = 0; i < n; i++) y[i] = tmp[i];
}

#if !FG_NEON_A64
/* armv7 Q8_0, 4 rows x 1 activation (every decode matmul and the LM head): the block loop in
 * assembly, because GCC spills and recomputes the row pointers here. Per block: the four rows' f16
 * scales go into lanes of d1 and their 32 weights (de-interleaved, vld2) into q10-q13, all with
 * post-incrementing loads; the activation block likewise (q2, q3) and its scale into s0. Then the
 * four exact block dots are reduced into the lanes of q14 (lane r = row r) and, as in fg_qtile4,
 * acc = fma(dw * dx, (float)isum, acc) (q9). Dot-product table: VSDOT into running sums q4-q7, the
 * block's dots being the difference of two reductions; plain table: VMULL/VMLAL 16-bit products (two
 * per lane, exact: activations are in -127..127) widened by VPADDL/VPADAL. Writes acc to out[0..3]. */
static void fg_q8_vec4_a32(const uint8_t *p0, const uint8_t *p1, const uint8_t *p2, const uint8_t *p3,
                           const int8_t *xq, const float *xd, size_t nblk, float *out) {
  if (nblk == 0) {
    vst1q_f32(out, vdupq_n_f32(0.0f));
    return;
  }
  __asm__ volatile(
      "vmov.i32 q9, #0\n\t"
#  if FG_NEON_HAVE_DOTPROD
      "vmov.i32 q4, #0\n\t"
      "vmov.i32 q5, #0\n\t"
      "vmov.i32 q6, #0\n\t"
      "vmov.i32 q7, #0\n\t"
      "vmov.i32 q8, #0\n\t"
      "1:\n\t"
      "vld1.16 {d1[0]}, [%[p0]]!\n\t"
      "vld2.8 {d20-d23}, [%[p0]]!\n\t"
      "vld1.16 {d1[1]}, [%[p1]]!\n\t"
      "vld2.8 {d24-d27}, [%[p1]]!\n\t"
      "vld2.8 {d4-d7}, [%[xq]]!\n\t"
      "vsdot.s8 q4, q10, q2\n\t"
      "vsdot.s8 q4, q11, q3\n\t"
      "vld1.16 {d1[2]}, [%[p2]]!\n\t"
      "vld2.8 {d20-d23}, [%[p2]]!\n\t"
      "vsdot.s8 q5, q12, q2\n\t"
      "vsdot.s8 q5, q13, q3\n\t"
      "vld1.16 {d1[3]}, [%[p3]]!\n\t"
      "vld2.8 {d24-d27}, [%[p3]]!\n\t"
      "vsdot.s8 q6, q10, q2\n\t"
      "vsdot.s8 q6, q11, q3\n\t"
      "vsdot.s8 q7, q12, q2\n\t"
      "vsdot.s8 q7, q13, q3\n\t"
      "vld1.32 {d0[0]}, [%[xd]]!\n\t"
      "vpadd.i32 d28, d8, d9\n\t"
      "vpadd.i32 d29, d10, d11\n\t"
      "vpadd.i32 d30, d12, d13\n\t"
      "vpadd.i32 d31, d14, d15\n\t"
      "vpadd.i32 d28, d28, d29\n\t"
      "vpadd.i32 d29, d30, d31\n\t"
      "vsub.i32 q15, q14, q8\n\t"
      "vmov q8, q14\n\t"
#  else
      "1:\n\t"
      "vld2.8 {d4-d7}, [%[xq]]!\n\t"
      "vld1.16 {d1[0]}, [%[p0]]!\n\t"
      "vld2.8 {d20-d23}, [%[p0]]!\n\t"
      "vmull.s8 q12, d20, d4\n\t"
      "vmlal.s8 q12, d21, d5\n\t"
      "vmull.s8 q13, d22, d6\n\t"
      "vmlal.s8 q13, d23, d7\n\t"
      "vld1.16 {d1[1]}, [%[p1]]!\n\t"
      "vld2.8 {d20-d23}, [%[p1]]!\n\t"
      "vpaddl.s16 q4, q12\n\t"
      "vpadal.s16 q4, q13\n\t"
      "vmull.s8 q12, d20, d4\n\t"
      "vmlal.s8 q12, d21, d5\n\t"
      "vmull.s8 q13, d22, d6\n\t"
      "vmlal.s8 q13, d23, d7\n\t"
      "vld1.16 {d1[2]}, [%[p2]]!\n\t"
      "vld2.8 {d20-d23}, [%[p2]]!\n\t"
      "vpaddl.s16 q5, q12\n\t"
      "vpadal.s16 q5, q13\n\t"
      "vmull.s8 q12, d20, d4\n\t"
      "vmlal.s8 q12, d21, d5\n\t"
      "vmull.s8 q13, d22, d6\n\t"
      "vmlal.s8 q13, d23, d7\n\t"
      "vld1.16 {d1[3]}, [%[p3]]!\n\t"
      "vld2.8 {d20-d23}, [%[p3]]!\n\t"
      "vpaddl.s16 q6, q12\n\t"
      "vpadal.s16 q6, q13\n\t"
      "vmull.s8 q12, d20, d4\n\t"
      "vmlal.s8 q12, d21, d5\n\t"
      "vmull.s8 q13, d22, d6\n\t"
      "vmlal.s8 q13, d23, d7\n\t"
      "vld1.32 {d0[0]}, [%[xd]]!\n\t"
      "vpaddl.s16 q7, q12\n\t"
      "vpadal.s16 q7, q13\n\t"
      "vpadd.i32 d28, d8, d9\n\t"
      "vpadd.i32 d29, d10, d11\n\t"
      "vpadd.i32 d26, d12, d13\n\t"
      "vpadd.i32 d27, d14, d15\n\t"
      "vpadd.i32 d30, d28, d29\n\t"
      "vpadd.i32 d31, d26, d27\n\t"
#  endif
      "vcvt.f32.f16 q1, d1\n\t"
      "vcvt.f32.s32 q15, q15\n\t"
      "vmul.f32 q1, q1, d0[0]\n\t"
      "vfma.f32 q9, q1, q15\n\t"
      "subs %[n], %[n], #1\n\t"
      "bne 1b\n\t"
      "vst1.32 {d18-d19}, [%[out]]\n\t"
      : [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3), [xq] "+r"(xq), [xd] "+r"(xd), [n] "+r"(nblk)
      : [out] "r"(out)
      : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13",
        "d14", "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28",
        "d29", "d30", "d31");
}
#endif

#if !FG_NEON_A64
/* armv7 Q8_0 gemm tile, 2 rows x 2 activations (prefill): as fg_q8_vec4_a32, with the quad's lanes
 * (row 0 act a, row 1 act a, row 0 act b, row 1 act b) and the scale dw_r * dx_b; each weight block is
 * loaded once for both activations. Writes the four outputs to out[0..3] in that order. */
static void fg_q8_gemm22_a32(const uint8_t *p0, const uint8_t *p1, const int8_t *xa, const float *xad,
                             const int8_t *xb, const float *xbd, size_t nblk, float *out) {
  if (nblk == 0) {
    vst1q_f32(out, vdupq_n_f32(0.0f));
    return;
  }
  __asm__ volatile(
      "vmov.i32 q9, #0\n\t"
#  if FG_NEON_HAVE_DOTPROD
      "vmov.i32 q4, #0\n\t"
      "vmov.i32 q5, #0\n\t"
      "vmov.i32 q6, #0\n\t"
      "vmov.i32 q7, #0\n\t"
      "vmov.i32 q8, #0\n\t"
#  endif
      "1:\n\t"
      "vld1.16 {d1[0]}, [%[p0]]!\n\t"
      "vld2.8 {d20-d23}, [%[p0]]!\n\t"
      "vld1.16 {d1[1]}, [%[p1]]!\n\t"
      "vld2.8 {d28-d31}, [%[p1]]!\n\t"
      "vld2.8 {d4-d7}, [%[xa]]!\n\t"
      "vld2.8 {d24-d27}, [%[xb]]!\n\t"
      "vld1.32 {d0[0]}, [%[xad]]!\n\t"
      "vld1.32 {d0[1]}, [%[xbd]]!\n\t"
#  if FG_NEON_HAVE_DOTPROD
      "vsdot.s8 q4, q10, q2\n\t"
      "vsdot.s8 q4, q11, q3\n\t"
      "vsdot.s8 q5, q14, q2\n\t"
      "vsdot.s8 q5, q15, q3\n\t"
      "vsdot.s8 q6, q10, q12\n\t"
      "vsdot.s8 q6, q11, q13\n\t"
      "vsdot.s8 q7, q14, q12\n\t"
      "vsdot.s8 q7, q15, q13\n\t"
      "vpadd.i32 d20, d8, d9\n\t"
      "vpadd.i32 d21, d10, d11\n\t"
      "vpadd.i32 d22, d12, d13\n\t"
      "vpadd.i32 d23, d14, d15\n\t"
      "vpadd.i32 d28, d20, d21\n\t"
      "vpadd.i32 d29, d22, d23\n\t"
      "vsub.i32 q15, q14, q8\n\t"
      "vmov q8, q14\n\t"
#  else
#    define FG_A32_DOT(acc, w0, w1, w2, w3, x0, x1, x2, x3)                                                \
      "vmull.s8 q8, " w0 ", " x0 "\n\t"                                                                  \
      "vmlal.s8 q8, " w1 ", " x1 "\n\t"                                                                  \
      "vmull.s8 q1, " w2 ", " x2 "\n\t"                                                                  \
      "vmlal.s8 q1, " w3 ", " x3 "\n\t"                                                                  \
      "vpaddl.s16 " acc ", q8\n\t"                                                                       \
      "vpadal.s16 " acc ", q1\n\t"
      FG_A32_DOT("q4", "d20", "d21", "d22", "d23", "d4", "d5", "d6", "d7")
      FG_A32_DOT("q5", "d28", "d29", "d30", "d31", "d4", "d5", "d6", "d7")
      FG_A32_DOT("q6", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27")
      FG_A32_DOT("q7", "d28", "d29", "d30", "d31", "d24", "d25", "d26", "d27")
#    undef FG_A32_DOT
      "vpadd.i32 d20, d8, d9\n\t"
      "vpadd.i32 d21, d10, d11\n\t"
      "vpadd.i32 d22, d12, d13\n\t"
      "vpadd.i32 d23, d14, d15\n\t"
      "vpadd.i32 d30, d20, d21\n\t"
      "vpadd.i32 d31, d22, d23\n\t"
#  endif
      "vcvt.f32.f16 q1, d1\n\t"
      "vmov d3, d2\n\t"
      "vmul.f32 d2, d2, d0[0]\n\t"
      "vmul.f32 d3, d3, d0[1]\n\t"
      "vcvt.f32.s32 q15, q15\n\t"
      "vfma.f32 q9, q1, q15\n\t"
      "subs %[n], %[n], #1\n\t"
      "bne 1b\n\t"
      "vst1.32 {d18-d19}, [%[out]]\n\t"
      : [p0] "+r"(p0), [p1] "+r"(p1), [xa] "+r"(xa), [xad] "+r"(xad), [xb] "+r"(xb), [xbd] "+r"(xbd),
        [n] "+r"(nblk)
      : [out] "r"(out)
      : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13",
        "d14", "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28",
        "d29", "d30", "d31");
}
#endif

#if FG_NEON_A64
/* aarch64 Q8_0, 4 rows x 1 activation: the same loop as fg_q8_vec4_a32 (GCC recomputes the row
 * addresses here), with post-indexed LD1s; SDOT into running sums, or SMULL/SMLAL2 + SADDLP/SADALP.
 * Registers v0-v7 and v16-v31 only (v8-v15 are callee-saved). */
static void fg_q8_vec4_a64(const uint8_t *p0, const uint8_t *p1, const uint8_t *p2, const uint8_t *p3,
                           const int8_t *xq, const float *xd, size_t nblk, float *out) {
  if (nblk == 0) {
    vst1q_f32(out, vdupq_n_f32(0.0f));
    return;
  }
#  if FG_NEON_HAVE_DOTPROD
#    define FG_A64_ROW(L, acc, wa, wb, p)                                                                  \
      "ld1 {v1.h}[" L "], [%[" p "]], #2\n\t"                                                             \
      "ld1 {" wa ".16b, " wb ".16b}, [%[" p "]], #32\n\t"                                                 \
      "sdot " acc ".4s, " wa ".16b, v2.16b\n\t"                                                           \
      "sdot " acc ".4s, " wb ".16b, v3.16b\n\t"
#  else
#    define FG_A64_ROW(L, acc, wa, wb, p)                                                                  \
      "ld1 {v1.h}[" L "], [%[" p "]], #2\n\t"                                                             \
      "ld1 {" wa ".16b, " wb ".16b}, [%[" p "]], #32\n\t"                                                 \
      "smull v18.8h, " wa ".8b, v2.8b\n\t"                                                                \
      "smlal2 v18.8h, " wa ".16b, v2.16b\n\t"                                                             \
      "smull v19.8h, " wb ".8b, v3.8b\n\t"                                                                \
      "smlal2 v19.8h, " wb ".16b, v3.16b\n\t"                                                             \
      "saddlp " acc ".4s, v18.8h\n\t"                                                                     \
      "sadalp " acc ".4s, v19.8h\n\t"
#  endif
  __asm__ volatile(
      "movi v17.4s, #0\n\t"
      "movi v16.4s, #0\n\t"
      "movi v4.4s, #0\n\t"
      "movi v5.4s, #0\n\t"
      "movi v6.4s, #0\n\t"
      "movi v7.4s, #0\n\t"
      "1:\n\t"
      "ld1 {v2.16b, v3.16b}, [%[xq]], #32\n\t"
      "ld1r {v0.4s}, [%[xd]], #4\n\t"
      FG_A64_ROW("0", "v4", "v20", "v21", "p0")
      FG_A64_ROW("1", "v5", "v22", "v23", "p1")
      FG_A64_ROW("2", "v6", "v24", "v25", "p2")
      FG_A64_ROW("3", "v7", "v26", "v27", "p3")
      "addp v28.4s, v4.4s, v5.4s\n\t"
      "addp v29.4s, v6.4s, v7.4s\n\t"
      "addp v28.4s, v28.4s, v29.4s\n\t"
#  if FG_NEON_HAVE_DOTPROD
      "sub v30.4s, v28.4s, v16.4s\n\t"
      "mov v16.16b, v28.16b\n\t"
#  else
      "mov v30.16b, v28.16b\n\t"
#  endif
      "fcvtl v31.4s, v1.4h\n\t"
      "fmul v31.4s, v31.4s, v0.4s\n\t"
      "scvtf v30.4s, v30.4s\n\t"
      "fmla v17.4s, v31.4s, v30.4s\n\t"
      "subs %[n], %[n], #1\n\t"
      "b.ne 1b\n\t"
      "st1 {v17.4s}, [%[out]]\n\t"
      : [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3), [xq] "+r"(xq), [xd] "+r"(xd), [n] "+r"(nblk)
      : [out] "r"(out)
      : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v16", "v17", "v18", "v19", "v20", "v21",
        "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31");
#  undef FG_A64_ROW
}
#  define fg_q8_vec4_asm fg_q8_vec4_a64

#  if FG_NEON_HAVE_DOTPROD
/* aarch64 Q8_0 gemm tile with SDOT: 4 rows x 2 activations (a, b), two quads sharing each loaded weight
 * block; as fg_q8_vec4_a64 otherwise. Writes row 0..3 of activation a to out[0..3], of b to out[4..7]. */
static void fg_q8_gemm42_a64(const uint8_t *p0, const uint8_t *p1, const uint8_t *p2, const uint8_t *p3,
                             const int8_t *xa, const float *xad, const int8_t *xb, const float *xbd, size_t nblk,
                             float *out) {
  if (nblk == 0) {
    vst1q_f32(out, vdupq_n_f32(0.0f));
    vst1q_f32(out + 4, vdupq_n_f32(0.0f));
    return;
  }
#    define FG_A64_ROW2(L, ca, cb, wa, wb, p)                                                              \
      "ld1 {v1.h}[" L "], [%[" p "]], #2\n\t"                                                             \
      "ld1 {" wa ".16b, " wb ".16b}, [%[" p "]], #32\n\t"                                                 \
      "sdot " ca ".4s, " wa ".16b, v2.16b\n\t"                                                            \
      "sdot " ca ".4s, " wb ".16b, v3.16b\n\t"                                                            \
      "sdot " cb ".4s, " wa ".16b, v4.16b\n\t"                                                            \
      "sdot " cb ".4s, " wb ".16b, v5.16b\n\t"
  __asm__ volatile(
      "movi v16.4s, #0\n\t"
      "movi v17.4s, #0\n\t"
      "movi v18.4s, #0\n\t"
      "movi v19.4s, #0\n\t"
      "movi v20.4s, #0\n\t"
      "movi v21.4s, #0\n\t"
      "movi v22.4s, #0\n\t"
      "movi v23.4s, #0\n\t"
      "movi v24.4s, #0\n\t"
      "movi v25.4s, #0\n\t"
      "movi v26.4s, #0\n\t"
      "movi v27.4s, #0\n\t"
      "1:\n\t"
      "ld1 {v2.16b, v3.16b}, [%[xa]], #32\n\t"
      "ld1 {v4.16b, v5.16b}, [%[xb]], #32\n\t"
      "ld1 {v0.s}[0], [%[xad]], #4\n\t"
      "ld1 {v0.s}[1], [%[xbd]], #4\n\t"
      FG_A64_ROW2("0", "v16", "v20", "v28", "v29", "p0")
      FG_A64_ROW2("1", "v17", "v21", "v30", "v31", "p1")
      FG_A64_ROW2("2", "v18", "v22", "v28", "v29", "p2")
      FG_A64_ROW2("3", "v19", "v23", "v30", "v31", "p3")
      "addp v6.4s, v16.4s, v17.4s\n\t"
      "addp v7.4s, v18.4s, v19.4s\n\t"
      "addp v6.4s, v6.4s, v7.4s\n\t"
      "addp v28.4s, v20.4s, v21.4s\n\t"
      "addp v29.4s, v22.4s, v23.4s\n\t"
      "addp v28.4s, v28.4s, v29.4s\n\t"
      "sub v7.4s, v6.4s, v24.4s\n\t"
      "mov v24.16b, v6.16b\n\t"
      "sub v29.4s, v28.4s, v25.4s\n\t"
      "mov v25.16b, v28.16b\n\t"
      "fcvtl v30.4s, v1.4h\n\t"
      "fmul v31.4s, v30.4s, v0.s[0]\n\t"
      "fmul v30.4s, v30.4s, v0.s[1]\n\t"
      "scvtf v7.4s, v7.4s\n\t"
      "scvtf v29.4s, v29.4s\n\t"
      "fmla v26.4s, v31.4s, v7.4s\n\t"
      "fmla v27.4s, v30.4s, v29.4s\n\t"
      "subs %[n], %[n], #1\n\t"
      "b.ne 1b\n\t"
      "st1 {v26.4s, v27.4s}, [%[out]]\n\t"
      : [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3), [xa] "+r"(xa), [xad] "+r"(xad), [xb] "+r"(xb),
        [xbd] "+r"(xbd), [n] "+r"(nblk)
      : [out] "r"(out)
      : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v16", "v17", "v18", "v19", "v20", "v21",
        "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31");
#    undef FG_A64_ROW2
}
#  endif
#else
#  define fg_q8_vec4_asm fg_q8_vec4_a32
#endif

/* 4 rows (lane r = row r) x B activations (one quad each): outputs t0 .. t0+nr of activations b0.. */
FG_NEON_INLINE void fg_qtile4(const fg_mm_args *a, const uint8_t *const *rp, size_t t0, size_t nr, size_t b0,
                              const int B, const int is_q4) {
  const size_t nblk = a->cols / 32, stride = fg_act_q8_row_bytes(a->cols);
  const int deint = is_q4 ? 0 : FG_Q8_DEINTERLEAVE;
  const int8_t *xq[FG_F_BMAX];
  const float *xd[FG_F_BMAX];
  float32x4_t acc[FG_F_BMAX];
  for (int b = 0; b < B; b++) {
    const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b0 + (size_t)b) * stride, a->cols);
    xq[b] = xr.qs;
    xd[b] = xr.d;
    acc[b] = vdupq_n_f32(0.0f);
  }
  const uint8_t *p0 = rp[0], *p1 = rp[1], *p2 = rp[2], *p3 = rp[3];
  float32x4_t acc0 = acc[0], acc1 = B == 2 ? acc[1] : acc[0];
#if FG_NEON_HAVE_DOTPROD
  /* running int32 sums per row and activation: a block's dots are the difference of two reductions
   * (exact in wrapping int32 arithmetic, since each block dot fits), which saves zeroing per block */
  const int32x4_t z = vdupq_n_s32(0);
  int32x4_t cum00 = z, cum01 = z, cum02 = z, cum03 = z, cum10 = z, cum11 = z, cum12 = z, cum13 = z;
  int32x4_t prev0 = z, prev1 = z;
#endif
  uint16x4_t h = vdup_n_u16(0);
  for (size_t k = 0; k < nblk; k++) {
    int8x16_t w0[4], w1[4];
    FG_NEXT_BLOCK(p0, h, 0, is_q4, &w0[0], &w1[0]);
    FG_NEXT_BLOCK(p1, h, 1, is_q4, &w0[1], &w1[1]);
    FG_NEXT_BLOCK(p2, h, 2, is_q4, &w0[2], &w1[2]);
    FG_NEXT_BLOCK(p3, h, 3, is_q4, &w0[3], &w1[3]);
    const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(h));
    /* written out per row and activation: GCC at -O2 (aarch64's Release) keeps loops over such arrays
     * in memory */
#if FG_NEON_HAVE_DOTPROD
#  define FG_QT4_B(b)                                                                                        \
    do {                                                                                                     \
      int8x16_t x0, x1;                                                                                      \
      fg_ld32(xq[b] + k * 32, deint, &x0, &x1);                                                              \
      cum##b##0 = vdotq_s32(vdotq_s32(cum##b##0, w0[0], x0), w1[0], x1);                                     \
      cum##b##1 = vdotq_s32(vdotq_s32(cum##b##1, w0[1], x0), w1[1], x1);                                     \
      cum##b##2 = vdotq_s32(vdotq_s32(cum##b##2, w0[2], x0), w1[2], x1);                                     \
      cum##b##3 = vdotq_s32(vdotq_s32(cum##b##3, w0[3], x0), w1[3], x1);                                     \
      const int32x4_t red = fg_vsum4_s32(cum##b##0, cum##b##1, cum##b##2, cum##b##3);                        \
      const int32x4_t isum = vsubq_s32(red, prev##b);                                                        \
      prev##b = red;                                                                                         \
      acc##b = vfmaq_f32(acc##b, vmulq_n_f32(dw, xd[b][k]), vcvtq_f32_s32(isum));                            \
    } while (0)
#else
#  define FG_QT4_B(b)                                                                                        \
    do {                                                                                                     \
      int8x16_t x0, x1;                                                                                      \
      fg_ld32(xq[b] + k * 32, deint, &x0, &x1);                                                              \
      const int32x4_t isum = fg_vsum4_s32(fg_qdot(w0[0], w1[0], x0, x1), fg_qdot(w0[1], w1[1], x0, x1),      \
                                          fg_qdot(w0[2], w1[2], x0, x1), fg_qdot(w0[3], w1[3], x0, x1));     \
      acc##b = vfmaq_f32(acc##b, vmulq_n_f32(dw, xd[b][k]), vcvtq_f32_s32(isum));                            \
    } while (0)
#endif
    FG_QT4_B(0);
    if (B == 2) FG_QT4_B(1);
#undef FG_QT4_B
  }
  acc[0] = acc0;
  if (B == 2) acc[1] = acc1;
  for (int b = 0; b < B; b++) fg_store4(a->y + (b0 + (size_t)b) * a->ldy + t0, nr, acc[b]);
}

/* 2 rows x 2 activations in one quad: lanes (r0 b0, r1 b0, r0 b1, r1 b1) (armv7's gemm: 16 registers) */
FG_NEON_INLINE void fg_qtile22(const fg_mm_args *a, const uint8_t *const *rp, size_t t0, size_t nr, size_t b0,
                               const int is_q4) {
  const size_t nblk = a->cols / 32, stride = fg_act_q8_row_bytes(a->cols);
  const int deint = is_q4 ? 0 : FG_Q8_DEINTERLEAVE;
  const fg_act_q8_row xa = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b0 * stride, a->cols);
  const fg_act_q8_row xb = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b0 + 1) * stride, a->cols);
  float32x4_t acc = vdupq_n_f32(0.0f);
  const uint8_t *p0 = rp[0], *p1 = rp[1];
  uint16x4_t h = vdup_n_u16(0);
  for (size_t k = 0; k < nblk; k++) {
    int8x16_t w00, w01, w10, w11, xa0, xa1, xb0, xb1;
    FG_NEXT_BLOCK(p0, h, 0, is_q4, &w00, &w01);
    FG_NEXT_BLOCK(p1, h, 1, is_q4, &w10, &w11);
    const float32x2_t dw = vget_low_f32(vcvt_f32_f16(vreinterpret_f16_u16(h)));
    const float32x4_t scale = vcombine_f32(vmul_n_f32(dw, xa.d[k]), vmul_n_f32(dw, xb.d[k]));
    fg_ld32(xa.qs + k * 32, deint, &xa0, &xa1);
    fg_ld32(xb.qs + k * 32, deint, &xb0, &xb1);
    const int32x4_t isum = fg_vsum4_s32(fg_qdot(w00, w01, xa0, xa1), fg_qdot(w10, w11, xa0, xa1),
                                        fg_qdot(w00, w01, xb0, xb1), fg_qdot(w10, w11, xb0, xb1));
    acc = vfmaq_f32(acc, scale, vcvtq_f32_s32(isum));
  }
  float o[4];
  vst1q_f32(o, acc);
  float *ya = a->y + b0 * a->ldy + t0, *yb = ya + a->ldy;
  ya[0] = o[0];
  yb[0] = o[2];
  if (nr > 1) {
    ya[1] = o[1];
    yb[1] = o[3];
  }
}

FG_NEON_INLINE void fg_qrun(const fg_mm_args *a, size_t i0, size_t i1, const int is_q4, const int gemm) {
  if (!is_q4 && !gemm) { /* Q8_0 decode: the assembly loop, activation by activation */
    const size_t stride = fg_act_q8_row_bytes(a->cols), nblk = a->cols / 32;
    const uint32_t *safe = fg_q8_flags(a->act, a->cols, a->nb);
    for (size_t b = 0; b < a->nb; b++) {
      const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
      float *y = a->y + b * a->ldy;
      size_t t0 = i0;
      if (!a->rows && !(FG_NEON_FTZ && !safe[b])) /* whole tiles of consecutive rows: no per-tile set-up */
        for (const size_t rb = a->row_bytes; t0 + FG_Q_ROWS <= i1; t0 += FG_Q_ROWS) {
          const uint8_t *r0 = a->w + t0 * rb;
          fg_q8_vec4_asm(r0, r0 + rb, r0 + 2 * rb, r0 + 3 * rb, xr.qs, xr.d, nblk, y + t0);
        }
      for (; t0 < i1; t0 += FG_Q_ROWS) {
        const size_t nr = FG_MIN((size_t)FG_Q_ROWS, i1 - t0);
        const uint8_t *rp[FG_Q_ROWS];
        fg_tile_rows(a, t0, nr, FG_Q_ROWS, rp);
        if (FG_NEON_FTZ && !safe[b]) { /* armv7, tiny activation scales: the spec in scalar VFP code */
          for (size_t r = 0; r < nr; r++) y[t0 + r] = fg_spec_dot_q8(a->type, rp[r], xr, a->cols);
        } else if (nr == FG_Q_ROWS) {
          fg_q8_vec4_asm(rp[0], rp[1], rp[2], rp[3], xr.qs, xr.d, nblk, y + t0);
        } else {
          float o[4];
          fg_q8_vec4_asm(rp[0], rp[1], rp[2], rp[3], xr.qs, xr.d, nblk, o);
          for (size_t r = 0; r < nr; r++) y[t0 + r] = o[r];
        }
      }
    }
    return;
  }
  const int pairs = gemm && !FG_NEON_A64; /* armv7 gemm: 2 x 2 tiles */
  const size_t R = pairs ? 2 : FG_Q_ROWS;
  for (size_t t0 = i0; t0 < i1; t0 += R) {
    const size_t nr = FG_MIN(R, i1 - t0);
    const uint8_t *rp[FG_Q_ROWS];
    fg_tile_rows(a, t0, nr, R, rp);
    size_t b = 0;
#if !FG_NEON_A64
    if (pairs && !is_q4) {
      const size_t stride = fg_act_q8_row_bytes(a->cols);
      for (; b + 2 <= a->nb; b += 2) {
        const fg_act_q8_row xa = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
        const fg_act_q8_row xb = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b + 1) * stride, a->cols);
        float o[4];
        fg_q8_gemm22_a32(rp[0], rp[1], xa.qs, xa.d, xb.qs, xb.d, a->cols / 32, o);
        float *ya = a->y + b * a->ldy + t0, *yb = ya + a->ldy;
        ya[0] = o[0];
        yb[0] = o[2];
        if (nr > 1) {
          ya[1] = o[1];
          yb[1] = o[3];
        }
      }
    }
#endif
#if FG_NEON_A64 && FG_NEON_HAVE_DOTPROD
    if (gemm && !is_q4) {
      const size_t stride = fg_act_q8_row_bytes(a->cols);
      for (; b + 2 <= a->nb; b += 2) {
        const fg_act_q8_row xa = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
        const fg_act_q8_row xb = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b + 1) * stride, a->cols);
        float o[8];
        fg_q8_gemm42_a64(rp[0], rp[1], rp[2], rp[3], xa.qs, xa.d, xb.qs, xb.d, a->cols / 32, o);
        float *ya = a->y + b * a->ldy + t0, *yb = ya + a->ldy;
        for (size_t r = 0; r < nr; r++) {
          ya[r] = o[r];
          yb[r] = o[4 + r];
        }
      }
    }
#endif
    if (pairs)
      for (; b + 2 <= a->nb; b += 2) fg_qtile22(a, rp, t0, nr, b, is_q4);
    else if (gemm)
      for (; b + 2 <= a->nb; b += 2) fg_qtile4(a, rp, t0, nr, b, 2, is_q4);
    if (R == 2) { /* single activations of a 2-row tile: rows repeated into a 4-row one */
      const uint8_t *rp4[FG_Q_ROWS] = {rp[0], rp[1], rp[0], rp[1]};
      for (; b < a->nb; b++) fg_qtile4(a, rp4, t0, nr, b, 1, is_q4);
    } else {
      for (; b < a->nb; b++) fg_qtile4(a, rp, t0, nr, b, 1, is_q4);
    }
    if (FG_NEON_FTZ) { /* armv7: activation rows with tiny scales follow the spec in scalar VFP code */
      const uint32_t *safe = fg_q8_flags(a->act, a->cols, a->nb);
      const size_t stride = fg_act_q8_row_bytes(a->cols);
      for (size_t bb = 0; bb < a->nb; bb++) {
        if (safe[bb]) continue;
        const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + bb * stride, a->cols);
        for (size_t r = 0; r < nr; r++)
          a->y[bb * a->ldy + t0 + r] = fg_spec_dot_q8(a->type, rp[r], xr, a->cols);
      }
    }
  }
}

#if FG_NEON_A64 && FG_NEON_HAVE_DOTPROD
// ----------------------------------------------------------------------------
// Packed Q8_0 (aarch64 with SDOT or SMMLA): the rows in strips of 16, copied at model load (kernels.h,
// "load-time repacking"). Per strip and 32-block k, FG_PK_BLOCK bytes: the 16 rows' scales as f32
// (exact conversions of the f16 ones), then the 16 rows' 512 weights interleaved for the table's
// instruction. neon_dotprod (SDOT): for each group g of 4 rows, 128 bytes: for c = 0..7 the 4 weights
// 4c..4c+3 of rows 4g, 4g+1, 4g+2, 4g+3. One SDOT by element of 16 of them with the activation's bytes
// 4c..4c+3 adds a 4-product dot to each row's lane: the lanes are rows, so a block's four row dots need
// no reduction, and one 64-byte load brings the 16 rows' scales. neon_i8mm (SMMLA) below. Each output
// is still fma(dw * dx, (float)isum, acc) in block order: bit for bit the q8 spec.
#  define FG_PK_ROWS 16
#  define FG_PK_BLOCK (16 * 4 + 4 * 128)

/* Q5_0 and Q4_K packed strips (fg_px_* below): bytes per 32-element block / 256-element superblock */
#  define FG_PX_Q5_BLOCK (32 + 64 + 256)
#  define FG_PX_K4_HEAD (32 + 32 + 128 + 128)
#  define FG_PX_K4_BLOCK (FG_PX_K4_HEAD + 8 * 256)

static size_t fg_pk_size(uint32_t type, size_t rows, size_t cols) {
  const size_t bb = type == FG_TYPE_Q8_0 ? FG_PK_BLOCK : type == FG_TYPE_Q5_0 ? FG_PX_Q5_BLOCK : type == FG_TYPE_Q4_K ? FG_PX_K4_BLOCK : 0;
  const size_t unit = type == FG_TYPE_Q4_K ? 256 : 32;
  if (!bb || rows == 0 || rows % FG_PK_ROWS != 0 || cols == 0 || cols % unit != 0) return 0;
  const size_t strips = rows / FG_PK_ROWS, nblk = cols / unit;
  if (nblk > SIZE_MAX / bb / strips) return 0;
  return strips * nblk * bb;
}

/* the scales of rows 4g..4g+3 (r: their blocks) as f32 at o */
FG_NEON_INLINE void fg_pk_scales4(uint8_t *o, const uint8_t *const r[4]) {
  uint16x4_t h = vdup_n_u16(0);
  h = vld1_lane_u16((const uint16_t *)(const void *)r[0], h, 0);
  h = vld1_lane_u16((const uint16_t *)(const void *)r[1], h, 1);
  h = vld1_lane_u16((const uint16_t *)(const void *)r[2], h, 2);
  h = vld1_lane_u16((const uint16_t *)(const void *)r[3], h, 3);
  vst1q_f32((float *)(void *)o, vcvt_f32_f16(vreinterpret_f16_u16(h)));
}

/* The decode loop of both packed tables around their BLOCK16(dx) (one block of 16 rows; dx: the
 * activation scale as an element of v8): per strip the four sums acc0..acc3 start at zero, blocks go in
 * pairs (one loop branch and one load of the two scales per pair), an odd last block alone, then the
 * strip's 16 outputs are stored and the next strip starts over the same activation. Operands p, xq,
 * xd, np, strips, out (the strips' outputs, in turn), xq0, xd0, pairs, odd. */
#  define FG_PK_VEC_LOOP(BLOCK16, acc0, acc1, acc2, acc3)                                                  \
    "0:\n\t"                                                                                               \
    "mov %[xq], %[xq0]\n\t"                                                                                \
    "mov %[xd], %[xd0]\n\t"                                                                                \
    "mov %[np], %[pairs]\n\t"                                                                              \
    "movi " acc0 ".4s, #0\n\t"                                                                             \
    "movi " acc1 ".4s, #0\n\t"                                                                             \
    "movi " acc2 ".4s, #0\n\t"                                                                             \
    "movi " acc3 ".4s, #0\n\t"                                                                             \
    "cbz %[np], 2f\n\t"                                                                                    \
    "1:\n\t"                                                                                               \
    "ld1 {v8.2s}, [%[xd]], #8\n\t"                                                                         \
    BLOCK16("v8.s[0]")                                                                                     \
    BLOCK16("v8.s[1]")                                                                                     \
    "subs %[np], %[np], #1\n\t"                                                                            \
    "b.ne 1b\n\t"                                                                                          \
    "2:\n\t"                                                                                               \
    "cbz %[odd], 3f\n\t"                                                                                   \
    "ld1 {v8.s}[0], [%[xd]]\n\t"                                                                           \
    BLOCK16("v8.s[0]")                                                                                     \
    "3:\n\t"                                                                                               \
    "st1 {" acc0 ".4s, " acc1 ".4s, " acc2 ".4s, " acc3 ".4s}, [%[out]], #64\n\t"                          \
    "subs %[strips], %[strips], #1\n\t"                                                                    \
    "b.ne 0b\n\t"

/* the gemm tiles' sums (v8-v15) start at zero */
#  define FG_PK_ZERO_V8_V15                                                                                \
    "movi v8.4s, #0\n\t"                                                                                   \
    "movi v9.4s, #0\n\t"                                                                                   \
    "movi v10.4s, #0\n\t"                                                                                  \
    "movi v11.4s, #0\n\t"                                                                                  \
    "movi v12.4s, #0\n\t"                                                                                  \
    "movi v13.4s, #0\n\t"                                                                                  \
    "movi v14.4s, #0\n\t"                                                                                  \
    "movi v15.4s, #0\n\t"

/* a gemm tile's outputs without blocks (cols == 0): y[b][0..7] = 0 */
FG_NEON_INLINE void fg_pk_zero84(float *const y[4]) {
  for (int b = 0; b < 4; b++) {
    vst1q_f32(y[b], vdupq_n_f32(0.0f));
    vst1q_f32(y[b] + 4, vdupq_n_f32(0.0f));
  }
}

#  if !FG_NEON_HAVE_I8MM
static void fg_pk_pack_q8_0(uint32_t type, const uint8_t *w, size_t row_bytes, size_t cols, size_t r0, size_t r1,
                            uint8_t *dst) {
  (void)type;
  const size_t nblk = cols / 32;
  for (size_t s = r0 / FG_PK_ROWS; s < r1 / FG_PK_ROWS; s++) {
    uint8_t *o = dst + s * nblk * FG_PK_BLOCK;
    const uint8_t *row0 = w + s * FG_PK_ROWS * row_bytes;
    for (size_t k = 0; k < nblk; k++, o += FG_PK_BLOCK) {
      for (size_t g = 0; g < 4; g++) {
        const uint8_t *r[4];
        for (size_t i = 0; i < 4; i++) r[i] = row0 + (4 * g + i) * row_bytes + k * sizeof(fg_block_q8_0);
        fg_pk_scales4(o + 16 * g, r);
        /* ST4 writes lane c of the four rows' vectors one after another: words c of rows 0..3 */
        for (size_t half = 0; half < 2; half++) {
          uint32x4x4_t v;
          v.val[0] = vreinterpretq_u32_u8(vld1q_u8(r[0] + 2 + 16 * half));
          v.val[1] = vreinterpretq_u32_u8(vld1q_u8(r[1] + 2 + 16 * half));
          v.val[2] = vreinterpretq_u32_u8(vld1q_u8(r[2] + 2 + 16 * half));
          v.val[3] = vreinterpretq_u32_u8(vld1q_u8(r[3] + 2 + 16 * half));
          vst4q_u32((uint32_t *)(void *)(o + 64 + 128 * g + 64 * half), v);
        }
      }
    }
  }
}

/* strips >= 1 consecutive strips (16 rows each; p = the first one's first block) x one activation:
 * out[0..16 strips). Assembly: GCC computes the eight 64-byte addresses of a block with separate adds;
 * here every load post-increments one pointer. Per block (16 rows): loads of the activation and the 16
 * weight scales, 8 loads of weights, 4 zeroings, 32 SDOTs, 12 float ops, and in FG_PK_VEC_LOOP half a
 * scale load and a loop branch: 60 instructions per block. */
static void fg_pk_vec16(const uint8_t *p, size_t strips, const int8_t *xq0, const float *xd0, size_t nblk, float *out) {
#  define FG_PK_GROUP(acc)                                                                                  \
    "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[p]], #64\n\t"                                             \
    "ld1 {v28.16b, v29.16b, v30.16b, v31.16b}, [%[p]], #64\n\t"                                             \
    "sdot " acc ".4s, v24.16b, v0.4b[0]\n\t"                                                                \
    "sdot " acc ".4s, v25.16b, v0.4b[1]\n\t"                                                                \
    "sdot " acc ".4s, v26.16b, v0.4b[2]\n\t"                                                                \
    "sdot " acc ".4s, v27.16b, v0.4b[3]\n\t"                                                                \
    "sdot " acc ".4s, v28.16b, v1.4b[0]\n\t"                                                                \
    "sdot " acc ".4s, v29.16b, v1.4b[1]\n\t"                                                                \
    "sdot " acc ".4s, v30.16b, v1.4b[2]\n\t"                                                                \
    "sdot " acc ".4s, v31.16b, v1.4b[3]\n\t"
  /* one block; dx: the activation scale as an element of v8 */
#  define FG_PK_BLOCK16(dx)                                                                                 \
    "ld1 {v0.16b, v1.16b}, [%[xq]], #32\n\t"                                                                \
    "ld1 {v4.4s, v5.4s, v6.4s, v7.4s}, [%[p]], #64\n\t"                                                     \
    "movi v20.4s, #0\n\t"                                                                                   \
    "movi v21.4s, #0\n\t"                                                                                   \
    "movi v22.4s, #0\n\t"                                                                                   \
    "movi v23.4s, #0\n\t"                                                                                   \
    FG_PK_GROUP("v20")                                                                                      \
    FG_PK_GROUP("v21")                                                                                      \
    FG_PK_GROUP("v22")                                                                                      \
    FG_PK_GROUP("v23")                                                                                      \
    "fmul v4.4s, v4.4s, " dx "\n\t"                                                                         \
    "fmul v5.4s, v5.4s, " dx "\n\t"                                                                         \
    "fmul v6.4s, v6.4s, " dx "\n\t"                                                                         \
    "fmul v7.4s, v7.4s, " dx "\n\t"                                                                         \
    "scvtf v20.4s, v20.4s\n\t"                                                                              \
    "scvtf v21.4s, v21.4s\n\t"                                                                              \
    "scvtf v22.4s, v22.4s\n\t"                                                                              \
    "scvtf v23.4s, v23.4s\n\t"                                                                              \
    "fmla v16.4s, v4.4s, v20.4s\n\t"                                                                        \
    "fmla v17.4s, v5.4s, v21.4s\n\t"                                                                        \
    "fmla v18.4s, v6.4s, v22.4s\n\t"                                                                        \
    "fmla v19.4s, v7.4s, v23.4s\n\t"
  const size_t pairs = nblk / 2, odd = nblk % 2;
  const int8_t *xq;
  const float *xd;
  size_t np;
  __asm__ volatile(FG_PK_VEC_LOOP(FG_PK_BLOCK16, "v16", "v17", "v18", "v19")
                   : [p] "+r"(p), [xq] "=&r"(xq), [xd] "=&r"(xd), [np] "=&r"(np), [strips] "+r"(strips),
                     [out] "+r"(out)
                   : [xq0] "r"(xq0), [xd0] "r"(xd0), [pairs] "r"(pairs), [odd] "r"(odd)
                   : "cc", "memory", "v0", "v1", "v4", "v5", "v6", "v7", "v8", "v16", "v17", "v18", "v19", "v20",
                     "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31");
#  undef FG_PK_BLOCK16
#  undef FG_PK_GROUP
}

/* groups g and g + 1 (8 rows) of a strip (p = its first block) x 4 activations: y[b][0..7]. Assembly, as
 * fg_pk_vec16: per block, the two groups' scales and 256 weights (5 loads) serve 4 activations of 26
 * instructions each (activation block and scale, 2 zeroings, 16 SDOTs, 6 float ops), plus the loop:
 * 111 instructions per 32 outputs. All 32 vector registers: v8-v15 (callee-saved) hold the sums, and
 * the compiler saves them around the loop. */
static void fg_pk_gemm84(const uint8_t *p, size_t g, const int8_t *const xq[4], const float *const xd[4], size_t nblk,
                         float *const y[4]) {
  if (nblk == 0) {
    fg_pk_zero84(y);
    return;
  }
  const uint8_t *pd = p + 16 * g, *pq = p + 64 + 128 * g;
  const int8_t *x0 = xq[0], *x1 = xq[1], *x2 = xq[2], *x3 = xq[3];
  const float *d0 = xd[0], *d1 = xd[1], *d2 = xd[2], *d3 = xd[3];
  const size_t step = FG_PK_BLOCK, qstep = FG_PK_BLOCK - 192;
#  define FG_PK_ACT2(x, d, acc0, acc1)                                                                      \
    "ld1 {v0.16b, v1.16b}, [%[" x "]], #32\n\t"                                                             \
    "ld1r {v2.4s}, [%[" d "]], #4\n\t"                                                                      \
    "movi v3.4s, #0\n\t"                                                                                    \
    "movi v6.4s, #0\n\t"                                                                                    \
    "sdot v3.4s, v16.16b, v0.4b[0]\n\t"                                                                     \
    "sdot v6.4s, v24.16b, v0.4b[0]\n\t"                                                                     \
    "sdot v3.4s, v17.16b, v0.4b[1]\n\t"                                                                     \
    "sdot v6.4s, v25.16b, v0.4b[1]\n\t"                                                                     \
    "sdot v3.4s, v18.16b, v0.4b[2]\n\t"                                                                     \
    "sdot v6.4s, v26.16b, v0.4b[2]\n\t"                                                                     \
    "sdot v3.4s, v19.16b, v0.4b[3]\n\t"                                                                     \
    "sdot v6.4s, v27.16b, v0.4b[3]\n\t"                                                                     \
    "sdot v3.4s, v20.16b, v1.4b[0]\n\t"                                                                     \
    "sdot v6.4s, v28.16b, v1.4b[0]\n\t"                                                                     \
    "sdot v3.4s, v21.16b, v1.4b[1]\n\t"                                                                     \
    "sdot v6.4s, v29.16b, v1.4b[1]\n\t"                                                                     \
    "sdot v3.4s, v22.16b, v1.4b[2]\n\t"                                                                     \
    "sdot v6.4s, v30.16b, v1.4b[2]\n\t"                                                                     \
    "sdot v3.4s, v23.16b, v1.4b[3]\n\t"                                                                     \
    "sdot v6.4s, v31.16b, v1.4b[3]\n\t"                                                                     \
    "fmul v7.4s, v4.4s, v2.4s\n\t"                                                                          \
    "scvtf v3.4s, v3.4s\n\t"                                                                                \
    "fmla " acc0 ".4s, v7.4s, v3.4s\n\t"                                                                    \
    "fmul v7.4s, v5.4s, v2.4s\n\t"                                                                          \
    "scvtf v6.4s, v6.4s\n\t"                                                                                \
    "fmla " acc1 ".4s, v7.4s, v6.4s\n\t"
  __asm__ volatile(
      FG_PK_ZERO_V8_V15
      "1:\n\t"
      "ld1 {v4.4s, v5.4s}, [%[pd]], %[step]\n\t"
      "ld1 {v16.16b, v17.16b, v18.16b, v19.16b}, [%[pq]], #64\n\t"
      "ld1 {v20.16b, v21.16b, v22.16b, v23.16b}, [%[pq]], #64\n\t"
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[pq]], #64\n\t"
      "ld1 {v28.16b, v29.16b, v30.16b, v31.16b}, [%[pq]], %[qstep]\n\t"
      FG_PK_ACT2("x0", "d0", "v8", "v9")
      FG_PK_ACT2("x1", "d1", "v10", "v11")
      FG_PK_ACT2("x2", "d2", "v12", "v13")
      FG_PK_ACT2("x3", "d3", "v14", "v15")
      "subs %[n], %[n], #1\n\t"
      "b.ne 1b\n\t"
      "st1 {v8.4s, v9.4s}, [%[y0]]\n\t"
      "st1 {v10.4s, v11.4s}, [%[y1]]\n\t"
      "st1 {v12.4s, v13.4s}, [%[y2]]\n\t"
      "st1 {v14.4s, v15.4s}, [%[y3]]\n\t"
      : [pd] "+r"(pd), [pq] "+r"(pq), [x0] "+r"(x0), [x1] "+r"(x1), [x2] "+r"(x2), [x3] "+r"(x3), [d0] "+r"(d0),
        [d1] "+r"(d1), [d2] "+r"(d2), [d3] "+r"(d3), [n] "+r"(nblk)
      : [step] "r"(step), [qstep] "r"(qstep), [y0] "r"(y[0]), [y1] "r"(y[1]), [y2] "r"(y[2]), [y3] "r"(y[3])
      : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",
        "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30",
        "v31");
#  undef FG_PK_ACT2
}

#  else /* FG_NEON_HAVE_I8MM */
/* neon_i8mm (SMMLA: a 2 x 8 by 8 x 2 int8 product into the four lanes of an int32x4). Per strip and block,
 * after the 16 scales: for each half h of the strip (rows 8h..8h+7), for c = 0..3 (bytes 8c..8c+7),
 * 4 registers of two rows' 8 bytes each: rows (0, 2), (1, 3), (4, 6), (5, 7) of the half. Against 8
 * bytes of each of two activations a0, a1 side by side, SMMLA adds the four dots row x activation,
 * lanes (0, a0) (0, a1) (2, a0) (2, a1): 32 multiply-adds where SDOT does 16. The prefill kernel runs
 * 8 rows x 4 activations; the activations come from act_prep in the same form (fg_mm8_*). Decode has
 * one activation: against [x, 0] and [0, x] (also from act_prep) the pairs (0, 2) and (1, 3) land in
 * lanes 0, 2 and 1, 3 of one accumulator: rows 0..3 in order, the same SMMLA count as SDOT's. */
static void fg_pk_pack_q8_0(uint32_t type, const uint8_t *w, size_t row_bytes, size_t cols, size_t r0, size_t r1,
                            uint8_t *dst) {
  (void)type;
  const size_t nblk = cols / 32;
  for (size_t s = r0 / FG_PK_ROWS; s < r1 / FG_PK_ROWS; s++) {
    uint8_t *o = dst + s * nblk * FG_PK_BLOCK;
    const uint8_t *row0 = w + s * FG_PK_ROWS * row_bytes;
    for (size_t k = 0; k < nblk; k++, o += FG_PK_BLOCK) {
      const uint8_t *r[FG_PK_ROWS];
      for (size_t i = 0; i < FG_PK_ROWS; i++) r[i] = row0 + i * row_bytes + k * sizeof(fg_block_q8_0);
      for (size_t g = 0; g < 4; g++) fg_pk_scales4(o + 16 * g, r + 4 * g);
      for (size_t h = 0; h < 2; h++)
        for (size_t j = 0; j < 4; j++) {
          /* pair j of the half: rows (0, 2), (1, 3) of its first quad, then of its second; ZIP of 64-bit
           * lanes puts their bytes 8c..8c+7 side by side */
          const size_t ra = 8 * h + 4 * (j / 2) + j % 2;
          const uint64x2_t a0 = vreinterpretq_u64_u8(vld1q_u8(r[ra] + 2));
          const uint64x2_t a1 = vreinterpretq_u64_u8(vld1q_u8(r[ra] + 18));
          const uint64x2_t b0 = vreinterpretq_u64_u8(vld1q_u8(r[ra + 2] + 2));
          const uint64x2_t b1 = vreinterpretq_u64_u8(vld1q_u8(r[ra + 2] + 18));
          uint8_t *d = o + 64 + 256 * h + 16 * j;
          vst1q_u8(d, vreinterpretq_u8_u64(vzip1q_u64(a0, b0)));
          vst1q_u8(d + 64, vreinterpretq_u8_u64(vzip2q_u64(a0, b0)));
          vst1q_u8(d + 128, vreinterpretq_u8_u64(vzip1q_u64(a1, b1)));
          vst1q_u8(d + 192, vreinterpretq_u8_u64(vzip2q_u64(a1, b1)));
        }
    }
  }
}

/* The activations' SMMLA forms, after the Q8 rows and flags of fg_q8_rows_prep (one region, 64-byte
 * aligned): groups of 4 (activations 4G..4G+3 for 4G + 4 <= nb), per block 160 bytes: for c = 0..3,
 * [a0, a1] and [a2, a3] bytes 8c..8c+7, then the scales d0 d1 d0 d1 d2 d3 d2 d3; the activations after
 * the last group one by one, per block 128 bytes: for c = 0..3, [x, 0] and [0, x] bytes 8c..8c+7. */
#    define FG_MM8_GROUP 160
#    define FG_MM8_SINGLE 128

FG_NEON_INLINE size_t fg_mm8_base(size_t cols, size_t nb) {
  return (fg_q8_rows_size(cols, nb) + 63) / 64 * 64;
}

static size_t fg_mm8_rows_size(size_t cols, size_t nb) {
  const size_t base = fg_q8_rows_size(cols, nb), nblk = cols / 32;
  uint64_t g, sgl;
  if (base == SIZE_MAX || !fg_mul_u64(nb / 4 * FG_MM8_GROUP, nblk, &g) ||
      !fg_mul_u64(nb % 4 * FG_MM8_SINGLE, nblk, &sgl))
    return SIZE_MAX;
  const uint64_t n = (base + 63) / 64 * 64 + g + sgl;
  return n > SIZE_MAX - 64 ? SIZE_MAX : (size_t)n;
}

/* act_unit 4 (b0 a multiple of 4): one thread writes a group's blocks; each activation fills its own slots */
static void fg_mm8_rows_prep(const float *x, size_t ldx, size_t cols, size_t nb, size_t b0, size_t b1, void *act) {
  fg_q8_rows_prep(x, ldx, cols, nb, b0, b1, act);
  const size_t nblk = cols / 32, stride = fg_act_q8_row_bytes(cols), nb4 = nb / 4 * 4;
  uint8_t *const sec = (uint8_t *)act + fg_mm8_base(cols, nb);
  const uint8x8_t zero = vdup_n_u8(0);
  for (size_t b = b0; b < b1; b++) {
    const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)act + b * stride, cols);
    const uint8_t *q = (const uint8_t *)xr.qs;
    if (b < nb4) { /* activation b % 4 of group b / 4 */
      uint8_t *o = sec + b / 4 * nblk * FG_MM8_GROUP;
      const size_t j = b % 4;
      for (size_t k = 0; k < nblk; k++, o += FG_MM8_GROUP) {
        for (size_t c = 0; c < 4; c++) vst1_u8(o + 32 * c + 8 * j, vld1_u8(q + 32 * k + 8 * c));
        float *d = (float *)(void *)(o + 128);
        d[j / 2 * 4 + j % 2] = d[j / 2 * 4 + j % 2 + 2] = xr.d[k];
      }
    } else {
      uint8_t *o = sec + nb / 4 * nblk * FG_MM8_GROUP + (b - nb4) * nblk * FG_MM8_SINGLE;
      for (size_t k = 0; k < nblk; k++, o += FG_MM8_SINGLE)
        for (size_t c = 0; c < 4; c++) {
          const uint8x8_t v = vld1_u8(q + 32 * k + 8 * c);
          vst1q_u8(o + 32 * c, vcombine_u8(v, zero));
          vst1q_u8(o + 32 * c + 16, vcombine_u8(zero, v));
        }
    }
  }
}

/* strips >= 1 consecutive strips (p = the first one's first block) x one activation (xs: its single
 * form, xd: its scales): out[0..16 strips).
 * Per block: 2 loads of the activation's forms, 1 of the scales, 8 of weights, 4 zeroings, 32 SMMLAs,
 * 12 float ops; blocks in pairs as fg_pk_vec16 of neon_dotprod: 60 instructions per block. */
static void fg_pk_vec16(const uint8_t *p, size_t strips, const uint8_t *xq0, const float *xd0, size_t nblk, float *out) {
#    define FG_MM_HALF(acc0, acc1)                                                                          \
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[p]], #64\n\t"                                           \
      "smmla " acc0 ".4s, v24.16b, v0.16b\n\t"                                                              \
      "smmla " acc0 ".4s, v25.16b, v1.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v26.16b, v0.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v27.16b, v1.16b\n\t"                                                              \
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[p]], #64\n\t"                                           \
      "smmla " acc0 ".4s, v24.16b, v2.16b\n\t"                                                              \
      "smmla " acc0 ".4s, v25.16b, v3.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v26.16b, v2.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v27.16b, v3.16b\n\t"                                                              \
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[p]], #64\n\t"                                           \
      "smmla " acc0 ".4s, v24.16b, v4.16b\n\t"                                                              \
      "smmla " acc0 ".4s, v25.16b, v5.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v26.16b, v4.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v27.16b, v5.16b\n\t"                                                              \
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[p]], #64\n\t"                                           \
      "smmla " acc0 ".4s, v24.16b, v6.16b\n\t"                                                              \
      "smmla " acc0 ".4s, v25.16b, v7.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v26.16b, v6.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v27.16b, v7.16b\n\t"
#    define FG_MM_BLOCK16(dx)                                                                               \
      "ld1 {v0.16b, v1.16b, v2.16b, v3.16b}, [%[xq]], #64\n\t"                                              \
      "ld1 {v4.16b, v5.16b, v6.16b, v7.16b}, [%[xq]], #64\n\t"                                              \
      "ld1 {v16.4s, v17.4s, v18.4s, v19.4s}, [%[p]], #64\n\t"                                               \
      "movi v20.4s, #0\n\t"                                                                                 \
      "movi v21.4s, #0\n\t"                                                                                 \
      "movi v22.4s, #0\n\t"                                                                                 \
      "movi v23.4s, #0\n\t"                                                                                 \
      FG_MM_HALF("v20", "v21")                                                                              \
      FG_MM_HALF("v22", "v23")                                                                              \
      "fmul v16.4s, v16.4s, " dx "\n\t"                                                                     \
      "fmul v17.4s, v17.4s, " dx "\n\t"                                                                     \
      "fmul v18.4s, v18.4s, " dx "\n\t"                                                                     \
      "fmul v19.4s, v19.4s, " dx "\n\t"                                                                     \
      "scvtf v20.4s, v20.4s\n\t"                                                                            \
      "scvtf v21.4s, v21.4s\n\t"                                                                            \
      "scvtf v22.4s, v22.4s\n\t"                                                                            \
      "scvtf v23.4s, v23.4s\n\t"                                                                            \
      "fmla v28.4s, v16.4s, v20.4s\n\t"                                                                     \
      "fmla v29.4s, v17.4s, v21.4s\n\t"                                                                     \
      "fmla v30.4s, v18.4s, v22.4s\n\t"                                                                     \
      "fmla v31.4s, v19.4s, v23.4s\n\t"
  const size_t pairs = nblk / 2, odd = nblk % 2;
  const uint8_t *xq;
  const float *xd;
  size_t np;
  __asm__ volatile(FG_PK_VEC_LOOP(FG_MM_BLOCK16, "v28", "v29", "v30", "v31")
                   : [p] "+r"(p), [xq] "=&r"(xq), [xd] "=&r"(xd), [np] "=&r"(np), [strips] "+r"(strips),
                     [out] "+r"(out)
                   : [xq0] "r"(xq0), [xd0] "r"(xd0), [pairs] "r"(pairs), [odd] "r"(odd)
                   : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v16", "v17", "v18",
                     "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31");
#    undef FG_MM_BLOCK16
#    undef FG_MM_HALF
}

/* half h (rows 8h..8h+7) of a strip (p = its first block) x the 4 activations of a group (ag: its
 * form): y[b][0..7]. Per block: the half's scales, 256 weights and the group's 128 bytes and scales
 * (7 loads), 8 zeroings, 32 SMMLAs, the scale pairs (4 TRN), 8 x (scale product, conversion,
 * fused multiply-add), the loop: 78 instructions per 32 outputs (neon_dotprod's: 111). The sums of
 * row pair P (rows (0, 2), (1, 3), (4, 6), (5, 7)) and activation pair G are v16 + 2P + G, the outputs
 * v8 + 2P + G (callee-saved: the compiler saves them around the loop); TRN turns them into rows at
 * the end. */
static void fg_pk_gemm84(const uint8_t *p, size_t h, const uint8_t *ag, size_t nblk, float *const y[4]) {
  if (nblk == 0) {
    fg_pk_zero84(y);
    return;
  }
  const uint8_t *pd = p + 32 * h, *pq = p + 64 + 256 * h;
  const size_t step = FG_PK_BLOCK, qstep = FG_PK_BLOCK - 192;
#    define FG_MM_CHUNK(g0, g1)                                                                             \
      "smmla v16.4s, v24.16b, " g0 ".16b\n\t"                                                               \
      "smmla v17.4s, v24.16b, " g1 ".16b\n\t"                                                               \
      "smmla v18.4s, v25.16b, " g0 ".16b\n\t"                                                               \
      "smmla v19.4s, v25.16b, " g1 ".16b\n\t"                                                               \
      "smmla v20.4s, v26.16b, " g0 ".16b\n\t"                                                               \
      "smmla v21.4s, v26.16b, " g1 ".16b\n\t"                                                               \
      "smmla v22.4s, v27.16b, " g0 ".16b\n\t"                                                               \
      "smmla v23.4s, v27.16b, " g1 ".16b\n\t"
#    define FG_MM_SCALE(ws, xs, sum, out)                                                                   \
      "fmul v24.4s, " ws ".4s, " xs ".4s\n\t"                                                               \
      "scvtf " sum ".4s, " sum ".4s\n\t"                                                                    \
      "fmla " out ".4s, v24.4s, " sum ".4s\n\t"
  __asm__ volatile(
      FG_PK_ZERO_V8_V15
      "1:\n\t"
      "ld1 {v0.4s, v1.4s}, [%[pd]], %[step]\n\t"
      "movi v16.4s, #0\n\t"
      "movi v17.4s, #0\n\t"
      "movi v18.4s, #0\n\t"
      "movi v19.4s, #0\n\t"
      "movi v20.4s, #0\n\t"
      "movi v21.4s, #0\n\t"
      "movi v22.4s, #0\n\t"
      "movi v23.4s, #0\n\t"
      "ld1 {v28.16b, v29.16b, v30.16b, v31.16b}, [%[ag]], #64\n\t"
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[pq]], #64\n\t"
      FG_MM_CHUNK("v28", "v29")
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[pq]], #64\n\t"
      FG_MM_CHUNK("v30", "v31")
      "ld1 {v28.16b, v29.16b, v30.16b, v31.16b}, [%[ag]], #64\n\t"
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[pq]], #64\n\t"
      FG_MM_CHUNK("v28", "v29")
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[pq]], %[qstep]\n\t"
      FG_MM_CHUNK("v30", "v31")
      "ld1 {v2.4s, v3.4s}, [%[ag]], #32\n\t"
      "trn1 v4.4s, v0.4s, v0.4s\n\t"
      "trn2 v5.4s, v0.4s, v0.4s\n\t"
      "trn1 v6.4s, v1.4s, v1.4s\n\t"
      "trn2 v7.4s, v1.4s, v1.4s\n\t"
      FG_MM_SCALE("v4", "v2", "v16", "v8")
      FG_MM_SCALE("v4", "v3", "v17", "v9")
      FG_MM_SCALE("v5", "v2", "v18", "v10")
      FG_MM_SCALE("v5", "v3", "v19", "v11")
      FG_MM_SCALE("v6", "v2", "v20", "v12")
      FG_MM_SCALE("v6", "v3", "v21", "v13")
      FG_MM_SCALE("v7", "v2", "v22", "v14")
      FG_MM_SCALE("v7", "v3", "v23", "v15")
      "subs %[n], %[n], #1\n\t"
      "b.ne 1b\n\t"
      "trn1 v0.4s, v8.4s, v10.4s\n\t"
      "trn1 v1.4s, v12.4s, v14.4s\n\t"
      "trn2 v2.4s, v8.4s, v10.4s\n\t"
      "trn2 v3.4s, v12.4s, v14.4s\n\t"
      "trn1 v4.4s, v9.4s, v11.4s\n\t"
      "trn1 v5.4s, v13.4s, v15.4s\n\t"
      "trn2 v6.4s, v9.4s, v11.4s\n\t"
      "trn2 v7.4s, v13.4s, v15.4s\n\t"
      "st1 {v0.4s, v1.4s}, [%[y0]]\n\t"
      "st1 {v2.4s, v3.4s}, [%[y1]]\n\t"
      "st1 {v4.4s, v5.4s}, [%[y2]]\n\t"
      "st1 {v6.4s, v7.4s}, [%[y3]]\n\t"
      : [pd] "+r"(pd), [pq] "+r"(pq), [ag] "+r"(ag), [n] "+r"(nblk)
      : [step] "r"(step), [qstep] "r"(qstep), [y0] "r"(y[0]), [y1] "r"(y[1]), [y2] "r"(y[2]), [y3] "r"(y[3])
      : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",
        "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30",
        "v31");
#    undef FG_MM_SCALE
#    undef FG_MM_CHUNK
}
#  endif /* FG_NEON_HAVE_I8MM */

/* Outputs i0 <= i < i1 from the packed copy: whole strips there, the rows around them from a->w. */
static void fg_pk_run(const fg_mm_args *a, size_t i0, size_t i1, const int gemm) {
  const size_t s0 = (i0 + FG_PK_ROWS - 1) / FG_PK_ROWS * FG_PK_ROWS, s1 = i1 / FG_PK_ROWS * FG_PK_ROWS;
  if (s0 >= s1) {
    fg_qrun(a, i0, i1, 0, gemm);
    return;
  }
  if (i0 < s0) fg_qrun(a, i0, s0, 0, gemm);
  const size_t nblk = a->cols / 32, stride = fg_act_q8_row_bytes(a->cols), sbytes = nblk * FG_PK_BLOCK;
  uint8_t *act = (uint8_t *)(uintptr_t)a->act;
#  if FG_NEON_HAVE_I8MM
  /* the activations' SMMLA forms (fg_mm8_rows_prep): groups of 4 wherever vec or gemm runs */
  (void)gemm;
  const size_t nb4 = a->nb / 4 * 4;
  const uint8_t *groups = act + fg_mm8_base(a->cols, a->nb), *singles = groups + nb4 / 4 * nblk * FG_MM8_GROUP;
#  else
  const size_t nb4 = gemm ? a->nb / 4 * 4 : 0;
#  endif
  for (size_t t = s0; nb4 && t < s1; t += FG_PK_ROWS) {
    const uint8_t *p = a->packed + t / FG_PK_ROWS * sbytes;
    for (size_t b = 0; b < nb4; b += 4) {
#  if FG_NEON_HAVE_I8MM
      for (size_t h = 0; h < 2; h++) {
        float *const y[4] = {a->y + b * a->ldy + t + 8 * h, a->y + (b + 1) * a->ldy + t + 8 * h,
                             a->y + (b + 2) * a->ldy + t + 8 * h, a->y + (b + 3) * a->ldy + t + 8 * h};
        fg_pk_gemm84(p, h, groups + b / 4 * nblk * FG_MM8_GROUP, nblk, y);
      }
#  else
      const int8_t *xq[4];
      const float *xd[4];
      for (size_t j = 0; j < 4; j++) {
        const fg_act_q8_row xr = fg_act_q8_row_at(act + (b + j) * stride, a->cols);
        xq[j] = xr.qs;
        xd[j] = xr.d;
      }
      for (size_t g = 0; g < 4; g += 2) {
        float *const y[4] = {a->y + b * a->ldy + t + 4 * g, a->y + (b + 1) * a->ldy + t + 4 * g,
                             a->y + (b + 2) * a->ldy + t + 4 * g, a->y + (b + 3) * a->ldy + t + 4 * g};
        fg_pk_gemm84(p, g, xq, xd, nblk, y);
      }
#  endif
    }
  }
  /* the activations outside groups of 4 (decode: the only one) over all the strips in one call */
  for (size_t b = nb4; b < a->nb; b++) {
    const fg_act_q8_row xr = fg_act_q8_row_at(act + b * stride, a->cols);
#  if FG_NEON_HAVE_I8MM
    const void *xq = singles + (b - nb4) * nblk * FG_MM8_SINGLE;
#  else
    const int8_t *xq = xr.qs;
#  endif
    fg_pk_vec16(a->packed + s0 / FG_PK_ROWS * sbytes, (s1 - s0) / FG_PK_ROWS, xq, xr.d, nblk, a->y + b * a->ldy + s0);
  }
  if (s1 < i1) fg_qrun(a, s1, i1, 0, gemm);
}
#  define FG_Q8_TILE FG_PK_ROWS /* row ranges of whole strips */
#  if FG_NEON_HAVE_I8MM
#    define FG_Q8_ACT fg_mm8_rows_size, fg_mm8_rows_prep, 4 /* the SMMLA forms too, whole groups */
#  else
#    define FG_Q8_ACT fg_q8_rows_size, fg_q8_rows_prep, 1
#  endif
#else
#  define FG_Q8_TILE FG_Q_ROWS
#  define FG_Q8_ACT fg_q8_rows_size, fg_q8_rows_prep, 1
#endif

/* Q8_0 from the packed copy where there is one (aarch64 with SDOT; not for row lists), else from the rows */
FG_NEON_INLINE void fg_q8_0_run(const fg_mm_args *a, size_t i0, size_t i1, const int gemm) {
#if FG_NEON_A64 && FG_NEON_HAVE_DOTPROD
  if (a->packed && !a->rows) {
    fg_pk_run(a, i0, i1, gemm);
    return;
  }
#endif
  fg_qrun(a, i0, i1, 0, gemm);
}

static void fg_q8_0_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_q8_0_run(a, i0, i1, 0); }
static void fg_q4_0_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_qrun(a, i0, i1, 1, 0); }
static void fg_q8_0_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_q8_0_run(a, i0, i1, 1); }
static void fg_q4_0_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_qrun(a, i0, i1, 1, 1); }

// ----------------------------------------------------------------------------
// the other q8-spec types (Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS): as on x86 (q8w_stage.h), a
// tile's 4 rows are decoded ("staged") once per column segment into the form fg_q8w_decode gives
// (tensor/dtype.h): per 32-block 32 int8 values v, the half-block integer scales sa/sb, the float scale
// dw and the minimum mw with its multipliers ma/mb; dw and mw with the very float operations of
// fg_q8w_decode (scalar code: IEEE on armv7 too; e.g. Q4_K fp16(d) * (float)sc, -(fp16(dmin) * (float)m)).
// Then one int8 core for every type, as Q8_0's: per block the four rows' exact dots (per half-block for
// the types with half-block scales: isum = sa * ia + sb * ib in int32) in the lanes of one int32x4,
// s = fma(dw * dx, (float)isum, s) and the minimum's fma(mw * dx, (float)msum, s), in block order.
// vec: each staged tile against every activation; gemm: two activations per pass share the loaded
// weights. armv7: every staged dw and mw is 0 or a multiple of 2^-24 (fp16 scale times an integer), so
// the Q8_0 condition (activation scales checked in act_prep) keeps the NEON fmas exact.

#define FG_NQ_KSEG 64 /* blocks per staged segment (4 rows: 8 KiB of values) */
_Static_assert(FG_NQ_KSEG % 8 == 0, "segments start at whole 256-element blocks");

/* One row tile's staged segment: block kk of row r at [kk * 4 + r] (32 values at v + 32 * that), so the
 * four rows' scales of a block are one vector. */
typedef struct fg_nq_seg {
  int8_t v[FG_NQ_KSEG * FG_Q_ROWS * 32] __attribute__((aligned(16))); /* (kk, row, 32) */
  float dw[FG_NQ_KSEG * FG_Q_ROWS];      /* (kk, row) */
  float mw[FG_NQ_KSEG * FG_Q_ROWS];
  int32_t sa[FG_NQ_KSEG * FG_Q_ROWS], sb[FG_NQ_KSEG * FG_Q_ROWS];
  int32_t ma[FG_NQ_KSEG * FG_Q_ROWS], mb[FG_NQ_KSEG * FG_Q_ROWS];
} fg_nq_seg;

/* an fp16 scale as f32: the hardware conversion of scalar code (exact, IEEE on both) */
FG_NEON_INLINE float fg_nq_h2f(const uint8_t *p) {
  __fp16 h;
  memcpy(&h, p, 2);
  return (float)h;
}

/* 16 nibble bytes: the low nibbles (elements 0..15) and the high ones (16..31) */
FG_NEON_INLINE void fg_nq_nibbles(const uint8_t *qs, uint8x16_t *lo, uint8x16_t *hi) {
  const uint8x16_t q = vld1q_u8(qs);
  *lo = vandq_u8(q, vdupq_n_u8(0x0f));
  *hi = vshrq_n_u8(q, 4);
}

/* 0x10 in byte j where bit j of the 16 bits b[0] | b[1] << 8 is set */
FG_NEON_INLINE uint8x16_t fg_nq_bit4(const uint8_t *b) {
  static const uint8_t k_bits[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t h = vcombine_u8(vdup_n_u8(b[0]), vdup_n_u8(b[1]));
  return vandq_u8(vtstq_u8(h, vld1q_u8(k_bits)), vdupq_n_u8(0x10));
}

/* fg_iq4_values[idx] for 16 indices 0..15 */
FG_NEON_INLINE int8x16_t fg_nq_iq4(uint8x16_t idx) {
#if FG_NEON_A64
  return vqtbl1q_s8(vld1q_s8(fg_iq4_values), idx);
#else
  const int8x8x2_t t = {{vld1_s8(fg_iq4_values), vld1_s8(fg_iq4_values + 8)}};
  return vcombine_s8(vtbl2_s8(t, vreinterpret_s8_u8(vget_low_u8(idx))), vtbl2_s8(t, vreinterpret_s8_u8(vget_high_u8(idx))));
#endif
}

FG_NEON_INLINE void fg_nq_put(int8_t *v, int8x16_t a, int8x16_t b) {
  vst1q_s8(v, a);
  vst1q_s8(v + 16, b);
}

/* Stages blocks k0 .. k1 (for the 256-element types multiples of 8) of one row as row r of sg. */
FG_NEON_INLINE void fg_nq_stage(fg_nq_seg *sg, uint32_t type, const uint8_t *row, size_t k0, size_t k1, size_t r) {
  const size_t R = FG_Q_ROWS;
#define FG_NQ_AT(kk) ((kk) * R + r)
  switch (type) {
    case FG_TYPE_Q5_0:
    case FG_TYPE_Q5_1: {
      const int q51 = type == FG_TYPE_Q5_1;
      const size_t bsz = q51 ? 24 : 22, hoff = q51 ? 4 : 2;
      const int8x16_t off = vdupq_n_s8(q51 ? 0 : 16);
      for (size_t k = k0; k < k1; k++) {
        const uint8_t *b = row + k * bsz;
        const size_t e = FG_NQ_AT(k - k0);
        sg->dw[e] = fg_nq_h2f(b);
        if (q51) sg->mw[e] = fg_nq_h2f(b + 2);
        uint8x16_t lo, hi;
        fg_nq_nibbles(b + hoff + 4, &lo, &hi);
        lo = vorrq_u8(lo, fg_nq_bit4(b + hoff));
        hi = vorrq_u8(hi, fg_nq_bit4(b + hoff + 2));
        fg_nq_put(sg->v + 32 * e, vsubq_s8(vreinterpretq_s8_u8(lo), off), vsubq_s8(vreinterpretq_s8_u8(hi), off));
      }
    } break;
    case FG_TYPE_Q4_1:
      for (size_t k = k0; k < k1; k++) {
        const uint8_t *b = row + k * 20;
        const size_t e = FG_NQ_AT(k - k0);
        sg->dw[e] = fg_nq_h2f(b);
        sg->mw[e] = fg_nq_h2f(b + 2);
        uint8x16_t lo, hi;
        fg_nq_nibbles(b + 4, &lo, &hi);
        fg_nq_put(sg->v + 32 * e, vreinterpretq_s8_u8(lo), vreinterpretq_s8_u8(hi));
      }
      break;
    case FG_TYPE_IQ4_NL:
      for (size_t k = k0; k < k1; k++) {
        const uint8_t *b = row + k * 18;
        const size_t e = FG_NQ_AT(k - k0);
        sg->dw[e] = fg_nq_h2f(b);
        uint8x16_t lo, hi;
        fg_nq_nibbles(b + 2, &lo, &hi);
        fg_nq_put(sg->v + 32 * e, fg_nq_iq4(lo), fg_nq_iq4(hi));
      }
      break;
    case FG_TYPE_IQ4_XS:
      for (size_t k = k0; k < k1; k++) {
        const uint8_t *b = row + (k / 8) * 136;
        const size_t e = FG_NQ_AT(k - k0);
        const int ib = (int)(k % 8);
        const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xf) | (((b[2] | b[3] << 8) >> (2 * ib)) & 3) << 4;
        sg->dw[e] = fg_nq_h2f(b) * (float)(ls - 32);
        uint8x16_t lo, hi;
        fg_nq_nibbles(b + 8 + 16 * ib, &lo, &hi);
        fg_nq_put(sg->v + 32 * e, fg_nq_iq4(lo), fg_nq_iq4(hi));
      }
      break;
    case FG_TYPE_Q4_K:
    case FG_TYPE_Q5_K: {
      const int q5 = type == FG_TYPE_Q5_K;
      const size_t bsz = q5 ? 176 : 144;
      const uint8x16_t m4 = vdupq_n_u8(0x0f), b4 = vdupq_n_u8(0x10);
      for (size_t k = k0; k < k1; k += 8) {
        const uint8_t *b = row + (k / 8) * bsz;
        const float d = fg_nq_h2f(b), dmin = fg_nq_h2f(b + 2);
        const uint8_t *qs = b + (q5 ? 48 : 16);
        for (int j = 0; j < 8; j++) {
          const size_t e = FG_NQ_AT(k - k0 + (size_t)j);
          uint8_t sc, m;
          fg_k4_scale_min(j, b + 4, &sc, &m);
          sg->dw[e] = d * (float)sc;
          sg->mw[e] = -(dmin * (float)m);
          const uint8x16_t q0 = vld1q_u8(qs + 32 * (j / 2)), q1 = vld1q_u8(qs + 32 * (j / 2) + 16);
          uint8x16_t v0 = j % 2 ? vshrq_n_u8(q0, 4) : vandq_u8(q0, m4), v1 = j % 2 ? vshrq_n_u8(q1, 4) : vandq_u8(q1, m4);
          if (q5) {
            const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << j));
            v0 = vorrq_u8(v0, vandq_u8(vtstq_u8(vld1q_u8(b + 16), bit), b4));
            v1 = vorrq_u8(v1, vandq_u8(vtstq_u8(vld1q_u8(b + 32), bit), b4));
          }
          fg_nq_put(sg->v + 32 * e, vreinterpretq_s8_u8(v0), vreinterpretq_s8_u8(v1));
        }
      }
    } break;
    case FG_TYPE_Q6_K: {
      const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(0x03);
      const int8x16_t o32 = vdupq_n_s8(32);
      for (size_t k = k0; k < k1; k += 8) {
        const uint8_t *b = row + (k / 8) * 210;
        const int8_t *scales = (const int8_t *)(b + 192);
        const float d = fg_nq_h2f(b + 208);
        for (int sub = 0; sub < 8; sub++) {
          const int h = sub / 4, s = sub % 4;
          const size_t e = FG_NQ_AT(k - k0 + (size_t)sub);
          sg->dw[e] = d;
          sg->sa[e] = scales[8 * h + 2 * s];
          sg->sb[e] = scales[8 * h + 2 * s + 1];
          const uint8_t *ql = b + 64 * h + 32 * (s & 1), *qh = b + 128 + 32 * h;
          const int8x16_t sh = vdupq_n_s8((int8_t)(-2 * s));
          int8x16_t v[2];
          for (int i = 0; i < 2; i++) {
            const uint8x16_t l = vld1q_u8(ql + 16 * i);
            const uint8x16_t lo = s < 2 ? vandq_u8(l, m4) : vshrq_n_u8(l, 4);
            const uint8x16_t hi = vandq_u8(vshlq_u8(vld1q_u8(qh + 16 * i), sh), m3);
            v[i] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, vshlq_n_u8(hi, 4))), o32);
          }
          fg_nq_put(sg->v + 32 * e, v[0], v[1]);
        }
      }
    } break;
    case FG_TYPE_Q3_K: {
      const uint8x16_t m3 = vdupq_n_u8(0x03), four = vdupq_n_u8(4);
      for (size_t k = k0; k < k1; k += 8) {
        const uint8_t *b = row + (k / 8) * 110;
        int8_t sc[16];
        fg_q3_k_scales(b + 96, sc);
        const float d = fg_nq_h2f(b + 108);
        for (int sub = 0; sub < 8; sub++) {
          const int h = sub / 4, s = sub % 4;
          const size_t e = FG_NQ_AT(k - k0 + (size_t)sub);
          sg->dw[e] = d;
          sg->sa[e] = sc[8 * h + 2 * s];
          sg->sb[e] = sc[8 * h + 2 * s + 1];
          const int8x16_t sh = vdupq_n_s8((int8_t)(-2 * s));
          const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << (4 * h + s)));
          int8x16_t v[2];
          for (int i = 0; i < 2; i++) {
            const uint8x16_t q = vandq_u8(vshlq_u8(vld1q_u8(b + 32 + 32 * h + 16 * i), sh), m3);
            const uint8x16_t off = vbicq_u8(four, vtstq_u8(vld1q_u8(b + 16 * i), bit)); /* 4 where the bit is clear */
            v[i] = vsubq_s8(vreinterpretq_s8_u8(q), vreinterpretq_s8_u8(off));
          }
          fg_nq_put(sg->v + 32 * e, v[0], v[1]);
        }
      }
    } break;
    case FG_TYPE_Q2_K: {
      const uint8x16_t m3 = vdupq_n_u8(0x03);
      for (size_t k = k0; k < k1; k += 8) {
        const uint8_t *b = row + (k / 8) * 84;
        const float d = fg_nq_h2f(b + 80), mdmin = -fg_nq_h2f(b + 82);
        for (int sub = 0; sub < 8; sub++) {
          const int h = sub / 4, s = sub % 4;
          const size_t e = FG_NQ_AT(k - k0 + (size_t)sub);
          const uint8_t sa = b[8 * h + 2 * s], sb = b[8 * h + 2 * s + 1];
          sg->dw[e] = d;
          sg->mw[e] = mdmin;
          sg->sa[e] = sa & 0xf;
          sg->sb[e] = sb & 0xf;
          sg->ma[e] = sa >> 4;
          sg->mb[e] = sb >> 4;
          const int8x16_t sh = vdupq_n_s8((int8_t)(-2 * s));
          const uint8x16_t q0 = vandq_u8(vshlq_u8(vld1q_u8(b + 16 + 32 * h), sh), m3);
          const uint8x16_t q1 = vandq_u8(vshlq_u8(vld1q_u8(b + 32 + 32 * h), sh), m3);
          fg_nq_put(sg->v + 32 * e, vreinterpretq_s8_u8(q0), vreinterpretq_s8_u8(q1));
        }
      }
    } break;
    default: break;
  }
#undef FG_NQ_AT
}

/* the exact int8 dot of 16 weights and 16 activations, spread over the lanes */
FG_NEON_INLINE int32x4_t fg_nq_hdot(int8x16_t w, int8x16_t x) {
#if FG_NEON_HAVE_DOTPROD
  return vdotq_s32(vdupq_n_s32(0), w, x);
#else
  return vpaddlq_s16(vmlal_s8(vmull_s8(vget_low_s8(w), vget_low_s8(x)), vget_high_s8(w), vget_high_s8(x)));
#endif
}

/* sum of the first 16 of 32 activation bytes */
FG_NEON_INLINE int32_t fg_nq_half_sum(const int8_t *qx) {
  return fg_vaddvq_s32(vpaddlq_s16(vpaddlq_s8(vld1q_s8(qx))));
}

FG_NEON_INLINE float32x4_t fg_load4(const float *y, size_t n) {
  if (n >= 4) return vreinterpretq_f32_u8(vld1q_u8((const uint8_t *)y));
  float tmp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (size_t i = 0; i < n; i++) tmp[i] = y[i];
  return vld1q_f32(tmp);
}

/* The int32 block sums of the 4 staged rows (row r: w<2r>, w<2r+1>; lane r = row r) against one activation
 * block. Named vectors, not an array: GCC at -O2 copied such an array to the stack every block. */
FG_NEON_INLINE int32x4_t fg_nq_isum(int8x16_t w0, int8x16_t w1, int8x16_t w2, int8x16_t w3, int8x16_t w4, int8x16_t w5,
                                    int8x16_t w6, int8x16_t w7, int8x16_t x0, int8x16_t x1, const int fl, int32x4_t sa,
                                    int32x4_t sb) {
  if (fl & FG_Q8W_SUB) {
    const int32x4_t ia = fg_vsum4_s32(fg_nq_hdot(w0, x0), fg_nq_hdot(w2, x0), fg_nq_hdot(w4, x0), fg_nq_hdot(w6, x0));
    const int32x4_t ib = fg_vsum4_s32(fg_nq_hdot(w1, x1), fg_nq_hdot(w3, x1), fg_nq_hdot(w5, x1), fg_nq_hdot(w7, x1));
    return vmlaq_s32(vmulq_s32(ia, sa), ib, sb);
  }
  return fg_vsum4_s32(fg_qdot(w0, w1, x0, x1), fg_qdot(w2, w3, x0, x1), fg_qdot(w4, w5, x0, x1), fg_qdot(w6, w7, x0, x1));
}

/* The spec's float steps of one block for one activation: s = fma(dw dx, isum, s), then the minimum. */
FG_NEON_INLINE float32x4_t fg_nq_fma(float32x4_t acc, const fg_nq_seg *sg, size_t e, int32x4_t isum, const int8_t *xq,
                                     float dx, int32_t xsum, const int fl) {
  acc = vfmaq_f32(acc, vmulq_n_f32(vld1q_f32(sg->dw + e), dx), vcvtq_f32_s32(isum));
  if (fl & FG_Q8W_MIN1) acc = vfmaq_f32(acc, vmulq_n_f32(vld1q_f32(sg->mw + e), dx), vdupq_n_f32((float)xsum));
  if (fl & FG_Q8W_MIN2) {
    const int32_t xa = fg_nq_half_sum(xq), xb = xsum - xa;
    const int32x4_t ms = vmlaq_n_s32(vmulq_n_s32(vld1q_s32(sg->ma + e), xa), vld1q_s32(sg->mb + e), xb);
    acc = vfmaq_f32(acc, vmulq_n_f32(vld1q_f32(sg->mw + e), dx), vcvtq_f32_s32(ms));
  }
  return acc;
}

/* The staged segment (blocks k0..k1) against activations b0 and, with B == 2, b0 + 1; rows t0.. (nr). */
FG_NEON_INLINE void fg_nq_seg_run(const fg_mm_args *a, const fg_nq_seg *sg, size_t t0, size_t nr, size_t k0, size_t k1,
                                  size_t b0, const int B, const int fl) {
  const size_t stride = fg_act_q8_row_bytes(a->cols);
  const fg_act_q8_row xa = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b0 * stride, a->cols);
  const fg_act_q8_row xb = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b0 + (B == 2)) * stride, a->cols);
  float *ya = a->y + b0 * a->ldy + t0, *yb = ya + a->ldy;
  float32x4_t acc0 = k0 == 0 ? vdupq_n_f32(0.0f) : fg_load4(ya, nr);
  float32x4_t acc1 = B == 2 && k0 != 0 ? fg_load4(yb, nr) : vdupq_n_f32(0.0f);
  for (size_t k = k0; k < k1; k++) {
    const size_t e = (k - k0) * FG_Q_ROWS;
    const int8_t *wv = sg->v + 32 * e;
    const int8x16_t w0 = vld1q_s8(wv), w1 = vld1q_s8(wv + 16), w2 = vld1q_s8(wv + 32), w3 = vld1q_s8(wv + 48);
    const int8x16_t w4 = vld1q_s8(wv + 64), w5 = vld1q_s8(wv + 80), w6 = vld1q_s8(wv + 96), w7 = vld1q_s8(wv + 112);
    int32x4_t sa = vdupq_n_s32(1), sb = sa;
    if (fl & FG_Q8W_SUB) {
      sa = vld1q_s32(sg->sa + e);
      sb = vld1q_s32(sg->sb + e);
    }
    {
      const int8_t *xq = xa.qs + 32 * k;
      const int32x4_t isum = fg_nq_isum(w0, w1, w2, w3, w4, w5, w6, w7, vld1q_s8(xq), vld1q_s8(xq + 16), fl, sa, sb);
      acc0 = fg_nq_fma(acc0, sg, e, isum, xq, xa.d[k], xa.isum[k], fl);
    }
    if (B == 2) {
      const int8_t *xq = xb.qs + 32 * k;
      const int32x4_t isum = fg_nq_isum(w0, w1, w2, w3, w4, w5, w6, w7, vld1q_s8(xq), vld1q_s8(xq + 16), fl, sa, sb);
      acc1 = fg_nq_fma(acc1, sg, e, isum, xq, xb.d[k], xb.isum[k], fl);
    }
  }
  fg_store4(ya, nr, acc0);
  if (B == 2) fg_store4(yb, nr, acc1);
}

#if FG_NEON_HAVE_DOTPROD
/* The dot-product gemm: a staged segment re-laid for the dot product by element. Per block 8 vectors, g =
 * 0..7 holding bytes 4g..4g+3 of rows 0..3 (lane r = row r); sdot v.4s, w_g.16b, x.4b[g % 4] then adds
 * each row's 4-product dot of the group to its own lane, so a block's 4 row sums need no reduction
 * (the packed Q8_0 layout's idea, made per segment from the staged values). */
FG_NEON_INLINE void fg_nq_interleave(const fg_nq_seg *sg, size_t nk, int8_t *vt) {
  for (size_t kk = 0; kk < nk; kk++) {
    const int32_t *src = (const int32_t *)(const void *)(sg->v + kk * FG_Q_ROWS * 32); /* (row, 8 words) */
    int8_t *dst = vt + kk * FG_Q_ROWS * 32;
    for (int h = 0; h < 2; h++) { /* words 4h .. 4h + 3 of the 4 rows: a 4 x 4 transpose */
      const int32x4x2_t t01 = vtrnq_s32(vld1q_s32(src + 4 * h), vld1q_s32(src + 8 + 4 * h));
      const int32x4x2_t t23 = vtrnq_s32(vld1q_s32(src + 16 + 4 * h), vld1q_s32(src + 24 + 4 * h));
      vst1q_s32((int32_t *)(void *)(dst + 64 * h), vcombine_s32(vget_low_s32(t01.val[0]), vget_low_s32(t23.val[0])));
      vst1q_s32((int32_t *)(void *)(dst + 64 * h + 16), vcombine_s32(vget_low_s32(t01.val[1]), vget_low_s32(t23.val[1])));
      vst1q_s32((int32_t *)(void *)(dst + 64 * h + 32), vcombine_s32(vget_high_s32(t01.val[0]), vget_high_s32(t23.val[0])));
      vst1q_s32((int32_t *)(void *)(dst + 64 * h + 48), vcombine_s32(vget_high_s32(t01.val[1]), vget_high_s32(t23.val[1])));
    }
  }
}

/* acc + (row lanes) the dot of group w with bytes 4L..4L+3 of x (L constant) */
#  if FG_NEON_A64
#    define FG_NQ_SDOT(acc, w, x, L) vdotq_laneq_s32((acc), (w), (x), (L))
#  else
#    define FG_NQ_SDOT(acc, w, x, L) vdotq_lane_s32((acc), (w), (L) < 2 ? vget_low_s8(x) : vget_high_s8(x), (L) % 2)
#  endif

/* The re-laid segment (blocks k0..k1) against activations b0 .. b0 + B (B = 1, 2 or, aarch64, 4). */
FG_NEON_INLINE void fg_nq_seg_run_dp(const fg_mm_args *a, const fg_nq_seg *sg, const int8_t *vt, size_t t0, size_t nr,
                                     size_t k0, size_t k1, size_t b0, const int B, const int fl) {
  const size_t stride = fg_act_q8_row_bytes(a->cols);
#  define FG_NQ_X(j)                                                                                              \
    const fg_act_q8_row x##j = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b0 + (B > (j) ? (j) : 0)) * stride, \
                                                a->cols);                                                         \
    float *y##j = a->y + (b0 + (B > (j) ? (j) : 0)) * a->ldy + t0;                                                \
    float32x4_t acc##j = k0 == 0 ? vdupq_n_f32(0.0f) : fg_load4(y##j, nr)
  FG_NQ_X(0);
  FG_NQ_X(1);
  FG_NQ_X(2);
  FG_NQ_X(3);
#  undef FG_NQ_X
  const int32x4_t z = vdupq_n_s32(0);
  for (size_t k = k0; k < k1; k++) {
    const size_t e = (k - k0) * FG_Q_ROWS;
    const int8_t *wk = vt + 32 * e;
    const int8x16_t w0 = vld1q_s8(wk), w1 = vld1q_s8(wk + 16), w2 = vld1q_s8(wk + 32), w3 = vld1q_s8(wk + 48);
    const int8x16_t w4 = vld1q_s8(wk + 64), w5 = vld1q_s8(wk + 80), w6 = vld1q_s8(wk + 96), w7 = vld1q_s8(wk + 112);
    int32x4_t sa = z, sb = z;
    if (fl & FG_Q8W_SUB) {
      sa = vld1q_s32(sg->sa + e);
      sb = vld1q_s32(sg->sb + e);
    }
#  define FG_NQ_B(j)                                                                                              \
    do {                                                                                                          \
      const int8_t *xq = x##j.qs + 32 * k;                                                                        \
      const int8x16_t xv0 = vld1q_s8(xq), xv1 = vld1q_s8(xq + 16);                                                \
      int32x4_t isum;                                                                                             \
      if (fl & FG_Q8W_SUB) {                                                                                       \
        const int32x4_t ia = FG_NQ_SDOT(FG_NQ_SDOT(FG_NQ_SDOT(FG_NQ_SDOT(z, w0, xv0, 0), w1, xv0, 1), w2, xv0, 2), w3, xv0, 3); \
        const int32x4_t ib = FG_NQ_SDOT(FG_NQ_SDOT(FG_NQ_SDOT(FG_NQ_SDOT(z, w4, xv1, 0), w5, xv1, 1), w6, xv1, 2), w7, xv1, 3); \
        isum = vmlaq_s32(vmulq_s32(ia, sa), ib, sb);                                                              \
      } else {                                                                                                    \
        isum = FG_NQ_SDOT(FG_NQ_SDOT(FG_NQ_SDOT(FG_NQ_SDOT(z, w0, xv0, 0), w1, xv0, 1), w2, xv0, 2), w3, xv0, 3); \
        isum = FG_NQ_SDOT(FG_NQ_SDOT(FG_NQ_SDOT(FG_NQ_SDOT(isum, w4, xv1, 0), w5, xv1, 1), w6, xv1, 2), w7, xv1, 3); \
      }                                                                                                           \
      acc##j = fg_nq_fma(acc##j, sg, e, isum, xq, x##j.d[k], x##j.isum[k], fl);                                   \
    } while (0)
    FG_NQ_B(0);
    if (B > 1) FG_NQ_B(1);
    if (B > 2) {
      FG_NQ_B(2);
      FG_NQ_B(3);
    }
#  undef FG_NQ_B
  }
  fg_store4(y0, nr, acc0);
  if (B > 1) fg_store4(y1, nr, acc1);
  if (B > 2) {
    fg_store4(y2, nr, acc2);
    fg_store4(y3, nr, acc3);
  }
}
#  define FG_NQ_DP_B (FG_NEON_A64 ? 4 : 2) /* activations per pass: 8 weight registers + 2 per activation */
#endif

FG_NEON_INLINE void fg_nq_run(const fg_mm_args *a, size_t i0, size_t i1, const uint32_t type, const int gemm) {
  const int fl = fg_q8w_flags(type);
  const size_t nblk = a->cols / 32;
  const uint32_t *safe = fg_q8_flags(a->act, a->cols, a->nb);
  fg_nq_seg sg;
#if FG_NEON_HAVE_DOTPROD
  int8_t vt[FG_NQ_KSEG * FG_Q_ROWS * 32] __attribute__((aligned(16))); /* (kk, group, row, 4): fg_nq_interleave */
#endif
  for (size_t t0 = i0; t0 < i1; t0 += FG_Q_ROWS) {
    const size_t nr = FG_MIN((size_t)FG_Q_ROWS, i1 - t0);
    const uint8_t *rp[FG_Q_ROWS];
    fg_tile_rows(a, t0, nr, FG_Q_ROWS, rp);
    for (size_t k0 = 0; k0 < nblk; k0 += FG_NQ_KSEG) {
      const size_t k1 = FG_MIN(k0 + FG_NQ_KSEG, nblk);
      for (size_t r = 0; r < FG_Q_ROWS; r++) fg_nq_stage(&sg, type, rp[r], k0, k1, r);
      size_t b = 0;
#if FG_NEON_HAVE_DOTPROD
      if (gemm) {
        fg_nq_interleave(&sg, k1 - k0, vt);
        for (; b + FG_NQ_DP_B <= a->nb; b += FG_NQ_DP_B) fg_nq_seg_run_dp(a, &sg, vt, t0, nr, k0, k1, b, FG_NQ_DP_B, fl);
        for (; b + 2 <= a->nb; b += 2) fg_nq_seg_run_dp(a, &sg, vt, t0, nr, k0, k1, b, 2, fl);
        for (; b < a->nb; b++) fg_nq_seg_run_dp(a, &sg, vt, t0, nr, k0, k1, b, 1, fl);
      }
#endif
      if (gemm)
        for (; b + 2 <= a->nb; b += 2) fg_nq_seg_run(a, &sg, t0, nr, k0, k1, b, 2, fl);
      for (; b < a->nb; b++) fg_nq_seg_run(a, &sg, t0, nr, k0, k1, b, 1, fl);
    }
    if (FG_NEON_FTZ) /* armv7, tiny activation scales: those outputs by the spec in scalar VFP code */
      for (size_t b = 0; b < a->nb; b++)
        if (!safe[b]) {
          const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * fg_act_q8_row_bytes(a->cols), a->cols);
          for (size_t r = 0; r < nr; r++) a->y[b * a->ldy + t0 + r] = fg_spec_dot_q8(a->type, rp[r], xr, a->cols);
        }
  }
}

/* Q5_0 decode without staging (as x86's fg_q5_0_vec_direct; Q5_0 holds most of the Q4_K_M file's
 * matrices): per row and block the unsigned values u = nibble | fifth bit << 4 (0..31) straight into the
 * dot, then isum = sum u x - 16 * sum x = the spec's sum (u - 16) x, exactly; scales and fmas as
 * fg_qtile4 (lane r = row r). */
FG_NEON_INLINE void fg_q5_0_u(const uint8_t *b, uint8x16_t bits, int8x16_t *u0, int8x16_t *u1) {
  uint32_t h32;
  memcpy(&h32, b + 2, 4);
#if FG_NEON_A64
  static const uint8_t k_lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  const uint8x16_t h = vreinterpretq_u8_u32(vdupq_n_u32(h32));
  const uint8x16_t hl = vqtbl1q_u8(h, vld1q_u8(k_lo)), hh = vqtbl1q_u8(h, vaddq_u8(vld1q_u8(k_lo), vdupq_n_u8(2)));
#else
  const uint8x8_t h = vreinterpret_u8_u32(vdup_n_u32(h32));
  const uint8x16_t hl = vcombine_u8(vdup_lane_u8(h, 0), vdup_lane_u8(h, 1));
  const uint8x16_t hh = vcombine_u8(vdup_lane_u8(h, 2), vdup_lane_u8(h, 3));
#endif
  const uint8x16_t b4 = vdupq_n_u8(0x10);
  const uint8x16_t q = vld1q_u8(b + 6);
  *u0 = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q, vdupq_n_u8(0x0f)), vandq_u8(vtstq_u8(hl, bits), b4)));
  *u1 = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q, 4), vandq_u8(vtstq_u8(hh, bits), b4)));
}

/* 4 rows (lane r = row r) x 1 activation: out[0..3] */
static void fg_q5_0_vec4(const uint8_t *p0, const uint8_t *p1, const uint8_t *p2, const uint8_t *p3, fg_act_q8_row xr,
                         size_t nblk, float *out) {
  static const uint8_t k_bits[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bits = vld1q_u8(k_bits);
  float32x4_t acc = vdupq_n_f32(0.0f);
  uint16x4_t h = vdup_n_u16(0);
#if FG_NEON_HAVE_DOTPROD
  /* running sums per row, a block's dots the difference of two reductions (as fg_qtile4) */
  int32x4_t c0 = vdupq_n_s32(0), c1 = c0, c2 = c0, c3 = c0, prev = c0;
#endif
  for (size_t k = 0; k < nblk; k++) {
    const int8x16_t x0 = vld1q_s8(xr.qs + 32 * k), x1 = vld1q_s8(xr.qs + 32 * k + 16);
    int8x16_t u0, u1;
    h = vld1_lane_u16((const uint16_t *)(const void *)p0, h, 0);
    h = vld1_lane_u16((const uint16_t *)(const void *)p1, h, 1);
    h = vld1_lane_u16((const uint16_t *)(const void *)p2, h, 2);
    h = vld1_lane_u16((const uint16_t *)(const void *)p3, h, 3);
#if FG_NEON_HAVE_DOTPROD
    fg_q5_0_u(p0, bits, &u0, &u1);
    c0 = vdotq_s32(vdotq_s32(c0, u0, x0), u1, x1);
    fg_q5_0_u(p1, bits, &u0, &u1);
    c1 = vdotq_s32(vdotq_s32(c1, u0, x0), u1, x1);
    fg_q5_0_u(p2, bits, &u0, &u1);
    c2 = vdotq_s32(vdotq_s32(c2, u0, x0), u1, x1);
    fg_q5_0_u(p3, bits, &u0, &u1);
    c3 = vdotq_s32(vdotq_s32(c3, u0, x0), u1, x1);
    const int32x4_t red = fg_vsum4_s32(c0, c1, c2, c3);
    int32x4_t isum = vsubq_s32(red, prev);
    prev = red;
#else
    fg_q5_0_u(p0, bits, &u0, &u1);
    const int32x4_t d0 = fg_qdot(u0, u1, x0, x1);
    fg_q5_0_u(p1, bits, &u0, &u1);
    const int32x4_t d1 = fg_qdot(u0, u1, x0, x1);
    fg_q5_0_u(p2, bits, &u0, &u1);
    const int32x4_t d2 = fg_qdot(u0, u1, x0, x1);
    fg_q5_0_u(p3, bits, &u0, &u1);
    const int32x4_t d3 = fg_qdot(u0, u1, x0, x1);
    int32x4_t isum = fg_vsum4_s32(d0, d1, d2, d3);
#endif
    isum = vsubq_s32(isum, vdupq_n_s32(16 * xr.isum[k]));
    const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(h));
    acc = vfmaq_f32(acc, vmulq_n_f32(dw, xr.d[k]), vcvtq_f32_s32(isum));
    p0 += 22;
    p1 += 22;
    p2 += 22;
    p3 += 22;
  }
  vst1q_u8((uint8_t *)out, vreinterpretq_u8_f32(acc));
}

static void fg_q5_0_vec_direct(const fg_mm_args *a, size_t i0, size_t i1) {
  const size_t stride = fg_act_q8_row_bytes(a->cols), nblk = a->cols / 32;
  const uint32_t *safe = fg_q8_flags(a->act, a->cols, a->nb);
  for (size_t b = 0; b < a->nb; b++) {
    const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
    float *y = a->y + b * a->ldy;
    for (size_t t0 = i0; t0 < i1; t0 += FG_Q_ROWS) {
      const size_t nr = FG_MIN((size_t)FG_Q_ROWS, i1 - t0);
      const uint8_t *rp[FG_Q_ROWS];
      fg_tile_rows(a, t0, nr, FG_Q_ROWS, rp);
      if (FG_NEON_FTZ && !safe[b]) { /* armv7, tiny activation scales: the spec in scalar VFP code */
        for (size_t r = 0; r < nr; r++) y[t0 + r] = fg_spec_dot_q8(a->type, rp[r], xr, a->cols);
      } else if (nr == FG_Q_ROWS) {
        fg_q5_0_vec4(rp[0], rp[1], rp[2], rp[3], xr, nblk, y + t0);
      } else {
        float o[4];
        fg_q5_0_vec4(rp[0], rp[1], rp[2], rp[3], xr, nblk, o);
        for (size_t r = 0; r < nr; r++) y[t0 + r] = o[r];
      }
    }
  }
}

#define FG_NQ_KERNELS(name, type)                                                                              \
  static void fg_##name##_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_nq_run(a, i0, i1, type, 0); } \
  static void fg_##name##_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_nq_run(a, i0, i1, type, 1); }
FG_NQ_KERNELS(q4_1, FG_TYPE_Q4_1)
static void fg_q5_0_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_nq_run(a, i0, i1, FG_TYPE_Q5_0, 1); }
FG_NQ_KERNELS(q5_1, FG_TYPE_Q5_1)
FG_NQ_KERNELS(q2_k, FG_TYPE_Q2_K)
FG_NQ_KERNELS(q3_k, FG_TYPE_Q3_K)
FG_NQ_KERNELS(q4_k, FG_TYPE_Q4_K)
FG_NQ_KERNELS(q5_k, FG_TYPE_Q5_K)
FG_NQ_KERNELS(q6_k, FG_TYPE_Q6_K)
FG_NQ_KERNELS(iq4_nl, FG_TYPE_IQ4_NL)
FG_NQ_KERNELS(iq4_xs, FG_TYPE_IQ4_XS)
#undef FG_NQ_KERNELS

#if FG_NEON_A64 && FG_NEON_HAVE_DOTPROD
// ----------------------------------------------------------------------------
// Packed Q5_0 and Q4_K (aarch64 with SDOT; load-time repacking, as Q8_0's fg_pk_*): strips of 16 rows, four
// quads of 4 rows, so that one SDOT by element of a quad's register (4 rows x 4 weights) against the
// activation's bytes 4c..4c+3 adds to each row's lane: no staging and no reduction. The copies keep the
// file's values and scales (Q4_K: 2.8 % larger, the 6-bit scales unpacked), and the values are decoded in
// registers:
//   Q5_0, per block (352 bytes): the 16 f16 scales; per quad a register of fifth bits (byte 4i + t: bit c
//        of element 4c + t of row i); per quad and c = 0..3 a register of the rows' qs[4c..4c+3] (low
//        nibbles: group c, high nibbles: group c + 4). u = q + 16 (0..31) goes into SDOT as a signed byte,
//        and 16 * sum x is taken off;
//   Q4_K, per superblock (2,368 bytes): the 16 rows' f16 d, f16 dmin, the 6-bit scales sc[8][16] and
//        minimums m[8][16] as bytes, then per sub-block the nibbles as Q5_0's (u = q, 0..15).
// Each output is fma(dw * dx, (float)isum, acc) (Q4_K: dw = d * sc, then fma(mw * dx, (float)sum x, acc)
// with mw = -(dmin * m)) in block order: the q8 spec bit for bit. The gemm runs the same strip against each
// activation in turn (the strip stays in L1); row lists and ranges inside a strip read the file's rows.

FG_NEON_INLINE uint32_t fg_px_ld32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static void fg_px_pack(uint32_t type, const uint8_t *w, size_t row_bytes, size_t cols, size_t r0, size_t r1,
                       uint8_t *dst) {
  for (size_t s = r0 / FG_PK_ROWS; s < r1 / FG_PK_ROWS; s++)
    for (size_t r = 0; r < FG_PK_ROWS; r++) {
      const uint8_t *row = w + (s * FG_PK_ROWS + r) * row_bytes;
      const size_t q = r / 4, i = r % 4;
      if (type == FG_TYPE_Q5_0) {
        const size_t nblk = cols / 32;
        for (size_t k = 0; k < nblk; k++) {
          const uint8_t *blk = row + k * 22;
          uint8_t *o = dst + (s * nblk + k) * FG_PX_Q5_BLOCK;
          memcpy(o + 2 * r, blk, 2);
          const uint32_t qh = fg_px_ld32(blk + 2);
          for (unsigned t = 0; t < 4; t++) o[32 + 16 * q + 4 * i + t] = fg_qh_bits4(qh, t);
          for (size_t c = 0; c < 4; c++) memcpy(o + 96 + 64 * q + 16 * c + 4 * i, blk + 6 + 4 * c, 4);
        }
        continue;
      }
      const size_t nsb = cols / 256;
      for (size_t K = 0; K < nsb; K++) {
        const fg_block_q4_k *b = (const fg_block_q4_k *)(const void *)row + K;
        uint8_t *o = dst + (s * nsb + K) * FG_PX_K4_BLOCK;
        memcpy(o + 2 * r, &b->d, 2);
        memcpy(o + 32 + 2 * r, &b->dmin, 2);
        for (int j = 0; j < 8; j++) {
          fg_k4_scale_min(j, b->scales, o + 64 + 16 * j + r, o + 192 + 16 * j + r);
          const unsigned p = (unsigned)j / 2, sh = 4 * ((unsigned)j % 2);
          for (size_t c = 0; c < 4; c++) { /* 4 bytes at once: nibble `j % 2` of elements 4c.. and 16 + 4c.. */
            const uint32_t lo = (fg_px_ld32(b->qs + 32 * p + 4 * c) >> sh) & 0x0f0f0f0fu;
            const uint32_t hi = (fg_px_ld32(b->qs + 32 * p + 16 + 4 * c) >> sh) & 0x0f0f0f0fu;
            const uint32_t v = lo | hi << 4;
            memcpy(o + FG_PX_K4_HEAD + 256 * (size_t)j + 64 * q + 16 * c + 4 * i, &v, 4);
          }
        }
      }
    }
}

static void fg_pk_pack(uint32_t type, const uint8_t *w, size_t row_bytes, size_t cols, size_t r0, size_t r1,
                       uint8_t *dst) {
  if (type == FG_TYPE_Q8_0) fg_pk_pack_q8_0(type, w, row_bytes, cols, r0, r1, dst);
  else fg_px_pack(type, w, row_bytes, cols, r0, r1, dst);
}

/* one quad's Q5_0 block: sum u * x over the 32 elements (rows in lanes); bit c of h shifted to bit 4 is
 * group c's fifth bit */
FG_NEON_INLINE int32x4_t fg_px_q5_quad(const uint8_t *n, uint8x16_t h, int8x16_t x0, int8x16_t x1) {
  const uint8x16_t m4 = vdupq_n_u8(0x0f), m10 = vdupq_n_u8(0x10);
  const uint8x16_t n0 = vld1q_u8(n), n1 = vld1q_u8(n + 16), n2 = vld1q_u8(n + 32), n3 = vld1q_u8(n + 48);
  int32x4_t s = vdupq_n_s32(0);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vbslq_u8(m10, vshlq_n_u8(h, 4), vandq_u8(n0, m4))), x0, 0);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vbslq_u8(m10, vshlq_n_u8(h, 3), vandq_u8(n1, m4))), x0, 1);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vbslq_u8(m10, vshlq_n_u8(h, 2), vandq_u8(n2, m4))), x0, 2);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vbslq_u8(m10, vshlq_n_u8(h, 1), vandq_u8(n3, m4))), x0, 3);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vbslq_u8(m10, h, vshrq_n_u8(n0, 4))), x1, 0);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vbslq_u8(m10, vshrq_n_u8(h, 1), vshrq_n_u8(n1, 4))), x1, 1);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vbslq_u8(m10, vshrq_n_u8(h, 2), vshrq_n_u8(n2, 4))), x1, 2);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vbslq_u8(m10, vshrq_n_u8(h, 3), vshrq_n_u8(n3, 4))), x1, 3);
  return s;
}

/* one quad's Q4_K sub-block: sum u * x */
FG_NEON_INLINE int32x4_t fg_px_k4_quad(const uint8_t *n, int8x16_t x0, int8x16_t x1) {
  const uint8x16_t m4 = vdupq_n_u8(0x0f);
  const uint8x16_t n0 = vld1q_u8(n), n1 = vld1q_u8(n + 16), n2 = vld1q_u8(n + 32), n3 = vld1q_u8(n + 48);
  int32x4_t s = vdupq_n_s32(0);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vandq_u8(n0, m4)), x0, 0);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vandq_u8(n1, m4)), x0, 1);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vandq_u8(n2, m4)), x0, 2);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vandq_u8(n3, m4)), x0, 3);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vshrq_n_u8(n0, 4)), x1, 0);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vshrq_n_u8(n1, 4)), x1, 1);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vshrq_n_u8(n2, 4)), x1, 2);
  s = vdotq_laneq_s32(s, vreinterpretq_s8_u8(vshrq_n_u8(n3, 4)), x1, 3);
  return s;
}

/* the 16 outputs of a packed Q5_0 strip st against one activation (the quads' sums in acc0..acc3) */
FG_NEON_INLINE void fg_px_strip_q5(const uint8_t *st, fg_act_q8_row xr, size_t cols, float *y) {
  float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  for (size_t k = 0; k < cols / 32; k++) {
    const uint8_t *o = st + k * FG_PX_Q5_BLOCK;
    const int8x16_t x0 = vld1q_s8(xr.qs + 32 * k), x1 = vld1q_s8(xr.qs + 32 * k + 16);
    const int32x4_t off = vdupq_n_s32(16 * xr.isum[k]);
    const float32x4_t dx = vdupq_n_f32(xr.d[k]);
    const uint16x8_t h01 = vld1q_u16((const uint16_t *)(const void *)o), h23 = vld1q_u16((const uint16_t *)(const void *)(o + 16));
#  define FG_PX_Q5_QUAD(acc, q, dw)                                                                             \
    acc = vfmaq_f32(acc, vcvtq_f32_s32(vsubq_s32(fg_px_q5_quad(o + 96 + 64 * (q), vld1q_u8(o + 32 + 16 * (q)), x0, x1), off)), \
                    vmulq_f32((dw), dx))
    FG_PX_Q5_QUAD(acc0, 0, vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h01))));
    FG_PX_Q5_QUAD(acc1, 1, vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h01))));
    FG_PX_Q5_QUAD(acc2, 2, vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h23))));
    FG_PX_Q5_QUAD(acc3, 3, vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h23))));
#  undef FG_PX_Q5_QUAD
  }
  vst1q_f32(y, acc0);
  vst1q_f32(y + 4, acc1);
  vst1q_f32(y + 8, acc2);
  vst1q_f32(y + 12, acc3);
}

/* the 16 outputs of a packed Q4_K strip st against one activation */
FG_NEON_INLINE void fg_px_strip_k4(const uint8_t *st, fg_act_q8_row xr, size_t cols, float *y) {
  float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  for (size_t K = 0; K < cols / 256; K++) {
    const uint8_t *o = st + K * FG_PX_K4_BLOCK;
    const uint16x8_t d01 = vld1q_u16((const uint16_t *)(const void *)o), d23 = vld1q_u16((const uint16_t *)(const void *)(o + 16));
    const uint16x8_t m01 = vld1q_u16((const uint16_t *)(const void *)(o + 32)), m23 = vld1q_u16((const uint16_t *)(const void *)(o + 48));
    const float32x4_t d0 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(d01))), d1 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(d01)));
    const float32x4_t d2 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(d23))), d3 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(d23)));
    const float32x4_t n0 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(m01))), n1 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(m01)));
    const float32x4_t n2 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(m23))), n3 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(m23)));
    for (int j = 0; j < 8; j++) {
      const size_t k = 8 * K + (size_t)j;
      const int8x16_t x0 = vld1q_s8(xr.qs + 32 * k), x1 = vld1q_s8(xr.qs + 32 * k + 16);
      const float32x4_t dx = vdupq_n_f32(xr.d[k]), xs = vdupq_n_f32((float)xr.isum[k]);
      const uint8x16_t sc8 = vld1q_u8(o + 64 + 16 * j), m8 = vld1q_u8(o + 192 + 16 * j);
      const uint16x8_t sl = vmovl_u8(vget_low_u8(sc8)), sh = vmovl_u8(vget_high_u8(sc8));
      const uint16x8_t ml = vmovl_u8(vget_low_u8(m8)), mh = vmovl_u8(vget_high_u8(m8));
      const uint8_t *n = o + FG_PX_K4_HEAD + 256 * j;
      /* dw = d * sc, mw = -(dmin * m): fg_q8w_decode's float operations */
#  define FG_PX_K4_QUAD(acc, q, d, dmin, sc16, m16, half)                                                      \
    do {                                                                                                       \
      const float32x4_t dw = vmulq_f32((d), vcvtq_f32_u32(half(sc16)));                                        \
      const float32x4_t mw = vnegq_f32(vmulq_f32((dmin), vcvtq_f32_u32(half(m16))));                           \
      acc = vfmaq_f32(acc, vcvtq_f32_s32(fg_px_k4_quad(n + 64 * (q), x0, x1)), vmulq_f32(dw, dx));             \
      acc = vfmaq_f32(acc, xs, vmulq_f32(mw, dx));                                                             \
    } while (0)
#  define FG_PX_LO(v) vmovl_u16(vget_low_u16(v))
#  define FG_PX_HI(v) vmovl_u16(vget_high_u16(v))
      FG_PX_K4_QUAD(acc0, 0, d0, n0, sl, ml, FG_PX_LO);
      FG_PX_K4_QUAD(acc1, 1, d1, n1, sl, ml, FG_PX_HI);
      FG_PX_K4_QUAD(acc2, 2, d2, n2, sh, mh, FG_PX_LO);
      FG_PX_K4_QUAD(acc3, 3, d3, n3, sh, mh, FG_PX_HI);
#  undef FG_PX_K4_QUAD
#  undef FG_PX_LO
#  undef FG_PX_HI
    }
  }
  vst1q_f32(y, acc0);
  vst1q_f32(y + 4, acc1);
  vst1q_f32(y + 8, acc2);
  vst1q_f32(y + 12, acc3);
}

/* Outputs i0 <= i < i1 of a packed Q5_0 / Q4_K matrix: whole strips from the copy, each against every
 * activation; the rest (and row lists, and matrices without a copy) by `rows` */
FG_NEON_INLINE void fg_px_run(const fg_mm_args *a, size_t i0, size_t i1, const uint32_t type, fg_mm_fn rows) {
  const size_t s0 = (i0 + FG_PK_ROWS - 1) / FG_PK_ROWS * FG_PK_ROWS, s1 = i1 / FG_PK_ROWS * FG_PK_ROWS;
  if (!a->packed || a->rows || s0 >= s1) {
    rows(a, i0, i1);
    return;
  }
  if (i0 < s0) rows(a, i0, s0);
  const size_t sbytes = fg_pk_size(type, FG_PK_ROWS, a->cols), stride = fg_act_q8_row_bytes(a->cols);
  for (size_t t = s0; t < s1; t += FG_PK_ROWS)
    for (size_t b = 0; b < a->nb; b++) {
      const uint8_t *st = a->packed + t / FG_PK_ROWS * sbytes;
      const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
      if (type == FG_TYPE_Q5_0) fg_px_strip_q5(st, xr, a->cols, a->y + b * a->ldy + t);
      else fg_px_strip_k4(st, xr, a->cols, a->y + b * a->ldy + t);
    }
  if (s1 < i1) rows(a, s1, i1);
}
static void fg_q5_0_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_px_run(a, i0, i1, FG_TYPE_Q5_0, fg_q5_0_vec_direct); }
static void fg_q5_0_gemm_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_px_run(a, i0, i1, FG_TYPE_Q5_0, fg_q5_0_gemm); }
static void fg_q4_k_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_px_run(a, i0, i1, FG_TYPE_Q4_K, fg_q4_k_vec); }
static void fg_q4_k_gemm_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_px_run(a, i0, i1, FG_TYPE_Q4_K, fg_q4_k_gemm); }
#  define FG_PX_TILE FG_PK_ROWS /* row ranges of whole strips */
#else
#  define fg_q5_0_vec_any fg_q5_0_vec_direct
#  define fg_q5_0_gemm_any fg_q5_0_gemm
#  define fg_q4_k_vec_any fg_q4_k_vec
#  define fg_q4_k_gemm_any fg_q4_k_gemm
#  define FG_PX_TILE FG_Q_ROWS
#endif

// ----------------------------------------------------------------------------
// the table

static const fg_kernels k_fg_neon_table = {
    .name = FG_NEON_TABLE_NAME,
    .vec =
        {
            [FG_TYPE_F32] = {fg_f32_vec, FG_SPEC_FMA, FG_F_ACT, 1, FG_F_VEC_ROWS},
            [FG_TYPE_F16] = {fg_f16_vec, FG_SPEC_FMA, FG_F_ACT, 1, FG_F_VEC_ROWS},
            [FG_TYPE_BF16] = {fg_bf16_vec, FG_SPEC_FMA, FG_F_ACT, 1, FG_F_VEC_ROWS},
            [FG_TYPE_Q8_0] = {fg_q8_0_vec, FG_SPEC_Q8, FG_Q8_ACT, FG_Q8_TILE},
            [FG_TYPE_Q4_0] = {fg_q4_0_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q4_1] = {fg_q4_1_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q5_0] = {fg_q5_0_vec_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_PX_TILE},
            [FG_TYPE_Q5_1] = {fg_q5_1_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q2_K] = {fg_q2_k_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q3_K] = {fg_q3_k_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q4_K] = {fg_q4_k_vec_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_PX_TILE},
            [FG_TYPE_Q5_K] = {fg_q5_k_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q6_K] = {fg_q6_k_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_IQ4_NL] = {fg_iq4_nl_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_IQ4_XS] = {fg_iq4_xs_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
        },
    .gemm =
        {
            [FG_TYPE_F32] = {fg_f32_gemm, FG_SPEC_FMA, FG_F_ACT, 1, 2},
            [FG_TYPE_F16] = {fg_f16_gemm, FG_SPEC_FMA, FG_F_ACT, 1, 2},
            [FG_TYPE_BF16] = {fg_bf16_gemm, FG_SPEC_FMA, FG_F_ACT, 1, 2},
            [FG_TYPE_Q8_0] = {fg_q8_0_gemm, FG_SPEC_Q8, FG_Q8_ACT, FG_Q8_TILE},
            [FG_TYPE_Q4_0] = {fg_q4_0_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q4_1] = {fg_q4_1_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q5_0] = {fg_q5_0_gemm_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_PX_TILE},
            [FG_TYPE_Q5_1] = {fg_q5_1_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q2_K] = {fg_q2_k_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q3_K] = {fg_q3_k_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q4_K] = {fg_q4_k_gemm_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_PX_TILE},
            [FG_TYPE_Q5_K] = {fg_q5_k_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q6_K] = {fg_q6_k_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_IQ4_NL] = {fg_iq4_nl_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_IQ4_XS] = {fg_iq4_xs_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
        },
    .gemm_min_nb = {[FG_TYPE_F32] = 2, [FG_TYPE_F16] = 2, [FG_TYPE_BF16] = 2, [FG_TYPE_Q8_0] = 2, [FG_TYPE_Q4_0] = 2,
                    [FG_TYPE_Q4_1] = 2, [FG_TYPE_Q5_0] = 2, [FG_TYPE_Q5_1] = 2, [FG_TYPE_Q2_K] = 2, [FG_TYPE_Q3_K] = 2,
                    [FG_TYPE_Q4_K] = 2, [FG_TYPE_Q5_K] = 2, [FG_TYPE_Q6_K] = 2, [FG_TYPE_IQ4_NL] = 2, [FG_TYPE_IQ4_XS] = 2},
#if FG_NEON_A64 && FG_NEON_HAVE_DOTPROD
    .pack_size = fg_pk_size,
    .pack = fg_pk_pack,
    .pack_rows = FG_PK_ROWS,
#endif
};

const fg_kernels *FG_NEON_TABLE(void) { return &k_fg_neon_table; }

#endif /* FG_NEON_IMPL_H */
