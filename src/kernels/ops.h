/* ops.h — the compute operations the model's fast path calls: threaded matrix products over typed
 * weights, with kernels chosen once per process from the CPU's features (or FG_ISA=ref|avx2|avx512).
 *
 * An fg_ops is per session (one thread at a time): it owns the thread pool and scratch memory. */
#ifndef FG_OPS_H
#define FG_OPS_H

#include "fg_internal.h"
#include "tensor/dtype.h"

/* A 2-D weight matrix view: rows × cols elements of `type`, rows contiguous, row_bytes apart. */
typedef struct fg_mat {
  uint32_t type;
  uint32_t rows;
  uint32_t cols;
  size_t row_bytes;
  const void *data;
  const void *packed;                   /* the same weights in a kernel table's packed layout, or NULL */
  const struct fg_kernels *packed_for; /* that table: an fg_ops with another table reads data only */
} fg_mat;

typedef struct fg_ops fg_ops;

/* n_threads: 0 = fg_cpu_count(). Threads are created once and reused for every call. */
fg_status fg_ops_create(uint32_t n_threads, fg_ops **out, fg_error *err);
void fg_ops_free(fg_ops *ops); /* NULL-safe */
uint32_t fg_ops_n_threads(const fg_ops *ops);
const char *fg_ops_isa(void); /* "ref", "avx2", "avx512", ... the table in use */

/* Y[b*ldy + r] = sum_j W[r][j] * X[b*ldx + j]  for b < nb, r < W->rows.
 * X: nb × W->cols f32 (row stride ldx), Y: nb × ldy f32. Split over the pool's threads. */
fg_status fg_ops_matmul(fg_ops *ops, const fg_mat *W, const float *X, size_t ldx, size_t nb, float *Y, size_t ldy);

/* The same product on the calling thread alone, never through the pool (each output is what
 * fg_ops_matmul gives it): for small products inside a parallel_for callback or where a dispatch would
 * cost more than the work. A type whose kernel prepares its activations allocates them per call. */
fg_status fg_ops_matmul_here(fg_ops *ops, const fg_mat *W, const float *X, size_t ldx, size_t nb, float *Y, size_t ldy);

/* Y[m] = W[m] · X for m < n as one job (n <= 3 products sharing weight type, columns and X: the
 * activations are prepared once and all rows share one work queue; otherwise one product after the
 * other). Each Y[m] gets exactly what fg_ops_matmul would write. */
fg_status fg_ops_matmul_n(fg_ops *ops, size_t n, const fg_mat *const *W, const float *X, size_t ldx, size_t nb,
                          float *const *Y, const size_t *ldy);

/* A side product for fg_ops_matmul_n_side: S · x[b] into y + b * ldy (S->rows each) for b < nb, x[b] at
 * x + b * ldx. */
typedef struct fg_ops_side {
  const fg_mat *S;
  const float *x;
  size_t ldx, nb;
  float *y;
  size_t ldy;
} fg_ops_side;

/* fg_ops_matmul_n and a side product, which reads neither X nor any Y[m]: each of its rows gets exactly
 * what fg_ops_matmul_here of that one activation row would write. Its rows are work items of the same
 * job, after the main product's (a run-time adapter's A · x beside the base weights' product, instead of
 * row by row on the threads of the per-row phase after it); side NULL: none. */
fg_status fg_ops_matmul_n_side(fg_ops *ops, size_t n, const fg_mat *const *W, const float *X, size_t ldx, size_t nb,
                               float *const *Y, const size_t *ldy, const fg_ops_side *side);

/* Only the listed rows: Y[b*ldy + i] = W[rows[i]] · X[b]  for i < n_rows (sparse LM head). */
fg_status fg_ops_matmul_rows(fg_ops *ops, const fg_mat *W, const int32_t *rows, size_t n_rows, const float *X,
                             size_t ldx, size_t nb, float *Y, size_t ldy);

/* Runs fn(ud, i0, i1, thread_index) over [0, n) in min(n, threads) contiguous ranges that differ by one
 * item at most (the larger ones last) and that the threads claim from a shared counter: one each, unless
 * the scheduler keeps a thread waiting, when another takes its range (so a thread may get several, or
 * none); fn must depend on its items only.
 * thread_index < the ops' threads names the running thread (per-thread scratch). */
typedef void (*fg_ops_range_fn)(void *ud, size_t i0, size_t i1, uint32_t thread_index);
void fg_ops_parallel_for(fg_ops *ops, size_t n, fg_ops_range_fn fn, void *ud);

/* The index fg_argmax would return (the first maximum; x[0] when it is NaN; NaN never wins), with long
 * vectors split over the threads. */
size_t fg_ops_argmax(fg_ops *ops, const float *x, size_t n);
/* The plain scan's pick over the allowed entries (allowed[i] != 0) of fg_softcap(cap, x[i]): the first
 * allowed one, replaced by each later one that is strictly larger (so the first maximum; a NaN first
 * allowed entry is kept, NaN never wins), with long vectors split over the threads; SIZE_MAX when none is
 * allowed. */
size_t fg_ops_argmax_allowed(fg_ops *ops, const float *x, const uint8_t *allowed, size_t n, float cap);

#endif /* FG_OPS_H */
