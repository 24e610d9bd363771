/* test_gen_model.c — the synthetic model generator: metadata, tensor table, weight statistics,
 * determinism, vocabularies (synthetic and Gemma 3's tokenizer.json), progress/abort and errors.
 * Every file is parsed back with the GGUF reader; expected values come from the specification of the
 * presets, not from the generator. */
#define FG_EXPERIMENTAL
#include "fgemma.h"
#include "gguf/gguf.h"
#include "tensor/dtype.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------------
 * Expectations (from the task specification)
 */
typedef struct exp_preset {
  const char *name;
  uint32_t n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx, swa, swa_pattern, n_vocab;
} exp_preset;

static const exp_preset k_tiny = {"tiny", 64, 6, 4, 1, 32, 128, 2048, 8, 6, 512};

static const struct {
  const char *name;
  uint32_t type, file_type;
} k_types[] = {
    {"f32", FG_TYPE_F32, 0}, {"f16", FG_TYPE_F16, 1}, {"bf16", FG_TYPE_BF16, 32},
    {"q8_0", FG_TYPE_Q8_0, 7}, {"q4_0", FG_TYPE_Q4_0, 2},
};

static const char *const k_fn_tokens[7] = {
    "<start_function_declaration>", "<end_function_declaration>", "<start_function_call>",
    "<end_function_call>",          "<start_function_response>",  "<end_function_response>",
    "<escape>",
};

/* ------------------------------------------------------------------------------------------------
 * Helpers
 */
typedef struct loaded {
  uint8_t *data;
  size_t size;
  fg_gguf g;
  bool ok;
} loaded;

static bool file_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

static void load(const char *path, loaded *m) {
  memset(m, 0, sizeof *m);
  m->data = (uint8_t *)fg_test_read_file(path, &m->size);
  CHECK_MSG(m->data != NULL, "cannot read %s", path);
  if (!m->data) return;
  fg_error err = {0};
  const fg_status st = fg_gguf_parse(m->data, m->size, &m->g, &err);
  CHECK_MSG(st == FG_OK, "parse %s: %s", path, err.msg);
  m->ok = st == FG_OK;
}

static void unload(loaded *m) {
  fg_gguf_clear(&m->g);
  free(m->data);
  memset(m, 0, sizeof *m);
}

static const char *model_path(const char *name) {
  static char buf[8][4096];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/test_gen_%s", FG_TEST_MODELS, name);
  return buf[k];
}

static fg_status gen(const char *path, const char *preset, uint32_t type, uint32_t head, uint64_t seed,
                     const char *vocab, fg_error *err) {
  fg_gen_params p;
  fg_gen_params_init(&p);
  p.preset = preset;
  p.type = type;
  p.head_type = head;
  p.seed = seed;
  p.vocab_json = vocab;
  return fg_gen_model(&p, path, err);
}

static bool str_is(fg_gguf_str s, const char *c) { return fg_gguf_str_eq(s, c); }

/* Dequantized copy of a tensor's rows (ne[0] * ne[1] floats, malloc'd). */
static float *dequant(const fg_gguf_tensor *t) {
  const size_t n0 = (size_t)t->ne[0], n1 = (size_t)t->ne[1];
  float *out = malloc(n0 * n1 * sizeof *out);
  uint64_t rb = 0;
  if (!out || !fg_type_row_bytes(t->type, n0, &rb)) {
    free(out);
    return NULL;
  }
  for (size_t r = 0; r < n1; r++) fg_dequantize_row(t->type, t->data + r * rb, out + r * n0, n0);
  return out;
}

static double std_of(const float *x, size_t n, double *mean_out) {
  double s = 0, s2 = 0;
  for (size_t i = 0; i < n; i++) {
    s += x[i];
    s2 += (double)x[i] * x[i];
  }
  const double mean = s / (double)n;
  if (mean_out) *mean_out = mean;
  return sqrt(fmax(0.0, s2 / (double)n - mean * mean));
}

/* Test-side normal variates (any generator will do here). */
static uint64_t t_rng = 0x1234567ull;
static double t_uniform(void) {
  t_rng = t_rng * 6364136223846793005ull + 1442695040888963407ull;
  return ((double)(t_rng >> 11) + 0.5) * 0x1.0p-53;
}
static double t_normal(void) { return sqrt(-2.0 * log(t_uniform())) * cos(6.283185307179586 * t_uniform()); }

static int cmp_str(const void *a, const void *b) {
  const fg_gguf_str *x = a, *y = b;
  const size_t n = x->len < y->len ? x->len : y->len;
  const int c = memcmp(x->ptr, y->ptr, n);
  return c ? c : (x->len < y->len ? -1 : x->len > y->len);
}

/* Sorted piece index for lookups: pieces sorted, with their ids. */
typedef struct piece_index {
  fg_gguf_str *sorted; /* [n] */
  int32_t *ids;        /* [n] id of sorted[i] */
  size_t n;
} piece_index;

static const fg_gguf_str *g_sort_base;
static int cmp_id(const void *a, const void *b) {
  return cmp_str(&g_sort_base[*(const int32_t *)a], &g_sort_base[*(const int32_t *)b]);
}

static void index_build(piece_index *ix, const fg_gguf_str *toks, size_t n) {
  ix->n = n;
  ix->ids = malloc(n * sizeof *ix->ids);
  ix->sorted = malloc(n * sizeof *ix->sorted);
  for (size_t i = 0; i < n; i++) ix->ids[i] = (int32_t)i;
  g_sort_base = toks;
  qsort(ix->ids, n, sizeof *ix->ids, cmp_id);
  for (size_t i = 0; i < n; i++) ix->sorted[i] = toks[ix->ids[i]];
}

