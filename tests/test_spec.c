/* test_spec.c — greedy-identical speculation (issue 17, docs/SPECULATION.md):
 *  1. batch invariance, the ground it stands on: the hidden rows of a k-token pass equal the same tokens
 *     appended one at a time, and the LM head over k rows equals k one-row heads, bit for bit (tiny F32
 *     and Q8_0 models, k = 1..12 across the GEMM threshold, 1 and 2 threads, F32 and F16 KV);
 *  2. rollback: a pass followed by fg_session_rewind equals a session that never saw the dropped tokens
 *     (position, the logits of the next step, every KV byte, the tokens), across the sliding window
 *     (tiny: window 8) and past the 270m preset's 512;
 *  3. a pass that fails in the middle (every allocation in turn, an abort at every layer) leaves the
 *     session unchanged; rewind refuses positions it cannot restore;
 *  4. the engine: speculation on against off, byte-identical (JSON, raw, stop, counts) with the session
 *     left identical (position, logits, KV), in all constraint modes, on 1 and 2 threads; with test
 *     drafts that are all right (everything accepted) and wrong at a chosen offset (partial
 *     acceptance), the answer cache, a draft longer than the window; a subset on 270m Q8_0;
 *  5. an allocation failing or an abort in the middle of a speculative answer: an error, and the next
 *     answer is the same;
 *  6. the context source (FG_NLU_DRAFT_CONTEXT): the drafter's look-up on hand-made sequences (longest
 *     suffix, latest occurrence, nothing below FG_DRAFT_LOOK_MIN, nothing past the known tokens), and an
 *     engine whose answer copies the catalog prompt, as base Gemma does: its drafts are accepted and
 *     the weight passes drop to a few.
 * Section names on the command line pick parts: batch rollback fail engine engine270m enginefail sim
 * context. */
#include "fgemma.h"
#include "fg_internal.h"
#include "kernels/ops.h"
#include "nlu/constrain.h"
#include "nlu/spec.h"
#include "session/session.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <unistd.h>

/* Under an emulator (FG_TEST_EMULATED: the ARM runs under qemu-user), AddressSanitizer or
 * ThreadSanitizer the 270m parts and the engine runs with the real vocabulary's 262,144-row head are
 * left out (the same code at other sizes, minutes there); the synthetic-vocabulary runs cover every
 * path. The native release runs do everything. */
static bool g_light;
/* Under an emulator, on top: 6 of the English utterances on one thread count, no F16 engine run, one
 * small context per mode, the failure sweeps in call-only mode at every 4th point, no "sim" (the
 * drafts are plain C, the same on every target). About 4 minutes under qemu-arm. */
static bool g_emulated;

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint32_t rnd(uint32_t n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state % n);
}

static fg_model *load(const char *file, const char *preset, const char *type) {
  if (fg_test_ensure_model(file, preset, type, 1) != 0) {
    CHECK_MSG(false, "cannot make %s", file);
    return NULL;
  }
  fg_model *m = NULL;
  fg_error err = {0};
  CHECK_OK(fg_model_load(fg_test_model_path(file), NULL, &m, &err));
  return m;
}

static fg_session *session(const fg_model *m, uint32_t threads, uint32_t kv_type, uint32_t n_ctx) {
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_threads = threads;
  p.kv_type = kv_type;
  p.n_ctx = n_ctx;
  p.n_batch = 64;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &p, &s, NULL));
  return s;
}

static void random_ids(const fg_model *m, int32_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++) ids[i] = 4 + (int32_t)rnd(m->hp.n_vocab - 4);
}

/* Two sessions hold the same state: position, tokens, logits (both none or equal bits), and every KV
 * block present in one is present in the other with the same bytes. */
static bool same_state(const fg_session *a, const fg_session *b, const char *what) {
  bool ok = a->pos == b->pos;
  CHECK_MSG(a->pos == b->pos, "%s: position %u vs %u", what, a->pos, b->pos);
  if (!ok) return false;
  ok = memcmp(a->tokens, b->tokens, a->pos * sizeof(int32_t)) == 0;
  CHECK_MSG(ok, "%s: token history differs", what);
  const uint32_t nv = a->model->hp.n_vocab;
  const float *la = fg_session_logits(a), *lb = fg_session_logits(b);
  const bool lok = (!la && !lb) || (la && lb && memcmp(la, lb, nv * sizeof(float)) == 0);
  CHECK_MSG(lok, "%s: logits differ (%s / %s)", what, la ? "set" : "none", lb ? "set" : "none");
  ok = ok && lok;
  const size_t bytes = fg_kv_block_bytes(&a->kv) - sizeof(fg_kv_block);
  for (uint32_t l = 0; l < a->kv.n_layer; l++) {
    const fg_kv_layer *A = &a->kv.layers[l], *B = &b->kv.layers[l];
    const uint32_t n = FG_MAX(A->n_blocks, B->n_blocks);
    for (uint32_t i = 0; i < n; i++) {
      const fg_kv_block *x = i < A->n_blocks ? A->blocks[i] : NULL, *y = i < B->n_blocks ? B->blocks[i] : NULL;
      const bool bok = (!x && !y) || (x && y && memcmp(x->data, y->data, bytes) == 0);
      if (!bok) {
        CHECK_MSG(bok, "%s: layer %u block %u differs (%s / %s)", what, l, i, x ? "present" : "absent",
                  y ? "present" : "absent");
        return false;
      }
    }
  }
  return ok;
}

// ----------------------------------------------------------------------------------------------
// 1. Batch invariance

static void batch_invariance(const fg_model *m, const char *name) {
  const size_t d = m->hp.n_embd, nv = m->hp.n_vocab;
  enum { DEPTH = 37, K = 12 };
  int32_t ids[DEPTH + K];
  random_ids(m, ids, DEPTH + K);
  float *hk = malloc(sizeof(float) * d * K), *h1 = malloc(sizeof(float) * d * K);
  float *lk = malloc(sizeof(float) * nv * K), *l1 = malloc(sizeof(float) * nv);
  for (uint32_t threads = 1; threads <= 2; threads++)
    for (uint32_t kv = 0; kv <= 1; kv++) {
      fg_session *a = session(m, threads, kv, 256), *b = session(m, 3 - threads, kv, 256);
      CHECK_OK(fg_session_prefill(a, ids, DEPTH, NULL));
      CHECK_OK(fg_session_prefill(b, ids, DEPTH, NULL));
      /* b: one token at a time */
      for (int i = 0; i < K; i++) CHECK_OK(fg_session_append_hidden(b, ids + DEPTH + i, 1, h1 + (size_t)i * d));
      for (size_t k = 1; k <= K; k++) {
        CHECK_OK(fg_session_append_rows(a, ids + DEPTH, k, k, hk));
        CHECK_MSG(memcmp(hk, h1, k * d * sizeof(float)) == 0, "%s: %zu-token pass (%u threads, kv %u): hidden rows differ "
                  "from one token at a time", name, k, threads, kv);
        CHECK_OK(fg_ops_matmul(a->ops, &m->output, hk, d, k, lk, nv));
        int bad = 0;
        for (size_t r = 0; r < k; r++) {
          CHECK_OK(fg_ops_matmul(a->ops, &m->output, hk + r * d, d, 1, l1, nv));
          bad += memcmp(l1, lk + r * nv, nv * sizeof(float)) != 0;
        }
        CHECK_MSG(bad == 0, "%s: LM head over %zu rows: %d rows differ from the one-row head", name, k, bad);
        CHECK_OK(fg_session_rewind(a, DEPTH, DEPTH));
      }
      /* fewer rows asked than appended: the last ones */
      CHECK_OK(fg_session_append_rows(a, ids + DEPTH, K, 3, hk));
      CHECK(memcmp(hk, h1 + (K - 3) * d, 3 * d * sizeof(float)) == 0);
      fg_session_free(a);
      fg_session_free(b);
    }
  printf("batch invariance (%s): hidden rows and head rows of 1..%d-token passes equal one token at a time\n", name, K);
  free(hk);
  free(h1);
  free(lk);
  free(l1);
}

