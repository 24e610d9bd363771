/* avx2_attn.c — the AVX2 + FMA + F16C attention/GELU table (attn.h), the x86 fallback below
 * AVX-512. Same algorithms with 8 lanes: pv tiles of 6 rows × 16 columns (12 accumulators), columns
 * past the last multiple of 8 with scalar fmaf (the same fused operation per element). */
#include "kernels/attn.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define FG_INLINE static inline __attribute__((always_inline))
#define PV_RMAX 6
#define PV_DMAX 2

// ----------------------------------------------------------------------------------------------
// exp

FG_INLINE __m256 exp8(__m256 x) {
  x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(FG_EXP_HI)), _mm256_set1_ps(FG_EXP_LO));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(FG_EXP_LOG2E)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(FG_EXP_C1), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(FG_EXP_C2), r);
  __m256 y = _mm256_set1_ps(FG_EXP_P0);
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(FG_EXP_P1));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(FG_EXP_P2));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(FG_EXP_P3));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(FG_EXP_P4));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(FG_EXP_P5));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), r);
  y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

static void exp_avx2(const float *FG_RESTRICT x, float *FG_RESTRICT y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp8(_mm256_loadu_ps(x + i)));
  for (; i < n; i++) y[i] = fg_attn_exp1(x[i]);
}

// ----------------------------------------------------------------------------------------------
// scores: tiles of up to 6 rows × 16 keys (12 accumulators), the block's two halves of 16 keys one
// after the other: a half's keys are one 64-byte line per dimension (16 KiB of f32 keys for 256
// dimensions), which stays in L1 while every row tile of the call reads it; the whole block (32 KiB)
// did not, and the tiles of 3 rows × 32 keys before streamed it from L2 for each 3 rows.

#define QK_RMAX 6

FG_INLINE void qk_tile(const float *q, size_t ldq, size_t hk, const uint8_t *kt, const int f16, size_t half,
                       const int pf, float *s, const int RR) {
  __m256 acc[QK_RMAX][2];
#pragma GCC unroll 6
  for (int r = 0; r < RR; r++)
    for (int v = 0; v < 2; v++) acc[r][v] = _mm256_setzero_ps();
  for (size_t i = 0; i < hk; i++) {
    __m256 k[2];
    if (f16) {
      const uint8_t *p = kt + (i * FG_ATTN_BLK + 16 * half) * 2;
      if (pf) fg_attn_prefetch(p, FG_ATTN_PF_K_BYTES); /* the dimension's 32 keys: one line */
      for (int v = 0; v < 2; v++) k[v] = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(const void *)(p + 16 * v)));
    } else {
      const float *p = (const float *)(const void *)kt + i * FG_ATTN_BLK + 16 * half;
      if (pf) { /* the dimension's 32 keys: both halves' lines */
        fg_attn_prefetch(p, FG_ATTN_PF_K_BYTES);
        fg_attn_prefetch(p, FG_ATTN_PF_K_BYTES + 64);
      }
      for (int v = 0; v < 2; v++) k[v] = _mm256_load_ps(p + 8 * v);
    }
