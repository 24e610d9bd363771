/* cmd_nlu.c — tool-calling commands: prompt (render a catalog) and call (the NLU service). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#define HELP_OPT {"help", 'h', false, "show this help"}

static fg_catalog *load_catalog(const char *path) {
  if (!path) {
    cli_error("--tools CATALOG.json is required");
    return NULL;
  }
  size_t len;
  char *json = cli_read_file(path, &len);
  if (!json) return NULL;
  fg_catalog *c = NULL;
  fg_error err = {0};
  fg_status st = fg_catalog_parse(json, len, &c, &err);
  free(json);
  if (st != FG_OK) {
    cli_error("%s: %s", path, err.msg[0] ? err.msg : fg_status_str(st));
    return NULL;
  }
  return c;
}

// ----------------------------------------------------------------------------------------------
// prompt

int cmd_prompt(int argc, char **argv) {
  static const cli_opt opts[] = {{"tools", 0, true, "tool catalog (cartridge schema or OpenAI tools list)"}, HELP_OPT, {0}};
  cli_args a;
  if (cli_parse("prompt", opts, argc - 1, argv + 1, &a)) return 2;
  if (cli_has(opts, &a, "help")) {
    cli_usage(stdout, "prompt", "--tools CATALOG.json [UTTERANCE]",
              "Prints the FunctionGemma prompt text: the catalog prefix alone, or prefix + utterance part.\n"
              "The runtime adds <bos> (id 2) in front of it; it is not printed.", opts);
    return 0;
  }
  if (a.n_pos > 1) return cli_error("prompt: give at most one UTTERANCE (quote it)"), 2;
  fg_catalog *c = load_catalog(cli_get(opts, &a, "tools"));
  if (!c) return 1;
  size_t n = 0;
  fg_catalog_render_prefix(c, NULL, 0, &n);
  char *buf = malloc(n + 1);
  int rc = 0;
  if (!buf || fg_catalog_render_prefix(c, buf, n + 1, &n) != FG_OK) rc = cli_error("cannot render the catalog");
  if (!rc) fwrite(buf, 1, n, stdout);
  free(buf);
  if (!rc && a.n_pos == 1) {
    size_t m = 0;
    fg_status st = fg_render_utterance(a.pos[0], strlen(a.pos[0]), NULL, 0, &m);
    char *u = (st == FG_OK || st == FG_ERR_BUFFER_TOO_SMALL) ? malloc(m + 1) : NULL;
    if (!u || fg_render_utterance(a.pos[0], strlen(a.pos[0]), u, m + 1, &m) != FG_OK)
      rc = cli_error("prompt: the utterance is empty or contains control-token text");
    else
      fwrite(u, 1, m, stdout);
    free(u);
  }
  fg_catalog_free(c);
  return rc;
}

// ----------------------------------------------------------------------------------------------
// call

static bool progress_cb(uint64_t done, uint64_t total, void *ud) {
  (void)ud;
  fprintf(stderr, "\rcatalog prefill: %llu / %llu tokens", (unsigned long long)done, (unsigned long long)total);
  if (done >= total) fputc('\n', stderr);
  return true;
}

#define TABLE_COLS 40  // characters of an utterance shown in the table

typedef struct row {
  char text[TABLE_COLS * 4 + 1];  // up to TABLE_COLS UTF-8 characters
  int pad;                        // spaces after text to fill TABLE_COLS columns
  uint32_t chunk, decode, passes;
  double ms;
} row;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void print_table(const row *rows, size_t n, const fg_nlu_info *info) {
  fprintf(stderr, "\n%-40s %6s %6s %6s %9s\n", "utterance", "chunk", "decode", "passes", "ms");
  double *ms = malloc(sizeof(double) * (n ? n : 1));
  for (size_t i = 0; i < n; i++) {
    fprintf(stderr, "%s%*s %6u %6u %6u %9.1f\n", rows[i].text, rows[i].pad, "", rows[i].chunk, rows[i].decode,
            rows[i].passes, rows[i].ms);
    ms[i] = rows[i].ms;
  }
  if (n && ms) {
    qsort(ms, n, sizeof *ms, cmp_double);
    fprintf(stderr, "prefix: %u tokens, %.1f ms (%s); per utterance: p50 %.1f ms, p95 %.1f ms, max %.1f ms\n",
            info->prefix_tokens, info->prefix_ms, info->prefix_from_file ? "loaded from the snapshot file" : "prefilled",
            ms[(n - 1) / 2], ms[(size_t)((double)(n - 1) * 0.95 + 0.5)], ms[n - 1]);
  }
  free(ms);
}

int cmd_call(int argc, char **argv) {
  static const cli_opt opts[] = {
      {"model", 'm', true, "GGUF file"},
      {"tools", 0, true, "tool catalog JSON (required)"},
      {"snapshot-path", 0, true, "prefix snapshot file: loaded when it matches, else written (default: none)"},
      {"snapshot-dir", 0, true, "directory of prefix snapshots shared with `serve --snapshot-dir` and the bindings"},
      {"max-tokens", 0, true, "generated tokens per utterance (default 64)"},
      {"multi-call", 0, false, "allow several calls per answer (default: one)"},
      {"constrained", 0, true, "call-or-text (default) | call-only | off: decode only calls the catalog allows"},
      {"speculate", 0, true, "on | off: verify drafted tokens in batches (default on; same answers)"},
      {"max-draft", 0, true, "most drafted tokens per weight pass (1..32, default 8)"},
      {"no-answer-cache", 0, false, "speculation keeps no earlier answers as drafts"},
      {"table", 0, false, "print a latency table to stderr at the end"},
      {"threads", 't', true, "worker threads (default: available cores)"},
      {"n-ctx", 0, true, "context positions (default: the model's)"},
      HELP_OPT,
      {0}};
  cli_args a;
  if (cli_parse("call", opts, argc - 1, argv + 1, &a)) return 2;
  if (cli_has(opts, &a, "help")) {
    cli_usage(stdout, "call", "-m MODEL.gguf --tools CATALOG.json [--snapshot-path FILE] [--max-tokens N] [UTTERANCE...]",
              "Prefills the catalog once (or loads --snapshot-path FILE, writing it when missing or stale), then answers\n"
              "each utterance from that state: one JSON object per line with the parsed call, the raw text, the\n"
              "stop reason and timings. Without UTTERANCE arguments it reads one utterance per line from standard\n"
              "input until EOF (the NLU service mode).\n"
              "--constrained call-or-text (the default) makes every call valid for the catalog (name, keys,\n"
              "enum values, required keys, value types) and lets the model answer in prose when it starts no\n"
              "call; call-only makes every answer a call; off is plain greedy decoding (docs/OPTIONS.md).\n"
              "The JSON then counts the steps: \"heads\":{\"full\":N,\"sparse\":N,\"forced\":N}.\n"
              "--speculate on (the default) guesses the next tokens (the call syntax, copies of utterance spans,\n"
              "catalog names and values, earlier answers, what followed the last tokens earlier in the prompt) and\n"
              "has the model check them in one weight pass; the answers are byte-identical to --speculate off.\n"
              "\"passes\":{\"weight\":N,\"head\":N} counts the forward passes (the utterance chunk included) and\n"
              "full LM head passes, \"drafts\" the drafted and accepted tokens per source. --table adds their\n"
              "median/p95 per call.", opts);
    return 0;
  }
  fg_nlu_params np;
  fg_nlu_params_init(&np);
  cli_session_params_init(&np.session);
  const char *v;
  if ((v = cli_get(opts, &a, "max-tokens")) && !cli_u32("--max-tokens", v, 1, 1u << 16, &np.max_tokens)) return 2;
  if ((v = cli_get(opts, &a, "threads")) && !cli_u32("--threads", v, 1, 256, &np.session.n_threads)) return 2;
  if ((v = cli_get(opts, &a, "n-ctx")) && !cli_u32("--n-ctx", v, 1, UINT32_MAX, &np.session.n_ctx)) return 2;
  if (cli_has(opts, &a, "multi-call")) np.flags |= FG_NLU_MULTI_CALL;
  if ((v = cli_get(opts, &a, "constrained")) && !cli_constrained(v, &np.constrained)) return 2;
  if ((v = cli_get(opts, &a, "speculate")) && !cli_speculate(v, &np.speculate)) return 2;
  if (cli_has(opts, &a, "no-answer-cache")) np.flags |= FG_NLU_NO_ANSWER_CACHE;
  if ((v = cli_get(opts, &a, "max-draft")) && !cli_u32("--max-draft", v, 1, 32, &np.max_draft)) return 2;
  np.snapshot_path = cli_get(opts, &a, "snapshot-path");
  if ((v = cli_get(opts, &a, "snapshot-dir"))) {
    if (np.snapshot_path) return cli_error("--snapshot-path and --snapshot-dir: give one of them"), 2;
    if (!cli_snapshot_dir("--snapshot-dir", v)) return 2;
    np.snapshot_dir = v;
  }
  if (cli_stderr_is_tty()) np.progress = progress_cb;
  fg_catalog *c = load_catalog(cli_get(opts, &a, "tools"));
  if (!c) return 1;
  fg_model *m = cli_load_model(cli_get(opts, &a, "model"));
  if (!m) return fg_catalog_free(c), 1;
  fg_nlu *nlu = NULL;
  fg_error err = {0};
  fg_status st = fg_nlu_create(m, c, &np, &nlu, &err);
  if (st != FG_OK) {
    cli_status_error(st, "cannot prepare the catalog", err.msg);
    fg_model_free(m);
    fg_catalog_free(c);
    return 1;
  }
  fg_nlu_info info;
  fg_nlu_get_info(nlu, &info);
  if (info.snapshot_refused)
    fprintf(stderr, "fgemma: warning: the snapshot file was damaged or of another model, KV type or catalog: "
                    "not used%s\n", info.snapshot_written ? ", replaced" : "");
  fprintf(stderr, "catalog: %u tokens %s in %.1f ms%s%s%s; constrained %s, speculate %s\n", info.prefix_tokens,
          info.prefix_from_file ? "loaded from snapshot" : "prefilled", info.prefix_ms,
          info.snapshot_written ? " (snapshot written)" : "", info.snapshot_name[0] ? ": " : "", info.snapshot_name,
          cli_constrained_name(info.constrained), info.speculate == FG_NLU_SPECULATE_OFF ? "off" : "on");

  row *rows = NULL;
  size_t n_rows = 0, cap_rows = 0;
  cli_spec_stats spec = {0};
  int rc = 0;
  char *line = NULL;
  size_t line_cap = 0;
  for (int i = 0;; i++) {
    const char *utt;
    size_t len;
    if (a.n_pos > 0) {
      if (i >= a.n_pos) break;
      utt = a.pos[i];
      len = strlen(utt);
    } else {
      ssize_t got = getline(&line, &line_cap, stdin);
      if (got < 0) break;
      while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = '\0';
      if (got == 0) continue;
      utt = line;
      len = (size_t)got;
    }
    fg_nlu_result r;
    double t0 = cli_now();
    st = fg_nlu_ask(nlu, utt, len, &r);
    double ms = (cli_now() - t0) * 1e3;
    if (st != FG_OK) {
      printf("{\"utterance\":");
      cli_json_str(stdout, utt, len);
      printf(",\"error\":");
      cli_json_str(stdout, fg_nlu_errmsg(nlu), strlen(fg_nlu_errmsg(nlu)));
      printf(",\"status\":\"%s\"}\n", fg_status_str(st));
      fflush(stdout);
      rc = 1;
      continue;
    }
    printf("{\"utterance\":");
    cli_json_str(stdout, utt, len);
    printf(",\"result\":%s,\"raw\":", r.json);
    cli_json_str(stdout, r.raw, strlen(r.raw));
    printf(",\"stop\":\"%s\",\"tokens\":{\"chunk\":%u,\"decode\":%u},"
           "\"heads\":{\"full\":%u,\"sparse\":%u,\"forced\":%u},\"passes\":{\"weight\":%u,\"head\":%u},"
           "\"drafts\":{",
           fg_nlu_stop_name(r.stop), r.chunk_tokens, r.decode_tokens, r.full_head_steps, r.sparse_head_steps, r.forced_tokens,
           r.weight_passes, r.head_passes);
    for (unsigned k = 0; k < FG_NLU_DRAFT_SOURCES; k++)
      printf("%s\"%s\":[%u,%u]", k ? "," : "", cli_draft_names[k], r.drafted[k], r.accepted[k]);
    printf("},\"ms\":{\"restore\":%.3f,\"chunk\":%.2f,\"decode\":%.2f,\"total\":%.2f}}\n", r.restore_ms,
           r.chunk_ms, r.decode_ms, ms);
    cli_spec_add(&spec, &r);
    fflush(stdout);
    if (n_rows == cap_rows) {
      cap_rows = cap_rows ? cap_rows * 2 : 16;
      row *nr = realloc(rows, cap_rows * sizeof *rows);
      if (!nr) break;
      rows = nr;
    }
    // the first TABLE_COLS characters (a character: a byte that is not a UTF-8 continuation byte plus
    // the continuation bytes after it), never cut inside a sequence
    size_t cut = 0;
    int chars = 0;
    while (cut < len && chars < TABLE_COLS) {
      cut++;
      while (cut < len && ((unsigned char)utt[cut] & 0xC0) == 0x80 && cut < sizeof rows[n_rows].text - 1) cut++;
      chars++;
    }
    if (cut > sizeof rows[n_rows].text - 1) cut = sizeof rows[n_rows].text - 1;
    memcpy(rows[n_rows].text, utt, cut);
    rows[n_rows].text[cut] = 0;
    rows[n_rows].pad = TABLE_COLS - chars;
    rows[n_rows].chunk = r.chunk_tokens;
    rows[n_rows].decode = r.decode_tokens;
    rows[n_rows].passes = r.weight_passes;
    rows[n_rows].ms = ms;
    n_rows++;
  }
  if (cli_has(opts, &a, "table")) {
    print_table(rows, n_rows, &info);
    cli_spec_print(stderr, "", &spec);
  }
  cli_spec_free(&spec);
  free(rows);
  free(line);
  fg_nlu_free(nlu);
  fg_model_free(m);
  fg_catalog_free(c);
  return rc;
}
