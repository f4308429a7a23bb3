/*
 * http_server.h - the libmicrohttpd daemon: one thread per connection (a
 * handler that blocks on a query or a model call never stalls other
 * connections), fed by the listener (http_listener.h), with connection,
 * per-IP, deadline, header and body limits from the config.
 */
#ifndef T2S_HTTP_SERVER_H
#define T2S_HTTP_SERVER_H

#include "common/contract.h"
#include "server/app.h"
#include "common/error.h"

struct http_server;

/* Bind and start serving; *ret owns the daemon until http_server_stop. */
T2S_MUST_CHECK
int http_server_start(struct app *app, struct http_server **ret, struct t2s_error *err);
/* Resolve the configured listen address as start would (for --check-config); binds nothing. */
T2S_MUST_CHECK
int http_server_check_listen(const struct config *cfg, struct t2s_error *err);
/* The port actually bound (useful with port 0). */
int http_server_port(const struct http_server *srv);
/*
 * Serve new requests under cfg (a reload): its API keys, limits and
 * trusted proxies; requests already running keep the config they arrived
 * under.  cfg must outlive srv (replaced configs are never freed before
 * it).  Also sets srv's app->cfg.  Call from one thread at a time.  0 or
 * -T2S_ERR_NOMEM (then nothing changed).
 */
T2S_MUST_CHECK
int http_server_apply_config(struct http_server *srv, const struct config *cfg, struct t2s_error *err);
/* Close the listening socket (within ~100 ms): connections already open are still served. */
void http_server_stop_accepting(struct http_server *srv);

/*
 * The drain time is up: answer every request whose handler still runs 503
 * "draining" (a problem with Retry-After, the connection closed) instead
 * of leaving its client a closed connection; the handlers finish on their
 * own, their answers dropped.  Returns how many were cut.
 */
int http_server_cut_in_flight(struct http_server *srv);
/* Stop accepting, close connections, join threads and free. Accepts NULL. */
void http_server_stop(struct http_server *srv);

#endif
