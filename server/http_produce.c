/*
 * http_produce.c - response bodies for libmicrohttpd: a buffer made whole by
 * the handler, or a body made piece by piece as it is sent (see
 * http_reply_produced in http.h).
 *
 * A produced body is read by libmicrohttpd's content reader on the
 * connection's thread: when the piece in hand has gone out it asks fill for
 * the next one, so at most one piece (and the socket's buffers) is in memory
 * beside what the handler's ctx holds.  The response's free callback frees
 * the producer and its ctx.
 */
#include "server/http.h"

#include <stdlib.h>
#include <string.h>

#define PRODUCER_BLOCK (32 * 1024) /* the most libmicrohttpd asks for at once */

struct http_producer {
	http_fill_fn fill;
	void *ctx;
	void (*ctx_free)(void *ctx);
	struct strbuf piece; /* the piece being sent */
	size_t sent;         /* bytes of piece already handed out */
	bool last;           /* piece is the last one */
	size_t *bytes_out;   /* the request's count of body bytes handed out (http_body_response), or NULL */
};

void http_producer_free(struct http_producer *p)
{
	if (!p)
		return;
	if (p->ctx_free)
		p->ctx_free(p->ctx);
	strbuf_release(&p->piece);
	free(p);
}

void http_reply_produced(struct http_response *res, int status, const char *content_type, http_fill_fn fill,
			 void *ctx, void (*ctx_free)(void *ctx))
{
	static const char oom[] = "{\"type\":\"urn:text2sqld:problem:internal\",\"title\":\"Internal "
				  "error\",\"status\":500,\"detail\":\"out of memory\"}";
	struct http_producer *p = calloc(1, sizeof(*p));
	/* This reply replaces an earlier body or producer; headers already added stay. */
	free(res->body);
	http_producer_free(res->producer);
	res->status = status;
	res->content_type = content_type;
	res->body = NULL;
	res->len = 0;
	res->producer = p;
	if (!p) {
		if (ctx_free)
			ctx_free(ctx);
		res->status = 500;
		res->content_type = "application/problem+json";
		res->body = strdup(oom);
		res->len = res->body ? sizeof(oom) - 1 : 0;
		return;
	}
	*p = (struct http_producer){.fill = fill, .ctx = ctx, .ctx_free = ctx_free};
	strbuf_init(&p->piece, HTTP_PRODUCER_PIECE_MAX);
}

/* libmicrohttpd's content reader: the next bytes of the body, asking fill for a new piece when one is done. */
static ssize_t producer_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct http_producer *p = cls;
	(void)pos;
	while (p->sent == p->piece.len) {
		if (p->last)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (p->piece.alloc) {
			p->piece.len = 0;
			p->piece.buf[0] = '\0';
		}
		p->sent = 0;
		int rc = p->fill(p->ctx, &p->piece);
		if (rc < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		p->last = rc == 0;
	}
	size_t n = p->piece.len - p->sent < max ? p->piece.len - p->sent : max;
	memcpy(buf, p->piece.buf + p->sent, n);
	p->sent += n;
	if (p->bytes_out)
		*p->bytes_out += n;
	return (ssize_t)n;
}

static void producer_done(void *cls)
{
	http_producer_free(cls);
}

struct MHD_Response *http_body_response(struct http_response *res, size_t *bytes_out)
{
	struct http_producer *p = res->producer;
	res->producer = NULL;
	*bytes_out = res->len;
	if (p) {
		p->bytes_out = bytes_out;
		struct MHD_Response *r =
			MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, PRODUCER_BLOCK, producer_read, p, producer_done);
		if (!r)
			http_producer_free(p);
		return r;
	}
	return MHD_create_response_from_buffer(res->len, res->body ? res->body : (void *)"",
					       res->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
}
