/*
 * sql_analyze.c - extracts facts about a statement from libpg_query's parse
 * tree (see sql_analyze.h for what and why).
 *
 * The module's files, one step each:
 *   sql_analyze_text.c   step 1 and the repairs of step 2 (the copy, its
 *                        tokens, the rewrites);
 *   sql_analyze.c        step 2 and the public API (this file);
 *   sql_analyze_refs.c   what the walk records (tables, columns, literals)
 *                        and how qualifiers resolve to tables;
 *   sql_analyze_walk.c   step 3, the walk over node and statement kinds;
 *   sql_analyze_internal.h  what they share.
 *
 * Three steps:
 *   1. Text.  For SQLite the statement is copied with SQLite-only tokens
 *      rewritten (backticks, brackets, ==).  The copy carries a map from
 *      each of its bytes to a byte of the original, so parser positions
 *      (node "location", error "cursorpos") always lead back to the
 *      original text: to report names as written and errors where the
 *      caller's text has them.
 *   2. Parse, through sql_guard_pg_parse_tree (libpg_query runs only on the
 *      guard's parser threads).  For SQLite, a failed parse whose error
 *      names a construct SQLite accepts (FROM subquery without alias, JOIN
 *      without ON, LIMIT n, m) is repaired in the copy and retried.
 *   3. Walk the JSON tree once, depth-first, with a small context (block,
 *      clause, inside an aggregate, on an AND-only path).  A SelectStmt is
 *      walked in a fixed order - WITH, FROM, select list, WHERE, GROUP BY,
 *      HAVING, ORDER BY, the rest - so that qualifiers resolve against the
 *      FROM items of the block and its parents, which are already known.
 *      Node types the walk does not know are walked member by member, so
 *      column references and subqueries are found wherever they stand.
 *
 * Every array grows under SQL_ANALYZE_MAX_ITEMS and the walk under
 * SQL_ANALYZE_MAX_DEPTH; anything unreadable in the tree is skipped, never
 * trusted.
 */
#include "pipeline/sql/sql_analyze_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/sql/sql_guard_pg.h"

/* ---------------------------------------------------------------- API -- */

void sql_analysis_release(struct sql_analysis *a)
{
	size_t i;

	if (!a)
		return;
	for (i = 0; i < a->n_tables; i++) {
		free(a->tables[i].schema);
		free(a->tables[i].name);
		free(a->tables[i].alias);
	}
	for (i = 0; i < a->n_columns; i++) {
		free(a->columns[i].qualifier);
		free(a->columns[i].name);
	}
	for (i = 0; i < a->n_blocks; i++)
		free(a->blocks[i].ungrouped_select_columns);
	for (i = 0; i < a->n_string_literals; i++)
		free(a->string_literals[i].value);
	free(a->tables);
	free(a->columns);
	free(a->joins);
	free(a->using_joins);
	free(a->unqualified_joins);
	free(a->blocks);
	free(a->string_literals);
	memset(a, 0, sizeof(*a));
}

/*
 * The parser's error for the copy t, re-stated with the position counted in
 * the original text.  Returns -T2S_ERR_SQL_INVALID.
 */
static int invalid_error(const struct ntext *t, const struct t2s_error *perr, int cursor, struct t2s_error *err)
{
	char message[T2S_ERROR_MESSAGE_MAX];
	char *at;

	snprintf(message, sizeof(message), "%s", perr->message);
	at = NULL; /* the last " at character " is the one sql_guard_pg_parse_tree appended */
	for (char *p = strstr(message, " at character "); p; p = strstr(p + 1, " at character "))
		at = p;
	if (at && cursor > 0) {
		*at = '\0';
		size_t pos = sa_ntext_orig(t, (size_t)cursor - 1);
		return t2s_error_set(err, T2S_ERR_SQL_INVALID, "%s at character %zu", message, pos + 1);
	}
	return t2s_error_set(err, T2S_ERR_SQL_INVALID, "%s", message);
}

/*
 * Parse t, repairing SQLite-only constructs on failure; on 0 *ret_tree is
 * the caller's.  When it fails for good, the error is the last attempt's,
 * its position mapped through t as it then is.
 */
static int parse(struct ntext *t, enum sql_dialect dialect, json_t **ret_tree, bool *repaired,
		 struct t2s_error *err)
{
	struct t2s_error perr;
	int cursor, r;

	for (int attempt = 0;; attempt++) {
		t2s_error_clear(&perr);
		r = sql_guard_pg_parse_tree(t->s, ret_tree, &cursor, &perr);
		if (r == 0)
			return 0;
		if (r != -T2S_ERR_SQL_INVALID) {
			if (err)
				*err = perr;
			return r;
		}
		bool done = false;
		if (dialect == SQL_DIALECT_SQLITE && attempt < SQL_ANALYZE_MAX_REPAIRS &&
		    sa_repair(t, perr.message, cursor, attempt + 1, &done) < 0)
			return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory analysing the statement");
		if (!done)
			return invalid_error(t, &perr, cursor, err);
		*repaired = true;
	}
}

int sa_parse_tree(const char *sql, enum sql_dialect dialect, json_t **ret_tree, struct ntext *ret_text,
		  bool *ret_changed, struct t2s_error *err)
{
	struct ntext t = {0};
	bool changed = false;
	size_t len;
	int r;

	if (!sql || (dialect != SQL_DIALECT_SQLITE && dialect != SQL_DIALECT_POSTGRES))
		return t2s_error_set(err, T2S_ERR_INVALID, "no SQL or no dialect given");
	len = strnlen(sql, (size_t)SQL_GUARD_PG_MAX_LEN + 1);
	if (len > SQL_GUARD_PG_MAX_LEN)
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "statement is too long (limit %d bytes)",
				     SQL_GUARD_PG_MAX_LEN);
	if (sa_normalise(sql, len, dialect, &t, &changed) < 0) {
		sa_ntext_release(&t);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory analysing the statement");
	}
	if ((r = parse(&t, dialect, ret_tree, &changed, err)) < 0) {
		sa_ntext_release(&t);
		return r;
	}
	*ret_text = t;
	if (ret_changed)
		*ret_changed = changed;
	return 0;
}

int sql_analyze(const char *sql, enum sql_dialect dialect, struct sql_analysis *ret, struct t2s_error *err)
{
	struct sql_analysis a = {0};
	struct ntext t = {0};
	struct an an = {.a = &a, .dialect = dialect, .orig = sql, .nt = &t, .err = err};
	json_t *tree = NULL;
	bool changed = false;
	int r;

	if (!ret)
		return t2s_error_set(err, T2S_ERR_INVALID, "no SQL or no dialect given");
	if ((r = sa_parse_tree(sql, dialect, &tree, &t, &changed, err)) < 0)
		return r;
	a.normalised = changed;
	if ((r = sa_walk_tree(&an, tree)) < 0)
		goto out;
	*ret = a;
	memset(&a, 0, sizeof(a));
out:
	sql_analysis_release(&a);
	json_decref(tree);
	free(an.col_target);
	free(an.ctes);
	sa_ntext_release(&t);
	return r;
}
