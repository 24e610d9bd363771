/* test_nlu.c — tool catalogs, FunctionGemma prompt rendering, call parsing and the stop rule.
 *
 * Oracles: functiongemma_official_format_cases.json and the get_weather prompt_text of
 * functiongemma_official_get_weather_tokenization.json (public SKaiNET data, copied to
 * tests/data/nlu/ with their source note), hand-written expectations from the rules in DESIGN.md,
 * and agreement between the two catalog formats. */
#include "nlu/catalog.h"
#include "testutil.h"

#include <cjson/cJSON.h>

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define DATA FG_SHARED_DATA "/nlu/"

// ----------------------------------------------------------------------------
// Helpers

static fg_catalog *parse_str(const char *json) {
  fg_catalog *c = NULL;
  fg_error e = {0};
  fg_status st = fg_catalog_parse(json, strlen(json), &c, &e);
  CHECK_MSG(st == FG_OK, "parse failed: %s (%s)", e.msg, json);
  return c;
}

static fg_catalog *parse_file(const char *name) {
  char path[512];
  snprintf(path, sizeof path, DATA "%s", name);
  size_t n;
  char *s = fg_test_read_file(path, &n);
  if (!s) {
    CHECK(s != NULL);
    return NULL;
  }
  fg_catalog *c = NULL;
  fg_error e = {0};
  fg_status st = fg_catalog_parse(s, n, &c, &e);
  CHECK_MSG(st == FG_OK, "%s: %s", name, e.msg);
  free(s);
  return c;
}

/* malloc'd rendering of the prefix (NULL on failure) */
static char *prefix_str(const fg_catalog *c) {
  size_t need = 0;
  if (!c) return NULL;
  fg_status st = fg_catalog_render_prefix(c, NULL, 0, &need);
  CHECK_EQ_INT(st, FG_ERR_BUFFER_TOO_SMALL);
  char *buf = malloc(need + 1);
  size_t n = 0;
  CHECK_OK(fg_catalog_render_prefix(c, buf, need + 1, &n));
  CHECK_EQ_INT(n, need);
  CHECK_EQ_INT(strlen(buf), n);
  return buf;
}

static char *function_str(const fg_catalog *c, size_t i) {
  size_t need = 0;
  fg_catalog_render_function(c, i, NULL, 0, &need);
  char *buf = malloc(need + 1);
  size_t n = 0;
  CHECK_OK(fg_catalog_render_function(c, i, buf, need + 1, &n));
  return buf;
}

static char *utter_str(const char *text) {
  size_t need = 0;
  if (fg_render_utterance(text, strlen(text), NULL, 0, &need) != FG_ERR_BUFFER_TOO_SMALL) return NULL;
  char *buf = malloc(need + 1);
  size_t n = 0;
  CHECK_OK(fg_render_utterance(text, strlen(text), buf, need + 1, &n));
  return buf;
}

/* Runs the call parser and returns its output parsed by cJSON (the output must be valid JSON). */
static cJSON *call_json_n(const fg_catalog *c, const char *gen, size_t len, char **raw_out) {
  size_t need = 0;
  fg_error e = {0};
  fg_status st = fg_call_parse(c, gen, len, NULL, 0, &need, &e);
  CHECK_EQ_INT(st, FG_ERR_BUFFER_TOO_SMALL);
  char *buf = malloc(need + 1);
  size_t n = 0;
  st = fg_call_parse(c, gen, len, buf, need + 1, &n, &e);
  CHECK_MSG(st == FG_OK, "call_parse: %s", e.msg);
  CHECK_EQ_INT(n, need);
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithLengthOpts(buf, n + 1, &end, 1); /* all of it, up to the NUL */
  CHECK_MSG(j != NULL, "output is not JSON: %s", buf);
  if (raw_out)
    *raw_out = buf;
  else
    free(buf);
  return j;
}

static cJSON *call_json(const fg_catalog *c, const char *gen) { return call_json_n(c, gen, strlen(gen), NULL); }

static cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static int n_calls(const cJSON *j) { return cJSON_GetArraySize(get(j, "calls")); }

static cJSON *call_at(const cJSON *j, int i) { return cJSON_GetArrayItem(get(j, "calls"), i); }

static const char *str_of(const cJSON *v) { return cJSON_IsString(v) ? v->valuestring : NULL; }

static int streq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static int is_true(const cJSON *v) { return cJSON_IsTrue(v); }

/* true iff array v holds exactly the given strings (NULL-terminated list) in this order */
static int str_list(const cJSON *v, const char *const *want) {
  int n = 0;
  while (want[n]) n++;
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != n) return 0;
  for (int i = 0; i < n; i++)
    if (!streq(str_of(cJSON_GetArrayItem(v, i)), want[i])) return 0;
  return 1;
}

// ----------------------------------------------------------------------------
// The official cases file

static void test_official_rendering(void) {
  size_t n;
  char *s = fg_test_read_file(DATA "functiongemma_official_format_cases.json", &n);
  if (!s) {
    CHECK(0);
    return;
  }
  cJSON *cases = cJSON_Parse(s);
  CHECK(cases != NULL);
  CHECK(streq(str_of(get(cases, "developer_preamble")), FG_NLU_PREAMBLE));

  const cJSON *rd = get(cases, "render_declaration");
  char *tool = cJSON_PrintUnformatted(get(rd, "tool"));
  const char *expected = str_of(get(rd, "expected"));
  CHECK(expected != NULL);

  /* the same tool in every accepted layout */
  char doc[4][2048];
  snprintf(doc[0], sizeof doc[0], "[%s]", tool);
  snprintf(doc[1], sizeof doc[1], "[{\"type\":\"function\",\"function\":%s}]", tool);
  snprintf(doc[2], sizeof doc[2], "{\"tools\":[{\"type\":\"function\",\"function\":%s}]}", tool);
  snprintf(doc[3], sizeof doc[3],
           "{\"id\":\"w.v1\",\"functions\":[{\"name\":\"get_weather\",\"description\":\"Get current weather for a "
           "location\",\"parameters\":{\"location\":{\"type\":\"string\",\"description\":\"City name\"}},"
           "\"required\":[\"location\"]}]}");
  const char *full = str_of(get(cases, "render_full_prompt_expected"));
  for (int k = 0; k < 4; k++) {
    fg_catalog *c = parse_str(doc[k]);
    if (!c) continue;
    char *decl = function_str(c, 0);
    CHECK_MSG(streq(decl, expected), "layout %d:\n got %s\nwant %s", k, decl, expected);
    char *pre = prefix_str(c);
    char *utt = utter_str("What's the weather in Paris?");
    size_t lp = strlen(pre), lu = strlen(utt);
    char *all = malloc(lp + lu + 1);
    memcpy(all, pre, lp);
    memcpy(all + lp, utt, lu + 1);
    CHECK_MSG(streq(all, full), "layout %d full prompt:\n got %s\nwant %s", k, all, full);
    const char *suffix = str_of(get(get(cases, "prefix_suffix_split"), "prefix_ends_with"));
    CHECK(suffix && lp >= strlen(suffix) && strcmp(pre + lp - strlen(suffix), suffix) == 0);
    free(all);
    free(utt);
    free(pre);
    free(decl);
    fg_catalog_free(c);
  }
  CHECK(streq(fg_catalog_id(NULL), ""));

  /* plain chat without tools: "<start_of_turn>user\n" + the utterance rendering */
  const cJSON *pc = get(cases, "render_plain_chat_no_tools");
  char *u = utter_str(str_of(get(pc, "user")));
  char plain[256];
  snprintf(plain, sizeof plain, "<start_of_turn>user\n%s", u ? u : "");
  CHECK(streq(plain, str_of(get(pc, "expected"))));
  free(u);

  free(tool);
  cJSON_Delete(cases);
  free(s);
}

