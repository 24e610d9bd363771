/* data.c — the files of tune's data stage (docs/TUNE.md "Data"): train.jsonl and dev.jsonl (the
 * `fgemma eval --calls` format), data.bin (FGTVDATA v1, as training/make_data.py writes it),
 * golden.f32 / golden.json (the base's reference logits on the prompt prefix, for the trainer's check)
 * and summary.json. Everything is written to NAME.tmp and renamed at the end. */
#include "tune.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define GOLDEN_IDS 600

static int fail(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "fgemma: error: tune: ");
  fprintf(stderr, fmt, a, b);
  fputc('\n', stderr);
  return 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *path_in(const char *dir, const char *name) {
  const size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* mkdir -p */
static bool make_dir(const char *dir) {
  char *p = strdup(dir);
  if (!p) return false;
  for (char *q = p + 1; *q; q++) {
    if (*q != '/') continue;
    *q = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST) return free(p), false;
    *q = '/';
  }
  const bool ok = mkdir(p, 0777) == 0 || errno == EEXIST;
  free(p);
  return ok;
}

fg_model *tn_load_base(const char *base, const char *dir, bool quiet, bool *override_out) {
  fg_model_params mp;
  fg_model_params_init(&mp);
  fg_model *m = NULL;
  fg_error err = {0};
  *override_out = false;
  if (fg_model_load(base, &mp, &m, &err) != FG_OK) return fail("cannot load the base %s: %s", base, err.msg), NULL;
  int32_t id;
  if (fg_token_lookup(m, "<start_function_call>", &id) == FG_OK) return m; /* FunctionGemma's own vocabulary */
  fg_model_free(m);
  m = NULL;
  /* Gemma 3 names ids 46..52 <unused40>..<unused46>: an override-only adapter (one rank-1 pair, used at
   * scale 0, so only the renaming acts; docs/LORA.md "Vocabulary override") gives them FunctionGemma's names */
  char *ov = path_in(dir, "control-tokens.gguf");
  if (!ov) return NULL;
  struct stat st;
  if (stat(ov, &st) != 0) {
    if (!make_dir(dir)) return fail("cannot create %s%s", dir, ""), free(ov), NULL;
    fg_gen_lora_params gp;
    fg_gen_lora_params_init(&gp);
    gp.rank = 1;
    gp.targets = "attn_q";
    gp.flags = FG_GEN_LORA_VOCAB_OVERRIDE;
    if (!quiet) fprintf(stderr, "tune: the base has no FunctionGemma control tokens: writing %s (the override, at scale 0)\n", ov);
    if (fg_gen_lora(base, &gp, ov, &err) != FG_OK) {
      fail("cannot write %s: %s", ov, err.msg);
      free(ov);
      return NULL;
    }
  }
  fg_lora lora = {ov, 0.0f};
  mp.loras = &lora, mp.n_loras = 1;
  fg_status s = fg_model_load(base, &mp, &m, &err);
  if (s != FG_OK) fail("cannot load the base with its control-token override: %s%s", err.msg, "");
  else if (fg_token_lookup(m, "<start_function_call>", &id) != FG_OK || id != 48)
    fail("the control-token override of %s did not give <start_function_call> the id 48%s", ov, ""), fg_model_free(m), m = NULL;
  free(ov);
  *override_out = m != NULL;
  return m;
}

// ----------------------------------------------------------------------------------------------
// Tokens

typedef struct ids {
  int32_t *v;
  size_t n, cap;
} ids;

/* Tokenizes text (flags) onto the end of a; *n_out = how many. */
static fg_status tokenize_onto(const fg_model *m, const char *text, uint32_t flags, ids *a, size_t *n_out) {
  size_t need = 0;
  const size_t len = strlen(text);
  fg_status st = fg_tokenize(m, text, len, flags, NULL, 0, &need);
  if (st != FG_OK && st != FG_ERR_BUFFER_TOO_SMALL) return st;
  if (a->n + need > a->cap) {
    size_t cap = a->cap ? a->cap : 1 << 16;
    while (cap < a->n + need) cap *= 2;
    int32_t *nv = realloc(a->v, cap * sizeof *nv);
    if (!nv) return FG_ERR_NOMEM;
    a->v = nv, a->cap = cap;
  }
  st = fg_tokenize(m, text, len, flags, a->v + a->n, need, n_out);
  if (st == FG_OK) a->n += *n_out;
  return st;
}

