/* test_lifetime.c — reference-counted models and catalogs: handles may be freed in any order, and
 * every handle that is still alive keeps working.
 *
 *   1. all 24 orders of freeing a model, a session, a snapshot and a fork: after each free every live
 *      handle is used (prefill, step, fork of the snapshot) and gives the logits of an untouched run,
 *      bit for bit; the model's count is always 1 per holder (+1 while the caller holds it);
 *   2. all 24 orders of freeing a model, a catalog, an NLU engine and a session forked from the engine's
 *      prefix: asks after the model and the catalog were freed give the reference answer;
 *   3. every allocation of session create/fork/snapshot, snapshot load and NLU create made to fail:
 *      NOMEM and the counts of the model and the catalog unchanged (no reference leaked or dropped);
 *   4. threads: forks of one snapshot step on 4 threads while the main thread frees the snapshot and
 *      the model; the last session to go frees the model (run under TSan: `test_lifetime threads`).
 *   5. fg_snapshot_kv_type of made and loaded snapshots, and forks with it.
 * Sections by name: test_lifetime [orders nlu alloc threads kvtype]. Tiny preset. */
#include "fgemma.h"

#include "fg_internal.h" /* fg_alloc_fail_after */
#include "model/model.h" /* fg_model.refs */
#include "nlu/catalog.h" /* fg_catalog_refs */
#include "testutil.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static uint32_t g_vocab;
static const char *g_path;
/* Under an emulator (FG_TEST_EMULATED: the ARM runs under qemu-user, ~100x slower here) every 3rd order of
 * section 2 and every 4th allocation point of section 3 (plus the last); native runs do all of them. */
static uint64_t g_stride = 1;

/* the allocation point after k of 1..n: k + g_stride, but never past the last one, n */
static uint64_t next_point(uint64_t k, uint64_t n) { return k < n && k + g_stride > n ? n : k + g_stride; }

static const char k_catalog[] =
    "{\"id\":\"life.v1\",\"functions\":["
    "{\"name\":\"set_timer\",\"description\":\"Start a countdown timer.\","
    "\"parameters\":{\"minutes\":{\"type\":\"integer\",\"description\":\"How long.\"}},\"required\":[\"minutes\"]},"
    "{\"name\":\"toggle_lamp\",\"description\":\"Switch the lamp.\","
    "\"parameters\":{\"state\":{\"type\":\"string\",\"enum\":[\"on\",\"off\"]}},\"required\":[\"state\"]}]}";

static const int32_t k_prefix[12] = {2, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50};
static const int32_t k_more[3] = {60, 61, 62};

static uint32_t refs(const fg_model *m) { return atomic_load(&((fg_model *)m)->refs); }

static fg_session_params params(uint32_t threads) {
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_threads = threads;
  p.n_batch = 8;
  p.n_ctx = 128;
  return p;
}

static fg_model *load(void) {
  fg_model *m = NULL;
  CHECK_OK(fg_model_load(g_path, NULL, &m, NULL));
  return m;
}

/* Appends id to s and compares the logits with want (n_vocab floats). */
static void append_check(fg_session *s, int32_t id, const float *want, const char *what) {
  fg_status st = fg_session_step(s, id, NULL);
  CHECK_MSG(st == FG_OK, "%s: step: %s (%s)", what, fg_status_str(st), fg_session_errmsg(s));
  const float *l = fg_session_logits(s);
  CHECK_MSG(st == FG_OK && l && memcmp(l, want, sizeof(float) * g_vocab) == 0, "%s: logits differ", what);
}

// ----------------------------------------------------------------------------------------------
// 1. Every order of freeing model, session, snapshot, fork

static struct {
  float *at13; /* (n_vocab) after k_prefix + k_more[0] */
  float *at14; /* after k_prefix + k_more[0..1] */
  float *at15;
  char ask[4096];
} ref;

static float *copy_logits(const fg_session *s) {
  float *c = malloc(sizeof(float) * g_vocab);
  memcpy(c, fg_session_logits(s), sizeof(float) * g_vocab);
  return c;
}

