/* neon_packed_q5k4.h — packed Q5_0, Q4_K and Q6_K (aarch64 with SDOT): load-time strips of 16 rows decoded in
 * registers; packed Q5_0, Q4_K and Q6_K (armv7): strips of 4 rows of int8 values; and the Q5_0 / Q4_K / Q6_K entries
 * of the table (the packed copy where there is one). */
#ifndef FG_NEON_IMPL_H
#  error "a part of kernels/arm/neon_impl.h (compiled once per NEON table): include that"
#endif

#if FG_NEON_A64 && FG_NEON_HAVE_DOTPROD
// ----------------------------------------------------------------------------
// Packed Q5_0, Q4_K and Q6_K (aarch64 with SDOT; load-time repacking, as Q8_0's fg_pk_*): strips of 16 rows,
// four quads of 4 rows, so that one SDOT by element of a quad's register (4 rows x 4 weights) against the
// activation's bytes 4c..4c+3 adds to each row's lane: no staging and no reduction. The copies keep the
// file's values and scales (Q4_K: 2.8 % larger, the 6-bit scales unpacked), and the values are decoded in
// registers:
//   Q5_0, per block (352 bytes): the 16 f16 scales; per quad a register of fifth bits (byte 4i + t: bit c
//        of element 4c + t of row i); per quad and c = 0..3 a register of the rows' qs[4c..4c+3] (low
//        nibbles: group c, high nibbles: group c + 4). u = q + 16 (0..31) goes into SDOT as a signed byte,
//        and 16 * sum x is taken off;
//   Q4_K, per superblock (2,368 bytes): the 16 rows' f16 d, f16 dmin, the 6-bit scales sc[8][16] and
//        minimums m[8][16] as bytes, then per sub-block the nibbles as Q5_0's (u = q, 0..15);
//   Q6_K, per superblock (3,360 bytes, the file's size): the 16 rows' f16 d, the int8 scales, per block
//        and quad six registers holding q - 32 as 6-bit two's complement in bits 2..7 (one sshr each)
//        and two more groups in their bits 0..1 (fg_px_pack_q6_k).
// Each output is fma(dw * dx, (float)isum, acc) (Q4_K: dw = d * sc, then fma(mw * dx, (float)sum x, acc)
// with mw = -(dmin * m); Q6_K: isum = sa * ia + sb * ib over the half blocks) in block order: the q8 spec bit
// for bit. The gemm runs the same strip against each activation in turn (the strip stays in L1); row lists
// and ranges inside a strip read the file's rows.

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

/* Q6_K (FG_PX_Q6_BLOCK bytes a strip and superblock): the 16 rows' f16 d (32 bytes); per block j (32
 * elements) and half strip h 16 bytes of scales at 32 + 32 j + 16 h: sa of rows 8h..8h+3, their sb, sa of rows
 * 8h+4..8h+7, their sb (int8); per block j and quad q 96 bytes at FG_PX_Q6_HEAD + 384 j + 96 q: six registers
 * R0..R5 (byte 4i + t: row i). Group g (elements 4g..4g+3 of the block) has p = q ^ 32 (6 bits, q - 32 in two's
 * complement); R_m holds p of group m in bits 2..7 (sshr #2 gives q - 32), and in bits 0..1 two bits of group
 * 6 (R0..R2: p bits 4..5, 2..3, 0..1) or group 7 (R3..R5). The same size as the file. */
