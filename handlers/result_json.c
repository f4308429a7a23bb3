/*
 * result_json.c - big integers of result rows as strings (see result_json.h).
 */
#include "handlers/result_json.h"

#include <stdio.h>
#include <string.h>

int result_json_big_integers(json_t *obj, const char *key, const char *field_path, bool *ret, struct t2s_error *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	const char *s = json_string_value(v);
	if (!s || (strcmp(s, "number") != 0 && strcmp(s, "string") != 0))
		return t2s_error_set(err, T2S_ERR_INVALID, "field '%s' must be \"number\" or \"string\"", field_path);
	*ret = strcmp(s, "string") == 0;
	return 0;
}

void result_json_stringify_big_integers(json_t *rows)
{
	size_t i, j;
	json_t *row, *cell;
	json_array_foreach(rows, i, row) {
		json_array_foreach(row, j, cell) {
			if (!json_is_integer(cell))
				continue;
			json_int_t n = json_integer_value(cell);
			if (n >= -JS_MAX_SAFE_INTEGER && n <= JS_MAX_SAFE_INTEGER)
				continue;
			char text[32];
			snprintf(text, sizeof(text), "%lld", (long long)n);
			json_array_set_new(row, j, json_string(text));
		}
	}
}
