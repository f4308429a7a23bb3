/*
 * mcp_calls.c - the MCP tools run through the service layer exactly as
 * their REST routes do: the same argument readers (request_bodies.h), the
 * same database lookup for the key (request_json.h), the same pipeline
 * entry points and renderers.  A tool's answer is a CallToolResult whose
 * structuredContent is the REST answer (query's without its trace, a
 * debugging view) and whose one text block is that JSON; a failure is
 * isError with the route's problem body as the text.
 *
 *   list_databases     GET /v1/databases
 *   describe_database  GET /v1/databases/{name} and POST /v1/describe, merged:
 *                      each table and column with its description
 *   query              POST /v1/query (the answer cache is shared with it)
 *   execute            POST /v1/execute
 */
#include "handlers/mcp.h"

#include "handlers/request_bodies.h"
#include "handlers/request_observer.h"
#include "handlers/request_json.h"
#include "handlers/result_json.h"
#include "pipeline/describe/describe_json.h"
#include "pipeline/pipeline_json.h"
#include "pipeline/sql/exec_json.h"
#include "server/auth.h"
#include "server/http_stream.h"

#include <stdlib.h>
#include <string.h>

/* A successful result carrying structured (stolen) and its text. */
static json_t *tool_result(json_t *structured)
{
	char *text = structured ? json_dumps(structured, JSON_COMPACT) : NULL;
	json_t *r = text ? json_pack("{s:[{s:s, s:s}], s:o}", "content", "type", "text", "text", text,
				     "structuredContent", structured)
			 : NULL;
	if (!text)
		json_decref(structured);
	free(text);
	return r;
}

/* A failed result: err (and the problem's extension members, stolen) as the REST route's problem body. */
static json_t *tool_error(struct http_request *req, const struct t2s_error *err, json_t *extensions)
{
	struct http_response pr = {0};
	http_reply_error_ext(&pr, req, err, extensions);
	json_t *r = json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
			      pr.body ? pr.body : err->message, "isError", 1);
	free(pr.body);
	return r;
}

json_t *mcp_call_list_databases(struct http_request *req, json_t *args)
{
	static const char *const fields[] = {NULL};
	struct t2s_error err = {0};
	if (request_json_fields(args, NULL, fields, &err) < 0)
		return tool_error(req, &err, NULL);
	json_t *list = json_array();
	const struct catalog_list *dbs = pipeline_databases(&req->app->pipeline);
	for (size_t i = 0; list && i < dbs->n; i++)
		if (auth_may_use_database(req->cfg, req->principal, dbs->dbs[i]->cfg->name))
			json_array_append_new(list, pipeline_database_summary_json(dbs->dbs[i], request_grant(req, dbs->dbs[i])));
	return tool_result(list ? json_pack("{s:o}", "databases", list) : NULL);
}

/* The entry named name in array list (objects with "name"), or NULL. */
static json_t *named(json_t *list, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach(list, i, v) {
		const char *n = json_string_value(json_object_get(v, "name"));
		if (n && name && strcmp(n, name) == 0)
			return v;
	}
	return NULL;
}

/* One table of the schema (schema.h's JSON) with the descriptions of described (its describe JSON, or NULL). */
static json_t *described_table(json_t *t, json_t *described)
{
	json_t *cols = json_array();
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(t, "columns"), i, c) {
		json_t *d = named(json_object_get(described, "columns"), json_string_value(json_object_get(c, "name")));
		json_array_append_new(cols, json_pack("{s:O, s:O, s:O, s:O, s:O?, s:O}", "name", json_object_get(c, "name"),
						      "type", json_object_get(c, "type"), "nullable",
						      json_object_get(c, "nullable"), "primary_key",
						      json_object_get(c, "primary_key"), "description",
						      json_object_get(d, "description"), "samples",
						      json_object_get(c, "samples")));
	}
	return json_pack("{s:O, s:O, s:O?, s:O, s:O, s:O, s:o}", "name", json_object_get(t, "qualified_name"), "kind",
			 json_object_get(t, "kind"), "description", json_object_get(described, "description"),
			 "row_count", json_object_get(t, "row_count"), "primary_key", json_object_get(t, "primary_key"),
			 "foreign_keys", json_object_get(t, "foreign_keys"), "columns", cols);
}

/* The names of args' "tables" into *ret (borrowed; arena), NULL and 0 when absent. */
static int table_names(struct http_request *req, json_t *args, const char ***ret, size_t *ret_n, struct t2s_error *err)
{
	json_t *names = json_object_get(args, "tables");
	*ret = NULL;
	*ret_n = 0;
	if (!names || json_is_null(names))
		return 0;
	size_t n = json_array_size(names);
	const char **v = n ? arena_calloc(&req->arena, n, sizeof(*v)) : NULL;
	for (size_t i = 0; v && i < n; i++)
		if (!(v[i] = json_string_value(json_array_get(names, i))))
			v = NULL;
	if (!v)
		return t2s_error_set(err, T2S_ERR_INVALID, "field 'tables' must be a non-empty array of table names");
	*ret = v;
	*ret_n = n;
	return 0;
}