static void fg_px_pack_q6_k(const uint8_t *w, size_t row_bytes, size_t cols, size_t r0, size_t r1, uint8_t *dst) {
  /* per block, a row's p in P0 (groups 0..3) and P1 (4..7); R0..R3 = P0 << 2 with bits 0..1 from groups 6, 6, 6,
   * 7 of P1 shifted right by 4, 2, 0, 4; R4, R5 = P1 << 2 with group 7's bits 2..3, 0..1 */
  static const uint8_t k_ix[32] = {8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 12, 13, 14, 15,
                                   12, 13, 14, 15, 12, 13, 14, 15, 0, 0, 0, 0, 0, 0, 0, 0};
  static const int8_t k_sh[32] = {-4, -4, -4, -4, -2, -2, -2, -2, 0, 0, 0, 0, -4, -4, -4, -4,
                                  -2, -2, -2, -2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const uint8x16_t m3 = vdupq_n_u8(3), m4 = vdupq_n_u8(0x0f), x20 = vdupq_n_u8(0x20);
  const uint8x16_t ixa = vld1q_u8(k_ix), ixb = vld1q_u8(k_ix + 16);
  const int8x16_t sha = vld1q_s8(k_sh), shb = vld1q_s8(k_sh + 16);
  const size_t nsb = cols / 256;
  for (size_t s = r0 / FG_PK_ROWS; s < r1 / FG_PK_ROWS; s++)
    for (size_t r = 0; r < FG_PK_ROWS; r++) {
      const uint8_t *row = w + (s * FG_PK_ROWS + r) * row_bytes;
      const size_t q = r / 4, i = r % 4;
      for (size_t K = 0; K < nsb; K++) {
        const fg_block_q6_k *b = (const fg_block_q6_k *)(const void *)row + K;
        uint8_t *o = dst + (s * nsb + K) * FG_PX_Q6_BLOCK;
        memcpy(o + 2 * r, &b->d, 2);
        for (size_t j = 0; j < 8; j++) { /* block j: elements 128 h + 32 sj + l of the superblock */
          const size_t h = j / 4, sj = j % 4;
          uint8_t *sc = o + 32 + 32 * j + 16 * (q / 2) + 8 * (q % 2) + i;
          sc[0] = (uint8_t)b->scales[8 * h + 2 * sj];
          sc[4] = (uint8_t)b->scales[8 * h + 2 * sj + 1];
          const uint8_t *l = b->ql + 64 * h + 32 * (sj & 1);
          uint8x16_t l0 = vld1q_u8(l), l1 = vld1q_u8(l + 16);
          l0 = sj < 2 ? vandq_u8(l0, m4) : vshrq_n_u8(l0, 4);
          l1 = sj < 2 ? vandq_u8(l1, m4) : vshrq_n_u8(l1, 4);
          const int8x16_t hs = vdupq_n_s8((int8_t)(-2 * (int)sj));
          const uint8x16_t h0 = vandq_u8(vshlq_u8(vld1q_u8(b->qh + 32 * h), hs), m3);
          const uint8x16_t h1 = vandq_u8(vshlq_u8(vld1q_u8(b->qh + 32 * h + 16), hs), m3);
          const uint8x16_t p0 = veorq_u8(vorrq_u8(l0, vshlq_n_u8(h0, 4)), x20);
          const uint8x16_t p1 = veorq_u8(vorrq_u8(l1, vshlq_n_u8(h1, 4)), x20);
          const uint32x4_t ra = vreinterpretq_u32_u8(vorrq_u8(vshlq_n_u8(p0, 2), vandq_u8(vshlq_u8(vqtbl1q_u8(p1, ixa), sha), m3)));
          const uint32x4_t rb = vreinterpretq_u32_u8(vorrq_u8(vshlq_n_u8(p1, 2), vandq_u8(vshlq_u8(vqtbl1q_u8(p1, ixb), shb), m3)));
          uint32_t *v = (uint32_t *)(void *)(o + FG_PX_Q6_HEAD + 384 * j + 96 * q + 4 * i); /* R_m at v + 4 m */
          vst1q_lane_u32(v, ra, 0);
          vst1q_lane_u32(v + 4, ra, 1);
          vst1q_lane_u32(v + 8, ra, 2);
          vst1q_lane_u32(v + 12, ra, 3);
          vst1q_lane_u32(v + 16, rb, 0);
          vst1q_lane_u32(v + 20, rb, 1);
        }
      }
    }
}

static void fg_pk_pack(uint32_t type, const uint8_t *w, size_t row_bytes, size_t cols, size_t r0, size_t r1,
                       uint8_t *dst) {
  if (type == FG_TYPE_Q8_0) fg_pk_pack_q8_0(type, w, row_bytes, cols, r0, r1, dst);
  else if (type == FG_TYPE_Q6_K) fg_px_pack_q6_k(w, row_bytes, cols, r0, r1, dst);
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

/* The assembly of the packed Q5_0, Q4_K and Q6_K gemm (fg_px_q5_half, fg_px_k4_half, fg_px_q6_half) takes
 * n = 1..4 activations per pass; M(a, u, v) for a = 0 .. n-1 writes activation a's instructions, with its
 * registers by name: the sums v28 + a (FG_PX_S), the bytes v8 + 2a and v9 + 2a (FG_PX_XLO, FG_PX_XHI), the
 * outputs of quad A v0 + a and of quad B v4 + a (FG_PX_AA, FG_PX_AB), the pointers to its bytes x5 + a,
 * scales x9 + a, sums x13 + a (FG_PX_PQ, FG_PX_PD, FG_PX_PI) and outputs x2 + a (FG_PX_PY, after the loop). */
#  define FG_PX_EACH1(M, u, v) M(0, u, v)
#  define FG_PX_EACH2(M, u, v) FG_PX_EACH1(M, u, v) M(1, u, v)
#  define FG_PX_EACH3(M, u, v) FG_PX_EACH2(M, u, v) M(2, u, v)
#  define FG_PX_EACH4(M, u, v) FG_PX_EACH3(M, u, v) M(3, u, v)
#  define FG_PX_EACH(n, M, u, v) FG_PX_EACH##n(M, u, v)
#  define FG_PX_S0 "v28"
#  define FG_PX_S1 "v29"
#  define FG_PX_S2 "v30"
#  define FG_PX_S3 "v31"
#  define FG_PX_XLO0 "v8"
#  define FG_PX_XLO1 "v10"
#  define FG_PX_XLO2 "v12"
#  define FG_PX_XLO3 "v14"
#  define FG_PX_XHI0 "v9"
#  define FG_PX_XHI1 "v11"
#  define FG_PX_XHI2 "v13"
#  define FG_PX_XHI3 "v15"
#  define FG_PX_AA0 "v0"
#  define FG_PX_AA1 "v1"
#  define FG_PX_AA2 "v2"
#  define FG_PX_AA3 "v3"
#  define FG_PX_AB0 "v4"
#  define FG_PX_AB1 "v5"
#  define FG_PX_AB2 "v6"
#  define FG_PX_AB3 "v7"
#  define FG_PX_PQ0 "x5"
#  define FG_PX_PQ1 "x6"
#  define FG_PX_PQ2 "x7"
#  define FG_PX_PQ3 "x8"
#  define FG_PX_PD0 "x9"
#  define FG_PX_PD1 "x10"
#  define FG_PX_PD2 "x11"
#  define FG_PX_PD3 "x12"
#  define FG_PX_PI0 "x13"
#  define FG_PX_PI1 "x14"
#  define FG_PX_PI2 "x15"
#  define FG_PX_PI3 "x16"
#  define FG_PX_PY0 "x2"
#  define FG_PX_PY1 "x3"
#  define FG_PX_PY2 "x4"
#  define FG_PX_PY3 "x5"
/* sdot of value register v27 by group c of the activation's bytes xb (LO: 0..15, HI: 16..31) */
#  define FG_PX_SDOT(a, xb, c) "sdot " FG_PX_S##a ".4s, v27.16b, " FG_PX_X##xb##a ".4b[" c "]\n\t"
#  define FG_PX_MOVI(a, u, v) "movi " FG_PX_AA##a ".4s, #0\n\tmovi " FG_PX_AB##a ".4s, #0\n\t"
#  define FG_PX_LDX(a, u, v) "ld1 {" FG_PX_XLO##a ".16b, " FG_PX_XHI##a ".16b}, [" FG_PX_PQ##a "], #32\n\t"
/* the activation's scale into lane a of v18, its sum x into lane a of register r */
#  define FG_PX_LDD(a, r, v)                                                                                \
    "ld1 {v18.s}[" #a "], [" FG_PX_PD##a "], #4\n\t"                                                       \
    "ld1 {" r ".s}[" #a "], [" FG_PX_PI##a "], #4\n\t"
#  define FG_PX_STY(a, u, v) "stp q" #a ", q" FG_PX_STR(FG_PX_Q4PLUS##a) ", [" FG_PX_PY##a "]\n\t"
#  define FG_PX_Q4PLUS0 4
#  define FG_PX_Q4PLUS1 5
#  define FG_PX_Q4PLUS2 6
#  define FG_PX_Q4PLUS3 7
/* the asm's 20 pointers and counts (GCC allows 30 operands): p[0..2] the strip's, p[3..14] the activations'
 * bytes, scales and sums, p[15] the blocks, p[16..19] the outputs; activations past n repeat activation 0
 * (never read) */
#  define FG_PX_P(b0, b1, b2, x, n, cnt, y, h)                                                              \
    const size_t m1 = (n) > 1, m2 = 2 * ((n) > 2), m3 = 3 * ((n) > 3);                                    \
    const void *p[20] = {b0, b1, b2, x[0].qs, x[m1].qs, x[m2].qs, x[m3].qs, x[0].d, x[m1].d, x[m2].d,      \
                         x[m3].d, x[0].isum, x[m1].isum, x[m2].isum, x[m3].isum, (const void *)(uintptr_t)(cnt), \
                         y[0] + 8 * (h), y[m1] + 8 * (h), y[m2] + 8 * (h), y[m3] + 8 * (h)}
#  define FG_PX_LDP                                                                                         \
    "ldp x2, x3, [%[p]]\n\t"                                                                               \
    "ldp x4, x5, [%[p], #16]\n\t"                                                                          \
    "ldp x6, x7, [%[p], #32]\n\t"                                                                          \
    "ldp x8, x9, [%[p], #48]\n\t"                                                                          \
    "ldp x10, x11, [%[p], #64]\n\t"                                                                        \
    "ldp x12, x13, [%[p], #80]\n\t"                                                                        \
    "ldp x14, x15, [%[p], #96]\n\t"                                                                        \
    "ldp x16, x17, [%[p], #112]\n\t"
#  define FG_PX_LDY                                                                                         \
    "ldp x2, x3, [%[p], #128]\n\t"                                                                         \
    "ldp x4, x5, [%[p], #144]\n\t"
#  define FG_PX_CLOBBERS                                                                                    \
    : [p] "r"(p)                                                                                           \
    : "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15", "x16",   \
      "x17", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",   \
      "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", \
      "v30", "v31", "cc", "memory"
/* the asm of n = 1..4 activations, FG_PX_P's p in scope */
#  define FG_PX_SWITCH(ASM)                                                                                 \
    switch (n) {                                                                                           \
    case 4: __asm__ volatile(ASM(4) : FG_PX_CLOBBERS); break;                                              \
    case 3: __asm__ volatile(ASM(3) : FG_PX_CLOBBERS); break;                                              \
    case 2: __asm__ volatile(ASM(2) : FG_PX_CLOBBERS); break;                                              \
    default: __asm__ volatile(ASM(1) : FG_PX_CLOBBERS); break;                                             \
    }
/* the end of a superblock loop (label 1, x17 superblocks): x2 and x3 on to the next superblock's scales (x3 back
 * by what its sub-blocks advanced it), x4 past its head; then the outputs stored */
#  define FG_PX_SB_END(N, block, x3back, head)                                                              \
    "add x2, x2, #" FG_PX_STR(block) "\n\t"                                                                \
    "add x3, x3, #" FG_PX_STR(block - x3back) "\n\t"                                                       \
    "add x4, x4, #" FG_PX_STR(head) "\n\t"                                                                 \
    "subs x17, x17, #1\n\t"                                                                                \
    "b.ne 1b\n\t" FG_PX_LDY FG_PX_EACH(N, FG_PX_STY, , )

/* Half a packed Q5_0 strip (quads 2h and 2h + 1: 8 rows) against n = 1..4 activations, in assembly: per
 * block each quad's 8 value registers are decoded once for the n (and, shl/ushr, bit: 23 instructions a
 * quad) and go into 8 n SDOT by element; the sums start at -16 * sum x (so the block's integer dot is the
 * spec's sum (q - 16) x, exact), then per activation scvtf, dw * dx (fmul by element) and fmla: each output
 * is fma(dw * dx, (float)isum, acc) in block order, bit for bit fg_px_strip_q5's. With 4 activations 166
 * instructions a block of 8 rows against 266 a block of 16 rows x 2 for GCC's fg_px_strip_q5_2 (which
 * spilled). Registers: v0-v7 the outputs, v8-v15 the activations' bytes, v16/v17 the masks 0x0f and 0x10,
 * v18 the activations' scales, v19 their -16 * sum x, v20/v21 the quads' dw, v22/v23 their fifth bits,
 * v24/v25 value bytes, v26 a shifted fifth-bit register and then dw * dx, v27 a value register, v28-v31
 * the sums (FG_PX_EACH). Pointers: x2 the scales, x3 the fifth bits, x4 the value bytes, x17 the blocks
 * left. */
/* group c (0..3): low nibbles of n, fifth bit c of H shifted to bit 4 (by sh = 4 - c) */
#  define FG_PX5_LO(N, n, H, sh, c)                                                                         \
    "and v27.16b, " n ".16b, v16.16b\n\t"                                                                  \
    "shl v26.16b, " H ".16b, #" sh "\n\t"                                                                  \
    "bit v27.16b, v26.16b, v17.16b\n\t" FG_PX_EACH(N, FG_PX_SDOT, LO, c)
/* group c + 4: high nibbles of n, fifth bit c + 4 of H shifted to bit 4 (by c; c = 0: H itself) */
#  define FG_PX5_HI(N, n, H, c)                                                                             \
    "ushr v27.16b, " n ".16b, #4\n\t"                                                                      \
    "ushr v26.16b, " H ".16b, #" c "\n\t"                                                                  \
    "bit v27.16b, v26.16b, v17.16b\n\t" FG_PX_EACH(N, FG_PX_SDOT, HI, c)
#  define FG_PX5_HI0(N, n, H)                                                                               \
    "ushr v27.16b, " n ".16b, #4\n\t"                                                                      \
    "bit v27.16b, " H ".16b, v17.16b\n\t" FG_PX_EACH(N, FG_PX_SDOT, HI, "0")
#  define FG_PX5_DUP(a, u, v) "dup " FG_PX_S##a ".4s, v19.s[" #a "]\n\t"
/* activation a's sum into its output of quad q: acc = fma(dw * dx_a, (float)sum, acc) */
#  define FG_PX5_FMA(a, dw, q)                                                                              \
    "scvtf " FG_PX_S##a ".4s, " FG_PX_S##a ".4s\n\t"                                                       \
    "fmul v26.4s, " dw ".4s, v18.s[" #a "]\n\t"                                                            \
    "fmla " FG_PX_A##q##a ".4s, " FG_PX_S##a ".4s, v26.4s\n\t"
/* one quad of a block: H its fifth bits, dw its scales, q its outputs (A or B); the value bytes at x4 (64),
 * then x4 moves on by 32 + npost */
#  define FG_PX5_QUAD(N, H, dw, q, npost)                                                                   \
    FG_PX_EACH(N, FG_PX5_DUP, , )                                                                          \
    "ldp q24, q25, [x4], #32\n\t"                                                                          \
    FG_PX5_LO(N, "v24", H, "4", "0") FG_PX5_HI0(N, "v24", H)                                               \
    FG_PX5_LO(N, "v25", H, "3", "1") FG_PX5_HI(N, "v25", H, "1")                                           \
    "ldp q24, q25, [x4], #" npost "\n\t"                                                                   \
    FG_PX5_LO(N, "v24", H, "2", "2") FG_PX5_HI(N, "v24", H, "2")                                           \
    FG_PX5_LO(N, "v25", H, "1", "3") FG_PX5_HI(N, "v25", H, "3")                                           \
    FG_PX_EACH(N, FG_PX5_FMA, dw, q)
#  define FG_PX5_ASM(N)                                                                                     \
    FG_PX_LDP FG_PX_EACH(N, FG_PX_MOVI, , )                                                                \
    "movi v16.16b, #0x0f\n\t"                                                                              \
    "movi v17.16b, #0x10\n\t"                                                                              \
    "1:\n\t"                                                                                               \
    FG_PX_EACH(N, FG_PX_LDX, , ) FG_PX_EACH(N, FG_PX_LDD, "v19", )                                         \
    "shl v19.4s, v19.4s, #4\n\t"                                                                           \
    "neg v19.4s, v19.4s\n\t"                                                                               \
    "ldp d20, d21, [x2], #" FG_PX_STR(FG_PX_Q5_BLOCK) "\n\t"                                               \
    "fcvtl v20.4s, v20.4h\n\t"                                                                             \
    "fcvtl v21.4s, v21.4h\n\t"                                                                             \
    "ldp q22, q23, [x3], #" FG_PX_STR(FG_PX_Q5_BLOCK) "\n\t"                                               \
    FG_PX5_QUAD(N, "v22", "v20", A, "32")                                                                  \
    FG_PX5_QUAD(N, "v23", "v21", B, "256")                                                                 \
    "subs x17, x17, #1\n\t"                                                                                \
    "b.ne 1b\n\t" FG_PX_LDY FG_PX_EACH(N, FG_PX_STY, , )

/* rows 8h..8h+7 of the packed Q5_0 strip st against activations x[0..n-1] (nblk blocks), into y[a] + 8h */
static void fg_px_q5_half(const uint8_t *st, unsigned h, const fg_act_q8_row *x, size_t n, size_t nblk,
                          float *const *y) {
  FG_PX_P(st + 16 * h, st + 32 + 32 * h, st + 96 + 128 * h, x, n, nblk, y, h);
  FG_PX_SWITCH(FG_PX5_ASM)
}
#  undef FG_PX5_ASM
#  undef FG_PX5_QUAD
#  undef FG_PX5_FMA
#  undef FG_PX5_DUP
#  undef FG_PX5_HI0
#  undef FG_PX5_HI
#  undef FG_PX5_LO

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

/* Half a packed Q4_K strip (quads 2h and 2h + 1: 8 rows) against n = 1..4 activations, in assembly, as
 * fg_px_q5_half: per sub-block each quad's 8 value registers (and, ushr) go into 8 n SDOT by element, then
 * per activation fma(dw * dx, (float)isum, acc) and fma(mw * dx, (float)sum x, acc) with dw = d * sc and
 * mw = -(dmin * m): fg_px_strip_k4's operations, bit for bit. With 4 activations 169 instructions a
 * sub-block of 8 rows against 239 a sub-block of 16 rows x 2 for GCC's fg_px_strip_k4_2. Registers: v0-v15
 * and v28-v31 as fg_px_q5_half, v16 the mask 0x0f, v17 the activations' (float) sum x, v18 their scales,
 * v19/v20 the quads' d, v21/v22 their dmin (per superblock), v23/v24 the quad's dw and mw, v25/v26 value
 * bytes, v27 a value register and then a scale product. Pointers: x2 the superblock's d and dmin, x3 the
 * sub-block's sc bytes (m 128 bytes on), x4 the value bytes, x17 the superblocks left, x1 the sub-blocks
 * left. */
/* groups c (low nibbles of n) and c + 4 (high nibbles) */
#  define FG_PK4_GROUPS(N, n, c)                                                                            \
    "and v27.16b, " n ".16b, v16.16b\n\t" FG_PX_EACH(N, FG_PX_SDOT, LO, c)                                 \
    "ushr v27.16b, " n ".16b, #4\n\t" FG_PX_EACH(N, FG_PX_SDOT, HI, c)
#  define FG_PK4_ZERO(a, u, v) "movi " FG_PX_S##a ".4s, #0\n\t"
/* activation a's sum into its output of quad q: acc = fma(dw * dx, (float)s, acc), then fma(mw * dx, xs, acc) */
#  define FG_PK4_FMA(a, u, q)                                                                               \
    "scvtf " FG_PX_S##a ".4s, " FG_PX_S##a ".4s\n\t"                                                       \
    "fmul v27.4s, v23.4s, v18.s[" #a "]\n\t"                                                               \
    "fmla " FG_PX_A##q##a ".4s, " FG_PX_S##a ".4s, v27.4s\n\t"                                             \
    "fmul v27.4s, v24.4s, v18.s[" #a "]\n\t"                                                               \
    "fmla " FG_PX_A##q##a ".4s, v27.4s, v17.s[" #a "]\n\t"
/* one quad of a sub-block: its sc and m bytes at x3 + qoff and x3 + moff (4 each), d and dmin, its outputs
 * q (A or B); the value bytes at x4 (64), then x4 moves on by 32 + npost */
#  define FG_PK4_QUAD(N, qoff, moff, d, dmin, q, npost)                                                     \
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
    "fneg v24.4s, v24.4s\n\t" FG_PX_EACH(N, FG_PK4_ZERO, , )                                               \
    "ldp q25, q26, [x4], #32\n\t" FG_PK4_GROUPS(N, "v25", "0") FG_PK4_GROUPS(N, "v26", "1")                \
    "ldp q25, q26, [x4], #" npost "\n\t" FG_PK4_GROUPS(N, "v25", "2") FG_PK4_GROUPS(N, "v26", "3")       \
    FG_PX_EACH(N, FG_PK4_FMA, , q)
#  define FG_PK4_ASM(N)                                                                                     \
    FG_PX_LDP FG_PX_EACH(N, FG_PX_MOVI, , )                                                                \
    "movi v16.16b, #0x0f\n\t"                                                                              \
    "1:\n\t"                                                                                               \
    "ldr q19, [x2]\n\t"                                                                                    \
    "ldr q21, [x2, #32]\n\t"                                                                               \
    "fcvtl2 v20.4s, v19.8h\n\t"                                                                            \
    "fcvtl v19.4s, v19.4h\n\t"                                                                             \
    "fcvtl2 v22.4s, v21.8h\n\t"                                                                            \
    "fcvtl v21.4s, v21.4h\n\t"                                                                             \
    "mov x1, #8\n\t"                                                                                       \
    "2:\n\t"                                                                                               \
    FG_PX_EACH(N, FG_PX_LDX, , ) FG_PX_EACH(N, FG_PX_LDD, "v17", )                                         \
    "scvtf v17.4s, v17.4s\n\t"                                                                             \
    FG_PK4_QUAD(N, "0", "128", "v19", "v21", A, "32")                                                      \
    FG_PK4_QUAD(N, "4", "132", "v20", "v22", B, "160")                                                     \
    "add x3, x3, #16\n\t"                                                                                  \
    "subs x1, x1, #1\n\t"                                                                                  \
    "b.ne 2b\n\t"                                                                                          \
    FG_PX_SB_END(N, FG_PX_K4_BLOCK, 128, FG_PX_K4_HEAD)

/* rows 8h..8h+7 of the packed Q4_K strip st against activations x[0..n-1] (nsb superblocks), into y[a] + 8h */
static void fg_px_k4_half(const uint8_t *st, unsigned h, const fg_act_q8_row *x, size_t n, size_t nsb,
                          float *const *y) {
  FG_PX_P(st + 16 * h, st + 64 + 8 * h, st + FG_PX_K4_HEAD + 128 * h, x, n, nsb, y, h);
  FG_PX_SWITCH(FG_PK4_ASM)
}
#  undef FG_PK4_ASM
#  undef FG_PK4_QUAD
#  undef FG_PK4_FMA
#  undef FG_PK4_ZERO
#  undef FG_PK4_GROUPS

/* Half a packed Q6_K strip (quads 2h and 2h + 1: 8 rows) against n = 1..4 activations, in assembly: per block
 * each quad's six registers R0..R5 give its 8 value registers (groups 0..5: sshr #2; groups 6 and 7: shl, two
 * sli and sshr from the low bits of three of them: 14 instructions a quad), each into n SDOT by element, groups
 * 0..3 into the sums ia, 4..7 into ib; then per activation isum = sa * ia + sb * ib (mul, mla: exact int32),
 * scvtf, dw * dx (fmul by element) and fmla: each output is fma(dw * dx, (float)isum, acc) in block order, the
 * q8 spec bit for bit (fg_spec_block_q8 with fg_q8w_decode's Q6_K values). With 4 activations 80 instructions
 * a quad and block, 32 of them sdot. Registers: v0-v15 as fg_px_q5_half, v16/v17 the quads' dw (per
 * superblock), v18 the activations' scales, v20-v23 the sums ib, v24-v26 three of R0..R5 and then the quad's
 * sa and sb (int32), v27 a value register and then dw * dx, v28-v31 the sums ia. Pointers: x2 the
 * superblock's d, x3 the block's scales, x4 the value bytes, x17 the superblocks left, x1 the blocks left. */
#  define FG_PQ6_T0 "v20"
#  define FG_PQ6_T1 "v21"
#  define FG_PQ6_T2 "v22"
#  define FG_PQ6_T3 "v23"
#  define FG_PQ6_SDB(a, u, c) "sdot " FG_PQ6_T##a ".4s, v27.16b, " FG_PX_XHI##a ".4b[" c "]\n\t"
#  define FG_PQ6_ZERO(a, u, v) "movi " FG_PX_S##a ".4s, #0\n\tmovi " FG_PQ6_T##a ".4s, #0\n\t"
#  define FG_PQ6_LDD(a, u, v) "ld1 {v18.s}[" #a "], [" FG_PX_PD##a "], #4\n\t"
/* the group in the low bits of v24..v26 (bits 4..5, 2..3, 0..1 of p) into v27 as q - 32 */
#  define FG_PQ6_LOW                                                                                        \
    "shl v27.16b, v26.16b, #2\n\t"                                                                         \
    "sli v27.16b, v25.16b, #4\n\t"                                                                         \
    "sli v27.16b, v24.16b, #6\n\t"                                                                         \
    "sshr v27.16b, v27.16b, #2\n\t"
#  define FG_PQ6_TOP(r) "sshr v27.16b, " r ".16b, #2\n\t"
/* activation a's sums into its output of quad q: acc = fma(dw * dx, (float)(sa * ia + sb * ib), acc) */
#  define FG_PQ6_FMA(a, dw, q)                                                                              \
    "mul " FG_PX_S##a ".4s, " FG_PX_S##a ".4s, v24.4s\n\t"                                                 \
    "mla " FG_PX_S##a ".4s, " FG_PQ6_T##a ".4s, v25.4s\n\t"                                                \
    "scvtf " FG_PX_S##a ".4s, " FG_PX_S##a ".4s\n\t"                                                       \
    "fmul v27.4s, " dw ".4s, v18.s[" #a "]\n\t"                                                            \
    "fmla " FG_PX_A##q##a ".4s, " FG_PX_S##a ".4s, v27.4s\n\t"
/* one quad of a block: its 96 value bytes at x4 (x4 moves on by 96), its sa and sb at x3 + qoff, dw, its
 * outputs q (A or B) */
#  define FG_PQ6_QUAD(N, qoff, dw, q)                                                                       \
    FG_PX_EACH(N, FG_PQ6_ZERO, , )                                                                         \
    "ld1 {v24.16b, v25.16b, v26.16b}, [x4], #48\n\t"                                                       \
    FG_PQ6_TOP("v24") FG_PX_EACH(N, FG_PX_SDOT, LO, "0")                                                   \
    FG_PQ6_TOP("v25") FG_PX_EACH(N, FG_PX_SDOT, LO, "1")                                                   \
    FG_PQ6_TOP("v26") FG_PX_EACH(N, FG_PX_SDOT, LO, "2")                                                   \
    FG_PQ6_LOW FG_PX_EACH(N, FG_PQ6_SDB, , "2")                                                            \
    "ld1 {v24.16b, v25.16b, v26.16b}, [x4], #48\n\t"                                                       \
    FG_PQ6_TOP("v24") FG_PX_EACH(N, FG_PX_SDOT, LO, "3")                                                   \
    FG_PQ6_TOP("v25") FG_PX_EACH(N, FG_PQ6_SDB, , "0")                                                     \
    FG_PQ6_TOP("v26") FG_PX_EACH(N, FG_PQ6_SDB, , "1")                                                     \
    FG_PQ6_LOW FG_PX_EACH(N, FG_PQ6_SDB, , "3")                                                            \
    "ldr d24, [x3, #" qoff "]\n\t"                                                                         \
    "sxtl v24.8h, v24.8b\n\t"                                                                              \
    "sxtl2 v25.4s, v24.8h\n\t"                                                                             \
    "sxtl v24.4s, v24.4h\n\t" FG_PX_EACH(N, FG_PQ6_FMA, dw, q)
#  define FG_PQ6_ASM(N)                                                                                     \
    FG_PX_LDP FG_PX_EACH(N, FG_PX_MOVI, , )                                                                \
    "1:\n\t"                                                                                               \
    "ldr q17, [x2]\n\t"                                                                                    \
    "fcvtl v16.4s, v17.4h\n\t"                                                                             \
    "fcvtl2 v17.4s, v17.8h\n\t"                                                                            \
    "mov x1, #8\n\t"                                                                                       \
    "2:\n\t"                                                                                               \
    FG_PX_EACH(N, FG_PX_LDX, , ) FG_PX_EACH(N, FG_PQ6_LDD, , )                                             \
    FG_PQ6_QUAD(N, "0", "v16", A)                                                                          \
    FG_PQ6_QUAD(N, "8", "v17", B)                                                                          \
    "add x3, x3, #32\n\t"                                                                                  \
    "add x4, x4, #192\n\t"                                                                                 \
    "subs x1, x1, #1\n\t"                                                                                  \
    "b.ne 2b\n\t"                                                                                          \
    FG_PX_SB_END(N, FG_PX_Q6_BLOCK, 256, FG_PX_Q6_HEAD)

/* rows 8h..8h+7 of the packed Q6_K strip st against activations x[0..n-1] (nsb superblocks), into y[a] + 8h */
static void fg_px_q6_half(const uint8_t *st, unsigned h, const fg_act_q8_row *x, size_t n, size_t nsb,
                          float *const *y) {
  FG_PX_P(st + 16 * h, st + 32 + 16 * h, st + FG_PX_Q6_HEAD + 192 * h, x, n, nsb, y, h);
  FG_PX_SWITCH(FG_PQ6_ASM)
}
#  undef FG_PQ6_ASM
#  undef FG_PQ6_QUAD
#  undef FG_PQ6_FMA
#  undef FG_PQ6_TOP
#  undef FG_PQ6_LOW
#  undef FG_PQ6_LDD
#  undef FG_PQ6_ZERO
#  undef FG_PQ6_SDB

/* Outputs i0 <= i < i1 of a packed Q5_0 / Q4_K / Q6_K matrix: whole strips from the copy, each against every
 * activation; the rest (and row lists, and matrices without a copy) by `rows` */
FG_NEON_INLINE void fg_px_run(const fg_mm_args *a, size_t i0, size_t i1, const uint32_t type, fg_mm_fn rows) {
  const size_t s0 = (i0 + FG_PK_ROWS - 1) / FG_PK_ROWS * FG_PK_ROWS, s1 = i1 / FG_PK_ROWS * FG_PK_ROWS;
  if (!a->packed || a->rows || s0 >= s1) {
    rows(a, i0, i1);
    return;
  }
  if (i0 < s0) rows(a, i0, s0);
  const size_t sbytes = type == FG_TYPE_Q5_0   ? a->cols / 32 * FG_PX_Q5_BLOCK
                        : type == FG_TYPE_Q4_K ? a->cols / 256 * FG_PX_K4_BLOCK
                                               : a->cols / 256 * FG_PX_Q6_BLOCK; /* a strip's bytes (fg_pk_size) */
  const size_t stride = fg_act_q8_row_bytes(a->cols);
  const uint8_t *st = a->packed + s0 / FG_PK_ROWS * sbytes;
  for (size_t t = s0; t < s1; t += FG_PK_ROWS, st += sbytes) {
    if (a->nb == 1) { /* decode: the strip against its one activation (Q5_0, Q4_K in C) */
      const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act, a->cols);
      float *y = a->y + t;
      if (type == FG_TYPE_Q5_0) fg_px_strip_q5(st, xr, a->cols, y);
      else if (type == FG_TYPE_Q4_K) fg_px_strip_k4(st, xr, a->cols, y);
      else
        for (unsigned h = 0; h < 2; h++) fg_px_q6_half(st, h, &xr, 1, a->cols / 256, &y);
      continue;
    }
    for (size_t b = 0; b < a->nb; b += 4) { /* up to 4 activations a pass, each half strip in assembly */
      const size_t n = a->nb - b < 4 ? a->nb - b : 4;
      fg_act_q8_row x[4];
      float *y[4];
      for (size_t j = 0; j < n; j++) {
        x[j] = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b + j) * stride, a->cols);
        y[j] = a->y + (b + j) * a->ldy + t;
      }
      for (unsigned h = 0; h < 2; h++) {
        if (type == FG_TYPE_Q5_0) fg_px_q5_half(st, h, x, n, a->cols / 32, y);
        else if (type == FG_TYPE_Q4_K) fg_px_k4_half(st, h, x, n, a->cols / 256, y);
        else fg_px_q6_half(st, h, x, n, a->cols / 256, y);
      }
    }
  }
  if (s1 < i1) rows(a, s1, i1);
}
static void fg_q5_0_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_px_run(a, i0, i1, FG_TYPE_Q5_0, fg_q5_0_vec_direct); }
static void fg_q5_0_gemm_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_px_run(a, i0, i1, FG_TYPE_Q5_0, fg_q5_0_gemm); }
static void fg_q4_k_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_px_run(a, i0, i1, FG_TYPE_Q4_K, fg_q4_k_vec); }
static void fg_q4_k_gemm_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_px_run(a, i0, i1, FG_TYPE_Q4_K, fg_q4_k_gemm); }
static void fg_q6_k_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_px_run(a, i0, i1, FG_TYPE_Q6_K, fg_q6_k_vec); }
static void fg_q6_k_gemm_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_px_run(a, i0, i1, FG_TYPE_Q6_K, fg_q6_k_gemm); }
#  define FG_PX_TILE FG_PK_ROWS /* row ranges of whole strips */
#elif !FG_NEON_A64
// ----------------------------------------------------------------------------
// Packed Q5_0, Q4_K and Q6_K (armv7; load-time repacking, kernels.h): strips of 4 rows holding what the staged gemm
// builds per tile and segment (the table's own staging writes the copy), so the loops start at the products:
//   Q5_0, per strip (nblk 32-blocks, FG_PA_BLOCK bytes each): the 4 rows' dw as f32 per block (16 nblk bytes, the
//   exact conversions of the file's f16 d), then per block 128 bytes of values q - 16 as int8 (the fifth bit
//   merged): neon_dotprod the VSDOT groups g0..g7 of 16 (bytes 4c..4c+3 of group g: values 4g..4g+3 of row c,
//   fg_nq_stage_q5_0_sd_a32), neon the 4 rows' 32 values one after the other (fg_nq_stage_q5_0_a32);
//   Q4_K, per strip (FG_PA_K4_BLOCK bytes a 32-block): the staged dw = d * sc and mw = -(dmin * m) as f32 (16
//   nblk bytes each), then the values q (0..15) as int8 in the same two forms (fg_nq_stage, fg_nq_interleave);
//   Q6_K, per strip (FG_PA_Q6_BLOCK bytes a 32-block): the staged dw (the superblock's d) as f32, the half-block
//   scales sa and sb as int32 (16 nblk bytes each), then the values q - 32 as int8 in the same two forms; its
//   gemm runs the staged loops themselves per segment (fg_pa_run_q6).
// Q5_0: 144 bytes per 4 rows and block against the file's 88 (x 1.64); Q4_K: 320 bytes per row and superblock
// against 144 (x 2.22); Q6_K: 352 against 210 (x 1.68). 16 q registers leave no room to decode nibbles and fifth bits once for several
// activations, as aarch64's 16-row strips do, and decoding them per activation pair (shift, mask, bit insert:
// about 3 instructions a value register, 24 a block of 4 rows) costs about what the VSDOT loop it feeds does
// (35). Each output is fma(dw * dx, (float)isum, acc) in block order (Q4_K then fma(mw * dx, (float)sum x, acc)),
// isum exact in int32: the q8 spec bit for bit, the staged kernels' operations. Row lists, ranges that cut a
// strip and activations below the armv7 exactness threshold read the file's rows. The copy must be 16-byte
// aligned (the loader aligns each copy to 64).
#  define FG_PA_ROWS 4
#  define FG_PA_BLOCK (16 + 128)
#  define FG_PA_K4_BLOCK (16 + 16 + 128) /* Q4_K: dw, mw, values per 32-block */
#  define FG_PA_Q6_BLOCK (16 + 16 + 16 + 128) /* Q6_K: dw, sa, sb, values per 32-block */

