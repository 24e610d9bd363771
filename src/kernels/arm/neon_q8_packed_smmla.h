/* neon_q8_packed_smmla.h — the neon_i8mm layout of packed Q8_0 (SMMLA, two rows per register): its packing, the
 * SMMLA forms of the activations (fg_mm8_*), its decode and prefill kernels. Included by
 * neon_q8_packed.h on the neon_i8mm table. */
#ifndef FG_NEON_IMPL_H
#  error "a part of kernels/arm/neon_impl.h (compiled once per NEON table): include that"
#endif

/* neon_i8mm (SMMLA: a 2 x 8 by 8 x 2 int8 product into the four lanes of an int32x4). Per strip and block,
 * after the 16 scales: for each half h of the strip (rows 8h..8h+7), for c = 0..3 (bytes 8c..8c+7),
 * 4 registers of two rows' 8 bytes each: rows (0, 2), (1, 3), (4, 6), (5, 7) of the half. Against 8
 * bytes of each of two activations a0, a1 side by side, SMMLA adds the four dots row x activation,
 * lanes (0, a0) (0, a1) (2, a0) (2, a1): 32 multiply-adds where SDOT does 16. The prefill kernel runs
 * 8 rows x 4 activations; the activations come from act_prep in the same form (fg_mm8_*). Decode has
 * one activation: against [x, 0] and [0, x] (also from act_prep) the pairs (0, 2) and (1, 3) land in
 * lanes 0, 2 and 1, 3 of one accumulator: rows 0..3 in order, the same SMMLA count as SDOT's. */
static void fg_pk_pack_q8_0(uint32_t type, const uint8_t *w, size_t row_bytes, size_t cols, size_t r0, size_t r1,
                            uint8_t *dst) {
  (void)type;
  const size_t nblk = cols / 32;
  for (size_t s = r0 / FG_PK_ROWS; s < r1 / FG_PK_ROWS; s++) {
    uint8_t *o = dst + s * nblk * FG_PK_BLOCK;
    const uint8_t *row0 = w + s * FG_PK_ROWS * row_bytes;
    for (size_t k = 0; k < nblk; k++, o += FG_PK_BLOCK) {
      const uint8_t *r[FG_PK_ROWS];
      for (size_t i = 0; i < FG_PK_ROWS; i++) r[i] = row0 + i * row_bytes + k * sizeof(fg_block_q8_0);
      for (size_t g = 0; g < 4; g++) fg_pk_scales4(o + 16 * g, r + 4 * g);
      for (size_t h = 0; h < 2; h++)
        for (size_t j = 0; j < 4; j++) {
          /* pair j of the half: rows (0, 2), (1, 3) of its first quad, then of its second; ZIP of 64-bit
           * lanes puts their bytes 8c..8c+7 side by side */
          const size_t ra = 8 * h + 4 * (j / 2) + j % 2;
          const uint64x2_t a0 = vreinterpretq_u64_u8(vld1q_u8(r[ra] + 2));
          const uint64x2_t a1 = vreinterpretq_u64_u8(vld1q_u8(r[ra] + 18));
          const uint64x2_t b0 = vreinterpretq_u64_u8(vld1q_u8(r[ra + 2] + 2));
          const uint64x2_t b1 = vreinterpretq_u64_u8(vld1q_u8(r[ra + 2] + 18));
          uint8_t *d = o + 64 + 256 * h + 16 * j;
          vst1q_u8(d, vreinterpretq_u8_u64(vzip1q_u64(a0, b0)));
          vst1q_u8(d + 64, vreinterpretq_u8_u64(vzip2q_u64(a0, b0)));
          vst1q_u8(d + 128, vreinterpretq_u8_u64(vzip1q_u64(a1, b1)));
          vst1q_u8(d + 192, vreinterpretq_u8_u64(vzip2q_u64(a1, b1)));
        }
    }
  }
}

/* The activations' SMMLA forms, after the Q8 rows and flags of fg_q8_rows_prep (one region, 64-byte
 * aligned): groups of 4 (activations 4G..4G+3 for 4G + 4 <= nb), per block 160 bytes: for c = 0..3,
 * [a0, a1] and [a2, a3] bytes 8c..8c+7, then the scales d0 d1 d0 d1 d2 d3 d2 d3; the activations after
 * the last group one by one, per block 128 bytes: for c = 0..3, [x, 0] and [0, x] bytes 8c..8c+7. */
