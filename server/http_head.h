/*
 * http_head.h - checking the head of an HTTP/1.x request (request line and
 * header fields) as its bytes arrive, before libmicrohttpd sees it.
 *
 * The listener (http_listener.c) peeks at the first request of every new
 * connection and hands the connection to libmicrohttpd only once its head is
 * complete and sound; a head that is malformed or over a limit is answered
 * here with an RFC 9457 problem instead of the library's own HTML page.  The
 * rules are those of RFC 9112 that the library enforces (so that nothing we
 * pass on earns an HTML error), plus the service's limits:
 *
 *   400  request line not "METHOD SP target SP HTTP/d.d"; a header line
 *        without a field name and colon, or with space before the colon; a
 *        NUL or other control byte; a Content-Length that is not a plain
 *        decimal number, or two that differ; Content-Length together with
 *        Transfer-Encoding (a request-smuggling shape); in the chunked body
 *        bytes that arrived with the head, a chunk line ending in a bare LF
 *        (another smuggling shape) or chunk data not followed by CRLF
 *   413  Content-Length above limits.max_body_bytes, or chunk sizes (in the
 *        bytes that arrived with the head) with more than 16 hex digits or
 *        adding up to more than it
 *   414  request target longer than limits.max_uri_bytes
 *   431  head longer than limits.max_header_bytes
 *   501  a Transfer-Encoding other than chunked
 *   505  an HTTP version other than 1.x
 *
 * Pure functions: no I/O, no allocation, safe from any thread.
 */
#ifndef T2S_HTTP_HEAD_H
#define T2S_HTTP_HEAD_H

#include <stdbool.h>
#include <stddef.h>

struct http_head_limits {
	size_t max_header_bytes; /* request line + header fields + blank line */
	size_t max_uri_bytes;    /* request target */
	size_t max_body_bytes;   /* announced Content-Length */
};

enum http_head_state {
	HTTP_HEAD_INCOMPLETE, /* sound so far; more bytes are needed */
	HTTP_HEAD_OK,         /* complete and sound: verdict.head_len is its length */
	HTTP_HEAD_BAD,        /* answer verdict.status and close */
};

struct http_head_verdict {
	int status;          /* HTTP_HEAD_BAD: 400, 413, 414, 431, 501 or 505 */
	const char *slug;    /* problem type slug (static) */
	const char *title;   /* problem title (static) */
	char detail[160];    /* what was wrong, without echoing the request */
	size_t head_len;     /* HTTP_HEAD_OK: bytes up to and including the blank line */
	char method[16];     /* the method as a metric label (http_method_label), "" when unknown */
};

/*
 * Check buf[0..len), the bytes received so far on a connection (the head of
 * its first request, maybe followed by body bytes).  *ret is always filled.
 */
enum http_head_state http_head_check(const char *buf, size_t len, const struct http_head_limits *lim,
				     struct http_head_verdict *ret);

/*
 * The method as a metric label: one of a fixed set (GET, HEAD, POST, PUT,
 * DELETE, PATCH, OPTIONS, TRACE, CONNECT) or "other", so that clients cannot
 * create metric series at will.  method need not be NUL-terminated: n bytes.
 */
const char *http_method_label(const char *method, size_t n);

/* A request body's Content-Type (ct, NULL when absent: accepted) is JSON: application/json or a "+json" type. */
bool http_content_type_is_json(const char *ct);

#endif
