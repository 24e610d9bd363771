/* test_cli.c — the fgemma CLI as a process: `tokenize --jsonl` (batch mode, checked against
 * fg_tokenize in this process) and `eval --calls` (scores checked against numbers that follow from
 * the data: with a one-function catalog whose call is forced token by token, call-only decoding gives
 * the same answer whatever the weights are, so every count is known in advance).
 *
 * The CLI's path comes from FG_CLI_BIN (tests/cli.cmake). The tiny model with the real vocabulary is
 * generated once under FG_TEST_MODELS. */
#include "fgemma.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef FG_CLI_BIN
#error "FG_CLI_BIN must name the fgemma binary (tests/cli.cmake)"
#endif

static char g_dir[64];

static const char *tmp_path(const char *name) {
  static char buf[4][256];
  static int k;
  char *p = buf[k++ & 3];
  snprintf(p, 256, "%s/%s", g_dir, name);
  return p;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

/* Runs the CLI with args (a shell word list); stdout into *out (malloc'd), stderr into the file err.txt.
 * Returns the exit status (-1 when it did not exit normally). */
static int run_cli(const char *args, char **out) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' %s 2>'%s'", FG_CLI_BIN, args, tmp_path("err.txt"));
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n, p)) > 0;) {
    n += got;
    if (n == cap) buf = realloc(buf, (cap *= 2) + 1);
  }
  if (buf) buf[n] = '\0';
  const int st = pclose(p);
  if (out) *out = buf;
  else free(buf);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool err_contains(const char *needle) {
  char *e = fg_test_read_file(tmp_path("err.txt"), NULL);
  const bool ok = e && strstr(e, needle) != NULL;
  if (!ok) fprintf(stderr, "stderr was: %s\n(expected to contain \"%s\")\n", e ? e : "(none)", needle);
  free(e);
  return ok;
}

// ----------------------------------------------------------------------------------------------
// tokenize --jsonl

