/* test_gguf.c — GGUF parser, writer and file mapping.
 *
 * Files are built two independent ways: by the streaming writer (round trips) and byte by byte with the
 * little builder below (exact layouts and corruptions), so a bug shared by writer and parser cannot hide.
 * With FG_GGUF_CORPUS_DIR set, the test also writes fuzzing seeds there (tests/fuzz/corpus/gguf). */
#include "gguf/gguf.h"
#include "tensor/dtype.h"
#include "testutil.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// ----------------------------------------------------------------------------------------------------
// Byte builder

typedef struct bb {
  uint8_t *p;
  size_t n, cap;
} bb;

static void bb_put(bb *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
      fprintf(stderr, "test_gguf: out of memory\n");
      exit(2);
    }
    b->p = p;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
}

static void bb_u8(bb *b, uint8_t v) { bb_put(b, &v, 1); }
static void bb_u16(bb *b, uint16_t v) {
  uint8_t t[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  bb_put(b, t, 2);
}
static void bb_u32(bb *b, uint32_t v) {
  uint8_t t[4];
  for (int i = 0; i < 4; i++) t[i] = (uint8_t)(v >> (8 * i));
  bb_put(b, t, 4);
}
static void bb_u64(bb *b, uint64_t v) {
  uint8_t t[8];
  for (int i = 0; i < 8; i++) t[i] = (uint8_t)(v >> (8 * i));
  bb_put(b, t, 8);
}
static void bb_f32(bb *b, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  bb_u32(b, u);
}
static void bb_f64(bb *b, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  bb_u64(b, u);
}
static void bb_str(bb *b, const char *s) {
  bb_u64(b, strlen(s));
  bb_put(b, s, strlen(s));
}
static void bb_zeros(bb *b, size_t n) {
  for (size_t i = 0; i < n; i++) bb_u8(b, 0);
}
static void bb_pad(bb *b, size_t align) {
  while (b->n % align) bb_u8(b, 0);
}
static void bb_hdr(bb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
  bb_u32(b, FG_GGUF_MAGIC);
  bb_u32(b, version);
  bb_u64(b, n_tensors);
  bb_u64(b, n_kv);
}
static void bb_kv_u32(bb *b, const char *key, uint32_t v) {
  bb_str(b, key);
  bb_u32(b, FG_GGUF_UINT32);
  bb_u32(b, v);
}
static void bb_kv_str(bb *b, const char *key, const char *v) {
  bb_str(b, key);
  bb_u32(b, FG_GGUF_STRING);
  bb_str(b, v);
}
static void bb_tensor(bb *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off) {
  bb_str(b, name);
  bb_u32(b, n_dims);
  for (uint32_t d = 0; d < n_dims; d++) bb_u64(b, ne[d]);
  bb_u32(b, type);
  bb_u64(b, off);
}
static void bb_free(bb *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* A small valid file exercising every kind of kv and two tensors; the last tensor ends at EOF, so
 * every proper prefix is invalid. */
static void build_small_valid(bb *b) {
  bb_hdr(b, 3, 2, 6);
  bb_kv_str(b, "general.architecture", "gemma3");
  bb_kv_u32(b, "gemma3.block_count", 2);
  bb_str(b, "x.f64");
  bb_u32(b, FG_GGUF_FLOAT64);
  bb_f64(b, -2.5);
  bb_str(b, "x.strs"); /* array of 3 strings, one empty */
  bb_u32(b, FG_GGUF_ARRAY);
  bb_u32(b, FG_GGUF_STRING);
  bb_u64(b, 3);
  bb_str(b, "a");
  bb_str(b, "");
  bb_str(b, "<bos>");
  bb_str(b, "x.i16s");
  bb_u32(b, FG_GGUF_ARRAY);
  bb_u32(b, FG_GGUF_INT16);
  bb_u64(b, 2);
  bb_u16(b, (uint16_t)-7);
  bb_u16(b, 300);
  bb_str(b, "x.flag");
  bb_u32(b, FG_GGUF_BOOL);
  bb_u8(b, 1);
  uint64_t ne_a[2] = {4, 2}, ne_b[1] = {32};
  bb_tensor(b, "a.weight", 2, ne_a, FG_TYPE_F32, 0);   /* 32 bytes */
  bb_tensor(b, "b.weight", 1, ne_b, FG_TYPE_Q8_0, 32); /* 34 bytes */
  bb_pad(b, 32);
  for (int i = 0; i < 8; i++) bb_f32(b, (float)i);
  for (int i = 0; i < 34; i++) bb_u8(b, (uint8_t)(0xA0 + i));
}

// ----------------------------------------------------------------------------------------------------
// Helpers

/* Parses a private heap copy of exactly n bytes (so ASan sees any overread). */
static fg_status parse_copy(const uint8_t *data, size_t n, fg_gguf *g, fg_error *err, uint8_t **copy) {
  *copy = malloc(n ? n : 1);
  if (n) memcpy(*copy, data, n);
  return fg_gguf_parse(*copy, n, g, err);
}

static bool is_zeroed(const fg_gguf *g) {
  return g->kv == NULL && g->tensors == NULL && g->n_kv == 0 && g->n_tensors == 0 && g->base == NULL;
}

/* Expects code, and a message containing need1 and need2 (either may be NULL). */
static void expect_fail_at(int line, const bb *b, fg_status code, const char *need1, const char *need2) {
  fg_gguf g;
  fg_error err = {FG_OK, ""};
  uint8_t *copy;
  fg_status st = parse_copy(b->p, b->n, &g, &err, &copy);
  CHECK_MSG(st == code, "line %d: status %d (%s), expected %d; msg: %s", line, (int)st, fg_status_str(st), (int)code,
            err.msg);
  CHECK_MSG(err.code == code, "line %d: err.code %d", line, (int)err.code);
  CHECK_MSG(!need1 || strstr(err.msg, need1), "line %d: message '%s' lacks '%s'", line, err.msg, need1);
  CHECK_MSG(!need2 || strstr(err.msg, need2), "line %d: message '%s' lacks '%s'", line, err.msg, need2);
  CHECK_MSG(is_zeroed(&g), "line %d: out not zeroed on failure", line);
  if (getenv("FG_TEST_VERBOSE")) printf("  line %d: %s: %s\n", line, fg_status_str(st), err.msg);
  if (st == FG_OK) fg_gguf_clear(&g);
  free(copy);
}
#define EXPECT_FAIL(b, code, n1, n2) expect_fail_at(__LINE__, (b), (code), (n1), (n2))

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 16);
}

/* Runs the writer into a memory buffer (caller frees *out). */
typedef fg_status (*writer_fill_fn)(fg_gguf_writer *w, FILE *f, fg_error *err, void *ud);
static fg_status write_to_memory(writer_fill_fn fill, void *ud, uint8_t **out, size_t *n, fg_error *err) {
  char *buf = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&buf, &size);
  if (!f) return FG_ERR_IO;
  fg_gguf_writer *w = fg_gguf_writer_create();
  fg_status st = w ? fill(w, f, err, ud) : FG_ERR_NOMEM;
  fg_gguf_writer_free(w);
  fclose(f);
  *out = (uint8_t *)buf;
  *n = size;
  return st;
}

