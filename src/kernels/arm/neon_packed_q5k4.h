/* neon_packed_q5k4.h — packed Q5_0 and Q4_K (aarch64 with SDOT): load-time strips of 16 rows decoded in
 * registers, and the Q5_0 / Q4_K entries of the table (the packed copy where there is one). */
#ifndef FG_NEON_IMPL_H
#  error "a part of kernels/arm/neon_impl.h (compiled once per NEON table): include that"
#endif

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

/* one quad's Q5_0 block against two activations: the 8 value registers of fg_px_q5_quad decoded once */
FG_NEON_INLINE void fg_px_q5_quad2(const uint8_t *n, uint8x16_t h, int8x16_t xa0, int8x16_t xa1, int8x16_t xb0,
                                   int8x16_t xb1, int32x4_t *sa, int32x4_t *sb) {
  const uint8x16_t m4 = vdupq_n_u8(0x0f), m10 = vdupq_n_u8(0x10);
  const uint8x16_t n0 = vld1q_u8(n), n1 = vld1q_u8(n + 16), n2 = vld1q_u8(n + 32), n3 = vld1q_u8(n + 48);
  const int8x16_t u0 = vreinterpretq_s8_u8(vbslq_u8(m10, vshlq_n_u8(h, 4), vandq_u8(n0, m4)));
  const int8x16_t u1 = vreinterpretq_s8_u8(vbslq_u8(m10, vshlq_n_u8(h, 3), vandq_u8(n1, m4)));
  const int8x16_t u2 = vreinterpretq_s8_u8(vbslq_u8(m10, vshlq_n_u8(h, 2), vandq_u8(n2, m4)));
  const int8x16_t u3 = vreinterpretq_s8_u8(vbslq_u8(m10, vshlq_n_u8(h, 1), vandq_u8(n3, m4)));
  const int8x16_t u4 = vreinterpretq_s8_u8(vbslq_u8(m10, h, vshrq_n_u8(n0, 4)));
  const int8x16_t u5 = vreinterpretq_s8_u8(vbslq_u8(m10, vshrq_n_u8(h, 1), vshrq_n_u8(n1, 4)));
  const int8x16_t u6 = vreinterpretq_s8_u8(vbslq_u8(m10, vshrq_n_u8(h, 2), vshrq_n_u8(n2, 4)));
  const int8x16_t u7 = vreinterpretq_s8_u8(vbslq_u8(m10, vshrq_n_u8(h, 3), vshrq_n_u8(n3, 4)));
  int32x4_t s = vdupq_n_s32(0), t = s;
  s = vdotq_laneq_s32(s, u0, xa0, 0);
  t = vdotq_laneq_s32(t, u0, xb0, 0);
  s = vdotq_laneq_s32(s, u1, xa0, 1);
  t = vdotq_laneq_s32(t, u1, xb0, 1);
  s = vdotq_laneq_s32(s, u2, xa0, 2);
  t = vdotq_laneq_s32(t, u2, xb0, 2);
  s = vdotq_laneq_s32(s, u3, xa0, 3);
  t = vdotq_laneq_s32(t, u3, xb0, 3);
  s = vdotq_laneq_s32(s, u4, xa1, 0);
  t = vdotq_laneq_s32(t, u4, xb1, 0);
  s = vdotq_laneq_s32(s, u5, xa1, 1);
  t = vdotq_laneq_s32(t, u5, xb1, 1);
  s = vdotq_laneq_s32(s, u6, xa1, 2);
  t = vdotq_laneq_s32(t, u6, xb1, 2);
  s = vdotq_laneq_s32(s, u7, xa1, 3);
  t = vdotq_laneq_s32(t, u7, xb1, 3);
  *sa = s;
  *sb = t;
}

/* fg_px_strip_q5 against two activations at once (each block's quads decoded once for both): the same
 * operations per output, so each output is bit for bit the single-activation one */
