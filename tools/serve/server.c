/* server.c — `fgemma serve` (docs/SERVER.md): libmicrohttpd receives requests on its own threads,
 * a request with a body is validated there and queued (bounded), its connection suspended; a fixed
 * pool of workers answers queued requests on engines forked from a per-catalog prefix state
 * (fg_nlu_fork), then resumes the connection with the answer. Includes only fgemma.h, cJSON and
 * microhttpd. */
#include "serve.h"

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

// ----------------------------------------------------------------------------------------------
// small helpers: clock, string builder, hashing

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct sb {
  char *p;
  size_t n, cap;
  bool oom;
} sb;

static void sb_add(sb *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}
static void sb_puts(sb *b, const char *s) { sb_add(b, s, strlen(s)); }
static void sb_printf(sb *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    sb_add(b, tmp, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb_add(b, big, (size_t)n);
  free(big);
}
/* text as a JSON string literal through fg_json_quote (the CLI's rule: always valid UTF-8) */
static void sb_json_str(sb *b, const char *s, size_t n) {
  size_t need = 0;
  fg_status st = fg_json_quote(s, n, NULL, 0, &need);
  if (st != FG_OK && st != FG_ERR_BUFFER_TOO_SMALL) {
    sb_puts(b, "\"\"");
    return;
  }
  char *q = malloc(need + 1);
  if (!q || fg_json_quote(s, n, q, need + 1, &need) != FG_OK) {
    free(q);
    b->oom = true;
    return;
  }
  sb_add(b, q, need);
  free(q);
}

static uint64_t fnv1a(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* constant-time comparison of a presented key with the configured one (the length leaks, not the bytes) */
static bool key_equal(const char *given, size_t gn, const char *want) {
  size_t wn = strlen(want);
  unsigned char diff = (unsigned char)(gn != wn);
  for (size_t i = 0; i < wn; i++) diff |= (unsigned char)(want[i] ^ (i < gn ? given[i] : 0));
  return diff == 0;
}

// ----------------------------------------------------------------------------------------------
// metrics

enum { EP_CHAT, EP_NLU, EP_MODELS, EP_HEALTH, EP_METRICS, EP_OTHER, EP_N };
static const char *const k_ep_names[EP_N] = {"chat_completions", "nlu", "models", "health", "metrics", "other"};
static const unsigned k_codes[] = {200, 400, 401, 404, 405, 413, 429, 499, 500, 503};
#define N_CODES (sizeof k_codes / sizeof k_codes[0])
static const double k_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
#define N_BUCKETS (sizeof k_buckets / sizeof k_buckets[0])

typedef struct metrics {
  uint64_t requests[EP_N][N_CODES];
  uint64_t hist[2][N_BUCKETS + 1]; /* chat, nlu: answered requests by latency (last = +Inf) */
  double hist_sum[2];
  uint64_t hist_n[2];
  uint64_t prompt_tokens, completion_tokens, chunk_tokens, weight_passes, head_passes;
  uint64_t prefills, evictions, cancelled, timed_out, reaped, rejected_full;
  uint64_t cat_hits;                                    /* requests whose catalog state was in memory */
  uint64_t snap_loads, snap_writes, snap_refused;       /* --snapshot-dir */
} metrics;

// ----------------------------------------------------------------------------------------------
// catalogs, engines, jobs

typedef struct cat_entry cat_entry;
typedef struct job job;

typedef struct engine {
  fg_nlu *nlu;
  uint64_t key;        /* constraint mode, flags, max_tokens */
  _Atomic(job *) job;  /* the request it runs now, read by the abort callback */
  struct engine *next; /* in its catalog's idle list */
} engine;

enum { CAT_BUILDING, CAT_READY, CAT_FAILED };

struct cat_entry {
  uint64_t hash;
  char id[24];          /* "cat-" + 16 hex digits of the hash */
  int state;
  fg_status fail_st;
  char fail_msg[300];
  fg_catalog *catalog;
  fg_nlu *base;         /* prefilled prefix; never asked, only forked */
  uint64_t kv_bytes;    /* the prefix's KV cache */
  uint32_t prefix_tokens;
  uint32_t refs;        /* requests using the entry */
  uint64_t last_used;   /* LRU tick */
  engine *idle;
  uint32_t n_idle;
  bool listed;          /* in the server's table */
  job *builder;         /* the request whose worker prefills the entry (CAT_BUILDING) */
  cat_entry *next;
};

typedef struct conn_track {
  int fd;
  double since;      /* opened, or its last answer was sent */
  double drain_until; /* a refused request's body is being drained until then (0 = not draining) */
  bool in_request;   /* a request head has arrived and is not answered yet */
  bool reaped;
  struct conn_track *prev, *next;
} conn_track;

typedef struct server {
  const serve_config *cfg;
  const fg_model *model;
  struct MHD_Daemon *daemon;
  /* the queue and the workers */
  pthread_mutex_t mu;
  pthread_cond_t cv_work, cv_idle;
  job **queue; /* (cfg->queue) ring */
  size_t q_head, q_len;
  uint32_t busy, open_jobs;
  bool quit;
  atomic_bool stopping;
  pthread_t *workers;
  uint32_t n_workers;
  /* the catalog cache */
  pthread_mutex_t cat_mu;
  pthread_cond_t cat_cv;
  cat_entry *cats;
  uint32_t n_cats, n_idle;
  uint64_t tick;
  /* connections */
  pthread_mutex_t conn_mu;
  conn_track *conns;
  uint32_t n_conns;
  pthread_t reaper;
  bool reaper_on;
  /* metrics */
  pthread_mutex_t met_mu;
  metrics met;
  atomic_ullong next_id;
} server;

enum { TC_AUTO, TC_NONE, TC_REQUIRED, TC_NAMED };

struct job {
  server *srv;
  struct MHD_Connection *conn;
  int fd;
  int ep;
  /* request */
  char *cat_json;    /* canonical tools JSON (NULL with catalog_id) */
  uint64_t hash;
  bool by_id;
  char *utt;
  size_t utt_len;
  uint32_t constrain, max_tokens, flags;
  int tool_choice;
  bool stream, include_usage;
  char model[128];
  double t_arrive, deadline, last_poll;
  atomic_bool gone, timed_out;
  /* answer */
  unsigned status;
  char *body;
  size_t body_len;
  const char *ctype;
  char cat_id[24];
};

typedef struct req {
  server *srv;
  conn_track *track;
  int ep;
  bool is_post;
  char *body;
  size_t n, cap;
  bool too_big, answered;
  job *job;
  double t0;
  /* an error decided before the body was read (401, 413, 503...): the body is drained first, within
   * bounds, so that a client that sends its whole body before reading still reads the answer */
  bool draining;
  unsigned pend_status;
  char pend_code[32];
  char pend_msg[320];
  size_t drained;
  double drain_until;
} req;

/* Lingering close: how much of a refused request's body is read and thrown away, and for how long,
 * before the error is sent anyway (and the connection closed). A client sending slower than that, or
 * not at all, is cut by the reaper at drain_until: a slow body never holds the server. */
#define DRAIN_MAX_BYTES ((size_t)64 << 20)
#define DRAIN_MAX_S 5.0

// ----------------------------------------------------------------------------------------------
// answers: OpenAI-style errors and responses

static const char *error_type(unsigned status) {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 500: return "server_error";
    case 503: return "service_unavailable";
    default: return "invalid_request_error";
  }
}

static char *error_body(unsigned status, const char *code, const char *param, const char *msg, size_t *len) {
  sb b = {0};
  sb_puts(&b, "{\"error\":{\"message\":");
  sb_json_str(&b, msg, strlen(msg));
  sb_printf(&b, ",\"type\":\"%s\",\"param\":", error_type(status));
  if (param)
    sb_json_str(&b, param, strlen(param));
  else
    sb_puts(&b, "null");
  sb_puts(&b, ",\"code\":");
  if (code)
    sb_json_str(&b, code, strlen(code));
  else
    sb_puts(&b, "null");
  sb_puts(&b, "}}\n");
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  *len = b.n;
  return b.p;
}

static void count_request(server *s, int ep, unsigned status, double secs) {
  pthread_mutex_lock(&s->met_mu);
  for (size_t i = 0; i < N_CODES; i++)
    if (k_codes[i] == status) s->met.requests[ep][i]++;
  if ((ep == EP_CHAT || ep == EP_NLU) && status == 200) {
    size_t k = 0;
    while (k < N_BUCKETS && secs > k_buckets[k]) k++;
    s->met.hist[ep][k]++;
    s->met.hist_sum[ep] += secs;
    s->met.hist_n[ep]++;
  }
  pthread_mutex_unlock(&s->met_mu);
}

/* Queues body (malloc'd, taken over) with status; counts the request. */
static enum MHD_Result send_body(req *r, struct MHD_Connection *c, unsigned status, const char *ctype, char *body,
                                 size_t len, const char *cat_id) {
  r->answered = true;
  count_request(r->srv, r->ep, status, now_s() - r->t0);
  if (!body) {
    static char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n";
    body = oom;
    len = sizeof oom - 1;
    status = 500;
    ctype = "application/json";
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    enum MHD_Result ok = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ok;
  }
  struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
  if (strncmp(ctype, "text/event-stream", 17) == 0) MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
  if (cat_id && cat_id[0]) MHD_add_response_header(resp, "X-Fgemma-Catalog-Id", cat_id);
  if (status == 401) MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
  enum MHD_Result ok = MHD_queue_response(c, status, resp);
  MHD_destroy_response(resp);
  return ok;
}

static enum MHD_Result send_error(req *r, struct MHD_Connection *c, unsigned status, const char *code, const char *param,
                                  const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t len = 0;
  char *body = error_body(status, code, param, msg, &len);
  return send_body(r, c, status, "application/json", body, len, NULL);
}

/* An error for a request whose body may still be on its way: sent at once when no body follows (or the
 * client waits for "100 Continue" before sending it), else after the body has been drained (on_request). */
static enum MHD_Result refuse(req *r, struct MHD_Connection *c, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static enum MHD_Result refuse(req *r, struct MHD_Connection *c, unsigned status, const char *code, const char *fmt, ...) {
  char msg[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
  const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
  const bool body_follows = (cl && strtoull(cl, NULL, 10) > 0) || (te && strstr(te, "chunked"));
  if (!body_follows || (expect && strncasecmp(expect, "100-continue", 12) == 0) || r->answered)
    return send_error(r, c, status, code, NULL, "%s", msg);
  r->draining = true;
  r->pend_status = status;
  snprintf(r->pend_code, sizeof r->pend_code, "%s", code);
  snprintf(r->pend_msg, sizeof r->pend_msg, "%s", msg);
  r->drain_until = now_s() + DRAIN_MAX_S;
  server *s = r->srv;
  pthread_mutex_lock(&s->conn_mu);
  if (r->track) r->track->drain_until = r->drain_until;
  pthread_mutex_unlock(&s->conn_mu);
  return MHD_YES;
}

static enum MHD_Result send_pending(req *r, struct MHD_Connection *c) {
  r->draining = false;
  server *s = r->srv;
  pthread_mutex_lock(&s->conn_mu);
  if (r->track) r->track->drain_until = 0;
  pthread_mutex_unlock(&s->conn_mu);
  return send_error(r, c, r->pend_status, r->pend_code, NULL, "%s", r->pend_msg);
}

static void job_error(job *j, unsigned status, const char *code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  free(j->body);
  j->status = status;
  j->ctype = "application/json";
  j->body = error_body(status, code, NULL, msg, &j->body_len);
}

/* The client of a suspended connection has gone when its socket reports a hang-up or end of file. */
static bool client_gone(int fd) {
  if (fd < 0) return false;
  struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  char c;
  ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0;
}

/* The prefix prefill's abort callback: stops when the request that started it is past its deadline
 * or its client has gone, unless other requests wait for the same catalog (they get it finished). */
static bool build_abort(void *ud) {
  cat_entry *e = ud;
  job *j = e->builder;
  if (!j) return false;
  const double t = now_s();
  const bool late = t > j->deadline;
  bool gone = false;
  if (!late && t - j->last_poll > 0.005) {
    j->last_poll = t;
    gone = client_gone(j->fd);
  }
  if (!late && !gone) return false;
  server *s = j->srv;
  pthread_mutex_lock(&s->cat_mu);
  const bool alone = e->refs == 1;
  pthread_mutex_unlock(&s->cat_mu);
  if (!alone) return false;
  atomic_store(gone ? &j->gone : &j->timed_out, true);
  return true;
}

// ----------------------------------------------------------------------------------------------
// catalog cache: an engine per distinct tool list, prefilled once, LRU within cfg->max_catalogs

static void engine_free(engine *g) {
  if (!g) return;
  fg_nlu_free(g->nlu);
  free(g);
}

static void cat_free(cat_entry *e) {
  if (!e) return;
  for (engine *g = e->idle, *nx; g; g = nx) {
    nx = g->next;
    engine_free(g);
  }
  fg_nlu_free(e->base);
  fg_catalog_free(e->catalog);
  free(e);
}

static void cat_unlist(server *s, cat_entry *e) {
  for (cat_entry **p = &s->cats; *p; p = &(*p)->next)
    if (*p == e) {
      *p = e->next;
      s->n_cats--;
      s->n_idle -= e->n_idle;
      e->listed = false;
      return;
    }
}

/* The ready entry for j's catalog (refs taken), building it when new; NULL with j's error set. */
static cat_entry *cat_acquire(server *s, job *j, bool *was_cached) {
  pthread_mutex_lock(&s->cat_mu);
  cat_entry *e = s->cats;
  while (e && e->hash != j->hash) e = e->next;
  if (e) {
    e->refs++;
    e->last_used = ++s->tick;
    *was_cached = e->state == CAT_READY;
    if (*was_cached) {
      pthread_mutex_lock(&s->met_mu);
      s->met.cat_hits++;
      pthread_mutex_unlock(&s->met_mu);
    }
    while (e->state == CAT_BUILDING) pthread_cond_wait(&s->cat_cv, &s->cat_mu);
    if (e->state == CAT_FAILED) {
      const fg_status fs = e->fail_st;
      job_error(j, fs == FG_ERR_FORMAT || fs == FG_ERR_INVALID_ARG || fs == FG_ERR_CONTEXT_FULL ? 400
                   : fs == FG_ERR_ABORTED ? 503 : 500,
                fs == FG_ERR_FORMAT ? "invalid_catalog" : fs == FG_ERR_ABORTED ? "cancelled" : "catalog_failed",
                "%s%s", e->fail_msg, fs == FG_ERR_ABORTED ? " (the request that started the prefill was cancelled; retry)" : "");
      if (--e->refs == 0) cat_free(e);
      pthread_mutex_unlock(&s->cat_mu);
      return NULL;
    }
    pthread_mutex_unlock(&s->cat_mu);
    return e;
  }
  *was_cached = false;
  if (j->by_id) {
    pthread_mutex_unlock(&s->cat_mu);
    job_error(j, 404, "catalog_not_found",
              "catalog_id %s is not cached (evicted or never sent): send the catalog itself", j->cat_id);
    return NULL;
  }
  if (s->n_cats >= s->cfg->max_catalogs) { /* evict the least recently used idle entry */
    cat_entry *lru = NULL;
    for (cat_entry *x = s->cats; x; x = x->next)
      if (x->state == CAT_READY && x->refs == 0 && (!lru || x->last_used < lru->last_used)) lru = x;
    if (!lru) {
      pthread_mutex_unlock(&s->cat_mu);
      job_error(j, 503, "catalogs_busy", "all %u catalog slots are in use by running requests; retry later",
                s->cfg->max_catalogs);
      return NULL;
    }
    cat_unlist(s, lru);
    cat_free(lru);
    pthread_mutex_lock(&s->met_mu);
    s->met.evictions++;
    pthread_mutex_unlock(&s->met_mu);
  }
  e = calloc(1, sizeof *e);
  if (!e) {
    pthread_mutex_unlock(&s->cat_mu);
    job_error(j, 500, NULL, "out of memory");
    return NULL;
  }
  e->hash = j->hash;
  snprintf(e->id, sizeof e->id, "cat-%016llx", (unsigned long long)j->hash);
  e->state = CAT_BUILDING;
  e->refs = 1;
  e->last_used = ++s->tick;
  e->listed = true;
  e->next = s->cats;
  s->cats = e;
  s->n_cats++;
  pthread_mutex_unlock(&s->cat_mu);

  /* parse and prefill outside the lock; requests for other catalogs go on meanwhile */
  fg_error err = {0};
  fg_catalog *catalog = NULL;
  fg_nlu *base = NULL;
  fg_nlu_info info = {0};
  uint32_t prefix_tokens = 0;
  uint64_t kv_bytes = 0;
  fg_status st = fg_catalog_parse(j->cat_json, strlen(j->cat_json), &catalog, &err);
  if (st == FG_OK) {
    fg_nlu_params p = s->cfg->nlu;
    p.session.abort_cb = build_abort; /* the base is never asked: only its prefill polls this */
    p.session.abort_user_data = e;
    e->builder = j;
    st = fg_nlu_create(s->model, catalog, &p, &base, &err);
    e->builder = NULL;
  }
  if (st == FG_OK) {
    fg_nlu_get_info(base, &info);
    prefix_tokens = info.prefix_tokens;
    if (info.snapshot_refused)
      fprintf(stderr, "fgemma serve: snapshot %s/%s refused (damaged, truncated or of another prefix): %s\n",
              s->cfg->nlu.snapshot_dir ? s->cfg->nlu.snapshot_dir : ".", info.snapshot_name,
              info.snapshot_written ? "recomputed and replaced" : "recomputed, not replaced");
    fg_session *probe = NULL;
    fg_session_stats stats;
    if (fg_session_fork(fg_nlu_snapshot(base), NULL, &probe, NULL) == FG_OK && fg_session_get_stats(probe, &stats) == FG_OK)
      kv_bytes = stats.kv_bytes_global + stats.kv_bytes_sliding;
    fg_session_free(probe);
  }
  pthread_mutex_lock(&s->cat_mu);
  e->catalog = catalog;
  e->base = base;
  e->prefix_tokens = prefix_tokens;
  e->kv_bytes = kv_bytes;
  if (st == FG_OK) {
    e->state = CAT_READY;
    pthread_mutex_lock(&s->met_mu);
    if (info.prefix_from_file)
      s->met.snap_loads++;
    else
      s->met.prefills++;
    s->met.snap_writes += info.snapshot_written;
    s->met.snap_refused += info.snapshot_refused;
    pthread_mutex_unlock(&s->met_mu);
  } else {
    e->state = CAT_FAILED;
    e->fail_st = st;
    snprintf(e->fail_msg, sizeof e->fail_msg, "catalog: %s", err.msg[0] ? err.msg : fg_status_str(st));
    cat_unlist(s, e);
    if (st == FG_ERR_ABORTED && atomic_load(&j->timed_out))
      job_error(j, 503, "timeout", "the catalog prefill took longer than the %g s timeout", s->cfg->timeout_ms / 1e3);
    else if (st == FG_ERR_CONTEXT_FULL)
      job_error(j, 400, "context_length_exceeded", "%s", e->fail_msg);
    else
      job_error(j, st == FG_ERR_FORMAT || st == FG_ERR_INVALID_ARG ? 400 : st == FG_ERR_ABORTED ? 503 : 500,
                st == FG_ERR_FORMAT ? "invalid_catalog" : st == FG_ERR_ABORTED ? "cancelled" : "catalog_failed", "%s",
                e->fail_msg);
  }
  pthread_cond_broadcast(&s->cat_cv);
  if (st != FG_OK) {
    if (--e->refs == 0) cat_free(e);
    e = NULL;
  }
  pthread_mutex_unlock(&s->cat_mu);
  return e;
}

static void cat_release(server *s, cat_entry *e) {
  pthread_mutex_lock(&s->cat_mu);
  if (--e->refs == 0 && !e->listed) cat_free(e);
  pthread_mutex_unlock(&s->cat_mu);
}


/* The engines' abort callback: the request's deadline, or its client gone (checked every 5 ms). */
static bool engine_abort(void *ud) {
  engine *g = ud;
  job *j = atomic_load(&g->job);
  if (!j) return false;
  double t = now_s();
  if (t > j->deadline) {
    atomic_store(&j->timed_out, true);
    return true;
  }
  if (t - j->last_poll > 0.005) {
    j->last_poll = t;
    if (client_gone(j->fd)) {
      atomic_store(&j->gone, true);
      return true;
    }
  }
  return false;
}

static uint64_t engine_key(const job *j) {
  return (uint64_t)j->constrain | (uint64_t)j->flags << 4 | (uint64_t)j->max_tokens << 16;
}

static engine *engine_acquire(server *s, cat_entry *e, job *j) {
  const uint64_t key = engine_key(j);
  pthread_mutex_lock(&s->cat_mu);
  for (engine **p = &e->idle; *p; p = &(*p)->next)
    if ((*p)->key == key) {
      engine *g = *p;
      *p = g->next;
      e->n_idle--;
      if (e->listed) s->n_idle--;
      pthread_mutex_unlock(&s->cat_mu);
      return g;
    }
  pthread_mutex_unlock(&s->cat_mu);
  engine *g = calloc(1, sizeof *g);
  if (!g) return job_error(j, 500, NULL, "out of memory"), NULL;
  g->key = key;
  fg_nlu_params p = s->cfg->nlu;
  p.constrained = j->constrain;
  p.max_tokens = j->max_tokens;
  p.flags |= j->flags;
  p.session.abort_cb = engine_abort;
  p.session.abort_user_data = g;
  fg_error err = {0};
  fg_status st = fg_nlu_fork(e->base, &p, &g->nlu, &err);
  if (st != FG_OK) {
    job_error(j, 500, NULL, "engine: %s", err.msg[0] ? err.msg : fg_status_str(st));
    free(g);
    return NULL;
  }
  return g;
}

/* Keeps the engine for the next request of this kind, within 2 per worker (plus 2) over all
 * catalogs: when they are all kept, one of the least recently used catalog's goes. */
static void engine_release(server *s, cat_entry *e, engine *g) {
  atomic_store(&g->job, NULL);
  engine *drop = NULL;
  pthread_mutex_lock(&s->cat_mu);
  const uint32_t cap = 2 * s->cfg->parallel + 2;
  if (e->listed && s->n_idle >= cap) {
    cat_entry *lru = NULL;
    for (cat_entry *x = s->cats; x; x = x->next)
      if (x->n_idle && (!lru || x->last_used < lru->last_used)) lru = x;
    if (lru) {
      drop = lru->idle;
      lru->idle = drop->next;
      lru->n_idle--;
      s->n_idle--;
    }
  }
  if (e->listed && s->n_idle < cap) {
    g->next = e->idle;
    e->idle = g;
    e->n_idle++;
    s->n_idle++;
    g = NULL;
  }
  pthread_mutex_unlock(&s->cat_mu);
  engine_free(g);
  engine_free(drop);
}

// ----------------------------------------------------------------------------------------------
// answering a queued request (worker threads)

static const char *const k_draft_names[FG_NLU_DRAFT_SOURCES] = {"forced", "copy", "catalog", "cache", "context"};

/* /v1/nlu: the JSON line `fgemma call` prints */
static void answer_nlu(job *j, const fg_nlu_result *r, double ask_ms) {
  sb b = {0};
  sb_puts(&b, "{\"utterance\":");
  sb_json_str(&b, j->utt, j->utt_len);
  sb_printf(&b, ",\"result\":%s,\"raw\":", r->json);
  sb_json_str(&b, r->raw, strlen(r->raw));
  sb_printf(&b,
            ",\"stop\":\"%s\",\"tokens\":{\"chunk\":%u,\"decode\":%u},"
            "\"heads\":{\"full\":%u,\"sparse\":%u,\"forced\":%u},\"passes\":{\"weight\":%u,\"head\":%u},\"drafts\":{",
            r->stop, r->chunk_tokens, r->decode_tokens, r->full_head_steps, r->sparse_head_steps, r->forced_tokens,
            r->weight_passes, r->head_passes);
  for (unsigned k = 0; k < FG_NLU_DRAFT_SOURCES; k++)
    sb_printf(&b, "%s\"%s\":[%u,%u]", k ? "," : "", k_draft_names[k], r->drafted[k], r->accepted[k]);
  sb_printf(&b, "},\"ms\":{\"restore\":%.3f,\"chunk\":%.2f,\"decode\":%.2f,\"total\":%.2f}}\n", r->restore_ms,
            r->chunk_ms, r->decode_ms, ask_ms);
  if (b.oom) {
    free(b.p);
    job_error(j, 500, NULL, "out of memory");
    return;
  }
  j->status = 200;
  j->ctype = "application/json";
  j->body = b.p;
  j->body_len = b.n;
}

static cJSON *add_obj(cJSON *parent, const char *name) {
  cJSON *o = cJSON_CreateObject();
  if (name)
    cJSON_AddItemToObject(parent, name, o);
  else
    cJSON_AddItemToArray(parent, o);
  return o;
}

/* appends "data: JSON\n\n" for item (deleted) */
static void sse_event(sb *b, cJSON *item) {
  char *s = cJSON_PrintUnformatted(item);
  cJSON_Delete(item);
  if (!s) {
    b->oom = true;
    return;
  }
  sb_puts(b, "data: ");
  sb_puts(b, s);
  sb_puts(b, "\n\n");
  free(s);
}

static cJSON *chunk_base(const job *j, const char *id, double created) {
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "id", id);
  cJSON_AddStringToObject(c, "object", "chat.completion.chunk");
  cJSON_AddNumberToObject(c, "created", created);
  cJSON_AddStringToObject(c, "model", j->model);
  return c;
}

/* one chunk holding choices[0] = {index, delta, finish_reason}; returns the delta */
static cJSON *chunk_with_delta(cJSON *c, const char *finish) {
  cJSON *choices = cJSON_AddArrayToObject(c, "choices");
  cJSON *ch = add_obj(choices, NULL);
  cJSON_AddNumberToObject(ch, "index", 0);
  cJSON *delta = add_obj(ch, "delta");
  if (finish)
    cJSON_AddStringToObject(ch, "finish_reason", finish);
  else
    cJSON_AddNullToObject(ch, "finish_reason");
  return delta;
}

/* /v1/chat/completions: a chat.completion, or its chunks as server-sent events */
static void answer_chat(server *s, job *j, const fg_nlu_result *r, const cat_entry *e, bool cached, double queue_ms,
                        double catalog_ms, double ask_ms) {
  cJSON *res = cJSON_Parse(r->json);
  cJSON *calls = cJSON_GetObjectItemCaseSensitive(res, "calls");
  cJSON *text = cJSON_GetObjectItemCaseSensitive(res, "text");
  const char *content = cJSON_IsString(text) ? text->valuestring : "";
  const int n_calls = j->tool_choice == TC_NONE ? 0 : cJSON_GetArraySize(calls);
  const bool length = strcmp(r->stop, "max_tokens") == 0 || strcmp(r->stop, "context_full") == 0;
  const char *finish = n_calls ? "tool_calls" : length ? "length" : "stop";
  char id[48];
  const unsigned long long serial = atomic_fetch_add(&s->next_id, 1);
  snprintf(id, sizeof id, "chatcmpl-%012llx", serial);
  const double created = (double)time(NULL);
  /* tool calls: id, name, arguments as a JSON string */
  cJSON *tcs = cJSON_CreateArray();
  for (int k = 0; k < n_calls; k++) {
    cJSON *call = cJSON_GetArrayItem(calls, k);
    cJSON *name = cJSON_GetObjectItemCaseSensitive(call, "name");
    cJSON *args = cJSON_GetObjectItemCaseSensitive(call, "args");
    char *argstr = args ? cJSON_PrintUnformatted(args) : NULL;
    cJSON *tc = add_obj(tcs, NULL);
    char cid[64];
    snprintf(cid, sizeof cid, "call_%012llx_%d", serial, k);
    cJSON_AddStringToObject(tc, "id", cid);
    cJSON_AddStringToObject(tc, "type", "function");
    cJSON *fn = add_obj(tc, "function");
    cJSON_AddStringToObject(fn, "name", cJSON_IsString(name) ? name->valuestring : "");
    cJSON_AddStringToObject(fn, "arguments", argstr ? argstr : "{}");
    free(argstr);
  }
  cJSON *usage = cJSON_CreateObject();
  cJSON_AddNumberToObject(usage, "prompt_tokens", e->prefix_tokens + r->chunk_tokens);
  cJSON_AddNumberToObject(usage, "completion_tokens", r->decode_tokens);
  cJSON_AddNumberToObject(usage, "total_tokens", e->prefix_tokens + r->chunk_tokens + r->decode_tokens);
  cJSON *ext = cJSON_CreateObject();
  cJSON_AddStringToObject(ext, "catalog_id", e->id);
  cJSON_AddBoolToObject(ext, "prefix_cached", cached);
  cJSON_AddNumberToObject(ext, "prefix_tokens", e->prefix_tokens);
  cJSON_AddNumberToObject(ext, "chunk_tokens", r->chunk_tokens);
  cJSON_AddNumberToObject(ext, "decode_tokens", r->decode_tokens);
  cJSON_AddStringToObject(ext, "stop", r->stop);
  cJSON_AddStringToObject(ext, "raw", r->raw);
  cJSON *passes = add_obj(ext, "passes");
  cJSON_AddNumberToObject(passes, "weight", r->weight_passes);
  cJSON_AddNumberToObject(passes, "head", r->head_passes);
  cJSON *heads = add_obj(ext, "heads");
  cJSON_AddNumberToObject(heads, "full", r->full_head_steps);
  cJSON_AddNumberToObject(heads, "sparse", r->sparse_head_steps);
  cJSON_AddNumberToObject(heads, "forced", r->forced_tokens);
  cJSON *ms = add_obj(ext, "ms");
  cJSON_AddNumberToObject(ms, "queue", queue_ms);
  cJSON_AddNumberToObject(ms, "catalog", catalog_ms);
  cJSON_AddNumberToObject(ms, "restore", r->restore_ms);
  cJSON_AddNumberToObject(ms, "chunk", r->chunk_ms);
  cJSON_AddNumberToObject(ms, "decode", r->decode_ms);
  cJSON_AddNumberToObject(ms, "total", ask_ms);

  sb b = {0};
  if (!j->stream) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "object", "chat.completion");
    cJSON_AddNumberToObject(o, "created", created);
    cJSON_AddStringToObject(o, "model", j->model);
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    cJSON *ch = add_obj(choices, NULL);
    cJSON_AddNumberToObject(ch, "index", 0);
    cJSON *msg = add_obj(ch, "message");
    cJSON_AddStringToObject(msg, "role", "assistant");
    if (n_calls) {
      cJSON_AddNullToObject(msg, "content");
      cJSON_AddItemToObject(msg, "tool_calls", tcs);
      tcs = NULL;
    } else {
      cJSON_AddStringToObject(msg, "content", content);
    }
    cJSON_AddNullToObject(ch, "logprobs");
    cJSON_AddStringToObject(ch, "finish_reason", finish);
    cJSON_AddItemToObject(o, "usage", usage);
    cJSON_AddItemToObject(o, "fgemma", ext);
    usage = ext = NULL;
    char *out = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (out) sb_puts(&b, out), sb_puts(&b, "\n");
    else b.oom = true;
    free(out);
    j->ctype = "application/json";
  } else {
    /* the answer is decoded whole (fg_nlu_ask), then sent as OpenAI's chunk sequence: the role, the
     * content or each call (name, then its arguments in two pieces), the finish reason, the usage */
    cJSON *c = chunk_base(j, id, created);
    cJSON *d = chunk_with_delta(c, NULL);
    cJSON_AddStringToObject(d, "role", "assistant");
    cJSON_AddStringToObject(d, "content", "");
    sse_event(&b, c);
    if (n_calls) {
      for (int k = 0; k < n_calls; k++) {
        cJSON *tc = cJSON_GetArrayItem(tcs, k);
        cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
        const char *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments")->valuestring;
        const size_t an = strlen(args), half = an / 2;
        for (int piece = 0; piece < 3; piece++) {
          c = chunk_base(j, id, created);
          d = chunk_with_delta(c, NULL);
          cJSON *arr = cJSON_AddArrayToObject(d, "tool_calls");
          cJSON *t = add_obj(arr, NULL);
          cJSON_AddNumberToObject(t, "index", k);
          cJSON *f = NULL;
          if (piece == 0) {
            cJSON_AddStringToObject(t, "id", cJSON_GetObjectItemCaseSensitive(tc, "id")->valuestring);
            cJSON_AddStringToObject(t, "type", "function");
            f = add_obj(t, "function");
            cJSON_AddStringToObject(f, "name", cJSON_GetObjectItemCaseSensitive(fn, "name")->valuestring);
            cJSON_AddStringToObject(f, "arguments", "");
          } else {
            /* split at a byte that does not continue a UTF-8 sequence */
            size_t cut = half;
            while (cut < an && ((unsigned char)args[cut] & 0xC0) == 0x80) cut++;
            char *part = piece == 1 ? strndup(args, cut) : strdup(args + cut);
            f = add_obj(t, "function");
            cJSON_AddStringToObject(f, "arguments", part ? part : "");
            free(part);
          }
          sse_event(&b, c);
        }
      }
    } else if (content[0]) {
      c = chunk_base(j, id, created);
      d = chunk_with_delta(c, NULL);
      cJSON_AddStringToObject(d, "content", content);
      sse_event(&b, c);
    }
    c = chunk_base(j, id, created);
    chunk_with_delta(c, finish);
    cJSON_AddItemToObject(c, "fgemma", ext);
    ext = NULL;
    sse_event(&b, c);
    if (j->include_usage) {
      c = chunk_base(j, id, created);
      cJSON_AddArrayToObject(c, "choices");
      cJSON_AddItemToObject(c, "usage", usage);
      usage = NULL;
      sse_event(&b, c);
    }
    sb_puts(&b, "data: [DONE]\n\n");
    j->ctype = "text/event-stream";
  }
  cJSON_Delete(tcs);
  cJSON_Delete(usage);
  cJSON_Delete(ext);
  cJSON_Delete(res);
  if (b.oom || !b.p) {
    free(b.p);
    job_error(j, 500, NULL, "out of memory");
    return;
  }
  j->status = 200;
  j->body = b.p;
  j->body_len = b.n;
}

