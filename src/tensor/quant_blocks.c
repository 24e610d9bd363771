/* quant_blocks.c — the block types beyond F32/F16/BF16/Q8_0/Q4_0: Q4_1, Q5_0, Q5_1, the K-quants
 * (Q2_K .. Q6_K) and IQ4_NL / IQ4_XS, in GGML's layouts (dtype.h). For each: the exact dequantization
 * (GGML's float operations in GGML's order, so that the result equals ggml's and the gguf package's
 * bit for bit), a decoding into integer values and scales per 32 elements (what the q8 spec and every
 * SIMD kernel of these types compute with, see kernels.h), and a reference quantizer.
 * Built with -ffp-contract=off (a part of the specification). */
#include "tensor/dtype.h"

#include <math.h>
#include <string.h>

const int8_t fg_iq4_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

void fg_q3_k_scales(const uint8_t p[12], int8_t out[16]) {
  for (int j = 0; j < 16; j++) {
    const int lo = j < 8 ? (p[j] & 0xf) : (p[j - 8] >> 4);
    const int hi = (p[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = (int8_t)((lo | (hi << 4)) - 32);
  }
}

static inline uint32_t le32(const uint8_t b[4]) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

// ----------------------------------------------------------------------------
// decoding per 32 elements: integer values and scales

void fg_q8w_decode(uint32_t type, const void *FG_RESTRICT row, size_t k, fg_q8w *FG_RESTRICT o) {
  o->sa = o->sb = 1;
  o->ma = o->mb = 0;
  o->mw = 0.0f;
  o->has_min = false;
  switch (type) {
    case FG_TYPE_Q8_0: {
      const fg_block_q8_0 *b = (const fg_block_q8_0 *)row + k;
      o->dw = fg_fp16_to_f32(b->d);
      memcpy(o->v, b->qs, 32);
    } break;
    case FG_TYPE_Q4_0:
    case FG_TYPE_IQ4_NL: {
      const fg_block_q4_0 *b = (const fg_block_q4_0 *)row + k; /* the same layout */
      o->dw = fg_fp16_to_f32(b->d);
      for (int j = 0; j < 16; j++) {
        const int lo = b->qs[j] & 0xf, hi = b->qs[j] >> 4;
        o->v[j] = (int8_t)(type == FG_TYPE_Q4_0 ? lo - 8 : fg_iq4_values[lo]);
        o->v[j + 16] = (int8_t)(type == FG_TYPE_Q4_0 ? hi - 8 : fg_iq4_values[hi]);
      }
    } break;
    case FG_TYPE_Q4_1: {
      const fg_block_q4_1 *b = (const fg_block_q4_1 *)row + k;
      o->dw = fg_fp16_to_f32(b->d);
      o->mw = fg_fp16_to_f32(b->m);
      o->ma = o->mb = 1;
      o->has_min = true;
      for (int j = 0; j < 16; j++) {
        o->v[j] = (int8_t)(b->qs[j] & 0xf);
        o->v[j + 16] = (int8_t)(b->qs[j] >> 4);
      }
    } break;
    case FG_TYPE_Q5_0:
    case FG_TYPE_Q5_1: {
      const bool q51 = type == FG_TYPE_Q5_1;
      const uint8_t *qh = q51 ? ((const fg_block_q5_1 *)row + k)->qh : ((const fg_block_q5_0 *)row + k)->qh;
      const uint8_t *qs = q51 ? ((const fg_block_q5_1 *)row + k)->qs : ((const fg_block_q5_0 *)row + k)->qs;
      const uint32_t h = le32(qh);
      const int off = q51 ? 0 : 16;
      for (int j = 0; j < 16; j++) {
        o->v[j] = (int8_t)(((qs[j] & 0xf) | (((h >> j) & 1u) << 4)) - off);
        o->v[j + 16] = (int8_t)(((qs[j] >> 4) | (((h >> (j + 16)) & 1u) << 4)) - off);
      }
      if (q51) {
        const fg_block_q5_1 *b = (const fg_block_q5_1 *)row + k;
        o->dw = fg_fp16_to_f32(b->d);
        o->mw = fg_fp16_to_f32(b->m);
        o->ma = o->mb = 1;
        o->has_min = true;
      } else {
        o->dw = fg_fp16_to_f32(((const fg_block_q5_0 *)row + k)->d);
      }
    } break;
    case FG_TYPE_Q2_K: {
      const fg_block_q2_k *b = (const fg_block_q2_k *)row + k / 8;
      const int sub = (int)(k % 8), h = sub / 4, s = sub % 4; /* 32 elements: half h, bit pair s */
      for (int l = 0; l < 32; l++) o->v[l] = (int8_t)((b->qs[32 * h + l] >> (2 * s)) & 3);
      const uint8_t sa = b->scales[8 * h + 2 * s], sb = b->scales[8 * h + 2 * s + 1];
      o->dw = fg_fp16_to_f32(b->d);
      o->mw = -fg_fp16_to_f32(b->dmin);
      o->sa = sa & 0xf;
      o->sb = sb & 0xf;
      o->ma = sa >> 4;
      o->mb = sb >> 4;
      o->has_min = true;
    } break;
    case FG_TYPE_Q3_K: {
      const fg_block_q3_k *b = (const fg_block_q3_k *)row + k / 8;
      const int sub = (int)(k % 8), h = sub / 4, s = sub % 4;
      for (int l = 0; l < 32; l++) {
        const int q = (b->qs[32 * h + l] >> (2 * s)) & 3;
        o->v[l] = (int8_t)(q - ((b->hmask[l] >> (4 * h + s)) & 1 ? 0 : 4));
      }
      int8_t sc[16];
      fg_q3_k_scales(b->scales, sc);
      o->dw = fg_fp16_to_f32(b->d);
      o->sa = sc[8 * h + 2 * s];
      o->sb = sc[8 * h + 2 * s + 1];
    } break;
    case FG_TYPE_Q4_K:
    case FG_TYPE_Q5_K: {
      const bool q5 = type == FG_TYPE_Q5_K;
      const fg_block_q4_k *b4 = (const fg_block_q4_k *)row + k / 8;
      const fg_block_q5_k *b5 = (const fg_block_q5_k *)row + k / 8;
      const uint16_t d16 = q5 ? b5->d : b4->d, dmin16 = q5 ? b5->dmin : b4->dmin;
      const uint8_t *scales = q5 ? b5->scales : b4->scales, *qs = q5 ? b5->qs : b4->qs;
      const int j = (int)(k % 8), p = j / 2, high = j % 2; /* sub-block j: nibble `high` of qs[32p ..] */
      for (int l = 0; l < 32; l++) {
        int q = high ? qs[32 * p + l] >> 4 : qs[32 * p + l] & 0xf;
        if (q5) q |= ((b5->qh[l] >> j) & 1) << 4;
        o->v[l] = (int8_t)q;
      }
      uint8_t sc, m;
      fg_k4_scale_min(j, scales, &sc, &m);
      o->dw = fg_fp16_to_f32(d16) * (float)sc;
      o->mw = -(fg_fp16_to_f32(dmin16) * (float)m);
      o->ma = o->mb = 1;
      o->has_min = true;
    } break;
    case FG_TYPE_Q6_K: {
      const fg_block_q6_k *b = (const fg_block_q6_k *)row + k / 8;
      const int sub = (int)(k % 8), h = sub / 4, s = sub % 4; /* elements 128h + 32s + l */
      const uint8_t *ql = b->ql + 64 * h + 32 * (s & 1), *qh = b->qh + 32 * h;
      for (int l = 0; l < 32; l++) {
        const int lo = s < 2 ? ql[l] & 0xf : ql[l] >> 4;
        const int hi = (qh[l] >> (2 * s)) & 3;
        o->v[l] = (int8_t)((lo | (hi << 4)) - 32);
      }
      o->dw = fg_fp16_to_f32(b->d);
      o->sa = b->scales[8 * h + 2 * s];
      o->sb = b->scales[8 * h + 2 * s + 1];
    } break;
    case FG_TYPE_IQ4_XS: {
      const fg_block_iq4_xs *b = (const fg_block_iq4_xs *)row + k / 8;
      const int ib = (int)(k % 8);
      const int ls = ((b->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((b->scales_h >> (2 * ib)) & 3) << 4);
      const uint8_t *qs = b->qs + 16 * ib;
      for (int j = 0; j < 16; j++) {
        o->v[j] = fg_iq4_values[qs[j] & 0xf];
        o->v[j + 16] = fg_iq4_values[qs[j] >> 4];
      }
      o->dw = fg_fp16_to_f32(b->d) * (float)(ls - 32);
    } break;
    default: FG_ASSERT(!"fg_q8w_decode: unsupported type");
  }
}

// ----------------------------------------------------------------------------
// dequantization: GGML's operations, in its order

void fg_dequantize_blocks(uint32_t type, const void *FG_RESTRICT src, float *FG_RESTRICT y, size_t n) {
  switch (type) {
    case FG_TYPE_Q4_1:
      for (size_t i = 0; i < n / 32; i++) {
        const fg_block_q4_1 *b = (const fg_block_q4_1 *)src + i;
        const float d = fg_fp16_to_f32(b->d), m = fg_fp16_to_f32(b->m);
        for (int j = 0; j < 16; j++) {
          y[32 * i + j] = (float)(b->qs[j] & 0xf) * d + m;
          y[32 * i + j + 16] = (float)(b->qs[j] >> 4) * d + m;
        }
      }
      break;
    case FG_TYPE_Q5_0:
    case FG_TYPE_Q5_1:
    case FG_TYPE_IQ4_NL:
      for (size_t i = 0; i < n / 32; i++) {
        fg_q8w w;
        fg_q8w_decode(type, src, i, &w);
        if (type == FG_TYPE_Q5_1)
          for (int j = 0; j < 32; j++) y[32 * i + j] = (float)w.v[j] * w.dw + w.mw;
        else
          for (int j = 0; j < 32; j++) y[32 * i + j] = (float)w.v[j] * w.dw;
      }
      break;
    case FG_TYPE_Q2_K:
      for (size_t i = 0; i < n / 32; i++) {
        fg_q8w w;
        fg_q8w_decode(type, src, i, &w);
        const float d = w.dw, dmin = -w.mw;
        for (int half = 0; half < 2; half++) {
          const float dl = d * (float)(half ? w.sb : w.sa), ml = dmin * (float)(half ? w.mb : w.ma);
          for (int l = 0; l < 16; l++) y[32 * i + 16 * half + l] = dl * (float)w.v[16 * half + l] - ml;
        }
      }
      break;
    case FG_TYPE_Q3_K:
    case FG_TYPE_Q6_K:
      for (size_t i = 0; i < n / 32; i++) {
        fg_q8w w;
        fg_q8w_decode(type, src, i, &w);
        for (int half = 0; half < 2; half++) {
          const float dl = w.dw * (float)(half ? w.sb : w.sa);
          for (int l = 0; l < 16; l++) y[32 * i + 16 * half + l] = dl * (float)w.v[16 * half + l];
        }
      }
      break;
    case FG_TYPE_Q4_K:
    case FG_TYPE_Q5_K:
      for (size_t i = 0; i < n / 32; i++) {
        fg_q8w w;
        fg_q8w_decode(type, src, i, &w);
        const float m = -w.mw; /* exact: dmin * m */
        for (int l = 0; l < 32; l++) y[32 * i + l] = w.dw * (float)w.v[l] - m;
      }
      break;
    case FG_TYPE_IQ4_XS:
      for (size_t i = 0; i < n / 32; i++) {
        fg_q8w w;
        fg_q8w_decode(type, src, i, &w);
        for (int l = 0; l < 32; l++) y[32 * i + l] = w.dw * (float)w.v[l];
      }
      break;
    default: FG_ASSERT(!"fg_dequantize_blocks: unsupported type");
  }
}

// ----------------------------------------------------------------------------
// reference quantizers: plain min/max (or largest-magnitude) fits, round to nearest. They define what
// `fgemma gen-model` writes; `fgemma convert` uses the searched fits of quant_search.c where present.

static int nearest(float v) { return (int)lrintf(v); }
static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* the value of largest magnitude in x[0..n) (its sign kept) */
static float signed_amax(const float *x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; j++)
    if (fabsf(x[j]) > amax) {
      amax = fabsf(x[j]);
      max = x[j];
    }
  return max;
}

static int iq4_nearest(float v) {
  int best = 0;
  float err = fabsf(v - (float)fg_iq4_values[0]);
  for (int i = 1; i < 16; i++) {
    const float e = fabsf(v - (float)fg_iq4_values[i]);
    if (e < err) {
      err = e;
      best = i;
    }
  }
  return best;
}

/* 32 values into nibbles: element j low nibble of qs[j], j + 16 high nibble */
static void put_nibbles(const int q[32], uint8_t qs[16]) {
  for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(q[j] | (q[j + 16] << 4));
}

/* min/max fit of n values onto 0..nmax: *scale, *min (<= 0), q */
static void fit_min_max(const float *x, int n, int nmax, float *scale, float *min, int *q) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < n; j++) {
    lo = fminf(lo, x[j]);
    hi = fmaxf(hi, x[j]);
  }
  if (lo > 0.0f) lo = 0.0f;
  const float d = (hi - lo) / (float)nmax, id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < n; j++) q[j] = clampi(nearest((x[j] - lo) * id), 0, nmax);
  *scale = d;
  *min = lo;
}

