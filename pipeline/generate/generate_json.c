/*
 * generate_json.c - the main job's answer as JSON (generate_json.h), and
 * the stage events and problem members generate.c sends
 * (generate_internal.h).  Every stage result goes through its stage's own
 * renderer, so the trace says what the stage's endpoint would.
 */
#include "pipeline/generate/generate_json.h"

#include "common/limits.h"
#include "common/utf8.h"

#include <math.h>

#include "pipeline/builtin/builtin_json.h"
#include "pipeline/describe/describe_json.h"
#include "pipeline/evidence/evidence_json.h"
#include "pipeline/generate/generate_internal.h"

#include "pipeline/generate/confidence_features.h"
#include "pipeline/generate/trace.h"
#include "pipeline/link/link_json.h"
#include "pipeline/sql/exec_json.h"
#include "pipeline/sql/sql_engine.h"
#include "pipeline/sql/sql_explain.h"

json_t *generate_link_json(const struct generate_job *j)
{
	return link_result_json(j->rq->db->cfg->name, j->rq->question, j->rq->evidence, &j->link, false);
}

json_t *generate_evidence_json(const struct generate_job *j)
{
	if (!j->evidence_ok)
		return json_null();
	return evidence_result_json(j->rq->db->cfg->name, j->rq->question, j->rq->evidence, j->schema, &j->evidence,
				    j->values_state, j->values ? value_index_get_stats(j->values) : NULL);
}

json_t *generate_describe_json(const struct generate_job *j)
{
	if (!j->describe_ok)
		return json_pack("{s:s, s:s, s:[]}", "database", j->rq->db->cfg->name, "schema_hash", j->schema->hash,
				 "tables");
	return describe_result_json(j->rq->db->cfg->name, j->schema, &j->describe, false);
}

json_t *generate_try_json(const struct generate_try *t)
{
	return json_pack("{s:i, s:s?, s:b, s:i, s:o}", "round", t->round, "sql", t->sql, "ok", t->v.failed < 0,
			 "score", t->v.score, "validation", trace_validation_json(&t->v));
}

json_t *generate_failure_json(const struct generate_job *j, const struct generate_try *final)
{
	return json_pack("{s:o, s:o, s:O, s:O, s:s?}", "sql",
			 utf8_json_excerpt(final ? final->sql : NULL, T2S_EXCERPT_MAX_BYTES), "validation",
			 final ? trace_validation_json(&final->v) : json_array(), "corrections", j->corrections,
			 "model_calls", j->model_calls, "budget_exhausted", j->budget_exhausted);
}

json_t *generate_builtin_json(const struct generate_job *j)
{
	const struct builtin_result *b = &j->builtin;
	json_t *claims = builtin_claims_json(b); /* which rule read each word (null: none did) */
	return json_pack("{s:s?, s:s?, s:s?, s:s?, s:f, s:f, s:o*}", "shape", b->shape, "refusal", b->refusal, "reason",
			 b->refusal ? b->reason : NULL, "refused_by", b->refused_by, "confidence",
			 round(b->confidence * 1000) / 1000, "ms", round(b->ms * 1000) / 1000, "claims", claims);
}

/*
 * How the confidence was made: by the answer scorer from its features (and
 * the built-in's cross-check), or carried by the built-in's reading or the
 * stored example.
 */
static json_t *confidence_trace_json(const struct generate_job *j)
{
	const char *source = j->scorer ? "scorer" : j->example_id ? "example" : "builtin";
	json_t *o = json_pack("{s:s, s:s}", "source", source, "band", j->confidence_band ? j->confidence_band : "low");
	if (o && j->scorer) {
		json_object_set_new(o, "reasons", confidence_reasons_json(j->scorer, j->confidence_features));
		json_object_set_new(o, "features", confidence_features_json(j->confidence_features));
		const char *cc = j->crosscheck == GENERATE_CROSSCHECK_AGREES	? "agrees"
				 : j->crosscheck == GENERATE_CROSSCHECK_DIFFERS ? "differs"
										: j->reading_why;
		json_object_set_new(o, "builtin_crosscheck", json_string(cc ? cc : "not_run"));
	}
	if (o && !j->scorer && !j->example_id && j->builtin_scored) {
		json_object_set_new(o, "features", confidence_builtin_features_json(&j->builtin_features));
		json_object_set_new(o, "threshold", json_real(j->builtin_threshold));
	}
	return o;
}

