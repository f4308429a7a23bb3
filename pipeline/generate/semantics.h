/*
 * semantics.h - level 2 of validation: what a parse of the statement says
 * about its meaning, checked against the schema and the schema graph.
 *
 *   tables_linked              tables outside the linked schema (a flag: real
 *                              tables are allowed);
 *   joins_follow_schema_graph  each col = col join between two tables (through
 *                              AND, not under OR) is an edge of the schema
 *                              graph, declared or inferred (blocking; it asks
 *                              for a re-planned scaffold);
 *   tables_joined              in each query block every table is connected
 *                              to the others by join conditions (blocking: a
 *                              missing one multiplies rows);
 *   aggregates_placed_legally  no aggregate in WHERE, JOIN ON or GROUP BY, none
 *                              nested (blocking);
 *   group_by_consistent        plain select-list columns are grouped, equal
 *                              through the block's AND-joins to a grouped
 *                              column, or of a table whose primary key is so
 *                              (functional dependence) (blocking on both
 *                              engines: SQLite accepts bare columns but
 *                              their value comes from an arbitrary row);
 *   order_limit_meaningful     no ORDER BY / LIMIT on a statement that is one
 *                              aggregate row (no GROUP BY): models write it
 *                              when they meant one row per group (blocking);
 *   aggregate_not_repeated     no sum(), avg() or total() (without DISTINCT)
 *                              of a column of a table on the "one" side of a
 *                              one-to-many join (joined by its one-column
 *                              key to a column that is not the other
 *                              table's key): each value would count once
 *                              per matching row (blocking);
 *   set_operands_not_aggregates  no INTERSECT / EXCEPT whose operands all
 *                              return one aggregate row (no GROUP BY): it
 *                              compares numbers, not the things counted
 *                              (blocking).
 *
 * It also lists, for level 3, the string literals compared with schema
 * columns (v->literals), whether the statement filters at all (v->filters)
 * and whether it has HAVING (v->having).
 *
 * A statement the analyser cannot read (outside PostgreSQL's grammar after
 * SQLite's quoting is normalised) gets one flag, "analysable", and no other
 * level-2 check: the database accepted it at level 1.
 */
#ifndef T2S_GENERATE_SEMANTICS_H
#define T2S_GENERATE_SEMANTICS_H

#include "common/contract.h"
#include "pipeline/generate/validation.h"

/* Append the level-2 checks of sql to v, and v->used_tables.  0 or -T2S_ERR_NOMEM. */
T2S_MUST_CHECK
int semantics_check(const struct validate_context *cx, const char *sql, struct validation *v, struct t2s_error *err);

/*
 * The string literals of sql compared with columns of s's tables (as level 3
 * probes them), in the statement's order: *ret (malloc'd, each value
 * malloc'd; the caller frees both) and *ret_n.  0, -T2S_ERR_SQL_INVALID when
 * the analyser cannot read sql, or -T2S_ERR_NOMEM (outputs untouched on
 * failure).
 */
T2S_MUST_CHECK
int semantics_literals(const struct schema *s, const char *sql, struct validation_literal **ret, size_t *ret_n);

#endif
