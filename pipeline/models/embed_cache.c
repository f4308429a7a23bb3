/*
 * embed_cache.c - two-layer blob cache: bounded in-process LRU + Redis
 * (see embed_cache.h).
 *
 * Memory layer: a chained hash table (FNV-1a, grown when the load passes 1)
 * whose entries also sit on a doubly linked recency list; a hit moves the
 * entry to the newest end, and inserting evicts from the oldest end until
 * the byte count is back under the bound.  Entry key and value live in one
 * allocation.  Allocation and freeing happen outside the table lock where
 * possible; copies handed to callers are made under it.
 *
 * Redis layer: a pool of at most pool_size blocking hiredis contexts, each
 * used by one thread at a time, plus a circuit breaker.  Every context
 * carries the pool generation it was created in; a failure bumps the
 * generation, frees the idle contexts and opens the breaker, and contexts of
 * an older generation are freed when they come back, so after a Redis restart
 * no caller trips over a dead connection.  Any failure inside a pipelined
 * round (I/O error, timeout, error reply, unexpected reply shape) abandons
 * the context: its unread replies would desynchronise the protocol.
 *
 * Writing to a socket whose peer has gone raises SIGPIPE: the process must
 * ignore it (server/main.c does).
 */
#include "pipeline/models/embed_cache.h"

#include "common/clock.h"
#include "common/hash.h"
#include "common/limits.h"
#include "common/metrics.h"
#include "pipeline/models/redis_client.h"

#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_POOL_SIZE 4
#define DEFAULT_MEMORY_MAX ((size_t)64 * 1024 * 1024)
#define DEFAULT_RETRY_AFTER_MS 5000
#define PIPELINE_BATCHES 8 /* MGET batches in flight per round trip */
#define MIN_BUCKETS 64

struct mem_entry {
	struct mem_entry *hnext;         /* hash chain */
	struct mem_entry *newer, *older; /* recency list */
	uint64_t hash;
	size_t key_len, len;
	/* key bytes, NUL, value bytes follow */
};

struct embed_cache {
	/* memory layer, under mem_lock */
	pthread_mutex_t mem_lock;
	struct mem_entry **buckets;
	size_t n_buckets, count, bytes, max_bytes;
	struct mem_entry *newest, *oldest;

	/* Redis layer, under pool_lock */
	char *redis_url;  /* NULL: no Redis */
	char *prefix;
	size_t prefix_len;
	long timeout_ms, retry_after_ms;
	long redis_ttl_s; /* > 0: SET ... EX redis_ttl_s */
	pthread_mutex_t pool_lock;
	pthread_cond_t pool_cond;
	redisContext **idle;
	unsigned *idle_gen;
	int n_idle, n_total, pool_size;
	unsigned generation;
	bool breaker_open;
	double open_until; /* monotonic ms: next probe allowed */

	struct metric_family *m_lookups, *m_errors, *m_bytes;
};

enum release_how { RELEASE_OK, RELEASE_DISCARD, RELEASE_FAILED };

static const char *const lookup_labels[] = {"layer", "result", NULL};

const struct embed_cache_metrics embed_cache_embedding_metrics = {
	.lookups = "text2sqld_embed_cache_lookups_total",
	.lookups_help = "Embedding cache lookups by layer and result.",
	.redis_errors = "text2sqld_embed_cache_redis_errors_total",
	.redis_errors_help = "Embedding cache Redis failures (connect, I/O, timeout, error reply).",
	.memory_bytes = "text2sqld_embed_cache_memory_bytes",
	.memory_bytes_help = "Bytes (keys and values) held by in-process embedding caches.",
};

/* ---- memory layer ---- */

static uint64_t key_hash(const char *key, size_t len)
{
	return hash_fnv1a64(HASH_FNV1A64_SEED, key, len);
}

static char *entry_key(struct mem_entry *e)
{
	return (char *)(e + 1);
}

static unsigned char *entry_data(struct mem_entry *e)
{
	return (unsigned char *)(e + 1) + e->key_len + 1;
}

static size_t entry_cost(const struct mem_entry *e)
{
	return e->key_len + e->len;
}

