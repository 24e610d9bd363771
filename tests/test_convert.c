/* test_convert.c — fg_convert (HF checkpoint or GGUF -> GGUF) and its parts, against independent
 * expectations:
 *   1. the safetensors header parser on hand-made headers (every error it promises, with its words);
 *   2. conversion errors on damaged copies of a tiny checkpoint: each gets its status, a message naming
 *      the file/tensor/key, and leaves no output and no temporary file; cancelling; every allocation
 *      failing once;
 *   3. equality with the generator: a checkpoint written by gen-model --format hf, converted to each of
 *      the five types, holds the bytes `fgemma gen-model --type T` writes for the same seed (norm
 *      weights within one ulp: the checkpoint stores w - 1); a GGUF converted to T equals gen-model's T
 *      file tensor for tensor; 4.x and 5.x configs give the same file; FG_CONVERT_FIT_SEARCHED gives
 *      a pure Q4_0 (and a Q4_0 head) the searched fit of every row instead of those bytes;
 *   4. the HF oracle: for every case of tests/data/hf_goldens.json (recorded with transformers by
 *      tools/hf/record_goldens.py) the checkpoint is regenerated, its SHA-256 checked against what HF
 *      saw, converted to F32, and fgemma's logits (session path and reference path) must match HF's
 *      within 1e-4 relative L-inf at every recorded position, with the same 16 greedy ids; the
 *      converted tokenizer must equal the HF tokenizer on tests/data/tokenizer_corpus.txt.
 * `test_convert goldens` runs part 4 only. FG_CONVERT_GOLDENS=tiny limits part 4 to the tiny cases (the
 * ARM trees set it: under qemu the real-vocabulary cases take minutes; tests/oracle_convert.cmake). */
#define FG_EXPERIMENTAL
#include "fgemma.h"
#include "convert/safetensors.h"
#include "gguf/gguf.h"
#include "tensor/dtype.h"
#include "tensor/quant_search.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define GOLDEN_TOL 1e-4

static char g_dir[1024]; /* scratch directory of this run */

// ----------------------------------------------------------------------------------------------------
// Files


static bool copy_dir(const char *from, const char *to) {
  if (mkdir(to, 0777) != 0) return false;
  DIR *d = opendir(from);
  bool ok = d != NULL;
  for (struct dirent *e; ok && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char a[2400], b[2400];
    snprintf(a, sizeof a, "%s/%s", from, e->d_name);
    snprintf(b, sizeof b, "%s/%s", to, e->d_name);
    size_t n;
    char *data = fg_test_read_file(a, &n);
    ok = data && fg_test_write_file(b, data, n);
    free(data);
  }
  if (d) closedir(d);
  return ok;
}

/* Nothing named out_path or out_path.tmp* is left in its directory. */
static bool no_output_left(const char *out_path) {
  if (fg_test_exists(out_path)) return false;
  char dir[2048];
  snprintf(dir, sizeof dir, "%s", out_path);
  char *slash = strrchr(dir, '/');
  const char *base = slash ? slash + 1 : out_path;
  if (slash) *slash = '\0';
  DIR *d = opendir(slash ? dir : ".");
  bool clean = true;
  const size_t bl = strlen(base);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strncmp(e->d_name, base, bl) == 0) clean = false;
  if (d) closedir(d);
  return clean;
}

/* A path in the scratch directory; valid for the next 31 calls. */
static const char *scratch(const char *name) {
  static char buf[32][2048];
  static int k;
  k = (k + 1) % 32;
  snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
  return buf[k];
}

// ----------------------------------------------------------------------------------------------------
// Generated checkpoints and models

static fg_status gen_hf(const char *dir, const char *preset, uint32_t type, uint32_t cfg, uint32_t shards,
                        uint32_t head, uint64_t seed, const char *vocab) {
  fg_gen_params p;
  fg_gen_params_init(&p);
  p.preset = preset;
  p.type = type;
  p.format = FG_GEN_FORMAT_HF;
  p.hf_config = cfg;
  p.hf_shards = shards;
  p.head_type = head;
  p.seed = seed;
  p.vocab_json = vocab;
  fg_error err = {0};
  const fg_status st = fg_gen_model(&p, dir, &err);
  CHECK_MSG(st == FG_OK, "gen-model --format hf %s: %s", dir, err.msg);
  return st;
}

static fg_status gen_gguf(const char *path, const char *preset, uint32_t type, uint32_t head, uint64_t seed) {
  fg_gen_params p;
  fg_gen_params_init(&p);
  p.preset = preset;
  p.type = type;
  p.head_type = head;
  p.seed = seed;
  fg_error err = {0};
  const fg_status st = fg_gen_model(&p, path, &err);
  CHECK_MSG(st == FG_OK, "gen-model %s: %s", path, err.msg);
  return st;
}

static fg_status convert(const char *in, const char *out, uint32_t type, uint32_t head, fg_error *err) {
  fg_convert_params p;
  fg_convert_params_init(&p);
  p.type = type;
  p.head_type = head;
  return fg_convert(in, out, &p, err);
}

// ----------------------------------------------------------------------------------------------------
// A parsed GGUF kept with its bytes

typedef struct gfile {
  char *data;
  size_t size;
  fg_gguf g;
  bool ok;
} gfile;

static void gload(const char *path, gfile *f) {
  memset(f, 0, sizeof *f);
  f->data = fg_test_read_file(path, &f->size);
  CHECK_MSG(f->data != NULL, "cannot read %s", path);
  if (!f->data) return;
  fg_error err;
  f->ok = fg_gguf_parse((const uint8_t *)f->data, f->size, &f->g, &err) == FG_OK;
  CHECK_MSG(f->ok, "%s: %s", path, err.msg);
}

static void gfree(gfile *f) {
  if (f->ok) fg_gguf_clear(&f->g);
  free(f->data);
  memset(f, 0, sizeof *f);
}

