/*
 * sql_explain_expr.c - expressions in words (sql_explain_internal.h):
 * columns ("Age", "singer's Name" when several tables are read), constants
 * as written, aggregates by their English names, comparisons ("is greater
 * than"), IN lists, BETWEEN, LIKE patterns ("contains 'a'"), NULL tests,
 * AND / OR / NOT, CASE, casts, arithmetic, and subqueries (IN, NOT IN,
 * EXISTS, a scalar subquery) through the driver's block hook, in
 * parentheses.
 */
#include "pipeline/sql/sql_explain_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* An operator and its words. */
struct op_words {
	const char *op, *words;
};

static const struct op_words comparisons[] = {
	{"=", "is"},	       {"==", "is"},	     {"<>", "is not"},	      {"!=", "is not"},
	{">", "is greater than"}, {"<", "is less than"}, {">=", "is at least"}, {"<=", "is at most"},
};

static const struct op_words arithmetic[] = {
	{"+", "plus"}, {"-", "minus"}, {"*", "times"}, {"/", "divided by"}, {"%", "modulo"}, {"||", "followed by"},
};

/* Aggregate functions and their noun (count and the concatenations are written apart). */
static const struct op_words aggregates[] = {
	{"sum", "the total of"},     {"total", "the total of"},	     {"avg", "the average of"},
	{"min", "the minimum of"},   {"max", "the maximum of"},	     {"stddev", "the standard deviation of"},
	{"variance", "the variance of"}, {"median", "the median of"}, {"bool_and", "whether all are true of"},
	{"bool_or", "whether any is true of"}, {"every", "whether all are true of"}, {"array_agg", "the list of"},
	{"json_agg", "the list of"}, {"count", "the number of"}, {"group_concat", "the list of"},
	{"string_agg", "the list of"},
};

static const char *words_of(const struct op_words *t, size_t n, const char *op)
{
	for (size_t i = 0; op && i < n; i++)
		if (strcasecmp(t[i].op, op) == 0)
			return t[i].words;
	return NULL;
}

#define WORDS(table, op) words_of(table, sizeof(table) / sizeof((table)[0]), op)

/* The last name of a qualified name list (funcname, operator name, type name), or NULL. */
static const char *last_name(const json_t *names)
{
	size_t n = ex_list_len(names);
	return n ? ex_sval(json_array_get(names, n - 1)) : NULL;
}

bool ex_is_aggregate(const json_t *node)
{
	const json_t *f = ex_body(node, "FuncCall");
	if (!f || json_object_get(f, "over"))
		return false;
	return WORDS(aggregates, last_name(json_object_get(f, "funcname"))) != NULL;
}

bool ex_is_count(const json_t *node)
{
	const json_t *f = ex_body(node, "FuncCall");
	const char *name = last_name(json_object_get(f, "funcname"));
	return f && !json_object_get(f, "over") && !json_object_get(f, "agg_filter") && name &&
	       strcasecmp(name, "count") == 0;
}

/* Nested too deep: a placeholder instead of a deeper walk. */
static int enter(struct ex *x, struct strbuf *sb, bool *ret_deep)
{
	*ret_deep = x->depth >= EX_MAX_DEPTH;
	if (*ret_deep)
		return ex_add(sb, "a nested expression");
	x->depth++;
	return 0;
}

/* items joined with sep, the last with last_sep ("a, b and c"). */
static int list(struct ex *x, const json_t *items, const char *sep, const char *last_sep, struct strbuf *sb)
{
	size_t n = ex_list_len(items);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (i)
			rc = ex_add(sb, i + 1 == n ? last_sep : sep);
		if (rc == 0)
			rc = ex_expr(x, json_array_get(items, i), sb);
	}
	return rc;
}

/* A subquery (a {"SelectStmt": ...} node) as "(noun phrase)". */
static int subquery(struct ex *x, const json_t *node, struct strbuf *sb)
{
	const json_t *sel = ex_body(node, "SelectStmt");
	int rc = ex_add(sb, "(");
	if (rc == 0)
		rc = sel ? x->block(x, sel, sb) : ex_add(sb, "a subquery");
	return rc ? rc : ex_add(sb, ")");
}

/* ------------------------------------------------------------ columns -- */

/* A relation's possessive: "singer's", "singer T1's" in a self-join, a derived table's alias. */
static int rel_possessive(const struct ex_scope *s, const struct ex_rel *r, struct strbuf *sb)
{
	if (r->name[0] && r->alias[0] && ex_same_table(s, r) > 1)
		return ex_addf(sb, "%s %s's", r->name, r->alias);
	return ex_add_possessive(sb, r->name[0] ? r->name : r->alias);
}

