/* test_lora_view.c — model views (fg_model_with_loras, src/model/view.c, docs/LORA.md "Many adapters, one
 * base") on the tiny F32 and Q8_0 models with two gen-lora adapters:
 *  1. a view's logits (session path, 1 and 2 threads; reference path) equal those of a model loaded with
 *     the same adapter through fg_model_params.loras, bit for bit, and so does its fingerprint;
 *  2. the base's logits are unchanged while views exist; the view shares the base's weights;
 *  3. stacking: a view of a view, and a view of a base loaded with a run-time adapter, equal a model
 *     loaded with both adapters;
 *  4. two views on different adapters answer concurrently from two threads, as they answer alone;
 *  5. free order: base first, view first, sessions and snapshots last;
 *  6. snapshots: a snapshot of view A (in memory and persisted) is refused by view B and by the base,
 *     taken by another view with A and by a model loaded with A;
 *  7. misuse: NULL / zero arguments, a merged base, a missing file, an adapter for another shape, a bad
 *     scale (each with the file named), allocation failures (nothing left behind). */
#define FG_EXPERIMENTAL
#include "fgemma.h"
#include "testutil.h"

#include "model/lora.h"
#include "model/model.h"
#include "tensor/dtype.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_IDS 10

static char g_dir[4096];

static const char *tmp_path(const char *name) {
  static char buf[8][4200];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s-%s", g_dir, name);
  return buf[k];
}

static const int32_t k_ids[N_IDS] = {2, 17, 5, 99, 31, 8, 64, 12, 3, 40};

static fg_model *load(const char *path, const fg_lora *loras, size_t n, uint32_t merge) {
  fg_model_params p;
  fg_model_params_init(&p);
  p.loras = loras;
  p.n_loras = n;
  p.lora_merge = merge;
  fg_model *m = NULL;
  fg_error err;
  CHECK_MSG(fg_model_load(path, &p, &m, &err) == FG_OK, "load %s: %s", path, err.msg);
  return m;
}

static fg_model *view(const fg_model *base, const fg_lora *loras, size_t n) {
  fg_model *v = NULL;
  fg_error err;
  CHECK_MSG(fg_model_with_loras(base, loras, n, &v, &err) == FG_OK, "view: %s", err.msg);
  return v;
}

static void gen_lora(const char *base, const char *out, uint64_t seed) {
  fg_gen_lora_params p;
  fg_gen_lora_params_init(&p);
  p.seed = seed;
  fg_error err;
  CHECK_MSG(fg_gen_lora(base, &p, out, &err) == FG_OK, "gen-lora %s: %s", out, err.msg);
}

/* Logits after every position of k_ids (N_IDS × n_vocab), prefilled in chunks of 3; NULL on failure.
 * No CHECK here: worker threads call it (the check counters are not atomic). */
static float *logits_or_null(const fg_model *m, uint32_t threads) {
  const uint32_t V = m->hp.n_vocab;
  float *out = malloc(sizeof(float) * N_IDS * V);
  fg_session_params sp;
  fg_session_params_init(&sp);
  sp.n_threads = threads;
  sp.n_batch = 3;
  sp.n_ctx = 32;
  fg_session *s = NULL;
  bool ok = fg_session_create(m, &sp, &s, NULL) == FG_OK;
  for (size_t i = 0; ok && i < N_IDS; i++) {
    ok = fg_session_prefill(s, k_ids + i, 1, NULL) == FG_OK;
    if (ok) memcpy(out + i * V, fg_session_logits(s), sizeof(float) * V);
  }
  fg_session_free(s);
  if (!ok) {
    free(out);
    return NULL;
  }
  return out;
}

static float *session_logits(const fg_model *m, uint32_t threads) {
  float *out = logits_or_null(m, threads);
  CHECK_MSG(out != NULL, "a session on the model failed");
  if (!out) out = calloc((size_t)N_IDS * m->hp.n_vocab, sizeof(float));
  return out;
}

static float *reference_logits(const fg_model *m) {
  const uint32_t V = m->hp.n_vocab;
  float *out = malloc(sizeof(float) * N_IDS * V);
  size_t at[N_IDS];
  for (size_t i = 0; i < N_IDS; i++) at[i] = i;
  fg_error err;
  CHECK_MSG(fg_ref_forward(m, k_ids, NULL, N_IDS, at, N_IDS, out, &err) == FG_OK, "reference: %s", err.msg);
  return out;
}

static bool same_logits(const float *a, const float *b, const fg_model *m) {
  return memcmp(a, b, sizeof(float) * N_IDS * m->hp.n_vocab) == 0;
}

