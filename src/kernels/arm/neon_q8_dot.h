/* neon_q8_dot.h — the int8 dot core of Q8_0 / Q4_0: loads of a block's 32 weights or activations, the exact
 * block dot of one row, the store of a quad of outputs. */
#ifndef FG_NEON_IMPL_H
#  error "a part of kernels/arm/neon_impl.h (compiled once per NEON table): include that"
#endif

// ----------------------------------------------------------------------------
// Q8_0 / Q4_0: tiles of 4 outputs (4 rows x 1 activation, or 2 rows x 2 activations on armv7), whose
// four exact block dots are reduced into the lanes of one int32x4; B such quads share each loaded
// weight block (aarch64 gemm: 4 rows x 2 activations). Every output lane then gets its spec fma:
// fma(dw * dx, (float)isum, acc) in block order. The weight pointers walk the rows block by block.

/* 32 int8 weights or activations of a block as two vectors. Q8_0 on armv7 loads them de-interleaved
 * (one vld2: even bytes, odd bytes): the same permutation for weights and activations leaves every
 * block dot unchanged and saves an instruction. */
#if FG_NEON_A64
#  define FG_Q8_DEINTERLEAVE 0
#else
#  define FG_Q8_DEINTERLEAVE 1
#endif
FG_NEON_INLINE void fg_ld32(const int8_t *p, const int deint, int8x16_t *v0, int8x16_t *v1) {
  if (deint) {
    const int8x16x2_t v = vld2q_s8(p);
    *v0 = v.val[0];
    *v1 = v.val[1];
  } else {
#if FG_NEON_A64
    const int8x16x2_t v = vld1q_s8_x2(p); /* one LD1 of two registers */
    *v0 = v.val[0];
    *v1 = v.val[1];
#else
    *v0 = vld1q_s8(p);
    *v1 = vld1q_s8(p + 16);
#endif
  }
}

/* the block's 32 int8 weights; q points just past its 2-byte scale */
FG_NEON_INLINE void fg_wq(const uint8_t *q, const int is_q4, int8x16_t *w0, int8x16_t *w1) {
  if (is_q4) {
    const uint8x16_t v = vld1q_u8(q);
    const int8x16_t eight = vdupq_n_s8(8);
    *w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0f))), eight);
    *w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), eight);
  } else {
    fg_ld32((const int8_t *)q, FG_Q8_DEINTERLEAVE, w0, w1);
  }
}

/* Row r's next block: its f16 scale into lane L of h, its weights into w0/w1; p advances one block
 * (two increments that match the loads, so armv7 can use post-incrementing loads). */
#define FG_NEXT_BLOCK(p, h, L, is_q4, w0, w1)                                    \
  do {                                                                           \
    (h) = vld1_lane_u16((const uint16_t *)(const void *)(p), (h), (L));          \
    (p) += 2;                                                                    \
    fg_wq((p), (is_q4), (w0), (w1));                                             \
    (p) += (is_q4) ? 16 : 32;                                                    \
  } while (0)

/* the exact int8 dot of one weight block and one activation block, spread over the lanes (only the
 * lane total is meaningful); activations are in -127..127 */
FG_NEON_INLINE int32x4_t fg_qdot(int8x16_t w0, int8x16_t w1, int8x16_t x0, int8x16_t x1) {
#if FG_NEON_HAVE_DOTPROD
  return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
#else
  int16x8_t p = vmull_s8(vget_low_s8(w0), vget_low_s8(x0));
  p = vmlal_s8(p, vget_high_s8(w0), vget_high_s8(x0));
  int16x8_t q = vmull_s8(vget_low_s8(w1), vget_low_s8(x1));
  q = vmlal_s8(q, vget_high_s8(w1), vget_high_s8(x1));
  return vpadalq_s16(vpaddlq_s16(p), q);
#endif
}

FG_NEON_INLINE void fg_store4(float *y, size_t n, float32x4_t v) {
  if (n >= 4) {
    vst1q_u8((uint8_t *)y, vreinterpretq_u8_f32(v));
    return;
  }
  float tmp[4];
  vst1q_f32(tmp, v);
  for (size_t i = 0; i < n; i++) y[i] = tmp[i];
}
