/* gen_model.c — the synthetic model generator: a valid GGUF v3 file of architecture `gemma3` with
 * random weights drawn from a seed, streamed tensor by tensor (generate rows, quantize, write).
 *
 * Determinism: the same parameters give a byte-identical file on every platform. Random numbers come
 * from xoshiro256** (seeded per tensor through splitmix64, so a tensor's values depend only on the
 * seed and its name, not on the order or on the other tensors); normal variates use Marsaglia's polar
 * form of Box-Muller with a logarithm written here from +, -, *, / only, and sqrt (IEEE 754 requires it
 * to be correctly rounded). No libm transcendental function is used, because those differ between
 * C libraries. The library is compiled as ISO C11, where GCC does not contract a*b+c into an FMA;
 * clang is told the same below. x87 (FLT_EVAL_METHOD 2) is not a target. */
#define FG_EXPERIMENTAL
#include "fg_internal.h"
#include "gguf/gguf.h"
#include "tensor/dtype.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define GEN_DEFAULT_SEED 1u

/* ------------------------------------------------------------------------------------------------
 * Weight statistics
 *
 * Matrices ~ N(0, 1/fan_in): with RMS-normed inputs (norm weights ~1) every projection output has
 * entries of order 1; Gemma's post-norms (post_attention_norm, post_ffw_norm) re-normalise each
 * block's contribution before it is added to the residual, so the residual grows only like the square
 * root of the number of blocks and every activation stays O(1).
 *
 * Peaked next-token distributions: the final RMSNorm output y has RMS equal to the output_norm
 * weight w (near-constant, W * (1 ± 0.05)). A logit is y . e_j, a sum of n_embd products of
 * independent terms, so its standard deviation over the vocabulary is W * sqrt(n_embd) * s when the
 * head rows have RMS s. We want GEN_LOGIT_STD = 8: the expected gap between the two largest of N normal
 * samples is about sigma / sqrt(2 ln N), so with 262,144 tokens the top-1 token leads the runner-up by
 * ~1.5 logits on average (far above kernel rounding noise) and greedy decoding is a meaningful check.
 * Every embedding/head row is rescaled to RMS exactly s = GEN_EMBD_STD_FACTOR / sqrt(n_embd) (no token
 * becomes a "hub" that wins for most inputs merely because its random row came out long), hence
 * W = GEN_LOGIT_STD / GEN_EMBD_STD_FACTOR = 32. An untied output.weight uses the same s and W.
 *
 * Greedy runs that do not collapse: a random model tends to repeat one token, for two reasons
 * measured on this generator (reference forward, greedy from random prompts):
 *  - with a tied head the raw input row x0 = e_t * sqrt(n_embd) stays in the residual and raises the
 *    logit of t itself by about W * GEN_EMBD_STD_FACTOR^2 * sqrt(n_embd) / RMS(residual) (2 sigma on
 *    270m at factor 0.5). Factor 0.25 keeps that below 1 sigma; the input still carries its full signal
 *    because layer 0's attn_norm rescales it;
 *  - near-uniform random attention adds nearly the same context average at every position, so the
 *    hidden state barely changes from one position to the next. Damping that contribution with
 *    post_attention_norm weights of GEN_POST_ATTN_NORM = 0.3 keeps the hidden state token-specific.
 * With weights 1 and factor 0.5, 37 of 45 greedy steps on 270m repeated the previous id; with these
 * settings 0 of 45 (3 seeds). Sharpening attention instead (q/k norm weights 3) also stops the
 * repetition, but made the model chaotic: a 1e-6 relative change of the input moved the logits by 1e-2
 * instead of 3e-4, too fragile for comparisons with other implementations.
 *
 * The other norm weights (Gemma's +1 already included) are uniform in 1 ± GEN_NORM_SPREAD. */
#define GEN_LOGIT_STD 8.0
#define GEN_EMBD_STD_FACTOR 0.25
#define GEN_POST_ATTN_NORM 0.3
#define GEN_NORM_SPREAD 0.1
#define GEN_OUT_NORM_SPREAD 0.05

/* ------------------------------------------------------------------------------------------------
 * Deterministic random numbers: splitmix64 (seeding), xoshiro256** (stream), polar normal variates
 */
typedef struct gen_rng {
  uint64_t s[4];  /* xoshiro256** state, never all zero */
  double spare;   /* second variate of the last polar pair */
  int has_spare;
} gen_rng;

static uint64_t gen_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t gen_fnv1a(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001B3ull;
  }
  return h;
}

static inline uint64_t gen_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* One stream per (seed, tensor name). */
static void gen_rng_seed(gen_rng *r, uint64_t seed, const char *name) {
  uint64_t st = seed ^ gen_fnv1a(name, strlen(name));
  for (int i = 0; i < 4; i++) r->s[i] = gen_splitmix64(&st);
  if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) r->s[0] = 1; /* practically unreachable */
  r->spare = 0.0;
  r->has_spare = 0;
}

