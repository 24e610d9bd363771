/* quant_search.c — searched fits for Q4_0, Q4_1, Q5_0, Q5_1, Q2_K .. Q6_K, IQ4_NL and IQ4_XS (see
 * quant_search.h). The bytes are GGML's layouts (dtype.h); fg_dequantize_row reads them back.
 *
 * The algorithm, for every type, in two levels:
 *
 * 1. A (sub-)block of n values x with element weights w (importance of each value's error) is fitted
 *    onto its grid of levels: the integers lo..hi (x ~ d*q), 0..nmax with a minimum (x ~ d*q + m) or
 *    IQ4's 16 non-uniform values. Candidates: the inverse scale that maps the block's extreme value
 *    (for a signed grid: the value of largest magnitude, onto either end of the grid) exactly onto
 *    the grid's end, perturbed over +-1 level spacing in steps of a tenth. For each candidate every
 *    value is rounded to its nearest level and the scale (and minimum) that minimise the weighted
 *    squared error for those levels are solved in closed form (least squares, 1x1 or 2x2); the
 *    candidate with the least error wins, then "round again with the fitted scale, refit" is
 *    repeated while it lowers the error.
 *
 * 2. Where the format stores the block scales as small integers times a super-block fp16 scale (the
 *    K-quants and IQ4_XS), the super-block scale starts at (largest block scale) / (largest integer)
 *    and is rounded to fp16; then, twice: each block picks its integer scale (and minimum) among the
 *    three (nine) nearest integers by the error of its values requantized with it, and the super-block
 *    scale (and minimum scale) are refitted by least squares over all 256 values, kept only when the
 *    total error goes down. Values are always requantized with the stored (fp16, integer) scales,
 *    exactly as fg_dequantize_row will compute them.
 *
 * Element weights (the importance of each value's error): on the grids with a minimum (Q4_1, Q5_1,
 * Q2_K, Q4_K, Q5_K) w = rms + |x|, rms the block's root mean square; on the signed grids (Q4_0, Q5_0,
 * Q3_K, Q6_K, IQ4_NL, IQ4_XS) w = x^2, on Q3_K's eight levels w = |x|^3: the block's largest values are
 * kept nearly exact. Measured on gemma-3-270m (bench/quant-quality, the q2_k mix, where Q3_K is the
 * only type that differs): Q3_K with rms + |x| gave a lower weight RMSE than llama.cpp's but a mean
 * next-token KL of 2.05 against llama.cpp's 1.08; x^2 1.51, |x|^3 1.26, x^4 1.27, |x|^6 1.75. On the
 * other signed types x^2 beats llama.cpp on both. Q4_0 (tv-270m's dev set on the real file re-typed to
 * llama-quantize's Q4_0 mix, adapter at run time, docs/TV-270M.md): the reference fit 273 / 295 exact,
 * searched with w = x^2 287, w = 1 278, rms + |x| 277, |x|^3 280, x^4 275. */
#include "tensor/quant_search.h"

#include <math.h>
#include <string.h>

#define QS_MAX_N 32 /* the largest (sub-)block */
#define QS_STEPS 10 /* candidates: +-QS_STEPS tenths of a level spacing */

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* A grid of levels: the integers lo..hi, or a table of 16 sorted values (IQ4). */
typedef struct qs_grid {
  int lo, hi;
  const int8_t *tab;
} qs_grid;

static float grid_val(const qs_grid *g, int i) { return g->tab ? (float)g->tab[i] : (float)(g->lo + i); }
static int grid_n(const qs_grid *g) { return g->tab ? 16 : g->hi - g->lo + 1; }

/* the midpoints between IQ4's neighbouring levels (fg_iq4_values): the nearest level of v is the
 * number of midpoints below v (the lower level at a midpoint) */
static const float iq4_mids[15] = {-115.5f, -93.5f, -74.0f, -57.0f, -42.0f, -28.5f, -16.0f, -4.5f,
                                   7.0f,    19.0f,  31.5f,  45.5f,  61.0f,  79.0f,  101.0f};

