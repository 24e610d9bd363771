/* forward.c — the fast Gemma 3 forward over a block KV cache. Weight products go through fg_ops
 * (threaded, SIMD); attention reads K/V blocks in place, parallel over (query tile, KV head), with the
 * softmax, P·V and GELU kernels of kernels/attn.h. */
#include "model/forward.h"

#include "model/head.h"
#include "model/lora.h"

#include <math.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// Scratch

void fg_fwd_scratch_free(fg_fwd_scratch *sc) {
  float **p[] = {&sc->x,  &sc->xn, &sc->q,    &sc->k,         &sc->v,       &sc->o,      &sc->t,
                 &sc->gate, &sc->up, &sc->attn, &sc->attn_part, &sc->rope_cs, &sc->lora_t};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
    fg_aligned_free(*p[i]);
    *p[i] = NULL;
  }
  fg_free(sc->rope_freq);
  sc->rope_freq = NULL;
  sc->max_nb = 0;
}

#define ATTN_TILE_ROWS 32 /* query rows per attention tile (positions × group heads), at least one group */
/* Keys per softmax segment, a multiple of FG_KV_BLOCK: a query row's keys are taken in segments of
 * ATTN_SEG aligned positions, each with a fresh online softmax, and the segments' (max, sum, output)
 * are folded in key order (attn_fold). Prefill folds inside its tiles; decode computes the segments
 * of its one position in parallel and folds them afterwards: the same arithmetic either way, so a
 * decoded token still equals the same token prefilled, bit for bit, whatever the thread count. */
#define ATTN_SEG 64u

/* passes of at most this many rows compute the adapters' A · x beside the base products (fg_forward_batch) */
#define FWD_SIDE_ROWS 16

static uint64_t round16_u64(uint64_t n) { return (n + 15) / 16 * 16; }

/* One thread's attention scratch for up to R query rows. */
typedef struct attn_ws {
  float *qp;         /* (R, hk) query rows of the tile */
  float *s;          /* (R, FG_ATTN_BLK) scores, then weights */
  float *o;          /* (R, attn_ld) unnormalized outputs of the current segment */
  float *m, *l;      /* (R) running max and sum of the segment */
  float *c;          /* (R) rescale of this block */
  float *e;          /* (R) rescales of a fold */
  uint32_t *j0, *j1; /* (R) valid keys of this block: [j0, j1) */
  float *O, *M, *L;  /* (R, attn_ld), (R), (R): the folded segments */
} attn_ws;

/* Row stride in floats of the outputs o and O (R rows of head_dim_v): one 64-byte line more where
 * the rows would be a multiple of 1 KiB apart. Rows 1 KiB apart share 4 of the 64 sets of a 32 KiB
 * 8-way L1 (the KV cache pads its V rows for the same reason, kv_cache.h): the P·V tiles' column slice
 * of 32 rows then filled them. */
static size_t attn_ld(const fg_hparams *hp) {
  const size_t hv = hp->head_dim_v;
  return hv * sizeof(float) % 1024 == 0 ? hv + 64 / sizeof(float) : hv;
}

/* Floats of the scratch for R rows; with w, also its pointers from base. 64-bit: dimensions come from
 * the file; the allocation checks the size_t range, and the offsets stay below it. */
static uint64_t attn_ws_layout(const fg_hparams *hp, uint64_t R, float *base, attn_ws *w) {
  uint64_t off = 0;
#define ATTN_TAKE(field, type, n)                              \
  do {                                                         \
    if (w) w->field = (type *)(void *)(base + (size_t)off);    \
    off += round16_u64(n);                                     \
  } while (0)
  ATTN_TAKE(qp, float, R * hp->head_dim_k);
  ATTN_TAKE(s, float, R * FG_ATTN_BLK);
  ATTN_TAKE(o, float, R * attn_ld(hp));
  ATTN_TAKE(m, float, R);
  ATTN_TAKE(l, float, R);
  ATTN_TAKE(c, float, R);
  ATTN_TAKE(e, float, R);
  ATTN_TAKE(j0, uint32_t, R);
  ATTN_TAKE(j1, uint32_t, R);
  ATTN_TAKE(O, float, R * attn_ld(hp));
  ATTN_TAKE(M, float, R);
  ATTN_TAKE(L, float, R);
#undef ATTN_TAKE
  return off;
}

/* floats of one decode segment's partial result: (o, m, l) of the group's rows, o's rows attn_ld apart,
 * rounded to 16 floats: o starts on a 64-byte line (the segment is computed in place, P·V's rows) */
static uint64_t attn_part_floats(const fg_hparams *hp) {
  return round16_u64((uint64_t)(hp->n_head / hp->n_head_kv) * (2 + (uint64_t)attn_ld(hp)));
}

