/*
 * sql_analyze_walk.c - step 3 of sql_analyze (see sql_analyze.c): one
 * depth-first walk of the parse tree, dispatching on node kinds
 * (SelectStmt, FROM items, A_Expr, FuncCall, BoolExpr...) and recording
 * through sql_analyze_refs.c; blocks, set operations, CTEs, grouping and
 * aggregate facts are decided here.
 */
#include "pipeline/sql/sql_analyze_internal.h"

#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- walker -- */

/* Aggregate functions of SQLite and PostgreSQL, by lower-cased name. */
static const char *const aggregate_names[] = {
	"count", "sum", "avg", "min", "max", "total", "group_concat", "string_agg", "array_agg",
	"json_group_array", "json_group_object", "json_agg", "jsonb_agg", "json_object_agg",
	"jsonb_object_agg", "bool_and", "bool_or", "every", "bit_and", "bit_or", "bit_xor", "stddev",
	"stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp", "median", "mode",
	"percentile_cont", "percentile_disc", "corr", "covar_pop", "covar_samp", "regr_avgx", "regr_avgy",
	"regr_count", "regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy",
	"xmlagg", "range_agg", "range_intersect_agg",
};

static int walk(struct an *an, const json_t *node, struct wc wc);
static int walk_select(struct an *an, const json_t *body, int parent, enum sql_set_op op, int depth,
		       int *ret_first);

static struct wc deeper(struct wc wc)
{
	wc.depth++;
	wc.conjunct = false;
	wc.disjunct = false;
	return wc;
}

/* Walk member key of obj with wc (nothing when absent). */
static int walk_member(struct an *an, const json_t *obj, const char *key, struct wc wc)
{
	const json_t *v = json_object_get(obj, key);
	return v ? walk(an, v, wc) : 0;
}

/* Walk one operand of a comparison with column col: string constants get compared_column = col. */
static int walk_compared(struct an *an, const json_t *node, int col, struct wc wc)
{
	const json_t *c = sa_node_body(node, "A_Const");
	const json_t *list = sa_node_body(node, "List");
	const json_t *cr = sa_node_body(node, "ColumnRef");

	if (cr) { /* x IN ("a", "b") in SQLite: double-quoted strings */
		int index = -1, r = sa_add_column(an, cr, wc, &index);
		if (r == 0 && index >= 0)
			sa_compare_quoted(an, index, col);
		return r;
	}
	if (c) {
		const char *v = sa_const_string(c);
		return v ? sa_add_literal(an, v, wc.scope, col, -1) : 0;
	}
	if (list) {
		size_t i;
		const json_t *item;
		json_array_foreach(json_object_get(list, "items"), i, item) {
			int r = walk_compared(an, item, col, deeper(wc));
			if (r < 0)
				return r;
		}
		return 0;
	}
	return walk(an, node, deeper(wc));
}

/* Append p to the array *arr (count *n, capacity *cap). */
static int add_join(struct an *an, struct sql_join_pred **arr, size_t *n, size_t *cap, struct sql_join_pred p)
{
	int r = sa_grow(an, (void **)arr, *n, cap, sizeof(**arr));
	if (r < 0)
		return r;
	(*arr)[(*n)++] = p;
	return 0;
}