/* the index of the level nearest v */
static int grid_index(const qs_grid *g, float v) {
  if (!g->tab) return clampi((int)lrintf(v), g->lo, g->hi) - g->lo;
  int i = 0;
  for (int k = 0; k < 15; k++) i += iq4_mids[k] < v;
  return i;
}

/* affine grids (a minimum): w = rms + |x| */
static void elem_weights(const float *x, int n, float *w) {
  float s = 0.0f;
  for (int j = 0; j < n; j++) s += x[j] * x[j];
  const float rms = sqrtf(s / (float)n);
  for (int j = 0; j < n; j++) w[j] = rms + fabsf(x[j]);
}

/* signed grids: w = x^2, the large values first (see the header comment); Q3_K's 8 levels: |x|^3 */
static void elem_weights_sym(const float *x, int n, int power, float *w) {
  for (int j = 0; j < n; j++) w[j] = x[j] * x[j] * (power == 3 ? fabsf(x[j]) : 1.0f);
}

// ----------------------------------------------------------------------------------------------------
// level 1: one block

/* x ~ d * grid_val(L): weighted error of the levels L for the least-squares d */
static float sym_eval(const float *x, const float *w, int n, const qs_grid *g, float id, uint8_t *L, float *d) {
  float sqx = 0.0f, sq2 = 0.0f;
  for (int j = 0; j < n; j++) {
    const int l = grid_index(g, x[j] * id);
    const float q = grid_val(g, l);
    L[j] = (uint8_t)l;
    sqx += w[j] * q * x[j];
    sq2 += w[j] * q * q;
  }
  *d = sq2 > 0.0f ? sqx / sq2 : 0.0f;
  return sq2 > 0.0f ? -sqx * sqx / sq2 : 0.0f; /* the error less sum w x^2 (a constant) */
}

/* the searched scale of a signed block; L its levels */
static float sym_search(const float *x, const float *w, int n, const qs_grid *g, uint8_t *L) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; j++)
    if (fabsf(x[j]) > amax) {
      amax = fabsf(x[j]);
      max = x[j];
    }
  if (amax < 1e-30f) {
    const int z = grid_index(g, 0.0f);
    for (int j = 0; j < n; j++) L[j] = (uint8_t)z;
    return 0.0f;
  }
  const int ng = grid_n(g);
  const float ends[2] = {grid_val(g, 0), grid_val(g, ng - 1)};
  const float spacing[2] = {grid_val(g, 1) - grid_val(g, 0), grid_val(g, ng - 1) - grid_val(g, ng - 2)};
  uint8_t tmp[QS_MAX_N];
  float best = INFINITY, bd = 0.0f;
  for (int e = 0; e < 2; e++)
    for (int k = -QS_STEPS; k <= QS_STEPS; k++) {
      const float end = ends[e] + (e ? 1.0f : -1.0f) * spacing[e] * (float)k / (float)QS_STEPS;
      float d;
      const float err = sym_eval(x, w, n, g, end / max, tmp, &d);
      if (err < best) {
        best = err;
        bd = d;
        memcpy(L, tmp, (size_t)n);
      }
    }
  for (int it = 0; it < 4 && bd != 0.0f; it++) {
    float d;
    const float err = sym_eval(x, w, n, g, 1.0f / bd, tmp, &d);
    if (!(err < best)) break;
    best = err;
    bd = d;
    memcpy(L, tmp, (size_t)n);
  }
  return bd;
}

/* weighted squared error of x ~ d*L + m */
static float aff_err(const float *x, const float *w, int n, const uint8_t *L, float d, float m) {
  float e = 0.0f;
  for (int j = 0; j < n; j++) {
    const float r = d * (float)L[j] + m - x[j];
    e += w[j] * r * r;
  }
  return e;
}

/* levels 0..nmax for given d, m */
static void aff_levels(const float *x, int n, int nmax, float d, float m, uint8_t *L) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < n; j++) L[j] = (uint8_t)clampi((int)lrintf((x[j] - m) * id), 0, nmax);
}

