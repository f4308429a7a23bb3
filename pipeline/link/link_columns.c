/*
 * link_columns.c - the columns of the required tables: keys, labels, shared
 * names, join keys, whole and small tables, the learned scorer's fill within
 * the token budget, and the column budget that drops columns a link model
 * brought whole (see "Columns" and "Column budget" in link.h).
 */
#include "pipeline/link/link_internal.h"

#include "common/tokens.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The first text column whose name holds "name" or "title", else -1. */
static int label_column(const struct schema_table *t)
{
	for (size_t c = 0; c < t->n_columns; c++) {
		const struct schema_column *col = &t->columns[c];
		if (col->primary_key)
			continue;
		if (strcasestr(col->name, "name") || strcasestr(col->name, "title"))
			return (int)c;
	}
	return -1;
}

/* Tables the model chose bring their columns whole; those it named in too few answers are low_votes. */
static void mark_whole_tables(struct run *r)
{
	int need = (int)ceil(r->p->llm_min_vote_share * (double)r->answers - 1e-9);
	if (need < 1)
		need = 1;
	for (size_t t = 0; t < r->s->n_tables; t++) {
		if (!(r->table_reason[t] & LINK_BY_LLM))
			continue;
		r->model_named = true;
		if (r->table_votes[t] < need) {
			r->table_low[t] = true;
			continue;
		}
		r->table_whole[t] = true;
		for (size_t i = r->idx->table_first_column[t]; i < r->idx->table_first_column[t + 1]; i++)
			r->col_reason[i] |= LINK_BY_LLM;
	}
}

/*
 * A question asking for a thing's information ("all the information about
 * each election", "list all info about people") wants whole rows: the
 * best-scoring required table brings every column.
 */
static const char *const whole_row_words[] = {"information", "info", NULL};

static int whole_row_table(const struct run *r, const char *question)
{
	char **words = NULL, **stems = NULL;
	if (embed_lexical_words(question, EMBED_WORDS_KEEP_STOP | EMBED_WORDS_NO_STEM, &words, NULL) < 0)
		return -1;
	bool asks = false;
	for (char **w = words; *w && !asks; w++)
		for (const char *const *x = whole_row_words; *x && !asks; x++)
			asks = strcmp(*w, *x) == 0;
	free(words);
	struct question_keys q = {0};
	if (!asks || embed_lexical_words(question, 0, &stems, NULL) < 0 || link_question_keys_make(stems, &q) < 0) {
		free(stems);
		return -1;
	}
	/* The thing is the table the question names, else the best-scoring one. */
	int best = -1;
	bool best_named = false;
	for (size_t t = 0; t < r->s->n_tables; t++) {
		if (!r->table_reason[t])
			continue;
		bool named = link_name_mentioned(r, (int)t, &q);
		if (best < 0 || named > best_named || (named == best_named && r->table_score[t] > r->table_score[best])) {
			best = (int)t;
			best_named = named;
		}
	}
	link_question_keys_release(&q);
	free(stems);
	return best;
}

/* Case-insensitive hash of a column name (0 never: link_set_add's empty slot). */
static uint64_t name_hash(const char *name)
{
	char buf[256];
	size_t n = 0;
	for (; name[n] && n < sizeof(buf); n++)
		buf[n] = (char)tolower((unsigned char)name[n]);
	uint64_t h = link_word_hash(buf, n);
	return h ? h : 1;
}

/* True when a key join (declared or inferred) links table t to another required table. */
static bool joined_to_required(const struct run *r, int t)
{
	for (size_t e = 0; e < r->idx->n_edges; e++) {
		const struct link_edge *x = &r->idx->edges[e];
		int other = x->left_table == t ? x->right_table : x->right_table == t ? x->left_table : -1;
		if (other >= 0 && other != t && r->table_reason[other])
			return true;
	}
	return false;
}

/*
 * A required table no key joins to the other required tables joins them, if
 * at all, on a column name they share (teachers.classroom = list.classroom):
 * those columns are shown on both sides.  Tables sharing more than
 * SHARED_NAMES_MAX names are copies of one shape (yearly tables), not a join.
 */
#define SHARED_NAMES_MAX 3

