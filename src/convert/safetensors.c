/* safetensors.c — the safetensors header parser (see safetensors.h). */
#include "convert/safetensors.h"

#include "convert/json_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name;
  uint32_t size;
} k_dtypes[FG_ST_DTYPE_COUNT] = {
    [FG_ST_BOOL] = {"BOOL", 1},       [FG_ST_U8] = {"U8", 1},   [FG_ST_I8] = {"I8", 1},
    [FG_ST_F8_E5M2] = {"F8_E5M2", 1}, [FG_ST_F8_E4M3] = {"F8_E4M3", 1},
    [FG_ST_I16] = {"I16", 2},         [FG_ST_U16] = {"U16", 2}, [FG_ST_F16] = {"F16", 2},
    [FG_ST_BF16] = {"BF16", 2},       [FG_ST_I32] = {"I32", 4}, [FG_ST_U32] = {"U32", 4},
    [FG_ST_F32] = {"F32", 4},         [FG_ST_F64] = {"F64", 8}, [FG_ST_I64] = {"I64", 8},
    [FG_ST_U64] = {"U64", 8},
};

const char *fg_st_dtype_name(fg_st_dtype d) { return (unsigned)d < FG_ST_DTYPE_COUNT ? k_dtypes[d].name : "?"; }
uint32_t fg_st_dtype_size(fg_st_dtype d) { return (unsigned)d < FG_ST_DTYPE_COUNT ? k_dtypes[d].size : 0; }

