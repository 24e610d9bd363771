/* sys.c — clock, CPU count, memory advice. */
#include "fg_internal.h"

#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

double fg_time_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint32_t fg_cpu_count(void) {
#ifdef CPU_COUNT
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return (uint32_t)n;
  }
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (uint32_t)n : 1u;
}

void fg_advise_huge(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
  const uintptr_t huge = (uintptr_t)2 << 20, a = ((uintptr_t)p + huge - 1) / huge * huge, b = ((uintptr_t)p + n) / huge * huge;
  if (b > a) (void)madvise((void *)a, b - a, MADV_HUGEPAGE); /* advice: a failure changes nothing */
#else
  (void)p;
  (void)n;
#endif
}
