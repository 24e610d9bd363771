/* avx2_kernels.c — AVX2 + FMA + F16C kernels, the x86 fallback below AVX-512. Built with those ISA
 * flags; only reached through fg_kernels_avx2() after dispatch.c has checked the CPU.
 *
 * Same specs and layouts as the AVX-512 table with 8 lanes (see avx512_kernels.c): vec kernels put
 * 8 weight rows in the lanes (transpose for float types, int8 block dots reduced across lanes); the
 * float gemm puts 8 activations in the lanes. There is no bf16 dot instruction: BF16 weights follow
 * the fma spec. Int8 products use the maddubs sign trick (|w| * sign(x, w)), exact for Q8_0.
 * The other quantized types (Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS) decode a tile's rows once
 * per column segment into int8 values and scales (q8w_stage.h) for the same vec core; Q5_0 reads
 * its blocks directly, as Q4_0 does. The quantized gemm (every q8-spec type, from 2-4 activations)
 * stages 32 rows' column segment once, transposed so that 8 rows' 4-byte groups fill a register and
 * meet an activation's broadcast group in vpmaddubsw, then runs every activation against it (4 row
 * vectors of accumulators); the weights as small unsigned values where the type allows (int16 sums
 * of several groups before vpmaddwd), else signed ones for the sign trick. Q8_0, Q5_0, Q5_1, Q4_K,
 * Q6_K, IQ4_NL and IQ4_XS matrices copied at load into this table's packed layout (below, "Packed
 * ...") are read from it by both. */
#include "kernels/kernels.h"
#include "kernels/x86/q8w_stage.h"

#include <immintrin.h>
#include <string.h>

#define FG_INLINE static inline __attribute__((always_inline))

#define FG_Q_KSEG 64   /* int8 blocks per tile segment with staged weight scales */
#define FG_F_JSEG 256  /* columns per f16/bf16 weight segment staged as f32 */

// ----------------------------------------------------------------------------
// helpers

FG_INLINE uint16_t fg_ld_u16(const void *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}
FG_INLINE float fg_h2f(const void *p) { return _cvtsh_ss(fg_ld_u16(p)); }

FG_INLINE void fg_tile_rows(const fg_mm_args *a, size_t i0, size_t n, size_t cap, const uint8_t **rp) {
  for (size_t r = 0; r < cap; r++) {
    const size_t i = i0 + (r < n ? r : 0);
    const size_t row = a->rows ? (size_t)a->rows[i] : i;
    rp[r] = a->w + row * a->row_bytes;
  }
}

FG_INLINE float fg_hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}
FG_INLINE int32_t fg_hsum8i(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

/* Stores the valid lanes of v (8 rows) to y[0..n). */
FG_INLINE void fg_store_rows(float *y, size_t n, __m256 v) {
  if (n >= 8) {
    _mm256_storeu_ps(y, v);
    return;
  }
  float tmp[8];
  _mm256_storeu_ps(tmp, v);
  for (size_t i = 0; i < n; i++) y[i] = tmp[i];
}

FG_INLINE __m256 fg_load_rows(const float *y, size_t n) {
  if (n >= 8) return _mm256_loadu_ps(y);
  float tmp[8] = {0};
  for (size_t i = 0; i < n; i++) tmp[i] = y[i];
  return _mm256_loadu_ps(tmp);
}

// ----------------------------------------------------------------------------
// Q8 activations (bit-exact with fg_spec_quantize_act_q8)

FG_INLINE float fg_q8_block(const float *x, int8_t *qs, int32_t *isum) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 v[4];
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < 4; i++) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    m = _mm256_max_ps(m, _mm256_and_ps(v[i], absmask));
  }
  const float amax = fg_hmax8(m);
  const float d = amax >= FG_ACT_Q8_MIN_AMAX ? amax / 127.0f : 0.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const __m256 vid = _mm256_set1_ps(id), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  __m256i q[4];
  for (int i = 0; i < 4; i++) /* max(v, -127) maps NaN to -127; cvtps rounds to nearest even */
    q[i] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[i], vid), lo), hi));
  *isum = fg_hsum8i(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  _mm256_storeu_si256((__m256i *)(void *)qs, _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  return d;
}

static size_t fg_q8_rows_size(size_t cols, size_t nb) {
  uint64_t n;
  if (!fg_mul_u64(fg_act_q8_row_bytes(cols), nb, &n) || n > SIZE_MAX - 64) return SIZE_MAX;
  return (size_t)n;
}

static void fg_q8_rows_prep(const float *x, size_t ldx, size_t cols, size_t nb, size_t b0, size_t b1, void *act) {
  (void)nb;
  const size_t stride = fg_act_q8_row_bytes(cols);
  for (size_t b = b0; b < b1; b++) {
    fg_act_q8_row r = fg_act_q8_row_at((uint8_t *)act + b * stride, cols);
    for (size_t k = 0; k < cols / 32; k++) r.d[k] = fg_q8_block(x + b * ldx + k * 32, r.qs + k * 32, &r.isum[k]);
  }
}

// ----------------------------------------------------------------------------
// Q8_0 / Q4_0 vec: 8 rows per tile; block dots reduced across lanes to lane r = row r

/* v[i]: 8 partial sums of row i -> lane i = total of row i */
FG_INLINE __m256i fg_reduce_rows8(const __m256i v[8]) {
  const __m256i t0 = _mm256_hadd_epi32(v[0], v[1]), t1 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i t2 = _mm256_hadd_epi32(v[4], v[5]), t3 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i u0 = _mm256_hadd_epi32(t0, t1), u1 = _mm256_hadd_epi32(t2, t3);
  /* u0: [rows 0-3 low halves | rows 0-3 high halves], u1 the same for rows 4-7 */
  return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

FG_INLINE __m256i fg_dot_q8_0(const uint8_t *blk, __m256i xq) {
  const __m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2));
  const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(xq, w));
  return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}
FG_INLINE __m256i fg_dot_q4_0(const uint8_t *blk, __m256i xq) {
  const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
  const __m256i w = _mm256_and_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1),
                                     _mm256_set1_epi8(0x0f));
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, xq), _mm256_set1_epi16(1)); /* sum q * x, q in 0..15 */
}

FG_INLINE void fg_q_vec(const fg_mm_args *a, size_t i0, size_t i1, const int is_q4) {
  const size_t nblk = a->cols / 32, bsz = is_q4 ? 18 : 34;
  const size_t act_stride = fg_act_q8_row_bytes(a->cols);
  float dws[FG_Q_KSEG * 8] __attribute__((aligned(32))); /* (k, row) */
  fg_pf_first(a, i0, i1, 8);
  for (size_t t0 = i0; t0 < i1; t0 += 8) {
    const size_t nr = FG_MIN((size_t)8, i1 - t0);
    const uint8_t *rp[8];
    fg_tile_rows(a, t0, nr, 8, rp);
    fg_pf pf;
    fg_pf_init(&pf, a, t0 + 8, i1, 8, nblk);
    for (size_t k0 = 0; k0 < nblk; k0 += FG_Q_KSEG) {
      const size_t k1 = FG_MIN(k0 + FG_Q_KSEG, nblk);
      for (size_t r = 0; r < 8; r++)
        for (size_t k = k0; k < k1; k++) dws[(k - k0) * 8 + r] = fg_h2f(rp[r] + k * bsz);
      for (size_t k = k0; k < k1; k++) fg_pf_step(&pf);
      for (size_t b = 0; b < a->nb; b++) {
        const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * act_stride, a->cols);
        float *yb = a->y + b * a->ldy + t0;
        __m256 acc = k0 == 0 ? _mm256_setzero_ps() : fg_load_rows(yb, nr);
        for (size_t k = k0; k < k1; k++) {
          const __m256i xq = _mm256_loadu_si256((const __m256i *)(const void *)(xr.qs + k * 32));
          __m256i v[8];
          for (int r = 0; r < 8; r++) v[r] = is_q4 ? fg_dot_q4_0(rp[r] + k * 18, xq) : fg_dot_q8_0(rp[r] + k * 34, xq);
          __m256i idot = fg_reduce_rows8(v);
          if (is_q4) idot = _mm256_add_epi32(idot, _mm256_set1_epi32(-8 * xr.isum[k]));
          const __m256 scale = _mm256_mul_ps(_mm256_load_ps(&dws[(k - k0) * 8]), _mm256_set1_ps(xr.d[k]));
          acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(idot), scale, acc);
        }
        fg_store_rows(yb, nr, acc);
      }
    }
  }
}
static void fg_q8_0_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_q_vec(a, i0, i1, 0); }
static void fg_q4_0_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_q_vec(a, i0, i1, 1); }

// ----------------------------------------------------------------------------
// the other q8-spec types (Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS): 8 rows per tile, decoded
// once per column segment into their int8 values and scales (q8w_stage.h), then per block the
// Q8_0 core: |v| * sign(x, v) products (exact: |v| <= 127), lanes reduced to lane r = row r (per
// half-block for the types with half-block scales: isum = sa * ia + sb * ib in int32), then
// s = fmaf(dw * dx, isum, s) and the minimum's fmaf. For the few activations below the gemm's
// FG_QW_MIN_NB_*.

#define FG_NQ_KSEG 64 /* blocks per staged segment (8 rows: 16 KiB of values) */

/* as fg_reduce_rows8 before the halves are added: lane i of *ha / *hb = row i's sum over elements
 * 0..15 / 16..31 */
FG_INLINE void fg_reduce_rows8_halves(const __m256i v[8], __m256i *ha, __m256i *hb) {
  const __m256i t0 = _mm256_hadd_epi32(v[0], v[1]), t1 = _mm256_hadd_epi32(v[2], v[3]);
  const __m256i t2 = _mm256_hadd_epi32(v[4], v[5]), t3 = _mm256_hadd_epi32(v[6], v[7]);
  const __m256i u0 = _mm256_hadd_epi32(t0, t1), u1 = _mm256_hadd_epi32(t2, t3);
  *ha = _mm256_permute2x128_si256(u0, u1, 0x20);
  *hb = _mm256_permute2x128_si256(u0, u1, 0x31);
}

FG_INLINE __m256i fg_dot_s8(const uint8_t *v, __m256i xq) {
  const __m256i w = _mm256_load_si256((const __m256i *)(const void *)v);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(xq, w)), _mm256_set1_epi16(1));
}