/* least-squares d, m for the levels L (m <= 0 when min_le0) */
static void aff_solve(const float *x, const float *w, int n, const uint8_t *L, bool min_le0, float *d, float *m) {
  float sw = 0.0f, sl = 0.0f, sl2 = 0.0f, sx = 0.0f, slx = 0.0f;
  for (int j = 0; j < n; j++) {
    const float l = (float)L[j];
    sw += w[j];
    sl += w[j] * l;
    sl2 += w[j] * l * l;
    sx += w[j] * x[j];
    slx += w[j] * l * x[j];
  }
  const float D = sw * sl2 - sl * sl;
  if (D > 0.0f) {
    *d = (sw * slx - sl * sx) / D;
    *m = (sl2 * sx - sl * slx) / D;
  } else {
    *d = 0.0f;
    *m = sw > 0.0f ? sx / sw : 0.0f;
  }
  if (min_le0 && *m > 0.0f) {
    *m = 0.0f;
    *d = sl2 > 0.0f ? slx / sl2 : 0.0f;
  }
}

/* the searched scale and minimum of a block on 0..nmax: x ~ d*L + m (m <= 0 when min_le0) */
static void aff_search(const float *x, const float *w, int n, int nmax, bool min_le0, float *bd, float *bm, uint8_t *L) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < n; j++) {
    lo = fminf(lo, x[j]);
    hi = fmaxf(hi, x[j]);
  }
  if (min_le0 && lo > 0.0f) lo = 0.0f;
  if (!(hi - lo > 1e-30f)) {
    memset(L, 0, (size_t)n);
    *bd = 0.0f;
    *bm = min_le0 ? fminf(lo, 0.0f) : lo;
    return;
  }
  uint8_t tmp[QS_MAX_N];
  float best = INFINITY;
  *bd = (hi - lo) / (float)nmax;
  *bm = lo;
  for (int k = -QS_STEPS; k <= QS_STEPS; k++) {
    const float id = ((float)nmax + (float)k / (float)QS_STEPS) / (hi - lo);
    for (int j = 0; j < n; j++) tmp[j] = (uint8_t)clampi((int)lrintf((x[j] - lo) * id), 0, nmax);
    float d, m;
    aff_solve(x, w, n, tmp, min_le0, &d, &m);
    const float err = aff_err(x, w, n, tmp, d, m);
    if (err < best) {
      best = err;
      *bd = d;
      *bm = m;
      memcpy(L, tmp, (size_t)n);
    }
  }
  for (int it = 0; it < 4; it++) {
    float d, m;
    aff_levels(x, n, nmax, *bd, *bm, tmp);
    aff_solve(x, w, n, tmp, min_le0, &d, &m);
    const float err = aff_err(x, w, n, tmp, d, m);
    if (!(err < best)) break;
    best = err;
    *bd = d;
    *bm = m;
    memcpy(L, tmp, (size_t)n);
  }
}

// ----------------------------------------------------------------------------------------------------
// level 2: super-blocks of integer block scales

/* affine K-quants (Q2_K, Q4_K, Q5_K): block j of `sub` values has x ~ (d*ls_j)*L - (dmin*lm_j) */
typedef struct qs_kaff {
  int nsub, sub, nmax, smax; /* blocks, values per block, largest level, largest integer scale */
  uint16_t d16, dmin16;
  int ls[16], lm[16];
  uint8_t L[FG_QK_K];
} qs_kaff;

/* the error of block j with integer scales (s, m) under (d, dmin); its levels into L */
static float kaff_block(const float *x, const float *w, const qs_kaff *k, float d, float dmin, int s, int m, uint8_t *L) {
  const float dl = d * (float)s, ml = dmin * (float)m;
  const float id = dl != 0.0f ? 1.0f / dl : 0.0f;
  float e = 0.0f;
  for (int i = 0; i < k->sub; i++) {
    const int q = clampi((int)lrintf((x[i] + ml) * id), 0, k->nmax);
    L[i] = (uint8_t)q;
    const float r = dl * (float)q - ml - x[i];
    e += w[i] * r * r;
  }
  return e;
}

