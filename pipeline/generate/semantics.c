/*
 * semantics.c - level-2 checks from the statement's parse (see semantics.h).
 *
 * The analysis (pipeline/sql/sql_analyze.h) gives names as written; here
 * they are resolved to the schema: a table reference by its (schema-)name,
 * case-insensitively as both engines fold unquoted names; a column by its
 * table reference, or, unqualified, by the only table of its query block
 * that has a column of that name.
 */
#include "pipeline/generate/semantics.h"

#include "common/strbuf.h"
#include "pipeline/sql/sql_analyze.h"
#include "pipeline/sql/sql_engine.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct resolved {
	const struct sql_analysis *a;
	const struct schema *s;
	int *ref_table; /* per table ref: schema table, -1 for CTEs and unknown names */
};

/*
 * The schema table a reference names (see schema_resolve_table): qualified,
 * "schema.table" ignoring case; unqualified, the one whose API name it is
 * (main, public), else the only table of that name in any schema.
 */
static int find_table(const struct schema *s, const struct sql_table_ref *r)
{
	if (!r->schema)
		return schema_resolve_table(s, r->name, SCHEMA_NAME_BARE, NULL, 0);
	size_t n = strlen(r->schema), m = strlen(r->name);
	char *qualified = malloc(n + m + 2);
	if (!qualified)
		return -1;
	memcpy(qualified, r->schema, n);
	qualified[n] = '.';
	memcpy(qualified + n + 1, r->name, m + 1);
	int t = schema_resolve_table(s, qualified, SCHEMA_NAME_NOCASE, NULL, 0);
	free(qualified);
	return t;
}

