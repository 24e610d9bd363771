/* test_kernels.c — fg_ops and every kernel table this host supports, against the specs in
 * kernels/ref (bit-exact where the spec says so) and against fg_vec_dot_ref with derived bounds.
 * Shapes: 1, 2, 3, 7, 33 blocks of columns (plus odd widths for float types), rows 1..67, nb 1..70,
 * unaligned W/X/Y, padded strides, random and adversarial data, matmul_rows, 1/2/3/5 threads.
 * With FG_ISA set only the process-wide table is tested; FG_ISA=bogus checks that fg_ops_create
 * refuses it. The per-ISA ctest runs (tests/kern.cmake) add --dispatch: the tests that go through the
 * process-wide table (dispatch, threads, argmax, the ref comparisons, matmul_n) with that table, but
 * not its kernel sweep (test_table), which the run without FG_ISA makes for every table already. */
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "tensor/dtype.h"
#include "testutil.h"

#include <float.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

// ----------------------------------------------------------------------------
// data

typedef struct rng { uint64_t s; } rng;
static uint64_t rng_u64(rng *r) { /* splitmix64 */
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static float rng_unif(rng *r) { return (float)((rng_u64(r) >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f; }

/* DATA_OUTLIER also puts the format's legal extremes into the weights of the quantized types (random block
 * bytes, Q8_0 -128, Q6_K scale -128, Q2_K / Q3_K zero scales); DATA_EQUAL: all weights of a row equal;
 * DATA_FLAT: all activations of a row equal (quantized: every value +127 or every value -127) against the
 * weights of DATA_OUTLIER, so that partial sums of products reach their bounds (int16 sums that could
 * saturate show) */
enum { DATA_RANDOM, DATA_ZEROS, DATA_HUGE, DATA_TINY, DATA_OUTLIER, DATA_WIDE, DATA_EQUAL, DATA_FLAT, DATA_COUNT };
static const char *const k_data_name[DATA_COUNT] = {"random", "zeros", "huge", "denormal", "outlier", "wide", "equal",
                                                    "flat"};

/* Fills n floats. For weights (is_w) values stay within what the weight type can represent. */
static void fill(float *v, size_t n, int kind, bool is_w, uint32_t type, rng *r) {
  float big = 1.0f;
  if (kind == DATA_HUGE) {
    /* large but with finite sums of products: weights big, activations moderate */
    if (type == FG_TYPE_F16) big = is_w ? 3.0e4f : 1.0e3f;
    else if (type == FG_TYPE_Q4_1 || type == FG_TYPE_Q5_1) big = is_w ? 3.0e4f : 1.0e6f; /* the fp16 minimum too */
    else if (type != FG_TYPE_F32 && type != FG_TYPE_BF16) big = is_w ? 4.0e5f : 1.0e6f; /* fp16 scales stay finite */
    else big = is_w ? 1.0e15f : 1.0e15f;
  }
  const float equal = rng_unif(r);
  for (size_t i = 0; i < n; i++) {
    float u = rng_unif(r);
    switch (kind) {
      case DATA_EQUAL: v[i] = is_w ? equal : u; break;
      case DATA_FLAT: v[i] = is_w ? ((i % 32 == (size_t)(rng_u64(r) % 32)) ? u * 100.0f : u * 1e-3f) : equal; break;
      case DATA_ZEROS: v[i] = 0.0f; break;
      case DATA_HUGE: v[i] = u * big; break;
      case DATA_TINY: v[i] = is_w ? u : u * 1e-39f; break; /* denormal activations */
      case DATA_OUTLIER: v[i] = (i % 32 == (size_t)(rng_u64(r) % 32)) ? u * 100.0f : u * 1e-3f; break;
      case DATA_WIDE: /* magnitudes 2^-20 .. 2^19 (weights 2^-20 .. 2^9: fp16 scales stay finite) */
        v[i] = u * ldexpf(1.0f, (int)(rng_u64(r) % (is_w ? 30 : 40)) - 20);
        break;
      default: v[i] = u; break;
    }
  }
}

/* aligned_alloc wants a size that is a multiple of the alignment */
static void *amalloc(size_t n) { return aligned_alloc(64, (n + 63) & ~(size_t)63); }

static const uint32_t k_types[] = {FG_TYPE_F32,  FG_TYPE_F16,  FG_TYPE_BF16, FG_TYPE_Q8_0, FG_TYPE_Q4_0,   FG_TYPE_Q4_1,
                                   FG_TYPE_Q5_0, FG_TYPE_Q5_1, FG_TYPE_Q2_K, FG_TYPE_Q3_K, FG_TYPE_Q4_K,   FG_TYPE_Q5_K,
                                   FG_TYPE_Q6_K, FG_TYPE_IQ4_NL, FG_TYPE_IQ4_XS};
#define N_TYPES (sizeof k_types / sizeof k_types[0])

static size_t type_align(uint32_t type) { return type == FG_TYPE_F32 ? 4 : 2; }
static bool type_is_float(uint32_t type) { return type == FG_TYPE_F32 || type == FG_TYPE_F16 || type == FG_TYPE_BF16; }
/* the types the q8 spec covers beyond Q8_0 / Q4_0 */
static bool type_is_q8w(uint32_t type) { return !type_is_float(type) && type != FG_TYPE_Q8_0 && type != FG_TYPE_Q4_0; }
/* columns per block for the shapes: 32 for the float types */
static size_t type_block(uint32_t type) { return type_is_float(type) ? 32 : fg_type_traits_get(type)->block_size; }
/* n * 32 columns rounded up to the type's block */
static size_t type_cols(uint32_t type, size_t n32) {
  const size_t bs = type_block(type);
  return (n32 * 32 + bs - 1) / bs * bs;
}

/* The kernel a table runs for (type, nb): vec or gemm, or the portable q8 kernel where it has neither. */
static const fg_mm_kernel *table_kernel(const fg_kernels *k, uint32_t type, size_t nb) {
  const fg_mm_kernel *kern = &k->vec[type];
  if (k->gemm[type].run && nb >= k->gemm_min_nb[type]) kern = &k->gemm[type];
  if (!kern->run) kern = fg_kernel_q8_generic(type);
  return kern;
}

static uint16_t rand_fp16(rng *r, int max_exp) { /* finite, sign random, exponent field 0 .. max_exp */
  const uint16_t e = (uint16_t)(rng_u64(r) % (uint64_t)(max_exp + 1));
  return (uint16_t)((rng_u64(r) & 0x83ffu) | (uint16_t)(e << 10));
}

/* Adversarial weight rows (DATA_OUTLIER, DATA_FLAT) of the types beyond Q8_0/Q4_0: random bytes (every packed scale,
 * minimum and value pattern is legal) with finite fp16 scales, plus the extremes: Q6_K scale -128 on
 * every sub-block of one block, Q2_K / Q3_K all-zero scales on one block (Q3_K: packed zeros = -32, and
 * the encoding of 0), Q4_K / Q5_K all-63 scales and minimums. */
static void adversarial_row(uint32_t type, uint8_t *w, size_t cols, size_t row, rng *r) {
  const fg_type_traits *t = fg_type_traits_get(type);
  const size_t nb = cols / t->block_size;
  for (size_t i = 0; i < nb * t->type_size; i++) w[i] = (uint8_t)rng_u64(r);
  for (size_t b = 0; b < nb; b++) {
    uint8_t *blk = w + b * t->type_size;
    const int ext = (int)((row + b) % 4); /* which extreme this block gets */
    uint16_t h[2] = {rand_fp16(r, 20), rand_fp16(r, 20)};
    switch (type) {
      case FG_TYPE_Q4_1:
      case FG_TYPE_Q5_1: memcpy(blk, h, 4); break;
      case FG_TYPE_Q5_0:
      case FG_TYPE_IQ4_NL: memcpy(blk, h, 2); break;
      case FG_TYPE_IQ4_XS: memcpy(blk, h, 2); break;
      case FG_TYPE_Q4_K:
      case FG_TYPE_Q5_K:
        memcpy(blk, h, 4);
        if (ext == 0) memset(blk + 4, 0xff, 12);
        break;
      case FG_TYPE_Q6_K:
        memcpy(blk + 208, h, 2);
        if (ext == 0) memset(blk + 192, 0x80, 16);
        break;
      case FG_TYPE_Q3_K:
        memcpy(blk + 108, h, 2);
        if (ext == 0) memset(blk + 96, 0, 12);
        if (ext == 1) { /* every 6-bit scale 32: zero after the -32 offset */
          memset(blk + 96, 0, 8);
          memset(blk + 104, 0xaa, 4);
        }
        break;
      case FG_TYPE_Q2_K:
        memcpy(blk + 80, h, 4);
        if (ext == 0) memset(blk, 0, 16);
        break;
      default: break;
    }
  }
}

// ----------------------------------------------------------------------------
// expected values

/* The activation row's Q8 quantization and per-block amax, kept while the same row (pointer, width and
 * case: g_case bumps per case) is asked for again: a case checks every weight row against each
 * activation row in turn. */
static unsigned g_case;
typedef struct xcache {
  const float *x;
  size_t cols;
  unsigned gen;
  void *q8;     /* fg_act_q8_row of x */
  float *amax;  /* (cols / 32) */
} xcache;
static xcache g_xc;

static const xcache *xcache_get(const float *x, size_t cols) {
  if (g_xc.x != x || g_xc.cols != cols || g_xc.gen != g_case || !g_xc.q8) {
    free(g_xc.q8);
    free(g_xc.amax);
    g_xc.q8 = amalloc(fg_act_q8_row_bytes(cols));
    g_xc.amax = malloc((cols / 32 + 1) * sizeof *g_xc.amax);
    fg_spec_quantize_act_q8(x, cols, fg_act_q8_row_at(g_xc.q8, cols));
    for (size_t k = 0; k < cols / 32; k++) {
      float amax = 0.0f;
      for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[k * 32 + j]));
      g_xc.amax[k] = amax;
    }
    g_xc.x = x;
    g_xc.cols = cols;
    g_xc.gen = g_case;
  }
  return &g_xc;
}

/* What the kernel's spec says output (w row, x row) must be, and the tolerance around it. */
static float spec_value(uint32_t spec, uint32_t type, const void *w, const float *x, size_t cols, double *tol) {
  *tol = 0.0; /* bit-exact unless said otherwise */
  switch (spec) {
    case FG_SPEC_REF: return fg_vec_dot_ref(type, w, x, cols);
    case FG_SPEC_FMA: return fg_spec_dot_fma(type, w, x, cols);
    case FG_SPEC_Q8: {
      return fg_spec_dot_q8(type, w, fg_act_q8_row_at(xcache_get(x, cols)->q8, cols), cols);
    }
    case FG_SPEC_BF16DP: {
      uint16_t *xb = malloc((cols + 1) * sizeof *xb);
      double mag = 0.0;
      for (size_t j = 0; j < cols; j++) {
        xb[j] = fg_f32_to_bf16(x[j]);
        mag += fabs((double)fg_bf16_to_f32(((const uint16_t *)w)[j]) * fg_bf16_to_f32(xb[j]));
      }
      float s = fg_spec_dot_bf16dp(w, xb, cols);
      free(xb);
      /* the hardware may fuse the pair or round in another order than the spec: every add is off
       * by at most one rounding (2^-24 relative) of a partial sum bounded by sum|w*x|, for cols adds
       * on each side; flushed denormals contribute below 1e-37 each */
      *tol = 2.0 * (double)cols * 0x1p-24 * mag + 1e-37 * (double)cols;
      return s;
    }
  }
  return NAN;
}

/* Bound on |kernel - fg_vec_dot_ref| for a kernel of the given spec, derived from the data. */
static double ref_bound(uint32_t spec, uint32_t type, const void *w, const float *x, size_t cols) {
  const double u = 0x1p-24;
  float *wf = malloc(cols * sizeof *wf);
  fg_dequantize_row(type, w, wf, cols);
  double mag = 0.0; /* sum |w_j x_j| */
  for (size_t j = 0; j < cols; j++) mag += fabs((double)wf[j] * x[j]);
  double b = 0.0;
  switch (spec) {
    case FG_SPEC_REF: b = 0.0; break;
    case FG_SPEC_FMA:
      /* two sequential f32 sums of the same products (one fused, one not): each within cols*u*mag of
       * the exact value */
      b = 2.0 * (double)cols * u * mag;
      break;
    case FG_SPEC_BF16DP: {
      /* x rounded to bf16 (8 significant bits, unit roundoff 2^-8): |dx| <= 2^-8 |x| (or 2^-126 when
       * flushed as a denormal); then the bf16dp
       * accumulation (2 * cols * u * mag, see spec_value) and the ref's own (cols * u * mag) */
      double qerr = 0.0;
      for (size_t j = 0; j < cols; j++) qerr += fabs(wf[j]) * (0x1p-8 * fabs(x[j]) + 0x1p-126);
      b = qerr + 3.0 * (double)cols * u * mag * (1.0 + 0x1p-8);
    } break;
    case FG_SPEC_Q8: {
      /* activation quantization: x_j = q_j d + e_j with |e_j| <= d (0.5 + 128u) + 2u|x_j| (rint error,
       * 1/d and x*id roundings); the block sums: nblk+2 roundings of terms bounded by
       * sum_k |dw dx| sum_j |qw qx| <= mag + the quantization error; the ref: cols * u * mag.
       * Second-order terms are covered by the final factor 2. */
      double qerr = 0.0;
      const float *amaxs = xcache_get(x, cols)->amax;
      for (size_t k = 0; k < cols / 32; k++) {
        const float amax = amaxs[k];
        const double d = amax / 127.0;
        for (int j = 0; j < 32; j++)
          qerr += fabs(wf[k * 32 + j]) * (amax < FG_ACT_Q8_MIN_AMAX ? fabs(x[k * 32 + j]) /* flushed block */
                                                                     : d * (0.5 + 128 * u) + 2 * u * fabs(x[k * 32 + j]));
      }
      b = 2.0 * (qerr + ((double)(cols / 32) + 2.0) * u * (mag + qerr) + (double)cols * u * mag);
    } break;
  }
  free(wf);
  /* relative bounds fail in the subnormal range, where each rounding is off by up to 2^-150
   * absolute: add that per operation; bf16dp flushes partial sums below 2^-126 (each < 2^-126 lost);
   * q8 scales dw*dx may be subnormal (2^-150 times |isum| <= 2^19 per block) */
  double floor_abs = (double)cols * 0x1p-147;
  if (spec == FG_SPEC_BF16DP) floor_abs += (double)cols * 0x1p-125;
  if (spec == FG_SPEC_Q8) floor_abs += (double)(cols / 32) * 0x1p-130;
  return b + floor_abs;
}

// ----------------------------------------------------------------------------
// one matmul case

typedef struct mm_case {
  uint32_t type;
  size_t rows, cols, nb;
  size_t ldx, ldy;      /* >= cols, >= n_out */
  size_t row_pad;       /* extra bytes per weight row */
  size_t w_off, x_off, y_off; /* misalignment in bytes / floats */
  int data;
  bool use_rows;        /* matmul_rows with a shuffled row list */
} mm_case;

static int g_mismatch_reports;
static double g_worst_ratio; /* max |got - ref| / bound over a table+type, reported */
static int g_spec_inexact;    /* outputs of a tolerance spec that were not bit-exact */
static int g_packed_cases;    /* cases also run from a packed copy */

/* A table with a packed layout for W (kernels.h, load-time repacking): the product from the packed copy
 * equals the one from the rows (already checked against the spec) bit for bit, through fg_ops and
 * through the kernel called directly on row ranges that cut strips, including empty ones. */
static void check_packed(fg_ops *ops, const fg_kernels *k, const mm_case *c, const fg_mat *W, const float *x,
                         const float *want) {
  const size_t sz = k->pack_size ? k->pack_size(c->type, c->rows, c->cols) : 0;
  if (!sz) return;
  CHECK(k->pack != NULL && k->pack_rows > 0 && c->rows % k->pack_rows == 0);
  uint8_t *pk = amalloc(sz);
  memset(pk, 0x5A, sz);
  k->pack(c->type, W->data, W->row_bytes, c->cols, 0, c->rows, pk);
  fg_mat P = *W;
  P.packed = pk;
  P.packed_for = k;
  float *y = malloc(c->ldy * c->nb * sizeof *y);
  for (size_t i = 0; i < c->ldy * c->nb; i++) y[i] = -777.0f;
  CHECK_OK(fg_ops_matmul(ops, &P, x, c->ldx, c->nb, y, c->ldy));
  int bad = 0;
  for (size_t b = 0; b < c->nb; b++)
    for (size_t i = 0; i < c->rows; i++) {
      const float g = y[b * c->ldy + i], w = want[b * c->ldy + i];
      bad += memcmp(&g, &w, sizeof g) != 0;
    }
  CHECK_MSG(!bad, "%s %s packed: %d of %zu outputs differ from the unpacked ones (rows=%zu cols=%zu nb=%zu)", k->name,
            fg_type_traits_get(c->type)->name, bad, c->rows * c->nb, c->rows, c->cols, c->nb);
  /* the kernel itself on ranges around strip edges */
  const fg_mm_kernel *kern = table_kernel(k, c->type, c->nb);
  void *act = NULL;
  if (kern->act_size) {
    act = amalloc(kern->act_size(c->cols, c->nb));
    kern->act_prep(x, c->ldx, c->cols, c->nb, 0, c->nb, act);
  }
  const size_t pr = k->pack_rows, ranges[][2] = {{1, c->rows - 1}, {pr / 2, c->rows}, {0, pr + 3}, {pr, pr},
                                                 {3, 5}, {0, c->rows}};
  for (size_t ri = 0; ri < sizeof ranges / sizeof ranges[0]; ri++) {
    const size_t i0 = ranges[ri][0], i1 = FG_MIN(ranges[ri][1], c->rows);
    if (i0 > i1) continue;
    for (size_t i = 0; i < c->ldy * c->nb; i++) y[i] = -777.0f;
    const fg_mm_args a = {c->type, W->data, W->row_bytes, NULL, c->cols, x, c->ldx, act, c->nb, y, c->ldy, pk};
    kern->run(&a, i0, i1);
    bad = 0;
    for (size_t b = 0; b < c->nb; b++)
      for (size_t i = 0; i < c->rows; i++) {
        const float g = y[b * c->ldy + i], w = want[b * c->ldy + i];
        bad += i >= i0 && i < i1 ? memcmp(&g, &w, sizeof g) != 0 : g != -777.0f;
      }
    CHECK_MSG(!bad, "%s %s packed rows [%zu, %zu): %d outputs wrong or written outside (rows=%zu cols=%zu nb=%zu)",
              k->name, fg_type_traits_get(c->type)->name, i0, i1, bad, c->rows, c->cols, c->nb);
  }
  /* a row list (rows in reverse order) with the copy: the table reads it back (unpack) or the rows */
  if (c->nb < 4) {
    int32_t *list = malloc(c->rows * sizeof *list);
    for (size_t i = 0; i < c->rows; i++) list[i] = (int32_t)(c->rows - 1 - i);
    for (size_t i = 0; i < c->ldy * c->nb; i++) y[i] = -777.0f;
    const fg_mm_args a = {c->type, W->data, W->row_bytes, list, c->cols, x, c->ldx, act, c->nb, y, c->ldy, pk};
    kern->run(&a, 0, c->rows);
    bad = 0;
    for (size_t b = 0; b < c->nb; b++)
      for (size_t i = 0; i < c->rows; i++) {
        const float g = y[b * c->ldy + i], w = want[b * c->ldy + (size_t)list[i]];
        bad += memcmp(&g, &w, sizeof g) != 0;
      }
    CHECK_MSG(!bad, "%s %s packed, row list: %d outputs wrong (rows=%zu cols=%zu nb=%zu)", k->name,
              fg_type_traits_get(c->type)->name, bad, c->rows, c->cols, c->nb);
    free(list);
  }
  /* unpack gives the file's bytes back: whole rows, and blocks 1.. of each */
  if (k->unpack) {
    const fg_type_traits *tt = fg_type_traits_get(c->type);
    const size_t nblk = c->cols / tt->block_size;
    uint8_t *row = malloc(W->row_bytes);
    int diff = 0;
    for (size_t i = 0; i < c->rows; i++) {
      memset(row, 0xA5, W->row_bytes);
      k->unpack(c->type, pk, c->cols, i, 0, nblk, row);
      diff += memcmp(row, (const uint8_t *)W->data + i * W->row_bytes, nblk * tt->type_size) != 0;
      k->unpack(c->type, pk, c->cols, i, nblk / 2, nblk, row);
      diff += memcmp(row, (const uint8_t *)W->data + i * W->row_bytes + nblk / 2 * tt->type_size,
                     (nblk - nblk / 2) * tt->type_size) != 0;
    }
    CHECK_MSG(!diff, "%s %s unpack: %d rows differ from the file's bytes", k->name, tt->name, diff);
    free(row);
  }
  free(act);
  free(y);
  free(pk);
  g_packed_cases++;
}

static void run_case(fg_ops *ops, const fg_kernels *k, const mm_case *c, rng *r) {
  uint64_t rb64;
  FG_ASSERT(fg_type_row_bytes(c->type, c->cols, &rb64));
  const size_t row_bytes = (size_t)rb64 + c->row_pad;
  const size_t n_out = c->use_rows ? c->rows + 5 : c->rows;
  g_case++;

  uint8_t *wbuf = amalloc(c->w_off + row_bytes * c->rows + 64);
  uint8_t *w = wbuf + c->w_off; /* (rows, row_bytes) */
  float *tmp = malloc(c->cols * sizeof *tmp);
  for (size_t i = 0; i < c->rows; i++) {
    fill(tmp, c->cols, c->data, true, c->type, r);
    fg_quantize_row(c->type, tmp, w + i * row_bytes, c->cols);
    const bool extremes = c->data == DATA_OUTLIER || c->data == DATA_FLAT;
    if (type_is_q8w(c->type) && extremes) adversarial_row(c->type, w + i * row_bytes, c->cols, i, r);
    if (c->type == FG_TYPE_Q8_0 && extremes) /* -128: legal in the format, never produced by quantize */
      for (size_t kb = 0; kb < c->cols / 32; kb++) ((fg_block_q8_0 *)(void *)(w + i * row_bytes))[kb].qs[(i + kb) % 32] = -128;
    memset(w + i * row_bytes + rb64, 0xA5, c->row_pad); /* padding must never be read as data */
  }
  float *xbuf = amalloc((c->x_off + c->ldx * c->nb + 16) * sizeof(float));
  float *x = xbuf + c->x_off; /* (nb, ldx) */
  for (size_t b = 0; b < c->nb; b++) {
    fill(x + b * c->ldx, c->cols, c->data, false, c->type, r);
    for (size_t j = c->cols; j < c->ldx; j++) x[b * c->ldx + j] = NAN; /* stride gap must be ignored */
  }
  const size_t ny = c->y_off + c->ldy * c->nb + 16;
  float *ybuf = amalloc(ny * sizeof(float));
  for (size_t i = 0; i < ny; i++) ybuf[i] = -777.0f;
  float *y = ybuf + c->y_off; /* (nb, ldy) */
  int32_t *rows = NULL;
  if (c->use_rows) {
    rows = malloc(n_out * sizeof *rows);
    for (size_t i = 0; i < n_out; i++) rows[i] = (int32_t)(rng_u64(r) % c->rows);
    rows[0] = (int32_t)(c->rows - 1);
  }

  fg_mat W = {c->type, (uint32_t)c->rows, (uint32_t)c->cols, row_bytes, w, NULL, NULL};
  if (c->use_rows) CHECK_OK(fg_ops_matmul_rows(ops, &W, rows, n_out, x, c->ldx, c->nb, y, c->ldy));
  else CHECK_OK(fg_ops_matmul(ops, &W, x, c->ldx, c->nb, y, c->ldy));

  const fg_mm_kernel *kern = table_kernel(k, c->type, c->nb);
  int bad = 0;
  for (size_t b = 0; b < c->nb && !bad; b++) {
    for (size_t i = 0; i < n_out && !bad; i++) {
      const size_t wr = rows ? (size_t)rows[i] : i;
      const void *wrow = w + wr * row_bytes;
      const float *xr = x + b * c->ldx;
      const float got = y[b * c->ldy + i];
      double tol;
      const float want = spec_value(kern->spec, c->type, wrow, xr, c->cols, &tol);
      const float ref = fg_vec_dot_ref(c->type, wrow, xr, c->cols);
      const double rb = ref_bound(kern->spec, c->type, wrow, xr, c->cols);
      const bool ok_spec = tol == 0.0 ? (got == want || (isnan(got) && isnan(want))) : fabs((double)got - want) <= tol;
      const bool ok_ref = fabs((double)got - ref) <= rb;
      if (fabs((double)got - ref) / rb > g_worst_ratio) g_worst_ratio = fabs((double)got - ref) / rb;
      if (tol != 0.0 && got != want) g_spec_inexact++;
      if (!ok_spec || !ok_ref) {
        bad = 1;
        if (g_mismatch_reports++ < 20)
          fprintf(stderr,
                  "  mismatch [%s %s %s] rows=%zu cols=%zu nb=%zu thr=%u%s: first at b=%zu i=%zu: got %.9g, spec %.9g "
                  "(tol %.3g), ref %.9g (bound %.3g)\n",
                  k->name, fg_type_traits_get(c->type)->name, k_data_name[c->data], c->rows, c->cols, c->nb,
                  fg_ops_n_threads(ops), c->use_rows ? " rows" : "", b, i, got, want, tol, ref, rb);
      }
    }
  }
  CHECK_MSG(!bad, "%s %s matmul mismatch (see above)", k->name, fg_type_traits_get(c->type)->name);
  /* nothing outside the output rows was written */
  int clobbered = 0;
  for (size_t i = 0; i < c->y_off; i++) clobbered |= ybuf[i] != -777.0f;
  for (size_t b = 0; b < c->nb; b++)
    for (size_t i = n_out; i < (b + 1 < c->nb ? c->ldy : n_out + 16); i++) clobbered |= y[b * c->ldy + i] != -777.0f;
  CHECK_MSG(!clobbered, "%s %s: wrote outside Y", k->name, fg_type_traits_get(c->type)->name);
  if (!c->use_rows) check_packed(ops, k, c, &W, x, y);

  free(rows);
  free(ybuf);
  free(xbuf);
  free(tmp);
  free(wbuf);
}

// ----------------------------------------------------------------------------
// invariances: thread count and batch size must not change any output bit

static void check_invariance(fg_ops *const *ops_by_threads, size_t n_ops, const fg_kernels *k, uint32_t type, rng *r) {
  const size_t rows = 67, cols = type_cols(type, 7), nb = 37;
  uint64_t rb;
  FG_ASSERT(fg_type_row_bytes(type, cols, &rb));
  uint8_t *w = amalloc(rb * rows + 64);
  float *tmp = malloc(cols * sizeof *tmp);
  for (size_t i = 0; i < rows; i++) {
    fill(tmp, cols, DATA_RANDOM, true, type, r);
    fg_quantize_row(type, tmp, w + i * rb, cols);
  }
  float *x = malloc(nb * cols * sizeof *x);
  fill(x, nb * cols, DATA_WIDE, false, type, r);
  float *y0 = malloc(nb * rows * sizeof *y0), *y1 = malloc(nb * rows * sizeof *y1);
  fg_mat W = {type, rows, cols, (size_t)rb, w, NULL, NULL};
  for (size_t t = 0; t < n_ops; t++) fg_ops_set_kernels(ops_by_threads[t], k);
  CHECK_OK(fg_ops_matmul(ops_by_threads[0], &W, x, cols, nb, y0, rows));
  for (size_t t = 1; t < n_ops; t++) {
    CHECK_OK(fg_ops_matmul(ops_by_threads[t], &W, x, cols, nb, y1, rows));
    CHECK_MSG(memcmp(y0, y1, nb * rows * sizeof *y0) == 0, "%s %s: %u threads differ from 1 thread", k->name,
              fg_type_traits_get(type)->name, fg_ops_n_threads(ops_by_threads[t]));
  }
  /* every activation alone (the decode path) and in sub-batches must give the same bits */
  const size_t sub[] = {1, 2, 5, 16, 33};
  for (size_t s = 0; s < sizeof sub / sizeof sub[0]; s++) {
    for (size_t b0 = 0; b0 < nb; b0 += sub[s]) {
      const size_t n = FG_MIN(sub[s], nb - b0);
      CHECK_OK(fg_ops_matmul(ops_by_threads[s % n_ops], &W, x + b0 * cols, cols, n, y1 + b0 * rows, rows));
    }
    size_t first = SIZE_MAX;
    for (size_t i = 0; i < nb * rows && first == SIZE_MAX; i++)
      if (memcmp(&y0[i], &y1[i], sizeof(float)) != 0) first = i;
    CHECK_MSG(first == SIZE_MAX, "%s %s: batches of %zu differ from one batch of %zu at b=%zu i=%zu: %.9g vs %.9g",
              k->name, fg_type_traits_get(type)->name, sub[s], nb, first / rows, first % rows,
              first == SIZE_MAX ? 0.0 : y1[first], first == SIZE_MAX ? 0.0 : y0[first]);
  }
  free(y1);
  free(y0);
  free(x);
  free(tmp);
  free(w);
}

// ----------------------------------------------------------------------------
// a whole table

/* FG_TEST_KERNEL_TYPES=name,name,...: only these types in test_table (the ThreadSanitizer run, which
 * checks the thread pool and needs no type but the ones whose kernels differ in threading: 10 min -> 2).
 * Under an emulator (FG_TEST_EMULATED: the ARM runs under qemu-user) the plain-C tables (ref, and the
 * portable q8 kernel, "generic") run the real Q4_K_M file's types and the two file formats of the q8
 * spec only: their code is the same C that the native runs test with every type, and the NEON tables,
 * which the ARM runs are for, still get every type (armv7: 80 + 58 of test_kernels' emulated CPU
 * seconds were these two tables). The ASan run sets it too; there fg_vec_dot_ref, the oracle of every
 * table, still runs every type. */
static const char *g_table_types; /* the current table's selection, or NULL */
static bool g_emulated;            /* FG_TEST_EMULATED */
#define EMULATED_C_TYPES "f32,f16,q8_0,q4_0,q5_0,q4_k,q6_k"

static bool type_selected(uint32_t type) {
  const char *sel = getenv("FG_TEST_KERNEL_TYPES");
  if (!sel || !sel[0]) sel = g_table_types;
  if (!sel || !sel[0]) return true;
  const char *name = fg_type_name(type);
  const size_t n = strlen(name);
  for (const char *p = sel; (p = strstr(p, name)) != NULL; p += n)
    if ((p == sel || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return true;
  return false;
}

/* only_q8w: just the types beyond Q8_0 / Q4_0 (the table of the portable q8 kernel) */
static void test_table(fg_ops *const *ops, size_t n_ops, const fg_kernels *k, bool only_q8w, rng *r) {
  fprintf(stderr, "table %s\n", k->name);
  static const size_t blocks[] = {1, 2, 3, 7, 33};
  static const size_t odd_cols[] = {1, 3, 17, 31, 33, 47, 100};
  static const size_t nbs[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 70};
  static const size_t rowss[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 67};
  for (size_t t = 0; t < n_ops; t++) fg_ops_set_kernels(ops[t], k);
  size_t ci = 0;
  for (size_t ti = 0; ti < N_TYPES; ti++) {
    const uint32_t type = k_types[ti];
    if ((only_q8w && !type_is_q8w(type)) || !type_selected(type)) continue;
    const clock_t t_start = clock();
    const bool is_q = !type_is_float(type);
    const size_t bs = type_block(type);
    /* a table without its own kernel for the type runs the portable q8 kernel, which the "generic" table
     * tests in full: here fewer shapes (the ARM tables run under qemu) */
    const bool fallback = !k->vec[type].run && strcmp(k->name, "generic") != 0;
    const size_t n_cols = sizeof blocks / sizeof blocks[0] + (is_q ? 0 : sizeof odd_cols / sizeof odd_cols[0]);
    for (size_t cj = 0; cj < (fallback ? 2 : n_cols); cj++) {
      const size_t cols = cj < 5 ? blocks[cj] * bs : odd_cols[cj - 5];
      for (size_t ni = 0; ni < sizeof nbs / sizeof nbs[0]; ni++, ci++) {
        mm_case c;
        memset(&c, 0, sizeof c);
        c.type = type;
        c.cols = cols;
        c.nb = nbs[ni];
        if (cols > 300 && c.nb > 17 && ni % 3 != 0) continue; /* keep big shapes few */
        if (cols > 2048 && ni % 4 != 0) continue; /* 33 super-blocks of 256 */
        if (cols >= 1024 && ni % 2 != 0) continue;
        c.rows = rowss[(ci * 7 + ni) % (sizeof rowss / sizeof rowss[0])];
        c.ldx = cols + (ci % 3 == 0 ? 0 : ci % 5 + 1);
        c.ldy = c.rows + 5 + (ci % 2 == 0 ? 0 : ci % 7 + 1); /* +5: room for matmul_rows */
        c.row_pad = ci % 4 == 1 ? type_align(type) * 3 : 0;
        c.w_off = type_align(type) * (ci % 9);
        c.x_off = ci % 13;
        c.y_off = ci % 11;
        c.data = (int)(ci % DATA_COUNT);
        c.use_rows = ci % 5 == 3;
        run_case(ops[ci % n_ops], k, &c, r);
      }
    }
    /* wider than one staged column segment of the int8 / f16 kernels (2048 / 256 columns) */
    static const size_t wide_nb[] = {1, 3, 17, 40};
    for (size_t wi = 0; wi < (fallback ? 1 : sizeof wide_nb / sizeof wide_nb[0]); wi++, ci++) {
      mm_case c;
      memset(&c, 0, sizeof c);
      c.type = type;
      c.cols = type_cols(type, 70);
      c.rows = 9 + wi * 7;
      c.nb = wide_nb[wi];
      c.ldx = c.cols + 3;
      c.ldy = c.rows + 5;
      c.data = (int)(wi % 2 == 0 ? DATA_RANDOM : DATA_WIDE);
      c.use_rows = wi == 2;
      run_case(ops[ci % n_ops], k, &c, r);
    }
    /* every row count 1..67 at a small width */
    for (size_t rows = 1; rows <= 67; rows += fallback ? 5 : 1, ci++) {
      mm_case c;
      memset(&c, 0, sizeof c);
      c.type = type;
      c.cols = type_cols(type, 2);
      c.rows = rows;
      c.nb = nbs[rows % (bs > 32 ? 11 : sizeof nbs / sizeof nbs[0])]; /* 256-element blocks: nb <= 17 */
      c.ldx = c.cols;
      c.ldy = rows + 5;
      c.w_off = type_align(type);
      c.data = DATA_RANDOM;
      c.use_rows = rows % 4 == 0;
      run_case(ops[ci % n_ops], k, &c, r);
    }
    /* shapes a packed layout takes (whole strips of 16 rows), every data kind, decode and gemm widths: for
     * the tables and types that have one (the general cases above reach it too, where rows allow); the
     * K-quants in superblocks of 256; under an emulator Q6_K every third shape (every row count, width, width of
     * the batch and data kind still comes; the CI's ARM time) */
    static const size_t pk_rows[] = {16, 32, 48, 80}, pk_blocks[] = {1, 2, 5, 20}, pk_nb[] = {1, 2, 3, 4, 5, 8, 9, 13};
    const size_t pk_unit = fg_type_traits_get(type)->block_size, pk_step = g_emulated && type == FG_TYPE_Q6_K ? 3 : 1;
    const bool packs = k->pack_size && k->pack_size(type, 16, pk_unit) > 0;
    for (size_t pi = 0; packs && pi < 4 * 4 * 8; pi += pk_step, ci++) {
      mm_case c;
      memset(&c, 0, sizeof c);
      c.type = type;
      c.rows = pk_rows[pi % 4];
      c.cols = pk_unit * (pk_unit > 32 ? (pi / 4 % 4) % 3 + 1 : pk_blocks[pi / 4 % 4]);
      c.nb = pk_nb[pi / 16];
      c.ldx = c.cols + pi % 3;
      c.ldy = c.rows + 5 + pi % 2;
      c.row_pad = pi % 7 == 1 ? type_align(type) * 3 : 0;
      c.w_off = type_align(type) * (pi % 5);
      c.data = (int)(pi % DATA_COUNT);
      run_case(ops[ci % n_ops], k, &c, r);
    }
    check_invariance(ops, n_ops, k, type, r);
    fprintf(stderr, "  %-6s %-5s worst |got-ref|/bound %.3f%s", k->name, fg_type_traits_get(type)->name, g_worst_ratio,
            g_spec_inexact ? " (tolerance spec: some outputs not bit-exact)" : "");
    if (g_packed_cases) fprintf(stderr, "; %d cases also from the packed layout", g_packed_cases);
    fprintf(stderr, " (%.2f s cpu)", (double)(clock() - t_start) / CLOCKS_PER_SEC);
    fprintf(stderr, "\n");
    g_packed_cases = 0;
    g_worst_ratio = 0.0;
    g_spec_inexact = 0;
  }
}

// ----------------------------------------------------------------------------
// the ref table is bit-exact with fg_vec_dot_ref, whatever the threads

static void test_ref_exact(fg_ops *const *ops, size_t n_ops, rng *r) {
  const fg_kernels *k = fg_kernels_ref();
  for (size_t t = 0; t < n_ops; t++) fg_ops_set_kernels(ops[t], k);
  for (size_t ti = 0; ti < N_TYPES; ti++) {
    const uint32_t type = k_types[ti];
    const size_t rows = 130, cols = type_cols(type, 3), nb = 9;
    uint64_t rb;
    FG_ASSERT(fg_type_row_bytes(type, cols, &rb));
    uint8_t *w = malloc(rb * rows);
    float *tmp = malloc(cols * sizeof *tmp), *x = malloc(nb * cols * sizeof *x), *y = malloc(nb * rows * sizeof *y);
    for (size_t i = 0; i < rows; i++) {
      fill(tmp, cols, DATA_RANDOM, true, type, r);
      fg_quantize_row(type, tmp, w + i * rb, cols);
    }
    fill(x, nb * cols, DATA_RANDOM, false, type, r);
    fg_mat W = {type, rows, cols, (size_t)rb, w, NULL, NULL};
    for (size_t t = 0; t < n_ops; t++) {
      memset(y, 0, nb * rows * sizeof *y);
      CHECK_OK(fg_ops_matmul(ops[t], &W, x, cols, nb, y, rows));
      int exact = 1;
      for (size_t b = 0; b < nb; b++)
        for (size_t i = 0; i < rows; i++) {
          const float want = fg_vec_dot_ref(type, w + i * rb, x + b * cols, cols);
          exact &= memcmp(&want, &y[b * rows + i], sizeof want) == 0;
        }
      CHECK_MSG(exact, "ref %s with %u threads is not bit-exact with fg_vec_dot_ref", fg_type_traits_get(type)->name,
                fg_ops_n_threads(ops[t]));
    }
    free(y);
    free(x);
    free(tmp);
    free(w);
  }
}

// ----------------------------------------------------------------------------
// parallel_for and argument checks

typedef struct pfor_state {
  _Atomic int *hits;
  _Atomic int calls;
  _Atomic int bad;
  _Atomic int bad_part; /* a range that is not one of the parts */
  uint32_t n_threads;
  size_t n, parts;      /* the split expected: part p = [n p / parts, n (p + 1) / parts) */
} pfor_state;

static void pfor_fn(void *ud, size_t i0, size_t i1, uint32_t ith) {
  pfor_state *s = ud;
  atomic_fetch_add(&s->calls, 1);
  if (i0 >= i1 || ith >= s->n_threads) atomic_store(&s->bad, 1);
  for (size_t i = i0; i < i1; i++) atomic_fetch_add(&s->hits[i], 1);
  bool part = false;
  for (size_t p = 0; p < s->parts; p++) part |= i0 == s->n * p / s->parts && i1 == s->n * (p + 1) / s->parts;
  if (!part) atomic_store(&s->bad_part, 1);
}

static void test_parallel_for(fg_ops *const *ops, size_t n_ops) {
  static const size_t ns[] = {0, 1, 2, 3, 4, 5, 7, 9, 10, 100, 1001};
  for (size_t t = 0; t < n_ops; t++) {
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
      const size_t n = ns[ni];
      pfor_state s;
      s.hits = calloc(n + 1, sizeof *s.hits);
      atomic_init(&s.calls, 0);
      atomic_init(&s.bad, 0);
      atomic_init(&s.bad_part, 0);
      s.n_threads = fg_ops_n_threads(ops[t]);
      /* the ranges are min(n, threads) parts that differ by one item at most, the larger ones last (9 items
       * on 4 threads: 2, 2, 2, 3, not 3, 3, 3 and an idle thread); one range on one thread or for one item */
      s.n = n;
      s.parts = s.n_threads == 1 || n <= 1 ? FG_MIN(n, (size_t)1) : FG_MIN(n, (size_t)s.n_threads);
      for (int rep = 0; rep < 50; rep++) fg_ops_parallel_for(ops[t], n, pfor_fn, &s);
      int ok = 1;
      for (size_t i = 0; i < n; i++) ok &= atomic_load(&s.hits[i]) == 50;
      CHECK_MSG(ok && !atomic_load(&s.bad), "parallel_for n=%zu threads=%u covers [0,n) wrongly", n, s.n_threads);
      CHECK_MSG(!atomic_load(&s.bad_part), "parallel_for n=%zu threads=%u: a range is not one of %zu even parts", n,
                s.n_threads, s.parts);
      CHECK_MSG(atomic_load(&s.calls) <= 50 * (int)s.parts, "parallel_for n=%zu threads=%u: %d calls in 50 runs, at most %d",
                n, s.n_threads, atomic_load(&s.calls), 50 * (int)s.parts);
      free(s.hits);
    }
  }
}

/* fg_ops_argmax against the plain scan it replaces (first maximum, a NaN first entry kept, NaN never
 * wins) on long vectors split over 1, 2, 3 and 5 threads: ties across range boundaries, NaN at the
 * start of a range, all -inf, NaN everywhere but one entry */
static size_t plain_argmax(const float *x, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return best;
}

static void test_argmax(fg_ops *const *ops, size_t n_ops, rng *r) {
  static const size_t ns[] = {1, 5, 32767, 32768, 65537, 262144};
  float *x = malloc(sizeof(float) * 262144);
  for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
    const size_t n = ns[ni];
    for (int kind = 0; kind < 7; kind++) {
      for (size_t i = 0; i < n; i++) x[i] = kind == 4 ? -INFINITY : rng_unif(r);
      if (kind == 1) /* the same maximum in every range: the first one wins */
        for (size_t p = 1; p <= 5; p++) x[n * p / 6] = 2.0f, x[n - 1] = 2.0f;
      if (kind == 2) x[0] = NAN;
      if (kind == 3) /* NaN at the start of each range, the maximum right behind one */
        for (size_t parts = 2; parts <= 5; parts++)
          for (size_t p = 1; p < parts; p++) x[n * p / parts] = NAN;
      if (kind == 3 && n > 2) x[n / 2 + 1] = 3.0f;
      if (kind == 5)
        for (size_t i = 0; i < n; i++) x[i] = i == n / 3 ? 0.5f : NAN;
      if (kind == 6) x[n - 1] = 5.0f;
      const size_t want = plain_argmax(x, n);
      for (size_t t = 0; t < n_ops; t++) {
        const size_t got = fg_ops_argmax(ops[t], x, n);
        CHECK_MSG(got == want, "argmax n=%zu kind %d threads %u: %zu, want %zu", n, kind, fg_ops_n_threads(ops[t]), got,
                  want);
      }
    }
  }
  free(x);
}

/* fg_ops_argmax_allowed against the plain scan that head_pick ran (the first allowed entry, replaced by
 * each later strictly larger softcapped one) on 1, 2, 3 and 5 threads: dense and sparse masks, ties across
 * range boundaries, a NaN first allowed entry (kept), NaN elsewhere (never wins), nothing allowed, a softcap */
static size_t plain_argmax_allowed(const float *x, const uint8_t *allowed, size_t n, float cap) {
  size_t best = SIZE_MAX;
  float bv = 0.0f;
  for (size_t i = 0; i < n; i++) {
    if (!allowed[i]) continue;
    const float v = cap > 0.0f ? cap * tanhf(x[i] / cap) : x[i];
    if (best == SIZE_MAX || v > bv) best = i, bv = v;
  }
  return best;
}

static void test_argmax_allowed(fg_ops *const *ops, size_t n_ops, rng *r) {
  static const size_t ns[] = {1, 7, 32767, 32768, 65537, 262144};
  float *x = malloc(sizeof(float) * 262144);
  uint8_t *al = malloc(262144);
  for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
    const size_t n = ns[ni];
    for (int kind = 0; kind < 10; kind++) {
      for (size_t i = 0; i < n; i++) {
        x[i] = kind >= 8 ? -INFINITY : rng_unif(r); /* 8, 9: all -inf (the first allowed one wins) */
        al[i] = kind == 1 ? rng_unif(r) < -0.98f : rng_unif(r) < 0.94f; /* about 1 % or 97 % allowed */
      }
      if (kind == 2) /* the same maximum in every range, some allowed: the first allowed one wins */
        for (size_t p = 1; p <= 5; p++) x[n * p / 6] = 2.0f, al[n * p / 6] = p != 1, x[n - 1] = 2.0f, al[n - 1] = 1;
      if (kind == 3) { /* a NaN first allowed entry is kept */
        al[0] = 1;
        x[0] = NAN;
      }
      if (kind == 4) /* NaN at the start of each range, the maximum right behind one */
        for (size_t parts = 2; parts <= 5; parts++)
          for (size_t p = 1; p < parts; p++) x[n * p / parts] = NAN, al[n * p / parts] = 1;
      if (kind == 4 && n > 2) x[n / 2 + 1] = 3.0f, al[n / 2 + 1] = 1;
      if (kind == 5) memset(al, 0, n); /* nothing allowed */
      if (kind == 6) /* a larger entry not allowed */
        x[n / 2] = 9.0f, al[n / 2] = 0;
      if (kind == 9) /* -inf and NaN at the start of each range, one -inf entry allowed late */
        for (size_t parts = 2; parts <= 5; parts++)
          for (size_t p = 0; p < parts; p++) x[n * p / parts] = NAN, al[n * p / parts] = p > 0;
      const float cap = kind == 7 ? 0.5f : 0.0f; /* a softcap that makes near values equal */
      const size_t want = plain_argmax_allowed(x, al, n, cap);
      for (size_t t = 0; t < n_ops; t++) {
        const size_t got = fg_ops_argmax_allowed(ops[t], x, al, n, cap);
        CHECK_MSG(got == want, "argmax_allowed n=%zu kind %d threads %u: %zu, want %zu", n, kind,
                  fg_ops_n_threads(ops[t]), got, want);
      }
    }
  }
  free(al);
  free(x);
}

