/* utf8.c — the one place where fgemma makes the text it hands out valid UTF-8 (RFC 3629).
 *
 * Every ill-formed sequence becomes one U+FFFD per maximal subpart (Unicode 15, section 3.9, "U+FFFD
 * substitution of maximal subparts"), which is also what Python's errors="replace" and Java's
 * decoders produce, so a binding that decodes raw bytes itself gets the same text. */
#include "fg_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char k_replacement[3] = {'\xEF', '\xBF', '\xBD'}; /* U+FFFD */

size_t fg_utf8_seq(const unsigned char *s, size_t n, size_t *bad) {
  *bad = 0;
  if (n == 0) return 0;
  const unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0; /* no overlong forms */
    if (c == 0xED) hi = 0x9F; /* no surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90; /* no overlong forms */
    if (c == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
  } else {
    *bad = 1; /* a continuation byte, C0, C1 or F5..FF cannot start a character */
    return 0;
  }
  size_t i = 1;
  for (; i < len && i < n; i++) {
    const unsigned char b = s[i];
    const bool ok = i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
  }
  if (i == len) return len;
  *bad = i; /* the longest prefix of a well-formed sequence: one replacement character */
  return 0;
}

bool fg_utf8_valid(const char *text, size_t len, size_t *bad_at) {
  const unsigned char *s = (const unsigned char *)text;
  size_t i = 0, bad;
  while (i < len) {
    while (i < len && s[i] < 0x80) i++; /* ASCII runs at once */
    if (i >= len) break;
    const size_t l = fg_utf8_seq(s + i, len - i, &bad);
    if (l == 0) {
      if (bad_at) *bad_at = i;
      return false;
    }
    i += l;
  }
  return true;
}

size_t fg_utf8_repair(const char *text, size_t len, char *out, size_t cap) {
  const unsigned char *s = (const unsigned char *)text;
  size_t i = 0, o = 0, bad;
  while (i < len) {
    const size_t l = fg_utf8_seq(s + i, len - i, &bad);
    const char *piece = l ? text + i : k_replacement;
    const size_t pl = l ? l : sizeof k_replacement;
    if (out) {
      if (o + pl + 1 > cap) break; /* never split a character; keep room for the NUL */
      memcpy(out + o, piece, pl);
    }
    o += pl;
    i += l ? l : bad;
  }
  if (out && cap) out[o < cap ? o : cap - 1] = '\0';
  return o;
}

size_t fg_utf8_repair_in_place(char *buf, size_t len, size_t cap) {
  if (fg_utf8_valid(buf, len, NULL)) return len;
  char tmp[512];
  FG_ASSERT(len <= sizeof tmp);
  memcpy(tmp, buf, len);
  return fg_utf8_repair(tmp, len, buf, cap);
}

/* Appends bytes to out when it fits; counts them in any case. */
static void put(char *out, size_t cap, size_t *o, const char *p, size_t n) {
  if (out && *o + n <= cap) memcpy(out + *o, p, n);
  *o += n;
}

fg_status fg_json_quote(const char *text, size_t len, char *buf, size_t cap, size_t *n_out) {
  if (n_out) *n_out = 0;
  if ((!text && len) || (!buf && cap) || !n_out) return FG_ERR_INVALID_ARG;
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)text;
  size_t o = 0, i = 0, bad;
  put(buf, cap, &o, "\"", 1);
  while (i < len) {
    size_t run = i; /* plain ASCII runs at once */
    while (run < len && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\') run++;
    put(buf, cap, &o, text + i, run - i);
    i = run;
    if (i >= len) break;
    const unsigned char c = s[i];
    if (c == '"' || c == '\\') {
      const char e[2] = {'\\', (char)c};
      put(buf, cap, &o, e, 2);
      i++;
    } else if (c < 0x20) {
      const char *short_esc = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == '\b' ? "\\b"
                              : c == '\f' ? "\\f" : NULL;
      const char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      if (short_esc) put(buf, cap, &o, short_esc, 2);
      else put(buf, cap, &o, e, 6);
      i++;
    } else {
      const size_t l = fg_utf8_seq(s + i, len - i, &bad);
      if (l) put(buf, cap, &o, text + i, l);
      else put(buf, cap, &o, k_replacement, sizeof k_replacement);
      i += l ? l : bad;
    }
  }
  put(buf, cap, &o, "\"", 1);
  *n_out = o;
  if (o + 1 > cap) return FG_ERR_BUFFER_TOO_SMALL;
  buf[o] = '\0';
  return FG_OK;
}
