/* test_quant.c — the weight formats: fp16/bf16 conversion (exhaustive round trips, ties to even,
 * overflow, NaN), quantize -> dequantize error bounds per type on random and adversarial data, the
 * Q8 activation quantizer of the SIMD paths, and type traits / row-size overflow. */
#include "kernels/kernels.h"
#include "tensor/dtype.h"
#include "testutil.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// ----------------------------------------------------------------------------
// fp16

/* Independent decoding of an IEEE half, in double. */
static double half_value(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 0) v = ldexp((double)m, -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = ldexp(1024.0 + m, e - 25);
  return s ? -v : v;
}

static void test_fp16(void) {
  int bad_val = 0, bad_rt = 0, bad_nan = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    const float f = fg_fp16_to_f32((uint16_t)h);
    const double want = half_value((uint16_t)h);
    if (isnan(want)) {
      bad_nan += !isnan(f);
      bad_nan += !(fg_f32_to_fp16(f) & 0x3ff) || (fg_f32_to_fp16(f) & 0x7c00) != 0x7c00; /* NaN stays NaN */
      continue;
    }
    bad_val += (double)f != want || (signbit(f) != 0) != ((h & 0x8000) != 0);
    bad_rt += fg_f32_to_fp16(f) != h;
  }
  CHECK_EQ_INT(bad_val, 0);
  CHECK_EQ_INT(bad_rt, 0);
  CHECK_EQ_INT(bad_nan, 0);

  /* ties: the midpoint of two adjacent finite halves rounds to the even one; just above/below the
   * midpoint rounds to the nearer one. Midpoints need 12 significant bits: exact in f32. */
  int bad_tie = 0, bad_near = 0;
  for (uint32_t h = 0; h < 0x7bff; h++) {
    const float a = fg_fp16_to_f32((uint16_t)h), b = fg_fp16_to_f32((uint16_t)(h + 1));
    const float mid = (float)(((double)a + (double)b) / 2.0);
    const uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
    bad_tie += fg_f32_to_fp16(mid) != even;
    bad_tie += fg_f32_to_fp16(-mid) != (even | 0x8000);
    bad_near += fg_f32_to_fp16(nextafterf(mid, 0.0f)) != h;
    bad_near += fg_f32_to_fp16(nextafterf(mid, INFINITY)) != h + 1;
  }
  CHECK_EQ_INT(bad_tie, 0);
  CHECK_EQ_INT(bad_near, 0);
  /* overflow: 65504 is the largest half; the midpoint to 65536 (65520) rounds to even = inf */
  CHECK_EQ_INT(fg_f32_to_fp16(65504.0f), 0x7bff);
  CHECK_EQ_INT(fg_f32_to_fp16(nextafterf(65520.0f, 0.0f)), 0x7bff);
  CHECK_EQ_INT(fg_f32_to_fp16(65520.0f), 0x7c00);
  CHECK_EQ_INT(fg_f32_to_fp16(1e10f), 0x7c00);
  CHECK_EQ_INT(fg_f32_to_fp16(-INFINITY), 0xfc00);
  CHECK_EQ_INT(fg_f32_to_fp16(FLT_MAX), 0x7c00);
  /* underflow: half of the smallest subnormal (2^-25) is a tie -> 0; a hair above -> 1 */
  CHECK_EQ_INT(fg_f32_to_fp16(0x1p-25f), 0x0000);
  CHECK_EQ_INT(fg_f32_to_fp16(nextafterf(0x1p-25f, 1.0f)), 0x0001);
  CHECK_EQ_INT(fg_f32_to_fp16(0x1.8p-24f), 0x0002); /* 1.5 ulp: tie -> even (2) */
  CHECK_EQ_INT(fg_f32_to_fp16(1e-30f), 0x0000);
  CHECK_EQ_INT(fg_f32_to_fp16(-1e-30f), 0x8000);
  CHECK_EQ_INT(fg_f32_to_fp16(u2f(0x00000001u)), 0x0000); /* f32 denormal */
  const uint16_t qn = fg_f32_to_fp16(u2f(0x7f800001u)); /* signalling NaN with a low payload */
  CHECK((qn & 0x7c00) == 0x7c00 && (qn & 0x3ff) != 0);
}

// ----------------------------------------------------------------------------
// bf16

