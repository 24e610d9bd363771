/* attn.c — the plain-C attention/GELU table (the portable fallback, also ARM's; attn_dispatch.c
 * chooses among the tables). The C table computes exactly what the AVX2 table computes: explicit
 * fmaf() wherever AVX2 fuses a multiply-add, the same exp polynomial, and the softmax sum in AVX2's
 * 8-lane order (this file is built without FMA contraction, so every other operation is rounded on
 * its own). An ARM build therefore attends bit for bit like an x86 AVX2 build (tests/arm.cmake
 * compares greedy ids); the AVX-512 table sums 16 lanes and differs from both in the last bits. */
#include "kernels/attn.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#  define FG_ATTN_X86 1
#else
#  define FG_ATTN_X86 0
#endif

// ----------------------------------------------------------------------------------------------
// scalar exp

float fg_attn_exp1(float x) {
  if (x != x) return x;
  x = x < FG_EXP_LO ? FG_EXP_LO : (x > FG_EXP_HI ? FG_EXP_HI : x);
  const float n = rintf(x * FG_EXP_LOG2E); /* in [-126, 127] */
  const float r = (x - n * FG_EXP_C1) - n * FG_EXP_C2;
  float y = FG_EXP_P0;
  y = y * r + FG_EXP_P1;
  y = y * r + FG_EXP_P2;
  y = y * r + FG_EXP_P3;
  y = y * r + FG_EXP_P4;
  y = y * r + FG_EXP_P5;
  y = y * (r * r) + r + 1.0f;
  const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23; /* 2^n, a normal float */
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

/* The vector tables' exp, one lane: the same clamp (NaN -> FG_EXP_HI), fused reductions and polynomial. */
static inline float exp_lane(float x) {
  x = x < FG_EXP_HI ? x : FG_EXP_HI;
  x = x > FG_EXP_LO ? x : FG_EXP_LO;
  const float n = rintf(x * FG_EXP_LOG2E);
  float r = fmaf(-n, FG_EXP_C1, x);
  r = fmaf(-n, FG_EXP_C2, r);
  float y = FG_EXP_P0;
  y = fmaf(y, r, FG_EXP_P1);
  y = fmaf(y, r, FG_EXP_P2);
  y = fmaf(y, r, FG_EXP_P3);
  y = fmaf(y, r, FG_EXP_P4);
  y = fmaf(y, r, FG_EXP_P5);
  y = fmaf(y, r * r, r);
  y = y + 1.0f;
  const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

// ----------------------------------------------------------------------------------------------
// the C table

static void qk_c(const float *FG_RESTRICT q, size_t ldq, size_t R, size_t hk, const void *FG_RESTRICT kt,
                 uint32_t k_type, float *FG_RESTRICT s) {
  float krow[FG_ATTN_BLK]; /* (FG_ATTN_BLK) one component of the block's keys as f32 */
  for (size_t r = 0; r < R; r++)
    for (uint32_t j = 0; j < FG_ATTN_BLK; j++) s[r * FG_ATTN_BLK + j] = 0.0f;
  for (size_t i = 0; i < hk; i++) {
    if (k_type == FG_TYPE_F16) {
      const uint8_t *src = (const uint8_t *)kt + i * FG_ATTN_BLK * 2;
      for (uint32_t j = 0; j < FG_ATTN_BLK; j++) {
        uint16_t h;
        memcpy(&h, src + j * 2, 2);
        krow[j] = fg_fp16_to_f32(h);
      }
    } else {
      memcpy(krow, (const float *)kt + i * FG_ATTN_BLK, sizeof krow);
    }
    for (size_t r = 0; r < R; r++) {
      const float w = q[r * ldq + i];
      float *FG_RESTRICT sr = s + r * FG_ATTN_BLK;
      for (uint32_t j = 0; j < FG_ATTN_BLK; j++) sr[j] = fmaf(w, krow[j], sr[j]);
    }
  }
}

static void softmax_c(float *FG_RESTRICT s, size_t R, const uint32_t *FG_RESTRICT j0, const uint32_t *FG_RESTRICT j1,
                      float *FG_RESTRICT m, float *FG_RESTRICT l, float *FG_RESTRICT c) {
  for (size_t r = 0; r < R; r++) {
    float *sr = s + r * FG_ATTN_BLK; /* (FG_ATTN_BLK) */
    const uint32_t a = j0[r], b = j1[r];
    if (a >= b) {
      c[r] = 1.0f;
      for (uint32_t j = 0; j < FG_ATTN_BLK; j++) sr[j] = 0.0f;
      continue;
    }
    float mx = sr[a];
    for (uint32_t j = a + 1; j < b; j++) mx = sr[j] > mx ? sr[j] : mx;
    const float mn = m[r] > mx ? m[r] : mx;
    c[r] = m[r] == -INFINITY ? 0.0f : fg_attn_exp1(m[r] - mn);
    float lane[8] = {0}; /* the 8 lanes of the AVX2 sum: lane k adds j = k, k+8, k+16, k+24 */
    for (uint32_t j = 0; j < FG_ATTN_BLK; j++) {
      const float p = j >= a && j < b ? exp_lane(sr[j] - mn) : 0.0f;
      sr[j] = p;
      lane[j % 8] += p;
    }
    const float sum = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
    l[r] = l[r] * c[r] + sum;
    m[r] = mn;
  }
}

static void pv_c(float *FG_RESTRICT o, size_t ldo, size_t R, size_t hv, const float *FG_RESTRICT c,
                 const float *FG_RESTRICT p, uint32_t ja, uint32_t jb, const void *FG_RESTRICT v, size_t v_stride,
                 uint32_t v_type) {
  float vf[256]; /* (256) one value row as f32, in pieces */
  for (size_t r = 0; r < R; r++) {
    float *FG_RESTRICT orow = o + r * ldo;
    for (size_t i = 0; i < hv; i++) orow[i] *= c[r];
  }
  for (uint32_t j = ja; j < jb; j++) {
    const uint8_t *vrow = (const uint8_t *)v + (size_t)(j - ja) * v_stride;
    for (size_t i0 = 0; i0 < hv; i0 += 256) {
      const size_t n = FG_MIN((size_t)256, hv - i0);
      const float *vs;
      if (v_type == FG_TYPE_F16) {
        for (size_t i = 0; i < n; i++) {
          uint16_t h;
          memcpy(&h, vrow + (i0 + i) * 2, 2);
          vf[i] = fg_fp16_to_f32(h);
        }
        vs = vf;
      } else {
        vs = (const float *)(const void *)vrow + i0;
      }
      for (size_t r = 0; r < R; r++) {
        const float w = p[r * FG_ATTN_BLK + j];
        float *FG_RESTRICT orow = o + r * ldo + i0;
        for (size_t i = 0; i < n; i++) orow[i] = fmaf(w, vs[i], orow[i]);
      }
    }
  }
}

static void fold_c(float *FG_RESTRICT o, float c1, const float *FG_RESTRICT x, float c2, size_t n) {
  for (size_t i = 0; i < n; i++) o[i] = fmaf(c2, x[i], o[i] * c1);
}

static void gelu_mul_c(float *FG_RESTRICT g, const float *FG_RESTRICT up, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const float x = g[i];
    const float u = (FG_GELU_K * x) * fmaf(FG_GELU_A, x * x, 1.0f); /* K x (1 + A x^2), as the SIMD tables */
    g[i] = x / (1.0f + exp_lane(-2.0f * u)) * up[i];
  }
}

static void exp_c(const float *FG_RESTRICT x, float *FG_RESTRICT y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = exp_lane(x[i]);
}

static void to_f16_c(const float *FG_RESTRICT x, uint16_t *FG_RESTRICT y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = fg_f32_to_fp16(x[i]);
}

size_t fg_attn_argmax_c(const float *x, size_t n) {
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < n; i++)
    if (x[i] == x[i] && (best == SIZE_MAX || x[i] > x[best])) best = i;
  return best;
}

static void exp1_c(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = fg_attn_exp1(x[i]);
}

static const fg_attn_kernels k_attn_ref = {"ref",    qk_c,           softmax_c,        pv_c,         fold_c, gelu_mul_c,
                                           exp_c,    to_f16_c,       fg_attn_argmax_c, fg_lora_bt_c, exp1_c};

const fg_attn_kernels *fg_attn_ref(void) { return &k_attn_ref; }

#if !FG_ATTN_X86
const fg_attn_kernels *fg_attn_avx2(void) { return NULL; }
const fg_attn_kernels *fg_attn_avx512(void) { return NULL; }
#endif
