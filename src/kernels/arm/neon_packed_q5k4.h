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

#  define FG_PX_STR2(x) #x
#  define FG_PX_STR(x) FG_PX_STR2(x) /* a constant in an asm string */

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

/* Half a packed Q5_0 strip (quads 2h and 2h + 1: 8 rows) against four activations, in assembly: per block
 * each quad's 8 value registers are decoded once for the four (and, shl/ushr, bit: 23 instructions a quad)
 * and go into 32 SDOT by element; the sums start at -16 * sum x (so the block's integer dot is the spec's
 * sum (q - 16) x, exact), then per activation scvtf, dw * dx (fmul by element) and fmla: each output is
 * fma(dw * dx, (float)isum, acc) in block order, bit for bit fg_px_strip_q5's. 166 instructions a block
 * of 8 rows x 4 activations against 266 a block of 16 rows x 2 for GCC's fg_px_strip_q5_2 (which spilled).
 * Registers: v0-v7 the outputs (quad A: v0-v3 for activations 0..3, quad B: v4-v7), v8-v15 the
 * activations' bytes (activation a: v8 + 2a bytes 0..15, v9 + 2a bytes 16..31), v16/v17 the masks 0x0f
 * and 0x10, v18 the 4 activation scales, v19 the 4 values -16 * sum x, v20/v21 the quads' dw, v22/v23
 * their fifth bits, v24/v25 value bytes, v26 a shifted fifth-bit register and then dw * dx, v27 a value
 * register, v28-v31 the 4 sums. */
#  define FG_PX5_SDOT4(X0, X1, X2, X3, c)                                                                   \
    "sdot v28.4s, v27.16b, v" X0 ".4b[" c "]\n\t"                                                          \
    "sdot v29.4s, v27.16b, v" X1 ".4b[" c "]\n\t"                                                          \
    "sdot v30.4s, v27.16b, v" X2 ".4b[" c "]\n\t"                                                          \
    "sdot v31.4s, v27.16b, v" X3 ".4b[" c "]\n\t"
/* group c (0..3): low nibbles of n, fifth bit c of H shifted to bit 4 (by sh = 4 - c) */
#  define FG_PX5_LO(n, H, sh, c)                                                                            \
    "and v27.16b, " n ".16b, v16.16b\n\t"                                                                  \
    "shl v26.16b, " H ".16b, #" sh "\n\t"                                                                  \
    "bit v27.16b, v26.16b, v17.16b\n\t" FG_PX5_SDOT4("8", "10", "12", "14", c)
/* group c + 4: high nibbles of n, fifth bit c + 4 of H shifted to bit 4 (by c; c = 0: H itself) */
#  define FG_PX5_HI(n, H, c)                                                                                \
    "ushr v27.16b, " n ".16b, #4\n\t"                                                                      \
    "ushr v26.16b, " H ".16b, #" c "\n\t"                                                                  \
    "bit v27.16b, v26.16b, v17.16b\n\t" FG_PX5_SDOT4("9", "11", "13", "15", c)
#  define FG_PX5_HI0(n, H)                                                                                  \
    "ushr v27.16b, " n ".16b, #4\n\t"                                                                      \
    "bit v27.16b, " H ".16b, v17.16b\n\t" FG_PX5_SDOT4("9", "11", "13", "15", "0")
/* sum a into output acc: acc = fma(dw * dx_a, (float)sum, acc) */
#  define FG_PX5_FMA(s, acc, dw, a)                                                                         \
    "scvtf " s ".4s, " s ".4s\n\t"                                                                         \
    "fmul v26.4s, " dw ".4s, v18.s[" a "]\n\t"                                                             \
    "fmla " acc ".4s, " s ".4s, v26.4s\n\t"
/* one quad of a block: H its fifth bits, dw its scales, A0..A3 its outputs; the value bytes at pc (64),
 * then pc moves on by 32 + npost */
