/* cmd_eval.c — `fgemma eval`: how closely a model (a weight type, a replacement head) follows its F32
 * reference. Both models read the same tokens on the session path (teacher forcing), and at every
 * measured position the two next-token logit vectors are compared: cosine similarity, top-1 agreement
 * (argmax equal) and top-10 overlap (|top10 ∩ top10_ref| / 10).
 *
 * The fixed prompt set (documented in docs/PERFORMANCE.md, "Quality per type and head"):
 *   prefix     the small TV catalog (shared/data/tv-catalog-small.json, embedded below) rendered as the
 *              FunctionGemma developer turn, with <bos>; fed in chunks of 32, measured after each chunk;
 *   utterance  each of the 12 German utterances (shared/data/utterances-de.txt, embedded below) rendered
 *              as a user turn after the prefix snapshot; measured after every token;
 *   answer     then 16 tokens chosen greedily by the reference and fed to both; measured after each.
 * --catalog / --utterances replace the embedded texts.
 *
 * Also here: eval --text (next-token agreement over a text, several models against one reference).
 * eval --calls (call accuracy on a labelled set) is in cmd_eval_calls.c. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


// ----------------------------------------------------------------------------------------------
// The fixed prompt set

static const char k_catalog[] =
    "{\"id\":\"tv-voice-small.v1\",\"languages\":[\"de\",\"en\"],\"functions\":["
    "{\"name\":\"switch_channel\",\"description\":\"Switch to a live TV channel.\",\"parameters\":{\"channel\":"
    "{\"type\":\"string\",\"description\":\"Channel name, e.g. ARD or ZDF.\"},\"number\":{\"type\":\"integer\","
    "\"description\":\"Channel number.\"}}},"
    "{\"name\":\"set_volume\",\"description\":\"Set or change the volume.\",\"parameters\":{\"level\":{\"type\":"
    "\"integer\",\"description\":\"Volume 0 to 100.\"},\"direction\":{\"type\":\"string\",\"description\":"
    "\"Relative change.\",\"enum\":[\"up\",\"down\"]},\"steps\":{\"type\":\"integer\",\"description\":"
    "\"Steps to change.\"}}},"
    "{\"name\":\"mute\",\"description\":\"Mute or unmute.\",\"parameters\":{\"state\":{\"type\":\"string\","
    "\"description\":\"Mute state.\",\"enum\":[\"on\",\"off\"]}},\"required\":[\"state\"]},"
    "{\"name\":\"playback_control\",\"description\":\"Control playback.\",\"parameters\":{\"action\":{\"type\":"
    "\"string\",\"description\":\"Playback action.\",\"enum\":[\"pause\",\"play\",\"stop\",\"forward\",\"rewind\","
    "\"restart\"]},\"seconds\":{\"type\":\"integer\",\"description\":\"Seconds to jump.\"}},\"required\":"
    "[\"action\"]},"
    "{\"name\":\"search_content\",\"description\":\"Search films, series and people.\",\"parameters\":{\"query\":"
    "{\"type\":\"string\",\"description\":\"What to search for.\"},\"kind\":{\"type\":\"string\",\"description\":"
    "\"Kind of content.\",\"enum\":[\"movie\",\"series\",\"show\",\"person\",\"any\"]}},\"required\":[\"query\"]},"
    "{\"name\":\"open_app\",\"description\":\"Open an app.\",\"parameters\":{\"app\":{\"type\":\"string\","
    "\"description\":\"App name.\"}},\"required\":[\"app\"]},"
    "{\"name\":\"record_program\",\"description\":\"Record a program.\",\"parameters\":{\"channel\":{\"type\":"
    "\"string\",\"description\":\"Channel.\"},\"title\":{\"type\":\"string\",\"description\":\"Program title.\"},"
    "\"start\":{\"type\":\"string\",\"description\":\"Start time HH:MM or now.\"}}},"
    "{\"name\":\"set_reminder\",\"description\":\"Remind before a program starts.\",\"parameters\":{\"title\":"
    "{\"type\":\"string\",\"description\":\"Program title.\"},\"channel\":{\"type\":\"string\",\"description\":"
    "\"Channel.\"},\"minutes_before\":{\"type\":\"integer\",\"description\":\"Minutes before start.\"}},"
    "\"required\":[\"title\"]},"
    "{\"name\":\"show_guide\",\"description\":\"Show the program guide.\",\"parameters\":{\"channel\":{\"type\":"
    "\"string\",\"description\":\"Channel, or all.\"},\"day\":{\"type\":\"string\",\"description\":\"Day.\","
    "\"enum\":[\"today\",\"tomorrow\",\"weekend\"]},\"time\":{\"type\":\"string\",\"description\":"
    "\"Time HH:MM or now.\"}}},"
    "{\"name\":\"set_subtitles\",\"description\":\"Turn subtitles on or off.\",\"parameters\":{\"state\":{\"type\":"
    "\"string\",\"description\":\"Subtitle state.\",\"enum\":[\"on\",\"off\"]},\"language\":{\"type\":\"string\","
    "\"description\":\"Subtitle language.\"}},\"required\":[\"state\"]}]}";

static const char *const k_utterances[] = {
    "Schalte auf ZDF um",
    "Mach bitte etwas lauter",
    "Ton aus",
    "Nimm heute Abend den Tatort um 20:15 im Ersten auf",
    "Suche nach Filmen mit Til Schweiger",
    "\xc3\x96" "ffne Netflix",
    "Was l\xc3\xa4uft gerade auf ProSieben?",
    "Erinnere mich f\xc3\xbcnf Minuten vor der Tagesschau",
    "Untertitel auf Englisch bitte",
    "Spul drei\xc3\x9fig Sekunden zur\xc3\xbc" "ck",
    "Schalte den Fernseher in einer Stunde aus",
    "Zeig mir das Programm f\xc3\xbcr morgen Abend",
};

#define EVAL_PREFIX_CHUNK 32u
#define EVAL_TOPK 10

// ----------------------------------------------------------------------------------------------
// Metrics

enum { G_PREFIX = 0, G_UTTER = 1, G_ANSWER = 2, G_ALL = 3, G_COUNT = 4 };
static const char *const k_group_names[G_COUNT] = {"prefix", "utterance", "answer", "all"};

typedef struct eval_acc {
  uint64_t n;
  double sum_cos, min_cos;
  uint64_t top1;
  uint64_t top10; /* sum of overlaps (0..10 per position) */
  double sum_kl, max_kl; /* KL(reference || model) of the next-token distributions, nats */
} eval_acc;