/* matmuls issued from inside parallel_for callbacks (several threads at once on one fg_ops) run
 * inline with private scratch and must give the same bits as a plain call */
typedef struct nested_state {
  fg_ops *ops;
  const fg_mat *W;
  const float *x; /* (8, cols) */
  float *y;       /* (8, rows) one output row per item */
  _Atomic int bad;
} nested_state;

static void nested_fn(void *ud, size_t i0, size_t i1, uint32_t ith) {
  (void)ith;
  nested_state *s = ud;
  for (size_t i = i0; i < i1; i++)
    if (fg_ops_matmul(s->ops, s->W, s->x + i * s->W->cols, s->W->cols, 1, s->y + i * s->W->rows, s->W->rows) != FG_OK)
      atomic_store(&s->bad, 1);
}

static void test_nested(fg_ops *ops, rng *r) {
  for (size_t ti = 0; ti < N_TYPES; ti++) {
    const uint32_t type = k_types[ti];
    const size_t rows = 37, cols = type_cols(type, 3), n = 8;
    uint64_t rb;
    FG_ASSERT(fg_type_row_bytes(type, cols, &rb));
    uint8_t *w = malloc(rb * rows);
    float *tmp = malloc(cols * sizeof *tmp), *x = malloc(n * cols * sizeof *x);
    float *y0 = malloc(n * rows * sizeof *y0), *y1 = malloc(n * rows * sizeof *y1);
    for (size_t i = 0; i < rows; i++) {
      fill(tmp, cols, DATA_RANDOM, true, type, r);
      fg_quantize_row(type, tmp, w + i * rb, cols);
    }
    fill(x, n * cols, DATA_RANDOM, false, type, r);
    fg_mat W = {type, rows, cols, (size_t)rb, w, NULL, NULL};
    for (size_t i = 0; i < n; i++) CHECK_OK(fg_ops_matmul(ops, &W, x + i * cols, cols, 1, y0 + i * rows, rows));
    nested_state st = {ops, &W, x, y1, 0};
    for (int rep = 0; rep < 20; rep++) {
      memset(y1, 0, n * rows * sizeof *y1);
      fg_ops_parallel_for(ops, n, nested_fn, &st);
      CHECK(!atomic_load(&st.bad));
      CHECK_MSG(memcmp(y0, y1, n * rows * sizeof *y0) == 0, "nested %s matmul differs", fg_type_traits_get(type)->name);
    }
    free(y1);
    free(y0);
    free(x);
    free(tmp);
    free(w);
  }
}

