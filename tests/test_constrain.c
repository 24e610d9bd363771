/* test_constrain.c — catalog-constrained decoding (docs/CONSTRAINED.md):
 *  1. the automaton on a hand-made catalog, fed token by token: accepted and refused sequences;
 *  2. the sparse head equals the full head at the listed rows (after a chunk appended without head);
 *  3. equivalence: the engine's constrained decode (sparse head, jump-forward chunks) gives exactly the
 *     tokens of a slow path that computes the FULL logits at every step (ordinary prefill/step),
 *     masks them with the automaton and takes the argmax (tiny and 270m models, real vocabulary);
 *  4. validity: every utterance of utterances-de.txt against tv-catalog.json on the 270m Q8_0 model
 *     gives a call that parses and is valid for the catalog;
 *  5. API errors. */
#include "fgemma.h"
#include "kernels/ops.h"
#include "nlu/constrain.h"
#include "session/session.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

static fg_catalog *catalog_text(const char *json) {
  fg_catalog *c = NULL;
  fg_error err = {0};
  CHECK_OK(fg_catalog_parse(json, strlen(json), &c, &err));
  return c;
}

static int32_t *tok(const fg_model *m, const char *text, size_t *n) {
  size_t need = 0;
  fg_tokenize(m, text, strlen(text), 0, NULL, 0, &need);
  int32_t *ids = malloc(sizeof(int32_t) * (need + 1));
  CHECK_OK(fg_tokenize(m, text, strlen(text), 0, ids, need, n));
  return ids;
}

// ----------------------------------------------------------------------------------------------
// 1. The automaton

static const char *k_toy =
    "{\"functions\":["
    "{\"name\":\"play\",\"parameters\":{\"title\":{\"type\":\"string\"}}},"
    "{\"name\":\"play_music\",\"parameters\":{\"genre\":{\"type\":\"string\",\"enum\":[\"rock\",\"jazz\",\"pop\"]},"
    "\"volume\":{\"type\":\"integer\"},\"shuffle\":{\"type\":\"boolean\"},\"speed\":{\"type\":\"number\"}},"
    "\"required\":[\"genre\"]},"
    "{\"name\":\"pause\",\"parameters\":{}},"
    "{\"name\":\"tag\",\"parameters\":{\"labels\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"extra\":{\"type\":\"object\"}},\"required\":[\"labels\"]}]}";

/* Feeds text's tokens; returns how many were accepted (== n when all). *done: the matcher finished. */
static size_t feed(const fg_model *m, fg_cmatch *cm, const char *text, bool *done, size_t *n_out) {
  size_t n;
  int32_t *ids = tok(m, text, &n);
  size_t i = 0;
  for (; i < n; i++) {
    fg_callowed al;
    fg_cmatch_allowed(cm, &al);
    bool in = false;
    if (al.mask) in = al.mask[ids[i]] != 0;
    for (uint32_t j = 0; !al.mask && j < al.n; j++) in = in || al.ids[j] == ids[i];
    const fg_status st = fg_cmatch_accept(cm, ids[i]);
    CHECK_MSG((st == FG_OK) == in, "allowed() and accept() disagree on token %d of \"%s\"", (int)i, text);
    if (st != FG_OK) break;
  }
  free(ids);
  *done = fg_cmatch_done(cm);
  if (n_out) *n_out = n;
  return i;
}

static bool accepts(const fg_model *m, fg_cmatch *cm, const char *text) {
  fg_cmatch_reset(cm);
  bool done;
  size_t n;
  const size_t k = feed(m, cm, text, &done, &n);
  return k == n && done;
}