FG_INLINE void fg_nq_vec(const fg_mm_args *a, size_t i0, size_t i1, const uint32_t type) {
  const int fl = fg_q8w_flags(type);
  const size_t nblk = a->cols / 32;
  const size_t act_stride = fg_act_q8_row_bytes(a->cols);
  uint8_t wq[FG_NQ_KSEG * 8 * 32] __attribute__((aligned(32))); /* (k, row, 32) */
  float dw[FG_NQ_KSEG * 8] __attribute__((aligned(32)));        /* (k, row) */
  float mw[FG_NQ_KSEG * 8] __attribute__((aligned(32)));
  int32_t sa[FG_NQ_KSEG * 8] __attribute__((aligned(32))), sb[FG_NQ_KSEG * 8] __attribute__((aligned(32)));
  int32_t ma[FG_NQ_KSEG * 8] __attribute__((aligned(32))), mb[FG_NQ_KSEG * 8] __attribute__((aligned(32)));
  const __m256i nobias = _mm256_setzero_si256();
  fg_pf_first(a, i0, i1, 8);
  for (size_t t0 = i0; t0 < i1; t0 += 8) {
    const size_t nr = FG_MIN((size_t)8, i1 - t0);
    const uint8_t *rp[8];
    fg_tile_rows(a, t0, nr, 8, rp);
    fg_pf pf;
    fg_pf_init(&pf, a, t0 + 8, i1, 8, nblk);
    for (size_t k0 = 0; k0 < nblk; k0 += FG_NQ_KSEG) {
      const size_t k1 = FG_MIN(k0 + FG_NQ_KSEG, nblk);
      for (size_t r = 0; r < 8; r++) {
        const fg_qstage st = {wq + r * 32, 8 * 32, dw + r, mw + r, sa + r, sb + r, ma + r, mb + r, 8};
        fg_qs_stage(type, rp[r], k0, k1, &st, nobias);
      }
      for (size_t k = k0; k < k1; k++) fg_pf_step(&pf);
      for (size_t b = 0; b < a->nb; b++) {
        const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * act_stride, a->cols);
        float *yb = a->y + b * a->ldy + t0;
        __m256 acc = k0 == 0 ? _mm256_setzero_ps() : fg_load_rows(yb, nr);
        for (size_t k = k0; k < k1; k++) {
          const size_t kk = k - k0;
          const __m256i xq = _mm256_loadu_si256((const __m256i *)(const void *)(xr.qs + k * 32));
          __m256i v[8];
          for (int r = 0; r < 8; r++) v[r] = fg_dot_s8(wq + (kk * 8 + (size_t)r) * 32, xq);
          __m256i idot;
          if (fl & FG_Q8W_SUB) {
            __m256i ha, hb;
            fg_reduce_rows8_halves(v, &ha, &hb);
            idot = _mm256_add_epi32(_mm256_mullo_epi32(ha, _mm256_load_si256((const __m256i *)(const void *)(sa + kk * 8))),
                                    _mm256_mullo_epi32(hb, _mm256_load_si256((const __m256i *)(const void *)(sb + kk * 8))));
          } else {
            idot = fg_reduce_rows8(v);
          }
          const __m256 dx = _mm256_set1_ps(xr.d[k]);
          acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(idot), _mm256_mul_ps(_mm256_load_ps(dw + kk * 8), dx), acc);
          if (fl & FG_Q8W_MIN1)
            acc = _mm256_fmadd_ps(_mm256_set1_ps((float)xr.isum[k]), _mm256_mul_ps(_mm256_load_ps(mw + kk * 8), dx), acc);
          if (fl & FG_Q8W_MIN2) {
            const int32_t xa = fg_qs_half_sum(xr.qs + k * 32), xb = xr.isum[k] - xa;
            const __m256i ms = _mm256_add_epi32(
                _mm256_mullo_epi32(_mm256_load_si256((const __m256i *)(const void *)(ma + kk * 8)), _mm256_set1_epi32(xa)),
                _mm256_mullo_epi32(_mm256_load_si256((const __m256i *)(const void *)(mb + kk * 8)), _mm256_set1_epi32(xb)));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ms), _mm256_mul_ps(_mm256_load_ps(mw + kk * 8), dx), acc);
          }
        }
        fg_store_rows(yb, nr, acc);
      }
    }
  }
}

/* Q5_0 vec without staging: as Q4_0 (values q = v + 16 in 0..31 unsigned against x, maddubs exact:
 * 2 * 31 * 127 < 2^15), less 16 * sum x. The same integer sums and float operations as the staged
 * kernels. */
FG_INLINE __m256i fg_dot_q5_0(const uint8_t *blk, __m256i xq) {
  const __m256i q = _mm256_or_si256(fg_qs_nibbles(blk + 6), fg_qs_bit4(fg_qs_u32(blk + 2)));
  return _mm256_madd_epi16(_mm256_maddubs_epi16(q, xq), _mm256_set1_epi16(1));
}

static void fg_q5_0_vec_direct(const fg_mm_args *a, size_t i0, size_t i1) {
  const size_t nblk = a->cols / 32;
  const size_t act_stride = fg_act_q8_row_bytes(a->cols);
  float dws[FG_Q_KSEG * 8] __attribute__((aligned(32))); /* (k, row) */
  fg_pf_first(a, i0, i1, 8);
  for (size_t t0 = i0; t0 < i1; t0 += 8) {
    const size_t nr = FG_MIN((size_t)8, i1 - t0);
    const uint8_t *rp[8];
    fg_tile_rows(a, t0, nr, 8, rp);
    fg_pf pf;
    fg_pf_init(&pf, a, t0 + 8, i1, 8, nblk);
    for (size_t k0 = 0; k0 < nblk; k0 += FG_Q_KSEG) {
      const size_t k1 = FG_MIN(k0 + FG_Q_KSEG, nblk);
      for (size_t r = 0; r < 8; r++)
        for (size_t k = k0; k < k1; k++) dws[(k - k0) * 8 + r] = fg_h2f(rp[r] + k * 22);
      for (size_t k = k0; k < k1; k++) fg_pf_step(&pf);
      for (size_t b = 0; b < a->nb; b++) {
        const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * act_stride, a->cols);
        float *yb = a->y + b * a->ldy + t0;
        __m256 acc = k0 == 0 ? _mm256_setzero_ps() : fg_load_rows(yb, nr);
        for (size_t k = k0; k < k1; k++) {
          const __m256i xq = _mm256_loadu_si256((const __m256i *)(const void *)(xr.qs + k * 32));
          __m256i v[8];
          for (int r = 0; r < 8; r++) v[r] = fg_dot_q5_0(rp[r] + k * 22, xq);
          const __m256i idot = _mm256_add_epi32(fg_reduce_rows8(v), _mm256_set1_epi32(-16 * xr.isum[k]));
          const __m256 scale = _mm256_mul_ps(_mm256_load_ps(&dws[(k - k0) * 8]), _mm256_set1_ps(xr.d[k]));
          acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(idot), scale, acc);
        }
        fg_store_rows(yb, nr, acc);
      }
    }
  }
}

/* the 4 bytes at p in every lane (one vpbroadcastd from memory) */
FG_INLINE __m256i fg_bcast32(const void *p) { return _mm256_broadcastd_epi32(_mm_loadu_si32(p)); }

/* v[i] = 8 dwords of row i -> v[g] = dword g of rows 0..7 */
FG_INLINE void fg_tr8x8_epi32(__m256i v[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_epi32(v[2 * i], v[2 * i + 1]);     /* r2i, r2i+1: dwords 0 1 | 4 5 */
    t[2 * i + 1] = _mm256_unpackhi_epi32(v[2 * i], v[2 * i + 1]); /* dwords 2 3 | 6 7 */
  }
  for (int i = 0; i < 2; i++)
    for (int h = 0; h < 2; h++) {
      u[4 * i + 2 * h] = _mm256_unpacklo_epi64(t[4 * i + h], t[4 * i + 2 + h]);     /* rows 4i..4i+3, dword 2h | 2h+4 */
      u[4 * i + 2 * h + 1] = _mm256_unpackhi_epi64(t[4 * i + h], t[4 * i + 2 + h]); /* dword 2h+1 | 2h+5 */
    }
  for (int g = 0; g < 4; g++) {
    v[g] = _mm256_permute2x128_si256(u[g], u[4 + g], 0x20);
    v[g + 4] = _mm256_permute2x128_si256(u[g], u[4 + g], 0x31);
  }
}

// ----------------------------------------------------------------------------
// Packed Q8_0, Q5_0, Q5_1, IQ4_NL, Q4_K, Q6_K and IQ4_XS (load-time repacking, kernels.h): the rows in
// strips of 8, copied at model load into a layout whose lanes are rows, so that a block's 8 row dots need
// no reduction across lanes (the row-based vec kernels above spend most of their time in that reduction:
// on Zen 3 they run at about 15 GB/s from cache, the packed ones at 50). The copy has the file's size
// (Q4_K +2.8 %, IQ4_XS +1.5 %: their scales as bytes). The 32-element types, per strip: the nblk blocks'
// scales, 8 f16 each (row r at r; Q5_1: then its 8 minimums), then per block the weights:
//   Q8_0 (256 bytes): for group g = 0..7, the weights 4g..4g+3 of rows 0..7 (32 bytes): one
//        vpmaddubsw of that register against the activation's broadcast bytes 4g..4g+3 gives each row's
//        two pair sums in its 32-bit lane;
//   Q5_0 (160 bytes): 32 bytes of fifth bits (byte 4r + i, bit g: element 4g + i of row r), then for
//        j = 0..3 the bytes qs[4j..4j+3] of rows 0..7 (low nibbles: group j, high nibbles: group j + 4);
//        the unsigned values u = q + 16 (0..31) are summed by 4 groups in int16 (4 * 2 * 31 * 127 fits),
//        and 16 * sum x is taken off, as in the row-based kernel; Q5_1 the same with u = q and no offset;
//   IQ4_NL (128 bytes): the nibble registers of Q5_0, looked up (vpshufb) into the signed values.
// Q4_K, Q6_K and IQ4_XS, per 256-element superblock: the rows' scales (FG_XP_K4_HEAD, FG_XP_K6_HEAD,
// FG_XP_X4_HEAD), then per 32-element sub-block 4 nibble registers as Q5_0's (Q6_K: and 2 registers of
// the high bit pairs). Then per block s = fmaf(dw * dx, (float)isum, s) in block order (Q4_K, Q5_1: and
// the minimum's fmaf): bit for bit the q8 spec. The gemm stages its tiles from the copy
// (fg_qw_stage_packed); ranges that start or end inside a strip read the file's rows; row lists read
// their rows back from the copy (unpack).

#define FG_XP_ROWS 8
#define FG_XP_LIST_BYTES 16384 /* row lists from a packed copy: 8 rows of up to 2 KiB (Q8_0: 1,920 columns) */
#define FG_XP_K4_HEAD (16 + 16 + 64 + 64) /* Q4_K superblock: d[8], dmin[8] (f16), sc[8][8], m[8][8] */
#define FG_XP_K6_HEAD (16 + 128)          /* Q6_K superblock: d[8] (f16), (sa, sb)[8][8] (int8) */
#define FG_XP_X4_HEAD (16 + 64)           /* IQ4_XS superblock: d[8] (f16), (ls - 32)[8][8] (int8) */