static bool same_fp(const fg_model *a, const fg_model *b) { return memcmp(a->info.fingerprint, b->info.fingerprint, 16) == 0; }

/* 1., 2., 3. */
static void test_equal_to_loaded(const char *base_path, const char *ad_a, const char *ad_b) {
  const fg_lora la = {ad_a, 1.0f}, lb = {ad_b, 0.7f}, both[2] = {la, lb};
  fg_model *base = load(base_path, NULL, 0, 0), *ma = load(base_path, &la, 1, 0), *mab = load(base_path, both, 2, 0);
  float *b0 = session_logits(base, 1);
  fg_model *va = view(base, &la, 1), *vb = view(base, &lb, 1);
  /* the view borrows the base's weights: the same layers, packed copies and vocabulary */
  CHECK(va->layers == base->layers && va->packed == base->packed && va->vocab == base->vocab);
  CHECK(va->base == base && va->lora != NULL && va->lora != vb->lora);
  CHECK_EQ_INT(va->info.n_loras, 1);
  CHECK_EQ_INT(va->info.lora_merge, FG_LORA_RUNTIME);
  CHECK(va->info.lora_bytes == ma->info.lora_bytes && va->info.lora_bytes > 0);
  CHECK(va->info.decode_bytes == ma->info.decode_bytes);
  CHECK(same_fp(va, ma) && !same_fp(va, base) && !same_fp(va, vb));
  for (uint32_t th = 1; th <= 2; th++) {
    float *x = session_logits(va, th), *y = session_logits(ma, th);
    CHECK_MSG(same_logits(x, y, base), "%s: view A's logits (%u threads) differ from the loaded model's", base_path, th);
    free(x);
    free(y);
  }
  float *rx = reference_logits(va), *ry = reference_logits(ma);
  CHECK_MSG(same_logits(rx, ry, base), "%s: view A's reference logits differ", base_path);
  free(rx);
  free(ry);
  float *b1 = session_logits(base, 1), *xb = session_logits(vb, 1), *xa = session_logits(va, 1);
  CHECK_MSG(same_logits(b0, b1, base), "%s: the base's logits changed while views exist", base_path);
  CHECK(!same_logits(xa, b0, base) && !same_logits(xa, xb, base));
  /* stacking: a view of view A with B, and a view with B of the model loaded with A, are the model with both */
  fg_model *vab = view(va, &lb, 1), *mab2 = view(ma, &lb, 1);
  CHECK(vab->base == base && mab2->base == ma);
  CHECK_EQ_INT(vab->info.n_loras, 2);
  CHECK(same_fp(vab, mab) && same_fp(mab2, mab));
  float *s1 = session_logits(vab, 1), *s2 = session_logits(mab2, 1), *s3 = session_logits(mab, 1);
  CHECK_MSG(same_logits(s1, s3, base) && same_logits(s2, s3, base), "%s: stacked views differ from [A, B]", base_path);
  free(s1);
  free(s2);
  free(s3);
  free(b0);
  free(b1);
  free(xa);
  free(xb);
  fg_model_free(vab);
  fg_model_free(mab2);
  fg_model_free(va);
  fg_model_free(vb);
  fg_model_free(mab);
  fg_model_free(ma);
  fg_model_free(base);
}

/* 4. */
typedef struct worker {
  const fg_model *m;
  const float *want;
  int rounds;
  int bad;
} worker;

static void *worker_run(void *ud) {
  worker *w = ud;
  for (int r = 0; r < w->rounds; r++) {
    float *x = logits_or_null(w->m, 1);
    w->bad += !x || !same_logits(x, w->want, w->m);
    free(x);
  }
  return NULL;
}

static void test_threads(const char *base_path, const char *ad_a, const char *ad_b) {
  const fg_lora la = {ad_a, 1.0f}, lb = {ad_b, 1.0f};
  fg_model *base = load(base_path, NULL, 0, 0);
  fg_model *va = view(base, &la, 1), *vb = view(base, &lb, 1);
  float *wa = session_logits(va, 1), *wb = session_logits(vb, 1), *w0 = session_logits(base, 1);
  worker w[3] = {{va, wa, 3, 0}, {vb, wb, 3, 0}, {base, w0, 3, 0}};
  pthread_t t[3];
  for (int i = 0; i < 3; i++) CHECK(pthread_create(&t[i], NULL, worker_run, &w[i]) == 0);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  CHECK_MSG(w[0].bad == 0 && w[1].bad == 0 && w[2].bad == 0, "concurrent views: %d / %d / %d rounds differ", w[0].bad,
            w[1].bad, w[2].bad);
  free(wa);
  free(wb);
  free(w0);
  fg_model_free(va);
  fg_model_free(vb);
  fg_model_free(base);
}

