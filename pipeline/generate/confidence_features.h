/*
 * confidence_features.h - the answer scorer's features (confidence.h)
 * read off a finished job (generate_job.h).  A helper at the bottom of the
 * job's files: it calls no step.
 */
#ifndef T2S_GENERATE_CONFIDENCE_FEATURES_H
#define T2S_GENERATE_CONFIDENCE_FEATURES_H

#include "pipeline/generate/confidence.h"
#include "pipeline/generate/generate_job.h"
#include "pipeline/sql/sql_analyze.h"

#include <jansson.h>

/*
 * Fill f with the features of final, the job's answer (one of j->tries),
 * whose SQL is in dialect d.  Reads j (its tries, corrections, question,
 * cross-check), never changes it.  A statement the analyzer cannot parse
 * leaves its shape features 0.
 */
void confidence_features_of(const struct generate_job *j, const struct generate_try *final, enum sql_dialect d,
			    double f[CONFIDENCE_FEATURES]);
/* {name: value} of every feature, for the trace; a new reference (NULL when out of memory). */
json_t *confidence_features_json(const double f[CONFIDENCE_FEATURES]);

#endif
