/*
 * evidence_json.h - the one JSON form of an evidence result: the body of
 * POST /evidence, and the "evidence" entry of a /generate answer's trace
 * and of its event stream.
 */
#ifndef T2S_EVIDENCE_JSON_H
#define T2S_EVIDENCE_JSON_H

#include "pipeline/evidence/evidence.h"
#include "pipeline/values/value_index.h"

#include <jansson.h>

/*
 * r (found on schema s) as JSON, a new reference (NULL only when out of
 * memory): database, question, user_evidence (when not NULL), schema_hash,
 * values (with their probes), evidence, examples, partial, value_index
 * (index_state: "ready", "building" or "failed: ..."), value_index_stats
 * (when stats is not NULL), probes, model_calls, tokens, timings_ms,
 * fallbacks.
 */
json_t *evidence_result_json(const char *database, const char *question, const char *user_evidence,
			     const struct schema *s, const struct evidence_result *r, const char *index_state,
			     const struct value_index_stats *stats);

#endif
