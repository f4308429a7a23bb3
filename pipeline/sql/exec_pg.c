/*
 * exec_pg.c - run one user statement on PostgreSQL (see exec.h for the
 * layers).  The statement, already checked by sql_guard_pg, runs as
 *
 *     BEGIN READ ONLY; SET LOCAL statement_timeout; SET LOCAL lock_timeout;
 *       SET LOCAL work_mem;  [temp_file_limit, when the role may set it]
 *       SET LOCAL search_path = <the database's schemas>  -- as the guard resolved names
 *     DECLARE t2s_cursor NO SCROLL CURSOR FOR <bounded statement> -- extended protocol:
 *     FETCH FORWARD <max_rows + 1> FROM t2s_cursor           -- one statement only
 *     ROLLBACK
 *
 * and the pool resets the session (DISCARD ALL) before reuse.
 *
 * The bounded statement keeps any row longer than max_result_bytes from
 * being sent at all: libpq reads a whole row before it hands it over, so
 * repeat('x', 300000000) would otherwise cost this process the 300 MB (and
 * the JSON copy) before the byte cap could look at it.  The statement's
 * columns are described first (an unnamed prepared statement), then it runs
 * as
 *     SELECT q.c1 AS "name1", q.c2 AS "name2", ...
 *     FROM (<statement>) AS q(c1, c2, ...)
 *     WHERE CASE WHEN <sum of octet_length(q.cN::text)> > max_result_bytes
 *                THEN <an error naming the size> ELSE 0 END = 0
 * so the server raises the error on such a row instead of sending it (the
 * filter keeps every other row, in order).
 */
#include "pipeline/sql/exec.h"

#include "common/strbuf.h"
#include "common/utf8.h"
#include "pipeline/sql/sql_engine.h"
#include "pipeline/sql/sql_guard_pg.h"
#include "pipeline/sql/sql_guard_pg_relations.h"
#include "pipeline/db/schema_grant.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Postgres type OIDs whose text form maps onto a JSON type. */
enum { OID_BOOL = 16, OID_INT8 = 20, OID_INT2 = 21, OID_INT4 = 23, OID_OID = 26, OID_FLOAT4 = 700,
       OID_FLOAT8 = 701, OID_NUMERIC = 1700 };

/* The marker of the bounded statement's error (see the top of this file). */
#define ROW_TOO_LONG "text2sqld:row-too-long:"

/* Map a failed result to an error code by SQLSTATE class. */
static int pg_error(PGconn *pg, PGresult *r, long timeout_ms, struct t2s_error *err)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *primary = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	char msg[384];
	snprintf(msg, sizeof(msg), "%s", primary ? primary : PQerrorMessage(pg));
	msg[strcspn(msg, "\n")] = '\0';
	const char *too_long = primary ? strstr(primary, ROW_TOO_LONG) : NULL;
	if (too_long)
		return t2s_error_set(err, T2S_ERR_SQL_FAILED,
				     "a result row is %lld bytes long, more than the limit of execution.max_result_bytes",
				     strtoll(too_long + strlen(ROW_TOO_LONG), NULL, 10));
	if (!state || PQstatus(pg) != CONNECTION_OK)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "PostgreSQL connection failed: %s", msg);
	/* The server, not the statement, failed: the backend was terminated or the server is
	   shutting down (57P0x), the connection broke (08), resources ran out (53). */
	if (strncmp(state, "57P", 3) == 0 || strncmp(state, "08", 2) == 0 || strncmp(state, "53", 2) == 0)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "PostgreSQL is unavailable: %s (SQLSTATE %s)", msg, state);
	if (strcmp(state, "57014") == 0)
		return t2s_error_set(err, T2S_ERR_TIMEOUT, "statement stopped after the time limit of %ld ms",
				     timeout_ms);
	if (strcmp(state, "55P03") == 0)
		return t2s_error_set(err, T2S_ERR_TIMEOUT, "statement waited too long for a lock: %s", msg);
	if (strcmp(state, "25006") == 0 || strcmp(state, "42501") == 0)
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "%s", msg);
	if (strncmp(state, "42", 2) == 0 || strcmp(state, "34000") == 0 || strcmp(state, "0A000") == 0 ||
	    strcmp(state, "08P01") == 0 /* e.g. a $1 parameter without a value */)
		return t2s_error_set(err, T2S_ERR_SQL_INVALID, "%s (SQLSTATE %s)", msg, state);
	return t2s_error_set(err, T2S_ERR_SQL_FAILED, "%s (SQLSTATE %s)", msg, state);
}

