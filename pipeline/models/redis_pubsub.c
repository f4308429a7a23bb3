/*
 * redis_pubsub.c - publishing on a Redis channel and a subscriber thread
 * with reconnects (see redis_pubsub.h).  The thread blocks in
 * redisGetReply; redis_subscriber_stop wakes it by shutting its socket down.
 */
#include "pipeline/models/redis_pubsub.h"

#include "common/clock.h"
#include "pipeline/models/redis_client.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define BACKOFF_FIRST_MS 200L
#define BACKOFF_MAX_MS 5000L

int redis_publish(const char *url, long timeout_ms, const char *channel, const char *msg, struct t2s_error *err)
{
	redisContext *c;
	int rc = redis_connect(url, timeout_ms, &c, err);
	if (rc < 0)
		return rc;
	redisReply *r = redisCommand(c, "PUBLISH %s %s", channel, msg);
	if (!r || r->type != REDIS_REPLY_INTEGER)
		rc = t2s_error_set(err, T2S_ERR_UNAVAILABLE, "Redis PUBLISH failed: %s", r ? "unexpected reply" : c->errstr);
	if (r)
		freeReplyObject(r);
	redisFree(c);
	return rc;
}

struct redis_subscriber {
	struct redis_subscriber_options o;
	char *url, *channel;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	redisContext *live; /* the connection being read, under lock */
	bool stop;
};

/* A "message" push: ["message", channel, payload]. */
static void deliver(struct redis_subscriber *s, redisReply *r)
{
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && r->element[0]->type == REDIS_REPLY_STRING &&
	    strcmp(r->element[0]->str, "message") == 0 && r->element[2]->type == REDIS_REPLY_STRING)
		s->o.on_message(s->o.ctx, r->element[2]->str, r->element[2]->len);
}

static void notify(struct redis_subscriber *s, bool up, const char *why)
{
	if (s->o.on_state)
		s->o.on_state(s->o.ctx, up, why);
}

/* Subscribe on c; true when subscribed (then c is live until it breaks or stop). */
static bool subscribe(struct redis_subscriber *s, redisContext *c)
{
	redisReply *r = redisCommand(c, "SUBSCRIBE %s", s->channel);
	bool ok = r && r->type == REDIS_REPLY_ARRAY;
	if (r)
		freeReplyObject(r);
	if (!ok)
		return false;
	redisSetTimeout(c, (struct timeval){0}); /* messages may be hours apart */
	pthread_mutex_lock(&s->lock);
	ok = !s->stop;
	if (ok)
		s->live = c;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/* Read messages until the connection breaks (or stop shuts it down). */
static void listen_on(struct redis_subscriber *s, redisContext *c)
{
	void *reply;
	notify(s, true, NULL);
	while (redisGetReply(c, &reply) == REDIS_OK && reply) {
		deliver(s, reply);
		freeReplyObject(reply);
	}
	pthread_mutex_lock(&s->lock);
	s->live = NULL;
	bool stopping = s->stop;
	pthread_mutex_unlock(&s->lock);
	if (!stopping)
		notify(s, false, c->errstr[0] ? c->errstr : "connection closed");
}

/* Wait ms or until stop; true when stopping. */
static bool pause_ms(struct redis_subscriber *s, long ms)
{
	struct timespec until = clock_realtime_in((double)ms);
	pthread_mutex_lock(&s->lock);
	while (!s->stop && pthread_cond_timedwait(&s->cond, &s->lock, &until) == 0)
		;
	bool stop = s->stop;
	pthread_mutex_unlock(&s->lock);
	return stop;
}

static void *run(void *arg)
{
	struct redis_subscriber *s = arg;
	long backoff = BACKOFF_FIRST_MS;
	do {
		redisContext *c = NULL;
		struct t2s_error e = {0};
		if (redis_connect(s->url, s->o.timeout_ms, &c, &e) == 0) {
			if (subscribe(s, c)) {
				backoff = BACKOFF_FIRST_MS;
				listen_on(s, c);
			} else {
				notify(s, false, "SUBSCRIBE failed");
			}
			redisFree(c);
		} else {
			notify(s, false, e.message);
		}
		if (backoff < BACKOFF_MAX_MS)
			backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	} while (!pause_ms(s, backoff / 2));
	return NULL;
}

int redis_subscriber_start(const struct redis_subscriber_options *o, struct redis_subscriber **ret,
			   struct t2s_error *err)
{
	*ret = NULL;
	struct redis_subscriber *s = calloc(1, sizeof(*s));
	if (!s || !(s->url = strdup(o->url)) || !(s->channel = strdup(o->channel))) {
		if (s) {
			free(s->url);
			free(s);
		}
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	s->o = *o;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (pthread_create(&s->thread, NULL, run, s) != 0) {
		s->thread = 0;
		redis_subscriber_stop(s);
		return t2s_error_set(err, T2S_ERR_INTERNAL, "the Redis subscriber thread could not start");
	}
	*ret = s;
	return 0;
}

struct redis_subscriber *redis_subscriber_stop(struct redis_subscriber *s)
{
	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	if (s->live)
		shutdown(s->live->fd, SHUT_RDWR); /* wakes redisGetReply */
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->thread)
		pthread_join(s->thread, NULL);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s->url);
	free(s->channel);
	free(s);
	return NULL;
}
