/* avx512_attn.c — the AVX-512 attention/GELU table (attn.h). Built with the AVX-512 flags; reached
 * only through fg_attn_by_name/fg_attn_get after the CPU check of the matmul table.
 *
 * pv: tiles of up to 6 rows × 64 value columns (24 accumulators); per key one broadcast weight per
 * row and 4 value loads (f16 rows converted with vcvtph2ps). softmax: one row of 32 scores is two
 * vectors; exp by the polynomial of attn.h with vscalefps; the rows' maxima, sums and rescales 16 rows
 * at a time (reduce16, exp1_16). */
#include "kernels/attn.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define FG_INLINE static inline __attribute__((always_inline))
#define PV_RMAX 6
#define PV_DMAX 4

// ----------------------------------------------------------------------------------------------
// exp

FG_INLINE __m512 exp16(__m512 x) {
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(FG_EXP_HI)), _mm512_set1_ps(FG_EXP_LO));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(FG_EXP_LOG2E)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(FG_EXP_C1), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(FG_EXP_C2), r);
  __m512 y = _mm512_set1_ps(FG_EXP_P0);
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(FG_EXP_P1));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(FG_EXP_P2));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(FG_EXP_P3));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(FG_EXP_P4));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(FG_EXP_P5));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), r);
  y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, n);
}

static void exp_avx512(const float *FG_RESTRICT x, float *FG_RESTRICT y, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, exp16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, k, exp16(_mm512_maskz_loadu_ps(k, x + i)));
  }
}

// ----------------------------------------------------------------------------------------------
// scores: tiles of up to 12 rows × the block's 32 keys (24 accumulators); per component two key
// vectors and one broadcast query element per row

#define QK_RMAX 12

FG_INLINE void qk_tile(const float *q, size_t ldq, size_t hk, const uint8_t *kt, const int f16, const int pf,
                       float *s, const int RR) {
  __m512 acc[QK_RMAX][2];
#pragma GCC unroll 12
  for (int r = 0; r < RR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (size_t i = 0; i < hk; i++) {
    __m512 k0, k1;
    if (f16) {
      const uint8_t *p = kt + i * FG_ATTN_BLK * 2;
      if (pf) fg_attn_prefetch(p, FG_ATTN_PF_K_BYTES);
      k0 = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(const void *)p));
      k1 = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(const void *)(p + 32)));
    } else {
      const float *p = (const float *)(const void *)kt + i * FG_ATTN_BLK;
      if (pf) {
        fg_attn_prefetch(p, FG_ATTN_PF_K_BYTES);
        fg_attn_prefetch(p, FG_ATTN_PF_K_BYTES + 64);
      }
      k0 = _mm512_load_ps(p);
      k1 = _mm512_load_ps(p + 16);
    }
#pragma GCC unroll 12
    for (int r = 0; r < RR; r++) {
      const __m512 w = _mm512_set1_ps(q[(size_t)r * ldq + i]);
      acc[r][0] = _mm512_fmadd_ps(w, k0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(w, k1, acc[r][1]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < RR; r++) {
    _mm512_storeu_ps(s + (size_t)r * FG_ATTN_BLK, acc[r][0]);
    _mm512_storeu_ps(s + (size_t)r * FG_ATTN_BLK + 16, acc[r][1]);
  }
}

static void qk_avx512(const float *FG_RESTRICT q, size_t ldq, size_t R, size_t hk, const void *FG_RESTRICT kt,
                      uint32_t k_type, float *FG_RESTRICT s) {
  const int f16 = k_type == FG_TYPE_F16;
  for (size_t r0 = 0; r0 < R; r0 += QK_RMAX) {
    const float *qr = q + r0 * ldq;
    float *sr = s + r0 * FG_ATTN_BLK;
    switch (FG_MIN((size_t)QK_RMAX, R - r0)) {
#define QK_CASE(RR) case RR: qk_tile(qr, ldq, hk, kt, f16, r0 == 0, sr, RR); break;
      QK_CASE(1) QK_CASE(2) QK_CASE(3) QK_CASE(4) QK_CASE(5) QK_CASE(6)
      QK_CASE(7) QK_CASE(8) QK_CASE(9) QK_CASE(10) QK_CASE(11) QK_CASE(12)
#undef QK_CASE
      default: break;
    }
  }
}

// ----------------------------------------------------------------------------------------------
// softmax: per row the max, the weights and their sum; then the rescales c = fg_attn_exp1(m - mn)
// of 16 rows at once (exp1_16), and their l and m. fg_attn_exp1 one call per row was as slow as the
// rest of the row's work.

/* fg_attn_exp1 on 16 lanes, bit for bit: its clamp, its unfused operations (this file is built
 * without contraction: -std=c11), rint as round-to-nearest-even, 2^n from the exponent bits; NaN
 * lanes come back as they went in. */
FG_INLINE __m512 exp1_16(__m512 x) {
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  __m512 xc = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(FG_EXP_HI)), _mm512_set1_ps(FG_EXP_LO));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(FG_EXP_LOG2E)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_sub_ps(_mm512_sub_ps(xc, _mm512_mul_ps(n, _mm512_set1_ps(FG_EXP_C1))),
                                 _mm512_mul_ps(n, _mm512_set1_ps(FG_EXP_C2)));
  __m512 y = _mm512_set1_ps(FG_EXP_P0);
  y = _mm512_add_ps(_mm512_mul_ps(y, r), _mm512_set1_ps(FG_EXP_P1));
  y = _mm512_add_ps(_mm512_mul_ps(y, r), _mm512_set1_ps(FG_EXP_P2));
  y = _mm512_add_ps(_mm512_mul_ps(y, r), _mm512_set1_ps(FG_EXP_P3));
  y = _mm512_add_ps(_mm512_mul_ps(y, r), _mm512_set1_ps(FG_EXP_P4));
  y = _mm512_add_ps(_mm512_mul_ps(y, r), _mm512_set1_ps(FG_EXP_P5));
  y = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(y, _mm512_mul_ps(r, r)), r), _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mask_mov_ps(_mm512_mul_ps(y, _mm512_castsi512_ps(e)), nan, x);
}