/* A_Expr: comparisons, joins, string constants compared with a column. */
static int walk_aexpr(struct an *an, const json_t *body, struct wc wc)
{
	const json_t *lexpr = json_object_get(body, "lexpr"), *rexpr = json_object_get(body, "rexpr");
	const json_t *lcr = sa_node_body(lexpr, "ColumnRef"), *rcr = sa_node_body(rexpr, "ColumnRef");
	const json_t *name = json_object_get(body, "name");
	const char *op = sa_string_node(json_array_get(name, json_array_size(name) - 1));
	const char *kind = sa_member_string(body, "kind");
	struct wc sub = deeper(wc);
	int l = -1, r = -1, rc;

	if (lcr && (rc = sa_add_column(an, lcr, sub, &l)) < 0)
		return rc;
	if (rcr && (rc = sa_add_column(an, rcr, sub, &r)) < 0)
		return rc;
	if (!lcr && (rc = r >= 0 ? walk_compared(an, lexpr, r, sub) : walk(an, lexpr, sub)) < 0)
		return rc;
	if (!rcr && (rc = l >= 0 ? walk_compared(an, rexpr, l, sub) : walk(an, rexpr, sub)) < 0)
		return rc;
	if (l < 0 || r < 0)
		return 0;

	sa_compare_quoted(an, l, r);
	sa_compare_quoted(an, r, l);
	const struct sql_analysis *a = an->a;
	const struct sql_column_ref *cl = &a->columns[l], *cr = &a->columns[r];
	if (!(wc.conjunct || wc.disjunct) || !kind || strcmp(kind, "AEXPR_OP") != 0 || !op || strcmp(op, "=") != 0)
		return 0;
	if (strcmp(cl->name, "*") == 0 || strcmp(cr->name, "*") == 0 || cl->maybe_string || cr->maybe_string)
		return 0;
	if ((cl->qualifier && (cl->table_ref < 0 || a->tables[cl->table_ref].scope != wc.scope)) ||
	    (cr->qualifier && (cr->table_ref < 0 || a->tables[cr->table_ref].scope != wc.scope)))
		return 0;
	struct sql_join_pred p = {.left_column = l, .right_column = r, .scope = wc.scope, .conjunct = wc.conjunct};
	if (!cl->qualifier || !cr->qualifier)
		return add_join(an, &an->a->unqualified_joins, &an->a->n_unqualified_joins, &an->cap_unqualified, p);
	return cl->table_ref == cr->table_ref ? 0 : add_join(an, &an->a->joins, &an->a->n_joins, &an->cap_joins, p);
}

/* Lower-cased last part of a funcname list into buf; false when unreadable. */
static bool function_name(const json_t *funcname, char *buf, size_t size)
{
	const char *name = sa_string_node(json_array_get(funcname, json_array_size(funcname) - 1));
	size_t i, n;

	if (!name || (n = strlen(name)) >= size)
		return false;
	for (i = 0; i <= n; i++)
		buf[i] = (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] - 'A' + 'a') : name[i];
	return true;
}

/* True when FuncCall body fc is an aggregate call (not a window call, not SQLite's scalar min/max). */
static bool is_aggregate(const json_t *fc)
{
	char name[64];

	if (json_object_get(fc, "over") || !function_name(json_object_get(fc, "funcname"), name, sizeof(name)))
		return false;
	if ((strcmp(name, "min") == 0 || strcmp(name, "max") == 0) && json_array_size(json_object_get(fc, "args")) > 1)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(aggregate_names); i++)
		if (strcmp(name, aggregate_names[i]) == 0)
			return true;
	return false;
}

static int walk_func(struct an *an, const json_t *body, struct wc wc)
{
	struct sql_block *b = wc.scope >= 0 ? &an->a->blocks[wc.scope] : NULL;

	if (is_aggregate(body)) {
		if (b) {
			if (wc.in_agg)
				b->nested_aggregate = true;
			if (wc.clause == SQL_IN_SELECT)
				b->has_aggregate_in_select = true;
			else if (wc.clause == SQL_IN_WHERE || wc.clause == SQL_IN_JOIN_ON)
				b->aggregate_in_where = true;
			else if (wc.clause == SQL_IN_GROUP_BY)
				b->aggregate_in_group_by = true;
		}
		wc.in_agg = true;
		char name[64];
		bool named = function_name(json_object_get(body, "funcname"), name, sizeof(name));
		bool sum = named && (strcmp(name, "sum") == 0 || strcmp(name, "avg") == 0 || strcmp(name, "total") == 0);
		const json_t *args = json_object_get(body, "args");
		wc.in_sum = !json_is_true(json_object_get(body, "agg_distinct")) && sum;
		wc.summed = sum && json_array_size(args) == 1 && !json_object_get(body, "agg_filter") &&
			    sa_node_type(json_array_get(args, 0)) &&
			    strcmp(sa_node_type(json_array_get(args, 0)), "ColumnRef") == 0;
		if (b && named && strcmp(name, "avg") == 0)
			b->has_avg = true;
	}
	return walk(an, body, deeper(wc));
}