static void run_job(server *s, job *j) {
  const double t_start = now_s();
  if (t_start > j->deadline) {
    atomic_store(&j->timed_out, true);
    job_error(j, 503, "timeout", "the request waited longer than the %g s timeout", s->cfg->timeout_ms / 1e3);
    return;
  }
  if (client_gone(j->fd)) {
    atomic_store(&j->gone, true);
    return;
  }
  bool cached = false;
  cat_entry *e = cat_acquire(s, j, &cached);
  if (!e) return;
  snprintf(j->cat_id, sizeof j->cat_id, "%s", e->id);
  const double t_cat = now_s();
  engine *g = engine_acquire(s, e, j);
  if (!g) {
    cat_release(s, e);
    return;
  }
  atomic_store(&g->job, j);
  fg_nlu_result r;
  const double t0 = now_s();
  fg_status st = fg_nlu_ask(g->nlu, j->utt, j->utt_len, &r);
  const double ask_ms = (now_s() - t0) * 1e3;
  atomic_store(&g->job, NULL);
  if (st == FG_OK) {
    if (j->ep == EP_NLU)
      answer_nlu(j, &r, ask_ms);
    else
      answer_chat(s, j, &r, e, cached, (t_start - j->t_arrive) * 1e3, (t_cat - t_start) * 1e3, ask_ms);
    pthread_mutex_lock(&s->met_mu);
    s->met.prompt_tokens += e->prefix_tokens + r.chunk_tokens;
    s->met.chunk_tokens += r.chunk_tokens;
    s->met.completion_tokens += r.decode_tokens;
    s->met.weight_passes += r.weight_passes;
    s->met.head_passes += r.head_passes;
    pthread_mutex_unlock(&s->met_mu);
  } else if (st == FG_ERR_ABORTED && atomic_load(&j->gone)) {
    /* nobody to answer */
  } else if (st == FG_ERR_ABORTED) {
    job_error(j, 503, "timeout", "the request took longer than the %g s timeout", s->cfg->timeout_ms / 1e3);
  } else if (st == FG_ERR_CONTEXT_FULL) {
    job_error(j, 400, "context_length_exceeded", "%s", fg_nlu_errmsg(g->nlu));
  } else if (st == FG_ERR_INVALID_ARG) {
    job_error(j, 400, "invalid_utterance", "%s", fg_nlu_errmsg(g->nlu));
  } else {
    job_error(j, 500, NULL, "%s: %s", fg_status_str(st), fg_nlu_errmsg(g->nlu));
  }
  engine_release(s, e, g);
  cat_release(s, e);
}

