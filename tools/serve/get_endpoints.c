/* get_endpoints.c — `fgemma serve`: the GET endpoints (/v1/models, /health, /metrics). */
#include "serve_internal.h"

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

enum MHD_Result answer_get(server *s, req *r, struct MHD_Connection *c) {
  sb b = {0};
  if (r->ep == EP_MODELS) {
    sb_puts(&b, "{\"object\":\"list\",\"data\":[{\"id\":");
    sb_json_str(&b, s->cfg->model_id, strlen(s->cfg->model_id));
    sb_puts(&b, ",\"object\":\"model\",\"created\":0,\"owned_by\":\"fgemma\"}");
    for (size_t i = 0; i < s->cfg->n_adapters; i++) { /* --lora NAME=FILE: the names requests may give */
      sb_puts(&b, ",{\"id\":");
      sb_json_str(&b, s->cfg->adapters[i].name, strlen(s->cfg->adapters[i].name));
      sb_puts(&b, ",\"object\":\"model\",\"created\":0,\"owned_by\":\"fgemma\",\"parent\":");
      sb_json_str(&b, s->cfg->model_id, strlen(s->cfg->model_id));
      sb_puts(&b, "}");
    }
    sb_puts(&b, "]}\n");
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
