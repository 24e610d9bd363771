/* json_scan.c — the allocation-free JSON reader (see json_scan.h). */
#include "convert/json_scan.h"

#include <stdio.h>
#include <string.h>

void fg_js_init(fg_js *js, const char *data, size_t size) {
  memset(js, 0, sizeof *js);
  js->base = data;
  js->p = data;
  js->end = data + size;
}

bool fg_js_fail(fg_js *js, const char *fmt, ...) {
  if (js->failed) return false;
  js->failed = true;
  char what[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(js->err, sizeof js->err, "%s at byte %zu", what, (size_t)(js->p - js->base));
  return false;
}

static void ws(fg_js *js) {
  while (js->p < js->end && (*js->p == ' ' || *js->p == '\t' || *js->p == '\n' || *js->p == '\r')) js->p++;
}

fg_js_type fg_js_peek(fg_js *js) {
  if (js->failed) return FG_JS_NONE;
  ws(js);
  if (js->p >= js->end) {
    fg_js_fail(js, "unexpected end of JSON");
    return FG_JS_NONE;
  }
  switch (*js->p) {
    case '{': return FG_JS_OBJECT;
    case '[': return FG_JS_ARRAY;
    case '"': return FG_JS_STRING;
    case 't': return FG_JS_TRUE;
    case 'f': return FG_JS_FALSE;
    case 'n': return FG_JS_NULL;
    default:
      if (*js->p == '-' || (*js->p >= '0' && *js->p <= '9')) return FG_JS_NUMBER;
      fg_js_fail(js, "unexpected character 0x%02x", (unsigned)(unsigned char)*js->p);
      return FG_JS_NONE;
  }
}

// ----------------------------------------------------------------------------------------------------
// Containers

static bool open_container(fg_js *js, char c, const char *what) {
  if (js->failed) return false;
  ws(js);
  if (js->p >= js->end || *js->p != c) return fg_js_fail(js, "expected %s", what);
  if (js->depth >= FG_JS_MAX_DEPTH) return fg_js_fail(js, "nesting deeper than %d", FG_JS_MAX_DEPTH);
  js->p++;
  js->first |= (uint64_t)1 << js->depth;
  js->depth++;
  return true;
}

/* Before a member: ',' unless it is the first one; or the closing bracket. */
static bool next_member(fg_js *js, char close, bool *done) {
  *done = false;
  if (js->failed) return false;
  if (js->depth == 0) return fg_js_fail(js, "no open container");
  ws(js);
  if (js->p >= js->end) return fg_js_fail(js, "unexpected end of JSON (unclosed '%c')", close == '}' ? '{' : '[');
  const uint64_t bit = (uint64_t)1 << (js->depth - 1);
  const bool first = (js->first & bit) != 0;
  if (*js->p == close) {
    js->p++;
    js->depth--;
    *done = true;
    return true;
  }
  if (first) {
    js->first &= ~bit;
  } else {
    if (*js->p != ',') return fg_js_fail(js, "expected ',' or '%c'", close);
    js->p++;
  }
  return true;
}

bool fg_js_obj_begin(fg_js *js) { return open_container(js, '{', "'{'"); }
bool fg_js_arr_begin(fg_js *js) { return open_container(js, '[', "'['"); }

bool fg_js_obj_next(fg_js *js, fg_js_str *key, bool *done) {
  if (!next_member(js, '}', done) || *done) return !js->failed;
  if (!fg_js_string(js, key)) return false;
  ws(js);
  if (js->p >= js->end || *js->p != ':') return fg_js_fail(js, "expected ':' after a key");
  js->p++;
  return true;
}

bool fg_js_arr_next(fg_js *js, bool *done) { return next_member(js, ']', done); }

// ----------------------------------------------------------------------------------------------------
// Scalars

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool hex4(const char *p, const char *end, uint32_t *out) {
  if (end - p < 4) return false;
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    const int h = hexval(p[i]);
    if (h < 0) return false;
    v = (v << 4) | (uint32_t)h;
  }
  *out = v;
  return true;
}

