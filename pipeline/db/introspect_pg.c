/*
 * introspect_pg.c - the schema model of a PostgreSQL database, read from
 * pg_catalog inside one READ ONLY transaction with a statement_timeout.
 *
 * Three catalog queries (tables, columns, key constraints) share one table
 * filter: ordinary, partitioned, foreign tables, views and materialized
 * views that the connected role may SELECT, in the configured schemas or in
 * every non-system schema.  Row counts come from pg_class.reltuples (an
 * estimate kept by ANALYZE/VACUUM); only a never-analysed table is counted,
 * with a bounded scan.  Samples and counts run under a savepoint so a slow
 * or failing table costs its own samples, not the whole introspection.
 *
 * Every function of pg_proc (all schemas: a call may name any of them) goes
 * into the schema's pg_functions, which the statement guard asks what a
 * function call is (pg_functions.h), with the operators and cast target
 * types that run a function outside the admitted set (VOLATILE, SECURITY
 * DEFINER or a procedure: the query keeps only those, pg_functions decides).
 */
#include "pipeline/db/introspect.h"

#include "common/strbuf.h"
#include "common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_FILTER                                                                                  \
	"WITH t AS (SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "       \
	"WHERE c.relkind IN ('r','p','v','m','f') AND NOT c.relispartition "                             \
	"AND n.nspname NOT IN ('pg_catalog','information_schema') "                                     \
	"AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%' "                     \
	"AND ($1::text IS NULL OR n.nspname = ANY(string_to_array($1, chr(31)))) "                      \
	"AND has_table_privilege(c.oid, 'SELECT')) "

static const char tables_sql[] = TABLE_FILTER
	"SELECT c.oid, n.nspname, c.relname, c.relkind, obj_description(c.oid, 'pg_class'), "
	"c.reltuples::float8 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
	"WHERE c.oid IN (SELECT oid FROM t) ORDER BY n.nspname, c.oid";

static const char columns_sql[] = TABLE_FILTER
	"SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
	"col_description(a.attrelid, a.attnum) FROM pg_attribute a "
	"WHERE a.attrelid IN (SELECT oid FROM t) AND a.attnum > 0 AND NOT a.attisdropped "
	"ORDER BY a.attrelid, a.attnum";

static const char keys_sql[] = TABLE_FILTER
	"SELECT con.conrelid, con.contype, con.conname, a.attname, fn.nspname, fc.relname, fa.attname "
	"FROM pg_constraint con CROSS JOIN LATERAL unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord) "
	"JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum "
	"LEFT JOIN pg_class fc ON fc.oid = con.confrelid "
	"LEFT JOIN pg_namespace fn ON fn.oid = fc.relnamespace "
	"LEFT JOIN pg_attribute fa ON fa.attrelid = con.confrelid AND fa.attnum = con.confkey[k.ord] "
	"WHERE con.contype IN ('p', 'f') AND con.conrelid IN (SELECT oid FROM t) "
	"ORDER BY con.conrelid, con.contype, con.conname, k.ord";

static const char functions_sql[] =
	"SELECT n.nspname, p.proname, p.pronargs, p.pronargdefaults, p.provariadic <> 0, p.provolatile, "
	"p.prosecdef, p.prokind FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace";

/*
 * Operators ('o') and conversion targets ('c') with a function that may not
 * be admitted, and that function's facts.  An operator runs oprcode, and the
 * planner its estimators oprrest/oprjoin; a conversion into a type runs a
 * pg_cast.castfunc into it, its typinput (literals, I/O casts) and, for a
 * domain (and the domains it is based on), the functions its constraints
 * depend on.
 */