/* One FROM item (RangeVar, JoinExpr, RangeSubselect, RangeFunction...). */
static int walk_from_item(struct an *an, const json_t *item, struct wc wc)
{
	const char *type = sa_node_type(item);
	const json_t *body = type ? sa_node_body(item, type) : NULL;
	struct sql_block *b;
	int r;

	if (wc.depth > SQL_ANALYZE_MAX_DEPTH)
		return t2s_error_set(an->err, T2S_ERR_SQL_REJECTED, "statement too deeply nested to analyse");
	if (!body)
		return walk(an, item, deeper(wc));
	if (strcmp(type, "JoinExpr") == 0) {
		size_t left_start = an->a->n_tables;
		if ((r = walk_from_item(an, json_object_get(body, "larg"), deeper(wc))) < 0)
			return r;
		size_t right_start = an->a->n_tables;
		if ((r = walk_from_item(an, json_object_get(body, "rarg"), deeper(wc))) < 0)
			return r;
		/* USING (...) and NATURAL join the two sides without a col = col predicate. */
		bool natural = json_is_true(json_object_get(body, "isNatural"));
		if ((natural || json_array_size(json_object_get(body, "usingClause")) > 0) && right_start > left_start &&
		    an->a->n_tables > right_start) {
			if ((r = sa_grow(an, (void **)&an->a->using_joins, an->a->n_using_joins, &an->cap_using,
				      sizeof(*an->a->using_joins))) < 0)
				return r;
			an->a->using_joins[an->a->n_using_joins++] = (struct sql_using_join){
				.left_table = (int)right_start - 1, .right_table = (int)right_start, .scope = wc.scope};
		}
		return 0; /* the ON conditions: walk_join_quals, once the whole FROM is known */
	}
	b = wc.scope >= 0 ? &an->a->blocks[wc.scope] : NULL;
	if (b)
		b->n_from_items++;
	if (strcmp(type, "RangeVar") == 0)
		return sa_add_range_var(an, body, wc);
	if (strcmp(type, "RangeSubselect") == 0) {
		const char *alias = sa_member_string(json_object_get(body, "alias"), "aliasname");
		int first = -1, index;
		if ((r = walk_select(an, sa_node_body(json_object_get(body, "subquery"), "SelectStmt"), wc.scope,
				     SQL_SET_NONE, wc.depth + 1, &first)) < 0)
			return r;
		if (alias && strncmp(alias, DERIVED_ALIAS_PREFIX, strlen(DERIVED_ALIAS_PREFIX)) == 0 &&
		    !strstr(an->orig, alias))
			alias = NULL; /* added by the repair */
		return sa_add_table(an, NULL, alias, alias, wc.scope, first, &index);
	}
	return walk(an, item, deeper(wc));
}

/*
 * The ON conditions of the joins in FROM item `item`, inner joins first.
 * Walked after every FROM item of the block is recorded, as SQLite reads
 * them: an ON may name a table joined later in the same FROM ("a JOIN b ON
 * a.x = c.x JOIN c ON ..."), which PostgreSQL would refuse.
 */