/* Q4_K / Q5_K: super-block scales for 8 sub-block scales and minima, each quantized to 6 bits */
static void k_superscales(const float sc[8], const float mn[8], uint16_t *d16, uint16_t *dmin16, uint8_t isc[8],
                          uint8_t imn[8]) {
  float msc = 0.0f, mmn = 0.0f;
  for (int j = 0; j < 8; j++) {
    msc = fmaxf(msc, sc[j]);
    mmn = fmaxf(mmn, mn[j]);
  }
  *d16 = fg_f32_to_fp16(msc / 63.0f);
  *dmin16 = fg_f32_to_fp16(mmn / 63.0f);
  const float d = fg_fp16_to_f32(*d16), dmin = fg_fp16_to_f32(*dmin16);
  for (int j = 0; j < 8; j++) {
    isc[j] = (uint8_t)(d > 0.0f ? clampi(nearest(sc[j] / d), 0, 63) : 0);
    imn[j] = (uint8_t)(dmin > 0.0f ? clampi(nearest(mn[j] / dmin), 0, 63) : 0);
  }
}

static void k4_pack_scales(const uint8_t sc[8], const uint8_t m[8], uint8_t out[12]) {
  memset(out, 0, 12);
  for (int j = 0; j < 8; j++) {
    if (j < 4) {
      out[j] |= sc[j];
      out[j + 4] |= m[j];
    } else {
      out[j + 4] = (uint8_t)((sc[j] & 0xf) | ((m[j] & 0xf) << 4));
      out[j - 4] |= (uint8_t)((sc[j] >> 4) << 6);
      out[j] |= (uint8_t)((m[j] >> 4) << 6);
    }
  }
}

