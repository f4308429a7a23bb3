/*
 * sql_explain_select.c - query blocks and statements in words
 * (sql_explain_internal.h).  A block reads, in this order:
 *
 *   [With <cte> being (...), ] <verb> <what> [from <tables>] [where <cond>]
 *   [, for each <group>] [, keeping only groups where <having>]
 *   [, sorted by <key> in descending order] [, skipping the first N]
 *   [, keeping the top N]
 *
 * where the verb (in a sentence only; a subquery is a noun phrase) is
 * "Counts" for a lone count, "Finds" when every selected value is an
 * aggregate, else "Lists".  Set operations join their operands' phrases
 * ("together with", "keeping only rows also found in", "leaving out rows
 * found in"), then the combined rows' ordering and limit.
 */
#include "pipeline/sql/sql_explain_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static int block(struct ex *x, const json_t *sel, bool top, struct strbuf *sb);

static bool is_type(const json_t *node, const char *type)
{
	const char *t = ex_type(node);
	return t && strcmp(t, type) == 0;
}

/* -------------------------------------------------------- relations -- */

/* The relations of one FROM item, into s (names and aliases as written). */
static int collect(const struct ex *x, const json_t *item, struct ex_scope *s, int depth)
{
	char nbuf[EX_NAME_MAX], abuf[EX_NAME_MAX];
	const json_t *b;
	if (depth > EX_MAX_DEPTH)
		return 0;
	if ((b = ex_body(item, "RangeVar"))) {
		const char *name = ex_written(x, b, ex_str(b, "relname"), nbuf);
		const char *alias = ex_str(json_object_get(b, "alias"), "aliasname");
		return ex_rel_add(s, name, alias ? ex_written(x, b, alias, abuf) : NULL, NULL);
	}
	if ((b = ex_body(item, "JoinExpr"))) {
		int rc = collect(x, json_object_get(b, "larg"), s, depth + 1);
		return rc ? rc : collect(x, json_object_get(b, "rarg"), s, depth + 1);
	}
	if ((b = ex_body(item, "RangeSubselect")) || (b = ex_body(item, "RangeFunction")))
		return ex_rel_add(s, NULL, ex_str(json_object_get(b, "alias"), "aliasname"), NULL);
	return 0;
}

/* A RangeVar as the text names it (its relation in the block's scope: "singer", "singer T1"). */
static int range_var(struct ex *x, const json_t *rv, struct strbuf *sb)
{
	char nbuf[EX_NAME_MAX], abuf[EX_NAME_MAX];
	const char *alias = ex_str(json_object_get(rv, "alias"), "aliasname");
	const char *name = ex_written(x, rv, ex_str(rv, "relname"), nbuf);
	bool outer;
	const struct ex_rel *r = ex_resolve(x->scope, alias ? ex_written(x, rv, alias, abuf) : name, &outer);
	int rc = 0;
	if (ex_str(rv, "schemaname"))
		rc = ex_addf(sb, "%s.", ex_str(rv, "schemaname"));
	if (rc == 0)
		rc = r && !outer ? ex_add_rel(sb, x->scope, r) : ex_add(sb, name ? name : "a table");
	return rc;
}

static int from_item(struct ex *x, const json_t *item, struct strbuf *sb, int depth);

/* The side of a join a LEFT / RIGHT join keeps: its table's name, or "the left side". */
static int kept_side(struct ex *x, const json_t *item, const char *otherwise, struct strbuf *sb)
{
	const json_t *rv = ex_body(item, "RangeVar");
	return rv ? range_var(x, rv, sb) : ex_add(sb, otherwise);
}

