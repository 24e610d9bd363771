/* abort.c — test_reliability, section 3: a long prefill aborted from another thread. */
#include "reliability.h"

// ----------------------------------------------------------------------------------------------
// 3. Abort from another thread

typedef struct abort_ctl {
  atomic_int stop;        /* set by the watcher; read by the callback */
  atomic_uint polls;      /* callback invocations */
  atomic_int done;        /* the prefill returned */
  unsigned polls_before;  /* watcher sets stop after this many polls */
  double t_stop;          /* when stop was set (watcher thread) */
} abort_ctl;

static bool abort_poll(void *ud) {
  abort_ctl *c = ud;
  atomic_fetch_add(&c->polls, 1);
  return atomic_load(&c->stop) != 0;
}

static void *abort_watcher(void *ud) {
  abort_ctl *c = ud;
  while (!atomic_load(&c->done) && atomic_load(&c->polls) < c->polls_before) {
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
  c->t_stop = fg_time_s();
  atomic_store(&c->stop, 1);
  return NULL;
}

static void abort_run(uint32_t n_threads) {
  enum { N_LONG = 1500 };
  int32_t *ids = malloc(sizeof(int32_t) * N_LONG);
  random_ids(ids, N_LONG);
  abort_ctl ctl;
  memset(&ctl, 0, sizeof ctl);
  ctl.polls_before = 300; /* 6 layers per batch of 8: about 400 of the 1500 tokens in */
  fg_session_params p = small_params(8, n_threads, 2048);
  p.abort_cb = abort_poll;
  p.abort_user_data = &ctl;
  fg_session *s = NULL, *r = NULL;
  CHECK_OK(fg_session_create(g_model, &p, &s, NULL));
  CHECK_OK(fg_session_prefill(s, ref.prefix, 10, NULL));
  fx.s = s;
  record_session();

  pthread_t th;
  CHECK(pthread_create(&th, NULL, abort_watcher, &ctl) == 0);
  fg_status st = fg_session_prefill(s, ids, N_LONG, NULL);
  const double t_ret = fg_time_s();
  atomic_store(&ctl.done, 1);
  pthread_join(th, NULL);
  CHECK_MSG(st == FG_ERR_ABORTED, "%u threads: the long prefill returned %s", n_threads, fg_status_str(st));
  CHECK(strstr(fg_session_errmsg(s), "abort") != NULL);
  check_unchanged("aborted prefill");
  const unsigned polls = atomic_load(&ctl.polls);
  printf("  %u thread(s): aborted after %u polls (of ~%u), %.3f ms after the flag was set\n", n_threads, polls,
         (N_LONG / 8 + 1) * g_n_layer, (t_ret - ctl.t_stop) * 1e3);
  CHECK(polls >= ctl.polls_before && polls < (unsigned)(N_LONG / 8) * g_n_layer);

  /* unaborted, the same call completes and matches a session that was never interrupted */
  atomic_store(&ctl.stop, 0);
  CHECK_OK(fg_session_prefill(s, ids, N_LONG, NULL));
  fg_session_params q = small_params(8, n_threads, 2048);
  CHECK_OK(fg_session_create(g_model, &q, &r, NULL));
  CHECK_OK(fg_session_prefill(r, ref.prefix, 10, NULL));
  CHECK_OK(fg_session_prefill(r, ids, N_LONG, NULL));
  CHECK_EQ_INT(fg_session_position(s), 10 + N_LONG);
  CHECK(same_logits(fg_session_logits(s), fg_session_logits(r)));
  fg_session_free(s);
  fg_session_free(r);
  fx.s = NULL;
  free(ids);
}

static bool cancel_progress(uint64_t done, uint64_t total, void *ud) {
  (void)total;
  *(uint64_t *)ud = done;
  return done < 64; /* cancel after the first step */
}

void test_abort(void) {
  printf("3. abort from another thread\n");
  abort_run(1);
  abort_run(2);
  /* the NLU prefix prefill cancelled through the progress callback */
  fg_catalog *c = NULL;
  CHECK_OK(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &c, NULL));
  fg_nlu_params np = nlu_params(NULL);
  uint64_t seen = 0;
  np.progress = cancel_progress;
  np.progress_user_data = &seen;
  fg_nlu *e = (fg_nlu *)&seen;
  fg_error err;
  CHECK_EQ_INT(fg_nlu_create(g_model, c, &np, &e, &err), FG_ERR_ABORTED);
  CHECK(e == NULL && err.msg[0] != '\0' && seen > 0);
  /* an utterance aborted through the session's callback; the engine answers the next one as usual */
  abort_ctl ctl;
  memset(&ctl, 0, sizeof ctl);
  np = nlu_params(NULL);
  np.session.abort_cb = abort_poll;
  np.session.abort_user_data = &ctl;
  CHECK_OK(fg_nlu_create(g_model, c, &np, &e, &err));
  fg_nlu_result r;
  atomic_store(&ctl.stop, 1);
  CHECK_EQ_INT(fg_nlu_ask(e, "turn the lamp on", 16, &r), FG_ERR_ABORTED);
  CHECK(strstr(fg_nlu_errmsg(e), "abort") != NULL);
  atomic_store(&ctl.stop, 0);
  CHECK_OK(fg_nlu_ask(e, "turn the lamp on", 16, &r));
  CHECK(strcmp(r.json, ref.ask_ref) == 0);
  fg_nlu_free(e);
  fg_catalog_free(c);
  free(fx.logits_before);
  fx.logits_before = NULL;
}
