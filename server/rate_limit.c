/*
 * rate_limit.c - token buckets and running-request counts per API key, kept
 * across reloads, with a work-conserving concurrency cap (see rate_limit.h).
 */
#include "server/rate_limit.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* How long a key refused at its cap counts as waiting (no other key borrows meanwhile). */
#define WAITING_MS 1000.0

struct rate_bucket {
	struct rate_bucket *next; /* rate_limiter.all */
	char *name;
	unsigned char digest[32];
	struct rate_limit limit;
	double tokens;
	double last_ms;   /* < 0: not used yet (full) */
	unsigned running; /* requests entered and not yet left */
};

struct rate_limiter {
	pthread_mutex_t lock;
	struct rate_bucket *all; /* every bucket ever given */
	unsigned running;        /* sum of the buckets' running */
	unsigned borrow_limit;
	const struct rate_bucket *refused; /* the last bucket refused at its cap, at refused_ms */
	double refused_ms;
};

struct rate_limiter *rate_limiter_new(void)
{
	struct rate_limiter *rl = calloc(1, sizeof(*rl));
	if (!rl)
		return NULL;
	pthread_mutex_init(&rl->lock, NULL);
	rl->refused_ms = -1;
	return rl;
}

void rate_limiter_free(struct rate_limiter *rl)
{
	if (!rl)
		return;
	while (rl->all) {
		struct rate_bucket *next = rl->all->next;
		free(rl->all->name);
		free(rl->all);
		rl->all = next;
	}
	pthread_mutex_destroy(&rl->lock);
	free(rl);
}

/* The bucket of key k, or NULL.  Under rl->lock. */
static struct rate_bucket *find(struct rate_limiter *rl, const struct rate_key *k)
{
	for (struct rate_bucket *b = rl->all; b; b = b->next)
		if (strcmp(b->name, k->name) == 0 && memcmp(b->digest, k->digest, 32) == 0)
			return b;
	return NULL;
}

/* Apply limit l to b: tokens above a lower burst go; a first limit starts full.  Under rl->lock. */
static void apply(struct rate_bucket *b, struct rate_limit l, bool fresh)
{
	if (l.burst < 1)
		l.burst = 1;
	if (fresh || b->limit.rate_per_s <= 0)
		b->tokens = l.burst; /* a bucket that never counted (unlimited before) starts full */
	else
		b->tokens = fmin(b->tokens, l.burst);
	b->limit = l;
}

int rate_limiter_configure(struct rate_limiter *rl, const struct rate_key *keys, const struct rate_limit *limits,
			   size_t n, unsigned borrow_limit, struct rate_bucket **ret_buckets)
{
	int rc = 0;
	pthread_mutex_lock(&rl->lock);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct rate_bucket *b = find(rl, &keys[i]);
		if (b) {
			apply(b, limits[i], false);
		} else if ((b = calloc(1, sizeof(*b))) && (b->name = strdup(keys[i].name))) {
			memcpy(b->digest, keys[i].digest, 32);
			b->last_ms = -1;
			apply(b, limits[i], true);
			b->next = rl->all;
			rl->all = b;
		} else {
			free(b);
			rc = -1;
			break;
		}
		ret_buckets[i] = b;
	}
	if (rc == 0)
		rl->borrow_limit = borrow_limit;
	pthread_mutex_unlock(&rl->lock);
	return rc;
}

bool rate_limiter_take(struct rate_limiter *rl, struct rate_bucket *b, double now_ms, int *ret_retry_after_s)
{
	if (!rl || !b)
		return true;
	pthread_mutex_lock(&rl->lock);
	bool ok = true;
	if (b->limit.rate_per_s > 0) {
		if (b->last_ms >= 0 && now_ms > b->last_ms)
			b->tokens = fmin(b->limit.burst, b->tokens + (now_ms - b->last_ms) / 1000.0 * b->limit.rate_per_s);
		if (now_ms > b->last_ms)
			b->last_ms = now_ms;
		ok = b->tokens >= 1.0;
		if (ok)
			b->tokens -= 1.0;
		else
			*ret_retry_after_s = (int)fmax(1.0, ceil((1.0 - b->tokens) / b->limit.rate_per_s));
	}
	pthread_mutex_unlock(&rl->lock);
	return ok;
}

bool rate_limiter_enter(struct rate_limiter *rl, struct rate_bucket *b, double now_ms)
{
	if (!rl || !b)
		return true;
	pthread_mutex_lock(&rl->lock);
	bool ok = b->limit.max_concurrent == 0 || b->running < b->limit.max_concurrent;
	if (!ok) {
		bool other_waiting = rl->refused && rl->refused != b && now_ms - rl->refused_ms < WAITING_MS;
		ok = rl->running < rl->borrow_limit && !other_waiting;
		if (!ok) {
			rl->refused = b;
			rl->refused_ms = now_ms;
		}
	}
	if (ok) {
		b->running++;
		rl->running++;
	}
	pthread_mutex_unlock(&rl->lock);
	return ok;
}

void rate_limiter_leave(struct rate_limiter *rl, struct rate_bucket *b)
{
	if (!rl || !b)
		return;
	pthread_mutex_lock(&rl->lock);
	assert(b->running > 0 && rl->running > 0);
	if (b->running > 0) {
		b->running--;
		rl->running--;
	}
	pthread_mutex_unlock(&rl->lock);
}

unsigned rate_limiter_running(struct rate_limiter *rl, struct rate_bucket *b)
{
	pthread_mutex_lock(&rl->lock);
	unsigned n = b ? b->running : rl->running;
	pthread_mutex_unlock(&rl->lock);
	return n;
}
