/* test_tune.c — `fgemma tune` as a process (docs/TUNE.md).
 *
 * 1. The spec's checks: every tests/tune/bad_*.tune.json fails --stage check with exit status 1 and a
 *    message naming the problem, and writes nothing (its -o DIR is not created); good.tune.json passes.
 * 2. The data stage on tests/data/tune/tv-small.tune.json with the tiny model of the real vocabulary:
 *    the same seed gives identical files, another seed other ones; every expected call of train and
 *    dev parses back (fg_call_parse with the catalog) into itself, unflagged; no dev phrasing and no
 *    held-out value is trained; no dev line equals a training utterance; a slot inside [...] sets its
 *    argument only when said; data.bin (FGTVDATA v1) reads back with the counts of the jsonl files.
 * 3. The report stage there, on 6 of the dev lines, with a synthetic adapter (gen-lora): the tuned model's misses (report.json)
 *    are exactly its inexact dev lines, each with the dev line's expected answer; the per-function counts
 *    add up to its row; report.md has both sections.
 *
 * The CLI's path comes from FG_CLI_BIN (tests/tune.cmake). */
#include "fgemma.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef FG_CLI_BIN
#error "FG_CLI_BIN must name the fgemma binary (tests/tune.cmake)"
#endif

static char g_dir[64];

static const char *tmp_path(const char *name) {
  static char buf[4][512];
  static int k;
  char *p = buf[k++ & 3];
  snprintf(p, 512, "%s/%s", g_dir, name);
  return p;
}

static int run_cli(const char *args) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>'%s'", FG_CLI_BIN, args, tmp_path("err.txt"));
  const int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool err_contains(const char *needle) {
  char *e = fg_test_read_file(tmp_path("err.txt"), NULL);
  const bool ok = e && strstr(e, needle) != NULL;
  if (!ok) fprintf(stderr, "stderr was: %s\n(expected to contain \"%s\")\n", e ? e : "(none)", needle);
  free(e);
  return ok;
}

static bool exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

// ----------------------------------------------------------------------------------------------
// 1. bad specs

static void test_bad_specs(void) {
  static const struct { const char *name, *fragment; } k[] = {
      {"no_list", "no value list fills {kind} in language en"},
      {"enum_no_list", "an enum argument needs a list too"},
      {"bad_form", "no entry of values.kind.de has the form 'dat'"},
      {"unknown_underscore", "unknown {_bitte}"},
      {"no_argument", "{channel} names no argument of search"},
      {"no_phrasings", "function subtitles has no phrasings in language en"},
      {"unknown_function", "the catalog has no function 'set_volum'"},
      {"unknown_fixed_key", "fixed argument 'dir': set_volume has no such argument"},
      {"enum_value", "\"higher\" is not in the enum (\"up\", \"down\")"},
      {"wrong_type", "fixed argument level = \"100\" is not an integer"},
      {"wrong_type_boolean", "fixed argument on = \"false\" is not a boolean"},
      {"required_missing", "phrasing \"Search[ for {query}]\": the required argument 'query' is missing"},
      {"required_branch", "the required argument 'query' is missing in some expansion"},
      {"language_not_in_catalog", "language 'fr' is not one the catalog lists"},
      {"unbalanced_paren", "unbalanced '(': no ')'"},
      {"unbalanced_bracket", "unbalanced ']'"},
      {"unbalanced_brace", "unbalanced '{'"},
      {"entry_type", "values.query.en, entry 4 42: an entry is a non-empty string or an object"},
      {"entry_value_type", "values.level.en, entry 1: the value \"ten\" is not an integer"},
      {"unknown_top_key", "unknown key \"phrasing\""},
      {"example_unknown_function", "examples[0] \"Lauter\": the catalog has no function 'volume_up'"},
      {"example_missing_required", "the required argument search.query is missing"},
      {"values_language", "values.query.fr: 'fr' is not one of the spec's languages"},
      {"no_new_names", "no_new_names: no value list is named colour"},
  };
  char args[2048];
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    snprintf(args, sizeof args, "tune '%s/tests/tune/bad_%s.tune.json' --stage check -o '%s'", FG_SOURCE_DIR, k[i].name,
             tmp_path("never"));
    const int rc = run_cli(args);
    CHECK_MSG(rc == 1, "bad_%s: exit status %d", k[i].name, rc);
    CHECK_MSG(err_contains(k[i].fragment), "bad_%s", k[i].name);
    CHECK_MSG(err_contains("fgemma: error: "), "bad_%s", k[i].name);
  }
  /* the checks run before anything is written, whatever the stages */
  snprintf(args, sizeof args, "tune '%s/tests/tune/bad_no_list.tune.json' -o '%s' --base '%s'", FG_SOURCE_DIR,
           tmp_path("never"), fg_test_model_path("tiny-vocab-f32.gguf"));
  CHECK_EQ_INT(run_cli(args), 1);
  CHECK(!exists(tmp_path("never")));
  snprintf(args, sizeof args, "tune '%s/tests/tune/good.tune.json' --stage check", FG_SOURCE_DIR);
  CHECK_EQ_INT(run_cli(args), 0);
  CHECK(err_contains("is valid: 3 functions, 2 languages"));
  CHECK_EQ_INT(run_cli("tune --stage data x.tune.json"), 2); /* no -o, no --base */
  CHECK(err_contains("-o DIR is required"));
  CHECK_EQ_INT(run_cli("tune x.tune.json --stage tarin"), 2);
  CHECK(err_contains("--stage 'tarin' is not check, data, train, adapter, report or all"));
}

