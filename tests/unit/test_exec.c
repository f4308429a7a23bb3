/*
 * test_exec.c - exec_run from several threads at once, as the HTTP workers
 * call it: its metric families are registered once (pthread_once; the
 * first calls of the process race to register them) and every call is
 * counted, ok or refused.  Run under ThreadSanitizer this also shows any
 * unsynchronised registration.  A small SQLite file written here is the
 * database.  Also: a statement whose cancelled callback says true stops
 * with -T2S_ERR_CANCELLED (the progress handler asks it while the statement
 * runs).  Prints TAP.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "common/metrics.h"
#include "pipeline/db/catalog.h"
#include "pipeline/sql/exec.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/tap.h"

#define THREADS 8
#define CALLS_PER_THREAD 24 /* even: half of them refused */

static struct config_database cfg = {.name = "fixture"};
static struct catalog_db db;
static pthread_barrier_t start;
static const struct exec_limits limits = {
	.timeout_ms = 5000, .lock_timeout_ms = 1000, .max_rows = 100, .max_result_bytes = 1 << 20, .max_sql_bytes = 4096};

static int make_fixture(const char *path)
{
	sqlite3 *s;
	if (sqlite3_open(path, &s) != SQLITE_OK)
		return -1;
	int rc = sqlite3_exec(s, "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3);", NULL, NULL, NULL);
	sqlite3_close(s);
	return rc == SQLITE_OK ? 0 : -1;
}

/* Each worker waits for the others, so the first exec_run calls of the process overlap. */
static void *worker(void *arg)
{
	long *ok = arg;
	pthread_barrier_wait(&start);
	for (int i = 0; i < CALLS_PER_THREAD; i++) {
		struct exec_result res;
		struct t2s_error err;
		const char *sql = i % 2 == 0 ? "SELECT x FROM t" : "DELETE FROM t";
		if (exec_run(&db, sql, &limits, &res, &err) == 0) {
			exec_result_release(&res);
			(*ok)++;
		}
	}
	return NULL;
}

/* Sum of the values of the exposition's series lines that start with prefix; *ret_lines counts them. */
static double sum_series(const char *text, const char *prefix, int *ret_lines)
{
	double sum = 0;
	*ret_lines = 0;
	size_t plen = strlen(prefix);
	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, prefix, plen) != 0)
			continue;
		const char *sp = strchr(line, ' ');
		if (sp) {
			sum += strtod(sp + 1, NULL);
			(*ret_lines)++;
		}
	}
	return sum;
}

static int count_occurrences(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The cancel callback: true from its third question on (the statement is running by then). */
static bool third_time(void *ctx)
{
	return ++*(int *)ctx >= 3;
}

static void test_cancelled_statement_stops(void)
{
	int asked = 0;
	struct exec_limits lim = limits;
	lim.timeout_ms = 600000; /* only the callback can stop it */
	lim.cancelled = third_time;
	lim.cancel_ctx = &asked;
	struct exec_result res;
	struct t2s_error err = {0};
	int rc = exec_run(&db,
			  "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 4000000000)"
			  " SELECT count(*) FROM c",
			  &lim, &res, &err);
	if (rc == 0)
		exec_result_release(&res);
	TAP_INT_EQ(rc, -T2S_ERR_CANCELLED, "sqlite_statement_cancelled_by_its_callback");
	TAP_INT_EQ(asked, 3, "the_callback_was_asked_until_it_said_stop");
	rc = exec_run(&db, "SELECT x FROM t", &limits, &res, &err);
	TAP_INT_EQ(rc, 0, "the_connection_serves_after_a_cancel");
	if (rc == 0)
		exec_result_release(&res);
}

int main(void)
{
	char dir[] = "/tmp/t2s-exec-XXXXXX", path[512];
	if (!mkdtemp(dir)) {
		TAP_OK(0, "temp_dir_created");
		return tap_done();
	}
	snprintf(path, sizeof(path), "%s/fixture.sqlite", dir);
	cfg.url = path;
	cfg.sqlite_path = path;
	db.cfg = &cfg;
	db.engine = DB_ENGINE_SQLITE;
	pthread_mutex_init(&db.lock, NULL);
	pthread_mutex_init(&db.refresh_lock, NULL);
	if (make_fixture(path) < 0 || db_pool_init(&db.pool, DB_ENGINE_SQLITE, path, THREADS, 5000, 5) < 0) {
		TAP_OK(0, "fixture_opens");
		return tap_done();
	}

	pthread_t threads[THREADS];
	long ok[THREADS] = {0};
	pthread_barrier_init(&start, NULL, THREADS);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&threads[i], NULL, worker, &ok[i]);
	long total_ok = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(threads[i], NULL);
		total_ok += ok[i];
	}
	pthread_barrier_destroy(&start);
	const long calls = (long)THREADS * CALLS_PER_THREAD, refused = calls / 2;
	TAP_INT_EQ(total_ok, calls / 2, "concurrent_reads_succeed_and_writes_are_refused");

	char *text = metrics_render(NULL);
	TAP_OK(text != NULL, "metrics_render");
	if (text) {
		TAP_INT_EQ(count_occurrences(text, "# TYPE text2sqld_db_query_duration_seconds histogram"), 1,
			   "query_duration_family_registered_once");
		TAP_INT_EQ(count_occurrences(text, "# TYPE text2sqld_sql_rejections_total counter"), 1,
			   "rejections_family_registered_once");
		int lines;
		double n = sum_series(text, "text2sqld_db_query_duration_seconds_count{", &lines);
		TAP_OK(n == (double)calls, "every_concurrent_call_is_timed");
		n = sum_series(text, "text2sqld_sql_rejections_total{", &lines);
		TAP_OK(n == (double)refused && lines == 1, "every_concurrent_refusal_is_counted");
		free(text);
	}

	test_cancelled_statement_stops();
	db_pool_release(&db.pool);
	metrics_shutdown();
	unlink(path);
	rmdir(dir);
	return tap_done();
}
