/*
 * audit_request.c - REST requests in the audit log (see audit_request.h).
 */
#include "server/audit_request.h"

#include "server/router.h"

#include <math.h>
#include <string.h>

/* s copied into req's arena (NULL stays NULL; a copy that fails leaves NULL). */
static const char *keep(struct http_request *req, const char *s)
{
	return s ? arena_strdup(&req->arena, s) : NULL;
}

void audit_note_answer(struct http_request *req, const char *database, const char *question, json_t *body)
{
	struct audit_note *n = &req->audit;
	n->database = keep(req, database);
	n->question = keep(req, question);
	n->sql = keep(req, json_string_value(json_object_get(body, "sql")));
	n->generator = keep(req, json_string_value(json_object_get(body, "generator")));
	json_t *rows = json_object_get(body, "row_count");
	n->has_rows = json_is_integer(rows);
	n->rows = n->has_rows ? (long long)json_integer_value(rows) : 0;
	json_t *c = json_object_get(body, "confidence");
	n->has_confidence = json_is_number(c);
	n->confidence = n->has_confidence ? json_number_value(c) : 0;
}

void audit_note_execute(struct http_request *req, const char *database, const char *sql, long long rows)
{
	req->audit.database = keep(req, database);
	req->audit.sql = keep(req, sql);
	req->audit.has_rows = rows >= 0;
	req->audit.rows = rows;
}

void audit_note_database(struct http_request *req, const char *database)
{
	req->audit.database = keep(req, database);
}

void audit_note_admin_write(struct http_request *req)
{
	req->audit.admin_write = true;
}

void audit_note_status(struct http_request *req, int status)
{
	req->audit.status = status;
}

/* The action of req's route in the audit log, or NULL when it is not audited. */
static const char *action_of(const struct http_request *req)
{
	const struct route *r = req->route;
	if (!r)
		return NULL;
	if (strcmp(r->method, "POST") == 0) {
		if (strcmp(r->pattern, "/query") == 0 || strcmp(r->pattern, "/query/stream") == 0)
			return "query";
		if (strcmp(r->pattern, "/generate") == 0)
			return "generate";
		if (strcmp(r->pattern, "/execute") == 0)
			return "execute";
	}
	if (((r->scope & API_SCOPE_ADMIN) && strcmp(r->method, "GET") != 0) || req->audit.admin_write)
		return "admin";
	return NULL;
}

const char *audit_caller(const struct http_request *req)
{
	return req->principal ? req->principal->name : req->cfg->auth.enabled ? NULL : "anonymous";
}

void audit_request_done(struct http_request *req, int status, double elapsed_ms)
{
	const char *action = audit_enabled() ? action_of(req) : NULL;
	if (!action)
		return;
	const struct audit_note *n = &req->audit;
	struct audit_entry e = {
		.request_id = req->request_id,
		.caller = audit_caller(req),
		.action = action,
		.method = req->method,
		.route = req->route->pattern,
		.database = n->database ? n->database : req->params[0] && strstr(req->route->pattern, "{name}")
								 ? req->params[0]
								 : NULL,
		.question = n->question,
		.sql = n->sql,
		.generator = n->generator,
		.status = n->status > 0 && status == 200 ? n->status : status,
		.rows = n->has_rows ? n->rows : -1,
		.elapsed_ms = elapsed_ms,
		.confidence = n->has_confidence ? n->confidence : NAN,
	};
	audit_write(&e);
}
