/*
 * value_probe.c - parameterised, read-only confirmation of a value in one
 * column (see value_probe.h).
 */
#include "pipeline/values/value_probe.h"

#include "common/clock.h"
#include "common/strbuf.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *value_probe_quote_ident(struct db_conn *c, const char *name)
{
	if (c->engine == DB_ENGINE_POSTGRES) {
		char *q = PQescapeIdentifier(c->pg, name, strlen(name));
		char *out = q ? strdup(q) : NULL;
		PQfreemem(q);
		return out;
	}
	struct strbuf sb;
	strbuf_init(&sb, 1 << 16);
	int rc = strbuf_adds(&sb, "\"");
	for (const char *p = name; *p && rc == 0; p++)
		rc = strbuf_add(&sb, *p == '"' ? "\"\"" : p, *p == '"' ? 2 : 1);
	if (rc == 0)
		rc = strbuf_adds(&sb, "\"");
	char *out = rc == 0 ? strbuf_detach(&sb, NULL) : NULL;
	strbuf_release(&sb);
	return out;
}

char *value_probe_quote_table(struct db_conn *c, const struct schema_table *t)
{
	char *rel = value_probe_quote_ident(c, t->name);
	if (!rel || c->engine == DB_ENGINE_SQLITE)
		return rel;
	char *ns = value_probe_quote_ident(c, t->schema);
	size_t n = ns ? strlen(ns) + strlen(rel) + 2 : 0;
	char *out = n ? malloc(n) : NULL;
	if (out)
		snprintf(out, n, "%s.%s", ns, rel);
	free(ns);
	free(rel);
	return out;
}

int value_probe_pg_error(PGconn *pg, PGresult *r, const char *what, struct t2s_error *err)
{
	char msg[256];
	snprintf(msg, sizeof(msg), "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(pg));
	msg[strcspn(msg, "\n")] = '\0';
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	bool timeout = state && strcmp(state, "57014") == 0;
	PQclear(r);
	if (timeout)
		return t2s_error_set(err, T2S_ERR_TIMEOUT, "%s timed out", what);
	if (PQstatus(pg) != CONNECTION_OK)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "connection lost during %s: %s", what, msg);
	return t2s_error_set(err, T2S_ERR_SQL_FAILED, "%s failed: %s", what, msg);
}

int value_probe_pg_begin(PGconn *pg, long timeout_ms, struct t2s_error *err)
{
	char sql[96];
	snprintf(sql, sizeof(sql), "BEGIN READ ONLY; SET LOCAL statement_timeout = %ld", timeout_ms > 0 ? timeout_ms : 0);
	PGresult *r = PQexec(pg, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		return value_probe_pg_error(pg, r, "read-only transaction", err);
	PQclear(r);
	return 0;
}

void value_probe_pg_end(PGconn *pg)
{
	if (PQtransactionStatus(pg) != PQTRANS_IDLE)
		PQclear(PQexec(pg, "ROLLBACK"));
}

void value_probe_result_release(struct value_probe_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_rows; i++)
		free(r->rows[i]);
	free(r->rows);
	free(r->sql);
	free(r->param);
	memset(r, 0, sizeof(*r));
}

/* '%' + value with \ % _ escaped and each run of white space as '%' + '%'; malloc'd. */
static char *like_pattern(const char *value)
{
	struct strbuf sb;
	strbuf_init(&sb, 4 * VALUE_PROBE_MAX_VALUE_LEN + 8);
	int rc = strbuf_adds(&sb, "%");
	bool space = false;
	for (const char *p = value; *p && rc == 0; p++) {
		if (isspace((unsigned char)*p)) {
			space = true;
			continue;
		}
		if (space && sb.len > 1)
			rc = strbuf_adds(&sb, "%");
		space = false;
		if (rc == 0 && (*p == '\\' || *p == '%' || *p == '_'))
			rc = strbuf_adds(&sb, "\\");
		if (rc == 0)
			rc = strbuf_add(&sb, p, 1);
	}
	if (rc == 0 && sb.buf[sb.len - 1] != '%')
		rc = strbuf_adds(&sb, "%");
	char *out = rc == 0 ? strbuf_detach(&sb, NULL) : NULL;
	strbuf_release(&sb);
	return out;
}

