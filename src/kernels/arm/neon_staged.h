/* neon_staged.h — the other q8-spec types (Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS): row tiles staged
 * into fg_q8w form per column segment, then one int8 core for every type. */
#ifndef FG_NEON_IMPL_H
#  error "a part of kernels/arm/neon_impl.h (compiled once per NEON table): include that"
#endif

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

/* all ones in byte j where bit j of the 16 bits b[0] | b[1] << 8 is set */
FG_NEON_INLINE uint8x16_t fg_nq_bit5(const uint8_t *b) {
  static const uint8_t k_bits[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  return vtstq_u8(vcombine_u8(vdup_n_u8(b[0]), vdup_n_u8(b[1])), vld1q_u8(k_bits));
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

#if !FG_NEON_A64
/* armv7: Q5_0 blocks b[0..n) of one row staged as fg_nq_stage's Q5_0 case does, in assembly (GCC spent 33
 * instructions a block, 16 here): the f16 scale by the scalar VFP conversion into dw (stride 4 floats), the
 * four qh bytes each replicated over a d register by one vld4 (byte j of the pair tested against bit j % 8),
 * then v = q where the fifth bit is set and q | 0xf0 (q - 16 as int8) where it is clear, 32 values to v
 * (stride 128 bytes: the 4 rows of a block). */
static void fg_nq_stage_q5_0_a32(const uint8_t *b, size_t n, int8_t *v, float *dw) {
  static const uint8_t k_bits[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  if (n == 0) return;
  const size_t vs = 128, ds = 16;
  __asm__ volatile(
      "vld1.8 {d12-d13}, [%[bits]]\n\t"
      "vmov.i8 q5, #15\n\t"
      "vmov.i8 q7, #240\n\t"
      "1:\n\t"
      "vld1.16 {d0[0]}, [%[b]]!\n\t"
      "vld4.8 {d4[], d5[], d6[], d7[]}, [%[b]]!\n\t"
      "vld1.8 {d16-d17}, [%[b]]!\n\t"
      "vcvtb.f32.f16 s0, s0\n\t"
      "vtst.8 q2, q2, q6\n\t"
      "vtst.8 q3, q3, q6\n\t"
      "vand q9, q8, q5\n\t"
      "vshr.u8 q10, q8, #4\n\t"
      "vbic q2, q7, q2\n\t"
      "vbic q3, q7, q3\n\t"
      "vst1.32 {d0[0]}, [%[dw]], %[ds]\n\t"
      "vorr q9, q9, q2\n\t"
      "vorr q10, q10, q3\n\t"
      "vst1.8 {d18-d21}, [%[v] :128], %[vs]\n\t"
      "subs %[n], %[n], #1\n\t"
      "bne 1b\n\t"
      : [b] "+r"(b), [v] "+r"(v), [dw] "+r"(dw), [n] "+r"(n)
      : [bits] "r"(k_bits), [vs] "r"(vs), [ds] "r"(ds)
      : "cc", "memory", "d0", "d1", "d4", "d5", "d6", "d7", "d10", "d11", "d12", "d13", "d14", "d15", "d16", "d17",
        "d18", "d19", "d20", "d21");
}
#endif

#if !FG_NEON_A64
/* armv7: Q4_K super-blocks of one row staged as fg_nq_stage's Q4_K case does (GCC spent about 70
 * instructions a sub-block there): the 8 scales and minimums of fg_k4_scale_min four bytes at a time in
 * core registers, dw = d * (float)sc and mw = -(dmin * (float)m) four at a time (exact products of an
 * fp16 value and a 6-bit integer; fp16 values are normal as f32, so NEON's flush changes nothing), each
 * 32 bytes of nibbles loaded once for the two sub-blocks they hold. dw, mw: stride 4 (rows); v: stride 128. */
FG_NEON_INLINE uint32_t fg_nq_ld32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
static void fg_nq_stage_q4_k_v7(const uint8_t *b, size_t nsb, int8_t *v, float *dw, float *mw) {
  const uint8x16_t m4 = vdupq_n_u8(0x0f);
  for (size_t K = 0; K < nsb; K++, b += 144) {
    const float d = fg_nq_h2f(b), dmin = fg_nq_h2f(b + 2);
    const uint32_t w0 = fg_nq_ld32(b + 4), w1 = fg_nq_ld32(b + 8), w2 = fg_nq_ld32(b + 12);
    const uint32_t sc_lo = w0 & 0x3f3f3f3fu, m_lo = w1 & 0x3f3f3f3fu;
    const uint32_t sc_hi = (w2 & 0x0f0f0f0fu) | ((w0 >> 2) & 0x30303030u);
    const uint32_t m_hi = ((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 2) & 0x30303030u);
    const uint16x8_t sc16 = vmovl_u8(vcreate_u8((uint64_t)sc_hi << 32 | sc_lo));
    const uint16x8_t m16 = vmovl_u8(vcreate_u8((uint64_t)m_hi << 32 | m_lo));
    const float32x4_t d0 = vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_low_u16(sc16))), d);
    const float32x4_t d1 = vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_high_u16(sc16))), d);
    const float32x4_t n0 = vnegq_f32(vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_low_u16(m16))), dmin));
    const float32x4_t n1 = vnegq_f32(vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_high_u16(m16))), dmin));
#  define FG_NQ_K4_PUT(j, dv, nv, L)        \
    vst1q_lane_f32(dw + 4 * (j), (dv), (L)); \
    vst1q_lane_f32(mw + 4 * (j), (nv), (L));
    FG_NQ_K4_PUT(0, d0, n0, 0) FG_NQ_K4_PUT(1, d0, n0, 1) FG_NQ_K4_PUT(2, d0, n0, 2) FG_NQ_K4_PUT(3, d0, n0, 3)
    FG_NQ_K4_PUT(4, d1, n1, 0) FG_NQ_K4_PUT(5, d1, n1, 1) FG_NQ_K4_PUT(6, d1, n1, 2) FG_NQ_K4_PUT(7, d1, n1, 3)
