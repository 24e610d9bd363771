/* json_scan.h — a small JSON reader over bytes in memory, for files too large to hold as a cJSON tree
 * (Gemma 3's tokenizer.json is 33 MB; as a tree it takes ~230 MB) and for headers that must be parsed
 * without allocating (safetensors). It allocates nothing: the caller walks the document with
 * fg_js_obj_next / fg_js_arr_next and reads or skips each value. Every function checks the grammar
 * of what it consumes (RFC 8259: strings with escapes, numbers, literals, nesting up to
 * FG_JS_MAX_DEPTH) and, on the first error, stores a message with the byte offset in js->err and
 * returns false; later calls keep returning false. */
#ifndef FG_JSON_SCAN_H
#define FG_JSON_SCAN_H

#include "fg_internal.h"

#include <stdbool.h>

#define FG_JS_MAX_DEPTH 64

typedef struct fg_js {
  const char *base; /* first byte of the document */
  const char *p;    /* next unread byte */
  const char *end;  /* one past the last byte */
  uint32_t depth;   /* open objects/arrays */
  uint64_t first;   /* bit d: the container at depth d has not had a member yet */
  bool failed;
  char err[160];    /* the first error, with its byte offset */
} fg_js;

/* A string as it appears in the document, without the quotes; escaped: it holds a backslash. */
typedef struct fg_js_str {
  const char *ptr;
  size_t len;
  bool escaped;
} fg_js_str;

typedef enum fg_js_type {
  FG_JS_NONE = 0, FG_JS_OBJECT, FG_JS_ARRAY, FG_JS_STRING, FG_JS_NUMBER, FG_JS_TRUE, FG_JS_FALSE, FG_JS_NULL
} fg_js_type;

void fg_js_init(fg_js *js, const char *data, size_t size);
/* Records an error at the current position (printf format); returns false. */
bool fg_js_fail(fg_js *js, const char *fmt, ...) FG_PRINTF(2, 3);
/* Type of the next value (after white space), without consuming it; FG_JS_NONE at the end or on an
 * error (which is then recorded). */
fg_js_type fg_js_peek(fg_js *js);

/* Objects: fg_js_obj_begin consumes '{'; each fg_js_obj_next either reads the next key and its ':'
 * (*done = false; the caller must then consume the value) or the closing '}' (*done = true). */
bool fg_js_obj_begin(fg_js *js);
bool fg_js_obj_next(fg_js *js, fg_js_str *key, bool *done);
/* Arrays: the same with '[' ... ']'; *done = false means a value follows. */
bool fg_js_arr_begin(fg_js *js);
bool fg_js_arr_next(fg_js *js, bool *done);

bool fg_js_string(fg_js *js, fg_js_str *out);
/* A non-negative integer without fraction or exponent, at most UINT64_MAX. */
bool fg_js_uint(fg_js *js, uint64_t *out);
bool fg_js_bool(fg_js *js, bool *out);
/* null; returns false (with an error) for anything else. */
bool fg_js_null(fg_js *js);
/* Consumes one value of any type (nesting checked). */
bool fg_js_skip(fg_js *js);
/* After the top-level value: only white space may follow. */
bool fg_js_finish(fg_js *js);

/* Decoded length of a string (escapes resolved, UTF-8 out); the string was validated when read. */
size_t fg_js_str_decoded_len(fg_js_str s);
/* Writes the decoded bytes (fg_js_str_decoded_len of them; no NUL added). */
void fg_js_str_decode(fg_js_str s, char *out);
/* The decoded string equals the NUL-terminated cstr. */
bool fg_js_str_eq(fg_js_str s, const char *cstr);

#endif /* FG_JSON_SCAN_H */