static int column_ref(struct ex *x, const json_t *cr, struct strbuf *sb)
{
	const json_t *fields = json_object_get(cr, "fields");
	size_t n = ex_list_len(fields);
	char qbuf[EX_NAME_MAX], cbuf[EX_NAME_MAX];
	if (n == 0)
		return ex_add(sb, "a column");
	bool star = ex_type(json_array_get(fields, n - 1)) && strcmp(ex_type(json_array_get(fields, n - 1)), "A_Star") == 0;
	const char *col = star ? NULL : ex_written(x, cr, ex_sval(json_array_get(fields, n - 1)), cbuf);
	if (n == 1) {
		if (star)
			return ex_add(sb, "every column");
		if (ex_double_quoted(x, cr)) /* SQLite reads "France" as a string when no column has that name */
			return ex_addf(sb, "\"%s\"", col ? col : "");
		return ex_add(sb, col ? col : "a column");
	}
	const char *q = ex_sval(json_array_get(fields, n - 2));
	bool outer;
	const struct ex_rel *r = ex_resolve(x->scope, q, &outer);
	int rc;
	if (star)
		rc = ex_add(sb, "every column of ");
	else if (r && !outer && x->scope->n_rels <= 1)
		return ex_add(sb, col ? col : "a column");
	else
		rc = 0;
	if (rc == 0 && r)
		rc = star ? ex_add_rel(sb, x->scope, r) : rel_possessive(outer ? x->scope->parent : x->scope, r, sb);
	else if (rc == 0)
		rc = star ? ex_add(sb, ex_written(x, cr, q, qbuf)) : ex_add_possessive(sb, ex_written(x, cr, q, qbuf));
	if (rc == 0 && !star)
		rc = ex_addf(sb, " %s", col ? col : "column");
	return rc;
}

/* --------------------------------------------------------- functions -- */

static int aggregate(struct ex *x, const json_t *f, const char *name, struct strbuf *sb)
{
	const json_t *args = json_object_get(f, "args");
	bool distinct = ex_bool(f, "agg_distinct");
	int rc;
	if (strcasecmp(name, "count") == 0) {
		if (ex_bool(f, "agg_star") || ex_list_len(args) == 0)
			rc = ex_add(sb, "the number of rows");
		else if ((rc = ex_add(sb, distinct ? "the number of different " : "the number of ")) == 0 &&
			 (rc = list(x, args, ", ", " and ", sb)) == 0)
			rc = distinct ? 0 : ex_add(sb, " values");
	} else {
		rc = ex_addf(sb, "%s %s", WORDS(aggregates, name), distinct ? "different " : "");
		if (rc == 0)
			rc = list(x, args, ", ", " and ", sb);
	}
	if (rc == 0 && json_object_get(f, "agg_filter") && (rc = ex_add(sb, " (only rows where ")) == 0 &&
	    (rc = ex_expr(x, json_object_get(f, "agg_filter"), sb)) == 0)
		rc = ex_add(sb, ")");
	return rc;
}

/* A window's description: " over rows of each <partition>, in order of <keys>". */
static int window(struct ex *x, const json_t *w, struct strbuf *sb)
{
	const json_t *part = json_object_get(w, "partitionClause"), *order = json_object_get(w, "orderClause");
	int rc = ex_add(sb, " computed over ");
	if (rc == 0 && ex_list_len(part)) {
		if ((rc = ex_add(sb, "each group of ")) == 0)
			rc = list(x, part, ", ", " and ", sb);
	} else if (rc == 0) {
		rc = ex_add(sb, "all rows");
	}
	for (size_t i = 0; rc == 0 && i < ex_list_len(order); i++) {
		const json_t *by = ex_body(json_array_get(order, i), "SortBy");
		rc = ex_add(sb, i ? ", then " : " in order of ");
		if (rc == 0)
			rc = ex_expr(x, json_object_get(by, "node"), sb);
		if (rc == 0 && strcmp(ex_str(by, "sortby_dir") ? ex_str(by, "sortby_dir") : "", "SORTBY_DESC") == 0)
			rc = ex_add(sb, " descending");
	}
	return rc;
}

