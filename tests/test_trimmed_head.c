/* test_trimmed_head.c — a head whose rows are mostly all zero (a model trained on part of the
 * vocabulary, like tv-mini) is computed over its other rows only (fg_model_head, FG_MODEL_DENSE_HEAD).
 * The model: the chain fixture of testutil (7 non-zero rows of 262,144), in F32, Q8_0 and Q4_0.
 * Checks: the rows found; logits bit for bit equal to the dense head on those rows and zero elsewhere;
 * close to the reference forward; greedy ids; the NLU engine (single and multi-row heads, with and
 * without speculation) answering exactly as with the dense head; failing allocations at load; and a
 * full vocabulary left alone. */
#define FG_EXPERIMENTAL
#include "fg_internal.h" /* fg_alloc_fail_after */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int32_t k_chain[] = {2, 106, 818, 3823, 8864, 5000, 6000, 107};
#define N_CHAIN (sizeof k_chain / sizeof k_chain[0])

static fg_model *load(const char *path, uint32_t flags) {
  fg_model_params p;
  fg_model_params_init(&p);
  p.flags = flags;
  fg_model *m = NULL;
  fg_error err = {0};
  CHECK_MSG(fg_model_load(path, &p, &m, &err) == FG_OK, "load %s: %s", path, err.msg);
  return m;
}

static bool is_head_row(int32_t v) {
  for (size_t i = 1; i < N_CHAIN; i++)
    if (k_chain[i] == v) return true;
  return false;
}

/* Logits after ids on one thread. out: (n_vocab) */
static void logits_after(const fg_model *m, const int32_t *ids, size_t n, float *out, uint32_t n_vocab) {
  fg_session_params sp;
  fg_session_params_init(&sp);
  sp.n_threads = 1;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &sp, &s, NULL));
  if (!s) return;
  CHECK_OK(fg_session_prefill(s, ids, n, NULL));
  const float *lg = fg_session_logits(s);
  if (lg) memcpy(out, lg, n_vocab * sizeof *out);
  fg_session_free(s);
}

static void compare_with_dense(const char *path, const char *label) {
  fg_model *t = load(path, 0), *d = load(path, FG_MODEL_DENSE_HEAD);
  if (!t || !d) {
    fg_model_free(t);
    fg_model_free(d);
    return;
  }
  fg_model_info it, id;
  CHECK_OK(fg_model_get_info(t, &it));
  CHECK_OK(fg_model_get_info(d, &id));
  CHECK_MSG(it.head_rows == N_CHAIN - 1, "%s: %u head rows found, expected %zu", label, it.head_rows, N_CHAIN - 1);
  CHECK_EQ_INT(id.head_rows, id.n_vocab);
  CHECK(it.decode_bytes < id.decode_bytes);
  const uint32_t nv = it.n_vocab;
  float *a = calloc(nv, sizeof *a), *b = calloc(nv, sizeof *b), *r = calloc(nv, sizeof *r);
  const int32_t prompts[][4] = {{2, 106, 818, 3823}, {2, 4000, 107, 9}, {2, 8864, 5000, 6000}};
  for (size_t p = 0; p < 3 && a && b && r; p++) {
    logits_after(t, prompts[p], 4, a, nv);
    logits_after(d, prompts[p], 4, b, nv);
    size_t bad_live = 0, bad_zero = 0;
    for (uint32_t v = 0; v < nv; v++) {
      if (is_head_row((int32_t)v)) bad_live += memcmp(&a[v], &b[v], sizeof(float)) != 0;
      else bad_zero += !(a[v] == 0.0f && !signbit(a[v]) && b[v] == 0.0f);
    }
    CHECK_MSG(bad_live == 0 && bad_zero == 0, "%s prompt %zu: %zu head rows differ from the dense head, %zu others not 0",
              label, p, bad_live, bad_zero);
    const size_t at = 3;
    CHECK_OK(fg_reference_logits(t, prompts[p], 4, &at, 1, r, NULL));
    /* quantized types: the fast path quantizes activations per block as the kernels do, as elsewhere */
    const double tol = strcmp(label, "f32") == 0 ? 1e-4 : 2e-2;
    CHECK_MSG(fg_test_rel_diff(a, r, nv) < tol, "%s prompt %zu: %.3g from the reference forward", label, p,
              fg_test_rel_diff(a, r, nv));
  }
  /* greedy decoding follows the chain from its first token */
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(t, NULL, &s, NULL));
  int32_t next = -1;
  if (s) CHECK_OK(fg_session_prefill(s, k_chain, 1, &next));
  for (size_t i = 1; s && i < N_CHAIN; i++) {
    CHECK_MSG(next == k_chain[i], "%s: greedy step %zu gave %d, the chain has %d", label, i, next, k_chain[i]);
    if (i + 1 < N_CHAIN) CHECK_OK(fg_session_step(s, next, &next));
  }
  fg_session_free(s);
  free(a), free(b), free(r);
  fg_model_free(t);
  fg_model_free(d);
}

