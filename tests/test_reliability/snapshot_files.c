/* snapshot_files.c — test_reliability, section 4: damaged and crafted snapshot files. */
#include "reliability.h"

// ----------------------------------------------------------------------------------------------
// 4. Damaged and crafted snapshot files

/* Layout (src/session/snapshot.c): "FGSNAP\r\n" | u32 version | u32 header bytes | fingerprint[16] |
 * u32 n_layer, k_dim, v_dim, n_vocab, window, pos, n_ctx, has_logits, kv_type | pos x i32 tokens | per layer:
 * u32 first kept position + K/V rows | logits | u64 FNV-1a of everything before it. */
enum { OFF_VERSION = 8, OFF_HDR_BYTES = 12, OFF_FP = 16, OFF_DIMS = 32, OFF_TOKENS = 68 };

void write_all(const char *path, const uint8_t *b, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL && fwrite(b, 1, n, f) == n);
  if (f) fclose(f);
}

void put_u32(uint8_t *p, uint32_t v) {
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

void test_snapshot_files(void) {
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

void test_errmsg_threads(void) {
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