static int shared_name_columns(struct run *r)
{
	size_t cap = 0;
	for (size_t t = 0; t < r->s->n_tables; t++)
		if (r->table_reason[t] && r->s->tables[t].n_columns > cap)
			cap = r->s->tables[t].n_columns;
	size_t slots = 16;
	while (slots < 2 * cap)
		slots *= 2;
	uint64_t *set = malloc(slots * sizeof(*set));
	if (!set)
		return -T2S_ERR_NOMEM;
	for (size_t t = 0; t < r->s->n_tables; t++) {
		if (!r->table_reason[t] || joined_to_required(r, (int)t))
			continue;
		const struct schema_table *a = &r->s->tables[t];
		memset(set, 0, slots * sizeof(*set));
		for (size_t i = 0; i < a->n_columns; i++)
			link_set_add(set, slots - 1, name_hash(a->columns[i].name));
		for (size_t u = 0; u < r->s->n_tables; u++) {
			if (u == t || !r->table_reason[u])
				continue;
			const struct schema_table *b = &r->s->tables[u];
			int shared[SHARED_NAMES_MAX], n = 0;
			for (size_t j = 0; j < b->n_columns && n <= SHARED_NAMES_MAX; j++)
				if (link_set_has(set, slots - 1, name_hash(b->columns[j].name))) {
					if (n < SHARED_NAMES_MAX)
						shared[n] = (int)j;
					n++;
				}
			for (int k = 0; n <= SHARED_NAMES_MAX && k < n; k++)
				for (size_t i = 0; i < a->n_columns; i++)
					if (strcasecmp(a->columns[i].name, b->columns[shared[k]].name) == 0) {
						r->col_reason[r->idx->table_first_column[t] + i] |= LINK_BY_JOIN;
						r->col_reason[r->idx->table_first_column[u] + (size_t)shared[k]] |= LINK_BY_JOIN;
					}
		}
	}
	free(set);
	return 0;
}

/*
 * A required table whose columns together cost at most this many estimated
 * tokens (their lines in the generator's CREATE TABLE) is shown whole: a
 * needed column of a six-column table is worth its few tokens more than any
 * score can tell (pipeline/link/README.md, "Token budget").
 */
#define WHOLE_TABLE_TOKENS 120

static size_t column_bytes(const struct schema_column *c);
static const struct schema_column *flat_column(const struct run *r, size_t i);

/* Bytes of all columns of table t. */
static size_t table_bytes(const struct run *r, size_t t)
{
	size_t bytes = 0;
	for (size_t i = r->idx->table_first_column[t]; i < r->idx->table_first_column[t + 1]; i++)
		bytes += column_bytes(flat_column(r, i));
	return bytes;
}

/*
 * A small table costs less whole than any guess saves: the required tables
 * of at most WHOLE_TABLE_TOKENS are shown whole, best-scoring table first,
 * while the linked columns stay within the token budget.
 */
static void whole_small_tables(struct run *r, const struct link_request *rq, const bool *open)
{
	long budget = rq->budget_tokens > 0 ? rq->budget_tokens : r->p->budget_tokens;
	size_t bytes = link_linked_bytes(r);
	int *order = link_rank(r->table_score, r->s->n_tables);
	for (size_t k = 0; order && k < r->s->n_tables; k++) {
		size_t t = (size_t)order[k], add = 0;
		if (!open[t] || tokens_estimate_bytes(table_bytes(r, t)) > WHOLE_TABLE_TOKENS)
			continue;
		for (size_t i = r->idx->table_first_column[t]; i < r->idx->table_first_column[t + 1]; i++)
			add += r->col_reason[i] ? 0 : column_bytes(flat_column(r, i));
		if (budget > 0 && tokens_estimate_bytes(bytes + add) > budget)
			continue;
		for (size_t i = r->idx->table_first_column[t]; i < r->idx->table_first_column[t + 1]; i++)
			r->col_reason[i] |= LINK_BY_RETRIEVAL;
		bytes += add;
	}
	free(order);
}

/*
 * The join keys of the required tables: both ends of every key join between
 * two of them, declared or inferred to a primary key.  Copies of one shape
 * (yearly tables) share every name; their joins of equal names of no key are
 * not key joins.
 */
static void mark_join_keys(struct run *r)
{
	for (size_t e = 0; e < r->idx->n_edges; e++) {
		const struct link_edge *x = &r->idx->edges[e];
		if (x->left_table == x->right_table || !r->table_reason[x->left_table] || !r->table_reason[x->right_table])
			continue;
		if (x->kind != LINK_EDGE_FOREIGN_KEY && !r->s->tables[x->left_table].columns[x->left_column].primary_key &&
		    !r->s->tables[x->right_table].columns[x->right_column].primary_key)
			continue;
		r->col_reason[r->idx->table_first_column[x->left_table] + (size_t)x->left_column] |= LINK_BY_JOIN;
		r->col_reason[r->idx->table_first_column[x->right_table] + (size_t)x->right_column] |= LINK_BY_JOIN;
	}
}