static int find_column(const struct schema_table *t, const char *name)
{
	for (size_t i = 0; i < t->n_columns; i++)
		if (strcasecmp(t->columns[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* The table reference of column ref c: its own, or the only one of its block having that column. */
static int column_ref_table(const struct resolved *rs, const struct sql_column_ref *c)
{
	if (c->table_ref >= 0)
		return c->table_ref;
	int found = -1;
	for (size_t i = 0; i < rs->a->n_tables; i++) {
		if (rs->a->tables[i].scope != c->scope || rs->ref_table[i] < 0)
			continue;
		if (find_column(&rs->s->tables[rs->ref_table[i]], c->name) >= 0) {
			if (found >= 0)
				return -1; /* ambiguous */
			found = (int)i;
		}
	}
	return found;
}

static int add_used(struct validation *v, int t)
{
	for (size_t i = 0; i < v->n_used_tables; i++)
		if (v->used_tables[i] == t)
			return 0;
	int *u = realloc(v->used_tables, (v->n_used_tables + 1) * sizeof(int));
	if (!u)
		return -T2S_ERR_NOMEM;
	v->used_tables = u;
	u[v->n_used_tables++] = t;
	return 0;
}

static bool graph_has_edge(const struct column_index *idx, int lt, int lc, int rt, int rc)
{
	for (size_t i = 0; i < idx->n_edges; i++) {
		const struct link_edge *e = &idx->edges[i];
		if ((e->left_table == lt && e->left_column == lc && e->right_table == rt && e->right_column == rc) ||
		    (e->left_table == rt && e->left_column == rc && e->right_table == lt && e->right_column == lc))
			return true;
	}
	return false;
}

static int tables_linked(const struct validate_context *cx, struct validation *v)
{
	struct strbuf out;
	strbuf_init(&out, 4096);
	for (size_t i = 0; i < v->n_used_tables; i++)
		if (!cx->linked_table[v->used_tables[i]])
			strbuf_addf(&out, "%s%s", out.len ? ", " : "", cx->schema->tables[v->used_tables[i]].api_name);
	int rc = out.len ? validation_add(v, 2, "tables_linked", false, false,
					  "uses tables outside the linked schema: %s", out.buf)
			 : validation_add(v, 2, "tables_linked", true, false, "every table is in the linked schema");
	strbuf_release(&out);
	return rc;
}

/* Join predicates (through AND) that are not edges of the schema graph (blocking). */
static int joins_follow_graph(const struct validate_context *cx, const struct resolved *rs, struct validation *v)
{
	struct strbuf off;
	strbuf_init(&off, 4096);
	size_t n_checked = 0;
	for (size_t i = 0; i < rs->a->n_joins; i++) {
		if (!rs->a->joins[i].conjunct)
			continue; /* under OR: one alternative among others, not the join itself */
		const struct sql_column_ref *l = &rs->a->columns[rs->a->joins[i].left_column];
		const struct sql_column_ref *r = &rs->a->columns[rs->a->joins[i].right_column];
		int lr = column_ref_table(rs, l), rr = column_ref_table(rs, r);
		int lt = lr >= 0 ? rs->ref_table[lr] : -1, rt = rr >= 0 ? rs->ref_table[rr] : -1;
		if (lt < 0 || rt < 0 || lt == rt)
			continue;
		int lc = find_column(&rs->s->tables[lt], l->name), rc = find_column(&rs->s->tables[rt], r->name);
		if (lc < 0 || rc < 0)
			continue;
		n_checked++;
		if (!graph_has_edge(cx->index, lt, lc, rt, rc))
			strbuf_addf(&off, "%s%s.%s = %s.%s", off.len ? "; " : "", rs->s->tables[lt].api_name,
				    rs->s->tables[lt].columns[lc].name, rs->s->tables[rt].api_name,
				    rs->s->tables[rt].columns[rc].name);
	}
	if (off.len)
		v->join_problem = true;
	int rc = off.len ? validation_add(v, 2, "joins_follow_schema_graph", false, true,
					  "joins that are no known relationship of the schema: %s", off.buf)
			 : validation_add(v, 2, "joins_follow_schema_graph", true, true,
					  "%zu join condition%s, each a relationship of the schema", n_checked,
					  n_checked == 1 ? "" : "s");
	strbuf_release(&off);
	return rc;
}

static int uf_find(int *parent, int x)
{
	while (parent[x] != x)
		x = parent[x] = parent[parent[x]];
	return x;
}

/*
 * Every block's base tables connected by its join conditions (blocking):
 * col = col with both columns qualified, or with an unqualified column the
 * one table of its block that has it, and USING / NATURAL joins.
 */
static int tables_joined(const struct resolved *rs, struct validation *v)
{
	const struct sql_analysis *a = rs->a;
	int *parent = malloc((a->n_tables ? a->n_tables : 1) * sizeof(int));
	if (!parent)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < a->n_tables; i++)
		parent[i] = (int)i;
	for (size_t i = 0; i < a->n_joins + a->n_unqualified_joins; i++) {
		const struct sql_join_pred *p = i < a->n_joins ? &a->joins[i] : &a->unqualified_joins[i - a->n_joins];
		int l = column_ref_table(rs, &a->columns[p->left_column]);
		int r = column_ref_table(rs, &a->columns[p->right_column]);
		if (l >= 0 && r >= 0)
			parent[uf_find(parent, l)] = uf_find(parent, r);
	}
	for (size_t i = 0; i < a->n_using_joins; i++)
		parent[uf_find(parent, a->using_joins[i].left_table)] = uf_find(parent, a->using_joins[i].right_table);
	const char *left = NULL, *right = NULL;
	for (size_t b = 0; b < a->n_blocks && !left; b++) {
		size_t n_base = 0;
		int first = -1;
		for (size_t i = 0; i < a->n_tables; i++)
			if (a->tables[i].scope == (int)b && rs->ref_table[i] >= 0)
				n_base++;
		/* Only blocks whose FROM holds base tables alone: a subquery may carry the condition. */
		if (n_base < 2 || n_base != a->blocks[b].n_from_items)
			continue;
		for (size_t i = 0; i < a->n_tables && !left; i++) {
			if (a->tables[i].scope != (int)b || rs->ref_table[i] < 0)
				continue;
			if (first < 0)
				first = (int)i;
			else if (uf_find(parent, (int)i) != uf_find(parent, first)) {
				left = a->tables[first].alias ? a->tables[first].alias : a->tables[first].name;
				right = a->tables[i].alias ? a->tables[i].alias : a->tables[i].name;
			}
		}
	}
	free(parent);
	if (left)
		v->join_problem = true;
	if (!left)
		return validation_add(v, 2, "tables_joined", true, true, "every table of each query block is joined");
	return validation_add(v, 2, "tables_joined", false, true,
			      "%s and %s are not joined by any condition: every row of one pairs with every row of the "
			      "other; add the join condition from the schema's relationships",
			      left, right);
}

static int aggregates_legal(const struct sql_analysis *a, struct validation *v)
{
	const char *what = NULL;
	for (size_t b = 0; b < a->n_blocks && !what; b++) {
		if (a->blocks[b].aggregate_in_where)
			what = "an aggregate function is used in WHERE or JOIN ON: filter aggregates with HAVING";
		else if (a->blocks[b].aggregate_in_group_by)
			what = "an aggregate function is used in GROUP BY";
		else if (a->blocks[b].nested_aggregate)
			what = "an aggregate function is nested inside another: use a subquery";
	}
	return validation_add(v, 2, "aggregates_placed_legally", !what, true, "%s",
			      what ? what : "aggregates only where SQL allows them");
}

/* Columns a block's groups fix: its GROUP BY columns, closed over its conjunct col = col joins. */
struct grouped_set {
	int *ref;
	const char **name;
	size_t n;
};

static bool grouped_has(const struct grouped_set *g, int ref, const char *name)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->ref[i] == ref && strcasecmp(g->name[i], name) == 0)
			return true;
	return false;
}

/* The closure (g's arrays hold at most n_columns entries: each is a column reference's). 0 or -T2S_ERR_NOMEM. */
static int grouped_closure(const struct resolved *rs, int block, struct grouped_set *g)
{
	const struct sql_analysis *a = rs->a;
	g->n = 0;
	g->ref = malloc((a->n_columns ? a->n_columns : 1) * sizeof(int));
	g->name = malloc((a->n_columns ? a->n_columns : 1) * sizeof(char *));
	if (!g->ref || !g->name)
		return -T2S_ERR_NOMEM;
	for (size_t k = 0; k < a->n_columns; k++) {
		const struct sql_column_ref *c = &a->columns[k];
		int ref = column_ref_table(rs, c);
		if (c->scope == block && c->clause == SQL_IN_GROUP_BY && ref >= 0 && !grouped_has(g, ref, c->name)) {
			g->ref[g->n] = ref;
			g->name[g->n++] = c->name;
		}
	}
	for (bool grew = true; grew;) {
		grew = false;
		for (size_t i = 0; i < a->n_joins; i++) {
			const struct sql_join_pred *j = &a->joins[i];
			if (j->scope != block || !j->conjunct)
				continue;
			const struct sql_column_ref *l = &a->columns[j->left_column], *r = &a->columns[j->right_column];
			int lr = column_ref_table(rs, l), rr = column_ref_table(rs, r);
			bool has_l = grouped_has(g, lr, l->name), has_r = grouped_has(g, rr, r->name);
			if (has_l == has_r || lr < 0 || rr < 0)
				continue;
			g->ref[g->n] = has_l ? rr : lr;
			g->name[g->n++] = has_l ? r->name : l->name;
			grew = true;
		}
	}
	return 0;
}

/*
 * Is column `name` of table ref `ref` fixed within each group: grouped (or
 * equal through the block's joins to a grouped column), or of a table whose
 * whole primary key is (functional dependence)?
 */
static bool grouped(const struct resolved *rs, const struct grouped_set *g, int block, int ref, const char *name)
{
	const struct sql_analysis *a = rs->a;
	const struct schema_table *t = ref >= 0 && rs->ref_table[ref] >= 0 ? &rs->s->tables[rs->ref_table[ref]] : NULL;
	size_t pk_grouped = 0;
	for (size_t i = 0; t && i < t->n_primary_key; i++)
		pk_grouped += grouped_has(g, ref, t->primary_key[i]);
	if (t && t->n_primary_key && pk_grouped == t->n_primary_key)
		return true;
	if (ref >= 0 && grouped_has(g, ref, name))
		return true;
	for (size_t k = 0; k < a->n_columns; k++) {
		const struct sql_column_ref *c = &a->columns[k];
		if (c->scope == block && c->clause == SQL_IN_GROUP_BY && strcasecmp(c->name, name) == 0 &&
		    (c->table_ref < 0 || ref < 0 || column_ref_table(rs, c) == ref))
			return true;
	}
	return false;
}

static int group_by_consistent(const struct resolved *rs, struct validation *v)
{
	const struct sql_analysis *a = rs->a;
	const char *bad = NULL;
	bool no_group_by = false;
	for (size_t b = 0; b < a->n_blocks && !bad; b++) {
		const struct sql_block *blk = &a->blocks[b];
		if (!blk->has_group_by && !blk->has_aggregate_in_select)
			continue;
		struct grouped_set g = {0};
		if (blk->has_group_by && grouped_closure(rs, (int)b, &g) < 0) {
			free(g.ref);
			free(g.name);
			return -T2S_ERR_NOMEM;
		}
		for (size_t i = 0; i < blk->n_ungrouped_select_columns && !bad; i++) {
			const struct sql_column_ref *c = &a->columns[blk->ungrouped_select_columns[i]];
			if (strcmp(c->name, "*") == 0 || c->names_output || c->maybe_string)
				continue;
			if (!blk->has_group_by) {
				bad = c->name;
				no_group_by = true;
			} else if (!grouped(rs, &g, (int)b, column_ref_table(rs, c), c->name)) {
				bad = c->name;
			}
		}
		free(g.ref);
		free(g.name);
	}
	bool blocking = true;
	if (!bad)
		return validation_add(v, 2, "group_by_consistent", true, blocking,
				      "every plain selected column is grouped or determined by a grouped key");
	if (no_group_by)
		return validation_add(v, 2, "group_by_consistent", false, blocking,
				      "column %s is selected beside aggregates without GROUP BY: its value comes from "
				      "an arbitrary row", bad);
	return validation_add(v, 2, "group_by_consistent", false, blocking,
			      "column %s is selected but neither grouped nor determined by a grouped key", bad);
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$';
}

/*
 * Does the statement filter groups (the keyword HAVING outside quotes)?  The
 * analysis shows HAVING only through column references, and COUNT(*) has none.
 */
static bool has_having(const char *sql)
{
	for (const char *p = sql; *p; p++) {
		if (*p == '\'' || *p == '"' || *p == '`' || *p == '[') {
			char close = *p == '[' ? ']' : *p;
			const char *end = strchr(p + 1, close);
			if (!end)
				return false;
			p = end;
		} else if ((p == sql || !ident_char(p[-1])) && strncasecmp(p, "having", 6) == 0 && !ident_char(p[6])) {
			return true;
		}
	}
	return false;
}

/* The string literals compared with columns of schema tables, for level 3 (v->literals, v->filters). */
static int collect_literals(const struct resolved *rs, const char *sql, struct validation *v)
{
	const struct sql_analysis *a = rs->a;
	v->having = has_having(sql);
	for (size_t k = 0; k < a->n_columns; k++) {
		v->filters |= a->columns[k].clause == SQL_IN_WHERE || a->columns[k].clause == SQL_IN_HAVING;
	}
	for (size_t i = 0; i < a->n_string_literals; i++) {
		const struct sql_string_literal *l = &a->string_literals[i];
		if (l->compared_column < 0 || strchr(l->value, '%'))
			continue; /* a LIKE pattern is no stored value */
		if (l->identifier_column >= 0 && l->identifier_column != l->compared_column) {
			const struct sql_column_ref *id = &a->columns[l->identifier_column];
			int ref = column_ref_table(rs, id);
			if (ref >= 0 && rs->ref_table[ref] >= 0)
				continue; /* "x" names a column: SQLite reads it as one */
		}
		const struct sql_column_ref *c = &a->columns[l->compared_column];
		int ref = column_ref_table(rs, c);
		int t = ref >= 0 ? rs->ref_table[ref] : -1;
		int col = t >= 0 ? find_column(&rs->s->tables[t], c->name) : -1;
		if (col < 0)
			continue;
		v->filters = true;
		struct validation_literal *grown = realloc(v->literals, (v->n_literals + 1) * sizeof(*grown));
		if (!grown)
			return -T2S_ERR_NOMEM;
		v->literals = grown;
		char *value = strdup(l->value);
		if (!value)
			return -T2S_ERR_NOMEM;
		v->literals[v->n_literals++] = (struct validation_literal){t, col, value};
	}
	return 0;
}

/* The index of the statement's only top-level block, -1 when there are several (set operations, CTEs). */
static int top_block(const struct sql_analysis *a)
{
	int top = -1;
	size_t n_top = 0;
	for (size_t b = 0; b < a->n_blocks; b++)
		if (a->blocks[b].parent < 0 && n_top++ == 0)
			top = (int)b;
	return n_top == 1 ? top : -1;
}

/* Column ref c resolves to the single-column primary key of its table. */
static bool sole_key(const struct resolved *rs, int ref, const struct sql_column_ref *c)
{
	int t = ref >= 0 ? rs->ref_table[ref] : -1;
	if (t < 0 || rs->s->tables[t].n_primary_key != 1)
		return false;
	int col = find_column(&rs->s->tables[t], c->name);
	return col >= 0 && rs->s->tables[t].columns[col].primary_key;
}

/*
 * Table ref `ref` is on the "one" side of a one-to-many join of block
 * `scope`: joined (through AND) by its single-column key to a column that is
 * not the other table's single-column key, so the join repeats its rows.
 */
static bool repeated_by_join(const struct resolved *rs, int scope, int ref)
{
	const struct sql_analysis *a = rs->a;
	for (size_t j = 0; j < a->n_joins; j++) {
		const struct sql_join_pred *p = &a->joins[j];
		if (p->scope != scope || !p->conjunct)
			continue;
		const struct sql_column_ref *l = &a->columns[p->left_column], *r = &a->columns[p->right_column];
		int lt = column_ref_table(rs, l), rt = column_ref_table(rs, r);
		if ((lt == ref && sole_key(rs, lt, l) && !sole_key(rs, rt, r)) ||
		    (rt == ref && sole_key(rs, rt, r) && !sole_key(rs, lt, l)))
			return true;
	}
	return false;
}

/* Column c of block top comes from a table the join repeats. */
static bool repeated_column(const struct resolved *rs, int top, const struct sql_column_ref *c)
{
	return strcmp(c->name, "*") != 0 && repeated_by_join(rs, top, column_ref_table(rs, c));
}

/* Column c is a declared foreign key of its table: it names another table's thing. */
static bool reference_column(const struct resolved *rs, int top, const struct sql_column_ref *c)
{
	(void)top;
	int ref = column_ref_table(rs, c);
	int t = ref >= 0 ? rs->ref_table[ref] : -1;
	int col = t >= 0 && strcmp(c->name, "*") != 0 ? find_column(&rs->s->tables[t], c->name) : -1;
	return col >= 0 && rs->s->tables[t].columns[col].reference;
}

/* Block `top` shows some column outside aggregates, and every one it shows is such a column. */
static bool select_shows_only(const struct resolved *rs, int top,
			      bool (*such)(const struct resolved *, int, const struct sql_column_ref *))
{
	const struct sql_analysis *a = rs->a;
	size_t shown = 0;
	for (size_t i = 0; i < a->n_columns; i++) {
		const struct sql_column_ref *c = &a->columns[i];
		if (c->scope != top || c->clause != SQL_IN_SELECT || c->in_aggregate)
			continue;
		if (!such(rs, top, c))
			return false;
		shown++;
	}
	return shown > 0;
}

/* A column name that says its values are averages: "avg", "average" or "mean" as one of its words. */
static bool names_an_average(const char *name)
{
	static const char *const words[] = {"avg", "average", "mean"};
	for (const char *p = name; *p;) {
		size_t n = strcspn(p, "_ ");
		for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++)
			if (n == strlen(words[w]) && strncasecmp(p, words[w], n) == 0)
				return true;
		p += n;
		p += *p != '\0';
	}
	return false;
}