static size_t fg_pa_size(uint32_t type, size_t rows, size_t cols) {
  const size_t unit = type == FG_TYPE_Q4_K || type == FG_TYPE_Q6_K ? 256 : 32;
  const size_t bb = type == FG_TYPE_Q5_0   ? FG_PA_BLOCK
                    : type == FG_TYPE_Q4_K ? FG_PA_K4_BLOCK
                    : type == FG_TYPE_Q6_K ? FG_PA_Q6_BLOCK
                                           : 0;
  if (!bb || rows == 0 || rows % FG_PA_ROWS != 0 || cols == 0 || cols % unit != 0) return 0;
  const size_t strips = rows / FG_PA_ROWS, nblk = cols / 32;
  if (nblk > SIZE_MAX / bb / strips) return 0;
  return strips * nblk * bb;
}

static void fg_pa_pack(uint32_t type, const uint8_t *w, size_t row_bytes, size_t cols, size_t r0, size_t r1,
                       uint8_t *dst) {
  const size_t nblk = cols / 32;
  for (size_t s = r0 / FG_PA_ROWS; s < r1 / FG_PA_ROWS; s++) {
    const uint8_t *const rp[FG_PA_ROWS] = {w + 4 * s * row_bytes, w + (4 * s + 1) * row_bytes,
                                           w + (4 * s + 2) * row_bytes, w + (4 * s + 3) * row_bytes};
    if (type == FG_TYPE_Q4_K || type == FG_TYPE_Q6_K) { /* the per-block scales (Q4_K dw, mw; Q6_K dw, sa, sb),
                                                          * then the values: the staged gemm's segments in turn */
      const bool k4 = type == FG_TYPE_Q4_K;
      const size_t n_sc = k4 ? 2 : 3;
      uint8_t *st = dst + s * nblk * (k4 ? FG_PA_K4_BLOCK : FG_PA_Q6_BLOCK);
      int8_t *v = (int8_t *)(st + 16 * n_sc * nblk);
      fg_nq_seg sg;
      for (size_t k0 = 0; k0 < nblk; k0 += FG_NQ_KSEG) {
        const size_t k1 = FG_MIN(k0 + FG_NQ_KSEG, nblk);
        for (size_t r = 0; r < FG_PA_ROWS; r++) fg_nq_stage(&sg, type, rp[r], k0, k1, r);
#  if FG_NEON_HAVE_DOTPROD
        fg_nq_interleave(&sg, k1 - k0, v + 128 * k0);
#  else
        memcpy(v + 128 * k0, sg.v, 128 * (k1 - k0));
#  endif
        const void *const sc[3] = {sg.dw, k4 ? (const void *)sg.mw : (const void *)sg.sa, sg.sb};
        for (size_t i = 0; i < n_sc; i++) memcpy(st + 16 * (i * nblk + k0), sc[i], 16 * (k1 - k0));
      }
      continue;
    }
    uint8_t *st = dst + s * nblk * FG_PA_BLOCK;
#  if FG_NEON_HAVE_DOTPROD
    fg_nq_stage_q5_0_sd_a32(rp, 0, nblk, (int8_t *)(st + 16 * nblk), (float *)(void *)st);
#  else
    for (size_t r = 0; r < FG_PA_ROWS; r++)
      fg_nq_stage_q5_0_a32(rp[r], nblk, (int8_t *)(st + 16 * nblk + 32 * r), (float *)(void *)st + r);
#  endif
  }
}

