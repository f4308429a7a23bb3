/*
 * result_json.h - how result rows are rendered for browsers: integers that
 * JavaScript cannot hold exactly (beyond +-(2^53 - 1), Number.MAX_SAFE_INTEGER)
 * may be sent as decimal strings.
 *
 * The choice is execution.big_integers in the config ("number", the default:
 * JSON numbers exactly as stored, which JSON.parse rounds; or "string"),
 * overridden per request by /execute's `big_integers` and /query's
 * `options.big_integers`.  Only integers outside the safe range change; the
 * others stay numbers, and column_types still names the declared type.
 */
#ifndef T2S_RESULT_JSON_H
#define T2S_RESULT_JSON_H

#include "common/contract.h"
#include "server/http.h"

#include <jansson.h>
#include <stdbool.h>

#define JS_MAX_SAFE_INTEGER 9007199254740991LL

/*
 * Read the optional field key of obj ("number" or "string") into *ret, which
 * holds the config's default on entry; -T2S_ERR_INVALID naming field_path otherwise.
 */
T2S_MUST_CHECK
int result_json_big_integers(json_t *obj, const char *key, const char *field_path, bool *ret, struct t2s_error *err);

/* Replace, in rows (an array of arrays), every integer beyond the safe range by its decimal string. */
void result_json_stringify_big_integers(json_t *rows);

#endif
