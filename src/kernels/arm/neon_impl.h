/* neon_impl.h — the NEON kernel table, one source for armv7 (AArch32) and aarch64, with and without
 * the dot-product extension. Included by neon_kernels.c (table "neon"), neon_dotprod_kernels.c (table
 * "neon_dotprod", built with +dotprod) and on aarch64 neon_i8mm_kernels.c (table "neon_i8mm", built
 * with +dotprod+i8mm); FG_NEON_TABLE and FG_NEON_TABLE_NAME name the result. Only the int8 products
 * differ between them (neon_i8mm: the packed Q8_0 layout and its kernels).
 *
 * Same specs as the x86 tables (kernels.h), bit for bit:
 *  - F32/F16/BF16 (fma spec): the 16 strided column lanes of the spec are four float32x4 (columns
 *    j..j+3, .., j+12..j+15); R rows × B activations of accumulators; the halving tree finishes each
 *    output. Weights are widened to f32 (F16 by the hardware conversion, BF16 by a shift).
 *  - Q8_0/Q4_0 (q8 spec): activations quantized by the spec's code (aarch64: its operations in NEON); per 32-block, four rows' exact
 *    int8 dots are reduced into the lanes of one int32x4 (lane r = row r), converted, scaled by
 *    dw_r * dx and accumulated with one fused multiply-add in block order.
 *
 * armv7: AArch32 NEON flushes denormal inputs and results to zero (neon_compat.h). A fused
 * multiply-add chain is still exact when every nonzero operand has |v| >= 2^-40: each value is then a
 * multiple of 2^-63, every product and (rounded) partial sum a multiple of 2^-126, so no result can be
 * a nonzero denormal and nothing is flushed. The armv7 kernels check that condition (activation rows
 * and Q8 scales once per call in act_prep, F32/BF16 weights as they stream; F16 weights and Q8_0/Q4_0
 * block scales always meet it) and compute any output that fails it with the plain-C spec (scalar VFP
 * is IEEE). Real model data never gets near 2^-40; the tests' denormal cases do.
 *
 * This file holds the constants and helpers every part uses and the table; the kernels are in the
 * parts it includes, in this order (each needs the ones before it): neon_float.h (F32/F16/BF16),
 * neon_q8_act.h (Q8 activations), neon_q8_dot.h (the int8 dot core), neon_q8_asm.h (the Q8_0 block
 * loops in assembly), neon_q8_tiles.h (the Q8_0/Q4_0 row tiles), neon_q8_packed.h (packed Q8_0, with
 * neon_q8_packed_sdot.h or neon_q8_packed_smmla.h), neon_staged.h (the other q8-spec types, staged)
 * and neon_packed_q5k4.h (packed Q5_0, Q4_K and Q6_K). */
#ifndef FG_NEON_IMPL_H
#define FG_NEON_IMPL_H

#include "kernels/kernels.h"
#include "kernels/arm/neon.h"
#include "kernels/arm/neon_compat.h"

#include <string.h>

#if !FG_NEON_A64 && !defined(__ARM_FP16_FORMAT_IEEE)
#  error "armv7 NEON kernels need the IEEE half-precision format (GCC: -mfp16-format=ieee, set in CMakeLists.txt)"
#endif

#define FG_Q_ROWS 4                    /* rows per int8 tile: one int32x4 of row sums */
#define FG_F_RMAX 4
#define FG_F_BMAX 2
#if FG_NEON_A64
#  define FG_F_VEC_ROWS 4              /* 16 accumulators + 8 operands of 32 registers */
#else
#  define FG_F_VEC_ROWS 2              /* armv7 has 16 q registers */
#endif
#define FG_TINY_BITS 0x2B800000u       /* 2^-40 as f32 bits: the armv7 exactness threshold */

// ----------------------------------------------------------------------------
// helpers

/* kernels.h's Q8 activation row layout, inline: the kernels ask for it per row and tile, and out of line
 * the calls cost 35 M guest instructions of an armv7 tv-270m call (neon_dotprod, 1,980 M). Only here:
 * inlined into the x86 tables too, a tv-270m call on x86 came out about 2 % slower (code layout). */
FG_NEON_INLINE size_t fg_neon_act_row_bytes(size_t cols) {
  const size_t n = cols + cols / 32 * (sizeof(float) + sizeof(int32_t));
  return (n + 63) & ~(size_t)63;
}

FG_NEON_INLINE fg_act_q8_row fg_neon_act_row_at(void *base, size_t cols) {
  uint8_t *p = base;
  const fg_act_q8_row r = {(int8_t *)p, (float *)(void *)(p + cols),
                           (int32_t *)(void *)(p + cols + cols / 32 * sizeof(float))};
  return r;
}
#define fg_act_q8_row_bytes fg_neon_act_row_bytes
#define fg_act_q8_row_at fg_neon_act_row_at

/* Row pointers of one tile; slots past n repeat the first row (computed, never stored). */
FG_NEON_INLINE void fg_tile_rows(const fg_mm_args *a, size_t i0, size_t n, size_t cap, const uint8_t **rp) {
  for (size_t r = 0; r < cap; r++) {
    const size_t i = i0 + (r < n ? r : 0);
    const size_t row = a->rows ? (size_t)a->rows[i] : i;
    rp[r] = a->w + row * a->row_bytes;
  }
}

/* lanes with 0 < |v| < 2^-40 (f32 bits; sign ignored): all ones */
FG_NEON_INLINE uint32x4_t fg_tiny_u32(uint32x4_t bits) {
  return vcltq_u32(vsubq_u32(vshlq_n_u32(bits, 1), vdupq_n_u32(1)), vdupq_n_u32(2 * FG_TINY_BITS - 1));
}