/* The statement-wide facts level 3 compares with the question (v->averages, v->limited_*). */
static void record_statement(const struct sql_analysis *a, struct validation *v)
{
	v->analysed = true;
	v->ordered = a->has_order_by;
	for (size_t b = 0; b < a->n_blocks; b++) {
		const struct sql_block *k = &a->blocks[b];
		v->averages |= k->has_avg;
		v->limited_asc |= k->has_limit && k->order_asc;
		v->limited_desc |= k->has_limit && k->order_desc;
		v->sorted_asc |= k->parent < 0 && k->order_asc;
		v->sorted_desc |= k->parent < 0 && k->order_desc;
	}
	for (size_t i = 0; i < a->n_columns; i++)
		v->averages |= names_an_average(a->columns[i].name);
}

/* The shape of the top-level block, for level 3 (v->top_*). */
static void record_top_block(const struct resolved *rs, struct validation *v)
{
	const struct sql_analysis *a = rs->a;
	int top = top_block(a);
	record_statement(a, v);
	if (top < 0 || a->blocks[top].set_op != SQL_SET_NONE)
		return;
	const struct sql_block *b = &a->blocks[top];
	bool plain_shown = false;
	for (size_t i = 0; i < a->n_columns; i++)
		plain_shown |= a->columns[i].scope == top && a->columns[i].clause == SQL_IN_SELECT &&
			       !a->columns[i].in_aggregate;
	v->top_unnamed_groups = b->has_group_by && b->has_aggregate_in_select && !plain_shown;
	v->top_known = true;
	v->top_joined = b->n_from_items >= 2;
	v->top_distinct = b->is_distinct;
	v->top_grouped = b->has_group_by;
	v->top_multiplied = v->top_joined && select_shows_only(rs, top, repeated_column);
	v->top_references = !v->top_joined && select_shows_only(rs, top, reference_column);
}

