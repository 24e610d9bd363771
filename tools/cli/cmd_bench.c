/* cmd_bench.c — `fgemma bench`: the NLU scenario and the micro table of DESIGN.md, measured through
 * the public API only, with the machine's read bandwidth for reference. */
#include "cli.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HELP_OPT {"help", 'h', false, "show this help"}

typedef struct bench_ctx {
  fg_model *model;
  fg_model_info info;
  fg_session_params sp;
  uint32_t reps;
  bool progress;
} bench_ctx;

static void progress(const bench_ctx *b, const char *what) {
  if (b->progress) fprintf(stderr, "\rbench: %-48s", what);
}

static int32_t *random_ids(uint32_t n, uint32_t vocab, uint64_t seed) {
  int32_t *ids = malloc(sizeof(int32_t) * (n ? n : 1));
  if (!ids) return NULL;
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (uint32_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    ids[i] = (int32_t)(300 + x % (vocab > 400 ? vocab - 300 : 1));
  }
  if (n) ids[0] = 2;
  return ids;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_d);
  return n ? v[(n - 1) / 2] : 0.0;
}

/* best-of-reps seconds for prefilling n tokens into a fresh session */
static double time_prefill(bench_ctx *b, uint32_t n) {
  int32_t *ids = random_ids(n, b->info.n_vocab, n);
  double *t = malloc(sizeof(double) * b->reps);
  for (uint32_t r = 0; r < b->reps; r++) {
    fg_session *s = NULL;
    if (fg_session_create(b->model, &b->sp, &s, NULL) != FG_OK) break;
    double t0 = cli_now();
    fg_session_prefill(s, ids, n, NULL);
    t[r] = cli_now() - t0;
    fg_session_free(s);
  }
  double m = median(t, b->reps);
  free(t);
  free(ids);
  return m;
}

/* median seconds of a chunk of n tokens appended at depth d (restore + prefill) */
static double time_chunk(bench_ctx *b, uint32_t depth, uint32_t n) {
  int32_t *ids = random_ids(depth + n, b->info.n_vocab, 7);
  fg_session *s = NULL;
  fg_snapshot *snap = NULL;
  double m = 0;
  if (fg_session_create(b->model, &b->sp, &s, NULL) == FG_OK && fg_session_prefill(s, ids, depth, NULL) == FG_OK &&
      fg_session_snapshot(s, &snap) == FG_OK) {
    double *t = malloc(sizeof(double) * b->reps);
    for (uint32_t r = 0; r < b->reps; r++) {
      double t0 = cli_now();
      fg_session_restore(s, snap);
      fg_session_prefill(s, ids + depth, n, NULL);
      t[r] = cli_now() - t0;
    }
    m = median(t, b->reps);
    free(t);
  }
  fg_snapshot_free(snap);
  fg_session_free(s);
  free(ids);
  return m;
}

/* seconds per decoded token at depth d (median over reps of 16 steps) */
static double time_decode(bench_ctx *b, uint32_t depth) {
  const uint32_t steps = 16;
  int32_t *ids = random_ids(depth + 1, b->info.n_vocab, 11);
  fg_session *s = NULL;
  fg_snapshot *snap = NULL;
  double m = 0;
  if (fg_session_create(b->model, &b->sp, &s, NULL) == FG_OK && fg_session_prefill(s, ids, depth + 1, NULL) == FG_OK &&
      fg_session_snapshot(s, &snap) == FG_OK) {
    double *t = malloc(sizeof(double) * b->reps);
    for (uint32_t r = 0; r < b->reps; r++) {
      fg_session_restore(s, snap);
      int32_t next = ids[depth];
      double t0 = cli_now();
      for (uint32_t i = 0; i < steps; i++) fg_session_step(s, next, &next);
      t[r] = (cli_now() - t0) / steps;
    }
    m = median(t, b->reps);
    free(t);
  }
  fg_snapshot_free(snap);
  fg_session_free(s);
  free(ids);
  return m;
}

// ----------------------------------------------------------------------------------------------
// Machine read bandwidth: threads summing disjoint parts of a large buffer

typedef struct bw_job {
  const uint64_t *p;
  size_t n;
  uint64_t sum;
} bw_job;

static void *bw_worker(void *ud) {
  bw_job *j = ud;
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i + 4 <= j->n; i += 4) {
    s0 += j->p[i];
    s1 += j->p[i + 1];
    s2 += j->p[i + 2];
    s3 += j->p[i + 3];
  }
  j->sum = s0 + s1 + s2 + s3;
  return NULL;
}

