/* answers.c — `fgemma serve`: OpenAI-style error bodies, sending answers, counting them, client checks. */
#include "serve_internal.h"

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

void count_request(server *s, int ep, unsigned status, double secs) {
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
enum MHD_Result send_body(req *r, struct MHD_Connection *c, unsigned status, const char *ctype, char *body,
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

enum MHD_Result send_error(req *r, struct MHD_Connection *c, unsigned status, const char *code, const char *param,
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
enum MHD_Result refuse(req *r, struct MHD_Connection *c, unsigned status, const char *code, const char *fmt, ...) {
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

enum MHD_Result send_pending(req *r, struct MHD_Connection *c) {
  r->draining = false;
  server *s = r->srv;
  pthread_mutex_lock(&s->conn_mu);
  if (r->track) r->track->drain_until = 0;
  pthread_mutex_unlock(&s->conn_mu);
  return send_error(r, c, r->pend_status, r->pend_code, NULL, "%s", r->pend_msg);
}

void job_error(job *j, unsigned status, const char *code, const char *fmt, ...) {
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
bool client_gone(int fd) {
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
bool build_abort(void *ud) {
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