static void test_tokenize_jsonl(const fg_model *m, const char *model_path) {
  /* the texts as JSON lines, and the same texts decoded (what fg_tokenize must see) */
  static const char *const lines[] = {
      "\"Ton aus\"",
      "\"Schalte auf ZDF um<end_of_turn>\\n<start_of_turn>model\\n\"",
      "  \"quote \\\" backslash \\\\ slash \\/ tab \\t\"  ",
      "\"\\u00d6ffne \\ud83d\\ude00 Netflix\"",
      "\"<start_function_call>call:mute{state:<escape>on<escape>}<end_function_call>\"",
      "\"\"",
  };
  static const char *const texts[] = {
      "Ton aus",
      "Schalte auf ZDF um<end_of_turn>\n<start_of_turn>model\n",
      "quote \" backslash \\ slash / tab \t",
      "\xc3\x96" "ffne \xf0\x9f\x98\x80 Netflix",
      "<start_function_call>call:mute{state:<escape>on<escape>}<end_function_call>",
      "",
  };
  const size_t n = sizeof lines / sizeof lines[0];
  char input[2048] = "";
  for (size_t i = 0; i < n; i++) {
    strcat(input, lines[i]);
    strcat(input, i == 2 ? "\n\n   \n" : "\n"); /* blank lines are skipped */
  }
  write_file(tmp_path("texts.jsonl"), input);
  for (int bos = 0; bos < 2; bos++) {
    char args[4096], *out = NULL;
    snprintf(args, sizeof args, "tokenize -m '%s' %s--jsonl '%s'", model_path, bos ? "--bos " : "", tmp_path("texts.jsonl"));
    CHECK_EQ_INT(run_cli(args, &out), 0);
    if (!out) continue;
    char *line = out;
    for (size_t i = 0; i < n; i++) {
      char *nl = line ? strchr(line, '\n') : NULL;
      CHECK_MSG(nl != NULL, "output line %zu missing", i + 1);
      if (!nl) break;
      *nl = '\0';
      int32_t want[256];
      size_t nw = 0;
      CHECK_OK(fg_tokenize(m, texts[i], strlen(texts[i]), bos ? FG_TOKENIZE_ADD_BOS : 0, want, 256, &nw));
      cJSON *arr = cJSON_Parse(line);
      CHECK_MSG(cJSON_IsArray(arr), "line %zu is not a JSON array: %s", i + 1, line);
      CHECK_MSG(arr && (size_t)cJSON_GetArraySize(arr) == nw, "line %zu: %d ids, fg_tokenize gives %zu", i + 1,
                arr ? cJSON_GetArraySize(arr) : -1, nw);
      for (size_t j = 0; arr && j < nw && j < (size_t)cJSON_GetArraySize(arr); j++)
        CHECK_EQ_INT(cJSON_GetArrayItem(arr, (int)j)->valueint, want[j]);
      cJSON_Delete(arr);
      line = nl + 1;
    }
    CHECK_MSG(line && *line == '\0', "extra output: %s", line ? line : "");
    free(out);
  }

  /* bad lines stop the run with the line number */
  static const struct { const char *text; const char *msg; } bad[] = {
      {"\"ok\"\nnot json\n", ":2: not a JSON string"},
      {"\"ok\"\n\"ok\"\n\"open\n", ":3: unterminated JSON string"},
      {"\"\\ud800 lone\"\n", ":1: high surrogate without its low surrogate"},
      {"\"a\" \"b\"\n", ":1: text after the JSON string"},
      {"\"bad \\q escape\"\n", ":1: unknown escape"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_file(tmp_path("bad.jsonl"), bad[i].text);
    char args[4096];
    snprintf(args, sizeof args, "tokenize -m '%s' --jsonl '%s'", model_path, tmp_path("bad.jsonl"));
    CHECK_EQ_INT(run_cli(args, NULL), 1);
    CHECK(err_contains(bad[i].msg));
  }
  char args[4096];
  snprintf(args, sizeof args, "tokenize -m '%s' --jsonl", model_path);
  CHECK_EQ_INT(run_cli(args, NULL), 2);
  CHECK(err_contains("--jsonl needs exactly one FILE"));
}

// ----------------------------------------------------------------------------------------------
// eval --calls

/* One function, one required key with a one-member enum: under call-only decoding every token of the
 * answer is forced, so the answer is <start_function_call>call:set_mode{mode:<escape>on<escape>}
 * <end_function_call> whatever the model's weights. */
static const char k_forced_catalog[] =
    "{\"id\":\"forced\",\"functions\":[{\"name\":\"set_mode\",\"description\":\"Set the mode.\",\"parameters\":"
    "{\"mode\":{\"type\":\"string\",\"description\":\"The mode.\",\"enum\":[\"on\"]}},\"required\":[\"mode\"]}]}";

/* Expectations against that answer, with what each must score. */
static const char k_forced_data[] =
    /* 1 right */
    "{\"utterance\":\"eins\",\"expected\":{\"calls\":[{\"name\":\"set_mode\",\"args\":{\"mode\":\"on\"}}]}}\n"
    /* 2 right function, wrong value: args 0/1 */
    "{\"utterance\":\"zwei\",\"expected\":{\"calls\":[{\"name\":\"set_mode\",\"args\":{\"mode\":\"off\"}}]}}\n"
    "\n"
    /* 3 right function, the produced key was not expected: args 0/1 */
    "{\"utterance\":\"drei\",\"expected\":{\"calls\":[{\"name\":\"set_mode\",\"args\":{}}]}}\n"
    /* 4 right function, one more key expected: args 1/2 */
    "{\"utterance\":\"vier\",\"expected\":{\"calls\":[{\"name\":\"set_mode\",\"args\":{\"mode\":\"on\",\"level\":3}}]}}\n"
    /* 5 wrong function: its args are not counted */
    "{\"utterance\":\"fünf\",\"expected\":{\"calls\":[{\"name\":\"power\",\"args\":{\"mode\":\"on\"}}]}}\n"
    /* 6 text expected, a call given */
    "{\"utterance\":\"sechs\",\"expected\":{\"text\":\"Nein.\"}}\n"
    /* 7 two calls expected, one given */
    "{\"utterance\":\"sieben\",\"expected\":{\"calls\":[{\"name\":\"set_mode\",\"args\":{\"mode\":\"on\"}},"
    "{\"name\":\"set_mode\",\"args\":{\"mode\":\"on\"}}]}}\n"
    /* 8 right; other keys of the line are ignored */
    "{\"utterance\":\"acht\",\"intent\":\"x\",\"expected\":{\"calls\":[{\"name\":\"set_mode\",\"args\":{\"mode\":\"on\"}}]}}\n";

static double num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  CHECK_MSG(cJSON_IsNumber(v), "no number \"%s\"", key);
  return cJSON_IsNumber(v) ? v->valuedouble : -1.0;
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static void test_eval_calls(const fg_model *m, const char *model_path) {
  write_file(tmp_path("forced.json"), k_forced_catalog);
  write_file(tmp_path("forced.jsonl"), k_forced_data);

  /* the forced answer's length in tokens */
  static const char k_answer[] = "<start_function_call>call:set_mode{mode:<escape>on<escape>}<end_function_call>";
  int32_t ids[64];
  size_t n_answer = 0;
  CHECK_OK(fg_tokenize(m, k_answer, sizeof k_answer - 1, 0, ids, 64, &n_answer));

  char args[4096], *out = NULL;
  snprintf(args, sizeof args,
           "eval --calls '%s' --tools '%s' -m '%s,%s' --heads file,q8_0 --constrained call-only,off --max-tokens 8 "
           "-t 1 --json --details '%s'",
           tmp_path("forced.jsonl"), tmp_path("forced.json"), model_path, model_path, tmp_path("details.jsonl"));
  CHECK_EQ_INT(run_cli(args, &out), 0);
  cJSON *o = out ? cJSON_Parse(out) : NULL;
  CHECK_MSG(o != NULL, "not JSON: %s", out ? out : "(none)");
  const cJSON *rows = o ? cJSON_GetObjectItemCaseSensitive(o, "rows") : NULL;
  CHECK_EQ_INT(cJSON_GetArraySize(rows), 8); /* 2 models x 2 heads x 2 modes, in that order */
  CHECK_EQ_INT(num(o, "n"), 8);
  for (int i = 0; i < cJSON_GetArraySize(rows); i++) {
    const cJSON *r = cJSON_GetArrayItem(rows, i);
    CHECK_EQ_INT(num(r, "n"), 8);
    CHECK_EQ_INT(num(r, "n_expect_calls"), 7);
    CHECK_EQ_INT(num(r, "n_expect_text"), 1);
    CHECK(strcmp(str(r, "head"), i % 4 < 2 ? "f32" : "q8_0") == 0);
    CHECK(strcmp(str(r, "constrained"), i % 2 == 0 ? "call-only" : "off") == 0);
    CHECK_EQ_INT(num(r, "errors"), 0);
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(r, "tokens");
    if (i % 2 == 0) {
      /* call-only: the answer is known, so is every count */
      CHECK_EQ_INT(num(r, "exact_n"), 2);
      CHECK_EQ_INT(num(r, "exact_calls_n"), 2);
      CHECK_EQ_INT(num(r, "exact_text_n"), 0);
      CHECK_EQ_INT(num(r, "function_n"), 5);
      CHECK_EQ_INT(num(r, "args_right"), 3);
      CHECK_EQ_INT(num(r, "args_total"), 6);
      CHECK_EQ_INT(num(r, "calls"), 8);
      CHECK_EQ_INT(num(r, "invalid_calls"), 0);
      CHECK_EQ_INT(num(r, "no_call_answers"), 0);
      CHECK_NEAR(num(r, "exact"), 2.0 / 8.0, 1e-6);
      CHECK_NEAR(num(r, "function"), 5.0 / 8.0, 1e-6);
      CHECK_NEAR(num(r, "args"), 3.0 / 6.0, 1e-6);
      CHECK_NEAR(num(tok, "decode"), (double)n_answer, 1e-9);
      CHECK_NEAR(num(tok, "forced"), (double)n_answer, 1e-9);
      CHECK_NEAR(num(tok, "full_head"), 0.0, 1e-9);
      CHECK_NEAR(num(tok, "sparse_head"), 0.0, 1e-9);
    } else {
      /* off: a random model answers noise; the counts still hang together */
      CHECK(num(r, "exact_n") <= 2); /* only utterances 1 and 8 can match */
      CHECK(num(r, "invalid_calls") <= num(r, "calls"));
      CHECK(num(r, "calls") + num(r, "no_call_answers") >= 8);
      CHECK_NEAR(num(tok, "full_head"), num(tok, "decode"), 1e-9);
      CHECK(num(tok, "decode") <= 8.0);
      CHECK_NEAR(num(tok, "forced"), 0.0, 1e-9);
    }
    CHECK(num(r, "p95_ms") >= num(r, "p50_ms"));
    CHECK(num(r, "p50_ms") > 0.0);
  }
  cJSON_Delete(o);
  free(out);

  /* --details: one line per utterance and row; the per-utterance verdicts of the first row */
  char *det = fg_test_read_file(tmp_path("details.jsonl"), NULL);
  CHECK(det != NULL);
  static const bool k_exact[8] = {true, false, false, false, false, false, false, true};
  static const bool k_func[8] = {true, true, true, true, false, false, false, true};
  int lines = 0;
  for (char *line = det, *nl; line && *line; line = nl ? nl + 1 : NULL) {
    nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    cJSON *d = cJSON_Parse(line);
    CHECK_MSG(d != NULL, "details line %d is not JSON", lines + 1);
    if (d && lines < 8) {
      CHECK_EQ_INT(num(d, "row"), 0);
      CHECK_EQ_INT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "exact")), k_exact[lines]);
      CHECK_EQ_INT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "function")), k_func[lines]);
      CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "valid_call")));
      CHECK(strcmp(str(d, "raw"), k_answer) == 0);
    }
    cJSON_Delete(d);
    lines++;
  }
  CHECK_EQ_INT(lines, 64);
  free(det);

  /* the table form names the rows */
  snprintf(args, sizeof args, "eval --calls '%s' --tools '%s' -m '%s' --constrained call-only -t 1",
           tmp_path("forced.jsonl"), tmp_path("forced.json"), model_path);
  CHECK_EQ_INT(run_cli(args, &out), 0);
  CHECK(out && strstr(out, "call-only") && strstr(out, " 25.0%") && strstr(out, " 62.5%") && strstr(out, " 50.0%"));
  free(out);

  /* bad data and bad command lines */
  static const struct { const char *data; const char *msg; } bad[] = {
      {"{\"utterance\":\"a\",\"expected\":{\"text\":\"x\"}}\n{\"utterance\":\"b\"}\n", ":2: no \"expected\" object"},
      {"{\"utterance\":\"a\",\"expected\":{\"text\":\"x\",\"calls\":[]}}\n", ":1: \"expected\" needs exactly one of"},
      {"{\"utterance\":\"a\",\"expected\":{\"calls\":[{\"args\":{}}]}}\n", ":1: an expected call has no \"name\""},
      {"[1,2]\n", ":1: no \"utterance\" string"},
      {"{\"utterance\":\"a\",\"expected\":{\"calls\":{}}}\n", ":1: \"expected\".\"calls\" is not an array"},
      {"\n\n", "holds no utterances"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_file(tmp_path("bad.jsonl"), bad[i].data);
    snprintf(args, sizeof args, "eval --calls '%s' --tools '%s' -m '%s'", tmp_path("bad.jsonl"), tmp_path("forced.json"),
             model_path);
    CHECK_EQ_INT(run_cli(args, NULL), 1);
    CHECK(err_contains(bad[i].msg));
  }
  snprintf(args, sizeof args, "eval --calls '%s' -m '%s'", tmp_path("forced.jsonl"), model_path);
  CHECK_EQ_INT(run_cli(args, NULL), 2);
  CHECK(err_contains("--tools CATALOG.json is required"));
  snprintf(args, sizeof args, "eval --calls '%s' --tools '%s' -m '%s' --constrained sometimes", tmp_path("forced.jsonl"),
           tmp_path("forced.json"), model_path);
  CHECK_EQ_INT(run_cli(args, NULL), 2);
  CHECK(err_contains("'sometimes' is not off, call-only or call-or-text"));
  snprintf(args, sizeof args, "eval -m '%s' --constrained off", model_path);
  CHECK_EQ_INT(run_cli(args, NULL), 2);
  CHECK(err_contains("--constrained needs --calls"));
}