/* each block's best integer scales near its float ones under (d, dmin); the total error */
static float kaff_pick(const float *x, const float *w, qs_kaff *k, const float *s, const float *mn, float d, float dmin,
                       int *ls, int *lm, uint8_t *L) {
  float tot = 0.0f;
  uint8_t tmp[QS_MAX_N];
  for (int j = 0; j < k->nsub; j++) {
    const float *xb = x + j * k->sub, *wb = w + j * k->sub;
    const int s0 = d > 0.0f ? (int)lrintf(s[j] / d) : 0, m0 = dmin > 0.0f ? (int)lrintf(mn[j] / dmin) : 0;
    float best = INFINITY;
    for (int a = -1; a <= 1; a++)
      for (int b = -1; b <= 1; b++) {
        const int si = clampi(s0 + a, 0, k->smax), mi = clampi(m0 + b, 0, k->smax);
        if ((a && si != s0 + a) || (b && mi != m0 + b)) continue;
        const float e = kaff_block(xb, wb, k, d, dmin, si, mi, tmp);
        if (e < best) {
          best = e;
          ls[j] = si;
          lm[j] = mi;
          memcpy(L + j * k->sub, tmp, (size_t)k->sub);
        }
      }
    tot += best;
  }
  return tot;
}

static void kaff_fit(const float *x, qs_kaff *k) {
  const int n = k->nsub * k->sub;
  float w[FG_QK_K], s[16], mn[16], maxs = 0.0f, maxm = 0.0f;
  for (int j = 0; j < k->nsub; j++) {
    elem_weights(x + j * k->sub, k->sub, w + j * k->sub);
    float d, m;
    aff_search(x + j * k->sub, w + j * k->sub, k->sub, k->nmax, true, &d, &m, k->L + j * k->sub);
    s[j] = d;
    mn[j] = -m;
    maxs = fmaxf(maxs, d);
    maxm = fmaxf(maxm, -m);
  }
  k->d16 = fg_f32_to_fp16(maxs / (float)k->smax);
  k->dmin16 = fg_f32_to_fp16(maxm / (float)k->smax);
  float d = fg_fp16_to_f32(k->d16), dmin = fg_fp16_to_f32(k->dmin16);
  float best = kaff_pick(x, w, k, s, mn, d, dmin, k->ls, k->lm, k->L);
  for (int it = 0; it < 2; it++) {
    /* least squares for (d, dmin) over the super-block: x ~ d*(ls*L) - dmin*lm */
    float saa = 0.0f, sab = 0.0f, sbb = 0.0f, sxa = 0.0f, sxb = 0.0f;
    for (int i = 0; i < n; i++) {
      const float a = (float)(k->ls[i / k->sub] * k->L[i]), b = -(float)k->lm[i / k->sub];
      saa += w[i] * a * a;
      sab += w[i] * a * b;
      sbb += w[i] * b * b;
      sxa += w[i] * x[i] * a;
      sxb += w[i] * x[i] * b;
    }
    const float D = saa * sbb - sab * sab;
    float nd, ndm;
    if (D > 0.0f) {
      nd = (sbb * sxa - sab * sxb) / D;
      ndm = (saa * sxb - sab * sxa) / D;
    } else {
      nd = saa > 0.0f ? sxa / saa : 0.0f;
      ndm = 0.0f;
    }
    if (ndm < 0.0f) {
      ndm = 0.0f;
      nd = saa > 0.0f ? sxa / saa : 0.0f;
    }
    if (!(nd > 0.0f)) break;
    const uint16_t d16 = fg_f32_to_fp16(nd), dm16 = fg_f32_to_fp16(ndm);
    const float d2 = fg_fp16_to_f32(d16), dm2 = fg_fp16_to_f32(dm16);
    int ls[16], lm[16];
    uint8_t L[FG_QK_K];
    const float e = kaff_pick(x, w, k, s, mn, d2, dm2, ls, lm, L);
    if (!(e < best)) break;
    best = e;
    k->d16 = d16;
    k->dmin16 = dm16;
    memcpy(k->ls, ls, sizeof ls);
    memcpy(k->lm, lm, sizeof lm);
    memcpy(k->L, L, (size_t)n);
  }
}