/* KL(P || Q) in nats of the softmax distributions P of logits ref and Q of logits a */
static double kl_div(const float *a, const float *ref, size_t n) {
  double ma = -INFINITY, mr = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    ma = fmax(ma, a[i]);
    mr = fmax(mr, ref[i]);
  }
  double za = 0.0, zr = 0.0, s = 0.0;
  for (size_t i = 0; i < n; i++) {
    za += exp((double)a[i] - ma);
    const double er = exp((double)ref[i] - mr);
    zr += er;
    s += er * ((double)ref[i] - (double)a[i]);
  }
  /* sum p (lr - la) with lr = ref - mr - log zr, la = a - ma - log za */
  const double kl = s / zr - (mr + log(zr)) + (ma + log(za));
  return kl > 0.0 ? kl : 0.0; /* rounding can leave -1e-16 */
}

/* Indices of the k largest values, largest first (first index on ties). */
static void topk(const float *x, size_t n, int32_t *idx, int k) {
  float val[EVAL_TOPK];
  int have = 0;
  for (size_t i = 0; i < n; i++) {
    if (have == k && !(x[i] > val[k - 1])) continue;
    int j = have < k ? have++ : k - 1;
    while (j > 0 && x[i] > val[j - 1]) {
      val[j] = val[j - 1];
      idx[j] = idx[j - 1];
      j--;
    }
    val[j] = x[i];
    idx[j] = (int32_t)i;
  }
}

static void compare(const float *a, const float *ref, size_t n, eval_acc *groups, int g) {
  double dot = 0.0, na = 0.0, nr = 0.0;
  for (size_t i = 0; i < n; i++) {
    dot += (double)a[i] * ref[i];
    na += (double)a[i] * a[i];
    nr += (double)ref[i] * ref[i];
  }
  const double cos = (na > 0.0 && nr > 0.0) ? dot / (sqrt(na) * sqrt(nr)) : (na == nr ? 1.0 : 0.0);
  int32_t ta[EVAL_TOPK], tr[EVAL_TOPK];
  topk(a, n, ta, EVAL_TOPK);
  topk(ref, n, tr, EVAL_TOPK);
  int overlap = 0;
  for (int i = 0; i < EVAL_TOPK; i++)
    for (int j = 0; j < EVAL_TOPK; j++) overlap += ta[i] == tr[j];
  const double kl = kl_div(a, ref, n);
  const int gs[2] = {g, G_ALL};
  for (int k = 0; k < 2 && groups; k++) {
    eval_acc *e = &groups[gs[k]];
    e->sum_kl += kl;
    e->max_kl = fmax(e->max_kl, kl);
    e->min_cos = e->n == 0 ? cos : fmin(e->min_cos, cos);
    e->n++;
    e->sum_cos += cos;
    e->top1 += ta[0] == tr[0];
    e->top10 += (uint64_t)overlap;
  }
}

