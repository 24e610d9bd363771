/* server.c — `fgemma serve` (docs/SERVER.md): libmicrohttpd receives requests on its own threads,
 * a request with a body is validated there and queued (bounded), its connection suspended; a fixed
 * pool of workers answers queued requests on engines forked from a per-catalog prefix state
 * (fg_nlu_fork), then resumes the connection with the answer. Includes only fgemma.h, cJSON and
 * microhttpd.
 *
 * This file starts, serves and drains; the rest, in data-flow order: http.c (the handler, connections),
 * requests.c (bodies into jobs), catalogs.c (the catalog cache and its engines), worker.c (answering
 * a job), answers.c (error bodies, sending, counting), get_endpoints.c (models, health, metrics),
 * strbuf.c (string builder, clock, hashing); serve_internal.h holds their shared types. */
#include "serve_internal.h"

// ----------------------------------------------------------------------------------------------
// start, serve, drain

int fg_serve_run(const serve_config *cfg, const fg_model *model) {
  /* signals: SIGTERM/SIGINT are taken by sigwait on this thread; every thread started below inherits
   * the mask. SIGPIPE: a client gone mid-answer is not a reason to die. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }

  server *s = calloc(1, sizeof *s);
  if (!s) return fprintf(stderr, "fgemma: error: out of memory\n"), 1;
  s->cfg = cfg;
  s->model = model;
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->cat_mu, NULL);
  pthread_mutex_init(&s->conn_mu, NULL);
  pthread_mutex_init(&s->met_mu, NULL);
  pthread_cond_init(&s->cv_work, NULL);
  pthread_cond_init(&s->cv_idle, NULL);
  pthread_cond_init(&s->cat_cv, NULL);
  s->queue = calloc(cfg->queue, sizeof *s->queue);
  s->workers = calloc(cfg->parallel, sizeof *s->workers);
  int rc = 1;
  if (!s->queue || !s->workers) {
    fprintf(stderr, "fgemma: error: out of memory\n");
    goto done;
  }
  for (; s->n_workers < cfg->parallel; s->n_workers++)
    if (pthread_create(&s->workers[s->n_workers], NULL, worker_main, s) != 0) {
      fprintf(stderr, "fgemma: error: cannot start worker threads\n");
      goto done;
    }
  s->reaper_on = pthread_create(&s->reaper, NULL, reaper_main, s) == 0;

  struct sockaddr_in a4;
  struct sockaddr_in6 a6;
  memset(&a4, 0, sizeof a4);
  memset(&a6, 0, sizeof a6);
  const struct sockaddr *sa;
  unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  if (inet_pton(AF_INET, cfg->host, &a4.sin_addr) == 1) {
    a4.sin_family = AF_INET;
    a4.sin_port = htons(cfg->port);
    sa = (const struct sockaddr *)&a4;
  } else if (inet_pton(AF_INET6, cfg->host, &a6.sin6_addr) == 1) {
    a6.sin6_family = AF_INET6;
    a6.sin6_port = htons(cfg->port);
    sa = (const struct sockaddr *)&a6;
    flags |= MHD_USE_IPv6;
  } else {
    fprintf(stderr, "fgemma: error: --host %s: not an IPv4 or IPv6 address\n", cfg->host);
    goto done;
  }
  s->daemon = MHD_start_daemon(flags, cfg->port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, sa,
                               MHD_OPTION_THREAD_POOL_SIZE, (unsigned)2, MHD_OPTION_CONNECTION_LIMIT,
                               (unsigned)cfg->max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
                               (unsigned)cfg->conn_timeout_s, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                               MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_LISTEN_BACKLOG_SIZE,
                               (unsigned)1024, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL, MHD_OPTION_END);
  if (!s->daemon) {
    fprintf(stderr, "fgemma: error: cannot listen on %s port %u: %s\n", cfg->host, (unsigned)cfg->port, strerror(errno));
    goto done;
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
  const unsigned port = di ? di->port : cfg->port;
  printf("fgemma serve: listening on http://%s%s%s:%u (model %s, %u workers)\n", strchr(cfg->host, ':') ? "[" : "",
         cfg->host, strchr(cfg->host, ':') ? "]" : "", port, cfg->model_id, cfg->parallel);
  fflush(stdout);

  int sig = 0;
  sigwait(&set, &sig);
  fprintf(stderr, "fgemma serve: %s: finishing requests in flight, refusing new ones\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  atomic_store(&s->stopping, true);
  /* drain: queued and running requests finish and are sent (bounded by the request timeout) */
  const double until = now_s() + cfg->timeout_ms / 1e3 + 5;
  pthread_mutex_lock(&s->mu);
  while ((s->q_len || s->busy || s->open_jobs) && now_s() < until) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&s->cv_idle, &s->mu, &ts);
  }
  pthread_mutex_unlock(&s->mu);
  rc = 0;

done:
  pthread_mutex_lock(&s->mu);
  s->quit = true;
  pthread_cond_broadcast(&s->cv_work);
  pthread_mutex_unlock(&s->mu);
  for (uint32_t i = 0; i < s->n_workers; i++) pthread_join(s->workers[i], NULL);
  if (s->reaper_on) pthread_join(s->reaper, NULL);
  if (s->daemon) MHD_stop_daemon(s->daemon);
  for (cat_entry *e = s->cats, *nx; e; e = nx) {
    nx = e->next;
    cat_free(e);
  }
  for (conn_track *t = s->conns, *nx; t; t = nx) {
    nx = t->next;
    free(t);
  }
  free(s->queue);
  free(s->workers);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->cat_mu);
  pthread_mutex_destroy(&s->conn_mu);
  pthread_mutex_destroy(&s->met_mu);
  pthread_cond_destroy(&s->cv_work);
  pthread_cond_destroy(&s->cv_idle);
  pthread_cond_destroy(&s->cat_cv);
  free(s);
  if (rc == 0) fprintf(stderr, "fgemma serve: stopped\n");
  return rc;
}
