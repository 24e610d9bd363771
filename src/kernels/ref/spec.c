/* spec.c — the reference semantics of the fast kernels' numerics (see kernels.h). Plain C built with
 * -ffp-contract=off: every fused multiply-add here is an explicit fmaf. */
#include "kernels/kernels.h"

#include <math.h>
#include <string.h>

// ----------------------------------------------------------------------------
// Q8 activation rows

size_t fg_act_q8_row_bytes(size_t cols) {
  size_t nblk = cols / 32;
  size_t n = cols + nblk * (sizeof(float) + sizeof(int32_t));
  return (n + 63) & ~(size_t)63;
}

fg_act_q8_row fg_act_q8_row_at(void *base, size_t cols) {
  fg_act_q8_row r;
  uint8_t *p = base;
  r.qs = (int8_t *)p;
  r.d = (float *)(void *)(p + cols);
  r.isum = (int32_t *)(void *)(p + cols + (cols / 32) * sizeof(float));
  return r;
}

void fg_spec_quantize_act_q8(const float *FG_RESTRICT x, size_t cols, fg_act_q8_row out) {
  for (size_t k = 0; k < cols / 32; k++) {
    const float *xb = x + k * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(xb[j]));
    /* a block too small for a normal scale (1/d would overflow) becomes zeros: error <= amax */
    const float d = amax >= FG_ACT_Q8_MIN_AMAX ? amax / 127.0f : 0.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < 32; j++) {
      float v = xb[j] * id;
      /* clamp first (a NaN becomes -127, as max(v, -127) does in SIMD), then round to nearest even */
      v = v >= -127.0f ? v : -127.0f;
      v = v <= 127.0f ? v : 127.0f;
      int q = (int)rintf(v);
      out.qs[k * 32 + j] = (int8_t)q;
      sum += q;
    }
    out.d[k] = d;
    out.isum[k] = sum;
  }
}

// ----------------------------------------------------------------------------
// dot products

float fg_spec_dot_q8(uint32_t type, const void *FG_RESTRICT w, fg_act_q8_row x, size_t cols) {
  float s = 0.0f;
  for (size_t k = 0; k < cols / 32; k++) {
    const int8_t *qx = x.qs + k * 32;
    int32_t isum = 0;
    float dw;
    if (type == FG_TYPE_Q8_0) {
      const fg_block_q8_0 *b = (const fg_block_q8_0 *)w + k;
      dw = fg_fp16_to_f32(b->d);
      for (int j = 0; j < 32; j++) isum += (int32_t)b->qs[j] * qx[j];
    } else if (type == FG_TYPE_Q4_0) {
      const fg_block_q4_0 *b = (const fg_block_q4_0 *)w + k;
      dw = fg_fp16_to_f32(b->d);
      for (int j = 0; j < 16; j++) {
        isum += ((int32_t)(b->qs[j] & 0x0f) - 8) * qx[j];
        isum += ((int32_t)(b->qs[j] >> 4) - 8) * qx[j + 16];
      }
    } else {
      fg_q8w q;
      fg_q8w_decode(type, w, k, &q);
      s = fg_spec_block_q8(&q, qx, x.d[k], s);
      continue;
    }
    const float scale = dw * x.d[k];
    s = fmaf(scale, (float)isum, s);
  }
  return s;
}

float fg_spec_block_q8(const fg_q8w *FG_RESTRICT q, const int8_t *FG_RESTRICT qx, float dx, float s) {
  int32_t ia = 0, ib = 0;
  for (int j = 0; j < 16; j++) {
    ia += (int32_t)q->v[j] * qx[j];
    ib += (int32_t)q->v[j + 16] * qx[j + 16];
  }
  s = fmaf(q->dw * dx, (float)(q->sa * ia + q->sb * ib), s);
  if (q->has_min) {
    int32_t xa = 0, xb = 0;
    for (int j = 0; j < 16; j++) {
      xa += qx[j];
      xb += qx[j + 16];
    }
    s = fmaf(q->mw * dx, (float)(q->ma * xa + q->mb * xb), s);
  }
  return s;
}

// ----------------------------------------------------------------------------
// the portable q8 kernel: what a SIMD table runs for a quantized type it has no kernel of its own for

static size_t fg_q8g_act_size(size_t cols, size_t nb) {
  const size_t rb = fg_act_q8_row_bytes(cols);
  return nb && rb > SIZE_MAX / nb ? SIZE_MAX : rb * nb;
}