FG_NEON_INLINE void fg_px_strip_q5_2(const uint8_t *st, fg_act_q8_row xa, fg_act_q8_row xb, size_t cols, float *ya,
                                     float *yb) {
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  for (size_t k = 0; k < cols / 32; k++) {
    const uint8_t *o = st + k * FG_PX_Q5_BLOCK;
    const int8x16_t xa0 = vld1q_s8(xa.qs + 32 * k), xa1 = vld1q_s8(xa.qs + 32 * k + 16);
    const int8x16_t xb0 = vld1q_s8(xb.qs + 32 * k), xb1 = vld1q_s8(xb.qs + 32 * k + 16);
    const int32x4_t offa = vdupq_n_s32(16 * xa.isum[k]), offb = vdupq_n_s32(16 * xb.isum[k]);
    const float32x4_t dxa = vdupq_n_f32(xa.d[k]), dxb = vdupq_n_f32(xb.d[k]);
    const uint16x8_t h01 = vld1q_u16((const uint16_t *)(const void *)o), h23 = vld1q_u16((const uint16_t *)(const void *)(o + 16));
#  define FG_PX_Q5_QUAD2(acca, accb, q, dw)                                                                  \
    do {                                                                                                     \
      int32x4_t sa, sb;                                                                                      \
      fg_px_q5_quad2(o + 96 + 64 * (q), vld1q_u8(o + 32 + 16 * (q)), xa0, xa1, xb0, xb1, &sa, &sb);          \
      const float32x4_t dwq = (dw);                                                                          \
      acca = vfmaq_f32(acca, vcvtq_f32_s32(vsubq_s32(sa, offa)), vmulq_f32(dwq, dxa));                       \
      accb = vfmaq_f32(accb, vcvtq_f32_s32(vsubq_s32(sb, offb)), vmulq_f32(dwq, dxb));                       \
    } while (0)
    FG_PX_Q5_QUAD2(a0, b0, 0, vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h01))));
    FG_PX_Q5_QUAD2(a1, b1, 1, vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h01))));
    FG_PX_Q5_QUAD2(a2, b2, 2, vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h23))));
    FG_PX_Q5_QUAD2(a3, b3, 3, vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h23))));
#  undef FG_PX_Q5_QUAD2
  }
  vst1q_f32(ya, a0);
  vst1q_f32(ya + 4, a1);
  vst1q_f32(ya + 8, a2);
  vst1q_f32(ya + 12, a3);
  vst1q_f32(yb, b0);
  vst1q_f32(yb + 4, b1);
  vst1q_f32(yb + 8, b2);
  vst1q_f32(yb + 12, b3);
}

/* a packed Q4_K block's 16 scales d and minimums dmin (f16 at o and o + 32), as f32: rows 4q..4q+3 in d[q],
 * dm[q] */
FG_NEON_INLINE void fg_px_k4_scales(const uint8_t *o, float32x4_t d[4], float32x4_t dm[4]) {
  const uint16x8_t d01 = vld1q_u16((const uint16_t *)(const void *)o), d23 = vld1q_u16((const uint16_t *)(const void *)(o + 16));
  const uint16x8_t m01 = vld1q_u16((const uint16_t *)(const void *)(o + 32)), m23 = vld1q_u16((const uint16_t *)(const void *)(o + 48));
  d[0] = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(d01)));
  d[1] = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(d01)));
  d[2] = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(d23)));
  d[3] = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(d23)));
  dm[0] = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(m01)));
  dm[1] = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(m01)));
  dm[2] = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(m23)));
  dm[3] = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(m23)));
}

