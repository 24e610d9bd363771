/* kernels.h — the per-ISA kernel table behind fg_ops, and the reference semantics ("specs") of the
 * fast paths.
 *
 * A table has, per weight type, a `vec` kernel (any number of activations; used for decode) and
 * optionally a `gemm` kernel (used when nb >= gemm_min_nb; register-blocks rows × activations).
 * A kernel may want its activations in another format (Q8 blocks, bf16, transposed tiles): ops
 * allocates act_size(cols, nb) bytes of scratch and calls act_prep once per call before run.
 *
 * Numerical contract of every non-ref kernel: each output y[b][i] is computed by one fixed sequence
 * of operations that depends only on the weight row, the activation row and the kernel family --
 * not on nb, on the tile the output falls in, on row chunking or on the number of threads. Within
 * one table, vec and gemm of a type follow the same spec, so results are batch invariant (a token
 * prefilled in a chunk of 64 gets bit-identical outputs to the same token decoded alone).
 *
 * The specs (plain C, in kernels/ref/spec.c):
 *   fma     (F32/F16/BF16 weights, f32 x): 16 strided partial sums, lane l taking columns
 *           j = l, l+16, l+32, ... (zero padded): s_l = fmaf(w[j], x[j], s_l) in column order; then the
 *           halving tree s_l += s_{l+8}, s_l += s_{l+4}, s_l += s_{l+2}, s_0 += s_1
 *   bf16dp  (BF16 weights, x rounded to bf16; AVX512-BF16): the same with bf16 pairs: lane l takes pairs
 *           p = l, l+16, ... (columns 2p, 2p+1): s_l += w[2p+1]*x[2p+1]; s_l += w[2p]*x[2p] (the
 *           vdpbf16ps order; each product exact in f32, each add rounded; denormal inputs/outputs
 *           flushed to zero); then the same tree
 *   q8      (quantized weights, x quantized to fg_act_q8 blocks of 32): per 32-block k, the integer dot
 *           i_k = sum_j qw_j * qx_j (exact), then s = fmaf(dw_k * dx_k, (float)i_k, s) in block order;
 *           the types beyond Q8_0/Q4_0 scale each half-block's integer dot by an integer sub-scale and
 *           may add a second fmaf for their minimum (fg_spec_block_q8, fg_q8w in tensor/dtype.h)
 * The ref table itself does not use these: it computes exactly fg_vec_dot_ref per output. */
#ifndef FG_KERNELS_H
#define FG_KERNELS_H

#include "fg_internal.h"
#include "tensor/dtype.h"
#include "kernels/ops.h"

#include <stdbool.h>

// ----------------------------------------------------------------------------
// kernel interface

typedef struct fg_mm_args {
  uint32_t type;          /* weight type */
  const uint8_t *w;       /* weight rows, row_bytes apart */
  size_t row_bytes;
  const int32_t *rows;    /* output i reads weight row rows[i]; NULL = row i */
  size_t cols;            /* elements per row (a multiple of the type's block size) */
  const float *x;         /* (nb, ldx) f32 activations */
  size_t ldx;
  const void *act;        /* activations from act_prep, or NULL */
  size_t nb;
  float *y;               /* (nb, ldy): y[b*ldy + i] */
  size_t ldy;
  const uint8_t *packed;  /* the same matrix in the table's packed layout (pack below), or NULL; only read
                             when rows is NULL; w stays valid and is read for rows outside whole strips */
} fg_mm_args;

/* Computes outputs i0 <= i < i1 for every b < nb. */
typedef void (*fg_mm_fn)(const fg_mm_args *a, size_t i0, size_t i1);
/* Scratch bytes for the prepared activations; SIZE_MAX if it does not fit. */
typedef size_t (*fg_act_size_fn)(size_t cols, size_t nb);
/* Prepares activations b0 <= b < b1 (b0, b1 multiples of act_unit, or b1 == nb). */
typedef void (*fg_act_prep_fn)(const float *x, size_t ldx, size_t cols, size_t nb, size_t b0, size_t b1, void *act);