static int32_t index_find(const piece_index *ix, const char *s, size_t len) {
  const fg_gguf_str key = {s, len};
  size_t lo = 0, hi = ix->n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const int c = cmp_str(&ix->sorted[mid], &key);
    if (c == 0) return ix->ids[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

static void index_free(piece_index *ix) {
  free(ix->sorted);
  free(ix->ids);
}

/* ------------------------------------------------------------------------------------------------
 * Checks on one parsed file
 */
static void check_u32(const fg_gguf *g, const char *key, uint32_t want) {
  uint32_t v = 0;
  fg_error err = {0};
  const fg_status st = fg_gguf_get_u32(g, key, &v, &err);
  CHECK_MSG(st == FG_OK && v == want, "%s = %u (want %u) %s", key, v, want, err.msg);
  const fg_gguf_kv *kv = fg_gguf_find_kv(g, key);
  CHECK_MSG(kv && kv->type == FG_GGUF_UINT32, "%s is not a u32", key);
}

static void check_f32(const fg_gguf *g, const char *key, float want) {
  float v = 0;
  fg_error err = {0};
  const fg_status st = fg_gguf_get_f32(g, key, &v, &err);
  CHECK_MSG(st == FG_OK && v == want, "%s = %g (want %g) %s", key, v, want, err.msg);
  const fg_gguf_kv *kv = fg_gguf_find_kv(g, key);
  CHECK_MSG(kv && kv->type == FG_GGUF_FLOAT32, "%s is not an f32", key);
}

static void check_str(const fg_gguf *g, const char *key, const char *want) {
  fg_gguf_str v = {0};
  fg_error err = {0};
  const fg_status st = fg_gguf_get_str(g, key, &v, &err);
  CHECK_MSG(st == FG_OK && str_is(v, want), "%s = \"%.*s\" (want \"%s\")", key, (int)v.len, v.ptr ? v.ptr : "",
            want);
}

static void check_bool(const fg_gguf *g, const char *key, bool want) {
  bool v = !want;
  fg_error err = {0};
  const fg_status st = fg_gguf_get_bool(g, key, &v, &err);
  CHECK_MSG(st == FG_OK && v == want, "%s = %d (want %d)", key, (int)v, (int)want);
}

static void check_tensor(const fg_gguf *g, const char *name, uint32_t type, uint32_t n_dims, uint64_t ne0,
                         uint64_t ne1) {
  const fg_gguf_tensor *t = fg_gguf_find_tensor(g, name);
  CHECK_MSG(t != NULL, "tensor %s missing", name);
  if (!t) return;
  CHECK_MSG(t->type == type, "%s type %u, want %u", name, t->type, type);
  CHECK_MSG(t->n_dims == n_dims, "%s n_dims %u, want %u", name, t->n_dims, n_dims);
  CHECK_MSG(t->ne[0] == ne0 && t->ne[1] == ne1, "%s shape [%llu, %llu], want [%llu, %llu]", name,
            (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], (unsigned long long)ne0,
            (unsigned long long)ne1);
  uint64_t rb = 0;
  CHECK(fg_type_row_bytes(type, ne0, &rb) && t->nbytes == rb * ne1);
  CHECK_MSG(t->offset % 32 == 0, "%s offset %llu not 32-aligned", name, (unsigned long long)t->offset);
}

/* The output-norm x head design: final RMSNorm output y = w * xhat with RMS(xhat) = 1, logit_j = y . e_j.
 * For a random direction xhat, Var(logit_j) = sum_i w_i^2 e_ji^2; its RMS over rows must be ~8. */
static void check_logit_design(const fg_gguf *g, bool monte_carlo) {
  const fg_gguf_tensor *on = fg_gguf_find_tensor(g, "output_norm.weight");
  const fg_gguf_tensor *head = fg_gguf_find_tensor(g, "output.weight");
  if (!head) head = fg_gguf_find_tensor(g, "token_embd.weight");
  CHECK(on && head && on->type == FG_TYPE_F32);
  if (!on || !head) return;
  const size_t n = (size_t)head->ne[0], rows = (size_t)head->ne[1];
  const float *w = (const float *)on->data;
  double wmin = 1e30, wmax = -1e30;
  for (size_t i = 0; i < n; i++) {
    wmin = fmin(wmin, w[i]);
    wmax = fmax(wmax, w[i]);
  }
  CHECK_MSG(wmax / wmin < 1.25, "output_norm is not near-constant: %g .. %g", wmin, wmax);
  float *e = dequant(head);
  CHECK(e != NULL);
  if (!e) return;
  double acc = 0;
  for (size_t j = 0; j < rows; j++)
    for (size_t i = 0; i < n; i++) acc += (double)w[i] * w[i] * e[j * n + i] * e[j * n + i];
  const double logit_std = sqrt(acc / (double)rows);
  CHECK_MSG(fabs(logit_std - 8.0) < 0.8, "predicted logit std %.3f, want ~8", logit_std);

  /* The scaled input row (row * sqrt(n_embd)) has an RMS of order 1 (0.2 .. 1), the same for every
   * token: rows are normalised, so no token is a hub (random rows of 64 normals would vary by ~9%). */
  const fg_gguf_tensor *te = fg_gguf_find_tensor(g, "token_embd.weight");
  float *emb = te == head ? e : dequant(te);
  if (emb) {
    const size_t nr = (size_t)te->ne[1];
    double s1 = 0, s2 = 0;
    for (size_t j = 0; j < nr; j++) {
      double ss = 0;
      for (size_t i = 0; i < n; i++) ss += (double)emb[j * n + i] * emb[j * n + i];
      const double rms = sqrt(ss / (double)n) * sqrt((double)n);
      s1 += rms;
      s2 += rms * rms;
    }
    const double mean = s1 / (double)nr, cv = sqrt(fmax(0.0, s2 / (double)nr - mean * mean)) / mean;
    CHECK_MSG(mean > 0.2 && mean < 1.05, "embedding row RMS * sqrt(n_embd) = %.3f", mean);
    CHECK_MSG(cv < 0.03, "embedding row norms vary by %.3f", cv);
    if (emb != e) free(emb);
  }

  if (monte_carlo) {
    /* random unit-RMS directions: measured logit std and the top-1 margin over the runner-up */
    const int trials = 24;
    double sum_std = 0, sum_margin = 0;
    float *y = malloc(n * sizeof *y);
    for (int t = 0; t < trials; t++) {
      double ss = 0;
      for (size_t i = 0; i < n; i++) {
        y[i] = (float)t_normal();
        ss += (double)y[i] * y[i];
      }
      const double inv = 1.0 / sqrt(ss / (double)n);
      for (size_t i = 0; i < n; i++) y[i] = (float)(y[i] * inv * w[i]);
      double s1 = 0, s2 = 0, top1 = -1e30, top2 = -1e30;
      for (size_t j = 0; j < rows; j++) {
        double l = 0;
        for (size_t i = 0; i < n; i++) l += (double)y[i] * e[j * n + i];
        s1 += l;
        s2 += l * l;
        if (l > top1) {
          top2 = top1;
          top1 = l;
        } else if (l > top2) {
          top2 = l;
        }
      }
      const double mean = s1 / (double)rows;
      sum_std += sqrt(s2 / (double)rows - mean * mean);
      sum_margin += top1 - top2;
    }
    free(y);
    const double mstd = sum_std / trials, margin = sum_margin / trials;
    printf("  logit std %.2f, mean top-1 margin %.2f over %zu tokens\n", mstd, margin, rows);
    CHECK_MSG(fabs(mstd - 8.0) < 1.0, "measured logit std %.3f", mstd);
    CHECK_MSG(margin > 0.7 && margin < 3.5, "mean top-1 margin %.3f", margin);
  }
  free(e);
}

/* Weight statistics: norms near 1 (and not constant), matrices ~ N(0, 1/fan_in). */
static void check_weights(const fg_gguf *g, const exp_preset *p) {
  static const char *const norms[] = {"attn_norm", "attn_q_norm", "attn_k_norm", "ffn_norm", "post_ffw_norm"};
  static const char *const mats[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
  char name[64];
  for (uint32_t l = 0; l < p->n_layer; l++) {
    for (size_t k = 0; k < sizeof norms / sizeof norms[0]; k++) {
      snprintf(name, sizeof name, "blk.%u.%s.weight", l, norms[k]);
      const fg_gguf_tensor *t = fg_gguf_find_tensor(g, name);
      if (!t || t->type != FG_TYPE_F32) continue; /* reported by check_tensor */
      const float *w = (const float *)t->data;
      double mean;
      const double sd = std_of(w, (size_t)t->ne[0], &mean);
      bool in_range = true;
      for (size_t i = 0; i < t->ne[0]; i++) in_range &= w[i] >= 0.9f - 1e-6f && w[i] <= 1.1f + 1e-6f;
      CHECK_MSG(in_range && fabs(mean - 1.0) < 0.05 && sd > 0.01, "%s: mean %.4f sd %.4f in range %d", name, mean,
                sd, (int)in_range);
    }
    /* post_attention_norm damps the near-uniform attention average (see gen_model.c): near-constant
     * (±10%) and well below 1 */
    {
      snprintf(name, sizeof name, "blk.%u.post_attention_norm.weight", l);
      const fg_gguf_tensor *t = fg_gguf_find_tensor(g, name);
      if (!t || t->type != FG_TYPE_F32) continue;
      const float *w = (const float *)t->data;
      double mean;
      const double sd = std_of(w, (size_t)t->ne[0], &mean);
      double lo = w[0], hi = w[0];
      for (size_t i = 0; i < t->ne[0]; i++) {
        lo = fmin(lo, w[i]);
        hi = fmax(hi, w[i]);
      }
      const bool in_range = lo > 0 && hi / lo <= 1.1 / 0.9 + 1e-6;
      CHECK_MSG(in_range && mean > 0.1 && mean < 0.6 && sd > 0.01 * mean, "%s: mean %.4f sd %.4f", name, mean, sd);
    }
    for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++) {
      snprintf(name, sizeof name, "blk.%u.%s.weight", l, mats[k]);
      const fg_gguf_tensor *t = fg_gguf_find_tensor(g, name);
      if (!t) continue;
      float *x = dequant(t);
      if (!x) continue;
      double mean;
      const double sd = std_of(x, (size_t)(t->ne[0] * t->ne[1]), &mean);
      const double want = 1.0 / sqrt((double)t->ne[0]);
      CHECK_MSG(fabs(sd / want - 1.0) < 0.1 && fabs(mean) < 0.1 * want, "%s: sd %.5f (want %.5f) mean %.5f", name,
                sd, want, mean);
      free(x);
    }
  }
}

/* Attention scores: for random inputs, layer 0's scores q.k / sqrt(head_dim) (after the per-head
 * RMSNorm with attn_q_norm / attn_k_norm) have a standard deviation of about 1: not sharp, so that the
 * model is not chaotic (small numerical differences must stay small; see gen_model.c). */
static void check_attention_sharpness(const fg_gguf *g, const exp_preset *p) {
  const fg_gguf_tensor *an = fg_gguf_find_tensor(g, "blk.0.attn_norm.weight");
  const fg_gguf_tensor *wq = fg_gguf_find_tensor(g, "blk.0.attn_q.weight");
  const fg_gguf_tensor *wk = fg_gguf_find_tensor(g, "blk.0.attn_k.weight");
  const fg_gguf_tensor *qn = fg_gguf_find_tensor(g, "blk.0.attn_q_norm.weight");
  const fg_gguf_tensor *kn = fg_gguf_find_tensor(g, "blk.0.attn_k_norm.weight");
  CHECK(an && wq && wk && qn && kn);
  if (!an || !wq || !wk || !qn || !kn) return;
  const size_t E = p->n_embd, hd = p->head_dim;
  float *q = dequant(wq), *k = dequant(wk);
  float *x = malloc(E * sizeof *x), *v[2];
  v[0] = malloc(hd * sizeof *v[0]);
  v[1] = malloc(hd * sizeof *v[1]);
  const float *anw = (const float *)an->data;
  const float *nw[2] = {(const float *)qn->data, (const float *)kn->data};
  const float *W[2] = {q, k};
  const int trials = 400;
  double s2 = 0;
  for (int t = 0; t < trials; t++) {
    for (int which = 0; which < 2; which++) {
      double ss = 0;
      for (size_t i = 0; i < E; i++) {
        x[i] = (float)t_normal();
        ss += (double)x[i] * x[i];
      }
      const double inv = 1.0 / sqrt(ss / (double)E);
      for (size_t i = 0; i < E; i++) x[i] = (float)(x[i] * inv * anw[i]);
      double hs = 0;
      for (size_t h = 0; h < hd; h++) { /* head 0 */
        double acc = 0;
        for (size_t i = 0; i < E; i++) acc += (double)W[which][h * E + i] * x[i];
        v[which][h] = (float)acc;
        hs += acc * acc;
      }
      const double hinv = 1.0 / sqrt(hs / (double)hd + 1e-6);
      for (size_t h = 0; h < hd; h++) v[which][h] = (float)(v[which][h] * hinv * nw[which][h]);
    }
    double sc = 0;
    for (size_t h = 0; h < hd; h++) sc += (double)v[0][h] * v[1][h];
    sc /= sqrt((double)hd);
    s2 += sc * sc;
  }
  const double sd = sqrt(s2 / trials);
  CHECK_MSG(sd > 0.8 && sd < 1.25, "attention score std %.2f, want ~1", sd);
  free(q);
  free(k);
  free(x);
  free(v[0]);
  free(v[1]);
}

/* Vocabulary arrays: lengths, special ids, types, uniqueness. Returns the token views (malloc'd). */
static fg_gguf_str *check_vocab_common(const fg_gguf *g, uint32_t n_vocab, const float **scores_out,
                                       const int32_t **types_out) {
  const fg_gguf_kv *kt = NULL, *ks = NULL, *ky = NULL;
  fg_error err = {0};
  CHECK_OK(fg_gguf_get_arr(g, "tokenizer.ggml.tokens", FG_GGUF_STRING, &kt, &err));
  CHECK_OK(fg_gguf_get_arr(g, "tokenizer.ggml.scores", FG_GGUF_FLOAT32, &ks, &err));
  CHECK_OK(fg_gguf_get_arr(g, "tokenizer.ggml.token_type", FG_GGUF_INT32, &ky, &err));
  if (!kt || !ks || !ky) return NULL;
  CHECK_EQ_INT(kt->arr_n, n_vocab);
  CHECK_EQ_INT(ks->arr_n, n_vocab);
  CHECK_EQ_INT(ky->arr_n, n_vocab);
  if (kt->arr_n != n_vocab || ks->arr_n != n_vocab || ky->arr_n != n_vocab) return NULL;
  fg_gguf_str *toks = NULL;
  CHECK_OK(fg_gguf_str_array(kt, &toks, &err));
  if (!toks) return NULL;
  /* arrays in the file may be unaligned: copy them out */
  float *scores = malloc(n_vocab * sizeof *scores);
  int32_t *types = malloc(n_vocab * sizeof *types);
  memcpy(scores, ks->arr_data, n_vocab * sizeof *scores);
  memcpy(types, ky->arr_data, n_vocab * sizeof *types);

  static const struct { uint32_t id; const char *piece; int32_t type; } fixed[] = {
      {0, "<pad>", 3}, {1, "<eos>", 3}, {2, "<bos>", 3}, {3, "<unk>", 2},
      {105, "<start_of_turn>", 3}, {106, "<end_of_turn>", 3},
  };
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
    CHECK_MSG(str_is(toks[fixed[i].id], fixed[i].piece) && types[fixed[i].id] == fixed[i].type,
              "token %u = \"%.*s\" type %d, want \"%s\" type %d", fixed[i].id, (int)toks[fixed[i].id].len,
              toks[fixed[i].id].ptr, types[fixed[i].id], fixed[i].piece, fixed[i].type);
  }
  for (uint32_t i = 0; i < 7; i++) {
    CHECK_MSG(str_is(toks[46 + i], k_fn_tokens[i]) && types[46 + i] == 3, "token %u = \"%.*s\" type %d", 46 + i,
              (int)toks[46 + i].len, toks[46 + i].ptr, types[46 + i]);
  }
  int n_unk = 0, n_bad_type = 0, n_bad_score = 0, n_empty = 0;
  for (uint32_t i = 0; i < n_vocab; i++) {
    n_unk += types[i] == 2;
    n_bad_type += types[i] < 1 || types[i] > 6;
    /* normal pieces: <= 0; added (control/user-defined) tokens: -1000 or 0 (FunctionGemma's and the
     * synthetic vocabulary's own); unknown/byte: 0 */
    n_bad_score += !(isfinite(scores[i]) && scores[i] <= 0.0f) ||
                   ((types[i] == 2 || types[i] == 6) && scores[i] != 0.0f) ||
                   ((types[i] == 3 || types[i] == 4 || types[i] == 5) && scores[i] != 0.0f && scores[i] != -1000.0f);
    n_empty += toks[i].len == 0;
  }
  CHECK_EQ_INT(n_unk, 1);
  CHECK_EQ_INT(n_bad_type, 0);
  CHECK_EQ_INT(n_bad_score, 0);
  CHECK_EQ_INT(n_empty, 0);
  /* every piece unique (llama.cpp asserts it) */
  fg_gguf_str *sorted = malloc(n_vocab * sizeof *sorted);
  memcpy(sorted, toks, n_vocab * sizeof *sorted);
  qsort(sorted, n_vocab, sizeof *sorted, cmp_str);
  int dups = 0;
  for (uint32_t i = 1; i < n_vocab; i++) dups += cmp_str(&sorted[i - 1], &sorted[i]) == 0;
  CHECK_EQ_INT(dups, 0);
  free(sorted);
  /* 256 byte tokens, type 6 */
  piece_index ix;
  index_build(&ix, toks, n_vocab);
  int bytes_ok = 0;
  for (int b = 0; b < 256; b++) {
    char p[8];
    snprintf(p, sizeof p, "<0x%02X>", b);
    const int32_t id = index_find(&ix, p, 6);
    bytes_ok += id >= 0 && types[id] == 6;
  }
  CHECK_EQ_INT(bytes_ok, 256);
  index_free(&ix);
  *scores_out = scores;
  *types_out = types;
  return toks;
}

static void check_file(const char *path, const exp_preset *p, uint32_t type, uint32_t file_type,
                       uint32_t head_type, uint64_t seed, uint32_t n_vocab) {
  loaded m;
  load(path, &m);
  if (!m.ok) {
    unload(&m);
    return;
  }
  const fg_gguf *g = &m.g;
  CHECK_EQ_INT(g->version, 3);
  CHECK_EQ_INT(g->alignment, 32);
  check_str(g, "general.architecture", "gemma3");
  char name[128];
  snprintf(name, sizeof name, "fgemma synthetic %s %s seed %llu", p->name, fg_type_name(type),
           (unsigned long long)seed);
  check_str(g, "general.name", name);
  check_u32(g, "general.file_type", file_type);
  check_u32(g, "general.alignment", 32);
  check_u32(g, "gemma3.context_length", p->n_ctx);
  check_u32(g, "gemma3.embedding_length", p->n_embd);
  check_u32(g, "gemma3.block_count", p->n_layer);
  check_u32(g, "gemma3.feed_forward_length", p->n_ff);
  check_u32(g, "gemma3.attention.head_count", p->n_head);
  check_u32(g, "gemma3.attention.head_count_kv", p->n_head_kv);
  check_u32(g, "gemma3.attention.key_length", p->head_dim);
  check_u32(g, "gemma3.attention.value_length", p->head_dim);
  check_u32(g, "gemma3.attention.sliding_window", p->swa);
  check_u32(g, "gemma3.attention.sliding_window_pattern", p->swa_pattern);
  check_f32(g, "gemma3.attention.layer_norm_rms_epsilon", 1e-6f);
  check_f32(g, "gemma3.rope.freq_base", 1e6f);
  check_f32(g, "gemma3.rope.freq_base_swa", 1e4f);
  check_str(g, "tokenizer.ggml.model", "llama");
  check_str(g, "tokenizer.ggml.pre", "default");
  check_u32(g, "tokenizer.ggml.bos_token_id", 2);
  check_u32(g, "tokenizer.ggml.eos_token_id", 1);
  check_u32(g, "tokenizer.ggml.unknown_token_id", 3);
  check_u32(g, "tokenizer.ggml.padding_token_id", 0);
  check_bool(g, "tokenizer.ggml.add_bos_token", true);
  check_bool(g, "tokenizer.ggml.add_eos_token", false);
  check_bool(g, "tokenizer.ggml.add_space_prefix", false);

  const bool tied = head_type == FG_GEN_HEAD_TIED;
  CHECK_EQ_INT(g->n_tensors, 2 + 13 * p->n_layer + (tied ? 0 : 1));
  const uint64_t E = p->n_embd, Q = p->n_head * p->head_dim, KV = p->n_head_kv * p->head_dim, F = p->n_ff;
  check_tensor(g, "token_embd.weight", type, 2, E, n_vocab);
  check_tensor(g, "output_norm.weight", FG_TYPE_F32, 1, E, 1);
  if (tied) CHECK(fg_gguf_find_tensor(g, "output.weight") == NULL);
  else check_tensor(g, "output.weight", head_type, 2, E, n_vocab);
  CHECK(str_is(g->tensors[0].name, "token_embd.weight"));
  for (uint32_t l = 0; l < p->n_layer; l++) {
    const struct { const char *s; uint32_t nd; uint64_t a, b; } t[13] = {
        {"attn_norm", 1, E, 1},       {"attn_q", 2, E, Q},           {"attn_k", 2, E, KV},
        {"attn_v", 2, E, KV},         {"attn_output", 2, Q, E},      {"attn_q_norm", 1, p->head_dim, 1},
        {"attn_k_norm", 1, p->head_dim, 1}, {"post_attention_norm", 1, E, 1}, {"ffn_norm", 1, E, 1},
        {"ffn_gate", 2, E, F},        {"ffn_up", 2, E, F},           {"ffn_down", 2, F, E},
        {"post_ffw_norm", 1, E, 1},
    };
    for (int k = 0; k < 13; k++) {
      char tn[64];
      snprintf(tn, sizeof tn, "blk.%u.%s.weight", l, t[k].s);
      check_tensor(g, tn, t[k].nd == 1 ? FG_TYPE_F32 : type, t[k].nd, t[k].a, t[k].b);
    }
  }
  check_weights(g, p);
  check_attention_sharpness(g, p);
  check_logit_design(g, false);

  const float *scores = NULL;
  const int32_t *types = NULL;
  fg_gguf_str *toks = check_vocab_common(g, n_vocab, &scores, &types);
  if (toks && n_vocab == p->n_vocab) {
    /* synthetic: the printable ASCII characters are single pieces (' ' as U+2581), and every
     * multi-character normal piece splits into two pieces (reachable by pairwise merging) */
    piece_index ix;
    index_build(&ix, toks, n_vocab);
    int ascii_ok = 0, unreachable = 0, multi = 0;
    for (int c = 0x20; c < 0x7F; c++) {
      const char *s = c == ' ' ? "\xE2\x96\x81" : (const char[]){(char)c, 0};
      const int32_t id = index_find(&ix, s, strlen(s));
      ascii_ok += id >= 0 && types[id] == 1;
    }
    CHECK_EQ_INT(ascii_ok, 95);
    for (uint32_t id = 0; id < n_vocab; id++) {
      if (types[id] != 1 || toks[id].len < 2) continue;
      size_t first = 1;
      while (first < toks[id].len && ((unsigned char)toks[id].ptr[first] & 0xC0) == 0x80) first++;
      if (first == toks[id].len) continue; /* one character */
      multi++;
      bool ok = false;
      for (size_t cut = first; cut < toks[id].len && !ok; cut++) {
        if (((unsigned char)toks[id].ptr[cut] & 0xC0) == 0x80) continue;
        ok = index_find(&ix, toks[id].ptr, cut) >= 0 && index_find(&ix, toks[id].ptr + cut, toks[id].len - cut) >= 0;
      }
      unreachable += !ok;
    }
    CHECK_EQ_INT(unreachable, 0);
    CHECK_MSG(multi > 0, "no multi-character pieces in the synthetic vocabulary");
    index_free(&ix);
  }
  free(toks);
  free((void *)scores);
  free((void *)types);
  unload(&m);
}

/* ------------------------------------------------------------------------------------------------
 * Tests
 */
static void test_params_init(void) {
  fg_gen_params p;
  memset(&p, 0x5A, sizeof p);
  fg_gen_params_init(&p);
  CHECK(p.preset && strcmp(p.preset, "tiny") == 0);
  CHECK_EQ_INT(p.type, FG_TYPE_F32);
  CHECK_EQ_INT(p.head_type, FG_GEN_HEAD_TIED);
  CHECK_EQ_INT(p.seed, 0);
  CHECK(p.vocab_json == NULL && p.progress == NULL && p.progress_user_data == NULL);
}

static void test_every_type(void) {
  for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++) {
    char file[64];
    snprintf(file, sizeof file, "tiny_%s.gguf", k_types[i].name);
    const char *path = model_path(file);
    fg_error err = {0};
    const fg_status st = gen(path, "tiny", k_types[i].type, FG_GEN_HEAD_TIED, 5, NULL, &err);
    CHECK_MSG(st == FG_OK, "gen tiny %s: %s", k_types[i].name, err.msg);
    if (st != FG_OK) continue;
    check_file(path, &k_tiny, k_types[i].type, k_types[i].file_type, FG_GEN_HEAD_TIED, 5, k_tiny.n_vocab);
    remove(path);
  }
}