/* Find an entry; mem_lock held. */
static struct mem_entry *mem_find(struct embed_cache *c, const char *key, size_t key_len, uint64_t h)
{
	for (struct mem_entry *e = c->buckets[h % c->n_buckets]; e; e = e->hnext)
		if (e->hash == h && e->key_len == key_len && memcmp(entry_key(e), key, key_len) == 0)
			return e;
	return NULL;
}

static void list_unlink(struct embed_cache *c, struct mem_entry *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		c->newest = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		c->oldest = e->newer;
	e->newer = e->older = NULL;
}

static void list_push_newest(struct embed_cache *c, struct mem_entry *e)
{
	e->older = c->newest;
	e->newer = NULL;
	if (c->newest)
		c->newest->newer = e;
	else
		c->oldest = e;
	c->newest = e;
}

/* Take e out of the table and the list (not freed); mem_lock held. */
static void mem_remove(struct embed_cache *c, struct mem_entry *e)
{
	struct mem_entry **p = &c->buckets[e->hash % c->n_buckets];
	while (*p != e)
		p = &(*p)->hnext;
	*p = e->hnext;
	list_unlink(c, e);
	c->count--;
	c->bytes -= entry_cost(e);
}

/* Double the bucket array; on allocation failure keep the old one. */
static void mem_grow(struct embed_cache *c)
{
	size_t n = c->n_buckets * 2;
	struct mem_entry **b = calloc(n, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < c->n_buckets; i++) {
		struct mem_entry *e = c->buckets[i];
		while (e) {
			struct mem_entry *next = e->hnext;
			e->hnext = b[e->hash % n];
			b[e->hash % n] = e;
			e = next;
		}
	}
	free(c->buckets);
	c->buckets = b;
	c->n_buckets = n;
}

/*
 * Copy the value of key into a new malloc'd blob (the caller owns it) and
 * mark the entry recently used.  Returns 1 on hit, 0 on miss, -NOMEM.
 */
static int mem_get(struct embed_cache *c, const char *key, size_t key_len, struct embed_cache_blob *ret)
{
	uint64_t h = key_hash(key, key_len);
	int rc = 0;
	pthread_mutex_lock(&c->mem_lock);
	struct mem_entry *e = mem_find(c, key, key_len, h);
	if (e) {
		void *copy = malloc(e->len ? e->len : 1);
		if (copy) {
			memcpy(copy, entry_data(e), e->len);
			ret->data = copy;
			ret->len = e->len;
			list_unlink(c, e);
			list_push_newest(c, e);
			rc = 1;
		} else {
			rc = -T2S_ERR_NOMEM;
		}
	}
	pthread_mutex_unlock(&c->mem_lock);
	return rc;
}

/*
 * Insert or replace key with a copy of data, evicting the least recently
 * used entries past the bound.  A value that alone exceeds the bound is not
 * kept (an older value of the key is dropped).  Returns 0 or -NOMEM.
 */
static int mem_put(struct embed_cache *c, const char *key, size_t key_len, const void *data, size_t len)
{
	uint64_t h = key_hash(key, key_len);
	struct mem_entry *e = NULL;
	if (key_len + len <= c->max_bytes) {
		e = malloc(sizeof(*e) + key_len + 1 + len);
		if (!e)
			return -T2S_ERR_NOMEM;
		e->hash = h;
		e->key_len = key_len;
		e->len = len;
		memcpy(entry_key(e), key, key_len);
		entry_key(e)[key_len] = '\0';
		if (len)
			memcpy(entry_data(e), data, len);
	}
	struct mem_entry *evicted = NULL;
	pthread_mutex_lock(&c->mem_lock);
	size_t before = c->bytes;
	struct mem_entry *old = mem_find(c, key, key_len, h);
	if (old) {
		mem_remove(c, old);
		old->hnext = evicted;
		evicted = old;
	}
	if (e) {
		if (c->count >= c->n_buckets)
			mem_grow(c);
		e->hnext = c->buckets[h % c->n_buckets];
		c->buckets[h % c->n_buckets] = e;
		list_push_newest(c, e);
		c->count++;
		c->bytes += entry_cost(e);
		while (c->bytes > c->max_bytes) {
			struct mem_entry *victim = c->oldest;
			mem_remove(c, victim);
			victim->hnext = evicted;
			evicted = victim;
		}
	}
	double delta = (double)c->bytes - (double)before;
	pthread_mutex_unlock(&c->mem_lock);
	if (delta != 0)
		metrics_add(c->m_bytes, NULL, delta);
	while (evicted) {
		struct mem_entry *next = evicted->hnext;
		free(evicted);
		evicted = next;
	}
	return 0;
}

