/*
 * exec.h - run one read-only statement against a registered database under
 * the service's guards and limits (the /execute endpoint and, later, the
 * last step of /query).
 *
 * Layers, each able to refuse on its own:
 *   1. statement check: exactly one SELECT / WITH / VALUES statement
 *      (SQLite: prepare + authorizer + sqlite3_stmt_readonly; Postgres:
 *      libpg_query parse tree, see sql_guard_pg.h; MySQL: a lexer's token
 *      check, see sql_guard_mysql.h, and exec_mysql.c for its other layers);
 *   2. the connection: SQLite opened read-only with the guard of
 *      sqlite_guard.h; Postgres inside BEGIN READ ONLY with SET LOCAL
 *      statement_timeout and lock_timeout, the statement run as a cursor
 *      (DECLARE ... CURSOR accepts only queries), the session reset before
 *      it returns to the pool;
 *   3. limits: time (progress handler / statement_timeout), rows (max_rows,
 *      then truncated = true) and result bytes.
 */
#ifndef T2S_EXEC_H
#define T2S_EXEC_H

#include "common/contract.h"
#include "pipeline/db/catalog.h"
#include "common/error.h"
#include "pipeline/sql/sql_guard_pg.h"

#include <jansson.h>
#include <stdbool.h>

struct exec_limits {
	long timeout_ms;
	long lock_timeout_ms;
	long max_rows;
	size_t max_result_bytes;
	size_t max_sql_bytes;
	/*
	 * Memory one statement may take in this process; 0: no ceiling.
	 * SQLite: what its connection allocates while the statement runs
	 * (sqlite_guard_memory_*), and no value longer than max_result_bytes
	 * (SQLITE_LIMIT_LENGTH).  PostgreSQL: a result row longer than
	 * max_result_bytes is refused by the server before it is sent, and the
	 * session gets work_mem = a quarter of this and temp_file_limit = 16
	 * times this (when the role may set it).
	 */
	size_t max_statement_memory_bytes;
	/*
	 * Asked on the caller's thread while the statement runs (about every
	 * 50 ms): true cancels it (SQLite:
	 * the progress handler interrupts it; PostgreSQL: a cancel request)
	 * and the call fails -T2S_ERR_CANCELLED.  NULL: never asked.
	 */
	bool (*cancelled)(void *ctx);
	void *cancel_ctx;
	/*
	 * Table-level access (schema_grant.h): the statement may read only these
	 * tables (SQLite's authorizer; PostgreSQL's guard on the names, then on the
	 * plan); a table outside it is refused as the engine refuses one it does
	 * not have.  NULL: every table.
	 */
	const struct schema_grant *grant;
};

struct exec_result {
	json_t *columns; /* array of column names (owned) */
	json_t *column_types; /* declared type per column, null when the engine knows none (owned) */
	json_t *rows;    /* array of arrays of JSON values (owned) */
	long row_count;
	bool truncated;
	const char *truncated_by; /* "max_rows" or "max_result_bytes" when truncated */
	double elapsed_ms;
	size_t bytes; /* approximate size of rows so far, against max_result_bytes */
};

/*
 * Run sql; on success *ret holds the result (release with exec_result_release).
 * A PostgreSQL database must have a published schema model (its functions
 * and its role check come with it): when none can be introspected the call
 * fails with -T2S_ERR_UNAVAILABLE and the catalog's reason.
 */
T2S_MUST_CHECK
int exec_run(struct catalog_db *db, const char *sql, const struct exec_limits *lim, struct exec_result *ret,
	     struct t2s_error *err);
void exec_result_release(struct exec_result *r);

/*
 * Check that sql is one read-only query the database accepts (it parses and
 * its names resolve) without running it: for stored examples and, later,
 * validation of generated SQL.
 */
T2S_MUST_CHECK
int exec_validate(struct catalog_db *db, const char *sql, const struct exec_limits *lim, struct t2s_error *err);

/*
 * Engine parts, used by exec_run / exec_validate with a pooled connection.
 * PostgreSQL statements may call only the functions that scope->functions
 * (from the database's published schema model, see pg_functions.h) admits
 * and read only relations of scope->schemas (sql_guard_pg_relations.h);
 * each runs with the search_path set to those schemas.
 */
T2S_MUST_CHECK
int exec_sqlite_validate(struct db_conn *c, const char *sql, const struct exec_limits *lim, struct t2s_error *err);
T2S_MUST_CHECK
int exec_pg_validate(struct db_conn *c, const struct sql_guard_pg_scope *scope, const char *sql,
		     const struct exec_limits *lim, struct t2s_error *err);
T2S_MUST_CHECK
int exec_sqlite(struct db_conn *c, const char *sql, const struct exec_limits *lim, struct exec_result *res,
		struct t2s_error *err);
T2S_MUST_CHECK
int exec_pg(struct db_conn *c, const struct sql_guard_pg_scope *scope, const char *sql, const struct exec_limits *lim,
	    struct exec_result *res, struct t2s_error *err);

/*
 * Append one row being built: true while the row and byte caps allow more.
 * Shared by both engines so the limits mean the same everywhere.
 */
bool exec_result_accept_row(struct exec_result *res, const struct exec_limits *lim, json_t *row,
			    size_t row_bytes);

/*
 * A number column's value as a driver writes it (v, n bytes, NUL-terminated)
 * in JSON, the same on every engine: a whole integer that fits 64 bits as an
 * integer, another finite number as a real, and the text itself when it
 * would not survive as either (an integer past 64 bits, NaN, Infinity, out
 * of a double's range).  A new reference; NULL when out of memory.
 */
json_t *exec_number_json(const char *v, size_t n);

/*
 * True while a row whose values so far take row_bytes still fits the byte
 * budget: engines stop converting a row's values as soon as it does not
 * (exec_result_accept_row then drops it and marks the result truncated).
 */
bool exec_result_row_fits(const struct exec_result *res, const struct exec_limits *lim, size_t row_bytes);

#endif
