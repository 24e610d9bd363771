/* test_attn.c — the attention/GELU kernels of kernels/attn.h, for every table this CPU runs (ref, and
 * avx2/avx512 on x86): exp and GELU accuracy over the whole input range, f16 conversion against the
 * reference converter, attention over several KV blocks (qk + online softmax + P·V, f32 and f16 keys and
 * values) against a double-precision softmax, argmax against its definition, and the tile invariance the
 * forward relies on (a row's result is bit-identical whether it is computed alone or with other rows). */
#include "kernels/attn.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>

static uint64_t rng = 0x243f6a8885a308d3ull;
static double urand(void) { /* [0, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}
static float frand(float lo, float hi) { return lo + (hi - lo) * (float)urand(); }

/* Measured on Zen 4 (ref, avx2, avx512 tables): exp max relative error 8.0e-8 / 8.1e-8 / 8.1e-8 over
 * [-87, 88]; GELU max abs difference to the tanhf formula 4.8e-7 for |x| <= 10, and at most 1.7e-7 of
 * max(|x|, 1) anywhere; attention vs double 3.3e-7 .. 8.2e-7. The bounds leave 2x or more room. */
#define EXP_REL_TOL 2e-7
#define GELU_ABS_TOL 1e-6  /* |x| <= 10 */
#define GELU_REL_TOL 4e-7  /* of max(|x|, 1), everywhere */
/* attention against a double softmax: f32 rounding over 256-term dot products and ~100 keys */
#define ATTN_TOL 1e-5

// ----------------------------------------------------------------------------------------------
// exp, GELU, f16

static void test_exp(const fg_attn_kernels *k) {
  enum { N = 1 << 16 };
  float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
  double worst = 0;
  for (int rep = 0; rep < 16; rep++) {
    for (int i = 0; i < N; i++) x[i] = FG_EXP_LO + (FG_EXP_HI - FG_EXP_LO) * (float)((double)(rep * N + i) / (16.0 * N));
    k->exp(x, y, N - rep); /* odd lengths: the tails */
    for (int i = 0; i < N - rep; i++) worst = fmax(worst, fabs((double)y[i] / exp((double)x[i]) - 1.0));
  }
  const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, -200.0f, 200.0f, -INFINITY, INFINITY};
  float ys[8];
  k->exp(sp, ys, 8);
  CHECK(ys[0] == 1.0f && ys[1] == 1.0f);
  CHECK(fabs(ys[2] / exp(1.0) - 1) < EXP_REL_TOL && fabs(ys[3] / exp(-1.0) - 1) < EXP_REL_TOL);
  CHECK(ys[4] >= 0.0f && ys[4] < 1e-37f && ys[6] >= 0.0f && ys[6] < 1e-37f); /* clamped below: tiny, never negative */
  CHECK(isfinite(ys[5]) && ys[5] > 1e38f && isfinite(ys[7]));               /* clamped above: finite */
  CHECK_MSG(worst <= EXP_REL_TOL, "%s: exp max relative error %.3g", k->name, worst);
  printf("%-6s exp: max relative error %.2e over [%g, %g]\n", k->name, worst, (double)FG_EXP_LO, (double)FG_EXP_HI);
  free(x);
  free(y);
}