/* q for a sub-block given its quantized scale and minimum: round((x + dmin*m) / (d*sc)) */
static void k_requant(const float *x, int n, float dl, float ml, int nmax, int *q) {
  const float id = dl != 0.0f ? 1.0f / dl : 0.0f;
  for (int j = 0; j < n; j++) q[j] = clampi(nearest((x[j] + ml) * id), 0, nmax);
}

/* IQ4_XS and the 6-bit signed sub-block scales of Q3_K/Q6_K: a super-block scale d from the largest
 * sub-block scale, each sub-block scale rounded to an integer in [lo, hi] */
static float sub_scales(const float s[], int n, int lo, int hi, int out[]) {
  const float m = signed_amax(s, n);
  const float d = m / (float)lo; /* the largest magnitude maps to lo (negative) */
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < n; j++) out[j] = clampi(nearest(s[j] * id), lo, hi);
  return d;
}

/* Q4_1 / Q5_1: a min/max fit of each 32-block, d and m as fp16 */
static void quantize_q4_1_q5_1(uint32_t type, const float *FG_RESTRICT x, void *FG_RESTRICT dst, size_t n) {
  for (size_t i = 0; i < n / 32; i++) {
    const float *xb = x + 32 * i;
    const int nmax = type == FG_TYPE_Q4_1 ? 15 : 31;
    float lo = xb[0], hi = xb[0];
    for (int j = 1; j < 32; j++) {
      lo = fminf(lo, xb[j]);
      hi = fmaxf(hi, xb[j]);
    }
    const uint16_t d16 = fg_f32_to_fp16((hi - lo) / (float)nmax), m16 = fg_f32_to_fp16(lo);
    const float d = fg_fp16_to_f32(d16), m = fg_fp16_to_f32(m16), id = d != 0.0f ? 1.0f / d : 0.0f;
    int q[32];
    for (int j = 0; j < 32; j++) q[j] = clampi(nearest((xb[j] - m) * id), 0, nmax);
    if (type == FG_TYPE_Q4_1) {
      fg_block_q4_1 *b = (fg_block_q4_1 *)dst + i;
      b->d = d16;
      b->m = m16;
      put_nibbles(q, b->qs);
    } else {
      fg_block_q5_1 *b = (fg_block_q5_1 *)dst + i;
      b->d = d16;
      b->m = m16;
      uint32_t h = 0;
      int lo4[32];
      for (int j = 0; j < 32; j++) {
        h |= (uint32_t)(q[j] >> 4) << j;
        lo4[j] = q[j] & 0xf;
      }
      put_nibbles(lo4, b->qs);
      for (int k = 0; k < 4; k++) b->qh[k] = (uint8_t)(h >> (8 * k));
    }
  }
}

