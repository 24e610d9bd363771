/* neon_q8_act.h — the Q8 activations: the spec's quantization of activation rows in NEON, with the armv7
 * exactness flag of each row. */
#ifndef FG_NEON_IMPL_H
#  error "a part of kernels/arm/neon_impl.h (compiled once per NEON table): include that"
#endif

// ----------------------------------------------------------------------------
// Q8 activations: nb rows of fg_act_q8_row_bytes(cols) (the spec's quantization: its operations in NEON;
// on armv7 the spec's own code for a block whose amax is below 2^-100), then one uint32 per row: 1 if
// every block scale is 0 or >= 2^-40 (armv7 exactness)

static size_t fg_q8_rows_size(size_t cols, size_t nb) {
  uint64_t n;
  if (!fg_mul_u64(fg_act_q8_row_bytes(cols) + sizeof(uint32_t), nb, &n) || n > SIZE_MAX - 64) return SIZE_MAX;
  return (size_t)n;
}

FG_NEON_INLINE uint32_t *fg_q8_flags(const void *act, size_t cols, size_t nb) {
  return (uint32_t *)(void *)((uint8_t *)(uintptr_t)act + nb * fg_act_q8_row_bytes(cols));
}

#if FG_NEON_A64
/* fg_spec_quantize_act_q8 with 4 lanes, the same operations: amax by FMAXNM over |x| from 0 (a NaN is
 * passed over, as fmaxf does), the scalar scale, x * id clamped by compare-and-select (a NaN becomes
 * -127), FCVTNS (round to nearest even, as rintf), the exact integer sum. */
/* t >= -127 ? t : -127 (a NaN becomes -127), then t <= 127 ? t : 127 */
FG_NEON_INLINE float32x4_t fg_q8_clamp(float32x4_t t, float32x4_t lo, float32x4_t hi) {
  t = vbslq_f32(vcgeq_f32(t, lo), t, lo);
  return vbslq_f32(vcleq_f32(t, hi), t, hi);
}

