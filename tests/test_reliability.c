/* test_reliability.c — what fgemma does with hostile input and failing resources, through the public API:
 *
 *   1. every allocation of a model load, a session run, snapshots, tokenization, catalogs and the NLU
 *      engine made to fail once (k = 1, 2, ... until the call succeeds): FG_ERR_NOMEM, out-pointers
 *      NULL, no leak (the ASan pass checks leaks), the handle unchanged and fully usable afterwards;
 *   2. every public entry point with NULL and out-of-range arguments: a status, never a crash;
 *   3. a long prefill aborted from another thread: FG_ERR_ABORTED, the session exactly as before;
 *   4. snapshot files truncated, bit-flipped, of another model or version, and crafted with a valid
 *      checksum: refused with a clear message; the snapshot in memory and its forks are unaffected;
 *   5. handles freed after their model (reference counted; every order: test_lifetime);
 *   6. model files truncated and bit-flipped: refused, or loaded and usable;
 *   7. one hostile input of each kind (GGUF, tokenizer, catalog, call text, snapshot, session API):
 *      the table of docs/RELIABILITY.md (FG_REL_TABLE=1 prints it).
 * Sections can be picked by name: test_reliability [alloc args abort snapfile errmsg free model table].
 *
 * Tiny preset (6 layers, window 8, vocabulary 512, context 2048), generated before any hook is armed. */
#define FG_EXPERIMENTAL
#include "fgemma.h"

#include "fg_internal.h" /* fg_alloc_fail_after */
#include "testutil.h"

#include <glob.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* FG_REL_TABLE=1 prints every refused input as a Markdown row (docs/RELIABILITY.md is made of them). */
static bool g_table;
static void table_row(const char *area, const char *input, fg_status st, const char *msg) {
  if (!g_table) return;
  printf("| %s | %s | `%s` | %s |\n", area, input, st == FG_OK ? "FG_OK" : fg_status_str(st), msg && *msg ? msg : "");
}

static fg_model *g_model;
static uint32_t g_vocab;
static uint32_t g_n_layer;
static char g_scratch[512]; /* prefix of this process's scratch files: FG_TEST_MODELS/rel_<pid> */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint32_t rnd(uint32_t n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state % n);
}

static void random_ids(int32_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++) ids[i] = 4 + (int32_t)rnd(g_vocab - 4);
}

static const char *scratch_path(const char *suffix) {
  static char buf[4][600];
  static int next;
  char *p = buf[next++ & 3];
  snprintf(p, sizeof buf[0], "%s_%s", g_scratch, suffix);
  return p;
}

static bool same_logits(const float *a, const float *b) {
  return a && b && memcmp(a, b, sizeof(float) * g_vocab) == 0;
}

static fg_session_params small_params(uint32_t n_batch, uint32_t n_threads, uint32_t n_ctx) {
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_batch = n_batch;
  p.n_threads = n_threads;
  p.n_ctx = n_ctx;
  return p;
}

/* A tool catalog in the cartridge format (three functions, an enum, a parameterless one). */
static const char k_catalog[] =
    "{\"id\":\"rel.v1\",\"functions\":["
    "{\"name\":\"set_timer\",\"description\":\"Start a countdown timer.\","
    "\"parameters\":{\"minutes\":{\"type\":\"integer\",\"description\":\"How long.\"}},\"required\":[\"minutes\"]},"
    "{\"name\":\"toggle_lamp\",\"description\":\"Switch the lamp.\","
    "\"parameters\":{\"state\":{\"type\":\"string\",\"enum\":[\"on\",\"off\"]}},\"required\":[\"state\"]},"
    "{\"name\":\"roll_dice\",\"description\":\"Roll a die.\"}]}";

static const char k_text[] = "<start_of_turn>user\nSet a timer for 12 minutes, bitte \xc3\xa4\xc3\xb6\xc3\xbc \xe2\x82\xac "
                             "\xf0\x9f\x98\x80 and\tmore   spaces<end_of_turn>\n\xff\xfe invalid UTF-8 \xc3";

static const char k_generated[] = "<start_function_call>call:toggle_lamp{state:<escape>on<escape>}<end_function_call>"
                                  "<start_function_call>call:set_timer{minutes:12,extra:<escape>x<escape>}"
                                  "<end_function_call> trailing prose";

// ----------------------------------------------------------------------------------------------
// 1. Failing allocations: the sweep

/* One operation under test. setup and check run with the hook disarmed; attempt runs armed. check
 * receives the attempt's status, verifies the state (unchanged after a failure, right after a
 * success), retries where that makes sense and frees what setup and attempt made. */
typedef struct sweep_case {
  const char *name;
  void (*setup)(void);
  fg_status (*attempt)(void);
  void (*check)(fg_status st);
  uint32_t emulated_every; /* under emulation: fail only every this many k (see below) */
} sweep_case;

/* Under an emulator (FG_TEST_EMULATED set: the ARM runs under qemu-user, cmake/toolchain-*.cmake) the
 * full sweep takes more than 900 s on aarch64, so it visits a documented subset of k instead: every k
 * for the model loads (each attempt is cheap, and the loader's allocation sites are the most varied),
 * every 7th k for the other operations (each attempt there runs a forward pass), and always the last
 * two (k = N, the last failing allocation; k = N + 1, the success). Every check runs for each k
 * visited. Native runs, including the ASan and TSan passes, sweep every k. */
#define EMU_EVERY 7
static bool g_emulated;

static uint64_t g_sites_total;

static void nop(void) {}

/* Runs the operation once unarmed to count its allocations N, then for k = 1..N+1 with the k-th
 * allocation (and every later one) failing: k <= N must give FG_ERR_NOMEM, k = N+1 must succeed. */
static uint64_t sweep(const sweep_case *c) {
  c->setup();
  fg_alloc_fail_after(0);
  fg_status st = c->attempt();
  const uint64_t n_alloc = fg_alloc_fail_after(0);
  CHECK_MSG(st == FG_OK, "%s: the unarmed run failed: %s", c->name, fg_status_str(st));
  c->check(st);
  int bad = 0;
  const uint64_t every = g_emulated && c->emulated_every > 1 ? c->emulated_every : 1;
  uint64_t visited = 0;
  for (uint64_t k = 1; k <= n_alloc + 1; k++) {
    if ((k - 1) % every != 0 && k < n_alloc) continue;
    visited++;
    c->setup();
    fg_alloc_fail_after(k);
    st = c->attempt();
    const uint64_t used = fg_alloc_fail_after(0);
    const fg_status want = k <= n_alloc ? FG_ERR_NOMEM : FG_OK;
    if (st != want && bad++ < 5)
      CHECK_MSG(st == want, "%s: allocation %llu of %llu failing: got %s, want %s", c->name, (unsigned long long)k,
                (unsigned long long)n_alloc, fg_status_str(st), fg_status_str(want));
    /* NOMEM is reported only when an allocation did fail; a success made fewer than k */
    CHECK_MSG(st == FG_OK ? used < k : used >= k, "%s: k=%llu, %llu allocations, status %s", c->name,
              (unsigned long long)k, (unsigned long long)used, fg_status_str(st));
    c->check(st);
  }
  if (visited == n_alloc + 1)
    printf("  %-36s %4llu allocation sites\n", c->name, (unsigned long long)n_alloc);
  else
    printf("  %-36s %4llu allocation sites (%llu of them failed: emulated run)\n", c->name,
           (unsigned long long)n_alloc, (unsigned long long)(visited - 1));
  g_sites_total += visited - 1; /* n_alloc, except in emulated runs */
  return n_alloc;
}

/* State shared by the cases (one case runs at a time) */
static struct {
  fg_model *m;
  fg_error err;
  fg_session *s;
  fg_snapshot *snap;
  fg_catalog *cat;
  fg_nlu *nlu;
  fg_session_params params;
  uint32_t pos_before;
  float *logits_before;       /* (n_vocab) copy, or NULL when the session had none */
  fg_session_stats stats_before;
  int32_t ids[64];            /* (64) tokens appended by the case */
  size_t n_ids;
  const float *want;          /* (n_vocab) logits the case must end with */
  int32_t tok[512];           /* (512) tokenizer output */
  size_t n_tok;
  char text[4096];            /* (4096) text output */
  size_t n_text;
  fg_nlu_result res;
  const char *snap_path;
  fg_model_params mp;
} fx;

/* Fixtures made once: snapshots of one session at 20 and 250 tokens, and the logits every case must
 * reproduce (computed by sessions that never saw a failure). */
static struct {
  int32_t prefix[250]; /* (250) */
  int32_t more[64];    /* (64) */
  fg_snapshot *at20, *at250;
  float *fresh45;      /* (n_vocab) after more[0..45) from position 0 */
  float *at20_45;      /* after prefix[0..20) + more[0..45) */
  float *at20_1;       /* after prefix[0..20) + more[0] */
  float *at250_20;     /* after prefix[0..250) + more[0..20) */
  char snap20_path[600];
  int32_t tok_ref[512];
  size_t n_tok_ref;
  char detok_ref[4096];
  size_t n_detok_ref;
  char parse_ref[4096];
  size_t n_parse_ref;
  char ask_ref[4096];
} ref;

static float *logits_copy(const fg_session *s) {
  const float *l = fg_session_logits(s);
  if (!l) return NULL;
  float *c = malloc(sizeof(float) * g_vocab);
  memcpy(c, l, sizeof(float) * g_vocab);
  return c;
}

static void record_session(void) {
  fx.pos_before = fg_session_position(fx.s);
  free(fx.logits_before);
  fx.logits_before = logits_copy(fx.s);
  CHECK_OK(fg_session_get_stats(fx.s, &fx.stats_before));
}

/* After a failed call: the session is exactly as recorded. */
static void check_unchanged(const char *what) {
  CHECK_MSG(fg_session_position(fx.s) == fx.pos_before, "%s: position %u, was %u", what, fg_session_position(fx.s),
            fx.pos_before);
  const float *l = fg_session_logits(fx.s);
  CHECK_MSG(fx.logits_before ? same_logits(l, fx.logits_before) : l == NULL, "%s: logits changed", what);
  fg_session_stats now;
  CHECK_OK(fg_session_get_stats(fx.s, &now));
  CHECK_MSG(now.kv_blocks == fx.stats_before.kv_blocks && now.kv_bytes_global == fx.stats_before.kv_bytes_global &&
                now.kv_bytes_sliding == fx.stats_before.kv_bytes_sliding,
            "%s: KV blocks %u, were %u", what, now.kv_blocks, fx.stats_before.kv_blocks);
}

/* ---- model load ---- */