// ----------------------------------------------------------------------------------------------
// 2. the data stage

typedef struct line {
  cJSON *o;
  const char *utt, *lang, *phrasing;
  const cJSON *expected;
} line;

static line *read_jsonl(const char *path, size_t *n) {
  char *text = fg_test_read_file(path, NULL);
  *n = 0;
  if (!text) return NULL;
  size_t cap = 1;
  for (const char *p = text; *p; p++) cap += *p == '\n';
  line *v = calloc(cap, sizeof *v);
  for (char *l = text, *next; v && l && *l; l = next) {
    next = strchr(l, '\n');
    if (next) *next++ = '\0';
    cJSON *o = cJSON_Parse(l);
    CHECK_MSG(o != NULL, "%s: a line is not JSON", path);
    if (!o) continue;
    line *x = &v[(*n)++];
    x->o = o;
    x->utt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "utterance"));
    x->lang = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "lang"));
    x->phrasing = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "phrasing"));
    x->expected = cJSON_GetObjectItemCaseSensitive(o, "expected");
  }
  free(text);
  return v;
}

static void free_lines(line *v, size_t n) {
  for (size_t i = 0; i < n; i++) cJSON_Delete(v[i].o);
  free(v);
}

static bool same_file(const char *a, const char *b) {
  size_t na, nb;
  char *x = fg_test_read_file(a, &na), *y = fg_test_read_file(b, &nb);
  const bool same = x && y && na == nb && memcmp(x, y, na) == 0;
  free(x), free(y);
  return same;
}

static int cmp_key(const void *a, const void *b) {
  const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
  const int r = strcasecmp(x->string, y->string);
  return r ? r : strcmp(x->string, y->string);
}

/* The model's answer for an expected call, written independently of tools/tune (keys sorted by name,
 * case-insensitively, as the catalog renders them). */
static void answer(const cJSON *call, char *out, size_t cap) {
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(call, "args");
  const cJSON *keys[64];
  size_t n = 0;
  for (const cJSON *a = args ? args->child : NULL; a && n < 64; a = a->next) keys[n++] = a;
  qsort(keys, n, sizeof *keys, cmp_key);
  size_t k = (size_t)snprintf(out, cap, "<start_function_call>call:%s{",
                              cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(call, "name")));
  for (size_t i = 0; i < n && k < cap; i++) {
    const cJSON *v = keys[i];
    k += (size_t)snprintf(out + k, cap - k, "%s%s:", i ? "," : "", v->string);
    if (cJSON_IsString(v)) k += (size_t)snprintf(out + k, cap - k, "<escape>%s<escape>", v->valuestring);
    else if (cJSON_IsBool(v)) k += (size_t)snprintf(out + k, cap - k, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else k += (size_t)snprintf(out + k, cap - k, "%.17g", v->valuedouble);
  }
  if (k < cap) snprintf(out + k, cap - k, "}<end_function_call>");
}

