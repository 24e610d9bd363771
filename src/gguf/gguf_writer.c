/* gguf_writer.c — streaming GGUF v3 writer: metadata and tensor infos are collected in memory, the
 * header goes out in fg_gguf_writer_begin, then tensor data is streamed one tensor at a time (each
 * aligned, zero padding in between), so a generator never holds all weights at once.
 *
 * The file is assumed to start at the stream's position when fg_gguf_writer_begin is called (normally
 * a freshly opened file). The first failing set/add call is remembered and reported again by begin,
 * so a caller that forgets to check a status still cannot produce a file that silently lacks a key. */
#include "gguf/gguf.h"

#include "tensor/dtype.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------------
// State

typedef struct fg_gw_kv {
  char *key;      /* NUL-terminated copy */
  uint8_t *val;   /* (val_len) encoded value type (u32) followed by the payload */
  size_t val_len;
} fg_gw_kv;

typedef struct fg_gw_tensor {
  char *name;
  uint32_t type;
  uint32_t n_dims;
  uint64_t ne[FG_GGUF_MAX_DIMS];
  uint64_t nbytes;
  uint64_t offset; /* relative to the data section; assigned by begin */
} fg_gw_tensor;

enum { FG_GW_BUILDING = 0, FG_GW_DATA = 1, FG_GW_DONE = 2, FG_GW_FAILED = 3 };

struct fg_gguf_writer {
  fg_gw_kv *kv;         /* (n_kv) in insertion order */
  size_t n_kv, cap_kv;
  fg_gw_tensor *t;      /* (n_t) in insertion order = file order */
  size_t n_t, cap_t;
  uint64_t alignment;
  int state;
  size_t next;          /* next tensor whose data is expected */
  uint64_t data_pos;    /* bytes written into the data section so far */
  uint64_t part_done;   /* bytes of tensor `next` written so far by fg_gguf_writer_tensor_part */
  fg_error first_err;   /* first failure of a set/add call (code FG_OK if none) */
};

static fg_status gw_fail(fg_gguf_writer *w, fg_status code, const char *fmt, ...) FG_PRINTF(3, 4);
static fg_status gw_fail(fg_gguf_writer *w, fg_status code, const char *fmt, ...) {
  if (w && w->first_err.code == FG_OK) {
    va_list ap;
    va_start(ap, fmt);
    fg_verr(&w->first_err, code, fmt, ap);
    va_end(ap);
  }
  return code;
}

fg_gguf_writer *fg_gguf_writer_create(void) {
  fg_gguf_writer *w = fg_calloc(1, sizeof *w);
  if (!w) return NULL;
  w->alignment = FG_GGUF_DEFAULT_ALIGNMENT;
  fg_err_clear(&w->first_err);
  return w;
}

void fg_gguf_writer_free(fg_gguf_writer *w) {
  if (!w) return;
  for (size_t i = 0; i < w->n_kv; i++) {
    fg_free(w->kv[i].key);
    fg_free(w->kv[i].val);
  }
  for (size_t i = 0; i < w->n_t; i++) fg_free(w->t[i].name);
  fg_free(w->kv);
  fg_free(w->t);
  fg_free(w);
}

// ----------------------------------------------------------------------------------------------------
// Little-endian encoding

static void put_u16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t elem_size(fg_gguf_type t) {
  switch (t) {
    case FG_GGUF_UINT8: case FG_GGUF_INT8: case FG_GGUF_BOOL: return 1;
    case FG_GGUF_UINT16: case FG_GGUF_INT16: return 2;
    case FG_GGUF_UINT32: case FG_GGUF_INT32: case FG_GGUF_FLOAT32: return 4;
    case FG_GGUF_UINT64: case FG_GGUF_INT64: case FG_GGUF_FLOAT64: return 8;
    default: return 0;
  }
}

/* Encodes one native element of a fixed-size type at dst (little-endian). */
static void put_elem(uint8_t *dst, const uint8_t *src, fg_gguf_type t) {
  switch (elem_size(t)) {
    case 1:
      if (t == FG_GGUF_BOOL) {
        bool b;
        memcpy(&b, src, sizeof b);
        dst[0] = b ? 1 : 0;
      } else {
        dst[0] = src[0];
      }
      break;
    case 2: {
      uint16_t v;
      memcpy(&v, src, 2);
      put_u16(dst, v);
      break;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, src, 4);
      put_u32(dst, v);
      break;
    }
    case 8: {
      uint64_t v;
      memcpy(&v, src, 8);
      put_u64(dst, v);
      break;
    }
    default: FG_ASSERT(0);
  }
}

