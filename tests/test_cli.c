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
#include <math.h>
#include <stdlib.h>
#include <string.h>
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

// ----------------------------------------------------------------------------------------------
// convert --fit: searched gives a pure Q4_0 other bytes than the default (test_convert checks which),
// a value that is neither auto nor searched is refused by name

static void test_convert_fit(const char *model_path) {
  char args[1024];
  const char *a = tmp_path("fit-auto.gguf"), *b = tmp_path("fit-searched.gguf");
  snprintf(args, sizeof args, "convert '%s' -o '%s' --type q4_0 --pure", model_path, a);
  CHECK_EQ_INT(run_cli(args, NULL), 0);
  snprintf(args, sizeof args, "convert '%s' -o '%s' --type q4_0 --pure --fit searched", model_path, b);
  CHECK_EQ_INT(run_cli(args, NULL), 0);
  size_t na = 0, nb = 0;
  char *x = fg_test_read_file(a, &na), *y = fg_test_read_file(b, &nb);
  CHECK_MSG(x && y && na == nb && memcmp(x, y, na) != 0, "--fit searched wrote the same bytes as --fit auto");
  free(x);
  free(y);
  snprintf(args, sizeof args, "convert '%s' -o '%s' --type q4_0 --pure --fit best", model_path, b);
  CHECK_EQ_INT(run_cli(args, NULL), 2);
  CHECK(err_contains("--fit must be auto or searched, not 'best'"));
  unlink(a);
  unlink(b);
}

// ----------------------------------------------------------------------------------------------
// perplexity: the JSON against an independent computation through the API (one fresh prefill per
// scored id), on overlapping windows; then the command's errors

static const char k_ppl_text[] =
    "The GNU General Public License is a free, copyleft license for software and other kinds of works. "
    "Die Lizenz erlaubt es, Programme zu verbreiten und zu verändern.";

/* -log softmax(logits after prefilling ids[0..n)) [target], in double */
static double api_neg_log_prob(const fg_model *m, const int32_t *ids, size_t n, int32_t target) {
  fg_session_params sp;
  fg_session_params_init(&sp);
  sp.n_threads = 1;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &sp, &s, NULL));
  if (!s) return 0;
  CHECK_OK(fg_session_prefill(s, ids, n, NULL));
  fg_model_info in;
  fg_model_get_info(m, &in);
  const float *l = fg_session_logits(s);
  double mx = l[0], sum = 0;
  for (uint32_t i = 1; i < in.n_vocab; i++) mx = l[i] > mx ? l[i] : mx;
  for (uint32_t i = 0; i < in.n_vocab; i++) sum += exp((double)l[i] - mx);
  const double r = mx + log(sum) - (double)l[target];
  fg_session_free(s);
  return r;
}