/* compares a parsed arg with the cases file's expectation (all strings there: "days": "3") */
static int arg_matches(const cJSON *got, const cJSON *want) {
  if (cJSON_IsString(want) && cJSON_IsString(got)) return strcmp(got->valuestring, want->valuestring) == 0;
  if (cJSON_IsString(want) && cJSON_IsNumber(got)) {
    char *p = cJSON_PrintUnformatted(got);
    int ok = strcmp(p, want->valuestring) == 0;
    free(p);
    return ok;
  }
  return cJSON_Compare(got, want, 1);
}

static int call_matches(const cJSON *got, const cJSON *want) {
  if (!streq(str_of(get(got, "name")), str_of(get(want, "name")))) return 0;
  const cJSON *ga = get(got, "args"), *wa = get(want, "args");
  if (cJSON_GetArraySize(ga) != cJSON_GetArraySize(wa)) return 0;
  const cJSON *w;
  cJSON_ArrayForEach(w, wa) {
    if (!arg_matches(get(ga, w->string), w)) return 0;
  }
  return 1;
}

static void test_official_parsing(void) {
  char *s = fg_test_read_file(DATA "functiongemma_official_format_cases.json", NULL);
  if (!s) {
    CHECK(0);
    return;
  }
  cJSON *cases = cJSON_Parse(s);
  const cJSON *pc;
  int idx = 0, n_checked = 0;
  cJSON_ArrayForEach(pc, get(cases, "parse_cases")) {
    const char *out = str_of(get(pc, "output"));
    cJSON *j = call_json(NULL, out);
    if (!j) continue;
    const cJSON *calls = get(pc, "calls");
    if (calls) {
      CHECK_MSG(n_calls(j) == cJSON_GetArraySize(calls), "case %d: %d calls", idx, n_calls(j));
      for (int i = 0; i < cJSON_GetArraySize(calls) && i < n_calls(j); i++)
        CHECK_MSG(call_matches(call_at(j, i), cJSON_GetArrayItem(calls, i)), "case %d call %d", idx, i);
      if (cJSON_GetArraySize(calls) == 0) /* prose: the text is the output itself */
        CHECK_MSG(streq(str_of(get(j, "text")), out), "case %d text", idx);
      n_checked++;
    }
    const cJSON *first = get(pc, "first_call");
    if (first) {
      CHECK_MSG(n_calls(j) >= 1 && call_matches(call_at(j, 0), first), "case %d first call", idx);
      CHECK(get(call_at(j, 0), "truncated") == NULL); /* closed by <end_function_call> */
      n_checked++;
    }
    cJSON_Delete(j);
    idx++;
  }
  CHECK_EQ_INT(n_checked, 6);

  /* details the cases file states in its notes */
  cJSON *j = call_json(NULL, "<think>hmm</think><start_function_call>call:noop{}");
  CHECK(is_true(get(j, "truncated")) && is_true(get(call_at(j, 0), "truncated")));
  CHECK(streq(str_of(get(j, "text")), "<think>hmm</think>"));
  cJSON_Delete(j);
  j = call_json(NULL, "<start_function_call>call:get_weather{location:<escape>Paris<escape>,days:3}<end_function_call>");
  CHECK(cJSON_IsNumber(get(get(call_at(j, 0), "args"), "days")));
  CHECK(get(j, "truncated") == NULL);
  CHECK(streq(str_of(get(j, "text")), ""));
  cJSON_Delete(j);

  cJSON_Delete(cases);
  free(s);
}

static void test_get_weather_prompt(void) {
  char *s = fg_test_read_file(DATA "functiongemma_official_get_weather_tokenization.json", NULL);
  if (!s) {
    CHECK(0);
    return;
  }
  cJSON *ref = cJSON_Parse(s);
  char *tool = cJSON_PrintUnformatted(get(ref, "tool"));
  char doc[2048];
  snprintf(doc, sizeof doc, "[%s]", tool);
  fg_catalog *c = parse_str(doc);
  char *pre = prefix_str(c);
  char *utt = utter_str(str_of(get(ref, "user")));
  const char *want = str_of(get(ref, "prompt_text"));
  size_t lp = pre ? strlen(pre) : 0;
  CHECK(want && pre && utt && strncmp(want, pre, lp) == 0 && strcmp(want + lp, utt) == 0);
  CHECK_EQ_INT(cJSON_GetArraySize(get(ref, "token_ids_with_bos")), 85);
  free(utt);
  free(pre);
  fg_catalog_free(c);
  free(tool);
  cJSON_Delete(ref);
  free(s);
}

// ----------------------------------------------------------------------------
// Catalogs of this project in both formats