static double read_bandwidth(uint32_t threads) {
  const size_t bytes = (size_t)512 << 20, n = bytes / 8;
  uint64_t *buf = malloc(bytes);
  if (!buf) return 0;
  for (size_t i = 0; i < n; i++) buf[i] = i;
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    pthread_t th[64];
    bw_job jobs[64];
    uint32_t nt = threads > 64 ? 64 : threads;
    double t0 = cli_now();
    for (uint32_t t = 0; t < nt; t++) {
      jobs[t] = (bw_job){buf + n / nt * t, n / nt, 0};
      pthread_create(&th[t], NULL, bw_worker, &jobs[t]);
    }
    uint64_t sum = 0;
    for (uint32_t t = 0; t < nt; t++) {
      pthread_join(th[t], NULL);
      sum += jobs[t].sum;
    }
    double dt = cli_now() - t0;
    if (sum == 42) fputc(' ', stderr); /* keep the reads */
    if (bytes / dt > best) best = bytes / dt;
  }
  free(buf);
  return best / 1e9;
}

// ----------------------------------------------------------------------------------------------
// NLU scenario: prefix = catalog; per utterance restore + chunk + 16 decoded tokens

typedef struct nlu_numbers {
  uint32_t prefix_tokens;
  double prefix_s, p50_ms, p95_ms, chunk_tokens_avg;
  double ready_cold_s, ready_warm_s; /* process-start-to-ready: model load + prefix, or + snapshot load */
  size_t n;
} nlu_numbers;

static int32_t *tokenize_alloc(const fg_model *m, const char *text, size_t len, uint32_t flags, size_t *n) {
  size_t need = 0;
  fg_tokenize(m, text, len, flags, NULL, 0, &need);
  int32_t *ids = malloc(sizeof(int32_t) * (need ? need : 1));
  if (ids && fg_tokenize(m, text, len, flags, ids, need, n) != FG_OK) {
    free(ids);
    return NULL;
  }
  return ids;
}

