/* test_quant_blocks.c — the block types beyond Q8_0/Q4_0 (Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL,
 * IQ4_XS): fgemma's dequantization against an independent decoder written here from the published
 * layouts (bit for bit, on random bytes: every scale, every nibble pattern), the q8 spec and the
 * reference dot against double-precision sums of the dequantized weights, quantize -> dequantize
 * error per type, and the row-size rules (256-element super-blocks). The gguf package's numpy
 * dequantizers check the same decoding once more on real files (tests/real.cmake). */
#include "kernels/kernels.h"
#include "tensor/dtype.h"
#include "testutil.h"

#include <stdint.h>
#include <stdlib.h>

static const uint32_t k_types[] = {FG_TYPE_Q4_1, FG_TYPE_Q5_0, FG_TYPE_Q5_1, FG_TYPE_Q2_K,   FG_TYPE_Q3_K,
                                   FG_TYPE_Q4_K, FG_TYPE_Q5_K, FG_TYPE_Q6_K, FG_TYPE_IQ4_NL, FG_TYPE_IQ4_XS};
#define N_TYPES (sizeof k_types / sizeof k_types[0])

typedef struct rng { uint64_t s; } rng;
static uint32_t rng_u32(rng *r) {
  r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(r->s >> 32);
}
static float rng_unif(rng *r) { return (float)(rng_u32(r) >> 8) * 0x1p-23f - 1.0f; } /* [-1, 1) */

