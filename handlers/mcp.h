/*
 * mcp.h - what the files of the MCP endpoint share (handlers/mcp*.c).
 *
 *   mcp.c        the transport: POST and DELETE /mcp (Streamable HTTP), the
 *                JSON-RPC 2.0 envelope, sessions, initialize, ping, tools/list
 *   mcp_tools.c  the tools' definitions (names, descriptions, input and
 *                output JSON Schemas) and tools/call's dispatch
 *   mcp_calls.c  each tool run through the service layer, as the REST
 *                handlers do: list_databases, describe_database, query, execute
 *
 * Errors.  A message that is not JSON-RPC, a missing or unknown session and
 * an unsupported protocol version are HTTP errors (400 invalid-request, 404
 * not-found) whose problem body is also a JSON-RPC error without an id
 * (members jsonrpc, id: null, error); an unknown method or tool, or params of the
 * wrong shape, are JSON-RPC errors answered 200; a tool that fails (a bad
 * argument, an unknown database, a refused statement, a model that is down)
 * is a result with isError: true whose text is the RFC 9457 problem the REST
 * route would have answered.  What the server checks before the handler
 * (the key: 401, the scope: 403, the key's rate: 429) are problem responses.
 */
#ifndef T2S_HANDLERS_MCP_H
#define T2S_HANDLERS_MCP_H

#include "server/http.h"

#include <jansson.h>

/* JSON-RPC 2.0 error codes (and the MCP SDKs' server-defined ones). */
enum {
	MCP_PARSE_ERROR = -32700,
	MCP_INVALID_REQUEST = -32600,
	MCP_METHOD_NOT_FOUND = -32601,
	MCP_INVALID_PARAMS = -32602,
	MCP_INTERNAL_ERROR = -32603,
	MCP_BAD_REQUEST = -32000,       /* transport: no session header, unsupported protocol version */
	MCP_SESSION_NOT_FOUND = -32001, /* transport: unknown or ended session (HTTP 404) */
};

/* A JSON-RPC error for the reply: code and message (static or in the request's arena). */
struct mcp_error {
	int code;
	const char *message;
};

/* The tools' definitions for tools/list: a new reference (NULL only out of memory). */
json_t *mcp_tools_list(void);

/*
 * tools/call with params {name, arguments?}: 0 and *ret_result (a new
 * reference: a CallToolResult, isError true when the tool failed), or -1 with
 * *e set for a protocol error (params of the wrong shape, an unknown tool).
 */
int mcp_tools_call(struct http_request *req, json_t *params, json_t **ret_result, struct mcp_error *e);

/* The tools (mcp_calls.c): each returns a CallToolResult, a new reference (NULL only out of memory). */
json_t *mcp_call_list_databases(struct http_request *req, json_t *args);
json_t *mcp_call_describe_database(struct http_request *req, json_t *args);
json_t *mcp_call_query(struct http_request *req, json_t *args);
json_t *mcp_call_execute(struct http_request *req, json_t *args);

#endif
