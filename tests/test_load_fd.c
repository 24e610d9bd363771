/* test_load_fd.c — fg_model_load_fd: a GGUF inside a larger file (an uncompressed APK asset).
 *
 *   1. the tiny model at offset 0 and embedded behind 1..8196 junk bytes (page-aligned, 4-aligned and
 *      odd offsets; mapped and read): the same fingerprint and bit-identical logits as fg_model_load,
 *      the length honoured (junk after the range is never read), the descriptor's position unmoved and
 *      the descriptor closable at once;
 *   2. bad input: no descriptor, a closed one, a directory, ranges past the end or overflowing, a
 *      range that cuts the GGUF short or starts on junk: a status and a message naming the descriptor,
 *      out-pointer NULL, never a crash;
 *   3. every allocation of a load made to fail (mapped at a page offset + 12, read at an odd offset):
 *      FG_ERR_NOMEM, out-pointer NULL, nothing leaked (the ASan pass checks leaks). */
#include "fgemma.h"

#include "fg_internal.h" /* fg_alloc_fail_after */
#include "testutil.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static uint8_t *g_gguf; /* (g_size) the tiny model's bytes */
static size_t g_size;
static float *g_ref;    /* (g_vocab) logits of the path-loaded model after k_ids */
static uint32_t g_vocab;
static uint8_t g_fp[16];
static char g_scratch[600];

static const int32_t k_ids[] = {2, 17, 5, 300, 41, 9, 77, 128};

/* Logits after k_ids from a fresh one-thread session (malloc'd), or NULL. */
static float *logits_of(const fg_model *m) {
  fg_session_params p;
  fg_session_params_init(&p);
  p.n_threads = 1;
  p.n_ctx = 64;
  fg_session *s = NULL;
  CHECK_OK(fg_session_create(m, &p, &s, NULL));
  if (!s) return NULL;
  float *out = NULL;
  fg_status st = fg_session_prefill(s, k_ids, sizeof k_ids / sizeof k_ids[0], NULL);
  CHECK_OK(st);
  if (st == FG_OK) {
    out = malloc(sizeof(float) * g_vocab);
    memcpy(out, fg_session_logits(s), sizeof(float) * g_vocab);
  }
  fg_session_free(s);
  return out;
}

/* Writes pre junk bytes, the model, post junk bytes to the scratch file; returns an O_RDONLY fd. */
static int embedded_fd(size_t pre, size_t post) {
  FILE *f = fopen(g_scratch, "wb");
  CHECK(f != NULL);
  if (!f) return -1;
  for (size_t i = 0; i < pre; i++) fputc((int)(0xA5 ^ (i * 31)), f);
  CHECK(fwrite(g_gguf, 1, g_size, f) == g_size);
  for (size_t i = 0; i < post; i++) fputc((int)(0x5A ^ (i * 17)), f);
  CHECK(fclose(f) == 0);
  int fd = open(g_scratch, O_RDONLY);
  CHECK(fd >= 0);
  return fd;
}

/* The model loaded from the range must be the path-loaded one: fingerprint, size, logits bit for bit. */
static void check_same_model(const fg_model *m, const char *what) {
  fg_model_info info;
  CHECK_OK(fg_model_get_info(m, &info));
  CHECK_MSG(memcmp(info.fingerprint, g_fp, 16) == 0, "%s: another fingerprint", what);
  CHECK_MSG(info.file_bytes == g_size, "%s: file_bytes %llu, want %zu", what, (unsigned long long)info.file_bytes, g_size);
  float *l = logits_of(m);
  CHECK_MSG(l && memcmp(l, g_ref, sizeof(float) * g_vocab) == 0, "%s: logits differ from the path-loaded model", what);
  free(l);
}

// ----------------------------------------------------------------------------------------------
// 1. Ranges that hold the model

