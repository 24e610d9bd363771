/* cmd_tune.c — `fgemma tune`: from an app's tool spec (*.tune.json, docs/TUNE.md) to training data, a
 * LoRA adapter and a report. The spec, its expansion and the data files are in tools/tune/; this file
 * runs the stages. */
#include "cli.h"
#include "tune.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { ST_CHECK, ST_DATA, ST_TRAIN, ST_ADAPTER, ST_REPORT, N_STAGES };
static const char *const k_stage[N_STAGES] = {"check", "data", "train", "adapter", "report"};

typedef struct tune_cfg {
  const char *spec, *dir, *base, *python, *trainer, *agreement;
  uint32_t threads, budget;
  bool quiet;
} tune_cfg;

static bool exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static char *join(const char *a, const char *b) {
  const size_t n = strlen(a) + strlen(b) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", a, b);
  return p;
}

// ----------------------------------------------------------------------------------------------
// check, data

static int stage_check(const tune_cfg *c, tn_spec **out) {
  tn_spec *s = tn_spec_load(c->spec);
  if (!s) return 1;
  size_t n_dev = 0;
  for (size_t i = 0; i < s->n_phr; i++) n_dev += s->phr[i].dev;
  if (!c->quiet)
    fprintf(stderr, "tune: %s is valid: %zu functions, %zu languages, %zu phrasings (%zu held out for dev), %zu value lists, %zu examples\n",
            c->spec, s->n_funcs, s->n_langs, s->n_phr, n_dev, s->n_lists, s->n_ex);
  *out = s;
  return 0;
}

static int stage_data(const tune_cfg *c, const tn_spec *s) {
  tn_data d;
  const double t0 = cli_now();
  if (tn_expand(s, &d) != 0) return 1;
  if (!c->quiet)
    fprintf(stderr, "tune: expanded %zu training and %zu dev examples in %.1f s (%zu dev lines dropped: equal to a training utterance)\n",
            d.n_train, d.n_dev, cli_now() - t0, d.dropped_dev);
  const int rc = tn_write_data(s, &d, c->dir, c->base, c->threads, c->quiet);
  tn_data_free(&d);
  if (!rc && !c->quiet) fprintf(stderr, "tune: data stage done in %.1f s\n", cli_now() - t0);
  return rc;
}

// ----------------------------------------------------------------------------------------------
// train: training/train_lora.py on this machine's Python (torch, transformers, peft, gguf)

/* Runs argv (NULL-terminated); the exit status, or 127 when it could not start. */
static int run_argv(char *const argv[], bool quiet_out) {
  pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    if (quiet_out) {
      if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(127);
    }
    execvp(argv[0], argv);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* The trainer: --trainer FILE, else ../training/train_lora.py beside the fgemma executable's directory. */
static char *find_trainer(const tune_cfg *c) {
  if (c->trainer) {
    if (!exists(c->trainer)) return cli_error("tune: --trainer %s does not exist", c->trainer), NULL;
    return strdup(c->trainer);
  }
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      char *p = join(exe, "../training/train_lora.py");
      if (p && exists(p)) return p;
      free(p);
    }
  }
  cli_error("tune: cannot find training/train_lora.py beside the fgemma executable: pass --trainer FILE");
  return NULL;
}

