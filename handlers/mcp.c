/*
 * mcp.c - the MCP endpoint (Model Context Protocol, Streamable HTTP
 * transport, revisions 2025-11-25, 2025-06-18 and 2025-03-26):
 *   POST   /mcp  one JSON-RPC 2.0 message: a request is answered
 *                application/json; a notification or a response 202
 *   DELETE /mcp  ends the session named by Mcp-Session-Id (204)
 *   GET    /mcp  405: the server sends no messages of its own
 *
 * initialize opens a session (server/mcp_session.h) whose id the answer
 * carries in Mcp-Session-Id; every later message must carry it (400 without,
 * 404 once it is unknown or ended: the client then initializes again).  The
 * API key, its scope and its rate are checked by the server before this
 * handler, as for every REST route; a session belongs to its key.  The
 * Origin header, when sent, must be the request's own or one cors allows
 * (403 otherwise, against DNS rebinding).  See mcp.h for how errors travel.
 */
#include "handlers/handlers.h"

#include "handlers/mcp.h"
#include "server/build_commit.h"
#include "server/cors.h"
#include "server/mcp_session.h"

#include <string.h>
#include <strings.h>

/* Newest first: initialize answers the client's version when listed, else the first. */
static const char *const protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

static const char *supported_version(const char *v)
{
	for (const char *const *p = protocol_versions; v && *p; p++)
		if (strcmp(*p, v) == 0)
			return *p;
	return NULL;
}

/* The body of a JSON-RPC answer: {jsonrpc, id, result} or {jsonrpc, id, error}; id may be NULL (null). */
static json_t *rpc_message(json_t *id, json_t *result, const struct mcp_error *e)
{
	json_t *m = json_pack("{s:s, s:O}", "jsonrpc", "2.0", "id", id ? id : json_null());
	if (m && result)
		json_object_set_new(m, "result", result);
	else if (m)
		json_object_set_new(m, "error", json_pack("{s:i, s:s}", "code", e->code, "message", e->message));
	else
		json_decref(result);
	return m;
}

/*
 * An HTTP error of the transport (code T2S_ERR_INVALID: 400 invalid-request,
 * T2S_ERR_NOT_FOUND: 404 not-found): a problem body that is also a JSON-RPC
 * error without an id (members jsonrpc, id: null, error {code, message}).
 */
static void reply_rpc_error(struct http_request *req, struct http_response *res, enum t2s_code status_code,
			    int code, const char *message)
{
	struct t2s_error err = {0};
	t2s_error_set(&err, status_code, "%s", message);
	struct mcp_error e = {code, message};
	json_t *ext = rpc_message(NULL, NULL, &e);
	http_reply_error_ext(res, req, &err, ext);
}

/* Does msg hold only the members of a JSON-RPC 2.0 message? */
static bool members_known(json_t *msg)
{
	static const char *const known[] = {"jsonrpc", "id", "method", "params", "result", "error", NULL};
	const char *key;
	json_t *v;
	json_object_foreach(msg, key, v) {
		const char *const *k = known;
		while (*k && strcmp(*k, key) != 0)
			k++;
		if (!*k)
			return false;
	}
	return true;
}

/* May the client read application/json?  (No Accept header: yes.) */
static bool accepts_json(struct http_request *req)
{
	const char *a = http_request_header(req, "Accept");
	return !a || strcasestr(a, "application/json") || strstr(a, "*/*") || strcasestr(a, "application/*");
}

/* The transport's checks of every POST and DELETE; false when *res was filled. */
static bool transport_ok(struct http_request *req, struct http_response *res)
{
	if (!cors_origin_trusted(req)) {
		http_reply_problem(res, req, 403, "forbidden", "Forbidden",
				   "the Origin header names neither this server nor an origin in cors.allowed_origins");
		return false;
	}
	const char *v = http_request_header(req, "MCP-Protocol-Version");
	if (v && !supported_version(v)) {
		reply_rpc_error(req, res, T2S_ERR_INVALID, MCP_BAD_REQUEST,
				"Bad Request: unsupported MCP-Protocol-Version (supported: 2025-11-25, 2025-06-18, "
				"2025-03-26)");
		return false;
	}
	return true;
}

/* The session named by the request's Mcp-Session-Id; false (and *res filled: 400 or 404) without one. */
static bool session_ok(struct http_request *req, struct http_response *res)
{
	const char *id = http_request_header(req, "Mcp-Session-Id");
	if (!id) {
		reply_rpc_error(req, res, T2S_ERR_INVALID, MCP_BAD_REQUEST, "Bad Request: the Mcp-Session-Id header is required; "
				"send initialize first");
		return false;
	}
	if (mcp_session_use(req, id, NULL) < 0) {
		reply_rpc_error(req, res, T2S_ERR_NOT_FOUND, MCP_SESSION_NOT_FOUND, "Session not found: initialize again");
		return false;
	}
	return true;
}