#  define FG_PX5_QUAD(H, dw, A0, A1, A2, A3, npost)                                                         \
    "dup v28.4s, v19.s[0]\n\t"                                                                             \
    "dup v29.4s, v19.s[1]\n\t"                                                                             \
    "dup v30.4s, v19.s[2]\n\t"                                                                             \
    "dup v31.4s, v19.s[3]\n\t"                                                                             \
    "ldp q24, q25, [x4], #32\n\t"                                                                       \
    FG_PX5_LO("v24", H, "4", "0") FG_PX5_HI0("v24", H)                                                      \
    FG_PX5_LO("v25", H, "3", "1") FG_PX5_HI("v25", H, "1")                                                  \
    "ldp q24, q25, [x4], #" npost "\n\t"                                                                \
    FG_PX5_LO("v24", H, "2", "2") FG_PX5_HI("v24", H, "2")                                                  \
    FG_PX5_LO("v25", H, "1", "3") FG_PX5_HI("v25", H, "3")                                                  \
    FG_PX5_FMA("v28", A0, dw, "0") FG_PX5_FMA("v29", A1, dw, "1")                                           \
    FG_PX5_FMA("v30", A2, dw, "2") FG_PX5_FMA("v31", A3, dw, "3")

/* rows 8h..8h+7 of the packed Q5_0 strip st against activations x[0..3] (nblk blocks), into y[a] + 8h. The
 * asm takes its 20 pointers and counts from p[] (GCC allows 30 operands) into x2..x17: x2 the scales, x3 the
 * fifth bits, x4 the value bytes, x5..x8 the activations' bytes, x9..x12 their scales, x13..x16 their sums,
 * x17 the blocks left; then the outputs in x2..x5. */
static void fg_px_q5_half4(const uint8_t *st, unsigned h, const fg_act_q8_row x[4], size_t nblk, float *const y[4]) {
  const void *p[20] = {st + 16 * h, st + 32 + 32 * h, st + 96 + 128 * h, x[0].qs, x[1].qs, x[2].qs, x[3].qs,
                       x[0].d, x[1].d, x[2].d, x[3].d, x[0].isum, x[1].isum, x[2].isum, x[3].isum,
                       (const void *)(uintptr_t)nblk, y[0] + 8 * h, y[1] + 8 * h, y[2] + 8 * h, y[3] + 8 * h};
  __asm__ volatile(
      "ldp x2, x3, [%[p]]\n\t"
      "ldp x4, x5, [%[p], #16]\n\t"
      "ldp x6, x7, [%[p], #32]\n\t"
      "ldp x8, x9, [%[p], #48]\n\t"
      "ldp x10, x11, [%[p], #64]\n\t"
      "ldp x12, x13, [%[p], #80]\n\t"
      "ldp x14, x15, [%[p], #96]\n\t"
      "ldp x16, x17, [%[p], #112]\n\t"
      "movi v0.4s, #0\n\t"
      "movi v1.4s, #0\n\t"
      "movi v2.4s, #0\n\t"
      "movi v3.4s, #0\n\t"
      "movi v4.4s, #0\n\t"
      "movi v5.4s, #0\n\t"
      "movi v6.4s, #0\n\t"
      "movi v7.4s, #0\n\t"
      "movi v16.16b, #0x0f\n\t"
      "movi v17.16b, #0x10\n\t"
      "1:\n\t"
      "ldp q8, q9, [x5], #32\n\t"
      "ldp q10, q11, [x6], #32\n\t"
      "ldp q12, q13, [x7], #32\n\t"
      "ldp q14, q15, [x8], #32\n\t"
      "ld1 {v18.s}[0], [x9], #4\n\t"
      "ld1 {v18.s}[1], [x10], #4\n\t"
      "ld1 {v18.s}[2], [x11], #4\n\t"
      "ld1 {v18.s}[3], [x12], #4\n\t"
      "ld1 {v19.s}[0], [x13], #4\n\t"
      "ld1 {v19.s}[1], [x14], #4\n\t"
      "ld1 {v19.s}[2], [x15], #4\n\t"
      "ld1 {v19.s}[3], [x16], #4\n\t"
      "shl v19.4s, v19.4s, #4\n\t"
      "neg v19.4s, v19.4s\n\t"
      "ldp d20, d21, [x2], #" FG_PX_STR(FG_PX_Q5_BLOCK) "\n\t"
      "fcvtl v20.4s, v20.4h\n\t"
      "fcvtl v21.4s, v21.4h\n\t"
      "ldp q22, q23, [x3], #" FG_PX_STR(FG_PX_Q5_BLOCK) "\n\t"
      FG_PX5_QUAD("v22", "v20", "v0", "v1", "v2", "v3", "32")
      FG_PX5_QUAD("v23", "v21", "v4", "v5", "v6", "v7", "256")
      "subs x17, x17, #1\n\t"
      "b.ne 1b\n\t"
      "ldp x2, x3, [%[p], #128]\n\t"
      "ldp x4, x5, [%[p], #144]\n\t"
      "stp q0, q4, [x2]\n\t"
      "stp q1, q5, [x3]\n\t"
      "stp q2, q6, [x4]\n\t"
      "stp q3, q7, [x5]\n\t"
      :
      : [p] "r"(p)
      : "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17", "v0",
        "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16", "v17",
        "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc",
        "memory");
}
#  undef FG_PX5_QUAD
#  undef FG_PX5_FMA
#  undef FG_PX5_HI0
#  undef FG_PX5_HI
#  undef FG_PX5_LO
#  undef FG_PX5_SDOT4

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

