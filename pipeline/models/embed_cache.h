/*
 * embed_cache.h - the cache of column embeddings shared by service replicas.
 *
 * Two layers of opaque blobs keyed by strings (the caller derives keys from
 * the embedder identity and a hash of the document, and serialises vectors):
 *
 *   memory  an in-process hash table bounded by memory_max_bytes (key bytes
 *           plus value bytes); least recently used entries are evicted past
 *           the bound.  Always present.
 *   redis   optional (redis_url), shared by every replica: keys are
 *           key_prefix + key, values the raw blob, no expiry unless
 *           redis_ttl_s is set.  Lookups use
 *           MGET and stores SET, both in pipelined batches.
 *
 * Redis is best effort.  When it is down, slow (past redis_timeout_ms) or
 * answers with errors, calls still succeed: keys Redis would have served are
 * misses, stats->redis_failed is set, and a circuit breaker stops every
 * caller from trying Redis again for retry_after_ms.  When that time has
 * passed, one caller probes with a fresh connection; success closes the
 * breaker, failure re-opens it.  A context that failed is dropped (with every
 * idle context of the same generation) and replaced by a new connection
 * later.
 *
 * Process requirements: SIGPIPE must be ignored (server/main.c does), since
 * hiredis writes to sockets whose peer may have died; caches are freed
 * before metrics_shutdown (they hold metric families).
 *
 * Thread safety: every function may be called concurrently on one cache
 * except embed_cache_free.  At most redis_pool_size hiredis contexts exist;
 * each is used by one thread at a time, and a caller waits for a free one.
 *
 * Metrics (registered when the first cache is created), under the names of
 * options.metrics (default embed_cache_embedding_metrics, below; the answer
 * cache gives text2sqld_answer_cache_*):
 *   text2sqld_embed_cache_lookups_total{layer="memory"|"redis",result="hit"|"miss"}
 *     (keys actually sent to Redis; keys skipped because Redis is down are
 *     counted in the memory misses only)
 *   text2sqld_embed_cache_redis_errors_total  (failed connects, I/O errors,
 *     timeouts, error replies)
 *   text2sqld_embed_cache_memory_bytes  (gauge, summed over live caches)
 */
#ifndef T2S_EMBED_CACHE_H
#define T2S_EMBED_CACHE_H

#include "common/contract.h"
#include "common/error.h"

#include <stdbool.h>
#include <stddef.h>

/* Largest blob accepted by embed_cache_put_many (and read back from Redis). */
#define EMBED_CACHE_BLOB_MAX (64u * 1024u)
/* Longest key (without the prefix); longer keys are misses and rejected by put. */
#define EMBED_CACHE_KEY_MAX 1024u
/* Keys per MGET and SETs per pipelined round trip. */
#define EMBED_CACHE_REDIS_BATCH 1000u

struct embed_cache;

/* The names (static strings) of one cache's three metric families. */
struct embed_cache_metrics {
	const char *lookups, *lookups_help;           /* counter {layer, result} */
	const char *redis_errors, *redis_errors_help; /* counter */
	const char *memory_bytes, *memory_bytes_help; /* gauge */
};

/* text2sqld_embed_cache_{lookups_total, redis_errors_total, memory_bytes}. */
extern const struct embed_cache_metrics embed_cache_embedding_metrics;

/* Zero or negative numeric fields take the defaults noted. */
struct embed_cache_options {
	const char *redis_url;    /* NULL or "": in-process only */
	long redis_timeout_ms;    /* connect and per-command; default T2S_REDIS_TIMEOUT_DEFAULT_MS */
	int redis_pool_size;      /* hiredis contexts kept; default 4 */
	size_t memory_max_bytes;  /* in-process bound (keys+values); default 64 MiB */
	const char *key_prefix;   /* e.g. "t2s:emb:"; NULL: none; copied */
	long retry_after_ms;      /* circuit breaker open time after a Redis failure; default 5000 */
	long redis_ttl_s;         /* > 0: Redis keys expire after this many seconds; else never */
	const struct embed_cache_metrics *metrics; /* NULL: &embed_cache_embedding_metrics; must outlive the cache */
};

/* On get, data is malloc'd by the cache (non-NULL when present, even for
 * len 0) and owned by the caller, who frees it; NULL when absent. */
struct embed_cache_blob {
	void *data;
	size_t len;
};

/* Counts of one call (overwritten by each call that is given it). */
struct embed_cache_stats {
	size_t memory_hits, redis_hits, misses;
	bool redis_failed; /* Redis was configured but failed or was skipped by the breaker */
};

/*
 * Create a cache.  The options are copied.  With a Redis URL, one
 * connection is attempted at once (blocking up to redis_timeout_ms); Redis
 * being unreachable is not an error
 * (the breaker opens), a malformed URL is (-T2S_ERR_INVALID).  Returns 0 or
 * -T2S_ERR_NOMEM / -T2S_ERR_INVALID; *ret written only on success.
 */
T2S_MUST_CHECK
int embed_cache_new(const struct embed_cache_options *o, struct embed_cache **ret, struct t2s_error *err);

/* Close the Redis contexts and free every entry.  Accepts NULL.  No call
 * may be in progress on c. */
void embed_cache_free(struct embed_cache *c);

/*
 * Look up n keys; ret (n entries) is filled for every i: ret[i].data NULL
 * when absent, else a malloc'd copy the caller frees.  The memory layer is
 * consulted first, then Redis for the rest (MGET batches, pipelined); Redis
 * hits are copied into the memory layer.  NULL or over-long keys are misses.
 * Never fails because of Redis.  stats may be NULL.  Returns 0, or
 * -T2S_ERR_NOMEM, in which case every ret[i].data is NULL (nothing to free).
 */
T2S_MUST_CHECK
int embed_cache_get_many(struct embed_cache *c, const char *const *keys, size_t n, struct embed_cache_blob *ret,
			 struct embed_cache_stats *stats);

/*
 * Store n blobs (copied) in the memory layer and, best effort, in Redis
 * (pipelined SET batches).  Every key must be non-NULL and at most
 * EMBED_CACHE_KEY_MAX bytes, every blob at most EMBED_CACHE_BLOB_MAX bytes
 * (data may be NULL only when len is 0); otherwise nothing is stored and
 * -T2S_ERR_INVALID is returned.  A blob bigger than the memory bound goes to
 * Redis only.  Only stats->redis_failed is meaningful.  Returns 0,
 * -T2S_ERR_INVALID or -T2S_ERR_NOMEM (the memory layer may then hold part).
 */
T2S_MUST_CHECK
int embed_cache_put_many(struct embed_cache *c, const char *const *keys, const struct embed_cache_blob *blobs,
			 size_t n, struct embed_cache_stats *stats);

/* True when Redis is configured and the breaker is closed (the last attempt
 * worked).  Does not contact Redis. */
bool embed_cache_redis_healthy(struct embed_cache *c);

/* Bytes (keys+values) currently held by the memory layer. */
size_t embed_cache_memory_bytes(struct embed_cache *c);

#endif