/* Which spec a kernel follows. */
enum {
  FG_SPEC_REF = 0,    /* exactly fg_vec_dot_ref */
  FG_SPEC_FMA = 1,
  FG_SPEC_BF16DP = 2,
  FG_SPEC_Q8 = 3
};

typedef struct fg_mm_kernel {
  fg_mm_fn run;              /* NULL: not provided */
  uint32_t spec;             /* FG_SPEC_* */
  fg_act_size_fn act_size;   /* NULL: the kernel reads x directly */
  fg_act_prep_fn act_prep;
  uint32_t act_unit;         /* activations per act_prep unit */
  uint32_t row_tile;         /* preferred granularity of row ranges */
} fg_mm_kernel;

/* Load-time repacking (avx2: Q8_0, Q5_0, Q5_1, IQ4_NL, Q4_K, Q6_K, IQ4_XS in strips of 8 rows; aarch64 neon_dotprod and neon_i8mm:
 * Q8_0, Q5_0, Q4_K, Q6_K in strips of 16; armv7 neon_dotprod and neon: Q5_0, Q4_K, Q6_K in strips of 4): a table may want a weight matrix copied into a layout of its own
 * (pack_rows-row strips whose rows are interleaved for its int8 instruction; a copy is only read by the
 * table that made it).
 * pack_size: bytes of the packed copy of a rows × cols matrix of type, 0 = this table does not pack
 * it. pack: writes strips r0 / pack_rows .. r1 / pack_rows of the copy (r0, r1 multiples of pack_rows)
 * from the rows of w (row_bytes apart). The vec and gemm kernels of the type then read it through
 * fg_mm_args.packed, with the same spec, bit for bit. */
typedef size_t (*fg_pack_size_fn)(uint32_t type, size_t rows, size_t cols);
typedef void (*fg_pack_fn)(uint32_t type, const uint8_t *w, size_t row_bytes, size_t cols, size_t r0, size_t r1,
                           uint8_t *dst);
/* unpack (optional): writes blocks k0..k1 (the type's blocks) of row `row` of a packed copy back in the
 * file's block format, byte for byte, to dst. Lets the embedding of a tied head, and row lists, read the
 * copy instead of the file pages that repacking handed back. */
typedef void (*fg_unpack_fn)(uint32_t type, const uint8_t *packed, size_t cols, size_t row, size_t k0, size_t k1,
                             uint8_t *dst);

typedef struct fg_kernels {
  const char *name;                      /* "ref", "avx2", "avx512" */
  fg_mm_kernel vec[FG_TYPE_COUNT];
  fg_mm_kernel gemm[FG_TYPE_COUNT];
  uint32_t gemm_min_nb[FG_TYPE_COUNT];   /* use gemm when nb >= this */
  fg_pack_size_fn pack_size;             /* NULL: no packed layouts */
  fg_pack_fn pack;
  fg_unpack_fn unpack;                   /* NULL: the packed copies are not read back */
  uint32_t pack_rows;                    /* rows per strip of the packed layout */
} fg_kernels;

/* The tables. fg_kernels_avx2/avx512 return NULL when not compiled in; they do not check the CPU. */
const fg_kernels *fg_kernels_ref(void);
const fg_kernels *fg_kernels_avx2(void);
const fg_kernels *fg_kernels_avx512(void);

/* The table for an ISA name if it is compiled in AND this CPU supports it, else NULL. */
const fg_kernels *fg_kernels_by_name(const char *isa);
/* The process-wide table: FG_ISA if set (ref|avx2|avx512|auto), else the best supported. Chosen once.
 * An unknown or unsupported FG_ISA is FG_ERR_UNSUPPORTED (every call reports it). */
fg_status fg_kernels_get(const fg_kernels **out, fg_error *err);