/* Half a packed Q4_K strip (quads 2h and 2h + 1: 8 rows) against four activations, in assembly, as
 * fg_px_q5_half4: per sub-block each quad's 8 value registers (and, ushr) go into 32 SDOT by element, then
 * per activation fma(dw * dx, (float)isum, acc) and fma(mw * dx, (float)sum x, acc) with dw = d * sc and
 * mw = -(dmin * m): fg_px_strip_k4's operations, bit for bit. 169 instructions a sub-block of 8 rows x 4
 * activations against 239 a sub-block of 16 rows x 2 for GCC's fg_px_strip_k4_2. Registers: v0-v7 the
 * outputs (quad A: v0-v3, quad B: v4-v7), v8-v15 the activations' bytes (as fg_px_q5_half4), v16 the mask
 * 0x0f, v17 the 4 activations' (float) sum x, v18 their scales, v19/v20 the quads' d, v21/v22 their dmin
 * (per superblock), v23/v24 the quad's dw and mw, v25/v26 value bytes, v27 a value register and then a
 * scale product, v28-v31 the 4 sums. */
#  define FG_PK4_SDOT4(X0, X1, X2, X3, c)                                                                   \
    "sdot v28.4s, v27.16b, v" X0 ".4b[" c "]\n\t"                                                          \
    "sdot v29.4s, v27.16b, v" X1 ".4b[" c "]\n\t"                                                          \
    "sdot v30.4s, v27.16b, v" X2 ".4b[" c "]\n\t"                                                          \
    "sdot v31.4s, v27.16b, v" X3 ".4b[" c "]\n\t"
/* groups c (low nibbles of n) and c + 4 (high nibbles) */
#  define FG_PK4_GROUPS(n, c)                                                                               \
    "and v27.16b, " n ".16b, v16.16b\n\t" FG_PK4_SDOT4("8", "10", "12", "14", c)                          \
    "ushr v27.16b, " n ".16b, #4\n\t" FG_PK4_SDOT4("9", "11", "13", "15", c)
/* output acc, sum s, activation a: acc = fma(dw * dx, (float)s, acc), then fma(mw * dx, xs, acc) */
#  define FG_PK4_FMA(s, acc, a)                                                                             \
    "scvtf " s ".4s, " s ".4s\n\t"                                                                         \
    "fmul v27.4s, v23.4s, v18.s[" a "]\n\t"                                                                \
    "fmla " acc ".4s, " s ".4s, v27.4s\n\t"                                                                \
    "fmul v27.4s, v24.4s, v18.s[" a "]\n\t"                                                                \
    "fmla " acc ".4s, v27.4s, v17.s[" a "]\n\t"
/* one quad of a sub-block: its sc and m bytes at x3 + qoff and x3 + 128 + qoff (4 each), d and dmin, the
 * outputs A0..A3; the value bytes at x4 (64), then x4 moves on by 32 + npost */
