/*
 * builtin_json.h - the built-in generator's claims as JSON: which rule
 * read each word of the question.  One form for the answer's trace
 * (trace.builtin.claims) and for a refusal's problem (builtin.claims).
 */
#ifndef T2S_BUILTIN_JSON_H
#define T2S_BUILTIN_JSON_H

#include "pipeline/builtin/builtin.h"

#include <jansson.h>

/* [{word, rule}] in the question's order, rule null where none read the word; a new reference, NULL when out of
   memory. */
json_t *builtin_claims_json(const struct builtin_result *r);

#endif
