/*
 * execute.c - POST /execute {database, sql, max_rows?, big_integers?}: one
 * read-only statement under the guards and limits of pipeline/exec.h; the
 * answer names each column's declared type (column_types) and, on request,
 * sends integers JavaScript cannot hold as strings (result_json.h).
 */
#include "handlers/handlers.h"

#include "pipeline/sql/exec.h"
#include "handlers/request_bodies.h"
#include "handlers/request_json.h"
#include "handlers/result_json.h"

void handle_execute(struct http_request *req, struct http_response *res)
{
	const struct config *cfg = req->app->cfg;
	struct t2s_error err = {0};
	json_t *body = NULL;
	struct execute_body b = {.max_rows = cfg->execution.default_max_rows,
				 .big_as_strings = cfg->execution.big_integers_as_strings};
	struct catalog_db *db;
	struct exec_result result;
	if (execute_body_read(req, cfg->execution.max_rows, &b, &body, &err) < 0 ||
	    request_database(req, b.database, &db, &err) < 0) {
		json_decref(body);
		http_reply_error(res, req, &err);
		return;
	}
	struct exec_limits lim = app_exec_limits(req->app, (long)b.max_rows);
	if (exec_run(db, b.sql, &lim, &result, &err) < 0) {
		json_decref(body);
		http_reply_error(res, req, &err);
		return;
	}
	json_decref(body);
	if (b.big_as_strings)
		result_json_stringify_big_integers(result.rows);
	json_t *out = json_pack("{s:O, s:O, s:O, s:I, s:b, s:o, s:f, s:{s:I, s:I, s:I}}", "columns", result.columns, "column_types",
				result.column_types ? result.column_types : json_null(), "rows",
				result.rows, "row_count", (json_int_t)result.row_count, "truncated", result.truncated,
				"truncated_by", result.truncated_by ? json_string(result.truncated_by) : json_null(),
				"elapsed_ms", result.elapsed_ms, "limits", "max_rows", (json_int_t)lim.max_rows,
				"timeout_ms", (json_int_t)lim.timeout_ms, "max_result_bytes",
				(json_int_t)lim.max_result_bytes);
	exec_result_release(&result);
	http_reply_json(res, 200, out);
}