static void *worker_main(void *arg) {
  server *s = arg;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    while (s->q_len == 0 && !s->quit) pthread_cond_wait(&s->cv_work, &s->mu);
    if (s->q_len == 0) {
      pthread_mutex_unlock(&s->mu);
      break;
    }
    job *j = s->queue[s->q_head];
    s->q_head = (s->q_head + 1) % s->cfg->queue;
    s->q_len--;
    s->busy++;
    pthread_mutex_unlock(&s->mu);
    run_job(s, j);
    if (atomic_load(&j->gone)) {
      pthread_mutex_lock(&s->met_mu);
      s->met.cancelled++;
      pthread_mutex_unlock(&s->met_mu);
    } else if (atomic_load(&j->timed_out)) {
      pthread_mutex_lock(&s->met_mu);
      s->met.timed_out++;
      pthread_mutex_unlock(&s->met_mu);
    }
    pthread_mutex_lock(&s->mu);
    s->busy--;
    pthread_cond_broadcast(&s->cv_idle);
    pthread_mutex_unlock(&s->mu);
    MHD_resume_connection(j->conn); /* the handler runs again and sends j's answer */
  }
  return NULL;
}

static void job_free(job *j) {
  if (!j) return;
  free(j->cat_json);
  free(j->utt);
  free(j->body);
  free(j);
}