/* ---- Redis pool and circuit breaker ---- */

static void count_redis_error(struct embed_cache *c)
{
	metrics_add(c->m_errors, NULL, 1);
}

/* Open the breaker and drop every idle context; pool_lock held.  The
 * dropped contexts are returned through *ret_idle (count *ret_n) for the
 * caller to free outside the lock. */
static void breaker_trip_locked(struct embed_cache *c, redisContext ***ret_idle, int *ret_n)
{
	c->generation++;
	c->breaker_open = true;
	c->open_until = clock_now_ms() + (double)c->retry_after_ms;
	*ret_idle = NULL;
	*ret_n = 0;
	if (c->n_idle) {
		redisContext **dropped = malloc((size_t)c->n_idle * sizeof(*dropped));
		if (dropped) {
			memcpy(dropped, c->idle, (size_t)c->n_idle * sizeof(*dropped));
			*ret_idle = dropped;
			*ret_n = c->n_idle;
		} else {
			for (int i = 0; i < c->n_idle; i++) /* rare: free under the lock */
				redisFree(c->idle[i]);
		}
		c->n_total -= c->n_idle;
		c->n_idle = 0;
	}
	pthread_cond_broadcast(&c->pool_cond);
}

static void free_contexts(redisContext **list, int n)
{
	for (int i = 0; i < n; i++)
		redisFree(list[i]);
	free(list);
}

/*
 * A context for one thread's exclusive use, or NULL when the breaker is
 * open or connecting failed (the breaker is then open).  Waits while all
 * pool_size contexts are busy.  When the breaker's time has passed, the
 * caller that gets here first becomes the probe: the breaker's deadline is
 * pushed forward so that others keep skipping until the probe reports.
 * Returns -NOMEM when hiredis cannot allocate, 0 otherwise.
 */
static int pool_acquire(struct embed_cache *c, redisContext **ret, unsigned *ret_gen)
{
	*ret = NULL;
	pthread_mutex_lock(&c->pool_lock);
	if (c->breaker_open) {
		double now = clock_now_ms();
		if (now < c->open_until) {
			pthread_mutex_unlock(&c->pool_lock);
			return 0;
		}
		c->open_until = now + (double)c->retry_after_ms;
	}
	for (;;) {
		if (c->n_idle) {
			c->n_idle--;
			*ret = c->idle[c->n_idle];
			*ret_gen = c->idle_gen[c->n_idle];
			pthread_mutex_unlock(&c->pool_lock);
			return 0;
		}
		if (c->n_total < c->pool_size)
			break;
		unsigned seen = c->generation;
		pthread_cond_wait(&c->pool_cond, &c->pool_lock);
		if (c->generation != seen) {
			pthread_mutex_unlock(&c->pool_lock); /* Redis failed while we waited */
			return 0;
		}
	}
	c->n_total++;
	unsigned gen = c->generation;
	pthread_mutex_unlock(&c->pool_lock);

	redisContext *ctx;
	int rc = redis_connect(c->redis_url, c->timeout_ms, &ctx, NULL);
	if (rc == 0) {
		*ret = ctx;
		*ret_gen = gen;
		return 0;
	}
	redisContext **dropped = NULL;
	int n_dropped = 0;
	pthread_mutex_lock(&c->pool_lock);
	c->n_total--;
	if (rc != -T2S_ERR_NOMEM && gen == c->generation)
		breaker_trip_locked(c, &dropped, &n_dropped);
	else
		pthread_cond_signal(&c->pool_cond);
	pthread_mutex_unlock(&c->pool_lock);
	free_contexts(dropped, n_dropped);
	if (rc == -T2S_ERR_NOMEM)
		return rc;
	count_redis_error(c);
	return 0;
}

