/*
 * handlers.h - one function per endpoint.  A handler parses and checks the
 * request, calls the pipeline, and fills the response (JSON or a problem).
 * Handlers never see libmicrohttpd types beyond struct http_request.
 */
#ifndef T2S_HANDLERS_H
#define T2S_HANDLERS_H

#include "server/http.h"

void handle_healthz(struct http_request *req, struct http_response *res);
void handle_readyz(struct http_request *req, struct http_response *res);
void handle_metrics(struct http_request *req, struct http_response *res);
void handle_openapi(struct http_request *req, struct http_response *res);
void handle_playground(struct http_request *req, struct http_response *res);
void handle_playground_file(struct http_request *req, struct http_response *res);
void handle_docs(struct http_request *req, struct http_response *res);
void handle_docs_asset(struct http_request *req, struct http_response *res);
void handle_databases_list(struct http_request *req, struct http_response *res);
void handle_database_get(struct http_request *req, struct http_response *res);
void handle_database_refresh(struct http_request *req, struct http_response *res);
void handle_execute(struct http_request *req, struct http_response *res);
void handle_link(struct http_request *req, struct http_response *res);
void handle_describe(struct http_request *req, struct http_response *res);
void handle_evidence(struct http_request *req, struct http_response *res);
void handle_generate(struct http_request *req, struct http_response *res);
void handle_query(struct http_request *req, struct http_response *res);
/* POST /query/stream: /query answered as server-sent events whatever Accept says. */
void handle_query_stream(struct http_request *req, struct http_response *res);
void handle_descriptions_get(struct http_request *req, struct http_response *res);
void handle_descriptions_put(struct http_request *req, struct http_response *res);
void handle_examples_list(struct http_request *req, struct http_response *res);
void handle_examples_add(struct http_request *req, struct http_response *res);
void handle_example_get(struct http_request *req, struct http_response *res);
void handle_examples_delete(struct http_request *req, struct http_response *res);
void handle_feedback_add(struct http_request *req, struct http_response *res);
void handle_feedback_list(struct http_request *req, struct http_response *res);
void handle_feedback_get(struct http_request *req, struct http_response *res);
/* The MCP endpoint (handlers/mcp.c): one JSON-RPC message a POST; DELETE ends a session. */
void handle_mcp_post(struct http_request *req, struct http_response *res);
void handle_mcp_delete(struct http_request *req, struct http_response *res);

#endif
