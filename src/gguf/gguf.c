/* gguf.c — GGUF v2/v3 parser over bytes in memory, lookups and typed getters.
 *
 * The parser never trusts a count, length or offset from the file: every read is checked against the
 * bytes left (a subtraction, never an addition that could wrap), every count that sizes an allocation
 * is first bounded by the bytes it needs in the file, and shape arithmetic goes through the overflow-
 * checked helpers in fg_internal.h. Views (strings, arrays, tensor data) point into the caller's buffer. */
#include "gguf/gguf.h"

#include "tensor/dtype.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Lower bounds on the encoded size of one entry, used to refuse absurd counts before allocating. */
#define FG_GGUF_MIN_KV_BYTES 13u     /* key length (8) + type (4) + one-byte value */
#define FG_GGUF_MIN_TENSOR_BYTES 32u /* name length (8) + n_dims (4) + ne[0] (8) + type (4) + offset (8) */
#define FG_GGUF_NAME_SHOWN 64u       /* longest key/tensor name quoted in a message */

// ----------------------------------------------------------------------------------------------------
// Value types

static const char *const k_type_names[FG_GGUF_TYPE_COUNT] = {
  "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};

/* Encoded size of a fixed-size value; 0 for STRING and ARRAY. */
static uint32_t gguf_scalar_size(fg_gguf_type t) {
  switch (t) {
    case FG_GGUF_UINT8: case FG_GGUF_INT8: case FG_GGUF_BOOL: return 1;
    case FG_GGUF_UINT16: case FG_GGUF_INT16: return 2;
    case FG_GGUF_UINT32: case FG_GGUF_INT32: case FG_GGUF_FLOAT32: return 4;
    case FG_GGUF_UINT64: case FG_GGUF_INT64: case FG_GGUF_FLOAT64: return 8;
    default: return 0;
  }
}

static const char *gguf_type_name(fg_gguf_type t) {
  return (unsigned)t < FG_GGUF_TYPE_COUNT ? k_type_names[t] : "?";
}

static bool gguf_type_is_unsigned(fg_gguf_type t) {
  return t == FG_GGUF_UINT8 || t == FG_GGUF_UINT16 || t == FG_GGUF_UINT32 || t == FG_GGUF_UINT64;
}

static bool gguf_type_is_signed(fg_gguf_type t) {
  return t == FG_GGUF_INT8 || t == FG_GGUF_INT16 || t == FG_GGUF_INT32 || t == FG_GGUF_INT64;
}

// ----------------------------------------------------------------------------------------------------
// Little-endian loads (the buffer has no alignment guarantee)

static uint16_t load_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t load_u32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t load_u64(const uint8_t *p) { return (uint64_t)load_u32(p) | ((uint64_t)load_u32(p + 4) << 32); }

/* Copies a name for a message: at most FG_GGUF_NAME_SHOWN bytes, non-printable bytes as '?'. */
static void show_name(char *dst, size_t cap, fg_gguf_str s) {
  size_t n = s.len < FG_GGUF_NAME_SHOWN ? s.len : FG_GGUF_NAME_SHOWN;
  if (n + 4 > cap) n = cap > 4 ? cap - 4 : 0;
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s.ptr[i];
    dst[j++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
  }
  if (n < s.len) {
    dst[j++] = '.';
    dst[j++] = '.';
    dst[j++] = '.';
  }
  dst[j] = '\0';
}

// ----------------------------------------------------------------------------------------------------
// Bounded reader

typedef struct fg_rd {
  const uint8_t *base;
  uint64_t size;
  uint64_t off;     /* invariant: off <= size */
  fg_error *err;
  char where[112];  /* what is being read, for messages: "header", "key 'x'", "tensor 'y'" */
} fg_rd;

static uint64_t rd_left(const fg_rd *r) { return r->size - r->off; }

static fg_status rd_truncated(fg_rd *r, uint64_t need, const char *what) {
  return fg_err(r->err, FG_ERR_FORMAT, "%s: file truncated in %s at byte %" PRIu64 " (need %" PRIu64
                " bytes, %" PRIu64 " left)", r->where, what, r->off, need, rd_left(r));
}

static fg_status rd_u32(fg_rd *r, uint32_t *v, const char *what) {
  if (rd_left(r) < 4) return rd_truncated(r, 4, what);
  *v = load_u32(r->base + r->off);
  r->off += 4;
  return FG_OK;
}

static fg_status rd_u64(fg_rd *r, uint64_t *v, const char *what) {
  if (rd_left(r) < 8) return rd_truncated(r, 8, what);
  *v = load_u64(r->base + r->off);
  r->off += 8;
  return FG_OK;
}

static fg_status rd_str(fg_rd *r, fg_gguf_str *s, const char *what) {
  uint64_t len = 0;
  fg_status st = rd_u64(r, &len, what);
  if (st != FG_OK) return st;
  if (len > rd_left(r))
    return fg_err(r->err, FG_ERR_FORMAT, "%s: %s length %" PRIu64 " at byte %" PRIu64
                  " exceeds the %" PRIu64 " bytes left", r->where, what, len, r->off - 8, rd_left(r));
  s->ptr = (const char *)(r->base + r->off);
  s->len = (size_t)len; /* <= size, which is a size_t */
  r->off += len;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------------
// Duplicate detection (hash set of indices; the files are small, but a crafted one must not be O(n^2))

static uint32_t hash_str(fg_gguf_str s) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < s.len; i++) h = (h ^ (unsigned char)s.ptr[i]) * 16777619u;
  return h;
}

