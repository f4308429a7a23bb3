/*
 * sqlite_guard.h - the SQLite side of safe execution: every connection the
 * service opens to a SQLite database is read-only (SQLITE_OPEN_READONLY) and
 * carries this guard:
 *
 *   - an authorizer that allows reads, SELECT, recursive CTEs and functions
 *     (minus a deny-list: load_extension, readfile, writefile, edit,
 *     fts3_tokenizer) and denies every write, DDL, ATTACH/DETACH,
 *     transaction and savepoint; PRAGMA only for the harmless table-valued
 *     schema pragmas (table_info and friends);
 *   - SQLITE_DBCONFIG_DEFENSIVE, untrusted schema, no extension loading;
 *   - lowered sqlite3_limit()s (no attached databases, bounded lengths,
 *     expression depth, compound selects, VDBE program size);
 *   - a progress handler that interrupts a statement past its deadline.
 *
 * The guard struct is owned by the connection (struct db_conn) and is only
 * touched by the thread that holds the connection.
 */
#ifndef T2S_SQLITE_GUARD_H
#define T2S_SQLITE_GUARD_H

#include <sqlite3.h>
#include <stdbool.h>

enum sqlite_guard_mode {
	SQLITE_GUARD_QUERY,      /* user SQL: reads only */
	SQLITE_GUARD_INTROSPECT, /* the catalog: reads plus schema pragmas */
};

struct sqlite_guard {
	enum sqlite_guard_mode mode;
	double deadline_ms; /* clock_now_ms() value after which statements stop; 0 = none */
	bool timed_out;     /* set when the progress handler interrupted */
	char denied[256];   /* why the authorizer refused, "" when it did not */
};

/* Apply limits, db configs, authorizer and progress handler to db. 0 or -T2S_ERR_*. */
int sqlite_guard_install(sqlite3 *db, struct sqlite_guard *g);

/* Prepare the guard for the next statement: mode, fresh deadline (timeout_ms <= 0: none). */
void sqlite_guard_arm(struct sqlite_guard *g, enum sqlite_guard_mode mode, long timeout_ms);

#endif
