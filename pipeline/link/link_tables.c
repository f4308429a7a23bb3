/*
 * link_tables.c - the learned table scorer at work (link_scorer.h): each
 * table's signals once retrieval and values have run, and the tables it
 * requires beyond the hand rules.
 */
#include "pipeline/link/link_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Required by a firm rule (a name, a mention, a stand-in, a value), not by the score rule alone. */
static bool firm(const struct run *r, size_t t)
{
	return r->table_reason[t] && !(r->table_by_score[t] && r->table_reason[t] == LINK_BY_RETRIEVAL);
}

/* Mean of the three best column scores of table t (ignoring negative ones). */
static double top3(const struct run *r, size_t t)
{
	double b[3] = {0, 0, 0};
	for (size_t i = r->idx->table_first_column[t]; i < r->idx->table_first_column[t + 1]; i++) {
		double s = r->col_score[i];
		if (s > b[2]) {
			b[2] = s;
			for (int k = 2; k > 0 && b[k] > b[k - 1]; k--) {
				double x = b[k];
				b[k] = b[k - 1];
				b[k - 1] = x;
			}
		}
	}
	return (b[0] + b[1] + b[2]) / 3;
}

/* named[t] |= bit when a word of text (space-separated words) is a word of table t's name. */
static int names_of(const struct run *r, const char *text, unsigned char bit, unsigned char *named)
{
	if (!text || !*text)
		return 0;
	char **words = NULL;
	struct question_keys k = {0};
	int rc = embed_lexical_words(text, 0, &words, NULL) < 0 || link_question_keys_make(words, &k) < 0 ? -T2S_ERR_NOMEM
													    : 0;
	for (size_t t = 0; rc == 0 && t < r->s->n_tables; t++)
		if (link_name_mentioned(r, (int)t, &k))
			named[t] |= bit;
	link_question_keys_release(&k);
	free(words);
	return rc;
}

/*
 * The features of every table into f[t * LINK_TABLE_FEATURES ...] (order:
 * tables by score); links: scratch of 2 * n_tables ints; named: per table, bit 1
 * a stand-in, bit 2 a far word is a word of its name.
 */
static void table_features(const struct run *r, const int *order, int *links, const unsigned char *named, double *f)
{
	size_t n = r->s->n_tables, n_firm = 0;
	double best = n && r->table_score[order[0]] > 0 ? r->table_score[order[0]] : 0;
	for (size_t t = 0; t < n; t++)
		n_firm += firm(r, t);
	/* links[2t]: join edges to required tables; links[2t + 1]: the first such table, then -2 once a second one is seen. */
	for (size_t t = 0; t < n; t++) {
		links[2 * t] = 0;
		links[2 * t + 1] = -1;
	}
	for (size_t e = 0; e < r->idx->n_edges; e++) {
		const struct link_edge *x = &r->idx->edges[e];
		for (int side = 0; side < 2 && x->left_table != x->right_table; side++) {
			int t = side ? x->right_table : x->left_table, u = side ? x->left_table : x->right_table;
			if (!firm(r, (size_t)u))
				continue;
			links[2 * t]++;
			links[2 * t + 1] = links[2 * t + 1] == -1 || links[2 * t + 1] == u ? u : -2;
		}
	}
	for (size_t k = 0; k < n; k++) {
		size_t t = (size_t)order[k];
		double *x = f + t * LINK_TABLE_FEATURES, s = r->table_score[t] > 0 ? r->table_score[t] : 0;
		memset(x, 0, LINK_TABLE_FEATURES * sizeof(*x));
		x[LTF_SCORE] = s;
		x[LTF_SCORE_REL] = best > 0 ? s / best : 0;
		x[LTF_RANK_INV] = 1.0 / (1.0 + (double)k);
		x[LTF_TOP3_REL] = best > 0 ? top3(r, t) / best : 0;
		x[LTF_SCORE_RULE] = r->table_by_score[t];
		for (size_t i = r->idx->table_first_column[t]; i < r->idx->table_first_column[t + 1]; i++) {
			x[LTF_MENTION_FULL] = x[LTF_MENTION_FULL] || r->col_mention[i] == MENTION_FULL;
			x[LTF_MENTION_PART] = x[LTF_MENTION_PART] || r->col_mention[i] == MENTION_PART;
			x[LTF_STAND_IN] = x[LTF_STAND_IN] || r->col_mention[i] == MENTION_STAND_IN;
			x[LTF_VALUE] = x[LTF_VALUE] || (r->col_reason[i] & LINK_BY_VALUE);
		}
		x[LTF_STAND_IN_NAME] = (named[t] & 1) != 0;
		x[LTF_FAR_NAME] = (named[t] & 2) != 0;
		x[LTF_KEYED_FIRM] = (links[2 * t] < 2 ? links[2 * t] : 2) / 2.0;
		x[LTF_BRIDGE] = links[2 * t + 1] == -2;
		x[LTF_NO_FIRM] = n_firm == 0;
		x[LTF_FIRM_LOG] = log(1.0 + (double)n_firm);
		x[LTF_LOG_COLUMNS] = log(1.0 + (double)(r->idx->table_first_column[t + 1] - r->idx->table_first_column[t]));
	}
}