static void fg_q8_quantize_a64(const float *FG_RESTRICT x, size_t cols, fg_act_q8_row out) {
  const float32x4_t lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f);
  for (size_t k = 0; k < cols / 32; k++) {
    const float *xb = x + k * 32;
    const float32x4x4_t va = vld1q_f32_x4(xb), vb = vld1q_f32_x4(xb + 16);
    float32x4_t m = vmaxnmq_f32(vdupq_n_f32(0.0f), vabsq_f32(va.val[0]));
    m = vmaxnmq_f32(m, vabsq_f32(va.val[1]));
    m = vmaxnmq_f32(m, vabsq_f32(va.val[2]));
    m = vmaxnmq_f32(m, vabsq_f32(va.val[3]));
    m = vmaxnmq_f32(m, vabsq_f32(vb.val[0]));
    m = vmaxnmq_f32(m, vabsq_f32(vb.val[1]));
    m = vmaxnmq_f32(m, vabsq_f32(vb.val[2]));
    m = vmaxnmq_f32(m, vabsq_f32(vb.val[3]));
    const float amax = vmaxnmvq_f32(m);
    const float d = amax >= FG_ACT_Q8_MIN_AMAX ? amax / 127.0f : 0.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    /* named values, not arrays: GCC at -O2 kept arrays of vectors on the stack */
    const float32x4_t idv = vdupq_n_f32(id);
#  define FG_Q8Q(v) vcvtnq_s32_f32(fg_q8_clamp(vmulq_f32((v), idv), lo, hi))
    const int32x4_t q0 = FG_Q8Q(va.val[0]), q1 = FG_Q8Q(va.val[1]), q2 = FG_Q8Q(va.val[2]), q3 = FG_Q8Q(va.val[3]);
    const int32x4_t q4 = FG_Q8Q(vb.val[0]), q5 = FG_Q8Q(vb.val[1]), q6 = FG_Q8Q(vb.val[2]), q7 = FG_Q8Q(vb.val[3]);
#  undef FG_Q8Q
    const int16x8_t h0 = vcombine_s16(vmovn_s32(q0), vmovn_s32(q1)), h1 = vcombine_s16(vmovn_s32(q2), vmovn_s32(q3));
    const int16x8_t h2 = vcombine_s16(vmovn_s32(q4), vmovn_s32(q5)), h3 = vcombine_s16(vmovn_s32(q6), vmovn_s32(q7));
    vst1q_s8(out.qs + k * 32, vcombine_s8(vmovn_s16(h0), vmovn_s16(h1)));
    vst1q_s8(out.qs + k * 32 + 16, vcombine_s8(vmovn_s16(h2), vmovn_s16(h3)));
    const int32x4_t sum = vaddq_s32(vaddq_s32(vaddq_s32(q0, q1), vaddq_s32(q2, q3)), vaddq_s32(vaddq_s32(q4, q5), vaddq_s32(q6, q7)));
    out.d[k] = d;
    out.isum[k] = vaddvq_s32(sum);
  }
}
#  define fg_q8_quantize fg_q8_quantize_a64
#else
/* armv7: fg_spec_quantize_act_q8's result with NEON, whose arithmetic rounds to nearest even as VFP does
 * but flushes denormal inputs and results to zero, and has no rounding conversion. GCC turns float
 * vector comparisons into scalar VFP code on armv7 (NEON is not IEEE), so the comparisons here are on
 * the bits: amax is the unsigned maximum of |x|'s bits with NaNs masked to 0 (for non-negative floats
 * the orders agree; fmaxf passes a NaN over). A block whose amax is at least 2^-100 gets the spec's
 * result: any denormal x gives |x * id| < 2^-126 * 2^107, which rounds to 0 with or without flushing.
 * Its values go through the spec's steps: t = x * id, clamped to [-127, 127] by VMAX/VMIN, a NaN t
 * replaced by -127 (found on its bits), then rounded to nearest even by adding 1.5 * 2^23 (exact for
 * |t| <= 127: the sum's bits minus those of 1.5 * 2^23 are the rounded integer). The scale and its
 * inverse stay scalar VFP divisions, as in the spec. A block below 2^-100 (all zeros, all NaN, or
 * tiny) runs the spec's own code. */
#  define FG_Q8_A32_NEON_MIN 0x1p-100f
FG_NEON_INLINE uint32x4_t fg_q8_amax_bits(uint32x4_t m, float32x4_t v) {
  const uint32x4_t a = vandq_u32(vreinterpretq_u32_f32(v), vdupq_n_u32(0x7fffffffu));
  return vmaxq_u32(m, vandq_u32(a, vcleq_u32(a, vdupq_n_u32(0x7f800000u)))); /* a NaN counts as 0 */
}

/* round(clamp(v * id)) as the spec computes it, for a block whose amax is at least 2^-100 */
FG_NEON_INLINE int32x4_t fg_q8_round_a32(float32x4_t v, float32x4_t idv) {
  const float32x4_t t = vmulq_f32(v, idv);
  float32x4_t c = vminq_f32(vmaxq_f32(t, vdupq_n_f32(-127.0f)), vdupq_n_f32(127.0f));
  const uint32x4_t nan = vcgtq_u32(vandq_u32(vreinterpretq_u32_f32(t), vdupq_n_u32(0x7fffffffu)), vdupq_n_u32(0x7f800000u));
  c = vbslq_f32(nan, vdupq_n_f32(-127.0f), c);
  return vsubq_s32(vreinterpretq_s32_f32(vaddq_f32(c, vdupq_n_f32(12582912.0f))), vdupq_n_s32(0x4B400000));
}

