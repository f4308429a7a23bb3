/*
 * value_index_cache.c - the answers of value_index_lookup, remembered per
 * index (see the lookup cache in value_index.h).
 *
 * A lookup is a pure function of the immutable index and (span, min_score,
 * max), and most of its cost is the FTS5 query, run under the index's one
 * mutex: under concurrent requests every lookup waits for it.  Questions
 * repeat their words ("names", "countries", "students"), so the index keeps
 * each span's answer: an open-addressing table of VI_CACHE_SLOTS slots,
 * allocated on the first insert, filled to three quarters and then left as
 * it is (no eviction: an entry never moves or changes once written, and
 * readers copy it out under cache_lock).  The cache lives and dies with the
 * index: a refresh that rebuilds the index starts an empty one.
 */
#include "pipeline/values/value_index_internal.h"

#include "common/hash.h"

#include <stdlib.h>
#include <string.h>

struct vi_cached {
	uint64_t h;   /* 0: empty slot */
	char *span;   /* malloc'd */
	double min_score;
	size_t max, n;
	struct value_match m[VI_CACHE_MATCHES];
};

static uint64_t cache_hash(const char *span, size_t len, double min_score, size_t max)
{
	uint64_t h = hash_fnv1a64(HASH_FNV1A64_SEED, span, len);
	h = hash_fnv1a64(h, &min_score, sizeof(min_score));
	h = hash_fnv1a64(h, &max, sizeof(max));
	return h | 1;
}

static bool same_key(const struct vi_cached *c, uint64_t h, const char *span, size_t len, double min_score, size_t max)
{
	return c->h == h && c->min_score == min_score && c->max == max && strncmp(c->span, span, len) == 0 &&
	       c->span[len] == '\0';
}

bool vi_cache_get(struct value_index *vi, const char *span, size_t len, double min_score, size_t max,
		  struct value_match *ret, size_t *ret_n)
{
	if (len > VI_CACHE_SPAN_MAX)
		return false;
	uint64_t h = cache_hash(span, len, min_score, max);
	bool hit = false;
	pthread_mutex_lock(&vi->cache_lock);
	for (size_t i = h & (VI_CACHE_SLOTS - 1); vi->cache && vi->cache[i].h; i = (i + 1) & (VI_CACHE_SLOTS - 1))
		if (same_key(&vi->cache[i], h, span, len, min_score, max)) {
			memcpy(ret, vi->cache[i].m, vi->cache[i].n * sizeof(*ret));
			*ret_n = vi->cache[i].n;
			hit = true;
			break;
		}
	vi->cache_hits += hit;
	pthread_mutex_unlock(&vi->cache_lock);
	return hit;
}

void vi_cache_put(struct value_index *vi, const char *span, size_t len, double min_score, size_t max,
		  const struct value_match *m, size_t n)
{
	if (len > VI_CACHE_SPAN_MAX || n > VI_CACHE_MATCHES)
		return;
	uint64_t h = cache_hash(span, len, min_score, max);
	pthread_mutex_lock(&vi->cache_lock);
	if (!vi->cache && vi->cache_n == 0)
		vi->cache = calloc(VI_CACHE_SLOTS, sizeof(*vi->cache));
	if (vi->cache && vi->cache_n < VI_CACHE_SLOTS / 4 * 3) {
		size_t i = h & (VI_CACHE_SLOTS - 1);
		while (vi->cache[i].h && !same_key(&vi->cache[i], h, span, len, min_score, max))
			i = (i + 1) & (VI_CACHE_SLOTS - 1);
		struct vi_cached *c = &vi->cache[i];
		if (!c->h && (c->span = strndup(span, len))) {
			c->min_score = min_score;
			c->max = max;
			c->n = n;
			memcpy(c->m, m, n * sizeof(*m));
			c->h = h;
			vi->cache_n++;
		}
	}
	pthread_mutex_unlock(&vi->cache_lock);
}

void vi_cache_free(struct value_index *vi)
{
	for (size_t i = 0; vi->cache && i < VI_CACHE_SLOTS; i++)
		free(vi->cache[i].span);
	free(vi->cache);
	vi->cache = NULL;
	pthread_mutex_destroy(&vi->cache_lock);
}

void value_index_cache_stats(struct value_index *vi, size_t *ret_entries, size_t *ret_hits)
{
	pthread_mutex_lock(&vi->cache_lock);
	*ret_entries = vi->cache_n;
	*ret_hits = vi->cache_hits;
	pthread_mutex_unlock(&vi->cache_lock);
}
