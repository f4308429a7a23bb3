/*
 * sql_analyze.h - facts about a generated SELECT that only a parser gives
 * reliably: the relations it reads, the column references and where they
 * stand, the equality joins, each query block's grouping and aggregate
 * facts, and the string constants.  Validation's semantic level
 * (pipeline/generate/) checks these facts against the schema and the join
 * graph; this module knows neither.
 *
 * Parsing: libpg_query (PostgreSQL 15's grammar), run on the parser threads
 * of sql_guard_pg.c through sql_guard_pg_parse_tree.  For SQL_DIALECT_SQLITE
 * the text is first normalised, on a copy, for SQLite-only syntax:
 *   - `x` (backticks) and [x] (brackets) become the identifier "x";
 *   - the operator == becomes =;
 * and when the copy still does not parse, up to SQL_ANALYZE_MAX_REPAIRS
 * SQLite-only constructs the parser points at are rewritten and the parse
 * retried:
 *   - a subquery in FROM without an alias gets one (the alias is not
 *     reported: sql_table_ref.alias stays NULL);
 *   - every "JOIN t [AS a]" without ON or USING gets "ON TRUE" (CROSS and
 *     NATURAL joins excepted): "a JOIN b WHERE" is a cross join, and in
 *     "a JOIN b JOIN c ON x AND y" SQLite joins left to right, the one ON
 *     holding both joins' conditions;
 *   - a 'string' where PostgreSQL admits no string (the error's token, and
 *     every one after FROM, JOIN or AS or before ".") becomes the identifier
 *     "string", as SQLite reads it: FROM 'singer' AS 'T1', 'T1'.name;
 *   - "LIMIT n, m" becomes "LIMIT m OFFSET n" (integer constants only).
 * SQLite's double-quoted strings ("France" where a string is meant) parse as
 * identifiers: they are reported as column references with maybe_string set,
 * and also as string literals with identifier_column pointing at that column
 * reference.  Whether the name is a column is the caller's call (it has the
 * schema); SQLite itself reads it as a string when no column has the name.
 *
 * Names: in SQL_DIALECT_SQLITE, table, alias and column names are reported
 * as written in the original text, unquoted (SQLite compares them
 * case-insensitively).  In SQL_DIALECT_POSTGRES they are reported as
 * PostgreSQL resolves them: unquoted names folded to lower case, quoted ones
 * exact.  Qualifier matching below is case-insensitive in both dialects.
 *
 * ON conditions are read once every FROM item of their block is known, as
 * SQLite reads them: "a JOIN b ON a.x = c.x JOIN c ON ..." names c, joined
 * later (PostgreSQL refuses it).
 *
 * Scopes: every SELECT query block (the operands of UNION/INTERSECT/EXCEPT,
 * subqueries in FROM, WHERE, the select list..., CTE bodies) is one entry of
 * blocks, numbered in the order the walk meets them (a statement's CTE
 * bodies before its main block, FROM before the rest of a block).  A block's
 * parent is the block whose tables its column references may name
 * (correlation): the enclosing block for subqueries, -1 for top-level
 * blocks and for CTE bodies of a top-level WITH.  ORDER BY and LIMIT of a
 * set operation belong to its first operand's block.
 *
 * Limits: statements longer than SQL_GUARD_PG_MAX_LEN, parse trees deeper
 * than SQL_ANALYZE_MAX_DEPTH, and more than SQL_ANALYZE_MAX_ITEMS entries in
 * any one array are refused with -T2S_ERR_SQL_REJECTED.
 *
 * Threads: sql_analyze may be called from any number of threads at once; it
 * keeps no state between calls.  Results are plain memory owned by the
 * caller.  No function logs.
 */
#ifndef T2S_SQL_ANALYZE_H
#define T2S_SQL_ANALYZE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/contract.h"
#include "common/error.h"

/* Deepest parse tree (JSON nesting levels) walked. */
#define SQL_ANALYZE_MAX_DEPTH 1000
/* Most entries in any one array of struct sql_analysis. */
#define SQL_ANALYZE_MAX_ITEMS 4096
/* Most SQLite-only constructs rewritten after a failed parse. */
#define SQL_ANALYZE_MAX_REPAIRS 4

