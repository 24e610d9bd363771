/* fuzz_gguf.c — libFuzzer entry point for the in-memory GGUF parser.
 *
 * Parses the input; on success walks every kv and tensor, calls the lookups and typed getters on each
 * and touches every byte the views claim to cover (so ASan flags any view past the buffer), and checks
 * the invariants the parser promises. On failure the output must be zeroed and the message set.
 *
 * Build (from the repository root):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Isrc -Iinclude \
 *     tests/fuzz/fuzz_gguf.c src/gguf/gguf.c src/core/alloc.c src/core/status.c src/core/sys.c \
 *     src/tensor/quant_ref.c src/tensor/quant_blocks.c src/tensor/half.c -lm -o fuzz_gguf
 *   ./fuzz_gguf -max_total_time=300 tests/fuzz/corpus/gguf */
#include "gguf/gguf.h"
#include "tensor/dtype.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(x)                                                      \
  do {                                                                     \
    if (!(x)) {                                                            \
      fprintf(stderr, "fuzz_gguf: invariant failed: %s (line %d)\n", #x, __LINE__); \
      abort();                                                             \
    }                                                                      \
  } while (0)

static volatile uint32_t g_sink; /* keeps the byte walks from being optimised away */

static void touch(const void *p, size_t n) {
  const uint8_t *b = p;
  uint32_t acc = 0;
  for (size_t i = 0; i < n; i++) acc += b[i];
  g_sink += acc;
}

static bool inside(const fg_gguf *g, const void *p, uint64_t n) {
  const uint8_t *b = p;
  return b >= g->base && (uint64_t)(b - g->base) <= g->size && n <= g->size - (uint64_t)(b - g->base);
}

static void walk_kv(const fg_gguf *g, const fg_gguf_kv *kv) {
  FUZZ_CHECK(kv->key.len > 0 && inside(g, kv->key.ptr, kv->key.len));
  FUZZ_CHECK((unsigned)kv->type < FG_GGUF_TYPE_COUNT);
  /* keys are unique, so the lookup finds this very entry (keys with a NUL inside can't be looked up) */
  char key[256];
  bool lookup = kv->key.len < sizeof key && memchr(kv->key.ptr, '\0', kv->key.len) == NULL;
  if (lookup) {
    memcpy(key, kv->key.ptr, kv->key.len);
    key[kv->key.len] = '\0';
    FUZZ_CHECK(fg_gguf_find_kv(g, key) == kv);
  }
  fg_error err;
  uint32_t u;
  float f;
  bool b;
  fg_gguf_str s;
  const fg_gguf_kv *arr;
  if (lookup) {
    fg_status st = fg_gguf_get_u32(g, key, &u, &err);
    FUZZ_CHECK(st == FG_OK || st == FG_ERR_FORMAT);
    st = fg_gguf_get_f32(g, key, &f, &err);
    FUZZ_CHECK(st == FG_OK || st == FG_ERR_FORMAT);
    st = fg_gguf_get_u32_or(g, key, 7, &u, &err);
    FUZZ_CHECK(st == FG_OK || st == FG_ERR_FORMAT);
    st = fg_gguf_get_f32_or(g, key, 0.5f, &f, &err);
    FUZZ_CHECK(st == FG_OK || st == FG_ERR_FORMAT);
    FUZZ_CHECK((fg_gguf_get_bool(g, key, &b, &err) == FG_OK) == (kv->type == FG_GGUF_BOOL));
    FUZZ_CHECK((fg_gguf_get_str(g, key, &s, &err) == FG_OK) == (kv->type == FG_GGUF_STRING));
    if (kv->type == FG_GGUF_ARRAY) FUZZ_CHECK(fg_gguf_get_arr(g, key, kv->arr_type, &arr, &err) == FG_OK && arr == kv);
  }
  if (kv->type == FG_GGUF_STRING) {
    FUZZ_CHECK(inside(g, kv->str.ptr, kv->str.len));
    touch(kv->str.ptr, kv->str.len);
  }
  if (kv->type != FG_GGUF_ARRAY) return;
  FUZZ_CHECK(kv->arr_type != FG_GGUF_ARRAY && (unsigned)kv->arr_type < FG_GGUF_TYPE_COUNT);
  if (kv->arr_type != FG_GGUF_STRING) {
    static const uint8_t esz[FG_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    FUZZ_CHECK(kv->arr_n <= g->size);
    FUZZ_CHECK(inside(g, kv->arr_data, kv->arr_n * esz[kv->arr_type]));
    touch(kv->arr_data, (size_t)kv->arr_n * esz[kv->arr_type]);
    return;
  }
  fg_gguf_str *strs = NULL;
  fg_status st = fg_gguf_str_array(kv, &strs, &err);
  FUZZ_CHECK(st == FG_OK || st == FG_ERR_NOMEM);
  if (st != FG_OK) return;
  for (uint64_t i = 0; i < kv->arr_n; i++) {
    FUZZ_CHECK(inside(g, strs[i].ptr, strs[i].len));
    touch(strs[i].ptr, strs[i].len);
  }
  fg_free(strs);
}

static void walk_tensor(const fg_gguf *g, const fg_gguf_tensor *t) {
  FUZZ_CHECK(t->name.len > 0 && inside(g, t->name.ptr, t->name.len));
  FUZZ_CHECK(t->n_dims >= 1 && t->n_dims <= FG_GGUF_MAX_DIMS);
  for (uint32_t d = 0; d < FG_GGUF_MAX_DIMS; d++) FUZZ_CHECK(t->ne[d] >= 1 && (d < t->n_dims || t->ne[d] == 1));
  FUZZ_CHECK(t->nbytes > 0 && t->offset % g->alignment == 0);
  FUZZ_CHECK(t->data == g->base + g->data_offset + t->offset);
  FUZZ_CHECK(inside(g, t->data, t->nbytes));
  touch(t->data, 1);
  touch(t->data + t->nbytes - 1, 1);
  /* the first row of a type fgemma computes with dequantizes from any bytes (UBSan: no undefined shift
   * or overflow in the block decoders), and its byte size is what the parser claimed */
  uint64_t rb;
  if (t->ne[0] <= 4096 && (uintptr_t)t->data % 4 == 0 && fg_type_row_bytes(t->type, t->ne[0], &rb)) {
    FUZZ_CHECK(rb <= t->nbytes);
    float row[4096];
    fg_dequantize_row(t->type, t->data, row, (size_t)t->ne[0]);
    touch(row, (size_t)t->ne[0] * sizeof(float));
  }
  char name[256];
  if (t->name.len < sizeof name && memchr(t->name.ptr, '\0', t->name.len) == NULL) {
    memcpy(name, t->name.ptr, t->name.len);
    name[t->name.len] = '\0';
    FUZZ_CHECK(fg_gguf_find_tensor(g, name) == t);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fg_gguf g;
  fg_error err;
  fg_err_clear(&err);
  fg_status st = fg_gguf_parse(data, size, &g, &err);
  if (st != FG_OK) {
    FUZZ_CHECK(st == FG_ERR_FORMAT || st == FG_ERR_UNSUPPORTED || st == FG_ERR_NOMEM);
    FUZZ_CHECK(err.code == st && err.msg[0] != '\0');
    FUZZ_CHECK(g.kv == NULL && g.tensors == NULL && g.n_kv == 0 && g.n_tensors == 0);
    return 0;
  }
  FUZZ_CHECK(g.version == 2 || g.version == 3);
  FUZZ_CHECK(g.alignment != 0 && (g.alignment & (g.alignment - 1)) == 0);
  FUZZ_CHECK(g.data_offset % g.alignment == 0);
  for (size_t i = 0; i < g.n_kv; i++) walk_kv(&g, &g.kv[i]);
  for (size_t i = 0; i < g.n_tensors; i++) walk_tensor(&g, &g.tensors[i]);
  /* no two tensors overlap (quadratic, so only for small counts) */
  if (g.n_tensors <= 64)
    for (size_t i = 0; i < g.n_tensors; i++)
      for (size_t j = i + 1; j < g.n_tensors; j++) {
        const fg_gguf_tensor *a = &g.tensors[i], *b = &g.tensors[j];
        FUZZ_CHECK(a->offset + a->nbytes <= b->offset || b->offset + b->nbytes <= a->offset);
      }
  fg_gguf_clear(&g);
  return 0;
}