#pragma GCC unroll 6
    for (int r = 0; r < RR; r++) {
      const __m256 w = _mm256_broadcast_ss(q + (size_t)r * ldq + i);
      for (int v = 0; v < 2; v++) acc[r][v] = _mm256_fmadd_ps(w, k[v], acc[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < RR; r++)
    for (int v = 0; v < 2; v++) _mm256_storeu_ps(s + (size_t)r * FG_ATTN_BLK + 16 * half + 8 * v, acc[r][v]);
}

static void qk_avx2(const float *FG_RESTRICT q, size_t ldq, size_t R, size_t hk, const void *FG_RESTRICT kt,
                    uint32_t k_type, float *FG_RESTRICT s) {
  const int f16 = k_type == FG_TYPE_F16;
  for (size_t half = 0; half < 2; half++)
    for (size_t r0 = 0; r0 < R; r0 += QK_RMAX) {
      const float *qr = q + r0 * ldq;
      float *sr = s + r0 * FG_ATTN_BLK;
      switch (FG_MIN((size_t)QK_RMAX, R - r0)) {
#define QK_CASE(RR) case RR: qk_tile(qr, ldq, hk, kt, f16, half, half == 0 && r0 == 0, sr, RR); break;
        QK_CASE(1) QK_CASE(2) QK_CASE(3) QK_CASE(4) QK_CASE(5) QK_CASE(6)
#undef QK_CASE
        default: break;
      }
    }
}

// ----------------------------------------------------------------------------------------------
// softmax

/* fg_attn_exp1 on 8 lanes, bit for bit: its clamp, its unfused operations (no contraction: -std=c11),
 * rint as round-to-nearest-even, 2^n from the exponent bits; NaN lanes come back as they went in. */
FG_INLINE __m256 exp1_8(__m256 x) {
  const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 xc = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(FG_EXP_HI)), _mm256_set1_ps(FG_EXP_LO));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(FG_EXP_LOG2E)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_sub_ps(_mm256_sub_ps(xc, _mm256_mul_ps(n, _mm256_set1_ps(FG_EXP_C1))),
                                 _mm256_mul_ps(n, _mm256_set1_ps(FG_EXP_C2)));
  __m256 y = _mm256_set1_ps(FG_EXP_P0);
  y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(FG_EXP_P1));
  y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(FG_EXP_P2));
  y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(FG_EXP_P3));
  y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(FG_EXP_P4));
  y = _mm256_add_ps(_mm256_mul_ps(y, r), _mm256_set1_ps(FG_EXP_P5));
  y = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(y, _mm256_mul_ps(r, r)), r), _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_blendv_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(e)), x, nan);
}

/* Eight rows' vectors x[0..7] reduced at once, each to one number, in the C table's order (softmax_c:
 * lanes k and k + 4, then k and k + 2, then 0 and 1); the pairs of rows are brought together by
 * shuffles, so every sum is one of those same additions. Result lane r: row r. MAX: the maximum
 * instead (any order gives it). */
FG_INLINE __m256 reduce8(const __m256 *x, const int MAX) {
#define RED_OP(a, b) (MAX ? _mm256_max_ps(a, b) : _mm256_add_ps(a, b))
  __m256 y[4], z[2];
  for (int i = 0; i < 4; i++) /* lanes 0-3: row 2i's k and k + 4; lanes 4-7: row 2i + 1's */
    y[i] = RED_OP(_mm256_permute2f128_ps(x[2 * i], x[2 * i + 1], 0x20), _mm256_permute2f128_ps(x[2 * i], x[2 * i + 1], 0x31));
  for (int i = 0; i < 2; i++) /* half h, lanes 0, 1: row 4i + h's k and k + 2; lanes 2, 3: row 4i + 2 + h's */
    z[i] = RED_OP(_mm256_shuffle_ps(y[2 * i], y[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                  _mm256_shuffle_ps(y[2 * i], y[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  /* half h, lane k: row 2k + h's lanes 0 and 1 */
  const __m256 v = RED_OP(_mm256_shuffle_ps(z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0)),
                          _mm256_shuffle_ps(z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1)));
#undef RED_OP
  return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* the valid keys 8q .. 8q + 7 of a row with keys [a, b) (all ones: valid) */
FG_INLINE __m256i key_mask(uint32_t a, uint32_t b, int q) {
  const __m256i idx = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(8 * q));
  return _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)a), idx), _mm256_cmpgt_epi32(_mm256_set1_epi32((int)b), idx));
}

/* Rows in groups of 8: each row's masked max (one vector a row), the 8 maxima at once (reduce8); the
 * weights of each row and their vector of sums, the 8 sums at once; then c, l and m of the 8 rows as
 * vectors. A row's max, weights and sum are those of one row alone, whatever the other rows. */
