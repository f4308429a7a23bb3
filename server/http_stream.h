/*
 * http_stream.h - server-sent events (text/event-stream) for a handler
 * whose work reports as it goes (POST /query with Accept: text/event-stream).
 *
 * The handler checks the request as usual (errors found then are ordinary
 * problem responses with their status), then calls http_stream_start with
 * the work to do.  The work, fn(stream, ctx), runs on a worker thread of its
 * own; the connection's thread sends each event it writes with
 * http_stream_event as soon as it is written (HTTP/1.1 chunked; the status
 * is 200 and the Content-Type text/event-stream).  When fn returns, the
 * stream ends.
 *
 * A client that goes away is noticed by the connection's thread (while it
 * waits for events it watches the socket); from then on http_stream_event
 * and http_stream_gone say so, and fn should stop early.  The request (and
 * everything in its arena) stays valid for fn until fn returns: the
 * request's completion waits for the worker (http_stream_finish).
 *
 * Thread rules: http_stream_event, http_stream_gone and http_stream_request
 * are for fn's thread; http_stream_response and http_stream_finish are for
 * http_server.c on the connection's thread.
 */
#ifndef T2S_HTTP_STREAM_H
#define T2S_HTTP_STREAM_H

#include "common/contract.h"
#include "server/http.h"

#include <stdbool.h>

struct http_stream;

typedef void (*http_stream_fn)(struct http_stream *s, void *ctx);

/* True when the request's Accept header lists text/event-stream (with a q other than 0). */
bool http_accepts_event_stream(struct http_request *req);

/*
 * Make res an event stream fed by fn(s, ctx) on a new thread.  ctx is owned
 * by the stream from this call on, success or not: ctx_free (may be NULL)
 * frees it after fn has returned, or at once when the stream cannot start.
 * Returns 0, or -T2S_ERR_NOMEM / -T2S_ERR_UNAVAILABLE (no thread) with res
 * left untouched for the caller's problem response.
 */
T2S_MUST_CHECK
int http_stream_start(struct http_request *req, struct http_response *res, http_stream_fn fn, void *ctx,
		      void (*ctx_free)(void *ctx));

/*
 * Queue one event: "event: <event>\ndata: <data>\n\n".  data is one line
 * (compact JSON); it is copied.  Returns 0, or -T2S_ERR_CANCELLED when the
 * client has gone away (nothing more will be sent), -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int http_stream_event(struct http_stream *s, const char *event, const char *data);

/*
 * For a plain (not streamed) answer whose handler blocks: true when the
 * client has closed its connection.  Any thread; cheap (one peek).
 */
bool http_request_client_gone(struct http_request *req);

/* True once the client has gone away. */
bool http_stream_gone(struct http_stream *s);

/* The request being answered (valid until fn returns; read-only). */
struct http_request *http_stream_request(struct http_stream *s);

/*
 * For http_server.c: on_end(end_ctx) is called once, on the connection's
 * thread, when the stream's last event has been handed to libmicrohttpd
 * (before the final chunk goes out), so what the request held can be let go
 * before its client can send the next one.  Not called when the request
 * completes otherwise (http_stream_finish then).
 */
void http_stream_on_end(struct http_stream *s, void (*on_end)(void *end_ctx), void *end_ctx);

/* For http_server.c: the libmicrohttpd response reading req->stream (NULL when out of memory). */
struct MHD_Response *http_stream_response(struct http_stream *s);

/*
 * For http_server.c, at the request's completion: tell fn the client is
 * gone if it still runs, wait for it to return, free ctx, drop the
 * request's reference.  s may be NULL.
 */
void http_stream_finish(struct http_stream *s);

/* Bytes handed to libmicrohttpd so far (for the access log). */
size_t http_stream_bytes(struct http_stream *s);

#endif