static void test_ranges(void) {
  printf("1. the model at offsets 0..8196, mapped and read\n");
  static const size_t pre[] = {0, 1, 3, 4, 12, 100, 4095, 4096, 4096 + 12, 8192 + 4};
  static const uint32_t flags[] = {0, FG_MODEL_NO_MMAP};
  int n = 0;
  for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++) {
    int fd = embedded_fd(pre[i], 777);
    if (fd < 0) continue;
    for (size_t k = 0; k < 2; k++) {
      fg_model_params mp;
      fg_model_params_init(&mp);
      mp.flags = flags[k];
      char what[96];
      snprintf(what, sizeof what, "offset %zu, %s", pre[i], k ? "read" : "mapped");
      const off_t pos_before = lseek(fd, 0, SEEK_CUR);
      fg_model *m = NULL;
      fg_error err;
      fg_status st = fg_model_load_fd(fd, pre[i], g_size, &mp, &m, &err);
      CHECK_MSG(st == FG_OK, "%s: %s (%s)", what, fg_status_str(st), err.msg);
      CHECK_MSG(lseek(fd, 0, SEEK_CUR) == pos_before, "%s: the descriptor's position moved", what);
      if (m) check_same_model(m, what), n++;
      fg_model_free(m);
    }
    close(fd);
  }
  /* length 0 = up to the end of the file; the descriptor may be closed right after the load */
  int fd = embedded_fd(4096, 0);
  fg_model *m = NULL;
  CHECK_OK(fg_model_load_fd(fd, 4096, 0, NULL, &m, NULL));
  close(fd);
  remove(g_scratch);
  if (m) check_same_model(m, "length 0, descriptor closed and file removed after the load"), n++;
  fg_model_free(m);
  printf("  %d loads matched the path-loaded model bit for bit\n", n);
}

// ----------------------------------------------------------------------------------------------
// 2. Bad input

