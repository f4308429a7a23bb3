/*
 * config_get.c - the typed getters of the config loader (see
 * config_internal.h): each reads one key of a JSON object, checks its type
 * and range, and reports the full key path.
 */
#include "config/config_internal.h"

#include <stdio.h>
#include <string.h>


int conf_bad(struct reader *r, const char *path, const char *what)
{
	return t2s_error_set(r->err, T2S_ERR_INVALID, "config %s: %s", path, what);
}

char *conf_join_path(struct reader *r, const char *parent, const char *key)
{
	return arena_printf(&r->cfg->arena, "%s%s%s", parent, *parent ? "." : "", key);
}

/* Reject any key of obj not in allowed (NULL-terminated). */
int conf_check_keys(struct reader *r, json_t *obj, const char *path, const char *const *allowed)
{
	const char *key;
	json_t *v;
	if (!json_is_object(obj))
		return conf_bad(r, *path ? path : "(top level)", "must be an object");
	json_object_foreach(obj, key, v) {
		int known = 0;
		for (const char *const *a = allowed; *a; a++)
			known |= strcmp(*a, key) == 0;
		if (!known)
			return t2s_error_set(r->err, T2S_ERR_INVALID, "config %s%s%s: unknown key", path,
					     *path ? "." : "", key);
	}
	return 0;
}

int conf_get_string(struct reader *r, json_t *obj, const char *path, const char *key, bool required,
		           const char **out)
{
	json_t *v = json_object_get(obj, key);
	if (!v) {
		if (required)
			return conf_bad(r, conf_join_path(r, path, key), "is required");
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) == 0)
		return conf_bad(r, conf_join_path(r, path, key), "must be a non-empty string");
	*out = arena_strdup(&r->cfg->arena, json_string_value(v));
	return *out ? 0 : -T2S_ERR_NOMEM;
}

int conf_get_long(struct reader *r, json_t *obj, const char *path, const char *key, long min, long max,
		         long *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		char msg[128];
		snprintf(msg, sizeof(msg), "must be an integer between %ld and %ld", min, max);
		return conf_bad(r, conf_join_path(r, path, key), msg);
	}
	*out = (long)json_integer_value(v);
	return 0;
}

int conf_get_int(struct reader *r, json_t *obj, const char *path, const char *key, long min, long max,
		        int *out)
{
	long v = *out;
	int rc = conf_get_long(r, obj, path, key, min, max, &v);
	*out = (int)v;
	return rc;
}

int conf_get_unsigned(struct reader *r, json_t *obj, const char *path, const char *key, long min,
			     long max, unsigned *out)
{
	long v = (long)*out;
	int rc = conf_get_long(r, obj, path, key, min, max, &v);
	*out = (unsigned)v;
	return rc;
}

int conf_get_size(struct reader *r, json_t *obj, const char *path, const char *key, long min, long max,
		         size_t *out)
{
	long v = (long)*out;
	int rc = conf_get_long(r, obj, path, key, min, max, &v);
	*out = (size_t)v;
	return rc;
}

int conf_get_bool(struct reader *r, json_t *obj, const char *path, const char *key, bool *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return conf_bad(r, conf_join_path(r, path, key), "must be true or false");
	*out = json_is_true(v);
	return 0;
}

/* A tri-state boolean: 0 or 1 when given, *out untouched (CONFIG_UNSET) when absent. */
int conf_get_tristate(struct reader *r, json_t *obj, const char *path, const char *key, int *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return 0;
	bool b = false; /* get_bool sets it whenever it returns 0 here; -O3 cannot see that */
	int rc = conf_get_bool(r, obj, path, key, &b);
	if (rc == 0)
		*out = b;
	return rc;
}

int conf_get_double(struct reader *r, json_t *obj, const char *path, const char *key, double min,
		           double max, double *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return 0;
	if (!json_is_number(v) || json_number_value(v) < min || json_number_value(v) > max) {
		char msg[128];
		snprintf(msg, sizeof(msg), "must be a number between %g and %g", min, max);
		return conf_bad(r, conf_join_path(r, path, key), msg);
	}
	*out = json_number_value(v);
	return 0;
}

/* Array of non-empty strings into an arena array; *ret_n set. */
int conf_get_string_array(struct reader *r, json_t *arr, const char *path, const char *const **ret,
			         size_t *ret_n)
{
	if (!json_is_array(arr) || json_array_size(arr) == 0)
		return conf_bad(r, path, "must be a non-empty array of strings");
	size_t n = json_array_size(arr);
	const char **out = arena_calloc(&r->cfg->arena, n, sizeof(*out));
	if (!out)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(arr, i);
		if (!json_is_string(s) || json_string_length(s) == 0)
			return conf_bad(r, arena_printf(&r->cfg->arena, "%s[%zu]", path, i),
				        "must be a non-empty string");
		out[i] = arena_strdup(&r->cfg->arena, json_string_value(s));
	}
	*ret = out;
	*ret_n = n;
	return 0;
}