static uint64_t get_u64le(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

fg_status fg_st_header_len(const uint8_t *data, size_t size, uint64_t file_size, uint64_t *n, fg_error *err) {
  if (size < 8 || file_size < 8)
    return fg_err(err, FG_ERR_FORMAT, "file of %llu bytes is too short for a safetensors header",
                  (unsigned long long)file_size);
  const uint64_t len = get_u64le(data);
  if (len < 2 || len > FG_ST_MAX_HEADER)
    return fg_err(err, FG_ERR_FORMAT, "header length %llu is outside 2..%u (not a safetensors file?)",
                  (unsigned long long)len, FG_ST_MAX_HEADER);
  if (len > file_size - 8)
    return fg_err(err, FG_ERR_FORMAT, "header of %llu bytes is longer than the file (%llu bytes): truncated",
                  (unsigned long long)len, (unsigned long long)file_size);
  *n = len;
  return FG_OK;
}

void fg_st_clear(fg_st_header *h) {
  if (!h) return;
  for (size_t i = 0; i < h->n; i++) fg_free(h->t[i].name);
  fg_free(h->t);
  memset(h, 0, sizeof *h);
}

const fg_st_tensor *fg_st_find(const fg_st_header *h, const char *name) {
  for (size_t i = 0; i < h->n; i++)
    if (strcmp(h->t[i].name, name) == 0) return &h->t[i];
  return NULL;
}

/* Message helper: "tensor 'NAME': ..." with the name cut to fit. */
#define TFAIL(code, ...)                                                    \
  do {                                                                      \
    char what_[200];                                                        \
    snprintf(what_, sizeof what_, __VA_ARGS__);                             \
    st = fg_err(err, code, "tensor '%.80s': %s", t->name, what_);            \
    goto fail;                                                              \
  } while (0)

static fg_status parse_entry(fg_js *js, fg_st_tensor *t, uint64_t data_bytes, fg_error *err) {
  fg_status st = FG_OK;
  bool have_dtype = false, have_shape = false, have_off = false, done;
  uint64_t off[2] = {0, 0};
  fg_js_str key;
  if (!fg_js_obj_begin(js)) TFAIL(FG_ERR_FORMAT, "%s", js->err);
  for (;;) {
    if (!fg_js_obj_next(js, &key, &done)) TFAIL(FG_ERR_FORMAT, "%s", js->err);
    if (done) break;
    if (fg_js_str_eq(key, "dtype")) {
      fg_js_str v;
      if (have_dtype) TFAIL(FG_ERR_FORMAT, "dtype given twice");
      if (!fg_js_string(js, &v)) TFAIL(FG_ERR_FORMAT, "dtype: %s", js->err);
      int found = -1;
      for (int d = 0; d < FG_ST_DTYPE_COUNT; d++)
        if (fg_js_str_eq(v, k_dtypes[d].name)) found = d;
      if (found < 0) TFAIL(FG_ERR_UNSUPPORTED, "unknown dtype \"%.*s\"", (int)FG_MIN(v.len, 16), v.ptr);
      t->dtype = (fg_st_dtype)found;
      have_dtype = true;
    } else if (fg_js_str_eq(key, "shape")) {
      if (have_shape) TFAIL(FG_ERR_FORMAT, "shape given twice");
      if (!fg_js_arr_begin(js)) TFAIL(FG_ERR_FORMAT, "shape: %s", js->err);
      for (;;) {
        if (!fg_js_arr_next(js, &done)) TFAIL(FG_ERR_FORMAT, "shape: %s", js->err);
        if (done) break;
        if (t->n_dims == FG_ST_MAX_DIMS) TFAIL(FG_ERR_UNSUPPORTED, "more than %d dimensions", FG_ST_MAX_DIMS);
        if (!fg_js_uint(js, &t->shape[t->n_dims])) TFAIL(FG_ERR_FORMAT, "shape: %s", js->err);
        t->n_dims++;
      }
      have_shape = true;
    } else if (fg_js_str_eq(key, "data_offsets")) {
      if (have_off) TFAIL(FG_ERR_FORMAT, "data_offsets given twice");
      int k = 0;
      if (!fg_js_arr_begin(js)) TFAIL(FG_ERR_FORMAT, "data_offsets: %s", js->err);
      for (;;) {
        if (!fg_js_arr_next(js, &done)) TFAIL(FG_ERR_FORMAT, "data_offsets: %s", js->err);
        if (done) break;
        if (k == 2) TFAIL(FG_ERR_FORMAT, "data_offsets has more than 2 entries");
        if (!fg_js_uint(js, &off[k])) TFAIL(FG_ERR_FORMAT, "data_offsets: %s", js->err);
        k++;
      }
      if (k != 2) TFAIL(FG_ERR_FORMAT, "data_offsets needs 2 entries, has %d", k);
      have_off = true;
    } else {
      if (!fg_js_skip(js)) TFAIL(FG_ERR_FORMAT, "%s", js->err);
    }
  }
  if (!have_dtype || !have_shape || !have_off)
    TFAIL(FG_ERR_FORMAT, "missing %s", !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
  if (off[0] > off[1])
    TFAIL(FG_ERR_FORMAT, "data_offsets [%llu, %llu] end before they begin", (unsigned long long)off[0],
          (unsigned long long)off[1]);
  if (off[1] > data_bytes)
    TFAIL(FG_ERR_FORMAT, "data_offsets [%llu, %llu] reach past the end of the file (%llu data bytes): truncated?",
          (unsigned long long)off[0], (unsigned long long)off[1], (unsigned long long)data_bytes);
  uint64_t bytes = fg_st_dtype_size(t->dtype);
  for (uint32_t d = 0; d < t->n_dims; d++)
    if (!fg_mul_u64(bytes, t->shape[d], &bytes)) TFAIL(FG_ERR_FORMAT, "shape overflows");
  if (bytes != off[1] - off[0])
    TFAIL(FG_ERR_FORMAT, "shape and dtype %s need %llu bytes, data_offsets [%llu, %llu] hold %llu",
          k_dtypes[t->dtype].name, (unsigned long long)bytes, (unsigned long long)off[0], (unsigned long long)off[1],
          (unsigned long long)(off[1] - off[0]));
  t->begin = off[0];
  t->end = off[1];
  return FG_OK;
fail:
  return st;
}

static int cmp_begin(const void *a, const void *b) {
  const fg_st_tensor *x = *(const fg_st_tensor *const *)a, *y = *(const fg_st_tensor *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp((*(const fg_st_tensor *const *)a)->name, (*(const fg_st_tensor *const *)b)->name);
}

fg_status fg_st_parse(const uint8_t *data, size_t size, uint64_t file_size, fg_st_header *out, fg_error *err) {
  if (!out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_st_parse: out is NULL");
  memset(out, 0, sizeof *out);
  if (!data && size) return fg_err(err, FG_ERR_INVALID_ARG, "fg_st_parse: data is NULL");
  uint64_t n;
  fg_status st = fg_st_header_len(data, size, file_size, &n, err);
  if (st != FG_OK) return st;
  if (n > size - 8)
    return fg_err(err, FG_ERR_FORMAT, "header of %llu bytes, only %zu given", (unsigned long long)n, size - 8);
  const uint64_t data_bytes = file_size - 8 - n;
  fg_st_header h = {0};
  h.data_start = 8 + n;
  size_t cap = 0;
  fg_st_tensor **order = NULL;

  fg_js js;
  fg_js_init(&js, (const char *)data + 8, (size_t)n);
  fg_js_str key;
  bool done, meta_seen = false;
  if (!fg_js_obj_begin(&js)) goto bad_json;
  for (;;) {
    if (!fg_js_obj_next(&js, &key, &done)) goto bad_json;
    if (done) break;
    if (fg_js_str_eq(key, "__metadata__")) {
      /* {string: string}; read only to check it */
      if (meta_seen) {
        st = fg_err(err, FG_ERR_FORMAT, "__metadata__ given twice");
        goto fail;
      }
      meta_seen = true;
      fg_js_str mk, mv;
      if (!fg_js_obj_begin(&js)) goto bad_json;
      for (;;) {
        if (!fg_js_obj_next(&js, &mk, &done)) goto bad_json;
        if (done) break;
        if (!fg_js_string(&js, &mv)) goto bad_json;
      }
      continue;
    }
    if (h.n == cap) {
      const size_t nc = cap ? cap * 2 : 64;
      fg_st_tensor *nt = fg_realloc(h.t, nc * sizeof *nt);
      if (!nt) {
        st = fg_err(err, FG_ERR_NOMEM, "out of memory for %zu tensor entries", nc);
        goto fail;
      }
      h.t = nt;
      cap = nc;
    }
    fg_st_tensor *t = &h.t[h.n];
    memset(t, 0, sizeof *t);
    const size_t kl = fg_js_str_decoded_len(key);
    if (kl == 0) {
      st = fg_err(err, FG_ERR_FORMAT, "a tensor with an empty name");
      goto fail;
    }
    if (!(t->name = fg_malloc(kl + 1))) {
      st = fg_err(err, FG_ERR_NOMEM, "out of memory for a tensor name");
      goto fail;
    }
    fg_js_str_decode(key, t->name);
    t->name[kl] = '\0';
    h.n++;
    if (memchr(t->name, '\0', kl)) {
      st = fg_err(err, FG_ERR_FORMAT, "tensor name with a NUL character");
      goto fail;
    }
    if ((st = parse_entry(&js, t, data_bytes, err)) != FG_OK) goto fail;
  }
  /* padding after the object: spaces only (the writers pad to a multiple of 8) */
  if (!fg_js_finish(&js)) goto bad_json;

  /* no duplicate names, no overlapping ranges */
  if (h.n > 0) {
    order = fg_malloc_array(h.n, sizeof *order);
    if (!order) {
      st = fg_err(err, FG_ERR_NOMEM, "out of memory");
      goto fail;
    }
    for (size_t i = 0; i < h.n; i++) order[i] = &h.t[i];
    qsort(order, h.n, sizeof *order, cmp_name);
    for (size_t i = 1; i < h.n; i++)
      if (strcmp(order[i - 1]->name, order[i]->name) == 0) {
        st = fg_err(err, FG_ERR_FORMAT, "tensor '%.80s' appears twice in the header", order[i]->name);
        goto fail;
      }
    qsort(order, h.n, sizeof *order, cmp_begin);
    for (size_t i = 1; i < h.n; i++) {
      const fg_st_tensor *a = order[i - 1], *b = order[i];
      if (b->begin < a->end) {
        st = fg_err(err, FG_ERR_FORMAT, "tensors '%.60s' [%llu, %llu] and '%.60s' [%llu, %llu] overlap", a->name,
                    (unsigned long long)a->begin, (unsigned long long)a->end, b->name, (unsigned long long)b->begin,
                    (unsigned long long)b->end);
        goto fail;
      }
    }
  }
  for (size_t i = 0; i < h.n; i++) {
    h.t[i].begin += h.data_start; /* absolute; cannot overflow: end <= data_bytes */
    h.t[i].end += h.data_start;
  }
  fg_free(order);
  *out = h;
  return FG_OK;

bad_json:
  st = fg_err(err, FG_ERR_FORMAT, "malformed header JSON: %s", js.err);
fail:
  fg_free(order);
  fg_st_clear(&h);
  return st;
}