// ----------------------------------------------------------------------------------------------
// Helpers

/* Tokenizes text into a malloc'd array. */
static fg_status tokenize(const fg_model *m, const char *text, size_t len, uint32_t flags, int32_t **ids, size_t *n) {
  size_t need = 0;
  fg_status st = fg_tokenize(m, text, len, flags, NULL, 0, &need);
  if (st != FG_OK && st != FG_ERR_BUFFER_TOO_SMALL) return st;
  *ids = malloc((need ? need : 1) * sizeof **ids);
  if (!*ids) return FG_ERR_NOMEM;
  st = fg_tokenize(m, text, len, flags, *ids, need, n);
  if (st != FG_OK) free(*ids), *ids = NULL;
  return st;
}

/* The F32 sibling of a typed file: ".../NAME-q8_0.gguf" -> ".../NAME-f32.gguf". */
static bool sibling_f32(const char *path, char *out, size_t cap) {
  static const char *const k_types[] = {"-q8_0.gguf", "-q4_0.gguf", "-bf16.gguf", "-f16.gguf", "-f32.gguf"};
  const size_t n = strlen(path);
  for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++) {
    const size_t k = strlen(k_types[i]);
    if (n >= k && strcmp(path + n - k, k_types[i]) == 0 && n - k + 10 < cap) {
      memcpy(out, path, n - k);
      memcpy(out + n - k, "-f32.gguf", 10);
      return true;
    }
  }
  return false;
}

typedef struct eval_ctx {
  fg_session *s, *r;     /* model under test, reference */
  size_t n_vocab;
  eval_acc acc[G_COUNT];
  uint64_t done, total;  /* measured positions, for the progress line */
  bool tty;
  double t0;
} eval_ctx;

static void progress(eval_ctx *c) {
  if (!c->tty) return;
  const eval_acc *a = &c->acc[G_ALL];
  fprintf(stderr, "\reval: %llu/%llu positions, cos %.6f, top-1 %.1f%%, %.0f s   ", (unsigned long long)c->done,
          (unsigned long long)c->total, a->n ? a->sum_cos / (double)a->n : 1.0,
          a->n ? 100.0 * (double)a->top1 / (double)a->n : 100.0, cli_now() - c->t0);
}

/* Feeds ids to both sessions and compares the logits after the last one. */
static int feed(eval_ctx *c, const int32_t *ids, size_t n, int group) {
  fg_status st = fg_session_prefill(c->s, ids, n, NULL);
  if (st != FG_OK) return cli_status_error(st, "eval: model", fg_session_errmsg(c->s));
  st = fg_session_prefill(c->r, ids, n, NULL);
  if (st != FG_OK) return cli_status_error(st, "eval: reference", fg_session_errmsg(c->r));
  compare(fg_session_logits(c->s), fg_session_logits(c->r), c->n_vocab, c->acc, group);
  c->done++;
  if (c->done % 8 == 0) progress(c);
  return 0;
}

// ----------------------------------------------------------------------------------------------
// eval --text: next-token agreement over a text, several models against one reference

