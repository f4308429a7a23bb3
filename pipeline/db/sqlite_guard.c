/*
 * sqlite_guard.c - authorizer, limits and deadline for SQLite connections
 * (see sqlite_guard.h).
 */
#include "pipeline/db/sqlite_guard.h"

#include "common/clock.h"
#include "common/error.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Functions that reach outside the database or load code. */
static const char *const denied_functions[] = {
	"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "sqlite_dbpage", NULL,
};

/* Pragmas that only describe the schema; usable as table-valued functions too. */
static const char *const schema_pragmas[] = {
	"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list", NULL,
};

static bool in_list(const char *name, const char *const *list)
{
	for (; name && *list; list++)
		if (strcasecmp(name, *list) == 0)
			return true;
	return false;
}

static const char *action_name(int action)
{
	switch (action) {
	case SQLITE_INSERT: return "INSERT";
	case SQLITE_UPDATE: return "UPDATE";
	case SQLITE_DELETE: return "DELETE";
	case SQLITE_ATTACH: return "ATTACH";
	case SQLITE_DETACH: return "DETACH";
	case SQLITE_TRANSACTION: return "transaction control";
	case SQLITE_SAVEPOINT: return "SAVEPOINT";
	case SQLITE_PRAGMA: return "PRAGMA";
	case SQLITE_ALTER_TABLE: return "ALTER TABLE";
	case SQLITE_REINDEX: return "REINDEX";
	case SQLITE_ANALYZE: return "ANALYZE";
	case SQLITE_CREATE_VTABLE: return "CREATE VIRTUAL TABLE";
	case SQLITE_DROP_VTABLE: return "DROP VIRTUAL TABLE";
	default: return action >= SQLITE_CREATE_INDEX && action <= SQLITE_DROP_VIEW ? "schema change (CREATE/DROP)"
										      : "this operation";
	}
}

static int deny(struct sqlite_guard *g, const char *what, const char *arg)
{
	if (!g->denied[0])
		snprintf(g->denied, sizeof(g->denied), "%s%s%s is not allowed", what, arg ? " " : "", arg ? arg : "");
	return SQLITE_DENY;
}

static int authorize(void *ctx, int action, const char *a1, const char *a2, const char *db_name,
		     const char *trigger)
{
	struct sqlite_guard *g = ctx;
	(void)db_name;
	switch (action) {
	case SQLITE_SELECT:
	case SQLITE_READ:
	case SQLITE_RECURSIVE:
		return SQLITE_OK;
	case SQLITE_FUNCTION:
		if (in_list(a2, denied_functions))
			return deny(g, "function", a2);
		return SQLITE_OK;
	case SQLITE_UPDATE:
		/*
		 * SQLite itself asks for this while it sets up the eponymous
		 * pragma_* virtual tables.  The connection is read-only, so no
		 * write can follow; user UPDATEs never get here (leading keyword
		 * check, sqlite3_stmt_readonly).
		 */
		if (a1 && strcmp(a1, "sqlite_master") == 0 && trigger == NULL)
			return SQLITE_OK;
		return deny(g, "UPDATE", a1);
	case SQLITE_PRAGMA:
		if (in_list(a1, schema_pragmas))
			return SQLITE_OK;
		return deny(g, "PRAGMA", a1);
	default:
		return deny(g, action_name(action), NULL);
	}
}

static int progress(void *ctx)
{
	struct sqlite_guard *g = ctx;
	if (g->deadline_ms > 0 && clock_now_ms() > g->deadline_ms) {
		g->timed_out = true;
		return 1; /* interrupts the statement with SQLITE_INTERRUPT */
	}
	return 0;
}

int sqlite_guard_install(sqlite3 *db, struct sqlite_guard *g)
{
	static const struct {
		int id;
		int value;
	} limits[] = {
		{SQLITE_LIMIT_ATTACHED, 0},
		{SQLITE_LIMIT_LENGTH, 16 << 20},
		{SQLITE_LIMIT_SQL_LENGTH, 1 << 20},
		{SQLITE_LIMIT_COLUMN, 2000},
		{SQLITE_LIMIT_EXPR_DEPTH, 500},
		{SQLITE_LIMIT_COMPOUND_SELECT, 100},
		{SQLITE_LIMIT_VDBE_OP, 1 << 20},
		{SQLITE_LIMIT_FUNCTION_ARG, 64},
		{SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 10000},
		{SQLITE_LIMIT_VARIABLE_NUMBER, 1000},
		{SQLITE_LIMIT_TRIGGER_DEPTH, 1},
		{SQLITE_LIMIT_WORKER_THREADS, 0},
	};
	g->mode = SQLITE_GUARD_QUERY;
	g->deadline_ms = 0;
	g->timed_out = false;
	g->denied[0] = '\0';
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		sqlite3_limit(db, limits[i].id, limits[i].value);
	if (sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL) != SQLITE_OK ||
	    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL) != SQLITE_OK ||
	    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL) != SQLITE_OK ||
	    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL) != SQLITE_OK)
		return -T2S_ERR_INTERNAL;
	if (sqlite3_set_authorizer(db, authorize, g) != SQLITE_OK)
		return -T2S_ERR_INTERNAL;
	sqlite3_progress_handler(db, 1000, progress, g);
	return 0;
}

void sqlite_guard_arm(struct sqlite_guard *g, enum sqlite_guard_mode mode, long timeout_ms)
{
	g->mode = mode;
	g->timed_out = false;
	g->denied[0] = '\0';
	g->deadline_ms = timeout_ms > 0 ? clock_now_ms() + (double)timeout_ms : 0;
}