#  if FG_NEON_HAVE_DOTPROD
/* One activation against a packed strip, fg_nq_blocks_sdot_a32's loop for one: per block the activation's 32
 * bytes (q0-q1), the groups g0..g7 (q8-q15), 8 VSDOT by element into a zeroed q4 (lane r = row r), then
 * acc = fma(dw * dx, (float)isum, acc) (q6; dw in q5, dx in d4[0]): 21 instructions a block of 4 rows; min1
 * (Q4_K) then acc = fma(mw * dx, (float)sum x, acc), 6 more. */
#    define FG_PA_B1_BODY                      \
  "1:\n\t"                                     \
  "vld1.8 {d0-d3}, [%[qa]]!\n\t"               \
  "vld1.8 {d16-d19}, [%[w] :128]!\n\t"         \
  "vld1.8 {d20-d23}, [%[w] :128]!\n\t"         \
  "vld1.8 {d24-d27}, [%[w] :128]!\n\t"         \
  "vld1.8 {d28-d31}, [%[w] :128]!\n\t"         \
  "vmov.i32 q4, #0\n\t"                        \
  "vsdot.s8 q4, q8, d0[0]\n\t"                 \
  "vsdot.s8 q4, q9, d0[1]\n\t"                 \
  "vsdot.s8 q4, q10, d1[0]\n\t"                \
  "vsdot.s8 q4, q11, d1[1]\n\t"                \
  "vsdot.s8 q4, q12, d2[0]\n\t"                \
  "vsdot.s8 q4, q13, d2[1]\n\t"                \
  "vsdot.s8 q4, q14, d3[0]\n\t"                \
  "vsdot.s8 q4, q15, d3[1]\n\t"                \
  "vld1.32 {d10-d11}, [%[dw]]!\n\t"            \
  "vld1.32 {d4[0]}, [%[da]]!\n\t"              \
  "vcvt.f32.s32 q4, q4\n\t"                    \
  "vmul.f32 q5, q5, d4[0]\n\t"                 \
  "vfma.f32 q6, q5, q4\n\t"