static bool write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(data, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

// ----------------------------------------------------------------------------------------------------
// Writer layout, checked byte for byte against a hand-built file

static fg_status fill_tiny(fg_gguf_writer *w, FILE *f, fg_error *err, void *ud) {
  (void)ud;
  const uint64_t ne[1] = {4};
  const float data[4] = {1.0f, -2.0f, 0.5f, 3.25f};
  fg_status st;
  if ((st = fg_gguf_writer_set_u32(w, "t.n", 7)) || (st = fg_gguf_writer_add_tensor(w, "w", FG_TYPE_F32, 1, ne)) ||
      (st = fg_gguf_writer_begin(w, f, err)) || (st = fg_gguf_writer_tensor_data(w, f, data, sizeof data, err)))
    return st;
  return fg_gguf_writer_end(w, f, err);
}

static void test_writer_exact_bytes(void) {
  uint8_t *got;
  size_t n;
  fg_error err = {FG_OK, ""};
  CHECK_OK(write_to_memory(fill_tiny, NULL, &got, &n, &err));
  bb e = {0};
  bb_hdr(&e, 3, 1, 1);
  bb_kv_u32(&e, "t.n", 7);
  const uint64_t ne[1] = {4};
  bb_tensor(&e, "w", 1, ne, FG_TYPE_F32, 0);
  bb_pad(&e, 32);
  bb_f32(&e, 1.0f);
  bb_f32(&e, -2.0f);
  bb_f32(&e, 0.5f);
  bb_f32(&e, 3.25f);
  CHECK_EQ_INT(n, e.n);
  CHECK_MSG(n == e.n && memcmp(got, e.p, n) == 0, "writer output differs from the hand-built layout");
  bb_free(&e);
  free(got);
}

// ----------------------------------------------------------------------------------------------------
// Round trip: every kv type, arrays, every tensor type

typedef struct rt_tensor {
  const char *name;
  uint32_t type;
  uint32_t n_dims;
  uint64_t ne[4];
  uint8_t *data;
  size_t nbytes;
} rt_tensor;

typedef struct rt_case {
  uint32_t alignment; /* 0 = don't set the key */
  rt_tensor t[6];
  size_t n_t;
} rt_case;

static const uint8_t k_u8s[3] = {0, 200, 255};
static const int8_t k_i8s[3] = {-128, 0, 127};
static const uint16_t k_u16s[2] = {65535, 1};
static const int16_t k_i16s[2] = {-32768, 12345};
static const uint32_t k_u32s[3] = {0, 1, 4294967295u};
static const int32_t k_i32s[3] = {-2147483647 - 1, -1, 2147483647};
static const float k_f32s[4] = {0.0f, -1.5f, 3.0e38f, 1.0e-40f};
static const bool k_bools[3] = {true, false, true};
static const uint64_t k_u64s[2] = {UINT64_MAX, 42};
static const int64_t k_i64s[2] = {INT64_MIN, INT64_MAX};
static const double k_f64s[2] = {1.0 / 3.0, -1e300};
static const char *const k_strs[4] = {"<pad>", "", "h\xc3\xa4llo", "nul\0inside"};
static const size_t k_str_lens[4] = {5, 0, 6, 10};

static fg_status fill_roundtrip(fg_gguf_writer *w, FILE *f, fg_error *err, void *ud) {
  rt_case *c = ud;
  fg_status st = FG_OK;
  /* tensors first, then metadata: the order of calls must not matter */
  for (size_t i = 0; i < c->n_t && !st; i++) st = fg_gguf_writer_add_tensor(w, c->t[i].name, c->t[i].type, c->t[i].n_dims, c->t[i].ne);
  if (st) return st;
  if (c->alignment && (st = fg_gguf_writer_set_u32(w, "general.alignment", c->alignment))) return st;
  if ((st = fg_gguf_writer_set_str(w, "general.architecture", "gemma3")) ||
      (st = fg_gguf_writer_set_u32(w, "s.u32", 4000000000u)) || (st = fg_gguf_writer_set_i32(w, "s.i32", -123456)) ||
      (st = fg_gguf_writer_set_f32(w, "s.f32", 1e-6f)) || (st = fg_gguf_writer_set_bool(w, "s.bool", true)) ||
      (st = fg_gguf_writer_set_bool(w, "s.false", false)) || (st = fg_gguf_writer_set_str(w, "s.empty", "")) ||
      (st = fg_gguf_writer_set_u32(w, "s.replaced", 1)) || (st = fg_gguf_writer_set_u32(w, "s.replaced", 2)) ||
      (st = fg_gguf_writer_set_arr(w, "a.u8", FG_GGUF_UINT8, k_u8s, 3)) ||
      (st = fg_gguf_writer_set_arr(w, "a.i8", FG_GGUF_INT8, k_i8s, 3)) ||
      (st = fg_gguf_writer_set_arr(w, "a.u16", FG_GGUF_UINT16, k_u16s, 2)) ||
      (st = fg_gguf_writer_set_arr(w, "a.i16", FG_GGUF_INT16, k_i16s, 2)) ||
      (st = fg_gguf_writer_set_arr(w, "a.u32", FG_GGUF_UINT32, k_u32s, 3)) ||
      (st = fg_gguf_writer_set_arr(w, "a.i32", FG_GGUF_INT32, k_i32s, 3)) ||
      (st = fg_gguf_writer_set_arr(w, "a.f32", FG_GGUF_FLOAT32, k_f32s, 4)) ||
      (st = fg_gguf_writer_set_arr(w, "a.bool", FG_GGUF_BOOL, k_bools, 3)) ||
      (st = fg_gguf_writer_set_arr(w, "a.u64", FG_GGUF_UINT64, k_u64s, 2)) ||
      (st = fg_gguf_writer_set_arr(w, "a.i64", FG_GGUF_INT64, k_i64s, 2)) ||
      (st = fg_gguf_writer_set_arr(w, "a.f64", FG_GGUF_FLOAT64, k_f64s, 2)) ||
      (st = fg_gguf_writer_set_arr(w, "a.empty", FG_GGUF_INT32, NULL, 0)) ||
      (st = fg_gguf_writer_set_arr_str(w, "a.str", k_strs, k_str_lens, 4)) ||
      (st = fg_gguf_writer_set_arr_str(w, "a.cstr", k_strs, NULL, 3)))
    return st;
  if ((st = fg_gguf_writer_begin(w, f, err))) return st;
  for (size_t i = 0; i < c->n_t; i++)
    if ((st = fg_gguf_writer_tensor_data(w, f, c->t[i].data, c->t[i].nbytes, err))) return st;
  return fg_gguf_writer_end(w, f, err);
}

static uint64_t rd_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static void check_arr_elems(const fg_gguf *g, const char *key, fg_gguf_type t, const void *expect, size_t n,
                            size_t esz) {
  const fg_gguf_kv *kv = NULL;
  fg_error err = {FG_OK, ""};
  CHECK_OK(fg_gguf_get_arr(g, key, t, &kv, &err));
  if (!kv) return;
  CHECK_EQ_INT(kv->arr_n, n);
  for (size_t i = 0; i < n && i < kv->arr_n; i++) {
    uint64_t got = rd_le(kv->arr_data + i * esz, (int)esz);
    uint64_t want = 0;
    if (t == FG_GGUF_BOOL)
      want = ((const bool *)expect)[i] ? 1 : 0;
    else
      memcpy(&want, (const uint8_t *)expect + i * esz, esz); /* little-endian host */
    CHECK_MSG(got == want, "%s[%zu]: got 0x%llx want 0x%llx", key, i, (unsigned long long)got,
              (unsigned long long)want);
  }
}

static void run_roundtrip(uint32_t alignment) {
  rt_case c;
  memset(&c, 0, sizeof c);
  c.alignment = alignment;
  const rt_tensor specs[6] = {
    {"t.f32", FG_TYPE_F32, 1, {5, 1, 1, 1}, NULL, 0},     {"t.f16", FG_TYPE_F16, 2, {3, 7, 1, 1}, NULL, 0},
    {"t.bf16", FG_TYPE_BF16, 3, {2, 3, 5, 1}, NULL, 0},   {"t.q8_0", FG_TYPE_Q8_0, 2, {64, 3, 1, 1}, NULL, 0},
    {"t.q4_0", FG_TYPE_Q4_0, 4, {32, 2, 1, 3}, NULL, 0},  {"t.one", FG_TYPE_F32, 1, {1, 1, 1, 1}, NULL, 0},
  };
  /* expected sizes from the block layouts, independent of fg_type_row_bytes */
  const size_t expect_bytes[6] = {5 * 4, 3 * 7 * 2, 2 * 3 * 5 * 2, 2 * 3 * 34, 1 * 2 * 3 * 18, 4};
  c.n_t = 6;
  for (size_t i = 0; i < c.n_t; i++) {
    c.t[i] = specs[i];
    c.t[i].nbytes = expect_bytes[i];
    c.t[i].data = malloc(c.t[i].nbytes);
    for (size_t j = 0; j < c.t[i].nbytes; j++) c.t[i].data[j] = (uint8_t)rnd();
  }
  uint8_t *file;
  size_t n;
  fg_error err = {FG_OK, ""};
  CHECK_OK(write_to_memory(fill_roundtrip, &c, &file, &n, &err));
  if (err.code) fprintf(stderr, "writer: %s\n", err.msg);

  fg_gguf g;
  uint8_t *copy;
  fg_status st = parse_copy(file, n, &g, &err, &copy);
  CHECK_MSG(st == FG_OK, "round trip parse: %s", err.msg);
  if (st == FG_OK) {
    uint64_t align = alignment ? alignment : 32;
    CHECK_EQ_INT(g.version, 3);
    CHECK_EQ_INT(g.alignment, align);
    CHECK_EQ_INT(g.data_offset % align, 0);
    CHECK_EQ_INT(g.n_kv, 22 + (alignment ? 1 : 0));
    CHECK_EQ_INT(g.n_tensors, 6);

    uint32_t u = 0;
    float f = 0;
    bool b = false;
    fg_gguf_str s = {0};
    CHECK_OK(fg_gguf_get_str(&g, "general.architecture", &s, &err));
    CHECK(fg_gguf_str_eq(s, "gemma3"));
    CHECK(!fg_gguf_str_eq(s, "gemma"));
    CHECK(!fg_gguf_str_eq(s, "gemma33"));
    CHECK_OK(fg_gguf_get_u32(&g, "s.u32", &u, &err));
    CHECK_EQ_INT(u, 4000000000u);
    const fg_gguf_kv *kv = fg_gguf_find_kv(&g, "s.i32");
    CHECK(kv && kv->type == FG_GGUF_INT32 && kv->v.i64 == -123456);
    CHECK_OK(fg_gguf_get_f32(&g, "s.f32", &f, &err));
    CHECK(f == 1e-6f);
    CHECK_OK(fg_gguf_get_f32(&g, "s.i32", &f, &err)); /* f32 getter accepts integers */
    CHECK(f == -123456.0f);
    CHECK_OK(fg_gguf_get_bool(&g, "s.bool", &b, &err));
    CHECK(b == true);
    CHECK_OK(fg_gguf_get_bool(&g, "s.false", &b, &err));
    CHECK(b == false);
    CHECK_OK(fg_gguf_get_str(&g, "s.empty", &s, &err));
    CHECK_EQ_INT(s.len, 0);
    CHECK_OK(fg_gguf_get_u32(&g, "s.replaced", &u, &err));
    CHECK_EQ_INT(u, 2);
    if (alignment) {
      CHECK_OK(fg_gguf_get_u32(&g, "general.alignment", &u, &err));
      CHECK_EQ_INT(u, alignment);
    } else {
      CHECK(fg_gguf_find_kv(&g, "general.alignment") == NULL); /* only written when set */
    }

    check_arr_elems(&g, "a.u8", FG_GGUF_UINT8, k_u8s, 3, 1);
    check_arr_elems(&g, "a.i8", FG_GGUF_INT8, k_i8s, 3, 1);
    check_arr_elems(&g, "a.u16", FG_GGUF_UINT16, k_u16s, 2, 2);
    check_arr_elems(&g, "a.i16", FG_GGUF_INT16, k_i16s, 2, 2);
    check_arr_elems(&g, "a.u32", FG_GGUF_UINT32, k_u32s, 3, 4);
    check_arr_elems(&g, "a.i32", FG_GGUF_INT32, k_i32s, 3, 4);
    check_arr_elems(&g, "a.f32", FG_GGUF_FLOAT32, k_f32s, 4, 4);
    check_arr_elems(&g, "a.bool", FG_GGUF_BOOL, k_bools, 3, 1);
    check_arr_elems(&g, "a.u64", FG_GGUF_UINT64, k_u64s, 2, 8);
    check_arr_elems(&g, "a.i64", FG_GGUF_INT64, k_i64s, 2, 8);
    check_arr_elems(&g, "a.f64", FG_GGUF_FLOAT64, k_f64s, 2, 8);
    check_arr_elems(&g, "a.empty", FG_GGUF_INT32, NULL, 0, 4);

    const fg_gguf_kv *akv = NULL;
    CHECK_OK(fg_gguf_get_arr(&g, "a.str", FG_GGUF_STRING, &akv, &err));
    fg_gguf_str *strs = NULL;
    if (akv) CHECK_OK(fg_gguf_str_array(akv, &strs, &err));
    if (strs) {
      CHECK_EQ_INT(akv->arr_n, 4);
      for (size_t i = 0; i < 4; i++)
        CHECK_MSG(strs[i].len == k_str_lens[i] && memcmp(strs[i].ptr, k_strs[i], k_str_lens[i]) == 0, "a.str[%zu]",
                  i);
      fg_free(strs);
    }
    akv = NULL;
    strs = NULL;
    CHECK_OK(fg_gguf_get_arr(&g, "a.cstr", FG_GGUF_STRING, &akv, &err));
    if (akv) CHECK_OK(fg_gguf_str_array(akv, &strs, &err));
    if (strs) {
      CHECK_EQ_INT(akv->arr_n, 3);
      CHECK(fg_gguf_str_eq(strs[0], "<pad>") && fg_gguf_str_eq(strs[1], "") && fg_gguf_str_eq(strs[2], "h\xc3\xa4llo"));
      fg_free(strs);
    }

    for (size_t i = 0; i < c.n_t; i++) {
      const fg_gguf_tensor *t = fg_gguf_find_tensor(&g, c.t[i].name);
      CHECK_MSG(t != NULL, "tensor %s missing", c.t[i].name);
      if (!t) continue;
      CHECK(t == &g.tensors[i]); /* file order = order added */
      CHECK_EQ_INT(t->type, c.t[i].type);
      CHECK_EQ_INT(t->n_dims, c.t[i].n_dims);
      for (int d = 0; d < 4; d++) CHECK_EQ_INT(t->ne[d], c.t[i].ne[d]);
      CHECK_EQ_INT(t->nbytes, c.t[i].nbytes);
      CHECK_EQ_INT(t->offset % align, 0);
      CHECK_EQ_INT((size_t)(t->data - g.base) % align, 0);
      CHECK_MSG(memcmp(t->data, c.t[i].data, c.t[i].nbytes) == 0, "tensor %s data differs", c.t[i].name);
      if (i > 0) CHECK(t->offset >= g.tensors[i - 1].offset + g.tensors[i - 1].nbytes);
    }
    /* padding between tensors is zero */
    for (size_t i = 1; i < c.n_t; i++)
      for (uint64_t o = g.tensors[i - 1].offset + g.tensors[i - 1].nbytes; o < g.tensors[i].offset; o++)
        CHECK(g.base[g.data_offset + o] == 0);
    CHECK(fg_gguf_find_tensor(&g, "t.f3") == NULL);
    CHECK(fg_gguf_find_kv(&g, "s.u3") == NULL);

    /* allocation failures: each one is NOMEM, nothing leaks, out is zeroed */
    for (uint64_t k = 1;; k++) {
      fg_gguf g2;
      fg_alloc_fail_after(k);
      fg_status s2 = fg_gguf_parse(copy, n, &g2, &err);
      fg_alloc_fail_after(0);
      if (s2 == FG_OK) {
        fg_gguf_clear(&g2);
        CHECK(k > 1);
        break;
      }
      CHECK_MSG(s2 == FG_ERR_NOMEM && is_zeroed(&g2), "alloc failure %llu gave %d", (unsigned long long)k, (int)s2);
      if (k > 100) break;
    }
    fg_gguf_clear(&g);
    CHECK(is_zeroed(&g));
    fg_gguf_clear(&g); /* idempotent */
    fg_gguf_clear(NULL);
  }
  free(copy);
  free(file);
  for (size_t i = 0; i < c.n_t; i++) free(c.t[i].data);
}

// ----------------------------------------------------------------------------------------------------
// Getters on mismatched types

static void test_getters(void) {
  bb b = {0};
  bb_hdr(&b, 2, 0, 15);
  bb_str(&b, "s.i8");
  bb_u32(&b, FG_GGUF_INT8);
  bb_u8(&b, (uint8_t)-3);
  bb_str(&b, "s.i16");
  bb_u32(&b, FG_GGUF_INT16);
  bb_u16(&b, (uint16_t)-300);
  bb_str(&b, "s.u16");
  bb_u32(&b, FG_GGUF_UINT16);
  bb_u16(&b, 65000);
  bb_str(&b, "s.i64");
  bb_u32(&b, FG_GGUF_INT64);
  bb_u64(&b, (uint64_t)-(int64_t)(1ll << 40));
  bb_str(&b, "s.i64pos");
  bb_u32(&b, FG_GGUF_INT64);
  bb_u64(&b, 4000000000ull);
  bb_str(&b, "s.f32");
  bb_u32(&b, FG_GGUF_FLOAT32);
  bb_f32(&b, -0.75f);
  bb_str(&b, "s.bool2");
  bb_u32(&b, FG_GGUF_BOOL);
  bb_u8(&b, 0);
  bb_kv_u32(&b, "k.u32", 17);
  bb_str(&b, "k.neg");
  bb_u32(&b, FG_GGUF_INT32);
  bb_u32(&b, (uint32_t)-5);
  bb_str(&b, "k.big");
  bb_u32(&b, FG_GGUF_UINT64);
  bb_u64(&b, 1ull << 32);
  bb_str(&b, "k.u8");
  bb_u32(&b, FG_GGUF_UINT8);
  bb_u8(&b, 9);
  bb_kv_str(&b, "k.str", "hello");
  bb_str(&b, "k.f64big");
  bb_u32(&b, FG_GGUF_FLOAT64);
  bb_f64(&b, 1e300);
  bb_str(&b, "k.f64");
  bb_u32(&b, FG_GGUF_FLOAT64);
  bb_f64(&b, 0.25);
  bb_str(&b, "k.arr");
  bb_u32(&b, FG_GGUF_ARRAY);
  bb_u32(&b, FG_GGUF_FLOAT32);
  bb_u64(&b, 1);
  bb_f32(&b, 2.0f);

  fg_gguf g;
  fg_error err = {FG_OK, ""};
  uint8_t *copy;
  fg_status st = parse_copy(b.p, b.n, &g, &err, &copy);
  CHECK_MSG(st == FG_OK, "getters file: %s", err.msg);
  if (st == FG_OK) {
    CHECK_EQ_INT(g.version, 2);
    CHECK_EQ_INT(g.alignment, 32);
    uint32_t u = 0;
    float f = 0;
    bool bo = false;
    fg_gguf_str s;
    const fg_gguf_kv *kv;
    CHECK_OK(fg_gguf_get_u32(&g, "k.u8", &u, &err));
    CHECK_EQ_INT(u, 9);
    const fg_gguf_kv *sk = fg_gguf_find_kv(&g, "s.i8");
    CHECK(sk && sk->type == FG_GGUF_INT8 && sk->v.i64 == -3);
    sk = fg_gguf_find_kv(&g, "s.i16");
    CHECK(sk && sk->type == FG_GGUF_INT16 && sk->v.i64 == -300);
    sk = fg_gguf_find_kv(&g, "s.i64");
    CHECK(sk && sk->type == FG_GGUF_INT64 && sk->v.i64 == -(int64_t)(1ll << 40));
    sk = fg_gguf_find_kv(&g, "s.f32");
    CHECK(sk && sk->type == FG_GGUF_FLOAT32 && sk->v.f64 == -0.75);
    CHECK_EQ_INT(fg_gguf_get_u32(&g, "s.i8", &u, &err), FG_ERR_FORMAT);
    CHECK_EQ_INT(fg_gguf_get_u32(&g, "s.i16", &u, &err), FG_ERR_FORMAT);
    CHECK_EQ_INT(fg_gguf_get_u32(&g, "s.i64", &u, &err), FG_ERR_FORMAT);
    CHECK_OK(fg_gguf_get_u32(&g, "s.u16", &u, &err));
    CHECK_EQ_INT(u, 65000);
    CHECK_OK(fg_gguf_get_u32(&g, "s.i64pos", &u, &err));
    CHECK_EQ_INT(u, 4000000000u);
    CHECK_OK(fg_gguf_get_f32(&g, "s.i8", &f, &err));
    CHECK(f == -3.0f);
    CHECK_OK(fg_gguf_get_f32(&g, "s.f32", &f, &err));
    CHECK(f == -0.75f);
    CHECK_EQ_INT(fg_gguf_get_f32(&g, "s.bool2", &f, &err), FG_ERR_FORMAT);
    bo = true;
    CHECK_OK(fg_gguf_get_bool(&g, "s.bool2", &bo, &err));
    CHECK(bo == false);
    CHECK_EQ_INT(fg_gguf_get_u32(&g, "k.neg", &u, &err), FG_ERR_FORMAT);
    CHECK(strstr(err.msg, "k.neg") != NULL);
    CHECK_EQ_INT(fg_gguf_get_u32(&g, "k.big", &u, &err), FG_ERR_FORMAT);
    CHECK(strstr(err.msg, "k.big") != NULL);
    CHECK_EQ_INT(fg_gguf_get_u32(&g, "k.str", &u, &err), FG_ERR_FORMAT);
    CHECK(strstr(err.msg, "k.str") != NULL && strstr(err.msg, "string") != NULL);
    CHECK_EQ_INT(fg_gguf_get_u32(&g, "k.missing", &u, &err), FG_ERR_FORMAT);
    CHECK(strstr(err.msg, "k.missing") != NULL);
    u = 77;
    CHECK_OK(fg_gguf_get_u32_or(&g, "k.missing", 5, &u, &err));
    CHECK_EQ_INT(u, 5);
    CHECK_EQ_INT(fg_gguf_get_u32_or(&g, "k.str", 5, &u, &err), FG_ERR_FORMAT);
    CHECK_OK(fg_gguf_get_u32_or(&g, "k.u32", 5, &u, &err));
    CHECK_EQ_INT(u, 17);
    CHECK_OK(fg_gguf_get_f32(&g, "k.f64", &f, &err));
    CHECK(f == 0.25f);
    CHECK_OK(fg_gguf_get_f32(&g, "k.neg", &f, &err));
    CHECK(f == -5.0f);
    CHECK_EQ_INT(fg_gguf_get_f32(&g, "k.f64big", &f, &err), FG_ERR_FORMAT);
    CHECK(strstr(err.msg, "k.f64big") != NULL);
    CHECK_EQ_INT(fg_gguf_get_f32(&g, "k.arr", &f, &err), FG_ERR_FORMAT);
    CHECK(strstr(err.msg, "k.arr") != NULL);
    CHECK_OK(fg_gguf_get_f32_or(&g, "k.none", 1.5f, &f, &err));
    CHECK(f == 1.5f);
    CHECK_EQ_INT(fg_gguf_get_f32_or(&g, "k.str", 1.5f, &f, &err), FG_ERR_FORMAT);
    CHECK_EQ_INT(fg_gguf_get_bool(&g, "k.u8", &bo, &err), FG_ERR_FORMAT);
    CHECK_EQ_INT(fg_gguf_get_str(&g, "k.u32", &s, &err), FG_ERR_FORMAT);
    CHECK_OK(fg_gguf_get_str(&g, "k.str", &s, &err));
    CHECK(fg_gguf_str_eq(s, "hello"));
    CHECK_EQ_INT(fg_gguf_get_arr(&g, "k.arr", FG_GGUF_INT32, &kv, &err), FG_ERR_FORMAT);
    CHECK(strstr(err.msg, "k.arr") != NULL);
    CHECK_EQ_INT(fg_gguf_get_arr(&g, "k.u32", FG_GGUF_UINT32, &kv, &err), FG_ERR_FORMAT);
    kv = NULL;
    CHECK_OK(fg_gguf_get_arr(&g, "k.arr", FG_GGUF_FLOAT32, &kv, &err));
    fg_gguf_str *strs = NULL;
    if (kv) CHECK_EQ_INT(fg_gguf_str_array(kv, &strs, &err), FG_ERR_FORMAT);
    CHECK(strs == NULL);
    fg_gguf_clear(&g);
  }
  free(copy);
  bb_free(&b);
}

// ----------------------------------------------------------------------------------------------------
// Handcrafted corruptions

static void test_truncation(void) {
  bb b = {0};
  build_small_valid(&b);
  fg_gguf g;
  fg_error err = {FG_OK, ""};
  uint8_t *copy;
  fg_status st = parse_copy(b.p, b.n, &g, &err, &copy);
  CHECK_MSG(st == FG_OK, "small valid file: %s", err.msg);
  if (st == FG_OK) {
    const fg_gguf_tensor *t = fg_gguf_find_tensor(&g, "b.weight");
    CHECK(t && t->nbytes == 34 && t->data[0] == 0xA0 && t->data + 34 == g.base + g.size);
    fg_gguf_clear(&g);
  }
  free(copy);
  int bad = 0;
  for (size_t n = 0; n < b.n; n++) {
    st = parse_copy(b.p, n, &g, &err, &copy);
    if (st != FG_ERR_FORMAT || !is_zeroed(&g)) {
      if (bad++ < 5) fprintf(stderr, "truncated at %zu: status %d, %s\n", n, (int)st, err.msg);
      if (st == FG_OK) fg_gguf_clear(&g);
    }
    free(copy);
  }
  CHECK_MSG(bad == 0, "%d truncations were not FORMAT", bad);
  /* data = NULL with size 0 is a truncated file too */
  CHECK_EQ_INT(fg_gguf_parse(NULL, 0, &g, &err), FG_ERR_FORMAT);
  bb_free(&b);
}

static void test_corruptions(void) {
  bb b = {0};
  const uint64_t ne32[1] = {32};

  /* header */
  bb_u32(&b, 0x46554748u);
  bb_u32(&b, 3);
  bb_u64(&b, 0);
  bb_u64(&b, 0);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "magic", NULL);
  bb_free(&b);
  bb_hdr(&b, 1, 0, 0);
  EXPECT_FAIL(&b, FG_ERR_UNSUPPORTED, "version 1", NULL);
  bb_free(&b);
  bb_hdr(&b, 4, 0, 0);
  EXPECT_FAIL(&b, FG_ERR_UNSUPPORTED, "version 4", NULL);
  bb_free(&b);
  bb_hdr(&b, 0x03000000u, 0, 0);
  EXPECT_FAIL(&b, FG_ERR_UNSUPPORTED, "big-endian", NULL);
  bb_free(&b);

  /* huge counts are refused before any allocation */
  for (int which = 0; which < 2; which++) {
    bb_hdr(&b, 3, which ? 0 : 1ull << 63, which ? 1ull << 40 : 0);
    bb_zeros(&b, 200);
    fg_alloc_fail_after(0);
    double t0 = fg_test_cpu_s();
    EXPECT_FAIL(&b, FG_ERR_FORMAT, which ? "n_kv" : "n_tensors", NULL);
    double dt = fg_test_cpu_s() - t0;
    uint64_t allocs = fg_alloc_fail_after(0);
    CHECK_EQ_INT(allocs, 0);
    CHECK_MSG(dt < 0.1, "huge count took %.3f s", dt);
    bb_free(&b);
  }

  /* strings */
  bb_hdr(&b, 3, 0, 1);
  bb_u64(&b, 1000); /* key length past EOF */
  bb_put(&b, "abcde", 5);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "kv #0", "1000");
  bb_free(&b);
  bb_hdr(&b, 3, 0, 1);
  bb_str(&b, "general.name");
  bb_u32(&b, FG_GGUF_STRING);
  bb_u64(&b, 21);
  bb_put(&b, "twenty bytes exactly", 20);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "general.name", "21");
  bb_free(&b);
  bb_hdr(&b, 3, 0, 1);
  bb_str(&b, "general.name");
  bb_u32(&b, FG_GGUF_STRING);
  bb_u64(&b, UINT64_MAX - 3); /* wraps if added to the offset */
  bb_put(&b, "0123456789abcdef", 16);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "general.name", "exceeds");
  bb_free(&b);
  bb_hdr(&b, 3, 0, 1);
  bb_str(&b, "tok.tokens");
  bb_u32(&b, FG_GGUF_ARRAY);
  bb_u32(&b, FG_GGUF_STRING);
  bb_u64(&b, 2);
  bb_str(&b, "ok");
  bb_u64(&b, UINT64_MAX);
  bb_zeros(&b, 8);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "tok.tokens", NULL);
  bb_free(&b);
  bb_hdr(&b, 3, 0, 1);
  bb_str(&b, "tok.scores");
  bb_u32(&b, FG_GGUF_ARRAY);
  bb_u32(&b, FG_GGUF_FLOAT32);
  bb_u64(&b, 1ull << 62); /* n * 4 overflows */
  bb_zeros(&b, 16);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "tok.scores", NULL);
  bb_free(&b);
  bb_hdr(&b, 3, 0, 1);
  bb_str(&b, "tok.tokens");
  bb_u32(&b, FG_GGUF_ARRAY);
  bb_u32(&b, FG_GGUF_STRING);
  bb_u64(&b, 1ull << 61); /* many strings: refused by the count, not by walking them */
  bb_zeros(&b, 64);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "tok.tokens", NULL);
  bb_free(&b);

  /* kv types */
  bb_hdr(&b, 3, 0, 1);
  bb_str(&b, "x.nested");
  bb_u32(&b, FG_GGUF_ARRAY);
  bb_u32(&b, FG_GGUF_ARRAY);
  bb_u64(&b, 1);
  bb_u32(&b, FG_GGUF_UINT8);
  bb_u64(&b, 1);
  bb_u8(&b, 0);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "x.nested", "nested");
  bb_free(&b);
  bb_hdr(&b, 3, 0, 1);
  bb_str(&b, "x.weird");
  bb_u32(&b, 13);
  bb_u64(&b, 0);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "x.weird", "13");
  bb_free(&b);
  bb_hdr(&b, 3, 0, 1);
  bb_str(&b, "x.weird");
  bb_u32(&b, FG_GGUF_ARRAY);
  bb_u32(&b, 0x7fffffffu);
  bb_u64(&b, 0);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "x.weird", "2147483647");
  bb_free(&b);
  bb_hdr(&b, 3, 0, 3);
  bb_kv_u32(&b, "a.b", 1);
  bb_kv_u32(&b, "a.c", 1);
  bb_kv_str(&b, "a.b", "again");
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "'a.b'", "duplicate");
  bb_free(&b);
  bb_hdr(&b, 3, 0, 1);
  bb_kv_u32(&b, "", 1);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "empty key", NULL);
  bb_free(&b);

  /* alignment */
  static const uint32_t bad_align[3] = {0, 3, 48};
  for (int i = 0; i < 3; i++) {
    bb_hdr(&b, 3, 1, 1);
    bb_kv_u32(&b, "general.alignment", bad_align[i]);
    bb_tensor(&b, "w", 1, ne32, FG_TYPE_F32, 0);
    bb_pad(&b, 32);
    bb_zeros(&b, 128);
    EXPECT_FAIL(&b, FG_ERR_FORMAT, "general.alignment", "power of two");
    bb_free(&b);
  }
  bb_hdr(&b, 3, 0, 1);
  bb_kv_str(&b, "general.alignment", "32");
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "general.alignment", NULL);
  bb_free(&b);
  /* alignment 64 honoured: offset 32 is misaligned under it */
  bb_hdr(&b, 3, 1, 1);
  bb_kv_u32(&b, "general.alignment", 64);
  bb_tensor(&b, "blk.0.ffn_up.weight", 1, ne32, FG_TYPE_F32, 32);
  bb_pad(&b, 64);
  bb_zeros(&b, 256);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "blk.0.ffn_up.weight", "alignment 64");
  bb_free(&b);

  /* tensor infos */
  struct {
    uint32_t n_dims;
    uint64_t ne[4];
    uint32_t type;
    uint64_t off;
    fg_status code;
    const char *need;
  } tc[] = {
    {0, {32}, FG_TYPE_F32, 0, FG_ERR_FORMAT, "n_dims 0"},
    {5, {32, 1, 1, 1}, FG_TYPE_F32, 0, FG_ERR_FORMAT, "n_dims 5"},
    {2, {32, 0}, FG_TYPE_F32, 0, FG_ERR_FORMAT, "ne[1] = 0"},
    {1, {1ull << 63}, FG_TYPE_F32, 0, FG_ERR_FORMAT, "ne[0]"},
    {3, {1ull << 32, 1ull << 32, 4}, FG_TYPE_F32, 0, FG_ERR_FORMAT, "overflows"},
    {2, {1ull << 62, 1}, FG_TYPE_F32, 0, FG_ERR_FORMAT, "overflows"}, /* 2^62 elements fit, 2^64 bytes don't */
    {1, {33}, FG_TYPE_Q8_0, 0, FG_ERR_FORMAT, "multiple"},
    {1, {48}, FG_TYPE_Q4_0, 0, FG_ERR_FORMAT, "block size 32"},
    {1, {32}, 99, 0, FG_ERR_UNSUPPORTED, "99"},
    {1, {32}, 4, 0, FG_ERR_UNSUPPORTED, "type id 4"}, /* removed Q4_2 */
    {1, {32}, 31, 0, FG_ERR_UNSUPPORTED, "type id 31"},
    {2, {640, 1}, FG_TYPE_Q4_K, 0, FG_ERR_FORMAT, "not a multiple of the q4_k block size 256"},
    {2, {640, 1}, FG_TYPE_IQ4_XS, 0, FG_ERR_FORMAT, "iq4_xs block size 256"},
    {1, {48}, FG_TYPE_Q5_0, 0, FG_ERR_FORMAT, "q5_0 block size 32"},
    {2, {256, 1}, FG_TYPE_Q6_K, 0, FG_ERR_FORMAT, "past end of file"},  /* 210 bytes of 128: truncated block */
    {2, {32, 7}, FG_TYPE_Q4_1, 0, FG_ERR_FORMAT, "past end of file"},   /* 140 bytes of 128 */
    {1, {32}, FG_TYPE_F32, 16, FG_ERR_FORMAT, "offset 16"},
    {1, {32}, FG_TYPE_F32, 64, FG_ERR_FORMAT, "past end of file"},
    {2, {32, 2}, FG_TYPE_F32, 0, FG_ERR_FORMAT, "past end of file"},
    {1, {32}, FG_TYPE_F32, UINT64_MAX - 31, FG_ERR_FORMAT, "overflows"},
  };
  for (size_t i = 0; i < sizeof tc / sizeof tc[0]; i++) {
    bb_hdr(&b, 3, 1, 0);
    bb_tensor(&b, "blk.3.attn_q.weight", tc[i].n_dims, tc[i].ne, tc[i].type, tc[i].off);
    bb_pad(&b, 32);
    bb_zeros(&b, 128); /* room for one f32 [32] tensor at offset 0 */
    fg_error err = {FG_OK, ""};
    fg_gguf g;
    uint8_t *copy;
    fg_status st = parse_copy(b.p, b.n, &g, &err, &copy);
    CHECK_MSG(st == tc[i].code && strstr(err.msg, "blk.3.attn_q.weight") && strstr(err.msg, tc[i].need),
              "tensor case %zu: status %d, msg '%s', expected %d and '%s'", i, (int)st, err.msg, (int)tc[i].code,
              tc[i].need);
    if (getenv("FG_TEST_VERBOSE")) printf("  tensor case %zu: %s: %s\n", i, fg_status_str(st), err.msg);
    if (st == FG_OK) fg_gguf_clear(&g);
    free(copy);
    bb_free(&b);
  }
  /* the exact past-EOF message */
  {
    bb_hdr(&b, 3, 1, 0);
    const uint64_t ne[1] = {64};
    bb_tensor(&b, "blk.3.attn_q.weight", 1, ne, FG_TYPE_F32, 0);
    bb_pad(&b, 32);
    size_t data_off = b.n;
    bb_zeros(&b, 100);
    char want[160];
    snprintf(want, sizeof want, "tensor 'blk.3.attn_q.weight': data ends at byte %zu past end of file (%zu bytes)",
             data_off + 256, b.n);
    EXPECT_FAIL(&b, FG_ERR_FORMAT, want, NULL);
    bb_free(&b);
  }

  /* a known GGML type the project does not run still parses, with its size */
  bb_hdr(&b, 3, 1, 0);
  const uint64_t ne256[2] = {256, 2};
  bb_tensor(&b, "q6", 2, ne256, 14 /* q6_K */, 0);
  bb_pad(&b, 32);
  bb_zeros(&b, 420);
  {
    fg_gguf g;
    fg_error err = {FG_OK, ""};
    uint8_t *copy;
    fg_status st = parse_copy(b.p, b.n, &g, &err, &copy);
    CHECK_MSG(st == FG_OK, "q6_K tensor: %s", err.msg);
    if (st == FG_OK) {
      CHECK_EQ_INT(g.tensors[0].nbytes, 420);
      fg_gguf_clear(&g);
    }
    free(copy);
  }
  bb_free(&b);

  /* duplicates and overlaps */
  bb_hdr(&b, 3, 2, 0);
  bb_tensor(&b, "token_embd.weight", 1, ne32, FG_TYPE_F32, 0);
  bb_tensor(&b, "token_embd.weight", 1, ne32, FG_TYPE_F32, 128);
  bb_pad(&b, 32);
  bb_zeros(&b, 256);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "token_embd.weight", "duplicate");
  bb_free(&b);
  bb_hdr(&b, 3, 3, 0);
  bb_tensor(&b, "c", 1, ne32, FG_TYPE_F32, 256);
  bb_tensor(&b, "a", 1, ne32, FG_TYPE_F32, 0);
  bb_tensor(&b, "b", 1, ne32, FG_TYPE_F32, 96); /* a covers 0..128 */
  bb_pad(&b, 32);
  bb_zeros(&b, 384);
  EXPECT_FAIL(&b, FG_ERR_FORMAT, "'b'", "overlaps tensor 'a'");
  bb_free(&b);
  /* the same tensors back to back are fine, in any order in the header */
  bb_hdr(&b, 3, 3, 0);
  bb_tensor(&b, "c", 1, ne32, FG_TYPE_F32, 256);
  bb_tensor(&b, "a", 1, ne32, FG_TYPE_F32, 0);
  bb_tensor(&b, "b", 1, ne32, FG_TYPE_F32, 128);
  bb_pad(&b, 32);
  bb_zeros(&b, 384);
  {
    fg_gguf g;
    fg_error err = {FG_OK, ""};
    uint8_t *copy;
    fg_status st = parse_copy(b.p, b.n, &g, &err, &copy);
    CHECK_MSG(st == FG_OK, "back-to-back tensors: %s", err.msg);
    if (st == FG_OK) fg_gguf_clear(&g);
    free(copy);
  }
  bb_free(&b);
  /* a file without tensors need not be padded */
  bb_hdr(&b, 3, 0, 1);
  bb_kv_u32(&b, "k", 1);
  {
    fg_gguf g;
    fg_error err = {FG_OK, ""};
    uint8_t *copy;
    fg_status st = parse_copy(b.p, b.n, &g, &err, &copy);
    CHECK_MSG(st == FG_OK, "no tensors: %s", err.msg);
    if (st == FG_OK) fg_gguf_clear(&g);
    free(copy);
  }
  bb_free(&b);
  /* many duplicate-free keys parse quickly (duplicate check is not quadratic) */
  {
    const size_t nk = 50000;
    bb_hdr(&b, 3, 0, nk);
    char key[32];
    for (size_t i = 0; i < nk; i++) {
      snprintf(key, sizeof key, "k.%zu", i);
      bb_kv_u32(&b, key, (uint32_t)i);
    }
    fg_gguf g;
    fg_error err = {FG_OK, ""};
    uint8_t *copy;
    double t0 = fg_test_cpu_s();
    fg_status st = parse_copy(b.p, b.n, &g, &err, &copy);
    double dt = fg_test_cpu_s() - t0;
    CHECK_MSG(st == FG_OK, "50k keys: %s", err.msg);
    CHECK_MSG(dt < 1.0, "50k keys took %.3f s", dt);
    if (st == FG_OK) fg_gguf_clear(&g);
    free(copy);
    bb_free(&b);
  }
}