static float gelu_tanhf(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

static void test_gelu(const fg_attn_kernels *k) {
  enum { N = 200003 };
  float *g = malloc(sizeof(float) * N), *up = malloc(sizeof(float) * N), *x = malloc(sizeof(float) * N);
  for (int i = 0; i < N; i++) {
    x[i] = -30.0f + 60.0f * (float)i / (float)(N - 1);
    up[i] = 1.0f;
  }
  x[0] = 0.0f;
  x[1] = -1e4f;
  x[2] = 1e4f;
  x[3] = -1e20f;
  x[4] = 1e20f;
  x[5] = 1e-30f;
  memcpy(g, x, sizeof(float) * N);
  k->gelu_mul(g, up, N);
  double abs_small = 0, rel = 0;
  for (int i = 0; i < N; i++) {
    const double want = gelu_tanhf(x[i]), d = fabs((double)g[i] - want);
    CHECK_MSG(isfinite(g[i]), "%s: gelu(%g) = %g", k->name, (double)x[i], (double)g[i]);
    if (fabsf(x[i]) <= 10.0f) abs_small = fmax(abs_small, d);
    rel = fmax(rel, d / fmax(fabs((double)x[i]), 1.0));
  }
  CHECK(g[0] == 0.0f);
  CHECK_MSG(abs_small <= GELU_ABS_TOL, "%s: GELU max abs difference %.3g for |x| <= 10", k->name, abs_small);
  CHECK_MSG(rel <= GELU_REL_TOL, "%s: GELU max difference %.3g of max(|x|, 1)", k->name, rel);
  printf("%-6s gelu: max abs difference to the tanhf formula %.2e (|x| <= 10), %.2e of max(|x|,1) over [-30, 30] and +-1e4, +-1e20\n",
         k->name, abs_small, rel);
  /* the multiply by up */
  for (int i = 0; i < 37; i++) {
    g[i] = frand(-4, 4);
    x[i] = g[i];
    up[i] = frand(-2, 2);
  }
  k->gelu_mul(g, up, 37);
  for (int i = 0; i < 37; i++) CHECK_NEAR(g[i], gelu_tanhf(x[i]) * up[i], 1e-5);
  free(g);
  free(up);
  free(x);
}

static void test_f16(const fg_attn_kernels *k) {
  enum { N = 1003 };
  float x[N];
  uint16_t h[N];
  for (int i = 0; i < N; i++) x[i] = (float)(urand() - 0.5) * powf(2.0f, (float)(i % 40) - 24.0f);
  x[0] = 70000.0f;
  x[1] = -INFINITY;
  x[2] = 6.1e-5f;
  x[3] = 3e-8f;
  x[4] = -0.0f;
  k->to_f16(x, h, N);
  int bad = 0;
  for (int i = 0; i < N; i++) bad += h[i] != fg_f32_to_fp16(x[i]);
  CHECK_MSG(bad == 0, "%s: %d of %d halves differ from fg_f32_to_fp16", k->name, bad, N);
}

// ----------------------------------------------------------------------------------------------
// attention over blocks

enum { HK = 256, HV = 256, NBLK = 4, NKEYS = NBLK * FG_ATTN_BLK, RMAX = 23 };

typedef struct kv_data {
  float k[NKEYS][HK], v[NKEYS][HV];              /* the values the kernels see (f16-rounded for f16) */
  _Alignas(64) unsigned char kt[NBLK][HK * FG_ATTN_BLK * 4]; /* per block (HK, 32) in the cache type */
  unsigned char vr[NKEYS * HV * 4];              /* (NKEYS, HV) rows in the cache type, HV * elt bytes apart */
} kv_data;

static void kv_fill(kv_data *d, uint32_t type) {
  const size_t elt = type == FG_TYPE_F16 ? 2 : 4;
  for (int j = 0; j < NKEYS; j++) {
    for (int i = 0; i < HK; i++) {
      float x = frand(-1, 1);
      if (type == FG_TYPE_F16) x = fg_fp16_to_f32(fg_f32_to_fp16(x));
      d->k[j][i] = x;
      unsigned char *dst = d->kt[j / FG_ATTN_BLK] + ((size_t)i * FG_ATTN_BLK + j % FG_ATTN_BLK) * elt;
      if (type == FG_TYPE_F16) {
        const uint16_t hx = fg_f32_to_fp16(x);
        memcpy(dst, &hx, 2);
      } else {
        memcpy(dst, &x, 4);
      }
    }
    for (int i = 0; i < HV; i++) {
      float x = frand(-1, 1);
      if (type == FG_TYPE_F16) x = fg_fp16_to_f32(fg_f32_to_fp16(x));
      d->v[j][i] = x;
      if (type == FG_TYPE_F16) {
        const uint16_t hx = fg_f32_to_fp16(x);
        memcpy(d->vr + ((size_t)j * HV + i) * 2, &hx, 2);
      } else {
        memcpy(d->vr + ((size_t)j * HV + i) * 4, &x, 4);
      }
    }
  }
}

/* rows r = 0..R-1 with key ranges [first[r], last[r]] (inclusive); keys [kmin, kmax] are touched */
static void run_attn(const fg_attn_kernels *k, const kv_data *d, uint32_t type, const float *q, size_t R,
                     const uint32_t *first, const uint32_t *last, float *out /* (R, HV) */) {
  static float s[RMAX * FG_ATTN_BLK], o[RMAX * HV], m[RMAX], l[RMAX], c[RMAX];
  uint32_t j0[RMAX], j1[RMAX], kmin = UINT32_MAX, kmax = 0;
  const size_t elt = type == FG_TYPE_F16 ? 2 : 4;
  for (size_t r = 0; r < R; r++) {
    kmin = FG_MIN(kmin, first[r]);
    kmax = FG_MAX(kmax, last[r]);
    m[r] = -INFINITY;
    l[r] = 0;
  }
  memset(o, 0, sizeof o);
  for (uint32_t bs = kmin / FG_ATTN_BLK * FG_ATTN_BLK; bs <= kmax; bs += FG_ATTN_BLK) {
    const uint32_t ja = FG_MAX(bs, kmin) - bs, jb = FG_MIN(bs + FG_ATTN_BLK, kmax + 1) - bs;
    k->qk(q, HK, R, HK, d->kt[bs / FG_ATTN_BLK], type, s);
    for (size_t r = 0; r < R; r++) {
      const uint32_t a = FG_MAX(bs, first[r]), b = FG_MIN(bs + FG_ATTN_BLK, last[r] + 1);
      j0[r] = a < b ? a - bs : 0;
      j1[r] = a < b ? b - bs : 0;
    }
    k->softmax(s, R, j0, j1, m, l, c);
    k->pv(o, HV, R, HV, c, s, ja, jb, d->vr + (size_t)(bs + ja) * HV * elt, HV * elt, type);
  }
  for (size_t r = 0; r < R; r++)
    for (int i = 0; i < HV; i++) out[r * HV + i] = o[r * HV + i] / l[r];
}

static void test_attention(const fg_attn_kernels *k, uint32_t type) {
  static kv_data d;
  kv_fill(&d, type);
  static float q[RMAX * HK], out[RMAX * HV], alone[HV];
  uint32_t first[RMAX], last[RMAX];
  /* a causal tile with a sliding window: rows of 23 consecutive positions ending inside block 3 */
  for (int r = 0; r < RMAX; r++) {
    for (int i = 0; i < HK; i++) q[r * HK + i] = frand(-0.25f, 0.25f);
    last[r] = 90 + (uint32_t)r;
    first[r] = last[r] >= 70 ? last[r] - 70 + 1 : 0; /* window 70: starts inside block 0 or 1 */
  }
  first[3] = 0; /* one global row */
  run_attn(k, &d, type, q, RMAX, first, last, out);
  double worst = 0;
  int not_same = 0;
  for (int r = 0; r < RMAX; r++) {
    /* double reference */
    double sc[NKEYS], mx = -INFINITY, sum = 0;
    for (uint32_t j = first[r]; j <= last[r]; j++) {
      double dot = 0;
      for (int i = 0; i < HK; i++) dot += (double)q[r * HK + i] * d.k[j][i];
      sc[j] = dot;
      mx = fmax(mx, dot);
    }
    for (uint32_t j = first[r]; j <= last[r]; j++) sum += (sc[j] = exp(sc[j] - mx));
    for (int i = 0; i < HV; i++) {
      double want = 0;
      for (uint32_t j = first[r]; j <= last[r]; j++) want += sc[j] / sum * d.v[j][i];
      worst = fmax(worst, fabs(out[r * HV + i] - want));
    }
    /* the same row alone: bit-identical */
    run_attn(k, &d, type, q + r * HK, 1, first + r, last + r, alone);
    not_same += memcmp(alone, out + r * HV, sizeof alone) != 0;
  }
  const char *tn = type == FG_TYPE_F16 ? "f16" : "f32";
  CHECK_MSG(worst <= ATTN_TOL, "%s %s: attention max abs difference %.3g to the double softmax", k->name, tn, worst);
  CHECK_MSG(not_same == 0, "%s %s: %d rows differ when computed alone", k->name, tn, not_same);
  printf("%-6s attention (%s K/V, 23 rows, up to 91 keys over 4 blocks): max abs difference %.2e to double; rows alone bit-identical\n",
         k->name, tn, worst);
}

/* exp1 against fg_attn_exp1, bit for bit: special values (0 and -0 give exactly 1: the folds of
 * model/forward.c rely on it), both clamps, the range of the rescales (m - mn <= 0) and beyond; every
 * length up to 37 (the 8- and 16-lane tails) and in place. */
static void test_exp1(const fg_attn_kernels *k) {
  enum { N = 4096 };
  static float x[N], y[N], want[N];
  const float sp[] = {0.0f, -0.0f, -INFINITY, INFINITY, NAN, -87.0f, -87.5f, -86.9f, 88.0f, 88.5f, -1e-30f, 1e-30f,
                      -0.5f, -0.3465736f, -0.3465736f * 2, -1e4f};
  CHECK(fg_attn_exp1(0.0f) == 1.0f && fg_attn_exp1(-0.0f) == 1.0f);
  for (int i = 0; i < N; i++) {
    x[i] = i < (int)(sizeof sp / sizeof sp[0]) ? sp[i] : (i % 3 ? frand(-30, 0) : frand(-100, 100));
    want[i] = fg_attn_exp1(x[i]);
  }
  size_t diffs = 0;
  for (size_t n = 1; n <= 37; n++) {
    memset(y, 0, sizeof y);
    k->exp1(x, y, n);
    for (size_t i = 0; i < n; i++) diffs += memcmp(&y[i], &want[i], sizeof(float)) != 0 && !(isnan(y[i]) && isnan(want[i]));
    diffs += y[n] != 0.0f; /* nothing past n */
  }
  k->exp1(x, y, N);
  for (int i = 0; i < N; i++) diffs += memcmp(&y[i], &want[i], sizeof(float)) != 0 && !(isnan(y[i]) && isnan(want[i]));
  memcpy(y, x, sizeof y);
  k->exp1(y, y, N - 3); /* in place */
  for (int i = 0; i < N - 3; i++) diffs += memcmp(&y[i], &want[i], sizeof(float)) != 0 && !(isnan(y[i]) && isnan(want[i]));
  CHECK_MSG(diffs == 0, "%s: exp1 differs from fg_attn_exp1 in %zu values", k->name, diffs);
}

/* A row's weights summed in the table's order: the C and AVX2 tables in 8 lanes (softmax_c), the AVX-512
 * table in 16 (lanes k + 8 and k, k + 4 and k, k + 2 and k, 1 and 0) */
static float row_sum(const char *table, const float *p) {
  float x[16];
  if (strcmp(table, "avx512") == 0) {
    for (int i = 0; i < 16; i++) x[i] = p[i] + p[i + 16];
    for (int i = 0; i < 8; i++) x[i] = x[i + 8] + x[i];
    for (int i = 0; i < 4; i++) x[i] = x[i + 4] + x[i];
    return (x[0] + x[2]) + (x[1] + x[3]);
  }
  for (int i = 0; i < 8; i++) x[i] = ((p[i] + p[i + 8]) + p[i + 16]) + p[i + 24];
  return ((x[0] + x[4]) + (x[2] + x[6])) + ((x[1] + x[5]) + (x[3] + x[7]));
}

/* softmax of R rows (1 .. 37: the 8- and 16-row groups of the SIMD tables and their tails): each row's
 * outputs bit-identical to the row alone, and exactly what attn.h says: mn = max(m, max of the valid
 * scores), c = fg_attn_exp1(m - mn) (0 where m = -inf; 1 and m, l kept without a valid key), weights 0
 * outside [j0, j1), l = l c + the weights' sum in the table's order (row_sum). Rows: full, partial at
 * either end, one key, none, a fresh row (m = -inf) and a row whose max does not move. */
static void test_softmax(const fg_attn_kernels *k) {
  enum { RM = 37 };
  static float s0[RM * FG_ATTN_BLK], s[RM * FG_ATTN_BLK], s1[FG_ATTN_BLK];
  float m0[RM], l0[RM], m[RM], l[RM], c[RM];
  uint32_t j0[RM], j1[RM];
  size_t bad_alone = 0, bad_spec = 0;
  for (size_t R = 1; R <= RM; R++) {
    for (size_t r = 0; r < R; r++) {
      for (uint32_t j = 0; j < FG_ATTN_BLK; j++) s0[r * FG_ATTN_BLK + j] = frand(-8, 8);
      const uint32_t kind = (uint32_t)(r * 7 + R) % 6;
      j0[r] = kind == 1 ? 5 : (kind == 3 ? 17 : 0);
      j1[r] = kind == 2 ? 23 : (kind == 3 ? 18 : (kind == 4 ? 0 : FG_ATTN_BLK));
      if (kind == 4) j0[r] = 9; /* no valid key */
      m0[r] = r % 4 == 0 ? -INFINITY : frand(-4, 6);
      if (r % 5 == 2) m0[r] = 100.0f; /* the max stays */
      l0[r] = m0[r] == -INFINITY ? 0.0f : frand(0.5f, 20);
    }
    memcpy(s, s0, R * FG_ATTN_BLK * sizeof(float));
    memcpy(m, m0, sizeof m);
    memcpy(l, l0, sizeof l);
    k->softmax(s, R, j0, j1, m, l, c);
    for (size_t r = 0; r < R; r++) {
      /* the row alone */
      float ma = m0[r], la = l0[r], ca;
      memcpy(s1, s0 + r * FG_ATTN_BLK, sizeof s1);
      k->softmax(s1, 1, j0 + r, j1 + r, &ma, &la, &ca);
      bad_alone += memcmp(s1, s + r * FG_ATTN_BLK, sizeof s1) != 0 || memcmp(&ma, &m[r], 4) != 0 ||
                   memcmp(&la, &l[r], 4) != 0 || memcmp(&ca, &c[r], 4) != 0;
      /* the contract */
      const float *sr = s0 + r * FG_ATTN_BLK, *pr = s + r * FG_ATTN_BLK;
      if (j0[r] >= j1[r]) {
        int zero = 1;
        for (uint32_t j = 0; j < FG_ATTN_BLK; j++) zero &= pr[j] == 0.0f;
        bad_spec += !(zero && c[r] == 1.0f && memcmp(&m[r], &m0[r], 4) == 0 && memcmp(&l[r], &l0[r], 4) == 0);
        continue;
      }
      float mx = -INFINITY;
      for (uint32_t j = j0[r]; j < j1[r]; j++) mx = sr[j] > mx ? sr[j] : mx;
      const float mn = m0[r] > mx ? m0[r] : mx;
      const float cw = m0[r] == -INFINITY ? 0.0f : fg_attn_exp1(m0[r] - mn);
      int ok = m[r] == mn && memcmp(&c[r], &cw, 4) == 0;
      for (uint32_t j = 0; j < FG_ATTN_BLK; j++) ok &= (j >= j0[r] && j < j1[r]) ? pr[j] > 0.0f : pr[j] == 0.0f;
      volatile float lc = l0[r] * cw; /* a rounded product, then a rounded sum */
      const float lw = lc + row_sum(k->name, pr);
      ok &= memcmp(&l[r], &lw, 4) == 0;
      bad_spec += !ok;
    }
  }
  CHECK_MSG(bad_alone == 0, "%s: softmax rows differ from the same rows alone in %zu cases", k->name, bad_alone);
  CHECK_MSG(bad_spec == 0, "%s: softmax differs from its contract in %zu rows", k->name, bad_spec);
}

/* pv with a head size that is not a multiple of the vector width, against the C table */
static void test_pv_odd(const fg_attn_kernels *k) {
  enum { R = 7, H = 37 };
  float o[R * H], o_ref[R * H], c[R], p[R * FG_ATTN_BLK], v[FG_ATTN_BLK * H];
  for (int i = 0; i < R * H; i++) o[i] = o_ref[i] = frand(-1, 1);
  for (int i = 0; i < R; i++) c[i] = frand(0, 1);
  for (int i = 0; i < R * (int)FG_ATTN_BLK; i++) p[i] = frand(0, 1);
  for (int i = 0; i < (int)FG_ATTN_BLK * H; i++) v[i] = frand(-1, 1);
  k->pv(o, H, R, H, c, p, 3, 29, v + 3 * H, H * sizeof(float), FG_TYPE_F32);
  fg_attn_ref()->pv(o_ref, H, R, H, c, p, 3, 29, v + 3 * H, H * sizeof(float), FG_TYPE_F32);
  double worst = 0;
  for (int i = 0; i < R * H; i++) worst = fmax(worst, fabs(o[i] - o_ref[i]));
  CHECK_MSG(worst <= 1e-5, "%s: pv with 37 columns differs from the C table by %.3g", k->name, worst);
}

/* fold against its definition, bit for bit: o = fma(c2, x, o c1), each length's tail included */
static void test_fold(const fg_attn_kernels *k) {
  enum { N = 300 };
  const size_t lens[] = {1, 7, 8, 15, 16, 37, 256, N};
  float o[N], x[N], want[N];
  size_t diffs = 0;
  for (size_t t = 0; t < sizeof lens / sizeof lens[0]; t++) {
    const size_t n = lens[t];
    const float c1 = t == 2 ? 0.0f : frand(0, 1), c2 = frand(0, 1); /* c1 = 0: a row whose max moved far */
    for (size_t i = 0; i < N; i++) {
      o[i] = frand(-1000, 1000);
      x[i] = frand(-1000, 1000);
      want[i] = i < n ? fmaf(c2, x[i], o[i] * c1) : o[i];
    }
    k->fold(o, c1, x, c2, n);
    diffs += memcmp(o, want, sizeof o) != 0;
  }
  CHECK_MSG(diffs == 0, "%s: fold differs from fma(c2, x, o c1) in %zu of 8 lengths", k->name, diffs);
}

/* lora_bt against its definition: y[r] += the products t[q] bt[q][r] summed in q order in float (each
 * product and sum rounded, no fused multiply-add), computed here one output at a time; the outputs past n
 * are not touched. */
static void test_lora_bt(const fg_attn_kernels *k) {
  enum { NQ = 16, LD = 150, N = 137 };
  static float bt[NQ * LD], t[NQ], y[LD], want[LD];
  for (int i = 0; i < NQ * LD; i++) bt[i] = frand(-2, 2);
  for (int q = 0; q < NQ; q++) t[q] = frand(-2, 2);
  for (int r = 0; r < LD; r++) y[r] = want[r] = frand(-5, 5);
  for (int r = 0; r < N; r++) {
    volatile float acc = 0.0f; /* volatile: one rounding per product and per sum, whatever the flags */
    for (int q = 0; q < NQ; q++) {
      volatile float prod = bt[q * LD + r] * t[q];
      acc = acc + prod;
    }
    want[r] += acc;
  }
  k->lora_bt(y, t, NQ, bt, LD, N);
  CHECK_MSG(memcmp(y, want, sizeof y) == 0, "%s: lora_bt differs from its definition", k->name);
}

/* argmax against its definition (the first index of the largest non-NaN entry, +0 == -0; SIZE_MAX when
 * every entry is NaN or there is none), checked here with a plain scan: ties, NaN, -inf, +-0, every entry
 * NaN, the maximum at the last index (past the last whole SIMD step) and after a NaN at the first, lengths
 * 0..70 around the SIMD loops (8, 16, 32 wide), then longer ones up to a vocabulary of 262,144. */
static size_t argmax_def(const float *x, size_t n) {
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < n; i++)
    if (!isnan(x[i]) && (best == SIZE_MAX || x[i] > x[best])) best = i;
  return best;
}

