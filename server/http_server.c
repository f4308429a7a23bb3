/*
 * http_server.c - request life cycle on top of libmicrohttpd.
 *
 * Connections come from the listener (http_listener.c), which holds each new
 * one until the head of its first request is complete and sound, and hands
 * it to libmicrohttpd (MHD_add_connection) while fewer than
 * limits.max_connections are served.
 *
 * The access handler is called several times per request: first with the
 * headers (we create the request, give it an id, reject an announced body
 * over the cap with 413), then once per body chunk (appended to a bounded
 * buffer), then once more with no data, when the request is routed,
 * authenticated and handed to its handler.  The completion callback writes
 * the access log line, records metrics and frees the request.
 *
 * Deadlines.  libmicrohttpd only knows an idle timeout, so each connection
 * has a slot (struct conn_slot) whose phase follows its current request:
 *   IDLE      waiting for a request line (since accept or the last response):
 *             at most limits.connection_timeout_s in all;
 *   HEAD      request line seen (URI callback), headers arriving: at most
 *             limits.request_head_timeout_ms;
 *   BODY      headers complete, body arriving: at most
 *             limits.request_body_timeout_ms;
 *   HANDLING  the handler runs: bounded by the handlers' own limits;
 *   SENDING   its answer is queued (moved to before it is): nothing else
 *             may write to the socket.
 * The listener thread checks the slots every 100 ms (reap); an expired HEAD
 * or BODY is answered 408 and the socket shut down, an expired IDLE is
 * closed silently.  Phases change by compare-and-swap, so the reaper and
 * the connection's own thread never both answer: whoever moves the phase on
 * first wins, and a connection whose phase became KILLED is refused
 * (MHD_NO) by the access handler.  When the drain time is up, the requests
 * still HANDLING are answered 503 the same way (http_server_cut_in_flight).
 */
#include "server/http_server.h"

#include "server/auth.h"
#include "server/cors.h"
#include "server/generation.h"
#include "server/http_access.h"
#include "server/http_head.h"
#include "server/traceparent.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "common/trace.h"
#include "server/http.h"
#include "server/http_listener.h"
#include "server/http_stream.h"
#include "server/log.h"
#include "server/rate_limit.h"
#include "server/router.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

enum conn_phase { PHASE_IDLE, PHASE_HEAD, PHASE_BODY, PHASE_HANDLING, PHASE_SENDING, PHASE_KILLED };

/* One connection served by libmicrohttpd (its socket context); see the top of this file. */
struct conn_slot {
	struct conn_slot *prev, *next; /* http_server.slots, under slots_lock */
	int fd;
	char peer[64];             /* the socket's peer address, as text */
	atomic_int phase;          /* enum conn_phase */
	atomic_llong since_ms;     /* start of the phase */
	atomic_int killed_status;  /* 408 when the reaper answered, else 0 */
	size_t uri_len;            /* of the current request (connection thread only) */
};

struct http_server {
	struct MHD_Daemon *daemon;
	struct app *app;
	struct http_listener *listener;
	pthread_mutex_t slots_lock;
	struct conn_slot *slots;
	_Atomic(struct generation *) gen; /* the one in force */
	struct rate_limiter *rate;        /* every key's bucket, across reloads */
	int port;
};

/* Per-request bookkeeping beyond struct http_request. */
struct request_state {
	struct http_request req;
	struct http_server *srv;
	struct conn_slot *slot; /* NULL when the connection has none (out of memory) */
	struct generation *gen; /* the config and limiter the request arrived under */
	const char *route_label;
	int status;
	size_t bytes_out;
	bool responded;
	bool close_after;       /* answer with Connection: close (head over a limit, a chunked body) */
	bool counted_work;      /* counted in app->work_in_flight (uncounted at completion) */
	struct rate_bucket *entered; /* the key's bucket entered (left once the answer is queued) */
	enum route_match match; /* routing, done when the headers are complete */
	const struct route *route;
	char allow[64];
};

static struct metric_family *m_requests;
static struct metric_family *m_duration;
static struct metric_family *m_in_flight;
static struct metric_family *m_closed;
static struct metric_family *m_connections;
static struct metric_family *m_connection_limit;
static struct metric_family *m_rate_limited;
static struct metric_family *m_concurrency_limited;
static struct metric_family *m_limit;