static bool kv_equal(const fg_gguf_kv *a, const fg_gguf_kv *b) {
  if (a->type != b->type) return false;
  if (a->type == FG_GGUF_STRING) return a->str.len == b->str.len && memcmp(a->str.ptr, b->str.ptr, a->str.len) == 0;
  if (a->type != FG_GGUF_ARRAY) return a->v.u64 == b->v.u64;
  if (a->arr_type != b->arr_type || a->arr_n != b->arr_n) return false;
  if (a->arr_type == FG_GGUF_STRING) {
    fg_gguf_str *x = NULL, *y = NULL;
    bool same = fg_gguf_str_array(a, &x, NULL) == FG_OK && fg_gguf_str_array(b, &y, NULL) == FG_OK;
    for (uint64_t i = 0; same && i < a->arr_n; i++) same = x[i].len == y[i].len && memcmp(x[i].ptr, y[i].ptr, x[i].len) == 0;
    fg_free(x);
    fg_free(y);
    return same;
  }
  static const uint8_t esz[FG_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  return memcmp(a->arr_data, b->arr_data, (size_t)a->arr_n * esz[a->arr_type]) == 0;
}

static int ulp_diff(float a, float b) {
  int32_t x, y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  return abs(x - y);
}

/* The converted file `got` against the reference `want`: the same tensors in the same order, types and
 * shapes; matrices byte for byte; F32 vectors within max_ulp; the keys with prefix `keys` equal. */
static void compare_models(const char *what, const char *got_path, const char *want_path, const char *keys, int max_ulp) {
  gfile got, want;
  gload(got_path, &got);
  gload(want_path, &want);
  if (!got.ok || !want.ok) goto done;
  CHECK_MSG(got.g.n_tensors == want.g.n_tensors, "%s: %zu tensors, want %zu", what, got.g.n_tensors, want.g.n_tensors);
  int worst = 0, bytes_diff = 0;
  for (size_t i = 0; i < want.g.n_tensors && i < got.g.n_tensors; i++) {
    const fg_gguf_tensor *a = &got.g.tensors[i], *b = &want.g.tensors[i];
    const bool same_info = a->name.len == b->name.len && memcmp(a->name.ptr, b->name.ptr, a->name.len) == 0 &&
                           a->type == b->type && memcmp(a->ne, b->ne, sizeof a->ne) == 0;
    CHECK_MSG(same_info, "%s: tensor %zu is %.*s (%s), want %.*s (%s)", what, i, (int)a->name.len, a->name.ptr,
              fg_type_name(a->type), (int)b->name.len, b->name.ptr, fg_type_name(b->type));
    if (!same_info) continue;
    if (memcmp(a->data, b->data, (size_t)a->nbytes) == 0) continue;
    if (a->n_dims == 1 && a->type == FG_TYPE_F32) {
      for (uint64_t k = 0; k < a->ne[0]; k++) {
        float x, y;
        memcpy(&x, a->data + 4 * k, 4);
        memcpy(&y, b->data + 4 * k, 4);
        worst = FG_MAX(worst, ulp_diff(x, y));
      }
    } else {
      bytes_diff++;
      CHECK_MSG(0, "%s: tensor %.*s differs", what, (int)a->name.len, a->name.ptr);
    }
  }
  CHECK_MSG(worst <= max_ulp, "%s: a norm vector differs by %d ulp (at most %d allowed)", what, worst, max_ulp);
  size_t n_keys = 0;
  for (size_t i = 0; i < want.g.n_kv; i++) {
    const fg_gguf_kv *b = &want.g.kv[i];
    if (b->key.len < strlen(keys) || memcmp(b->key.ptr, keys, strlen(keys)) != 0) continue;
    char key[128];
    snprintf(key, sizeof key, "%.*s", (int)b->key.len, b->key.ptr);
    const fg_gguf_kv *a = fg_gguf_find_kv(&got.g, key);
    CHECK_MSG(a && kv_equal(a, b), "%s: key %s %s", what, key, a ? "differs" : "is missing");
    n_keys++;
  }
  CHECK_MSG(n_keys > 0, "%s: no keys starting with '%s' compared", what, keys);
  (void)bytes_diff;
done:
  gfree(&got);
  gfree(&want);
}

// ----------------------------------------------------------------------------------------------------
// 1. The safetensors header parser

/* A file: u64 length, the header (padded with spaces to a multiple of 8), data_bytes zero bytes. */
static uint8_t *st_file(const char *header, size_t data_bytes, size_t *n) {
  size_t hl = strlen(header);
  const size_t pad = (8 - hl % 8) % 8;
  *n = 8 + hl + pad + data_bytes;
  uint8_t *b = calloc(1, *n);
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)(hl + pad) >> (8 * i));
  memcpy(b + 8, header, hl);
  memset(b + 8 + hl, ' ', pad);
  return b;
}

static void st_expect(const char *what, const char *header, size_t data_bytes, fg_status want, const char *words) {
  size_t n;
  uint8_t *b = st_file(header, data_bytes, &n);
  fg_st_header h;
  fg_error err = {0};
  const fg_status st = fg_st_parse(b, n, n, &h, &err);
  CHECK_MSG(st == want, "%s: status %s, want %s (%s)", what, fg_status_str(st), fg_status_str(want), err.msg);
  if (want != FG_OK) {
    CHECK_MSG(strstr(err.msg, words) != NULL, "%s: message \"%s\" lacks \"%s\"", what, err.msg, words);
    CHECK_MSG(h.n == 0 && h.t == NULL, "%s: the header is not cleared on failure", what);
  }
  if (st == FG_OK) fg_st_clear(&h);
  free(b);
}

static void test_safetensors_parser(void) {
  /* a good header: offsets relative to the data, made absolute; __metadata__ skipped; escapes decoded */
  size_t n;
  uint8_t *b = st_file("{\"__metadata__\":{\"format\":\"pt\"},\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],"
                       "\"data_offsets\":[0,24]},\"a\\u0041\\n\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"
                       "\"s\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[32,40]}}", 40, &n);
  fg_st_header h;
  fg_error err;
  CHECK_OK(fg_st_parse(b, n, n, &h, &err));
  CHECK_EQ_INT(h.n, 3);
  if (h.n == 3) {
    const uint64_t data = n - 40;
    CHECK_EQ_INT(h.data_start, data);
    CHECK(strcmp(h.t[0].name, "w") == 0 && h.t[0].dtype == FG_ST_F32 && h.t[0].n_dims == 2 && h.t[0].shape[0] == 2 &&
          h.t[0].shape[1] == 3 && h.t[0].begin == data && h.t[0].end == data + 24);
    CHECK(strcmp(h.t[1].name, "aA\n") == 0 && h.t[1].dtype == FG_ST_BF16 && h.t[1].n_dims == 1);
    CHECK(h.t[2].n_dims == 0 && h.t[2].end - h.t[2].begin == 8);
    CHECK(fg_st_find(&h, "aA\n") == &h.t[1] && fg_st_find(&h, "x") == NULL);
    fg_st_clear(&h);
  }
  /* only the header needs to be in memory; the ranges are checked against the file size */
  const size_t head = n - 40;
  CHECK_OK(fg_st_parse(b, head, n, &h, &err));
  fg_st_clear(&h);
  CHECK(fg_st_parse(b, head, n - 1, &h, &err) == FG_ERR_FORMAT && strstr(err.msg, "past the end"));
  CHECK(fg_st_parse(b, head - 1, n, &h, &err) == FG_ERR_FORMAT);
  free(b);

  /* length field */
  uint8_t small[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
  CHECK(fg_st_parse(small, 7, 7, &h, &err) == FG_ERR_FORMAT && strstr(err.msg, "too short"));
  CHECK(fg_st_parse(small, 8, 8, &h, &err) == FG_ERR_FORMAT && strstr(err.msg, "outside"));
  small[7] = 0;
  small[0] = 100, small[1] = small[2] = small[3] = small[4] = small[5] = small[6] = 0;
  CHECK(fg_st_parse(small, 8, 50, &h, &err) == FG_ERR_FORMAT && strstr(err.msg, "truncated"));

  const char *e1 = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
  st_expect("unclosed object", e1, 8, FG_ERR_FORMAT, "malformed header JSON");
  st_expect("trailing garbage", "{}x", 0, FG_ERR_FORMAT, "trailing");
  st_expect("not an object", "[1,2]", 0, FG_ERR_FORMAT, "expected '{'");
  st_expect("bad escape", "{\"a\\q\":{}}", 0, FG_ERR_FORMAT, "bad escape");
  st_expect("control character", "{\"a\tb\":{}}", 0, FG_ERR_FORMAT, "control character");
  st_expect("unknown dtype", "{\"w\":{\"dtype\":\"Q9\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, FG_ERR_UNSUPPORTED,
            "tensor 'w': unknown dtype \"Q9\"");
  st_expect("size mismatch", "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, FG_ERR_FORMAT,
            "need 12 bytes");
  st_expect("past the end", "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, FG_ERR_FORMAT,
            "tensor 'w': data_offsets [0, 16] reach past the end");
  st_expect("reversed", "{\"w\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8, FG_ERR_FORMAT, "end before");
  st_expect("overlap",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
            "\"data_offsets\":[4,12]}}",
            16, FG_ERR_FORMAT, "tensors 'a' [0, 8] and 'b' [4, 12] overlap");
  st_expect("duplicate",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
            "\"data_offsets\":[8,16]}}",
            16, FG_ERR_FORMAT, "'a' appears twice");
  st_expect("no offsets", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, FG_ERR_FORMAT, "missing data_offsets");
  st_expect("three offsets", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}}", 8, FG_ERR_FORMAT,
            "more than 2");
  st_expect("fraction", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, FG_ERR_FORMAT,
            "not a fraction");
  st_expect("negative", "{\"w\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, FG_ERR_FORMAT,
            "non-negative integer");
  st_expect("huge shape", "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
            FG_ERR_FORMAT, "overflows");
  st_expect("huge integer", "{\"w\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}", 8,
            FG_ERR_FORMAT, "too large");
  st_expect("metadata value", "{\"__metadata__\":{\"a\":1}}", 0, FG_ERR_FORMAT, "expected a string");
  st_expect("empty name", "{\"\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, FG_ERR_FORMAT, "empty name");
  st_expect("nul in name", "{\"a\\u0000\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, FG_ERR_FORMAT,
            "NUL");
  st_expect("too deep", "{\"w\":{\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]"
            "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}", 0, FG_ERR_FORMAT, "nesting");
  st_expect("empty", "{}", 0, FG_OK, "");
}

// ----------------------------------------------------------------------------------------------------
// 2. Errors

/* Rewrites a safetensors file through a callback that may edit the parsed header; the tensor bytes
 * are kept (offsets relative to the data). extra: bytes appended to the data. */
typedef void (*st_edit_fn)(fg_st_header *h, uint64_t *extra);

static bool rewrite_st(const char *path, st_edit_fn edit) {
  size_t n;
  uint8_t *b = (uint8_t *)fg_test_read_file(path, &n);
  if (!b) return false;
  fg_st_header h;
  fg_error err;
  if (fg_st_parse(b, n, n, &h, &err) != FG_OK) {
    free(b);
    return false;
  }
  const uint64_t data = h.data_start;
  for (size_t i = 0; i < h.n; i++) h.t[i].begin -= data, h.t[i].end -= data;
  uint64_t extra = 0;
  edit(&h, &extra);
  char *hdr = malloc(1 << 20);
  size_t hl = (size_t)snprintf(hdr, 1 << 20, "{");
  for (size_t i = 0; i < h.n; i++) {
    const fg_st_tensor *t = &h.t[i];
    hl += (size_t)snprintf(hdr + hl, (1 << 20) - hl, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", t->name,
                           fg_st_dtype_name(t->dtype));
    for (uint32_t d = 0; d < t->n_dims; d++)
      hl += (size_t)snprintf(hdr + hl, (1 << 20) - hl, "%s%llu", d ? "," : "", (unsigned long long)t->shape[d]);
    hl += (size_t)snprintf(hdr + hl, (1 << 20) - hl, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)t->begin,
                           (unsigned long long)t->end);
  }
  hl += (size_t)snprintf(hdr + hl, (1 << 20) - hl, "}");
  size_t fn;
  uint8_t *out = st_file(hdr, (size_t)(n - data + extra), &fn);
  memcpy(out + fn - (n - data) - extra, b + data, (size_t)(n - data));
  const bool ok = fg_test_write_file(path, out, fn);
  free(out);
  free(hdr);
  fg_st_clear(&h);
  free(b);
  return ok;
}