enum { ARGMAX_NMAX = 262144 };

/* the lengths test_argmax runs: 0..70, then growing by half (+1000) up to ARGMAX_NMAX; SIZE_MAX after it */
static size_t argmax_next_len(size_t len) {
  if (len == ARGMAX_NMAX) return SIZE_MAX;
  return len < 70 ? len + 1 : FG_MIN((size_t)ARGMAX_NMAX, len * 3 / 2 + 1000);
}

static void test_argmax(const fg_attn_kernels *k) {
  float *v = malloc(ARGMAX_NMAX * sizeof *v);
  CHECK(v != NULL);
  if (!v) return;
  size_t cases = 0, bad = 0;
  for (int kind = 0; kind < 8; kind++)
    for (size_t len = 0; len != SIZE_MAX; len = argmax_next_len(len)) {
      for (size_t i = 0; i < len; i++) v[i] = frand(-30, 30);
      if (kind == 1)
        for (size_t i = 0; i < len; i += 3) v[i] = NAN;
      if (kind == 2)
        for (size_t i = 0; i < len; i++) v[i] = i % 2 ? -INFINITY : NAN;
      if (kind == 3)
        for (size_t i = 0; i < len; i++) v[i] = i % 5 == 4 ? 0.0f : i % 5 == 2 ? -0.0f : -1.0f;
      if (kind == 4)
        for (size_t i = 0; i < len; i++) v[i] = NAN;
      if (kind == 5 && len > 40) v[len / 2] = v[len - 1] = v[33] = 31.0f;
      if (kind == 6 && len > 0) v[len - 1] = 31.0f; /* past the last whole SIMD step */
      if (kind == 7 && len > 0) {
        v[0] = NAN;
        v[len - 1] = INFINITY;
      }
      const size_t got = k->argmax(v, len), want = argmax_def(v, len);
      bad += got != want;
      if (got != want && bad == 1) fprintf(stderr, "%s: argmax kind %d, %zu entries: %zu, want %zu\n", k->name, kind, len, got, want);
      cases++;
    }
  CHECK_MSG(bad == 0, "%s: argmax differs from its definition in %zu of %zu cases", k->name, bad, cases);
  free(v);
}