static void register_metrics(void)
{
	static const char *const reason_label[] = {"reason", NULL};
	static const char *const state_label[] = {"state", NULL};
	static const char *const req_labels[] = {"route", "method", "code", NULL};
	static const char *const route_label[] = {"route", NULL};
	m_requests = metrics_family("text2sqld_http_requests_total",
				    "HTTP requests by route, method and status class.", METRIC_COUNTER, req_labels,
				    NULL, 0);
	m_duration = metrics_family("text2sqld_http_request_duration_seconds",
				    "HTTP request latency from headers received to response queued, by route.",
				    METRIC_HISTOGRAM, route_label, metrics_latency_buckets,
				    metrics_latency_buckets_count);
	m_in_flight = metrics_family("text2sqld_http_requests_in_flight", "HTTP requests being served.",
				     METRIC_GAUGE, NULL, NULL, 0);
	m_closed = metrics_family("text2sqld_http_connections_closed_total",
				  "Connections the server answered and closed on its own, by reason (head_timeout, "
				  "body_timeout, idle_timeout, overflow, per_ip_limit, pending_evicted, bad_head, drain_cut).",
				  METRIC_COUNTER, reason_label, NULL, 0);
	m_connections = metrics_family("text2sqld_http_connections",
				       "Open connections: pending (first request head still arriving) and active "
				       "(served).",
				       METRIC_GAUGE, state_label, NULL, 0);
	static const char *const limit_label[] = {"limit", NULL};
	m_rate_limited = metrics_family("text2sqld_http_rate_limited_total",
					"Requests refused 429 because their API key was over its rate (limits.key_rate_per_s, "
					"auth.api_keys[].rate_per_s).",
					METRIC_COUNTER, NULL, NULL, 0);
	m_concurrency_limited = metrics_family("text2sqld_http_concurrency_limited_total",
					       "Requests refused 429 because their API key already ran its most "
					       "requests at once (limits.key_max_concurrent).",
					       METRIC_COUNTER, NULL, NULL, 0);
	m_limit = metrics_family("text2sqld_limit",
				 "Configured limits: request deadlines and budgets (ms), body and header bytes, the "
				 "default per-key rate (requests/s, 0 unlimited) and burst, the requests one key "
				 "may run at once and the most time one key's request may ask (ms).",
				 METRIC_GAUGE, limit_label, NULL, 0);
	m_connection_limit = metrics_family("text2sqld_http_connections_limit",
					    "Most connections held: pending (limits.max_pending_connections) and active "
					    "(limits.max_connections).",
					    METRIC_GAUGE, state_label, NULL, 0);
}

static long long now_ms(void)
{
	return (long long)clock_now_ms();
}

/* The slot of conn, or NULL. */
static struct conn_slot *slot_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* Move slot from phase from to phase to; false when it is elsewhere (killed, most likely). */
static bool phase_move(struct conn_slot *slot, enum conn_phase from, enum conn_phase to)
{
	int expected = from;
	if (!atomic_compare_exchange_strong(&slot->phase, &expected, to))
		return false;
	atomic_store(&slot->since_ms, now_ms());
	return true;
}

static bool killed(const struct conn_slot *slot)
{
	return slot && atomic_load(&((struct conn_slot *)slot)->phase) == PHASE_KILLED;
}

/* Accept a client's X-Request-Id when it is short and plain; otherwise make one. */
static void assign_request_id(struct http_request *req)
{
	const char *given = http_request_header(req, "X-Request-Id");
	if (given) {
		size_t n = strlen(given);
		bool ok = n > 0 && n < sizeof(req->request_id);
		for (size_t i = 0; ok && i < n; i++) {
			char c = given[i];
			ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
			     c == '_' || c == '.' || c == ':';
		}
		if (ok) {
			memcpy(req->request_id, given, n + 1);
			return;
		}
	}
	http_request_id_new(req->request_id);
}

/*
 * Three quarters or more of the served connections are in use: a response
 * then closes its connection, so that idle keep-alive connections (one key's
 * cheap requests between slow ones) cannot hold the slots another key's
 * request needs (issue 19, fair share).
 */
static bool under_pressure(const struct http_server *srv)
{
	unsigned max = atomic_load(&srv->gen)->cfg->limits.max_connections;
	return max && (unsigned long)http_listener_active(srv->listener) * 4 >= (unsigned long)max * 3;
}