static float h2f(const uint8_t *p) { return fg_fp16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

// ----------------------------------------------------------------------------
// an independent decoder: byte offsets straight from the published GGML layouts, loops in GGML's
// shape (bit-pair shifts across 32-byte groups), the same float operations in the same order

static void ref_block(uint32_t type, const uint8_t *b, float *y) {
  static const int8_t kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  switch (type) {
    case FG_TYPE_Q4_1: { /* d, m, qs[16] */
      const float d = h2f(b), m = h2f(b + 2);
      for (int j = 0; j < 16; j++) {
        y[j] = (float)(b[4 + j] & 15) * d + m;
        y[j + 16] = (float)(b[4 + j] >> 4) * d + m;
      }
    } break;
    case FG_TYPE_Q5_0:
    case FG_TYPE_Q5_1: { /* d, [m], qh[4], qs[16] */
      const int o = type == FG_TYPE_Q5_1 ? 2 : 0;
      const float d = h2f(b), m = o ? h2f(b + 2) : 0.0f;
      const uint32_t qh = (uint32_t)b[2 + o] | (uint32_t)b[3 + o] << 8 | (uint32_t)b[4 + o] << 16 | (uint32_t)b[5 + o] << 24;
      const uint8_t *qs = b + 6 + o;
      for (int j = 0; j < 16; j++) {
        const int h0 = (int)(((qh >> j) << 4) & 0x10), h1 = (int)((qh >> (j + 12)) & 0x10);
        const int x0 = (qs[j] & 15) | h0, x1 = (qs[j] >> 4) | h1;
        if (o) {
          y[j] = (float)x0 * d + m;
          y[j + 16] = (float)x1 * d + m;
        } else {
          y[j] = (float)(x0 - 16) * d;
          y[j + 16] = (float)(x1 - 16) * d;
        }
      }
    } break;
    case FG_TYPE_IQ4_NL: { /* d, qs[16] */
      const float d = h2f(b);
      for (int j = 0; j < 16; j++) {
        y[j] = d * (float)kv[b[2 + j] & 15];
        y[j + 16] = d * (float)kv[b[2 + j] >> 4];
      }
    } break;
    case FG_TYPE_Q2_K: { /* scales[16], qs[64], d, dmin */
      const uint8_t *sc = b, *q = b + 16;
      const float d = h2f(b + 80), dmin = h2f(b + 82);
      int is = 0;
      for (int n = 0; n < 256; n += 128, q += 32)
        for (int shift = 0; shift < 8; shift += 2)
          for (int half = 0; half < 2; half++, is++) {
            const float dl = d * (float)(sc[is] & 15), ml = dmin * (float)(sc[is] >> 4);
            for (int l = 0; l < 16; l++) *y++ = dl * (float)((q[l + 16 * half] >> shift) & 3) - ml;
          }
    } break;
    case FG_TYPE_Q3_K: { /* hmask[32], qs[64], scales[12], d */
      const uint8_t *hm = b, *q = b + 32, *p = b + 96;
      const float d = h2f(b + 108);
      int8_t sc[16];
      for (int j = 0; j < 16; j++) { /* 4 low bits: bytes 0..7 (low then high nibble), 2 high bits: bytes 8..11 */
        const int lo = (p[j % 8] >> (4 * (j / 8))) & 15, hi = (p[8 + j % 4] >> (2 * (j / 4))) & 3;
        sc[j] = (int8_t)((lo | hi << 4) - 32);
      }
      int is = 0;
      uint8_t m = 1;
      for (int n = 0; n < 256; n += 128, q += 32)
        for (int shift = 0; shift < 8; shift += 2, m = (uint8_t)(m << 1))
          for (int half = 0; half < 2; half++, is++) {
            const float dl = d * (float)sc[is];
            for (int l = 16 * half; l < 16 * half + 16; l++)
              *y++ = dl * (float)(((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
          }
    } break;
    case FG_TYPE_Q4_K:
    case FG_TYPE_Q5_K: { /* d, dmin, scales[12], [qh[32]], qs[128] */
      const bool five = type == FG_TYPE_Q5_K;
      const float d = h2f(b), dmin = h2f(b + 2);
      const uint8_t *s = b + 4, *qh = b + 16, *q = b + (five ? 48 : 16);
      for (int j = 0; j < 8; j++) {
        int sc, mn;
        if (j < 4) {
          sc = s[j] & 63;
          mn = s[j + 4] & 63;
        } else {
          sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
          mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
        }
        const float dl = d * (float)sc, ml = dmin * (float)mn;
        for (int l = 0; l < 32; l++) {
          int v = (q[32 * (j / 2) + l] >> (4 * (j % 2))) & 15;
          if (five && (qh[l] >> j) & 1) v += 16;
          *y++ = dl * (float)v - ml;
        }
      }
    } break;
    case FG_TYPE_Q6_K: { /* ql[128], qh[64], scales[16] (int8), d */
      const float d = h2f(b + 208);
      for (int n = 0; n < 2; n++) {
        const uint8_t *ql = b + 64 * n, *qh = b + 128 + 32 * n;
        const int8_t *sc = (const int8_t *)(b + 192) + 8 * n;
        for (int l = 0; l < 32; l++) {
          const int is = l / 16;
          const int q1 = ((ql[l] & 15) | ((qh[l] & 3) << 4)) - 32;
          const int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
          const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
          const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
          y[128 * n + l] = d * (float)sc[is] * (float)q1;
          y[128 * n + l + 32] = d * (float)sc[is + 2] * (float)q2;
          y[128 * n + l + 64] = d * (float)sc[is + 4] * (float)q3;
          y[128 * n + l + 96] = d * (float)sc[is + 6] * (float)q4;
        }
      }
    } break;
    case FG_TYPE_IQ4_XS: { /* d, scales_h, scales_l[4], qs[128] */
      const float d = h2f(b);
      const int sh = b[2] | b[3] << 8;
      for (int ib = 0; ib < 8; ib++) {
        const int ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 15) | (((sh >> (2 * ib)) & 3) << 4);
        const float dl = d * (float)(ls - 32);
        const uint8_t *qs = b + 8 + 16 * ib;
        for (int j = 0; j < 16; j++) {
          y[32 * ib + j] = dl * (float)kv[qs[j] & 15];
          y[32 * ib + j + 16] = dl * (float)kv[qs[j] >> 4];
        }
      }
    } break;
    default: FG_ASSERT(!"ref_block: type");
  }
}

/* random block bytes with finite fp16 scales of moderate size (every other byte uniform) */
static void random_blocks(uint32_t type, uint8_t *w, size_t nblk, rng *r) {
  const fg_type_traits *t = fg_type_traits_get(type);
  for (size_t i = 0; i < nblk * t->type_size; i++) w[i] = (uint8_t)rng_u32(r);
  /* fp16 fields: exponent 8..19 (2^-7 .. 2^4), random sign and mantissa */
  size_t off[2] = {SIZE_MAX, SIZE_MAX};
  switch (type) {
    case FG_TYPE_Q4_1: case FG_TYPE_Q5_1: case FG_TYPE_Q4_K: case FG_TYPE_Q5_K: off[0] = 0; off[1] = 2; break;
    case FG_TYPE_Q5_0: case FG_TYPE_IQ4_NL: case FG_TYPE_IQ4_XS: off[0] = 0; break;
    case FG_TYPE_Q2_K: off[0] = 80; off[1] = 82; break;
    case FG_TYPE_Q3_K: off[0] = 108; break;
    case FG_TYPE_Q6_K: off[0] = 208; break;
    default: break;
  }
  for (size_t i = 0; i < nblk; i++)
    for (int k = 0; k < 2; k++) {
      if (off[k] == SIZE_MAX) continue;
      const uint16_t h = (uint16_t)((rng_u32(r) & 0x8000u) | ((8u + rng_u32(r) % 12u) << 10) | (rng_u32(r) & 0x3ffu));
      uint8_t *p = w + i * t->type_size + off[k];
      p[0] = (uint8_t)h;
      p[1] = (uint8_t)(h >> 8);
    }
}

static void test_dequant_independent(void) {
  rng r = {0xb10c};
  for (size_t ti = 0; ti < N_TYPES; ti++) {
    const uint32_t type = k_types[ti];
    const fg_type_traits *t = fg_type_traits_get(type);
    const size_t nblk = 64, n = nblk * t->block_size;
    uint8_t *w = malloc(nblk * t->type_size);
    float *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
    random_blocks(type, w, nblk, &r);
    fg_dequantize_row(type, w, got, n);
    for (size_t i = 0; i < nblk; i++) ref_block(type, w + i * t->type_size, want + i * t->block_size);
    size_t bad = SIZE_MAX;
    for (size_t i = 0; i < n && bad == SIZE_MAX; i++)
      if (memcmp(&got[i], &want[i], 4) != 0) bad = i;
    CHECK_MSG(bad == SIZE_MAX, "%s: element %zu: got %.9g, independent decoder %.9g", t->name, bad,
              bad == SIZE_MAX ? 0.0 : got[bad], bad == SIZE_MAX ? 0.0 : want[bad]);

    /* the reference dot is the f32 dot of the dequantized row, and the q8 spec the exact dot of the
     * dequantized row with the quantized activations, up to one rounding per block */
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = rng_unif(&r);
    double exact = 0.0, mag = 0.0;
    for (size_t i = 0; i < n; i++) {
      exact += (double)want[i] * x[i];
      mag += fabs((double)want[i] * x[i]);
    }
    CHECK_MSG(fabs(fg_vec_dot_ref(type, w, x, n) - exact) <= (double)n * 0x1p-24 * mag, "%s: vec_dot_ref", t->name);
    void *act = aligned_alloc(64, fg_act_q8_row_bytes(n));
    const fg_act_q8_row q = fg_act_q8_row_at(act, n);
    fg_spec_quantize_act_q8(x, n, q);
    double qexact = 0.0, qmag = 0.0;
    for (size_t i = 0; i < n; i++) {
      const double p = (double)want[i] * ((double)q.qs[i] * q.d[i / 32]);
      qexact += p;
      qmag += fabs(p);
    }
    const float spec = fg_spec_dot_q8(type, w, q, n);
    /* per block: dw*dx rounded, the fma, the minimum's product and fma: 4 roundings of at most the
     * block's magnitude; the scale products are exact to 2^-24 relative */
    CHECK_MSG(fabs(spec - qexact) <= 8.0 * (double)(n / 32) * 0x1p-24 * qmag + 1e-30, "%s: q8 spec %.9g vs exact %.9g",
              t->name, spec, qexact);
    free(act);
    free(x);
    free(want);
    free(got);
    free(w);
  }
}

// ----------------------------------------------------------------------------
// quantize -> dequantize

static void test_roundtrip(void) {
  /* RMSE ceilings on uniform [-1, 1) data, about 1.25 x what the reference quantizers measured */
  static const struct { uint32_t type; double ceiling; } k[] = {
      {FG_TYPE_Q4_1, 0.046}, {FG_TYPE_Q5_0, 0.024}, {FG_TYPE_Q5_1, 0.023}, {FG_TYPE_Q2_K, 0.19},
      {FG_TYPE_Q3_K, 0.12},  {FG_TYPE_Q4_K, 0.05},  {FG_TYPE_Q5_K, 0.025}, {FG_TYPE_Q6_K, 0.0125},
      {FG_TYPE_IQ4_NL, 0.05}, {FG_TYPE_IQ4_XS, 0.05}};
  const size_t n = 256 * 64;
  float *x = malloc(n * sizeof *x), *back = malloc(n * sizeof *back);
  uint8_t *q = malloc(n * 2);
  rng r = {77};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    for (size_t j = 0; j < n; j++) x[j] = rng_unif(&r);
    fg_quantize_row(k[i].type, x, q, n);
    fg_dequantize_row(k[i].type, q, back, n);
    double se = 0.0;
    for (size_t j = 0; j < n; j++) se += ((double)back[j] - x[j]) * ((double)back[j] - x[j]);
    const double rmse = sqrt(se / (double)n);
    fprintf(stderr, "  %-7s rmse %.4g (ceiling %.4g)\n", fg_type_name(k[i].type), rmse, k[i].ceiling);
    CHECK_MSG(rmse <= k[i].ceiling, "%s rmse %.4g > %.4g", fg_type_name(k[i].type), rmse, k[i].ceiling);
    /* zeros stay zeros; a constant row comes back within a step */
    memset(x, 0, n * sizeof *x);
    fg_quantize_row(k[i].type, x, q, n);
    fg_dequantize_row(k[i].type, q, back, n);
    int nz = 0;
    for (size_t j = 0; j < n; j++) nz += back[j] != 0.0f;
    CHECK_MSG(nz == 0, "%s: %d non-zero values from zeros", fg_type_name(k[i].type), nz);
    for (size_t j = 0; j < n; j++) x[j] = -0.75f;
    fg_quantize_row(k[i].type, x, q, n);
    fg_dequantize_row(k[i].type, q, back, n);
    double worst = 0.0;
    for (size_t j = 0; j < n; j++) { /* not fmax: gcc 12's aarch64 vectorizer crashes on that reduction */
      const double e = fabs(back[j] + 0.75);
      if (e > worst) worst = e;
    }
    CHECK_MSG(worst <= 0.75 / 3.0, "%s: constant -0.75 comes back %.4g off", fg_type_name(k[i].type), worst);
  }
  free(q);
  free(back);
  free(x);
}

// ----------------------------------------------------------------------------
// traits and row sizes

static void test_traits(void) {
  static const struct { uint32_t type; const char *name; uint32_t bs, ts; } k[] = {
      {FG_TYPE_Q4_1, "q4_1", 32, 20},      {FG_TYPE_Q5_0, "q5_0", 32, 22},   {FG_TYPE_Q5_1, "q5_1", 32, 24},
      {FG_TYPE_Q2_K, "q2_k", 256, 84},     {FG_TYPE_Q3_K, "q3_k", 256, 110}, {FG_TYPE_Q4_K, "q4_k", 256, 144},
      {FG_TYPE_Q5_K, "q5_k", 256, 176},    {FG_TYPE_Q6_K, "q6_k", 256, 210}, {FG_TYPE_IQ4_NL, "iq4_nl", 32, 18},
      {FG_TYPE_IQ4_XS, "iq4_xs", 256, 136}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    const fg_type_traits *t = fg_type_traits_get(k[i].type);
    CHECK(t && strcmp(t->name, k[i].name) == 0 && t->block_size == k[i].bs && t->type_size == k[i].ts);
    uint64_t rb;
    CHECK(fg_type_row_bytes(k[i].type, 768, &rb) && rb == 768 / k[i].bs * k[i].ts);
    /* 640-wide rows (Gemma 3 270M's n_embd) do not fit a 256-element super-block */
    CHECK(fg_type_row_bytes(k[i].type, 640, &rb) == (k[i].bs == 32));
    CHECK(fg_kernel_q8_generic(k[i].type) != NULL);
  }
  /* known GGML types fgemma does not compute with are named, unknown ids say so */
  static const struct { uint32_t type; const char *name; } other[] = {
      {9, "q8_1"}, {15, "q8_k"}, {16, "iq2_xxs"}, {29, "iq1_m"}, {39, "mxfp4"}, {31, "?"}, {40, "?"}};
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
    uint64_t rb;
    CHECK(fg_type_traits_get(other[i].type) == NULL && !fg_type_row_bytes(other[i].type, 256, &rb));
    CHECK_MSG(strcmp(fg_type_name(other[i].type), other[i].name) == 0, "type %u is named %s", other[i].type,
              fg_type_name(other[i].type));
  }
  CHECK(fg_ggml_type_geometry(16) && fg_ggml_type_geometry(16)->type_size == 66);
  CHECK(fg_ggml_type_geometry(31) == NULL);
  CHECK(fg_kernel_q8_generic(FG_TYPE_F32) == NULL && fg_kernel_q8_generic(9) == NULL);
}

int main(void) {
  test_dequant_independent();
  test_roundtrip();
  test_traits();
  return fg_test_finish("test_quant_blocks");
}
