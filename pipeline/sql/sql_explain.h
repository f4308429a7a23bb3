/*
 * sql_explain.h - a statement in plain English, written deterministically
 * from its parse tree: no model call, so the words say exactly what the SQL
 * does and cost microseconds.  The answer's `explanation`
 * (pipeline/generate/generate_json.c) is this text for its final SQL.
 *
 * What it names: what is listed, counted, summed, averaged or found (the
 * select list, aggregates by their English names: "the number of rows",
 * "the total of x", "the average of x", "the minimum of x"); the tables and
 * how they are joined ("concert joined with stadium on Stadium_ID", "keeping
 * rows of singer with no match"); the filters with their values, quoted as
 * written ('France', 20); grouping ("for each Country"), HAVING ("keeping
 * only groups where ..."), ordering ("sorted by Age in descending order"),
 * LIMIT ("keeping the top 3", "keeping only the first row"), OFFSET,
 * DISTINCT, set operations (UNION, UNION ALL, INTERSECT, EXCEPT), IN / NOT IN
 * / EXISTS subqueries (described in parentheses, as noun phrases), CASE, LIKE
 * ("contains 'a'", "starts with 'a'"), CTEs, derived tables.  Names keep the
 * spelling of the statement's text; a qualified column is "table's column"
 * (its alias resolved to the table) when its block reads several tables or
 * the column belongs to an enclosing block.
 *
 * Dialects: the statement is read by sql_analyze's parse (libpg_query, with
 * SQLite's syntax normalised and repaired first: sql_analyze.h).  When it
 * still does not parse, a fallback from the tokens names what it can: the
 * tables after FROM / JOIN, the columns and the literal values, and says the
 * statement was not fully read.
 *
 * Threads: callable from any number of threads; no state between calls.
 * Nothing logs.
 */
#ifndef T2S_SQL_EXPLAIN_H
#define T2S_SQL_EXPLAIN_H

#include "common/contract.h"
#include "common/error.h"
#include "pipeline/sql/sql_analyze.h"

#include <jansson.h>

/*
 * Longest explanation written (bytes); a statement whose explanation would
 * be longer gets the fallback's instead (its tables, names and values).
 */
#define SQL_EXPLAIN_MAX_LEN 16384

/*
 * Explains sql, read in dialect.  Returns 0 and sets *ret to a malloc'd
 * NUL-terminated text the caller frees (one or more sentences, each ending
 * in "."); on failure *ret is NULL and:
 * -T2S_ERR_INVALID when sql or ret is NULL or the dialect unknown;
 * -T2S_ERR_SQL_INVALID when the statement neither parses nor names a table;
 * -T2S_ERR_SQL_REJECTED when the statement is longer than sql_analyze reads;
 * -T2S_ERR_NOMEM; -T2S_ERR_UNAVAILABLE when no parser thread can start.
 * sql is borrowed; err (may be NULL) is filled on failure only.
 */
T2S_MUST_CHECK
int sql_explain(const char *sql, enum sql_dialect dialect, char **ret, struct t2s_error *err);

/*
 * The explanation of sql as the answer's `explanation` member: a new
 * reference to a JSON string, or to JSON null when there is none (no SQL,
 * or it neither parses nor names a table, or any error above); NULL only
 * when out of memory.  sql (may be NULL) is borrowed.
 */
json_t *sql_explain_json(const char *sql, enum sql_dialect dialect);

#endif
