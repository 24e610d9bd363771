/* cmd_eval_calls.c — `fgemma eval --calls`: call accuracy of one or more models (x heads x decoding
 * modes) on a labelled set, answered by the NLU engine and scored against the expected calls. The
 * other forms of eval are in cmd_eval.c, which runs this one. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// eval --calls: call accuracy on a labelled set (one {"utterance","expected"} per line)

static int cmp_ms(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct call_item {
  char *utt;             /* the utterance */
  cJSON *expected;       /* {"calls":[{"name","args"}...]} or {"text":"..."} */
  bool expect_calls;
  char lang[16];         /* the line's "lang", or "" */
} call_item;

typedef struct call_row {
  const char *model_path;
  char head_name[16];    /* "file", "q8_0", "q4_0" as asked */
  uint32_t constrain;
  uint32_t weight_type, head_type;
  bool head_copy, tied;
  uint32_t prefix_tokens;
  double prefix_ms;
  /* counts */
  uint64_t n, n_expect_calls, n_expect_text;
  uint64_t exact, exact_calls, exact_text, function;
  uint64_t args_right, args_total; /* argument keys right / keys in the union of expected and produced */
  uint64_t calls, invalid_calls, no_call_answers, errors;
  uint64_t decode, full_head, sparse_head, forced;
  double *ms;            /* (n) per-utterance wall time of fg_nlu_ask */
  bool *item_exact;      /* (n) per utterance: exact (cli_calls_score), or NULL */
  char **item_answer;    /* (n) per utterance: the answer's JSON (cli_calls_score), or NULL */
  cli_spec_stats spec;   /* weight passes and drafts (speculation, docs/SPECULATION.md) */
} call_row;


/* Equal as JSON values: same type, numbers equal as doubles (3 == 3.0), strings byte for byte,
 * arrays in order, objects with the same keys (any order) and equal values. */
static bool json_equal(const cJSON *a, const cJSON *b) {
  if (!a || !b) return a == b;
  const int ta = a->type & 0xff, tb = b->type & 0xff;
  if (ta != tb) return false;
  switch (ta) {
    case cJSON_False:
    case cJSON_True:
    case cJSON_NULL: return true;
    case cJSON_Number: return a->valuedouble == b->valuedouble;
    case cJSON_String: return strcmp(a->valuestring, b->valuestring) == 0;
    case cJSON_Array: {
      const cJSON *x = a->child, *y = b->child;
      for (; x && y; x = x->next, y = y->next)
        if (!json_equal(x, y)) return false;
      return !x && !y;
    }
    case cJSON_Object: {
      int na = cJSON_GetArraySize(a), nb = cJSON_GetArraySize(b);
      if (na != nb) return false;
      for (const cJSON *x = a->child; x; x = x->next) {
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
        if (!y || !json_equal(x, y)) return false;
      }
      return true;
    }
    default: return false;
  }
}

/* A produced call is valid when the parser flagged nothing: only "name" and "args". */
static bool call_valid(const cJSON *call) {
  for (const cJSON *k = call->child; k; k = k->next)
    if (strcmp(k->string, "name") != 0 && strcmp(k->string, "args") != 0) return false;
  return true;
}