// ----------------------------------------------------------------------------------------------------
// Writer misuse

static void test_writer_errors(void) {
  fg_error err = {FG_OK, ""};
  char *buf = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&buf, &size);
  CHECK(f != NULL);
  if (!f) return;

  fg_gguf_writer *w = fg_gguf_writer_create();
  const uint64_t ne[2] = {33, 2};
  CHECK_EQ_INT(fg_gguf_writer_add_tensor(w, "bad.q8", FG_TYPE_Q8_0, 2, ne), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_gguf_writer_begin(w, f, &err), FG_ERR_INVALID_ARG); /* the failure sticks */
  CHECK(strstr(err.msg, "bad.q8") != NULL);
  fg_gguf_writer_free(w);

  w = fg_gguf_writer_create();
  CHECK_EQ_INT(fg_gguf_writer_set_u32(w, "general.alignment", 24), FG_ERR_INVALID_ARG);
  fg_gguf_writer_free(w);
  w = fg_gguf_writer_create();
  CHECK_EQ_INT(fg_gguf_writer_add_tensor(w, "x", 99, 1, ne), FG_ERR_UNSUPPORTED);
  fg_gguf_writer_free(w);
  w = fg_gguf_writer_create();
  const uint64_t ne32[1] = {32};
  CHECK_OK(fg_gguf_writer_add_tensor(w, "x", FG_TYPE_F32, 1, ne32));
  CHECK_EQ_INT(fg_gguf_writer_add_tensor(w, "x", FG_TYPE_F32, 1, ne32), FG_ERR_INVALID_ARG);
  fg_gguf_writer_free(w);

  w = fg_gguf_writer_create();
  CHECK_OK(fg_gguf_writer_add_tensor(w, "x", FG_TYPE_F32, 1, ne32));
  CHECK_OK(fg_gguf_writer_add_tensor(w, "y", FG_TYPE_Q8_0, 1, ne32));
  float data[32] = {0};
  CHECK_EQ_INT(fg_gguf_writer_tensor_data(w, f, data, sizeof data, &err), FG_ERR_INVALID_ARG); /* before begin */
  CHECK_OK(fg_gguf_writer_begin(w, f, &err));
  CHECK_EQ_INT(fg_gguf_writer_set_u32(w, "late", 1), FG_ERR_INVALID_ARG);
  CHECK_EQ_INT(fg_gguf_writer_tensor_data(w, f, data, 64, &err), FG_ERR_INVALID_ARG);
  CHECK(strstr(err.msg, "'x'") != NULL && strstr(err.msg, "128") != NULL);
  CHECK_OK(fg_gguf_writer_tensor_data(w, f, data, sizeof data, &err));
  CHECK_EQ_INT(fg_gguf_writer_end(w, f, &err), FG_ERR_INVALID_ARG); /* y not written */
  CHECK(strstr(err.msg, "'y'") != NULL);
  CHECK_OK(fg_gguf_writer_tensor_data(w, f, data, 34, &err));
  CHECK_EQ_INT(fg_gguf_writer_tensor_data(w, f, data, 34, &err), FG_ERR_INVALID_ARG); /* one too many */
  CHECK_OK(fg_gguf_writer_end(w, f, &err));
  fg_gguf_writer_free(w);
  fg_gguf_writer_free(NULL);
  fclose(f);

  /* what was written parses */
  fg_gguf g;
  uint8_t *copy;
  fg_status st = parse_copy((const uint8_t *)buf, size, &g, &err, &copy);
  CHECK_MSG(st == FG_OK, "%s", err.msg);
  if (st == FG_OK) {
    CHECK_EQ_INT(g.tensors[1].offset, 128);
    CHECK_EQ_INT(g.size, g.data_offset + 128 + 34);
    fg_gguf_clear(&g);
  }
  free(copy);
  free(buf);
}

