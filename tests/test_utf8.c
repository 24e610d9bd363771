/* test_utf8.c — every text fgemma hands out is valid UTF-8 (issue 19, docs/RELIABILITY.md):
 * fg_json_quote against Unicode's maximal-subpart examples and an independent checker
 * (utf8_check.h), error messages cut inside a character, catalogs that are not UTF-8, and the NLU
 * engine on a model that generates byte-fallback tokens which split characters. The same model is
 * the fixture of tests/utf8_emitters.py (the CLI's JSON lines read by Python's strict decoder). */
#include "fg_internal.h"
#include "testutil.h"
#include "utf8_check.h"

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

/* Reference repair from the Table 3-7 checker: each maximal subpart becomes U+FFFD. */
static size_t ref_repair(const char *in, size_t n, char *out) {
  const unsigned char *s = (const unsigned char *)in;
  size_t i = 0, o = 0, sub = 1;
  while (i < n) {
    const size_t l = utf8_check_seq(s + i, n - i, &sub);
    if (l) {
      memcpy(out + o, in + i, l);
      o += l;
      i += l;
    } else {
      memcpy(out + o, "\xEF\xBF\xBD", 3);
      o += 3;
      i += sub;
    }
  }
  return o;
}

/* fg_json_quote(in) parsed back by cJSON equals the reference repair (no NUL in the input). */
static void check_quote(const char *in, size_t n, const char *label) {
  size_t need = 0, got = 0;
  CHECK_EQ_INT(fg_json_quote(in, n, NULL, 0, &need), FG_ERR_BUFFER_TOO_SMALL);
  char *q = malloc(need + 1);
  CHECK_OK(fg_json_quote(in, n, q, need + 1, &got));
  CHECK_EQ_INT(got, need);
  CHECK_MSG(utf8_check_valid(q, got), "%s: quoted text is not UTF-8", label);
  for (size_t i = 0; i < got; i++) CHECK_MSG((unsigned char)q[i] >= 0x20, "%s: raw control byte in JSON", label);
  cJSON *j = cJSON_ParseWithLength(q, got);
  CHECK_MSG(j && cJSON_IsString(j), "%s: cJSON cannot parse %s", label, q);
  if (j && cJSON_IsString(j) && !memchr(in, 0, n)) {
    char *ref = malloc(3 * n + 1);
    const size_t rn = ref_repair(in, n, ref);
    const char *v = cJSON_GetStringValue(j);
    CHECK_MSG(strlen(v) == rn && memcmp(v, ref, rn) == 0, "%s: round trip differs from the reference repair", label);
    free(ref);
  }
  cJSON_Delete(j);
  free(q);
}

