/* fuzz_hfvocab.c — libFuzzer entry point for the tokenizer.json reader (src/convert/hf_vocab.c) and the
 * JSON scanner under it: `fgemma convert` reads a checkpoint's tokenizer.json with it.
 *
 * On success: n pieces, each with text (NUL-terminated at its length), a valid token type and a finite
 * score; every piece that was not rewritten as a user-defined token is found again by fg_hf_vocab_find;
 * the GGUF metadata of the vocabulary can be written. On failure: a message, nothing allocated.
 *
 * Build: scripts/fuzz.sh --build-only hfvocab. Run: scripts/fuzz.sh hfvocab */
#include "convert/hf_vocab.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(x)                                                                      \
  do {                                                                                     \
    if (!(x)) {                                                                            \
      fprintf(stderr, "fuzz_hfvocab: invariant failed: %s (line %d)\n", #x, __LINE__);     \
      abort();                                                                             \
    }                                                                                      \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fg_hf_vocab v;
  fg_hf_vocab_info info;
  fg_error err;
  fg_err_clear(&err);
  const fg_status st = fg_hf_vocab_read_json((const char *)data, size, "fuzz.json", &v, &info, &err);
  if (st != FG_OK) {
    FUZZ_CHECK(st == FG_ERR_FORMAT || st == FG_ERR_UNSUPPORTED || st == FG_ERR_NOMEM);
    FUZZ_CHECK(err.code == st && err.msg[0] != '\0');
    FUZZ_CHECK(v.n == 0 && v.text == NULL && v.pool == NULL);
    return 0;
  }
  FUZZ_CHECK(v.n > 0 && info.add_bos >= -1 && info.add_bos <= 1);
  for (uint32_t i = 0; i < v.n; i++) {
    FUZZ_CHECK(v.text[i] != NULL && v.text[i][v.len[i]] == '\0');
    FUZZ_CHECK(v.type[i] >= FG_TOK_NORMAL && v.type[i] <= FG_TOK_BYTE);
    FUZZ_CHECK(isfinite(v.score[i]));
    if (v.type[i] != FG_TOK_USER) FUZZ_CHECK(fg_hf_vocab_find(&v, v.text[i], v.len[i]) == (int32_t)i);
  }
  fg_gguf_writer *w = fg_gguf_writer_create();
  if (w) {
    const fg_hf_special sp = {0, 0, 0, 0, true, false};
    const fg_status ws = fg_hf_vocab_write_gguf(w, &v, &sp, &err);
    FUZZ_CHECK(ws == FG_OK || ws == FG_ERR_NOMEM);
    fg_gguf_writer_free(w);
  }
  fg_hf_vocab_free(&v);
  return 0;
}