// ----------------------------------------------------------------------------------------------
// requests: validation into a job (libmicrohttpd's threads)

typedef struct bad {
  unsigned status;
  const char *code, *param;
  char msg[384];
} bad;

static bool fail(bad *b, unsigned status, const char *code, const char *param, const char *fmt, ...) {
  b->status = status;
  b->code = code;
  b->param = param;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b->msg, sizeof b->msg, fmt, ap);
  va_end(ap);
  return false;
}

/* an optional integer field in [lo, hi]; absent or null leaves *out */
static bool opt_uint(cJSON *o, const char *name, uint32_t lo, uint32_t hi, uint32_t *out, bad *b) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!v || cJSON_IsNull(v)) return true;
  if (!cJSON_IsNumber(v) || v->valuedouble != (double)(long long)v->valuedouble || v->valuedouble < lo ||
      v->valuedouble > hi)
    return fail(b, 400, "invalid_value", name, "%s must be an integer from %u to %u", name, lo, hi);
  *out = (uint32_t)v->valuedouble;
  return true;
}

static bool opt_bool(cJSON *o, const char *name, bool *out, bad *b) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  if (!v || cJSON_IsNull(v)) return true;
  if (!cJSON_IsBool(v)) return fail(b, 400, "invalid_type", name, "%s must be true or false", name);
  *out = cJSON_IsTrue(v);
  return true;
}