static int func_call(struct ex *x, const json_t *f, struct strbuf *sb)
{
	const char *name = last_name(json_object_get(f, "funcname"));
	const json_t *args = json_object_get(f, "args");
	int rc;
	if (!name)
		return ex_add(sb, "a function");
	if (WORDS(aggregates, name) && (ex_bool(f, "agg_star") || ex_list_len(args) > 0))
		rc = aggregate(x, f, name, sb);
	else if ((strcasecmp(name, "lower") == 0 || strcasecmp(name, "upper") == 0) && ex_list_len(args) == 1)
		rc = (rc = ex_expr(x, json_array_get(args, 0), sb)) ? rc : ex_addf(sb, " in %s case", name[0] == 'l' || name[0] == 'L' ? "lower" : "upper");
	else if ((strcasecmp(name, "length") == 0 || strcasecmp(name, "char_length") == 0) && ex_list_len(args) == 1)
		rc = (rc = ex_add(sb, "the length of ")) ? rc : ex_expr(x, json_array_get(args, 0), sb);
	else if (strcasecmp(name, "abs") == 0 && ex_list_len(args) == 1)
		rc = (rc = ex_add(sb, "the absolute value of ")) ? rc : ex_expr(x, json_array_get(args, 0), sb);
	else if (strcasecmp(name, "ifnull") == 0 && ex_list_len(args) == 2) {
		rc = ex_expr(x, json_array_get(args, 0), sb);
		if (rc == 0 && (rc = ex_add(sb, ", or ")) == 0 && (rc = ex_expr(x, json_array_get(args, 1), sb)) == 0)
			rc = ex_add(sb, " when it has no value");
	} else {
		rc = ex_addf(sb, "%s(", name);
		if (rc == 0 && ex_bool(f, "agg_star"))
			rc = ex_add(sb, "*");
		if (rc == 0)
			rc = list(x, args, ", ", ", ", sb);
		if (rc == 0)
			rc = ex_add(sb, ")");
	}
	if (rc == 0 && json_object_get(f, "over"))
		rc = window(x, json_object_get(f, "over"), sb);
	return rc;
}

/* ---------------------------------------------------------- operators -- */

/* A LIKE pattern: "contains 'a'", "starts with 'a'", "ends with 'a'", else "matches the pattern 'p'". */
static int like_pattern(struct ex *x, const json_t *pattern, bool negated, bool icase, struct strbuf *sb)
{
	const char *p = ex_str(json_object_get(ex_body(pattern, "A_Const"), "sval"), "sval");
	const char *verb = "matches the pattern";
	size_t n = p ? strlen(p) : 0, from = 0, to = n;
	if (p && n >= 2 && p[0] == '%' && p[n - 1] == '%')
		verb = "contains", from = 1, to = n - 1;
	else if (p && n >= 1 && p[n - 1] == '%')
		verb = "starts with", to = n - 1;
	else if (p && n >= 1 && p[0] == '%')
		verb = "ends with", from = 1;
	bool plain = p && to > from && !memchr(p + from, '%', to - from) && !memchr(p + from, '_', to - from);
	int rc;
	if (!plain)
		verb = "matches the pattern", from = 0, to = n;
	if (negated)
		rc = ex_addf(sb, " does not %s ",
			     strcmp(verb, "contains") == 0	 ? "contain"
			     : strcmp(verb, "starts with") == 0 ? "start with"
			     : strcmp(verb, "ends with") == 0	 ? "end with"
								 : "match the pattern");
	else
		rc = ex_addf(sb, " %s ", verb);
	if (rc == 0)
		rc = p ? ex_addf(sb, "'%.*s'", (int)(to - from), p + from) : ex_expr(x, pattern, sb);
	if (rc == 0 && icase)
		rc = ex_add(sb, " (ignoring case)");
	return rc;
}

