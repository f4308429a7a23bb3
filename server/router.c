/*
 * router.c - matching a request against the route table (see router.h).
 */
#include "server/router.h"

#include <stdio.h>
#include <string.h>

/* True when path matches pattern; placeholders are copied into params. */
static bool match_pattern(struct arena *a, const char *pattern, const char *path, const char **params)
{
	size_t n_params = 0;
	const char *p = pattern, *s = path;
	while (*p && *s) {
		if (*p != '/' || *s != '/')
			return false;
		p++, s++;
		size_t plen = strcspn(p, "/"), slen = strcspn(s, "/");
		if (*p == '{') {
			if (slen == 0 || n_params >= HTTP_MAX_PATH_PARAMS)
				return false;
			if (params)
				params[n_params] = arena_strndup(a, s, slen);
			n_params++;
		} else if (plen != slen || strncmp(p, s, plen) != 0) {
			return false;
		}
		p += plen, s += slen;
	}
	return *p == '\0' && *s == '\0';
}

/* The path r answers: req's own, or without its version prefix for an API route; NULL when neither matches. */
static const char *route_path(struct arena *a, const struct route *r, const char *path)
{
	if (match_pattern(a, r->pattern, path, NULL))
		return path;
	size_t plen = strlen(ROUTER_API_PREFIX);
	if (r->scope != ROUTE_PUBLIC && strncmp(path, ROUTER_API_PREFIX, plen) == 0 && path[plen] == '/' &&
	    match_pattern(a, r->pattern, path + plen, NULL))
		return path + plen;
	return NULL;
}

enum route_match router_match(struct http_request *req, const struct route **ret, char *allow, size_t allow_size)
{
	const char *method = strcmp(req->method, "HEAD") == 0 ? "GET" : req->method;
	bool path_known = false;
	allow[0] = '\0';
	for (const struct route *r = routes; r->method; r++) {
		const char *path = route_path(&req->arena, r, req->path);
		if (!path)
			continue;
		if (strcmp(r->method, method) == 0) {
			match_pattern(&req->arena, r->pattern, path, req->params);
			*ret = r;
			return ROUTE_FOUND;
		}
		if (!path_known)
			*ret = r; /* ROUTE_BAD_METHOD: the path's first route, for its label */
		path_known = true;
		size_t used = strlen(allow);
		snprintf(allow + used, allow_size - used, "%s%s", used ? ", " : "", r->method);
		if (strcmp(r->method, "GET") == 0) {
			used = strlen(allow);
			snprintf(allow + used, allow_size - used, ", HEAD");
		}
	}
	return path_known ? ROUTE_BAD_METHOD : ROUTE_NOT_FOUND;
}