/* signed super-blocks (Q3_K, Q6_K, IQ4_XS): block j has x ~ (d*ls_j)*grid_val(L) */
typedef struct qs_ksym {
  int nsub, sub, slo, shi; /* blocks, values per block, integer scale range */
  qs_grid g;
  uint16_t d16;
  int ls[16];
  uint8_t L[FG_QK_K];
} qs_ksym;

static float ksym_block(const float *x, const float *w, const qs_ksym *k, float d, int s, uint8_t *L) {
  const float dl = d * (float)s, id = dl != 0.0f ? 1.0f / dl : 0.0f;
  float e = 0.0f;
  for (int i = 0; i < k->sub; i++) {
    const int l = grid_index(&k->g, x[i] * id);
    L[i] = (uint8_t)l;
    const float r = dl * grid_val(&k->g, l) - x[i];
    e += w[i] * r * r;
  }
  return e;
}

static float ksym_pick(const float *x, const float *w, const qs_ksym *k, const float *s, float d, int *ls, uint8_t *L) {
  float tot = 0.0f;
  uint8_t tmp[QS_MAX_N];
  for (int j = 0; j < k->nsub; j++) {
    const int s0 = d != 0.0f ? (int)lrintf(s[j] / d) : 0;
    float best = INFINITY;
    for (int a = -1; a <= 1; a++) {
      const int si = clampi(s0 + a, k->slo, k->shi);
      if (a && si != s0 + a) continue;
      const float e = ksym_block(x + j * k->sub, w + j * k->sub, k, d, si, tmp);
      if (e < best) {
        best = e;
        ls[j] = si;
        memcpy(L + j * k->sub, tmp, (size_t)k->sub);
      }
    }
    tot += best;
  }
  return tot;
}

static void ksym_fit(const float *x, qs_ksym *k) {
  const int n = k->nsub * k->sub;
  float w[FG_QK_K], s[16], amax = 0.0f, max = 0.0f;
  for (int j = 0; j < k->nsub; j++) {
    elem_weights_sym(x + j * k->sub, k->sub, k->g.hi == 3 ? 3 : 2, w + j * k->sub);
    s[j] = sym_search(x + j * k->sub, w + j * k->sub, k->sub, &k->g, k->L + j * k->sub);
    if (fabsf(s[j]) > amax) {
      amax = fabsf(s[j]);
      max = s[j];
    }
  }
  k->d16 = fg_f32_to_fp16(max / (float)k->slo); /* the largest block scale onto the negative end */
  float best = ksym_pick(x, w, k, s, fg_fp16_to_f32(k->d16), k->ls, k->L);
  for (int it = 0; it < 2; it++) {
    float sxa = 0.0f, saa = 0.0f;
    for (int i = 0; i < n; i++) {
      const float a = (float)k->ls[i / k->sub] * grid_val(&k->g, k->L[i]);
      sxa += w[i] * x[i] * a;
      saa += w[i] * a * a;
    }
    if (!(saa > 0.0f)) break;
    const uint16_t d16 = fg_f32_to_fp16(sxa / saa);
    int ls[16];
    uint8_t L[FG_QK_K];
    const float e = ksym_pick(x, w, k, s, fg_fp16_to_f32(d16), ls, L);
    if (!(e < best)) break;
    best = e;
    k->d16 = d16;
    memcpy(k->ls, ls, sizeof ls);
    memcpy(k->L, L, (size_t)n);
  }
}

// ----------------------------------------------------------------------------------------------------
// packing into GGML's layouts

static void put_nibbles(const uint8_t q[32], uint8_t qs[16]) {
  for (int j = 0; j < 16; j++) qs[j] = (uint8_t)(q[j] | (q[j + 16] << 4));
}

/* the fifth bits of 32 levels (little-endian uint32 in qh) and their low nibbles */
static void put_q5(const uint8_t q[32], uint8_t qh[4], uint8_t qs[16]) {
  uint32_t h = 0;
  uint8_t lo[32];
  for (int j = 0; j < 32; j++) {
    h |= (uint32_t)(q[j] >> 4) << j;
    lo[j] = q[j] & 0xf;
  }
  put_nibbles(lo, qs);
  for (int k = 0; k < 4; k++) qh[k] = (uint8_t)(h >> (8 * k));
}