static void test_catalog_formats(void) {
  static const char *const sets[][3] = {
      {"toy-catalog.json", "toy-catalog.openai.json", NULL},
      {"tv-catalog-small.json", "tv-catalog-small.openai.json", NULL},
      {"tv-catalog.json", "tv-catalog.openai-bare.json", NULL},
  };
  static const size_t n_funcs[] = {3, 10, 15};
  for (int k = 0; k < 3; k++) {
    fg_catalog *a = parse_file(sets[k][0]);
    fg_catalog *b = parse_file(sets[k][1]);
    if (!a || !b) {
      fg_catalog_free(a);
      fg_catalog_free(b);
      continue;
    }
    CHECK_EQ_INT(fg_catalog_n_functions(a), n_funcs[k]);
    CHECK_EQ_INT(fg_catalog_n_functions(b), n_funcs[k]);
    char *pa = prefix_str(a), *pb = prefix_str(b);
    CHECK_MSG(streq(pa, pb), "%s and %s render differently", sets[k][0], sets[k][1]);
    /* one declaration block per function, in catalog order */
    const char *p = pa;
    for (size_t i = 0; i < n_funcs[k]; i++) {
      char want[256];
      snprintf(want, sizeof want, "<start_function_declaration>declaration:%s{", fg_catalog_function(a, i)->name);
      const char *q = strstr(p, want);
      CHECK_MSG(q != NULL, "%s: declaration %zu out of order", sets[k][0], i);
      if (q) p = q + 1;
    }
    free(pa);
    free(pb);
    fg_catalog_free(a);
    fg_catalog_free(b);
  }

  /* the toy catalog, written out by hand from the rules in DESIGN.md */
  fg_catalog *t = parse_file("toy-catalog.json");
  if (t) {
    CHECK(streq(fg_catalog_id(t), "toy-tools.v1"));
    char *d0 = function_str(t, 0), *d1 = function_str(t, 1), *d2 = function_str(t, 2);
    CHECK(streq(d0, "declaration:set_timer{description:<escape>Start a countdown timer for a number of minutes."
                    "<escape>,parameters:{properties:{minutes:{description:<escape>How many minutes the timer runs."
                    "<escape>,type:<escape>INTEGER<escape>}},required:[<escape>minutes<escape>],type:<escape>OBJECT"
                    "<escape>}}"));
    CHECK(streq(d1, "declaration:toggle_lamp{description:<escape>Switch the desk lamp on or off.<escape>,parameters:"
                    "{properties:{state:{description:<escape>The new state of the lamp.<escape>,enum:[<escape>on"
                    "<escape>,<escape>off<escape>],type:<escape>STRING<escape>}},required:[<escape>state<escape>],"
                    "type:<escape>OBJECT<escape>}}"));
    CHECK(streq(d2, "declaration:roll_dice{description:<escape>Roll one six-sided die and say the result.<escape>,"
                    "parameters:{type:<escape>OBJECT<escape>}}"));
    char *pre = prefix_str(t);
    char want[4096];
    snprintf(want, sizeof want,
             "<start_of_turn>developer\nYou are a model that can do function calling with the following functions"
             "<start_function_declaration>%s<end_function_declaration><start_function_declaration>%s"
             "<end_function_declaration><start_function_declaration>%s<end_function_declaration><end_of_turn>\n"
             "<start_of_turn>user\n",
             d0, d1, d2);
    CHECK(streq(pre, want));
    free(pre);
    free(d0);
    free(d1);
    free(d2);

    /* accessors */
    size_t idx = 99;
    const fg_function *f = fg_catalog_find(t, "toggle_lamp", 11, &idx);
    CHECK(f && idx == 1);
    CHECK(fg_catalog_find(t, "toggle_lam", 10, NULL) == NULL);
    CHECK(fg_catalog_find(t, "toggle_lamp\0x", 13, NULL) == NULL);
    const fg_param *st = f ? fg_param_find(&f->params, "state", 5) : NULL;
    CHECK(st && st->type == FG_PARAM_STRING && st->required && st->n_enum == 2);
    CHECK(fg_param_enum_index(st, "off", 3) == 1 && fg_param_enum_index(st, "of", 2) == -1);
    CHECK(fg_catalog_function(t, 3) == NULL);
    CHECK(fg_catalog_function(t, 2)->params.n_props == 0);
    fg_catalog_free(t);
  }

  /* set_volume: properties sorted (direction, level, steps), no required list */
  fg_catalog *tv = parse_file("tv-catalog-small.json");
  if (tv) {
    char *d = function_str(tv, 1);
    const char *a = strstr(d, "direction:{"), *b = strstr(d, "level:{"), *c = strstr(d, "steps:{");
    CHECK(a && b && c && a < b && b < c);
    CHECK(strstr(d, "required:") == NULL);
    CHECK(strstr(d, "enum:[<escape>up<escape>,<escape>down<escape>]") != NULL);
    free(d);
    const fg_function *sv = fg_catalog_find(tv, "set_volume", 10, NULL);
    CHECK(sv && sv->params.n_props == 3 && streq(sv->params.props[0].name, "direction") &&
          streq(sv->params.props[2].name, "steps") && !sv->params.props[0].required);
    fg_catalog_free(tv);
  }
}

static void test_catalog_rendering_rules(void) {
  /* dictsort: case-insensitive, ties in input order; required in the catalog's order */
  fg_catalog *c = parse_str("[{\"name\":\"f\",\"description\":\"d\",\"parameters\":{\"type\":\"object\",\"properties\":{"
                            "\"b\":{\"type\":\"string\"},\"a\":{\"type\":\"boolean\"},\"A\":{\"type\":\"number\"}},"
                            "\"required\":[\"b\",\"a\"]}}]");
  if (c) {
    char *d = function_str(c, 0);
    CHECK_MSG(streq(d, "declaration:f{description:<escape>d<escape>,parameters:{properties:{a:{type:<escape>BOOLEAN"
                       "<escape>},A:{type:<escape>NUMBER<escape>},b:{type:<escape>STRING<escape>}},required:[<escape>b"
                       "<escape>,<escape>a<escape>],type:<escape>OBJECT<escape>}}"),
              "%s", d);
    free(d);
    fg_catalog_free(c);
  }
  /* array items, nested object, nullable, missing function description, upper-case type input */
  c = parse_str("{\"functions\":[{\"name\":\"g\",\"parameters\":{"
                "\"tags\":{\"type\":\"array\",\"description\":\"Tags.\",\"items\":{\"type\":\"string\",\"enum\":[\"x\",\"y\"]}},"
                "\"where\":{\"type\":\"OBJECT\",\"nullable\":true,\"properties\":{\"lon\":{\"type\":\"number\"},"
                "\"lat\":{\"type\":\"number\",\"description\":\"\"}},\"required\":[\"lon\"]}}}]}");
  if (c) {
    char *d = function_str(c, 0);
    CHECK_MSG(streq(d, "declaration:g{description:<escape><escape>,parameters:{properties:{tags:{description:<escape>"
                       "Tags.<escape>,items:{enum:[<escape>x<escape>,<escape>y<escape>],type:<escape>STRING<escape>},"
                       "type:<escape>ARRAY<escape>},where:{nullable:true,properties:{lat:{type:<escape>NUMBER<escape>},"
                       "lon:{type:<escape>NUMBER<escape>}},required:[<escape>lon<escape>],type:<escape>OBJECT<escape>}},"
                       "type:<escape>OBJECT<escape>}}"),
              "%s", d);
    const fg_param *w = fg_param_find(&fg_catalog_function(c, 0)->params, "where", 5);
    CHECK(w && w->nullable && w->n_props == 2 && w->props[1].required && !w->props[0].required);
    free(d);
    fg_catalog_free(c);
  }
  /* single tool object, parameters {} and parameters absent render alike */
  const char *same[] = {
      "{\"type\":\"function\",\"function\":{\"name\":\"h\",\"description\":\"x\"}}",
      "{\"name\":\"h\",\"description\":\"x\",\"parameters\":{}}",
      "[{\"name\":\"h\",\"description\":\"x\",\"parameters\":{\"type\":\"object\",\"properties\":{}}}]",
      "{\"functions\":[{\"name\":\"h\",\"description\":\"x\",\"parameters\":{},\"required\":[]}]}",
  };
  for (int k = 0; k < 4; k++) {
    c = parse_str(same[k]);
    if (!c) continue;
    char *d = function_str(c, 0);
    CHECK_MSG(streq(d, "declaration:h{description:<escape>x<escape>,parameters:{type:<escape>OBJECT<escape>}}"), "%d: %s",
              k, d);
    free(d);
    fg_catalog_free(c);
  }
}

// ----------------------------------------------------------------------------
// Bad catalogs

typedef struct bad_case {
  const char *json;
  const char *msg1, *msg2; /* substrings the message must contain (msg2 may be NULL) */
} bad_case;

