/* neon_float.h — the float kernels: F32 / F16 / BF16 rows (fma spec), R rows x B activations of
 * accumulators, with the armv7 flags of activation rows that are not exact under flush-to-zero. */
#ifndef FG_NEON_IMPL_H
#  error "a part of kernels/arm/neon_impl.h (compiled once per NEON table): include that"
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

#if !FG_NEON_A64
/* armv7 F32, 2 rows x 1 activation (fg_f32_vec), cols a multiple of 16: fg_ftile's column loop in assembly
 * (GCC kept the accumulators in memory: about 100 instructions per 16 columns, 40 here). The same fused
 * multiply-adds in the same order (accumulator i of a row takes columns 16 c + 4 i .. 16 c + 4 i + 3, c in
 * order); acc[0..15] row 0, acc[16..31] row 1. The armv7 exactness check of the weights as the minimum of
 * (bits << 1) - 1 (unsigned; 0 wraps to the maximum): a lane below 2 * 2^-40's bits - 1 is a weight with
 * 0 < |w| < 2^-40 (fg_tiny_u32), written to mn[0..3]. */
static void fg_f32_vec2_a32(const float *w0, const float *w1, const float *x, size_t n16, float *acc, uint32_t *mn) {
  __asm__ volatile(
      FG_A32_ZERO_Q0_Q7
      "vmov.i8 q10, #255\n\t"
      "vmov.i8 q11, #255\n\t"
#  define FG_F32_A32_CHECK                 \
  "vshl.i32 q14, q12, #1\n\t"              \
  "vshl.i32 q15, q13, #1\n\t"              \
  "vadd.i32 q14, q14, q10\n\t"             \
  "vadd.i32 q15, q15, q10\n\t"             \
  "vmin.u32 q11, q11, q14\n\t"             \
  "vmin.u32 q11, q11, q15\n\t"
      "1:\n\t"
      "vld1.32 {d16-d19}, [%[x]]!\n\t"
      "vld1.32 {d24-d27}, [%[w0]]!\n\t"
      "vfma.f32 q0, q12, q8\n\t"
      "vfma.f32 q1, q13, q9\n\t" FG_F32_A32_CHECK
      "vld1.32 {d24-d27}, [%[w1]]!\n\t"
      "vfma.f32 q4, q12, q8\n\t"
      "vfma.f32 q5, q13, q9\n\t" FG_F32_A32_CHECK
      "vld1.32 {d16-d19}, [%[x]]!\n\t"
      "vld1.32 {d24-d27}, [%[w0]]!\n\t"
      "vfma.f32 q2, q12, q8\n\t"
      "vfma.f32 q3, q13, q9\n\t" FG_F32_A32_CHECK
      "vld1.32 {d24-d27}, [%[w1]]!\n\t"
      "vfma.f32 q6, q12, q8\n\t"
      "vfma.f32 q7, q13, q9\n\t" FG_F32_A32_CHECK
      "subs %[n], %[n], #1\n\t"
      "bne 1b\n\t"
      "vstmia %[acc], {d0-d15}\n\t"
      "vst1.32 {d22-d23}, [%[mn]]\n\t"
#  undef FG_F32_A32_CHECK
      : [w0] "+r"(w0), [w1] "+r"(w1), [x] "+r"(x), [n] "+r"(n16)
      : [acc] "r"(acc), [mn] "r"(mn)
      : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13",
        "d14", "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28",
        "d29", "d30", "d31");
}
#endif

/* Outputs t0 .. t0+nr of activations b0 .. b0+B (R >= nr rows in rp). xsafe: per-activation armv7 flags. */
FG_NEON_INLINE void fg_ftile(const fg_mm_args *a, const uint8_t *const *rp, size_t t0, size_t nr, size_t b0, const int R,
                             const int B, const int kind, const uint32_t *xsafe) {
  const size_t cols = a->cols;
#if !FG_NEON_A64
  if (kind == FG_K_F32 && R == 2 && B == 1 && cols % 16 == 0 && cols > 0) {
    float acc2[32] __attribute__((aligned(16)));
    uint32_t mn[4] __attribute__((aligned(16)));
    const float *x0 = a->x + b0 * a->ldx;
    fg_f32_vec2_a32((const float *)(const void *)rp[0], (const float *)(const void *)rp[1], x0, cols / 16, acc2, mn);
    const int exact = !fg_any_u32(vcltq_u32(vld1q_u32(mn), vdupq_n_u32(2 * FG_TINY_BITS - 1))) && xsafe[b0];
    float *y = a->y + b0 * a->ldy + t0;
    for (size_t r = 0; r < nr; r++) {
      const float32x4_t s4[4] = {vld1q_f32(acc2 + 16 * r), vld1q_f32(acc2 + 16 * r + 4), vld1q_f32(acc2 + 16 * r + 8),
                                 vld1q_f32(acc2 + 16 * r + 12)};
      y[r] = exact ? fg_fold16(s4) : fg_spec_dot_fma(FG_TYPE_F32, rp[r], x0, cols);
    }
    return;
  }
#endif
#if FG_NEON_A64
  /* aarch64 F32, 4 rows x 1 activation (fg_f32_vec), cols a multiple of 16: the accumulators as 16 named
   * vectors (GCC at -O2 kept the array below in memory and looped over its vectors: a load and a store
   * around every fused multiply-add); the same fused multiply-adds in the same order */
  if (kind == FG_K_F32 && R == 4 && B == 1 && cols % 16 == 0 && cols > 0) {
    const float *x0 = a->x + b0 * a->ldx;
    const float *w0 = (const float *)(const void *)rp[0], *w1 = (const float *)(const void *)rp[1];
    const float *w2 = (const float *)(const void *)rp[2], *w3 = (const float *)(const void *)rp[3];
    float32x4_t a00 = vdupq_n_f32(0.0f), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00, a12 = a00, a13 = a00;
    float32x4_t a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00, a32 = a00, a33 = a00;
    for (size_t j = 0; j < cols; j += 16) {
      const float32x4x4_t xv = vld1q_f32_x4(x0 + j);
#  define FG_F32_A64_ROW(r)                                   \
      {                                                       \
        const float32x4x4_t wv = vld1q_f32_x4(w##r + j);      \
        a##r##0 = vfmaq_f32(a##r##0, wv.val[0], xv.val[0]);   \
        a##r##1 = vfmaq_f32(a##r##1, wv.val[1], xv.val[1]);   \
        a##r##2 = vfmaq_f32(a##r##2, wv.val[2], xv.val[2]);   \
        a##r##3 = vfmaq_f32(a##r##3, wv.val[3], xv.val[3]);   \
      }
      FG_F32_A64_ROW(0) FG_F32_A64_ROW(1) FG_F32_A64_ROW(2) FG_F32_A64_ROW(3)
#  undef FG_F32_A64_ROW
    }
    const float32x4_t s0[4] = {a00, a01, a02, a03}, s1[4] = {a10, a11, a12, a13};
    const float32x4_t s2[4] = {a20, a21, a22, a23}, s3[4] = {a30, a31, a32, a33};
    const float out[4] = {fg_fold16(s0), fg_fold16(s1), fg_fold16(s2), fg_fold16(s3)};
    float *y = a->y + b0 * a->ldy + t0;
    for (size_t r = 0; r < nr; r++) y[r] = out[r];
    (void)xsafe;
    return;
  }
#endif
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