/* Append a copy of v[0..len) to r->rows, an exact match of want moved first. */
static int add_row(struct value_probe_result *r, const char *v, size_t len, const char *want)
{
	if (r->n_rows >= VALUE_PROBE_MAX_ROWS)
		return 0;
	char *copy = strndup(v, len);
	if (!copy)
		return -T2S_ERR_NOMEM;
	if (!r->rows) {
		r->rows = calloc(VALUE_PROBE_MAX_ROWS, sizeof(*r->rows));
		if (!r->rows) {
			free(copy);
			return -T2S_ERR_NOMEM;
		}
	}
	r->rows[r->n_rows++] = copy;
	if (strcmp(copy, want) == 0 && r->n_rows > 1) {
		memmove(&r->rows[1], &r->rows[0], (r->n_rows - 1) * sizeof(*r->rows));
		r->rows[0] = copy;
	}
	return 0;
}

struct probe_query {
	struct db_conn *c;
	const char *sql;
	const char *param;
	const char *value; /* the mention, to put an exact match first */
	long timeout_ms;
};

static int run_sqlite(const struct probe_query *q, struct value_probe_result *r, struct t2s_error *err)
{
	sqlite3_stmt *st = NULL;
	sqlite_guard_arm(&q->c->guard, SQLITE_GUARD_QUERY, q->timeout_ms);
	if (sqlite3_prepare_v2(q->c->sqlite, q->sql, -1, &st, NULL) != SQLITE_OK)
		return t2s_error_set(err, T2S_ERR_SQL_FAILED, "value probe failed: %s", sqlite3_errmsg(q->c->sqlite));
	sqlite3_bind_text(st, 1, q->param, -1, SQLITE_STATIC);
	int rc = SQLITE_DONE, ret = 0;
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(st, 0);
		if (v)
			ret = add_row(r, v, (size_t)sqlite3_column_bytes(st, 0), q->value);
	}
	if (ret == 0 && rc != SQLITE_DONE)
		ret = q->c->guard.timed_out ? t2s_error_set(err, T2S_ERR_TIMEOUT, "value probe timed out")
					    : t2s_error_set(err, T2S_ERR_SQL_FAILED, "value probe failed: %s",
							    sqlite3_errmsg(q->c->sqlite));
	else if (ret < 0)
		t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	sqlite3_finalize(st);
	return ret;
}