/* Reads the labelled set; returns the count, or -1 after printing an error naming the line. */
static long read_calls(const char *path, call_item **out) {
  size_t len;
  char *buf = cli_read_file(path, &len);
  if (!buf) return -1;
  call_item *items = NULL;
  size_t n = 0, cap = 0;
  unsigned long lineno = 0;
  long rc = 0;
  for (char *line = buf, *next; line && *line; line = next) {
    lineno++;
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    size_t k = strlen(line);
    while (k && (line[k - 1] == '\r' || line[k - 1] == ' ' || line[k - 1] == '\t')) line[--k] = '\0';
    if (k == 0) continue;
    cJSON *o = cJSON_ParseWithLength(line, k);
    const cJSON *u = o ? cJSON_GetObjectItemCaseSensitive(o, "utterance") : NULL;
    cJSON *e = o ? cJSON_GetObjectItemCaseSensitive(o, "expected") : NULL;
    const cJSON *ec = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "calls") : NULL;
    const cJSON *et = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "text") : NULL;
    const char *why = !o ? "not a JSON object"
                      : !cJSON_IsString(u) || !*u->valuestring ? "no \"utterance\" string"
                      : !cJSON_IsObject(e) ? "no \"expected\" object"
                      : (ec != NULL) == (et != NULL) ? "\"expected\" needs exactly one of \"calls\" and \"text\""
                      : ec && !cJSON_IsArray(ec) ? "\"expected\".\"calls\" is not an array"
                      : et && !cJSON_IsString(et) ? "\"expected\".\"text\" is not a string"
                      : NULL;
    if (!why && ec) {
      for (const cJSON *c = ec->child; c && !why; c = c->next) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(c, "name");
        const cJSON *ar = cJSON_GetObjectItemCaseSensitive(c, "args");
        if (!cJSON_IsObject(c) || !cJSON_IsString(nm)) why = "an expected call has no \"name\" string";
        else if (ar && !cJSON_IsObject(ar)) why = "an expected call's \"args\" is not an object";
      }
    }
    if (why) {
      cli_error("eval: %s:%lu: %s", path, lineno, why);
      cJSON_Delete(o);
      rc = -1;
      break;
    }
    if (n == cap) {
      cap = cap ? cap * 2 : 256;
      call_item *ni = realloc(items, cap * sizeof *items);
      if (!ni) {
        cJSON_Delete(o);
        rc = cli_error("out of memory"), rc = -1;
        break;
      }
      items = ni;
    }
    items[n].utt = strdup(u->valuestring);
    items[n].expected = cJSON_DetachItemFromObjectCaseSensitive(o, "expected");
    items[n].expect_calls = ec != NULL;
    const cJSON *lg = cJSON_GetObjectItemCaseSensitive(o, "lang");
    snprintf(items[n].lang, sizeof items[n].lang, "%s", cJSON_IsString(lg) ? lg->valuestring : "");
    cJSON_Delete(o);
    if (!items[n].utt) {
      cJSON_Delete(items[n].expected);
      rc = cli_error("out of memory"), rc = -1;
      break;
    }
    n++;
  }
  free(buf);
  if (rc < 0) {
    for (size_t i = 0; i < n; i++) free(items[i].utt), cJSON_Delete(items[i].expected);
    free(items);
    return -1;
  }
  if (n == 0) {
    free(items);
    cli_error("eval: %s holds no utterances", path);
    return -1;
  }
  *out = items;
  return (long)n;
}

/* Scores one answer against its expectation and adds it to the row; *exact_out / *func_out / *valid_out
 * say how it went (for --details). */
static void score(call_row *r, const call_item *it, const cJSON *got, bool *exact_out, bool *func_out, bool *valid_out) {
  const cJSON *gc = cJSON_GetObjectItemCaseSensitive(got, "calls");
  const cJSON *gt = cJSON_GetObjectItemCaseSensitive(got, "text");
  const char *text = cJSON_IsString(gt) ? gt->valuestring : "";
  const int n_got = cJSON_IsArray(gc) ? cJSON_GetArraySize(gc) : 0;
  bool valid = !cJSON_GetObjectItemCaseSensitive(got, "truncated");
  for (const cJSON *c = n_got ? gc->child : NULL; c; c = c->next) {
    r->calls++;
    if (!call_valid(c)) r->invalid_calls++, valid = false;
  }
  if (n_got == 0) r->no_call_answers++;
  bool exact = false, func = false;
  if (it->expect_calls) {
    const cJSON *ec = cJSON_GetObjectItemCaseSensitive(it->expected, "calls");
    const int n_exp = cJSON_GetArraySize(ec);
    func = n_got == n_exp;
    for (int i = 0; i < n_exp && func; i++) {
      const cJSON *e = cJSON_GetArrayItem(ec, i), *g = cJSON_GetArrayItem(gc, i);
      const cJSON *gn = cJSON_GetObjectItemCaseSensitive(g, "name");
      func = cJSON_IsString(gn) && strcmp(gn->valuestring, cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring) == 0;
    }
    exact = func && valid && *text == '\0';
    for (int i = 0; i < n_exp && func; i++) {
      const cJSON *ea = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ec, i), "args");
      const cJSON *ga = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(gc, i), "args");
      /* union of keys: expected keys (right when equal) plus produced keys that were not expected */
      for (const cJSON *x = ea ? ea->child : NULL; x; x = x->next) {
        const cJSON *y = ga ? cJSON_GetObjectItemCaseSensitive(ga, x->string) : NULL;
        r->args_total++;
        if (y && json_equal(x, y)) r->args_right++;
        else exact = false;
      }
      for (const cJSON *y = ga ? ga->child : NULL; y; y = y->next) {
        if (!ea || !cJSON_GetObjectItemCaseSensitive(ea, y->string)) {
          r->args_total++;
          exact = false;
        }
      }
    }
    r->n_expect_calls++;
    r->exact_calls += exact;
  } else {
    func = n_got == 0;
    exact = func && strcmp(text, cJSON_GetObjectItemCaseSensitive(it->expected, "text")->valuestring) == 0;
    r->n_expect_text++;
    r->exact_text += exact;
  }
  r->exact += exact;
  r->function += func;
  *exact_out = exact;
  *func_out = func;
  *valid_out = valid && n_got > 0;
}

