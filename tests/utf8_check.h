/* utf8_check.h — an independent UTF-8 checker for the tests and fuzz targets: the well-formed byte
 * sequences of Unicode's Table 3-7, matched row by row (the library's decoder, src/core/utf8.c, is
 * written differently, from the lead byte's ranges). */
#ifndef FG_TEST_UTF8_CHECK_H
#define FG_TEST_UTF8_CHECK_H

#include <stdbool.h>
#include <stddef.h>

typedef struct utf8_row {
  unsigned char lo[4], hi[4];
  size_t n;
} utf8_row;

static const utf8_row k_utf8_rows[] = {
    {{0x00}, {0x7F}, 1},
    {{0xC2, 0x80}, {0xDF, 0xBF}, 2},
    {{0xE0, 0xA0, 0x80}, {0xE0, 0xBF, 0xBF}, 3},
    {{0xE1, 0x80, 0x80}, {0xEC, 0xBF, 0xBF}, 3},
    {{0xED, 0x80, 0x80}, {0xED, 0x9F, 0xBF}, 3},
    {{0xEE, 0x80, 0x80}, {0xEF, 0xBF, 0xBF}, 3},
    {{0xF0, 0x90, 0x80, 0x80}, {0xF0, 0xBF, 0xBF, 0xBF}, 4},
    {{0xF1, 0x80, 0x80, 0x80}, {0xF3, 0xBF, 0xBF, 0xBF}, 4},
    {{0xF4, 0x80, 0x80, 0x80}, {0xF4, 0x8F, 0xBF, 0xBF}, 4},
};

/* How many leading bytes of s (n left) fit row r. */
static inline size_t utf8_row_prefix(const utf8_row *r, const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < r->n && i < n && s[i] >= r->lo[i] && s[i] <= r->hi[i]) i++;
  return i;
}

/* Length of the well-formed sequence at s, or 0 with *sub = the maximal subpart (the longest prefix
 * of any row, at least one byte), which a decoder replaces by one U+FFFD. */
static inline size_t utf8_check_seq(const unsigned char *s, size_t n, size_t *sub) {
  size_t best = 0;
  *sub = 1;
  for (size_t r = 0; r < sizeof k_utf8_rows / sizeof k_utf8_rows[0]; r++) {
    const size_t p = utf8_row_prefix(&k_utf8_rows[r], s, n);
    if (p == k_utf8_rows[r].n) return p;
    if (p > best) best = p;
  }
  *sub = best ? best : 1;
  return 0;
}

static inline bool utf8_check_valid(const char *text, size_t n) {
  const unsigned char *s = (const unsigned char *)text;
  size_t i = 0, sub = 1;
  while (i < n) {
    const size_t l = utf8_check_seq(s + i, n - i, &sub);
    if (!l) return false;
    i += l;
  }
  return true;
}

#endif /* FG_TEST_UTF8_CHECK_H */
