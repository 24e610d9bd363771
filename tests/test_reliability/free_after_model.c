/* free_after_model.c — test_reliability, section 5: handles freed after their model. */
#include "reliability.h"

// ----------------------------------------------------------------------------------------------
// 5. Handles freed after their model

/* Sessions, snapshots and engines keep their model (and engines their catalog) alive, so any
 * teardown order is safe (under ASan any model access after the last free would fail this test).
 * test_lifetime uses the handles after each free and covers every order. */
void test_free_after_model(void) {
  printf("5. handles freed after their model\n");
  fg_model *m = NULL;
  CHECK_OK(fg_model_load(fg_test_model_path("tiny-f32.gguf"), NULL, &m, NULL));
  fg_catalog *c = NULL;
  CHECK_OK(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &c, NULL));
  fg_session_params p = small_params(8, 2, 256);
  fg_session *s = NULL, *f = NULL;
  fg_snapshot *snap = NULL;
  CHECK_OK(fg_session_create(m, &p, &s, NULL));
  CHECK_OK(fg_session_prefill(s, ref.prefix, 40, NULL));
  CHECK_OK(fg_session_snapshot(s, &snap));
  CHECK_OK(fg_session_fork(snap, &p, &f, NULL));
  fg_nlu_params np = nlu_params(NULL);
  fg_nlu *e = NULL;
  CHECK_OK(fg_nlu_create(m, c, &np, &e, NULL));
  fg_model_free(m);
  fg_session_free(f);
  fg_snapshot_free(snap);
  fg_session_free(s);
  fg_nlu_free(e);
  fg_catalog_free(c);
}
