/* test_lora.c — LoRA adapters (src/model/lora.c, docs/LORA.md):
 *  1. run time over every base type (tiny F32/Q8_0/Q4_0/BF16, small Q4_K/Q5_0/Q6_K): the session path
 *     equals the reference forward with the adapter, and the adapter changes the logits far beyond that;
 *  2. the reference with the adapter equals a brute-force merged model: the base dequantized, plus
 *     s·B·A computed in double, written by this test as an all-F32 GGUF;
 *  3. adapter tensor types F16, BF16, Q8_0; scale 0 gives the base bit for bit; two adapters equal
 *     the model with both deltas; negative scales;
 *  4. merge modes (f32, bf16, q8_0) against run time; info fields;
 *  5. fingerprints and persisted snapshots (another adapter, scale, order, merge mode: FG_ERR_MISMATCH);
 *     the session contract with an adapter (restore, fork, chunking);
 *  6. every refusal, with the file and the tensor named; allocation failures leave nothing behind;
 *  7. the vocabulary override on a Gemma 3 vocabulary (ids 46..52 <unused40>..<unused46>): renamed
 *     control tokens for tokenization, detokenization, the rendered prompt and constrained decoding;
 *     its refusals.
 * Tolerances are stated where they are used. */
#define FG_EXPERIMENTAL
#include "fgemma.h"
#include "testutil.h"

#include "gguf/gguf.h"
#include "kernels/ops.h"
#include "model/lora.h"
#include "model/model.h"
#include "tensor/dtype.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_PROMPT 12

static char g_dir[4096]; /* prefix of this run's scratch files */

static const char *tmp_path(const char *name) {
  static char buf[8][4200];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s-%s", g_dir, name);
  return buf[k];
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng % n);
}

static void random_ids(int32_t *ids, size_t n, uint32_t n_vocab) {
  ids[0] = 2;
  for (size_t i = 1; i < n; i++) ids[i] = 4 + (int32_t)rnd(n_vocab - 4);
}

static fg_model *load(const char *path, const fg_lora *loras, size_t n, uint32_t merge, fg_error *err) {
  fg_model_params p;
  fg_model_params_init(&p);
  p.loras = loras;
  p.n_loras = n;
  p.lora_merge = merge;
  fg_model *m = NULL;
  fg_error local;
  fg_status st = fg_model_load(path, &p, &m, err ? err : &local);
  CHECK_MSG(st == FG_OK, "load %s with %zu adapters (merge %u): %s", path, n, merge, (err ? err : &local)->msg);
  return m;
}

static fg_model *load1(const char *path, const char *lora, float scale, uint32_t merge) {
  const fg_lora l = {lora, scale};
  return load(path, lora ? &l : NULL, lora ? 1 : 0, merge, NULL);
}

static void gen_lora(const char *base, const char *out, uint32_t type, uint32_t rank, uint64_t seed, uint32_t flags) {
  fg_gen_lora_params p;
  fg_gen_lora_params_init(&p);
  p.type = type;
  p.rank = rank;
  p.seed = seed;
  p.flags = flags;
  fg_error err;
  CHECK_MSG(fg_gen_lora(base, &p, out, &err) == FG_OK, "gen-lora %s: %s", out, err.msg);
}

/* Logits of the session path after every position of ids (n × n_vocab), prefilled in chunks of 5. */
static float *session_logits(const fg_model *m, const int32_t *ids, size_t n, uint32_t threads) {
  const uint32_t V = m->hp.n_vocab;
  float *out = malloc(sizeof(float) * n * V);
  fg_session_params sp;
  fg_session_params_init(&sp);
  sp.n_threads = threads;
  sp.n_batch = 5;
  sp.n_ctx = 64;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &sp, &s, NULL));
  for (size_t i = 0; s && i < n; i++) {
    CHECK_OK(fg_session_prefill(s, ids + i, 1, NULL));
    memcpy(out + i * V, fg_session_logits(s), sizeof(float) * V);
  }
  fg_session_free(s);
  return out;
}

/* The logits after prefilling ids (n <= 64) in batches of `batch` on `threads` threads. */
static float *last_logits(const fg_model *m, const int32_t *ids, size_t n, uint32_t batch, uint32_t threads) {
  const uint32_t V = m->hp.n_vocab;
  float *out = calloc(V, sizeof(float));
  fg_session_params sp;
  fg_session_params_init(&sp);
  sp.n_threads = threads;
  sp.n_batch = batch;
  sp.n_ctx = 64;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &sp, &s, NULL));
  for (size_t i = 0; s && i < n; i += batch) CHECK_OK(fg_session_prefill(s, ids + i, FG_MIN(batch, n - i), NULL));
  if (s) memcpy(out, fg_session_logits(s), sizeof(float) * V);
  fg_session_free(s);
  return out;
}

static float *reference_logits(const fg_model *m, const int32_t *ids, size_t n) {
  const uint32_t V = m->hp.n_vocab;
  float *out = malloc(sizeof(float) * n * V);
  size_t at[64];
  for (size_t i = 0; i < n; i++) at[i] = i;
  fg_error err;
  CHECK_MSG(fg_ref_forward(m, ids, NULL, n, at, n, out, &err) == FG_OK, "reference: %s", err.msg);
  return out;
}

/* max over positions of fg_test_rel_diff */
static double rel_rows(const float *a, const float *b, size_t n, uint32_t V) {
  double w = 0;
  for (size_t i = 0; i < n; i++) w = fmax(w, fg_test_rel_diff(a + i * V, b + i * V, V));
  return w;
}

// ----------------------------------------------------------------------------------------------
// The brute-force merged model: every matrix dequantized to F32, adapted ones plus Σ s·B·A in double

typedef struct adapter_file {
  uint8_t *bytes;
  fg_gguf g;
  float alpha, scale;
} adapter_file;

static int open_adapter(const char *path, float scale, adapter_file *a) {
  size_t n = 0;
  a->bytes = (uint8_t *)fg_test_read_file(path, &n);
  a->scale = scale;
  fg_error err;
  if (!a->bytes || fg_gguf_parse(a->bytes, n, &a->g, &err) != FG_OK) return 1;
  a->alpha = 0.0f;
  fg_gguf_get_f32_or(&a->g, "adapter.lora.alpha", 0.0f, &a->alpha, &err);
  return 0;
}

static void close_adapter(adapter_file *a) {
  fg_gguf_clear(&a->g);
  free(a->bytes);
}

static float *dequant_all(const fg_gguf_tensor *t) {
  float *v = malloc(sizeof(float) * t->ne[0] * t->ne[1]);
  uint64_t rb;
  fg_type_row_bytes(t->type, t->ne[0], &rb);
  for (uint64_t r = 0; r < t->ne[1]; r++) fg_dequantize_row(t->type, t->data + r * rb, v + r * t->ne[0], (size_t)t->ne[0]);
  return v;
}

