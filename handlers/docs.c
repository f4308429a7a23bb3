/*
 * docs.c - GET /docs: the interactive API reference (Swagger UI) of
 * GET /openapi.json, and GET /docs/{file}: the page's script, stylesheet and
 * Swagger UI's licence.  Every byte is embedded in the binary
 * (handlers/docs_assets.h); the Content-Security-Policy keeps the browser
 * from loading anything from elsewhere.  Both routes are public, like
 * /openapi.json.
 */
#include "handlers/handlers.h"

#include "handlers/docs_assets.h"

#include <string.h>

#define DOCS_CSP "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " \
		 "font-src 'self' data:; connect-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"

static const struct docs_asset *find_asset(const char *name)
{
	for (const struct docs_asset *a = docs_assets; a->name; a++)
		if (strcmp(a->name, name) == 0)
			return a;
	return NULL;
}

static void reply_asset(struct http_request *req, struct http_response *res, const char *name)
{
	const struct docs_asset *a = find_asset(name);
	if (!a || (strcmp(name, "index.html") == 0 && req->params[0])) {
		http_reply_problem(res, req, 404, "not-found", "Not found", "no such file of the API reference");
		return;
	}
	http_reply_text(res, 200, a->content_type, (const char *)a->data, a->len);
	if (http_reply_header(res, "Content-Security-Policy", DOCS_CSP) < 0 ||
	    http_reply_header(res, "X-Content-Type-Options", "nosniff") < 0) {
		/* Cannot happen: two of HTTP_MAX_EXTRA_HEADERS on a fresh response. */
	}
}

void handle_docs(struct http_request *req, struct http_response *res)
{
	reply_asset(req, res, "index.html");
}

void handle_docs_asset(struct http_request *req, struct http_response *res)
{
	reply_asset(req, res, req->params[0]);
}