/* bytes of a strip's 32-element block (Q8_0, Q5_0; scales included) or 256-element superblock (Q4_K) */
static size_t fg_xp_block(uint32_t type) {
  switch (type) {
    case FG_TYPE_Q8_0: return 16 + 256;
    case FG_TYPE_Q5_0: return 16 + 160;
    case FG_TYPE_Q4_K: return FG_XP_K4_HEAD + 8 * 128;
    case FG_TYPE_Q6_K: return FG_XP_K6_HEAD + 8 * 192;
    case FG_TYPE_IQ4_NL: return 16 + 128;
    case FG_TYPE_Q5_1: return 32 + 160;
    case FG_TYPE_IQ4_XS: return FG_XP_X4_HEAD + 8 * 128;
    default: return 0;
  }
}

/* elements per block of the packed layout */
static size_t fg_xp_unit(uint32_t type) {
  return type == FG_TYPE_Q4_K || type == FG_TYPE_Q6_K || type == FG_TYPE_IQ4_XS ? 256 : 32;
}

/* the 32-element types: bytes of a block's scales in the strip's scale area (Q5_1: d[8], then m[8]), the
 * file's block and where its fifth bits and nibbles sit (no fifth bits: qh = 0) */
typedef struct fg_xp_geo {
  size_t head, bsz, qh, qs;
} fg_xp_geo;
FG_INLINE fg_xp_geo fg_xp_geo_of(uint32_t type) {
  switch (type) {
    case FG_TYPE_Q8_0: return (fg_xp_geo){16, 34, 0, 2};
    case FG_TYPE_Q5_0: return (fg_xp_geo){16, 22, 2, 6};
    case FG_TYPE_Q5_1: return (fg_xp_geo){32, 24, 4, 8};
    default: return (fg_xp_geo){16, 18, 0, 2}; /* IQ4_NL */
  }
}

static size_t fg_xp_size(uint32_t type, size_t rows, size_t cols) {
  const size_t bb = fg_xp_block(type), unit = fg_xp_unit(type);
  if (!bb || rows == 0 || rows % FG_XP_ROWS != 0 || cols == 0 || cols % unit != 0) return 0;
  const size_t strips = rows / FG_XP_ROWS, nblk = cols / unit;
  if (nblk > SIZE_MAX / bb / strips) return 0;
  return strips * nblk * bb;
}

/* a Q4_K sub-block's nibbles as the packed registers: for i = 0..3, row r's 4 bytes of register i hold nibble
 * j % 2 of elements 4i.. (low) and 16 + 4i.. (high) */
static void fg_xp_k4_sub(const uint8_t *qs, int j, uint8_t *o, size_t r) {
  const unsigned p = (unsigned)j / 2, sh = 4 * ((unsigned)j % 2);
  for (int i = 0; i < 4; i++) {
    uint32_t a, b;
    memcpy(&a, qs + 32 * p + 4 * i, 4);
    memcpy(&b, qs + 32 * p + 16 + 4 * i, 4);
    const uint32_t v = ((a >> sh) & 0x0f0f0f0fu) | ((b >> sh) & 0x0f0f0f0fu) << 4;
    memcpy(o + 32 * i + 4 * r, &v, 4);
  }
}

/* a Q6_K sub-block j as the packed registers (row r's 4 bytes of each): 4 of nibbles as Q4_K's, then 2 of high
 * bits (bits 2i of byte t: element 4i + t, and 16 + 4i + t) */
static void fg_xp_k6_sub(const fg_block_q6_k *b, int j, uint8_t *v, size_t r) {
  const unsigned h = (unsigned)j / 4, s = (unsigned)j % 4, sh = s < 2 ? 0 : 4;
  const uint8_t *ql = b->ql + 64 * h + 32 * (s & 1), *qh = b->qh + 32 * h;
  uint32_t ha = 0, hb = 0;
  for (unsigned i = 0; i < 4; i++) {
    uint32_t la, lb, xa, xb;
    memcpy(&la, ql + 4 * i, 4);
    memcpy(&lb, ql + 16 + 4 * i, 4);
    memcpy(&xa, qh + 4 * i, 4);
    memcpy(&xb, qh + 16 + 4 * i, 4);
    const uint32_t n = ((la >> sh) & 0x0f0f0f0fu) | ((lb >> sh) & 0x0f0f0f0fu) << 4;
    memcpy(v + 32 * i + 4 * r, &n, 4);
    ha |= ((xa >> (2 * s)) & 0x03030303u) << (2 * i);
    hb |= ((xb >> (2 * s)) & 0x03030303u) << (2 * i);
  }
  memcpy(v + 128 + 4 * r, &ha, 4);
  memcpy(v + 160 + 4 * r, &hb, 4);
}

/* row r of a Q4_K superblock b into the strip's packed superblock o */
static void fg_xp_k4_super(const fg_block_q4_k *b, uint8_t *o, size_t r) {
  memcpy(o + 2 * r, &b->d, 2);
  memcpy(o + 16 + 2 * r, &b->dmin, 2);
  for (int j = 0; j < 8; j++) {
    fg_k4_scale_min(j, b->scales, o + 32 + 8 * j + r, o + 96 + 8 * j + r);
    fg_xp_k4_sub(b->qs, j, o + FG_XP_K4_HEAD + 128 * (size_t)j, r);
  }
}

/* row r of a Q6_K superblock b into the strip's packed superblock o: per sub-block j the int8 (sa, sb), then
 * 4 nibble registers as Q4_K's and 2 registers of high bits (byte 4r + t of the first has the bits of
 * element 4i + t at 2i, i = 0..3, the second those of element 16 + 4i + t) */
static void fg_xp_k6_super(const fg_block_q6_k *b, uint8_t *o, size_t r) {
  memcpy(o + 2 * r, &b->d, 2);
  for (int j = 0; j < 8; j++) {
    const int h = j / 4, sub = j % 4;
    o[16 + 16 * j + 2 * r] = (uint8_t)b->scales[8 * h + 2 * sub];
    o[16 + 16 * j + 2 * r + 1] = (uint8_t)b->scales[8 * h + 2 * sub + 1];
    fg_xp_k6_sub(b, j, o + FG_XP_K6_HEAD + 192 * (size_t)j, r);
  }
}