// ----------------------------------------------------------------------------------------------------
// File mapping

static void test_mapfile(void) {
  char path[4096], empty[4096], dir[4096];
  snprintf(path, sizeof path, "%s", fg_test_model_path("test_gguf_small.gguf"));
  snprintf(empty, sizeof empty, "%s", fg_test_model_path("test_gguf_empty.gguf"));
  snprintf(dir, sizeof dir, "%s", FG_TEST_MODELS);

  fg_mapfile m;
  fg_error err = {FG_OK, ""};
  const char *missing = "/nonexistent-dir/fgemma/missing.gguf";
  CHECK_EQ_INT(fg_mapfile_open(missing, true, &m, &err), FG_ERR_IO);
  CHECK(strstr(err.msg, missing) != NULL && strstr(err.msg, strerror(ENOENT)) != NULL);
  CHECK(m.data == NULL && m.size == 0);
  CHECK_EQ_INT(fg_mapfile_open(missing, false, &m, &err), FG_ERR_IO);
  CHECK_EQ_INT(fg_mapfile_open(dir, true, &m, &err), FG_ERR_IO);

  CHECK(write_file(empty, "", 0));
  CHECK_EQ_INT(fg_mapfile_open(empty, true, &m, &err), FG_ERR_FORMAT);
  CHECK(strstr(err.msg, "empty") != NULL);
  CHECK_EQ_INT(fg_mapfile_open(empty, false, &m, &err), FG_ERR_FORMAT);
  unlink(empty);

  bb b = {0};
  build_small_valid(&b);
  CHECK(write_file(path, b.p, b.n));
  fg_mapfile a, h;
  CHECK_OK(fg_mapfile_open(path, true, &a, &err));
  CHECK_OK(fg_mapfile_open(path, false, &h, &err));
  CHECK(a.mapped && !h.mapped);
  CHECK_EQ_INT(a.size, b.n);
  CHECK_EQ_INT(h.size, b.n);
  CHECK(a.data && h.data && memcmp(a.data, b.p, b.n) == 0 && memcmp(h.data, b.p, b.n) == 0);
  fg_gguf g;
  CHECK_OK(fg_gguf_parse(a.data, a.size, &g, &err));
  const fg_gguf_tensor *t = fg_gguf_find_tensor(&g, "a.weight");
  CHECK(t && t->data >= a.data && t->data + t->nbytes <= a.data + a.size);
  fg_gguf_clear(&g);
  fg_mapfile_close(&a);
  fg_mapfile_close(&h);
  CHECK(a.data == NULL && h.data == NULL);
  fg_mapfile_close(&a); /* idempotent */
  fg_mapfile_close(NULL);
  unlink(path);
  bb_free(&b);

  /* no-mmap read fails cleanly when the allocation fails */
  CHECK(write_file(path, "GGUF", 4));
  fg_alloc_fail_after(1);
  fg_status st = fg_mapfile_open(path, false, &m, &err);
  fg_alloc_fail_after(0);
  CHECK_EQ_INT(st, FG_ERR_NOMEM);
  CHECK(m.data == NULL);
  unlink(path);
}