static void k4_pack_scales(const int sc[8], const int m[8], uint8_t out[12]) {
  memset(out, 0, 12);
  for (int j = 0; j < 8; j++) {
    if (j < 4) {
      out[j] |= (uint8_t)sc[j];
      out[j + 4] |= (uint8_t)m[j];
    } else {
      out[j + 4] = (uint8_t)((sc[j] & 0xf) | ((m[j] & 0xf) << 4));
      out[j - 4] |= (uint8_t)((sc[j] >> 4) << 6);
      out[j] |= (uint8_t)((m[j] >> 4) << 6);
    }
  }
}

// ----------------------------------------------------------------------------------------------------
// the types

static const qs_grid grid_q4_0 = {-8, 7, NULL};
static const qs_grid grid_q5_0 = {-16, 15, NULL};
static const qs_grid grid_iq4 = {0, 15, fg_iq4_values};

/* Q4_1 / Q5_1: x ~ d*q + m, d and m fp16 */
static void quant_qx_1(const float *x, bool q5, void *dst, size_t nb) {
  const int nmax = q5 ? 31 : 15;
  for (size_t i = 0; i < nb; i++) {
    const float *xb = x + 32 * i;
    float w[32], d, m;
    uint8_t L[32];
    elem_weights(xb, 32, w);
    aff_search(xb, w, 32, nmax, false, &d, &m, L);
    /* the stored fp16 pair: the rounded fit or one of its neighbours, whichever has the least error */
    const uint16_t d0 = fg_f32_to_fp16(d), m0 = fg_f32_to_fp16(m);
    uint16_t d16 = d0, m16 = m0;
    float best = INFINITY;
    for (int a = -1; a <= 1; a++)
      for (int b = -1; b <= 1; b++) {
        const uint16_t dc = (uint16_t)(d0 + a), mc = (uint16_t)(m0 + b);
        const float df = fg_fp16_to_f32(dc), mf = fg_fp16_to_f32(mc);
        if (!isfinite(df) || !isfinite(mf) || (a && (dc & 0x7fff) == 0) || (b && (mc & 0x7fff) == 0)) continue;
        uint8_t T[32];
        aff_levels(xb, 32, nmax, df, mf, T);
        const float e = aff_err(xb, w, 32, T, df, mf);
        if (e < best) {
          best = e;
          d16 = dc;
          m16 = mc;
          memcpy(L, T, 32);
        }
      }
    if (q5) {
      fg_block_q5_1 *b = (fg_block_q5_1 *)dst + i;
      b->d = d16;
      b->m = m16;
      put_q5(L, b->qh, b->qs);
    } else {
      fg_block_q4_1 *b = (fg_block_q4_1 *)dst + i;
      b->d = d16;
      b->m = m16;
      put_nibbles(L, b->qs);
    }
  }
}

/* Q4_0 / Q5_0 / IQ4_NL: x ~ d*grid, d fp16 */
static void quant_sym32(const float *x, uint32_t type, void *dst, size_t nb) {
  const qs_grid *g = type == FG_TYPE_IQ4_NL ? &grid_iq4 : type == FG_TYPE_Q4_0 ? &grid_q4_0 : &grid_q5_0;
  for (size_t i = 0; i < nb; i++) {
    const float *xb = x + 32 * i;
    float w[32];
    uint8_t L[32];
    elem_weights_sym(xb, 32, 2, w);
    const uint16_t d0 = fg_f32_to_fp16(sym_search(xb, w, 32, g, L));
    uint16_t d16 = d0;
    float best = INFINITY;
    for (int a = -1; a <= 1; a++) { /* the rounded scale or a neighbour */
      const uint16_t dc = (uint16_t)(d0 + a);
      const float d = fg_fp16_to_f32(dc), id = d != 0.0f ? 1.0f / d : 0.0f;
      if (!isfinite(d) || (a && (dc & 0x7fff) == 0) || (a && (d0 & 0x7fff) == 0)) continue;
      uint8_t T[32];
      float e = 0.0f;
      for (int j = 0; j < 32; j++) {
        T[j] = (uint8_t)grid_index(g, xb[j] * id);
        const float r = d * grid_val(g, T[j]) - xb[j];
        e += w[j] * r * r;
      }
      if (e < best) {
        best = e;
        d16 = dc;
        memcpy(L, T, 32);
      }
    }
    if (type == FG_TYPE_IQ4_NL) {
      fg_block_iq4_nl *b = (fg_block_iq4_nl *)dst + i;
      b->d = d16;
      put_nibbles(L, b->qs);
    } else if (type == FG_TYPE_Q4_0) {
      fg_block_q4_0 *b = (fg_block_q4_0 *)dst + i;
      b->d = d16;
      put_nibbles(L, b->qs);
    } else {
      fg_block_q5_0 *b = (fg_block_q5_0 *)dst + i;
      b->d = d16;
      put_q5(L, b->qh, b->qs);
    }
  }
}

