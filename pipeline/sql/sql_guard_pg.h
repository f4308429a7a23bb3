/*
 * sql_guard_pg.h - the PostgreSQL statement safety check used before any SQL
 * reaches a PostgreSQL database (POST /execute, POST /query, validation).
 *
 * The statement is parsed with libpg_query (PostgreSQL 15's own grammar), and
 * the whole raw parse tree is walked: exactly one statement, a SelectStmt at
 * the top (SELECT, WITH ... SELECT, VALUES, TABLE, UNION/INTERSECT/EXCEPT),
 * and nowhere inside it a data-modifying or utility statement, SELECT INTO,
 * a row-locking clause, or a call of a function that the database's own
 * catalog does not admit (pg_functions.h: IMMUTABLE or STABLE, not SECURITY
 * DEFINER, plus a few harmless VOLATILE built-ins, so file access, backend
 * signalling, configuration changes, sleeps, locks, sequences and functions
 * that run SQL text are all refused whatever their name), or one of a few
 * STABLE built-ins that reach too far (table_to_xml and friends,
 * txid_current, and those that show other sessions, databases or settings:
 * pg_stat_get_*, pg_show_all_settings, has_database_privilege, ...).  Every
 * relation it reads must lie in the database's schemas or be one of three
 * catalog views (sql_guard_pg_relations.h): pg_stat_activity, pg_database
 * and the like are refused.
 *
 * This is one layer of several: the database side still runs the statement in
 * a read-only transaction, with statement_timeout, under a role that can only
 * read.  The guard cannot see inside user-defined functions or views.
 *
 * Threads: libpg_query runs only on two parser threads that this module
 * starts on first use (detached, with a large lazily-committed stack) and
 * that live until the process exits; callers hand them the statement and
 * wait.  So any thread may call the check, threads may come and go, and the
 * caller never needs pg_query_exit() (do not call it: in libpg_query 15-4.0 it
 * double-frees when the thread later exits).  Do not fork() after the first
 * check: the child would have no parser threads and would wait forever.
 */
#ifndef T2S_SQL_GUARD_PG_H
#define T2S_SQL_GUARD_PG_H

#include <jansson.h>

#include "common/contract.h"
#include "common/error.h"
#include "pipeline/db/pg_functions.h"

/* Longest statement, in bytes, that the guard will look at. */
#define SQL_GUARD_PG_MAX_LEN (1 << 20)

/* Deepest parse tree (in JSON nesting levels) that the guard will walk. */
#define SQL_GUARD_PG_MAX_DEPTH 2000

/* What a statement may use on one database. */
struct schema;

struct sql_guard_pg_scope {
	const struct pg_functions *functions; /* the database's (from its published schema model); NULL: no call */
	const char *const *schemas;           /* the schemas whose relations it may read (databases[].schemas);
						 NULL: every schema but the system ones */
	size_t n_schemas;
	/* A caller's view (schema_grant.h): only its tables may be named (sql_guard_pg_check_relations_in);
	   NULL: no such limit */
	const struct schema *view;
};

/*
 * Checks that sql is exactly one read-only query for PostgreSQL, calling
 * only functions that scope->functions admits and reading only relations
 * of scope->schemas or the catalog views of sql_guard_pg_relations.h.
 * scope NULL admits no function call and every non-system schema.
 *
 * Returns 0 when allowed;
 * -T2S_ERR_SQL_INVALID when it does not parse (the message carries the
 *  parser's message and cursor position), or when it calls a function that
 *  the database does not have ("function f taking 2 arguments does not
 *  exist in this database");
 * -T2S_ERR_SQL_REJECTED with a reason naming what was refused (e.g. "only
 *  SELECT, WITH and VALUES statements are allowed, got INSERT", "function
 *  pg_read_file is not allowed: it is VOLATILE (...)", "data-modifying statement inside WITH is not
 *  allowed", "SELECT INTO is not allowed", "FOR UPDATE/SHARE is not allowed",
 *  "exactly one statement is allowed, got 2", "empty statement",
 *  "statement too deeply nested", "statement is too long", "relation
 *  pg_stat_activity (pg_catalog.pg_stat_activity) is not allowed: ...");
 * -T2S_ERR_INVALID when sql is NULL;
 * -T2S_ERR_NOMEM / -T2S_ERR_INTERNAL when the parser or JSON reader fails for
 *  reasons unrelated to the statement;
 * -T2S_ERR_UNAVAILABLE when no parser thread could be started.
 *
 * sql is borrowed; err (may be NULL) is filled on failure only.
 * Thread-safe; blocks while a parser thread works (microseconds for usual
 * statements, about a second for a pathological 1 MiB one).
 */
T2S_MUST_CHECK
int sql_guard_pg_check(const char *sql, const struct sql_guard_pg_scope *scope, struct t2s_error *err);

/*
 * As sql_guard_pg_check; on 0, when ret_end is not NULL, *ret_end is the
 * byte offset where the statement ends in sql: before a trailing ";" and
 * whatever follows it (so sql[0, *ret_end) can be nested in another query).
 */
T2S_MUST_CHECK
int sql_guard_pg_check_statement(const char *sql, const struct sql_guard_pg_scope *scope, size_t *ret_end,
				 struct t2s_error *err);

/*
 * As sql_guard_pg_check_statement, for running the statement: when it
 * reads a catalog view that the database's configured schemas narrow
 * (sql_guard_pg_relations.h), *ret_sql is a new string, the statement with
 * those views narrowed, to run instead of sql (the caller frees it;
 * *ret_end is then its length); else *ret_sql is NULL.
 */
T2S_MUST_CHECK
int sql_guard_pg_check_scoped(const char *sql, const struct sql_guard_pg_scope *scope, size_t *ret_end,
			      char **ret_sql, struct t2s_error *err);

/*
 * Parses sql with libpg_query, on the parser threads, and returns the raw
 * parse tree as JSON ({"version": ..., "stmts": [{"stmt": {...}}, ...]}): the
 * same parse that sql_guard_pg_check walks, with no safety check applied.
 * For callers that need facts about a statement (pipeline/sql/sql_analyze.c);
 * they must not treat a tree as allowed without sql_guard_pg_check.
 *
 * On 0, *ret_tree is a new reference the caller must json_decref.
 * Errors as for sql_guard_pg_check, minus the refusals of the walk:
 * -T2S_ERR_SQL_INVALID when it does not parse (message "<parser message> at
 *  character N" when the parser gave a position), and then, when
 *  ret_error_pos is not NULL, *ret_error_pos is that 1-based byte position
 *  (0 when none; it is set to 0 on every other outcome);
 * -T2S_ERR_SQL_REJECTED when longer than SQL_GUARD_PG_MAX_LEN or nested
 *  deeper than jansson reads, or when the tree is unreadable;
 * -T2S_ERR_INVALID (sql or ret_tree NULL), -T2S_ERR_NOMEM,
 * -T2S_ERR_UNAVAILABLE (no parser thread).
 *
 * sql is borrowed; err (may be NULL) is filled on failure only.  Thread-safe.
 */
T2S_MUST_CHECK
int sql_guard_pg_parse_tree(const char *sql, json_t **ret_tree, int *ret_error_pos, struct t2s_error *err);

#endif