/*
 * Give a context back.  RELEASE_OK keeps it (if still of the current
 * generation) and closes the breaker; RELEASE_DISCARD frees it;
 * RELEASE_FAILED frees it and, unless it predates the last failure, trips
 * the breaker.
 */
static void pool_release(struct embed_cache *c, redisContext *ctx, unsigned gen, enum release_how how)
{
	redisContext **dropped = NULL;
	int n_dropped = 0;
	bool keep = false;
	pthread_mutex_lock(&c->pool_lock);
	bool current = gen == c->generation;
	if (how == RELEASE_OK && current) {
		c->breaker_open = false;
		if (!ctx->err) {
			c->idle[c->n_idle] = ctx;
			c->idle_gen[c->n_idle] = gen;
			c->n_idle++;
			keep = true;
		}
	}
	if (!keep)
		c->n_total--;
	if (how == RELEASE_FAILED && current)
		breaker_trip_locked(c, &dropped, &n_dropped);
	else
		pthread_cond_signal(&c->pool_cond);
	pthread_mutex_unlock(&c->pool_lock);
	if (!keep)
		redisFree(ctx);
	free_contexts(dropped, n_dropped);
	if (how == RELEASE_FAILED)
		count_redis_error(c);
}

/* ---- Redis operations ---- */

/*
 * Build prefix+key into buf (prefix_len + EMBED_CACHE_KEY_MAX bytes).
 */
static size_t prefixed_key(const struct embed_cache *c, char *buf, const char *key, size_t key_len)
{
	memcpy(buf, c->prefix, c->prefix_len);
	memcpy(buf + c->prefix_len, key, key_len);
	return c->prefix_len + key_len;
}

struct mget_state {
	const char *const *keys;
	const size_t *todo; /* indices into keys/ret still to look up */
	size_t m;
	struct embed_cache_blob *ret;
	size_t hits;
};

/* Append the MGET for todo[from, from+count); argv/argvlen/keybuf sized for a batch. */
static int append_mget(struct embed_cache *c, redisContext *ctx, const struct mget_state *s, size_t from,
		       size_t count, const char **argv, size_t *argvlen, char *keybuf)
{
	size_t stride = c->prefix_len + EMBED_CACHE_KEY_MAX;
	argv[0] = "MGET";
	argvlen[0] = 4;
	for (size_t j = 0; j < count; j++) {
		const char *key = s->keys[s->todo[from + j]];
		char *kb = keybuf + j * stride;
		argv[j + 1] = kb;
		argvlen[j + 1] = prefixed_key(c, kb, key, strlen(key));
	}
	return redisAppendCommandArgv(ctx, (int)count + 1, argv, argvlen) == REDIS_OK ? 0 : -1;
}

/*
 * Take the hits of one MGET reply into s->ret and the memory layer.
 * Returns 0, -1 for an unexpected reply, -NOMEM.
 */
static int take_mget_reply(struct embed_cache *c, redisReply *r, struct mget_state *s, size_t from, size_t count)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements != count)
		return -1;
	for (size_t j = 0; j < count; j++) {
		redisReply *el = r->element[j];
		if (el->type != REDIS_REPLY_STRING || el->len > EMBED_CACHE_BLOB_MAX)
			continue; /* nil, or not something we stored: a miss */
		size_t i = s->todo[from + j];
		void *copy = malloc(el->len ? el->len : 1);
		if (!copy)
			return -T2S_ERR_NOMEM;
		memcpy(copy, el->str, el->len);
		s->ret[i].data = copy;
		s->ret[i].len = el->len;
		s->hits++;
		/* Failing to keep a copy in memory only costs a later Redis trip. */
		(void)mem_put(c, s->keys[i], strlen(s->keys[i]), el->str, el->len);
	}
	return 0;
}

/*
 * Look up keys[todo[0..m)] in Redis, filling ret for hits.  Sets
 * *ret_failed when Redis could not answer for some keys.  Returns 0 or -NOMEM.
 */