/*
 * sum(), avg() or total() of a column of a table the join repeats (the "one"
 * side of a one-to-many join): each value counts once per matching row of
 * the other table (blocking).
 */
static int sums_not_repeated(const struct resolved *rs, struct validation *v)
{
	const struct sql_analysis *a = rs->a;
	for (size_t i = 0; i < a->n_columns; i++) {
		const struct sql_column_ref *c = &a->columns[i];
		int ref = c->in_sum && c->scope >= 0 && strcmp(c->name, "*") != 0 ? column_ref_table(rs, c) : -1;
		if (ref >= 0 && rs->ref_table[ref] >= 0 && repeated_by_join(rs, c->scope, ref))
			return validation_add(v, 2, "aggregate_not_repeated", false, true,
					      "sum/avg of %s.%s counts each %s row once per matching row of the table "
					      "joined to its key: aggregate over %s alone (filter it with IN or EXISTS)",
					      rs->s->tables[rs->ref_table[ref]].api_name, c->name,
					      rs->s->tables[rs->ref_table[ref]].api_name,
					      rs->s->tables[rs->ref_table[ref]].api_name);
	}
	return validation_add(v, 2, "aggregate_not_repeated", true, true, "no sum or average over repeated rows");
}

/*
 * sum(), avg() or total() of a text column none of whose sampled values is
 * a number (names, codes, '3:45'): SQLite adds up their leading digits, or
 * 0 (blocking).
 */