#    define FG_MM8_GROUP 160
#    define FG_MM8_SINGLE 128

FG_NEON_INLINE size_t fg_mm8_base(size_t cols, size_t nb) {
  return (fg_q8_rows_size(cols, nb) + 63) / 64 * 64;
}

static size_t fg_mm8_rows_size(size_t cols, size_t nb) {
  const size_t base = fg_q8_rows_size(cols, nb), nblk = cols / 32;
  uint64_t g, sgl;
  if (base == SIZE_MAX || !fg_mul_u64(nb / 4 * FG_MM8_GROUP, nblk, &g) ||
      !fg_mul_u64(nb % 4 * FG_MM8_SINGLE, nblk, &sgl))
    return SIZE_MAX;
  const uint64_t n = (base + 63) / 64 * 64 + g + sgl;
  return n > SIZE_MAX - 64 ? SIZE_MAX : (size_t)n;
}

/* act_unit 4 (b0 a multiple of 4): one thread writes a group's blocks; each activation fills its own slots */
static void fg_mm8_rows_prep(const float *x, size_t ldx, size_t cols, size_t nb, size_t b0, size_t b1, void *act) {
  fg_q8_rows_prep(x, ldx, cols, nb, b0, b1, act);
  const size_t nblk = cols / 32, stride = fg_act_q8_row_bytes(cols), nb4 = nb / 4 * 4;
  uint8_t *const sec = (uint8_t *)act + fg_mm8_base(cols, nb);
  const uint8x8_t zero = vdup_n_u8(0);
  for (size_t b = b0; b < b1; b++) {
    const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)act + b * stride, cols);
    const uint8_t *q = (const uint8_t *)xr.qs;
    if (b < nb4) { /* activation b % 4 of group b / 4 */
      uint8_t *o = sec + b / 4 * nblk * FG_MM8_GROUP;
      const size_t j = b % 4;
      for (size_t k = 0; k < nblk; k++, o += FG_MM8_GROUP) {
        for (size_t c = 0; c < 4; c++) vst1_u8(o + 32 * c + 8 * j, vld1_u8(q + 32 * k + 8 * c));
        float *d = (float *)(void *)(o + 128);
        d[j / 2 * 4 + j % 2] = d[j / 2 * 4 + j % 2 + 2] = xr.d[k];
      }
    } else {
      uint8_t *o = sec + nb / 4 * nblk * FG_MM8_GROUP + (b - nb4) * nblk * FG_MM8_SINGLE;
      for (size_t k = 0; k < nblk; k++, o += FG_MM8_SINGLE)
        for (size_t c = 0; c < 4; c++) {
          const uint8x8_t v = vld1_u8(q + 32 * k + 8 * c);
          vst1q_u8(o + 32 * c, vcombine_u8(v, zero));
          vst1q_u8(o + 32 * c + 16, vcombine_u8(zero, v));
        }
    }
  }
}

/* strips >= 1 consecutive strips (p = the first one's first block) x one activation (xs: its single
 * form, xd: its scales): out[0..16 strips).
 * Per block: 2 loads of the activation's forms, 1 of the scales, 8 of weights, 4 zeroings, 32 SMMLAs,
 * 12 float ops; blocks in pairs as fg_pk_vec16 of neon_dotprod: 60 instructions per block. */
static void fg_pk_vec16(const uint8_t *p, size_t strips, const uint8_t *xq0, const float *xd0, size_t nblk, float *out) {
#    define FG_MM_HALF(acc0, acc1)                                                                          \
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[p]], #64\n\t"                                           \
      "smmla " acc0 ".4s, v24.16b, v0.16b\n\t"                                                              \
      "smmla " acc0 ".4s, v25.16b, v1.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v26.16b, v0.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v27.16b, v1.16b\n\t"                                                              \
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[p]], #64\n\t"                                           \
      "smmla " acc0 ".4s, v24.16b, v2.16b\n\t"                                                              \
      "smmla " acc0 ".4s, v25.16b, v3.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v26.16b, v2.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v27.16b, v3.16b\n\t"                                                              \
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[p]], #64\n\t"                                           \
      "smmla " acc0 ".4s, v24.16b, v4.16b\n\t"                                                              \
      "smmla " acc0 ".4s, v25.16b, v5.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v26.16b, v4.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v27.16b, v5.16b\n\t"                                                              \
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[p]], #64\n\t"                                           \
      "smmla " acc0 ".4s, v24.16b, v6.16b\n\t"                                                              \
      "smmla " acc0 ".4s, v25.16b, v7.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v26.16b, v6.16b\n\t"                                                              \
      "smmla " acc1 ".4s, v27.16b, v7.16b\n\t"