/* 5. */
static void test_free_orders(const char *base_path, const char *ad_a) {
  const fg_lora la = {ad_a, 1.0f};
  for (int order = 0; order < 3; order++) {
    fg_model *base = load(base_path, NULL, 0, 0), *va = view(base, &la, 1);
    fg_session *s = NULL;
    CHECK_OK(fg_session_create(va, NULL, &s, NULL));
    CHECK_OK(fg_session_prefill(s, k_ids, 4, NULL));
    fg_snapshot *snap = NULL;
    CHECK_OK(fg_session_snapshot(s, &snap));
    if (order == 0) { /* base, view, then the holders */
      fg_model_free(base);
      fg_model_free(va);
    } else if (order == 1) { /* view, base */
      fg_model_free(va);
      fg_model_free(base);
    } else { /* view, then holders, base last */
      fg_model_free(va);
    }
    fg_session *f = NULL;
    CHECK_OK(fg_session_fork(snap, NULL, &f, NULL));
    CHECK_OK(fg_session_prefill(f, k_ids + 4, 2, NULL));
    fg_session_free(s);
    fg_snapshot_free(snap);
    fg_session_free(f);
    if (order == 2) fg_model_free(base);
  }
}

/* 6. */
static void test_snapshots(const char *base_path, const char *ad_a, const char *ad_b) {
  const fg_lora la = {ad_a, 1.0f}, lb = {ad_b, 1.0f}, la2 = {ad_a, 0.5f};
  fg_model *base = load(base_path, NULL, 0, 0), *ma = load(base_path, &la, 1, 0);
  fg_model *va = view(base, &la, 1), *va2 = view(base, &la, 1), *vb = view(base, &lb, 1), *vh = view(base, &la2, 1);
  fg_session *sa = NULL, *sb = NULL;
  CHECK_OK(fg_session_create(va, NULL, &sa, NULL));
  CHECK_OK(fg_session_create(vb, NULL, &sb, NULL));
  CHECK_OK(fg_session_prefill(sa, k_ids, 5, NULL));
  fg_snapshot *snap = NULL;
  CHECK_OK(fg_session_snapshot(sa, &snap));
  CHECK_EQ_INT(fg_session_restore(sb, snap), FG_ERR_MISMATCH);
  const char *path = tmp_path("a.fgsnap");
  fg_error err;
  CHECK_MSG(fg_snapshot_save(snap, path, &err) == FG_OK, "save: %s", err.msg);
  const fg_model *refuse[3] = {vb, base, vh}, *take[3] = {va, va2, ma};
  for (int i = 0; i < 3; i++) {
    fg_snapshot *x = NULL;
    CHECK_EQ_INT(fg_snapshot_load(refuse[i], path, &x, &err), FG_ERR_MISMATCH);
    CHECK(x == NULL);
    CHECK_MSG(fg_snapshot_load(take[i], path, &x, &err) == FG_OK, "load %d: %s", i, err.msg);
    fg_snapshot_free(x);
  }
  remove(path);
  fg_snapshot_free(snap);
  fg_session_free(sa);
  fg_session_free(sb);
  fg_model_free(vh);
  fg_model_free(vb);
  fg_model_free(va2);
  fg_model_free(va);
  fg_model_free(ma);
  fg_model_free(base);
}

/* 7. */
static void expect(const fg_model *base, const fg_lora *l, size_t n, fg_status want, const char *words) {
  fg_model *v = (fg_model *)(uintptr_t)1;
  fg_error err;
  const fg_status st = fg_model_with_loras(base, l, n, &v, &err);
  CHECK_MSG(st == want, "want %s, got %s: %s", fg_status_str(want), fg_status_str(st), err.msg);
  CHECK(v == NULL);
  CHECK_MSG(strstr(err.msg, words) != NULL, "message '%s' lacks '%s'", err.msg, words);
}

