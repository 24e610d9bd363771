/* test_tv_targets.c — the tv-mini training targets agree with constrained decoding and the parser.
 *
 * training/make_data.py writes every answer as FunctionGemma call text with the keys in the catalog's
 * rendered order (sorted by name), strings as <escape>TEXT<escape>, integers bare, and tokenizes the
 * whole answer with fgemma's tokenizer. For every expectation of the committed dev set
 * (training/tv-dev.jsonl, which make_data.py writes from the same code), this test builds the same
 * text, tokenizes it the same way and checks:
 *   - call-only constrained decoding accepts exactly that token sequence (every token is in the
 *     allowed set, and the automaton is done after <end_function_call>): a model trained on these
 *     targets is never pushed off them by the constraint, and forced runs are the trained tokens;
 *   - a text answer (TEXT<end_of_turn>) is accepted token by token by call-or-text decoding;
 *   - fg_call_parse turns the text back into exactly the expected call (same name, arguments equal
 *     as JSON values, no flags), so `fgemma eval --calls` scores a perfect model at 100 %.
 * The same for the 12 demo utterances' expected calls (tests/tvmini/utterances-de.expected.jsonl).
 *
 * With arguments, `test_tv_targets FILE MIN_CALLS MIN_TEXT` checks one other file of the same format
 * instead (tv270m's dev set and probe, registered in tests/CMakeLists.txt) and that it holds at least
 * MIN_CALLS call targets and MIN_TEXT text targets. */
#include "fgemma.h"
#include "model/model.h"
#include "nlu/constrain.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

/* The answer text of one expected call: keys in catalog order. Returns false for a call the catalog
 * does not know (counted as a failure by the caller). */
static bool call_text(const fg_catalog *c, const cJSON *call, char *out, size_t cap) {
  const char *name = cJSON_GetObjectItemCaseSensitive(call, "name")->valuestring;
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(call, "args");
  const fg_function *fn = fg_catalog_find(c, name, strlen(name), NULL);
  if (!fn) return false;
  size_t k = (size_t)snprintf(out, cap, "<start_function_call>call:%s{", name);
  int n_args = 0;
  for (uint32_t j = 0; j < fn->params.n_props; j++) {
    const fg_param *p = &fn->params.props[j];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, p->name);
    if (!v) continue;
    if (cJSON_IsString(v))
      k += (size_t)snprintf(out + k, cap - k, "%s%s:<escape>%s<escape>", n_args ? "," : "", p->name, v->valuestring);
    else if (cJSON_IsNumber(v))
      k += (size_t)snprintf(out + k, cap - k, "%s%s:%d", n_args ? "," : "", p->name, v->valueint);
    else
      return false;
    n_args++;
  }
  if (n_args != cJSON_GetArraySize(args)) return false; /* a key the catalog does not declare */
  snprintf(out + k, cap - k, "}<end_function_call>");
  return true;
}

/* Feeds ids through a fresh matcher; returns the index of the first refused token, -1 when all are
 * accepted and the automaton is done at the end, or n when it is not done. */
static long feed(fg_cmatch *mt, const int32_t *ids, size_t n) {
  fg_cmatch_reset(mt);
  for (size_t i = 0; i < n; i++)
    if (fg_cmatch_accept(mt, ids[i]) != FG_OK) return (long)i;
  return fg_cmatch_done(mt) ? -1 : (long)n;
}

static bool same_call(const cJSON *want, const cJSON *got) {
  if (!cJSON_IsObject(got) || cJSON_GetArraySize(got) != 2) return false; /* name and args, no flags */
  const cJSON *gn = cJSON_GetObjectItemCaseSensitive(got, "name");
  if (!cJSON_IsString(gn) || strcmp(gn->valuestring, cJSON_GetObjectItemCaseSensitive(want, "name")->valuestring)) return false;
  const cJSON *wa = cJSON_GetObjectItemCaseSensitive(want, "args"), *ga = cJSON_GetObjectItemCaseSensitive(got, "args");
  if (cJSON_GetArraySize(wa) != cJSON_GetArraySize(ga)) return false;
  for (const cJSON *x = wa->child; x; x = x->next) {
    const cJSON *y = cJSON_GetObjectItemCaseSensitive(ga, x->string);
    if (!y || !cJSON_Compare(x, y, true)) return false;
  }
  return true;
}