static void test_batch(void) {
  const char *files[][3] = {{"tiny-f32.gguf", "tiny", "f32"}, {"tiny-q8_0.gguf", "tiny", "q8_0"}};
  for (int i = 0; i < 2; i++) {
    fg_model *m = load(files[i][0], files[i][1], files[i][2]);
    if (m) batch_invariance(m, files[i][0]);
    fg_model_free(m);
  }
}

// ----------------------------------------------------------------------------------------------
// 2. Rollback

/* a: X, then a pass of Y + Z, rewound to X + Y; b: X + Y. Then both step W. */
static void rollback_case(const fg_model *m, uint32_t nx, uint32_t ny, uint32_t nz, uint32_t threads, uint32_t kv) {
  const size_t d = m->hp.n_embd;
  const uint32_t n = nx + ny + nz + 1;
  int32_t *ids = malloc(sizeof(int32_t) * n);
  random_ids(m, ids, n);
  float *h = malloc(sizeof(float) * d * (ny + nz + 1));
  fg_session *a = session(m, threads, kv, nx + ny + nz + 8), *b = session(m, threads, kv, nx + ny + nz + 8);
  CHECK_OK(fg_session_prefill(a, ids, nx, NULL));
  CHECK_OK(fg_session_append_rows(a, ids + nx, ny + nz, ny + nz, h));
  CHECK_OK(fg_session_rewind(a, nx + ny, nx + ny));
  CHECK_OK(fg_session_prefill(b, ids, nx + ny, NULL));
  /* b's logits exist, a's do not (a pass computes none); the KV must match */
  fg_logits_unref(b->logits);
  b->logits = NULL;
  char what[96];
  snprintf(what, sizeof what, "X %u, Y %u, Z %u, %u threads, kv %u", nx, ny, nz, threads, kv);
  same_state(a, b, what);
  /* and what comes next: the same logits, bit for bit */
  const int32_t w = ids[nx + ny + nz];
  CHECK_OK(fg_session_step(a, w, NULL));
  CHECK_OK(fg_session_step(b, w, NULL));
  same_state(a, b, what);
  fg_session_free(a);
  fg_session_free(b);
  free(ids);
  free(h);
}