static int eval_text(const cli_opt *opts, const cli_args *a, const char *models_arg, const char *ref_path,
                     const fg_session_params *sp) {
  uint32_t n_pos = 512;
  if (cli_get(opts, a, "positions") && !cli_u32("--positions", cli_get(opts, a, "positions"), 1, 1u << 20, &n_pos))
    return 2;
  char *models_buf = strdup(models_arg), *paths[64];
  if (!models_buf) return cli_error("eval: out of memory");
  size_t n_models = cli_split_list(models_buf, paths, 64);
  size_t text_len = 0;
  char *text = cli_read_file(cli_get(opts, a, "text"), &text_len);
  int rc = text ? 0 : 1;
  fg_model *ref = NULL, *ms[64] = {0};
  fg_session *r = NULL, *ss[64] = {0};
  eval_acc acc[64];
  memset(acc, 0, sizeof acc);
  int32_t *ids = NULL;
  size_t n_ids = 0;
  fg_error err = {0};
  fg_status st;
  if (!rc && (st = fg_model_load(ref_path, cli_reference_params(), &ref, &err)) != FG_OK) rc = cli_status_error(st, "cannot load the reference", err.msg);
  fg_model_info ri, mi;
  if (!rc) fg_model_get_info(ref, &ri);
  for (size_t i = 0; i < n_models && !rc; i++) {
    if (!(ms[i] = cli_load_model(paths[i]))) rc = 1;
    else {
      fg_model_get_info(ms[i], &mi);
      if (mi.n_vocab != ri.n_vocab || mi.n_embd != ri.n_embd || mi.n_layer != ri.n_layer)
        rc = cli_error("eval: %s and the reference %s have different shapes", paths[i], ref_path);
    }
  }
  if (!rc && !ri.has_vocab) rc = cli_error("eval: %s has no tokenizer metadata (--text is text)", ref_path);
  if (!rc && (st = tokenize(ref, text, text_len, FG_TOKENIZE_ADD_BOS, &ids, &n_ids)) != FG_OK)
    rc = cli_status_error(st, "eval: tokenize", "");
  if (!rc && n_ids < 2) rc = cli_error("eval: the text has no tokens");
  const size_t n = !rc ? (n_ids - 1 < n_pos ? n_ids - 1 : n_pos) : 0; /* positions measured: after ids[0..n) */
  fg_session_params p = *sp;
  if (p.n_ctx == 0 || p.n_ctx < n + 1) p.n_ctx = (uint32_t)n + 1;
  if (!rc && (st = fg_session_create(ref, &p, &r, NULL)) != FG_OK) rc = cli_status_error(st, "eval: session", "");
  for (size_t i = 0; i < n_models && !rc; i++)
    if ((st = fg_session_create(ms[i], &p, &ss[i], NULL)) != FG_OK) rc = cli_status_error(st, "eval: session", "");
  const bool tty = !cli_has(opts, a, "json") && cli_stderr_is_tty();
  const double t0 = cli_now();
  for (size_t k = 0; k < n && !rc; k++) {
    if ((st = fg_session_prefill(r, ids + k, 1, NULL)) != FG_OK) {
      rc = cli_status_error(st, "eval: reference", fg_session_errmsg(r));
      break;
    }
    for (size_t i = 0; i < n_models && !rc; i++) {
      if ((st = fg_session_prefill(ss[i], ids + k, 1, NULL)) != FG_OK) {
        rc = cli_status_error(st, "eval: model", fg_session_errmsg(ss[i]));
        break;
      }
      eval_acc g[G_COUNT];
      memset(g, 0, sizeof g);
      compare(fg_session_logits(ss[i]), fg_session_logits(r), ri.n_vocab, g, G_PREFIX);
      eval_acc *e = &acc[i];
      e->min_cos = e->n == 0 ? g[0].min_cos : fmin(e->min_cos, g[0].min_cos);
      e->n++;
      e->sum_cos += g[0].sum_cos;
      e->top1 += g[0].top1;
      e->top10 += g[0].top10;
      e->sum_kl += g[0].sum_kl;
      e->max_kl = fmax(e->max_kl, g[0].max_kl);
    }
    if (tty && (k % 8 == 7 || k + 1 == n))
      fprintf(stderr, "\reval: %zu/%zu positions, %.0f s   ", k + 1, n, cli_now() - t0);
  }
  if (tty) fputc('\n', stderr);
  if (!rc) {
    const bool json = cli_has(opts, a, "json");
    if (json) {
      printf("{\"reference\":");
      cli_json_str(stdout, ref_path, strlen(ref_path));
      printf(",\"positions\":%zu,\"models\":[", n);
    } else {
      printf("reference  %s (weights %s), %zu positions of %s\n\n", ref_path, fg_type_name(ri.weight_type), n,
             cli_get(opts, a, "text"));
      printf("%-48s %12s %12s %8s %9s %12s\n", "model", "mean KL", "max KL", "top-1", "top-10", "mean cos");
    }
    for (size_t i = 0; i < n_models; i++) {
      const eval_acc *e = &acc[i];
      const double d = e->n ? (double)e->n : 1.0;
      if (json) {
        printf("%s{\"model\":", i ? "," : "");
        cli_json_str(stdout, paths[i], strlen(paths[i]));
        printf(",\"mean_kl\":%.9g,\"max_kl\":%.9g,\"top1\":%.6f,\"top10\":%.6f,\"mean_cos\":%.9f}", e->sum_kl / d,
               e->max_kl, (double)e->top1 / d, (double)e->top10 / (10.0 * d), e->sum_cos / d);
      } else {
        printf("%-48s %12.6f %12.6f %7.2f%% %8.2f%% %12.6f\n", paths[i], e->sum_kl / d, e->max_kl,
               100.0 * (double)e->top1 / d, 100.0 * (double)e->top10 / (10.0 * d), e->sum_cos / d);
      }
    }
    if (json) printf("]}\n");
    else printf("\n%zu positions x %zu models in %.1f s\n", n, n_models, cli_now() - t0);
  }
  fg_session_free(r);
  for (size_t i = 0; i < n_models; i++) fg_session_free(ss[i]), fg_model_free(ms[i]);
  fg_model_free(ref);
  free(ids);
  free(text);
  free(models_buf);
  return rc;
}

