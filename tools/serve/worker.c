/* worker.c — `fgemma serve`: the worker threads that answer queued requests (NLU and chat responses). */
#include "serve_internal.h"

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
            fg_nlu_stop_name(r->stop), r->chunk_tokens, r->decode_tokens, r->full_head_steps, r->sparse_head_steps, r->forced_tokens,
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
  const bool length = r->stop == FG_NLU_STOP_MAX_TOKENS || r->stop == FG_NLU_STOP_CONTEXT_FULL;
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
  cJSON_AddStringToObject(ext, "stop", fg_nlu_stop_name(r->stop));
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

void *worker_main(void *arg) {
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

void job_free(job *j) {
  if (!j) return;
  free(j->cat_json);
  free(j->utt);
  free(j->body);
  free(j);
}