static void test_matcher(const fg_model *m) {
  fg_catalog *c = catalog_text(k_toy);
  fg_constrain *k = NULL;
  fg_error err = {0};
  const double t0 = fg_time_s();
  CHECK_OK(fg_constrain_create(c, m->vocab, &k, &err));
  fprintf(stderr, "fg_constrain_create (vocabulary of %u): %.1f ms\n", fg_vocab_size(m->vocab), (fg_time_s() - t0) * 1e3);
  fg_cmatch *cm = NULL;
  CHECK_OK(fg_cmatch_create(k, FG_NLU_CONSTRAIN_CALL_ONLY, 0, &cm));
  if (!k || !cm) return;

  /* the start: only <start_function_call> */
  fg_callowed al;
  fg_cmatch_allowed(cm, &al);
  CHECK(al.mask == NULL && al.n == 1);
  int32_t sfc = -1;
  fg_tokenize(m, "<start_function_call>", 21, 0, &sfc, 1, &(size_t){0});
  CHECK_EQ_INT(al.n ? al.ids[0] : -2, sfc);

  const char *good[] = {
      "<start_function_call>call:play{}<end_function_call>",
      "<start_function_call>call:play{title:<escape>Das Boot<escape>}<end_function_call>",
      "<start_function_call>call:play{title:<escape><escape>}<end_function_call>",
      "<start_function_call>call:play_music{genre:<escape>jazz<escape>}<end_function_call>",
      "<start_function_call>call:play_music{volume:20,genre:<escape>rock<escape>,shuffle:true}<end_function_call>",
      "<start_function_call>call:play_music{genre:<escape>pop<escape>,speed:-1.25,volume:0}<end_function_call>",
      "<start_function_call>call:pause{}<end_function_call>",
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) CHECK_MSG(accepts(m, cm, good[i]), "refused: %s", good[i]);
  /* "[]" is a piece of its own (whole-text tokenization would merge "[]}") */
  {
    bool done;
    size_t n1, n2, n3;
    fg_cmatch_reset(cm);
    CHECK(feed(m, cm, "<start_function_call>call:tag{labels:", &done, &n1) == n1);
    CHECK(feed(m, cm, "[]", &done, &n2) == n2);
    CHECK(feed(m, cm, "}<end_function_call>", &done, &n3) == n3 && done);
  }
  const char *bad[] = {
      "<start_function_call>call:plays{}<end_function_call>",                                  /* unknown name */
      "<start_function_call>call:play_music{}<end_function_call>",                             /* missing required */
      "<start_function_call>call:play_music{genre:<escape>blues<escape>}<end_function_call>",  /* not an enum value */
      "<start_function_call>call:play_music{genre:rock}<end_function_call>",                   /* enum without escapes */
      "<start_function_call>call:play_music{genre:<escape>pop<escape>,genre:<escape>pop<escape>}<end_function_call>",
      "<start_function_call>call:play_music{genre:<escape>pop<escape>,volume:2.5}<end_function_call>", /* integer */
      "<start_function_call>call:play_music{genre:<escape>pop<escape>,volume:007}<end_function_call>", /* leading 0 */
      "<start_function_call>call:play_music{genre:<escape>pop<escape>,volume:1234567890}<end_function_call>", /* > 9 digits */
      "<start_function_call>call:play_music{genre:<escape>pop<escape>,shuffle:yes}<end_function_call>",
      "<start_function_call>call:play_music{genre:<escape>pop<escape>,tempo:3}<end_function_call>",  /* unknown key */
      "<start_function_call>call:play{title:<escape>a<b<escape>}<end_function_call>",        /* '<' in free text */
      "<start_function_call>call:play{title:<escape>x<end_function_call>",                   /* unterminated */
      "<start_function_call>call:tag{}<end_function_call>",                                  /* required array */
      "<start_function_call>call:tag{labels:[],extra:{}}<end_function_call>",                /* optional object: not offered */
      "Hello<start_function_call>call:pause{}<end_function_call>",                           /* prose in call-only */
      "<start_function_call>call:pause{}<end_function_call><start_function_call>call:pause{}<end_function_call>",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_MSG(!accepts(m, cm, bad[i]), "accepted: %s", bad[i]);

  /* forced runs: after "call:play_music{genre:" only "<escape>" is possible; after the last required
   * key of a one-key function only the close */
  fg_cmatch_reset(cm);
  bool done;
  size_t n;
  feed(m, cm, "<start_function_call>call:play_music{genre:", &done, &n);
  fg_cmatch_allowed(cm, &al);
  CHECK(!al.mask && al.n == 1);
  fg_cmatch_reset(cm);
  CHECK(feed(m, cm, "<start_function_call>call:", &done, &n) == n);
  fg_cmatch_allowed(cm, &al);
  CHECK_MSG(!al.mask && al.n == 3, "names play, play_music, pause, tag start with 3 tokens (n = %u)", al.n);
  CHECK(feed(m, cm, "tag", &done, &n) == n);
  fg_cmatch_allowed(cm, &al);
  CHECK_MSG(!al.mask && al.n == 1, "tag has one required key and nothing else: forced (n = %u)", al.n);
  fg_cmatch_reset(cm);
  feed(m, cm, "<start_function_call>call:play_music{genre:<escape>pop<escape>,volume:12", &done, &n);
  fg_cmatch_allowed(cm, &al);
  CHECK(!al.mask && al.n >= 12); /* digits plus "," and "}" */
  for (uint32_t i = 1; i < al.n; i++) CHECK(al.ids[i - 1] < al.ids[i]);
  /* free text: a mask without '<' tokens, and after the bound only <escape> */
  fg_cmatch_reset(cm);
  feed(m, cm, "<start_function_call>call:play{title:<escape>", &done, &n);
  fg_cmatch_allowed(cm, &al);
  CHECK(al.mask != NULL && al.n > 1000);
  int32_t lt = -1;
  fg_tokenize(m, "<", 1, 0, &lt, 1, &(size_t){0});
  CHECK(al.mask && lt >= 0 && !al.mask[lt]);
  for (uint32_t i = 0; i < FG_CONSTRAIN_MAX_STRING_TOKENS; i++) CHECK_OK(fg_cmatch_accept(cm, 1000 + (int32_t)i));
  fg_cmatch_allowed(cm, &al);
  CHECK(!al.mask && al.n == 1);
  CHECK(fg_cmatch_accept(cm, 1000) != FG_OK);
  fg_cmatch_free(cm);

  /* several calls */
  CHECK_OK(fg_cmatch_create(k, FG_NLU_CONSTRAIN_CALL_ONLY, FG_NLU_MULTI_CALL, &cm));
  CHECK(accepts(m, cm, "<start_function_call>call:pause{}<end_function_call><start_function_call>call:play{}"
                       "<end_function_call><end_of_turn>"));
  CHECK(!accepts(m, cm, "<start_function_call>call:pause{}<end_function_call>Hi<end_of_turn>"));
  fg_cmatch_free(cm);

  /* call or text */
  CHECK_OK(fg_cmatch_create(k, FG_NLU_CONSTRAIN_CALL_OR_TEXT, 0, &cm));
  CHECK(accepts(m, cm, "Das kann ich nicht.<end_of_turn>"));
  CHECK(accepts(m, cm, "<start_function_call>call:pause{}<end_function_call>"));
  CHECK(!accepts(m, cm, "Hallo<start_function_call>call:pause{}<end_function_call>"));
  fg_cmatch_free(cm);
  CHECK(fg_cmatch_create(k, 7, 0, &cm) == FG_ERR_INVALID_ARG);
  fg_constrain_free(k);
  fg_catalog_free(c);
}

// ----------------------------------------------------------------------------------------------
// 2./3. Sparse head and equivalence with masked full-head decoding

/* The sparse head after a chunk without head equals the full logits of an ordinary prefill. */
static void test_sparse_head(const fg_model *m, const fg_snapshot *prefix, const int32_t *ids, size_t n) {
  fg_session *a = NULL, *b = NULL;
  CHECK_OK(fg_session_fork(prefix, NULL, &a, NULL));
  CHECK_OK(fg_session_fork(prefix, NULL, &b, NULL));
  if (!a || !b) return;
  const uint32_t nv = m->hp.n_vocab, d = m->hp.n_embd;
  float *hidden = malloc(sizeof(float) * d), *sparse = malloc(sizeof(float) * 4096);
  int32_t rows[4096];
  CHECK_OK(fg_session_append_hidden(a, ids, n, hidden));
  CHECK(fg_session_logits(a) == NULL);
  CHECK_OK(fg_session_prefill(b, ids, n, NULL));
  CHECK_EQ_INT(fg_session_position(a), fg_session_position(b));
  const float *full = fg_session_logits(b);
  uint32_t nr = 0;
  for (uint32_t i = 0; i < 4096; i++) rows[nr++] = (int32_t)(((uint64_t)i * 2654435761u) % nv);
  rows[0] = 0;
  rows[1] = (int32_t)nv - 1;
  CHECK_OK(fg_ops_matmul_rows(a->ops, &m->output, rows, nr, hidden, d, 1, sparse, nr));
  double worst = 0, scale = 0;
  for (uint32_t i = 0; i < nr; i++) {
    const float cap = m->hp.final_softcap;
    const float v = cap > 0 ? cap * tanhf(sparse[i] / cap) : sparse[i];
    const double dv = fabs((double)v - full[rows[i]]);
    if (dv > worst) worst = dv;
    if (fabs(full[rows[i]]) > scale) scale = fabs(full[rows[i]]);
  }
  CHECK_MSG(worst <= 1e-5 * (1.0 + scale), "sparse head vs full head: max diff %g at scale %g", worst, scale);
  /* cost: 16 rows vs the full head */
  double t0 = fg_time_s();
  for (int r = 0; r < 20; r++) fg_ops_matmul_rows(a->ops, &m->output, rows, 16, hidden, d, 1, sparse, 16);
  double t1 = fg_time_s();
  float *all = malloc(sizeof(float) * nv);
  for (int r = 0; r < 5; r++) fg_ops_matmul(a->ops, &m->output, hidden, d, 1, all, nv);
  double t2 = fg_time_s();
  free(all);
  fprintf(stderr, "LM head (%u x %u): 16 rows %.3f ms, all rows %.3f ms\n", nv, d, (t1 - t0) / 20 * 1e3, (t2 - t1) / 5 * 1e3);
  /* a failed append changes nothing */
  const uint32_t pos = fg_session_position(a);
  int32_t badid = (int32_t)nv;
  CHECK(fg_session_append_hidden(a, &badid, 1, hidden) == FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_position(a), pos);
  free(hidden);
  free(sparse);
  fg_session_free(a);
  fg_session_free(b);
}

typedef struct slow_out {
  char text[8192];
  size_t len;
  uint32_t n_tokens;
} slow_out;

/* Full logits at every step (ordinary prefill, then one step per token), masked by the automaton. */
static void slow_decode(const fg_model *m, const fg_nlu *e, const fg_catalog *c, uint32_t mode, uint32_t flags,
                        uint32_t max_tokens, const char *utt, slow_out *o) {
  memset(o, 0, sizeof *o);
  size_t un = 0;
  fg_render_utterance(utt, strlen(utt), NULL, 0, &un);
  char *u = malloc(un + 1);
  CHECK_OK(fg_render_utterance(utt, strlen(utt), u, un + 1, &un));
  size_t n;
  int32_t *ids = tok(m, u, &n);
  free(u);
  fg_session *s = NULL;
  CHECK_OK(fg_session_fork(fg_nlu_snapshot(e), NULL, &s, NULL));
  fg_constrain *k = NULL;
  fg_error err = {0};
  CHECK_OK(fg_constrain_create(c, m->vocab, &k, &err));
  fg_cmatch *cm = NULL;
  CHECK_OK(fg_cmatch_create(k, mode, flags, &cm));
  if (!s || !k || !cm) return;
  CHECK_OK(fg_session_prefill(s, ids, n, NULL));
  const uint32_t nv = m->hp.n_vocab;
  for (;;) {
    if (fg_cmatch_done(cm)) break;
    if (o->n_tokens >= max_tokens && fg_cmatch_between_calls(cm)) break;
    fg_callowed al;
    fg_cmatch_allowed(cm, &al);
    const float *lg = fg_session_logits(s);
    float masked_best = -INFINITY;
    int32_t best = -1;
    for (uint32_t id = 0; id < nv; id++) {
      bool in = false;
      if (al.mask) in = al.mask[id] != 0;
      else for (uint32_t j = 0; j < al.n && !in; j++) in = al.ids[j] == (int32_t)id;
      const float v = in ? lg[id] : -INFINITY;
      if (best < 0 || v > masked_best) best = (int32_t)id, masked_best = v;
    }
    CHECK_OK(fg_cmatch_accept(cm, best));
    char piece[512];
    size_t pl = fg_vocab_token_to_text(m->vocab, best, piece, sizeof piece);
    if (o->len + pl < sizeof o->text) {
      memcpy(o->text + o->len, piece, pl);
      o->len += pl;
    }
    o->n_tokens++;
    if (fg_cmatch_done(cm)) break;
    if (fg_session_step(s, best, NULL) != FG_OK) break;
  }
  o->text[o->len] = '\0';
  free(ids);
  fg_cmatch_free(cm);
  fg_constrain_free(k);
  fg_session_free(s);
}

/* Returns the number of calls when json holds >= 1 call, all valid for the catalog; else -1. */
static int valid_calls(const char *json) {
  cJSON *root = cJSON_Parse(json);
  if (!root) return -1;
  const cJSON *calls = cJSON_GetObjectItemCaseSensitive(root, "calls");
  int n = cJSON_IsArray(calls) ? cJSON_GetArraySize(calls) : 0;
  static const char *flags[] = {"unknown_function", "unknown_args", "bad_enum", "bad_type", "missing_required",
                                "malformed", "truncated", "snapped_from", "duplicate_args"};
  if (cJSON_GetObjectItemCaseSensitive(root, "truncated")) n = 0;
  for (int i = 0; i < n; i++) {
    const cJSON *call = cJSON_GetArrayItem(calls, i);
    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(call, "name"))) n = 0;
    for (size_t f = 0; n && f < sizeof flags / sizeof flags[0]; f++)
      if (cJSON_GetObjectItemCaseSensitive(call, flags[f])) n = 0;
  }
  cJSON_Delete(root);
  return n > 0 ? n : -1;
}

