/* cmd_perplexity.c — `fgemma perplexity`: perplexity of a model over a text file, in windows, through
 * the public session API (the same definition as tests/oracle/real_perplexity.mjs computes with
 * llama.cpp; docs/ORACLES.md "The real model"). */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// Windows
//
// The text is tokenized without <bos> (control-token text is parsed, as `fgemma tokenize` does) and
// cut to the first --tokens ids (default: all), n ids t[0..n). A window holds <bos> and up to ctx - 1
// text ids: window k covers t[k*stride .. min(k*stride + ctx - 1, n)). In every window the ids that no
// earlier window scored are scored: t[j] is predicted by the logits after <bos> t[start..j-1]. The
// last window is the first that reaches t[n-1]; so every id is scored exactly once, and with
// stride < ctx - 1 each one (after the first window) sees at least ctx - 1 - stride ids of context.
// perplexity = exp(sum of -log softmax(logits)[t[j]] / n), log-softmax in double.

typedef struct ppl_result {
  double nll;           /* sum of -log p over the scored ids */
  size_t n_scored;
  size_t n_windows;
  size_t n_fed;         /* positions run through the model (<bos> included) */
  double max_nll;       /* the least likely id's -log p */
  size_t max_nll_at;    /* its index in the text */
} ppl_result;

/* -log softmax(logits)[target] in double. */
static double neg_log_prob(const float *logits, uint32_t n_vocab, int32_t target) {
  float mx = logits[0];
  for (uint32_t i = 1; i < n_vocab; i++)
    if (logits[i] > mx) mx = logits[i];
  double sum = 0.0;
  for (uint32_t i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - (double)mx);
  return (double)mx + log(sum) - (double)logits[target];
}