static const char routed_sql[] =
	"WITH RECURSIVE suspect AS (SELECT p.oid, n.nspname, p.proname, p.pronargs, p.pronargdefaults, "
	"p.provariadic <> 0 AS variadic, p.provolatile, p.prosecdef, p.prokind FROM pg_proc p "
	"JOIN pg_namespace n ON n.oid = p.pronamespace "
	"WHERE p.provolatile = 'v' OR p.prosecdef OR p.prokind = 'p'), "
	"dom(typ, base) AS (SELECT oid, oid FROM pg_type WHERE typtype = 'd' "
	"UNION SELECT d.typ, t.typbasetype FROM dom d JOIN pg_type t ON t.oid = d.base WHERE t.typtype = 'd'), "
	"into_type(typ, fn) AS (SELECT casttarget, castfunc FROM pg_cast WHERE castfunc <> 0 "
	"UNION SELECT oid, typinput FROM pg_type "
	"UNION SELECT dom.typ, dep.refobjid FROM dom JOIN pg_constraint con ON con.contypid = dom.base "
	"JOIN pg_depend dep ON dep.classid = 'pg_constraint'::regclass AND dep.objid = con.oid "
	"AND dep.refclassid = 'pg_proc'::regclass) "
	"SELECT 'o', n.nspname, o.oprname, s.nspname, s.proname, s.pronargs, s.pronargdefaults, s.variadic, "
	"s.provolatile, s.prosecdef, s.prokind FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace "
	"JOIN suspect s ON s.oid IN (o.oprcode, o.oprrest, o.oprjoin) "
	"UNION ALL SELECT 'c', n.nspname, t.typname, s.nspname, s.proname, s.pronargs, s.pronargdefaults, s.variadic, "
	"s.provolatile, s.prosecdef, s.prokind FROM into_type i JOIN pg_type t ON t.oid = i.typ "
	"JOIN pg_namespace n ON n.oid = t.typnamespace JOIN suspect s ON s.oid = i.fn";

struct pg_ctx {
	PGconn *pg;
	const struct introspect_options *o;
	struct schema *s;
	struct t2s_error *err;
	char *schema_filter;   /* schemas joined by chr(31), or NULL */
	unsigned *oids;        /* oids[i] is s->tables[i]'s oid */
	size_t *by_oid;        /* table indexes sorted by oid */
};

static int pg_fail(struct pg_ctx *x, PGresult *r, const char *what)
{
	char msg[256];
	snprintf(msg, sizeof(msg), "%s", PQresultErrorMessage(r));
	msg[strcspn(msg, "\n")] = '\0';
	const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	PQclear(r);
	if (state && strcmp(state, "57014") == 0)
		return t2s_error_set(x->err, T2S_ERR_TIMEOUT, "introspection timed out (%s)", what);
	if (PQstatus(x->pg) != CONNECTION_OK)
		return t2s_error_set(x->err, T2S_ERR_UNAVAILABLE, "connection lost during introspection: %s", msg);
	return t2s_error_set(x->err, T2S_ERR_SQL_FAILED, "introspection failed (%s): %s", what, msg);
}