static json_t *value_json(PGresult *r, int row, int col, size_t *bytes)
{
	if (PQgetisnull(r, row, col)) {
		*bytes += 4;
		return json_null();
	}
	const char *v = PQgetvalue(r, row, col);
	size_t n = (size_t)PQgetlength(r, row, col);
	*bytes += n + 2;
	switch (PQftype(r, col)) {
	case OID_BOOL:
		return json_boolean(v[0] == 't');
	case OID_INT2:
	case OID_INT4:
	case OID_INT8:
	case OID_OID:
	case OID_FLOAT4:
	case OID_FLOAT8:
	case OID_NUMERIC:
		return exec_number_json(v, n);
	default:
		return utf8_json_string(v, n);
	}
}

static int run_command(PGconn *pg, const char *sql, long timeout_ms, struct t2s_error *err)
{
	PGresult *r = PQexec(pg, sql);
	int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : pg_error(pg, r, timeout_ms, err);
	PQclear(r);
	return rc;
}

/* The SQL name of a built-in type OID (pg_type.h), or NULL for others (user-defined types). */
static const char *pg_type_name(Oid oid)
{
	static const struct {
		Oid oid;
		const char *name;
	} types[] = {{16, "boolean"}, {17, "bytea"}, {18, "char"}, {19, "name"}, {20, "bigint"}, {21, "smallint"},
		     {23, "integer"}, {25, "text"}, {26, "oid"}, {114, "json"}, {142, "xml"}, {700, "real"},
		     {701, "double precision"}, {790, "money"}, {1042, "character"}, {1043, "character varying"},
		     {1082, "date"}, {1083, "time"}, {1114, "timestamp"}, {1184, "timestamp with time zone"},
		     {1186, "interval"}, {1266, "time with time zone"}, {1560, "bit"}, {1562, "bit varying"},
		     {1700, "numeric"}, {2950, "uuid"}, {3802, "jsonb"}, {869, "inet"}, {650, "cidr"},
		     {1000, "boolean[]"}, {1005, "smallint[]"}, {1007, "integer[]"}, {1016, "bigint[]"},
		     {1009, "text[]"}, {1015, "character varying[]"}, {1021, "real[]"}, {1022, "double precision[]"},
		     {1231, "numeric[]"}};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].oid == oid)
			return types[i].name;
	return NULL;
}

static void add_columns(PGresult *r, struct exec_result *res)
{
	int ncols = PQnfields(r);
	for (int i = 0; i < ncols; i++) {
		const char *name = PQfname(r, i);
		json_array_append_new(res->columns, utf8_json_string(name, strlen(name)));
		const char *type = pg_type_name(PQftype(r, i));
		json_array_append_new(res->column_types, type ? json_string(type) : json_null());
	}
}

/*
 * Wait until pg has a result ready, asking lim->cancelled every
 * EXEC_PG_CANCEL_CHECK_MS; when it says true, send a cancel request once
 * (*cancelled set) and go on waiting for the statement's end.  Without a
 * callback PQgetResult waits alone.
 */
#define EXEC_PG_CANCEL_CHECK_MS 50
static void wait_result(PGconn *pg, const struct exec_limits *lim, bool *cancelled)
{
	while (lim->cancelled && PQisBusy(pg)) {
		struct pollfd p = {.fd = PQsocket(pg), .events = POLLIN};
		int n = poll(&p, 1, EXEC_PG_CANCEL_CHECK_MS);
		if ((n > 0 && !PQconsumeInput(pg)) || n < 0)
			return; /* PQgetResult reports the broken connection */
		if (!*cancelled && lim->cancelled(lim->cancel_ctx)) {
			char why[256];
			PGcancel *c = PQgetCancel(pg);
			if (c) {
				PQcancel(c, why, sizeof(why));
				PQfreeCancel(c);
			}
			*cancelled = true;
		}
	}
}