static void test_rollback(void) {
  fg_model *m = load("tiny-f32.gguf", "tiny", "f32");
  if (m) {
    CHECK_EQ_INT(m->hp.sliding_window, 8);
    /* dropped rows inside one block, across block boundaries (32), drops that reach back over the
     * window (8), nothing dropped, everything dropped */
    const uint32_t cases[][3] = {{5, 2, 3}, {30, 1, 4}, {31, 0, 9}, {32, 0, 1}, {40, 20, 12}, {63, 1, 33},
                                 {17, 9, 0}, {100, 3, 28}, {1, 0, 31}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      for (uint32_t threads = 1; threads <= 2; threads++)
        for (uint32_t kv = 0; kv <= 1; kv++) rollback_case(m, cases[i][0], cases[i][1], cases[i][2], threads, kv);
    /* trimming only after acceptance: two passes whose drafts are dropped, keeping the window for the
     * last head row; then the rest as if stepped */
    int32_t ids[80];
    random_ids(m, ids, 80);
    float h[64 * 20];
    fg_session *a = session(m, 2, 0, 256), *b = session(m, 2, 0, 256);
    CHECK_OK(fg_session_prefill(a, ids, 30, NULL));
    CHECK_OK(fg_session_append_rows(a, ids + 30, 12, 12, h)); /* keeps 30 + 5, the last head row at 33 */
    CHECK_OK(fg_session_rewind(a, 35, 33));
    CHECK(fg_session_rewind(a, 32, 32) == FG_ERR_INVALID_ARG); /* below the trim: refused, unchanged */
    CHECK_EQ_INT(fg_session_position(a), 35);
    CHECK(fg_session_rewind(a, 36, 33) == FG_ERR_INVALID_ARG); /* beyond the position */
    CHECK(fg_session_rewind(a, 34, 35) == FG_ERR_INVALID_ARG); /* trim beyond keep */
    CHECK_OK(fg_session_append_rows(a, ids + 35, 9, 9, h));
    CHECK_OK(fg_session_rewind(a, 34, 34)); /* back below the previous pass's end */
    CHECK_OK(fg_session_prefill(b, ids, 34, NULL));
    fg_logits_unref(b->logits);
    b->logits = NULL;
    same_state(a, b, "two passes, rewound below the first one's end");
    CHECK_OK(fg_session_step(a, ids[60], NULL));
    CHECK_OK(fg_session_step(b, ids[60], NULL));
    same_state(a, b, "two passes, then a step");
    /* fg_session_set_logits: a computed row becomes the session's logits */
    const float *lg = fg_session_logits(b);
    CHECK_OK(fg_session_append_rows(a, ids + 61, 1, 1, h));
    CHECK(fg_session_logits(a) == NULL);
    CHECK_OK(fg_session_rewind(a, 35, 35));
    CHECK_OK(fg_session_set_logits(a, lg));
    same_state(a, b, "logits set from a row");
    fg_session_free(a);
    fg_session_free(b);
  }
  fg_model_free(m);
  /* the 270m preset: window 512, a pass across it dropped in part */
  m = g_light ? NULL : load("270m-vocab-q8_0.gguf", "270m", "q8_0");
  if (m) {
    CHECK_EQ_INT(m->hp.sliding_window, 512);
    rollback_case(m, 505, 4, 8, 2, 0);   /* pass 505..516, keep 509: the window's edge inside the pass */
    rollback_case(m, 510, 1, 30, 2, 1);  /* drop back over the window's first block boundary (512) */
    rollback_case(m, 540, 0, 20, 2, 0);  /* past the window: the sliding layers have dropped blocks */
  }
  fg_model_free(m);
}

// ----------------------------------------------------------------------------------------------
// 3. Failures in the middle of a pass

static int g_abort_after, g_polls;
static bool abort_at(void *ud) {
  (void)ud;
  return ++g_polls == g_abort_after;
}

static void test_fail(void) {
  fg_model *m = load("tiny-f32.gguf", "tiny", "f32");
  if (!m) return;
  const size_t d = m->hp.n_embd;
  int32_t ids[70];
  random_ids(m, ids, 70);
  float h[64 * 40];
  fg_session *ref = session(m, 2, 0, 256);
  CHECK_OK(fg_session_prefill(ref, ids, 30, NULL));
  fg_snapshot *snap = NULL;
  CHECK_OK(fg_session_snapshot(ref, &snap));
  /* every allocation of a 40-token pass from a restored session (copy-on-write, new blocks, tables) */
  fg_session *s = session(m, 2, 0, 256);
  CHECK_OK(fg_session_restore(s, snap));
  CHECK_OK(fg_session_append_rows(s, ids + 30, 40, 40, h)); /* warm: scratch and history sized */
  CHECK_OK(fg_session_restore(s, snap));
  fg_alloc_fail_after(0);
  CHECK_OK(fg_session_append_rows(s, ids + 30, 40, 40, h));
  const uint64_t n_alloc = fg_alloc_fail_after(0);
  CHECK(n_alloc > 0);
  for (uint64_t k = 1; k <= n_alloc; k++) {
    CHECK_OK(fg_session_restore(s, snap));
    fg_alloc_fail_after(k);
    const fg_status st = fg_session_append_rows(s, ids + 30, 40, 40, h);
    fg_alloc_fail_after(0);
    CHECK_MSG(st == FG_ERR_NOMEM, "allocation %llu of %llu failing: %s", (unsigned long long)k,
              (unsigned long long)n_alloc, fg_status_str(st));
    char what[64];
    snprintf(what, sizeof what, "pass failing at allocation %llu", (unsigned long long)k);
    same_state(s, ref, what);
  }
  /* an abort at every layer of the pass */
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_threads = 2;
  p.n_ctx = 256;
  p.n_batch = 16; /* three batches: aborts in the first, the middle and the last */
  p.abort_cb = abort_at;
  fg_session *t = NULL;
  CHECK_OK(fg_session_fork(snap, &p, &t, NULL));
  int aborted = 0;
  for (g_abort_after = 1;; g_abort_after++) {
    CHECK_OK(fg_session_restore(t, snap));
    g_polls = 0;
    const fg_status st = fg_session_append_rows(t, ids + 30, 40, 12, h);
    if (st == FG_OK) break;
    CHECK_EQ_INT(st, FG_ERR_ABORTED);
    aborted++;
    same_state(t, ref, "aborted pass");
    if (g_abort_after > 1000) break;
  }
  CHECK_EQ_INT(aborted, 3 * (int)m->hp.n_layer);
  /* after all that, the pass gives the rows one token at a time gives */
  float h1[64];
  CHECK_OK(fg_session_append_hidden(ref, ids + 30, 40, h1));
  CHECK(memcmp(h + 11 * d, h1, d * sizeof(float)) == 0);
  printf("failures in a pass: %llu allocations and %d aborts, each left the session unchanged\n",
         (unsigned long long)n_alloc, aborted);
  fg_session_free(t);
  fg_session_free(s);
  fg_session_free(ref);
  fg_snapshot_free(snap);
  fg_model_free(m);
}

// ----------------------------------------------------------------------------------------------
// 4. The engine

/* The fast engine runs: the tiny preset's synthetic vocabulary (512 tokens, mostly single bytes:
 * long answers), a catalog with every kind of value, and many utterances. */
static const char k_cat_en[] =
    "{\"functions\":["
    "{\"name\":\"play_music\",\"parameters\":{\"title\":{\"type\":\"string\"},\"artist\":{\"type\":\"string\"},"
    "\"shuffle\":{\"type\":\"boolean\"},\"volume\":{\"type\":\"integer\"}},\"required\":[\"title\"]},"
    "{\"name\":\"set_timer\",\"parameters\":{\"minutes\":{\"type\":\"integer\"},\"label\":{\"type\":\"string\"}},"
    "\"required\":[\"minutes\"]},"
    "{\"name\":\"toggle_lamp\",\"parameters\":{\"state\":{\"type\":\"string\",\"enum\":[\"on\",\"off\"]},"
    "\"room\":{\"type\":\"string\"}},\"required\":[\"state\"]},"
    "{\"name\":\"search\",\"parameters\":{\"query\":{\"type\":\"string\"},\"kind\":{\"type\":\"string\","
    "\"enum\":[\"movie\",\"series\",\"person\"]}},\"required\":[\"query\"]},"
    "{\"name\":\"set_temperature\",\"parameters\":{\"degrees\":{\"type\":\"number\"},\"room\":{\"type\":\"string\"}}},"
    "{\"name\":\"roll_dice\",\"parameters\":{}}]}";

static const char *const k_utts_en[] = {
    "play Bohemian Rhapsody by Queen", "turn the lamp on", "set a timer for 12 minutes", "roll the dice",
    "search for movies with Tom Hanks", "turn off the light in the kitchen", "make it 21.5 degrees in the bedroom",
    "play something by Miles Davis, shuffled", "timer 45 minutes for the pasta", "find the series Dark",
    "lamp off", "who is Ada Lovelace", "put on Kind of Blue at volume 30", "warmer please",
    "start a 3 minute tea timer", "play the next song", "switch the living room lamp on", "look up Casablanca",
    "set the heating to 19", "roll a die for me", "play Yesterday", "search person Marie Curie",
    "a timer of 90 minutes labeled laundry", "turn everything off",
};

typedef struct answer {
  char json[8192], raw[8192], stop[32];
  fg_nlu_result r;
} answer;

static void ask(fg_nlu *e, const char *utt, answer *a) {
  memset(a, 0, sizeof *a);
  const fg_status st = fg_nlu_ask(e, utt, strlen(utt), &a->r);
  CHECK_MSG(st == FG_OK, "%s: %s", utt, fg_nlu_errmsg(e));
  if (st != FG_OK) return;
  snprintf(a->json, sizeof a->json, "%s", a->r.json);
  snprintf(a->raw, sizeof a->raw, "%s", a->r.raw);
  snprintf(a->stop, sizeof a->stop, "%s", fg_nlu_stop_name(a->r.stop));
}

/* the parts of an answer that speculation must not change */
static bool same_answer(const answer *x, const answer *y, const char *utt, const char *what) {
  const bool ok = strcmp(x->json, y->json) == 0 && strcmp(x->raw, y->raw) == 0 && strcmp(x->stop, y->stop) == 0 &&
                  x->r.decode_tokens == y->r.decode_tokens && x->r.chunk_tokens == y->r.chunk_tokens &&
                  x->r.full_head_steps == y->r.full_head_steps && x->r.sparse_head_steps == y->r.sparse_head_steps &&
                  x->r.forced_tokens == y->r.forced_tokens;
  CHECK_MSG(ok, "%s [%s]: off \"%s\" (%s, %u tokens) vs on \"%s\" (%s, %u tokens)", utt, what, x->raw, x->stop,
            x->r.decode_tokens, y->raw, y->stop, y->r.decode_tokens);
  return ok;
}

static uint32_t g_kv_type; /* of the engines' sessions: 0 F32, 1 F16 */
static char g_snap[512];   /* the engines share their prefix state through this file (written once per
                              model and catalog: fg_nlu_create rewrites a stale one) */

/* The loops below count modes 0 = off, 1 = call-only, 2 = call-or-text; 0 is FG_NLU_CONSTRAIN_DEFAULT
 * (call-or-text) for the library, so off must be named. */
static uint32_t mode_of(uint32_t i) { return i == 0 ? FG_NLU_CONSTRAIN_OFF : i; }

static fg_nlu *engine(const fg_model *m, const fg_catalog *c, uint32_t mode, uint32_t flags, uint32_t threads,
                      uint32_t speculate, uint32_t max_draft, uint32_t max_tokens) {
  fg_nlu_params np;
  fg_nlu_params_init(&np);
  np.session.n_threads = threads;
  np.session.kv_type = g_kv_type;
  np.snapshot_path = g_snap;
  np.constrained = mode_of(mode);
  np.flags = flags;
  np.speculate = speculate;
  np.max_draft = max_draft;
  np.max_tokens = max_tokens;
  fg_nlu *e = NULL;
  fg_error err = {0};
  CHECK_OK(fg_nlu_create(m, c, &np, &e, &err));
  return e;
}

/* Test drafts: the known answer (ids from a speculating engine), from where the answer is; with
 * g_wrong_at >= 0 the token at that offset of every draft is replaced by another one the automaton
 * allows there (g_cons), or any other token without a constraint. */
static struct {
  int32_t ids[512];
  size_t n;
  int wrong_at;
  const fg_constrain *k;
  uint32_t mode, flags;
  fg_cmatch *cm;
  uint32_t n_vocab;
  size_t calls;
} g_oracle;

static size_t oracle_hook(void *ud, const int32_t *gen, size_t n_gen, int32_t *out, size_t cap) {
  (void)ud;
  g_oracle.calls++;
  for (size_t i = 0; i < n_gen; i++)
    if (i >= g_oracle.n || gen[i] != g_oracle.ids[i]) return 0; /* cannot happen: the answer is the known one */
  size_t n = 0;
  for (; n < cap && n_gen + n < g_oracle.n; n++) out[n] = g_oracle.ids[n_gen + n];
  const int j = g_oracle.wrong_at;
  if (j < 0 || (size_t)j >= n) return n;
  const int32_t right = out[j];
  int32_t wrong = (int32_t)((uint32_t)(right + 1) % g_oracle.n_vocab);
  if (g_oracle.k) { /* a token the automaton allows at that point, if there is another one */
    fg_cmatch_reset(g_oracle.cm);
    for (size_t i = 0; i < n_gen + (size_t)j; i++) fg_cmatch_accept(g_oracle.cm, g_oracle.ids[i]);
    fg_callowed al;
    fg_cmatch_allowed(g_oracle.cm, &al);
    wrong = right;
    if (al.mask) {
      for (uint32_t t = 0; t < g_oracle.n_vocab && wrong == right; t++)
        if (al.mask[(right + 1 + t) % g_oracle.n_vocab]) wrong = (int32_t)((right + 1 + t) % g_oracle.n_vocab);
    } else {
      for (uint32_t t = 0; t < al.n; t++)
        if (al.ids[t] != right) wrong = al.ids[t];
    }
  }
  out[j] = wrong;
  return n;
}

/* The answer's ids: from the speculating engine's record (tests only) */
static size_t answer_ids(fg_nlu *e, int32_t *ids, size_t cap);

/* Every mode on `threads` threads: n_utts utterances with speculation off and on (default sources), the
 * first n_hook of them also with test drafts all right and wrong at offset 2. */
static void engine_identity(const fg_model *m, const fg_catalog *c, const char *const *utts, size_t n_utts,
                            size_t n_hook, uint32_t th, uint32_t max_tokens, int n_modes, const char *name) {
  const uint32_t modes[5][2] = {{FG_NLU_CONSTRAIN_OFF, 0},
                                {FG_NLU_CONSTRAIN_CALL_ONLY, 0},
                                {FG_NLU_CONSTRAIN_CALL_OR_TEXT, 0},
                                {FG_NLU_CONSTRAIN_CALL_ONLY, FG_NLU_MULTI_CALL},
                                {FG_NLU_CONSTRAIN_OFF, FG_NLU_MULTI_CALL}};
  fg_constrain *k = NULL;
  fg_error err = {0};
  CHECK_OK(fg_constrain_create(c, m->vocab, &k, &err));
  answer off, on, hooked;
  const double t0 = fg_time_s();
  for (int mi = 0; mi < n_modes; mi++) {
      const uint32_t mode = modes[mi][0], flags = modes[mi][1];
      fg_nlu *eo = engine(m, c, mode, flags, th, FG_NLU_SPECULATE_OFF, 0, max_tokens);
      fg_nlu *es = engine(m, c, mode, flags, th, FG_NLU_SPECULATE_DEFAULT, 0, max_tokens);
      fg_nlu *eh = engine(m, c, mode, flags, th, FG_NLU_SPECULATE_ON, 5, max_tokens); /* test drafts */
      if (!eo || !es || !eh) return;
      fg_nlu_set_draft_hook(eh, oracle_hook, NULL);
      g_oracle.k = mode != FG_NLU_CONSTRAIN_OFF ? k : NULL;
      g_oracle.n_vocab = m->hp.n_vocab;
      if (mode != FG_NLU_CONSTRAIN_OFF) CHECK_OK(fg_cmatch_create(k, mode, flags, &g_oracle.cm));
      uint64_t passes_off = 0, passes_on = 0, passes_right = 0, drafted_right = 0, accepted_right = 0;
      uint64_t drafted_wrong = 0, accepted_wrong = 0, same = 0;
      for (size_t u = 0; u < n_utts; u++) {
        char what[96];
        snprintf(what, sizeof what, "%s, mode %d, %u threads", name, mi, th);
        ask(eo, utts[u], &off);
        ask(es, utts[u], &on);
        bool ok = same_answer(&off, &on, utts[u], what);
        ok = same_state(fg_nlu_session(eo), fg_nlu_session(es), what) && ok;
        passes_off += off.r.weight_passes;
        passes_on += on.r.weight_passes;
        CHECK_EQ_INT(on.r.full_head_steps + on.r.sparse_head_steps + on.r.forced_tokens, on.r.decode_tokens);
        if (u >= n_hook) {
          same += ok;
          continue;
        }
        /* all drafts right: everything drafted is accepted */
        g_oracle.n = answer_ids(es, g_oracle.ids, 512);
        CHECK_EQ_INT(g_oracle.n, on.r.decode_tokens);
        g_oracle.wrong_at = -1;
        ask(eh, utts[u], &hooked);
        ok = same_answer(&off, &hooked, utts[u], "drafts all right") && ok;
        ok = same_state(fg_nlu_session(eo), fg_nlu_session(eh), "drafts all right") && ok;
        uint32_t dr = 0, ac = 0;
        for (unsigned i = 0; i < FG_NLU_DRAFT_SOURCES; i++) dr += hooked.r.drafted[i], ac += hooked.r.accepted[i];
        CHECK_MSG(ac == dr, "%s: right drafts: %u of %u accepted", utts[u], ac, dr);
        /* each pass takes its drafted tokens and one of the model's own */
        CHECK_MSG(hooked.r.weight_passes <= (hooked.r.decode_tokens + 5) / 6, "%s: %u passes for %u tokens", utts[u],
                  hooked.r.weight_passes, hooked.r.decode_tokens);
        passes_right += hooked.r.weight_passes;
        drafted_right += dr;
        accepted_right += ac;
        /* wrong at offset 2 of each draft: accepted up to there, the model's token, the rest dropped */
        g_oracle.wrong_at = 2;
        ask(eh, utts[u], &hooked);
        ok = same_answer(&off, &hooked, utts[u], "drafts wrong at offset 2") && ok;
        ok = same_state(fg_nlu_session(eo), fg_nlu_session(eh), "drafts wrong at offset 2") && ok;
        dr = ac = 0;
        for (unsigned i = 0; i < FG_NLU_DRAFT_SOURCES; i++) dr += hooked.r.drafted[i], ac += hooked.r.accepted[i];
        CHECK_MSG(ac <= 2 * (hooked.r.weight_passes - 1) + 5, "%s: %u accepted in %u passes with drafts wrong at 2",
                  utts[u], ac, hooked.r.weight_passes); /* the last draft may end before its offset 2 */
        drafted_wrong += dr;
        accepted_wrong += ac;
        same += ok;
      }
      if (n_hook) {
        CHECK_MSG(accepted_wrong < drafted_wrong, "%s mode %d: wrong drafts were never rejected (%llu of %llu)", name,
                  mi, (unsigned long long)accepted_wrong, (unsigned long long)drafted_wrong);
        CHECK(drafted_right > 0);
      }
      printf("%s mode %d, %u threads: %zu of %zu answers identical (speculation on; %zu also with drafts all right and "
             "wrong at 2); weight passes: off %llu, on %llu; right drafts: %llu passes, %llu tokens drafted; wrong "
             "drafts: %llu of %llu accepted\n",
             name, mi, th, (size_t)same, n_utts, n_hook, (unsigned long long)passes_off, (unsigned long long)passes_on,
             (unsigned long long)passes_right, (unsigned long long)drafted_right, (unsigned long long)accepted_wrong,
             (unsigned long long)drafted_wrong);
      fg_cmatch_free(g_oracle.cm);
      g_oracle.cm = NULL;
      fg_nlu_free(eo);
      fg_nlu_free(es);
      fg_nlu_free(eh);
  }
  printf("  (%.1f s)\n", fg_time_s() - t0);
  fg_constrain_free(k);
}

static char *g_utt_text;
static const char *g_utts[12];
static size_t g_n_utts;

static void read_utterances(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/tests/data/nlu/utterances-de.txt", FG_SOURCE_DIR);
  size_t len;
  g_utt_text = fg_test_read_file(path, &len);
  CHECK(g_utt_text != NULL);
  for (char *line = g_utt_text ? strtok(g_utt_text, "\n") : NULL; line && g_n_utts < 12; line = strtok(NULL, "\n"))
    g_utts[g_n_utts++] = line;
  CHECK_EQ_INT(g_n_utts, 12);
}

static void test_engine(void) {
  fg_model *m = load("tiny-f32.gguf", "tiny", "f32");
  fg_catalog *c = NULL;
  fg_error cerr = {0};
  CHECK_OK(fg_catalog_parse(k_cat_en, sizeof k_cat_en - 1, &c, &cerr));
  const size_t n_en = g_emulated ? 6 : sizeof k_utts_en / sizeof k_utts_en[0];
  if (m && c) {
    if (!g_emulated) engine_identity(m, c, k_utts_en, n_en, n_en, 1, 24, 5, "tiny-f32");
    engine_identity(m, c, k_utts_en, n_en, n_en, 2, 24, 5, "tiny-f32");
    g_kv_type = 1; /* an F16 KV cache */
    if (!g_emulated) engine_identity(m, c, k_utts_en, 8, 8, 2, 24, 2, "tiny-f32, f16 KV");
    g_kv_type = 0;
    /* the answer cache: the same utterances again come back in a few passes, unchanged */
    for (uint32_t mode = 0; mode <= FG_NLU_CONSTRAIN_CALL_ONLY; mode++) {
      fg_nlu *eo = engine(m, c, mode, 0, 2, FG_NLU_SPECULATE_OFF, 0, 24);
      fg_nlu *es = engine(m, c, mode, 0, 2, FG_NLU_SPECULATE_ON, 32, 24);
      answer a, b;
      uint32_t first = 0, again = 0, cached = 0;
      for (int round = 0; round < 2; round++)
        for (size_t u = 0; u < (g_emulated ? 6u : 12u); u++) { /* fewer than the 16 answers kept */
          ask(eo, k_utts_en[u], &a);
          ask(es, k_utts_en[u], &b);
          same_answer(&a, &b, k_utts_en[u], "cache");
          same_state(fg_nlu_session(eo), fg_nlu_session(es), "cache");
          *(round ? &again : &first) += b.r.weight_passes;
          if (round) cached += b.r.accepted[FG_NLU_DRAFT_CACHE];
          /* the second time the whole answer is drafted: a pass per 33 tokens (32 drafted + the model's) */
          if (round)
            CHECK_MSG(b.r.weight_passes <= 1 + b.r.decode_tokens / 33, "cache: %s took %u passes for %u tokens",
                      k_utts_en[u], b.r.weight_passes, b.r.decode_tokens);
        }
      CHECK_MSG(cached > 0 && again <= first, "cache: %u passes the first time, %u the second (%u cached tokens)",
                first, again, cached);
      printf("answer cache (mode %u): 12 utterances in %u weight passes, again in %u (%u tokens from the cache)\n", mode,
             first, again, cached);
      /* a normalized repeat (case, spaces) drafts from the cache too */
      ask(es, "  Turn THE lamp   on ", &b);
      CHECK(b.r.drafted[FG_NLU_DRAFT_CACHE] > 0);
      fg_nlu_free(es);
      /* FG_NLU_NO_ANSWER_CACHE: no answer kept */
      es = engine(m, c, mode, FG_NLU_NO_ANSWER_CACHE, 2, FG_NLU_SPECULATE_ON, 32, 24);
      for (int round = 0; round < 2; round++) {
        ask(eo, k_utts_en[1], &a);
        ask(es, k_utts_en[1], &b);
        same_answer(&a, &b, k_utts_en[1], "no cache");
        CHECK_EQ_INT(b.r.drafted[FG_NLU_DRAFT_CACHE], 0);
      }
      fg_nlu_free(eo);
      fg_nlu_free(es);
    }
    /* a context that ends in the middle of the answer: the same stop, the same state */
    fg_nlu *probe = engine(m, c, 0, 0, 1, FG_NLU_SPECULATE_OFF, 0, 24);
    fg_nlu_info info = {0};
    if (probe) CHECK_OK(fg_nlu_get_info(probe, &info));
    fg_nlu_free(probe);
    int full = 0;
    for (uint32_t mode = 0; mode <= FG_NLU_CONSTRAIN_CALL_OR_TEXT; mode++)
      for (uint32_t extra = g_emulated ? 23 : 9; extra <= (g_emulated ? 23u : 30u); extra += 7) {
        fg_nlu_params np;
        fg_nlu_params_init(&np);
        np.session.n_threads = 2;
        np.session.n_ctx = info.prefix_tokens + extra;
        np.snapshot_path = g_snap;
        np.constrained = mode_of(mode);
        np.max_tokens = 40;
        fg_nlu *eo = NULL, *es = NULL;
        np.speculate = FG_NLU_SPECULATE_OFF;
        CHECK_OK(fg_nlu_create(m, c, &np, &eo, NULL));
        np.speculate = FG_NLU_SPECULATE_ON;
        np.max_draft = 7;
        CHECK_OK(fg_nlu_create(m, c, &np, &es, NULL));
        for (size_t u = 0; eo && es && u < 6; u++) {
          answer a, b;
          fg_nlu_result ra, rb;
          const fg_status sa = fg_nlu_ask(eo, k_utts_en[u], strlen(k_utts_en[u]), &ra);
          const fg_status sb = fg_nlu_ask(es, k_utts_en[u], strlen(k_utts_en[u]), &rb);
          CHECK_EQ_INT(sa, sb);
          if (sa != FG_OK || sb != FG_OK) {
            CHECK_MSG(strcmp(fg_nlu_errmsg(eo), fg_nlu_errmsg(es)) == 0, "%s / %s", fg_nlu_errmsg(eo), fg_nlu_errmsg(es));
            continue;
          }
          ask(eo, k_utts_en[u], &a);
          ask(es, k_utts_en[u], &b);
          same_answer(&a, &b, k_utts_en[u], "small context");
          same_state(fg_nlu_session(eo), fg_nlu_session(es), "small context");
          full += strcmp(a.stop, "context_full") == 0;
        }
        fg_nlu_free(eo);
        fg_nlu_free(es);
      }
    CHECK(full > 0);
    printf("small contexts: %d answers ended with context_full, identical with speculation\n", full);
    /* API: out-of-range switches */
    fg_nlu_params np;
    fg_nlu_params_init(&np);
    CHECK_EQ_INT(np.speculate, FG_NLU_SPECULATE_DEFAULT);
    np.speculate = 3;
    fg_nlu *e = (fg_nlu *)&np;
    fg_error err = {0};
    CHECK(fg_nlu_create(m, c, &np, &e, &err) == FG_ERR_INVALID_ARG && e == NULL && strstr(err.msg, "speculate"));
    np.speculate = FG_NLU_SPECULATE_ON;
    np.max_draft = 33;
    CHECK(fg_nlu_create(m, c, &np, &e, &err) == FG_ERR_INVALID_ARG && e == NULL && strstr(err.msg, "max_draft"));
  }
  fg_catalog_free(c);
  fg_model_free(m);
  /* the real vocabulary and the TV catalog: the 12 utterances */
  m = g_light ? NULL : load("tiny-vocab-f32.gguf", "tiny", "f32");
  c = fg_test_catalog_file("tv-catalog-small.json");
  if (m && c) {
    engine_identity(m, c, g_utts, g_n_utts, 4, 2, 16, 4, "tiny-vocab-f32");
    engine_identity(m, c, g_utts, 4, 2, 1, 16, 4, "tiny-vocab-f32");
  }
  fg_catalog_free(c);
  fg_model_free(m);
}

static void test_engine_270m(void) {
  if (g_light) {
    printf("emulated or sanitized run: the 270m engine part is left to the native release runs\n");
    return;
  }
  fg_model *m = load("270m-vocab-q8_0.gguf", "270m", "q8_0");
  fg_catalog *c = fg_test_catalog_file("tv-catalog-small.json");
  if (m && c) {
    /* unconstrained and call-only (the multi-row head: Q8_0 GEMM from 5 rows) */
    const char *utts[] = {g_utts[0], g_utts[4]};
    engine_identity(m, c, utts, 2, 2, 2, 16, 2, "270m-vocab-q8_0");
  }
  fg_catalog_free(c);
  fg_model_free(m);
}

// ----------------------------------------------------------------------------------------------
// 5. Failures in the middle of a speculative answer

static void test_engine_fail(void) {
  fg_model *m = load("tiny-f32.gguf", "tiny", "f32");
  fg_catalog *c = NULL;
  CHECK_OK(fg_catalog_parse(k_cat_en, sizeof k_cat_en - 1, &c, NULL));
  if (!m || !c) {
    fg_catalog_free(c);
    fg_model_free(m);
    return;
  }
  const char *utt = "search for movies with Tom Hanks";
  for (uint32_t mode = g_emulated ? 1 : 0; mode <= FG_NLU_CONSTRAIN_CALL_ONLY; mode++) {
    const uint32_t every = g_emulated ? 4 : 1; /* points of failure visited */
    fg_nlu *e = engine(m, c, mode, 0, 2, FG_NLU_SPECULATE_ON, 6, 20);
    answer ref, a;
    ask(e, utt, &ref); /* the known answer, then drafts that are right up to offset 3 */
    g_oracle.n = answer_ids(e, g_oracle.ids, 512);
    g_oracle.wrong_at = 3;
    g_oracle.k = NULL;
    g_oracle.n_vocab = m->hp.n_vocab;
    fg_nlu_set_draft_hook(e, oracle_hook, NULL);
    ask(e, utt, &a); /* buffers grown for these drafts: the next answer allocates what every answer does */
    fg_alloc_fail_after(0);
    ask(e, utt, &a);
    const uint64_t n_alloc = fg_alloc_fail_after(0);
    same_answer(&ref, &a, utt, "reference");
    uint64_t nomem = 0;
    for (uint64_t k = 1; k <= n_alloc; k += every) {
      fg_alloc_fail_after(k);
      fg_nlu_result r;
      const fg_status st = fg_nlu_ask(e, utt, strlen(utt), &r);
      fg_alloc_fail_after(0);
      CHECK_MSG(st == FG_ERR_NOMEM, "mode %u: allocation %llu of %llu failing: %s", mode, (unsigned long long)k,
                (unsigned long long)n_alloc, fg_status_str(st));
      nomem += st == FG_ERR_NOMEM;
      ask(e, utt, &a);
      same_answer(&ref, &a, utt, "after a failed allocation");
    }
    fg_nlu_free(e);
    /* an abort at every layer poll of the answer */
    fg_nlu_params np;
    fg_nlu_params_init(&np);
    np.session.n_threads = 2;
    np.session.abort_cb = abort_at;
    np.constrained = mode_of(mode);
    np.speculate = FG_NLU_SPECULATE_ON;
    np.max_draft = 6;
    np.max_tokens = 20;
    np.snapshot_path = g_snap;
    g_abort_after = -1;
    CHECK_OK(fg_nlu_create(m, c, &np, &e, NULL));
    if (!e) continue;
    fg_nlu_set_draft_hook(e, oracle_hook, NULL);
    int aborts = 0;
    for (g_abort_after = 1; g_abort_after < 100000; g_abort_after += (int)every) {
      g_polls = 0;
      fg_nlu_result r;
      const fg_status st = fg_nlu_ask(e, utt, strlen(utt), &r);
      if (st == FG_OK) break;
      CHECK_EQ_INT(st, FG_ERR_ABORTED);
      aborts++;
      g_polls = -1000000;
      ask(e, utt, &a);
      same_answer(&ref, &a, utt, "after an abort");
    }
    g_polls = -1000000;
    printf("speculative answer (mode %u): %llu allocations and %d aborts in the middle, each an error, then the "
           "same answer\n", mode, (unsigned long long)nomem, aborts);
    CHECK(aborts > 0 && nomem > 0);
    fg_nlu_free(e);
  }
  fg_catalog_free(c);
  fg_model_free(m);
}

// ----------------------------------------------------------------------------------------------
// 6. The draft sources on known answers (the teacher of bench_spec_sim): every answer comes back, never
// in more passes than without speculation, and the sources keep their measured strength

/* FunctionGemma's text of an expected {"calls":[...]} (args in file order) */
static size_t render_expected(const cJSON *expected, char *out, size_t cap) {
  size_t n = 0;
  const cJSON *calls = cJSON_GetObjectItemCaseSensitive(expected, "calls"), *call;
  if (!cJSON_IsArray(calls) || cJSON_GetArraySize(calls) == 0) return 0;
  cJSON_ArrayForEach(call, calls) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(call, "name"), *a;
    n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "<start_function_call>call:%s{", name->valuestring);
    bool first = true;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(call, "args")) {
      n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s%s:", first ? "" : ",", a->string);
      first = false;
      if (cJSON_IsString(a)) n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "<escape>%s<escape>", a->valuestring);
      else n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%lld", (long long)a->valuedouble);
    }
    n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "}<end_function_call>");
  }
  return n < cap ? n : 0;
}

