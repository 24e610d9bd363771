/* bench_spec_sim.c — how many weight passes speculation needs for answers that are known in advance: the NLU
 * engine runs with a teacher in place of the LM head (every token a head would choose is the expected
 * answer's), so the drafts, their acceptance and the passes are exactly those the engine would have with
 * a model that gives these answers. A prediction for a trained model before it exists, and a way to tune
 * the draft sources; the real measurement is `fgemma bench --speculate on|off` on the trained model.
 *
 *   bench_spec_sim -m MODEL.gguf --tools CATALOG.json --calls DATA.jsonl [--constrained MODE] [--max-draft K]
 *            [--no-answer-cache] [--repeat N] [--verbose] [--trace]
 *
 * MODEL gives the vocabulary (any model with the real Gemma 3 vocabulary; the tiny one is fastest: its
 * forward is cheap and no head is computed). DATA: one {"utterance": "...", "expected": {"calls":
 * [{"name": "...", "args": {...}}]}} (or {"expected": {"text": "..."}}) per line, the format of
 * `fgemma eval --calls`; args are rendered in their order in the file as FunctionGemma writes calls
 * (strings in <escape>, numbers and booleans bare). --repeat N asks every utterance N times (the answer
 * cache then answers the repeats). Prints per utterance the passes after the chunk, then median/p95
 * and the acceptance per draft source, with speculation off for comparison (one pass per head step).
 * --trace prints every pass: the draft (source after each token: f forced, x copy, c catalog, C cache),
 * "|" where the model disagreed, and the model's own token. */
#include "fgemma.h"
#include "nlu/spec.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct teacher {
  int32_t *ids;
  size_t n;
  int32_t eos;
} teacher;

static int32_t teach(void *ud, const int32_t *gen, size_t n_gen) {
  const teacher *t = ud;
  (void)gen;
  return n_gen < t->n ? t->ids[n_gen] : t->eos;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  const long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[n] = '\0', *len = (size_t)n;
  fclose(f);
  return buf;
}

/* the answer text FunctionGemma writes for an expected result; 0 when it has neither calls nor text */
static size_t render_answer(const cJSON *expected, char *out, size_t cap) {
  size_t n = 0;
#define PUT(...) (n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__))
  const cJSON *calls = cJSON_GetObjectItemCaseSensitive(expected, "calls");
  const cJSON *text = cJSON_GetObjectItemCaseSensitive(expected, "text");
  if (cJSON_IsArray(calls) && cJSON_GetArraySize(calls) > 0) {
    const cJSON *call;
    cJSON_ArrayForEach(call, calls) {
      const cJSON *name = cJSON_GetObjectItemCaseSensitive(call, "name"), *args = cJSON_GetObjectItemCaseSensitive(call, "args");
      if (!cJSON_IsString(name)) return 0;
      PUT("<start_function_call>call:%s{", name->valuestring);
      const cJSON *a;
      bool first = true;
      cJSON_ArrayForEach(a, args) {
        PUT("%s%s:", first ? "" : ",", a->string);
        first = false;
        if (cJSON_IsString(a)) PUT("<escape>%s<escape>", a->valuestring);
        else if (cJSON_IsBool(a)) PUT("%s", cJSON_IsTrue(a) ? "true" : "false");
        else if (cJSON_IsNumber(a) && a->valuedouble == (double)(long long)a->valuedouble) PUT("%lld", (long long)a->valuedouble);
        else if (cJSON_IsNumber(a)) PUT("%g", a->valuedouble);
        else return 0;
      }
      PUT("}<end_function_call>");
    }
  } else if (cJSON_IsString(text)) {
    PUT("%s<end_of_turn>", text->valuestring);
  } else {
    return 0;
  }
#undef PUT
  return n < cap ? n : 0;
}

static void trace(fg_log_level level, const char *msg, void *ud) {
  (void)ud;
  if (level == FG_LOG_DEBUG && strncmp(msg, "speculation:", 12) == 0) printf("    %s\n", msg + 13);
}