static int join(struct ex *x, const json_t *j, struct strbuf *sb, int depth)
{
	const char *type = ex_str(j, "jointype") ? ex_str(j, "jointype") : "JOIN_INNER";
	const json_t *l = json_object_get(j, "larg"), *r = json_object_get(j, "rarg");
	const json_t *quals = json_object_get(j, "quals"), *using = json_object_get(j, "usingClause");
	const json_t *qc = ex_body(quals, "A_Const");
	bool on_true = qc && ex_bool(json_object_get(qc, "boolval"), "boolval");
	bool cross = !ex_bool(j, "isNatural") && !ex_list_len(using) && (!quals || on_true);
	int rc = from_item(x, l, sb, depth + 1);
	if (rc == 0)
		rc = ex_add(sb, is_type(l, "JoinExpr") ? ", " : " ");
	if (rc == 0)
		rc = ex_add(sb, cross && strcmp(type, "JOIN_INNER") == 0 ? "combined with every row of " : "joined with ");
	if (rc == 0)
		rc = from_item(x, r, sb, depth + 1);
	if (rc == 0 && ex_bool(j, "isNatural"))
		rc = ex_add(sb, " on their shared columns");
	for (size_t i = 0; rc == 0 && i < ex_list_len(using); i++) {
		rc = ex_add(sb, i ? " and " : " on ");
		if (rc == 0)
			rc = ex_add(sb, ex_sval(json_array_get(using, i)));
	}
	if (rc == 0 && quals && !on_true && (rc = ex_add(sb, " on ")) == 0)
		rc = ex_join_condition(x, quals, sb);
	if (rc == 0 && strcmp(type, "JOIN_LEFT") == 0 && (rc = ex_add(sb, " (keeping rows of ")) == 0 &&
	    (rc = kept_side(x, l, "the left side", sb)) == 0)
		rc = ex_add(sb, " with no match)");
	else if (rc == 0 && strcmp(type, "JOIN_RIGHT") == 0 && (rc = ex_add(sb, " (keeping rows of ")) == 0 &&
		 (rc = kept_side(x, r, "the right side", sb)) == 0)
		rc = ex_add(sb, " with no match)");
	else if (rc == 0 && strcmp(type, "JOIN_FULL") == 0)
		rc = ex_add(sb, " (keeping rows of both sides with no match)");
	return rc;
}

static int from_item(struct ex *x, const json_t *item, struct strbuf *sb, int depth)
{
	const json_t *b;
	int rc;
	if (depth > EX_MAX_DEPTH)
		return ex_add(sb, "nested tables");
	if ((b = ex_body(item, "RangeVar")))
		return range_var(x, b, sb);
	if ((b = ex_body(item, "JoinExpr")))
		return join(x, b, sb, depth);
	if ((b = ex_body(item, "RangeSubselect"))) {
		const char *alias = ex_str(json_object_get(b, "alias"), "aliasname");
		const json_t *sel = ex_body(json_object_get(b, "subquery"), "SelectStmt");
		rc = ex_add(sb, "the rows of (");
		if (rc == 0)
			rc = sel ? block(x, sel, false, sb) : ex_add(sb, "a subquery");
		if (rc == 0)
			rc = ex_add(sb, ")");
		return rc == 0 && alias && strncmp(alias, DERIVED_ALIAS_PREFIX, strlen(DERIVED_ALIAS_PREFIX)) != 0
			       ? ex_addf(sb, " named %s", alias)
			       : rc;
	}
	return ex_add(sb, "the rows of a function");
}

static int from_clause(struct ex *x, const json_t *from, struct strbuf *sb)
{
	size_t n = ex_list_len(from);
	int rc = n > 1 ? ex_add(sb, n == 2 ? "every pairing of " : "every combination of ") : 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (i)
			rc = ex_add(sb, i + 1 == n ? " and " : ", ");
		if (rc == 0)
			rc = from_item(x, json_array_get(from, i), sb, 0);
	}
	return rc;
}

/* ---------------------------------------------------------- clauses -- */

/* A GROUP BY / ORDER BY key: an ordinal (ORDER BY 2) reads as the select list's entry. */
static int key(struct ex *x, const json_t *node, const json_t *targets, struct strbuf *sb)
{
	long long k = ex_const_int(node);
	const json_t *t = k >= 1 && (size_t)k <= ex_list_len(targets) ? ex_body(json_array_get(targets, (size_t)k - 1), "ResTarget") : NULL;
	return ex_expr(x, t ? json_object_get(t, "val") : node, sb);
}