/* Test hook: make one fg_ops use a specific table (NULL = the process-wide one). */
void fg_ops_set_kernels(fg_ops *ops, const fg_kernels *k);

// ----------------------------------------------------------------------------
// the q8-spec weight types beyond Q8_0/Q4_0: what a staged block needs beyond isum = sum v x and
// s = fmaf(dw dx, isum, s) (fg_q8w_decode in tensor/dtype.h; shared by the x86 and NEON staging kernels)

enum {
  FG_Q8W_SUB = 1,  /* half-block scales: isum = sa * ia + sb * ib */
  FG_Q8W_MIN1 = 2, /* minimum with ma = mb = 1: s = fmaf(mw dx, sum x, s) */
  FG_Q8W_MIN2 = 4  /* minimum with integer ma, mb (Q2_K): msum = ma * xa + mb * xb */
};

static inline int fg_q8w_flags(uint32_t type) {
  switch (type) {
    case FG_TYPE_Q4_1:
    case FG_TYPE_Q5_1:
    case FG_TYPE_Q4_K:
    case FG_TYPE_Q5_K: return FG_Q8W_MIN1;
    case FG_TYPE_Q6_K:
    case FG_TYPE_Q3_K: return FG_Q8W_SUB;
    case FG_TYPE_Q2_K: return FG_Q8W_SUB | FG_Q8W_MIN2;
    default: return 0; /* Q5_0, IQ4_NL, IQ4_XS */
  }
}

// ----------------------------------------------------------------------------
// prefetch helper shared by the SIMD kernels

#define FG_PF_MAX_ROWS 16

/* Software prefetch of a later row tile (FG_PF_AHEAD tiles on) into L2 while computing this one (many
 * concurrent row streams defeat the hardware prefetchers): its lines are spread evenly over this
 * tile's steps. Measured on Zen 4, one thread, Q8_0 decode from DRAM: 8.5 GB/s without, 17 GB/s into L1,
 * 20 GB/s into L2 (BF16: 12 / 28 / 29). */
typedef struct fg_pf {
  const uint8_t *rows[FG_PF_MAX_ROWS]; /* the prefetched tile's rows */
  size_t n_rows, per_step;
  size_t row, off;         /* next line to prefetch: rows[row] + off */
  size_t row_bytes;
} fg_pf;

#ifndef FG_PF_AHEAD
#define FG_PF_AHEAD 3 /* distance in tiles of the prefetched tile: 2 and 3 measured 1.3-1.5x the GB/s of 1 on
                       * a loaded machine (bench_kernels, head-sized Q4_0/Q8_0 matvec) */
#endif

/* Sets pf up to prefetch the tile of rows t1 .. min(t1 + tile, i1) over `steps` steps. */
static inline void fg_pf_init_at(fg_pf *pf, const fg_mm_args *a, size_t t1, size_t i1, size_t tile, size_t steps) {
  pf->n_rows = t1 < i1 ? FG_MIN(FG_MIN(tile, i1 - t1), (size_t)FG_PF_MAX_ROWS) : 0;
  for (size_t r = 0; r < pf->n_rows; r++) {
    const size_t row = a->rows ? (size_t)a->rows[t1 + r] : t1 + r;
    pf->rows[r] = a->w + row * a->row_bytes;
  }
  pf->row_bytes = a->row_bytes;
  const size_t total = pf->n_rows * ((a->row_bytes + 63) / 64);
  pf->per_step = steps ? (total + steps - 1) / steps : total;
  pf->row = 0;
  pf->off = 0;
}

/* Called for the tile before t1 (t1 = its end): prefetches the tile FG_PF_AHEAD tiles ahead of it. */
static inline void fg_pf_init(fg_pf *pf, const fg_mm_args *a, size_t t1, size_t i1, size_t tile, size_t steps) {
  fg_pf_init_at(pf, a, t1 + (FG_PF_AHEAD - 1) * tile, i1, tile, steps);
}

