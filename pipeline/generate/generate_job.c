/*
 * generate_job.c - the life of one run of the main job (see generate_job.h):
 * set up from the request and the configuration, released in one place,
 * and the budgets every step consults (the time left, the tokens spent)
 * with the trace's fallbacks that say why a step gave up.  The bottom of
 * the job's files: nothing here calls a step or the driver.
 */
#include "pipeline/generate/generate_job.h"

#include "common/clock.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

int generate_job_init(struct generate_job *j, const struct generate_env *env, const struct generate_request *rq,
		      struct t2s_error *err)
{
	*j = (struct generate_job){.env = env, .rq = rq};
	j->start = clock_now_ms();
	long timeout = rq->timeout_ms > 0 ? rq->timeout_ms : env->options.timeout_ms;
	j->deadline = j->start + (double)timeout;
	j->timeout_ms = timeout;
	j->stage = "catalog";
	j->max_rounds = rq->max_rounds >= 0 ? rq->max_rounds : env->options.max_rounds;
	j->n_candidates = rq->candidates > 0 ? rq->candidates : env->options.candidates;
	if (j->n_candidates > MAX_TRIES / 2)
		j->n_candidates = MAX_TRIES / 2;
	if (j->max_rounds > MAX_TRIES / 2 - 1)
		j->max_rounds = MAX_TRIES / 2 - 1;
	j->exec = env->exec;
	if (rq->max_rows > 0)
		j->exec.max_rows = rq->max_rows;
	if (rq->observer && rq->observer->gone) { /* statements stop when the consumer has gone */
		j->exec.cancelled = rq->observer->gone;
		j->exec.cancel_ctx = rq->observer->ctx;
	}
	j->corrections = json_array();
	j->model_calls = json_array();
	j->fallbacks = json_array();
	if (!j->corrections || !j->model_calls || !j->fallbacks)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	j->exec.grant = rq->grant; /* every statement of the job: the caller's tables only */
	return catalog_db_schema_granted(rq->db, rq->grant, &j->schema, err); /* every stage sees the caller's view */
}

void generate_job_release(struct generate_job *j)
{
	if (j->link_ok)
		link_result_release(&j->link);
	if (j->evidence_ok)
		evidence_result_release(&j->evidence);
	if (j->describe_ok)
		describe_result_release(&j->describe);
	schema_view_release(&j->view);
	free(j->evidence_texts);
	prompt_output_release(&j->prompt);
	json_decref(j->first_prompt);
	builtin_result_release(&j->builtin);
	if (j->reading_ran)
		exec_result_release(&j->reading_rows);
	for (size_t i = 0; i < j->n_tries; i++) {
		free(j->tries[i].reply);
		free(j->tries[i].sql);
		validation_release(&j->tries[i].v);
	}
	json_decref(j->corrections);
	json_decref(j->model_calls);
	json_decref(j->fallbacks);
	json_decref(j->candidates);
	json_decref(j->reuse);
	value_index_unref(j->values);
	column_index_unref(j->index);
	schema_unref(j->schema);
}

/* ---- budgets ------------------------------------------------------------------ */

double generate_time_left(const struct generate_job *j)
{
	return j->deadline - clock_now_ms();
}

long generate_cut_to_deadline(const struct generate_job *j, long limit_ms)
{
	double left = generate_time_left(j);
	if (left < 1)
		return 1;
	return limit_ms > 0 && (double)limit_ms <= left ? limit_ms : (long)left;
}

long generate_tokens_spent(const struct generate_job *j)
{
	long n = j->prompt_tokens + j->completion_tokens;
	if (j->link_ok)
		n += j->link.prompt_tokens + j->link.completion_tokens;
	if (j->evidence_ok)
		n += j->evidence.prompt_tokens + j->evidence.completion_tokens;
	if (j->describe_ok)
		n += j->describe.prompt_tokens + j->describe.completion_tokens;
	return n;
}

bool generate_budget_spent(struct generate_job *j)
{
	if (j->budget_exhausted)
		return true;
	long budget = j->env->options.token_budget;
	if (generate_time_left(j) < 1)
		j->budget_exhausted = "time";
	else if (budget > 0 && generate_tokens_spent(j) >= budget)
		j->budget_exhausted = "tokens";
	else
		return false;
	char why[128];
	snprintf(why, sizeof(why), "the request's %s budget ran out: no further model call was made",
		 j->budget_exhausted);
	generate_add_fallback(j, j->stage, why);
	return true;
}

void generate_add_fallback(struct generate_job *j, const char *stage, const char *reason)
{
	assert(stage && reason);
	json_array_append_new(j->fallbacks, json_pack("{s:s, s:s}", "stage", stage, "reason", reason));
}

const struct confidence_scorer *generate_confidence_scorer(const struct generate_job *j)
{
	/* The start refuses a binary whose embedded weights do not parse: never NULL in the service. */
	return j->env->confidence ? j->env->confidence : confidence_scorer_builtin(NULL);
}

struct builtin_input generate_builtin_input(const struct generate_job *j)
{
	return (struct builtin_input){.question = j->rq->question, .schema = j->schema,
				      .link = j->link_ok ? &j->link : NULL,
				      .evidence = j->evidence_ok ? &j->evidence : NULL,
				      .wordnet = j->index ? j->index->wordnet : NULL,
				      .related = j->index ? &j->index->related_spelled : NULL};
}
