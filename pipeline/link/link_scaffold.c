/*
 * link_scaffold.c - the join scaffold and the result: the required tables
 * as Steiner terminals, bridges (the tree's and the alternative ones), join
 * columns, and the tables and columns of the link result.
 */
#include "pipeline/link/link_internal.h"

#include "common/clock.h"
#include "common/tokens.h"

#include <stdlib.h>
#include <string.h>

static int push_table(struct link_result *res, const struct run *r, int t)
{
	struct link_table *v = realloc(res->tables, (res->n_tables + 1) * sizeof(*v));
	if (!v)
		return -T2S_ERR_NOMEM;
	res->tables = v;
	v[res->n_tables++] = (struct link_table){.table = t,
						 .score = r->table_score[t] > 0 ? r->table_score[t] : 0,
						 .votes = r->table_votes[t],
						 .low_votes = r->table_low[t],
						 .whole = r->table_whole[t],
						 .reasons = r->table_reason[t],
						 .best_column = r->table_best[t]};
	return 0;
}

/* The other end of edge e from table t, or -1 when e is no declared foreign key at t. */
static int key_neighbour(const struct link_edge *e, int t)
{
	if (e->kind != LINK_EDGE_FOREIGN_KEY)
		return -1;
	return e->left_table == t ? e->right_table : e->right_table == t ? e->left_table : -1;
}

/* Index into idx->edges of a declared foreign key between tables a and b, or -1. */
static long key_edge(const struct column_index *idx, int a, int b)
{
	for (size_t e = 0; e < idx->n_edges; e++)
		if (key_neighbour(&idx->edges[e], a) == b)
			return (long)e;
	return -1;
}

/* Mark the two endpoint columns of join edge e (an index into idx->edges) as join columns. */
static void mark_join_columns(struct run *r, size_t e)
{
	const struct link_edge *edge = &r->idx->edges[e];
	r->col_reason[r->idx->table_first_column[edge->left_table] + (size_t)edge->left_column] |= LINK_BY_JOIN;
	r->col_reason[r->idx->table_first_column[edge->right_table] + (size_t)edge->right_column] |= LINK_BY_JOIN;
}

/* Append edge e to the alternative joins (capacity *cap) and mark its endpoints as join columns. */
static int add_alternative_join(struct run *r, struct link_result *res, size_t e, size_t *cap)
{
	if (res->n_alternative_joins == *cap) {
		size_t *v = realloc(res->alternative_joins, (*cap = 2 * *cap + 4) * sizeof(*v));
		if (!v)
			return -T2S_ERR_NOMEM;
		res->alternative_joins = v;
	}
	res->alternative_joins[res->n_alternative_joins++] = e;
	mark_join_columns(r, e);
	return 0;
}

/* At most this many alternative bridges per pair of tables: a star schema keys many fact
   tables to the same two dimensions. */
#define ALTERNATIVE_BRIDGES_MAX 4

struct alternative {
	int table;
	size_t to_t1, to_t2; /* its two joins: indexes into index->edges */
};

/* Insert c into best[0..n) (best score first, at most ALTERNATIVE_BRIDGES_MAX); returns the new n. */
static size_t keep_best(struct alternative *best, size_t n, struct alternative c, const double *score)
{
	size_t at = n;
	while (at > 0 && score[best[at - 1].table] < score[c.table])
		at--;
	if (at >= ALTERNATIVE_BRIDGES_MAX)
		return n;
	if (n == ALTERNATIVE_BRIDGES_MAX)
		n--;
	memmove(best + at + 1, best + at, (n - at) * sizeof(*best));
	best[at] = c;
	return n + 1;
}

/*
 * Where the scaffold joins two required tables through a third (a bridge,
 * or a table required itself), that table may not be the one the question
 * means: drivers and races meet in results, lap times and standings alike,
 * and retrieval may have scored the wrong one highest.  Every other table
 * with declared foreign keys to both joins them too, and is linked as a
 * bridge with its two joins (its join columns only): the
 * ALTERNATIVE_BRIDGES_MAX the question scores highest.
 */