// ----------------------------------------------------------------------------------------------
// eval

static void eval_usage(const cli_opt *opts) {
  cli_usage(stdout, "eval",
            "-m MODEL.gguf [--reference MODEL_F32.gguf] [--head-type q8_0|q4_0] [--json]\n"
            "       fgemma eval --text FILE.txt -m M1.gguf[,M2.gguf...] --reference F32.gguf [--positions N] [--json]\n"
            "       fgemma eval --calls DATA.jsonl --tools CATALOG.json -m M1.gguf[,M2.gguf...] [--heads file,q8_0]\n"
            "                   [--constrained off,call-only,call-or-text] [--speculate on|off] [--details FILE.jsonl]\n"
            "                   [--every N] [--json]",
            "Logit agreement (first form): compares the next-token logits of MODEL (with its head, or a\n"
            "replacement head made at load) with an F32 reference on a fixed prompt set: the small TV catalog\n"
            "as FunctionGemma prefix (measured every 32 tokens), then 12 German utterances (every token) and 16\n"
            "answer tokens chosen by the reference (every token). Prints per part the mean and minimum cosine\n"
            "similarity, the top-1 agreement, the top-10 overlap and the mean KL divergence KL(reference ||\n"
            "model) of the next-token distributions (nats). Both models must share the vocabulary and the shape.\n\n"
            "Text agreement (--text): the text (tokenized with <bos>) is fed one token at a time to the\n"
            "reference and to every model; after each of the first --positions tokens the next-token\n"
            "distributions are compared: mean and max KL(reference || model) in nats, top-1 agreement (same\n"
            "argmax), top-10 overlap, mean logit cosine, one row per model (bench/quant-quality uses it).\n\n"
            "Call accuracy (--calls): DATA.jsonl holds one {\"utterance\": \"...\", \"expected\": {\"calls\":\n"
            "[{\"name\": \"...\", \"args\": {...}}]}} or {..., \"expected\": {\"text\": \"...\"}} per line (other keys are\n"
            "ignored). Every utterance is answered by the NLU engine (catalog prefix prefilled once, greedy) for\n"
            "each model x head x decoding mode, one table row each:\n"
            "  exact    calls equal to the expected ones: same names in order, arguments equal as JSON values\n"
            "           (3 == 3.0; strings byte for byte), no flag from the parser, no prose; a text\n"
            "           expectation: no call and the same text (trimmed)\n"
            "  calls    exact, on the utterances that expect a call only\n"
            "  func     the right function names (or no call where text is expected)\n"
            "  args     among answers with the right functions: argument keys with the expected value, over\n"
            "           the union of expected and produced keys\n"
            "  invalid  produced calls that the parser flagged (unknown name or key, bad type or enum value,\n"
            "           missing required key, duplicate, malformed or truncated), over all produced calls\n"
            "  p50/p95  wall time of one answer (restore + chunk + decode), milliseconds\n"
            "  tok      generated tokens per answer, and of them full-head steps, sparse-head steps (only the\n"
            "           allowed rows of the head) and tokens forced by the constraint (no head at all)\n"
            "  passes   median weight passes (forwards over the weights) per answer after the utterance chunk;\n"
            "           --speculate on (the default) drafts tokens and verifies them in batches, same answers\n"
            "--json prints the counts behind every rate. An utterance the engine refuses counts as wrong.\n\n"
            "--lora FILE[:SCALE] applies the adapters to every model evaluated (merged with --lora-merge) and,\n"
            "at run time (exactly), to the F32 reference: the agreement measured is that of the adapted models.",
            opts);
}