/* the 6-bit scale (0..63) of sub-block ib of an IQ4_XS block */
FG_INLINE int fg_x4_ls(const fg_block_iq4_xs *b, int ib) {
  return ((b->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((b->scales_h >> (2 * ib)) & 3) << 4);
}

/* row r of an IQ4_XS superblock b into the strip's packed superblock o: per sub-block j the int8 ls - 32, then 4
 * nibble registers as IQ4_NL's (row r's bytes 4i..4i+3 of the sub-block in register i) */
static void fg_xp_x4_super(const fg_block_iq4_xs *b, uint8_t *o, size_t r) {
  memcpy(o + 2 * r, &b->d, 2);
  for (int j = 0; j < 8; j++) {
    o[16 + 8 * j + r] = (uint8_t)(int8_t)(fg_x4_ls(b, j) - 32);
    for (int i = 0; i < 4; i++) memcpy(o + FG_XP_X4_HEAD + 128 * j + 32 * i + 4 * r, b->qs + 16 * j + 4 * i, 4);
  }
}

static void fg_xp_pack(uint32_t type, const uint8_t *w, size_t row_bytes, size_t cols, size_t r0, size_t r1,
                       uint8_t *dst) {
  if (fg_xp_unit(type) == 256) {
    const size_t nsb = cols / 256, bb = fg_xp_block(type);
    const size_t sbb = type == FG_TYPE_Q4_K ? sizeof(fg_block_q4_k)
                       : type == FG_TYPE_Q6_K ? sizeof(fg_block_q6_k)
                                              : sizeof(fg_block_iq4_xs);
    for (size_t s = r0 / FG_XP_ROWS; s < r1 / FG_XP_ROWS; s++)
      for (size_t r = 0; r < FG_XP_ROWS; r++)
        for (size_t K = 0; K < nsb; K++) {
          const void *blk = w + (s * FG_XP_ROWS + r) * row_bytes + K * sbb;
          uint8_t *o = dst + (s * nsb + K) * bb;
          if (type == FG_TYPE_Q4_K) fg_xp_k4_super(blk, o, r);
          else if (type == FG_TYPE_Q6_K) fg_xp_k6_super(blk, o, r);
          else fg_xp_x4_super(blk, o, r);
        }
    return;
  }
  const fg_xp_geo geo = fg_xp_geo_of(type);
  const size_t nblk = cols / 32, bb = fg_xp_block(type), pay = bb - geo.head, nq = geo.qh ? 32 : 0;
  for (size_t s = r0 / FG_XP_ROWS; s < r1 / FG_XP_ROWS; s++) {
    uint8_t *sc = dst + s * nblk * bb, *q = sc + nblk * geo.head;
    for (size_t k = 0; type == FG_TYPE_Q8_0 && k < nblk; k++) { /* 8 rows' blocks transposed by dwords */
      __m256i v[8];
      for (size_t r = 0; r < FG_XP_ROWS; r++)
        v[r] = _mm256_loadu_si256((const __m256i *)(const void *)(w + (s * FG_XP_ROWS + r) * row_bytes + k * 34 + 2));
      fg_tr8x8_epi32(v);
      for (size_t g = 0; g < 8; g++) _mm256_storeu_si256((__m256i *)(void *)(q + k * pay + g * 32), v[g]);
    }
    for (size_t r = 0; r < FG_XP_ROWS; r++) {
      const uint8_t *row = w + (s * FG_XP_ROWS + r) * row_bytes;
      for (size_t k = 0; k < nblk; k++) {
        const uint8_t *blk = row + k * geo.bsz;
        uint8_t *o = q + k * pay;
        memcpy(sc + k * geo.head + r * 2, blk, 2);
        if (type == FG_TYPE_Q5_1) memcpy(sc + k * geo.head + 16 + r * 2, blk + 2, 2); /* the minimum */
        if (type == FG_TYPE_Q8_0) continue; /* the weights below, 8 rows at once */
        if (geo.qh) {
          uint32_t qh;
          memcpy(&qh, blk + geo.qh, 4);
          for (unsigned i = 0; i < 4; i++) o[r * 4 + i] = fg_qh_bits4(qh, i);
        }
        for (size_t j = 0; j < 4; j++) memcpy(o + nq + j * 32 + r * 4, blk + geo.qs + j * 4, 4);
      }
    }
  }
}

static void fg_xp_unpack(uint32_t type, const uint8_t *packed, size_t cols, size_t row, size_t k0, size_t k1,
                         uint8_t *dst) {
  const size_t bb = fg_xp_block(type), r = row % FG_XP_ROWS;
  if (type == FG_TYPE_Q6_K) {
    const size_t nsb = cols / 256;
    for (size_t K = k0; K < k1; K++) {
      const uint8_t *o = packed + (row / FG_XP_ROWS * nsb + K) * bb;
      fg_block_q6_k b;
      memset(&b, 0, sizeof b);
      memcpy(&b.d, o + 2 * r, 2);
      for (int j = 0; j < 8; j++) {
        const int h = j / 4, sub = j % 4;
        b.scales[8 * h + 2 * sub] = (int8_t)o[16 + 16 * j + 2 * r];
        b.scales[8 * h + 2 * sub + 1] = (int8_t)o[16 + 16 * j + 2 * r + 1];
        const uint8_t *v = o + FG_XP_K6_HEAD + 192 * (size_t)j;
        for (int l = 0; l < 32; l++) {
          const int i = (l % 16) / 4, t = l % 4, second = l >= 16;
          const size_t at = 4 * r + (size_t)t;
          const uint8_t lo = (uint8_t)(second ? v[32 * i + at] >> 4 : v[32 * i + at] & 0xf);
          const uint8_t hi = (uint8_t)((v[(second ? 160 : 128) + at] >> (2 * i)) & 3);
          b.ql[64 * h + 32 * (sub & 1) + l] |= (uint8_t)(sub < 2 ? lo : lo << 4);
          b.qh[32 * h + l] |= (uint8_t)(hi << (2 * sub));
        }
      }
      memcpy(dst + (K - k0) * sizeof b, &b, sizeof b);
    }
    return;
  }
  if (type == FG_TYPE_IQ4_XS) {
    const size_t nsb = cols / 256;
    for (size_t K = k0; K < k1; K++) {
      const uint8_t *o = packed + (row / FG_XP_ROWS * nsb + K) * bb;
      fg_block_iq4_xs b;
      memset(&b, 0, sizeof b);
      memcpy(&b.d, o + 2 * r, 2);
      for (int j = 0; j < 8; j++) {
        const int ls = (int8_t)o[16 + 8 * j + r] + 32;
        b.scales_l[j / 2] |= (uint8_t)((ls & 0xf) << (4 * (j % 2)));
        b.scales_h |= (uint16_t)(((ls >> 4) & 3) << (2 * j));
        for (int i = 0; i < 4; i++) memcpy(b.qs + 16 * j + 4 * i, o + FG_XP_X4_HEAD + 128 * j + 32 * i + 4 * r, 4);
      }
      memcpy(dst + (K - k0) * sizeof b, &b, sizeof b);
    }
    return;
  }
  if (type == FG_TYPE_Q4_K) {
    const size_t nsb = cols / 256;
    for (size_t K = k0; K < k1; K++) {
      const uint8_t *o = packed + (row / FG_XP_ROWS * nsb + K) * bb;
      fg_block_q4_k b;
      memcpy(&b.d, o + 2 * r, 2);
      memcpy(&b.dmin, o + 16 + 2 * r, 2);
      memset(b.scales, 0, sizeof b.scales);
      for (int j = 0; j < 8; j++) { /* fg_k4_scale_min backwards */
        const uint8_t sc = o[32 + 8 * j + r], m = o[96 + 8 * j + r];
        if (j < 4) {
          b.scales[j] |= sc & 63;
          b.scales[j + 4] |= m & 63;
        } else {
          b.scales[j + 4] = (uint8_t)((sc & 0xf) | (m & 0xf) << 4);
          b.scales[j - 4] |= (uint8_t)((sc >> 4) << 6);
          b.scales[j] |= (uint8_t)((m >> 4) << 6);
        }
        const int p = j / 2, high = j % 2;
        for (int i = 0; i < 4; i++)
          for (int t = 0; t < 4; t++) {
            const uint8_t v = o[FG_XP_K4_HEAD + 128 * j + 32 * i + 4 * r + t];
            uint8_t *a = &b.qs[32 * p + 4 * i + t], *c = &b.qs[32 * p + 16 + 4 * i + t];
            *a = high ? (uint8_t)((*a & 0xf) | (v & 0xf) << 4) : (uint8_t)(v & 0xf);
            *c = high ? (uint8_t)((*c & 0xf) | (v >> 4) << 4) : (uint8_t)(v >> 4);
          }
      }
      memcpy(dst + (K - k0) * sizeof b, &b, sizeof b);
    }
    return;
  }
  const fg_xp_geo geo = fg_xp_geo_of(type);
  const size_t nblk = cols / 32, pay = bb - geo.head, nq = geo.qh ? 32 : 0;
  const uint8_t *sc = packed + row / FG_XP_ROWS * nblk * bb, *q = sc + nblk * geo.head;
  for (size_t k = k0; k < k1; k++) {
    uint8_t *blk = dst + (k - k0) * geo.bsz;
    const uint8_t *o = q + k * pay;
    memcpy(blk, sc + k * geo.head + r * 2, 2);
    if (type == FG_TYPE_Q5_1) memcpy(blk + 2, sc + k * geo.head + 16 + r * 2, 2);
    if (type == FG_TYPE_Q8_0) {
      for (size_t g = 0; g < 8; g++) memcpy(blk + 2 + g * 4, o + g * 32 + r * 4, 4);
      continue;
    }
    if (geo.qh) {
      uint32_t qh = 0;
      for (size_t i = 0; i < 4; i++)
        for (size_t g = 0; g < 8; g++) qh |= (uint32_t)((o[r * 4 + i] >> g) & 1u) << (4 * g + i);
      memcpy(blk + geo.qh, &qh, 4);
    }
    for (size_t j = 0; j < 4; j++) memcpy(blk + geo.qs + j * 4, o + nq + j * 32 + r * 4, 4);
  }
}

/* group g's unsigned Q5_0 values (0..31) of a packed block: n = its nibble register, h the fifth bits */
FG_INLINE __m256i fg_xp_q5(__m256i n, __m256i h, const int g) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), m10 = _mm256_set1_epi8(0x10);
  const __m256i lo = g < 4 ? _mm256_and_si256(n, m4) : _mm256_and_si256(_mm256_srli_epi16(n, 4), m4);
  const __m256i hb = g < 4 ? _mm256_slli_epi16(h, 4 - g) : g == 4 ? h : _mm256_srli_epi16(h, g - 4);
  return _mm256_or_si256(lo, _mm256_and_si256(hb, m10));
}

/* group g's signed IQ4 values (IQ4_NL, IQ4_XS) of a nibble register n (low nibbles: groups 0..3, high: 4..7) */
FG_INLINE __m256i fg_xp_iq4(__m256i n, const int g) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i nib = g < 4 ? _mm256_and_si256(n, m4) : _mm256_and_si256(_mm256_srli_epi16(n, 4), m4);
  return _mm256_shuffle_epi8(fg_qs_iq4_lut(), nib);
}

/* the sign trick: each row's int32 sum of w * x over a group of 4 (|w|, |x| <= 127: the pairs fit int16) */
FG_INLINE __m256i fg_xp_s8(__m256i w, __m256i x) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w)), _mm256_set1_epi16(1));
}

/* 4 nibble registers of IQ4 values (an IQ4_NL block, an IQ4_XS sub-block) against activation block qx */
FG_INLINE __m256i fg_xp_iq4_dot(const uint8_t *p, const int8_t *qx) {
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    const __m256i n = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * j));
    s0 = _mm256_add_epi32(s0, fg_xp_s8(fg_xp_iq4(n, j), fg_bcast32(qx + 4 * j)));
    s1 = _mm256_add_epi32(s1, fg_xp_s8(fg_xp_iq4(n, j + 4), fg_bcast32(qx + 16 + 4 * j)));
  }
  return _mm256_add_epi32(s0, s1);
}

/* one packed block (8 rows) of a 32-element type against activation block qx: the rows' exact integer dots (Q5_1:
 * sum u x, its minimum comes after) */
FG_INLINE __m256i fg_xp_dot(const uint8_t *p, const int8_t *qx, int32_t xisum, const uint32_t type) {
  const __m256i ones = _mm256_set1_epi16(1);
  if (type == FG_TYPE_Q8_0) {
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
    for (int g = 0; g < 8; g += 2) {
      s0 = _mm256_add_epi32(s0, fg_xp_s8(_mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * g)), fg_bcast32(qx + 4 * g)));
      s1 = _mm256_add_epi32(s1, fg_xp_s8(_mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * g + 32)), fg_bcast32(qx + 4 * g + 4)));
    }
    return _mm256_add_epi32(s0, s1);
  }
  if (type == FG_TYPE_IQ4_NL) return fg_xp_iq4_dot(p, qx);
  const __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
  __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int j = 0; j < 4; j++) {
    const __m256i n = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 + 32 * j));
    lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(fg_xp_q5(n, h, j), fg_bcast32(qx + 4 * j)));
    hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(fg_xp_q5(n, h, j + 4), fg_bcast32(qx + 16 + 4 * j)));
  }
  const __m256i s = _mm256_add_epi32(_mm256_madd_epi16(lo, ones), _mm256_madd_epi16(hi, ones));
  return type == FG_TYPE_Q5_0 ? _mm256_sub_epi32(s, _mm256_set1_epi32(16 * xisum)) : s;
}

/* IQ4_XS sub-block j's (ls - 32) of 8 rows as floats */
FG_INLINE __m256 fg_xp_x4_ls(const uint8_t *o, int j) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(o + 16 + 8 * j))));
}

/* Q4_K sub-block j of a packed superblock o (8 rows): the nibbles' dots, all 8 groups summed in int16 (8 * 2 * 15 *
 * 127 fits) */
FG_INLINE __m256i fg_xp_k4_dot(const uint8_t *o, int j, const int8_t *qx) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++) {
    const __m256i n = _mm256_loadu_si256((const __m256i *)(const void *)(o + FG_XP_K4_HEAD + 128 * j + 32 * i));
    acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(_mm256_and_si256(n, m4), fg_bcast32(qx + 4 * i)));
    acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(n, 4), m4), fg_bcast32(qx + 16 + 4 * i)));
  }
  return _mm256_madd_epi16(acc, _mm256_set1_epi16(1));
}

/* Q4_K sub-block j's float scales of 8 rows, with fg_q8w_decode's operations: dw = d * sc, mw = -(dmin * m) */
FG_INLINE void fg_xp_k4_scales(const uint8_t *o, int j, __m256 *dw, __m256 *mw) {
  const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)o));
  const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(o + 16)));
  const __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(o + 32 + 8 * j))));
  const __m256 m = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(o + 96 + 8 * j))));
  *dw = _mm256_mul_ps(d, sc);
  *mw = _mm256_xor_ps(_mm256_mul_ps(dmin, m), _mm256_set1_ps(-0.0f));
}