static inline void fg_pf_step(fg_pf *pf) {
  for (size_t i = 0; i < pf->per_step && pf->row < pf->n_rows; i++) {
    __builtin_prefetch(pf->rows[pf->row] + pf->off, 0, 2);
    pf->off += 64;
    if (pf->off >= pf->row_bytes) {
      pf->off = 0;
      pf->row++;
    }
  }
}

/* Prefetches the first FG_PF_AHEAD tiles of a row range at once (nothing before them warmed them up). */
static inline void fg_pf_first(const fg_mm_args *a, size_t i0, size_t i1, size_t tile) {
  for (size_t t = 0; t < FG_PF_AHEAD && i0 + t * tile < i1; t++) {
    fg_pf pf;
    fg_pf_init_at(&pf, a, i0 + t * tile, i1, tile, 1);
    fg_pf_step(&pf);
  }
}

// ----------------------------------------------------------------------------
// quantized activations: one row of cols elements (cols % 32 == 0), nblk = cols / 32 blocks

typedef struct fg_act_q8_row {
  int8_t *qs;      /* (cols) */
  float *d;        /* (nblk) scale: x ~= qs * d */
  int32_t *isum;   /* (nblk) sum of the block's qs */
} fg_act_q8_row;

/* Bytes of one row (64-byte multiple) and the row's arrays inside base. */
size_t fg_act_q8_row_bytes(size_t cols);
fg_act_q8_row fg_act_q8_row_at(void *base, size_t cols);

// ----------------------------------------------------------------------------
// specs (kernels/ref/spec.c); plain C, the semantics the SIMD kernels are tested against

/* Q8 activation quantization per 32-block: amax = max |x|, d = amax / 127 (0 if amax < 2^-119, where
 * d would not be a normal float), id = d ? 1/d : 0, q = clamp(rint(x * id), -127, 127) (round to
 * nearest even; NaN -> -127), isum = sum q. */
#define FG_ACT_Q8_MIN_AMAX 0x1p-119f
void fg_spec_quantize_act_q8(const float *FG_RESTRICT x, size_t cols, fg_act_q8_row out);
/* q8 spec for a weight row of any quantized type (every type whose blocks are multiples of 32). */
float fg_spec_dot_q8(uint32_t type, const void *FG_RESTRICT w, fg_act_q8_row x, size_t cols);
/* One 32-block step of the q8 spec for the types beyond Q8_0/Q4_0 (q from fg_q8w_decode, qx and dx the
 * activation block): isum = sa * sum_{j<16} v_j qx_j + sb * sum_{j>=16} v_j qx_j (exact),
 * s = fmaf(dw * dx, (float)isum, s); then, with a minimum, msum = ma * sum_{j<16} qx_j + mb * sum_{j>=16} qx_j
 * and s = fmaf(mw * dx, (float)msum, s). Returns the new s. For Q8_0/Q4_0 (sa = sb = 1, no minimum) it
 * is the same as their own step. */
float fg_spec_block_q8(const fg_q8w *FG_RESTRICT q, const int8_t *FG_RESTRICT qx, float dx, float s);
/* The portable q8 kernel (plain C, the spec itself): used by ops for a quantized type that a SIMD table
 * has no kernel of its own for. NULL for types without 32-element blocks. */
const fg_mm_kernel *fg_kernel_q8_generic(uint32_t type);
/* fma spec for an F32, F16 or BF16 weight row (16 strided lanes + halving tree). */
float fg_spec_dot_fma(uint32_t type, const void *FG_RESTRICT w, const float *FG_RESTRICT x, size_t cols);
/* bf16dp spec: w and xb are bf16 rows of cols elements (16 strided pair lanes + halving tree). */
float fg_spec_dot_bf16dp(const uint16_t *FG_RESTRICT w, const uint16_t *FG_RESTRICT xb, size_t cols);

#endif /* FG_KERNELS_H */