static double pct(double x, uint64_t of) { return of ? 100.0 * x / (double)of : 0.0; }

static void row_percentiles(const call_row *r, double *p50, double *p95) {
  *p50 = *p95 = 0.0;
  if (!r->n) return;
  double *s = malloc(r->n * sizeof *s);
  if (!s) return;
  memcpy(s, r->ms, r->n * sizeof *s);
  qsort(s, r->n, sizeof *s, cmp_ms);
  *p50 = s[(r->n - 1) / 2];
  *p95 = s[(size_t)((double)(r->n - 1) * 0.95 + 0.5)];
  free(s);
}

static void print_row_json(call_row *r, bool first) {
  double p50, p95;
  row_percentiles(r, &p50, &p95);
  const double n = r->n ? (double)r->n : 1.0;
  printf("%s{\"model\":", first ? "" : ",");
  cli_json_str(stdout, r->model_path, strlen(r->model_path));
  printf(",\"weights\":\"%s\",\"head\":\"%s\",\"head_source\":\"%s\",\"constrained\":\"%s\","
         "\"n\":%llu,\"n_expect_calls\":%llu,\"n_expect_text\":%llu,"
         "\"exact_n\":%llu,\"exact_calls_n\":%llu,\"exact_text_n\":%llu,\"function_n\":%llu,"
         "\"args_right\":%llu,\"args_total\":%llu,\"calls\":%llu,\"invalid_calls\":%llu,\"no_call_answers\":%llu,"
         "\"errors\":%llu,\"exact\":%.6f,\"exact_calls\":%.6f,\"exact_text\":%.6f,\"function\":%.6f,\"args\":%.6f,"
         "\"invalid_rate\":%.6f,\"p50_ms\":%.3f,\"p95_ms\":%.3f,"
         "\"tokens\":{\"decode\":%.3f,\"full_head\":%.3f,\"sparse_head\":%.3f,\"forced\":%.3f},"
         "\"prefix_tokens\":%u,\"prefix_ms\":%.1f,\"speculation\":{",
         fg_type_name(r->weight_type), fg_type_name(r->head_type),
         r->head_copy ? "load" : r->tied ? "tied" : "file", cli_constrained_name(r->constrain),
         (unsigned long long)r->n, (unsigned long long)r->n_expect_calls, (unsigned long long)r->n_expect_text,
         (unsigned long long)r->exact, (unsigned long long)r->exact_calls, (unsigned long long)r->exact_text,
         (unsigned long long)r->function, (unsigned long long)r->args_right, (unsigned long long)r->args_total,
         (unsigned long long)r->calls, (unsigned long long)r->invalid_calls, (unsigned long long)r->no_call_answers,
         (unsigned long long)r->errors, (double)r->exact / n,
         r->n_expect_calls ? (double)r->exact_calls / (double)r->n_expect_calls : 0.0,
         r->n_expect_text ? (double)r->exact_text / (double)r->n_expect_text : 0.0, (double)r->function / n,
         r->args_total ? (double)r->args_right / (double)r->args_total : 0.0,
         r->calls ? (double)r->invalid_calls / (double)r->calls : 0.0, p50, p95, (double)r->decode / n,
         (double)r->full_head / n, (double)r->sparse_head / n, (double)r->forced / n, r->prefix_tokens, r->prefix_ms);
  cli_spec_json(stdout, &r->spec);
  printf("}}");
}