static int run_nlu(bench_ctx *b, const char *model_path, const char *tools, const char *utts, nlu_numbers *out) {
  memset(out, 0, sizeof *out);
  size_t jl, ul;
  char *json = cli_read_file(tools, &jl), *text = json ? cli_read_file(utts, &ul) : NULL;
  if (!text) return free(json), 1;
  fg_catalog *c = NULL;
  fg_error err = {0};
  if (fg_catalog_parse(json, jl, &c, &err) != FG_OK) return free(json), free(text), cli_error("%s: %s", tools, err.msg);
  size_t pn = 0;
  fg_catalog_render_prefix(c, NULL, 0, &pn);
  char *prefix = malloc(pn + 1);
  fg_catalog_render_prefix(c, prefix, pn + 1, &pn);
  size_t n_prefix = 0;
  int32_t *pids = tokenize_alloc(b->model, prefix, pn, FG_TOKENIZE_ADD_BOS, &n_prefix);
  int rc = 0;
  fg_session *s = NULL;
  fg_snapshot *snap = NULL;
  if (!pids || fg_session_create(b->model, &b->sp, &s, NULL) != FG_OK) {
    rc = cli_error("bench: cannot tokenize the catalog or create a session");
    goto done;
  }
  progress(b, "NLU: catalog prefill");
  double t0 = cli_now();
  if (fg_session_prefill(s, pids, n_prefix, NULL) != FG_OK || fg_session_snapshot(s, &snap) != FG_OK) {
    rc = cli_error("bench: catalog prefill failed: %s", fg_session_errmsg(s));
    goto done;
  }
  out->prefix_s = cli_now() - t0;
  out->prefix_tokens = (uint32_t)n_prefix;

  double lat[1024];
  size_t n = 0, tok_sum = 0;
  for (char *line = strtok(text, "\n"); line && n < 1024; line = strtok(NULL, "\n")) {
    size_t ll = strlen(line);
    while (ll && (line[ll - 1] == '\r' || line[ll - 1] == ' ')) line[--ll] = '\0';
    if (!ll) continue;
    size_t un = 0;
    fg_render_utterance(line, ll, NULL, 0, &un);
    char *u = malloc(un + 1);
    fg_render_utterance(line, ll, u, un + 1, &un);
    size_t n_ids = 0;
    int32_t *ids = tokenize_alloc(b->model, u, un, 0, &n_ids);
    free(u);
    if (!ids) continue;
    double best = 1e30;
    for (uint32_t r = 0; r < b->reps; r++) {
      double t1 = cli_now();
      int32_t next;
      fg_session_restore(s, snap);
      fg_session_prefill(s, ids, n_ids, &next);
      for (int k = 1; k < 16; k++) fg_session_step(s, next, &next); /* 16 tokens: 1 from the chunk + 15 steps */
      double dt = cli_now() - t1;
      if (dt < best) best = dt;
    }
    lat[n++] = best * 1e3;
    tok_sum += n_ids;
    free(ids);
    char what[64];
    snprintf(what, sizeof what, "NLU: utterance %zu", n);
    progress(b, what);
  }
  out->n = n;
  out->chunk_tokens_avg = n ? (double)tok_sum / (double)n : 0;
  qsort(lat, n, sizeof lat[0], cmp_d);
  out->p50_ms = n ? lat[(n - 1) / 2] : 0;
  out->p95_ms = n ? lat[(size_t)((double)(n - 1) * 0.95 + 0.5)] : 0;

  /* start-up: load the model and get to the prefix state, without and with a persisted snapshot */
  progress(b, "NLU: start-up");
  char snap_path[4096];
  snprintf(snap_path, sizeof snap_path, "%s.bench.fgsnap", model_path);
  if (fg_snapshot_save(snap, snap_path, NULL) == FG_OK) {
    double t2 = cli_now();
    fg_model *m2 = NULL;
    fg_snapshot *ls = NULL;
    fg_session *s2 = NULL;
    if (fg_model_load(model_path, cli_model_params(), &m2, NULL) == FG_OK && fg_snapshot_load(m2, snap_path, &ls, NULL) == FG_OK &&
        fg_session_fork(ls, &b->sp, &s2, NULL) == FG_OK)
      out->ready_warm_s = cli_now() - t2;
    fg_session_free(s2);
    fg_snapshot_free(ls);
    fg_model_free(m2);
    remove(snap_path);
  }
  {
    double t3 = cli_now();
    fg_model *m3 = NULL;
    fg_session *s3 = NULL;
    if (fg_model_load(model_path, cli_model_params(), &m3, NULL) == FG_OK && fg_session_create(m3, &b->sp, &s3, NULL) == FG_OK &&
        fg_session_prefill(s3, pids, n_prefix, NULL) == FG_OK)
      out->ready_cold_s = cli_now() - t3;
    fg_session_free(s3);
    fg_model_free(m3);
  }
done:
  fg_snapshot_free(snap);
  fg_session_free(s);
  free(pids);
  free(prefix);
  fg_catalog_free(c);
  free(json);
  free(text);
  return rc;
}

/* The same utterances through the NLU engine (fg_nlu_ask), with or without a constraint
 * (docs/CONSTRAINED.md) and speculation (docs/SPECULATION.md): each answer is a whole call (restore +
 * chunk + the call's tokens; with a constraint forced runs are jumped); best of reps for the times,
 * the weight passes and drafts of the last rep. */
typedef struct nlu_engine {
  bool run;
  uint32_t mode, speculate, max_tokens, max_draft;
  double p50_ms, p95_ms, decode_avg, full_avg, sparse_avg, forced_avg;
  size_t n;
  cli_spec_stats spec;
} nlu_engine;

static const char *mode_name(uint32_t mode) { return cli_constrained_name(mode); }

