/*
 * describe.c - schema descriptions (pipeline_describe, describe_json.h):
 *   POST /describe {database, tables?}            one description per table and column, with its source
 *   GET  /databases/{name}/descriptions           the user's overrides
 *   PUT  /databases/{name}/descriptions {descriptions: [{table, column?, text|null}]}
 * Overrides live in the state store: they survive refresh and restart and
 * win over generated text.  Model-written descriptions are cached by schema
 * hash in Redis (through the describe stage) and in the state store.
 */
#include "handlers/handlers.h"

#include "handlers/request_json.h"
#include "pipeline/describe/describe_json.h"
#include "pipeline/store/state_json.h"

#include <stdlib.h>
#include <string.h>

void handle_descriptions_get(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct state_overrides l = {0};
	if (request_database(req, req->params[0], &db, &err) < 0 ||
	    pipeline_overrides_list(&req->app->pipeline, db, request_grant(req, db), &l, &err) < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	http_reply_json(res, 200, state_overrides_json(db->cfg->name, &l));
	pipeline_overrides_release(&l);
}

/* Entry i of a PUT: {table, column?, text} with text a string, or null to remove. */
static int read_override(json_t *entry, size_t i, struct pipeline_override *ret, struct t2s_error *err)
{
	static const char *const fields[] = {"table", "column", "text", NULL};
	const char *key;
	json_t *v;
	if (!json_is_object(entry))
		return t2s_error_set(err, T2S_ERR_INVALID, "descriptions[%zu] must be an object", i);
	json_object_foreach(entry, key, v) {
		bool known = false;
		for (const char *const *f = fields; *f; f++)
			known |= strcmp(*f, key) == 0;
		if (!known)
			return t2s_error_set(err, T2S_ERR_INVALID, "descriptions[%zu]: unknown field '%.60s'", i, key);
	}
	*ret = (struct pipeline_override){0};
	if (request_json_string(entry, "table", true, &ret->table, err) < 0 ||
	    request_json_string(entry, "column", false, &ret->column, err) < 0)
		return -T2S_ERR_INVALID;
	json_t *t = json_object_get(entry, "text");
	if (!t || !(json_is_string(t) || json_is_null(t)))
		return t2s_error_set(err, T2S_ERR_INVALID, "descriptions[%zu].text must be a string, or null to remove", i);
	ret->text = json_is_string(t) && json_string_length(t) ? json_string_value(t) : NULL;
	return 0;
}

void handle_descriptions_put(struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = {"descriptions", NULL};
	struct t2s_error err = {0};
	struct catalog_db *db;
	json_t *body = NULL;
	struct pipeline_override *items = NULL;
	struct state_overrides l = {0};
	int rc = request_database(req, req->params[0], &db, &err);
	if (rc == 0)
		rc = request_json_object(req, fields, &body, &err);
	json_t *list = body ? json_object_get(body, "descriptions") : NULL;
	size_t n = json_array_size(list);
	if (rc == 0 && (!json_is_array(list) || n == 0 || n > 10000))
		rc = t2s_error_set(&err, T2S_ERR_INVALID, "field 'descriptions' must be an array of 1 to 10000 entries");
	if (rc == 0 && !(items = arena_calloc(&req->arena, n, sizeof(*items))))
		rc = t2s_error_set(&err, T2S_ERR_NOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = read_override(json_array_get(list, i), i, &items[i], &err);
	if (rc == 0)
		rc = pipeline_overrides_put(&req->app->pipeline, db, items, n, &l, &err);
	if (rc < 0)
		http_reply_error(res, req, &err);
	else
		http_reply_json(res, 200, state_overrides_json(db->cfg->name, &l));
	pipeline_overrides_release(&l);
	json_decref(body);
}

/*
 * The names in body's "tables" into *ret (borrowed from body; an entry that
 * is not a string is NULL, which describe_serve rejects in its turn; NULL
 * and 0 when absent or null: every table), allocated in arena.
 */
static int requested_tables(json_t *body, struct arena *arena, const char ***ret, size_t *ret_n, struct t2s_error *err)
{
	json_t *names = json_object_get(body, "tables");
	*ret = NULL;
	*ret_n = 0;
	if (!names || json_is_null(names))
		return 0;
	if (!json_is_array(names) || json_array_size(names) == 0)
		return t2s_error_set(err, T2S_ERR_INVALID, "field 'tables' must be a non-empty array of table names");
	const char **v = arena_calloc(arena, json_array_size(names), sizeof(*v));
	if (!v)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < json_array_size(names); i++)
		v[i] = json_string_value(json_array_get(names, i)); /* NULL when not a string */
	*ret = v;
	*ret_n = json_array_size(names);
	return 0;
}

void handle_describe(struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = {"database", "tables", NULL};
	struct t2s_error err = {0};
	json_t *body = NULL;
	const char *database = NULL;
	const char **tables = NULL;
	size_t n_tables = 0;
	struct catalog_db *db;
	struct pipeline_describe result = {0};
	int rc = request_json_object(req, fields, &body, &err);
	if (rc == 0)
		rc = request_json_string(body, "database", true, &database, &err);
	if (rc == 0)
		rc = request_database(req, database, &db, &err);
	if (rc == 0)
		rc = pipeline_database_check(db, &err); /* an unknown database before a bad list */
	if (rc == 0)
		rc = requested_tables(body, &req->arena, &tables, &n_tables, &err);
	if (rc == 0)
		rc = pipeline_describe(&req->app->pipeline, db, request_grant(req, db), tables, n_tables, &result, &err);
	if (rc == 0)
		http_reply_json(res, 200,
				describe_result_json(db->cfg->name, result.schema, &result.result, result.overrides_missing));
	else
		http_reply_error(res, req, &err);
	pipeline_describe_release(&result);
	json_decref(body);
}