/* Q6_K sub-block j of a packed superblock o (8 rows): group g's unsigned values u = q + 32 (0..63) */
FG_INLINE __m256i fg_xp_k6_u(const uint8_t *v, int g) {
  const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
  const int i = g % 4;
  const __m256i n = _mm256_loadu_si256((const __m256i *)(const void *)(v + 32 * i));
  const __m256i hb = _mm256_loadu_si256((const __m256i *)(const void *)(v + (g < 4 ? 128 : 160)));
  const __m256i lo = g < 4 ? _mm256_and_si256(n, m4) : _mm256_and_si256(_mm256_srli_epi16(n, 4), m4);
  const __m256i h = i == 0 ? _mm256_slli_epi16(hb, 4) : i == 1 ? _mm256_slli_epi16(hb, 2) : i == 2 ? hb : _mm256_srli_epi16(hb, 2);
  return _mm256_or_si256(lo, _mm256_and_si256(h, m30));
}

/* Q6_K sub-block j of a packed superblock o against activation block qx: the rows' exact
 * isum = sa * sum_{l<16} (u - 32) x + sb * sum_{l>=16} (u - 32) x (pairs of groups summed in int16: 2 * 2 * 63 * 127
 * fits) */
FG_INLINE __m256i fg_xp_k6_dot(const uint8_t *o, int j, const int8_t *qx, int32_t xisum) {
  const uint8_t *v = o + FG_XP_K6_HEAD + 192 * j;
  const __m256i sab = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(o + 16 + 16 * j)));
  const __m256i sa = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(sab, 0xa0), 0xa0);
  const __m256i sb = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(sab, 0xf5), 0xf5);
  __m256i isum = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int g = 0; g < 8; g += 2) {
    const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(fg_xp_k6_u(v, g), fg_bcast32(qx + 4 * g)),
                                       _mm256_maddubs_epi16(fg_xp_k6_u(v, g + 1), fg_bcast32(qx + 4 * g + 4)));
    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, g < 4 ? sa : sb));
  }
  const int32_t xa = fg_qs_half_sum(qx), xb = xisum - xa;
  const __m256i xab = _mm256_set1_epi32((int)((uint32_t)(uint16_t)xa | (uint32_t)(uint16_t)xb << 16));
  return _mm256_sub_epi32(isum, _mm256_slli_epi32(_mm256_madd_epi16(sab, xab), 5));
}

/* sub-block j of a packed Q4_K, Q6_K or IQ4_XS superblock o against activation block (qx, xisum, dx): the q8
 * spec's fmaf (Q4_K: and its minimum's) added to acc */
FG_INLINE __m256 fg_xp_super_sub(const uint32_t type, const uint8_t *o, int j, const int8_t *qx, int32_t xisum,
                                 float dxf, __m256 acc) {
  const __m256 dx = _mm256_set1_ps(dxf);
  if (type == FG_TYPE_Q4_K) {
    __m256 dw, mw;
    fg_xp_k4_scales(o, j, &dw, &mw);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(fg_xp_k4_dot(o, j, qx)), _mm256_mul_ps(dw, dx), acc);
    return _mm256_fmadd_ps(_mm256_set1_ps((float)xisum), _mm256_mul_ps(mw, dx), acc);
  }
  const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)o));
  if (type == FG_TYPE_Q6_K)
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(fg_xp_k6_dot(o, j, qx, xisum)), _mm256_mul_ps(d, dx), acc);
  const __m256 dw = _mm256_mul_ps(d, fg_xp_x4_ls(o, j)); /* IQ4_XS */
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(fg_xp_iq4_dot(o + FG_XP_X4_HEAD + 128 * j, qx)), _mm256_mul_ps(dw, dx), acc);
}

/* strips s0/8 .. s1/8 of a packed copy of a superblock type (Q4_K, Q6_K, IQ4_XS) against every activation */
FG_INLINE void fg_xp_super_strips(const fg_mm_args *a, size_t s0, size_t s1, const uint32_t type) {
  const size_t nsb = a->cols / 256, bb = fg_xp_block(type);
  const size_t act_stride = fg_act_q8_row_bytes(a->cols);
  for (size_t t = s0; t < s1; t += FG_XP_ROWS) {
    const uint8_t *st = a->packed + t / FG_XP_ROWS * nsb * bb;
    for (size_t b = 0; b < a->nb; b++) {
      const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * act_stride, a->cols);
      __m256 acc = _mm256_setzero_ps();
      for (size_t K = 0; K < nsb; K++)
        for (int j = 0; j < 8; j++) {
          const size_t k = 8 * K + (size_t)j;
          acc = fg_xp_super_sub(type, st + K * bb, j, xr.qs + 32 * k, xr.isum[k], xr.d[k], acc);
        }
      _mm256_storeu_ps(a->y + b * a->ldy + t, acc);
    }
  }
}

/* strips s0/8 .. s1/8 of a packed copy of a 32-element type against every activation */
FG_INLINE void fg_xp_strips(const fg_mm_args *a, size_t s0, size_t s1, const uint32_t type) {
  const fg_xp_geo g = fg_xp_geo_of(type);
  const size_t nblk = a->cols / 32, bb = fg_xp_block(type), pay = bb - g.head;
  const size_t act_stride = fg_act_q8_row_bytes(a->cols);
  for (size_t t = s0; t < s1; t += FG_XP_ROWS) {
    const uint8_t *sc = a->packed + t / FG_XP_ROWS * nblk * bb, *q = sc + nblk * g.head;
    for (size_t b = 0; b < a->nb; b++) {
      const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * act_stride, a->cols);
      __m256 acc = _mm256_setzero_ps();
      for (size_t k = 0; k < nblk; k++) {
        const __m256i idot = fg_xp_dot(q + k * pay, xr.qs + k * 32, xr.isum[k], type);
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(sc + k * g.head)));
        const __m256 dx = _mm256_set1_ps(xr.d[k]);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(idot), _mm256_mul_ps(dw, dx), acc);
        if (type == FG_TYPE_Q5_1) { /* the minimum: m * dx * sum x */
          const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(sc + k * g.head + 16)));
          acc = _mm256_fmadd_ps(_mm256_set1_ps((float)xr.isum[k]), _mm256_mul_ps(mw, dx), acc);
        }
      }
      _mm256_storeu_ps(a->y + b * a->ldy + t, acc);
    }
  }
}

/* Outputs i0 <= i < i1 of a packed type: whole strips from the packed copy, the rows around them (and row lists,
 * and matrices without a copy) by `rows` */
FG_INLINE void fg_xp_run(const fg_mm_args *a, size_t i0, size_t i1, const uint32_t type, fg_mm_fn rows) {
  const size_t s0 = (i0 + FG_XP_ROWS - 1) / FG_XP_ROWS * FG_XP_ROWS, s1 = i1 / FG_XP_ROWS * FG_XP_ROWS;
  if (a->packed && a->rows && FG_XP_ROWS * a->row_bytes <= FG_XP_LIST_BYTES) {
    /* a row list: its rows back in the file's format (not the file's pages, handed back at load), 8 at a time */
    uint8_t buf[FG_XP_LIST_BYTES] __attribute__((aligned(32)));
    const size_t unit = fg_xp_unit(a->type);
    for (size_t i = i0; i < i1; i += FG_XP_ROWS) {
      const size_t n = FG_MIN((size_t)FG_XP_ROWS, i1 - i);
      for (size_t j = 0; j < n; j++)
        fg_xp_unpack(a->type, a->packed, a->cols, (size_t)a->rows[i + j], 0, a->cols / unit, buf + j * a->row_bytes);
      fg_mm_args t = *a;
      t.w = buf;
      t.rows = NULL;
      t.packed = NULL;
      t.y = a->y + i;
      rows(&t, 0, n);
    }
    return;
  }
  if (!a->packed || a->rows || s0 >= s1) {
    rows(a, i0, i1);
    return;
  }
  if (i0 < s0) rows(a, i0, s0);
  if (type == FG_TYPE_Q4_K || type == FG_TYPE_Q6_K || type == FG_TYPE_IQ4_XS) fg_xp_super_strips(a, s0, s1, type);
  else fg_xp_strips(a, s0, s1, type);
  if (s1 < i1) rows(a, s1, i1);
}
static void fg_q8_0_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_xp_run(a, i0, i1, FG_TYPE_Q8_0, fg_q8_0_vec); }
static void fg_q5_0_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_xp_run(a, i0, i1, FG_TYPE_Q5_0, fg_q5_0_vec_direct); }

#define FG_NQ_KERNELS(name, type) \
  static void fg_##name##_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_nq_vec(a, i0, i1, type); }
FG_NQ_KERNELS(q4_1, FG_TYPE_Q4_1)
FG_NQ_KERNELS(q5_1, FG_TYPE_Q5_1)
FG_NQ_KERNELS(q2_k, FG_TYPE_Q2_K)
FG_NQ_KERNELS(q3_k, FG_TYPE_Q3_K)
FG_NQ_KERNELS(q4_k, FG_TYPE_Q4_K)
FG_NQ_KERNELS(q5_k, FG_TYPE_Q5_K)
FG_NQ_KERNELS(q6_k, FG_TYPE_Q6_K)
FG_NQ_KERNELS(iq4_nl, FG_TYPE_IQ4_NL)
FG_NQ_KERNELS(iq4_xs, FG_TYPE_IQ4_XS)
static void fg_q4_k_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_xp_run(a, i0, i1, FG_TYPE_Q4_K, fg_q4_k_vec); }
static void fg_q6_k_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_xp_run(a, i0, i1, FG_TYPE_Q6_K, fg_q6_k_vec); }
static void fg_q5_1_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_xp_run(a, i0, i1, FG_TYPE_Q5_1, fg_q5_1_vec); }
static void fg_iq4_nl_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_xp_run(a, i0, i1, FG_TYPE_IQ4_NL, fg_iq4_nl_vec); }
static void fg_iq4_xs_vec_any(const fg_mm_args *a, size_t i0, size_t i1) { fg_xp_run(a, i0, i1, FG_TYPE_IQ4_XS, fg_iq4_xs_vec); }