static void quant_q45_k(const float *x, bool q5, void *dst, size_t nb) {
  for (size_t i = 0; i < nb; i++) {
    qs_kaff k = {.nsub = 8, .sub = 32, .nmax = q5 ? 31 : 15, .smax = 63};
    kaff_fit(x + FG_QK_K * i, &k);
    uint8_t *qs, *scales;
    if (q5) {
      fg_block_q5_k *b = (fg_block_q5_k *)dst + i;
      b->d = k.d16;
      b->dmin = k.dmin16;
      qs = b->qs;
      scales = b->scales;
      memset(b->qh, 0, sizeof b->qh);
      for (int j = 0; j < 8; j++)
        for (int l = 0; l < 32; l++) b->qh[l] |= (uint8_t)(((k.L[32 * j + l] >> 4) & 1) << j);
    } else {
      fg_block_q4_k *b = (fg_block_q4_k *)dst + i;
      b->d = k.d16;
      b->dmin = k.dmin16;
      qs = b->qs;
      scales = b->scales;
    }
    k4_pack_scales(k.ls, k.lm, scales);
    for (int p = 0; p < 4; p++)
      for (int l = 0; l < 32; l++)
        qs[32 * p + l] = (uint8_t)((k.L[64 * p + l] & 0xf) | ((k.L[64 * p + 32 + l] & 0xf) << 4));
  }
}

static void quant_q2_k(const float *x, void *dst, size_t nb) {
  for (size_t i = 0; i < nb; i++) {
    qs_kaff k = {.nsub = 16, .sub = 16, .nmax = 3, .smax = 15};
    kaff_fit(x + FG_QK_K * i, &k);
    fg_block_q2_k *b = (fg_block_q2_k *)dst + i;
    b->d = k.d16;
    b->dmin = k.dmin16;
    for (int j = 0; j < 16; j++) b->scales[j] = (uint8_t)(k.ls[j] | (k.lm[j] << 4));
    memset(b->qs, 0, sizeof b->qs);
    for (int e = 0; e < FG_QK_K; e++) { /* element 128h + 32s + l: bits 2s of qs[32h + l] */
      const int h = e / 128, s = (e % 128) / 32, l = e % 32;
      b->qs[32 * h + l] |= (uint8_t)(k.L[e] << (2 * s));
    }
  }
}

