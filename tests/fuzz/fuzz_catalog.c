// fuzz_catalog.c — libFuzzer target: arbitrary bytes -> fg_catalog_parse -> every renderer.
//
// Build (one command each, from the repository root; the library sources are compiled in directly):
//   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iinclude -Isrc
//     tests/fuzz/fuzz_catalog.c src/nlu/catalog.c src/nlu/control_tokens.c src/nlu/render.c src/nlu/parse.c src/core/*.c -lcjson -lm -lpthread -o fuzz_catalog
//   ./fuzz_catalog -max_total_time=300 -max_len=8192 tests/fuzz/corpus/catalog
// Invariants checked beyond memory safety: a parse either succeeds or fails with FG_ERR_FORMAT /
// FG_ERR_NOMEM and a message; the size query agrees with the rendering; the prefix holds exactly one
// declaration block per function (catalog text cannot smuggle control tokens in).
#include "nlu/catalog.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t count(const char *s, size_t n, const char *needle) {
  size_t k = 0, m = strlen(needle);
  for (size_t i = 0; i + m <= n; i++)
    if (memcmp(s + i, needle, m) == 0) k++;
  return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fg_catalog *c = NULL;
  fg_error e = {0};
  fg_status st = fg_catalog_parse((const char *)data, size, &c, &e);
  if (st != FG_OK) {
    if (c != NULL || (st != FG_ERR_FORMAT && st != FG_ERR_NOMEM) || e.msg[0] == '\0') abort();
    return 0;
  }
  size_t need = 0, n = 0;
  if (fg_catalog_render_prefix(c, NULL, 0, &need) != FG_ERR_BUFFER_TOO_SMALL) abort();
  char *buf = malloc(need + 1);
  if (fg_catalog_render_prefix(c, buf, need + 1, &n) != FG_OK || n != need || buf[n] != '\0') abort();
  size_t nf = fg_catalog_n_functions(c);
  if (nf == 0 || count(buf, n, "<start_function_declaration>") != nf ||
      count(buf, n, "<end_function_declaration>") != nf || count(buf, n, "<end_of_turn>") != 1 ||
      count(buf, n, "<start_of_turn>") != 2)
    abort();
  for (size_t i = 0; i < nf; i++) {
    char small[8];
    size_t m = 0, m2 = 0;
    fg_status r = fg_catalog_render_function(c, i, small, sizeof small, &m);
    if (r != FG_ERR_BUFFER_TOO_SMALL) abort(); /* "declaration:" alone is longer than 8 bytes */
    char *d = malloc(m + 1);
    if (fg_catalog_render_function(c, i, d, m + 1, &m2) != FG_OK || m2 != m || !memmem(buf, n, d, m)) abort();
    const fg_function *f = fg_catalog_function(c, i);
    if (fg_catalog_find(c, f->name, strlen(f->name), NULL) != f) abort();
    free(d);
  }
  free(buf);
  fg_catalog_free(c);
  return 0;
}
