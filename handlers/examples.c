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

#include <stdlib.h>

/* The state store, or a 503 problem when it could not be opened. */
static struct state_store *state_or_fail(struct http_request *req, struct t2s_error *err)
{
	if (!req->app->state)
		t2s_error_set(err, T2S_ERR_UNAVAILABLE, "the state store is unavailable: %s", req->app->state_error);
	return req->app->state;
}

static json_t *example_json(const struct state_example *e)
{
	return json_pack("{s:I, s:s, s:s, s:s}", "id", (json_int_t)e->id, "question", e->question, "sql",
			 e->sql ? e->sql : "", "created_at", e->created_at);
}

void handle_examples_list(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct state_store *st;
	struct state_examples list;
	bool ok = true;
	long limit = request_query_long(req, "limit", 100, 1, STATE_LIST_LIMIT_MAX, &ok);
	long offset = request_query_long(req, "offset", 0, 0, 1L << 40, &ok);
	if (!ok)
		t2s_error_set(&err, T2S_ERR_INVALID, "limit must be 1-%ld and offset a non-negative integer",
			      (long)STATE_LIST_LIMIT_MAX);
	if (!ok || request_database(req, req->params[0], &db, &err) < 0 || !(st = state_or_fail(req, &err)) ||
	    state_store_examples_list(st, db->cfg->name, limit, offset, &list, &err) < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	json_t *items = json_array();
	for (size_t i = 0; i < list.n; i++)
		json_array_append_new(items, example_json(&list.items[i]));
	json_t *out = json_pack("{s:s, s:o, s:I, s:i, s:i}", "database", db->cfg->name, "examples", items, "total",
				(json_int_t)list.total, "limit", (int)limit, "offset", (int)offset);
	state_examples_release(&list);
	http_reply_json(res, 200, out);
}

void handle_examples_add(struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = {"question", "sql", NULL};
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct state_store *st;
	json_t *body = NULL;
	const char *question = NULL, *sql = NULL;
	int64_t id;
	struct exec_limits lim = app_exec_limits(req->app, 1);
	if (request_database(req, req->params[0], &db, &err) < 0 || request_json_object(req, fields, &body, &err) < 0 ||
	    request_json_string(body, "question", true, &question, &err) < 0 ||
	    request_json_string(body, "sql", true, &sql, &err) < 0 || !(st = state_or_fail(req, &err)) ||
	    exec_validate(db, sql, &lim, &err) < 0 ||
	    state_store_example_add(st, db->cfg->name, question, sql, &id, &err) < 0) {
		json_decref(body);
		http_reply_error(res, req, &err);
		return;
	}
	struct state_examples one;
	if (state_store_example_get(st, db->cfg->name, id, &one, &err) < 0 || one.n != 1) {
		json_decref(body);
		if (err.code == T2S_OK)
			t2s_error_set(&err, T2S_ERR_INTERNAL, "stored example %lld not found", (long long)id);
		http_reply_error(res, req, &err);
		return;
	}
	json_t *out = example_json(&one.items[0]);
	state_examples_release(&one);
	json_decref(body);
	http_reply_json(res, 201, out);
	if (res->status == 201)
		http_reply_header(res, "Location", arena_printf(&req->arena, "/databases/%s/examples/%lld", db->cfg->name,
								(long long)id));
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
	struct state_store *st;
	struct state_examples one = {0};
	int64_t id = example_id(req, &err);
	if (!id || request_database(req, req->params[0], &db, &err) < 0 || !(st = state_or_fail(req, &err)) ||
	    state_store_example_get(st, db->cfg->name, id, &one, &err) < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	if (one.n != 1) {
		state_examples_release(&one);
		t2s_error_set(&err, T2S_ERR_NOT_FOUND, "no example with id %lld", (long long)id);
		http_reply_error(res, req, &err);
		return;
	}
	json_t *out = example_json(&one.items[0]);
	state_examples_release(&one);
	http_reply_json(res, 200, out);
}

void handle_examples_delete(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct state_store *st;
	char *end;
	long long id = strtoll(req->params[1], &end, 10);
	if (*end || id <= 0)
		t2s_error_set(&err, T2S_ERR_NOT_FOUND, "no example with id '%.40s'", req->params[1]);
	if (*end || id <= 0 || request_database(req, req->params[0], &db, &err) < 0 || !(st = state_or_fail(req, &err)) ||
	    state_store_example_delete(st, db->cfg->name, (int64_t)id, &err) < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	http_reply_json(res, 200, json_pack("{s:s, s:I, s:b}", "database", db->cfg->name, "id", (json_int_t)id, "deleted", 1));
}
