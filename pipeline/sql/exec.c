/*
 * exec.c - safe execution (see exec.h): limits, the pooled connection and
 * metrics, around the engine's own check and run (sql_engine.h).
 */
#include "pipeline/sql/exec.h"

#include "pipeline/sql/sql_engine.h"

#include "common/clock.h"
#include "common/metrics.h"

#include <pthread.h>
#include <string.h>

/* Registered once per process (pthread_once): exec_run may be called from any number of threads. */
static struct metric_family *m_query_seconds;
static struct metric_family *m_rejections;
static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;

static void register_metrics(void)
{
	static const char *const labels[] = {"database", "engine", "result", NULL};
	static const char *const reason[] = {"database", "reason", NULL};
	m_query_seconds = metrics_family("text2sqld_db_query_duration_seconds",
					 "Time to run user statements, by database, engine and result.",
					 METRIC_HISTOGRAM, labels, metrics_latency_buckets,
					 metrics_latency_buckets_count);
	m_rejections = metrics_family("text2sqld_sql_rejections_total",
				      "Statements refused before or while running, by error kind.", METRIC_COUNTER,
				      reason, NULL, 0);
}

/*
 * The engine's execution half and, when it checks statements against the
 * schema model, a new reference to the published model in scope->schema
 * (the caller unrefs it), introspecting when none is published.
 */
static int exec_begin(struct catalog_db *db, const struct exec_limits *lim, const struct sql_engine **ret_engine,
		      struct exec_scope *scope, struct t2s_error *err)
{
	const struct sql_engine *e = sql_engine_of(db->engine);
	*ret_engine = e;
	*scope = (struct exec_scope){.db = db};
	if (!e->needs_model && !lim->grant)
		return 0;
	if (lim->grant && !e->enforces_views)
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "statements of a caller limited to some tables are not "
				     "supported on %s databases", db->engine->name);
	return catalog_db_schema_granted(db, lim->grant, &scope->schema, err); /* a caller's view: its tables */
}

int exec_run(struct catalog_db *db, const char *sql, const struct exec_limits *lim, struct exec_result *ret,
	     struct t2s_error *err)
{
	pthread_once(&metrics_once, register_metrics);
	size_t len = strlen(sql);
	if (len > lim->max_sql_bytes)
		return t2s_error_set(err, T2S_ERR_INVALID, "sql is %zu bytes, larger than the limit of %zu", len,
				     lim->max_sql_bytes);
	struct exec_result res = {.columns = json_array(), .column_types = json_array(), .rows = json_array()};
	if (!res.columns || !res.column_types || !res.rows) {
		exec_result_release(&res);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	const struct sql_engine *engine;
	struct exec_scope scope;
	int rc = exec_begin(db, lim, &engine, &scope, err);
	struct db_conn *c = NULL;
	if (rc == 0)
		rc = db_pool_acquire(&db->pool, &c, err);
	if (rc < 0) {
		schema_unref(scope.schema);
		exec_result_release(&res);
		return rc;
	}
	double start = clock_now_ms();
	rc = engine->run(c, &scope, sql, lim, &res, err);
	res.elapsed_ms = clock_now_ms() - start;
	db_pool_put(&db->pool, c, rc == -T2S_ERR_UNAVAILABLE);
	schema_unref(scope.schema);

	const char *labels[] = {db->cfg->name, db->engine->name, rc == 0 ? "ok" : t2s_code_slug(-rc), NULL};
	metrics_observe(m_query_seconds, labels, res.elapsed_ms / 1000.0);
	if (rc < 0) {
		const char *reason[] = {db->cfg->name, t2s_code_slug(-rc), NULL};
		metrics_add(m_rejections, reason, 1);
		exec_result_release(&res);
		return rc;
	}
	*ret = res;
	return 0;
}

int exec_validate(struct catalog_db *db, const char *sql, const struct exec_limits *lim, struct t2s_error *err)
{
	size_t len = strlen(sql);
	if (len > lim->max_sql_bytes)
		return t2s_error_set(err, T2S_ERR_INVALID, "sql is %zu bytes, larger than the limit of %zu", len,
				     lim->max_sql_bytes);
	const struct sql_engine *engine;
	struct exec_scope scope;
	int rc = exec_begin(db, lim, &engine, &scope, err);
	struct db_conn *c = NULL;
	if (rc == 0)
		rc = db_pool_acquire(&db->pool, &c, err);
	if (rc < 0) {
		schema_unref(scope.schema);
		return rc;
	}
	rc = engine->validate(c, &scope, sql, lim, err);
	db_pool_put(&db->pool, c, rc == -T2S_ERR_UNAVAILABLE);
	schema_unref(scope.schema);
	return rc;
}