static fg_status load_attempt(void) { return fg_model_load(fg_test_model_path("tiny-f32.gguf"), &fx.mp, &fx.m, &fx.err); }
static void load_check(fg_status st) {
  if (st != FG_OK) {
    CHECK(fx.m == NULL);
    CHECK_MSG(fx.err.code == st && fx.err.msg[0] != '\0', "load: error report %d '%s'", (int)fx.err.code, fx.err.msg);
  } else {
    fg_model_info info;
    CHECK_OK(fg_model_get_info(fx.m, &info));
    CHECK_EQ_INT(info.n_vocab, g_vocab);
  }
  fg_model_free(fx.m);
  fx.m = NULL;
}
static void load_setup_mmap(void) { fg_model_params_init(&fx.mp); }
static void load_setup_nommap(void) {
  fg_model_params_init(&fx.mp);
  fx.mp.flags = FG_MODEL_NO_MMAP | FG_MODEL_CHECK_TENSORS;
}

/* ---- session create ---- */

static void create_setup1(void) { fx.params = small_params(8, 1, 256); }
static void create_setup2(void) { fx.params = small_params(8, 2, 256); }
static fg_status create_attempt(void) {
  fx.s = (fg_session *)&fx; /* must come back NULL on failure */
  return fg_session_create(g_model, &fx.params, &fx.s, NULL);
}
static void create_check(fg_status st) {
  if (st != FG_OK) CHECK(fx.s == NULL);
  fg_session_free(fx.s);
  fx.s = NULL;
}

/* ---- append: prefill / step ---- */

static void append_finish(fg_status st, const char *what) {
  if (st != FG_OK) {
    CHECK_MSG(fg_session_errmsg(fx.s)[0] != '\0', "%s: no error message", what);
    check_unchanged(what);
    /* the same call again, unarmed: succeeds as if nothing had happened */
    CHECK_OK(fg_session_prefill(fx.s, fx.ids, fx.n_ids, NULL));
  }
  CHECK_MSG(same_logits(fg_session_logits(fx.s), fx.want), "%s: logits differ from a session that never failed", what);
  fg_session_free(fx.s);
  fx.s = NULL;
}

static void prefill_setup_fresh(void) {
  fx.params = small_params(8, 1, 512);
  CHECK_OK(fg_session_create(g_model, &fx.params, &fx.s, NULL));
  memcpy(fx.ids, ref.more, 45 * sizeof(int32_t));
  fx.n_ids = 45;
  fx.want = ref.fresh45;
  record_session();
}
static void prefill_setup_fork20(void) {
  fx.params = small_params(8, 1, 512);
  CHECK_OK(fg_session_fork(ref.at20, &fx.params, &fx.s, NULL));
  memcpy(fx.ids, ref.more, 45 * sizeof(int32_t));
  fx.n_ids = 45;
  fx.want = ref.at20_45;
  record_session();
}
static void prefill_setup_fork250(void) {
  fx.params = small_params(8, 1, 512);
  CHECK_OK(fg_session_fork(ref.at250, &fx.params, &fx.s, NULL));
  memcpy(fx.ids, ref.more, 20 * sizeof(int32_t));
  fx.n_ids = 20;
  fx.want = ref.at250_20;
  record_session();
}
static void step_setup_fork20(void) {
  prefill_setup_fork20();
  fx.n_ids = 1;
  fx.want = ref.at20_1;
}
static fg_status prefill_attempt(void) { return fg_session_prefill(fx.s, fx.ids, fx.n_ids, NULL); }
static fg_status step_attempt(void) {
  int32_t next = -7;
  fg_status st = fg_session_step(fx.s, fx.ids[0], &next);
  if (st != FG_OK) CHECK_EQ_INT(next, -7); /* scalar outputs untouched on failure */
  return st;
}
static void prefill_check(fg_status st) { append_finish(st, "prefill"); }
/* the failed session freed at once, without the retry that would reuse what the failure left behind */
static void prefill_check_free(fg_status st) {
  if (st != FG_OK) check_unchanged("prefill, then free");
  fg_session_free(fx.s);
  fx.s = NULL;
}
static void step_check(fg_status st) { append_finish(st, "step"); }

/* ---- snapshot / fork / restore ---- */

static void snapshot_setup(void) {
  fx.params = small_params(8, 1, 512);
  CHECK_OK(fg_session_fork(ref.at20, &fx.params, &fx.s, NULL));
  CHECK_OK(fg_session_step(fx.s, ref.more[0], NULL)); /* a state of its own */
  record_session();
}
static fg_status snapshot_attempt(void) {
  fx.snap = (fg_snapshot *)&fx;
  return fg_session_snapshot(fx.s, &fx.snap);
}
static void snapshot_check(fg_status st) {
  check_unchanged("snapshot");
  if (st != FG_OK) {
    CHECK(fx.snap == NULL);
  } else {
    CHECK_EQ_INT(fg_snapshot_position(fx.snap), 21);
    fg_session *f = NULL;
    CHECK_OK(fg_session_fork(fx.snap, &fx.params, &f, NULL));
    CHECK(same_logits(fg_session_logits(f), ref.at20_1));
    fg_session_free(f);
  }
  fg_snapshot_free(fx.snap);
  fx.snap = NULL;
  fg_session_free(fx.s);
  fx.s = NULL;
}

static void fork_setup(void) { fx.params = small_params(8, 1, 512); }
static fg_status fork_attempt(void) {
  fx.s = (fg_session *)&fx;
  return fg_session_fork(ref.at20, &fx.params, &fx.s, NULL);
}
static void fork_check(fg_status st) {
  if (st != FG_OK) {
    CHECK(fx.s == NULL);
  } else {
    CHECK_OK(fg_session_step(fx.s, ref.more[0], NULL));
    CHECK(same_logits(fg_session_logits(fx.s), ref.at20_1));
  }
  fg_session_free(fx.s);
  fx.s = NULL;
}

static void restore_setup(void) {
  fx.params = small_params(8, 1, 512);
  CHECK_OK(fg_session_create(g_model, &fx.params, &fx.s, NULL));
  CHECK_OK(fg_session_prefill(fx.s, ref.more, 30, NULL));
  record_session();
}
static fg_status restore_attempt(void) { return fg_session_restore(fx.s, ref.at20); }
static void restore_check(fg_status st) {
  if (st != FG_OK) {
    check_unchanged("restore");
    CHECK_OK(fg_session_restore(fx.s, ref.at20));
  }
  CHECK_EQ_INT(fg_session_position(fx.s), 20);
  CHECK_OK(fg_session_step(fx.s, ref.more[0], NULL));
  CHECK(same_logits(fg_session_logits(fx.s), ref.at20_1));
  fg_session_free(fx.s);
  fx.s = NULL;
}

/* ---- snapshot files ---- */

static fg_status save_attempt(void) { return fg_snapshot_save(ref.at20, scratch_path("save.fgsnap"), &fx.err); }
static void save_check(fg_status st) {
  if (st != FG_OK) CHECK(fx.err.code == st && fx.err.msg[0] != '\0');
  remove(scratch_path("save.fgsnap"));
}

static fg_status snapload_attempt(void) {
  fx.snap = (fg_snapshot *)&fx;
  return fg_snapshot_load(g_model, ref.snap20_path, &fx.snap, &fx.err);
}
static void snapload_check(fg_status st) {
  if (st != FG_OK) {
    CHECK(fx.snap == NULL);
    CHECK(fx.err.code == st && fx.err.msg[0] != '\0');
  } else {
    fg_session_params p = small_params(8, 1, 512);
    fg_session *f = NULL;
    CHECK_OK(fg_session_fork(fx.snap, &p, &f, NULL));
    CHECK_OK(fg_session_step(f, ref.more[0], NULL));
    CHECK(same_logits(fg_session_logits(f), ref.at20_1));
    fg_session_free(f);
  }
  fg_snapshot_free(fx.snap);
  fx.snap = NULL;
}

/* ---- tokenizer ---- */

static fg_status tokenize_attempt(void) {
  fx.n_tok = 0;
  return fg_tokenize(g_model, k_text, sizeof k_text - 1, FG_TOKENIZE_ADD_BOS, fx.tok, 512, &fx.n_tok);
}
static void tokenize_check(fg_status st) {
  if (st == FG_OK)
    CHECK(fx.n_tok == ref.n_tok_ref && memcmp(fx.tok, ref.tok_ref, fx.n_tok * sizeof(int32_t)) == 0);
}
static fg_status detokenize_attempt(void) {
  return fg_detokenize(g_model, ref.tok_ref, ref.n_tok_ref, fx.text, sizeof fx.text, &fx.n_text);
}
static void detokenize_check(fg_status st) {
  if (st == FG_OK) CHECK(fx.n_text == ref.n_detok_ref && memcmp(fx.text, ref.detok_ref, fx.n_text) == 0);
}

/* ---- catalogs and call text ---- */

static fg_status catalog_attempt(void) {
  fx.cat = (fg_catalog *)&fx;
  return fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &fx.cat, &fx.err);
}
static void catalog_check(fg_status st) {
  if (st != FG_OK) {
    CHECK(fx.cat == NULL);
    CHECK(fx.err.code == st && fx.err.msg[0] != '\0');
  } else {
    CHECK_EQ_INT(fg_catalog_n_functions(fx.cat), 3);
  }
  fg_catalog_free(fx.cat);
  fx.cat = NULL;
}

static void catalog_setup(void) { CHECK_OK(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &fx.cat, NULL)); }
static fg_status prefix_attempt(void) { return fg_catalog_render_prefix(fx.cat, fx.text, sizeof fx.text, &fx.n_text); }
static void prefix_check(fg_status st) {
  if (st == FG_OK) CHECK(fx.n_text > 0 && strstr(fx.text, "declaration:toggle_lamp") != NULL);
  fg_catalog_free(fx.cat);
  fx.cat = NULL;
}
static fg_status callparse_attempt(void) {
  return fg_call_parse(fx.cat, k_generated, sizeof k_generated - 1, fx.text, sizeof fx.text, &fx.n_text, &fx.err);
}
static void callparse_check(fg_status st) {
  if (st != FG_OK) CHECK(fx.err.code == st && fx.err.msg[0] != '\0');
  else CHECK(fx.n_text == ref.n_parse_ref && memcmp(fx.text, ref.parse_ref, fx.n_text) == 0);
  fg_catalog_free(fx.cat);
  fx.cat = NULL;
}

/* ---- NLU engine ---- */

