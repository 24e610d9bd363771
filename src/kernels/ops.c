/* ops.c — fg_ops: the thread pool, activation scratch and the threaded matrix products over the
 * kernel table chosen by dispatch.c. Rows are handed out in chunks through an atomic counter so a
 * busy core does not hold the others back; every output is computed by exactly one thread with a
 * sequence of operations that does not depend on the chunking (see kernels.h). */
#include "kernels/ops.h"
#include "kernels/attn.h"
#include "kernels/kernels.h"
#include "kernels/threadpool.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#define FG_OPS_CHUNKS_PER_THREAD 8   /* load balancing granularity of a matmul */
#ifndef FG_OPS_VEC_CHUNKS_PER_THREAD
#define FG_OPS_VEC_CHUNKS_PER_THREAD 2 /* the same for a vec (decode) kernel: each chunk is a row stream
                                        * that starts cold (its first prefetch has nothing to hide
                                        * behind), so decode wants few, long chunks */
#endif

struct fg_ops {
  fg_threadpool *tp;
  uint32_t n_threads;
  const fg_kernels *k;     /* table in use */
  void *scratch;           /* (scratch_bytes) prepared activations, 64-byte aligned */
  size_t scratch_bytes;
  _Atomic int busy;        /* a parallel job is running: nested calls run inline */
};

// ----------------------------------------------------------------------------
// create / free

