/* half.c — fp16 and bf16 conversion (tensor/dtype.h), the reference every other file converts with:
 * quant_ref.c's rows and quant_blocks.c's block formats both build on it. Built with -ffp-contract=off,
 * like the rest of src/tensor. */
#include "tensor/dtype.h"

#include <string.h>

/* ---- half-precision conversion ----------------------------------------------------------------- */
static inline uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

float fg_fp16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13)); /* inf / nan */
  if (exp == 0) {
    if (man == 0) return bits_f32(sign);
    /* subnormal: man * 2^-24 */
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t fg_f32_to_fp16(float f) {
  uint32_t x = f32_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* nan */
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
  if (ax < 0x38800000u) {
    /* subnormal or zero in fp16: value / 2^-24, rounded to nearest even */
    float v = bits_f32(ax) * 16777216.0f; /* exact: scaling by a power of two */
    uint32_t q = (uint32_t)v;
    float rem = v - (float)q;
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) q++;
    return (uint16_t)(sign | q);
  }
  /* normal: rebias exponent, round mantissa to 10 bits, nearest even (carry may bump the exponent) */
  uint32_t r = ax - 0x38000000u; /* exponent 127 -> 15 */
  uint32_t lsb = (r >> 13) & 1u;
  r += 0xfffu + lsb;
  return (uint16_t)(sign | (r >> 13));
}

float fg_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t fg_f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet nan */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}
