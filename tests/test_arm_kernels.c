/* test_arm_kernels.c — the ARM NEON tables (src/kernels/arm) against the kernel specs, bit for bit,
 * plus the neon_compat.h shims and the ARM dispatch. Runs under qemu-arm / qemu-aarch64 in the cross
 * builds (docs/ARM.md); on other hosts it only checks that no ARM table is offered.
 *
 * The data includes the cases that matter on armv7, where NEON flushes denormals to zero: denormal and
 * tiny (< 2^-40) activations, tiny F32/BF16 weights, activation blocks whose Q8 scale is tiny; plus
 * zeros, huge values, Q8_0 weights of -128, partial row tiles, odd float widths, unaligned rows,
 * matmul_rows and 1 or 3 threads.
 *
 * Dot-product detection: FG_TEST_EXPECT_DOTPROD=0|1 (tests/arm.cmake sets it: 1 under qemu's default
 * CPU "max", 0 with QEMU_CPU=cortex-a15 / cortex-a53) says whether this CPU has it; the test checks the
 * detection (hwcap decision, the armv7 SIGILL probe, thread-safe once) and the dispatcher's choice.
 * FG_TEST_EXPECT_I8MM=0|1 the same for the int8 matrix multiply (aarch64's neon_i8mm: 1 under "max",
 * 0 with neoverse-n1, which has the dot product only). */
#include "kernels/attn.h"
#include "kernels/kernels.h"
#include "kernels/ops.h"
#include "tensor/dtype.h"
#include "testutil.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>

#if defined(__ARM_NEON)
#  include "kernels/arm/neon.h"
#  include "kernels/arm/neon_compat.h"
#endif

// ----------------------------------------------------------------------------
// data

