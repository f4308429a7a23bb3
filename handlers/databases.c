/*
 * databases.c - GET /databases, GET /databases/{name} and
 * POST /databases/{name}/refresh (pipeline_refresh: the indexes follow the
 * new schema).
 */
#include "handlers/handlers.h"

#include "handlers/request_json.h"
#include "pipeline/pipeline_json.h"
#include "server/auth.h"

void handle_databases_list(struct http_request *req, struct http_response *res)
{
	struct pipeline *p = &req->app->pipeline;
	json_t *list = json_array();
	const struct catalog_list *dbs = pipeline_databases(p);
	for (size_t i = 0; i < dbs->n; i++) {
		struct catalog_db *db = dbs->dbs[i];
		if (auth_may_use_database(req->cfg, req->principal, db->cfg->name))
			json_array_append_new(list, pipeline_database_summary_json(db, request_grant(req, db)));
	}
	http_reply_json(res, 200, json_pack("{s:o}", "databases", list));
}

void handle_database_get(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db;
	char *text = NULL;
	size_t len = 0;
	if (request_database(req, req->params[0], &db, &err) < 0 ||
	    pipeline_database_schema_json(db, request_grant(req, db), &text, &len, &err) < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	http_reply_json_text(res, 200, text, len); /* it owns text; NULL (out of memory) answers 500 */
}

void handle_database_refresh(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct pipeline_refresh r = {0};
	if (request_database(req, req->params[0], &db, &err) < 0 ||
	    pipeline_refresh(&req->app->pipeline, db, &r, &err) < 0)
		http_reply_error(res, req, &err);
	else
		http_reply_json(res, 200, pipeline_refresh_json(&r));
	pipeline_refresh_release(&r);
}
