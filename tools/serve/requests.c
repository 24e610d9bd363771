/* requests.c — `fgemma serve`: request bodies validated into a job (on libmicrohttpd's threads). */
#include "serve_internal.h"

// ----------------------------------------------------------------------------------------------
// requests: validation into a job (libmicrohttpd's threads)

bool fail(bad *b, unsigned status, const char *code, const char *param, const char *fmt, ...) {
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

bool parse_chat(const server *s, cJSON *root, job *j, bad *b) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "model");
  if (v && !cJSON_IsString(v)) return fail(b, 400, "invalid_type", "model", "model must be a string");
  snprintf(j->model, sizeof j->model, "%s", v ? v->valuestring : s->cfg->model_id);
  const bool model_named = v && v->valuestring[0];
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
  return pick_adapter(s, j, model_named, b);
}

bool parse_nlu(const server *s, cJSON *root, job *j, bad *b) {
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
  cJSON *mv = cJSON_GetObjectItemCaseSensitive(root, "model");
  if (mv && !cJSON_IsString(mv)) return fail(b, 400, "invalid_type", "model", "model must be a string");
  snprintf(j->model, sizeof j->model, "%s", mv ? mv->valuestring : s->cfg->model_id);
  return pick_adapter(s, j, mv && mv->valuestring[0], b);
}

// ----------------------------------------------------------------------------------------------
// Adapters: one base in memory, a view per named adapter (--lora NAME=FILE, --lora-catalog)

uint64_t serve_catalog_prefix_hash(const char *json, size_t len) {
  fg_catalog *c = NULL;
  if (fg_catalog_parse(json, len, &c, NULL) != FG_OK) return 0;
  size_t n = 0;
  char *text = NULL;
  uint64_t h = 0;
  if (fg_catalog_render_prefix(c, NULL, 0, &n) == FG_ERR_BUFFER_TOO_SMALL && (text = malloc(n + 1)) &&
      fg_catalog_render_prefix(c, text, n + 1, &n) == FG_OK)
    h = fnv1a(text, n);
  free(text);
  fg_catalog_free(c);
  return h;
}

/* The adapter the request's catalog is bound to (--lora-catalog), or -1. */
static long bound_adapter(const server *s, const job *j) {
  if (!s->cfg->n_bindings || j->by_id || !j->cat_json) return -1;
  const uint64_t h = serve_catalog_prefix_hash(j->cat_json, strlen(j->cat_json));
  for (size_t i = 0; h && i < s->cfg->n_bindings; i++)
    if (s->cfg->bindings[i].prefix_hash == h) return (long)s->cfg->bindings[i].adapter;
  return -1;
}

bool pick_adapter(const server *s, job *j, bool named, bad *b) {
  const serve_config *cfg = s->cfg;
  j->mdl = s->model;
  if (cfg->n_adapters == 0) return true; /* one model: any name is answered by it, as OpenAI clients expect */
  long k = -1;
  for (size_t i = 0; named && i < cfg->n_adapters; i++)
    if (strcmp(j->model, cfg->adapters[i].name) == 0) k = (long)i;
  if (k < 0 && named && strcmp(j->model, cfg->model_id) != 0) {
    sb names = {0};
    for (size_t i = 0; i < cfg->n_adapters; i++) sb_printf(&names, "%s'%s'", i ? ", " : "", cfg->adapters[i].name);
    fail(b, 404, "model_not_found", "model", "The model '%s' does not exist: this server answers '%s' and its adapters %s "
         "(GET /v1/models)", j->model, cfg->model_id, names.p ? names.p : "");
    free(names.p);
    return false;
  }
  if (k < 0) k = bound_adapter(s, j);
  if (k < 0) return true;
  const serve_adapter *a = &cfg->adapters[k];
  j->mdl = a->model;
  snprintf(j->model, sizeof j->model, "%s", a->name);
  if (!j->by_id) { /* cached per (adapter, catalog) */
    j->hash ^= fnv1a(a->name, strlen(a->name)) * 0x9E3779B97F4A7C15ull;
    snprintf(j->cat_id, sizeof j->cat_id, "cat-%016llx", (unsigned long long)j->hash);
  }
  return true;
}