/*
 * The scorer's features of the candidates (cand sorted by retrieval score,
 * best first): f[k * LINK_FEATURES ...] for cand[k].  label[t]: the label
 * column of table t or -1; rank[t]: scratch, zeroed.
 */
static void candidate_features(const struct run *r, const int *cand, size_t n, const unsigned *before,
			       const int *label, int *rank, double *f)
{
	double best = n && r->col_score[cand[0]] > 0 ? r->col_score[cand[0]] : 0, best_table = 0;
	for (size_t t = 0; t < r->s->n_tables; t++)
		if (r->table_reason[t] && r->table_score[t] > best_table)
			best_table = r->table_score[t];
	for (size_t k = 0; k < n; k++) {
		size_t i = (size_t)cand[k];
		int t = r->idx->columns[i].table;
		const struct schema_column *c = flat_column(r, i);
		double s = r->col_score[i] > 0 ? r->col_score[i] : 0, ts = r->table_score[t] > 0 ? r->table_score[t] : 0;
		double *x = f + k * LINK_FEATURES;
		x[LF_SCORE] = s;
		x[LF_SCORE_REL] = best > 0 ? s / best : 0;
		x[LF_SCORE_TABLE_REL] = ts > 0 ? s / ts : 0;
		x[LF_TABLE_BEST] = r->table_best[t] == (int)i;
		x[LF_RANK_INV] = 1.0 / (1.0 + rank[t]++);
		x[LF_MENTION_FULL] = r->col_mention[i] == MENTION_FULL;
		x[LF_MENTION_PART] = r->col_mention[i] == MENTION_PART;
		x[LF_STAND_IN] = r->col_mention[i] == MENTION_STAND_IN;
		x[LF_LABEL] = label[t] >= 0 && r->idx->table_first_column[t] + (size_t)label[t] == i;
		x[LF_VALUE] = (before[k] & LINK_BY_VALUE) != 0;
		x[LF_PRIMARY_KEY] = c->primary_key;
		x[LF_FOREIGN_KEY] = c->key && !c->primary_key;
		x[LF_SHARED_NAME] = (before[k] & LINK_BY_JOIN) && !c->primary_key;
		x[LF_TABLE_REL] = best_table > 0 ? ts / best_table : 0;
		x[LF_TABLE_NAMED] = r->table_named[t];
		x[LF_TABLE_LOG_COLUMNS] =
			log(1.0 + (double)(r->idx->table_first_column[t + 1] - r->idx->table_first_column[t]));
		x[LF_NUMERIC] = c->type_class == SCHEMA_TYPE_INTEGER || c->type_class == SCHEMA_TYPE_REAL;
	}
}

/* The columns the fill weighed, for res->candidates (rq->features). */
static int keep_candidates(const struct run *r, const int *cand, size_t n, const double *f, const double *p,
			   struct link_result *res)
{
	res->candidates = malloc((n ? n : 1) * sizeof(*res->candidates));
	if (!res->candidates)
		return -T2S_ERR_NOMEM;
	for (size_t k = 0; k < n; k++) {
		struct link_candidate *c = &res->candidates[k];
		c->table = r->idx->columns[cand[k]].table;
		c->column = r->idx->columns[cand[k]].column;
		memcpy(c->features, f + k * LINK_FEATURES, sizeof(c->features));
		c->probability = p[k];
	}
	res->n_candidates = n;
	return 0;
}

/*
 * The fill: the candidates ranked by the scorer's probability across tables
 * are added, best first, while the probability is at least the scorer's
 * threshold and the linked columns stay within the token budget (a column
 * that does not fit is passed over for a cheaper one); each table first gets
 * its min_k most probable columns whatever the threshold.  top_k caps the
 * columns the fill adds.
 */