static int walk_join_quals(struct an *an, const json_t *item, struct wc wc)
{
	const json_t *body = sa_node_body(item, "JoinExpr");
	int r;

	if (!body)
		return 0;
	if (wc.depth > SQL_ANALYZE_MAX_DEPTH)
		return t2s_error_set(an->err, T2S_ERR_SQL_REJECTED, "statement too deeply nested to analyse");
	if ((r = walk_join_quals(an, json_object_get(body, "larg"), deeper(wc))) < 0 ||
	    (r = walk_join_quals(an, json_object_get(body, "rarg"), deeper(wc))) < 0)
		return r;
	struct wc on = deeper(wc);
	on.clause = SQL_IN_JOIN_ON;
	on.conjunct = on.disjunct = true;
	return walk_member(an, body, "quals", on);
}

/* A FROM item whose ON conditions need no other item's tables (one outside a block's FROM list). */
static int walk_from_item_and_quals(struct an *an, const json_t *item, struct wc wc)
{
	int r = walk_from_item(an, item, wc);
	return r < 0 ? r : walk_join_quals(an, item, wc);
}

static enum sql_set_op set_op_of(const json_t *body)
{
	const char *op = sa_member_string(body, "op");
	bool all = json_is_true(json_object_get(body, "all"));

	if (!op)
		return SQL_SET_NONE;
	if (strcmp(op, "SETOP_UNION") == 0)
		return all ? SQL_SET_UNION_ALL : SQL_SET_UNION;
	if (strcmp(op, "SETOP_INTERSECT") == 0)
		return SQL_SET_INTERSECT;
	if (strcmp(op, "SETOP_EXCEPT") == 0)
		return SQL_SET_EXCEPT;
	return SQL_SET_NONE;
}

static int new_block(struct an *an, int parent, enum sql_set_op op, int *ret_index)
{
	struct sql_analysis *a = an->a;
	int r = sa_grow(an, (void **)&a->blocks, a->n_blocks, &an->cap_blocks, sizeof(*a->blocks));
	if (r < 0)
		return r;
	struct sql_block *b = &a->blocks[a->n_blocks];
	memset(b, 0, sizeof(*b));
	b->parent = parent;
	b->set_op = op;
	*ret_index = (int)a->n_blocks++;
	return 0;
}

/* True when select column c is covered by a GROUP BY column g of the same block. */
static bool grouped_by(const struct sql_column_ref *c, const struct sql_column_ref *g)
{
	if (g->names_output || !sa_same_name(c->name, g->name))
		return false;
	if (!c->qualifier || !g->qualifier)
		return true;
	if (c->table_ref >= 0 && c->table_ref == g->table_ref)
		return true;
	return sa_same_name(c->qualifier, g->qualifier);
}

/*
 * Fill block b's ungrouped_select_columns.  grouped_targets[i] is true when
 * select-list entry i is named in GROUP BY by ordinal or output name.
 */
static int fill_ungrouped(struct an *an, int b, size_t first_column, const bool *grouped_targets, size_t n_targets)
{
	struct sql_analysis *a = an->a;
	struct sql_block *blk = &a->blocks[b];
	size_t n = 0;

	if (!blk->has_group_by && !blk->has_aggregate_in_select)
		return 0;
	for (size_t pass = 0; pass < 2; pass++) {
		for (size_t i = first_column; i < a->n_columns; i++) {
			const struct sql_column_ref *c = &a->columns[i];
			if (c->scope != b || c->clause != SQL_IN_SELECT || c->in_aggregate)
				continue;
			int t = an->col_target[i];
			if (t >= 0 && (size_t)t < n_targets && grouped_targets[t])
				continue;
			bool grouped = false;
			for (size_t j = first_column; j < a->n_columns && !grouped; j++)
				grouped = a->columns[j].scope == b && a->columns[j].clause == SQL_IN_GROUP_BY &&
					  grouped_by(c, &a->columns[j]);
			if (grouped)
				continue;
			if (pass == 1)
				blk->ungrouped_select_columns[n] = (int)i;
			n++;
		}
		if (pass == 0) {
			if (n == 0)
				return 0;
			blk->ungrouped_select_columns = malloc(n * sizeof(int));
			if (!blk->ungrouped_select_columns)
				return sa_nomem(an);
			n = 0;
		}
	}
	blk->n_ungrouped_select_columns = n;
	return 0;
}

