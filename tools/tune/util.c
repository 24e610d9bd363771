/* util.c — tune's small helpers: a growable buffer, splitmix64 randomness, a seeded hash, and the
 * built-in number words of German and English. */
#include "tune.h"

#include <stdlib.h>
#include <string.h>

// ----------------------------------------------------------------------------------------------
// Buffer

bool tn_buf_add(tn_buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + n + 1) cap *= 2;
    char *ns = realloc(b->s, cap);
    if (!ns) return false;
    b->s = ns, b->cap = cap;
  }
  if (n) memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = '\0';
  return true;
}

bool tn_buf_str(tn_buf *b, const char *s) { return tn_buf_add(b, s, strlen(s)); }

void tn_buf_free(tn_buf *b) {
  free(b->s);
  b->s = NULL, b->n = b->cap = 0;
}

// ----------------------------------------------------------------------------------------------
// Randomness

uint64_t tn_rng_next(tn_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint32_t tn_rng_below(tn_rng *r, uint32_t n) { return (uint32_t)(((tn_rng_next(r) >> 32) * (uint64_t)n) >> 32); }

double tn_rng_unit(tn_rng *r) { return (double)(tn_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

/* FNV-1a over the seed and up to three strings (each followed by a 0 byte), then a splitmix finish. */
uint64_t tn_hash(uint64_t seed, const char *a, const char *b, const char *c) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 8; i++) h = (h ^ ((seed >> (8 * i)) & 0xff)) * 0x100000001b3ull;
  const char *parts[3] = {a, b, c};
  for (int k = 0; k < 3; k++) {
    for (const char *p = parts[k] ? parts[k] : ""; *p; p++) h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    h = (h ^ 0) * 0x100000001b3ull;
  }
  tn_rng r = {h};
  return tn_rng_next(&r);
}

// ----------------------------------------------------------------------------------------------
// Number words

static const char *const k_en_ones[20] = {"zero",    "one",     "two",       "three",    "four",
                                          "five",    "six",     "seven",     "eight",    "nine",
                                          "ten",     "eleven",  "twelve",    "thirteen", "fourteen",
                                          "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
static const char *const k_en_tens[10] = {"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"};

/* 1 .. 999 in English ("one hundred twenty-five") */
static bool en_below_1000(long long v, tn_buf *o) {
  bool ok = true;
  if (v >= 100) {
    ok = tn_buf_str(o, k_en_ones[v / 100]) && tn_buf_str(o, " hundred");
    v %= 100;
    if (v) ok = ok && tn_buf_str(o, " ");
  }
  if (v >= 20) {
    ok = ok && tn_buf_str(o, k_en_tens[v / 10]);
    if (v % 10) ok = ok && tn_buf_str(o, "-") && tn_buf_str(o, k_en_ones[v % 10]);
  } else if (v > 0) {
    ok = ok && tn_buf_str(o, k_en_ones[v]);
  }
  return ok;
}

static const char *const k_de_ones[20] = {"null",     "eins",     "zwei",     "drei",     "vier",
                                          "fünf",     "sechs",    "sieben",   "acht",     "neun",
                                          "zehn",     "elf",      "zwölf",    "dreizehn", "vierzehn",
                                          "fünfzehn", "sechzehn", "siebzehn", "achtzehn", "neunzehn"};
static const char *const k_de_tens[10] = {"", "", "zwanzig", "dreißig", "vierzig", "fünfzig", "sechzig", "siebzig", "achtzig", "neunzig"};

/* 1 .. 999 in German, one word ("hundertfünfundzwanzig"); final: "eins" rather than "ein" at the end */
static bool de_below_1000(long long v, tn_buf *o, bool final) {
  bool ok = true;
  if (v >= 100) {
    ok = (v / 100 == 1 ? tn_buf_str(o, "hundert") : tn_buf_str(o, k_de_ones[v / 100]) && tn_buf_str(o, "hundert"));
    v %= 100;
  }
  if (v >= 20) {
    if (v % 10) ok = ok && tn_buf_str(o, v % 10 == 1 ? "ein" : k_de_ones[v % 10]) && tn_buf_str(o, "und");
    ok = ok && tn_buf_str(o, k_de_tens[v / 10]);
  } else if (v > 0) {
    ok = ok && tn_buf_str(o, v == 1 && !final ? "ein" : k_de_ones[v]);
  }
  return ok;
}

bool tn_number_words(const char *lang, long long v, tn_buf *out) {
  const bool de = strcmp(lang, "de") == 0, en = strcmp(lang, "en") == 0;
  if ((!de && !en) || v <= -1000000 || v >= 1000000) return false;
  bool ok = true;
  if (v < 0) ok = tn_buf_str(out, de ? "minus " : "minus "), v = -v;
  if (v == 0) return ok && tn_buf_str(out, de ? k_de_ones[0] : k_en_ones[0]);
  const long long th = v / 1000, rest = v % 1000;
  if (en) {
    if (th) ok = ok && en_below_1000(th, out) && tn_buf_str(out, " thousand") && (!rest || tn_buf_str(out, " "));
    if (rest) ok = ok && en_below_1000(rest, out);
  } else {
    if (th) ok = ok && (th == 1 ? tn_buf_str(out, "tausend") : de_below_1000(th, out, false) && tn_buf_str(out, "tausend"));
    if (rest) ok = ok && de_below_1000(rest, out, true);
  }
  return ok;
}