/*
 * Fetch up to max_rows + 1 rows in single-row mode, so memory holds one row
 * at a time whatever the result's size; once the row or byte cap is reached
 * the remaining rows are read and dropped (at most max_rows of them).
 */
static int fetch_rows(PGconn *pg, const struct exec_limits *lim, struct exec_result *res, struct t2s_error *err)
{
	char fetch[96];
	snprintf(fetch, sizeof(fetch), "FETCH FORWARD %ld FROM t2s_cursor", lim->max_rows + 1);
	if (!PQsendQueryParams(pg, fetch, 0, NULL, NULL, NULL, NULL, 0) || !PQsetSingleRowMode(pg))
		return pg_error(pg, NULL, lim->timeout_ms, err);
	int rc = 0;
	bool have_columns = false, accepting = true, cancelled = false;
	PGresult *r;
	for (;;) {
		wait_result(pg, lim, &cancelled);
		if (!(r = PQgetResult(pg)))
			break;
		ExecStatusType st = PQresultStatus(r);
		if (st == PGRES_SINGLE_TUPLE || st == PGRES_TUPLES_OK) {
			if (!have_columns) {
				add_columns(r, res);
				have_columns = true;
			}
			for (int row = 0; accepting && row < PQntuples(r); row++) {
				json_t *values = json_array();
				size_t bytes = 4;
				for (int col = 0; col < PQnfields(r) && exec_result_row_fits(res, lim, bytes); col++)
					json_array_append_new(values, value_json(r, row, col, &bytes));
				accepting = exec_result_accept_row(res, lim, values, bytes);
			}
		} else if (rc == 0) {
			rc = pg_error(pg, r, lim->timeout_ms, err);
		}
		PQclear(r);
	}
	if (cancelled && rc < 0)
		rc = t2s_error_set(err, T2S_ERR_CANCELLED, "statement cancelled: its request was abandoned");
	return rc;
}

/* Session limits of the transaction: work_mem always, temp_file_limit when the role may set it. */
static int set_memory_limits(PGconn *pg, const struct exec_limits *lim, struct t2s_error *err)
{
	size_t kb = lim->max_statement_memory_bytes / 1024;
	if (kb == 0)
		return 0;
	size_t work_kb = kb / 4 < 64 ? 64 : (kb / 4 > 2097151 ? 2097151 : kb / 4);
	size_t temp_kb = kb * 16 > 2147483647 ? 2147483647 : kb * 16;
	char sql[256];
	snprintf(sql, sizeof(sql), "SET LOCAL work_mem = '%zukB'", work_kb);
	int rc = run_command(pg, sql, lim->timeout_ms, err);
	if (rc < 0 || PQserverVersion(pg) < 150000)
		return rc;
	snprintf(sql, sizeof(sql),
		 "SELECT pg_catalog.set_config('temp_file_limit', '%zukB', true) "
		 "WHERE pg_catalog.has_parameter_privilege('temp_file_limit', 'SET')",
		 temp_kb);
	PGresult *r = PQexec(pg, sql);
	rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : pg_error(pg, r, lim->timeout_ms, err);
	PQclear(r);
	return rc;
}

/*
 * SET LOCAL search_path to the schemas in which the guard resolved the
 * statement's unqualified names (sql_guard_pg_search_path), whatever the
 * role's own search_path: a bare name then reaches no schema outside the
 * database's schemas (pg_catalog, searched first, is the guard's concern).
 */