typedef struct tokenized {
  ids prefix;       /* <bos> + the rendered catalog prefix */
  ids body;         /* per example: utterance part, then answer */
  uint32_t *ul, *al; /* (n_train + n_dev) lengths */
  uint8_t *used;    /* (n_vocab) 1: in the prefix, a training example or a control token */
  uint32_t n_used;
} tokenized;

static void tokenized_free(tokenized *t) {
  free(t->prefix.v), free(t->body.v), free(t->ul), free(t->al), free(t->used);
  memset(t, 0, sizeof *t);
}

static const char *const k_control[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>",
                                        "<start_function_declaration>", "<end_function_declaration>",
                                        "<start_function_call>", "<end_function_call>", "<start_function_response>",
                                        "<end_function_response>", "<escape>"};

/* The model's answer for item it, checked: a call must parse back (fg_call_parse, with the catalog)
 * into the expected call, unflagged. */
static int answer_of(const tn_spec *s, const tn_item *it, tn_buf *ans) {
  ans->n = 0;
  if (!tn_answer_text(s, it->expected, ans)) return fail("cannot write the answer for \"%s\"%s", it->utterance, "");
  const cJSON *want = cJSON_GetObjectItemCaseSensitive(it->expected, "calls");
  if (!want) return 0;
  char out[4096];
  size_t n;
  fg_error err = {0};
  if (fg_call_parse(s->catalog, ans->s, ans->n, out, sizeof out, &n, &err) != FG_OK)
    return fail("fg_call_parse refuses the answer %s: %s", ans->s, err.msg);
  cJSON *got = cJSON_Parse(out);
  const cJSON *gc = cJSON_GetObjectItemCaseSensitive(got, "calls");
  const bool same = gc && cJSON_Compare(gc, want, true);
  cJSON_Delete(got);
  if (!same) return fail("the answer %s parses back as %s, not as expected", ans->s, out);
  return 0;
}