/* The C table (ARM's) computes exactly what the AVX2 table computes (attn.c): attention of many
 * rows over 4 blocks, GELU (incl. a tail of 5) and exp, bit for bit, f32 and f16 K/V. */
static void test_c_equals_avx2(void) {
  const fg_attn_kernels *a = fg_attn_by_name("avx2"), *c = fg_attn_ref();
  if (!a) {
    printf("avx2   not supported here: C-vs-AVX2 bit equality not checked on this CPU\n");
    return;
  }
  static kv_data d;
  static float q[RMAX * HK], oa[RMAX * HV], oc[RMAX * HV];
  uint32_t first[RMAX], last[RMAX];
  int differ = 0;
  for (uint32_t type = 0; type <= 1; type++) { /* FG_TYPE_F32, FG_TYPE_F16 */
    kv_fill(&d, type);
    for (int r = 0; r < RMAX; r++) {
      for (int i = 0; i < HK; i++) q[r * HK + i] = frand(-0.5f, 0.5f);
      last[r] = 60 + (uint32_t)r * 2;
      first[r] = r % 3 == 0 ? 0 : last[r] - 40;
    }
    /* every row-tile remainder of the SIMD tables (qk: 6 rows, pv: 6) and several tiles */
    for (size_t R = 1; R <= RMAX; R += R < 8 ? 1 : RMAX - 8) {
      run_attn(a, &d, type, q, R, first, last, oa);
      run_attn(c, &d, type, q, R, first, last, oc);
      differ += memcmp(oa, oc, R * HV * sizeof(float)) != 0;
    }
  }
  enum { NG = 4096 + 5 };
  static float g[NG], g2[NG], up[NG], xa[NG], xc[NG];
  for (int i = 0; i < NG; i++) {
    g[i] = g2[i] = frand(-12, 12);
    up[i] = frand(-2, 2);
    xa[i] = frand(-80, 80);
  }
  a->gelu_mul(g, up, NG);
  c->gelu_mul(g2, up, NG);
  differ += memcmp(g, g2, sizeof g) != 0;
  a->exp(xa, g, NG - 5); /* whole vectors: the AVX2 tail uses the scalar fg_attn_exp1 */
  c->exp(xa, xc, NG - 5);
  differ += memcmp(g, xc, (NG - 5) * sizeof(float)) != 0;
  /* lora_bt: ranks 1..17 (16 is the adapters' usual), outputs across the AVX2 tiles (64, 8, single), a row
   * stride wider than the outputs, and products that round (random signs and magnitudes) */
  enum { NQ = 17, LD = 203 };
  static float bt[NQ * LD], tq[NQ], ya[LD], yc[LD];
  for (int i = 0; i < NQ * LD; i++) bt[i] = frand(-1, 1) * (float)(1 + i % 7);
  for (int j = 0; j < NQ; j++) tq[j] = frand(-3, 3);
  int lora_differ = 0;
  const size_t ns[] = {1, 7, 8, 9, 63, 64, 65, 72, 130, 200};
  for (size_t nq = 1; nq <= NQ; nq++)
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
      for (int r = 0; r < LD; r++) ya[r] = yc[r] = frand(-10, 10);
      a->lora_bt(ya, tq, nq, bt, LD, ns[i]);
      c->lora_bt(yc, tq, nq, bt, LD, ns[i]);
      lora_differ += memcmp(ya, yc, sizeof ya) != 0;
    }
  differ += lora_differ != 0;
  CHECK_MSG(differ == 0, "the C attention table differs from the AVX2 table in %d of 5 comparisons", differ);
  printf("ref == avx2 bit for bit: attention (f32, f16 K/V), gelu_mul, exp, lora_bt\n");
}

int main(void) {
  test_c_equals_avx2();
  const char *names[] = {"ref", "avx2", "avx512", "neon"};
  int tested = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const fg_attn_kernels *k = fg_attn_by_name(names[i]);
    if (!k) {
      printf("%-6s not compiled in or not supported by this CPU: skipped\n", names[i]);
      continue;
    }
    CHECK(strcmp(k->name, names[i]) == 0);
    tested++;
    test_exp(k);
    test_gelu(k);
    test_f16(k);
    test_attention(k, FG_TYPE_F32);
    test_attention(k, FG_TYPE_F16);
    test_pv_odd(k);
    test_exp1(k);
    test_softmax(k);
    test_fold(k);
    test_lora_bt(k);
    test_argmax(k);
  }
  CHECK(tested >= 1);
  CHECK(fg_attn_get() != NULL);
  CHECK(fg_attn_by_name("no such isa") == NULL);
  return fg_test_finish("test_attn");
}