/* What the block selects: "Age and the number of rows", "the different values of Country". */
static int targets(struct ex *x, const json_t *sel, bool row, struct strbuf *sb)
{
	const json_t *list = json_object_get(sel, "targetList");
	size_t n = ex_list_len(list);
	int rc = 0;
	if (row)
		return ex_add(sb, "row");
	if (ex_list_len(json_object_get(sel, "distinctClause")))
		rc = ex_add(sb, n > 1 ? "the different combinations of " : "the different values of ");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const json_t *t = ex_body(json_array_get(list, i), "ResTarget");
		const char *alias = ex_str(t, "name");
		if (i)
			rc = ex_add(sb, i + 1 == n ? " and " : ", ");
		if (rc == 0)
			rc = ex_expr(x, json_object_get(t, "val"), sb);
		if (rc == 0 && alias && !is_type(json_object_get(t, "val"), "ColumnRef")) {
			char buf[EX_NAME_MAX];
			rc = ex_addf(sb, " (as %s)", ex_written(x, t, alias, buf));
		}
	}
	return rc;
}

/* The ordering and limit of a block or of a set operation's combined rows. */
static int order_limit(struct ex *x, const json_t *sel, const json_t *tl, const char *sep, struct strbuf *sb)
{
	const json_t *order = json_object_get(sel, "sortClause");
	const json_t *limit = json_object_get(sel, "limitCount"), *offset = json_object_get(sel, "limitOffset");
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < ex_list_len(order); i++) {
		const json_t *by = ex_body(json_array_get(order, i), "SortBy");
		const char *dir = ex_str(by, "sortby_dir") ? ex_str(by, "sortby_dir") : "";
		rc = ex_addf(sb, "%s%s", i ? ", then" : sep, i ? " by " : "sorted by ");
		sep = ", ";
		if (rc == 0)
			rc = key(x, json_object_get(by, "node"), tl, sb);
		const char *nulls = ex_str(by, "sortby_nulls") ? ex_str(by, "sortby_nulls") : "";
		if (rc == 0)
			rc = ex_add(sb, strcmp(dir, "SORTBY_DESC") == 0 ? " in descending order" : " in ascending order");
		if (rc == 0 && strcmp(nulls, "SORTBY_NULLS_FIRST") == 0)
			rc = ex_add(sb, " (rows without a value first)");
		else if (rc == 0 && strcmp(nulls, "SORTBY_NULLS_LAST") == 0)
			rc = ex_add(sb, " (rows without a value last)");
	}
	if (rc == 0 && offset && (rc = ex_addf(sb, "%sskipping the first ", sep)) == 0 && (rc = ex_expr(x, offset, sb)) == 0)
		rc = ex_add(sb, " rows");
	if (offset)
		sep = ", ";
	if (rc || !limit || ex_bool(ex_body(limit, "A_Const"), "isnull"))
		return rc;
	long long n = ex_const_int(limit);
	bool ordered = ex_list_len(order) > 0;
	if (n == 1)
		return ex_addf(sb, "%s%s", sep, ordered ? "keeping only the top row" : "keeping only one row");
	if (n >= 0)
		return ex_addf(sb, ordered ? "%skeeping the top %lld" : "%skeeping at most %lld rows", sep, n);
	if ((rc = ex_addf(sb, "%skeeping at most ", sep)) == 0 && (rc = ex_expr(x, limit, sb)) == 0)
		rc = ex_add(sb, " rows");
	return rc;
}

/* The CTEs of a WITH: "With t being (...) and u being (...), ". */
static int with_clause(struct ex *x, const json_t *with, struct strbuf *sb)
{
	const json_t *ctes = json_object_get(with, "ctes");
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < ex_list_len(ctes); i++) {
		const json_t *c = ex_body(json_array_get(ctes, i), "CommonTableExpr");
		const json_t *q = ex_body(json_object_get(c, "ctequery"), "SelectStmt");
		char buf[EX_NAME_MAX];
		rc = ex_add(sb, i == 0 ? "with " : " and ");
		if (rc == 0)
			rc = ex_addf(sb, "%s being (", ex_written(x, c, ex_str(c, "ctename"), buf) ? ex_written(x, c, ex_str(c, "ctename"), buf) : "a table");
		if (rc == 0)
			rc = q ? block(x, q, false, sb) : ex_add(sb, "a statement");
		if (rc == 0)
			rc = ex_add(sb, ")");
	}
	return rc ? rc : ex_list_len(ctes) ? ex_add(sb, ", ") : 0;
}

