/* test_session.c — the session path against the reference path, and the session contract:
 * chunking, snapshots, forks, restore, failed calls, persistence, bounded sliding-window memory,
 * embeddings input and concurrent forks. Tiny preset (window 8, 6 layers, layer 5 global). */
#include "model/model.h"
#include "session/session.h"
#include "testutil.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define N_PROMPT 40 /* five times the tiny window */

static fg_model *g_model;
static uint32_t g_vocab;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state % n);
}

static void random_ids(int32_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++) ids[i] = 4 + (int32_t)rnd(g_vocab - 4);
}

/* Logit tolerance of the session path against the reference (f32 model): both accumulate in f32
 * over rows of at most max(n_embd, n_ff) = 128 products, with different summation orders in the
 * SIMD kernels; 1e-4 of the logit scale is ~100x the observed float noise and far below the top-1
 * margins the generator builds in. */
#define TOL_F32 1e-4

static fg_session *new_session_kv(uint32_t n_batch, uint32_t n_threads, uint32_t kv_type) {
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_batch = n_batch;
  p.n_threads = n_threads;
  p.n_ctx = 256;
  p.kv_type = kv_type;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(g_model, &p, &s, NULL));
  return s;
}

static fg_session *new_session(uint32_t n_batch, uint32_t n_threads) {
  return new_session_kv(n_batch, n_threads, 0 /* FG_TYPE_F32 */);
}

// ----------------------------------------------------------------------------------------------
// 1. every position, every chunk size, against the reference

static void test_chunked_equals_reference(void) {
  int32_t ids[N_PROMPT];
  random_ids(ids, N_PROMPT);
  size_t at[N_PROMPT];
  for (size_t i = 0; i < N_PROMPT; i++) at[i] = i;
  float *ref = malloc(sizeof(float) * N_PROMPT * g_vocab);
  fg_error err;
  CHECK_OK(fg_ref_forward(g_model, ids, NULL, N_PROMPT, at, N_PROMPT, ref, &err));

  const uint32_t chunks[] = {1, 7, 32, 64, N_PROMPT};
  for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
    const uint32_t c = chunks[ci];
    fg_session *main_s = new_session(c, 2);
    double worst = 0;
    int id_mismatch = 0;
    for (uint32_t p = 0; p < N_PROMPT; p++) {
      /* the state after position p, reached by calls of c tokens: fork the last multiple of c */
      const uint32_t base = (p / c) * c;
      while (fg_session_position(main_s) < base) CHECK_OK(fg_session_prefill(main_s, ids + fg_session_position(main_s), c, NULL));
      fg_session *s = main_s, *fork = NULL;
      fg_snapshot *snap = NULL;
      if (base > 0) {
        CHECK_OK(fg_session_snapshot(main_s, &snap));
        CHECK_OK(fg_session_fork(snap, NULL, &fork, NULL));
        s = fork;
      } else {
        s = new_session(c, 2);
      }
      int32_t next = -1;
      CHECK_OK(fg_session_prefill(s, ids + base, p + 1 - base, &next));
      CHECK_EQ_INT(fg_session_position(s), p + 1);
      const float *lg = fg_session_logits(s);
      const float *want = ref + (size_t)p * g_vocab;
      worst = fmax(worst, fg_test_rel_diff(lg, want, g_vocab));
      if (next != fg_argmax(want, g_vocab)) id_mismatch++;
      if (s != main_s) fg_session_free(s);
      fg_snapshot_free(snap);
    }
    CHECK_MSG(worst <= TOL_F32, "chunk %u: worst relative logit difference %.3g > %.3g", c, worst, TOL_F32);
    CHECK_MSG(id_mismatch == 0, "chunk %u: %d greedy ids differ from the reference", c, id_mismatch);
    printf("chunk %2u: worst relative logit difference vs reference %.2e over %d positions\n", c, worst, N_PROMPT);
    fg_session_free(main_s);
  }
  free(ref);
}

// ----------------------------------------------------------------------------------------------
// 2. greedy decoding: session == reference generate

static void test_greedy_equals_reference(void) {
  int32_t ids[12];
  random_ids(ids, 12);
  int32_t want[24];
  fg_error err;
  CHECK_OK(fg_ref_generate(g_model, ids, 12, 24, want, &err));
  fg_session *s = new_session(5, 2);
  int32_t next;
  CHECK_OK(fg_session_prefill(s, ids, 12, &next));
  for (int i = 0; i < 24; i++) {
    CHECK_EQ_INT(next, want[i]);
    CHECK_OK(fg_session_step(s, next, &next));
  }
  fg_session_free(s);
}

// ----------------------------------------------------------------------------------------------
// 3. snapshot isolation: interleaved forks equal fresh sessions; the snapshot is unchanged

static void run_calls(fg_session *s, const int32_t *prefix, size_t np, const int32_t *steps, size_t ns) {
  CHECK_OK(fg_session_prefill(s, prefix, np, NULL));
  for (size_t i = 0; i < ns; i++) CHECK_OK(fg_session_step(s, steps[i], NULL));
}

