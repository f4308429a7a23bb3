/*
 * link_retrieval.c - retrieval: the question's vector, every column's score,
 * the tables and columns the question names or scores (mentions: link_mentions.c)
 * and the columns its values and numbers point at.
 */
#include "pipeline/link/link_internal.h"

#include "common/clock.h"
#include "common/contract.h"
#include "pipeline/models/stage_metrics.h"
#include "pipeline/text/question_spans.h"
#include "pipeline/values/value_index.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* q += w * lexical vector of text, using scratch (dim floats). */
static void add_expansion(const struct embed_lexical *m, const char *text, double w, float *scratch, float *q)
{
	if (!text || !*text || w == 0)
		return;
	if (NEVER(embed_lexical_vector(m, text, scratch) < 0))
		return; /* m is a fitted index's embedder; were it not, the expansion is left out */
	for (unsigned k = 0; k < m->dim; k++)
		q[k] += (float)w * scratch[k];
}

/* The question's lexical vector with its expansion (see QUESTION_NEAR_WEIGHT), L2-normalised, into q. */
static int question_vector(const struct embed_lexical *m, const char *question, const struct lexicon_expansion *x,
			   float *q)
{
	if (NEVER(embed_lexical_vector(m, question, q) < 0))
		return -T2S_ERR_INTERNAL; /* m is a fitted index's embedder */
	if (!x || (!*x->near && !*x->far))
		return 0;
	float *scratch = malloc(m->dim * sizeof(float));
	if (!scratch)
		return -T2S_ERR_NOMEM;
	add_expansion(m, x->near, QUESTION_NEAR_WEIGHT, scratch, q);
	add_expansion(m, x->far, QUESTION_FAR_WEIGHT, scratch, q);
	free(scratch);
	double norm = 0;
	for (unsigned k = 0; k < m->dim; k++)
		norm += (double)q[k] * q[k];
	if (norm > 0)
		for (unsigned k = 0; k < m->dim; k++)
			q[k] = (float)(q[k] / sqrt(norm));
	return 0;
}

