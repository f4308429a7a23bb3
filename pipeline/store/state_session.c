/*
 * state_session.c - what every call of the state store is made of (see
 * state_store_internal.h): input checks, sessions (one transaction on one
 * connection), parameterised statements in either engine, error mapping,
 * and result rows read into a record list.
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
#include <libpq-fe.h>
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

/* ---- error mapping ------------------------------------------------------- */

int store_sqlite_failure(struct state_store *s, int rc, struct t2s_error *err)
{
	const char *msg = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
	switch (rc & 0xff) {
	case SQLITE_NOMEM:
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory in the state store");
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE,
				     "state store is locked by another writer (waited %ld ms)", s->opt.busy_timeout_ms);
	case SQLITE_IOERR:
	case SQLITE_FULL:
	case SQLITE_CANTOPEN:
	case SQLITE_READONLY:
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
	case SQLITE_PERM:
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "state store file unusable: %s", msg);
	default:
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store: %s", msg);
	}
}

/* First line of a libpq message into buf. */
static void first_line(const char *msg, char *buf, size_t size)
{
	snprintf(buf, size, "%s", msg && *msg ? msg : "unknown error");
	buf[strcspn(buf, "\n")] = '\0';
}

/*
 * Map a failed result (r may be NULL) to a code.  Only the primary message
 * is shown: details may quote stored values.
 */
static int pg_failure(PGconn *pg, PGresult *r, struct t2s_error *err)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *primary = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	char msg[256];
	first_line(primary ? primary : PQerrorMessage(pg), msg, sizeof(msg));
	if (PQstatus(pg) != CONNECTION_OK || (state && strncmp(state, "08", 2) == 0))
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "state store connection failed: %s", msg);
	if (state && strcmp(state, "57014") == 0)
		return t2s_error_set(err, T2S_ERR_TIMEOUT, "state store statement stopped after the time limit");
	if (state && strcmp(state, "55P03") == 0)
		return t2s_error_set(err, T2S_ERR_TIMEOUT, "state store lock wait timed out");
	if (state && (strncmp(state, "53", 2) == 0 || strncmp(state, "57P", 3) == 0 || strcmp(state, "40001") == 0 ||
		      strcmp(state, "40P01") == 0))
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "state store unavailable: %s", msg);
	return t2s_error_set(err, T2S_ERR_INTERNAL, "state store: %s", msg);
}

/* ---- sessions ------------------------------------------------------------ */

/* Run a parameterless SQL script (may hold several statements). */
int store_session_script(struct session *x, const char *sql, struct t2s_error *err)
{
	struct state_store *s = x->s;
	if (s->engine == DB_ENGINE_SQLITE) {
		int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
		return rc == SQLITE_OK ? 0 : store_sqlite_failure(s, rc, err);
	}
	PGresult *r = PQexec(x->conn->pg, sql);
	int rc = 0;
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		rc = pg_failure(x->conn->pg, r, err);
	PQclear(r);
	return rc;
}

