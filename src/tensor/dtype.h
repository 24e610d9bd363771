/* dtype.h — weight formats: GGML block layouts, fp16/bf16 conversion, reference quantize, dequantize
 * and dot product. These plain-C functions are the specification every fast kernel is checked against. */
#ifndef FG_DTYPE_H
#define FG_DTYPE_H

#include "fg_internal.h"

#include <assert.h>
#include <stdbool.h>

/* GGML type ids (as stored in GGUF). */
enum {
  FG_TYPE_F32 = 0,
  FG_TYPE_F16 = 1,
  FG_TYPE_Q4_0 = 2,
  FG_TYPE_Q8_0 = 8,
  FG_TYPE_BF16 = 30,
  FG_TYPE_COUNT = 40 /* size of tables indexed by type id */
};

#define FG_QK4_0 32
#define FG_QK8_0 32

typedef struct fg_block_q4_0 {
  uint16_t d;                  /* fp16 scale */
  uint8_t qs[FG_QK4_0 / 2];    /* nibbles: low nibble = element j, high nibble = element j + 16; value q - 8 */
} fg_block_q4_0;
static_assert(sizeof(fg_block_q4_0) == 2 + FG_QK4_0 / 2, "wrong q4_0 block size/padding");

typedef struct fg_block_q8_0 {
  uint16_t d;                  /* fp16 scale */
  int8_t qs[FG_QK8_0];
} fg_block_q8_0;
static_assert(sizeof(fg_block_q8_0) == 2 + FG_QK8_0, "wrong q8_0 block size/padding");

typedef struct fg_type_traits {
  const char *name;    /* "f32", "f16", "bf16", "q8_0", "q4_0" */
  uint32_t block_size; /* elements per block */
  uint32_t type_size;  /* bytes per block */
} fg_type_traits;

/* NULL for types fgemma does not support. */
const fg_type_traits *fg_type_traits_get(uint32_t type);
/* Bytes of a row of n elements; false if the type is unsupported, n is not a multiple of the block
 * size, or the result overflows. */
bool fg_type_row_bytes(uint32_t type, uint64_t n, uint64_t *out);

float fg_fp16_to_f32(uint16_t h);
uint16_t fg_f32_to_fp16(float f);   /* round to nearest even; overflow to inf; NaN stays NaN */
float fg_bf16_to_f32(uint16_t h);
uint16_t fg_f32_to_bf16(float f);   /* round to nearest even; NaN stays NaN */

/* n must be a multiple of the type's block size. */
void fg_dequantize_row(uint32_t type, const void *FG_RESTRICT src, float *FG_RESTRICT dst, size_t n);
void fg_quantize_row(uint32_t type, const float *FG_RESTRICT src, void *FG_RESTRICT dst, size_t n);

/* Reference dot product of a weight row (in type) with f32 x: each element dequantized exactly, products
 * accumulated in f32 in element order. */
float fg_vec_dot_ref(uint32_t type, const void *FG_RESTRICT w, const float *FG_RESTRICT x, size_t n);

#endif /* FG_DTYPE_H */
