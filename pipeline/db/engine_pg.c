/*
 * engine_pg.c - the PostgreSQL engine's table (see engine.h): libpq
 * connections reset before reuse, introspection and the role check, the
 * declared-type classes, the data version, and the statements of value
 * probes and scans (each in a read-only transaction under a statement
 * timeout, rolled back).
 *
 * Data version: pg_stat_database's tup_inserted + tup_updated + tup_deleted
 * for the current database, with stats_reset.  Reads do not move it (unlike
 * xact_commit, which every read-only transaction increments).  Backends
 * report their counts when they go idle, at most once a second, so a change
 * is seen within about a second of its commit; TRUNCATE is not counted (the
 * README says so).
 */
#include "pipeline/db/catalog.h"
#include "pipeline/db/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- connections ---- */

static int pg_open(const struct db_pool *p, struct db_conn *c, struct t2s_error *err)
{
	char timeout[32];
	snprintf(timeout, sizeof(timeout), "%ld", p->connect_timeout_s);
	/* Our values first: settings in the URL (expanded from dbname) override them; the password,
	   after the URL, overrides the URL's (the config refuses both). */
	const char *keys[] = {"connect_timeout", "application_name", "dbname", p->password ? "password" : NULL, NULL};
	const char *values[] = {timeout, "text2sqld", p->target, p->password, NULL};
	c->pg = PQconnectdbParams(keys, values, 1);
	if (!c->pg)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory opening a PostgreSQL connection");
	if (PQstatus(c->pg) != CONNECTION_OK) {
		char msg[256];
		snprintf(msg, sizeof(msg), "%s", PQerrorMessage(c->pg));
		msg[strcspn(msg, "\n")] = '\0';
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot connect to PostgreSQL: %s", msg);
	}
	return 0;
}

static void pg_close(struct db_conn *c)
{
	if (c->pg)
		PQfinish(c->pg);
	c->pg = NULL;
}

/* Bring the session back to a clean state (ROLLBACK if needed, DISCARD ALL); false when it cannot be trusted. */
static bool pg_reset(struct db_conn *c)
{
	PGconn *pg = c->pg;
	if (PQstatus(pg) != CONNECTION_OK)
		return false;
	if (PQtransactionStatus(pg) != PQTRANS_IDLE) {
		PGresult *r = PQexec(pg, "ROLLBACK");
		bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
		PQclear(r);
		if (!ok)
			return false;
	}
	PGresult *r = PQexec(pg, "DISCARD ALL");
	bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
	PQclear(r);
	return ok && PQtransactionStatus(pg) == PQTRANS_IDLE;
}

static void pg_cancel(struct db_conn *c)
{
	if (!c->pg)
		return;
	PGcancel *cancel = PQgetCancel(c->pg);
	char errbuf[256];
	if (cancel) {
		PQcancel(cancel, errbuf, (int)sizeof(errbuf));
		PQfreeCancel(cancel);
	}
}

static int pg_ping(struct db_conn *c, struct t2s_error *err)
{
	PGresult *r = PQexec(c->pg, "SELECT 1");
	bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
	PQclear(r);
	return ok ? 0 : t2s_error_set(err, T2S_ERR_UNAVAILABLE, "PostgreSQL connection lost");
}

/* ---- the schema model ---- */

/* PostgreSQL types by the name format_type() prints, arrays and ranges aside; first match wins. */
static const struct {
	enum schema_type_class class;
	const char *names[24];
} type_rules[] = {
	{SCHEMA_TYPE_DATE, {"time", "date"}}, /* "time" also starts "timestamp"; ranges are taken first */
	{SCHEMA_TYPE_TEXT, {"text", "character", "varchar", "char", "bpchar", "citext", "name", "\"char\""}},
	{SCHEMA_TYPE_INTEGER, {"smallint", "integer", "bigint"}},
	{SCHEMA_TYPE_REAL, {"numeric", "real", "double precision", "decimal", "money"}},
	{SCHEMA_TYPE_BOOLEAN, {"boolean"}},
	{SCHEMA_TYPE_OTHER, {"interval", "bytea", "json", "xml", "uuid", "inet", "cidr", "macaddr", "ts", "point",
			     "line", "lseg", "box", "path", "polygon", "circle", "bit", "oid", "pg_", "hstore",
			     "geometry", "geography", "vector"}},
};

/* The class of a type: arrays and ranges are other; else the first rule with a name the type starts with. */
static int pg_type_class(const char *type)
{
	size_t len = strlen(type);
	if ((len >= 2 && strcmp(type + len - 2, "[]") == 0) || strstr(type, "range"))
		return SCHEMA_TYPE_OTHER;
	for (size_t r = 0; r < sizeof(type_rules) / sizeof(*type_rules); r++)
		for (const char *const *name = type_rules[r].names; *name; name++)
			if (strncmp(type, *name, strlen(*name)) == 0)
				return type_rules[r].class;
	return SCHEMA_TYPE_UNKNOWN;
}