static fg_st_tensor *st_named(fg_st_header *h, const char *name) { return (fg_st_tensor *)fg_st_find(h, name); }

static void ed_rename(fg_st_header *h, uint64_t *x) {
  (void)x;
  fg_st_tensor *t = st_named(h, "model.norm.weight");
  if (t) t->name[7] = 'X'; /* model.nXrm.weight */
}
static void ed_dtype(fg_st_header *h, uint64_t *x) {
  (void)x;
  fg_st_tensor *t = st_named(h, "model.layers.2.mlp.up_proj.weight");
  if (t) t->dtype = FG_ST_I32;
}
static void ed_transpose(fg_st_header *h, uint64_t *x) {
  (void)x;
  fg_st_tensor *t = st_named(h, "model.layers.1.self_attn.o_proj.weight");
  if (t) {
    const uint64_t s = t->shape[0];
    t->shape[0] = t->shape[1];
    t->shape[1] = s;
  }
}
static void ed_overlap(fg_st_header *h, uint64_t *x) {
  (void)x;
  fg_st_tensor *a = st_named(h, "model.layers.0.self_attn.k_proj.weight");
  fg_st_tensor *b = st_named(h, "model.layers.0.self_attn.v_proj.weight");
  if (a && b) a->begin = b->begin, a->end = b->end;
}
static void ed_extra(fg_st_header *h, uint64_t *x) {
  fg_st_tensor *t = &h->t[h->n - 1];
  uint64_t end = 0;
  for (size_t i = 0; i < h->n; i++) end = FG_MAX(end, h->t[i].end);
  const char *name = "model.layers.0.self_attn.q_proj.bias";
  fg_st_tensor nt = *t;
  nt.name = fg_strndup(name, strlen(name));
  nt.dtype = FG_ST_F32;
  nt.n_dims = 1;
  nt.shape[0] = 128;
  nt.begin = end;
  nt.end = end + 512;
  fg_st_tensor *grown = fg_realloc(h->t, (h->n + 1) * sizeof *grown);
  if (!grown) return;
  h->t = grown;
  h->t[h->n++] = nt;
  *x = 512;
}

typedef enum { ED_NONE, ED_CONFIG, ED_TOKENIZER, ED_ST, ED_TRUNCATE, ED_BYTE, ED_REMOVE, ED_INDEX } ed_kind;

typedef struct err_case {
  const char *what;
  ed_kind kind;
  const char *file;  /* in the checkpoint */
  const char *from;  /* ED_CONFIG/ED_TOKENIZER/ED_INDEX: text replaced ... */
  const char *to;    /* ... by this */
  st_edit_fn edit;   /* ED_ST */
  fg_status want;
  const char *words[3];
  bool v4;           /* damage the 4.x sharded checkpoint instead of the 5.x single-file one */
} err_case;

static bool replace_in_file(const char *path, const char *from, const char *to) {
  size_t n;
  char *s = fg_test_read_file(path, &n);
  if (!s) return false;
  char *at = strstr(s, from);
  bool ok = at != NULL;
  if (ok) {
    const size_t fl = strlen(from), tl = strlen(to);
    char *o = malloc(n - fl + tl + 1);
    memcpy(o, s, (size_t)(at - s));
    memcpy(o + (at - s), to, tl);
    memcpy(o + (at - s) + tl, at + fl, n - (size_t)(at - s) - fl);
    ok = fg_test_write_file(path, o, n - fl + tl);
    free(o);
  }
  free(s);
  return ok;
}

