/*
 * generate_builtin.c - the built-in generator inside the main job (see
 * generate.h, "Generators"): its statement becomes a try validated like a
 * model's; a refusal says why.  The one place generation calls
 * pipeline/builtin/.
 */
#include "pipeline/generate/generate_internal.h"

#include "pipeline/builtin/builtin_json.h"
#include "pipeline/generate/confidence_builtin.h"
#include "pipeline/models/stage_metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const GENERATOR_NAMES[] = {"auto", "model", "builtin"};

const char *generate_generator_name(enum generate_generator g)
{
	return (unsigned)g < 3 ? GENERATOR_NAMES[g] : "auto";
}

int generate_generator_parse(const char *s)
{
	for (int g = 0; g < 3; g++)
		if (s && strcmp(s, GENERATOR_NAMES[g]) == 0)
			return g;
	return -1;
}

bool generate_builtin_may_stand_in(int rc)
{
	return rc == -T2S_ERR_UPSTREAM || rc == -T2S_ERR_UPSTREAM_TIMEOUT || rc == -T2S_ERR_UNAVAILABLE;
}

void generate_builtin_count(const char *generator)
{
	stage_metrics_answer(generator);
}

/*
 * The reading's calibrated confidence (confidence.h, "builtin"): with the
 * scorer present, an answered reading gets its probability as confidence,
 * or, below the scorer's threshold, becomes a refusal (low_confidence): the
 * built-in abstains where it would too often be wrong.
 */
static void score_reading(struct generate_job *j)
{
	const struct confidence_scorer *s = generate_confidence_scorer(j);
	struct builtin_result *b = &j->builtin;
	if (!b->sql || !s || !s->builtin.present)
		return;
	confidence_builtin_features(b, &j->builtin_features);
	j->builtin_p = confidence_named_probability(&s->builtin, j->builtin_features.values, j->builtin_features.n);
	j->builtin_scored = true;
	double min = j->env->options.builtin_min_confidence;
	j->builtin_threshold = min >= 0 ? min : s->builtin.threshold;
	if (j->builtin_p >= j->builtin_threshold) {
		b->confidence = j->builtin_p;
		return;
	}
	free(b->sql);
	b->sql = NULL;
	b->shape = NULL;
	b->confidence = 0;
	b->refusal = "low_confidence";
	b->refused_by = "confidence";
	snprintf(b->reason, sizeof(b->reason),
		 "the reading is too uncertain to answer: its calibrated confidence %.2f is below %.2f", j->builtin_p,
		 j->builtin_threshold);
}

int generate_builtin_answer(struct generate_job *j, const struct t2s_error *model_err, struct t2s_error *err,
			    json_t **ret_problem)
{
	char model_message[T2S_ERROR_MESSAGE_MAX] = "";
	int model_code = model_err ? (int)model_err->code : 0;
	if (model_err)
		snprintf(model_message, sizeof(model_message), "%s", model_err->message);
	j->stage = "builtin";
	if (!j->first_prompt)
		j->first_prompt = json_null();
	struct builtin_input in = generate_builtin_input(j);
	builtin_result_release(&j->builtin);
	int rc = builtin_generate(&in, &j->builtin);
	j->builtin_ran = true;
	stage_metrics_step("builtin", "total", j->builtin.ms);
	if (rc < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	score_reading(j);
	if (!j->builtin.sql) {
		/* the refusal, the rule that refused and which rule read each word: what to rephrase */
		*ret_problem = json_pack("{s:{s:s, s:s, s:s?, s:o*}}", "builtin", "refusal", j->builtin.refusal, "reason",
					 j->builtin.reason, "refused_by", j->builtin.refused_by, "claims",
					 builtin_claims_json(&j->builtin));
		if (*ret_problem && j->builtin_scored)
			json_object_set_new(json_object_get(*ret_problem, "builtin"), "confidence",
					    json_real(round(j->builtin_p * 1000) / 1000));
		if (model_err)
			return t2s_error_set(err, (enum t2s_code)model_code, "%s; the built-in generator refuses too: %s",
					     model_message, j->builtin.reason);
		/* No model stands in (none configured, or the built-in was asked for): a 422, not a retryable 503. */
		if (!j->env->generate.primary)
			return t2s_error_set(err, T2S_ERR_BUILTIN_REFUSED,
					     "%s; %sthe built-in generator refuses the question (%s: %s)", GENERATE_NO_MODEL,
					     j->reuse_asked && j->env->state ? "no stored example answers this question; " : "", j->builtin.refusal,
					     j->builtin.reason);
		return t2s_error_set(err, T2S_ERR_BUILTIN_REFUSED, "the built-in generator refuses the question (%s: %s)",
				     j->builtin.refusal, j->builtin.reason);
	}
	if (j->n_tries == MAX_TRIES)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "too many statements tried");
	struct generate_try *t = &j->tries[j->n_tries];
	*t = (struct generate_try){.reply = strdup(j->builtin.sql), .sql = strdup(j->builtin.sql)};
	if (!t->reply || !t->sql) {
		free(t->reply);
		free(t->sql);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < j->n_tries; i++)
		j->tries[i].outvoted = true; /* a model's failed first round has no statement; none competes */
	if ((rc = generate_validate_try(j, t, err)) < 0)
		return rc;
	j->generator = "builtin";
	j->confidence = j->builtin.confidence;
	if (model_err)
		json_array_append_new(j->fallbacks, json_pack("{s:s, s:s, s:s}", "stage", "generate", "reason",
							      "the generate model failed: the built-in generator answered",
							      "detail", model_message));
	return 0;
}