/* Mark in grouped (n entries) the select-list entries GROUP BY names by ordinal or output name. */
static void group_targets(const json_t *group, const json_t *targets, bool *grouped, size_t n)
{
	size_t i, j;
	const json_t *g, *t;

	json_array_foreach(group, i, g) {
		const json_t *c = sa_node_body(g, "A_Const");
		const json_t *cr = sa_node_body(g, "ColumnRef");
		if (c) {
			json_int_t k = json_integer_value(json_object_get(json_object_get(c, "ival"), "ival"));
			if (k >= 1 && (size_t)k <= n)
				grouped[k - 1] = true;
		} else if (cr && json_array_size(json_object_get(cr, "fields")) == 1) {
			const char *name = sa_string_node(json_array_get(json_object_get(cr, "fields"), 0));
			json_array_foreach(targets, j, t) {
				if (j < n && sa_same_name(sa_member_string(sa_node_body(t, "ResTarget"), "name"), name))
					grouped[j] = true;
			}
		}
	}
}

/* The directions of body's ORDER BY keys and its LIMIT, recorded on block b (when b >= 0). */
static void order_and_limit(struct an *an, const json_t *body, int b)
{
	size_t i;
	const json_t *v;

	if (b < 0)
		return;
	struct sql_block *blk = &an->a->blocks[b];
	json_array_foreach(json_object_get(body, "sortClause"), i, v) {
		const char *dir = sa_member_string(sa_node_body(v, "SortBy"), "sortby_dir");
		if (dir && strcmp(dir, "SORTBY_DESC") == 0)
			blk->order_desc = true;
		else
			blk->order_asc = true;
	}
	if (json_object_get(body, "limitCount"))
		blk->has_limit = true;
}

/* The clauses of a plain SELECT (op SETOP_NONE) as block b. */
static int walk_leaf_select(struct an *an, const json_t *body, int b, int depth)
{
	const json_t *targets = json_object_get(body, "targetList");
	const json_t *group = json_object_get(body, "groupClause");
	struct wc wc = {.scope = b, .clause = SQL_IN_OTHER, .target = -1, .depth = depth + 1};
	size_t first_column = an->a->n_columns, n_targets = json_array_size(targets), i;
	const json_t *v;
	const char *key;
	int r;

	an->a->blocks[b].is_distinct = json_object_get(body, "distinctClause") != NULL;
	an->a->blocks[b].n_select_items = n_targets;
	an->a->blocks[b].has_group_by = json_array_size(group) > 0;

	json_array_foreach(json_object_get(body, "fromClause"), i, v) {
		if ((r = walk_from_item(an, v, wc)) < 0)
			return r;
	}
	json_array_foreach(json_object_get(body, "fromClause"), i, v) {
		if ((r = walk_join_quals(an, v, wc)) < 0)
			return r;
	}
	wc.clause = SQL_IN_SELECT;
	json_array_foreach(targets, i, v) {
		wc.target = (int)i;
		if ((r = walk_member(an, sa_node_body(v, "ResTarget"), "val", wc)) < 0)
			return r;
	}
	wc.target = -1;
	wc.targets = targets;
	wc.clause = SQL_IN_WHERE;
	wc.conjunct = wc.disjunct = true;
	if ((r = walk_member(an, body, "whereClause", wc)) < 0)
		return r;
	wc.conjunct = wc.disjunct = false;
	wc.clause = SQL_IN_GROUP_BY;
	if ((r = walk_member(an, body, "groupClause", wc)) < 0)
		return r;
	wc.clause = SQL_IN_HAVING;
	if ((r = walk_member(an, body, "havingClause", wc)) < 0)
		return r;
	wc.clause = SQL_IN_ORDER_BY;
	if ((r = walk_member(an, body, "sortClause", wc)) < 0)
		return r;
	order_and_limit(an, body, b);
	wc.clause = SQL_IN_OTHER;
	json_object_foreach((json_t *)body, key, v) {
		static const char *const done[] = {"fromClause", "targetList", "whereClause", "groupClause",
						   "havingClause", "sortClause", "withClause", "larg", "rarg"};
		bool skip = false;
		for (size_t k = 0; k < ARRAY_SIZE(done) && !skip; k++)
			skip = strcmp(key, done[k]) == 0;
		if (!skip && (r = walk(an, v, wc)) < 0)
			return r;
	}

	bool *grouped = calloc(n_targets ? n_targets : 1, sizeof(bool));
	if (!grouped)
		return sa_nomem(an);
	group_targets(group, targets, grouped, n_targets);
	r = fill_ungrouped(an, b, first_column, grouped, n_targets);
	free(grouped);
	return r;
}