static void fill(struct run *r, const struct link_request *rq, const int *cand, size_t n, const double *p,
		 const bool *open)
{
	const struct link_scorer *sc = r->p->scorer ? r->p->scorer : link_scorer_builtin(NULL);
	long budget = rq->budget_tokens > 0 ? rq->budget_tokens : r->p->budget_tokens;
	int top_k = rq->top_k > 0 ? rq->top_k : r->p->top_k, added = 0;
	size_t bytes = link_linked_bytes(r);
	int *order = malloc((n ? n : 1) * sizeof(*order)), *kept = calloc(r->s->n_tables + 1, sizeof(int));
	if (!order || !kept || !sc) {
		free(order);
		free(kept);
		return;
	}
	for (size_t k = 0; k < n; k++) {
		order[k] = (int)k;
		kept[r->idx->columns[cand[k]].table] += r->col_reason[cand[k]] != 0;
	}
	qsort_r(order, n, sizeof(*order), link_cmp_desc, (void *)p); /* positions by probability */
	for (int pass = 0; pass < 2; pass++)
		for (size_t j = 0; j < n && added < top_k; j++) {
			size_t k = (size_t)order[j], i = (size_t)cand[k];
			int t = r->idx->columns[i].table;
			size_t cost = column_bytes(flat_column(r, i));
			if (r->col_reason[i] || !open[t] || r->col_score[i] <= 0)
				continue;
			if (pass == 0 ? kept[t] >= r->p->min_k
				      : p[k] < sc->threshold || (budget > 0 && tokens_estimate_bytes(bytes + cost) > budget))
				continue;
			r->col_reason[i] |= LINK_BY_RETRIEVAL;
			bytes += cost;
			kept[t]++;
			added++;
		}
	free(order);
	free(kept);
}

int link_select_columns(struct run *r, const struct link_request *rq, struct link_result *res)
{
	size_t n_tables = r->s->n_tables;
	mark_whole_tables(r);
	const struct link_scorer *sc = r->p->scorer ? r->p->scorer : link_scorer_builtin(NULL);
	size_t n_candidates = 0;
	for (size_t t = 0; t < n_tables; t++)
		if (r->table_reason[t])
			n_candidates += r->idx->table_first_column[t + 1] - r->idx->table_first_column[t];
	/* Only the required tables' columns compete: big schemas never sort every column. */
	size_t nc = n_candidates ? n_candidates : 1;
	int *cand = malloc(nc * sizeof(int)), *label = malloc((n_tables + 1) * sizeof(int)),
	    *rank = calloc(n_tables + 1, sizeof(int));
	bool *open = calloc(n_tables + 1, sizeof(bool));
	unsigned *before = malloc(nc * sizeof(unsigned));
	double *f = malloc(nc * LINK_FEATURES * sizeof(double)), *p = malloc(nc * sizeof(double));
	int rc = cand && label && rank && open && before && f && p && sc ? 0 : -T2S_ERR_NOMEM;
	res->fill_budget_tokens = rq->budget_tokens > 0 ? rq->budget_tokens : r->p->budget_tokens;
	n_candidates = 0;
	for (size_t t = 0; rc == 0 && t < n_tables; t++) {
		label[t] = -1;
		if (!r->table_reason[t])
			continue;
		const struct schema_table *tab = &r->s->tables[t];
		size_t first = r->idx->table_first_column[t], end = r->idx->table_first_column[t + 1];
		for (size_t i = first; i < end; i++)
			cand[n_candidates++] = (int)i;
		/* Hybrid: the model saw this table and named others, not it.  It stays (recall if the model
		   erred), showing only what the question points at: its best column, the columns the
		   question names or holds values of, and join endpoints. */
		if (r->model_named && !(r->table_reason[t] & LINK_BY_LLM))
			continue;
		open[t] = !r->table_whole[t];
		label[t] = label_column(tab);
		for (size_t i = first; i < end; i++)
			if (tab->columns[r->idx->columns[i].column].primary_key) /* keys count rows and join */
				r->col_reason[i] |= LINK_BY_JOIN;
	}
	if (rc == 0 && !r->model_named && shared_name_columns(r) < 0)
		rc = -T2S_ERR_NOMEM;
	if (rc < 0)
		goto out;
	qsort_r(cand, n_candidates, sizeof(*cand), link_cmp_desc, r->col_score);
	for (size_t k = 0; k < n_candidates; k++)
		before[k] = r->col_reason[cand[k]];
	candidate_features(r, cand, n_candidates, before, label, rank, f);
	for (size_t k = 0; k < n_candidates; k++)
		p[k] = link_scorer_probability(sc, f + k * LINK_FEATURES);
	if (rq->features && (rc = keep_candidates(r, cand, n_candidates, f, p, res)) < 0)
		goto out;
	/* The label column (a name or title) stands for the table's rows in answers; the join keys of
	   the required tables join them. */
	for (size_t t = 0; t < n_tables; t++)
		if (open[t] && label[t] >= 0)
			r->col_reason[r->idx->table_first_column[t] + (size_t)label[t]] |= LINK_BY_RETRIEVAL;
	if (!r->model_named)
		mark_join_keys(r);
	int whole = r->model_named ? -1 : whole_row_table(r, rq->question);
	for (size_t i = whole >= 0 ? r->idx->table_first_column[whole] : 0;
	     whole >= 0 && i < r->idx->table_first_column[whole + 1]; i++)
		r->col_reason[i] |= LINK_BY_RETRIEVAL;
	whole_small_tables(r, rq, open);
	fill(r, rq, cand, n_candidates, p, open);
out:
	free(cand);
	free(label);
	free(rank);
	free(open);
	free(before);
	free(f);
	free(p);
	return rc;
}

