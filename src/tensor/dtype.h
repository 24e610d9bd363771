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
  FG_TYPE_Q4_1 = 3,
  FG_TYPE_Q5_0 = 6,
  FG_TYPE_Q5_1 = 7,
  FG_TYPE_Q8_0 = 8,
  FG_TYPE_Q2_K = 10,
  FG_TYPE_Q3_K = 11,
  FG_TYPE_Q4_K = 12,
  FG_TYPE_Q5_K = 13,
  FG_TYPE_Q6_K = 14,
  FG_TYPE_IQ4_NL = 20,
  FG_TYPE_IQ4_XS = 23,
  FG_TYPE_BF16 = 30,
  FG_TYPE_COUNT = 40 /* size of tables indexed by type id */
};

#define FG_QK4_0 32
#define FG_QK8_0 32
#define FG_QK_K 256   /* elements per super-block of the K-quants and IQ4_XS */
#define FG_K_SCALE_SIZE 12

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

/* x = d * q + m, q in 0..15 (nibbles as Q4_0) */
typedef struct fg_block_q4_1 {
  uint16_t d, m;               /* fp16 scale and minimum */
  uint8_t qs[16];
} fg_block_q4_1;
static_assert(sizeof(fg_block_q4_1) == 4 + 16, "wrong q4_1 block size/padding");

/* x = d * (q - 16), q = nibble | bit j of qh << 4 (element j: low nibble of qs[j % 16], j >= 16: high) */
typedef struct fg_block_q5_0 {
  uint16_t d;
  uint8_t qh[4];               /* bit j = fifth bit of element j (little-endian uint32) */
  uint8_t qs[16];
} fg_block_q5_0;
static_assert(sizeof(fg_block_q5_0) == 2 + 4 + 16, "wrong q5_0 block size/padding");

/* x = d * q + m, q as in Q5_0 without the offset */
typedef struct fg_block_q5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
} fg_block_q5_1;
static_assert(sizeof(fg_block_q5_1) == 4 + 4 + 16, "wrong q5_1 block size/padding");

/* 16 sub-blocks of 16: x = d * (sc & 15) * q - dmin * (sc >> 4), q 2 bits. In each 128-element half,
 * element 32 * s + l (s = 0..3 the bit pair, l < 32) is bits 2s..2s+1 of qs[32 * half + l]; sub-block
 * (half, s, l / 16) has scales[8 * half + 2 * s + l / 16]. */
typedef struct fg_block_q2_k {
  uint8_t scales[FG_QK_K / 16];
  uint8_t qs[FG_QK_K / 4];
  uint16_t d, dmin;
} fg_block_q2_k;
static_assert(sizeof(fg_block_q2_k) == 16 + 64 + 4, "wrong q2_k block size/padding");

/* 16 sub-blocks of 16: x = d * (sc - 32) * (q - (hmask bit ? 0 : 4)), 6-bit sc packed in 12 bytes
 * (fg_q3_k_scales). Element 128 * h + 32 * s + l (l < 32) is bits 2s..2s+1 of qs[32 * h + l] with bit
 * 4h + s of hmask[l]; its sub-block is 8h + 2s + l / 16. */
typedef struct fg_block_q3_k {
  uint8_t hmask[FG_QK_K / 8];
  uint8_t qs[FG_QK_K / 4];
  uint8_t scales[12];
  uint16_t d;
} fg_block_q3_k;
static_assert(sizeof(fg_block_q3_k) == 32 + 64 + 12 + 2, "wrong q3_k block size/padding");

/* 8 sub-blocks of 32: x = d * sc * q - dmin * m, 6-bit sc and m packed in 12 bytes; element 64 * p + l
 * (l < 32) is the low nibble of qs[32 * p + l], element 64 * p + 32 + l its high nibble */
typedef struct fg_block_q4_k {
  uint16_t d, dmin;
  uint8_t scales[FG_K_SCALE_SIZE];
  uint8_t qs[FG_QK_K / 2];
} fg_block_q4_k;
static_assert(sizeof(fg_block_q4_k) == 4 + 12 + 128, "wrong q4_k block size/padding");

/* Q4_K with a fifth bit: element 32 * s + l has bit s of qh[l] */
typedef struct fg_block_q5_k {
  uint16_t d, dmin;
  uint8_t scales[FG_K_SCALE_SIZE];
  uint8_t qh[FG_QK_K / 8];
  uint8_t qs[FG_QK_K / 2];
} fg_block_q5_k;
static_assert(sizeof(fg_block_q5_k) == 4 + 12 + 32 + 128, "wrong q5_k block size/padding");

/* 16 sub-blocks of 16: x = d * sc * (q - 32), int8 sc, q = 4 low bits (ql) | 2 high bits (qh) << 4 */
typedef struct fg_block_q6_k {
  uint8_t ql[FG_QK_K / 2];
  uint8_t qh[FG_QK_K / 4];
  int8_t scales[FG_QK_K / 16];
  uint16_t d;
} fg_block_q6_k;
static_assert(sizeof(fg_block_q6_k) == 128 + 64 + 16 + 2, "wrong q6_k block size/padding");