static void test_bad_catalogs(void) {
  static const bad_case cases[] = {
      {"{\"functions\": [", "not valid JSON", "line 1"},
      {"{\n  \"functions\": [\n    {\"name\": \"f\",, }\n  ]\n}", "not valid JSON", "line 3"},
      {"[] x", "not valid JSON", NULL},
      {"", "not valid JSON", NULL},
      {"42", "expected a list of tools", NULL},
      {"{\"id\":\"x\"}", "expected a list of tools", NULL},
      {"[]", "no functions", NULL},
      {"{\"functions\":{}}", "\"functions\" is not an array", NULL},
      {"{\"functions\":[{\"description\":\"x\"}]}", "function #1", "missing \"name\""},
      {"[{\"name\":\"a\"},{\"description\":\"x\"}]", "function #2", "missing \"name\""},
      {"[{\"name\":7}]", "function #1", "\"name\" is not a string"},
      {"[{\"name\":\"f\"},{\"name\":\"g\"},{\"name\":\"f\"}]", "function 'f'", "duplicate function (also #1)"},
      {"[{\"name\":\"get weather\"}]", "name 'get weather' is not allowed", NULL},
      {"[{\"name\":\"a:b\"}]", "name 'a:b' is not allowed", NULL},
      {"[{\"name\":\"a{b\"}]", "is not allowed", NULL},
      {"[{\"name\":\"9lives\"}]", "is not allowed", NULL},
      {"[{\"name\":\"\"}]", "is not allowed", NULL},
      {"[{\"name\":\"f\",\"description\":3}]", "function 'f'", "\"description\" is not a string"},
      {"[{\"name\":\"f\",\"parameters\":[]}]", "function 'f'", "\"parameters\" is not an object"},
      {"[{\"name\":\"f\",\"parameters\":{\"type\":\"string\"}}]", "function 'f'", "must be \"object\""},
      {"[{\"type\":\"retrieval\",\"function\":{\"name\":\"f\"}}]", "function #1", "not \"function\""},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"int\"}}}]}", "function 'f', parameter 'p'",
       "unknown type 'int'"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":3}}}]}", "parameter 'p'", "\"type\" is not a string"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"description\":\"x\"}}}]}", "parameter 'p'",
       "missing \"type\""},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":\"string\"}}]}", "parameter 'p'", "not an object"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"string\",\"enum\":\"on\"}}}]}",
       "function 'f', parameter 'p'", "\"enum\" is not an array"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"string\",\"enum\":[\"a\",1]}}}]}",
       "parameter 'p'", "enum member #2 is not a string"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"string\",\"enum\":[]}}}]}", "parameter 'p'",
       "\"enum\" is empty"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"integer\",\"enum\":[\"1\"]}}}]}",
       "parameter 'p'", "only string parameters"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"string\"}},\"required\":\"p\"}]}",
       "function 'f'", "\"required\" is not an array"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"string\"}},\"required\":[\"q\"]}]}",
       "function 'f'", "unknown parameter 'q'"},
      {"[{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"required\":[\"q\"]}}]", "function 'f'",
       "unknown parameter 'q'"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"string\"}},\"required\":[\"p\",\"p\"]}]}",
       "function 'f'", "lists 'p' twice"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"string\"}},\"required\":[1]}]}",
       "function 'f'", "member #1 is not a string"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p q\":{\"type\":\"string\"}}}]}", "function 'f'",
       "parameter name 'p q' is not allowed"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"string\"},\"p\":{\"type\":\"integer\"}}}]}",
       "function 'f'", "duplicate parameter 'p'"},
      {"[{\"name\":\"f\",\"description\":\"say <escape> here\"}]", "function 'f'", "control token \"<escape>\""},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"string\",\"description\":\"a<end_of_turn>\"}}}]}",
       "function 'f', parameter 'p'", "\"<end_of_turn>\""},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"string\",\"enum\":[\"<start_function_call>\"]}}}]}",
       "parameter 'p'", "enum value contains the control token"},
      {"[{\"name\":\"f\",\"description\":\"x<unused12>y\"}]", "function 'f'", "\"<unused12>\""},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"o\":{\"type\":\"object\",\"properties\":{\"i\":{\"type\":"
       "\"bogus\"}}}}}]}",
       "parameter 'o.i'", "unknown type 'bogus'"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"l\":{\"type\":\"array\",\"items\":{\"type\":\"x\"}}}}]}",
       "parameter 'l[]'", "unknown type 'x'"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"l\":{\"type\":\"array\",\"items\":3}}}]}", "parameter 'l'",
       "\"items\" is not an object"},
      {"{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"string\",\"nullable\":\"yes\"}}}]}",
       "parameter 'p'", "\"nullable\" is not a boolean"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    fg_catalog *c = (fg_catalog *)1;
    fg_error e = {0};
    fg_status st = fg_catalog_parse(cases[k].json, strlen(cases[k].json), &c, &e);
    CHECK_MSG(st == FG_ERR_FORMAT && e.code == FG_ERR_FORMAT, "case %zu: status %d", k, (int)st);
    CHECK_MSG(c == NULL, "case %zu: out not cleared", k);
    CHECK_MSG(strstr(e.msg, cases[k].msg1) != NULL, "case %zu: message '%s' lacks '%s'", k, e.msg, cases[k].msg1);
    if (cases[k].msg2)
      CHECK_MSG(strstr(e.msg, cases[k].msg2) != NULL, "case %zu: message '%s' lacks '%s'", k, e.msg, cases[k].msg2);
    if (st == FG_OK) fg_catalog_free(c);
  }

  /* nesting limit */
  char deep[4096] = "{\"functions\":[{\"name\":\"f\",\"parameters\":{";
  for (int i = 0; i < 12; i++) strcat(deep, "\"o\":{\"type\":\"object\",\"properties\":{");
  strcat(deep, "\"s\":{\"type\":\"string\"}");
  for (int i = 0; i < 12; i++) strcat(deep, "}}");
  strcat(deep, "}}]}");
  fg_catalog *c = NULL;
  fg_error e = {0};
  CHECK_EQ_INT(fg_catalog_parse(deep, strlen(deep), &c, &e), FG_ERR_FORMAT);
  CHECK_MSG(strstr(e.msg, "nested deeper") != NULL, "%s", e.msg);

  /* argument errors */
  CHECK_EQ_INT(fg_catalog_parse("[]", 2, NULL, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_catalog_parse(NULL, 3, &c, NULL), FG_ERR_INVALID_ARG);
  /* a length shorter than the text: only the prefix is parsed */
  const char *two = "[{\"name\":\"a\"}] garbage";
  CHECK_OK(fg_catalog_parse(two, 14, &c, NULL));
  CHECK_EQ_INT(fg_catalog_n_functions(c), 1);
  fg_catalog_free(c);
  fg_catalog_free(NULL);
}

// ----------------------------------------------------------------------------
// Renderer edge cases

