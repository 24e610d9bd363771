/* neon_q8_packed_sdot.h — the neon_dotprod layout of packed Q8_0 (SDOT by element, 4 rows per register): its
 * packing and its decode (16 rows x 1 activation) and prefill (8 rows x 4 activations) kernels.
 * Included by neon_q8_packed.h on tables without the int8 matrix multiply. */
#ifndef FG_NEON_IMPL_H
#  error "a part of kernels/arm/neon_impl.h (compiled once per NEON table): include that"
#endif

static void fg_pk_pack_q8_0(uint32_t type, const uint8_t *w, size_t row_bytes, size_t cols, size_t r0, size_t r1,
                            uint8_t *dst) {
  (void)type;
  const size_t nblk = cols / 32;
  for (size_t s = r0 / FG_PK_ROWS; s < r1 / FG_PK_ROWS; s++) {
    uint8_t *o = dst + s * nblk * FG_PK_BLOCK;
    const uint8_t *row0 = w + s * FG_PK_ROWS * row_bytes;
    for (size_t k = 0; k < nblk; k++, o += FG_PK_BLOCK) {
      for (size_t g = 0; g < 4; g++) {
        const uint8_t *r[4];
        for (size_t i = 0; i < 4; i++) r[i] = row0 + (4 * g + i) * row_bytes + k * sizeof(fg_block_q8_0);
        fg_pk_scales4(o + 16 * g, r);
        /* ST4 writes lane c of the four rows' vectors one after another: words c of rows 0..3 */
        for (size_t half = 0; half < 2; half++) {
          uint32x4x4_t v;
          v.val[0] = vreinterpretq_u32_u8(vld1q_u8(r[0] + 2 + 16 * half));
          v.val[1] = vreinterpretq_u32_u8(vld1q_u8(r[1] + 2 + 16 * half));
          v.val[2] = vreinterpretq_u32_u8(vld1q_u8(r[2] + 2 + 16 * half));
          v.val[3] = vreinterpretq_u32_u8(vld1q_u8(r[3] + 2 + 16 * half));
          vst4q_u32((uint32_t *)(void *)(o + 64 + 128 * g + 64 * half), v);
        }
      }
    }
  }
}

/* strips >= 1 consecutive strips (16 rows each; p = the first one's first block) x one activation:
 * out[0..16 strips). Assembly: GCC computes the eight 64-byte addresses of a block with separate adds;
 * here every load post-increments one pointer. Per block (16 rows): loads of the activation and the 16
 * weight scales, 8 loads of weights, 4 zeroings, 32 SDOTs, 12 float ops, and in FG_PK_VEC_LOOP half a
 * scale load and a loop branch: 60 instructions per block. */
