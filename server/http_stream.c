/*
 * http_stream.c - server-sent events fed by a worker thread (see
 * http_stream.h).
 *
 * The worker appends whole events to a bounded buffer under a mutex and
 * signals; libmicrohttpd's content reader, on the connection's thread,
 * waits on the condition variable and hands out what has been written.
 * While it waits it looks at the socket every POLL_MS: an orderly close or
 * a reset by the client marks the stream gone (the worker stops at its next
 * event), and after KEEPALIVE_MS without events it sends an SSE comment so
 * that proxies do not time the stream out.
 *
 * Two references keep the stream: the request's (dropped by
 * http_stream_finish at completion, after joining the worker) and the
 * libmicrohttpd response's (dropped by its free callback); whichever comes
 * last frees it.
 */
#include "server/http_stream.h"

#include "server/log.h"

#include "common/trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#define POLL_MS 100
#define KEEPALIVE_MS 15000
#define STREAM_MAX_PENDING ((size_t)256 << 20) /* unsent bytes; past it the stream is cut */

struct http_stream {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct strbuf out;   /* written, not yet all handed out; under mu */
	size_t handed;       /* bytes of out already handed to libmicrohttpd; under mu */
	size_t total;        /* all bytes handed out; under mu */
	bool finished;       /* fn returned; under mu */
	bool gone;           /* the client went away, or the request completed first; under mu */
	int refs;            /* under mu */
	int fd;              /* the client's socket, -1 when unknown */
	bool started;
	pthread_t thread;
	struct http_request *req;
	http_stream_fn fn;
	void *ctx;
	void (*ctx_free)(void *ctx);
	void (*on_end)(void *end_ctx); /* once, when the last event is handed out (http_stream_on_end) */
	void *end_ctx;
};

bool http_accepts_event_stream(struct http_request *req)
{
	const char *accept = http_request_header(req, "Accept");
	static const char want[] = "text/event-stream";
	while (accept && *accept) {
		accept += strspn(accept, " \t,");
		size_t n = strcspn(accept, ",");
		size_t type_len = strcspn(accept, ";,");
		while (type_len && (accept[type_len - 1] == ' ' || accept[type_len - 1] == '\t'))
			type_len--;
		if (type_len == sizeof(want) - 1 && strncasecmp(accept, want, type_len) == 0) {
			/* q=0 means "not acceptable" (RFC 9110 section 12.4.2). */
			const char *q = strstr(accept, "q=");
			bool zero = q && q < accept + n && strtod(q + 2, NULL) <= 0.0;
			return !zero;
		}
		accept += n;
	}
	return false;
}

