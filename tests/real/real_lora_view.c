/* real_lora_view.c — a model view on the real google/gemma-3-270m Q4_K_M with the committed tv-270m
 * adapter (models/tv-270m-lora.gguf, which also renames ids 46..52 to FunctionGemma's control tokens).
 * Usage: real_lora_view BASE.gguf ADAPTER.gguf (tests/real_lora.cmake passes both).
 *   - the view's logits over a short prompt equal those of the base loaded with the adapter (one thread,
 *     then two), bit for bit, and so do the fingerprints;
 *   - the view has its own vocabulary (the renamed control tokens are single ids), the base keeps its own;
 *   - the base's logits are the same before and after the view. */
#include "model/model.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#define N_IDS 24

static float *logits_of(const fg_model *m, const int32_t *ids, size_t n, uint32_t threads) {
  fg_session_params sp;
  fg_session_params_init(&sp);
  sp.n_threads = threads;
  sp.n_ctx = 64;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &sp, &s, NULL));
  float *out = malloc(sizeof(float) * m->hp.n_vocab);
  if (s && fg_session_prefill(s, ids, n, NULL) == FG_OK) memcpy(out, fg_session_logits(s), sizeof(float) * m->hp.n_vocab);
  fg_session_free(s);
  return out;
}

static size_t count_ids(const fg_model *m, const char *text) {
  int32_t ids[64];
  size_t n = 0;
  CHECK_OK(fg_tokenize(m, text, strlen(text), 0, ids, 64, &n));
  return n;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: real_lora_view BASE.gguf ADAPTER.gguf\n");
    return 2;
  }
  fg_error err;
  fg_model *base = NULL, *loaded = NULL, *v = NULL;
  const fg_lora l = {argv[2], 1.0f};
  fg_model_params p;
  fg_model_params_init(&p);
  if (fg_model_load(argv[1], &p, &base, &err) != FG_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  p.loras = &l;
  p.n_loras = 1;
  CHECK_MSG(fg_model_load(argv[1], &p, &loaded, &err) == FG_OK, "%s", err.msg);
  int32_t ids[N_IDS];
  size_t n = 0;
  const char *text = "<start_of_turn>user\nmach bitte den Fernseher lauter<end_of_turn>\n<start_of_turn>model\n";
  CHECK_OK(fg_tokenize(base, text, strlen(text), FG_TOKENIZE_ADD_BOS, ids, N_IDS, &n));
  float *b0 = logits_of(base, ids, n, 1);
  CHECK_MSG(fg_model_with_loras(base, &l, 1, &v, &err) == FG_OK, "%s", err.msg);
  if (!loaded || !v) return fg_test_finish("real_lora_view");
  CHECK(memcmp(v->info.fingerprint, loaded->info.fingerprint, 16) == 0);
  CHECK(memcmp(v->info.fingerprint, base->info.fingerprint, 16) != 0);
  CHECK(v->vocab != base->vocab && v->packed == base->packed);
  CHECK_EQ_INT((int)count_ids(v, "<start_function_call>"), 1);
  CHECK((int)count_ids(base, "<start_function_call>") > 1);
  for (uint32_t th = 1; th <= 2; th++) {
    float *x = logits_of(v, ids, n, th), *y = logits_of(loaded, ids, n, th);
    CHECK_MSG(memcmp(x, y, sizeof(float) * base->hp.n_vocab) == 0, "view and loaded model differ (%u threads)", th);
    CHECK(memcmp(x, b0, sizeof(float) * base->hp.n_vocab) != 0);
    free(x);
    free(y);
  }
  float *b1 = logits_of(base, ids, n, 1);
  CHECK(memcmp(b0, b1, sizeof(float) * base->hp.n_vocab) == 0);
  free(b0);
  free(b1);
  fg_model_free(base); /* the view keeps it */
  fg_model_free(loaded);
  fg_model_free(v);
  return fg_test_finish("real_lora_view");
}