/* the 16 outputs of a packed Q4_K strip st against one activation */
FG_NEON_INLINE void fg_px_strip_k4(const uint8_t *st, fg_act_q8_row xr, size_t cols, float *y) {
  float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  for (size_t K = 0; K < cols / 256; K++) {
    const uint8_t *o = st + K * FG_PX_K4_BLOCK;
    float32x4_t d[4], dm[4];
    fg_px_k4_scales(o, d, dm);
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
      FG_PX_K4_QUAD(acc0, 0, d[0], dm[0], sl, ml, FG_PX_LO);
      FG_PX_K4_QUAD(acc1, 1, d[1], dm[1], sl, ml, FG_PX_HI);
      FG_PX_K4_QUAD(acc2, 2, d[2], dm[2], sh, mh, FG_PX_LO);
      FG_PX_K4_QUAD(acc3, 3, d[3], dm[3], sh, mh, FG_PX_HI);
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

/* fg_px_strip_k4 against two activations at once (each sub-block's nibbles loaded and masked once for
 * both): the same operations per output */
FG_NEON_INLINE void fg_px_strip_k4_2(const uint8_t *st, fg_act_q8_row xa, fg_act_q8_row xb, size_t cols, float *ya,
                                     float *yb) {
  float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  const uint8x16_t m4 = vdupq_n_u8(0x0f);
  for (size_t K = 0; K < cols / 256; K++) {
    const uint8_t *o = st + K * FG_PX_K4_BLOCK;
    float32x4_t d[4], dm[4];
    fg_px_k4_scales(o, d, dm);
    for (int j = 0; j < 8; j++) {
      const size_t k = 8 * K + (size_t)j;
      const int8x16_t xa0 = vld1q_s8(xa.qs + 32 * k), xa1 = vld1q_s8(xa.qs + 32 * k + 16);
      const int8x16_t xb0 = vld1q_s8(xb.qs + 32 * k), xb1 = vld1q_s8(xb.qs + 32 * k + 16);
      const float32x4_t dxa = vdupq_n_f32(xa.d[k]), xsa = vdupq_n_f32((float)xa.isum[k]);
      const float32x4_t dxb = vdupq_n_f32(xb.d[k]), xsb = vdupq_n_f32((float)xb.isum[k]);
      const uint8x16_t sc8 = vld1q_u8(o + 64 + 16 * j), m8 = vld1q_u8(o + 192 + 16 * j);
      const uint16x8_t sl = vmovl_u8(vget_low_u8(sc8)), sh = vmovl_u8(vget_high_u8(sc8));
      const uint16x8_t ml = vmovl_u8(vget_low_u8(m8)), mh = vmovl_u8(vget_high_u8(m8));
      const uint8_t *n = o + FG_PX_K4_HEAD + 256 * j;
#  define FG_PX_K4_QUAD2(acca, accb, q, d, dmin, sc16, m16, half)                                            \
    do {                                                                                                     \
      const float32x4_t dw = vmulq_f32((d), vcvtq_f32_u32(half(sc16)));                                      \
      const float32x4_t mw = vnegq_f32(vmulq_f32((dmin), vcvtq_f32_u32(half(m16))));                         \
      const uint8_t *nq = n + 64 * (q);                                                                      \
      const uint8x16_t q0 = vld1q_u8(nq), q1 = vld1q_u8(nq + 16), q2 = vld1q_u8(nq + 32), q3 = vld1q_u8(nq + 48); \
      const int8x16_t u0 = vreinterpretq_s8_u8(vandq_u8(q0, m4)), u1 = vreinterpretq_s8_u8(vandq_u8(q1, m4));  \
      const int8x16_t u2 = vreinterpretq_s8_u8(vandq_u8(q2, m4)), u3 = vreinterpretq_s8_u8(vandq_u8(q3, m4));  \
      const int8x16_t u4 = vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)), u5 = vreinterpretq_s8_u8(vshrq_n_u8(q1, 4)); \
      const int8x16_t u6 = vreinterpretq_s8_u8(vshrq_n_u8(q2, 4)), u7 = vreinterpretq_s8_u8(vshrq_n_u8(q3, 4)); \
      int32x4_t s = vdupq_n_s32(0), t = s;                                                                   \
      s = vdotq_laneq_s32(s, u0, xa0, 0);                                                                    \
      t = vdotq_laneq_s32(t, u0, xb0, 0);                                                                    \
      s = vdotq_laneq_s32(s, u1, xa0, 1);                                                                    \
      t = vdotq_laneq_s32(t, u1, xb0, 1);                                                                    \
      s = vdotq_laneq_s32(s, u2, xa0, 2);                                                                    \
      t = vdotq_laneq_s32(t, u2, xb0, 2);                                                                    \
      s = vdotq_laneq_s32(s, u3, xa0, 3);                                                                    \
      t = vdotq_laneq_s32(t, u3, xb0, 3);                                                                    \
      s = vdotq_laneq_s32(s, u4, xa1, 0);                                                                    \
      t = vdotq_laneq_s32(t, u4, xb1, 0);                                                                    \
      s = vdotq_laneq_s32(s, u5, xa1, 1);                                                                    \
      t = vdotq_laneq_s32(t, u5, xb1, 1);                                                                    \
      s = vdotq_laneq_s32(s, u6, xa1, 2);                                                                    \
      t = vdotq_laneq_s32(t, u6, xb1, 2);                                                                    \
      s = vdotq_laneq_s32(s, u7, xa1, 3);                                                                    \
      t = vdotq_laneq_s32(t, u7, xb1, 3);                                                                    \
      acca = vfmaq_f32(acca, vcvtq_f32_s32(s), vmulq_f32(dw, dxa));                                          \
      acca = vfmaq_f32(acca, xsa, vmulq_f32(mw, dxa));                                                       \
      accb = vfmaq_f32(accb, vcvtq_f32_s32(t), vmulq_f32(dw, dxb));                                          \
      accb = vfmaq_f32(accb, xsb, vmulq_f32(mw, dxb));                                                       \
    } while (0)
#  define FG_PX_LO(v) vmovl_u16(vget_low_u16(v))
#  define FG_PX_HI(v) vmovl_u16(vget_high_u16(v))
      FG_PX_K4_QUAD2(a0, b0, 0, d[0], dm[0], sl, ml, FG_PX_LO);
      FG_PX_K4_QUAD2(a1, b1, 1, d[1], dm[1], sl, ml, FG_PX_HI);
      FG_PX_K4_QUAD2(a2, b2, 2, d[2], dm[2], sh, mh, FG_PX_LO);
      FG_PX_K4_QUAD2(a3, b3, 3, d[3], dm[3], sh, mh, FG_PX_HI);
#  undef FG_PX_K4_QUAD2
#  undef FG_PX_LO
#  undef FG_PX_HI
    }
  }
  vst1q_f32(ya, a0);
  vst1q_f32(ya + 4, a1);
  vst1q_f32(ya + 8, a2);
  vst1q_f32(ya + 12, a3);
  vst1q_f32(yb, b0);
  vst1q_f32(yb + 4, b1);
  vst1q_f32(yb + 8, b2);
  vst1q_f32(yb + 12, b3);
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
  for (size_t t = s0; t < s1; t += FG_PK_ROWS) {
    size_t b = 0;
    if (type == FG_TYPE_Q5_0)
      for (; b + 2 <= a->nb; b += 2) {
        const uint8_t *st = a->packed + t / FG_PK_ROWS * sbytes;
        const fg_act_q8_row xa = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
        const fg_act_q8_row xb = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b + 1) * stride, a->cols);
        fg_px_strip_q5_2(st, xa, xb, a->cols, a->y + b * a->ldy + t, a->y + (b + 1) * a->ldy + t);
      }
    else
      for (; b + 2 <= a->nb; b += 2) {
        const uint8_t *st = a->packed + t / FG_PK_ROWS * sbytes;
        const fg_act_q8_row xa = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
        const fg_act_q8_row xb = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b + 1) * stride, a->cols);
        fg_px_strip_k4_2(st, xa, xb, a->cols, a->y + b * a->ldy + t, a->y + (b + 1) * a->ldy + t);
      }
    for (; b < a->nb; b++) {
      const uint8_t *st = a->packed + t / FG_PK_ROWS * sbytes;
      const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
      if (type == FG_TYPE_Q5_0) fg_px_strip_q5(st, xr, a->cols, a->y + b * a->ldy + t);
      else fg_px_strip_k4(st, xr, a->cols, a->y + b * a->ldy + t);
    }
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
