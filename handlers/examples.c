/*
 * examples.c - the stored examples of a database (question, SQL), used by
 * /evidence to show the most similar ones:
 *   GET    /databases/{name}/examples?limit=&offset=
 *   POST   /databases/{name}/examples {question, sql}   (SQL validated first;
 *          201 with Location: /databases/{name}/examples/{id})
 *   GET    /databases/{name}/examples/{id}
 *   DELETE /databases/{name}/examples/{id}
 */
#include "handlers/handlers.h"

#include "handlers/request_json.h"
#include "pipeline/store/state_json.h"

#include <stdlib.h>

void handle_examples_list(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct state_examples list = {0};
	bool ok = true;
	long limit = request_query_long(req, "limit", 100, 1, STATE_LIST_LIMIT_MAX, &ok);
	long offset = request_query_long(req, "offset", 0, 0, 1L << 40, &ok);
	if (!ok)
		t2s_error_set(&err, T2S_ERR_INVALID, "limit must be 1-%ld and offset a non-negative integer",
			      (long)STATE_LIST_LIMIT_MAX);
	if (!ok || request_database(req, req->params[0], &db, &err) < 0 ||
	    pipeline_examples_list(&req->app->pipeline, db, request_grant(req, db), limit, offset, &list, &err) < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	http_reply_json(res, 200, state_examples_page_json(db->cfg->name, &list, limit, offset,
								     req->cfg->limits.max_list_page_bytes));
	pipeline_examples_release(&list);
}

void handle_examples_add(struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = {"question", "sql", NULL};
	struct t2s_error err = {0};
	struct catalog_db *db;
	json_t *body = NULL;
	const char *question = NULL, *sql = NULL;
	struct state_examples one = {0};
	if (request_database(req, req->params[0], &db, &err) < 0 || request_json_object(req, fields, &body, &err) < 0 ||
	    request_json_string(body, "question", true, &question, &err) < 0 ||
	    request_json_string(body, "sql", true, &sql, &err) < 0 ||
	    pipeline_example_add(&req->app->pipeline, db, question, sql, &one, &err) < 0) {
		pipeline_examples_release(&one);
		json_decref(body);
		http_reply_error(res, req, &err);
		return;
	}
	long long id = (long long)one.items[0].id;
	http_reply_json(res, 201, state_example_json(&one.items[0]));
	pipeline_examples_release(&one);
	json_decref(body);
	if (res->status == 201 &&
	    http_reply_header(res, "Location", arena_printf(&req->arena, "/databases/%s/examples/%lld", db->cfg->name,
							     id)) < 0) {
		/* Cannot happen: the only one of HTTP_MAX_EXTRA_HEADERS; the body names the example anyway. */
	}
}

/* The id of path parameter 1, or 0 (with a not-found error) when it is not a positive integer. */
static int64_t example_id(struct http_request *req, struct t2s_error *err)
{
	char *end;
	long long id = strtoll(req->params[1], &end, 10);
	if (*end || id <= 0) {
		t2s_error_set(err, T2S_ERR_NOT_FOUND, "no example with id '%.40s'", req->params[1]);
		return 0;
	}
	return (int64_t)id;
}

void handle_example_get(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct state_examples one = {0};
	int64_t id = example_id(req, &err);
	if (!id || request_database(req, req->params[0], &db, &err) < 0 ||
	    pipeline_example_get(&req->app->pipeline, db, request_grant(req, db), id, &one, &err) < 0)
		http_reply_error(res, req, &err);
	else
		http_reply_json(res, 200, state_example_json(&one.items[0]));
	pipeline_examples_release(&one);
}

void handle_examples_delete(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db;
	int64_t id = example_id(req, &err);
	if (!id || request_database(req, req->params[0], &db, &err) < 0 ||
	    pipeline_example_delete(&req->app->pipeline, db, id, &err) < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	http_reply_json(res, 200, json_pack("{s:s, s:I, s:b}", "database", db->cfg->name, "id", (json_int_t)id, "deleted", 1));
}