static void run_model(const char *file, const char *preset, const char *type, fg_catalog *c, char **utts, int n_utt,
                      int n_equiv, bool check_valid) {
  if (fg_test_ensure_model(file, preset, type, 1) != 0) {
    CHECK(false);
    return;
  }
  fg_model *m = NULL;
  fg_error err = {0};
  CHECK_OK(fg_model_load(fg_test_model_path(file), NULL, &m, &err));
  if (!m) return;
  if (strcmp(preset, "tiny") == 0) test_matcher(m);

  fg_nlu_params np;
  fg_nlu_params_init(&np);
  np.session.n_threads = 2;
  np.max_tokens = 24;
  const uint32_t modes[3][2] = {{FG_NLU_CONSTRAIN_CALL_ONLY, 0},
                                {FG_NLU_CONSTRAIN_CALL_OR_TEXT, 0},
                                {FG_NLU_CONSTRAIN_CALL_ONLY, FG_NLU_MULTI_CALL}};
  const int n_modes = strcmp(preset, "tiny") == 0 ? 3 : 1;
  for (int mi = 0; mi < n_modes; mi++) {
    np.constrain = modes[mi][0];
    np.flags = modes[mi][1];
    fg_nlu *e = NULL;
    CHECK_OK(fg_nlu_create(m, c, &np, &e, &err));
    if (!e) continue;
    if (mi == 0) {
      size_t n;
      int32_t *ids = tok(m, "Schalte auf ZDF um<end_of_turn>\n<start_of_turn>model\n<start_function_call>call:", &n);
      test_sparse_head(m, fg_nlu_snapshot(e), ids, n);
      free(ids);
    }
    uint32_t heads = 0, forced = 0;
    for (int i = 0; i < n_utt; i++) {
      fg_nlu_result r;
      const fg_status st = fg_nlu_ask(e, utts[i], strlen(utts[i]), &r);
      CHECK_MSG(st == FG_OK, "%s: %s", utts[i], fg_nlu_errmsg(e));
      if (st != FG_OK) continue;
      heads += r.full_head_steps + r.sparse_head_steps;
      forced += r.forced_tokens;
      CHECK_EQ_INT(r.full_head_steps + r.sparse_head_steps + r.forced_tokens, r.decode_tokens);
      if (mi == 0 && check_valid) CHECK_MSG(valid_calls(r.json) >= 1, "%s: %s (raw %s)", utts[i], r.json, r.raw);
      if (mi == 1 && valid_calls(r.json) < 0) { /* prose: no call at all, nothing malformed */
        CHECK_MSG(strstr(r.json, "\"calls\":[]") != NULL && !strstr(r.raw, "<start_function_call>"), "%s", r.json);
      }
      if (i < n_equiv) {
        slow_out so;
        slow_decode(m, e, c, np.constrain, np.flags, np.max_tokens, utts[i], &so);
        CHECK_MSG(strcmp(so.text, r.raw) == 0 && so.n_tokens == r.decode_tokens,
                  "%s [%s mode %d]: constrained \"%s\" (%u tokens) vs masked full head \"%s\" (%u tokens)", utts[i],
                  file, mi, r.raw, r.decode_tokens, so.text, so.n_tokens);
      }
    }
    CHECK(heads > 0);
    if (mi != 1) CHECK(forced > 0); /* call-or-text may answer in prose throughout */
    fprintf(stderr, "%s mode %d: %u head steps, %u forced tokens over %d utterances\n", file, mi, heads, forced, n_utt);
    fg_nlu_free(e);
  }
  fg_model_free(m);
}

