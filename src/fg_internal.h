/* fg_internal.h — helpers shared by every module: assertions, errors, allocation. Not installed. */
#ifndef FG_INTERNAL_H
#define FG_INTERNAL_H

#include "fgemma.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define FG_RESTRICT restrict

#if defined(__GNUC__)
#  define FG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#  define FG_UNUSED __attribute__((unused))
#else
#  define FG_PRINTF(a, b)
#  define FG_UNUSED
#endif

/* Internal invariants only; never for input validation. */
#define FG_ASSERT(x)                                                                  \
  do {                                                                                \
    if (!(x)) fg_assert_fail(#x, __FILE__, __LINE__);                                 \
  } while (0)
void fg_assert_fail(const char *expr, const char *file, int line);

#define FG_MIN(a, b) ((a) < (b) ? (a) : (b))
#define FG_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Sets err (if not NULL) to code and a printf-formatted message; returns code. */
fg_status fg_err(fg_error *err, fg_status code, const char *fmt, ...) FG_PRINTF(3, 4);
fg_status fg_verr(fg_error *err, fg_status code, const char *fmt, va_list ap);
void fg_err_clear(fg_error *err);
/* A path as a message shows it: whole when it fits in cap - 1 bytes, else "..." and its end (the
 * file's name is what the reader needs). Returns buf. */
const char *fg_path_shown(char *buf, size_t cap, const char *path);
/* The same into one of 4 buffers of 72 bytes per thread (valid until the fourth next call on the
 * thread): for a path among a message's arguments. */
const char *fg_path_short(const char *path);

/* Logging through the callback set with fg_set_log_callback. */
void fg_log(fg_log_level level, const char *fmt, ...) FG_PRINTF(2, 3);
bool fg_log_active(void); /* a callback is set: worth formatting costly debug lines */

/* Allocation. Every allocation in the library goes through these so that tests can make the k-th
 * allocation fail. fg_malloc_array/fg_calloc check n * size for overflow. */
void *fg_malloc(size_t size);
void *fg_calloc(size_t n, size_t size);
void *fg_malloc_array(size_t n, size_t size);
void *fg_realloc(void *p, size_t size);
void *fg_aligned_alloc(size_t alignment, size_t size); /* free with fg_aligned_free */
void fg_aligned_free(void *p);
void fg_free(void *p);
char *fg_strndup(const char *s, size_t n);

/* Test hook: the k-th allocation from now (1-based) and every later one fails; 0 disables.
 * Returns the number of allocations made since the last call. */
uint64_t fg_alloc_fail_after(uint64_t k);

/* Overflow-safe size arithmetic: return false on overflow. */
/* The final logit softcap, cap * tanh(logit / cap), and no change for cap 0: the one expression the
 * LM head (model/head.h) and the NLU engine's masked argmax apply. */
static inline float fg_softcap(float cap, float logit) { return cap > 0.0f ? cap * tanhf(logit / cap) : logit; }

/* 64-bit FNV-1a: folds n bytes into the hash h; a hash starts at FG_FNV1A_INIT. */
#define FG_FNV1A_INIT 0xcbf29ce484222325ull
static inline uint64_t fg_fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static inline int fg_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (a != 0 && b > UINT64_MAX / a) return 0;
  *out = a * b;
  return 1;
}
static inline int fg_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (b > UINT64_MAX - a) return 0;
  *out = a + b;
  return 1;
}
static inline int fg_u64_to_size(uint64_t v, size_t *out) {
  if (v > (uint64_t)SIZE_MAX) return 0;
  *out = (size_t)v;
  return 1;
}

/* UTF-8 (src/core/utf8.c): the one place where text fgemma hands out is made valid UTF-8.
 * fg_utf8_seq: length of the well-formed sequence at s (n > 0 bytes left), or 0 with *bad = the length
 * of the ill-formed maximal subpart to replace by one U+FFFD. fg_utf8_valid: whole text well-formed
 * (else *bad_at, may be NULL, = offset of the first ill-formed byte). fg_utf8_repair: writes the text
 * with every maximal subpart replaced (never splitting a character, NUL-terminated when cap > 0) and
 * returns the bytes written (out NULL: the bytes needed). fg_utf8_repair_in_place: the same for a
 * short NUL-terminated buffer (len <= 512) of capacity cap; returns the new length. */
size_t fg_utf8_seq(const unsigned char *s, size_t n, size_t *bad);
bool fg_utf8_valid(const char *text, size_t len, size_t *bad_at);
size_t fg_utf8_repair(const char *text, size_t len, char *out, size_t cap);
size_t fg_utf8_repair_in_place(char *buf, size_t len, size_t cap);

/* Monotonic clock in seconds. */
double fg_time_s(void);
/* Number of CPUs available to this process (>= 1). */
uint32_t fg_cpu_count(void);
/* Advises the kernel to back the 2 MiB-aligned part of [p, p + n) with huge pages (fewer page faults when
 * a large fresh buffer is first written); no effect where that advice does not exist. */
void fg_advise_huge(void *p, size_t n);

#endif /* FG_INTERNAL_H */
