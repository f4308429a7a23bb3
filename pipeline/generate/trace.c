/*
 * trace.c - a validation report and a model call as JSON (see trace.h).
 */
#include "pipeline/generate/trace.h"

json_t *trace_validation_json(const struct validation *v)
{
	json_t *a = json_array();
	for (size_t i = 0; i < v->n_checks; i++) {
		const struct validation_check *c = &v->checks[i];
		json_array_append_new(a, json_pack("{s:i, s:s, s:b, s:s, s:s}", "level", c->level, "check", c->check, "ok",
						   c->ok, "severity", c->blocking ? "error" : "warning", "detail",
						   c->detail));
	}
	return a;
}

json_t *trace_model_call_json(const char *stage, const struct model_route_attempt *a)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:f}", "stage", stage, "endpoint", a->endpoint, "outcome",
			      a->outcome ? a->outcome : "?", "attempts", a->stats.attempts, "prompt_tokens",
			      (json_int_t)a->stats.prompt_tokens, "completion_tokens",
			      (json_int_t)a->stats.completion_tokens, "elapsed_ms", a->stats.elapsed_ms);
	if (o && a->stats.logprob_tokens > 0) /* what the server returned when asked (models.<stage>.logprobs) */
		json_object_set_new(o, "logprobs",
				    json_pack("{s:I, s:f}", "tokens", (json_int_t)a->stats.logprob_tokens, "mean",
					      a->stats.logprob_sum / (double)a->stats.logprob_tokens));
	return o;
}
