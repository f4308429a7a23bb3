/*
 * mcp_tools.c - the MCP tools: their definitions, kept as JSON in
 * handlers/mcp_tools.json (embedded at build time: names, descriptions,
 * input and output JSON Schemas), and tools/call's dispatch to mcp_calls.c.
 * Each call is counted in text2sqld_mcp_tool_calls_total{tool, outcome} and
 * written to the audit log (log.audit_file) as action "mcp:<tool>".
 */
#include "handlers/mcp.h"

#include "common/clock.h"
#include "common/metrics.h"
#include "server/audit.h"
#include "server/audit_request.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

extern const char embedded_mcp_tools_json[];
extern const size_t embedded_mcp_tools_json_len;

static const struct {
	const char *name;
	json_t *(*call)(struct http_request *req, json_t *args);
} tools[] = {
	{"list_databases", mcp_call_list_databases},
	{"describe_database", mcp_call_describe_database},
	{"query", mcp_call_query},
	{"execute", mcp_call_execute},
};

json_t *mcp_tools_list(void)
{
	return json_loadb(embedded_mcp_tools_json, embedded_mcp_tools_json_len, 0, NULL);
}

/* A member of o that is a string, or NULL. */
static const char *text_of(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/*
 * The audit line of one tool call (server/audit.h): who called which tool
 * on which database with which question or SQL, and what came of it (the
 * answer's SQL, rows, generator and confidence, or the problem's status).
 */
static void audit(struct http_request *req, const char *tool, json_t *args, json_t *result, double started_ms)
{
	if (!audit_enabled())
		return;
	char action[64];
	snprintf(action, sizeof(action), "mcp:%s", tool);
	json_t *answer = json_object_get(result, "structuredContent");
	int status = 200;
	if (json_is_true(json_object_get(result, "isError"))) {
		/* A tool error's text is the problem body the REST route would have answered. */
		json_t *content = json_array_get(json_object_get(result, "content"), 0);
		json_t *problem = json_loads(text_of(content, "text") ? text_of(content, "text") : "", 0, NULL);
		status = json_is_integer(json_object_get(problem, "status"))
				 ? (int)json_integer_value(json_object_get(problem, "status"))
				 : 500;
		json_decref(problem);
		answer = NULL;
	}
	json_t *rows = json_object_get(answer, "row_count");
	json_t *confidence = json_object_get(answer, "confidence");
	struct audit_entry e = {
		.request_id = req->request_id,
		.caller = audit_caller(req),
		.action = action,
		.database = text_of(args, "database"),
		.question = text_of(args, "question"),
		.sql = text_of(answer, "sql") ? text_of(answer, "sql") : text_of(args, "sql"),
		.generator = text_of(answer, "generator"),
		.status = status,
		.rows = json_is_integer(rows) ? (long long)json_integer_value(rows) : -1,
		.elapsed_ms = clock_now_ms() - started_ms,
		.confidence = json_is_number(confidence) ? json_number_value(confidence) : NAN,
	};
	audit_write(&e);
}

static void count(const char *tool, json_t *result)
{
	static const char *const labels[] = {"tool", "outcome", NULL};
	struct metric_family *f = metrics_family("text2sqld_mcp_tool_calls_total",
						 "MCP tool calls, by tool and outcome (ok, or error: the result's "
						 "isError).", METRIC_COUNTER, labels, NULL, 0);
	const char *values[] = {tool, json_is_true(json_object_get(result, "isError")) ? "error" : "ok", NULL};
	metrics_add(f, values, 1);
}

int mcp_tools_call(struct http_request *req, json_t *params, json_t **ret_result, struct mcp_error *e)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments");
	if (!name) {
		*e = (struct mcp_error){MCP_INVALID_PARAMS, "tools/call: params.name must be a tool's name"};
		return -1;
	}
	if (args && !json_is_object(args) && !json_is_null(args)) {
		*e = (struct mcp_error){MCP_INVALID_PARAMS, "tools/call: params.arguments must be an object"};
		return -1;
	}
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		if (strcmp(tools[i].name, name) != 0)
			continue;
		json_t *empty = NULL;
		if (!json_is_object(args))
			args = empty = json_object();
		double started_ms = clock_now_ms();
		*ret_result = tools[i].call(req, args);
		if (*ret_result)
			audit(req, tools[i].name, args, *ret_result, started_ms);
		json_decref(empty);
		if (!*ret_result) {
			*e = (struct mcp_error){MCP_INTERNAL_ERROR, "out of memory"};
			return -1;
		}
		count(tools[i].name, *ret_result);
		return 0;
	}
	*e = (struct mcp_error){MCP_INVALID_PARAMS, arena_printf(&req->arena, "unknown tool: %.100s", name)};
	return -1;
}