static void softmax_avx2(float *FG_RESTRICT s, size_t R, const uint32_t *FG_RESTRICT j0,
                         const uint32_t *FG_RESTRICT j1, float *FG_RESTRICT m, float *FG_RESTRICT l,
                         float *FG_RESTRICT c) {
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  for (size_t r0 = 0; r0 < R; r0 += 8) {
    const size_t nr = FG_MIN((size_t)8, R - r0);
    float mo[8], lo[8]; /* (8) the rows' old max and sum (0 past R) */
    int32_t valid[8];   /* (8) -1: the row has a key in the block */
    __m256 x[8];        /* (8) a row's maxima, then its weights' sums, lane by lane */
    for (size_t i = 0; i < 8; i++) {
      const size_t r = r0 + i;
      const uint32_t a = i < nr ? j0[r] : 0, b = i < nr ? j1[r] : 0;
      mo[i] = i < nr ? m[r] : 0.0f;
      lo[i] = i < nr ? l[r] : 0.0f;
      valid[i] = a < b ? -1 : 0;
      x[i] = ninf;
      if (a >= b) continue;
      const float *sr = s + r * FG_ATTN_BLK; /* (32) */
      for (int q = 0; q < 4; q++) {
        const __m256 k = _mm256_castsi256_ps(key_mask(a, b, q));
        x[i] = _mm256_max_ps(x[i], _mm256_blendv_ps(ninf, _mm256_maskload_ps(sr + 8 * q, _mm256_castps_si256(k)), k));
      }
    }
    const __m256 vm = _mm256_loadu_ps(mo), vl = _mm256_loadu_ps(lo);
    const __m256 kv = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)(const void *)valid));
    /* mn = m > mx ? m : mx, as _mm256_max_ps; rows without keys keep m */
    const __m256 vmn = _mm256_blendv_ps(vm, _mm256_max_ps(vm, reduce8(x, 1)), kv);
    float mnv[8]; /* (8) */
    _mm256_storeu_ps(mnv, vmn);
    for (size_t i = 0; i < 8; i++) {
      x[i] = _mm256_setzero_ps();
      if (i >= nr) continue;
      const size_t r = r0 + i;
      float *sr = s + r * FG_ATTN_BLK; /* (32) */
      if (!valid[i]) {
        for (int q = 0; q < 4; q++) _mm256_storeu_ps(sr + 8 * q, _mm256_setzero_ps());
        continue;
      }
      const __m256 vb = _mm256_set1_ps(mnv[i]);
      for (int q = 0; q < 4; q++) {
        const __m256i k = key_mask(j0[r], j1[r], q);
        const __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(_mm256_maskload_ps(sr + 8 * q, k), vb)), _mm256_castsi256_ps(k));
        _mm256_storeu_ps(sr + 8 * q, e);
        x[i] = _mm256_add_ps(x[i], e);
      }
    }
    const __m256 sum = reduce8(x, 0);
    /* c = 1 where no key (m, l kept); 0 where m = -inf; else fg_attn_exp1(m - mn); l = l c + sum (a
     * rounded product, then a rounded sum) */
    __m256 vc = _mm256_andnot_ps(_mm256_cmp_ps(vm, ninf, _CMP_EQ_OQ), exp1_8(_mm256_sub_ps(vm, vmn)));
    vc = _mm256_blendv_ps(_mm256_set1_ps(1.0f), vc, kv);
    float co[8], lv[8], mv[8];
    _mm256_storeu_ps(co, vc);
    _mm256_storeu_ps(lv, _mm256_blendv_ps(vl, _mm256_add_ps(_mm256_mul_ps(vl, vc), sum), kv));
    _mm256_storeu_ps(mv, vmn);
    for (size_t i = 0; i < nr; i++) {
      c[r0 + i] = co[i];
      l[r0 + i] = lv[i];
      m[r0 + i] = mv[i];
    }
  }
}

// ----------------------------------------------------------------------------------------------
// P·V

FG_INLINE __m256 ldv8(const uint8_t *vr, size_t col, const int f16) {
  if (f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(vr + col * 2)));
  return _mm256_loadu_ps((const float *)(const void *)(vr + col * 4));
}