// ----------------------------------------------------------------------------------------------
// --head-rows used|all (every command that loads a model): the trimmed head by default, the dense one
// on request, a clear error otherwise

static void test_head_rows(void) {
  static const int32_t chain[] = {2, 106, 818, 3823, 107};
  if (fg_test_ensure_chain_model("chain-cli.gguf", chain, 5, NULL) != 0) {
    CHECK_MSG(false, "cannot make chain-cli.gguf");
    return;
  }
  char args[1024], *out = NULL;
  const char *path = fg_test_model_path("chain-cli.gguf");
  snprintf(args, sizeof args, "info -m '%s'", path);
  CHECK_EQ_INT(run_cli(args, &out), 0);
  CHECK_MSG(out && strstr(out, "head rows       4 of 262144"), "info without --head-rows: %s", out ? out : "");
  free(out);
  snprintf(args, sizeof args, "info -m '%s' --head-rows all", path);
  CHECK_EQ_INT(run_cli(args, &out), 0);
  CHECK_MSG(out && strstr(out, "weights") && !strstr(out, "head rows"), "info --head-rows all: %s", out ? out : "");
  free(out);
  snprintf(args, sizeof args, "call -m '%s' --tools '%s/tests/data/nlu/tv-catalog.json' --head-rows some x", path,
           FG_SOURCE_DIR);
  CHECK_EQ_INT(run_cli(args, NULL), 2);
  CHECK(err_contains("--head-rows: unknown value 'some' (used or all)"));
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/fg-test-cli-XXXXXX");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  if (fg_test_ensure_model("tiny-vocab-f32.gguf", "tiny", "f32", 1) != 0) return 1;
  const char *path = fg_test_model_path("tiny-vocab-f32.gguf");
  char model_path[512];
  snprintf(model_path, sizeof model_path, "%s", path);
  fg_model *m = NULL;
  CHECK_OK(fg_model_load(model_path, NULL, &m, NULL));
  if (m) {
    test_tokenize_jsonl(m, model_path);
    test_eval_calls(m, model_path);
  }
  test_head_rows();
  fg_model_free(m);
  static const char *const files[] = {"texts.jsonl", "bad.jsonl", "forced.json", "forced.jsonl", "details.jsonl", "err.txt"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) unlink(tmp_path(files[i]));
  rmdir(g_dir);
  return fg_test_finish("test_cli");
}
