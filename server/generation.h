/*
 * generation.h - a config in force and its API keys' buckets in the server's
 * per-key limiter (server/rate_limit.h), as http_server.c publishes them.
 */
#ifndef T2S_GENERATION_H
#define T2S_GENERATION_H

#include "config/config.h"
#include "server/rate_limit.h"

/*
 * A config in force and its keys' buckets in the server's limiter (by their
 * index in cfg->auth.keys; a key kept by a reload keeps its bucket,
 * rate_limit.h).  A reload publishes a new one (http_server_apply_config);
 * a request keeps the one it arrived under.  Replaced ones are kept (older)
 * until http_server_stop.
 */
struct generation {
	const struct config *cfg;
	struct rate_bucket **buckets; /* one per configured API key, then AUTH_JWT_SLOTS with auth.jwt (srv->rate's;
					 auth_limiter_slot indexes it); NULL without either */
	struct generation *older;
};

/* A generation for cfg (borrowed: it must outlive the generation) with its keys' buckets taken from rl
   (rate_limiter_configure: a key kept by a reload keeps its bucket).  NULL: no memory.  Free with
   generations_free. */
struct generation *generation_new(struct rate_limiter *rl, const struct config *cfg);

/* Free g and every older generation (the buckets stay the limiter's; NULL is fine). */
void generations_free(struct generation *g);

#endif
