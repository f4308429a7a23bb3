/*
 * redis_pubsub.h - Redis publish/subscribe on one channel: a publish call,
 * and a subscriber thread that stays subscribed across Redis restarts.
 *
 * The subscriber connects (redis_client.h, bounded by timeout_ms),
 * subscribes and then blocks reading messages; when the connection breaks
 * it reconnects after a backoff (200 ms doubling up to 5 s).  on_state is
 * told each time it becomes subscribed (up = true: messages published while
 * it was not subscribed are lost, so the caller catches up another way) or
 * loses its connection (up = false, why).  Both callbacks run on the
 * subscriber's thread; the message is valid only during the call.
 *
 * Library code: nothing is logged.
 */
#ifndef T2S_REDIS_PUBSUB_H
#define T2S_REDIS_PUBSUB_H

#include "common/contract.h"
#include "common/error.h"

#include <stdbool.h>
#include <stddef.h>

/* PUBLISH msg on channel through a connection of its own.  0 or -T2S_ERR_UNAVAILABLE / _NOMEM. */
T2S_MUST_CHECK
int redis_publish(const char *url, long timeout_ms, const char *channel, const char *msg, struct t2s_error *err);

struct redis_subscriber;

struct redis_subscriber_options {
	const char *url;        /* copied */
	long timeout_ms;        /* connect and SUBSCRIBE; reading messages waits without limit */
	const char *channel;    /* copied */
	void (*on_message)(void *ctx, const char *msg, size_t len);
	void (*on_state)(void *ctx, bool up, const char *why); /* may be NULL; why is NULL when up */
	void *ctx;
};

/* Start the subscriber thread; *ret to stop with redis_subscriber_stop. */
T2S_MUST_CHECK
int redis_subscriber_start(const struct redis_subscriber_options *o, struct redis_subscriber **ret,
			   struct t2s_error *err);
/* Stop the thread (breaking its connection), join it and free s.  Accepts NULL; returns NULL. */
struct redis_subscriber *redis_subscriber_stop(struct redis_subscriber *s);

#endif
