/*
 * state_store.c - durable examples, description overrides and cached
 * descriptions in SQLite or PostgreSQL (see state_store.h).
 *
 * Both backends share one shape: every API call opens a session (SQLite: the
 * store's mutex plus BEGIN or BEGIN IMMEDIATE; Postgres: a pooled connection
 * plus BEGIN with local search_path and timeouts), runs parameterised
 * statements through session_exec, and ends with COMMIT or ROLLBACK.
 * Statements are written once with $1, $2... placeholders, which both
 * engines accept (SQLite binds them by name); where the dialects differ a
 * call passes a Postgres variant beside the SQLite text.  Result rows reach a
 * callback as NUL-terminated text (NULL for SQL NULL).
 *
 * Stored shapes: a table-level override or description has column_name ''
 * (a NULL inside a primary key would not be unique); the API maps NULL <-> ''.
 * Timestamps are RFC 3339 UTC text in SQLite and timestamptz in Postgres.
 */
#include "pipeline/store/state_store.h"

#include "common/clock.h"
#include "common/utf8.h"
#include "pipeline/db/db.h"

#include <errno.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BUSY_TIMEOUT_MS 5000L
#define DEFAULT_STATEMENT_TIMEOUT_MS 10000L
#define DEFAULT_POOL_SIZE 4
#define DEFAULT_POOL_WAIT_MS 5000L
#define DEFAULT_CONNECT_TIMEOUT_S 5L
#define DEFAULT_PG_SCHEMA "text2sqld"

/* Reopening a store that was unavailable: first retry after this, doubling up to the maximum. */
#define REOPEN_BACKOFF_FIRST_MS 500.0
#define REOPEN_BACKOFF_MAX_MS 30000.0
#define PG_SCHEMA_NAME_MAX 63u

/* Advisory lock class ids (first key of pg_advisory_xact_lock(int4, int4)): "t2s" + kind. */
#define LOCK_MIGRATE 0x74327301
#define LOCK_EXAMPLES 0x74327302
#define LOCK_OVERRIDES 0x74327303

/* Columns of the widest result row any statement here returns. */
#define ROW_COLS_MAX 8

/* Current time and timestamp rendering in each dialect. */
#define NOW_LITE "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
#define TS_PG(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

struct state_store {
	enum db_engine engine;
	struct state_store_options opt; /* defaults applied; pg_schema points at pg_schema_buf */
	char pg_schema_buf[PG_SCHEMA_NAME_MAX + 1];
	char pg_begin[256]; /* BEGIN plus the SET LOCALs of every Postgres session */
	/* SQLite: one connection, one user at a time. */
	pthread_mutex_t lock;
	bool lock_ready;
	sqlite3 *db;
	/* Postgres */
	struct db_pool pool;
	bool pool_ready;
	/* Opening (SQLite file, migration) until it first succeeds; see ensure_ready. */
	char *sqlite_path;
	atomic_bool ready;
	pthread_mutex_t reopen_lock;
	bool reopen_lock_ready;
	double next_attempt_ms; /* clock_now_ms() before which no new attempt is made */
	double backoff_ms;
	char open_error[T2S_ERROR_MESSAGE_MAX];
	/* The last write's outcome (for readiness), under write_lock. */
	pthread_mutex_t write_lock;
	bool write_lock_ready;
	bool last_write_failed;
	char last_write_error[T2S_ERROR_MESSAGE_MAX];
};

/* One transaction on one connection; see session_open and session_close. */
struct session {
	struct state_store *s;
	struct db_conn *conn; /* Postgres only */
	bool write;           /* its outcome is the store's last write outcome */
};

/* A statement parameter: text (borrowed, NUL-terminated) or a 64-bit integer. */
struct param {
	const char *text;
	int64_t num;
	bool is_num;
};

#define P_TEXT(v) ((struct param){.text = (v)})
#define P_NUM(v) ((struct param){.num = (v), .is_num = true})

/*
 * Called once per result row with ncols values, each NUL-terminated text of
 * lens[i] bytes or NULL for SQL NULL (valid only during the call).  Returns 0
 * or a negative code with err filled, which stops the statement.
 */
typedef int (*row_fn)(void *ctx, int ncols, const char *const *vals, const size_t *lens, struct t2s_error *err);

/* ---- helpers ------------------------------------------------------------- */

/*
 * Check a string input: present, at most max bytes, valid UTF-8, and
 * non-empty unless allow_empty.  field names it in the message.
 */
static int check_text(const char *field, const char *v, size_t max, bool allow_empty, struct t2s_error *err)
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

static int check_database(const char *database, struct t2s_error *err)
{
	return check_text("database", database, STATE_DATABASE_NAME_MAX, false, err);
}

/* Table name required, column optional (NULL: the table itself) but never empty. */
static int check_target(const char *table, const char *column, struct t2s_error *err)
{
	int rc = check_text("table", table, STATE_IDENT_MAX, false, err);
	if (rc == 0 && column)
		rc = check_text("column", column, STATE_IDENT_MAX, false, err);
	return rc;
}

/* Strict decimal int64 of text from the database. */
static int parse_i64(const char *v, int64_t *ret, struct t2s_error *err)
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
static int row_i64(void *ctx, int ncols, const char *const *vals, const size_t *lens, struct t2s_error *err)
{
	(void)lens;
	if (ncols < 1)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store returned no column");
	if (!vals[0]) {
		*(int64_t *)ctx = 0;
		return 0;
	}
	return parse_i64(vals[0], ctx, err);
}

/* Copy of a value into the arena ("" stays ""; NULL stays NULL); *ok is cleared on OOM. */
static const char *dup_val(struct arena *a, const char *v, size_t len, bool *ok)
{
	if (!v)
		return NULL;
	char *d = arena_strndup(a, v, len);
	if (!d)
		*ok = false;
	return d;
}

/* A stored column name as the API shows it: '' (the table itself) becomes NULL. */
static const char *dup_column(struct arena *a, const char *v, size_t len, bool *ok)
{
	return v && len ? dup_val(a, v, len, ok) : NULL;
}

/* ---- error mapping ------------------------------------------------------- */

static int sqlite_failure(struct state_store *s, int rc, struct t2s_error *err)
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
static int session_script(struct session *x, const char *sql, struct t2s_error *err)
{
	struct state_store *s = x->s;
	if (s->engine == DB_ENGINE_SQLITE) {
		int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
		return rc == SQLITE_OK ? 0 : sqlite_failure(s, rc, err);
	}
	PGresult *r = PQexec(x->conn->pg, sql);
	int rc = 0;
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		rc = pg_failure(x->conn->pg, r, err);
	PQclear(r);
	return rc;
}

/*
 * Start a transaction: write = true takes SQLite's write lock up front
 * (BEGIN IMMEDIATE) so a read-then-write cannot deadlock with another
 * process.  On success the caller must call session_close exactly once.
 */
