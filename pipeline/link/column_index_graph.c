/*
 * column_index_graph.c - the schema graph of a column index: declared foreign
 * keys and inferred joins (name to key, same name, value inclusion), each
 * costed, and the Steiner graph over them (see "Schema graph" in column_index.h).
 */
#include "pipeline/link/column_index_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SAME_NAME_MAX_TABLES 200 /* a column name shared by more tables joins nothing useful */

/* Can the two columns join?  Numbers join numbers, text joins text; other type classes join anything. */
static bool types_compatible(const struct schema_column *a, const struct schema_column *b)
{
	bool a_text = a->type_class == SCHEMA_TYPE_TEXT, b_text = b->type_class == SCHEMA_TYPE_TEXT;
	if ((!schema_column_is_number(a) && !a_text) || (!schema_column_is_number(b) && !b_text))
		return true;
	return a_text == b_text;
}

static int find_column(const struct schema_table *t, const char *name)
{
	for (size_t i = 0; i < t->n_columns; i++)
		if (strcmp(t->columns[i].name, name) == 0)
			return (int)i;
	for (size_t i = 0; i < t->n_columns; i++)
		if (strcasecmp(t->columns[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Share of the smaller sample set found in the other (0.5 when either has none). */
static double sample_overlap(const struct schema_column *a, const struct schema_column *b)
{
	if (!a->n_samples || !b->n_samples)
		return 0.5;
	size_t hit = 0;
	for (size_t i = 0; i < a->n_samples; i++)
		for (size_t j = 0; j < b->n_samples; j++)
			if (strcmp(a->samples[i], b->samples[j]) == 0) {
				hit++;
				break;
			}
	size_t m = a->n_samples < b->n_samples ? a->n_samples : b->n_samples;
	double o = (double)hit / (double)m;
	return o > 1 ? 1 : o;
}

struct edge_list {
	struct link_edge *v;
	size_t n, cap;
};

static bool has_edge_between(const struct edge_list *l, int a, int b)
{
	for (size_t i = 0; i < l->n; i++)
		if ((l->v[i].left_table == a && l->v[i].right_table == b) ||
		    (l->v[i].left_table == b && l->v[i].right_table == a))
			return true;
	return false;
}

static int add_edge(struct column_index *idx, struct edge_list *l, int lt, int lc, int rt, int rc,
		    enum link_edge_kind kind, double connect, const struct link_weights *w)
{
	if (lt == rt)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct link_edge *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -T2S_ERR_NOMEM;
		l->v = v;
		l->cap = cap;
	}
	const struct schema *s = idx->schema;
	unsigned dim = idx->lexical.dim;
	struct link_edge *e = &l->v[l->n++];
	e->left_table = lt, e->left_column = lc, e->right_table = rt, e->right_column = rc;
	e->kind = kind;
	e->connect = connect;
	double cos = embed_cosine(idx->table_vectors + (size_t)lt * dim, idx->table_vectors + (size_t)rt * dim, dim);
	e->semantic = 1.0 - (cos < 0 ? 0 : cos > 1 ? 1 : cos);
	e->statistical = 1.0 - sample_overlap(&s->tables[lt].columns[lc], &s->tables[rt].columns[rc]);
	e->cost = w->connect * e->connect + w->semantic * e->semantic + w->statistical * e->statistical + 1e-6;
	return 0;
}

static int declared_edges(struct column_index *idx, struct edge_list *l, const struct link_weights *w)
{
	const struct schema *s = idx->schema;
	for (size_t t = 0; t < s->n_tables; t++) {
		const struct schema_table *tab = &s->tables[t];
		for (size_t f = 0; f < tab->n_foreign_keys; f++) {
			const struct schema_foreign_key *fk = &tab->foreign_keys[f];
			int rt = fk->ref_index; /* resolved by schema_finish */
			if (rt < 0)
				continue;
			for (size_t k = 0; k < fk->n_columns; k++) {
				int lc = find_column(tab, fk->columns[k]);
				int rc = fk->ref_columns[k] ? find_column(&s->tables[rt], fk->ref_columns[k]) : -1;
				if (lc < 0 || rc < 0)
					continue;
				int rc2 = add_edge(idx, l, (int)t, lc, rt, rc, LINK_EDGE_FOREIGN_KEY, 0.0, w);
				if (rc2 < 0)
					return rc2;
			}
		}
	}
	return 0;
}

/* The single-column primary key of t, or -1. */
static int single_key(const struct schema_table *t)
{
	if (t->n_primary_key != 1)
		return -1;
	return find_column(t, t->primary_key[0]);
}

static void lower_copy(char *dst, size_t size, const char *src)
{
	size_t i = 0;
	for (; src[i] && i + 1 < size; i++)
		dst[i] = (char)tolower((unsigned char)src[i]);
	dst[i] = '\0';
}

/* "singer_id" / "SingerID" -> "singer"; "" when the name does not end in id. */
static void id_stem(const char *name, char *out, size_t size)
{
	lower_copy(out, size, name);
	size_t n = strlen(out);
	if (n > 3 && strcmp(out + n - 3, "_id") == 0)
		out[n - 3] = '\0';
	else if (n > 2 && strcmp(out + n - 2, "id") == 0)
		out[n - 2] = '\0';
	else
		out[0] = '\0';
}

/*
 * Table other than self whose lower-cased bare name is stem, stem+"s" or
 * stem+"es": the first one in self's own schema, else the only one in the
 * other schemas (two there: none, the name does not say which).
 */
static int table_for_stem(const struct schema *s, const char *stem, int self)
{
	char name[256];
	int other = -1, n_other = 0;
	for (size_t i = 0; i < s->n_tables && *stem; i++) {
		if ((int)i == self)
			continue;
		lower_copy(name, sizeof(name), s->tables[i].name);
		size_t n = strlen(stem);
		if (strncmp(name, stem, n) != 0 ||
		    !(name[n] == '\0' || strcmp(name + n, "s") == 0 || strcmp(name + n, "es") == 0))
			continue;
		if (strcmp(s->tables[i].schema, s->tables[self].schema) == 0)
			return (int)i;
		if (n_other++ == 0)
			other = (int)i;
	}
	return n_other == 1 ? other : -1;
}

static int name_to_key_edges(struct column_index *idx, struct edge_list *l, const struct link_weights *w)
{
	const struct schema *s = idx->schema;
	char stem[256];
	for (size_t t = 0; t < s->n_tables; t++)
		for (size_t c = 0; c < s->tables[t].n_columns; c++) {
			id_stem(s->tables[t].columns[c].name, stem, sizeof(stem));
			size_t n = strlen(stem);
			if (n && stem[n - 1] == '_')
				stem[n - 1] = '\0';
			int rt = table_for_stem(s, stem, (int)t);
			if (rt < 0 || has_edge_between(l, (int)t, rt))
				continue;
			const struct schema_table *ref = &s->tables[rt];
			int rc = single_key(ref);
			if (rc < 0)
				rc = find_column(ref, "id");
			if (rc < 0)
				rc = find_column(ref, s->tables[t].columns[c].name);
			if (rc < 0 || !types_compatible(&s->tables[t].columns[c], &ref->columns[rc]))
				continue;
			int r = add_edge(idx, l, (int)t, (int)c, rt, rc, LINK_EDGE_NAME_TO_KEY, 0.3, w);
			if (r < 0)
				return r;
		}
	return 0;
}

static bool key_like(const char *name)
{
	char low[256];
	lower_copy(low, sizeof(low), name);
	size_t n = strlen(low);
	return (n >= 2 && strcmp(low + n - 2, "id") == 0) || (n >= 4 && strcmp(low + n - 4, "code") == 0) ||
	       (n >= 3 && strcmp(low + n - 3, "key") == 0) || (n >= 2 && strcmp(low + n - 2, "no") == 0);
}

static int cmp_name_ref(const void *a, const void *b, void *ctx)
{
	const struct schema *s = ctx;
	const struct link_column_ref *x = a, *y = b;
	int r = strcasecmp(s->tables[x->table].columns[x->column].name, s->tables[y->table].columns[y->column].name);
	if (r)
		return r;
	return x->table != y->table ? (x->table < y->table ? -1 : 1) : (x->column < y->column ? -1 : 1);
}

/* Same column name (case-insensitive) in two tables, with compatible types, one side a key. */
static int same_name_edges(struct column_index *idx, struct edge_list *l, const struct link_weights *w)
{
	const struct schema *s = idx->schema;
	size_t n = idx->n_columns;
	struct link_column_ref *sorted = malloc((n ? n : 1) * sizeof(*sorted));
	if (!sorted)
		return -T2S_ERR_NOMEM;
	memcpy(sorted, idx->columns, n * sizeof(*sorted));
	qsort_r(sorted, n, sizeof(*sorted), cmp_name_ref, (void *)s);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0;) {
		size_t j = i + 1;
		while (j < n && strcasecmp(s->tables[sorted[i].table].columns[sorted[i].column].name,
				  s->tables[sorted[j].table].columns[sorted[j].column].name) == 0)
			j++;
		/* "id" is every table's own key: sharing that name says nothing about a join. */
		bool generic = strcasecmp(s->tables[sorted[i].table].columns[sorted[i].column].name, "id") == 0;
		if (!generic && j - i >= 2 && j - i <= SAME_NAME_MAX_TABLES) {
			for (size_t a = i; a < j && rc == 0; a++)
				for (size_t b = a + 1; b < j && rc == 0; b++) {
					const struct link_column_ref *x = &sorted[a], *y = &sorted[b];
					const struct schema_column *cx = &s->tables[x->table].columns[x->column];
					const struct schema_column *cy = &s->tables[y->table].columns[y->column];
					if (x->table == y->table || !types_compatible(cx, cy))
						continue;
					bool kx = single_key(&s->tables[x->table]) == x->column;
					bool ky = single_key(&s->tables[y->table]) == y->column;
					if (!kx && !ky && !key_like(cx->name))
						continue;
					if (has_edge_between(l, x->table, y->table))
						continue;
					double connect = (kx || ky) ? 0.4 : 0.7;
					/* The key side goes on the right, like a foreign key's target. */
					rc = kx && !ky ? add_edge(idx, l, y->table, y->column, x->table, x->column,
								  LINK_EDGE_SAME_NAME, connect, w)
						       : add_edge(idx, l, x->table, x->column, y->table, y->column,
								  LINK_EDGE_SAME_NAME, connect, w);
				}
		}
		i = j;
	}
	free(sorted);
	return rc;
}

#define INCLUSION_MAX_TABLES 2000     /* the adjacency bitmap stays small */
#define INCLUSION_MAX_CHECKS 2000000L /* column pairs looked at, whatever the schema size */

/* Enough samples, and not only small integers (1, 2, 3 are in every key). */
static bool distinctive(const struct schema_column *c)
{
	if (c->n_samples < 3)
		return false;
	for (size_t i = 0; i < c->n_samples; i++) {
		char *end;
		long v = strtol(c->samples[i], &end, 10);
		if (*end || v >= 100 || v <= -100)
			return true;
	}
	return false;
}

/* Every sample of a is among b's samples. */
static bool samples_included(const struct schema_column *a, const struct schema_column *b)
{
	for (size_t i = 0; i < a->n_samples; i++) {
		bool found = false;
		for (size_t j = 0; j < b->n_samples && !found; j++)
			found = strcmp(a->samples[i], b->samples[j]) == 0;
		if (!found)
			return false;
	}
	return true;
}

static int value_inclusion_edges(struct column_index *idx, struct edge_list *l, const struct link_weights *w)
{
	const struct schema *s = idx->schema;
	size_t n = s->n_tables;
	if (n < 2 || n > INCLUSION_MAX_TABLES)
		return 0;
	unsigned char *adj = calloc(n * n / 8 + 1, 1);
	if (!adj)
		return -T2S_ERR_NOMEM;
#define ADJ(a, b) (adj[((size_t)(a) * n + (size_t)(b)) / 8] & (1u << (((size_t)(a) * n + (size_t)(b)) % 8)))
#define SET_ADJ(a, b) (adj[((size_t)(a) * n + (size_t)(b)) / 8] |= (unsigned char)(1u << (((size_t)(a) * n + (size_t)(b)) % 8)))
	for (size_t e = 0; e < l->n; e++) {
		SET_ADJ(l->v[e].left_table, l->v[e].right_table);
		SET_ADJ(l->v[e].right_table, l->v[e].left_table);
	}
	long checks = 0;
	int rc = 0;
	for (size_t rt = 0; rc == 0 && rt < n && checks < INCLUSION_MAX_CHECKS; rt++) {
		int rk = single_key(&s->tables[rt]);
		if (rk < 0 || !distinctive(&s->tables[rt].columns[rk]))
			continue;
		const struct schema_column *key = &s->tables[rt].columns[rk];
		for (size_t t = 0; rc == 0 && t < n && checks < INCLUSION_MAX_CHECKS; t++) {
			if (t == rt || ADJ(t, rt))
				continue;
			for (size_t c = 0; c < s->tables[t].n_columns; c++) {
				const struct schema_column *col = &s->tables[t].columns[c];
				checks++;
				if (col->primary_key || !distinctive(col) || !types_compatible(col, key) ||
				    !samples_included(col, key))
					continue;
				rc = add_edge(idx, l, (int)t, (int)c, (int)rt, rk, LINK_EDGE_VALUE_INCLUSION, 0.6, w);
				SET_ADJ(t, rt);
				SET_ADJ(rt, t);
				break;
			}
		}
	}
#undef ADJ
#undef SET_ADJ
	free(adj);
	return rc;
}

int column_index_build_edges(struct column_index *idx, const struct link_weights *w)
{
	struct edge_list l = {0};
	int rc = declared_edges(idx, &l, w);
	if (rc == 0)
		rc = name_to_key_edges(idx, &l, w);
	if (rc == 0)
		rc = same_name_edges(idx, &l, w);
	if (rc == 0)
		rc = value_inclusion_edges(idx, &l, w);
	if (rc == 0)
		rc = steiner_graph_init(&idx->graph, (int)idx->schema->n_tables);
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		rc = steiner_graph_add_edge(&idx->graph, l.v[i].left_table, l.v[i].right_table, l.v[i].cost, (int)i);
	idx->edges = l.v;
	idx->n_edges = l.n;
	return rc;
}