static void make_refs(void) {
  fg_model *m = load();
  fg_session_params p = params(1);
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &p, &s, NULL));
  CHECK_OK(fg_session_prefill(s, k_prefix, 12, NULL));
  CHECK_OK(fg_session_step(s, k_more[0], NULL));
  ref.at13 = copy_logits(s);
  CHECK_OK(fg_session_step(s, k_more[1], NULL));
  ref.at14 = copy_logits(s);
  CHECK_OK(fg_session_step(s, k_more[2], NULL));
  ref.at15 = copy_logits(s);
  fg_session_free(s);
  fg_model_free(m);
}

enum { H_MODEL, H_SESSION, H_SNAPSHOT, H_FORK, N_HANDLES };
static const char *const k_names[N_HANDLES] = {"model", "session", "snapshot", "fork"};

static void run_order(const int order[N_HANDLES]) {
  char what[128];
  int len = snprintf(what, sizeof what, "order");
  for (int i = 0; i < N_HANDLES; i++) len += snprintf(what + len, sizeof what - (size_t)len, " %s", k_names[order[i]]);
  fg_model *m = load();
  if (!m) return;
  fg_session_params p = params(1);
  fg_session *s = NULL, *f = NULL;
  fg_snapshot *snap = NULL;
  CHECK_OK(fg_session_create(m, &p, &s, NULL));
  CHECK_OK(fg_session_prefill(s, k_prefix, 12, NULL));
  CHECK_OK(fg_session_snapshot(s, &snap));
  CHECK_OK(fg_session_fork(snap, &p, &f, NULL));
  if (!s || !snap || !f) return;
  CHECK_EQ_INT(refs(m), 4); /* caller, session, snapshot, fork */
  const fg_model *held = fg_session_model(s);
  bool alive[N_HANDLES] = {true, true, true, true};
  int s_steps = 0, f_steps = 0;
  const float *const after[3] = {ref.at13, ref.at14, ref.at15};
  for (int i = 0; i < N_HANDLES; i++) {
    switch (order[i]) {
      case H_MODEL: fg_model_free(m); break;
      case H_SESSION: fg_session_free(s); break;
      case H_SNAPSHOT: fg_snapshot_free(snap); break;
      case H_FORK: fg_session_free(f); break;
    }
    alive[order[i]] = false;
    const uint32_t holders = alive[H_MODEL] + alive[H_SESSION] + alive[H_SNAPSHOT] + alive[H_FORK];
    if (holders > 0) CHECK_MSG(refs(held) == holders, "%s: %u references, %u holders", what, refs(held), holders);
    /* every live handle still works */
    if (alive[H_SESSION] && s_steps < 3) append_check(s, k_more[s_steps], after[s_steps], what), s_steps++;
    if (alive[H_FORK] && f_steps < 3) append_check(f, k_more[f_steps], after[f_steps], what), f_steps++;
    if (alive[H_SNAPSHOT]) {
      fg_session *g = NULL;
      CHECK_OK(fg_session_fork(snap, &p, &g, NULL));
      if (g) append_check(g, k_more[0], ref.at13, what);
      CHECK(fg_snapshot_position(snap) == 12);
      fg_session_free(g);
    }
    if (alive[H_SESSION] || alive[H_FORK]) {
      fg_model_info info;
      CHECK_OK(fg_model_get_info(held, &info));
      CHECK(info.n_vocab == g_vocab);
      int32_t tok[16];
      size_t n = 0;
      CHECK_OK(fg_tokenize(held, "hello", 5, 0, tok, 16, &n));
    }
  }
}

static bool next_perm(int *a, int n) {
  int i = n - 2;
  while (i >= 0 && a[i] >= a[i + 1]) i--;
  if (i < 0) return false;
  int j = n - 1;
  while (a[j] <= a[i]) j--;
  int t = a[i];
  a[i] = a[j];
  a[j] = t;
  for (int l = i + 1, r = n - 1; l < r; l++, r--) t = a[l], a[l] = a[r], a[r] = t;
  return true;
}

static void test_orders(void) {
  printf("1. every order of freeing model, session, snapshot, fork\n");
  int order[N_HANDLES] = {0, 1, 2, 3}, n = 0;
  do run_order(order), n++;
  while (next_perm(order, N_HANDLES));
  CHECK_EQ_INT(n, 24);
  printf("  %d orders\n", n);
}

// ----------------------------------------------------------------------------------------------
// 2. NLU engines outliving their model and catalog