/* the canonical JSON text of a catalog and its hash */
static bool set_catalog(job *j, const cJSON *cat, bad *b) {
  j->cat_json = cJSON_PrintUnformatted(cat);
  if (!j->cat_json) return fail(b, 500, NULL, NULL, "out of memory");
  j->hash = fnv1a(j->cat_json, strlen(j->cat_json));
  snprintf(j->cat_id, sizeof j->cat_id, "cat-%016llx", (unsigned long long)j->hash);
  return true;
}

/* text of a message's content: a string, or an array of {"type":"text","text":...} parts (joined by
 * newlines); NULL (with b set) when it is neither */
static char *content_text(cJSON *content, const char *param, bad *b) {
  if (cJSON_IsString(content)) return strdup(content->valuestring);
  if (!cJSON_IsArray(content)) return fail(b, 400, "invalid_type", param, "%s must be a string or an array of text parts", param), NULL;
  sb t = {0};
  sb_puts(&t, "");
  cJSON *part;
  cJSON_ArrayForEach(part, content) {
    cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
    cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") != 0 || !cJSON_IsString(text)) {
      free(t.p);
      return fail(b, 400, "unsupported_content", param, "%s: only text parts ({\"type\":\"text\",\"text\":...}) are supported", param), NULL;
    }
    if (t.n) sb_puts(&t, "\n");
    sb_puts(&t, text->valuestring);
  }
  if (t.oom) {
    free(t.p);
    return fail(b, 500, NULL, NULL, "out of memory"), NULL;
  }
  return t.p;
}

static const char *tool_name(cJSON *tool) {
  cJSON *fn = cJSON_GetObjectItemCaseSensitive(tool, "function");
  cJSON *name = cJSON_GetObjectItemCaseSensitive(cJSON_IsObject(fn) ? fn : tool, "name");
  return cJSON_IsString(name) ? name->valuestring : NULL;
}