/* jobs separated by pauses longer than the spin budget: workers must sleep and wake up again */
/* a parallel_for nested in a callback runs inline and reports the thread it runs on */
typedef struct nest_pfor {
  fg_ops *ops;
  _Atomic int bad;
  _Atomic int inner_calls;
} nest_pfor;

static void inner_fn(void *ud, size_t i0, size_t i1, uint32_t ith) {
  nest_pfor *s = ud;
  (void)i0;
  (void)i1;
  (void)ith;
  atomic_fetch_add(&s->inner_calls, 1);
}

typedef struct nest_ctx {
  nest_pfor *s;
  uint32_t outer_ith;
} nest_ctx;

static void inner_check(void *ud, size_t i0, size_t i1, uint32_t ith) {
  nest_ctx *c = ud;
  if (i0 != 0 || i1 != 10 || ith != c->outer_ith) atomic_store(&c->s->bad, 1);
  inner_fn(c->s, i0, i1, ith);
}

static void outer_fn(void *ud, size_t i0, size_t i1, uint32_t ith) {
  nest_pfor *s = ud;
  for (size_t i = i0; i < i1; i++) {
    nest_ctx c = {s, ith};
    fg_ops_parallel_for(s->ops, 10, inner_check, &c);
  }
}

static void test_nested_pfor(fg_ops *const *ops, size_t n_ops) {
  for (size_t t = 0; t < n_ops; t++) {
    nest_pfor s;
    s.ops = ops[t];
    atomic_init(&s.bad, 0);
    atomic_init(&s.inner_calls, 0);
    fg_ops_parallel_for(ops[t], 7, outer_fn, &s);
    CHECK_MSG(!atomic_load(&s.bad), "nested parallel_for: wrong range or thread index (threads=%u)", fg_ops_n_threads(ops[t]));
    CHECK_EQ_INT(atomic_load(&s.inner_calls), 7);
  }
}