static void check_file(const char *path, const fg_model *m, const fg_catalog *cat, fg_cmatch *only, fg_cmatch *or_text,
                       int *n_calls, int *n_text) {
  char *data = fg_test_read_file(path, NULL);
  CHECK_MSG(data != NULL, "cannot read %s", path);
  int lineno = 0;
  for (char *line = data, *nl; line && *line; line = nl ? nl + 1 : NULL) {
    nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    lineno++;
    cJSON *o = cJSON_Parse(line);
    CHECK_MSG(o != NULL, "%s:%d: not JSON", path, lineno);
    if (!o) continue;
    const char *utt = cJSON_GetObjectItemCaseSensitive(o, "utterance")->valuestring;
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(o, "expected");
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(exp, "calls");
    char text[2048];
    int32_t ids[256];
    size_t n = 0;
    if (calls) {
      CHECK_EQ_INT(cJSON_GetArraySize(calls), 1);
      const cJSON *call = cJSON_GetArrayItem(calls, 0);
      const bool ok = call_text(cat, call, text, sizeof text);
      CHECK_MSG(ok, "%s:%d: the expected call does not fit the catalog", path, lineno);
      if (!ok) goto next;
      CHECK_OK(fg_tokenize(m, text, strlen(text), 0, ids, 256, &n));
      const long bad = feed(only, ids, n);
      CHECK_MSG(bad == -1, "%s:%d (%s): call-only decoding refuses token %ld of %zu of %s", path, lineno, utt, bad, n, text);
      char json[4096];
      size_t jn = 0;
      CHECK_OK(fg_call_parse(cat, text, strlen(text), json, sizeof json, &jn, NULL));
      cJSON *got = cJSON_Parse(json);
      const cJSON *gc = cJSON_GetObjectItemCaseSensitive(got, "calls");
      const cJSON *gt = cJSON_GetObjectItemCaseSensitive(got, "text");
      CHECK_MSG(cJSON_GetArraySize(gc) == 1 && same_call(call, cJSON_GetArrayItem(gc, 0)) && cJSON_IsString(gt) &&
                    !*gt->valuestring,
                "%s:%d: %s parses to %s", path, lineno, text, json);
      cJSON_Delete(got);
      (*n_calls)++;
    } else {
      const char *t = cJSON_GetObjectItemCaseSensitive(exp, "text")->valuestring;
      snprintf(text, sizeof text, "%s<end_of_turn>", t);
      CHECK_OK(fg_tokenize(m, text, strlen(text), 0, ids, 256, &n));
      const long bad = feed(or_text, ids, n);
      CHECK_MSG(bad == -1, "%s:%d: call-or-text decoding refuses token %ld of %s", path, lineno, bad, text);
      (*n_text)++;
    }
  next:
    cJSON_Delete(o);
  }
  free(data);
}

int main(int argc, char **argv) {
  if (argc != 1 && argc != 4) {
    fprintf(stderr, "usage: %s [FILE MIN_CALLS MIN_TEXT]\n", argv[0]);
    return 2;
  }
  if (fg_test_ensure_model("tiny-vocab-f32.gguf", "tiny", "f32", 1) != 0) return 1;
  fg_model *m = NULL;
  CHECK_OK(fg_model_load(fg_test_model_path("tiny-vocab-f32.gguf"), NULL, &m, NULL));
  fg_catalog *cat = fg_test_catalog_file("tv-catalog.json");
  fg_constrain *k = NULL;
  fg_cmatch *only = NULL, *or_text = NULL;
  if (m && cat) {
    CHECK_OK(fg_constrain_create(cat, m->vocab, &k, NULL));
    if (k) CHECK_OK(fg_cmatch_create(k, FG_NLU_CONSTRAIN_CALL_ONLY, 0, &only));
    if (k) CHECK_OK(fg_cmatch_create(k, FG_NLU_CONSTRAIN_CALL_OR_TEXT, 0, &or_text));
  }
  if (only && or_text && argc == 4) {
    int n_calls = 0, n_text = 0;
    check_file(argv[1], m, cat, only, or_text, &n_calls, &n_text);
    fprintf(stderr, "%s: %d call targets and %d text targets checked\n", argv[1], n_calls, n_text);
    CHECK(n_calls >= atoi(argv[2]));
    CHECK(n_text >= atoi(argv[3]));
  } else if (only && or_text) {
    char path[512];
    int n_calls = 0, n_text = 0;
    snprintf(path, sizeof path, "%s/training/tv-dev.jsonl", FG_SOURCE_DIR);
    check_file(path, m, cat, only, or_text, &n_calls, &n_text);
    fprintf(stderr, "dev set: %d call targets and %d text targets checked\n", n_calls, n_text);
    CHECK(n_calls >= 300);
    CHECK(n_text >= 5);
    n_calls = n_text = 0;
    snprintf(path, sizeof path, "%s/tests/tvmini/utterances-de.expected.jsonl", FG_SOURCE_DIR);
    check_file(path, m, cat, only, or_text, &n_calls, &n_text);
    CHECK_EQ_INT(n_calls, 12);
  }
  fg_cmatch_free(only);
  fg_cmatch_free(or_text);
  fg_constrain_free(k);
  fg_catalog_free(cat);
  fg_model_free(m);
  return fg_test_finish("test_tv_targets");
}
