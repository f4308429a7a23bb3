/*
 * sqlite_guard.h - the SQLite side of safe execution: every connection the
 * service opens to a SQLite database is read-only (SQLITE_OPEN_READONLY) and
 * carries this guard:
 *
 *   - an authorizer that allows reads of the main database only (not temp:
 *     temp.sqlite_master is refused), SELECT, recursive CTEs and functions
 *     (minus a deny-list: load_extension, readfile, writefile, edit,
 *     fts3_tokenizer) and denies every write, DDL, ATTACH/DETACH,
 *     transaction and savepoint; PRAGMA only for the harmless table-valued
 *     schema pragmas (table_info and friends);
 *   - SQLITE_DBCONFIG_DEFENSIVE, untrusted schema, no extension loading;
 *   - lowered sqlite3_limit()s (no attached databases, bounded lengths,
 *     expression depth, compound selects, VDBE program size);
 *   - a progress handler that interrupts a statement past its deadline;
 *   - a per-statement memory ceiling: SQLite's allocator is wrapped once per
 *     process (sqlite_guard_global_init) so that what a thread allocates
 *     through SQLite between sqlite_guard_memory_begin and _end is counted
 *     against that thread's budget; past it allocations fail and the
 *     statement stops with SQLITE_NOMEM.  A connection is used by one
 *     thread at a time and SQLite runs a statement on the caller's thread
 *     (worker threads are off), so a thread's count is its statement's.
 *     sqlite3_hard_heap_limit64 would be one limit for the whole process:
 *     one greedy statement would make every other thread's statements fail.
 *
 * The guard struct is owned by the connection (struct db_conn) and is only
 * touched by the thread that holds the connection.
 */
#ifndef T2S_SQLITE_GUARD_H
#define T2S_SQLITE_GUARD_H

#include "common/contract.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * SQLITE_LIMIT_LENGTH (longest string, blob or row) outside user statements
 * (introspection, probes); a user statement gets the smaller of this and
 * its result budget (exec_sqlite.c).
 */
#define SQLITE_GUARD_LENGTH_DEFAULT (16 << 20)

enum sqlite_guard_mode {
	SQLITE_GUARD_QUERY,      /* user SQL: reads only */
	SQLITE_GUARD_INTROSPECT, /* the catalog: reads plus schema pragmas */
};

struct sqlite_guard {
	enum sqlite_guard_mode mode;
	double deadline_ms; /* clock_now_ms() value after which statements stop; 0 = none */
	bool timed_out;     /* set when the progress handler interrupted */
	/* Asked at most every SQLITE_GUARD_CANCEL_CHECK_MS while a statement runs; true interrupts it. NULL: never. */
	bool (*cancelled)(void *ctx);
	void *cancel_ctx;
	double next_cancel_check_ms;
	bool was_cancelled; /* set when cancelled() stopped the statement */
	char denied[256];   /* why the authorizer refused, "" when it did not */
	/* Table-level access (schema_grant.h): a table the statement reads, by name or through a view,
	   that table_allowed (NULL: every table) refuses is denied and named in hidden_table. */
	bool (*table_allowed)(void *ctx, const char *table);
	void *table_ctx;
	char hidden_table[128];
	char hidden_via[128]; /* the view or CTE the hidden table was read through, "" when none */
};

/* Apply limits, db configs, authorizer and progress handler to db. 0 or -T2S_ERR_*. */
T2S_MUST_CHECK
int sqlite_guard_install(sqlite3 *db, struct sqlite_guard *g);

/*
 * Reads of the next statements are limited to the tables allowed accepts
 * (NULL: none is; sqlite_guard_arm keeps the setting, set it back to NULL
 * after the statement): a denied read sets hidden_table and denied.
 */
void sqlite_guard_tables(struct sqlite_guard *g, bool (*allowed)(void *ctx, const char *table), void *ctx);

/* How often a running statement asks its cancelled callback. */
#define SQLITE_GUARD_CANCEL_CHECK_MS 50.0

/* Prepare the guard for the next statement: mode, fresh deadline (timeout_ms <= 0: none), no cancel callback. */
void sqlite_guard_arm(struct sqlite_guard *g, enum sqlite_guard_mode mode, long timeout_ms);
/* After arming: the statement is interrupted once cancelled(ctx) says true (was_cancelled then set). */
void sqlite_guard_cancel_on(struct sqlite_guard *g, bool (*cancelled)(void *ctx), void *ctx);

/*
 * Wrap SQLite's allocator with the per-thread accounting above.  Must run
 * before any other SQLite call of the process (sqlite3_config's rule); the
 * service calls it first thing.  0, or -T2S_ERR_INTERNAL when SQLite was
 * already initialised (then there is no memory ceiling: begin/end still work
 * but never refuse).  Idempotent and thread-safe.
 */
T2S_MUST_CHECK
int sqlite_guard_global_init(void);

/*
 * Start counting this thread's SQLite allocations against limit_bytes
 * (0: count, never refuse).  Pair with sqlite_guard_memory_end on the
 * same thread.
 */
void sqlite_guard_memory_begin(size_t limit_bytes);

/*
 * Stop counting.  Returns true when an allocation was refused since begin
 * (the statement failed for the ceiling); *ret_peak (may be NULL) is the
 * most the thread held at once, in bytes.
 */
bool sqlite_guard_memory_end(size_t *ret_peak);

#endif