static void test_bf16(void) {
  int bad_val = 0, bad_rt = 0, bad_nan = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    const float f = fg_bf16_to_f32((uint16_t)h);
    bad_val += f2u(f) != h << 16;
    if (isnan(f)) bad_nan += !isnan(fg_bf16_to_f32(fg_f32_to_bf16(f)));
    else bad_rt += fg_f32_to_bf16(f) != h;
  }
  CHECK_EQ_INT(bad_val, 0);
  CHECK_EQ_INT(bad_rt, 0);
  CHECK_EQ_INT(bad_nan, 0);
  /* ties and neighbours for every finite positive and negative pair (the midpoint adds bit 15) */
  int bad_tie = 0, bad_near = 0;
  for (uint32_t h = 0; h < 0x7f7f; h++) {
    for (uint32_t sgn = 0; sgn <= 0x8000; sgn += 0x8000) {
      const uint32_t mid = ((h | sgn) << 16) | 0x8000u;
      const uint16_t even = (uint16_t)(((h & 1) ? h + 1 : h) | sgn);
      bad_tie += fg_f32_to_bf16(u2f(mid)) != even;
      bad_near += fg_f32_to_bf16(u2f(mid - 1)) != (uint16_t)(h | sgn);
      bad_near += fg_f32_to_bf16(u2f(mid + 1)) != (uint16_t)((h + 1) | sgn);
    }
  }
  CHECK_EQ_INT(bad_tie, 0);
  CHECK_EQ_INT(bad_near, 0);
  CHECK_EQ_INT(fg_f32_to_bf16(FLT_MAX), 0x7f80); /* above the last midpoint: inf */
  CHECK_EQ_INT(fg_f32_to_bf16(INFINITY), 0x7f80);
  const uint16_t qn = fg_f32_to_bf16(u2f(0x7f800001u)); /* a NaN must not round to inf */
  CHECK((qn & 0x7f80) == 0x7f80 && (qn & 0x7f) != 0);
  CHECK_EQ_INT(fg_f32_to_bf16(u2f(0x00000001u)), 0x0000);
  CHECK_EQ_INT(fg_f32_to_bf16(u2f(0x0000ffffu)), 0x0001); /* denormals round like anything else */
}

// ----------------------------------------------------------------------------
// quantize -> dequantize

typedef struct rng { uint64_t s; } rng;
static float rng_unif(rng *r) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return (float)((r->s >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

enum { D_RANDOM, D_ZEROS, D_HUGE, D_DENORMAL, D_OUTLIER, D_CONST, D_COUNT };
static const char *const k_dname[D_COUNT] = {"random", "zeros", "huge", "denormal", "outlier", "constant"};

static void fill(float *x, size_t n, int kind, float huge, rng *r) {
  for (size_t i = 0; i < n; i++) {
    const float u = rng_unif(r);
    switch (kind) {
      case D_ZEROS: x[i] = (i & 1) ? -0.0f : 0.0f; break;
      case D_HUGE: x[i] = u * huge; break;
      case D_DENORMAL: x[i] = u * 1e-39f; break;
      case D_OUTLIER: x[i] = i % 32 == 17 ? 50.0f * (u < 0 ? -1.0f : 1.0f) : u * 1e-3f; break;
      case D_CONST: x[i] = -0.75f; break;
      default: x[i] = u; break;
    }
  }
}

/* |x - dequant(quant(x))| bound for element j of a block (see each case). */
static double elem_bound(uint32_t type, const float *blk, int j) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < 32; i++)
    if (fabsf(blk[i]) > amax) {
      amax = fabsf(blk[i]);
      max = blk[i];
    }
  if (type == FG_TYPE_Q8_0) {
    /* q = round(x / d), d = amax / 127: rounding <= d/2; the stored scale is fp16(d), off by at most
     * 2^-11 d (normal) or 2^-25 (subnormal), times |q| <= 127 */
    const double d = amax / 127.0;
    return 0.5 * d * (1 + 1e-6) + 127.0 * fmax(0x1p-11 * d, 0x1p-25);
  }
  if (type == FG_TYPE_Q4_0) {
    /* d = max / -8 maps the extreme to -8; the other side saturates at +7, so the rounding error is
     * at most |d| (at +amax: 8|d| vs 7|d|); the fp16 scale error times |q - 8| <= 8 */
    const double d = fabs(max) / 8.0;
    return d * (1 + 1e-6) + 8.0 * fmax(0x1p-11 * d, 0x1p-25);
  }
  const double x = fabs(blk[j]);
  if (type == FG_TYPE_F16) return x >= 0x1p-14 ? 0x1p-11 * x : 0x1p-25; /* half an ulp */
  if (type == FG_TYPE_BF16) return x >= 0x1p-126 ? 0x1p-8 * x : 0x1p-134;
  return 0.0; /* f32 */
}

