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
	struct http_producer *producer; /* a body made as it is sent (http_reply_produced), else NULL; owned */
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

/*
 * A body made as it is sent, for large answers (CSV rows): once the handler
 * has returned, the connection's thread calls fill(ctx, out) whenever the
 * previous piece has gone out.  fill appends the next piece to out (empty,
 * bounded by HTTP_PRODUCER_PIECE_MAX, on entry) and returns 1 while more
 * follow, 0 with the last piece, negative to cut the response short (the
 * client sees a truncated chunked body).  ctx is owned from this call on,
 * success or not: ctx_free (may be NULL) frees it when the response is done
 * or cannot be made; fill never runs after it.  ctx must not point into the
 * request or its arena (the request may be gone before the last piece).
 * The response has no Content-Length (HTTP/1.1 chunked); status and the
 * headers are as for any response.  On out of memory res gets a 500 problem.
 */
#define HTTP_PRODUCER_PIECE_MAX ((size_t)1 << 30)
typedef int (*http_fill_fn)(void *ctx, struct strbuf *out);
void http_reply_produced(struct http_response *res, int status, const char *content_type, http_fill_fn fill,
			 void *ctx, void (*ctx_free)(void *ctx));
/* Free a response's producer and its ctx (NULL: nothing); for http_reply.c and http_server.c. */
void http_producer_free(struct http_producer *p);
/*
 * For http_server.c: the libmicrohttpd response carrying res's body, from its
 * buffer or its producer (which it takes, even when it fails: NULL when out
 * of memory; res->body is left for the caller to free).  *bytes_out is set
 * to the body's length, and for a produced body grows as each piece is
 * handed to libmicrohttpd (on the connection's thread, until the request
 * completes: bytes_out must live that long).
 */
struct MHD_Response *http_body_response(struct http_response *res, size_t *bytes_out);

/*
 * Content negotiation on the Accept header (RFC 9110 section 12.5.1): the
 * index of the offer (n media types "type/subtype", the default first) the
 * client prefers, or -1 when it accepts none of them (answer 406).  Each
 * media range weighs the offers it matches by its q (default 1); for each
 * offer the most specific matching range counts (text/csv;q=0 excludes it
 * even beside a wildcard), other parameters are ignored; the highest q above 0
 * wins, ties going to the earlier offer.  No Accept header, one without a
 * well-formed range, or one that only excludes (every q is 0) gives the
 * first offer it does not exclude.  At most HTTP_ACCEPT_MAX_RANGES ranges
 * are read.
 */
#define HTTP_ACCEPT_MAX_RANGES 32
int http_negotiate(struct http_request *req, const char *const *offers, size_t n);

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
