/* session.c — sessions: append tokens through the fast forward, snapshot/restore/fork by sharing KV
 * blocks. Every call either succeeds or leaves the session exactly as it was. */
#include "session/session.h"

#include "model/head.h"

#include <string.h>

#define FG_DEFAULT_BATCH 256u

// ----------------------------------------------------------------------------------------------
// Shared logits

fg_logits_buf *fg_logits_new(uint32_t n) {
  fg_logits_buf *b = fg_malloc(sizeof *b + (size_t)n * sizeof(float));
  if (!b) return NULL;
  atomic_init(&b->refs, 1);
  b->n = n;
  return b;
}

fg_logits_buf *fg_logits_ref(fg_logits_buf *b) {
  if (b) atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
  return b;
}

void fg_logits_unref(fg_logits_buf *b) {
  if (b && atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) fg_free(b);
}

// ----------------------------------------------------------------------------------------------
// Create / free

void fg_session_params_init(fg_session_params *p) {
  if (p) memset(p, 0, sizeof *p);
}

static fg_status resolve_params(const fg_model *m, const fg_session_params *in, fg_session_params *p, fg_error *err) {
  fg_session_params_init(p);
  if (in) *p = *in;
  if (p->n_ctx == 0) p->n_ctx = m->hp.n_ctx_train;
  if (p->n_ctx > m->hp.n_ctx_train)
    return fg_err(err, FG_ERR_INVALID_ARG, "n_ctx %u exceeds the model's context length %u", p->n_ctx,
                  m->hp.n_ctx_train);
  if (p->n_threads == 0) p->n_threads = fg_cpu_count();
  if (p->n_threads > 256) return fg_err(err, FG_ERR_INVALID_ARG, "n_threads %u is out of range (1..256)", p->n_threads);
  if (p->n_batch == 0) p->n_batch = FG_DEFAULT_BATCH;
  if (p->n_batch > 4096) return fg_err(err, FG_ERR_INVALID_ARG, "n_batch %u is out of range (1..4096)", p->n_batch);
  if (p->kv_type != FG_TYPE_F32 && p->kv_type != FG_TYPE_F16)
    return fg_err(err, FG_ERR_UNSUPPORTED, "kv_type %u: only f32 (0) and f16 (1) KV caches are implemented",
                  p->kv_type);
  return FG_OK;
}

static void session_destroy(fg_session *s) {
  if (!s) return;
  fg_kv_release(&s->kv);
  fg_free(s->tokens);
  fg_logits_unref(s->logits);
  fg_ops_free(s->ops);
  fg_fwd_scratch_free(&s->scratch);
  fg_model_release(s->model);
  fg_free(s);
}

static fg_status session_new(const fg_model *m, const fg_session_params *params, fg_session **out, fg_error *err) {
  *out = NULL;
  fg_session *s = fg_calloc(1, sizeof *s);
  if (!s) return fg_err(err, FG_ERR_NOMEM, "out of memory for a session");
  s->model = fg_model_retain(m); /* released by session_destroy */
  fg_status st = resolve_params(m, params, &s->params, err);
  if (st == FG_OK) {
    s->n_ctx = s->params.n_ctx;
    st = fg_ops_create(s->params.n_threads, &s->ops, err);
  }
  if (st == FG_OK) {
    s->params.n_threads = fg_ops_n_threads(s->ops);
    st = fg_fwd_scratch_init(&s->scratch, m, s->params.n_batch, s->n_ctx, s->params.n_threads, err);
  }
  if (st == FG_OK)
    st = fg_kv_init(&s->kv, m->hp.n_layer, m->hp.n_head_kv * m->hp.head_dim_k, m->hp.n_head_kv * m->hp.head_dim_v,
                    s->params.kv_type, err);
  if (st != FG_OK) {
    session_destroy(s);
    return st;
  }
  *out = s;
  return FG_OK;
}