/* decode work items per KV head: the segments a query at any position < n_ctx can touch */
static uint64_t attn_max_segs(uint32_t n_ctx) { return (uint64_t)n_ctx / ATTN_SEG + 2; }

fg_status fg_fwd_scratch_init(fg_fwd_scratch *sc, const fg_model *m, size_t max_nb, uint32_t n_ctx,
                              uint32_t n_threads, fg_error *err) {
  memset(sc, 0, sizeof *sc);
  const fg_hparams *hp = &m->hp;
  /* the adapters' A · x: a row per thread, or per row of a pass that computes them beside the base products */
  const uint64_t lora_t = fg_lora_scratch_floats(m, FG_MAX(n_threads, (uint32_t)FG_MIN(max_nb, (size_t)FWD_SIDE_ROWS)));
  const size_t d = hp->n_embd, hk = hp->head_dim_k, hv = hp->head_dim_v;
  const size_t group = hp->n_head / hp->n_head_kv;
  sc->attn_rows = FG_MAX((size_t)1, ATTN_TILE_ROWS / group) * group;
  sc->attn_stride = (size_t)attn_ws_layout(hp, sc->attn_rows, NULL, NULL);
  struct { float **p; uint64_t n; } a[] = {
      {&sc->x, (uint64_t)max_nb * d},
      {&sc->xn, (uint64_t)max_nb * d},
      {&sc->q, (uint64_t)max_nb * hp->n_head * hk},
      {&sc->k, (uint64_t)max_nb * hp->n_head_kv * hk},
      {&sc->v, (uint64_t)max_nb * hp->n_head_kv * hv},
      {&sc->o, (uint64_t)max_nb * hp->n_head * hv},
      {&sc->t, (uint64_t)max_nb * FG_MAX(d, (size_t)hp->n_head_kv * hk)},
      {&sc->gate, (uint64_t)max_nb * hp->n_ff},
      {&sc->up, (uint64_t)max_nb * hp->n_ff},
      {&sc->attn, (uint64_t)n_threads * attn_ws_layout(hp, sc->attn_rows, NULL, NULL)},
      {&sc->attn_part, (uint64_t)hp->n_head_kv * attn_max_segs(n_ctx) * attn_part_floats(hp)},
      {&sc->rope_cs, (uint64_t)max_nb * 2 * hk},
      {&sc->lora_t, lora_t},
  };
  for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
    if (a[i].n == 0) continue; /* no run-time adapter */
    /* sizes are products of file-given dimensions: checked, also for a 32-bit size_t */
    uint64_t bytes = 0;
    size_t nbytes = 0;
    const bool fits = fg_mul_u64((uint64_t)a[i].n, sizeof(float), &bytes) && fg_u64_to_size(bytes, &nbytes) &&
                      a[i].n == bytes / sizeof(float);
    *a[i].p = fits ? fg_aligned_alloc(64, nbytes) : NULL;
    if (!*a[i].p) {
      fg_fwd_scratch_free(sc);
      return fg_err(err, FG_ERR_NOMEM, "out of memory for forward scratch (%zu positions)", max_nb);
    }
  }
  sc->rope_freq = fg_malloc_array(hk / 2 * 2 + 1, sizeof(double));
  if (!sc->rope_freq) {
    fg_fwd_scratch_free(sc);
    return fg_err(err, FG_ERR_NOMEM, "out of memory for forward scratch");
  }
  for (size_t i = 0; i < hk / 2; i++) {
    const double e = -2.0 * (double)i / (double)hk;
    sc->rope_freq[i] = pow((double)hp->rope_base, e);
    sc->rope_freq[hk / 2 + i] = pow((double)hp->rope_base_swa, e);
  }
  sc->ak = fg_attn_get();
  sc->max_nb = max_nb;
  sc->n_ctx = n_ctx;
  sc->n_threads = n_threads;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Elementwise pieces

/* y[k] = y[k] * s * w[k], in place, y and w never overlapping (rmsnorm's last loop, with an out that
 * might partly overlap x, stayed scalar) */
static void scale_mul(float *FG_RESTRICT y, const float *FG_RESTRICT w, size_t n, float s) {
  size_t k = 0;
  for (; k + 8 <= n; k += 8) /* a fixed group of 8: vectorized at -O2 as well (straight-line code) */
    for (size_t u = 0; u < 8; u++) y[k + u] = y[k + u] * s * w[k + u];
  for (; k < n; k++) y[k] = y[k] * s * w[k];
}

