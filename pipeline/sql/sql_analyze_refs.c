/*
 * sql_analyze_refs.c - what the walk of sql_analyze records (see
 * sql_analyze.c, step 3): table refs, column refs and string literals, their
 * names recovered as the original text spells them, and the resolution of a
 * qualifier to the table ref it names in the enclosing blocks.  Also the
 * walk's small helpers: growing arrays under SQL_ANALYZE_MAX_ITEMS and
 * reading parse-tree nodes.
 */
#include "pipeline/sql/sql_analyze_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Longest identifier recovered from the original text; longer ones keep the parser's spelling. */
#define IDENT_BUF 256

/* ----------------------------------------------------- facts and names -- */

static int too_many(struct an *an)
{
	return t2s_error_set(an->err, T2S_ERR_SQL_REJECTED, "statement too complex to analyse (more than %d %s)",
			     SQL_ANALYZE_MAX_ITEMS, "items of one kind");
}

int sa_nomem(struct an *an)
{
	return t2s_error_set(an->err, T2S_ERR_NOMEM, "out of memory analysing the statement");
}

/* Make room for one more element of size `size` in *arr (count n, capacity *cap). */
int sa_grow(struct an *an, void **arr, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return 0;
	if (n >= SQL_ANALYZE_MAX_ITEMS)
		return too_many(an);
	size_t c = *cap ? *cap * 2 : 16;
	if (c > SQL_ANALYZE_MAX_ITEMS)
		c = SQL_ANALYZE_MAX_ITEMS;
	void *p = realloc(*arr, c * size);
	if (!p)
		return sa_nomem(an);
	*arr = p;
	*cap = c;
	return 0;
}

/* A copy of s, or NULL for NULL; *failed set when the copy could not be made. */
static char *dup_or_null(const char *s, bool *failed)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*failed = true;
	return d;
}

const char *sa_member_string(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* The body of a node wrapped as {"Type": body}, or NULL. */
const json_t *sa_node_body(const json_t *node, const char *type)
{
	return json_object_get(node, type);
}

/* The node's type key when node is {"Type": {...}}, else NULL. */
const char *sa_node_type(const json_t *node)
{
	if (!json_is_object(node) || json_object_size(node) != 1)
		return NULL;
	const char *key = json_object_iter_key(json_object_iter((json_t *)node));
	return key && key[0] >= 'A' && key[0] <= 'Z' ? key : NULL;
}

/* The sval of a {"String": {"sval": ...}} node, or NULL. */
const char *sa_string_node(const json_t *node)
{
	return sa_member_string(sa_node_body(node, "String"), "sval");
}

/* Byte offset in the original text of a node's "location", or SIZE_MAX. */
static size_t orig_location(struct an *an, const json_t *body)
{
	const json_t *loc = json_object_get(body, "location");
	if (!json_is_integer(loc) || json_integer_value(loc) < 0 || (size_t)json_integer_value(loc) >= an->nt->len)
		return SIZE_MAX;
	return sa_ntext_orig(an->nt, (size_t)json_integer_value(loc));
}

/*
 * Spellings of the dotted name at original offset pos (a.b.c, parts quoted
 * any SQLite way): parts[i] receives part i when it equals folded[i]
 * case-insensitively, else folded[i] stays.  Only in the SQLite dialect.
 * Returns the offset after the last part read.
 */
static size_t recover_names(struct an *an, size_t pos, const char **folded, char (*bufs)[IDENT_BUF], size_t n)
{
	const char *s = an->orig;
	size_t len = an->nt->map[an->nt->len];

	if (an->dialect != SQL_DIALECT_SQLITE || pos == SIZE_MAX)
		return SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		struct tok t = sa_next_tok(s, len, pos);
		if (i > 0) {
			if (!sa_tok_is(s, t, "."))
				return SIZE_MAX;
			t = sa_next_tok(s, len, t.end);
		}
		if (!folded[i] || !sa_tok_ident(s, t, bufs[i], IDENT_BUF) || strcasecmp(bufs[i], folded[i]) != 0)
			return SIZE_MAX;
		folded[i] = bufs[i];
		pos = t.end;
	}
	return pos;
}