#  undef FG_NQ_K4_PUT
    for (int p = 0; p < 4; p++) {
      const uint8x16_t q0 = vld1q_u8(b + 16 + 32 * p), q1 = vld1q_u8(b + 32 + 32 * p);
      int8_t *o = v + 128 * (2 * p);
      vst1q_s8(o, vreinterpretq_s8_u8(vandq_u8(q0, m4)));
      vst1q_s8(o + 16, vreinterpretq_s8_u8(vandq_u8(q1, m4)));
      vst1q_s8(o + 128, vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)));
      vst1q_s8(o + 144, vreinterpretq_s8_u8(vshrq_n_u8(q1, 4)));
    }
    v += 128 * 8;
    dw += 4 * 8;
    mw += 4 * 8;
  }
}
#endif

#if FG_NEON_A64
/* aarch64: Q6_K blocks k0 .. k1 (multiples of 8) of one row staged as fg_nq_stage's Q6_K case does (the
 * same int8 values, scales and dw), a superblock's 8 sub-blocks unrolled: its 128 bytes of low bits and 64
 * of high bits loaded once, each value register one mask or shift of the low bits, at most one shift of
 * the high bits, a bit select and the subtraction of 32 (GCC's loop over the sub-blocks computed each
 * one's addresses and shift count apart: about 57 instructions a sub-block, about 15 here). */
FG_NEON_INLINE void fg_nq_stage_q6_k_a64(fg_nq_seg *sg, const uint8_t *row, size_t k0, size_t k1, size_t r) {
  const size_t R = FG_Q_ROWS;
  const uint8x16_t m4 = vdupq_n_u8(0x0f), m30 = vdupq_n_u8(0x30);
  const int8x16_t o32 = vdupq_n_s8(32);
  for (size_t k = k0; k < k1; k += 8) {
    const uint8_t *b = row + (k / 8) * 210;
    const int8_t *scales = (const int8_t *)(b + 192);
    const float d = fg_nq_h2f(b + 208);
    const size_t e0 = (k - k0) * R + r;
    int8_t *v = sg->v + 32 * e0;
    for (int h = 0; h < 2; h++) {
      const uint8x16x4_t l = vld1q_u8_x4(b + 64 * h);
      const uint8x16x2_t q = vld1q_u8_x2(b + 128 + 32 * h);
      /* sub-block 4h + s: the low bits' nibble (s < 2: low, else high) of bytes 32 (s & 1) .., the high
       * bits 2s, 2s + 1 moved to bits 4, 5 */
#  define FG_NQ_Q6(s, LO, HS)                                                                                     do {                                                                                                             const size_t e = e0 + R * (size_t)(4 * h + (s));                                                             sg->dw[e] = d;                                                                                               sg->sa[e] = scales[8 * h + 2 * (s)];                                                                         sg->sb[e] = scales[8 * h + 2 * (s) + 1];                                                                     const uint8x16_t u0 = vbslq_u8(m30, HS(q.val[0]), LO(l.val[2 * ((s) & 1)]));                                const uint8x16_t u1 = vbslq_u8(m30, HS(q.val[1]), LO(l.val[2 * ((s) & 1) + 1]));                            fg_nq_put(v + 32 * R * (size_t)(4 * h + (s)), vsubq_s8(vreinterpretq_s8_u8(u0), o32),                                   vsubq_s8(vreinterpretq_s8_u8(u1), o32));                                                         } while (0)
#  define FG_NQ_LO(x) vandq_u8((x), m4)
#  define FG_NQ_HI(x) vshrq_n_u8((x), 4)
#  define FG_NQ_SH4(x) vshlq_n_u8((x), 4)
#  define FG_NQ_SH2(x) vshlq_n_u8((x), 2)
#  define FG_NQ_SH0(x) (x)
#  define FG_NQ_SHR2(x) vshrq_n_u8((x), 2)
      FG_NQ_Q6(0, FG_NQ_LO, FG_NQ_SH4);
      FG_NQ_Q6(1, FG_NQ_LO, FG_NQ_SH2);
      FG_NQ_Q6(2, FG_NQ_HI, FG_NQ_SH0);
      FG_NQ_Q6(3, FG_NQ_HI, FG_NQ_SHR2);
#  undef FG_NQ_Q6
#  undef FG_NQ_LO
#  undef FG_NQ_HI
#  undef FG_NQ_SH4
#  undef FG_NQ_SH2
#  undef FG_NQ_SH0
#  undef FG_NQ_SHR2
    }
  }
}
#endif