#    define FG_PA_B1_MIN1                      \
  "vld1.32 {d5[0]}, [%[sa]]!\n\t"              \
  "vld1.32 {d10-d11}, [%[mw]]!\n\t"            \
  "vcvt.f32.s32 d5, d5\n\t"                    \
  "vmul.f32 q5, q5, d4[0]\n\t"                 \
  "vdup.32 q4, d5[0]\n\t"                      \
  "vfma.f32 q6, q5, q4\n\t"
#    define FG_PA_B1_REGS                                                                                   \
  : [w] "+r"(w), [dw] "+r"(dw), [mw] "+r"(mw), [qa] "+r"(qa), [da] "+r"(da), [sa] "+r"(sa), [n] "+r"(n)     \
  : [acc] "r"(acc)                                                                                         \
  : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d8", "d9", "d10", "d11", "d12", "d13", "d16", "d17", \
    "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28", "d29", "d30", "d31"
__attribute__((noinline)) static void fg_pa_blocks1_a32(const int8_t *w, const float *dw, const float *mw,
                                                        const int8_t *qa, const float *da, const int32_t *sa,
                                                        size_t n, float *acc, const int min1) {
  if (n == 0) return;
  if (min1)
    __asm__ volatile("vld1.32 {d12-d13}, [%[acc]]\n\t" FG_PA_B1_BODY FG_PA_B1_MIN1
                     "subs %[n], %[n], #1\n\t"
                     "bne 1b\n\t"
                     "vst1.32 {d12-d13}, [%[acc]]\n\t" FG_PA_B1_REGS);
  else
    __asm__ volatile("vld1.32 {d12-d13}, [%[acc]]\n\t" FG_PA_B1_BODY
                     "subs %[n], %[n], #1\n\t"
                     "bne 1b\n\t"
                     "vst1.32 {d12-d13}, [%[acc]]\n\t" FG_PA_B1_REGS);
}
#    undef FG_PA_B1_BODY
#    undef FG_PA_B1_MIN1
#    undef FG_PA_B1_REGS