static struct request_state *request_new(struct http_server *srv, struct MHD_Connection *conn, const char *url,
					 const char *method)
{
	struct request_state *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	struct http_request *req = &st->req;
	arena_init(&req->arena);
	st->gen = atomic_load(&srv->gen);
	req->app = srv->app;
	req->cfg = st->gen->cfg;
	req->conn = conn;
	req->start_ms = clock_now_ms();
	req->method = arena_strdup(&req->arena, method);
	size_t path_len = strcspn(url, "?");
	req->path = arena_strndup(&req->arena, url, path_len);
	strbuf_init(&req->body, req->cfg->limits.max_body_bytes);
	st->route_label = "unmatched";
	assign_request_id(req);
	return st;
}

/* st's request no longer counts against its key's running requests (once: at queueing, a stream's end or
   completion, all on the connection's thread). */
static void leave_key(struct request_state *st)
{
	if (st->entered)
		rate_limiter_leave(st->srv->rate, st->entered);
	st->entered = NULL;
}

static void stream_ended(void *ctx)
{
	leave_key(ctx);
}

static enum MHD_Result queue(struct request_state *st, struct http_response *res)
{
	struct http_request *req = &st->req;
	/* a produced body (CSV) is counted as libmicrohttpd takes it; a stream's when it ends (on_completed) */
	struct MHD_Response *r = req->stream ? http_stream_response(req->stream) : http_body_response(res, &st->bytes_out);
	if (!r) {
		free(res->body);
		return MHD_NO;
	}
	res->body = NULL; /* owned by libmicrohttpd now */
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, res->content_type ? res->content_type : "text/plain");
	MHD_add_response_header(r, "X-Request-Id", req->request_id);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (res->allow[0])
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, res->allow);
	if (res->www_authenticate)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"text2sqld\"");
	if (res->retry_after_s > 0) {
		char v[16];
		snprintf(v, sizeof(v), "%d", res->retry_after_s);
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v);
	}
	for (size_t i = 0; i < res->n_headers; i++)
		MHD_add_response_header(r, res->headers[i].name, res->headers[i].value);
	cors_add_headers(req, r);
	if (atomic_load(&req->app->draining) || st->req.body_too_large || st->close_after || under_pressure(st->srv))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	if (st->slot)
		phase_move(st->slot, PHASE_BODY, PHASE_HANDLING);
	if (st->slot && !phase_move(st->slot, PHASE_HANDLING, PHASE_SENDING)) {
		MHD_destroy_response(r); /* the drain answered it 503 (http_server_cut_in_flight) */
		return MHD_NO;
	}
	enum MHD_Result ok = MHD_queue_response(req->conn, (unsigned)res->status, r);
	MHD_destroy_response(r);
	if (!req->stream)
		leave_key(st); /* the answer is written: the client may send its next request at once */
	else
		http_stream_on_end(req->stream, stream_ended, st);
	st->status = res->status;
	st->responded = true;
	return ok;
}

/*
 * Count st's request as work in flight unless the service refuses new work: then
 * false, and the request must not start (dispatch refuses it 503).  Called
 * when the head is complete, so the drain also waits for a request whose
 * body is still arriving.  Counting before the second look at
 * the flag means the drain (which sets the flag, then waits for the count to
 * reach 0) either sees this request or this request sees the flag.
 */
static bool admit_work(struct request_state *st)
{
	struct app *app = st->req.app;
	if (atomic_load(&app->refusing_work))
		return false;
	atomic_fetch_add(&app->work_in_flight, 1);
	if (atomic_load(&app->refusing_work)) {
		atomic_fetch_sub(&app->work_in_flight, 1);
		return false;
	}
	st->counted_work = true;
	return true;
}

/*
 * With auth on: the request's key (401 without a valid one), within its
 * share of the served connections (429 too-many-concurrent-requests, the
 * connection closed so the slot is free at once; counted until its answer is
 * queued) and its rate (429 rate-limited).  False when *res was filled.
 */
static bool admit_key(struct request_state *st, struct http_response *res)
{
	struct http_request *req = &st->req;
	const struct config *cfg = req->cfg;
	char detail[160];
	if (!(req->principal = auth_authenticate(req, res)))
		return false; /* 401 */
	size_t slot = auth_limiter_slot(cfg, req->principal);
	struct rate_bucket *b = st->gen->buckets ? st->gen->buckets[slot] : NULL;
	if (!rate_limiter_enter(st->srv->rate, b, clock_now_ms())) {
		snprintf(detail, sizeof(detail), "API key '%.64s' already runs %u requests, its most at once "
			 "(limits.key_max_concurrent)", req->principal->name, cfg->limits.key_max_concurrent);
		http_reply_problem(res, req, 429, "too-many-concurrent-requests", "Too many requests", detail);
		res->retry_after_s = 1;
		st->close_after = true;
		metrics_add(m_concurrency_limited, NULL, 1);
		return false;
	}
	st->entered = b;
	int retry_s = 0;
	if (!rate_limiter_take(st->srv->rate, b, clock_now_ms(), &retry_s)) {
		snprintf(detail, sizeof(detail), "API key '%.64s' is over its rate of %g requests a second",
			 req->principal->name, req->principal->rate_per_s);
		http_reply_problem(res, req, 429, "rate-limited", "Too many requests", detail);
		res->retry_after_s = retry_s;
		metrics_add(m_rate_limited, NULL, 1);
		return false;
	}
	return true;
}