static void print_table_head(void) {
  printf("%-24s %-5s %-10s %-12s %5s %7s %7s %7s %7s %7s %8s %8s %6s %5s %6s %6s %6s\n", "model", "wts", "head",
         "constrained", "n", "exact", "calls", "func", "args", "invalid", "p50 ms", "p95 ms", "tok", "full", "sparse", "forced",
         "passes");
}

/* Median weight passes per answer after the utterance chunk. */
static double passes_median(const call_row *r) {
  const cli_spec_stats *st = &r->spec;
  if (!st->n) return 0;
  uint32_t *v = malloc(st->n * sizeof *v);
  if (!v) return 0;
  memcpy(v, st->after, st->n * sizeof *v);
  for (size_t i = 1; i < st->n; i++) /* insertion sort: a few hundred answers */
    for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
      const uint32_t t = v[j];
      v[j] = v[j - 1], v[j - 1] = t;
    }
  const double med = st->n % 2 ? v[st->n / 2] : 0.5 * (v[st->n / 2 - 1] + v[st->n / 2]);
  free(v);
  return med;
}

static void print_table_row(const call_row *r) {
  double p50, p95;
  row_percentiles(r, &p50, &p95);
  const char *base = strrchr(r->model_path, '/');
  base = base ? base + 1 : r->model_path;
  char head[32];
  snprintf(head, sizeof head, "%s%s", fg_type_name(r->head_type), r->head_copy ? "(load)" : r->tied ? "(tied)" : "");
  const double n = r->n ? (double)r->n : 1.0;
  printf("%-24.24s %-5s %-10s %-12s %5llu %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% %8.1f %8.1f %6.1f %5.1f %6.1f %6.1f %6.1f\n",
         base, fg_type_name(r->weight_type), head, cli_constrained_name(r->constrain), (unsigned long long)r->n,
         pct((double)r->exact, r->n), pct((double)r->exact_calls, r->n_expect_calls), pct((double)r->function, r->n),
         pct((double)r->args_right, r->args_total), pct((double)r->invalid_calls, r->calls), p50, p95,
         (double)r->decode / n, (double)r->full_head / n, (double)r->sparse_head / n, (double)r->forced / n,
         passes_median(r));
}

/* eval --calls as the command line asks it: the comma lists split in place, every option checked. */
typedef struct calls_cfg {
  const char *data, *tools;
  char *models_buf, *heads_buf, *modes_buf; /* owned: the lists below point into them */
  char *models[16], *heads[4], *modes[3];
  size_t n_models, n_heads, n_modes;
  uint32_t head_types[4], mode_ids[3];
  uint32_t max_tokens, speculate, every;
  fg_session_params sp;
} calls_cfg;

static void calls_cfg_free(calls_cfg *c) { free(c->models_buf), free(c->heads_buf), free(c->modes_buf); }

/* Reads eval --calls' options into c (zeroed by the caller, freed by it with calls_cfg_free); 0, or the
 * exit status of an error already printed. */