static json_t *initialize_result(const char *version)
{
	return json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", version, "capabilities",
			 "tools", "listChanged", 0, "serverInfo", "name", "text2sqld", "title", "text2sqld",
			 "version", T2S_VERSION, "instructions",
			 "text2sqld answers questions about SQL databases. Call list_databases for the databases "
			 "this key may read, describe_database for a database's tables and columns, query to turn "
			 "a question into read-only SQL and its rows (with an explanation and a confidence), and "
			 "execute to run a read-only statement of your own.");
}

/* initialize: negotiate the version, open a session; the answer carries Mcp-Session-Id. */
static void initialize(struct http_request *req, struct http_response *res, json_t *id, json_t *params)
{
	json_t *pv = json_object_get(params, "protocolVersion");
	if (!json_is_string(pv)) {
		struct mcp_error e = {MCP_INVALID_PARAMS, "initialize: params.protocolVersion must be a string"};
		http_reply_json(res, 200, rpc_message(id, NULL, &e));
		return;
	}
	const char *version = supported_version(json_string_value(pv));
	if (!version)
		version = protocol_versions[0];
	char sid[MCP_SESSION_ID_SIZE];
	struct t2s_error err = {0};
	if (mcp_session_open(req, version, sid, &err) < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	http_reply_json(res, 200, rpc_message(id, initialize_result(version), NULL));
	if (http_reply_header(res, "Mcp-Session-Id", arena_strdup(&req->arena, sid)) < 0) {
		/* Cannot happen: the first extra header of this response. */
	}
}

/* A request of an open session: ping, tools/list, tools/call. */
static json_t *answer(struct http_request *req, const char *method, json_t *id, json_t *params)
{
	struct mcp_error e = {0};
	json_t *result = NULL;
	if (params && !json_is_object(params))
		e = (struct mcp_error){MCP_INVALID_PARAMS, "params must be an object"};
	else if (strcmp(method, "ping") == 0)
		result = json_object();
	else if (strcmp(method, "tools/list") == 0)
		result = json_pack("{s:o}", "tools", mcp_tools_list());
	else if (strcmp(method, "tools/call") == 0) {
		if (mcp_tools_call(req, params, &result, &e) < 0)
			result = NULL;
	} else {
		e = (struct mcp_error){MCP_METHOD_NOT_FOUND, arena_printf(&req->arena, "method not found: %.100s", method)};
	}
	if (!result && !e.code)
		e = (struct mcp_error){MCP_INTERNAL_ERROR, "out of memory"};
	return rpc_message(id, result, &e);
}

void handle_mcp_post(struct http_request *req, struct http_response *res)
{
	if (!transport_ok(req, res))
		return;
	if (!accepts_json(req)) {
		http_reply_problem(res, req, 406, "not-acceptable", "Not acceptable",
				   "answers of /mcp are application/json: the Accept header must allow it");
		return;
	}
	json_error_t jerr;
	json_t *msg = req->body.len ? json_loadb(req->body.buf, req->body.len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
	if (!msg) {
		reply_rpc_error(req, res, T2S_ERR_INVALID, MCP_PARSE_ERROR, "Parse error: the body is not one JSON value");
		return;
	}
	json_t *id = json_object_get(msg, "id"), *params = json_object_get(msg, "params");
	const char *method = json_string_value(json_object_get(msg, "method"));
	const char *jsonrpc = json_string_value(json_object_get(msg, "jsonrpc"));
	bool is_response = !method && id && (json_object_get(msg, "result") || json_object_get(msg, "error"));
	if (json_is_array(msg))
		reply_rpc_error(req, res, T2S_ERR_INVALID, MCP_INVALID_REQUEST, "Invalid Request: batches are not accepted");
	else if (!json_is_object(msg) || !jsonrpc || strcmp(jsonrpc, "2.0") != 0 || (!method && !is_response) ||
		 (id && !json_is_string(id) && !json_is_integer(id)) || !members_known(msg))
		reply_rpc_error(req, res, T2S_ERR_INVALID, MCP_INVALID_REQUEST,
				"Invalid Request: a JSON-RPC 2.0 message (jsonrpc \"2.0\", a method, an id that is a "
				"string or an integer, no other members) is expected");
	else if (method && id && strcmp(method, "initialize") == 0)
		initialize(req, res, id, params);
	else if (!session_ok(req, res))
		; /* answered */
	else if (!id || is_response)
		res->status = 202; /* a notification, or the answer to a request we never send */
	else
		http_reply_json(res, 200, answer(req, method, id, params));
	json_decref(msg);
}

void handle_mcp_delete(struct http_request *req, struct http_response *res)
{
	if (!transport_ok(req, res))
		return;
	const char *id = http_request_header(req, "Mcp-Session-Id");
	if (!id)
		reply_rpc_error(req, res, T2S_ERR_INVALID, MCP_BAD_REQUEST, "Bad Request: the Mcp-Session-Id header is required");
	else if (mcp_session_close(req, id) < 0)
		reply_rpc_error(req, res, T2S_ERR_NOT_FOUND, MCP_SESSION_NOT_FOUND, "Session not found");
	else
		res->status = 204;
}
