/* neon_q8_tiles.h — the Q8_0 / Q4_0 loops over the rows: tiles of 4 outputs (4 rows x 1 activation, 2 x 2
 * on armv7) and fg_qrun, which walks a row range with them (and the assembly loops). */
#ifndef FG_NEON_IMPL_H
#  error "a part of kernels/arm/neon_impl.h (compiled once per NEON table): include that"
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
