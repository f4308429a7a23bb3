/*
 * state_store_internal.h - what the files of the state store share
 * (pipeline/store/ only, never included from outside): the store object,
 * sessions (one transaction on one connection), statement parameters, input
 * checks, and the table-driven reading of result rows into a record list.
 *
 * A record kind (state_examples.c, state_feedback.c, state_overrides.c,
 * state_descriptions.c) is its SQL text, a struct row_kind saying how one
 * result row becomes one item, and its checks; sessions, statements, paging
 * and row reading are written once, in state_session.c and state_rows.c; what
 * differs between a SQLite file and a PostgreSQL schema is a struct
 * store_backend (state_backend_sqlite.c, state_backend_pg.c).
 *
 * Calls flow one way: state_session.c (checks, sessions and statements,
 * dispatched to the backend) is the bottom; the backends and state_store.c
 * (the store's life, store_session_open/close) call it; state_rows.c (a
 * session per read or write) calls both; the record kinds call all three.
 */
#ifndef T2S_STATE_STORE_INTERNAL_H
#define T2S_STATE_STORE_INTERNAL_H

#include "common/contract.h"
#include "pipeline/store/state_store.h"

#include "pipeline/db/db.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stddef.h>

#define PG_SCHEMA_NAME_MAX 63u

/* Advisory lock class ids (first key of pg_advisory_xact_lock(int4, int4)): "t2s" + kind. */
#define LOCK_MIGRATE 0x74327301
#define LOCK_EXAMPLES 0x74327302
#define LOCK_OVERRIDES 0x74327303
#define LOCK_FEEDBACK 0x74327304

#define STR_(x) #x
#define STR(x) STR_(x)
/*
 * The rows of a page bounded in bytes (state_store.h, Pages): inner lists
 * the page's rows as (pid, sz), sz the bytes a row stores; the rows kept are
 * a prefix whose running sum of sz + STATE_PAGE_ROW_BYTES stays within
 * parameter budget, and always the first.  Appended to "SELECT cols FROM
 * table", whose id column it joins; ordered by id.  Only ids and sizes pass
 * through the window, never the texts.
 */
#define PAGE_WITHIN_BYTES(inner, budget)                                                                             \
	" JOIN (SELECT pid, row_number() OVER w AS rn, sum(sz + " STR(STATE_PAGE_ROW_BYTES) ") OVER w AS run"         \
	" FROM (" inner ") AS p WINDOW w AS (ORDER BY pid)) AS w ON id = w.pid"                                       \
	" WHERE w.rn = 1 OR w.run <= " budget " ORDER BY id"
/* A text column's bytes in each dialect. */
#define BYTES_LITE(col) "length(CAST(" col " AS BLOB))"
#define BYTES_PG(col) "octet_length(" col ")"

/* Columns of the widest result row any statement here returns. */
#define ROW_COLS_MAX 8

/* Current time and timestamp rendering in each dialect. */
#define NOW_LITE "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
#define TS_PG(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

struct store_backend;

