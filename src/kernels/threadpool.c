/* threadpool.c — persistent workers parked on a generation counter: a new job bumps the counter;
 * workers spin on it for a few tens of microseconds (decode issues hundreds of small jobs per token)
 * and then sleep on a condition variable. The last worker to finish wakes the caller the same way.
 *
 * Going to sleep is a store-then-load handshake on both sides (sleeper: "I sleep" then "is there
 * work?"; waker: "there is work" then "does anyone sleep?"): each side puts a seq_cst fence between
 * its store and its load, so at least one of them sees the other. Seq_cst atomics alone were not
 * enough in practice: qemu-user translates aarch64's store-release/load-acquire pair for an x86
 * host without a store-load barrier, and test_constrain hung once in CI with the caller asleep on
 * cv_done and the worker asleep on cv_work (a lost wake-up); the fences are explicit barriers
 * (DMB ISH / MFENCE) that every implementation honours. */
#include "kernels/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

#define FG_TP_SPIN_S 100e-6 /* how long a parked thread spins before it sleeps: longer than the gap between
                              * two matmuls of a decode step, short enough not to burn an idle core */
#define FG_TP_PAUSE_S 8e-6   /* of which pure pause-spinning; then sched_yield, in case the thread we
                              * wait for is queued behind us on an oversubscribed core */

typedef struct fg_worker {
  fg_threadpool *tp;
  uint32_t index;
  pthread_t thread;
} fg_worker;

struct fg_threadpool {
  uint32_t n_threads;       /* including the caller */
  uint32_t n_started;       /* workers actually running */
  fg_worker *workers;       /* (n_threads - 1) */
  pthread_mutex_t mu;
  pthread_cond_t cv_work;   /* workers sleep here waiting for a new generation */
  pthread_cond_t cv_done;   /* the caller sleeps here waiting for pending == 0 */
  _Atomic uint32_t gen;     /* job generation; bumped by the caller */
  _Atomic uint32_t pending; /* workers that have not finished the current job (fg_threadpool_run) */
  _Atomic uint64_t job;     /* the current job: (generation << 32) | FG_TP_ALL or FG_TP_CLOSED | workers inside */
  _Atomic uint32_t sleepers;        /* workers inside (or about to enter) cv_work */
  _Atomic uint32_t caller_sleeping; /* the caller is inside (or about to enter) cv_done */
  _Atomic bool stop;
  fg_threadpool_fn fn;      /* current job; published by the gen release store */
  void *ud;
};

#define FG_TP_ALL 0x80000000u    /* job: fg_threadpool_run's, which every worker runs */
#define FG_TP_CLOSED 0x40000000u /* job: an open job whose caller finished; nobody may join it any more */
#define FG_TP_INSIDE 0x3fffffffu /* job: workers inside an open job */

// ----------------------------------------------------------------------------
// spinning

static inline void fg_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ volatile("pause" ::: "memory");
#elif defined(__aarch64__) || (defined(__arm__) && defined(__ARM_ARCH) && __ARM_ARCH >= 7)
  __asm__ volatile("yield" ::: "memory");
#else
  atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* One wait step i of a spin: pause for the first FG_TP_PAUSE_S, then sched_yield (if the machine is
 * oversubscribed, the thread we wait for may need this core). Returns false when the budget is over. */
static bool fg_spin_step(uint32_t i, double *t_start) {
  if ((i & 63u) != 63u) {
    fg_cpu_relax();
    return true;
  }
  const double now = fg_time_s();
  if (*t_start == 0.0) *t_start = now;
  const double spent = now - *t_start;
  if (spent > FG_TP_SPIN_S) return false;
  if (spent > FG_TP_PAUSE_S) sched_yield();
  return true;
}

/* Spins until *v != old or the spin budget is used up; returns true if it changed. */
static bool fg_spin_until_change(_Atomic uint32_t *v, uint32_t old) {
  double t_start = 0.0;
  for (uint32_t i = 0;; i++) {
    if (atomic_load_explicit(v, memory_order_acquire) != old) return true;
    if (!fg_spin_step(i, &t_start)) return false;
  }
}

// ----------------------------------------------------------------------------
// workers