static void test_misuse(const char *base_path, const char *ad_a, const char *other_shape) {
  const fg_lora la = {ad_a, 1.0f};
  fg_model *base = load(base_path, NULL, 0, 0), *merged = load(base_path, &la, 1, FG_LORA_MERGE_F32);
  fg_model *v = (fg_model *)(uintptr_t)1;
  CHECK_EQ_INT(fg_model_with_loras(NULL, &la, 1, &v, NULL), FG_ERR_INVALID_ARG);
  CHECK(v == NULL);
  CHECK_EQ_INT(fg_model_with_loras(base, &la, 1, NULL, NULL), FG_ERR_INVALID_ARG);
  expect(NULL, &la, 1, FG_ERR_INVALID_ARG, "base is NULL");
  expect(base, NULL, 1, FG_ERR_INVALID_ARG, "loras is NULL");
  expect(base, &la, 0, FG_ERR_INVALID_ARG, "no adapter");
  expect(merged, &la, 1, FG_ERR_UNSUPPORTED, "merged");
  const fg_lora missing = {tmp_path("missing.gguf"), 1.0f}, shape = {other_shape, 1.0f}, nan = {ad_a, NAN};
  const fg_lora nopath = {NULL, 1.0f};
  expect(base, &missing, 1, FG_ERR_IO, "missing.gguf");
  expect(base, &shape, 1, FG_ERR_FORMAT, other_shape);
  expect(base, &nan, 1, FG_ERR_INVALID_ARG, "not finite");
  expect(base, &nopath, 1, FG_ERR_INVALID_ARG, "no path");
  /* a model file given as an adapter */
  const fg_lora model_file = {base_path, 1.0f};
  expect(base, &model_file, 1, FG_ERR_FORMAT, "not an adapter");
  /* every allocation failing in turn: FG_ERR_NOMEM, no view, the base untouched (ASan checks leaks) */
  int n_nomem = 0;
  for (uint64_t k = 1; k < 500; k++) {
    fg_model *x = NULL;
    fg_alloc_fail_after(k);
    const fg_status st = fg_model_with_loras(base, &la, 1, &x, NULL);
    fg_alloc_fail_after(0);
    if (st == FG_OK) {
      fg_model_free(x);
      break;
    }
    CHECK_MSG(st == FG_ERR_NOMEM, "allocation %llu: %s", (unsigned long long)k, fg_status_str(st));
    CHECK(x == NULL);
    n_nomem++;
  }
  CHECK(n_nomem > 3);
  CHECK_EQ_INT((int)atomic_load(&base->refs), 1);
  fg_model_free(merged);
  fg_model_free(base);
}

/* the small preset in Q4_K, as test_lora makes it (another shape than tiny) */
static int ensure_small(const char *path) {
  if (fg_test_exists(path)) return 0;
  fg_gen_params p;
  fg_gen_params_init(&p);
  p.preset = "small";
  p.type = FG_TYPE_Q4_K;
  p.seed = 1;
  fg_error err;
  if (fg_gen_model(&p, path, &err) == FG_OK) return 0;
  fprintf(stderr, "gen %s: %s\n", path, err.msg);
  return 1;
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "%stest-lora-view-%d", fg_test_model_path(""), (int)getpid());
  char f32[4200], q8[4200], small[4200];
  snprintf(f32, sizeof f32, "%s", fg_test_model_path("tiny-f32.gguf"));
  snprintf(q8, sizeof q8, "%s", fg_test_model_path("tiny-q8_0.gguf"));
  snprintf(small, sizeof small, "%s", fg_test_model_path("lora-small-q4_k.gguf"));
  if (fg_test_ensure_model("tiny-f32.gguf", "tiny", "f32", 1) != 0 || fg_test_ensure_model("tiny-q8_0.gguf", "tiny", "q8_0", 1) != 0 ||
      ensure_small(small) != 0)
    return 1;
  char a[4200], b[4200], a8[4200], b8[4200], other[4200];
  snprintf(a, sizeof a, "%s", tmp_path("a.gguf"));
  snprintf(b, sizeof b, "%s", tmp_path("b.gguf"));
  snprintf(a8, sizeof a8, "%s", tmp_path("a8.gguf"));
  snprintf(b8, sizeof b8, "%s", tmp_path("b8.gguf"));
  snprintf(other, sizeof other, "%s", tmp_path("other.gguf"));
  gen_lora(f32, a, 11);
  gen_lora(f32, b, 12);
  gen_lora(q8, a8, 13);
  gen_lora(q8, b8, 14);
  gen_lora(small, other, 15);
  test_equal_to_loaded(f32, a, b);
  test_equal_to_loaded(q8, a8, b8);
  test_threads(q8, a8, b8);
  test_free_orders(f32, a);
  test_snapshots(f32, a, b);
  test_misuse(f32, a, other);
  const char *files[] = {a, b, a8, b8, other};
  for (size_t i = 0; i < 5; i++) remove(files[i]);
  return fg_test_finish("test_lora_view");
}