/* Make the CTE names of withClause visible; *ret_pushed how many were added. */
static int push_ctes(struct an *an, const json_t *with, size_t *ret_pushed)
{
	size_t i, n = 0;
	const json_t *cte;

	json_array_foreach(json_object_get(with, "ctes"), i, cte) {
		const char *name = sa_member_string(sa_node_body(cte, "CommonTableExpr"), "ctename");
		if (!name)
			continue;
		int r = sa_grow(an, (void **)&an->ctes, an->n_ctes, &an->cap_ctes, sizeof(*an->ctes));
		if (r < 0)
			return r;
		an->ctes[an->n_ctes++] = name;
		n++;
		*ret_pushed = n;
	}
	*ret_pushed = n;
	return 0;
}

/*
 * A SelectStmt body: its CTE bodies, then either the two operands of a set
 * operation or one leaf block.  parent is the enclosing block (-1 none), op
 * the set operation this statement is an operand of.  *ret_first is its
 * first leaf block (-1 when none was made).
 */
static int walk_select(struct an *an, const json_t *body, int parent, enum sql_set_op op, int depth,
		       int *ret_first)
{
	const json_t *with = json_object_get(body, "withClause");
	enum sql_set_op own = set_op_of(body);
	size_t pushed = 0, i;
	const json_t *cte;
	int r = 0, first = -1, unused;

	*ret_first = -1;
	if (!json_is_object(body))
		return 0;
	if (depth > SQL_ANALYZE_MAX_DEPTH)
		return t2s_error_set(an->err, T2S_ERR_SQL_REJECTED, "statement too deeply nested to analyse");
	if (with && (r = push_ctes(an, with, &pushed)) < 0)
		goto out;
	json_array_foreach(json_object_get(with, "ctes"), i, cte) {
		const json_t *query = sa_node_body(sa_node_body(cte, "CommonTableExpr"), "ctequery");
		if ((r = walk_select(an, sa_node_body(query, "SelectStmt"), parent, SQL_SET_NONE, depth + 1, &unused)) < 0)
			goto out;
	}
	if (own != SQL_SET_NONE) {
		struct wc wc = {.clause = SQL_IN_ORDER_BY, .target = -1, .depth = depth + 1};
		if ((r = walk_select(an, json_object_get(body, "larg"), parent, own, depth + 1, &first)) < 0 ||
		    (r = walk_select(an, json_object_get(body, "rarg"), parent, own, depth + 1, &unused)) < 0)
			goto out;
		wc.scope = first;
		const json_t *leftmost = body; /* its select list names the output columns */
		for (int hops = 0; hops < SQL_ANALYZE_MAX_DEPTH && set_op_of(leftmost) != SQL_SET_NONE; hops++)
			leftmost = json_object_get(leftmost, "larg");
		wc.targets = json_object_get(leftmost, "targetList");
		if ((r = walk_member(an, body, "sortClause", wc)) < 0)
			goto out;
		order_and_limit(an, body, first);
		wc.clause = SQL_IN_OTHER;
		if ((r = walk_member(an, body, "limitCount", wc)) < 0 ||
		    (r = walk_member(an, body, "limitOffset", wc)) < 0)
			goto out;
	} else {
		if ((r = new_block(an, parent, op, &first)) < 0)
			goto out;
		if ((r = walk_leaf_select(an, body, first, depth)) < 0)
			goto out;
	}
	*ret_first = first;
out:
	an->n_ctes -= pushed;
	return r;
}

