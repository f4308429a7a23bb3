/*
 * http_server.c - request life cycle on top of libmicrohttpd.
 *
 * The access handler is called several times per request: first with the
 * headers (we create the request, give it an id, reject an announced body
 * over the cap with 413), then once per body chunk (appended to a bounded
 * buffer), then once more with no data, when the request is routed,
 * authenticated and handed to its handler.  The completion callback writes
 * the access log line, records metrics and frees the request.
 */
#include "server/http_server.h"

#include "server/auth.h"
#include "server/cors.h"
#include "server/traceparent.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "server/http.h"
#include "server/log.h"
#include "server/router.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <strings.h>
#include <sys/socket.h>

struct http_server {
	struct MHD_Daemon *daemon;
	struct app *app;
	int port;
};

/* Per-request bookkeeping beyond struct http_request. */
struct request_state {
	struct http_request req;
	const char *route_label;
	int status;
	size_t bytes_out;
	bool responded;
};

static struct metric_family *m_requests;
static struct metric_family *m_duration;
static struct metric_family *m_in_flight;

static void register_metrics(void)
{
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
	unsigned char rnd[16];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		double t = clock_now_ms();
		memcpy(rnd, &t, sizeof(t));
		memcpy(rnd + 8, &req, sizeof(void *) < 8 ? sizeof(void *) : 8);
	}
	for (int i = 0; i < 16; i++)
		snprintf(req->request_id + 2 * i, 3, "%02x", rnd[i]);
}

static struct request_state *request_new(struct http_server *srv, struct MHD_Connection *conn, const char *url,
					 const char *method)
{
	struct request_state *st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	struct http_request *req = &st->req;
	arena_init(&req->arena);
	req->app = srv->app;
	req->conn = conn;
	req->start_ms = clock_now_ms();
	req->method = arena_strdup(&req->arena, method);
	size_t path_len = strcspn(url, "?");
	req->path = arena_strndup(&req->arena, url, path_len);
	strbuf_init(&req->body, srv->app->cfg->limits.max_body_bytes);
	st->route_label = "unmatched";
	assign_request_id(req);
	atomic_fetch_add(&srv->app->in_flight, 1);
	metrics_add(m_in_flight, NULL, 1);
	return st;
}

static enum MHD_Result queue(struct request_state *st, struct http_response *res)
{
	struct http_request *req = &st->req;
	struct MHD_Response *r = MHD_create_response_from_buffer(res->len, res->body ? res->body : (void *)"",
								 res->body ? MHD_RESPMEM_MUST_FREE
									   : MHD_RESPMEM_PERSISTENT);
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
	for (size_t i = 0; i < res->n_headers; i++)
		MHD_add_response_header(r, res->headers[i].name, res->headers[i].value);
	cors_add_headers(req, r);
	if (atomic_load(&req->app->draining) || st->req.body_too_large)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result ok = MHD_queue_response(req->conn, (unsigned)res->status, r);
	MHD_destroy_response(r);
	st->status = res->status;
	st->bytes_out = res->len;
	st->responded = true;
	return ok;
}

static bool content_type_is_json(const char *ct)
{
	if (!ct)
		return true; /* be liberal: many clients omit it */
	size_t n = strcspn(ct, ";");
	while (n && ct[n - 1] == ' ')
		n--;
	if (n == 16 && strncasecmp(ct, "application/json", 16) == 0)
		return true;
	return n > 5 && strncasecmp(ct + n - 5, "+json", 5) == 0;
}

