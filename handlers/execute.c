/*
 * execute.c - POST /execute {database, sql, max_rows?, big_integers?}: one
 * read-only statement under the guards and limits of pipeline/sql/exec.h
 * (pipeline_execute); the answer names each column's declared type
 * (column_types) and, on request, sends integers JavaScript cannot hold as
 * strings (result_json.h).  Accept: text/csv answers the rows as CSV
 * (result_csv.h); an Accept allowing neither JSON nor CSV is a 406 problem.
 */
#include "handlers/handlers.h"

#include "handlers/request_bodies.h"
#include "handlers/request_json.h"
#include "handlers/result_csv.h"
#include "handlers/result_json.h"
#include "server/audit_request.h"
#include "pipeline/sql/exec_json.h"

void handle_execute(struct http_request *req, struct http_response *res)
{
	const struct config *cfg = req->cfg;
	struct t2s_error err = {0};
	json_t *body = NULL;
	struct execute_body b = {.max_rows = cfg->execution.default_max_rows,
				 .big_as_strings = cfg->execution.big_integers_as_strings};
	struct catalog_db *db;
	struct pipeline_execute result = {0};
	int form = result_csv_negotiate(req, res);
	if (form < 0)
		return;
	if (execute_body_read(req, cfg->execution.max_rows, &b, &body, &err) < 0 ||
	    request_database(req, b.database, &db, &err) < 0 ||
	    pipeline_execute(&req->app->pipeline, db, request_grant(req, db), b.sql, (long)b.max_rows, &result, &err) < 0) {
		if (body && b.database) /* the strings live in body, which a failed read has already freed */
			audit_note_execute(req, b.database, b.sql, -1);
		json_decref(body);
		http_reply_error(res, req, &err);
		return;
	}
	audit_note_execute(req, b.database, b.sql, (long long)result.result.row_count);
	json_decref(body);
	if (form == 1) {
		result_csv_truncated_header(req, res, result.result.truncated_by);
		result_csv_reply(req, res, result.result.columns, result.result.rows, "attachment; filename=\"execute.csv\"");
		pipeline_execute_release(&result);
		return;
	}
	if (b.big_as_strings)
		result_json_stringify_big_integers(result.result.rows);
	http_reply_json(res, 200, exec_result_json(&result.result, &result.limits));
	pipeline_execute_release(&result);
}