static int calls_options(const cli_opt *opts, const cli_args *a, calls_cfg *c) {
  static const char *const logits_only[] = {"reference", "catalog", "utterances", "answer"};
  for (size_t i = 0; i < sizeof logits_only / sizeof logits_only[0]; i++)
    if (cli_has(opts, a, logits_only[i])) return cli_error("eval: --%s does not go with --calls", logits_only[i]), 2;
  c->data = cli_get(opts, a, "calls");
  c->tools = cli_get(opts, a, "tools");
  if (!c->tools) return cli_error("eval --calls: --tools CATALOG.json is required"), 2;
  const char *mv = cli_get(opts, a, "model");
  if (!mv) mv = getenv("FGEMMA_MODEL");
  if (!mv || !*mv) return cli_error("eval --calls: no model given: use -m MODEL.gguf[,MODEL2.gguf...]"), 2;
  c->models_buf = strdup(mv);
  const fg_model_params *gp = cli_model_params();
  c->heads_buf = strdup(cli_get(opts, a, "heads") ? cli_get(opts, a, "heads")
                        : gp->head_type == 8 ? "q8_0" : gp->head_type == 2 ? "q4_0" : "file");
  c->modes_buf = strdup(cli_get(opts, a, "constrained") ? cli_get(opts, a, "constrained") : "call-or-text");
  if (!c->models_buf || !c->heads_buf || !c->modes_buf) return cli_error("out of memory");
  c->n_models = cli_split_list(c->models_buf, c->models, 16);
  c->n_heads = cli_split_list(c->heads_buf, c->heads, 4);
  c->n_modes = cli_split_list(c->modes_buf, c->modes, 3);
  int rc = 0;
  for (size_t i = 0; i < c->n_heads && !rc; i++) {
    if (strcmp(c->heads[i], "file") == 0) c->head_types[i] = FG_MODEL_HEAD_AS_FILE;
    else if (strcmp(c->heads[i], "q8_0") == 0) c->head_types[i] = 8;
    else if (strcmp(c->heads[i], "q4_0") == 0) c->head_types[i] = 2;
    else rc = cli_error("--heads: '%s' is not file, q8_0 or q4_0", c->heads[i]), rc = 2;
  }
  for (size_t i = 0; i < c->n_modes && !rc; i++) {
    if (strcmp(c->modes[i], "off") == 0) c->mode_ids[i] = FG_NLU_CONSTRAIN_OFF;
    else if (strcmp(c->modes[i], "call-only") == 0) c->mode_ids[i] = FG_NLU_CONSTRAIN_CALL_ONLY;
    else if (strcmp(c->modes[i], "call-or-text") == 0) c->mode_ids[i] = FG_NLU_CONSTRAIN_CALL_OR_TEXT;
    else rc = cli_error("--constrained: '%s' is not off, call-only or call-or-text", c->modes[i]), rc = 2;
  }
  if (!rc && (!c->n_models || !c->n_heads || !c->n_modes)) rc = cli_error("eval --calls: an empty list"), rc = 2;
  c->max_tokens = 64;
  const char *v;
  if (!rc && (v = cli_get(opts, a, "max-tokens")) && !cli_u32("--max-tokens", v, 1, 1u << 16, &c->max_tokens)) rc = 2;
  c->speculate = FG_NLU_SPECULATE_DEFAULT;
  if (!rc && (v = cli_get(opts, a, "speculate")) && !cli_speculate(v, &c->speculate)) rc = 2;
  cli_session_params_init(&c->sp);
  if (!rc && (v = cli_get(opts, a, "threads")) && !cli_u32("--threads", v, 1, 256, &c->sp.n_threads)) rc = 2;
  if (rc) return rc;

  c->every = 1;
  if ((v = cli_get(opts, a, "every")) && !cli_u32("--every", v, 1, 1u << 20, &c->every)) return 2;
  return 0;
}

/* What the rows of one eval --calls run share. */
typedef struct calls_run {
  const calls_cfg *cfg;
  const call_item *items; /* (n_items) */
  long n_items;
  const fg_catalog *cat;
  FILE *details;          /* --details, or NULL */
  size_t n_rows;
  bool tty;
  double t0;
} calls_run;