static void check_calls(const fg_catalog *cat, const line *v, size_t n, const char *what) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    const cJSON *calls = cJSON_GetObjectItemCaseSensitive(v[i].expected, "calls");
    if (!calls) {
      bad += !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v[i].expected, "text"));
      continue;
    }
    char text[2048], json[4096];
    answer(cJSON_GetArrayItem(calls, 0), text, sizeof text);
    size_t len;
    fg_error err = {0};
    cJSON *got = NULL;
    if (fg_call_parse(cat, text, strlen(text), json, sizeof json, &len, &err) == FG_OK) got = cJSON_Parse(json);
    const cJSON *gc = cJSON_GetObjectItemCaseSensitive(got, "calls");
    const cJSON *g0 = cJSON_GetArrayItem(gc, 0);
    bool ok = g0 && cJSON_Compare(gc, calls, true);
    for (const cJSON *k = g0 ? g0->child : NULL; k; k = k->next) /* flagged: keys beside name and args */
      ok = ok && (!strcmp(k->string, "name") || !strcmp(k->string, "args"));
    if (!ok && bad++ < 5) fprintf(stderr, "%s: \"%s\": %s parses as %s\n", what, v[i].utt, text, json);
    cJSON_Delete(got);
  }
  CHECK_MSG(bad == 0, "%s: %zu expected calls do not parse back", what, bad);
}

/* lower case, no punctuation: the key under which dev lines must differ from training lines */
static void norm(const char *u, char *out, size_t cap) {
  size_t k = 0;
  for (const char *p = u; *p && k + 1 < cap; p++) {
    if (strchr(".,!?;:\"'", *p)) continue;
    if (*p == ' ' && (k == 0 || out[k - 1] == ' ')) continue;
    out[k++] = (char)tolower((unsigned char)*p);
  }
  while (k && out[k - 1] == ' ') k--;
  out[k] = '\0';
}

