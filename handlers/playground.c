/*
 * playground.c - GET / and GET /playground/{file}: the playground page
 * (playground/index.html, style.css, app.js), embedded in the binary at
 * build time (scripts/embed_file.py, meson.build).  Public routes: the
 * browser loads them without a key; the page then asks for one when the
 * API needs it.  See playground/app.js for what the page does.  The
 * Content-Security-Policy lets the page load and call only this origin
 * (no inline script or style) and be framed by no one (clickjacking: the
 * page holds the key it was given).
 */
#include "handlers/handlers.h"

#include <string.h>

extern const char embedded_playground_html[], embedded_playground_css[], embedded_playground_js[];
extern const size_t embedded_playground_html_len, embedded_playground_css_len, embedded_playground_js_len;

struct asset {
	const char *name;
	const char *content_type;
	const char *data;
	const size_t *len;
};

#define PLAYGROUND_CSP "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
		       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

static void reply_asset(struct http_response *res, const char *content_type, const char *data, size_t len)
{
	http_reply_text(res, 200, content_type, data, len);
	if (http_reply_header(res, "Content-Security-Policy", PLAYGROUND_CSP) < 0 ||
	    http_reply_header(res, "X-Content-Type-Options", "nosniff") < 0) {
		/* Cannot happen: two of HTTP_MAX_EXTRA_HEADERS on a fresh response. */
	}
}

static const struct asset assets[] = {
	{"style.css", "text/css; charset=utf-8", embedded_playground_css, &embedded_playground_css_len},
	{"app.js", "text/javascript; charset=utf-8", embedded_playground_js, &embedded_playground_js_len},
};

void handle_playground(struct http_request *req, struct http_response *res)
{
	(void)req;
	reply_asset(res, "text/html; charset=utf-8", embedded_playground_html, embedded_playground_html_len);
}

void handle_playground_file(struct http_request *req, struct http_response *res)
{
	for (size_t i = 0; i < sizeof(assets) / sizeof(assets[0]); i++)
		if (strcmp(req->params[0], assets[i].name) == 0) {
			reply_asset(res, assets[i].content_type, assets[i].data, *assets[i].len);
			return;
		}
	http_reply_problem(res, req, 404, "not-found", "Not found", "the playground has no such file");
}
