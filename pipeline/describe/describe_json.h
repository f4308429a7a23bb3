/*
 * describe_json.h - the one JSON form of a describe result: the body of
 * POST /describe, and the "describe" event of a streamed /query.
 */
#ifndef T2S_DESCRIBE_JSON_H
#define T2S_DESCRIBE_JSON_H

#include "pipeline/describe/describe.h"

#include <jansson.h>
#include <stdbool.h>

/*
 * r (about schema s) as JSON, a new reference (NULL only when out of
 * memory): database, schema_hash, tables [{name, description, source,
 * columns [{name, description, source}]}], model_calls, model_errors,
 * cache_hits, tokens, errors, timings_ms and, when overrides_missing, a
 * warning that the state store's overrides were not applied.
 */
json_t *describe_result_json(const char *database, const struct schema *s, const struct describe_result *r,
			     bool overrides_missing);

#endif
