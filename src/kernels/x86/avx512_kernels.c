/* avx512_kernels.c — AVX-512 (F/BW/VL/DQ + VNNI + BF16) kernels. Built with those ISA flags; only
 * reached through fg_kernels_avx512() after dispatch.c has checked the CPU.
 *
 * One spec per weight type (see kernels.h); vec (decode) and gemm (prefill) perform the same
 * operations per output, so they agree bit for bit:
 *  - F32/F16/BF16: lanes = 16 consecutive columns. Weight and activation rows stream contiguously
 *    into R rows × B activations of accumulators (8 × 1 decode, 4 × 6 prefill).
 *  - Q8_0/Q4_0 vec: lanes = 16 weight rows; each block's int8 dots are reduced across lanes so lane
 *    r holds row r's exact integer dot, then scaled and accumulated in block order.
 *  - Q8_0/Q4_0 gemm: lanes = 16 activations, repacked once per call as 4-byte groups; a broadcast
 *    weight group feeds vpdpbusd for 16 activations; 8 rows × 16 activations register-blocked (a last
 *    tile of <= 8 activations runs in ymm registers: same lanes, same operations, half the cost).
 *  - Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS (q8 spec with half-block scales and minimums): a
 *    tile's rows are decoded once per column segment into v + 128 and their scales (q8w_stage.h), then
 *    the Q8_0 cores above read them: vec 16 rows in the lanes (the reduction stopped one step early
 *    gives the half-block sums for sa * ia + sb * ib), gemm 8 rows × 16 activations from activation
 *    tiles that also carry each block's sum and first-half sum (the +128 bias and the minimum's
 *    multiplicand). Q5_0 decode skips the staging: Q4_0's vec path plus the fifth bits as byte masks. */
#include "kernels/kernels.h"
#include "kernels/x86/q8w_stage.h"

#include <immintrin.h>
#include <string.h>

#define FG_INLINE static inline __attribute__((always_inline))

#define FG_Q_KSEG 64    /* int8 blocks per weight segment staged on the stack (2048 columns) */
#define FG_F_JSEG 256   /* columns per f16 weight segment staged as f32 */

// ----------------------------------------------------------------------------
// small helpers

FG_INLINE uint32_t fg_ld_u32(const void *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
FG_INLINE uint16_t fg_ld_u16(const void *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}
FG_INLINE float fg_h2f(const void *p) { return _cvtsh_ss(fg_ld_u16(p)); }

/* Row pointers of one tile; lanes past n repeat the first row (computed, never stored). */
FG_INLINE void fg_tile_rows(const fg_mm_args *a, size_t i0, size_t n, size_t cap, const uint8_t **rp) {
  for (size_t r = 0; r < cap; r++) {
    const size_t i = i0 + (r < n ? r : 0);
    const size_t row = a->rows ? (size_t)a->rows[i] : i;
    rp[r] = a->w + row * a->row_bytes;
  }
}

FG_INLINE __mmask16 fg_mask16(size_t n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u); }
FG_INLINE __mmask32 fg_mask32(size_t n) { return n >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << n) - 1u); }

/* In-register transpose: r[i] = row i (16 floats) becomes r[j] = column j (lane i = row i). */
FG_INLINE void fg_tr16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) {
    r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
  }
  /* r[4i + c], 128-bit lane L: rows 4i..4i+3 at column 4L + c */
  for (int c = 0; c < 4; c++) {
    t[c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
    t[4 + c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
    t[8 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
    t[12 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
  }
  for (int c = 0; c < 4; c++) {
    r[c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88);
    r[8 + c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0xdd);
    r[4 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xdd);
  }
}

/* Lanes-as-activations outputs: lane l of v[t] is y[(b0 + 16 t + l) * ldy + i]; add=1 accumulates
 * into y (a later column segment), else overwrites. */
/* Loads the partial sums written by fg_store_block8 back into v[0..8) (rows past nr are zero). */
FG_INLINE void fg_load_block8(const fg_mm_args *a, size_t b0, size_t t0, size_t nr, __m512 v[8]) {
  __m512 r[16];
  const size_t n = FG_MIN((size_t)16, a->nb - b0);
  const __mmask16 m = fg_mask16(nr);
  for (size_t l = 0; l < 16; l++) r[l] = l < n ? _mm512_maskz_loadu_ps(m, a->y + (b0 + l) * a->ldy + t0) : _mm512_setzero_ps();
  fg_tr16x16(r);
  for (int i = 0; i < 8; i++) v[i] = r[i];
}

/* Stores rows t0..t0+nr (nr <= 8) of a lanes-as-activations block: v[r] lane l is
 * y[(b0 + l) * ldy + t0 + r]. Transposed in registers so each activation gets one contiguous store
 * (activation rows are often a multiple of 4 KiB apart: scalar stores would fight over one L1 set). */
FG_INLINE void fg_store_block8(const fg_mm_args *a, size_t b0, size_t t0, size_t nr, const __m512 v[8]) {
  __m512 r[16];
  for (int i = 0; i < 8; i++) r[i] = v[i];
  for (int i = 8; i < 16; i++) r[i] = _mm512_setzero_ps();
  fg_tr16x16(r);
  const size_t n = FG_MIN((size_t)16, a->nb - b0);
  const __mmask16 m = fg_mask16(nr);
  for (size_t l = 0; l < n; l++) _mm512_mask_storeu_ps(a->y + (b0 + l) * a->ldy + t0, m, r[l]);
}

// ----------------------------------------------------------------------------
// Q8 activations: quantization (bit-exact with fg_spec_quantize_act_q8)

/* One 32-block: 32 int8 into qs, returns the scale, *isum = sum of qs. */
FG_INLINE float fg_q8_block(const float *x, int8_t *qs, int32_t *isum) {
  const __m512 a = _mm512_loadu_ps(x), b = _mm512_loadu_ps(x + 16);
  const __m512 amax_v = _mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b));
  const float amax = _mm512_reduce_max_ps(amax_v);
  const float d = amax >= FG_ACT_Q8_MIN_AMAX ? amax / 127.0f : 0.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const __m512 vid = _mm512_set1_ps(id), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  /* max(v, -127) maps NaN to -127, as the spec does; cvtps rounds to nearest even */
  const __m512 va = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(a, vid), lo), hi);
  const __m512 vb = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(b, vid), lo), hi);
  const __m512i ia = _mm512_cvtps_epi32(va), ib = _mm512_cvtps_epi32(vb);
  _mm_storeu_si128((__m128i *)(void *)qs, _mm512_cvtepi32_epi8(ia));
  _mm_storeu_si128((__m128i *)(void *)(qs + 16), _mm512_cvtepi32_epi8(ib));
  *isum = _mm512_reduce_add_epi32(_mm512_add_epi32(ia, ib));
  return d;
}

/* vec layout: one fg_act_q8_row per activation */
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

/* gemm layout, per tile of 16 activations and block k:
 *   qs   [k][g][16 lanes][4 bytes]  group g = elements 4g..4g+3 of the block
 *   d    [k][16] f32                scale of each lane
 *   bias [k][16] i32                -c * isum: undoes the +c offset of unsigned weights (c = 128 for
 *                                   Q8_0 weights stored as qw ^ 0x80, c = 8 for Q4_0 nibbles) */
static size_t fg_q8_tile_bytes(size_t cols) { return (cols / 32) * (512 + 64 + 64); }

static size_t fg_q8x16_size(size_t cols, size_t nb) {
  uint64_t n;
  if (!fg_mul_u64(fg_q8_tile_bytes(cols), (nb + 15) / 16, &n) || n > SIZE_MAX - 64) return SIZE_MAX;
  return (size_t)n;
}

/* Block k of the 16 activations of tile t (rows past nb are zeros) into the gemm layouts' slots: the
 * qs groups transposed in registers ([g][16 lanes][4 bytes] at qs, 64-byte aligned), then per lane its
 * scale, sum and (xa != NULL) first-half sum. */