static void test_sleep_wake(fg_ops *const *ops, size_t n_ops) {
  for (size_t t = 0; t < n_ops; t++) {
    pfor_state s;
    const size_t n = 64;
    s.hits = calloc(n, sizeof *s.hits);
    atomic_init(&s.calls, 0);
    atomic_init(&s.bad, 0);
    atomic_init(&s.bad_part, 0);
    s.n_threads = fg_ops_n_threads(ops[t]);
    s.n = n; /* every field pfor_fn reads: its part check looped over an uninitialized count (hung under ASan) */
    s.parts = FG_MIN(n, (size_t)s.n_threads);
    for (int rep = 0; rep < 30; rep++) {
      struct timespec ts = {0, 300000}; /* 300 us */
      nanosleep(&ts, NULL);
      fg_ops_parallel_for(ops[t], n, pfor_fn, &s);
    }
    int ok = 1;
    for (size_t i = 0; i < n; i++) ok &= atomic_load(&s.hits[i]) == 30;
    CHECK_MSG(ok && !atomic_load(&s.bad) && !atomic_load(&s.bad_part), "parallel_for after sleeps: threads=%u",
              s.n_threads);
    free(s.hits);
  }
}

/* fg_ops_matmul_n: every output equals fg_ops_matmul's, bit for bit, for each type, batch size and
 * thread count (row counts that do not divide into the job's chunks); mixed types fall back to one
 * product after the other; a NULL matrix is refused */