// ----------------------------------------------------------------------------
// quantized gemm (Q8_0, Q4_0 and the types above): 32 rows per tile, their weights in the lanes. A
// row tile's column segment is staged once (q8w_stage.h for the types beyond Q8_0/Q4_0) and
// transposed into 4-byte groups, [block][group g][32 rows][4 bytes]: one vpmaddubsw of a row vector
// (8 rows) against the activation's broadcast group g (elements 4g..4g+3) gives each row's pair sums.
// Then every activation (the vec kernels' Q8 rows) runs against the staged segment with 4 row vectors
// of accumulators: per block 8 broadcasts and 32 vpmaddubsw, and y holds the running sums between
// segments. Weights are staged as small unsigned values u = v + c for vpmaddubsw's unsigned operand
// (c = 0 where v is unsigned already: the nibbles of Q4_1/Q4_K, ...; Q4_0 8, Q5_0 16, Q3_K 4, Q6_K 32),
// or as v for the sign trick (Q8_0, IQ4_NL, IQ4_XS: |v| * sign(x, v)).
// Per block and output the pair sums are added in int16 as long as they cannot saturate (u <= 15:
// 8 groups, u <= 31: 4, u <= 63: 2; the sign trick: 1) and widened by vpmaddwd with 1 or with the
// half-block scales (sa, sa) / (sb, sb):
//   isum = sa * sum_{j<16} u_j x_j + sb * sum_{j>=16} u_j x_j - c * (sa * xa + sb * xb) = sa * ia + sb * ib
// exactly (without half-block scales sa = sb = 1 and the correction is c * sum x); the correction is
// one vpmaddwd of the rows' (sa c, sb c) against the activation's (xa, xb). Then the spec's float
// operations in its order: s = fmaf(dw * dx, (float)isum, s) and the minimum's fmaf (Q2_K:
// ma * xa + mb * xb, one vpmaddwd of the rows' (ma, mb) against (xa, xb)).

#define FG_QW_ROWS 32   /* rows per tile: 4 row vectors */
#define FG_QW_KSEG 24   /* blocks per staged segment (24 KiB of weights) */
/* nb from which the gemm runs instead of vec: where it won on Zen 3 (one thread, 640 x 2048, weights
 * from DRAM and from cache; staging a tile costs about what vec spends on 1-3 activations, the most
 * for the K types and Q8_0) */
#define FG_QW_MIN_NB_2 2  /* Q4_0, Q4_1, Q5_0, Q5_1 */
#define FG_QW_MIN_NB_3 3  /* IQ4_NL, Q2_K, Q3_K, Q6_K */
#define FG_QW_MIN_NB_4 4  /* Q8_0, Q4_K, Q5_K, IQ4_XS */
#define FG_QW_PF_AHEAD 2 /* row tiles between the one running and the one prefetched */
_Static_assert(FG_QW_KSEG % 8 == 0, "segments start at whole 256-element blocks");

/* One row tile's staged segment: element (kk, row) at kk * FG_QW_ROWS + row. */
typedef struct fg_qw_seg {
  uint8_t wq[FG_QW_KSEG * 8 * FG_QW_ROWS * 4] __attribute__((aligned(32))); /* (k, group, row, 4): u or v */
  float dw[FG_QW_KSEG * FG_QW_ROWS] __attribute__((aligned(32)));
  float mw[FG_QW_KSEG * FG_QW_ROWS] __attribute__((aligned(32)));
  uint32_t sa2[FG_QW_KSEG * FG_QW_ROWS] __attribute__((aligned(32))); /* i16 pairs (sa, sa) */
  uint32_t sb2[FG_QW_KSEG * FG_QW_ROWS] __attribute__((aligned(32))); /* (sb, sb) */
  uint32_t corr[FG_QW_KSEG * FG_QW_ROWS] __attribute__((aligned(32))); /* (sa c, sb c) */
  uint32_t mab[FG_QW_KSEG * FG_QW_ROWS] __attribute__((aligned(32)));  /* (ma, mb) */
  int32_t sa[FG_QW_KSEG * FG_QW_ROWS], sb[FG_QW_KSEG * FG_QW_ROWS];    /* fg_qs_stage's */
  int32_t ma[FG_QW_KSEG * FG_QW_ROWS], mb[FG_QW_KSEG * FG_QW_ROWS];
  uint8_t rq[FG_QW_KSEG * 8 * 32] __attribute__((aligned(32))); /* (k, row, 32): 8 rows before the transpose */
} fg_qw_seg;

FG_INLINE uint32_t fg_i16_pair(int32_t lo, int32_t hi) { return (uint32_t)(uint16_t)lo | (uint32_t)(uint16_t)hi << 16; }

/* fg_qw_stage from the packed copy (fg_xp_*): pk[rv] = strip rv's first block, nblk 32-blocks a row */
FG_INLINE void fg_qw_stage_packed(fg_qw_seg *sg, uint32_t type, const uint8_t *const *pk, size_t nblk, size_t k0,
                                  size_t k1) {
  const size_t R = FG_QW_ROWS;
  if (type == FG_TYPE_Q6_K) {
    const size_t bb = fg_xp_block(type);
    for (size_t rv = 0; rv < R / 8; rv++)
      for (size_t k = k0; k < k1; k++) {
        const size_t kk = k - k0;
        const uint8_t *o = pk[rv] + k / 8 * bb;
        const int j = (int)(k % 8);
        _mm256_store_ps(sg->dw + kk * R + rv * 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)o)));
        for (size_t r = 0; r < 8; r++) {
          sg->sa[kk * R + rv * 8 + r] = (int8_t)o[16 + 16 * j + 2 * r];
          sg->sb[kk * R + rv * 8 + r] = (int8_t)o[16 + 16 * j + 2 * r + 1];
        }
        uint8_t *w = sg->wq + (kk * 8 * R + rv * 8) * 4;
        for (int g = 0; g < 8; g++)
          _mm256_store_si256((__m256i *)(void *)(w + (size_t)g * R * 4), fg_xp_k6_u(o + FG_XP_K6_HEAD + 192 * j, g));
      }
    return;
  }
  if (type == FG_TYPE_Q4_K) {
    const size_t bb = fg_xp_block(type);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (size_t rv = 0; rv < R / 8; rv++)
      for (size_t k = k0; k < k1; k++) {
        const size_t kk = k - k0;
        const uint8_t *o = pk[rv] + k / 8 * bb;
        const int j = (int)(k % 8);
        __m256 dw, mw;
        fg_xp_k4_scales(o, j, &dw, &mw);
        _mm256_store_ps(sg->dw + kk * R + rv * 8, dw);
        _mm256_store_ps(sg->mw + kk * R + rv * 8, mw);
        uint8_t *w = sg->wq + (kk * 8 * R + rv * 8) * 4;
        for (int i = 0; i < 4; i++) {
          const __m256i n = _mm256_loadu_si256((const __m256i *)(const void *)(o + FG_XP_K4_HEAD + 128 * j + 32 * i));
          _mm256_store_si256((__m256i *)(void *)(w + (size_t)i * R * 4), _mm256_and_si256(n, m4));
          _mm256_store_si256((__m256i *)(void *)(w + (size_t)(i + 4) * R * 4), _mm256_and_si256(_mm256_srli_epi16(n, 4), m4));
        }
      }
    return;
  }
  if (type == FG_TYPE_IQ4_XS) {
    const size_t bb = fg_xp_block(type);
    for (size_t rv = 0; rv < R / 8; rv++)
      for (size_t k = k0; k < k1; k++) {
        const size_t kk = k - k0;
        const uint8_t *o = pk[rv] + k / 8 * bb;
        const int j = (int)(k % 8);
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)o));
        _mm256_store_ps(sg->dw + kk * R + rv * 8, _mm256_mul_ps(d, fg_xp_x4_ls(o, j)));
        uint8_t *w = sg->wq + (kk * 8 * R + rv * 8) * 4;
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
          const __m256i n = _mm256_loadu_si256((const __m256i *)(const void *)(o + FG_XP_X4_HEAD + 128 * j + 32 * i));
          _mm256_store_si256((__m256i *)(void *)(w + (size_t)i * R * 4), fg_xp_iq4(n, i));
          _mm256_store_si256((__m256i *)(void *)(w + (size_t)(i + 4) * R * 4), fg_xp_iq4(n, i + 4));
        }
      }
    return;
  }
  const fg_xp_geo geo = fg_xp_geo_of(type);
  const size_t pay = fg_xp_block(type) - geo.head, nq = geo.qh ? 32 : 0;
  for (size_t rv = 0; rv < R / 8; rv++)
    for (size_t k = k0; k < k1; k++) {
      const size_t kk = k - k0;
      const uint8_t *sc = pk[rv] + k * geo.head;
      _mm256_store_ps(sg->dw + kk * R + rv * 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)sc)));
      if (type == FG_TYPE_Q5_1)
        _mm256_store_ps(sg->mw + kk * R + rv * 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(sc + 16))));
      const uint8_t *p = pk[rv] + nblk * geo.head + k * pay;
      uint8_t *o = sg->wq + (kk * 8 * R + rv * 8) * 4;
      if (type == FG_TYPE_Q8_0) {
        for (int g = 0; g < 8; g++)
          _mm256_store_si256((__m256i *)(void *)(o + (size_t)g * R * 4), _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * g)));
        continue;
      }
      const __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++) {
        const __m256i n = _mm256_loadu_si256((const __m256i *)(const void *)(p + nq + 32 * j));
        _mm256_store_si256((__m256i *)(void *)(o + (size_t)j * R * 4), geo.qh ? fg_xp_q5(n, h, j) : fg_xp_iq4(n, j));
        _mm256_store_si256((__m256i *)(void *)(o + (size_t)(j + 4) * R * 4), geo.qh ? fg_xp_q5(n, h, j + 4) : fg_xp_iq4(n, j + 4));
      }
    }
}

/* Stages blocks k0..k1 of the tile's rows rp[0..FG_QW_ROWS) (c: the unsigned offset, 0 for signed), or
 * of its strips in the packed copy (the types of fg_xp_block; pk non-NULL). */
FG_INLINE void fg_qw_stage(fg_qw_seg *sg, uint32_t type, const uint8_t *const *rp, const uint8_t *const *pk, size_t nblk,
                           size_t k0, size_t k1, const int c, const int fl) {
  const size_t R = FG_QW_ROWS, nk = k1 - k0;
  if (pk) fg_qw_stage_packed(sg, type, pk, nblk, k0, k1);
  for (size_t rv = 0; !pk && rv < R / 8; rv++) {
    if (type == FG_TYPE_Q8_0 || type == FG_TYPE_Q4_0) {
      const size_t bsz = type == FG_TYPE_Q4_0 ? 18 : 34;
      for (size_t r = 0; r < 8; r++)
        for (size_t k = k0; k < k1; k++) {
          const uint8_t *blk = rp[rv * 8 + r] + k * bsz;
          sg->dw[(k - k0) * R + rv * 8 + r] = fg_h2f(blk);
          const __m256i q = type == FG_TYPE_Q4_0 ? fg_qs_nibbles(blk + 2) : _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2));
          _mm256_store_si256((__m256i *)(void *)(sg->rq + ((k - k0) * 8 + r) * 32), q);
        }
    } else {
      for (size_t r = 0; r < 8; r++) {
        const size_t i = rv * 8 + r;
        const fg_qstage st = {sg->rq + r * 32, 8 * 32, sg->dw + i, sg->mw + i, sg->sa + i, sg->sb + i, sg->ma + i, sg->mb + i, R};
        fg_qs_stage(type, rp[i], k0, k1, &st, _mm256_set1_epi8((char)c));
      }
    }
    for (size_t kk = 0; kk < nk; kk++) {
      __m256i v[8];
      for (int r = 0; r < 8; r++) v[r] = _mm256_load_si256((const __m256i *)(const void *)(sg->rq + (kk * 8 + (size_t)r) * 32));
      fg_tr8x8_epi32(v);
      for (int g = 0; g < 8; g++) _mm256_store_si256((__m256i *)(void *)(sg->wq + ((kk * 8 + (size_t)g) * R + rv * 8) * 4), v[g]);
    }
  }
  for (size_t i = 0; i < nk * R; i++) {
    if (fl & FG_Q8W_SUB) {
      sg->sa2[i] = fg_i16_pair(sg->sa[i], sg->sa[i]);
      sg->sb2[i] = fg_i16_pair(sg->sb[i], sg->sb[i]);
      sg->corr[i] = fg_i16_pair(sg->sa[i] * c, sg->sb[i] * c);
    }
    if (fl & FG_Q8W_MIN2) sg->mab[i] = fg_i16_pair(sg->ma[i], sg->mb[i]);
  }
}

