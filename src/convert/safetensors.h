/* safetensors.h — the header of a .safetensors file, parsed as a pure function over bytes.
 *
 * Layout (https://github.com/huggingface/safetensors): u64 little-endian N, then N bytes of JSON
 * {"__metadata__": {string: string}, NAME: {"dtype": "F32", "shape": [d0, d1, ...],
 * "data_offsets": [begin, end]}, ...}, padded with spaces; tensor bytes follow, row-major, little-endian,
 * offsets relative to the first byte after the header. The parser checks everything a reader relies
 * on: the length fits the file, the JSON is well formed, every dtype is known, shape × element size
 * equals end − begin with overflow-safe arithmetic, every range lies inside the file, no two ranges
 * overlap, no name appears twice. Messages name the tensor. */
#ifndef FG_SAFETENSORS_H
#define FG_SAFETENSORS_H

#include "fg_internal.h"

#include <stdbool.h>

#define FG_ST_MAX_DIMS 8
#define FG_ST_MAX_HEADER 100000000u /* the format's own limit on N */

typedef enum fg_st_dtype {
  FG_ST_BOOL = 0, FG_ST_U8, FG_ST_I8, FG_ST_F8_E5M2, FG_ST_F8_E4M3, FG_ST_I16, FG_ST_U16, FG_ST_F16, FG_ST_BF16,
  FG_ST_I32, FG_ST_U32, FG_ST_F32, FG_ST_F64, FG_ST_I64, FG_ST_U64, FG_ST_DTYPE_COUNT
} fg_st_dtype;

typedef struct fg_st_tensor {
  char *name;             /* NUL-terminated, decoded (owned by the header) */
  fg_st_dtype dtype;
  uint32_t n_dims;        /* 0 = a scalar */
  uint64_t shape[FG_ST_MAX_DIMS]; /* outermost first, as in PyTorch */
  uint64_t begin, end;    /* absolute byte offsets in the file */
} fg_st_tensor;

typedef struct fg_st_header {
  uint64_t data_start;    /* 8 + N */
  size_t n;
  fg_st_tensor *t;        /* n entries, in header order */
} fg_st_header;

/* Name ("F32") and element size in bytes of a dtype. */
const char *fg_st_dtype_name(fg_st_dtype d);
uint32_t fg_st_dtype_size(fg_st_dtype d);

/* The header length N from the first 8 bytes of a file of file_size bytes: FG_ERR_FORMAT when the
 * file is shorter than 8 bytes, N exceeds FG_ST_MAX_HEADER or 8 + N exceeds the file. */
fg_status fg_st_header_len(const uint8_t *data, size_t size, uint64_t file_size, uint64_t *n, fg_error *err);

/* Parses the header. data holds at least the first 8 + N bytes of the file (more is fine: the tensor
 * bytes are not read); file_size is the whole file's size, against which every range is checked.
 * On failure *out is zeroed and nothing stays allocated. */
fg_status fg_st_parse(const uint8_t *data, size_t size, uint64_t file_size, fg_st_header *out, fg_error *err);
void fg_st_clear(fg_st_header *h); /* NULL-safe */
const fg_st_tensor *fg_st_find(const fg_st_header *h, const char *name);

#endif /* FG_SAFETENSORS_H */
