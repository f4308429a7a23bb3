/*
 * link.c - the schema-linking stage (see link.h): link_run takes the steps of
 * the other link_*.c files in turn over one struct run (link_internal.h):
 * retrieval and mentions, the LLM table pick, the columns of the required
 * tables within the column budget, the scaffold and the result; and the
 * link model's fallback.
 */
#include "pipeline/link/link_internal.h"

#include "common/clock.h"
#include "common/limits.h"
#include "common/strbuf.h"
#include "pipeline/models/stage_metrics.h"
#include "pipeline/text/lexicon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct link_params link_params_default = {
	.top_k = 25,
	.min_k = 1,
	.budget_tokens = 600,
	.table_ratio = 0.75,
	.max_tables = 8,
	.lexical_weight = 0.5,
	.shuffles = 5,
	.llm_max_tables = 40,
	.llm_min_vote_share = 0.5,
	.llm_column_budget_tokens = 1500,
};

const char *link_mode_name(enum link_mode m)
{
	return m == LINK_MODE_LLM ? "llm" : m == LINK_MODE_HYBRID ? "hybrid" : "vector";
}

int link_mode_parse(const char *s)
{
	if (strcmp(s, "vector") == 0)
		return LINK_MODE_VECTOR;
	if (strcmp(s, "llm") == 0)
		return LINK_MODE_LLM;
	if (strcmp(s, "hybrid") == 0)
		return LINK_MODE_HYBRID;
	return -1;
}

static void run_free(struct run *r)
{
	free(r->col_score);
	free(r->table_score);
	free(r->table_best);
	free(r->table_reason);
	free(r->table_votes);
	free(r->col_reason);
	free(r->table_whole);
	free(r->table_low);
	free(r->related);
	free(r->col_mention);
	free(r->table_named);
	free(r->table_by_score);
}

/*
 * The schema words that stand in for the question's orphan words
 * (related_words.h), space-separated (malloc'd; NULL when out of memory).
 */
