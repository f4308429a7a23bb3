/*
 * rate_limit.c - token buckets and running-request counts per API key (see rate_limit.h).
 */
#include "server/rate_limit.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

struct bucket {
	struct rate_limit limit;
	double tokens;
	double last_ms; /* < 0: not used yet (full) */
	unsigned running; /* requests entered and not yet left */
};

struct rate_limiter {
	pthread_mutex_t lock;
	size_t n;
	struct bucket b[];
};

struct rate_limiter *rate_limiter_new(const struct rate_limit *limits, size_t n)
{
	struct rate_limiter *rl = calloc(1, sizeof(*rl) + n * sizeof(rl->b[0]));
	if (!rl)
		return NULL;
	pthread_mutex_init(&rl->lock, NULL);
	rl->n = n;
	for (size_t i = 0; i < n; i++) {
		rl->b[i].limit = limits[i];
		if (rl->b[i].limit.burst < 1)
			rl->b[i].limit.burst = 1;
		rl->b[i].tokens = rl->b[i].limit.burst;
		rl->b[i].last_ms = -1;
	}
	return rl;
}

void rate_limiter_free(struct rate_limiter *rl)
{
	if (!rl)
		return;
	pthread_mutex_destroy(&rl->lock);
	free(rl);
}

bool rate_limiter_take(struct rate_limiter *rl, size_t i, double now_ms, int *ret_retry_after_s)
{
	if (!rl || i >= rl->n || rl->b[i].limit.rate_per_s <= 0)
		return true;
	struct bucket *b = &rl->b[i];
	pthread_mutex_lock(&rl->lock);
	if (b->last_ms >= 0 && now_ms > b->last_ms)
		b->tokens = fmin(b->limit.burst, b->tokens + (now_ms - b->last_ms) / 1000.0 * b->limit.rate_per_s);
	b->last_ms = now_ms;
	bool ok = b->tokens >= 1.0;
	if (ok)
		b->tokens -= 1.0;
	else
		*ret_retry_after_s = (int)fmax(1.0, ceil((1.0 - b->tokens) / b->limit.rate_per_s));
	pthread_mutex_unlock(&rl->lock);
	return ok;
}

bool rate_limiter_enter(struct rate_limiter *rl, size_t i)
{
	if (!rl || i >= rl->n)
		return true;
	struct bucket *b = &rl->b[i];
	pthread_mutex_lock(&rl->lock);
	bool ok = b->limit.max_concurrent == 0 || b->running < b->limit.max_concurrent;
	if (ok)
		b->running++;
	pthread_mutex_unlock(&rl->lock);
	return ok;
}

void rate_limiter_leave(struct rate_limiter *rl, size_t i)
{
	if (!rl || i >= rl->n)
		return;
	pthread_mutex_lock(&rl->lock);
	assert(rl->b[i].running > 0);
	if (rl->b[i].running > 0)
		rl->b[i].running--;
	pthread_mutex_unlock(&rl->lock);
}