/* Run a catalog query with the schema filter as $1. */
static int query(struct pg_ctx *x, const char *sql, const char *what, PGresult **ret)
{
	const char *params[1] = {x->schema_filter};
	*ret = NULL; /* set on every path: a release build (-O3) cannot see that callers read it only on 0 */
	PGresult *r = PQexecParams(x->pg, sql, 1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		return pg_fail(x, r, what);
	*ret = r;
	return 0;
}

static int command(struct pg_ctx *x, const char *sql)
{
	PGresult *r = PQexec(x->pg, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		return pg_fail(x, r, sql);
	PQclear(r);
	return 0;
}

static const char *text(struct pg_ctx *x, PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		return NULL;
	return utf8_sanitize(&x->s->arena, PQgetvalue(r, row, col), (size_t)PQgetlength(r, row, col));
}

static const char *kind_name(char relkind)
{
	switch (relkind) {
	case 'v': return "view";
	case 'm': return "materialized_view";
	case 'f': return "foreign_table";
	default: return "table";
	}
}

static int cmp_by_oid(const void *a, const void *b, void *oids_v)
{
	const unsigned *oids = oids_v;
	unsigned x = oids[*(const size_t *)a], y = oids[*(const size_t *)b];
	return x < y ? -1 : x > y;
}

static struct schema_table *table_by_oid(struct pg_ctx *x, unsigned oid)
{
	size_t lo = 0, hi = x->s->n_tables;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		unsigned m = x->oids[x->by_oid[mid]];
		if (m == oid)
			return &x->s->tables[x->by_oid[mid]];
		if (m < oid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int read_tables(struct pg_ctx *x)
{
	PGresult *r;
	int rc = query(x, tables_sql, "tables", &r);
	if (rc < 0)
		return rc;
	size_t n = (size_t)PQntuples(r);
	x->s->tables = arena_calloc(&x->s->arena, n ? n : 1, sizeof(*x->s->tables));
	x->oids = calloc(n ? n : 1, sizeof(*x->oids));
	x->by_oid = calloc(n ? n : 1, sizeof(*x->by_oid));
	if (!x->s->tables || !x->oids || !x->by_oid) {
		PQclear(r);
		return -T2S_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct schema_table *t = &x->s->tables[i];
		x->oids[i] = (unsigned)strtoul(PQgetvalue(r, (int)i, 0), NULL, 10);
		x->by_oid[i] = i;
		t->schema = text(x, r, (int)i, 1);
		t->name = text(x, r, (int)i, 2);
		t->kind = kind_name(PQgetvalue(r, (int)i, 3)[0]);
		t->comment = text(x, r, (int)i, 4);
		double reltuples = strtod(PQgetvalue(r, (int)i, 5), NULL);
		t->row_count = reltuples >= 0 ? (long long)(reltuples + 0.5) : -1;
		t->row_count_estimated = reltuples >= 0;
	}
	x->s->n_tables = n;
	PQclear(r);
	qsort_r(x->by_oid, n, sizeof(*x->by_oid), cmp_by_oid, x->oids);
	return 0;
}

static int read_columns(struct pg_ctx *x)
{
	PGresult *r;
	int rc = query(x, columns_sql, "columns", &r);
	if (rc < 0)
		return rc;
	int n = PQntuples(r);
	struct schema_table *t = NULL;
	size_t cap = 0;
	for (int i = 0; i < n; i++) {
		struct schema_table *owner = table_by_oid(x, (unsigned)strtoul(PQgetvalue(r, i, 0), NULL, 10));
		if (!owner)
			continue;
		if (owner != t) {
			t = owner;
			cap = 0;
		}
		t->columns = arena_grow(&x->s->arena, t->columns, t->n_columns, &cap, sizeof(*t->columns));
		if (!t->columns) {
			PQclear(r);
			return -T2S_ERR_NOMEM;
		}
		struct schema_column *c = &t->columns[t->n_columns++];
		memset(c, 0, sizeof(*c));
		c->name = text(x, r, i, 1);
		c->type = text(x, r, i, 2);
		c->nullable = PQgetvalue(r, i, 3)[0] != 't';
		c->comment = text(x, r, i, 4);
	}
	PQclear(r);
	return 0;
}

/* Rows come one per (constraint, key position), grouped by table, type, name. */
static int read_keys(struct pg_ctx *x)
{
	PGresult *r;
	int rc = query(x, keys_sql, "constraints", &r);
	if (rc < 0)
		return rc;
	int n = PQntuples(r);
	struct introspect_keys keys = {0};
	for (int i = 0; i < n; i++) {
		struct schema_table *t = table_by_oid(x, (unsigned)strtoul(PQgetvalue(r, i, 0), NULL, 10));
		if (!t)
			continue;
		struct introspect_key_row key = {
			.table = t,
			.primary = PQgetvalue(r, i, 1)[0] == 'p',
			.constraint = PQgetvalue(r, i, 2),
			.column = text(x, r, i, 3),
			.ref_schema = text(x, r, i, 4),
			.ref_table = text(x, r, i, 5),
			.ref_column = text(x, r, i, 6),
		};
		if (introspect_add_key(x->s, &keys, &key) < 0)
			goto nomem;
	}
	PQclear(r);
	return 0;
nomem:
	PQclear(r);
	return -T2S_ERR_NOMEM;
}

/* Run sql inside a savepoint; on error roll back to it and return NULL (never fatal). */
static PGresult *guarded_select(struct pg_ctx *x, const char *sql)
{
	if (command(x, "SAVEPOINT t2s_sample") < 0)
		return NULL;
	PGresult *r = PQexec(x->pg, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		PQclear(r);
		PGresult *rb = PQexec(x->pg, "ROLLBACK TO SAVEPOINT t2s_sample");
		PQclear(rb);
		return NULL;
	}
	PGresult *rel = PQexec(x->pg, "RELEASE SAVEPOINT t2s_sample");
	PQclear(rel);
	return r;
}

static char *qualified_name(struct pg_ctx *x, const struct schema_table *t)
{
	char *ns = PQescapeIdentifier(x->pg, t->schema, strlen(t->schema));
	char *rel = PQescapeIdentifier(x->pg, t->name, strlen(t->name));
	char *q = ns && rel ? arena_printf(&x->s->arena, "%s.%s", ns, rel) : NULL;
	PQfreemem(ns);
	PQfreemem(rel);
	return q;
}

static int read_data(struct pg_ctx *x, struct schema_table *t)
{
	char *q = qualified_name(x, t);
	if (!q)
		return -T2S_ERR_NOMEM;
	if (t->row_count < 0 && x->o->row_count_scan_limit > 0) {
		char *sql = arena_printf(&x->s->arena, "SELECT count(*) FROM (SELECT 1 FROM %s LIMIT %ld) s", q,
					 x->o->row_count_scan_limit);
		PGresult *r = sql ? guarded_select(x, sql) : NULL;
		if (r && PQntuples(r) == 1) {
			t->row_count = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
			t->row_count_estimated = t->row_count >= x->o->row_count_scan_limit;
		}
		PQclear(r);
	}
	if (x->o->sample_values <= 0 || x->o->sample_rows <= 0 || t->n_columns == 0)
		return 0;
	char *sql = arena_printf(&x->s->arena, "SELECT * FROM %s LIMIT %d", q, x->o->sample_rows);
	PGresult *r = sql ? guarded_select(x, sql) : NULL;
	if (!r)
		return 0;
	size_t *caps = calloc(t->n_columns, sizeof(*caps));
	int rc = caps ? 0 : -T2S_ERR_NOMEM;
	int rows = PQntuples(r), cols = PQnfields(r);
	for (int i = 0; i < rows && rc == 0; i++)
		for (int j = 0; j < cols && (size_t)j < t->n_columns && rc == 0; j++)
			if (!PQgetisnull(r, i, j) && PQftype(r, j) != 17 /* bytea */)
				rc = introspect_add_sample(x->s, &t->columns[j], &caps[j], x->o, PQgetvalue(r, i, j),
							   (size_t)PQgetlength(r, i, j));
	free(caps);
	PQclear(r);
	return rc;
}

/* The pg_proc facts in columns col .. col + 7 of row i (strings borrowed from r). */
static struct pg_function_info function_row(PGresult *r, int i, int col)
{
	return (struct pg_function_info){
		.schema = PQgetvalue(r, i, col),
		.name = PQgetvalue(r, i, col + 1),
		.nargs = (int)strtol(PQgetvalue(r, i, col + 2), NULL, 10),
		.nargdefaults = (int)strtol(PQgetvalue(r, i, col + 3), NULL, 10),
		.variadic = PQgetvalue(r, i, col + 4)[0] == 't',
		.volatility = PQgetvalue(r, i, col + 5)[0],
		.security_definer = PQgetvalue(r, i, col + 6)[0] == 't',
		.kind = PQgetvalue(r, i, col + 7)[0],
	};
}

/* The rows of routed_sql (borrowed) into f: 0 or -T2S_ERR_NOMEM / -T2S_ERR_INVALID. */
static int add_routed(struct pg_functions *f, PGresult *r)
{
	int rc = 0;
	for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
		struct pg_function_info fn = function_row(r, i, 3);
		if (PQgetvalue(r, i, 0)[0] == 'o')
			rc = pg_functions_add_operator(f, PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), &fn);
		else
			rc = pg_functions_add_cast_target(f, PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), &fn);
	}
	return rc;
}

/* Every pg_proc row, and the operators and casts that run them, into s->pg_functions (sealed). */
static int read_functions(struct pg_ctx *x)
{
	PGresult *r = PQexec(x->pg, functions_sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		return pg_fail(x, r, "functions");
	struct pg_functions *f = pg_functions_new();
	int rc = f ? 0 : -T2S_ERR_NOMEM;
	for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
		struct pg_function_info info = function_row(r, i, 0);
		rc = pg_functions_add(f, &info);
	}
	PQclear(r);
	if (rc == 0) {
		r = PQexec(x->pg, routed_sql);
		if (PQresultStatus(r) != PGRES_TUPLES_OK) {
			pg_functions_free(f);
			return pg_fail(x, r, "operators and casts");
		}
		rc = add_routed(f, r);
		PQclear(r);
	}
	if (rc == 0)
		rc = pg_functions_seal(f);
	if (rc < 0) {
		pg_functions_free(f);
		return rc == -T2S_ERR_NOMEM ? rc : t2s_error_set(x->err, T2S_ERR_INTERNAL, "unreadable pg_proc row");
	}
	x->s->pg_functions = f;
	return 0;
}

static const char role_sql[] =
	"SELECT current_user, r.rolsuper, "
	"(SELECT string_agg(g, ', ' ORDER BY g) FROM unnest(ARRAY['pg_write_server_files', 'pg_read_server_files', "
	"'pg_execute_server_program']) g WHERE pg_has_role(current_user, g, 'MEMBER')), "
	"(SELECT p || ' on ' || CASE c.relkind WHEN 'v' THEN 'view ' WHEN 'm' THEN 'materialized view ' "
	"WHEN 'f' THEN 'foreign table ' ELSE 'table ' END || quote_ident(n.nspname) || '.' || quote_ident(c.relname) "
	"FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
	"CROSS JOIN unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) p "
	"WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
	"AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%' "
	"AND has_table_privilege(c.oid, p) ORDER BY n.nspname, c.relname, p LIMIT 1) "
	"FROM pg_roles r WHERE r.rolname = current_user";

int introspect_pg_role(struct db_conn *c, long timeout_ms, char *ret_privilege, size_t size, struct t2s_error *err)
{
	struct pg_ctx x = {.pg = c->pg, .err = err};
	char begin[128];
	snprintf(begin, sizeof(begin), "BEGIN READ ONLY; SET LOCAL statement_timeout = %ld", timeout_ms);
	int rc = command(&x, begin);
	if (rc < 0)
		return rc;
	PGresult *r = PQexec(c->pg, role_sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = pg_fail(&x, r, "role privileges");
	} else if (PQntuples(r) != 1) {
		PQclear(r);
		rc = t2s_error_set(err, T2S_ERR_SQL_FAILED, "introspection failed (role privileges): role not found");
	} else {
		const char *role = PQgetvalue(r, 0, 0);
		if (PQgetvalue(r, 0, 1)[0] == 't')
			snprintf(ret_privilege, size, "role \"%s\" is a superuser", role);
		else if (!PQgetisnull(r, 0, 2))
			snprintf(ret_privilege, size, "role \"%s\" is a member of %s", role, PQgetvalue(r, 0, 2));
		else if (!PQgetisnull(r, 0, 3))
			snprintf(ret_privilege, size, "role \"%s\" has %s", role, PQgetvalue(r, 0, 3));
		else
			snprintf(ret_privilege, size, "%s", "");
		PQclear(r);
	}
	PGresult *end = PQexec(c->pg, "ROLLBACK");
	PQclear(end);
	return rc;
}

static char *join_schemas(const struct introspect_options *o)
{
	if (!o->pg_schemas || o->n_pg_schemas == 0)
		return NULL;
	struct strbuf sb;
	strbuf_init(&sb, 1 << 20);
	for (size_t i = 0; i < o->n_pg_schemas; i++)
		if ((i && strbuf_adds(&sb, "\x1f") < 0) || strbuf_adds(&sb, o->pg_schemas[i]) < 0) {
			strbuf_release(&sb);
			return NULL;
		}
	return strbuf_detach(&sb, NULL);
}

int introspect_pg(struct db_conn *c, const struct introspect_options *o, struct schema **ret,
		  struct t2s_error *err)
{
	struct schema *s = schema_new(o->database, c->engine);
	if (!s)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	struct pg_ctx x = {.pg = c->pg, .o = o, .s = s, .err = err, .schema_filter = join_schemas(o)};
	char begin[128];
	snprintf(begin, sizeof(begin), "BEGIN READ ONLY; SET LOCAL statement_timeout = %ld", o->timeout_ms);
	int rc = (o->n_pg_schemas && !x.schema_filter) ? -T2S_ERR_NOMEM : command(&x, begin);
	if (rc == 0)
		rc = read_tables(&x);
	if (rc == 0)
		rc = read_columns(&x);
	if (rc == 0)
		rc = read_keys(&x);
	if (rc == 0)
		rc = read_functions(&x);
	for (size_t i = 0; rc == 0 && i < s->n_tables; i++)
		rc = read_data(&x, &s->tables[i]);
	PGresult *end = PQexec(c->pg, "ROLLBACK");
	PQclear(end);
	free(x.schema_filter);
	free(x.oids);
	free(x.by_oid);
	if (rc < 0) {
		if (rc == -T2S_ERR_NOMEM)
			t2s_error_set(err, T2S_ERR_NOMEM, "out of memory during introspection");
		schema_unref(s);
		return rc;
	}
	if (schema_finish(s) < 0) {
		schema_unref(s);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory during introspection");
	}
	*ret = s;
	return 0;
}