static fg_nlu_params nlu_params(void) {
  fg_nlu_params p;
  fg_nlu_params_init(&p);
  p.max_tokens = 12;
  p.session = params(1);
  p.session.n_ctx = 1024;
  p.session.n_batch = 32;
  return p;
}

enum { N_MODEL, N_CATALOG, N_NLU, N_FORK, N_NLU_HANDLES };
static const char *const k_nlu_names[N_NLU_HANDLES] = {"model", "catalog", "nlu", "fork"};

static void nlu_order(const int order[N_NLU_HANDLES], int32_t fork_next) {
  char what[128];
  int len = snprintf(what, sizeof what, "order");
  for (int i = 0; i < N_NLU_HANDLES; i++)
    len += snprintf(what + len, sizeof what - (size_t)len, " %s", k_nlu_names[order[i]]);
  fg_model *m = load();
  fg_catalog *c = NULL;
  CHECK_OK(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &c, NULL));
  fg_nlu_params np = nlu_params();
  fg_nlu *e = NULL;
  CHECK_OK(fg_nlu_create(m, c, &np, &e, NULL));
  if (!e) return;
  CHECK_EQ_INT(fg_catalog_refs(c), 2);
  fg_session *f = NULL;
  CHECK_OK(fg_session_fork(fg_nlu_snapshot(e), NULL, &f, NULL)); /* the prefix's context */
  const uint32_t prefix_pos = fg_snapshot_position(fg_nlu_snapshot(e));
  bool alive[N_NLU_HANDLES] = {true, true, true, true};
  for (int i = 0; i < N_NLU_HANDLES; i++) {
    switch (order[i]) {
      case N_MODEL: fg_model_free(m); break;
      case N_CATALOG: fg_catalog_free(c); break;
      case N_NLU: fg_nlu_free(e); break;
      case N_FORK: fg_session_free(f); break;
    }
    alive[order[i]] = false;
    if (alive[N_CATALOG] || alive[N_NLU])
      CHECK_MSG(fg_catalog_refs(alive[N_CATALOG] ? c : NULL) == (alive[N_CATALOG] ? 1u + alive[N_NLU] : 0u),
                "%s: catalog count", what);
    if (alive[N_NLU]) {
      fg_nlu_result r;
      fg_status st = fg_nlu_ask(e, "turn the lamp on", 16, &r);
      CHECK_MSG(st == FG_OK && strcmp(r.json, ref.ask) == 0, "%s: ask gave %s '%s'", what, fg_status_str(st),
                st == FG_OK ? r.json : fg_nlu_errmsg(e));
    }
    if (alive[N_FORK] && !alive[N_MODEL] && fg_session_position(f) == prefix_pos) {
      /* the fork continues from the prefix: the token the reference fork predicted */
      int32_t next = -1;
      CHECK_OK(fg_session_step(f, 3, &next));
      CHECK_MSG(next == fork_next, "%s: fork predicts %d, want %d", what, next, fork_next);
    }
  }
}

static void test_nlu(void) {
  printf("2. NLU engines and forks of their prefix outliving model and catalog\n");
  /* references from a run that frees nothing early */
  fg_model *m = load();
  fg_catalog *c = NULL;
  CHECK_OK(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &c, NULL));
  fg_nlu_params np = nlu_params();
  fg_nlu *e = NULL;
  CHECK_OK(fg_nlu_create(m, c, &np, &e, NULL));
  if (!e) return;
  fg_nlu_result r;
  CHECK_OK(fg_nlu_ask(e, "turn the lamp on", 16, &r));
  snprintf(ref.ask, sizeof ref.ask, "%s", r.json);
  fg_session *f = NULL;
  int32_t fork_next = -1;
  CHECK_OK(fg_session_fork(fg_nlu_snapshot(e), NULL, &f, NULL));
  CHECK_OK(fg_session_step(f, 3, &fork_next));
  fg_session_free(f);
  fg_nlu_free(e);
  fg_catalog_free(c);
  fg_model_free(m);

  int order[N_NLU_HANDLES] = {0, 1, 2, 3}, n = 0, done = 0;
  do {
    if (n++ % (int)(g_stride == 1 ? 1 : 3) == 0) nlu_order(order, fork_next), done++;
  } while (next_perm(order, N_NLU_HANDLES));
  printf("  %d of %d orders\n", done, n);
}