struct state_store {
	const struct store_backend *backend; /* where the state lives: SQLite file or PostgreSQL pool */
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

/* ---- state_session.c: input checks and values read back ---- */

/*
 * Check a string input: present, at most max bytes, valid UTF-8, and
 * non-empty unless allow_empty.  field names it in the message.
 */
T2S_MUST_CHECK
int store_check_text(const char *field, const char *v, size_t max, bool allow_empty, struct t2s_error *err);
T2S_MUST_CHECK
int store_check_database(const char *database, struct t2s_error *err);
/* Table name required, column optional (NULL: the table itself) but never empty. */
T2S_MUST_CHECK
int store_check_target(const char *table, const char *column, struct t2s_error *err);
/* A page: limit 1..STATE_LIST_LIMIT_MAX, offset >= 0. */
T2S_MUST_CHECK
int store_check_page(long limit, long offset, struct t2s_error *err);
/* Strict decimal int64 of text from the database. */
T2S_MUST_CHECK
int store_parse_i64(const char *v, int64_t *ret, struct t2s_error *err);
/* Row callback: the first column as an int64 into *(int64_t *)ctx (NULL reads as 0). */
T2S_MUST_CHECK
int store_row_i64(void *ctx, int ncols, const char *const *vals, const size_t *lens, struct t2s_error *err);
/* Copy of a value into the arena ("" stays ""; NULL stays NULL); *ok is cleared on OOM. */
const char *store_dup(struct arena *a, const char *v, size_t len, bool *ok);
/* A stored column name as the API shows it: '' (the table itself) becomes NULL. */
const char *store_dup_column(struct arena *a, const char *v, size_t len, bool *ok);
/* Free a result list's arena and zero the list l of size bytes (its release function). */
void store_list_release(struct arena *arena, void *l, size_t size);

/* ---- the backends: state_backend_sqlite.c, state_backend_pg.c ---- */

/*
 * Where the store keeps its state and how a session runs there; one per
 * kind of URL, picked by state_store.c.  Each function gets the store (or a
 * session of it) and fills err on failure (0 / negative code).
 */
struct store_backend {
	const char *name;                 /* "sqlite", "postgresql": state_store_backend */
	const char *const *url_prefixes;  /* the state URLs it serves, NULL-ended */
	const char *const *migrations;    /* STATE_STORE_SCHEMA_VERSION scripts: schema version i to i + 1 */
	/* Take url (its prefix included) when the store is made; nothing is opened. */
	int (*init)(struct state_store *s, const char *url, struct t2s_error *err);
	/* (Re)connect before each attempt to become ready (the SQLite file); 0 when there is nothing to do. */
	int (*connect)(struct state_store *s, struct t2s_error *err);
	/* After a failed attempt: close what connect opened. */
	void (*disconnect)(struct state_store *s);
	/* Free what init and connect made (a store half made too). */
	void (*release)(struct state_store *s);
	/* The first statements of the migration's session: serialise migrators, create schema_version when missing. */
	int (*prepare_migration)(struct session *x, struct t2s_error *err);
	/* store_session_begin, store_session_end, store_session_script, store_session_exec for this backend. */
	int (*begin)(struct session *x, bool write, struct t2s_error *err);
	int (*end)(struct session *x, int rc, struct t2s_error *err);
	int (*script)(struct session *x, const char *sql, struct t2s_error *err);
	int (*exec)(struct session *x, const char *sql_lite, const char *sql_pg, const struct param *p, int np, row_fn fn,
		    void *ctx, int64_t *ret_changes, struct t2s_error *err);
};

extern const struct store_backend store_backend_sqlite;
extern const struct store_backend store_backend_pg;

/* SQLite backend: map an SQLite result code to a T2S code with err filled. */
int store_sqlite_failure(struct state_store *s, int rc, struct t2s_error *err);

/* ---- state_session.c: sessions and statements, run by the store's backend ---- */
/* Run a parameterless SQL script (may hold several statements). */
T2S_MUST_CHECK
int store_session_script(struct session *x, const char *sql, struct t2s_error *err);
/*
 * Start a transaction: write = true takes SQLite's write lock up front
 * (BEGIN IMMEDIATE) so a read-then-write cannot deadlock with another
 * process.  On success the caller must call store_session_end (or
 * store_session_close) exactly once.
 */
T2S_MUST_CHECK
int store_session_begin(struct state_store *s, bool write, struct session *x, struct t2s_error *err);
/*
 * End the transaction: COMMIT when rc == 0, else ROLLBACK; then give the
 * connection back.  Returns rc, or the COMMIT's failure.
 */
T2S_MUST_CHECK
int store_session_end(struct session *x, int rc, struct t2s_error *err);
/*
 * Run one statement with parameters $1..$np.  sql_lite is the SQLite text
 * and, unless sql_pg is given, the Postgres one too; a NULL text for the
 * session's engine skips the statement (returns 0, rows untouched).  fn (may
 * be NULL) sees every row; *ret_changes (may be NULL) gets the number of rows
 * inserted, updated or deleted.
 */
T2S_MUST_CHECK
int store_session_exec(struct session *x, const char *sql_lite, const char *sql_pg, const struct param *p, int np,
		       row_fn fn, void *ctx, int64_t *ret_changes, struct t2s_error *err);
/*
 * Postgres: serialise writers of one kind of row for one database across
 * replicas until the transaction ends (a no-op on SQLite, where BEGIN
 * IMMEDIATE already did).
 */
T2S_MUST_CHECK
int store_lock_database(struct session *x, int kind, const char *database, struct t2s_error *err);
/* ---- state_rows.c: a session per read or write; result rows into a record list ---- */

/* One statement in a session of its own (see store_session_exec); a write one counts as the last write. */
T2S_MUST_CHECK
int store_exec_one(struct state_store *s, bool write, const char *sql_lite, const char *sql_pg,
		   const struct param *p, int np, int64_t *ret_changes, struct t2s_error *err);

/* How a result column becomes a field of an item. */
enum field_type {
	FIELD_TEXT,   /* const char *, copied into the list's arena (NULL stays NULL) */
	FIELD_COLUMN, /* const char *, a stored column name: '' (the table itself) becomes NULL */
	FIELD_I64,    /* int64_t, strict decimal; NULL reads as 0 */
	FIELD_BOOL,   /* bool, an integer: non-zero is true */
};

struct field {
	size_t offset; /* of the field in the item */
	enum field_type type;
};

struct rows;

/* How one result row of a record kind becomes one item: column i fills fields[i]. */
struct row_kind {
	const char *row_name;  /* "example": "unexpected example row" */
	const char *list_name; /* "examples": "out of memory reading examples" */
	size_t size;           /* bytes of an item */
	const struct field *fields;
	int ncols;             /* columns of every row, one per field */
	/* Move the rows read into the kind's public list struct at ret (its arena becomes the list's). */
	void (*take)(struct rows *r, void *ret);
};

#define ROW_KIND(row_name, list_name, item_type, fields, take)                                                      \
	{(row_name), (list_name), sizeof(item_type), (fields), (int)(sizeof(fields) / sizeof((fields)[0])), (take)}

/* The fields of a row (table_name, column_name, text, last) of a description-like record. */
#define DESCRIPTION_FIELDS(item_type, last)                                                                          \
	{                                                                                                            \
		{offsetof(item_type, table), FIELD_TEXT}, {offsetof(item_type, column), FIELD_COLUMN},               \
		{offsetof(item_type, text), FIELD_TEXT}, {offsetof(item_type, last), FIELD_TEXT},                    \
	}

/* Items read so far, until the kind's take moves them into its list. */
struct rows {
	const struct row_kind *kind;
	struct arena arena; /* owns items and every string they point to */
	void *items;        /* n items of kind->size bytes */
	size_t n, cap;
	int64_t total;      /* the count statement's answer, else n */
};

/*
 * A read of one record kind, each statement in its two dialects (pg NULL:
 * the SQLite text serves both): an optional count (of the rows the parameters
 * $1..$count_np match, into total) and the rows (parameters $1..$np).
 */
struct rows_query {
	const char *count_lite, *count_pg; /* NULL: no count */
	int count_np;
	const char *lite, *pg;
	int np;
};

/*
 * Run q in one read session and move the rows of kind into the list at ret
 * (kind's public list struct, written only on success).  With absent given,
 * no row is -T2S_ERR_NOT_FOUND with that message.
 */
T2S_MUST_CHECK
int store_rows_read(struct state_store *s, const struct row_kind *kind, const struct rows_query *q,
		    const struct param *p, const char *absent, void *ret, struct t2s_error *err);

/* ---- state_store.c ---- */

/* A transaction of a public call: the store must be ready (opened and migrated). */
T2S_MUST_CHECK
int store_session_open(struct state_store *s, bool write, struct session *x, struct t2s_error *err);
/* store_session_end, and a write session's outcome becomes the store's last write outcome. */
T2S_MUST_CHECK
int store_session_close(struct session *x, int rc, struct t2s_error *err);
/* Record a write's outcome: failures of the store itself, not refusals of the input. */
void store_note_write(struct state_store *s, int rc, const struct t2s_error *err);

/* ---- state_examples.c ---- */

/*
 * Inside an open write session: -T2S_ERR_QUOTA when database holds max rows
 * of table already (what names them in the message), after taking the
 * Postgres lock of that kind.
 */
T2S_MUST_CHECK
int store_check_quota(struct session *x, int lock, const char *table, const char *database, long max,
		      const char *what, struct t2s_error *err);

/* Inside an open write session: insert one example under the per-database cap; *ret_id its id. */
T2S_MUST_CHECK
int store_example_insert(struct session *x, const char *database, const char *question, const char *sql,
			 int64_t *ret_id, struct t2s_error *err);

#endif