static json_t *trace_json(const struct generate_job *j)
{
	const struct generate_try *final = j->final;
	json_t *trace = json_pack(
		"{s:o, s:o, s:O?, s:O, s:{s:I, s:I}, s:O, s:{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}}", "link",
		generate_link_json(j), "evidence", generate_evidence_json(j), "prompt", j->first_prompt, "model_calls",
		j->model_calls, "tokens", "prompt", (json_int_t)j->prompt_tokens, "completion",
		(json_int_t)j->completion_tokens, "fallbacks", j->fallbacks, "timings_ms", "total", j->ms_total, "link",
		j->ms_link, "evidence", j->ms_evidence, "describe", j->ms_describe, "prompt", j->ms_prompt, "generate",
		j->ms_generate, "validate", j->ms_validate, "execute",
		final->v.executed ? final->v.result.elapsed_ms : 0.0);
	if (trace && j->reuse)
		json_object_set(trace, "reuse", j->reuse);
	if (trace && j->values_state[0])
		json_object_set_new(trace, "value_index", json_string(j->values_state));
	if (trace && j->builtin_ran)
		json_object_set_new(trace, "builtin", generate_builtin_json(j));
	if (trace)
		json_object_set_new(trace, "confidence", confidence_trace_json(j));
	if (trace)
		json_object_set_new(trace, "budget",
				    json_pack("{s:I, s:I, s:I}", "time_ms", (json_int_t)j->timeout_ms, "tokens",
					      (json_int_t)j->env->options.token_budget, "tokens_spent",
					      (json_int_t)generate_tokens_spent(j)));
	return trace;
}

json_t *generate_result_json(const struct generate_result *r)
{
	const struct generate_job *j = r->job;
	const struct generate_try *final = j->final;
	/* score: the final statement's validation score, as its "validation" event says (a cached answer streams no event). */
	json_t *out = json_pack("{s:s, s:s, s:s, s:s, s:b, s:i, s:o, s:O, s:b, s:o}", "database", j->rq->db->cfg->name,
				"question", j->rq->question, "sql", final->sql, "dialect", j->schema->engine->name,
				"ok", final->v.failed < 0, "score", final->v.score, "validation", trace_validation_json(&final->v), "corrections",
				j->corrections, "cached", false, "trace", trace_json(j));
	if (out)
		json_object_set_new(out, "budget_exhausted",
				    j->budget_exhausted ? json_string(j->budget_exhausted) : json_null());
	if (out) {
		/* Which generator wrote the SQL, and how sure it is (generate.h, "Generators"). */
		json_object_set_new(out, "generator", json_string(j->generator));
		json_object_set_new(out, "confidence", json_real(round(j->confidence * 1000) / 1000));
		json_object_set_new(out, "confidence_band", json_string(j->confidence_band));
		/* The final SQL in plain English, from its parse tree (pipeline/sql/sql_explain.h). */
		json_object_set_new(out, "explanation",
				    sql_explain_json(final->sql, sql_engine_of(j->schema->engine)->dialect));
		if (j->example_id)
			json_object_set_new(out, "example", json_pack("{s:I, s:f}", "id", (json_int_t)j->example_id,
								      "similarity", j->confidence));
	}
	if (out && j->candidates)
		json_object_set(out, "candidates", j->candidates);
	if (out && j->rq->execute && final->v.executed) {
		json_t *rows = exec_result_json(&final->v.result, &j->exec);
		json_object_update(out, rows);
		json_decref(rows);
	} else if (out) {
		json_object_set_new(out, "chart", json_null()); /* no rows, nothing to draw */
	}
	return out;
}