static fg_nlu_params nlu_params(const char *snapshot_path) {
  fg_nlu_params p;
  fg_nlu_params_init(&p);
  p.max_tokens = 12;
  p.snapshot_path = snapshot_path;
  p.session = small_params(32, 1, 1024);
  return p;
}
static void nlu_setup_plain(void) {
  catalog_setup();
  fx.snap_path = NULL;
}
static void nlu_setup_load(void) {
  catalog_setup();
  fx.snap_path = scratch_path("nlu-load.fgsnap"); /* written by the reference engine */
}
static void nlu_setup_write(void) {
  catalog_setup();
  fx.snap_path = scratch_path("nlu-write.fgsnap");
  remove(fx.snap_path);
}
static fg_status nlu_create_attempt(void) {
  fg_nlu_params p = nlu_params(fx.snap_path);
  fx.nlu = (fg_nlu *)&fx;
  return fg_nlu_create(g_model, fx.cat, &p, &fx.nlu, &fx.err);
}
static void nlu_create_check(fg_status st) {
  if (st != FG_OK) {
    CHECK(fx.nlu == NULL);
    CHECK(fx.err.msg[0] != '\0');
    CHECK_MSG(fx.err.code == st, "fg_nlu_create returned %s but reported code %d '%s'", fg_status_str(st),
              (int)fx.err.code, fx.err.msg);
  } else {
    fg_nlu_result r;
    CHECK_OK(fg_nlu_ask(fx.nlu, "turn the lamp on", 16, &r));
    CHECK(r.json && strcmp(r.json, ref.ask_ref) == 0);
  }
  fg_nlu_free(fx.nlu);
  fx.nlu = NULL;
  fg_catalog_free(fx.cat);
  fx.cat = NULL;
}
static void nlu_ask_setup(void) {
  nlu_setup_plain();
  fg_nlu_params p = nlu_params(NULL);
  CHECK_OK(fg_nlu_create(g_model, fx.cat, &p, &fx.nlu, NULL));
}
static void nlu_ask_setup_warm(void) {
  nlu_ask_setup();
  CHECK_OK(fg_nlu_ask(fx.nlu, "roll the dice for me please, now", 32, &fx.res));
}
static fg_status nlu_ask_attempt(void) { return fg_nlu_ask(fx.nlu, "turn the lamp on", 16, &fx.res); }
static void nlu_ask_check(fg_status st) {
  if (st != FG_OK) {
    CHECK(fg_nlu_errmsg(fx.nlu)[0] != '\0');
    CHECK_OK(fg_nlu_ask(fx.nlu, "turn the lamp on", 16, &fx.res)); /* the engine still works */
  }
  CHECK(fx.res.json && strcmp(fx.res.json, ref.ask_ref) == 0);
  fg_nlu_free(fx.nlu);
  fx.nlu = NULL;
  fg_catalog_free(fx.cat);
  fx.cat = NULL;
}

static float *session_logits_after(const fg_snapshot *from, const int32_t *ids, size_t n, uint32_t n_batch) {
  fg_session_params p = small_params(n_batch, 1, 512);
  fg_session *s = NULL;
  if (from) CHECK_OK(fg_session_fork(from, &p, &s, NULL));
  else CHECK_OK(fg_session_create(g_model, &p, &s, NULL));
  CHECK_OK(fg_session_prefill(s, ids, n, NULL));
  float *l = logits_copy(s);
  fg_session_free(s);
  return l;
}

static void make_references(void) {
  random_ids(ref.prefix, 250);
  random_ids(ref.more, 64);
  fg_session_params p = small_params(8, 1, 512);
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(g_model, &p, &s, NULL));
  CHECK_OK(fg_session_prefill(s, ref.prefix, 20, NULL));
  CHECK_OK(fg_session_snapshot(s, &ref.at20));
  CHECK_OK(fg_session_prefill(s, ref.prefix + 20, 230, NULL));
  CHECK_OK(fg_session_snapshot(s, &ref.at250));
  fg_session_free(s);
  ref.fresh45 = session_logits_after(NULL, ref.more, 45, 8);
  ref.at20_45 = session_logits_after(ref.at20, ref.more, 45, 8);
  ref.at20_1 = session_logits_after(ref.at20, ref.more, 1, 8);
  ref.at250_20 = session_logits_after(ref.at250, ref.more, 20, 8);
  snprintf(ref.snap20_path, sizeof ref.snap20_path, "%s", scratch_path("at20.fgsnap"));
  CHECK_OK(fg_snapshot_save(ref.at20, ref.snap20_path, NULL));

  CHECK_OK(fg_tokenize(g_model, k_text, sizeof k_text - 1, FG_TOKENIZE_ADD_BOS, ref.tok_ref, 512, &ref.n_tok_ref));
  CHECK_OK(fg_detokenize(g_model, ref.tok_ref, ref.n_tok_ref, ref.detok_ref, sizeof ref.detok_ref, &ref.n_detok_ref));
  fg_catalog *c = NULL;
  CHECK_OK(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &c, NULL));
  CHECK_OK(fg_call_parse(c, k_generated, sizeof k_generated - 1, ref.parse_ref, sizeof ref.parse_ref, &ref.n_parse_ref,
                         NULL));
  fg_nlu_params np = nlu_params(scratch_path("nlu-load.fgsnap"));
  remove(np.snapshot_path);
  fg_nlu *e = NULL;
  CHECK_OK(fg_nlu_create(g_model, c, &np, &e, NULL));
  fg_nlu_info info;
  CHECK_OK(fg_nlu_get_info(e, &info));
  CHECK(info.snapshot_written && !info.prefix_from_file);
  fg_nlu_result r;
  CHECK_OK(fg_nlu_ask(e, "turn the lamp on", 16, &r));
  snprintf(ref.ask_ref, sizeof ref.ask_ref, "%s", r.json ? r.json : "");
  printf("references: NLU prefix %u tokens, answer %s, stop %s\n", info.prefix_tokens, ref.ask_ref, r.stop);
  fg_nlu_free(e);
  fg_catalog_free(c);
}

static void test_alloc_failures(void) {
  printf("1. failing allocations (k = 1..N+1 per operation%s)\n", g_emulated ? "; emulated: a subset of k" : "");
  const sweep_case cases[] = {
      {"fg_model_load (mmap)", load_setup_mmap, load_attempt, load_check, 1},
      {"fg_model_load (read, check)", load_setup_nommap, load_attempt, load_check, 1},
      {"fg_session_create (1 thread)", create_setup1, create_attempt, create_check, EMU_EVERY},
      {"fg_session_create (2 threads)", create_setup2, create_attempt, create_check, EMU_EVERY},
      {"fg_session_prefill (pos 0, +45)", prefill_setup_fresh, prefill_attempt, prefill_check, EMU_EVERY},
      {"fg_session_prefill (+45, then free)", prefill_setup_fresh, prefill_attempt, prefill_check_free, EMU_EVERY},
      {"fg_session_prefill (fork@20, +45)", prefill_setup_fork20, prefill_attempt, prefill_check, EMU_EVERY},
      {"fg_session_prefill (fork@250, +20)", prefill_setup_fork250, prefill_attempt, prefill_check, EMU_EVERY},
      {"fg_session_step (fork@20)", step_setup_fork20, step_attempt, step_check, EMU_EVERY},
      {"fg_session_snapshot", snapshot_setup, snapshot_attempt, snapshot_check, EMU_EVERY},
      {"fg_session_fork", fork_setup, fork_attempt, fork_check, EMU_EVERY},
      {"fg_session_restore", restore_setup, restore_attempt, restore_check, EMU_EVERY},
      {"fg_snapshot_save", nop, save_attempt, save_check, EMU_EVERY},
      {"fg_snapshot_load", nop, snapload_attempt, snapload_check, EMU_EVERY},
      {"fg_tokenize", nop, tokenize_attempt, tokenize_check, EMU_EVERY},
      {"fg_detokenize", nop, detokenize_attempt, detokenize_check, EMU_EVERY},
      {"fg_catalog_parse", nop, catalog_attempt, catalog_check, EMU_EVERY},
      {"fg_catalog_render_prefix", catalog_setup, prefix_attempt, prefix_check, EMU_EVERY},
      {"fg_call_parse", catalog_setup, callparse_attempt, callparse_check, EMU_EVERY},
      {"fg_nlu_create", nlu_setup_plain, nlu_create_attempt, nlu_create_check, EMU_EVERY},
      {"fg_nlu_create (snapshot file)", nlu_setup_load, nlu_create_attempt, nlu_create_check, EMU_EVERY},
      {"fg_nlu_create (writes snapshot)", nlu_setup_write, nlu_create_attempt, nlu_create_check, EMU_EVERY},
      {"fg_nlu_ask", nlu_ask_setup, nlu_ask_attempt, nlu_ask_check, EMU_EVERY},
      {"fg_nlu_ask (warm engine)", nlu_ask_setup_warm, nlu_ask_attempt, nlu_ask_check, EMU_EVERY},
  };
  uint64_t sites[sizeof cases / sizeof cases[0]];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) sites[i] = sweep(&cases[i]);
  /* the sweeps are meaningful only if the operations allocate at all */
  CHECK(sites[0] > 0 && sites[2] > 0 && sites[4] > 0 && sites[13] > 0 && sites[16] > 0 && sites[19] > 0);
  printf("  total: %llu allocation sites failed one at a time\n", (unsigned long long)g_sites_total);
  remove(scratch_path("nlu-write.fgsnap"));
  free(fx.logits_before);
  fx.logits_before = NULL;
}

// ----------------------------------------------------------------------------------------------
// 2. NULL and out-of-range arguments at every public entry point

static void log_sink(fg_log_level level, const char *msg, void *ud) {
  (void)level;
  (void)msg;
  (*(int *)ud)++;
}

