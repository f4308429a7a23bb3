/*
 * cors.h - cross-origin requests from browsers (config section "cors").
 *
 * Off while cors.allowed_origins is empty: no CORS header is ever sent and
 * OPTIONS answers 405 like any unknown method.  On: a response to a request
 * whose Origin is allowed carries Access-Control-Allow-Origin (the origin
 * itself, with Vary: Origin, or "*" when the list is ["*"]), the exposed
 * headers (X-Request-Id, Location) and, with cors.allow_credentials,
 * Access-Control-Allow-Credentials: true (never together with "*": the
 * config loader refuses it).  A preflight (OPTIONS with Origin and
 * Access-Control-Request-Method) is answered 204 before authentication, with
 * the path's methods, the request headers the API reads and
 * Access-Control-Max-Age; from an origin not in the list it is a 403
 * problem, on an unknown path a 404, for a method the path lacks a 405.
 */
#ifndef T2S_CORS_H
#define T2S_CORS_H

#include "server/http.h"

#include <stdbool.h>

/*
 * When req is a CORS preflight and CORS is on, fill res with its answer and
 * return true; otherwise leave res alone and return false.
 */
bool cors_preflight(struct http_request *req, struct http_response *res);

/*
 * Is req's Origin one to serve (the MCP endpoint refuses others, against
 * DNS rebinding)?  True without an Origin header, for an origin in
 * cors.allowed_origins, and for the request's own (scheme://Host).
 */
bool cors_origin_trusted(struct http_request *req);

/* Add the CORS headers of req's Origin (if allowed) to the libmicrohttpd response r. */
void cors_add_headers(struct http_request *req, struct MHD_Response *r);

#endif
