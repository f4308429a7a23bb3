/*
 * router.h - the route table and path matching.
 *
 * A pattern is a path whose segments are literals or {name} placeholders;
 * a placeholder matches one non-empty segment, handed to the handler in
 * req->params in order.  A path that matches some pattern under another
 * method yields ROUTE_BAD_METHOD with the Allow list.
 *
 * Versions.  Every API route (one that takes a key: scope not ROUTE_PUBLIC)
 * is served under ROUTER_API_PREFIX too, /v1/query as /query: the same
 * route, handler and "route" label, so either spelling counts in one series.
 * The OpenAPI document lists the /v1 paths; the unversioned ones are kept
 * as aliases.  Health, metrics, the document itself, /docs and the
 * playground are not part of a version and have one path each.
 */
#ifndef T2S_ROUTER_H
#define T2S_ROUTER_H

#include "config/config.h"
#include "server/http.h"

#include <stdbool.h>

typedef void (*http_handler_fn)(struct http_request *req, struct http_response *res);

struct route {
	const char *method;
	const char *pattern; /* also the "route" label of metrics and logs */
	http_handler_fn handler;
	unsigned scope;      /* API_SCOPE_* bits the caller needs (auth.h); ROUTE_PUBLIC: none, no key */
};

#define ROUTER_API_PREFIX "/v1"

/* A route reachable without an API key when auth is on (health, docs, the playground). */
#define ROUTE_PUBLIC 0u

enum route_match { ROUTE_FOUND, ROUTE_NOT_FOUND, ROUTE_BAD_METHOD };

/* The table of routes.c, terminated by a zeroed entry. */
extern const struct route routes[];

/*
 * Match method and path.  On ROUTE_FOUND *ret is the route and req->params
 * hold arena copies of the placeholders; on ROUTE_BAD_METHOD allow is filled
 * ("GET, POST") and *ret is a route of that path under another method (its
 * pattern labels the request).  HEAD is served by GET routes.
 */
enum route_match router_match(struct http_request *req, const struct route **ret, char *allow, size_t allow_size);

#endif