static void fg_q8_quantize_a32(const float *FG_RESTRICT x, size_t cols, fg_act_q8_row out) {
  for (size_t k = 0; k < cols / 32; k++) {
    const float *xb = x + k * 32;
    const float32x4_t v0 = vld1q_f32(xb), v1 = vld1q_f32(xb + 4), v2 = vld1q_f32(xb + 8), v3 = vld1q_f32(xb + 12);
    const float32x4_t v4 = vld1q_f32(xb + 16), v5 = vld1q_f32(xb + 20), v6 = vld1q_f32(xb + 24), v7 = vld1q_f32(xb + 28);
    uint32x4_t m = fg_q8_amax_bits(vdupq_n_u32(0), v0);
    m = fg_q8_amax_bits(m, v1);
    m = fg_q8_amax_bits(m, v2);
    m = fg_q8_amax_bits(m, v3);
    m = fg_q8_amax_bits(m, v4);
    m = fg_q8_amax_bits(m, v5);
    m = fg_q8_amax_bits(m, v6);
    m = fg_q8_amax_bits(m, v7);
    uint32x2_t m2 = vpmax_u32(vget_low_u32(m), vget_high_u32(m));
    m2 = vpmax_u32(m2, m2);
    const uint32_t amax_bits = vget_lane_u32(m2, 0);
    float amax;
    memcpy(&amax, &amax_bits, sizeof amax);
    if (!(amax >= FG_Q8_A32_NEON_MIN)) {
      const fg_act_q8_row sub = {out.qs + k * 32, out.d + k, out.isum + k};
      fg_spec_quantize_act_q8(xb, 32, sub);
      continue;
    }
    const float d = amax / 127.0f; /* amax >= FG_ACT_Q8_MIN_AMAX */
    const float id = 1.0f / d;      /* d != 0 */
    const float32x4_t idv = vdupq_n_f32(id);
    const int32x4_t q0 = fg_q8_round_a32(v0, idv), q1 = fg_q8_round_a32(v1, idv), q2 = fg_q8_round_a32(v2, idv);
    const int32x4_t q3 = fg_q8_round_a32(v3, idv), q4 = fg_q8_round_a32(v4, idv), q5 = fg_q8_round_a32(v5, idv);
    const int32x4_t q6 = fg_q8_round_a32(v6, idv), q7 = fg_q8_round_a32(v7, idv);
    const int16x8_t h0 = vcombine_s16(vmovn_s32(q0), vmovn_s32(q1)), h1 = vcombine_s16(vmovn_s32(q2), vmovn_s32(q3));
    const int16x8_t h2 = vcombine_s16(vmovn_s32(q4), vmovn_s32(q5)), h3 = vcombine_s16(vmovn_s32(q6), vmovn_s32(q7));
    vst1q_s8(out.qs + k * 32, vcombine_s8(vmovn_s16(h0), vmovn_s16(h1)));
    vst1q_s8(out.qs + k * 32 + 16, vcombine_s8(vmovn_s16(h2), vmovn_s16(h3)));
    const int32x4_t sum = vaddq_s32(vaddq_s32(vaddq_s32(q0, q1), vaddq_s32(q2, q3)), vaddq_s32(vaddq_s32(q4, q5), vaddq_s32(q6, q7)));
    int32x2_t s2 = vadd_s32(vget_low_s32(sum), vget_high_s32(sum));
    s2 = vpadd_s32(s2, s2);
    out.d[k] = d;
    out.isum[k] = vget_lane_s32(s2, 0);
  }
}
#  define fg_q8_quantize fg_q8_quantize_a32
#endif

static void fg_q8_rows_prep(const float *x, size_t ldx, size_t cols, size_t nb, size_t b0, size_t b1, void *act) {
  const size_t stride = fg_act_q8_row_bytes(cols);
  uint32_t *safe = fg_q8_flags(act, cols, nb); /* (nb) */
  for (size_t b = b0; b < b1; b++) {
    const fg_act_q8_row r = fg_act_q8_row_at((uint8_t *)act + b * stride, cols);
    fg_q8_quantize(x + b * ldx, cols, r);
    uint32_t ok = 1;
    if (FG_NEON_FTZ)
      for (size_t k = 0; k < cols / 32; k++) {
        uint32_t bits;
        memcpy(&bits, &r.d[k], 4);
        ok &= bits == 0 || bits >= FG_TINY_BITS; /* d >= 0 */
      }
    safe[b] = ok;
  }
}