static void fg_pk_vec16(const uint8_t *p, size_t strips, const int8_t *xq0, const float *xd0, size_t nblk, float *out) {
#  define FG_PK_GROUP(acc)                                                                                  \
    "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[p]], #64\n\t"                                             \
    "ld1 {v28.16b, v29.16b, v30.16b, v31.16b}, [%[p]], #64\n\t"                                             \
    "sdot " acc ".4s, v24.16b, v0.4b[0]\n\t"                                                                \
    "sdot " acc ".4s, v25.16b, v0.4b[1]\n\t"                                                                \
    "sdot " acc ".4s, v26.16b, v0.4b[2]\n\t"                                                                \
    "sdot " acc ".4s, v27.16b, v0.4b[3]\n\t"                                                                \
    "sdot " acc ".4s, v28.16b, v1.4b[0]\n\t"                                                                \
    "sdot " acc ".4s, v29.16b, v1.4b[1]\n\t"                                                                \
    "sdot " acc ".4s, v30.16b, v1.4b[2]\n\t"                                                                \
    "sdot " acc ".4s, v31.16b, v1.4b[3]\n\t"
  /* one block; dx: the activation scale as an element of v8 */
#  define FG_PK_BLOCK16(dx)                                                                                 \
    "ld1 {v0.16b, v1.16b}, [%[xq]], #32\n\t"                                                                \
    "ld1 {v4.4s, v5.4s, v6.4s, v7.4s}, [%[p]], #64\n\t"                                                     \
    "movi v20.4s, #0\n\t"                                                                                   \
    "movi v21.4s, #0\n\t"                                                                                   \
    "movi v22.4s, #0\n\t"                                                                                   \
    "movi v23.4s, #0\n\t"                                                                                   \
    FG_PK_GROUP("v20")                                                                                      \
    FG_PK_GROUP("v21")                                                                                      \
    FG_PK_GROUP("v22")                                                                                      \
    FG_PK_GROUP("v23")                                                                                      \
    "fmul v4.4s, v4.4s, " dx "\n\t"                                                                         \
    "fmul v5.4s, v5.4s, " dx "\n\t"                                                                         \
    "fmul v6.4s, v6.4s, " dx "\n\t"                                                                         \
    "fmul v7.4s, v7.4s, " dx "\n\t"                                                                         \
    "scvtf v20.4s, v20.4s\n\t"                                                                              \
    "scvtf v21.4s, v21.4s\n\t"                                                                              \
    "scvtf v22.4s, v22.4s\n\t"                                                                              \
    "scvtf v23.4s, v23.4s\n\t"                                                                              \
    "fmla v16.4s, v4.4s, v20.4s\n\t"                                                                        \
    "fmla v17.4s, v5.4s, v21.4s\n\t"                                                                        \
    "fmla v18.4s, v6.4s, v22.4s\n\t"                                                                        \
    "fmla v19.4s, v7.4s, v23.4s\n\t"
  const size_t pairs = nblk / 2, odd = nblk % 2;
  const int8_t *xq;
  const float *xd;
  size_t np;
  __asm__ volatile(FG_PK_VEC_LOOP(FG_PK_BLOCK16, "v16", "v17", "v18", "v19")
                   : [p] "+r"(p), [xq] "=&r"(xq), [xd] "=&r"(xd), [np] "=&r"(np), [strips] "+r"(strips),
                     [out] "+r"(out)
                   : [xq0] "r"(xq0), [xd0] "r"(xd0), [pairs] "r"(pairs), [odd] "r"(odd)
                   : "cc", "memory", "v0", "v1", "v4", "v5", "v6", "v7", "v8", "v16", "v17", "v18", "v19", "v20",
                     "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31");
#  undef FG_PK_BLOCK16
#  undef FG_PK_GROUP
}

/* groups g and g + 1 (8 rows) of a strip (p = its first block) x 4 activations: y[b][0..7]. Assembly, as
 * fg_pk_vec16: per block, the two groups' scales and 256 weights (5 loads) serve 4 activations of 26
 * instructions each (activation block and scale, 2 zeroings, 16 SDOTs, 6 float ops), plus the loop:
 * 111 instructions per 32 outputs. All 32 vector registers: v8-v15 (callee-saved) hold the sums, and
 * the compiler saves them around the loop. */