/* x = d * kvalues[q], nibbles as Q4_0 */
typedef struct fg_block_iq4_nl {
  uint16_t d;
  uint8_t qs[16];
} fg_block_iq4_nl;
static_assert(sizeof(fg_block_iq4_nl) == 2 + 16, "wrong iq4_nl block size/padding");

/* 8 sub-blocks of 32: x = d * (ls - 32) * kvalues[q], ls 6 bits (low 4 in scales_l, high 2 in scales_h) */
typedef struct fg_block_iq4_xs {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[FG_QK_K / 64];
  uint8_t qs[FG_QK_K / 2];
} fg_block_iq4_xs;
static_assert(sizeof(fg_block_iq4_xs) == 4 + 4 + 128, "wrong iq4_xs block size/padding");

/* The 16 values of IQ4_NL and IQ4_XS. */
extern const int8_t fg_iq4_values[16];

/* Bits t, t + 4, ..., t + 28 of q as one byte (bit c = bit 4c + t): a Q5_0 block's fifth bits of elements
 * t, t + 4, ... (the packed layouts of the kernel tables). */
static inline uint8_t fg_qh_bits4(uint32_t q, unsigned t) {
  uint32_t x = (q >> t) & 0x11111111u; /* bit 4c */
  x = (x | x >> 3) & 0x03030303u;      /* bits 8m, 8m + 1 */
  x = (x | x >> 6) & 0x000f000fu;      /* bits 16m .. 16m + 3 */
  return (uint8_t)(x | x >> 12);
}

/* 6-bit scale and minimum j (0..7) of a Q4_K / Q5_K block's 12 packed bytes. */
static inline void fg_k4_scale_min(int j, const uint8_t *FG_RESTRICT q, uint8_t *FG_RESTRICT sc, uint8_t *FG_RESTRICT m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (uint8_t)((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
    *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

/* The 16 signed 6-bit scales (-32..31) of a Q3_K block. */
void fg_q3_k_scales(const uint8_t packed[12], int8_t out[16]);

typedef struct fg_type_traits {
  const char *name;    /* "f32", "f16", "bf16", "q8_0", "q4_0" */
  uint32_t block_size; /* elements per block */
  uint32_t type_size;  /* bytes per block */
} fg_type_traits;

/* NULL for types fgemma does not support. */
const fg_type_traits *fg_type_traits_get(uint32_t type);
/* The type llama-quantize writes instead of `type` for rows of n elements that do not fit its blocks:
 * IQ4_XS -> IQ4_NL, Q2_K/Q3_K -> Q4_0, Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, then F16 when even that
 * does not fit; `type` itself when it fits. */
uint32_t fg_type_fallback(uint32_t type, uint64_t n);
/* Also GGML types fgemma does not compute with (their block geometry only); NULL for unknown ids. */
const fg_type_traits *fg_ggml_type_geometry(uint32_t type);
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

/* The types beyond F32/F16/BF16/Q8_0/Q4_0 (quant_blocks.c); fg_dequantize_row and fg_quantize_row call
 * these for them. */
void fg_dequantize_blocks(uint32_t type, const void *FG_RESTRICT src, float *FG_RESTRICT dst, size_t n);
void fg_quantize_blocks(uint32_t type, const float *FG_RESTRICT src, void *FG_RESTRICT dst, size_t n);

/* 32 consecutive weights of a quantized row (block k of 32 elements) as integers and scales: the
 * form the q8 spec computes with (kernels.h). With x the matching 32 activations:
 *   sum_j w_j x_j = dw * (sa * sum_{j<16} v_j x_j + sb * sum_{j>=16} v_j x_j)
 *                 + mw * (ma * sum_{j<16} x_j + mb * sum_{j>=16} x_j)      (the second line if has_min)
 * and the dequantized weight is exactly what fg_dequantize_row computes from these. */
typedef struct fg_q8w {
  int8_t v[32];
  int32_t sa, sb;  /* integer scales of the two halves (1 for types with one scale per 32) */
  int32_t ma, mb;  /* integer minimum multipliers of the two halves */
  float dw, mw;    /* float scale of the integer sum; of the minimum sum (0 without one) */
  bool has_min;
} fg_q8w;
void fg_q8w_decode(uint32_t type, const void *FG_RESTRICT row, size_t k, fg_q8w *FG_RESTRICT out);

/* Reference dot product of a weight row (in type) with f32 x: each element dequantized exactly, products
 * accumulated in f32 in element order. */
float fg_vec_dot_ref(uint32_t type, const void *FG_RESTRICT w, const float *FG_RESTRICT x, size_t n);

#endif /* FG_DTYPE_H */
