/* neon_q8_asm.h — the Q8_0 block loops in assembly: armv7 4 rows x 1 activation and 2 x 2, aarch64 4 x 1
 * and (with SDOT) 4 x 2; fg_q8_vec4_asm names the decode one of the target. */
#ifndef FG_NEON_IMPL_H
#  error "a part of kernels/arm/neon_impl.h (compiled once per NEON table): include that"
#endif

#if !FG_NEON_A64
/* armv7 Q8_0, 4 rows x 1 activation (every decode matmul and the LM head): the block loop in
 * assembly, because GCC spills and recomputes the row pointers here. Per block: the four rows' f16
 * scales go into lanes of d1 and their 32 weights (de-interleaved, vld2) into q10-q13, all with
 * post-incrementing loads; the activation block likewise (q2, q3) and its scale into s0. Then the
 * four exact block dots are reduced into the lanes of q14 (lane r = row r) and, as in fg_qtile4,
 * acc = fma(dw * dx, (float)isum, acc) (q9). Dot-product table: VSDOT into running sums q4-q7, the
 * block's dots being the difference of two reductions; plain table: VMULL/VMLAL 16-bit products (two
 * per lane, exact: activations are in -127..127) widened by VPADDL/VPADAL. Writes acc to out[0..3]. */
static void fg_q8_vec4_a32(const uint8_t *p0, const uint8_t *p1, const uint8_t *p2, const uint8_t *p3,
                           const int8_t *xq, const float *xd, size_t nblk, float *out) {
  if (nblk == 0) {
    vst1q_f32(out, vdupq_n_f32(0.0f));
    return;
  }
  __asm__ volatile(
      "vmov.i32 q9, #0\n\t"
#  if FG_NEON_HAVE_DOTPROD
      "vmov.i32 q4, #0\n\t"
      "vmov.i32 q5, #0\n\t"
      "vmov.i32 q6, #0\n\t"
      "vmov.i32 q7, #0\n\t"
      "vmov.i32 q8, #0\n\t"
      "1:\n\t"
      "vld1.16 {d1[0]}, [%[p0]]!\n\t"
      "vld2.8 {d20-d23}, [%[p0]]!\n\t"
      "vld1.16 {d1[1]}, [%[p1]]!\n\t"
      "vld2.8 {d24-d27}, [%[p1]]!\n\t"
      "vld2.8 {d4-d7}, [%[xq]]!\n\t"
      "vsdot.s8 q4, q10, q2\n\t"
      "vsdot.s8 q4, q11, q3\n\t"
      "vld1.16 {d1[2]}, [%[p2]]!\n\t"
      "vld2.8 {d20-d23}, [%[p2]]!\n\t"
      "vsdot.s8 q5, q12, q2\n\t"
      "vsdot.s8 q5, q13, q3\n\t"
      "vld1.16 {d1[3]}, [%[p3]]!\n\t"
      "vld2.8 {d24-d27}, [%[p3]]!\n\t"
      "vsdot.s8 q6, q10, q2\n\t"
      "vsdot.s8 q6, q11, q3\n\t"
      "vsdot.s8 q7, q12, q2\n\t"
      "vsdot.s8 q7, q13, q3\n\t"
      "vld1.32 {d0[0]}, [%[xd]]!\n\t"
      "vpadd.i32 d28, d8, d9\n\t"
      "vpadd.i32 d29, d10, d11\n\t"
      "vpadd.i32 d30, d12, d13\n\t"
      "vpadd.i32 d31, d14, d15\n\t"
      "vpadd.i32 d28, d28, d29\n\t"
      "vpadd.i32 d29, d30, d31\n\t"
      "vsub.i32 q15, q14, q8\n\t"
      "vmov q8, q14\n\t"
#  else
      "1:\n\t"
      "vld2.8 {d4-d7}, [%[xq]]!\n\t"
      "vld1.16 {d1[0]}, [%[p0]]!\n\t"
      "vld2.8 {d20-d23}, [%[p0]]!\n\t"
      "vmull.s8 q12, d20, d4\n\t"
      "vmlal.s8 q12, d21, d5\n\t"
      "vmull.s8 q13, d22, d6\n\t"
      "vmlal.s8 q13, d23, d7\n\t"
      "vld1.16 {d1[1]}, [%[p1]]!\n\t"
      "vld2.8 {d20-d23}, [%[p1]]!\n\t"
      "vpaddl.s16 q4, q12\n\t"
      "vpadal.s16 q4, q13\n\t"
      "vmull.s8 q12, d20, d4\n\t"
      "vmlal.s8 q12, d21, d5\n\t"
      "vmull.s8 q13, d22, d6\n\t"
      "vmlal.s8 q13, d23, d7\n\t"
      "vld1.16 {d1[2]}, [%[p2]]!\n\t"
      "vld2.8 {d20-d23}, [%[p2]]!\n\t"
      "vpaddl.s16 q5, q12\n\t"
      "vpadal.s16 q5, q13\n\t"
      "vmull.s8 q12, d20, d4\n\t"
      "vmlal.s8 q12, d21, d5\n\t"
      "vmull.s8 q13, d22, d6\n\t"
      "vmlal.s8 q13, d23, d7\n\t"
      "vld1.16 {d1[3]}, [%[p3]]!\n\t"
      "vld2.8 {d20-d23}, [%[p3]]!\n\t"
      "vpaddl.s16 q6, q12\n\t"
      "vpadal.s16 q6, q13\n\t"
      "vmull.s8 q12, d20, d4\n\t"
      "vmlal.s8 q12, d21, d5\n\t"
      "vmull.s8 q13, d22, d6\n\t"
      "vmlal.s8 q13, d23, d7\n\t"
      "vld1.32 {d0[0]}, [%[xd]]!\n\t"
      "vpaddl.s16 q7, q12\n\t"
      "vpadal.s16 q7, q13\n\t"
      "vpadd.i32 d28, d8, d9\n\t"
      "vpadd.i32 d29, d10, d11\n\t"
      "vpadd.i32 d26, d12, d13\n\t"
      "vpadd.i32 d27, d14, d15\n\t"
      "vpadd.i32 d30, d28, d29\n\t"
      "vpadd.i32 d31, d26, d27\n\t"
#  endif
      "vcvt.f32.f16 q1, d1\n\t"
      "vcvt.f32.s32 q15, q15\n\t"
      "vmul.f32 q1, q1, d0[0]\n\t"
      "vfma.f32 q9, q1, q15\n\t"
      "subs %[n], %[n], #1\n\t"
      "bne 1b\n\t"
      "vst1.32 {d18-d19}, [%[out]]\n\t"
      : [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3), [xq] "+r"(xq), [xd] "+r"(xd), [n] "+r"(nblk)
      : [out] "r"(out)
      : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13",
        "d14", "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28",
        "d29", "d30", "d31");
}
#endif

