/* neon_attn.c — aarch64 NEON versions of the attention products (kernels/attn.h: qk and pv), bit for
 * bit the plain-C table's (which is bit for bit the AVX2 table's): every output element is the same
 * chain of fused multiply-adds in the same order, only several elements at a time. AArch64 NEON is IEEE
 * (FPCR left at its default by Linux/Android), so vfmaq_f32 rounds exactly like fmaf. GELU and argmax
 * are NEON too (the same operations; argmax the same answer); softmax, exp and the f16 conversion are the
 * C table's.
 *
 * armv7 keeps the C table: AArch32 NEON flushes denormals, and p * v products of small softmax weights
 * can be denormal. */
#include "kernels/arm/neon.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
#  include <arm_neon.h>
#  include <math.h>
#  include <pthread.h>
#  include <string.h>

/* 4 keys or values from an f32 or f16 row */
static inline float32x4_t ld4(const void *p, size_t i, uint32_t type) {
  if (type == FG_TYPE_F16) return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)p + i)));
  return vld1q_f32((const float *)p + i);
}

static inline float ld1(const void *p, size_t i, uint32_t type) {
  if (type == FG_TYPE_F16) {
    uint16_t h;
    memcpy(&h, (const uint8_t *)p + 2 * i, 2);
    return fg_fp16_to_f32(h);
  }
  return ((const float *)p)[i];
}

/* s[r][j] = fma(q[r][i], kt[i][j], s[r][j]) for i = 0 .. hk-1, from 0; two query rows share each loaded
 * key row (FG_ATTN_BLK = 32 keys: 8 vectors). The 16 accumulators are named, not an array, and the key
 * type is decided outside the loop: GCC at -O2 kept an array of them in memory, a load and a store
 * around every fused multiply-add. */
#  if FG_ATTN_BLK != 32
#    error "qk_neon is written for blocks of 32 keys"
#  endif
#  define FG_QK_FMA8(a, w)                                                                                 \
    do {                                                                                                   \
      a##0 = vfmaq_f32(a##0, w, k0);                                                                       \
      a##1 = vfmaq_f32(a##1, w, k1);                                                                       \
      a##2 = vfmaq_f32(a##2, w, k2);                                                                       \
      a##3 = vfmaq_f32(a##3, w, k3);                                                                       \
      a##4 = vfmaq_f32(a##4, w, k4);                                                                       \
      a##5 = vfmaq_f32(a##5, w, k5);                                                                       \
      a##6 = vfmaq_f32(a##6, w, k6);                                                                       \
      a##7 = vfmaq_f32(a##7, w, k7);                                                                       \
    } while (0)