// ----------------------------------------------------------------------------------------------
// 3. Failed constructors neither leak nor drop a reference

typedef fg_status (*attempt_fn)(fg_model *m, fg_catalog *c, fg_snapshot *snap, void **out);

static fg_status a_create(fg_model *m, fg_catalog *c, fg_snapshot *snap, void **out) {
  fg_session_params p = params(2);
  return fg_session_create(m, &p, (fg_session **)out, NULL);
}
static fg_status a_fork(fg_model *m, fg_catalog *c, fg_snapshot *snap, void **out) {
  fg_session_params p = params(2);
  return fg_session_fork(snap, &p, (fg_session **)out, NULL);
}
static fg_status a_snapload(fg_model *m, fg_catalog *c, fg_snapshot *snap, void **out) {
  char path[600];
  snprintf(path, sizeof path, "%s/life_%d.fgsnap", FG_TEST_MODELS, (int)getpid());
  return fg_snapshot_load(m, path, (fg_snapshot **)out, NULL);
}
static fg_status a_nlu(fg_model *m, fg_catalog *c, fg_snapshot *snap, void **out) {
  fg_nlu_params np = nlu_params();
  return fg_nlu_create(m, c, &np, (fg_nlu **)out, NULL);
}
static void free_session(void *p) { fg_session_free(p); }
static void free_snapshot(void *p) { fg_snapshot_free(p); }
static void free_nlu(void *p) { fg_nlu_free(p); }

/* holds: model references the made object holds (an NLU engine: itself, its session, its prefix) */
static void sweep(const char *name, attempt_fn fn, void (*free_fn)(void *), uint32_t holds, fg_model *m,
                  fg_catalog *c, fg_snapshot *snap) {
  const uint32_t m0 = refs(m), c0 = fg_catalog_refs(c);
  void *out = NULL;
  fg_alloc_fail_after(0);
  CHECK_OK(fn(m, c, snap, &out));
  const uint64_t n_alloc = fg_alloc_fail_after(0);
  CHECK_MSG(refs(m) == m0 + holds, "%s: model count %u after a success, want %u", name, refs(m), m0 + holds);
  free_fn(out);
  int bad = 0;
  for (uint64_t k = 1; k <= n_alloc; k = next_point(k, n_alloc)) {
    out = &out;
    fg_alloc_fail_after(k);
    fg_status st = fn(m, c, snap, &out);
    fg_alloc_fail_after(0);
    if ((st != FG_ERR_NOMEM || out != NULL || refs(m) != m0 || fg_catalog_refs(c) != c0) && bad++ < 5)
      CHECK_MSG(0, "%s: allocation %llu failing: %s, out %p, model count %u (want %u), catalog count %u (want %u)",
                name, (unsigned long long)k, fg_status_str(st), out, refs(m), m0, fg_catalog_refs(c), c0);
    if (st == FG_OK) free_fn(out);
  }
  CHECK_MSG(refs(m) == m0 && fg_catalog_refs(c) == c0, "%s: counts changed", name);
  printf("  %-28s %4llu allocation sites\n", name, (unsigned long long)n_alloc);
}

