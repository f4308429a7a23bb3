/*
 * cors.c - CORS headers and preflight answers (see cors.h).
 */
#include "server/cors.h"

#include "server/router.h"

#include <stdio.h>
#include <string.h>

/* The request headers a browser may send to the API (the preflight's Access-Control-Allow-Headers). */
#define CORS_ALLOWED_HEADERS \
	"Authorization, Content-Type, Accept, X-Request-Id, traceparent, tracestate, Mcp-Session-Id, MCP-Protocol-Version"
#define CORS_EXPOSED_HEADERS "X-Request-Id, Location, Mcp-Session-Id"

static bool cors_on(const struct config *cfg)
{
	return cfg->cors.n_allowed_origins > 0;
}

/* Is origin (the request's Origin header, may be NULL) in the allow-list? */
static bool origin_allowed(const struct config *cfg, const char *origin)
{
	if (!origin || !*origin)
		return false;
	if (cfg->cors.any_origin)
		return true;
	for (size_t i = 0; i < cfg->cors.n_allowed_origins; i++)
		if (strcmp(cfg->cors.allowed_origins[i], origin) == 0)
			return true;
	return false;
}

bool cors_origin_trusted(struct http_request *req)
{
	const char *origin = http_request_header(req, "Origin");
	const char *host = http_request_header(req, "Host");
	if (!origin || origin_allowed(req->cfg, origin))
		return true;
	const char *sep = strstr(origin, "://");
	return host && *host && sep && strcmp(sep + 3, host) == 0;
}

bool cors_preflight(struct http_request *req, struct http_response *res)
{
	const struct config *cfg = req->cfg;
	const char *origin = http_request_header(req, "Origin");
	const char *wanted = http_request_header(req, "Access-Control-Request-Method");
	if (!cors_on(cfg) || strcmp(req->method, "OPTIONS") != 0 || !origin || !wanted)
		return false;
	if (!origin_allowed(cfg, origin)) {
		char detail[200];
		snprintf(detail, sizeof(detail), "origin %.120s is not in cors.allowed_origins", origin);
		http_reply_problem(res, req, 403, "cors-origin-denied", "Origin not allowed", detail);
		return true;
	}
	/* No route has OPTIONS: matching it yields every method of the path in res->allow. */
	const struct route *route = NULL;
	if (router_match(req, &route, res->allow, sizeof(res->allow)) == ROUTE_NOT_FOUND) {
		http_reply_problem(res, req, 404, "not-found", "Not found", "no endpoint at this path");
		return true;
	}
	bool listed = false;
	size_t n = strlen(wanted);
	for (const char *a = res->allow; *a; a += strspn(a, ", ")) {
		size_t len = strcspn(a, ", ");
		listed |= len == n && strncmp(a, wanted, n) == 0;
		a += len;
	}
	if (!listed) {
		char detail[160];
		snprintf(detail, sizeof(detail), "method %.20s is not allowed here; allowed: %s", wanted, res->allow);
		http_reply_problem(res, req, 405, "method-not-allowed", "Method not allowed", detail);
		return true;
	}
	char *age = arena_printf(&req->arena, "%ld", cfg->cors.max_age_s);
	res->status = 204;
	if (http_reply_header(res, "Access-Control-Allow-Methods", arena_strdup(&req->arena, res->allow)) < 0 ||
	    http_reply_header(res, "Access-Control-Allow-Headers", CORS_ALLOWED_HEADERS) < 0 ||
	    http_reply_header(res, "Access-Control-Max-Age", age ? age : "0") < 0) {
		/* Cannot happen: three of HTTP_MAX_EXTRA_HEADERS on a preflight's fresh response. */
	}
	res->allow[0] = '\0'; /* Allow is for 405 answers */
	return true;
}

void cors_add_headers(struct http_request *req, struct MHD_Response *r)
{
	const struct config *cfg = req->cfg;
	if (!cors_on(cfg))
		return;
	if (!cfg->cors.any_origin)
		MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Origin");
	const char *origin = http_request_header(req, "Origin");
	if (!origin_allowed(cfg, origin))
		return;
	MHD_add_response_header(r, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN, cfg->cors.any_origin ? "*" : origin);
	MHD_add_response_header(r, "Access-Control-Expose-Headers", CORS_EXPOSED_HEADERS);
	if (cfg->cors.allow_credentials)
		MHD_add_response_header(r, "Access-Control-Allow-Credentials", "true");
}