static void test_bad_arguments(void) {
  printf("2. NULL / out-of-range arguments\n");
  /* version, status, types */
  CHECK_EQ_INT(fg_version_number(), FG_VERSION_NUMBER);
  CHECK(fg_version_string() != NULL);
  CHECK(fg_status_str((fg_status)999) != NULL && fg_status_str((fg_status)-1) != NULL);
  for (int s = 0; s <= 10; s++) CHECK(strcmp(fg_status_str((fg_status)s), "unknown status") != 0);
  CHECK(strcmp(fg_type_name(12345), "?") == 0);
  CHECK(strcmp(fg_type_name(0xffffffffu), "?") == 0);
  int logs = 0;
  fg_set_log_callback(log_sink, &logs);
  fg_model_params_init(NULL);
  fg_session_params_init(NULL);
  fg_nlu_params_init(NULL);
  fg_gen_params_init(NULL);

  /* model */
  fg_error err;
  fg_model *m = (fg_model *)&err;
  CHECK_EQ_INT(fg_model_load(NULL, NULL, &m, &err), FG_ERR_INVALID_ARG);
  CHECK(m == NULL && err.msg[0] != '\0');
  CHECK_EQ_INT(fg_model_load(fg_test_model_path("tiny-f32.gguf"), NULL, NULL, NULL), FG_ERR_INVALID_ARG);
  m = (fg_model *)&err;
  CHECK_EQ_INT(fg_model_load("/nonexistent/x.gguf", NULL, &m, NULL), FG_ERR_IO);
  CHECK(m == NULL);
  CHECK_EQ_INT(fg_model_load("/", NULL, &m, &err), FG_ERR_IO);
  CHECK_EQ_INT(fg_model_load("/dev/null", NULL, &m, &err), FG_ERR_IO); /* not a regular file */
  {
    const char *p = scratch_path("empty.gguf");
    FILE *f = fopen(p, "wb");
    fclose(f);
    CHECK_EQ_INT(fg_model_load(p, NULL, &m, &err), FG_ERR_FORMAT);
    f = fopen(p, "wb");
    fputs("this is not a GGUF file", f);
    fclose(f);
    CHECK_EQ_INT(fg_model_load(p, NULL, &m, &err), FG_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, p) != NULL, "the message names the file: %s", err.msg);
    remove(p);
  }
  CHECK(m == NULL);
  fg_model_free(NULL);
  fg_model_info info;
  CHECK_EQ_INT(fg_model_get_info(NULL, &info), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_model_get_info(g_model, NULL), FG_ERR_INVALID_ARG);

  /* tokenizer */
  int32_t ids[16];
  size_t n = 99;
  char buf[64];
  CHECK_EQ_INT(fg_tokenize(NULL, "a", 1, 0, ids, 16, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_tokenize(g_model, NULL, 5, 0, ids, 16, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_tokenize(g_model, "abc", 3, 0, ids, 16, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_tokenize(g_model, "abc", 3, 0, NULL, 16, &n), FG_ERR_INVALID_ARG);
  CHECK_OK(fg_tokenize(g_model, NULL, 0, 0, NULL, 0, &n));
  CHECK_EQ_INT(n, 0);
  CHECK_EQ_INT(fg_tokenize(g_model, k_text, sizeof k_text - 1, 0, ids, 2, &n), FG_ERR_BUFFER_TOO_SMALL);
  CHECK(n > 2);
  CHECK_EQ_INT(fg_tokenize(g_model, k_text, sizeof k_text - 1, 0xffffffffu, NULL, 0, &n), FG_ERR_BUFFER_TOO_SMALL);
  const int32_t bad_ids[3] = {5, -1, (int32_t)g_vocab};
  CHECK_EQ_INT(fg_detokenize(NULL, bad_ids, 1, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_detokenize(g_model, NULL, 3, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_detokenize(g_model, bad_ids, 1, NULL, 5, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_detokenize(g_model, bad_ids, 1, buf, sizeof buf, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_detokenize(g_model, bad_ids + 1, 1, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_detokenize(g_model, bad_ids + 2, 1, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  const int32_t bos = 2;
  CHECK_EQ_INT(fg_detokenize(g_model, &bos, 1, NULL, 0, &n), FG_ERR_BUFFER_TOO_SMALL);
  CHECK_EQ_INT(n, 5); /* "<bos>" */
  int32_t id = -3;
  CHECK_EQ_INT(fg_token_lookup(NULL, "<bos>", &id), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_token_lookup(g_model, NULL, &id), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_token_lookup(g_model, "<bos>", NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_token_lookup(g_model, "no such piece at all", &id), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(id, -3);
  CHECK_OK(fg_token_lookup(g_model, "<bos>", &id));
  CHECK_EQ_INT(id, 2);

  /* session create: bad models, outs and params */
  fg_session *s = (fg_session *)&err;
  CHECK_EQ_INT(fg_session_create(NULL, NULL, &s, NULL), FG_ERR_INVALID_ARG);
  CHECK(s == NULL);
  CHECK_EQ_INT(fg_session_create(g_model, NULL, NULL, NULL), FG_ERR_INVALID_ARG);
  const struct { uint32_t n_ctx, n_threads, n_batch, kv_type; fg_status want; } bad_params[] = {
      {2049, 1, 8, 0, FG_ERR_INVALID_ARG},      {0xffffffffu, 1, 8, 0, FG_ERR_INVALID_ARG},
      {64, 257, 8, 0, FG_ERR_INVALID_ARG},      {64, 0xffffffffu, 8, 0, FG_ERR_INVALID_ARG},
      {64, 1, 4097, 0, FG_ERR_INVALID_ARG},     {64, 1, 0xffffffffu, 0, FG_ERR_INVALID_ARG},
      {64, 1, 8, 2, FG_ERR_UNSUPPORTED},        {64, 1, 8, 77, FG_ERR_UNSUPPORTED},
  };
  for (size_t i = 0; i < sizeof bad_params / sizeof bad_params[0]; i++) {
    fg_session_params p = small_params(bad_params[i].n_batch, bad_params[i].n_threads, bad_params[i].n_ctx);
    p.kv_type = bad_params[i].kv_type;
    s = (fg_session *)&err;
    fg_status st = fg_session_create(g_model, &p, &s, NULL);
    CHECK_MSG(st == bad_params[i].want && s == NULL, "params #%zu: %s", i, fg_status_str(st));
    char what[128];
    snprintf(what, sizeof what, "create with n_ctx %u, n_threads %u, n_batch %u, kv_type %u", bad_params[i].n_ctx,
             bad_params[i].n_threads, bad_params[i].n_batch, bad_params[i].kv_type);
    table_row("session API", what, st, "out = NULL; message only through the log callback");
  }
  CHECK(logs > 0); /* failed creates explain themselves through the log callback */
  fg_set_log_callback(NULL, NULL);

  /* a session: appends */
  fg_session_params p = small_params(4, 1, 16);
  CHECK_OK(fg_session_create(g_model, &p, &s, NULL));
  CHECK(fg_session_logits(s) == NULL);
  CHECK(fg_session_model(s) == g_model);
  int32_t next = -9;
  random_ids(ids, 16);
  CHECK_EQ_INT(fg_session_prefill(NULL, ids, 1, &next), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_prefill(s, NULL, 1, &next), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_prefill(s, ids, 0, &next), FG_ERR_INVALID_ARG);
  table_row("session API", "prefill of 0 tokens", FG_ERR_INVALID_ARG, fg_session_errmsg(s));
  CHECK_EQ_INT(fg_session_prefill(s, ids, 17, &next), FG_ERR_CONTEXT_FULL);
  CHECK_EQ_INT(fg_session_prefill(s, ids, SIZE_MAX, &next), FG_ERR_CONTEXT_FULL);
  table_row("session API", "prefill of SIZE_MAX tokens (n_ctx 16)", FG_ERR_CONTEXT_FULL, fg_session_errmsg(s));
  CHECK_EQ_INT(fg_session_step(NULL, 5, &next), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_step(s, -1, &next), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_step(s, (int32_t)g_vocab, &next), FG_ERR_INVALID_ARG);
  table_row("session API", "token id = n_vocab", FG_ERR_INVALID_ARG, fg_session_errmsg(s));
  CHECK_EQ_INT(fg_session_step(s, INT32_MIN, &next), FG_ERR_INVALID_ARG);
  CHECK(strstr(fg_session_errmsg(s), "vocabulary") != NULL);
  CHECK_EQ_INT(fg_session_prefill_embeddings(NULL, NULL, 1, &next), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_prefill_embeddings(s, NULL, 1, &next), FG_ERR_INVALID_ARG);
  table_row("session API", "embeddings NULL", FG_ERR_INVALID_ARG, fg_session_errmsg(s));
  float rows[2 * 64];
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) rows[i] = (float)(i % 7) - 3.0f;
  CHECK_EQ_INT(fg_session_prefill_embeddings(s, rows, 0, &next), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_prefill_embeddings(s, rows, SIZE_MAX / 2, &next), FG_ERR_CONTEXT_FULL);
  CHECK_EQ_INT(next, -9);
  CHECK_EQ_INT(fg_session_position(s), 0);
  CHECK(fg_session_logits(s) == NULL);
  /* non-finite embeddings are the caller's data: computed, never a crash */
  rows[3] = NAN;
  rows[70] = INFINITY;
  CHECK_OK(fg_session_prefill_embeddings(s, rows, 2, &next));
  table_row("session API", "NaN/Inf in embedding rows", FG_OK, "computed (the caller's data); no crash");
  CHECK(next >= 0 && (uint32_t)next < g_vocab);
  CHECK_OK(fg_session_prefill(s, ids, 14, &next));
  CHECK_EQ_INT(fg_session_step(s, 5, &next), FG_ERR_CONTEXT_FULL); /* 16 of 16 used */
  CHECK(strstr(fg_session_errmsg(s), "fit") != NULL);

  /* snapshots, forks, restore */
  fg_snapshot *snap = (fg_snapshot *)&err;
  CHECK_EQ_INT(fg_session_snapshot(NULL, &snap), FG_ERR_INVALID_ARG);
  CHECK(snap == NULL);
  CHECK_EQ_INT(fg_session_snapshot(s, NULL), FG_ERR_INVALID_ARG);
  CHECK_OK(fg_session_snapshot(s, &snap));
  CHECK_EQ_INT(fg_snapshot_position(snap), 16);
  CHECK_EQ_INT(fg_snapshot_position(NULL), 0);
  fg_session *f = (fg_session *)&err;
  CHECK_EQ_INT(fg_session_fork(NULL, NULL, &f, NULL), FG_ERR_INVALID_ARG);
  CHECK(f == NULL);
  CHECK_EQ_INT(fg_session_fork(snap, NULL, NULL, NULL), FG_ERR_INVALID_ARG);
  fg_session_params small = small_params(4, 1, 8); /* smaller than the snapshot */
  f = (fg_session *)&err;
  CHECK_EQ_INT(fg_session_fork(snap, &small, &f, NULL), FG_ERR_CONTEXT_FULL);
  table_row("session API", "fork of a 16-token snapshot with n_ctx 8", FG_ERR_CONTEXT_FULL, "out = NULL");
  CHECK(f == NULL);
  fg_session_params huge = small_params(4, 1, 100000);
  f = (fg_session *)&err;
  CHECK_EQ_INT(fg_session_fork(snap, &huge, &f, NULL), FG_ERR_INVALID_ARG);
  CHECK(f == NULL);
  CHECK_EQ_INT(fg_session_restore(NULL, snap), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_restore(s, NULL), FG_ERR_INVALID_ARG);
  fg_session *s8 = NULL;
  CHECK_OK(fg_session_create(g_model, &small, &s8, NULL));
  CHECK_EQ_INT(fg_session_restore(s8, snap), FG_ERR_CONTEXT_FULL);
  table_row("session API", "restore a 16-token snapshot into n_ctx 8", FG_ERR_CONTEXT_FULL, fg_session_errmsg(s8));
  CHECK_EQ_INT(fg_session_position(s8), 0);
  fg_session_free(s8);
  fg_session_stats stats;
  CHECK_EQ_INT(fg_session_get_stats(NULL, &stats), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_get_stats(s, NULL), FG_ERR_INVALID_ARG);
  CHECK(fg_session_logits(NULL) == NULL);
  CHECK_EQ_INT(fg_session_position(NULL), 0);
  CHECK(fg_session_model(NULL) == NULL);
  CHECK(fg_session_errmsg(NULL) != NULL);

  /* snapshot files */
  CHECK_EQ_INT(fg_snapshot_save(NULL, scratch_path("x.fgsnap"), &err), FG_ERR_INVALID_ARG);
  CHECK(err.code == FG_ERR_INVALID_ARG && err.msg[0] != '\0');
  CHECK_EQ_INT(fg_snapshot_save(snap, NULL, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_snapshot_save(snap, "/nonexistent/dir/x.fgsnap", &err), FG_ERR_IO);
  CHECK(err.code == FG_ERR_IO && strstr(err.msg, "/nonexistent/dir") != NULL);
  CHECK_EQ_INT(fg_snapshot_save(snap, "/nonexistent/dir/x.fgsnap", NULL), FG_ERR_IO);
  char longpath[5000];
  memset(longpath, 'a', sizeof longpath - 1);
  longpath[sizeof longpath - 1] = '\0';
  CHECK_EQ_INT(fg_snapshot_save(snap, longpath, NULL), FG_ERR_INVALID_ARG);
  { /* a save failing at its last step (the path is a directory) names it and leaves no temporary file */
    const char *dir = scratch_path("dir.fgsnap");
    CHECK(mkdir(dir, 0755) == 0);
    CHECK_EQ_INT(fg_snapshot_save(snap, dir, &err), FG_ERR_IO);
    CHECK(err.code == FG_ERR_IO && strstr(err.msg, "rename to") != NULL && strstr(err.msg, dir) != NULL);
    char pattern[700];
    snprintf(pattern, sizeof pattern, "%s.tmp.*", dir);
    glob_t g;
    CHECK_EQ_INT(glob(pattern, 0, NULL, &g), GLOB_NOMATCH);
    globfree(&g);
    rmdir(dir);
  }
  fg_snapshot *ls = (fg_snapshot *)&err;
  CHECK_EQ_INT(fg_snapshot_load(NULL, ref.snap20_path, &ls, NULL), FG_ERR_INVALID_ARG);
  CHECK(ls == NULL);
  CHECK_EQ_INT(fg_snapshot_load(g_model, NULL, &ls, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_snapshot_load(g_model, ref.snap20_path, NULL, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_snapshot_load(g_model, "/nonexistent/x.fgsnap", &ls, NULL), FG_ERR_IO);
  CHECK_EQ_INT(fg_snapshot_load(g_model, "/", &ls, NULL), FG_ERR_IO); /* a directory */
  CHECK_EQ_INT(fg_snapshot_load(g_model, "/dev/null", &ls, NULL), FG_ERR_FORMAT);
  CHECK(ls == NULL);
  ls = (fg_snapshot *)&err;
  CHECK_EQ_INT(fg_snapshot_load(g_model, "/dev/null", &ls, &err), FG_ERR_FORMAT);
  CHECK(ls == NULL && err.code == FG_ERR_FORMAT && strstr(err.msg, "/dev/null") != NULL);
  fg_snapshot_free(snap);
  fg_session_free(s);
  fg_session_free(NULL);
  fg_snapshot_free(NULL);

  /* catalogs, rendering, call text */
  fg_catalog *c = (fg_catalog *)&err;
  CHECK_EQ_INT(fg_catalog_parse(NULL, 5, &c, &err), FG_ERR_INVALID_ARG);
  CHECK(c == NULL);
  CHECK_EQ_INT(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, NULL, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_catalog_parse(NULL, 0, &c, &err), FG_ERR_FORMAT);
  CHECK_EQ_INT(fg_catalog_parse(k_catalog, sizeof k_catalog - 2, &c, NULL), FG_ERR_FORMAT); /* cut short */
  CHECK_EQ_INT(fg_catalog_parse("[]", 2, &c, &err), FG_ERR_FORMAT);
  CHECK(c == NULL && err.msg[0] != '\0');
  fg_catalog_free(NULL);
  CHECK_EQ_INT(fg_catalog_n_functions(NULL), 0);
  CHECK_OK(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &c, NULL));
  CHECK_EQ_INT(fg_catalog_render_prefix(NULL, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_catalog_render_prefix(c, buf, sizeof buf, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_catalog_render_prefix(c, NULL, 0, &n), FG_ERR_BUFFER_TOO_SMALL);
  CHECK(n > sizeof buf);
  CHECK_EQ_INT(fg_catalog_render_prefix(c, buf, sizeof buf, &n), FG_ERR_BUFFER_TOO_SMALL);
  CHECK_EQ_INT(fg_render_utterance(NULL, 3, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_render_utterance("hi", 2, buf, sizeof buf, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_render_utterance(" \t\n", 3, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_render_utterance("a<end_of_turn>b", 15, buf, sizeof buf, &n), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_render_utterance("hi", 2, NULL, 0, &n), FG_ERR_BUFFER_TOO_SMALL);
  CHECK_EQ_INT(fg_call_parse(c, NULL, 4, buf, sizeof buf, &n, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_call_parse(c, "x", 1, buf, sizeof buf, NULL, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_call_parse(NULL, NULL, 0, buf, sizeof buf, &n, NULL), FG_OK);
  CHECK_EQ_INT(fg_call_parse(c, k_generated, sizeof k_generated - 1, NULL, 0, &n, NULL), FG_ERR_BUFFER_TOO_SMALL);

  /* NLU engine */
  fg_nlu *e = (fg_nlu *)&err;
  fg_nlu_params np = nlu_params(NULL);
  CHECK_EQ_INT(fg_nlu_create(NULL, c, &np, &e, &err), FG_ERR_INVALID_ARG);
  CHECK(e == NULL && err.msg[0] != '\0');
  CHECK_EQ_INT(fg_nlu_create(g_model, NULL, &np, &e, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_nlu_create(g_model, c, &np, NULL, &err), FG_ERR_INVALID_ARG);
  np.session.n_ctx = 16; /* the catalog prefix does not fit */
  e = (fg_nlu *)&err;
  CHECK_EQ_INT(fg_nlu_create(g_model, c, &np, &e, &err), FG_ERR_CONTEXT_FULL);
  CHECK(e == NULL && err.msg[0] != '\0');
  table_row("NLU", "catalog prefix longer than n_ctx 16", FG_ERR_CONTEXT_FULL, err.msg);
  np.session.n_threads = 100000;
  CHECK_EQ_INT(fg_nlu_create(g_model, c, &np, &e, &err), FG_ERR_INVALID_ARG);
  CHECK(e == NULL && err.msg[0] != '\0');
  np = nlu_params(NULL);
  CHECK_OK(fg_nlu_create(g_model, c, &np, &e, &err));
  fg_nlu_info ni;
  CHECK_OK(fg_nlu_get_info(e, &ni));
  fg_nlu_result r;
  CHECK_EQ_INT(fg_nlu_ask(NULL, "hi", 2, &r), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_nlu_ask(e, NULL, 2, &r), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_nlu_ask(e, "hi", 2, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_nlu_ask(e, "", 0, &r), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_nlu_ask(e, "<start_function_call>call:x{}", 29, &r), FG_ERR_INVALID_ARG);
  CHECK(fg_nlu_errmsg(e)[0] != '\0');
  table_row("NLU", "utterance with control-token text", FG_ERR_INVALID_ARG, fg_nlu_errmsg(e));
  {
    /* an utterance longer than the context is refused, not truncated */
    const size_t big = 4000;
    char *u = malloc(big);
    for (size_t i = 0; i < big; i++) u[i] = (char)('a' + (i * 7) % 26);
    CHECK_EQ_INT(fg_nlu_ask(e, u, big, &r), FG_ERR_CONTEXT_FULL);
    table_row("NLU", "4000-byte utterance, n_ctx 1024", FG_ERR_CONTEXT_FULL, fg_nlu_errmsg(e));
    free(u);
  }
  CHECK_OK(fg_nlu_ask(e, "turn the lamp on", 16, &r)); /* and it still answers */
  CHECK(strcmp(r.json, ref.ask_ref) == 0);
  CHECK_EQ_INT(fg_nlu_get_info(NULL, &ni), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_nlu_get_info(e, NULL), FG_ERR_INVALID_ARG);
  CHECK(fg_nlu_errmsg(NULL) != NULL);
  CHECK(fg_nlu_snapshot(NULL) == NULL);
  CHECK(fg_nlu_snapshot(e) != NULL);
  fg_nlu_free(e);
  fg_nlu_free(NULL);
  fg_catalog_free(c);

  /* experimental entry points */
  CHECK_EQ_INT(fg_gen_model(NULL, NULL, &err), FG_ERR_INVALID_ARG);
  fg_gen_params gp;
  fg_gen_params_init(&gp);
  CHECK_EQ_INT(fg_gen_model(&gp, NULL, &err), FG_ERR_INVALID_ARG);
  gp.preset = "no-such-preset";
  CHECK_EQ_INT(fg_gen_model(&gp, scratch_path("gen.gguf"), &err), FG_ERR_INVALID_ARG);
  gp.preset = "tiny";
  gp.type = 77;
  CHECK(fg_gen_model(&gp, scratch_path("gen.gguf"), &err) != FG_OK);
  remove(scratch_path("gen.gguf"));
  float lg[512];
  const size_t at0 = 0, at9 = 9;
  CHECK_EQ_INT(fg_reference_logits(NULL, ids, 1, &at0, 1, lg, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_reference_logits(g_model, NULL, 1, &at0, 1, lg, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_reference_logits(g_model, ids, 1, &at0, 1, NULL, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_reference_logits(g_model, ids, 2, &at9, 1, lg, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_reference_logits(g_model, bad_ids, 3, &at0, 1, lg, &err), FG_ERR_INVALID_ARG);
  int32_t gen_out[4];
  CHECK_EQ_INT(fg_reference_generate(NULL, ids, 1, 4, gen_out, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_reference_generate(g_model, ids, 1, 4, NULL, &err), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_reference_generate(g_model, bad_ids, 2, 4, gen_out, &err), FG_ERR_INVALID_ARG);
}

// ----------------------------------------------------------------------------------------------
// 3. Abort from another thread

typedef struct abort_ctl {
  atomic_int stop;        /* set by the watcher; read by the callback */
  atomic_uint polls;      /* callback invocations */
  atomic_int done;        /* the prefill returned */
  unsigned polls_before;  /* watcher sets stop after this many polls */
  double t_stop;          /* when stop was set (watcher thread) */
} abort_ctl;

static bool abort_poll(void *ud) {
  abort_ctl *c = ud;
  atomic_fetch_add(&c->polls, 1);
  return atomic_load(&c->stop) != 0;
}

static void *abort_watcher(void *ud) {
  abort_ctl *c = ud;
  while (!atomic_load(&c->done) && atomic_load(&c->polls) < c->polls_before) {
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
  c->t_stop = fg_time_s();
  atomic_store(&c->stop, 1);
  return NULL;
}

static void abort_run(uint32_t n_threads) {
  enum { N_LONG = 1500 };
  int32_t *ids = malloc(sizeof(int32_t) * N_LONG);
  random_ids(ids, N_LONG);
  abort_ctl ctl;
  memset(&ctl, 0, sizeof ctl);
  ctl.polls_before = 300; /* 6 layers per batch of 8: about 400 of the 1500 tokens in */
  fg_session_params p = small_params(8, n_threads, 2048);
  p.abort_cb = abort_poll;
  p.abort_user_data = &ctl;
  fg_session *s = NULL, *r = NULL;
  CHECK_OK(fg_session_create(g_model, &p, &s, NULL));
  CHECK_OK(fg_session_prefill(s, ref.prefix, 10, NULL));
  fx.s = s;
  record_session();

  pthread_t th;
  CHECK(pthread_create(&th, NULL, abort_watcher, &ctl) == 0);
  fg_status st = fg_session_prefill(s, ids, N_LONG, NULL);
  const double t_ret = fg_time_s();
  atomic_store(&ctl.done, 1);
  pthread_join(th, NULL);
  CHECK_MSG(st == FG_ERR_ABORTED, "%u threads: the long prefill returned %s", n_threads, fg_status_str(st));
  CHECK(strstr(fg_session_errmsg(s), "abort") != NULL);
  check_unchanged("aborted prefill");
  const unsigned polls = atomic_load(&ctl.polls);
  printf("  %u thread(s): aborted after %u polls (of ~%u), %.3f ms after the flag was set\n", n_threads, polls,
         (N_LONG / 8 + 1) * g_n_layer, (t_ret - ctl.t_stop) * 1e3);
  CHECK(polls >= ctl.polls_before && polls < (unsigned)(N_LONG / 8) * g_n_layer);

  /* unaborted, the same call completes and matches a session that was never interrupted */
  atomic_store(&ctl.stop, 0);
  CHECK_OK(fg_session_prefill(s, ids, N_LONG, NULL));
  fg_session_params q = small_params(8, n_threads, 2048);
  CHECK_OK(fg_session_create(g_model, &q, &r, NULL));
  CHECK_OK(fg_session_prefill(r, ref.prefix, 10, NULL));
  CHECK_OK(fg_session_prefill(r, ids, N_LONG, NULL));
  CHECK_EQ_INT(fg_session_position(s), 10 + N_LONG);
  CHECK(same_logits(fg_session_logits(s), fg_session_logits(r)));
  fg_session_free(s);
  fg_session_free(r);
  fx.s = NULL;
  free(ids);
}

static bool cancel_progress(uint64_t done, uint64_t total, void *ud) {
  (void)total;
  *(uint64_t *)ud = done;
  return done < 64; /* cancel after the first step */
}

static void test_abort(void) {
  printf("3. abort from another thread\n");
  abort_run(1);
  abort_run(2);
  /* the NLU prefix prefill cancelled through the progress callback */
  fg_catalog *c = NULL;
  CHECK_OK(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &c, NULL));
  fg_nlu_params np = nlu_params(NULL);
  uint64_t seen = 0;
  np.progress = cancel_progress;
  np.progress_user_data = &seen;
  fg_nlu *e = (fg_nlu *)&seen;
  fg_error err;
  CHECK_EQ_INT(fg_nlu_create(g_model, c, &np, &e, &err), FG_ERR_ABORTED);
  CHECK(e == NULL && err.msg[0] != '\0' && seen > 0);
  /* an utterance aborted through the session's callback; the engine answers the next one as usual */
  abort_ctl ctl;
  memset(&ctl, 0, sizeof ctl);
  np = nlu_params(NULL);
  np.session.abort_cb = abort_poll;
  np.session.abort_user_data = &ctl;
  CHECK_OK(fg_nlu_create(g_model, c, &np, &e, &err));
  fg_nlu_result r;
  atomic_store(&ctl.stop, 1);
  CHECK_EQ_INT(fg_nlu_ask(e, "turn the lamp on", 16, &r), FG_ERR_ABORTED);
  CHECK(strstr(fg_nlu_errmsg(e), "abort") != NULL);
  atomic_store(&ctl.stop, 0);
  CHECK_OK(fg_nlu_ask(e, "turn the lamp on", 16, &r));
  CHECK(strcmp(r.json, ref.ask_ref) == 0);
  fg_nlu_free(e);
  fg_catalog_free(c);
  free(fx.logits_before);
  fx.logits_before = NULL;
}

// ----------------------------------------------------------------------------------------------
// 4. Damaged and crafted snapshot files

/* Layout (src/session/snapshot.c): "FGSNAP\r\n" | u32 version | u32 header bytes | fingerprint[16] |
 * u32 n_layer, k_dim, v_dim, n_vocab, window, pos, n_ctx, has_logits, kv_type | pos x i32 tokens | per layer:
 * u32 first kept position + K/V rows | logits | u64 FNV-1a of everything before it. */
enum { OFF_VERSION = 8, OFF_HDR_BYTES = 12, OFF_FP = 16, OFF_DIMS = 32, OFF_TOKENS = 68 };

static void write_all(const char *path, const uint8_t *b, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL && fwrite(b, 1, n, f) == n);
  if (f) fclose(f);
}

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes the trailer, so that the loader's field checks (not its checksum) are what refuses. */
static void fix_checksum(uint8_t *b, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i + 8 < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  for (int i = 0; i < 8; i++) b[n - 8 + i] = (uint8_t)(h >> (8 * i));
}

/* Loads path; expects status want and a message containing needle; the out-pointer stays NULL. */
static uint64_t expect_refused(const char *path, fg_status want, const char *needle, const char *what) {
  fg_snapshot *x = (fg_snapshot *)&x;
  fg_error err;
  fg_alloc_fail_after(0);
  fg_status st = fg_snapshot_load(g_model, path, &x, &err);
  const uint64_t allocs = fg_alloc_fail_after(0);
  CHECK_MSG(st == want, "%s: got %s (%s), want %s", what, fg_status_str(st), err.msg, fg_status_str(want));
  CHECK_MSG(x == NULL, "%s: out-pointer not NULL", what);
  if (x != (fg_snapshot *)&x) fg_snapshot_free(x); /* a wrongly accepted file */
  CHECK_MSG(err.code == st, "%s: returned %s but reported code %d", what, fg_status_str(st), (int)err.code);
  CHECK_MSG(needle == NULL || strstr(err.msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, err.msg, needle);
  static char last[128];
  if (strcmp(last, what) != 0) { /* one row per kind of damage */
    snprintf(last, sizeof last, "%s", what);
    const char *msg = err.msg, *cut = strstr(msg, ".fgsnap: ");
    table_row("snapshot file", what, st, cut ? cut + 9 : msg);
  }
  return allocs;
}

static void test_snapshot_files(void) {
  printf("4. damaged and crafted snapshot files\n");
  /* a session forked before the file tests, and its logits: must be untouched by them */
  fg_session_params p = small_params(8, 1, 512);
  fg_session *fork_before = NULL;
  CHECK_OK(fg_session_fork(ref.at20, &p, &fork_before, NULL));

  size_t size = 0;
  uint8_t *good = (uint8_t *)fg_test_read_file(ref.snap20_path, &size);
  CHECK(good != NULL && size > OFF_TOKENS + 8);
  if (!good) return;
  uint8_t *b = malloc(size + 64);
  const char *bad = scratch_path("bad.fgsnap");
  fg_snapshot *ok = NULL;
  CHECK_OK(fg_snapshot_load(g_model, ref.snap20_path, &ok, NULL));
  fg_snapshot_free(ok);

  /* truncated: every length up to 160, then every 61st, and size-1 */
  int n_trunc = 0;
  for (size_t cut = 0; cut < size; cut = cut < 160 ? cut + 1 : cut + 61) {
    write_all(bad, good, cut);
    expect_refused(bad, FG_ERR_FORMAT, NULL, "truncated");
    n_trunc++;
  }
  write_all(bad, good, size - 1);
  expect_refused(bad, FG_ERR_FORMAT, "checksum", "truncated by one byte");
  /* one byte appended */
  memcpy(b, good, size);
  b[size] = 0;
  write_all(bad, b, size + 1);
  expect_refused(bad, FG_ERR_FORMAT, NULL, "one byte appended");

  /* one bit flipped at every 97th byte (and in the trailer) */
  int n_flip = 0;
  for (size_t off = 0; off < size; off += 97) {
    for (int bit = 0; bit < 8; bit += 3) {
      memcpy(b, good, size);
      b[off] ^= (uint8_t)(1u << bit);
      write_all(bad, b, size);
      expect_refused(bad, FG_ERR_FORMAT, NULL, "bit flip");
      n_flip++;
    }
  }
  memcpy(b, good, size);
  b[size - 1] ^= 0x80;
  write_all(bad, b, size);
  expect_refused(bad, FG_ERR_FORMAT, "checksum", "flip in the trailer");

  /* another version: as written by a future fgemma, checksum and all */
  const uint32_t versions[] = {0, 3, 0xffffffffu};
  for (size_t i = 0; i < 3; i++) {
    memcpy(b, good, size);
    put_u32(b + OFF_VERSION, versions[i]);
    fix_checksum(b, size);
    write_all(bad, b, size);
    expect_refused(bad, FG_ERR_FORMAT, "version", "another version");
  }

  /* another model: a different seed of the same shape */
  fg_model *other = NULL;
  CHECK_EQ_INT(fg_test_ensure_model("tiny-f32-seed2.gguf", "tiny", "f32", 2), 0);
  CHECK_OK(fg_model_load(fg_test_model_path("tiny-f32-seed2.gguf"), NULL, &other, NULL));
  fg_snapshot *x = (fg_snapshot *)&x;
  fg_error err;
  CHECK_EQ_INT(fg_snapshot_load(other, ref.snap20_path, &x, &err), FG_ERR_MISMATCH);
  CHECK(x == NULL && strstr(err.msg, "another model") != NULL);
  /* and a file of the other model offered to this one */
  fg_session *so = NULL;
  fg_snapshot *sno = NULL;
  CHECK_OK(fg_session_create(other, &p, &so, NULL));
  CHECK_OK(fg_session_prefill(so, ref.prefix, 20, NULL));
  CHECK_OK(fg_session_snapshot(so, &sno));
  const char *other_path = scratch_path("other.fgsnap");
  CHECK_OK(fg_snapshot_save(sno, other_path, NULL));
  expect_refused(other_path, FG_ERR_MISMATCH, "another model", "another model's file");
  CHECK_EQ_INT(fg_session_restore(fork_before, sno), FG_ERR_MISMATCH);
  table_row("session API", "restore a snapshot of another model", FG_ERR_MISMATCH, fg_session_errmsg(fork_before));
  remove(other_path);
  fg_snapshot_free(sno);
  fg_session_free(so);
  fg_model_free(other);

  /* crafted with a valid checksum: each field out of range on its own */
  const struct { size_t off; uint32_t v; const char *needle; const char *what; } crafted[] = {
      {OFF_HDR_BYTES, 65, "header", "header size"},
      {OFF_DIMS + 0, 7, "shape", "n_layer"},
      {OFF_DIMS + 4, 31, "shape", "k_dim"},
      {OFF_DIMS + 12, 513, "shape", "n_vocab"},
      {OFF_DIMS + 16, 9, "shape", "window"},
      {OFF_DIMS + 20, 600, "range", "pos > n_ctx"},
      {OFF_DIMS + 24, 4096, "range", "n_ctx > trained context"},
      {OFF_DIMS + 24, 0, "range", "n_ctx 0"},
      {OFF_DIMS + 28, 2, "range", "has_logits 2"},
      {OFF_DIMS + 32, 2, "KV type", "kv_type 2"},
      {OFF_DIMS + 20, 0, "range", "pos 0 with logits"},
      {OFF_TOKENS + 4 * 3, 512, "token", "token = n_vocab"},
      {OFF_TOKENS + 4 * 3, 0xfffffffeu, "token", "token -2"},
      {OFF_TOKENS + 4 * 20, 3, "window", "first kept position of layer 0"},
      {OFF_DIMS + 20, 19, NULL, "pos one less than the data"},
      {OFF_DIMS + 20, 21, NULL, "pos one more than the data"},
  };
  for (size_t i = 0; i < sizeof crafted / sizeof crafted[0]; i++) {
    memcpy(b, good, size);
    put_u32(b + crafted[i].off, crafted[i].v);
    fix_checksum(b, size);
    write_all(bad, b, size);
    expect_refused(bad, FG_ERR_FORMAT, crafted[i].needle, crafted[i].what);
  }
  /* extra bytes before the trailer */
  memcpy(b, good, size - 8);
  memset(b + size - 8, 0x5a, 16);
  fix_checksum(b, size + 8);
  write_all(bad, b, size + 8);
  expect_refused(bad, FG_ERR_FORMAT, NULL, "trailing bytes");

  /* a small file that claims a long context: refused, and refused before the KV cache is allocated.
   * pos 2000 needs 8000 bytes of tokens; give exactly those (all zero) and nothing more. */
  {
    const size_t n = OFF_TOKENS + 2000 * 4 + 8;
    uint8_t *big = calloc(1, n);
    memcpy(big, good, OFF_TOKENS);
    put_u32(big + OFF_DIMS + 20, 2000);
    put_u32(big + OFF_DIMS + 24, 2048);
    fix_checksum(big, n);
    write_all(bad, big, n);
    const uint64_t allocs = expect_refused(bad, FG_ERR_FORMAT, NULL, "pos 2000 in an 8 KB file");
    /* the loader's own buffers are a handful; one per KV block of 32 positions x 6 layers is 378 */
    printf("  a %zu-byte file claiming 2000 positions: %llu allocations before it was refused\n", n,
           (unsigned long long)allocs);
    CHECK_MSG(allocs < 16, "a truncated snapshot made %llu allocations (KV cache sized from the header before the "
              "file size was checked)", (unsigned long long)allocs);
    free(big);
  }
  printf("  %d truncations, %d bit flips, %zu crafted headers, 3 versions, 2 foreign models: all refused\n", n_trunc,
         n_flip, sizeof crafted / sizeof crafted[0] + 1);

  /* none of that touched the snapshot in memory or the sessions forked from it */
  CHECK_EQ_INT(fg_session_position(fork_before), 20);
  CHECK_OK(fg_session_step(fork_before, ref.more[0], NULL));
  CHECK(same_logits(fg_session_logits(fork_before), ref.at20_1));
  fg_session *fork_after = NULL;
  CHECK_OK(fg_session_fork(ref.at20, &p, &fork_after, NULL));
  CHECK_OK(fg_session_prefill(fork_after, ref.more, 45, NULL));
  CHECK(same_logits(fg_session_logits(fork_after), ref.at20_45));
  /* and the good file still loads to the same state */
  fg_snapshot *again = NULL;
  CHECK_OK(fg_snapshot_load(g_model, ref.snap20_path, &again, NULL));
  fg_session *fl = NULL;
  CHECK_OK(fg_session_fork(again, &p, &fl, NULL));
  CHECK_OK(fg_session_step(fl, ref.more[0], NULL));
  CHECK(same_logits(fg_session_logits(fl), ref.at20_1));
  fg_session_free(fl);
  fg_snapshot_free(again);
  fg_session_free(fork_after);
  fg_session_free(fork_before);
  remove(bad);
  free(b);
  free(good);
}

/* The message of a failed load goes to the caller's fg_error: two threads failing differently see their own. */
typedef struct errmsg_job {
  const char *path;
  char msg[256];
  fg_status st;
} errmsg_job;

static void *errmsg_worker(void *ud) {
  errmsg_job *j = ud;
  for (int i = 0; i < 50; i++) {
    fg_snapshot *x = NULL;
    fg_error err;
    j->st = fg_snapshot_load(g_model, j->path, &x, &err);
    snprintf(j->msg, sizeof j->msg, "%s", err.msg);
    fg_snapshot_free(x);
  }
  return NULL;
}

static void test_errmsg_threads(void) {
  printf("4b. snapshot error messages are per call: two threads see their own\n");
  errmsg_job a = {.path = "/nonexistent/a.fgsnap"}, b = {.path = "/dev/null"};
  pthread_t ta, tb;
  CHECK(pthread_create(&ta, NULL, errmsg_worker, &a) == 0);
  CHECK(pthread_create(&tb, NULL, errmsg_worker, &b) == 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  CHECK(a.st == FG_ERR_IO && strstr(a.msg, "/nonexistent/a.fgsnap") != NULL);
  CHECK(b.st == FG_ERR_FORMAT && strstr(b.msg, "/dev/null") != NULL);
}

// ----------------------------------------------------------------------------------------------
// 5. Handles freed after their model

/* Sessions, snapshots and engines keep their model (and engines their catalog) alive, so any
 * teardown order is safe (under ASan any model access after the last free would fail this test).
 * test_lifetime uses the handles after each free and covers every order. */
static void test_free_after_model(void) {
  printf("5. handles freed after their model\n");
  fg_model *m = NULL;
  CHECK_OK(fg_model_load(fg_test_model_path("tiny-f32.gguf"), NULL, &m, NULL));
  fg_catalog *c = NULL;
  CHECK_OK(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &c, NULL));
  fg_session_params p = small_params(8, 2, 256);
  fg_session *s = NULL, *f = NULL;
  fg_snapshot *snap = NULL;
  CHECK_OK(fg_session_create(m, &p, &s, NULL));
  CHECK_OK(fg_session_prefill(s, ref.prefix, 40, NULL));
  CHECK_OK(fg_session_snapshot(s, &snap));
  CHECK_OK(fg_session_fork(snap, &p, &f, NULL));
  fg_nlu_params np = nlu_params(NULL);
  fg_nlu *e = NULL;
  CHECK_OK(fg_nlu_create(m, c, &np, &e, NULL));
  fg_model_free(m);
  fg_session_free(f);
  fg_snapshot_free(snap);
  fg_session_free(s);
  fg_nlu_free(e);
  fg_catalog_free(c);
}


// ----------------------------------------------------------------------------------------------
// 6./7. Damaged model files; hostile text and catalogs (the table of docs/RELIABILITY.md)

/* Loads a damaged copy of the tiny model: refused with a status and a message, or, when the damage
 * hit a value that is still valid (a weight, a score), loaded and usable. Never a crash. */
static fg_status load_damaged(const char *path, const char *what, int *n_loaded) {
  fg_model *m = (fg_model *)&m;
  fg_error err;
  fg_status st = fg_model_load(path, NULL, &m, &err);
  if (st != FG_OK) {
    CHECK_MSG(m == NULL && err.code == st && err.msg[0] != '\0', "%s: %s without a report", what, fg_status_str(st));
    CHECK_MSG(st == FG_ERR_FORMAT || st == FG_ERR_UNSUPPORTED || st == FG_ERR_IO, "%s: %s (%s)", what,
              fg_status_str(st), err.msg);
    return st;
  }
  (*n_loaded)++;
  fg_session_params p = small_params(4, 1, 64);
  fg_session *s = NULL;
  fg_status ss = fg_session_create(m, &p, &s, NULL);
  if (ss == FG_OK) {
    fg_model_info info;
    fg_model_get_info(m, &info);
    int32_t ids[6] = {2, 5, 7, 11, 13, 17};
    for (int i = 0; i < 6; i++) ids[i] %= (int32_t)info.n_vocab;
    int32_t next = -1;
    CHECK_OK(fg_session_prefill(s, ids, 6, &next));
    CHECK(next >= 0 && (uint32_t)next < info.n_vocab);
    size_t n = 0;
    int32_t tok[64];
    fg_status ts = fg_tokenize(m, "hello world", 11, FG_TOKENIZE_ADD_BOS, tok, 64, &n);
    CHECK_MSG(ts == FG_OK || ts == FG_ERR_UNSUPPORTED || ts == FG_ERR_BUFFER_TOO_SMALL, "%s: tokenize %s", what,
              fg_status_str(ts));
  }
  fg_session_free(s);
  fg_model_free(m);
  return st;
}

static void test_model_files(void) {
  printf("6. damaged model files\n");
  size_t size = 0;
  uint8_t *good = (uint8_t *)fg_test_read_file(fg_test_model_path("tiny-f32.gguf"), &size);
  CHECK(good != NULL && size > 4096);
  if (!good) return;
  const char *bad = scratch_path("bad.gguf");
  int n_loaded = 0, n_cut = 0, n_flip = 0;
  /* where the tensor data starts: everything before is metadata and tensor infos */
  size_t meta = 0;
  {
    fg_model *m = NULL;
    CHECK_OK(fg_model_load(fg_test_model_path("tiny-f32.gguf"), NULL, &m, NULL));
    fg_model_info info;
    fg_model_get_info(m, &info);
    meta = size - (size_t)info.weight_bytes;
    fg_model_free(m);
  }
  for (size_t cut = 0; cut < size; cut = cut < 64 ? cut + 1 : cut < meta ? cut + 37 : cut + size / 16) {
    write_all(bad, good, cut);
    fg_status st = load_damaged(bad, "truncated model", &n_loaded);
    CHECK_MSG(st != FG_OK, "a model cut at %zu of %zu bytes loaded", cut, size);
    n_cut++;
  }
  uint8_t *b = malloc(size);
  for (size_t off = 0; off < meta; off += 97) {
    for (int bit = 0; bit < 8; bit += 3) {
      memcpy(b, good, size);
      b[off] ^= (uint8_t)(1u << bit);
      write_all(bad, b, size);
      load_damaged(bad, "bit flip in the metadata", &n_loaded);
      n_flip++;
    }
  }
  printf("  %d truncations (all refused), %d bit flips in %zu bytes of metadata (%d still loaded and ran)\n", n_cut,
         n_flip, meta, n_loaded);
  remove(bad);
  free(b);
  free(good);
}

/* The table: one row per kind of hostile input (printed with FG_REL_TABLE=1), each asserted. */
static void model_row(const char *what, const uint8_t *bytes, size_t n, fg_status want) {
  const char *path = scratch_path("row.gguf");
  write_all(path, bytes, n);
  fg_model *m = NULL;
  fg_error err;
  fg_status st = fg_model_load(path, NULL, &m, &err);
  CHECK_MSG(st == want, "%s: %s (%s)", what, fg_status_str(st), err.msg);
  const char *msg = strstr(err.msg, "row.gguf: ");
  table_row("GGUF file", what, st, st == FG_OK ? "" : msg ? msg + 10 : err.msg);
  fg_model_free(m);
  remove(path);
}

static void catalog_row(const char *what, const char *json, fg_status want, const char *needle) {
  fg_catalog *c = NULL;
  fg_error err;
  fg_err_clear(&err);
  fg_status st = fg_catalog_parse(json, strlen(json), &c, &err);
  CHECK_MSG(st == want && (!needle || strstr(err.msg, needle)), "%s: %s '%s'", what, fg_status_str(st), err.msg);
  table_row("catalog", what, st, err.msg);
  fg_catalog_free(c);
}

static void text_row(const char *what, const char *text, size_t len, uint32_t flags) {
  size_t n = 0;
  fg_status st = fg_tokenize(g_model, text, len, flags, NULL, 0, &n);
  CHECK_MSG(st == FG_ERR_BUFFER_TOO_SMALL || (st == FG_OK && n == 0), "%s: %s", what, fg_status_str(st));
  int32_t *ids = malloc((n + 1) * sizeof *ids);
  CHECK_OK(fg_tokenize(g_model, text, len, flags, ids, n, &n));
  size_t dn = 0;
  CHECK_EQ_INT(fg_detokenize(g_model, ids, n, NULL, 0, &dn), n ? FG_ERR_BUFFER_TOO_SMALL : FG_OK);
  char row[96];
  snprintf(row, sizeof row, "FG_OK, %zu ids (decodes to %zu bytes)", n, dn);
  table_row("tokenizer", what, FG_OK, row);
  free(ids);
}

static void call_row(const fg_catalog *c, const char *what, const char *gen) {
  char out[2048];
  size_t n = 0;
  fg_status st = fg_call_parse(c, gen, strlen(gen), out, sizeof out, &n, NULL);
  CHECK_MSG(st == FG_OK && strncmp(out, "{\"calls\":[", 10) == 0, "%s: %s", what, fg_status_str(st));
  table_row("call text", what, st, out);
}

static void test_table(void) {
  printf("7. hostile inputs, one of each kind%s\n", g_table ? " (| area | input | status | message |)" : "");
  /* GGUF */
  size_t size = 0;
  uint8_t *good = (uint8_t *)fg_test_read_file(fg_test_model_path("tiny-f32.gguf"), &size);
  if (!good) return;
  uint8_t *b = malloc(size);
  model_row("empty file", good, 0, FG_ERR_FORMAT);
  model_row("8 bytes", good, 8, FG_ERR_FORMAT);
  model_row("cut in the metadata", good, 300, FG_ERR_FORMAT);
  model_row("cut in the tensor data", good, size / 2, FG_ERR_FORMAT);
  memcpy(b, good, size);
  memcpy(b, "GGML", 4);
  model_row("bad magic", b, size, FG_ERR_FORMAT);
  memcpy(b, good, size);
  put_u32(b + 4, 4);
  model_row("GGUF version 4", b, size, FG_ERR_UNSUPPORTED);
  memcpy(b, good, size);
  put_u32(b + 4, 0x03000000u);
  model_row("big-endian GGUF", b, size, FG_ERR_UNSUPPORTED);
  memcpy(b, good, size);
  for (size_t i = 16; i < 24; i++) b[i] = 0xff; /* n_kv = 2^64-1 */
  model_row("n_kv = 2^64-1", b, size, FG_ERR_FORMAT);
  memcpy(b, good, size);
  for (size_t i = 8; i < 16; i++) b[i] = 0xff; /* n_tensors = 2^64-1 */
  model_row("n_tensors = 2^64-1", b, size, FG_ERR_FORMAT);
  {
    memcpy(b, good, size);
    uint8_t *a = memmem(b, size, "gemma3", 6);
    if (a) memcpy(a, "llama3", 6);
    model_row("general.architecture = llama3", b, size, FG_ERR_UNSUPPORTED);
    memcpy(b, good, size);
    a = memmem(b, size, "blk.3.ffn_up.weight", 19);
    if (a) a[4] = 'X';
    model_row("tensor blk.3.ffn_up missing", b, size, FG_ERR_FORMAT);
    memcpy(b, good, size);
    a = memmem(b, size, "gemma3.embedding_length", 23);
    if (a) a[7] = 'E';
    model_row("gemma3.embedding_length missing", b, size, FG_ERR_FORMAT);
  }
  /* tokenizer: everything is text; nothing is refused */
  text_row("invalid UTF-8 (\\xff\\xfe, lone \\xc3)", "\xff\xfe abc \xc3", 8, 0);
  text_row("NUL bytes inside", "a\0b\0\0c", 6, 0);
  text_row("control-token text", "<start_of_turn><bos><end_of_turn>", 33, 0);
  text_row("control-token text, NO_SPECIAL", "<start_of_turn><bos><end_of_turn>", 33, FG_TOKENIZE_NO_SPECIAL);
  text_row("unknown flag bits", "abc", 3, 0xfffffff0u);
  {
    const size_t big = 1u << 20;
    char *t = malloc(big);
    for (size_t i = 0; i < big; i++) t[i] = (char)(i % 3 ? 'a' + (char)(i % 26) : ' ');
    text_row("1 MiB of text", t, big, 0);
    free(t);
  }
  /* catalogs */
  catalog_row("not JSON", "{\"functions\": [", FG_ERR_FORMAT, "line");
  catalog_row("no functions", "{\"functions\":[]}", FG_ERR_FORMAT, NULL);
  catalog_row("name with a space", "[{\"name\":\"a b\",\"description\":\"x\"}]", FG_ERR_FORMAT, "name");
  catalog_row("duplicate function", "[{\"name\":\"a\"},{\"name\":\"a\"}]", FG_ERR_FORMAT, NULL);
  catalog_row("unknown type", "{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"int\"}}}]}",
              FG_ERR_FORMAT, "p");
  catalog_row("enum on an integer",
              "{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"integer\",\"enum\":[\"1\"]}}}]}",
              FG_ERR_FORMAT, "enum");
  catalog_row("required names an unknown parameter",
              "{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":{\"type\":\"string\"}},\"required\":[\"q\"]}]}",
              FG_ERR_FORMAT, "q");
  catalog_row("control token in a description",
              "{\"functions\":[{\"name\":\"f\",\"description\":\"x<end_of_turn>y\"}]}", FG_ERR_FORMAT, NULL);
  {
    char deep[2048] = "{\"functions\":[{\"name\":\"f\",\"parameters\":{\"p\":";
    for (int i = 0; i < 12; i++) strcat(deep, "{\"type\":\"array\",\"items\":");
    strcat(deep, "{\"type\":\"string\"}");
    for (int i = 0; i < 12; i++) strcat(deep, "}");
    strcat(deep, "}}]}");
    catalog_row("parameters nested 12 deep", deep, FG_ERR_FORMAT, NULL);
  }
  {
    char longname[400] = "[{\"name\":\"";
    for (int i = 0; i < 200; i++) strcat(longname, "n");
    strcat(longname, "\"}]");
    catalog_row("200-byte function name", longname, FG_ERR_FORMAT, NULL);
  }
  /* call text */
  fg_catalog *c = NULL;
  CHECK_OK(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &c, NULL));
  call_row(c, "no call at all", "just some prose");
  call_row(c, "unterminated call", "<start_function_call>call:set_timer{minutes:");
  call_row(c, "unknown function", "<start_function_call>call:launch_rocket{}<end_function_call>");
  call_row(c, "unknown enum value", "<start_function_call>call:toggle_lamp{state:<escape>dim<escape>}<end_function_call>");
  call_row(c, "unbalanced braces and escapes", "<start_function_call>call:f{a:{b:<escape>}}}<escape>,,}<end_function_call>");
  fg_catalog_free(c);
  free(b);
  free(good);
}

int main(int argc, char **argv) {
  if (fg_test_ensure_model("tiny-f32.gguf", "tiny", "f32", 1) != 0) return 1;
  const char *emu = getenv("FG_TEST_EMULATED");
  g_emulated = emu && emu[0] && strcmp(emu, "0") != 0;
  const char *tbl = getenv("FG_REL_TABLE");
  g_table = tbl && *tbl == '1';
  snprintf(g_scratch, sizeof g_scratch, "%s/rel_%d", FG_TEST_MODELS, (int)getpid());
  fg_error err;
  if (fg_model_load(fg_test_model_path("tiny-f32.gguf"), NULL, &g_model, &err) != FG_OK) {
    fprintf(stderr, "cannot load the tiny model: %s\n", err.msg);
    return 1;
  }
  fg_model_info info;
  CHECK_OK(fg_model_get_info(g_model, &info));
  g_vocab = info.n_vocab;
  g_n_layer = info.n_layer;
  CHECK(info.has_vocab && info.n_ctx_train >= 2048 && info.sliding_window > 0);

  /* sections by name on the command line (e.g. the TSan pass runs "abort errmsg free"); none = all */
  static const struct { const char *name; void (*fn)(void); } sections[] = {
      {"alloc", test_alloc_failures}, {"args", test_bad_arguments},     {"abort", test_abort},
      {"snapfile", test_snapshot_files}, {"errmsg", test_errmsg_threads}, {"free", test_free_after_model},
      {"model", test_model_files},    {"table", test_table},
  };
  make_references();
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
    bool run = argc < 2;
    for (int a = 1; a < argc; a++) run = run || strcmp(argv[a], sections[i].name) == 0;
    if (run) sections[i].fn();
  }

  fg_snapshot_free(ref.at20);
  fg_snapshot_free(ref.at250);
  free(ref.fresh45);
  free(ref.at20_45);
  free(ref.at20_1);
  free(ref.at250_20);
  remove(ref.snap20_path);
  remove(scratch_path("nlu-load.fgsnap"));
  fg_model_free(g_model);
  return fg_test_finish("test_reliability");
}