static int tokenize_all(const tn_spec *s, const tn_data *d, const fg_model *m, bool quiet, tokenized *t) {
  fg_model_info info;
  fg_model_get_info(m, &info);
  const size_t n = d->n_train + d->n_dev;
  t->ul = calloc(n + 1, sizeof *t->ul), t->al = calloc(n + 1, sizeof *t->al), t->used = calloc(info.n_vocab, 1);
  if (!t->ul || !t->al || !t->used) return fail("out of memory%s%s", "", "");
  size_t len = 0;
  fg_status st = fg_catalog_render_prefix(s->catalog, NULL, 0, &len);
  char *prefix = malloc(len + 1);
  if (!prefix) return fail("out of memory%s%s", "", "");
  st = fg_catalog_render_prefix(s->catalog, prefix, len + 1, &len);
  size_t k;
  if (st == FG_OK) st = tokenize_onto(m, prefix, FG_TOKENIZE_ADD_BOS, &t->prefix, &k);
  free(prefix);
  if (st != FG_OK) return fail("cannot tokenize the catalog's prefix: %s%s", fg_status_str(st), "");
  tn_buf ans = {0};
  char *utt = NULL;
  size_t utt_cap = 0;
  const double t0 = now_s();
  double last = t0;
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    const tn_item *it = i < d->n_train ? &d->train[i] : &d->dev[i - d->n_train];
    size_t need = 0;
    fg_render_utterance(it->utterance, strlen(it->utterance), NULL, 0, &need);
    if (utt_cap < need + 1) {
      char *nb = realloc(utt, need + 1);
      if (!nb) {
        rc = fail("out of memory%s%s", "", "");
        break;
      }
      utt = nb, utt_cap = need + 1;
    }
    st = fg_render_utterance(it->utterance, strlen(it->utterance), utt, utt_cap, &need);
    if (st != FG_OK) {
      rc = fail("cannot render the utterance \"%s\": %s", it->utterance, fg_status_str(st));
      break;
    }
    if ((rc = answer_of(s, it, &ans))) break;
    size_t nu = 0, na = 0;
    st = tokenize_onto(m, utt, 0, &t->body, &nu);
    if (st == FG_OK) st = tokenize_onto(m, ans.s, 0, &t->body, &na);
    if (st != FG_OK) {
      rc = fail("cannot tokenize \"%s\": %s", it->utterance, fg_status_str(st));
      break;
    }
    t->ul[i] = (uint32_t)nu, t->al[i] = (uint32_t)na;
    if (i < d->n_train)
      for (size_t j = t->body.n - nu - na; j < t->body.n; j++) t->used[t->body.v[j]] = 1;
    const double now = now_s();
    if (!quiet && (now - last > 1.0 || i + 1 == n)) {
      fprintf(stderr, "\rtune: tokenizing %zu / %zu examples (%.0f s)", i + 1, n, now - t0);
      last = now;
    }
  }
  if (!quiet) fputc('\n', stderr);
  free(utt), tn_buf_free(&ans);
  if (rc) return rc;
  for (size_t i = 0; i < t->prefix.n; i++) t->used[t->prefix.v[i]] = 1;
  for (size_t i = 0; i < sizeof k_control / sizeof k_control[0]; i++) {
    int32_t id;
    if (fg_token_lookup(m, k_control[i], &id) != FG_OK) return fail("the vocabulary has no %s%s", k_control[i], "");
    t->used[id] = 1;
  }
  for (uint32_t i = 0; i < info.n_vocab; i++) t->n_used += t->used[i];
  return 0;
}

// ----------------------------------------------------------------------------------------------
// Files

typedef struct outfile {
  char *path, *tmp;
  FILE *f;
} outfile;

static bool out_open(outfile *o, const char *dir, const char *name) {
  o->path = path_in(dir, name);
  o->tmp = o->path ? malloc(strlen(o->path) + 5) : NULL;
  if (!o->tmp) return false;
  snprintf(o->tmp, strlen(o->path) + 5, "%s.tmp", o->path);
  o->f = fopen(o->tmp, "wb");
  if (!o->f) fail("cannot write %s: %s", o->tmp, strerror(errno));
  return o->f != NULL;
}

static bool out_close(outfile *o) {
  if (!o->f) return false;
  const bool ok = !ferror(o->f) && fclose(o->f) == 0;
  o->f = NULL;
  if (!ok) fail("cannot write %s%s", o->tmp, "");
  return ok;
}

static void out_drop(outfile *o) {
  if (o->f) fclose(o->f);
  if (o->tmp) remove(o->tmp);
  free(o->path), free(o->tmp);
  memset(o, 0, sizeof *o);
}

static bool write_jsonl(FILE *f, const tn_spec *s, const tn_item *items, size_t n, bool dev) {
  for (size_t i = 0; i < n; i++) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return false;
    cJSON_AddStringToObject(o, "utterance", items[i].utterance);
    cJSON_AddItemReferenceToObject(o, "expected", items[i].expected);
    cJSON_AddStringToObject(o, "lang", s->langs[items[i].lang]);
    if (items[i].phrasing >= 0) cJSON_AddStringToObject(o, "phrasing", s->phr[items[i].phrasing].text);
    else cJSON_AddStringToObject(o, "source", "example");
    if (dev && items[i].held_values) cJSON_AddTrueToObject(o, "held_out_values");
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!t) return false;
    fputs(t, f), fputc('\n', f);
    free(t);
  }
  return true;
}

static bool put_u32(FILE *f, uint32_t v) {
  const uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  return fwrite(b, 1, 4, f) == 4;
}

