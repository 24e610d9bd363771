/* gen_lora.c — the synthetic LoRA adapter generator (fgemma gen-lora): llama.cpp's GGUF adapter format
 * for a given base model, with values from a seed (fgemma.h, fg_gen_lora). The adapters the tests and
 * the llama.cpp oracle run on (docs/LORA.md).
 *
 * Values: lora_a ~ N(0, 1/n_in), so that A·x has entries of the size of x's RMS; lora_b ~ N(0, σ²) with
 * σ = magnitude · rms(W) · sqrt(n_in / rank) / s, s = alpha / rank (1 without alpha), so that the
 * entries of s·B·A have an RMS of magnitude · rms(W): a product's change is then about `magnitude` of
 * the product itself. rms(W) comes from up to 64 evenly spaced rows of the base matrix. Random numbers
 * as gen_model.c: one stream per (seed, tensor name), the same file on every platform. */
#include "gen/gen_internal.h"

#include "gguf/gguf.h"
#include "model/lora.h"
#include "tensor/dtype.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

void fg_gen_lora_params_init(fg_gen_lora_params *p) {
  if (!p) return;
  memset(p, 0, sizeof *p);
  p->rank = 8;
  p->alpha = 16.0f;
  p->targets = NULL;
  p->type = FG_TYPE_F32;
  p->seed = 0;
  p->magnitude = FG_GEN_LORA_MAGNITUDE;
}

/* "attn_q,ffn_up" or "all" -> one bit per target */
static fg_status parse_targets(const char *s, uint32_t *mask, fg_error *err) {
  *mask = 0;
  if (!s || strcmp(s, "all") == 0) {
    *mask = (1u << FG_LORA_N_TARGETS) - 1;
    return FG_OK;
  }
  const char *p = s;
  while (*p) {
    const char *e = strchr(p, ',');
    const size_t n = e ? (size_t)(e - p) : strlen(p);
    uint32_t k = 0;
    while (k < FG_LORA_N_TARGETS &&
           (strlen(fg_lora_targets[k].gguf) != n || strncmp(fg_lora_targets[k].gguf, p, n) != 0))
      k++;
    if (k == FG_LORA_N_TARGETS)
      return fg_err(err, FG_ERR_INVALID_ARG, "gen-lora: unknown target '%.*s' (attn_q, attn_k, attn_v, attn_output, "
                    "ffn_gate, ffn_up, ffn_down or all)", (int)FG_MIN(n, (size_t)40), p);
    *mask |= 1u << k;
    p += n;
    if (*p == ',') p++;
  }
  if (!*mask) return fg_err(err, FG_ERR_INVALID_ARG, "gen-lora: no target given");
  return FG_OK;
}

/* RMS of up to 64 evenly spaced rows of W */
static double mat_rms(const fg_mat *W, float *row) {
  const uint32_t n = FG_MIN(W->rows, 64u);
  double ss = 0.0;
  for (uint32_t i = 0; i < n; i++) {
    const uint32_t r = (uint32_t)((uint64_t)W->rows * i / n);
    fg_dequantize_row(W->type, (const uint8_t *)W->data + (size_t)r * W->row_bytes, row, W->cols);
    for (uint32_t j = 0; j < W->cols; j++) ss += (double)row[j] * row[j];
  }
  return sqrt(ss / ((double)n * W->cols));
}

