/*
 * exec_sqlite.c - run one user statement on a guarded read-only SQLite
 * connection (see exec.h for the layers).
 *
 * What one statement can make this process hold is bounded while it runs,
 * not after: no string, blob or row longer than the result budget
 * (SQLITE_LIMIT_LENGTH, so printf('%.*c', 2147483647, 'x') fails at once
 * instead of building gigabytes), everything the connection allocates under
 * the statement memory ceiling (sqlite_guard_memory_*), and each result row
 * dropped as soon as the values converted so far pass the byte budget.
 */
#include "pipeline/sql/exec.h"

#include "common/utf8.h"
#include "pipeline/sql/sql_engine.h"
#include "pipeline/sql/sql_text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const query_keywords[] = {"SELECT", "WITH", "VALUES", NULL};

/* Statements SQLite knows that are not queries: refused by name (anything else is left to the parser). */
static const char *const other_statements[] = {
	"INSERT", "UPDATE", "DELETE", "REPLACE", "UPSERT", "CREATE", "DROP", "ALTER", "ATTACH", "DETACH",
	"PRAGMA", "VACUUM", "REINDEX", "ANALYZE", "BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT",
	"RELEASE", "EXPLAIN", NULL,
};

static bool word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || (c & 0x80);
}

/* Where sql names name as a whole word, ignoring case; NULL when it does not. */
static const char *find_word(const char *sql, const char *name)
{
	size_t n = strlen(name);
	for (const char *at = sql && n ? strcasestr(sql, name) : NULL; at; at = strcasestr(at + 1, name))
		if ((at == sql || !word_char(at[-1])) && !word_char(at[n]))
			return at;
	return NULL;
}

/*
 * The name a refusal of a hidden table gives (SQLite reports a missing
 * table as the statement wrote it, the authorizer as the schema does): the
 * table when the statement names it, else the view it was read through
 * (never a name the statement does not hold), each as sql spells it.
 * Static storage: one statement at a time per thread.
 */
static const char *hidden_name(const char *sql, const struct sqlite_guard *g)
{
	static _Thread_local char spelled[128];
	const char *at = find_word(sql, g->hidden_table), *name = g->hidden_table;
	if (!at && g->hidden_via[0] && (at = find_word(sql, g->hidden_via)) != NULL)
		name = g->hidden_via;
	snprintf(spelled, sizeof(spelled), "%.*s", (int)strlen(name), at ? at : name);
	return spelled;
}

/*
 * Why preparing or stepping failed: refused by the guard, timed out, waited
 * too long for a lock (a timeout, as on PostgreSQL), over a size or memory
 * limit, or a plain SQL error.
 */
static int sqlite_failure(struct db_conn *c, const char *sql, int rc, bool preparing, const struct exec_limits *lim,
			  struct t2s_error *err)
{
	long timeout_ms = lim->timeout_ms;
	if (c->guard.hidden_table[0]) /* as SQLite says of a table it does not have: no existence oracle */
		return t2s_error_set(err, T2S_ERR_SQL_INVALID, "no such table: %s", hidden_name(sql, &c->guard));
	if (c->guard.denied[0])
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "%s", c->guard.denied);
	if (c->guard.was_cancelled)
		return t2s_error_set(err, T2S_ERR_CANCELLED, "statement cancelled: its request was abandoned");
	if (c->guard.timed_out || (rc & 0xff) == SQLITE_INTERRUPT)
		return t2s_error_set(err, T2S_ERR_TIMEOUT, "statement stopped after the time limit of %ld ms",
				     timeout_ms);
	if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
		return t2s_error_set(err, T2S_ERR_TIMEOUT, "statement waited too long for a lock: %s",
				     sqlite3_errmsg(c->sqlite));
	if ((rc & 0xff) == SQLITE_TOOBIG)
		return t2s_error_set(err, T2S_ERR_SQL_FAILED,
				     "a value or row would be longer than %d bytes, the limit set by "
				     "execution.max_result_bytes",
				     sqlite3_limit(c->sqlite, SQLITE_LIMIT_LENGTH, -1));
	if ((rc & 0xff) == SQLITE_NOMEM && lim->max_statement_memory_bytes)
		return t2s_error_set(err, T2S_ERR_SQL_FAILED,
				     "statement needs more than %zu bytes of memory, the limit set by "
				     "execution.max_statement_memory_bytes",
				     lim->max_statement_memory_bytes);
	/* A schema change between prepare and step re-prepares inside step: names may not resolve then. */
	const char *msg = sqlite3_errmsg(c->sqlite);
	bool names = strncmp(msg, "no such ", 8) == 0;
	return t2s_error_set(err, preparing || names ? T2S_ERR_SQL_INVALID : T2S_ERR_SQL_FAILED, "%s", msg);
}

