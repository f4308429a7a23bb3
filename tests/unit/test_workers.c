/*
 * test_workers.c - the bounded thread pool (common/workers.h): every task
 * runs exactly once; the caller runs them all without a pool or with every
 * pool thread busy (no deadlock); helpers carry the caller's trace context
 * and clear it; never more tasks or jobs at once than the bounds allow.
 */
#include "common/trace.h"
#include "common/workers.h"
#include "tests/unit/tap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#define TRACEPARENT "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

/* How many tasks run at once, and the most seen. */
struct tracker {
	atomic_int running;
	atomic_int most;
	useconds_t task_us; /* how long each task takes */
};

static void tracker_enter(struct tracker *t)
{
	int now = atomic_fetch_add(&t->running, 1) + 1;
	int most = atomic_load(&t->most);
	while (now > most && !atomic_compare_exchange_weak(&t->most, &most, now))
		;
	usleep(t->task_us);
	atomic_fetch_sub(&t->running, 1);
}

static void tracked_task(void *arg, size_t i)
{
	(void)i;
	tracker_enter(arg);
}

static void tracked_job(void *arg)
{
	tracker_enter(arg);
}

/* ---- every task exactly once ---- */

#define MANY 1000

struct counts {
	atomic_int runs[MANY];
};

static void count_task(void *arg, size_t i)
{
	struct counts *c = arg;
	atomic_fetch_add(&c->runs[i], 1);
}

static bool each_ran_once(struct counts *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (atomic_load(&c->runs[i]) != 1)
			return false;
	return true;
}

static void test_each_task_runs_once(struct workers *pool)
{
	static struct counts c;
	memset(&c, 0, sizeof(c));
	workers_for(NULL, MANY, count_task, &c, 8);
	TAP_OK(each_ran_once(&c, MANY), "fan_out_without_a_pool_runs_every_task_exactly_once");
	memset(&c, 0, sizeof(c));
	workers_for(pool, MANY, count_task, &c, 8);
	TAP_OK(each_ran_once(&c, MANY), "fan_out_runs_every_task_exactly_once");
	memset(&c, 0, sizeof(c));
	workers_for(pool, 3, count_task, &c, 64);
	TAP_OK(each_ran_once(&c, 3), "fan_out_of_fewer_tasks_than_threads_runs_each_once");
	workers_for(pool, 0, count_task, &c, 4);
	TAP_OK(each_ran_once(&c, 3), "fan_out_of_no_task_runs_nothing");
}

/* ---- the caller runs everything ---- */

/* Which thread ran each task. */
struct threads_seen {
	pthread_t caller;
	atomic_int on_caller, elsewhere;
	useconds_t task_us;
};

static void where_task(void *arg, size_t i)
{
	struct threads_seen *w = arg;
	(void)i;
	usleep(w->task_us);
	atomic_fetch_add(pthread_equal(pthread_self(), w->caller) ? &w->on_caller : &w->elsewhere, 1);
}

static void where_job(void *arg)
{
	where_task(arg, 0);
}

static void test_null_pool_runs_on_the_caller(void)
{
	struct threads_seen w = {.caller = pthread_self()};
	workers_for(NULL, 20, where_task, &w, 8);
	TAP_OK(atomic_load(&w.on_caller) == 20 && atomic_load(&w.elsewhere) == 0, "null_pool_fan_out_runs_on_the_caller");
	struct workers_group g;
	workers_group_init(&g);
	workers_submit(NULL, &g, where_job, &w);
	TAP_OK(atomic_load(&w.on_caller) == 21, "null_pool_job_has_run_when_submit_returns");
	workers_group_wait(&g);
	workers_group_release(&g);
}

/* A background job that holds its thread until the gate opens. */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t opened;
	bool open;
	atomic_int inside;
};