FG_INLINE void fg_q8_tile_block(const float *x, size_t ldx, size_t nb, size_t t, size_t k, uint8_t *qs, float *d,
                                int32_t *isum, int32_t *xa) {
  /* lane l at slot 2l (l < 8) or 2(l - 8) + 1: each 64-byte pair of slots is one register [lane i | lane i + 8] */
  int8_t q[16][32] __attribute__((aligned(64)));
  for (size_t l = 0; l < 16; l++) {
    const size_t b = t * 16 + l;
    int8_t *ql = q[l < 8 ? 2 * l : 2 * (l - 8) + 1];
    int32_t is = 0;
    float dk = 0.0f;
    if (b < nb) dk = fg_q8_block(x + b * ldx + k * 32, ql, &is);
    else memset(ql, 0, 32);
    d[l] = dk;
    isum[l] = is;
    if (xa) xa[l] = fg_qs_half_sum(ql);
  }
  /* an 8 x 8 transpose of 4-byte groups in each 256-bit half: row i of half h is lane i + 8h's block */
  __m512i z[8], u[8];
  for (int i = 0; i < 8; i++) z[i] = _mm512_load_si512(q[2 * i]);
  for (int i = 0; i < 8; i += 4) {
    const __m512i t0 = _mm512_unpacklo_epi32(z[i], z[i + 1]), t1 = _mm512_unpackhi_epi32(z[i], z[i + 1]);
    const __m512i t2 = _mm512_unpacklo_epi32(z[i + 2], z[i + 3]), t3 = _mm512_unpackhi_epi32(z[i + 2], z[i + 3]);
    u[i] = _mm512_unpacklo_epi64(t0, t2);     /* per 128-bit lane L: group (L % 2) * 4 + 0 of 4 rows */
    u[i + 1] = _mm512_unpackhi_epi64(t0, t2); /* + 1 */
    u[i + 2] = _mm512_unpacklo_epi64(t1, t3); /* + 2 */
    u[i + 3] = _mm512_unpackhi_epi64(t1, t3); /* + 3 */
  }
  for (int c = 0; c < 4; c++) {
    const __m512i lo = _mm512_shuffle_i64x2(u[c], u[4 + c], 0x88), hi = _mm512_shuffle_i64x2(u[c], u[4 + c], 0xdd);
    _mm512_store_si512(qs + c * 64, _mm512_shuffle_i64x2(lo, lo, 0xd8));
    _mm512_store_si512(qs + (4 + c) * 64, _mm512_shuffle_i64x2(hi, hi, 0xd8));
  }
}

FG_INLINE void fg_q8x16_prep(const float *x, size_t ldx, size_t cols, size_t nb, size_t b0, size_t b1, void *act,
                             int32_t c) {
  const size_t nblk = cols / 32, tb = fg_q8_tile_bytes(cols);
  for (size_t t = b0 / 16; t * 16 < b1; t++) {
    uint8_t *tile = (uint8_t *)act + t * tb;
    float *d = (float *)(void *)(tile + nblk * 512);
    int32_t *bias = (int32_t *)(void *)(tile + nblk * 576);
    for (size_t k = 0; k < nblk; k++) {
      fg_q8_tile_block(x, ldx, nb, t, k, tile + k * 512, d + k * 16, bias + k * 16, NULL);
      for (int l = 0; l < 16; l++) bias[k * 16 + l] *= -c;
    }
  }
}
static void fg_q8x16_prep_q8_0(const float *x, size_t ldx, size_t cols, size_t nb, size_t b0, size_t b1, void *act) {
  fg_q8x16_prep(x, ldx, cols, nb, b0, b1, act, 128);
}
static void fg_q8x16_prep_q4_0(const float *x, size_t ldx, size_t cols, size_t nb, size_t b0, size_t b1, void *act) {
  fg_q8x16_prep(x, ldx, cols, nb, b0, b1, act, 8);
}

// ----------------------------------------------------------------------------
// Q8_0 / Q4_0 vec: 16 rows per tile, one block at a time; per-row block dots are reduced across
// lanes so that lane r holds row r's exact integer dot

/* In-lane reduction (unpacks; one cross-lane step): z[p] = [slot 2p: 8 partial sums | slot 2p+1: 8],
 * result lane i = total of slot k_slot_of_lane[i]. Callers load row i into that slot, so lane i ends up
 * holding row i. */
static const uint8_t k_q8_slot_row[16] = {0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15}; /* slot -> row */

FG_INLINE __m512i fg_sum_unpack32(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
}
FG_INLINE __m512i fg_sum_unpack64(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
}

FG_INLINE __m512i fg_reduce_rows16(const __m512i z[8]) {
  /* per 128-bit lane: two levels of in-lane pair sums leave [z0, z1, z2, z3] (half-row totals) */
  const __m512i b0 = fg_sum_unpack64(fg_sum_unpack32(z[0], z[1]), fg_sum_unpack32(z[2], z[3]));
  const __m512i b1 = fg_sum_unpack64(fg_sum_unpack32(z[4], z[5]), fg_sum_unpack32(z[6], z[7]));
  /* lanes L0/L1 hold the two halves of slots 0,2,4,6 (L2/L3: 1,3,5,7): add the halves */
  return _mm512_add_epi32(_mm512_shuffle_i32x4(b0, b1, 0x88), _mm512_shuffle_i32x4(b0, b1, 0xdd));
}

/* Q4_0: four rows per zmm, one per 128-bit lane (their 16 nibble bytes); z_e holds rows 4L + e. */
FG_INLINE __m512i fg_reduce_rows4x4(const __m512i z[4]) {
  return fg_sum_unpack64(fg_sum_unpack32(z[0], z[1]), fg_sum_unpack32(z[2], z[3]));
}

/* Unsigned weights of block k for the rows in slots (a: lanes 0..7, b: lanes 8..15). */
FG_INLINE __m512i fg_wpair_q8_0(const uint8_t *ra, const uint8_t *rb, size_t k) {
  const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(ra + k * 34 + 2));
  const __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(rb + k * 34 + 2));
  return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1), _mm512_set1_epi8((char)0x80));
}

FG_INLINE __m512i fg_wquad_q4_0(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3, size_t k) {
  __m512i t = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)(r0 + k * 18 + 2)));
  t = _mm512_inserti32x4(t, _mm_loadu_si128((const __m128i *)(const void *)(r1 + k * 18 + 2)), 1);
  t = _mm512_inserti32x4(t, _mm_loadu_si128((const __m128i *)(const void *)(r2 + k * 18 + 2)), 2);
  return _mm512_inserti32x4(t, _mm_loadu_si128((const __m128i *)(const void *)(r3 + k * 18 + 2)), 3);
}

/* fp16 scales at byte offset off of 16 rows, as 16 floats in row order. */
FG_INLINE __m512 fg_scales16(const uint8_t *const rp[16], size_t off) {
  __m128i h0 = _mm_cvtsi32_si128(fg_ld_u16(rp[0] + off)), h1 = _mm_cvtsi32_si128(fg_ld_u16(rp[8] + off));
  h0 = _mm_insert_epi16(h0, fg_ld_u16(rp[1] + off), 1);
  h1 = _mm_insert_epi16(h1, fg_ld_u16(rp[9] + off), 1);
  h0 = _mm_insert_epi16(h0, fg_ld_u16(rp[2] + off), 2);
  h1 = _mm_insert_epi16(h1, fg_ld_u16(rp[10] + off), 2);
  h0 = _mm_insert_epi16(h0, fg_ld_u16(rp[3] + off), 3);
  h1 = _mm_insert_epi16(h1, fg_ld_u16(rp[11] + off), 3);
  h0 = _mm_insert_epi16(h0, fg_ld_u16(rp[4] + off), 4);
  h1 = _mm_insert_epi16(h1, fg_ld_u16(rp[12] + off), 4);
  h0 = _mm_insert_epi16(h0, fg_ld_u16(rp[5] + off), 5);
  h1 = _mm_insert_epi16(h1, fg_ld_u16(rp[13] + off), 5);
  h0 = _mm_insert_epi16(h0, fg_ld_u16(rp[6] + off), 6);
  h1 = _mm_insert_epi16(h1, fg_ld_u16(rp[14] + off), 6);
  h0 = _mm_insert_epi16(h0, fg_ld_u16(rp[7] + off), 7);
  h1 = _mm_insert_epi16(h1, fg_ld_u16(rp[15] + off), 7);
  return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(h0), h1, 1));
}

FG_INLINE void fg_q_vec(const fg_mm_args *a, size_t i0, size_t i1, const int is_q4) {
  const size_t nblk = a->cols / 32, bsz = is_q4 ? 18 : 34;
  const size_t act_stride = fg_act_q8_row_bytes(a->cols);
  const int32_t c = is_q4 ? 8 : 128;
  fg_pf_first(a, i0, i1, 16);
  for (size_t t0 = i0; t0 < i1; t0 += 16) {
    const size_t nr = FG_MIN((size_t)16, i1 - t0);
    const __mmask16 m = fg_mask16(nr);
    const uint8_t *rp[16], *sp[16];
    fg_tile_rows(a, t0, nr, 16, rp);
    for (int s = 0; s < 16; s++) sp[s] = is_q4 ? rp[(s % 4) * 4 + s / 4] : rp[k_q8_slot_row[s]];
    fg_pf pf;
    fg_pf_init(&pf, a, t0 + 16, i1, 16, nblk);
    for (size_t b = 0; b < a->nb; b++) {
      const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * act_stride, a->cols);
      __m512 acc = _mm512_setzero_ps();
      for (size_t k = 0; k < nblk; k++) {
        if (b == 0) fg_pf_step(&pf);
        __m512i idot;
        if (is_q4) {
          const __m512i xlo = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(xr.qs + k * 32)));
          const __m512i xhi = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(xr.qs + k * 32 + 16)));
          const __m512i m4 = _mm512_set1_epi8(0x0f);
          __m512i z[4];
          for (int e = 0; e < 4; e++) {
            const __m512i w = fg_wquad_q4_0(sp[4 * e], sp[4 * e + 1], sp[4 * e + 2], sp[4 * e + 3], k);
            z[e] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(w, m4), xlo);
            z[e] = _mm512_dpbusd_epi32(z[e], _mm512_and_si512(_mm512_srli_epi16(w, 4), m4), xhi);
          }
          idot = fg_reduce_rows4x4(z);
        } else {
          const __m512i xv = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(xr.qs + k * 32)));
          __m512i z[8];
          for (int p = 0; p < 8; p++) z[p] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), fg_wpair_q8_0(sp[2 * p], sp[2 * p + 1], k), xv);
          idot = fg_reduce_rows16(z);
        }
        idot = _mm512_add_epi32(idot, _mm512_set1_epi32(-c * xr.isum[k]));
        const __m512 dw = fg_scales16(rp, k * bsz);
        const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(xr.d[k]));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(idot), scale, acc);
      }
      _mm512_mask_storeu_ps(a->y + b * a->ldy + t0, m, acc);
    }
  }
}
static void fg_q8_0_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_q_vec(a, i0, i1, 0); }
static void fg_q4_0_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_q_vec(a, i0, i1, 1); }