static int sums_numbers(const struct resolved *rs, struct validation *v)
{
	const struct sql_analysis *a = rs->a;
	for (size_t i = 0; i < a->n_columns; i++) {
		const struct sql_column_ref *c = &a->columns[i];
		int ref = c->summed ? column_ref_table(rs, c) : -1;
		int t = ref >= 0 ? rs->ref_table[ref] : -1;
		int k = t >= 0 ? find_column(&rs->s->tables[t], c->name) : -1;
		if (k < 0)
			continue;
		const struct schema_column *col = &rs->s->tables[t].columns[k];
		/* no sample a number (a column without samples cannot tell) */
		if (col->type_class == SCHEMA_TYPE_TEXT && col->n_samples > 0 && schema_column_numeric_samples(col) == 0)
			return validation_add(v, 2, "aggregate_of_numbers", false, true,
					      "sum/avg of %s.%s adds up text that is not a number (such as '%s'; SQLite reads "
					      "its leading digits, or 0): "
					      "count them (count(DISTINCT ...)) or sum a numeric column",
					      rs->s->tables[t].api_name, col->name, col->samples[0]);
	}
	return validation_add(v, 2, "aggregate_of_numbers", true, true, "sums and averages are of numbers");
}

/* A block that returns one row: an aggregate select list without GROUP BY. */
static bool one_row_block(const struct sql_block *b)
{
	return b->has_aggregate_in_select && !b->has_group_by;
}