static void test_errors(void) {
  const char *good5 = scratch("err-good5"), *good4 = scratch("err-good4-sharded");
  if (gen_hf(good5, "tiny", FG_TYPE_F32, 5, 1, FG_GEN_HEAD_TIED, 5, NULL) != FG_OK) return;
  if (gen_hf(good4, "tiny", FG_TYPE_F32, 4, 2, FG_GEN_HEAD_TIED, 5, NULL) != FG_OK) return;
  const char *out = scratch("err-out.gguf");
  fg_error err;
  CHECK_OK(convert(good5, out, FG_TYPE_Q8_0, 0, &err)); /* both convert as they are */
  CHECK_OK(convert(good4, out, FG_TYPE_Q8_0, 0, &err));
  remove(out);

  static const err_case cases[] = {
      {"model_type llama", ED_CONFIG, "config.json", "\"gemma3_text\"", "\"llama\"", NULL, FG_ERR_UNSUPPORTED,
       {"config.json", "unknown architecture", "model_type 'llama'"}, false},
      {"multimodal", ED_CONFIG, "config.json", "\"gemma3_text\"", "\"gemma3\"", NULL, FG_ERR_UNSUPPORTED,
       {"config.json", "multimodal", NULL}, false},
      {"other head", ED_CONFIG, "config.json", "\"Gemma3ForCausalLM\"", "\"Gemma3ForSequenceClassification\"", NULL,
       FG_ERR_UNSUPPORTED, {"unknown architecture 'Gemma3ForSequenceClassification'", NULL, NULL}, false},
      {"fewer layers", ED_CONFIG, "config.json", "\"num_hidden_layers\": 6", "\"num_hidden_layers\": 5", NULL,
       FG_ERR_FORMAT, {"-of-00002.safetensors", "unexpected tensor 'model.layers.5.", "5 layers"}, true},
      {"more layers", ED_CONFIG, "config.json", "\"num_hidden_layers\": 6", "\"num_hidden_layers\": 7", NULL,
       FG_ERR_FORMAT, {"missing tensor 'model.layers.6.", "in none of the 2 shards", "config.json expects it"}, true},
      {"layer_types length", ED_CONFIG, "config.json", "\"num_hidden_layers\": 6", "\"num_hidden_layers\": 7", NULL,
       FG_ERR_FORMAT, {"config.json", "layer_types must list num_hidden_layers (7) entries", NULL}, false},
      {"4.x pattern", ED_CONFIG, "config.json", "\"sliding_window_pattern\": 6", "\"sliding_window_pattern\": 0", NULL,
       FG_ERR_FORMAT, {"config.json", "sliding_window_pattern must be a positive integer", NULL}, true},
      {"wider", ED_CONFIG, "config.json", "\"hidden_size\": 64", "\"hidden_size\": 96", NULL, FG_ERR_FORMAT,
       {"model.safetensors", "'model.embed_tokens.weight' has shape [512, 64]", "implies [512, 96]"}, false},
      {"query scale", ED_CONFIG, "config.json", "\"query_pre_attn_scalar\": 32", "\"query_pre_attn_scalar\": 64", NULL,
       FG_ERR_UNSUPPORTED, {"query_pre_attn_scalar 64 differs from head_dim 32", NULL, NULL}, false},
      {"layer types", ED_CONFIG, "config.json", "\"sliding_attention\"", "\"full_attention\"", NULL, FG_ERR_UNSUPPORTED,
       {"layer_types is not periodic (layer 1 is sliding_attention)", NULL, NULL}, false},
      {"rope scaling", ED_CONFIG, "config.json", "\"rope_type\": \"default\"\n    },\n    \"sliding",
       "\"rope_type\": \"linear\", \"factor\": 8.0\n    },\n    \"sliding", NULL, FG_ERR_UNSUPPORTED,
       {"rope_parameters.full_attention", "linear", NULL}, false},
      {"activation", ED_CONFIG, "config.json", "gelu_pytorch_tanh", "silu", NULL, FG_ERR_UNSUPPORTED,
       {"hidden_activation 'silu'", NULL, NULL}, false},
      {"bad json", ED_CONFIG, "config.json", "{", "[", NULL, FG_ERR_FORMAT, {"config.json", "not a JSON object", NULL}, false},
      {"untied without head", ED_CONFIG, "config.json", "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false",
       NULL, FG_ERR_FORMAT, {"missing tensor 'lm_head.weight'", NULL, NULL}, false},
      {"vocab size", ED_CONFIG, "config.json", "\"vocab_size\": 512", "\"vocab_size\": 513", NULL, FG_ERR_FORMAT,
       {"model.embed_tokens.weight' has shape [512, 64]", "[513, 64]", NULL}, false},
      {"tokenizer too small", ED_TOKENIZER, "tokenizer.json", ",\"<unused106>\":511", "", NULL, FG_ERR_FORMAT,
       {"tokenizer.json has 511 tokens", "vocab_size", "512"}, false},
      {"tokenizer bad id", ED_TOKENIZER, "tokenizer.json", "\"<unused106>\":511", "\"<unused106>\":512", NULL,
       FG_ERR_FORMAT, {"tokenizer.json", "<unused106>", "bad id"}, false},
      {"tokenizer json", ED_TOKENIZER, "tokenizer.json", "\"merges\":[", "\"merges\":{", NULL, FG_ERR_FORMAT,
       {"tokenizer.json", "at byte", NULL}, false},
      {"tokenizer special", ED_TOKENIZER, "tokenizer_config.json", "\"<eos>\"", "\"<nope>\"", NULL, FG_ERR_FORMAT,
       {"tokenizer_config.json", "eos_token \"<nope>\"", NULL}, false},
      {"renamed tensor", ED_ST, "model.safetensors", NULL, NULL, ed_rename, FG_ERR_FORMAT,
       {"model.safetensors: missing tensor 'model.norm.weight'", "config.json expects it", NULL}, false},
      {"dtype", ED_ST, "model.safetensors", NULL, NULL, ed_dtype, FG_ERR_UNSUPPORTED,
       {"model.safetensors", "'model.layers.2.mlp.up_proj.weight' has dtype I32", NULL}, false},
      {"transposed", ED_ST, "model.safetensors", NULL, NULL, ed_transpose, FG_ERR_FORMAT,
       {"'model.layers.1.self_attn.o_proj.weight' has shape [128, 64]", "implies [64, 128]", NULL}, false},
      {"overlap", ED_ST, "model.safetensors", NULL, NULL, ed_overlap, FG_ERR_FORMAT,
       {"model.safetensors", "k_proj.weight", "overlap"}, false},
      {"extra tensor", ED_ST, "model.safetensors", NULL, NULL, ed_extra, FG_ERR_FORMAT,
       {"model.safetensors", "unexpected tensor 'model.layers.0.self_attn.q_proj.bias'", NULL}, false},
      {"truncated", ED_TRUNCATE, "model.safetensors", NULL, NULL, NULL, FG_ERR_FORMAT,
       {"model.safetensors", "reach past the end of the file", "tensor '"}, false},
      {"header", ED_BYTE, "model.safetensors", NULL, NULL, NULL, FG_ERR_FORMAT,
       {"model.safetensors", "malformed header JSON", NULL}, false},
      {"no config", ED_REMOVE, "config.json", NULL, NULL, NULL, FG_ERR_IO, {"no config.json", NULL, NULL}, false},
      {"no weights", ED_REMOVE, "model.safetensors", NULL, NULL, NULL, FG_ERR_IO,
       {"no model.safetensors or model.safetensors.index.json", NULL, NULL}, false},
      {"no tokenizer", ED_REMOVE, "tokenizer.json", NULL, NULL, NULL, FG_ERR_IO, {"no tokenizer.json", NULL, NULL}, false},
      {"index: missing shard", ED_INDEX, "model.safetensors.index.json", "model-00002-of-00002", "model-00003-of-00002",
       NULL, FG_ERR_IO, {"model.safetensors.index.json lists model-00003-of-00002.safetensors", "does not exist", NULL}, false},
      {"index: wrong shard", ED_INDEX, "model.safetensors.index.json",
       "\"model.embed_tokens.weight\": \"model-00001-of-00002", "\"model.embed_tokens.weight\": \"model-00002-of-00002",
       NULL, FG_ERR_FORMAT, {"model-00001-of-00002.safetensors holds tensor 'model.embed_tokens.weight'",
                             "the index lists in model-00002", NULL}, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const err_case *c = &cases[i];
    char dir[2048], file[2400];
    snprintf(dir, sizeof dir, "%s/err-%zu", g_dir, i);
    CHECK(copy_dir(c->kind == ED_INDEX || c->v4 ? good4 : good5, dir));
    snprintf(file, sizeof file, "%s/%s", dir, c->file);
    bool edited = true;
    switch (c->kind) {
      case ED_CONFIG: case ED_TOKENIZER: case ED_INDEX: edited = replace_in_file(file, c->from, c->to); break;
      case ED_ST: edited = rewrite_st(file, c->edit); break;
      case ED_TRUNCATE: {
        struct stat sb;
        edited = stat(file, &sb) == 0 && truncate(file, sb.st_size - 100) == 0;
      } break;
      case ED_BYTE: {
        size_t n;
        char *s = fg_test_read_file(file, &n);
        edited = s && n > 9;
        if (edited) {
          s[8] = '[';
          edited = fg_test_write_file(file, s, n);
        }
        free(s);
      } break;
      case ED_REMOVE: edited = remove(file) == 0; break;
      case ED_NONE: break;
    }
    CHECK_MSG(edited, "%s: could not prepare the damaged checkpoint", c->what);
    memset(&err, 0, sizeof err);
    const fg_status st = convert(dir, out, FG_CONVERT_TYPE_AUTO, 0, &err);
    CHECK_MSG(st == c->want, "%s: status %s, want %s (%s)", c->what, fg_status_str(st), fg_status_str(c->want), err.msg);
    for (int k = 0; k < 3; k++)
      if (c->words[k]) CHECK_MSG(strstr(err.msg, c->words[k]) != NULL, "%s: message \"%s\" lacks \"%s\"", c->what, err.msg, c->words[k]);
    CHECK_MSG(st == FG_OK || no_output_left(out), "%s: output or temporary file left behind", c->what);
    remove(out);
    if (getenv("FG_CONVERT_VERBOSE")) printf("  %-22s %s: %s\n", c->what, fg_status_str(st), err.msg);
    fg_test_rm_rf(dir);
  }

  /* inputs that are neither; parameters */
  CHECK(convert(scratch("nothing"), out, FG_CONVERT_TYPE_AUTO, 0, &err) == FG_ERR_IO && strstr(err.msg, "nothing"));
  char cfg[2400];
  snprintf(cfg, sizeof cfg, "%s/config.json", good5);
  CHECK(convert(cfg, out, FG_CONVERT_TYPE_AUTO, 0, &err) == FG_ERR_UNSUPPORTED && strstr(err.msg, "neither a checkpoint"));
  CHECK(convert(good5, out, 4, 0, &err) == FG_ERR_UNSUPPORTED); /* 4: no GGML type (Q4_1_SOME_F16 once) */
  CHECK(convert(good5, out, FG_TYPE_F32, FG_TYPE_F16, &err) == FG_ERR_UNSUPPORTED && strstr(err.msg, "head type"));
  CHECK(fg_convert(NULL, out, NULL, &err) == FG_ERR_INVALID_ARG);
  CHECK(fg_convert(good5, "", NULL, &err) == FG_ERR_INVALID_ARG);
  CHECK(convert(good5, scratch("no-such-dir/out.gguf"), FG_TYPE_F32, 0, &err) == FG_ERR_IO && strstr(err.msg, "cannot create"));
  CHECK(no_output_left(out));

  /* GGUF inputs: another architecture; 4-bit weights re-quantized (allowed since the K-quants) */
  const char *q4 = scratch("err-q4.gguf"), *llama = scratch("err-llama.gguf");
  if (gen_gguf(q4, "tiny", FG_TYPE_Q4_0, FG_GEN_HEAD_TIED, 5) == FG_OK) {
    CHECK_OK(convert(q4, out, FG_TYPE_Q8_0, 0, &err)); /* re-quantized, with a warning (test_convert_mix) */
    remove(out);
    CHECK_OK(convert(q4, out, FG_TYPE_Q4_0, 0, &err)); /* kept as it is */
    remove(out);
    size_t n;
    char *s = fg_test_read_file(q4, &n);
    char *at = s ? memmem(s, n, "gemma3", 6) : NULL; /* general.architecture's value comes first */
    if (at) {
      memcpy(at, "llama3", 6);
      CHECK(fg_test_write_file(llama, s, n));
      CHECK(convert(llama, out, FG_TYPE_F32, 0, &err) == FG_ERR_UNSUPPORTED && strstr(err.msg, "'llama3'"));
    }
    free(s);
  }
  CHECK(no_output_left(out));
}

/* The progress callback: monotone, ends at total; returning false cancels and leaves nothing. */
typedef struct prog {
  uint64_t last, total, calls, stop_after;
  bool monotone;
} prog;

static bool on_progress(uint64_t done, uint64_t total, void *ud) {
  prog *p = ud;
  p->monotone &= done >= p->last && done <= total && (p->total == 0 || p->total == total);
  p->last = done;
  p->total = total;
  p->calls++;
  return p->stop_after == 0 || p->calls < p->stop_after;
}

static void test_progress_and_alloc(void) {
  const char *ck = scratch("prog-ckpt"), *out = scratch("prog.gguf");
  if (gen_hf(ck, "tiny", FG_TYPE_BF16, 5, 2, FG_GEN_HEAD_TIED, 6, NULL) != FG_OK) return;
  fg_convert_params p;
  fg_convert_params_init(&p);
  p.type = FG_TYPE_Q4_0;
  p.progress = on_progress;
  prog pr = {0, 0, 0, 0, true};
  p.progress_user_data = &pr;
  fg_error err;
  CHECK_OK(fg_convert(ck, out, &p, &err));
  CHECK(pr.monotone && pr.calls >= 3 && pr.last == pr.total && pr.total > 0);
  prog stop = {0, 0, 0, 3, true};
  p.progress_user_data = &stop;
  remove(out);
  CHECK(fg_convert(ck, out, &p, &err) == FG_ERR_ABORTED && strstr(err.msg, "cancelled"));
  CHECK(no_output_left(out));

  /* every allocation failing once: FG_ERR_NOMEM, no output, no leak (ASan); then success */
  p.progress = NULL;
  fg_alloc_fail_after(0);
  CHECK_OK(fg_convert(ck, out, &p, &err));
  remove(out);
  fg_alloc_fail_after(0);
  CHECK_OK(fg_convert(ck, out, &p, &err));
  const uint64_t n_alloc = fg_alloc_fail_after(0);
  remove(out);
  int nomem = 0;
  for (uint64_t k = 1; k <= n_alloc + 1; k++) {
    fg_alloc_fail_after(k);
    memset(&err, 0, sizeof err);
    const fg_status st = fg_convert(ck, out, &p, &err);
    fg_alloc_fail_after(0);
    if (k <= n_alloc) {
      CHECK_MSG(st == FG_ERR_NOMEM && err.msg[0], "allocation %llu failing: %s (%s)", (unsigned long long)k,
                fg_status_str(st), err.msg);
      CHECK_MSG(no_output_left(out), "allocation %llu failing: output left behind", (unsigned long long)k);
      nomem += st == FG_ERR_NOMEM;
    } else {
      CHECK_MSG(st == FG_OK, "with every allocation granted: %s", err.msg);
    }
    remove(out);
  }
  printf("alloc: %llu allocation sites of fg_convert (tiny, 2 shards -> q4_0), each failed once: %d x FG_ERR_NOMEM\n",
         (unsigned long long)n_alloc, nomem);
}

// ----------------------------------------------------------------------------------------------------
// 3. Equality with the generator

static const struct {
  const char *name;
  uint32_t type;
} k_types[] = {{"f32", FG_TYPE_F32}, {"f16", FG_TYPE_F16}, {"bf16", FG_TYPE_BF16}, {"q8_0", FG_TYPE_Q8_0}, {"q4_0", FG_TYPE_Q4_0}};

static void test_equality(void) {
  const uint64_t seed = 21;
  const char *ck5 = scratch("eq-ckpt5"), *ck4 = scratch("eq-ckpt4"), *ckb = scratch("eq-ckpt-bf16");
  const char *cku = scratch("eq-ckpt-untied");
  if (gen_hf(ck5, "tiny", FG_TYPE_F32, 5, 1, FG_GEN_HEAD_TIED, seed, NULL) != FG_OK ||
      gen_hf(ck4, "tiny", FG_TYPE_F32, 4, 3, FG_GEN_HEAD_TIED, seed, NULL) != FG_OK ||
      gen_hf(ckb, "tiny", FG_TYPE_BF16, 5, 1, FG_GEN_HEAD_TIED, seed, NULL) != FG_OK ||
      gen_hf(cku, "tiny", FG_TYPE_F32, 5, 1, FG_TYPE_F32, seed, NULL) != FG_OK)
    return;
  fg_error err;
  const char *f32_ref = scratch("eq-ref-f32.gguf");
  if (gen_gguf(f32_ref, "tiny", FG_TYPE_F32, FG_GEN_HEAD_TIED, seed) != FG_OK) return;
  for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++) {
    const uint32_t t = k_types[i].type;
    char what[128];
    const char *ref = scratch("eq-ref.gguf"), *got = scratch("eq-got.gguf"), *got4 = scratch("eq-got4.gguf");
    if (gen_gguf(ref, "tiny", t, FG_GEN_HEAD_TIED, seed) != FG_OK) continue;
    /* checkpoint -> T equals gen-model's T (the 0.3 post-attention norms are 1 ulp off: w - 1 + 1) */
    CHECK_OK(convert(ck5, got, t, 0, &err));
    snprintf(what, sizeof what, "checkpoint -> %s", k_types[i].name);
    compare_models(what, got, ref, "gemma3.", 1);
    /* a 4.x config and three shards give the same file */
    CHECK_OK(convert(ck4, got4, t, 0, &err));
    snprintf(what, sizeof what, "4.x sharded checkpoint -> %s", k_types[i].name);
    compare_models(what, got4, got, "gemma3.", 0);
    compare_models(what, got4, got, "tokenizer.", 0); /* the chat template too: tokenizer_config.json vs .jinja */
    /* GGUF f32 -> T equals gen-model's T exactly, metadata included (but the quantization version) */
    CHECK_OK(convert(f32_ref, got, t, 0, &err));
    snprintf(what, sizeof what, "gguf f32 -> %s", k_types[i].name);
    compare_models(what, got, ref, "gemma3.", 0);
    compare_models(what, got, ref, "tokenizer.", 0);
    compare_models(what, got, ref, "general.file_type", 0);
    /* untied head: lm_head.weight becomes output.weight of the same type */
    if (gen_gguf(ref, "tiny", t, t, seed) == FG_OK) {
      CHECK_OK(convert(cku, got, t, 0, &err));
      snprintf(what, sizeof what, "untied checkpoint -> %s", k_types[i].name);
      compare_models(what, got, ref, "gemma3.", 1);
    }
    remove(ref);
    remove(got);
    remove(got4);
  }
  /* a bf16 checkpoint to bf16: the matrices are gen-model's bf16 bytes */
  const char *ref = scratch("eq-ref-bf16.gguf"), *got = scratch("eq-got-bf16.gguf");
  if (gen_gguf(ref, "tiny", FG_TYPE_BF16, FG_GEN_HEAD_TIED, seed) == FG_OK) {
    CHECK_OK(convert(ckb, got, FG_CONVERT_TYPE_AUTO, 0, &err)); /* auto: the checkpoint's dtype */
    gfile a, b;
    gload(got, &a);
    gload(ref, &b);
    for (size_t i = 0; a.ok && b.ok && i < a.g.n_tensors && i < b.g.n_tensors; i++) {
      const fg_gguf_tensor *x = &a.g.tensors[i], *y = &b.g.tensors[i];
      if (x->n_dims == 2)
        CHECK_MSG(x->type == FG_TYPE_BF16 && x->nbytes == y->nbytes && memcmp(x->data, y->data, (size_t)x->nbytes) == 0,
                  "bf16 checkpoint: %.*s differs from gen-model's bf16 file", (int)x->name.len, x->name.ptr);
    }
    gfree(&a);
    gfree(&b);
  }
  /* --head-type on a tied checkpoint: output.weight is the reference quantizer over token_embd, the
   * same bytes requant-head makes from the f32 file */
  const char *rq = scratch("eq-requant.gguf");
  CHECK_OK(fg_model_requant_head(f32_ref, rq, FG_TYPE_Q4_0, NULL, NULL, &err));
  CHECK_OK(convert(ck5, got, FG_TYPE_F32, FG_TYPE_Q4_0, &err));
  compare_models("checkpoint -> f32 + q4_0 head", got, rq, "gemma3.", 1);
  CHECK_OK(convert(f32_ref, got, FG_CONVERT_TYPE_AUTO, FG_TYPE_Q4_0, &err));
  compare_models("gguf -> q4_0 head", got, rq, "", 0);
  /* the tokenizer and chat template made it through: a model that loads, tokenizes and names the template */
  CHECK_OK(convert(ck4, got, FG_TYPE_F32, 0, &err));
  gfile a;
  gload(got, &a);
  fg_gguf_str tmpl = {0};
  CHECK(a.ok && fg_gguf_get_str(&a.g, "tokenizer.chat_template", &tmpl, NULL) == FG_OK && tmpl.len > 20 &&
        memmem(tmpl.ptr, tmpl.len, "<start_of_turn>", 15) != NULL);
  uint32_t bos = 99, eos = 99;
  CHECK(a.ok && fg_gguf_get_u32(&a.g, "tokenizer.ggml.bos_token_id", &bos, NULL) == FG_OK && bos == 2);
  CHECK(a.ok && fg_gguf_get_u32(&a.g, "tokenizer.ggml.eos_token_id", &eos, NULL) == FG_OK && eos == 1);
  gfree(&a);
  fg_model *m = NULL;
  CHECK_OK(fg_model_load(got, NULL, &m, &err));
  int32_t id = -1;
  CHECK(m && fg_token_lookup(m, "<start_function_call>", &id) == FG_OK && id == 48);
  fg_model_free(m);
  remove(got);
  remove(ref);
  remove(rq);
}