static int session_begin(struct state_store *s, bool write, struct session *x, struct t2s_error *err)
{
	x->s = s;
	x->conn = NULL;
	x->write = false;
	if (s->engine == DB_ENGINE_SQLITE) {
		pthread_mutex_lock(&s->lock);
		int rc = sqlite3_exec(s->db, write ? "BEGIN IMMEDIATE" : "BEGIN", NULL, NULL, NULL);
		if (rc != SQLITE_OK) {
			int code = sqlite_failure(s, rc, err);
			pthread_mutex_unlock(&s->lock);
			return code;
		}
		return 0;
	}
	struct t2s_error pool_err = {0};
	int rc = db_pool_acquire(&s->pool, &x->conn, &pool_err);
	if (rc < 0)
		return t2s_error_set(err, pool_err.code, "state store: %s", pool_err.message);
	rc = session_script(x, s->pg_begin, err);
	if (rc < 0) {
		db_pool_put(&s->pool, x->conn, PQstatus(x->conn->pg) != CONNECTION_OK);
		x->conn = NULL;
	}
	return rc;
}

/*
 * End the transaction: COMMIT when rc == 0, else ROLLBACK; then give the
 * connection back.  Returns rc, or the COMMIT's failure.
 */
static void note_write(struct state_store *s, int rc, const struct t2s_error *err);
static int session_end(struct session *x, int rc, struct t2s_error *err);

static int session_close(struct session *x, int rc, struct t2s_error *err)
{
	struct state_store *s = x->s;
	rc = session_end(x, rc, err);
	if (x->write)
		note_write(s, rc, err);
	return rc;
}

static int session_end(struct session *x, int rc, struct t2s_error *err)
{
	struct state_store *s = x->s;
	if (s->engine == DB_ENGINE_SQLITE) {
		if (rc == 0) {
			int src = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
			if (src != SQLITE_OK)
				rc = sqlite_failure(s, src, err);
		}
		/* SQLite rolls back by itself after some errors: only roll back what is open. */
		if (!sqlite3_get_autocommit(s->db))
			sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		pthread_mutex_unlock(&s->lock);
		return rc;
	}
	if (rc == 0)
		rc = session_script(x, "COMMIT", err);
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
		return sqlite_failure(s, src, err);
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
			return sqlite_failure(s, src, err);
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
		rc = sqlite_failure(s, src, err);
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
			rc = parse_i64(n, ret_changes, err);
	}
	PQclear(r);
	return rc;
}

/*
 * Run one statement with parameters $1..$np.  sql_lite is the SQLite text
 * and, unless sql_pg is given, the Postgres one too; a NULL text for the
 * session's engine skips the statement (returns 0, rows untouched).  fn (may
 * be NULL) sees every row; *ret_changes (may be NULL) gets the number of rows
 * inserted, updated or deleted.
 */
static int session_exec(struct session *x, const char *sql_lite, const char *sql_pg, const struct param *p,
			int np, row_fn fn, void *ctx, int64_t *ret_changes, struct t2s_error *err)
{
	if (x->s->engine == DB_ENGINE_SQLITE)
		return sql_lite ? sqlite_exec_params(x->s, sql_lite, p, np, fn, ctx, ret_changes, err) : 0;
	const char *sql = sql_pg ? sql_pg : sql_lite;
	return sql ? pg_exec_params(x->conn->pg, sql, p, np, fn, ctx, ret_changes, err) : 0;
}

/*
 * Postgres: serialise writers of one kind of row for one database across
 * replicas until the transaction ends (a no-op on SQLite, where BEGIN
 * IMMEDIATE already did).
 */
static int session_lock_database(struct session *x, int kind, const char *database, struct t2s_error *err)
{
	struct param p[] = {P_NUM(kind), P_TEXT(database)};
	return session_exec(x, NULL, "SELECT pg_advisory_xact_lock($1::int4, hashtext($2))::text", p, 2, NULL, NULL,
			    NULL, err);
}

/* ---- schema and migrations ----------------------------------------------- */

/* Scripts taking the schema from version i to i + 1, per engine. */
static const char *const sqlite_migrations[STATE_STORE_SCHEMA_VERSION] = {
	"CREATE TABLE examples ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" db_name TEXT NOT NULL,"
	" question TEXT NOT NULL,"
	" sql_text TEXT NOT NULL,"
	" created_at TEXT NOT NULL DEFAULT (" NOW_LITE "));"
	"CREATE INDEX examples_by_db ON examples (db_name, id);"
	"CREATE TABLE description_overrides ("
	" db_name TEXT NOT NULL,"
	" table_name TEXT NOT NULL,"
	" column_name TEXT NOT NULL," /* '' = the table itself */
	" text TEXT NOT NULL,"
	" updated_at TEXT NOT NULL,"
	" PRIMARY KEY (db_name, table_name, column_name)) WITHOUT ROWID;"
	"CREATE TABLE description_cache ("
	" db_name TEXT NOT NULL,"
	" schema_hash TEXT NOT NULL,"
	" table_name TEXT NOT NULL,"
	" column_name TEXT NOT NULL,"
	" text TEXT NOT NULL,"
	" source TEXT NOT NULL,"
	" updated_at TEXT NOT NULL,"
	" PRIMARY KEY (db_name, schema_hash, table_name, column_name)) WITHOUT ROWID;",
	/* 1 -> 2: feedback on answers */
	"CREATE TABLE feedback ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" db_name TEXT NOT NULL,"
	" question TEXT NOT NULL,"
	" sql_text TEXT NOT NULL,"
	" correct INTEGER NOT NULL,"
	" note TEXT,"
	" example_id INTEGER,"
	" created_at TEXT NOT NULL DEFAULT (" NOW_LITE "));"
	"CREATE INDEX feedback_by_db ON feedback (db_name, correct, id);",
};

static const char *const pg_migrations[STATE_STORE_SCHEMA_VERSION] = {
	"CREATE TABLE examples ("
	" id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
	" db_name text NOT NULL,"
	" question text NOT NULL,"
	" sql_text text NOT NULL,"
	" created_at timestamptz NOT NULL DEFAULT now());"
	"CREATE INDEX examples_by_db ON examples (db_name, id);"
	"CREATE TABLE description_overrides ("
	" db_name text NOT NULL,"
	" table_name text NOT NULL,"
	" column_name text NOT NULL,"
	" text text NOT NULL,"
	" updated_at timestamptz NOT NULL DEFAULT now(),"
	" PRIMARY KEY (db_name, table_name, column_name));"
	"CREATE TABLE description_cache ("
	" db_name text NOT NULL,"
	" schema_hash text NOT NULL,"
	" table_name text NOT NULL,"
	" column_name text NOT NULL,"
	" text text NOT NULL,"
	" source text NOT NULL,"
	" updated_at timestamptz NOT NULL DEFAULT now(),"
	" PRIMARY KEY (db_name, schema_hash, table_name, column_name));",
	/* 1 -> 2: feedback on answers */
	"CREATE TABLE feedback ("
	" id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
	" db_name text NOT NULL,"
	" question text NOT NULL,"
	" sql_text text NOT NULL,"
	" correct integer NOT NULL,"
	" note text,"
	" example_id bigint,"
	" created_at timestamptz NOT NULL DEFAULT now());"
	"CREATE INDEX feedback_by_db ON feedback (db_name, correct, id);",
};