#if !FG_NEON_A64
/* armv7 Q8_0 gemm tile, 2 rows x 2 activations (prefill): as fg_q8_vec4_a32, with the quad's lanes
 * (row 0 act a, row 1 act a, row 0 act b, row 1 act b) and the scale dw_r * dx_b; each weight block is
 * loaded once for both activations. Writes the four outputs to out[0..3] in that order. */
static void fg_q8_gemm22_a32(const uint8_t *p0, const uint8_t *p1, const int8_t *xa, const float *xad,
                             const int8_t *xb, const float *xbd, size_t nblk, float *out) {
  if (nblk == 0) {
    vst1q_f32(out, vdupq_n_f32(0.0f));
    return;
  }
  __asm__ volatile(
      "vmov.i32 q9, #0\n\t"
#  if FG_NEON_HAVE_DOTPROD
      "vmov.i32 q4, #0\n\t"
      "vmov.i32 q5, #0\n\t"
      "vmov.i32 q6, #0\n\t"
      "vmov.i32 q7, #0\n\t"
      "vmov.i32 q8, #0\n\t"
#  endif
      "1:\n\t"
      "vld1.16 {d1[0]}, [%[p0]]!\n\t"
      "vld2.8 {d20-d23}, [%[p0]]!\n\t"
      "vld1.16 {d1[1]}, [%[p1]]!\n\t"
      "vld2.8 {d28-d31}, [%[p1]]!\n\t"
      "vld2.8 {d4-d7}, [%[xa]]!\n\t"
      "vld2.8 {d24-d27}, [%[xb]]!\n\t"
      "vld1.32 {d0[0]}, [%[xad]]!\n\t"
      "vld1.32 {d0[1]}, [%[xbd]]!\n\t"
#  if FG_NEON_HAVE_DOTPROD
      "vsdot.s8 q4, q10, q2\n\t"
      "vsdot.s8 q4, q11, q3\n\t"
      "vsdot.s8 q5, q14, q2\n\t"
      "vsdot.s8 q5, q15, q3\n\t"
      "vsdot.s8 q6, q10, q12\n\t"
      "vsdot.s8 q6, q11, q13\n\t"
      "vsdot.s8 q7, q14, q12\n\t"
      "vsdot.s8 q7, q15, q13\n\t"
      "vpadd.i32 d20, d8, d9\n\t"
      "vpadd.i32 d21, d10, d11\n\t"
      "vpadd.i32 d22, d12, d13\n\t"
      "vpadd.i32 d23, d14, d15\n\t"
      "vpadd.i32 d28, d20, d21\n\t"
      "vpadd.i32 d29, d22, d23\n\t"
      "vsub.i32 q15, q14, q8\n\t"
      "vmov q8, q14\n\t"
#  else
#    define FG_A32_DOT(acc, w0, w1, w2, w3, x0, x1, x2, x3)                                                \
      "vmull.s8 q8, " w0 ", " x0 "\n\t"                                                                  \
      "vmlal.s8 q8, " w1 ", " x1 "\n\t"                                                                  \
      "vmull.s8 q1, " w2 ", " x2 "\n\t"                                                                  \
      "vmlal.s8 q1, " w3 ", " x3 "\n\t"                                                                  \
      "vpaddl.s16 " acc ", q8\n\t"                                                                       \
      "vpadal.s16 " acc ", q1\n\t"
      FG_A32_DOT("q4", "d20", "d21", "d22", "d23", "d4", "d5", "d6", "d7")
      FG_A32_DOT("q5", "d28", "d29", "d30", "d31", "d4", "d5", "d6", "d7")
      FG_A32_DOT("q6", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27")
      FG_A32_DOT("q7", "d28", "d29", "d30", "d31", "d24", "d25", "d26", "d27")
#    undef FG_A32_DOT
      "vpadd.i32 d20, d8, d9\n\t"
      "vpadd.i32 d21, d10, d11\n\t"
      "vpadd.i32 d22, d12, d13\n\t"
      "vpadd.i32 d23, d14, d15\n\t"
      "vpadd.i32 d30, d20, d21\n\t"
      "vpadd.i32 d31, d22, d23\n\t"
#  endif
      "vcvt.f32.f16 q1, d1\n\t"
      "vmov d3, d2\n\t"
      "vmul.f32 d2, d2, d0[0]\n\t"
      "vmul.f32 d3, d3, d0[1]\n\t"
      "vcvt.f32.s32 q15, q15\n\t"
      "vfma.f32 q9, q1, q15\n\t"
      "subs %[n], %[n], #1\n\t"
      "bne 1b\n\t"
      "vst1.32 {d18-d19}, [%[out]]\n\t"
      : [p0] "+r"(p0), [p1] "+r"(p1), [xa] "+r"(xa), [xad] "+r"(xad), [xb] "+r"(xb), [xbd] "+r"(xbd),
        [n] "+r"(nblk)
      : [out] "r"(out)
      : "cc", "memory", "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13",
        "d14", "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27", "d28",
        "d29", "d30", "d31");
}
#endif

#if FG_NEON_A64
/* aarch64 Q8_0, 4 rows x 1 activation: the same loop as fg_q8_vec4_a32 (GCC recomputes the row
 * addresses here), with post-indexed LD1s; SDOT into running sums, or SMULL/SMLAL2 + SADDLP/SADALP.
 * Registers v0-v7 and v16-v31 only (v8-v15 are callee-saved). */
static void fg_q8_vec4_a64(const uint8_t *p0, const uint8_t *p1, const uint8_t *p2, const uint8_t *p3,
                           const int8_t *xq, const float *xd, size_t nblk, float *out) {
  if (nblk == 0) {
    vst1q_f32(out, vdupq_n_f32(0.0f));
    return;
  }
#  if FG_NEON_HAVE_DOTPROD
#    define FG_A64_ROW(L, acc, wa, wb, p)                                                                  \
      "ld1 {v1.h}[" L "], [%[" p "]], #2\n\t"                                                             \
      "ld1 {" wa ".16b, " wb ".16b}, [%[" p "]], #32\n\t"                                                 \
      "sdot " acc ".4s, " wa ".16b, v2.16b\n\t"                                                           \
      "sdot " acc ".4s, " wb ".16b, v3.16b\n\t"
#  else
#    define FG_A64_ROW(L, acc, wa, wb, p)                                                                  \
      "ld1 {v1.h}[" L "], [%[" p "]], #2\n\t"                                                             \
      "ld1 {" wa ".16b, " wb ".16b}, [%[" p "]], #32\n\t"                                                 \
      "smull v18.8h, " wa ".8b, v2.8b\n\t"                                                                \
      "smlal2 v18.8h, " wa ".16b, v2.16b\n\t"                                                             \
      "smull v19.8h, " wb ".8b, v3.8b\n\t"                                                                \
      "smlal2 v19.8h, " wb ".16b, v3.16b\n\t"                                                             \
      "saddlp " acc ".4s, v18.8h\n\t"                                                                     \
      "sadalp " acc ".4s, v19.8h\n\t"
#  endif
  __asm__ volatile(
      "movi v17.4s, #0\n\t"
      "movi v16.4s, #0\n\t"
      "movi v4.4s, #0\n\t"
      "movi v5.4s, #0\n\t"
      "movi v6.4s, #0\n\t"
      "movi v7.4s, #0\n\t"
      "1:\n\t"
      "ld1 {v2.16b, v3.16b}, [%[xq]], #32\n\t"
      "ld1r {v0.4s}, [%[xd]], #4\n\t"
      FG_A64_ROW("0", "v4", "v20", "v21", "p0")
      FG_A64_ROW("1", "v5", "v22", "v23", "p1")
      FG_A64_ROW("2", "v6", "v24", "v25", "p2")
      FG_A64_ROW("3", "v7", "v26", "v27", "p3")
      "addp v28.4s, v4.4s, v5.4s\n\t"
      "addp v29.4s, v6.4s, v7.4s\n\t"
      "addp v28.4s, v28.4s, v29.4s\n\t"
#  if FG_NEON_HAVE_DOTPROD
      "sub v30.4s, v28.4s, v16.4s\n\t"
      "mov v16.16b, v28.16b\n\t"
#  else
      "mov v30.16b, v28.16b\n\t"
#  endif
      "fcvtl v31.4s, v1.4h\n\t"
      "fmul v31.4s, v31.4s, v0.4s\n\t"
      "scvtf v30.4s, v30.4s\n\t"
      "fmla v17.4s, v31.4s, v30.4s\n\t"
      "subs %[n], %[n], #1\n\t"
      "b.ne 1b\n\t"
      "st1 {v17.4s}, [%[out]]\n\t"
      : [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3), [xq] "+r"(xq), [xd] "+r"(xd), [n] "+r"(nblk)
      : [out] "r"(out)
      : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v16", "v17", "v18", "v19", "v20", "v21",
        "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31");
#  undef FG_A64_ROW
}
#  define fg_q8_vec4_asm fg_q8_vec4_a64

#  if FG_NEON_HAVE_DOTPROD
/* aarch64 Q8_0 gemm tile with SDOT: 4 rows x 2 activations (a, b), two quads sharing each loaded weight
 * block; as fg_q8_vec4_a64 otherwise. Writes row 0..3 of activation a to out[0..3], of b to out[4..7]. */
static void fg_q8_gemm42_a64(const uint8_t *p0, const uint8_t *p1, const uint8_t *p2, const uint8_t *p3,
                             const int8_t *xa, const float *xad, const int8_t *xb, const float *xbd, size_t nblk,
                             float *out) {
  if (nblk == 0) {
    vst1q_f32(out, vdupq_n_f32(0.0f));
    vst1q_f32(out + 4, vdupq_n_f32(0.0f));
    return;
  }
#    define FG_A64_ROW2(L, ca, cb, wa, wb, p)                                                              \
      "ld1 {v1.h}[" L "], [%[" p "]], #2\n\t"                                                             \
      "ld1 {" wa ".16b, " wb ".16b}, [%[" p "]], #32\n\t"                                                 \
      "sdot " ca ".4s, " wa ".16b, v2.16b\n\t"                                                            \
      "sdot " ca ".4s, " wb ".16b, v3.16b\n\t"                                                            \
      "sdot " cb ".4s, " wa ".16b, v4.16b\n\t"                                                            \
      "sdot " cb ".4s, " wb ".16b, v5.16b\n\t"
  __asm__ volatile(
      "movi v16.4s, #0\n\t"
      "movi v17.4s, #0\n\t"
      "movi v18.4s, #0\n\t"
      "movi v19.4s, #0\n\t"
      "movi v20.4s, #0\n\t"
      "movi v21.4s, #0\n\t"
      "movi v22.4s, #0\n\t"
      "movi v23.4s, #0\n\t"
      "movi v24.4s, #0\n\t"
      "movi v25.4s, #0\n\t"
      "movi v26.4s, #0\n\t"
      "movi v27.4s, #0\n\t"
      "1:\n\t"
      "ld1 {v2.16b, v3.16b}, [%[xa]], #32\n\t"
      "ld1 {v4.16b, v5.16b}, [%[xb]], #32\n\t"
      "ld1 {v0.s}[0], [%[xad]], #4\n\t"
      "ld1 {v0.s}[1], [%[xbd]], #4\n\t"
      FG_A64_ROW2("0", "v16", "v20", "v28", "v29", "p0")
      FG_A64_ROW2("1", "v17", "v21", "v30", "v31", "p1")
      FG_A64_ROW2("2", "v18", "v22", "v28", "v29", "p2")
      FG_A64_ROW2("3", "v19", "v23", "v30", "v31", "p3")
      "addp v6.4s, v16.4s, v17.4s\n\t"
      "addp v7.4s, v18.4s, v19.4s\n\t"
      "addp v6.4s, v6.4s, v7.4s\n\t"
      "addp v28.4s, v20.4s, v21.4s\n\t"
      "addp v29.4s, v22.4s, v23.4s\n\t"
      "addp v28.4s, v28.4s, v29.4s\n\t"
      "sub v7.4s, v6.4s, v24.4s\n\t"
      "mov v24.16b, v6.16b\n\t"
      "sub v29.4s, v28.4s, v25.4s\n\t"
      "mov v25.16b, v28.16b\n\t"
      "fcvtl v30.4s, v1.4h\n\t"
      "fmul v31.4s, v30.4s, v0.s[0]\n\t"
      "fmul v30.4s, v30.4s, v0.s[1]\n\t"
      "scvtf v7.4s, v7.4s\n\t"
      "scvtf v29.4s, v29.4s\n\t"
      "fmla v26.4s, v31.4s, v7.4s\n\t"
      "fmla v27.4s, v30.4s, v29.4s\n\t"
      "subs %[n], %[n], #1\n\t"
      "b.ne 1b\n\t"
      "st1 {v26.4s, v27.4s}, [%[out]]\n\t"
      : [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3), [xa] "+r"(xa), [xad] "+r"(xad), [xb] "+r"(xb),
        [xbd] "+r"(xbd), [n] "+r"(nblk)
      : [out] "r"(out)
      : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v16", "v17", "v18", "v19", "v20", "v21",
        "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31");
#    undef FG_A64_ROW2
}
#  endif
#else
#  define fg_q8_vec4_asm fg_q8_vec4_a32
#endif
