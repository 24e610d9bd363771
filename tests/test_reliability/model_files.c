/* model_files.c — test_reliability, section 6: damaged model files. */
#include "reliability.h"

// ----------------------------------------------------------------------------------------------
// 6. Damaged model files

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

void test_model_files(void) {
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