/* Row k: every item answered by model m (file mi, head hi) in decoding mode oi; 0 or an exit status. */
static int calls_row(const calls_run *x, call_row *r, size_t k, const fg_model *m, const fg_model_info *info,
                     size_t mi, size_t hi, size_t oi) {
  const calls_cfg *c = x->cfg;
  r->model_path = c->models[mi];
  snprintf(r->head_name, sizeof r->head_name, "%s", c->heads[hi]);
  r->constrain = c->mode_ids[oi];
  r->weight_type = info->weight_type;
  r->head_type = info->head_type;
  r->head_copy = info->head_copy_bytes != 0;
  r->tied = info->tied_head;
  if (!(r->ms = calloc((size_t)x->n_items, sizeof *r->ms))) return cli_error("out of memory");
  fg_nlu_params np;
  fg_nlu_params_init(&np);
  np.session = c->sp;
  np.max_tokens = c->max_tokens;
  np.constrained = c->mode_ids[oi];
  np.speculate = c->speculate;
  np.flags |= FG_NLU_NO_ANSWER_CACHE; /* every answer computed: passes and latency of first answers */
  fg_nlu *nlu = NULL;
  fg_error err = {0};
  fg_status st;
  if ((st = fg_nlu_create(m, x->cat, &np, &nlu, &err)) != FG_OK)
    return cli_status_error(st, "eval: cannot prepare the catalog", err.msg);
  fg_nlu_info ni;
  fg_nlu_get_info(nlu, &ni);
  r->prefix_tokens = ni.prefix_tokens;
  r->prefix_ms = ni.prefix_ms;
  for (long i = 0; i < x->n_items; i++) {
    const call_item *it = &x->items[i];
    fg_nlu_result res;
    const double ta = cli_now();
    st = fg_nlu_ask(nlu, it->utt, strlen(it->utt), &res);
    r->ms[r->n] = (cli_now() - ta) * 1e3;
    cJSON *got = st == FG_OK ? cJSON_Parse(res.json) : NULL;
    bool exact = false, func = false, valid = false;
    if (!got) {
      /* an utterance the engine refused (e.g. it does not fit the context): wrong, counted */
      cJSON *empty = cJSON_CreateObject();
      r->errors++;
      if (empty) score(r, it, empty, &exact, &func, &valid);
      cJSON_Delete(empty);
    } else {
      score(r, it, got, &exact, &func, &valid);
      r->decode += res.decode_tokens;
      r->full_head += res.full_head_steps;
      r->sparse_head += res.sparse_head_steps;
      r->forced += res.forced_tokens;
      cli_spec_add(&r->spec, &res);
    }
    if (r->item_exact) r->item_exact[r->n] = exact;
    if (r->item_answer && !(r->item_answer[r->n] = strdup(got ? res.json : ""))) {
      cJSON_Delete(got);
      fg_nlu_free(nlu);
      return cli_error("out of memory");
    }
    r->n++;
    if (x->details) {
      char *exp = cJSON_PrintUnformatted(it->expected);
      fprintf(x->details, "{\"row\":%zu,\"model\":", k);
      cli_json_str(x->details, c->models[mi], strlen(c->models[mi]));
      fprintf(x->details, ",\"head\":\"%s\",\"constrained\":\"%s\",\"utterance\":", c->heads[hi],
              cli_constrained_name(c->mode_ids[oi]));
      cli_json_str(x->details, it->utt, strlen(it->utt));
      fprintf(x->details, ",\"expected\":%s,\"result\":%s,\"raw\":", exp ? exp : "null", got ? res.json : "null");
      cli_json_str(x->details, got ? res.raw : "", strlen(got ? res.raw : ""));
      fprintf(x->details, ",\"exact\":%s,\"function\":%s,\"valid_call\":%s,\"ms\":%.3f}\n", exact ? "true" : "false",
              func ? "true" : "false", valid ? "true" : "false", r->ms[r->n - 1]);
      free(exp);
    }
    cJSON_Delete(got);
    if (x->tty && (r->n % 4 == 0 || (long)r->n == x->n_items))
      fprintf(stderr, "\reval: row %zu/%zu (%s, %s): %llu/%ld, exact %.1f%%, %.0f s   ", k + 1, x->n_rows,
              strrchr(c->models[mi], '/') ? strrchr(c->models[mi], '/') + 1 : c->models[mi],
              cli_constrained_name(c->mode_ids[oi]), (unsigned long long)r->n, x->n_items, pct((double)r->exact, r->n),
              cli_now() - x->t0);
  }
  fg_nlu_free(nlu);
  return 0;
}