/* Under an emulator (FG_TEST_EMULATED: the ARM runs under qemu-user) the engine comparison runs in
 * call-only mode only (both speculation settings); native runs take all three modes. */
static bool g_emulated;

/* The engine (its own single-row and multi-row heads) answers identically with either head. */
static void compare_engine(const char *path) {
  fg_model *t = load(path, 0), *d = load(path, FG_MODEL_DENSE_HEAD);
  fg_catalog *cat = fg_test_catalog_file("tv-catalog-small.json");
  for (uint32_t spec = FG_NLU_SPECULATE_OFF; t && d && cat && spec <= FG_NLU_SPECULATE_ON; spec++) {
    static const uint32_t modes[] = {FG_NLU_CONSTRAIN_OFF, FG_NLU_CONSTRAIN_CALL_ONLY, FG_NLU_CONSTRAIN_CALL_OR_TEXT};
    for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
      const uint32_t mode = modes[mi];
      if (g_emulated && mode != FG_NLU_CONSTRAIN_CALL_ONLY) continue;
      fg_nlu_params np;
      fg_nlu_params_init(&np);
      np.session.n_threads = 2;
      np.max_tokens = 12;
      np.constrain = mode;
      np.speculate = spec;
      np.flags = FG_NLU_NO_ANSWER_CACHE;
      fg_nlu *et = NULL, *ed = NULL;
      CHECK_OK(fg_nlu_create(t, cat, &np, &et, NULL));
      CHECK_OK(fg_nlu_create(d, cat, &np, &ed, NULL));
      static const char *const utts[] = {"Schalte auf ZDF um", "Ton aus", "Öffne Netflix"};
      for (size_t u = 0; et && ed && u < 3; u++) {
        fg_nlu_result rt, rd;
        CHECK_OK(fg_nlu_ask(et, utts[u], strlen(utts[u]), &rt));
        char *raw_t = strdup(rt.raw), *json_t = strdup(rt.json);
        CHECK_OK(fg_nlu_ask(ed, utts[u], strlen(utts[u]), &rd));
        CHECK_MSG(strcmp(raw_t, rd.raw) == 0 && strcmp(json_t, rd.json) == 0,
                  "mode %u speculate %u '%s': trimmed %s / dense %s", mode, spec, utts[u], raw_t, rd.raw);
        free(raw_t), free(json_t);
      }
      fg_nlu_free(et);
      fg_nlu_free(ed);
    }
  }
  fg_catalog_free(cat);
  fg_model_free(t);
  fg_model_free(d);
}

/* Every allocation of a load failing in turn: FG_ERR_NOMEM and nothing leaked, or a good model. */
static void test_nomem(const char *path) {
  int nomem = 0, ok = 0;
  for (uint64_t k = 1; k < 200 && ok == 0; k++) {
    fg_alloc_fail_after(k);
    fg_model *m = NULL;
    const fg_status st = fg_model_load(path, NULL, &m, NULL);
    fg_alloc_fail_after(0);
    if (st == FG_ERR_NOMEM) {
      nomem++;
      CHECK(m == NULL);
    } else {
      CHECK_OK(st);
      fg_model_info info;
      if (m && fg_model_get_info(m, &info) == FG_OK) CHECK_EQ_INT(info.head_rows, N_CHAIN - 1);
      ok = 1;
    }
    fg_model_free(m);
  }
  CHECK(nomem > 0 && ok == 1);
}

int main(void) {
  const char *emu = getenv("FG_TEST_EMULATED");
  g_emulated = emu && *emu && strcmp(emu, "0") != 0;
  if (fg_test_ensure_chain_model("chain-head.gguf", k_chain, N_CHAIN, NULL) != 0) return 1;
  char f32[4096], q8[4096], q4[4096];
  snprintf(f32, sizeof f32, "%s", fg_test_model_path("chain-head.gguf"));
  snprintf(q8, sizeof q8, "%s.%d.q8_0.gguf", fg_test_model_path("chain-head"), (int)getpid());
  snprintf(q4, sizeof q4, "%s.%d.q4_0.gguf", fg_test_model_path("chain-head"), (int)getpid());
  fg_convert_params cp;
  fg_convert_params_init(&cp);
  cp.type = 8;
  CHECK_OK(fg_convert(f32, q8, &cp, NULL));
  cp.type = 2;
  CHECK_OK(fg_convert(f32, q4, &cp, NULL));

  compare_with_dense(f32, "f32");
  compare_with_dense(q8, "q8_0");
  compare_with_dense(q4, "q4_0");
  compare_engine(f32);
  test_nomem(f32);

  /* a full vocabulary: the sample finds no zero row, every row is computed */
  if (fg_test_ensure_model("tiny-vocab-f32.gguf", "tiny", "f32", 1) == 0) {
    fg_model *m = load(fg_test_model_path("tiny-vocab-f32.gguf"), 0);
    fg_model_info info;
    if (m && fg_model_get_info(m, &info) == FG_OK) CHECK_EQ_INT(info.head_rows, info.n_vocab);
    fg_model_free(m);
  }
  remove(q8);
  remove(q4);
  return fg_test_finish("test_trimmed_head");
}