static int write_merged_f32(const char *base, adapter_file *ad, size_t n_ad, const char *out) {
  size_t size = 0;
  uint8_t *bytes = (uint8_t *)fg_test_read_file(base, &size);
  fg_gguf g;
  fg_error err;
  if (!bytes || fg_gguf_parse(bytes, size, &g, &err) != FG_OK) return 1;
  fg_gguf_writer *w = fg_gguf_writer_create();
  for (size_t i = 0; i < g.n_kv; i++) CHECK_OK(fg_gguf_writer_copy_kv(w, &g.kv[i]));
  for (size_t i = 0; i < g.n_tensors; i++) {
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)g.tensors[i].name.len, g.tensors[i].name.ptr);
    CHECK_OK(fg_gguf_writer_add_tensor(w, name, FG_TYPE_F32, g.tensors[i].n_dims, g.tensors[i].ne));
  }
  FILE *f = fopen(out, "wb");
  CHECK_OK(fg_gguf_writer_begin(w, f, &err));
  for (size_t i = 0; i < g.n_tensors; i++) {
    const fg_gguf_tensor *t = &g.tensors[i];
    float *v = dequant_all(t); /* (ne1, ne0) */
    char name[160];
    snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
    const size_t n_in = (size_t)t->ne[0], n_out = (size_t)t->ne[1];
    double *delta = NULL;
    for (size_t k = 0; k < n_ad; k++) {
      char na[200], nb[200];
      snprintf(na, sizeof na, "%s.lora_a", name);
      snprintf(nb, sizeof nb, "%s.lora_b", name);
      const fg_gguf_tensor *ta = fg_gguf_find_tensor(&ad[k].g, na), *tb = fg_gguf_find_tensor(&ad[k].g, nb);
      if (!ta || !tb) continue;
      const size_t rank = (size_t)ta->ne[1];
      const double s = ad[k].alpha != 0.0f ? (double)ad[k].scale * ad[k].alpha / (double)rank : ad[k].scale;
      float *A = dequant_all(ta), *B = dequant_all(tb); /* (rank, n_in), (n_out, rank) */
      if (!delta) delta = calloc(n_in * n_out, sizeof *delta);
      for (size_t r = 0; r < n_out; r++)
        for (size_t c = 0; c < n_in; c++) {
          double acc = 0;
          for (size_t j = 0; j < rank; j++) acc += (double)B[r * rank + j] * A[j * n_in + c];
          delta[r * n_in + c] += s * acc;
        }
      free(A);
      free(B);
    }
    if (delta)
      for (size_t e = 0; e < n_in * n_out; e++) v[e] = (float)((double)v[e] + delta[e]);
    CHECK_OK(fg_gguf_writer_tensor_data(w, f, v, sizeof(float) * n_in * n_out, &err));
    free(delta);
    free(v);
  }
  CHECK_OK(fg_gguf_writer_end(w, f, &err));
  fclose(f);
  fg_gguf_writer_free(w);
  fg_gguf_clear(&g);
  free(bytes);
  return 0;
}

// ----------------------------------------------------------------------------------------------
// 1 + 2. run time against the reference and against the brute-force merge, per base type

typedef struct base_case {
  const char *file; /* under FG_TEST_MODELS */
  const char *preset;
  uint32_t type;
} base_case;

/* Session path against the reference forward, both with the adapter. The adapter's products are f32 on
 * both paths (and checked to 1e-5 on their own by test_apply_unit); the base products are not: the
 * session path's kernels follow their table's spec, so the tolerance is the base model's own,
 * fg_test_logit_tol(type) (testutil.h: 1e-4 of the logit scale for the fma and ref specs, 0.08 where the
 * table rounds activations to bf16, 0.15 where it rounds them to 8-bit blocks). */
static const base_case k_bases[] = {
    {"tiny-f32.gguf", "tiny", FG_TYPE_F32},          {"tiny-q8_0.gguf", "tiny", FG_TYPE_Q8_0},
    {"tiny-q4_0.gguf", "tiny", FG_TYPE_Q4_0},        {"tiny-bf16.gguf", "tiny", FG_TYPE_BF16},
    {"lora-small-q4_k.gguf", "small", FG_TYPE_Q4_K}, {"lora-small-q5_0.gguf", "small", FG_TYPE_Q5_0},
    {"lora-small-q6_k.gguf", "small", FG_TYPE_Q6_K},
};

static int ensure_base(const base_case *b) {
  const char *names[] = {"f32", "q8_0", "q4_0", "bf16"};
  for (size_t i = 0; i < 4; i++) {
    uint32_t t;
    fg_test_type_from_name(names[i], &t);
    if (t == b->type && strcmp(b->preset, "tiny") == 0) return fg_test_ensure_model(b->file, b->preset, names[i], 1);
  }
  const char *path = fg_test_model_path(b->file);
  FILE *f = fopen(path, "rb");
  if (f) {
    fclose(f);
    return 0;
  }
  fg_gen_params p;
  fg_gen_params_init(&p);
  p.preset = b->preset;
  p.type = b->type;
  p.seed = 1;
  fg_error err;
  if (fg_gen_model(&p, path, &err) != FG_OK) {
    fprintf(stderr, "gen %s: %s\n", path, err.msg);
    return 1;
  }
  return 0;
}

/* The brute-force merged model compared with the reference forward of the adapted base: the base part
 * is the same f32 sum of the same dequantized values on both (fg_vec_dot_ref), so the difference is the
 * order of two roundings per weight, (W + sBA)·x against W·x + s·B·(A·x): relative 1e-6 measured; the
 * tolerance 1e-4 of the logit scale leaves a factor of ~50. */
#define TOL_MERGED 1e-4

static void test_base(const base_case *b) {
  const char *base = fg_test_model_path(b->file);
  char base_path[4200], ad[4200];
  snprintf(base_path, sizeof base_path, "%s", base);
  snprintf(ad, sizeof ad, "%s", tmp_path("base-adapter.gguf"));
  gen_lora(base_path, ad, FG_TYPE_F32, 8, 7, 0);
  fg_model *m0 = load1(base_path, NULL, 0, 0), *m = load1(base_path, ad, 1.0f, FG_LORA_RUNTIME);
  if (!m0 || !m) {
    fg_model_free(m0);
    fg_model_free(m);
    return;
  }
  const uint32_t V = m->hp.n_vocab;
  /* the small preset's 262,144-row head dominates the reference: fewer positions there */
  const size_t n = V > 4096 ? 6 : N_PROMPT;
  int32_t ids[N_PROMPT];
  random_ids(ids, n, V);
  float *fast = session_logits(m, ids, n, 2), *ref = reference_logits(m, ids, n);
  float *fast0 = session_logits(m0, ids, n, 2), *ref0 = reference_logits(m0, ids, n);
  const double d = rel_rows(fast, ref, n, V), d0 = rel_rows(fast0, ref0, n, V);
  const double effect = rel_rows(ref, ref0, n, V);
  const double tol = fg_test_logit_tol(b->type);
  CHECK_MSG(d <= tol, "%s: session vs reference with the adapter (%s spec): %.3g > %.3g", b->file,
            fg_test_spec_name(b->type), d, tol);
  /* the adapter must matter: well beyond the tolerance */
  CHECK_MSG(effect > 3 * tol, "%s: the adapter moves the logits by only %.3g", b->file, effect);
  int same_top = 0;
  for (size_t i = 0; i < n; i++) same_top += fg_argmax(ref + i * V, V) == fg_argmax(ref0 + i * V, V);
  CHECK_MSG(same_top < (int)n, "%s: the adapter changes no greedy id", b->file);

  /* 2. the brute-force merged F32 model (reference path) */
  adapter_file af;
  CHECK_EQ_INT(open_adapter(ad, 1.0f, &af), 0);
  const char *merged = tmp_path("merged-f32.gguf");
  CHECK_EQ_INT(write_merged_f32(base_path, &af, 1, merged), 0);
  close_adapter(&af);
  fg_model *mm = load1(merged, NULL, 0, 0);
  double dm = -1;
  if (mm) {
    float *refm = reference_logits(mm, ids, n);
    dm = rel_rows(ref, refm, n, V);
    CHECK_MSG(dm <= TOL_MERGED, "%s: reference with the adapter vs the merged F32 model: %.3g > %.3g", b->file, dm,
              TOL_MERGED);
    free(refm);
    fg_model_free(mm);
  }
  remove(merged);
  printf("%-22s session vs reference: base %.2e, adapted %.2e (tol %.2g); adapter effect %.2e; reference vs "
         "brute-force merge %.2e (tol %.2g); greedy ids changed at %d of %d positions\n",
         b->file, d0, d, tol, effect, dm, TOL_MERGED, (int)n - same_top, (int)n);
  free(fast);
  free(ref);
  free(fast0);
  free(ref0);
  fg_model_free(m);
  fg_model_free(m0);
  remove(ad);
}

/* fg_lora_apply_row (the fast path's adapter product) on its own, for every layer and input group of a
 * model with two adapters: against double sums of the same f32 A and B (relative 1e-5: a row of B·t sums
 * at most r products after A·x summed n_in; measured ~1e-7), and bit for bit the same through an ops of 1
 * or 2 threads, the C table's B product or the process table's (AVX2 or AVX-512 on x86), and with the rows in
 * another order. */