/*
 * INTERSECT or EXCEPT whose operands all return one aggregate row: two
 * numbers compared, not the things counted (blocking).
 */
static int set_operands_not_aggregates(const struct sql_analysis *a, struct validation *v)
{
	for (size_t b = 0; b < a->n_blocks; b++) {
		enum sql_set_op op = a->blocks[b].set_op;
		if (op != SQL_SET_INTERSECT && op != SQL_SET_EXCEPT)
			continue;
		size_t operands = 0, aggregates = 0;
		for (size_t o = 0; o < a->n_blocks; o++)
			if (a->blocks[o].parent == a->blocks[b].parent && a->blocks[o].set_op == op) {
				operands++;
				aggregates += one_row_block(&a->blocks[o]);
			}
		if (operands >= 2 && aggregates == operands)
			return validation_add(v, 2, "set_operands_not_aggregates", false, true,
					      "%s of one-row aggregates compares the numbers, not the things counted: "
					      "%s the things (their keys) in a subquery, then aggregate over it",
					      op == SQL_SET_INTERSECT ? "INTERSECT" : "EXCEPT",
					      op == SQL_SET_INTERSECT ? "intersect" : "subtract");
	}
	return validation_add(v, 2, "set_operands_not_aggregates", true, true,
			      "no set operation between one-row aggregates");
}

