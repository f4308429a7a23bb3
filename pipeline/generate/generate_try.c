/*
 * generate_try.c - the statements a job tries (see generate_job.h): a model
 * asked for one through its route (the trace's model calls and tokens), one
 * validated within the time left and counted, two statements compared, a
 * correction recorded in the answer's corrections.  Called by the driver
 * and the steps; calls only the job's life (generate_job.c) and the modules
 * below the job (validate.h, reply.h, trace.h).
 */
#include "pipeline/generate/generate_job.h"

#include "common/clock.h"
#include "common/limits.h"
#include "common/utf8.h"
#include "pipeline/generate/reply.h"
#include "pipeline/generate/trace.h"
#include "pipeline/generate/validate.h"
#include "pipeline/generate/vote.h"
#include "pipeline/models/stage_metrics.h"

#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int generate_ask(struct generate_job *j, const char *stage, const struct model_message *msgs, size_t n_msgs, int round,
		 struct generate_try **ret, struct t2s_error *err)
{
	assert(n_msgs >= 1 && round >= 0 && j->n_tries <= MAX_TRIES);
	const struct generate_env *env = j->env;
	const struct model_route *route = &env->generate;
	if (strcmp(stage, "debug") == 0 && env->debug.primary)
		route = &env->debug;
	else
		stage = "generate";
	if (round == 0 && env->n_candidate_routes) /* first-round tries are candidates 0, 1, ... in order */
		route = &env->candidate_routes[j->n_tries % env->n_candidate_routes];
	if (j->n_tries == MAX_TRIES)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "too many statements tried");
	struct model_route_attempt attempts[MODEL_ROUTE_MAX_ATTEMPTS];
	size_t n_attempts = 0;
	char *answer = NULL;
	j->stage = stage;
	double t0 = clock_now_ms();
	int rc = model_route_chat(route, msgs, n_msgs, j->deadline, &answer, attempts, &n_attempts, err);
	j->ms_generate += clock_now_ms() - t0;
	stage_metrics_step(stage, "model", clock_now_ms() - t0);
	for (size_t i = 0; i < n_attempts; i++) {
		json_array_append_new(j->model_calls, trace_model_call_json(stage, &attempts[i]));
		j->prompt_tokens += attempts[i].stats.prompt_tokens;
		j->completion_tokens += attempts[i].stats.completion_tokens;
	}
	if (n_attempts > 1 && rc == 0)
		generate_add_fallback(j, stage, "the primary model failed or its breaker is open: the fallback answered");
	if (rc < 0)
		return rc;
	int nomem = 0;
	struct generate_try *t = &j->tries[j->n_tries];
	*t = (struct generate_try){.reply = answer, .sql = reply_extract_sql(answer, &nomem), .round = round};
	if (n_attempts) { /* the last attempt answered */
		t->logprob_sum = attempts[n_attempts - 1].stats.logprob_sum;
		t->logprob_tokens = attempts[n_attempts - 1].stats.logprob_tokens;
	}
	if (nomem) {
		free(answer);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	if ((rc = generate_validate_try(j, t, err)) < 0)
		return rc;
	*ret = t;
	return 0;
}

int generate_validate_try(struct generate_job *j, struct generate_try *t, struct t2s_error *err)
{
	assert(j->n_tries < MAX_TRIES && t == &j->tries[j->n_tries]); /* the next slot, counted below */
	double t0 = clock_now_ms();
	j->stage = "validate";
	struct exec_limits limits = j->exec;
	limits.timeout_ms = generate_cut_to_deadline(j, limits.timeout_ms);
	struct validate_context cx = {.db = j->rq->db, .schema = j->schema, .index = j->index,
				      .linked_table = j->view.in_view, .limits = limits, .question = j->rq->question};
	int rc = validate_sql(&cx, t->sql, &t->v, err);
	j->ms_validate += clock_now_ms() - t0;
	if (rc < 0) {
		free(t->reply);
		free(t->sql);
		return rc;
	}
	j->n_tries++;
	return 0;
}

bool generate_same_result(const struct generate_try *a, const struct generate_try *b)
{
	return a->v.executed && b->v.executed && vote_similarity(&a->v.result, &b->v.result) >= 1.0 - 1e-9;
}

bool generate_same_sql(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	char quote = 0; /* inside a quoted string or name its text is compared as is */
	for (;;) {
		while (!quote && isspace((unsigned char)*a))
			a++;
		while (!quote && isspace((unsigned char)*b))
			b++;
		if (!*a || !*b)
			return !*a && !*b;
		if (quote ? *a != *b : tolower((unsigned char)*a) != tolower((unsigned char)*b))
			return false;
		if (*a == '\'' || *a == '"')
			quote = !quote ? *a : quote == *a ? 0 : quote;
		a++;
		b++;
	}
}

int generate_record_correction(struct generate_job *j, const struct generate_try *prev, const struct generate_try *t,
			       const char *repair)
{
	/* A correction follows a statement that failed a blocking check, in a correction round. */
	assert(prev->v.failed >= 0 && prev->v.failed < (int)prev->v.n_checks && t->round > 0);
	const struct validation_check *c = prev->v.failed >= 0 ? &prev->v.checks[prev->v.failed] : NULL;
	return json_array_append_new(j->corrections,
				     json_pack("{s:i, s:s, s:i, s:s, s:o, s:b, s:s*}", "round", t->round, "check",
					       c ? c->check : "?", "level", c ? c->level : 0, "error",
					       c ? c->detail : "", "sql", utf8_json_excerpt(t->sql, T2S_EXCERPT_MAX_BYTES),
					       "ok", t->v.failed < 0, "repair", repair))
		       ? -T2S_ERR_NOMEM
		       : 0;
}