fg_status fg_ops_create(uint32_t n_threads, fg_ops **out, fg_error *err) {
  if (!out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_ops_create: out is NULL");
  *out = NULL;
  const fg_kernels *k;
  fg_status st = fg_kernels_get(&k, err);
  if (st != FG_OK) return st;
  if (n_threads == 0) n_threads = fg_cpu_count();
  if (n_threads > 1024) return fg_err(err, FG_ERR_INVALID_ARG, "fg_ops_create: %u threads is too many", n_threads);
  fg_ops *ops = fg_calloc(1, sizeof *ops);
  if (!ops) return fg_err(err, FG_ERR_NOMEM, "fg_ops_create: out of memory");
  st = fg_threadpool_create(n_threads, &ops->tp);
  if (st != FG_OK) {
    fg_free(ops);
    return fg_err(err, st, "fg_ops_create: cannot start %u threads", n_threads);
  }
  ops->n_threads = n_threads;
  ops->k = k;
  atomic_init(&ops->busy, 0);
  *out = ops;
  return FG_OK;
}

void fg_ops_free(fg_ops *ops) {
  if (!ops) return;
  fg_threadpool_free(ops->tp);
  fg_aligned_free(ops->scratch);
  fg_free(ops);
}

uint32_t fg_ops_n_threads(const fg_ops *ops) { return ops ? ops->n_threads : 1; }

void fg_ops_set_kernels(fg_ops *ops, const fg_kernels *k) {
  if (!k) {
    const fg_status st = fg_kernels_get(&k, NULL); /* ops exists, so the table was valid */
    FG_ASSERT(st == FG_OK);
  }
  ops->k = k;
}

static fg_status fg_ops_reserve(fg_ops *ops, size_t bytes) {
  if (bytes <= ops->scratch_bytes) return FG_OK;
  size_t want = bytes + bytes / 4;
  if (want < bytes) want = bytes;
  want = (want + 63) & ~(size_t)63;
  if (want < bytes) return FG_ERR_NOMEM;
  void *p = fg_aligned_alloc(64, want);
  if (!p) return FG_ERR_NOMEM;
  fg_aligned_free(ops->scratch);
  ops->scratch = p;
  ops->scratch_bytes = want;
  return FG_OK;
}

// ----------------------------------------------------------------------------
// parallel_for

typedef struct fg_pfor_job {
  size_t n;
  size_t parts; /* claims: part p is items [n p / parts, n (p + 1) / parts) */
  fg_ops_range_fn fn;
  void *ud;
  _Atomic size_t next; /* first unclaimed part */
} fg_pfor_job;

/* Pool index of the thread running a parallel_for callback (0 outside any job). A nested call runs
 * inline and reports this index, so per-thread scratch indexed by thread_index stays private. */
static _Thread_local uint32_t g_thread_index;

/* The first item of part p of n items in `parts` parts (p = parts: n) */
static size_t fg_pfor_part(size_t n, size_t parts, size_t p) { return n / parts * p + n % parts * p / parts; }

/* Items are claimed in chunks from a shared counter, so the threads that run take the work of one the
 * scheduler keeps waiting (fg_threadpool_run_open); callbacks depend on their items only, never on which
 * thread or range they get (the ops' contract). */
static void fg_pfor_worker(void *ud, uint32_t ith, uint32_t nth) {
  (void)nth;
  fg_pfor_job *job = ud;
  const uint32_t saved = g_thread_index;
  g_thread_index = ith;
  for (;;) {
    const size_t p = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
    if (p >= job->parts) break;
    job->fn(job->ud, fg_pfor_part(job->n, job->parts, p), fg_pfor_part(job->n, job->parts, p + 1), ith);
  }
  g_thread_index = saved;
}

/* parallel_for on the pool by the thread that holds ops->busy */
static void fg_pfor_owned(fg_ops *ops, size_t n, fg_ops_range_fn fn, void *ud) {
  /* one part per thread, as a static split would give them, unless a thread is late: then the others
   * take its part. The parts differ by one item at most, the larger ones last: the calling thread, which
   * claims first, gets a smaller one where n is no multiple of the threads (9 items on 4 threads:
   * 2, 2, 2, 3, where parts of ceil(n / threads) gave 3, 3, 3 and left a thread idle) */
  const size_t nth = ops->n_threads;
  fg_pfor_job job = {.n = n, .parts = FG_MIN(n, nth), .fn = fn, .ud = ud};
  atomic_init(&job.next, 0);
  fg_threadpool_run_open(ops->tp, fg_pfor_worker, &job);
}

void fg_ops_parallel_for(fg_ops *ops, size_t n, fg_ops_range_fn fn, void *ud) {
  if (n == 0) return;
  int expected = 0;
  if (ops->n_threads <= 1 || n == 1 || !atomic_compare_exchange_strong(&ops->busy, &expected, 1)) {
    fn(ud, 0, n, g_thread_index); /* one thread, one item, or called from inside a job: inline */
    return;
  }
  fg_pfor_owned(ops, n, fn, ud);
  atomic_store(&ops->busy, 0);
}

// ----------------------------------------------------------------------------
// argmax

#define FG_ARGMAX_PARTS 16                /* at most this many ranges */
#define FG_ARGMAX_MIN ((size_t)1 << 15) /* shorter vectors: one thread */

typedef struct fg_argmax_job {
  const float *x;
  size_t n, n_parts;
  size_t best[FG_ARGMAX_PARTS]; /* per range: first maximum among non-NaN entries, or SIZE_MAX */
} fg_argmax_job;

static void fg_argmax_range(void *ud, size_t p0, size_t p1, uint32_t tid) {
  (void)tid;
  fg_argmax_job *j = ud;
  const fg_attn_kernels *ak = fg_attn_get();
  for (size_t p = p0; p < p1; p++) {
    const size_t i0 = j->n * p / j->n_parts, i1 = j->n * (p + 1) / j->n_parts;
    const size_t best = ak->argmax(j->x + i0, i1 - i0);
    j->best[p] = best == SIZE_MAX ? SIZE_MAX : i0 + best;
  }
}

size_t fg_ops_argmax(fg_ops *ops, const float *x, size_t n) {
  if (n == 0 || x[0] != x[0]) return 0; /* fg_argmax keeps a NaN first entry */
  fg_argmax_job j = {.x = x, .n = n, .n_parts = 1};
  const uint32_t nt = fg_ops_n_threads(ops);
  if (n >= FG_ARGMAX_MIN && nt > 1) j.n_parts = FG_MIN((size_t)nt, (size_t)FG_ARGMAX_PARTS);
  fg_ops_parallel_for(ops, j.n_parts, fg_argmax_range, &j);
  size_t best = 0;
  for (size_t p = 0; p < j.n_parts; p++)
    if (j.best[p] != SIZE_MAX && x[j.best[p]] > x[best]) best = j.best[p];
  return best;
}

/* Over the allowed entries: per range, the first allowed index and the first maximum among the allowed
 * non-NaN values (fg_softcap(cap, x[i])), each SIZE_MAX where there is none */
typedef struct fg_argmax_allowed_job {
  const float *x;
  const uint8_t *allowed;
  float cap;
  size_t n, n_parts;
  size_t first[FG_ARGMAX_PARTS], best[FG_ARGMAX_PARTS];
} fg_argmax_allowed_job;

static void fg_argmax_allowed_range(void *ud, size_t p0, size_t p1, uint32_t tid) {
  (void)tid;
  fg_argmax_allowed_job *j = ud;
  const uint8_t *al = j->allowed;
  const float *x = j->x, cap = j->cap;
  for (size_t p = p0; p < p1; p++) {
    const size_t i0 = j->n * p / j->n_parts, i1 = j->n * (p + 1) / j->n_parts;
    size_t first = i0;
    while (first < i1 && !al[first]) first++;
    /* the first maximum above -inf (NaN is never larger); where there is none, the first -inf below */
    size_t best = SIZE_MAX;
    float bv = -INFINITY;
    if (cap > 0.0f) {
      for (size_t i = first; i < i1; i++)
        if (al[i]) {
          const float v = fg_softcap(cap, x[i]);
          if (v > bv) bv = v, best = i;
        }
    } else {
      for (size_t i = first; i < i1; i++)
        if (al[i] && x[i] > bv) bv = x[i], best = i;
    }
    if (best == SIZE_MAX)
      for (size_t i = first; i < i1; i++)
        if (al[i] && fg_softcap(cap, x[i]) == -INFINITY) {
          best = i;
          break;
        }
    j->first[p] = first < i1 ? first : SIZE_MAX;
    j->best[p] = best;
  }
}

size_t fg_ops_argmax_allowed(fg_ops *ops, const float *x, const uint8_t *allowed, size_t n, float cap) {
  fg_argmax_allowed_job j = {.x = x, .allowed = allowed, .cap = cap, .n = n, .n_parts = 1};
  if (n == 0) return SIZE_MAX;
  const uint32_t nt = fg_ops_n_threads(ops);
  if (n >= FG_ARGMAX_MIN && nt > 1) j.n_parts = FG_MIN((size_t)nt, (size_t)FG_ARGMAX_PARTS);
  fg_ops_parallel_for(ops, j.n_parts, fg_argmax_allowed_range, &j);
  size_t first = SIZE_MAX, best = SIZE_MAX;
  float bv = 0.0f;
  for (size_t p = 0; p < j.n_parts; p++) {
    if (first == SIZE_MAX) first = j.first[p];
    if (j.best[p] == SIZE_MAX) continue;
    const float v = fg_softcap(cap, x[j.best[p]]);
    if (best == SIZE_MAX || v > bv) best = j.best[p], bv = v;
  }
  if (first == SIZE_MAX) return SIZE_MAX;
  const float v0 = fg_softcap(cap, x[first]);
  return v0 != v0 || best == SIZE_MAX ? first : best; /* a NaN first entry is kept, as in the plain scan */
}

// ----------------------------------------------------------------------------
// matmul

#define FG_MM_MAX_MATS 3 /* matrices of one job (matmul_n): Q, K, V or gate, up */
#define FG_MM_SIDE_ACT 64 /* bytes of a side product's prepared activations, at most (armv7 F32: 16 rows) */

typedef struct fg_prep_job {
  const fg_mm_kernel *kern;
  const fg_mm_args *args;
  void *act; /* (act_size bytes) */
} fg_prep_job;

static void fg_prep_range(void *ud, size_t u0, size_t u1, uint32_t ith) {
  (void)ith;
  const fg_prep_job *p = ud;
  const size_t unit = p->kern->act_unit ? p->kern->act_unit : 1;
  const size_t b0 = u0 * unit, b1 = FG_MIN(u1 * unit, p->args->nb);
  p->kern->act_prep(p->args->x, p->args->ldx, p->args->cols, p->args->nb, b0, b1, p->act);
}

typedef struct fg_mm_job {
  const fg_mm_kernel *kern;
  size_t n_mats;
  fg_mm_args args[FG_MM_MAX_MATS];
  size_t n_out[FG_MM_MAX_MATS];     /* outputs per activation row */
  size_t first[FG_MM_MAX_MATS + 1]; /* work items of matrix m: [first[m], first[m+1]) */
  size_t chunk;                     /* rows per work item */
  const fg_mm_kernel *side_kern;    /* the side product's (fg_ops_matmul_n_side), or NULL */
  fg_mm_args side;
  uint64_t side_act[FG_MM_SIDE_ACT / 8]; /* its prepared activation rows (armv7: flags), when it has them */
  size_t side_out, side_chunk;      /* its outputs, rows per work item: items first[n_mats].. after the main ones */
  size_t n_items;                   /* all work items */
  _Atomic size_t next;              /* next work item */
  fg_prep_job prep;                 /* the activations prepared inside the job: prep_main parts of prep_units, */
  size_t prep_units, prep_main;     /* then the side's rows as one more part when they need preparing */
  size_t prep_parts;                /* parts in all (0: prepared before the job) */
  _Atomic size_t prep_next, prep_done; /* next part to claim, parts done */
} fg_mm_job;

static void fg_mm_worker(void *ud, uint32_t ith, uint32_t nth) {
  (void)nth;
  fg_mm_job *job = ud;
  if (job->prep_parts) { /* the activations first: a part at a time, then wait until every part is done */
    for (;;) {
      const size_t p = atomic_fetch_add_explicit(&job->prep_next, 1, memory_order_relaxed);
      if (p >= job->prep_parts) break;
      if (p < job->prep_main)
        fg_prep_range(&job->prep, fg_pfor_part(job->prep_units, job->prep_main, p),
                      fg_pfor_part(job->prep_units, job->prep_main, p + 1), ith);
      else
        job->side_kern->act_prep(job->side.x, job->side.ldx, job->side.cols, job->side.nb, 0, job->side.nb,
                                 job->side_act);
      atomic_fetch_add_explicit(&job->prep_done, 1, memory_order_release);
    }
    for (uint32_t i = 0; atomic_load_explicit(&job->prep_done, memory_order_acquire) < job->prep_parts; i++)
      fg_threadpool_wait_step(i);
  }
  size_t m = 0;
  for (;;) {
    size_t c = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
    if (c >= job->n_items) break;
    if (c >= job->first[job->n_mats]) { /* the side product's rows */
      const size_t i0 = (c - job->first[job->n_mats]) * job->side_chunk;
      job->side_kern->run(&job->side, i0, FG_MIN(i0 + job->side_chunk, job->side_out));
      continue;
    }
    while (c >= job->first[m + 1]) m++; /* items come in increasing order to each thread */
    const size_t i0 = (c - job->first[m]) * job->chunk;
    job->kern->run(&job->args[m], i0, FG_MIN(i0 + job->chunk, job->n_out[m]));
  }
}

/* n_mats products that share the weight type, the columns and the activations (in[m].x, ldx, nb),
 * as one job: the activations are prepared once, the work items of all matrices share one queue.
 * A call made while a job runs on this ops (from inside a parallel_for callback, possibly on several
 * threads at once) runs inline with its own activation buffer: the shared scratch is the owner's. */
static fg_status fg_mm_common(fg_ops *ops, const fg_mm_args *in, const size_t *n_out, size_t n_mats, bool here,
                              const fg_mm_args *side, size_t side_out) {
  const fg_kernels *k = ops->k;
  const uint32_t type = in->type;
  const fg_mm_kernel *kern = &k->vec[type];
  if (k->gemm[type].run && in->nb >= k->gemm_min_nb[type]) kern = &k->gemm[type];
  if (!kern->run) kern = fg_kernel_q8_generic(type); /* a quantized type this table has no kernel for */
  if (!kern || !kern->run) return FG_ERR_UNSUPPORTED;

  int expected = 0;
  const bool owner = !here && atomic_compare_exchange_strong(&ops->busy, &expected, 1);
  const bool threaded = owner && ops->n_threads > 1;
  void *tmp = NULL;
  fg_status st = FG_OK;

  fg_mm_job job;
  job.prep_units = job.prep_main = job.prep_parts = 0;
  job.kern = kern;
  job.n_mats = n_mats;
  for (size_t m = 0; m < n_mats; m++) {
    job.args[m] = in[m];
    job.args[m].act = NULL;
    job.n_out[m] = n_out[m];
  }
  if (kern->act_size) {
    const size_t bytes = kern->act_size(in->cols, in->nb);
    if (bytes == SIZE_MAX) {
      st = FG_ERR_NOMEM;
      goto done;
    }
    void *act; /* (bytes) */
    if (owner) {
      st = fg_ops_reserve(ops, bytes);
      if (st != FG_OK) goto done;
      act = ops->scratch;
    } else {
      tmp = fg_aligned_alloc(64, bytes);
      if (!tmp) {
        st = FG_ERR_NOMEM;
        goto done;
      }
      act = tmp;
    }
    job.prep = (fg_prep_job){kern, &job.args[0], act};
    const size_t unit = kern->act_unit ? kern->act_unit : 1;
    job.prep_units = (in->nb + unit - 1) / unit; /* prepared below: inside the job when it has threads */
    for (size_t m = 0; m < n_mats; m++) job.args[m].act = act;
  }

  const size_t tile = kern->row_tile ? kern->row_tile : 1;
  size_t n_tiles = 0;
  for (size_t m = 0; m < n_mats; m++) n_tiles += (n_out[m] + tile - 1) / tile;
  const size_t per_thread = kern == &k->vec[type] ? FG_OPS_VEC_CHUNKS_PER_THREAD : FG_OPS_CHUNKS_PER_THREAD;
  const size_t want_chunks = (size_t)ops->n_threads * per_thread;
  job.chunk = (threaded ? FG_MAX((size_t)1, n_tiles / want_chunks) : n_tiles) * tile;
  job.first[0] = 0;
  for (size_t m = 0; m < n_mats; m++) job.first[m + 1] = job.first[m] + (n_out[m] + job.chunk - 1) / job.chunk;
  job.n_items = job.first[n_mats];
  job.side_kern = NULL;
  job.side_out = job.side_chunk = 0;
  if (side) { /* the side product (its kernel checked by mm_side): its rows in about two items per thread,
               * whole row tiles, after the main items */
    job.side_kern = &k->vec[side->type];
    job.side = *side;
    if (job.side_kern->act_size) job.side.act = job.side_act; /* prepared below */
    job.side_out = side_out;
    const size_t stile = job.side_kern->row_tile ? job.side_kern->row_tile : 1;
    const size_t per = threaded ? (side_out + 2 * ops->n_threads - 1) / (2 * ops->n_threads) : side_out;
    job.side_chunk = (per + stile - 1) / stile * stile;
    job.n_items += (side_out + job.side_chunk - 1) / job.side_chunk;
  }
  /* On the pool the activations are prepared inside the job, before any thread takes a work item: the
   * units in a part per thread (the parts of parallel_for), the side's rows in one more part; the
   * workers wake while the first parts are prepared, and the calling thread does not prepare them all
   * alone first. Without threads: here, before the products. */
  const bool pooled = threaded && job.n_items > 1;
  const bool side_prep = side && job.side_kern->act_size;
  if (pooled) {
    job.prep_main = FG_MIN(job.prep_units, (size_t)ops->n_threads);
    job.prep_parts = job.prep_main + side_prep;
  } else {
    if (job.prep_units) fg_prep_range(&job.prep, 0, job.prep_units, 0);
    if (side_prep) job.side_kern->act_prep(side->x, side->ldx, side->cols, side->nb, 0, side->nb, job.side_act);
  }
  atomic_init(&job.prep_next, 0);
  atomic_init(&job.prep_done, 0);
  atomic_init(&job.next, 0);
  if (pooled) fg_threadpool_run_open(ops->tp, fg_mm_worker, &job);
  else {
    for (size_t m = 0; m < n_mats; m++) kern->run(&job.args[m], 0, n_out[m]);
    if (side) job.side_kern->run(&job.side, 0, side_out);
  }

done:
  fg_aligned_free(tmp);
  if (owner) atomic_store(&ops->busy, 0);
  return st;
}

/* Checks what matmul and matmul_rows share; fills args. */
static fg_status fg_mm_check(const fg_ops *ops, const fg_mm_args *a, const fg_mat *W, size_t n_out) {
  if (!ops || !W) return FG_ERR_INVALID_ARG;
  const fg_type_traits *tr = fg_type_traits_get(W->type);
  if (!tr) return FG_ERR_UNSUPPORTED;
  uint64_t need;
  if (!fg_type_row_bytes(W->type, W->cols, &need) || W->row_bytes < need) return FG_ERR_INVALID_ARG;
  if (a->nb == 0 || n_out == 0 || W->cols == 0) return FG_OK;
  if (!W->data || !a->x || !a->y) return FG_ERR_INVALID_ARG;
  if (a->nb > 1 && (a->ldx < W->cols || a->ldy < n_out)) return FG_ERR_INVALID_ARG;
  return FG_OK;
}

/* W's packed copy when it was made for the table this ops runs */
static const uint8_t *mat_packed(const fg_ops *ops, const fg_mat *W) {
  return ops && W->packed && W->packed_for == ops->k ? (const uint8_t *)W->packed : NULL;
}

/* W·X on the pool, or on the calling thread (here) */
static fg_status matmul(fg_ops *ops, const fg_mat *W, const float *X, size_t ldx, size_t nb, float *Y, size_t ldy,
                        bool here) {
  if (!W) return FG_ERR_INVALID_ARG;
  fg_mm_args a = {W->type, W->data, W->row_bytes, NULL, W->cols, X, ldx, NULL, nb, Y, ldy, mat_packed(ops, W)};
  fg_status st = fg_mm_check(ops, &a, W, W->rows);
  if (st != FG_OK || nb == 0 || W->rows == 0) return st;
  if (W->cols == 0) {
    for (size_t b = 0; b < nb; b++) memset(Y + b * ldy, 0, W->rows * sizeof(float));
    return FG_OK;
  }
  return fg_mm_common(ops, &a, &(size_t){W->rows}, 1, here, NULL, 0);
}

fg_status fg_ops_matmul(fg_ops *ops, const fg_mat *W, const float *X, size_t ldx, size_t nb, float *Y, size_t ldy) {
  return matmul(ops, W, X, ldx, nb, Y, ldy, false);
}

fg_status fg_ops_matmul_here(fg_ops *ops, const fg_mat *W, const float *X, size_t ldx, size_t nb, float *Y, size_t ldy) {
  return matmul(ops, W, X, ldx, nb, Y, ldy, true);
}

/* The side product as the side of a job (*use), when S's one-row kernel is its vec kernel (each activation
 * row then gets what it gives that row alone) and needs at most FG_MM_SIDE_ACT bytes of prepared
 * activations; else, or when asked (here: no job to join), computed here row by row, as
 * fg_ops_matmul_here would (before the main product: neither reads the other's output) */
static fg_status mm_side(fg_ops *ops, const fg_ops_side *sd, bool here, fg_mm_args *out, bool *use) {
  *use = false;
  const fg_mat *S = sd->S;
  if (!S || !S->rows || sd->nb == 0) return FG_OK;
  if (!sd->x || !sd->y || (sd->nb > 1 && (sd->ldx < S->cols || sd->ldy < S->rows))) return FG_ERR_INVALID_ARG;
  const fg_mm_kernel *kern = &ops->k->vec[S->type];
  fg_mm_args a = {S->type, S->data, S->row_bytes, NULL, S->cols, sd->x, sd->ldx, NULL, sd->nb, sd->y, sd->ldy,
                  mat_packed(ops, S)};
  fg_status st = fg_mm_check(ops, &a, S, S->rows);
  if (st != FG_OK) return st;
  const bool gemm = ops->k->gemm[S->type].run && ops->k->gemm_min_nb[S->type] <= 1;
  if (here || !kern->run || gemm || a.packed || S->cols == 0 ||
      (kern->act_size && (!kern->act_prep || kern->act_size(S->cols, sd->nb) > FG_MM_SIDE_ACT))) {
    for (size_t b = 0; b < sd->nb && st == FG_OK; b++)
      st = matmul(ops, S, sd->x + b * sd->ldx, S->cols, 1, sd->y + b * sd->ldy, S->rows, true);
    return st;
  }
  *out = a;
  *use = true;
  return FG_OK;
}

fg_status fg_ops_matmul_n(fg_ops *ops, size_t n, const fg_mat *const *W, const float *X, size_t ldx, size_t nb,
                          float *const *Y, const size_t *ldy) {
  return fg_ops_matmul_n_side(ops, n, W, X, ldx, nb, Y, ldy, NULL);
}

fg_status fg_ops_matmul_n_side(fg_ops *ops, size_t n, const fg_mat *const *W, const float *X, size_t ldx, size_t nb,
                               float *const *Y, const size_t *ldy, const fg_ops_side *side) {
  if (!ops || (n > 0 && (!W || !Y || !ldy))) return FG_ERR_INVALID_ARG;
  bool shared = n > 0 && n <= FG_MM_MAX_MATS && nb > 0;
  for (size_t m = 0; m < n; m++) {
    if (!W[m]) return FG_ERR_INVALID_ARG;
    shared = shared && W[m]->type == W[0]->type && W[m]->cols == W[0]->cols && W[m]->cols > 0 && W[m]->rows > 0;
  }
  fg_mm_args sa;
  bool use = false;
  if (shared) {
    fg_mm_args a[FG_MM_MAX_MATS];
    size_t n_out[FG_MM_MAX_MATS];
    for (size_t m = 0; m < n; m++) {
      a[m] = (fg_mm_args){W[m]->type, W[m]->data, W[m]->row_bytes, NULL, W[m]->cols, X, ldx, NULL, nb, Y[m], ldy[m],
                          mat_packed(ops, W[m])};
      n_out[m] = W[m]->rows;
      const fg_status st = fg_mm_check(ops, &a[m], W[m], W[m]->rows);
      if (st != FG_OK) return st;
    }
    const fg_status st = side ? mm_side(ops, side, false, &sa, &use) : FG_OK;
    if (st != FG_OK) return st;
    return fg_mm_common(ops, a, n_out, n, false, use ? &sa : NULL, use ? side->S->rows : 0);
  }
  if (side) { /* no shared job: the side product here, row by row */
    const fg_status st = mm_side(ops, side, true, &sa, &use);
    if (st != FG_OK) return st;
  }
  for (size_t m = 0; m < n; m++) { /* mixed types or shapes: one product after the other */
    const fg_status st = fg_ops_matmul(ops, W[m], X, ldx, nb, Y[m], ldy[m]);
    if (st != FG_OK) return st;
  }
  return FG_OK;
}

fg_status fg_ops_matmul_rows(fg_ops *ops, const fg_mat *W, const int32_t *rows, size_t n_rows, const float *X,
                             size_t ldx, size_t nb, float *Y, size_t ldy) {
  if (!W) return FG_ERR_INVALID_ARG;
  fg_mm_args a = {W->type, W->data, W->row_bytes, rows, W->cols, X, ldx, NULL, nb, Y, ldy, NULL};
  fg_status st = fg_mm_check(ops, &a, W, n_rows);
  if (st != FG_OK || nb == 0 || n_rows == 0) return st;
  if (!rows) return FG_ERR_INVALID_ARG;
  for (size_t i = 0; i < n_rows; i++)
    if (rows[i] < 0 || (uint32_t)rows[i] >= W->rows) return FG_ERR_INVALID_ARG;
  if (W->cols == 0) {
    for (size_t b = 0; b < nb; b++) memset(Y + b * ldy, 0, n_rows * sizeof(float));
    return FG_OK;
  }
  return fg_mm_common(ops, &a, &n_rows, 1, false, NULL, 0);
}
