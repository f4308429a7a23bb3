/*
 * http_access.c - who sent a request and the access log line that says so
 * (see http_access.h).
 */
#include "server/http_access.h"

#include "server/forwarded.h"
#include "server/log.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

struct xff_join {
	char buf[1024];
	size_t len;
};

/* Join every X-Forwarded-For header (in order) with commas, as one list. */
static enum MHD_Result join_xff(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct xff_join *j = cls;
	(void)kind;
	if (!value || strcasecmp(key, "X-Forwarded-For") != 0)
		return MHD_YES;
	int n = snprintf(j->buf + j->len, sizeof(j->buf) - j->len, "%s%s", j->len ? "," : "", value);
	if (n < 0 || (size_t)n >= sizeof(j->buf) - j->len) {
		j->len = 0; /* longer than any honest chain of gateways: believe none of it */
		j->buf[0] = '\0';
		return MHD_NO;
	}
	j->len += (size_t)n;
	return MHD_YES;
}

void http_access_resolve_client(struct http_request *req, const char *slot_peer)
{
	const struct config *cfg = req->cfg;
	char peer[64] = "";
	if (slot_peer) {
		snprintf(peer, sizeof(peer), "%s", slot_peer);
	} else {
		const union MHD_ConnectionInfo *ai = MHD_get_connection_info(req->conn,
									     MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		if (ai && ai->client_addr)
			cidr_addr_text(ai->client_addr, peer, sizeof(peer));
	}
	struct xff_join xff = {.len = 0};
	if (cfg->listen.n_trusted_proxies)
		MHD_get_connection_values(req->conn, MHD_HEADER_KIND, join_xff, &xff);
	forwarded_client(cfg->listen.trusted_proxies, cfg->listen.n_trusted_proxies, peer, xff.len ? xff.buf : NULL,
			 req->client, sizeof(req->client));
}

void http_access_log(const struct config *cfg, const char *client, const char *request_id, const char *method,
		     const char *path, const char *route, int status, double elapsed, size_t bytes_in,
		     size_t bytes_out, bool completed, const char *reason)
{
	if (!cfg->log.access)
		return;
	log_set_request_id(request_id);
	json_t *f = json_pack("{s:s%, s:s, s:s, s:i, s:f, s:I, s:I, s:b, s:s}", "method", method,
			      strlen(method) > 64 ? (size_t)64 : strlen(method), "path", path, "route", route, "status",
			      status, "duration_ms", elapsed, "bytes_in", (json_int_t)bytes_in, "bytes_out",
			      (json_int_t)bytes_out, "completed", completed, "client", client);
	if (f && reason)
		json_object_set_new(f, "reason", json_string(reason));
	log_json(LOG_INFO, "request", f);
	log_set_request_id(NULL);
}