/* An untied q8_0 head: the other tensors are those of the tied file with the same seed. */
static void test_untied_head(void) {
  const char *tied = model_path("tiny_tied.gguf"), *untied = model_path("tiny_head_q8.gguf");
  fg_error err = {0};
  CHECK_OK(gen(tied, "tiny", FG_TYPE_F32, FG_GEN_HEAD_TIED, 11, NULL, &err));
  CHECK_OK(gen(untied, "tiny", FG_TYPE_F32, FG_TYPE_Q8_0, 11, NULL, &err));
  check_file(untied, &k_tiny, FG_TYPE_F32, 0, FG_TYPE_Q8_0, 11, k_tiny.n_vocab);
  loaded a, b;
  load(tied, &a);
  load(untied, &b);
  if (a.ok && b.ok) {
    const fg_gguf_tensor *ea = fg_gguf_find_tensor(&a.g, "token_embd.weight");
    const fg_gguf_tensor *eb = fg_gguf_find_tensor(&b.g, "token_embd.weight");
    const fg_gguf_tensor *ob = fg_gguf_find_tensor(&b.g, "output.weight");
    CHECK(ea && eb && ob && ea->nbytes == eb->nbytes && memcmp(ea->data, eb->data, ea->nbytes) == 0);
    if (ea && ob) {
      /* the head is its own random matrix, not a copy of the embedding */
      float *x = dequant(ea), *y = dequant(ob);
      const size_t n = (size_t)(ea->ne[0] * ea->ne[1]);
      double dot = 0, nx = 0, ny = 0;
      for (size_t i = 0; i < n; i++) {
        dot += (double)x[i] * y[i];
        nx += (double)x[i] * x[i];
        ny += (double)y[i] * y[i];
      }
      CHECK_MSG(fabs(dot / sqrt(nx * ny)) < 0.05, "output.weight correlates with token_embd: %.3f", dot / sqrt(nx * ny));
      free(x);
      free(y);
    }
  }
  unload(&a);
  unload(&b);
  remove(tied);
  remove(untied);
}