static void test_matmul_n(fg_ops *const *ops, size_t n_ops, rng *r) {
  static const size_t rows[3] = {33, 7, 130};
  static const size_t nbs[] = {1, 3, 7, 40};
  const size_t max_cols = 256, max_nb = 40;
  size_t cols = 96;
  float *x = amalloc(sizeof(float) * max_nb * max_cols), *tmp = amalloc(sizeof(float) * max_cols);
  for (size_t i = 0; i < max_nb * max_cols; i++) x[i] = rng_unif(r);
  /* the side product: an f32 matrix (as an adapter's A) times up to SIDE_NB other rows, stride SIDE_LDX;
   * its outputs at stride SIDE_LDY, the gaps NaN that must stay */
  enum { SIDE_ROWS = 37, SIDE_COLS = 160, SIDE_LDX = 163, SIDE_NB = 20, SIDE_LDY = 40 };
  float *side_w = amalloc(sizeof(float) * SIDE_ROWS * SIDE_COLS), *side_x = amalloc(sizeof(float) * SIDE_NB * SIDE_LDX);
  for (size_t i = 0; i < (size_t)SIDE_ROWS * SIDE_COLS; i++) side_w[i] = rng_unif(r);
  for (size_t i = 0; i < (size_t)SIDE_NB * SIDE_LDX; i++) side_x[i] = rng_unif(r);
  const fg_mat side = {FG_TYPE_F32, SIDE_ROWS, SIDE_COLS, 4 * SIDE_COLS, side_w, NULL, NULL};
  static const size_t side_nbs[] = {1, 5, SIDE_NB}; /* armv7 prepares flags for 16 rows at most in a job */
  const size_t ys_bytes = sizeof(float) * (SIDE_NB + 1) * SIDE_LDY; /* a row more: written by none */
  float *ys_want = amalloc(ys_bytes), *ys_got = amalloc(ys_bytes);
  memset(ys_want, 0xff, ys_bytes); /* NaN: a row the side product misses shows */
  for (size_t b = 0; b < SIDE_NB; b++)
    CHECK_OK(fg_ops_matmul_here(ops[0], &side, side_x + b * SIDE_LDX, SIDE_COLS, 1, ys_want + b * SIDE_LDY, SIDE_ROWS));
  for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++) {
    const uint32_t type = k_types[ti];
    cols = type_cols(type, 3);
    uint64_t rb64 = 0;
    FG_ASSERT(fg_type_row_bytes(type, cols, &rb64));
    const size_t rb = (size_t)rb64;
    fg_mat mats[3];
    uint8_t *wd[3];
    for (int m = 0; m < 3; m++) {
      wd[m] = amalloc(rb * rows[m]);
      for (size_t i = 0; i < rows[m]; i++) {
        for (size_t j = 0; j < cols; j++) tmp[j] = rng_unif(r);
        fg_quantize_row(type, tmp, wd[m] + i * rb, cols);
      }
      mats[m] = (fg_mat){type, (uint32_t)rows[m], (uint32_t)cols, rb, wd[m], NULL, NULL};
    }
    const fg_mat *w[3] = {&mats[0], &mats[1], &mats[2]};
    for (size_t bi = 0; bi < sizeof nbs / sizeof nbs[0]; bi++) {
      const size_t nb = nbs[bi];
      for (size_t t = 0; t < n_ops; t++) {
        float *want[3], *got[3];
        size_t ld[3];
        for (int m = 0; m < 3; m++) {
          ld[m] = rows[m] + 1;
          want[m] = calloc(nb * ld[m], sizeof(float));
          got[m] = calloc(nb * ld[m], sizeof(float));
          CHECK_OK(fg_ops_matmul(ops[t], w[m], x, cols, nb, want[m], ld[m]));
        }
        CHECK_OK(fg_ops_matmul_n(ops[t], 3, w, x, cols, nb, got, ld));
        for (int m = 0; m < 3; m++)
          CHECK_MSG(memcmp(want[m], got[m], nb * ld[m] * sizeof(float)) == 0,
                    "matmul_n %s nb=%zu threads=%u: matrix %d differs from matmul", fg_type_name(type), nb,
                    fg_ops_n_threads(ops[t]), m);
        /* with a side product (an adapter's A · x of 1 to 20 rows): the main products as before, each
         * of the side's rows what fg_ops_matmul_here gives that row alone, on 3 and 1 main matrices */
        for (size_t nm = 1; nm <= 3; nm += 2)
          for (size_t si = 0; si < sizeof side_nbs / sizeof side_nbs[0]; si++) {
            const size_t ns = side_nbs[si];
            for (int m = 0; m < 3; m++) memset(got[m], 0, nb * ld[m] * sizeof(float));
            memset(ys_got, 0xff, ys_bytes);
            const fg_ops_side sd = {&side, side_x, SIDE_LDX, ns, ys_got, SIDE_LDY};
            CHECK_OK(fg_ops_matmul_n_side(ops[t], nm, w, x, cols, nb, got, ld, &sd));
            for (size_t m = 0; m < nm; m++)
              CHECK_MSG(memcmp(want[m], got[m], nb * ld[m] * sizeof(float)) == 0,
                        "matmul_n_side %s nb=%zu threads=%u n=%zu: matrix %zu differs from matmul", fg_type_name(type),
                        nb, fg_ops_n_threads(ops[t]), nm, m);
            CHECK_MSG(memcmp(ys_want, ys_got, sizeof(float) * ns * SIDE_LDY) == 0 &&
                          isnan(ys_got[ns * SIDE_LDY]),
                      "matmul_n_side %s nb=%zu threads=%u n=%zu: the side product of %zu rows differs from matmul_here",
                      fg_type_name(type), nb, fg_ops_n_threads(ops[t]), nm, ns);
          }
        for (int m = 0; m < 3; m++) {
          free(want[m]);
          free(got[m]);
        }
      }
    }
    for (int m = 0; m < 3; m++) free(wd[m]);
  }
  /* mixed types: the products one after the other */
  cols = 96;
  uint64_t rb8 = 0;
  FG_ASSERT(fg_type_row_bytes(FG_TYPE_Q8_0, cols, &rb8));
  uint8_t *w32 = amalloc(4 * cols * 5), *w8 = amalloc((size_t)rb8 * 5);
  for (size_t i = 0; i < 5; i++) {
    for (size_t j = 0; j < cols; j++) tmp[j] = rng_unif(r);
    fg_quantize_row(FG_TYPE_F32, tmp, w32 + i * 4 * cols, cols);
    fg_quantize_row(FG_TYPE_Q8_0, tmp, w8 + i * (size_t)rb8, cols);
  }
  const fg_mat a = {FG_TYPE_F32, 5, (uint32_t)cols, 4 * cols, w32, NULL, NULL}, b = {FG_TYPE_Q8_0, 5, (uint32_t)cols, (size_t)rb8, w8, NULL, NULL};
  const fg_mat *mixed[2] = {&a, &b};
  float ya[5], yb[5], ga[5], gb[5];
  float *gy[2] = {ga, gb};
  const size_t ld[2] = {5, 5};
  CHECK_OK(fg_ops_matmul(ops[1], &a, x, cols, 1, ya, 5));
  CHECK_OK(fg_ops_matmul(ops[1], &b, x, cols, 1, yb, 5));
  CHECK_OK(fg_ops_matmul_n(ops[1], 2, mixed, x, cols, 1, gy, ld));
  CHECK(memcmp(ya, ga, sizeof ya) == 0 && memcmp(yb, gb, sizeof yb) == 0);
  /* a side product beside mixed types, and alone (no main product): computed here, the same rows */
  for (size_t n = 0; n <= 2; n += 2) {
    memset(ys_got, 0xff, ys_bytes);
    const fg_ops_side sd = {&side, side_x, SIDE_LDX, 5, ys_got, SIDE_LDY};
    CHECK_OK(fg_ops_matmul_n_side(ops[1], n, mixed, x, cols, 1, gy, ld, &sd));
    CHECK_MSG(memcmp(ys_want, ys_got, sizeof(float) * 5 * SIDE_LDY) == 0 && isnan(ys_got[5 * SIDE_LDY]),
              "matmul_n_side with %zu mixed products: the side product differs from matmul_here", n);
  }
  const fg_ops_side bad = {&side, side_x, SIDE_COLS - 1, 2, ys_got, SIDE_LDY}; /* rows overlap */
  CHECK_EQ_INT(fg_ops_matmul_n_side(ops[1], 2, mixed, x, cols, 1, gy, ld, &bad), FG_ERR_INVALID_ARG);
  const fg_mat *with_null[2] = {&a, NULL};
  CHECK_EQ_INT(fg_ops_matmul_n(ops[1], 2, with_null, x, cols, 1, gy, ld), FG_ERR_INVALID_ARG);
  free(w32);
  free(w8);
  free(x);
  free(tmp);
  free(side_w);
  free(side_x);
  free(ys_want);
  free(ys_got);
}

