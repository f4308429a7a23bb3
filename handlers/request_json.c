/*
 * request_json.c - strict request body reading (see request_json.h).
 */
#include "handlers/request_json.h"
#include "common/limits.h"

#include "server/auth.h"

#include <stdlib.h>
#include <string.h>

int request_json_object(struct http_request *req, const char *const *allowed, json_t **ret, struct t2s_error *err)
{
	if (req->body.len == 0)
		return t2s_error_set(err, T2S_ERR_INVALID, "request body is empty; a JSON object is expected");
	json_error_t jerr;
	json_t *obj = json_loadb(req->body.buf, req->body.len, JSON_REJECT_DUPLICATES, &jerr);
	if (!obj)
		return t2s_error_set(err, T2S_ERR_INVALID, "request body is not valid JSON: %s at line %d column %d",
				     jerr.text, jerr.line, jerr.column);
	if (!json_is_object(obj)) {
		json_decref(obj);
		return t2s_error_set(err, T2S_ERR_INVALID, "request body must be a JSON object");
	}
	int rc = request_json_fields(obj, NULL, allowed, err);
	if (rc < 0) {
		json_decref(obj);
		return rc;
	}
	*ret = obj;
	return 0;
}

int request_json_fields(json_t *obj, const char *path, const char *const *allowed, struct t2s_error *err)
{
	if (!json_is_object(obj))
		return t2s_error_set(err, T2S_ERR_INVALID, "field '%s' must be an object", path ? path : "(body)");
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		bool known = false;
		for (const char *const *a = allowed; *a && !known; a++)
			known = strcmp(*a, key) == 0;
		if (!known)
			return path ? t2s_error_set(err, T2S_ERR_INVALID, "unknown field '%s.%.100s'", path, key)
				    : t2s_error_set(err, T2S_ERR_INVALID, "unknown field '%.100s'", key);
	}
	return 0;
}

int request_json_string(json_t *obj, const char *key, bool required, const char **ret, struct t2s_error *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v)) {
		if (required)
			return t2s_error_set(err, T2S_ERR_INVALID, "field '%s' is required", key);
		return 0;
	}
	if (!json_is_string(v))
		return t2s_error_set(err, T2S_ERR_INVALID, "field '%s' must be a string", key);
	if (json_string_length(v) == 0)
		return t2s_error_set(err, T2S_ERR_INVALID, "field '%s' must not be empty", key);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return t2s_error_set(err, T2S_ERR_INVALID, "field '%s' must not contain NUL characters", key);
	*ret = json_string_value(v);
	return 0;
}

int request_json_text(json_t *obj, const char *key, bool required, const char **ret, struct t2s_error *err)
{
	int rc = request_json_string(obj, key, required, ret, err);
	if (rc == 0 && *ret && strlen(*ret) > T2S_QUESTION_MAX_BYTES)
		rc = t2s_error_set(err, T2S_ERR_INVALID, "field '%s' is longer than %d bytes", key, T2S_QUESTION_MAX_BYTES);
	return rc;
}

int request_json_int(json_t *obj, const char *key, long long min, long long max, long long *ret,
		     struct t2s_error *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return t2s_error_set(err, T2S_ERR_INVALID, "field '%s' must be an integer", key);
	long long n = json_integer_value(v);
	if (n < min || n > max)
		return t2s_error_set(err, T2S_ERR_INVALID, "field '%s' must be between %lld and %lld", key, min, max);
	*ret = n;
	return 0;
}

int request_json_bool(json_t *obj, const char *key, bool *ret, struct t2s_error *err)
{
	json_t *v = json_object_get(obj, key);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return t2s_error_set(err, T2S_ERR_INVALID, "field '%s' must be true or false", key);
	*ret = json_is_true(v);
	return 0;
}

int request_database(struct http_request *req, const char *name, struct catalog_db **ret, struct t2s_error *err)
{
	struct catalog_db *db = pipeline_database_find(&req->app->pipeline, name);
	/* A database the key may not use is answered exactly like a missing one: no existence oracle. */
	if (!db || !auth_may_use_database(req->cfg, req->principal, name))
		return t2s_error_set(err, T2S_ERR_NOT_FOUND, "no database named '%.100s' is registered", name);
	*ret = db;
	return 0;
}

const char *request_query_arg(struct http_request *req, const char *name)
{
	return http_request_query(req, name);
}

long request_query_long(struct http_request *req, const char *name, long dflt, long min, long max, bool *ok)
{
	const char *v = request_query_arg(req, name);
	if (!v)
		return dflt;
	char *end;
	long n = strtol(v, &end, 10);
	if (*v == '\0' || *end || n < min || n > max)
		*ok = false;
	return n;
}

const struct schema_grant *request_grant(struct http_request *req, const struct catalog_db *db)
{
	static const struct schema_grant no_table = {.key = "out-of-memory:no-table"};
	const struct config_api_key *p = req->principal;
	for (size_t i = 0; p && i < p->n_table_grants; i++) {
		const struct config_table_grant *t = &p->table_grants[i];
		if (strcmp(t->database, db->cfg->name) != 0)
			continue;
		struct schema_grant *g = arena_calloc(&req->arena, 1, sizeof(*g));
		if (!g || pipeline_grant_init(g, t->tables, t->n_tables) < 0)
			return &no_table;
		return g;
	}
	return NULL;
}