#  define FG_QK_STORE8(dst, a)                                                                             \
    do {                                                                                                   \
      vst1q_f32((dst), a##0);                                                                              \
      vst1q_f32((dst) + 4, a##1);                                                                          \
      vst1q_f32((dst) + 8, a##2);                                                                          \
      vst1q_f32((dst) + 12, a##3);                                                                         \
      vst1q_f32((dst) + 16, a##4);                                                                         \
      vst1q_f32((dst) + 20, a##5);                                                                         \
      vst1q_f32((dst) + 24, a##6);                                                                         \
      vst1q_f32((dst) + 28, a##7);                                                                         \
    } while (0)
static void qk_neon(const float *FG_RESTRICT q, size_t ldq, size_t R, size_t hk, const void *FG_RESTRICT kt,
                    uint32_t k_type, float *FG_RESTRICT s) {
  for (size_t r = 0; r < R; r += 2) {
    const int two = r + 1 < R;
    const float *q0 = q + r * ldq, *q1 = two ? q0 + ldq : q0;
    const float32x4_t z = vdupq_n_f32(0.0f);
    float32x4_t a0 = z, a1 = z, a2 = z, a3 = z, a4 = z, a5 = z, a6 = z, a7 = z;
    float32x4_t b0 = z, b1 = z, b2 = z, b3 = z, b4 = z, b5 = z, b6 = z, b7 = z;
    if (k_type == FG_TYPE_F16) {
      const uint16_t *krow = (const uint16_t *)kt;
      for (size_t i = 0; i < hk; i++, krow += FG_ATTN_BLK) {
        const uint16x8x4_t h = vld1q_u16_x4(krow);
        const float32x4_t k0 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h.val[0])));
        const float32x4_t k1 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h.val[0])));
        const float32x4_t k2 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h.val[1])));
        const float32x4_t k3 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h.val[1])));
        const float32x4_t k4 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h.val[2])));
        const float32x4_t k5 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h.val[2])));
        const float32x4_t k6 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h.val[3])));
        const float32x4_t k7 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h.val[3])));
        const float32x4_t w0 = vdupq_n_f32(q0[i]), w1 = vdupq_n_f32(q1[i]);
        FG_QK_FMA8(a, w0);
        FG_QK_FMA8(b, w1);
      }
    } else {
      const float *krow = (const float *)kt;
      for (size_t i = 0; i < hk; i++, krow += FG_ATTN_BLK) {
        const float32x4x4_t ka = vld1q_f32_x4(krow), kb = vld1q_f32_x4(krow + 16);
        const float32x4_t k0 = ka.val[0], k1 = ka.val[1], k2 = ka.val[2], k3 = ka.val[3];
        const float32x4_t k4 = kb.val[0], k5 = kb.val[1], k6 = kb.val[2], k7 = kb.val[3];
        const float32x4_t w0 = vdupq_n_f32(q0[i]), w1 = vdupq_n_f32(q1[i]);
        FG_QK_FMA8(a, w0);
        FG_QK_FMA8(b, w1);
      }
    }
    FG_QK_STORE8(s + r * FG_ATTN_BLK, a);
    if (two) FG_QK_STORE8(s + (r + 1) * FG_ATTN_BLK, b);
  }
}
#  undef FG_QK_FMA8
#  undef FG_QK_STORE8

/* o[r][i] *= c[r]; then o[r][i] = fma(p[r][j], v_j[i], o[r][i]) for j = ja .. jb-1; columns in chunks of
 * 32 held in registers over all j, two rows sharing each loaded value chunk */