/* allocation failures: creating ops, and the activation scratch of a quantized matmul */
static void test_alloc_failures(void) {
  for (uint64_t k = 1; k <= 4; k++) {
    fg_ops *ops = (fg_ops *)1;
    fg_alloc_fail_after(k);
    const fg_status st = fg_ops_create(3, &ops, NULL);
    fg_alloc_fail_after(0);
    CHECK(st == FG_OK || (st == FG_ERR_NOMEM && ops == NULL));
    fg_ops_free(st == FG_OK ? ops : NULL);
  }
  fg_ops *ops;
  CHECK_OK(fg_ops_create(2, &ops, NULL));
  const size_t rows = 20, cols = 64;
  uint8_t w[20 * 68];
  float x[64], y[20], tmp[64];
  for (size_t j = 0; j < cols; j++) tmp[j] = x[j] = (float)j / 64.0f - 0.5f;
  for (size_t i = 0; i < rows; i++) fg_quantize_row(FG_TYPE_Q8_0, tmp, w + i * 68, cols);
  fg_mat W = {FG_TYPE_Q8_0, rows, cols, 68, w, NULL, NULL};
  const fg_kernels *k = NULL;
  FG_ASSERT(fg_kernels_get(&k, NULL) == FG_OK);
  const bool needs_scratch = k->vec[FG_TYPE_Q8_0].act_size != NULL;
  fg_alloc_fail_after(1);
  const fg_status st = fg_ops_matmul(ops, &W, x, cols, 1, y, rows);
  fg_alloc_fail_after(0);
  CHECK_EQ_INT(st, needs_scratch ? FG_ERR_NOMEM : FG_OK);
  CHECK_OK(fg_ops_matmul(ops, &W, x, cols, 1, y, rows));
  CHECK_NEAR(y[3], fg_vec_dot_ref(FG_TYPE_Q8_0, w + 3 * 68, x, cols), 1e-3);
  fg_ops_free(ops);
}