int cli_eval_calls(const cli_opt *opts, const cli_args *a) {
  calls_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  int rc = calls_options(opts, a, &cfg);
  if (rc) {
    calls_cfg_free(&cfg);
    return rc;
  }
  const char *data = cfg.data, *tools = cfg.tools;
  const fg_model_params *gp = cli_model_params();
  call_item *items = NULL;
  long n_items = read_calls(data, &items);
  if (n_items > 0 && cfg.every > 1) { /* every N-th utterance, in order (the first one included) */
    long kept = 0;
    for (long i = 0; i < n_items; i++) {
      if (i % (long)cfg.every == 0) items[kept++] = items[i];
      else free(items[i].utt), cJSON_Delete(items[i].expected);
    }
    n_items = kept;
  }
  size_t cat_len = 0;
  char *cat_json = n_items > 0 ? cli_read_file(tools, &cat_len) : NULL;
  fg_catalog *cat = NULL;
  fg_error err = {0};
  FILE *details = NULL;
  const size_t n_rows = cfg.n_models * cfg.n_heads * cfg.n_modes;
  call_row *rows = calloc(n_rows, sizeof *rows);
  if (n_items < 0 || !cat_json) rc = 1;
  else if (!rows) rc = cli_error("out of memory");
  if (!rc) {
    fg_status st = fg_catalog_parse(cat_json, cat_len, &cat, &err);
    if (st != FG_OK) rc = cli_status_error(st, tools, err.msg);
  }
  if (!rc && cli_get(opts, a, "details") && !(details = fopen(cli_get(opts, a, "details"), "w")))
    rc = cli_error("eval: cannot write %s", cli_get(opts, a, "details"));
  const bool tty = !cli_has(opts, a, "json") && cli_stderr_is_tty();
  const double t0 = cli_now();
  const calls_run x = {&cfg, items, n_items, cat, details, n_rows, tty, t0};

  size_t k = 0;
  for (size_t mi = 0; mi < cfg.n_models && !rc; mi++) {
    for (size_t hi = 0; hi < cfg.n_heads && !rc; hi++) {
      fg_model_params mp;
      fg_model_params_init(&mp);
      mp.head_type = cfg.head_types[hi];
      mp.loras = gp->loras; /* --lora, --lora-merge */
      mp.n_loras = gp->n_loras;
      mp.lora_merge = gp->lora_merge;
      fg_model *m = NULL;
      fg_status st = fg_model_load(cfg.models[mi], &mp, &m, &err);
      if (st != FG_OK) {
        rc = cli_status_error(st, cfg.models[mi], err.msg);
        break;
      }
      fg_model_info info;
      fg_model_get_info(m, &info);
      for (size_t oi = 0; oi < cfg.n_modes && !rc; oi++, k++) rc = calls_row(&x, &rows[k], k, m, &info, mi, hi, oi);
      fg_model_free(m);
    }
  }
  if (tty) fputc('\n', stderr);
  if (!rc) {
    if (cli_has(opts, a, "json")) {
      printf("{\"data\":");
      cli_json_str(stdout, data, strlen(data));
      printf(",\"catalog\":");
      cli_json_str(stdout, tools, strlen(tools));
      printf(",\"n\":%ld,\"max_tokens\":%u,\"rows\":[", n_items, cfg.max_tokens);
      for (size_t i = 0; i < n_rows; i++) print_row_json(&rows[i], i == 0);
      printf("]}\n");
    } else {
      printf("data %s (%ld utterances), catalog %s\n\n", data, n_items, tools);
      print_table_head();
      for (size_t i = 0; i < n_rows; i++) print_table_row(&rows[i]);
      printf("\nexact: name and arguments equal as JSON values, no prose (text answers: no call, equal text); calls:\n"
             "exact on the utterances that expect a call; func: the right functions (or no call); args: argument keys\n"
             "right over the union of expected and produced keys, where the functions are right; invalid: calls the\n"
             "parser flagged (unknown name or key, bad type or enum, missing required, malformed); tok: tokens per\n"
             "answer, of which full-head, sparse-head steps and forced tokens; passes: median weight passes per answer\n"
             "after the utterance chunk (docs/SPECULATION.md). %.1f s.\n", cli_now() - t0);
    }
  }
  if (details && fclose(details) != 0 && !rc) rc = cli_error("eval: cannot write the details file");
  for (size_t i = 0; rows && i < n_rows; i++) free(rows[i].ms), cli_spec_free(&rows[i].spec);
  free(rows);
  for (long i = 0; i < n_items; i++) free(items[i].utt), cJSON_Delete(items[i].expected);
  free(items);
  fg_catalog_free(cat);
  free(cat_json);
  calls_cfg_free(&cfg);
  return rc;
}