/* Postgres: create our schema and the version table when missing (inside the migration transaction). */
static int pg_prepare_schema(struct session *x, struct t2s_error *err)
{
	struct state_store *s = x->s;
	struct param name = P_TEXT(s->opt.pg_schema);
	int64_t found = 0;
	char sql[256];
	int rc = session_exec(x, NULL, "SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = $1", &name, 1,
			      row_i64, &found, NULL, err);
	if (rc == 0 && !found) {
		/* The name was checked to be [a-z_][a-z0-9_]*: quoting cannot be escaped. */
		snprintf(sql, sizeof(sql), "CREATE SCHEMA \"%s\"; SET LOCAL search_path TO \"%s\"", s->opt.pg_schema,
			 s->opt.pg_schema);
		rc = session_script(x, sql, err);
	}
	if (rc == 0)
		rc = session_exec(x, NULL,
				  "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = $1"
				  " AND tablename = 'schema_version'",
				  &name, 1, row_i64, &found, NULL, err);
	if (rc == 0 && !found)
		rc = session_script(x, "CREATE TABLE schema_version (version integer NOT NULL)", err);
	return rc;
}

/* Bring the schema to STATE_STORE_SCHEMA_VERSION, serialised against other processes. */
static int migrate(struct state_store *s, struct t2s_error *err)
{
	struct session x;
	int rc = session_begin(s, true, &x, err);
	if (rc < 0)
		return rc;
	if (s->engine == DB_ENGINE_POSTGRES) {
		struct param p[] = {P_NUM(LOCK_MIGRATE), P_TEXT(s->opt.pg_schema)};
		rc = session_exec(&x, NULL, "SELECT pg_advisory_xact_lock($1::int4, hashtext($2))::text", p, 2, NULL,
				  NULL, NULL, err);
		if (rc == 0)
			rc = pg_prepare_schema(&x, err);
	} else {
		rc = session_script(&x, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)", err);
	}
	int64_t version = 0;
	if (rc == 0)
		rc = session_exec(&x, "SELECT max(version) FROM schema_version", NULL, NULL, 0, row_i64, &version, NULL,
				  err);
	if (rc == 0 && (version < 0 || version > STATE_STORE_SCHEMA_VERSION))
		rc = t2s_error_set(err, T2S_ERR_UNAVAILABLE,
				   "state store schema version %lld is not one this build reads (%d); upgrade text2sqld",
				   (long long)version, STATE_STORE_SCHEMA_VERSION);
	const char *const *steps = s->engine == DB_ENGINE_SQLITE ? sqlite_migrations : pg_migrations;
	for (int64_t v = version; rc == 0 && v < STATE_STORE_SCHEMA_VERSION; v++)
		rc = session_script(&x, steps[v], err);
	if (rc == 0 && version < STATE_STORE_SCHEMA_VERSION) {
		struct param p = P_NUM(STATE_STORE_SCHEMA_VERSION);
		rc = session_script(&x, "DELETE FROM schema_version", err);
		if (rc == 0)
			rc = session_exec(&x, "INSERT INTO schema_version (version) VALUES ($1)", NULL, &p, 1, NULL, NULL,
					  NULL, err);
	}
	return session_end(&x, rc, err);
}

/* ---- open and close ------------------------------------------------------ */

static bool valid_pg_schema(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > PG_SCHEMA_NAME_MAX || (name[0] >= '0' && name[0] <= '9'))
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

/* Copy opts with defaults applied into s->opt; -T2S_ERR_INVALID on a bad value. */
static int apply_options(struct state_store *s, const struct state_store_options *opts, struct t2s_error *err)
{
	struct state_store_options o = {0};
	if (opts)
		o = *opts;
	if (o.busy_timeout_ms < 0 || o.statement_timeout_ms < 0 || o.pool_size < 0 || o.pool_wait_ms < 0 ||
	    o.connect_timeout_s < 0 || o.max_examples_per_database < 0 || o.busy_timeout_ms > 3600000L ||
	    o.statement_timeout_ms > 3600000L || o.pool_size > 1024 || o.pool_wait_ms > 3600000L ||
	    o.connect_timeout_s > 3600L)
		return t2s_error_set(err, T2S_ERR_INVALID, "state store options out of range");
	if (o.max_examples_per_database > STATE_EXAMPLES_MAX)
		return t2s_error_set(err, T2S_ERR_INVALID, "state store: max_examples_per_database must be at most %ld",
				     STATE_EXAMPLES_MAX);
	s->opt.busy_timeout_ms = o.busy_timeout_ms ? o.busy_timeout_ms : DEFAULT_BUSY_TIMEOUT_MS;
	s->opt.statement_timeout_ms = o.statement_timeout_ms ? o.statement_timeout_ms : DEFAULT_STATEMENT_TIMEOUT_MS;
	s->opt.pool_size = o.pool_size ? o.pool_size : DEFAULT_POOL_SIZE;
	s->opt.pool_wait_ms = o.pool_wait_ms ? o.pool_wait_ms : DEFAULT_POOL_WAIT_MS;
	s->opt.connect_timeout_s = o.connect_timeout_s ? o.connect_timeout_s : DEFAULT_CONNECT_TIMEOUT_S;
	s->opt.max_examples_per_database = o.max_examples_per_database ? o.max_examples_per_database
								       : STATE_EXAMPLES_MAX;
	const char *schema = o.pg_schema && *o.pg_schema ? o.pg_schema : DEFAULT_PG_SCHEMA;
	if (!valid_pg_schema(schema))
		return t2s_error_set(err, T2S_ERR_INVALID,
				     "state store: pg_schema must be 1-63 characters of a-z 0-9 _ not starting with a digit");
	snprintf(s->pg_schema_buf, sizeof(s->pg_schema_buf), "%s", schema);
	s->opt.pg_schema = s->pg_schema_buf;
	return 0;
}

/*
 * Put the file in WAL mode; returns an SQLite result code.  The switch reads
 * the file header and then takes the write lock inside that same read
 * transaction, where SQLite never calls the busy handler (waiting there
 * could deadlock two upgrading readers): a connection that races another
 * one creating or switching the same fresh file gets SQLITE_BUSY at once.
 * Every attempt ends its transaction and releases its locks, so retrying
 * until the busy timeout is safe; once the file is in WAL mode the pragma
 * takes no write lock and succeeds at the first attempt.
 */
static int sqlite_use_wal(struct state_store *s)
{
	double deadline = clock_now_ms() + (double)s->opt.busy_timeout_ms;
	for (int delay_ms = 1;; delay_ms = delay_ms < 50 ? delay_ms * 2 : 50) {
		int rc = sqlite3_exec(s->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
		if ((rc & 0xff) != SQLITE_BUSY || clock_now_ms() >= deadline)
			return rc;
		sqlite3_sleep(delay_ms);
	}
}

static int open_sqlite(struct state_store *s, const char *path, struct t2s_error *err)
{
	if (pthread_mutex_init(&s->lock, NULL) != 0)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "cannot create the state store lock");
	s->lock_ready = true;
	s->sqlite_path = strdup(path);
	return s->sqlite_path ? 0 : t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
}