/* Sixteen rows' vectors x[0..15] reduced at once, each to one number, in the order of GCC's
 * _mm512_reduce_add_ps (what this table summed a row with before): lanes k + 8 and k, then k + 4 and k,
 * then k + 2 and k, then 1 and 0; the pairs of rows are brought together by shuffles, so every sum is
 * one of those same additions. Result lane r: row r. MAX: the maximum instead (any order gives it). */
FG_INLINE __m512 reduce16(const __m512 *x, const int MAX) {
#define RED_OP(a, b) (MAX ? _mm512_max_ps(a, b) : _mm512_add_ps(a, b))
  __m512 y[8], z[4], w[2];
  for (int i = 0; i < 8; i++) /* lanes 0-7: row 2i's k + 8 and k; lanes 8-15: row 2i + 1's */
    y[i] = RED_OP(_mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0xEE), _mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0x44));
  for (int i = 0; i < 4; i++) /* 128-bit block b: row 4i + b's k + 4 and k */
    z[i] = RED_OP(_mm512_shuffle_f32x4(y[2 * i], y[2 * i + 1], 0xDD), _mm512_shuffle_f32x4(y[2 * i], y[2 * i + 1], 0x88));
  for (int i = 0; i < 2; i++) /* block b: lanes 0, 1: row 8i + b's k + 2 and k; lanes 2, 3: row 8i + 4 + b's */
    w[i] = RED_OP(_mm512_shuffle_ps(z[2 * i], z[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                  _mm512_shuffle_ps(z[2 * i], z[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  /* block b, lane k: row 4k + b's lanes 0 and 1 */
  const __m512 v = RED_OP(_mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                          _mm512_shuffle_ps(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1)));
#undef RED_OP
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), v);
}

/* Rows in groups of 16: each row's masked max (one vector a row), the 16 maxima at once (reduce16);
 * the weights of each row and their vector of sums, the 16 sums at once; then c, l and m of the 16
 * rows as vectors. A row's max, weights and sum are those of one row alone: its own lanes and the
 * order above, whatever the other rows of the group. */
static void softmax_avx512(float *FG_RESTRICT s, size_t R, const uint32_t *FG_RESTRICT j0,
                           const uint32_t *FG_RESTRICT j1, float *FG_RESTRICT m, float *FG_RESTRICT l,
                           float *FG_RESTRICT c) {
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  for (size_t r0 = 0; r0 < R; r0 += 16) {
    const size_t nr = FG_MIN((size_t)16, R - r0);
    const __mmask16 kr = (__mmask16)((1u << nr) - 1u);
    __m512 x[16];              /* (16) a row's maxima, then its weights' sums, lane by lane */
    __mmask16 km[16][2];       /* (16, 2) the row's valid keys: 0-15, 16-31 */
    __mmask16 valid = 0;       /* rows with a key in the block */
    for (size_t i = 0; i < 16; i++) {
      const size_t r = r0 + i;
      const uint32_t a = i < nr ? j0[r] : 0, b = i < nr ? j1[r] : 0;
      if (a >= b) {
        km[i][0] = km[i][1] = 0;
        x[i] = ninf;
        continue;
      }
      valid |= (__mmask16)(1u << i);
      const uint32_t bits = (b >= 32 ? 0xffffffffu : ((1u << b) - 1u)) & ~((1u << a) - 1u);
      km[i][0] = (__mmask16)(bits & 0xffffu);
      km[i][1] = (__mmask16)(bits >> 16);
      const float *sr = s + r * FG_ATTN_BLK; /* (32) */
      x[i] = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, km[i][0], sr), _mm512_mask_loadu_ps(ninf, km[i][1], sr + 16));
    }
    const __m512 vm = _mm512_mask_loadu_ps(ninf, kr, m + r0);
    /* mn = m > mx ? m : mx, as _mm512_max_ps; rows without keys keep m */
    const __m512 vmn = _mm512_mask_max_ps(vm, valid, vm, reduce16(x, 1));
    float mnv[16]; /* (16) */
    _mm512_storeu_ps(mnv, vmn);
    for (size_t i = 0; i < 16; i++) {
      float *sr = s + (r0 + i) * FG_ATTN_BLK; /* (32) */
      if (!(valid >> i & 1u)) {
        if (i < nr) {
          _mm512_storeu_ps(sr, _mm512_setzero_ps());
          _mm512_storeu_ps(sr + 16, _mm512_setzero_ps());
        }
        x[i] = _mm512_setzero_ps();
        continue;
      }
      const __m512 b = _mm512_set1_ps(mnv[i]);
      const __m512 e0 = _mm512_maskz_mov_ps(km[i][0], exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(km[i][0], sr), b)));
      const __m512 e1 = _mm512_maskz_mov_ps(km[i][1], exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(km[i][1], sr + 16), b)));
      _mm512_storeu_ps(sr, e0);
      _mm512_storeu_ps(sr + 16, e1);
      x[i] = _mm512_add_ps(e0, e1);
    }
    const __m512 sum = reduce16(x, 0);
    /* c = 1 where no key (m, l kept); 0 where m = -inf; else fg_attn_exp1(m - mn); l = l c + sum (a
     * rounded product, then a rounded sum) */
    const __m512 vl = _mm512_maskz_loadu_ps(kr, l + r0);
    __m512 vc = exp1_16(_mm512_sub_ps(vm, vmn));
    vc = _mm512_mask_mov_ps(vc, _mm512_cmp_ps_mask(vm, ninf, _CMP_EQ_OQ), _mm512_setzero_ps());
    vc = _mm512_mask_mov_ps(_mm512_set1_ps(1.0f), valid, vc);
    _mm512_mask_storeu_ps(c + r0, kr, vc);
    _mm512_mask_storeu_ps(l + r0, kr & valid, _mm512_add_ps(_mm512_mul_ps(vl, vc), sum));
    _mm512_mask_storeu_ps(m + r0, kr & valid, vmn);
  }
}

