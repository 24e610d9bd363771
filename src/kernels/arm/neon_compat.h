/* neon_compat.h — one NEON vocabulary for armv7 (AArch32) and aarch64. AArch32 lacks the horizontal
 * adds, the 128-bit pairwise adds and (without the dot-product extension) vdotq_s32; these shims
 * provide them with instructions every NEON unit has. The fg_ prefix keeps them apart from the
 * compiler's own intrinsics.
 *
 * Floating point: AArch32 NEON arithmetic always runs with the "standard FPSCR value": denormal
 * inputs and results are flushed to zero, whatever FPSCR.FZ says (scalar VFP code is IEEE). AArch64
 * NEON follows FPCR, which Linux and Android leave IEEE. FG_NEON_FTZ tells the kernels which case
 * they are in (see neon_impl.h for how the armv7 kernels stay bit-exact with the specs anyway). */
#ifndef FG_NEON_COMPAT_H
#define FG_NEON_COMPAT_H

#include <arm_neon.h>
#include <stdint.h>

#if defined(__aarch64__)
#  define FG_NEON_A64 1
#  define FG_NEON_FTZ 0
#else
#  define FG_NEON_A64 0
#  define FG_NEON_FTZ 1
#endif

#if defined(__ARM_FEATURE_DOTPROD)
#  define FG_NEON_HAVE_DOTPROD 1
#else
#  define FG_NEON_HAVE_DOTPROD 0
#endif
/* the int8 matrix multiply (SMMLA): the neon_i8mm table, aarch64 only */
#if defined(__aarch64__) && defined(__ARM_FEATURE_MATMUL_INT8) && FG_NEON_HAVE_DOTPROD
#  define FG_NEON_HAVE_I8MM 1
#else
#  define FG_NEON_HAVE_I8MM 0
#endif

#define FG_NEON_INLINE static inline __attribute__((always_inline))

/* armv7 inline assembly: q0-q7 set to zero (the accumulators, at the top of a loop) */
#define FG_A32_ZERO_Q0_Q7                                                                                  \
  "vmov.i32 q0, #0\n\t"                                                                                   \
  "vmov.i32 q1, #0\n\t"                                                                                   \
  "vmov.i32 q2, #0\n\t"                                                                                   \
  "vmov.i32 q3, #0\n\t"                                                                                   \
  "vmov.i32 q4, #0\n\t"                                                                                   \
  "vmov.i32 q5, #0\n\t"                                                                                   \
  "vmov.i32 q6, #0\n\t"                                                                                   \
  "vmov.i32 q7, #0\n\t"

/* aarch64 inline assembly: v0-v7 set to zero (the accumulators, at the top of a loop) */
#define FG_A64_ZERO_V0_V7                                                                                  \
  "movi v0.4s, #0\n\t"                                                                                    \
  "movi v1.4s, #0\n\t"                                                                                    \
  "movi v2.4s, #0\n\t"                                                                                    \
  "movi v3.4s, #0\n\t"                                                                                    \
  "movi v4.4s, #0\n\t"                                                                                    \
  "movi v5.4s, #0\n\t"                                                                                    \
  "movi v6.4s, #0\n\t"                                                                                    \
  "movi v7.4s, #0\n\t"

// ----------------------------------------------------------------------------
// horizontal and pairwise adds

/* sum of the 4 lanes in one fixed order on both architectures, (v0 + v1) + (v2 + v3) (aarch64's
 * vaddvq_f32 may associate differently: results would depend on the build) */
FG_NEON_INLINE float fg_vaddvq_f32(float32x4_t v) {
  const float32x2_t s = vpadd_f32(vget_low_f32(v), vget_high_f32(v));
  return vget_lane_f32(vpadd_f32(s, s), 0);
}

FG_NEON_INLINE int32_t fg_vaddvq_s32(int32x4_t v) {
#if FG_NEON_A64
  return vaddvq_s32(v);
#else
  const int32x2_t s = vpadd_s32(vget_low_s32(v), vget_high_s32(v));
  return vget_lane_s32(vpadd_s32(s, s), 0);
#endif
}

/* [a0+a1, a2+a3, b0+b1, b2+b3] */
FG_NEON_INLINE int32x4_t fg_vpaddq_s32(int32x4_t a, int32x4_t b) {
#if FG_NEON_A64
  return vpaddq_s32(a, b);
#else
  return vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)), vpadd_s32(vget_low_s32(b), vget_high_s32(b)));
#endif
}

/* lane i = sum of the 4 lanes of v[i] */
FG_NEON_INLINE int32x4_t fg_vsum4_s32(int32x4_t v0, int32x4_t v1, int32x4_t v2, int32x4_t v3) {
  return fg_vpaddq_s32(fg_vpaddq_s32(v0, v1), fg_vpaddq_s32(v2, v3));
}

// ----------------------------------------------------------------------------
// int8 dot products

/* vdotq_s32 semantics: lane i = acc_i + sum_{j=4i..4i+3} a_j * b_j. With the dot-product extension
 * it is the instruction; otherwise vmull_s8 (16-bit products) + vpaddlq_s16 + one pairwise add. */
FG_NEON_INLINE int32x4_t fg_vdotq_s32(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if FG_NEON_HAVE_DOTPROD
  return vdotq_s32(acc, a, b);
#else
  const int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(a), vget_low_s8(b)));
  const int32x4_t hi = vpaddlq_s16(vmull_s8(vget_high_s8(a), vget_high_s8(b)));
  return vaddq_s32(acc, fg_vpaddq_s32(lo, hi));
#endif
}

/* acc + (some lane distribution of) sum_j a0_j b0_j + a1_j b1_j, for 32 int8 pairs in which no
 * product is -128 * -128 (activations are in -127..127). Only the lane total is meaningful; without
 * the dot-product extension two 16-bit products share a lane before widening (|sum| <= 2 * 128 * 127
 * fits int16), which is cheaper than the lane-exact fg_vdotq_s32. */
FG_NEON_INLINE int32x4_t fg_vdot32_s8(int32x4_t acc, int8x16_t a0, int8x16_t b0, int8x16_t a1, int8x16_t b1) {
#if FG_NEON_HAVE_DOTPROD
  return vdotq_s32(vdotq_s32(acc, a0, b0), a1, b1);
#else
  int16x8_t p = vmull_s8(vget_low_s8(a0), vget_low_s8(b0));
  p = vmlal_s8(p, vget_high_s8(a0), vget_high_s8(b0));
  int16x8_t q = vmull_s8(vget_low_s8(a1), vget_low_s8(b1));
  q = vmlal_s8(q, vget_high_s8(a1), vget_high_s8(b1));
  return vpadalq_s16(vpadalq_s16(acc, p), q);
#endif
}

#endif /* FG_NEON_COMPAT_H */