static void test_apply_unit(const char *base) {
  char a1[4200], a2[4200];
  snprintf(a1, sizeof a1, "%s", tmp_path("unit-a.gguf"));
  snprintf(a2, sizeof a2, "%s", tmp_path("unit-b.gguf"));
  gen_lora(base, a1, FG_TYPE_F32, 8, 81, 0);
  gen_lora(base, a2, FG_TYPE_BF16, 3, 82, 0);
  const fg_lora l[2] = {{a1, 0.8f}, {a2, 1.7f}};
  fg_model *m = load(base, l, 2, FG_LORA_RUNTIME, NULL);
  fg_ops *ops1 = NULL, *ops2 = NULL;
  CHECK_OK(fg_ops_create(1, &ops1, NULL));
  CHECK_OK(fg_ops_create(2, &ops2, NULL));
  if (!m || !m->lora || !m->lora->layers || !ops1 || !ops2) {
    fg_model_free(m);
    fg_ops_free(ops1);
    fg_ops_free(ops2);
    return;
  }
  enum { NB = 7 };
  const size_t max_in = 4096, max_out = 4096;
  float *x = malloc(sizeof(float) * NB * max_in), *y0 = malloc(sizeof(float) * NB * 3 * max_out);
  float *y1 = malloc(sizeof(float) * NB * 3 * max_out), *y2 = malloc(sizeof(float) * NB * 3 * max_out);
  float *y3 = malloc(sizeof(float) * NB * 3 * max_out);
  float *t = malloc(sizeof(float) * NB * m->lora->max_rank);
  double worst = 0;
  int exact = 1;
  for (uint32_t il = 0; il < m->hp.n_layer; il++) {
    const fg_lora_layer *LL = &m->lora->layers[il];
    for (uint32_t g = 0; g < FG_LORA_N_INPUTS; g++) {
      const fg_mat *A = &LL->a[g];
      if (!A->rows) continue;
      const uint32_t n_in = A->cols, k0 = fg_lora_group_first[g], nk = fg_lora_group_count[g];
      float *Y1[3], *Y2[3], *Y3[3];
      size_t ld[3];
      for (uint32_t i = 0; i < nk; i++) {
        ld[i] = LL->bt[k0 + i].rows ? LL->bt[k0 + i].cols : 1;
        Y1[i] = y1 + (size_t)i * NB * max_out;
        Y2[i] = y2 + (size_t)i * NB * max_out;
        Y3[i] = y3 + (size_t)i * NB * max_out;
      }
      for (size_t e = 0; e < (size_t)NB * n_in; e++) x[e] = (float)((int)rnd(2001) - 1000) / 500.0f;
      for (size_t e = 0; e < (size_t)NB * 3 * max_out; e++) y0[e] = (float)((int)rnd(2001) - 1000) / 100.0f;
      memcpy(y1, y0, sizeof(float) * NB * 3 * max_out);
      memcpy(y2, y0, sizeof(float) * NB * 3 * max_out);
      memcpy(y3, y0, sizeof(float) * NB * 3 * max_out);
      for (int b = 0; b < NB; b++) {
        float *Yb1[3], *Yb2[3];
        for (uint32_t i = 0; i < nk; i++) {
          Yb1[i] = Y1[i] + (size_t)b * ld[i];
          Yb2[i] = Y2[i] + (size_t)b * ld[i];
        }
        fg_lora_apply_row(ops1, fg_attn_ref(), LL, g, x + (size_t)b * n_in, Yb1, t);
        fg_lora_apply_row(ops2, fg_attn_get(), LL, g, x + (size_t)b * n_in, Yb2, t);
      }
      /* the rows in another order, through the 2-thread ops */
      for (int b = NB - 1; b >= 0; b--) {
        float *Yb[3];
        for (uint32_t i = 0; i < nk; i++) Yb[i] = Y3[i] + (size_t)b * ld[i];
        fg_lora_apply_row(ops2, fg_attn_get(), LL, g, x + (size_t)b * n_in, Yb, t);
      }
      exact &= memcmp(y1, y2, sizeof(float) * NB * 3 * max_out) == 0 && memcmp(y1, y3, sizeof(float) * NB * 3 * max_out) == 0;
      for (uint32_t i = 0; i < nk; i++) {
        const fg_mat *BT = &LL->bt[k0 + i];
        const float *Ad = A->data, *Bd = BT->data;
        for (int b = 0; b < NB && BT->rows; b++)
          for (uint32_t r = 0; r < BT->cols; r++) {
            double acc = 0;
            for (uint32_t j = 0; j < BT->rows; j++) {
              double tj = 0;
              for (uint32_t c = 0; c < n_in; c++) tj += (double)Ad[(size_t)(LL->off[k0 + i] + j) * n_in + c] * x[(size_t)b * n_in + c];
              acc += (double)Bd[(size_t)j * BT->cols + r] * tj;
            }
            const double want = y0[(size_t)i * NB * max_out + (size_t)b * ld[i] + r] + acc;
            const double got = Y1[i][(size_t)b * ld[i] + r];
            worst = fmax(worst, fabs(got - want) / (1.0 + fabs(want)));
          }
      }
    }
  }
  CHECK_MSG(worst <= 1e-5, "fg_lora_apply_row vs double sums: %.3g", worst);
  CHECK_MSG(exact, "fg_lora_apply_row depends on the ops, the table (%s, ref) or the order of the rows", fg_attn_get()->name);
  printf("fg_lora_apply_row: worst relative error vs double %.2e; ops of 1/2 threads, tables ref/%s, rows in another "
         "order: %s\n", worst, fg_attn_get()->name,
         exact ? "bit for bit" : "DIFFERENT");
  free(x);
  free(y0);
  free(y1);
  free(y2);
  free(y3);
  free(t);
  fg_ops_free(ops1);
  fg_ops_free(ops2);
  fg_model_free(m);
  remove(a1);
  remove(a2);
}

// ----------------------------------------------------------------------------------------------
// 3. adapter types, scale 0, two adapters, negative scale

static void test_adapter_types(const char *base) {
  const uint32_t types[] = {FG_TYPE_F16, FG_TYPE_BF16, FG_TYPE_Q8_0};
  for (size_t i = 0; i < 3; i++) {
    const char *ad = tmp_path("typed.gguf");
    /* Q8_0 rows of lora_b hold `rank` values: rank 32 (tiny's attn_k has 32 outputs, the most it allows) */
    gen_lora(base, ad, types[i], types[i] == FG_TYPE_Q8_0 ? 32 : 8, 11, 0);
    fg_model *m = load1(base, ad, 1.0f, FG_LORA_RUNTIME);
    if (!m) continue;
    int32_t ids[N_PROMPT];
    random_ids(ids, N_PROMPT, m->hp.n_vocab);
    adapter_file af;
    CHECK_EQ_INT(open_adapter(ad, 1.0f, &af), 0);
    const char *merged = tmp_path("typed-merged.gguf");
    write_merged_f32(base, &af, 1, merged);
    close_adapter(&af);
    fg_model *mm = load1(merged, NULL, 0, 0);
    float *ref = reference_logits(m, ids, N_PROMPT), *fast = session_logits(m, ids, N_PROMPT, 1);
    float *want = mm ? reference_logits(mm, ids, N_PROMPT) : NULL;
    const double dm = want ? rel_rows(ref, want, N_PROMPT, m->hp.n_vocab) : 1.0;
    const double df = rel_rows(fast, ref, N_PROMPT, m->hp.n_vocab);
    CHECK_MSG(dm <= TOL_MERGED, "adapter type %s: reference vs brute-force merge %.3g", fg_type_name(types[i]), dm);
    CHECK_MSG(df <= 1e-4, "adapter type %s: session vs reference %.3g", fg_type_name(types[i]), df);
    printf("adapter type %-5s: reference vs brute-force merge %.2e, session vs reference %.2e\n", fg_type_name(types[i]),
           dm, df);
    free(ref);
    free(fast);
    free(want);
    fg_model_free(mm);
    fg_model_free(m);
    remove(merged);
    remove(ad);
  }
}