static uint64_t gen_next(gen_rng *r) {
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
static double gen_uniform(gen_rng *r) { return (double)(gen_next(r) >> 11) * 0x1.0p-53; }

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
static double gen_normal(gen_rng *r) {
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
 * Presets
 */
typedef struct gen_preset {
  const char *name;
  uint32_t n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;
  uint32_t n_ctx, sliding_window, swa_pattern;
  uint32_t n_vocab; /* of the synthetic vocabulary; a tokenizer.json overrides it */
  float rope_base, rope_base_swa, rms_eps;
} gen_preset;

static const gen_preset gen_presets[] = {
    /* name   embd layer head kv  hdim  ff    ctx    swa  pat vocab   rope  rope_swa eps */
    {"270m", 640, 18, 4, 1, 256, 2048, 32768, 512, 6, 262144, 1e6f, 1e4f, 1e-6f},
    {"tiny", 64, 6, 4, 1, 32, 128, 2048, 8, 6, 512, 1e6f, 1e4f, 1e-6f},
};

static const gen_preset *gen_find_preset(const char *name) {
  for (size_t i = 0; i < sizeof gen_presets / sizeof gen_presets[0]; i++)
    if (strcmp(gen_presets[i].name, name) == 0) return &gen_presets[i];
  return NULL;
}

/* llama.cpp's general.file_type (llama_ftype) of a weight type. */
static uint32_t gen_file_type(uint32_t type) {
  switch (type) {
    case FG_TYPE_F32: return 0;
    case FG_TYPE_F16: return 1;
    case FG_TYPE_Q4_0: return 2;
    case FG_TYPE_Q8_0: return 7;
    case FG_TYPE_BF16: return 32;
    default: return 0;
  }
}

static bool gen_type_ok(uint32_t type) {
  return type == FG_TYPE_F32 || type == FG_TYPE_F16 || type == FG_TYPE_BF16 || type == FG_TYPE_Q8_0 ||
         type == FG_TYPE_Q4_0;
}

/* ------------------------------------------------------------------------------------------------
 * Vocabulary: tokenizer.ggml.tokens / scores / token_type, synthetic or from a tokenizer.json
 */
enum { GEN_TOK_NORMAL = 1, GEN_TOK_UNKNOWN = 2, GEN_TOK_CONTROL = 3, GEN_TOK_USER = 4, GEN_TOK_UNUSED = 5,
       GEN_TOK_BYTE = 6 };

#define GEN_FN_FIRST_ID 46
static const char *const gen_fn_tokens[7] = {
    "<start_function_declaration>", "<end_function_declaration>", "<start_function_call>",
    "<end_function_call>",          "<start_function_response>",  "<end_function_response>",
    "<escape>",
};

typedef struct gen_vocab {
  uint32_t n;
  const char **text; /* [n] piece bytes, NUL-terminated (owned by arena or json) */
  size_t *len;       /* [n] */
  float *score;      /* [n] */
  int32_t *type;     /* [n] llama token types */
  char *arena;       /* synthetic piece storage */
  size_t arena_cap, arena_used;
  cJSON *json;       /* owner of the pieces read from a tokenizer.json */
} gen_vocab;

static void gen_vocab_free(gen_vocab *v) {
  fg_free((void *)v->text);
  fg_free(v->len);
  fg_free(v->score);
  fg_free(v->type);
  fg_free(v->arena);
  if (v->json) cJSON_Delete(v->json);
  memset(v, 0, sizeof *v);
}

static fg_status gen_vocab_alloc(gen_vocab *v, uint32_t n) {
  v->n = n;
  v->text = fg_calloc(n, sizeof *v->text);
  v->len = fg_calloc(n, sizeof *v->len);
  v->score = fg_calloc(n, sizeof *v->score);
  v->type = fg_calloc(n, sizeof *v->type);
  if (!v->text || !v->len || !v->score || !v->type) return FG_ERR_NOMEM;
  return FG_OK;
}

/* Added tokens that llama.cpp treats as control although tokenizer.json does not flag them special. */
static bool gen_looks_special(const char *s) {
  static const char *const exact[] = {"<pad>", "<mask>", "<2mass>", "[@BOS@]"};
  for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
    if (strcmp(s, exact[i]) == 0) return true;
  const size_t n = strlen(s);
  if (n >= 4 && strncmp(s, "<|", 2) == 0 && strcmp(s + n - 2, "|>") == 0) return true;
  /* fullwidth vertical line U+FF5C is EF BD 9C */
  if (n >= 8 && strncmp(s, "<\xef\xbd\x9c", 4) == 0 && strcmp(s + n - 4, "\xef\xbd\x9c>") == 0) return true;
  return strncmp(s, "<unused", 7) == 0 && n > 8 && s[n - 1] == '>';
}

/* Rewrites "▁" (E2 96 81) as ' ' in place; returns the new length. */
static size_t gen_unescape_spaces(char *s) {
  size_t r = 0, w = 0;
  while (s[r]) {
    if ((unsigned char)s[r] == 0xE2 && (unsigned char)s[r + 1] == 0x96 && (unsigned char)s[r + 2] == 0x81) {
      s[w++] = ' ';
      r += 3;
    } else {
      s[w++] = s[r++];
    }
  }
  s[w] = '\0';
  return w;
}

/* ---- synthetic ---- */

/* Copies a piece into the arena (sized for the worst case up front). */
static void gen_vocab_put(gen_vocab *v, uint32_t id, const char *s, size_t n, int32_t type, float score) {
  FG_ASSERT(id < v->n && v->arena_used + n + 1 <= v->arena_cap);
  char *d = v->arena + v->arena_used;
  memcpy(d, s, n);
  d[n] = '\0';
  v->arena_used += n + 1;
  v->text[id] = d;
  v->len[id] = n;
  v->type[id] = type;
  v->score[id] = score;
}

static void gen_vocab_putz(gen_vocab *v, uint32_t id, const char *s, int32_t type) {
  gen_vocab_put(v, id, s, strlen(s), type, 0.0f);
}

/* Printable ASCII ordered roughly by frequency in text; ' ' is written as U+2581 in pieces. Multi-char
 * pieces enumerate strings over a prefix of it, so pieces made of frequent characters come first. */
static const char gen_alphabet[] =
    " etaoinsrhldcumfpgwybvkxjqzETAOINSRHLDCUMFPGWYBVKXJQZ0123456789.,-'\"():;!?/_=+*&%$#@<>[]{}|\\^`~";

static size_t gen_char_piece(char c, char *out) {
  if (c == ' ') {
    memcpy(out, "\xE2\x96\x81", 3); /* U+2581 LOWER ONE EIGHTH BLOCK */
    return 3;
  }
  out[0] = c;
  return 1;
}

/* Multi-char pieces of each length use the first k characters of gen_alphabet. Every piece of length
 * L > 2 is a piece of length L-1 plus a single character, so SentencePiece-style merging reaches it. */
static const struct { uint32_t len, k; } gen_multi_plan[] = {{2, 95}, {3, 40}, {4, 20}, {5, 12}, {6, 8}};

/* Appends up to `want` multi-char pieces at ids first.., with scores -1, -2, ... (earlier = merged
 * first). Within one length, strings are enumerated in shells of growing largest character index. */
static uint32_t gen_vocab_multi(gen_vocab *v, uint32_t first, uint32_t want) {
  uint32_t made = 0;
  for (size_t p = 0; p < sizeof gen_multi_plan / sizeof gen_multi_plan[0] && made < want; p++) {
    const uint32_t L = gen_multi_plan[p].len, k = gen_multi_plan[p].k;
    for (uint32_t m = 0; m < k && made < want; m++) {
      uint32_t idx[8] = {0}; /* odometer over [0, m]^L */
      for (;;) {
        uint32_t mx = 0;
        for (uint32_t i = 0; i < L; i++) mx = FG_MAX(mx, idx[i]);
        if (mx == m) {
          char buf[8 * 3];
          size_t n = 0;
          for (uint32_t i = 0; i < L; i++) n += gen_char_piece(gen_alphabet[idx[i]], buf + n);
          gen_vocab_put(v, first + made, buf, n, GEN_TOK_NORMAL, -(float)(made + 1));
          if (++made == want) break;
        }
        uint32_t i = L;
        while (i > 0 && idx[i - 1] == m) idx[--i] = 0;
        if (i == 0) break;
        idx[i - 1]++;
      }
    }
  }
  return made;
}

/* ids 0..4 pad/eos/bos/unk/mask, 5..45 unused, 46..52 FunctionGemma, 53..104 unused, 105/106 turns,
 * 107..362 bytes <0x00>..<0xFF>, then the 95 printable ASCII characters, then multi-char pieces in
 * three quarters of the remaining ids and <unusedN> in the rest. */
static fg_status gen_vocab_synthetic(gen_vocab *v, uint32_t n, fg_error *err) {
  const uint32_t n_fixed = 107 + 256 + 95;
  if (n < n_fixed) return fg_err(err, FG_ERR_INTERNAL, "gen: synthetic vocabulary needs %u ids", n_fixed);
  if (gen_vocab_alloc(v, n) != FG_OK) return fg_err(err, FG_ERR_NOMEM, "gen: out of memory (vocabulary)");
  v->arena_cap = (size_t)n * 32 + 4096; /* every piece is < 32 bytes with its NUL */
  v->arena = fg_malloc(v->arena_cap);
  if (!v->arena) return fg_err(err, FG_ERR_NOMEM, "gen: out of memory (vocabulary)");

  static const char *const first[5] = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>"};
  static const int32_t first_type[5] = {GEN_TOK_CONTROL, GEN_TOK_CONTROL, GEN_TOK_CONTROL, GEN_TOK_UNKNOWN,
                                        GEN_TOK_USER};
  uint32_t n_unused = 0;
  char buf[32];
  for (uint32_t id = 0; id < 107; id++) {
    if (id < 5) {
      gen_vocab_putz(v, id, first[id], first_type[id]);
    } else if (id >= GEN_FN_FIRST_ID && id < GEN_FN_FIRST_ID + 7) {
      gen_vocab_putz(v, id, gen_fn_tokens[id - GEN_FN_FIRST_ID], GEN_TOK_CONTROL);
    } else if (id == 105) {
      gen_vocab_putz(v, id, "<start_of_turn>", GEN_TOK_CONTROL);
    } else if (id == 106) {
      gen_vocab_putz(v, id, "<end_of_turn>", GEN_TOK_CONTROL);
    } else {
      snprintf(buf, sizeof buf, "<unused%u>", n_unused++);
      gen_vocab_putz(v, id, buf, GEN_TOK_UNUSED);
    }
  }
  for (uint32_t b = 0; b < 256; b++) {
    snprintf(buf, sizeof buf, "<0x%02X>", b);
    gen_vocab_putz(v, 107 + b, buf, GEN_TOK_BYTE);
  }
  uint32_t id = 107 + 256;
  for (int c = 0x20; c < 0x7F; c++) {
    size_t len = gen_char_piece((char)c, buf);
    gen_vocab_put(v, id++, buf, len, GEN_TOK_NORMAL, 0.0f);
  }
  const uint32_t room = n - id;
  id += gen_vocab_multi(v, id, (uint32_t)((uint64_t)room * 3 / 4));
  for (; id < n; id++) {
    snprintf(buf, sizeof buf, "<unused%u>", n_unused++);
    gen_vocab_putz(v, id, buf, GEN_TOK_UNUSED);
  }
  return FG_OK;
}

/* ---- from a Hugging Face tokenizer.json ---- */

typedef struct gen_piece_map {
  int32_t *slot; /* [cap] token id or -1 */
  size_t cap;    /* power of two */
  const gen_vocab *v;
} gen_piece_map;

static int32_t gen_map_find(const gen_piece_map *m, const char *s, size_t n) {
  size_t i = (size_t)gen_fnv1a(s, n) & (m->cap - 1);
  for (;;) {
    const int32_t id = m->slot[i];
    if (id < 0) return -1;
    if (m->v->len[id] == n && memcmp(m->v->text[id], s, n) == 0) return id;
    i = (i + 1) & (m->cap - 1);
  }
}

/* Inserts every id; returns the first id whose piece duplicates an earlier one, or -1. */
static int32_t gen_map_build(gen_piece_map *m, const gen_vocab *v) {
  m->v = v;
  for (uint32_t id = 0; id < v->n; id++) {
    size_t i = (size_t)gen_fnv1a(v->text[id], v->len[id]) & (m->cap - 1);
    while (m->slot[i] >= 0) {
      const int32_t o = m->slot[i];
      if (v->len[o] == v->len[id] && memcmp(v->text[o], v->text[id], v->len[id]) == 0) return (int32_t)id;
      i = (i + 1) & (m->cap - 1);
    }
    m->slot[i] = (int32_t)id;
  }
  return -1;
}

static bool gen_is_byte_piece(const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  return n == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>' && s[3] && strchr(hex, s[3]) && s[4] &&
         strchr(hex, s[4]);
}

static fg_status gen_read_file(const char *path, char **out, size_t *size, fg_error *err) {
  *out = NULL;
  *size = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return fg_err(err, FG_ERR_IO, "gen: cannot open %s: %s", path, strerror(errno));
  size_t cap = 1 << 20, n = 0;
  char *buf = fg_malloc(cap);
  if (!buf) {
    fclose(f);
    return fg_err(err, FG_ERR_NOMEM, "gen: out of memory reading %s", path);
  }
  for (;;) {
    if (n == cap) {
      char *nb = cap <= SIZE_MAX / 2 ? fg_realloc(buf, cap * 2) : NULL;
      if (!nb) {
        fg_free(buf);
        fclose(f);
        return fg_err(err, FG_ERR_NOMEM, "gen: out of memory reading %s", path);
      }
      buf = nb;
      cap *= 2;
    }
    const size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  const int bad = ferror(f);
  fclose(f);
  if (bad) {
    fg_free(buf);
    return fg_err(err, FG_ERR_IO, "gen: cannot read %s", path);
  }
  *out = buf;
  *size = n;
  return FG_OK;
}

/* Reads the first and second half of a merge: ["a", "b"] or the older "a b". buf receives a+b. */
static bool gen_merge_concat(const cJSON *m, char **buf, size_t *cap, size_t *n) {
  const char *a, *b;
  size_t la, lb;
  if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) &&
      cJSON_IsString(m->child->next)) {
    a = m->child->valuestring;
    b = m->child->next->valuestring;
    la = strlen(a);
    lb = strlen(b);
  } else if (cJSON_IsString(m)) {
    a = m->valuestring;
    const char *sp = strchr(a, ' ');
    if (!sp) return false;
    la = (size_t)(sp - a);
    b = sp + 1;
    lb = strlen(b);
  } else {
    return false;
  }
  if (la + lb + 1 > *cap) {
    size_t nc = (la + lb + 1) * 2;
    char *nb = fg_realloc(*buf, nc);
    if (!nb) return false;
    *buf = nb;
    *cap = nc;
  }
  memcpy(*buf, a, la);
  memcpy(*buf + la, b, lb);
  *n = la + lb;
  return true;
}

static fg_status gen_vocab_from_json(gen_vocab *v, const char *path, fg_error *err) {
  char *text = NULL;
  size_t size = 0;
  fg_status st = gen_read_file(path, &text, &size, err);
  if (st != FG_OK) return st;
  const char *end = NULL;
  v->json = cJSON_ParseWithLengthOpts(text, size, &end, 0);
  const size_t bad_at = (!v->json && end) ? (size_t)(end - text) : 0;
  fg_free(text);
  if (!v->json) return fg_err(err, FG_ERR_FORMAT, "gen: %s: invalid JSON near byte %zu", path, bad_at);

  const cJSON *model = cJSON_GetObjectItemCaseSensitive(v->json, "model");
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(v->json, "added_tokens");
  if (!cJSON_IsObject(vocab))
    return fg_err(err, FG_ERR_FORMAT, "gen: %s: no object model.vocab (not a BPE tokenizer.json)", path);
  if (!cJSON_IsArray(merges)) return fg_err(err, FG_ERR_FORMAT, "gen: %s: no array model.merges", path);
  if (added && !cJSON_IsArray(added)) return fg_err(err, FG_ERR_FORMAT, "gen: %s: added_tokens is not an array", path);
  const int n_json = cJSON_GetArraySize(vocab);
  if (n_json <= GEN_FN_FIRST_ID + 7)
    return fg_err(err, FG_ERR_FORMAT, "gen: %s: model.vocab has %d pieces, too few for Gemma 3", path, n_json);
  const uint32_t n = (uint32_t)n_json;
  if (gen_vocab_alloc(v, n) != FG_OK) return fg_err(err, FG_ERR_NOMEM, "gen: out of memory (vocabulary)");

  /* id -> piece; ids must be a permutation of 0..n-1 */
  for (const cJSON *e = vocab->child; e; e = e->next) {
    const double d = cJSON_IsNumber(e) ? e->valuedouble : -1.0;
    if (!(d >= 0.0 && d < (double)n && d == (double)(uint32_t)d))
      return fg_err(err, FG_ERR_FORMAT, "gen: %s: model.vocab[\"%.64s\"] has a bad id", path, e->string);
    const uint32_t id = (uint32_t)d;
    if (v->text[id])
      return fg_err(err, FG_ERR_FORMAT, "gen: %s: model.vocab id %u appears twice", path, id);
    v->text[id] = e->string;
    v->len[id] = strlen(e->string);
    v->type[id] = GEN_TOK_NORMAL;
  }

  gen_piece_map map = {0};
  map.cap = 1;
  while (map.cap < (size_t)n * 2) map.cap <<= 1;
  map.slot = fg_malloc_array(map.cap, sizeof *map.slot);
  uint8_t *has_score = fg_calloc(n, 1); /* [n] a merge produced this piece */
  char *cat = NULL;
  size_t cat_cap = 0, cat_n = 0;
  if (!map.slot || !has_score) {
    st = fg_err(err, FG_ERR_NOMEM, "gen: out of memory (vocabulary)");
    goto done;
  }
  memset(map.slot, 0xFF, map.cap * sizeof *map.slot);
  const int32_t dup = gen_map_build(&map, v);
  if (dup >= 0) {
    st = fg_err(err, FG_ERR_FORMAT, "gen: %s: piece \"%.64s\" appears twice in model.vocab", path, v->text[dup]);
    goto done;
  }

  /* SentencePiece-style scores: the piece made by merge rank r first gets -r (higher merges first) */
  uint32_t rank = 0;
  for (const cJSON *m = merges->child; m; m = m->next, rank++) {
    if (!gen_merge_concat(m, &cat, &cat_cap, &cat_n)) {
      st = fg_err(err, FG_ERR_FORMAT, "gen: %s: model.merges[%u] is not a pair of strings", path, rank);
      goto done;
    }
    const int32_t id = gen_map_find(&map, cat, cat_n);
    if (id >= 0 && !has_score[id]) {
      has_score[id] = 1;
      v->score[id] = -(float)rank;
    }
  }

  /* added tokens: special -> control, else user-defined (ids beyond the vocabulary are ignored, as
   * Gemma 3's <image_soft_token> is by llama.cpp's converter) */
  if (added) {
    for (const cJSON *a = added->child; a; a = a->next) {
      const cJSON *jid = cJSON_GetObjectItemCaseSensitive(a, "id");
      const cJSON *content = cJSON_GetObjectItemCaseSensitive(a, "content");
      const cJSON *special = cJSON_GetObjectItemCaseSensitive(a, "special");
      if (!cJSON_IsNumber(jid) || !cJSON_IsString(content) || jid->valuedouble < 0.0) {
        st = fg_err(err, FG_ERR_FORMAT, "gen: %s: added_tokens entry without id/content", path);
        goto done;
      }
      if (jid->valuedouble >= (double)n) continue;
      const uint32_t id = (uint32_t)jid->valuedouble;
      if (strcmp(content->valuestring, v->text[id]) != 0) {
        st = fg_err(err, FG_ERR_FORMAT, "gen: %s: added token %u \"%.64s\" differs from model.vocab", path, id,
                    content->valuestring);
        goto done;
      }
      /* As llama.cpp's converter writes Gemma 3: special tokens, and the ones that only look
       * special (<pad>, <mask>, <2mass>, [@BOS@], <|...|>, <｜...｜>, <unusedN>), are control tokens;
       * the other added tokens are user-defined, spelled with real spaces instead of "▁" (they are
       * matched and decoded as raw text); all added tokens get score -1000. */
      const bool ctl = cJSON_IsTrue(special) || gen_looks_special(v->text[id]);
      v->type[id] = ctl ? GEN_TOK_CONTROL : GEN_TOK_USER;
      if (!ctl) v->len[id] = gen_unescape_spaces((char *)v->text[id]) /* cJSON's writable key buffer */;
      v->score[id] = -1000.0f;
    }
  }
  for (uint32_t id = 0; id < n; id++) {
    if (strcmp(v->text[id], "<unk>") == 0) v->type[id] = GEN_TOK_UNKNOWN;
    else if (gen_is_byte_piece(v->text[id], v->len[id])) v->type[id] = GEN_TOK_BYTE;
    if (v->type[id] == GEN_TOK_UNKNOWN || v->type[id] == GEN_TOK_BYTE) v->score[id] = 0.0f;
  }

  /* FunctionGemma's control tokens replace <unused40>..<unused46> */
  for (uint32_t i = 0; i < 7; i++) {
    const uint32_t id = GEN_FN_FIRST_ID + i;
    const int32_t other = gen_map_find(&map, gen_fn_tokens[i], strlen(gen_fn_tokens[i]));
    if (other >= 0 && (uint32_t)other != id) {
      st = fg_err(err, FG_ERR_FORMAT, "gen: %s: %s already exists as id %d", path, gen_fn_tokens[i], other);
      goto done;
    }
    v->text[id] = gen_fn_tokens[i];
    v->len[id] = strlen(gen_fn_tokens[i]);
    v->type[id] = GEN_TOK_CONTROL;
    v->score[id] = 0.0f;
  }

done:
  fg_free(map.slot);
  fg_free(has_score);
  fg_free(cat);
  return st;
}

/* ------------------------------------------------------------------------------------------------
 * Tensor plan
 */
typedef enum gen_init {
  GEN_INIT_NORMAL,   /* N(0, scale^2) */
  GEN_INIT_ROWS,     /* N(0, scale^2), each row then rescaled to RMS exactly scale */
  GEN_INIT_NORM,     /* uniform scale * (1 ± GEN_NORM_SPREAD) */
  GEN_INIT_OUT_NORM, /* uniform scale * (1 ± GEN_OUT_NORM_SPREAD) */
} gen_init;

typedef struct gen_tensor {
  char name[48];
  uint32_t type;
  uint32_t n_dims;
  uint64_t ne[2];     /* ne[0] = row length (input dim), ne[1] = rows */
  gen_init init;
  double scale;
  uint64_t row_bytes;
  uint64_t nbytes;
} gen_tensor;

typedef struct gen_plan {
  gen_tensor *t; /* [n] in file order */
  size_t n, cap;
} gen_plan;

static fg_status gen_plan_add(gen_plan *p, const char *name, uint32_t type, uint32_t n_dims, uint64_t ne0,
                              uint64_t ne1, gen_init init, double scale, fg_error *err) {
  FG_ASSERT(p->n < p->cap && strlen(name) < sizeof p->t[0].name);
  gen_tensor *t = &p->t[p->n++];
  memset(t, 0, sizeof *t);
  memcpy(t->name, name, strlen(name) + 1);
  t->type = type;
  t->n_dims = n_dims;
  t->ne[0] = ne0;
  t->ne[1] = ne1;
  t->init = init;
  t->scale = scale;
  if (!fg_type_row_bytes(type, ne0, &t->row_bytes) || !fg_mul_u64(t->row_bytes, ne1, &t->nbytes))
    return fg_err(err, FG_ERR_INVALID_ARG, "gen: %s: %llu columns do not fit type %s", name,
                  (unsigned long long)ne0, fg_type_name(type));
  return FG_OK;
}

static fg_status gen_plan_build(gen_plan *p, const gen_preset *pr, uint32_t n_vocab, uint32_t type,
                                uint32_t head_type, fg_error *err) {
  const uint64_t E = pr->n_embd, Q = (uint64_t)pr->n_head * pr->head_dim, KV = (uint64_t)pr->n_head_kv * pr->head_dim;
  const uint64_t F = pr->n_ff, HD = pr->head_dim;
  const double emb_std = GEN_EMBD_STD_FACTOR / sqrt((double)E);
  const double out_norm = GEN_LOGIT_STD / GEN_EMBD_STD_FACTOR;
  p->cap = 3 + (size_t)13 * pr->n_layer;
  p->n = 0;
  p->t = fg_calloc(p->cap, sizeof *p->t);
  if (!p->t) return fg_err(err, FG_ERR_NOMEM, "gen: out of memory");

  fg_status st = gen_plan_add(p, "token_embd.weight", type, 2, E, n_vocab, GEN_INIT_ROWS, emb_std, err);
  for (uint32_t l = 0; l < pr->n_layer && st == FG_OK; l++) {
    static const struct {
      const char *suffix;
      char in, out; /* E embd, Q q width, K kv width, F ff, H head dim, 0 = vector */
    } layer[13] = {
        {"attn_norm", 'E', 0},           {"attn_q", 'E', 'Q'},   {"attn_k", 'E', 'K'},
        {"attn_v", 'E', 'K'},            {"attn_q_norm", 'H', 0}, {"attn_k_norm", 'H', 0},
        {"attn_output", 'Q', 'E'},       {"post_attention_norm", 'E', 0},
        {"ffn_norm", 'E', 0},            {"ffn_gate", 'E', 'F'}, {"ffn_up", 'E', 'F'},
        {"ffn_down", 'F', 'E'},          {"post_ffw_norm", 'E', 0},
    };
    for (size_t i = 0; i < 13 && st == FG_OK; i++) {
      uint64_t dim[2];
      const char which[2] = {layer[i].in, layer[i].out};
      for (int k = 0; k < 2; k++) {
        switch (which[k]) {
          case 'E': dim[k] = E; break;
          case 'Q': dim[k] = Q; break;
          case 'K': dim[k] = KV; break;
          case 'F': dim[k] = F; break;
          case 'H': dim[k] = HD; break;
          default: dim[k] = 1; break;
        }
      }
      char name[48];
      snprintf(name, sizeof name, "blk.%u.%s.weight", l, layer[i].suffix);
      if (layer[i].out == 0)
        st = gen_plan_add(p, name, FG_TYPE_F32, 1, dim[0], 1, GEN_INIT_NORM,
                          strcmp(layer[i].suffix, "post_attention_norm") == 0 ? GEN_POST_ATTN_NORM : 1.0, err);
      else
        st = gen_plan_add(p, name, type, 2, dim[0], dim[1], GEN_INIT_NORMAL, 1.0 / sqrt((double)dim[0]), err);
    }
  }
  if (st == FG_OK)
    st = gen_plan_add(p, "output_norm.weight", FG_TYPE_F32, 1, E, 1, GEN_INIT_OUT_NORM, out_norm, err);
  if (st == FG_OK && head_type != FG_GEN_HEAD_TIED)
    st = gen_plan_add(p, "output.weight", head_type, 2, E, n_vocab, GEN_INIT_ROWS, emb_std, err);
  return st;
}

/* ------------------------------------------------------------------------------------------------
 * Writing
 */
typedef struct gen_ctx {
  const fg_gen_params *params;
  uint64_t seed;
  uint64_t done, total; /* tensor bytes */
  FILE *f;
  fg_gguf_writer *w;
  fg_error *err;
} gen_ctx;

static fg_status gen_progress(gen_ctx *c, uint64_t done) {
  if (c->params->progress && !c->params->progress(done, c->total, c->params->progress_user_data))
    return fg_err(c->err, FG_ERR_ABORTED, "gen: cancelled by the progress callback");
  return FG_OK;
}

/* Fills row [n] with the tensor's next n values. */
static void gen_fill_row(gen_rng *r, const gen_tensor *t, float *FG_RESTRICT row, size_t n) {
  switch (t->init) {
    case GEN_INIT_NORMAL:
      for (size_t i = 0; i < n; i++) row[i] = (float)(gen_normal(r) * t->scale);
      break;
    case GEN_INIT_ROWS: {
      double ss = 0.0;
      for (size_t i = 0; i < n; i++) {
        const double x = gen_normal(r);
        row[i] = (float)x;
        ss += x * x;
      }
      const double k = ss > 0.0 ? t->scale / sqrt(ss / (double)n) : 0.0;
      for (size_t i = 0; i < n; i++) row[i] = (float)((double)row[i] * k);
    } break;
    case GEN_INIT_NORM:
    case GEN_INIT_OUT_NORM: {
      const double spread = t->init == GEN_INIT_NORM ? GEN_NORM_SPREAD : GEN_OUT_NORM_SPREAD;
      for (size_t i = 0; i < n; i++) row[i] = (float)(t->scale * (1.0 + spread * (2.0 * gen_uniform(r) - 1.0)));
    } break;
  }
}

/* Generates one tensor into buf (nbytes), reporting progress about every 4 MiB, and writes it. */
static fg_status gen_emit(gen_ctx *c, const gen_tensor *t, uint8_t *buf, float *row) {
  gen_rng rng;
  gen_rng_seed(&rng, c->seed, t->name);
  const size_t n = (size_t)t->ne[0], rb = (size_t)t->row_bytes;
  uint64_t since = 0;
  for (uint64_t r = 0; r < t->ne[1]; r++) {
    gen_fill_row(&rng, t, row, n);
    fg_quantize_row(t->type, row, buf + r * rb, n);
    since += rb;
    if (since >= (4u << 20)) {
      since = 0;
      fg_status st = gen_progress(c, c->done + (r + 1) * rb);
      if (st != FG_OK) return st;
    }
  }
  fg_status st = fg_gguf_writer_tensor_data(c->w, c->f, buf, (size_t)t->nbytes, c->err);
  if (st != FG_OK) return st;
  c->done += t->nbytes;
  return gen_progress(c, c->done);
}

/* Collects the first failing writer call (the setters return a status without a message). */
#define GEN_KV(call, key)                                                                  \
  do {                                                                                     \
    if (st == FG_OK) {                                                                     \
      st = (call);                                                                         \
      if (st != FG_OK) st = fg_err(err, st, "gen: cannot set %s", key);                    \
    }                                                                                      \
  } while (0)

static fg_status gen_write_metadata(fg_gguf_writer *w, const gen_preset *pr, const gen_vocab *v, uint32_t type,
                                    const char *name, fg_error *err) {
  fg_status st = FG_OK;
  GEN_KV(fg_gguf_writer_set_str(w, "general.architecture", "gemma3"), "general.architecture");
  GEN_KV(fg_gguf_writer_set_str(w, "general.name", name), "general.name");
  GEN_KV(fg_gguf_writer_set_u32(w, "general.file_type", gen_file_type(type)), "general.file_type");
  GEN_KV(fg_gguf_writer_set_u32(w, "general.alignment", FG_GGUF_DEFAULT_ALIGNMENT), "general.alignment");

  static const struct { const char *key; size_t off; } u32_keys[] = {
      {"gemma3.context_length", offsetof(gen_preset, n_ctx)},
      {"gemma3.embedding_length", offsetof(gen_preset, n_embd)},
      {"gemma3.block_count", offsetof(gen_preset, n_layer)},
      {"gemma3.feed_forward_length", offsetof(gen_preset, n_ff)},
      {"gemma3.attention.head_count", offsetof(gen_preset, n_head)},
      {"gemma3.attention.head_count_kv", offsetof(gen_preset, n_head_kv)},
      {"gemma3.attention.key_length", offsetof(gen_preset, head_dim)},
      {"gemma3.attention.value_length", offsetof(gen_preset, head_dim)},
      {"gemma3.attention.sliding_window", offsetof(gen_preset, sliding_window)},
      {"gemma3.attention.sliding_window_pattern", offsetof(gen_preset, swa_pattern)},
  };
  for (size_t i = 0; i < sizeof u32_keys / sizeof u32_keys[0]; i++) {
    uint32_t val;
    memcpy(&val, (const char *)pr + u32_keys[i].off, sizeof val);
    GEN_KV(fg_gguf_writer_set_u32(w, u32_keys[i].key, val), u32_keys[i].key);
  }
  GEN_KV(fg_gguf_writer_set_f32(w, "gemma3.attention.layer_norm_rms_epsilon", pr->rms_eps),
         "gemma3.attention.layer_norm_rms_epsilon");
  GEN_KV(fg_gguf_writer_set_f32(w, "gemma3.rope.freq_base", pr->rope_base), "gemma3.rope.freq_base");
  GEN_KV(fg_gguf_writer_set_f32(w, "gemma3.rope.freq_base_swa", pr->rope_base_swa), "gemma3.rope.freq_base_swa");

  GEN_KV(fg_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama"), "tokenizer.ggml.model");
  GEN_KV(fg_gguf_writer_set_str(w, "tokenizer.ggml.pre", "default"), "tokenizer.ggml.pre");
  GEN_KV(fg_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", v->text, v->len, v->n), "tokenizer.ggml.tokens");
  GEN_KV(fg_gguf_writer_set_arr(w, "tokenizer.ggml.scores", FG_GGUF_FLOAT32, v->score, v->n), "tokenizer.ggml.scores");
  GEN_KV(fg_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", FG_GGUF_INT32, v->type, v->n),
         "tokenizer.ggml.token_type");
  GEN_KV(fg_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 2), "tokenizer.ggml.bos_token_id");
  GEN_KV(fg_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 1), "tokenizer.ggml.eos_token_id");
  GEN_KV(fg_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 3), "tokenizer.ggml.unknown_token_id");
  GEN_KV(fg_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", 0), "tokenizer.ggml.padding_token_id");
  GEN_KV(fg_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true), "tokenizer.ggml.add_bos_token");
  GEN_KV(fg_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", false), "tokenizer.ggml.add_eos_token");
  GEN_KV(fg_gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", false), "tokenizer.ggml.add_space_prefix");
  return st;
}

/* ------------------------------------------------------------------------------------------------
 * Public entry points
 */
void fg_gen_params_init(fg_gen_params *p) {
  if (!p) return;
  memset(p, 0, sizeof *p);
  p->preset = "tiny";
  p->type = FG_TYPE_F32;
  p->head_type = FG_GEN_HEAD_TIED;
  p->seed = 0;
}

fg_status fg_gen_model(const fg_gen_params *params, const char *path, fg_error *err) {
  fg_err_clear(err);
  fg_gen_params defaults;
  if (!params) {
    fg_gen_params_init(&defaults);
    params = &defaults;
  }
  if (!path || !*path) return fg_err(err, FG_ERR_INVALID_ARG, "gen: no output path");
  const char *preset_name = params->preset ? params->preset : "tiny";
  const gen_preset *pr = gen_find_preset(preset_name);
  if (!pr) return fg_err(err, FG_ERR_INVALID_ARG, "gen: unknown preset \"%s\" (tiny, 270m)", preset_name);
  if (!gen_type_ok(params->type))
    return fg_err(err, FG_ERR_UNSUPPORTED, "gen: weight type %u is not one of f32 f16 bf16 q8_0 q4_0", params->type);
  if (params->head_type != FG_GEN_HEAD_TIED && !gen_type_ok(params->head_type))
    return fg_err(err, FG_ERR_UNSUPPORTED, "gen: head type %u is not one of f32 f16 bf16 q8_0 q4_0",
                  params->head_type);

  gen_ctx c = {0};
  c.params = params;
  c.seed = params->seed ? params->seed : GEN_DEFAULT_SEED;
  c.err = err;
  gen_vocab v = {0};
  gen_plan plan = {0};
  uint8_t *buf = NULL; /* [max tensor nbytes] one quantized tensor */
  float *row = NULL;   /* [max ne0] one row in f32 */
  char *tmp = NULL;
  bool tmp_created = false;
  fg_status st;

  st = params->vocab_json ? gen_vocab_from_json(&v, params->vocab_json, err) : gen_vocab_synthetic(&v, pr->n_vocab, err);
  if (st != FG_OK) goto done;
  st = gen_plan_build(&plan, pr, v.n, params->type, params->head_type, err);
  if (st != FG_OK) goto done;

  uint64_t max_bytes = 0, max_row = 0;
  for (size_t i = 0; i < plan.n; i++) {
    max_bytes = FG_MAX(max_bytes, plan.t[i].nbytes);
    max_row = FG_MAX(max_row, plan.t[i].ne[0]);
    if (!fg_add_u64(c.total, plan.t[i].nbytes, &c.total)) {
      st = fg_err(err, FG_ERR_INVALID_ARG, "gen: model too large");
      goto done;
    }
  }
  size_t max_bytes_sz;
  if (!fg_u64_to_size(max_bytes, &max_bytes_sz)) {
    st = fg_err(err, FG_ERR_UNSUPPORTED, "gen: a tensor of %llu bytes does not fit in memory",
                (unsigned long long)max_bytes);
    goto done;
  }
  buf = fg_malloc(max_bytes_sz);
  row = fg_malloc_array((size_t)max_row, sizeof *row);
  c.w = fg_gguf_writer_create();
  if (!buf || !row || !c.w) {
    st = fg_err(err, FG_ERR_NOMEM, "gen: out of memory (%llu bytes for one tensor)", (unsigned long long)max_bytes);
    goto done;
  }

  char name[128];
  snprintf(name, sizeof name, "fgemma synthetic %s %s seed %llu", pr->name, fg_type_name(params->type),
           (unsigned long long)c.seed);
  st = gen_write_metadata(c.w, pr, &v, params->type, name, err);
  if (st != FG_OK) goto done;
  gen_vocab_free(&v); /* the writer holds copies; frees the json before the big allocations grow */
  for (size_t i = 0; i < plan.n && st == FG_OK; i++) {
    const gen_tensor *t = &plan.t[i];
    const uint64_t ne[2] = {t->ne[0], t->ne[1]};
    st = fg_gguf_writer_add_tensor(c.w, t->name, t->type, t->n_dims, ne);
    if (st != FG_OK) st = fg_err(err, st, "gen: cannot add tensor %s", t->name);
  }
  if (st != FG_OK) goto done;

  const size_t tmp_len = strlen(path) + 32;
  tmp = fg_malloc(tmp_len);
  if (!tmp) {
    st = fg_err(err, FG_ERR_NOMEM, "gen: out of memory");
    goto done;
  }
  snprintf(tmp, tmp_len, "%s.tmp.%ld", path, (long)getpid());
  c.f = fopen(tmp, "wb");
  if (!c.f) {
    st = fg_err(err, FG_ERR_IO, "gen: cannot create %s: %s", tmp, strerror(errno));
    goto done;
  }
  tmp_created = true;
  setvbuf(c.f, NULL, _IOFBF, 1 << 20);

  st = gen_progress(&c, 0);
  if (st == FG_OK) st = fg_gguf_writer_begin(c.w, c.f, err);
  for (size_t i = 0; i < plan.n && st == FG_OK; i++) st = gen_emit(&c, &plan.t[i], buf, row);
  if (st == FG_OK) st = fg_gguf_writer_end(c.w, c.f, err);
  if (st == FG_OK && (fflush(c.f) != 0 || ferror(c.f)))
    st = fg_err(err, FG_ERR_IO, "gen: cannot write %s: %s", tmp, strerror(errno));
  {
    const int rc = fclose(c.f);
    c.f = NULL;
    if (st == FG_OK && rc != 0) st = fg_err(err, FG_ERR_IO, "gen: cannot write %s: %s", tmp, strerror(errno));
  }
  if (st == FG_OK && rename(tmp, path) != 0)
    st = fg_err(err, FG_ERR_IO, "gen: cannot rename %s to %s: %s", tmp, path, strerror(errno));
  if (st == FG_OK) tmp_created = false;

done:
  if (c.f) fclose(c.f);
  if (tmp_created) remove(tmp);
  fg_free(tmp);
  fg_gguf_writer_free(c.w);
  fg_free(buf);
  fg_free(row);
  fg_free(plan.t);
  gen_vocab_free(&v);
  return st;
}