static void *fg_worker_main(void *arg) {
  fg_worker *wk = arg;
  fg_threadpool *tp = wk->tp;
  uint32_t seen = 0;
  for (;;) {
    if (!fg_spin_until_change(&tp->gen, seen)) {
      pthread_mutex_lock(&tp->mu);
      atomic_fetch_add(&tp->sleepers, 1); /* pairs with the caller's gen update (fences: see below) */
      atomic_thread_fence(memory_order_seq_cst);
      while (atomic_load(&tp->gen) == seen && !atomic_load(&tp->stop)) pthread_cond_wait(&tp->cv_work, &tp->mu);
      atomic_fetch_sub(&tp->sleepers, 1);
      pthread_mutex_unlock(&tp->mu);
    }
    uint32_t g = atomic_load_explicit(&tp->gen, memory_order_acquire);
    if (atomic_load(&tp->stop)) break;
    if (g == seen) continue;
    seen = g;
    /* The job word names the job: a job of every thread is g's until this worker has run it (its caller waits
     * for it). An open job is joined only by a CAS on the word while it names g, open: neither a closed job
     * nor a newer one (whose fn and ud may be written meanwhile) is ever entered, and a worker that does not
     * get in waits for the next generation (gen != seen already when a newer job exists). */
    uint64_t s = atomic_load(&tp->job);
    if ((uint32_t)(s >> 32) != g) continue; /* g was an open job, closed and followed by another */
    if (!(s & FG_TP_ALL)) {
      bool joined = false;
      while ((uint32_t)(s >> 32) == g && !(s & FG_TP_CLOSED))
        if ((joined = atomic_compare_exchange_weak(&tp->job, &s, s + 1))) break;
      if (!joined) continue;
      tp->fn(tp->ud, wk->index, tp->n_threads);
      const uint64_t was = atomic_fetch_sub(&tp->job, 1); /* pairs with caller_sleeping */
      atomic_thread_fence(memory_order_seq_cst);
      if ((was & FG_TP_CLOSED) && (was & FG_TP_INSIDE) == 1 && atomic_load(&tp->caller_sleeping)) {
        pthread_mutex_lock(&tp->mu);
        pthread_cond_signal(&tp->cv_done);
        pthread_mutex_unlock(&tp->mu);
      }
      continue;
    }
    tp->fn(tp->ud, wk->index, tp->n_threads);
    const uint32_t was = atomic_fetch_sub(&tp->pending, 1); /* pairs with caller_sleeping */
    atomic_thread_fence(memory_order_seq_cst);
    if (was == 1) {
      if (atomic_load(&tp->caller_sleeping)) {
        pthread_mutex_lock(&tp->mu);
        pthread_cond_signal(&tp->cv_done);
        pthread_mutex_unlock(&tp->mu);
      }
    }
  }
  return NULL;
}

// ----------------------------------------------------------------------------
// create / free / run

static void fg_threadpool_stop(fg_threadpool *tp) {
  pthread_mutex_lock(&tp->mu);
  atomic_store(&tp->stop, true);
  atomic_fetch_add(&tp->gen, 1);
  pthread_cond_broadcast(&tp->cv_work);
  pthread_mutex_unlock(&tp->mu);
  for (uint32_t i = 0; i < tp->n_started; i++) pthread_join(tp->workers[i].thread, NULL);
  tp->n_started = 0;
}