static void quant_q36_k(const float *x, bool q6, void *dst, size_t nb) {
  for (size_t i = 0; i < nb; i++) {
    qs_ksym k = {.nsub = 16, .sub = 16, .slo = q6 ? -128 : -32, .shi = q6 ? 127 : 31, .g = {q6 ? -32 : -4, q6 ? 31 : 3, NULL}};
    ksym_fit(x + FG_QK_K * i, &k);
    if (q6) {
      fg_block_q6_k *b = (fg_block_q6_k *)dst + i;
      b->d = k.d16;
      for (int j = 0; j < 16; j++) b->scales[j] = (int8_t)k.ls[j];
      memset(b->ql, 0, sizeof b->ql);
      memset(b->qh, 0, sizeof b->qh);
      for (int e = 0; e < FG_QK_K; e++) { /* element 128h + 32s + l */
        const int h = e / 128, sp = (e % 128) / 32, l = e % 32;
        b->ql[64 * h + 32 * (sp & 1) + l] |= (uint8_t)((k.L[e] & 0xf) << (sp < 2 ? 0 : 4));
        b->qh[32 * h + l] |= (uint8_t)((k.L[e] >> 4) << (2 * sp));
      }
    } else {
      fg_block_q3_k *b = (fg_block_q3_k *)dst + i;
      b->d = k.d16;
      memset(b->scales, 0, sizeof b->scales);
      for (int j = 0; j < 16; j++) {
        const int l6 = k.ls[j] + 32;
        if (j < 8) b->scales[j] = (uint8_t)(l6 & 0xf);
        else b->scales[j - 8] |= (uint8_t)((l6 & 0xf) << 4);
        b->scales[8 + j % 4] |= (uint8_t)((l6 >> 4) << (2 * (j / 4)));
      }
      memset(b->qs, 0, sizeof b->qs);
      memset(b->hmask, 0, sizeof b->hmask);
      for (int e = 0; e < FG_QK_K; e++) {
        const int h = e / 128, sp = (e % 128) / 32, l = e % 32;
        b->qs[32 * h + l] |= (uint8_t)((k.L[e] & 3) << (2 * sp));
        b->hmask[l] |= (uint8_t)(((k.L[e] >> 2) & 1) << (4 * h + sp));
      }
    }
  }
}

static void quant_iq4_xs(const float *x, void *dst, size_t nb) {
  for (size_t i = 0; i < nb; i++) {
    qs_ksym k = {.nsub = 8, .sub = 32, .slo = -32, .shi = 31, .g = grid_iq4};
    ksym_fit(x + FG_QK_K * i, &k);
    fg_block_iq4_xs *b = (fg_block_iq4_xs *)dst + i;
    b->d = k.d16;
    b->scales_h = 0;
    memset(b->scales_l, 0, sizeof b->scales_l);
    for (int j = 0; j < 8; j++) {
      const int ls = k.ls[j] + 32;
      b->scales_l[j / 2] |= (uint8_t)((ls & 0xf) << (4 * (j % 2)));
      b->scales_h |= (uint16_t)((ls >> 4) << (2 * j));
      put_nibbles(k.L + 32 * j, b->qs + 16 * j);
    }
  }
}

bool fg_quant_is_searched(uint32_t type) {
  switch (type) {
    case FG_TYPE_Q4_0:
    case FG_TYPE_Q4_1:
    case FG_TYPE_Q5_0:
    case FG_TYPE_Q5_1:
    case FG_TYPE_Q2_K:
    case FG_TYPE_Q3_K:
    case FG_TYPE_Q4_K:
    case FG_TYPE_Q5_K:
    case FG_TYPE_Q6_K:
    case FG_TYPE_IQ4_NL:
    case FG_TYPE_IQ4_XS: return true;
    default: return false;
  }
}

void fg_quantize_row_searched(uint32_t type, const float *FG_RESTRICT src, void *FG_RESTRICT dst, size_t n) {
  switch (type) {
    case FG_TYPE_Q4_1: quant_qx_1(src, false, dst, n / 32); break;
    case FG_TYPE_Q5_1: quant_qx_1(src, true, dst, n / 32); break;
    case FG_TYPE_Q4_0:
    case FG_TYPE_Q5_0:
    case FG_TYPE_IQ4_NL: quant_sym32(src, type, dst, n / 32); break;
    case FG_TYPE_Q2_K: quant_q2_k(src, dst, n / FG_QK_K); break;
    case FG_TYPE_Q3_K: quant_q36_k(src, false, dst, n / FG_QK_K); break;
    case FG_TYPE_Q6_K: quant_q36_k(src, true, dst, n / FG_QK_K); break;
    case FG_TYPE_Q4_K: quant_q45_k(src, false, dst, n / FG_QK_K); break;
    case FG_TYPE_Q5_K: quant_q45_k(src, true, dst, n / FG_QK_K); break;
    case FG_TYPE_IQ4_XS: quant_iq4_xs(src, dst, n / FG_QK_K); break;
    default: fg_quantize_row(type, src, dst, n); break;
  }
}