bool fg_js_string(fg_js *js, fg_js_str *out) {
  if (js->failed) return false;
  ws(js);
  if (js->p >= js->end || *js->p != '"') return fg_js_fail(js, "expected a string");
  const char *s = ++js->p;
  bool escaped = false;
  while (js->p < js->end) {
    const unsigned char c = (unsigned char)*js->p;
    if (c == '"') {
      out->ptr = s;
      out->len = (size_t)(js->p - s);
      out->escaped = escaped;
      js->p++;
      return true;
    }
    if (c < 0x20) return fg_js_fail(js, "control character 0x%02x in a string", c);
    if (c == '\\') {
      escaped = true;
      if (js->end - js->p < 2) break;
      const char e = js->p[1];
      if (e == 'u') {
        uint32_t u;
        if (!hex4(js->p + 2, js->end, &u)) return fg_js_fail(js, "bad \\u escape");
        js->p += 6;
        continue;
      }
      if (!strchr("\"\\/bfnrt", e) || e == '\0') return fg_js_fail(js, "bad escape '\\%c'", e);
      js->p += 2;
      continue;
    }
    js->p++;
  }
  return fg_js_fail(js, "unterminated string");
}

bool fg_js_uint(fg_js *js, uint64_t *out) {
  if (js->failed) return false;
  ws(js);
  const char *p = js->p;
  if (p >= js->end || *p < '0' || *p > '9') return fg_js_fail(js, "expected a non-negative integer");
  if (*p == '0' && p + 1 < js->end && p[1] >= '0' && p[1] <= '9') return fg_js_fail(js, "leading zero in a number");
  uint64_t v = 0;
  while (p < js->end && *p >= '0' && *p <= '9') {
    const uint64_t d = (uint64_t)(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return fg_js_fail(js, "integer too large");
    v = v * 10 + d;
    p++;
  }
  if (p < js->end && (*p == '.' || *p == 'e' || *p == 'E')) return fg_js_fail(js, "expected an integer, not a fraction");
  js->p = p;
  *out = v;
  return true;
}

/* Any JSON number (grammar only). */
static bool skip_number(fg_js *js) {
  const char *p = js->p;
  if (p < js->end && *p == '-') p++;
  if (p >= js->end || *p < '0' || *p > '9') return fg_js_fail(js, "bad number");
  if (*p == '0') {
    p++;
  } else {
    while (p < js->end && *p >= '0' && *p <= '9') p++;
  }
  if (p < js->end && *p == '.') {
    p++;
    if (p >= js->end || *p < '0' || *p > '9') return fg_js_fail(js, "bad number");
    while (p < js->end && *p >= '0' && *p <= '9') p++;
  }
  if (p < js->end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < js->end && (*p == '+' || *p == '-')) p++;
    if (p >= js->end || *p < '0' || *p > '9') return fg_js_fail(js, "bad number");
    while (p < js->end && *p >= '0' && *p <= '9') p++;
  }
  js->p = p;
  return true;
}

static bool literal(fg_js *js, const char *word) {
  const size_t n = strlen(word);
  if ((size_t)(js->end - js->p) < n || memcmp(js->p, word, n) != 0) return fg_js_fail(js, "expected %s", word);
  js->p += n;
  return true;
}

bool fg_js_bool(fg_js *js, bool *out) {
  const fg_js_type t = fg_js_peek(js);
  if (t == FG_JS_TRUE) return (*out = true), literal(js, "true");
  if (t == FG_JS_FALSE) return (*out = false), literal(js, "false");
  return fg_js_fail(js, "expected true or false");
}

bool fg_js_null(fg_js *js) {
  if (fg_js_peek(js) != FG_JS_NULL) return fg_js_fail(js, "expected null");
  return literal(js, "null");
}