// ----------------------------------------------------------------------------------------------------
// Fuzzing seeds (only with FG_GGUF_CORPUS_DIR set)

static void write_seed(const char *dir, const char *name, const void *p, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (n > 20000 || !write_file(path, p, n)) fprintf(stderr, "seed %s not written\n", path);
}

static void write_corpus(const char *dir) {
  bb b = {0};
  build_small_valid(&b);
  write_seed(dir, "small_valid.gguf", b.p, b.n);
  bb_free(&b);

  rt_case c;
  memset(&c, 0, sizeof c);
  c.alignment = 64;
  const rt_tensor specs[3] = {
    {"t.q8_0", FG_TYPE_Q8_0, 2, {32, 2, 1, 1}, NULL, 0},
    {"t.q4_0", FG_TYPE_Q4_0, 3, {32, 1, 2, 1}, NULL, 0},
    {"t.bf16", FG_TYPE_BF16, 1, {3, 1, 1, 1}, NULL, 0},
  };
  const size_t sizes[3] = {68, 36, 6};
  c.n_t = 3;
  for (size_t i = 0; i < 3; i++) {
    c.t[i] = specs[i];
    c.t[i].nbytes = sizes[i];
    c.t[i].data = calloc(1, sizes[i]);
  }
  uint8_t *file;
  size_t n;
  fg_error err = {FG_OK, ""};
  if (write_to_memory(fill_roundtrip, &c, &file, &n, &err) == FG_OK) write_seed(dir, "roundtrip.gguf", file, n);
  free(file);
  for (size_t i = 0; i < 3; i++) free(c.t[i].data);

  if (write_to_memory(fill_tiny, NULL, &file, &n, &err) == FG_OK) write_seed(dir, "tiny.gguf", file, n);
  free(file);

  const uint64_t ne32[1] = {32};
  bb_hdr(&b, 3, 3, 0);
  bb_tensor(&b, "c", 1, ne32, FG_TYPE_F32, 256);
  bb_tensor(&b, "a", 1, ne32, FG_TYPE_F32, 0);
  bb_tensor(&b, "b", 1, ne32, FG_TYPE_F32, 96);
  bb_pad(&b, 32);
  bb_zeros(&b, 384);
  write_seed(dir, "overlap.gguf", b.p, b.n);
  bb_free(&b);
  printf("seeds written to %s\n", dir);
}

int main(void) {
  test_writer_exact_bytes();
  run_roundtrip(0);
  run_roundtrip(64);
  run_roundtrip(1);
  test_getters();
  test_truncation();
  test_corruptions();
  test_writer_errors();
  test_mapfile();
  const char *corpus = getenv("FG_GGUF_CORPUS_DIR");
  if (corpus && corpus[0]) write_corpus(corpus);
  return fg_test_finish("test_gguf");
}