/* Drop one reference; the last one frees the stream.  Called without mu held. */
static void stream_unref(struct http_stream *s)
{
	pthread_mutex_lock(&s->mu);
	bool last = --s->refs == 0;
	pthread_mutex_unlock(&s->mu);
	if (!last)
		return;
	strbuf_release(&s->out);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

static void *stream_main(void *arg)
{
	struct http_stream *s = arg;
	log_set_request_id(s->req->request_id);
	log_set_traceparent(s->req->traceparent);
	trace_set(s->req->traceparent);
	s->fn(s, s->ctx);
	trace_set(NULL);
	log_set_request_id(NULL);
	pthread_mutex_lock(&s->mu);
	s->finished = true;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int http_stream_start(struct http_request *req, struct http_response *res, http_stream_fn fn, void *ctx,
		      void (*ctx_free)(void *ctx))
{
	struct http_stream *s = calloc(1, sizeof(*s));
	if (!s) {
		if (ctx_free)
			ctx_free(ctx);
		return -T2S_ERR_NOMEM;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	strbuf_init(&s->out, STREAM_MAX_PENDING);
	s->refs = 1;
	s->req = req;
	s->fn = fn;
	s->ctx = ctx;
	s->ctx_free = ctx_free;
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	s->fd = ci ? ci->connect_fd : -1;
	if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
		if (ctx_free)
			ctx_free(ctx);
		stream_unref(s);
		return -T2S_ERR_UNAVAILABLE;
	}
	s->started = true;
	req->stream = s;
	free(res->body);
	res->body = NULL;
	res->len = 0;
	res->status = 200;
	res->content_type = "text/event-stream";
	return 0;
}

int http_stream_event(struct http_stream *s, const char *event, const char *data)
{
	int rc = 0;
	pthread_mutex_lock(&s->mu);
	if (s->gone)
		rc = -T2S_ERR_CANCELLED;
	else if (strbuf_addf(&s->out, "event: %s\ndata: %s\n\n", event, data) < 0)
		rc = -T2S_ERR_NOMEM;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

bool http_stream_gone(struct http_stream *s)
{
	pthread_mutex_lock(&s->mu);
	bool gone = s->gone;
	pthread_mutex_unlock(&s->mu);
	return gone;
}

struct http_request *http_stream_request(struct http_stream *s)
{
	return s->req;
}

size_t http_stream_bytes(struct http_stream *s)
{
	pthread_mutex_lock(&s->mu);
	size_t n = s->total;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* True when the client closed its side or reset the connection (looked at without reading). */
/* Has the peer of fd closed its side (a peeked EOF or a socket error; bytes of a next request do not count)? */
static bool peer_closed(int fd)
{
	if (fd < 0)
		return false;
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		return true;
	return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

bool http_request_client_gone(struct http_request *req)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci && peer_closed(ci->connect_fd);
}

static void deadline_in(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* libmicrohttpd's content reader: blocks (thread per connection) until there is something to send. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct http_stream *s = cls;
	long idle_ms = 0;
	(void)pos;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		if (s->handed < s->out.len) {
			size_t n = s->out.len - s->handed;
			if (n > max)
				n = max;
			memcpy(buf, s->out.buf + s->handed, n);
			s->handed += n;
			s->total += n;
			if (s->handed == s->out.len) {
				strbuf_release(&s->out);
				strbuf_init(&s->out, STREAM_MAX_PENDING);
				s->handed = 0;
			}
			pthread_mutex_unlock(&s->mu);
			return (ssize_t)n;
		}
		if (s->finished || s->gone) {
			bool gone = s->gone;
			void (*on_end)(void *) = s->on_end;
			s->on_end = NULL;
			pthread_mutex_unlock(&s->mu);
			if (on_end)
				on_end(s->end_ctx);
			return gone ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
		}
		struct timespec ts;
		deadline_in(&ts, POLL_MS);
		if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) != ETIMEDOUT)
			continue;
		pthread_mutex_unlock(&s->mu);
		bool closed = peer_closed(s->fd);
		idle_ms += POLL_MS;
		pthread_mutex_lock(&s->mu);
		if (closed && !s->gone) {
			s->gone = true;
			log_set_request_id(s->req->request_id);
			log_msg(LOG_INFO, "event stream: the client went away; the work stops at its next step");
			log_set_request_id(NULL);
		}
		if (!s->gone && idle_ms >= KEEPALIVE_MS && s->handed == s->out.len) {
			static const char ping[] = ": keep-alive\n\n";
			size_t n = sizeof(ping) - 1 < max ? sizeof(ping) - 1 : max;
			memcpy(buf, ping, n);
			s->total += n;
			pthread_mutex_unlock(&s->mu);
			return (ssize_t)n;
		}
	}
}

static void stream_response_free(void *cls)
{
	struct http_stream *s = cls;
	pthread_mutex_lock(&s->mu);
	if (!s->finished)
		s->gone = true;
	pthread_mutex_unlock(&s->mu);
	stream_unref(s);
}

struct MHD_Response *http_stream_response(struct http_stream *s)
{
	struct MHD_Response *r =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, s, stream_response_free);
	if (!r)
		return NULL;
	pthread_mutex_lock(&s->mu);
	s->refs++;
	pthread_mutex_unlock(&s->mu);
	/* Tell buffering proxies (nginx) to pass events on as they come. */
	MHD_add_response_header(r, "X-Accel-Buffering", "no");
	return r;
}

void http_stream_on_end(struct http_stream *s, void (*on_end)(void *end_ctx), void *end_ctx)
{
	pthread_mutex_lock(&s->mu);
	s->on_end = on_end;
	s->end_ctx = end_ctx;
	pthread_mutex_unlock(&s->mu);
}

void http_stream_finish(struct http_stream *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	if (!s->finished)
		s->gone = true;
	pthread_mutex_unlock(&s->mu);
	if (s->started)
		pthread_join(s->thread, NULL);
	if (s->ctx_free)
		s->ctx_free(s->ctx);
	s->ctx = NULL;
	stream_unref(s);
}