static void test_roundtrip(void) {
  static const uint32_t types[] = {FG_TYPE_F32, FG_TYPE_F16, FG_TYPE_BF16, FG_TYPE_Q8_0, FG_TYPE_Q4_0};
  /* RMSE ceilings on uniform [-1, 1) data: a uniform rounding error of step s has RMSE s/sqrt(12);
   * the step is 1/127 (q8_0, amax ~ 1), 1/8 (q4_0), 2^-10 |x| (f16), 2^-7 |x| (bf16); 10% margin */
  static const double rmse_max[] = {0.0, 0x1p-10 / 3.4, 0x1p-7 / 3.4, 1.1 / 127 / 3.46, 1.1 / 8 / 3.46};
  const size_t n = 32 * 256;
  float *x = malloc(n * sizeof *x), *back = malloc(n * sizeof *back);
  uint8_t *q = malloc(n * 4);
  rng r = {0x1234567};
  for (size_t ti = 0; ti < 5; ti++) {
    const uint32_t type = types[ti];
    const float huge = type == FG_TYPE_F16 ? 6e4f : type == FG_TYPE_Q8_0 ? 8e6f : type == FG_TYPE_Q4_0 ? 5e5f : 1e38f;
    for (int kind = 0; kind < D_COUNT; kind++) {
      fill(x, n, kind, huge, &r);
      fg_quantize_row(type, x, q, n);
      fg_dequantize_row(type, q, back, n);
      double se = 0.0;
      size_t first_bad = SIZE_MAX;
      for (size_t i = 0; i < n; i++) {
        const double e = fabs((double)back[i] - x[i]);
        se += e * e;
        if (!(e <= elem_bound(type, x + i / 32 * 32, (int)(i % 32))) && first_bad == SIZE_MAX) first_bad = i;
      }
      CHECK_MSG(first_bad == SIZE_MAX, "%s %s: element %zu: %.9g -> %.9g", fg_type_name(type), k_dname[kind],
                first_bad, first_bad == SIZE_MAX ? 0.0 : x[first_bad], first_bad == SIZE_MAX ? 0.0 : back[first_bad]);
      if (kind == D_RANDOM) {
        const double rmse = sqrt(se / (double)n);
        CHECK_MSG(rmse <= rmse_max[ti], "%s rmse %.3g > %.3g", fg_type_name(type), rmse, rmse_max[ti]);
        fprintf(stderr, "  %-5s rmse %.3g (ceiling %.3g)\n", fg_type_name(type), rmse, rmse_max[ti]);
      }
      if (kind == D_ZEROS) {
        int nz = 0;
        for (size_t i = 0; i < n; i++) nz += back[i] != 0.0f;
        CHECK_EQ_INT(nz, 0);
      }
    }
    /* the reference dot product is the f32 dot of the dequantized row */
    fill(x, n, D_RANDOM, 1.0f, &r);
    fg_quantize_row(type, x, q, n);
    fg_dequantize_row(type, q, back, n);
    double exact = 0.0, mag = 0.0;
    for (size_t i = 0; i < n; i++) {
      exact += (double)back[i] * x[i];
      mag += fabs((double)back[i] * x[i]);
    }
    CHECK_NEAR(fg_vec_dot_ref(type, q, x, n), exact, (double)n * 0x1p-24 * mag);
  }
  free(q);
  free(back);
  free(x);
}

// ----------------------------------------------------------------------------
// the Q8 activation quantizer of the SIMD paths (kernels/ref/spec.c)