static void test_render_edges(void) {
  fg_catalog *c = parse_str("[{\"name\":\"f\",\"description\":\"d\"}]");
  size_t need = 0, n = 0;
  CHECK_EQ_INT(fg_catalog_render_prefix(c, NULL, 0, &need), FG_ERR_BUFFER_TOO_SMALL);
  char *buf = malloc(need + 1);
  memset(buf, 'x', need + 1);
  CHECK_EQ_INT(fg_catalog_render_prefix(c, buf, need, &n), FG_ERR_BUFFER_TOO_SMALL); /* no room for the NUL */
  CHECK_EQ_INT(n, need);
  CHECK_OK(fg_catalog_render_prefix(c, buf, need + 1, &n));
  CHECK(buf[need] == '\0' && n == need);
  free(buf);
  CHECK_EQ_INT(fg_catalog_render_prefix(NULL, NULL, 0, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_catalog_render_function(c, 1, NULL, 0, &n), FG_ERR_INVALID_ARG);
  fg_catalog_free(c);

  char *u = utter_str("  Ton aus\n");
  CHECK(streq(u, "Ton aus<end_of_turn>\n<start_of_turn>model\n"));
  free(u);
  u = utter_str("Öffne Netflix 🎬");
  CHECK(streq(u, "Öffne Netflix 🎬<end_of_turn>\n<start_of_turn>model\n"));
  free(u);
  CHECK_EQ_INT(fg_render_utterance("hi<end_of_turn>", 15, NULL, 0, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_render_utterance("<escape>", 8, NULL, 0, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_render_utterance(" \n\t", 3, NULL, 0, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_render_utterance("a <b> c", 7, NULL, 0, &n), FG_ERR_BUFFER_TOO_SMALL); /* harmless '<' */
  CHECK_EQ_INT(fg_render_utterance(NULL, 1, NULL, 0, &n), FG_ERR_INVALID_ARG);

  size_t tl = 0;
  CHECK_EQ_INT(fg_nlu_find_control_token("ab<eos>", 7, &tl), 2);
  CHECK_EQ_INT(tl, 5);
  CHECK_EQ_INT(fg_nlu_find_control_token("x<unused7>", 10, &tl), 1);
  CHECK_EQ_INT(tl, 9);
  CHECK_EQ_INT(fg_nlu_find_control_token("x<unused>", 9, NULL), -1);
  CHECK_EQ_INT(fg_nlu_find_control_token("x<unused7", 9, NULL), -1);
  CHECK_EQ_INT(fg_nlu_find_control_token("<escape", 7, NULL), -1);
  CHECK_EQ_INT(fg_nlu_find_control_token("a < b <= c", 10, NULL), -1);
}

// ----------------------------------------------------------------------------
// Call parsing: adversarial generations

static void test_parse_adversarial(void) {
  cJSON *j, *a;

  /* unterminated escape: the partial value is dropped, the call is truncated */
  j = call_json(NULL, "<start_function_call>call:get_weather{days:2,location:<escape>Par");
  CHECK(n_calls(j) == 1 && streq(str_of(get(call_at(j, 0), "name")), "get_weather"));
  a = get(call_at(j, 0), "args");
  CHECK(cJSON_GetArraySize(a) == 1 && cJSON_GetObjectItem(a, "days")->valueint == 2);
  CHECK(is_true(get(call_at(j, 0), "truncated")) && is_true(get(j, "truncated")));
  cJSON_Delete(j);

  /* a bare value at the very end may have been cut: dropped */
  j = call_json(NULL, "<start_function_call>call:f{a:1,b:23");
  a = get(call_at(j, 0), "args");
  CHECK(cJSON_GetArraySize(a) == 1 && get(a, "b") == NULL);
  cJSON_Delete(j);

  /* a stop token inside an escape ends the parse; later text is ignored */
  j = call_json(NULL, "<start_function_call>call:f{a:<escape>x<end_of_turn>more<start_function_call>call:g{}");
  CHECK(n_calls(j) == 1 && is_true(get(call_at(j, 0), "truncated")));
  CHECK(cJSON_GetArraySize(get(call_at(j, 0), "args")) == 0);
  cJSON_Delete(j);

  /* nested braces and brackets, syntax characters inside escapes */
  j = call_json(NULL, "<start_function_call>call:f{ o : { x:1 , y:[1, 2,{z:<escape>q<escape>}] } ,"
                      "s:<escape>}{,:[<escape>,e:[]}<end_function_call>");
  a = get(call_at(j, 0), "args");
  const cJSON *y = get(get(a, "o"), "y");
  CHECK(cJSON_GetArraySize(y) == 3 && streq(str_of(get(cJSON_GetArrayItem(y, 2), "z")), "q"));
  CHECK(streq(str_of(get(a, "s")), "}{,:["));
  CHECK(cJSON_IsArray(get(a, "e")) && cJSON_GetArraySize(get(a, "e")) == 0);
  CHECK(get(call_at(j, 0), "truncated") == NULL && get(call_at(j, 0), "malformed") == NULL);
  cJSON_Delete(j);

  /* unicode, quotes, backslashes, control characters, invalid UTF-8 */
  char *raw = NULL;
  j = call_json_n(NULL, "<start_function_call>call:f{c:<escape>Köln 🚀<escape>,q:<escape>say \"hi\" \\o/\n\t\x01<escape>,"
                  "bad:<escape>a\xff\xc3(b\xed\xa0\x80<escape>,k:<escape>\xe2\x82<escape>}<end_function_call>", 
                  strlen("<start_function_call>call:f{c:<escape>Köln 🚀<escape>,q:<escape>say \"hi\" \\o/\n\t\x01<escape>,"
                  "bad:<escape>a\xff\xc3(b\xed\xa0\x80<escape>,k:<escape>\xe2\x82<escape>}<end_function_call>"), &raw);
  a = get(call_at(j, 0), "args");
  CHECK(streq(str_of(get(a, "c")), "Köln 🚀"));
  CHECK(streq(str_of(get(a, "q")), "say \"hi\" \\o/\n\t\x01"));
  CHECK(streq(str_of(get(a, "bad")), "a\xEF\xBF\xBD\xEF\xBF\xBD(b\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
  CHECK(streq(str_of(get(a, "k")), "\xEF\xBF\xBD")); /* a cut character: one maximal subpart, one U+FFFD */
  CHECK(raw && strstr(raw, "\\u0001") != NULL);
  free(raw);
  cJSON_Delete(j);

  /* numbers: integers stay integers, huge ones keep their digits, non-JSON spellings are strings */
  j = call_json_n(NULL, "<start_function_call>call:f{big:123456789012345678901234567890,neg:-7,x:3.25,e:1e5,"
                  "p:+3,z:007,h:0x1F,t:true,n:null,w:hello world ,d:.5}",
                  strlen("<start_function_call>call:f{big:123456789012345678901234567890,neg:-7,x:3.25,e:1e5,"
                         "p:+3,z:007,h:0x1F,t:true,n:null,w:hello world ,d:.5}"),
                  &raw);
  a = get(call_at(j, 0), "args");
  CHECK(raw && strstr(raw, "\"big\":123456789012345678901234567890,") != NULL);
  CHECK(raw && strstr(raw, "\"neg\":-7,\"x\":3.25,\"e\":1e5,") != NULL);
  CHECK(cJSON_IsNumber(get(a, "big")) && get(a, "big")->valuedouble > 1.2e29);
  CHECK(streq(str_of(get(a, "p")), "+3") && streq(str_of(get(a, "z")), "007") && streq(str_of(get(a, "h")), "0x1F"));
  CHECK(is_true(get(a, "t")) && cJSON_IsNull(get(a, "n")) && streq(str_of(get(a, "w")), "hello world"));
  CHECK(streq(str_of(get(a, "d")), ".5"));
  CHECK(is_true(get(call_at(j, 0), "truncated"))); /* no <end_function_call> */
  free(raw);
  cJSON_Delete(j);

  /* empty args in several spellings, several calls in a row, prose around them */
  j = call_json(NULL, "Sure. <start_function_call>call:a{}<end_function_call>\n<start_function_call> call:b { } "
                      "<end_function_call>then<start_function_call>call:c{,}<end_function_call><end_of_turn>ignored");
  CHECK(n_calls(j) == 3);
  CHECK(streq(str_of(get(call_at(j, 1), "name")), "b") && cJSON_GetArraySize(get(call_at(j, 1), "args")) == 0);
  CHECK(get(call_at(j, 2), "malformed") != NULL); /* "{,": no key before the comma */
  CHECK(streq(str_of(get(j, "text")), "Sure. \nthen"));
  CHECK(get(j, "truncated") == NULL);
  cJSON_Delete(j);

  /* malformed inside a call: keep what parsed, skip to its end, go on with the next call */
  j = call_json(NULL, "<start_function_call>call:f{a:1,b 2,c:3}<end_function_call>"
                      "<start_function_call>call:g{k:<escape>v<escape>}<end_function_call>");
  CHECK(n_calls(j) == 2 && is_true(get(call_at(j, 0), "malformed")));
  CHECK(cJSON_GetArraySize(get(call_at(j, 0), "args")) == 1);
  CHECK(streq(str_of(get(get(call_at(j, 1), "args"), "k")), "v"));
  cJSON_Delete(j);

  /* no "call:", no name, cut inside "call:" */
  j = call_json(NULL, "<start_function_call>declaration:f{}<end_function_call>");
  CHECK(n_calls(j) == 1 && is_true(get(call_at(j, 0), "malformed")) && get(call_at(j, 0), "truncated") == NULL);
  cJSON_Delete(j);
  j = call_json(NULL, "<start_function_call>call:{a:1}<end_function_call>");
  CHECK(n_calls(j) == 1 && is_true(get(call_at(j, 0), "malformed")));
  cJSON_Delete(j);
  j = call_json(NULL, "<start_function_call>cal");
  CHECK(n_calls(j) == 1 && is_true(get(call_at(j, 0), "truncated")) && get(call_at(j, 0), "malformed") == NULL);
  cJSON_Delete(j);
  j = call_json(NULL, "<start_function_call>call:set_vol");
  CHECK(n_calls(j) == 1 && streq(str_of(get(call_at(j, 0), "name")), "set_vol") && is_true(get(j, "truncated")));
  cJSON_Delete(j);

  /* escaped keys, duplicate keys (first kept), nested duplicate keys */
  j = call_json(NULL, "<start_function_call>call:f{<escape>odd key<escape>:1,a:1,a:2,o:{x:1,x:2}}<end_function_call>");
  a = get(call_at(j, 0), "args");
  CHECK(get(a, "odd key") && cJSON_GetArraySize(a) == 3 && get(a, "a")->valueint == 1);
  CHECK(get(get(a, "o"), "x")->valueint == 1 && cJSON_GetArraySize(get(a, "o")) == 1);
  static const char *const dup_a[] = {"a", NULL};
  CHECK(str_list(get(call_at(j, 0), "duplicate_args"), dup_a));
  cJSON_Delete(j);

  /* depth bomb */
  char bomb[512] = "<start_function_call>call:f{a:";
  for (int i = 0; i < 100; i++) strcat(bomb, "[");
  j = call_json(NULL, bomb);
  CHECK(n_calls(j) == 1 && is_true(get(call_at(j, 0), "malformed")));
  cJSON_Delete(j);

  /* prose only, empty input, stray end tokens, embedded NUL */
  j = call_json(NULL, "");
  CHECK(n_calls(j) == 0 && streq(str_of(get(j, "text")), ""));
  cJSON_Delete(j);
  j = call_json(NULL, "  Ich kann das nicht.<end_function_call> <eos>");
  CHECK(n_calls(j) == 0 && streq(str_of(get(j, "text")), "Ich kann das nicht."));
  cJSON_Delete(j);
  j = call_json_n(NULL, "a\0b", 3, &raw);
  CHECK(raw && strstr(raw, "\"a\\u0000b\"") != NULL);
  free(raw);
  cJSON_Delete(j);

  /* output buffer contract */
  const char *g = "<start_function_call>call:f{}<end_function_call>";
  size_t need = 0, n = 0;
  CHECK_EQ_INT(fg_call_parse(NULL, g, strlen(g), NULL, 0, &need, NULL), FG_ERR_BUFFER_TOO_SMALL);
  char buf[256];
  CHECK_EQ_INT(fg_call_parse(NULL, g, strlen(g), buf, need, &n, NULL), FG_ERR_BUFFER_TOO_SMALL);
  CHECK_OK(fg_call_parse(NULL, g, strlen(g), buf, need + 1, &n, NULL));
  CHECK(streq(buf, "{\"calls\":[{\"name\":\"f\",\"args\":{}}],\"text\":\"\"}"));
  CHECK_EQ_INT(fg_call_parse(NULL, NULL, 1, buf, sizeof buf, &n, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_call_parse(NULL, g, 1, buf, sizeof buf, NULL, NULL), FG_ERR_INVALID_ARG);
}

static void test_parse_with_catalog(void) {
  fg_catalog *toy = parse_file("toy-catalog.json");
  fg_catalog *tv = parse_file("tv-catalog-small.json");
  if (!toy || !tv) {
    fg_catalog_free(toy);
    fg_catalog_free(tv);
    return;
  }
  cJSON *j, *c0;

  j = call_json(toy, "<start_function_call>call:toggle_lamp{state:<escape>off<escape>}<end_function_call>");
  c0 = call_at(j, 0);
  CHECK(cJSON_GetArraySize(c0) == 2); /* name and args only: no flags */
  cJSON_Delete(j);

  /* unknown function: flagged, args kept as parsed */
  j = call_json(toy, "<start_function_call>call:flip_coin{sides:20}<end_function_call>");
  c0 = call_at(j, 0);
  CHECK(is_true(get(c0, "unknown_function")) && cJSON_IsNumber(get(get(c0, "args"), "sides")));
  cJSON_Delete(j);

  /* undeclared key, enum value not declared, missing required */
  j = call_json(toy, "<start_function_call>call:toggle_lamp{state:<escape>dim<escape>,color:<escape>red<escape>}"
                     "<end_function_call>");
  c0 = call_at(j, 0);
  static const char *const color[] = {"color", NULL}, *const state[] = {"state", NULL};
  CHECK(str_list(get(c0, "unknown_args"), color) && str_list(get(c0, "bad_enum"), state));
  CHECK(streq(str_of(get(get(c0, "args"), "state")), "dim") && streq(str_of(get(get(c0, "args"), "color")), "red"));
  CHECK(get(c0, "missing_required") == NULL);
  cJSON_Delete(j);
  j = call_json(toy, "<start_function_call>call:toggle_lamp{}<end_function_call>");
  CHECK(str_list(get(call_at(j, 0), "missing_required"), state));
  cJSON_Delete(j);

  /* coercion to declared types */
  j = call_json(toy, "<start_function_call>call:set_timer{minutes:<escape> 5 <escape>}<end_function_call>");
  c0 = call_at(j, 0);
  CHECK(cJSON_IsNumber(get(get(c0, "args"), "minutes")) && get(get(c0, "args"), "minutes")->valueint == 5);
  CHECK(get(c0, "bad_type") == NULL);
  cJSON_Delete(j);
  static const char *const minutes[] = {"minutes", NULL};
  const char *bad_minutes[] = {"<escape>five<escape>", "2.5", "true", "{}", "[1]", "null"};
  for (int k = 0; k < 6; k++) {
    char g[256];
    snprintf(g, sizeof g, "<start_function_call>call:set_timer{minutes:%s}<end_function_call>", bad_minutes[k]);
    j = call_json(toy, g);
    CHECK_MSG(str_list(get(call_at(j, 0), "bad_type"), minutes), "%s", g);
    CHECK(get(get(call_at(j, 0), "args"), "minutes") != NULL); /* kept */
    cJSON_Delete(j);
  }
  /* a bare number for a STRING parameter becomes a string with the same text */
  j = call_json(tv, "<start_function_call>call:open_app{app:3sat}<end_function_call>");
  CHECK(streq(str_of(get(get(call_at(j, 0), "args"), "app")), "3sat"));
  cJSON_Delete(j);
  j = call_json(tv, "<start_function_call>call:switch_channel{channel:7,number:<escape>7<escape>}<end_function_call>");
  c0 = call_at(j, 0);
  CHECK(streq(str_of(get(get(c0, "args"), "channel")), "7") && cJSON_IsNumber(get(get(c0, "args"), "number")));
  CHECK(get(c0, "bad_type") == NULL);
  cJSON_Delete(j);
  /* a bare enum word is accepted as the string it spells */
  j = call_json(tv, "<start_function_call>call:mute{state:on}<end_function_call>");
  CHECK(streq(str_of(get(get(call_at(j, 0), "args"), "state")), "on") && get(call_at(j, 0), "bad_enum") == NULL);
  cJSON_Delete(j);

  /* name snapping: case/punctuation-insensitive, then edit distance <= 2, unique matches only */
  static const char *const snaps[][3] = {
      {"Toggle-Lamp", "toggle_lamp", "Toggle-Lamp"}, {"set_timr", "set_timer", "set_timr"},
      {"SETTIMER", "set_timer", "SETTIMER"},       {"roll", "roll", NULL},
      {"x", "x", NULL},
  };
  for (int k = 0; k < 5; k++) {
    char g[128];
    snprintf(g, sizeof g, "<start_function_call>call:%s{}<end_function_call>", snaps[k][0]);
    j = call_json(toy, g);
    c0 = call_at(j, 0);
    CHECK_MSG(streq(str_of(get(c0, "name")), snaps[k][1]), "%s -> %s", snaps[k][0], str_of(get(c0, "name")));
    if (snaps[k][2]) {
      CHECK(streq(str_of(get(c0, "snapped_from")), snaps[k][2]) && get(c0, "unknown_function") == NULL);
    } else {
      CHECK(get(c0, "snapped_from") == NULL && is_true(get(c0, "unknown_function")));
    }
    cJSON_Delete(j);
  }
  j = call_json(toy, "<start_function_call>call:toggle-lamp{state:dim}<end_function_call>");
  static const char *const st_only[] = {"state", NULL};
  CHECK(str_list(get(call_at(j, 0), "bad_enum"), st_only)); /* checks run against the snapped function */
  cJSON_Delete(j);
  fg_catalog *amb = parse_str("[{\"name\":\"set_alpha\"},{\"name\":\"set_alphb\"}]");
  j = call_json(amb, "<start_function_call>call:set_alphc{}<end_function_call>");
  CHECK(streq(str_of(get(call_at(j, 0), "name")), "set_alphc") && is_true(get(call_at(j, 0), "unknown_function")));
  cJSON_Delete(j);
  fg_catalog_free(amb);

  /* boolean coercion on a synthetic catalog; nullable accepts null */
  fg_catalog *bc = parse_str("[{\"name\":\"b\",\"parameters\":{\"type\":\"object\",\"properties\":{\"on\":{\"type\":"
                             "\"boolean\"},\"x\":{\"type\":\"number\",\"nullable\":true}}}}]");
  j = call_json(bc, "<start_function_call>call:b{on:<escape>false<escape>,x:null}<end_function_call>");
  CHECK(cJSON_IsFalse(get(get(call_at(j, 0), "args"), "on")) && get(call_at(j, 0), "bad_type") == NULL);
  cJSON_Delete(j);
  fg_catalog_free(bc);

  fg_catalog_free(toy);
  fg_catalog_free(tv);
}

// ----------------------------------------------------------------------------
// Stop rule

static fg_nlu_stop feed_all(fg_nlu_stopper *s, const char *const *pieces, int *at_piece) {
  fg_nlu_stop r = FG_NLU_CONTINUE;
  *at_piece = -1;
  for (int i = 0; pieces[i]; i++) {
    r = fg_nlu_stopper_feed(s, pieces[i], strlen(pieces[i]));
    if (r != FG_NLU_CONTINUE) {
      *at_piece = i;
      return r;
    }
  }
  return r;
}

static void test_stop_rule(void) {
  CHECK_EQ_INT(fg_nlu_stop_piece("<end_function_call>", 19), FG_NLU_STOP_END_CALL);
  CHECK_EQ_INT(fg_nlu_stop_piece("<end_of_turn>", 13), FG_NLU_STOP_END_TURN);
  CHECK_EQ_INT(fg_nlu_stop_piece("<eos>", 5), FG_NLU_STOP_EOS);
  CHECK_EQ_INT(fg_nlu_stop_piece("<start_function_response>", 25), FG_NLU_STOP_RESPONSE);
  CHECK_EQ_INT(fg_nlu_stop_piece("<start_function_call>", 21), FG_NLU_CONTINUE);
  CHECK_EQ_INT(fg_nlu_stop_piece("<eos>x", 6), FG_NLU_CONTINUE);
  CHECK_EQ_INT(fg_nlu_stop_piece("<eos", 4), FG_NLU_CONTINUE);
  CHECK_EQ_INT(fg_nlu_stop_piece(NULL, 0), FG_NLU_CONTINUE);
  CHECK(streq(fg_nlu_stop_name(FG_NLU_STOP_PROSE), "prose_limit"));

  fg_nlu_stopper s;
  int at;
  static const char *const call2[] = {"<start_function_call>", "call", ":", "toggle", "_lamp", "{", "state", ":",
                                      "<escape>", "off", "<escape>", "}", "<end_function_call>",
                                      "<start_function_call>", "call", ":roll_dice{}", "<end_function_call>",
                                      "<start_function_response>", NULL};
  fg_nlu_stopper_init(&s, 32, 8, 0);
  CHECK_EQ_INT(feed_all(&s, call2, &at), FG_NLU_STOP_END_CALL);
  CHECK_EQ_INT(at, 12);
  CHECK_EQ_INT(fg_nlu_stopper_feed(&s, "x", 1), FG_NLU_STOP_END_CALL); /* sticky */
  CHECK_EQ_INT(s.n_fed, 13);

  fg_nlu_stopper_init(&s, 32, 8, FG_NLU_MULTI_CALL);
  CHECK_EQ_INT(feed_all(&s, call2, &at), FG_NLU_STOP_END_CALL);
  CHECK_EQ_INT(at, 17); /* the piece after the second call is not another call */

  static const char *const prose[] = {"The", " weather", " in", " Paris", " is", " sunny", ".", " Enjoy", "!", NULL};
  fg_nlu_stopper_init(&s, 32, 8, 0);
  CHECK_EQ_INT(feed_all(&s, prose, &at), FG_NLU_STOP_PROSE);
  CHECK_EQ_INT(at, 7);
  fg_nlu_stopper_init(&s, 32, 0, 0);
  CHECK_EQ_INT(feed_all(&s, prose, &at), FG_NLU_CONTINUE); /* prose limit off */

  static const char *const think[] = {"<think>", "ok", "</think>", "<start_function_call>", "call", ":", "a", "{",
                                      "x", ":", "1", ",", "y", ":", "2", "}", "<end_function_call>", NULL};
  fg_nlu_stopper_init(&s, 32, 8, 0);
  CHECK_EQ_INT(feed_all(&s, think, &at), FG_NLU_STOP_END_CALL); /* the call started before the prose limit */
  CHECK_EQ_INT(at, 16);
  fg_nlu_stopper_init(&s, 10, 0, 0);
  CHECK_EQ_INT(feed_all(&s, think, &at), FG_NLU_STOP_MAX_TOKENS);
  CHECK_EQ_INT(at, 9);

  static const char *const eot[] = {"Nein", "<end_of_turn>", NULL};
  fg_nlu_stopper_init(&s, 0, 0, 0);
  CHECK_EQ_INT(feed_all(&s, eot, &at), FG_NLU_STOP_END_TURN);
  static const char *const eos[] = {"<start_function_call>", "<eos>", NULL};
  fg_nlu_stopper_init(&s, 0, 1, 0);
  CHECK_EQ_INT(feed_all(&s, eos, &at), FG_NLU_STOP_EOS);
}

/* fg_nlu_result.stop: every reason has its own non-empty name (the JSON outputs carry these), and a
 * value outside the enum gets "unknown" */
static void test_stop_names(void) {
  static const char *const want[] = {"continue",   "end_function_call", "end_of_turn",  "eos",          "start_function_response",
                                     "prose_limit", "max_tokens",        "context_full", "start_of_turn"};
  const int n = (int)(sizeof want / sizeof want[0]);
  CHECK_EQ_INT(FG_NLU_STOP_START_OF_TURN + 1, n);
  for (int i = 0; i < n; i++) {
    const char *name = fg_nlu_stop_name((fg_nlu_stop)i);
    CHECK_MSG(name && name[0] && streq(name, want[i]), "stop %d: \"%s\"", i, name ? name : "(null)");
    for (int j = 0; j < i; j++) CHECK_MSG(!streq(name, fg_nlu_stop_name((fg_nlu_stop)j)), "stops %d and %d share a name", i, j);
  }
  CHECK(streq(fg_nlu_stop_name((fg_nlu_stop)n), "unknown"));
  CHECK(streq(fg_nlu_stop_name((fg_nlu_stop)-1), "unknown"));
  CHECK(streq(fg_nlu_stop_name((fg_nlu_stop)1000), "unknown"));
}

// ----------------------------------------------------------------------------
// Allocation failures: every failure is reported, nothing leaks (ASan), later calls work

static void test_alloc_failures(void) {
  size_t n;
  char *json = fg_test_read_file(DATA "tv-catalog.json", &n);
  if (!json) return;
  int saw_nomem = 0, saw_ok = 0;
  for (uint64_t k = 1; k < 400 && !saw_ok; k++) {
    fg_catalog *c = NULL;
    fg_error e = {0};
    fg_alloc_fail_after(k);
    fg_status st = fg_catalog_parse(json, n, &c, &e);
    fg_alloc_fail_after(0);
    CHECK_MSG(st == FG_OK || st == FG_ERR_NOMEM, "k=%llu: %d", (unsigned long long)k, (int)st);
    if (st == FG_ERR_NOMEM) {
      saw_nomem++;
      CHECK(c == NULL);
    }
    if (st == FG_OK) saw_ok = 1;
    fg_catalog_free(c);
  }
  CHECK(saw_nomem > 0 && saw_ok);
  free(json);

  fg_catalog *toy = parse_file("toy-catalog.json");
  const char *g = "Ok <start_function_call>call:toggle_lamp{state:<escape>on<escape>,x:[1,{y:2}]}<end_function_call>";
  saw_nomem = 0;
  saw_ok = 0;
  for (uint64_t k = 1; k < 100 && !saw_ok; k++) {
    char buf[512];
    size_t m = 0;
    fg_alloc_fail_after(k);
    fg_status st = fg_call_parse(toy, g, strlen(g), buf, sizeof buf, &m, NULL);
    fg_alloc_fail_after(0);
    CHECK(st == FG_OK || st == FG_ERR_NOMEM);
    saw_nomem += st == FG_ERR_NOMEM;
    saw_ok = st == FG_OK;
  }
  CHECK(saw_nomem > 0 && saw_ok);
  fg_catalog_free(toy);
}

// ----------------------------------------------------------------------------
// The fuzz seed corpora, replayed with the fuzz targets' invariants

static void replay_catalog(const char *data, size_t n) {
  fg_catalog *c = NULL;
  fg_error e = {0};
  fg_status st = fg_catalog_parse(data, n, &c, &e);
  CHECK(st == FG_OK || (st == FG_ERR_FORMAT && c == NULL && e.msg[0]));
  if (st != FG_OK) return;
  char *p = prefix_str(c);
  size_t k = 0;
  for (const char *q = p; (q = strstr(q, "<start_function_declaration>")) != NULL; q++) k++;
  CHECK_EQ_INT(k, fg_catalog_n_functions(c));
  free(p);
  fg_catalog_free(c);
}

static void replay_callparse(const char *data, size_t n) {
  fg_catalog *toy = parse_file("toy-catalog.json");
  cJSON *j = call_json_n(NULL, data, n, NULL);
  CHECK(j && cJSON_IsArray(get(j, "calls")) && cJSON_IsString(get(j, "text")));
  cJSON_Delete(j);
  j = call_json_n(toy, data, n, NULL);
  CHECK(j && cJSON_IsArray(get(j, "calls")));
  cJSON_Delete(j);
  fg_catalog_free(toy);
}

static void test_fuzz_corpora(void) {
  static const char *const dirs[] = {"catalog", "callparse"};
  for (int d = 0; d < 2; d++) {
    char path[1024];
    snprintf(path, sizeof path, FG_SOURCE_DIR "/tests/fuzz/corpus/%s", dirs[d]);
    DIR *dir = opendir(path);
    CHECK_MSG(dir != NULL, "cannot open %s", path);
    if (!dir) continue;
    int files = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
      if (de->d_name[0] == '.') continue;
      char file[1400];
      snprintf(file, sizeof file, "%s/%s", path, de->d_name);
      size_t n;
      char *data = fg_test_read_file(file, &n);
      if (!data) continue;
      if (d == 0)
        replay_catalog(data, n);
      else
        replay_callparse(data, n);
      free(data);
      files++;
    }
    closedir(dir);
    CHECK(files > 0);
  }
}

int main(void) {
  test_official_rendering();
  test_official_parsing();
  test_get_weather_prompt();
  test_catalog_formats();
  test_catalog_rendering_rules();
  test_bad_catalogs();
  test_render_edges();
  test_parse_adversarial();
  test_parse_with_catalog();
  test_stop_rule();
  test_stop_names();
  test_alloc_failures();
  test_fuzz_corpora();
  return fg_test_finish("test_nlu");
}
