/* serve_internal.h — what the files of `fgemma serve` (tools/serve/, docs/SERVER.md) share: the
 * server's types (catalog entries, engines, jobs, connections, requests, metrics) and the functions one
 * file calls in another. Not installed; includes only fgemma.h, cJSON and microhttpd. */
#ifndef FG_SERVE_INTERNAL_H
#define FG_SERVE_INTERNAL_H

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
// small helpers (strbuf.c): clock, string builder, hashing

typedef struct sb {
  char *p;
  size_t n, cap;
  bool oom;
} sb;

double now_s(void);
void sb_puts(sb *b, const char *s);
void sb_printf(sb *b, const char *fmt, ...);
void sb_json_str(sb *b, const char *s, size_t n);
uint64_t fnv1a(const char *s, size_t n);
bool key_equal(const char *given, size_t gn, const char *want);

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
  uint64_t hash;        /* of the catalog, mixed with the adapter's name when it runs on one */
  const fg_model *model; /* the served model or an adapter's view */
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
  const fg_model *mdl; /* the model or adapter view the request runs on (pick_adapter) */
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

/* a request found invalid: its answer (requests.c) */
typedef struct bad {
  unsigned status;
  const char *code, *param;
  char msg[384];
} bad;

/* answers.c */
void count_request(server *s, int ep, unsigned status, double secs);
enum MHD_Result send_body(req *r, struct MHD_Connection *c, unsigned status, const char *ctype, char *body,
                          size_t len, const char *cat_id);
enum MHD_Result send_error(req *r, struct MHD_Connection *c, unsigned status, const char *code, const char *param,
                           const char *fmt, ...);
enum MHD_Result refuse(req *r, struct MHD_Connection *c, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
enum MHD_Result send_pending(req *r, struct MHD_Connection *c);
void job_error(job *j, unsigned status, const char *code, const char *fmt, ...);
bool client_gone(int fd);
bool build_abort(void *ud);

/* catalogs.c */
void cat_free(cat_entry *e);
cat_entry *cat_acquire(server *s, job *j, bool *was_cached);
void cat_release(server *s, cat_entry *e);
engine *engine_acquire(server *s, cat_entry *e, job *j);
void engine_release(server *s, cat_entry *e, engine *g);

/* worker.c */
void *worker_main(void *arg);
void job_free(job *j);

/* requests.c */
bool fail(bad *b, unsigned status, const char *code, const char *param, const char *fmt, ...);
bool parse_chat(const server *s, cJSON *root, job *j, bad *b);
bool parse_nlu(const server *s, cJSON *root, job *j, bad *b);
/* The model the request runs on: the adapter its "model" names, else the adapter its catalog is bound to
 * (--lora-catalog), else the served model; an unknown name when adapters are named is a 404. */
bool pick_adapter(const server *s, job *j, bool named, bad *b);


/* get_endpoints.c */
enum MHD_Result answer_get(server *s, req *r, struct MHD_Connection *c);

/* http.c */
enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *upload, size_t *upload_size, void **con_cls);
void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe);
void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                   enum MHD_ConnectionNotificationCode toe);
void *reaper_main(void *arg);
void log_mhd(void *cls, const char *fmt, va_list ap);

#endif