static void test_scale_zero_and_sum(const char *base, double tol) {
  const char *a1 = tmp_path("sum-a.gguf"), *a2 = tmp_path("sum-b.gguf");
  char p1[4200], p2[4200];
  snprintf(p1, sizeof p1, "%s", a1);
  snprintf(p2, sizeof p2, "%s", a2);
  gen_lora(base, p1, FG_TYPE_F32, 8, 21, 0);
  {
    /* a second adapter on some targets only, without alpha */
    fg_gen_lora_params gp;
    fg_gen_lora_params_init(&gp);
    gp.rank = 4;
    gp.alpha = 0.0f;
    gp.targets = "attn_v,ffn_down,attn_output";
    gp.seed = 22;
    gp.magnitude = 0.3f;
    fg_error err;
    CHECK_MSG(fg_gen_lora(base, &gp, p2, &err) == FG_OK, "%s", err.msg);
  }
  fg_model *m0 = load1(base, NULL, 0, 0);
  if (!m0) return;
  const uint32_t V = m0->hp.n_vocab;
  int32_t ids[N_PROMPT];
  random_ids(ids, N_PROMPT, V);
  float *want0 = session_logits(m0, ids, N_PROMPT, 2), *ref0 = reference_logits(m0, ids, N_PROMPT);

  /* scale 0: the base bit for bit, on both paths and in every mode; the fingerprint still differs */
  for (uint32_t merge = 0; merge <= FG_LORA_MERGE_Q8_0; merge++) {
    fg_model *z = load1(base, p1, 0.0f, merge);
    if (!z) continue;
    float *got = session_logits(z, ids, N_PROMPT, 2), *gref = reference_logits(z, ids, N_PROMPT);
    CHECK_MSG(memcmp(got, want0, sizeof(float) * N_PROMPT * V) == 0, "scale 0, merge %u: session logits differ", merge);
    CHECK_MSG(memcmp(gref, ref0, sizeof(float) * N_PROMPT * V) == 0, "scale 0, merge %u: reference differs", merge);
    CHECK(memcmp(z->info.fingerprint, m0->info.fingerprint, 16) != 0);
    CHECK_EQ_INT(z->info.n_loras, 1);
    CHECK_EQ_INT(z->info.lora_bytes, 0); /* nothing applies: nothing kept, nothing merged */
    free(got);
    free(gref);
    fg_model_free(z);
  }

  /* two adapters: their sum, in either order (scales 0.7 and -1.3: negative scales are legal) */
  const fg_lora both[2] = {{p1, 0.7f}, {p2, -1.3f}}, swapped[2] = {{p2, -1.3f}, {p1, 0.7f}};
  fg_model *m2 = load(base, both, 2, FG_LORA_RUNTIME, NULL), *m2s = load(base, swapped, 2, FG_LORA_RUNTIME, NULL);
  adapter_file af[2];
  CHECK_EQ_INT(open_adapter(p1, 0.7f, &af[0]), 0);
  CHECK_EQ_INT(open_adapter(p2, -1.3f, &af[1]), 0);
  const char *merged = tmp_path("sum-merged.gguf");
  write_merged_f32(base, af, 2, merged);
  close_adapter(&af[0]);
  close_adapter(&af[1]);
  fg_model *mm = load1(merged, NULL, 0, 0);
  if (m2 && m2s && mm) {
    float *r2 = reference_logits(m2, ids, N_PROMPT), *r2s = reference_logits(m2s, ids, N_PROMPT);
    float *rm = reference_logits(mm, ids, N_PROMPT), *f2 = session_logits(m2, ids, N_PROMPT, 2);
    const double d = rel_rows(r2, rm, N_PROMPT, V), ds = rel_rows(r2, r2s, N_PROMPT, V);
    const double df = rel_rows(f2, r2, N_PROMPT, V);
    CHECK_MSG(d <= TOL_MERGED, "two adapters vs the merge of both deltas: %.3g", d);
    /* another order of the same sum: only rounding (the pairs' columns swap places in B) */
    CHECK_MSG(ds <= 1e-5, "two adapters, swapped: %.3g", ds);
    CHECK_MSG(df <= tol, "two adapters, session vs reference: %.3g > %.3g", df, tol);
    CHECK(memcmp(m2->info.fingerprint, m2s->info.fingerprint, 16) != 0); /* the order is part of it */
    printf("two adapters (scales 0.7, -1.3): vs brute-force merge %.2e, swapped order %.2e, session vs reference "
           "%.2e\n", d, ds, df);
    free(r2);
    free(r2s);
    free(rm);
    free(f2);
  }
  fg_model_free(mm);
  fg_model_free(m2);
  fg_model_free(m2s);
  remove(merged);
  free(want0);
  free(ref0);
  fg_model_free(m0);
  remove(p1);
  remove(p2);
}

// ----------------------------------------------------------------------------------------------
// 4. merge modes

static void test_merge_modes(const char *base, const char *label, const double *tols) {
  const char *ad = tmp_path("merge.gguf");
  gen_lora(base, ad, FG_TYPE_F32, 8, 31, 0);
  fg_model *rt = load1(base, ad, 1.0f, FG_LORA_RUNTIME);
  if (!rt) return;
  const uint32_t V = rt->hp.n_vocab;
  int32_t ids[N_PROMPT];
  random_ids(ids, N_PROMPT, V);
  float *want = session_logits(rt, ids, N_PROMPT, 2);
  /* the run-time adapter's products are the same bits however a pass is cut: passes of at most 16 rows
   * compute A · x of all rows beside the base products (forward.c), longer ones row by row in the per-row
   * phases, one row alone beside them too; 2 to 4 threads */
  {
    enum { N_CUT = 40 };
    int32_t cut[N_CUT];
    random_ids(cut, N_CUT, V);
    float *one = last_logits(rt, cut, N_CUT, 1, 3);
    static const uint32_t batches[][2] = {{40, 2}, {16, 3}, {7, 4}};
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
      float *got = last_logits(rt, cut, N_CUT, batches[i][0], batches[i][1]);
      CHECK_MSG(memcmp(got, one, sizeof(float) * V) == 0, "%s: run-time adapter, passes of %u rows on %u threads "
                "differ from one row at a time", label, batches[i][0], batches[i][1]);
      free(got);
    }
    free(one);
  }
  CHECK_EQ_INT(rt->info.n_loras, 1);
  CHECK_EQ_INT(rt->info.lora_merge, FG_LORA_RUNTIME);
  CHECK(rt->info.lora_bytes > 0 && rt->info.lora_ms >= 0);
  static const char *const names[] = {"runtime", "f32", "bf16", "q8_0"};
  for (uint32_t merge = FG_LORA_MERGE_F32; merge <= FG_LORA_MERGE_Q8_0; merge++) {
    fg_model *mm = load1(base, ad, 1.0f, merge);
    if (!mm) continue;
    CHECK_EQ_INT(mm->info.lora_merge, merge);
    CHECK(mm->info.lora_bytes > 0);
    CHECK(mm->lora && !mm->lora->layers && mm->lora->merged);
    CHECK(memcmp(mm->info.fingerprint, rt->info.fingerprint, 16) != 0);
    const uint32_t wt = merge == FG_LORA_MERGE_F32 ? FG_TYPE_F32 : merge == FG_LORA_MERGE_BF16 ? FG_TYPE_BF16 : FG_TYPE_Q8_0;
    CHECK_EQ_INT(mm->layers[0].wq.type, wt);
    float *got = session_logits(mm, ids, N_PROMPT, 2);
    const double d = rel_rows(got, want, N_PROMPT, V);
    CHECK_MSG(d <= tols[merge], "%s, merge %s vs run time: %.3g > %.3g", label, names[merge], d, tols[merge]);
    printf("%s: merge %-4s vs run time %.2e (tol %.2g), %.2f MiB in %.1f ms (run time: %.2f MiB, %.1f ms)\n", label,
           names[merge], d, tols[merge], mm->info.lora_bytes / 1048576.0, mm->info.lora_ms,
           rt->info.lora_bytes / 1048576.0, rt->info.lora_ms);
    free(got);
    fg_model_free(mm);
  }
  free(want);
  fg_model_free(rt);
  remove(ad);
}

// ----------------------------------------------------------------------------------------------
// 5. fingerprints, snapshots, the session contract