/* FGTVDATA v1: magic, u32 version n_prefix n_train n_dev n_used, i32 prefix[n_prefix], i32 used[n_used],
 * then per split u32 utt_len[n], u32 ans_len[n], i32 ids (utterance + answer per example). Little endian. */
static bool write_bin(FILE *f, const tn_data *d, const tokenized *t, uint32_t n_vocab) {
  bool ok = fwrite("FGTVDATA", 1, 8, f) == 8 && put_u32(f, 1) && put_u32(f, (uint32_t)t->prefix.n) &&
            put_u32(f, (uint32_t)d->n_train) && put_u32(f, (uint32_t)d->n_dev) && put_u32(f, t->n_used);
  for (size_t i = 0; ok && i < t->prefix.n; i++) ok = put_u32(f, (uint32_t)t->prefix.v[i]);
  for (uint32_t i = 0; ok && i < n_vocab; i++)
    if (t->used[i]) ok = put_u32(f, i);
  size_t off = 0;
  const size_t lo[2] = {0, d->n_train}, hi[2] = {d->n_train, d->n_train + d->n_dev};
  for (int sp = 0; sp < 2 && ok; sp++) {
    for (size_t i = lo[sp]; ok && i < hi[sp]; i++) ok = put_u32(f, t->ul[i]);
    for (size_t i = lo[sp]; ok && i < hi[sp]; i++) ok = put_u32(f, t->al[i]);
    for (size_t i = lo[sp]; ok && i < hi[sp]; i++)
      for (uint32_t j = 0; ok && j < t->ul[i] + t->al[i]; j++) ok = put_u32(f, (uint32_t)t->body.v[off++]);
  }
  return ok;
}

static int write_golden(const fg_model *m, const tokenized *t, uint32_t n_vocab, FILE *fb, FILE *fj, bool quiet) {
  const size_t n = t->prefix.n < GOLDEN_IDS ? t->prefix.n : GOLDEN_IDS;
  size_t at[4], n_at = 0;
  static const size_t want[4] = {9, 300, 520, 599};
  for (int i = 0; i < 4; i++) {
    const size_t p = want[i] < n ? want[i] : n - 1;
    if (!n_at || at[n_at - 1] != p) at[n_at++] = p;
  }
  float *logits = malloc(n_at * (size_t)n_vocab * sizeof *logits);
  if (!logits) return fail("out of memory%s%s", "", "");
  if (!quiet) fprintf(stderr, "tune: golden logits: the base's reference forward over %zu prompt tokens ...\n", n);
  const double t0 = now_s();
  fg_error err = {0};
  fg_status st = fg_reference_logits(m, t->prefix.v, n, at, n_at, logits, &err);
  if (st != FG_OK) return free(logits), fail("reference logits: %s%s", err.msg, "");
  if (!quiet) fprintf(stderr, "tune: golden logits in %.1f s\n", now_s() - t0);
  bool ok = true;
  for (size_t i = 0; i < n_at * n_vocab && ok; i++) {
    uint32_t u;
    memcpy(&u, &logits[i], 4);
    ok = put_u32(fb, u);
  }
  free(logits);
  fprintf(fj, "{\"ids\":[");
  for (size_t i = 0; i < n; i++) fprintf(fj, "%s%d", i ? "," : "", (int)t->prefix.v[i]);
  fprintf(fj, "],\"at\":[");
  for (size_t i = 0; i < n_at; i++) fprintf(fj, "%s%zu", i ? "," : "", at[i]);
  fprintf(fj, "],\"n_vocab\":%u,\"dtype\":\"float32\",\"shape\":[%zu,%u]}\n", n_vocab, n_at, n_vocab);
  return ok ? 0 : fail("cannot write golden.f32%s%s", "", "");
}

