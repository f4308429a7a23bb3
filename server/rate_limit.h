/*
 * rate_limit.h - per-API-key request limits: one token bucket and one count
 * of running requests per key, kept across config reloads.
 *
 * Each key's bucket holds up to burst tokens and refills at rate_per_s
 * tokens a second; a request takes one token or is refused with the whole
 * seconds after which one will be there (for Retry-After).  A key with
 * rate_per_s 0 is not limited.
 *
 * Buckets outlive configs: rate_limiter_configure gives the buckets of a
 * config's keys, and a key that was configured before (same name and key
 * digest) gets its old bucket back, with its tokens and its running
 * requests; new limits apply to those at once (tokens above a lower burst
 * are dropped, a lower max_concurrent binds the requests already running).
 * So a reload (SIGHUP) never refills a bucket nor forgets a running
 * request.  A bucket lives until rate_limiter_free, also when its key was
 * removed from the config (requests of it may still be running): their
 * number is bounded by the distinct keys configured over the process's life.
 *
 * Fair share, work-conserving: a key runs at most max_concurrent requests at
 * once (rate_limiter_enter / rate_limiter_leave around each) while that cap
 * matters to others.  It may go past its cap (borrow) only while every key's
 * running requests together are under the limiter's borrow_limit (the
 * served connections minus one key's share and a little headroom,
 * server/generation.c, so a share is always left to the others) and no other key was refused at its own cap in the last
 * second (another key waiting).  A lone tenant behind a gateway thus uses
 * the idle capacity, and a noisy one still can't take the last share.
 * max_concurrent 0 is not limited.
 *
 * Thread-safe (one mutex; each call is a few arithmetic operations).
 */
#ifndef T2S_RATE_LIMIT_H
#define T2S_RATE_LIMIT_H

#include <stdbool.h>
#include <stddef.h>

struct rate_limiter;
struct rate_bucket; /* one key's; owned by its limiter */

struct rate_limit {
	double rate_per_s; /* 0: unlimited */
	double burst;      /* bucket size, >= 1 */
	unsigned max_concurrent; /* requests of the key running at once; 0: unlimited */
};

/* A key's identity: a bucket is kept across configs for the same name and digest. */
struct rate_key {
	const char *name;
	const unsigned char *digest; /* 32 bytes */
};

/* An empty limiter (no buckets, no borrowing); NULL when out of memory.  Free with rate_limiter_free. */
struct rate_limiter *rate_limiter_new(void);
/* Frees the limiter and every bucket it gave (NULL is fine). */
void rate_limiter_free(struct rate_limiter *rl);

/*
 * The buckets of a config's n keys into ret_buckets[0..n) (the caller's
 * array; the buckets stay the limiter's): an earlier bucket of the same key
 * (struct rate_key) is reused with limits[i] applied to it, else a new full
 * one.  borrow_limit is the running requests of all keys together under
 * which a key may go past its max_concurrent (0: never).  0, or -1 when out
 * of memory (then nothing changed but buckets possibly added).
 */
int rate_limiter_configure(struct rate_limiter *rl, const struct rate_key *keys, const struct rate_limit *limits,
			   size_t n, unsigned borrow_limit, struct rate_bucket **ret_buckets);

/*
 * Take a token from bucket b at time now_ms (monotonic).  true when the
 * request may go ahead; false when refused, with *ret_retry_after_s (>= 1)
 * the whole seconds until a token is there.  b NULL: true.
 */
bool rate_limiter_take(struct rate_limiter *rl, struct rate_bucket *b, double now_ms, int *ret_retry_after_s);

/*
 * Count one more running request of b's key at time now_ms, unless it
 * already runs max_concurrent and may not borrow (above): then false and
 * nothing is counted.  Every true is matched by one rate_limiter_leave(rl, b)
 * when the request's answer is on its way.  b NULL: true.
 */
bool rate_limiter_enter(struct rate_limiter *rl, struct rate_bucket *b, double now_ms);

/* A request counted by rate_limiter_enter(rl, b) has ended. */
void rate_limiter_leave(struct rate_limiter *rl, struct rate_bucket *b);

/* Requests of b's key running now (for tests and metrics). */
unsigned rate_limiter_running(struct rate_limiter *rl, struct rate_bucket *b);

#endif