/*
 * Requires the tables no rule required that the scorer rates at or above its
 * threshold, best first, within max_tables; not a table joining two required
 * tables (f: the features): the scaffold's bridges and alternative bridges
 * decide those (pipeline/link/README.md: adding them too made them required
 * tables, out of the scaffold's join lists, for 3% more linked tokens).
 * 0 or -T2S_ERR_NOMEM.
 */
static int apply(struct run *r, const struct link_table_scorer *sc, const double *p, const int *order,
		  const double *f)
{
	size_t n = r->s->n_tables;
	int required = 0;
	for (size_t t = 0; t < n; t++)
		required += r->table_reason[t] != 0;
	/* order is by retrieval score; the scorer's pick goes best probability first. */
	int *pick = malloc((n ? n : 1) * sizeof(*pick));
	size_t m = 0;
	if (!pick)
		return -T2S_ERR_NOMEM;
	for (size_t k = 0; k < n; k++)
		if (!r->table_reason[order[k]] && p[order[k]] >= sc->threshold &&
		    f[(size_t)order[k] * LINK_TABLE_FEATURES + LTF_BRIDGE] == 0)
			pick[m++] = order[k];
	qsort_r(pick, m, sizeof(*pick), link_cmp_desc, (void *)p);
	for (size_t k = 0; k < m && required < r->p->max_tables; k++, required++)
		r->table_reason[pick[k]] |= LINK_BY_RETRIEVAL;
	free(pick);
	return 0;
}

int link_select_by_table_scorer(struct run *r, const struct link_request *rq, struct link_result *res)
{
	const struct link_scorer *s = r->p->scorer ? r->p->scorer : link_scorer_builtin(NULL);
	const struct link_table_scorer *sc = s ? &s->tables : NULL;
	size_t n = r->s->n_tables;
	if (!n || ((!sc || !sc->present) && !rq->features))
		return 0;
	int *order = link_rank(r->table_score, n), *links = malloc(2 * n * sizeof(int));
	double *f = malloc(n * LINK_TABLE_FEATURES * sizeof(double)), *p = malloc(n * sizeof(double));
	bool *decided = malloc(n * sizeof(bool));
	unsigned char *named = calloc(n, 1);
	int rc = order && links && f && p && decided && named ? 0 : -T2S_ERR_NOMEM;
	if (rc == 0)
		rc = names_of(r, r->related, 1, named) < 0 || names_of(r, r->far, 2, named) < 0 ? -T2S_ERR_NOMEM : 0;
	if (rc == 0) {
		table_features(r, order, links, named, f);
		for (size_t t = 0; t < n; t++) {
			p[t] = sc ? link_table_scorer_probability(sc, f + t * LINK_TABLE_FEATURES) : 0;
			decided[t] = !firm(r, t);
		}
	}
	if (rc == 0 && rq->features) {
		res->table_candidates = malloc(n * sizeof(*res->table_candidates));
		if (!res->table_candidates)
			rc = -T2S_ERR_NOMEM;
		for (size_t t = 0; rc == 0 && t < n; t++) {
			struct link_table_candidate *c = &res->table_candidates[t];
			c->table = (int)t;
			memcpy(c->features, f + t * LINK_TABLE_FEATURES, sizeof(c->features));
			c->probability = p[t];
			c->decided = decided[t];
		}
		if (rc == 0)
			res->n_table_candidates = n;
	}
	if (rc == 0 && sc && sc->present)
		rc = apply(r, sc, p, order, f);
	free(order);
	free(links);
	free(f);
	free(p);
	free(decided);
	free(named);
	return rc;
}
