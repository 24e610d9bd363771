/* ref_kernels.c — the portable kernel table: every output is exactly fg_vec_dot_ref(W row, X row),
 * computed in tiles of rows × all activations so that a weight tile is read from memory once. */
#include "kernels/kernels.h"

#define FG_REF_ROW_TILE 16

static void fg_ref_mm(const fg_mm_args *a, size_t i0, size_t i1) {
  for (size_t t0 = i0; t0 < i1; t0 += FG_REF_ROW_TILE) {
    const size_t t1 = FG_MIN(t0 + FG_REF_ROW_TILE, i1);
    for (size_t b = 0; b < a->nb; b++) {
      const float *x = a->x + b * a->ldx; /* (cols) */
      float *y = a->y + b * a->ldy;       /* (n_out) */
      for (size_t i = t0; i < t1; i++) {
        const size_t r = a->rows ? (size_t)a->rows[i] : i;
        y[i] = fg_vec_dot_ref(a->type, a->w + r * a->row_bytes, x, a->cols);
      }
    }
  }
}

#define FG_REF_VEC {fg_ref_mm, FG_SPEC_REF, NULL, NULL, 1, FG_REF_ROW_TILE}

static const fg_kernels k_ref = {
    .name = "ref",
    .vec =
        {
            [FG_TYPE_F32] = FG_REF_VEC,
            [FG_TYPE_F16] = FG_REF_VEC,
            [FG_TYPE_BF16] = FG_REF_VEC,
            [FG_TYPE_Q8_0] = FG_REF_VEC,
            [FG_TYPE_Q4_0] = FG_REF_VEC,
            [FG_TYPE_Q4_1] = FG_REF_VEC,
            [FG_TYPE_Q5_0] = FG_REF_VEC,
            [FG_TYPE_Q5_1] = FG_REF_VEC,
            [FG_TYPE_Q2_K] = FG_REF_VEC,
            [FG_TYPE_Q3_K] = FG_REF_VEC,
            [FG_TYPE_Q4_K] = FG_REF_VEC,
            [FG_TYPE_Q5_K] = FG_REF_VEC,
            [FG_TYPE_Q6_K] = FG_REF_VEC,
            [FG_TYPE_IQ4_NL] = FG_REF_VEC,
            [FG_TYPE_IQ4_XS] = FG_REF_VEC,
        },
};

const fg_kernels *fg_kernels_ref(void) { return &k_ref; }