/* Generic walk: dispatch known node types, descend into everything else. */
static int walk(struct an *an, const json_t *node, struct wc wc)
{
	int r;

	if (wc.depth > SQL_ANALYZE_MAX_DEPTH)
		return t2s_error_set(an->err, T2S_ERR_SQL_REJECTED, "statement too deeply nested to analyse");
	if (json_is_array(node)) {
		size_t i;
		const json_t *v;
		json_array_foreach(node, i, v) {
			if ((r = walk(an, v, deeper(wc))) < 0)
				return r;
		}
		return 0;
	}
	if (!json_is_object(node))
		return 0;

	const char *type = sa_node_type(node);
	const json_t *body = type ? sa_node_body(node, type) : NULL;
	if (body && json_is_object(body)) {
		int unused;
		if (strcmp(type, "SelectStmt") == 0)
			return walk_select(an, body, wc.scope, SQL_SET_NONE, wc.depth + 1, &unused);
		if (strcmp(type, "ColumnRef") == 0)
			return sa_add_column(an, body, wc, &unused);
		if (strcmp(type, "A_Expr") == 0)
			return walk_aexpr(an, body, wc);
		if (strcmp(type, "FuncCall") == 0)
			return walk_func(an, body, wc);
		if (strcmp(type, "A_Const") == 0) {
			const char *v = sa_const_string(body);
			return v ? sa_add_literal(an, v, wc.scope, -1, -1) : 0;
		}
		if (strcmp(type, "BoolExpr") == 0) {
			bool and = sa_same_name(sa_member_string(body, "boolop"), "AND_EXPR");
			bool or = sa_same_name(sa_member_string(body, "boolop"), "OR_EXPR");
			struct wc sub = deeper(wc);
			size_t i;
			const json_t *arg;
			sub.conjunct = and && wc.conjunct;
			sub.disjunct = (and || or) && (wc.conjunct || wc.disjunct);
			json_array_foreach(json_object_get(body, "args"), i, arg) {
				if ((r = walk(an, arg, sub)) < 0)
					return r;
			}
			return 0;
		}
		if (strcmp(type, "RangeVar") == 0 || strcmp(type, "JoinExpr") == 0 ||
		    strcmp(type, "RangeSubselect") == 0)
			return walk_from_item_and_quals(an, node, wc);
	}

	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)node, key, v) {
		if ((r = walk(an, v, deeper(wc))) < 0)
			return r;
	}
	return 0;
}

/* Walk every statement of tree into an->a. */
int sa_walk_tree(struct an *an, const json_t *tree)
{
	const json_t *stmts = json_object_get(tree, "stmts"), *s;
	struct wc wc = {.scope = -1, .clause = SQL_IN_OTHER, .target = -1};
	size_t i;
	int r;

	if (!json_is_array(stmts))
		return t2s_error_set(an->err, T2S_ERR_INTERNAL, "parse tree has no statement list");
	an->a->n_statements = (int)json_array_size(stmts);
	json_array_foreach(stmts, i, s) {
		const json_t *stmt = json_object_get(s, "stmt");
		const json_t *select = sa_node_body(stmt, "SelectStmt");
		if (i == 0 && select) {
			an->a->has_order_by = json_array_size(json_object_get(select, "sortClause")) > 0;
			an->a->has_limit = json_object_get(select, "limitCount") != NULL;
		}
		if ((r = walk(an, stmt, wc)) < 0)
			return r;
	}
	return 0;
}
