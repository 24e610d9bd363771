/* test_nlu_fork.c — fg_nlu_fork: an engine that starts from another engine's prefix state (what
 * `fgemma serve` runs every request on). A fork answers exactly as an engine made with fg_nlu_create
 * and the same params (unconstrained, call-only, call-or-text), needs no prefill, shares the
 * source's KV blocks, outlives its source, can be made and used on several threads at once, and
 * honours its own abort callback. */
#include "fgemma.h"
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define N_UTT 4 /* of the 12 demo utterances */
#define N_THREADS 3

static char *g_utts[N_UTT];

/* answer + raw + stop of one ask, malloc'd; "" when the ask fails (no CHECK here: it runs on threads) */
static char *answer(fg_nlu *e, const char *utt) {
  fg_nlu_result r;
  fg_status st = fg_nlu_ask(e, utt, strlen(utt), &r);
  if (st != FG_OK) return strdup("");
  size_t n = strlen(r.json) + strlen(r.raw) + strlen(fg_nlu_stop_name(r.stop)) + 8;
  char *s = malloc(n);
  snprintf(s, n, "%s|%s|%s", r.json, r.raw, fg_nlu_stop_name(r.stop));
  return s;
}

typedef struct job {
  const fg_nlu *src;
  fg_nlu_params params;
  char **expected; /* (n_use) */
  int n_use;
  int failures;
} job;

static void *run_fork(void *arg) {
  job *j = arg;
  fg_nlu *f = NULL;
  fg_error err;
  if (fg_nlu_fork(j->src, &j->params, &f, &err) != FG_OK) {
    j->failures++;
    return NULL;
  }
  for (int round = 0; round < 1; round++)
    for (int i = 0; i < j->n_use; i++) {
      char *a = answer(f, g_utts[i]);
      if (strcmp(a, j->expected[i]) != 0) j->failures++;
      free(a);
    }
  fg_nlu_free(f);
  return NULL;
}

static atomic_int g_polls;
static bool abort_after(void *ud) {
  (void)ud;
  return atomic_fetch_add(&g_polls, 1) >= 3;
}

