/* alloc.c — every library allocation goes through here, so tests can make the k-th one fail. */
#include "fg_internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static _Atomic uint64_t g_alloc_count;  /* allocations since the last fg_alloc_fail_after */
static _Atomic uint64_t g_alloc_fail_at; /* 0 = never fail */

uint64_t fg_alloc_fail_after(uint64_t k) {
  uint64_t n = atomic_exchange(&g_alloc_count, 0);
  atomic_store(&g_alloc_fail_at, k);
  return n;
}

static int fg_alloc_should_fail(void) {
  uint64_t n = atomic_fetch_add(&g_alloc_count, 1) + 1;
  uint64_t k = atomic_load(&g_alloc_fail_at);
  return k != 0 && n >= k;
}

void *fg_malloc(size_t size) {
  if (fg_alloc_should_fail()) return NULL;
  return malloc(size ? size : 1);
}

void *fg_calloc(size_t n, size_t size) {
  if (size != 0 && n > SIZE_MAX / size) return NULL;
  if (fg_alloc_should_fail()) return NULL;
  return calloc(n ? n : 1, size ? size : 1);
}

void *fg_malloc_array(size_t n, size_t size) {
  if (size != 0 && n > SIZE_MAX / size) return NULL;
  return fg_malloc(n * size);
}

void *fg_realloc(void *p, size_t size) {
  if (fg_alloc_should_fail()) return NULL;
  return realloc(p, size ? size : 1);
}

void *fg_aligned_alloc(size_t alignment, size_t size) {
  if (fg_alloc_should_fail()) return NULL;
  void *p = NULL;
  if (posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *) : alignment, size ? size : 1) != 0) return NULL;
  return p;
}

void fg_aligned_free(void *p) { free(p); }

void fg_free(void *p) { free(p); }

char *fg_strndup(const char *s, size_t n) {
  char *d = fg_malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}