/*
 * ORDER BY or LIMIT on a statement that can return one row only (an
 * aggregate select list without GROUP BY): the order orders nothing, and
 * models write it when they meant one row per group (blocking).
 */
static int order_on_single_row(const struct sql_analysis *a, struct validation *v)
{
	int top = top_block(a);
	bool single = top >= 0 && a->blocks[top].has_aggregate_in_select && !a->blocks[top].has_group_by &&
		      a->blocks[top].set_op == SQL_SET_NONE;
	if (single && (a->has_order_by || a->has_limit))
		return validation_add(v, 2, "order_limit_meaningful", false, true,
				      "ORDER BY or LIMIT on an aggregate without GROUP BY, which returns one row: "
				      "group the rows (GROUP BY) if one result per group is meant, else drop them");
	return validation_add(v, 2, "order_limit_meaningful", true, true,
			      "no ORDER BY or LIMIT on a one-row aggregate");
}

/* rs for analysis a on schema s: each table reference's schema table.  0 or -T2S_ERR_NOMEM. */
static int resolve(struct resolved *rs, const struct sql_analysis *a, const struct schema *s)
{
	*rs = (struct resolved){.a = a, .s = s, .ref_table = malloc((a->n_tables ? a->n_tables : 1) * sizeof(int))};
	if (!rs->ref_table)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < a->n_tables; i++)
		rs->ref_table[i] = a->tables[i].is_cte || a->tables[i].is_derived || !a->tables[i].name
					   ? -1
					   : find_table(s, &a->tables[i]);
	return 0;
}