/* fit = FG_CONVERT_FIT_SEARCHED on a GGUF F32 file: every Q4_0 matrix of a pure Q4_0 (the tied head
 * too), and a --head-type Q4_0 head, hold fg_quantize_row_searched of the F32 rows; AUTO keeps the
 * reference bytes there, so the two files differ; a fit that is neither is refused before any output. */
static void test_fit(void) {
  const char *f32 = scratch("fit-f32.gguf"), *got = scratch("fit-got.gguf"), *ref = scratch("fit-ref.gguf");
  if (gen_gguf(f32, "tiny", FG_TYPE_F32, FG_GEN_HEAD_TIED, 33) != FG_OK) return;
  fg_error err;
  fg_convert_params p;
  fg_convert_params_init(&p);
  CHECK(p.fit == FG_CONVERT_FIT_AUTO);
  static const struct { uint32_t type, head; const char *what; } cases[] = {
      {FG_TYPE_Q4_0, 0, "pure q4_0"}, {FG_TYPE_F32, FG_TYPE_Q4_0, "f32 + q4_0 head"}};
  for (size_t c = 0; c < 2; c++) {
    p.type = cases[c].type;
    p.head_type = cases[c].head;
    p.fit = FG_CONVERT_FIT_AUTO;
    CHECK_OK(fg_convert(f32, ref, &p, &err));
    p.fit = FG_CONVERT_FIT_SEARCHED;
    CHECK_OK(fg_convert(f32, got, &p, &err));
    gfile src, a, b;
    gload(f32, &src);
    gload(got, &a);
    gload(ref, &b);
    size_t n_q4 = 0, n_differ = 0;
    for (size_t i = 0; src.ok && a.ok && b.ok && i < a.g.n_tensors; i++) {
      const fg_gguf_tensor *t = &a.g.tensors[i];
      char name[96];
      snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
      const fg_gguf_tensor *r = fg_gguf_find_tensor(&b.g, name);
      const fg_gguf_tensor *s = fg_gguf_find_tensor(&src.g, strcmp(name, "output.weight") == 0 ? "token_embd.weight" : name);
      CHECK_MSG(r && s && r->type == t->type && r->nbytes == t->nbytes, "%s: %s has no counterpart", cases[c].what, name);
      if (!r || !s || t->type != FG_TYPE_Q4_0) continue;
      n_q4++;
      const size_t cols = (size_t)t->ne[0], rb = (size_t)t->nbytes / (size_t)t->ne[1];
      uint8_t *want = malloc(rb);
      bool same = want != NULL;
      for (uint64_t row = 0; same && row < t->ne[1]; row++) {
        fg_quantize_row_searched(FG_TYPE_Q4_0, (const float *)(const void *)s->data + row * cols, want, cols);
        same = memcmp(want, t->data + row * rb, rb) == 0;
        CHECK_MSG(same, "%s: %s row %llu is not the searched fit of the f32 row", cases[c].what, name,
                  (unsigned long long)row);
      }
      free(want);
      n_differ += memcmp(t->data, r->data, (size_t)t->nbytes) != 0;
    }
    size_t n_mat = 0;
    for (size_t i = 0; a.ok && i < a.g.n_tensors; i++) n_mat += a.g.tensors[i].n_dims == 2;
    CHECK_MSG(n_q4 == (c == 0 ? n_mat : 1), "%s: %zu Q4_0 tensors of %zu matrices", cases[c].what, n_q4, n_mat);
    CHECK_MSG(n_q4 > 0 && n_differ == n_q4, "%s: %zu of %zu Q4_0 tensors differ from the reference fit's", cases[c].what,
              n_differ, n_q4);
    gfree(&src);
    gfree(&a);
    gfree(&b);
  }
  remove(got);
  p.fit = 7;
  CHECK(fg_convert(f32, got, &p, &err) == FG_ERR_INVALID_ARG && strstr(err.msg, "fit 7") != NULL);
  CHECK(no_output_left(got));
  remove(f32);
  remove(ref);
}