static void test_perplexity(const fg_model *m, const char *model_path) {
  write_file(tmp_path("ppl.txt"), k_ppl_text);
  int32_t ids[256], win[16];
  size_t n = 0, nb = 0;
  CHECK_OK(fg_tokenize(m, k_ppl_text, sizeof k_ppl_text - 1, 0, ids, 256, &n));
  CHECK_OK(fg_tokenize(m, "", 0, FG_TOKENIZE_ADD_BOS, win, 1, &nb));
  CHECK(n > 20);
  const size_t ctx = 8, stride = 3, limit = 20; /* windows overlap by 4 ids */
  double nll = 0;
  size_t scored = 0, n_windows = 0;
  for (size_t start = 0, done = 0; done < limit; start += stride, n_windows++) {
    const size_t end = start + ctx - 1 < limit ? start + ctx - 1 : limit;
    for (size_t j = done; j < end; j++) {
      memcpy(win + 1, ids + start, (j - start) * sizeof *ids);
      nll += api_neg_log_prob(m, win, 1 + j - start, ids[j]);
      scored++;
    }
    done = end;
  }
  char args[1024], *out = NULL;
  snprintf(args, sizeof args, "perplexity -m '%s' --text '%s' --ctx %zu --stride %zu --tokens %zu -t 1 --json", model_path,
           tmp_path("ppl.txt"), ctx, stride, limit);
  CHECK_EQ_INT(run_cli(args, &out), 0);
  cJSON *o = cJSON_Parse(out ? out : "");
  CHECK_MSG(o != NULL, "not JSON: %s", out ? out : "(none)");
  if (o) {
    CHECK_EQ_INT(num(o, "tokens"), (int)scored);
    CHECK_EQ_INT(num(o, "text_tokens"), (int)limit);
    CHECK_EQ_INT(num(o, "windows"), (int)n_windows);
    CHECK_NEAR(num(o, "nll"), nll, 1e-9 * nll);
    CHECK_NEAR(num(o, "perplexity"), exp(nll / (double)scored), 1e-6 * exp(nll / (double)scored));
  }
  cJSON_Delete(o);
  free(out);

  write_file(tmp_path("empty.txt"), "");
  static const struct { const char *args; int rc; const char *msg; } bad[] = {
      {"perplexity -m '%s'", 2, "--text FILE is required"},
      {"perplexity -m '%s' --text /nonexistent/ppl.txt", 1, "cannot open /nonexistent/ppl.txt"},
      {"perplexity -m '%s' --text '%s' --ctx 1", 2, "--ctx"},
      {"perplexity -m '%s' --text '%s' --ctx 8 --stride 8", 2, "larger than ctx - 1"},
      {"perplexity -m '%s' --text '%s' --tokens 0", 2, "--tokens"},
      {"perplexity -m '%s' --text '%s' extra", 2, "unexpected argument 'extra'"},
      {"perplexity -m '%s' --text '%s' --bogus", 2, "--bogus"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(args, sizeof args, bad[i].args, model_path, tmp_path("ppl.txt"));
    CHECK_EQ_INT(run_cli(args, NULL), bad[i].rc);
    CHECK_MSG(err_contains(bad[i].msg), "case %zu: %s", i, args);
  }
  snprintf(args, sizeof args, "perplexity -m '%s' --text '%s'", model_path, tmp_path("empty.txt"));
  CHECK_EQ_INT(run_cli(args, NULL), 1);
  CHECK(err_contains("holds no tokens"));
  CHECK_EQ_INT(run_cli("perplexity --help", &out), 0);
  CHECK(out && strstr(out, "--stride") != NULL);
  free(out);
}

// ----------------------------------------------------------------------------------------------
// generate --batch: the same greedy ids and logits as one `generate`/`logits` run per prompt, with
// prompts that share prefixes (restored from snapshots) and positions in prompt and continuation

static float *read_f32(const char *path, size_t *n) {
  size_t bytes = 0;
  char *d = fg_test_read_file(path, &bytes);
  *n = bytes / 4;
  return (float *)(void *)d;
}

static void test_generate_batch(const fg_model *m, const char *model_path) {
  static const char *const prompts[] = {"2 10 11 12 13 14 15 16 17", "2 10 11 12 13 99 98", "2 10 11 12 13 99 98 97",
                                        "5 6"};
  static const char *const at[] = {"3 8 12", "5 6 9", "7", ""};
  const size_t n_at[] = {3, 3, 1, 0};
  enum { N_GEN = 6 };
  fg_model_info in;
  fg_model_get_info(m, &in);
  FILE *f = fopen(tmp_path("batch.txt"), "wb");
  CHECK(f != NULL);
  if (!f) return;
  for (size_t i = 0; i < 4; i++) fprintf(f, "%s%s%s\n%s", prompts[i], *at[i] ? " | " : "", at[i], i == 1 ? "\n" : "");
  fclose(f);
  char args[2048], *out = NULL;
  snprintf(args, sizeof args, "generate -m '%s' --batch '%s' -n %d --logits-out '%s' -t 1", model_path,
           tmp_path("batch.txt"), N_GEN, tmp_path("batch.f32"));
  CHECK_EQ_INT(run_cli(args, &out), 0);
  size_t n_rows = 0;
  float *rows = read_f32(tmp_path("batch.f32"), &n_rows);
  CHECK_EQ_INT(n_rows, (3 + 3 + 1) * in.n_vocab);
  const char *line = out ? out : "";
  size_t row = 0;
  for (size_t i = 0; i < 4 && rows && n_rows == 7 * in.n_vocab; i++) {
    char *one = NULL;
    snprintf(args, sizeof args, "generate -m '%s' --ids '%s' -n %d -t 1", model_path, prompts[i], N_GEN);
    CHECK_EQ_INT(run_cli(args, &one), 0);
    const char *nl = strchr(line, '\n');
    CHECK_MSG(one && nl && strncmp(line, one, (size_t)(nl - line) + 1) == 0, "prompt %zu: batch '%.*s', alone '%s'", i,
              nl ? (int)(nl - line) : 0, line, one ? one : "");
    line = nl ? nl + 1 : "";
    if (n_at[i]) { /* the same rows from `fgemma logits` on prompt + greedy ids */
      char seq[512];
      snprintf(seq, sizeof seq, "%s %s", prompts[i], one ? one : "");
      seq[strcspn(seq, "\n")] = '\0';
      snprintf(args, sizeof args, "logits -m '%s' --ids '%s' --at '%s' -t 1 -o '%s'", model_path, seq, at[i],
               tmp_path("one.f32"));
      CHECK_EQ_INT(run_cli(args, NULL), 0);
      size_t n1 = 0;
      float *want = read_f32(tmp_path("one.f32"), &n1);
      CHECK_EQ_INT(n1, n_at[i] * in.n_vocab);
      CHECK_MSG(want && n1 == n_at[i] * in.n_vocab &&
                    memcmp(want, rows + row * in.n_vocab, n1 * sizeof(float)) == 0,
                "prompt %zu: batch logits differ from `fgemma logits`", i);
      free(want);
      row += n_at[i];
    }
    free(one);
  }
  CHECK_MSG(*line == '\0', "extra output: %s", line);
  free(rows);
  free(out);

  static const struct { const char *line; const char *msg; } bad[] = {
      {"2 10 11 | 2 1\n", "positions must increase"},
      {"2 10 11 | 8\n", "positions must increase and lie within 0..7"}, /* 3 + 6 - 1 = 8 positions */
      {"2 x 11\n", "is not a token id"},
      {"\n\n", "holds no prompt"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_file(tmp_path("bad-batch.txt"), bad[i].line);
    snprintf(args, sizeof args, "generate -m '%s' --batch '%s' -n %d", model_path, tmp_path("bad-batch.txt"), N_GEN);
    CHECK_EQ_INT(run_cli(args, NULL), 2);
    CHECK_MSG(err_contains(bad[i].msg), "case %zu", i);
  }
  snprintf(args, sizeof args, "generate -m '%s' --ids '2 3' --logits-out '%s'", model_path, tmp_path("x.f32"));
  CHECK_EQ_INT(run_cli(args, NULL), 2);
  CHECK(err_contains("--logits-out needs --batch"));
  snprintf(args, sizeof args, "generate -m '%s' --ids '2 3' --batch '%s'", model_path, tmp_path("batch.txt"));
  CHECK_EQ_INT(run_cli(args, NULL), 2);
  CHECK(err_contains("not both"));
}

// ----------------------------------------------------------------------------------------------
// --lora FILE[:SCALE] and --lora-merge on the commands that load a model; gen-lora

static void test_lora_options(const char *model_path) {
  char args[2048], *a = NULL, *b = NULL, *c = NULL, *d = NULL, *out = NULL, ad[600], colon[600], missing[600];
  snprintf(ad, sizeof ad, "%s", tmp_path("adapter.gguf")); /* tmp_path's buffer is reused */
  snprintf(colon, sizeof colon, "%s", tmp_path("with:colon.gguf"));
  snprintf(missing, sizeof missing, "%s", tmp_path("missing.gguf"));
  snprintf(args, sizeof args, "gen-lora -m '%s' -o '%s' --rank 4 --seed 9", model_path, ad);
  CHECK_EQ_INT(run_cli(args, NULL), 0);
  snprintf(args, sizeof args, "gen-lora -m '%s' -o '%s' --rank 4 --seed 9", model_path, colon);
  CHECK_EQ_INT(run_cli(args, NULL), 0);
  const char *gen = "generate -t 1 -n 12 --ids '2 300 400 500'";
  snprintf(args, sizeof args, "%s -m '%s'", gen, model_path);
  CHECK_EQ_INT(run_cli(args, &a), 0);
  snprintf(args, sizeof args, "%s -m '%s' --lora '%s:0'", gen, model_path, ad); /* scale 0: the base */
  CHECK_EQ_INT(run_cli(args, &b), 0);
  snprintf(args, sizeof args, "%s -m '%s' --lora '%s'", gen, model_path, ad); /* scale 1 */
  CHECK_EQ_INT(run_cli(args, &c), 0);
  /* a ':' in the path whose tail is not a number is part of the file name (scale 1) */
  snprintf(args, sizeof args, "%s -m '%s' --lora '%s'", gen, model_path, colon);
  CHECK_EQ_INT(run_cli(args, &d), 0);
  CHECK(a && b && c && d && strcmp(a, b) == 0 && strcmp(a, c) != 0 && strcmp(c, d) == 0);
  free(b);
  free(d);
  snprintf(args, sizeof args, "%s -m '%s' --lora '%s:1' --lora-merge f32", gen, model_path, ad);
  CHECK_EQ_INT(run_cli(args, &b), 0);
  CHECK_MSG(b && c && strcmp(b, c) == 0, "merged f32: %s vs run time %s", b ? b : "", c ? c : "");
  snprintf(args, sizeof args, "%s -m '%s' --lora '%s:0.5' --lora '%s:-0.5' --reference", gen, model_path, ad, ad);
  CHECK_EQ_INT(run_cli(args, &d), 0); /* two adapters that cancel: the base again */
  CHECK_MSG(a && d && strcmp(a, d) == 0, "+0.5 -0.5: %s vs %s", d ? d : "", a ? a : "");
  free(a), free(b), free(c), free(d);
  snprintf(args, sizeof args, "info -m '%s' --lora '%s' --lora-merge q8_0", model_path, ad);
  CHECK_EQ_INT(run_cli(args, &out), 0);
  CHECK_MSG(out && strstr(out, "lora adapters   1, merged into q8_0 copies"), "info: %s", out ? out : "");
  free(out);
  snprintf(args, sizeof args, "info -m '%s' --lora '%s' --lora-merge sometimes", model_path, ad);
  CHECK_EQ_INT(run_cli(args, NULL), 2);
  CHECK(err_contains("--lora-merge: unknown value 'sometimes'"));
  snprintf(args, sizeof args, "info -m '%s' --lora '%s'", model_path, missing);
  CHECK_EQ_INT(run_cli(args, NULL), 1);
  CHECK(err_contains("missing.gguf"));
  snprintf(args, sizeof args, "info -m '%s' --lora '%s'", model_path, model_path);
  CHECK_EQ_INT(run_cli(args, NULL), 1);
  CHECK(err_contains("not an adapter"));
  /* every command that loads a model documents the options */
  static const char *const cmds[] = {"info", "generate", "logits", "tokenize", "call", "bench", "eval", "perplexity",
                                     "serve"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    snprintf(args, sizeof args, "%s --help", cmds[i]);
    CHECK_EQ_INT(run_cli(args, &out), 0);
    CHECK_MSG(out && strstr(out, "--lora V") && strstr(out, "--lora-merge V"), "%s --help lacks --lora", cmds[i]);
    free(out);
  }
  CHECK_EQ_INT(run_cli("gen-lora --help", &out), 0);
  CHECK(out && strstr(out, "--magnitude") && !strstr(out, "--lora V"));
  free(out);
  unlink(ad);
  unlink(colon);
}

// ----------------------------------------------------------------------------------------------
// one set of defaults and names (docs/OPTIONS.md): --help states the defaults, the old spellings work
// with a warning on stderr, the default decoding is call-or-text

static bool contains(const char *hay, const char *needle) {
  const bool ok = hay && strstr(hay, needle) != NULL;
  if (!ok) fprintf(stderr, "output lacks \"%s\"\n", needle);
  return ok;
}

/* The "result" and "raw" of the first JSON line of out, as one string (malloc'd), or NULL. */
static char *answer_of_line(const char *out) {
  cJSON *o = out ? cJSON_Parse(out) : NULL;
  char *res = NULL;
  if (o) {
    char *r = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(o, "result"));
    const char *raw = str(o, "raw");
    if (r && raw && (res = malloc(strlen(r) + strlen(raw) + 2))) sprintf(res, "%s|%s", r, raw);
    free(r);
  }
  cJSON_Delete(o);
  return res;
}

static void test_option_names(const char *model_path) {
  char *out = NULL;
  CHECK_EQ_INT(run_cli("call --help", &out), 0);
  CHECK(contains(out, "--constrained V") && contains(out, "call-or-text (default)"));
  CHECK(contains(out, "--snapshot-path V") && contains(out, "--n-ctx V") && contains(out, "--multi-call "));
  CHECK(contains(out, "--snapshot V") && contains(out, "deprecated: the old name of --snapshot-path"));
  CHECK(contains(out, "deprecated: the old name of --n-ctx") && contains(out, "deprecated: the old name of --multi-call"));
  free(out);
  CHECK_EQ_INT(run_cli("serve --help", &out), 0);
  CHECK(contains(out, "--n-ctx V") && contains(out, "deprecated: the old name of --n-ctx") &&
        contains(out, "call-or-text\" (default)"));
  free(out);
  CHECK_EQ_INT(run_cli("bench --help", &out), 0);
  CHECK(contains(out, "call-or-text (default)"));
  free(out);
  CHECK_EQ_INT(run_cli("eval --help", &out), 0);
  CHECK(contains(out, "(default call-or-text)"));
  free(out);
  CHECK_EQ_INT(run_cli("perplexity --help", &out), 0);
  CHECK(contains(out, "--n-ctx V") && contains(out, "deprecated: the old name of --n-ctx"));
  free(out);
  CHECK_EQ_INT(run_cli("generate --help", &out), 0);
  CHECK(contains(out, "--n-ctx V") && contains(out, "--ctx V"));
  free(out);

  write_file(tmp_path("forced.json"), k_forced_catalog);
  char args[4096];
  /* the default is call-or-text: the same answer as naming it, and the catalog line says so */
  snprintf(args, sizeof args, "call -m '%s' --tools '%s' -t 1 --max-tokens 24 eins", model_path, tmp_path("forced.json"));
  CHECK_EQ_INT(run_cli(args, &out), 0);
  CHECK(err_contains("constrained call-or-text, speculate on"));
  char *def = answer_of_line(out);
  free(out);
  snprintf(args, sizeof args, "call -m '%s' --tools '%s' -t 1 --max-tokens 24 --constrained call-or-text eins", model_path,
           tmp_path("forced.json"));
  CHECK_EQ_INT(run_cli(args, &out), 0);
  char *named = answer_of_line(out);
  free(out);
  CHECK_MSG(def && named && strcmp(def, named) == 0, "default %s vs call-or-text %s", def ? def : "-", named ? named : "-");
  free(def), free(named);
  snprintf(args, sizeof args, "call -m '%s' --tools '%s' -t 1 --max-tokens 24 --constrained off eins", model_path,
           tmp_path("forced.json"));
  CHECK_EQ_INT(run_cli(args, &out), 0);
  CHECK(err_contains("constrained off"));
  free(out);
  snprintf(args, sizeof args, "call -m '%s' --tools '%s' --constrained any eins", model_path, tmp_path("forced.json"));
  CHECK_EQ_INT(run_cli(args, &out), 2);
  CHECK(err_contains("--constrained: expected off, call-only or call-or-text, not 'any'"));
  free(out);

  /* the old spellings: same effect, a warning each */
  unlink(tmp_path("prefix.fgsnap"));
  snprintf(args, sizeof args, "call -m '%s' --tools '%s' -t 1 --max-tokens 8 --ctx 1024 --snapshot '%s' --multi eins",
           model_path, tmp_path("forced.json"), tmp_path("prefix.fgsnap"));
  CHECK_EQ_INT(run_cli(args, &out), 0);
  CHECK(err_contains("call: --ctx is deprecated, use --n-ctx") && err_contains("call: --snapshot is deprecated, use --snapshot-path") &&
        err_contains("call: --multi is deprecated, use --multi-call") && err_contains("(snapshot written)"));
  free(out);
  snprintf(args, sizeof args, "call -m '%s' --tools '%s' -t 1 --max-tokens 8 --n-ctx 1024 --snapshot-path '%s' --multi-call eins",
           model_path, tmp_path("forced.json"), tmp_path("prefix.fgsnap"));
  CHECK_EQ_INT(run_cli(args, &out), 0);
  CHECK(err_contains("loaded from snapshot"));
  char *e = fg_test_read_file(tmp_path("err.txt"), NULL);
  CHECK(e && strstr(e, "deprecated") == NULL); /* the new names warn about nothing */
  free(e);
  free(out);
  snprintf(args, sizeof args, "call -m '%s' --tools '%s' --snapshot '%s' --snapshot-dir '%s' eins", model_path,
           tmp_path("forced.json"), tmp_path("prefix.fgsnap"), g_dir);
  CHECK_EQ_INT(run_cli(args, &out), 2);
  CHECK(err_contains("--snapshot-path and --snapshot-dir: give one of them"));
  free(out);
  /* --n-ctx too small for the catalog: an error naming the context, whichever spelling */
  snprintf(args, sizeof args, "call -m '%s' --tools '%s' --ctx 8 eins", model_path, tmp_path("forced.json"));
  CHECK_EQ_INT(run_cli(args, &out), 1);
  CHECK(err_contains("does not fit the context"));
  free(out);
  snprintf(args, sizeof args, "call -m '%s' --tools '%s' --n-ctx 0 eins", model_path, tmp_path("forced.json"));
  CHECK_EQ_INT(run_cli(args, &out), 2);
  CHECK(err_contains("--n-ctx: 0 is out of range"));
  free(out);
  /* generate: --ctx and --n-ctx give the same ids */
  char *a1 = NULL, *a2 = NULL;
  snprintf(args, sizeof args, "generate -m '%s' --ids '2 105' -n 4 -t 1 --ctx 64", model_path);
  CHECK_EQ_INT(run_cli(args, &a1), 0);
  CHECK(err_contains("generate: --ctx is deprecated, use --n-ctx"));
  snprintf(args, sizeof args, "generate -m '%s' --ids '2 105' -n 4 -t 1 --n-ctx 64", model_path);
  CHECK_EQ_INT(run_cli(args, &a2), 0);
  CHECK(a1 && a2 && strcmp(a1, a2) == 0);
  free(a1), free(a2);
  unlink(tmp_path("prefix.fgsnap"));
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
    test_perplexity(m, model_path);
    test_generate_batch(m, model_path);
  }
  test_head_rows();
  test_convert_fit(model_path);
  test_lora_options(model_path);
  test_option_names(model_path);
  fg_model_free(m);
  static const char *const files[] = {"texts.jsonl", "bad.jsonl", "forced.json", "forced.jsonl", "details.jsonl", "err.txt",
                                     "ppl.txt", "empty.txt", "batch.txt", "batch.f32", "one.f32", "bad-batch.txt"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) unlink(tmp_path(files[i]));
  rmdir(g_dir);
  return fg_test_finish("test_cli");
}
