/*
 * databases.c - GET /databases, GET /databases/{name} and
 * POST /databases/{name}/refresh.
 */
#include "handlers/handlers.h"

#include "handlers/request_json.h"
#include "server/auth.h"

#include <string.h>

/* Summary of one database without touching it: the published model and last error. */
static json_t *database_summary(struct catalog_db *db)
{
	struct schema *s = catalog_db_current_schema(db);
	char last_error[T2S_ERROR_MESSAGE_MAX];
	catalog_db_last_error(db, last_error, sizeof(last_error));
	json_t *o = json_pack("{s:s, s:s, s:s}", "name", db->cfg->name, "engine", db_engine_name(db->engine),
			      "status", s && !last_error[0] ? "up" : "down");
	if (s) {
		json_object_set_new(o, "tables", json_integer((json_int_t)s->n_tables));
		json_object_set_new(o, "schema_hash", json_string(s->hash));
		json_object_set_new(o, "introspected_at", json_string(s->introspected_at));
	}
	if (last_error[0])
		json_object_set_new(o, "error", json_string(last_error));
	schema_unref(s);
	return o;
}

void handle_databases_list(struct http_request *req, struct http_response *res)
{
	struct app *app = req->app;
	json_t *list = json_array();
	for (size_t i = 0; i < app->catalog.n_dbs; i++) {
		struct catalog_db *db = &app->catalog.dbs[i];
		if (auth_may_use_database(app->cfg, req->principal, db->cfg->name))
			json_array_append_new(list, database_summary(db));
	}
	http_reply_json(res, 200, json_pack("{s:o}", "databases", list));
}

void handle_database_get(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct schema *s;
	if (request_database(req, req->params[0], &db, &err) < 0 || catalog_db_schema(db, &s, &err) < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	http_reply_json(res, 200, schema_to_json(s));
	schema_unref(s);
}

void handle_database_refresh(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct schema *fresh;
	if (request_database(req, req->params[0], &db, &err) < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	struct schema *old = catalog_db_current_schema(db);
	if (catalog_db_refresh(db, &fresh, &err) < 0) {
		schema_unref(old);
		if (err.code != T2S_ERR_TIMEOUT && err.code != T2S_ERR_NOMEM)
			err.code = T2S_ERR_UNAVAILABLE;
		http_reply_error(res, req, &err);
		return;
	}
	if (req->app->cfg->link.prebuild) /* the indexes follow the new schema */
		column_index_registry_prepare(req->app->links, fresh);
	value_registry_prepare(req->app->values, db, fresh);
	json_t *body = json_pack("{s:s, s:s, s:o, s:b, s:I, s:f}", "name", db->cfg->name, "schema_hash", fresh->hash,
				 "previous_schema_hash", old ? json_string(old->hash) : json_null(), "changed",
				 !old || strcmp(old->hash, fresh->hash) != 0, "tables", (json_int_t)fresh->n_tables,
				 "introspection_ms", fresh->introspect_ms);
	schema_unref(old);
	schema_unref(fresh);
	http_reply_json(res, 200, body);
}