/* (Re)open the SQLite file; on failure s->db is closed again. */
static int connect_sqlite(struct state_store *s, struct t2s_error *err)
{
	const char *path = s->sqlite_path;
	if (s->db) {
		sqlite3_close_v2(s->db);
		s->db = NULL;
	}
	int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
				 NULL);
	if (rc != SQLITE_OK)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot open the state store file %s: %s", path,
				     s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, (int)s->opt.busy_timeout_ms);
	sqlite3_db_config(s->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	/* WAL lets readers in other processes proceed during a write; FULL syncs every commit. */
	rc = sqlite_use_wal(s);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		int code = sqlite_failure(s, rc, err);
		return t2s_error_set(err, (enum t2s_code)-code, "cannot use the state store file %s: %s", path,
				     sqlite3_errmsg(s->db));
	}
	return 0;
}

/*
 * Make the store usable: open the SQLite file and migrate, once; until that
 * succeeds every call tries again, but not before the backoff (500 ms,
 * doubling up to 30 s) since the last failure has passed.
 */
static int ensure_ready(struct state_store *s, struct t2s_error *err)
{
	if (atomic_load(&s->ready))
		return 0;
	pthread_mutex_lock(&s->reopen_lock);
	int rc = 0;
	double now = clock_now_ms();
	if (atomic_load(&s->ready)) {
		rc = 0;
	} else if (now < s->next_attempt_ms) {
		rc = t2s_error_set(err, T2S_ERR_UNAVAILABLE, "%s (next attempt in %.0f ms)", s->open_error,
				   s->next_attempt_ms - now);
	} else {
		struct t2s_error e = {0};
		rc = s->engine == DB_ENGINE_SQLITE ? connect_sqlite(s, &e) : 0;
		if (rc == 0)
			rc = migrate(s, &e);
		if (rc == 0) {
			s->backoff_ms = 0;
			s->open_error[0] = '\0';
			note_write(s, 0, NULL); /* writes that failed for want of the store no longer count */
			atomic_store(&s->ready, true);
		} else {
			if (s->engine == DB_ENGINE_SQLITE && s->db) {
				sqlite3_close_v2(s->db);
				s->db = NULL;
			}
			s->backoff_ms = s->backoff_ms > 0 ? s->backoff_ms * 2 : REOPEN_BACKOFF_FIRST_MS;
			if (s->backoff_ms > REOPEN_BACKOFF_MAX_MS)
				s->backoff_ms = REOPEN_BACKOFF_MAX_MS;
			s->next_attempt_ms = clock_now_ms() + s->backoff_ms;
			snprintf(s->open_error, sizeof(s->open_error), "%s", e.message);
			rc = t2s_error_set(err, e.code == T2S_ERR_INVALID ? T2S_ERR_INVALID : T2S_ERR_UNAVAILABLE, "%s",
					   e.message);
		}
	}
	pthread_mutex_unlock(&s->reopen_lock);
	return rc;
}

/* Record a write's outcome: failures of the store itself, not refusals of the input. */
static void note_write(struct state_store *s, int rc, const struct t2s_error *err)
{
	if (rc == -T2S_ERR_INVALID || rc == -T2S_ERR_NOT_FOUND)
		return;
	pthread_mutex_lock(&s->write_lock);
	s->last_write_failed = rc < 0;
	snprintf(s->last_write_error, sizeof(s->last_write_error), "%s",
		 rc < 0 ? (err && err->message[0] ? err->message : "write failed") : "");
	pthread_mutex_unlock(&s->write_lock);
}

/* A transaction of a public call: the store must be ready (see ensure_ready). */
static int session_open(struct state_store *s, bool write, struct session *x, struct t2s_error *err)
{
	int rc = ensure_ready(s, err);
	if (rc == 0)
		rc = session_begin(s, write, x, err);
	if (rc < 0) {
		if (write)
			note_write(s, rc, err);
		return rc;
	}
	x->write = write;
	return 0;
}

bool state_store_available(struct state_store *s)
{
	return ensure_ready(s, NULL) == 0;
}

bool state_store_last_write(struct state_store *s, char *buf, size_t size)
{
	pthread_mutex_lock(&s->write_lock);
	bool ok = !s->last_write_failed;
	if (buf && size)
		snprintf(buf, size, "%s", s->last_write_error);
	pthread_mutex_unlock(&s->write_lock);
	return ok;
}