static int pg_data_version(struct catalog_db *db, char *ret, size_t size, struct t2s_error *err)
{
	struct db_conn *c;
	int rc = db_pool_acquire(&db->pool, &c, err);
	if (rc < 0)
		return rc;
	PGresult *r = PQexec(c->pg, "SELECT (tup_inserted + tup_updated + tup_deleted)::text || '.' ||"
				    " coalesce(extract(epoch FROM stats_reset)::text, '')"
				    " FROM pg_catalog.pg_stat_database WHERE datname = current_database()");
	bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
	if (ok)
		snprintf(ret, size, "p%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	db_pool_put(&db->pool, c, !ok);
	return ok ? 0 : t2s_error_set(err, T2S_ERR_UNAVAILABLE, "PostgreSQL statistics unreadable");
}

/* ---- value probes and scans ---- */

static char *pg_quote_name(struct db_conn *c, const char *name)
{
	char *q = PQescapeIdentifier(c->pg, name, strlen(name));
	char *out = q ? strdup(q) : NULL;
	PQfreemem(q);
	return out;
}

/* "schema"."name", always qualified. */
static char *pg_quote_table(struct db_conn *c, const struct schema_table *t)
{
	char *rel = pg_quote_name(c, t->name);
	if (!rel)
		return NULL;
	char *ns = pg_quote_name(c, t->schema);
	size_t n = ns ? strlen(ns) + strlen(rel) + 2 : 0;
	char *out = n ? malloc(n) : NULL;
	if (out)
		snprintf(out, n, "%s.%s", ns, rel);
	free(ns);
	free(rel);
	return out;
}

static int pg_probe_sql(const char *col, const char *table, bool like, int limit, char **ret)
{
	int n = like ? asprintf(ret, "SELECT DISTINCT %s::text FROM %s WHERE %s::text ILIKE $1 ESCAPE '\\' LIMIT %d",
				col, table, col, limit)
		     : asprintf(ret, "SELECT DISTINCT %s::text FROM %s WHERE lower(%s::text) = lower($1) LIMIT %d", col,
				table, col, limit);
	if (n < 0) {
		*ret = NULL;
		return -T2S_ERR_NOMEM;
	}
	return 0;
}

static int pg_scan_sql(enum db_scan what, const char *col, const char *table, long rows, int cut, int limit,
		       char **ret)
{
	int n = -1;
	switch (what) {
	case DB_SCAN_TEXT:
	case DB_SCAN_ANY:
		n = asprintf(ret,
			     "SELECT left(v, %d), octet_length(v) FROM (SELECT %s::text AS v FROM %s LIMIT %ld) s "
			     "WHERE v IS NOT NULL GROUP BY v ORDER BY count(*) DESC LIMIT %d",
			     cut, col, table, rows, limit);
		break;
	case DB_SCAN_NUMBER_RANGE:
		n = asprintf(ret, "SELECT min(v)::text, max(v)::text FROM (SELECT %s AS v FROM %s LIMIT %ld) s", col,
			     table, rows);
		break;
	case DB_SCAN_DATE_RANGE:
		n = asprintf(ret,
			     "SELECT to_char(min(v), 'YYYY-MM-DD'), to_char(max(v), 'YYYY-MM-DD') "
			     "FROM (SELECT %s AS v FROM %s LIMIT %ld) s",
			     col, table, rows);
		break;
	}
	if (n < 0) {
		*ret = NULL;
		return -T2S_ERR_NOMEM;
	}
	return 0;
}

/* Map a failed result (r may be NULL; cleared here) of the statement what to a code with err filled. */
static int query_error(PGconn *pg, PGresult *r, const char *what, struct t2s_error *err)
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

#define QUERY_COLS_MAX 4

static int pg_query(struct db_conn *c, const struct db_query *q, struct t2s_error *err)
{
	PGconn *pg = c->pg;
	char begin[96];
	snprintf(begin, sizeof(begin), "BEGIN READ ONLY; SET LOCAL statement_timeout = %ld",
		 q->timeout_ms > 0 ? q->timeout_ms : 0);
	PGresult *r = PQexec(pg, begin);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		return query_error(pg, r, "read-only transaction", err);
	PQclear(r);
	const char *params[1] = {q->param};
	r = q->param ? PQexecParams(pg, q->sql, 1, NULL, params, NULL, NULL, 0) : PQexec(pg, q->sql);
	int rc = 0;
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = query_error(pg, r, q->what, err);
	} else {
		int ncols = PQnfields(r) < QUERY_COLS_MAX ? PQnfields(r) : QUERY_COLS_MAX;
		for (int row = 0; row < PQntuples(r) && rc == 0; row++) {
			const char *vals[QUERY_COLS_MAX];
			size_t lens[QUERY_COLS_MAX];
			for (int i = 0; i < ncols; i++) {
				bool null = PQgetisnull(r, row, i);
				vals[i] = null ? NULL : PQgetvalue(r, row, i);
				lens[i] = null ? 0 : (size_t)PQgetlength(r, row, i);
			}
			rc = q->fn(q->ctx, ncols, vals, lens);
		}
		PQclear(r);
	}
	if (PQtransactionStatus(pg) != PQTRANS_IDLE)
		PQclear(PQexec(pg, "ROLLBACK"));
	return rc;
}

const struct db_engine db_engine_pg = {
	.name = "postgresql",
	.url_prefixes = (const char *const[]){"postgresql://", "postgres://", NULL},
	.dialect = "PostgreSQL",
	.home_schema = "public",
	.quote = '"',
	.folds_case = true,
	.loose_types = false,
	.like_nocase = " ILIKE ",
	.prompt_notes = {.always = "- Quote identifiers that have capitals (\"Name\"). Every plain selected column must "
				   "be in GROUP BY.\n",
			 .strings = "- = and LIKE are case-sensitive, ILIKE is not.\n",
			 .dates = "- Dates: EXTRACT(YEAR FROM d), now(), interval '1 day'.\n",
			 .ratios = "- Integer division truncates: cast to numeric for ratios.\n"},
	.reserved = db_sql_reserved_words,
	.open = pg_open,
	.close = pg_close,
	.reset = pg_reset,
	.cancel = pg_cancel,
	.ping = pg_ping,
	.introspect = introspect_pg,
	.role_privilege = introspect_pg_role,
	.type_class = pg_type_class,
	.data_version = pg_data_version,
	.quote_name = pg_quote_name,
	.quote_table = pg_quote_table,
	.probe_sql = pg_probe_sql,
	.scan_sql = pg_scan_sql,
	.query = pg_query,
};