// ----------------------------------------------------------------------------------------------------
// 4. The HF oracle

static bool parse_type_name(const char *s, uint32_t *t) { return fg_test_type_from_name(s, t) == 0; }

/* gen-model options of a golden case -> params (only the options record_goldens.py uses). */
static bool params_from_options(const cJSON *opts, fg_gen_params *p, char *preset, size_t preset_cap) {
  fg_gen_params_init(p);
  p->format = FG_GEN_FORMAT_HF;
  for (const cJSON *o = opts ? opts->child : NULL; o; o = o->next) {
    const cJSON *v = o->next;
    if (!cJSON_IsString(o) || !cJSON_IsString(v)) return false;
    const char *k = o->valuestring, *s = v->valuestring;
    uint32_t t;
    if (strcmp(k, "--preset") == 0) snprintf(preset, preset_cap, "%s", s), p->preset = preset;
    else if (strcmp(k, "--type") == 0 && parse_type_name(s, &t)) p->type = t;
    else if (strcmp(k, "--head-type") == 0 && parse_type_name(s, &t)) p->head_type = t;
    else if (strcmp(k, "--hf-config") == 0) p->hf_config = (uint32_t)atoi(s);
    else if (strcmp(k, "--shards") == 0) p->hf_shards = (uint32_t)atoi(s);
    else if (strcmp(k, "--seed") == 0) p->seed = strtoull(s, NULL, 10);
    else return false;
    o = v;
  }
  return true;
}