static int run_nlu_engine(bench_ctx *b, const char *tools, const char *utts, nlu_engine *out) {
  size_t jl, ul;
  char *json = cli_read_file(tools, &jl), *text = json ? cli_read_file(utts, &ul) : NULL;
  if (!text) return free(json), 1;
  fg_catalog *c = NULL;
  fg_error err = {0};
  if (fg_catalog_parse(json, jl, &c, &err) != FG_OK) return free(json), free(text), cli_error("%s: %s", tools, err.msg);
  fg_nlu_params np;
  fg_nlu_params_init(&np);
  np.session = b->sp;
  np.constrained = out->mode;
  np.speculate = out->speculate;
  np.max_tokens = out->max_tokens;
  np.max_draft = out->max_draft;
  np.flags = FG_NLU_NO_ANSWER_CACHE; /* a repetition would answer from the cache: every answer is a first one */
  fg_nlu *e = NULL;
  int rc = 0;
  progress(b, "NLU engine: catalog prefill");
  if (fg_nlu_create(b->model, c, &np, &e, &err) != FG_OK) {
    rc = cli_error("bench: %s", err.msg);
  } else {
    double lat[1024];
    size_t n = 0;
    double dec = 0, full = 0, sparse = 0, forced = 0;
    for (char *line = strtok(text, "\n"); line && n < 1024; line = strtok(NULL, "\n")) {
      size_t ll = strlen(line);
      while (ll && (line[ll - 1] == '\r' || line[ll - 1] == ' ')) line[--ll] = '\0';
      if (!ll) continue;
      double best = 1e30;
      fg_nlu_result r = {0};
      for (uint32_t k = 0; k < b->reps; k++) {
        double t1 = cli_now();
        if (fg_nlu_ask(e, line, ll, &r) != FG_OK) break;
        double dt = cli_now() - t1;
        if (dt < best) best = dt;
      }
      if (best >= 1e30) continue;
      lat[n++] = best * 1e3;
      cli_spec_add(&out->spec, &r);
      dec += r.decode_tokens;
      full += r.full_head_steps;
      sparse += r.sparse_head_steps;
      forced += r.forced_tokens;
      char what[64];
      snprintf(what, sizeof what, "NLU engine: utterance %zu", n);
      progress(b, what);
    }
    qsort(lat, n, sizeof lat[0], cmp_d);
    out->n = n;
    out->p50_ms = n ? lat[(n - 1) / 2] : 0;
    out->p95_ms = n ? lat[(size_t)((double)(n - 1) * 0.95 + 0.5)] : 0;
    const double dn = n ? (double)n : 1;
    out->decode_avg = dec / dn;
    out->full_avg = full / dn;
    out->sparse_avg = sparse / dn;
    out->forced_avg = forced / dn;
  }
  fg_nlu_free(e);
  fg_catalog_free(c);
  free(json);
  free(text);
  return rc;
}