static fg_status write_adapter(const fg_model *m, const fg_gen_lora_params *p, uint32_t mask, FILE *f,
                               fg_error *err) {
  fg_gguf_writer *w = fg_gguf_writer_create();
  const size_t max_cols = FG_MAX(m->hp.n_embd, FG_MAX(m->hp.n_ff, m->hp.n_head * m->hp.head_dim_v));
  float *row = fg_malloc_array(max_cols, sizeof(float));      /* (max_cols) */
  uint8_t *q = fg_malloc_array(max_cols, 4 * sizeof(float));  /* a row in the adapter's type, any type fits */
  fg_status st = w && row && q ? FG_OK : fg_err(err, FG_ERR_NOMEM, "gen-lora: out of memory");
  const uint64_t seed = p->seed ? p->seed : 1;
  char name[160];
  snprintf(name, sizeof name, "fgemma synthetic lora rank %u alpha %g magnitude %g seed %llu", p->rank,
           (double)p->alpha, (double)p->magnitude, (unsigned long long)seed);
  FG_GGUF_SET(st, err, "gen-lora: ", set_str, w, FG_KEY_ARCHITECTURE, FG_ARCH_GEMMA3);
  FG_GGUF_SET(st, err, "gen-lora: ", set_str, w, FG_KEY_TYPE, "adapter");
  FG_GGUF_SET(st, err, "gen-lora: ", set_str, w, FG_KEY_NAME, name);
  FG_GGUF_SET(st, err, "gen-lora: ", set_str, w, FG_KEY_ADAPTER_TYPE, "lora");
  FG_GGUF_SET(st, err, "gen-lora: ", set_f32, w, FG_KEY_ADAPTER_LORA_ALPHA, p->alpha);
  if (p->flags & FG_GEN_LORA_VOCAB_OVERRIDE) {
    int32_t ids[7];
    size_t lens[7];
    for (int i = 0; i < 7; i++) {
      ids[i] = FG_FN_TOKEN_FIRST_ID + i;
      lens[i] = strlen(fg_fn_tokens[i]);
    }
    FG_GGUF_SET(st, err, "gen-lora: ", set_arr, w, FG_KEY_VOCAB_OVERRIDE_IDS, FG_GGUF_INT32, ids, 7);
    FG_GGUF_SET(st, err, "gen-lora: ", set_arr_str, w, FG_KEY_VOCAB_OVERRIDE_TOKENS, fg_fn_tokens, lens, 7);
  }
  /* tensor infos, in layer then target order: lora_a then lora_b */
  bool add_failed = false;
  for (uint32_t il = 0; il < m->hp.n_layer && st == FG_OK; il++) {
    for (uint32_t k = 0; k < FG_LORA_N_TARGETS && st == FG_OK; k++) {
      if (!(mask & (1u << k))) continue;
      const fg_layer *L = &m->layers[il];
      const fg_mat *W = (const fg_mat *[]){&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down}[k];
      if (p->rank > FG_MIN(W->cols, W->rows)) {
        st = fg_err(err, FG_ERR_INVALID_ARG, "gen-lora: rank %u is larger than blk.%u.%s.weight allows (%u)", p->rank, il,
                    fg_lora_targets[k].gguf, FG_MIN(W->cols, W->rows));
        break;
      }
      uint64_t rb;
      if (!fg_type_row_bytes(p->type, W->cols, &rb) || !fg_type_row_bytes(p->type, p->rank, &rb)) {
        st = fg_err(err, FG_ERR_UNSUPPORTED, "gen-lora: type %s does not fit rows of %u (lora_a) or %u (lora_b) values",
                    fg_type_name(p->type), W->cols, p->rank);
        break;
      }
      const uint64_t ne_a[2] = {W->cols, p->rank}, ne_b[2] = {p->rank, W->rows};
      snprintf(name, sizeof name, "blk.%u.%s.weight.lora_a", il, fg_lora_targets[k].gguf);
      add_failed = (st = fg_gguf_writer_add_tensor(w, name, p->type, 2, ne_a)) != FG_OK;
      snprintf(name, sizeof name, "blk.%u.%s.weight.lora_b", il, fg_lora_targets[k].gguf);
      if (st == FG_OK) add_failed = (st = fg_gguf_writer_add_tensor(w, name, p->type, 2, ne_b)) != FG_OK;
    }
  }
  if (st == FG_OK || add_failed) st = fg_gguf_writer_begin(w, f, err); /* also reports a failed add */
  const double s = p->alpha != 0.0f ? (double)p->alpha / p->rank : 1.0;
  for (uint32_t il = 0; il < m->hp.n_layer && st == FG_OK; il++) {
    for (uint32_t k = 0; k < FG_LORA_N_TARGETS && st == FG_OK; k++) {
      if (!(mask & (1u << k))) continue;
      const fg_layer *L = &m->layers[il];
      const fg_mat *W = (const fg_mat *[]){&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down}[k];
      const double sd_a = 1.0 / sqrt((double)W->cols);
      const double sd_b = (double)p->magnitude * mat_rms(W, row) * sqrt((double)W->cols / p->rank) / fabs(s);
      for (int half = 0; half < 2 && st == FG_OK; half++) {
        snprintf(name, sizeof name, "blk.%u.%s.weight.lora_%c", il, fg_lora_targets[k].gguf, half ? 'b' : 'a');
        fg_gen_rng rng;
        fg_gen_rng_seed(&rng, seed, name);
        const uint32_t cols = half ? p->rank : W->cols, rows = half ? W->rows : p->rank;
        const double sd = half ? sd_b : sd_a;
        uint64_t rb;
        fg_type_row_bytes(p->type, cols, &rb);
        for (uint32_t r = 0; r < rows && st == FG_OK; r++) {
          for (uint32_t j = 0; j < cols; j++) row[j] = (float)(fg_gen_normal(&rng) * sd);
          fg_quantize_row(p->type, row, q, cols);
          st = fg_gguf_writer_tensor_part(w, f, q, (size_t)rb, err);
        }
      }
    }
  }
  if (st == FG_OK) st = fg_gguf_writer_end(w, f, err);
  fg_gguf_writer_free(w);
  fg_free(row);
  fg_free(q);
  return st;
}