/* The report of eval_logits: per part of the prompt set, a table row or a JSON member. */
static void logits_report(bool json, const char *model_path, const char *ref_path, const fg_model_info *mi,
                          const fg_model_info *ri, const eval_ctx *c, double load_s, double run_s) {
  char head[64];
  snprintf(head, sizeof head, "%s%s", fg_type_name(mi->head_type),
           mi->head_copy_bytes ? " (replacement made at load)" : mi->tied_head ? " (tied)" : " (output.weight)");
  if (json) {
    printf("{\"model\":");
    cli_json_str(stdout, model_path, strlen(model_path));
    printf(",\"reference\":");
    cli_json_str(stdout, ref_path, strlen(ref_path));
    printf(",\"weight_type\":\"%s\",\"head_type\":\"%s\",\"head\":\"%s\",\"decode_bytes\":%llu,"
           "\"head_copy_ms\":%.1f,\"load_s\":%.2f,\"run_s\":%.2f,\"groups\":{",
           fg_type_name(mi->weight_type), fg_type_name(mi->head_type),
           mi->head_copy_bytes ? "load" : mi->tied_head ? "tied" : "file", (unsigned long long)mi->decode_bytes,
           mi->head_copy_ms, load_s, run_s);
    for (int g = 0; g < G_COUNT; g++) {
      const eval_acc *e = &c->acc[g];
      const double n = e->n ? (double)e->n : 1.0;
      printf("%s\"%s\":{\"positions\":%llu,\"mean_cos\":%.9f,\"min_cos\":%.9f,\"top1\":%.4f,\"top10\":%.4f,"
             "\"mean_kl\":%.9g}",
             g ? "," : "", k_group_names[g], (unsigned long long)e->n, e->sum_cos / n, e->n ? e->min_cos : 1.0,
             (double)e->top1 / n, (double)e->top10 / (10.0 * n), e->sum_kl / n);
    }
    printf("}}\n");
  } else {
    printf("model      %s (weights %s, head %s)\n", model_path, fg_type_name(mi->weight_type), head);
    printf("reference  %s (weights %s, head %s)\n", ref_path, fg_type_name(ri->weight_type), fg_type_name(ri->head_type));
    if (mi->head_copy_bytes) printf("head copy  %.1f MiB, quantized at load in %.0f ms\n",
                                    (double)mi->head_copy_bytes / (1024.0 * 1024.0), mi->head_copy_ms);
    printf("\n%-10s %9s %12s %12s %8s %9s %10s\n", "part", "positions", "mean cos", "min cos", "top-1", "top-10", "mean KL");
    for (int g = 0; g < G_COUNT; g++) {
      const eval_acc *e = &c->acc[g];
      const double n = e->n ? (double)e->n : 1.0;
      printf("%-10s %9llu %12.6f %12.6f %7.1f%% %8.1f%% %10.6f\n", k_group_names[g], (unsigned long long)e->n,
             e->sum_cos / n, e->n ? e->min_cos : 1.0, 100.0 * (double)e->top1 / n,
             100.0 * (double)e->top10 / (10.0 * n), e->sum_kl / n);
    }
    printf("\n%llu positions in %.1f s (load %.1f s)\n", (unsigned long long)c->acc[G_ALL].n, run_s, load_s);
  }
}

/* Logit agreement (the first form of eval): model_path against ref_path on the prompt set, the
 * catalog prefix in chunks, then each utterance and n_answer tokens the reference chooses. */