fg_status fg_threadpool_create(uint32_t n_threads, fg_threadpool **out) {
  *out = NULL;
  if (n_threads == 0) n_threads = 1;
  fg_threadpool *tp = fg_calloc(1, sizeof *tp);
  if (!tp) return FG_ERR_NOMEM;
  tp->n_threads = n_threads;
  atomic_init(&tp->gen, 0);
  atomic_init(&tp->pending, 0);
  atomic_init(&tp->job, FG_TP_CLOSED);
  atomic_init(&tp->sleepers, 0);
  atomic_init(&tp->caller_sleeping, 0);
  atomic_init(&tp->stop, false);
  if (n_threads > 1) {
    tp->workers = fg_calloc(n_threads - 1, sizeof *tp->workers);
    if (!tp->workers) {
      fg_free(tp);
      return FG_ERR_NOMEM;
    }
  }
  if (pthread_mutex_init(&tp->mu, NULL) != 0) goto fail_mu;
  if (pthread_cond_init(&tp->cv_work, NULL) != 0) goto fail_cv1;
  if (pthread_cond_init(&tp->cv_done, NULL) != 0) goto fail_cv2;

  /* workers never handle signals: block them all while creating, restore afterwards */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  fg_status st = FG_OK;
  for (uint32_t i = 0; i + 1 < n_threads; i++) {
    tp->workers[i].tp = tp;
    tp->workers[i].index = i + 1;
    if (pthread_create(&tp->workers[i].thread, NULL, fg_worker_main, &tp->workers[i]) != 0) {
      st = FG_ERR_NOMEM;
      break;
    }
    tp->n_started++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (st != FG_OK) {
    fg_threadpool_free(tp);
    return st;
  }
  *out = tp;
  return FG_OK;

fail_cv2:
  pthread_cond_destroy(&tp->cv_work);
fail_cv1:
  pthread_mutex_destroy(&tp->mu);
fail_mu:
  fg_free(tp->workers);
  fg_free(tp);
  return FG_ERR_INTERNAL;
}

void fg_threadpool_free(fg_threadpool *tp) {
  if (!tp) return;
  fg_threadpool_stop(tp);
  pthread_cond_destroy(&tp->cv_done);
  pthread_cond_destroy(&tp->cv_work);
  pthread_mutex_destroy(&tp->mu);
  fg_free(tp->workers);
  fg_free(tp);
}

uint32_t fg_threadpool_n_threads(const fg_threadpool *tp) { return tp ? tp->n_threads : 1; }

/* Starts the job set up in tp (fn, ud, pending): names it in the job word with flags (FG_TP_ALL or 0, an
 * open job), bumps the generation (publishing all of it to the workers that see it) and wakes the
 * sleeping workers. The caller alone writes gen. */
static void fg_threadpool_publish(fg_threadpool *tp, uint32_t flags) {
  const uint32_t g = atomic_load_explicit(&tp->gen, memory_order_relaxed) + 1;
  atomic_store(&tp->job, (uint64_t)g << 32 | flags);
  atomic_fetch_add(&tp->gen, 1); /* pairs with sleepers */
  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load(&tp->sleepers) != 0) {
    pthread_mutex_lock(&tp->mu);
    pthread_cond_broadcast(&tp->cv_work);
    pthread_mutex_unlock(&tp->mu);
  }
}

/* Whether workers are still in the current job: every one of fg_threadpool_run's, or those inside an open one. */
static inline bool fg_threadpool_busy(fg_threadpool *tp, bool open) {
  if (open) return (atomic_load_explicit(&tp->job, memory_order_acquire) & FG_TP_INSIDE) != 0;
  return atomic_load_explicit(&tp->pending, memory_order_acquire) != 0;
}

/* The caller's wait for the workers: spin for a while, then sleep until the last one signals (the
 * caller_sleeping handshake pairs with the workers' updates of pending or job: fences on both sides). */
static void fg_threadpool_wait(fg_threadpool *tp, bool open) {
  double t_start = 0.0;
  for (uint32_t i = 0; fg_threadpool_busy(tp, open); i++) {
    if (!fg_spin_step(i, &t_start)) {
      pthread_mutex_lock(&tp->mu);
      atomic_store(&tp->caller_sleeping, 1);
      atomic_thread_fence(memory_order_seq_cst);
      while (fg_threadpool_busy(tp, open)) pthread_cond_wait(&tp->cv_done, &tp->mu);
      atomic_store(&tp->caller_sleeping, 0);
      pthread_mutex_unlock(&tp->mu);
      break;
    }
  }
}

void fg_threadpool_wait_step(uint32_t i) {
  if ((i & 63u) == 63u)
    sched_yield();
  else
    fg_cpu_relax();
}

void fg_threadpool_run(fg_threadpool *tp, fg_threadpool_fn fn, void *ud) {
  if (tp->n_threads <= 1) {
    fn(ud, 0, 1);
    return;
  }
  tp->fn = fn;
  tp->ud = ud;
  atomic_store_explicit(&tp->pending, tp->n_threads - 1, memory_order_relaxed);
  fg_threadpool_publish(tp, FG_TP_ALL);
  fn(ud, 0, tp->n_threads);
  fg_threadpool_wait(tp, false);
}

void fg_threadpool_run_open(fg_threadpool *tp, fg_threadpool_fn fn, void *ud) {
  if (tp->n_threads <= 1) {
    fn(ud, 0, 1);
    return;
  }
  tp->fn = fn;
  tp->ud = ud;
  fg_threadpool_publish(tp, 0);
  fn(ud, 0, tp->n_threads);
  /* every item is claimed: close the job, then wait for the workers inside (each finishing its last items) */
  if (atomic_fetch_or(&tp->job, FG_TP_CLOSED) & FG_TP_INSIDE) fg_threadpool_wait(tp, true);
}