fg_status fg_gen_lora(const char *base_path, const fg_gen_lora_params *params, const char *out_path, fg_error *err) {
  fg_err_clear(err);
  fg_gen_lora_params def;
  if (!params) {
    fg_gen_lora_params_init(&def);
    params = &def;
  }
  if (!base_path || !out_path || !*out_path) return fg_err(err, FG_ERR_INVALID_ARG, "gen-lora: no base or output path");
  if (params->rank == 0) return fg_err(err, FG_ERR_INVALID_ARG, "gen-lora: rank 0");
  if (!isfinite(params->alpha)) return fg_err(err, FG_ERR_INVALID_ARG, "gen-lora: alpha must be finite");
  if (!(params->magnitude > 0.0f) || !isfinite(params->magnitude))
    return fg_err(err, FG_ERR_INVALID_ARG, "gen-lora: magnitude must be > 0 and finite");
  const uint32_t t = params->type;
  if (t != FG_TYPE_F32 && t != FG_TYPE_F16 && t != FG_TYPE_BF16 && t != FG_TYPE_Q8_0)
    return fg_err(err, FG_ERR_UNSUPPORTED, "gen-lora: type %s is not f32, f16, bf16 or q8_0", fg_type_name(t));
  if (params->flags & ~FG_GEN_LORA_VOCAB_OVERRIDE) return fg_err(err, FG_ERR_INVALID_ARG, "gen-lora: unknown flags");
  uint32_t mask;
  fg_status st = parse_targets(params->targets, &mask, err);
  if (st != FG_OK) return st;
  fg_model *m = NULL;
  fg_model_params mp;
  fg_model_params_init(&mp);
  mp.flags = FG_MODEL_NO_REPACK; /* the file's layout is read */
  if ((st = fg_model_load(base_path, &mp, &m, err)) != FG_OK) return st;
  const size_t n = strlen(out_path) + 32;
  char *tmp = fg_malloc(n);
  FILE *f = NULL;
  if (!tmp) {
    st = fg_err(err, FG_ERR_NOMEM, "gen-lora: out of memory");
  } else {
    snprintf(tmp, n, "%s.tmp.%ld", out_path, (long)getpid());
    errno = 0;
    if (!(f = fopen(tmp, "wb"))) st = fg_err(err, FG_ERR_IO, "gen-lora: cannot create %s: %s", tmp, strerror(errno));
  }
  if (st == FG_OK) {
    st = write_adapter(m, params, mask, f, err);
    errno = 0;
    const int rc = fclose(f);
    if (st == FG_OK && rc != 0) st = fg_err(err, FG_ERR_IO, "gen-lora: cannot write %s: %s", tmp, strerror(errno));
    if (st == FG_OK && rename(tmp, out_path) != 0)
      st = fg_err(err, FG_ERR_IO, "gen-lora: cannot rename %s to %s: %s", tmp, out_path, strerror(errno));
    if (st != FG_OK) remove(tmp);
  }
  fg_free(tmp);
  fg_model_free(m);
  return st;
}