static bool parse_chat(const server *s, cJSON *root, job *j, bad *b) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "model");
  if (v && !cJSON_IsString(v)) return fail(b, 400, "invalid_type", "model", "model must be a string");
  snprintf(j->model, sizeof j->model, "%s", v ? v->valuestring : s->cfg->model_id);
  cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
  if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0)
    return fail(b, 400, "invalid_type", "messages", "messages must be a non-empty array");
  static const char *const roles[] = {"system", "developer", "user", "assistant", "tool"};
  cJSON *m, *last = NULL;
  int i = 0;
  cJSON_ArrayForEach(m, msgs) {
    char param[48];
    snprintf(param, sizeof param, "messages[%d]", i++);
    cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    if (!cJSON_IsObject(m) || !cJSON_IsString(role)) return fail(b, 400, "invalid_type", "messages", "%s must be an object with a string role", param);
    bool known = false;
    for (size_t k = 0; k < sizeof roles / sizeof roles[0]; k++) known |= strcmp(role->valuestring, roles[k]) == 0;
    if (!known) return fail(b, 400, "invalid_value", "messages", "%s: unknown role '%s'", param, role->valuestring);
    cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (content && !cJSON_IsNull(content) && !cJSON_IsString(content) && !cJSON_IsArray(content))
      return fail(b, 400, "invalid_type", "messages", "%s: content must be a string, an array of text parts or null", param);
    last = m;
  }
  const char *last_role = cJSON_GetObjectItemCaseSensitive(last, "role")->valuestring;
  if (strcmp(last_role, "user") != 0)
    return fail(b, 400, "unsupported_conversation", "messages",
                "the last message must be the user's (it is '%s'): fgemma answers one user utterance against the "
                "tools; it does not continue after tool results (docs/SERVER.md)", last_role);
  if (!(j->utt = content_text(cJSON_GetObjectItemCaseSensitive(last, "content"), "messages[-1].content", b))) return false;
  j->utt_len = strlen(j->utt);
  if (j->utt_len == 0) return fail(b, 400, "invalid_value", "messages", "the user message is empty");

  cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools");
  if (!cJSON_IsArray(tools) || cJSON_GetArraySize(tools) == 0)
    return fail(b, 400, "invalid_type", "tools", "tools must be a non-empty array: fgemma answers against a tool catalog");
  cJSON *t;
  cJSON_ArrayForEach(t, tools) if (!cJSON_IsObject(t) || !tool_name(t))
      return fail(b, 400, "invalid_type", "tools", "every tool must be an object with a function name");
  j->tool_choice = TC_AUTO;
  cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
  cJSON *named = NULL;
  if (cJSON_IsString(tc)) {
    if (strcmp(tc->valuestring, "auto") == 0) j->tool_choice = TC_AUTO;
    else if (strcmp(tc->valuestring, "none") == 0) j->tool_choice = TC_NONE;
    else if (strcmp(tc->valuestring, "required") == 0) j->tool_choice = TC_REQUIRED;
    else return fail(b, 400, "invalid_value", "tool_choice", "tool_choice must be auto, none, required or {\"type\":\"function\",\"function\":{\"name\":...}}");
  } else if (cJSON_IsObject(tc)) {
    cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
    cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
    if (!cJSON_IsString(name)) return fail(b, 400, "invalid_type", "tool_choice", "tool_choice.function.name must be a string");
    cJSON_ArrayForEach(t, tools) if (strcmp(tool_name(t), name->valuestring) == 0) named = t;
    if (!named) return fail(b, 400, "unknown_function", "tool_choice", "tool_choice names '%s', which is not in tools", name->valuestring);
    j->tool_choice = TC_NAMED;
  } else if (tc && !cJSON_IsNull(tc)) {
    return fail(b, 400, "invalid_type", "tool_choice", "tool_choice must be a string or an object");
  }
  /* the engine's constraint modes; a named function: a catalog of that function alone, call only */
  j->constrain = j->tool_choice == TC_NONE ? FG_NLU_CONSTRAIN_OFF
               : j->tool_choice == TC_AUTO ? FG_NLU_CONSTRAIN_CALL_OR_TEXT : FG_NLU_CONSTRAIN_CALL_ONLY;
  if (named) {
    cJSON *one = cJSON_CreateArray();
    cJSON_AddItemReferenceToArray(one, named);
    bool ok = set_catalog(j, one, b);
    cJSON_Delete(one);
    if (!ok) return false;
  } else if (!set_catalog(j, tools, b)) {
    return false;
  }
  j->max_tokens = 64;
  if (!opt_uint(root, "max_tokens", 1, s->cfg->max_tokens, &j->max_tokens, b)) return false;
  if (!opt_uint(root, "max_completion_tokens", 1, s->cfg->max_tokens, &j->max_tokens, b)) return false;
  uint32_t n = 1;
  if (!opt_uint(root, "n", 1, 1, &n, b)) return false;
  if (!opt_bool(root, "stream", &j->stream, b)) return false;
  bool parallel = false;
  if (!opt_bool(root, "parallel_tool_calls", &parallel, b)) return false;
  if (parallel) j->flags |= FG_NLU_MULTI_CALL;
  cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
  if (so && !cJSON_IsNull(so)) {
    if (!cJSON_IsObject(so)) return fail(b, 400, "invalid_type", "stream_options", "stream_options must be an object");
    if (!opt_bool(so, "include_usage", &j->include_usage, b)) return false;
  }
  return true;
}

static bool parse_nlu(const server *s, cJSON *root, job *j, bad *b) {
  cJSON *u = cJSON_GetObjectItemCaseSensitive(root, "utterance");
  if (!cJSON_IsString(u) || !u->valuestring[0]) return fail(b, 400, "invalid_type", "utterance", "utterance must be a non-empty string");
  if (!(j->utt = strdup(u->valuestring))) return fail(b, 500, NULL, NULL, "out of memory");
  j->utt_len = strlen(j->utt);
  cJSON *cat = cJSON_GetObjectItemCaseSensitive(root, "catalog");
  cJSON *cid = cJSON_GetObjectItemCaseSensitive(root, "catalog_id");
  if ((cat != NULL) == (cid != NULL)) return fail(b, 400, "invalid_value", "catalog", "give exactly one of catalog and catalog_id");
  if (cat) {
    if (!cJSON_IsObject(cat) && !cJSON_IsArray(cat))
      return fail(b, 400, "invalid_type", "catalog", "catalog must be an object (cartridge schema, {\"tools\":[...]}) or a tools array");
    if (!set_catalog(j, cat, b)) return false;
  } else {
    unsigned long long h = 0;
    int end = 0;
    if (!cJSON_IsString(cid) || strlen(cid->valuestring) != 20 || sscanf(cid->valuestring, "cat-%16llx%n", &h, &end) != 1 || end != 20)
      return fail(b, 400, "invalid_value", "catalog_id", "catalog_id must look like cat-0123456789abcdef (the X-Fgemma-Catalog-Id of an earlier answer)");
    j->hash = h;
    j->by_id = true;
    snprintf(j->cat_id, sizeof j->cat_id, "%s", cid->valuestring);
  }
  cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "constrained");
  j->constrain = FG_NLU_CONSTRAIN_CALL_OR_TEXT; /* the default of every surface (docs/OPTIONS.md) */
  if (c) {
    if (cJSON_IsString(c) && strcmp(c->valuestring, "off") == 0) j->constrain = FG_NLU_CONSTRAIN_OFF;
    else if (cJSON_IsString(c) && strcmp(c->valuestring, "call-only") == 0) j->constrain = FG_NLU_CONSTRAIN_CALL_ONLY;
    else if (cJSON_IsString(c) && strcmp(c->valuestring, "call-or-text") == 0) j->constrain = FG_NLU_CONSTRAIN_CALL_OR_TEXT;
    else return fail(b, 400, "invalid_value", "constrained", "constrained must be off, call-only or call-or-text");
  }
  j->max_tokens = 64;
  if (!opt_uint(root, "max_tokens", 1, s->cfg->max_tokens, &j->max_tokens, b)) return false;
  /* multi_call; "multi" is its deprecated old name */
  bool multi = false;
  const bool has_new = cJSON_GetObjectItemCaseSensitive(root, "multi_call") != NULL;
  if (has_new && cJSON_GetObjectItemCaseSensitive(root, "multi") != NULL)
    return fail(b, 400, "invalid_value", "multi", "give multi_call only (multi is its deprecated old name)");
  if (!opt_bool(root, has_new ? "multi_call" : "multi", &multi, b)) return false;
  if (multi) j->flags |= FG_NLU_MULTI_CALL;
  snprintf(j->model, sizeof j->model, "%s", s->cfg->model_id);
  return true;
}