int cmd_bench(int argc, char **argv) {
  static const cli_opt opts[] = {
      {"model", 'm', true, "GGUF file"},
      {"tools", 0, true, "catalog for the NLU scenario"},
      {"utterances", 0, true, "one utterance per line for the NLU scenario"},
      {"threads", 't', true, "worker threads (default: available cores)"},
      {"reps", 0, true, "repetitions per measurement; the median (prefill, chunk, decode) or best (NLU) counts (default 3)"},
      {"no-micro", 0, false, "skip the micro table"},
      {"constrained", 0, true, "call-or-text (default) | call-only | off: also run the utterances through the NLU engine (whole calls)"},
      {"speculate", 0, true, "on | off: speculation in that engine run (default on; implies an engine run)"},
      {"max-tokens", 0, true, "tokens per answer in that engine run (default 64; a constraint never cuts a call)"},
      {"max-draft", 0, true, "most drafted tokens per weight pass in that engine run (1..32, default 8)"},
      {"json", 0, false, "print one JSON object instead of the table"},
      HELP_OPT,
      {0}};
  cli_args a;
  if (cli_parse("bench", opts, argc - 1, argv + 1, &a)) return 2;
  if (cli_has(opts, &a, "help")) {
    cli_usage(stdout, "bench", "-m MODEL.gguf [--tools CATALOG.json --utterances FILE] [--threads N] [--json]",
              "Measures the NLU scenario (catalog prefix, then per utterance: restore + chunk + 16 decoded tokens;\n"
              "p50/p95; start-up to ready with and without a persisted snapshot) and the micro table: prefill\n"
              "tok/s at 64/512/843 tokens, a 36-token chunk at depth 880, decode tok/s at depth 0 and 880, and\n"
              "decode bandwidth (weight bytes read per token / time) against the machine's read bandwidth.\n"
              "--constrained MODE adds the NLU engine (call-or-text, the default, and call-only: constrained\n"
              "decoding; off: plain greedy): per utterance a whole answer (p50/p95, average tokens, and how they were chosen: full head,\n"
              "sparse head, forced), its weight passes after the utterance chunk (median/p95) and the drafts of\n"
              "speculation (accepted per weight pass, per source). --speculate on|off sets speculation for it\n"
              "(alone it runs the engine with the default call-or-text; the answer cache is off, so that repetitions\n"
              "measure first answers).", opts);
    return 0;
  }
  bench_ctx b = {0};
  cli_session_params_init(&b.sp);
  b.reps = 3;
  const char *v;
  if ((v = cli_get(opts, &a, "threads")) && !cli_u32("--threads", v, 1, 256, &b.sp.n_threads)) return 2;
  if ((v = cli_get(opts, &a, "reps")) && !cli_u32("--reps", v, 1, 1000, &b.reps)) return 2;
  const char *tools = cli_get(opts, &a, "tools"), *utts = cli_get(opts, &a, "utterances");
  if ((tools == NULL) != (utts == NULL)) return cli_error("bench: --tools and --utterances go together"), 2;
  /* fail before minutes of micro benchmarks, not after */
  if (tools && access(tools, R_OK) != 0) return cli_error("bench: cannot read %s", tools);
  if (utts && access(utts, R_OK) != 0) return cli_error("bench: cannot read %s", utts);
  nlu_engine ncon = {0};
  ncon.mode = FG_NLU_CONSTRAIN_CALL_OR_TEXT; /* the default of every surface (docs/OPTIONS.md) */
  if ((v = cli_get(opts, &a, "constrained"))) {
    if (!cli_constrained(v, &ncon.mode)) return 2;
    ncon.run = true;
  }
  if ((v = cli_get(opts, &a, "speculate"))) {
    if (!cli_speculate(v, &ncon.speculate)) return 2;
    ncon.run = true;
  }
  if ((v = cli_get(opts, &a, "max-tokens")) && !cli_u32("--max-tokens", v, 1, 1u << 16, &ncon.max_tokens)) return 2;
  if ((v = cli_get(opts, &a, "max-draft")) && !cli_u32("--max-draft", v, 1, 32, &ncon.max_draft)) return 2;
  if (ncon.run && !tools) return cli_error("bench: --constrained and --speculate need --tools and --utterances"), 2;
  const char *path = cli_get(opts, &a, "model");
  if (!path) path = getenv("FGEMMA_MODEL");
  double tl = cli_now();
  b.model = cli_load_model(path);
  if (!b.model) return 1;
  tl = cli_now() - tl;
  fg_model_get_info(b.model, &b.info);
  b.progress = cli_stderr_is_tty();
  const bool json = cli_has(opts, &a, "json");
  const uint32_t threads = b.sp.n_threads ? b.sp.n_threads : 0;

  double pf[3] = {0}, chunk = 0, dec0 = 0, dec880 = 0, bw = 0;
  const uint32_t pf_n[3] = {64, 512, 843};
  if (!cli_has(opts, &a, "no-micro")) {
    for (int i = 0; i < 3; i++) {
      char what[64];
      snprintf(what, sizeof what, "prefill %u", pf_n[i]);
      progress(&b, what);
      pf[i] = time_prefill(&b, pf_n[i]);
    }
    progress(&b, "chunk 36 at depth 880");
    chunk = time_chunk(&b, 880, 36);
    progress(&b, "decode at depth 0");
    dec0 = time_decode(&b, 0);
    progress(&b, "decode at depth 880");
    dec880 = time_decode(&b, 880);
    progress(&b, "memory read bandwidth");
    bw = read_bandwidth(threads ? threads : 2);
  }
  nlu_numbers nlu = {0};
  int rc = 0;
  if (tools) rc = run_nlu(&b, path, tools, utts, &nlu);
  if (tools && ncon.run && !rc) rc = run_nlu_engine(&b, tools, utts, &ncon);
  const bool nlu_ok = tools && rc == 0; /* a failed NLU run prints its error, not a table of zeros */
  if (b.progress) fputs("\r\033[K", stderr);
  const double gb_tok = (double)b.info.decode_bytes / 1e9;
  if (json) {
    printf("{\"model\":");
    cli_json_str(stdout, b.info.name, strlen(b.info.name));
    printf(",\"type\":\"%s\",\"head\":\"%s\",\"threads\":%u,\"load_s\":%.4f", fg_type_name(b.info.weight_type),
           fg_type_name(b.info.head_type), threads, tl);
    printf(",\"prefill_tok_s\":{\"64\":%.1f,\"512\":%.1f,\"843\":%.1f}", pf[0] ? 64 / pf[0] : 0, pf[1] ? 512 / pf[1] : 0,
           pf[2] ? 843 / pf[2] : 0);
    printf(",\"chunk36_at_880_tok_s\":%.1f,\"chunk36_at_880_ms\":%.2f", chunk ? 36 / chunk : 0, chunk * 1e3);
    printf(",\"decode_tok_s\":{\"0\":%.2f,\"880\":%.2f}", dec0 ? 1 / dec0 : 0, dec880 ? 1 / dec880 : 0);
    printf(",\"decode_gb_s\":%.2f,\"read_gb_s\":%.2f,\"decode_bytes_per_token\":%llu", dec0 ? gb_tok / dec0 : 0, bw,
           (unsigned long long)b.info.decode_bytes);
    if (nlu_ok)
      printf(",\"nlu\":{\"prefix_tokens\":%u,\"prefix_ms\":%.1f,\"utterances\":%zu,\"chunk_tokens_avg\":%.1f,"
             "\"p50_ms\":%.2f,\"p95_ms\":%.2f,\"ready_cold_ms\":%.1f,\"ready_snapshot_ms\":%.1f}",
             nlu.prefix_tokens, nlu.prefix_s * 1e3, nlu.n, nlu.chunk_tokens_avg, nlu.p50_ms, nlu.p95_ms,
             nlu.ready_cold_s * 1e3, nlu.ready_warm_s * 1e3);
    if (nlu_ok && ncon.run) {
      printf(",\"nlu_engine\":{\"mode\":\"%s\",\"speculate\":%s,\"utterances\":%zu,\"p50_ms\":%.1f,\"p95_ms\":%.1f,"
             "\"decode_tokens_avg\":%.1f,\"full_head_avg\":%.1f,\"sparse_head_avg\":%.1f,\"forced_avg\":%.1f,",
             mode_name(ncon.mode), ncon.speculate == FG_NLU_SPECULATE_OFF ? "false" : "true", ncon.n, ncon.p50_ms,
             ncon.p95_ms, ncon.decode_avg, ncon.full_avg, ncon.sparse_avg, ncon.forced_avg);
      cli_spec_json(stdout, &ncon.spec);
      printf("}");
    }
    printf("}\n");
  } else {
    char th[32];
    if (threads)
      snprintf(th, sizeof th, "%u", threads);
    else
      snprintf(th, sizeof th, "default");
    printf("model %s (%s, head %s), threads %s, load %.1f ms\n", b.info.name, fg_type_name(b.info.weight_type),
           fg_type_name(b.info.head_type), th, tl * 1e3);
    if (!cli_has(opts, &a, "no-micro")) {
      printf("prefill 64 / 512 / 843      %8.1f / %.1f / %.1f tok/s\n", 64 / pf[0], 512 / pf[1], 843 / pf[2]);
      printf("chunk 36 @ 880              %8.1f tok/s (%.1f ms)\n", 36 / chunk, chunk * 1e3);
      printf("decode @ 0 / @ 880          %8.2f / %.2f tok/s\n", 1 / dec0, 1 / dec880);
      printf("decode bandwidth            %8.2f GB/s of %.2f GB/s measured read bandwidth (%.0f%%)\n", gb_tok / dec0, bw,
             bw > 0 ? 100 * gb_tok / dec0 / bw : 0);
    }
    if (nlu_ok) {
      printf("NLU prefix                  %8u tokens in %.1f ms\n", nlu.prefix_tokens, nlu.prefix_s * 1e3);
      printf("NLU per utterance           p50 %.1f ms, p95 %.1f ms (%zu utterances, %.1f chunk tokens avg, 16 decoded)\n",
             nlu.p50_ms, nlu.p95_ms, nlu.n, nlu.chunk_tokens_avg);
      printf("start-up to ready           %8.1f ms cold (load + prefill), %.1f ms with a persisted snapshot\n",
             nlu.ready_cold_s * 1e3, nlu.ready_warm_s * 1e3);
      if (ncon.run) {
        printf("NLU engine (%s, speculation %s)  p50 %.1f ms, p95 %.1f ms per whole answer (%.1f tokens avg: %.1f full "
               "head, %.1f sparse head, %.1f forced)\n",
               mode_name(ncon.mode), ncon.speculate == FG_NLU_SPECULATE_OFF ? "off" : "on", ncon.p50_ms, ncon.p95_ms,
               ncon.decode_avg, ncon.full_avg, ncon.sparse_avg, ncon.forced_avg);
        cli_spec_print(stdout, "  ", &ncon.spec);
      }
    }
  }
  cli_spec_free(&ncon.spec);
  fg_model_free(b.model);
  return rc;
}