static int stage_train(const tune_cfg *c) {
  char *trainer = find_trainer(c);
  if (!trainer) return 1;
  char *const probe[] = {(char *)c->python, "-c", "import torch, transformers, peft, gguf", NULL};
  const int prc = run_argv(probe, true);
  if (prc != 0) {
    free(trainer);
    if (prc == 127) return cli_error("tune: cannot run the Python '%s' (pass --python PY)", c->python);
    return cli_error("tune: %s lacks torch, transformers, peft or gguf (`%s -c \"import torch, transformers, peft, gguf\"` fails); "
                     "train where they are installed (docs/TUNE.md \"Stages\")", c->python, c->python);
  }
  char *data = join(c->dir, "data.bin"), *gf = join(c->dir, "golden.f32"), *gj = join(c->dir, "golden.json");
  char *dev = join(c->dir, "dev.jsonl"), *out = join(c->dir, "train");
  char budget[32];
  snprintf(budget, sizeof budget, "%u", c->budget);
  int rc = 1;
  if (data && gf && gj && dev && out) {
    /* the golden check (golden.json with golden.f32 beside it) stands for the tv-270m runs' file SHA-256:
     * any base that the trainer reads as fgemma does may be tuned */
    char name[128]; /* the spec's file name without .tune.json: the adapter's name in the loss plot */
    const char *slash = strrchr(c->spec, '/');
    snprintf(name, sizeof name, "%s", slash ? slash + 1 : c->spec);
    char *dot = strstr(name, ".tune.json");
    if (dot) *dot = '\0';
    char *const argv[] = {(char *)c->python, trainer, "--base", (char *)c->base, "--base-sha256", "", "--data", data,
                          "--golden", gj, "--dev-jsonl", dev, "--out", out, "--time-budget", budget, "--name", name,
                          NULL};
    if (!c->quiet) {
      fprintf(stderr, "tune: training:");
      for (char *const *a = argv; *a; a++) fprintf(stderr, " %s", *a);
      fputc('\n', stderr);
    }
    rc = run_argv(argv, false);
    if (rc) cli_error("tune: the trainer exited with status %d", rc), rc = 1;
  } else {
    cli_error("out of memory");
  }
  free(trainer), free(data), free(gf), free(gj), free(dev), free(out);
  return rc;
}

// ----------------------------------------------------------------------------------------------
// adapter: the PEFT directory DIR/train/adapter to DIR/adapter.gguf

/* ud: the last whole percent printed (-1 at first); one line per 10 % when stderr is not a terminal */
static bool convert_progress(uint64_t done, uint64_t total, void *ud) {
  int *last = ud;
  const int pct = total ? (int)(100 * done / total) : 100;
  const bool tty = isatty(2);
  if (pct == *last || (!tty && pct / 10 == *last / 10 && *last >= 0)) return true;
  *last = pct;
  if (tty) fprintf(stderr, "\rtune: converting the adapter %3d %%%s", pct, pct == 100 ? "\n" : "");
  else fprintf(stderr, "tune: converting the adapter %3d %%\n", pct);
  return true;
}

static int stage_adapter(const tune_cfg *c) {
  char *in = join(c->dir, "train/adapter"), *out = join(c->dir, "adapter.gguf");
  int rc = 0;
  if (!in || !out) rc = cli_error("out of memory");
  else if (!exists(in)) rc = cli_error("tune: %s does not exist: run the train stage first (or copy the trainer's adapter there)", in);
  if (!rc) {
    fg_convert_params p;
    fg_convert_params_init(&p);
    p.base = c->base;
    int last = -1;
    if (!c->quiet) p.progress = convert_progress, p.progress_user_data = &last;
    fg_error err = {0};
    fg_status st = fg_convert(in, out, &p, &err);
    if (!c->quiet && last != 100 && isatty(2)) fputc('\n', stderr);
    if (st != FG_OK) rc = cli_status_error(st, "tune: cannot convert the adapter", err.msg);
    else if (!c->quiet) fprintf(stderr, "tune: wrote %s\n", out);
  }
  free(in), free(out);
  return rc;
}

// ----------------------------------------------------------------------------------------------
// report

typedef struct report_row {
  const char *model;   /* "base" or "tuned" */
  uint32_t mode;
  cli_calls_score sc;
} report_row;

static const uint32_t k_modes[3] = {FG_NLU_CONSTRAIN_CALL_ONLY, FG_NLU_CONSTRAIN_OFF, FG_NLU_CONSTRAIN_CALL_OR_TEXT};

