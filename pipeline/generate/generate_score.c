/*
 * generate_score.c - a step of the job: how far to trust the answer.  A
 * model's answer gets `confidence` from the answer scorer (confidence.h):
 * its features (confidence_features.h) weighed by the weights the
 * configuration chose (generate.confidence_file, else the embedded ones).
 * The built-in generator's answer keeps its reading's confidence and a
 * stored example's its similarity.  Every answer gets its band.
 */
#include "pipeline/generate/generate_internal.h"

#include "pipeline/generate/confidence_features.h"
#include "pipeline/models/stage_metrics.h"

void generate_score(struct generate_job *j, const struct generate_try *final)
{
	const struct generate_env *env = j->env;
	if (!j->generator) {
		j->generator = "model";
		const struct confidence_scorer *s = env->confidence ? env->confidence : confidence_scorer_builtin(NULL);
		enum sql_dialect d = j->schema->engine == DB_ENGINE_POSTGRES ? SQL_DIALECT_POSTGRES : SQL_DIALECT_SQLITE;
		confidence_features_of(j, final, d, j->confidence_features);
		/* The embedded weights parse (the start refuses a binary whose copy does not): s is never NULL here. */
		j->confidence = s ? confidence_probability(s, j->confidence_features) : 0;
		j->scorer = s;
	}
	const struct confidence_bands *b = env->confidence_bands.high > 0 ? &env->confidence_bands
									  : &confidence_bands_default;
	j->confidence_band = confidence_band(b, j->confidence);
	stage_metrics_confidence(j->generator, j->confidence);
}