// ----------------------------------------------------------------------------
// Q8_0 / Q4_0 gemm: 8 rows × 16 activations; the rows' unsigned weights of a column segment are
// staged on the stack ([k][row][32 bytes]) so the inner loop is broadcast + vpdpbusd only

#define FG_QG_ROWS 8

/* One tile of 16 activations (b0..) against the staged rows t0.. (nr of them), blocks k0..k1. */
FG_INLINE void fg_q_gemm_tile16(const fg_mm_args *a, const uint8_t *tile, size_t nblk, size_t b0, size_t t0, size_t nr,
                                size_t k0, size_t k1, const uint8_t *wst, const float *dws) {
  const float *xd = (const float *)(const void *)(tile + nblk * 512);
  const int32_t *xbias = (const int32_t *)(const void *)(tile + nblk * 576);
  __m512 acc[FG_QG_ROWS];
  if (k0 == 0)
    for (size_t r = 0; r < FG_QG_ROWS; r++) acc[r] = _mm512_setzero_ps();
  else
    fg_load_block8(a, b0, t0, nr, acc);
  for (size_t k = k0; k < k1; k++) {
    const __m512i bias = _mm512_load_si512(xbias + k * 16);
    __m512i s[FG_QG_ROWS];
    for (int r = 0; r < FG_QG_ROWS; r++) s[r] = bias;
    const uint8_t *wk = wst + (k - k0) * FG_QG_ROWS * 32;
    const uint8_t *xk = tile + k * 512;
    for (int g = 0; g < 8; g++) {
      const __m512i xv = _mm512_load_si512(xk + g * 64);
      for (int r = 0; r < FG_QG_ROWS; r++)
        s[r] = _mm512_dpbusd_epi32(s[r], _mm512_set1_epi32((int)fg_ld_u32(wk + r * 32 + g * 4)), xv);
    }
    const __m512 dx = _mm512_load_ps(xd + k * 16);
    for (int r = 0; r < FG_QG_ROWS; r++) {
      const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(dws[(k - k0) * FG_QG_ROWS + r]), dx);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r]), scale, acc[r]);
    }
  }
  fg_store_block8(a, b0, t0, nr, acc);
}

/* The same for a last tile with at most 8 activations: the low 8 lanes in ymm registers, which Zen 4
 * runs at twice the zmm rate, so a 36-activation chunk costs 40 lanes instead of 48. Lane for lane the
 * same operations as fg_q_gemm_tile16. */
FG_INLINE void fg_q_gemm_tile8(const fg_mm_args *a, const uint8_t *tile, size_t nblk, size_t b0, size_t t0, size_t nr,
                               size_t k0, size_t k1, const uint8_t *wst, const float *dws) {
  const float *xd = (const float *)(const void *)(tile + nblk * 512);
  const int32_t *xbias = (const int32_t *)(const void *)(tile + nblk * 576);
  __m256 acc[FG_QG_ROWS];
  if (k0 == 0) {
    for (size_t r = 0; r < FG_QG_ROWS; r++) acc[r] = _mm256_setzero_ps();
  } else {
    __m512 v[FG_QG_ROWS];
    fg_load_block8(a, b0, t0, nr, v);
    for (size_t r = 0; r < FG_QG_ROWS; r++) acc[r] = _mm512_castps512_ps256(v[r]);
  }
  for (size_t k = k0; k < k1; k++) {
    const __m256i bias = _mm256_load_si256((const __m256i *)(const void *)(xbias + k * 16));
    __m256i s[FG_QG_ROWS];
    for (int r = 0; r < FG_QG_ROWS; r++) s[r] = bias;
    const uint8_t *wk = wst + (k - k0) * FG_QG_ROWS * 32;
    const uint8_t *xk = tile + k * 512;
    for (int g = 0; g < 8; g++) {
      const __m256i xv = _mm256_load_si256((const __m256i *)(const void *)(xk + g * 64));
      for (int r = 0; r < FG_QG_ROWS; r++)
        s[r] = _mm256_dpbusd_epi32(s[r], _mm256_set1_epi32((int)fg_ld_u32(wk + r * 32 + g * 4)), xv);
    }
    const __m256 dx = _mm256_load_ps(xd + k * 16);
    for (int r = 0; r < FG_QG_ROWS; r++) {
      const __m256 scale = _mm256_mul_ps(_mm256_set1_ps(dws[(k - k0) * FG_QG_ROWS + r]), dx);
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[r]), scale, acc[r]);
    }
  }
  __m512 v[FG_QG_ROWS];
  for (int r = 0; r < FG_QG_ROWS; r++) v[r] = _mm512_zextps256_ps512(acc[r]);
  fg_store_block8(a, b0, t0, nr, v);
}

FG_INLINE void fg_q_gemm(const fg_mm_args *a, size_t i0, size_t i1, const int is_q4) {
  const size_t nblk = a->cols / 32, bsz = is_q4 ? 18 : 34;
  const size_t tb = fg_q8_tile_bytes(a->cols), ntiles = (a->nb + 15) / 16;
  uint8_t wst[FG_Q_KSEG * FG_QG_ROWS * 32] __attribute__((aligned(64))); /* (k, row, 32) */
  float dws[FG_Q_KSEG * FG_QG_ROWS];                                       /* (k, row) */
  for (size_t t0 = i0; t0 < i1; t0 += FG_QG_ROWS) {
    const size_t nr = FG_MIN((size_t)FG_QG_ROWS, i1 - t0);
    const uint8_t *rp[FG_QG_ROWS];
    fg_tile_rows(a, t0, nr, FG_QG_ROWS, rp);
    for (size_t k0 = 0; k0 < nblk; k0 += FG_Q_KSEG) {
      const size_t k1 = FG_MIN(k0 + FG_Q_KSEG, nblk);
      for (size_t k = k0; k < k1; k++) {
        for (size_t r = 0; r < FG_QG_ROWS; r++) {
          uint8_t *dst = wst + ((k - k0) * FG_QG_ROWS + r) * 32;
          const uint8_t *blk = rp[r] + k * bsz;
          dws[(k - k0) * FG_QG_ROWS + r] = fg_h2f(blk);
          if (is_q4) {
            const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
            const __m128i lo = _mm_and_si128(q, _mm_set1_epi8(0x0f));
            const __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), _mm_set1_epi8(0x0f));
            _mm256_store_si256((__m256i *)(void *)dst, _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
          } else {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2));
            _mm256_store_si256((__m256i *)(void *)dst, _mm256_xor_si256(q, _mm256_set1_epi8((char)0x80)));
          }
        }
      }
      for (size_t t = 0; t < ntiles; t++) {
        const uint8_t *tile = (const uint8_t *)a->act + t * tb;
        if (a->nb - t * 16 <= 8) fg_q_gemm_tile8(a, tile, nblk, t * 16, t0, nr, k0, k1, wst, dws);
        else fg_q_gemm_tile16(a, tile, nblk, t * 16, t0, nr, k0, k1, wst, dws);
      }
    }
  }
}
static void fg_q8_0_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_q_gemm(a, i0, i1, 0); }
static void fg_q4_0_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_q_gemm(a, i0, i1, 1); }

// ----------------------------------------------------------------------------
// the other q8-spec types (Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS): a tile's rows are decoded
// once per column segment into int8 values v + 128 and their scales (q8w_stage.h), then one int8 core
// per table kind runs for every type. Per block: the unsigned dot of v + 128 (vpdpbusd) less
// 128 * sum x is the exact sum v x (per half-block for the types with half-block scales, then
// sa * ia + sb * ib in int32), and s = fmaf(dw * dx, isum, s), then the minimum's fmaf.
//  - vec: 16 rows per tile in the lanes, as Q8_0 (rows staged in the reduction's slot order; the
//    reduction stops one step early for the half-block sums)
//  - gemm: 8 rows × 16 activations, as Q8_0, from activation tiles that carry sum x and the first
//    half's sum per lane (fg_q8h layout)