/* Two activations against a packed strip: fg_nq_blocks_sdot_a32 out of line (its asm needs 11 core registers) */
__attribute__((noinline)) static void fg_pa_blocks2(const int8_t *w, const float *dw, const float *mw, fg_act_q8_row x0,
                                                    fg_act_q8_row x1, size_t n, float *acc, const int min1) {
  if (min1) fg_nq_blocks_sdot_a32(w, dw, mw, x0.qs, x0.d, x0.isum, x1.qs, x1.d, x1.isum, n, acc, 1);
  else fg_nq_blocks_sdot_a32(w, dw, NULL, x0.qs, x0.d, x0.isum, x1.qs, x1.d, x1.isum, n, acc, 0);
}
#  else
/* neon: the staged types' block loop (fg_nq_blocks_a32) from the copy, two activations or one */
__attribute__((noinline)) static void fg_pa_blocks2(const int8_t *w, const float *dw, const float *mw, fg_act_q8_row x0,
                                                    fg_act_q8_row x1, size_t n, float *acc, const int min1) {
  if (min1) fg_nq_blocks_a32(w, dw, mw, x0.qs, x0.d, x0.isum, x1.qs, x1.d, x1.isum, n, acc, 1, 1);
  else fg_nq_blocks_a32(w, dw, NULL, x0.qs, x0.d, x0.isum, x1.qs, x1.d, x1.isum, n, acc, 1, 0);
}
__attribute__((noinline)) static void fg_pa_blocks1_a32(const int8_t *w, const float *dw, const float *mw,
                                                        const int8_t *qa, const float *da, const int32_t *sa,
                                                        size_t n, float *acc, const int min1) {
  if (min1) fg_nq_blocks_a32(w, dw, mw, qa, da, sa, qa, da, sa, n, acc, 0, 1);
  else fg_nq_blocks_a32(w, dw, NULL, qa, da, NULL, qa, da, NULL, n, acc, 0, 0);
}
#  endif

