/*
 * workers.c - the bounded thread pool: see workers.h.
 *
 * One lock guards the pool's lists.  A waiting thread looks first for a
 * fan-out that wants a helper (requests wait on them), then for a queued
 * background job when fewer than max_background run.  A fan-out lives on
 * its caller's stack: it is listed while it may take helpers, and its
 * caller returns only once it is unlisted and no helper is inside it.
 */
#include "common/workers.h"
#include "common/trace.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

struct fanout {
	struct fanout *next;
	workers_task_fn *fn;
	void *arg;
	size_t n_tasks;
	atomic_size_t next_task;
	int helpers_wanted;         /* guarded by the pool lock, like the two below */
	int helpers_joined;
	int helpers_inside;
	struct trace_context trace; /* the caller's */
};

struct job {
	struct job *next;
	void (*fn)(void *arg);
	void *arg;
	struct workers_group *group;
};

struct workers {
	pthread_mutex_t lock;
	pthread_cond_t wake;     /* work was listed, or stop */
	pthread_cond_t left;     /* a helper left a fan-out */
	struct fanout *fanouts;  /* wanting helpers */
	struct job *head, *tail; /* queued background jobs */
	int running_background, max_background;
	bool stop;
	pthread_t *threads;
	int n_threads;
};

/* Take the next task of f until none is left. */
static void run_tasks(struct fanout *f)
{
	for (;;) {
		size_t i = atomic_fetch_add(&f->next_task, 1);
		if (i >= f->n_tasks)
			return;
		f->fn(f->arg, i);
	}
}

/* Unlist f; call with the pool lock held. */
static void unlist(struct workers *w, struct fanout *f)
{
	for (struct fanout **p = &w->fanouts; *p; p = &(*p)->next)
		if (*p == f) {
			*p = f->next;
			return;
		}
}

/* Help f (joined under the pool lock, which is held on entry and on return). */
static void help(struct workers *w, struct fanout *f)
{
	if (++f->helpers_joined == f->helpers_wanted)
		unlist(w, f);
	f->helpers_inside++;
	pthread_mutex_unlock(&w->lock);
	trace_set(f->trace.traceparent);
	run_tasks(f);
	trace_set(NULL);
	pthread_mutex_lock(&w->lock);
	f->helpers_inside--;
	pthread_cond_broadcast(&w->left);
}

static void job_done(struct workers_group *g)
{
	pthread_mutex_lock(&g->lock);
	g->pending--;
	pthread_cond_broadcast(&g->done);
	pthread_mutex_unlock(&g->lock);
}

/* Run the queued job at the head (the pool lock held on entry and on return). */
static void run_background(struct workers *w)
{
	struct job *job = w->head;
	w->head = job->next;
	if (!w->head)
		w->tail = NULL;
	w->running_background++;
	pthread_mutex_unlock(&w->lock);
	job->fn(job->arg);
	job_done(job->group);
	free(job);
	pthread_mutex_lock(&w->lock);
	w->running_background--;
	if (w->stop) /* threads that waited for a background slot may now be the ones to stop */
		pthread_cond_broadcast(&w->wake);
}

static void *worker_main(void *arg)
{
	struct workers *w = arg;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		if (w->fanouts)
			help(w, w->fanouts);
		else if (w->head && w->running_background < w->max_background)
			run_background(w);
		else if (w->stop && !w->head)
			break;
		else
			pthread_cond_wait(&w->wake, &w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int workers_new(int n_threads, int max_background, struct workers **ret, struct t2s_error *err)
{
	if (n_threads < WORKERS_THREADS_MIN || n_threads > WORKERS_THREADS_MAX || max_background > n_threads)
		return t2s_error_set(err, T2S_ERR_INVALID, "workers: %d threads, %d for background jobs: out of range",
				     n_threads, max_background);
	struct workers *w = calloc(1, sizeof(*w));
	if (!w || !(w->threads = calloc((size_t)n_threads, sizeof(*w->threads)))) {
		free(w);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	w->max_background = max_background > 0 ? max_background : n_threads > 1 ? n_threads / 2 : 1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_cond_init(&w->left, NULL);
	while (w->n_threads < n_threads && pthread_create(&w->threads[w->n_threads], NULL, worker_main, w) == 0)
		w->n_threads++;
	if (w->n_threads < n_threads) {
		workers_free(w);
		return t2s_error_set(err, T2S_ERR_NOMEM, "workers: could not start %d threads", n_threads);
	}
	*ret = w;
	return 0;
}

struct workers *workers_free(struct workers *w)
{
	if (!w)
		return NULL;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->lock);
	for (int i = 0; i < w->n_threads; i++)
		pthread_join(w->threads[i], NULL);
	pthread_cond_destroy(&w->left);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w->threads);
	free(w);
	return NULL;
}

void workers_for(struct workers *w, size_t n_tasks, workers_task_fn *fn, void *arg, int max_parallel)
{
	struct fanout f = {.fn = fn, .arg = arg, .n_tasks = n_tasks};
	atomic_init(&f.next_task, 0);
	size_t parallel = max_parallel > 1 ? (size_t)max_parallel : 1;
	f.helpers_wanted = (int)((parallel < n_tasks ? parallel : n_tasks) - (n_tasks > 0));
	if (!w || f.helpers_wanted <= 0) {
		run_tasks(&f);
		return;
	}
	trace_get(&f.trace);
	pthread_mutex_lock(&w->lock);
	f.next = w->fanouts;
	w->fanouts = &f;
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->lock);
	run_tasks(&f);
	pthread_mutex_lock(&w->lock);
	if (f.helpers_joined < f.helpers_wanted)
		unlist(w, &f);
	while (f.helpers_inside > 0)
		pthread_cond_wait(&w->left, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

void workers_group_init(struct workers_group *g)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->done, NULL);
	g->pending = 0;
}

void workers_group_wait(struct workers_group *g)
{
	pthread_mutex_lock(&g->lock);
	while (g->pending > 0)
		pthread_cond_wait(&g->done, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

void workers_group_release(struct workers_group *g)
{
	pthread_cond_destroy(&g->done);
	pthread_mutex_destroy(&g->lock);
}

void workers_submit(struct workers *w, struct workers_group *g, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&g->lock);
	g->pending++;
	pthread_mutex_unlock(&g->lock);
	struct job *job = w ? malloc(sizeof(*job)) : NULL;
	if (!job) { /* no pool, or no memory: run it here */
		fn(arg);
		job_done(g);
		return;
	}
	*job = (struct job){.fn = fn, .arg = arg, .group = g};
	pthread_mutex_lock(&w->lock);
	if (w->tail)
		w->tail->next = job;
	else
		w->head = job;
	w->tail = job;
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->lock);
}