fg_status fg_session_create(const fg_model *m, const fg_session_params *params, fg_session **out, fg_error *err) {
  fg_error local;
  if (!err) err = &local;
  fg_err_clear(err);
  if (out) *out = NULL;
  if (!m || !out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_session_create: %s is NULL", m ? "out" : "model");
  fg_status st = session_new(m, params, out, err);
  if (st != FG_OK) fg_log(FG_LOG_ERROR, "fg_session_create: %s", err->msg);
  return st;
}

void fg_session_free(fg_session *s) { session_destroy(s); }

// ----------------------------------------------------------------------------------------------
// Append

static fg_status tokens_reserve(fg_session *s, uint32_t n) {
  if (n <= s->tokens_cap) return FG_OK;
  uint32_t cap = s->tokens_cap ? s->tokens_cap : 256;
  while (cap < n) cap = cap > UINT32_MAX / 2 ? n : cap * 2;
  int32_t *t = fg_realloc(s->tokens, (size_t)cap * sizeof *t);
  if (!t) return FG_ERR_NOMEM;
  s->tokens = t;
  s->tokens_cap = cap;
  return FG_OK;
}

/* Sliding layers keep only what a query at position `pos` (the next one) can see: positions >= pos -
 * window + 1. Nothing below `pos` can be dropped by fg_session_rewind afterwards (s->floor). */
static void trim_window(fg_session *s, uint32_t pos) {
  const fg_model *m = s->model;
  s->floor = pos;
  if (m->hp.sliding_window == 0 || pos + 1 <= m->hp.sliding_window) return;
  for (uint32_t il = 0; il < m->hp.n_layer; il++)
    if (m->layers[il].is_swa) fg_kv_drop_before(&s->kv, il, pos + 1 - m->hp.sliding_window);
}

/* Appends n rows (ids or embeddings); all-or-nothing. */
static fg_status session_append(fg_session *s, const int32_t *ids, const float *embd, size_t n, int32_t *next_id) {
  const fg_model *m = s->model;
  fg_error *err = &s->err;
  fg_err_clear(err);
  if (n == 0) return fg_err(err, FG_ERR_INVALID_ARG, "no tokens to append (n == 0)");
  if (!ids && !embd) return fg_err(err, FG_ERR_INVALID_ARG, "NULL input");
  if (n > (size_t)(s->n_ctx - s->pos))
    return fg_err(err, FG_ERR_CONTEXT_FULL, "%zu tokens do not fit: %u of %u positions are used", n, s->pos, s->n_ctx);
  for (size_t i = 0; ids && i < n; i++)
    if (ids[i] < 0 || (uint32_t)ids[i] >= m->hp.n_vocab)
      return fg_err(err, FG_ERR_INVALID_ARG, "token id %d at index %zu is outside the vocabulary (0..%u)", ids[i], i,
                    m->hp.n_vocab - 1);
  const uint32_t pos0 = s->pos, pos1 = s->pos + (uint32_t)n;
  if (tokens_reserve(s, pos1) != FG_OK) return fg_err(err, FG_ERR_NOMEM, "out of memory for the token history");
  /* the session's logits buffer is reused when nothing else holds it (the forward writes logits only
   * at its very end, after the last point of failure); one shared with a snapshot is never written */
  fg_logits_buf *lg = s->logits && atomic_load_explicit(&s->logits->refs, memory_order_acquire) == 1
                          ? s->logits
                          : fg_logits_new(m->hp.n_vocab);
  if (!lg) return fg_err(err, FG_ERR_NOMEM, "out of memory for logits");

  fg_status st = fg_kv_prepare(&s->kv, pos0, pos1, err);
  for (uint32_t p = pos0; p < pos1 && st == FG_OK;) {
    const uint32_t nb = FG_MIN(pos1 - p, s->params.n_batch);
    fg_fwd_args a = {
        .ids = ids ? ids + (p - pos0) : NULL,
        .embd = embd ? embd + (size_t)(p - pos0) * m->hp.n_embd : NULL,
        .nb = nb,
        .pos0 = p,
        .logits = p + nb == pos1 ? lg->data : NULL,
        .abort_cb = s->params.abort_cb,
        .abort_ud = s->params.abort_user_data,
    };
    st = fg_forward_batch(m, s->ops, &s->kv, &s->scratch, &a, err);
    p += nb;
  }
  if (st != FG_OK) {
    fg_kv_truncate(&s->kv, pos0, pos1); /* positions < pos0 were never written */
    if (lg != s->logits) fg_logits_unref(lg);
    return st;
  }
  /* commit */
  for (size_t i = 0; i < n; i++) s->tokens[pos0 + i] = ids ? ids[i] : -1;
  s->pos = pos1;
  if (lg != s->logits) {
    fg_logits_unref(s->logits);
    s->logits = lg;
  }
  trim_window(s, pos1);
  if (next_id) *next_id = (int32_t)fg_ops_argmax(s->ops, lg->data, m->hp.n_vocab);
  return FG_OK;
}

fg_status fg_session_prefill(fg_session *s, const int32_t *ids, size_t n, int32_t *next_id) {
  if (!s) return FG_ERR_INVALID_ARG;
  if (!ids) return fg_err(&s->err, FG_ERR_INVALID_ARG, "ids is NULL");
  return session_append(s, ids, NULL, n, next_id);
}

fg_status fg_session_step(fg_session *s, int32_t id, int32_t *next_id) {
  if (!s) return FG_ERR_INVALID_ARG;
  return session_append(s, &id, NULL, 1, next_id);
}

fg_status fg_session_prefill_embeddings(fg_session *s, const float *rows, size_t n, int32_t *next_id) {
  if (!s) return FG_ERR_INVALID_ARG;
  if (!rows) return fg_err(&s->err, FG_ERR_INVALID_ARG, "rows is NULL");
  return session_append(s, NULL, rows, n, next_id);
}

/* Appends n ids through the forward without the LM head: the final-normed hidden rows of the last n_out
 * positions go to hidden ((n_out, n_embd), in order). Same validation and all-or-nothing contract as
 * prefill; on success s->logits is released (fg_session_logits returns NULL until the next prefill/step),
 * so stale logits can never be read for the new position. trim: drop the sliding-window blocks the next
 * position no longer sees (false: keep them, so that fg_session_rewind can take positions back). */
static fg_status append_nohead(fg_session *s, const int32_t *ids, size_t n, size_t n_out, float *hidden, bool trim) {
  const fg_model *m = s->model;
  fg_error *err = &s->err;
  fg_err_clear(err);
  if (!ids || !hidden) return fg_err(err, FG_ERR_INVALID_ARG, "ids and hidden are required");
  if (n == 0) return fg_err(err, FG_ERR_INVALID_ARG, "no tokens to append (n == 0)");
  if (n_out == 0 || n_out > n) return fg_err(err, FG_ERR_INVALID_ARG, "%zu hidden rows asked of %zu tokens", n_out, n);
  if (n > (size_t)(s->n_ctx - s->pos))
    return fg_err(err, FG_ERR_CONTEXT_FULL, "%zu tokens do not fit: %u of %u positions are used", n, s->pos, s->n_ctx);
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || (uint32_t)ids[i] >= m->hp.n_vocab)
      return fg_err(err, FG_ERR_INVALID_ARG, "token id %d at index %zu is outside the vocabulary (0..%u)", ids[i], i,
                    m->hp.n_vocab - 1);
  const uint32_t pos0 = s->pos, pos1 = s->pos + (uint32_t)n;
  const uint32_t out0 = pos1 - (uint32_t)n_out; /* first position whose hidden row is written */
  if (tokens_reserve(s, pos1) != FG_OK) return fg_err(err, FG_ERR_NOMEM, "out of memory for the token history");
  fg_status st = fg_kv_prepare(&s->kv, pos0, pos1, err);
  for (uint32_t p = pos0; p < pos1 && st == FG_OK;) {
    const uint32_t nb = FG_MIN(pos1 - p, s->params.n_batch);
    const bool rows_here = p + nb > out0;
    fg_fwd_args a = {
        .ids = ids + (p - pos0),
        .nb = nb,
        .pos0 = p,
        .hidden = rows_here ? hidden + (size_t)(p > out0 ? p - out0 : 0) * m->hp.n_embd : NULL,
        .hidden_from = rows_here && out0 > p ? out0 - p : 0,
        .abort_cb = s->params.abort_cb,
        .abort_ud = s->params.abort_user_data,
    };
    st = fg_forward_batch(m, s->ops, &s->kv, &s->scratch, &a, err);
    p += nb;
  }
  if (st != FG_OK) {
    fg_kv_truncate(&s->kv, pos0, pos1);
    return st;
  }
  memcpy(s->tokens + pos0, ids, n * sizeof *ids);
  s->pos = pos1;
  fg_logits_unref(s->logits);
  s->logits = NULL;
  if (trim) trim_window(s, pos1);
  return FG_OK;
}