static void pv_neon(float *FG_RESTRICT o, size_t ldo, size_t R, size_t hv, const float *FG_RESTRICT c,
                    const float *FG_RESTRICT p, uint32_t ja, uint32_t jb, const void *FG_RESTRICT v, size_t v_stride,
                    uint32_t v_type) {
  enum { NV = 8 };
  for (size_t r = 0; r < R; r += 2) {
    const int two = r + 1 < R;
    float *o0 = o + r * ldo, *o1 = two ? o0 + ldo : o0;
    const float *p0 = p + r * FG_ATTN_BLK, *p1 = two ? p0 + FG_ATTN_BLK : p0;
    const float c0 = c[r], c1 = two ? c[r + 1] : c[r];
    size_t i0 = 0;
    for (; i0 + 4 * NV <= hv; i0 += 4 * NV) {
      /* named accumulators and the value type decided outside the loop (see qk_neon) */
#  define FG_PV_INIT8(a, src, cc)                                                                          \
      float32x4_t a##0 = vmulq_n_f32(vld1q_f32((src)), cc), a##1 = vmulq_n_f32(vld1q_f32((src) + 4), cc),  \
                  a##2 = vmulq_n_f32(vld1q_f32((src) + 8), cc), a##3 = vmulq_n_f32(vld1q_f32((src) + 12), cc), \
                  a##4 = vmulq_n_f32(vld1q_f32((src) + 16), cc), a##5 = vmulq_n_f32(vld1q_f32((src) + 20), cc), \
                  a##6 = vmulq_n_f32(vld1q_f32((src) + 24), cc), a##7 = vmulq_n_f32(vld1q_f32((src) + 28), cc)
      FG_PV_INIT8(a, o0 + i0, c0);
      FG_PV_INIT8(b, o1 + i0, c1);
#  undef FG_PV_INIT8
#  define FG_PV_FMA8(a, w)                                                                                 \
      do {                                                                                                 \
        a##0 = vfmaq_f32(a##0, w, x0);                                                                     \
        a##1 = vfmaq_f32(a##1, w, x1);                                                                     \
        a##2 = vfmaq_f32(a##2, w, x2);                                                                     \
        a##3 = vfmaq_f32(a##3, w, x3);                                                                     \
        a##4 = vfmaq_f32(a##4, w, x4);                                                                     \
        a##5 = vfmaq_f32(a##5, w, x5);                                                                     \
        a##6 = vfmaq_f32(a##6, w, x6);                                                                     \
        a##7 = vfmaq_f32(a##7, w, x7);                                                                     \
      } while (0)
      if (v_type == FG_TYPE_F16) {
        for (uint32_t j = ja; j < jb; j++) {
          const uint16_t *vrow = (const uint16_t *)(const void *)((const uint8_t *)v + (size_t)(j - ja) * v_stride) + i0;
          const uint16x8x4_t h = vld1q_u16_x4(vrow);
          const float32x4_t x0 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h.val[0])));
          const float32x4_t x1 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h.val[0])));
          const float32x4_t x2 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h.val[1])));
          const float32x4_t x3 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h.val[1])));
          const float32x4_t x4 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h.val[2])));
          const float32x4_t x5 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h.val[2])));
          const float32x4_t x6 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h.val[3])));
          const float32x4_t x7 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h.val[3])));
          const float32x4_t w0 = vdupq_n_f32(p0[j]), w1 = vdupq_n_f32(p1[j]);
          FG_PV_FMA8(a, w0);
          FG_PV_FMA8(b, w1);
        }
      } else {
        for (uint32_t j = ja; j < jb; j++) {
          const float *vrow = (const float *)(const void *)((const uint8_t *)v + (size_t)(j - ja) * v_stride) + i0;
          const float32x4x4_t va = vld1q_f32_x4(vrow), vb = vld1q_f32_x4(vrow + 16);
          const float32x4_t x0 = va.val[0], x1 = va.val[1], x2 = va.val[2], x3 = va.val[3];
          const float32x4_t x4 = vb.val[0], x5 = vb.val[1], x6 = vb.val[2], x7 = vb.val[3];
          const float32x4_t w0 = vdupq_n_f32(p0[j]), w1 = vdupq_n_f32(p1[j]);
          FG_PV_FMA8(a, w0);
          FG_PV_FMA8(b, w1);
        }
      }
#  undef FG_PV_FMA8
      float *const d0 = o0 + i0;
      vst1q_f32(d0, a0), vst1q_f32(d0 + 4, a1), vst1q_f32(d0 + 8, a2), vst1q_f32(d0 + 12, a3);
      vst1q_f32(d0 + 16, a4), vst1q_f32(d0 + 20, a5), vst1q_f32(d0 + 24, a6), vst1q_f32(d0 + 28, a7);
      if (two) {
        float *const d1 = o1 + i0;
        vst1q_f32(d1, b0), vst1q_f32(d1 + 4, b1), vst1q_f32(d1 + 8, b2), vst1q_f32(d1 + 12, b3);
        vst1q_f32(d1 + 16, b4), vst1q_f32(d1 + 20, b5), vst1q_f32(d1 + 24, b6), vst1q_f32(d1 + 28, b7);
      }
    }
    for (; i0 < hv; i0++) { /* columns past the last whole chunk, one at a time */
      float s0 = o0[i0] * c0, s1 = o1[i0] * c1;
      for (uint32_t j = ja; j < jb; j++) {
        const float x = ld1((const uint8_t *)v + (size_t)(j - ja) * v_stride, i0, v_type);
        s0 = fmaf(p0[j], x, s0);
        s1 = fmaf(p1[j], x, s1);
      }
      o0[i0] = s0;
      if (two) o1[i0] = s1;
    }
  }
}

/* The C table's exp_lane, 4 lanes: the same clamp (NaN -> FG_EXP_HI), the same fused reductions and
 * polynomial, the same 2^n scaling. */
