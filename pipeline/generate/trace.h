/*
 * trace.h - the JSON of each stage's result inside a /generate or /query
 * answer's "trace", and of a validation report.  Every function returns a
 * new reference (NULL only when out of memory).  Names are the API's
 * (schema-qualified outside SQLite's main and PostgreSQL's public).
 */
#ifndef T2S_GENERATE_TRACE_H
#define T2S_GENERATE_TRACE_H

#include "pipeline/evidence/evidence.h"
#include "pipeline/generate/validate.h"
#include "pipeline/link/link.h"
#include "pipeline/models/model_route.h"

#include <jansson.h>

json_t *trace_link_json(const struct link_result *r);
json_t *trace_evidence_json(const struct schema *s, const struct evidence_result *r);
/* [{level, check, ok, severity ("error"|"warning"), detail}] */
json_t *trace_validation_json(const struct validation *v);
/* One model call: {stage, endpoint, outcome, attempts, prompt_tokens, completion_tokens, elapsed_ms}. */
json_t *trace_model_call_json(const char *stage, const struct model_route_attempt *a);

#endif