static char *related_text(const struct column_index *idx, const char *question)
{
	struct strbuf sb;
	strbuf_init(&sb, T2S_QUESTION_MAX_BYTES + (64u << 10));
	if (related_words_of_question(&idx->related, idx->wordnet, question, &sb) < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

char *link_question_text(const char *question, const char *evidence)
{
	if (!evidence || !*evidence)
		return strdup(question);
	size_t n = strlen(question) + strlen(evidence) + 2;
	char *q = malloc(n);
	if (q)
		snprintf(q, n, "%s %s", question, evidence);
	return q;
}

/* True when some answer of the link model named a candidate table. */
static bool model_named_any(const struct run *r)
{
	for (size_t t = 0; t < r->s->n_tables; t++)
		if (r->table_reason[t] & LINK_BY_LLM)
			return true;
	return false;
}

/*
 * The link model gave nothing usable (rc < 0: every call failed; else no
 * answer named a candidate): report it; mode llm goes on as mode vector
 * (retrieval and values select the tables).  0, or -T2S_ERR_NOMEM.
 */
static int llm_fallback(struct run *r, const struct link_request *rq, const struct link_request *erq,
			int rc, const struct t2s_error *err, struct link_result *res)
{
	if (rc < 0) {
		fallback_add(res->fallbacks, &res->n_fallbacks, "link_llm", fallback_reason_of(rc, r->llm_http_status),
			     "every link model call failed (%.200s): %s", err->message,
			     res->mode == LINK_MODE_LLM ? "vector linking was used" : "retrieval alone was used");
		res->fallback = res->mode == LINK_MODE_LLM ? "every link model call failed: vector mode used"
							   : "every link model call failed: retrieval alone used";
	} else {
		fallback_add(res->fallbacks, &res->n_fallbacks, "link_llm", FALLBACK_UNPARSEABLE,
			     "the link model answered %d time%s without naming a candidate table: %s", r->answers,
			     r->answers == 1 ? "" : "s",
			     res->mode == LINK_MODE_LLM ? "vector linking was used" : "retrieval alone was used");
		res->fallback = res->mode == LINK_MODE_LLM ? "the link model named no candidate table: vector mode used"
							   : "the link model named no candidate table: retrieval alone used";
	}
	if (res->mode != LINK_MODE_LLM)
		return 0;
	res->mode = LINK_MODE_VECTOR;
	return link_select_by_retrieval(r, erq, rq->question) < 0 || link_select_by_values(r, rq) < 0 ||
			       link_select_by_table_scorer(r, rq, res) < 0
		       ? -T2S_ERR_NOMEM
		       : 0;
}

/* Retrieval and values found nothing in the schema the question relates to (see struct link_relevance). */
static bool unrelated(const struct link_relevance *v)
{
	return !v->named && !v->stand_ins && !v->values && !v->touched && v->best_lexical < LINK_UNRELATED_MAX_SCORE;
}

int link_run(struct column_index *idx, const struct link_params *p, const struct model_endpoint *link_model,
	     const struct model_endpoint *embed_model, const struct link_request *rq_in, struct link_result *ret,
	     struct t2s_error *err)
{
	double t0 = clock_now_ms();
	if (strlen(rq_in->question) > T2S_QUESTION_MAX_BYTES)
		return t2s_error_set(err, T2S_ERR_INVALID, "question is longer than %d bytes", T2S_QUESTION_MAX_BYTES);
	if (rq_in->evidence && strlen(rq_in->evidence) > T2S_QUESTION_MAX_BYTES)
		return t2s_error_set(err, T2S_ERR_INVALID, "evidence is longer than %d bytes", T2S_QUESTION_MAX_BYTES);
	char *text = link_question_text(rq_in->question, rq_in->evidence);
	if (!text)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	struct link_request text_rq = *rq_in;
	text_rq.question = text; /* every step reads the question with the user's evidence */
	const struct link_request *rq = &text_rq;
	struct link_result res = {.index = column_index_ref(idx), .mode = rq->mode};
	size_t n_tables = idx->schema->n_tables, n_cols = idx->n_columns;
	struct run r = {.idx = idx, .s = idx->schema, .p = p};
	r.col_score = calloc(n_cols + 1, sizeof(double));
	r.col_reason = calloc(n_cols + 1, sizeof(unsigned));
	r.table_score = calloc(n_tables + 1, sizeof(double));
	r.table_best = calloc(n_tables + 1, sizeof(int));
	r.table_reason = calloc(n_tables + 1, sizeof(unsigned));
	r.table_votes = calloc(n_tables + 1, sizeof(int));
	r.table_whole = calloc(n_tables + 1, sizeof(bool));
	r.table_low = calloc(n_tables + 1, sizeof(bool));
	r.col_mention = calloc(n_cols + 1, 1);
	r.table_named = calloc(n_tables + 1, sizeof(bool));
	r.table_by_score = calloc(n_tables + 1, sizeof(bool));
	int rc = 0;
	if (!r.col_score || !r.col_reason || !r.table_score || !r.table_best || !r.table_reason || !r.table_votes ||
	    !r.table_whole || !r.table_low || !r.col_mention || !r.table_named || !r.table_by_score)
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	if (rc == 0 && rq->mode != LINK_MODE_VECTOR && !link_model) {
		res.mode = LINK_MODE_VECTOR;
		res.fallback = "no link model is configured: vector mode used";
		fallback_add(res.fallbacks, &res.n_fallbacks, "link_llm", FALLBACK_NOT_CONFIGURED,
			     "mode %s needs models.link, which is not configured: vector linking was used",
			     link_mode_name(rq->mode));
	}
	struct lexicon_expansion x = {0};
	char *expanded = NULL;
	if (rc == 0 && lexicon_expand(idx->wordnet, rq->question, LEXICON_QUESTION, QUESTION_SENSES, &x) == 0 &&
	    (r.related = related_text(idx, rq->question)) != NULL)
		expanded = link_question_with(rq->question, x.near);
	if (rc == 0 && !expanded)
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	struct link_request erq = *rq;
	if (expanded)
		erq.question = expanded; /* mentions: the question's words and its near words */
	/* The question's vector reads the stand-ins of its orphan words as near words. */
	if (rc == 0 && *r.related) {
		char *near = link_question_with(x.near, r.related);
		if (near) {
			free(x.near);
			x.near = near;
		} else {
			rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
		}
	}
	r.far = x.far;
	double t_retrieve = clock_now_ms();
	if (rc == 0)
		rc = link_score_columns(&r, rq->question, &x, embed_model, &res, err);
	if (rc == 0 && res.mode != LINK_MODE_LLM)
		rc = link_select_by_retrieval(&r, &erq, rq->question) < 0 || link_select_by_values(&r, rq) < 0 ||
				     link_select_by_table_scorer(&r, rq, &res) < 0
			     ? t2s_error_set(err, T2S_ERR_NOMEM, "out of memory")
			     : 0;
	res.ms_retrieve = clock_now_ms() - t_retrieve - res.ms_embed; /* scoring and selection */
	stage_metrics_step("link", "retrieve", res.ms_retrieve);
	if (rc == 0 && res.mode == LINK_MODE_HYBRID && rq->model_only_if_related && unrelated(&r.relevance)) {
		res.mode = LINK_MODE_VECTOR; /* nothing to pick from: the link model is not asked */
		res.fallback = "the question relates to nothing in the schema: the link model was not asked";
	}
	if (rc == 0 && res.mode != LINK_MODE_VECTOR) {
		rc = link_with_model(&r, rq, link_model, &res, err);
		if (rc != -T2S_ERR_NOMEM && (rc < 0 || !model_named_any(&r))) {
			struct t2s_error model_err = *err;
			t2s_error_clear(err);
			rc = llm_fallback(&r, rq, &erq, rc, &model_err, &res) < 0
				     ? t2s_error_set(err, T2S_ERR_NOMEM, "out of memory")
				     : 0;
		}
	}
	if (rc == 0 && (link_select_columns(&r, rq, &res) < 0 || link_apply_column_budget(&r, &erq, &res) < 0))
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	if (rc == 0)
		rc = link_steiner_step(&r, &res, err);
	if (rc == 0 && link_assemble(&r, &res) < 0)
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	res.relevance = r.relevance;
	run_free(&r);
	free(expanded);
	free(text);
	lexicon_expansion_release(&x);
	if (rc < 0) {
		link_result_release(&res);
		return rc;
	}
	stage_metrics_step("link", "steiner", res.ms_steiner);
	res.ms_total = clock_now_ms() - t0;
	stage_metrics_step("link", "total", res.ms_total);
	*ret = res;
	return 0;
}

bool link_relates_to_nothing(const struct link_result *r)
{
	for (size_t i = 0; i < r->n_tables; i++)
		if (r->tables[i].reasons & LINK_BY_LLM)
			return false;
	return unrelated(&r->relevance);
}

void link_result_release(struct link_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_unknown; i++)
		free(r->unknown_names[i]);
	free(r->unknown_names);
	free(r->tables);
	free(r->columns);
	free(r->cut);
	free(r->candidates);
	free(r->table_candidates);
	free(r->joins);
	free(r->alternative_joins);
	free(r->disconnected);
	column_index_unref(r->index);
	memset(r, 0, sizeof(*r));
}
