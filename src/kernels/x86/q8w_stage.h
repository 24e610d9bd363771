/* q8w_stage.h — SIMD decoding of the q8-spec weight types beyond Q8_0/Q4_0 (Q4_1, Q5_0, Q5_1, Q2_K,
 * Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS) into the form fg_q8w_decode gives (tensor/dtype.h): per
 * 32-block 32 int8 values v, the half-block integer scales sa/sb, the float scale dw and the minimum
 * mw with its multipliers ma/mb. Included by avx2_kernels.c and avx512_kernels.c (256-bit integer
 * ops only, so either ISA's flags build it; with AVX512BW the fifth-bit masks are one vpmovm2b).
 *
 * The kernels "stage" a tile's rows once per column segment into these arrays and then run one
 * int8 dot core for every type (kernel files). Staged values are the spec's exactly:
 *   q[32]   v + bias (mod 256, one bias byte for all 32): 0x80 gives v + 128 as unsigned bytes for
 *           vpdpbusd (v ^ 0x80), 0 gives v itself for the sign trick, and a type's smallest value's
 *           negation (Q5_0: 16, Q6_K: 32, Q3_K: 4) gives the small unsigned values of the AVX2 gemm
 *   dw, mw  computed with the very float operations of fg_q8w_decode (e.g. Q4_K: fp16(d) * (float)sc,
 *           -(fp16(dmin) * (float)m)), so dw * dx and mw * dx round the same way
 *   sa, sb  only the types with half-block scales (FG_Q8W_SUB); ma, mb only Q2_K (FG_Q8W_MIN2) */
#ifndef FG_Q8W_STAGE_H
#define FG_Q8W_STAGE_H

#include "kernels/kernels.h"

#include <immintrin.h>
#include <string.h>

#define FG_QS_INLINE static inline __attribute__((always_inline))

/* Staging destination of one row: element [kk * qstride] of q (32 bytes) and [kk * sstride] of the
 * scalar arrays for the row's kk-th block of the segment. */
typedef struct fg_qstage {
  uint8_t *q;
  size_t qstride;
  float *dw, *mw;
  int32_t *sa, *sb, *ma, *mb;
  size_t sstride;
} fg_qstage;

FG_QS_INLINE uint16_t fg_qs_u16(const uint8_t *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}
FG_QS_INLINE uint32_t fg_qs_u32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
FG_QS_INLINE float fg_qs_h2f(const uint8_t *p) { return _cvtsh_ss(fg_qs_u16(p)); }

/* 16 nibble bytes -> 32 values: element j < 16 the low nibble of byte j, element j + 16 its high nibble */
FG_QS_INLINE __m256i fg_qs_nibbles(const uint8_t *qs) {
  const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)qs);
  const __m128i m4 = _mm_set1_epi8(0x0f);
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(q, m4)), _mm_and_si128(_mm_srli_epi16(q, 4), m4), 1);
}

/* 0x10 in byte j where bit j of h is set */
FG_QS_INLINE __m256i fg_qs_bit4(uint32_t h) {
#if defined(__AVX512BW__) && defined(__AVX512VL__)
  return _mm256_maskz_mov_epi8((__mmask32)h, _mm256_set1_epi8(0x10));
#else
  const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3,
                                       3, 3, 3, 3);
  const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ull);
  const __m256i t = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)h), sel), bits);
  return _mm256_and_si256(_mm256_cmpeq_epi8(t, bits), _mm256_set1_epi8(0x10));
#endif
}

/* the 16 IQ4 values, twice (one per 128-bit lane) for vpshufb */
FG_QS_INLINE __m256i fg_qs_iq4_lut(void) {
  const __m128i t = _mm_loadu_si128((const __m128i *)(const void *)fg_iq4_values);
  return _mm256_broadcastsi128_si256(t);
}

FG_QS_INLINE void fg_qs_put(const fg_qstage *st, size_t kk, __m256i v, __m256i bias) {
  _mm256_storeu_si256((__m256i *)(void *)(st->q + kk * st->qstride), _mm256_add_epi8(v, bias));
}

/* Stages blocks k0 .. k1 (32-element blocks; for the 256-element types k0, k1 are multiples of 8) of
 * one row of type. */
