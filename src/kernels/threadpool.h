/* threadpool.h — a persistent pool of worker threads for the compute ops. Workers are created once
 * and park between jobs (a short spin, then a condition variable); a job runs fn on every thread,
 * the calling thread included, and returns when all of them are done (or, for an open job, on the
 * threads that joined it in time). */
#ifndef FG_THREADPOOL_H
#define FG_THREADPOOL_H

#include "fg_internal.h"

typedef struct fg_threadpool fg_threadpool;

/* fn(ud, ith, nth) runs once for every ith < nth; ith 0 is the calling thread. */
typedef void (*fg_threadpool_fn)(void *ud, uint32_t ith, uint32_t nth);

/* n_threads >= 1 counts the caller: n_threads - 1 workers are started. 1 = everything runs inline. */
fg_status fg_threadpool_create(uint32_t n_threads, fg_threadpool **out);
void fg_threadpool_free(fg_threadpool *tp); /* NULL-safe; joins the workers */
uint32_t fg_threadpool_n_threads(const fg_threadpool *tp);

/* Runs one job on all threads and waits for it. One caller at a time; fn must not call back into
 * the same pool. */
void fg_threadpool_run(fg_threadpool *tp, fg_threadpool_fn fn, void *ud);

/* The same for a job whose threads share its work through a queue of their own (fn returns once every
 * item is claimed), so that any subset of the threads completes it: the caller runs fn, then closes the
 * job and waits only for the workers that joined it before that; a worker that was not running yet (a
 * busy machine, where the scheduler keeps it waiting) finds the job closed and never runs fn. The
 * caller never waits for a thread the scheduler has not run, so a loaded machine costs at most the
 * work the other threads would have done. */
void fg_threadpool_run_open(fg_threadpool *tp, fg_threadpool_fn fn, void *ud);

/* Step i (from 0) of a thread's wait inside a job for work another thread of it has claimed: a pause,
 * and every 64th step a yield of the core (on a busy machine the thread waited for may need it). */
void fg_threadpool_wait_step(uint32_t i);

#endif /* FG_THREADPOOL_H */