/* The SQLite spelling of alias (folded) written after original offset pos ("[AS] alias"). */
static const char *recover_alias(struct an *an, size_t pos, const char *folded, char *buf)
{
	const char *s = an->orig;
	size_t len = an->nt->map[an->nt->len];

	if (pos == SIZE_MAX || !folded)
		return folded;
	struct tok t = sa_next_tok(s, len, pos);
	if (sa_tok_is(s, t, "as"))
		t = sa_next_tok(s, len, t.end);
	if (sa_tok_ident(s, t, buf, IDENT_BUF) && strcasecmp(buf, folded) == 0)
		return buf;
	return folded;
}

static bool cte_visible(struct an *an, const char *name)
{
	for (size_t i = 0; i < an->n_ctes; i++)
		if (strcasecmp(an->ctes[i], name) == 0)
			return true;
	return false;
}

/* Append a table ref; *ret_index its index. */
int sa_add_table(struct an *an, const char *schema, const char *name, const char *alias, int scope,
		 int derived_block, int *ret_index)
{
	struct sql_analysis *a = an->a;
	bool failed = false;
	int r = sa_grow(an, (void **)&a->tables, a->n_tables, &an->cap_tables, sizeof(*a->tables));
	if (r < 0)
		return r;
	struct sql_table_ref *t = &a->tables[a->n_tables];
	memset(t, 0, sizeof(*t));
	t->schema = dup_or_null(schema, &failed);
	t->name = dup_or_null(name, &failed);
	t->alias = dup_or_null(alias, &failed);
	t->scope = scope;
	t->is_derived = derived_block >= 0;
	t->derived_block = derived_block;
	t->is_cte = !t->is_derived && !schema && name && cte_visible(an, name);
	a->n_tables++;
	if (failed)
		return sa_nomem(an);
	*ret_index = (int)a->n_tables - 1;
	return 0;
}

/* A FROM RangeVar. */
int sa_add_range_var(struct an *an, const json_t *rv, struct wc wc)
{
	const char *parts[2] = {sa_member_string(rv, "schemaname"), sa_member_string(rv, "relname")};
	const char *alias = sa_member_string(json_object_get(rv, "alias"), "aliasname");
	char bufs[2][IDENT_BUF], alias_buf[IDENT_BUF];
	int index;

	if (!parts[1])
		return 0;
	size_t pos = orig_location(an, rv), end;
	if (parts[0])
		end = recover_names(an, pos, parts, bufs, 2);
	else
		end = recover_names(an, pos, parts + 1, bufs + 1, 1);
	if (an->dialect == SQL_DIALECT_SQLITE)
		alias = recover_alias(an, end, alias, alias_buf);
	return sa_add_table(an, parts[0], parts[1], alias, wc.scope, -1, &index);
}

bool sa_same_name(const char *x, const char *y)
{
	return x && y && strcasecmp(x, y) == 0;
}

/* Blocks searched outwards for a qualifier: the column's own and this many enclosing ones. */
#define RESOLVE_MAX_HOPS 64

/*
 * The table ref that qualifier names, in block scope or the nearest
 * enclosing block that has one, or -1.  One pass over the tables, so the
 * cost stays linear in their number however deep the nesting.
 */
static int resolve(struct an *an, const char *qualifier, int scope)
{
	const struct sql_analysis *a = an->a;
	int chain[RESOLVE_MAX_HOPS + 1], n_chain = 0, best = -1, best_hops = RESOLVE_MAX_HOPS + 1;

	if (!qualifier)
		return -1;
	for (int s = scope; s >= 0 && (size_t)s < a->n_blocks && n_chain <= RESOLVE_MAX_HOPS; s = a->blocks[s].parent)
		chain[n_chain++] = s;
	for (size_t i = 0; i < a->n_tables; i++) {
		const struct sql_table_ref *t = &a->tables[i];
		if (!sa_same_name(t->alias ? t->alias : t->name, qualifier))
			continue;
		for (int h = 0; h < n_chain && h < best_hops; h++)
			if (chain[h] == t->scope) {
				best = (int)i;
				best_hops = h;
				break;
			}
	}
	return best;
}

/* True when name equals an output name (AS alias) of the select list targets. */
static bool is_output_name(const json_t *targets, const char *name)
{
	size_t i;
	const json_t *t;

	json_array_foreach(targets, i, t) {
		if (sa_same_name(sa_member_string(sa_node_body(t, "ResTarget"), "name"), name))
			return true;
	}
	return false;
}