static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static void check_bin(const char *path, size_t n_train, size_t n_dev) {
  size_t len;
  unsigned char *b = (unsigned char *)fg_test_read_file(path, &len);
  CHECK(b && len >= 28 && memcmp(b, "FGTVDATA", 8) == 0);
  if (!b || len < 28) {
    free(b);
    return;
  }
  const uint32_t version = rd32(b + 8), n_prefix = rd32(b + 12), nt = rd32(b + 16), nd = rd32(b + 20), n_used = rd32(b + 24);
  CHECK_EQ_INT(version, 1);
  CHECK_EQ_INT(nt, n_train);
  CHECK_EQ_INT(nd, n_dev);
  size_t o = 28;
  CHECK(n_prefix > 100 && rd32(b + o) == 2); /* <bos> */
  o += 4 * (size_t)n_prefix;
  uint32_t prev = 0;
  for (uint32_t i = 0; i < n_used && o + 4 <= len; i++, o += 4) {
    CHECK(i == 0 || rd32(b + o) > prev);
    prev = rd32(b + o);
  }
  const uint32_t ns[2] = {nt, nd};
  size_t bad = 0;
  for (int s = 0; s < 2; s++) {
    const size_t ul = o, al = o + 4 * (size_t)ns[s];
    o += 8 * (size_t)ns[s];
    for (uint32_t i = 0; i < ns[s] && o <= len; i++) {
      const uint32_t u = rd32(b + ul + 4 * i), a = rd32(b + al + 4 * i);
      /* the utterance part ends "<start_of_turn>model\n"; the answer ends <end_function_call> (49) or <end_of_turn> (106) */
      if (u < 4 || a < 2 || o + 4 * (size_t)(u + a) > len) {
        bad++;
        break;
      }
      const uint32_t last = rd32(b + o + 4 * ((size_t)u + a - 1));
      bad += last != 49 && last != 106;
      bad += rd32(b + o + 4 * ((size_t)u - 3)) != 105; /* <start_of_turn> model \n */
      o += 4 * (size_t)(u + a);
    }
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(o, len);
  free(b);
}

/* Does the value occur in the test spec (any case: noise may lower a copied value)? */
static bool spec_has_value(const char *v) {
  static char *text;
  if (!text) {
    char p[1024];
    snprintf(p, sizeof p, "%s/tests/data/tune/tv-small.tune.json", FG_SOURCE_DIR);
    text = fg_test_read_file(p, NULL);
  }
  return text && strcasestr(text, v) != NULL;
}

/* 3. The report stage on DIR (after the data stage) with a synthetic adapter: the tuned model's misses
 * and per-function counts agree with its row, and each miss is a dev line with that line's expected answer. */
static void test_report(const char *dir, const char *spec, const char *model, const line *dev, size_t n_dev) {
  char args[4096], p[600];
  /* the first 6 dev lines (the tiny model's answers run to the 64-token cap: about 0.15 s each) */
  n_dev = n_dev < 6 ? n_dev : 6;
  snprintf(p, sizeof p, "%s/dev.jsonl", dir);
  FILE *f = fopen(p, "wb");
  CHECK(f != NULL);
  for (size_t i = 0; f && i < n_dev; i++) {
    char *l = cJSON_PrintUnformatted(dev[i].o);
    fprintf(f, "%s\n", l ? l : "");
    free(l);
  }
  if (f) fclose(f);
  snprintf(args, sizeof args, "gen-lora -m '%s' -o '%s/adapter.gguf' --rank 4 --seed 3", model, dir);
  CHECK_EQ_INT(run_cli(args), 0);
  snprintf(args, sizeof args, "tune '%s' --stage report -o '%s' --base '%s' -q -t 2", spec, dir, model);
  CHECK_EQ_INT(run_cli(args), 0);
  snprintf(p, sizeof p, "%s/report.json", dir);
  char *text = fg_test_read_file(p, NULL);
  cJSON *rep = text ? cJSON_Parse(text) : NULL;
  free(text);
  CHECK(rep != NULL);
  const cJSON *row = NULL;
  const cJSON *rows = cJSON_GetObjectItemCaseSensitive(rep, "rows");
  for (const cJSON *r = rows ? rows->child : NULL; r; r = r->next)
    if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "model")), "tuned") &&
        !strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "constrained")), "call-or-text"))
      row = r;
  CHECK_EQ_INT(cJSON_GetArraySize(rows), 6);
  CHECK(row != NULL);
  const double n = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(row, "n"));
  const double exact = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(row, "exact_n"));
  CHECK_EQ_INT((size_t)n, n_dev);
  const cJSON *misses = cJSON_GetObjectItemCaseSensitive(rep, "tuned_misses");
  CHECK_EQ_INT(cJSON_GetArraySize(misses), (int)(n - exact));
  size_t unknown = 0, wrong_expected = 0;
  for (const cJSON *m = misses ? misses->child : NULL; m; m = m->next) {
    const char *u = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "utterance"));
    const line *d = NULL;
    for (size_t i = 0; u && i < n_dev && !d; i++)
      if (!strcmp(dev[i].utt, u)) d = &dev[i];
    unknown += !d;
    wrong_expected += d && !cJSON_Compare(d->expected, cJSON_GetObjectItemCaseSensitive(m, "expected"), true);
  }
  CHECK_EQ_INT(unknown, 0);
  CHECK_EQ_INT(wrong_expected, 0);
  double fn_n = 0, fn_exact = 0;
  const cJSON *bf = cJSON_GetObjectItemCaseSensitive(rep, "tuned_by_function");
  for (const cJSON *fn = bf ? bf->child : NULL; fn; fn = fn->next) {
    fn_n += cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(fn, "n"));
    fn_exact += cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(fn, "exact_n"));
  }
  CHECK(fn_n == n && fn_exact == exact);
  /* each dev line counted under its expected function (a text answer under "(text answer)") */
  size_t miscounted = 0;
  for (size_t i = 0; i < n_dev; i++) {
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(dev[i].expected, "calls"), 0);
    const char *name = c0 ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c0, "name")) : "(text answer)";
    size_t same = 0;
    for (size_t j = 0; j < n_dev; j++) {
      const cJSON *cj = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(dev[j].expected, "calls"), 0);
      same += !strcmp(name, cj ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cj, "name")) : "(text answer)");
    }
    miscounted += (double)same != cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
                                      cJSON_GetObjectItemCaseSensitive(bf, name), "n"));
  }
  CHECK_EQ_INT(miscounted, 0);
  cJSON_Delete(rep);
  snprintf(p, sizeof p, "%s/report.md", dir);
  char *md = fg_test_read_file(p, NULL);
  CHECK(md && strstr(md, "## The tuned model's misses (call-or-text)") && strstr(md, "## The tuned model per function"));
  free(md);
}