/* Route, authenticate and run the handler. */
static void dispatch(struct request_state *st, struct http_response *res)
{
	struct http_request *req = &st->req;
	const struct route *route = st->route;
	enum route_match m = st->match;
	memcpy(res->allow, st->allow, sizeof(res->allow));
	if (traceparent_parse(http_request_header(req, "traceparent"), req->traceparent, sizeof(req->traceparent)))
		log_set_traceparent(req->traceparent);
	trace_set(req->traceparent); /* model calls made for this request carry it (cleared in on_request) */
	if (cors_preflight(req, res))
		return;
	if (m == ROUTE_NOT_FOUND) {
		http_reply_problem(res, req, 404, "not-found", "Not found", "no endpoint at this path");
		return;
	}
	if (m == ROUTE_BAD_METHOD) {
		char detail[160];
		snprintf(detail, sizeof(detail), "method %.32s%s is not allowed here; allowed: %s", req->method,
			 strlen(req->method) > 32 ? "..." : "", res->allow);
		http_reply_problem(res, req, 405, "method-not-allowed", "Method not allowed", detail);
		return;
	}
	req->route = route;
	if (route->scope != ROUTE_PUBLIC && !st->counted_work) {
		http_reply_problem(res, req, 503, "draining", "Service unavailable",
				   "the service is shutting down: this request was not started; send it again");
		return;
	}
	if (req->cfg->auth.enabled && route->scope != ROUTE_PUBLIC && !admit_key(st, res))
		return;
	/* Before the handler, so the answer is the same for every database: no existence oracle (auth.h). */
	if (!auth_has_scope(req->cfg, req->principal, route->scope)) {
		auth_reply_missing_scope(res, req, route->scope);
		return;
	}
	if (req->body.len > 0 && !http_content_type_is_json(http_request_header(req, "Content-Type"))) {
		http_reply_problem(res, req, 415, "unsupported-media-type", "Unsupported media type",
				   "request bodies must be application/json");
		return;
	}
	route->handler(req, res);
	if (!res->status)
		http_reply_problem(res, req, 500, "internal", "Internal error", "handler gave no response");
}

static void reply_too_large(struct request_state *st, struct http_response *res)
{
	char detail[128];
	snprintf(detail, sizeof(detail), "request body is larger than the limit of %zu bytes",
		 st->req.cfg->limits.max_body_bytes);
	http_reply_problem(res, &st->req, 413, "payload-too-large", "Payload too large", detail);
}

static enum MHD_Result add_header_bytes(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	size_t *n = cls;
	(void)kind;
	*n += strlen(key) + (value ? strlen(value) : 0) + 4; /* "k: v\r\n" */
	return MHD_YES;
}

/*
 * The head limits for requests after the first on a connection (the
 * listener checked the first): a problem, with Connection: close, when the
 * target or the head is over its limit.  True when *res was filled.
 */
static bool head_over_limits(struct request_state *st, struct http_response *res)
{
	const struct config *cfg = st->req.cfg;
	size_t uri_len = st->slot ? st->slot->uri_len : strlen(st->req.path);
	char detail[128];
	if (uri_len > cfg->limits.max_uri_bytes) {
		snprintf(detail, sizeof(detail), "the request target is longer than the limit of %zu bytes",
			 cfg->limits.max_uri_bytes);
		http_reply_problem(res, &st->req, 414, "uri-too-long", "URI too long", detail);
	} else {
		size_t n = strlen(st->req.method) + uri_len + 13; /* request line */
		MHD_get_connection_values(st->req.conn, MHD_HEADER_KIND, add_header_bytes, &n);
		if (n + 2 <= cfg->limits.max_header_bytes)
			return false;
		snprintf(detail, sizeof(detail), "the request head is longer than the limit of %zu bytes",
			 cfg->limits.max_header_bytes);
		http_reply_problem(res, &st->req, 431, "headers-too-large", "Request header fields too large", detail);
	}
	st->close_after = true;
	return true;
}

