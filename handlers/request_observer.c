/*
 * request_observer.c - the observer of a handler's generation: has the
 * client gone? (see request_observer.h).
 */
#include "handlers/request_observer.h"

#include "server/http_stream.h"

static int client_gone(void *ctx, const char *stage, json_t *event)
{
	(void)stage;
	(void)event;
	return http_request_client_gone(ctx);
}

static bool client_gone_now(void *ctx)
{
	return http_request_client_gone(ctx);
}

struct generate_observer request_client_observer(struct http_request *req)
{
	return (struct generate_observer){client_gone, req, client_gone_now};
}
