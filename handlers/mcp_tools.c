/*
 * mcp_tools.c - the MCP tools: their definitions, kept as JSON in
 * handlers/mcp_tools.json (embedded at build time: names, descriptions,
 * input and output JSON Schemas), and tools/call's dispatch to mcp_calls.c.
 * Each call is counted in text2sqld_mcp_tool_calls_total{tool, outcome}.
 */
#include "handlers/mcp.h"

#include "common/metrics.h"

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
		*ret_result = tools[i].call(req, args);
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