/* One of the IN / BETWEEN / LIKE kinds of A_Expr, after its left side. */
static int a_expr_kind(struct ex *x, const char *kind, const char *op, const json_t *r, struct strbuf *sb)
{
	const json_t *items = json_object_get(ex_body(r, "List"), "items");
	int rc;
	if (strcmp(kind, "AEXPR_IN") == 0) {
		rc = ex_add(sb, op && strcmp(op, "<>") == 0 ? " is not one of " : " is one of ");
		return rc ? rc : list(x, items, ", ", ", ", sb);
	}
	if (strncmp(kind, "AEXPR_BETWEEN", 13) == 0 || strncmp(kind, "AEXPR_NOT_BETWEEN", 17) == 0) {
		rc = ex_add(sb, strncmp(kind, "AEXPR_NOT", 9) == 0 ? " is not between " : " is between ");
		return rc ? rc : list(x, items, " and ", " and ", sb);
	}
	if (strcmp(kind, "AEXPR_LIKE") == 0 || strcmp(kind, "AEXPR_ILIKE") == 0)
		return like_pattern(x, r, op && op[0] == '!', strcmp(kind, "AEXPR_ILIKE") == 0, sb);
	if (strcmp(kind, "AEXPR_SIMILAR") == 0) {
		rc = ex_add(sb, op && op[0] == '!' ? " does not match the regular expression " : " matches the regular expression ");
		return rc ? rc : ex_expr(x, r, sb);
	}
	if (strcmp(kind, "AEXPR_DISTINCT") == 0 || strcmp(kind, "AEXPR_NOT_DISTINCT") == 0) {
		rc = ex_add(sb, kind[6] == 'N' ? " is the same as " : " differs from ");
		return rc ? rc : ex_expr(x, r, sb);
	}
	if (strcmp(kind, "AEXPR_OP_ANY") == 0 || strcmp(kind, "AEXPR_OP_ALL") == 0) {
		const char *w = WORDS(comparisons, op);
		rc = ex_addf(sb, " %s %s of ", w ? w : op ? op : "compares with", kind[10] == 'N' ? "any" : "all");
		return rc ? rc : ex_expr(x, r, sb);
	}
	rc = ex_addf(sb, " %s ", op ? op : "?");
	return rc ? rc : ex_expr(x, r, sb);
}

static int a_expr(struct ex *x, const json_t *e, struct strbuf *sb)
{
	const char *kind = ex_str(e, "kind"), *op = last_name(json_object_get(e, "name"));
	const json_t *l = json_object_get(e, "lexpr"), *r = json_object_get(e, "rexpr");
	const char *w;
	int rc = 0;
	if (!kind)
		return ex_add(sb, "an expression");
	if (strcmp(kind, "AEXPR_NULLIF") == 0) {
		rc = ex_expr(x, l, sb);
		if (rc == 0 && (rc = ex_add(sb, " (no value when it is ")) == 0 && (rc = ex_expr(x, r, sb)) == 0)
			rc = ex_add(sb, ")");
		return rc;
	}
	if (!l && r) { /* unary: -x */
		rc = ex_add(sb, op && strcmp(op, "-") == 0 ? "minus " : op ? op : "");
		return rc ? rc : ex_expr(x, r, sb);
	}
	if ((rc = ex_expr(x, l, sb)) < 0)
		return rc;
	if (strcmp(kind, "AEXPR_OP") != 0)
		return a_expr_kind(x, kind, op, r, sb);
	if ((w = WORDS(comparisons, op)) || (w = WORDS(arithmetic, op)))
		rc = ex_addf(sb, " %s ", w);
	else if (op && (strcmp(op, "~") == 0 || strcmp(op, "~*") == 0))
		rc = ex_add(sb, " matches the regular expression ");
	else
		rc = ex_addf(sb, " %s ", op ? op : "?");
	return rc ? rc : ex_expr(x, r, sb);
}

/* An operand of AND / OR, in parentheses when it is the other one of the two. */
static int bool_operand(struct ex *x, const json_t *arg, const char *parent, struct strbuf *sb)
{
	const json_t *b = ex_body(arg, "BoolExpr");
	const char *op = ex_str(b, "boolop");
	bool paren = b && op && strcmp(op, parent) != 0 && strcmp(op, "NOT_EXPR") != 0;
	int rc = paren ? ex_add(sb, "(") : 0;
	if (rc == 0)
		rc = ex_expr(x, arg, sb);
	return rc == 0 && paren ? ex_add(sb, ")") : rc;
}

static int sub_link(struct ex *x, const json_t *s, bool negated, struct strbuf *sb)
{
	const char *type = ex_str(s, "subLinkType"), *op = last_name(json_object_get(s, "operName"));
	const json_t *test = json_object_get(s, "testexpr"), *sel = json_object_get(s, "subselect");
	int rc = 0;
	if (!type)
		return subquery(x, sel, sb);
	if (strcmp(type, "EXISTS_SUBLINK") == 0) {
		rc = ex_add(sb, negated ? "there is no " : "there is some ");
		x->exists_row = true;
		return rc ? rc : subquery(x, sel, sb);
	}
	bool is_in = strcmp(type, "ANY_SUBLINK") == 0 && (!op || strcmp(op, "=") == 0);
	if (negated && !is_in) { /* not (x > all of (...)) */
		if ((rc = ex_add(sb, "not (")) == 0 && (rc = sub_link(x, s, false, sb)) == 0)
			rc = ex_add(sb, ")");
		return rc;
	}
	if (test && (rc = ex_expr(x, test, sb)) < 0)
		return rc;
	if (is_in)
		rc = ex_add(sb, negated ? " is not among " : " is among ");
	else if (strcmp(type, "ANY_SUBLINK") == 0 || strcmp(type, "ALL_SUBLINK") == 0)
		rc = ex_addf(sb, " %s %s of ", WORDS(comparisons, op) ? WORDS(comparisons, op) : op ? op : "compares with",
			     strcmp(type, "ANY_SUBLINK") == 0 ? "any" : "all");
	else if (strcmp(type, "ARRAY_SUBLINK") == 0)
		rc = ex_add(sb, "the list of ");
	return rc ? rc : subquery(x, sel, sb);
}