// ----------------------------------------------------------------------------------------------
// GET endpoints

static uint64_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long long pages = 0, res = 0;
  if (f) {
    if (fscanf(f, "%llu %llu", &pages, &res) != 2) res = 0;
    fclose(f);
  }
  return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

static char *metrics_text(server *s, size_t *len) {
  sb b = {0};
  pthread_mutex_lock(&s->mu);
  const size_t q = s->q_len;
  const uint32_t busy = s->busy;
  pthread_mutex_unlock(&s->mu);
  pthread_mutex_lock(&s->cat_mu);
  const uint32_t n_cats = s->n_cats, n_idle = s->n_idle;
  uint64_t kv = 0;
  for (cat_entry *e = s->cats; e; e = e->next) kv += e->kv_bytes;
  pthread_mutex_unlock(&s->cat_mu);
  pthread_mutex_lock(&s->conn_mu);
  const uint32_t n_conns = s->n_conns;
  pthread_mutex_unlock(&s->conn_mu);
  pthread_mutex_lock(&s->met_mu);
  const metrics m = s->met;
  pthread_mutex_unlock(&s->met_mu);

  sb_puts(&b, "# HELP fgemma_requests_total HTTP requests answered, by endpoint and status (499: the client went away)\n"
              "# TYPE fgemma_requests_total counter\n");
  for (int ep = 0; ep < EP_N; ep++)
    for (size_t i = 0; i < N_CODES; i++)
      if (m.requests[ep][i] || i == 0)
        sb_printf(&b, "fgemma_requests_total{endpoint=\"%s\",status=\"%u\"} %llu\n", k_ep_names[ep], k_codes[i],
                  (unsigned long long)m.requests[ep][i]);
  sb_puts(&b, "# HELP fgemma_request_duration_seconds latency of answered requests (200), arrival to answer\n"
              "# TYPE fgemma_request_duration_seconds histogram\n");
  for (int ep = 0; ep < 2; ep++) {
    uint64_t cum = 0;
    for (size_t k = 0; k <= N_BUCKETS; k++) {
      cum += m.hist[ep][k];
      if (k < N_BUCKETS)
        sb_printf(&b, "fgemma_request_duration_seconds_bucket{endpoint=\"%s\",le=\"%g\"} %llu\n", k_ep_names[ep],
                  k_buckets[k], (unsigned long long)cum);
      else
        sb_printf(&b, "fgemma_request_duration_seconds_bucket{endpoint=\"%s\",le=\"+Inf\"} %llu\n", k_ep_names[ep],
                  (unsigned long long)cum);
    }
    sb_printf(&b, "fgemma_request_duration_seconds_sum{endpoint=\"%s\"} %.6f\n", k_ep_names[ep], m.hist_sum[ep]);
    sb_printf(&b, "fgemma_request_duration_seconds_count{endpoint=\"%s\"} %llu\n", k_ep_names[ep],
              (unsigned long long)m.hist_n[ep]);
  }
  struct {
    const char *name, *type, *help;
    unsigned long long v;
  } rows[] = {
      {"fgemma_prompt_tokens_total", "counter", "prompt tokens of answered requests (catalog prefix + utterance)", m.prompt_tokens},
      {"fgemma_chunk_tokens_total", "counter", "utterance tokens prefilled (the prefix comes from the snapshot)", m.chunk_tokens},
      {"fgemma_completion_tokens_total", "counter", "tokens generated", m.completion_tokens},
      {"fgemma_weight_passes_total", "counter", "forward passes over the weights", m.weight_passes},
      {"fgemma_head_passes_total", "counter", "full LM head evaluations", m.head_passes},
      {"fgemma_catalog_prefills_total", "counter", "catalog prefixes prefilled", m.prefills},
      {"fgemma_catalog_cache_hits_total", "counter", "requests whose catalog prefix state was in memory", m.cat_hits},
      {"fgemma_snapshot_loads_total", "counter", "catalog prefix states loaded from --snapshot-dir", m.snap_loads},
      {"fgemma_snapshot_writes_total", "counter", "catalog prefix states written to --snapshot-dir", m.snap_writes},
      {"fgemma_snapshot_refused_total", "counter", "damaged or foreign files in --snapshot-dir, recomputed", m.snap_refused},
      {"fgemma_catalog_evictions_total", "counter", "catalog prefix states evicted (LRU)", m.evictions},
      {"fgemma_requests_cancelled_total", "counter", "requests dropped because the client went away", m.cancelled},
      {"fgemma_requests_timed_out_total", "counter", "requests past the per-request timeout", m.timed_out},
      {"fgemma_requests_rejected_total", "counter", "requests refused because the queue was full (429)", m.rejected_full},
      {"fgemma_connections_reaped_total", "counter", "connections shut for not sending a request head in time", m.reaped},
      {"fgemma_catalogs_cached", "gauge", "catalog prefix states held", n_cats},
      {"fgemma_catalogs_max", "gauge", "--max-catalogs", s->cfg->max_catalogs},
      {"fgemma_catalog_kv_bytes", "gauge", "KV bytes of the cached prefix states", (unsigned long long)kv},
      {"fgemma_idle_engines", "gauge", "forked engines kept for the next request", n_idle},
      {"fgemma_queue_depth", "gauge", "requests waiting for a worker", (unsigned long long)q},
      {"fgemma_queue_capacity", "gauge", "--queue", s->cfg->queue},
      {"fgemma_workers_busy", "gauge", "workers answering a request", busy},
      {"fgemma_workers", "gauge", "--parallel", s->cfg->parallel},
      {"fgemma_connections_open", "gauge", "open HTTP connections", n_conns},
      {"fgemma_process_resident_bytes", "gauge", "resident memory of the server process", (unsigned long long)rss_bytes()},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    sb_printf(&b, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", rows[i].name, rows[i].help, rows[i].name, rows[i].type,
              rows[i].name, rows[i].v);
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  *len = b.n;
  return b.p;
}

static enum MHD_Result answer_get(server *s, req *r, struct MHD_Connection *c) {
  sb b = {0};
  if (r->ep == EP_MODELS) {
    sb_puts(&b, "{\"object\":\"list\",\"data\":[{\"id\":");
    sb_json_str(&b, s->cfg->model_id, strlen(s->cfg->model_id));
    sb_puts(&b, ",\"object\":\"model\",\"created\":0,\"owned_by\":\"fgemma\"}]}\n");
    return send_body(r, c, 200, "application/json", b.oom ? (free(b.p), NULL) : b.p, b.n, NULL);
  }
  if (r->ep == EP_HEALTH) {
    const bool stopping = atomic_load(&s->stopping);
    pthread_mutex_lock(&s->mu);
    sb_printf(&b, "{\"status\":\"%s\",\"queue\":%zu,\"busy\":%u}\n", stopping ? "stopping" : "ok", s->q_len, s->busy);
    pthread_mutex_unlock(&s->mu);
    return send_body(r, c, stopping ? 503 : 200, "application/json", b.oom ? (free(b.p), NULL) : b.p, b.n, NULL);
  }
  size_t len = 0;
  char *text = metrics_text(s, &len);
  return send_body(r, c, 200, "text/plain; version=0.0.4", text, len, NULL);
}

// ----------------------------------------------------------------------------------------------
// the HTTP handler

static int endpoint_of(const char *url, bool *post) {
  static const struct {
    const char *url;
    int ep;
    bool post;
  } k_routes[] = {{"/v1/chat/completions", EP_CHAT, true}, {"/v1/nlu", EP_NLU, true}, {"/v1/models", EP_MODELS, false},
                  {"/health", EP_HEALTH, false},         {"/metrics", EP_METRICS, false}};
  for (size_t i = 0; i < sizeof k_routes / sizeof k_routes[0]; i++)
    if (strcmp(url, k_routes[i].url) == 0) {
      *post = k_routes[i].post;
      return k_routes[i].ep;
    }
  return EP_OTHER;
}

/* A parsed body becomes a queued job with the connection suspended, or an error answer. */
static enum MHD_Result submit(server *s, req *r, struct MHD_Connection *c) {
  bad b = {0};
  job *j = calloc(1, sizeof *j);
  if (!j) return send_error(r, c, 500, NULL, NULL, "out of memory");
  cJSON *root = cJSON_ParseWithLength(r->body ? r->body : "", r->n);
  bool ok;
  if (!root)
    ok = fail(&b, 400, "invalid_json", NULL, "the body is not valid JSON");
  else if (!cJSON_IsObject(root))
    ok = fail(&b, 400, "invalid_type", NULL, "the body must be a JSON object");
  else
    ok = r->ep == EP_CHAT ? parse_chat(s, root, j, &b) : parse_nlu(s, root, j, &b);
  cJSON_Delete(root);
  if (!ok) {
    job_free(j);
    return send_error(r, c, b.status, b.code, b.param, "%s", b.msg);
  }
  j->srv = s;
  j->conn = c;
  j->ep = r->ep;
  j->t_arrive = r->t0;
  j->deadline = r->t0 + s->cfg->timeout_ms / 1e3;
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  j->fd = ci ? ci->connect_fd : -1;
  pthread_mutex_lock(&s->mu);
  if (atomic_load(&s->stopping)) {
    pthread_mutex_unlock(&s->mu);
    job_free(j);
    return send_error(r, c, 503, "shutting_down", NULL, "the server is shutting down");
  }
  if (s->q_len >= s->cfg->queue) {
    pthread_mutex_unlock(&s->mu);
    job_free(j);
    pthread_mutex_lock(&s->met_mu);
    s->met.rejected_full++;
    pthread_mutex_unlock(&s->met_mu);
    return send_error(r, c, 429, "queue_full", NULL, "all %u queue slots are taken; retry later", s->cfg->queue);
  }
  MHD_suspend_connection(c); /* before a worker can see the job and resume it */
  s->queue[(s->q_head + s->q_len) % s->cfg->queue] = j;
  s->q_len++;
  s->open_jobs++;
  r->job = j;
  pthread_cond_signal(&s->cv_work);
  pthread_mutex_unlock(&s->mu);
  return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
  (void)version;
  server *s = cls;
  req *r = *con_cls;
  if (!r) {
    if (!(r = calloc(1, sizeof *r))) return MHD_NO;
    r->srv = s;
    r->t0 = now_s();
    *con_cls = r;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (ci && ci->socket_context) {
      pthread_mutex_lock(&s->conn_mu);
      r->track = ci->socket_context;
      r->track->in_request = true;
      pthread_mutex_unlock(&s->conn_mu);
    }
    bool want_post = false;
    r->ep = endpoint_of(url, &want_post);
    r->is_post = strcmp(method, "POST") == 0;
    if (r->ep == EP_OTHER) return send_error(r, c, 404, "unknown_url", NULL, "unknown URL %s %s", method, url);
    if (want_post != r->is_post || (!r->is_post && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0))
      return send_error(r, c, 405, "method_not_allowed", NULL, "%s %s: use %s", method, url, want_post ? "POST" : "GET");
    if (s->cfg->api_key && strncmp(url, "/v1/", 4) == 0) {
      const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
      const bool bearer = auth && strncmp(auth, "Bearer ", 7) == 0;
      if (!bearer || !key_equal(auth + 7, strlen(auth + 7), s->cfg->api_key))
        return refuse(r, c, 401, "invalid_api_key", "a valid API key is required (Authorization: Bearer KEY)");
    }
    if (!r->is_post) return answer_get(s, r, c);
    if (atomic_load(&s->stopping)) return refuse(r, c, 503, "shutting_down", "the server is shutting down");
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > s->cfg->max_body)
      return refuse(r, c, 413, "body_too_large", "the body (%s bytes) is larger than the %u byte limit", cl,
                    s->cfg->max_body);
    return MHD_YES;
  }
  if (r->draining) { /* a refused request's body: thrown away, within bounds; answered at its end */
    if (*upload_size == 0) return send_pending(r, c);
    r->drained += *upload_size;
    *upload_size = 0;
    if (r->drained > DRAIN_MAX_BYTES || now_s() > r->drain_until) return send_pending(r, c); /* then closed */
    return MHD_YES;
  }
  if (*upload_size) { /* body bytes */
    if (!r->answered && !r->too_big) {
      if (r->n + *upload_size > s->cfg->max_body) {
        r->too_big = true;
        free(r->body);
        r->body = NULL;
        r->n = r->cap = 0;
        return refuse(r, c, 413, "body_too_large", "the body is larger than the %u byte limit", s->cfg->max_body);
      } else {
        if (r->n + *upload_size + 1 > r->cap) {
          size_t cap = r->cap ? r->cap : 4096;
          while (cap < r->n + *upload_size + 1) cap *= 2;
          char *nb = realloc(r->body, cap);
          if (!nb) return MHD_NO;
          r->body = nb;
          r->cap = cap;
        }
        memcpy(r->body + r->n, upload, *upload_size);
        r->n += *upload_size;
      }
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (r->answered) return MHD_YES;
  if (r->job) { /* resumed by the worker */
    job *j = r->job;
    pthread_mutex_lock(&s->mu); /* pairs with the worker's unlock after writing the answer */
    pthread_mutex_unlock(&s->mu);
    if (atomic_load(&j->gone)) {
      count_request(s, r->ep, 499, now_s() - r->t0);
      r->answered = true;
      return MHD_NO; /* nobody is listening: close */
    }
    char *body = j->body;
    j->body = NULL;
    return send_body(r, c, j->status, j->ctype, body, j->body_len, j->cat_id);
  }
  if (r->too_big) return send_error(r, c, 413, "body_too_large", NULL, "the body is larger than the %u byte limit", s->cfg->max_body);
  return submit(s, r, c);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
  (void)toe;
  server *s = cls;
  req *r = *con_cls;
  *con_cls = NULL;
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  if (ci && ci->socket_context) {
    pthread_mutex_lock(&s->conn_mu);
    conn_track *t = ci->socket_context;
    t->in_request = false;
    t->since = now_s();
    pthread_mutex_unlock(&s->conn_mu);
  }
  if (!r) return;
  if (r->job) {
    job_free(r->job);
    pthread_mutex_lock(&s->mu);
    s->open_jobs--;
    pthread_cond_broadcast(&s->cv_idle);
    pthread_mutex_unlock(&s->mu);
  }
  free(r->body);
  free(r);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
  server *s = cls;
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    conn_track *t = calloc(1, sizeof *t);
    if (!t) return;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    t->fd = ci ? ci->connect_fd : -1;
    t->since = now_s();
    pthread_mutex_lock(&s->conn_mu);
    t->next = s->conns;
    if (s->conns) s->conns->prev = t;
    s->conns = t;
    s->n_conns++;
    pthread_mutex_unlock(&s->conn_mu);
    *socket_context = t;
  } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
    conn_track *t = *socket_context;
    pthread_mutex_lock(&s->conn_mu);
    if (t->prev) t->prev->next = t->next;
    else s->conns = t->next;
    if (t->next) t->next->prev = t->prev;
    s->n_conns--;
    pthread_mutex_unlock(&s->conn_mu);
    free(t);
    *socket_context = NULL;
  }
}

/* Shuts connections that have not delivered a request head within header_timeout_s (slow clients), and
 * those still draining a refused request's body at its deadline (slow bodies); libmicrohttpd then closes
 * them. */
static void *reaper_main(void *arg) {
  server *s = arg;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    const bool quit = s->quit;
    pthread_mutex_unlock(&s->mu);
    if (quit) break;
    const double t = now_s();
    uint32_t n = 0;
    pthread_mutex_lock(&s->conn_mu);
    for (conn_track *c = s->conns; c; c = c->next)
      if (!c->reaped && c->fd >= 0 &&
          ((!c->in_request && t - c->since > s->cfg->header_timeout_s) || (c->drain_until > 0 && t > c->drain_until))) {
        shutdown(c->fd, SHUT_RDWR);
        c->reaped = true;
        n++;
      }
    pthread_mutex_unlock(&s->conn_mu);
    if (n) {
      pthread_mutex_lock(&s->met_mu);
      s->met.reaped += n;
      pthread_mutex_unlock(&s->met_mu);
    }
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static void log_mhd(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  (void)fmt;
  (void)ap; /* libmicrohttpd's per-connection complaints (resets, timeouts) are the hostile clients' business */
}

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