/* Q5_0 / IQ4_NL: one scale per 32-block from the value of largest magnitude */
static void quantize_q5_0_iq4_nl(uint32_t type, const float *FG_RESTRICT x, void *FG_RESTRICT dst, size_t n) {
  for (size_t i = 0; i < n / 32; i++) {
    const float *xb = x + 32 * i;
    const float max = signed_amax(xb, 32);
    const float lo = type == FG_TYPE_Q5_0 ? -16.0f : (float)fg_iq4_values[0];
    const uint16_t d16 = fg_f32_to_fp16(max / lo);
    const float d = fg_fp16_to_f32(d16), id = d != 0.0f ? 1.0f / d : 0.0f;
    int q[32];
    if (type == FG_TYPE_Q5_0) {
      fg_block_q5_0 *b = (fg_block_q5_0 *)dst + i;
      uint32_t h = 0;
      for (int j = 0; j < 32; j++) {
        q[j] = clampi(nearest(xb[j] * id) + 16, 0, 31);
        h |= (uint32_t)(q[j] >> 4) << j;
        q[j] &= 0xf;
      }
      b->d = d16;
      put_nibbles(q, b->qs);
      for (int k = 0; k < 4; k++) b->qh[k] = (uint8_t)(h >> (8 * k));
    } else {
      fg_block_iq4_nl *b = (fg_block_iq4_nl *)dst + i;
      for (int j = 0; j < 32; j++) q[j] = iq4_nearest(xb[j] * id);
      b->d = d16;
      put_nibbles(q, b->qs);
    }
  }
}