static void test_fingerprints_and_snapshots(const char *base) {
  char a1[4200], a2[4200];
  snprintf(a1, sizeof a1, "%s", tmp_path("fp-a.gguf"));
  snprintf(a2, sizeof a2, "%s", tmp_path("fp-b.gguf"));
  gen_lora(base, a1, FG_TYPE_F32, 8, 41, 0);
  gen_lora(base, a2, FG_TYPE_F32, 8, 42, 0);
  const fg_lora l1 = {a1, 1.0f}, l1h = {a1, 0.5f}, l2 = {a2, 1.0f}, l12[2] = {{a1, 1.0f}, {a2, 1.0f}},
                l21[2] = {{a2, 1.0f}, {a1, 1.0f}};
  struct { const fg_lora *l; size_t n; uint32_t merge; const char *what; } v[] = {
      {NULL, 0, 0, "base"},     {&l1, 1, 0, "a"},         {&l1h, 1, 0, "a at 0.5"},       {&l2, 1, 0, "b"},
      {l12, 2, 0, "a, b"},      {l21, 2, 0, "b, a"},      {&l1, 1, FG_LORA_MERGE_F32, "a merged f32"},
      {&l1, 1, FG_LORA_MERGE_Q8_0, "a merged q8_0"},
  };
  enum { NV = sizeof v / sizeof v[0] };
  fg_model *m[NV];
  for (size_t i = 0; i < NV; i++) m[i] = load(base, v[i].l, v[i].n, v[i].merge, NULL);
  for (size_t i = 0; i < NV; i++)
    for (size_t j = i + 1; j < NV; j++)
      if (m[i] && m[j])
        CHECK_MSG(memcmp(m[i]->info.fingerprint, m[j]->info.fingerprint, 16) != 0, "same fingerprint: %s / %s",
                  v[i].what, v[j].what);
  /* the same adapters give the same fingerprint */
  fg_model *again = load(base, &l1, 1, 0, NULL);
  if (again && m[1]) CHECK(memcmp(again->info.fingerprint, m[1]->info.fingerprint, 16) == 0);
  fg_model_free(again);

  /* a snapshot saved with adapter a at scale 1 loads only into that model */
  if (m[1]) {
    int32_t ids[N_PROMPT];
    random_ids(ids, N_PROMPT, m[1]->hp.n_vocab);
    fg_session *s = NULL;
    CHECK_OK(fg_session_create(m[1], NULL, &s, NULL));
    CHECK_OK(fg_session_prefill(s, ids, N_PROMPT, NULL));
    fg_snapshot *snap = NULL;
    CHECK_OK(fg_session_snapshot(s, &snap));
    const char *path = tmp_path("snap.fgsnap");
    CHECK_OK(fg_snapshot_save(snap, path, NULL));
    for (size_t i = 0; i < NV; i++) {
      if (!m[i]) continue;
      fg_snapshot *ls = NULL;
      const fg_status st = fg_snapshot_load(m[i], path, &ls, NULL);
      CHECK_MSG(st == (i == 1 ? FG_OK : FG_ERR_MISMATCH), "snapshot of 'a' loaded into '%s': %s", v[i].what,
                fg_status_str(st));
      CHECK(i == 1 || ls == NULL);
      if (ls) {
        /* and continues exactly */
        fg_session *f = NULL;
        CHECK_OK(fg_session_fork(ls, NULL, &f, NULL));
        int32_t n1 = -1, n2 = -2;
        CHECK_OK(fg_session_step(f, 77, &n1));
        CHECK_OK(fg_session_step(s, 77, &n2));
        CHECK_EQ_INT(n1, n2);
        CHECK(memcmp(fg_session_logits(f), fg_session_logits(s), sizeof(float) * m[1]->hp.n_vocab) == 0);
        fg_session_free(f);
      }
      fg_snapshot_free(ls);
    }
    remove(path);
    fg_snapshot_free(snap);
    fg_session_free(s);
  }
  for (size_t i = 0; i < NV; i++) fg_model_free(m[i]);
  remove(a1);
  remove(a2);
}

static void test_session_contract(const char *base) {
  const char *ad = tmp_path("session.gguf");
  gen_lora(base, ad, FG_TYPE_F32, 8, 51, 0);
  fg_model *m = load1(base, ad, 1.0f, FG_LORA_RUNTIME);
  if (!m) return;
  const uint32_t V = m->hp.n_vocab;
  int32_t ids[40];
  random_ids(ids, 40, V);
  fg_session_params sp;
  fg_session_params_init(&sp);
  sp.n_threads = 1;
  sp.n_batch = 8;
  sp.n_ctx = 128;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &sp, &s, NULL));
  CHECK_OK(fg_session_prefill(s, ids, 20, NULL));
  fg_snapshot *snap = NULL;
  CHECK_OK(fg_session_snapshot(s, &snap));
  /* snapshot -> decode -> restore -> decode: bit for bit */
  CHECK_OK(fg_session_prefill(s, ids + 20, 20, NULL));
  float *first = malloc(sizeof(float) * V);
  memcpy(first, fg_session_logits(s), sizeof(float) * V);
  CHECK_OK(fg_session_restore(s, snap));
  CHECK_OK(fg_session_prefill(s, ids + 20, 20, NULL));
  CHECK(memcmp(first, fg_session_logits(s), sizeof(float) * V) == 0);
  /* a fork of the snapshot (2 threads) equals it too: outputs do not depend on the thread count */
  fg_session_params sp2 = sp;
  sp2.n_threads = 2;
  fg_session *f = NULL;
  CHECK_OK(fg_session_fork(snap, &sp2, &f, NULL));
  CHECK_OK(fg_session_prefill(f, ids + 20, 20, NULL));
  CHECK(memcmp(first, fg_session_logits(f), sizeof(float) * V) == 0);
  /* one whole prefill (other chunks): the same within the F32 tolerance (test_session.c) */
  fg_session *w = NULL;
  sp2.n_batch = 64;
  CHECK_OK(fg_session_create(m, &sp2, &w, NULL));
  CHECK_OK(fg_session_prefill(w, ids, 40, NULL));
  CHECK(fg_test_rel_diff(fg_session_logits(w), first, V) <= 1e-4);
  /* the model outlives nothing: free it first, the sessions keep it */
  fg_model_free(m);
  CHECK_OK(fg_session_step(w, 5, NULL));
  fg_session_free(w);
  fg_session_free(f);
  fg_snapshot_free(snap);
  fg_session_free(s);
  free(first);
  remove(ad);
}

// ----------------------------------------------------------------------------------------------
// 6. refusals

/* One adapter file written by hand: metadata and F32 tensors of given shapes filled with 0.01 (one value
 * may be made non-finite). */
typedef struct hand_tensor {
  const char *name;
  uint64_t ne0, ne1;
  uint32_t type;
} hand_tensor;

typedef struct hand_adapter {
  const char *general_type; /* NULL: the key is left out */
  const char *adapter_type;
  const char *arch;
  float alpha;
  hand_tensor t[4];
  int n_t;
  float poison; /* 0 or a value written into the first element of the last tensor */
  const int32_t *ov_ids;
  const char *const *ov_tokens;
  size_t n_ov_ids, n_ov_tokens;
} hand_adapter;

static void write_hand(const char *path, const hand_adapter *h) {
  fg_gguf_writer *w = fg_gguf_writer_create();
  if (h->general_type) CHECK_OK(fg_gguf_writer_set_str(w, "general.type", h->general_type));
  if (h->arch) CHECK_OK(fg_gguf_writer_set_str(w, "general.architecture", h->arch));
  if (h->adapter_type) CHECK_OK(fg_gguf_writer_set_str(w, "adapter.type", h->adapter_type));
  CHECK_OK(fg_gguf_writer_set_f32(w, "adapter.lora.alpha", h->alpha));
  if (h->n_ov_ids) CHECK_OK(fg_gguf_writer_set_arr(w, "fgemma.vocab_override.ids", FG_GGUF_INT32, h->ov_ids, h->n_ov_ids));
  if (h->n_ov_tokens) {
    size_t lens[16];
    for (size_t i = 0; i < h->n_ov_tokens; i++) lens[i] = strlen(h->ov_tokens[i]);
    CHECK_OK(fg_gguf_writer_set_arr_str(w, "fgemma.vocab_override.tokens", h->ov_tokens, lens, h->n_ov_tokens));
  }
  for (int i = 0; i < h->n_t; i++) {
    const uint64_t ne[2] = {h->t[i].ne0, h->t[i].ne1};
    CHECK_OK(fg_gguf_writer_add_tensor(w, h->t[i].name, h->t[i].type, 2, ne));
  }
  FILE *f = fopen(path, "wb");
  fg_error err;
  CHECK_OK(fg_gguf_writer_begin(w, f, &err));
  for (int i = 0; i < h->n_t; i++) {
    const size_t n = (size_t)(h->t[i].ne0 * h->t[i].ne1);
    uint64_t rb = 0;
    fg_type_row_bytes(h->t[i].type, h->t[i].ne0, &rb);
    float *v = malloc(sizeof(float) * (n ? n : 1));
    uint8_t *q = malloc((size_t)(rb * h->t[i].ne1) + 1);
    for (size_t e = 0; e < n; e++) v[e] = 0.01f;
    if (i == h->n_t - 1 && h->poison != 0.0f && n) v[0] = h->poison;
    for (uint64_t r = 0; r < h->t[i].ne1; r++) fg_quantize_row(h->t[i].type, v + r * h->t[i].ne0, q + r * rb, (size_t)h->t[i].ne0);
    CHECK_OK(fg_gguf_writer_tensor_data(w, f, q, (size_t)(rb * h->t[i].ne1), &err));
    free(v);
    free(q);
  }
  CHECK_OK(fg_gguf_writer_end(w, f, &err));
  fclose(f);
  fg_gguf_writer_free(w);
}