static void test_args(fg_ops *ops) {
  float x[64] = {0}, y[64];
  uint8_t w[4096] = {0};
  fg_mat W = {FG_TYPE_Q8_0, 2, 64, 68, w, NULL, NULL};
  int32_t rows[2] = {0, 1};
  CHECK_OK(fg_ops_matmul(ops, &W, x, 64, 1, y, 2));
  CHECK_OK(fg_ops_matmul(ops, &W, x, 64, 0, y, 2)); /* nb = 0: nothing to do */
  fg_mat bad = W;
  bad.type = 16; /* IQ2_XXS: not supported */
  CHECK_EQ_INT(fg_ops_matmul(ops, &bad, x, 64, 1, y, 2), FG_ERR_UNSUPPORTED);
  bad = W;
  bad.cols = 40; /* not a multiple of the block */
  CHECK_EQ_INT(fg_ops_matmul(ops, &bad, x, 64, 1, y, 2), FG_ERR_INVALID_ARG);
  bad = W;
  bad.row_bytes = 67; /* shorter than a row */
  CHECK_EQ_INT(fg_ops_matmul(ops, &bad, x, 64, 1, y, 2), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_ops_matmul(ops, &W, x, 32, 2, y, 2), FG_ERR_INVALID_ARG); /* ldx < cols */
  CHECK_EQ_INT(fg_ops_matmul(ops, &W, x, 64, 2, y, 1), FG_ERR_INVALID_ARG); /* ldy < rows */
  CHECK_EQ_INT(fg_ops_matmul(ops, &W, NULL, 64, 1, y, 2), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_ops_matmul(ops, NULL, x, 64, 1, y, 2), FG_ERR_INVALID_ARG);
  CHECK_OK(fg_ops_matmul_rows(ops, &W, rows, 2, x, 64, 1, y, 2));
  rows[1] = 2;
  CHECK_EQ_INT(fg_ops_matmul_rows(ops, &W, rows, 2, x, 64, 1, y, 2), FG_ERR_INVALID_ARG);
  rows[1] = -1;
  CHECK_EQ_INT(fg_ops_matmul_rows(ops, &W, rows, 2, x, 64, 1, y, 2), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_ops_matmul_rows(ops, &W, NULL, 2, x, 64, 1, y, 2), FG_ERR_INVALID_ARG);
}