FG_INLINE void pv_tile(float *o, size_t ldo, const float *c, const float *p, uint32_t ja, uint32_t jb,
                       const uint8_t *v, size_t vs, const int f16, size_t d0, size_t pf_bytes, const int RR,
                       const int DV) {
  __m256 acc[PV_RMAX][PV_DMAX];
#pragma GCC unroll 6
  for (int r = 0; r < RR; r++) {
    const __m256 cr = _mm256_set1_ps(c[r]);
#pragma GCC unroll 2
    for (int d = 0; d < DV; d++) acc[r][d] = _mm256_mul_ps(_mm256_loadu_ps(o + (size_t)r * ldo + d0 + 8 * d), cr);
  }
  for (uint32_t j = ja; j < jb; j++) {
    const uint8_t *vr = v + (size_t)(j - ja) * vs;
    for (size_t b = 0; b < pf_bytes; b += 64) fg_attn_prefetch(vr, FG_ATTN_PF_V_ROWS * vs + b);
    __m256 vv[PV_DMAX];
#pragma GCC unroll 2
    for (int d = 0; d < DV; d++) vv[d] = ldv8(vr, d0 + 8 * (size_t)d, f16);
#pragma GCC unroll 6
    for (int r = 0; r < RR; r++) {
      const __m256 w = _mm256_broadcast_ss(p + (size_t)r * FG_ATTN_BLK + j);
#pragma GCC unroll 2
      for (int d = 0; d < DV; d++) acc[r][d] = _mm256_fmadd_ps(w, vv[d], acc[r][d]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < RR; r++)
#pragma GCC unroll 2
    for (int d = 0; d < DV; d++) _mm256_storeu_ps(o + (size_t)r * ldo + d0 + 8 * d, acc[r][d]);
}

#define PV_CASE_R(RR)                                                                       \
  case RR:                                                                                  \
    if (dv == 2) pv_tile(o, ldo, c, p, ja, jb, vb, v_stride, f16, d0, pf, RR, 2);                \
    else pv_tile(o, ldo, c, p, ja, jb, vb, v_stride, f16, d0, pf, RR, 1);                        \
    break;

static void pv_avx2(float *FG_RESTRICT o_all, size_t ldo, size_t R, size_t hv, const float *FG_RESTRICT c_all,
                    const float *FG_RESTRICT p_all, uint32_t ja, uint32_t jb, const void *FG_RESTRICT v,
                    size_t v_stride, uint32_t v_type) {
  const int f16 = v_type == FG_TYPE_F16;
  const uint8_t *vb = v;
  const size_t hv8 = hv / 8 * 8;
  for (size_t d0 = 0; d0 < hv8; d0 += 8 * PV_DMAX) {
    const int dv = hv8 - d0 >= 16 ? 2 : 1;
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
  /* columns past the last multiple of 8: the same fused operations, one at a time */
  for (size_t i = hv8; i < hv; i++) {
    for (size_t r = 0; r < R; r++) {
      float acc = o_all[r * ldo + i] * c_all[r];
      for (uint32_t j = ja; j < jb; j++) {
        const uint8_t *vr = vb + (size_t)(j - ja) * v_stride;
        float x;
        if (f16) {
          uint16_t h;
          memcpy(&h, vr + i * 2, 2);
          x = _cvtsh_ss(h);
        } else {
          memcpy(&x, vr + i * 4, 4);
        }
        acc = fmaf(p_all[r * FG_ATTN_BLK + j], x, acc);
      }
      o_all[r * ldo + i] = acc;
    }
  }
}

/* also the AVX-512 table's. Two passes, as the aarch64 table's: the largest non-NaN value (vmaxps(v, m)
 * keeps m where v is NaN; the lanes start at -inf), then the first entry equal to it, 32 at a time. That
 * is the C scan's answer: it keeps the first of the entries that equal the maximum, and +0 == -0; with
 * every entry NaN nothing equals the -inf left, SIZE_MAX. (A decode step's 262,144 logits: about 1 % of
 * the step in the C scan.) */
size_t fg_attn_argmax_avx2(const float *x, size_t n) {
  __m256 m[4];
  for (int k = 0; k < 4; k++) m[k] = _mm256_set1_ps(-INFINITY);
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; k++) m[k] = _mm256_max_ps(_mm256_loadu_ps(x + i + 8 * k), m[k]);
  __m256 mm = _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3]));
  mm = _mm256_max_ps(mm, _mm256_permute2f128_ps(mm, mm, 1));
  mm = _mm256_max_ps(mm, _mm256_shuffle_ps(mm, mm, _MM_SHUFFLE(1, 0, 3, 2)));
  mm = _mm256_max_ps(mm, _mm256_shuffle_ps(mm, mm, _MM_SHUFFLE(2, 3, 0, 1)));
  float best = _mm256_cvtss_f32(mm);
  for (; i < n; i++)
    if (x[i] > best) best = x[i];
  const __m256 b = _mm256_set1_ps(best);
  for (i = 0; i + 32 <= n; i += 32) {
    __m256 eq = _mm256_cmp_ps(_mm256_loadu_ps(x + i), b, _CMP_EQ_OQ);
    for (int k = 1; k < 4; k++) eq = _mm256_or_ps(eq, _mm256_cmp_ps(_mm256_loadu_ps(x + i + 8 * k), b, _CMP_EQ_OQ));
    if (_mm256_movemask_ps(eq)) break;
  }
  for (; i < n; i++)
    if (x[i] == best) return i;
  return SIZE_MAX;
}