static int set_search_path(PGconn *pg, const struct sql_guard_pg_scope *scope, long timeout_ms,
			   struct t2s_error *err)
{
	size_t n_schemas = scope && scope->schemas ? scope->n_schemas : 0;
	const char **path = calloc(n_schemas ? n_schemas : 1, sizeof(*path));
	if (!path)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	size_t n = sql_guard_pg_search_path(scope ? scope->schemas : NULL, n_schemas, path);
	struct strbuf sql;
	strbuf_init(&sql, (size_t)1 << 20);
	bool ok = strbuf_adds(&sql, "SET LOCAL search_path = ") == 0 && (n > 0 || strbuf_adds(&sql, "''") == 0);
	for (size_t i = 0; ok && i < n; i++) {
		char *ident = PQescapeIdentifier(pg, path[i], strlen(path[i]));
		ok = ident && (i == 0 || strbuf_adds(&sql, ", ") == 0) && strbuf_adds(&sql, ident) == 0;
		PQfreemem(ident);
	}
	int rc = ok ? run_command(pg, sql.buf, timeout_ms, err) : t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	strbuf_release(&sql);
	free(path);
	return rc;
}

/*
 * Append to out the statement sql[0, end) wrapped so that no row longer than
 * max_result_bytes is sent (see the top of this file).  Errors of the
 * statement itself (syntax, names) come from describing it.
 */
static int append_bounded(PGconn *pg, const char *sql, size_t end, const struct exec_limits *lim,
			  struct strbuf *out, struct t2s_error *err)
{
	char *stmt = strndup(sql, end);
	if (!stmt)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	int rc = 0;
	PGresult *p = PQprepare(pg, "", stmt, 0, NULL);
	if (PQresultStatus(p) != PGRES_COMMAND_OK)
		rc = pg_error(pg, p, lim->timeout_ms, err);
	PQclear(p);
	PGresult *d = rc == 0 ? PQdescribePrepared(pg, "") : NULL;
	if (rc == 0 && PQresultStatus(d) != PGRES_COMMAND_OK)
		rc = pg_error(pg, d, lim->timeout_ms, err);
	int n = rc == 0 ? PQnfields(d) : 0;
	struct strbuf sum;
	strbuf_init(&sum, (size_t)1 << 24);
	bool ok = rc < 0 || n == 0 ? true : strbuf_adds(&sum, "(0::int8") == 0;
	for (int i = 0; rc == 0 && ok && i < n; i++) {
		char part[96];
		snprintf(part, sizeof(part), " + coalesce(octet_length(q.c%d::text), 0)::int8", i + 1);
		ok = strbuf_adds(&sum, part) == 0;
	}
	ok = ok && (n == 0 || strbuf_adds(&sum, ")") == 0);
	if (rc == 0 && ok && n == 0)
		ok = strbuf_adds(out, stmt) == 0;
	for (int i = 0; rc == 0 && ok && i < n; i++) {
		const char *name = PQfname(d, i);
		char *ident = PQescapeIdentifier(pg, name, strlen(name));
		char head[64];
		if (!ident) {
			ok = false;
			break;
		}
		snprintf(head, sizeof(head), "%sq.c%d AS ", i ? ", " : "SELECT ", i + 1);
		ok = strbuf_adds(out, head) == 0 && strbuf_adds(out, ident) == 0;
		PQfreemem(ident);
	}
	if (rc == 0 && ok && n > 0) {
		ok = strbuf_adds(out, " FROM (\n") == 0 && strbuf_adds(out, stmt) == 0 && strbuf_adds(out, "\n) AS q(") == 0;
		for (int i = 0; ok && i < n; i++) {
			char col[32];
			snprintf(col, sizeof(col), "%sc%d", i ? ", " : "", i + 1);
			ok = strbuf_adds(out, col) == 0;
		}
		char limit[64];
		snprintf(limit, sizeof(limit), " > %zu THEN CAST('" ROW_TOO_LONG "' || ", lim->max_result_bytes);
		ok = ok && strbuf_adds(out, ") WHERE CASE WHEN ") == 0 && strbuf_adds(out, sum.buf) == 0 &&
		     strbuf_adds(out, limit) == 0 && strbuf_adds(out, sum.buf) == 0 &&
		     strbuf_adds(out, "::text AS int) ELSE 0 END = 0") == 0;
	}
	if (rc == 0 && !ok)
		rc = t2s_error_set(err, T2S_ERR_INVALID, "sql is too long");
	strbuf_release(&sum);
	PQclear(d);
	free(stmt);
	return rc;
}