static void test_determinism(void) {
  const char *p1 = model_path("det_a.gguf"), *p2 = model_path("det_b.gguf"), *p3 = model_path("det_c.gguf");
  fg_error err = {0};
  CHECK_OK(gen(p1, "tiny", FG_TYPE_Q8_0, FG_GEN_HEAD_TIED, 7, NULL, &err));
  CHECK_OK(gen(p2, "tiny", FG_TYPE_Q8_0, FG_GEN_HEAD_TIED, 7, NULL, &err));
  CHECK_OK(gen(p3, "tiny", FG_TYPE_Q8_0, FG_GEN_HEAD_TIED, 8, NULL, &err));
  size_t n1 = 0, n2 = 0, n3 = 0;
  uint8_t *a = (uint8_t *)fg_test_read_file(p1, &n1), *b = (uint8_t *)fg_test_read_file(p2, &n2);
  uint8_t *c = (uint8_t *)fg_test_read_file(p3, &n3);
  CHECK(a && b && c);
  if (a && b && c) {
    CHECK_MSG(n1 == n2 && memcmp(a, b, n1) == 0, "same seed gave different files");
    CHECK_MSG(n1 == n3 && memcmp(a, c, n1) != 0, "different seeds gave the same file");
    /* every weight tensor differs between the seeds */
    loaded la, lc;
    load(p1, &la);
    load(p3, &lc);
    if (la.ok && lc.ok) {
      int same = 0;
      for (size_t i = 0; i < la.g.n_tensors; i++) {
        const fg_gguf_tensor *ta = &la.g.tensors[i], *tc = &lc.g.tensors[i];
        same += ta->nbytes == tc->nbytes && memcmp(ta->data, tc->data, ta->nbytes) == 0;
      }
      CHECK_EQ_INT(same, 0);
      /* and the seed 0 default is deterministic too */
    }
    unload(&la);
    unload(&lc);
  }
  free(a);
  free(b);
  free(c);
  const char *d1 = model_path("det_d.gguf"), *d2 = model_path("det_e.gguf");
  CHECK_OK(gen(d1, "tiny", FG_TYPE_BF16, FG_GEN_HEAD_TIED, 0, NULL, &err));
  CHECK_OK(gen(d2, "tiny", FG_TYPE_BF16, FG_GEN_HEAD_TIED, 0, NULL, &err));
  a = (uint8_t *)fg_test_read_file(d1, &n1);
  b = (uint8_t *)fg_test_read_file(d2, &n2);
  CHECK(a && b && n1 == n2 && memcmp(a, b, n1) == 0);
  free(a);
  free(b);
  remove(p1);
  remove(p2);
  remove(p3);
  remove(d1);
  remove(d2);
}