/* Scores ids[0..n) (see above) on session s, which starts at the snapshot `start` (just <bos>). */
static fg_status run_windows(fg_session *s, const fg_snapshot *start, uint32_t n_vocab, const int32_t *ids,
                             size_t n, size_t ctx, size_t stride, ppl_result *r) {
  memset(r, 0, sizeof *r);
  size_t scored_to = 0; /* ids[0..scored_to) are scored */
  for (size_t w0 = 0; scored_to < n; w0 += stride) {
    const size_t end = w0 + ctx - 1 < n ? w0 + ctx - 1 : n;
    fg_status st = fg_session_restore(s, start);
    if (st != FG_OK) return st;
    r->n_windows++;
    r->n_fed++; /* <bos> */
    /* context that an earlier window scored: one prefill, no logits needed */
    if (scored_to > w0) {
      st = fg_session_prefill(s, ids + w0, scored_to - w0, NULL);
      if (st != FG_OK) return st;
      r->n_fed += scored_to - w0;
    }
    for (size_t j = scored_to; j < end; j++) {
      const float *logits = fg_session_logits(s);
      if (!logits) return FG_ERR_INTERNAL;
      const double nl = neg_log_prob(logits, n_vocab, ids[j]);
      r->nll += nl;
      r->n_scored++;
      if (nl > r->max_nll) r->max_nll = nl, r->max_nll_at = j;
      if (j + 1 < end) {
        st = fg_session_step(s, ids[j], NULL);
        if (st != FG_OK) return st;
        r->n_fed++;
      }
    }
    scored_to = end;
  }
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------
// Command

int cmd_perplexity(int argc, char **argv) {
  static const cli_opt opts[] = {
      {"model", 'm', true, "GGUF file with tokenizer metadata"},
      {"text", 0, true, "the text file ('-' = standard input; required)"},
      {"n-ctx", 0, true, "window size in positions, <bos> included (default 512)"},
      {"stride", 0, true, "text ids between window starts (default ctx - 1: windows do not overlap)"},
      {"tokens", 0, true, "score only the first N ids of the text (default: all)"},
      {"threads", 't', true, "worker threads (default: available cores)"},
      {"json", 0, false, "one JSON object instead of text"},
      {"help", 'h', false, "show this help"},
      {0}};
  cli_args a;
  if (cli_parse("perplexity", opts, argc - 1, argv + 1, &a)) return 2;
  if (cli_has(opts, &a, "help")) {
    cli_usage(stdout, "perplexity", "-m MODEL.gguf --text FILE [--n-ctx N] [--stride S] [--tokens N] [--threads N] [--json]",
              "Perplexity of the model over a text, in windows. The text is tokenized without <bos> (control-\n"
              "token text is parsed); each window is <bos> plus up to ctx - 1 text ids, and windows start\n"
              "stride ids apart. Every id is scored exactly once, in the first window that holds it: -log\n"
              "softmax(logits)[id] in double, from the logits after <bos> and the window's ids before it (ids\n"
              "an earlier window scored are fed as context). perplexity = exp(mean). Runs the session path:\n"
              "one prefill per window's context, then one step per scored id.",
              opts);
    return 0;
  }
  if (a.n_pos != 0) return cli_error("perplexity: unexpected argument '%s'", a.pos[0]), 2;
  const char *text_path = cli_get(opts, &a, "text");
  if (!text_path) return cli_error("perplexity: --text FILE is required"), 2;
  uint32_t ctx = 512, stride = 0, max_tokens = 0;
  const char *v;
  if ((v = cli_get(opts, &a, "n-ctx")) && !cli_u32("--n-ctx", v, 2, 1u << 20, &ctx)) return 2;
  if ((v = cli_get(opts, &a, "stride")) && !cli_u32("--stride", v, 1, 1u << 20, &stride)) return 2;
  if (!stride) stride = ctx - 1;
  if (stride > ctx - 1) return cli_error("--stride: %u is larger than ctx - 1 = %u (ids would be skipped)", stride, ctx - 1), 2;
  if ((v = cli_get(opts, &a, "tokens")) && !cli_u32("--tokens", v, 1, UINT32_MAX, &max_tokens)) return 2;
  fg_session_params sp;
  cli_session_params_init(&sp);
  sp.n_ctx = ctx;
  if ((v = cli_get(opts, &a, "threads")) && !cli_u32("--threads", v, 1, 256, &sp.n_threads)) return 2;
  const bool json = cli_has(opts, &a, "json");

  size_t text_len = 0;
  char *text = cli_read_file(text_path, &text_len);
  if (!text) return 1;
  fg_model *m = cli_load_model(cli_get(opts, &a, "model"));
  if (!m) return free(text), 1;
  fg_model_info info;
  fg_model_get_info(m, &info);

  int rc = 0;
  int32_t *ids = NULL, bos = -1;
  size_t n = 0, n_bos = 0;
  fg_session *s = NULL;
  fg_snapshot *start = NULL;
  fg_status st = fg_tokenize(m, text, text_len, 0, NULL, 0, &n);
  if (st == FG_OK || st == FG_ERR_BUFFER_TOO_SMALL) {
    ids = malloc((n ? n : 1) * sizeof *ids);
    st = ids ? fg_tokenize(m, text, text_len, 0, ids, n, &n) : FG_ERR_NOMEM;
  }
  if (st == FG_OK) st = fg_tokenize(m, "", 0, FG_TOKENIZE_ADD_BOS, &bos, 1, &n_bos);
  if (st != FG_OK) {
    rc = cli_status_error(st, "tokenize", st == FG_ERR_UNSUPPORTED ? "the model has no tokenizer metadata" : "");
  } else if (n_bos != 1) {
    rc = cli_error("perplexity: the model's tokenizer adds no <bos>");
  } else if (n == 0) {
    rc = cli_error("perplexity: %s holds no tokens", text_path);
  }
  if (!rc && max_tokens && max_tokens < n) n = max_tokens;

  ppl_result r = {0};
  const double t0 = cli_now();
  if (!rc) {
    fg_error err = {0};
    st = fg_session_create(m, &sp, &s, &err);
    if (st != FG_OK) rc = cli_status_error(st, "cannot create a session", err.msg);
  }
  if (!rc) {
    st = fg_session_prefill(s, &bos, 1, NULL);
    if (st == FG_OK) st = fg_session_snapshot(s, &start);
    if (st == FG_OK) st = run_windows(s, start, info.n_vocab, ids, n, ctx, stride, &r);
    if (st != FG_OK) rc = cli_status_error(st, "perplexity", fg_session_errmsg(s));
  }
  const double secs = cli_now() - t0;
  if (!rc) {
    const double ppl = exp(r.nll / (double)r.n_scored);
    if (json) {
      printf("{\"perplexity\":%.9g,\"nll\":%.17g,\"tokens\":%zu,\"text_tokens\":%zu,\"windows\":%zu,\"ctx\":%u,"
             "\"stride\":%u,\"positions\":%zu,\"max_nll\":%.9g,\"max_nll_at\":%zu,\"threads\":%u,\"seconds\":%.3f}\n",
             ppl, r.nll, r.n_scored, n, r.n_windows, ctx, stride, r.n_fed, r.max_nll, r.max_nll_at, sp.n_threads,
             secs);
    } else {
      printf("perplexity %.6f over %zu tokens (%zu windows of up to %u positions, stride %u; %zu positions run)\n",
             ppl, r.n_scored, r.n_windows, ctx, stride, r.n_fed);
      printf("mean -log p %.6f, largest %.3f at token %zu; %.2f s, %.1f scored tokens/s\n", r.nll / (double)r.n_scored,
             r.max_nll, r.max_nll_at, secs, (double)r.n_scored / (secs > 0 ? secs : 1e-9));
    }
    if (fflush(stdout) != 0 || ferror(stdout)) rc = cli_error("perplexity: cannot write the output");
  }
  fg_snapshot_free(start);
  fg_session_free(s);
  fg_model_free(m);
  free(ids);
  free(text);
  return rc;
}
