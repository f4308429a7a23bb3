/*
 * answer_cache.h - answers of /generate and /query kept for identical
 * requests: Redis when configured (shared by replicas, keys expire after the
 * TTL), in-process always (entries older than the TTL are misses).
 *
 * The key is a SHA-256 over the database, its schema hash, the generation
 * models' fingerprint and the canonical request, so a changed schema or
 * model configuration never serves an old answer.  Values are the response
 * bodies (JSON text) with their time of storing; bodies larger than
 * EMBED_CACHE_BLOB_MAX minus a small header are not cached.
 */
#ifndef T2S_GENERATE_ANSWER_CACHE_H
#define T2S_GENERATE_ANSWER_CACHE_H

#include "common/error.h"

#include <jansson.h>

struct answer_cache;

struct answer_cache_options {
	const char *redis_url; /* NULL: in-process only */
	long redis_timeout_ms;
	int redis_pool_size;
	size_t memory_max_bytes;
	long ttl_s;            /* > 0 */
	long retry_after_ms;
};

/* NULL *ret when o->ttl_s <= 0 (caching off).  0 or -T2S_ERR_*. */
int answer_cache_new(const struct answer_cache_options *o, struct answer_cache **ret, struct t2s_error *err);
void answer_cache_free(struct answer_cache *c);

/* The key of an answer (hex SHA-256) into ret_key (65 bytes). */
void answer_cache_key(const char *database, const char *schema_hash, const char *fingerprint,
		      const char *request_key, char ret_key[65]);

/* The cached body (new reference) or NULL (absent, expired, unreadable, c NULL). */
json_t *answer_cache_get(struct answer_cache *c, const char *key);
/* Store body (borrowed) best effort. */
void answer_cache_put(struct answer_cache *c, const char *key, json_t *body);

#endif
