/* gguf.h — GGUF v2/v3 reader (a pure parser over bytes in memory) and a streaming writer.
 *
 * The reader never copies tensor data: tensor and string views point into the caller's buffer, which
 * must outlive the fg_gguf. Every count, length, offset and shape is checked against the buffer size
 * with overflow-safe 64-bit arithmetic (also in 32-bit builds); a bad file gives FG_ERR_FORMAT with a
 * message naming the key or tensor at fault. */
#ifndef FG_GGUF_H
#define FG_GGUF_H

#include "fg_internal.h"
#include "gguf/gguf_keys.h"

#include <stdbool.h>
#include <stdio.h>

#define FG_GGUF_MAGIC 0x46554747u /* "GGUF" little-endian */
#define FG_GGUF_DEFAULT_ALIGNMENT 32u
#define FG_GGUF_MAX_DIMS 4

typedef enum fg_gguf_type {
  FG_GGUF_UINT8 = 0, FG_GGUF_INT8 = 1, FG_GGUF_UINT16 = 2, FG_GGUF_INT16 = 3,
  FG_GGUF_UINT32 = 4, FG_GGUF_INT32 = 5, FG_GGUF_FLOAT32 = 6, FG_GGUF_BOOL = 7,
  FG_GGUF_STRING = 8, FG_GGUF_ARRAY = 9, FG_GGUF_UINT64 = 10, FG_GGUF_INT64 = 11,
  FG_GGUF_FLOAT64 = 12, FG_GGUF_TYPE_COUNT = 13
} fg_gguf_type;

/* A string inside the buffer; not NUL-terminated. */
typedef struct fg_gguf_str {
  const char *ptr;
  size_t len;
} fg_gguf_str;

typedef struct fg_gguf_kv {
  fg_gguf_str key;
  fg_gguf_type type;
  union {                /* scalar value (type != STRING/ARRAY); integers widened, floats in f64 */
    uint64_t u64;
    int64_t i64;
    double f64;
    bool b;
  } v;
  fg_gguf_str str;       /* type == STRING */
  fg_gguf_type arr_type; /* type == ARRAY: element type (never ARRAY: nested arrays are rejected) */
  uint64_t arr_n;        /* type == ARRAY: element count */
  const uint8_t *arr_data; /* type == ARRAY: first element; string elements are u64 length + bytes */
} fg_gguf_kv;

typedef struct fg_gguf_tensor {
  fg_gguf_str name;
  uint32_t n_dims;
  uint64_t ne[FG_GGUF_MAX_DIMS]; /* ne[0] is the innermost (row length); unused dims are 1 */
  uint32_t type;                 /* GGML type id */
  uint64_t offset;               /* relative to the data section */
  uint64_t nbytes;
  const uint8_t *data;           /* into the buffer */
} fg_gguf_tensor;

typedef struct fg_gguf {
  const uint8_t *base;
  size_t size;
  uint32_t version;
  uint64_t alignment;
  uint64_t data_offset; /* start of the tensor data section */
  size_t n_kv;
  fg_gguf_kv *kv;       /* n_kv entries */
  size_t n_tensors;
  fg_gguf_tensor *tensors;
} fg_gguf;

/* Parses a GGUF image. On failure *out is zeroed and nothing is allocated. Tensor types the project
 * does not know are accepted by the parser only if their size can be computed; unknown type ids are
 * FG_ERR_UNSUPPORTED naming the tensor. */
fg_status fg_gguf_parse(const uint8_t *data, size_t size, fg_gguf *out, fg_error *err);
void fg_gguf_clear(fg_gguf *g); /* frees the tables; NULL-safe */

const fg_gguf_kv *fg_gguf_find_kv(const fg_gguf *g, const char *key);
const fg_gguf_tensor *fg_gguf_find_tensor(const fg_gguf *g, const char *name);
bool fg_gguf_str_eq(fg_gguf_str s, const char *cstr);

/* Typed getters. FG_ERR_FORMAT (naming the key) when absent or of an incompatible type; integer
 * getters accept any integer type whose value fits. */
fg_status fg_gguf_get_u32(const fg_gguf *g, const char *key, uint32_t *out, fg_error *err);
fg_status fg_gguf_get_f32(const fg_gguf *g, const char *key, float *out, fg_error *err); /* int or float */
fg_status fg_gguf_get_bool(const fg_gguf *g, const char *key, bool *out, fg_error *err);
fg_status fg_gguf_get_str(const fg_gguf *g, const char *key, fg_gguf_str *out, fg_error *err);
fg_status fg_gguf_get_arr(const fg_gguf *g, const char *key, fg_gguf_type elem_type, const fg_gguf_kv **out,
                          fg_error *err);
/* The same, but a missing key leaves *out = def and returns FG_OK (a present key of a bad type is
 * still an error). */
fg_status fg_gguf_get_u32_or(const fg_gguf *g, const char *key, uint32_t def, uint32_t *out, fg_error *err);
fg_status fg_gguf_get_f32_or(const fg_gguf *g, const char *key, float def, float *out, fg_error *err);

/* Splits a STRING array into views (out has kv->arr_n entries, allocated with fg_malloc, freed with
 * fg_free). The parser has already validated every element length. */