static void fg_q8g_act_prep(const float *x, size_t ldx, size_t cols, size_t nb, size_t b0, size_t b1, void *act) {
  (void)nb;
  const size_t rb = fg_act_q8_row_bytes(cols);
  for (size_t b = b0; b < b1; b++) fg_spec_quantize_act_q8(x + b * ldx, cols, fg_act_q8_row_at((uint8_t *)act + b * rb, cols));
}

#define FG_Q8G_CHUNK 64 /* 32-blocks of a weight row decoded at a time */

/* Each row's blocks are decoded once per chunk and applied to every activation; y holds the running
 * sum of an output between chunks, so every output is the spec's block-order sequence. */
static void fg_q8g_run(const fg_mm_args *a, size_t i0, size_t i1) {
  const size_t nblk = a->cols / 32, rb = fg_act_q8_row_bytes(a->cols);
  fg_q8w q[FG_Q8G_CHUNK];
  for (size_t i = i0; i < i1; i++) {
    const uint8_t *w = a->w + (a->rows ? (size_t)a->rows[i] : i) * a->row_bytes;
    for (size_t k0 = 0; k0 < nblk; k0 += FG_Q8G_CHUNK) {
      const size_t k1 = FG_MIN(k0 + FG_Q8G_CHUNK, nblk);
      for (size_t k = k0; k < k1; k++) fg_q8w_decode(a->type, w, k, &q[k - k0]);
      for (size_t b = 0; b < a->nb; b++) {
        const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)a->act + b * rb, a->cols);
        float s = k0 ? a->y[b * a->ldy + i] : 0.0f;
        for (size_t k = k0; k < k1; k++) s = fg_spec_block_q8(&q[k - k0], xr.qs + 32 * k, xr.d[k], s);
        a->y[b * a->ldy + i] = s;
      }
    }
  }
}

static const fg_mm_kernel k_q8_generic = {fg_q8g_run, FG_SPEC_Q8, fg_q8g_act_size, fg_q8g_act_prep, 1, 16};

const fg_mm_kernel *fg_kernel_q8_generic(uint32_t type) {
  const fg_type_traits *t = fg_type_traits_get(type);
  return t && t->block_size % 32 == 0 ? &k_q8_generic : NULL;
}

/* the halving tree every SIMD kernel uses to finish a 16-lane sum: lanes l + 8, l + 4, l + 2, l + 1 */
static float fg_spec_reduce16(float s[16]) {
  for (int h = 8; h >= 1; h /= 2)
    for (int l = 0; l < h; l++) s[l] = s[l] + s[l + h];
  return s[0];
}

static float fg_spec_w(uint32_t type, const void *w, size_t j) {
  if (type == FG_TYPE_F32) return ((const float *)w)[j];
  if (type == FG_TYPE_F16) return fg_fp16_to_f32(((const uint16_t *)w)[j]);
  return fg_bf16_to_f32(((const uint16_t *)w)[j]);
}

float fg_spec_dot_fma(uint32_t type, const void *FG_RESTRICT w, const float *FG_RESTRICT x, size_t cols) {
  float s[16] = {0};
  for (size_t j0 = 0; j0 < cols; j0 += 16)
    for (size_t l = 0; l < 16; l++) {
      const size_t j = j0 + l;
      const float wj = j < cols ? fg_spec_w(type, w, j) : 0.0f, xj = j < cols ? x[j] : 0.0f; /* zero padding */
      s[l] = fmaf(wj, xj, s[l]);
    }
  return fg_spec_reduce16(s);
}

static float fg_bf16_daz(uint16_t h) {
  if ((h & 0x7f80u) == 0) h &= 0x8000u; /* denormal (or zero) input -> signed zero */
  return fg_bf16_to_f32(h);
}

static float fg_ftz(float v) { return fabsf(v) < 1.17549435e-38f ? copysignf(0.0f, v) : v; }

float fg_spec_dot_bf16dp(const uint16_t *FG_RESTRICT w, const uint16_t *FG_RESTRICT xb, size_t cols) {
  float s[16] = {0};
  const size_t np = (cols + 1) / 2;
  for (size_t p0 = 0; p0 < np; p0 += 16)
    for (size_t l = 0; l < 16; l++) {
      const size_t j = 2 * (p0 + l);
      const float w0 = j < cols ? fg_bf16_daz(w[j]) : 0.0f, x0 = j < cols ? fg_bf16_daz(xb[j]) : 0.0f;
      const float w1 = j + 1 < cols ? fg_bf16_daz(w[j + 1]) : 0.0f, x1 = j + 1 < cols ? fg_bf16_daz(xb[j + 1]) : 0.0f;
      s[l] = fg_ftz(fmaf(w1, x1, s[l]));
      s[l] = fg_ftz(fmaf(w0, x0, s[l]));
    }
  return fg_spec_reduce16(s);
}