/* argument "threads" (the TSan run): only the call-or-text mode, the one that exercises every part */
int main(int argc, char **argv) {
  const bool only_one = argc > 1 && strcmp(argv[1], "threads") == 0;
  const int n_use = only_one ? 2 : N_UTT; /* utterances asked per engine */
  if (fg_test_ensure_model("tiny-vocab-f32.gguf", "tiny", "f32", 1) != 0) return 1;
  fg_model *m = NULL;
  fg_error err;
  CHECK_OK(fg_model_load(fg_test_model_path("tiny-vocab-f32.gguf"), NULL, &m, &err));
  if (!m) return fg_test_finish("test_nlu_fork");
  fg_catalog *c = fg_test_catalog_file("tv-catalog-small.json");
  char path[512];
  snprintf(path, sizeof path, "%s/tests/data/nlu/utterances-de.txt", FG_SOURCE_DIR);
  size_t ul;
  char *text = fg_test_read_file(path, &ul);
  int n_utt = 0, n_lines = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"), n_lines++)
    if (n_lines % 3 == 0 && n_utt < N_UTT) g_utts[n_utt++] = line;
  CHECK_EQ_INT(n_utt, N_UTT);

  /* the fresh engines below load the base's prefix from a snapshot file (test_engine: a loaded prefix
   * answers as a prefilled one), so that only the base prefills */
  char snap[512];
  snprintf(snap, sizeof snap, "%s/test_nlu_fork_%d.fgsnap", FG_TEST_MODELS, (int)getpid());
  remove(snap);
  fg_nlu_params base_p;
  fg_nlu_params_init(&base_p);
  base_p.snapshot_path = snap;
  base_p.max_tokens = 12;
  base_p.session.n_threads = 1;
  fg_nlu *base = NULL;
  CHECK_OK(fg_nlu_create(m, c, &base_p, &base, &err));
  fg_nlu_info bi;
  CHECK_OK(fg_nlu_get_info(base, &bi));

  const uint32_t modes[3] = {FG_NLU_CONSTRAIN_OFF, FG_NLU_CONSTRAIN_CALL_ONLY, FG_NLU_CONSTRAIN_CALL_OR_TEXT};
  for (int k = only_one ? 2 : 0; k < 3; k++) {
    fg_nlu_params p = base_p;
    p.constrain = modes[k];
    p.max_tokens = 10;
    fg_nlu *fresh = NULL, *fork = NULL, *fork2 = NULL;
    CHECK_OK(fg_nlu_create(m, c, &p, &fresh, &err));
    fg_nlu_info fresh_info;
    CHECK_OK(fg_nlu_get_info(fresh, &fresh_info));
    CHECK(fresh_info.prefix_from_file);
    CHECK_OK(fg_nlu_fork(base, &p, &fork, &err));
    fg_nlu_info fi;
    CHECK_OK(fg_nlu_get_info(fork, &fi));
    CHECK_EQ_INT(fi.prefix_tokens, bi.prefix_tokens);
    CHECK(!fi.prefix_from_file && !fi.snapshot_written);
    CHECK_EQ_INT(fg_snapshot_position(fg_nlu_snapshot(fork)), bi.prefix_tokens);
    char *expected[N_UTT];
    for (int i = 0; i < n_use; i++) {
      expected[i] = answer(fresh, g_utts[i]);
      CHECK_MSG(expected[i][0] == '{', "mode %u, '%s': the fresh engine failed", modes[k], g_utts[i]);
      char *a = answer(fork, g_utts[i]);
      CHECK_MSG(strcmp(a, expected[i]) == 0, "mode %u, '%s': fork %s, fresh engine %s", modes[k], g_utts[i], a,
                expected[i]);
      free(a);
    }
    /* a fork of a fork (params NULL = the source's), then the source freed first */
    CHECK_OK(fg_nlu_fork(fork, NULL, &fork2, &err));
    fg_nlu_free(fork);
    for (int i = 0; i < n_use; i++) {
      char *a = answer(fork2, g_utts[i]);
      CHECK_MSG(strcmp(a, expected[i]) == 0, "fork of a fork, mode %u: %s vs %s", modes[k], a, expected[i]);
      free(a);
    }
    /* the prefix blocks are shared with the source, not copied */
    fg_session_stats st;
    fg_session *probe = NULL;
    CHECK_OK(fg_session_fork(fg_nlu_snapshot(fork2), NULL, &probe, &err));
    CHECK_OK(fg_session_get_stats(probe, &st));
    CHECK(st.kv_blocks > 0 && st.kv_blocks_shared == st.kv_blocks);
    fg_session_free(probe);

    /* forks made and used on several threads at once give the same answers (call-or-text only:
     * it runs the constraint, speculation and the unconstrained stretches; the others cost time) */
    pthread_t th[N_THREADS];
    job jobs[N_THREADS];
    for (int t = 0; t < N_THREADS && modes[k] == FG_NLU_CONSTRAIN_CALL_OR_TEXT; t++) {
      jobs[t] = (job){base, p, expected, n_use, 0};
      CHECK(pthread_create(&th[t], NULL, run_fork, &jobs[t]) == 0);
    }
    for (int t = 0; t < N_THREADS && modes[k] == FG_NLU_CONSTRAIN_CALL_OR_TEXT; t++) {
      pthread_join(th[t], NULL);
      CHECK_MSG(jobs[t].failures == 0, "mode %u, thread %d: %d answers differ", modes[k], t, jobs[t].failures);
    }
    for (int i = 0; i < n_use; i++) free(expected[i]);
    fg_nlu_free(fresh);
    fg_nlu_free(fork2);
  }

  /* a fork's own abort callback stops its ask; the source and a later ask are unaffected */
  fg_nlu_params ap = base_p;
  ap.session.abort_cb = abort_after;
  fg_nlu *fa = NULL;
  CHECK_OK(fg_nlu_fork(base, &ap, &fa, &err));
  fg_nlu_result r;
  atomic_store(&g_polls, 0);
  CHECK_EQ_INT(fg_nlu_ask(fa, g_utts[0], strlen(g_utts[0]), &r), FG_ERR_ABORTED);
  atomic_store(&g_polls, -1000000);
  char *after = answer(fa, g_utts[0]), *ref = answer(base, g_utts[0]);
  CHECK_MSG(strcmp(after, ref) == 0, "after an abort: %s vs %s", after, ref);
  free(after);
  free(ref);
  fg_nlu_free(fa);

  /* bad arguments */
  fg_nlu *bad = (fg_nlu *)1;
  CHECK_EQ_INT(fg_nlu_fork(NULL, NULL, &bad, &err), FG_ERR_INVALID_ARG);
  CHECK(bad == NULL && err.msg[0]);
  CHECK_EQ_INT(fg_nlu_fork(base, NULL, NULL, &err), FG_ERR_INVALID_ARG);
  fg_nlu_params wrong = base_p;
  wrong.constrain = 7;
  CHECK_EQ_INT(fg_nlu_fork(base, &wrong, &bad, &err), FG_ERR_INVALID_ARG);

  fg_nlu_free(base);
  remove(snap);
  fg_catalog_free(c);
  fg_model_free(m);
  free(text);
  return fg_test_finish("test_nlu_fork");
}
