/*
 * app.h - the process-wide state handlers work with.  Built by main before
 * the HTTP server starts and freed after it stops; read-only for handlers
 * except the atomics.
 */
#ifndef T2S_APP_H
#define T2S_APP_H

#include "config/config.h"
#include "pipeline/catalog.h"

#include <stdatomic.h>
#include <stddef.h>

struct app {
	const struct config *cfg;
	struct catalog catalog;
	atomic_bool draining; /* set on SIGTERM/SIGINT: readiness fails, connections close */
	atomic_int in_flight; /* requests between arrival and completion */
	const char *openapi_json; /* the embedded OpenAPI document */
	size_t openapi_len;
};

#endif