static void test_snapshot_isolation(void) {
  int32_t prefix[21], a[15], b[15];
  random_ids(prefix, 21);
  random_ids(a, 15);
  random_ids(b, 15);
  fg_session *s = new_session(8, 2);
  int32_t next0;
  CHECK_OK(fg_session_prefill(s, prefix, 21, &next0));
  float *at_snap = malloc(sizeof(float) * g_vocab);
  memcpy(at_snap, fg_session_logits(s), sizeof(float) * g_vocab);
  fg_snapshot *snap;
  CHECK_OK(fg_session_snapshot(s, &snap));
  fg_session_free(s); /* the snapshot outlives its session */

  fg_session *fa, *fb;
  CHECK_OK(fg_session_fork(snap, NULL, &fa, NULL));
  CHECK_OK(fg_session_fork(snap, NULL, &fb, NULL));
  for (int i = 0; i < 15; i++) {
    CHECK_OK(fg_session_step(fa, a[i], NULL));
    CHECK_OK(fg_session_step(fb, b[i], NULL));
  }
  fg_session *ra = new_session(8, 2), *rb = new_session(8, 2);
  run_calls(ra, prefix, 21, a, 15);
  run_calls(rb, prefix, 21, b, 15);
  CHECK(memcmp(fg_session_logits(fa), fg_session_logits(ra), sizeof(float) * g_vocab) == 0);
  CHECK(memcmp(fg_session_logits(fb), fg_session_logits(rb), sizeof(float) * g_vocab) == 0);
  /* and against one whole prefill (different batching: tolerance) */
  int32_t whole[36];
  memcpy(whole, prefix, sizeof prefix);
  memcpy(whole + 21, a, sizeof a);
  fg_session *wa = new_session(64, 1);
  CHECK_OK(fg_session_prefill(wa, whole, 36, NULL));
  CHECK(fg_test_rel_diff(fg_session_logits(fa), fg_session_logits(wa), g_vocab) <= TOL_F32);

  fg_session *fc;
  CHECK_OK(fg_session_fork(snap, NULL, &fc, NULL));
  CHECK_EQ_INT(fg_session_position(fc), 21);
  CHECK(memcmp(fg_session_logits(fc), at_snap, sizeof(float) * g_vocab) == 0);
  CHECK_OK(fg_session_step(fc, a[0], NULL));
  fg_session *rc = new_session(8, 2);
  run_calls(rc, prefix, 21, a, 1);
  CHECK(memcmp(fg_session_logits(fc), fg_session_logits(rc), sizeof(float) * g_vocab) == 0);

  /* forks share blocks: no KV bytes copied beyond the partial last block of each layer */
  fg_session *fd;
  CHECK_OK(fg_session_fork(snap, NULL, &fd, NULL));
  fg_session_stats st;
  CHECK_OK(fg_session_get_stats(fd, &st));
  CHECK_EQ_INT(st.kv_blocks_shared, st.kv_blocks);
  CHECK_OK(fg_session_step(fd, a[0], NULL));
  fg_session_stats st2;
  CHECK_OK(fg_session_get_stats(fd, &st2));
  CHECK(st.kv_blocks - st2.kv_blocks_shared <= g_model->hp.n_layer);

  fg_session *all[] = {fa, fb, ra, rb, wa, fc, rc, fd};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) fg_session_free(all[i]);
  fg_snapshot_free(snap);
  free(at_snap);
}

// ----------------------------------------------------------------------------------------------
// 4. failed calls change nothing; restore after many steps

static int g_abort_after;
static bool abort_cb(void *ud) {
  (void)ud;
  return --g_abort_after < 0;
}