static int run_pg(const struct probe_query *q, struct value_probe_result *r, struct t2s_error *err)
{
	int rc = value_probe_pg_begin(q->c->pg, q->timeout_ms, err);
	if (rc < 0)
		return rc;
	const char *params[1] = {q->param};
	PGresult *res = PQexecParams(q->c->pg, q->sql, 1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		rc = value_probe_pg_error(q->c->pg, res, "value probe", err);
		value_probe_pg_end(q->c->pg);
		return rc;
	}
	for (int i = 0; i < PQntuples(res) && rc == 0; i++)
		if (!PQgetisnull(res, i, 0))
			rc = add_row(r, PQgetvalue(res, i, 0), (size_t)PQgetlength(res, i, 0), q->value);
	PQclear(res);
	value_probe_pg_end(q->c->pg);
	if (rc < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	return 0;
}

/* Both statements of a probe for column col of table t, malloc'd into *eq and *like. */
static int build_sql(struct db_conn *c, const struct schema_table *t, const struct schema_column *col, char **eq,
		     char **like)
{
	char *tab = value_probe_quote_table(c, t);
	char *qc = value_probe_quote_ident(c, col->name);
	int rc = tab && qc ? 0 : -T2S_ERR_NOMEM;
	if (rc == 0 && c->engine == DB_ENGINE_SQLITE) {
		*eq = NULL;
		*like = NULL;
		if (asprintf(eq, "SELECT DISTINCT %s FROM %s WHERE lower(%s) = lower(?1) LIMIT %d", qc, tab, qc,
			     VALUE_PROBE_MAX_ROWS) < 0)
			*eq = NULL;
		if (asprintf(like, "SELECT DISTINCT %s FROM %s WHERE %s LIKE ?1 ESCAPE '\\' LIMIT %d", qc, tab, qc,
			     VALUE_PROBE_MAX_ROWS) < 0)
			*like = NULL;
	} else if (rc == 0) {
		if (asprintf(eq, "SELECT DISTINCT %s::text FROM %s WHERE lower(%s::text) = lower($1) LIMIT %d", qc,
			     tab, qc, VALUE_PROBE_MAX_ROWS) < 0)
			*eq = NULL;
		if (asprintf(like, "SELECT DISTINCT %s::text FROM %s WHERE %s::text ILIKE $1 ESCAPE '\\' LIMIT %d", qc,
			     tab, qc, VALUE_PROBE_MAX_ROWS) < 0)
			*like = NULL;
	}
	free(tab);
	free(qc);
	if (rc == 0 && (!*eq || !*like)) {
		free(*eq);
		free(*like);
		rc = -T2S_ERR_NOMEM;
	}
	return rc;
}

int value_probe_run(struct catalog_db *db, const struct schema *s, int table, int column, const char *value,
		    long timeout_ms, struct value_probe_result *ret, struct t2s_error *err)
{
	if (!s || table < 0 || (size_t)table >= s->n_tables || column < 0 ||
	    (size_t)column >= s->tables[table].n_columns)
		return t2s_error_set(err, T2S_ERR_INVALID, "no such column to probe");
	size_t len = value ? strlen(value) : 0;
	if (len == 0 || len > VALUE_PROBE_MAX_VALUE_LEN)
		return t2s_error_set(err, T2S_ERR_INVALID, "probe value must be 1 to %d bytes",
				     VALUE_PROBE_MAX_VALUE_LEN);
	const struct schema_table *t = &s->tables[table];
	struct value_probe_result r = {0};
	struct db_conn *c;
	int rc = db_pool_acquire(&db->pool, &c, err);
	if (rc < 0)
		return rc;
	double start = clock_now_ms();
	char *eq = NULL, *like = NULL;
	struct probe_query q = {.c = c, .value = value, .timeout_ms = timeout_ms > 0 ? timeout_ms : VALUE_PROBE_TIMEOUT_DEFAULT_MS};
	rc = build_sql(c, t, &t->columns[column], &eq, &like);
	if (rc == 0) {
		q.sql = eq;
		q.param = value;
		r.how = "equal";
		rc = c->engine == DB_ENGINE_SQLITE ? run_sqlite(&q, &r, err) : run_pg(&q, &r, err);
	} else {
		t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	char *pattern = NULL;
	if (rc == 0 && r.n_rows == 0) {
		pattern = like_pattern(value);
		if (!pattern) {
			rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
		} else if (strcmp(pattern, "%") != 0) {
			q.sql = like;
			q.param = pattern;
			r.how = "like";
			rc = c->engine == DB_ENGINE_SQLITE ? run_sqlite(&q, &r, err) : run_pg(&q, &r, err);
		}
	}
	db_pool_put(&db->pool, c, rc == -T2S_ERR_UNAVAILABLE);
	r.elapsed_ms = clock_now_ms() - start;
	if (rc == 0) {
		r.sql = strdup(q.sql);
		r.param = strdup(q.param);
		if (!r.sql || !r.param)
			rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	free(eq);
	free(like);
	free(pattern);
	if (rc < 0) {
		value_probe_result_release(&r);
		return rc;
	}
	*ret = r;
	return 0;
}