typedef struct rng { uint64_t s; } rng;
static uint64_t rng_u64(rng *r) { /* splitmix64 */
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static float rng_unif(rng *r) { return (float)((rng_u64(r) >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f; }

enum { D_RANDOM, D_ZEROS, D_HUGE, D_DENORMAL_X, D_TINY_X, D_TINY_W, D_TINY_BLOCK, D_MIXED, D_COUNT };
static const char *const k_dname[D_COUNT] = {"random", "zeros", "huge", "denormal-x", "tiny-x", "tiny-w",
                                             "tiny-block", "mixed"};

static void fill(float *v, size_t n, int kind, int is_w, uint32_t type, rng *r) {
  for (size_t i = 0; i < n; i++) {
    const float u = rng_unif(r);
    switch (kind) {
      case D_ZEROS: v[i] = 0.0f; break;
      case D_HUGE: v[i] = u * (type == FG_TYPE_F16 ? (is_w ? 3e4f : 1e3f) : (is_w ? 1e15f : 1e15f)); break;
      case D_DENORMAL_X: v[i] = is_w ? u : u * 1e-39f; break;
      case D_TINY_X: v[i] = is_w ? u : (i % 3 == 0 ? u * 1e-13f : u); break;            /* ~2^-43 among normal */
      case D_TINY_W: v[i] = is_w ? (i % 5 == 0 ? u * 1e-39f : (i % 7 == 0 ? u * 1e-14f : u)) : u; break;
      case D_TINY_BLOCK: v[i] = is_w ? u : ((i / 32) % 2 ? u * 1e-20f : u); break;      /* Q8 scale ~2^-73 */
      case D_MIXED: v[i] = u * ldexpf(1.0f, (int)(rng_u64(r) % 30) - 20); break;
      default: v[i] = u; break;
    }
  }
}

/* every type the NEON tables have kernels of their own for: the q8-spec types beyond Q8_0/Q4_0 too (a
 * table entry missing for one of them would fall back to the portable q8 kernel and fail the check) */
static const uint32_t k_types[] = {FG_TYPE_F32,  FG_TYPE_F16,  FG_TYPE_BF16, FG_TYPE_Q8_0, FG_TYPE_Q4_0,
                                   FG_TYPE_Q4_1, FG_TYPE_Q5_0, FG_TYPE_Q5_1, FG_TYPE_Q2_K, FG_TYPE_Q3_K,
                                   FG_TYPE_Q4_K, FG_TYPE_Q5_K, FG_TYPE_Q6_K, FG_TYPE_IQ4_NL, FG_TYPE_IQ4_XS};

/* the spec value for (kernel spec, weight row, activation row) */
static float spec_value(uint32_t spec, uint32_t type, const void *w, const float *x, size_t cols) {
  if (spec == FG_SPEC_FMA) return fg_spec_dot_fma(type, w, x, cols);
  if (spec == FG_SPEC_Q8) {
    void *buf = aligned_alloc(64, (fg_act_q8_row_bytes(cols) + 63) & ~(size_t)63);
    fg_act_q8_row q = fg_act_q8_row_at(buf, cols);
    fg_spec_quantize_act_q8(x, cols, q);
    const float s = fg_spec_dot_q8(type, w, q, cols);
    free(buf);
    return s;
  }
  return fg_vec_dot_ref(type, w, x, cols);
}

static int same_float(float a, float b) { return (isnan(a) && isnan(b)) || a == b; }

// ----------------------------------------------------------------------------
// one table, one case

static int g_reports;

/* packed: 0, or the product from the table's packed copy (kernels.h, load-time repacking; rows a multiple of its
 * strips); 2 also overwrites a Q6_K block's values and scales with random bytes (every int8 scale, -128 included) */
static void run_case_pk(fg_ops *ops, const fg_kernels *k, uint32_t type, size_t rows, size_t cols, size_t nb, int data,
                        int use_rows, size_t w_off, int packed, rng *r) {
  uint64_t rb64;
  if (!fg_type_row_bytes(type, cols, &rb64)) return;
  /* rows misaligned by whole elements (an F32 row must stay 4-byte aligned: VFP loads fault otherwise) */
  const size_t align = type == FG_TYPE_F32 ? 4 : 2;
  w_off *= align;
  const size_t row_bytes = (size_t)rb64 + (w_off / align & 1) * align; /* odd offsets also pad the rows */
  uint8_t *wbuf = malloc(w_off + row_bytes * rows + 64);
  uint8_t *w = wbuf + w_off; /* (rows, row_bytes) */
  float *tmp = malloc(cols * sizeof *tmp);
  for (size_t i = 0; i < rows; i++) {
    fill(tmp, cols, data, 1, type, r);
    fg_quantize_row(type, tmp, w + i * row_bytes, cols);
    if (type == FG_TYPE_Q8_0 && data == D_MIXED) ((fg_block_q8_0 *)(void *)(w + i * row_bytes))[0].qs[i % 32] = -128;
    if (type == FG_TYPE_F32 && data == D_TINY_W) { /* exact denormal weights (quantize keeps f32 as is) */
      const float dn = -3e-42f;
      memcpy(w + i * row_bytes + 4 * (i % cols), &dn, 4);
    }
    if (type == FG_TYPE_Q6_K && packed == 2)
      for (size_t K = 0; K < cols / 256; K++) {
        uint8_t *blk = w + i * row_bytes + K * sizeof(fg_block_q6_k);
        for (size_t j = 0; j < offsetof(fg_block_q6_k, d); j++) blk[j] = (uint8_t)rng_u64(r);
      }
    if (type == FG_TYPE_Q4_K && packed == 2) /* every 6-bit scale, minimum and nibble pattern; d, dmin kept */
      for (size_t kb = 0; kb < cols / 256; kb++) {
        fg_block_q4_k *blk = (fg_block_q4_k *)(void *)(w + i * row_bytes) + kb;
        for (size_t j = 0; j < sizeof blk->scales; j++) blk->scales[j] = (uint8_t)rng_u64(r);
        for (size_t j = 0; j < sizeof blk->qs; j++) blk->qs[j] = (uint8_t)rng_u64(r);
      }
    if (type == FG_TYPE_Q5_0 && packed == 2) /* every fifth bit and nibble pattern; the scale kept */
      for (size_t kb = 0; kb < cols / 32; kb++) {
        fg_block_q5_0 *blk = (fg_block_q5_0 *)(void *)(w + i * row_bytes) + kb;
        for (size_t j = 0; j < sizeof blk->qh; j++) blk->qh[j] = (uint8_t)rng_u64(r);
        for (size_t j = 0; j < sizeof blk->qs; j++) blk->qs[j] = (uint8_t)rng_u64(r);
      }
  }
  const size_t pk_size = packed && k->pack_size ? k->pack_size(type, rows, cols) : 0;
  uint8_t *pk = pk_size ? aligned_alloc(64, (pk_size + 63) & ~(size_t)63) : NULL; /* as the loader's copies */
  CHECK(!packed || (pk != NULL && rows % k->pack_rows == 0));
  if (pk) k->pack(type, w, row_bytes, cols, 0, rows, pk);
  const size_t ldx = cols + 3, n_out = use_rows ? rows + 3 : rows, ldy = n_out + 1;
  float *x = malloc(ldx * nb * sizeof *x); /* (nb, ldx) */
  for (size_t b = 0; b < nb; b++) fill(x + b * ldx, cols, data, 0, type, r);
  float *y = malloc(ldy * nb * sizeof *y); /* (nb, ldy) */
  for (size_t i = 0; i < ldy * nb; i++) y[i] = -777.0f;
  int32_t *ridx = NULL;
  if (use_rows) {
    ridx = malloc(n_out * sizeof *ridx);
    for (size_t i = 0; i < n_out; i++) ridx[i] = (int32_t)(rng_u64(r) % rows);
  }
  fg_mat W = {type, (uint32_t)rows, (uint32_t)cols, row_bytes, w, NULL, NULL};
  W.packed = pk;
  W.packed_for = pk ? k : NULL;
  if (use_rows) CHECK_OK(fg_ops_matmul_rows(ops, &W, ridx, n_out, x, ldx, nb, y, ldy));
  else CHECK_OK(fg_ops_matmul(ops, &W, x, ldx, nb, y, ldy));

  const fg_mm_kernel *kern = &k->vec[type];
  if (k->gemm[type].run && nb >= k->gemm_min_nb[type]) kern = &k->gemm[type];
  int bad = 0, clobbered = 0;
  for (size_t b = 0; b < nb; b++) {
    for (size_t i = 0; i < n_out && !bad; i++) {
      const void *wr = w + (ridx ? (size_t)ridx[i] : i) * row_bytes;
      const float want = spec_value(kern->spec, type, wr, x + b * ldx, cols), got = y[b * ldy + i];
      if (!same_float(got, want)) {
        bad = 1;
        uint32_t gb, wb;
        memcpy(&gb, &got, 4);
        memcpy(&wb, &want, 4);
        if (g_reports++ < 20)
          fprintf(stderr, "  mismatch [%s %s %s] rows=%zu cols=%zu nb=%zu%s: b=%zu i=%zu got %.9g (0x%08x) want %.9g (0x%08x)\n",
                  k->name, fg_type_traits_get(type)->name, k_dname[data], rows, cols, nb, use_rows ? " rows" : "", b, i,
                  got, (unsigned)gb, want, (unsigned)wb);
      }
    }
    clobbered |= y[b * ldy + n_out] != -777.0f;
  }
  CHECK_MSG(!bad, "%s %s: not bit-exact with the spec (see above)", k->name, fg_type_traits_get(type)->name);
  CHECK_MSG(!clobbered, "%s %s: wrote outside the outputs", k->name, fg_type_traits_get(type)->name);
  free(pk);
  free(ridx);
  free(y);
  free(x);
  free(tmp);
  free(wbuf);
}

static void run_case(fg_ops *ops, const fg_kernels *k, uint32_t type, size_t rows, size_t cols, size_t nb, int data,
                     int use_rows, size_t w_off, rng *r) {
  run_case_pk(ops, k, type, rows, cols, nb, data, use_rows, w_off, 0, r);
}

static void test_table(fg_ops *const *ops, const fg_kernels *k, rng *r) {
  static const size_t q_cols[] = {32, 64, 96, 224, 1056, 2080};    /* 1, 2, 3, 7, 33, 65 blocks (2 segments) */
  static const size_t k_cols[] = {256, 768, 2304, 4352};           /* 256-element blocks: 8 .. 136 blocks (3 segments) */
  static const size_t f_cols[] = {1, 15, 16, 17, 32, 100, 640, 2061};
  static const size_t rows_l[] = {1, 3, 4, 5, 9, 67};
  static const size_t nbs[] = {1, 2, 3, 6};
  const int checks0 = fg_test_failures;
  for (size_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ti++) {
    const uint32_t type = k_types[ti];
    CHECK_MSG(k->vec[type].run != NULL, "%s: no vec kernel for %s", k->name, fg_type_traits_get(type)->name);
    CHECK_MSG(k->gemm[type].run != NULL && k->gemm_min_nb[type] >= 2, "%s: no gemm kernel for %s", k->name,
              fg_type_traits_get(type)->name);
    const int is_q = type != FG_TYPE_F32 && type != FG_TYPE_F16 && type != FG_TYPE_BF16;
    const int is_k = fg_type_traits_get(type)->block_size == 256;
    CHECK(k->vec[type].spec == (is_q ? FG_SPEC_Q8 : FG_SPEC_FMA));
    CHECK(k->gemm[type].spec == k->vec[type].spec);
    const size_t *cl = is_k ? k_cols : is_q ? q_cols : f_cols;
    const size_t ncl = is_k   ? sizeof k_cols / sizeof k_cols[0]
                       : is_q ? sizeof q_cols / sizeof q_cols[0]
                              : sizeof f_cols / sizeof f_cols[0];
    for (size_t ci = 0; ci < ncl; ci++)
      for (size_t ri = 0; ri < sizeof rows_l / sizeof rows_l[0]; ri++)
        for (size_t bi = 0; bi < sizeof nbs / sizeof nbs[0]; bi++) {
          const size_t cols = cl[ci], rows = rows_l[ri], nb = nbs[bi];
          if (cols * rows * nb > 600000) continue; /* keep qemu time bounded */
          const int data = (int)((ci + ri + bi) % D_COUNT);
          run_case(ops[(ri + bi) % 2], k, type, rows, cols, nb, data, (ri + ci) % 3 == 0, (ci + bi) % 3, r);
        }
    /* every data kind once at a size with several tiles and activations */
    for (int d = 0; d < D_COUNT; d++) run_case(ops[1], k, type, 9, is_k ? 2304 : is_q ? 1056 : 100, 5, d, d % 2, (size_t)d % 3, r);
    /* Q6_K (and on armv7 Q4_K) from the packed copy where the table has one (test_kernels sweeps the packed shapes
     * against the unpacked product): 1, 3, 5 superblocks, one and two strips, decode and 3..9 activations, random
     * bytes; on armv7 Q6_K also 9 superblocks (72 blocks: two of the staged loop's segments of 64, the second
     * adding to the first's outputs) with 2 and 5 activations */
#if defined(__aarch64__)
    const int k4_here = 0; /* aarch64's packed Q4_K: test_kernels' packed sweep */
#else
    const int k4_here = type == FG_TYPE_Q4_K; /* armv7's 4-row strips */
#endif
    if ((type == FG_TYPE_Q6_K || k4_here) && k->pack_size && k->pack_size(type, k->pack_rows, 256) > 0) {
      static const size_t pk_nb[] = {1, 3, 4, 5, 9};
      for (size_t i = 0; i < 10; i++)
        run_case_pk(ops[i % 2], k, type, k->pack_rows * (1 + i % 2), 256 * (1 + 2 * (i % 3)), pk_nb[i % 5],
                    (int)(i % D_COUNT), i % 4 == 3, i % 3, i % 3 == 1 ? 2 : 1, r);
#if !defined(__aarch64__)
      if (type == FG_TYPE_Q6_K)
        for (size_t i = 0; i < 2; i++)
          run_case_pk(ops[i], k, type, k->pack_rows * (1 + i), 256 * 9, 2 + 3 * i, (int)(i % D_COUNT), 0, i, 2, r);
#endif
    }
    /* Q5_0 the same way (armv7 neon_dotprod's 4-row strips; aarch64's 16): 1, 3, 7, 33 blocks, one to three strips,
     * decode and 2..9 activations (pairs and a last one alone), every data kind (the tiny activations take the
     * scalar spec), random value bytes */
    if (type == FG_TYPE_Q5_0 && k->pack_size && k->pack_size(type, k->pack_rows, 32) > 0) {
      static const size_t pk_nb[] = {1, 2, 3, 4, 5, 9}, pk_blk[] = {1, 3, 7, 33};
      for (size_t i = 0; i < 12; i++)
        run_case_pk(ops[i % 2], k, type, k->pack_rows * (1 + i % 3), 32 * pk_blk[i % 4], pk_nb[i % 6],
                    (int)(i % D_COUNT), i % 4 == 3, i % 3, i % 2 ? 2 : 1, r);
    }
  }
  fprintf(stderr, "table %s: %s\n", k->name, fg_test_failures == checks0 ? "bit-exact with the specs" : "FAILED");
}

/* F32/BF16 weights below 2^-40 against activations that pass the armv7 check (1e-9 > 2^-40): every product is
 * a denormal (about 1e-39), which AArch32 NEON flushes, so only the weight check's scalar fallback gives
 * the spec's (nonzero) sums. Ordinary tiny weights beside normal ones (D_TINY_W) do not show a missing
 * check: a flushed 1e-39 term cannot change a sum of normal terms. */
static void test_tiny_products(fg_ops *const *ops, const fg_kernels *k, rng *r) {
  static const size_t cols_l[] = {16, 100, 640};
  static const size_t nbs[] = {1, 2, 3};
  const uint32_t types[] = {FG_TYPE_F32, FG_TYPE_BF16};
  int bad = 0, n = 0;
  for (size_t ti = 0; ti < 2; ti++)
    for (size_t ci = 0; ci < 3; ci++)
      for (size_t bi = 0; bi < 3; bi++) {
        const uint32_t type = types[ti];
        const size_t rows = 3, cols = cols_l[ci], nb = nbs[bi];
        uint64_t rb64;
        if (!fg_type_row_bytes(type, cols, &rb64)) continue;
        const size_t rb = (size_t)rb64;
        uint8_t *w = malloc(rb * rows);
        float *tmp = malloc(cols * sizeof *tmp), *x = malloc(cols * nb * sizeof *x), *y = malloc(rows * nb * sizeof *y);
        for (size_t i = 0; i < rows; i++) {
          for (size_t j = 0; j < cols; j++) tmp[j] = 1e-30f * (1.5f + rng_unif(r)) * (j % 3 ? 1.0f : -1.0f);
          fg_quantize_row(type, tmp, w + i * rb, cols);
        }
        for (size_t j = 0; j < cols * nb; j++) x[j] = 1e-9f * (1.5f + rng_unif(r));
        fg_mat W = {type, (uint32_t)rows, (uint32_t)cols, rb, w, NULL, NULL};
        CHECK_OK(fg_ops_matmul(ops[bi % 2], &W, x, cols, nb, y, rows));
        const fg_mm_kernel *kern = k->gemm[type].run && nb >= k->gemm_min_nb[type] ? &k->gemm[type] : &k->vec[type];
        for (size_t b = 0; b < nb; b++)
          for (size_t i = 0; i < rows; i++) {
            const float want = spec_value(kern->spec, type, w + i * rb, x + b * cols, cols);
            n++;
            if (!same_float(y[b * rows + i], want)) {
              if (bad++ < 3)
                fprintf(stderr, "  mismatch [%s %s tiny products] cols=%zu nb=%zu b=%zu i=%zu got %g want %g\n", k->name,
                        fg_type_traits_get(type)->name, cols, nb, b, i, y[b * rows + i], want);
            }
          }
        free(y);
        free(x);
        free(tmp);
        free(w);
      }
  CHECK_MSG(bad == 0, "%s: %d of %d outputs of denormal products differ from the spec", k->name, bad, n);
}

// ----------------------------------------------------------------------------
// neon_compat.h

#if defined(__ARM_NEON)
static void test_compat(rng *r) {
  for (int it = 0; it < 200; it++) {
    int8_t a[32], b[32];
    int32_t acc[4], want[4] = {0}, got[4];
    for (int j = 0; j < 32; j++) {
      a[j] = (int8_t)(rng_u64(r) & 0xff);
      b[j] = (int8_t)((int)(rng_u64(r) % 255) - 127); /* activations: -127..127 */
    }
    if (it == 0) memset(a, 0x80, sizeof a); /* -128 weights */
    for (int l = 0; l < 4; l++) acc[l] = (int32_t)(rng_u64(r) % 2001) - 1000;
    const int8x16_t a0 = vld1q_s8(a), a1 = vld1q_s8(a + 16), b0 = vld1q_s8(b), b1 = vld1q_s8(b + 16);
    vst1q_s32(got, fg_vdotq_s32(vld1q_s32(acc), a0, b0));
    int ok = 1;
    for (int l = 0; l < 4; l++) {
      want[l] = acc[l];
      for (int j = 4 * l; j < 4 * l + 4; j++) want[l] += a[j] * b[j];
      ok &= got[l] == want[l];
    }
    CHECK_MSG(ok, "fg_vdotq_s32 lanes differ from the definition (iteration %d)", it);
    int32_t total = acc[0] + acc[1] + acc[2] + acc[3];
    for (int j = 0; j < 32; j++) total += a[j] * b[j];
    CHECK_EQ_INT(fg_vaddvq_s32(fg_vdot32_s8(vld1q_s32(acc), a0, b0, a1, b1)), total);
  }
  const int32x4_t p = {1, 2, 3, 4}, q = {10, 20, 30, 40};
  int32_t o[4];
  vst1q_s32(o, fg_vpaddq_s32(p, q));
  CHECK(o[0] == 3 && o[1] == 7 && o[2] == 30 && o[3] == 70);
  vst1q_s32(o, fg_vsum4_s32(p, q, vdupq_n_s32(-1), vdupq_n_s32(5)));
  CHECK(o[0] == 10 && o[1] == 100 && o[2] == -4 && o[3] == 20);
  const float32x4_t f = {1.0f, 0x1p-30f, -1.0f, 0x1p-30f};
  CHECK(fg_vaddvq_f32(f) == (1.0f + 0x1p-30f) + (-1.0f + 0x1p-30f));
}
#endif

// ----------------------------------------------------------------------------
// the NEON attention products against the C table: bit for bit (armv7: on data without denormals;
// with them, within the flush-to-zero bound of kernels/arm/neon_attn.c)

#if defined(__ARM_NEON)
/* qk and pv where flushing matters: a key column of denormals (every product denormal: the score is
 * denormal or 0), a row whose o * c is denormal and another whose o is denormal before the scaling.
 * aarch64: bit for bit. armv7: flush to zero, bounded as neon_attn.c says: with |q| <= 1 and the softmax
 * weights never denormal (the exp clamp keeps them >= e^-87), each fused operation loses less than
 * 2^-126 (a flushed input's product, a flushed result, a flushed accumulator) */
static int attn_denormals(const fg_attn_kernels *n, const fg_attn_kernels *c, rng *r, double *worst) {
  enum { H = 64, R = 3 };
  static float q[R * H], kv[FG_ATTN_BLK * H], sn[R * FG_ATTN_BLK], sc[R * FG_ATTN_BLK], on[R * H], oc[R * H];
  static float p[R * FG_ATTN_BLK];
  const float cc[R] = {1.0f, 1.0f, 0x1p-120f};
  for (size_t i = 0; i < FG_ATTN_BLK * H; i++) {
    const size_t col = i % FG_ATTN_BLK; /* qk reads kv as (H, 32): column col is key col */
    kv[i] = col == 5 ? rng_unif(r) * 0x1p-130f : col == 6 && i % 3 == 0 ? rng_unif(r) * 0x1p-127f : rng_unif(r);
  }
  for (size_t i = 0; i < R * H; i++) q[i] = rng_unif(r);
  for (size_t i = 0; i < H; i++) {
    on[i] = oc[i] = rng_unif(r);                   /* row 0: ordinary */
    on[H + i] = oc[H + i] = rng_unif(r) * 0x1p-128f; /* row 1: a denormal accumulator */
    on[2 * H + i] = oc[2 * H + i] = rng_unif(r) * 1e-3f; /* row 2: o * c denormal */
  }
  for (size_t j = 0; j < FG_ATTN_BLK; j++) {
    p[j] = fabsf(rng_unif(r));
    p[FG_ATTN_BLK + j] = 1e-37f * fabsf(rng_unif(r)); /* small, never denormal (as after the clamp) */
    p[2 * FG_ATTN_BLK + j] = 0.0f;
  }
  n->qk(q, H, R, H, kv, FG_TYPE_F32, sn);
  c->qk(q, H, R, H, kv, FG_TYPE_F32, sc);
  n->pv(on, H, R, H, cc, p, 0, FG_ATTN_BLK, kv, H * sizeof(float), FG_TYPE_F32);
  c->pv(oc, H, R, H, cc, p, 0, FG_ATTN_BLK, kv, H * sizeof(float), FG_TYPE_F32);
  int differ = 0;
  for (size_t i = 0; i < R * FG_ATTN_BLK; i++) {
    differ += sn[i] != sc[i];
    *worst = fmax(*worst, fabs((double)sn[i] - sc[i]) / (H * 0x1p-126));
  }
  for (size_t i = 0; i < R * H; i++) {
    differ += on[i] != oc[i];
    *worst = fmax(*worst, fabs((double)on[i] - oc[i]) / ((FG_ATTN_BLK + 1) * 0x1p-126));
  }
  return differ;
}

static void test_attn_neon(rng *r) {
  const fg_attn_kernels *n = fg_attn_neon(), *c = fg_attn_ref();
  CHECK_MSG(n != NULL && strcmp(n->name, "neon") == 0, "NEON builds have the NEON attention table");
  CHECK(fg_attn_by_name("neon") == n);
  if (!n) return;
  double worst = 0;
  const int dd = attn_denormals(n, c, r, &worst);
#  if defined(__aarch64__)
  CHECK_MSG(dd == 0, "aarch64 NEON attention differs from the C table on denormals in %d outputs", dd);
#  else
  /* worst: the largest difference in units of the bound (2^-126 per fused operation of the output); on
   * qemu as on hardware, AArch32 NEON flushes, so some outputs must differ */
  CHECK_MSG(worst <= 1.0, "armv7 NEON attention: denormal outputs off by %.3g of the flush-to-zero bound", worst);
  CHECK_MSG(dd > 0, "the denormal case flushed nothing: it tests nothing on armv7");
  fprintf(stderr, "attention neon (armv7) with denormals: %d outputs differ from the C table, at most %.3g of the "
                  "flush-to-zero bound\n", dd, worst);
#  endif
  enum { RM = 5, HM = 300 };
  static float q[RM * HM], sn[RM * FG_ATTN_BLK], sc[RM * FG_ATTN_BLK], on[RM * HM], oc[RM * HM], p[RM * FG_ATTN_BLK];
  static uint8_t kv[FG_ATTN_BLK * HM * 4];
  float cc[RM];
  static const size_t dims[] = {256, 37, 67, 4};
  int bad = 0, cases = 0;
  for (uint32_t type = FG_TYPE_F32; type <= FG_TYPE_F16; type++)
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
      for (size_t R = 1; R <= RM; R += 2) {
        const size_t h = dims[di], ldq = h + 1;
        for (size_t i = 0; i < FG_ATTN_BLK * h; i++) {
          const float x = rng_unif(r) * (i % 11 == 0 ? 1e-3f : 1.0f);
          if (type == FG_TYPE_F16) {
            const uint16_t hb = fg_f32_to_fp16(x);
            memcpy(kv + 2 * i, &hb, 2);
          } else {
            memcpy(kv + 4 * i, &x, 4);
          }
        }
        for (size_t i = 0; i < RM * HM; i++) q[i] = on[i] = oc[i] = rng_unif(r);
        for (size_t i = 0; i < RM * FG_ATTN_BLK; i++) p[i] = i % 7 == 0 ? 0.0f : fabsf(rng_unif(r)) * 1e-2f;
        for (size_t i = 0; i < RM; i++) cc[i] = i == 1 ? 0.0f : fabsf(rng_unif(r));
        n->qk(q, ldq, R, h, kv, type, sn);
        c->qk(q, ldq, R, h, kv, type, sc);
        bad += memcmp(sn, sc, R * FG_ATTN_BLK * sizeof(float)) != 0;
        /* value rows h elements apart; keys 3 .. 28 of the block, then other key ranges (none, one, a whole
         * block, 5: the aarch64 f32 tile's passes of four steps and single steps) */
        const size_t vs = h * (type == FG_TYPE_F16 ? 2 : 4);
        static const uint32_t pv_keys[][2] = {{3, 29}, {5, 5}, {7, 8}, {0, 32}, {11, 16}};
        for (size_t ki = 0; ki < sizeof pv_keys / sizeof pv_keys[0]; ki++) {
          const uint32_t ja = pv_keys[ki][0], jb = pv_keys[ki][1];
          n->pv(on, ldq, R, h, cc, p, ja, jb, kv + ja * vs, vs, type);
          c->pv(oc, ldq, R, h, cc, p, ja, jb, kv + ja * vs, vs, type);
          bad += memcmp(on, oc, sizeof on) != 0;
          cases++;
        }
        cases++;
      }
  /* lora_bt: output counts around the 32- and 4-wide tiles, ranks 1..16 */
  {
    enum { NQ = 16, NR = 75 };
    static float t[NQ], bt[NQ * NR], y1[NR], y2[NR];
    for (size_t i = 0; i < NQ * NR; i++) bt[i] = rng_unif(r) * 0.05f;
    for (size_t i = 0; i < NQ; i++) t[i] = rng_unif(r) * 3.0f;
    for (size_t nq = 1; nq <= NQ; nq += 5)
      for (size_t nr = 1; nr <= NR; nr += 7) {
        for (size_t i = 0; i < NR; i++) y1[i] = y2[i] = rng_unif(r);
        n->lora_bt(y1, t, nq, bt, NR, nr);
        c->lora_bt(y2, t, nq, bt, NR, nr);
        bad += memcmp(y1, y2, sizeof y1) != 0;
        cases++;
      }
  }
  /* GELU over ordinary, huge, tiny and non-finite values, with tails of 0..3 */
  enum { NG = 1000 };
  static float g1[NG], g2[NG], up[NG];
  for (size_t i = 0; i < NG; i++) {
    const float x = rng_unif(r);
    g1[i] = i % 50 == 7 ? x * 1e4f : i % 50 == 8 ? x * 1e-30f : i % 50 == 9 ? x * 60.0f : x * 6.0f;
    up[i] = rng_unif(r) * 2.0f;
  }
  g1[11] = INFINITY, g1[12] = -INFINITY, g1[13] = NAN, g1[14] = 0.0f, g1[15] = -0.0f, g1[16] = 1e-45f;
  for (size_t len = NG - 3; len <= NG; len++) {
    memcpy(g2, g1, sizeof g1);
    float g3[NG];
    memcpy(g3, g1, sizeof g1);
    n->gelu_mul(g2, up, len);
    c->gelu_mul(g3, up, len);
    bad += memcmp(g2, g3, sizeof g2) != 0;
    cases++;
  }
  /* argmax: test_attn checks every table, NEON's too, against the definition */
  /* softmax, bit for bit (both architectures: the flush-to-zero cases included): rows of 1..7 (the scalar
   * fallback beside the NEON rows), every kind of row below with ranges full, cut at either end, one key
   * and none, the running max below, above, -inf, +inf and NaN */
  {
    enum { RS = 7, KINDS = 14 };
    static float s1[RS * FG_ATTN_BLK], s2[RS * FG_ATTN_BLK];
    float m1[RS], m2[RS], l1[RS], l2[RS], c1[RS], c2[RS];
    uint32_t ja[RS], jb[RS];
    for (int rep = 0; rep < 40; rep++)
      for (size_t R = 1; R <= RS; R++) {
        for (size_t rr = 0; rr < R; rr++) {
          float *sr = s1 + rr * FG_ATTN_BLK;
          const int kind = (int)((rep * 5 + rr * 3 + R) % KINDS);
          for (uint32_t j = 0; j < FG_ATTN_BLK; j++) {
            const float u = rng_unif(r);
            switch (kind) {
            case 1: sr[j] = u * 1e4f; break;                                  /* the exp clamp */
            case 2: sr[j] = j % 5 == 3 ? NAN : u * 4.0f; break;               /* NaN scores */
            case 3: sr[j] = j % 7 == 2 ? INFINITY : u; break;                 /* +inf */
            case 4: sr[j] = j % 3 ? -INFINITY : u; break;                     /* -inf */
            case 5: sr[j] = j % 2 ? 0.0f : -0.0f; break;                      /* max +-0 */
            case 6: sr[j] = j % 4 ? -fabsf(u) - 0.5f : -0.0f; break;          /* max -0 among negatives */
            case 7: sr[j] = u * 0x1p-130f; break;                             /* all denormal */
            case 8: sr[j] = j % 2 ? u * 0x1p-127f : -fabsf(u) * 0x1p-120f; break; /* denormals, max tiny */
            case 9: sr[j] = j % 3 ? u * 0x1p-128f : u * 3.0f; break;          /* denormals beside ordinary */
            case 10: sr[j] = j % 6 == 1 ? 0x1p-120f : -fabsf(u) * 0x1p-122f; break; /* a tiny normal max */
            case 11: sr[j] = (float)(j % 4) - 2.0f; break;                    /* ties */
            default: sr[j] = u * 8.0f; break;
            }
          }
          if (kind == 2 && rr % 2) sr[0] = NAN; /* NaN at the first valid key */
          const int cut = (int)((rep + rr) % 6);
          ja[rr] = cut == 1 ? 5 : cut == 3 ? 17 : cut == 4 ? 9 : 0;
          jb[rr] = cut == 2 ? 23 : cut == 3 ? 18 : cut == 4 ? 0 : FG_ATTN_BLK;
          const int mk = (int)((rep + 2 * rr) % 7);
          m1[rr] = mk == 0 ? -INFINITY : mk == 1 ? 100.0f : mk == 2 ? INFINITY : mk == 3 ? NAN
                 : mk == 4 ? 0x1p-127f : rng_unif(r) * 4.0f;
          l1[rr] = m1[rr] == -INFINITY ? 0.0f : 1.0f + fabsf(rng_unif(r)) * 20.0f;
        }
        memcpy(s2, s1, sizeof s1);
        memcpy(m2, m1, sizeof m1);
        memcpy(l2, l1, sizeof l1);
        n->softmax(s1, R, ja, jb, m1, l1, c1);
        c->softmax(s2, R, ja, jb, m2, l2, c2);
        bad += memcmp(s1, s2, R * FG_ATTN_BLK * sizeof(float)) != 0 || memcmp(m1, m2, R * sizeof(float)) != 0 ||
               memcmp(l1, l2, R * sizeof(float)) != 0 || memcmp(c1, c2, R * sizeof(float)) != 0;
        cases++;
      }
  }
  /* fold, bit for bit: lengths around the 16-wide chunks, ordinary rows and rows with a zero, a denormal,
   * an infinity, a NaN or a denormal result (o c1 = -c2 x nearly), and c1, c2 of 1, 0, tiny and denormal */
  {
    enum { NF = 70 };
    static float o1[NF], o2[NF], xf[NF];
    static const float cs[][2] = {{1.0f, 0.25f}, {0.3f, 1.0f}, {1.0f, 1e-37f}, {1.0f, 0.0f}, {0x1p-130f, 1.0f}};
    for (int kind = 0; kind < 7; kind++)
      for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++)
        for (size_t len = 0; len <= NF; len += (len < 20 ? 1 : 13)) {
          for (size_t i = 0; i < NF; i++) {
            o1[i] = rng_unif(r);
            xf[i] = rng_unif(r);
          }
          const size_t at = len / 2;
          if (kind == 1) o1[at] = 0.0f;
          if (kind == 2) xf[at] = 0x1p-129f;
          if (kind == 3) o1[at] = -INFINITY;
          if (kind == 4) xf[at] = NAN;
          if (kind == 5) { o1[at] = 0x1p-100f; xf[at] = -0x1p-100f * cs[ci][0] / cs[ci][1]; }
          if (kind == 6) o1[at] = 1e-38f;
          memcpy(o2, o1, sizeof o1);
          n->fold(o1, cs[ci][0], xf, cs[ci][1], len);
          c->fold(o2, cs[ci][0], xf, cs[ci][1], len);
          bad += memcmp(o1, o2, sizeof o1) != 0;
          cases++;
        }
  }
  CHECK_MSG(bad == 0, "NEON attention differs from the C table in %d of %d cases", bad, cases);
  fprintf(stderr, "attention neon == C bit for bit: %d cases (qk, pv; f32, f16; odd sizes; lora_bt; gelu_mul; softmax; fold)\n",
          cases);
}
#endif

// ----------------------------------------------------------------------------
// dot-product detection

#if defined(__ARM_NEON)
/* The Q8 activation rows a table prepares (qs, d, isum) equal the spec's quantization byte for byte,
 * including NaN, infinities, denormals, ties at .5 after scaling, -0 and blocks below the minimum scale. */
/* neon_i8mm's SMMLA forms of the prepared activations (neon_q8_packed_smmla.h, fg_mm8_rows_prep), after the rows and
 * flags at the next 64-byte boundary: groups of 4 (160 bytes a block: for c = 0..3 the bytes 8c..8c+7
 * of activations 0, 1, 2, 3 side by side, then the scales d0 d1 d0 d1 d2 d3 d2 d3), then each
 * remaining activation alone (128 bytes a block: for c = 0..3 [x, 0] and [0, x]). Checked against
 * the rows: the layout is the contract between act_prep and the packed kernels. */
static int check_mm8_forms(const uint8_t *act, size_t cols, size_t nb) {
  const size_t stride = fg_act_q8_row_bytes(cols), nblk = cols / 32, nb4 = nb / 4 * 4;
  const uint8_t *sec = act + ((stride + sizeof(uint32_t)) * nb + 63) / 64 * 64;
  int bad = 0;
  for (size_t b = 0; b < nb; b++) {
    const fg_act_q8_row xr = fg_act_q8_row_at((uint8_t *)(uintptr_t)act + b * stride, cols);
    for (size_t k = 0; k < nblk; k++) {
      const int8_t *q = xr.qs + 32 * k;
      if (b < nb4) {
        const uint8_t *o = sec + (b / 4 * nblk + k) * 160;
        const size_t j = b % 4;
        float d[2];
        memcpy(d, o + 128 + 16 * (j / 2) + 4 * (j % 2), 4);
        memcpy(d + 1, o + 128 + 16 * (j / 2) + 4 * (j % 2) + 8, 4);
        bad += d[0] != xr.d[k] || d[1] != xr.d[k];
        for (size_t c = 0; c < 4; c++) bad += memcmp(o + 32 * c + 8 * j, q + 8 * c, 8) != 0;
      } else {
        const uint8_t *o = sec + nb4 / 4 * nblk * 160 + ((b - nb4) * nblk + k) * 128;
        static const uint8_t zero[8];
        for (size_t c = 0; c < 4; c++)
          bad += memcmp(o + 32 * c, q + 8 * c, 8) != 0 || memcmp(o + 32 * c + 8, zero, 8) != 0 ||
                 memcmp(o + 32 * c + 16, zero, 8) != 0 || memcmp(o + 32 * c + 24, q + 8 * c, 8) != 0;
      }
    }
  }
  return bad;
}

static void test_act_quant(const fg_kernels *k, rng *r) {
  enum { COLS = 32 * 12, NB = 7 }; /* neon_i8mm: one group of 4 and 3 single activations */
  static float x[NB * COLS];
  for (size_t i = 0; i < NB * COLS; i++) x[i] = rng_unif(r) * (i % 97 == 0 ? 1e4f : 1.0f);
  /* rows 4..6: blocks of scales 2^-130 to 2^10 in steps of 2^4 (armv7 quantizes a block below amax
   * 2^-100 with the spec's code, above it in NEON, which flushes denormals), some with denormal entries
   * beside the block's maximum; block 6 has amax just above FG_ACT_Q8_MIN_AMAX and denormals that
   * scale to 0.5..1 (nonzero in the spec, zero after a flush) */
  for (size_t blk = 0; blk < 3 * COLS / 32; blk++) {
    float *xb = x + 4 * COLS + blk * 32;
    const float scale = ldexpf(1.0f, (int)blk * 4 - 130);
    for (size_t j = 0; j < 32; j++) xb[j] = rng_unif(r) * scale;
    if (blk % 3 == 0) xb[5] = 1e-39f, xb[6] = -3e-40f, xb[7] = 1.1754942e-38f;
  }
  {
    float *xb = x + 4 * COLS + 6 * 32;
    xb[0] = ldexpf(1.01f, -119);
    for (size_t j = 1; j < 32; j++) xb[j] = (j % 2 ? 1.0f : -1.0f) * ldexpf(1.0f + (float)j / 32.0f, -127);
  }
  x[1] = NAN, x[40] = INFINITY, x[41] = -INFINITY, x[70] = -0.0f, x[100] = 1e-40f;
  for (size_t j = 0; j < 32; j++) x[96 + j] = j % 2 ? 1e-38f : -3e-39f; /* block 3: below FG_ACT_Q8_MIN_AMAX */
  for (size_t j = 0; j < 32; j++) x[128 + j] = (float)j - 0.5f * (float)(j % 3); /* ties after scaling by 127/31 */
  x[128] = 127.0f;
  for (size_t j = 0; j < 32; j++) x[160 + j] = NAN;
  const fg_mm_kernel *kern = &k->vec[FG_TYPE_Q8_0];
  CHECK(kern->act_size != NULL && kern->act_prep != NULL);
  if (!kern->act_size || !kern->act_prep) return;
  uint8_t *act = aligned_alloc(64, (kern->act_size(COLS, NB) + 63) & ~(size_t)63);
  const size_t stride = fg_act_q8_row_bytes(COLS);
  uint8_t *want = aligned_alloc(64, stride);
  kern->act_prep(x, COLS, COLS, NB, 0, NB, act);
  int bad = 0;
  for (size_t b = 0; b < NB; b++) {
    memset(want, 0, stride);
    const fg_act_q8_row w = fg_act_q8_row_at(want, COLS), g = fg_act_q8_row_at(act + b * stride, COLS);
    fg_spec_quantize_act_q8(x + b * COLS, COLS, w);
    bad += memcmp(w.qs, g.qs, COLS) != 0 || memcmp(w.d, g.d, COLS / 32 * sizeof(float)) != 0 ||
           memcmp(w.isum, g.isum, COLS / 32 * sizeof(int32_t)) != 0;
  }
  CHECK_MSG(bad == 0, "%s: Q8 activation rows differ from the spec's quantization in %d of %d rows", k->name, bad,
            (int)NB);
  if (strcmp(k->name, "neon_i8mm") == 0) {
    CHECK_EQ_INT((long long)kern->act_size(COLS, NB),
                 (long long)(((stride + 4) * NB + 63) / 64 * 64 + (NB / 4 * 160 + NB % 4 * 128) * (COLS / 32)));
    CHECK_EQ_INT(kern->act_unit, 4);
    for (size_t nb = 1; nb <= NB; nb++) { /* every mix of groups and singles, each prepared in units of 4 */
      memset(act, 0xA5, kern->act_size(COLS, nb));
      for (size_t b0 = 0; b0 < nb; b0 += 4) kern->act_prep(x, COLS, COLS, nb, b0, b0 + 4 < nb ? b0 + 4 : nb, act);
      const int n = check_mm8_forms(act, COLS, nb);
      CHECK_MSG(n == 0, "neon_i8mm: %d SMMLA-form blocks differ from the Q8 rows (nb=%zu)", n, nb);
    }
  }
  free(act);
  free(want);
}

static void *detect_thread(void *arg) {
  *(int *)arg = fg_arm_dotprod_source();
  return NULL;
}

static int probe_returns_1(void) { return 1; }
static int probe_returns_0(void) { return 0; }
#  if defined(__arm__)
static int probe_undefined(void) {
  __asm__ volatile("udf #0"); /* always undefined: SIGILL */
  return 1;
}
#  endif

/* expect: 1 if this CPU has the dot product (FG_TEST_EXPECT_DOTPROD), -1 if not said */
static void test_detect(int expect) {
  /* first use in the process, from four threads at once: one detection, one answer */
  pthread_t th[4];
  int got[4] = {-1, -1, -1, -1};
  for (int i = 0; i < 4; i++) CHECK(pthread_create(&th[i], NULL, detect_thread, &got[i]) == 0);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  for (int i = 1; i < 4; i++) CHECK_EQ_INT(got[i], got[0]);
  CHECK_EQ_INT(fg_arm_dotprod_source(), got[0]);
  fprintf(stderr, "dot product: source %d (0 none, 1 hwcap, 2 probe), expected %d\n", got[0], expect);
  if (expect >= 0) CHECK_MSG((got[0] != FG_ARM_DP_NONE) == (expect == 1), "detected %d, expected %d", got[0], expect);

  /* the decision from hwcap bits: aarch64 bit 20, AArch32 bit 24 (then no probe) */
  CHECK_EQ_INT(fg_arm_dotprod_decide(1ul << 20, 1, NULL), FG_ARM_DP_HWCAP);
  CHECK_EQ_INT(fg_arm_dotprod_decide(1ul << 24, 1, NULL), FG_ARM_DP_NONE);
  CHECK_EQ_INT(fg_arm_dotprod_decide(1ul << 24, 0, probe_returns_0), FG_ARM_DP_HWCAP);
  CHECK_EQ_INT(fg_arm_dotprod_decide(0, 0, NULL), FG_ARM_DP_NONE);
#  if defined(__arm__) && defined(__linux__)
  /* the probe: what fn returns, or 0 after SIGILL; the previous SIGILL disposition comes back */
  struct sigaction before, after;
  CHECK(sigaction(SIGILL, NULL, &before) == 0);
  CHECK_EQ_INT(fg_arm_dotprod_decide(0, 0, probe_returns_1), FG_ARM_DP_PROBE);
  CHECK_EQ_INT(fg_arm_dotprod_decide(0, 0, probe_returns_0), FG_ARM_DP_NONE);
  CHECK_EQ_INT(fg_arm_probe_sigill(probe_undefined), 0);
  CHECK_EQ_INT(fg_arm_probe_sigill(probe_undefined), 0); /* twice: the handler and mask were restored */
  CHECK_EQ_INT(fg_arm_probe_sigill(fg_neon_dotprod_probe), got[0] != FG_ARM_DP_NONE);
  if (expect >= 0) CHECK_EQ_INT(fg_arm_probe_sigill(fg_neon_dotprod_probe), expect);
  CHECK(sigaction(SIGILL, NULL, &after) == 0);
  CHECK(after.sa_handler == before.sa_handler && after.sa_flags == before.sa_flags);
#  else
  CHECK_EQ_INT(fg_arm_probe_sigill(probe_returns_1), 0); /* no probing outside armv7 Linux */
#  endif
}
#endif

// ----------------------------------------------------------------------------

int main(void) {
  rng r = {777};
#if defined(__ARM_NEON)
  const char *want_dp = getenv("FG_TEST_EXPECT_DOTPROD");
  test_detect(want_dp && want_dp[0] ? atoi(want_dp) : -1);
  test_attn_neon(&r);
  test_compat(&r);
  const fg_kernels *neon = fg_kernels_by_name("neon");
#  if defined(__aarch64__) || defined(__ARM_FEATURE_FMA)
  CHECK_MSG(neon != NULL && neon == fg_kernels_neon(), "this NEON build must offer the neon table");
#  else
  CHECK_MSG(neon == NULL, "NEON without VFPv4 has no fused multiply-add: no neon table");
#  endif
  const fg_kernels *dot = fg_kernels_by_name("neon_dotprod");
  CHECK_MSG((dot != NULL) == (fg_arm_cpu_has_dotprod() && fg_kernels_neon_dotprod() != NULL),
            "neon_dotprod must be offered exactly when compiled in and the CPU has it");
  fprintf(stderr, "dotprod: cpu %d, compiled %d\n", (int)fg_arm_cpu_has_dotprod(), fg_kernels_neon_dotprod() != NULL);
  const fg_kernels *mm = fg_kernels_by_name("neon_i8mm");
  CHECK_MSG((mm != NULL) == (fg_arm_cpu_has_i8mm() && fg_kernels_neon_i8mm() != NULL),
            "neon_i8mm must be offered exactly when compiled in and the CPU has it");
  fprintf(stderr, "i8mm: cpu %d, compiled %d\n", (int)fg_arm_cpu_has_i8mm(), fg_kernels_neon_i8mm() != NULL);
#  if defined(__aarch64__)
  CHECK_MSG(fg_kernels_neon_i8mm() != NULL, "an aarch64 build must compile the neon_i8mm table");
#  else
  CHECK_MSG(fg_kernels_neon_i8mm() == NULL && mm == NULL, "armv7 has no neon_i8mm table");
#  endif
  /* HWCAP2_I8MM (bit 13 of AT_HWCAP2), and only with the dot product (bit 20 of AT_HWCAP) */
  CHECK(fg_arm_i8mm_decide(1ul << 20, 1ul << 13));
  CHECK(!fg_arm_i8mm_decide(0, 1ul << 13));
  CHECK(!fg_arm_i8mm_decide(1ul << 20, ~(1ul << 13)));
  const char *want_mm = getenv("FG_TEST_EXPECT_I8MM");
  if (want_mm && want_mm[0])
    CHECK_MSG(fg_arm_cpu_has_i8mm() == (atoi(want_mm) == 1), "i8mm detected %d, expected %s", (int)fg_arm_cpu_has_i8mm(),
              want_mm);
  const char *env = getenv("FG_ISA");
  if (!env || !env[0] || strcmp(env, "auto") == 0) /* the best table is the default */
    CHECK_MSG(strcmp(fg_ops_isa(), mm ? "neon_i8mm" : dot ? "neon_dotprod" : neon ? "neon" : "ref") == 0,
              "default table is %s", fg_ops_isa());
  fg_ops *ops[2];
  CHECK_OK(fg_ops_create(1, &ops[0], NULL));
  CHECK_OK(fg_ops_create(3, &ops[1], NULL));
  const fg_kernels *tables[3] = {neon, dot, mm};
  for (int t = 0; t < 3; t++) {
    if (!tables[t]) continue;
    fg_ops_set_kernels(ops[0], tables[t]);
    fg_ops_set_kernels(ops[1], tables[t]);
    test_table(ops, tables[t], &r);
    test_tiny_products(ops, tables[t], &r);
    test_act_quant(tables[t], &r);
  }
  fg_ops_free(ops[0]);
  fg_ops_free(ops[1]);
#else
  (void)rng_u64(&r);
  CHECK(fg_kernels_by_name("neon") == NULL);
  CHECK(fg_kernels_by_name("neon_dotprod") == NULL);
  CHECK(fg_kernels_by_name("neon_i8mm") == NULL);
  fprintf(stderr, "not an ARM NEON build: only checked that no NEON table is offered\n");
  (void)test_table;
  (void)test_tiny_products;
#endif
  return fg_test_finish("test_arm_kernels");
}
