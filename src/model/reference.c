/* reference.c — the plain-C reference forward pass: no cache, every position recomputed, f32
 * everywhere, weights read through fg_vec_dot_ref. It is deliberately simple and stays in the code
 * base as the oracle for every cached, chunked, forked or SIMD path. Built with -ffp-contract=off. */
#define FG_EXPERIMENTAL
#include "model/lora.h"
#include "model/model.h"

#include <math.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// Small building blocks (kept separate from the fast path on purpose)

/* y[t][r] = W[r] . x[t] for t < n; x (n, W->cols), y (n, W->rows) */
static void ref_matmul(const fg_mat *W, const float *x, size_t n, float *y) {
  for (size_t t = 0; t < n; t++) {
    for (uint32_t r = 0; r < W->rows; r++) {
      const void *row = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
      y[t * W->rows + r] = fg_vec_dot_ref(W->type, row, x + t * W->cols, W->cols);
    }
  }
}

/* out = x / rms(x) * w; x, out (n) */
static void ref_rmsnorm(const float *x, const float *w, size_t n, float eps, float *out) {
  float ss = 0.0f;
  for (size_t i = 0; i < n; i++) ss += x[i] * x[i];
  const float scale = 1.0f / sqrtf(ss / (float)n + eps);
  for (size_t i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

/* NEOX rotation of one head x (dim) at position pos: pairs (i, i + dim/2) */
static void ref_rope(float *x, uint32_t dim, uint32_t pos, float base) {
  const uint32_t half = dim / 2;
  for (uint32_t i = 0; i < half; i++) {
    const double theta = (double)pos * pow((double)base, -2.0 * (double)i / (double)dim);
    const float c = (float)cos(theta), s = (float)sin(theta);
    const float a = x[i], b = x[i + half];
    x[i] = a * c - b * s;
    x[i + half] = a * s + b * c;
  }
}

/* Run-time adapters of input group g (lora.h): y_i[t] += B_k · (A_k · x[t]) for the group's i-th target k,
 * every adapted one. x (n, A->cols); t: scratch (max_rank). Plain f32 dots, as the weight products. */
static void ref_lora(const fg_lora_layer *LL, uint32_t g, const float *x, size_t n, float *const *y,
                     const size_t *ldy, float *t) {
  const fg_mat *A = &LL->a[g];
  if (!A->rows) return;
  for (size_t p = 0; p < n; p++) {
    for (uint32_t j = 0; j < A->rows; j++)
      t[j] = fg_vec_dot_ref(FG_TYPE_F32, (const float *)A->data + (size_t)j * A->cols, x + p * A->cols, A->cols);
    for (uint32_t i = 0; i < fg_lora_group_count[g]; i++) {
      const uint32_t k = fg_lora_group_first[g] + i;
      const fg_mat *BT = &LL->bt[k]; /* (r_k, n_out): B transposed */
      const float *bt = BT->data, *tk = t + LL->off[k];
      for (uint32_t r = 0; r < BT->cols; r++) {
        float acc = 0.0f;
        for (uint32_t q = 0; q < BT->rows; q++) acc += bt[(size_t)q * BT->cols + r] * tk[q];
        y[i][p * ldy[i] + r] += acc;
      }
    }
  }
}

static float ref_gelu_tanh(float x) {
  const float k = 0.7978845608028654f; /* sqrt(2/pi) */
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

// ----------------------------------------------------------------------------------------------
// Forward over a whole sequence

typedef struct ref_bufs {
  float *x;     /* (n, d) residual stream */
  float *xn;    /* (n, max(d, ff)) normed input / scratch */
  float *q;     /* (n, n_head*hk) */
  float *k;     /* (n, n_kv*hk) */
  float *v;     /* (n, n_kv*hv) */
  float *o;     /* (n, n_head*hv) attention output */
  float *tmp;   /* (n, d) */
  float *gate;  /* (n, ff) */
  float *up;    /* (n, ff) */
  float *score; /* (n) */
  float *lora;  /* (max_rank) A · x of one position, run-time adapters */
} ref_bufs;

static void ref_bufs_free(ref_bufs *b) {
  float **p = (float **)b;
  for (size_t i = 0; i < sizeof *b / sizeof(float *); i++) fg_free(p[i]);
}

static fg_status ref_bufs_alloc(const fg_model *m, size_t n, ref_bufs *b, fg_error *err) {
  memset(b, 0, sizeof *b);
  const fg_hparams *hp = &m->hp;
  const size_t d = hp->n_embd, ff = hp->n_ff;
  const size_t max_rank = m->lora && m->lora->layers ? m->lora->max_rank : 1;
  const size_t sizes[] = {d, FG_MAX(d, ff), (size_t)hp->n_head * hp->head_dim_k, (size_t)hp->n_head_kv * hp->head_dim_k,
                          (size_t)hp->n_head_kv * hp->head_dim_v, (size_t)hp->n_head * hp->head_dim_v, d, ff, ff, 1, 0};
  float **p = (float **)b;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    p[i] = sizes[i] ? fg_malloc_array(n, sizes[i] * sizeof(float)) : fg_malloc_array(max_rank, sizeof(float));
    if (!p[i]) {
      ref_bufs_free(b);
      return fg_err(err, FG_ERR_NOMEM, "reference forward: out of memory for %zu positions", n);
    }
  }
  return FG_OK;
}

static void ref_layer(const fg_model *m, const fg_layer *L, const fg_lora_layer *LL, size_t n, ref_bufs *b) {
  const fg_hparams *hp = &m->hp;
  const size_t d = hp->n_embd, hk = hp->head_dim_k, hv = hp->head_dim_v, ff = hp->n_ff;
  const size_t nq = (size_t)hp->n_head * hk, nk = (size_t)hp->n_head_kv * hk, nv = (size_t)hp->n_head_kv * hv;
  const size_t group = hp->n_head / hp->n_head_kv;

  /* attention block */
  for (size_t t = 0; t < n; t++) ref_rmsnorm(b->x + t * d, L->attn_norm, d, hp->rms_eps, b->xn + t * d);
  ref_matmul(&L->wq, b->xn, n, b->q);
  ref_matmul(&L->wk, b->xn, n, b->k);
  ref_matmul(&L->wv, b->xn, n, b->v);
  if (LL) {
    float *const y[] = {b->q, b->k, b->v};
    const size_t ld[] = {nq, nk, nv};
    ref_lora(LL, FG_LORA_IN_QKV, b->xn, n, y, ld, b->lora);
  }
  for (size_t t = 0; t < n; t++) {
    for (uint32_t h = 0; h < hp->n_head; h++) {
      float *qh = b->q + t * nq + h * hk;
      ref_rmsnorm(qh, L->q_norm, hk, hp->rms_eps, qh);
      ref_rope(qh, (uint32_t)hk, (uint32_t)t, L->rope_base);
      for (size_t i = 0; i < hk; i++) qh[i] *= hp->attn_scale;
    }
    for (uint32_t h = 0; h < hp->n_head_kv; h++) {
      float *kh = b->k + t * nk + h * hk;
      ref_rmsnorm(kh, L->k_norm, hk, hp->rms_eps, kh);
      ref_rope(kh, (uint32_t)hk, (uint32_t)t, L->rope_base);
    }
  }
  for (size_t t = 0; t < n; t++) {
    /* keys visible from position t: all before it on global layers, the last `window` on sliding ones */
    const size_t first = (L->is_swa && t + 1 > hp->sliding_window) ? t + 1 - hp->sliding_window : 0;
    for (uint32_t h = 0; h < hp->n_head; h++) {
      const float *qh = b->q + t * nq + h * hk;
      const size_t kvh = h / group;
      float mx = -INFINITY;
      for (size_t s = first; s <= t; s++) {
        const float *ks = b->k + s * nk + kvh * hk;
        float dot = 0.0f;
        for (size_t i = 0; i < hk; i++) dot += qh[i] * ks[i];
        b->score[s] = dot;
        if (dot > mx) mx = dot;
      }
      float sum = 0.0f;
      for (size_t s = first; s <= t; s++) {
        b->score[s] = expf(b->score[s] - mx);
        sum += b->score[s];
      }
      float *oh = b->o + t * ((size_t)hp->n_head * hv) + h * hv;
      for (size_t i = 0; i < hv; i++) oh[i] = 0.0f;
      for (size_t s = first; s <= t; s++) {
        const float p = b->score[s] / sum;
        const float *vs = b->v + s * nv + kvh * hv;
        for (size_t i = 0; i < hv; i++) oh[i] += p * vs[i];
      }
    }
  }
  ref_matmul(&L->wo, b->o, n, b->tmp);
  if (LL) ref_lora(LL, FG_LORA_IN_O, b->o, n, &b->tmp, &d, b->lora);
  for (size_t t = 0; t < n; t++) {
    ref_rmsnorm(b->tmp + t * d, L->post_attn_norm, d, hp->rms_eps, b->tmp + t * d);
    for (size_t i = 0; i < d; i++) b->x[t * d + i] += b->tmp[t * d + i];
  }

  /* feed-forward block */
  for (size_t t = 0; t < n; t++) ref_rmsnorm(b->x + t * d, L->ffn_norm, d, hp->rms_eps, b->xn + t * d);
  ref_matmul(&L->w_gate, b->xn, n, b->gate);
  ref_matmul(&L->w_up, b->xn, n, b->up);
  if (LL) {
    float *const y[] = {b->gate, b->up};
    const size_t ld[] = {ff, ff};
    ref_lora(LL, FG_LORA_IN_GATE_UP, b->xn, n, y, ld, b->lora);
  }
  for (size_t j = 0; j < n * ff; j++) b->gate[j] = ref_gelu_tanh(b->gate[j]) * b->up[j];
  ref_matmul(&L->w_down, b->gate, n, b->tmp);
  if (LL) ref_lora(LL, FG_LORA_IN_DOWN, b->gate, n, &b->tmp, &d, b->lora);
  for (size_t t = 0; t < n; t++) {
    ref_rmsnorm(b->tmp + t * d, L->post_ffw_norm, d, hp->rms_eps, b->tmp + t * d);
    for (size_t i = 0; i < d; i++) b->x[t * d + i] += b->tmp[t * d + i];
  }
}

fg_status fg_ref_forward(const fg_model *m, const int32_t *ids, const float *embd, size_t n, const size_t *at,
                         size_t n_at, float *logits, fg_error *err) {
  const fg_hparams *hp = &m->hp;
  if (n == 0 || (!ids && !embd)) return fg_err(err, FG_ERR_INVALID_ARG, "reference forward: empty input");
  if (n > hp->n_ctx_train)
    return fg_err(err, FG_ERR_CONTEXT_FULL, "reference forward: %zu tokens exceed the context length %u", n,
                  hp->n_ctx_train);
  for (size_t i = 0; ids && i < n; i++)
    if (ids[i] < 0 || (uint32_t)ids[i] >= hp->n_vocab)
      return fg_err(err, FG_ERR_INVALID_ARG, "token id %d at index %zu is outside the vocabulary (0..%u)", ids[i], i,
                    hp->n_vocab - 1);
  for (size_t i = 0; i < n_at; i++)
    if (at[i] >= n) return fg_err(err, FG_ERR_INVALID_ARG, "logit position %zu is past the sequence (%zu)", at[i], n);

  ref_bufs b;
  fg_status st = ref_bufs_alloc(m, n, &b, err);
  if (st != FG_OK) return st;
  const size_t d = hp->n_embd;
  for (size_t t = 0; t < n; t++) {
    if (ids)
      fg_model_embed(m, ids[t], b.x + t * d);
    else
      memcpy(b.x + t * d, embd + t * d, d * sizeof(float));
  }
  for (uint32_t il = 0; il < hp->n_layer; il++)
    ref_layer(m, &m->layers[il], m->lora && m->lora->layers ? &m->lora->layers[il] : NULL, n, &b);

  for (size_t i = 0; i < n_at; i++) {
    ref_rmsnorm(b.x + at[i] * d, m->output_norm, d, hp->rms_eps, b.xn);
    float *out = logits + i * (size_t)hp->n_vocab;
    ref_matmul(&m->output, b.xn, 1, out);
    if (hp->final_softcap > 0.0f)
      for (uint32_t j = 0; j < hp->n_vocab; j++) out[j] = hp->final_softcap * tanhf(out[j] / hp->final_softcap);
  }
  ref_bufs_free(&b);
  return FG_OK;
}

fg_status fg_ref_generate(const fg_model *m, const int32_t *ids, size_t n, size_t n_gen, int32_t *out, fg_error *err) {
  if (n == 0 || !ids) return fg_err(err, FG_ERR_INVALID_ARG, "reference generate: empty prompt");
  if (n_gen > SIZE_MAX - n) return fg_err(err, FG_ERR_INVALID_ARG, "reference generate: too many tokens");
  int32_t *seq = fg_malloc_array(n + n_gen, sizeof(int32_t));
  float *logits = fg_malloc_array(m->hp.n_vocab, sizeof(float));
  fg_status st = (seq && logits) ? FG_OK : fg_err(err, FG_ERR_NOMEM, "out of memory");
  if (st == FG_OK) memcpy(seq, ids, n * sizeof(int32_t));
  for (size_t g = 0; g < n_gen && st == FG_OK; g++) {
    const size_t len = n + g, last = len - 1;
    st = fg_ref_forward(m, seq, NULL, len, &last, 1, logits, err);
    if (st == FG_OK) seq[len] = out[g] = fg_argmax(logits, m->hp.n_vocab);
  }
  fg_free(seq);
  fg_free(logits);
  return st;
}

// ----------------------------------------------------------------------------------------------
// Public (experimental) entry points

fg_status fg_reference_logits(const fg_model *m, const int32_t *ids, size_t n, const size_t *at, size_t n_at,
                              float *logits, fg_error *err) {
  fg_err_clear(err);
  if (!m || !ids || (!at && n_at) || (!logits && n_at))
    return fg_err(err, FG_ERR_INVALID_ARG, "fg_reference_logits: NULL argument");
  return fg_ref_forward(m, ids, NULL, n, at, n_at, logits, err);
}

fg_status fg_reference_generate(const fg_model *m, const int32_t *ids, size_t n, size_t n_gen, int32_t *out,
                                fg_error *err) {
  fg_err_clear(err);
  if (!m || !ids || (!out && n_gen)) return fg_err(err, FG_ERR_INVALID_ARG, "fg_reference_generate: NULL argument");
  return fg_ref_generate(m, ids, n, n_gen, out, err);
}
