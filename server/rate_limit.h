/*
 * rate_limit.h - per-API-key request limits: one token bucket and one count
 * of running requests per key.
 *
 * Each key's bucket holds up to burst tokens and refills at rate_per_s
 * tokens a second; a request takes one token or is refused with the whole
 * seconds after which one will be there (for Retry-After).  A key with
 * rate_per_s 0 is not limited.
 *
 * Fair share: a key runs at most max_concurrent requests at once
 * (rate_limiter_enter / rate_limiter_leave around each), so one key's slow
 * work never holds more than its share of the served connections
 * (limits.key_max_concurrent, server/http_server.c).  max_concurrent 0 is
 * not limited.
 *
 * Thread-safe (one mutex; each call is a few arithmetic operations).
 */
#ifndef T2S_RATE_LIMIT_H
#define T2S_RATE_LIMIT_H

#include <stdbool.h>
#include <stddef.h>

struct rate_limiter;

struct rate_limit {
	double rate_per_s; /* 0: unlimited */
	double burst;      /* bucket size, >= 1 */
	unsigned max_concurrent; /* requests of the key running at once; 0: unlimited */
};

/* n buckets with limits[i] each (copied), full at start; NULL when out of memory.  Free with rate_limiter_free. */
struct rate_limiter *rate_limiter_new(const struct rate_limit *limits, size_t n);
void rate_limiter_free(struct rate_limiter *rl);

/*
 * Take a token from bucket i at time now_ms (monotonic).  true when the
 * request may go ahead; false when refused, with *ret_retry_after_s (>= 1)
 * the whole seconds until a token is there.
 */
bool rate_limiter_take(struct rate_limiter *rl, size_t i, double now_ms, int *ret_retry_after_s);

/*
 * Count one more running request of key i, unless it already runs
 * max_concurrent: then false and nothing is counted.  Every true is
 * matched by one rate_limiter_leave(rl, i) when the request ends.
 */
bool rate_limiter_enter(struct rate_limiter *rl, size_t i);

/* A request counted by rate_limiter_enter(rl, i) has ended. */
void rate_limiter_leave(struct rate_limiter *rl, size_t i);

#endif