static struct {
  int32_t ids[512];
  size_t n;
} g_teacher;

static int32_t teacher(void *ud, const int32_t *gen, size_t n_gen) {
  (void)ud;
  (void)gen;
  return n_gen < g_teacher.n ? g_teacher.ids[n_gen] : 1;
}

typedef struct sim_sum {
  uint32_t n, after, after_off, copy, catalog;
} sim_sum;

/* Every `every`-th line of data (JSONL) asked with the teacher giving its expected answer. */
static void sim_round(fg_nlu *e, const fg_model *m, const char *data, int every, sim_sum *sum) {
  memset(sum, 0, sizeof *sum);
  int k = 0;
  for (const char *line = data; line && *line;) {
    const char *next = strchr(line, '\n');
    cJSON *j = cJSON_ParseWithLength(line, next ? (size_t)(next - line) : strlen(line));
    line = next ? next + 1 : NULL;
    char text[2048];
    const size_t tl = render_expected(cJSON_GetObjectItemCaseSensitive(j, "expected"), text, sizeof text);
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "utterance");
    if (k++ % every == 0 && tl && fg_tokenize(m, text, tl, 0, g_teacher.ids, 512, &g_teacher.n) == FG_OK) {
      fg_nlu_result r;
      const fg_status st = fg_nlu_ask(e, u->valuestring, strlen(u->valuestring), &r);
      CHECK_MSG(st == FG_OK && strcmp(r.raw, text) == 0, "%s: %s", u->valuestring, st == FG_OK ? r.raw : fg_nlu_errmsg(e));
      if (st == FG_OK) {
        const uint32_t after = r.weight_passes - 1, after_off = r.full_head_steps + r.sparse_head_steps - 1;
        CHECK_MSG(after <= after_off, "%s: %u passes with speculation, %u without", u->valuestring, after, after_off);
        sum->n++;
        sum->after += after;
        sum->after_off += after_off;
        sum->copy += r.accepted[FG_NLU_DRAFT_COPY];
        sum->catalog += r.accepted[FG_NLU_DRAFT_CATALOG];
      }
    }
    cJSON_Delete(j);
  }
}