/* ---- column budget ------------------------------------------------------ */

#define BUDGET_SAMPLES 3 /* sample values a column's prompt line shows (generate.sample_values) */

/* Bytes of column c's line in the generator's CREATE TABLE: "  name type, -- comment; 'v', ...". */
static size_t column_bytes(const struct schema_column *c)
{
	size_t n = strlen(c->name) + strlen(c->type) + 5;
	if (c->comment)
		n += strlen(c->comment) + 4;
	for (size_t k = 0; k < c->n_samples && k < BUDGET_SAMPLES; k++)
		n += strlen(c->samples[k]) + 4;
	return n;
}

static const struct schema_column *flat_column(const struct run *r, size_t i)
{
	const struct link_column_ref *c = &r->idx->columns[i];
	return &r->s->tables[c->table].columns[c->column];
}

/* Bytes of the columns linked so far. */
size_t link_linked_bytes(const struct run *r)
{
	size_t bytes = 0;
	for (size_t i = 0; i < r->idx->n_columns; i++)
		if (r->col_reason[i] && r->table_reason[r->idx->columns[i].table])
			bytes += column_bytes(flat_column(r, i));
	return bytes;
}

/*
 * The columns a budget may drop: brought whole and for no other reason (not
 * a key, the label, a value hit), not the table's best column, not named by
 * the question's words.  Returned sorted lowest score first; caller frees.
 */
static int droppable_columns(const struct run *r, const char *question, int **ret, size_t *ret_n)
{
	char **qwords = NULL, **all_words = NULL;
	struct question_keys q = {0};
	int *v = malloc((r->idx->n_columns ? r->idx->n_columns : 1) * sizeof(*v));
	int rc = !v || embed_lexical_words(question, 0, &qwords, NULL) < 0 ||
			 embed_lexical_words(question, EMBED_WORDS_KEEP_STOP | EMBED_WORDS_NO_STEM, &all_words, NULL) < 0 ||
			 link_question_keys_make(qwords, &q) < 0
		 ? -T2S_ERR_NOMEM
		 : 0;
	size_t n = 0;
	for (size_t i = 0; rc == 0 && i < r->idx->n_columns; i++) {
		int t = r->idx->columns[i].table;
		if (!r->table_whole[t] || r->col_reason[i] != LINK_BY_LLM || r->table_best[t] == (int)i ||
		    link_column_mentioned(r, i, &q, all_words) != MENTION_NONE)
			continue;
		v[n++] = (int)i;
	}
	link_question_keys_release(&q);
	free(qwords);
	free(all_words);
	if (rc < 0) {
		free(v);
		return rc;
	}
	qsort_r(v, n, sizeof(*v), link_cmp_desc, r->col_score);
	for (size_t a = 0, b = n ? n - 1 : 0; a < b; a++, b--) { /* lowest first */
		int tmp = v[a];
		v[a] = v[b];
		v[b] = tmp;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* Over llm_column_budget_tokens, drop columns brought whole (see "Column budget" in link.h). */
int link_apply_column_budget(struct run *r, const struct link_request *rq, struct link_result *res)
{
	long budget = r->p->llm_column_budget_tokens;
	res->column_budget_tokens = budget > 0 ? budget : 0;
	size_t bytes = link_linked_bytes(r);
	if (budget <= 0 || tokens_estimate_bytes(bytes) <= budget)
		return 0;
	int *drop = NULL;
	size_t n = 0;
	int rc = droppable_columns(r, rq->question, &drop, &n);
	if (rc < 0)
		return rc;
	res->cut = malloc((n ? n : 1) * sizeof(*res->cut));
	if (!res->cut) {
		free(drop);
		return -T2S_ERR_NOMEM;
	}
	for (size_t k = 0; k < n && tokens_estimate_bytes(bytes) > budget; k++) {
		size_t i = (size_t)drop[k];
		const struct link_column_ref *c = &r->idx->columns[i];
		bytes -= column_bytes(flat_column(r, i));
		r->col_reason[i] = 0;
		res->cut[res->n_cut++] =
			(struct link_column){c->table, c->column, r->col_score[i] > 0 ? r->col_score[i] : 0, LINK_BY_LLM};
	}
	free(drop);
	return 0;
}
