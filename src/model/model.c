/* model.c — loading a gemma3 GGUF: hyper-parameters, tensor binding with shape checks, fingerprint. */
#include "model/model.h"

#include "kernels/kernels.h"
#include "kernels/threadpool.h"
#include "model/lora.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// Hyper-parameters

#define HP_U32(key, dst)                                                    \
  do {                                                                      \
    if ((st = fg_gguf_get_u32(g, key, dst, err)) != FG_OK) return st;       \
  } while (0)
#define HP_U32_OR(key, def, dst)                                            \
  do {                                                                      \
    if ((st = fg_gguf_get_u32_or(g, key, def, dst, err)) != FG_OK) return st; \
  } while (0)
#define HP_F32_OR(key, def, dst)                                            \
  do {                                                                      \
    if ((st = fg_gguf_get_f32_or(g, key, def, dst, err)) != FG_OK) return st; \
  } while (0)

fg_status fg_hparams_load(const fg_gguf *g, fg_hparams *hp, fg_error *err) {
  memset(hp, 0, sizeof *hp);
  fg_gguf_str archs;
  fg_status st = fg_gguf_get_str(g, FG_KEY_ARCHITECTURE, &archs, err);
  if (st != FG_OK) return st;
  if (!fg_gguf_str_eq(archs, FG_ARCH_GEMMA3)) {
    return fg_err(err, FG_ERR_UNSUPPORTED, "unsupported architecture '%.*s' (general.architecture); fgemma runs gemma3",
                  (int)FG_MIN(archs.len, 64), archs.ptr);
  }
  HP_U32(FG_KEY_G3_EMBEDDING_LENGTH, &hp->n_embd);
  HP_U32(FG_KEY_G3_BLOCK_COUNT, &hp->n_layer);
  HP_U32(FG_KEY_G3_FEED_FORWARD_LENGTH, &hp->n_ff);
  HP_U32(FG_KEY_G3_HEAD_COUNT, &hp->n_head);
  HP_U32_OR(FG_KEY_G3_HEAD_COUNT_KV, hp->n_head, &hp->n_head_kv);
  HP_U32(FG_KEY_G3_CONTEXT_LENGTH, &hp->n_ctx_train);
  if (hp->n_head == 0) return fg_err(err, FG_ERR_FORMAT, "gemma3.attention.head_count is 0");
  HP_U32_OR(FG_KEY_G3_KEY_LENGTH, hp->n_embd / hp->n_head, &hp->head_dim_k);
  HP_U32_OR(FG_KEY_G3_VALUE_LENGTH, hp->head_dim_k, &hp->head_dim_v);
  HP_U32_OR(FG_KEY_G3_SLIDING_WINDOW, 0, &hp->sliding_window);
  HP_U32_OR(FG_KEY_G3_SLIDING_WINDOW_PATTERN, 6, &hp->swa_pattern);
  HP_F32_OR(FG_KEY_G3_ROPE_FREQ_BASE, 10000.0f, &hp->rope_base);
  HP_F32_OR(FG_KEY_G3_ROPE_FREQ_BASE_SWA, 10000.0f, &hp->rope_base_swa);
  HP_F32_OR(FG_KEY_G3_FINAL_SOFTCAP, 0.0f, &hp->final_softcap);
  if ((st = fg_gguf_get_f32(g, FG_KEY_G3_RMS_EPS, &hp->rms_eps, err)) != FG_OK) return st;

  /* sanity: sizes that make the arithmetic below safe and the file meaningful */
  const struct { const char *name; uint32_t v; uint32_t max; } lim[] = {
      {FG_KEY_G3_EMBEDDING_LENGTH, hp->n_embd, 1u << 16},
      {FG_KEY_G3_BLOCK_COUNT, hp->n_layer, 1024},
      {FG_KEY_G3_FEED_FORWARD_LENGTH, hp->n_ff, 1u << 18},
      {FG_KEY_G3_HEAD_COUNT, hp->n_head, 1024},
      {FG_KEY_G3_HEAD_COUNT_KV, hp->n_head_kv, 1024},
      {FG_KEY_G3_KEY_LENGTH, hp->head_dim_k, 4096},
      {FG_KEY_G3_VALUE_LENGTH, hp->head_dim_v, 4096},
      {FG_KEY_G3_CONTEXT_LENGTH, hp->n_ctx_train, 1u << 24},
  };
  for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
    if (lim[i].v == 0 || lim[i].v > lim[i].max)
      return fg_err(err, FG_ERR_FORMAT, "%s = %u is out of range (1..%u)", lim[i].name, lim[i].v, lim[i].max);
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
  /* the kernels read f32 values and the blocks' fp16 fields in place */
  const size_t align = t->type == FG_TYPE_F32 ? 4 : 2;
  if ((uintptr_t)t->data % align != 0)
    return fg_err(err, FG_ERR_FORMAT, "tensor '%s' data is not %zu-byte aligned", name, align);
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

void fg_model_fingerprint_finish(fg_model *m) {
  uint64_t h;
  memcpy(m->info.fingerprint, m->fp_file, 16);
  memcpy(&h, m->info.fingerprint, 8);
  if (m->lora) {
    /* the adapters change every logit: their bytes, scales, order and the merge mode */
    const uint32_t tag = 0x6c6f7261u; /* "lora" */
    fnv(&h, &tag, sizeof tag);
    fnv(&h, &m->lora->hash, sizeof m->lora->hash);
  }
  if (m->head_copy) {
    /* snapshots carry logits: a model with another head must not take them for its own */
    const uint32_t tag[2] = {0x68656164u /* "head" */, m->output.type};
    fnv(&h, tag, sizeof tag);
  }
  memcpy(m->info.fingerprint, &h, 8);
}

// ----------------------------------------------------------------------------------------------
// Replacement LM head: a quantized copy of the file's head (token_embd when tied), made at load or
// written into a copy of the file as output.weight (fg_model_requant_head). Both use fg_head_quantize,
// so the two routes give the same bytes and the same logits.

#define HEAD_CHUNK_ROWS 8192u /* rows per threaded job: the granularity of progress and cancel */

typedef struct head_job {
  const fg_mat *src;
  uint32_t type;
  size_t dst_row_bytes;
  uint8_t *dst;       /* (src->rows, dst_row_bytes) */
  float *tmp;         /* (nth, src->cols) one dequantized row per thread */
  uint32_t r0, r1;    /* rows of this job */
} head_job;

static void head_job_run(void *ud, uint32_t ith, uint32_t nth) {
  const head_job *j = ud;
  const uint32_t n = j->r1 - j->r0;
  const uint32_t a = j->r0 + (uint32_t)((uint64_t)n * ith / nth), b = j->r0 + (uint32_t)((uint64_t)n * (ith + 1) / nth);
  float *row = j->tmp + (size_t)ith * j->src->cols;
  for (uint32_t r = a; r < b; r++) {
    const uint8_t *s = (const uint8_t *)j->src->data + (size_t)r * j->src->row_bytes;
    fg_dequantize_row(j->src->type, s, row, j->src->cols);
    fg_quantize_row(j->type, row, j->dst + (size_t)r * j->dst_row_bytes, j->src->cols);
  }
}

static bool head_type_ok(uint32_t type) { return type == FG_TYPE_Q8_0 || type == FG_TYPE_Q4_0; }

static fg_status head_check(const fg_mat *src, uint32_t type, size_t *row_bytes, size_t *total, fg_error *err) {
  if (!head_type_ok(type))
    return fg_err(err, FG_ERR_UNSUPPORTED, "replacement head type %u (%s) is not supported: use q8_0 (8) or q4_0 (2)",
                  type, fg_type_name(type));
  uint64_t rb, all;
  if (!fg_type_traits_get(src->type))
    return fg_err(err, FG_ERR_UNSUPPORTED, "the head's type %u cannot be read, so it cannot be re-quantized", src->type);
  if (!fg_type_row_bytes(type, src->cols, &rb))
    return fg_err(err, FG_ERR_UNSUPPORTED, "a %s head needs rows of a multiple of 32 values; n_embd is %u",
                  fg_type_name(type), src->cols);
  if (!fg_mul_u64(rb, src->rows, &all) || !fg_u64_to_size(all, total) || !fg_u64_to_size(rb, row_bytes))
    return fg_err(err, FG_ERR_NOMEM, "a %s head of %u rows does not fit in memory", fg_type_name(type), src->rows);
  return FG_OK;
}

fg_status fg_head_quantize(const fg_mat *src, uint32_t type, uint8_t *dst,
                           bool (*progress)(uint64_t done, uint64_t total, void *ud), void *ud, fg_error *err) {
  size_t rb, total;
  fg_status st = head_check(src, type, &rb, &total, err);
  if (st != FG_OK) return st;
  uint32_t nth = FG_MIN(fg_cpu_count(), 16u);
  fg_threadpool *tp = NULL;
  if (nth > 1 && fg_threadpool_create(nth, &tp) != FG_OK) {
    tp = NULL; /* fall back to the calling thread */
    nth = 1;
  }
  if (!tp) nth = 1;
  float *tmp = fg_malloc_array((size_t)nth * src->cols, sizeof(float));
  if (!tmp) {
    fg_threadpool_free(tp);
    return fg_err(err, FG_ERR_NOMEM, "out of memory for the head quantizer");
  }
  head_job j = {src, type, rb, dst, tmp, 0, 0};
  for (uint32_t r0 = 0; r0 < src->rows && st == FG_OK; r0 += HEAD_CHUNK_ROWS) {
    j.r0 = r0;
    j.r1 = src->rows - r0 < HEAD_CHUNK_ROWS ? src->rows : r0 + HEAD_CHUNK_ROWS;
    if (tp)
      fg_threadpool_run(tp, head_job_run, &j);
    else
      head_job_run(&j, 0, 1);
    if (progress && !progress(j.r1, src->rows, ud)) st = fg_err(err, FG_ERR_ABORTED, "head quantization cancelled");
  }
  fg_free(tmp);
  fg_threadpool_free(tp);
  return st;
}

/* Replaces m->output by a copy of type; a head that already has the type is kept as it is. */
static fg_status replace_head(fg_model *m, uint32_t type, fg_error *err) {
  size_t rb, total;
  fg_status st = head_check(&m->output, type, &rb, &total, err);
  if (st != FG_OK || m->output.type == type) return st;
  const double t0 = fg_time_s();
  uint8_t *copy = fg_aligned_alloc(64, total);
  if (!copy)
    return fg_err(err, FG_ERR_NOMEM, "out of memory for a %s replacement head (%zu bytes)", fg_type_name(type), total);
  if ((st = fg_head_quantize(&m->output, type, copy, NULL, NULL, err)) != FG_OK) {
    fg_aligned_free(copy);
    return st;
  }
  m->head_copy = copy;
  m->output.type = type;
  m->output.row_bytes = rb;
  m->output.data = copy;
  m->tied_head = false;
  m->info.head_copy_bytes = total;
  m->info.head_copy_ms = (fg_time_s() - t0) * 1e3;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Public: load / free / info

void fg_model_params_init(fg_model_params *p) {
  if (!p) return;
  memset(p, 0, sizeof *p);
  p->head_type = FG_MODEL_HEAD_AS_FILE;
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

// ----------------------------------------------------------------------------------------------
// Trimmed vocabulary: a head whose rows are mostly all zero is computed over its other rows only

/* Row r of W is all zero: every value is +-0, or every block's scale is +-0 (Q8_0, Q4_0). */
static bool row_is_zero(const fg_mat *W, uint32_t r) {
  const uint8_t *p = (const uint8_t *)W->data + (size_t)r * W->row_bytes;
  switch (W->type) {
    case FG_TYPE_F32:
      for (uint32_t j = 0; j < W->cols; j++) {
        uint32_t u;
        memcpy(&u, p + 4 * (size_t)j, 4);
        if (u & 0x7fffffffu) return false;
      }
      return true;
    case FG_TYPE_F16:
    case FG_TYPE_BF16:
      for (uint32_t j = 0; j < W->cols; j++) {
        uint16_t u;
        memcpy(&u, p + 2 * (size_t)j, 2);
        if (u & 0x7fffu) return false;
      }
      return true;
    case FG_TYPE_Q8_0:
    case FG_TYPE_Q4_0: {
      const size_t bs = W->type == FG_TYPE_Q8_0 ? sizeof(fg_block_q8_0) : sizeof(fg_block_q4_0);
      for (size_t off = 0; off + bs <= W->row_bytes; off += bs) {
        uint16_t d;
        memcpy(&d, p + off, 2); /* the block's fp16 scale comes first */
        if (d & 0x7fffu) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

/* Finds the non-zero rows of the head when a sample says many are zero; keeps the list only when at
 * least a quarter of the rows are zero (otherwise the gather costs more than it saves). */
static fg_status find_head_rows(fg_model *m, fg_error *err) {
  const fg_mat *W = &m->output;
  const uint32_t n = W->rows, sample = 64;
  if (n < 4 * sample) return FG_OK;
  uint32_t zero_in_sample = 0;
  for (uint32_t i = 0; i < sample; i++) zero_in_sample += row_is_zero(W, (uint32_t)((uint64_t)n * i / sample + i % 7));
  if (zero_in_sample == 0) return FG_OK; /* a full vocabulary (every real model): nothing scanned */
  uint32_t live = 0;
  for (uint32_t r = 0; r < n; r++) live += !row_is_zero(W, r);
  if (live > n - n / 4) return FG_OK;
  int32_t *rows = fg_malloc_array(live ? live : 1, sizeof *rows);
  if (!rows) return fg_err(err, FG_ERR_NOMEM, "out of memory for the list of %u head rows", live);
  uint32_t k = 0;
  for (uint32_t r = 0; r < n; r++)
    if (!row_is_zero(W, r)) rows[k++] = (int32_t)r;
  m->head_rows = rows;
  m->n_head_rows = live;
  return FG_OK;
}

/* Whether W's weights are the file's: a replacement head or a merged adapter's copy is not packed (a second
 * copy would only double it; its pages cannot be handed back) */
static bool in_file(const fg_model *m, const fg_mat *W) {
  const uint8_t *p = W->data;
  return p >= m->file.data && p < m->file.data + m->file.size;
}

/* Matrix i of those repack considers: the layers' seven, then the head when fg_model_head computes it
 * whole (no head_rows); NULL past the end. */
static fg_mat *packable(fg_model *m, size_t i) {
  if (i < 7 * (size_t)m->hp.n_layer) {
    fg_layer *L = &m->layers[i / 7];
    fg_mat *const lm[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
    return lm[i % 7];
  }
  return i == 7 * (size_t)m->hp.n_layer && !m->head_rows ? &m->output : NULL;
}

/* Bytes of W's packed copy, 0 where the table has no layout for it or W is not the file's */
static size_t pack_bytes(const fg_kernels *k, const fg_model *m, const fg_mat *W) {
  return in_file(m, W) ? k->pack_size(W->type, W->rows, W->cols) : 0;
}

/* Rows per chunk of the packing: about 4 MiB of the file, whole strips */
static size_t pack_chunk_rows(const fg_kernels *k, const fg_mat *W) {
  return FG_MAX((size_t)k->pack_rows, ((size_t)4 << 20) / W->row_bytes / k->pack_rows * k->pack_rows);
}

/* One piece of the packing: rows r0..r1 of a matrix, about 4 MiB of the file. */
typedef struct repack_chunk {
  fg_mat *W;
  uint8_t *dst;
  size_t r0, r1;
} repack_chunk;

typedef struct repack_job {
  const fg_kernels *k;
  const fg_mapfile *file;
  const repack_chunk *chunks;
  size_t n;
  _Atomic size_t next; /* the next chunk to take */
} repack_job;

/* Each thread takes chunks until none are left, copies them and hands their pages of the file back at
 * once: the peak stays near the copy's size instead of the copy plus the file. */
static void repack_worker(void *ud, uint32_t ith, uint32_t nth) {
  (void)ith;
  (void)nth;
  repack_job *j = ud;
  for (size_t i; (i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < j->n;) {
    const repack_chunk *c = &j->chunks[i];
    j->k->pack(c->W->type, c->W->data, c->W->row_bytes, c->W->cols, c->r0, c->r1, c->dst);
    fg_mapfile_drop(j->file, (const uint8_t *)c->W->data + c->r0 * c->W->row_bytes, (c->r1 - c->r0) * c->W->row_bytes);
  }
}

/* Copies every matrix the process kernel table packs (kernels.h, "load-time repacking") into one heap
 * buffer (each copy 64-byte aligned), on every CPU (the first write of a fresh page, which the kernel
 * zeroes, is most of the cost), and hands the mapped file's pages of them back. The file is read again
 * only by the reference forward and, where the table cannot unpack its copy, by embeddings of a tied
 * head and row lists. */
static fg_status repack(fg_model *m, fg_error *err) {
  const fg_kernels *k = NULL;
  if (fg_kernels_get(&k, NULL) != FG_OK || !k->pack_size || !k->pack) return FG_OK;
  const double t0 = fg_time_s();
  size_t total = 0, n_chunks = 0;
  fg_mat *W;
  for (size_t i = 0; (W = packable(m, i)) != NULL; i++) {
    const size_t sz = pack_bytes(k, m, W);
    if (sz > SIZE_MAX - 64 - total)
      return fg_err(err, FG_ERR_NOMEM, "the repacked weights do not fit in the address space; FG_MODEL_NO_REPACK "
                    "loads without them");
    total += (sz + 63) & ~(size_t)63;
    if (sz) n_chunks += (W->rows + pack_chunk_rows(k, W) - 1) / pack_chunk_rows(k, W);
  }
  if (total == 0) return FG_OK;
  uint8_t *buf = fg_aligned_alloc((size_t)2 << 20, total);
  repack_chunk *chunks = fg_malloc(n_chunks * sizeof *chunks);
  const uint32_t n_threads = FG_MIN(fg_cpu_count(), 8u);
  fg_threadpool *tp = NULL;
  if (!buf || !chunks || (n_threads > 1 && fg_threadpool_create(n_threads, &tp) != FG_OK)) {
    fg_aligned_free(buf);
    fg_free(chunks);
    return fg_err(err, FG_ERR_NOMEM, "out of memory for the repacked weights (%zu bytes); FG_MODEL_NO_REPACK loads "
                  "without them", total);
  }
  fg_advise_huge(buf, total); /* a 270M model's copy: about 100 faults instead of 60,000 */
  uint8_t *dst = buf;
  size_t c = 0;
  for (size_t i = 0; (W = packable(m, i)) != NULL; i++) {
    const size_t sz = pack_bytes(k, m, W), chunk = sz ? pack_chunk_rows(k, W) : 0;
    if (!sz) continue;
    for (size_t r0 = 0; r0 < W->rows; r0 += chunk) chunks[c++] = (repack_chunk){W, dst, r0, FG_MIN((size_t)W->rows, r0 + chunk)};
    W->packed = dst;
    W->packed_for = k;
    dst += (sz + 63) & ~(size_t)63;
  }
  repack_job job = {k, &m->file, chunks, c, 0};
  if (tp) fg_threadpool_run(tp, repack_worker, &job);
  else repack_worker(&job, 0, 1);
  fg_threadpool_free(tp);
  fg_free(chunks);
  for (size_t i = 0; (W = packable(m, i)) != NULL; i++) /* pages that straddled two chunks */
    if (W->packed) fg_mapfile_drop(&m->file, W->data, (size_t)W->rows * W->row_bytes);
  m->packed = buf;
  m->info.repack_bytes = total;
  m->info.repack_ms = (fg_time_s() - t0) * 1e3;
  return FG_OK;
}

/* A byte range of the mapped file */
typedef struct file_span {
  const uint8_t *p;
  size_t n;
} file_span;

/* A norm vector's pointer in the model and its length */
typedef struct norm_ref {
  const float **p;
  size_t n;
} norm_ref;

static int span_cmp(const void *a, const void *b) {
  const uint8_t *x = ((const file_span *)a)->p, *y = ((const file_span *)b)->p;
  return x < y ? -1 : x > y;
}

/* At the end of a mapped load, the file's pages that nothing reads any more go back to the kernel: the
 * metadata before the tensor data (the vocabulary is the tokenizer's own copy by now) and, after repack,
 * the packed matrices and the norm vectors, which are copied to the heap first (they sit between the
 * packed matrices, and one read of a norm maps the file's large page around it, up to 2 MiB, again).
 * All as merged spans: repack's per-matrix drops leave the pages a matrix shares with its neighbours.
 * The file is mapped read-only, so a later read of a page handed back (fg_model_save, the reference
 * forward) maps it again: the same bytes. Nothing to do without a mapping (FG_MODEL_NO_MMAP). */
static fg_status settle_pages(fg_model *m, fg_error *err) {
  if (!m->file.mapped) return FG_OK;
  const size_t meta = m->gguf.data_offset <= m->file.size ? (size_t)m->gguf.data_offset : 0;
  if (!m->packed) {
    fg_mapfile_drop(&m->file, m->file.data, meta);
    return FG_OK;
  }
  const fg_hparams *hp = &m->hp;
  enum { PER_LAYER = 6 };
  const size_t n_norms = 1 + PER_LAYER * (size_t)hp->n_layer, n_spans = 1 + n_norms + 7 * (size_t)hp->n_layer + 1;
  size_t total = 0, k = 0, ns = 0;
  norm_ref *nr = fg_malloc(n_norms * sizeof *nr);
  file_span *sp = fg_malloc(n_spans * sizeof *sp);
  float *copy = NULL;
  if (nr && sp) {
    nr[k++] = (norm_ref){&m->output_norm, hp->n_embd};
    for (uint32_t il = 0; il < hp->n_layer; il++) {
      fg_layer *L = &m->layers[il];
      const float **v[PER_LAYER] = {&L->attn_norm, &L->q_norm, &L->k_norm, &L->post_attn_norm, &L->ffn_norm,
                                    &L->post_ffw_norm};
      const size_t len[PER_LAYER] = {hp->n_embd, hp->head_dim_k, hp->head_dim_k, hp->n_embd, hp->n_embd, hp->n_embd};
      for (int i = 0; i < PER_LAYER; i++) nr[k++] = (norm_ref){v[i], len[i]};
    }
    for (size_t i = 0; i < k; i++) total += nr[i].n;
    copy = fg_malloc(total * sizeof *copy);
  }
  if (!copy) {
    fg_free(nr);
    fg_free(sp);
    return fg_err(err, FG_ERR_NOMEM, "out of memory for the norm vectors' copies (%zu bytes)", total * sizeof *copy);
  }
  float *dst = copy;
  for (size_t i = 0; i < k; i++) {
    memcpy(dst, *nr[i].p, nr[i].n * sizeof *dst);
    sp[ns++] = (file_span){(const uint8_t *)*nr[i].p, nr[i].n * sizeof *dst};
    *nr[i].p = dst;
    dst += nr[i].n;
  }
  fg_free(nr);
  m->norms = copy;
  sp[ns++] = (file_span){m->file.data, meta};
  fg_mat *W;
  for (size_t i = 0; (W = packable(m, i)) != NULL; i++)
    if (W->packed) sp[ns++] = (file_span){W->data, (size_t)W->rows * W->row_bytes};
  qsort(sp, ns, sizeof *sp, span_cmp);
  /* spans closer than 64 KiB merge (what lies between is alignment, or a small tensor read again on use) */
  for (size_t i = 0; i < ns;) {
    const uint8_t *a = sp[i].p, *b = a + sp[i].n;
    size_t j = i + 1;
    for (; j < ns && sp[j].p <= b + ((size_t)64 << 10); j++)
      if (sp[j].p + sp[j].n > b) b = sp[j].p + sp[j].n;
    fg_mapfile_drop(&m->file, a, (size_t)(b - a));
    i = j;
  }
  fg_free(sp);
  return FG_OK;
}

static void model_destroy(fg_model *m) {
  if (!m) return;
  if (m->base) {
    fg_model_view_destroy(m);
    return;
  }
  fg_free(m->head_rows);
  fg_vocab_free(m->vocab);
  fg_lora_free(m->lora);
  fg_aligned_free(m->head_copy);
  fg_aligned_free(m->packed);
  fg_free(m->norms);
  fg_free(m->layers);
  fg_gguf_clear(&m->gguf);
  fg_mapfile_close(&m->file);
  fg_free(m);
}

/* Everything after the bytes are in memory: parse, bind, check, replace the head, vocabulary, info.
 * name labels parse errors (a path, or the descriptor and range). On failure m is destroyed. */
static fg_status model_finish(fg_model *m, const fg_model_params *p, const char *name, fg_model **out, fg_error *err) {
  fg_status st = fg_gguf_parse(m->file.data, m->file.size, &m->gguf, err);
  if (st != FG_OK && err) {
    /* prefix the name so the CLI's one-line error says which file */
    char tmp[sizeof err->msg];
    memcpy(tmp, err->msg, sizeof tmp);
    snprintf(err->msg, sizeof err->msg, "%.60s: %.190s", name, tmp);
  }
  if (st == FG_OK) st = fg_hparams_load(&m->gguf, &m->hp, err);
  if (st == FG_OK) st = bind_all(m, err);
  if (st == FG_OK && (p->flags & FG_MODEL_CHECK_TENSORS)) st = check_finite(m, err);
  /* the file's type of the bulk of the weights, before adapters may replace matrices by merged copies */
  const uint32_t weight_type = st == FG_OK ? m->layers[0].w_gate.type : 0;
  if (st == FG_OK) st = fg_lora_load(m, p, err);
  const bool replace = p->head_type != FG_MODEL_HEAD_AS_FILE && p->head_type != 0;
  if (st == FG_OK && replace) st = replace_head(m, p->head_type, err);
  if (st == FG_OK && !(p->flags & FG_MODEL_DENSE_HEAD)) st = find_head_rows(m, err);
  if (st == FG_OK) {
    fg_error verr;
    const fg_lora_set *ls = m->lora;
    fg_status vs = ls && ls->n_override
                       ? fg_vocab_load_override(&m->gguf, ls->ov_ids, ls->ov_text, ls->n_override, &m->vocab, &verr)
                       : fg_vocab_load(&m->gguf, &m->vocab, &verr);
    if (vs == FG_ERR_UNSUPPORTED && !(ls && ls->n_override)) {
      m->vocab = NULL; /* a model without a tokenizer still runs on ids */
    } else if (vs != FG_OK) {
      st = fg_err(err, vs, "%s", verr.msg);
    } else if (fg_vocab_size(m->vocab) != m->hp.n_vocab) {
      st = fg_err(err, FG_ERR_FORMAT, "tokenizer has %u tokens but token_embd.weight has %u rows",
                  fg_vocab_size(m->vocab), m->hp.n_vocab);
    }
  }
  if (st != FG_OK) {
    model_destroy(m);
    return st;
  }

  /* info */
  fg_model_info *info = &m->info;
  snprintf(info->arch, sizeof info->arch, "gemma3");
  fg_gguf_str gname;
  if (fg_gguf_get_str(&m->gguf, "general.name", &gname, NULL) == FG_OK)
    fg_utf8_repair(gname.ptr, gname.len, info->name, sizeof info->name); /* UTF-8, whole characters */
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
  info->weight_type = weight_type;
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
  info->head_rows = m->head_rows ? m->n_head_rows : m->output.rows;
  info->decode_bytes += (uint64_t)info->head_rows * m->output.row_bytes + m->tok_embd.row_bytes;
  if (m->lora) info->decode_bytes += m->lora->data_bytes; /* run-time adapters are read once per token too */
  fingerprint(m, m->fp_file);
  fg_model_fingerprint_finish(m);
  /* last: the steps above read samples of the file (the fingerprint), and repack hands the pages of the
   * packed matrices back */
  if (!(p->flags & FG_MODEL_NO_REPACK) && (st = repack(m, err)) != FG_OK) {
    model_destroy(m);
    return st;
  }
  if ((st = settle_pages(m, err)) != FG_OK) {
    model_destroy(m);
    return st;
  }
  atomic_init(&m->refs, 1);
  *out = m;
  return FG_OK;
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
  if (st != FG_OK) {
    model_destroy(m);
    return st;
  }
  return model_finish(m, &p, path, out, err);
}

fg_status fg_model_load_fd(int fd, uint64_t offset, uint64_t length, const fg_model_params *params, fg_model **out,
                           fg_error *err) {
  fg_err_clear(err);
  if (out) *out = NULL;
  if (!out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_model_load_fd: out must not be NULL");
  fg_model_params p;
  fg_model_params_init(&p);
  if (params) p = *params;
  char name[80];
  snprintf(name, sizeof name, "fd %d at offset %" PRIu64, fd, offset);
  fg_model *m = fg_calloc(1, sizeof *m);
  if (!m) return fg_err(err, FG_ERR_NOMEM, "out of memory");
  fg_status st = fg_mapfile_open_fd(fd, offset, length, (p.flags & FG_MODEL_NO_MMAP) == 0, name, &m->file, err);
  if (st != FG_OK) {
    model_destroy(m);
    return st;
  }
  return model_finish(m, &p, name, out, err);
}

const fg_model *fg_model_retain(const fg_model *m) {
  /* the count is the one mutable part of an otherwise immutable model */
  if (m) atomic_fetch_add_explicit(&((fg_model *)m)->refs, 1, memory_order_relaxed);
  return m;
}

void fg_model_release(const fg_model *m) {
  if (m && atomic_fetch_sub_explicit(&((fg_model *)m)->refs, 1, memory_order_acq_rel) == 1) model_destroy((fg_model *)m);
}

void fg_model_free(fg_model *m) { fg_model_release(m); }

fg_status fg_model_get_info(const fg_model *m, fg_model_info *out) {
  if (!m || !out) return FG_ERR_INVALID_ARG;
  *out = m->info;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Public: a copy of a file with a replacement output.weight (fgemma requant-head)

static fg_status write_requant(const fg_model *m, FILE *f, uint32_t type, const uint8_t *head, size_t head_bytes,
                               fg_error *err) {
  const fg_gguf *g = &m->gguf;
  fg_gguf_writer *w = fg_gguf_writer_create();
  if (!w) return fg_err(err, FG_ERR_NOMEM, "out of memory");
  fg_status st = FG_OK;
  for (size_t i = 0; i < g->n_kv && st == FG_OK; i++) st = fg_gguf_writer_copy_kv(w, &g->kv[i]);
  if (st == FG_OK && !fg_gguf_find_kv(g, "general.alignment") && g->alignment != FG_GGUF_DEFAULT_ALIGNMENT)
    st = fg_gguf_writer_set_u32(w, "general.alignment", (uint32_t)g->alignment);
  bool had_output = false, had_long_name = false;
  char name[256];
  for (size_t i = 0; i < g->n_tensors && st == FG_OK; i++) {
    const fg_gguf_tensor *t = &g->tensors[i];
    if (t->name.len >= sizeof name) {
      had_long_name = true;
      st = fg_err(err, FG_ERR_UNSUPPORTED, "tensor name of %zu bytes is too long to copy", t->name.len);
      break;
    }
    memcpy(name, t->name.ptr, t->name.len);
    name[t->name.len] = '\0';
    const bool is_out = strcmp(name, "output.weight") == 0;
    had_output |= is_out;
    st = fg_gguf_writer_add_tensor(w, name, is_out ? type : t->type, t->n_dims, t->ne);
  }
  const uint64_t ne[2] = {m->hp.n_embd, m->hp.n_vocab};
  if (st == FG_OK && !had_output) st = fg_gguf_writer_add_tensor(w, "output.weight", type, 2, ne);
  /* a failed copy/add left its message in the writer: begin reports it (and writes nothing) */
  if (!had_long_name) st = fg_gguf_writer_begin(w, f, err);
  for (size_t i = 0; i < g->n_tensors && st == FG_OK; i++) {
    const fg_gguf_tensor *t = &g->tensors[i];
    const bool is_out = fg_gguf_str_eq(t->name, "output.weight");
    size_t nb;
    if (is_out) {
      st = fg_gguf_writer_tensor_data(w, f, head, head_bytes, err);
    } else if (!fg_u64_to_size(t->nbytes, &nb)) {
      st = fg_err(err, FG_ERR_NOMEM, "tensor of %llu bytes is too large", (unsigned long long)t->nbytes);
    } else {
      st = fg_gguf_writer_tensor_data(w, f, t->data, nb, err);
    }
  }
  if (st == FG_OK && !had_output) st = fg_gguf_writer_tensor_data(w, f, head, head_bytes, err);
  if (st == FG_OK) st = fg_gguf_writer_end(w, f, err);
  fg_gguf_writer_free(w);
  return st;
}

fg_status fg_model_requant_head(const char *in_path, const char *out_path, uint32_t head_type,
                                bool (*progress)(uint64_t done, uint64_t total, void *user_data),
                                void *progress_user_data, fg_error *err) {
  fg_err_clear(err);
  if (!in_path || !out_path || !*out_path)
    return fg_err(err, FG_ERR_INVALID_ARG, "fg_model_requant_head: in_path and out_path must be given");
  if (!head_type_ok(head_type))
    return fg_err(err, FG_ERR_UNSUPPORTED, "replacement head type %u (%s) is not supported: use q8_0 (8) or q4_0 (2)",
                  head_type, fg_type_name(head_type));
  fg_model *m = NULL;
  fg_status st = fg_model_load(in_path, NULL, &m, err);
  if (st != FG_OK) return st;
  size_t rb, total;
  uint8_t *head = NULL;
  char *tmp_path = NULL;
  FILE *f = NULL;
  if ((st = head_check(&m->output, head_type, &rb, &total, err)) != FG_OK) goto done;
  if (m->output.type == head_type) {
    head = (uint8_t *)m->output.data; /* already of the type: copied as it is */
    if (progress && !progress(m->output.rows, m->output.rows, progress_user_data)) {
      st = fg_err(err, FG_ERR_ABORTED, "cancelled");
      goto done;
    }
  } else {
    if (!(head = fg_aligned_alloc(64, total))) {
      st = fg_err(err, FG_ERR_NOMEM, "out of memory for a %s head (%zu bytes)", fg_type_name(head_type), total);
      goto done;
    }
    if ((st = fg_head_quantize(&m->output, head_type, head, progress, progress_user_data, err)) != FG_OK) goto done;
  }
  const size_t n = strlen(out_path);
  if (!(tmp_path = fg_malloc(n + 5))) {
    st = fg_err(err, FG_ERR_NOMEM, "out of memory");
    goto done;
  }
  memcpy(tmp_path, out_path, n);
  memcpy(tmp_path + n, ".tmp", 5);
  errno = 0;
  if (!(f = fopen(tmp_path, "wb"))) {
    st = fg_err(err, FG_ERR_IO, "cannot create %.200s: %s", tmp_path, strerror(errno));
    goto done;
  }
  st = write_requant(m, f, head_type, head, total, err);
  errno = 0;
  const int rc = fclose(f);
  f = NULL;
  if (st == FG_OK && rc != 0) st = fg_err(err, FG_ERR_IO, "cannot write %.200s: %s", tmp_path, strerror(errno));
  if (st == FG_OK) {
    errno = 0;
    if (rename(tmp_path, out_path) != 0)
      st = fg_err(err, FG_ERR_IO, "cannot rename %.100s to %.100s: %s", tmp_path, out_path, strerror(errno));
  }
  if (st != FG_OK) remove(tmp_path);
done:
  if (f) fclose(f);
  if (head && head != (const uint8_t *)m->output.data) fg_aligned_free(head);
  fg_free(tmp_path);
  fg_model_free(m);
  return st;
}

// ----------------------------------------------------------------------------------------------
// Embedding lookup and helpers

void fg_model_embed(const fg_model *m, int32_t id, float *out) {
  const fg_mat *e = &m->tok_embd, *h = &m->output;
  const fg_kernels *pk = h->packed_for;
  if (h->packed && h->data == e->data && pk->unpack) {
    /* a tied head repacked at load: its copy, not the file pages repack handed back (each fault would map
     * them again, with the kernel's fault-around, 64 KiB at a time) */
    const fg_type_traits *tt = fg_type_traits_get(e->type);
    uint8_t buf[4096] __attribute__((aligned(32)));
    const size_t per = FG_MAX((size_t)1, sizeof buf / tt->type_size), nblk = e->cols / tt->block_size;
    for (size_t k0 = 0; k0 < nblk; k0 += per) {
      const size_t k1 = FG_MIN(nblk, k0 + per);
      pk->unpack(e->type, h->packed, e->cols, (size_t)id, k0, k1, buf);
      fg_dequantize_row(e->type, buf, out + k0 * tt->block_size, (k1 - k0) * tt->block_size);
    }
  } else {
    fg_dequantize_row(e->type, (const uint8_t *)e->data + (size_t)id * e->row_bytes, out, e->cols);
  }
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