static void test_sim(void) {
  if (g_emulated) {
    printf("emulated run: the draft sources on known answers are left to the native runs\n");
    return;
  }
  fg_model *m = load("tiny-vocab-f32.gguf", "tiny", "f32");
  fg_catalog *c = fg_test_catalog_file("tv-catalog.json");
  char path[512];
  snprintf(path, sizeof path, "%s/bench/data/spec-sim-de.jsonl", FG_SOURCE_DIR);
  char *data = fg_test_read_file(path, NULL);
  CHECK(data != NULL);
  for (uint32_t mode = 0; m && c && data && mode <= FG_NLU_CONSTRAIN_CALL_ONLY; mode++) {
    /* a fresh engine, then the same engine again without its answer cache (it has learned from the
     * first round), then one whose cache holds a quarter of the answers */
    sim_sum first, learned, cached;
    fg_nlu *e = engine(m, c, mode, FG_NLU_NO_ANSWER_CACHE, 1, FG_NLU_SPECULATE_ON, 0, 256);
    if (!e) break;
    fg_nlu_set_teacher(e, teacher, NULL);
    sim_round(e, m, data, 1, &first);
    sim_round(e, m, data, 1, &learned);
    fg_nlu_free(e);
    e = engine(m, c, mode, 0, 1, FG_NLU_SPECULATE_ON, 32, 256);
    fg_nlu_set_teacher(e, teacher, NULL);
    sim_round(e, m, data, 4, &cached);
    sim_round(e, m, data, 4, &cached);
    fg_nlu_free(e);
    const double n = first.n ? first.n : 1;
    printf("known answers (%s, %u): weight passes per call after the chunk: %.2f without speculation, %.2f with a "
           "fresh engine, %.2f once it has learned; %u in all for %u answers from the answer cache\n",
           mode ? "call-only" : "unconstrained", first.n, first.after_off / n, first.after / n, learned.after / n,
           cached.after, cached.n);
    /* measured when written (call-only 5.55 / 3.08 / 2.91; unconstrained 16.2 / 3.4 / 3.2): a draft source
     * that breaks shows here */
    CHECK_MSG(first.after / n <= (mode ? 3.3 : 3.7) && learned.after / n <= (mode ? 3.1 : 3.4),
              "draft sources weaker than measured: %.2f, %.2f", first.after / n, learned.after / n);
    CHECK(first.copy > 50 && first.catalog > 50);
    CHECK_MSG(cached.after <= cached.n / 4, "answer cache: %u passes for %u answers", cached.after, cached.n);
  }
  free(data);
  fg_catalog_free(c);
  fg_model_free(m);
}