/* exact / n of row r in language lang ("" = all) */
static void lang_count(const report_row *r, const char *lang, uint64_t *n, uint64_t *exact) {
  *n = *exact = 0;
  for (size_t i = 0; i < r->sc.n_items; i++) {
    if (*lang && strcmp(r->sc.item_lang[i], lang) != 0) continue;
    (*n)++;
    *exact += r->sc.item_exact[i];
  }
}

static double pct_of(uint64_t x, uint64_t n) { return n ? 100.0 * (double)x / (double)n : 0.0; }

static void write_table(FILE *f, const tn_spec *s, const report_row *rows, size_t n_rows, bool md) {
  fprintf(f, md ? "| model | decoding | exact |" : "%-6s %-13s %-18s", "model", "decoding", "exact");
  for (size_t li = 0; li < s->n_langs; li++) fprintf(f, md ? " %s |" : " %-18s", s->langs[li]);
  fprintf(f, md ? " exact on calls | invalid calls | p50 ms |\n" : " %-18s %-8s %s\n", "exact on calls", "invalid", "p50 ms");
  if (md) {
    fprintf(f, "|---|---|---|");
    for (size_t li = 0; li < s->n_langs; li++) fprintf(f, "---|");
    fprintf(f, "---|---|---|\n");
  }
  for (size_t k = 0; k < n_rows; k++) {
    const report_row *r = &rows[k];
    char cell[64];
    snprintf(cell, sizeof cell, "%llu / %llu (%.1f %%)", (unsigned long long)r->sc.exact, (unsigned long long)r->sc.n,
             pct_of(r->sc.exact, r->sc.n));
    fprintf(f, md ? "| %s | %s | %s |" : "%-6s %-13s %-18s", r->model, cli_constrained_name(r->mode), cell);
    for (size_t li = 0; li < s->n_langs; li++) {
      uint64_t n, e;
      lang_count(r, s->langs[li], &n, &e);
      snprintf(cell, sizeof cell, "%llu / %llu (%.1f %%)", (unsigned long long)e, (unsigned long long)n, pct_of(e, n));
      fprintf(f, md ? " %s |" : " %-18s", cell);
    }
    snprintf(cell, sizeof cell, "%llu / %llu", (unsigned long long)r->sc.exact_calls, (unsigned long long)r->sc.n_expect_calls);
    fprintf(f, md ? " %s | %llu | %.1f |\n" : " %-18s %-8llu %.1f\n", cell, (unsigned long long)r->sc.invalid_calls, r->sc.p50_ms);
  }
}

static void row_json(cJSON *arr, const tn_spec *s, const report_row *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "model", r->model);
  cJSON_AddStringToObject(o, "constrained", cli_constrained_name(r->mode));
  cJSON_AddNumberToObject(o, "n", (double)r->sc.n);
  cJSON_AddNumberToObject(o, "exact_n", (double)r->sc.exact);
  cJSON_AddNumberToObject(o, "exact", r->sc.n ? (double)r->sc.exact / (double)r->sc.n : 0.0);
  cJSON_AddNumberToObject(o, "n_expect_calls", (double)r->sc.n_expect_calls);
  cJSON_AddNumberToObject(o, "exact_calls_n", (double)r->sc.exact_calls);
  cJSON_AddNumberToObject(o, "n_expect_text", (double)r->sc.n_expect_text);
  cJSON_AddNumberToObject(o, "exact_text_n", (double)r->sc.exact_text);
  cJSON_AddNumberToObject(o, "calls", (double)r->sc.calls);
  cJSON_AddNumberToObject(o, "invalid_calls", (double)r->sc.invalid_calls);
  cJSON_AddNumberToObject(o, "errors", (double)r->sc.errors);
  cJSON_AddNumberToObject(o, "p50_ms", r->sc.p50_ms);
  cJSON *bl = cJSON_AddObjectToObject(o, "by_lang");
  for (size_t li = 0; li < s->n_langs; li++) {
    uint64_t n, e;
    lang_count(r, s->langs[li], &n, &e);
    cJSON *l = cJSON_AddObjectToObject(bl, s->langs[li]);
    cJSON_AddNumberToObject(l, "n", (double)n);
    cJSON_AddNumberToObject(l, "exact_n", (double)e);
    cJSON_AddNumberToObject(l, "exact", n ? (double)e / (double)n : 0.0);
  }
  cJSON_AddItemToArray(arr, o);
}