/* An empty asm on v: GCC's reassociation would otherwise turn a block's chain of sums into a tree
 * whose products are all live at once (spills) */
FG_INLINE void fg_opaque(__m256i *v) { __asm__("" : "+x"(*v)); }

FG_INLINE __m256i fg_ld8i(const void *p) { return _mm256_load_si256((const __m256i *)p); }
FG_INLINE __m256 fg_ld8f(const float *p) { return _mm256_load_ps(p); }

/* Prefetch of a later row tile's weights into L2 while this one runs (fg_pf: 16 rows each). */
typedef struct fg_qw_pf {
  fg_pf p[FG_QW_ROWS / 16];
} fg_qw_pf;

/* Sets pf up for the rows t1 .. t1 + FG_QW_ROWS (those below i1) over `steps` steps. */
FG_INLINE void fg_qw_pf_init(fg_qw_pf *pf, const fg_mm_args *a, size_t t1, size_t i1, size_t steps) {
  for (size_t h = 0; h < FG_QW_ROWS / 16; h++) fg_pf_init_at(&pf->p[h], a, t1 + 16 * h, i1, 16, steps);
}
FG_INLINE void fg_qw_pf_step(fg_qw_pf *pf) {
  for (size_t h = 0; h < FG_QW_ROWS / 16; h++) fg_pf_step(&pf->p[h]);
}

/* The staged segment (blocks k0..k1) against every activation; rows t0.. (nr valid). s8: sign trick (as
 * FG_QW_KERNEL's); else run: groups per int16 sum, c: the unsigned offset (a power of 2, or 0); fl: FG_QS_* */
FG_INLINE void fg_qw_seg_run(const fg_mm_args *a, const fg_qw_seg *sg, size_t t0, size_t nr, size_t k0, size_t k1,
                             fg_qw_pf *pf, const int s8, const int run, const int c, const int fl) {
  enum { R = FG_QW_ROWS, NV = FG_QW_ROWS / 8 };
  const size_t act_stride = fg_act_q8_row_bytes(a->cols);
  const __m256i ones = _mm256_set1_epi16(1);
  for (size_t b = 0; b < a->nb; b++) {
    const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * act_stride, a->cols);
    float *yb = a->y + b * a->ldy + t0;
    fg_qw_pf_step(pf);
    __m256 acc[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++)
      acc[v] = k0 == 0 ? _mm256_setzero_ps() : fg_load_rows(yb + 8 * v, nr > 8 * (size_t)v ? nr - 8 * (size_t)v : 0);
    /* s8 == 2: the segment's |x| once, broadcast per group below like x (a load, not an ALU operation) */
    int8_t xabs[FG_QW_KSEG * 32] __attribute__((aligned(32)));
    if (s8 == 2)
      for (size_t k = k0; k < k1; k++)
        _mm256_store_si256((__m256i *)(void *)(xabs + (k - k0) * 32),
                           _mm256_abs_epi8(_mm256_loadu_si256((const __m256i *)(const void *)(xr.qs + k * 32))));
    for (size_t k = k0; k < k1; k++) {
      const size_t kk = k - k0;
      const uint8_t *wk = sg->wq + kk * 8 * R * 4;
      const int8_t *xq = xr.qs + k * 32;
      const int32_t is = xr.isum[k];
      __m256i xab = _mm256_setzero_si256(), s[NV], p[NV];
      if (fl & (FG_Q8W_SUB | FG_Q8W_MIN2)) {
        const int32_t xa = fg_qs_half_sum(xq);
        xab = _mm256_set1_epi32((int)fg_i16_pair(xa, is - xa));
      }
#pragma GCC unroll 8
      for (int g = 0; g < 8; g++) {
        const __m256i xg = fg_bcast32(xq + 4 * g);
        const __m256i xa = s8 == 2 ? fg_bcast32(xabs + kk * 32 + 4 * g) : _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
          const __m256i w = fg_ld8i(wk + ((size_t)g * R + 8 * (size_t)v) * 4);
          __m256i d32; /* this step's int32 sums, or none */
          if (s8 == 2) { /* no weight is -128: the activations' signs on the weights, |x| once for every row vector */
            d32 = _mm256_madd_epi16(_mm256_maddubs_epi16(xa, _mm256_sign_epi8(w, xg)), ones);
          } else if (s8) {
            d32 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(xg, w)), ones);
          } else {
            const __m256i q = _mm256_maddubs_epi16(w, xg);
            p[v] = g % run == 0 ? q : _mm256_adds_epi16(p[v], q); /* never saturates; not reassociated */
            if (g % run != run - 1) continue;
            const __m256i m = !(fl & FG_Q8W_SUB) ? ones : fg_ld8i((g < 4 ? sg->sa2 : sg->sb2) + kk * R + 8 * (size_t)v);
            d32 = _mm256_madd_epi16(p[v], m);
          }
          if (g < (s8 ? 1 : run)) { /* the first sums of the block: add the offset's correction */
            __m256i init = _mm256_setzero_si256();
            if ((fl & FG_Q8W_SUB) && c) init = _mm256_sub_epi32(init, _mm256_madd_epi16(fg_ld8i(sg->corr + kk * R + 8 * (size_t)v), xab));
            else if (c) init = _mm256_set1_epi32(-c * is);
            s[v] = _mm256_add_epi32(init, d32);
          } else {
            s[v] = _mm256_add_epi32(s[v], d32);
          }
          fg_opaque(&s[v]);
        }
      }
      const __m256 dx = _mm256_set1_ps(xr.d[k]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; v++) {
        const size_t e = kk * R + 8 * (size_t)v;
        acc[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[v]), _mm256_mul_ps(fg_ld8f(sg->dw + e), dx), acc[v]);
        if (fl & FG_Q8W_MIN1) acc[v] = _mm256_fmadd_ps(_mm256_set1_ps((float)is), _mm256_mul_ps(fg_ld8f(sg->mw + e), dx), acc[v]);
        if (fl & FG_Q8W_MIN2)
          acc[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(fg_ld8i(sg->mab + e), xab)),
                                   _mm256_mul_ps(fg_ld8f(sg->mw + e), dx), acc[v]);
      }
    }
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++)
      if (nr > 8 * (size_t)v) fg_store_rows(yb + 8 * v, nr - 8 * (size_t)v, acc[v]);
  }
}

/* whether nk staged blocks hold a weight of -128 (sign(w, x) cannot negate it) */
FG_INLINE bool fg_qw_has_m128(const fg_qw_seg *sg, size_t nk) {
  const __m256i m128 = _mm256_set1_epi8(-128);
  __m256i any = _mm256_setzero_si256();
  for (size_t i = 0; i < nk * 8 * FG_QW_ROWS * 4; i += 32) any = _mm256_or_si256(any, _mm256_cmpeq_epi8(fg_ld8i(sg->wq + i), m128));
  return !_mm256_testz_si256(any, any);
}

FG_INLINE void fg_qw_run(const fg_mm_args *a, size_t i0, size_t i1, const uint32_t type, const int s8, const int run,
                         const int c, const int fl) {
  const size_t nblk = a->cols / 32, nseg = (nblk + FG_QW_KSEG - 1) / FG_QW_KSEG;
  fg_qw_seg sg;
  fg_qw_pf pf;
  /* the packed copy (fg_xp_*) where there is one: read as linear strips, no prefetch of the file's rows */
  const bool packed = a->packed && !a->rows && fg_xp_block(type) && i0 % FG_XP_ROWS == 0;
  for (size_t t = 0; !packed && t < FG_QW_PF_AHEAD; t++) { /* the first tiles at once */
    fg_qw_pf_init(&pf, a, i0 + t * FG_QW_ROWS, i1, 1);
    fg_qw_pf_step(&pf);
  }
  for (size_t t0 = i0; t0 < i1; t0 += FG_QW_ROWS) {
    const size_t nr = FG_MIN((size_t)FG_QW_ROWS, i1 - t0);
    const uint8_t *rp[FG_QW_ROWS], *pk[FG_QW_ROWS / 8];
    fg_tile_rows(a, t0, nr, FG_QW_ROWS, rp);
    for (size_t rv = 0; packed && rv < FG_QW_ROWS / 8; rv++) /* strips past the range: the first again */
      pk[rv] = a->packed + (t0 / FG_XP_ROWS + (rv * 8 < nr ? rv : 0)) * fg_xp_size(type, FG_XP_ROWS, a->cols);
    fg_qw_pf_init(&pf, a, packed ? i1 : t0 + FG_QW_PF_AHEAD * FG_QW_ROWS, i1, nseg * (a->nb + 1));
    for (size_t k0 = 0; k0 < nblk; k0 += FG_QW_KSEG) {
      const size_t k1 = FG_MIN(k0 + FG_QW_KSEG, nblk);
      fg_qw_stage(&sg, type, rp, packed ? pk : NULL, nblk, k0, k1, c, fl);
      fg_qw_pf_step(&pf);
      if (s8 == 1 && !fg_qw_has_m128(&sg, k1 - k0)) /* Q8_0 without a -128 in the segment: the cheaper form */
        fg_qw_seg_run(a, &sg, t0, nr, k0, k1, &pf, 2, run, c, fl);
      else
        fg_qw_seg_run(a, &sg, t0, nr, k0, k1, &pf, s8, run, c, fl);
    }
  }
}

/* name, type, sign trick (1: |w| * sign(x, w); 2: |x| * sign(w, x), for weights that are never -128), int16 run,
 * unsigned offset */