/* Outputs i0 <= i < i1 of a packed Q5_0 or Q4_K matrix: whole strips from the copy, two activations a pass
 * (the staged gemm's loop) and a last one alone; the rest (and row lists, and matrices without a copy) by
 * `rows` */
FG_NEON_INLINE void fg_pa_run(const fg_mm_args *a, size_t i0, size_t i1, const uint32_t type, fg_mm_fn rows) {
  const size_t s0 = (i0 + FG_PA_ROWS - 1) / FG_PA_ROWS * FG_PA_ROWS, s1 = i1 / FG_PA_ROWS * FG_PA_ROWS;
  if (!a->packed || a->rows || s0 >= s1 || ((uintptr_t)a->packed & 15) != 0) {
    rows(a, i0, i1);
    return;
  }
  if (i0 < s0) rows(a, i0, s0);
  const int min1 = type == FG_TYPE_Q4_K;
  const size_t nblk = a->cols / 32, stride = fg_act_q8_row_bytes(a->cols);
  const size_t sbytes = nblk * (min1 ? FG_PA_K4_BLOCK : FG_PA_BLOCK), voff = (min1 ? 32 : 16) * nblk;
  const uint32_t *safe = fg_q8_flags(a->act, a->cols, a->nb);
  for (size_t t = s0; t < s1; t += FG_PA_ROWS) {
    const uint8_t *st = a->packed + t / FG_PA_ROWS * sbytes;
    const float *dw = (const float *)(const void *)st, *mw = dw + 4 * nblk;
    const int8_t *vt = (const int8_t *)(st + voff);
    float acc[8] __attribute__((aligned(16)));
    size_t b = 0;
    for (; b + 2 <= a->nb; b += 2) {
      const fg_act_q8_row x0 = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
      const fg_act_q8_row x1 = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b + 1) * stride, a->cols);
      vst1q_f32(acc, vdupq_n_f32(0.0f));
      vst1q_f32(acc + 4, vdupq_n_f32(0.0f));
      fg_pa_blocks2(vt, dw, mw, x0, x1, nblk, acc, min1);
      vst1q_f32(a->y + b * a->ldy + t, vld1q_f32(acc));
      vst1q_f32(a->y + (b + 1) * a->ldy + t, vld1q_f32(acc + 4));
    }
    for (; b < a->nb; b++) {
      const fg_act_q8_row x0 = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
      vst1q_f32(acc, vdupq_n_f32(0.0f));
      fg_pa_blocks1_a32(vt, dw, mw, x0.qs, x0.d, x0.isum, nblk, acc, min1);
      vst1q_f32(a->y + b * a->ldy + t, vld1q_f32(acc));
    }
    for (b = 0; b < a->nb; b++) /* tiny activation scales: those outputs by the spec in scalar VFP code */
      if (!safe[b]) {
        const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
        for (size_t r = 0; r < FG_PA_ROWS; r++)
          a->y[b * a->ldy + t + r] = fg_spec_dot_q8(a->type, a->w + (t + r) * a->row_bytes, xr, a->cols);
      }
  }
  if (s1 < i1) rows(a, s1, i1);
}
static void fg_q5_0_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_pa_run(a, i0, i1, FG_TYPE_Q5_0, fg_q5_0_vec_direct); }
static void fg_q5_0_gemm_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_pa_run(a, i0, i1, FG_TYPE_Q5_0, fg_q5_0_gemm); }
static void fg_q4_k_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_pa_run(a, i0, i1, FG_TYPE_Q4_K, fg_q4_k_vec); }
static void fg_q4_k_gemm_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_pa_run(a, i0, i1, FG_TYPE_Q4_K, fg_q4_k_gemm); }

