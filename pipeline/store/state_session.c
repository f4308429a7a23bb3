/*
 * state_session.c - what every call of the state store is made of (see
 * state_store_internal.h), at the bottom of the folder: input checks,
 * values read back, and sessions (one transaction on one connection) and
 * parameterised statements, run by the store's backend
 * (state_backend_sqlite.c, state_backend_pg.c).
 *
 * Both backends share one shape: every API call opens a session (SQLite: the
 * store's mutex plus BEGIN or BEGIN IMMEDIATE; Postgres: a pooled connection
 * plus BEGIN with local search_path and timeouts), runs parameterised
 * statements through store_session_exec, and ends with COMMIT or ROLLBACK.
 * Statements are written once with $1, $2... placeholders, which both
 * engines accept (SQLite binds them by name); where the dialects differ a
 * call passes a Postgres variant beside the SQLite text.  Result rows reach a
 * callback as NUL-terminated text (NULL for SQL NULL).
 */
#include "pipeline/store/state_store_internal.h"

#include "common/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------- */

int store_check_text(const char *field, const char *v, size_t max, bool allow_empty, struct t2s_error *err)
{
	if (!v)
		return t2s_error_set(err, T2S_ERR_INVALID, "%s is required", field);
	size_t n = strnlen(v, max + 1);
	if (n == 0 && !allow_empty)
		return t2s_error_set(err, T2S_ERR_INVALID, "%s must not be empty", field);
	if (n > max)
		return t2s_error_set(err, T2S_ERR_INVALID, "%s is longer than the limit of %zu bytes", field, max);
	if (!utf8_valid(v, n))
		return t2s_error_set(err, T2S_ERR_INVALID, "%s is not valid UTF-8", field);
	return 0;
}

int store_check_database(const char *database, struct t2s_error *err)
{
	return store_check_text("database", database, STATE_DATABASE_NAME_MAX, false, err);
}

/* Table name required, column optional (NULL: the table itself) but never empty. */
int store_check_target(const char *table, const char *column, struct t2s_error *err)
{
	int rc = store_check_text("table", table, STATE_IDENT_MAX, false, err);
	if (rc == 0 && column)
		rc = store_check_text("column", column, STATE_IDENT_MAX, false, err);
	return rc;
}

int store_check_page(long limit, long offset, struct t2s_error *err)
{
	if (limit < 1 || limit > STATE_LIST_LIMIT_MAX)
		return t2s_error_set(err, T2S_ERR_INVALID, "limit must be between 1 and %ld", STATE_LIST_LIMIT_MAX);
	if (offset < 0)
		return t2s_error_set(err, T2S_ERR_INVALID, "offset must not be negative");
	return 0;
}

/* Strict decimal int64 of text from the database. */
int store_parse_i64(const char *v, int64_t *ret, struct t2s_error *err)
{
	if (!v || !*v)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store returned an empty number");
	char *end = NULL;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (errno || *end)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store returned a malformed number");
	*ret = (int64_t)x;
	return 0;
}

/* Row callback: the first column as an int64 into *(int64_t *)ctx (NULL reads as 0). */
int store_row_i64(void *ctx, int ncols, const char *const *vals, const size_t *lens, struct t2s_error *err)
{
	(void)lens;
	if (ncols < 1)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store returned no column");
	if (!vals[0]) {
		*(int64_t *)ctx = 0;
		return 0;
	}
	return store_parse_i64(vals[0], ctx, err);
}

/* Copy of a value into the arena ("" stays ""; NULL stays NULL); *ok is cleared on OOM. */
const char *store_dup(struct arena *a, const char *v, size_t len, bool *ok)
{
	if (!v)
		return NULL;
	char *d = arena_strndup(a, v, len);
	if (!d)
		*ok = false;
	return d;
}

/* A stored column name as the API shows it: '' (the table itself) becomes NULL. */
const char *store_dup_column(struct arena *a, const char *v, size_t len, bool *ok)
{
	return v && len ? store_dup(a, v, len, ok) : NULL;
}

void store_list_release(struct arena *arena, void *l, size_t size)
{
	arena_release(arena);
	memset(l, 0, size);
}

/* ---- sessions ------------------------------------------------------------ */

/* Run a parameterless SQL script (may hold several statements). */
int store_session_script(struct session *x, const char *sql, struct t2s_error *err)
{
	return x->s->backend->script(x, sql, err);
}

int store_session_begin(struct state_store *s, bool write, struct session *x, struct t2s_error *err)
{
	x->s = s;
	x->conn = NULL;
	x->write = false;
	return s->backend->begin(x, write, err);
}

int store_session_end(struct session *x, int rc, struct t2s_error *err)
{
	return x->s->backend->end(x, rc, err);
}

int store_session_exec(struct session *x, const char *sql_lite, const char *sql_pg, const struct param *p,
			int np, row_fn fn, void *ctx, int64_t *ret_changes, struct t2s_error *err)
{
	return x->s->backend->exec(x, sql_lite, sql_pg, p, np, fn, ctx, ret_changes, err);
}

int store_lock_database(struct session *x, int kind, const char *database, struct t2s_error *err)
{
	struct param p[] = {P_NUM(kind), P_TEXT(database)};
	return store_session_exec(x, NULL, "SELECT pg_advisory_xact_lock($1::int4, hashtext($2))::text", p, 2, NULL, NULL,
			    NULL, err);
}

int store_check_quota(struct session *x, int lock, const char *table, const char *database, long max,
		      const char *what, struct t2s_error *err)
{
	char sql[128];
	struct param p = P_TEXT(database);
	int64_t count = 0;
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE db_name = $1", table);
	int rc = store_lock_database(x, lock, database, err);
	if (rc == 0)
		rc = store_session_exec(x, sql, NULL, &p, 1, store_row_i64, &count, NULL, err);
	if (rc == 0 && count >= max)
		rc = t2s_error_set(err, T2S_ERR_QUOTA,
				   "the database already holds the maximum of %ld %s; delete some first", max, what);
	return rc;
}