int link_score_columns(struct run *r, const char *question, const struct lexicon_expansion *x,
		       const struct model_endpoint *embed_model, struct link_result *res, struct t2s_error *err)
{
	struct column_index *idx = r->idx;
	double t0 = clock_now_ms();
	float *q = malloc(idx->lexical.dim * sizeof(float));
	if (!q || question_vector(&idx->lexical, question, x, q) < 0) {
		free(q);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	float *rq = NULL;
	size_t rdim = 0;
	if (embed_model && !idx->remote_vectors && idx->remote_failure)
		fallback_add(res->fallbacks, &res->n_fallbacks, "embed", idx->remote_failure,
			     "models.embed failed while the column index was built (%.200s): lexical scores only until "
			     "the index is rebuilt",
			     idx->remote_failure_detail);
	if (embed_model && idx->remote_vectors) {
		struct model_call_stats st = {0};
		const char *in[1] = {question};
		int rc = model_embed(embed_model, in, 1, &rq, &rdim, &st, err);
		stage_metrics_model_call("embed", rc, &st);
		res->model_calls++;
		if (rc == -T2S_ERR_NOMEM || rc == -T2S_ERR_INVALID) {
			free(q);
			return rc;
		}
		if (rc < 0)
			fallback_add(res->fallbacks, &res->n_fallbacks, "embed", fallback_reason_of(rc, st.http_status),
				     "models.embed failed (%.200s): the question was scored with the built-in lexical "
				     "embedder",
				     err->message);
		else if (rdim != idx->remote_dim)
			fallback_add(res->fallbacks, &res->n_fallbacks, "embed", FALLBACK_DIMENSION,
				     "the question's embedding has dimension %zu, the columns' %zu: the question was "
				     "scored with the built-in lexical embedder",
				     rdim, idx->remote_dim);
		if (rc < 0 || rdim != idx->remote_dim) {
			free(rq);
			rq = NULL;
			rdim = 0;
			t2s_error_clear(err);
		}
	}
	res->ms_embed = clock_now_ms() - t0;
	double qnorm = 0;
	for (size_t i = 0; rq && i < rdim; i++)
		qnorm += (double)rq[i] * rq[i];
	qnorm = qnorm > 0 ? sqrt(qnorm) : 1;
	double w = rq ? r->p->lexical_weight : 1.0;
	int lrc = column_index_lexical_scores(idx, q, r->col_score);
	for (size_t i = 0; lrc == 0 && i < idx->n_columns; i++) {
		double s = r->col_score[i];
		if (s > r->relevance.best_lexical)
			r->relevance.best_lexical = s;
		if (rq) {
			const float *v = idx->remote_vectors + i * rdim;
			double dot = 0;
			for (size_t k = 0; k < rdim; k++)
				dot += (double)v[k] * rq[k];
			s = w * s + (1 - w) * (dot / qnorm);
		}
		r->col_score[i] = s;
	}
	free(q);
	free(rq);
	if (lrc < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	for (size_t t = 0; t < r->s->n_tables; t++) {
		r->table_score[t] = -1;
		r->table_best[t] = -1;
		for (size_t i = idx->table_first_column[t]; i < idx->table_first_column[t + 1]; i++)
			if (r->col_score[i] > r->table_score[t]) {
				r->table_score[t] = r->col_score[i];
				r->table_best[t] = (int)i;
			}
	}
	return 0;
}

int link_cmp_desc(const void *a, const void *b, void *ctx)
{
	const double *score = ctx;
	double x = score[*(const int *)a], y = score[*(const int *)b];
	if (x != y)
		return x > y ? -1 : 1;
	return *(const int *)a - *(const int *)b;
}

/* Indexes 0..n-1 sorted by score descending (ties by index); caller frees. */
int *link_rank(const double *score, size_t n)
{
	int *order = malloc((n ? n : 1) * sizeof(*order));
	if (!order)
		return NULL;
	for (size_t i = 0; i < n; i++)
		order[i] = (int)i;
	qsort_r(order, n, sizeof(*order), link_cmp_desc, (void *)score);
	return order;
}

/* Tables and columns marked so far, for any reason (link_relevance counts what each step adds). */
static int marked_count(const struct run *r)
{
	int n = 0;
	for (size_t t = 0; t < r->s->n_tables; t++)
		n += r->table_reason[t] != 0;
	for (size_t i = 0; i < r->idx->n_columns; i++)
		n += r->col_reason[i] != 0;
	return n;
}

/*
 * Required tables and columns from retrieval alone.  rq->question is the
 * question with its near words (mentions); original is the question itself
 * (acronyms spell the initials of what the user typed).
 */
int link_select_by_retrieval(struct run *r, const struct link_request *rq, const char *original)
{
	char **qwords = NULL, **all_words = NULL;
	struct question_keys q = {0};
	/* Unstemmed, with stop words: acronyms use every word ("miles per gallon"). */
	int rc = embed_lexical_words(rq->question, 0, &qwords, NULL) < 0 ||
			 embed_lexical_words(original, EMBED_WORDS_KEEP_STOP | EMBED_WORDS_NO_STEM, &all_words, NULL) < 0 ||
			 link_question_keys_make(qwords, &q) < 0
		 ? -T2S_ERR_NOMEM
		 : 0;
	int named = 0, marked = marked_count(r);
	for (size_t t = 0; rc == 0 && t < r->s->n_tables && named < r->p->max_tables; t++)
		if (link_name_mentioned(r, (int)t, &q)) {
			r->table_reason[t] |= LINK_BY_RETRIEVAL;
			r->table_named[t] = true;
			named++;
		}
	if (rc == 0)
		rc = link_select_mentioned_columns(r, &q, all_words);
	r->relevance.named = marked_count(r) - marked;
	marked += r->relevance.named;
	if (rc == 0)
		rc = link_select_by_stand_ins(r, rq->question, all_words, &named);
	r->relevance.stand_ins = marked_count(r) - marked;
	if (rc == 0 && !r->relevance.named && !r->relevance.stand_ins)
		r->relevance.touched = link_count_touched(r, &q);
	link_question_keys_release(&q);
	free(qwords);
	free(all_words);
	if (rc < 0)
		return rc;
	size_t n_tables = r->s->n_tables;
	int *torder = link_rank(r->table_score, n_tables);
	if (!torder)
		return -T2S_ERR_NOMEM;
	double best = n_tables ? r->table_score[torder[0]] : 0;
	int chosen = 0;
	for (size_t i = 0; i < n_tables && chosen + named < r->p->max_tables; i++) {
		int t = torder[i];
		if (r->table_score[t] <= 0 || (i > 0 && r->table_score[t] < r->p->table_ratio * best))
			break; /* a question sharing nothing with the schema links nothing */
		chosen += !r->table_reason[t];
		r->table_by_score[t] |= !r->table_reason[t];
		r->table_reason[t] |= LINK_BY_RETRIEVAL;
	}
	free(torder);
	return 0;
}

#define VALUE_HIT_MIN_SCORE 0.9
#define VALUE_HITS_PER_SPAN 4

#define RANGE_HITS_PER_SPAN 2

/*
 * A number or date in the question ("after 1980") belongs to a column whose
 * range holds it: among the required tables' such columns, the best-scoring
 * ones are kept.
 */
static void range_hits(struct run *r, struct value_index *vi, const char *text)
{
	struct value_column_ref cols[64];
	size_t n = 0;
	if (value_index_range_columns(vi, text, cols, 64, &n) < 0)
		return;
	for (int kept = 0; kept < RANGE_HITS_PER_SPAN; kept++) {
		size_t best = n;
		double best_score = -1;
		for (size_t k = 0; k < n; k++) {
			size_t flat = r->idx->table_first_column[cols[k].table] + (size_t)cols[k].column;
			const struct schema_table *t = &r->s->tables[cols[k].table];
			if (!r->table_reason[cols[k].table] || (r->col_reason[flat] & LINK_BY_VALUE) ||
			    t->columns[cols[k].column].key)
				continue; /* keys are identifiers, not quantities */
			if (r->col_score[flat] > best_score) {
				best_score = r->col_score[flat];
				best = k;
			}
		}
		if (best == n)
			break;
		r->col_reason[r->idx->table_first_column[cols[best].table] + (size_t)cols[best].column] |= LINK_BY_VALUE;
	}
}

/*
 * Value hits: a question span that matches stored values (quoted and
 * capitalised spans, n-grams) requires the column holding them, unless the
 * same span matches values in more than two tables (then it only marks
 * columns of tables required otherwise).
 */
/* Mark the hits m[0..n) of one span or word; hits in more than two tables count only in tables already linked. */
static void mark_value_hits(struct run *r, const struct value_match *m, size_t n)
{
	int tables = 0;
	for (size_t k = 0; k < n; k++) {
		bool seen = false;
		for (size_t j = 0; j < k; j++)
			seen |= m[j].table == m[k].table;
		tables += !seen;
	}
	for (size_t k = 0; k < n; k++) {
		size_t flat = r->idx->table_first_column[m[k].table] + (size_t)m[k].column;
		if (tables > 2 && !r->table_reason[m[k].table])
			continue;
		r->relevance.values += !(r->col_reason[flat] & LINK_BY_VALUE);
		r->col_reason[flat] |= LINK_BY_VALUE;
		r->table_reason[m[k].table] |= LINK_BY_VALUE;
	}
}

int link_select_by_values(struct run *r, const struct link_request *rq)
{
	if (!rq->values || strcmp(value_index_schema(rq->values)->hash, r->s->hash) != 0)
		return 0;
	struct span_list spans;
	if (question_spans(rq->question, &spans) < 0)
		return -T2S_ERR_NOMEM;
	struct value_match m[VALUE_HITS_PER_SPAN];
	for (size_t i = 0; i < spans.n; i++) {
		const struct span *sp = &spans.v[i];
		size_t n = 0;
		struct t2s_error ignored;
		if (sp->kind == SPAN_NUMBER || sp->kind == SPAN_DATE) {
			range_hits(r, rq->values, sp->text);
			continue;
		}
		if (strlen(sp->text) >= 3 &&
		    value_index_lookup(rq->values, sp->text, VALUE_HIT_MIN_SCORE, VALUE_HITS_PER_SPAN, m, &n, &ignored) == 0)
			mark_value_hits(r, m, n);
	}
	question_spans_release(&spans);
	/* Values a word names without spelling them: "French" -> France, "female" -> F (value_index.h). */
	char **words = NULL;
	if (r->idx->wordnet && embed_lexical_words(rq->question, EMBED_WORDS_NO_STEM, &words, NULL) < 0)
		return -T2S_ERR_NOMEM;
	for (char **w = words; w && *w; w++)
		mark_value_hits(r, m, value_index_word_values(rq->values, r->idx->wordnet, *w, m, VALUE_HITS_PER_SPAN));
	free(words);
	return 0;
}