FG_NEON_INLINE int fg_any_u32(uint32x4_t m) {
  const uint32x2_t o = vorr_u32(vget_low_u32(m), vget_high_u32(m));
  return (vget_lane_u32(o, 0) | vget_lane_u32(o, 1)) != 0;
}

#if FG_NEON_FTZ
/* 1 if every element of x[0..n) is 0, inf/NaN or has |x| >= 2^-40 (see the file comment) */
static int fg_f32_row_safe(const float *x, size_t n) {
  uint32x4_t m = vdupq_n_u32(0);
  size_t j = 0;
  for (; j + 4 <= n; j += 4) m = vorrq_u32(m, fg_tiny_u32(vreinterpretq_u32_u8(vld1q_u8((const uint8_t *)(x + j)))));
  int bad = fg_any_u32(m);
  for (; j < n; j++) {
    uint32_t b;
    memcpy(&b, x + j, 4);
    b &= 0x7fffffffu;
    bad |= b != 0 && b < FG_TINY_BITS;
  }
  return !bad;
}
#endif

#include "kernels/arm/neon_float.h"
#include "kernels/arm/neon_q8_act.h"
#include "kernels/arm/neon_q8_dot.h"
#include "kernels/arm/neon_q8_asm.h"
#include "kernels/arm/neon_q8_tiles.h"
#include "kernels/arm/neon_q8_packed.h"
#include "kernels/arm/neon_staged.h"
#include "kernels/arm/neon_packed_q5k4.h"

// ----------------------------------------------------------------------------
// the table

static const fg_kernels k_fg_neon_table = {
    .name = FG_NEON_TABLE_NAME,
    .vec =
        {
            [FG_TYPE_F32] = {fg_f32_vec, FG_SPEC_FMA, FG_F_ACT, 1, FG_F_VEC_ROWS},
            [FG_TYPE_F16] = {fg_f16_vec, FG_SPEC_FMA, FG_F_ACT, 1, FG_F_VEC_ROWS},
            [FG_TYPE_BF16] = {fg_bf16_vec, FG_SPEC_FMA, FG_F_ACT, 1, FG_F_VEC_ROWS},
            [FG_TYPE_Q8_0] = {fg_q8_0_vec, FG_SPEC_Q8, FG_Q8_ACT, FG_Q8_TILE},
            [FG_TYPE_Q4_0] = {fg_q4_0_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q4_1] = {fg_q4_1_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q5_0] = {fg_q5_0_vec_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_PX_TILE},
            [FG_TYPE_Q5_1] = {fg_q5_1_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q2_K] = {fg_q2_k_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q3_K] = {fg_q3_k_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q4_K] = {fg_q4_k_vec_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_PX_TILE},
            [FG_TYPE_Q5_K] = {fg_q5_k_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q6_K] = {fg_q6_k_vec_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_PX_TILE},
            [FG_TYPE_IQ4_NL] = {fg_iq4_nl_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_IQ4_XS] = {fg_iq4_xs_vec, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
        },
    .gemm =
        {
            [FG_TYPE_F32] = {fg_f32_gemm, FG_SPEC_FMA, FG_F_ACT, 1, 2},
            [FG_TYPE_F16] = {fg_f16_gemm, FG_SPEC_FMA, FG_F_ACT, 1, 2},
            [FG_TYPE_BF16] = {fg_bf16_gemm, FG_SPEC_FMA, FG_F_ACT, 1, 2},
            [FG_TYPE_Q8_0] = {fg_q8_0_gemm, FG_SPEC_Q8, FG_Q8_ACT, FG_Q8_TILE},
            [FG_TYPE_Q4_0] = {fg_q4_0_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q4_1] = {fg_q4_1_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q5_0] = {fg_q5_0_gemm_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_PX_TILE},
            [FG_TYPE_Q5_1] = {fg_q5_1_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q2_K] = {fg_q2_k_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q3_K] = {fg_q3_k_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q4_K] = {fg_q4_k_gemm_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_PX_TILE},
            [FG_TYPE_Q5_K] = {fg_q5_k_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_Q6_K] = {fg_q6_k_gemm_any, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_PX_TILE},
            [FG_TYPE_IQ4_NL] = {fg_iq4_nl_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
            [FG_TYPE_IQ4_XS] = {fg_iq4_xs_gemm, FG_SPEC_Q8, fg_q8_rows_size, fg_q8_rows_prep, 1, FG_Q_ROWS},
        },
    .gemm_min_nb = {[FG_TYPE_F32] = 2, [FG_TYPE_F16] = 2, [FG_TYPE_BF16] = 2, [FG_TYPE_Q8_0] = 2, [FG_TYPE_Q4_0] = 2,
                    [FG_TYPE_Q4_1] = 2, [FG_TYPE_Q5_0] = 2, [FG_TYPE_Q5_1] = 2, [FG_TYPE_Q2_K] = 2, [FG_TYPE_Q3_K] = 2,
                    [FG_TYPE_Q4_K] = 2, [FG_TYPE_Q5_K] = 2, [FG_TYPE_Q6_K] = 2, [FG_TYPE_IQ4_NL] = 2, [FG_TYPE_IQ4_XS] = 2},
#if FG_NEON_A64 && FG_NEON_HAVE_DOTPROD
    .pack_size = fg_pk_size,
    .pack = fg_pk_pack,
    .pack_rows = FG_PK_ROWS,
#elif !FG_NEON_A64
    .pack_size = fg_pa_size,
    .pack = fg_pa_pack,
    .pack_rows = FG_PA_ROWS,
#endif
};

const fg_kernels *FG_NEON_TABLE(void) { return &k_fg_neon_table; }

#endif /* FG_NEON_IMPL_H */