/* First call of a request: its headers are complete. */
static enum MHD_Result on_headers(struct http_server *srv, struct MHD_Connection *conn, const char *url,
				  const char *method, void **con_cls)
{
	struct conn_slot *slot = slot_of(conn);
	if (slot && !phase_move(slot, PHASE_HEAD, PHASE_BODY) && !phase_move(slot, PHASE_IDLE, PHASE_BODY))
		return MHD_NO; /* the reaper answered it */
	struct request_state *st = request_new(srv, conn, url, method);
	if (!st)
		return MHD_NO;
	st->slot = slot;
	st->srv = srv;
	*con_cls = st;
	http_access_resolve_client(&st->req, slot ? slot->peer : NULL);
	st->match = router_match(&st->req, &st->route, st->allow, sizeof(st->allow));
	if (st->match != ROUTE_NOT_FOUND)
		st->route_label = st->route->pattern; /* also for a 405: a known path keeps its label */
	if (st->match == ROUTE_FOUND && st->route->scope != ROUTE_PUBLIC)
		admit_work(st); /* a head complete before the drain began: its body may still be on its way */
	/* Counted in flight once admitted (or not): whoever sees the gauge count it sees its admission decided. */
	atomic_fetch_add(&srv->app->in_flight, 1);
	metrics_add(m_in_flight, NULL, 1);
	/* A chunked body is framed by a parser (the library's) that accepts bare-LF chunk lines, which a
	   proxy in front may read otherwise: nothing after it on this connection is taken as a request. */
	st->close_after = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
	struct http_response res = {0};
	const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > st->req.cfg->limits.max_body_bytes) {
		st->req.body_too_large = true;
		reply_too_large(st, &res);
	} else if (!head_over_limits(st, &res)) {
		return MHD_YES;
	}
	log_set_request_id(st->req.request_id);
	enum MHD_Result r = queue(st, &res);
	log_set_request_id(NULL);
	return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct http_server *srv = cls;
	struct request_state *st = *con_cls;
	struct http_response res = {0};
	(void)version;
	if (!st)
		return on_headers(srv, conn, url, method, con_cls);
	if (killed(st->slot))
		return MHD_NO;
	if (*upload_data_size) {
		if (!st->req.body_too_large && strbuf_add(&st->req.body, upload_data, *upload_data_size) < 0)
			st->req.body_too_large = true;
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (st->responded)
		return MHD_YES;
	if (st->slot && !phase_move(st->slot, PHASE_BODY, PHASE_HANDLING))
		return MHD_NO; /* the reaper answered it */
	log_set_request_id(st->req.request_id);
	if (st->req.body_too_large)
		reply_too_large(st, &res);
	else
		dispatch(st, &res);
	enum MHD_Result r = queue(st, &res);
	log_set_request_id(NULL);
	trace_set(NULL);
	return r;
}

static void count_request(const char *route, const char *method_label, int status)
{
	char code[16];
	snprintf(code, sizeof(code), "%dxx", status / 100);
	const char *labels[] = {route, method_label, code, NULL};
	metrics_add(m_requests, labels, 1);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *srv = cls;
	struct request_state *st = *con_cls;
	(void)conn;
	if (!st)
		return;
	struct http_request *req = &st->req;
	if (req->stream) {
		st->bytes_out = http_stream_bytes(req->stream);
		http_stream_finish(req->stream); /* waits for the stream's worker, which uses req */
	}
	double elapsed = clock_now_ms() - req->start_ms;
	const char *reason = NULL;
	if (st->slot) {
		int expected = atomic_load(&st->slot->phase);
		if (expected == PHASE_KILLED && !st->responded) {
			st->status = atomic_load(&st->slot->killed_status);
			st->responded = st->status != 0;
			reason = st->status == 503 ? "drain_cut" : "body_timeout";
		}
		while (expected != PHASE_KILLED && !atomic_compare_exchange_weak(&st->slot->phase, &expected, PHASE_IDLE))
			;
		atomic_store(&st->slot->since_ms, now_ms());
	}
	const char *route[] = {st->route_label, NULL};
	count_request(st->route_label, http_method_label(req->method, strlen(req->method)),
		      st->responded ? st->status : 0);
	metrics_observe(m_duration, route, elapsed / 1000.0);
	log_set_traceparent(req->traceparent);
	log_set_caller(req->principal ? req->principal->name : NULL);
	audit_request_done(req, st->responded ? st->status : 0, elapsed);
	http_access_log(req->cfg, req->client, req->request_id, req->method, req->path, st->route_label,
			st->responded ? st->status : 0, elapsed, req->body.len, st->bytes_out,
			toe == MHD_REQUEST_TERMINATED_COMPLETED_OK, reason);
	metrics_add(m_in_flight, NULL, -1);
	atomic_fetch_sub(&srv->app->in_flight, 1);
	if (st->counted_work)
		atomic_fetch_sub(&srv->app->work_in_flight, 1);
	leave_key(st);
	strbuf_release(&req->body);
	arena_release(&req->arena);
	free(st);
	*con_cls = NULL;
}