static int bool_expr(struct ex *x, const json_t *b, struct strbuf *sb)
{
	const char *op = ex_str(b, "boolop");
	const json_t *args = json_object_get(b, "args");
	int rc = 0;
	if (op && strcmp(op, "NOT_EXPR") == 0) {
		const json_t *arg = json_array_get(args, 0), *s = ex_body(arg, "SubLink");
		if (s)
			return sub_link(x, s, true, sb);
		if ((rc = ex_add(sb, "not (")) == 0 && (rc = ex_expr(x, arg, sb)) == 0)
			rc = ex_add(sb, ")");
		return rc;
	}
	const char *sep = op && strcmp(op, "OR_EXPR") == 0 ? " or " : " and ";
	for (size_t i = 0; rc == 0 && i < ex_list_len(args); i++) {
		if (i)
			rc = ex_add(sb, sep);
		if (rc == 0)
			rc = bool_operand(x, json_array_get(args, i), op ? op : "AND_EXPR", sb);
	}
	return rc;
}

static int case_expr(struct ex *x, const json_t *c, struct strbuf *sb)
{
	const json_t *arg = json_object_get(c, "arg"), *whens = json_object_get(c, "args");
	int rc = ex_add(sb, "(");
	for (size_t i = 0; rc == 0 && i < ex_list_len(whens); i++) {
		const json_t *w = ex_body(json_array_get(whens, i), "CaseWhen");
		if (i)
			rc = ex_add(sb, ", ");
		if (rc == 0 && (rc = ex_expr(x, json_object_get(w, "result"), sb)) == 0)
			rc = ex_add(sb, " when ");
		if (rc == 0 && arg && (rc = ex_expr(x, arg, sb)) == 0)
			rc = ex_add(sb, " is ");
		if (rc == 0)
			rc = ex_expr(x, json_object_get(w, "expr"), sb);
	}
	if (rc == 0 && (rc = ex_add(sb, ", otherwise ")) == 0)
		rc = json_object_get(c, "defresult") ? ex_expr(x, json_object_get(c, "defresult"), sb) : ex_add(sb, "NULL");
	return rc ? rc : ex_add(sb, ")");
}

/* The node kinds that are neither operators nor functions. */
static int other_node(struct ex *x, const char *type, const json_t *body, struct strbuf *sb)
{
	int rc;
	if (strcmp(type, "NullTest") == 0) {
		bool is_null = strcmp(ex_str(body, "nulltesttype") ? ex_str(body, "nulltesttype") : "", "IS_NULL") == 0;
		rc = ex_expr(x, json_object_get(body, "arg"), sb);
		return rc ? rc : ex_add(sb, is_null ? " has no value" : " has a value");
	}
	if (strcmp(type, "BooleanTest") == 0) {
		const char *t = ex_str(body, "booltesttype");
		rc = ex_expr(x, json_object_get(body, "arg"), sb);
		return rc ? rc : ex_addf(sb, " %s", t && strstr(t, "NOT") ? "is not" : "is");
	}
	if (strcmp(type, "TypeCast") == 0) {
		rc = ex_expr(x, json_object_get(body, "arg"), sb);
		const char *t = last_name(json_object_get(json_object_get(body, "typeName"), "names"));
		return rc ? rc : ex_addf(sb, " as %s", t ? t : "another type");
	}
	if (strcmp(type, "CoalesceExpr") == 0 || strcmp(type, "MinMaxExpr") == 0) {
		const char *mm = ex_str(body, "op");
		rc = ex_add(sb, type[0] == 'C' ? "the first with a value of " : mm && strcmp(mm, "IS_LEAST") == 0 ? "the least of " : "the greatest of ");
		return rc ? rc : list(x, json_object_get(body, "args"), ", ", " and ", sb);
	}
	if (strcmp(type, "RowExpr") == 0 || strcmp(type, "List") == 0) {
		rc = ex_add(sb, "(");
		if (rc == 0)
			rc = list(x, json_object_get(body, type[0] == 'R' ? "args" : "items"), ", ", ", ", sb);
		return rc ? rc : ex_add(sb, ")");
	}
	if (strcmp(type, "CollateClause") == 0 || strcmp(type, "A_Indirection") == 0)
		return ex_expr(x, json_object_get(body, "arg"), sb);
	if (strcmp(type, "ParamRef") == 0)
		return ex_addf(sb, "parameter $%lld", (long long)json_integer_value(json_object_get(body, "number")));
	if (strcmp(type, "SQLValueFunction") == 0)
		return ex_add(sb, strstr(ex_str(body, "op") ? ex_str(body, "op") : "", "DATE") ? "today's date" : "the current time");
	if (strcmp(type, "SelectStmt") == 0) {
		rc = ex_add(sb, "(");
		if (rc == 0)
			rc = x->block(x, body, sb);
		return rc ? rc : ex_add(sb, ")");
	}
	return ex_add(sb, "an expression");
}