static void test_failed_calls(void) {
  int32_t ids[30];
  random_ids(ids, 30);
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_ctx = 40;
  p.n_batch = 4;
  p.abort_cb = abort_cb;
  g_abort_after = 1 << 30;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(g_model, &p, &s, NULL));
  CHECK(fg_session_logits(s) == NULL);
  CHECK_OK(fg_session_prefill(s, ids, 20, NULL));
  float *before = malloc(sizeof(float) * g_vocab);
  memcpy(before, fg_session_logits(s), sizeof(float) * g_vocab);

  int32_t bad[3] = {ids[0], (int32_t)g_vocab, ids[1]};
  CHECK_EQ_INT(fg_session_prefill(s, bad, 3, NULL), FG_ERR_INVALID_ARG);
  CHECK(strstr(fg_session_errmsg(s), "outside the vocabulary") != NULL);
  bad[1] = -5;
  CHECK_EQ_INT(fg_session_prefill(s, bad, 3, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_prefill(s, ids, 0, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_prefill(s, NULL, 3, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_prefill(s, ids, 21, NULL), FG_ERR_CONTEXT_FULL);
  CHECK(strstr(fg_session_errmsg(s), "do not fit") != NULL);
  g_abort_after = 9; /* stops inside the second internal batch */
  CHECK_EQ_INT(fg_session_prefill(s, ids + 20, 10, NULL), FG_ERR_ABORTED);
  g_abort_after = 1 << 30;
  CHECK_EQ_INT(fg_session_position(s), 20);
  CHECK(memcmp(before, fg_session_logits(s), sizeof(float) * g_vocab) == 0);
  CHECK_EQ_INT(fg_session_step(NULL, 1, NULL), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_session_restore(s, NULL), FG_ERR_INVALID_ARG);

  /* after the failures it continues exactly like a session that never failed */
  CHECK_OK(fg_session_prefill(s, ids + 20, 10, NULL));
  fg_session *r = NULL;
  CHECK_OK(fg_session_create(g_model, &p, &r, NULL));
  CHECK_OK(fg_session_prefill(r, ids, 20, NULL));
  CHECK_OK(fg_session_prefill(r, ids + 20, 10, NULL));
  CHECK(memcmp(fg_session_logits(s), fg_session_logits(r), sizeof(float) * g_vocab) == 0);

  /* restore after many steps */
  fg_snapshot *snap;
  CHECK_OK(fg_session_snapshot(s, &snap));
  int32_t first[8], again[8], next = ids[29];
  for (int i = 0; i < 8; i++) {
    CHECK_OK(fg_session_step(s, next, &next));
    first[i] = next;
  }
  CHECK_OK(fg_session_restore(s, snap));
  CHECK_EQ_INT(fg_session_position(s), 30);
  next = ids[29];
  for (int i = 0; i < 8; i++) {
    CHECK_OK(fg_session_step(s, next, &next));
    again[i] = next;
  }
  CHECK(memcmp(first, again, sizeof first) == 0);
  fg_snapshot_free(snap);
  fg_session_free(s);
  fg_session_free(r);
  free(before);

  /* bad params */
  fg_session_params bp;
  fg_session_params_init(&bp);
  bp.n_ctx = g_model->hp.n_ctx_train + 1;
  fg_session *x = (fg_session *)1;
  CHECK_EQ_INT(fg_session_create(g_model, &bp, &x, NULL), FG_ERR_INVALID_ARG);
  CHECK(x == NULL);
  /* the error out-parameter names the culprit */
  fg_error e = {0};
  CHECK_EQ_INT(fg_session_create(g_model, &bp, &x, &e), FG_ERR_INVALID_ARG);
  CHECK(e.code == FG_ERR_INVALID_ARG && strstr(e.msg, "n_ctx") != NULL);
  CHECK_EQ_INT(fg_session_create(NULL, NULL, &x, &e), FG_ERR_INVALID_ARG);
  CHECK(strstr(e.msg, "model") != NULL);
  CHECK_OK(fg_session_create(g_model, NULL, &x, &e));
  CHECK(e.code == FG_OK && e.msg[0] == '\0');
  fg_session_free(x);
  x = NULL;
  fg_session_free(NULL);
  fg_snapshot_free(NULL);
}

// ----------------------------------------------------------------------------------------------
// 5. persistence, also across processes, and refusal of damaged or foreign files

static void test_save_load(void) {
  int32_t ids[27];
  random_ids(ids, 27);
  fg_session *s = new_session(16, 2);
  CHECK_OK(fg_session_prefill(s, ids, 20, NULL));
  fg_snapshot *snap;
  CHECK_OK(fg_session_snapshot(s, &snap));
  char path[512];
  snprintf(path, sizeof path, "%s/test_session_%d.fgsnap", FG_TEST_MODELS, (int)getpid());
  CHECK_OK(fg_snapshot_save(snap, path, NULL));
  for (int i = 20; i < 27; i++) CHECK_OK(fg_session_step(s, ids[i], NULL));
  float *want = malloc(sizeof(float) * g_vocab);
  memcpy(want, fg_session_logits(s), sizeof(float) * g_vocab);

  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  if (pid == 0) { /* another process: load model and snapshot from files, continue */
    fg_model *m2 = NULL;
    fg_snapshot *ls = NULL;
    fg_session *c = NULL;
    /* One thread, so the child creates no worker threads: it is forked from a process whose pool
     * threads exist, and qemu-user 7.2 (the ARM test runs) aborts when such a child creates threads
     * ("cpu_exec: assertion failed"). The logits do not depend on the thread count. */
    fg_session_params cp;
    fg_session_params_init(&cp);
    cp.n_threads = 1;
    int ok = fg_model_load(fg_test_model_path("tiny-f32.gguf"), NULL, &m2, NULL) == FG_OK &&
             fg_snapshot_load(m2, path, &ls, NULL) == FG_OK && fg_session_fork(ls, &cp, &c, NULL) == FG_OK &&
             fg_session_prefill(c, ids + 20, 7, NULL) == FG_OK;
    if (ok) {
      ssize_t w = write(fds[1], fg_session_logits(c), sizeof(float) * m2->hp.n_vocab);
      (void)w;
    }
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  float *got = calloc(g_vocab, sizeof(float));
  size_t want_bytes = sizeof(float) * g_vocab, have = 0;
  for (ssize_t r; have < want_bytes && (r = read(fds[0], (char *)got + have, want_bytes - have)) > 0;) have += (size_t)r;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_EQ_INT(have, want_bytes);
  CHECK(memcmp(got, want, want_bytes) == 0);

  /* damaged files: truncated, bit-flipped; a file of another model */
  FILE *f = fopen(path, "rb");
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *bytes = malloc((size_t)size);
  CHECK(fread(bytes, 1, (size_t)size, f) == (size_t)size);
  fclose(f);
  char bad[600];
  snprintf(bad, sizeof bad, "%s.bad", path);
  const long cuts[] = {0, 4, 20, 60, size / 2, size - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    f = fopen(bad, "wb");
    fwrite(bytes, 1, (size_t)cuts[i], f);
    fclose(f);
    fg_snapshot *x = (fg_snapshot *)1;
    CHECK_EQ_INT(fg_snapshot_load(g_model, bad, &x, NULL), FG_ERR_FORMAT);
    CHECK(x == NULL);
  }
  for (long off = 9; off < size; off += size / 7) {
    bytes[off] ^= 0x10;
    f = fopen(bad, "wb");
    fwrite(bytes, 1, (size_t)size, f);
    fclose(f);
    bytes[off] ^= 0x10;
    fg_snapshot *x = NULL;
    fg_status st = fg_snapshot_load(g_model, bad, &x, NULL);
    CHECK_MSG(st == FG_ERR_FORMAT, "bit flip at %ld: status %d", off, (int)st);
    fg_snapshot_free(x);
  }
  bytes[8] = 99; /* version */
  f = fopen(bad, "wb");
  fwrite(bytes, 1, (size_t)size, f);
  fclose(f);
  fg_snapshot *x = NULL;
  fg_error e;
  CHECK_EQ_INT(fg_snapshot_load(g_model, bad, &x, &e), FG_ERR_FORMAT);
  CHECK(strstr(e.msg, "version") != NULL);
  CHECK_EQ_INT(fg_snapshot_load(g_model, "/nonexistent/dir/x.fgsnap", &x, NULL), FG_ERR_IO);

  fg_model *other = NULL;
  CHECK_EQ_INT(fg_test_ensure_model("tiny-f32-seed2.gguf", "tiny", "f32", 2), 0);
  CHECK_OK(fg_model_load(fg_test_model_path("tiny-f32-seed2.gguf"), NULL, &other, NULL));
  CHECK_EQ_INT(fg_snapshot_load(other, path, &x, &e), FG_ERR_MISMATCH);
  CHECK(strstr(e.msg, "another model") != NULL);
  fg_session *so = NULL;
  CHECK_OK(fg_session_create(other, NULL, &so, NULL));
  CHECK_EQ_INT(fg_session_restore(so, snap), FG_ERR_MISMATCH);
  fg_session_free(so);
  fg_model_free(other);

  /* the snapshot in memory is unaffected by all of that */
  fg_session *c;
  CHECK_OK(fg_session_fork(snap, NULL, &c, NULL));
  CHECK_OK(fg_session_prefill(c, ids + 20, 7, NULL));
  CHECK(fg_test_rel_diff(fg_session_logits(c), want, g_vocab) == 0.0);
  fg_session_free(c);

  remove(path);
  remove(bad);
  free(bytes);
  free(got);
  free(want);
  fg_snapshot_free(snap);
  fg_session_free(s);
}

// ----------------------------------------------------------------------------------------------
// 6. sliding-window memory stays bounded

static void test_bounded_memory(void) {
  fg_session *s = new_session(16, 1);
  int32_t next = 5;
  uint64_t sliding_at[4] = {0}, global_at[4] = {0};
  const uint32_t marks[4] = {32, 64, 128, 200};
  int mi = 0;
  CHECK_OK(fg_session_prefill(s, &next, 1, &next));
  while (fg_session_position(s) < 200) {
    CHECK_OK(fg_session_step(s, next, &next));
    if (mi < 4 && fg_session_position(s) == marks[mi]) {
      fg_session_stats st;
      CHECK_OK(fg_session_get_stats(s, &st));
      sliding_at[mi] = st.kv_bytes_sliding;
      global_at[mi] = st.kv_bytes_global;
      mi++;
    }
  }
  printf("KV bytes at positions 32/64/128/200: sliding %llu/%llu/%llu/%llu, global %llu/%llu/%llu/%llu\n",
         (unsigned long long)sliding_at[0], (unsigned long long)sliding_at[1], (unsigned long long)sliding_at[2],
         (unsigned long long)sliding_at[3], (unsigned long long)global_at[0], (unsigned long long)global_at[1],
         (unsigned long long)global_at[2], (unsigned long long)global_at[3]);
  CHECK(sliding_at[1] == sliding_at[3]); /* flat past the window */
  CHECK(global_at[3] > global_at[1]);    /* global layers keep everything */
  fg_session_free(s);
}

// ----------------------------------------------------------------------------------------------
// 7. embeddings input == ids input

static void test_embeddings(void) {
  int32_t ids[19];
  random_ids(ids, 19);
  const uint32_t d = g_model->hp.n_embd;
  float *rows = malloc(sizeof(float) * d * 19);
  for (int i = 0; i < 19; i++) fg_model_embed(g_model, ids[i], rows + (size_t)i * d);
  fg_session *a = new_session(8, 2), *b = new_session(8, 2);
  int32_t na, nb;
  CHECK_OK(fg_session_prefill(a, ids, 19, &na));
  CHECK_OK(fg_session_prefill_embeddings(b, rows, 19, &nb));
  CHECK_EQ_INT(na, nb);
  CHECK(memcmp(fg_session_logits(a), fg_session_logits(b), sizeof(float) * g_vocab) == 0);
  CHECK_EQ_INT(fg_session_prefill_embeddings(b, NULL, 1, NULL), FG_ERR_INVALID_ARG);
  fg_session_free(a);
  fg_session_free(b);
  free(rows);
}

// ----------------------------------------------------------------------------------------------
// 8. forks of one snapshot decoding at once on different threads

typedef struct fork_job {
  const fg_snapshot *snap;
  int32_t first;
  int32_t out[20];
  fg_status st;
} fork_job;

static void *fork_worker(void *ud) {
  fork_job *j = ud;
  fg_session *s = NULL;
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_threads = 1;
  j->st = fg_session_fork(j->snap, &p, &s, NULL);
  int32_t next = j->first;
  for (int i = 0; i < 20 && j->st == FG_OK; i++) {
    j->st = fg_session_step(s, next, &next);
    j->out[i] = next;
  }
  fg_session_free(s);
  return NULL;
}

static void test_threads(void) {
  int32_t ids[17];
  random_ids(ids, 17);
  fg_session *s = new_session(8, 2);
  CHECK_OK(fg_session_prefill(s, ids, 17, NULL));
  fg_snapshot *snap;
  CHECK_OK(fg_session_snapshot(s, &snap));
  fg_session_free(s);
  enum { NJ = 4 };
  fork_job seq[NJ], par[NJ];
  for (int i = 0; i < NJ; i++) {
    seq[i] = (fork_job){.snap = snap, .first = 10 + 7 * i};
    par[i] = seq[i];
    fork_worker(&seq[i]);
  }
  pthread_t th[NJ];
  for (int i = 0; i < NJ; i++) pthread_create(&th[i], NULL, fork_worker, &par[i]);
  for (int i = 0; i < NJ; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NJ; i++) {
    CHECK_OK(par[i].st);
    CHECK(memcmp(seq[i].out, par[i].out, sizeof seq[i].out) == 0);
  }
  fg_snapshot_free(snap);
}

// ----------------------------------------------------------------------------------------------
// 8b. past several attention segments (64 keys): decode folds its segments in parallel, prefill
// inside its tiles; the same token must come out bit for bit either way, with any thread count

#define N_LONG 200

static void test_long_decode_equals_prefill(void) {
  int32_t ids[N_LONG];
  random_ids(ids, N_LONG);
  size_t at = N_LONG - 1;
  float *ref = malloc(sizeof(float) * g_vocab);
  fg_error err;
  CHECK_OK(fg_ref_forward(g_model, ids, NULL, N_LONG, &at, 1, ref, &err));
  const uint32_t types[] = {FG_TYPE_F32, FG_TYPE_F16};
  for (size_t ti = 0; ti < 2; ti++) {
    fg_session *a = new_session_kv(256, 1, types[ti]); /* one batch: tiles */
    fg_session *b = new_session_kv(64, 2, types[ti]);  /* 150 in batches, then 50 decode steps */
    fg_session *c = new_session_kv(8, 3, types[ti]);   /* every position decoded alone */
    CHECK_OK(fg_session_prefill(a, ids, N_LONG, NULL));
    CHECK_OK(fg_session_prefill(b, ids, 150, NULL));
    for (int i = 150; i < N_LONG; i++) CHECK_OK(fg_session_step(b, ids[i], NULL));
    for (int i = 0; i < N_LONG; i++) CHECK_OK(fg_session_step(c, ids[i], NULL));
    CHECK_MSG(memcmp(fg_session_logits(a), fg_session_logits(b), sizeof(float) * g_vocab) == 0,
              "kv type %u: 200 prefilled != 150 prefilled + 50 decoded", types[ti]);
    CHECK_MSG(memcmp(fg_session_logits(a), fg_session_logits(c), sizeof(float) * g_vocab) == 0,
              "kv type %u: 200 prefilled != 200 decoded on 3 threads", types[ti]);
    const double d = fg_test_rel_diff(fg_session_logits(b), ref, g_vocab);
    const double tol = types[ti] == FG_TYPE_F32 ? TOL_F32 : 3e-3;
    CHECK_MSG(d <= tol, "kv type %u: position %d: relative logit difference %.3g > %.3g", types[ti], N_LONG - 1, d, tol);
    fg_session_free(a);
    fg_session_free(b);
    fg_session_free(c);
  }
  free(ref);
}

// ----------------------------------------------------------------------------------------------
// 9. f16 KV cache: against the reference, against the f32 cache, and the snapshot contract

/* Relative logit tolerance of an f16 KV cache against the f32 reference: K and V rounded to 11
 * significant bits (relative 2^-12 = 2.4e-4 per element) move the attention outputs by about that
 * much per layer; through 6 layers the logits moved by at most 1.2e-3 (measured: avx512, avx2 and ref
 * tables, tiny preset, 40 positions; f32 KV 2.7e-6). */
#define TOL_F16 3e-3

static void test_f16_kv_vs_reference(void) {
  int32_t ids[N_PROMPT];
  random_ids(ids, N_PROMPT);
  size_t at[N_PROMPT];
  for (size_t i = 0; i < N_PROMPT; i++) at[i] = i;
  float *ref = malloc(sizeof(float) * N_PROMPT * g_vocab);
  fg_error err;
  CHECK_OK(fg_ref_forward(g_model, ids, NULL, N_PROMPT, at, N_PROMPT, ref, &err));
  /* one token at a time, so every position's logits are seen; f32 and f16 caches side by side */
  fg_session *h = new_session_kv(8, 2, FG_TYPE_F16), *f = new_session_kv(8, 2, FG_TYPE_F32);
  double worst = 0, worst_f32 = 0;
  int ids_differ = 0, ref_differ = 0;
  for (uint32_t p = 0; p < N_PROMPT; p++) {
    int32_t nh, nf;
    CHECK_OK(fg_session_prefill(h, ids + p, 1, &nh));
    CHECK_OK(fg_session_prefill(f, ids + p, 1, &nf));
    const float *want = ref + (size_t)p * g_vocab;
    worst = fmax(worst, fg_test_rel_diff(fg_session_logits(h), want, g_vocab));
    worst_f32 = fmax(worst_f32, fg_test_rel_diff(fg_session_logits(f), want, g_vocab));
    ids_differ += nh != nf;
    ref_differ += nh != fg_argmax(want, g_vocab);
  }
  CHECK_MSG(worst <= TOL_F16, "f16 KV: worst relative logit difference %.3g > %.3g", worst, TOL_F16);
  CHECK_MSG(worst > worst_f32, "f16 KV should be measurably less exact than f32 (%.3g vs %.3g)", worst, worst_f32);
  CHECK_MSG(ids_differ == 0 && ref_differ == 0, "f16 KV: %d greedy ids differ from f32 KV, %d from the reference",
            ids_differ, ref_differ);
  printf("f16 KV: worst relative logit difference vs reference %.2e (f32 KV %.2e) over %d positions; greedy ids "
         "equal f32 KV at %d of %d\n", worst, worst_f32, N_PROMPT, N_PROMPT - ids_differ, N_PROMPT);
  /* chunking does not change an f16 session either: one prefill of 40 == 40 steps, bit for bit */
  fg_session *w = new_session_kv(64, 1, FG_TYPE_F16);
  CHECK_OK(fg_session_prefill(w, ids, N_PROMPT, NULL));
  CHECK(memcmp(fg_session_logits(w), fg_session_logits(h), sizeof(float) * g_vocab) == 0);
  /* memory: half the element bytes of the f32 cache */
  fg_session_stats sh, sf;
  CHECK_OK(fg_session_get_stats(h, &sh));
  CHECK_OK(fg_session_get_stats(f, &sf));
  CHECK_EQ_INT(sh.kv_blocks, sf.kv_blocks);
  const uint64_t elems = (uint64_t)FG_KV_BLOCK * g_model->hp.n_head_kv * (g_model->hp.head_dim_k + g_model->hp.head_dim_v);
  const uint64_t hdr = sizeof(fg_kv_block);
  CHECK_EQ_INT(sh.kv_bytes_global + sh.kv_bytes_sliding, (uint64_t)sh.kv_blocks * (hdr + 2 * elems));
  CHECK_EQ_INT(sf.kv_bytes_global + sf.kv_bytes_sliding, (uint64_t)sf.kv_blocks * (hdr + 4 * elems));
  fg_session_free(h);
  fg_session_free(f);
  fg_session_free(w);
  free(ref);
}

/* FNV-1a as snapshot.c computes its trailer (to turn a file into a version-1 file) */
static uint64_t fnv1a(const unsigned char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(*n);
  if (fread(b, 1, *n, f) != *n) *n = 0;
  fclose(f);
  return b;
}

static void test_f16_kv_snapshots(void) {
  int32_t ids[36];
  random_ids(ids, 36);
  fg_session *s = new_session_kv(8, 2, FG_TYPE_F16);
  CHECK_OK(fg_session_prefill(s, ids, 21, NULL));
  fg_snapshot *snap;
  CHECK_OK(fg_session_snapshot(s, &snap));
  /* fork without params: the snapshot's KV type; continues like a fresh f16 session */
  fg_session *fk;
  CHECK_OK(fg_session_fork(snap, NULL, &fk, NULL));
  for (int i = 21; i < 36; i++) CHECK_OK(fg_session_step(fk, ids[i], NULL));
  fg_session *r = new_session_kv(8, 2, FG_TYPE_F16);
  CHECK_OK(fg_session_prefill(r, ids, 21, NULL));
  for (int i = 21; i < 36; i++) CHECK_OK(fg_session_step(r, ids[i], NULL));
  CHECK(memcmp(fg_session_logits(fk), fg_session_logits(r), sizeof(float) * g_vocab) == 0);
  float *want = malloc(sizeof(float) * g_vocab);
  memcpy(want, fg_session_logits(r), sizeof(float) * g_vocab);
  /* restore the f16 session; refuse across KV types */
  CHECK_OK(fg_session_restore(fk, snap));
  CHECK_EQ_INT(fg_session_position(fk), 21);
  fg_session *f32s = new_session_kv(8, 1, FG_TYPE_F32);
  CHECK_EQ_INT(fg_session_restore(f32s, snap), FG_ERR_MISMATCH);
  CHECK(strstr(fg_session_errmsg(f32s), "KV cache") != NULL);
  fg_session_params p32;
  fg_session_params_init(&p32);
  fg_session *x = (fg_session *)1;
  CHECK_EQ_INT(fg_session_fork(snap, &p32, &x, NULL), FG_ERR_MISMATCH);
  CHECK(x == NULL);
  fg_snapshot *snap32;
  CHECK_OK(fg_session_prefill(f32s, ids, 5, NULL));
  CHECK_OK(fg_session_snapshot(f32s, &snap32));
  CHECK_EQ_INT(fg_session_restore(fk, snap32), FG_ERR_MISMATCH);
  CHECK_EQ_INT(fg_session_position(fk), 21); /* unchanged by the refusal */

  /* save / load: the type travels with the file */
  char path[512], path32[512], path_v1[512];
  snprintf(path, sizeof path, "%s/test_session_f16_%d.fgsnap", FG_TEST_MODELS, (int)getpid());
  snprintf(path32, sizeof path32, "%s/test_session_f32_%d.fgsnap", FG_TEST_MODELS, (int)getpid());
  snprintf(path_v1, sizeof path_v1, "%s/test_session_v1_%d.fgsnap", FG_TEST_MODELS, (int)getpid());
  CHECK_OK(fg_snapshot_save(snap, path, NULL));
  fg_snapshot *ls = NULL;
  CHECK_OK(fg_snapshot_load(g_model, path, &ls, NULL));
  CHECK_EQ_INT(fg_snapshot_kv_type(ls), FG_TYPE_F16); /* what a fork's params must name */
  CHECK_EQ_INT(fg_snapshot_kv_type(snap), FG_TYPE_F16);
  CHECK_EQ_INT(fg_snapshot_kv_type(NULL), 0);
  fg_session *c = NULL;
  CHECK_OK(fg_session_fork(ls, NULL, &c, NULL));
  for (int i = 21; i < 36; i++) CHECK_OK(fg_session_step(c, ids[i], NULL));
  CHECK(memcmp(fg_session_logits(c), want, sizeof(float) * g_vocab) == 0);
  CHECK_EQ_INT(fg_session_restore(f32s, ls), FG_ERR_MISMATCH);
  /* an f16 file is about half an f32 file of the same state */
  fg_session *s32 = new_session_kv(8, 1, FG_TYPE_F32);
  CHECK_OK(fg_session_prefill(s32, ids, 21, NULL));
  fg_snapshot *sn32;
  CHECK_OK(fg_session_snapshot(s32, &sn32));
  CHECK_OK(fg_snapshot_save(sn32, path32, NULL));
  CHECK_EQ_INT(fg_snapshot_kv_type(sn32), FG_TYPE_F32);
  size_t n16 = 0, n32 = 0;
  unsigned char *b16 = read_all(path, &n16), *b32 = read_all(path32, &n32);
  CHECK(b16 && b32 && n16 < n32);

  /* a version-1 file (no kv_type field, f32 rows) still loads, as f32 */
  if (b32 && n32 > 80) {
    unsigned char *v1 = malloc(n32);
    const size_t hdr_end = 8 + 4 + 4 + 16 + 9 * 4; /* the kv_type field is the last header field */
    memcpy(v1, b32, hdr_end - 4);
    memcpy(v1 + hdr_end - 4, b32 + hdr_end, n32 - hdr_end - 8);
    const size_t n1 = n32 - 4;
    v1[8] = 1; /* version */
    v1[12] = (unsigned char)(hdr_end - 4); /* header bytes */
    const uint64_t h = fnv1a(v1, n1 - 8);
    for (int i = 0; i < 8; i++) v1[n1 - 8 + i] = (unsigned char)(h >> (8 * i));
    FILE *f = fopen(path_v1, "wb");
    fwrite(v1, 1, n1, f);
    fclose(f);
    fg_snapshot *l1 = NULL;
    CHECK_OK(fg_snapshot_load(g_model, path_v1, &l1, NULL));
    fg_session *c1 = NULL, *c32 = NULL;
    CHECK_OK(fg_session_fork(l1, NULL, &c1, NULL));
    CHECK_OK(fg_session_fork(sn32, NULL, &c32, NULL));
    CHECK_OK(fg_session_step(c1, ids[21], NULL));
    CHECK_OK(fg_session_step(c32, ids[21], NULL));
    CHECK(c1 && c32 && memcmp(fg_session_logits(c1), fg_session_logits(c32), sizeof(float) * g_vocab) == 0);
    fg_session_free(c1);
    fg_session_free(c32);
    fg_snapshot_free(l1);
    free(v1);
  }
  /* a file claiming an unknown KV type is damaged: the header says so after the checksum matched */
  if (b16 && n16 > 80) {
    b16[8 + 4 + 4 + 16 + 8 * 4] = 7;
    const uint64_t h = fnv1a(b16, n16 - 8);
    for (int i = 0; i < 8; i++) b16[n16 - 8 + i] = (unsigned char)(h >> (8 * i));
    FILE *f = fopen(path_v1, "wb");
    fwrite(b16, 1, n16, f);
    fclose(f);
    fg_snapshot *bad = (fg_snapshot *)1;
    fg_error e;
    CHECK_EQ_INT(fg_snapshot_load(g_model, path_v1, &bad, &e), FG_ERR_FORMAT);
    CHECK(bad == NULL);
    CHECK(strstr(e.msg, "KV type") != NULL);
  }
  free(b16);
  free(b32);
  remove(path);
  remove(path32);
  remove(path_v1);
  fg_snapshot_free(ls);
  fg_snapshot_free(snap);
  fg_snapshot_free(snap32);
  fg_snapshot_free(sn32);
  fg_session *all[] = {s, fk, r, f32s, c, s32};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) fg_session_free(all[i]);
  free(want);
}

/* the logits buffer is reused between steps, but never one a snapshot still shares */
static void test_logits_reuse(void) {
  int32_t ids[6];
  random_ids(ids, 6);
  fg_session *s = new_session_kv(8, 1, FG_TYPE_F32);
  CHECK_OK(fg_session_prefill(s, ids, 3, NULL));
  const float *l1 = fg_session_logits(s);
  CHECK_OK(fg_session_step(s, ids[3], NULL));
  CHECK(fg_session_logits(s) == l1); /* not shared: reused in place */
  float *keep = malloc(sizeof(float) * g_vocab);
  memcpy(keep, l1, sizeof(float) * g_vocab);
  fg_snapshot *snap;
  CHECK_OK(fg_session_snapshot(s, &snap));
  CHECK_OK(fg_session_step(s, ids[4], NULL));
  CHECK(fg_session_logits(s) != l1); /* shared with the snapshot: a new buffer */
  fg_session *fk;
  CHECK_OK(fg_session_fork(snap, NULL, &fk, NULL));
  CHECK(memcmp(fg_session_logits(fk), keep, sizeof(float) * g_vocab) == 0);
  fg_session_free(fk);
  fg_snapshot_free(snap);
  fg_session_free(s);
  free(keep);
}

/* a held logits buffer keeps its floats through later appends, a restore and the session's free */
static void test_logits_hold(void) {
  int32_t ids[6];
  random_ids(ids, 6);
  fg_session *s = new_session_kv(8, 1, FG_TYPE_F32);
  CHECK(fg_session_logits_hold(s) == NULL); /* nothing appended yet */
  CHECK(fg_session_logits_hold(NULL) == NULL);
  fg_logits_release(NULL);
  uint32_t n = 7;
  CHECK(fg_logits_data(NULL, &n) == NULL && n == 0);
  CHECK_OK(fg_session_prefill(s, ids, 3, NULL));
  fg_logits *h = fg_session_logits_hold(s);
  CHECK(h != NULL);
  const float *held = fg_logits_data(h, &n);
  CHECK_EQ_INT(n, g_vocab);
  CHECK(held == fg_session_logits(s)); /* zero-copy */
  float *keep = malloc(sizeof(float) * g_vocab);
  memcpy(keep, held, sizeof(float) * g_vocab);
  fg_snapshot *snap;
  CHECK_OK(fg_session_snapshot(s, &snap));
  CHECK_OK(fg_session_step(s, ids[3], NULL));
  CHECK(fg_session_logits(s) != held);
  fg_logits *h2 = fg_session_logits_hold(s);
  CHECK_OK(fg_session_step(s, ids[4], NULL)); /* h2 held: not written in place either */
  CHECK(fg_session_logits(s) != fg_logits_data(h2, NULL));
  CHECK(memcmp(fg_logits_data(h2, NULL), fg_session_logits(s), sizeof(float) * g_vocab) != 0);
  fg_logits_release(h2);
  CHECK_OK(fg_session_restore(s, snap));
  fg_snapshot_free(snap);
  CHECK_OK(fg_session_step(s, ids[5], NULL));
  fg_session_free(s);
  CHECK(memcmp(held, keep, sizeof(float) * g_vocab) == 0); /* still there, unchanged (ASan: not freed) */
  fg_logits_release(h);
  free(keep);
}

int main(void) {
  if (fg_test_ensure_model("tiny-f32.gguf", "tiny", "f32", 1) != 0) return 1;
  fg_error err;
  if (fg_model_load(fg_test_model_path("tiny-f32.gguf"), NULL, &g_model, &err) != FG_OK) {
    fprintf(stderr, "cannot load the tiny model: %s\n", err.msg);
    return 1;
  }
  g_vocab = g_model->hp.n_vocab;
  test_chunked_equals_reference();
  test_greedy_equals_reference();
  test_snapshot_isolation();
  test_failed_calls();
  test_save_load();
  test_bounded_memory();
  test_embeddings();
  test_threads();
  test_long_decode_equals_prefill();
  test_f16_kv_vs_reference();
  test_f16_kv_snapshots();
  test_logits_reuse();
  test_logits_hold();
  fg_model_free(g_model);
  return fg_test_finish("test_session");
}