/* Q4_K / Q5_K: min/max fits of the 8 sub-blocks, 6-bit scales and minima */
static void quantize_q4_k_q5_k(uint32_t type, const float *FG_RESTRICT x, void *FG_RESTRICT dst, size_t n) {
  for (size_t i = 0; i < n / FG_QK_K; i++) {
    const float *xb = x + FG_QK_K * i;
    const int nmax = type == FG_TYPE_Q4_K ? 15 : 31;
    float sc[8], mn[8];
    int q[FG_QK_K];
    for (int j = 0; j < 8; j++) {
      float s, lo;
      fit_min_max(xb + 32 * j, 32, nmax, &s, &lo, q + 32 * j);
      sc[j] = s;
      mn[j] = -lo;
    }
    uint16_t d16, dmin16;
    uint8_t isc[8], imn[8];
    k_superscales(sc, mn, &d16, &dmin16, isc, imn);
    const float d = fg_fp16_to_f32(d16), dmin = fg_fp16_to_f32(dmin16);
    for (int j = 0; j < 8; j++) k_requant(xb + 32 * j, 32, d * (float)isc[j], dmin * (float)imn[j], nmax, q + 32 * j);
    uint8_t *qs, *scales;
    if (type == FG_TYPE_Q4_K) {
      fg_block_q4_k *b = (fg_block_q4_k *)dst + i;
      b->d = d16;
      b->dmin = dmin16;
      qs = b->qs;
      scales = b->scales;
    } else {
      fg_block_q5_k *b = (fg_block_q5_k *)dst + i;
      b->d = d16;
      b->dmin = dmin16;
      qs = b->qs;
      scales = b->scales;
      memset(b->qh, 0, sizeof b->qh);
      for (int j = 0; j < 8; j++)
        for (int l = 0; l < 32; l++) b->qh[l] |= (uint8_t)(((q[32 * j + l] >> 4) & 1) << j);
    }
    k4_pack_scales(isc, imn, scales);
    for (int p = 0; p < 4; p++)
      for (int l = 0; l < 32; l++)
        qs[32 * p + l] = (uint8_t)((q[64 * p + l] & 0xf) | ((q[64 * p + 32 + l] & 0xf) << 4));
  }
}

