/*
 * http.h - the request and response as handlers see them, and the helpers
 * that fill a response.  server/ owns HTTP; handlers/ only read requests and
 * fill responses through these functions.
 *
 * Memory: a request and everything in its arena live until the response has
 * been sent (http_server.c frees them in the completion callback).  A
 * response body is malloc'd and owned by the response.
 */
#ifndef T2S_HTTP_H
#define T2S_HTTP_H

#include "common/contract.h"
#include "server/app.h"
#include "server/audit.h"
#include "common/arena.h"
#include "common/strbuf.h"
#include "common/error.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>

#define HTTP_MAX_PATH_PARAMS 4
#define HTTP_MAX_EXTRA_HEADERS 4

struct route;
struct http_stream;

struct http_request {
	struct arena arena;
	struct app *app;
	const struct config *cfg;                /* the config in force when the request arrived (app.h) */
	struct MHD_Connection *conn;
	char client[64];                         /* the client's address (behind trusted proxies: the
						    X-Forwarded-For hop, server/forwarded.h) */
	const char *method;
	const char *path;
	char request_id[129];
	struct strbuf body;
	bool body_too_large;
	const struct route *route;
	const char *params[HTTP_MAX_PATH_PARAMS]; /* {name} segments in pattern order */
	const struct config_api_key *principal;  /* authenticated key, NULL when auth is off */
	double start_ms;
	struct http_stream *stream;              /* the response is an event stream (http_stream.h), else NULL */
	char traceparent[56];                   /* the client's W3C traceparent when valid, else "" */
	struct audit_note audit;                 /* what the handler noted for the audit log (audit_request.h) */
};

struct http_response {
	int status;
	const char *content_type; /* static string */
	char *body;               /* malloc'd, owned */
	size_t len;
	char allow[64];           /* Allow header for 405, "" otherwise */
	bool www_authenticate;    /* add WWW-Authenticate: Bearer (401) */
	int retry_after_s;        /* > 0: add Retry-After (429, 503; every 503 problem sets it) */
	struct {
		const char *name, *value; /* static or in the request's arena */
	} headers[HTTP_MAX_EXTRA_HEADERS]; /* more headers (Location, ...); see http_reply_header */
	size_t n_headers;
};

/* Retry-After of a 503 problem: the dependency is expected back soon. */
#define HTTP_RETRY_AFTER_UNAVAILABLE_S 1

/* Request header value or NULL (borrowed from libmicrohttpd). */
const char *http_request_header(struct http_request *req, const char *name);
/* Query-string argument value or NULL (borrowed from libmicrohttpd). */
const char *http_request_query(struct http_request *req, const char *name);

/* Body is json (reference stolen); status e.g. 200. */
void http_reply_json(struct http_response *res, int status, json_t *json);
/* Body is JSON text already written (malloc'd, ownership taken; NULL: a 500 problem). */
void http_reply_json_text(struct http_response *res, int status, char *text, size_t len);
/* Body is text (copied). */
void http_reply_text(struct http_response *res, int status, const char *content_type, const char *text,
		     size_t len);
/* RFC 9457 problem: type urn:text2sqld:problem:<slug>. */
void http_reply_problem(struct http_response *res, struct http_request *req, int status, const char *slug,
			const char *title, const char *detail);
/* A problem for a pipeline error, with the status its code maps to. */
void http_reply_error(struct http_response *res, struct http_request *req, const struct t2s_error *err);
/* As http_reply_error, with extension members (a JSON object, stolen; may be NULL) added to the problem. */
void http_reply_error_ext(struct http_response *res, struct http_request *req, const struct t2s_error *err,
			  json_t *extensions);

/* A fresh request id: 32 hex digits and a NUL in out. */
void http_request_id_new(char out[33]);

/*
 * A whole HTTP/1.1 response carrying an RFC 9457 problem, for answers given
 * before or outside libmicrohttpd (the listener, connection deadlines):
 * status line, Content-Type, Cache-Control, Connection: close, X-Request-Id,
 * Retry-After when retry_after_s > 0, Content-Length and the body.  Written
 * into buf (size bytes); returns its length, or 0 when it does not fit.
 */
size_t http_problem_raw(char *buf, size_t size, int status, const char *slug, const char *title, const char *detail,
			const char *request_id, int retry_after_s);
/*
 * Add a response header (name and value must live until the response is sent:
 * static strings or the request's arena).  Past HTTP_MAX_EXTRA_HEADERS the
 * header is dropped and -T2S_ERR_INTERNAL returned.
 */
T2S_MUST_CHECK
int http_reply_header(struct http_response *res, const char *name, const char *value);

/* HTTP status for an error code (400 invalid, 404, 403, 504 timeout, ...). */
int http_status_for(enum t2s_code code);

#endif