/* counts[func + 1][lang] of items */
static cJSON *counts_json(const tn_spec *s, const tn_item *items, size_t n) {
  cJSON *o = cJSON_CreateObject();
  for (int f = -1; f < (int)s->n_funcs; f++) {
    cJSON *per = cJSON_CreateObject();
    size_t total = 0;
    for (size_t li = 0; li < s->n_langs; li++) {
      size_t k = 0;
      for (size_t i = 0; i < n; i++) {
        int fi = items[i].func;
        if (items[i].phrasing < 0) { /* an example: its function by name */
          const cJSON *nm = cJSON_GetObjectItemCaseSensitive(
              cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(items[i].expected, "calls"), 0), "name");
          fi = -1;
          for (size_t j = 0; nm && j < s->n_funcs; j++)
            if (strcmp(s->funcs[j].name, nm->valuestring) == 0) fi = (int)j;
        }
        k += fi == f && items[i].lang == (int)li;
      }
      cJSON_AddNumberToObject(per, s->langs[li], (double)k);
      total += k;
    }
    if (f < 0 && !total) {
      cJSON_Delete(per);
      continue;
    }
    cJSON_AddItemToObject(o, f < 0 ? "(no_fit)" : s->funcs[f].name, per);
  }
  return o;
}

static cJSON *summary_json(const tn_spec *s, const tn_data *d, const tokenized *t, bool override) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "catalog", s->catalog_path);
  cJSON_AddNumberToObject(o, "seed", (double)s->seed);
  cJSON_AddNumberToObject(o, "train_examples", (double)d->n_train);
  cJSON_AddNumberToObject(o, "dev_examples", (double)d->n_dev);
  cJSON_AddNumberToObject(o, "dev_dropped_as_training_utterances", (double)d->dropped_dev);
  size_t held = 0;
  for (size_t i = 0; i < d->n_dev; i++) held += d->dev[i].held_values;
  cJSON_AddNumberToObject(o, "dev_with_held_out_values", (double)held);
  size_t made = 0;
  for (size_t i = 0; i < d->n_train; i++) made += d->train[i].new_name;
  cJSON_AddNumberToObject(o, "train_with_new_names", (double)made);
  cJSON_AddItemToObject(o, "train", counts_json(s, d->train, d->n_train));
  cJSON_AddItemToObject(o, "dev", counts_json(s, d->dev, d->n_dev));
  cJSON *ph = cJSON_AddObjectToObject(o, "phrasings");
  for (int f = -1; f < (int)s->n_funcs; f++) {
    cJSON *per = cJSON_CreateObject();
    bool any = false;
    for (size_t li = 0; li < s->n_langs; li++) {
      size_t n_tr = 0, n_dv = 0;
      cJSON *held_list = cJSON_CreateArray();
      for (size_t i = 0; i < s->n_phr; i++) {
        if (s->phr[i].func != f || s->phr[i].lang != (int)li) continue;
        if (s->phr[i].dev) n_dv++, cJSON_AddItemToArray(held_list, cJSON_CreateString(s->phr[i].text));
        else n_tr++;
      }
      if (!n_tr && !n_dv) {
        cJSON_Delete(held_list);
        continue;
      }
      any = true;
      cJSON *l = cJSON_AddObjectToObject(per, s->langs[li]);
      cJSON_AddNumberToObject(l, "train", (double)n_tr);
      cJSON_AddNumberToObject(l, "dev", (double)n_dv);
      cJSON_AddItemToObject(l, "held_out", held_list);
    }
    if (any) cJSON_AddItemToObject(ph, f < 0 ? "(no_fit)" : s->funcs[f].name, per);
    else cJSON_Delete(per);
  }
  cJSON *hv = cJSON_AddObjectToObject(o, "held_out_values");
  for (size_t i = 0; i < s->n_lists; i++) {
    const tn_list *l = &s->lists[i];
    if (!l->split) continue;
    cJSON *k = cJSON_GetObjectItemCaseSensitive(hv, l->key);
    if (!k) k = cJSON_AddObjectToObject(hv, l->key);
    cJSON *arr = cJSON_AddArrayToObject(k, s->langs[l->lang]);
    for (size_t j = 0; j < l->n; j++)
      if (l->e[j].held_out) cJSON_AddItemToArray(arr, cJSON_Duplicate(l->e[j].value, true));
  }
  cJSON *tk = cJSON_AddObjectToObject(o, "tokens");
  cJSON_AddNumberToObject(tk, "prefix_with_bos", (double)t->prefix.n);
  uint64_t su = 0, sa = 0;
  uint32_t mu = 0, ma = 0;
  for (size_t i = 0; i < d->n_train; i++) {
    su += t->ul[i], sa += t->al[i];
    mu = t->ul[i] > mu ? t->ul[i] : mu, ma = t->al[i] > ma ? t->al[i] : ma;
  }
  const double nt = d->n_train ? (double)d->n_train : 1.0;
  cJSON_AddNumberToObject(tk, "utterance_mean", (double)su / nt);
  cJSON_AddNumberToObject(tk, "utterance_max", mu);
  cJSON_AddNumberToObject(tk, "answer_mean", (double)sa / nt);
  cJSON_AddNumberToObject(tk, "answer_max", ma);
  cJSON_AddNumberToObject(tk, "used", t->n_used);
  cJSON_AddStringToObject(o, "control_tokens", override ? "control-tokens.gguf (override at scale 0)" : "the base's own");
  return o;
}