/* Outputs i0 <= i < i1 of a packed Q6_K matrix: per whole strip and segment the staged gemm's own loops
 * (neon_dotprod fg_nq_seg_run_dp, neon fg_nq_sub_blocks_a32 and fg_nq_seg_run_v7's one-activation loop) on
 * the copy's values, with the segment's dw, sa, sb copied into a segment (48 bytes a block of 4 rows): two
 * activations a pass, a last one alone; the rest (and row lists, and matrices without a copy) by `rows` */
FG_NEON_INLINE void fg_pa_run_q6(const fg_mm_args *a, size_t i0, size_t i1, fg_mm_fn rows) {
  const size_t s0 = (i0 + FG_PA_ROWS - 1) / FG_PA_ROWS * FG_PA_ROWS, s1 = i1 / FG_PA_ROWS * FG_PA_ROWS;
  if (!a->packed || a->rows || s0 >= s1 || ((uintptr_t)a->packed & 15) != 0) {
    rows(a, i0, i1);
    return;
  }
  if (i0 < s0) rows(a, i0, s0);
  const int fl = fg_q8w_flags(FG_TYPE_Q6_K);
  const size_t nblk = a->cols / 32, sbytes = nblk * FG_PA_Q6_BLOCK;
  const uint32_t *safe = fg_q8_flags(a->act, a->cols, a->nb);
  fg_nq_seg sg;
  for (size_t t = s0; t < s1; t += FG_PA_ROWS) {
    const uint8_t *st = a->packed + t / FG_PA_ROWS * sbytes;
    const int8_t *vt = (const int8_t *)(st + 48 * nblk);
    for (size_t k0 = 0; k0 < nblk; k0 += FG_NQ_KSEG) {
      const size_t k1 = FG_MIN(k0 + FG_NQ_KSEG, nblk);
      memcpy(sg.dw, st + 16 * k0, 16 * (k1 - k0));
      memcpy(sg.sa, st + 16 * (nblk + k0), 16 * (k1 - k0));
      memcpy(sg.sb, st + 16 * (2 * nblk + k0), 16 * (k1 - k0));
      const int8_t *v = vt + 128 * k0;
      size_t b = 0;
#  if FG_NEON_HAVE_DOTPROD
      for (; b + 2 <= a->nb; b += 2) fg_nq_seg_run_dp(a, &sg, v, t, FG_PA_ROWS, k0, k1, b, 2, fl);
      for (; b < a->nb; b++) fg_nq_seg_run_dp(a, &sg, v, t, FG_PA_ROWS, k0, k1, b, 1, fl);
#  else
      const size_t stride = fg_act_q8_row_bytes(a->cols);
      for (; b < a->nb; b += 2) {
        const int B = b + 2 <= a->nb ? 2 : 1;
        const fg_act_q8_row xa = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * stride, a->cols);
        const fg_act_q8_row xb = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b + (B == 2)) * stride, a->cols);
        float *ya = a->y + b * a->ldy + t, *yb = ya + a->ldy;
        float acc[8] __attribute__((aligned(16)));
        vst1q_f32(acc, k0 == 0 ? vdupq_n_f32(0.0f) : vld1q_f32(ya));
        vst1q_f32(acc + 4, B == 2 && k0 != 0 ? vld1q_f32(yb) : vdupq_n_f32(0.0f));
        if (B == 2)
          fg_nq_sub_blocks_a32(v, sg.dw, sg.sa, sg.sb, xa.qs + 32 * k0, xa.d + k0, xb.qs + 32 * k0, xb.d + k0, k1 - k0,
                               acc);
        else {
          float32x4_t acc0 = vld1q_f32(acc);
          for (size_t k = k0; k < k1; k++) {
            const size_t e = (k - k0) * FG_Q_ROWS;
            const int8_t *xq = xa.qs + 32 * k;
            const int32x4_t isum =
                fg_nq_isum_v7(v + 32 * e, vld1q_s8(xq), vld1q_s8(xq + 16), fl, vld1q_s32(sg.sa + e), vld1q_s32(sg.sb + e));
            acc0 = fg_nq_fma(acc0, &sg, e, isum, xq, xa.d[k], xa.isum[k], fl);
          }
          vst1q_f32(acc, acc0);
        }
        vst1q_f32(ya, vld1q_f32(acc));
        if (B == 2) vst1q_f32(yb, vld1q_f32(acc + 4));
      }
#  endif
    }
    for (size_t b = 0; b < a->nb; b++) /* tiny activation scales: those outputs by the spec in scalar VFP code */
      if (!safe[b]) {
        const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * fg_act_q8_row_bytes(a->cols), a->cols);
        for (size_t r = 0; r < FG_PA_ROWS; r++)
          a->y[b * a->ldy + t + r] = fg_spec_dot_q8(a->type, a->w + (t + r) * a->row_bytes, xr, a->cols);
      }
  }
  if (s1 < i1) rows(a, s1, i1);
}
static void fg_q6_k_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_pa_run_q6(a, i0, i1, fg_q6_k_vec); }
static void fg_q6_k_gemm_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_pa_run_q6(a, i0, i1, fg_q6_k_gemm); }
#  define FG_PX_TILE FG_Q_ROWS /* = FG_PA_ROWS */
#else
#  define fg_q5_0_vec_any fg_q5_0_vec_direct
#  define fg_q5_0_gemm_any fg_q5_0_gemm
#  define fg_q4_k_vec_any fg_q4_k_vec
#  define fg_q4_k_gemm_any fg_q4_k_gemm
#  define fg_q6_k_vec_any fg_q6_k_vec
#  define fg_q6_k_gemm_any fg_q6_k_gemm
#  define FG_PX_TILE FG_Q_ROWS
#endif