// ----------------------------------------------------------------------------------------------------
// Metadata

/* Takes ownership of val (encoded type + payload). A key set twice keeps its position, new value. */
static fg_status gw_set(fg_gguf_writer *w, const char *key, uint8_t *val, size_t val_len) {
  for (size_t i = 0; i < w->n_kv; i++) {
    if (strcmp(w->kv[i].key, key) == 0) {
      fg_free(w->kv[i].val);
      w->kv[i].val = val;
      w->kv[i].val_len = val_len;
      return FG_OK;
    }
  }
  if (w->n_kv == w->cap_kv) {
    size_t cap = w->cap_kv ? w->cap_kv * 2 : 16;
    fg_gw_kv *kv = fg_realloc(w->kv, cap * sizeof *kv);
    if (!kv) goto nomem;
    w->kv = kv;
    w->cap_kv = cap;
  }
  char *k = fg_strndup(key, strlen(key));
  if (!k) goto nomem;
  w->kv[w->n_kv].key = k;
  w->kv[w->n_kv].val = val;
  w->kv[w->n_kv].val_len = val_len;
  w->n_kv++;
  return FG_OK;
nomem:
  fg_free(val);
  return gw_fail(w, FG_ERR_NOMEM, "key '%s': out of memory", key);
}

static fg_status gw_check(fg_gguf_writer *w, const char *key) {
  if (!w) return FG_ERR_INVALID_ARG;
  if (!key || !key[0]) return gw_fail(w, FG_ERR_INVALID_ARG, "gguf writer: empty or NULL key");
  if (w->state != FG_GW_BUILDING)
    return gw_fail(w, FG_ERR_INVALID_ARG, "key '%s': metadata added after fg_gguf_writer_begin", key);
  return FG_OK;
}

static fg_status gw_set_scalar(fg_gguf_writer *w, const char *key, fg_gguf_type t, const void *v) {
  fg_status st = gw_check(w, key);
  if (st != FG_OK) return st;
  if (strcmp(key, FG_KEY_ALIGNMENT) == 0) {
    uint32_t a;
    if (t != FG_GGUF_UINT32) return gw_fail(w, FG_ERR_INVALID_ARG, "key 'general.alignment': must be u32");
    memcpy(&a, v, sizeof a);
    if (a == 0 || (a & (a - 1)) != 0)
      return gw_fail(w, FG_ERR_INVALID_ARG, "key 'general.alignment': %" PRIu32 " is not a power of two", a);
    w->alignment = a;
  }
  uint32_t n = elem_size(t);
  uint8_t *val = fg_malloc(4 + n);
  if (!val) return gw_fail(w, FG_ERR_NOMEM, "key '%s': out of memory", key);
  put_u32(val, (uint32_t)t);
  put_elem(val + 4, v, t);
  return gw_set(w, key, val, 4 + n);
}

fg_status fg_gguf_writer_set_u32(fg_gguf_writer *w, const char *key, uint32_t v) {
  return gw_set_scalar(w, key, FG_GGUF_UINT32, &v);
}
fg_status fg_gguf_writer_set_i32(fg_gguf_writer *w, const char *key, int32_t v) {
  return gw_set_scalar(w, key, FG_GGUF_INT32, &v);
}
fg_status fg_gguf_writer_set_f32(fg_gguf_writer *w, const char *key, float v) {
  return gw_set_scalar(w, key, FG_GGUF_FLOAT32, &v);
}
fg_status fg_gguf_writer_set_bool(fg_gguf_writer *w, const char *key, bool v) {
  return gw_set_scalar(w, key, FG_GGUF_BOOL, &v);
}

