/*
 * generate_json.h - the one JSON form of the main job's answer: the body of
 * POST /generate and POST /query (and of a streamed query's "result").
 */
#ifndef T2S_GENERATE_JSON_H
#define T2S_GENERATE_JSON_H

#include "pipeline/generate/generate.h"

#include <jansson.h>

/*
 * r as the response body, a new reference (NULL only when out of memory):
 * database, question, sql, dialect, ok, validation, corrections, cached
 * (false), budget_exhausted, candidates (with several), the trace (each
 * stage's result as its own renderer writes it: link_json.h,
 * evidence_json.h; the prompt, model calls, tokens, fallbacks, timings,
 * budget) and, for /query, the rows (exec_json.h).
 */
json_t *generate_result_json(const struct generate_result *r);

#endif