fg_status fg_session_append_hidden(fg_session *s, const int32_t *ids, size_t n, float *hidden) {
  if (!s) return FG_ERR_INVALID_ARG;
  return append_nohead(s, ids, n, 1, hidden, true);
}

fg_status fg_session_append_rows(fg_session *s, const int32_t *ids, size_t n, size_t n_out, float *hidden) {
  if (!s) return FG_ERR_INVALID_ARG;
  return append_nohead(s, ids, n, n_out, hidden, false);
}

fg_status fg_session_rewind(fg_session *s, uint32_t keep, uint32_t trim_at) {
  if (!s) return FG_ERR_INVALID_ARG;
  fg_err_clear(&s->err);
  if (keep > s->pos || trim_at > keep || trim_at < s->floor)
    return fg_err(&s->err, FG_ERR_INVALID_ARG, "rewind to %u (trim at %u): the session holds %u positions, of which "
                  "%u can no longer be taken back", keep, trim_at, s->pos, s->floor);
  if (keep < s->pos) {
    fg_kv_truncate(&s->kv, keep, s->pos);
    s->pos = keep;
    fg_logits_unref(s->logits); /* they belonged to a dropped position */
    s->logits = NULL;
  }
  trim_window(s, trim_at);
  return FG_OK;
}

fg_status fg_session_set_logits(fg_session *s, const float *row) {
  if (!s || !row) return FG_ERR_INVALID_ARG;
  const uint32_t nv = s->model->hp.n_vocab;
  fg_logits_buf *lg = s->logits && atomic_load_explicit(&s->logits->refs, memory_order_acquire) == 1
                          ? s->logits
                          : fg_logits_new(nv);
  if (!lg) return fg_err(&s->err, FG_ERR_NOMEM, "out of memory for logits");
  memcpy(lg->data, row, (size_t)nv * sizeof(float));
  if (lg != s->logits) {
    fg_logits_unref(s->logits);
    s->logits = lg;
  }
  return FG_OK;
}

