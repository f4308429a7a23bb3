/*
 * openapi.c - GET /openapi.json: the OpenAPI 3.1 document of openapi/,
 * embedded in the binary at build time.
 */
#include "handlers/handlers.h"

void handle_openapi(struct http_request *req, struct http_response *res)
{
	http_reply_text(res, 200, "application/json", req->app->openapi_json, req->app->openapi_len);
}