static int check_leading_keyword(const char *sql, struct t2s_error *err)
{
	char kw[16];
	sql_leading_keyword(sql, kw, sizeof(kw));
	if (!kw[0] && !*sql_skip_space_and_comments(sql))
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "empty statement");
	if (!kw[0])
		return t2s_error_set(err, T2S_ERR_SQL_INVALID, "statement does not start with a keyword");
	for (const char *const *k = query_keywords; *k; k++)
		if (strcmp(kw, *k) == 0)
			return 0;
	for (const char *const *k = other_statements; *k; k++)
		if (strcmp(kw, *k) == 0)
			return t2s_error_set(err, T2S_ERR_SQL_REJECTED,
					     "only SELECT, WITH and VALUES statements are allowed, got %s", kw);
	return t2s_error_set(err, T2S_ERR_SQL_INVALID, "syntax error: %s is not a statement", kw);
}

/* One result value as JSON; *bytes grows by its approximate size. */
static json_t *value_json(sqlite3_stmt *st, int i, size_t *bytes)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		*bytes += 8;
		return json_integer(sqlite3_column_int64(st, i));
	case SQLITE_FLOAT: {
		double d = sqlite3_column_double(st, i);
		*bytes += 8;
		return isfinite(d) ? json_real(d) : json_null();
	}
	case SQLITE_TEXT: {
		size_t n = (size_t)sqlite3_column_bytes(st, i);
		*bytes += n + 2;
		return utf8_json_string((const char *)sqlite3_column_text(st, i), n);
	}
	case SQLITE_BLOB: {
		size_t n = (size_t)sqlite3_column_bytes(st, i);
		const unsigned char *b = sqlite3_column_blob(st, i);
		char hex[2 * 64 + 32];
		size_t shown = n < 64 ? n : 64;
		for (size_t k = 0; k < shown; k++)
			snprintf(hex + 2 * k, 3, "%02x", b[k]);
		hex[2 * shown] = '\0';
		*bytes += 2 * shown + 16;
		return json_sprintf("\\x%s%s", hex, n > shown ? "..." : "");
	}
	default:
		*bytes += 4;
		return json_null();
	}
}

/* Checks and prepares sql as one read-only query; on success *ret is the statement (caller finalizes). */
static int prepare_checked(struct db_conn *c, const char *sql, const struct exec_limits *lim, sqlite3_stmt **ret,
			   struct t2s_error *err)
{
	int rc = check_leading_keyword(sql, err);
	if (rc < 0)
		return rc;
	sqlite_guard_arm(&c->guard, SQLITE_GUARD_QUERY, lim->timeout_ms);
	if (lim->cancelled)
		sqlite_guard_cancel_on(&c->guard, lim->cancelled, lim->cancel_ctx);
	/* No single value or row longer than the whole result may be built. */
	size_t length = lim->max_result_bytes + 1024;
	sqlite3_limit(c->sqlite, SQLITE_LIMIT_LENGTH,
		      length < (size_t)SQLITE_GUARD_LENGTH_DEFAULT ? (int)length : SQLITE_GUARD_LENGTH_DEFAULT);
	/* A writer elsewhere may hold the file lock: wait like Postgres' lock_timeout. */
	sqlite3_busy_timeout(c->sqlite, (int)(lim->lock_timeout_ms < lim->timeout_ms ? lim->lock_timeout_ms : lim->timeout_ms));
	sqlite3_stmt *st = NULL;
	const char *tail = NULL;
	int src = sqlite3_prepare_v3(c->sqlite, sql, -1, 0, &st, &tail);
	if (src != SQLITE_OK)
		return sqlite_failure(c, sql, src, true, lim, err);
	if (!st)
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "empty statement");
	if (tail && *sql_skip_space_and_comments(tail)) {
		sqlite3_finalize(st);
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "exactly one statement is allowed");
	}
	if (!sqlite3_stmt_readonly(st)) {
		sqlite3_finalize(st);
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "statement is not read-only");
	}
	*ret = st;
	return 0;
}