#  define FG_PK4_QUAD(qoff, moff, d, dmin, A0, A1, A2, A3, npost)                                          \
    "ldr s23, [x3, #" qoff "]\n\t"                                                                         \
    "ldr s24, [x3, #" moff "]\n\t"                                                                         \
    "uxtl v23.8h, v23.8b\n\t"                                                                              \
    "uxtl v24.8h, v24.8b\n\t"                                                                              \
    "uxtl v23.4s, v23.4h\n\t"                                                                              \
    "uxtl v24.4s, v24.4h\n\t"                                                                              \
    "ucvtf v23.4s, v23.4s\n\t"                                                                             \
    "ucvtf v24.4s, v24.4s\n\t"                                                                             \
    "fmul v23.4s, " d ".4s, v23.4s\n\t"                                                                    \
    "fmul v24.4s, " dmin ".4s, v24.4s\n\t"                                                                 \
    "fneg v24.4s, v24.4s\n\t"                                                                              \
    "movi v28.4s, #0\n\t"                                                                                  \
    "movi v29.4s, #0\n\t"                                                                                  \
    "movi v30.4s, #0\n\t"                                                                                  \
    "movi v31.4s, #0\n\t"                                                                                  \
    "ldp q25, q26, [x4], #32\n\t" FG_PK4_GROUPS("v25", "0") FG_PK4_GROUPS("v26", "1")                      \
    "ldp q25, q26, [x4], #" npost "\n\t" FG_PK4_GROUPS("v25", "2") FG_PK4_GROUPS("v26", "3")             \
    FG_PK4_FMA("v28", A0, "0") FG_PK4_FMA("v29", A1, "1") FG_PK4_FMA("v30", A2, "2") FG_PK4_FMA("v31", A3, "3")

/* rows 8h..8h+7 of the packed Q4_K strip st against activations x[0..3] (nsb superblocks), into y[a] + 8h.
 * x2 the d and dmin of the superblock, x3 the sc bytes of the sub-block (m 128 bytes on), x4 the value
 * bytes, x5..x16 the activations (as fg_px_q5_half4), x17 the superblocks left, x1 the sub-blocks left. */
