/*
 * generation.c - a config in force and its API keys' buckets in the server's
 * limiter (see generation.h).
 */
#include "server/generation.h"

#include "server/auth.h"

#include <stdio.h>

#include <stdlib.h>

/* A generation for cfg: its keys' buckets in rl (no buckets without keys). NULL: no memory. */
struct generation *generation_new(struct rate_limiter *rl, const struct config *cfg)
{
	struct generation *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->cfg = cfg;
	size_t n = cfg->auth.n_keys + (cfg->auth.jwt.present ? AUTH_JWT_SLOTS : 0); /* auth_limiter_slot */
	if (!n)
		return g;
	char (*slot_names)[32] = calloc(n, sizeof(*slot_names));
	static const unsigned char jwt_digest[32]; /* no API key's digest is all zeros */
	struct rate_key *keys = calloc(n, sizeof(*keys));
	struct rate_limit *limits = calloc(n, sizeof(*limits));
	g->buckets = calloc(n, sizeof(*g->buckets));
	int rc = keys && limits && g->buckets && slot_names ? 0 : -1;
	for (size_t i = 0; i < cfg->auth.n_keys && rc == 0; i++) {
		keys[i] = (struct rate_key){cfg->auth.keys[i].name, cfg->auth.keys[i].key_sha256};
		limits[i] = (struct rate_limit){.rate_per_s = cfg->auth.keys[i].rate_per_s,
						.burst = cfg->auth.keys[i].burst,
						.max_concurrent = cfg->limits.key_max_concurrent};
	}
	/* JWT callers share AUTH_JWT_SLOTS buckets by a hash of their subject, with the default key limits;
	   a slot keeps its bucket across reloads like a key (same name, same digest). */
	for (size_t i = cfg->auth.n_keys; i < n && rc == 0; i++) {
		snprintf(slot_names[i], sizeof(slot_names[i]), "jwt slot %zu", i - cfg->auth.n_keys);
		keys[i] = (struct rate_key){slot_names[i], jwt_digest};
		limits[i] = (struct rate_limit){.rate_per_s = cfg->limits.key_rate_per_s,
						.burst = cfg->limits.key_burst,
						.max_concurrent = cfg->limits.key_max_concurrent};
	}
	/* Past its cap a key may borrow idle slots while a share is left for the others (rate_limit.h), and
	   some headroom: a connection closed (a refusal's) is still counted by the listener a little while. */
	unsigned max = cfg->limits.max_connections, headroom = max / 16 > 2 ? max / 16 : 2;
	unsigned borrow = max > cfg->limits.key_max_concurrent + headroom ? max - cfg->limits.key_max_concurrent - headroom
									 : 0;
	if (rc == 0)
		rc = rate_limiter_configure(rl, keys, limits, n, borrow, g->buckets);
	free(keys);
	free(limits);
	free(slot_names);
	if (rc < 0) {
		free(g->buckets);
		free(g);
		return NULL;
	}
	return g;
}

/* Free g and every older generation (the buckets stay the limiter's). */
void generations_free(struct generation *g)
{
	while (g) {
		struct generation *older = g->older;
		free(g->buckets);
		free(g);
		g = older;
	}
}