fg_status fg_gguf_str_array(const fg_gguf_kv *kv, fg_gguf_str **out, fg_error *err);

/* ---- file mapping (POSIX; 64-bit offsets even in 32-bit builds) ---- */
typedef struct fg_mapfile {
  const uint8_t *data;
  size_t size;
  bool mapped;         /* false: data was read into a heap buffer (FG_MODEL_NO_MMAP) */
  const void *map_base; /* the mapping (page-aligned; data lies map_delta bytes into it) */
  size_t map_size;
} fg_mapfile;
fg_status fg_mapfile_open(const char *path, bool use_mmap, fg_mapfile *out, fg_error *err);
/* The bytes [offset, offset + length) of an open file (length 0: up to the end of the file); the
 * caller keeps fd (it is not closed, and its file position is not moved). An offset that is not a
 * multiple of the page size is mapped from the page below it; one that is not a multiple of
 * FG_MAPFILE_MIN_ALIGN is read into an aligned heap buffer instead (f32 tensors need 4-byte
 * alignment), with a warning in the log. name labels messages. */
#define FG_MAPFILE_MIN_ALIGN 4u
fg_status fg_mapfile_open_fd(int fd, uint64_t offset, uint64_t length, bool use_mmap, const char *name,
                             fg_mapfile *out, fg_error *err);
void fg_mapfile_close(fg_mapfile *m); /* NULL-safe, idempotent */
/* Hands the whole pages inside [p, p + n) of a mapped file back to the system (madvise DONTNEED), and the
 * mapping's last page where the range reaches the end: they stay readable and are read from the file again
 * when touched. A no-op for a file read into memory. */
void fg_mapfile_drop(const fg_mapfile *m, const void *p, size_t n);

/* ---- streaming writer ----
 * Usage: create; add metadata and tensor infos in any order (tensors are laid out in the order added,
 * each aligned); fg_gguf_writer_begin writes the header to f; then fg_gguf_writer_tensor_data once per
 * tensor in the order added (exact nbytes), or fg_gguf_writer_tensor_part in pieces; fg_gguf_writer_free. */
typedef struct fg_gguf_writer fg_gguf_writer;
fg_gguf_writer *fg_gguf_writer_create(void); /* NULL on NOMEM */
void fg_gguf_writer_free(fg_gguf_writer *w);
fg_status fg_gguf_writer_set_u32(fg_gguf_writer *w, const char *key, uint32_t v);
fg_status fg_gguf_writer_set_i32(fg_gguf_writer *w, const char *key, int32_t v);
fg_status fg_gguf_writer_set_f32(fg_gguf_writer *w, const char *key, float v);
fg_status fg_gguf_writer_set_bool(fg_gguf_writer *w, const char *key, bool v);
fg_status fg_gguf_writer_set_str(fg_gguf_writer *w, const char *key, const char *v);
/* Arrays: copies the data. Strings as (ptr, len) pairs. */
fg_status fg_gguf_writer_set_arr(fg_gguf_writer *w, const char *key, fg_gguf_type elem_type, const void *data,
                                 size_t n);
fg_status fg_gguf_writer_set_arr_str(fg_gguf_writer *w, const char *key, const char *const *strs,
                                     const size_t *lens, size_t n);
fg_status fg_gguf_writer_add_tensor(fg_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                    const uint64_t *ne);
/* Copies one key/value of a parsed file (fg_gguf_parse) as it is: any type, arrays of strings
 * included; a u32 general.alignment also sets the writer's alignment (so a copy keeps the layout rule). */
fg_status fg_gguf_writer_copy_kv(fg_gguf_writer *w, const fg_gguf_kv *kv);
fg_status fg_gguf_writer_begin(fg_gguf_writer *w, FILE *f, fg_error *err);
fg_status fg_gguf_writer_tensor_data(fg_gguf_writer *w, FILE *f, const void *data, size_t nbytes, fg_error *err);
/* The same in pieces: appends nbytes to the current tensor, which is complete (and the next one
 * expected) once all its bytes have come; so a converter holds one chunk of rows, never a whole tensor. */
fg_status fg_gguf_writer_tensor_part(fg_gguf_writer *w, FILE *f, const void *data, size_t nbytes, fg_error *err);
/* After the last tensor: checks every tensor was written. */
fg_status fg_gguf_writer_end(fg_gguf_writer *w, FILE *f, fg_error *err);

/* Sets one key unless an earlier step failed: while st is FG_OK, calls fg_gguf_writer_<setter>(w, key, ...)
 * and turns its failure (the setters return a status without a message) into "<prefix>cannot set <key>"
 * in err. prefix is a string literal ("" or e.g. "gen: "); st an fg_status variable, err an fg_error *. */
#define FG_GGUF_SET(st, err, prefix, setter, w, key, ...)                              \
  do {                                                                                 \
    if ((st) == FG_OK) {                                                               \
      (st) = fg_gguf_writer_##setter((w), (key), __VA_ARGS__);                         \
      if ((st) != FG_OK) (st) = fg_err((err), (st), prefix "cannot set %s", (key));    \
    }                                                                                  \
  } while (0)

#endif /* FG_GGUF_H */