/* the drafter alone, no automaton: n_out and the drafted tokens for context hist and answer gen */
static size_t ctx_propose(const int32_t *hist, size_t nh, const int32_t *gen, size_t ng, int32_t *out, uint8_t *src) {
  fg_drafter *d = NULL;
  CHECK_OK(fg_drafter_create(NULL, NULL, false, &d));
  if (!d) return 0;
  CHECK_OK(fg_drafter_begin(d, "x", 1));
  CHECK_OK(fg_drafter_context(d, hist, nh / 2, hist + nh / 2, nh - nh / 2)); /* the two parts join up */
  uint8_t kind[9];
  size_t n = 0;
  CHECK_OK(fg_drafter_propose(d, NULL, gen, ng, true, 8, out, src, kind, &n));
  fg_drafter_free(d);
  return n;
}

static void test_context(void) {
  int32_t out[8];
  uint8_t src[8];
  {
    /* "5 2 3" occurs at the start (then 8), "2 3" last before 7: the longest suffix wins */
    static const int32_t hist[] = {5, 2, 3, 8, 9, 2, 3, 7, 7}, gen[] = {5, 2, 3};
    const size_t n = ctx_propose(hist, 9, gen, 3, out, src);
    CHECK(n >= 2);
    CHECK_EQ_INT(out[0], 8);
    CHECK_EQ_INT(out[1], 9);
    CHECK_EQ_INT(src[0], FG_NLU_DRAFT_CONTEXT);
    /* the starting estimate (0.7) drafts 3 full-head rows: 0.7^3 = 0.34 >= 0.25 > 0.7^4 */
    CHECK_EQ_INT((int)n, 3);
  }
  {
    /* "2 3" twice: the latest occurrence (then 7) */
    static const int32_t hist[] = {2, 3, 8, 2, 3, 7, 1, 1}, gen[] = {4, 2, 3};
    CHECK(ctx_propose(hist, 8, gen, 3, out, src) >= 1 && out[0] == 7);
  }
  {
    /* a single token in common is not enough; the prompt's own suffix is not looked up */
    static const int32_t hist[] = {1, 2, 3, 4, 5, 6}, gen1[] = {9, 3}, gen0[] = {0};
    CHECK_EQ_INT((int)ctx_propose(hist, 6, gen1, 2, out, src), 0);
    CHECK_EQ_INT((int)ctx_propose(hist, 6, gen0, 0, out, src), 0);
  }
  {
    /* the copy runs on into the answer itself (a repeated phrase) but never past what is known */
    static const int32_t hist[] = {1, 1}, gen[] = {7, 8, 9, 7, 8};
    const size_t n = ctx_propose(hist, 2, gen, 5, out, src);
    CHECK(n == 3 && out[0] == 9 && out[1] == 7 && out[2] == 8);
  }

  /* the engine: an answer that copies the catalog prompt from its "You are" on (a teacher: no model
   * runs), unconstrained, 16 tokens: the context source drafts it */
  if (g_emulated) return;
  fg_model *m = load("tiny-vocab-f32.gguf", "tiny", "f32");
  fg_catalog *c = fg_test_catalog_file("tv-catalog.json");
  fg_nlu *e = m && c ? engine(m, c, FG_NLU_CONSTRAIN_OFF, FG_NLU_NO_ANSWER_CACHE, 1, FG_NLU_SPECULATE_ON, 0, 16) : NULL;
  if (e) {
    fg_nlu_set_teacher(e, teacher, NULL);
    size_t pn = 0;
    fg_catalog_render_prefix(c, NULL, 0, &pn);
    char *prefix = malloc(pn + 1);
    fg_catalog_render_prefix(c, prefix, pn + 1, &pn);
    const char *at = strstr(prefix, "You are");
    CHECK(at != NULL);
    const fg_status ts = at ? fg_tokenize(m, at, FG_MIN(strlen(at), (size_t)400), 0, g_teacher.ids, 512, &g_teacher.n)
                            : FG_ERR_INVALID_ARG;
    CHECK_OK(ts);
    if (ts == FG_OK) {
      fg_nlu_result r;
      CHECK_OK(fg_nlu_ask(e, "Mach lauter", 11, &r));
      CHECK_EQ_INT((int)r.decode_tokens, 16);
      CHECK_MSG(r.accepted[FG_NLU_DRAFT_CONTEXT] >= 10 && r.weight_passes <= 5,
                "context drafts: %u of %u accepted, %u weight passes", r.accepted[FG_NLU_DRAFT_CONTEXT],
                r.drafted[FG_NLU_DRAFT_CONTEXT], r.weight_passes);
      printf("copying the prompt: 16 tokens in %u weight passes, context drafts %u of %u accepted\n", r.weight_passes,
             r.accepted[FG_NLU_DRAFT_CONTEXT], r.drafted[FG_NLU_DRAFT_CONTEXT]);
    }
    free(prefix);
  }
  fg_nlu_free(e);
  fg_catalog_free(c);
  fg_model_free(m);
}

