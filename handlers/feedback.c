/*
 * feedback.c - users' verdicts on answers:
 *   POST /feedback {database, question, sql, correct, note?}
 *        correct: true  - the SQL is validated like any stored example
 *                         (POST /databases/{name}/examples) and the pair
 *                         becomes an example, which /evidence and generation
 *                         then show for similar questions;
 *                         It needs the scope admin (403 without it: an
 *                         example changes what every key's prompts say);
 *        correct: false - kept for review, SQL not run nor validated
 *                         (scope query).
 *        201 with Location: /feedback/{id}.
 *   GET  /feedback?database=&correct=&limit=&offset=   (review list; scope admin)
 *   GET  /feedback/{id}
 * A key limited to some databases sees only their feedback and must name
 * one in GET /feedback.  Counters: text2sqld_feedback_total{verdict} and
 * text2sqld_feedback_rejected_total (correct verdicts whose SQL failed
 * validation).
 */
#include "handlers/handlers.h"

#include "handlers/request_json.h"
#include "server/audit_request.h"
#include "pipeline/store/state_json.h"
#include "server/auth.h"

#include <stdlib.h>
#include <string.h>

void handle_feedback_add(struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = {"database", "question", "sql", "correct", "note", NULL};
	struct t2s_error err = {0};
	json_t *body = NULL;
	const char *database = NULL, *question = NULL, *sql = NULL, *note = NULL;
	struct catalog_db *db = NULL;
	struct state_feedbacks one = {0};
	int rc = request_json_object(req, fields, &body, &err);
	if (rc == 0)
		rc = request_json_string(body, "database", true, &database, &err);
	if (rc == 0)
		rc = request_json_string(body, "question", true, &question, &err);
	if (rc == 0)
		rc = request_json_string(body, "sql", true, &sql, &err);
	json_t *correct = body ? json_object_get(body, "correct") : NULL;
	if (rc == 0 && !json_is_boolean(correct))
		rc = t2s_error_set(&err, T2S_ERR_INVALID, "field 'correct' is required and must be true or false");
	if (rc == 0 && json_object_get(body, "note") && !json_is_null(json_object_get(body, "note")))
		rc = request_json_string(body, "note", false, &note, &err);
	if (rc == 0)
		rc = request_database(req, database, &db, &err);
	/* A correct verdict stores an example every key's prompts then show: administering (routes.c). */
	if (rc == 0 && json_is_true(correct) && !auth_has_scope(req->cfg, req->principal, API_SCOPE_ADMIN)) {
		json_decref(body);
		auth_reply_missing_scope(res, req, API_SCOPE_ADMIN);
		return;
	}
	if (rc == 0 && json_is_true(correct)) { /* an admin write: in the audit log */
		audit_note_admin_write(req);
		audit_note_answer(req, database, question, NULL);
		audit_note_execute(req, database, sql, -1);
	}
	if (rc == 0)
		rc = pipeline_feedback_add(&req->app->pipeline, db, question, sql, json_is_true(correct), note, &one, &err);
	json_decref(body);
	if (rc < 0) {
		pipeline_feedbacks_release(&one);
		http_reply_error(res, req, &err);
		return;
	}
	long long id = (long long)one.items[0].id;
	http_reply_json(res, 201, state_feedback_json(&one.items[0]));
	pipeline_feedbacks_release(&one);
	if (res->status == 201 &&
	    http_reply_header(res, "Location", arena_printf(&req->arena, "/feedback/%lld", id)) < 0) {
		/* Cannot happen: the only one of HTTP_MAX_EXTRA_HEADERS; the body names the feedback anyway. */
	}
}

void handle_feedback_list(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db = NULL;
	struct state_feedbacks list = {0};
	bool ok = true;
	long limit = request_query_long(req, "limit", 100, 1, STATE_LIST_LIMIT_MAX, &ok);
	long offset = request_query_long(req, "offset", 0, 0, 1L << 40, &ok);
	const char *database = request_query_arg(req, "database"), *correct_s = request_query_arg(req, "correct");
	int correct = -1;
	if (correct_s && strcmp(correct_s, "true") == 0)
		correct = 1;
	else if (correct_s && strcmp(correct_s, "false") == 0)
		correct = 0;
	else if (correct_s)
		ok = false;
	int rc = 0;
	if (!ok)
		rc = t2s_error_set(&err, T2S_ERR_INVALID,
				   "limit must be 1-%ld, offset a non-negative integer, correct true or false",
				   (long)STATE_LIST_LIMIT_MAX);
	if (rc == 0 && database)
		rc = request_database(req, database, &db, &err);
	if (rc == 0 && !database && req->principal && !req->principal->all_databases)
		rc = t2s_error_set(&err, T2S_ERR_INVALID,
				   "this API key reaches only some databases: name one with ?database=");
	if (rc == 0)
		rc = pipeline_feedback_list(&req->app->pipeline, db ? db->cfg->name : NULL, correct, limit, offset, &list,
					    &err);
	if (rc < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	http_reply_json(res, 200, state_feedbacks_page_json(&list, limit, offset, req->cfg->limits.max_list_page_bytes));
	pipeline_feedbacks_release(&list);
}

void handle_feedback_get(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct state_feedbacks one = {0};
	char *end;
	long long id = strtoll(req->params[0], &end, 10);
	int rc = 0;
	if (*end || id <= 0)
		rc = t2s_error_set(&err, T2S_ERR_NOT_FOUND, "no feedback with id '%.40s'", req->params[0]);
	if (rc == 0)
		rc = pipeline_feedback_get(&req->app->pipeline, (int64_t)id, &one, &err);
	/* Another database's feedback is as absent as a missing one for a key that may not use it. */
	if (rc == 0 && !auth_may_use_database(req->cfg, req->principal, one.items[0].database))
		rc = t2s_error_set(&err, T2S_ERR_NOT_FOUND, "no feedback with id %lld", id);
	if (rc == 0)
		rc = request_database(req, one.items[0].database, &db, &err);
	if (rc < 0) {
		pipeline_feedbacks_release(&one);
		http_reply_error(res, req, &err);
		return;
	}
	http_reply_json(res, 200, state_feedback_json(&one.items[0]));
	pipeline_feedbacks_release(&one);
}
