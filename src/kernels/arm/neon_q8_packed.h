/* neon_q8_packed.h — packed Q8_0 (aarch64 with SDOT or SMMLA): the strips of 16 rows copied at model load, the
 * decode loop both layouts share, fg_pk_run over a row range, and the Q8_0 / Q4_0 entries of the table
 * (the packed copy where there is one, else the row tiles of neon_q8_tiles.h). */
#ifndef FG_NEON_IMPL_H
#  error "a part of kernels/arm/neon_impl.h (compiled once per NEON table): include that"
#endif

#if FG_NEON_A64 && FG_NEON_HAVE_DOTPROD
// ----------------------------------------------------------------------------
// Packed Q8_0 (aarch64 with SDOT or SMMLA): the rows in strips of 16, copied at model load (kernels.h,
// "load-time repacking"). Per strip and 32-block k, FG_PK_BLOCK bytes: the 16 rows' scales as f32
// (exact conversions of the f16 ones), then the 16 rows' 512 weights interleaved for the table's
// instruction. neon_dotprod (SDOT): for each group g of 4 rows, 128 bytes: for c = 0..7 the 4 weights
// 4c..4c+3 of rows 4g, 4g+1, 4g+2, 4g+3. One SDOT by element of 16 of them with the activation's bytes
// 4c..4c+3 adds a 4-product dot to each row's lane: the lanes are rows, so a block's four row dots need
// no reduction, and one 64-byte load brings the 16 rows' scales. neon_i8mm (SMMLA):
// neon_q8_packed_smmla.h. Each output is still fma(dw * dx, (float)isum, acc) in block order: bit for
// bit the q8 spec.
#  define FG_PK_ROWS 16
#  define FG_PK_BLOCK (16 * 4 + 4 * 128)

/* Q5_0, Q4_K and Q6_K packed strips (fg_px_*, neon_packed_q5k4.h): bytes per 32-element block / 256-element superblock */
#  define FG_PX_Q5_BLOCK (32 + 64 + 256)
#  define FG_PX_K4_HEAD (32 + 32 + 128 + 128)
#  define FG_PX_K4_BLOCK (FG_PX_K4_HEAD + 8 * 256)
#  define FG_PX_Q6_HEAD (32 + 8 * 32)
#  define FG_PX_Q6_BLOCK (FG_PX_Q6_HEAD + 8 * 4 * 96)

static size_t fg_pk_size(uint32_t type, size_t rows, size_t cols) {
  const size_t bb = type == FG_TYPE_Q8_0 ? FG_PK_BLOCK : type == FG_TYPE_Q5_0 ? FG_PX_Q5_BLOCK : type == FG_TYPE_Q4_K ? FG_PX_K4_BLOCK
                    : type == FG_TYPE_Q6_K ? FG_PX_Q6_BLOCK : 0;
  const size_t unit = type == FG_TYPE_Q4_K || type == FG_TYPE_Q6_K ? 256 : 32;
  if (!bb || rows == 0 || rows % FG_PK_ROWS != 0 || cols == 0 || cols % unit != 0) return 0;
  const size_t strips = rows / FG_PK_ROWS, nblk = cols / unit;
  if (nblk > SIZE_MAX / bb / strips) return 0;
  return strips * nblk * bb;
}

/* the scales of rows 4g..4g+3 (r: their blocks) as f32 at o */
FG_NEON_INLINE void fg_pk_scales4(uint8_t *o, const uint8_t *const r[4]) {
  uint16x4_t h = vdup_n_u16(0);
  h = vld1_lane_u16((const uint16_t *)(const void *)r[0], h, 0);
  h = vld1_lane_u16((const uint16_t *)(const void *)r[1], h, 1);
  h = vld1_lane_u16((const uint16_t *)(const void *)r[2], h, 2);
  h = vld1_lane_u16((const uint16_t *)(const void *)r[3], h, 3);
  vst1q_f32((float *)(void *)o, vcvt_f32_f16(vreinterpret_f16_u16(h)));
}

