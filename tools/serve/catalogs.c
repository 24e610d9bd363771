/* catalogs.c — `fgemma serve`: the catalog cache (a prefilled engine per distinct tool list) and its
 * idle engines. */
#include "serve_internal.h"

// ----------------------------------------------------------------------------------------------
// catalog cache: an engine per distinct tool list, prefilled once, LRU within cfg->max_catalogs

static void engine_free(engine *g) {
  if (!g) return;
  fg_nlu_free(g->nlu);
  free(g);
}

void cat_free(cat_entry *e) {
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
cat_entry *cat_acquire(server *s, job *j, bool *was_cached) {
  pthread_mutex_lock(&s->cat_mu);
  cat_entry *e = s->cats;
  while (e && e->hash != j->hash) e = e->next; /* the hash covers the adapter (pick_adapter) */
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
  e->model = j->mdl;
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
    st = fg_nlu_create(e->model, catalog, &p, &base, &err);
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

void cat_release(server *s, cat_entry *e) {
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

engine *engine_acquire(server *s, cat_entry *e, job *j) {
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
void engine_release(server *s, cat_entry *e, engine *g) {
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