// ----------------------------------------------------------------------------------------------
// 5. API errors

static void test_api_errors(void) {
  if (fg_test_ensure_model("tiny-vocab-f32.gguf", "tiny", "f32", 1) != 0) return;
  fg_model *m = NULL;
  fg_error err = {0};
  CHECK_OK(fg_model_load(fg_test_model_path("tiny-vocab-f32.gguf"), NULL, &m, &err));
  fg_catalog *c = catalog_text(k_toy);
  if (!m || !c) return;
  fg_nlu_params np;
  fg_nlu_params_init(&np);
  np.constrained = FG_NLU_CONSTRAIN_OFF + 1; /* no such mode */
  fg_nlu *e = (fg_nlu *)1;
  memset(&err, 0, sizeof err);
  CHECK(fg_nlu_create(m, c, &np, &e, &err) == FG_ERR_INVALID_ARG);
  CHECK(e == NULL);
  CHECK_MSG(strstr(err.msg, "constrain") != NULL, "message: %s", err.msg);
  fg_catalog_free(c);
  fg_model_free(m);
}

/* Defaults and names (docs/OPTIONS.md): zero-initialised params decode call-or-text, the engine reports the
 * mode in effect, FG_NLU_CONSTRAIN_OFF is plain greedy decoding, and the deprecated name `constrain` is the
 * same field as `constrained`. */