static int alternative_bridges(struct run *r, struct link_result *res)
{
	size_t n_tree = res->n_joins, cap = 0;
	const unsigned required = ~(unsigned)(LINK_BY_BRIDGE | LINK_BY_JOIN);
	for (size_t i = 0; i < n_tree; i++)
		for (size_t j = i + 1; j < n_tree; j++) {
			const struct link_edge *a = &r->idx->edges[res->joins[i]], *b = &r->idx->edges[res->joins[j]];
			/* a and b meet at a table between t1 and t2 */
			int bridge = a->left_table == b->left_table || a->left_table == b->right_table ? a->left_table
				     : a->right_table == b->left_table || a->right_table == b->right_table ? a->right_table
													   : -1;
			if (bridge < 0)
				continue;
			int t1 = a->left_table == bridge ? a->right_table : a->left_table;
			int t2 = b->left_table == bridge ? b->right_table : b->left_table;
			if (t1 == t2 || !(r->table_reason[t1] & required) || !(r->table_reason[t2] & required))
				continue;
			/* The candidates the question scores highest, at most ALTERNATIVE_BRIDGES_MAX. */
			struct alternative best[ALTERNATIVE_BRIDGES_MAX];
			size_t n_best = 0;
			for (size_t e = 0; e < r->idx->n_edges; e++) {
				int other = key_neighbour(&r->idx->edges[e], t1);
				if (other < 0 || other == t2 || r->table_reason[other])
					continue;
				long e2 = key_edge(r->idx, other, t2);
				if (e2 >= 0)
					n_best = keep_best(best, n_best, (struct alternative){other, e, (size_t)e2},
							   r->table_score);
			}
			for (size_t k = 0; k < n_best; k++) {
				if (r->table_reason[best[k].table])
					continue; /* keyed to t1 twice: taken once */
				r->table_reason[best[k].table] |= LINK_BY_BRIDGE;
				if (add_alternative_join(r, res, best[k].to_t1, &cap) < 0 ||
				    add_alternative_join(r, res, best[k].to_t2, &cap) < 0)
					return -T2S_ERR_NOMEM;
			}
		}
	return 0;
}

int link_steiner_step(struct run *r, struct link_result *res, struct t2s_error *err)
{
	double t0 = clock_now_ms();
	size_t n_tables = r->s->n_tables;
	int *terminals = malloc((n_tables ? n_tables : 1) * sizeof(int));
	if (!terminals)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	size_t n_terminals = 0;
	/* Highest scores first, so group 0 of the forest is the most relevant table's. */
	int *order = link_rank(r->table_score, n_tables);
	for (size_t i = 0; order && i < n_tables; i++)
		if (r->table_reason[order[i]])
			terminals[n_terminals++] = order[i];
	free(order);
	struct steiner_result st;
	int rc = n_terminals ? steiner_kmb(&r->idx->graph, terminals, n_terminals, &st, err) : 0;
	free(terminals);
	if (rc < 0)
		return rc;
	if (n_terminals) {
		res->joins = malloc((st.n_edges ? st.n_edges : 1) * sizeof(*res->joins));
		res->disconnected = malloc((st.n_unreached ? st.n_unreached : 1) * sizeof(int));
		if (!res->joins || !res->disconnected) {
			steiner_result_release(&st);
			return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
		}
		for (size_t i = 0; i < st.n_edges; i++) {
			size_t e = (size_t)r->idx->graph.edges[st.edges[i]].tag;
			const struct link_edge *edge = &r->idx->edges[e];
			res->joins[res->n_joins++] = e;
			r->table_reason[edge->left_table] |= r->table_reason[edge->left_table] ? 0 : LINK_BY_BRIDGE;
			r->table_reason[edge->right_table] |= r->table_reason[edge->right_table] ? 0 : LINK_BY_BRIDGE;
			mark_join_columns(r, e);
		}
		for (size_t i = 0; i < st.n_unreached; i++)
			res->disconnected[res->n_disconnected++] = st.unreached[i];
		steiner_result_release(&st);
		if (alternative_bridges(r, res) < 0)
			return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	res->ms_steiner = clock_now_ms() - t0;
	return 0;
}

int link_assemble(struct run *r, struct link_result *res)
{
	size_t n_tables = r->s->n_tables;
	int *order = link_rank(r->table_score, n_tables);
	if (!order)
		return -T2S_ERR_NOMEM;
	int rc = 0;
	for (size_t i = 0; i < n_tables && rc == 0; i++) {
		int t = order[i];
		if (!r->table_reason[t])
			continue;
		rc = push_table(res, r, t);
		/* A required table always shows at least its best column. */
		if (r->table_best[t] >= 0 && !(r->table_reason[t] & LINK_BY_BRIDGE))
			r->col_reason[r->table_best[t]] |= LINK_BY_RETRIEVAL;
	}
	free(order);
	for (size_t i = 0; rc == 0 && i < r->idx->n_columns; i++) {
		const struct link_column_ref *c = &r->idx->columns[i];
		if (!r->col_reason[i] || !r->table_reason[c->table])
			continue;
		struct link_column *v = realloc(res->columns, (res->n_columns + 1) * sizeof(*v));
		if (!v)
			return -T2S_ERR_NOMEM;
		res->columns = v;
		v[res->n_columns++] = (struct link_column){c->table, c->column, r->col_score[i] > 0 ? r->col_score[i] : 0,
							   r->col_reason[i]};
	}
	res->column_tokens = tokens_estimate_bytes(link_linked_bytes(r));
	return rc;
}