/* Q2_K: min/max fits of the 16 sub-blocks, 4-bit scales and minima */
static void quantize_q2_k(const float *FG_RESTRICT x, void *FG_RESTRICT dst, size_t n) {
  for (size_t i = 0; i < n / FG_QK_K; i++) {
    const float *xb = x + FG_QK_K * i;
    fg_block_q2_k *b = (fg_block_q2_k *)dst + i;
    float sc[16], mn[16], msc = 0.0f, mmn = 0.0f;
    int q[FG_QK_K];
    for (int j = 0; j < 16; j++) {
      float s, lo;
      fit_min_max(xb + 16 * j, 16, 3, &s, &lo, q + 16 * j);
      sc[j] = s;
      mn[j] = -lo;
      msc = fmaxf(msc, s);
      mmn = fmaxf(mmn, -lo);
    }
    b->d = fg_f32_to_fp16(msc / 15.0f);
    b->dmin = fg_f32_to_fp16(mmn / 15.0f);
    const float d = fg_fp16_to_f32(b->d), dmin = fg_fp16_to_f32(b->dmin);
    for (int j = 0; j < 16; j++) {
      const int is = d > 0.0f ? clampi(nearest(sc[j] / d), 0, 15) : 0;
      const int im = dmin > 0.0f ? clampi(nearest(mn[j] / dmin), 0, 15) : 0;
      b->scales[j] = (uint8_t)(is | (im << 4));
      k_requant(xb + 16 * j, 16, d * (float)is, dmin * (float)im, 3, q + 16 * j);
    }
    /* element 128h + 32s + l: bits 2s of qs[32h + l] */
    memset(b->qs, 0, sizeof b->qs);
    for (int e = 0; e < FG_QK_K; e++) {
      const int h = e / 128, s = (e % 128) / 32, l = e % 32;
      b->qs[32 * h + l] |= (uint8_t)(q[e] << (2 * s));
    }
  }
}