/* Stages blocks k0 .. k1 (for the 256-element types multiples of 8) of one row as row r of sg. */
FG_NEON_INLINE void fg_nq_stage(fg_nq_seg *sg, uint32_t type, const uint8_t *row, size_t k0, size_t k1, size_t r) {
  const size_t R = FG_Q_ROWS;
#define FG_NQ_AT(kk) ((kk) * R + r)
  switch (type) {
    case FG_TYPE_Q5_0:
#if !FG_NEON_A64
      fg_nq_stage_q5_0_a32(row + k0 * 22, k1 - k0, sg->v + 32 * FG_NQ_AT(0), sg->dw + FG_NQ_AT(0));
      break;
#endif
      /* fall through */
    case FG_TYPE_Q5_1: {
      const int q51 = type == FG_TYPE_Q5_1;
      const size_t bsz = q51 ? 24 : 22, hoff = q51 ? 4 : 2;
      const uint8x16_t f0 = vdupq_n_u8(0xf0);
      for (size_t k = k0; k < k1; k++) {
        const uint8_t *b = row + k * bsz;
        const size_t e = FG_NQ_AT(k - k0);
        sg->dw[e] = fg_nq_h2f(b);
        if (q51) sg->mw[e] = fg_nq_h2f(b + 2);
        uint8x16_t lo, hi;
        fg_nq_nibbles(b + hoff + 4, &lo, &hi);
        if (q51) {
          lo = vorrq_u8(lo, fg_nq_bit4(b + hoff));
          hi = vorrq_u8(hi, fg_nq_bit4(b + hoff + 2));
          fg_nq_put(sg->v + 32 * e, vreinterpretq_s8_u8(lo), vreinterpretq_s8_u8(hi));
        } else { /* q - 16 = q | 0xf0 (as int8) where the fifth bit is clear, q where it is set */
          fg_nq_put(sg->v + 32 * e, vreinterpretq_s8_u8(vorrq_u8(lo, vbicq_u8(f0, fg_nq_bit5(b + hoff)))),
                    vreinterpretq_s8_u8(vorrq_u8(hi, vbicq_u8(f0, fg_nq_bit5(b + hoff + 2)))));
        }
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
#if !FG_NEON_A64
      fg_nq_stage_q4_k_v7(row + (k0 / 8) * 144, (k1 - k0) / 8, sg->v + 32 * FG_NQ_AT(0), sg->dw + FG_NQ_AT(0),
                          sg->mw + FG_NQ_AT(0));
      break;
#endif
      /* fall through */
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
#if FG_NEON_A64
      fg_nq_stage_q6_k_a64(sg, row, k0, k1, r);
      break;
#endif
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

#if !FG_NEON_A64 && !FG_NEON_HAVE_DOTPROD
/* armv7 without the dot product, for the staged types whose values stay in -32..32 (all but IQ4_NL and
 * IQ4_XS: |v x| <= 32 * 127 = 4,064): a row's 32 products go into one int16x8 (4 per lane, <= 16,256),
 * and the int16 lanes of two rows are paired before widening (8 per lane, <= 32,512), so the four rows'
 * block sums take 4 pairwise adds, 2 widening ones and 2 int32 ones instead of 8 widening adds and 6
 * int32 pairwise ones (fg_nq_isum), and no weight vector stays live across rows: with two activations
 * GCC no longer spills (16 q registers). Exact: every partial sum fits its lanes; the half-block sums of
 * the FG_Q8W_SUB types the same with 2 and 4 products per lane. */
#  define FG_NQ_V7(type) ((type) != FG_TYPE_IQ4_NL && (type) != FG_TYPE_IQ4_XS)

/* int16 lanes of a row's products: w0 x0 + w1 x1 (4 per lane), or w x alone (2 per lane) */
FG_NEON_INLINE int16x8_t fg_nq_p4(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
  int16x8_t p = vmull_s8(vget_low_s8(w0), vget_low_s8(x0));
  p = vmlal_s8(p, vget_high_s8(w0), vget_high_s8(x0));
  p = vmlal_s8(p, vget_low_s8(w1), vget_low_s8(x1));
  return vmlal_s8(p, vget_high_s8(w1), vget_high_s8(x1));
}
FG_NEON_INLINE int16x8_t fg_nq_p2(int8x16_t w, int8x16_t x) {
  return vmlal_s8(vmull_s8(vget_low_s8(w), vget_low_s8(x)), vget_high_s8(w), vget_high_s8(x));
}
/* two rows' int16 product lanes -> int32 (row p, row p, row q, row q) */
FG_NEON_INLINE int32x4_t fg_nq_pair16(int16x8_t p, int16x8_t q) {
  return vpaddlq_s16(vcombine_s16(vpadd_s16(vget_low_s16(p), vget_high_s16(p)), vpadd_s16(vget_low_s16(q), vget_high_s16(q))));
}
FG_NEON_INLINE int32x4_t fg_nq_quad32(int32x4_t s01, int32x4_t s23) {
  return vcombine_s32(vpadd_s32(vget_low_s32(s01), vget_high_s32(s01)), vpadd_s32(vget_low_s32(s23), vget_high_s32(s23)));
}

/* the 4 staged rows' block sums (lane r = row r) against one activation block x0, x1 */
FG_NEON_INLINE int32x4_t fg_nq_isum_v7(const int8_t *wv, int8x16_t x0, int8x16_t x1, const int fl, int32x4_t sa,
                                       int32x4_t sb) {
  if (fl & FG_Q8W_SUB) {
    const int32x4_t ia = fg_nq_quad32(fg_nq_pair16(fg_nq_p2(vld1q_s8(wv), x0), fg_nq_p2(vld1q_s8(wv + 32), x0)),
                                      fg_nq_pair16(fg_nq_p2(vld1q_s8(wv + 64), x0), fg_nq_p2(vld1q_s8(wv + 96), x0)));
    const int32x4_t ib = fg_nq_quad32(fg_nq_pair16(fg_nq_p2(vld1q_s8(wv + 16), x1), fg_nq_p2(vld1q_s8(wv + 48), x1)),
                                      fg_nq_pair16(fg_nq_p2(vld1q_s8(wv + 80), x1), fg_nq_p2(vld1q_s8(wv + 112), x1)));
    return vmlaq_s32(vmulq_s32(ia, sa), ib, sb);
  }
  const int32x4_t s01 = fg_nq_pair16(fg_nq_p4(vld1q_s8(wv), vld1q_s8(wv + 16), x0, x1),
                                     fg_nq_p4(vld1q_s8(wv + 32), vld1q_s8(wv + 48), x0, x1));
  const int32x4_t s23 = fg_nq_pair16(fg_nq_p4(vld1q_s8(wv + 64), vld1q_s8(wv + 80), x0, x1),
                                     fg_nq_p4(vld1q_s8(wv + 96), vld1q_s8(wv + 112), x0, x1));
  return fg_nq_quad32(s01, s23);
}

/* armv7 block loop in assembly for the staged types without half-block scales (Q5_0, Q4_1, Q5_1, Q4_K,
 * Q5_K; GCC spilled an accumulator and recomputed the row addresses): blocks of the staged segment wv
 * (4 rows x 32 values a block, post-incremented) against one (two = 0) or two activations. Per row the
 * 32 products as 16-bit lanes (q8..q11), two rows' lanes paired before widening (fg_nq_pair16), the four
 * rows' sums into one int32x4 (lane r = row r; fg_nq_quad32), then as fg_nq_fma: acc = fma(dw * dx,
 * (float)isum, acc) and, min1, acc = fma(mw * dx, (float)xsum, acc). acc[0..3] and acc[4..7] (the second
 * activation) are read and written back. */
#  define FG_NQ_A32_P2(r, x0, x1, x2, x3) \
  "vmull.s8 " r ", d12, " x0 "\n\t"         \
  "vmlal.s8 " r ", d13, " x1 "\n\t"         \
  "vmlal.s8 " r ", d14, " x2 "\n\t"         \
  "vmlal.s8 " r ", d15, " x3 "\n\t"
#  define FG_NQ_A32_W "vld1.8 {d12-d15}, [%[w] :128]!\n\t"
/* The loop head and the two activations' products of one block, scaled by dw and da / db into q4 / q5
 * (the part the two-activation loops with and without minimums share). */
#  define FG_NQ_A32_TWO_BODY \
  "1:\n\t" \
  "vld1.8 {d0-d3}, [%[qa]]!\n\t" \
  "vld1.8 {d4-d7}, [%[qb]]!\n\t" \
  FG_NQ_A32_W FG_NQ_A32_P2("q8", "d0", "d1", "d2", "d3") FG_NQ_A32_P2("q9", "d4", "d5", "d6", "d7") \
  FG_NQ_A32_W FG_NQ_A32_P2("q10", "d0", "d1", "d2", "d3") FG_NQ_A32_P2("q11", "d4", "d5", "d6", "d7") \
  "vpadd.i16 d16, d16, d17\n\t" \
  "vpadd.i16 d17, d20, d21\n\t" \
  "vpadd.i16 d18, d18, d19\n\t" \
  "vpadd.i16 d19, d22, d23\n\t" \
  "vpaddl.s16 q12, q8\n\t" \
  "vpaddl.s16 q13, q9\n\t" \
  FG_NQ_A32_W FG_NQ_A32_P2("q8", "d0", "d1", "d2", "d3") FG_NQ_A32_P2("q9", "d4", "d5", "d6", "d7") \
  FG_NQ_A32_W FG_NQ_A32_P2("q10", "d0", "d1", "d2", "d3") FG_NQ_A32_P2("q11", "d4", "d5", "d6", "d7") \
  "vpadd.i16 d16, d16, d17\n\t" \
  "vpadd.i16 d17, d20, d21\n\t" \
  "vpadd.i16 d18, d18, d19\n\t" \
  "vpadd.i16 d19, d22, d23\n\t" \
  "vpaddl.s16 q8, q8\n\t" \
  "vpaddl.s16 q9, q9\n\t" \
  "vpadd.i32 d20, d24, d25\n\t" \
  "vpadd.i32 d21, d16, d17\n\t" \
  "vpadd.i32 d22, d26, d27\n\t" \
  "vpadd.i32 d23, d18, d19\n\t" \
  "vcvt.f32.s32 q10, q10\n\t" \
  "vcvt.f32.s32 q11, q11\n\t" \
  "vld1.32 {d14-d15}, [%[dw]]!\n\t" \
  "vld1.32 {d12[0]}, [%[da]]!\n\t" \
  "vld1.32 {d12[1]}, [%[db]]!\n\t" \
  "vmul.f32 q14, q7, d12[0]\n\t" \
  "vmul.f32 q15, q7, d12[1]\n\t" \
  "vfma.f32 q4, q14, q10\n\t" \
  "vfma.f32 q5, q15, q11\n\t"
static void fg_nq_blocks_a32(const int8_t *w, const float *dw, const float *mw, const int8_t *qa, const float *da,
                             const int32_t *sa, const int8_t *qb, const float *db, const int32_t *sb, size_t n,
                             float *acc, const int two, const int min1) {
  if (n == 0) return;
  if (two && min1) {
    __asm__ volatile(
        "vld1.32 {d8-d11}, [%[acc]]\n\t"
        FG_NQ_A32_TWO_BODY
        "vld1.32 {d13[0]}, [%[sa]]!\n\t"
        "vld1.32 {d13[1]}, [%[sb]]!\n\t"
        "vld1.32 {d14-d15}, [%[mw]]!\n\t"
        "vcvt.f32.s32 d13, d13\n\t"
        "vmul.f32 q14, q7, d12[0]\n\t"
        "vmul.f32 q15, q7, d12[1]\n\t"
        "vdup.32 q10, d13[0]\n\t"
        "vdup.32 q11, d13[1]\n\t"
        "vfma.f32 q4, q14, q10\n\t"
        "vfma.f32 q5, q15, q11\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n\t"
        "vst1.32 {d8-d11}, [%[acc]]\n\t"
        : [w] "+r"(w), [dw] "+r"(dw), [mw] "+r"(mw), [qa] "+r"(qa), [da] "+r"(da), [sa] "+r"(sa), [qb] "+r"(qb),
          [db] "+r"(db), [sb] "+r"(sb), [n] "+r"(n)
        : [acc] "r"(acc)
        : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13",
          "d14", "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28",
          "d29", "d30", "d31");
  } else if (two) {
    __asm__ volatile(
        "vld1.32 {d8-d11}, [%[acc]]\n\t"
        FG_NQ_A32_TWO_BODY
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n\t"
        "vst1.32 {d8-d11}, [%[acc]]\n\t"
        : [w] "+r"(w), [dw] "+r"(dw), [qa] "+r"(qa), [da] "+r"(da), [qb] "+r"(qb), [db] "+r"(db), [n] "+r"(n)
        : [acc] "r"(acc)
        : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13",
          "d14", "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28",
          "d29", "d30", "d31");
  } else {
    __asm__ volatile(
        "vld1.32 {d8-d9}, [%[acc]]\n\t"
        "1:\n\t"
        "vld1.8 {d0-d3}, [%[qa]]!\n\t"
        FG_NQ_A32_W FG_NQ_A32_P2("q8", "d0", "d1", "d2", "d3")
        FG_NQ_A32_W FG_NQ_A32_P2("q9", "d0", "d1", "d2", "d3")
        "vpadd.i16 d16, d16, d17\n\t"
        "vpadd.i16 d17, d18, d19\n\t"
        "vpaddl.s16 q12, q8\n\t"
        FG_NQ_A32_W FG_NQ_A32_P2("q8", "d0", "d1", "d2", "d3")
        FG_NQ_A32_W FG_NQ_A32_P2("q9", "d0", "d1", "d2", "d3")
        "vpadd.i16 d16, d16, d17\n\t"
        "vpadd.i16 d17, d18, d19\n\t"
        "vpaddl.s16 q8, q8\n\t"
        "vpadd.i32 d20, d24, d25\n\t"
        "vpadd.i32 d21, d16, d17\n\t"
        "vcvt.f32.s32 q10, q10\n\t"
        "vld1.32 {d14-d15}, [%[dw]]!\n\t"
        "vld1.32 {d12[0]}, [%[da]]!\n\t"
        "vmul.f32 q14, q7, d12[0]\n\t"
        "vfma.f32 q4, q14, q10\n\t"
        "cmp %[min1], #0\n\t"
        "beq 2f\n\t"
        "vld1.32 {d13[0]}, [%[sa]]!\n\t"
        "vld1.32 {d14-d15}, [%[mw]]!\n\t"
        "vcvt.f32.s32 d13, d13\n\t"
        "vmul.f32 q14, q7, d12[0]\n\t"
        "vdup.32 q10, d13[0]\n\t"
        "vfma.f32 q4, q14, q10\n\t"
        "2:\n\t"
        "subs %[n], %[n], #1\n\t"
        "bne 1b\n\t"
        "vst1.32 {d8-d9}, [%[acc]]\n\t"
        : [w] "+r"(w), [dw] "+r"(dw), [mw] "+r"(mw), [qa] "+r"(qa), [da] "+r"(da), [sa] "+r"(sa), [n] "+r"(n)
        : [acc] "r"(acc), [min1] "r"(min1)
        : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13",
          "d14", "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28",
          "d29", "d30", "d31");
  }
  (void)qb, (void)db, (void)sb;
}
#  undef FG_NQ_A32_P2
#  undef FG_NQ_A32_W
#  undef FG_NQ_A32_TWO_BODY

/* The half-block types without a minimum (Q6_K, Q3_K), two activations: as fg_nq_blocks_a32, with per
 * row and activation the two halves' 16-bit lanes (2 products each) paired into one register (rA | rB,
 * 4 products a lane), two rows' registers paired again (8 a lane, <= 32,512) and widened to (r A, r+1 A,
 * r B, r+1 B); a vswp gives ia and ib (lane r = row r), isum = ia * sa + ib * sb (int32, as
 * fg_nq_isum_v7), then acc = fma(dw * dx, (float)isum, acc). */
#  define FG_NQ_A32_H(r, t, x0, x1, x2, x3) \
  "vmull.s8 " r ", d12, " x0 "\n\t"           \
  "vmlal.s8 " r ", d13, " x1 "\n\t"           \
  "vmull.s8 " t ", d14, " x2 "\n\t"           \
  "vmlal.s8 " t ", d15, " x3 "\n\t"
#  define FG_NQ_A32_HP(dr0, dr1, dt0, dt1) \
  "vpadd.i16 " dr0 ", " dr0 ", " dr1 "\n\t"  \
  "vpadd.i16 " dr1 ", " dt0 ", " dt1 "\n\t"
/* rows r, r+1 of one block for both activations: a in q8 (r) / q9 (r+1), b in q10 / q11, then the pairs
 * widened into qa, qb */
#  define FG_NQ_A32_SUBPAIR(qa, qb)                                                                 \
  "vld1.8 {d12-d15}, [%[w] :128]!\n\t"                                                              \
  FG_NQ_A32_H("q8", "q9", "d0", "d1", "d2", "d3") FG_NQ_A32_HP("d16", "d17", "d18", "d19")          \
  FG_NQ_A32_H("q10", "q11", "d4", "d5", "d6", "d7") FG_NQ_A32_HP("d20", "d21", "d22", "d23")        \
  "vld1.8 {d12-d15}, [%[w] :128]!\n\t"                                                              \
  FG_NQ_A32_H("q9", "q11", "d0", "d1", "d2", "d3") FG_NQ_A32_HP("d18", "d19", "d22", "d23")         \
  FG_NQ_A32_H("q11", "q12", "d4", "d5", "d6", "d7") FG_NQ_A32_HP("d22", "d23", "d24", "d25")        \
  "vpadd.i16 d16, d16, d18\n\t"                                                                     \
  "vpadd.i16 d17, d17, d19\n\t"                                                                     \
  "vpadd.i16 d20, d20, d22\n\t"                                                                     \
  "vpadd.i16 d21, d21, d23\n\t"                                                                     \
  "vpaddl.s16 " qa ", q8\n\t"                                                                       \
  "vpaddl.s16 " qb ", q10\n\t"
static void fg_nq_sub_blocks_a32(const int8_t *w, const float *dw, const int32_t *sa, const int32_t *sb,
                                 const int8_t *qa, const float *da, const int8_t *qb, const float *db, size_t n,
                                 float *acc) {
  if (n == 0) return;
  __asm__ volatile(
      "vld1.32 {d8-d11}, [%[acc]]\n\t"
      "1:\n\t"
      "vld1.8 {d0-d3}, [%[qa]]!\n\t"
      "vld1.8 {d4-d7}, [%[qb]]!\n\t"
      FG_NQ_A32_SUBPAIR("q14", "q15")
      FG_NQ_A32_SUBPAIR("q8", "q10")
      "vswp d29, d16\n\t"
      "vswp d31, d20\n\t"
      "vld1.32 {d12-d13}, [%[sa]]!\n\t"
      "vld1.32 {d14-d15}, [%[sb]]!\n\t"
      "vmul.i32 q14, q14, q6\n\t"
      "vmul.i32 q15, q15, q6\n\t"
      "vmla.i32 q14, q8, q7\n\t"
      "vmla.i32 q15, q10, q7\n\t"
      "vcvt.f32.s32 q14, q14\n\t"
      "vcvt.f32.s32 q15, q15\n\t"
      "vld1.32 {d12-d13}, [%[dw]]!\n\t"
      "vld1.32 {d14[0]}, [%[da]]!\n\t"
      "vld1.32 {d14[1]}, [%[db]]!\n\t"
      "vmul.f32 q8, q6, d14[0]\n\t"
      "vmul.f32 q9, q6, d14[1]\n\t"
      "vfma.f32 q4, q8, q14\n\t"
      "vfma.f32 q5, q9, q15\n\t"
      "subs %[n], %[n], #1\n\t"
      "bne 1b\n\t"
      "vst1.32 {d8-d11}, [%[acc]]\n\t"
      : [w] "+r"(w), [dw] "+r"(dw), [sa] "+r"(sa), [sb] "+r"(sb), [qa] "+r"(qa), [da] "+r"(da), [qb] "+r"(qb),
        [db] "+r"(db), [n] "+r"(n)
      : [acc] "r"(acc)
      : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13",
        "d14", "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28",
        "d29", "d30", "d31");
}
#  undef FG_NQ_A32_H
#  undef FG_NQ_A32_HP
#  undef FG_NQ_A32_SUBPAIR

/* fg_nq_seg_run with fg_nq_isum_v7 (the half-block types) or fg_nq_blocks_a32 (the others) */
FG_NEON_INLINE void fg_nq_seg_run_v7(const fg_mm_args *a, const fg_nq_seg *sg, size_t t0, size_t nr, size_t k0,
                                     size_t k1, size_t b0, const int B, const int fl) {
  const size_t stride = fg_act_q8_row_bytes(a->cols);
  const fg_act_q8_row xa = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b0 * stride, a->cols);
  const fg_act_q8_row xb = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + (b0 + (B == 2)) * stride, a->cols);
  float *ya = a->y + b0 * a->ldy + t0, *yb = ya + a->ldy;
  float32x4_t acc0 = k0 == 0 ? vdupq_n_f32(0.0f) : fg_load4(ya, nr);
  float32x4_t acc1 = B == 2 && k0 != 0 ? fg_load4(yb, nr) : vdupq_n_f32(0.0f);
  if (B == 2 && fl == FG_Q8W_SUB) {
    float acc[8] __attribute__((aligned(16)));
    vst1q_f32(acc, acc0);
    vst1q_f32(acc + 4, acc1);
    fg_nq_sub_blocks_a32(sg->v, sg->dw, sg->sa, sg->sb, xa.qs + 32 * k0, xa.d + k0, xb.qs + 32 * k0, xb.d + k0, k1 - k0,
                         acc);
    acc0 = vld1q_f32(acc);
    acc1 = vld1q_f32(acc + 4);
  } else if (!(fl & (FG_Q8W_SUB | FG_Q8W_MIN2))) {
    float acc[8] __attribute__((aligned(16)));
    vst1q_f32(acc, acc0);
    vst1q_f32(acc + 4, acc1);
    fg_nq_blocks_a32(sg->v, sg->dw, sg->mw, xa.qs + 32 * k0, xa.d + k0, xa.isum + k0, xb.qs + 32 * k0, xb.d + k0,
                     xb.isum + k0, k1 - k0, acc, B == 2, (fl & FG_Q8W_MIN1) != 0);
    acc0 = vld1q_f32(acc);
    acc1 = vld1q_f32(acc + 4);
  } else {
    for (size_t k = k0; k < k1; k++) {
      const size_t e = (k - k0) * FG_Q_ROWS;
      const int8_t *wv = sg->v + 32 * e;
      int32x4_t sa = vdupq_n_s32(1), sb = sa;
      if (fl & FG_Q8W_SUB) {
        sa = vld1q_s32(sg->sa + e);
        sb = vld1q_s32(sg->sb + e);
      }
      {
        const int8_t *xq = xa.qs + 32 * k;
        const int32x4_t isum = fg_nq_isum_v7(wv, vld1q_s8(xq), vld1q_s8(xq + 16), fl, sa, sb);
        acc0 = fg_nq_fma(acc0, sg, e, isum, xq, xa.d[k], xa.isum[k], fl);
      }
      if (B == 2) {
        const int8_t *xq = xb.qs + 32 * k;
        const int32x4_t isum = fg_nq_isum_v7(wv, vld1q_s8(xq), vld1q_s8(xq + 16), fl, sa, sb);
        acc1 = fg_nq_fma(acc1, sg, e, isum, xq, xb.d[k], xb.isum[k], fl);
      }
    }
  }
  fg_store4(ya, nr, acc0);
  if (B == 2) fg_store4(yb, nr, acc1);
}
#else
#  define FG_NQ_V7(type) 0
#endif

#if FG_NEON_HAVE_DOTPROD
/* The dot-product gemm: a staged segment re-laid for the dot product by element. Per block 8 vectors, g =
 * 0..7 holding bytes 4g..4g+3 of rows 0..3 (lane r = row r); sdot v.4s, w_g.16b, x.4b[g % 4] then adds
 * each row's 4-product dot of the group to its own lane, so a block's 4 row sums need no reduction
 * (the packed Q8_0 layout's idea, made per segment from the staged values). */
FG_NEON_INLINE void fg_nq_interleave(const fg_nq_seg *sg, size_t nk, int8_t *vt) {
#  if !FG_NEON_A64
  /* armv7: the same 4 x 4 transposes in assembly (22 instructions a block against GCC's 53): rows 0..3 in
   * q8/q9 .. q14/q15, vtrn.32 pairs rows, vswp of d halves completes each group g (q8, q10, q12, q14 =
   * g0..g3; q9, q11, q13, q15 = g4..g7) */
  if (nk == 0) return;
  const int8_t *sv = sg->v;
  __asm__ volatile(
      "1:\n\t"
      "vld1.32 {d16-d19}, [%[src] :128]!\n\t"
      "vld1.32 {d20-d23}, [%[src] :128]!\n\t"
      "vld1.32 {d24-d27}, [%[src] :128]!\n\t"
      "vld1.32 {d28-d31}, [%[src] :128]!\n\t"
      "vtrn.32 q8, q10\n\t"
      "vtrn.32 q12, q14\n\t"
      "vtrn.32 q9, q11\n\t"
      "vtrn.32 q13, q15\n\t"
      "vswp d17, d24\n\t"
      "vswp d21, d28\n\t"
      "vswp d19, d26\n\t"
      "vswp d23, d30\n\t"
      "vst1.32 {d16-d17}, [%[dst] :128]!\n\t"
      "vst1.32 {d20-d21}, [%[dst] :128]!\n\t"
      "vst1.32 {d24-d25}, [%[dst] :128]!\n\t"
      "vst1.32 {d28-d29}, [%[dst] :128]!\n\t"
      "vst1.32 {d18-d19}, [%[dst] :128]!\n\t"
      "vst1.32 {d22-d23}, [%[dst] :128]!\n\t"
      "vst1.32 {d26-d27}, [%[dst] :128]!\n\t"
      "vst1.32 {d30-d31}, [%[dst] :128]!\n\t"
      "subs %[n], %[n], #1\n\t"
      "bne 1b\n\t"
      : [src] "+r"(sv), [dst] "+r"(vt), [n] "+r"(nk)
      :
      : "cc", "memory", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28",
        "d29", "d30", "d31");
  return;
#  endif
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

#  if !FG_NEON_A64
/* armv7 with VSDOT, Q5_0: the four rows' blocks b[r][0..n) staged and re-laid at once (fg_nq_stage_q5_0_a32
 * for each row, then fg_nq_interleave: 86 instructions a block of 4 rows; 63 here, the values never
 * stored in between). Per row the same decoding as fg_nq_stage_q5_0_a32 (scale by the scalar VFP
 * conversion, into s0..s3: one store of the 4 rows' dw; values 0..15 into q8, q9, q12, q13 for rows 0..3,
 * 16..31 into q10, q11, q14, q15), then vtrn.32 pairs rows 0, 1 and 2, 3 and two vswp of d halves per half
 * put groups g0, g1 in q8, q9, g2, g3 in q12, q13, g4, g5 in q10, q11, g6, g7 in q14, q15: vt gets
 * fg_nq_interleave's bytes, 128 a block, and dw fg_nq_stage's. */
static void fg_nq_stage_q5_0_sd_a32(const uint8_t *const *rp, size_t k0, size_t n, int8_t *vt, float *dw) {
  static const uint8_t k_bits[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  if (n == 0) return;
  const uint8_t *b0 = rp[0] + k0 * 22, *b1 = rp[1] + k0 * 22, *b2 = rp[2] + k0 * 22, *b3 = rp[3] + k0 * 22;
#    define FG_NQ_Q5SD_ROW(b, s, lo, hi)      \
  "vld1.16 {" s "}, [%[" b "]]!\n\t"            \
  "vld4.8 {d4[], d5[], d6[], d7[]}, [%[" b "]]!\n\t" \
  "vld1.8 {d2-d3}, [%[" b "]]!\n\t"             \
  "vtst.8 q2, q2, q6\n\t"                       \
  "vtst.8 q3, q3, q6\n\t"                       \
  "vand " lo ", q1, q5\n\t"                     \
  "vshr.u8 " hi ", q1, #4\n\t"                  \
  "vbic q2, q7, q2\n\t"                         \
  "vbic q3, q7, q3\n\t"                         \
  "vorr " lo ", " lo ", q2\n\t"                 \
  "vorr " hi ", " hi ", q3\n\t"
  __asm__ volatile(
      "vld1.8 {d12-d13}, [%[bits]]\n\t"
      "vmov.i8 q5, #15\n\t"
      "vmov.i8 q7, #240\n\t"
      "1:\n\t"
      FG_NQ_Q5SD_ROW("b0", "d0[0]", "q8", "q10")
      FG_NQ_Q5SD_ROW("b1", "d0[2]", "q9", "q11")
      FG_NQ_Q5SD_ROW("b2", "d1[0]", "q12", "q14")
      FG_NQ_Q5SD_ROW("b3", "d1[2]", "q13", "q15")
      "vcvtb.f32.f16 s0, s0\n\t"
      "vcvtb.f32.f16 s1, s1\n\t"
      "vcvtb.f32.f16 s2, s2\n\t"
      "vcvtb.f32.f16 s3, s3\n\t"
      "vst1.32 {d0-d1}, [%[dw]]!\n\t"
      "vtrn.32 q8, q9\n\t"
      "vtrn.32 q12, q13\n\t"
      "vtrn.32 q10, q11\n\t"
      "vtrn.32 q14, q15\n\t"
      "vswp d17, d24\n\t"
      "vswp d19, d26\n\t"
      "vswp d21, d28\n\t"
      "vswp d23, d30\n\t"
      "vst1.32 {d16-d19}, [%[vt] :128]!\n\t"
      "vst1.32 {d24-d27}, [%[vt] :128]!\n\t"
      "vst1.32 {d20-d23}, [%[vt] :128]!\n\t"
      "vst1.32 {d28-d31}, [%[vt] :128]!\n\t"
      "subs %[n], %[n], #1\n\t"
      "bne 1b\n\t"
      : [b0] "+r"(b0), [b1] "+r"(b1), [b2] "+r"(b2), [b3] "+r"(b3), [vt] "+r"(vt), [dw] "+r"(dw), [n] "+r"(n)
      : [bits] "r"(k_bits)
      : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d10", "d11", "d12", "d13", "d14", "d15",
        "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28", "d29", "d30",
        "d31");
#    undef FG_NQ_Q5SD_ROW
}
#  endif

/* acc + (row lanes) the dot of group w with bytes 4L..4L+3 of x (L constant) */
#  if FG_NEON_A64
#    define FG_NQ_SDOT(acc, w, x, L) vdotq_laneq_s32((acc), (w), (x), (L))
#  else
#    define FG_NQ_SDOT(acc, w, x, L) vdotq_lane_s32((acc), (w), (L) < 2 ? vget_low_s8(x) : vget_high_s8(x), (L) % 2)
#  endif

#  if !FG_NEON_A64
/* armv7 with VSDOT, two activations, the types without half-block scales: fg_nq_seg_run_dp's block loop
 * in assembly (GCC recomputed the eight weight addresses: 54 instructions a block, 35 here, 45 with the
 * minimum). Per block the re-laid groups g0..g7 (q8-q15), the activations' 32 bytes (q0-q1, q2-q3), 8 VSDOT
 * by element per activation into a zeroed q4 / q5 (lane r = row r), then acc = fma(dw * dx, (float)isum,
 * acc) and, min1, acc = fma(mw * dx, (float)xsum, acc), as fg_nq_fma. acc[0..3], acc[4..7]: in and out. */
#    define FG_NQ_SD_BODY                       \
  "1:\n\t"                                      \
  "vld1.8 {d0-d3}, [%[qa]]!\n\t"                \
  "vld1.8 {d4-d7}, [%[qb]]!\n\t"                \
  "vld1.8 {d16-d19}, [%[w] :128]!\n\t"          \
  "vld1.8 {d20-d23}, [%[w] :128]!\n\t"          \
  "vld1.8 {d24-d27}, [%[w] :128]!\n\t"          \
  "vld1.8 {d28-d31}, [%[w] :128]!\n\t"          \
  "vmov.i32 q4, #0\n\t"                         \
  "vmov.i32 q5, #0\n\t"                         \
  "vsdot.s8 q4, q8, d0[0]\n\t"                  \
  "vsdot.s8 q5, q8, d4[0]\n\t"                  \
  "vsdot.s8 q4, q9, d0[1]\n\t"                  \
  "vsdot.s8 q5, q9, d4[1]\n\t"                  \
  "vsdot.s8 q4, q10, d1[0]\n\t"                 \
  "vsdot.s8 q5, q10, d5[0]\n\t"                 \
  "vsdot.s8 q4, q11, d1[1]\n\t"                 \
  "vsdot.s8 q5, q11, d5[1]\n\t"                 \
  "vsdot.s8 q4, q12, d2[0]\n\t"                 \
  "vsdot.s8 q5, q12, d6[0]\n\t"                 \
  "vsdot.s8 q4, q13, d2[1]\n\t"                 \
  "vsdot.s8 q5, q13, d6[1]\n\t"                 \
  "vsdot.s8 q4, q14, d3[0]\n\t"                 \
  "vsdot.s8 q5, q14, d7[0]\n\t"                 \
  "vsdot.s8 q4, q15, d3[1]\n\t"                 \
  "vsdot.s8 q5, q15, d7[1]\n\t"                 \
  "vld1.32 {d0-d1}, [%[dw]]!\n\t"               \
  "vld1.32 {d2[0]}, [%[da]]!\n\t"               \
  "vld1.32 {d2[1]}, [%[db]]!\n\t"               \
  "vcvt.f32.s32 q4, q4\n\t"                     \
  "vcvt.f32.s32 q5, q5\n\t"                     \
  "vmul.f32 q8, q0, d2[0]\n\t"                  \
  "vmul.f32 q9, q0, d2[1]\n\t"                  \
  "vfma.f32 q6, q8, q4\n\t"                     \
  "vfma.f32 q7, q9, q5\n\t"
#    define FG_NQ_SD_MIN1                       \
  "vld1.32 {d3[0]}, [%[sa]]!\n\t"               \
  "vld1.32 {d3[1]}, [%[sb]]!\n\t"               \
  "vld1.32 {d0-d1}, [%[mw]]!\n\t"               \
  "vcvt.f32.s32 d3, d3\n\t"                     \
  "vmul.f32 q8, q0, d2[0]\n\t"                  \
  "vmul.f32 q9, q0, d2[1]\n\t"                  \
  "vdup.32 q4, d3[0]\n\t"                       \
  "vdup.32 q5, d3[1]\n\t"                       \
  "vfma.f32 q6, q8, q4\n\t"                     \
  "vfma.f32 q7, q9, q5\n\t"
#    define FG_NQ_SD_REGS                                                                                  \
  : [w] "+r"(w), [dw] "+r"(dw), [mw] "+r"(mw), [qa] "+r"(qa), [da] "+r"(da), [sa] "+r"(sa), [qb] "+r"(qb), \
    [db] "+r"(db), [sb] "+r"(sb), [n] "+r"(n)                                                              \
  : [acc] "r"(acc)                                                                                         \
  : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13", \
    "d14", "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28", \
    "d29", "d30", "d31"
static void fg_nq_blocks_sdot_a32(const int8_t *w, const float *dw, const float *mw, const int8_t *qa, const float *da,
                                  const int32_t *sa, const int8_t *qb, const float *db, const int32_t *sb, size_t n,
                                  float *acc, const int min1) {
  if (n == 0) return;
  if (min1)
    __asm__ volatile("vld1.32 {d12-d15}, [%[acc]]\n\t" FG_NQ_SD_BODY FG_NQ_SD_MIN1
                     "subs %[n], %[n], #1\n\t"
                     "bne 1b\n\t"
                     "vst1.32 {d12-d15}, [%[acc]]\n\t" FG_NQ_SD_REGS);
  else
    __asm__ volatile("vld1.32 {d12-d15}, [%[acc]]\n\t" FG_NQ_SD_BODY
                     "subs %[n], %[n], #1\n\t"
                     "bne 1b\n\t"
                     "vst1.32 {d12-d15}, [%[acc]]\n\t" FG_NQ_SD_REGS);
}
#    undef FG_NQ_SD_BODY
#    undef FG_NQ_SD_MIN1
#    undef FG_NQ_SD_REGS
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
#  if !FG_NEON_A64
  if (B == 2 && !(fl & (FG_Q8W_SUB | FG_Q8W_MIN2))) {
    float acc[8] __attribute__((aligned(16)));
    vst1q_f32(acc, acc0);
    vst1q_f32(acc + 4, acc1);
    fg_nq_blocks_sdot_a32(vt, sg->dw, sg->mw, x0.qs + 32 * k0, x0.d + k0, x0.isum + k0, x1.qs + 32 * k0, x1.d + k0,
                          x1.isum + k0, k1 - k0, acc, (fl & FG_Q8W_MIN1) != 0);
    fg_store4(y0, nr, vld1q_f32(acc));
    fg_store4(y1, nr, vld1q_f32(acc + 4));
    return;
  }
#  endif
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
      size_t b = 0;
#if FG_NEON_HAVE_DOTPROD && !FG_NEON_A64
      const int q5sd = gemm && type == FG_TYPE_Q5_0; /* staged and re-laid at once */
      if (q5sd) fg_nq_stage_q5_0_sd_a32(rp, k0, k1 - k0, vt, sg.dw);
      else
#endif
        for (size_t r = 0; r < FG_Q_ROWS; r++) fg_nq_stage(&sg, type, rp[r], k0, k1, r);
#if FG_NEON_HAVE_DOTPROD
      if (gemm) {
#  if !FG_NEON_A64
        if (!q5sd)
#  endif
          fg_nq_interleave(&sg, k1 - k0, vt);
        for (; b + FG_NQ_DP_B <= a->nb; b += FG_NQ_DP_B) fg_nq_seg_run_dp(a, &sg, vt, t0, nr, k0, k1, b, FG_NQ_DP_B, fl);
        for (; b + 2 <= a->nb; b += 2) fg_nq_seg_run_dp(a, &sg, vt, t0, nr, k0, k1, b, 2, fl);
        for (; b < a->nb; b++) fg_nq_seg_run_dp(a, &sg, vt, t0, nr, k0, k1, b, 1, fl);
      }
#endif
#if !FG_NEON_A64 && !FG_NEON_HAVE_DOTPROD
      if (FG_NQ_V7(type)) {
        if (gemm)
          for (; b + 2 <= a->nb; b += 2) fg_nq_seg_run_v7(a, &sg, t0, nr, k0, k1, b, 2, fl);
        for (; b < a->nb; b++) fg_nq_seg_run_v7(a, &sg, t0, nr, k0, k1, b, 1, fl);
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