/* Is every relation under node (a plan of EXPLAIN (VERBOSE, FORMAT JSON)) a table of view? */
static bool plan_within(const json_t *node, const struct schema *view, int depth)
{
	const char *key;
	json_t *v;
	size_t i;
	if (depth > 200)
		return false;
	if (json_is_array(node)) {
		json_array_foreach(node, i, v)
			if (!plan_within(v, view, depth + 1))
				return false;
		return true;
	}
	const char *rel = json_string_value(json_object_get(node, "Relation Name"));
	if (rel && !schema_view_allows(view, json_string_value(json_object_get(node, "Schema")), rel))
		return false;
	json_object_foreach((json_t *)node, key, v)
		if ((json_is_object(v) || json_is_array(v)) && !plan_within(v, view, depth + 1))
			return false;
	return true;
}

/*
 * For a caller limited to some tables (scope->view, schema_grant.h): the
 * relations PostgreSQL will really read, views and inlined functions
 * expanded, must all be among them (the guard checked the names written).
 * In the statement's transaction, after its search_path is set.
 */
static int plan_within_view(PGconn *pg, const struct sql_guard_pg_scope *scope, const char *sql, size_t end,
			    long timeout_ms, struct t2s_error *err)
{
	if (!scope || !scope->view)
		return 0;
	struct strbuf explain;
	strbuf_init(&explain, end + 64);
	if (strbuf_adds(&explain, "EXPLAIN (VERBOSE, FORMAT JSON) ") < 0 || strbuf_add(&explain, sql, end) < 0) {
		strbuf_release(&explain);
		return t2s_error_set(err, T2S_ERR_INVALID, "sql is too long");
	}
	PGresult *r = PQexecParams(pg, explain.buf, 0, NULL, NULL, NULL, NULL, 0);
	strbuf_release(&explain);
	int rc = 0;
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = pg_error(pg, r, timeout_ms, err);
	} else {
		json_t *plan = PQntuples(r) == 1 ? json_loads(PQgetvalue(r, 0, 0), 0, NULL) : NULL;
		if (!plan || !plan_within(plan, scope->view, 0))
			rc = t2s_error_set(err, T2S_ERR_SQL_REJECTED, "the statement reads a table outside the tables this "
					   "caller may read (through a view or a function)");
		json_decref(plan);
	}
	PQclear(r);
	return rc;
}

/* exec_pg once the guard passed sql[0, end). */
static int exec_checked(struct db_conn *c, const struct sql_guard_pg_scope *scope, const char *sql, size_t end,
			const struct exec_limits *lim, struct exec_result *res, struct t2s_error *err)
{
	int rc;
	char begin[160];
	snprintf(begin, sizeof(begin),
		 "BEGIN READ ONLY; SET LOCAL statement_timeout = %ld; SET LOCAL lock_timeout = %ld", lim->timeout_ms,
		 lim->lock_timeout_ms);
	if ((rc = run_command(c->pg, begin, lim->timeout_ms, err)) < 0)
		return rc;
	if ((rc = set_memory_limits(c->pg, lim, err)) < 0 || (rc = set_search_path(c->pg, scope, lim->timeout_ms, err)) < 0 ||
	    (rc = plan_within_view(c->pg, scope, sql, end, lim->timeout_ms, err)) < 0) {
		PGresult *end_r = PQexec(c->pg, "ROLLBACK");
		PQclear(end_r);
		return rc;
	}
	struct strbuf declare;
	strbuf_init(&declare, 2 * lim->max_sql_bytes + ((size_t)1 << 20));
	if (strbuf_adds(&declare, "DECLARE t2s_cursor NO SCROLL CURSOR FOR ") < 0)
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	if (rc == 0)
		rc = append_bounded(c->pg, sql, end, lim, &declare, err);
	if (rc < 0) {
		strbuf_release(&declare);
		PGresult *end_r = PQexec(c->pg, "ROLLBACK");
		PQclear(end_r);
		return rc;
	}
	/* PQexecParams uses the extended protocol, which refuses more than one statement. */
	PGresult *r = PQexecParams(c->pg, declare.buf, 0, NULL, NULL, NULL, NULL, 0);
	strbuf_release(&declare);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		rc = pg_error(c->pg, r, lim->timeout_ms, err);
	PQclear(r);
	if (rc == 0)
		rc = fetch_rows(c->pg, lim, res, err);
	PGresult *done = PQexec(c->pg, "ROLLBACK");
	PQclear(done);
	return rc;
}

