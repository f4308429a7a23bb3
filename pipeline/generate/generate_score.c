/*
 * generate_score.c - a step of the job: how far to trust an answer.  A
 * model's statement gets `confidence` from the answer scorer
 * (confidence.h): its features (confidence_features.h, the built-in's
 * independent reading held against it: generate_reading.c) weighed by the
 * weights the configuration chose (generate.confidence_file, else the
 * embedded ones).  The built-in generator's answer keeps its reading's
 * confidence and a stored example's its similarity.  Every answer gets its
 * band.  The same score tells the driver when an answer is already high, so
 * that no further candidate or confirmation turn is spent on it.
 */
#include "pipeline/generate/generate_internal.h"

#include "pipeline/generate/confidence_features.h"
#include "pipeline/models/stage_metrics.h"
#include "pipeline/sql/sql_engine.h"

static const struct confidence_bands *bands_of(const struct generate_env *env)
{
	return env->confidence_bands.high > 0 ? &env->confidence_bands : &confidence_bands_default;
}

static enum sql_dialect dialect_of(const struct generate_job *j)
{
	return sql_engine_of(j->schema->engine)->dialect;
}

/* The scorer's probability for t, its features into f; -1 without a scorer. */
static double score_try(struct generate_job *j, const struct generate_try *t, double f[CONFIDENCE_FEATURES])
{
	const struct confidence_scorer *s = generate_confidence_scorer(j);
	j->crosscheck = generate_reading_check(j, t);
	confidence_features_of(j, t, dialect_of(j), f);
	return s ? confidence_probability(s, f) : -1;
}

double generate_probability(struct generate_job *j, const struct generate_try *t)
{
	double f[CONFIDENCE_FEATURES];
	return t && t->v.executed ? score_try(j, t, f) : -1;
}

bool generate_is_high(struct generate_job *j, const struct generate_try *t)
{
	double f[CONFIDENCE_FEATURES];
	return t && t->v.executed && score_try(j, t, f) >= bands_of(j->env)->high;
}

void generate_score(struct generate_job *j, const struct generate_try *final)
{
	if (!j->generator) {
		j->generator = "model";
		double p = score_try(j, final, j->confidence_features);
		j->scorer = p >= 0 ? generate_confidence_scorer(j) : NULL;
		j->confidence = p >= 0 ? p : 0;
	}
	j->confidence_band = confidence_band(bands_of(j->env), j->confidence);
	stage_metrics_confidence(j->generator, j->confidence);
}