static int open_pg(struct state_store *s, const char *url, struct t2s_error *err)
{
	if (db_pool_init(&s->pool, DB_ENGINE_POSTGRES, url, s->opt.pool_size, s->opt.pool_wait_ms,
			 s->opt.connect_timeout_s) < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	s->pool_ready = true;
	snprintf(s->pg_begin, sizeof(s->pg_begin),
		 "BEGIN; SET LOCAL search_path TO \"%s\"; SET LOCAL statement_timeout = %ld;"
		 " SET LOCAL lock_timeout = %ld",
		 s->opt.pg_schema, s->opt.statement_timeout_ms, s->opt.busy_timeout_ms);
	return 0;
}

/* A store object for url, not yet opened (ensure_ready does that). */
static int store_new(const char *url, const struct state_store_options *opts, struct state_store **ret,
		     struct t2s_error *err)
{
	if (!url || !*url)
		return t2s_error_set(err, T2S_ERR_INVALID, "state store URL is required");
	struct state_store *s = calloc(1, sizeof(*s));
	if (!s)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	atomic_init(&s->ready, false);
	s->reopen_lock_ready = pthread_mutex_init(&s->reopen_lock, NULL) == 0;
	s->write_lock_ready = pthread_mutex_init(&s->write_lock, NULL) == 0;
	if (!s->reopen_lock_ready || !s->write_lock_ready) {
		state_store_close(s);
		return t2s_error_set(err, T2S_ERR_INTERNAL, "cannot create the state store locks");
	}
	int rc = apply_options(s, opts, err);
	if (rc == 0) {
		if (strncmp(url, "sqlite://", 9) == 0) {
			s->engine = DB_ENGINE_SQLITE;
			rc = url[9] ? open_sqlite(s, url + 9, err)
				    : t2s_error_set(err, T2S_ERR_INVALID,
						    "state store URL needs a path: sqlite:///abs/path.db");
		} else if (strncmp(url, "postgresql://", 13) == 0 || strncmp(url, "postgres://", 11) == 0) {
			s->engine = DB_ENGINE_POSTGRES;
			rc = open_pg(s, url, err);
		} else {
			rc = t2s_error_set(err, T2S_ERR_INVALID,
					   "state store URL must start with sqlite:// or postgresql://");
		}
	}
	if (rc < 0) {
		state_store_close(s);
		return rc;
	}
	*ret = s;
	return 0;
}

int state_store_open(const char *url, const struct state_store_options *opts, struct state_store **ret,
		     struct t2s_error *err)
{
	struct state_store *s;
	int rc = store_new(url, opts, &s, err);
	if (rc < 0)
		return rc;
	if ((rc = ensure_ready(s, err)) < 0) {
		state_store_close(s);
		return rc;
	}
	*ret = s;
	return 0;
}

int state_store_open_lazy(const char *url, const struct state_store_options *opts, struct state_store **ret,
			  struct t2s_error *err)
{
	struct state_store *s;
	int rc = store_new(url, opts, &s, err);
	if (rc < 0)
		return rc;
	struct t2s_error first = {0};
	rc = ensure_ready(s, &first);
	if (rc == -T2S_ERR_INVALID) {
		state_store_close(s);
		return t2s_error_set(err, T2S_ERR_INVALID, "%s", first.message);
	}
	*ret = s;
	return 0;
}

struct state_store *state_store_close(struct state_store *s)
{
	if (!s)
		return NULL;
	if (s->db)
		sqlite3_close_v2(s->db);
	if (s->lock_ready)
		pthread_mutex_destroy(&s->lock);
	if (s->pool_ready)
		db_pool_release(&s->pool);
	if (s->reopen_lock_ready)
		pthread_mutex_destroy(&s->reopen_lock);
	if (s->write_lock_ready)
		pthread_mutex_destroy(&s->write_lock);
	free(s->sqlite_path);
	free(s);
	return NULL;
}

const char *state_store_backend(const struct state_store *s)
{
	return s->engine == DB_ENGINE_SQLITE ? "sqlite" : "postgresql";
}

int state_store_ping(struct state_store *s, struct t2s_error *err)
{
	struct session x;
	int64_t one = 0;
	int rc = session_open(s, false, &x, err);
	if (rc < 0)
		return rc;
	rc = session_exec(&x, "SELECT 1", NULL, NULL, 0, row_i64, &one, NULL, err);
	rc = session_close(&x, rc, err);
	char last[T2S_ERROR_MESSAGE_MAX];
	if (rc == 0 && !state_store_last_write(s, last, sizeof(last)))
		rc = t2s_error_set(err, T2S_ERR_UNAVAILABLE, "the last write failed: %s", last);
	return rc;
}

/* ---- examples ------------------------------------------------------------ */

void state_examples_release(struct state_examples *l)
{
	if (!l)
		return;
	arena_release(&l->arena);
	memset(l, 0, sizeof(*l));
}

/* Row callback building a struct state_examples from (id, question, sql, created_at). */
struct examples_build {
	struct state_examples *l;
	size_t cap;
};

static int row_example(void *ctx, int ncols, const char *const *vals, const size_t *lens, struct t2s_error *err)
{
	struct examples_build *b = ctx;
	struct state_examples *l = b->l;
	if (ncols != 4)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store returned an unexpected example row");
	struct state_example *v = arena_grow(&l->arena, l->items, l->n, &b->cap, sizeof(*v));
	if (!v)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading examples");
	l->items = v;
	struct state_example *e = &v[l->n];
	int rc = parse_i64(vals[0], &e->id, err);
	if (rc < 0)
		return rc;
	bool ok = true;
	e->question = dup_val(&l->arena, vals[1], lens[1], &ok);
	e->sql = dup_val(&l->arena, vals[2], lens[2], &ok);
	e->created_at = dup_val(&l->arena, vals[3], lens[3], &ok);
	if (!ok)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading examples");
	l->n++;
	return 0;
}

/* Inside an open write session: insert one example under the per-database cap; *ret_id its id. */
static int session_example_insert(struct session *x, const char *database, const char *question, const char *sql,
				  int64_t *ret_id, struct t2s_error *err)
{
	struct param p[] = {P_TEXT(database), P_TEXT(question), P_TEXT(sql)};
	int64_t count = 0;
	int rc = session_lock_database(x, LOCK_EXAMPLES, database, err);
	if (rc == 0)
		rc = session_exec(x, "SELECT count(*) FROM examples WHERE db_name = $1", NULL, p, 1, row_i64, &count,
				  NULL, err);
	if (rc == 0 && count >= x->s->opt.max_examples_per_database)
		rc = t2s_error_set(err, T2S_ERR_INVALID,
				   "the database already holds the maximum of %ld examples; delete some first",
				   x->s->opt.max_examples_per_database);
	if (rc == 0)
		rc = session_exec(x, "INSERT INTO examples (db_name, question, sql_text) VALUES ($1, $2, $3) RETURNING id",
				  NULL, p, 3, row_i64, ret_id, NULL, err);
	return rc;
}

int state_store_example_add(struct state_store *s, const char *database, const char *question, const char *sql,
			    int64_t *ret_id, struct t2s_error *err)
{
	int rc = check_database(database, err);
	if (rc == 0)
		rc = check_text("question", question, STATE_QUESTION_MAX, false, err);
	if (rc == 0)
		rc = check_text("sql", sql, STATE_SQL_MAX, false, err);
	if (rc < 0)
		return rc;
	struct session x;
	if ((rc = session_open(s, true, &x, err)) < 0)
		return rc;
	int64_t id = 0;
	rc = session_example_insert(&x, database, question, sql, &id, err);
	rc = session_close(&x, rc, err);
	if (rc == 0)
		*ret_id = id;
	return rc;
}

#define EXAMPLE_COLS_LITE "id, question, sql_text, created_at"
#define EXAMPLE_COLS_PG "id, question, sql_text, " TS_PG("created_at")

int state_store_example_get(struct state_store *s, const char *database, int64_t id, struct state_examples *ret,
			    struct t2s_error *err)
{
	int rc = check_database(database, err);
	if (rc < 0)
		return rc;
	struct state_examples l = {0};
	struct examples_build b = {.l = &l};
	struct param p[] = {P_TEXT(database), P_NUM(id)};
	struct session x;
	if ((rc = session_open(s, false, &x, err)) < 0)
		return rc;
	rc = session_exec(&x, "SELECT " EXAMPLE_COLS_LITE " FROM examples WHERE db_name = $1 AND id = $2",
			  "SELECT " EXAMPLE_COLS_PG " FROM examples WHERE db_name = $1 AND id = $2", p, 2, row_example,
			  &b, NULL, err);
	rc = session_close(&x, rc, err);
	if (rc == 0 && l.n == 0)
		rc = t2s_error_set(err, T2S_ERR_NOT_FOUND, "no example %lld in this database", (long long)id);
	if (rc < 0) {
		state_examples_release(&l);
		return rc;
	}
	l.total = 1;
	*ret = l;
	return 0;
}

int state_store_example_delete(struct state_store *s, const char *database, int64_t id, struct t2s_error *err)
{
	int rc = check_database(database, err);
	if (rc < 0)
		return rc;
	struct param p[] = {P_TEXT(database), P_NUM(id)};
	int64_t changed = 0;
	struct session x;
	if ((rc = session_open(s, true, &x, err)) < 0)
		return rc;
	rc = session_exec(&x, "DELETE FROM examples WHERE db_name = $1 AND id = $2", NULL, p, 2, NULL, NULL, &changed,
			  err);
	rc = session_close(&x, rc, err);
	if (rc == 0 && changed == 0)
		rc = t2s_error_set(err, T2S_ERR_NOT_FOUND, "no example %lld in this database", (long long)id);
	return rc;
}

int state_store_examples_list(struct state_store *s, const char *database, long limit, long offset,
			      struct state_examples *ret, struct t2s_error *err)
{
	int rc = check_database(database, err);
	if (rc < 0)
		return rc;
	if (limit < 1 || limit > STATE_LIST_LIMIT_MAX)
		return t2s_error_set(err, T2S_ERR_INVALID, "limit must be between 1 and %ld", STATE_LIST_LIMIT_MAX);
	if (offset < 0)
		return t2s_error_set(err, T2S_ERR_INVALID, "offset must not be negative");
	struct state_examples l = {0};
	struct examples_build b = {.l = &l};
	struct param p[] = {P_TEXT(database), P_NUM(limit), P_NUM(offset)};
	struct session x;
	if ((rc = session_open(s, false, &x, err)) < 0)
		return rc;
	rc = session_exec(&x, "SELECT count(*) FROM examples WHERE db_name = $1", NULL, p, 1, row_i64, &l.total, NULL,
			  err);
	if (rc == 0)
		rc = session_exec(&x,
				  "SELECT " EXAMPLE_COLS_LITE " FROM examples WHERE db_name = $1"
				  " ORDER BY id LIMIT $2 OFFSET $3",
				  "SELECT " EXAMPLE_COLS_PG " FROM examples WHERE db_name = $1"
				  " ORDER BY id LIMIT $2 OFFSET $3",
				  p, 3, row_example, &b, NULL, err);
	rc = session_close(&x, rc, err);
	if (rc < 0) {
		state_examples_release(&l);
		return rc;
	}
	*ret = l;
	return 0;
}

int state_store_examples_all(struct state_store *s, const char *database, bool with_sql,
			     struct state_examples *ret, struct t2s_error *err)
{
	int rc = check_database(database, err);
	if (rc < 0)
		return rc;
	struct state_examples l = {0};
	struct examples_build b = {.l = &l};
	struct param p = P_TEXT(database);
	struct session x;
	if ((rc = session_open(s, false, &x, err)) < 0)
		return rc;
	if (with_sql)
		rc = session_exec(&x, "SELECT " EXAMPLE_COLS_LITE " FROM examples WHERE db_name = $1 ORDER BY id",
				  "SELECT " EXAMPLE_COLS_PG " FROM examples WHERE db_name = $1 ORDER BY id", &p, 1,
				  row_example, &b, NULL, err);
	else
		rc = session_exec(&x, "SELECT id, question, NULL, created_at FROM examples WHERE db_name = $1 ORDER BY id",
				  "SELECT id, question, NULL, " TS_PG("created_at")
				  " FROM examples WHERE db_name = $1 ORDER BY id",
				  &p, 1, row_example, &b, NULL, err);
	rc = session_close(&x, rc, err);
	if (rc < 0) {
		state_examples_release(&l);
		return rc;
	}
	l.total = (int64_t)l.n;
	*ret = l;
	return 0;
}

/* ---- feedback ------------------------------------------------------------ */

void state_feedbacks_release(struct state_feedbacks *l)
{
	if (!l)
		return;
	arena_release(&l->arena);
	memset(l, 0, sizeof(*l));
}

struct feedback_build {
	struct state_feedbacks *l;
	size_t cap;
};

/* Row callback: (id, db_name, question, sql_text, correct, note, example_id, created_at). */
static int row_feedback(void *ctx, int ncols, const char *const *vals, const size_t *lens, struct t2s_error *err)
{
	struct feedback_build *b = ctx;
	struct state_feedbacks *l = b->l;
	if (ncols != 8)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store returned an unexpected feedback row");
	struct state_feedback *v = arena_grow(&l->arena, l->items, l->n, &b->cap, sizeof(*v));
	if (!v)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading feedback");
	l->items = v;
	struct state_feedback *f = &v[l->n];
	memset(f, 0, sizeof(*f));
	int64_t correct = 0;
	int rc = parse_i64(vals[0], &f->id, err);
	if (rc == 0)
		rc = parse_i64(vals[4], &correct, err);
	if (rc == 0 && vals[6])
		rc = parse_i64(vals[6], &f->example_id, err);
	if (rc < 0)
		return rc;
	bool ok = true;
	f->correct = correct != 0;
	f->database = dup_val(&l->arena, vals[1], lens[1], &ok);
	f->question = dup_val(&l->arena, vals[2], lens[2], &ok);
	f->sql = dup_val(&l->arena, vals[3], lens[3], &ok);
	f->note = vals[5] ? dup_val(&l->arena, vals[5], lens[5], &ok) : NULL;
	f->created_at = dup_val(&l->arena, vals[7], lens[7], &ok);
	if (!ok)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading feedback");
	l->n++;
	return 0;
}

#define FEEDBACK_COLS_LITE "id, db_name, question, sql_text, correct, note, example_id, created_at"
#define FEEDBACK_COLS_PG "id, db_name, question, sql_text, correct, note, example_id, " TS_PG("created_at")

int state_store_feedback_add(struct state_store *s, const char *database, const char *question, const char *sql,
			     bool correct, const char *note, int64_t *ret_id, int64_t *ret_example_id,
			     struct t2s_error *err)
{
	int rc = check_database(database, err);
	if (rc == 0)
		rc = check_text("question", question, STATE_QUESTION_MAX, false, err);
	if (rc == 0)
		rc = check_text("sql", sql, STATE_SQL_MAX, false, err);
	if (rc == 0 && note)
		rc = check_text("note", note, STATE_NOTE_MAX, true, err);
	if (rc < 0)
		return rc;
	struct session x;
	if ((rc = session_open(s, true, &x, err)) < 0)
		return rc;
	int64_t example_id = 0, id = 0;
	if (correct) {
		struct param q[] = {P_TEXT(database), P_TEXT(question), P_TEXT(sql)};
		rc = session_lock_database(&x, LOCK_EXAMPLES, database, err);
		if (rc == 0)
			rc = session_exec(&x,
					  "SELECT id FROM examples WHERE db_name = $1 AND question = $2 AND sql_text = $3"
					  " ORDER BY id LIMIT 1",
					  NULL, q, 3, row_i64, &example_id, NULL, err);
		if (rc == 0 && !example_id)
			rc = session_example_insert(&x, database, question, sql, &example_id, err);
	}
	struct param p[] = {P_TEXT(database), P_TEXT(question), P_TEXT(sql), P_NUM(correct ? 1 : 0), P_TEXT(note),
			    correct ? P_NUM(example_id) : P_TEXT(NULL)};
	if (rc == 0)
		rc = session_exec(&x,
				  "INSERT INTO feedback (db_name, question, sql_text, correct, note, example_id)"
				  " VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
				  NULL, p, 6, row_i64, &id, NULL, err);
	rc = session_close(&x, rc, err);
	if (rc == 0) {
		*ret_id = id;
		*ret_example_id = example_id;
	}
	return rc;
}

int state_store_feedback_get(struct state_store *s, int64_t id, struct state_feedbacks *ret, struct t2s_error *err)
{
	struct state_feedbacks l = {0};
	struct feedback_build b = {.l = &l};
	struct param p = P_NUM(id);
	struct session x;
	int rc = session_open(s, false, &x, err);
	if (rc < 0)
		return rc;
	rc = session_exec(&x, "SELECT " FEEDBACK_COLS_LITE " FROM feedback WHERE id = $1",
			  "SELECT " FEEDBACK_COLS_PG " FROM feedback WHERE id = $1", &p, 1, row_feedback, &b, NULL, err);
	rc = session_close(&x, rc, err);
	if (rc == 0 && l.n == 0)
		rc = t2s_error_set(err, T2S_ERR_NOT_FOUND, "no feedback with id %lld", (long long)id);
	if (rc < 0) {
		state_feedbacks_release(&l);
		return rc;
	}
	l.total = 1;
	*ret = l;
	return 0;
}

int state_store_feedback_list(struct state_store *s, const char *database, int correct, long limit, long offset,
			      struct state_feedbacks *ret, struct t2s_error *err)
{
	int rc = database ? check_database(database, err) : 0;
	if (rc < 0)
		return rc;
	if (limit < 1 || limit > STATE_LIST_LIMIT_MAX)
		return t2s_error_set(err, T2S_ERR_INVALID, "limit must be between 1 and %ld", STATE_LIST_LIMIT_MAX);
	if (offset < 0)
		return t2s_error_set(err, T2S_ERR_INVALID, "offset must not be negative");
	struct state_feedbacks l = {0};
	struct feedback_build b = {.l = &l};
	/* NULL parameters match everything: one statement per engine for every filter. */
	struct param p[] = {P_TEXT(database), correct < 0 ? P_TEXT(NULL) : P_NUM(correct), P_NUM(limit), P_NUM(offset)};
#define FEEDBACK_WHERE_LITE " WHERE ($1 IS NULL OR db_name = $1) AND ($2 IS NULL OR correct = $2)"
#define FEEDBACK_WHERE_PG " WHERE ($1::text IS NULL OR db_name = $1) AND ($2::int IS NULL OR correct = $2)"
	struct session x;
	if ((rc = session_open(s, false, &x, err)) < 0)
		return rc;
	rc = session_exec(&x, "SELECT count(*) FROM feedback" FEEDBACK_WHERE_LITE,
			  "SELECT count(*) FROM feedback" FEEDBACK_WHERE_PG, p, 2, row_i64, &l.total, NULL, err);
	if (rc == 0)
		rc = session_exec(&x, "SELECT " FEEDBACK_COLS_LITE " FROM feedback" FEEDBACK_WHERE_LITE
				  " ORDER BY id LIMIT $3 OFFSET $4",
				  "SELECT " FEEDBACK_COLS_PG " FROM feedback" FEEDBACK_WHERE_PG
				  " ORDER BY id LIMIT $3 OFFSET $4",
				  p, 4, row_feedback, &b, NULL, err);
#undef FEEDBACK_WHERE_LITE
#undef FEEDBACK_WHERE_PG
	rc = session_close(&x, rc, err);
	if (rc < 0) {
		state_feedbacks_release(&l);
		return rc;
	}
	*ret = l;
	return 0;
}

/* ---- description overrides ----------------------------------------------- */

void state_overrides_release(struct state_overrides *l)
{
	if (!l)
		return;
	arena_release(&l->arena);
	memset(l, 0, sizeof(*l));
}

int state_store_override_put(struct state_store *s, const char *database, const char *table, const char *column,
			     const char *text, struct t2s_error *err)
{
	int rc = check_database(database, err);
	if (rc == 0)
		rc = check_target(table, column, err);
	if (rc == 0)
		rc = check_text("text", text, STATE_TEXT_MAX, false, err);
	if (rc < 0)
		return rc;
	struct param p[] = {P_TEXT(database), P_TEXT(table), P_TEXT(column ? column : ""), P_TEXT(text)};
	int64_t exists = 0, count = 0;
	struct session x;
	if ((rc = session_open(s, true, &x, err)) < 0)
		return rc;
	rc = session_lock_database(&x, LOCK_OVERRIDES, database, err);
	if (rc == 0)
		rc = session_exec(&x,
				  "SELECT count(*) FROM description_overrides"
				  " WHERE db_name = $1 AND table_name = $2 AND column_name = $3",
				  NULL, p, 3, row_i64, &exists, NULL, err);
	if (rc == 0 && !exists)
		rc = session_exec(&x, "SELECT count(*) FROM description_overrides WHERE db_name = $1", NULL, p, 1,
				  row_i64, &count, NULL, err);
	if (rc == 0 && count >= STATE_OVERRIDES_MAX)
		rc = t2s_error_set(err, T2S_ERR_INVALID,
				   "the database already holds the maximum of %ld description overrides",
				   STATE_OVERRIDES_MAX);
	if (rc == 0)
		rc = session_exec(&x,
				  "INSERT INTO description_overrides (db_name, table_name, column_name, text, updated_at)"
				  " VALUES ($1, $2, $3, $4, " NOW_LITE ")"
				  " ON CONFLICT (db_name, table_name, column_name)"
				  " DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
				  "INSERT INTO description_overrides (db_name, table_name, column_name, text, updated_at)"
				  " VALUES ($1, $2, $3, $4, now())"
				  " ON CONFLICT (db_name, table_name, column_name)"
				  " DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
				  p, 4, NULL, NULL, NULL, err);
	return session_close(&x, rc, err);
}

int state_store_override_delete(struct state_store *s, const char *database, const char *table,
				const char *column, struct t2s_error *err)
{
	int rc = check_database(database, err);
	if (rc == 0)
		rc = check_target(table, column, err);
	if (rc < 0)
		return rc;
	struct param p[] = {P_TEXT(database), P_TEXT(table), P_TEXT(column ? column : "")};
	int64_t changed = 0;
	struct session x;
	if ((rc = session_open(s, true, &x, err)) < 0)
		return rc;
	rc = session_exec(&x,
			  "DELETE FROM description_overrides WHERE db_name = $1 AND table_name = $2 AND column_name = $3",
			  NULL, p, 3, NULL, NULL, &changed, err);
	rc = session_close(&x, rc, err);
	if (rc == 0 && changed == 0)
		rc = t2s_error_set(err, T2S_ERR_NOT_FOUND, "no description override for this %s",
				   column ? "column" : "table");
	return rc;
}

struct overrides_build {
	struct state_overrides *l;
	size_t cap;
};

static int row_override(void *ctx, int ncols, const char *const *vals, const size_t *lens, struct t2s_error *err)
{
	struct overrides_build *b = ctx;
	struct state_overrides *l = b->l;
	if (ncols != 4)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store returned an unexpected override row");
	struct state_override *v = arena_grow(&l->arena, l->items, l->n, &b->cap, sizeof(*v));
	if (!v)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading overrides");
	l->items = v;
	struct state_override *o = &v[l->n];
	bool ok = true;
	o->table = dup_val(&l->arena, vals[0], lens[0], &ok);
	o->column = dup_column(&l->arena, vals[1], lens[1], &ok);
	o->text = dup_val(&l->arena, vals[2], lens[2], &ok);
	o->updated_at = dup_val(&l->arena, vals[3], lens[3], &ok);
	if (!ok)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading overrides");
	l->n++;
	return 0;
}

int state_store_overrides_list(struct state_store *s, const char *database, struct state_overrides *ret,
			       struct t2s_error *err)
{
	int rc = check_database(database, err);
	if (rc < 0)
		return rc;
	struct state_overrides l = {0};
	struct overrides_build b = {.l = &l};
	struct param p = P_TEXT(database);
	struct session x;
	if ((rc = session_open(s, false, &x, err)) < 0)
		return rc;
	rc = session_exec(&x,
			  "SELECT table_name, column_name, text, updated_at FROM description_overrides"
			  " WHERE db_name = $1 ORDER BY table_name, column_name",
			  "SELECT table_name, column_name, text, " TS_PG("updated_at") " FROM description_overrides"
			  " WHERE db_name = $1 ORDER BY table_name COLLATE \"C\", column_name COLLATE \"C\"",
			  &p, 1, row_override, &b, NULL, err);
	rc = session_close(&x, rc, err);
	if (rc < 0) {
		state_overrides_release(&l);
		return rc;
	}
	*ret = l;
	return 0;
}

/* ---- generated descriptions cached by schema hash ----------------------- */

void state_descriptions_release(struct state_descriptions *l)
{
	if (!l)
		return;
	arena_release(&l->arena);
	memset(l, 0, sizeof(*l));
}

static int check_description(const struct state_description *d, size_t i, struct t2s_error *err)
{
	char field[48];
	int rc = check_target(d->table, d->column, err);
	if (rc == 0) {
		snprintf(field, sizeof(field), "descriptions[%zu].text", i);
		rc = check_text(field, d->text, STATE_TEXT_MAX, false, err);
	}
	if (rc == 0) {
		snprintf(field, sizeof(field), "descriptions[%zu].source", i);
		rc = check_text(field, d->source, STATE_SOURCE_MAX, false, err);
	}
	return rc;
}

/* The items as one JSON array text [{"t","c","x","s"}...] (malloc'd, caller frees), or NULL on OOM. */
static char *descriptions_json(const struct state_description *items, size_t n)
{
	json_t *arr = json_array();
	if (!arr)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "t", items[i].table, "c",
				      items[i].column ? items[i].column : "", "x", items[i].text, "s", items[i].source);
		if (!o || json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	char *text = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return text;
}

int state_store_descriptions_put_many(struct state_store *s, const char *database, const char *schema_hash,
				      const struct state_description *items, size_t n, struct t2s_error *err)
{
	int rc = check_database(database, err);
	if (rc == 0)
		rc = check_text("schema_hash", schema_hash, STATE_SCHEMA_HASH_MAX, false, err);
	if (rc < 0)
		return rc;
	if (n > STATE_DESCRIPTIONS_PUT_MAX)
		return t2s_error_set(err, T2S_ERR_INVALID, "at most %u descriptions per call",
				     STATE_DESCRIPTIONS_PUT_MAX);
	if (n == 0)
		return 0;
	if (!items)
		return t2s_error_set(err, T2S_ERR_INVALID, "descriptions are required");
	for (size_t i = 0; i < n; i++)
		if ((rc = check_description(&items[i], i, err)) < 0)
			return rc;
	char *json = descriptions_json(items, n);
	if (!json)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory encoding descriptions");
	struct param p[] = {P_TEXT(database), P_TEXT(schema_hash), P_TEXT(json)};
	struct session x;
	if ((rc = session_open(s, true, &x, err)) < 0) {
		free(json);
		return rc;
	}
	/* One statement per batch; rows are applied in array order, so a later duplicate wins. */
	rc = session_exec(&x,
			  "INSERT INTO description_cache"
			  " (db_name, schema_hash, table_name, column_name, text, source, updated_at)"
			  " SELECT $1, $2, json_extract(value, '$.t'), json_extract(value, '$.c'),"
			  " json_extract(value, '$.x'), json_extract(value, '$.s'), " NOW_LITE
			  " FROM json_each($3) WHERE true ORDER BY key"
			  " ON CONFLICT (db_name, schema_hash, table_name, column_name)"
			  " DO UPDATE SET text = excluded.text, source = excluded.source, updated_at = excluded.updated_at",
			  "INSERT INTO description_cache (db_name, schema_hash, table_name, column_name, text, source)"
			  " SELECT DISTINCT ON (r.t, r.c) $1, $2, r.t, r.c, r.x, r.s"
			  " FROM ROWS FROM (json_to_recordset($3::json) AS (t text, c text, x text, s text))"
			  " WITH ORDINALITY AS r(t, c, x, s, n)"
			  " ORDER BY r.t, r.c, r.n DESC"
			  " ON CONFLICT (db_name, schema_hash, table_name, column_name)"
			  " DO UPDATE SET text = excluded.text, source = excluded.source, updated_at = now()",
			  p, 3, NULL, NULL, NULL, err);
	rc = session_close(&x, rc, err);
	free(json);
	return rc;
}

struct descriptions_build {
	struct state_descriptions *l;
	size_t cap;
};

static int row_description(void *ctx, int ncols, const char *const *vals, const size_t *lens,
			   struct t2s_error *err)
{
	struct descriptions_build *b = ctx;
	struct state_descriptions *l = b->l;
	if (ncols != 4)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store returned an unexpected description row");
	struct state_description *v = arena_grow(&l->arena, l->items, l->n, &b->cap, sizeof(*v));
	if (!v)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading descriptions");
	l->items = v;
	struct state_description *d = &v[l->n];
	bool ok = true;
	d->table = dup_val(&l->arena, vals[0], lens[0], &ok);
	d->column = dup_column(&l->arena, vals[1], lens[1], &ok);
	d->text = dup_val(&l->arena, vals[2], lens[2], &ok);
	d->source = dup_val(&l->arena, vals[3], lens[3], &ok);
	if (!ok)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading descriptions");
	l->n++;
	return 0;
}

int state_store_descriptions_get_all(struct state_store *s, const char *database, const char *schema_hash,
				     struct state_descriptions *ret, struct t2s_error *err)
{
	int rc = check_database(database, err);
	if (rc == 0)
		rc = check_text("schema_hash", schema_hash, STATE_SCHEMA_HASH_MAX, false, err);
	if (rc < 0)
		return rc;
	struct state_descriptions l = {0};
	struct descriptions_build b = {.l = &l};
	struct param p[] = {P_TEXT(database), P_TEXT(schema_hash)};
	struct session x;
	if ((rc = session_open(s, false, &x, err)) < 0)
		return rc;
	rc = session_exec(&x,
			  "SELECT table_name, column_name, text, source FROM description_cache"
			  " WHERE db_name = $1 AND schema_hash = $2 ORDER BY table_name, column_name",
			  "SELECT table_name, column_name, text, source FROM description_cache"
			  " WHERE db_name = $1 AND schema_hash = $2"
			  " ORDER BY table_name COLLATE \"C\", column_name COLLATE \"C\"",
			  p, 2, row_description, &b, NULL, err);
	rc = session_close(&x, rc, err);
	if (rc < 0) {
		state_descriptions_release(&l);
		return rc;
	}
	*ret = l;
	return 0;
}

int state_store_descriptions_prune(struct state_store *s, const char *database, const char *keep_hash,
				   int64_t *ret_removed, struct t2s_error *err)
{
	int rc = check_database(database, err);
	if (rc == 0)
		rc = check_text("schema_hash", keep_hash, STATE_SCHEMA_HASH_MAX, false, err);
	if (rc < 0)
		return rc;
	struct param p[] = {P_TEXT(database), P_TEXT(keep_hash)};
	int64_t removed = 0;
	struct session x;
	if ((rc = session_open(s, true, &x, err)) < 0)
		return rc;
	rc = session_exec(&x, "DELETE FROM description_cache WHERE db_name = $1 AND schema_hash <> $2", NULL, p, 2,
			  NULL, NULL, &removed, err);
	rc = session_close(&x, rc, err);
	if (rc == 0 && ret_removed)
		*ret_removed = removed;
	return rc;
}