static void fg_pk_gemm84(const uint8_t *p, size_t g, const int8_t *const xq[4], const float *const xd[4], size_t nblk,
                         float *const y[4]) {
  if (nblk == 0) {
    fg_pk_zero84(y);
    return;
  }
  const uint8_t *pd = p + 16 * g, *pq = p + 64 + 128 * g;
  const int8_t *x0 = xq[0], *x1 = xq[1], *x2 = xq[2], *x3 = xq[3];
  const float *d0 = xd[0], *d1 = xd[1], *d2 = xd[2], *d3 = xd[3];
  const size_t step = FG_PK_BLOCK, qstep = FG_PK_BLOCK - 192;
#  define FG_PK_ACT2(x, d, acc0, acc1)                                                                      \
    "ld1 {v0.16b, v1.16b}, [%[" x "]], #32\n\t"                                                             \
    "ld1r {v2.4s}, [%[" d "]], #4\n\t"                                                                      \
    "movi v3.4s, #0\n\t"                                                                                    \
    "movi v6.4s, #0\n\t"                                                                                    \
    "sdot v3.4s, v16.16b, v0.4b[0]\n\t"                                                                     \
    "sdot v6.4s, v24.16b, v0.4b[0]\n\t"                                                                     \
    "sdot v3.4s, v17.16b, v0.4b[1]\n\t"                                                                     \
    "sdot v6.4s, v25.16b, v0.4b[1]\n\t"                                                                     \
    "sdot v3.4s, v18.16b, v0.4b[2]\n\t"                                                                     \
    "sdot v6.4s, v26.16b, v0.4b[2]\n\t"                                                                     \
    "sdot v3.4s, v19.16b, v0.4b[3]\n\t"                                                                     \
    "sdot v6.4s, v27.16b, v0.4b[3]\n\t"                                                                     \
    "sdot v3.4s, v20.16b, v1.4b[0]\n\t"                                                                     \
    "sdot v6.4s, v28.16b, v1.4b[0]\n\t"                                                                     \
    "sdot v3.4s, v21.16b, v1.4b[1]\n\t"                                                                     \
    "sdot v6.4s, v29.16b, v1.4b[1]\n\t"                                                                     \
    "sdot v3.4s, v22.16b, v1.4b[2]\n\t"                                                                     \
    "sdot v6.4s, v30.16b, v1.4b[2]\n\t"                                                                     \
    "sdot v3.4s, v23.16b, v1.4b[3]\n\t"                                                                     \
    "sdot v6.4s, v31.16b, v1.4b[3]\n\t"                                                                     \
    "fmul v7.4s, v4.4s, v2.4s\n\t"                                                                          \
    "scvtf v3.4s, v3.4s\n\t"                                                                                \
    "fmla " acc0 ".4s, v7.4s, v3.4s\n\t"                                                                    \
    "fmul v7.4s, v5.4s, v2.4s\n\t"                                                                          \
    "scvtf v6.4s, v6.4s\n\t"                                                                                \
    "fmla " acc1 ".4s, v7.4s, v6.4s\n\t"
  __asm__ volatile(
      FG_PK_ZERO_V8_V15
      "1:\n\t"
      "ld1 {v4.4s, v5.4s}, [%[pd]], %[step]\n\t"
      "ld1 {v16.16b, v17.16b, v18.16b, v19.16b}, [%[pq]], #64\n\t"
      "ld1 {v20.16b, v21.16b, v22.16b, v23.16b}, [%[pq]], #64\n\t"
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[pq]], #64\n\t"
      "ld1 {v28.16b, v29.16b, v30.16b, v31.16b}, [%[pq]], %[qstep]\n\t"
      FG_PK_ACT2("x0", "d0", "v8", "v9")
      FG_PK_ACT2("x1", "d1", "v10", "v11")
      FG_PK_ACT2("x2", "d2", "v12", "v13")
      FG_PK_ACT2("x3", "d3", "v14", "v15")
      "subs %[n], %[n], #1\n\t"
      "b.ne 1b\n\t"
      "st1 {v8.4s, v9.4s}, [%[y0]]\n\t"
      "st1 {v10.4s, v11.4s}, [%[y1]]\n\t"
      "st1 {v12.4s, v13.4s}, [%[y2]]\n\t"
      "st1 {v14.4s, v15.4s}, [%[y3]]\n\t"
      : [pd] "+r"(pd), [pq] "+r"(pq), [x0] "+r"(x0), [x1] "+r"(x1), [x2] "+r"(x2), [x3] "+r"(x3), [d0] "+r"(d0),
        [d1] "+r"(d1), [d2] "+r"(d2), [d3] "+r"(d3), [n] "+r"(nblk)
      : [step] "r"(step), [qstep] "r"(qstep), [y0] "r"(y[0]), [y1] "r"(y[1]), [y2] "r"(y[2]), [y3] "r"(y[3])
      : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",
        "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30",
        "v31");
#  undef FG_PK_ACT2
}
