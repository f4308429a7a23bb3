/*
 * http_access.h - the client of a request and the access log.
 *
 * The client is the socket's peer, or, when the peer is one of the
 * request's config's listen.trusted_proxies, the address its
 * X-Forwarded-For headers name (forwarded.h).  Thread-safe: each call
 * reads only its arguments and the request.
 */
#ifndef T2S_HTTP_ACCESS_H
#define T2S_HTTP_ACCESS_H

#include "server/http.h"
#include "server/audit_request.h" /* the audit line written beside the access line (http_server.c) */

#include <stdbool.h>
#include <stddef.h>

/*
 * Fill req->client from req->cfg and req->conn's headers; peer: the
 * socket's address as text when known (the connection's slot), else NULL
 * (asked of the library).
 */
void http_access_resolve_client(struct http_request *req, const char *peer);

/* One access-log line (when cfg's log.access is on); client: the client's address ("" when unknown). */
void http_access_log(const struct config *cfg, const char *client, const char *request_id, const char *method,
		     const char *path, const char *route, int status, double elapsed, size_t bytes_in,
		     size_t bytes_out, bool completed, const char *reason);

#endif