/* The expected function of dev line i ("" for a text answer): the first call's name. */
static void expected_name(const cli_calls_score *sc, size_t i, char *out, size_t cap) {
  cJSON *e = cJSON_Parse(sc->item_expected[i]);
  const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(e, "calls"), 0);
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c0, "name"));
  snprintf(out, cap, "%s", name ? name : "");
  cJSON_Delete(e);
}

/* text in a markdown table cell: '|' escaped, line breaks as spaces */
static void md_cell(FILE *f, const char *t) {
  for (; *t; t++) {
    if (*t == '|') fputs("\\|", f);
    else fputc(*t == '\n' || *t == '\r' ? ' ' : *t, f);
  }
}

#define TUNE_MISSES_MD 100 /* misses listed in report.md (report.json has them all) */

/* What the tuned model gets right per expected function, and every dev line it gets wrong: where a
 * spec needs more phrasings or values (docs/TUNE.md, "Reading the report"). */
static void write_misses(FILE *md, cJSON *o, const tn_spec *s, const report_row *r) {
  fprintf(md, "\n## The tuned model per function (%s)\n\n| expected | dev lines | exact |\n|---|---:|---:|\n",
          cli_constrained_name(r->mode));
  cJSON *bf = cJSON_AddObjectToObject(o, "tuned_by_function");
  for (size_t fi = 0; fi <= s->n_funcs; fi++) {
    const char *want = fi < s->n_funcs ? s->funcs[fi].name : "";
    uint64_t n = 0, e = 0;
    for (size_t i = 0; i < r->sc.n_items; i++) {
      char name[128];
      expected_name(&r->sc, i, name, sizeof name);
      if (strcmp(name, want) != 0) continue;
      n++;
      e += r->sc.item_exact[i];
    }
    if (!n) continue;
    fprintf(md, "| %s | %llu | %llu (%.1f %%) |\n", *want ? want : "(text answer)", (unsigned long long)n,
            (unsigned long long)e, pct_of(e, n));
    cJSON *fo = cJSON_AddObjectToObject(bf, *want ? want : "(text answer)");
    cJSON_AddNumberToObject(fo, "n", (double)n);
    cJSON_AddNumberToObject(fo, "exact_n", (double)e);
  }
  fprintf(md, "\n## The tuned model's misses (%s)\n\n| utterance | expected | answer |\n|---|---|---|\n",
          cli_constrained_name(r->mode));
  cJSON *arr = cJSON_AddArrayToObject(o, "tuned_misses");
  size_t listed = 0, missed = 0;
  for (size_t i = 0; i < r->sc.n_items; i++) {
    if (r->sc.item_exact[i]) continue;
    missed++;
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "utterance", r->sc.item_utt[i]);
    cJSON_AddStringToObject(m, "lang", r->sc.item_lang[i]);
    cJSON_AddItemToObject(m, "expected", cJSON_Parse(r->sc.item_expected[i]));
    cJSON *ans = cJSON_Parse(r->sc.item_answer[i]);
    cJSON_AddItemToObject(m, "answer", ans ? ans : cJSON_CreateNull());
    cJSON_AddItemToArray(arr, m);
    if (listed == TUNE_MISSES_MD) continue;
    listed++;
    fputs("| ", md);
    md_cell(md, r->sc.item_utt[i]);
    fputs(" | `", md);
    md_cell(md, r->sc.item_expected[i]);
    fputs("` | `", md);
    md_cell(md, *r->sc.item_answer[i] ? r->sc.item_answer[i] : "(refused)");
    fputs("` |\n", md);
  }
  if (missed > listed) fprintf(md, "\n%zu more in report.json.\n", missed - listed);
  if (!missed) fputs("| (none) | | |\n", md);
}

