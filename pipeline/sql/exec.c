/*
 * exec.c - engine-independent part of safe execution (see exec.h).
 */
#include "pipeline/sql/exec.h"

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

void exec_result_release(struct exec_result *r)
{
	if (!r)
		return;
	json_decref(r->columns);
	json_decref(r->column_types);
	json_decref(r->rows);
	memset(r, 0, sizeof(*r));
}

bool exec_result_row_fits(const struct exec_result *res, const struct exec_limits *lim, size_t row_bytes)
{
	return res->bytes + row_bytes <= lim->max_result_bytes;
}

/* Called with a row that is already complete; steals row. */
bool exec_result_accept_row(struct exec_result *res, const struct exec_limits *lim, json_t *row,
			    size_t row_bytes)
{
	if (res->row_count >= lim->max_rows) {
		json_decref(row);
		res->truncated = true;
		res->truncated_by = "max_rows";
		return false;
	}
	if (res->bytes + row_bytes > lim->max_result_bytes) {
		json_decref(row);
		res->truncated = true;
		res->truncated_by = "max_result_bytes";
		return false;
	}
	res->bytes += row_bytes;
	json_array_append_new(res->rows, row);
	res->row_count++;
	return true;
}

/*
 * PostgreSQL: a new reference to the published schema model in *ret (the
 * caller unrefs), introspecting when none is published.  SQLite: *ret stays
 * NULL (its guard lives on the connection).
 */
static int pg_schema(struct catalog_db *db, struct schema **ret, struct t2s_error *err)
{
	if (db->engine != DB_ENGINE_POSTGRES)
		return 0;
	return catalog_db_schema(db, ret, err);
}

/* What a PostgreSQL statement on db may use: the model's functions, the relations of the database's schemas. */
static struct sql_guard_pg_scope pg_scope(const struct catalog_db *db, const struct schema *schema)
{
	return (struct sql_guard_pg_scope){.functions = schema ? schema->pg_functions : NULL,
					   .schemas = db->introspect.pg_schemas,
					   .n_schemas = db->introspect.n_pg_schemas};
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
	struct schema *schema = NULL;
	int rc = pg_schema(db, &schema, err);
	struct db_conn *c = NULL;
	if (rc == 0)
		rc = db_pool_acquire(&db->pool, &c, err);
	if (rc < 0) {
		schema_unref(schema);
		exec_result_release(&res);
		return rc;
	}
	double start = clock_now_ms();
	struct sql_guard_pg_scope scope = pg_scope(db, schema);
	rc = db->engine == DB_ENGINE_SQLITE ? exec_sqlite(c, sql, lim, &res, err)
					    : exec_pg(c, &scope, sql, lim, &res, err);
	res.elapsed_ms = clock_now_ms() - start;
	db_pool_put(&db->pool, c, rc == -T2S_ERR_UNAVAILABLE);
	schema_unref(schema);

	const char *labels[] = {db->cfg->name, db_engine_name(db->engine), rc == 0 ? "ok" : t2s_code_slug(-rc), NULL};
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
	struct schema *schema = NULL;
	int rc = pg_schema(db, &schema, err);
	struct db_conn *c = NULL;
	if (rc == 0)
		rc = db_pool_acquire(&db->pool, &c, err);
	if (rc < 0) {
		schema_unref(schema);
		return rc;
	}
	struct sql_guard_pg_scope scope = pg_scope(db, schema);
	rc = db->engine == DB_ENGINE_SQLITE ? exec_sqlite_validate(c, sql, lim, err)
					    : exec_pg_validate(c, &scope, sql, lim, err);
	db_pool_put(&db->pool, c, rc == -T2S_ERR_UNAVAILABLE);
	schema_unref(schema);
	return rc;
}
