/* strbuf.c — small helpers of `fgemma serve`: clock, string builder (sb), hashing, key comparison. */
#include "serve_internal.h"

// ----------------------------------------------------------------------------------------------
// small helpers: clock, string builder, hashing

double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sb_add(sb *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}
void sb_puts(sb *b, const char *s) { sb_add(b, s, strlen(s)); }
void sb_printf(sb *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    sb_add(b, tmp, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb_add(b, big, (size_t)n);
  free(big);
}
/* text as a JSON string literal through fg_json_quote (the CLI's rule: always valid UTF-8) */
void sb_json_str(sb *b, const char *s, size_t n) {
  size_t need = 0;
  fg_status st = fg_json_quote(s, n, NULL, 0, &need);
  if (st != FG_OK && st != FG_ERR_BUFFER_TOO_SMALL) {
    sb_puts(b, "\"\"");
    return;
  }
  char *q = malloc(need + 1);
  if (!q || fg_json_quote(s, n, q, need + 1, &need) != FG_OK) {
    free(q);
    b->oom = true;
    return;
  }
  sb_add(b, q, need);
  free(q);
}

uint64_t fnv1a(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* constant-time comparison of a presented key with the configured one (the length leaks, not the bytes) */
bool key_equal(const char *given, size_t gn, const char *want) {
  size_t wn = strlen(want);
  unsigned char diff = (unsigned char)(gn != wn);
  for (size_t i = 0; i < wn; i++) diff |= (unsigned char)(want[i] ^ (i < gn ? given[i] : 0));
  return diff == 0;
}
