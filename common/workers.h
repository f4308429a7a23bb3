/*
 * workers.h - one bounded, process-wide pool of threads for the work a
 * request or a refresh starts besides its own thread: a request's fan-out
 * (link's shuffles, describe's model calls) and background jobs (index
 * builds).  The pool's threads are created by workers_new (the setting
 * limits.worker_threads) and stopped by workers_free; nothing else in the
 * pipeline starts a thread, so the total is bounded whatever the number of
 * connections.
 *
 * Fan-out (workers_for) is fork-join: the calling thread runs tasks too and
 * idle pool threads help, at most max_parallel threads in all.  It never
 * waits for a pool thread to come free: with none idle, the caller runs
 * every task itself, so a fan-out cannot deadlock on a full pool.  Helpers
 * adopt the caller's trace context (trace.h) for the tasks they run and
 * clear it afterwards.
 *
 * Background jobs (workers_submit) run on pool threads only, at most
 * max_background at once (the others wait in a queue, first in first out),
 * so that some threads stay free to help fan-outs while long index builds
 * run.  A job belongs to a struct workers_group, which its submitter waits
 * on (workers_group_wait) before freeing what the job uses.  A job runs
 * without a trace context: it outlives the request that started it (as the
 * build threads it replaces did).
 *
 * A NULL pool is valid everywhere (library calls and unit tests that make
 * none): workers_for then runs every task on the caller's thread, and
 * workers_submit runs the job on the caller's thread before returning.
 *
 * Threads that stay outside the pool, and why: the HTTP listener and the
 * per-request stream threads (server/) are bounded by limits.max_connections
 * and block on their client for the request's whole life, which would starve
 * the pool; the PostgreSQL parser thread of sql_guard_pg needs a big stack
 * of its own and lives for the process.
 *
 * Thread-safe: every function may be called from any thread, but
 * workers_free only once no fan-out runs and after every group's wait (the
 * owner frees the users of the pool first).  This file does not log.
 */
#ifndef T2S_WORKERS_H
#define T2S_WORKERS_H

#include "common/contract.h"
#include "common/error.h"

#include <pthread.h>
#include <stddef.h>

/* Bounds of limits.worker_threads. */
#define WORKERS_THREADS_MIN 1
#define WORKERS_THREADS_MAX 256
#define WORKERS_THREADS_DEFAULT 8

struct workers;

/*
 * Start n_threads threads (WORKERS_THREADS_MIN..WORKERS_THREADS_MAX), of
 * which at most max_background (1..n_threads; <= 0: half of them, at least
 * one) run background jobs at once.  Returns 0 and *ret, or -T2S_ERR_INVALID
 * (a bound out of range) or -T2S_ERR_NOMEM (no memory or no thread could be
 * started); err filled on failure.
 */
T2S_MUST_CHECK
int workers_new(int n_threads, int max_background, struct workers **ret, struct t2s_error *err);

/* Finish the queued jobs, stop and join the threads, free w.  Accepts NULL; returns NULL. */
struct workers *workers_free(struct workers *w);

/* Task i (0 <= i < n_tasks) of a fan-out; arg is workers_for's. */
typedef void workers_task_fn(void *arg, size_t i);

/*
 * Run fn(arg, i) once for every i < n_tasks on at most max_parallel threads
 * (<= 1: the caller's alone), the caller's among them, and return when all
 * have finished.  The order in which tasks run is not defined: each task
 * writes its own result.
 */
void workers_for(struct workers *w, size_t n_tasks, workers_task_fn *fn, void *arg, int max_parallel);

/* Jobs whose end one owner waits for (e.g. a registry's index builds). */
struct workers_group {
	pthread_mutex_t lock;
	pthread_cond_t done;
	size_t pending; /* submitted jobs not yet finished */
};

void workers_group_init(struct workers_group *g);

/* Wait until every job submitted with g has finished. */
void workers_group_wait(struct workers_group *g);

/* Release g; call after workers_group_wait. */
void workers_group_release(struct workers_group *g);

/*
 * Run fn(arg) once in the background (see above), as a job of g.  fn always
 * runs: on a pool thread, or on the caller's thread when w is NULL or the
 * job cannot be queued (out of memory) - so never submit while holding a
 * lock that fn takes.
 */
void workers_submit(struct workers *w, struct workers_group *g, void (*fn)(void *arg), void *arg);

#endif