int main(int argc, char **argv) {
  const char *emu = getenv("FG_TEST_EMULATED");
  g_light = g_emulated = emu && emu[0] && strcmp(emu, "0") != 0;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  g_light = true;
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  g_light = true;
#endif
#endif
  if (g_light) printf("emulated or sanitized run: no 270m parts, no engine runs with the real vocabulary's head\n");
  read_utterances();
  snprintf(g_snap, sizeof g_snap, "%s/test_spec_%d.fgsnap", FG_TEST_MODELS, (int)getpid());
  static const struct { const char *name; void (*fn)(void); } sections[] = {
      {"batch", test_batch},   {"rollback", test_rollback},       {"fail", test_fail},
      {"engine", test_engine}, {"engine270m", test_engine_270m}, {"enginefail", test_engine_fail},
      {"sim", test_sim},       {"context", test_context},
  };
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
    bool run = argc < 2;
    for (int a = 1; a < argc; a++) run = run || strcmp(argv[a], sections[i].name) == 0;
    if (run) {
      const double t0 = fg_time_s();
      sections[i].fn();
      printf("[%s: %.1f s]\n", sections[i].name, fg_time_s() - t0);
    }
  }
  free(g_utt_text);
  remove(g_snap);
  return fg_test_finish("test_spec");
}

static size_t answer_ids(fg_nlu *e, int32_t *ids, size_t cap) {
  size_t n = 0;
  const int32_t *g = fg_nlu_answer_ids(e, &n);
  if (n > cap) n = cap;
  if (g && n) memcpy(ids, g, n * sizeof *ids);
  return n;
}