static void test_alloc(void) {
  printf("3. failing allocations leave the counts as they were\n");
  fg_model *m = load();
  fg_catalog *c = NULL;
  CHECK_OK(fg_catalog_parse(k_catalog, sizeof k_catalog - 1, &c, NULL));
  fg_session_params p = params(1);
  fg_session *s = NULL;
  fg_snapshot *snap = NULL;
  CHECK_OK(fg_session_create(m, &p, &s, NULL));
  if (!s || !c) return;
  CHECK_OK(fg_session_prefill(s, k_prefix, 12, NULL));
  CHECK_OK(fg_session_snapshot(s, &snap));
  fg_session_free(s);
  char path[600];
  snprintf(path, sizeof path, "%s/life_%d.fgsnap", FG_TEST_MODELS, (int)getpid());
  CHECK_OK(fg_snapshot_save(snap, path, NULL));
  CHECK_EQ_INT(refs(m), 2);
  sweep("fg_session_create", a_create, free_session, 1, m, c, snap);
  sweep("fg_session_fork", a_fork, free_session, 1, m, c, snap);
  sweep("fg_snapshot_load", a_snapload, free_snapshot, 1, m, c, snap);
  sweep("fg_nlu_create", a_nlu, free_nlu, 3, m, c, snap);
  {
    /* fg_session_snapshot: the snapshot's reference is taken only on success */
    CHECK_OK(fg_session_fork(snap, &p, &s, NULL));
    const uint32_t m0 = refs(m);
    fg_alloc_fail_after(0);
    fg_snapshot *x = NULL;
    CHECK_OK(fg_session_snapshot(s, &x));
    const uint64_t n_alloc = fg_alloc_fail_after(0);
    fg_snapshot_free(x);
    for (uint64_t k = 1; k <= n_alloc; k++) {
      fg_alloc_fail_after(k);
      fg_status st = fg_session_snapshot(s, &x);
      fg_alloc_fail_after(0);
      CHECK_MSG(st == FG_ERR_NOMEM && x == NULL && refs(m) == m0, "fg_session_snapshot: k=%llu: %s, count %u",
                (unsigned long long)k, fg_status_str(st), refs(m));
    }
    printf("  %-28s %4llu allocation sites\n", "fg_session_snapshot", (unsigned long long)n_alloc);
    fg_session_free(s);
  }
  remove(path);
  fg_snapshot_free(snap);
  CHECK_EQ_INT(refs(m), 1);
  CHECK_EQ_INT(fg_catalog_refs(c), 1);
  fg_catalog_free(c);
  fg_model_free(m);
}

// ----------------------------------------------------------------------------------------------
// 4. Threads: the model and the snapshot freed while forks run; the last session frees the model

enum { NT = 4, STEPS = 24, ROUNDS = 12 };

typedef struct worker {
  fg_snapshot *snap;
  fg_session *s;
  pthread_barrier_t *forked, *released;
  int32_t first;
  int32_t out[STEPS];
  fg_status st;
} worker;

static void *work(void *ud) {
  worker *w = ud;
  fg_session_params p = params(1);
  w->st = fg_session_fork(w->snap, &p, &w->s, NULL);
  pthread_barrier_wait(w->forked);   /* every fork exists: the main thread may free snapshot and model */
  int32_t next = w->first;
  for (int i = 0; i < STEPS && w->st == FG_OK; i++) {
    if (i == STEPS / 2) pthread_barrier_wait(w->released); /* half of the steps after the frees */
    w->st = fg_session_step(w->s, next, &next);
    w->out[i] = next;
  }
  if (w->st != FG_OK) pthread_barrier_wait(w->released);
  fg_session_free(w->s); /* the last of these frees the model, on some worker thread */
  return NULL;
}

static void test_threads(void) {
  printf("4. forks on %d threads while the model and the snapshot are freed (%d rounds)\n", NT, ROUNDS);
  int32_t want[NT][STEPS];
  for (int round = 0; round < ROUNDS; round++) {
    fg_model *m = load();
    if (!m) return;
    fg_session_params p = params(1);
    fg_session *s = NULL;
    fg_snapshot *snap = NULL;
    CHECK_OK(fg_session_create(m, &p, &s, NULL));
    CHECK_OK(fg_session_prefill(s, k_prefix, 12, NULL));
    CHECK_OK(fg_session_snapshot(s, &snap));
    fg_session_free(s);
    pthread_barrier_t forked, released;
    pthread_barrier_init(&forked, NULL, NT + 1);
    pthread_barrier_init(&released, NULL, NT + 1);
    worker w[NT];
    pthread_t th[NT];
    for (int i = 0; i < NT; i++) {
      w[i] = (worker){.snap = snap, .forked = &forked, .released = &released, .first = 5 + 11 * i};
      pthread_create(&th[i], NULL, work, &w[i]);
    }
    pthread_barrier_wait(&forked);
    fg_snapshot_free(snap);
    fg_model_free(m);
    pthread_barrier_wait(&released);
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NT; i++) {
      CHECK_OK(w[i].st);
      if (round == 0) memcpy(want[i], w[i].out, sizeof want[i]);
      CHECK_MSG(memcmp(want[i], w[i].out, sizeof want[i]) == 0, "round %d thread %d: other ids", round, i);
    }
    pthread_barrier_destroy(&forked);
    pthread_barrier_destroy(&released);
  }
  /* and the ids are those of one thread doing the same alone */
  fg_model *m = load();
  fg_session_params p = params(1);
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &p, &s, NULL));
  CHECK_OK(fg_session_prefill(s, k_prefix, 12, NULL));
  fg_snapshot *snap = NULL;
  CHECK_OK(fg_session_snapshot(s, &snap));
  fg_session_free(s);
  for (int i = 0; i < NT; i++) {
    CHECK_OK(fg_session_fork(snap, &p, &s, NULL));
    int32_t next = 5 + 11 * i;
    bool same = true;
    for (int k = 0; k < STEPS; k++) {
      CHECK_OK(fg_session_step(s, next, &next));
      same = same && next == want[i][k];
    }
    CHECK_MSG(same, "thread %d: ids differ from one thread alone", i);
    fg_session_free(s);
  }
  fg_snapshot_free(snap);
  fg_model_free(m);
}