int store_session_begin(struct state_store *s, bool write, struct session *x, struct t2s_error *err)
{
	x->s = s;
	x->conn = NULL;
	x->write = false;
	if (s->engine == DB_ENGINE_SQLITE) {
		pthread_mutex_lock(&s->lock);
		/* A file deleted or replaced under us would take writes that vanish at the next start. */
		int moved = 0;
		if (write && sqlite3_file_control(s->db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK && moved) {
			pthread_mutex_unlock(&s->lock);
			return t2s_error_set(err, T2S_ERR_UNAVAILABLE,
					     "the state store file %s was deleted or replaced while open: writes are "
					     "refused until the service restarts", s->sqlite_path);
		}
		int rc = sqlite3_exec(s->db, write ? "BEGIN IMMEDIATE" : "BEGIN", NULL, NULL, NULL);
		if (rc != SQLITE_OK) {
			int code = store_sqlite_failure(s, rc, err);
			pthread_mutex_unlock(&s->lock);
			return code;
		}
		return 0;
	}
	struct t2s_error pool_err = {0};
	int rc = db_pool_acquire(&s->pool, &x->conn, &pool_err);
	if (rc < 0)
		return t2s_error_set(err, pool_err.code, "state store: %s", pool_err.message);
	rc = store_session_script(x, s->pg_begin, err);
	if (rc < 0) {
		db_pool_put(&s->pool, x->conn, PQstatus(x->conn->pg) != CONNECTION_OK);
		x->conn = NULL;
	}
	return rc;
}

int store_session_close(struct session *x, int rc, struct t2s_error *err)
{
	struct state_store *s = x->s;
	rc = store_session_end(x, rc, err);
	if (x->write)
		store_note_write(s, rc, err);
	return rc;
}

int store_session_end(struct session *x, int rc, struct t2s_error *err)
{
	struct state_store *s = x->s;
	if (s->engine == DB_ENGINE_SQLITE) {
		if (rc == 0) {
			int src = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
			if (src != SQLITE_OK)
				rc = store_sqlite_failure(s, src, err);
		}
		/* SQLite rolls back by itself after some errors: only roll back what is open. */
		if (!sqlite3_get_autocommit(s->db))
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		pthread_mutex_unlock(&s->lock);
		return rc;
	}
	if (rc == 0)
		rc = store_session_script(x, "COMMIT", err);
	/* db_pool_put rolls back an open transaction and resets the session. */
	db_pool_put(&s->pool, x->conn, PQstatus(x->conn->pg) != CONNECTION_OK);
	x->conn = NULL;
	return rc;
}

/* Feed the current SQLite row to fn. */
static int sqlite_row(sqlite3_stmt *st, row_fn fn, void *ctx, struct t2s_error *err)
{
	const char *vals[ROW_COLS_MAX];
	size_t lens[ROW_COLS_MAX];
	int ncols = sqlite3_column_count(st);
	if (ncols > ROW_COLS_MAX)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store statement returns too many columns");
	for (int i = 0; i < ncols; i++) {
		if (sqlite3_column_type(st, i) == SQLITE_NULL) {
			vals[i] = NULL;
			lens[i] = 0;
			continue;
		}
		vals[i] = (const char *)sqlite3_column_text(st, i);
		lens[i] = (size_t)sqlite3_column_bytes(st, i);
		if (!vals[i])
			return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading the state store");
	}
	return fn(ctx, ncols, vals, lens, err);
}

static int sqlite_exec_params(struct state_store *s, const char *sql, const struct param *p, int np, row_fn fn,
			      void *ctx, int64_t *ret_changes, struct t2s_error *err)
{
	sqlite3_stmt *st = NULL;
	int src = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (src != SQLITE_OK)
		return store_sqlite_failure(s, src, err);
	for (int i = 0; i < np; i++) {
		char name[16];
		snprintf(name, sizeof(name), "$%d", i + 1);
		int idx = sqlite3_bind_parameter_index(st, name);
		if (idx == 0)
			continue; /* not used by this dialect's text */
		src = p[i].is_num ? sqlite3_bind_int64(st, idx, p[i].num)
				  : sqlite3_bind_text(st, idx, p[i].text, -1, SQLITE_STATIC);
		if (src != SQLITE_OK) {
			sqlite3_finalize(st);
			return store_sqlite_failure(s, src, err);
		}
	}
	int rc = 0;
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		if (!fn)
			continue;
		if ((rc = sqlite_row(st, fn, ctx, err)) < 0)
			break;
	}
	if (rc == 0 && src != SQLITE_DONE)
		rc = store_sqlite_failure(s, src, err);
	if (rc == 0 && ret_changes)
		*ret_changes = sqlite3_changes64(s->db);
	sqlite3_finalize(st);
	return rc;
}

static int pg_exec_params(PGconn *pg, const char *sql, const struct param *p, int np, row_fn fn, void *ctx,
			  int64_t *ret_changes, struct t2s_error *err)
{
	const char *values[ROW_COLS_MAX];
	char nums[ROW_COLS_MAX][24];
	if (np > ROW_COLS_MAX)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store statement has too many parameters");
	for (int i = 0; i < np; i++) {
		if (p[i].is_num) {
			snprintf(nums[i], sizeof(nums[i]), "%lld", (long long)p[i].num);
			values[i] = nums[i];
		} else {
			values[i] = p[i].text;
		}
	}
	PGresult *r = PQexecParams(pg, sql, np, NULL, values, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);
	int rc = 0;
	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
		rc = pg_failure(pg, r, err);
		PQclear(r);
		return rc;
	}
	int ncols = PQnfields(r);
	if (fn && ncols > ROW_COLS_MAX)
		rc = t2s_error_set(err, T2S_ERR_INTERNAL, "state store statement returns too many columns");
	for (int row = 0; fn && rc == 0 && row < PQntuples(r); row++) {
		const char *vals[ROW_COLS_MAX];
		size_t lens[ROW_COLS_MAX];
		for (int i = 0; i < ncols; i++) {
			bool null = PQgetisnull(r, row, i);
			vals[i] = null ? NULL : PQgetvalue(r, row, i);
			lens[i] = null ? 0 : (size_t)PQgetlength(r, row, i);
		}
		rc = fn(ctx, ncols, vals, lens, err);
	}
	if (rc == 0 && ret_changes) {
		const char *n = PQcmdTuples(r);
		*ret_changes = 0;
		if (n && *n)
			rc = store_parse_i64(n, ret_changes, err);
	}
	PQclear(r);
	return rc;
}