/* The verb of a sentence for a simple block: "counts", "finds" or "lists". */
static const char *verb(const json_t *sel, bool *ret_lone_count)
{
	const json_t *list = json_object_get(sel, "targetList");
	size_t n = ex_list_len(list);
	bool grouped = ex_list_len(json_object_get(sel, "groupClause")) > 0, all_agg = n > 0;
	for (size_t i = 0; i < n; i++)
		all_agg = all_agg && ex_is_aggregate(json_object_get(ex_body(json_array_get(list, i), "ResTarget"), "val"));
	const json_t *only = n == 1 ? json_object_get(ex_body(json_array_get(list, 0), "ResTarget"), "val") : NULL;
	*ret_lone_count = only && ex_is_count(only) && !grouped && !ex_list_len(json_object_get(sel, "distinctClause"));
	return *ret_lone_count ? "counts " : all_agg && !grouped ? "finds " : "lists ";
}

/* A lone count after "counts": "the rows", "the different values of x", "the x values". */
static int lone_count_words(struct ex *x, const json_t *sel, struct strbuf *sb)
{
	const json_t *t = ex_body(json_array_get(json_object_get(sel, "targetList"), 0), "ResTarget");
	const json_t *f = ex_body(json_object_get(t, "val"), "FuncCall"), *args = json_object_get(f, "args");
	int rc;
	if (ex_bool(f, "agg_star") || !ex_list_len(args))
		return ex_add(sb, "the rows");
	rc = ex_add(sb, ex_bool(f, "agg_distinct") ? "the different values of " : "the rows with a value of ");
	for (size_t i = 0; rc == 0 && i < ex_list_len(args); i++) {
		if (i)
			rc = ex_add(sb, " and ");
		if (rc == 0)
			rc = ex_expr(x, json_array_get(args, i), sb);
	}
	return rc;
}

/* A simple block (no set operation), its scope pushed while its clauses are written. */
static int simple_block(struct ex *x, const json_t *sel, bool top, bool row, struct strbuf *sb)
{
	const json_t *from = json_object_get(sel, "fromClause"), *where = json_object_get(sel, "whereClause");
	const json_t *group = json_object_get(sel, "groupClause"), *having = json_object_get(sel, "havingClause");
	const json_t *tl = json_object_get(sel, "targetList"), *values = json_object_get(sel, "valuesLists");
	struct ex_scope scope = {.parent = x->scope};
	bool lone_count = false;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < ex_list_len(from); i++)
		rc = collect(x, json_array_get(from, i), &scope, 0);
	const struct ex_scope *saved = x->scope;
	x->scope = &scope;
	if (rc == 0 && top)
		rc = ex_add(sb, verb(sel, &lone_count));
	if (rc == 0 && values) {
		rc = ex_add(sb, "the rows ");
		for (size_t i = 0; rc == 0 && i < ex_list_len(values); i++) {
			const json_t *row = json_array_get(values, i);
			rc = ex_add(sb, i ? ", " : "");
			if (rc == 0)
				rc = ex_expr(x, row, sb);
		}
	}
	if (rc == 0 && !values)
		rc = lone_count ? lone_count_words(x, sel, sb) : targets(x, sel, row, sb);
	if (rc == 0 && ex_list_len(from) && (rc = ex_add(sb, lone_count ? " in " : " from ")) == 0)
		rc = from_clause(x, from, sb);
	if (rc == 0 && where && (rc = ex_add(sb, " where ")) == 0)
		rc = ex_expr(x, where, sb);
	for (size_t i = 0; rc == 0 && i < ex_list_len(group); i++) {
		rc = ex_add(sb, i ? " and " : ", for each ");
		if (rc == 0)
			rc = key(x, json_array_get(group, i), tl, sb);
	}
	if (rc == 0 && having && (rc = ex_add(sb, ", keeping only groups where ")) == 0)
		rc = ex_expr(x, having, sb);
	if (rc == 0)
		rc = order_limit(x, sel, tl, ", ", sb);
	x->scope = saved;
	ex_scope_release(&scope);
	return rc;
}