/* Sets dimension `dim` of tensor `name` in the GGUF file at path to v (the tensor info: name, u32 n_dims,
 * u64 ne[n_dims]). 0 on success. */
static int patch_dim(const char *path, const char *name, int dim, uint64_t v) {
  size_t n = 0;
  char *b = fg_test_read_file(path, &n);
  if (!b) return 1;
  const size_t len = strlen(name);
  int rc = 1;
  for (size_t i = 8; i + len + 4 + 16 <= n; i++) {
    uint64_t l;
    memcpy(&l, b + i - 8, 8);
    if (l != len || memcmp(b + i, name, len) != 0) continue;
    memcpy(b + i + len + 4 + 8 * (size_t)dim, &v, 8);
    FILE *f = fopen(path, "wb");
    rc = !f || fwrite(b, 1, n, f) != n;
    if (f) fclose(f);
    break;
  }
  free(b);
  return rc;
}

/* Loads base with the file at path (scale), expects status `want`, a NULL model and a message holding
 * the file's name and `needle` (may be NULL). */
static void expect_refusal(const char *base, const char *path, float scale, uint32_t merge, fg_status want,
                           const char *needle, const char *what) {
  fg_model_params p;
  fg_model_params_init(&p);
  const fg_lora l = {path, scale};
  p.loras = &l;
  p.n_loras = 1;
  p.lora_merge = merge;
  fg_model *m = (fg_model *)(uintptr_t)1;
  fg_error err = {0};
  const fg_status st = fg_model_load(base, &p, &m, &err);
  CHECK_MSG(st == want, "%s: status %s, expected %s (%s)", what, fg_status_str(st), fg_status_str(want), err.msg);
  CHECK_MSG(m == NULL, "%s: the model is not NULL", what);
  const char *slash = strrchr(path, '/');
  CHECK_MSG(strstr(err.msg, slash ? slash + 1 : path) != NULL, "%s: the message does not name the file: %s", what, err.msg);
  if (needle) CHECK_MSG(strstr(err.msg, needle) != NULL, "%s: the message does not name '%s': %s", what, needle, err.msg);
  if (st == want) printf("  refused (%s): %s\n", what, err.msg);
}

static void test_refusals(const char *base) {
  fg_model *m = load1(base, NULL, 0, 0);
  if (!m) return;
  const uint64_t d = m->hp.n_embd, nq = (uint64_t)m->hp.n_head * m->hp.head_dim_k, nk = (uint64_t)m->hp.n_head_kv * m->hp.head_dim_k;
  fg_model_free(m);
  const char *path = tmp_path("bad.gguf");
  const hand_adapter ok = {"adapter", "lora", "gemma3", 16.0f,
                           {{"blk.1.attn_q.weight.lora_a", d, 4, FG_TYPE_F32}, {"blk.1.attn_q.weight.lora_b", 4, nq, FG_TYPE_F32}},
                           2, 0.0f, NULL, NULL, 0, 0};
  hand_adapter h = ok;
  write_hand(path, &h);
  fg_model *good = load1(base, path, 1.0f, 0); /* the hand-made adapter itself loads */
  CHECK(good != NULL);
  fg_model_free(good);

  h = ok, h.arch = "llama", write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_UNSUPPORTED, "llama", "another architecture");
  h = ok, h.general_type = NULL, write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_FORMAT, "general.type", "no general.type");
  h = ok, h.general_type = "model", write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_FORMAT, "model", "general.type model");
  expect_refusal(base, base, 1, 0, FG_ERR_FORMAT, "not an adapter", "the base model given as an adapter");
  h = ok, h.adapter_type = "control_vector", write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_UNSUPPORTED, "control_vector", "adapter.type control_vector");
  h = ok, h.t[0].ne0 = d + 32, write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_FORMAT, "blk.1.attn_q.weight", "lora_a of another width");
  h = ok, h.t[1].ne1 = nk, write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_FORMAT, "blk.1.attn_q.weight", "lora_b of another height");
  h = ok, h.n_t = 1, write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_FORMAT, "blk.1.attn_q.weight.lora_a", "a lone lora_a");
  h = ok, h.t[0] = h.t[1], h.n_t = 1, write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_FORMAT, "blk.1.attn_q.weight.lora_b", "a lone lora_b");
  h = ok, h.t[1].ne0 = 5, write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_FORMAT, "rank", "ranks that differ");
  h = ok, h.t[0].ne1 = d + 1, h.t[1].ne0 = d + 1, write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_FORMAT, "rank", "an absurd rank");
  /* rank 0: the writer refuses empty tensors, so the shapes are patched into a rank-1 file */
  h = ok, h.t[0].ne1 = 1, h.t[1].ne0 = 1, write_hand(path, &h);
  CHECK_EQ_INT(patch_dim(path, "blk.1.attn_q.weight.lora_a", 1, 0), 0);
  CHECK_EQ_INT(patch_dim(path, "blk.1.attn_q.weight.lora_b", 0, 0), 0);
  expect_refusal(base, path, 1, 0, FG_ERR_FORMAT, "blk.1.attn_q.weight.lora_a", "rank 0"); /* the GGUF parser's */
  h = ok, h.poison = NAN, write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_FORMAT, "blk.1.attn_q.weight.lora_b", "NaN in lora_b");
  h = ok, h.poison = INFINITY, h.n_t = 1, h.t[0] = ok.t[1], h.t[1] = ok.t[0], h.n_t = 2, write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_FORMAT, "blk.1.attn_q.weight.lora_a", "inf in lora_a");
  h = ok, h.poison = NAN, write_hand(path, &h);
  expect_refusal(base, path, 0.0f, 0, FG_ERR_FORMAT, "non-finite", "NaN in an adapter at scale 0");
  h = ok, h.t[0].name = "token_embd.weight.lora_a", h.t[1].name = "token_embd.weight.lora_b", write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_UNSUPPORTED, "token_embd.weight", "token_embd");
  h = ok, h.t[0].name = "blk.99.attn_q.weight.lora_a", h.t[1].name = "blk.99.attn_q.weight.lora_b", write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_FORMAT, "blk.99.attn_q.weight", "a layer the base lacks");
  h = ok, h.t[0] = (hand_tensor){"blk.0.attn_norm.weight", d, 1, FG_TYPE_F32}, h.n_t = 1, write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_UNSUPPORTED, "blk.0.attn_norm.weight", "a norm vector");
  h = ok, h.t[0].type = FG_TYPE_Q4_0, h.t[0].ne1 = 4, write_hand(path, &h);
  expect_refusal(base, path, 1, 0, FG_ERR_UNSUPPORTED, "q4_0", "a q4_0 lora_a");
  h = ok, write_hand(path, &h);
  expect_refusal(base, path, NAN, 0, FG_ERR_INVALID_ARG, "scale", "a NaN scale");
  expect_refusal(base, path, INFINITY, 0, FG_ERR_INVALID_ARG, "scale", "an infinite scale");
  h = ok, h.alpha = 3e38f, write_hand(path, &h);
  expect_refusal(base, path, 1e10f, 0, FG_ERR_INVALID_ARG, "not finite", "scale x alpha / rank overflows");
  /* a negative scale is legal (llama.cpp accepts it) */
  h = ok, write_hand(path, &h);
  fg_model *neg = load1(base, path, -2.5f, 0);
  CHECK(neg != NULL);
  fg_model_free(neg);
  expect_refusal(base, tmp_path("missing.gguf"), 1, 0, FG_ERR_IO, NULL, "a missing file");
  /* parameters */
  fg_model_params p;
  fg_model_params_init(&p);
  fg_model *x = NULL;
  fg_error err;
  p.n_loras = 1;
  CHECK_EQ_INT(fg_model_load(base, &p, &x, &err), FG_ERR_INVALID_ARG);
  p.n_loras = 0;
  p.lora_merge = 4;
  CHECK_EQ_INT(fg_model_load(base, &p, &x, &err), FG_ERR_INVALID_ARG);
  const fg_lora nopath = {NULL, 1.0f};
  p.lora_merge = 0;
  p.loras = &nopath;
  p.n_loras = 1;
  CHECK_EQ_INT(fg_model_load(base, &p, &x, &err), FG_ERR_INVALID_ARG);
  CHECK(x == NULL);
  remove(path);
}

