/* quant_ref.c — the reference implementation of the weight formats: type traits, quantize/dequantize
 * and the f32-accumulating dot product (fp16/bf16 conversion: half.c). Built with -ffp-contract=off:
 * this file is the specification every SIMD kernel is checked against. */
#include "tensor/dtype.h"

#include <math.h>
#include <string.h>

static const fg_type_traits k_traits[FG_TYPE_COUNT] = {
    [FG_TYPE_F32] = {"f32", 1, 4},
    [FG_TYPE_F16] = {"f16", 1, 2},
    [FG_TYPE_Q4_0] = {"q4_0", FG_QK4_0, sizeof(fg_block_q4_0)},
    [FG_TYPE_Q8_0] = {"q8_0", FG_QK8_0, sizeof(fg_block_q8_0)},
    [FG_TYPE_BF16] = {"bf16", 1, 2},
    [FG_TYPE_Q4_1] = {"q4_1", 32, sizeof(fg_block_q4_1)},
    [FG_TYPE_Q5_0] = {"q5_0", 32, sizeof(fg_block_q5_0)},
    [FG_TYPE_Q5_1] = {"q5_1", 32, sizeof(fg_block_q5_1)},
    [FG_TYPE_Q2_K] = {"q2_k", FG_QK_K, sizeof(fg_block_q2_k)},
    [FG_TYPE_Q3_K] = {"q3_k", FG_QK_K, sizeof(fg_block_q3_k)},
    [FG_TYPE_Q4_K] = {"q4_k", FG_QK_K, sizeof(fg_block_q4_k)},
    [FG_TYPE_Q5_K] = {"q5_k", FG_QK_K, sizeof(fg_block_q5_k)},
    [FG_TYPE_Q6_K] = {"q6_k", FG_QK_K, sizeof(fg_block_q6_k)},
    [FG_TYPE_IQ4_NL] = {"iq4_nl", 32, sizeof(fg_block_iq4_nl)},
    [FG_TYPE_IQ4_XS] = {"iq4_xs", FG_QK_K, sizeof(fg_block_iq4_xs)},
};

/* The published block geometry of GGML types fgemma does not compute with: a file carrying one parses,
 * and the model loader refuses it by name. */
static const fg_type_traits k_other[FG_TYPE_COUNT] = {
    [9] = {"q8_1", 32, 36},      [15] = {"q8_k", 256, 292},   [16] = {"iq2_xxs", 256, 66},
    [17] = {"iq2_xs", 256, 74},  [18] = {"iq3_xxs", 256, 98}, [19] = {"iq1_s", 256, 50},
    [21] = {"iq3_s", 256, 110},  [22] = {"iq2_s", 256, 82},   [24] = {"i8", 1, 1},
    [25] = {"i16", 1, 2},        [26] = {"i32", 1, 4},        [27] = {"i64", 1, 8},
    [28] = {"f64", 1, 8},        [29] = {"iq1_m", 256, 56},   [34] = {"tq1_0", 256, 54},
    [35] = {"tq2_0", 256, 66},   [39] = {"mxfp4", 32, 17},
};

const fg_type_traits *fg_ggml_type_geometry(uint32_t type) {
  const fg_type_traits *t = fg_type_traits_get(type);
  if (t) return t;
  return type < FG_TYPE_COUNT && k_other[type].name ? &k_other[type] : NULL;
}

const fg_type_traits *fg_type_traits_get(uint32_t type) {
  if (type >= FG_TYPE_COUNT || k_traits[type].name == NULL) return NULL;
  return &k_traits[type];
}

const char *fg_type_name(uint32_t type) {
  const fg_type_traits *t = fg_type_traits_get(type);
  if (!t) t = fg_ggml_type_geometry(type);
  return t ? t->name : "?";
}

uint32_t fg_type_fallback(uint32_t type, uint64_t n) {
  const fg_type_traits *t = fg_type_traits_get(type);
  if (!t || n % t->block_size == 0) return type;
  uint32_t f;
  switch (type) {
    case FG_TYPE_IQ4_XS: f = FG_TYPE_IQ4_NL; break;
    case FG_TYPE_Q2_K:
    case FG_TYPE_Q3_K: f = FG_TYPE_Q4_0; break;
    case FG_TYPE_Q4_K: f = FG_TYPE_Q5_0; break;
    case FG_TYPE_Q5_K: f = FG_TYPE_Q5_1; break;
    case FG_TYPE_Q6_K: f = FG_TYPE_Q8_0; break;
    default: f = type; break;
  }
  return n % fg_type_traits_get(f)->block_size == 0 ? f : FG_TYPE_F16;
}

bool fg_type_row_bytes(uint32_t type, uint64_t n, uint64_t *out) {
  const fg_type_traits *t = fg_type_traits_get(type);
  if (!t || n % t->block_size != 0) return false;
  return fg_mul_u64(n / t->block_size, t->type_size, out) != 0;
}