/* The decode loop of both packed tables around their BLOCK16(dx) (one block of 16 rows; dx: the
 * activation scale as an element of v8): per strip the four sums acc0..acc3 start at zero, blocks go in
 * pairs (one loop branch and one load of the two scales per pair), an odd last block alone, then the
 * strip's 16 outputs are stored and the next strip starts over the same activation. Operands p, xq,
 * xd, np, strips, out (the strips' outputs, in turn), xq0, xd0, pairs, odd. */
#  define FG_PK_VEC_LOOP(BLOCK16, acc0, acc1, acc2, acc3)                                                  \
    "0:\n\t"                                                                                               \
    "mov %[xq], %[xq0]\n\t"                                                                                \
    "mov %[xd], %[xd0]\n\t"                                                                                \
    "mov %[np], %[pairs]\n\t"                                                                              \
    "movi " acc0 ".4s, #0\n\t"                                                                             \
    "movi " acc1 ".4s, #0\n\t"                                                                             \
    "movi " acc2 ".4s, #0\n\t"                                                                             \
    "movi " acc3 ".4s, #0\n\t"                                                                             \
    "cbz %[np], 2f\n\t"                                                                                    \
    "1:\n\t"                                                                                               \
    "ld1 {v8.2s}, [%[xd]], #8\n\t"                                                                         \
    BLOCK16("v8.s[0]")                                                                                     \
    BLOCK16("v8.s[1]")                                                                                     \
    "subs %[np], %[np], #1\n\t"                                                                            \
    "b.ne 1b\n\t"                                                                                          \
    "2:\n\t"                                                                                               \
    "cbz %[odd], 3f\n\t"                                                                                   \
    "ld1 {v8.s}[0], [%[xd]]\n\t"                                                                           \
    BLOCK16("v8.s[0]")                                                                                     \
    "3:\n\t"                                                                                               \
    "st1 {" acc0 ".4s, " acc1 ".4s, " acc2 ".4s, " acc3 ".4s}, [%[out]], #64\n\t"                          \
    "subs %[strips], %[strips], #1\n\t"                                                                    \
    "b.ne 0b\n\t"

/* the gemm tiles' sums (v8-v15) start at zero */
#  define FG_PK_ZERO_V8_V15                                                                                \
    "movi v8.4s, #0\n\t"                                                                                   \
    "movi v9.4s, #0\n\t"                                                                                   \
    "movi v10.4s, #0\n\t"                                                                                  \
    "movi v11.4s, #0\n\t"                                                                                  \
    "movi v12.4s, #0\n\t"                                                                                  \
    "movi v13.4s, #0\n\t"                                                                                  \
    "movi v14.4s, #0\n\t"                                                                                  \
    "movi v15.4s, #0\n\t"

/* a gemm tile's outputs without blocks (cols == 0): y[b][0..7] = 0 */
FG_NEON_INLINE void fg_pk_zero84(float *const y[4]) {
  for (int b = 0; b < 4; b++) {
    vst1q_f32(y[b], vdupq_n_f32(0.0f));
    vst1q_f32(y[b] + 4, vdupq_n_f32(0.0f));
  }
}

#  if !FG_NEON_HAVE_I8MM
#    include "kernels/arm/neon_q8_packed_sdot.h"
#  else /* FG_NEON_HAVE_I8MM */
#    include "kernels/arm/neon_q8_packed_smmla.h"
#  endif /* FG_NEON_HAVE_I8MM */