/* The checkpoint of a case under FG_TEST_MODELS (shared by build trees; written atomically, so a
 * concurrent writer's copy is as good as ours). */
static bool ensure_checkpoint(const char *dir, fg_gen_params *p, bool real_vocab) {
  if (fg_test_exists(dir)) return true;
  if (real_vocab) {
    p->vocab_json = fg_test_tokenizer_json();
    if (!fg_test_exists(p->vocab_json)) {
      CHECK_MSG(0, "%s is missing: run scripts/setup.sh to install the test oracles", p->vocab_json);
      return false;
    }
  }
  fg_error err = {0};
  const fg_status st = fg_gen_model(p, dir, &err);
  if (st != FG_OK && fg_test_exists(dir)) return true; /* made by a concurrent test meanwhile */
  CHECK_MSG(st == FG_OK, "gen-model %s: %s", dir, err.msg);
  return st == FG_OK;
}

/* fgemma's logits against one recorded position: relative L-inf over the recorded columns and the
 * top ids: max |fgemma - HF| / max |HF logit| of the row. */
static double golden_row(const float *lg, const cJSON *columns, const cJSON *pos) {
  const double scale = cJSON_GetObjectItem(pos, "row_max_abs")->valuedouble;
  double worst = 0;
  const cJSON *vals = cJSON_GetObjectItem(pos, "values");
  const cJSON *c = columns->child, *v = vals->child;
  for (; c && v; c = c->next, v = v->next) worst = fmax(worst, fabs(lg[c->valueint] - v->valuedouble) / scale);
  const cJSON *ti = cJSON_GetObjectItem(pos, "top_ids")->child, *tv = cJSON_GetObjectItem(pos, "top_values")->child;
  for (; ti && tv; ti = ti->next, tv = tv->next) worst = fmax(worst, fabs(lg[ti->valueint] - tv->valuedouble) / scale);
  return worst;
}

static int32_t argmax(const float *x, size_t n) {
  size_t b = 0;
  for (size_t i = 1; i < n; i++)
    if (x[i] > x[b]) b = i;
  return (int32_t)b;
}

static void test_tokenizer_corpus(const fg_model *m, const char *what);