#define FG_QW_KERNEL(name, type, s8, run, c) \
  static void fg_##name##_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_qw_run(a, i0, i1, type, s8, run, c, fg_q8w_flags(type)); }
FG_QW_KERNEL(q8_0, FG_TYPE_Q8_0, 1, 1, 0)
FG_QW_KERNEL(q4_0, FG_TYPE_Q4_0, 0, 8, 8)
FG_QW_KERNEL(q4_1, FG_TYPE_Q4_1, 0, 8, 0)
FG_QW_KERNEL(q5_0, FG_TYPE_Q5_0, 0, 4, 16)
FG_QW_KERNEL(q5_1, FG_TYPE_Q5_1, 0, 4, 0)
FG_QW_KERNEL(q2_k, FG_TYPE_Q2_K, 0, 4, 0)
FG_QW_KERNEL(q3_k, FG_TYPE_Q3_K, 0, 4, 4)
FG_QW_KERNEL(q4_k, FG_TYPE_Q4_K, 0, 8, 0)
FG_QW_KERNEL(q5_k, FG_TYPE_Q5_K, 0, 4, 0)
FG_QW_KERNEL(q6_k, FG_TYPE_Q6_K, 0, 2, 32)
FG_QW_KERNEL(iq4_nl, FG_TYPE_IQ4_NL, 2, 1, 0)
FG_QW_KERNEL(iq4_xs, FG_TYPE_IQ4_XS, 2, 1, 0)

// ----------------------------------------------------------------------------
// F32 / F16 / BF16 (fma spec): the 16 column lanes of the spec as two ymm (columns j..j+7, j+8..j+15);
// R rows × B activations of accumulators; the halving tree finishes each output. BF16 weights are
// widened to f32 (no bf16 dot product in AVX2), so they follow the fma spec.

/* 8 weights from column j (nc < 8: zero padded copy, nothing read past the row) as f32 */
FG_INLINE __m256 fg_w8(const uint8_t *row, size_t j, size_t nc, const int kind) {
  const size_t es = kind == 0 ? 4 : 2;
  uint8_t tmp[32] __attribute__((aligned(32)));
  const void *p = row + j * es;
  if (nc < 8) {
    memset(tmp, 0, sizeof tmp);
    memcpy(tmp, p, nc * es);
    p = tmp;
  }
  if (kind == 0) return _mm256_loadu_ps(p);
  const __m128i h = _mm_loadu_si128((const __m128i *)p);
  if (kind == 1) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

FG_INLINE __m256 fg_x8(const float *x, size_t nc) {
  if (nc >= 8) return _mm256_loadu_ps(x);
  float tmp[8] = {0};
  for (size_t i = 0; i < nc; i++) tmp[i] = x[i];
  return _mm256_loadu_ps(tmp);
}

/* the spec's halving tree over lanes (lo: 0..7, hi: 8..15) */
FG_INLINE float fg_fold16(__m256 lo, __m256 hi) {
  const __m256 h = _mm256_add_ps(lo, hi);
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_movehdup_ps(q));
  return _mm_cvtss_f32(q);
}

#define FG_FT_RMAX 4
#define FG_FT_BMAX 2

FG_INLINE void fg_ftile(const fg_mm_args *a, const uint8_t *const *rp, size_t t0, size_t nr, size_t b0, const int R,
                        const int B, const int kind, fg_pf *pf) {
  const size_t cols = a->cols;
  __m256 acc[FG_FT_RMAX][FG_FT_BMAX][2];
  const float *xf[FG_FT_BMAX];
  for (int b = 0; b < B; b++) {
    xf[b] = a->x + (b0 + (size_t)b) * a->ldx;
    for (int r = 0; r < R; r++) acc[r][b][0] = acc[r][b][1] = _mm256_setzero_ps();
  }
  for (size_t j = 0; j < cols; j += 16) {
    const size_t nc = FG_MIN((size_t)16, cols - j);
    const size_t n0 = FG_MIN((size_t)8, nc), n1 = nc > 8 ? nc - 8 : 0;
    if (pf) fg_pf_step(pf);
    __m256 xv[FG_FT_BMAX][2];
    for (int b = 0; b < B; b++) {
      xv[b][0] = fg_x8(xf[b] + j, n0);
      xv[b][1] = n1 ? fg_x8(xf[b] + j + 8, n1) : _mm256_setzero_ps();
    }
    for (int r = 0; r < R; r++) {
      const __m256 w0 = fg_w8(rp[r], j, n0, kind);
      const __m256 w1 = n1 ? fg_w8(rp[r], j + 8, n1, kind) : _mm256_setzero_ps();
      for (int b = 0; b < B; b++) {
        acc[r][b][0] = _mm256_fmadd_ps(w0, xv[b][0], acc[r][b][0]);
        acc[r][b][1] = _mm256_fmadd_ps(w1, xv[b][1], acc[r][b][1]);
      }
    }
  }
  for (int b = 0; b < B; b++) {
    float *y = a->y + (b0 + (size_t)b) * a->ldy + t0;
    for (size_t r = 0; r < nr; r++) y[r] = fg_fold16(acc[r][b][0], acc[r][b][1]);
  }
}

FG_INLINE void fg_frun(const fg_mm_args *a, size_t i0, size_t i1, const int kind, const int R, const int B) {
  fg_pf_first(a, i0, i1, (size_t)R);
  for (size_t t0 = i0; t0 < i1; t0 += (size_t)R) {
    const size_t nr = FG_MIN((size_t)R, i1 - t0);
    const uint8_t *rp[FG_FT_RMAX];
    fg_tile_rows(a, t0, nr, (size_t)R, rp);
    fg_pf pf;
    fg_pf_init(&pf, a, t0 + (size_t)R, i1, (size_t)R, (a->cols + 15) / 16);
    size_t b = 0;
    for (; b + (size_t)B <= a->nb; b += (size_t)B) fg_ftile(a, rp, t0, nr, b, R, B, kind, b == 0 ? &pf : NULL);
    if (b < a->nb) fg_ftile(a, rp, t0, nr, b, R, 1, kind, b == 0 ? &pf : NULL); /* B <= 2: at most one left */
  }
}
static void fg_f32_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, 0, 4, 1); }
static void fg_f16_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, 1, 4, 1); }
static void fg_bf16_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, 2, 4, 1); }
static void fg_f32_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, 0, 2, 2); }
static void fg_f16_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, 1, 2, 2); }
static void fg_bf16_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, 2, 2, 2); }

// ----------------------------------------------------------------------------
// the table

static const fg_kernels k_avx2 = {
    .name = "avx2",
    .vec =
        {
            [FG_TYPE_F32] = {fg_f32_vec, FG_SPEC_FMA, NULL, NULL, 1, 8},
            [FG_TYPE_F16] = {fg_f16_vec, FG_SPEC_FMA, NULL, NULL, 1, 8},
            [FG_TYPE_BF16] = {fg_bf16_vec, FG_SPEC_FMA, NULL, NULL, 1, 8},
            [FG_TYPE_Q8_0] = {fg_q8_0_vec_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 8},
            [FG_TYPE_Q4_0] = {fg_q4_0_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 8},
            [FG_TYPE_Q4_1] = {fg_q4_1_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 8},
            [FG_TYPE_Q5_0] = {fg_q5_0_vec_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 8},
            [FG_TYPE_Q5_1] = {fg_q5_1_vec_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 8},
            [FG_TYPE_Q2_K] = {fg_q2_k_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 8},
            [FG_TYPE_Q3_K] = {fg_q3_k_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 8},
            [FG_TYPE_Q4_K] = {fg_q4_k_vec_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 8},
            [FG_TYPE_Q5_K] = {fg_q5_k_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 8},
            [FG_TYPE_Q6_K] = {fg_q6_k_vec_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 8},
            [FG_TYPE_IQ4_NL] = {fg_iq4_nl_vec_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 8},
            [FG_TYPE_IQ4_XS] = {fg_iq4_xs_vec_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 8},
        },
    .gemm =
        {
            [FG_TYPE_F32] = {fg_f32_gemm, FG_SPEC_FMA, NULL, NULL, 1, 8},
            [FG_TYPE_F16] = {fg_f16_gemm, FG_SPEC_FMA, NULL, NULL, 1, 8},
            [FG_TYPE_BF16] = {fg_bf16_gemm, FG_SPEC_FMA, NULL, NULL, 1, 8},
            [FG_TYPE_Q8_0] = {fg_q8_0_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_QW_ROWS},
            [FG_TYPE_Q4_0] = {fg_q4_0_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_QW_ROWS},
            [FG_TYPE_Q4_1] = {fg_q4_1_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_QW_ROWS},
            [FG_TYPE_Q5_0] = {fg_q5_0_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_QW_ROWS},
            [FG_TYPE_Q5_1] = {fg_q5_1_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_QW_ROWS},
            [FG_TYPE_Q2_K] = {fg_q2_k_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_QW_ROWS},
            [FG_TYPE_Q3_K] = {fg_q3_k_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_QW_ROWS},
            [FG_TYPE_Q4_K] = {fg_q4_k_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_QW_ROWS},
            [FG_TYPE_Q5_K] = {fg_q5_k_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_QW_ROWS},
            [FG_TYPE_Q6_K] = {fg_q6_k_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_QW_ROWS},
            [FG_TYPE_IQ4_NL] = {fg_iq4_nl_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_QW_ROWS},
            [FG_TYPE_IQ4_XS] = {fg_iq4_xs_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_QW_ROWS},
        },
    .pack_size = fg_xp_size,
    .pack = fg_xp_pack,
    .unpack = fg_xp_unpack,
    .pack_rows = FG_XP_ROWS,
    .gemm_min_nb = {[FG_TYPE_F32] = 2, [FG_TYPE_F16] = 2, [FG_TYPE_BF16] = 2, [FG_TYPE_Q8_0] = FG_QW_MIN_NB_4,
                    [FG_TYPE_Q4_0] = FG_QW_MIN_NB_2, [FG_TYPE_Q4_1] = FG_QW_MIN_NB_2, [FG_TYPE_Q5_0] = FG_QW_MIN_NB_2,
                    [FG_TYPE_Q5_1] = FG_QW_MIN_NB_2, [FG_TYPE_Q2_K] = FG_QW_MIN_NB_3, [FG_TYPE_Q3_K] = FG_QW_MIN_NB_3,
                    [FG_TYPE_Q4_K] = FG_QW_MIN_NB_4, [FG_TYPE_Q5_K] = FG_QW_MIN_NB_4, [FG_TYPE_Q6_K] = FG_QW_MIN_NB_3,
                    [FG_TYPE_IQ4_NL] = FG_QW_MIN_NB_3, [FG_TYPE_IQ4_XS] = FG_QW_MIN_NB_4},
};

const fg_kernels *fg_kernels_avx2(void) { return &k_avx2; }
