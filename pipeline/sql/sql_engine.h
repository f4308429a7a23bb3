/*
 * sql_engine.h - the execution half of an engine: how user SQL is checked,
 * validated and run on one engine's connection, and in which dialect it is
 * analysed.  The other half, in pipeline/db/engine.h, connects,
 * introspects and knows the dialect's facts; sql_engine_of finds this half
 * for it.  exec.c dispatches through it; nothing names an engine.
 */
#ifndef T2S_SQL_ENGINE_H
#define T2S_SQL_ENGINE_H

#include "pipeline/db/catalog.h"
#include "pipeline/sql/exec.h"
#include "pipeline/sql/sql_analyze.h"

#include <stdbool.h>

/*
 * What a statement on a database may use: the database and, for an engine
 * that needs_model, a reference to its published schema model (NULL: none
 * taken), dropped by exec.c after the statement.
 */
struct exec_scope {
	const struct catalog_db *db;
	struct schema *schema;
};

struct sql_engine {
	const struct db_engine *db;
	enum sql_dialect dialect; /* how sql_analyze reads its statements */
	/*
	 * Statements are checked against the published schema model (its
	 * functions): exec_run and exec_validate take a reference first and
	 * fail with the catalog's reason when there is none.
	 */
	bool needs_model;
	/*
	 * run and validate refuse reading a table outside scope->schema when it
	 * is a caller's view (table-level access, pipeline/db/schema_grant.h).
	 * An engine without it (false) runs no statement for such a caller:
	 * exec.c refuses it (fail closed).
	 */
	bool enforces_views;
	/* exec_validate's check of one statement on a pooled connection (exec.h). */
	int (*validate)(struct db_conn *c, const struct exec_scope *scope, const char *sql,
			const struct exec_limits *lim, struct t2s_error *err);
	/* exec_run's run of one statement on a pooled connection, rows into res (exec.h). */
	int (*run)(struct db_conn *c, const struct exec_scope *scope, const char *sql, const struct exec_limits *lim,
		   struct exec_result *res, struct t2s_error *err);
};

extern const struct sql_engine sql_engine_sqlite;
extern const struct sql_engine sql_engine_pg;
extern const struct sql_engine sql_engine_mysql;

/* The execution half of engine e (never NULL for an engine of pipeline/db/). */
const struct sql_engine *sql_engine_of(const struct db_engine *e);

#endif