#define FG_NQ_VSEG 32
#ifndef FG_NQ_GEMM_MIN_NB
#define FG_NQ_GEMM_MIN_NB 4 /* nb from which the gemm kernel runs */
#endif /* blocks per staged segment of the vec kernel (16 rows: 16 KiB of values) */

/* as fg_reduce_rows16 but stopping before the halves are added: lane i of *ha / *hb = row i's sum over
 * elements 0..15 / 16..31 of the block */
FG_INLINE void fg_reduce_rows16_halves(const __m512i z[8], __m512i *ha, __m512i *hb) {
  const __m512i b0 = fg_sum_unpack64(fg_sum_unpack32(z[0], z[1]), fg_sum_unpack32(z[2], z[3]));
  const __m512i b1 = fg_sum_unpack64(fg_sum_unpack32(z[4], z[5]), fg_sum_unpack32(z[6], z[7]));
  *ha = _mm512_shuffle_i32x4(b0, b1, 0x88);
  *hb = _mm512_shuffle_i32x4(b0, b1, 0xdd);
}

FG_INLINE void fg_nq_vec(const fg_mm_args *a, size_t i0, size_t i1, const uint32_t type) {
  const int fl = fg_q8w_flags(type);
  const size_t nblk = a->cols / 32;
  const size_t act_stride = fg_act_q8_row_bytes(a->cols);
  uint8_t wq[FG_NQ_VSEG * 16 * 32] __attribute__((aligned(64))); /* (k, slot, 32) */
  float dw[FG_NQ_VSEG * 16] __attribute__((aligned(64)));        /* (k, row) */
  float mw[FG_NQ_VSEG * 16] __attribute__((aligned(64)));
  int32_t sa[FG_NQ_VSEG * 16] __attribute__((aligned(64))), sb[FG_NQ_VSEG * 16] __attribute__((aligned(64)));
  int32_t ma[FG_NQ_VSEG * 16] __attribute__((aligned(64))), mb[FG_NQ_VSEG * 16] __attribute__((aligned(64)));
  const __m256i bias = _mm256_set1_epi8((char)0x80); /* v + 128 */
  fg_pf_first(a, i0, i1, 16);
  for (size_t t0 = i0; t0 < i1; t0 += 16) {
    const size_t nr = FG_MIN((size_t)16, i1 - t0);
    const __mmask16 m = fg_mask16(nr);
    const uint8_t *rp[16];
    fg_tile_rows(a, t0, nr, 16, rp);
    fg_pf pf;
    fg_pf_init(&pf, a, t0 + 16, i1, 16, nblk);
    for (size_t k0 = 0; k0 < nblk; k0 += FG_NQ_VSEG) {
      const size_t k1 = FG_MIN(k0 + FG_NQ_VSEG, nblk);
      for (size_t s = 0; s < 16; s++) {
        const size_t r = k_q8_slot_row[s];
        const fg_qstage st = {wq + s * 32, 16 * 32, dw + r, mw + r, sa + r, sb + r, ma + r, mb + r, 16};
        fg_qs_stage(type, rp[r], k0, k1, &st, bias);
      }
      for (size_t k = k0; k < k1; k++) fg_pf_step(&pf);
      for (size_t b = 0; b < a->nb; b++) {
        const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * act_stride, a->cols);
        float *yb = a->y + b * a->ldy + t0;
        __m512 acc = k0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, yb);
        for (size_t k = k0; k < k1; k++) {
          const size_t kk = k - k0;
          const __m512i xv = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(xr.qs + k * 32)));
          __m512i z[8];
          for (int p = 0; p < 8; p++)
            z[p] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_load_si512(wq + kk * 512 + p * 64), xv);
          const int32_t isx = xr.isum[k];
          const int32_t xa = fl & (FG_Q8W_SUB | FG_Q8W_MIN2) ? fg_qs_half_sum(xr.qs + k * 32) : 0, xb = isx - xa;
          __m512i idot;
          if (fl & FG_Q8W_SUB) {
            __m512i ha, hb;
            fg_reduce_rows16_halves(z, &ha, &hb);
            ha = _mm512_add_epi32(ha, _mm512_set1_epi32(-128 * xa));
            hb = _mm512_add_epi32(hb, _mm512_set1_epi32(-128 * xb));
            idot = _mm512_add_epi32(_mm512_mullo_epi32(ha, _mm512_load_si512(sa + kk * 16)),
                                    _mm512_mullo_epi32(hb, _mm512_load_si512(sb + kk * 16)));
          } else {
            idot = _mm512_add_epi32(fg_reduce_rows16(z), _mm512_set1_epi32(-128 * isx));
          }
          const __m512 dx = _mm512_set1_ps(xr.d[k]);
          acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(idot), _mm512_mul_ps(_mm512_load_ps(dw + kk * 16), dx), acc);
          if (fl & FG_Q8W_MIN1)
            acc = _mm512_fmadd_ps(_mm512_set1_ps((float)isx), _mm512_mul_ps(_mm512_load_ps(mw + kk * 16), dx), acc);
          if (fl & FG_Q8W_MIN2) {
            const __m512i ms = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_load_si512(ma + kk * 16), _mm512_set1_epi32(xa)),
                                                _mm512_mullo_epi32(_mm512_load_si512(mb + kk * 16), _mm512_set1_epi32(xb)));
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ms), _mm512_mul_ps(_mm512_load_ps(mw + kk * 16), dx), acc);
          }
        }
        _mm512_mask_storeu_ps(yb, m, acc);
      }
    }
  }
}

/* gemm layout (fg_q8h), per tile of 16 activations and block k:
 *   qs   [k][g][16 lanes][4 bytes]  as fg_q8x16
 *   d    [k][16] f32
 *   isum [k][16] i32  sum of the block's 32 qs
 *   xa   [k][16] i32  sum of its first 16 */
static size_t fg_q8h_tile_bytes(size_t cols) { return (cols / 32) * (512 + 3 * 64); }

static size_t fg_q8h_size(size_t cols, size_t nb) {
  uint64_t n;
  if (!fg_mul_u64(fg_q8h_tile_bytes(cols), (nb + 15) / 16, &n) || n > SIZE_MAX - 64) return SIZE_MAX;
  return (size_t)n;
}

static void fg_q8h_prep(const float *x, size_t ldx, size_t cols, size_t nb, size_t b0, size_t b1, void *act) {
  const size_t nblk = cols / 32, tb = fg_q8h_tile_bytes(cols);
  for (size_t t = b0 / 16; t * 16 < b1; t++) {
    uint8_t *tile = (uint8_t *)act + t * tb;
    float *d = (float *)(void *)(tile + nblk * 512);
    int32_t *isum = (int32_t *)(void *)(tile + nblk * 576);
    int32_t *xa = (int32_t *)(void *)(tile + nblk * 640);
    for (size_t k = 0; k < nblk; k++)
      fg_q8_tile_block(x, ldx, nb, t, k, tile + k * 512, d + k * 16, isum + k * 16, xa + k * 16);
  }
}

