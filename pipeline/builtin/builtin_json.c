/*
 * builtin_json.c - the built-in generator's claims as JSON (builtin_json.h).
 */
#include "pipeline/builtin/builtin_json.h"

json_t *builtin_claims_json(const struct builtin_result *r)
{
	json_t *claims = json_array();
	for (size_t i = 0; claims && i < r->n_claims; i++)
		if (json_array_append_new(claims, json_pack("{s:s, s:s?}", "word", r->claims[i].word, "rule",
							    r->claims[i].rule)) < 0) {
			json_decref(claims);
			return NULL;
		}
	return claims;
}