static int eval_logits(const cli_opt *opts, const cli_args *a, const char *model_path, const char *ref_path,
                       uint32_t n_answer, const fg_session_params *sp) {
  /* prompt set */
  char *catalog_buf = NULL, *utt_buf = NULL;
  const char *catalog = k_catalog;
  size_t catalog_len = sizeof k_catalog - 1;
  const char *utts[256];
  size_t n_utts = 0;
  if (cli_get(opts, a, "catalog")) {
    if (!(catalog_buf = cli_read_file(cli_get(opts, a, "catalog"), &catalog_len))) return 1;
    catalog = catalog_buf;
  }
  if (cli_get(opts, a, "utterances")) {
    size_t len;
    if (!(utt_buf = cli_read_file(cli_get(opts, a, "utterances"), &len))) return free(catalog_buf), 1;
    for (char *line = strtok(utt_buf, "\r\n"); line && n_utts < sizeof utts / sizeof utts[0]; line = strtok(NULL, "\r\n"))
      if (*line) utts[n_utts++] = line;
  } else {
    for (size_t i = 0; i < sizeof k_utterances / sizeof k_utterances[0]; i++) utts[n_utts++] = k_utterances[i];
  }

  int rc = 0;
  fg_model *m = NULL, *ref = NULL;
  fg_catalog *cat = NULL;
  eval_ctx c;
  memset(&c, 0, sizeof c);
  fg_snapshot *snap_s = NULL, *snap_r = NULL;
  int32_t *prefix = NULL;
  size_t n_prefix = 0;
  char *text = NULL;
  fg_error err = {0};
  fg_model_info mi, ri;
  const double t_load = cli_now();
  m = cli_load_model(model_path);
  if (!m) {
    rc = 1;
    goto done;
  }
  fg_status st = fg_model_load(ref_path, cli_reference_params(), &ref, &err);
  if (st != FG_OK) {
    rc = cli_status_error(st, "cannot load the reference", err.msg);
    goto done;
  }
  fg_model_get_info(m, &mi);
  fg_model_get_info(ref, &ri);
  if (mi.n_vocab != ri.n_vocab || mi.n_embd != ri.n_embd || mi.n_layer != ri.n_layer || mi.n_ff != ri.n_ff) {
    rc = cli_error("eval: %s and the reference %s have different shapes (vocab %u/%u, embd %u/%u, layers %u/%u)",
                   model_path, ref_path, mi.n_vocab, ri.n_vocab, mi.n_embd, ri.n_embd, mi.n_layer, ri.n_layer);
    goto done;
  }
  if (!mi.has_vocab) {
    rc = cli_error("eval: %s has no tokenizer metadata (the prompt set is text)", model_path);
    goto done;
  }
  if (ri.weight_type != 0 || ri.head_type != 0)
    fprintf(stderr, "eval: warning: the reference %s is not F32 (weights %s, head %s)\n", ref_path,
            fg_type_name(ri.weight_type), fg_type_name(ri.head_type));
  const double load_s = cli_now() - t_load;

  /* render and tokenize the prefix */
  if ((st = fg_catalog_parse(catalog, catalog_len, &cat, &err)) != FG_OK) {
    rc = cli_status_error(st, "eval: catalog", err.msg);
    goto done;
  }
  size_t need = 0;
  st = fg_catalog_render_prefix(cat, NULL, 0, &need);
  if (st != FG_OK && st != FG_ERR_BUFFER_TOO_SMALL) {
    rc = cli_status_error(st, "eval: render", "");
    goto done;
  }
  if (!(text = malloc(need + 1)) || fg_catalog_render_prefix(cat, text, need + 1, &need) != FG_OK) {
    rc = cli_error("eval: cannot render the catalog prefix");
    goto done;
  }
  if ((st = tokenize(m, text, need, FG_TOKENIZE_ADD_BOS, &prefix, &n_prefix)) != FG_OK) {
    rc = cli_status_error(st, "eval: tokenize", "");
    goto done;
  }

  c.n_vocab = mi.n_vocab;
  c.tty = !cli_has(opts, a, "json") && cli_stderr_is_tty();
  c.total = (n_prefix + EVAL_PREFIX_CHUNK - 1) / EVAL_PREFIX_CHUNK;
  for (size_t u = 0; u < n_utts; u++) c.total += 16 + n_answer; /* estimate: utterances are about 16 tokens */
  if ((st = fg_session_create(m, sp, &c.s, NULL)) != FG_OK || (st = fg_session_create(ref, sp, &c.r, NULL)) != FG_OK) {
    rc = cli_status_error(st, "eval: cannot create a session", "");
    goto done;
  }
  c.t0 = cli_now();
  for (size_t p = 0; p < n_prefix && !rc; p += EVAL_PREFIX_CHUNK)
    rc = feed(&c, prefix + p, n_prefix - p < EVAL_PREFIX_CHUNK ? n_prefix - p : EVAL_PREFIX_CHUNK, G_PREFIX);
  if (rc) goto done;
  if ((st = fg_session_snapshot(c.s, &snap_s)) != FG_OK || (st = fg_session_snapshot(c.r, &snap_r)) != FG_OK) {
    rc = cli_status_error(st, "eval: snapshot", "");
    goto done;
  }
  for (size_t u = 0; u < n_utts && !rc; u++) {
    char buf[4096];
    size_t len = 0;
    int32_t *ids = NULL;
    size_t n = 0;
    st = fg_render_utterance(utts[u], strlen(utts[u]), buf, sizeof buf, &len);
    if (st == FG_OK) st = tokenize(m, buf, len, 0, &ids, &n);
    if (st != FG_OK) {
      rc = cli_status_error(st, "eval: utterance", utts[u]);
      break;
    }
    if ((st = fg_session_restore(c.s, snap_s)) != FG_OK || (st = fg_session_restore(c.r, snap_r)) != FG_OK) {
      rc = cli_status_error(st, "eval: restore", "");
    }
    for (size_t i = 0; i < n && !rc; i++) rc = feed(&c, ids + i, 1, G_UTTER);
    for (uint32_t i = 0; i < n_answer && !rc; i++) {
      const float *lr = fg_session_logits(c.r);
      int32_t best = 0;
      for (size_t k = 1; k < c.n_vocab; k++)
        if (lr[k] > lr[best]) best = (int32_t)k;
      rc = feed(&c, &best, 1, G_ANSWER);
    }
    free(ids);
  }
  if (rc) goto done;
  const double run_s = cli_now() - c.t0;
  if (c.tty) fputc('\n', stderr);

  logits_report(cli_has(opts, a, "json"), model_path, ref_path, &mi, &ri, &c, load_s, run_s);

done:
  fg_snapshot_free(snap_s);
  fg_snapshot_free(snap_r);
  fg_session_free(c.s);
  fg_session_free(c.r);
  fg_catalog_free(cat);
  free(prefix);
  free(text);
  free(catalog_buf);
  free(utt_buf);
  fg_model_free(m);
  fg_model_free(ref);
  return rc;
}