int semantics_literals(const struct schema *s, const char *sql, struct validation_literal **ret, size_t *ret_n)
{
	struct sql_analysis a;
	enum sql_dialect d = sql_engine_of(s->engine)->dialect;
	int rc = sql_analyze(sql, d, &a, NULL);
	if (rc < 0)
		return rc == -T2S_ERR_NOMEM ? rc : -T2S_ERR_SQL_INVALID;
	struct resolved rs;
	struct validation v = {0};
	rc = resolve(&rs, &a, s);
	if (rc == 0)
		rc = collect_literals(&rs, sql, &v);
	if (rc == 0) {
		*ret = v.literals;
		*ret_n = v.n_literals;
	} else {
		for (size_t i = 0; i < v.n_literals; i++)
			free(v.literals[i].value);
		free(v.literals);
	}
	free(rs.ref_table);
	sql_analysis_release(&a);
	return rc;
}

int semantics_check(const struct validate_context *cx, const char *sql, struct validation *v, struct t2s_error *err)
{
	struct sql_analysis a;
	struct t2s_error e = {0};
	enum sql_dialect d = sql_engine_of(cx->schema->engine)->dialect;
	int rc = sql_analyze(sql, d, &a, &e);
	if (rc == -T2S_ERR_NOMEM)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory analysing SQL");
	if (rc < 0)
		return validation_add(v, 2, "analysable", false, false,
				      "level-2 checks skipped: the analyser cannot read this statement (%s)", e.message);
	struct resolved rs;
	if (resolve(&rs, &a, cx->schema) < 0) {
		sql_analysis_release(&a);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory analysing SQL");
	}
	for (size_t b = 0; b < a.n_blocks; b++)
		v->set_operation |= a.blocks[b].set_op != SQL_SET_NONE;
	for (size_t i = 0; i < a.n_tables && rc == 0; i++)
		if (rs.ref_table[i] >= 0)
			rc = add_used(v, rs.ref_table[i]);
	if (rc == 0)
		rc = aggregates_legal(&a, v);
	if (rc == 0)
		rc = tables_joined(&rs, v);
	if (rc == 0)
		rc = joins_follow_graph(cx, &rs, v);
	if (rc == 0)
		rc = group_by_consistent(&rs, v);
	if (rc == 0)
		rc = order_on_single_row(&a, v);
	if (rc == 0)
		rc = sums_not_repeated(&rs, v);
	if (rc == 0)
		rc = set_operands_not_aggregates(&a, v);
	if (rc == 0)
		rc = sums_numbers(&rs, v);
	record_top_block(&rs, v);
	if (rc == 0)
		rc = tables_linked(cx, v);
	if (rc == 0)
		rc = collect_literals(&rs, sql, v);
	free(rs.ref_table);
	sql_analysis_release(&a);
	if (rc < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory analysing SQL");
	return 0;
}
