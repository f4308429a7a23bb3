/*
 * http_server.h - the libmicrohttpd daemon: one thread per connection (a
 * handler that blocks on a query or a model call never stalls other
 * connections), fed by the listener (http_listener.h), with connection,
 * per-IP, deadline, header and body limits from the config.
 */
#ifndef T2S_HTTP_SERVER_H
#define T2S_HTTP_SERVER_H

#include "server/app.h"
#include "common/error.h"

struct http_server;

/* Bind and start serving; *ret owns the daemon until http_server_stop. */
int http_server_start(struct app *app, struct http_server **ret, struct t2s_error *err);
/* Resolve the configured listen address as start would (for --check-config); binds nothing. */
int http_server_check_listen(const struct config *cfg, struct t2s_error *err);
/* The port actually bound (useful with port 0). */
int http_server_port(const struct http_server *srv);
/* Stop accepting, close connections, join threads and free. Accepts NULL. */
void http_server_stop(struct http_server *srv);

#endif