static int redis_get(struct embed_cache *c, struct mget_state *s, bool *ret_failed)
{
	size_t batch = s->m < EMBED_CACHE_REDIS_BATCH ? s->m : EMBED_CACHE_REDIS_BATCH;
	const char **argv = malloc((batch + 1) * sizeof(*argv));
	size_t *argvlen = malloc((batch + 1) * sizeof(*argvlen));
	char *keybuf = malloc(batch * (c->prefix_len + EMBED_CACHE_KEY_MAX));
	redisContext *ctx = NULL;
	unsigned gen;
	int rc = -T2S_ERR_NOMEM;
	if (argv && argvlen && keybuf)
		rc = pool_acquire(c, &ctx, &gen);
	if (rc < 0 || !ctx) {
		*ret_failed = rc == 0;
		free(argv);
		free(argvlen);
		free(keybuf);
		return rc;
	}
	enum release_how how = RELEASE_OK;
	size_t asked = 0;
	for (size_t start = 0; start < s->m && how == RELEASE_OK;) {
		size_t ends[PIPELINE_BATCHES];
		size_t nb = 0, pos = start;
		for (; nb < PIPELINE_BATCHES && pos < s->m; nb++) {
			size_t count = s->m - pos < batch ? s->m - pos : batch;
			if (append_mget(c, ctx, s, pos, count, argv, argvlen, keybuf) < 0) {
				how = RELEASE_FAILED;
				break;
			}
			pos += count;
			ends[nb] = pos;
		}
		for (size_t b = 0; b < nb && how == RELEASE_OK; b++) {
			size_t from = b ? ends[b - 1] : start;
			void *reply;
			if (redisGetReply(ctx, &reply) != REDIS_OK) {
				how = RELEASE_FAILED;
				break;
			}
			int trc = take_mget_reply(c, reply, s, from, ends[b] - from);
			freeReplyObject(reply);
			if (trc == -T2S_ERR_NOMEM) {
				rc = trc;
				how = RELEASE_DISCARD; /* replies of this round remain unread */
			} else if (trc < 0) {
				how = RELEASE_FAILED;
			} else {
				asked += ends[b] - from;
			}
		}
		start = pos;
	}
	pool_release(c, ctx, gen, how);
	free(argv);
	free(argvlen);
	free(keybuf);
	if (how == RELEASE_FAILED)
		*ret_failed = true;
	if (asked) {
		metrics_add(c->m_lookups, (const char *const[]){"redis", "hit", NULL}, (double)s->hits);
		metrics_add(c->m_lookups, (const char *const[]){"redis", "miss", NULL}, (double)(asked - s->hits));
	}
	return rc;
}

static bool key_ok(const char *key)
{
	return key && strnlen(key, EMBED_CACHE_KEY_MAX + 1) <= EMBED_CACHE_KEY_MAX;
}

int embed_cache_get_many(struct embed_cache *c, const char *const *keys, size_t n, struct embed_cache_blob *ret,
			 struct embed_cache_stats *stats)
{
	struct embed_cache_stats st = {0};
	for (size_t i = 0; i < n; i++)
		ret[i] = (struct embed_cache_blob){NULL, 0};
	size_t *todo = n ? malloc(n * sizeof(*todo)) : NULL;
	if (n && !todo)
		return -T2S_ERR_NOMEM;
	size_t m = 0;
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (!key_ok(keys[i]))
			continue;
		rc = mem_get(c, keys[i], strlen(keys[i]), &ret[i]);
		if (rc == 1) {
			st.memory_hits++;
			rc = 0;
		} else if (rc == 0) {
			todo[m++] = i;
		}
	}
	if (rc == 0) {
		metrics_add(c->m_lookups, (const char *const[]){"memory", "hit", NULL}, (double)st.memory_hits);
		metrics_add(c->m_lookups, (const char *const[]){"memory", "miss", NULL}, (double)(n - st.memory_hits));
	}
	if (rc == 0 && m && c->redis_url) {
		struct mget_state s = {.keys = keys, .todo = todo, .m = m, .ret = ret};
		rc = redis_get(c, &s, &st.redis_failed);
		st.redis_hits = s.hits;
	}
	free(todo);
	if (rc < 0) {
		for (size_t i = 0; i < n; i++) {
			free(ret[i].data);
			ret[i] = (struct embed_cache_blob){NULL, 0};
		}
		return rc;
	}
	st.misses = n - st.memory_hits - st.redis_hits;
	if (stats)
		*stats = st;
	return 0;
}