int tn_write_data(const tn_spec *s, const tn_data *d, const char *dir, const char *base, uint32_t threads, bool quiet) {
  (void)threads;
  if (!make_dir(dir)) return fail("cannot create the directory %s: %s", dir, strerror(errno));
  bool override = false;
  fg_model *m = tn_load_base(base, dir, quiet, &override);
  if (!m) return 1;
  fg_model_info info;
  fg_model_get_info(m, &info);
  tokenized t = {0};
  const double t0 = now_s();
  int rc = tokenize_all(s, d, m, quiet, &t);
  if (!rc && !quiet) fprintf(stderr, "tune: tokenized %zu examples in %.1f s\n", d->n_train + d->n_dev, now_s() - t0);
  enum { F_TRAIN, F_DEV, F_BIN, F_GOLD, F_GOLDJ, F_SUM, N_FILES };
  static const char *const names[N_FILES] = {"train.jsonl", "dev.jsonl", "data.bin", "golden.f32", "golden.json", "summary.json"};
  outfile o[N_FILES] = {0};
  for (int i = 0; i < N_FILES && !rc; i++)
    if (!out_open(&o[i], dir, names[i])) rc = 1;
  if (!rc && !(write_jsonl(o[F_TRAIN].f, s, d->train, d->n_train, false) && write_jsonl(o[F_DEV].f, s, d->dev, d->n_dev, true)))
    rc = fail("cannot write the jsonl files in %s%s", dir, "");
  if (!rc && !write_bin(o[F_BIN].f, d, &t, info.n_vocab)) rc = fail("cannot write %s%s", o[F_BIN].tmp, "");
  if (!rc) rc = write_golden(m, &t, info.n_vocab, o[F_GOLD].f, o[F_GOLDJ].f, quiet);
  if (!rc) {
    cJSON *sum = summary_json(s, d, &t, override);
    char *text = sum ? cJSON_Print(sum) : NULL;
    if (text) fputs(text, o[F_SUM].f), fputc('\n', o[F_SUM].f);
    else rc = fail("out of memory%s%s", "", "");
    free(text);
    cJSON_Delete(sum);
  }
  for (int i = 0; i < N_FILES && !rc; i++)
    if (!out_close(&o[i])) rc = 1;
  for (int i = 0; i < N_FILES && !rc; i++)
    if (rename(o[i].tmp, o[i].path) != 0) rc = fail("cannot rename %s: %s", o[i].tmp, strerror(errno));
  for (int i = 0; i < N_FILES; i++) out_drop(&o[i]);
  if (!rc && !quiet)
    fprintf(stderr, "tune: wrote %s: %zu training and %zu dev examples, prefix %zu tokens, %u tokens used\n", dir,
            d->n_train, d->n_dev, t.prefix.n, t.n_used);
  tokenized_free(&t);
  fg_model_free(m);
  return rc;
}