json_t *mcp_call_describe_database(struct http_request *req, json_t *args)
{
	static const char *const fields[] = {"database", "tables", NULL};
	struct t2s_error err = {0};
	const char *database = NULL, **tables = NULL;
	size_t n_tables = 0;
	struct catalog_db *db = NULL;
	struct pipeline_describe d = {0};
	char *text = NULL;
	size_t len = 0;
	int rc = request_json_fields(args, NULL, fields, &err);
	if (rc == 0)
		rc = request_json_string(args, "database", true, &database, &err);
	if (rc == 0)
		rc = request_database(req, database, &db, &err);
	if (rc == 0)
		rc = table_names(req, args, &tables, &n_tables, &err);
	if (rc == 0)
		rc = pipeline_describe(&req->app->pipeline, db, request_grant(req, db), tables, n_tables, &d, &err);
	if (rc == 0)
		rc = pipeline_database_schema_json(db, request_grant(req, db), &text, &len, &err);
	json_t *schema = text ? json_loadb(text, len, 0, NULL) : NULL;
	json_t *described = rc == 0 ? describe_result_json(db->cfg->name, d.schema, &d.result, d.overrides_missing) : NULL;
	free(text);
	pipeline_describe_release(&d);
	if (rc == 0 && (!schema || !described))
		rc = t2s_error_set(&err, T2S_ERR_NOMEM, "out of memory rendering the schema");
	json_t *out = NULL, *list = json_array();
	size_t i;
	json_t *t;
	json_array_foreach(rc == 0 ? json_object_get(schema, "tables") : NULL, i, t) {
		json_t *dt = named(json_object_get(described, "tables"), json_string_value(json_object_get(t, "qualified_name")));
		if (dt || !tables) /* with a list, only its tables (describe checked every name) */
			json_array_append_new(list, described_table(t, dt));
	}
	if (rc == 0)
		out = json_pack("{s:s, s:O, s:O, s:O}", "database", db->cfg->name, "engine", json_object_get(schema, "engine"),
				"schema_hash", json_object_get(schema, "schema_hash"), "tables", list);
	json_decref(list);
	json_decref(schema);
	json_decref(described);
	if (rc < 0)
		return tool_error(req, &err, NULL);
	return tool_result(out);
}

json_t *mcp_call_query(struct http_request *req, json_t *args)
{
	const struct generate_env *env = pipeline_generate_env(&req->app->pipeline);
	struct t2s_error err = {0};
	struct generate_request rq = {.max_rounds = -1, .candidates = -1, .execute = true};
	struct pipeline_answer result = {0};
	struct prompt_pair *history = NULL;
	const char *database = NULL;
	bool big_as_strings = req->cfg->execution.big_integers_as_strings;
	json_t *problem = NULL, *answer = NULL;
	char *key = NULL;
	int rc = generate_args_read(req, env, args, &rq, &database, &history, &big_as_strings, &err);
	if (rc == 0)
		rc = request_database(req, database, &rq.db, &err);
	if (rc == 0)
		rq.grant = request_grant(req, rq.db); /* the caller's tables, as POST /query applies them */
	if (rc == 0) {
		/* The answer cache's key, as POST /query makes it: the same question shares the answer. */
		json_t *canon = json_deep_copy(args);
		json_object_set_new(canon, "endpoint", json_string("query"));
		key = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(canon);
		rq.request_key = key;
		struct generate_observer watch = request_client_observer(req);
		rq.observer = &watch;
		rc = pipeline_generate(&req->app->pipeline, &rq, &result, &problem, &err);
	}
	if (rc == 0 && !(answer = pipeline_answer_json(&result)))
		rc = t2s_error_set(&err, T2S_ERR_NOMEM, "out of memory rendering the answer");
	pipeline_answer_release(&result);
	free(key);
	free(history);
	if (rc < 0)
		return tool_error(req, &err, problem);
	if (big_as_strings)
		result_json_stringify_big_integers(json_object_get(answer, "rows"));
	json_object_del(answer, "trace");
	return tool_result(answer);
}

json_t *mcp_call_execute(struct http_request *req, json_t *args)
{
	const struct config *cfg = req->cfg;
	struct t2s_error err = {0};
	struct execute_body b = {.max_rows = cfg->execution.default_max_rows,
				 .big_as_strings = cfg->execution.big_integers_as_strings};
	struct catalog_db *db;
	struct pipeline_execute result = {0};
	if (execute_args_read(req, args, cfg->execution.max_rows, &b, &err) < 0 ||
	    request_database(req, b.database, &db, &err) < 0 ||
	    pipeline_execute(&req->app->pipeline, db, request_grant(req, db), b.sql, (long)b.max_rows, &result, &err) < 0)
		return tool_error(req, &err, NULL);
	if (b.big_as_strings)
		result_json_stringify_big_integers(result.result.rows);
	json_t *out = exec_result_json(&result.result, &result.limits);
	pipeline_execute_release(&result);
	return tool_result(out);
}