static void test_goldens(void) {
  size_t n;
  char *text = fg_test_read_file(FG_SOURCE_DIR "/tests/data/hf_goldens.json", &n);
  CHECK_MSG(text != NULL, "tests/data/hf_goldens.json is missing");
  if (!text) return;
  cJSON *root = cJSON_ParseWithLength(text, n);
  free(text);
  const cJSON *fmt = cJSON_GetObjectItem(root, "format"), *ver = cJSON_GetObjectItem(root, "version");
  CHECK_MSG(cJSON_IsString(fmt) && strcmp(fmt->valuestring, "fgemma-hf-goldens") == 0 && cJSON_IsNumber(ver) &&
                ver->valueint == 1, "hf_goldens.json: not format fgemma-hf-goldens version 1");
  const cJSON *rec = cJSON_GetObjectItem(root, "recorded");
  const cJSON *dev = cJSON_GetObjectItem(rec, "device");
  printf("goldens: transformers %s, torch %s, %s\n", cJSON_GetStringValue(cJSON_GetObjectItem(rec, "transformers")),
         cJSON_GetStringValue(cJSON_GetObjectItem(rec, "torch")), cJSON_GetStringValue(dev));
  const cJSON *cases = cJSON_GetObjectItem(root, "cases");
  CHECK(cJSON_GetArraySize(cases) >= 4);
  bool corpus_done = false;
  const char *subset = getenv("FG_CONVERT_GOLDENS");
  const bool tiny_only = subset && strcmp(subset, "tiny") == 0;
  if (tiny_only) printf("FG_CONVERT_GOLDENS=tiny: only the tiny cases (no real vocabulary, no tokenizer corpus)\n");
  for (const cJSON *c = cases ? cases->child : NULL; c; c = c->next) {
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(c, "name"));
    if (tiny_only && name && strncmp(name, "tiny", 4) != 0) continue;
    fg_gen_params p;
    char preset[32];
    const bool real_vocab = cJSON_IsTrue(cJSON_GetObjectItem(c, "real_vocab"));
    if (!name || !params_from_options(cJSON_GetObjectItem(c, "gen_model"), &p, preset, sizeof preset)) {
      CHECK_MSG(0, "hf_goldens.json: case %s: cannot read its gen-model options", name ? name : "?");
      continue;
    }
    char dir[2048];
    snprintf(dir, sizeof dir, "%s", fg_test_model_path("hf-"));
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "%s", name);
    if (!ensure_checkpoint(dir, &p, real_vocab)) continue;
    /* the checkpoint HF saw */
    const cJSON *files = cJSON_GetObjectItem(c, "files_sha256");
    bool same = cJSON_GetArraySize(files) >= 2;
    for (const cJSON *f = files ? files->child : NULL; f; f = f->next) {
      char path[2400], hex[65] = "";
      snprintf(path, sizeof path, "%s/%s", dir, f->string);
      const bool ok = fg_test_sha256_file(path, hex) == 0 && strcmp(hex, f->valuestring) == 0;
      CHECK_MSG(ok, "%s: %s has SHA-256 %s, HF saw %s: gen-model's output changed (re-record the goldens, "
                "tools/hf/README.md) or %s is stale (delete it)", name, f->string, hex, f->valuestring, dir);
      same &= ok;
    }
    if (!same) continue;
    const char *out = scratch("golden-f32.gguf");
    fg_error err = {0};
    CHECK_OK(convert(dir, out, FG_TYPE_F32, 0, &err));
    fg_model *m = NULL;
    CHECK_OK(fg_model_load(out, NULL, &m, &err));
    if (!m) continue;
    fg_model_info info;
    fg_model_get_info(m, &info);
    CHECK_EQ_INT(info.n_vocab, cJSON_GetObjectItem(c, "n_vocab")->valueint);
    const cJSON *jids = cJSON_GetObjectItem(c, "ids"), *cols = cJSON_GetObjectItem(c, "columns");
    const cJSON *positions = cJSON_GetObjectItem(c, "positions"), *greedy = cJSON_GetObjectItem(c, "greedy");
    const size_t n_ids = (size_t)cJSON_GetArraySize(jids), n_pos = (size_t)cJSON_GetArraySize(positions);
    int32_t *ids = malloc(n_ids * sizeof *ids);
    size_t *at = malloc(n_pos * sizeof *at);
    size_t k = 0;
    for (const cJSON *x = jids->child; x; x = x->next) ids[k++] = x->valueint;
    k = 0;
    for (const cJSON *x = positions->child; x; x = x->next) at[k++] = (size_t)cJSON_GetObjectItem(x, "position")->valueint;
    float *ref = malloc(n_pos * (size_t)info.n_vocab * sizeof *ref);
    CHECK_OK(fg_reference_logits(m, ids, n_ids, at, n_pos, ref, &err));
    fg_session *s = NULL;
    CHECK_OK(fg_session_create(m, NULL, &s, &err));
    double worst_sess = 0, worst_ref = 0;
    size_t done = 0, i = 0;
    for (const cJSON *x = positions->child; x && s; x = x->next, i++) {
      CHECK_OK(fg_session_prefill(s, ids + done, at[i] + 1 - done, NULL));
      done = at[i] + 1;
      const float *lg = fg_session_logits(s);
      const double ds = golden_row(lg, cols, x), dr = golden_row(ref + i * info.n_vocab, cols, x);
      const int hf_top = cJSON_GetObjectItem(x, "argmax")->valueint;
      CHECK_MSG(ds <= GOLDEN_TOL && dr <= GOLDEN_TOL, "%s: position %zu: relative L-inf %.3g (session), %.3g (reference) > %g",
                name, at[i], ds, dr, GOLDEN_TOL);
      CHECK_MSG(argmax(lg, info.n_vocab) == hf_top && argmax(ref + i * info.n_vocab, info.n_vocab) == hf_top,
                "%s: position %zu: argmax %d (session) / %d (reference), HF %d", name, at[i], argmax(lg, info.n_vocab),
                argmax(ref + i * info.n_vocab, info.n_vocab), hf_top);
      worst_sess = fmax(worst_sess, ds);
      worst_ref = fmax(worst_ref, dr);
    }
    /* greedy continuation after the whole prompt */
    int32_t next = -1;
    int agree = 0, n_greedy = cJSON_GetArraySize(greedy);
    if (s && done < n_ids) CHECK_OK(fg_session_prefill(s, ids + done, n_ids - done, &next));
    else if (s) next = argmax(fg_session_logits(s), info.n_vocab);
    bool diverged = false;
    for (const cJSON *g = greedy->child; g && s; g = g->next) {
      if (!diverged && next == g->valueint) agree++;
      else diverged = true;
      CHECK_OK(fg_session_step(s, next, &next));
    }
    CHECK_MSG(agree == n_greedy, "%s: greedy ids agree with HF for %d of %d steps", name, agree, n_greedy);
    printf("%-30s %zu positions: relative L-inf %.2e (session), %.2e (reference); greedy %d/%d\n", name, n_pos,
           worst_sess, worst_ref, agree, n_greedy);
    if (real_vocab && !corpus_done) {
      test_tokenizer_corpus(m, name);
      corpus_done = true;
      /* FunctionGemma's seven tokens at 46..52, typed CONTROL (3), as llama.cpp's FunctionGemma files have them */
      gfile gf;
      gload(out, &gf);
      const fg_gguf_kv *ty = NULL;
      if (gf.ok) fg_gguf_get_arr(&gf.g, "tokenizer.ggml.token_type", FG_GGUF_INT32, &ty, NULL);
      for (int id = 46; ty && id <= 52; id++) {
        int32_t t;
        memcpy(&t, ty->arr_data + 4 * id, 4);
        CHECK_MSG(t == 3, "%s: token %d has type %d, want 3 (control)", name, id, t);
      }
      CHECK(ty != NULL);
      gfree(&gf);
    }
    fg_session_free(s);
    fg_model_free(m);
    free(ids);
    free(at);
    free(ref);
    remove(out);
  }
  CHECK_MSG(corpus_done || tiny_only, "no real-vocabulary case: the converted tokenizer was not compared with HF's");
  cJSON_Delete(root);
}

/* The corpus escapes, as tests/oracle/hf_tokenize.mjs decodes them: \n \t \r \\ . */
static size_t unescape_line(const char *s, size_t len, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '\\' && i + 1 < len) {
      const char d = s[i + 1];
      const char m = d == 'n' ? '\n' : d == 't' ? '\t' : d == 'r' ? '\r' : d == '\\' ? '\\' : 0;
      if (m) {
        out[o++] = m;
        i++;
        continue;
      }
    }
    out[o++] = s[i];
  }
  return o;
}

/* Every line of tests/data/tokenizer_corpus.txt: the converted model's ids equal the HF tokenizer's
 * (tests/data/tokenizer_corpus.hf.json, made by tests/oracle/hf_tokenize.mjs). */
static void test_tokenizer_corpus(const fg_model *m, const char *what) {
  size_t nc, ng;
  char *corpus = fg_test_read_file(FG_SOURCE_DIR "/tests/data/tokenizer_corpus.txt", &nc);
  char *gold = fg_test_read_file(FG_SOURCE_DIR "/tests/data/tokenizer_corpus.hf.json", &ng);
  CHECK_MSG(corpus && gold, "missing tests/data/tokenizer_corpus.txt or tokenizer_corpus.hf.json");
  cJSON *root = gold ? cJSON_Parse(gold) : NULL;
  const cJSON *c = root ? cJSON_GetObjectItem(root, "cases")->child : NULL;
  char *text = corpus ? malloc(nc + 1) : NULL;
  int lines = 0, equal = 0;
  for (char *line = corpus; corpus && line < corpus + nc;) {
    char *nl = memchr(line, '\n', (size_t)(corpus + nc - line));
    const size_t ll = nl ? (size_t)(nl - line) : (size_t)(corpus + nc - line);
    if (ll > 0 && !(ll >= 2 && line[0] == '#' && line[1] == ' ') && c) {
      const size_t tl = unescape_line(line, ll, text);
      const cJSON *ji = cJSON_GetObjectItem(c, "ids");
      size_t need = 0;
      int32_t ids[4096];
      const fg_status st = fg_tokenize(m, text, tl, 0, ids, 4096, &need);
      bool ok = st == FG_OK && (int)need == cJSON_GetArraySize(ji);
      size_t k = 0;
      for (const cJSON *x = ji ? ji->child : NULL; ok && x; x = x->next) ok = ids[k++] == x->valueint;
      CHECK_MSG(ok, "%s: corpus text \"%.*s\" tokenizes differently from the HF tokenizer", what, (int)FG_MIN(tl, 60), text);
      lines++;
      equal += ok;
      c = c->next;
    }
    line += ll + 1;
  }
  CHECK(lines >= 50);
  printf("tokenizer (%s, converted): %d/%d corpus texts equal to the HF tokenizer\n", what, equal, lines);
  free(text);
  cJSON_Delete(root);
  free(corpus);
  free(gold);
}

int main(int argc, char **argv) {
  const bool goldens_only = argc > 1 && strcmp(argv[1], "goldens") == 0;
  snprintf(g_dir, sizeof g_dir, "%s/convert-test-%ld", FG_TEST_MODELS, (long)getpid());
  fg_test_rm_rf(g_dir);
  if (mkdir(g_dir, 0777) != 0) {
    fprintf(stderr, "cannot create %s: %s\n", g_dir, strerror(errno));
    return 1;
  }
  if (!goldens_only) {
    test_safetensors_parser();
    test_errors();
    test_progress_and_alloc();
    test_equality();
    test_fit();
  }
  test_goldens();
  fg_test_rm_rf(g_dir);
  return fg_test_finish("test_convert");
}