/* Q3_K / Q6_K: signed sub-block scales from the largest magnitude, 6-bit (Q3_K) or 8-bit (Q6_K) */
static void quantize_q3_k_q6_k(uint32_t type, const float *FG_RESTRICT x, void *FG_RESTRICT dst, size_t n) {
  for (size_t i = 0; i < n / FG_QK_K; i++) {
    const float *xb = x + FG_QK_K * i;
    const bool q6 = type == FG_TYPE_Q6_K;
    const int qlo = q6 ? -32 : -4, qhi = q6 ? 31 : 3;
    float s[16];
    for (int j = 0; j < 16; j++) s[j] = signed_amax(xb + 16 * j, 16) / (float)qlo;
    int isc[16];
    const uint16_t d16 = fg_f32_to_fp16(sub_scales(s, 16, q6 ? -128 : -32, q6 ? 127 : 31, isc));
    const float d = fg_fp16_to_f32(d16);
    int q[FG_QK_K];
    for (int j = 0; j < 16; j++) {
      const float dl = d * (float)isc[j], id = dl != 0.0f ? 1.0f / dl : 0.0f;
      for (int l = 0; l < 16; l++) q[16 * j + l] = clampi(nearest(xb[16 * j + l] * id), qlo, qhi) - qlo;
    }
    if (q6) {
      fg_block_q6_k *b = (fg_block_q6_k *)dst + i;
      b->d = d16;
      for (int j = 0; j < 16; j++) b->scales[j] = (int8_t)isc[j];
      memset(b->ql, 0, sizeof b->ql);
      memset(b->qh, 0, sizeof b->qh);
      for (int e = 0; e < FG_QK_K; e++) { /* element 128h + 32s + l */
        const int h = e / 128, sp = (e % 128) / 32, l = e % 32;
        b->ql[64 * h + 32 * (sp & 1) + l] |= (uint8_t)((q[e] & 0xf) << (sp < 2 ? 0 : 4));
        b->qh[32 * h + l] |= (uint8_t)((q[e] >> 4) << (2 * sp));
      }
    } else {
      fg_block_q3_k *b = (fg_block_q3_k *)dst + i;
      b->d = d16;
      memset(b->scales, 0, sizeof b->scales);
      for (int j = 0; j < 16; j++) {
        const int l6 = isc[j] + 32;
        if (j < 8) b->scales[j] = (uint8_t)(l6 & 0xf);
        else b->scales[j - 8] |= (uint8_t)((l6 & 0xf) << 4);
        b->scales[8 + j % 4] |= (uint8_t)((l6 >> 4) << (2 * (j / 4)));
      }
      memset(b->qs, 0, sizeof b->qs);
      memset(b->hmask, 0, sizeof b->hmask);
      for (int e = 0; e < FG_QK_K; e++) {
        const int h = e / 128, sp = (e % 128) / 32, l = e % 32;
        b->qs[32 * h + l] |= (uint8_t)((q[e] & 3) << (2 * sp));
        b->hmask[l] |= (uint8_t)(((q[e] >> 2) & 1) << (4 * h + sp));
      }
    }
  }
}

/* IQ4_XS: signed 6-bit sub-block scales, values the nearest of the IQ4 table */
static void quantize_iq4_xs(const float *FG_RESTRICT x, void *FG_RESTRICT dst, size_t n) {
  for (size_t i = 0; i < n / FG_QK_K; i++) {
    const float *xb = x + FG_QK_K * i;
    fg_block_iq4_xs *b = (fg_block_iq4_xs *)dst + i;
    float s[8];
    for (int j = 0; j < 8; j++) s[j] = signed_amax(xb + 32 * j, 32) / (float)fg_iq4_values[0];
    int isc[8];
    b->d = fg_f32_to_fp16(sub_scales(s, 8, -32, 31, isc));
    const float d = fg_fp16_to_f32(b->d);
    b->scales_h = 0;
    memset(b->scales_l, 0, sizeof b->scales_l);
    for (int j = 0; j < 8; j++) {
      const int ls = isc[j] + 32;
      b->scales_l[j / 2] |= (uint8_t)((ls & 0xf) << (4 * (j % 2)));
      b->scales_h |= (uint16_t)((ls >> 4) << (2 * j));
      const float dl = d * (float)isc[j], id = dl != 0.0f ? 1.0f / dl : 0.0f;
      int q[32];
      for (int l = 0; l < 32; l++) q[l] = iq4_nearest(xb[32 * j + l] * id);
      put_nibbles(q, b->qs + 16 * j);
    }
  }
}

void fg_quantize_blocks(uint32_t type, const float *FG_RESTRICT x, void *FG_RESTRICT dst, size_t n) {
  switch (type) {
    case FG_TYPE_Q4_1:
    case FG_TYPE_Q5_1:
      quantize_q4_1_q5_1(type, x, dst, n);
      break;
    case FG_TYPE_Q5_0:
    case FG_TYPE_IQ4_NL:
      quantize_q5_0_iq4_nl(type, x, dst, n);
      break;
    case FG_TYPE_Q4_K:
    case FG_TYPE_Q5_K:
      quantize_q4_k_q5_k(type, x, dst, n);
      break;
    case FG_TYPE_Q2_K:
      quantize_q2_k(x, dst, n);
      break;
    case FG_TYPE_Q3_K:
    case FG_TYPE_Q6_K:
      quantize_q3_k_q6_k(type, x, dst, n);
      break;
    case FG_TYPE_IQ4_XS:
      quantize_iq4_xs(x, dst, n);
      break;
    default: FG_ASSERT(!"fg_quantize_blocks: unsupported type");
  }
}
