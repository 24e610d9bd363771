/* model.c — loading a gemma3 GGUF: hyper-parameters, tensor binding with shape checks, fingerprint. */
#include "model/model.h"

#include "tokenizer/tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// Hyper-parameters

static fg_status hp_key(char *buf, size_t cap, const char *arch, const char *suffix) {
  snprintf(buf, cap, "%s.%s", arch, suffix);
  return FG_OK;
}

#define HP_U32(suffix, dst)                                                 \
  do {                                                                      \
    hp_key(key, sizeof key, arch, suffix);                                  \
    if ((st = fg_gguf_get_u32(g, key, dst, err)) != FG_OK) return st;       \
  } while (0)
#define HP_U32_OR(suffix, def, dst)                                         \
  do {                                                                      \
    hp_key(key, sizeof key, arch, suffix);                                  \
    if ((st = fg_gguf_get_u32_or(g, key, def, dst, err)) != FG_OK) return st; \
  } while (0)
#define HP_F32_OR(suffix, def, dst)                                         \
  do {                                                                      \
    hp_key(key, sizeof key, arch, suffix);                                  \
    if ((st = fg_gguf_get_f32_or(g, key, def, dst, err)) != FG_OK) return st; \
  } while (0)

fg_status fg_hparams_load(const fg_gguf *g, fg_hparams *hp, fg_error *err) {
  memset(hp, 0, sizeof *hp);
  fg_gguf_str archs;
  fg_status st = fg_gguf_get_str(g, "general.architecture", &archs, err);
  if (st != FG_OK) return st;
  if (!fg_gguf_str_eq(archs, "gemma3")) {
    return fg_err(err, FG_ERR_UNSUPPORTED, "unsupported architecture '%.*s' (general.architecture); fgemma runs gemma3",
                  (int)FG_MIN(archs.len, 64), archs.ptr);
  }
  const char *arch = "gemma3";
  char key[128];
  HP_U32("embedding_length", &hp->n_embd);
  HP_U32("block_count", &hp->n_layer);
  HP_U32("feed_forward_length", &hp->n_ff);
  HP_U32("attention.head_count", &hp->n_head);
  HP_U32_OR("attention.head_count_kv", hp->n_head, &hp->n_head_kv);
  HP_U32("context_length", &hp->n_ctx_train);
  if (hp->n_head == 0) return fg_err(err, FG_ERR_FORMAT, "gemma3.attention.head_count is 0");
  HP_U32_OR("attention.key_length", hp->n_embd / hp->n_head, &hp->head_dim_k);
  HP_U32_OR("attention.value_length", hp->head_dim_k, &hp->head_dim_v);
  HP_U32_OR("attention.sliding_window", 0, &hp->sliding_window);
  HP_U32_OR("attention.sliding_window_pattern", 6, &hp->swa_pattern);
  HP_F32_OR("rope.freq_base", 10000.0f, &hp->rope_base);
  HP_F32_OR("rope.freq_base_swa", 10000.0f, &hp->rope_base_swa);
  HP_F32_OR("final_logit_softcapping", 0.0f, &hp->final_softcap);
  hp_key(key, sizeof key, arch, "attention.layer_norm_rms_epsilon");
  if ((st = fg_gguf_get_f32(g, key, &hp->rms_eps, err)) != FG_OK) return st;

  /* sanity: sizes that make the arithmetic below safe and the file meaningful */
  const struct { const char *name; uint32_t v; uint32_t max; } lim[] = {
      {"embedding_length", hp->n_embd, 1u << 16},  {"block_count", hp->n_layer, 1024},
      {"feed_forward_length", hp->n_ff, 1u << 18}, {"attention.head_count", hp->n_head, 1024},
      {"attention.head_count_kv", hp->n_head_kv, 1024}, {"attention.key_length", hp->head_dim_k, 4096},
      {"attention.value_length", hp->head_dim_v, 4096}, {"context_length", hp->n_ctx_train, 1u << 24},
  };
  for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
    if (lim[i].v == 0 || lim[i].v > lim[i].max)
      return fg_err(err, FG_ERR_FORMAT, "gemma3.%s = %u is out of range (1..%u)", lim[i].name, lim[i].v, lim[i].max);
  }
  if (hp->n_head % hp->n_head_kv != 0)
    return fg_err(err, FG_ERR_FORMAT, "gemma3.attention.head_count %u is not a multiple of head_count_kv %u",
                  hp->n_head, hp->n_head_kv);
  if (hp->head_dim_k % 2 != 0)
    return fg_err(err, FG_ERR_FORMAT, "gemma3.attention.key_length %u must be even for RoPE", hp->head_dim_k);
  if (hp->swa_pattern == 0) hp->swa_pattern = 1;
  if (!(hp->rms_eps > 0.0f) || !(hp->rope_base > 0.0f) || !(hp->rope_base_swa > 0.0f) || !(hp->final_softcap >= 0.0f))
    return fg_err(err, FG_ERR_FORMAT, "gemma3: rms epsilon, rope bases must be > 0 and softcap >= 0");
  hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim_k);
  hp->embd_scale = sqrtf((float)hp->n_embd);
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Tensor binding