/* One tile of 16 activations against the staged rows t0.. (nr of them), blocks k0..k1. */
FG_INLINE void fg_nq_gemm_tile16(const fg_mm_args *a, const uint8_t *tile, size_t nblk, size_t b0, size_t t0, size_t nr,
                                 size_t k0, size_t k1, const uint8_t *wq, const float *dw, const float *mw,
                                 const int32_t *sa, const int32_t *sb, const int32_t *ma, const int32_t *mb, const int fl) {
  const float *xd = (const float *)(const void *)(tile + nblk * 512);
  const int32_t *xis = (const int32_t *)(const void *)(tile + nblk * 576);
  const int32_t *xas = (const int32_t *)(const void *)(tile + nblk * 640);
  __m512 acc[FG_QG_ROWS];
  if (k0 == 0)
    for (size_t r = 0; r < FG_QG_ROWS; r++) acc[r] = _mm512_setzero_ps();
  else
    fg_load_block8(a, b0, t0, nr, acc);
  for (size_t k = k0; k < k1; k++) {
    const size_t kk = k - k0;
    const __m512i isx = _mm512_load_si512(xis + k * 16);
    const __m512i xa = _mm512_load_si512(xas + k * 16), xb = _mm512_sub_epi32(isx, xa);
    const uint8_t *wk = wq + kk * FG_QG_ROWS * 32;
    const uint8_t *xk = tile + k * 512;
    __m512i s[FG_QG_ROWS];
    if (fl & FG_Q8W_SUB) {
      const __m512i ba = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(xa, 7));
      const __m512i bb = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(xb, 7));
      __m512i u[FG_QG_ROWS];
      for (int r = 0; r < FG_QG_ROWS; r++) s[r] = ba, u[r] = bb;
      for (int g = 0; g < 4; g++) {
        const __m512i xv = _mm512_load_si512(xk + g * 64), xw = _mm512_load_si512(xk + (g + 4) * 64);
        for (int r = 0; r < FG_QG_ROWS; r++) {
          s[r] = _mm512_dpbusd_epi32(s[r], _mm512_set1_epi32((int)fg_ld_u32(wk + r * 32 + g * 4)), xv);
          u[r] = _mm512_dpbusd_epi32(u[r], _mm512_set1_epi32((int)fg_ld_u32(wk + r * 32 + 16 + g * 4)), xw);
        }
      }
      for (int r = 0; r < FG_QG_ROWS; r++)
        s[r] = _mm512_add_epi32(_mm512_mullo_epi32(s[r], _mm512_set1_epi32(sa[kk * FG_QG_ROWS + r])),
                                _mm512_mullo_epi32(u[r], _mm512_set1_epi32(sb[kk * FG_QG_ROWS + r])));
    } else {
      const __m512i bias = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(isx, 7));
      for (int r = 0; r < FG_QG_ROWS; r++) s[r] = bias;
      for (int g = 0; g < 8; g++) {
        const __m512i xv = _mm512_load_si512(xk + g * 64);
        for (int r = 0; r < FG_QG_ROWS; r++)
          s[r] = _mm512_dpbusd_epi32(s[r], _mm512_set1_epi32((int)fg_ld_u32(wk + r * 32 + g * 4)), xv);
      }
    }
    const __m512 dx = _mm512_load_ps(xd + k * 16);
    const __m512 fx = _mm512_cvtepi32_ps(isx);
    for (int r = 0; r < FG_QG_ROWS; r++) {
      const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(dw[kk * FG_QG_ROWS + r]), dx);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r]), scale, acc[r]);
      if (fl & FG_Q8W_MIN1) acc[r] = _mm512_fmadd_ps(fx, _mm512_mul_ps(_mm512_set1_ps(mw[kk * FG_QG_ROWS + r]), dx), acc[r]);
      if (fl & FG_Q8W_MIN2) {
        const __m512i ms = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_set1_epi32(ma[kk * FG_QG_ROWS + r]), xa),
                                            _mm512_mullo_epi32(_mm512_set1_epi32(mb[kk * FG_QG_ROWS + r]), xb));
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ms), _mm512_mul_ps(_mm512_set1_ps(mw[kk * FG_QG_ROWS + r]), dx), acc[r]);
      }
    }
  }
  fg_store_block8(a, b0, t0, nr, acc);
}

FG_INLINE void fg_nq_gemm(const fg_mm_args *a, size_t i0, size_t i1, const uint32_t type) {
  const int fl = fg_q8w_flags(type);
  const size_t nblk = a->cols / 32;
  const size_t tb = fg_q8h_tile_bytes(a->cols), ntiles = (a->nb + 15) / 16;
  uint8_t wq[FG_Q_KSEG * FG_QG_ROWS * 32] __attribute__((aligned(64))); /* (k, row, 32) */
  float dw[FG_Q_KSEG * FG_QG_ROWS], mw[FG_Q_KSEG * FG_QG_ROWS];          /* (k, row) */
  int32_t sa[FG_Q_KSEG * FG_QG_ROWS], sb[FG_Q_KSEG * FG_QG_ROWS], ma[FG_Q_KSEG * FG_QG_ROWS], mb[FG_Q_KSEG * FG_QG_ROWS];
  const __m256i bias = _mm256_set1_epi8((char)0x80); /* v + 128 */
  for (size_t t0 = i0; t0 < i1; t0 += FG_QG_ROWS) {
    const size_t nr = FG_MIN((size_t)FG_QG_ROWS, i1 - t0);
    const uint8_t *rp[FG_QG_ROWS];
    fg_tile_rows(a, t0, nr, FG_QG_ROWS, rp);
    for (size_t k0 = 0; k0 < nblk; k0 += FG_Q_KSEG) {
      const size_t k1 = FG_MIN(k0 + FG_Q_KSEG, nblk);
      for (size_t r = 0; r < FG_QG_ROWS; r++) {
        const fg_qstage st = {wq + r * 32, FG_QG_ROWS * 32, dw + r, mw + r, sa + r, sb + r, ma + r, mb + r, FG_QG_ROWS};
        fg_qs_stage(type, rp[r], k0, k1, &st, bias);
      }
      for (size_t t = 0; t < ntiles; t++)
        fg_nq_gemm_tile16(a, (const uint8_t *)a->act + t * tb, nblk, t * 16, t0, nr, k0, k1, wq, dw, mw, sa, sb, ma, mb, fl);
    }
  }
}

/* Q5_0 vec without staging (decode reads each weight once): as Q4_0, four rows per zmm (one per
 * 128-bit lane, their 16 nibble bytes) with the fifth bits of the four rows' low / high halves as
 * two byte masks (+16): values q = v + 16 in 0..31 against x, less 16 * sum x. The same integer
 * sums and float operations as the staged kernels. */
FG_INLINE __m512i fg_q5_0_quad_dot(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3, size_t k,
                                   __m512i xlo, __m512i xhi) {
  const size_t o = k * 22;
  __m512i w = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)(r0 + o + 6)));
  w = _mm512_inserti32x4(w, _mm_loadu_si128((const __m128i *)(const void *)(r1 + o + 6)), 1);
  w = _mm512_inserti32x4(w, _mm_loadu_si128((const __m128i *)(const void *)(r2 + o + 6)), 2);
  w = _mm512_inserti32x4(w, _mm_loadu_si128((const __m128i *)(const void *)(r3 + o + 6)), 3);
  __m128i h = _mm_cvtsi32_si128((int)fg_ld_u32(r0 + o + 2));
  h = _mm_insert_epi32(h, (int)fg_ld_u32(r1 + o + 2), 1);
  h = _mm_insert_epi32(h, (int)fg_ld_u32(r2 + o + 2), 2);
  h = _mm_insert_epi32(h, (int)fg_ld_u32(r3 + o + 2), 3);
  /* [bits 0..15 of the 4 rows | bits 16..31 of the 4 rows]: byte j of lane L <-> mask bit 16 L + j */
  h = _mm_shuffle_epi8(h, _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15));
  uint64_t hm[2]; /* through memory: no 64-bit general registers needed (i686 builds) */
  _mm_storeu_si128((__m128i *)(void *)hm, h);
  const __mmask64 mlo = (__mmask64)hm[0], mhi = (__mmask64)hm[1];
  const __m512i m4 = _mm512_set1_epi8(0x0f), b4 = _mm512_set1_epi8(0x10);
  const __m512i wlo = _mm512_and_si512(w, m4), whi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);
  const __m512i qlo = _mm512_mask_add_epi8(wlo, mlo, wlo, b4), qhi = _mm512_mask_add_epi8(whi, mhi, whi, b4);
  return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), qlo, xlo), qhi, xhi);
}

static void fg_q5_0_vec_direct(const fg_mm_args *a, size_t i0, size_t i1) {
  const size_t nblk = a->cols / 32;
  const size_t act_stride = fg_act_q8_row_bytes(a->cols);
  fg_pf_first(a, i0, i1, 16);
  for (size_t t0 = i0; t0 < i1; t0 += 16) {
    const size_t nr = FG_MIN((size_t)16, i1 - t0);
    const __mmask16 m = fg_mask16(nr);
    const uint8_t *rp[16];
    fg_tile_rows(a, t0, nr, 16, rp);
    fg_pf pf;
    fg_pf_init(&pf, a, t0 + 16, i1, 16, nblk);
    for (size_t b = 0; b < a->nb; b++) {
      const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * act_stride, a->cols);
      __m512 acc = _mm512_setzero_ps();
      for (size_t k = 0; k < nblk; k++) {
        if (b == 0) fg_pf_step(&pf);
        const __m512i xlo = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(xr.qs + k * 32)));
        const __m512i xhi = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(xr.qs + k * 32 + 16)));
        __m512i z[4];
        for (int e = 0; e < 4; e++) z[e] = fg_q5_0_quad_dot(rp[e], rp[4 + e], rp[8 + e], rp[12 + e], k, xlo, xhi);
        const __m512i idot = _mm512_add_epi32(fg_reduce_rows4x4(z), _mm512_set1_epi32(-16 * xr.isum[k]));
        const __m512 scale = _mm512_mul_ps(fg_scales16(rp, k * 22), _mm512_set1_ps(xr.d[k]));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(idot), scale, acc);
      }
      _mm512_mask_storeu_ps(a->y + b * a->ldy + t0, m, acc);
    }
  }
}

