/* dequant_dump.c — fgemma's dequantization of a GGUF tensor, for the gguf numpy oracle
 * (tests/oracle/gguf_dequant.py). A test tool: it uses the library's internal headers.
 *
 *   dequant_dump --list FILE.gguf        one line per tensor, in file order:
 *                                        NAME<TAB>TYPE_ID<TAB>TYPE_NAME<TAB>NE0,NE1,NE2,NE3<TAB>SUPPORTED
 *                                        (TYPE_NAME "?" and SUPPORTED 0 for a type fgemma cannot dequantize)
 *   dequant_dump FILE.gguf NAME [ROWS]   the tensor as raw little-endian f32 on stdout, row after row
 *                                        (fg_dequantize_row per row of NE0 elements); with ROWS, only
 *                                        the first ROWS rows
 *
 * Exit status: 0 done, 1 I/O or format error, 2 usage, 3 the tensor's type is not supported by fgemma,
 * 4 no such tensor. */
#include "gguf/gguf.h"
#include "tensor/dtype.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void) {
  fprintf(stderr, "usage: dequant_dump --list FILE.gguf | dequant_dump FILE.gguf TENSOR_NAME [ROWS]\n");
  return 2;
}

/* Opens and parses path; prints the error and returns false on failure. */
static bool open_gguf(const char *path, fg_mapfile *map, fg_gguf *g) {
  fg_error err = {0};
  if (fg_mapfile_open(path, true, map, &err) != FG_OK) {
    fprintf(stderr, "dequant_dump: %s: %s\n", path, err.msg);
    return false;
  }
  if (fg_gguf_parse(map->data, map->size, g, &err) != FG_OK) {
    fprintf(stderr, "dequant_dump: %s: %s\n", path, err.msg);
    fg_mapfile_close(map);
    return false;
  }
  return true;
}

static void list(const fg_gguf *g) {
  for (size_t i = 0; i < g->n_tensors; i++) {
    const fg_gguf_tensor *t = &g->tensors[i];
    const fg_type_traits *tr = fg_type_traits_get(t->type);
    printf("%.*s\t%" PRIu32 "\t%s\t%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\t%d\n", (int)t->name.len,
           t->name.ptr, t->type, tr ? tr->name : "?", t->ne[0], t->ne[1], t->ne[2], t->ne[3], tr != NULL);
  }
}

static int dump(const fg_gguf *g, const char *name, uint64_t max_rows) {
  const fg_gguf_tensor *t = fg_gguf_find_tensor(g, name);
  if (!t) {
    fprintf(stderr, "dequant_dump: no tensor '%s'\n", name);
    return 4;
  }
  uint64_t row_bytes = 0;
  if (!fg_type_traits_get(t->type) || !fg_type_row_bytes(t->type, t->ne[0], &row_bytes)) {
    fprintf(stderr, "dequant_dump: tensor '%s' has type id %" PRIu32 ", which fgemma does not dequantize\n", name,
            t->type);
    return 3;
  }
  uint64_t n_rows = t->ne[1] * t->ne[2] * t->ne[3]; /* the parser checked the product */
  if (max_rows && max_rows < n_rows) n_rows = max_rows;
  float *row = malloc((size_t)t->ne[0] * sizeof *row);    /* (ne0) */
  if (!row) {
    fprintf(stderr, "dequant_dump: out of memory\n");
    return 1;
  }
  int rc = 0;
  for (uint64_t r = 0; r < n_rows && !rc; r++) {
    fg_dequantize_row(t->type, t->data + r * row_bytes, row, (size_t)t->ne[0]);
    if (fwrite(row, sizeof *row, (size_t)t->ne[0], stdout) != (size_t)t->ne[0]) rc = 1;
  }
  if (fflush(stdout) != 0) rc = 1;
  if (rc) fprintf(stderr, "dequant_dump: cannot write the output\n");
  free(row);
  return rc;
}

int main(int argc, char **argv) {
  const bool listing = argc == 3 && strcmp(argv[1], "--list") == 0;
  if (!listing && (argc < 3 || argc > 4 || argv[1][0] == '-')) return usage();
  uint64_t max_rows = 0;
  if (argc == 4) {
    char *end = NULL;
    max_rows = strtoull(argv[3], &end, 10);
    if (!end || *end || max_rows == 0) return usage();
  }
  fg_mapfile map = {0};
  fg_gguf g = {0};
  if (!open_gguf(argv[listing ? 2 : 1], &map, &g)) return 1;
  int rc = 0;
  if (listing)
    list(&g);
  else
    rc = dump(&g, argv[2], max_rows);
  if (listing && (fflush(stdout) != 0 || ferror(stdout))) rc = 1;
  fg_gguf_clear(&g);
  fg_mapfile_close(&map);
  return rc;
}
