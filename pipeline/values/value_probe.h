/*
 * value_probe.h - confirm a value against the live database (SEED's sample
 * SQL): which stored spelling and case a question's mention really has in a
 * given column.
 *
 * A probe is one parameterised SELECT on one column, run read-only through
 * the database's pool: first a case-insensitive equality
 *
 *     SELECT DISTINCT "col" FROM "tab" WHERE lower("col") = lower(?1) LIMIT 5
 *
 * and, when that finds nothing, a case-insensitive partial match with the
 * mention's spaces turned into wildcards (SEED's `LIKE '%v%'`):
 *
 *     SELECT DISTINCT "col" FROM "tab" WHERE "col" LIKE ?1 ESCAPE '\' LIMIT 5
 *
 * (the engine writes both: pipeline/db/engine.h, probe_sql; PostgreSQL
 * with $1, ILIKE, "schema"."table", the column cast to text).  The value is
 * always a bound parameter, never spliced into the text; names are quoted
 * by the engine; LIKE wildcards inside the value are escaped.  The engine
 * runs it read-only under the timeout (db_engine.query: SQLite under the
 * connection's guard, PostgreSQL inside BEGIN READ ONLY, rolled back).
 *
 * The result keeps the statement text that produced the rows and the bound
 * value separately, for provenance.
 */
#ifndef T2S_VALUE_PROBE_H
#define T2S_VALUE_PROBE_H

#include "common/contract.h"
#include "pipeline/db/catalog.h"
#include "pipeline/db/db.h"
#include "common/error.h"
#include "pipeline/db/schema.h"

#include <stddef.h>

#define VALUE_PROBE_MAX_ROWS 5
#define VALUE_PROBE_MAX_VALUE_LEN 1000 /* bytes; longer values are rejected as invalid */
#define VALUE_PROBE_TIMEOUT_DEFAULT_MS 1000L /* per statement; also evidence's probe_timeout_ms default */

struct value_probe_result {
	char *sql;       /* the statement that produced rows (or the last one run), with its placeholder */
	char *param;     /* the value bound to it: the mention itself, or the LIKE pattern */
	const char *how; /* "equal" (case-insensitive equality) or "like" (partial); static string */
	char **rows;     /* distinct stored values as text, an exact-case match first; n_rows <= 5 */
	size_t n_rows;   /* 0: the value is not in the column */
	double elapsed_ms;
};

/*
 * Probe column `column` of table `table` (indexes into s, the schema model of
 * db) for value.  timeout_ms bounds each statement (<= 0:
 * VALUE_PROBE_TIMEOUT_DEFAULT_MS).  On success *ret is filled (n_rows may be
 * 0) and the caller frees it with value_probe_result_release.  Errors: -T2S_ERR_INVALID (bad indexes, empty
 * or over-long value), -T2S_ERR_TIMEOUT, -T2S_ERR_SQL_FAILED,
 * -T2S_ERR_UNAVAILABLE (no connection), -T2S_ERR_NOMEM.  Thread-safe: each
 * call takes its own pooled connection.
 */
T2S_MUST_CHECK
int value_probe_run(struct catalog_db *db, const struct schema *s, int table, int column, const char *value,
		    long timeout_ms, struct value_probe_result *ret, struct t2s_error *err);

/* Free the contents of r (not r itself); accepts NULL and an already released result. */
void value_probe_result_release(struct value_probe_result *r);

#endif