/* Writes text to dir/name through name.tmp. */
static int write_text(const char *dir, const char *name, const char *text) {
  char *p = join(dir, name), *tmp = p ? malloc(strlen(p) + 5) : NULL;
  int rc = 0;
  if (!tmp) rc = cli_error("out of memory");
  if (!rc) {
    snprintf(tmp, strlen(p) + 5, "%s.tmp", p);
    FILE *f = fopen(tmp, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, p) != 0) rc = cli_error("tune: cannot write %s", p);
  }
  free(p), free(tmp);
  return rc;
}

static int stage_report(const tune_cfg *c, const tn_spec *s) {
  char *dev = join(c->dir, "dev.jsonl"), *adapter = join(c->dir, "adapter.gguf");
  report_row rows[6];
  memset(rows, 0, sizeof rows);
  size_t n_rows = 0;
  cJSON *agree = NULL;
  int rc = dev && adapter ? 0 : cli_error("out of memory");
  if (!rc && !exists(dev)) rc = cli_error("tune: %s does not exist: run the data stage first", dev);
  if (!rc && !exists(adapter)) rc = cli_error("tune: %s does not exist: run the adapter stage first", adapter);
  if (!rc && c->agreement) {
    size_t len;
    char *t = cli_read_file(c->agreement, &len);
    if (!t) rc = 1;
    else if (!(agree = cJSON_ParseWithLength(t, len))) rc = cli_error("tune: --llama-agreement %s is not JSON", c->agreement);
    free(t);
  }
  /* the base as it answers before tuning (with the control-token override when it needs one), then tuned */
  for (int which = 0; which < 2 && !rc; which++) {
    fg_model *m = NULL;
    if (which == 0) {
      bool override;
      m = tn_load_base(c->base, c->dir, c->quiet, &override);
      if (!m) rc = 1;
    } else {
      fg_model_params mp;
      fg_model_params_init(&mp);
      fg_lora lora = {adapter, 1.0f};
      mp.loras = &lora, mp.n_loras = 1;
      fg_error err = {0};
      fg_status st = fg_model_load(c->base, &mp, &m, &err);
      if (st != FG_OK) rc = cli_status_error(st, "tune: cannot load the base with the adapter", err.msg);
    }
    for (int k = 0; k < 3 && !rc; k++) {
      report_row *r = &rows[n_rows];
      r->model = which ? "tuned" : "base";
      r->mode = k_modes[k];
      char name[64];
      snprintf(name, sizeof name, "%s", r->model);
      rc = cli_calls_score_run(m, s->catalog, dev, name, r->mode, c->threads, !c->quiet && cli_stderr_is_tty(), &r->sc);
      if (!rc) n_rows++;
      if (!rc && !c->quiet)
        fprintf(stderr, "tune: %s, %s: %llu / %llu exact\n", r->model, cli_constrained_name(r->mode),
                (unsigned long long)r->sc.exact, (unsigned long long)r->sc.n);
    }
    fg_model_free(m);
  }
  if (!rc) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "dev", dev);
    cJSON_AddStringToObject(o, "base", c->base);
    cJSON_AddStringToObject(o, "adapter", adapter);
    cJSON *langs = cJSON_AddArrayToObject(o, "languages");
    for (size_t li = 0; li < s->n_langs; li++) cJSON_AddItemToArray(langs, cJSON_CreateString(s->langs[li]));
    cJSON *arr = cJSON_AddArrayToObject(o, "rows");
    for (size_t k = 0; k < n_rows; k++) row_json(arr, s, &rows[k]);
    char *agree_txt = agree ? cJSON_PrintUnformatted(agree) : NULL;
    if (agree) cJSON_AddItemToObject(o, "llama_agreement", agree), agree = NULL;
    else cJSON_AddNullToObject(o, "llama_agreement");
    const report_row *tuned = NULL; /* the tuned model as the NLU engine answers by default */
    for (size_t k = 0; k < n_rows; k++)
      if (!strcmp(rows[k].model, "tuned") && rows[k].mode == FG_NLU_CONSTRAIN_CALL_OR_TEXT) tuned = &rows[k];
    char *md = NULL;
    size_t md_len = 0;
    FILE *mf = open_memstream(&md, &md_len);
    if (mf) {
      fprintf(mf, "# fgemma tune report\n\nDev set `dev.jsonl` (%llu utterances whose phrasings, and held-out values, "
                  "were never trained), base `%s`; \"base\" is the base before tuning (with FunctionGemma's control "
                  "tokens), \"tuned\" the base with `adapter.gguf`. Exact: the call (name and arguments) or the text "
                  "answer equal to the expected one; call-only cannot answer the text-only lines.\n\n",
              (unsigned long long)rows[0].sc.n, c->base);
      write_table(mf, s, rows, n_rows, true);
      fprintf(mf, "\nllama.cpp agreement (`--llama-agreement`): %s\n", agree_txt ? agree_txt : "not measured");
      if (tuned) write_misses(mf, o, s, tuned);
      fclose(mf);
    }
    char *json = cJSON_Print(o);
    cJSON_Delete(o);
    if (!json || !md) rc = cli_error("out of memory");
    if (!rc) {
      char *jn = malloc(strlen(json) + 2);
      if (jn) snprintf(jn, strlen(json) + 2, "%s\n", json);
      rc = jn ? write_text(c->dir, "report.json", jn) : cli_error("out of memory");
      free(jn);
    }
    if (!rc) rc = write_text(c->dir, "report.md", md);
    if (!rc) {
      write_table(stdout, s, rows, n_rows, false);
      if (tuned)
        printf("tuned, %s: %llu dev lines missed, listed with the expected answers in report.md\n",
               cli_constrained_name(tuned->mode), (unsigned long long)(tuned->sc.n - tuned->sc.exact));
      printf("(%s/report.md, %s/report.json)\n", c->dir, c->dir);
    }
    free(json), free(md), free(agree_txt);
  }
  for (size_t k = 0; k < n_rows; k++) cli_calls_score_free(&rows[k].sc);
  cJSON_Delete(agree);
  free(dev), free(adapter);
  return rc;
}