/* the sum of squares in 8 interleaved partial sums (a serial chain of adds was 5% of a prefill) */
static void rmsnorm(const float *x, const float *w, size_t n, float eps, float *out) {
  float acc[8] = {0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (size_t u = 0; u < 8; u++) acc[u] += x[i + u] * x[i + u];
  for (; i < n; i++) acc[i % 8] += x[i] * x[i];
  const float ss = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
  const float scale = 1.0f / sqrtf(ss / (float)n + eps);
  if (out != x) memcpy(out, x, n * sizeof *out);
  scale_mul(out, w, n, scale);
}

/* cos/sin table of one position for one base: cs[i] = cos, cs[half + i] = sin; freq: (dim / 2) */
static void rope_table(float *cs, uint32_t dim, uint32_t pos, const double *freq) {
  const uint32_t half = dim / 2;
  for (uint32_t i = 0; i < half; i++) {
    const double theta = (double)pos * freq[i];
    cs[i] = (float)cos(theta);
    cs[half + i] = (float)sin(theta);
  }
}

static void rope_apply(float *x, const float *cs, uint32_t dim) {
  const uint32_t half = dim / 2;
  for (uint32_t i = 0; i < half; i++) {
    const float a = x[i], b = x[i + half], c = cs[i], s = cs[half + i];
    x[i] = a * c - b * s;
    x[i + half] = a * s + b * c;
  }
}

// ----------------------------------------------------------------------------------------------
// Attention over the cache, flash-attention style. A work item is (tile of query positions, KV head):
// its rows (positions × the query heads sharing the KV head) meet each block of cached keys once,
// with an online softmax, so K/V blocks are read in place once per tile, never copied.

typedef struct attn_job {
  const fg_hparams *hp;
  const fg_layer *L;
  const fg_kv *kv;
  fg_ops *ops;
  const fg_attn_kernels *ak;
  uint32_t layer;
  uint32_t pos0;
  size_t nb;
  size_t row0;    /* the first row computed: tiles cover rows row0..nb-1 of the batch */
  size_t T;       /* positions per tile */
  size_t n_tiles;
  uint32_t seg0;  /* decode: the first segment of the position's keys */
  size_t n_seg;   /* decode: segments per KV head */
  fg_fwd_scratch *sc;
} attn_job;

/* first key a query at position p sees */
static uint32_t attn_first(const fg_hparams *hp, const fg_layer *L, uint32_t p) {
  return (L->is_swa && p + 1 > hp->sliding_window) ? p + 1 - hp->sliding_window : 0;
}

/* Folds one segment's (m, l, o) of R rows into the running (M, L, O): rows without a key in the segment
 * (l = 0) are skipped, an empty running row takes the segment as is, otherwise both are rescaled to
 * the larger max (O = fma(c2, o, O c1) through the table's fold, L = fma(c2, l, L c1)). Rows of hv floats, ld
 * apart in o and O. The side that holds the max rescales by fg_attn_exp1(0) = 1 exactly (tests/test_attn.c),
 * the other by fg_attn_exp1 of the (non-positive) difference: all rows' at once through the table's exp1,
 * into e (R). */
static void attn_fold(const fg_attn_kernels *ak, size_t R, size_t hv, size_t ld, const float *m, const float *l,
                      const float *o, float *M, float *L, float *O, float *e) {
  for (size_t r = 0; r < R; r++) e[r] = M[r] > m[r] ? m[r] - M[r] : M[r] - m[r]; /* unused where l or L is 0 */
  ak->exp1(e, e, R);
  for (size_t r = 0; r < R; r++) {
    if (l[r] == 0.0f) continue;
    if (L[r] == 0.0f) {
      M[r] = m[r];
      L[r] = l[r];
      memcpy(O + r * ld, o + r * ld, hv * sizeof(float));
      continue;
    }
    const int big = M[r] > m[r];
    const float c1 = big ? 1.0f : e[r], c2 = big ? e[r] : 1.0f;
    ak->fold(O + r * ld, c1, o + r * ld, c2, hv);
    L[r] = fmaf(c2, l[r], L[r] * c1);
    M[r] = big ? M[r] : m[r];
  }
}

/* The rows of query positions [t0, t0 + nt) of the batch (× the group's heads of KV head kvh) against
 * the keys [klo, khi] (each row also limited to what its position sees): (M, L, O) = the folded
 * segments, O unnormalized. w: one thread's scratch (its M, L, O are not used here). The first
 * segment is computed in (M, L, O) itself, the later ones in w's (m, l, o) and folded: what folding
 * the first into empty rows would give (attn_fold copies it), without the copy. */
static void attn_rows(const attn_job *j, size_t t0, size_t nt, uint32_t kvh, uint32_t klo, uint32_t khi,
                      const attn_ws *w, float *M, float *L, float *O) {
  const fg_hparams *hp = j->hp;
  const fg_kv *kv = j->kv;
  const size_t hk = hp->head_dim_k, hv = hp->head_dim_v, group = hp->n_head / hp->n_head_kv, ld = attn_ld(hp);
  const size_t nq = (size_t)hp->n_head * hk, elt = kv->elt, R = nt * group;
  float *qp = w->qp, *s = w->s, *o = w->o, *m = w->m, *l = w->l, *c = w->c;
  uint32_t *j0 = w->j0, *j1 = w->j1;
  for (size_t tt = 0; tt < nt; tt++)
    memcpy(qp + tt * group * hk, j->sc->q + (t0 + tt) * nq + (size_t)kvh * group * hk, group * hk * sizeof(float));
  const uint32_t p_lo = j->pos0 + (uint32_t)t0;
  const uint32_t first = klo / FG_KV_BLOCK * FG_KV_BLOCK;
  float *sm = M, *sl = L, *so = O; /* (R), (R), (R, ld): the current segment's max, sum and output */
  FG_ASSERT(klo <= khi);
  for (uint32_t bs = first; bs <= khi; bs += FG_KV_BLOCK) {
    if (bs == first || bs % ATTN_SEG == 0) { /* a new segment */
      if (bs != first) {
        if (sm != M) attn_fold(j->ak, R, hv, ld, m, l, o, M, L, O, w->e);
        sm = m;
        sl = l;
        so = o;
      }
      for (size_t r = 0; r < R; r++) {
        sm[r] = -INFINITY;
        sl[r] = 0.0f;
      }
      memset(so, 0, R * ld * sizeof(float));
    }
    const uint32_t ja = FG_MAX(bs, klo) - bs, jb = FG_MIN(bs + FG_KV_BLOCK, khi + 1) - bs;
    j->ak->qk(qp, hk, R, hk, (const uint8_t *)fg_kv_kt(kv, j->layer, bs) + (size_t)kvh * hk * FG_KV_BLOCK * elt,
              kv->type, s);
    for (size_t r = 0; r < R; r++) {
      const uint32_t p = p_lo + (uint32_t)(r / group);
      const uint32_t a = FG_MAX(bs, attn_first(hp, j->L, p)), b = FG_MIN(bs + FG_KV_BLOCK, p + 1);
      j0[r] = a < b ? a - bs : 0;
      j1[r] = a < b ? b - bs : 0;
    }
    j->ak->softmax(s, R, j0, j1, sm, sl, c);
    j->ak->pv(so, ld, R, hv, c, s, ja, jb, (const uint8_t *)fg_kv_v(kv, j->layer, bs + ja) + (size_t)kvh * hv * elt,
              kv->v_row, kv->type);
  }
  if (sm != M) attn_fold(j->ak, R, hv, ld, m, l, o, M, L, O, w->e);
}

/* O / L of R rows into the batch's attention output, rows of positions from t0 */
static void attn_store(const attn_job *j, size_t t0, size_t R, uint32_t kvh, const float *L, const float *O) {
  const fg_hparams *hp = j->hp;
  const size_t hv = hp->head_dim_v, group = hp->n_head / hp->n_head_kv, no = (size_t)hp->n_head * hv, ld = attn_ld(hp);
  for (size_t r = 0; r < R; r++) {
    const float inv = 1.0f / L[r];
    float *dst = j->sc->o + (t0 + r / group) * no + ((size_t)kvh * group + r % group) * hv;
    for (size_t i = 0; i < hv; i++) dst[i] = O[r * ld + i] * inv;
  }
}

/* this thread's scratch, laid out for attn_rows rows */
static attn_ws attn_ws_of(const attn_job *j, uint32_t tid) {
  attn_ws w;
  attn_ws_layout(j->hp, j->sc->attn_rows, j->sc->attn + (size_t)tid * j->sc->attn_stride, &w);
  return w;
}

static void attn_tile(const attn_job *j, size_t tile, uint32_t kvh, const attn_ws *w) {
  const size_t t0 = j->row0 + tile * j->T, nt = FG_MIN(j->T, j->nb - t0);
  const uint32_t p_lo = j->pos0 + (uint32_t)t0, p_hi = p_lo + (uint32_t)nt - 1;
  attn_rows(j, t0, nt, kvh, attn_first(j->hp, j->L, p_lo), p_hi, w, w->M, w->L, w->O);
  attn_store(j, t0, nt * (j->hp->n_head / j->hp->n_head_kv), kvh, w->L, w->O);
}

/* decode: the partial (m, l, o) of work item idx in attn_part */
static void attn_part_at(const attn_job *j, size_t idx, float **m, float **l, float **o) {
  const size_t group = j->hp->n_head / j->hp->n_head_kv;
  *o = j->sc->attn_part + idx * (size_t)attn_part_floats(j->hp);
  *m = *o + group * attn_ld(j->hp);
  *l = *m + group;
}

/* decode: work item = (KV head, segment) of the one position; its partial (m, l, o) goes to attn_part */
static void attn_seg_range(void *ud, size_t i0, size_t i1, uint32_t tid) {
  attn_job *j = ud;
  const attn_ws w = attn_ws_of(j, tid);
  for (size_t idx = i0; idx < i1; idx++) {
    const uint32_t kvh = (uint32_t)(idx / j->n_seg), seg = j->seg0 + (uint32_t)(idx % j->n_seg);
    const uint32_t p = j->pos0, klo = FG_MAX(seg * ATTN_SEG, attn_first(j->hp, j->L, p));
    const uint32_t khi = FG_MIN(seg * ATTN_SEG + ATTN_SEG - 1, p);
    float *M, *L, *O;
    attn_part_at(j, idx, &M, &L, &O);
    attn_rows(j, 0, 1, kvh, klo, khi, &w, M, L, O);
  }
}

/* decode: folds each KV head's segments in key order and stores the normalized output */
static void attn_seg_merge(const attn_job *j) {
  const fg_hparams *hp = j->hp;
  const size_t group = hp->n_head / hp->n_head_kv;
  float *e = attn_ws_of(j, 0).e; /* (group) the first thread's scratch: free once the segments are done */
  for (uint32_t kvh = 0; kvh < hp->n_head_kv; kvh++) {
    float *M, *L, *O, *m, *l, *o;
    attn_part_at(j, (size_t)kvh * j->n_seg, &M, &L, &O);
    for (size_t sg = 1; sg < j->n_seg; sg++) {
      attn_part_at(j, (size_t)kvh * j->n_seg + sg, &m, &l, &o);
      attn_fold(j->ak, group, hp->head_dim_v, attn_ld(hp), m, l, o, M, L, O, e);
    }
    attn_store(j, 0, group, kvh, L, O);
  }
}

static void attn_range(void *ud, size_t i0, size_t i1, uint32_t tid) {
  attn_job *j = ud;
  const attn_ws w = attn_ws_of(j, tid);
  for (size_t idx = i0; idx < i1; idx++) {
    const uint32_t kvh = (uint32_t)(idx % j->hp->n_head_kv);
    const size_t u = idx / j->hp->n_head_kv;
    /* tiles 0, n-1, 1, n-2, ...: contiguous index ranges get balanced causal work */
    const size_t tile = u % 2 == 0 ? u / 2 : j->n_tiles - 1 - u / 2;
    attn_tile(j, tile, kvh, &w);
  }
}

/* The side product of a pass of at most FWD_SIDE_ROWS rows (fg_ops_matmul_n_side): adapter group g's
 * A · x of the nb rows of x into t (a row per max_rank floats), in *s; NULL without adapters or for a
 * longer pass (its per-row phase computes them). */
static const fg_ops_side *adapter_side(fg_ops_side *s, const fg_lora_layer *LL, int g, const float *x, size_t ldx,
                                       size_t nb, float *t, size_t max_rank) {
  if (!LL || nb > FWD_SIDE_ROWS) return NULL;
  *s = (fg_ops_side){&LL->a[g], x, ldx, nb, t, max_rank};
  return s;
}

/* GELU(gate) * up over rows of the batch, after the run-time adapters' part of gate and up */
typedef struct gelu_job {
  const fg_attn_kernels *ak;
  float *gate;
  float *up;
  size_t ff;
  fg_ops *ops;
  const fg_lora_layer *LL; /* or NULL */
  const float *xn;         /* (nb, d) the products' input */
  size_t d;
  float *lora_t;           /* (threads, max_rank); t_ready: row t's A · x at t * max_rank */
  size_t max_rank;
  bool t_ready;            /* A · x of every row is in lora_t already (fg_ops_matmul_n_side) */
} gelu_job;

static void gelu_range(void *ud, size_t i0, size_t i1, uint32_t tid) {
  const gelu_job *g = ud;
  for (size_t t = i0; g->LL && t < i1; t++) {
    float *const y[] = {g->gate + t * g->ff, g->up + t * g->ff};
    if (g->t_ready)
      fg_lora_apply_bt(g->ak, g->LL, FG_LORA_IN_GATE_UP, g->lora_t + t * g->max_rank, y);
    else
      fg_lora_apply_row(g->ops, g->ak, g->LL, FG_LORA_IN_GATE_UP, g->xn + t * g->d, y, g->lora_t + tid * g->max_rank);
  }
  g->ak->gelu_mul(g->gate + i0 * g->ff, g->up + i0 * g->ff, (i1 - i0) * g->ff);
}

// ----------------------------------------------------------------------------------------------
// Per-row steps between the matrix products, parallel over the batch's rows

enum { ROWS_EMBED, ROWS_QKV, ROWS_POST_ATTN, ROWS_POST_FFN };

typedef struct rows_job {
  const fg_model *m;
  fg_ops *ops;
  const fg_layer *L;     /* the current layer */
  const fg_lora_layer *LL; /* its run-time adapters, or NULL */
  const fg_layer *next;  /* whose attn_norm makes xn (EMBED, POST_FFN), or NULL */
  fg_kv *kv;
  fg_fwd_scratch *sc;
  const fg_fwd_args *a;
  uint32_t layer;
  int phase;
  size_t row0; /* rows row0 + [t0, t1) of the batch are this phase's [t0, t1) */
  bool t_ready; /* the phase's A · x of row0 + t is in lora_t + t * max_rank already (fg_ops_matmul_n_side) */
} rows_job;

static void rows_range(void *ud, size_t t0, size_t t1, uint32_t tid) {
  const rows_job *j = ud;
  const fg_hparams *hp = &j->m->hp;
  fg_fwd_scratch *sc = j->sc;
  const size_t d = hp->n_embd, hk = hp->head_dim_k, hv = hp->head_dim_v;
  const size_t nq = (size_t)hp->n_head * hk, nk = (size_t)hp->n_head_kv * hk, nv = (size_t)hp->n_head_kv * hv;
  const size_t ldt = FG_MAX(d, nk); /* row stride of t when it holds f16 K rows */
  const size_t max_rank = j->LL ? j->m->lora->max_rank : 0;
  float *lora_t = j->LL ? sc->lora_t + (size_t)tid * max_rank : NULL; /* this thread's A · x */
  for (size_t t = j->row0 + t0; t < j->row0 + t1; t++) {
    const float *side_t = j->t_ready ? sc->lora_t + (t - j->row0) * max_rank : NULL; /* row t's A · x */
    const uint32_t p = j->a->pos0 + (uint32_t)t;
    float *x = sc->x + t * d, *xn = sc->xn + t * d, *tr = sc->t + t * d;
    switch (j->phase) {
      case ROWS_EMBED:
        if (j->a->ids)
          fg_model_embed(j->m, j->a->ids[t], x);
        else
          memcpy(x, j->a->embd + t * d, d * sizeof(float));
        rope_table(sc->rope_cs + t * 2 * hk, (uint32_t)hk, p, sc->rope_freq);
        rope_table(sc->rope_cs + t * 2 * hk + hk, (uint32_t)hk, p, sc->rope_freq + hk / 2);
        rmsnorm(x, j->next->attn_norm, d, hp->rms_eps, xn);
        break;
      case ROWS_QKV: {
        if (j->LL) {
          float *const y[] = {sc->q + t * nq, sc->k + t * nk, sc->v + t * nv};
          if (j->t_ready)
            fg_lora_apply_bt(sc->ak, j->LL, FG_LORA_IN_QKV, side_t, y);
          else
            fg_lora_apply_row(j->ops, sc->ak, j->LL, FG_LORA_IN_QKV, xn, y, lora_t);
        }
        const float *cs = sc->rope_cs + t * 2 * hk + (j->L->is_swa ? hk : 0);
        for (uint32_t h = 0; h < hp->n_head; h++) {
          float *qh = sc->q + t * nq + (size_t)h * hk;
          rmsnorm(qh, j->L->q_norm, hk, hp->rms_eps, qh);
          rope_apply(qh, cs, (uint32_t)hk);
          const float attn_scale = hp->attn_scale; /* a local: qh may not alias it */
          size_t i = 0;
          for (; i + 8 <= hk; i += 8)
            for (size_t u = 0; u < 8; u++) qh[i + u] *= attn_scale;
          for (; i < hk; i++) qh[i] *= attn_scale;
        }
        for (uint32_t h = 0; h < hp->n_head_kv; h++) {
          float *kh = sc->k + t * nk + (size_t)h * hk;
          rmsnorm(kh, j->L->k_norm, hk, hp->rms_eps, kh);
          rope_apply(kh, cs, (uint32_t)hk);
        }
        void *vdst = fg_kv_v(j->kv, j->layer, p);
        if (j->kv->type == FG_TYPE_F16) {
          uint16_t *kh = (uint16_t *)(void *)(sc->t + t * ldt); /* (nk) halves; t is free until wo */
          sc->ak->to_f16(sc->k + t * nk, kh, nk);
          fg_kv_write_k(j->kv, j->layer, p, kh);
          sc->ak->to_f16(sc->v + t * nv, vdst, nv);
        } else {
          fg_kv_write_k(j->kv, j->layer, p, sc->k + t * nk);
          memcpy(vdst, sc->v + t * nv, nv * sizeof(float));
        }
      } break;
      case ROWS_POST_ATTN:
        if (j->LL && j->t_ready)
          fg_lora_apply_bt(sc->ak, j->LL, FG_LORA_IN_O, side_t, &tr);
        else if (j->LL)
          fg_lora_apply_row(j->ops, sc->ak, j->LL, FG_LORA_IN_O, sc->o + t * (size_t)hp->n_head * hv, &tr, lora_t);
        rmsnorm(tr, j->L->post_attn_norm, d, hp->rms_eps, tr);
        for (size_t i = 0; i < d; i++) x[i] += tr[i];
        rmsnorm(x, j->L->ffn_norm, d, hp->rms_eps, xn);
        break;
      case ROWS_POST_FFN:
        if (j->LL && j->t_ready)
          fg_lora_apply_bt(sc->ak, j->LL, FG_LORA_IN_DOWN, side_t, &tr);
        else if (j->LL)
          fg_lora_apply_row(j->ops, sc->ak, j->LL, FG_LORA_IN_DOWN, sc->gate + t * (size_t)hp->n_ff, &tr, lora_t);
        rmsnorm(tr, j->L->post_ffw_norm, d, hp->rms_eps, tr);
        for (size_t i = 0; i < d; i++) x[i] += tr[i];
        if (j->next) rmsnorm(x, j->next->attn_norm, d, hp->rms_eps, xn);
        break;
      default:
        break;
    }
  }
}

// ----------------------------------------------------------------------------------------------
// One batch

fg_status fg_forward_batch(const fg_model *m, fg_ops *ops, fg_kv *kv, fg_fwd_scratch *sc, const fg_fwd_args *a,
                           fg_error *err) {
  const fg_hparams *hp = &m->hp;
  const size_t nb = a->nb, d = hp->n_embd, hk = hp->head_dim_k, hv = hp->head_dim_v, ff = hp->n_ff;
  const size_t nq = (size_t)hp->n_head * hk, nk = (size_t)hp->n_head_kv * hk, nv = (size_t)hp->n_head_kv * hv;
  const size_t no = (size_t)hp->n_head * hv;
  FG_ASSERT(nb >= 1 && nb <= sc->max_nb && a->pos0 + nb <= sc->n_ctx);
  fg_status st;
  /* the first row whose output after the last layer is read: the hidden rows, else the logits row */
  const size_t out0 = a->hidden ? a->hidden_from : a->logits ? nb - 1 : nb;

  rows_job rj = {m, ops, NULL, NULL, NULL, kv, sc, a, 0, ROWS_EMBED, 0, false};
  rj.next = &m->layers[0];
  fg_ops_parallel_for(ops, nb, rows_range, &rj);

  for (uint32_t il = 0; il < hp->n_layer; il++) {
    if (a->abort_cb && a->abort_cb(a->abort_ud)) return fg_err(err, FG_ERR_ABORTED, "aborted by the callback");
    const fg_layer *L = &m->layers[il];
    /* run-time adapters of this layer, or NULL (no cost without them): applied row by row inside the per-row
     * phases below, right after the products they belong to (fg_lora_apply_row) */
    const fg_lora_layer *LL = m->lora && m->lora->layers ? &m->lora->layers[il] : NULL;
    rj.L = L;
    rj.LL = LL;
    rj.layer = il;
    /* A pass of at most FWD_SIDE_ROWS rows computes each adapter group's A · x of its rows beside the
     * base product that precedes the group's per-row phase (the same input), as work items of that job,
     * into lora_t (a row per max_rank floats): what fg_lora_apply_row would compute for each row alone.
     * Split by rows, a pass of fewer rows than threads would leave threads idle while the calling thread
     * computes a row's A · x. Longer passes compute them in the per-row phases, split over the threads. */
    const size_t max_rank = LL ? m->lora->max_rank : 0;
    fg_ops_side side;
    const fg_ops_side *sd;
    {
      const fg_mat *w[] = {&L->wq, &L->wk, &L->wv};
      float *y[] = {sc->q, sc->k, sc->v};
      const size_t ld[] = {nq, nk, nv};
      sd = adapter_side(&side, LL, FG_LORA_IN_QKV, sc->xn, d, nb, sc->lora_t, max_rank);
      if ((st = fg_ops_matmul_n_side(ops, 3, w, sc->xn, d, nb, y, ld, sd)) != FG_OK) goto fail;
      rj.t_ready = sd != NULL;
    }
    rj.phase = ROWS_QKV;
    fg_ops_parallel_for(ops, nb, rows_range, &rj);
    /* The last layer's K and V are the cache's; the rest of it matters only for the rows whose output is
     * read (the hidden rows, the logits row): a chunk that only fills the cache stops here, the others
     * go on with rows r0..nb-1 alone. Each row's arithmetic is that of the whole batch (every table
     * equals its spec row by row, attention as above), so the results do not change. */
    const size_t r0 = il + 1 < hp->n_layer ? 0 : out0, nr = nb - r0;
    if (nr == 0) break;
    {
      /* about 3 work items per thread, tiles of at most attn_rows query rows */
      const size_t group = hp->n_head / hp->n_head_kv, n_kv = hp->n_head_kv;
      const size_t want = 3 * (size_t)sc->n_threads;
      const size_t T = FG_MAX((size_t)1, FG_MIN(sc->attn_rows / group, (nr * n_kv + want - 1) / want));
      attn_job job = {.hp = hp, .L = L, .kv = kv, .ops = ops, .ak = sc->ak, .layer = il, .pos0 = a->pos0,
                      .nb = nb, .row0 = r0, .T = T, .n_tiles = (nr + T - 1) / T, .sc = sc};
      if (nb == 1) { /* decode: the position's key segments in parallel, folded afterwards */
        job.seg0 = attn_first(hp, L, a->pos0) / ATTN_SEG;
        job.n_seg = a->pos0 / ATTN_SEG - job.seg0 + 1;
        fg_ops_parallel_for(ops, job.n_seg * n_kv, attn_seg_range, &job);
        attn_seg_merge(&job);
      } else {
        fg_ops_parallel_for(ops, job.n_tiles * n_kv, attn_range, &job);
      }
    }
    {
      sd = adapter_side(&side, LL, FG_LORA_IN_O, sc->o + r0 * no, no, nr, sc->lora_t, max_rank);
      if ((st = fg_ops_matmul_n_side(ops, 1, &(const fg_mat *){&L->wo}, sc->o + r0 * no, no, nr,
                                     &(float *){sc->t + r0 * d}, &(size_t){d}, sd)) != FG_OK)
        goto fail;
      rj.t_ready = sd != NULL;
    }
    rj.phase = ROWS_POST_ATTN;
    rj.row0 = r0;
    fg_ops_parallel_for(ops, nr, rows_range, &rj);
    {
      const fg_mat *w[] = {&L->w_gate, &L->w_up};
      float *y[] = {sc->gate + r0 * ff, sc->up + r0 * ff};
      const size_t ld[] = {ff, ff};
      sd = adapter_side(&side, LL, FG_LORA_IN_GATE_UP, sc->xn + r0 * d, d, nr, sc->lora_t, max_rank);
      if ((st = fg_ops_matmul_n_side(ops, 2, w, sc->xn + r0 * d, d, nr, y, ld, sd)) != FG_OK) goto fail;
    }
    gelu_job gj = {sc->ak, sc->gate + r0 * ff, sc->up + r0 * ff, ff, ops, LL, sc->xn + r0 * d, d, sc->lora_t,
                   max_rank, sd != NULL};
    fg_ops_parallel_for(ops, nr, gelu_range, &gj);
    {
      sd = adapter_side(&side, LL, FG_LORA_IN_DOWN, sc->gate + r0 * ff, ff, nr, sc->lora_t, max_rank);
      if ((st = fg_ops_matmul_n_side(ops, 1, &(const fg_mat *){&L->w_down}, sc->gate + r0 * ff, ff, nr,
                                     &(float *){sc->t + r0 * d}, &(size_t){d}, sd)) != FG_OK)
        goto fail;
      rj.t_ready = sd != NULL;
    }
    rj.phase = ROWS_POST_FFN;
    rj.next = il + 1 < hp->n_layer ? &m->layers[il + 1] : NULL;
    fg_ops_parallel_for(ops, nr, rows_range, &rj);
  }

  FG_ASSERT(!a->hidden || a->hidden_from < nb);
  if (a->hidden)
    for (size_t t = a->hidden_from; t < nb; t++)
      rmsnorm(sc->x + t * d, m->output_norm, d, hp->rms_eps, a->hidden + (t - a->hidden_from) * d);
  if (a->logits) rmsnorm(sc->x + (nb - 1) * d, m->output_norm, d, hp->rms_eps, sc->xn);
  if (a->logits) {
    if ((st = fg_model_head(ops, m, sc->xn, d, 1, a->logits, hp->n_vocab)) != FG_OK) goto fail;
    fg_head_softcap_rows(m, a->logits, hp->n_vocab);
  }
  return FG_OK;
fail:
  return fg_err(err, st, "forward: matrix product failed (%s)", fg_status_str(st));
}