typedef struct progress_log {
  uint64_t calls, last_done, total;
  bool monotonic, total_const;
  uint64_t abort_at; /* 0 = never */
} progress_log;

static bool on_progress(uint64_t done, uint64_t total, void *ud) {
  progress_log *pl = ud;
  if (pl->calls > 0) {
    pl->monotonic &= done >= pl->last_done;
    pl->total_const &= total == pl->total;
  }
  pl->calls++;
  pl->last_done = done;
  pl->total = total;
  return !(pl->abort_at && pl->calls >= pl->abort_at);
}

static void test_progress_and_abort(void) {
  const char *path = model_path("progress.gguf");
  fg_gen_params p;
  fg_gen_params_init(&p);
  p.type = FG_TYPE_Q4_0;
  progress_log pl = {0, 0, 0, true, true, 0};
  p.progress = on_progress;
  p.progress_user_data = &pl;
  fg_error err = {0};
  CHECK_OK(fg_gen_model(&p, path, &err));
  CHECK(pl.calls >= 3 && pl.monotonic && pl.total_const);
  CHECK(pl.last_done == pl.total && pl.total > 0);
  loaded m;
  load(path, &m);
  if (m.ok) {
    uint64_t sum = 0;
    for (size_t i = 0; i < m.g.n_tensors; i++) sum += m.g.tensors[i].nbytes;
    CHECK_MSG(sum == pl.total, "progress total %llu, tensor bytes %llu", (unsigned long long)pl.total,
              (unsigned long long)sum);
  }
  unload(&m);
  remove(path);

  /* cancel part-way: FG_ERR_ABORTED, no file, no temp file left */
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  for (uint64_t at = 1; at <= 3; at++) {
    progress_log ab = {0, 0, 0, true, true, at};
    p.progress_user_data = &ab;
    err.msg[0] = 0;
    const fg_status st = fg_gen_model(&p, path, &err);
    CHECK_MSG(st == FG_ERR_ABORTED, "abort at call %llu: %s", (unsigned long long)at, fg_status_str(st));
    CHECK(err.msg[0] != 0);
    CHECK_EQ_INT(ab.calls, at);
    CHECK(!file_exists(path));
    CHECK(!file_exists(tmp));
  }
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static void test_errors(void) {
  const char *path = model_path("err.gguf");
  fg_error err;
  struct {
    const char *preset;
    uint32_t type, head;
    const char *vocab;
    fg_status want;
  } cases[] = {
      {"huge", FG_TYPE_F32, FG_GEN_HEAD_TIED, NULL, FG_ERR_INVALID_ARG},
      {"tiny", 16, FG_GEN_HEAD_TIED, NULL, FG_ERR_UNSUPPORTED}, /* IQ2_XXS: no quantizer */
      {"tiny", FG_TYPE_F32, 12345, NULL, FG_ERR_UNSUPPORTED},
      {"tiny", FG_TYPE_F32, FG_GEN_HEAD_TIED, "/nonexistent/tokenizer.json", FG_ERR_IO},
      {"tiny", FG_TYPE_F32, FG_GEN_HEAD_TIED, model_path("bad1.json"), FG_ERR_FORMAT},
      {"tiny", FG_TYPE_F32, FG_GEN_HEAD_TIED, model_path("bad2.json"), FG_ERR_FORMAT},
      {"tiny", FG_TYPE_F32, FG_GEN_HEAD_TIED, model_path("bad3.json"), FG_ERR_FORMAT},
      {"tiny", FG_TYPE_F32, FG_GEN_HEAD_TIED, model_path("bad4.json"), FG_ERR_FORMAT},
  };
  write_text(cases[4].vocab, "{\"model\": {\"vocab\": {\"a\": 0,");                         /* truncated */
  write_text(cases[5].vocab, "{\"model\": {\"merges\": []}}");                              /* no vocab */
  write_text(cases[6].vocab, "{\"model\": {\"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}}"); /* too few, dup id */
  {
    /* 60 pieces, one id out of range */
    char buf[4096];
    size_t n = (size_t)snprintf(buf, sizeof buf, "{\"model\": {\"merges\": [], \"vocab\": {");
    for (int i = 0; i < 60; i++) n += (size_t)snprintf(buf + n, sizeof buf - n, "\"p%d\": %d,", i, i == 7 ? 99 : i);
    snprintf(buf + n - 1, sizeof buf - n + 1, "}}}");
    write_text(cases[7].vocab, buf);
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memset(&err, 0, sizeof err);
    const fg_status st = gen(path, cases[i].preset, cases[i].type, cases[i].head, 1, cases[i].vocab, &err);
    CHECK_MSG(st == cases[i].want, "case %zu: %s (want %s): %s", i, fg_status_str(st), fg_status_str(cases[i].want),
              err.msg);
    CHECK_MSG(err.code == st && err.msg[0] != 0, "case %zu: no message", i);
    CHECK(!file_exists(path));
  }
  CHECK_EQ_INT(fg_gen_model(NULL, NULL, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(gen("/nonexistent-dir/x.gguf", "tiny", FG_TYPE_F32, FG_GEN_HEAD_TIED, 1, NULL, NULL), FG_ERR_IO);
  for (int i = 4; i < 8; i++) remove(cases[i].vocab);

  /* allocation failures anywhere: an error, nothing leaked (ASan), no file */
  int failures = 0, k;
  for (k = 1; k < 400; k++) {
    fg_alloc_fail_after((uint64_t)k);
    const fg_status st = gen(path, "tiny", FG_TYPE_Q8_0, FG_TYPE_Q4_0, 1, NULL, &err);
    fg_alloc_fail_after(0);
    if (st == FG_OK) break;
    failures += st != FG_ERR_NOMEM && st != FG_ERR_INVALID_ARG;
    CHECK(!file_exists(path));
  }
  CHECK_MSG(k > 1 && k < 400, "generation never succeeded under allocation failure (k = %d)", k);
  CHECK_MSG(failures == 0, "%d allocation failures reported another status", failures);
  remove(path);
}

/* The real Gemma 3 vocabulary (tiny shape, q8_0 to keep the file small). */
static void test_real_vocab(void) {
  const char *json_path = fg_test_tokenizer_json();
  if (!file_exists(json_path)) {
    CHECK_MSG(0, "%s is missing: run scripts/setup.sh to install the test oracles", json_path);
    return;
  }
  const char *path = model_path("tiny_vocab_q8.gguf");
  fg_error err = {0};
  const double t0 = fg_time_s();
  fg_status st = gen(path, "tiny", FG_TYPE_Q8_0, FG_GEN_HEAD_TIED, 3, json_path, &err);
  CHECK_MSG(st == FG_OK, "gen with vocab: %s", err.msg);
  printf("  tiny q8_0 with the real vocabulary: %.2f s\n", fg_time_s() - t0);
  if (st != FG_OK) return;

  /* the test's own reading of the json */
  size_t jn = 0;
  char *jtext = fg_test_read_file(json_path, &jn);
  cJSON *root = jtext ? cJSON_ParseWithLength(jtext, jn) : NULL;
  free(jtext);
  CHECK(root != NULL);
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
  const uint32_t n_vocab = (uint32_t)cJSON_GetArraySize(vocab);
  CHECK_EQ_INT(n_vocab, 262144);

  exp_preset p = k_tiny;
  p.n_vocab = n_vocab;
  check_file(path, &p, FG_TYPE_Q8_0, 7, FG_GEN_HEAD_TIED, 3, n_vocab);

  loaded m;
  load(path, &m);
  const float *scores = NULL;
  const int32_t *types = NULL;
  fg_gguf_str *toks = m.ok ? check_vocab_common(&m.g, n_vocab, &scores, &types) : NULL;
  if (toks && root) {
    check_logit_design(&m.g, true);
    /* pieces by id equal the json (except 46..52, renamed) */
    int wrong_piece = 0;
    for (const cJSON *e = vocab->child; e; e = e->next) {
      const int id = e->valueint;
      if (id >= 46 && id <= 52) continue;
      /* user-defined added pieces are written with real spaces for "▁", as llama.cpp's converter does */
      char want_piece[1024];
      size_t w = 0;
      const bool user = (uint32_t)id < n_vocab && types[id] == 4;
      for (const char *c = e->string; *c && w + 1 < sizeof want_piece;) {
        if (user && strncmp(c, "\xe2\x96\x81", 3) == 0) want_piece[w++] = ' ', c += 3;
        else want_piece[w++] = *c++;
      }
      want_piece[w] = '\0';
      wrong_piece += id < 0 || (uint32_t)id >= n_vocab || !str_is(toks[id], want_piece);
    }
    CHECK_EQ_INT(wrong_piece, 0);
    /* types from added_tokens */
    int wrong_type = 0, n_control_expected = 7, n_user_expected = 0;
    for (const cJSON *a = added->child; a; a = a->next) {
      const int id = cJSON_GetObjectItemCaseSensitive(a, "id")->valueint;
      if ((uint32_t)id >= n_vocab || (id >= 46 && id <= 52) || id == 3) continue;
      const char *txt = cJSON_GetObjectItemCaseSensitive(a, "content")->valuestring;
      const size_t tl = strlen(txt);
      const bool looks_special = strcmp(txt, "<pad>") == 0 || strcmp(txt, "<mask>") == 0 ||
                                 strcmp(txt, "<2mass>") == 0 || strcmp(txt, "[@BOS@]") == 0 ||
                                 (tl >= 4 && strncmp(txt, "<|", 2) == 0 && strcmp(txt + tl - 2, "|>") == 0) ||
                                 (tl >= 8 && strncmp(txt, "<\xef\xbd\x9c", 4) == 0 && strcmp(txt + tl - 4, "\xef\xbd\x9c>") == 0) ||
                                 (strncmp(txt, "<unused", 7) == 0 && txt[tl - 1] == '>');
      const int want = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "special")) || looks_special ? 3 : 4;
      wrong_type += types[id] != want;
      n_control_expected += want == 3;
      n_user_expected += want == 4;
    }
    CHECK_EQ_INT(wrong_type, 0);
    int n_control = 0, n_user = 0, n_byte = 0;
    for (uint32_t i = 0; i < n_vocab; i++) {
      n_control += types[i] == 3;
      n_user += types[i] == 4;
      n_byte += types[i] == 6;
    }
    CHECK_EQ_INT(n_control, n_control_expected);
    CHECK_EQ_INT(n_user, n_user_expected);
    CHECK_EQ_INT(n_byte, 256);
    printf("  real vocab: %d control, %d user-defined, %d byte tokens\n", n_control, n_user, n_byte);

    /* scores: a normal piece gets -(first merge rank that makes it), 0 when no merge makes it */
    piece_index ix;
    index_build(&ix, toks, n_vocab);
    int32_t *first_rank = malloc(n_vocab * sizeof *first_rank); /* [n_vocab] -1 = never made */
    for (uint32_t k = 0; k < n_vocab; k++) first_rank[k] = -1;
    int32_t r = 0;
    char cat[2048];
    for (const cJSON *mm = merges->child; mm; mm = mm->next, r++) {
      const int len = snprintf(cat, sizeof cat, "%s%s", mm->child->valuestring, mm->child->next->valuestring);
      const int32_t id = index_find(&ix, cat, (size_t)len);
      if (id >= 0 && first_rank[id] < 0) first_rank[id] = r;
    }
    int bad = 0, merged = 0;
    for (uint32_t k = 0; k < n_vocab; k++) {
      const bool fn_token = k >= 46 && k <= 52;
      const float want = (types[k] == 3 || types[k] == 4) && !fn_token ? -1000.0f
                         : types[k] == 1 && first_rank[k] >= 0   ? -(float)first_rank[k]
                                                                 : 0.0f;
      bad += scores[k] != want;
      merged += types[k] == 1 && first_rank[k] >= 0;
    }
    CHECK_MSG(bad == 0, "%d scores differ from -(first merge rank)", bad);
    CHECK_MSG(merged > 200000, "only %d pieces are made by merges", merged);
    free(first_rank);
    /* single characters are never produced by a merge: score 0 */
    int single_bad = 0;
    for (uint32_t id = 0; id < n_vocab; id++) {
      if (types[id] != 1 || toks[id].len == 0) continue;
      size_t k = 1;
      while (k < toks[id].len && ((unsigned char)toks[id].ptr[k] & 0xC0) == 0x80) k++;
      if (k == toks[id].len) single_bad += scores[id] != 0.0f;
    }
    CHECK_EQ_INT(single_bad, 0);
    const int32_t the = index_find(&ix, "\xE2\x96\x81the", 6);
    CHECK(the >= 0 && types[the] == 1 && scores[the] < 0.0f);
    index_free(&ix);
  }
  free(toks);
  free((void *)scores);
  free((void *)types);
  unload(&m);
  cJSON_Delete(root);
  remove(path);
}

static void test_ensure_model(void) {
  const char *file = "test_gen_ensure_q4_0.gguf";
  char path[4096];
  snprintf(path, sizeof path, "%s", fg_test_model_path(file));
  remove(path);
  CHECK_EQ_INT(fg_test_ensure_model(file, "tiny", "q4_0", 9), 0);
  struct stat a, b;
  CHECK(stat(path, &a) == 0);
  CHECK_EQ_INT(fg_test_ensure_model(file, "tiny", "q4_0", 9), 0); /* present: kept as is */
  CHECK(stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_mtime == b.st_mtime);
  loaded m;
  load(path, &m);
  if (m.ok) check_str(&m.g, "general.name", "fgemma synthetic tiny q4_0 seed 9");
  unload(&m);
  remove(path);
  CHECK(fg_test_ensure_model("test_gen_ensure_bad.gguf", "tiny", "q5_k", 1) != 0);
  CHECK(fg_test_ensure_model("test_gen_ensure_bad.gguf", "nope", "f32", 1) != 0);
}

int main(void) {
  const double t0 = fg_time_s();
  test_params_init();
  test_every_type();
  test_untied_head();
  test_determinism();
  test_progress_and_abort();
  test_errors();
  test_ensure_model();
  test_real_vocab();
  printf("  total %.2f s\n", fg_time_s() - t0);
  return fg_test_finish("test_gen_model");
}