int cmd_eval(int argc, char **argv) {
  static const cli_opt opts[] = {
      {"model", 'm', true, "GGUF file to evaluate (with --calls: a comma list of files)"},
      {"reference", 'r', true, "F32 reference GGUF (default: the -f32 sibling of MODEL, e.g. 270m-f32.gguf)"},
      {"threads", 't', true, "worker threads (default: available cores)"},
      {"catalog", 0, true, "tool catalog JSON instead of the embedded small TV catalog"},
      {"utterances", 0, true, "one utterance per line instead of the 12 embedded German ones"},
      {"answer", 0, true, "tokens decoded (greedily by the reference) after each utterance (default 16)"},
      {"calls", 0, true, "call accuracy on DATA.jsonl instead of logit agreement (see above)"},
      {"tools", 0, true, "--calls: the tool catalog the utterances are answered against"},
      {"heads", 0, true, "--calls: LM heads to try, a comma list of file, q8_0, q4_0 (default file)"},
      {"constrained", 0, true, "--calls: decoding modes, a comma list of off, call-only, call-or-text (default call-or-text)"},
      {"max-tokens", 0, true, "--calls: generated tokens per utterance (default 64)"},
      {"details", 0, true, "--calls: write every answer and its scores to this JSONL file"},
      {"every", 0, true, "--calls: every N-th utterance of DATA only, the first included (default 1: all)"},
      {"speculate", 0, true, "--calls: on | off: verify drafted tokens in batches (default on; same answers)"},
      {"text", 0, true, "next-token agreement over this text file (with -m M1.gguf,M2.gguf,... and --reference)"},
      {"positions", 0, true, "--text: positions measured, from the start of the text (default 512)"},
      {"json", 0, false, "print one JSON object instead of the table"},
      {"help", 'h', false, "show this help"},
      {0}};
  cli_args a;
  if (cli_parse("eval", opts, argc - 1, argv + 1, &a)) return 2;
  if (cli_has(opts, &a, "help")) {
    eval_usage(opts);
    return 0;
  }
  if (a.n_pos) return cli_error("eval: unexpected argument '%s'", a.pos[0]), 2;
  if (cli_has(opts, &a, "calls")) return cli_eval_calls(opts, &a);
  if (cli_has(opts, &a, "positions") && !cli_has(opts, &a, "text")) return cli_error("eval: --positions needs --text"), 2;
  static const char *const calls_only[] = {"tools", "heads", "constrained", "max-tokens", "details", "speculate",
                                          "every"};
  for (size_t i = 0; i < sizeof calls_only / sizeof calls_only[0]; i++)
    if (cli_has(opts, &a, calls_only[i])) return cli_error("eval: --%s needs --calls", calls_only[i]), 2;
  const char *model_path = cli_get(opts, &a, "model");
  if (!model_path) model_path = getenv("FGEMMA_MODEL");
  if (!model_path || !*model_path) return cli_error("eval: no model given: use -m MODEL.gguf"), 2;
  uint32_t n_answer = 16;
  if (cli_get(opts, &a, "answer") && !cli_u32("--answer", cli_get(opts, &a, "answer"), 0, 4096, &n_answer)) return 2;
  fg_session_params sp;
  cli_session_params_init(&sp);
  if (cli_get(opts, &a, "threads") && !cli_u32("--threads", cli_get(opts, &a, "threads"), 1, 256, &sp.n_threads))
    return 2;
  char ref_buf[4096];
  const char *ref_path = cli_get(opts, &a, "reference");
  if (cli_has(opts, &a, "text")) {
    if (!ref_path) return cli_error("eval: --text needs --reference F32.gguf"), 2;
    return eval_text(opts, &a, model_path, ref_path, &sp);
  }
  if (!ref_path) {
    if (!sibling_f32(model_path, ref_buf, sizeof ref_buf))
      return cli_error("eval: no reference: pass --reference MODEL_F32.gguf (MODEL's name has no -TYPE.gguf "
                       "suffix to find an -f32.gguf sibling)"), 2;
    if (access(ref_buf, R_OK) != 0)
      return cli_error("eval: no reference: %s does not exist; pass --reference MODEL_F32.gguf (e.g. from "
                       "'fgemma gen-model --type f32' with the same preset, seed and vocabulary)", ref_buf), 2;
    ref_path = ref_buf;
  }

  return eval_logits(opts, &a, model_path, ref_path, n_answer, &sp);
}