enum sql_dialect { SQL_DIALECT_SQLITE, SQL_DIALECT_POSTGRES };

/* Where a column reference stands in its block. */
enum sql_clause {
	SQL_IN_SELECT,   /* the select list */
	SQL_IN_WHERE,
	SQL_IN_JOIN_ON,  /* a JOIN's ON condition */
	SQL_IN_GROUP_BY,
	SQL_IN_HAVING,
	SQL_IN_ORDER_BY,
	SQL_IN_OTHER     /* LIMIT, window definitions, VALUES, DISTINCT ON, outside any block... */
};

/* The set operation a block is an operand of (the innermost one). */
enum sql_set_op { SQL_SET_NONE, SQL_SET_UNION, SQL_SET_UNION_ALL, SQL_SET_INTERSECT, SQL_SET_EXCEPT };

/*
 * A relation read anywhere in the statement: FROM and JOIN items of every
 * block (subqueries and CTE bodies included).
 */
struct sql_table_ref {
	char *schema;       /* NULL when unqualified */
	char *name;         /* unquoted; for a derived table, its alias (NULL when it has none) */
	char *alias;        /* NULL when none (or only the one added by normalisation) */
	int scope;          /* the block (index into blocks) whose FROM holds it; -1 outside any SELECT */
	bool is_cte;        /* unqualified and names a CTE of the statement visible here, not a base table */
	bool is_derived;    /* a subquery in FROM: (SELECT ...) AS alias */
	int derived_block;  /* is_derived: the subquery's block; else -1 */
};

struct sql_column_ref {
	char *qualifier;    /* the table name or alias as written before the dot; NULL when unqualified */
	char *name;         /* unquoted; "*" for a star (t.* or *) */
	int table_ref;      /* index into tables of the ref the qualifier names, looked up in the
			       column's block, then its parents (a correlated reference then points
			       at a table of another scope); -1 when unqualified or not found */
	int scope;          /* its block, -1 outside any SELECT */
	enum sql_clause clause;
	bool in_aggregate;  /* inside an aggregate call's arguments, ORDER BY or FILTER */
	bool in_sum;        /* inside the arguments of sum(), avg() or total() without DISTINCT:
			       every row counts, so rows a join repeats change the value */
	bool summed;        /* the whole argument of sum(), avg() or total() (DISTINCT or not, no FILTER):
			       sum(x), not sum(x * 2) */
	bool names_output;  /* unqualified, in GROUP BY, HAVING or ORDER BY, and equal to an output
			       name (AS alias) of its block's select list: an alias, not a column */
	bool maybe_string;  /* SQLite only: unqualified and written in double quotes, so SQLite
			       reads it as a string if no column has that name */
};

/*
 * col = col between two different table refs of one block, in a JOIN's ON
 * or in WHERE, reached through AND and OR (not under NOT), both columns
 * qualified and resolved to tables of that very block.  conjunct: through
 * AND only, so every row of the result satisfies it (under OR, a join
 * condition holds only for some rows: a.x = b.y OR a.x = b.z).
 */
struct sql_join_pred {
	int left_column, right_column; /* indexes into columns */
	int scope;
	bool conjunct;
};

/*
 * A JOIN ... USING (...) or NATURAL JOIN: the last table ref of its left side
 * and the first of its right side are joined (no col = col predicate shows it).
 */
struct sql_using_join {
	int left_table, right_table; /* indexes into tables */
	int scope;
};