/* Q4_K vec without staging: 16 rows in the lanes as Q8_0 (two rows per zmm, 32 nibble bytes each, the
 * values 0..15 unsigned: no bias), the super-block's fp16 d / dmin and 6-bit scales and minimums of
 * the 16 rows loaded and transposed once per super-block and decoded in the lanes (fg_k4_scale_min four bytes at a
 * time): dw = d * (float)sc and mw = -(dmin * (float)m) as fg_q8w_decode computes them. */

/* The 16 bytes at offset off of 16 rows as four dwords per row: t[d] lane i = dword d of row i. Loads
 * and a 4 x 4 transpose (no gathers: slow where the gather data sampling mitigation is on). */
FG_INLINE void fg_rows16_x4(const uint8_t *const rp[16], size_t off, __m512i t[4]) {
  __m512i z[4]; /* z[q] 128-bit lane L = row 4 L + q */
  for (int q = 0; q < 4; q++) {
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)(rp[q] + off)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(const void *)(rp[4 + q] + off)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(const void *)(rp[8 + q] + off)), 2);
    z[q] = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(const void *)(rp[12 + q] + off)), 3);
  }
  const __m512i a0 = _mm512_unpacklo_epi32(z[0], z[1]), a1 = _mm512_unpackhi_epi32(z[0], z[1]);
  const __m512i a2 = _mm512_unpacklo_epi32(z[2], z[3]), a3 = _mm512_unpackhi_epi32(z[2], z[3]);
  t[0] = _mm512_unpacklo_epi64(a0, a2);
  t[1] = _mm512_unpackhi_epi64(a0, a2);
  t[2] = _mm512_unpacklo_epi64(a1, a3);
  t[3] = _mm512_unpackhi_epi64(a1, a3);
}

static void fg_q4_k_vec_direct(const fg_mm_args *a, size_t i0, size_t i1) {
  const size_t nblk = a->cols / 32;
  const size_t act_stride = fg_act_q8_row_bytes(a->cols);
  fg_pf_first(a, i0, i1, 16);
  for (size_t t0 = i0; t0 < i1; t0 += 16) {
    const size_t nr = FG_MIN((size_t)16, i1 - t0);
    const __mmask16 m = fg_mask16(nr);
    const uint8_t *rp[16], *sp[16];
    fg_tile_rows(a, t0, nr, 16, rp);
    for (int s = 0; s < 16; s++) sp[s] = rp[k_q8_slot_row[s]];
    fg_pf pf;
    fg_pf_init(&pf, a, t0 + 16, i1, 16, nblk);
    for (size_t b = 0; b < a->nb; b++) {
      const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * act_stride, a->cols);
      __m512 acc = _mm512_setzero_ps();
      for (size_t k0 = 0; k0 < nblk; k0 += 8) {
        const size_t so = (k0 / 8) * 144;
        __m512i hd[4]; /* d | dmin, then the 12 bytes of scales and minimums */
        fg_rows16_x4(rp, so, hd);
        const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(hd[0]));
        const __m512 dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(hd[0], 16)));
        const __m512i p0 = hd[1], p1 = hd[2], p2 = hd[3];
        const __m512i c3f = _mm512_set1_epi32(0x3f3f3f3f), c0f = _mm512_set1_epi32(0x0f0f0f0f), c03 = _mm512_set1_epi32(0x03030303);
        /* bytes: sc 0..3 | sc 4..7, m 0..3 | m 4..7 */
        const __m512i wsc[2] = {_mm512_and_si512(p0, c3f),
                                _mm512_or_si512(_mm512_and_si512(p2, c0f), _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(p0, 6), c03), 4))};
        const __m512i wm[2] = {_mm512_and_si512(p1, c3f),
                               _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(p2, 4), c0f),
                                               _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(p1, 6), c03), 4))};
        const __m512 sign = _mm512_set1_ps(-0.0f);
        for (size_t jp = 0; jp < 4; jp++) {
          /* blocks 2jp (low nibbles) and 2jp + 1 (high nibbles) of the 32 bytes qs[32 jp ..] */
          __m512i w[8];
          for (int p = 0; p < 8; p++) {
            const __m256i wa = _mm256_loadu_si256((const __m256i *)(const void *)(sp[2 * p] + so + 16 + 32 * jp));
            const __m256i wb = _mm256_loadu_si256((const __m256i *)(const void *)(sp[2 * p + 1] + so + 16 + 32 * jp));
            w[p] = _mm512_inserti64x4(_mm512_castsi256_si512(wa), wb, 1);
          }
          if (b == 0) fg_pf_step(&pf), fg_pf_step(&pf);
          for (int h = 0; h < 2; h++) {
            const size_t k = k0 + 2 * jp + (size_t)h;
            const int j = (int)(2 * jp) + h;
            const __m512i xv = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(xr.qs + k * 32)));
            __m512i z[8];
            for (int p = 0; p < 8; p++) {
              const __m512i u = _mm512_and_si512(h ? _mm512_srli_epi16(w[p], 4) : w[p], _mm512_set1_epi8(0x0f));
              z[p] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, xv);
            }
            const __m512i idot = fg_reduce_rows16(z);
            const __m512i sc = _mm512_and_si512(_mm512_srlv_epi32(wsc[j / 4], _mm512_set1_epi32(8 * (j % 4))), _mm512_set1_epi32(0xff));
            const __m512i mm = _mm512_and_si512(_mm512_srlv_epi32(wm[j / 4], _mm512_set1_epi32(8 * (j % 4))), _mm512_set1_epi32(0xff));
            const __m512 dw = _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc));
            const __m512 mw = _mm512_xor_ps(_mm512_mul_ps(dmin, _mm512_cvtepi32_ps(mm)), sign);
            const __m512 dx = _mm512_set1_ps(xr.d[k]);
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(idot), _mm512_mul_ps(dw, dx), acc);
            acc = _mm512_fmadd_ps(_mm512_set1_ps((float)xr.isum[k]), _mm512_mul_ps(mw, dx), acc);
          }
        }
      }
      _mm512_mask_storeu_ps(a->y + b * a->ldy + t0, m, acc);
    }
  }
}

/* Q6_K vec without staging: 16 rows in the lanes as Q8_0 (two rows per zmm), values q = v + 32 in
 * 0..63 from ql / qh per sub-block, half-block sums less 32 * the activation's half sums, the int8
 * half-block scales and fp16 d of the 16 rows loaded once per super-block. */
FG_INLINE __m512i fg_pair256(const uint8_t *ra, const uint8_t *rb, size_t off) {
  const __m256i wa = _mm256_loadu_si256((const __m256i *)(const void *)(ra + off));
  const __m256i wb = _mm256_loadu_si256((const __m256i *)(const void *)(rb + off));
  return _mm512_inserti64x4(_mm512_castsi256_si512(wa), wb, 1);
}

static void fg_q6_k_vec_direct(const fg_mm_args *a, size_t i0, size_t i1) {
  const size_t nblk = a->cols / 32;
  const size_t act_stride = fg_act_q8_row_bytes(a->cols);
  fg_pf_first(a, i0, i1, 16);
  for (size_t t0 = i0; t0 < i1; t0 += 16) {
    const size_t nr = FG_MIN((size_t)16, i1 - t0);
    const __mmask16 m = fg_mask16(nr);
    const uint8_t *rp[16], *sp[16];
    fg_tile_rows(a, t0, nr, 16, rp);
    for (int s = 0; s < 16; s++) sp[s] = rp[k_q8_slot_row[s]];
    fg_pf pf;
    fg_pf_init(&pf, a, t0 + 16, i1, 16, nblk);
    for (size_t b = 0; b < a->nb; b++) {
      const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * act_stride, a->cols);
      __m512 acc = _mm512_setzero_ps();
      for (size_t k0 = 0; k0 < nblk; k0 += 8) {
        const size_t so = (k0 / 8) * 210;
        const __m512 d = fg_scales16(rp, so + 208);
        __m512i scw[4]; /* scales 4t .. 4t + 3 of the 16 rows */
        fg_rows16_x4(rp, so + 192, scw);
        for (int sub = 0; sub < 8; sub++) {
          const size_t k = k0 + (size_t)sub;
          const int h = sub / 4, s = sub % 4;
          if (b == 0) fg_pf_step(&pf);
          const __m512i xv = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(xr.qs + k * 32)));
          const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
          __m512i z[8];
          for (int p = 0; p < 8; p++) {
            const __m512i ql = fg_pair256(sp[2 * p], sp[2 * p + 1], so + 64 * (size_t)h + 32 * (size_t)(s & 1));
            const __m512i qh = fg_pair256(sp[2 * p], sp[2 * p + 1], so + 128 + 32 * (size_t)h);
            const __m512i lo = _mm512_and_si512(s < 2 ? ql : _mm512_srli_epi16(ql, 4), m4);
            /* bits 2s, 2s + 1 of qh to bits 4, 5 */
            const __m512i hi = _mm512_and_si512(s < 2 ? _mm512_slli_epi16(qh, 4 - 2 * s) : _mm512_srli_epi16(qh, 2 * s - 4), m30);
            z[p] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_or_si512(lo, hi), xv);
          }
          __m512i ha, hb;
          fg_reduce_rows16_halves(z, &ha, &hb);
          const int32_t xa = fg_qs_half_sum(xr.qs + k * 32), xb = xr.isum[k] - xa;
          ha = _mm512_add_epi32(ha, _mm512_set1_epi32(-32 * xa));
          hb = _mm512_add_epi32(hb, _mm512_set1_epi32(-32 * xb));
          /* sa = scales[2 sub], sb = scales[2 sub + 1], sign-extended */
          const __m512i w = scw[sub / 2];
          const int ba = (2 * sub) % 4;
          const __m512i sa = _mm512_srai_epi32(_mm512_slli_epi32(w, (unsigned)(24 - 8 * ba)), 24);
          const __m512i sb = _mm512_srai_epi32(_mm512_slli_epi32(w, (unsigned)(16 - 8 * ba)), 24);
          const __m512i idot = _mm512_add_epi32(_mm512_mullo_epi32(ha, sa), _mm512_mullo_epi32(hb, sb));
          acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(idot), _mm512_mul_ps(d, _mm512_set1_ps(xr.d[k])), acc);
        }
      }
      _mm512_mask_storeu_ps(a->y + b * a->ldy + t0, m, acc);
    }
  }
}