_Static_assert(offsetof(fg_nlu_params, constrain) == offsetof(fg_nlu_params, constrained), "constrain aliases constrained");

static void answer_of(fg_nlu *e, const char *u, fg_nlu_result *r, char **json, char **raw) {
  *json = *raw = NULL;
  CHECK_OK(fg_nlu_ask(e, u, strlen(u), r));
  *json = strdup(r->json ? r->json : "");
  *raw = strdup(r->raw ? r->raw : "");
}

static void test_defaults(char **utts, int n_utt) {
  if (fg_test_ensure_model("tiny-vocab-f32.gguf", "tiny", "f32", 1) != 0) return;
  fg_model *m = NULL;
  fg_error err = {0};
  CHECK_OK(fg_model_load(fg_test_model_path("tiny-vocab-f32.gguf"), NULL, &m, &err));
  fg_catalog *c = fg_test_catalog_file("tv-catalog-small.json");
  if (!m || !c) return;

  fg_nlu_params np;
  fg_nlu_params_init(&np);
  CHECK_EQ_INT(np.constrained, FG_NLU_CONSTRAIN_DEFAULT);
  np.constrain = FG_NLU_CONSTRAIN_CALL_ONLY; /* the old name writes the same field */
  CHECK_EQ_INT(np.constrained, FG_NLU_CONSTRAIN_CALL_ONLY);
  fg_nlu_params init_old = {.constrain = FG_NLU_CONSTRAIN_OFF};
  CHECK_EQ_INT(init_old.constrained, FG_NLU_CONSTRAIN_OFF);

  fg_nlu_params zero; /* zero-initialised, as C callers who skip fg_nlu_params_init have them */
  memset(&zero, 0, sizeof zero);
  zero.session.n_threads = 2;
  zero.max_tokens = 24;
  zero.flags = FG_NLU_NO_ANSWER_CACHE;
  fg_nlu_params cot = zero, off = zero;
  cot.constrained = FG_NLU_CONSTRAIN_CALL_OR_TEXT;
  off.constrained = FG_NLU_CONSTRAIN_OFF;
  fg_nlu *ez = NULL, *ec = NULL, *eo = NULL;
  CHECK_OK(fg_nlu_create(m, c, &zero, &ez, &err));
  CHECK_OK(fg_nlu_create(m, c, &cot, &ec, &err));
  CHECK_OK(fg_nlu_create(m, c, &off, &eo, &err));
  fg_nlu_info iz = {0}, ic = {0}, io = {0};
  if (ez) CHECK_OK(fg_nlu_get_info(ez, &iz));
  if (ec) CHECK_OK(fg_nlu_get_info(ec, &ic));
  if (eo) CHECK_OK(fg_nlu_get_info(eo, &io));
  CHECK_EQ_INT(iz.constrained, FG_NLU_CONSTRAIN_CALL_OR_TEXT); /* the effective mode, never "default" */
  CHECK_EQ_INT(ic.constrained, FG_NLU_CONSTRAIN_CALL_OR_TEXT);
  CHECK_EQ_INT(io.constrained, FG_NLU_CONSTRAIN_OFF);
  CHECK_EQ_INT(iz.speculate, FG_NLU_SPECULATE_ON);
  /* a fork with NULL params keeps the source's resolved mode */
  fg_nlu *fz = NULL, *fo = NULL;
  fg_nlu_info ifz = {0}, ifo = {0};
  if (ez) CHECK_OK(fg_nlu_fork(ez, NULL, &fz, &err));
  if (eo) CHECK_OK(fg_nlu_fork(eo, NULL, &fo, &err));
  if (fz) CHECK_OK(fg_nlu_get_info(fz, &ifz));
  if (fo) CHECK_OK(fg_nlu_get_info(fo, &ifo));
  CHECK_EQ_INT(ifz.constrained, FG_NLU_CONSTRAIN_CALL_OR_TEXT);
  CHECK_EQ_INT(ifo.constrained, FG_NLU_CONSTRAIN_OFF);
  fg_nlu_free(fz);
  fg_nlu_free(fo);

  fg_session_params sp;
  fg_session_params_init(&sp);
  sp.n_threads = 2;
  int differ = 0;
  for (int i = 0; ez && ec && eo && i < n_utt; i++) {
    fg_nlu_result rz, rc, ro;
    char *jz, *xz, *jc, *xc, *jo, *xo;
    answer_of(ez, utts[i], &rz, &jz, &xz);
    answer_of(ec, utts[i], &rc, &jc, &xc);
    answer_of(eo, utts[i], &ro, &jo, &xo);
    /* zero params answer exactly as call-or-text, step for step */
    CHECK_MSG(strcmp(jz, jc) == 0 && strcmp(xz, xc) == 0 && rz.stop == rc.stop, "%s: default %s vs call-or-text %s",
              utts[i], xz, xc);
    CHECK(rz.full_head_steps == rc.full_head_steps && rz.sparse_head_steps == rc.sparse_head_steps &&
          rz.forced_tokens == rc.forced_tokens);
    /* off: every token from the full head, none forced: plain greedy */
    CHECK_EQ_INT(ro.full_head_steps, ro.decode_tokens);
    CHECK_EQ_INT(ro.sparse_head_steps + ro.forced_tokens, 0);
    differ += strcmp(xz, xo) != 0 || rz.forced_tokens != 0 || rz.sparse_head_steps != 0;
    /* ... and its text is what a plain greedy loop over a session forked from the prefix gives */
    char ubuf[1024];
    size_t un = 0;
    int32_t ids[512], gen[512];
    size_t n_ids = 0, n_gen = 0;
    CHECK_OK(fg_render_utterance(utts[i], strlen(utts[i]), ubuf, sizeof ubuf, &un));
    CHECK_OK(fg_tokenize(m, ubuf, un, 0, ids, 512, &n_ids));
    fg_session *s = NULL;
    CHECK_OK(fg_session_fork(fg_nlu_snapshot(eo), &sp, &s, &err));
    int32_t next = -1;
    if (s) CHECK_OK(fg_session_prefill(s, ids, n_ids, &next));
    while (s && n_gen < ro.decode_tokens && n_gen < 512) {
      gen[n_gen++] = next;
      if (n_gen < ro.decode_tokens) CHECK_OK(fg_session_step(s, next, &next));
    }
    char text[8192];
    size_t tn = 0;
    CHECK_OK(fg_detokenize(m, gen, n_gen, text, sizeof text - 1, &tn));
    text[tn] = 0;
    CHECK_MSG(strcmp(text, xo) == 0, "%s: off \"%s\" vs greedy \"%s\"", utts[i], xo, text);
    fg_session_free(s);
    free(jz), free(xz), free(jc), free(xc), free(jo), free(xo);
  }
  printf("defaults: %d of %d utterances answered differently (or constrained) by the default than by off\n", differ,
         n_utt);
  fg_nlu_free(ez);
  fg_nlu_free(ec);
  fg_nlu_free(eo);
  fg_catalog_free(c);
  fg_model_free(m);
}

