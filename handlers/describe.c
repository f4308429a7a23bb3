/*
 * describe.c - schema descriptions (pipeline/describe/describe_serve.h):
 *   POST /describe {database, tables?}            one description per table and column, with its source
 *   GET  /databases/{name}/descriptions           the user's overrides
 *   PUT  /databases/{name}/descriptions {descriptions: [{table, column?, text|null}]}
 * Overrides live in the state store: they survive refresh and restart and
 * win over generated text.  Model-written descriptions are cached by schema
 * hash in Redis (through the describe stage) and in the state store.
 */
#include "handlers/handlers.h"

#include "pipeline/describe/describe_serve.h"
#include "handlers/request_json.h"

#include <string.h>

static json_t *overrides_json(const struct state_overrides *l)
{
	json_t *a = json_array();
	for (size_t i = 0; i < l->n; i++) {
		const struct state_override *o = &l->items[i];
		json_array_append_new(a, json_pack("{s:s, s:o, s:s, s:s}", "table", o->table, "column",
						   o->column ? json_string(o->column) : json_null(), "text", o->text,
						   "updated_at", o->updated_at));
	}
	return a;
}

static int load_overrides(struct http_request *req, const char *database, struct state_overrides *ret,
			  struct t2s_error *err)
{
	if (!req->app->state)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "the state store is unavailable: %s", req->app->state_error);
	return state_store_overrides_list(req->app->state, database, ret, err);
}

void handle_descriptions_get(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct state_overrides l;
	if (request_database(req, req->params[0], &db, &err) < 0 || load_overrides(req, db->cfg->name, &l, &err) < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	http_reply_json(res, 200, json_pack("{s:s, s:o}", "database", db->cfg->name, "overrides", overrides_json(&l)));
	state_overrides_release(&l);
}

/*
 * Check one {table, column?, text} entry against the schema and, when apply
 * is set, store or delete it.  PUT checks every entry before applying any,
 * so a rejected request changes nothing.
 */
static int put_one(struct http_request *req, const struct schema *s, const char *database, json_t *entry, size_t i,
		   bool apply, struct t2s_error *err)
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
	const char *table = NULL, *column = NULL, *text = NULL;
	if (request_json_string(entry, "table", true, &table, err) < 0 ||
	    request_json_string(entry, "column", false, &column, err) < 0)
		return -T2S_ERR_INVALID;
	json_t *t = json_object_get(entry, "text");
	if (!t || !(json_is_string(t) || json_is_null(t)))
		return t2s_error_set(err, T2S_ERR_INVALID, "descriptions[%zu].text must be a string, or null to remove", i);
	text = json_is_string(t) && json_string_length(t) ? json_string_value(t) : NULL;
	const struct schema_table *tab = schema_find_table(s, table); /* exact API name: stored under it */
	if (!tab)
		return t2s_error_set(err, T2S_ERR_INVALID, "descriptions[%zu]: no table '%.100s' in %s", i, table, database);
	bool found = !column;
	for (size_t c = 0; column && c < tab->n_columns; c++)
		found |= strcmp(tab->columns[c].name, column) == 0;
	if (!found)
		return t2s_error_set(err, T2S_ERR_INVALID, "descriptions[%zu]: no column '%.100s' in table %s", i, column,
				     tab->api_name);
	if (!apply)
		return 0;
	if (!text) {
		int rc = state_store_override_delete(req->app->state, database, tab->api_name, column, err);
		return rc == -T2S_ERR_NOT_FOUND ? 0 : rc;
	}
	return state_store_override_put(req->app->state, database, tab->api_name, column, text, err);
}