/*
 * SET every key in Redis, EMBED_CACHE_REDIS_BATCH commands per round trip.
 * Sets *ret_failed when Redis could not take them all.  Returns 0 or -NOMEM.
 */
static int redis_put(struct embed_cache *c, const char *const *keys, const struct embed_cache_blob *blobs, size_t n,
		     bool *ret_failed)
{
	char *keybuf = malloc(c->prefix_len + EMBED_CACHE_KEY_MAX);
	if (!keybuf)
		return -T2S_ERR_NOMEM;
	redisContext *ctx;
	unsigned gen;
	int rc = pool_acquire(c, &ctx, &gen);
	if (rc < 0 || !ctx) {
		*ret_failed = rc == 0;
		free(keybuf);
		return rc;
	}
	enum release_how how = RELEASE_OK;
	for (size_t start = 0; start < n && how == RELEASE_OK;) {
		size_t end = n - start < EMBED_CACHE_REDIS_BATCH ? n : start + EMBED_CACHE_REDIS_BATCH;
		for (size_t i = start; i < end; i++) {
			char ttl[24];
			int ttl_len = snprintf(ttl, sizeof(ttl), "%ld", c->redis_ttl_s);
			const char *argv[5] = {"SET", keybuf, blobs[i].len ? blobs[i].data : "", "EX", ttl};
			size_t argvlen[5] = {3, prefixed_key(c, keybuf, keys[i], strlen(keys[i])), blobs[i].len, 2,
					     (size_t)ttl_len};
			if (redisAppendCommandArgv(ctx, c->redis_ttl_s > 0 ? 5 : 3, argv, argvlen) != REDIS_OK) {
				how = RELEASE_FAILED;
				break;
			}
		}
		for (size_t i = start; i < end && how == RELEASE_OK; i++) {
			void *reply;
			if (redisGetReply(ctx, &reply) != REDIS_OK) {
				how = RELEASE_FAILED;
				break;
			}
			if (((redisReply *)reply)->type == REDIS_REPLY_ERROR)
				how = RELEASE_FAILED; /* OOM, READONLY, NOAUTH...: stop hammering */
			freeReplyObject(reply);
		}
		start = end;
	}
	pool_release(c, ctx, gen, how);
	free(keybuf);
	if (how == RELEASE_FAILED)
		*ret_failed = true;
	return rc;
}

int embed_cache_put_many(struct embed_cache *c, const char *const *keys, const struct embed_cache_blob *blobs,
			 size_t n, struct embed_cache_stats *stats)
{
	struct embed_cache_stats st = {0};
	for (size_t i = 0; i < n; i++)
		if (!key_ok(keys[i]) || blobs[i].len > EMBED_CACHE_BLOB_MAX || (!blobs[i].data && blobs[i].len))
			return -T2S_ERR_INVALID;
	for (size_t i = 0; i < n; i++) {
		int rc = mem_put(c, keys[i], strlen(keys[i]), blobs[i].data, blobs[i].len);
		if (rc < 0)
			return rc;
	}
	int rc = 0;
	if (n && c->redis_url)
		rc = redis_put(c, keys, blobs, n, &st.redis_failed);
	if (stats)
		*stats = st;
	return rc;
}

bool embed_cache_redis_healthy(struct embed_cache *c)
{
	if (!c->redis_url)
		return false;
	pthread_mutex_lock(&c->pool_lock);
	bool ok = !c->breaker_open;
	pthread_mutex_unlock(&c->pool_lock);
	return ok;
}

size_t embed_cache_memory_bytes(struct embed_cache *c)
{
	pthread_mutex_lock(&c->mem_lock);
	size_t b = c->bytes;
	pthread_mutex_unlock(&c->mem_lock);
	return b;
}

/* ---- lifecycle ---- */