int ex_expr(struct ex *x, const json_t *node, struct strbuf *sb)
{
	const char *type = ex_type(node);
	const json_t *body = type ? ex_body(node, type) : NULL;
	bool deep;
	int rc;
	if (!type)
		return ex_add(sb, "an expression");
	if ((rc = enter(x, sb, &deep)) < 0 || deep)
		return rc;
	if (strcmp(type, "ColumnRef") == 0)
		rc = column_ref(x, body, sb);
	else if (strcmp(type, "A_Const") == 0)
		rc = ex_add_const(sb, body);
	else if (strcmp(type, "FuncCall") == 0)
		rc = func_call(x, body, sb);
	else if (strcmp(type, "A_Expr") == 0)
		rc = a_expr(x, body, sb);
	else if (strcmp(type, "BoolExpr") == 0)
		rc = bool_expr(x, body, sb);
	else if (strcmp(type, "SubLink") == 0)
		rc = sub_link(x, body, false, sb);
	else if (strcmp(type, "CaseExpr") == 0)
		rc = case_expr(x, body, sb);
	else
		rc = other_node(x, type, body, sb);
	x->depth--;
	return rc;
}

/* One conjunct of an ON condition: "Name" for t1.Name = t2.Name, else the expression. */
static int join_conjunct(struct ex *x, const json_t *node, struct strbuf *sb)
{
	const json_t *e = ex_body(node, "A_Expr");
	const json_t *l = ex_body(json_object_get(e, "lexpr"), "ColumnRef"), *r = ex_body(json_object_get(e, "rexpr"), "ColumnRef");
	const char *op = last_name(json_object_get(e, "name"));
	if (l && r && op && strcmp(op, "=") == 0 && strcmp(ex_str(e, "kind") ? ex_str(e, "kind") : "", "AEXPR_OP") == 0) {
		const json_t *lf = json_object_get(l, "fields"), *rf = json_object_get(r, "fields");
		const char *ln = ex_sval(json_array_get(lf, ex_list_len(lf) - 1));
		const char *rn = ex_sval(json_array_get(rf, ex_list_len(rf) - 1));
		char buf[EX_NAME_MAX];
		if (ln && rn && strcasecmp(ln, rn) == 0)
			return ex_add(sb, ex_written(x, l, ln, buf));
		int rc = ex_expr(x, json_object_get(e, "lexpr"), sb);
		if (rc == 0)
			rc = ex_add(sb, " = ");
		return rc ? rc : ex_expr(x, json_object_get(e, "rexpr"), sb);
	}
	return ex_expr(x, node, sb);
}

int ex_join_condition(struct ex *x, const json_t *node, struct strbuf *sb)
{
	const json_t *b = ex_body(node, "BoolExpr");
	const char *op = ex_str(b, "boolop");
	if (!b || !op || strcmp(op, "AND_EXPR") != 0)
		return join_conjunct(x, node, sb);
	int rc = 0;
	const json_t *args = json_object_get(b, "args");
	for (size_t i = 0; rc == 0 && i < ex_list_len(args); i++) {
		if (i)
			rc = ex_add(sb, " and ");
		if (rc == 0)
			rc = bool_operand(x, json_array_get(args, i), "AND_EXPR", sb);
	}
	return rc;
}
