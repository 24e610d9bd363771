/* nlu_text.h — a size-counting output sink shared by the renderers and the call parser (private to
 * src/nlu/). Writes go into the caller's buffer while they fit; the length keeps counting past the
 * capacity so that the caller learns the size needed. */
#ifndef FG_NLU_TEXT_H
#define FG_NLU_TEXT_H

#include "fg_internal.h"

#include <stdint.h>
#include <string.h>

typedef struct fg_sink {
  char *buf;   /* (cap) caller's buffer; may be NULL when cap == 0 */
  size_t cap;
  size_t len;  /* bytes produced so far (may exceed cap); saturates at SIZE_MAX */
} fg_sink;

static inline void fg_sink_init(fg_sink *s, char *buf, size_t cap) {
  s->buf = buf;
  s->cap = buf ? cap : 0;
  s->len = 0;
}

static inline void fg_sink_put(fg_sink *s, const char *p, size_t n) {
  if (n == 0) return;
  if (s->len < s->cap && n <= s->cap - s->len) memcpy(s->buf + s->len, p, n);
  s->len = (n > SIZE_MAX - s->len) ? SIZE_MAX : s->len + n;
}

static inline void fg_sink_putc(fg_sink *s, char c) { fg_sink_put(s, &c, 1); }

static inline void fg_sink_puts(fg_sink *s, const char *z) { fg_sink_put(s, z, strlen(z)); }

/* NUL-terminates and reports: FG_OK, or FG_ERR_BUFFER_TOO_SMALL when the text plus its NUL did not
 * fit. *n_out = text length either way. */
static inline fg_status fg_sink_finish(fg_sink *s, size_t *n_out) {
  *n_out = s->len;
  if (s->len == SIZE_MAX || s->len + 1 > s->cap) return FG_ERR_BUFFER_TOO_SMALL;
  s->buf[s->len] = '\0';
  return FG_OK;
}

#endif /* FG_NLU_TEXT_H */