/* also the AVX-512 table's (a stream of two loads, a multiply and an FMA per 8 floats: memory-bound) */
void fg_attn_fold_avx2(float *FG_RESTRICT o, float c1, const float *FG_RESTRICT x, float c2, size_t n) {
  const __m256 v1 = _mm256_set1_ps(c1), v2 = _mm256_set1_ps(c2);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(o + i, _mm256_fmadd_ps(v2, _mm256_loadu_ps(x + i), _mm256_mul_ps(_mm256_loadu_ps(o + i), v1)));
  for (; i < n; i++) o[i] = fmaf(c2, x[i], o[i] * c1);
}

// ----------------------------------------------------------------------------------------------
// GELU, f16

FG_INLINE __m256 gelu8(__m256 x) {
  const __m256 x2 = _mm256_mul_ps(x, x);
  const __m256 u = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(FG_GELU_K), x),
                                 _mm256_fmadd_ps(_mm256_set1_ps(FG_GELU_A), x2, _mm256_set1_ps(1.0f)));
  const __m256 e = exp8(_mm256_mul_ps(_mm256_set1_ps(-2.0f), u));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

static void gelu_mul_avx2(float *FG_RESTRICT g, const float *FG_RESTRICT up, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(g + i, _mm256_mul_ps(gelu8(_mm256_loadu_ps(g + i)), _mm256_loadu_ps(up + i)));
  if (i < n) {
    float gx[8] = {0}, ux[8] = {0};
    memcpy(gx, g + i, (n - i) * sizeof(float));
    memcpy(ux, up + i, (n - i) * sizeof(float));
    _mm256_storeu_ps(gx, _mm256_mul_ps(gelu8(_mm256_loadu_ps(gx)), _mm256_loadu_ps(ux)));
    memcpy(g + i, gx, (n - i) * sizeof(float));
  }
}

static void to_f16_avx2(const float *FG_RESTRICT x, uint16_t *FG_RESTRICT y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(void *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; i++) y[i] = fg_f32_to_fp16(x[i]);
}

static void exp1_avx2(const float *x, float *y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp1_8(_mm256_loadu_ps(x + i)));
  for (; i < n; i++) y[i] = fg_attn_exp1(x[i]);
}

static const fg_attn_kernels k_attn_avx2 = {"avx2",      qk_avx2,          softmax_avx2,   pv_avx2,        fg_attn_fold_avx2, gelu_mul_avx2,
                                           exp_avx2,    to_f16_avx2,      fg_attn_argmax_avx2, fg_lora_bt_avx2, exp1_avx2};

const fg_attn_kernels *fg_attn_avx2(void) { return &k_attn_avx2; }