int store_session_exec(struct session *x, const char *sql_lite, const char *sql_pg, const struct param *p,
			int np, row_fn fn, void *ctx, int64_t *ret_changes, struct t2s_error *err)
{
	if (x->s->engine == DB_ENGINE_SQLITE)
		return sql_lite ? sqlite_exec_params(x->s, sql_lite, p, np, fn, ctx, ret_changes, err) : 0;
	const char *sql = sql_pg ? sql_pg : sql_lite;
	return sql ? pg_exec_params(x->conn->pg, sql, p, np, fn, ctx, ret_changes, err) : 0;
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

int store_exec_one(struct state_store *s, bool write, const char *sql_lite, const char *sql_pg,
		   const struct param *p, int np, int64_t *ret_changes, struct t2s_error *err)
{
	struct session x;
	int rc = store_session_open(s, write, &x, err);
	if (rc < 0)
		return rc;
	rc = store_session_exec(&x, sql_lite, sql_pg, p, np, NULL, NULL, ret_changes, err);
	return store_session_close(&x, rc, err);
}

/* ---- result rows into a record list --------------------------------------- */

/* Set the field f of item from a value (see enum field_type). */
static int set_field(struct rows *r, char *item, const struct field *f, const char *v, size_t len, bool *ok,
		     struct t2s_error *err)
{
	void *at = item + f->offset;
	int64_t num = 0;
	switch (f->type) {
	case FIELD_TEXT:
		*(const char **)at = store_dup(&r->arena, v, len, ok);
		return 0;
	case FIELD_COLUMN:
		*(const char **)at = store_dup_column(&r->arena, v, len, ok);
		return 0;
	case FIELD_I64:
		return v ? store_parse_i64(v, at, err) : 0;
	case FIELD_BOOL: {
		int rc = v ? store_parse_i64(v, &num, err) : 0;
		*(bool *)at = num != 0;
		return rc;
	}
	}
	return t2s_error_set(err, T2S_ERR_INTERNAL, "state store: unknown field type");
}

/* Row callback: one more item of r->kind. */
static int rows_add(void *ctx, int ncols, const char *const *vals, const size_t *lens, struct t2s_error *err)
{
	struct rows *r = ctx;
	const struct row_kind *k = r->kind;
	if (ncols != k->ncols)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store returned an unexpected %s row", k->row_name);
	char *v = arena_grow(&r->arena, r->items, r->n, &r->cap, k->size);
	if (!v)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading %s", k->list_name);
	r->items = v;
	char *item = v + r->n * k->size;
	memset(item, 0, k->size);
	bool ok = true;
	int rc = 0;
	for (int i = 0; rc == 0 && i < ncols; i++)
		rc = set_field(r, item, &k->fields[i], vals[i], lens[i], &ok, err);
	if (rc == 0 && !ok)
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading %s", k->list_name);
	if (rc == 0)
		r->n++;
	return rc;
}

int store_rows_read(struct state_store *s, const struct row_kind *kind, const struct rows_query *q,
		    const struct param *p, const char *absent, void *ret, struct t2s_error *err)
{
	struct rows r = {.kind = kind};
	struct session x;
	int rc = store_session_open(s, false, &x, err);
	if (rc < 0)
		return rc;
	if (q->count_lite)
		rc = store_session_exec(&x, q->count_lite, q->count_pg, p, q->count_np, store_row_i64, &r.total, NULL,
					err);
	if (rc == 0)
		rc = store_session_exec(&x, q->lite, q->pg, p, q->np, rows_add, &r, NULL, err);
	rc = store_session_close(&x, rc, err);
	if (rc == 0 && absent && r.n == 0)
		rc = t2s_error_set(err, T2S_ERR_NOT_FOUND, "%s", absent);
	if (rc < 0) {
		arena_release(&r.arena);
		return rc;
	}
	if (!q->count_lite)
		r.total = (int64_t)r.n;
	kind->take(&r, ret);
	return 0;
}
