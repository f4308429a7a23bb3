/*
 * answer_cache.h - answers of /generate and /query kept for identical
 * requests: Redis when configured (shared by replicas, keys expire after the
 * TTL), in-process always (entries older than the TTL are misses).
 *
 * The key is a SHA-256 over the database, its schema hash, the generation
 * models' fingerprint, the versions of what else the answer was made from
 * (the caller's text: the database's stored examples and overrides, and its
 * data) and the canonical request, so a changed schema, model
 * configuration, example, override or data never serves an old answer.  Values are the response
 * bodies (JSON text) with their time of storing; bodies larger than
 * EMBED_CACHE_BLOB_MAX minus a small header are not cached.
 *
 * Entries are authenticated: each value carries an HMAC-SHA256, under the
 * server's secret, of its key, time and body, so an entry written into Redis
 * by anyone without the secret (or copied from another key) is never served.
 * A value read back is checked in this order: its layout, its MAC, its time
 * (parsed with bounds: not before the TTL, not more than
 * ANSWER_CACHE_CLOCK_SKEW_S in the future), and its body (a JSON object with
 * the members of an answer).  Any failure is a miss, counted in
 * text2sqld_answer_cache_rejected_total{reason="malformed"|"mac"|"time"|"shape"}.
 * The secret is the config's (cache.secret_env: replicas given the same one
 * share answers) or, when none is given, random per process (replicas then
 * never serve each other's entries, and a restart forgets Redis' entries).
 */
#ifndef T2S_GENERATE_ANSWER_CACHE_H
#define T2S_GENERATE_ANSWER_CACHE_H

#include "common/contract.h"
#include "common/error.h"

#include <jansson.h>

struct answer_cache;

/* Defaults of the config's generate.cache_ttl_s and generate.cache_max_entries. */
#define ANSWER_CACHE_TTL_DEFAULT_S 300L
#define ANSWER_CACHE_ENTRIES_DEFAULT 1000L
/* In-process bytes allowed per entry (the memory layer holds entries x this). */
#define ANSWER_CACHE_ENTRY_BYTES 16384u

struct answer_cache_options {
	const char *redis_url; /* NULL: in-process only */
	long redis_timeout_ms;
	int redis_pool_size;
	size_t memory_max_bytes;
	long ttl_s;            /* > 0 */
	long retry_after_ms;
	const char *secret;    /* the MAC secret (any length; its SHA-256 keys the MAC); NULL: 32 random bytes */
	size_t secret_len;
};

/* How far in the future an entry's time may be (replicas' clocks differ a little). */
#define ANSWER_CACHE_CLOCK_SKEW_S 60L

/* NULL *ret when o->ttl_s <= 0 (caching off).  0 or -T2S_ERR_*. */
T2S_MUST_CHECK
int answer_cache_new(const struct answer_cache_options *o, struct answer_cache **ret, struct t2s_error *err);
void answer_cache_free(struct answer_cache *c);

/* The key of an answer (hex SHA-256) into ret_key (65 bytes). */
void answer_cache_key(const char *database, const char *schema_hash, const char *fingerprint, const char *versions,
		      const char *request_key, char ret_key[65]);

/*
 * The cached body (new reference) or NULL (absent, expired, rejected, c
 * NULL); *ret_age_s (may be NULL) gets the entry's age in seconds.
 */
json_t *answer_cache_get(struct answer_cache *c, const char *key, long *ret_age_s);
/* Store body (borrowed) best effort. */
void answer_cache_put(struct answer_cache *c, const char *key, json_t *body);

#endif