FG_QS_INLINE void fg_qs_stage(uint32_t type, const uint8_t *row, size_t k0, size_t k1, const fg_qstage *st, __m256i bias) {
  switch (type) {
    case FG_TYPE_Q5_0:
    case FG_TYPE_Q5_1: {
      const int q51 = type == FG_TYPE_Q5_1;
      const size_t bsz = q51 ? 24 : 22, hoff = q51 ? 4 : 2;
      const __m256i off = _mm256_set1_epi8(q51 ? 0 : 16);
      for (size_t k = k0; k < k1; k++) {
        const uint8_t *b = row + k * bsz;
        const size_t kk = k - k0;
        st->dw[kk * st->sstride] = fg_qs_h2f(b);
        if (q51) st->mw[kk * st->sstride] = fg_qs_h2f(b + 2);
        const __m256i v = _mm256_or_si256(fg_qs_nibbles(b + hoff + 4), fg_qs_bit4(fg_qs_u32(b + hoff)));
        fg_qs_put(st, kk, _mm256_sub_epi8(v, off), bias);
      }
    } break;
    case FG_TYPE_Q4_1:
      for (size_t k = k0; k < k1; k++) {
        const uint8_t *b = row + k * 20;
        const size_t kk = k - k0;
        st->dw[kk * st->sstride] = fg_qs_h2f(b);
        st->mw[kk * st->sstride] = fg_qs_h2f(b + 2);
        fg_qs_put(st, kk, fg_qs_nibbles(b + 4), bias);
      }
      break;
    case FG_TYPE_IQ4_NL: {
      const __m256i lut = fg_qs_iq4_lut();
      for (size_t k = k0; k < k1; k++) {
        const uint8_t *b = row + k * 18;
        const size_t kk = k - k0;
        st->dw[kk * st->sstride] = fg_qs_h2f(b);
        fg_qs_put(st, kk, _mm256_shuffle_epi8(lut, fg_qs_nibbles(b + 2)), bias);
      }
    } break;
    case FG_TYPE_IQ4_XS: {
      const __m256i lut = fg_qs_iq4_lut();
      for (size_t k = k0; k < k1; k++) {
        const uint8_t *b = row + (k / 8) * 136;
        const size_t kk = k - k0;
        const int ib = (int)(k % 8);
        const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 0xf) | (((fg_qs_u16(b + 2) >> (2 * ib)) & 3) << 4);
        st->dw[kk * st->sstride] = fg_qs_h2f(b) * (float)(ls - 32);
        fg_qs_put(st, kk, _mm256_shuffle_epi8(lut, fg_qs_nibbles(b + 8 + 16 * ib)), bias);
      }
    } break;
    case FG_TYPE_Q4_K:
    case FG_TYPE_Q5_K: {
      const int q5 = type == FG_TYPE_Q5_K;
      const size_t bsz = q5 ? 176 : 144;
      const __m256i m4 = _mm256_set1_epi8(0x0f);
      for (size_t k = k0; k < k1; k += 8) {
        const uint8_t *b = row + (k / 8) * bsz;
        const float d = fg_qs_h2f(b), dmin = fg_qs_h2f(b + 2);
        const uint8_t *qs = b + (q5 ? 48 : 16);
        const __m256i qh = q5 ? _mm256_loadu_si256((const __m256i *)(const void *)(b + 16)) : _mm256_setzero_si256();
        for (int j = 0; j < 8; j++) {
          const size_t kk = k - k0 + (size_t)j;
          uint8_t sc, m;
          fg_k4_scale_min(j, b + 4, &sc, &m);
          st->dw[kk * st->sstride] = d * (float)sc;
          st->mw[kk * st->sstride] = -(dmin * (float)m);
          const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * (j / 2)));
          __m256i v = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(q, 4) : q, m4);
          if (q5) {
            const __m256i bit = _mm256_set1_epi8((char)(1u << j));
            const __m256i on = _mm256_cmpeq_epi8(_mm256_and_si256(qh, bit), bit);
            v = _mm256_or_si256(v, _mm256_and_si256(on, _mm256_set1_epi8(0x10)));
          }
          fg_qs_put(st, kk, v, bias);
        }
      }
    } break;
    case FG_TYPE_Q6_K: {
      const __m256i m4 = _mm256_set1_epi8(0x0f), m3 = _mm256_set1_epi8(0x03), o32 = _mm256_set1_epi8(32);
      for (size_t k = k0; k < k1; k += 8) {
        const uint8_t *b = row + (k / 8) * 210;
        const int8_t *scales = (const int8_t *)(b + 192);
        const float d = fg_qs_h2f(b + 208);
        for (int sub = 0; sub < 8; sub++) {
          const int h = sub / 4, s = sub % 4;
          const size_t kk = k - k0 + (size_t)sub;
          st->dw[kk * st->sstride] = d;
          st->sa[kk * st->sstride] = scales[8 * h + 2 * s];
          st->sb[kk * st->sstride] = scales[8 * h + 2 * s + 1];
          const __m256i ql = _mm256_loadu_si256((const __m256i *)(const void *)(b + 64 * h + 32 * (s & 1)));
          const __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(b + 128 + 32 * h));
          const __m256i lo = _mm256_and_si256(s < 2 ? ql : _mm256_srli_epi16(ql, 4), m4);
          const __m256i hi = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * s)), m3);
          fg_qs_put(st, kk, _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)), o32), bias);
        }
      }
    } break;
    case FG_TYPE_Q3_K: {
      const __m256i m3 = _mm256_set1_epi8(0x03), four = _mm256_set1_epi8(4);
      for (size_t k = k0; k < k1; k += 8) {
        const uint8_t *b = row + (k / 8) * 110;
        int8_t sc[16];
        fg_q3_k_scales(b + 96, sc);
        const float d = fg_qs_h2f(b + 108);
        const __m256i hm = _mm256_loadu_si256((const __m256i *)(const void *)b);
        for (int sub = 0; sub < 8; sub++) {
          const int h = sub / 4, s = sub % 4;
          const size_t kk = k - k0 + (size_t)sub;
          st->dw[kk * st->sstride] = d;
          st->sa[kk * st->sstride] = sc[8 * h + 2 * s];
          st->sb[kk * st->sstride] = sc[8 * h + 2 * s + 1];
          const __m256i qs = _mm256_loadu_si256((const __m256i *)(const void *)(b + 32 + 32 * h));
          const __m256i q = _mm256_and_si256(_mm256_srl_epi16(qs, _mm_cvtsi32_si128(2 * s)), m3);
          const __m256i bit = _mm256_set1_epi8((char)(1u << (4 * h + s)));
          const __m256i off = _mm256_andnot_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit), four);
          fg_qs_put(st, kk, _mm256_sub_epi8(q, off), bias);
        }
      }
    } break;
    case FG_TYPE_Q2_K: {
      const __m256i m3 = _mm256_set1_epi8(0x03);
      for (size_t k = k0; k < k1; k += 8) {
        const uint8_t *b = row + (k / 8) * 84;
        const float d = fg_qs_h2f(b + 80), mdmin = -fg_qs_h2f(b + 82);
        for (int sub = 0; sub < 8; sub++) {
          const int h = sub / 4, s = sub % 4;
          const size_t kk = k - k0 + (size_t)sub;
          const uint8_t sa = b[8 * h + 2 * s], sb = b[8 * h + 2 * s + 1];
          st->dw[kk * st->sstride] = d;
          st->mw[kk * st->sstride] = mdmin;
          st->sa[kk * st->sstride] = sa & 0xf;
          st->sb[kk * st->sstride] = sb & 0xf;
          st->ma[kk * st->sstride] = sa >> 4;
          st->mb[kk * st->sstride] = sb >> 4;
          const __m256i qs = _mm256_loadu_si256((const __m256i *)(const void *)(b + 16 + 32 * h));
          fg_qs_put(st, kk, _mm256_and_si256(_mm256_srl_epi16(qs, _mm_cvtsi32_si128(2 * s)), m3), bias);
        }
      }
    } break;
    default: break;
  }
}

/* Blocks of 32 per type block (8 for the 256-element types): staged segments start at multiples of it. */
FG_QS_INLINE size_t fg_qs_group(uint32_t type) {
  return type == FG_TYPE_Q4_1 || type == FG_TYPE_Q5_0 || type == FG_TYPE_Q5_1 || type == FG_TYPE_IQ4_NL ? 1 : 8;
}

/* sum of the first 16 of 32 activation bytes */
FG_QS_INLINE int32_t fg_qs_half_sum(const int8_t *qx) {
  const __m128i x = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)qx), _mm_set1_epi8((char)0x80));
  const __m128i s = _mm_sad_epu8(x, _mm_setzero_si128()); /* sums of x + 128 over 8 bytes each */
  return _mm_cvtsi128_si32(s) + _mm_extract_epi16(s, 4) - 16 * 128;
}

#endif /* FG_Q8W_STAGE_H */
