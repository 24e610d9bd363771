/* forward.c — the fast Gemma 3 forward over a block KV cache. Weight products go through fg_ops
 * (threaded, SIMD); attention reads K/V blocks in place, parallel over (position, head). */
#include "model/forward.h"

#include <math.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// Scratch

void fg_fwd_scratch_free(fg_fwd_scratch *sc) {
  float **p[] = {&sc->x, &sc->xn, &sc->q, &sc->k, &sc->v, &sc->o, &sc->t, &sc->gate, &sc->up, &sc->score, &sc->rope_cs};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
    fg_aligned_free(*p[i]);
    *p[i] = NULL;
  }
  sc->max_nb = 0;
}

fg_status fg_fwd_scratch_init(fg_fwd_scratch *sc, const fg_hparams *hp, size_t max_nb, uint32_t n_ctx,
                              uint32_t n_threads, fg_error *err) {
  memset(sc, 0, sizeof *sc);
  const size_t d = hp->n_embd, hk = hp->head_dim_k, hv = hp->head_dim_v;
  struct { float **p; uint64_t n; } a[] = {
      {&sc->x, (uint64_t)max_nb * d},
      {&sc->xn, (uint64_t)max_nb * d},
      {&sc->q, (uint64_t)max_nb * hp->n_head * hk},
      {&sc->k, (uint64_t)max_nb * hp->n_head_kv * hk},
      {&sc->v, (uint64_t)max_nb * hp->n_head_kv * hv},
      {&sc->o, (uint64_t)max_nb * hp->n_head * hv},
      {&sc->t, (uint64_t)max_nb * d},
      {&sc->gate, (uint64_t)max_nb * hp->n_ff},
      {&sc->up, (uint64_t)max_nb * hp->n_ff},
      {&sc->score, (uint64_t)n_threads * (hp->n_head / hp->n_head_kv) * n_ctx},
      {&sc->rope_cs, (uint64_t)max_nb * 2 * hk},
  };
  for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
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
  sc->max_nb = max_nb;
  sc->n_ctx = n_ctx;
  sc->n_threads = n_threads;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Elementwise pieces

static void rmsnorm(const float *x, const float *w, size_t n, float eps, float *out) {
  float ss = 0.0f;
  for (size_t i = 0; i < n; i++) ss += x[i] * x[i];
  const float scale = 1.0f / sqrtf(ss / (float)n + eps);
  for (size_t i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

/* cos/sin table of one position for one base: cs[i] = cos, cs[half + i] = sin */
static void rope_table(float *cs, uint32_t dim, uint32_t pos, float base) {
  const uint32_t half = dim / 2;
  for (uint32_t i = 0; i < half; i++) {
    const double theta = (double)pos * pow((double)base, -2.0 * (double)i / (double)dim);
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

static float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

// ----------------------------------------------------------------------------------------------
// Attention over the cache, parallel over (row, kv head). The query heads that share a KV head are
// scored together: each block of cached keys is one small matrix product (fg_ops, SIMD), read in place.

typedef struct attn_job {
  const fg_hparams *hp;
  const fg_layer *L;
  const fg_kv *kv;
  fg_ops *ops;
  uint32_t layer;
  uint32_t pos0;
  fg_fwd_scratch *sc;
} attn_job;

static void attn_range(void *ud, size_t i0, size_t i1, uint32_t tid) {
  const attn_job *j = ud;
  const fg_hparams *hp = j->hp;
  const size_t hk = hp->head_dim_k, hv = hp->head_dim_v;
  const size_t nq = (size_t)hp->n_head * hk, no = (size_t)hp->n_head * hv;
  const uint32_t group = hp->n_head / hp->n_head_kv;
  const size_t ld = j->sc->n_ctx; /* score row stride */
  float *score = j->sc->score + (size_t)tid * group * ld; /* (group, n_ctx) */
  for (size_t idx = i0; idx < i1; idx++) {
    const size_t t = idx / hp->n_head_kv;
    const uint32_t kvh = (uint32_t)(idx % hp->n_head_kv);
    const uint32_t p = j->pos0 + (uint32_t)t;
    const uint32_t first = (j->L->is_swa && p + 1 > hp->sliding_window) ? p + 1 - hp->sliding_window : 0;
    const uint32_t n_keys = p - first + 1;
    const float *qg = j->sc->q + t * nq + (size_t)kvh * group * hk; /* (group, hk) */
    /* scores[g][s - first] = q_g . k_s, one product per block of keys */
    for (uint32_t s0 = first; s0 <= p;) {
      const uint32_t in_block = FG_KV_BLOCK - s0 % FG_KV_BLOCK;
      const uint32_t n = FG_MIN(in_block, p + 1 - s0);
      const fg_mat K = {FG_TYPE_F32, n, (uint32_t)hk, (size_t)j->kv->k_dim * sizeof(float),
                        fg_kv_k(j->kv, j->layer, s0) + (size_t)kvh * hk};
      fg_ops_matmul(j->ops, &K, qg, hk, group, score + (s0 - first), ld);
      s0 += n;
    }
    for (uint32_t g = 0; g < group; g++) {
      float *sg = score + (size_t)g * ld;
      float mx = -INFINITY;
      for (uint32_t s = 0; s < n_keys; s++) mx = sg[s] > mx ? sg[s] : mx;
      float sum = 0.0f;
      for (uint32_t s = 0; s < n_keys; s++) {
        sg[s] = expf(sg[s] - mx);
        sum += sg[s];
      }
      const float inv = 1.0f / sum;
      for (uint32_t s = 0; s < n_keys; s++) sg[s] *= inv;
      float *oh = j->sc->o + t * no + (size_t)(kvh * group + g) * hv;
      for (size_t i = 0; i < hv; i++) oh[i] = 0.0f;
    }
    /* o_g += p_g[s] * v_s, reading each value row once for the whole group */
    for (uint32_t s = first; s <= p; s++) {
      const float *vs = fg_kv_v(j->kv, j->layer, s) + (size_t)kvh * hv;
      for (uint32_t g = 0; g < group; g++) {
        const float w = score[(size_t)g * ld + (s - first)];
        float *FG_RESTRICT oh = j->sc->o + t * no + (size_t)(kvh * group + g) * hv;
        for (size_t i = 0; i < hv; i++) oh[i] += w * vs[i];
      }
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

  for (size_t t = 0; t < nb; t++) {
    if (a->ids)
      fg_model_embed(m, a->ids[t], sc->x + t * d);
    else
      memcpy(sc->x + t * d, a->embd + t * d, d * sizeof(float));
    rope_table(sc->rope_cs + t * 2 * hk, (uint32_t)hk, a->pos0 + (uint32_t)t, hp->rope_base);
    rope_table(sc->rope_cs + t * 2 * hk + hk, (uint32_t)hk, a->pos0 + (uint32_t)t, hp->rope_base_swa);
  }

  for (uint32_t il = 0; il < hp->n_layer; il++) {
    if (a->abort_cb && a->abort_cb(a->abort_ud)) return fg_err(err, FG_ERR_ABORTED, "aborted by the callback");
    const fg_layer *L = &m->layers[il];
    for (size_t t = 0; t < nb; t++) rmsnorm(sc->x + t * d, L->attn_norm, d, hp->rms_eps, sc->xn + t * d);
    if ((st = fg_ops_matmul(ops, &L->wq, sc->xn, d, nb, sc->q, nq)) != FG_OK) goto fail;
    if ((st = fg_ops_matmul(ops, &L->wk, sc->xn, d, nb, sc->k, nk)) != FG_OK) goto fail;
    if ((st = fg_ops_matmul(ops, &L->wv, sc->xn, d, nb, sc->v, nv)) != FG_OK) goto fail;
    for (size_t t = 0; t < nb; t++) {
      const float *cs = sc->rope_cs + t * 2 * hk + (L->is_swa ? hk : 0);
      for (uint32_t h = 0; h < hp->n_head; h++) {
        float *qh = sc->q + t * nq + (size_t)h * hk;
        rmsnorm(qh, L->q_norm, hk, hp->rms_eps, qh);
        rope_apply(qh, cs, (uint32_t)hk);
        for (size_t i = 0; i < hk; i++) qh[i] *= hp->attn_scale;
      }
      float *kdst = fg_kv_k(kv, il, a->pos0 + (uint32_t)t);
      for (uint32_t h = 0; h < hp->n_head_kv; h++) {
        float *kh = sc->k + t * nk + (size_t)h * hk;
        rmsnorm(kh, L->k_norm, hk, hp->rms_eps, kh);
        rope_apply(kh, cs, (uint32_t)hk);
      }
      memcpy(kdst, sc->k + t * nk, nk * sizeof(float));
      memcpy(fg_kv_v(kv, il, a->pos0 + (uint32_t)t), sc->v + t * nv, nv * sizeof(float));
    }
    attn_job job = {hp, L, kv, ops, il, a->pos0, sc};
    fg_ops_parallel_for(ops, nb * hp->n_head_kv, attn_range, &job);
    if ((st = fg_ops_matmul(ops, &L->wo, sc->o, no, nb, sc->t, d)) != FG_OK) goto fail;
    for (size_t t = 0; t < nb; t++) {
      rmsnorm(sc->t + t * d, L->post_attn_norm, d, hp->rms_eps, sc->t + t * d);
      for (size_t i = 0; i < d; i++) sc->x[t * d + i] += sc->t[t * d + i];
      rmsnorm(sc->x + t * d, L->ffn_norm, d, hp->rms_eps, sc->xn + t * d);
    }
    if ((st = fg_ops_matmul(ops, &L->w_gate, sc->xn, d, nb, sc->gate, ff)) != FG_OK) goto fail;
    if ((st = fg_ops_matmul(ops, &L->w_up, sc->xn, d, nb, sc->up, ff)) != FG_OK) goto fail;
    for (size_t j = 0; j < nb * ff; j++) sc->gate[j] = gelu_tanh(sc->gate[j]) * sc->up[j];
    if ((st = fg_ops_matmul(ops, &L->w_down, sc->gate, ff, nb, sc->t, d)) != FG_OK) goto fail;
    for (size_t t = 0; t < nb; t++) {
      rmsnorm(sc->t + t * d, L->post_ffw_norm, d, hp->rms_eps, sc->t + t * d);
      for (size_t i = 0; i < d; i++) sc->x[t * d + i] += sc->t[t * d + i];
    }
  }

  if (a->logits || a->hidden) {
    rmsnorm(sc->x + (nb - 1) * d, m->output_norm, d, hp->rms_eps, sc->xn);
    if (a->hidden) memcpy(a->hidden, sc->xn, d * sizeof(float));
  }
  if (a->logits) {
    if ((st = fg_ops_matmul(ops, &m->output, sc->xn, d, 1, a->logits, hp->n_vocab)) != FG_OK) goto fail;
    if (hp->final_softcap > 0.0f)
      for (uint32_t j = 0; j < hp->n_vocab; j++) a->logits[j] = hp->final_softcap * tanhf(a->logits[j] / hp->final_softcap);
  }
  return FG_OK;
fail:
  return fg_err(err, st, "forward: matrix product failed (%s)", fg_status_str(st));
}