void handle_descriptions_put(struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = {"descriptions", NULL};
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct schema *s = NULL;
	json_t *body = NULL;
	struct state_overrides l;
	int rc = request_database(req, req->params[0], &db, &err);
	if (rc == 0)
		rc = request_json_object(req, fields, &body, &err);
	json_t *list = body ? json_object_get(body, "descriptions") : NULL;
	if (rc == 0 && (!json_is_array(list) || json_array_size(list) == 0 || json_array_size(list) > 10000))
		rc = t2s_error_set(&err, T2S_ERR_INVALID, "field 'descriptions' must be an array of 1 to 10000 entries");
	if (rc == 0 && !req->app->state)
		rc = t2s_error_set(&err, T2S_ERR_UNAVAILABLE, "the state store is unavailable: %s", req->app->state_error);
	if (rc == 0)
		rc = catalog_db_schema(db, &s, &err);
	for (size_t i = 0; rc == 0 && i < json_array_size(list); i++)
		rc = put_one(req, s, db->cfg->name, json_array_get(list, i), i, false, &err);
	for (size_t i = 0; rc == 0 && i < json_array_size(list); i++)
		rc = put_one(req, s, db->cfg->name, json_array_get(list, i), i, true, &err);
	if (rc == 0)
		rc = load_overrides(req, db->cfg->name, &l, &err);
	schema_unref(s);
	json_decref(body);
	if (rc < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	http_reply_json(res, 200, json_pack("{s:s, s:o}", "database", db->cfg->name, "overrides", overrides_json(&l)));
	state_overrides_release(&l);
}

/*
 * The names in body's "tables" into *ret (borrowed from body; an entry that
 * is not a string is NULL, which describe_serve rejects in its turn; NULL
 * and 0 when absent or null: every table).  *ret is malloc'd; the caller
 * frees it.
 */
static int requested_tables(json_t *body, const char ***ret, size_t *ret_n, struct t2s_error *err)
{
	json_t *names = json_object_get(body, "tables");
	*ret = NULL;
	*ret_n = 0;
	if (!names || json_is_null(names))
		return 0;
	if (!json_is_array(names) || json_array_size(names) == 0)
		return t2s_error_set(err, T2S_ERR_INVALID, "field 'tables' must be a non-empty array of table names");
	const char **v = calloc(json_array_size(names), sizeof(*v));
	if (!v)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < json_array_size(names); i++)
		v[i] = json_string_value(json_array_get(names, i)); /* NULL when not a string */
	*ret = v;
	*ret_n = json_array_size(names);
	return 0;
}

static json_t *describe_json(const struct schema *s, const struct describe_result *r)
{
	json_t *tables = json_array(), *cur = NULL;
	for (size_t i = 0; i < r->n_items; i++) {
		const struct describe_item *it = &r->items[i];
		const struct schema_table *t = &s->tables[it->table];
		if (it->column < 0) {
			cur = json_pack("{s:s, s:s, s:s, s:[]}", "name", t->api_name,
					"description", it->text, "source", it->source, "columns");
			json_array_append_new(tables, cur);
		} else if (cur) {
			json_array_append_new(json_object_get(cur, "columns"),
					      json_pack("{s:s, s:s, s:s}", "name", t->columns[it->column].name, "description",
							it->text, "source", it->source));
		}
	}
	json_t *errors = json_array();
	for (size_t i = 0; i < r->n_errors; i++)
		json_array_append_new(errors, json_string(r->errors[i]));
	return json_pack("{s:s, s:o, s:i, s:i, s:i, s:{s:I, s:I}, s:o, s:{s:f}}", "schema_hash", s->hash, "tables", tables,
			 "model_calls", r->model_calls, "model_errors", r->model_errors, "cache_hits", r->cache_hits,
			 "tokens", "prompt", (json_int_t)r->prompt_tokens, "completion", (json_int_t)r->completion_tokens,
			 "errors", errors, "timings_ms", "total", r->ms_total);
}

void handle_describe(struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = {"database", "tables", NULL};
	struct app *app = req->app;
	struct t2s_error err = {0};
	json_t *body = NULL;
	const char *database = NULL;
	const char **tables = NULL;
	size_t n_tables = 0;
	struct catalog_db *db;
	struct schema *s = NULL;
	struct describe_result result;
	int rc = request_json_object(req, fields, &body, &err);
	if (rc == 0)
		rc = request_json_string(body, "database", true, &database, &err);
	if (rc == 0)
		rc = request_database(req, database, &db, &err);
	if (rc == 0)
		rc = catalog_db_schema(db, &s, &err);
	if (rc == 0)
		rc = requested_tables(body, &tables, &n_tables, &err);
	/* A store not opened (yet): describe from metadata, as without one. */
	struct state_store *state = app->state && state_store_available(app->state) ? app->state : NULL;
	if (rc == 0) {
		struct describe_request rq = {.schema = s, .tables = tables, .n_tables = n_tables, .state = state,
					      .model = app_model(app, MODEL_STAGE_DESCRIBE), .cache = app->cache,
					      .workers = app->workers};
		rc = describe_serve(&rq, &result, &err);
	}
	if (rc == 0) {
		json_t *out = describe_json(s, &result);
		json_object_set_new(out, "database", json_string(db->cfg->name));
		if (!state || result.state_unavailable)
			json_object_set_new(out, "warning", json_string("state store unavailable: overrides not applied"));
		http_reply_json(res, 200, out);
		describe_result_release(&result);
	} else {
		http_reply_error(res, req, &err);
	}
	free(tables);
	schema_unref(s);
	json_decref(body);
}