/* Expects status want, out NULL, and a message containing needle (and the descriptor's number). */
static void expect_fail(int fd, uint64_t off, uint64_t len, uint32_t flags, fg_status want, const char *needle,
                        const char *what) {
  fg_model_params mp;
  fg_model_params_init(&mp);
  mp.flags = flags;
  fg_model *m = (fg_model *)&m;
  fg_error err;
  fg_status st = fg_model_load_fd(fd, off, len, &mp, &m, &err);
  CHECK_MSG(st == want, "%s: got %s (%s), want %s", what, fg_status_str(st), err.msg, fg_status_str(want));
  CHECK_MSG(m == NULL, "%s: out-pointer not NULL", what);
  if (m && m != (fg_model *)&m) fg_model_free(m);
  CHECK_MSG(err.code == st && err.msg[0], "%s: no error report", what);
  CHECK_MSG(needle == NULL || strstr(err.msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, err.msg, needle);
  char fdname[32];
  snprintf(fdname, sizeof fdname, "fd %d", fd);
  CHECK_MSG(strstr(err.msg, fdname) != NULL, "%s: message '%s' does not name %s", what, err.msg, fdname);
}

static void test_bad_input(void) {
  printf("2. bad descriptors and ranges\n");
  fg_model *m = (fg_model *)&m;
  CHECK_EQ_INT(fg_model_load_fd(0, 0, 0, NULL, NULL, NULL), FG_ERR_INVALID_ARG);
  expect_fail(-1, 0, 0, 0, FG_ERR_INVALID_ARG, "not a file descriptor", "fd -1");
  int fd = embedded_fd(4096 + 12, 100);
  const uint64_t total = 4096 + 12 + g_size + 100;
  /* ranges */
  expect_fail(fd, total + 1, 0, 0, FG_ERR_INVALID_ARG, "past the end", "offset past the end");
  expect_fail(fd, total, 0, 0, FG_ERR_FORMAT, "empty", "offset at the end, length 0");
  expect_fail(fd, 4096 + 12, total, 0, FG_ERR_INVALID_ARG, "exceeds the file", "length past the end");
  expect_fail(fd, UINT64_MAX - 4, 16, 0, FG_ERR_INVALID_ARG, NULL, "offset + length overflows");
  expect_fail(fd, 16, UINT64_MAX, 0, FG_ERR_INVALID_ARG, NULL, "length overflows");
  /* ranges on junk or cutting the model short: every short length up to 200, then a sample */
  expect_fail(fd, 0, 0, 0, FG_ERR_FORMAT, "magic", "junk in front of the model");
  expect_fail(fd, 4096 + 11, g_size, 0, FG_ERR_FORMAT, NULL, "one byte too early");
  int n_cut = 0;
  for (uint64_t cut = 1; cut < g_size; cut = cut < 200 ? cut + 1 : cut * 3 + 1) {
    fg_model_params mp;
    fg_model_params_init(&mp);
    mp.flags = (cut & 1) ? FG_MODEL_NO_MMAP : 0;
    fg_error err;
    m = (fg_model *)&m;
    fg_status st = fg_model_load_fd(fd, 4096 + 12, cut, &mp, &m, &err);
    if (st != FG_ERR_FORMAT || m != NULL || strstr(err.msg, "fd ") == NULL) {
      CHECK_MSG(0, "truncated to %llu bytes: %s (%s)", (unsigned long long)cut, fg_status_str(st), err.msg);
      if (st == FG_OK) fg_model_free(m);
    }
    n_cut++;
  }
  printf("  %d truncated ranges refused\n", n_cut);
  /* a descriptor that is closed, and one of a directory */
  close(fd);
  remove(g_scratch);
  expect_fail(fd, 0, 0, 0, FG_ERR_IO, "cannot stat", "closed descriptor");
  int dfd = open(FG_TEST_MODELS, O_RDONLY);
  CHECK(dfd >= 0);
  expect_fail(dfd, 0, 0, 0, FG_ERR_IO, "not a regular file", "directory");
  close(dfd);
  /* a pipe */
  int pp[2];
  CHECK(pipe(pp) == 0);
  expect_fail(pp[0], 0, 0, 0, FG_ERR_IO, "not a regular file", "pipe");
  close(pp[0]);
  close(pp[1]);
}

// ----------------------------------------------------------------------------------------------
// 3. Failing allocations

static void sweep(uint64_t offset, uint32_t flags, const char *what) {
  int fd = embedded_fd((size_t)offset, 3);
  if (fd < 0) return;
  fg_model_params mp;
  fg_model_params_init(&mp);
  mp.flags = flags;
  fg_model *m = NULL;
  fg_alloc_fail_after(0);
  CHECK_OK(fg_model_load_fd(fd, offset, g_size, &mp, &m, NULL));
  const uint64_t n_alloc = fg_alloc_fail_after(0);
  fg_model_free(m);
  CHECK(n_alloc > 2);
  int bad = 0;
  for (uint64_t k = 1; k <= n_alloc + 1; k++) {
    fg_error err;
    m = (fg_model *)&m;
    fg_alloc_fail_after(k);
    fg_status st = fg_model_load_fd(fd, offset, g_size, &mp, &m, &err);
    fg_alloc_fail_after(0);
    const fg_status want = k <= n_alloc ? FG_ERR_NOMEM : FG_OK;
    if ((st != want || (st != FG_OK && (m != NULL || err.code != st))) && bad++ < 5)
      CHECK_MSG(0, "%s: allocation %llu of %llu failing: %s (%s), want %s", what, (unsigned long long)k,
                (unsigned long long)n_alloc, fg_status_str(st), err.msg, fg_status_str(want));
    if (st == FG_OK) check_same_model(m, what);
    if (st == FG_OK) fg_model_free(m);
  }
  printf("  %-40s %4llu allocation sites\n", what, (unsigned long long)n_alloc);
  close(fd);
  remove(g_scratch);
}

static void test_alloc_failures(void) {
  printf("3. failing allocations\n");
  sweep(4096 + 12, 0, "fg_model_load_fd (mapped, offset 4108)");
  sweep(3, 0, "fg_model_load_fd (offset 3: read)");
  sweep(8, FG_MODEL_NO_MMAP | FG_MODEL_CHECK_TENSORS, "fg_model_load_fd (read, check)");
}

int main(void) {
  if (fg_test_ensure_model("tiny-f32.gguf", "tiny", "f32", 1) != 0) return 1;
  snprintf(g_scratch, sizeof g_scratch, "%s/loadfd_%d.bin", FG_TEST_MODELS, (int)getpid());
  g_gguf = (uint8_t *)fg_test_read_file(fg_test_model_path("tiny-f32.gguf"), &g_size);
  CHECK(g_gguf != NULL && g_size > 4096);
  fg_model *m = NULL;
  CHECK_OK(fg_model_load(fg_test_model_path("tiny-f32.gguf"), NULL, &m, NULL));
  if (!g_gguf || !m) return fg_test_finish("test_load_fd");
  fg_model_info info;
  CHECK_OK(fg_model_get_info(m, &info));
  g_vocab = info.n_vocab;
  memcpy(g_fp, info.fingerprint, 16);
  g_ref = logits_of(m);
  fg_model_free(m);
  if (!g_ref) return fg_test_finish("test_load_fd");

  test_ranges();
  test_bad_input();
  test_alloc_failures();

  free(g_ref);
  free(g_gguf);
  remove(g_scratch);
  return fg_test_finish("test_load_fd");
}
