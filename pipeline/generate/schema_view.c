/*
 * schema_view.c - the schema the generator is shown (see schema_view.h).
 */
#include "pipeline/generate/schema_view.h"

#include "common/strbuf.h"
#include "pipeline/link/steiner.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static int column_index_of(const struct schema_table *t, const char *name)
{
	for (size_t c = 0; c < t->n_columns; c++)
		if (strcmp(t->columns[c].name, name) == 0)
			return (int)c;
	return -1;
}

/* The columns of table t's foreign keys into table r, as key columns of the view. */
static int add_foreign_key_columns(struct schema_view *v, int t, int r)
{
	const struct schema_table *st = &v->schema->tables[t];
	for (size_t f = 0; f < st->n_foreign_keys; f++) {
		if (st->foreign_keys[f].ref_index != r)
			continue;
		const struct schema_foreign_key *fk = &st->foreign_keys[f];
		for (size_t k = 0; k < fk->n_columns; k++) {
			int c = column_index_of(st, fk->columns[k]);
			int rc = c >= 0 ? schema_view_add_column(v, t, c, 0, true, false) : 0;
			/* and the column it references */
			int rcol = fk->ref_columns && fk->ref_columns[k] ? column_index_of(&v->schema->tables[r], fk->ref_columns[k])
									 : -1;
			if (rc == 0 && rcol >= 0)
				rc = schema_view_add_column(v, r, rcol, 0, true, false);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

int schema_view_add_table(struct schema_view *v, int t)
{
	if (v->in_view[t])
		return 0;
	if (v->n_tables == v->cap_tables) {
		size_t cap = v->cap_tables ? v->cap_tables * 2 : 8;
		struct prompt_table *p = realloc(v->tables, cap * sizeof(*p));
		if (!p)
			return -T2S_ERR_NOMEM;
		v->tables = p;
		v->cap_tables = cap;
	}
	v->tables[v->n_tables++] = (struct prompt_table){.table = t};
	v->in_view[t] = true;
	/* Its primary key, and the foreign keys between it and the tables shown (a key into a table
	   the model is not shown cannot be joined on). */
	const struct schema_table *st = &v->schema->tables[t];
	int rc = 0;
	for (size_t c = 0; c < st->n_columns && rc == 0; c++)
		if (st->columns[c].primary_key)
			rc = schema_view_add_column(v, t, (int)c, 0, true, false);
	for (size_t i = 0; i < v->n_tables && rc == 0; i++) {
		int u = v->tables[i].table;
		rc = add_foreign_key_columns(v, t, u);
		if (rc == 0 && u != t)
			rc = add_foreign_key_columns(v, u, t);
	}
	return rc;
}

int schema_view_add_column(struct schema_view *v, int t, int c, double score, bool key, bool keep)
{
	int rc = schema_view_add_table(v, t);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < v->n_columns; i++) {
		struct prompt_column *pc = &v->columns[i];
		if (pc->table == t && pc->column == c) {
			pc->key |= key;
			pc->keep |= keep;
			if (score > pc->score)
				pc->score = score;
			return 0;
		}
	}
	if (v->n_columns == v->cap_columns) {
		size_t cap = v->cap_columns ? v->cap_columns * 2 : 32;
		struct prompt_column *p = realloc(v->columns, cap * sizeof(*p));
		if (!p)
			return -T2S_ERR_NOMEM;
		v->columns = p;
		v->cap_columns = cap;
	}
	v->columns[v->n_columns++] = (struct prompt_column){.table = t, .column = c, .score = score, .key = key,
							   .keep = keep};
	return 0;
}

/* Replace the joins with edges[0..n) of the index (tags of the graph). */
static int set_joins(struct schema_view *v, const size_t *edges, size_t n)
{
	struct prompt_join *j = malloc((n ? n : 1) * sizeof(*j));
	if (!j)
		return -T2S_ERR_NOMEM;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct link_edge *e = &v->index->edges[edges[i]];
		j[i] = (struct prompt_join){e->left_table, e->left_column, e->right_table, e->right_column};
		rc = schema_view_add_column(v, e->left_table, e->left_column, 0, true, false);
		if (rc == 0)
			rc = schema_view_add_column(v, e->right_table, e->right_column, 0, true, false);
	}
	if (rc < 0) {
		free(j);
		return rc;
	}
	free(v->joins);
	v->joins = j;
	v->n_joins = n;
	return 0;
}

int schema_view_init(struct schema_view *v, const struct link_result *link, const struct evidence_result *ev)
{
	memset(v, 0, sizeof(*v));
	v->index = link->index;
	v->schema = link->index->schema;
	v->in_view = calloc(v->schema->n_tables ? v->schema->n_tables : 1, sizeof(bool));
	if (!v->in_view)
		return -T2S_ERR_NOMEM;
	int rc = 0;
	for (size_t i = 0; i < link->n_tables && rc == 0; i++)
		rc = schema_view_add_table(v, link->tables[i].table);
	for (size_t i = 0; i < link->n_columns && rc == 0; i++) {
		const struct link_column *c = &link->columns[i];
		rc = schema_view_add_column(v, c->table, c->column, c->score, false, (c->reasons & LINK_BY_VALUE) != 0);
	}
	for (size_t i = 0; ev && i < ev->n_values && rc == 0; i++)
		rc = schema_view_add_column(v, ev->values[i].table, ev->values[i].column, ev->values[i].score, false, true);
	if (rc == 0)
		rc = set_joins(v, link->joins, link->n_joins);
	if (rc < 0)
		schema_view_release(v);
	return rc;
}

void schema_view_release(struct schema_view *v)
{
	if (!v)
		return;
	free(v->tables);
	free(v->columns);
	free(v->joins);
	free(v->in_view);
	memset(v, 0, sizeof(*v));
}

/* ---- widening -------------------------------------------------------------- */

/* Lower-cased letters and digits of s into buf. */
static size_t fold(const char *s, char *buf, size_t size)
{
	size_t n = 0;
	for (; *s && n + 1 < size; s++)
		if (isalnum((unsigned char)*s))
			buf[n++] = (char)tolower((unsigned char)*s);
	buf[n] = '\0';
	return n;
}

static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
	size_t row[65];
	if (nb > 64)
		nb = 64;
	for (size_t j = 0; j <= nb; j++)
		row[j] = j;
	for (size_t i = 1; i <= na; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= nb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[nb];
}

/* Similarity in [0, 1] of two names. */
static double name_similarity(const char *x, const char *y)
{
	char a[65], b[65];
	size_t na = fold(x, a, sizeof(a)), nb = fold(y, b, sizeof(b));
	if (!na || !nb)
		return 0;
	double sim = 1.0 - (double)edit_distance(a, na, b, nb) / (double)(na > nb ? na : nb);
	if (strstr(a, b) || strstr(b, a))
		sim = sim > 0.75 ? sim : 0.75;
	return sim;
}

#define WIDEN_MAX 3

struct near {
	int table, column; /* column -1: the table */
	double sim;
};
#define WIDEN_MIN_SIMILARITY 0.5

int schema_view_widen(struct schema_view *v, const char *name, bool is_table, char **ret_added)
{
	const struct schema *s = v->schema;
	struct near best[WIDEN_MAX];
	size_t n_best = 0;
	*ret_added = NULL;
	for (size_t t = 0; t < s->n_tables; t++) {
		size_t n_cols = is_table ? 1 : s->tables[t].n_columns;
		for (size_t c = 0; c < n_cols; c++) {
			const char *cand = is_table ? s->tables[t].name : s->tables[t].columns[c].name;
			struct near x = {(int)t, is_table ? -1 : (int)c, name_similarity(name, cand)};
			if (x.sim < WIDEN_MIN_SIMILARITY)
				continue;
			if (n_best < WIDEN_MAX)
				best[n_best++] = x;
			else if (x.sim > best[WIDEN_MAX - 1].sim)
				best[WIDEN_MAX - 1] = x;
			else
				continue;
			/* Keep best[] sorted, most similar first. */
			for (size_t k = n_best - 1; k > 0 && best[k].sim > best[k - 1].sim; k--) {
				struct near tmp = best[k];
				best[k] = best[k - 1];
				best[k - 1] = tmp;
			}
		}
	}
	struct strbuf out;
	strbuf_init(&out, 4096);
	int rc = 0;
	for (size_t i = 0; i < n_best && rc == 0; i++) {
		const struct schema_table *t = &s->tables[best[i].table];
		rc = best[i].column < 0 ? schema_view_add_table(v, best[i].table)
					: schema_view_add_column(v, best[i].table, best[i].column, best[i].sim, false, true);
		if (rc == 0)
			rc = best[i].column < 0 ? strbuf_addf(&out, "%s%s", out.len ? ", " : "", t->api_name)
						: strbuf_addf(&out, "%s%s.%s", out.len ? ", " : "", t->api_name,
							      t->columns[best[i].column].name);
	}
	if (rc == 0 && out.len)
		*ret_added = strbuf_detach(&out, NULL);
	strbuf_release(&out);
	return rc < 0 ? -T2S_ERR_NOMEM : 0;
}

/* ---- re-planning ------------------------------------------------------------- */

int schema_view_replan(struct schema_view *v, const int *tables, size_t n, bool *ret_changed, struct t2s_error *err)
{
	*ret_changed = false;
	if (n < 2)
		return 0;
	struct steiner_result st;
	int rc = steiner_kmb(&v->index->graph, tables, n, &st, err);
	if (rc < 0)
		return rc;
	size_t *edges = malloc((st.n_edges ? st.n_edges : 1) * sizeof(size_t));
	if (!edges) {
		steiner_result_release(&st);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < st.n_edges; i++)
		edges[i] = (size_t)v->index->graph.edges[st.edges[i]].tag;
	bool same = st.n_edges == v->n_joins;
	for (size_t i = 0; same && i < st.n_edges; i++) {
		const struct link_edge *e = &v->index->edges[edges[i]];
		bool found = false;
		for (size_t k = 0; k < v->n_joins && !found; k++)
			found = v->joins[k].left_table == e->left_table && v->joins[k].left_column == e->left_column &&
				v->joins[k].right_table == e->right_table && v->joins[k].right_column == e->right_column;
		same = found;
	}
	rc = 0;
	for (size_t i = 0; i < st.n_nodes && rc == 0; i++)
		rc = schema_view_add_table(v, st.nodes[i]);
	if (rc == 0 && !same)
		rc = set_joins(v, edges, st.n_edges);
	free(edges);
	steiner_result_release(&st);
	if (rc < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	*ret_changed = !same;
	return 0;
}