#    define FG_MM_BLOCK16(dx)                                                                               \
      "ld1 {v0.16b, v1.16b, v2.16b, v3.16b}, [%[xq]], #64\n\t"                                              \
      "ld1 {v4.16b, v5.16b, v6.16b, v7.16b}, [%[xq]], #64\n\t"                                              \
      "ld1 {v16.4s, v17.4s, v18.4s, v19.4s}, [%[p]], #64\n\t"                                               \
      "movi v20.4s, #0\n\t"                                                                                 \
      "movi v21.4s, #0\n\t"                                                                                 \
      "movi v22.4s, #0\n\t"                                                                                 \
      "movi v23.4s, #0\n\t"                                                                                 \
      FG_MM_HALF("v20", "v21")                                                                              \
      FG_MM_HALF("v22", "v23")                                                                              \
      "fmul v16.4s, v16.4s, " dx "\n\t"                                                                     \
      "fmul v17.4s, v17.4s, " dx "\n\t"                                                                     \
      "fmul v18.4s, v18.4s, " dx "\n\t"                                                                     \
      "fmul v19.4s, v19.4s, " dx "\n\t"                                                                     \
      "scvtf v20.4s, v20.4s\n\t"                                                                            \
      "scvtf v21.4s, v21.4s\n\t"                                                                            \
      "scvtf v22.4s, v22.4s\n\t"                                                                            \
      "scvtf v23.4s, v23.4s\n\t"                                                                            \
      "fmla v28.4s, v16.4s, v20.4s\n\t"                                                                     \
      "fmla v29.4s, v17.4s, v21.4s\n\t"                                                                     \
      "fmla v30.4s, v18.4s, v22.4s\n\t"                                                                     \
      "fmla v31.4s, v19.4s, v23.4s\n\t"
  const size_t pairs = nblk / 2, odd = nblk % 2;
  const uint8_t *xq;
  const float *xd;
  size_t np;
  __asm__ volatile(FG_PK_VEC_LOOP(FG_MM_BLOCK16, "v28", "v29", "v30", "v31")
                   : [p] "+r"(p), [xq] "=&r"(xq), [xd] "=&r"(xd), [np] "=&r"(np), [strips] "+r"(strips),
                     [out] "+r"(out)
                   : [xq0] "r"(xq0), [xd0] "r"(xd0), [pairs] "r"(pairs), [odd] "r"(odd)
                   : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v16", "v17", "v18",
                     "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31");
#    undef FG_MM_BLOCK16
#    undef FG_MM_HALF
}

/* half h (rows 8h..8h+7) of a strip (p = its first block) x the 4 activations of a group (ag: its
 * form): y[b][0..7]. Per block: the half's scales, 256 weights and the group's 128 bytes and scales
 * (7 loads), 8 zeroings, 32 SMMLAs, the scale pairs (4 TRN), 8 x (scale product, conversion,
 * fused multiply-add), the loop: 78 instructions per 32 outputs (neon_dotprod's: 111). The sums of
 * row pair P (rows (0, 2), (1, 3), (4, 6), (5, 7)) and activation pair G are v16 + 2P + G, the outputs
 * v8 + 2P + G (callee-saved: the compiler saves them around the loop); TRN turns them into rows at
 * the end. */