// ----------------------------------------------------------------------------

int main(int argc, char **argv) {
  const char *env = getenv("FG_ISA");
  const bool forced = env && env[0] && strcmp(env, "auto") != 0;
  const bool dispatch_only = argc > 1 && strcmp(argv[1], "--dispatch") == 0;
  if (argc > 2 || (argc == 2 && (!dispatch_only || !forced))) {
    fprintf(stderr, "usage: FG_ISA=LEVEL test_kernels [--dispatch] | test_kernels (every table)\n");
    return 2;
  }
  if (forced && !fg_kernels_by_name(env)) {
    /* an unknown or unsupported forced level is an error, not a crash */
    fg_ops *ops = (fg_ops *)1;
    fg_error err;
    CHECK_EQ_INT(fg_ops_create(1, &ops, &err), FG_ERR_UNSUPPORTED);
    CHECK(ops == NULL);
    CHECK(strstr(err.msg, "FG_ISA") != NULL);
    CHECK(strcmp(fg_ops_isa(), "unsupported") == 0);
    return fg_test_finish("test_kernels (bad FG_ISA)");
  }

  const bool emulated = getenv("FG_TEST_EMULATED") != NULL;
  g_emulated = emulated;
  if (emulated) fprintf(stderr, "FG_TEST_EMULATED: the ref and generic tables on %s only\n", EMULATED_C_TYPES);
  static const uint32_t threads[] = {1, 2, 3, 5};
  fg_ops *ops[4];
  for (size_t t = 0; t < 4; t++) CHECK_OK(fg_ops_create(threads[t], &ops[t], NULL));
  fprintf(stderr, "fg_ops_isa() = %s\n", fg_ops_isa());
  if (forced) CHECK(strcmp(fg_ops_isa(), env) == 0);

  rng r = {12345};
  test_args(ops[1]);
  test_parallel_for(ops, 4);
  test_argmax(ops, 4, &r);
  test_argmax_allowed(ops, 4, &r);
  test_sleep_wake(ops, 4);
  test_nested_pfor(ops, 4);
  test_alloc_failures();
  test_ref_exact(ops, 4, &r);

  static const char *const isas[] = {"ref", "avx2", "avx512", "neon", "neon_dotprod", "neon_i8mm"};
  for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
    if (forced && strcmp(isas[i], env) != 0) continue;
    const fg_kernels *k = fg_kernels_by_name(isas[i]);
    if (!k) {
      fprintf(stderr, "table %s: not supported here, skipped\n", isas[i]);
      continue;
    }
    g_table_types = emulated && strcmp(isas[i], "ref") == 0 ? EMULATED_C_TYPES : NULL;
    if (dispatch_only)
      fprintf(stderr, "table %s: --dispatch: its kernel sweep is test_kernels' (without FG_ISA)\n", isas[i]);
    else
      test_table(ops, 4, k, false, &r);
    g_table_types = NULL;
    for (size_t t = 0; t < 4; t++) fg_ops_set_kernels(ops[t], k);
    test_matmul_n(ops, 4, &r);
    test_nested(ops[2], &r);
  }
  /* the portable q8 kernel that ops falls back to for a quantized type without a kernel in the table:
   * the ref table without its entries for these types */
  if (!dispatch_only && (!forced || strcmp(env, "ref") == 0)) {
    static fg_kernels generic;
    generic = *fg_kernels_ref();
    generic.name = "generic";
    for (size_t ti = 0; ti < N_TYPES; ti++)
      if (type_is_q8w(k_types[ti])) {
        memset(&generic.vec[k_types[ti]], 0, sizeof generic.vec[0]);
        memset(&generic.gemm[k_types[ti]], 0, sizeof generic.gemm[0]);
      }
    g_table_types = emulated ? EMULATED_C_TYPES : NULL;
    test_table(ops, 4, &generic, true, &r);
    g_table_types = NULL;
  }
  for (size_t t = 0; t < 4; t++) fg_ops_free(ops[t]);
  fg_ops_free(NULL);
  return fg_test_finish("test_kernels");
}