/* Route, authenticate and run the handler. */
static void dispatch(struct request_state *st, struct http_response *res)
{
	struct http_request *req = &st->req;
	struct app *app = req->app;
	const struct route *route = NULL;
	if (traceparent_parse(http_request_header(req, "traceparent"), req->traceparent, sizeof(req->traceparent)))
		log_set_traceparent(req->traceparent);
	if (cors_preflight(req, res))
		return;
	enum route_match m = router_match(req, &route, res->allow, sizeof(res->allow));
	if (m == ROUTE_NOT_FOUND) {
		http_reply_problem(res, req, 404, "not-found", "Not found", "no endpoint at this path");
		return;
	}
	if (m == ROUTE_BAD_METHOD) {
		char detail[160];
		snprintf(detail, sizeof(detail), "method %s is not allowed here; allowed: %s", req->method, res->allow);
		http_reply_problem(res, req, 405, "method-not-allowed", "Method not allowed", detail);
		return;
	}
	req->route = route;
	st->route_label = route->pattern;
	if (app->cfg->auth.enabled && !route->public_route) {
		req->principal = auth_check_bearer(app->cfg, http_request_header(req, "Authorization"));
		if (!req->principal) {
			res->www_authenticate = true;
			http_reply_problem(res, req, 401, "unauthorized", "Unauthorized",
					   "a valid API key is required: Authorization: Bearer <key>");
			return;
		}
	}
	if (req->body.len > 0 && !content_type_is_json(http_request_header(req, "Content-Type"))) {
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
		 st->req.app->cfg->limits.max_body_bytes);
	http_reply_problem(res, &st->req, 413, "payload-too-large", "Payload too large", detail);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct http_server *srv = cls;
	struct request_state *st = *con_cls;
	struct http_response res = {0};
	(void)version;
	if (!st) {
		st = request_new(srv, conn, url, method);
		if (!st)
			return MHD_NO;
		*con_cls = st;
		const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > srv->app->cfg->limits.max_body_bytes) {
			st->req.body_too_large = true;
			log_set_request_id(st->req.request_id);
			reply_too_large(st, &res);
			enum MHD_Result r = queue(st, &res);
			log_set_request_id(NULL);
			return r;
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (!st->req.body_too_large && strbuf_add(&st->req.body, upload_data, *upload_data_size) < 0)
			st->req.body_too_large = true;
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (st->responded)
		return MHD_YES;
	log_set_request_id(st->req.request_id);
	if (st->req.body_too_large)
		reply_too_large(st, &res);
	else
		dispatch(st, &res);
	enum MHD_Result r = queue(st, &res);
	log_set_request_id(NULL);
	return r;
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
	double elapsed = clock_now_ms() - req->start_ms;
	char code[16];
	snprintf(code, sizeof(code), "%dxx", st->responded ? st->status / 100 : 0);
	const char *labels[] = {st->route_label, req->method, code, NULL};
	const char *route[] = {st->route_label, NULL};
	metrics_add(m_requests, labels, 1);
	metrics_observe(m_duration, route, elapsed / 1000.0);
	if (srv->app->cfg->log.access) {
		log_set_request_id(req->request_id);
		log_set_traceparent(req->traceparent);
		json_t *f = json_pack("{s:s, s:s, s:s, s:i, s:f, s:I, s:I, s:b}", "method", req->method, "path",
				      req->path, "route", st->route_label, "status", st->responded ? st->status : 0,
				      "duration_ms", elapsed, "bytes_in", (json_int_t)req->body.len, "bytes_out",
				      (json_int_t)st->bytes_out, "completed", toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
		log_json(LOG_INFO, "request", f);
		log_set_request_id(NULL);
	}
	metrics_add(m_in_flight, NULL, -1);
	atomic_fetch_sub(&srv->app->in_flight, 1);
	strbuf_release(&req->body);
	arena_release(&req->arena);
	free(st);
	*con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	(void)cls;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	log_json(LOG_WARN, buf, json_pack("{s:s}", "component", "libmicrohttpd"));
}

static int resolve_listen(const char *host, int port, struct sockaddr_storage *ret, struct t2s_error *err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *ai = NULL;
	char port_s[16];
	snprintf(port_s, sizeof(port_s), "%d", port);
	int rc = getaddrinfo(host, port_s, &hints, &ai);
	if (rc != 0 || !ai)
		return t2s_error_set(err, T2S_ERR_INVALID, "listen.host %s: %s", host, gai_strerror(rc));
	memset(ret, 0, sizeof(*ret));
	memcpy(ret, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

int http_server_start(struct app *app, struct http_server **ret, struct t2s_error *err)
{
	register_metrics();
	struct sockaddr_storage addr;
	int rc = resolve_listen(app->cfg->listen.host, app->cfg->listen.port, &addr, err);
	if (rc < 0)
		return rc;
	struct http_server *srv = calloc(1, sizeof(*srv));
	if (!srv)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	srv->app = app;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			 MHD_USE_ERROR_LOG | MHD_USE_ITC;
	if (addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	const struct config *cfg = app->cfg;
	srv->daemon = MHD_start_daemon(
		flags, (uint16_t)cfg->listen.port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_SOCK_ADDR, &addr,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->limits.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(unsigned)cfg->limits.max_connections_per_ip, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)cfg->limits.connection_timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)cfg->limits.max_header_bytes, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
		MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_END);
	if (!srv->daemon) {
		free(srv);
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot listen on %s:%d (address in use or not available)",
				     cfg->listen.host, cfg->listen.port);
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
	srv->port = info ? info->port : cfg->listen.port;
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
	MHD_stop_daemon(srv->daemon);
	free(srv);
}
