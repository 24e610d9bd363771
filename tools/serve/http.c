/* http.c — `fgemma serve`: the libmicrohttpd handler (routing, auth, bodies, queueing), connection
 * tracking, the reaper. */
#include "serve_internal.h"

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

enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
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

void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
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

void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
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
void *reaper_main(void *arg) {
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

void log_mhd(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  (void)fmt;
  (void)ap; /* libmicrohttpd's per-connection complaints (resets, timeouts) are the hostile clients' business */
}