/* ---- rows ------------------------------------------------------------------------------------ */
void fg_dequantize_row(uint32_t type, const void *FG_RESTRICT src, float *FG_RESTRICT dst, size_t n) {
  switch (type) {
    case FG_TYPE_F32: memcpy(dst, src, n * sizeof(float)); break;
    case FG_TYPE_F16: {
      const uint16_t *s = src;
      for (size_t i = 0; i < n; i++) dst[i] = fg_fp16_to_f32(s[i]);
    } break;
    case FG_TYPE_BF16: {
      const uint16_t *s = src;
      for (size_t i = 0; i < n; i++) dst[i] = fg_bf16_to_f32(s[i]);
    } break;
    case FG_TYPE_Q8_0: {
      const fg_block_q8_0 *b = src;
      for (size_t ib = 0; ib < n / FG_QK8_0; ib++) {
        const float d = fg_fp16_to_f32(b[ib].d);
        for (int j = 0; j < FG_QK8_0; j++) dst[ib * FG_QK8_0 + j] = (float)b[ib].qs[j] * d;
      }
    } break;
    case FG_TYPE_Q4_0: {
      const fg_block_q4_0 *b = src;
      for (size_t ib = 0; ib < n / FG_QK4_0; ib++) {
        const float d = fg_fp16_to_f32(b[ib].d);
        for (int j = 0; j < FG_QK4_0 / 2; j++) {
          dst[ib * FG_QK4_0 + j] = (float)((b[ib].qs[j] & 0x0f) - 8) * d;
          dst[ib * FG_QK4_0 + j + FG_QK4_0 / 2] = (float)((b[ib].qs[j] >> 4) - 8) * d;
        }
      }
    } break;
    default: fg_dequantize_blocks(type, src, dst, n);
  }
}

void fg_quantize_row(uint32_t type, const float *FG_RESTRICT src, void *FG_RESTRICT dst, size_t n) {
  switch (type) {
    case FG_TYPE_F32: memcpy(dst, src, n * sizeof(float)); break;
    case FG_TYPE_F16: {
      uint16_t *d = dst;
      for (size_t i = 0; i < n; i++) d[i] = fg_f32_to_fp16(src[i]);
    } break;
    case FG_TYPE_BF16: {
      uint16_t *d = dst;
      for (size_t i = 0; i < n; i++) d[i] = fg_f32_to_bf16(src[i]);
    } break;
    case FG_TYPE_Q8_0: {
      fg_block_q8_0 *b = dst;
      for (size_t ib = 0; ib < n / FG_QK8_0; ib++) {
        const float *x = src + ib * FG_QK8_0;
        float amax = 0.0f;
        for (int j = 0; j < FG_QK8_0; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[ib].d = fg_f32_to_fp16(d);
        for (int j = 0; j < FG_QK8_0; j++) b[ib].qs[j] = (int8_t)roundf(x[j] * id);
      }
    } break;
    case FG_TYPE_Q4_0: {
      fg_block_q4_0 *b = dst;
      for (size_t ib = 0; ib < n / FG_QK4_0; ib++) {
        const float *x = src + ib * FG_QK4_0;
        /* the value of largest magnitude maps to -8, as GGML does */
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < FG_QK4_0; j++) {
          if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
          }
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[ib].d = fg_f32_to_fp16(d);
        for (int j = 0; j < FG_QK4_0 / 2; j++) {
          int q0 = (int)(x[j] * id + 8.5f);
          int q1 = (int)(x[j + FG_QK4_0 / 2] * id + 8.5f);
          q0 = q0 > 15 ? 15 : (q0 < 0 ? 0 : q0);
          q1 = q1 > 15 ? 15 : (q1 < 0 ? 0 : q1);
          b[ib].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
      }
    } break;
    default: fg_quantize_blocks(type, src, dst, n);
  }
}

float fg_vec_dot_ref(uint32_t type, const void *FG_RESTRICT w, const float *FG_RESTRICT x, size_t n) {
  float sum = 0.0f;
  switch (type) {
    case FG_TYPE_F32: {
      const float *a = w;
      for (size_t i = 0; i < n; i++) sum += a[i] * x[i];
    } break;
    case FG_TYPE_F16: {
      const uint16_t *a = w;
      for (size_t i = 0; i < n; i++) sum += fg_fp16_to_f32(a[i]) * x[i];
    } break;
    case FG_TYPE_BF16: {
      const uint16_t *a = w;
      for (size_t i = 0; i < n; i++) sum += fg_bf16_to_f32(a[i]) * x[i];
    } break;
    case FG_TYPE_Q8_0: {
      const fg_block_q8_0 *b = w;
      for (size_t ib = 0; ib < n / FG_QK8_0; ib++) {
        const float d = fg_fp16_to_f32(b[ib].d);
        for (int j = 0; j < FG_QK8_0; j++) sum += ((float)b[ib].qs[j] * d) * x[ib * FG_QK8_0 + j];
      }
    } break;
    case FG_TYPE_Q4_0: {
      const fg_block_q4_0 *b = w;
      for (size_t ib = 0; ib < n / FG_QK4_0; ib++) {
        const float d = fg_fp16_to_f32(b[ib].d);
        const float *xb = x + ib * FG_QK4_0;
        for (int j = 0; j < FG_QK4_0; j++) {
          int q = j < FG_QK4_0 / 2 ? (b[ib].qs[j] & 0x0f) : (b[ib].qs[j - FG_QK4_0 / 2] >> 4);
          sum += ((float)(q - 8) * d) * xb[j];
        }
      }
    } break;
    default: { /* every other type: its blocks dequantized exactly, products in element order */
      const fg_type_traits *t = fg_type_traits_get(type);
      FG_ASSERT(t);
      float tmp[FG_QK_K]; /* (block_size) */
      for (size_t ib = 0; ib < n / t->block_size; ib++) {
        fg_dequantize_blocks(type, (const uint8_t *)w + ib * t->type_size, tmp, t->block_size);
        for (uint32_t j = 0; j < t->block_size; j++) sum += tmp[j] * x[ib * t->block_size + j];
      }
    } break;
  }
  return sum;
}