static fg_status bind_tensor(const fg_model *m, const char *name, uint32_t n_dims, uint64_t ne0, uint64_t ne1,
                             const fg_gguf_tensor **out, fg_error *err) {
  const fg_gguf_tensor *t = fg_gguf_find_tensor(&m->gguf, name);
  if (!t) return fg_err(err, FG_ERR_FORMAT, "missing tensor '%s'", name);
  uint64_t want[2] = {ne0, ne1};
  bool ok = true;
  for (uint32_t d = 0; d < FG_GGUF_MAX_DIMS; d++) {
    uint64_t w = d < n_dims ? want[d] : 1;
    if (t->ne[d] != w) ok = false;
  }
  if (!ok) {
    return fg_err(err, FG_ERR_FORMAT, "tensor '%s' has shape [%llu, %llu, %llu, %llu], expected [%llu, %llu]", name,
                  (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                  (unsigned long long)t->ne[3], (unsigned long long)ne0, (unsigned long long)(n_dims > 1 ? ne1 : 1));
  }
  *out = t;
  return FG_OK;
}

static fg_status bind_norm(const fg_model *m, const char *name, uint64_t n, const float **out, fg_error *err) {
  const fg_gguf_tensor *t = NULL;
  fg_status st = bind_tensor(m, name, 1, n, 1, &t, err);
  if (st != FG_OK) return st;
  if (t->type != FG_TYPE_F32)
    return fg_err(err, FG_ERR_UNSUPPORTED, "tensor '%s' has type %s; norm weights must be f32", name,
                  fg_type_name(t->type));
  if (((uintptr_t)t->data % sizeof(float)) != 0)
    return fg_err(err, FG_ERR_FORMAT, "tensor '%s' data is not 4-byte aligned", name);
  *out = (const float *)t->data;
  return FG_OK;
}

static fg_status bind_mat(const fg_model *m, const char *name, uint64_t cols, uint64_t rows, fg_mat *out,
                          fg_error *err) {
  const fg_gguf_tensor *t = NULL;
  fg_status st = bind_tensor(m, name, 2, cols, rows, &t, err);
  if (st != FG_OK) return st;
  uint64_t rb;
  if (!fg_type_row_bytes(t->type, cols, &rb))
    return fg_err(err, FG_ERR_UNSUPPORTED, "tensor '%s' has type %s (id %u), not supported for matrices", name,
                  fg_type_name(t->type), t->type);
  out->type = t->type;
  out->rows = (uint32_t)rows;
  out->cols = (uint32_t)cols;
  out->row_bytes = (size_t)rb;
  out->data = t->data;
  return FG_OK;
}

static fg_status bind_all(fg_model *m, fg_error *err) {
  const fg_hparams *hp = &m->hp;
  fg_status st;
  const fg_gguf_tensor *te = fg_gguf_find_tensor(&m->gguf, "token_embd.weight");
  if (!te) return fg_err(err, FG_ERR_FORMAT, "missing tensor 'token_embd.weight'");
  if (te->n_dims != 2 || te->ne[0] != hp->n_embd || te->ne[1] == 0 || te->ne[1] > (1u << 24))
    return fg_err(err, FG_ERR_FORMAT, "tensor 'token_embd.weight' must be [%u, n_vocab]", hp->n_embd);
  m->hp.n_vocab = (uint32_t)te->ne[1];
  if ((st = bind_mat(m, "token_embd.weight", hp->n_embd, hp->n_vocab, &m->tok_embd, err)) != FG_OK) return st;
  if (fg_gguf_find_tensor(&m->gguf, "output.weight")) {
    if ((st = bind_mat(m, "output.weight", hp->n_embd, hp->n_vocab, &m->output, err)) != FG_OK) return st;
    m->tied_head = false;
  } else {
    m->output = m->tok_embd;
    m->tied_head = true;
  }
  if ((st = bind_norm(m, "output_norm.weight", hp->n_embd, &m->output_norm, err)) != FG_OK) return st;

  m->layers = fg_calloc(hp->n_layer, sizeof *m->layers);
  if (!m->layers) return fg_err(err, FG_ERR_NOMEM, "out of memory for %u layers", hp->n_layer);
  const uint64_t dq = (uint64_t)hp->n_head * hp->head_dim_k, dk = (uint64_t)hp->n_head_kv * hp->head_dim_k;
  const uint64_t dv = (uint64_t)hp->n_head_kv * hp->head_dim_v, dov = (uint64_t)hp->n_head * hp->head_dim_v;
  for (uint32_t il = 0; il < hp->n_layer; il++) {
    fg_layer *L = &m->layers[il];
    char nm[96];
#define NAME(s) (snprintf(nm, sizeof nm, "blk.%u." s ".weight", il), nm)
    if ((st = bind_norm(m, NAME("attn_norm"), hp->n_embd, &L->attn_norm, err)) != FG_OK) return st;
    if ((st = bind_mat(m, NAME("attn_q"), hp->n_embd, dq, &L->wq, err)) != FG_OK) return st;
    if ((st = bind_mat(m, NAME("attn_k"), hp->n_embd, dk, &L->wk, err)) != FG_OK) return st;
    if ((st = bind_mat(m, NAME("attn_v"), hp->n_embd, dv, &L->wv, err)) != FG_OK) return st;
    if ((st = bind_mat(m, NAME("attn_output"), dov, hp->n_embd, &L->wo, err)) != FG_OK) return st;
    if ((st = bind_norm(m, NAME("attn_q_norm"), hp->head_dim_k, &L->q_norm, err)) != FG_OK) return st;
    if ((st = bind_norm(m, NAME("attn_k_norm"), hp->head_dim_k, &L->k_norm, err)) != FG_OK) return st;
    if ((st = bind_norm(m, NAME("post_attention_norm"), hp->n_embd, &L->post_attn_norm, err)) != FG_OK) return st;
    if ((st = bind_norm(m, NAME("ffn_norm"), hp->n_embd, &L->ffn_norm, err)) != FG_OK) return st;
    if ((st = bind_mat(m, NAME("ffn_gate"), hp->n_embd, hp->n_ff, &L->w_gate, err)) != FG_OK) return st;
    if ((st = bind_mat(m, NAME("ffn_up"), hp->n_embd, hp->n_ff, &L->w_up, err)) != FG_OK) return st;
    if ((st = bind_mat(m, NAME("ffn_down"), hp->n_ff, hp->n_embd, &L->w_down, err)) != FG_OK) return st;
    if ((st = bind_norm(m, NAME("post_ffw_norm"), hp->n_embd, &L->post_ffw_norm, err)) != FG_OK) return st;
#undef NAME
    L->is_swa = hp->sliding_window > 0 && (il % hp->swa_pattern) < hp->swa_pattern - 1;
    L->rope_base = L->is_swa ? hp->rope_base_swa : hp->rope_base;
  }
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Fingerprint: FNV-1a over hyper-parameters, tensor infos and samples of every tensor's bytes.

static void fnv(uint64_t *h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) {
    *h ^= b[i];
    *h *= 0x100000001b3ull;
  }
}

static void fingerprint(const fg_model *m, uint8_t out[16]) {
  uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
  fnv(&h1, &m->hp, sizeof m->hp);
  for (size_t i = 0; i < m->gguf.n_tensors; i++) {
    const fg_gguf_tensor *t = &m->gguf.tensors[i];
    fnv(&h1, t->name.ptr, t->name.len);
    fnv(&h1, t->ne, sizeof t->ne);
    fnv(&h1, &t->type, sizeof t->type);
    /* head, tail and 16 strided samples of 64 bytes */
    size_t n = (size_t)t->nbytes;
    fnv(&h2, t->data, FG_MIN(n, 4096));
    if (n > 4096) fnv(&h2, t->data + n - 4096, 4096);
    for (int k = 1; k < 16 && n > 8192; k++) fnv(&h2, t->data + (n / 16) * (size_t)k, 64);
  }
  memcpy(out, &h1, 8);
  memcpy(out + 8, &h2, 8);
}

// ----------------------------------------------------------------------------------------------
// Public: load / free / info

void fg_model_params_init(fg_model_params *p) {
  if (p) memset(p, 0, sizeof *p);
}

static fg_status check_finite(const fg_model *m, fg_error *err) {
  float *row = fg_malloc_array(FG_MAX(m->hp.n_embd, m->hp.n_ff), sizeof(float));
  if (!row) return fg_err(err, FG_ERR_NOMEM, "out of memory");
  fg_status st = FG_OK;
  for (size_t i = 0; i < m->gguf.n_tensors && st == FG_OK; i++) {
    const fg_gguf_tensor *t = &m->gguf.tensors[i];
    uint64_t rb;
    if (t->ne[0] > FG_MAX(m->hp.n_embd, m->hp.n_ff) || !fg_type_row_bytes(t->type, t->ne[0], &rb)) continue;
    uint64_t rows = t->nbytes / rb;
    for (uint64_t r = 0; r < rows && st == FG_OK; r++) {
      fg_dequantize_row(t->type, t->data + r * rb, row, (size_t)t->ne[0]);
      for (uint64_t j = 0; j < t->ne[0]; j++) {
        if (!isfinite(row[j])) {
          st = fg_err(err, FG_ERR_FORMAT, "tensor '%.*s' has a non-finite value in row %llu", (int)t->name.len,
                      t->name.ptr, (unsigned long long)r);
          break;
        }
      }
    }
  }
  fg_free(row);
  return st;
}

fg_status fg_model_load(const char *path, const fg_model_params *params, fg_model **out, fg_error *err) {
  fg_err_clear(err);
  if (out) *out = NULL;
  if (!path || !out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_model_load: path and out must not be NULL");
  fg_model_params p;
  fg_model_params_init(&p);
  if (params) p = *params;

  fg_model *m = fg_calloc(1, sizeof *m);
  if (!m) return fg_err(err, FG_ERR_NOMEM, "out of memory");
  fg_status st = fg_mapfile_open(path, (p.flags & FG_MODEL_NO_MMAP) == 0, &m->file, err);
  if (st == FG_OK) {
    st = fg_gguf_parse(m->file.data, m->file.size, &m->gguf, err);
    if (st != FG_OK && err) {
      /* prefix the path so the CLI's one-line error says which file */
      char tmp[sizeof err->msg];
      memcpy(tmp, err->msg, sizeof tmp);
      snprintf(err->msg, sizeof err->msg, "%.60s: %.190s", path, tmp);
    }
  }
  if (st == FG_OK) st = fg_hparams_load(&m->gguf, &m->hp, err);
  if (st == FG_OK) st = bind_all(m, err);
  if (st == FG_OK && (p.flags & FG_MODEL_CHECK_TENSORS)) st = check_finite(m, err);
  if (st == FG_OK) {
    fg_error verr;
    fg_status vs = fg_vocab_load(&m->gguf, &m->vocab, &verr);
    if (vs == FG_ERR_UNSUPPORTED) {
      m->vocab = NULL; /* a model without a tokenizer still runs on ids */
    } else if (vs != FG_OK) {
      st = fg_err(err, vs, "%s", verr.msg);
    } else if (fg_vocab_size(m->vocab) != m->hp.n_vocab) {
      st = fg_err(err, FG_ERR_FORMAT, "tokenizer has %u tokens but token_embd.weight has %u rows",
                  fg_vocab_size(m->vocab), m->hp.n_vocab);
    }
  }
  if (st != FG_OK) {
    fg_model_free(m);
    return st;
  }

  /* info */
  fg_model_info *info = &m->info;
  snprintf(info->arch, sizeof info->arch, "gemma3");
  fg_gguf_str name;
  if (fg_gguf_get_str(&m->gguf, "general.name", &name, NULL) == FG_OK)
    snprintf(info->name, sizeof info->name, "%.*s", (int)FG_MIN(name.len, sizeof info->name - 1), name.ptr);
  const fg_hparams *hp = &m->hp;
  info->n_vocab = hp->n_vocab;
  info->n_embd = hp->n_embd;
  info->n_layer = hp->n_layer;
  info->n_head = hp->n_head;
  info->n_head_kv = hp->n_head_kv;
  info->head_dim = hp->head_dim_k;
  info->n_ff = hp->n_ff;
  info->n_ctx_train = hp->n_ctx_train;
  info->sliding_window = hp->sliding_window;
  info->swa_pattern = hp->swa_pattern;
  for (uint32_t il = 0; il < hp->n_layer; il++) info->n_global_layers += m->layers[il].is_swa ? 0 : 1;
  info->weight_type = m->layers[0].w_gate.type;
  info->head_type = m->output.type;
  info->tied_head = m->tied_head;
  info->has_vocab = m->vocab != NULL;
  info->file_bytes = m->file.size;
  for (size_t i = 0; i < m->gguf.n_tensors; i++) {
    const fg_gguf_tensor *t = &m->gguf.tensors[i];
    info->weight_bytes += t->nbytes;
    info->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
  }
  /* one decoded token reads every layer matrix, one embedding row and the output projection */
  for (uint32_t il = 0; il < hp->n_layer; il++) {
    const fg_layer *L = &m->layers[il];
    const fg_mat *mats[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
    for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) info->decode_bytes += (uint64_t)mats[k]->rows * mats[k]->row_bytes;
  }
  info->decode_bytes += (uint64_t)m->output.rows * m->output.row_bytes + m->tok_embd.row_bytes;
  fingerprint(m, info->fingerprint);
  *out = m;
  return FG_OK;
}

void fg_model_free(fg_model *m) {
  if (!m) return;
  fg_vocab_free(m->vocab);
  fg_free(m->layers);
  fg_gguf_clear(&m->gguf);
  fg_mapfile_close(&m->file);
  fg_free(m);
}

fg_status fg_model_get_info(const fg_model *m, fg_model_info *out) {
  if (!m || !out) return FG_ERR_INVALID_ARG;
  *out = m->info;
  return FG_OK;
}

void fg_model_embed(const fg_model *m, int32_t id, float *out) {
  const fg_mat *e = &m->tok_embd;
  fg_dequantize_row(e->type, (const uint8_t *)e->data + (size_t)id * e->row_bytes, out, e->cols);
  for (uint32_t i = 0; i < e->cols; i++) out[i] *= m->hp.embd_scale;
}

int32_t fg_argmax(const float *x, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (x[i] > x[best]) best = i;
  return (int32_t)best;
}

// ----------------------------------------------------------------------------------------------
// Public tokenizer entry points (the tokenizer itself lives in tokenizer/)

static fg_status need_vocab(const fg_model *m) {
  if (!m) return FG_ERR_INVALID_ARG;
  return m->vocab ? FG_OK : FG_ERR_UNSUPPORTED;
}

fg_status fg_tokenize(const fg_model *m, const char *text, size_t len, uint32_t flags, int32_t *out, size_t cap,
                      size_t *n_out) {
  fg_status st = need_vocab(m);
  if (st != FG_OK) return st;
  if ((!text && len) || !n_out || (!out && cap)) return FG_ERR_INVALID_ARG;
  return fg_vocab_encode(m->vocab, text ? text : "", len, flags, out, cap, n_out, NULL);
}

fg_status fg_detokenize(const fg_model *m, const int32_t *ids, size_t n, char *out, size_t cap, size_t *n_out) {
  fg_status st = need_vocab(m);
  if (st != FG_OK) return st;
  if ((!ids && n) || !n_out || (!out && cap)) return FG_ERR_INVALID_ARG;
  return fg_vocab_decode(m->vocab, ids, n, out, cap, n_out, NULL);
}

fg_status fg_token_lookup(const fg_model *m, const char *piece, int32_t *id) {
  fg_status st = need_vocab(m);
  if (st != FG_OK) return st;
  if (!piece || !id) return FG_ERR_INVALID_ARG;
  int32_t t = fg_vocab_lookup(m->vocab, piece, strlen(piece));
  if (t < 0) return FG_ERR_INVALID_ARG;
  *id = t;
  return FG_OK;
}