static bool str_eq(fg_gguf_str a, fg_gguf_str b) {
  return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

/* Names are found at base + i * stride (an fg_gguf_str inside each element). On a duplicate, *first and
 * *second are its two indices and *found is true. */
static fg_status find_duplicate(const void *base, size_t stride, size_t n, bool *found, size_t *first,
                                size_t *second) {
  *found = false;
  if (n < 2) return FG_OK;
  size_t cap = 4;
  while (cap < n * 2) cap *= 2; /* n <= size / 13, so this cannot overflow */
  size_t *slots = fg_malloc_array(cap, sizeof *slots); /* (cap) index + 1, 0 = empty */
  if (!slots) return FG_ERR_NOMEM;
  memset(slots, 0, cap * sizeof *slots);
  const unsigned char *b = base;
  for (size_t i = 0; i < n && !*found; i++) {
    fg_gguf_str si;
    memcpy(&si, b + i * stride, sizeof si);
    size_t h = hash_str(si) & (cap - 1);
    while (slots[h] != 0) {
      fg_gguf_str sj;
      memcpy(&sj, b + (slots[h] - 1) * stride, sizeof sj);
      if (str_eq(si, sj)) {
        *found = true;
        *first = slots[h] - 1;
        *second = i;
        break;
      }
      h = (h + 1) & (cap - 1);
    }
    if (!*found) slots[h] = i + 1;
  }
  fg_free(slots);
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------------
// Metadata

static fg_status parse_value_type(fg_rd *r, fg_gguf_type *t, const char *what) {
  uint32_t v = 0;
  fg_status st = rd_u32(r, &v, what);
  if (st != FG_OK) return st;
  if (v >= FG_GGUF_TYPE_COUNT) return fg_err(r->err, FG_ERR_FORMAT, "%s: unknown %s %" PRIu32, r->where, what, v);
  *t = (fg_gguf_type)v;
  return FG_OK;
}

static fg_status parse_scalar(fg_rd *r, fg_gguf_kv *kv) {
  uint32_t n = gguf_scalar_size(kv->type);
  if (rd_left(r) < n) return rd_truncated(r, n, "value");
  const uint8_t *p = r->base + r->off;
  switch (kv->type) {
    case FG_GGUF_UINT8: kv->v.u64 = p[0]; break;
    case FG_GGUF_INT8: kv->v.i64 = (int8_t)p[0]; break;
    case FG_GGUF_UINT16: kv->v.u64 = load_u16(p); break;
    case FG_GGUF_INT16: kv->v.i64 = (int16_t)load_u16(p); break;
    case FG_GGUF_UINT32: kv->v.u64 = load_u32(p); break;
    case FG_GGUF_INT32: kv->v.i64 = (int32_t)load_u32(p); break;
    case FG_GGUF_UINT64: kv->v.u64 = load_u64(p); break;
    case FG_GGUF_INT64: kv->v.i64 = (int64_t)load_u64(p); break;
    case FG_GGUF_BOOL: kv->v.b = p[0] != 0; break;
    case FG_GGUF_FLOAT32: {
      uint32_t u = load_u32(p);
      float f;
      memcpy(&f, &u, sizeof f);
      kv->v.f64 = f;
      break;
    }
    case FG_GGUF_FLOAT64: {
      uint64_t u = load_u64(p);
      double d;
      memcpy(&d, &u, sizeof d);
      kv->v.f64 = d;
      break;
    }
    default: FG_ASSERT(0);
  }
  r->off += n;
  return FG_OK;
}

static fg_status parse_array(fg_rd *r, fg_gguf_kv *kv) {
  fg_status st = parse_value_type(r, &kv->arr_type, "array element type");
  if (st != FG_OK) return st;
  if (kv->arr_type == FG_GGUF_ARRAY) return fg_err(r->err, FG_ERR_FORMAT, "%s: nested arrays are not allowed", r->where);
  st = rd_u64(r, &kv->arr_n, "array length");
  if (st != FG_OK) return st;
  kv->arr_data = r->base + r->off;
  if (kv->arr_type != FG_GGUF_STRING) {
    uint64_t esz = gguf_scalar_size(kv->arr_type), bytes;
    if (!fg_mul_u64(kv->arr_n, esz, &bytes) || bytes > rd_left(r))
      return fg_err(r->err, FG_ERR_FORMAT, "%s: array of %" PRIu64 " %s at byte %" PRIu64
                    " does not fit in the %" PRIu64 " bytes left", r->where, kv->arr_n,
                    gguf_type_name(kv->arr_type), r->off, rd_left(r));
    r->off += bytes;
    return FG_OK;
  }
  if (kv->arr_n > rd_left(r) / 8)
    return fg_err(r->err, FG_ERR_FORMAT, "%s: array of %" PRIu64 " strings at byte %" PRIu64
                  " does not fit in the %" PRIu64 " bytes left", r->where, kv->arr_n, r->off, rd_left(r));
  for (uint64_t i = 0; i < kv->arr_n; i++) {
    fg_gguf_str s;
    st = rd_str(r, &s, "array string");
    if (st != FG_OK) return st;
  }
  return FG_OK;
}

static fg_status parse_kv(fg_rd *r, uint64_t index, fg_gguf_kv *kv) {
  snprintf(r->where, sizeof r->where, "kv #%" PRIu64, index);
  fg_status st = rd_str(r, &kv->key, "key");
  if (st != FG_OK) return st;
  char name[FG_GGUF_NAME_SHOWN + 4];
  show_name(name, sizeof name, kv->key);
  if (kv->key.len == 0) return fg_err(r->err, FG_ERR_FORMAT, "%s: empty key", r->where);
  snprintf(r->where, sizeof r->where, "key '%s'", name);
  st = parse_value_type(r, &kv->type, "value type");
  if (st != FG_OK) return st;
  if (kv->type == FG_GGUF_STRING) return rd_str(r, &kv->str, "string");
  if (kv->type == FG_GGUF_ARRAY) return parse_array(r, kv);
  return parse_scalar(r, kv);
}

/* general.alignment: an integer that fits u32, non-zero, a power of two. */
static fg_status read_alignment(const fg_gguf *g, fg_error *err, uint64_t *align) {
  const fg_gguf_kv *kv = fg_gguf_find_kv(g, FG_KEY_ALIGNMENT);
  *align = FG_GGUF_DEFAULT_ALIGNMENT;
  if (!kv) return FG_OK;
  uint32_t a;
  fg_status st = fg_gguf_get_u32(g, FG_KEY_ALIGNMENT, &a, err);
  if (st != FG_OK) return st;
  if (a == 0 || (a & (a - 1)) != 0)
    return fg_err(err, FG_ERR_FORMAT, "key 'general.alignment': %" PRIu32 " is not a non-zero power of two", a);
  *align = a;
  return FG_OK;
}

// ----------------------------------------------------------------------------------------------------
// Tensor infos

static fg_status parse_tensor_info(fg_rd *r, uint64_t index, uint64_t alignment, fg_gguf_tensor *t) {
  snprintf(r->where, sizeof r->where, "tensor #%" PRIu64, index);
  fg_status st = rd_str(r, &t->name, "name");
  if (st != FG_OK) return st;
  if (t->name.len == 0) return fg_err(r->err, FG_ERR_FORMAT, "%s: empty name", r->where);
  char name[FG_GGUF_NAME_SHOWN + 4];
  show_name(name, sizeof name, t->name);
  snprintf(r->where, sizeof r->where, "tensor '%s'", name);

  if ((st = rd_u32(r, &t->n_dims, "n_dims")) != FG_OK) return st;
  if (t->n_dims == 0 || t->n_dims > FG_GGUF_MAX_DIMS)
    return fg_err(r->err, FG_ERR_FORMAT, "%s: n_dims %" PRIu32 " is outside 1..%d", r->where, t->n_dims,
                  FG_GGUF_MAX_DIMS);
  uint64_t nel = 1;
  for (uint32_t d = 0; d < FG_GGUF_MAX_DIMS; d++) {
    t->ne[d] = 1;
    if (d >= t->n_dims) continue;
    if ((st = rd_u64(r, &t->ne[d], "shape")) != FG_OK) return st;
    if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX)
      return fg_err(r->err, FG_ERR_FORMAT, "%s: ne[%" PRIu32 "] = %" PRIu64 " is not a positive int64", r->where, d,
                    t->ne[d]);
    if (!fg_mul_u64(nel, t->ne[d], &nel) || nel > (uint64_t)INT64_MAX)
      return fg_err(r->err, FG_ERR_FORMAT, "%s: element count overflows at ne[%" PRIu32 "] = %" PRIu64, r->where, d,
                    t->ne[d]);
  }

  if ((st = rd_u32(r, &t->type, "type")) != FG_OK) return st;
  const fg_type_traits *geo = fg_ggml_type_geometry(t->type);
  if (!geo) return fg_err(r->err, FG_ERR_UNSUPPORTED, "%s: unknown tensor type id %" PRIu32, r->where, t->type);
  const uint32_t bs = geo->block_size, ts = geo->type_size;
  const char *tname = geo->name;
  if (t->ne[0] % bs != 0)
    return fg_err(r->err, FG_ERR_FORMAT, "%s: row length %" PRIu64 " is not a multiple of the %s block size %" PRIu32,
                  r->where, t->ne[0], tname, bs);
  uint64_t row_bytes;
  bool ok;
  if (fg_type_traits_get(t->type))
    ok = fg_type_row_bytes(t->type, t->ne[0], &row_bytes);
  else
    ok = fg_mul_u64(t->ne[0] / bs, ts, &row_bytes) != 0;
  ok = ok && fg_mul_u64(row_bytes, nel / t->ne[0], &t->nbytes);
  if (!ok)
    return fg_err(r->err, FG_ERR_FORMAT, "%s: byte size of %" PRIu64 " %s elements overflows", r->where, nel, tname);

  if ((st = rd_u64(r, &t->offset, "offset")) != FG_OK) return st;
  if (t->offset % alignment != 0)
    return fg_err(r->err, FG_ERR_FORMAT, "%s: offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
                  r->where, t->offset, alignment);
  return FG_OK;
}

typedef struct fg_span {
  uint64_t start, end; /* absolute byte range [start, end) */
  size_t index;
} fg_span;

static int span_cmp(const void *a, const void *b) {
  const fg_span *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start ? 1 : 0;
}

/* Places every tensor in the file, then refuses data past EOF and overlaps. */
static fg_status place_tensors(fg_gguf *g, fg_error *err) {
  char name[FG_GGUF_NAME_SHOWN + 4];
  for (size_t i = 0; i < g->n_tensors; i++) {
    fg_gguf_tensor *t = &g->tensors[i];
    uint64_t start, end;
    if (!fg_add_u64(g->data_offset, t->offset, &start) || !fg_add_u64(start, t->nbytes, &end) || end > g->size) {
      show_name(name, sizeof name, t->name);
      if (!fg_add_u64(g->data_offset, t->offset, &start) || !fg_add_u64(start, t->nbytes, &end))
        return fg_err(err, FG_ERR_FORMAT, "tensor '%s': data range overflows (offset %" PRIu64 ", %" PRIu64 " bytes)",
                      name, t->offset, t->nbytes);
      return fg_err(err, FG_ERR_FORMAT, "tensor '%s': data ends at byte %" PRIu64 " past end of file (%" PRIu64
                    " bytes)", name, end, (uint64_t)g->size);
    }
    t->data = g->base + start;
  }
  if (g->n_tensors < 2) return FG_OK;
  fg_span *spans = fg_malloc_array(g->n_tensors, sizeof *spans); /* (n_tensors) */
  if (!spans) return fg_err(err, FG_ERR_NOMEM, "out of memory sorting %zu tensors", g->n_tensors);
  for (size_t i = 0; i < g->n_tensors; i++) {
    spans[i].start = g->tensors[i].offset;
    spans[i].end = g->tensors[i].offset + g->tensors[i].nbytes; /* checked above */
    spans[i].index = i;
  }
  qsort(spans, g->n_tensors, sizeof *spans, span_cmp);
  fg_status st = FG_OK;
  for (size_t i = 1; i < g->n_tensors; i++) {
    if (spans[i].start < spans[i - 1].end) {
      char other[FG_GGUF_NAME_SHOWN + 4];
      show_name(name, sizeof name, g->tensors[spans[i].index].name);
      show_name(other, sizeof other, g->tensors[spans[i - 1].index].name);
      st = fg_err(err, FG_ERR_FORMAT, "tensor '%s': data at offset %" PRIu64 " overlaps tensor '%s' (offset %" PRIu64
                  ", %" PRIu64 " bytes)", name, spans[i].start, other, spans[i - 1].start,
                  spans[i - 1].end - spans[i - 1].start);
      break;
    }
  }
  fg_free(spans);
  return st;
}

// ----------------------------------------------------------------------------------------------------
// Parse

static fg_status parse_header(fg_rd *r, fg_gguf *g, uint64_t *n_kv, uint64_t *n_tensors) {
  snprintf(r->where, sizeof r->where, "header");
  uint32_t magic = 0;
  fg_status st = rd_u32(r, &magic, "magic");
  if (st != FG_OK) return st;
  if (magic != FG_GGUF_MAGIC)
    return fg_err(r->err, FG_ERR_FORMAT, "header: bad magic 0x%08" PRIx32 " (not a GGUF file)", magic);
  if ((st = rd_u32(r, &g->version, "version")) != FG_OK) return st;
  if (g->version == 0) return fg_err(r->err, FG_ERR_FORMAT, "header: invalid GGUF version 0");
  if ((g->version & 0xffffu) == 0)
    return fg_err(r->err, FG_ERR_UNSUPPORTED, "header: GGUF version 0x%08" PRIx32 " looks big-endian; only "
                  "little-endian files are supported", g->version);
  if (g->version < 2 || g->version > 3)
    return fg_err(r->err, FG_ERR_UNSUPPORTED, "header: GGUF version %" PRIu32 " is not supported (only 2 and 3)",
                  g->version);
  if ((st = rd_u64(r, n_tensors, "tensor count")) != FG_OK) return st;
  if ((st = rd_u64(r, n_kv, "kv count")) != FG_OK) return st;
  if (*n_kv > rd_left(r) / FG_GGUF_MIN_KV_BYTES)
    return fg_err(r->err, FG_ERR_FORMAT, "header: n_kv = %" PRIu64 " cannot fit in the %" PRIu64
                  " bytes left (each kv needs at least %u)", *n_kv, rd_left(r), FG_GGUF_MIN_KV_BYTES);
  if (*n_tensors > rd_left(r) / FG_GGUF_MIN_TENSOR_BYTES)
    return fg_err(r->err, FG_ERR_FORMAT, "header: n_tensors = %" PRIu64 " cannot fit in the %" PRIu64
                  " bytes left (each tensor info needs at least %u)", *n_tensors, rd_left(r), FG_GGUF_MIN_TENSOR_BYTES);
  /* both at once; each product is <= left, so only the sum needs a check */
  uint64_t need;
  if (!fg_add_u64(*n_kv * FG_GGUF_MIN_KV_BYTES, *n_tensors * FG_GGUF_MIN_TENSOR_BYTES, &need) || need > rd_left(r))
    return fg_err(r->err, FG_ERR_FORMAT, "header: %" PRIu64 " kvs and %" PRIu64 " tensors cannot fit in the %"
                  PRIu64 " bytes left", *n_kv, *n_tensors, rd_left(r));
  return FG_OK;
}

static fg_status parse_body(fg_rd *r, fg_gguf *g, uint64_t n_kv, uint64_t n_tensors) {
  fg_error *err = r->err;
  char name[FG_GGUF_NAME_SHOWN + 4];
  /* the header check bounds both counts by size_t-sized buffer bytes */
  g->kv = fg_calloc((size_t)n_kv, sizeof *g->kv); /* (n_kv) */
  if (!g->kv) return fg_err(err, FG_ERR_NOMEM, "out of memory for %" PRIu64 " kvs", n_kv);
  g->n_kv = (size_t)n_kv;
  fg_status st;
  for (size_t i = 0; i < g->n_kv; i++)
    if ((st = parse_kv(r, i, &g->kv[i])) != FG_OK) return st;

  bool dup;
  size_t a, b;
  if ((st = find_duplicate(g->kv, sizeof *g->kv, g->n_kv, &dup, &a, &b)) != FG_OK)
    return fg_err(err, st, "out of memory checking %zu keys", g->n_kv);
  if (dup) {
    show_name(name, sizeof name, g->kv[b].key);
    return fg_err(err, FG_ERR_FORMAT, "key '%s': duplicate (kv #%zu and #%zu)", name, a, b);
  }
  if ((st = read_alignment(g, err, &g->alignment)) != FG_OK) return st;

  g->tensors = fg_calloc((size_t)n_tensors, sizeof *g->tensors); /* (n_tensors) */
  if (!g->tensors) return fg_err(err, FG_ERR_NOMEM, "out of memory for %" PRIu64 " tensor infos", n_tensors);
  g->n_tensors = (size_t)n_tensors;
  for (size_t i = 0; i < g->n_tensors; i++)
    if ((st = parse_tensor_info(r, i, g->alignment, &g->tensors[i])) != FG_OK) return st;
  if ((st = find_duplicate(g->tensors, sizeof *g->tensors, g->n_tensors, &dup, &a, &b)) != FG_OK)
    return fg_err(err, st, "out of memory checking %zu tensor names", g->n_tensors);
  if (dup) {
    show_name(name, sizeof name, g->tensors[b].name);
    return fg_err(err, FG_ERR_FORMAT, "tensor '%s': duplicate name (tensor #%zu and #%zu)", name, a, b);
  }

  /* the data section starts at the header end rounded up to the alignment; a file without tensors
   * may end before that */
  uint64_t pad = (g->alignment - r->off % g->alignment) % g->alignment;
  if (!fg_add_u64(r->off, pad, &g->data_offset))
    return fg_err(err, FG_ERR_FORMAT, "header: data section offset overflows");
  return place_tensors(g, err);
}

fg_status fg_gguf_parse(const uint8_t *data, size_t size, fg_gguf *out, fg_error *err) {
  if (!out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_gguf_parse: out is NULL");
  memset(out, 0, sizeof *out);
  if (!data && size != 0) return fg_err(err, FG_ERR_INVALID_ARG, "fg_gguf_parse: data is NULL");
  fg_gguf g;
  memset(&g, 0, sizeof g);
  g.base = data;
  g.size = size;
  fg_rd r;
  memset(&r, 0, sizeof r);
  r.base = data;
  r.size = size;
  r.err = err;
  uint64_t n_kv = 0, n_tensors = 0;
  fg_status st = parse_header(&r, &g, &n_kv, &n_tensors);
  if (st == FG_OK) st = parse_body(&r, &g, n_kv, n_tensors);
  if (st != FG_OK) {
    fg_gguf_clear(&g);
    return st;
  }
  *out = g;
  return FG_OK;
}

void fg_gguf_clear(fg_gguf *g) {
  if (!g) return;
  fg_free(g->kv);
  fg_free(g->tensors);
  memset(g, 0, sizeof *g);
}

// ----------------------------------------------------------------------------------------------------
// Lookups

bool fg_gguf_str_eq(fg_gguf_str s, const char *cstr) {
  if (!cstr) return false;
  size_t n = strlen(cstr);
  return n == s.len && (n == 0 || memcmp(s.ptr, cstr, n) == 0);
}

const fg_gguf_kv *fg_gguf_find_kv(const fg_gguf *g, const char *key) {
  if (!g || !key) return NULL;
  for (size_t i = 0; i < g->n_kv; i++)
    if (fg_gguf_str_eq(g->kv[i].key, key)) return &g->kv[i];
  return NULL;
}

const fg_gguf_tensor *fg_gguf_find_tensor(const fg_gguf *g, const char *name) {
  if (!g || !name) return NULL;
  for (size_t i = 0; i < g->n_tensors; i++)
    if (fg_gguf_str_eq(g->tensors[i].name, name)) return &g->tensors[i];
  return NULL;
}

// ----------------------------------------------------------------------------------------------------
// Typed getters

static fg_status get_kv(const fg_gguf *g, const char *key, const fg_gguf_kv **kv, fg_error *err) {
  if (!g || !key) return fg_err(err, FG_ERR_INVALID_ARG, "gguf getter: NULL argument");
  *kv = fg_gguf_find_kv(g, key);
  if (!*kv) return fg_err(err, FG_ERR_FORMAT, "key '%s': missing", key);
  return FG_OK;
}

static fg_status wrong_type(const fg_gguf_kv *kv, const char *key, const char *expected, fg_error *err) {
  if (kv->type == FG_GGUF_ARRAY)
    return fg_err(err, FG_ERR_FORMAT, "key '%s': has type array of %s, expected %s", key,
                  gguf_type_name(kv->arr_type), expected);
  return fg_err(err, FG_ERR_FORMAT, "key '%s': has type %s, expected %s", key, gguf_type_name(kv->type), expected);
}

fg_status fg_gguf_get_u32(const fg_gguf *g, const char *key, uint32_t *out, fg_error *err) {
  const fg_gguf_kv *kv;
  fg_status st = get_kv(g, key, &kv, err);
  if (st != FG_OK) return st;
  if (gguf_type_is_unsigned(kv->type)) {
    if (kv->v.u64 > UINT32_MAX)
      return fg_err(err, FG_ERR_FORMAT, "key '%s': value %" PRIu64 " does not fit u32", key, kv->v.u64);
    *out = (uint32_t)kv->v.u64;
    return FG_OK;
  }
  if (gguf_type_is_signed(kv->type)) {
    if (kv->v.i64 < 0 || (uint64_t)kv->v.i64 > UINT32_MAX)
      return fg_err(err, FG_ERR_FORMAT, "key '%s': value %" PRId64 " does not fit u32", key, kv->v.i64);
    *out = (uint32_t)kv->v.i64;
    return FG_OK;
  }
  return wrong_type(kv, key, "an integer", err);
}

fg_status fg_gguf_get_f32(const fg_gguf *g, const char *key, float *out, fg_error *err) {
  const fg_gguf_kv *kv;
  fg_status st = get_kv(g, key, &kv, err);
  if (st != FG_OK) return st;
  if (kv->type == FG_GGUF_FLOAT32 || kv->type == FG_GGUF_FLOAT64) {
    double d = kv->v.f64;
    if (isfinite(d) && fabs(d) > (double)FLT_MAX)
      return fg_err(err, FG_ERR_FORMAT, "key '%s': value %g does not fit f32", key, d);
    *out = (float)d; /* NaN and infinities carry over */
    return FG_OK;
  }
  if (gguf_type_is_unsigned(kv->type)) {
    *out = (float)kv->v.u64;
    return FG_OK;
  }
  if (gguf_type_is_signed(kv->type)) {
    *out = (float)kv->v.i64;
    return FG_OK;
  }
  return wrong_type(kv, key, "a number", err);
}

fg_status fg_gguf_get_bool(const fg_gguf *g, const char *key, bool *out, fg_error *err) {
  const fg_gguf_kv *kv;
  fg_status st = get_kv(g, key, &kv, err);
  if (st != FG_OK) return st;
  if (kv->type != FG_GGUF_BOOL) return wrong_type(kv, key, "bool", err);
  *out = kv->v.b;
  return FG_OK;
}

fg_status fg_gguf_get_str(const fg_gguf *g, const char *key, fg_gguf_str *out, fg_error *err) {
  const fg_gguf_kv *kv;
  fg_status st = get_kv(g, key, &kv, err);
  if (st != FG_OK) return st;
  if (kv->type != FG_GGUF_STRING) return wrong_type(kv, key, "string", err);
  *out = kv->str;
  return FG_OK;
}

fg_status fg_gguf_get_arr(const fg_gguf *g, const char *key, fg_gguf_type elem_type, const fg_gguf_kv **out,
                          fg_error *err) {
  const fg_gguf_kv *kv;
  fg_status st = get_kv(g, key, &kv, err);
  if (st != FG_OK) return st;
  if (kv->type != FG_GGUF_ARRAY || kv->arr_type != elem_type) {
    char expected[32];
    snprintf(expected, sizeof expected, "array of %s", gguf_type_name(elem_type));
    return wrong_type(kv, key, expected, err);
  }
  *out = kv;
  return FG_OK;
}

fg_status fg_gguf_get_u32_or(const fg_gguf *g, const char *key, uint32_t def, uint32_t *out, fg_error *err) {
  if (!g || !key) return fg_err(err, FG_ERR_INVALID_ARG, "gguf getter: NULL argument");
  if (!fg_gguf_find_kv(g, key)) {
    *out = def;
    return FG_OK;
  }
  return fg_gguf_get_u32(g, key, out, err);
}

fg_status fg_gguf_get_f32_or(const fg_gguf *g, const char *key, float def, float *out, fg_error *err) {
  if (!g || !key) return fg_err(err, FG_ERR_INVALID_ARG, "gguf getter: NULL argument");
  if (!fg_gguf_find_kv(g, key)) {
    *out = def;
    return FG_OK;
  }
  return fg_gguf_get_f32(g, key, out, err);
}

fg_status fg_gguf_str_array(const fg_gguf_kv *kv, fg_gguf_str **out, fg_error *err) {
  if (!kv || !out) return fg_err(err, FG_ERR_INVALID_ARG, "fg_gguf_str_array: NULL argument");
  *out = NULL;
  char name[FG_GGUF_NAME_SHOWN + 4];
  show_name(name, sizeof name, kv->key);
  if (kv->type != FG_GGUF_ARRAY || kv->arr_type != FG_GGUF_STRING)
    return fg_err(err, FG_ERR_FORMAT, "key '%s': not an array of strings", name);
  size_t n;
  if (!fg_u64_to_size(kv->arr_n, &n))
    return fg_err(err, FG_ERR_NOMEM, "key '%s': %" PRIu64 " strings do not fit in memory", name, kv->arr_n);
  fg_gguf_str *v = fg_malloc_array(n, sizeof *v); /* (arr_n) */
  if (!v) return fg_err(err, FG_ERR_NOMEM, "key '%s': out of memory for %zu strings", name, n);
  const uint8_t *p = kv->arr_data;
  for (size_t i = 0; i < n; i++) {
    uint64_t len = load_u64(p); /* validated by the parser */
    v[i].ptr = (const char *)(p + 8);
    v[i].len = (size_t)len;
    p += 8 + (size_t)len;
  }
  *out = v;
  return FG_OK;
}