static int cmp_u32(const void *a, const void *b) {
  const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static void quantiles(uint32_t *v, size_t n, double *med, uint32_t *p95, double *mean) {
  qsort(v, n, sizeof *v, cmp_u32);
  *med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  *p95 = v[(size_t)((double)(n - 1) * 0.95 + 0.5)];
  double s = 0;
  for (size_t i = 0; i < n; i++) s += v[i];
  *mean = s / (double)n;
}

int main(int argc, char **argv) {
  const char *model = NULL, *tools = NULL, *calls = NULL, *cons = "call-only";
  uint32_t max_draft = 0, repeat = 1;
  bool verbose = false, no_cache = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && v) model = argv[++i];
    else if (!strcmp(a, "--tools") && v) tools = argv[++i];
    else if (!strcmp(a, "--calls") && v) calls = argv[++i];
    else if (!strcmp(a, "--constrained") && v) cons = argv[++i];
    else if (!strcmp(a, "--max-draft") && v) max_draft = (uint32_t)atoi(argv[++i]);
    else if (!strcmp(a, "--repeat") && v) repeat = (uint32_t)atoi(argv[++i]);
    else if (!strcmp(a, "--no-answer-cache")) no_cache = true;
    else if (!strcmp(a, "--verbose")) verbose = true;
    else if (!strcmp(a, "--trace")) fg_set_log_callback(trace, NULL), verbose = true;
    else {
      fprintf(stderr, "usage: bench_spec_sim -m MODEL.gguf --tools CATALOG.json --calls DATA.jsonl [--constrained "
                      "off|call-only|call-or-text] [--max-draft K] [--no-answer-cache] [--repeat N] [--verbose]\n");
      return 2;
    }
  }
  uint32_t mode = FG_NLU_CONSTRAIN_CALL_ONLY;
  if (!strcmp(cons, "off")) mode = FG_NLU_CONSTRAIN_OFF;
  else if (!strcmp(cons, "call-or-text")) mode = FG_NLU_CONSTRAIN_CALL_OR_TEXT;
  else if (strcmp(cons, "call-only") != 0) return fprintf(stderr, "bench_spec_sim: --constrained off|call-only|call-or-text\n"), 2;
  if (!model || !tools || !calls || max_draft > 32 || repeat < 1) {
    fprintf(stderr, "bench_spec_sim: -m, --tools and --calls are required (--max-draft 1..32, --repeat >= 1)\n");
    return 2;
  }
  size_t cl, dl;
  char *cat_json = read_file(tools, &cl), *data = read_file(calls, &dl);
  if (!cat_json || !data) return fprintf(stderr, "bench_spec_sim: cannot read %s\n", cat_json ? calls : tools), 1;
  fg_error err = {0};
  fg_catalog *c = NULL;
  fg_model *m = NULL;
  if (fg_catalog_parse(cat_json, cl, &c, &err) != FG_OK || fg_model_load(model, NULL, &m, &err) != FG_OK)
    return fprintf(stderr, "bench_spec_sim: %s\n", err.msg), 1;
  fg_nlu_params np;
  fg_nlu_params_init(&np);
  np.constrained = mode;
  np.speculate = FG_NLU_SPECULATE_ON;
  np.max_draft = max_draft;
  np.max_tokens = 256;
  np.session.n_threads = 1;
  if (no_cache) np.flags |= FG_NLU_NO_ANSWER_CACHE;
  fg_nlu *e = NULL;
  if (fg_nlu_create(m, c, &np, &e, &err) != FG_OK) return fprintf(stderr, "bench_spec_sim: %s\n", err.msg), 1;
  teacher t = {NULL, 0, -1};
  fg_token_lookup(m, "<eos>", &t.eos);
  fg_nlu_set_teacher(e, teach, &t);

  size_t n_lines = 1;
  for (const char *p = data; *p; p++) n_lines += *p == '\n';
  uint32_t *after_on = malloc(sizeof(uint32_t) * n_lines * repeat), *after_off = malloc(sizeof(uint32_t) * n_lines * repeat);
  uint64_t drafted[FG_NLU_DRAFT_SOURCES] = {0}, accepted[FG_NLU_DRAFT_SOURCES] = {0}, passes = 0, tokens = 0, heads = 0;
  size_t n = 0, skipped = 0;
  char answer[4096];
  for (uint32_t rep = 0; rep < repeat; rep++)
    for (char *line = data, *next; line && *line; line = next) {
      next = strchr(line, '\n');
      if (next) *next++ = '\0';
      cJSON *j = cJSON_Parse(line);
      if (next) next[-1] = '\n'; /* keep the buffer for the next round */
      const cJSON *utt = cJSON_GetObjectItemCaseSensitive(j, "utterance");
      const size_t al = cJSON_IsString(utt) ? render_answer(cJSON_GetObjectItemCaseSensitive(j, "expected"), answer, sizeof answer) : 0;
      size_t need = 0;
      if (al) fg_tokenize(m, answer, al, 0, NULL, 0, &need);
      free(t.ids);
      t.ids = malloc(sizeof(int32_t) * (need + 1));
      fg_nlu_result r;
      fg_status st = al && t.ids ? fg_tokenize(m, answer, al, 0, t.ids, need, &t.n) : FG_ERR_INVALID_ARG;
      if (st == FG_OK) st = fg_nlu_ask(e, utt->valuestring, strlen(utt->valuestring), &r);
      if (st == FG_OK && strncmp(r.raw, answer, al) != 0) st = FG_ERR_MISMATCH;
      if (st != FG_OK) {
        if (al || cJSON_IsString(utt))
          fprintf(stderr, "skipped: %s (%s: %s)\n", cJSON_IsString(utt) ? utt->valuestring : line, fg_status_str(st),
                  st == FG_ERR_MISMATCH ? r.raw : fg_nlu_errmsg(e));
        skipped += cJSON_IsString(utt) || al;
        cJSON_Delete(j);
        continue;
      }
      after_on[n] = r.weight_passes ? r.weight_passes - 1 : 0;
      after_off[n] = r.full_head_steps + r.sparse_head_steps - 1; /* one pass per head step, the chunk's first */
      for (unsigned k = 0; k < FG_NLU_DRAFT_SOURCES; k++) drafted[k] += r.drafted[k], accepted[k] += r.accepted[k];
      passes += r.weight_passes;
      tokens += r.decode_tokens;
      heads += r.head_passes;
      if (verbose)
        printf("%-48.48s %3u tokens, passes after the chunk: %2u on, %2u off  %s\n", utt->valuestring, r.decode_tokens,
               after_on[n], after_off[n], r.raw);
      n++;
      cJSON_Delete(j);
    }
  if (n == 0) return fprintf(stderr, "bench_spec_sim: no usable line in %s\n", calls), 1;
  if (repeat > 1 && n % repeat == 0) { /* the last round alone: an engine that has learned from the others */
    const size_t per = n / repeat;
    uint32_t *last = malloc(sizeof(uint32_t) * per);
    memcpy(last, after_on + n - per, sizeof(uint32_t) * per);
    double med, mean;
    uint32_t p95;
    quantiles(last, per, &med, &p95, &mean);
    printf("last round alone (%zu answers): speculation on: median %.1f, p95 %u, mean %.2f\n", per, med, p95, mean);
    free(last);
  }
  double med_on, mean_on, med_off, mean_off;
  uint32_t p95_on, p95_off;
  quantiles(after_on, n, &med_on, &p95_on, &mean_on);
  quantiles(after_off, n, &med_off, &p95_off, &mean_off);
  printf("%zu answers (%zu skipped), %s, max_draft %u, %.1f tokens per answer\n", n, skipped, cons,
         max_draft ? max_draft : 8, (double)tokens / (double)n);
  printf("weight passes per call after the chunk: speculation on: median %.1f, p95 %u, mean %.2f; off: median %.1f, "
         "p95 %u, mean %.2f\n", med_on, p95_on, mean_on, med_off, p95_off, mean_off);
  uint64_t acc = 0;
  for (unsigned k = 0; k < FG_NLU_DRAFT_SOURCES; k++) acc += accepted[k];
  static const char *names[FG_NLU_DRAFT_SOURCES] = {"forced", "copy", "catalog", "cache", "context"};
  printf("accepted drafts per weight pass %.2f; full-head passes per call %.2f; per source (accepted/drafted):",
         (double)acc / (double)passes, (double)heads / (double)n);
  for (unsigned k = 0; k < FG_NLU_DRAFT_SOURCES; k++)
    printf(" %s %llu/%llu", names[k], (unsigned long long)accepted[k], (unsigned long long)drafted[k]);
  printf("\n");
  free(t.ids);
  free(after_on);
  free(after_off);
  fg_nlu_free(e);
  fg_model_free(m);
  fg_catalog_free(c);
  free(cat_json);
  free(data);
  return 0;
}