// ----------------------------------------------------------------------------------------------
// The same scoring for other commands (tune's report)

int cli_calls_score_run(const fg_model *m, const fg_catalog *cat, const char *data_path, const char *name,
                        uint32_t constrained, uint32_t n_threads, bool progress, cli_calls_score *out) {
  memset(out, 0, sizeof *out);
  call_item *items = NULL;
  const long n_items = read_calls(data_path, &items);
  if (n_items < 0) return 1;
  calls_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.models[0] = (char *)name;
  cfg.heads[0] = "file";
  cfg.mode_ids[0] = constrained;
  cfg.n_models = cfg.n_heads = cfg.n_modes = 1;
  cfg.max_tokens = 64;
  cfg.speculate = FG_NLU_SPECULATE_DEFAULT;
  cli_session_params_init(&cfg.sp);
  cfg.sp.n_threads = n_threads;
  const calls_run x = {&cfg, items, n_items, cat, NULL, 1, progress, cli_now()};
  call_row r;
  memset(&r, 0, sizeof r);
  fg_model_info info;
  fg_model_get_info(m, &info);
  out->n_items = (size_t)n_items;
  out->item_exact = calloc((size_t)n_items, sizeof *out->item_exact);
  out->item_lang = calloc((size_t)n_items, sizeof *out->item_lang);
  out->item_utt = calloc((size_t)n_items, sizeof *out->item_utt);
  out->item_expected = calloc((size_t)n_items, sizeof *out->item_expected);
  out->item_answer = calloc((size_t)n_items, sizeof *out->item_answer);
  int rc = out->item_exact && out->item_lang && out->item_utt && out->item_expected && out->item_answer
               ? 0
               : cli_error("out of memory");
  r.item_exact = out->item_exact;
  r.item_answer = out->item_answer;
  if (!rc) rc = calls_row(&x, &r, 0, m, &info, 0, 0, 0);
  if (progress) fputc('\n', stderr);
  if (!rc) {
    for (long i = 0; i < n_items && !rc; i++) {
      memcpy(out->item_lang[i], items[i].lang, sizeof out->item_lang[i]);
      out->item_utt[i] = strdup(items[i].utt);
      out->item_expected[i] = cJSON_PrintUnformatted(items[i].expected);
      if (!out->item_utt[i] || !out->item_expected[i]) rc = cli_error("out of memory");
    }
    out->n = r.n, out->exact = r.exact, out->n_expect_calls = r.n_expect_calls, out->exact_calls = r.exact_calls;
    out->n_expect_text = r.n_expect_text, out->exact_text = r.exact_text, out->calls = r.calls;
    out->invalid_calls = r.invalid_calls, out->errors = r.errors;
    double p95;
    row_percentiles(&r, &out->p50_ms, &p95);
  }
  free(r.ms), cli_spec_free(&r.spec);
  for (long i = 0; i < n_items; i++) free(items[i].utt), cJSON_Delete(items[i].expected);
  free(items);
  if (rc) cli_calls_score_free(out);
  return rc;
}

void cli_calls_score_free(cli_calls_score *s) {
  for (size_t i = 0; i < s->n_items; i++) {
    if (s->item_utt) free(s->item_utt[i]);
    if (s->item_expected) free(s->item_expected[i]);
    if (s->item_answer) free(s->item_answer[i]);
  }
  free(s->item_exact), free(s->item_lang), free(s->item_utt), free(s->item_expected), free(s->item_answer);
  memset(s, 0, sizeof *s);
}
