/*
 * trace.h - the JSON of a validation report and of one model call, as a
 * /generate or /query answer and its trace show them.  Every function
 * returns a new reference (NULL only when out of memory).  (The stages'
 * results have their own renderers beside them: link_json.h,
 * evidence_json.h, describe_json.h, exec_json.h.)
 */
#ifndef T2S_GENERATE_TRACE_H
#define T2S_GENERATE_TRACE_H

#include "pipeline/generate/validation.h"
#include "pipeline/models/model_route.h"

#include <jansson.h>

/* [{level, check, ok, severity ("error"|"warning"), detail}] */
json_t *trace_validation_json(const struct validation *v);
/* One model call: {stage, endpoint, outcome, attempts, prompt_tokens, completion_tokens, elapsed_ms}. */
json_t *trace_model_call_json(const char *stage, const struct model_route_attempt *a);

#endif