static void fg_px_k4_half4(const uint8_t *st, unsigned h, const fg_act_q8_row x[4], size_t nsb, float *const y[4]) {
  const void *p[20] = {st + 16 * h, st + 64 + 8 * h, st + FG_PX_K4_HEAD + 128 * h, x[0].qs, x[1].qs, x[2].qs,
                       x[3].qs, x[0].d, x[1].d, x[2].d, x[3].d, x[0].isum, x[1].isum, x[2].isum, x[3].isum,
                       (const void *)(uintptr_t)nsb, y[0] + 8 * h, y[1] + 8 * h, y[2] + 8 * h, y[3] + 8 * h};
  __asm__ volatile(
      "ldp x2, x3, [%[p]]\n\t"
      "ldp x4, x5, [%[p], #16]\n\t"
      "ldp x6, x7, [%[p], #32]\n\t"
      "ldp x8, x9, [%[p], #48]\n\t"
      "ldp x10, x11, [%[p], #64]\n\t"
      "ldp x12, x13, [%[p], #80]\n\t"
      "ldp x14, x15, [%[p], #96]\n\t"
      "ldp x16, x17, [%[p], #112]\n\t"
      "movi v0.4s, #0\n\t"
      "movi v1.4s, #0\n\t"
      "movi v2.4s, #0\n\t"
      "movi v3.4s, #0\n\t"
      "movi v4.4s, #0\n\t"
      "movi v5.4s, #0\n\t"
      "movi v6.4s, #0\n\t"
      "movi v7.4s, #0\n\t"
      "movi v16.16b, #0x0f\n\t"
      "1:\n\t"
      "ldr q19, [x2]\n\t"
      "ldr q21, [x2, #32]\n\t"
      "fcvtl2 v20.4s, v19.8h\n\t"
      "fcvtl v19.4s, v19.4h\n\t"
      "fcvtl2 v22.4s, v21.8h\n\t"
      "fcvtl v21.4s, v21.4h\n\t"
      "mov x1, #8\n\t"
      "2:\n\t"
      "ldp q8, q9, [x5], #32\n\t"
      "ldp q10, q11, [x6], #32\n\t"
      "ldp q12, q13, [x7], #32\n\t"
      "ldp q14, q15, [x8], #32\n\t"
      "ld1 {v18.s}[0], [x9], #4\n\t"
      "ld1 {v18.s}[1], [x10], #4\n\t"
      "ld1 {v18.s}[2], [x11], #4\n\t"
      "ld1 {v18.s}[3], [x12], #4\n\t"
      "ld1 {v17.s}[0], [x13], #4\n\t"
      "ld1 {v17.s}[1], [x14], #4\n\t"
      "ld1 {v17.s}[2], [x15], #4\n\t"
      "ld1 {v17.s}[3], [x16], #4\n\t"
      "scvtf v17.4s, v17.4s\n\t"
      FG_PK4_QUAD("0", "128", "v19", "v21", "v0", "v1", "v2", "v3", "32")
      FG_PK4_QUAD("4", "132", "v20", "v22", "v4", "v5", "v6", "v7", "160")
      "add x3, x3, #16\n\t"
      "subs x1, x1, #1\n\t"
      "b.ne 2b\n\t"
      "add x2, x2, #" FG_PX_STR(FG_PX_K4_BLOCK) "\n\t"
      "add x3, x3, #" FG_PX_STR(FG_PX_K4_BLOCK - 128) "\n\t"
      "add x4, x4, #" FG_PX_STR(FG_PX_K4_HEAD) "\n\t"
      "subs x17, x17, #1\n\t"
      "b.ne 1b\n\t"
      "ldp x2, x3, [%[p], #128]\n\t"
      "ldp x4, x5, [%[p], #144]\n\t"
      "stp q0, q4, [x2]\n\t"
      "stp q1, q5, [x3]\n\t"
      "stp q2, q6, [x4]\n\t"
      "stp q3, q7, [x5]\n\t"
      :
      : [p] "r"(p)
      : "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17",
        "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14", "v15", "v16",
        "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31", "cc",
        "memory");
}
#  undef FG_PK4_QUAD
#  undef FG_PK4_FMA
#  undef FG_PK4_GROUPS
#  undef FG_PK4_SDOT4

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
    if (type == FG_TYPE_Q5_0) {
      for (; b + 4 <= a->nb; b += 4) {
        const uint8_t *st = a->packed + t / FG_PK_ROWS * sbytes;
        fg_act_q8_row x[4];
        float *y[4];
        for (size_t j = 0; j < 4; j++) {
          x[j] = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b + j) * stride, a->cols);
          y[j] = a->y + (b + j) * a->ldy + t;
        }
        fg_px_q5_half4(st, 0, x, a->cols / 32, y);
        fg_px_q5_half4(st, 1, x, a->cols / 32, y);
      }
      for (; b + 2 <= a->nb; b += 2) {
        const uint8_t *st = a->packed + t / FG_PK_ROWS * sbytes;
        const fg_act_q8_row xa = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
        const fg_act_q8_row xb = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b + 1) * stride, a->cols);
        fg_px_strip_q5_2(st, xa, xb, a->cols, a->y + b * a->ldy + t, a->y + (b + 1) * a->ldy + t);
      }
    } else {
      for (; b + 4 <= a->nb; b += 4) {
        const uint8_t *st = a->packed + t / FG_PK_ROWS * sbytes;
        fg_act_q8_row x[4];
        float *y[4];
        for (size_t j = 0; j < 4; j++) {
          x[j] = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b + j) * stride, a->cols);
          y[j] = a->y + (b + j) * a->ldy + t;
        }
        fg_px_k4_half4(st, 0, x, a->cols / 256, y);
        fg_px_k4_half4(st, 1, x, a->cols / 256, y);
      }
      for (; b + 2 <= a->nb; b += 2) {
        const uint8_t *st = a->packed + t / FG_PK_ROWS * sbytes;
        const fg_act_q8_row xa = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
        const fg_act_q8_row xb = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b + 1) * stride, a->cols);
        fg_px_strip_k4_2(st, xa, xb, a->cols, a->y + b * a->ldy + t, a->y + (b + 1) * a->ldy + t);
      }
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