static void test_unicode_examples(void) {
  /* Unicode 15, section 3.9, the maximal-subpart examples (Tables 3-8 .. 3-11) */
  static const struct { const char *in, *out; } cases[] = {
      {"a\xF1\x80\x80\xE1\x80\xC2" "b\x80" "c\x80\xBF" "d",
       "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xEF\xBF\xBD\xEF\xBF\xBD" "d"},
      {"\xC0\xAF\xE0\x80\xBF\xF0\x81\x82" "A", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                                             "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "A"},
      {"\xED\xA0\x80\xED\xBF\xBF\xED\xAF" "A", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                                             "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "A"},
      {"\xF4\x91\x92\x93\xFF" "A\x80\xBF" "B", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                                             "A\xEF\xBF\xBD\xEF\xBF\xBD" "B"},
      {"\xE1\x80\xE2\xF0\x91\x92\xF1\xBF" "A", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "A"},
      {"Gr\xC3\xBC\xC3\x9F" "e \xF0\x9F\x93\xBA", "Gr\xC3\xBC\xC3\x9F" "e \xF0\x9F\x93\xBA"}, /* valid: kept */
      {"\xE2\x82", "\xEF\xBF\xBD"},                                                          /* cut at the end */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char buf[128];
    size_t n = 0;
    const size_t in_n = strlen(cases[c].in);
    CHECK_OK(fg_json_quote(cases[c].in, in_n, buf, sizeof buf, &n));
    const size_t want = strlen(cases[c].out);
    CHECK_MSG(n == want + 2 && buf[0] == '"' && buf[n - 1] == '"' && memcmp(buf + 1, cases[c].out, want) == 0,
              "example %zu quoted as %s", c, buf);
    CHECK_EQ_INT(fg_utf8_repair(cases[c].in, in_n, NULL, 0), want);
    char rep[128];
    CHECK_EQ_INT(fg_utf8_repair(cases[c].in, in_n, rep, sizeof rep), want);
    CHECK(memcmp(rep, cases[c].out, want) == 0 && rep[want] == '\0');
    CHECK(fg_utf8_valid(cases[c].in, in_n, NULL) == (strcmp(cases[c].in, cases[c].out) == 0));
    check_quote(cases[c].in, in_n, "example");
  }
  /* escapes */
  char buf[64];
  size_t n = 0;
  CHECK_OK(fg_json_quote("a\"b\\c\n\t\r\b\f\x01\x1f", 12, buf, sizeof buf, &n));
  CHECK_MSG(strcmp(buf, "\"a\\\"b\\\\c\\n\\t\\r\\b\\f\\u0001\\u001f\"") == 0, "escaped as %s", buf);
  CHECK_OK(fg_json_quote("a\0b", 3, buf, sizeof buf, &n));
  CHECK_MSG(strcmp(buf, "\"a\\u0000b\"") == 0, "NUL escaped as %s", buf);
  /* the text output rule and bad arguments */
  CHECK_EQ_INT(fg_json_quote("abc", 3, buf, 5, &n), FG_ERR_BUFFER_TOO_SMALL);
  CHECK_EQ_INT(n, 5);
  CHECK_OK(fg_json_quote("abc", 3, buf, 6, &n));
  CHECK_OK(fg_json_quote(NULL, 0, buf, sizeof buf, &n));
  CHECK(strcmp(buf, "\"\"") == 0);
  CHECK_EQ_INT(fg_json_quote(NULL, 3, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_json_quote("abc", 3, NULL, 8, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_json_quote("abc", 3, buf, sizeof buf, NULL), FG_ERR_INVALID_ARG);
}

/* Every sequence of up to two bytes, and random strings biased to the interesting bytes. */
static void test_exhaustive_and_random(void) {
  unsigned char b[4];
  int bad = 0;
  for (int x = 0; x < 256; x++) {
    b[0] = (unsigned char)x;
    size_t sub = 0, lsub = 0;
    const size_t a1 = utf8_check_seq(b, 1, &sub), l1 = fg_utf8_seq(b, 1, &lsub);
    if (a1 != l1 || (!a1 && sub != lsub)) bad++;
    for (int y = 0; y < 256; y++) {
      b[1] = (unsigned char)y;
      const size_t a = utf8_check_seq(b, 2, &sub), l = fg_utf8_seq(b, 2, &lsub);
      if (a != l || (!a && sub != lsub)) bad++;
    }
  }
  CHECK_EQ_INT(bad, 0);
  static const unsigned char pool[] = {'a', ' ', '"', '\\', '\n', 0x01, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF,
                                       0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4,
                                       0xF5, 0xFF};
  uint64_t r = 0x9E3779B97F4A7C15ull;
  char s[40];
  for (int t = 0; t < 20000; t++) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    const size_t n = 1 + (size_t)(r % 39);
    for (size_t i = 0; i < n; i++) {
      r ^= r << 13, r ^= r >> 7, r ^= r << 17;
      s[i] = (char)pool[r % sizeof pool];
    }
    check_quote(s, n, "random");
    size_t at = 0;
    const bool v = fg_utf8_valid(s, n, &at);
    if (v != utf8_check_valid(s, n)) bad++;
  }
  CHECK_EQ_INT(bad, 0);
}

/* An error message cut inside a character, or quoting the caller's broken bytes, stays UTF-8. */
static void test_messages(void) {
  char arg[400];
  for (size_t i = 0; i + 1 < sizeof arg; i += 2) memcpy(arg + i, "\xC3\xA4", 2); /* "ää..." */
  arg[sizeof arg - 1] = '\0';
  for (int shift = 0; shift < 4; shift++) {
    fg_error e;
    fg_err(&e, FG_ERR_FORMAT, "%.*s%s", shift, "xyz", arg);
    CHECK_MSG(utf8_check_valid(e.msg, strlen(e.msg)), "message cut inside a character (shift %d)", shift);
    CHECK(strlen(e.msg) >= sizeof e.msg - 4);
  }
  fg_error e;
  fg_err(&e, FG_ERR_IO, "cannot open %s", "bad\xA8name\xE2\x82");
  CHECK_MSG(strcmp(e.msg, "cannot open bad\xEF\xBF\xBDname\xEF\xBF\xBD") == 0, "got %s", e.msg);

  /* a catalog that is not UTF-8 is refused, naming the place */
  const char cat[] = "{\"id\":\"x\",\"functions\":[{\"name\":\"f\",\"description\":\"caf\xE9\"}]}";
  fg_catalog *c = NULL;
  CHECK_EQ_INT(fg_catalog_parse(cat, sizeof cat - 1, &c, &e), FG_ERR_FORMAT);
  CHECK(c == NULL);
  CHECK_MSG(strstr(e.msg, "UTF-8") && strstr(e.msg, "column 54") && utf8_check_valid(e.msg, strlen(e.msg)), "got %s",
            e.msg);
}

/* The engine on a model that generates byte-fallback tokens which split characters. */
static void test_engine_raw(void) {
  if (fg_test_ensure_model("tiny-vocab-f32.gguf", "tiny", "f32", 1)) {
    CHECK_MSG(0, "no vocabulary model");
    return;
  }
  fg_model *vm = NULL;
  CHECK_OK(fg_model_load(fg_test_model_path("tiny-vocab-f32.gguf"), NULL, &vm, NULL));
  if (!vm) return;
  /* the prompt's last token ("\n" after <start_of_turn>model) starts the chain */
  const char *pieces[] = {"\n", "<0xE2>", "<0x82>", "Hallo", "<0xA8>", "<0xF0>", "<0x9F>", "<end_of_turn>"};
  int32_t chain[8];
  for (size_t i = 0; i < 8; i++) CHECK_OK(fg_token_lookup(vm, pieces[i], &chain[i]));
  fg_model_free(vm);
  CHECK_OK(fg_test_ensure_chain_model("chain-utf8.gguf", chain, 8, "utf8 chain \xE2\x82 model \xA8"));

  fg_model *m = NULL;
  CHECK_OK(fg_model_load(fg_test_model_path("chain-utf8.gguf"), NULL, &m, NULL));
  fg_catalog *cat = fg_test_catalog_file("tv-catalog-small.json");
  if (!m || !cat) {
    fg_model_free(m);
    fg_catalog_free(cat);
    return;
  }
  fg_model_info info;
  CHECK_OK(fg_model_get_info(m, &info));
  CHECK_MSG(utf8_check_valid(info.name, strlen(info.name)) && strstr(info.name, "\xEF\xBF\xBD"), "name %s", info.name);

  fg_nlu_params np;
  fg_nlu_params_init(&np);
  np.session.n_threads = 1;
  fg_nlu *nlu = NULL;
  CHECK_OK(fg_nlu_create(m, cat, &np, &nlu, NULL));
  fg_nlu_result r;
  if (nlu && fg_nlu_ask(nlu, "Schalte auf ZDF um", 18, &r) == FG_OK) {
    /* generated bytes E2 82 "Hallo" A8 F0 9F: three maximal subparts */
    CHECK_MSG(strcmp(r.raw, "\xEF\xBF\xBDHallo\xEF\xBF\xBD\xEF\xBF\xBD<end_of_turn>") == 0, "raw %s", r.raw);
    CHECK_EQ_INT(r.decode_tokens, 7);
    CHECK(r.stop == FG_NLU_STOP_END_TURN);
    CHECK(utf8_check_valid(r.json, strlen(r.json)));
    cJSON *j = cJSON_Parse(r.json);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "text");
    CHECK_MSG(cJSON_IsString(t) && strcmp(t->valuestring, "\xEF\xBF\xBDHallo\xEF\xBF\xBD\xEF\xBF\xBD") == 0,
              "json %s", r.json);
    cJSON_Delete(j);
  } else {
    CHECK_MSG(0, "ask failed: %s", nlu ? fg_nlu_errmsg(nlu) : "no engine");
  }
  fg_nlu_free(nlu);
  fg_catalog_free(cat);
  fg_model_free(m);
}

int main(int argc, char **argv) {
  (void)argc, (void)argv;
  test_unicode_examples();
  test_exhaustive_and_random();
  test_messages();
  test_engine_raw();
  return fg_test_finish("test_utf8");
}
