/* fuzz_safetensors.c — libFuzzer entry point for the safetensors header parser (src/convert/safetensors.c),
 * the first thing `fgemma convert` reads from a file it did not write.
 *
 * The input is a whole file. On success every promise is checked: the data starts after the header,
 * every tensor's range lies inside the file and matches shape × element size, no two ranges overlap,
 * names are non-empty, unique and findable, and the first and last byte of every range are touched (so
 * ASan flags a range past the buffer). On failure: a message, an empty header. The parse is also run on
 * the header alone (the tensor bytes need not be in memory), which must give the same result.
 *
 * Build: scripts/fuzz.sh --build-only safetensors (or by hand, like fuzz_gguf.c with
 * src/convert/safetensors.c src/convert/json_scan.c added). Run: scripts/fuzz.sh safetensors */
#include "convert/safetensors.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(x)                                                                         \
  do {                                                                                        \
    if (!(x)) {                                                                               \
      fprintf(stderr, "fuzz_safetensors: invariant failed: %s (line %d)\n", #x, __LINE__);    \
      abort();                                                                                \
    }                                                                                         \
  } while (0)

static volatile uint32_t g_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fg_st_header h;
  fg_error err;
  fg_err_clear(&err);
  const fg_status st = fg_st_parse(data, size, size, &h, &err);
  if (st != FG_OK) {
    FUZZ_CHECK(st == FG_ERR_FORMAT || st == FG_ERR_UNSUPPORTED || st == FG_ERR_NOMEM);
    FUZZ_CHECK(err.code == st && err.msg[0] != '\0');
    FUZZ_CHECK(h.n == 0 && h.t == NULL);
    return 0;
  }
  FUZZ_CHECK(h.data_start >= 10 && h.data_start <= size);
  for (size_t i = 0; i < h.n; i++) {
    const fg_st_tensor *t = &h.t[i];
    FUZZ_CHECK(t->name && t->name[0] != '\0');
    FUZZ_CHECK(fg_st_find(&h, t->name) == t);
    FUZZ_CHECK((unsigned)t->dtype < FG_ST_DTYPE_COUNT && t->n_dims <= FG_ST_MAX_DIMS);
    FUZZ_CHECK(t->begin >= h.data_start && t->begin <= t->end && t->end <= size);
    uint64_t bytes = fg_st_dtype_size(t->dtype);
    for (uint32_t d = 0; d < t->n_dims; d++) FUZZ_CHECK(fg_mul_u64(bytes, t->shape[d], &bytes));
    FUZZ_CHECK(bytes == t->end - t->begin);
    if (t->end > t->begin) g_sink += data[t->begin] + data[t->end - 1];
  }
  if (h.n <= 64)
    for (size_t i = 0; i < h.n; i++)
      for (size_t j = i + 1; j < h.n; j++)
        FUZZ_CHECK(h.t[i].end <= h.t[j].begin || h.t[j].end <= h.t[i].begin);
  /* the header alone gives the same tensors */
  fg_st_header h2;
  FUZZ_CHECK(fg_st_parse(data, (size_t)h.data_start, size, &h2, &err) == FG_OK && h2.n == h.n);
  for (size_t i = 0; i < h.n; i++)
    FUZZ_CHECK(strcmp(h.t[i].name, h2.t[i].name) == 0 && h.t[i].begin == h2.t[i].begin && h.t[i].end == h2.t[i].end);
  fg_st_clear(&h2);
  fg_st_clear(&h);
  return 0;
}