/* Undo the per-statement settings (the connection also serves introspection and probes). */
static void statement_done(struct db_conn *c)
{
	sqlite3_limit(c->sqlite, SQLITE_LIMIT_LENGTH, SQLITE_GUARD_LENGTH_DEFAULT);
	sqlite_guard_cancel_on(&c->guard, NULL, NULL); /* its context ends with the statement */
	sqlite_guard_memory_end(NULL);
}

int exec_sqlite_validate(struct db_conn *c, const char *sql, const struct exec_limits *lim, struct t2s_error *err)
{
	sqlite3_stmt *st;
	sqlite_guard_memory_begin(lim->max_statement_memory_bytes);
	int rc = prepare_checked(c, sql, lim, &st, err);
	if (rc == 0)
		sqlite3_finalize(st);
	statement_done(c);
	return rc;
}

static int run_statement(struct db_conn *c, const char *sql, const struct exec_limits *lim,
			 struct exec_result *res, struct t2s_error *err);

int exec_sqlite(struct db_conn *c, const char *sql, const struct exec_limits *lim, struct exec_result *res,
		struct t2s_error *err)
{
	sqlite_guard_memory_begin(lim->max_statement_memory_bytes);
	int rc = run_statement(c, sql, lim, res, err);
	statement_done(c);
	return rc;
}

static int run_statement(struct db_conn *c, const char *sql, const struct exec_limits *lim,
			 struct exec_result *res, struct t2s_error *err)
{
	sqlite3_stmt *st;
	int rc = prepare_checked(c, sql, lim, &st, err);
	if (rc < 0)
		return rc;
	int ncols = sqlite3_column_count(st), src;
	for (int i = 0; i < ncols; i++) {
		const char *name = sqlite3_column_name(st, i);
		json_array_append_new(res->columns, utf8_json_string(name ? name : "", name ? strlen(name) : 0));
		const char *type = sqlite3_column_decltype(st, i); /* NULL for expressions */
		json_array_append_new(res->column_types, type ? utf8_json_string(type, strlen(type)) : json_null());
	}
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *row = json_array();
		size_t bytes = 4;
		for (int i = 0; i < ncols && exec_result_row_fits(res, lim, bytes); i++)
			json_array_append_new(row, value_json(st, i, &bytes));
		if (!exec_result_accept_row(res, lim, row, bytes))
			break;
	}
	if (src != SQLITE_ROW && src != SQLITE_DONE)
		rc = sqlite_failure(c, sql, src, false, lim, err);
	sqlite3_finalize(st);
	return rc;
}

/* The guard's table filter for a caller's view (schema_grant.h): SQLite names main's tables bare. */
static bool view_allows(void *ctx, const char *table)
{
	return schema_view_allows(ctx, NULL, table);
}

/* The guard on the connection is the scope, limited to the view's tables when scope->schema is one. */
static void limit_tables(struct db_conn *c, const struct exec_scope *scope)
{
	bool view = schema_is_view(scope->schema);
	sqlite_guard_tables(&c->guard, view ? view_allows : NULL, view ? scope->schema : NULL);
}

static int lite_validate(struct db_conn *c, const struct exec_scope *scope, const char *sql,
			 const struct exec_limits *lim, struct t2s_error *err)
{
	limit_tables(c, scope);
	int rc = exec_sqlite_validate(c, sql, lim, err);
	sqlite_guard_tables(&c->guard, NULL, NULL);
	return rc;
}

static int lite_run(struct db_conn *c, const struct exec_scope *scope, const char *sql, const struct exec_limits *lim,
		    struct exec_result *res, struct t2s_error *err)
{
	limit_tables(c, scope);
	int rc = exec_sqlite(c, sql, lim, res, err);
	sqlite_guard_tables(&c->guard, NULL, NULL);
	return rc;
}

const struct sql_engine sql_engine_sqlite = {
	.db = &db_engine_sqlite,
	.dialect = SQL_DIALECT_SQLITE,
	.needs_model = false,
	.enforces_views = true,
	.validate = lite_validate,
	.run = lite_run,
};