fg_status fg_gguf_writer_set_str(fg_gguf_writer *w, const char *key, const char *v) {
  fg_status st = gw_check(w, key);
  if (st != FG_OK) return st;
  if (!v) return gw_fail(w, FG_ERR_INVALID_ARG, "key '%s': NULL string", key);
  if (strcmp(key, FG_KEY_ALIGNMENT) == 0)
    return gw_fail(w, FG_ERR_INVALID_ARG, "key 'general.alignment': must be u32");
  size_t len = strlen(v);
  if (len > SIZE_MAX - 12) return gw_fail(w, FG_ERR_INVALID_ARG, "key '%s': string too long", key);
  uint8_t *val = fg_malloc(12 + len);
  if (!val) return gw_fail(w, FG_ERR_NOMEM, "key '%s': out of memory", key);
  put_u32(val, FG_GGUF_STRING);
  put_u64(val + 4, len);
  memcpy(val + 12, v, len);
  return gw_set(w, key, val, 12 + len);
}

fg_status fg_gguf_writer_set_arr(fg_gguf_writer *w, const char *key, fg_gguf_type elem_type, const void *data,
                                 size_t n) {
  fg_status st = gw_check(w, key);
  if (st != FG_OK) return st;
  uint32_t es = (unsigned)elem_type < FG_GGUF_TYPE_COUNT ? elem_size(elem_type) : 0;
  if (es == 0)
    return gw_fail(w, FG_ERR_INVALID_ARG, "key '%s': array element type %d is not a fixed-size scalar "
                   "(use fg_gguf_writer_set_arr_str for strings)", key, (int)elem_type);
  if (!data && n != 0) return gw_fail(w, FG_ERR_INVALID_ARG, "key '%s': NULL array data", key);
  if (strcmp(key, FG_KEY_ALIGNMENT) == 0)
    return gw_fail(w, FG_ERR_INVALID_ARG, "key 'general.alignment': must be u32");
  if (n > (SIZE_MAX - 16) / es) return gw_fail(w, FG_ERR_NOMEM, "key '%s': array too large", key);
  size_t len = 16 + n * es;
  uint8_t *val = fg_malloc(len); /* type, elem type, count, (n * es) payload */
  if (!val) return gw_fail(w, FG_ERR_NOMEM, "key '%s': out of memory for %zu elements", key, n);
  put_u32(val, FG_GGUF_ARRAY);
  put_u32(val + 4, (uint32_t)elem_type);
  put_u64(val + 8, n);
  /* native element width: bool arrays are arrays of C bool */
  size_t src_es = elem_type == FG_GGUF_BOOL ? sizeof(bool) : es;
  const uint8_t *src = data;
  for (size_t i = 0; i < n; i++) put_elem(val + 16 + i * es, src + i * src_es, elem_type);
  return gw_set(w, key, val, len);
}

fg_status fg_gguf_writer_set_arr_str(fg_gguf_writer *w, const char *key, const char *const *strs,
                                     const size_t *lens, size_t n) {
  fg_status st = gw_check(w, key);
  if (st != FG_OK) return st;
  if (!strs && n != 0) return gw_fail(w, FG_ERR_INVALID_ARG, "key '%s': NULL string array", key);
  if (strcmp(key, FG_KEY_ALIGNMENT) == 0)
    return gw_fail(w, FG_ERR_INVALID_ARG, "key 'general.alignment': must be u32");
  uint64_t len = 16;
  for (size_t i = 0; i < n; i++) {
    if (!strs[i] && (!lens || lens[i] != 0))
      return gw_fail(w, FG_ERR_INVALID_ARG, "key '%s': string #%zu is NULL", key, i);
    uint64_t li = lens ? lens[i] : strlen(strs[i]);
    if (!fg_add_u64(len, 8, &len) || !fg_add_u64(len, li, &len))
      return gw_fail(w, FG_ERR_NOMEM, "key '%s': array too large", key);
  }
  size_t total;
  if (!fg_u64_to_size(len, &total)) return gw_fail(w, FG_ERR_NOMEM, "key '%s': array too large", key);
  uint8_t *val = fg_malloc(total); /* type, elem type, count, n x (u64 length + bytes) */
  if (!val) return gw_fail(w, FG_ERR_NOMEM, "key '%s': out of memory for %zu strings", key, n);
  put_u32(val, FG_GGUF_ARRAY);
  put_u32(val + 4, FG_GGUF_STRING);
  put_u64(val + 8, n);
  size_t pos = 16;
  for (size_t i = 0; i < n; i++) {
    size_t li = lens ? lens[i] : strlen(strs[i]);
    put_u64(val + pos, li);
    if (li) memcpy(val + pos + 8, strs[i], li);
    pos += 8 + li;
  }
  return gw_set(w, key, val, total);
}