const float *fg_session_logits(const fg_session *s) { return s && s->logits ? s->logits->data : NULL; }

/* fg_logits is the public name of fg_logits_buf: a held buffer has refs > 1, so session_append never
 * writes into it (it takes a new one) */
fg_logits *fg_session_logits_hold(const fg_session *s) {
  return s && s->logits ? (fg_logits *)fg_logits_ref(s->logits) : NULL;
}

const float *fg_logits_data(const fg_logits *l, uint32_t *n) {
  const fg_logits_buf *b = (const fg_logits_buf *)l;
  if (n) *n = b ? b->n : 0;
  return b ? b->data : NULL;
}

void fg_logits_release(fg_logits *l) { fg_logits_unref((fg_logits_buf *)l); }
uint32_t fg_session_position(const fg_session *s) { return s ? s->pos : 0; }
const fg_model *fg_session_model(const fg_session *s) { return s ? s->model : NULL; }
const char *fg_session_errmsg(const fg_session *s) { return s ? s->err.msg : "session is NULL"; }

fg_status fg_session_get_stats(const fg_session *s, fg_session_stats *out) {
  if (!s || !out) return FG_ERR_INVALID_ARG;
  memset(out, 0, sizeof *out);
  for (uint32_t il = 0; il < s->model->hp.n_layer; il++) {
    uint64_t bytes;
    uint32_t blocks, shared;
    fg_kv_layer_usage(&s->kv, il, &bytes, &blocks, &shared);
    if (s->model->layers[il].is_swa)
      out->kv_bytes_sliding += bytes;
    else
      out->kv_bytes_global += bytes;
    out->kv_blocks += blocks;
    out->kv_blocks_shared += shared;
  }
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Snapshots

fg_status fg_session_snapshot(fg_session *s, fg_snapshot **out) {
  if (out) *out = NULL;
  if (!s) return FG_ERR_INVALID_ARG;
  fg_err_clear(&s->err);
  if (!out) return fg_err(&s->err, FG_ERR_INVALID_ARG, "out is NULL");
  fg_snapshot *snap = fg_calloc(1, sizeof *snap);
  if (!snap) return fg_err(&s->err, FG_ERR_NOMEM, "out of memory for a snapshot");
  snap->pos = s->pos;
  snap->n_ctx = s->n_ctx;
  snap->tokens = fg_malloc_array(s->pos ? s->pos : 1, sizeof(int32_t));
  fg_status st = snap->tokens ? fg_kv_share(&snap->kv, &s->kv, &s->err)
                              : fg_err(&s->err, FG_ERR_NOMEM, "out of memory for a snapshot");
  if (st != FG_OK) {
    fg_free(snap->tokens);
    fg_free(snap);
    return st;
  }
  if (s->pos) memcpy(snap->tokens, s->tokens, (size_t)s->pos * sizeof(int32_t));
  snap->logits = fg_logits_ref(s->logits);
  snap->model = fg_model_retain(s->model); /* released by fg_snapshot_free */
  *out = snap;
  return FG_OK;
}

void fg_snapshot_free(fg_snapshot *snap) {
  if (!snap) return;
  fg_kv_release(&snap->kv);
  fg_free(snap->tokens);
  fg_logits_unref(snap->logits);
  fg_model_release(snap->model);
  fg_free(snap);
}

uint32_t fg_snapshot_position(const fg_snapshot *snap) { return snap ? snap->pos : 0; }
uint32_t fg_snapshot_kv_type(const fg_snapshot *snap) { return snap ? snap->kv.type : 0; }

fg_status fg_session_adopt(fg_session *s, const fg_snapshot *snap, fg_error *err) {
  if (snap->pos > s->n_ctx)
    return fg_err(err, FG_ERR_CONTEXT_FULL, "snapshot holds %u positions but the session's context is %u", snap->pos,
                  s->n_ctx);
  if (tokens_reserve(s, snap->pos ? snap->pos : 1) != FG_OK) return fg_err(err, FG_ERR_NOMEM, "out of memory");
  fg_kv nkv;
  fg_status st = fg_kv_share(&nkv, &snap->kv, err);
  if (st != FG_OK) return st;
  fg_kv_release(&s->kv);
  s->kv = nkv;
  if (snap->pos) memcpy(s->tokens, snap->tokens, (size_t)snap->pos * sizeof(int32_t));
  s->pos = snap->pos;
  s->floor = snap->pos;
  fg_logits_unref(s->logits);
  s->logits = fg_logits_ref(snap->logits);
  return FG_OK;
}

fg_status fg_session_restore(fg_session *s, const fg_snapshot *snap) {
  if (!s) return FG_ERR_INVALID_ARG;
  fg_err_clear(&s->err);
  if (!snap) return fg_err(&s->err, FG_ERR_INVALID_ARG, "snapshot is NULL");
  if (snap->model != s->model) return fg_err(&s->err, FG_ERR_MISMATCH, "the snapshot belongs to another model");
  if (snap->kv.type != s->kv.type)
    return fg_err(&s->err, FG_ERR_MISMATCH, "the snapshot holds a %s KV cache, this session a %s one",
                  snap->kv.type == FG_TYPE_F16 ? "f16" : "f32", s->kv.type == FG_TYPE_F16 ? "f16" : "f32");
  return fg_session_adopt(s, snap, &s->err);
}

fg_status fg_session_fork(const fg_snapshot *snap, const fg_session_params *params, fg_session **out, fg_error *err) {
  fg_error local;
  if (!err) err = &local;
  fg_err_clear(err);
  if (out) *out = NULL;
  if (!snap || !out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_session_fork: %s is NULL", snap ? "out" : "snapshot");
  fg_session_params p;
  fg_session_params_init(&p);
  if (params) p = *params;
  else p.kv_type = snap->kv.type; /* no params: the snapshot's KV type */
  if (p.n_ctx == 0) p.n_ctx = snap->n_ctx;
  if (p.kv_type != snap->kv.type) {
    fg_err(err, FG_ERR_MISMATCH, "the snapshot holds a %s KV cache but kv_type %u was asked",
           snap->kv.type == FG_TYPE_F16 ? "f16" : "f32", p.kv_type);
    fg_log(FG_LOG_ERROR, "fg_session_fork: %s", err->msg);
    return FG_ERR_MISMATCH;
  }
  fg_session *s;
  fg_status st = session_new(snap->model, &p, &s, err);
  if (st == FG_OK) {
    st = fg_session_adopt(s, snap, err);
    if (st != FG_OK) session_destroy(s);
  }
  if (st != FG_OK) {
    fg_log(FG_LOG_ERROR, "fg_session_fork: %s", err->msg);
    return st;
  }
  *out = s;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// The interface of the layers above (session_api.h): model and session state, the LM head

static_assert((int)FG_SESSION_KV_F32 == (int)FG_TYPE_F32 && (int)FG_SESSION_KV_F16 == (int)FG_TYPE_F16, "session_api.h's KV types");

const fg_vocab *fg_model_vocab(const fg_model *m) { return m->vocab; }
uint32_t fg_model_n_embd(const fg_model *m) { return m->hp.n_embd; }
uint32_t fg_model_n_vocab(const fg_model *m) { return m->hp.n_vocab; }

uint32_t fg_session_n_ctx(const fg_session *s) { return s->n_ctx; }
uint32_t fg_session_n_batch(const fg_session *s) { return s->params.n_batch; }
uint32_t fg_session_kv_type(const fg_session *s) { return s->kv.type; }
const int32_t *fg_session_tokens(const fg_session *s) { return s->tokens; }
const int32_t *fg_snapshot_tokens(const fg_snapshot *snap) { return snap->tokens; }

fg_status fg_session_head_full(fg_session *s, const float *X, size_t nb, float *Y, bool softcap) {
  const fg_model *m = s->model;
  const size_t nv = m->hp.n_vocab;
  /* rows of one product: the same kernels and operations per row as a single row (batch invariance) */
  fg_status st = fg_model_head(s->ops, m, X, m->hp.n_embd, nb, Y, nv);
  if (st == FG_OK && softcap) fg_head_softcap_rows(m, Y, nb * nv);
  return st;
}

fg_status fg_session_head_rows(fg_session *s, const int32_t *ids, uint32_t n, const float *x, float *y) {
  return fg_head_rows(s->ops, s->model, ids, n, x, y);
}

float fg_session_final_softcap(const fg_session *s) { return s->model->hp.final_softcap; }

size_t fg_session_argmax(fg_session *s, const float *x, size_t n) { return fg_ops_argmax(s->ops, x, n); }
size_t fg_session_argmax_allowed(fg_session *s, const float *x, const uint8_t *allowed, size_t n) {
  return fg_ops_argmax_allowed(s->ops, x, allowed, n, fg_session_final_softcap(s));
}
