/* test_threadpool.c — the pool's sleep/wake handshakes under jobs whose length straddles the spin
 * budget (FG_TP_SPIN_S = 100 us), so that the caller and the worker enter and leave their sleep paths
 * at the same moments, thousands of times. A lost wake-up shows as a hang: a watchdog fails the test.
 * Regression for a hang seen under qemu-aarch64 (threadpool.c, comment at the top): before the
 * explicit fences, 5 of 8 runs of this pattern under qemu-aarch64 hung within 40,000 jobs. Then open
 * jobs (fg_threadpool_run_open) mixed with classic ones on 2 and 3 threads: every item exactly once,
 * no worker inside a job after its caller returned. */
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

/* An open job (fg_threadpool_run_open): items claimed from a shared counter; a thread that runs fn after
 * its caller returned (a worker that joined too late) or an item done twice or not at all fails. The
 * jobs live in an array, so a late worker would still find valid memory and report itself. */
typedef struct open_job {
  _Atomic unsigned next, done, threads;
  _Atomic int returned; /* set by the caller once run_open has returned */
  unsigned n_items;
  unsigned slow_us;     /* per item of worker 1: the caller's share grows while it is late */
} open_job;
static _Atomic unsigned long g_late; /* fn entered after its caller returned */

static void open_fn(void *ud, uint32_t idx, uint32_t n) {
  (void)n;
  open_job *j = ud;
  if (atomic_load(&j->returned)) atomic_fetch_add(&g_late, 1);
  atomic_fetch_add(&j->threads, 1);
  for (;;) {
    const unsigned i = atomic_fetch_add(&j->next, 1);
    if (i >= j->n_items) break;
    if (idx == 1 && j->slow_us) spin_us(j->slow_us);
    atomic_fetch_add(&j->done, 1);
  }
}

static void test_open(uint32_t n_threads, int iters) {
  fg_threadpool *tp = NULL;
  CHECK(fg_threadpool_create(n_threads, &tp) == FG_OK);
  if (!tp) return;
  static open_job jobs[4096];
  unsigned seed = 7, bad = 0, some_alone = 0;
  for (int i = 0; i < iters; i++) {
    seed = seed * 1103515245u + 12345u;
    open_job *j = &jobs[i % 4096];
    atomic_store(&j->returned, 0);
    atomic_store(&j->next, 0);
    atomic_store(&j->done, 0);
    atomic_store(&j->threads, 0);
    j->n_items = 1 + (seed >> 8) % 64;
    j->slow_us = (seed >> 4) % 8 == 0 ? 20 : 0;
    if ((seed >> 12) % 5 == 0) { /* a classic job in between: every thread runs it */
      unsigned before = (unsigned)atomic_load(&g_done), sd = seed;
      fg_threadpool_run(tp, job, &sd);
      bad += (unsigned)atomic_load(&g_done) - before != n_threads;
    } else {
      fg_threadpool_run_open(tp, open_fn, j);
      atomic_store(&j->returned, 1);
      bad += atomic_load(&j->done) != j->n_items;
      some_alone += atomic_load(&j->threads) < n_threads;
    }
    if ((seed >> 8) % 4 == 0) usleep(200); /* let the workers fall asleep now and then */
  }
  fg_threadpool_free(tp);
  CHECK_MSG(bad == 0, "%u of %d jobs (%u threads) did not run every item once, or a classic job not on every thread",
            bad, iters, n_threads);
  CHECK_MSG(atomic_load(&g_late) == 0, "%lu times a worker ran an open job after its caller returned",
            (unsigned long)atomic_load(&g_late));
  printf("%d open and classic jobs on %u threads: every item once, no late worker inside (%u open jobs finished "
         "without every thread)\n", iters, n_threads, some_alone);
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
  test_open(2, iters / 2);
  test_open(3, iters / 4);
  return fg_test_finish("test_threadpool");
}