int exec_pg(struct db_conn *c, const struct sql_guard_pg_scope *scope, const char *sql, const struct exec_limits *lim,
	    struct exec_result *res, struct t2s_error *err)
{
	size_t end;
	char *scoped = NULL; /* the statement with its catalog views narrowed to the schemas (sql_guard_pg.h) */
	int rc = sql_guard_pg_check_scoped(sql, scope, &end, &scoped, err);
	if (rc == 0)
		rc = exec_checked(c, scope, scoped ? scoped : sql, end, lim, res, err);
	free(scoped);
	return rc;
}

int exec_pg_validate(struct db_conn *c, const struct sql_guard_pg_scope *scope, const char *sql,
		     const struct exec_limits *lim, struct t2s_error *err)
{
	int rc = sql_guard_pg_check(sql, scope, err);
	if (rc < 0)
		return rc;
	char begin[96];
	snprintf(begin, sizeof(begin), "BEGIN READ ONLY; SET LOCAL statement_timeout = %ld", lim->timeout_ms);
	if ((rc = run_command(c->pg, begin, lim->timeout_ms, err)) < 0)
		return rc;
	if ((rc = set_search_path(c->pg, scope, lim->timeout_ms, err)) < 0) {
		PGresult *end_r = PQexec(c->pg, "ROLLBACK");
		PQclear(end_r);
		return rc;
	}
	struct strbuf explain;
	strbuf_init(&explain, lim->max_sql_bytes + 16);
	if (strbuf_adds(&explain, "EXPLAIN ") < 0 || strbuf_adds(&explain, sql) < 0)
		rc = t2s_error_set(err, T2S_ERR_INVALID, "sql is too long");
	/* EXPLAIN plans the statement (names must resolve) without running it. */
	PGresult *r = rc == 0 ? PQexecParams(c->pg, explain.buf, 0, NULL, NULL, NULL, NULL, 0) : NULL;
	if (r && PQresultStatus(r) != PGRES_TUPLES_OK)
		rc = pg_error(c->pg, r, lim->timeout_ms, err);
	PQclear(r);
	strbuf_release(&explain);
	if (rc == 0)
		rc = plan_within_view(c->pg, scope, sql, strlen(sql), lim->timeout_ms, err);
	PGresult *end = PQexec(c->pg, "ROLLBACK");
	PQclear(end);
	return rc;
}

/* What a statement may use: the model's functions, the relations of the database's schemas. */
static struct sql_guard_pg_scope pg_scope(const struct exec_scope *scope)
{
	return (struct sql_guard_pg_scope){.functions = scope->schema ? scope->schema->pg_functions : NULL,
					   .schemas = scope->db->introspect.pg_schemas,
					   .n_schemas = scope->db->introspect.n_pg_schemas,
					   .view = schema_is_view(scope->schema) ? scope->schema : NULL};
}

static int pg_validate(struct db_conn *c, const struct exec_scope *scope, const char *sql,
		       const struct exec_limits *lim, struct t2s_error *err)
{
	struct sql_guard_pg_scope s = pg_scope(scope);
	return exec_pg_validate(c, &s, sql, lim, err);
}

static int pg_run(struct db_conn *c, const struct exec_scope *scope, const char *sql, const struct exec_limits *lim,
		  struct exec_result *res, struct t2s_error *err)
{
	struct sql_guard_pg_scope s = pg_scope(scope);
	return exec_pg(c, &s, sql, lim, res, err);
}

const struct sql_engine sql_engine_pg = {
	.db = &db_engine_pg,
	.dialect = SQL_DIALECT_POSTGRES,
	.needs_model = true,
	.enforces_views = true,
	.validate = pg_validate,
	.run = pg_run,
};