bool fg_js_skip(fg_js *js) {
  fg_js_str s;
  bool done;
  switch (fg_js_peek(js)) {
    case FG_JS_OBJECT:
      if (!fg_js_obj_begin(js)) return false;
      for (;;) {
        if (!fg_js_obj_next(js, &s, &done)) return false;
        if (done) return true;
        if (!fg_js_skip(js)) return false;
      }
    case FG_JS_ARRAY:
      if (!fg_js_arr_begin(js)) return false;
      for (;;) {
        if (!fg_js_arr_next(js, &done)) return false;
        if (done) return true;
        if (!fg_js_skip(js)) return false;
      }
    case FG_JS_STRING: return fg_js_string(js, &s);
    case FG_JS_NUMBER: return skip_number(js);
    case FG_JS_TRUE: return literal(js, "true");
    case FG_JS_FALSE: return literal(js, "false");
    case FG_JS_NULL: return literal(js, "null");
    default: return false;
  }
}

bool fg_js_finish(fg_js *js) {
  if (js->failed) return false;
  ws(js);
  if (js->depth != 0) return fg_js_fail(js, "unclosed container");
  if (js->p != js->end) return fg_js_fail(js, "trailing bytes after the JSON value");
  return true;
}

// ----------------------------------------------------------------------------------------------------
// Decoding

/* Walks a validated string, calling emit for each output byte run; returns the decoded length.
 * A lone or mismatched UTF-16 surrogate decodes to U+FFFD. */
static size_t decode(fg_js_str s, char *out) {
  size_t n = 0;
  const char *p = s.ptr, *end = s.ptr + s.len;
  while (p < end) {
    if (*p != '\\') {
      if (out) out[n] = *p;
      n++;
      p++;
      continue;
    }
    const char e = p[1];
    p += 2;
    char c = 0;
    switch (e) {
      case '"': c = '"'; break;
      case '\\': c = '\\'; break;
      case '/': c = '/'; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      default: break;
    }
    if (e != 'u') {
      if (out) out[n] = c;
      n++;
      continue;
    }
    uint32_t u = 0, lo = 0;
    hex4(p, end, &u); /* validated by fg_js_string */
    p += 4;
    if (u >= 0xD800 && u <= 0xDBFF) {
      if (end - p >= 6 && p[0] == '\\' && p[1] == 'u' && hex4(p + 2, end, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
        p += 6;
      } else {
        u = 0xFFFD;
      }
    } else if (u >= 0xDC00 && u <= 0xDFFF) {
      u = 0xFFFD;
    }
    uint8_t b[4];
    size_t k;
    if (u < 0x80) {
      b[0] = (uint8_t)u;
      k = 1;
    } else if (u < 0x800) {
      b[0] = (uint8_t)(0xC0 | (u >> 6));
      b[1] = (uint8_t)(0x80 | (u & 0x3F));
      k = 2;
    } else if (u < 0x10000) {
      b[0] = (uint8_t)(0xE0 | (u >> 12));
      b[1] = (uint8_t)(0x80 | ((u >> 6) & 0x3F));
      b[2] = (uint8_t)(0x80 | (u & 0x3F));
      k = 3;
    } else {
      b[0] = (uint8_t)(0xF0 | (u >> 18));
      b[1] = (uint8_t)(0x80 | ((u >> 12) & 0x3F));
      b[2] = (uint8_t)(0x80 | ((u >> 6) & 0x3F));
      b[3] = (uint8_t)(0x80 | (u & 0x3F));
      k = 4;
    }
    if (out) memcpy(out + n, b, k);
    n += k;
  }
  return n;
}

size_t fg_js_str_decoded_len(fg_js_str s) { return s.escaped ? decode(s, NULL) : s.len; }

void fg_js_str_decode(fg_js_str s, char *out) {
  if (!s.escaped) {
    if (s.len) memcpy(out, s.ptr, s.len);
    return;
  }
  decode(s, out);
}

bool fg_js_str_eq(fg_js_str s, const char *cstr) {
  const size_t n = strlen(cstr);
  if (!s.escaped) return s.len == n && memcmp(s.ptr, cstr, n) == 0;
  if (fg_js_str_decoded_len(s) != n) return false;
  char buf[256];
  if (n > sizeof buf) return false; /* keys compared this way are short */
  decode(s, buf);
  return memcmp(buf, cstr, n) == 0;
}
