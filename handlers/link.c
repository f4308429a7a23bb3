/*
 * link.c - POST /link {database, question, evidence?, top_k?, mode?}: the linked
 * schema a question needs (pipeline_link), with scores, reasons, the join
 * scaffold, timings and model calls (link_json.h).
 */
#include "handlers/handlers.h"

#include "handlers/request_bodies.h"
#include "handlers/request_json.h"
#include "pipeline/link/link_json.h"

void handle_link(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	json_t *body = NULL;
	struct link_body b = {.mode = -1};
	struct catalog_db *db;
	struct pipeline_link result = {0};
	if (link_body_read(req, &b, &body, &err) < 0 || request_database(req, b.database, &db, &err) < 0) {
		http_reply_error(res, req, &err);
		json_decref(body);
		return;
	}
	struct pipeline_link_request rq = {.question = b.question, .evidence = b.evidence, .mode = b.mode,
					   .top_k = (int)b.top_k, .features = b.features};
	if (pipeline_link(&req->app->pipeline, db, request_grant(req, db), &rq, &result, &err) < 0)
		http_reply_error(res, req, &err);
	else
		http_reply_json(res, 200,
				link_result_json(b.database, b.question, b.evidence, &result.result, result.built_now));
	pipeline_link_release(&result);
	json_decref(body);
}