// ----------------------------------------------------------------------------------------------
// The command

int cmd_tune(int argc, char **argv) {
  static const cli_opt opts[] = {
      {"out", 'o', true, "the output directory DIR (created; required except for --stage check)"},
      {"base", 0, true, "the base GGUF (google/gemma-3-270m's Q4_K_M, or a FunctionGemma file); required except for check"},
      {"stage", 0, true, "check|data|train|adapter|report|all, or a comma list (default all: every stage in order)"},
      {"python", 0, true, "the Python that trains (default python3; needs torch, transformers, peft and gguf)"},
      {"trainer", 0, true, "training/train_lora.py (default: ../training/train_lora.py beside the fgemma executable)"},
      {"threads", 't', true, "threads for the report's decoding (default: available cores)"},
      {"budget", 0, true, "training time budget in seconds (default 360)"},
      {"llama-agreement", 0, true, "report: a JSON of llama.cpp's agreement (tests/oracle) to include"},
      {"quiet", 'q', false, "no progress on stderr"},
      {"help", 'h', false, "show this help"},
      {0}};
  cli_args a;
  if (cli_parse("tune", opts, argc - 1, argv + 1, &a)) return 2;
  if (cli_has(opts, &a, "help")) {
    cli_usage(stdout, "tune",
              "SPEC.tune.json -o DIR --base BASE.gguf [--stage check|data|train|adapter|report|all] [--python PY] "
              "[--trainer FILE] [--threads N] [--budget SECONDS] [--llama-agreement FILE] [-q]",
              "Turns an app's tool spec (docs/TUNE.md) into a LoRA adapter and a report, in stages:\n"
              "  check    parse and validate the spec against its catalog (writes nothing)\n"
              "  data     expand it into DIR/train.jsonl, dev.jsonl, data.bin (FGTVDATA v1), golden.f32/.json\n"
              "           (the base's reference logits) and summary.json; deterministic for the spec's seed\n"
              "  train    PY TRAINER --base BASE --data DIR/data.bin ... --out DIR/train (torch, transformers, peft, gguf)\n"
              "  adapter  DIR/train/adapter (PEFT) to DIR/adapter.gguf\n"
              "  report   exact match on DIR/dev.jsonl, base alone and with the adapter, three decoding modes:\n"
              "           DIR/report.json and DIR/report.md\n"
              "A base without FunctionGemma's control tokens (google/gemma-3-270m) gets DIR/control-tokens.gguf, an\n"
              "override-only adapter used at scale 0.",
              opts);
    return 0;
  }
  if (a.n_pos != 1) return cli_error("tune: give one SPEC.tune.json (see 'fgemma tune --help')"), 2;
  tune_cfg c = {.spec = a.pos[0], .dir = cli_get(opts, &a, "out"), .base = cli_get(opts, &a, "base"),
                .python = cli_get(opts, &a, "python"), .trainer = cli_get(opts, &a, "trainer"),
                .agreement = cli_get(opts, &a, "llama-agreement"), .budget = 360, .quiet = cli_has(opts, &a, "quiet")};
  if (!c.python) c.python = "python3";
  const char *v;
  if ((v = cli_get(opts, &a, "threads")) && !cli_u32("--threads", v, 1, 256, &c.threads)) return 2;
  if ((v = cli_get(opts, &a, "budget")) && !cli_u32("--budget", v, 1, 1u << 24, &c.budget)) return 2;
  bool want[N_STAGES] = {0};
  char stages[128];
  snprintf(stages, sizeof stages, "%s", (v = cli_get(opts, &a, "stage")) ? v : "all");
  char *items[8];
  const size_t n_items = cli_split_list(stages, items, 8);
  for (size_t i = 0; i < n_items; i++) {
    const bool all = strcmp(items[i], "all") == 0;
    bool known = all;
    for (int k = 0; k < N_STAGES; k++) {
      const bool this = all || strcmp(items[i], k_stage[k]) == 0;
      want[k] = want[k] || this;
      known = known || this;
    }
    if (!known) return cli_error("tune: --stage '%s' is not check, data, train, adapter, report or all", items[i]), 2;
  }
  bool beyond_check = false;
  for (int k = ST_DATA; k < N_STAGES; k++) beyond_check = beyond_check || want[k];
  if (beyond_check && !c.dir) return cli_error("tune: -o DIR is required (except for --stage check)"), 2;
  if (beyond_check && !c.base) return cli_error("tune: --base BASE.gguf is required (except for --stage check)"), 2;
  if (c.base && beyond_check && !exists(c.base)) return cli_error("tune: the base %s does not exist", c.base);

  tn_spec *s = NULL;
  int rc = stage_check(&c, &s); /* every stage starts from a valid spec */
  if (!rc && want[ST_DATA]) rc = stage_data(&c, s);
  if (!rc && want[ST_TRAIN]) rc = stage_train(&c);
  if (!rc && want[ST_ADAPTER]) rc = stage_adapter(&c);
  if (!rc && want[ST_REPORT]) rc = stage_report(&c, s);
  tn_spec_free(s);
  return rc;
}