/* The words between a set operation's operands. */
static const char *set_words(const char *op, bool all)
{
	if (strcmp(op, "SETOP_UNION") == 0)
		return all ? ", together with (keeping duplicates) " : ", together with (without duplicates) ";
	if (strcmp(op, "SETOP_INTERSECT") == 0)
		return all ? ", keeping only rows (with duplicates) also found in " : ", keeping only rows also found in ";
	return all ? ", leaving out rows (counting duplicates) found in " : ", leaving out rows found in ";
}

/* An operand of a set operation: in parentheses when it is itself one. */
static int operand(struct ex *x, const json_t *sel, bool top, struct strbuf *sb)
{
	const char *op = ex_str(sel, "op");
	bool nested = op && strcmp(op, "SETOP_NONE") != 0;
	int rc = nested ? ex_add(sb, "(") : 0;
	if (rc == 0)
		rc = block(x, sel, top && !nested, sb);
	return rc == 0 && nested ? ex_add(sb, ")") : rc;
}

/* The leftmost simple block of a set operation (for its verb and its ordinals). */
static const json_t *leftmost(const json_t *sel)
{
	for (int i = 0; sel && i < EX_MAX_DEPTH; i++) {
		const char *op = ex_str(sel, "op");
		if (!op || strcmp(op, "SETOP_NONE") == 0)
			return sel;
		sel = json_object_get(sel, "larg");
	}
	return NULL;
}

static int set_operation(struct ex *x, const json_t *sel, bool top, struct strbuf *sb)
{
	const json_t *first = leftmost(sel);
	bool lone_count;
	int rc = 0;
	if (top && first && ex_str(json_object_get(sel, "larg"), "op") && strcmp(ex_str(json_object_get(sel, "larg"), "op"), "SETOP_NONE") != 0) {
		const char *v = verb(first, &lone_count);
		rc = ex_add(sb, strcmp(v, "finds ") == 0 ? v : "lists ");
	}
	if (rc == 0)
		rc = operand(x, json_object_get(sel, "larg"), top, sb);
	if (rc == 0)
		rc = ex_add(sb, set_words(ex_str(sel, "op"), ex_bool(sel, "all")));
	if (rc == 0)
		rc = operand(x, json_object_get(sel, "rarg"), false, sb);
	if (rc == 0 && (json_object_get(sel, "sortClause") || json_object_get(sel, "limitCount") ||
			json_object_get(sel, "limitOffset"))) {
		rc = ex_add(sb, "; all of them ");
		if (rc == 0)
			rc = order_limit(x, sel, json_object_get(first, "targetList"), "", sb);
	}
	return rc;
}

/* A SelectStmt body: a sentence's words when top, else a noun phrase. */
static int block(struct ex *x, const json_t *sel, bool top, struct strbuf *sb)
{
	const char *op = ex_str(sel, "op");
	const json_t *with = json_object_get(sel, "withClause");
	int rc = 0;
	if (x->depth >= EX_MAX_DEPTH)
		return ex_add(sb, "a nested query");
	x->depth++;
	bool row = x->exists_row; /* this block's, not its CTEs' or operands' */
	x->exists_row = false;
	if (with)
		rc = with_clause(x, with, sb);
	if (rc == 0)
		rc = op && strcmp(op, "SETOP_NONE") != 0 ? set_operation(x, sel, top, sb)
							 : simple_block(x, sel, top, row, sb);
	x->depth--;
	return rc;
}

int ex_block_phrase(struct ex *x, const json_t *sel, struct strbuf *sb)
{
	return block(x, sel, false, sb);
}

int ex_statement(struct ex *x, const json_t *stmt, struct strbuf *sb)
{
	const json_t *sel = ex_body(stmt, "SelectStmt");
	size_t start = sb->len;
	int rc;
	if (sel)
		rc = block(x, sel, true, sb);
	else
		rc = ex_addf(sb, "a statement that is not a query (%s)", ex_type(stmt) ? ex_type(stmt) : "unknown");
	if (rc == 0)
		rc = ex_add(sb, ".");
	if (rc == 0)
		ex_capitalise(sb, start);
	return rc;
}