/* One SELECT query block. */
struct sql_block {
	int parent;                  /* see "Scopes" above; -1 when none */
	enum sql_set_op set_op;      /* the innermost set operation it is an operand of */
	size_t n_select_items;       /* entries of its select list (a star counts as one) */
	size_t n_from_items;         /* relations in its FROM, counting each side of every JOIN */
	bool is_distinct;            /* SELECT DISTINCT (or DISTINCT ON) */
	bool has_group_by;
	bool has_aggregate_in_select;
	bool aggregate_in_where;     /* an aggregate call in WHERE or a JOIN's ON (illegal) */
	bool aggregate_in_group_by;  /* illegal */
	bool nested_aggregate;       /* an aggregate inside another aggregate's arguments (illegal) */
	bool has_avg;                /* an avg() call in any of its clauses */
	bool order_asc, order_desc;  /* its ORDER BY has an ascending (default) / a descending key;
					a set operation's ORDER BY counts for its first operand's block */
	bool has_limit;              /* LIMIT (a set operation's: its first operand's block) */
	/*
	 * Only when has_group_by or has_aggregate_in_select: the select-list
	 * column references (stars included) outside any aggregate whose column
	 * does not appear in GROUP BY, as indexes into columns.  A GROUP BY
	 * entry covers a select column of the same name whose qualifiers agree
	 * (either unqualified, same table ref, or same qualifier text); a GROUP
	 * BY ordinal (GROUP BY 1) or output name covers every column of that
	 * select-list entry.  Functional dependence (grouping by a key) is the
	 * caller's to judge: it needs the schema.
	 */
	int *ungrouped_select_columns;
	size_t n_ungrouped_select_columns;
};

/* A string constant ('France'), or a SQLite double-quoted identifier that may be one. */
struct sql_string_literal {
	char *value;            /* unquoted, escapes resolved */
	int scope;              /* its block, -1 outside any SELECT */
	int compared_column;    /* the column ref it is compared with (col = 'x', col <> 'x',
				   col LIKE 'x', col IN ('x', ...), col BETWEEN 'x' AND ...,
				   either side), else -1 */
	int identifier_column;  /* -1 for a real string constant; for a SQLite double-quoted
				   identifier (maybe_string), the index of that column ref */
};

struct sql_analysis {
	struct sql_table_ref *tables;
	size_t n_tables;
	struct sql_column_ref *columns;
	size_t n_columns;
	struct sql_join_pred *joins;
	size_t n_joins;
	struct sql_using_join *using_joins;
	size_t n_using_joins;
	/*
	 * col = col as in joins but with one or both columns unqualified ("ON
	 * T1.id = owner_id"): which table an unqualified column belongs to
	 * needs the schema (the one table of its block that has it), so the
	 * caller resolves these.  A qualified side resolves to a table of the
	 * block; a double-quoted name that may be a string (maybe_string) is
	 * no side.
	 */
	struct sql_join_pred *unqualified_joins;
	size_t n_unqualified_joins;
	struct sql_block *blocks;
	size_t n_blocks;
	struct sql_string_literal *string_literals;
	size_t n_string_literals;
	bool has_order_by, has_limit; /* of the first statement's top level */
	int n_statements;             /* statements in the text (all are analysed) */
	bool normalised;              /* SQLite-only syntax was rewritten before the parse */
};

/*
 * Parses sql in the given dialect and extracts the facts above.
 *
 * Returns 0 and fills *ret (the caller owns it and frees its contents with
 * sql_analysis_release; every pointer in it is owned by it);
 * -T2S_ERR_SQL_INVALID when the text does not parse even after the SQLite
 *  normalisation: the message is the parser's, with the position counted in
 *  the original text ("syntax error at or near \"x\" at character 12").  A
 *  caller may skip semantic checks for SQL the database itself accepts;
 * -T2S_ERR_SQL_REJECTED when a limit above is exceeded;
 * -T2S_ERR_INVALID when sql or ret is NULL or dialect unknown;
 * -T2S_ERR_NOMEM; -T2S_ERR_UNAVAILABLE when no parser thread can start.
 * On failure *ret is not touched.
 *
 * sql is borrowed; err (may be NULL) is filled on failure only.  Thread-safe.
 */
T2S_MUST_CHECK
int sql_analyze(const char *sql, enum sql_dialect dialect, struct sql_analysis *ret, struct t2s_error *err);

/* Frees the contents of a (NULL or zeroed is fine) and zeroes it. */
void sql_analysis_release(struct sql_analysis *a);

#endif
