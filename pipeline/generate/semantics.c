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

/* Join predicates that are not edges of the schema graph (a flag). */
static int joins_follow_graph(const struct validate_context *cx, const struct resolved *rs, struct validation *v)
{
	struct strbuf off;
	strbuf_init(&off, 4096);
	size_t n_checked = 0;
	for (size_t i = 0; i < rs->a->n_joins; i++) {
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
	int rc = off.len ? validation_add(v, 2, "joins_follow_schema_graph", false, false,
					  "joins that are no known relationship of the schema: %s", off.buf)
			 : validation_add(v, 2, "joins_follow_schema_graph", true, false,
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

/* Is column c of table ref `ref` grouped, or determined by the grouped primary key of its table? */
static bool grouped(const struct resolved *rs, int block, int ref, const char *name)
{
	const struct sql_analysis *a = rs->a;
	const struct schema_table *t = ref >= 0 && rs->ref_table[ref] >= 0 ? &rs->s->tables[rs->ref_table[ref]] : NULL;
	size_t pk_grouped = 0;
	for (size_t i = 0; t && i < t->n_primary_key; i++) {
		for (size_t k = 0; k < a->n_columns; k++) {
			const struct sql_column_ref *g = &a->columns[k];
			if (g->scope == block && g->clause == SQL_IN_GROUP_BY && column_ref_table(rs, g) == ref &&
			    strcasecmp(g->name, t->primary_key[i]) == 0) {
				pk_grouped++;
				break;
			}
		}
	}
	if (t && t->n_primary_key && pk_grouped == t->n_primary_key)
		return true;
	for (size_t k = 0; k < a->n_columns; k++) {
		const struct sql_column_ref *g = &a->columns[k];
		if (g->scope == block && g->clause == SQL_IN_GROUP_BY && strcasecmp(g->name, name) == 0 &&
		    (g->table_ref < 0 || ref < 0 || column_ref_table(rs, g) == ref))
			return true;
	}
	return false;
}

static int group_by_consistent(const struct validate_context *cx, const struct resolved *rs, struct validation *v)
{
	const struct sql_analysis *a = rs->a;
	const char *bad = NULL;
	bool no_group_by = false;
	for (size_t b = 0; b < a->n_blocks && !bad; b++) {
		const struct sql_block *blk = &a->blocks[b];
		if (!blk->has_group_by && !blk->has_aggregate_in_select)
			continue;
		for (size_t i = 0; i < blk->n_ungrouped_select_columns && !bad; i++) {
			const struct sql_column_ref *c = &a->columns[blk->ungrouped_select_columns[i]];
			if (strcmp(c->name, "*") == 0 || c->names_output || c->maybe_string)
				continue;
			if (!blk->has_group_by) {
				bad = c->name;
				no_group_by = true;
			} else if (!grouped(rs, (int)b, column_ref_table(rs, c), c->name)) {
				bad = c->name;
			}
		}
	}
	bool blocking = cx->schema->engine == DB_ENGINE_POSTGRES;
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

int semantics_check(const struct validate_context *cx, const char *sql, struct validation *v, struct t2s_error *err)
{
	struct sql_analysis a;
	struct t2s_error e = {0};
	enum sql_dialect d = cx->schema->engine == DB_ENGINE_POSTGRES ? SQL_DIALECT_POSTGRES : SQL_DIALECT_SQLITE;
	int rc = sql_analyze(sql, d, &a, &e);
	if (rc == -T2S_ERR_NOMEM)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory analysing SQL");
	if (rc < 0)
		return validation_add(v, 2, "analysable", false, false,
				      "level-2 checks skipped: the analyser cannot read this statement (%s)", e.message);
	struct resolved rs = {.a = &a, .s = cx->schema, .ref_table = malloc((a.n_tables ? a.n_tables : 1) * sizeof(int))};
	if (!rs.ref_table) {
		sql_analysis_release(&a);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory analysing SQL");
	}
	for (size_t b = 0; b < a.n_blocks; b++)
		v->set_operation |= a.blocks[b].set_op != SQL_SET_NONE;
	for (size_t i = 0; i < a.n_tables && rc == 0; i++) {
		rs.ref_table[i] = a.tables[i].is_cte || a.tables[i].is_derived || !a.tables[i].name
					  ? -1
					  : find_table(cx->schema, &a.tables[i]);
		if (rs.ref_table[i] >= 0)
			rc = add_used(v, rs.ref_table[i]);
	}
	if (rc == 0)
		rc = aggregates_legal(&a, v);
	if (rc == 0)
		rc = tables_joined(&rs, v);
	if (rc == 0)
		rc = joins_follow_graph(cx, &rs, v);
	if (rc == 0)
		rc = group_by_consistent(cx, &rs, v);
	if (rc == 0)
		rc = tables_linked(cx, v);
	free(rs.ref_table);
	sql_analysis_release(&a);
	if (rc < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory analysing SQL");
	return 0;
}