/* Every allocation of a load with an adapter failing in turn: FG_ERR_NOMEM, no model, nothing left
 * (LeakSanitizer checks the last part in the ASan run). */
static void test_alloc_failures(const char *base, const char *ad, uint32_t merge) {
  int n_nomem = 0;
  for (uint64_t k = 1; k < 2000; k++) {
    fg_model_params p;
    fg_model_params_init(&p);
    const fg_lora l = {ad, 1.0f};
    p.loras = &l;
    p.n_loras = 1;
    p.lora_merge = merge;
    fg_model *m = NULL;
    fg_alloc_fail_after(k);
    const fg_status st = fg_model_load(base, &p, &m, NULL);
    fg_alloc_fail_after(0);
    if (st == FG_OK) {
      CHECK(m && m->lora);
      fg_model_free(m);
      break;
    }
    CHECK_MSG(st == FG_ERR_NOMEM, "allocation %llu failed: %s", (unsigned long long)k, fg_status_str(st));
    CHECK(m == NULL);
    n_nomem++;
  }
  CHECK(n_nomem > 5);
  printf("allocation failures (merge %u): %d loads failed cleanly before one succeeded\n", merge, n_nomem);
}

// ----------------------------------------------------------------------------------------------
// 7. the vocabulary override

/* A copy of the tiny model with the real vocabulary whose ids 46..52 are Gemma 3's <unused40>..<unused46>
 * (control type, as in google/gemma-3-270m), i.e. a Gemma 3 base that lacks FunctionGemma's tokens. */
static int write_gemma3_base(const char *src, const char *out) {
  size_t size = 0;
  uint8_t *bytes = (uint8_t *)fg_test_read_file(src, &size);
  fg_gguf g;
  fg_error err;
  if (!bytes || fg_gguf_parse(bytes, size, &g, &err) != FG_OK) return 1;
  const fg_gguf_kv *kt = fg_gguf_find_kv(&g, "tokenizer.ggml.tokens");
  fg_gguf_str *pieces = NULL;
  if (!kt || fg_gguf_str_array(kt, &pieces, &err) != FG_OK) return 1;
  const size_t n = (size_t)kt->arr_n;
  const char **strs = malloc(sizeof *strs * n);
  size_t *lens = malloc(sizeof *lens * n);
  static char unused[7][16];
  for (size_t i = 0; i < n; i++) {
    strs[i] = pieces[i].ptr;
    lens[i] = pieces[i].len;
    if (i >= 46 && i <= 52) {
      snprintf(unused[i - 46], sizeof unused[0], "<unused%zu>", i - 6);
      strs[i] = unused[i - 46];
      lens[i] = strlen(unused[i - 46]);
    }
  }
  fg_gguf_writer *w = fg_gguf_writer_create();
  for (size_t i = 0; i < g.n_kv; i++) {
    if (fg_gguf_str_eq(g.kv[i].key, "tokenizer.ggml.tokens"))
      CHECK_OK(fg_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", strs, lens, n));
    else
      CHECK_OK(fg_gguf_writer_copy_kv(w, &g.kv[i]));
  }
  for (size_t i = 0; i < g.n_tensors; i++) {
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)g.tensors[i].name.len, g.tensors[i].name.ptr);
    CHECK_OK(fg_gguf_writer_add_tensor(w, name, g.tensors[i].type, g.tensors[i].n_dims, g.tensors[i].ne));
  }
  FILE *f = fopen(out, "wb");
  CHECK_OK(fg_gguf_writer_begin(w, f, &err));
  for (size_t i = 0; i < g.n_tensors; i++)
    CHECK_OK(fg_gguf_writer_tensor_data(w, f, g.tensors[i].data, (size_t)g.tensors[i].nbytes, &err));
  CHECK_OK(fg_gguf_writer_end(w, f, &err));
  fclose(f);
  fg_gguf_writer_free(w);
  free(strs);
  free(lens);
  fg_free(pieces);
  fg_gguf_clear(&g);
  free(bytes);
  return 0;
}

