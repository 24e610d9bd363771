/* gen_random.c — the generators' random numbers: splitmix64 (seeding), xoshiro256** (one stream per
 * seed and tensor name), Marsaglia's polar normal variates from basic operations only, and the rows of
 * values each kind of tensor gets (fg_gen_fill_row). Used by the GGUF writer (gen_model.c), the checkpoint
 * writer (gen_hf.c) and the adapter generator (gen_lora.c); determinism as described in gen_model.c. */
#include "gen/gen_internal.h"

#include <math.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* ------------------------------------------------------------------------------------------------
 * Deterministic random numbers: splitmix64 (seeding), xoshiro256** (stream), polar normal variates
 */
static uint64_t gen_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}


static inline uint64_t gen_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* One stream per (seed, tensor name). */
void fg_gen_rng_seed(fg_gen_rng *r, uint64_t seed, const char *name) {
  uint64_t st = seed ^ fg_fnv1a(FG_FNV1A_INIT, name, strlen(name));
  for (int i = 0; i < 4; i++) r->s[i] = gen_splitmix64(&st);
  if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) r->s[0] = 1; /* practically unreachable */
  r->spare = 0.0;
  r->has_spare = 0;
}

static uint64_t gen_next(fg_gen_rng *r) {
  uint64_t *s = r->s;
  const uint64_t out = gen_rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = gen_rotl(s[3], 45);
  return out;
}

/* Uniform in [0, 1) with 53 random bits; exact. */
static double gen_uniform(fg_gen_rng *r) { return (double)(gen_next(r) >> 11) * 0x1.0p-53; }

/* Natural logarithm of a positive normal double, from basic operations only:
 * x = m * 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(z), z = (m-1)/(m+1), |z| < 0.172;
 * the odd series up to z^19 is accurate to ~1e-16 there. */
static double gen_ln(double x) {
  static const double ln2 = 0.69314718055994530942;
  static const double sqrt2 = 1.41421356237309504880;
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  int e = (int)((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull;
  double m;
  memcpy(&m, &bits, sizeof m); /* [1, 2) */
  if (m > sqrt2) {
    m *= 0.5;
    e += 1;
  }
  const double z = (m - 1.0) / (m + 1.0);
  const double z2 = z * z;
  double p = 2.0 / 19.0;
  for (int k = 17; k >= 1; k -= 2) p = p * z2 + 2.0 / (double)k;
  return (double)e * ln2 + z * p;
}

/* Standard normal variate (Marsaglia's polar method). */
double fg_gen_normal(fg_gen_rng *r) {
  if (r->has_spare) {
    r->has_spare = 0;
    return r->spare;
  }
  double u, v, s;
  do {
    u = 2.0 * gen_uniform(r) - 1.0;
    v = 2.0 * gen_uniform(r) - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  const double f = sqrt(-2.0 * gen_ln(s) / s);
  r->spare = v * f;
  r->has_spare = 1;
  return u * f;
}

/* ------------------------------------------------------------------------------------------------
 * Rows of values, by initialisation (fg_gen_init)
 */
void fg_gen_fill_row(fg_gen_rng *r, const fg_gen_tensor *t, float *FG_RESTRICT row, size_t n) {
  switch (t->init) {
    case FG_GEN_INIT_NORMAL:
      for (size_t i = 0; i < n; i++) row[i] = (float)(fg_gen_normal(r) * t->scale);
      break;
    case FG_GEN_INIT_ROWS: {
      double ss = 0.0;
      for (size_t i = 0; i < n; i++) {
        const double x = fg_gen_normal(r);
        row[i] = (float)x;
        ss += x * x;
      }
      const double k = ss > 0.0 ? t->scale / sqrt(ss / (double)n) : 0.0;
      for (size_t i = 0; i < n; i++) row[i] = (float)((double)row[i] * k);
    } break;
    case FG_GEN_INIT_NORM:
    case FG_GEN_INIT_OUT_NORM: {
      const double spread = t->init == FG_GEN_INIT_NORM ? FG_GEN_NORM_SPREAD : FG_GEN_OUT_NORM_SPREAD;
      for (size_t i = 0; i < n; i++) row[i] = (float)(t->scale * (1.0 + spread * (2.0 * gen_uniform(r) - 1.0)));
    } break;
  }
}