static void fg_pk_gemm84(const uint8_t *p, size_t h, const uint8_t *ag, size_t nblk, float *const y[4]) {
  if (nblk == 0) {
    fg_pk_zero84(y);
    return;
  }
  const uint8_t *pd = p + 32 * h, *pq = p + 64 + 256 * h;
  const size_t step = FG_PK_BLOCK, qstep = FG_PK_BLOCK - 192;
#    define FG_MM_CHUNK(g0, g1)                                                                             \
      "smmla v16.4s, v24.16b, " g0 ".16b\n\t"                                                               \
      "smmla v17.4s, v24.16b, " g1 ".16b\n\t"                                                               \
      "smmla v18.4s, v25.16b, " g0 ".16b\n\t"                                                               \
      "smmla v19.4s, v25.16b, " g1 ".16b\n\t"                                                               \
      "smmla v20.4s, v26.16b, " g0 ".16b\n\t"                                                               \
      "smmla v21.4s, v26.16b, " g1 ".16b\n\t"                                                               \
      "smmla v22.4s, v27.16b, " g0 ".16b\n\t"                                                               \
      "smmla v23.4s, v27.16b, " g1 ".16b\n\t"
#    define FG_MM_SCALE(ws, xs, sum, out)                                                                   \
      "fmul v24.4s, " ws ".4s, " xs ".4s\n\t"                                                               \
      "scvtf " sum ".4s, " sum ".4s\n\t"                                                                    \
      "fmla " out ".4s, v24.4s, " sum ".4s\n\t"
  __asm__ volatile(
      FG_PK_ZERO_V8_V15
      "1:\n\t"
      "ld1 {v0.4s, v1.4s}, [%[pd]], %[step]\n\t"
      "movi v16.4s, #0\n\t"
      "movi v17.4s, #0\n\t"
      "movi v18.4s, #0\n\t"
      "movi v19.4s, #0\n\t"
      "movi v20.4s, #0\n\t"
      "movi v21.4s, #0\n\t"
      "movi v22.4s, #0\n\t"
      "movi v23.4s, #0\n\t"
      "ld1 {v28.16b, v29.16b, v30.16b, v31.16b}, [%[ag]], #64\n\t"
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[pq]], #64\n\t"
      FG_MM_CHUNK("v28", "v29")
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[pq]], #64\n\t"
      FG_MM_CHUNK("v30", "v31")
      "ld1 {v28.16b, v29.16b, v30.16b, v31.16b}, [%[ag]], #64\n\t"
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[pq]], #64\n\t"
      FG_MM_CHUNK("v28", "v29")
      "ld1 {v24.16b, v25.16b, v26.16b, v27.16b}, [%[pq]], %[qstep]\n\t"
      FG_MM_CHUNK("v30", "v31")
      "ld1 {v2.4s, v3.4s}, [%[ag]], #32\n\t"
      "trn1 v4.4s, v0.4s, v0.4s\n\t"
      "trn2 v5.4s, v0.4s, v0.4s\n\t"
      "trn1 v6.4s, v1.4s, v1.4s\n\t"
      "trn2 v7.4s, v1.4s, v1.4s\n\t"
      FG_MM_SCALE("v4", "v2", "v16", "v8")
      FG_MM_SCALE("v4", "v3", "v17", "v9")
      FG_MM_SCALE("v5", "v2", "v18", "v10")
      FG_MM_SCALE("v5", "v3", "v19", "v11")
      FG_MM_SCALE("v6", "v2", "v20", "v12")
      FG_MM_SCALE("v6", "v3", "v21", "v13")
      FG_MM_SCALE("v7", "v2", "v22", "v14")
      FG_MM_SCALE("v7", "v3", "v23", "v15")
      "subs %[n], %[n], #1\n\t"
      "b.ne 1b\n\t"
      "trn1 v0.4s, v8.4s, v10.4s\n\t"
      "trn1 v1.4s, v12.4s, v14.4s\n\t"
      "trn2 v2.4s, v8.4s, v10.4s\n\t"
      "trn2 v3.4s, v12.4s, v14.4s\n\t"
      "trn1 v4.4s, v9.4s, v11.4s\n\t"
      "trn1 v5.4s, v13.4s, v15.4s\n\t"
      "trn2 v6.4s, v9.4s, v11.4s\n\t"
      "trn2 v7.4s, v13.4s, v15.4s\n\t"
      "st1 {v0.4s, v1.4s}, [%[y0]]\n\t"
      "st1 {v2.4s, v3.4s}, [%[y1]]\n\t"
      "st1 {v4.4s, v5.4s}, [%[y2]]\n\t"
      "st1 {v6.4s, v7.4s}, [%[y3]]\n\t"
      : [pd] "+r"(pd), [pq] "+r"(pq), [ag] "+r"(ag), [n] "+r"(nblk)
      : [step] "r"(step), [qstep] "r"(qstep), [y0] "r"(y[0]), [y1] "r"(y[1]), [y2] "r"(y[2]), [y3] "r"(y[3])
      : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",
        "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30",
        "v31");
#    undef FG_MM_SCALE
#    undef FG_MM_CHUNK
}