// ----------------------------------------------------------------------------------------------------
// Copying metadata from a parsed file

static uint64_t get_u64le(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

fg_status fg_gguf_writer_copy_kv(fg_gguf_writer *w, const fg_gguf_kv *kv) {
  if (!w) return FG_ERR_INVALID_ARG;
  if (!kv || !kv->key.ptr || kv->key.len == 0 || memchr(kv->key.ptr, '\0', kv->key.len))
    return gw_fail(w, FG_ERR_INVALID_ARG, "gguf writer: copied key is empty or holds a NUL byte");
  char *key = fg_strndup(kv->key.ptr, kv->key.len);
  if (!key) return gw_fail(w, FG_ERR_NOMEM, "gguf writer: out of memory for a key");
  fg_status st = gw_check(w, key);
  uint8_t *val = NULL;
  size_t len = 0;
  if (st != FG_OK) goto done;
  if ((unsigned)kv->type >= FG_GGUF_TYPE_COUNT) {
    st = gw_fail(w, FG_ERR_INVALID_ARG, "key '%s': value type %d is unknown", key, (int)kv->type);
    goto done;
  }
  if (kv->type == FG_GGUF_STRING) {
    if (!kv->str.ptr && kv->str.len) {
      st = gw_fail(w, FG_ERR_INVALID_ARG, "key '%s': NULL string", key);
      goto done;
    }
    if (kv->str.len > SIZE_MAX - 12) {
      st = gw_fail(w, FG_ERR_NOMEM, "key '%s': string too long", key);
      goto done;
    }
    len = 12 + kv->str.len;
    if (!(val = fg_malloc(len))) goto nomem;
    put_u32(val, FG_GGUF_STRING);
    put_u64(val + 4, kv->str.len);
    if (kv->str.len) memcpy(val + 12, kv->str.ptr, kv->str.len);
  } else if (kv->type == FG_GGUF_ARRAY) {
    /* the payload is still in the file's little-endian encoding: copy it, measuring string elements */
    uint64_t payload = 0;
    const uint32_t es = (unsigned)kv->arr_type < FG_GGUF_TYPE_COUNT ? elem_size(kv->arr_type) : 0;
    if (kv->arr_type == FG_GGUF_STRING) {
      for (uint64_t i = 0; i < kv->arr_n; i++) {
        const uint64_t li = get_u64le(kv->arr_data + payload);
        if (!fg_add_u64(payload, 8, &payload) || !fg_add_u64(payload, li, &payload)) {
          st = gw_fail(w, FG_ERR_INVALID_ARG, "key '%s': array too large", key);
          goto done;
        }
      }
    } else if (es == 0 || !fg_mul_u64(kv->arr_n, es, &payload)) {
      st = gw_fail(w, FG_ERR_INVALID_ARG, "key '%s': array element type %d cannot be copied", key, (int)kv->arr_type);
      goto done;
    }
    uint64_t total64;
    if (!fg_add_u64(payload, 16, &total64) || !fg_u64_to_size(total64, &len)) {
      st = gw_fail(w, FG_ERR_NOMEM, "key '%s': array too large", key);
      goto done;
    }
    if (payload && !kv->arr_data) {
      st = gw_fail(w, FG_ERR_INVALID_ARG, "key '%s': NULL array data", key);
      goto done;
    }
    if (!(val = fg_malloc(len))) goto nomem;
    put_u32(val, FG_GGUF_ARRAY);
    put_u32(val + 4, (uint32_t)kv->arr_type);
    put_u64(val + 8, kv->arr_n);
    if (payload) memcpy(val + 16, kv->arr_data, len - 16);
  } else {
    if (strcmp(key, FG_KEY_ALIGNMENT) == 0) {
      if (kv->type != FG_GGUF_UINT32 || kv->v.u64 > UINT32_MAX) {
        st = gw_fail(w, FG_ERR_INVALID_ARG, "key 'general.alignment': must be u32");
        goto done;
      }
      st = fg_gguf_writer_set_u32(w, key, (uint32_t)kv->v.u64);
      goto done;
    }
    const uint32_t n = elem_size(kv->type);
    len = 4 + n;
    if (!(val = fg_malloc(len))) goto nomem;
    put_u32(val, (uint32_t)kv->type);
    if (kv->type == FG_GGUF_FLOAT32) {
      const float f = (float)kv->v.f64; /* exact: the parser widened a float */
      uint32_t bits;
      memcpy(&bits, &f, sizeof bits);
      put_u32(val + 4, bits);
    } else if (kv->type == FG_GGUF_FLOAT64) {
      uint64_t bits;
      memcpy(&bits, &kv->v.f64, sizeof bits);
      put_u64(val + 4, bits);
    } else if (kv->type == FG_GGUF_BOOL) {
      val[4] = kv->v.b ? 1 : 0;
    } else {
      /* integers: the low n bytes of the widened value (two's complement for signed types) */
      const uint64_t u = kv->v.u64;
      for (uint32_t i = 0; i < n; i++) val[4 + i] = (uint8_t)(u >> (8 * i));
    }
  }
  st = gw_set(w, key, val, len); /* takes val */
  val = NULL;
  goto done;
nomem:
  st = gw_fail(w, FG_ERR_NOMEM, "key '%s': out of memory", key);
done:
  fg_free(val);
  fg_free(key);
  return st;
}

// ----------------------------------------------------------------------------------------------------
// Tensor infos

fg_status fg_gguf_writer_add_tensor(fg_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                    const uint64_t *ne) {
  if (!w) return FG_ERR_INVALID_ARG;
  if (!name || !name[0]) return gw_fail(w, FG_ERR_INVALID_ARG, "gguf writer: empty or NULL tensor name");
  if (w->state != FG_GW_BUILDING)
    return gw_fail(w, FG_ERR_INVALID_ARG, "tensor '%s': added after fg_gguf_writer_begin", name);
  if (n_dims == 0 || n_dims > FG_GGUF_MAX_DIMS || !ne)
    return gw_fail(w, FG_ERR_INVALID_ARG, "tensor '%s': n_dims %" PRIu32 " is outside 1..4", name, n_dims);
  fg_gw_tensor t;
  memset(&t, 0, sizeof t);
  t.type = type;
  t.n_dims = n_dims;
  uint64_t rows = 1;
  for (uint32_t d = 0; d < FG_GGUF_MAX_DIMS; d++) {
    t.ne[d] = d < n_dims ? ne[d] : 1;
    if (t.ne[d] == 0 || t.ne[d] > (uint64_t)INT64_MAX)
      return gw_fail(w, FG_ERR_INVALID_ARG, "tensor '%s': ne[%" PRIu32 "] = %" PRIu64 " is not positive", name, d,
                     t.ne[d]);
    if (d > 0 && !fg_mul_u64(rows, t.ne[d], &rows))
      return gw_fail(w, FG_ERR_INVALID_ARG, "tensor '%s': shape overflows", name);
  }
  const fg_type_traits *tr = fg_type_traits_get(type);
  if (!tr) return gw_fail(w, FG_ERR_UNSUPPORTED, "tensor '%s': type id %" PRIu32 " is not supported", name, type);
  uint64_t row_bytes, nel;
  if (!fg_type_row_bytes(type, t.ne[0], &row_bytes))
    return gw_fail(w, FG_ERR_INVALID_ARG, "tensor '%s': row length %" PRIu64 " is not a multiple of the %s block "
                   "size %" PRIu32, name, t.ne[0], tr->name, tr->block_size);
  if (!fg_mul_u64(row_bytes, rows, &t.nbytes) || !fg_mul_u64(t.ne[0], rows, &nel) || nel > (uint64_t)INT64_MAX)
    return gw_fail(w, FG_ERR_INVALID_ARG, "tensor '%s': shape overflows", name);
  for (size_t i = 0; i < w->n_t; i++)
    if (strcmp(w->t[i].name, name) == 0) return gw_fail(w, FG_ERR_INVALID_ARG, "tensor '%s': added twice", name);
  if (w->n_t == w->cap_t) {
    size_t cap = w->cap_t ? w->cap_t * 2 : 64;
    fg_gw_tensor *nt = fg_realloc(w->t, cap * sizeof *nt);
    if (!nt) return gw_fail(w, FG_ERR_NOMEM, "tensor '%s': out of memory", name);
    w->t = nt;
    w->cap_t = cap;
  }
  t.name = fg_strndup(name, strlen(name));
  if (!t.name) return gw_fail(w, FG_ERR_NOMEM, "tensor '%s': out of memory", name);
  w->t[w->n_t++] = t;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------------
// Output

static fg_status wr(FILE *f, const void *p, size_t n, fg_error *err) {
  if (n == 0) return FG_OK;
  errno = 0;
  if (fwrite(p, 1, n, f) != n)
    return fg_err(err, FG_ERR_IO, "gguf writer: write of %zu bytes failed: %s", n,
                  errno ? strerror(errno) : "short write");
  return FG_OK;
}

static fg_status wr_u32(FILE *f, uint32_t v, fg_error *err) {
  uint8_t b[4];
  put_u32(b, v);
  return wr(f, b, 4, err);
}

static fg_status wr_u64(FILE *f, uint64_t v, fg_error *err) {
  uint8_t b[8];
  put_u64(b, v);
  return wr(f, b, 8, err);
}

static fg_status wr_str(FILE *f, const char *s, fg_error *err) {
  size_t n = strlen(s);
  fg_status st = wr_u64(f, n, err);
  return st != FG_OK ? st : wr(f, s, n, err);
}

static fg_status wr_zeros(FILE *f, uint64_t n, fg_error *err) {
  static const uint8_t zeros[256];
  while (n > 0) {
    size_t k = n < sizeof zeros ? (size_t)n : sizeof zeros;
    fg_status st = wr(f, zeros, k, err);
    if (st != FG_OK) return st;
    n -= k;
  }
  return FG_OK;
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

fg_status fg_gguf_writer_begin(fg_gguf_writer *w, FILE *f, fg_error *err) {
  if (!w || !f) return fg_err(err, FG_ERR_INVALID_ARG, "fg_gguf_writer_begin: NULL argument");
  if (w->first_err.code != FG_OK) return fg_err(err, w->first_err.code, "%s", w->first_err.msg);
  if (w->state != FG_GW_BUILDING) return fg_err(err, FG_ERR_INVALID_ARG, "fg_gguf_writer_begin called twice");

  /* lay out the data section */
  uint64_t pos = 0;
  for (size_t i = 0; i < w->n_t; i++) {
    uint64_t off = align_up(pos, w->alignment);
    if (off < pos || !fg_add_u64(off, w->t[i].nbytes, &pos))
      return fg_err(err, FG_ERR_INVALID_ARG, "tensor '%s': data section overflows", w->t[i].name);
    w->t[i].offset = off;
  }

  w->state = FG_GW_FAILED; /* until the header is out */
  uint64_t written = 0;
  fg_status st;
  if ((st = wr_u32(f, FG_GGUF_MAGIC, err)) || (st = wr_u32(f, 3, err)) || (st = wr_u64(f, w->n_t, err)) ||
      (st = wr_u64(f, w->n_kv, err)))
    return st;
  written += 24;
  for (size_t i = 0; i < w->n_kv; i++) {
    if ((st = wr_str(f, w->kv[i].key, err)) || (st = wr(f, w->kv[i].val, w->kv[i].val_len, err))) return st;
    written += 8 + strlen(w->kv[i].key) + w->kv[i].val_len;
  }
  for (size_t i = 0; i < w->n_t; i++) {
    const fg_gw_tensor *t = &w->t[i];
    if ((st = wr_str(f, t->name, err)) || (st = wr_u32(f, t->n_dims, err))) return st;
    for (uint32_t d = 0; d < t->n_dims; d++)
      if ((st = wr_u64(f, t->ne[d], err))) return st;
    if ((st = wr_u32(f, t->type, err)) || (st = wr_u64(f, t->offset, err))) return st;
    written += 8 + strlen(t->name) + 4 + 8u * t->n_dims + 4 + 8;
  }
  if ((st = wr_zeros(f, align_up(written, w->alignment) - written, err))) return st;
  w->state = FG_GW_DATA;
  w->next = 0;
  w->data_pos = 0;
  return FG_OK;
}

static fg_status data_state_ok(const fg_gguf_writer *w, const char *fn, fg_error *err) {
  if (w->state != FG_GW_DATA)
    return fg_err(err, FG_ERR_INVALID_ARG, "%s: %s", fn,
                  w->state == FG_GW_BUILDING ? "header not written yet (call fg_gguf_writer_begin)"
                  : w->state == FG_GW_DONE   ? "writer already ended"
                                             : "an earlier write failed");
  if (w->next >= w->n_t)
    return fg_err(err, FG_ERR_INVALID_ARG, "%s: all %zu tensors already written", fn, w->n_t);
  return FG_OK;
}

fg_status fg_gguf_writer_tensor_part(fg_gguf_writer *w, FILE *f, const void *data, size_t nbytes, fg_error *err) {
  if (!w || !f || (!data && nbytes)) return fg_err(err, FG_ERR_INVALID_ARG, "fg_gguf_writer_tensor_part: NULL argument");
  fg_status st = data_state_ok(w, "fg_gguf_writer_tensor_part", err);
  if (st != FG_OK) return st;
  const fg_gw_tensor *t = &w->t[w->next];
  if ((uint64_t)nbytes > t->nbytes - w->part_done)
    return fg_err(err, FG_ERR_INVALID_ARG, "tensor '%s': %zu more bytes of data, only %" PRIu64 " of %" PRIu64 " left",
                  t->name, nbytes, t->nbytes - w->part_done, t->nbytes);
  if (w->part_done == 0 && (st = wr_zeros(f, t->offset - w->data_pos, err)) != FG_OK) {
    w->state = FG_GW_FAILED;
    return st;
  }
  if ((st = wr(f, data, nbytes, err)) != FG_OK) {
    w->state = FG_GW_FAILED;
    return st;
  }
  w->part_done += nbytes;
  w->data_pos = t->offset + w->part_done;
  if (w->part_done == t->nbytes) {
    w->next++;
    w->part_done = 0;
  }
  return FG_OK;
}

fg_status fg_gguf_writer_tensor_data(fg_gguf_writer *w, FILE *f, const void *data, size_t nbytes, fg_error *err) {
  if (!w || !f || (!data && nbytes)) return fg_err(err, FG_ERR_INVALID_ARG, "fg_gguf_writer_tensor_data: NULL argument");
  fg_status st = data_state_ok(w, "fg_gguf_writer_tensor_data", err);
  if (st != FG_OK) return st;
  const fg_gw_tensor *t = &w->t[w->next];
  if ((uint64_t)nbytes != t->nbytes || w->part_done != 0)
    return fg_err(err, FG_ERR_INVALID_ARG, "tensor '%s': got %zu bytes of data, its shape needs %" PRIu64, t->name,
                  nbytes, t->nbytes - w->part_done);
  return fg_gguf_writer_tensor_part(w, f, data, nbytes, err);
}

fg_status fg_gguf_writer_end(fg_gguf_writer *w, FILE *f, fg_error *err) {
  if (!w || !f) return fg_err(err, FG_ERR_INVALID_ARG, "fg_gguf_writer_end: NULL argument");
  if (w->state != FG_GW_DATA)
    return fg_err(err, FG_ERR_INVALID_ARG, "fg_gguf_writer_end: %s",
                  w->state == FG_GW_BUILDING ? "header not written yet" : w->state == FG_GW_DONE ? "called twice"
                                                                                               : "an earlier write failed");
  if (w->next < w->n_t)
    return fg_err(err, FG_ERR_INVALID_ARG, "tensor '%s': data not written (%zu of %zu tensors done, %" PRIu64
                  " of its bytes)", w->t[w->next].name, w->next, w->n_t, w->part_done);
  errno = 0;
  if (fflush(f) != 0 || ferror(f))
    return fg_err(err, FG_ERR_IO, "gguf writer: flush failed: %s", errno ? strerror(errno) : "stream error");
  w->state = FG_GW_DONE;
  return FG_OK;
}