#define FG_NQ_GEMM(name, type) \
  static void fg_##name##_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_nq_gemm(a, i0, i1, type); }
#define FG_NQ_KERNELS(name, type)                                                                         \
  static void fg_##name##_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_nq_vec(a, i0, i1, type); } \
  FG_NQ_GEMM(name, type)
FG_NQ_KERNELS(q4_1, FG_TYPE_Q4_1)
FG_NQ_GEMM(q5_0, FG_TYPE_Q5_0) /* vec: fg_q5_0_vec_direct */
FG_NQ_KERNELS(q5_1, FG_TYPE_Q5_1)
FG_NQ_KERNELS(q2_k, FG_TYPE_Q2_K)
FG_NQ_KERNELS(q3_k, FG_TYPE_Q3_K)
FG_NQ_GEMM(q4_k, FG_TYPE_Q4_K) /* vec: fg_q4_k_vec_direct */
FG_NQ_KERNELS(q5_k, FG_TYPE_Q5_K)
FG_NQ_GEMM(q6_k, FG_TYPE_Q6_K) /* vec: fg_q6_k_vec_direct */
FG_NQ_KERNELS(iq4_nl, FG_TYPE_IQ4_NL)
FG_NQ_KERNELS(iq4_xs, FG_TYPE_IQ4_XS)

// ----------------------------------------------------------------------------
// F32 / F16 / BF16 (fma and bf16dp specs): lanes = 16 consecutive columns (BF16: 16 column pairs).
// R rows × B activations of accumulators stream weight and activation rows contiguously; each output
// is finished by the spec's halving tree. Decode uses 8 rows × 1 activation, prefill 4 × 6.

/* x -> bf16, round to nearest even, NaN kept quiet: bit-exact with fg_f32_to_bf16 */
FG_INLINE __m256i fg_f32_to_bf16_16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                       _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1))),
      16);
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  const __m512i q = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, q));
}

/* bf16 activation rows, zero padded to a multiple of 32 elements */
static size_t fg_bf16_row_bytes(size_t cols) { return ((cols + 31) / 32) * 64; }

static size_t fg_bf16_rows_size(size_t cols, size_t nb) {
  uint64_t n;
  if (!fg_mul_u64(fg_bf16_row_bytes(cols), nb, &n) || n > SIZE_MAX - 64) return SIZE_MAX;
  return (size_t)n;
}

static void fg_bf16_rows_prep(const float *x, size_t ldx, size_t cols, size_t nb, size_t b0, size_t b1, void *act) {
  (void)nb;
  const size_t stride = fg_bf16_row_bytes(cols);
  for (size_t b = b0; b < b1; b++) {
    uint16_t *dst = (uint16_t *)(void *)((uint8_t *)act + b * stride);
    const float *xb = x + b * ldx;
    size_t j = 0;
    for (; j + 16 <= cols; j += 16) _mm256_storeu_si256((__m256i *)(void *)(dst + j), fg_f32_to_bf16_16(_mm512_loadu_ps(xb + j)));
    for (; j < cols; j++) dst[j] = fg_f32_to_bf16(xb[j]);
    for (; j < stride / 2; j++) dst[j] = 0;
  }
}

/* 16 weights from column j of a row as f32 (nc < 16: zero padded, nothing read past the row) */
FG_INLINE __m512 fg_w16(const uint8_t *row, size_t j, size_t nc, const int is_f16) {
  if (is_f16) {
    const void *p = row + j * 2;
    return _mm512_cvtph_ps(nc >= 16 ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi16(fg_mask16(nc), p));
  }
  const void *p = row + j * 4;
  return nc >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(fg_mask16(nc), p);
}

/* the spec's halving tree: lanes l + 8, l + 4, l + 2, l + 1 */
FG_INLINE float fg_fold16(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_movehdup_ps(q));
  return _mm_cvtss_f32(q);
}

/* fg_fold16 of four vectors at once, stored to y[0..nr): the same additions on the same operands
 * (lanes l + 8, then l + 4, l + 2, l + 1), arranged so that one shuffle serves four outputs. */
FG_INLINE void fg_fold4_store(__m512 v0, __m512 v1, __m512 v2, __m512 v3, float *y, size_t nr) {
  /* 128-bit chunks c0..c3: t01 = [v0.c0 + v0.c2, v0.c1 + v0.c3, v1.c0 + v1.c2, v1.c1 + v1.c3] */
  const __m512 t01 = _mm512_add_ps(_mm512_shuffle_f32x4(v0, v1, 0x44), _mm512_shuffle_f32x4(v0, v1, 0xee));
  const __m512 t23 = _mm512_add_ps(_mm512_shuffle_f32x4(v2, v3, 0x44), _mm512_shuffle_f32x4(v2, v3, 0xee));
  /* chunk k of u: the four lane-l + 4 sums of v_k */
  const __m512 u = _mm512_add_ps(_mm512_shuffle_f32x4(t01, t23, 0x88), _mm512_shuffle_f32x4(t01, t23, 0xdd));
  const __m512 w = _mm512_add_ps(u, _mm512_permute_ps(u, 0xee)); /* lanes 0, 1: q0 + q2, q1 + q3 */
  const __m512 z = _mm512_add_ps(w, _mm512_movehdup_ps(w));     /* lane 0: (q0 + q2) + (q1 + q3) */
  const __m128 r = _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), z));
  _mm_mask_storeu_ps(y, (__mmask8)((1u << (nr < 4 ? nr : 4)) - 1u), r);
}

#define FG_FT_RMAX 8
#define FG_FT_BMAX 6

/* One step (16 columns, or 32 for BF16) of an R × B tile at column j; nc < step only for the tail. */
FG_INLINE void fg_fstep(__m512 acc[FG_FT_RMAX][FG_FT_BMAX], const uint8_t *const *rp, const float *const *xf,
                        const uint8_t *const *xb, size_t j, size_t nc, const int R, const int B, const int kind) {
  const size_t step = kind == 2 ? 32 : 16;
  __m512 xv[FG_FT_BMAX];
#pragma GCC unroll 8
  for (int b = 0; b < B; b++) {
    if (kind == 2) xv[b] = _mm512_castsi512_ps(_mm512_load_si512(xb[b] + j * 2)); /* padded: always whole */
    else xv[b] = nc >= step ? _mm512_loadu_ps(xf[b] + j) : _mm512_maskz_loadu_ps(fg_mask16(nc), xf[b] + j);
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; r++) {
    if (kind == 2) {
      const void *p = rp[r] + j * 2;
      const __m512i w = nc >= step ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi16(fg_mask32(nc), p);
#pragma GCC unroll 8
      for (int b = 0; b < B; b++)
        acc[r][b] = _mm512_dpbf16_ps(acc[r][b], (__m512bh)w, (__m512bh)_mm512_castps_si512(xv[b]));
    } else {
      const __m512 w = fg_w16(rp[r], j, nc, kind == 1);
#pragma GCC unroll 8
      for (int b = 0; b < B; b++) acc[r][b] = _mm512_fmadd_ps(w, xv[b], acc[r][b]);
    }
  }
}