/* Connect one context at creation; a malformed URL is the only Redis error reported. */
static int warm_pool(struct embed_cache *c, struct t2s_error *err)
{
	redisContext *ctx;
	struct t2s_error e;
	int rc = redis_connect(c->redis_url, c->timeout_ms, &ctx, &e);
	if (rc == 0) {
		c->idle[c->n_idle] = ctx;
		c->idle_gen[c->n_idle] = c->generation;
		c->n_idle++;
		c->n_total++;
		return 0;
	}
	if (rc == -T2S_ERR_INVALID || rc == -T2S_ERR_NOMEM)
		return t2s_error_set(err, e.code, "%s", e.message);
	count_redis_error(c);
	c->breaker_open = true;
	c->open_until = clock_now_ms() + (double)c->retry_after_ms;
	return 0;
}

int embed_cache_new(const struct embed_cache_options *o, struct embed_cache **ret, struct t2s_error *err)
{
	struct embed_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return t2s_error_set(err, T2S_ERR_NOMEM, "embedding cache: out of memory");
	pthread_mutex_init(&c->mem_lock, NULL);
	pthread_mutex_init(&c->pool_lock, NULL);
	pthread_cond_init(&c->pool_cond, NULL);
	c->max_bytes = o->memory_max_bytes ? o->memory_max_bytes : DEFAULT_MEMORY_MAX;
	c->timeout_ms = o->redis_timeout_ms > 0 ? o->redis_timeout_ms : T2S_REDIS_TIMEOUT_DEFAULT_MS;
	c->retry_after_ms = o->retry_after_ms > 0 ? o->retry_after_ms : DEFAULT_RETRY_AFTER_MS;
	c->pool_size = o->redis_pool_size > 0 ? o->redis_pool_size : DEFAULT_POOL_SIZE;
	c->n_buckets = MIN_BUCKETS;
	c->buckets = calloc(c->n_buckets, sizeof(*c->buckets));
	c->prefix = strdup(o->key_prefix ? o->key_prefix : "");
	c->redis_ttl_s = o->redis_ttl_s > 0 ? o->redis_ttl_s : 0;
	if (!c->buckets || !c->prefix)
		goto nomem;
	c->prefix_len = strlen(c->prefix);
	const struct embed_cache_metrics *m = o->metrics ? o->metrics : &embed_cache_embedding_metrics;
	c->m_lookups = metrics_family(m->lookups, m->lookups_help, METRIC_COUNTER, lookup_labels, NULL, 0);
	c->m_errors = metrics_family(m->redis_errors, m->redis_errors_help, METRIC_COUNTER, NULL, NULL, 0);
	c->m_bytes = metrics_family(m->memory_bytes, m->memory_bytes_help, METRIC_GAUGE, NULL, NULL, 0);
	if (o->redis_url && o->redis_url[0]) {
		c->redis_url = strdup(o->redis_url);
		c->idle = calloc((size_t)c->pool_size, sizeof(*c->idle));
		c->idle_gen = calloc((size_t)c->pool_size, sizeof(*c->idle_gen));
		if (!c->redis_url || !c->idle || !c->idle_gen)
			goto nomem;
		int rc = warm_pool(c, err);
		if (rc < 0) {
			embed_cache_free(c);
			return rc;
		}
	}
	*ret = c;
	return 0;
nomem:
	embed_cache_free(c);
	return t2s_error_set(err, T2S_ERR_NOMEM, "embedding cache: out of memory");
}

void embed_cache_free(struct embed_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n_idle; i++)
		redisFree(c->idle[i]);
	struct mem_entry *e = c->newest;
	while (e) {
		struct mem_entry *older = e->older;
		free(e);
		e = older;
	}
	if (c->bytes)
		metrics_add(c->m_bytes, NULL, -(double)c->bytes);
	free(c->buckets);
	free(c->prefix);
	free(c->redis_url);
	free(c->idle);
	free(c->idle_gen);
	pthread_mutex_destroy(&c->mem_lock);
	pthread_mutex_destroy(&c->pool_lock);
	pthread_cond_destroy(&c->pool_cond);
	free(c);
}