static void gate_job(void *arg)
{
	struct gate *g = arg;
	atomic_fetch_add(&g->inside, 1);
	pthread_mutex_lock(&g->lock);
	while (!g->open)
		pthread_cond_wait(&g->opened, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

static void test_busy_pool_leaves_the_work_to_the_caller(void)
{
	struct workers *pool = NULL;
	struct t2s_error err;
	if (workers_new(2, 2, &pool, &err) < 0) {
		TAP_OK(0, "busy_pool_starts");
		return;
	}
	struct gate gate = {.lock = PTHREAD_MUTEX_INITIALIZER, .opened = PTHREAD_COND_INITIALIZER};
	struct workers_group g;
	workers_group_init(&g);
	workers_submit(pool, &g, gate_job, &gate);
	workers_submit(pool, &g, gate_job, &gate);
	for (int i = 0; i < 500 && atomic_load(&gate.inside) < 2; i++)
		usleep(2000);
	TAP_INT_EQ(atomic_load(&gate.inside), 2, "blocking_jobs_hold_every_pool_thread");
	struct threads_seen w = {.caller = pthread_self(), .task_us = 1000};
	workers_for(pool, 10, where_task, &w, 4); /* must not wait for a pool thread */
	TAP_OK(atomic_load(&w.on_caller) == 10, "fan_out_on_a_busy_pool_finishes_on_the_caller");
	pthread_mutex_lock(&gate.lock);
	gate.open = true;
	pthread_cond_broadcast(&gate.opened);
	pthread_mutex_unlock(&gate.lock);
	workers_group_wait(&g);
	TAP_OK(1, "group_wait_returns_once_the_jobs_end");
	workers_group_release(&g);
	workers_free(pool);
}

/* ---- the trace context ---- */

struct traces {
	pthread_t caller;
	atomic_int same, differ, helped;
};

static void trace_task(void *arg, size_t i)
{
	struct traces *t = arg;
	struct trace_context mine;
	(void)i;
	usleep(20000);
	trace_get(&mine);
	atomic_fetch_add(strcmp(mine.traceparent, TRACEPARENT) == 0 ? &t->same : &t->differ, 1);
	if (!pthread_equal(pthread_self(), t->caller))
		atomic_fetch_add(&t->helped, 1);
}

static void no_trace_job(void *arg)
{
	struct trace_context mine;
	trace_get(&mine);
	*(bool *)arg = mine.traceparent[0] == '\0';
}

static void test_trace_is_carried_and_cleared(void)
{
	struct workers *pool = NULL;
	struct t2s_error err;
	if (workers_new(1, 1, &pool, &err) < 0) {
		TAP_OK(0, "trace_pool_starts");
		return;
	}
	struct traces t = {.caller = pthread_self()};
	trace_set(TRACEPARENT);
	workers_for(pool, 8, trace_task, &t, 2);
	TAP_OK(atomic_load(&t.helped) > 0, "an_idle_pool_thread_helps_the_caller");
	TAP_OK(atomic_load(&t.same) == 8 && atomic_load(&t.differ) == 0, "every_task_sees_the_callers_trace");
	struct trace_context after;
	trace_get(&after);
	TAP_STR_EQ(after.traceparent, TRACEPARENT, "caller_keeps_its_trace");
	trace_set(NULL);
	bool cleared = false;
	struct workers_group g;
	workers_group_init(&g);
	workers_submit(pool, &g, no_trace_job, &cleared); /* on the thread that helped */
	workers_group_wait(&g);
	workers_group_release(&g);
	TAP_OK(cleared, "pool_thread_has_no_trace_after_helping");
	workers_free(pool);
}

/* ---- the bounds ---- */

static _Thread_local bool is_caller; /* set by the threads that call workers_for below */
static struct tracker on_pool;       /* tasks running on pool threads, whoever called */

static void pool_counted_task(void *arg, size_t i)
{
	(void)arg;
	(void)i;
	if (is_caller)
		usleep(on_pool.task_us);
	else
		tracker_enter(&on_pool);
}

static void *fan_out_caller(void *arg)
{
	is_caller = true;
	workers_for(arg, 40, pool_counted_task, NULL, 8);
	return NULL;
}

/* Four requests fan out at once on a pool of two: never more than two of their tasks on pool threads. */
static void test_pool_bound_across_callers(void)
{
	struct workers *pool = NULL;
	struct t2s_error err;
	pthread_t callers[4];
	if (workers_new(2, 0, &pool, &err) < 0) {
		TAP_OK(0, "shared_pool_starts");
		return;
	}
	on_pool.task_us = 2000;
	for (int i = 0; i < 4; i++)
		pthread_create(&callers[i], NULL, fan_out_caller, pool);
	for (int i = 0; i < 4; i++)
		pthread_join(callers[i], NULL);
	printf("# four callers: at most %d tasks at once on pool threads\n", atomic_load(&on_pool.most));
	TAP_OK(atomic_load(&on_pool.most) >= 1 && atomic_load(&on_pool.most) <= 2,
	       "concurrent_fan_outs_use_at_most_the_pools_threads");
	workers_free(pool);
}

static void test_bounds_hold(void)
{
	struct workers *pool = NULL;
	struct t2s_error err;
	if (workers_new(3, 1, &pool, &err) < 0) {
		TAP_OK(0, "bounded_pool_starts");
		return;
	}
	struct tracker fan = {.task_us = 2000};
	workers_for(pool, 60, tracked_task, &fan, 16);
	printf("# fan-out: at most %d tasks at once\n", atomic_load(&fan.most));
	TAP_OK(atomic_load(&fan.most) <= 4, "fan_out_runs_on_at_most_the_pool_and_the_caller");
	struct tracker two = {.task_us = 2000};
	workers_for(pool, 30, tracked_task, &two, 2);
	TAP_OK(atomic_load(&two.most) <= 2, "fan_out_runs_at_most_max_parallel_tasks_at_once");
	struct tracker jobs = {.task_us = 2000};
	struct workers_group g;
	workers_group_init(&g);
	for (int i = 0; i < 12; i++)
		workers_submit(pool, &g, tracked_job, &jobs);
	workers_group_wait(&g);
	TAP_OK(atomic_load(&jobs.most) == 1, "background_jobs_run_at_most_max_background_at_once");
	workers_group_release(&g);
	workers_free(pool);

	struct t2s_error e;
	TAP_OK(workers_new(0, 0, &pool, &e) == -T2S_ERR_INVALID, "zero_threads_is_refused");
	TAP_OK(workers_new(WORKERS_THREADS_MAX + 1, 0, &pool, &e) == -T2S_ERR_INVALID, "too_many_threads_are_refused");
	TAP_OK(workers_new(2, 3, &pool, &e) == -T2S_ERR_INVALID, "more_background_than_threads_is_refused");
	TAP_OK(workers_free(NULL) == NULL, "free_accepts_null");
}

static void counted_job(void *arg)
{
	usleep(2000);
	atomic_fetch_add((atomic_int *)arg, 1);
}

/* Jobs still queued when the pool is freed run before its threads stop. */
static void test_free_runs_the_queued_jobs(void)
{
	struct workers *pool = NULL;
	struct t2s_error err;
	atomic_int done = 0;
	struct workers_group g;
	if (workers_new(3, 1, &pool, &err) < 0) {
		TAP_OK(0, "draining_pool_starts");
		return;
	}
	workers_group_init(&g);
	for (int i = 0; i < 6; i++)
		workers_submit(pool, &g, counted_job, &done);
	workers_free(pool);
	TAP_INT_EQ(atomic_load(&done), 6, "free_runs_every_queued_job_first");
	workers_group_wait(&g);
	workers_group_release(&g);
}

int main(void)
{
	struct workers *pool = NULL;
	struct t2s_error err;
	TAP_INT_EQ(workers_new(4, 0, &pool, &err), 0, "pool_of_four_starts");
	test_each_task_runs_once(pool);
	workers_free(pool);
	test_null_pool_runs_on_the_caller();
	test_busy_pool_leaves_the_work_to_the_caller();
	test_trace_is_carried_and_cleared();
	test_bounds_hold();
	test_pool_bound_across_callers();
	test_free_runs_the_queued_jobs();
	return tap_done();
}