/* The request line of a request was read: its head is now arriving. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct conn_slot *slot = slot_of(conn);
	(void)cls;
	if (slot) {
		slot->uri_len = strlen(uri);
		phase_move(slot, PHASE_IDLE, PHASE_HEAD);
	}
	return NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *srv = cls;
	struct conn_slot *slot = *socket_context;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		slot = ci ? calloc(1, sizeof(*slot)) : NULL;
		*socket_context = slot;
		if (!slot)
			return;
		slot->fd = ci->connect_fd;
		const union MHD_ConnectionInfo *ai = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		if (ai && ai->client_addr)
			cidr_addr_text(ai->client_addr, slot->peer, sizeof(slot->peer));
		atomic_init(&slot->phase, PHASE_IDLE);
		atomic_init(&slot->since_ms, now_ms());
		atomic_init(&slot->killed_status, 0);
		pthread_mutex_lock(&srv->slots_lock);
		slot->next = srv->slots;
		if (srv->slots)
			srv->slots->prev = slot;
		srv->slots = slot;
		pthread_mutex_unlock(&srv->slots_lock);
		return;
	}
	if (slot) {
		pthread_mutex_lock(&srv->slots_lock);
		if (slot->prev)
			slot->prev->next = slot->next;
		else
			srv->slots = slot->next;
		if (slot->next)
			slot->next->prev = slot->prev;
		pthread_mutex_unlock(&srv->slots_lock);
		free(slot);
		*socket_context = NULL;
	}
	http_listener_connection_closed(srv->listener);
}

/* Answer slot's request 408 (phase HEAD or BODY, now KILLED) and shut its socket. */
static void kill_slot(struct http_server *srv, struct conn_slot *slot, enum conn_phase was, long limit_ms)
{
	const char *reason = was == PHASE_HEAD ? "head_timeout" : was == PHASE_BODY ? "body_timeout" : "idle_timeout";
	const char *labels[] = {reason, NULL};
	metrics_add(m_closed, labels, 1);
	if (was == PHASE_HEAD || was == PHASE_BODY) {
		char id[33], detail[128], buf[1024];
		http_request_id_new(id);
		snprintf(detail, sizeof(detail), "the request %s was not complete within %ld ms",
			 was == PHASE_HEAD ? "head" : "body", limit_ms);
		size_t n = http_problem_raw(buf, sizeof(buf), 408, "request-timeout", "Request timeout", detail, id, 0);
		atomic_store(&slot->killed_status, 408);
		if (n)
			(void)!send(slot->fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (was == PHASE_HEAD) { /* no request exists yet to log and count it */
			count_request("unmatched", "other", 408);
			http_access_log(atomic_load(&srv->gen)->cfg, slot->peer, id, "", "", "unmatched", 408, 0, 0, n,
					false, reason);
		}
	}
	shutdown(slot->fd, SHUT_RDWR); /* the connection's thread sees the end and closes it */
}

int http_server_cut_in_flight(struct http_server *srv)
{
	int n = 0;
	pthread_mutex_lock(&srv->slots_lock);
	for (struct conn_slot *slot = srv->slots; slot; slot = slot->next) {
		int phase = PHASE_HANDLING;
		if (!atomic_compare_exchange_strong(&slot->phase, &phase, PHASE_KILLED))
			continue;
		char id[33], buf[1024];
		http_request_id_new(id);
		size_t len = http_problem_raw(buf, sizeof(buf), 503, "draining", "Service unavailable",
					      "the service is shutting down and its drain time (limits.drain_timeout_ms) "
					      "is up: this request was stopped before its answer; send it again",
					      id, HTTP_RETRY_AFTER_UNAVAILABLE_S);
		atomic_store(&slot->killed_status, 503);
		if (len)
			(void)!send(slot->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		shutdown(slot->fd, SHUT_RDWR);
		const char *labels[] = {"drain_cut", NULL};
		metrics_add(m_closed, labels, 1);
		n++;
	}
	pthread_mutex_unlock(&srv->slots_lock);
	return n;
}

/* Every 100 ms on the listener thread: end the phases that outlived their limit. */
static void reap(void *ctx)
{
	struct http_server *srv = ctx;
	const struct config *cfg = atomic_load(&srv->gen)->cfg;
	long limits[] = {[PHASE_IDLE] = (long)cfg->limits.connection_timeout_s * 1000,
			 [PHASE_HEAD] = cfg->limits.request_head_timeout_ms,
			 [PHASE_BODY] = cfg->limits.request_body_timeout_ms};
	long long now = now_ms();
	pthread_mutex_lock(&srv->slots_lock);
	for (struct conn_slot *slot = srv->slots; slot; slot = slot->next) {
		int phase = atomic_load(&slot->phase);
		if (phase > PHASE_BODY || now - atomic_load(&slot->since_ms) <= limits[phase])
			continue;
		if (atomic_compare_exchange_strong(&slot->phase, &phase, PHASE_KILLED))
			kill_slot(srv, slot, (enum conn_phase)phase, limits[phase]);
	}
	pthread_mutex_unlock(&srv->slots_lock);
}

/* The listener answered a connection itself. */
static void on_answered(void *ctx, const struct sockaddr *addr, int status, const char *method, const char *reason,
			const char *request_id, const char *detail)
{
	struct http_server *srv = ctx;
	const char *labels[] = {reason, NULL};
	char client[64];
	(void)detail;
	cidr_addr_text(addr, client, sizeof(client));
	metrics_add(m_closed, labels, 1);
	count_request("unmatched", *method ? method : "other", status);
	http_access_log(atomic_load(&srv->gen)->cfg, client, request_id, method, "", "unmatched", status, 0, 0, 0,
			true, reason);
}

/* Whether addr is one of the configured gateways (the listener's per-address cap spares them). */
static bool is_trusted_proxy(void *ctx, const struct sockaddr *addr)
{
	struct http_server *srv = ctx;
	const struct config *cfg = atomic_load(&srv->gen)->cfg;
	return cidr_list_contains(cfg->listen.trusted_proxies, cfg->listen.n_trusted_proxies, addr);
}

static int hand_off(void *ctx, int fd, const struct sockaddr *addr, socklen_t addrlen)
{
	struct http_server *srv = ctx;
	return MHD_add_connection(srv->daemon, fd, addr, addrlen) == MHD_YES ? 0 : -1;
}

static void collect_connections(void *ctx)
{
	struct http_server *srv = ctx;
	const char *pending[] = {"pending", NULL}, *active[] = {"active", NULL};
	metrics_set(m_connections, pending, http_listener_pending(srv->listener));
	metrics_set(m_connections, active, http_listener_active(srv->listener));
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	(void)cls;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	log_json(LOG_WARN, buf, json_pack("{s:s}", "component", "libmicrohttpd"));
}

static struct http_listener_options listener_options(const struct config *cfg)
{
	return (struct http_listener_options){
		.host = cfg->listen.host,
		.port = cfg->listen.port,
		.reuse_port = cfg->listen.reuse_port,
		.max_active = cfg->limits.max_connections,
		.max_pending = cfg->limits.max_pending_connections,
		.max_pending_per_ip = cfg->limits.max_connections_per_ip,
		.head_timeout_ms = cfg->limits.request_head_timeout_ms,
		.head = {.max_header_bytes = cfg->limits.max_header_bytes,
			 .max_uri_bytes = cfg->limits.max_uri_bytes,
			 .max_body_bytes = cfg->limits.max_body_bytes},
	};
}

static void set_limit_gauges(const struct config *cfg)
{
	const struct {
		const char *name;
		double value;
	} limits[] = {
		{"request_head_timeout_ms", (double)cfg->limits.request_head_timeout_ms},
		{"request_body_timeout_ms", (double)cfg->limits.request_body_timeout_ms},
		{"execution_timeout_ms", (double)cfg->execution.timeout_ms},
		{"max_body_bytes", (double)cfg->limits.max_body_bytes},
		{"max_header_bytes", (double)cfg->limits.max_header_bytes},
		{"key_rate_per_s", cfg->limits.key_rate_per_s},
		{"key_burst", (double)cfg->limits.key_burst},
		{"key_max_concurrent", (double)cfg->limits.key_max_concurrent},
		{"key_max_timeout_ms", (double)cfg->limits.key_max_timeout_ms},
	};
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		const char *labels[] = {limits[i].name, NULL};
		metrics_set(m_limit, labels, limits[i].value);
	}
}

int http_server_apply_config(struct http_server *srv, const struct config *cfg, struct t2s_error *err)
{
	struct generation *g = generation_new(srv->rate, cfg);
	if (!g)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	g->older = atomic_load(&srv->gen);
	atomic_store(&srv->gen, g);
	atomic_store(&srv->app->cfg, cfg);
	set_limit_gauges(cfg);
	return 0;
}

void http_server_stop_accepting(struct http_server *srv)
{
	http_listener_stop_accepting(srv->listener);
}

int http_server_check_listen(const struct config *cfg, struct t2s_error *err)
{
	struct sockaddr_storage addr;
	socklen_t len;
	return http_listener_resolve(cfg->listen.host, cfg->listen.port, &addr, &len, err);
}

int http_server_start(struct app *app, struct http_server **ret, struct t2s_error *err)
{
	register_metrics();
	struct http_server *srv = calloc(1, sizeof(*srv));
	if (!srv)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	srv->app = app;
	pthread_mutex_init(&srv->slots_lock, NULL);
	const struct config *cfg = app->cfg;
	struct http_listener_options lo = listener_options(cfg);
	struct http_listener_callbacks cb = {.hand_off = hand_off, .answered = on_answered, .tick = reap,
					     .trusted = is_trusted_proxy, .ctx = srv};
	srv->rate = rate_limiter_new();
	struct generation *g = srv->rate ? generation_new(srv->rate, cfg) : NULL;
	atomic_init(&srv->gen, g);
	int rc = g ? 0 : t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	if (rc == 0)
		rc = http_listener_open(&lo, &cb, &srv->listener, err);
	if (rc < 0) {
		generations_free(g);
		rate_limiter_free(srv->rate);
		pthread_mutex_destroy(&srv->slots_lock);
		free(srv);
		return rc;
	}
	srv->port = http_listener_port(srv->listener);
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			 MHD_USE_ERROR_LOG | MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;
	/*
	 * The listener keeps the served connections under max_connections; the
	 * library's own cap sits above it, because it counts a connection a
	 * little longer (until its thread is joined) than we do.  No cap per
	 * address here: limits.max_connections_per_ip counts the connections
	 * still sending their first head (the listener), since behind a gateway
	 * every served connection comes from one address.  Its memory
	 * pool holds the head and the response headers: room for a head of
	 * max_header_bytes with margin (the listener checked the first head;
	 * later heads are checked in head_over_limits).
	 */
	unsigned mhd_limit = cfg->limits.max_connections + cfg->limits.max_connections / 4 + 16;
	size_t pool = 2 * cfg->limits.max_header_bytes + 8192;
	srv->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_CONNECTION_LIMIT, mhd_limit, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)cfg->limits.connection_timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
		MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv, MHD_OPTION_END);
	if (!srv->daemon) {
		generations_free(g);
		rate_limiter_free(srv->rate);
		http_listener_free(srv->listener);
		pthread_mutex_destroy(&srv->slots_lock);
		free(srv);
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot start the HTTP daemon");
	}
	if ((rc = http_listener_start(srv->listener, err)) < 0) {
		MHD_stop_daemon(srv->daemon);
		generations_free(g);
		rate_limiter_free(srv->rate);
		http_listener_free(srv->listener);
		pthread_mutex_destroy(&srv->slots_lock);
		free(srv);
		return rc;
	}
	const char *pending[] = {"pending", NULL}, *active[] = {"active", NULL};
	set_limit_gauges(cfg);
	metrics_set(m_connection_limit, pending, cfg->limits.max_pending_connections);
	metrics_set(m_connection_limit, active, cfg->limits.max_connections);
	metrics_add_collector(collect_connections, srv);
	*ret = srv;
	return 0;
}

int http_server_port(const struct http_server *srv)
{
	return srv->port;
}

void http_server_stop(struct http_server *srv)
{
	if (!srv)
		return;
	metrics_remove_collectors(srv);
	http_listener_stop(srv->listener); /* no new connections, no more reaping */
	MHD_stop_daemon(srv->daemon);
	http_listener_free(srv->listener);
	generations_free(atomic_load(&srv->gen));
	rate_limiter_free(srv->rate);
	pthread_mutex_destroy(&srv->slots_lock);
	free(srv);
}
