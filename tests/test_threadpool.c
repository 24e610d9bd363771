/* test_threadpool.c — the pool's sleep/wake handshakes under jobs whose length straddles the spin
 * budget (FG_TP_SPIN_S = 100 us), so that the caller and the worker enter and leave their sleep paths
 * at the same moments, thousands of times. A lost wake-up shows as a hang: a watchdog fails the test.
 * Regression for a hang seen under qemu-aarch64 (threadpool.c, comment at the top): before the
 * explicit fences, 5 of 8 runs of this pattern under qemu-aarch64 hung within 40,000 jobs. */
#include "kernels/threadpool.h"
#include "testutil.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static _Atomic unsigned long g_done;

static void spin_us(double us) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3 < us);
}

/* worker 1 runs 85..124 us: around the caller's spin budget; the caller returns at once */
static void job(void *ud, uint32_t idx, uint32_t n) {
  (void)n;
  const unsigned *seed = ud;
  if (idx == 1) spin_us(85 + (*seed >> 4) % 40);
  atomic_fetch_add(&g_done, 1);
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_threadpool: FAILED: no progress for 240 s (a lost wake-up in the pool)\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
  _exit(1);
}

int main(void) {
  const int iters = 20000; /* about 4 s natively and under qemu-aarch64 */
  signal(SIGALRM, on_alarm);
  alarm(240);
  fg_threadpool *tp = NULL;
  CHECK(fg_threadpool_create(2, &tp) == FG_OK);
  if (!tp) return fg_test_finish("test_threadpool");
  unsigned seed = 1;
  for (int i = 0; i < iters; i++) {
    seed = seed * 1103515245u + 12345u;
    fg_threadpool_run(tp, job, &seed);
    if ((seed >> 8) % 4 == 0) usleep(200); /* let the worker fall asleep now and then */
  }
  fg_threadpool_free(tp);
  alarm(0);
  CHECK_MSG(atomic_load(&g_done) == 2ul * (unsigned long)iters, "%lu job parts ran, expected %lu",
            (unsigned long)atomic_load(&g_done), 2ul * (unsigned long)iters);
  printf("%d jobs of 2 parts with sleeps and wake-ups on both sides, no hang\n", iters);
  return fg_test_finish("test_threadpool");
}