static void test_data(void) {
  const char *model = fg_test_model_path("tiny-vocab-f32.gguf");
  const char *spec = FG_SOURCE_DIR "/tests/data/tune/tv-small.tune.json";
  char args[4096];
  const char *dirs[2] = {"a", "b"};
  for (int i = 0; i < 2; i++) {
    snprintf(args, sizeof args, "tune '%s' --stage data -o '%s' --base '%s' -q", spec, tmp_path(dirs[i]), model);
    CHECK_EQ_INT(run_cli(args), 0);
  }
  /* another seed: the spec with "seed": 8, its catalog by absolute path */
  char *text = fg_test_read_file(spec, NULL);
  CHECK(text && strstr(text, "\"seed\": 7") && strstr(text, "\"../nlu/tv-catalog-small.json\""));
  if (!text) return;
  char *seed = strstr(text, "\"seed\": 7");
  seed[8] = '8';
  char *cat = strstr(text, "\"../nlu/tv-catalog-small.json\"");
  *cat = '\0';
  FILE *f = fopen(tmp_path("seed8.tune.json"), "wb");
  CHECK(f != NULL);
  if (f) {
    fprintf(f, "%s\"%s/tests/data/nlu/tv-catalog-small.json\"%s", text, FG_SOURCE_DIR, cat + strlen("\"../nlu/tv-catalog-small.json\""));
    fclose(f);
  }
  free(text);
  snprintf(args, sizeof args, "tune '%s' --stage data -o '%s' --base '%s' -q", tmp_path("seed8.tune.json"), tmp_path("c"), model);
  CHECK_EQ_INT(run_cli(args), 0);

  static const char *const files[] = {"train.jsonl", "dev.jsonl", "data.bin", "summary.json", "golden.json", "golden.f32"};
  char pa[600], pb[600], pc[600];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(pa, sizeof pa, "%s/%s", tmp_path("a"), files[i]);
    snprintf(pb, sizeof pb, "%s/%s", tmp_path("b"), files[i]);
    snprintf(pc, sizeof pc, "%s/%s", tmp_path("c"), files[i]);
    CHECK_MSG(same_file(pa, pb), "%s differs between two runs of one seed", files[i]);
    if (i < 4) CHECK_MSG(!same_file(pa, pc), "%s is the same for seeds 7 and 8", files[i]);
  }

  size_t n_train, n_dev;
  snprintf(pa, sizeof pa, "%s/train.jsonl", tmp_path("a"));
  line *train = read_jsonl(pa, &n_train);
  snprintf(pa, sizeof pa, "%s/dev.jsonl", tmp_path("a"));
  line *dev = read_jsonl(pa, &n_dev);
  CHECK_EQ_INT(n_train, 3001); /* train_examples + the one "use": "train" example */
  CHECK(n_dev > 30);
  fg_catalog *cat_h = fg_test_catalog_file("tv-catalog-small.json");
  CHECK(cat_h != NULL);
  if (cat_h) check_calls(cat_h, train, n_train, "train.jsonl"), check_calls(cat_h, dev, n_dev, "dev.jsonl");
  fg_catalog_free(cat_h);

  /* dev phrasings never trained; dev lines never equal to a training line */
  size_t overlap = 0, equal = 0, from_phrasings = 0;
  for (size_t i = 0; i < n_dev; i++) {
    char nd[1024], nt[1024];
    norm(dev[i].utt, nd, sizeof nd);
    from_phrasings += dev[i].phrasing != NULL;
    for (size_t j = 0; j < n_train; j++) {
      overlap += dev[i].phrasing && train[j].phrasing && !strcmp(dev[i].phrasing, train[j].phrasing);
      norm(train[j].utt, nt, sizeof nt);
      equal += !strcmp(nd, nt);
    }
  }
  CHECK(from_phrasings > 20);
  CHECK_EQ_INT(overlap, 0);
  CHECK_EQ_INT(equal, 0);

  /* held-out values (summary.json) never in a training call; some dev lines use them */
  snprintf(pa, sizeof pa, "%s/summary.json", tmp_path("a"));
  char *sj = fg_test_read_file(pa, NULL);
  cJSON *sum = sj ? cJSON_Parse(sj) : NULL;
  free(sj);
  const cJSON *hv = cJSON_GetObjectItemCaseSensitive(sum, "held_out_values");
  size_t n_held = 0, trained_held = 0;
  for (const cJSON *list = hv ? hv->child : NULL; list; list = list->next) {
    for (const cJSON *lang = list->child; lang; lang = lang->next) {
      for (const cJSON *v = lang->child; v; v = v->next, n_held++) {
        for (size_t j = 0; j < n_train; j++) {
          const cJSON *cargs = cJSON_GetObjectItemCaseSensitive(
              cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(train[j].expected, "calls"), 0), "args");
          for (const cJSON *a = cargs ? cargs->child : NULL; a; a = a->next)
            if (cJSON_IsString(a) && !strcasecmp(a->valuestring, v->valuestring) && trained_held++ < 5)
              fprintf(stderr, "held-out value \"%s\" trained: \"%s\"\n", v->valuestring, train[j].utt);
        }
      }
    }
  }
  CHECK(n_held >= 6);
  CHECK_EQ_INT(trained_held, 0);
  CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sum, "dev_with_held_out_values")) > 3);
  /* new names (p_new_names, 0.3 by default) in training only: every dev value is a list's */
  CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sum, "train_with_new_names")) > 0);
  for (size_t i = 0; i < n_dev; i++) {
    const cJSON *cargs = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(dev[i].expected, "calls"), 0), "args");
    for (const cJSON *a = cargs ? cargs->child : NULL; a; a = a->next)
      if (cJSON_IsString(a) && dev[i].phrasing) CHECK_MSG(spec_has_value(a->valuestring), "dev value \"%s\" made up", a->valuestring);
  }
  cJSON_Delete(sum);

  /* a slot inside [...] sets its argument only when said: channel exactly when " on " / " for " is */
  size_t seen = 0, with = 0, wrong = 0;
  for (size_t j = 0; j < n_train + n_dev; j++) {
    const line *x = j < n_train ? &train[j] : &dev[j - n_train];
    const char *marker = !x->phrasing ? NULL
                         : !strcmp(x->phrasing, "I want to record {title}[ on {channel}]") ? " on "
                         : !strcmp(x->phrasing, "Show the guide[ for {channel}]") ? " for " : NULL;
    if (!marker) continue;
    const cJSON *cargs = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(x->expected, "calls"), 0), "args");
    const bool has = cJSON_GetObjectItemCaseSensitive(cargs, "channel") != NULL;
    seen++, with += has;
    wrong += has != (strstr(x->utt, marker) != NULL);
  }
  CHECK(seen > 10 && with > 0 && with < seen);
  CHECK_EQ_INT(wrong, 0);

  /* a phrasing's fixed free-text value that its words contain is copied: it follows the utterance's
   * case ("put sky news on" -> sky news), as a slot's copied value does */
  size_t fixed_seen = 0, fixed_lower = 0, fixed_wrong = 0;
  for (size_t j = 0; j < n_train + n_dev; j++) {
    const line *x = j < n_train ? &train[j] : &dev[j - n_train];
    if (!x->phrasing || strcmp(x->phrasing, "(Put|Turn) Sky News on[, please]")) continue;
    const cJSON *cargs = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(x->expected, "calls"), 0), "args");
    const char *ch = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cargs, "channel"));
    fixed_seen++;
    fixed_lower += ch && !strcmp(ch, "sky news");
    fixed_wrong += !ch || strcasecmp(ch, "Sky News") || !strstr(x->utt, ch);
  }
  CHECK(fixed_seen > 5 && fixed_lower > 0);
  CHECK_EQ_INT(fixed_wrong, 0);

  snprintf(pa, sizeof pa, "%s/data.bin", tmp_path("a"));
  check_bin(pa, n_train, n_dev);
  test_report(tmp_path("a"), spec, model, dev, n_dev);
  free_lines(train, n_train), free_lines(dev, n_dev);

  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s' '%s'", tmp_path("a"), tmp_path("b"), tmp_path("c"), tmp_path("seed8.tune.json"));
  CHECK_EQ_INT(system(cmd), 0);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/fg-test-tune-XXXXXX");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  if (fg_test_ensure_model("tiny-vocab-f32.gguf", "tiny", "f32", 1) != 0) return 1;
  test_bad_specs();
  test_data();
  remove(tmp_path("err.txt"));
  rmdir(g_dir);
  return fg_test_finish("test_tune");
}