// ----------------------------------------------------------------------------------------------
// P·V

/* RR rows × DV vectors of 16 columns at column d0; TAIL: the last vector has only `last` lanes */
FG_INLINE void pv_tile(float *o, size_t ldo, const float *c, const float *p, uint32_t ja, uint32_t jb,
                       const uint8_t *v, size_t vs, const int f16, size_t d0, __mmask16 last, size_t pf_bytes,
                       const int RR, const int DV, const int TAIL) {
  __m512 acc[PV_RMAX][PV_DMAX];
#pragma GCC unroll 6
  for (int r = 0; r < RR; r++) {
    const __m512 cr = _mm512_set1_ps(c[r]);
    const float *orow = o + (size_t)r * ldo + d0;
#pragma GCC unroll 4
    for (int d = 0; d < DV; d++) {
      const __m512 x = TAIL && d == DV - 1 ? _mm512_maskz_loadu_ps(last, orow + 16 * d) : _mm512_loadu_ps(orow + 16 * d);
      acc[r][d] = _mm512_mul_ps(x, cr);
    }
  }
  for (uint32_t j = ja; j < jb; j++) {
    const uint8_t *vr = v + (size_t)(j - ja) * vs;
    for (size_t b = 0; b < pf_bytes; b += 64) fg_attn_prefetch(vr, FG_ATTN_PF_V_ROWS * vs + b);
    __m512 vv[PV_DMAX];
#pragma GCC unroll 4
    for (int d = 0; d < DV; d++) {
      const size_t col = d0 + 16 * (size_t)d;
      if (f16)
        vv[d] = _mm512_cvtph_ps(TAIL && d == DV - 1 ? _mm256_maskz_loadu_epi16(last, vr + col * 2)
                                                    : _mm256_loadu_si256((const __m256i *)(const void *)(vr + col * 2)));
      else
        vv[d] = TAIL && d == DV - 1 ? _mm512_maskz_loadu_ps(last, vr + col * 4) : _mm512_loadu_ps(vr + col * 4);
    }
#pragma GCC unroll 6
    for (int r = 0; r < RR; r++) {
      const __m512 w = _mm512_set1_ps(p[(size_t)r * FG_ATTN_BLK + j]);
#pragma GCC unroll 4
      for (int d = 0; d < DV; d++) acc[r][d] = _mm512_fmadd_ps(w, vv[d], acc[r][d]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < RR; r++) {
    float *orow = o + (size_t)r * ldo + d0;
#pragma GCC unroll 4
    for (int d = 0; d < DV; d++) {
      if (TAIL && d == DV - 1) _mm512_mask_storeu_ps(orow + 16 * d, last, acc[r][d]);
      else _mm512_storeu_ps(orow + 16 * d, acc[r][d]);
    }
  }
}

#define PV_CASE_D(RR, DV)                                                                     \
  case DV:                                                                                    \
    if (tail) pv_tile(o, ldo, c, p, ja, jb, vb, v_stride, f16, d0, last, pf, RR, DV, 1);           \
    else pv_tile(o, ldo, c, p, ja, jb, vb, v_stride, f16, d0, last, pf, RR, DV, 0);                \
    break;
#define PV_CASE_R(RR)                                                                         \
  case RR:                                                                                    \
    switch (dv) { PV_CASE_D(RR, 1) PV_CASE_D(RR, 2) PV_CASE_D(RR, 3) PV_CASE_D(RR, 4) default: break; } \
    break;

static void pv_avx512(float *FG_RESTRICT o_all, size_t ldo, size_t R, size_t hv, const float *FG_RESTRICT c_all,
                      const float *FG_RESTRICT p_all, uint32_t ja, uint32_t jb, const void *FG_RESTRICT v,
                      size_t v_stride, uint32_t v_type) {
  const int f16 = v_type == FG_TYPE_F16;
  const uint8_t *vb = v;
  for (size_t d0 = 0; d0 < hv; d0 += 16 * PV_DMAX) {
    const size_t nd = FG_MIN((size_t)16 * PV_DMAX, hv - d0);
    const int dv = (int)((nd + 15) / 16);
    const size_t in_last = nd - 16 * (size_t)(dv - 1);
    const int tail = in_last != 16;
    const __mmask16 last = (__mmask16)((1u << in_last) - 1u);
    for (size_t r0 = 0; r0 < R; r0 += PV_RMAX) {
      const int rr = (int)FG_MIN((size_t)PV_RMAX, R - r0);
      float *o = o_all + r0 * ldo;
      const float *c = c_all + r0;
      const float *p = p_all + r0 * FG_ATTN_BLK;
      const size_t pf = d0 == 0 && r0 == 0 ? hv * (f16 ? 2u : 4u) : 0; /* the first pass over the rows */
      switch (rr) {
        PV_CASE_R(1)
        PV_CASE_R(2)
        PV_CASE_R(3)
        PV_CASE_R(4)
        PV_CASE_R(5)
        PV_CASE_R(6)
        default: break;
      }
    }
  }
}

// ----------------------------------------------------------------------------------------------
// GELU, f16

FG_INLINE __m512 gelu16(__m512 x) {
  const __m512 x2 = _mm512_mul_ps(x, x);
  const __m512 u = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(FG_GELU_K), x),
                                 _mm512_fmadd_ps(_mm512_set1_ps(FG_GELU_A), x2, _mm512_set1_ps(1.0f)));
  const __m512 e = exp16(_mm512_mul_ps(_mm512_set1_ps(-2.0f), u));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

static void gelu_mul_avx512(float *FG_RESTRICT g, const float *FG_RESTRICT up, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(g + i, _mm512_mul_ps(gelu16(_mm512_loadu_ps(g + i)), _mm512_loadu_ps(up + i)));
  if (i < n) {
    const __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(g + i, k, _mm512_mul_ps(gelu16(_mm512_maskz_loadu_ps(k, g + i)), _mm512_maskz_loadu_ps(k, up + i)));
  }
}

static void to_f16_avx512(const float *FG_RESTRICT x, uint16_t *FG_RESTRICT y, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i *)(void *)(y + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; i++) y[i] = fg_f32_to_fp16(x[i]);
}

static void exp1_avx512(const float *x, float *y, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, exp1_16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, k, exp1_16(_mm512_maskz_loadu_ps(k, x + i)));
  }
}

static const fg_attn_kernels k_attn_avx512 = {"avx512", qk_avx512, softmax_avx512, pv_avx512, fg_attn_fold_avx2, gelu_mul_avx512, exp_avx512,
                                              to_f16_avx512, fg_attn_argmax_avx2, fg_lora_bt_avx2, exp1_avx512};

const fg_attn_kernels *fg_attn_avx512(void) { return &k_attn_avx512; }