int main(void) {
  char *utts[32];
  int n_utt = 0;
  size_t ul;
  char path[512];
  snprintf(path, sizeof path, "%s/tests/data/nlu/utterances-de.txt", FG_SOURCE_DIR);
  char *text = fg_test_read_file(path, &ul);
  CHECK(text != NULL);
  if (!text) return fg_test_finish("test_constrain");
  for (char *line = strtok(text, "\n"); line && n_utt < 32; line = strtok(NULL, "\n")) utts[n_utt++] = line;
  CHECK_EQ_INT(n_utt, 12);

  test_api_errors();
  test_defaults(utts, n_utt);
  fg_catalog *tv = fg_test_catalog_file("tv-catalog.json"), *small = fg_test_catalog_file("tv-catalog-small.json");
  if (tv && small) {
    /* Under an emulator (FG_TEST_EMULATED: the ARM runs under qemu-user) a subset: the tiny preset on
     * 3 utterances, no 270m part (about 20 minutes there); the native runs of this test do it all,
     * and tests/arm.cmake compares the ARM build's greedy ids on the 270m Q8_0 model with x86. */
    const char *emu = getenv("FG_TEST_EMULATED");
    const bool emulated = emu && emu[0] && strcmp(emu, "0") != 0;
    /* tiny: all modes, equivalence on every utterance */
    const int n_tiny = emulated ? 3 : n_utt;
    run_model("tiny-vocab-f32.gguf", "tiny", "f32", small, utts, n_tiny, n_tiny, true);
    /* 270m Q8_0 with the real vocabulary: validity on all 12, equivalence on 3 */
    if (emulated)
      printf("emulated run: tiny preset on %d utterances; the 270m part is left to the native runs\n", n_tiny);
    else
      run_model("270m-vocab-q8_0.gguf", "270m", "q8_0", tv, utts, n_utt, 3, true);
  }
  fg_catalog_free(tv);
  fg_catalog_free(small);
  free(text);
  return fg_test_finish("test_constrain");
}