static void test_vocab_override(void) {
  CHECK_EQ_INT(fg_test_ensure_model("tiny-vocab-f32.gguf", "tiny", "f32", 1), 0);
  char base[4200], ad[4200];
  snprintf(base, sizeof base, "%s", tmp_path("gemma3-base.gguf"));
  snprintf(ad, sizeof ad, "%s", tmp_path("override.gguf"));
  CHECK_EQ_INT(write_gemma3_base(fg_test_model_path("tiny-vocab-f32.gguf"), base), 0);
  gen_lora(base, ad, FG_TYPE_F32, 8, 61, FG_GEN_LORA_VOCAB_OVERRIDE);
  fg_model *m0 = load1(base, NULL, 0, 0), *m = load1(base, ad, 1.0f, 0);
  static const char *const fn[7] = {"<start_function_declaration>", "<end_function_declaration>", "<start_function_call>",
                                    "<end_function_call>", "<start_function_response>", "<end_function_response>",
                                    "<escape>"};
  if (m0 && m) {
    int32_t id;
    CHECK_EQ_INT(fg_token_lookup(m0, "<start_function_call>", &id), FG_ERR_INVALID_ARG);
    CHECK_OK(fg_token_lookup(m0, "<unused42>", &id));
    CHECK_EQ_INT(id, 48);
    for (int i = 0; i < 7; i++) {
      CHECK_OK(fg_token_lookup(m, fn[i], &id));
      CHECK_EQ_INT(id, 46 + i);
    }
    CHECK_EQ_INT(fg_token_lookup(m, "<unused42>", &id), FG_ERR_INVALID_ARG);
    /* tokenization splits the control text out, detokenization renders it by name */
    const char *text = "<start_function_call>call:open{x:<escape>a b<escape>}<end_function_call>";
    int32_t ids[64], ids0[64];
    size_t n = 0, n0 = 0;
    CHECK_OK(fg_tokenize(m, text, strlen(text), 0, ids, 64, &n));
    CHECK_OK(fg_tokenize(m0, text, strlen(text), 0, ids0, 64, &n0));
    CHECK(n > 2 && ids[0] == 48 && ids[n - 1] == 49);
    CHECK(n0 > n && ids0[0] != 48); /* the base spells the text out in pieces */
    char back[256];
    size_t nb = 0;
    CHECK_OK(fg_detokenize(m, ids, n, back, sizeof back, &nb));
    CHECK(nb == strlen(text) && memcmp(back, text, nb) == 0);
    /* the rendered prompt holds the control tokens */
    fg_catalog *c = fg_test_catalog_file("tv-catalog-small.json");
    if (c) {
      char *prefix = malloc(1 << 16);
      size_t np = 0;
      CHECK_OK(fg_catalog_render_prefix(c, prefix, 1 << 16, &np));
      int32_t *pid = malloc(sizeof(int32_t) * 8192);
      size_t npid = 0;
      CHECK_OK(fg_tokenize(m, prefix, np, FG_TOKENIZE_ADD_BOS, pid, 8192, &npid));
      int n46 = 0, n52 = 0;
      for (size_t i = 0; i < npid; i++) n46 += pid[i] == 46, n52 += pid[i] == 52;
      CHECK_EQ_INT((size_t)n46, fg_catalog_n_functions(c));
      CHECK(n52 > 0);
      /* constrained decoding needs the control tokens: refused on the base, a valid call with the adapter */
      fg_nlu_params np2;
      fg_nlu_params_init(&np2);
      np2.constrain = FG_NLU_CONSTRAIN_CALL_ONLY;
      np2.max_tokens = 48;
      np2.session.n_threads = 2;
      fg_nlu *e = NULL;
      fg_error err;
      CHECK(fg_nlu_create(m0, c, &np2, &e, &err) != FG_OK);
      CHECK(e == NULL);
      CHECK_MSG(fg_nlu_create(m, c, &np2, &e, &err) == FG_OK, "nlu: %s", err.msg);
      if (e) {
        fg_nlu_result r;
        CHECK_OK(fg_nlu_ask(e, "mach lauter", 11, &r));
        CHECK_MSG(strstr(r.raw, "<start_function_call>call:") == r.raw && strstr(r.raw, "<end_function_call>"),
                  "constrained answer: %s", r.raw);
        CHECK_MSG(strstr(r.json, "\"calls\":[{\"name\":") != NULL, "json: %s", r.json);
        /* the call parser reads the generated text */
        char js[1024];
        size_t nj = 0;
        CHECK_OK(fg_call_parse(c, r.raw, strlen(r.raw), js, sizeof js, &nj, &err));
        printf("vocabulary override: constrained answer %s -> %s\n", r.raw, js);
        fg_nlu_free(e);
      }
      free(pid);
      free(prefix);
      fg_catalog_free(c);
    }
  }
  fg_model_free(m0);
  fg_model_free(m);

  /* an override on a base that already has the same texts (gen-model's vocabularies do) is accepted */
  fg_model *same = load1(fg_test_model_path("tiny-vocab-f32.gguf"), ad, 1.0f, 0);
  CHECK(same != NULL);
  fg_model_free(same);

  /* refusals */
  fg_model *mb = load1(base, NULL, 0, 0);
  if (!mb) return;
  const uint64_t d = mb->hp.n_embd;
  const uint32_t V = mb->hp.n_vocab;
  int32_t used_id = -1;
  CHECK_OK(fg_token_lookup(mb, "<start_of_turn>", &used_id));
  fg_model_free(mb);
  const char *path = tmp_path("bad-override.gguf");
  static const char *const one[1] = {"<start_function_call>"};
  static const char *const two[2] = {"<start_function_call>", "<end_function_call>"};
  static const char *const dup_text[2] = {"<start_function_call>", "<start_function_call>"};
  static const char *const taken[1] = {"<end_of_turn>"};
  const int32_t id48[1] = {48}, ids2[2] = {48, 49}, dup[2] = {48, 48}, out_of_range[1] = {(int32_t)V}, used[1] = {used_id};
  struct { const int32_t *ids; size_t ni; const char *const *tok; size_t nt; fg_status want; const char *needle; const char *what; } bad[] = {
      {used, 1, one, 1, FG_ERR_UNSUPPORTED, "<start_of_turn>", "renaming a token in use"},
      {out_of_range, 1, one, 1, FG_ERR_FORMAT, "outside", "an id outside the vocabulary"},
      {dup, 2, two, 2, FG_ERR_FORMAT, "twice", "an id listed twice"},
      {ids2, 2, one, 1, FG_ERR_FORMAT, "2 ids but 1 tokens", "lengths that differ"},
      {ids2, 2, dup_text, 2, FG_ERR_FORMAT, "same text", "two ids with one text"},
      {id48, 1, taken, 1, FG_ERR_FORMAT, "already token", "a text another token has"},
      {id48, 1, NULL, 0, FG_ERR_FORMAT, "without", "ids without tokens"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    hand_adapter h = {"adapter", "lora", "gemma3", 0.0f, {{"blk.0.attn_q.weight.lora_a", d, 2, FG_TYPE_F32},
                      {"blk.0.attn_q.weight.lora_b", 2, (uint64_t)4 * 32, FG_TYPE_F32}}, 2, 0.0f,
                      bad[i].ids, bad[i].tok, bad[i].ni, bad[i].nt};
    write_hand(path, &h);
    expect_refusal(base, path, 1, 0, bad[i].want, bad[i].needle, bad[i].what);
  }
  /* an adapter that only renames (no tensors), on tiny-f32, whose synthetic vocabulary has the
   * FunctionGemma texts already: accepted as "the same text" */
  hand_adapter h = {"adapter", "lora", "gemma3", 0.0f, {{0}}, 0, 0.0f, id48, one, 1, 1};
  write_hand(path, &h);
  CHECK_EQ_INT(fg_test_ensure_model("tiny-f32.gguf", "tiny", "f32", 1), 0);
  fg_model *ok = load1(fg_test_model_path("tiny-f32.gguf"), path, 1.0f, 0);
  CHECK(ok != NULL);
  fg_model_free(ok);
  /* allocation failures with an override */
  test_alloc_failures(base, ad, FG_LORA_RUNTIME);
  remove(path);
  remove(base);
  remove(ad);
}

// ----------------------------------------------------------------------------------------------

int main(void) {
  snprintf(g_dir, sizeof g_dir, "%s", fg_test_model_path(""));
  snprintf(g_dir + strlen(g_dir), sizeof g_dir - strlen(g_dir), "test-lora-%d", (int)getpid());
  for (size_t i = 0; i < sizeof k_bases / sizeof k_bases[0]; i++)
    if (ensure_base(&k_bases[i]) != 0) return 1;
  for (size_t i = 0; i < sizeof k_bases / sizeof k_bases[0]; i++) test_base(&k_bases[i]);

  char f32[4200], q8[4200], q4k[4200];
  snprintf(f32, sizeof f32, "%s", fg_test_model_path("tiny-f32.gguf"));
  snprintf(q8, sizeof q8, "%s", fg_test_model_path("tiny-q8_0.gguf"));
  snprintf(q4k, sizeof q4k, "%s", fg_test_model_path("lora-small-q4_k.gguf"));
  test_apply_unit(f32);
  test_apply_unit(q4k);
  test_adapter_types(f32);
  test_scale_zero_and_sum(f32, fg_test_logit_tol(FG_TYPE_F32));
  test_scale_zero_and_sum(q8, fg_test_logit_tol(FG_TYPE_Q8_0));
  /* merge modes against run time (session path). F32 base: merged F32 differs from W·x + s·B·(A·x) by
   * rounding (the F32 tolerance; measured 1.5e-6); BF16 rounds every adapted weight to 8 bits of mantissa
   * (measured 0.020: 0.06), plus the table's own error for BF16 matrices (fg_test_logit_tol: 1e-4 under
   * the fma spec, 0.08 where the table rounds the activations to bf16 too; measured 0.020 under both);
   * Q8_0 rounds the weights to 8-bit blocks (measured 0.073 with the q8 spec's activations: 0.15, the
   * quantized tolerance). Quantized bases: a merged matrix is computed with other activations than the
   * base's (f32 / bf16 / re-quantized), so every mode differs from run time as a quantized model differs
   * from its reference: 0.15 (measured 0.042 .. 0.074), and the BF16 merge again the table's BF16 error. */
  const double bf16_own = fg_test_logit_tol(FG_TYPE_BF16);
  const double tol_f32[4] = {0, fg_test_logit_tol(FG_TYPE_F32), 0.06 + bf16_own, 0.15},
               tol_q[4] = {0, 0.15, 0.15 + bf16_own, 0.15};
  test_merge_modes(f32, "tiny f32", tol_f32);
  test_merge_modes(q8, "tiny q8_0", tol_q);
  test_merge_modes(q4k, "small q4_k", tol_q);
  test_fingerprints_and_snapshots(f32);
  test_session_contract(f32);
  test_refusals(f32);
  {
    const char *ad = tmp_path("alloc.gguf");
    char p[4200];
    snprintf(p, sizeof p, "%s", ad);
    gen_lora(f32, p, FG_TYPE_F32, 8, 71, 0);
    test_alloc_failures(f32, p, FG_LORA_RUNTIME);
    test_alloc_failures(f32, p, FG_LORA_MERGE_Q8_0);
    remove(p);
  }
  test_vocab_override();
  return fg_test_finish("test_lora");
}