/* Outputs i0 <= i < i1 from the packed copy: whole strips there, the rows around them from a->w. */
static void fg_pk_run(const fg_mm_args *a, size_t i0, size_t i1, const int gemm) {
  const size_t s0 = (i0 + FG_PK_ROWS - 1) / FG_PK_ROWS * FG_PK_ROWS, s1 = i1 / FG_PK_ROWS * FG_PK_ROWS;
  if (s0 >= s1) {
    fg_qrun(a, i0, i1, 0, gemm);
    return;
  }
  if (i0 < s0) fg_qrun(a, i0, s0, 0, gemm);
  const size_t nblk = a->cols / 32, stride = fg_act_q8_row_bytes(a->cols), sbytes = nblk * FG_PK_BLOCK;
  uint8_t *act = (uint8_t *)(uintptr_t)a->act;
#  if FG_NEON_HAVE_I8MM
  /* the activations' SMMLA forms (fg_mm8_rows_prep): groups of 4 wherever vec or gemm runs */
  (void)gemm;
  const size_t nb4 = a->nb / 4 * 4;
  const uint8_t *groups = act + fg_mm8_base(a->cols, a->nb), *singles = groups + nb4 / 4 * nblk * FG_MM8_GROUP;
#  else
  const size_t nb4 = gemm ? a->nb / 4 * 4 : 0;
#  endif
  for (size_t t = s0; nb4 && t < s1; t += FG_PK_ROWS) {
    const uint8_t *p = a->packed + t / FG_PK_ROWS * sbytes;
    for (size_t b = 0; b < nb4; b += 4) {
#  if FG_NEON_HAVE_I8MM
      for (size_t h = 0; h < 2; h++) {
        float *const y[4] = {a->y + b * a->ldy + t + 8 * h, a->y + (b + 1) * a->ldy + t + 8 * h,
                             a->y + (b + 2) * a->ldy + t + 8 * h, a->y + (b + 3) * a->ldy + t + 8 * h};
        fg_pk_gemm84(p, h, groups + b / 4 * nblk * FG_MM8_GROUP, nblk, y);
      }
#  else
      const int8_t *xq[4];
      const float *xd[4];
      for (size_t j = 0; j < 4; j++) {
        const fg_act_q8_row xr = fg_act_q8_row_at(act + (b + j) * stride, a->cols);
        xq[j] = xr.qs;
        xd[j] = xr.d;
      }
      for (size_t g = 0; g < 4; g += 2) {
        float *const y[4] = {a->y + b * a->ldy + t + 4 * g, a->y + (b + 1) * a->ldy + t + 4 * g,
                             a->y + (b + 2) * a->ldy + t + 4 * g, a->y + (b + 3) * a->ldy + t + 4 * g};
        fg_pk_gemm84(p, g, xq, xd, nblk, y);
      }
#  endif
    }
  }
  /* the activations outside groups of 4 (decode: the only one) over all the strips in one call */
  for (size_t b = nb4; b < a->nb; b++) {
    const fg_act_q8_row xr = fg_act_q8_row_at(act + b * stride, a->cols);
#  if FG_NEON_HAVE_I8MM
    const void *xq = singles + (b - nb4) * nblk * FG_MM8_SINGLE;
#  else
    const int8_t *xq = xr.qs;
#  endif
    fg_pk_vec16(a->packed + s0 / FG_PK_ROWS * sbytes, (s1 - s0) / FG_PK_ROWS, xq, xr.d, nblk, a->y + b * a->ldy + s0);
  }
  if (s1 < i1) fg_qrun(a, s1, i1, 0, gemm);
}
#  define FG_Q8_TILE FG_PK_ROWS /* row ranges of whole strips */
#  if FG_NEON_HAVE_I8MM
#    define FG_Q8_ACT fg_mm8_rows_size, fg_mm8_rows_prep, 4 /* the SMMLA forms too, whole groups */
#  else
#    define FG_Q8_ACT fg_q8_rows_size, fg_q8_rows_prep, 1
#  endif
#else
#  define FG_Q8_TILE FG_Q_ROWS
#  define FG_Q8_ACT fg_q8_rows_size, fg_q8_rows_prep, 1
#endif

/* Q8_0 from the packed copy where there is one (aarch64 with SDOT; not for row lists), else from the rows */
FG_NEON_INLINE void fg_q8_0_run(const fg_mm_args *a, size_t i0, size_t i1, const int gemm) {
#if FG_NEON_A64 && FG_NEON_HAVE_DOTPROD
  if (a->packed && !a->rows) {
    fg_pk_run(a, i0, i1, gemm);
    return;
  }
#endif
  fg_qrun(a, i0, i1, 0, gemm);
}

static void fg_q8_0_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_q8_0_run(a, i0, i1, 0); }
static void fg_q4_0_vec(const fg_mm_args *a, size_t i0, size_t i1) { fg_qrun(a, i0, i1, 1, 0); }
static void fg_q8_0_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_q8_0_run(a, i0, i1, 1); }
static void fg_q4_0_gemm(const fg_mm_args *a, size_t i0, size_t i1) { fg_qrun(a, i0, i1, 1, 1); }