/* kind 0 F32, 1 F16 (f32 activations from x), 2 BF16 (bf16 activations from act) */
FG_INLINE void fg_ftile(const fg_mm_args *a, const uint8_t *const *rp, size_t t0, size_t nr, size_t b0, const int R,
                        const int B, const int kind, fg_pf *pf) {
  const size_t cols = a->cols, step = kind == 2 ? 32 : 16;
  const size_t xstride = fg_bf16_row_bytes(cols);
  __m512 acc[FG_FT_RMAX][FG_FT_BMAX];
  const float *xf[FG_FT_BMAX];
  const uint8_t *xb[FG_FT_BMAX];
#pragma GCC unroll 8
  for (int b = 0; b < B; b++) {
    xf[b] = a->x + (b0 + (size_t)b) * a->ldx;
    xb[b] = a->act ? (const uint8_t *)a->act + (b0 + (size_t)b) * xstride : NULL; /* no arithmetic on NULL */
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) acc[r][b] = _mm512_setzero_ps();
  }
  const size_t jfull = cols / step * step;
  size_t j = 0;
  if (pf)
    for (; j < jfull; j += step) {
      fg_pf_step(pf);
      fg_fstep(acc, rp, xf, xb, j, step, R, B, kind);
    }
  else
    for (; j < jfull; j += step) fg_fstep(acc, rp, xf, xb, j, step, R, B, kind);
  if (j < cols) fg_fstep(acc, rp, xf, xb, j, cols - j, R, B, kind);
  for (int b = 0; b < B; b++) {
    float *y = a->y + (b0 + (size_t)b) * a->ldy + t0;
    if (R % 4 == 0) {
      for (int g = 0; g * 4 < R && (size_t)g * 4 < nr; g++)
        fg_fold4_store(acc[4 * g][b], acc[4 * g + 1][b], acc[4 * g + 2][b], acc[4 * g + 3][b], y + 4 * g, nr - 4 * (size_t)g);
    } else {
      for (size_t r = 0; r < nr; r++) y[r] = fg_fold16(acc[r][b]);
    }
  }
}

FG_INLINE void fg_frun(const fg_mm_args *a, size_t i0, size_t i1, const int kind, const int R, const int B) {
  const size_t steps = (a->cols + (kind == 2 ? 31 : 15)) / (kind == 2 ? 32 : 16);
  fg_pf_first(a, i0, i1, (size_t)R);
  for (size_t t0 = i0; t0 < i1; t0 += (size_t)R) {
    const size_t nr = FG_MIN((size_t)R, i1 - t0);
    const uint8_t *rp[FG_FT_RMAX];
    fg_tile_rows(a, t0, nr, (size_t)R, rp);
    fg_pf pf;
    fg_pf_init(&pf, a, t0 + (size_t)R, i1, (size_t)R, steps);
    size_t b = 0;
    for (; b + (size_t)B <= a->nb; b += (size_t)B) fg_ftile(a, rp, t0, nr, b, R, B, kind, b == 0 ? &pf : NULL);
    fg_pf *p = b == 0 ? &pf : NULL;
    switch (a->nb - b) { /* B <= 6 */
      case 5: fg_ftile(a, rp, t0, nr, b, R, 5 < B ? 5 : 1, kind, p); break;
      case 4: fg_ftile(a, rp, t0, nr, b, R, 4 < B ? 4 : 1, kind, p); break;
      case 3: fg_ftile(a, rp, t0, nr, b, R, 3 < B ? 3 : 1, kind, p); break;
      case 2: fg_ftile(a, rp, t0, nr, b, R, 2 < B ? 2 : 1, kind, p); break;
      case 1: fg_ftile(a, rp, t0, nr, b, R, 1, kind, p); break;
      default: break;
    }
  }
}
static void fg_f32_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, 0, 8, 1); }
static void fg_f16_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, 1, 8, 1); }
static void fg_bf16_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, 2, 8, 1); }
static void fg_f32_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, 0, 4, 6); }
static void fg_f16_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, 1, 4, 6); }
static void fg_bf16_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_frun(a, i0, i1, 2, 4, 6); }

// ----------------------------------------------------------------------------
// the table

static const fg_kernels k_avx512 = {
    .name = "avx512",
    .vec =
        {
            [FG_TYPE_F32] = {fg_f32_vec, FG_SPEC_FMA, NULL, NULL, 1, 16},
            [FG_TYPE_F16] = {fg_f16_vec, FG_SPEC_FMA, NULL, NULL, 1, 16},
            [FG_TYPE_BF16] = {fg_bf16_vec, FG_SPEC_BF16DP, fg_bf16_rows_size, fg_bf16_rows_prep, 1, 16},
            [FG_TYPE_Q8_0] = {fg_q8_0_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 16},
            [FG_TYPE_Q4_0] = {fg_q4_0_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 16},
            [FG_TYPE_Q4_1] = {fg_q4_1_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 16},
            [FG_TYPE_Q5_0] = {fg_q5_0_vec_direct, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 16},
            [FG_TYPE_Q5_1] = {fg_q5_1_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 16},
            [FG_TYPE_Q2_K] = {fg_q2_k_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 16},
            [FG_TYPE_Q3_K] = {fg_q3_k_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 16},
            [FG_TYPE_Q4_K] = {fg_q4_k_vec_direct, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 16},
            [FG_TYPE_Q5_K] = {fg_q5_k_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 16},
            [FG_TYPE_Q6_K] = {fg_q6_k_vec_direct, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 16},
            [FG_TYPE_IQ4_NL] = {fg_iq4_nl_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 16},
            [FG_TYPE_IQ4_XS] = {fg_iq4_xs_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, 16},
        },
    .gemm =
        {
            [FG_TYPE_F32] = {fg_f32_gemm, FG_SPEC_FMA, NULL, NULL, 1, 16},
            [FG_TYPE_F16] = {fg_f16_gemm, FG_SPEC_FMA, NULL, NULL, 1, 16},
            [FG_TYPE_BF16] = {fg_bf16_gemm, FG_SPEC_BF16DP, fg_bf16_rows_size, fg_bf16_rows_prep, 1, 16},
            [FG_TYPE_Q8_0] = {fg_q8_0_gemm, FG_SPEC_Q8, fg_q8x16_size, fg_q8x16_prep_q8_0, 16, 16},
            [FG_TYPE_Q4_0] = {fg_q4_0_gemm, FG_SPEC_Q8, fg_q8x16_size, fg_q8x16_prep_q4_0, 16, 16},
            [FG_TYPE_Q4_1] = {fg_q4_1_gemm, FG_SPEC_Q8, fg_q8h_size, fg_q8h_prep, 16, 8},
            [FG_TYPE_Q5_0] = {fg_q5_0_gemm, FG_SPEC_Q8, fg_q8h_size, fg_q8h_prep, 16, 8},
            [FG_TYPE_Q5_1] = {fg_q5_1_gemm, FG_SPEC_Q8, fg_q8h_size, fg_q8h_prep, 16, 8},
            [FG_TYPE_Q2_K] = {fg_q2_k_gemm, FG_SPEC_Q8, fg_q8h_size, fg_q8h_prep, 16, 8},
            [FG_TYPE_Q3_K] = {fg_q3_k_gemm, FG_SPEC_Q8, fg_q8h_size, fg_q8h_prep, 16, 8},
            [FG_TYPE_Q4_K] = {fg_q4_k_gemm, FG_SPEC_Q8, fg_q8h_size, fg_q8h_prep, 16, 8},
            [FG_TYPE_Q5_K] = {fg_q5_k_gemm, FG_SPEC_Q8, fg_q8h_size, fg_q8h_prep, 16, 8},
            [FG_TYPE_Q6_K] = {fg_q6_k_gemm, FG_SPEC_Q8, fg_q8h_size, fg_q8h_prep, 16, 8},
            [FG_TYPE_IQ4_NL] = {fg_iq4_nl_gemm, FG_SPEC_Q8, fg_q8h_size, fg_q8h_prep, 16, 8},
            [FG_TYPE_IQ4_XS] = {fg_iq4_xs_gemm, FG_SPEC_Q8, fg_q8h_size, fg_q8h_prep, 16, 8},
        },
    .gemm_min_nb = {[FG_TYPE_F32] = 2, [FG_TYPE_F16] = 2, [FG_TYPE_BF16] = 2, [FG_TYPE_Q8_0] = 5, [FG_TYPE_Q4_0] = 6,
                    [FG_TYPE_Q4_1] = FG_NQ_GEMM_MIN_NB, [FG_TYPE_Q5_0] = FG_NQ_GEMM_MIN_NB, [FG_TYPE_Q5_1] = FG_NQ_GEMM_MIN_NB, [FG_TYPE_Q2_K] = FG_NQ_GEMM_MIN_NB, [FG_TYPE_Q3_K] = FG_NQ_GEMM_MIN_NB, [FG_TYPE_Q4_K] = FG_NQ_GEMM_MIN_NB, [FG_TYPE_Q5_K] = FG_NQ_GEMM_MIN_NB, [FG_TYPE_Q6_K] = FG_NQ_GEMM_MIN_NB, [FG_TYPE_IQ4_NL] = FG_NQ_GEMM_MIN_NB, [FG_TYPE_IQ4_XS] = FG_NQ_GEMM_MIN_NB},
};

const fg_kernels *fg_kernels_avx512(void) { return &k_avx512; }