/* Append a string literal. */
int sa_add_literal(struct an *an, const char *value, int scope, int compared, int identifier)
{
	struct sql_analysis *a = an->a;
	int r = sa_grow(an, (void **)&a->string_literals, a->n_string_literals, &an->cap_literals,
		     sizeof(*a->string_literals));
	if (r < 0)
		return r;
	struct sql_string_literal *l = &a->string_literals[a->n_string_literals];
	l->value = strdup(value);
	if (!l->value)
		return sa_nomem(an);
	l->scope = scope;
	l->compared_column = compared;
	l->identifier_column = identifier;
	a->n_string_literals++;
	return 0;
}

/* The value of an A_Const body holding a string, or NULL. */
const char *sa_const_string(const json_t *aconst)
{
	const json_t *sval = json_object_get(aconst, "sval");
	if (!json_is_object(sval))
		return NULL;
	const char *v = sa_member_string(sval, "sval");
	return v ? v : ""; /* the empty string is printed as {} */
}

/* Append the ColumnRef body cr; *ret_index its index. */
int sa_add_column(struct an *an, const json_t *cr, struct wc wc, int *ret_index)
{
	struct sql_analysis *a = an->a;
	const json_t *fields = json_object_get(cr, "fields");
	size_t n = json_array_size(fields);
	const char *parts[3] = {NULL, NULL, NULL};
	char bufs[3][IDENT_BUF];
	bool star = false, failed = false;
	int r;

	if (n == 0)
		return 0;
	/* keep the last (at most) three parts: [schema.]table.column */
	size_t first = n > 3 ? n - 3 : 0, k = n - first;
	for (size_t i = first; i < n; i++) {
		const json_t *f = json_array_get(fields, i);
		if (i == n - 1 && sa_node_body(f, "A_Star"))
			star = true;
		else
			parts[i - first] = sa_string_node(f);
	}
	if (!star && !parts[k - 1])
		return 0;
	size_t pos = orig_location(an, cr);
	recover_names(an, pos, parts, bufs, star ? k - 1 : k);

	r = sa_grow(an, (void **)&a->columns, a->n_columns, &an->cap_columns, sizeof(*a->columns));
	if (r < 0)
		return r;
	if (an->cap_col_target < an->cap_columns) {
		int *ct = realloc(an->col_target, an->cap_columns * sizeof(*ct));
		if (!ct)
			return sa_nomem(an);
		an->col_target = ct;
		an->cap_col_target = an->cap_columns;
	}
	struct sql_column_ref *c = &a->columns[a->n_columns];
	memset(c, 0, sizeof(*c));
	c->name = dup_or_null(star ? "*" : parts[k - 1], &failed);
	c->qualifier = k >= 2 ? dup_or_null(parts[k - 2], &failed) : NULL;
	c->scope = wc.scope;
	c->clause = wc.clause;
	c->in_aggregate = wc.in_agg;
	c->in_sum = wc.in_sum;
	c->summed = wc.summed;
	c->table_ref = resolve(an, c->qualifier, wc.scope);
	c->names_output = !star && k == 1 && wc.targets &&
			  (wc.clause == SQL_IN_GROUP_BY || wc.clause == SQL_IN_HAVING || wc.clause == SQL_IN_ORDER_BY) &&
			  is_output_name(wc.targets, c->name);
	c->maybe_string = an->dialect == SQL_DIALECT_SQLITE && !star && k == 1 && pos != SIZE_MAX &&
			  an->orig[pos] == '"' && !c->names_output;
	an->col_target[a->n_columns] = wc.clause == SQL_IN_SELECT ? wc.target : -1;
	a->n_columns++;
	if (failed)
		return sa_nomem(an);
	*ret_index = (int)a->n_columns - 1;
	if (c->maybe_string)
		return sa_add_literal(an, c->name, wc.scope, -1, *ret_index);
	return 0;
}

/* Set compared_column of the literal standing for double-quoted column ref col, if any. */
void sa_compare_quoted(struct an *an, int col, int other)
{
	struct sql_analysis *a = an->a;
	for (size_t i = a->n_string_literals; i-- > 0 && a->n_string_literals - i <= 2;)
		if (a->string_literals[i].identifier_column == col)
			a->string_literals[i].compared_column = other;
}