static void test_act_q8(void) {
  const size_t cols = 32 * 64;
  float *x = malloc(cols * sizeof *x);
  void *buf = aligned_alloc(64, (fg_act_q8_row_bytes(cols) + 63) & ~(size_t)63);
  CHECK(fg_act_q8_row_bytes(cols) % 64 == 0 && fg_act_q8_row_bytes(cols) >= cols * 9 / 8 * 1);
  rng r = {99};
  for (int kind = 0; kind < D_COUNT; kind++) {
    fill(x, cols, kind, 1e30f, &r);
    fg_act_q8_row q = fg_act_q8_row_at(buf, cols);
    fg_spec_quantize_act_q8(x, cols, q);
    int bad = 0;
    for (size_t k = 0; k < cols / 32; k++) {
      int32_t s = 0;
      for (int j = 0; j < 32; j++) {
        const int v = q.qs[k * 32 + j];
        s += v;
        /* |x - q d| <= d (0.5 + 128u) + 2u |x|  (rint, 1/d and x * (1/d) roundings; u = 2^-24) */
        const double xj = x[k * 32 + j], d = q.d[k];
        bad += v < -127 || v > 127;
        if (d == 0.0) /* a block below FG_ACT_Q8_MIN_AMAX is all zeros with d = 0 */
          bad += v != 0 || !(fabs(xj) < FG_ACT_Q8_MIN_AMAX);
        else
          bad += !(fabs(xj - v * d) <= d * (0.5 + 128 * 0x1p-24) + 2 * 0x1p-24 * fabs(xj));
      }
      bad += s != q.isum[k];
    }
    CHECK_MSG(bad == 0, "act q8 %s: %d bad elements", k_dname[kind], bad);
  }
  free(buf);
  free(x);
}

// ----------------------------------------------------------------------------
// traits

static void test_traits(void) {
  static const struct { uint32_t type; const char *name; uint32_t bs, ts; } k[] = {
      {FG_TYPE_F32, "f32", 1, 4}, {FG_TYPE_F16, "f16", 1, 2}, {FG_TYPE_BF16, "bf16", 1, 2},
      {FG_TYPE_Q8_0, "q8_0", 32, 34}, {FG_TYPE_Q4_0, "q4_0", 32, 18}};
  for (size_t i = 0; i < 5; i++) {
    const fg_type_traits *t = fg_type_traits_get(k[i].type);
    CHECK(t != NULL);
    if (!t) continue;
    CHECK(strcmp(t->name, k[i].name) == 0);
    CHECK(strcmp(fg_type_name(k[i].type), k[i].name) == 0);
    CHECK_EQ_INT(t->block_size, k[i].bs);
    CHECK_EQ_INT(t->type_size, k[i].ts);
    uint64_t rb = 1;
    CHECK(fg_type_row_bytes(k[i].type, 0, &rb) && rb == 0);
    CHECK(fg_type_row_bytes(k[i].type, 640, &rb) && rb == 640 / k[i].bs * k[i].ts);
  }
  /* GGML types without kernels (named: tests/test_quant_blocks.c) and ids nobody knows */
  static const uint32_t unsupported[] = {4, 5, 9, 15, 16, 29, 31, 39, 40, 1000, UINT32_MAX};
  for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
    uint64_t rb;
    CHECK(fg_type_traits_get(unsupported[i]) == NULL);
    CHECK(!fg_type_row_bytes(unsupported[i], 32, &rb));
  }
  CHECK(strcmp(fg_type_name(31), "?") == 0 && strcmp(fg_type_name(UINT32_MAX), "?") == 0);
  uint64_t rb;
  CHECK(!fg_type_row_bytes(FG_TYPE_Q8_0, 33, &rb));                  /* not a whole block */
  CHECK(!fg_type_row_bytes(FG_TYPE_Q4_0, 16, &rb));
  CHECK(!fg_type_row_bytes(FG_TYPE_Q8_0, UINT64_MAX - 31, &rb));     /* (2^59 - 1) * 34 overflows */
  CHECK(fg_type_row_bytes(FG_TYPE_Q8_0, (UINT64_MAX / 34) / 32 * 32, &rb));
  CHECK(!fg_type_row_bytes(FG_TYPE_F32, 1ull << 62, &rb));           /* 2^64 bytes */
  CHECK(fg_type_row_bytes(FG_TYPE_F32, 1ull << 61, &rb) && rb == 1ull << 63);
  CHECK(!fg_type_row_bytes(FG_TYPE_F16, 1ull << 63, &rb));
}

int main(void) {
  test_fp16();
  test_bf16();
  test_roundtrip();
  test_act_q8();
  test_traits();
  return fg_test_finish("test_quant");
}