// ----------------------------------------------------------------------------------------------
// 5. fg_snapshot_kv_type (what a binding needs to fork a loaded snapshot with its own parameters)

static void test_kv_type(void) {
  printf("5. fg_snapshot_kv_type\n");
  CHECK_EQ_INT(fg_snapshot_kv_type(NULL), 0);
  fg_model *m = load();
  char path[600];
  snprintf(path, sizeof path, "%s/life_kv_%d.fgsnap", FG_TEST_MODELS, (int)getpid());
  for (uint32_t kv = 0; kv < 2 && m; kv++) {
    fg_session_params p = params(1);
    p.kv_type = kv;
    fg_session *s = NULL;
    fg_snapshot *snap = NULL, *loaded = NULL;
    CHECK_OK(fg_session_create(m, &p, &s, NULL));
    CHECK_OK(fg_session_prefill(s, k_prefix, 12, NULL));
    CHECK_OK(fg_session_snapshot(s, &snap));
    CHECK_EQ_INT(fg_snapshot_kv_type(snap), kv);
    CHECK_OK(fg_snapshot_save(snap, path, NULL));
    CHECK_OK(fg_snapshot_load(m, path, &loaded, NULL));
    CHECK_EQ_INT(fg_snapshot_kv_type(loaded), kv);
    /* a fork with explicit parameters: the snapshot's type works, the other one is refused */
    fg_session *f = NULL;
    p.kv_type = fg_snapshot_kv_type(loaded);
    CHECK_OK(fg_session_fork(loaded, &p, &f, NULL));
    fg_session_free(f);
    f = NULL;
    p.kv_type = 1 - kv;
    CHECK_EQ_INT(fg_session_fork(loaded, &p, &f, NULL), FG_ERR_MISMATCH);
    CHECK(f == NULL);
    fg_snapshot_free(loaded);
    fg_snapshot_free(snap);
    fg_session_free(s);
  }
  remove(path);
  fg_model_free(m);
}

int main(int argc, char **argv) {
  if (fg_test_ensure_model("tiny-f32.gguf", "tiny", "f32", 1) != 0) return 1;
  const char *emu = getenv("FG_TEST_EMULATED");
  if (emu && *emu && strcmp(emu, "0") != 0) g_stride = 4;
  static char path[4096];
  snprintf(path, sizeof path, "%s", fg_test_model_path("tiny-f32.gguf"));
  g_path = path;
  fg_model *m = load();
  if (!m) return fg_test_finish("test_lifetime");
  fg_model_info info;
  CHECK_OK(fg_model_get_info(m, &info));
  g_vocab = info.n_vocab;
  CHECK_EQ_INT(refs(m), 1);
  fg_model_free(m);
  make_refs();

  static const struct { const char *name; void (*fn)(void); } sections[] = {
      {"orders", test_orders}, {"nlu", test_nlu},         {"alloc", test_alloc},
      {"threads", test_threads}, {"kvtype", test_kv_type}};
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
    bool run = argc < 2;
    for (int a = 1; a < argc; a++) run = run || strcmp(argv[a], sections[i].name) == 0;
    if (run) sections[i].fn();
  }
  free(ref.at13);
  free(ref.at14);
  free(ref.at15);
  return fg_test_finish("test_lifetime");
}