static inline float32x4_t exp4(float32x4_t x) {
  x = vbslq_f32(vcltq_f32(x, vdupq_n_f32(FG_EXP_HI)), x, vdupq_n_f32(FG_EXP_HI));
  x = vbslq_f32(vcgtq_f32(x, vdupq_n_f32(FG_EXP_LO)), x, vdupq_n_f32(FG_EXP_LO));
  const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, FG_EXP_LOG2E));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(FG_EXP_C1));
  r = vfmsq_f32(r, n, vdupq_n_f32(FG_EXP_C2));
  float32x4_t y = vdupq_n_f32(FG_EXP_P0);
  y = vfmaq_f32(vdupq_n_f32(FG_EXP_P1), y, r);
  y = vfmaq_f32(vdupq_n_f32(FG_EXP_P2), y, r);
  y = vfmaq_f32(vdupq_n_f32(FG_EXP_P3), y, r);
  y = vfmaq_f32(vdupq_n_f32(FG_EXP_P4), y, r);
  y = vfmaq_f32(vdupq_n_f32(FG_EXP_P5), y, r);
  y = vfmaq_f32(r, y, vmulq_f32(r, r));
  y = vaddq_f32(y, vdupq_n_f32(1.0f));
  const int32x4_t bits = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(y, vreinterpretq_f32_s32(bits));
}

/* gelu_mul_c, 4 lanes: x / (1 + exp(-2 K x (1 + A x^2))) * up, the same operations in the same order */
static void gelu_mul_neon(float *FG_RESTRICT g, const float *FG_RESTRICT up, size_t n) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t x = vld1q_f32(g + i);
    const float32x4_t u =
        vmulq_f32(vmulq_n_f32(x, FG_GELU_K), vfmaq_f32(vdupq_n_f32(1.0f), vdupq_n_f32(FG_GELU_A), vmulq_f32(x, x)));
    const float32x4_t e = exp4(vmulq_n_f32(u, -2.0f));
    vst1q_f32(g + i, vmulq_f32(vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), e)), vld1q_f32(up + i)));
  }
  if (i < n) fg_attn_ref()->gelu_mul(g + i, up + i, n - i);
}

/* Two passes: the largest non-NaN value (FMAXNM ignores a NaN beside a number; the lanes start at -inf),
 * then the first entry equal to it, 16 at a time. Both are the C scan's answer: it keeps the first of
 * the entries that equal the maximum, and +0 == -0. */
static size_t argmax_neon(const float *x, size_t n) {
  float32x4_t m0 = vdupq_n_f32(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const float32x4x4_t v = vld1q_f32_x4(x + i);
    m0 = vmaxnmq_f32(m0, v.val[0]);
    m1 = vmaxnmq_f32(m1, v.val[1]);
    m2 = vmaxnmq_f32(m2, v.val[2]);
    m3 = vmaxnmq_f32(m3, v.val[3]);
  }
  float m = vmaxnmvq_f32(vmaxnmq_f32(vmaxnmq_f32(m0, m1), vmaxnmq_f32(m2, m3)));
  for (; i < n; i++)
    if (x[i] > m) m = x[i];
  const float32x4_t mv = vdupq_n_f32(m);
  for (i = 0; i + 16 <= n; i += 16) {
    const float32x4x4_t v = vld1q_f32_x4(x + i);
    const uint32x4_t eq = vorrq_u32(vorrq_u32(vceqq_f32(v.val[0], mv), vceqq_f32(v.val[1], mv)),
                                    vorrq_u32(vceqq_f32(v.val[2], mv), vceqq_f32(v.val[3], mv)));
    if (vmaxvq_u32(eq)) break;
  }
  for (; i < n; i++)
    if (x[i] == m) return i;
  return SIZE_MAX; /* every entry NaN: m stayed -inf and nothing equals it */
}

static fg_attn_kernels g_neon_attn;
static pthread_once_t g_neon_attn_once = PTHREAD_ONCE_INIT;

static void neon_attn_init(void) {
  g_neon_attn = *fg_attn_ref();
  g_neon_attn.name = "neon";
  g_neon_attn.qk = qk_neon;
  g_neon_attn.pv = pv_neon;
  g_neon_attn.gelu_mul = gelu_mul_neon;
  g_neon_attn.argmax = argmax_neon;
}

const fg_attn_kernels *fg_attn_neon(void) {
  pthread_once(&g_neon_attn_once, neon_attn_init);
  return &g_neon_attn;
}
#else
const fg_attn_kernels *fg_attn_neon(void) { return NULL; }
#endif
