/*
 * playground.c - GET / and GET /playground/{file}: the playground page
 * (playground/index.html, style.css, app.js) and its chart renderer (Vega,
 * Vega-Lite, vega-embed, vega-interpreter and their licences), embedded in
 * the binary at build time (scripts/embed_playground.py,
 * handlers/playground_assets.h).  Public routes: the browser loads them
 * without a key; the page then asks for one when the API needs it.  See
 * playground/app.js for what the page does.  The Content-Security-Policy
 * lets the page load and call only this origin (no inline script or style,
 * no eval: Vega's expressions run in vega-interpreter) and be framed by no
 * one (clickjacking: the page holds the key it was given).  A download the
 * page makes (CSV) is a blob: URL, which needs no source.
 */
#include "handlers/handlers.h"

#include "handlers/playground_assets.h"

#include <string.h>

#define PLAYGROUND_CSP "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " \
		       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

static void reply_asset(struct http_response *res, const struct playground_asset *a)
{
	http_reply_text(res, 200, a->content_type, (const char *)a->data, a->len);
	if (http_reply_header(res, "Content-Security-Policy", PLAYGROUND_CSP) < 0 ||
	    http_reply_header(res, "X-Content-Type-Options", "nosniff") < 0) {
		/* Cannot happen: two of HTTP_MAX_EXTRA_HEADERS on a fresh response. */
	}
}

static const struct playground_asset *find_asset(const char *name)
{
	for (const struct playground_asset *a = playground_assets; a->name; a++)
		if (strcmp(a->name, name) == 0)
			return a;
	return NULL;
}

void handle_playground(struct http_request *req, struct http_response *res)
{
	const struct playground_asset *page = find_asset("index.html");
	if (!page) { /* Cannot happen: meson.build embeds it. */
		http_reply_problem(res, req, 404, "not-found", "Not found", "the playground page is not built in");
		return;
	}
	reply_asset(res, page);
}

void handle_playground_file(struct http_request *req, struct http_response *res)
{
	const struct playground_asset *a = find_asset(req->params[0]);
	if (!a || strcmp(a->name, "index.html") == 0) {
		http_reply_problem(res, req, 404, "not-found", "Not found", "the playground has no such file");
		return;
	}
	reply_asset(res, a);
}
