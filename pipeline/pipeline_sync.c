/*
 * pipeline_sync.c - replicas that agree (pipeline.h, pipeline_sync_start):
 * what one replica changes reaches the others within seconds.
 *
 * Each replica keeps, per database, the version of its prompt state
 * (examples and overrides: the state store bumps it in every writing
 * transaction, state_store.h) and the count of refreshes asked for.  The
 * answer cache keys on the version, so once a replica knows of a change it
 * never serves an answer made before it.  Replicas learn of changes
 *
 *   - at once after their own writes (the version is read back);
 *   - through Redis, when configured: a message "<replica> <kind> <database>"
 *     on SYNC_CHANNEL, kind "state" (read the store's versions now) or
 *     "refresh" (introspect the database again);
 *   - by reading the store's versions every poll_ms (the only way without
 *     Redis, and the catch-up after a Redis reconnect; a refresh counted
 *     there is applied too);
 *   - for schema changes nobody announced, by introspecting every database
 *     every recheck_s and applying the new schema when its hash differs.
 *
 * One thread (run) does the reading and refreshing; the Redis subscriber's
 * thread only marks work and wakes it.  Received invalidations are counted
 * in text2sqld_invalidations_received_total{source, kind} and reported
 * through the options' note callback (the server logs them).
 */
#include "pipeline/pipeline_internal.h"

#include "common/clock.h"
#include "common/hash.h"
#include "common/metrics.h"
#include "pipeline/models/redis_pubsub.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SYNC_CHANNEL "t2s:invalidate"

struct pipeline_sync {
	struct pipeline *p;
	struct pipeline_sync_options o;
	char self[17];                  /* this replica's id in messages */
	struct redis_subscriber *sub;
	struct metric_family *received;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, poll_now, kick;      /* under lock; kick: wake() was called */
	atomic_bool stopping;           /* stop, readable without the lock (a recheck ends early) */
};

static void count(struct pipeline_sync *s, const char *source, const char *kind)
{
	const char *labels[] = {source, kind, NULL};
	metrics_add(s->received, labels, 1);
}

static void note(struct pipeline_sync *s, const char *what, const char *database, const char *detail)
{
	if (s->o.note)
		s->o.note(s->o.note_ctx, what, database, detail);
}

/* Raise *v to x when x is greater; true when it was. */
static bool raise_to(_Atomic int64_t *v, int64_t x)
{
	int64_t cur = atomic_load(v);
	while (x > cur)
		if (atomic_compare_exchange_weak(v, &cur, x))
			return true;
	return false;
}

/* Have the sync thread look at its work now (poll: read the store first); never lost while it is busy. */
static void wake(struct pipeline_sync *s, bool poll)
{
	pthread_mutex_lock(&s->lock);
	s->poll_now |= poll;
	s->kick = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/*
 * Read the store's versions.  At start everything is adopted as it is;
 * later, refresh counts that grew mark refreshes other replicas asked for
 * (counted as source "store"), and versions that grew are counted under
 * source (NULL: not counted, after a write of our own).
 */
static void read_store(struct pipeline_sync *s, const char *source, bool start)
{
	struct pipeline *p = s->p;
	struct state_versions v = {0};
	struct t2s_error e = {0};
	bool marked = false;
	if (!p->state || !state_store_available(p->state) || state_store_versions(p->state, &v, &e) < 0)
		return;
	for (size_t k = 0; k < v.n; k++) {
		struct catalog_db *db = catalog_find(&p->catalog, v.items[k].database);
		if (!db)
			continue;
		if (raise_to(&db->sync.version, v.items[k].version) && source && !start)
			count(s, source, "state");
		if (raise_to(&db->sync.refreshes, v.items[k].refreshes) && !start) {
			count(s, "store", "refresh");
			atomic_store(&db->sync.pending, true);
			marked = true;
		}
	}
	state_versions_release(&v);
	if (marked && !source)
		wake(s, false); /* found on a request's thread: the sync thread applies it */
}

/* Apply the refreshes marked pending. */
static void run_pending(struct pipeline_sync *s)
{
	const struct catalog_list *l = catalog_list(&s->p->catalog);
	for (size_t i = 0; i < l->n; i++) {
		struct catalog_db *db = l->dbs[i];
		if (!atomic_exchange(&db->sync.pending, false))
			continue;
		struct pipeline_refresh r;
		struct t2s_error e = {0};
		if (pipeline_refresh_apply(s->p, db, true, &r, &e) == 0)
			note(s, "refreshed: another replica refreshed it", db->cfg->name, r.fresh->hash);
		else
			note(s, "refresh asked by another replica failed", db->cfg->name, e.message);
		pipeline_refresh_release(&r);
	}
}

/* Introspect every database; apply a schema whose hash changed. */
static void recheck(struct pipeline_sync *s)
{
	const struct catalog_list *l = catalog_list(&s->p->catalog);
	for (size_t i = 0; i < l->n && !atomic_load(&s->stopping); i++) {
		struct catalog_db *db = l->dbs[i];
		struct pipeline_refresh r;
		struct t2s_error e = {0};
		if (pipeline_refresh_apply(s->p, db, false, &r, &e) < 0) {
			note(s, "schema recheck failed", db->cfg->name, e.message);
		} else if (r.previous_hash[0] && strcmp(r.previous_hash, r.fresh->hash) != 0) {
			count(s, "recheck", "schema");
			note(s, "schema changed: applied", db->cfg->name, r.fresh->hash);
		}
		pipeline_refresh_release(&r);
	}
}

static void *run(void *arg)
{
	struct pipeline_sync *s = arg;
	double now = clock_now_ms();
	double next_poll = now + (double)s->o.poll_ms, next_recheck = now + (double)s->o.recheck_s * 1000.0;
	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		double wait = 3600e3;
		if (s->o.poll_ms > 0)
			wait = next_poll - now;
		if (s->o.recheck_s > 0 && next_recheck - now < wait)
			wait = next_recheck - now;
		if (!s->kick && wait > 0) {
			struct timespec until = clock_realtime_in(wait);
			pthread_cond_timedwait(&s->cond, &s->lock, &until);
		}
		if (s->stop)
			break;
		now = clock_now_ms();
		bool poll = s->poll_now || (s->o.poll_ms > 0 && now >= next_poll);
		s->poll_now = s->kick = false;
		pthread_mutex_unlock(&s->lock);
		if (poll) {
			read_store(s, "store", false);
			next_poll = now + (double)s->o.poll_ms;
		}
		run_pending(s);
		if (s->o.recheck_s > 0 && now >= next_recheck) {
			recheck(s);
			next_recheck = clock_now_ms() + (double)s->o.recheck_s * 1000.0;
		}
		now = clock_now_ms();
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* A message "<replica> <kind> <database>" from the subscriber's thread. */
static void on_message(void *ctx, const char *msg, size_t len)
{
	struct pipeline_sync *s = ctx;
	char buf[STATE_DATABASE_NAME_MAX + 64], from[32], kind[16];
	int at = 0;
	if (len >= sizeof(buf))
		return;
	memcpy(buf, msg, len);
	buf[len] = '\0';
	if (sscanf(buf, "%31s %15s %n", from, kind, &at) != 2 || at == 0 || strcmp(from, s->self) == 0)
		return;
	struct catalog_db *db = catalog_find(&s->p->catalog, buf + at);
	if (!db)
		return;
	if (strcmp(kind, "refresh") == 0) {
		count(s, "redis", "refresh");
		atomic_store(&db->sync.pending, true);
		wake(s, true);
	} else if (strcmp(kind, "state") == 0) {
		count(s, "redis", "state");
		wake(s, true);
	}
}

static void on_state(void *ctx, bool up, const char *why)
{
	struct pipeline_sync *s = ctx;
	note(s, up ? "invalidation channel subscribed" : "invalidation channel lost", NULL, why);
	if (up)
		wake(s, true); /* catch up on what was published while away */
}

static void publish(struct pipeline_sync *s, const char *kind, const char *database)
{
	if (!s->p->redis_url)
		return;
	char msg[STATE_DATABASE_NAME_MAX + 64];
	snprintf(msg, sizeof(msg), "%s %s %s", s->self, kind, database);
	struct t2s_error e = {0};
	if (redis_publish(s->p->redis_url, s->p->redis_timeout_ms, SYNC_CHANNEL, msg, &e) < 0)
		note(s, "invalidation not published (the other replicas poll the store)", database, e.message);
}

static struct pipeline_sync *sync_free(struct pipeline_sync *s)
{
	if (!s)
		return NULL;
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
	return NULL;
}

int pipeline_sync_start(struct pipeline *p, const struct pipeline_sync_options *o, struct t2s_error *err)
{
	struct pipeline_sync *s = calloc(1, sizeof(*s));
	if (!s)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	*s = (struct pipeline_sync){.p = p, .o = *o};
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	unsigned char id[8];
	if (hash_random_bytes(id, sizeof(id)) < 0) {
		sync_free(s);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory starting the replica sync");
	}
	for (size_t i = 0; i < sizeof(id); i++)
		snprintf(s->self + 2 * i, 3, "%02x", id[i]);
	static const char *const labels[] = {"source", "kind", NULL};
	s->received = metrics_family("text2sqld_invalidations_received_total",
				     "Changes made elsewhere that this replica learned of, by source (redis: messages; "
				     "store: versions read from the state store; recheck: schema fingerprints) and kind "
				     "(state: examples or overrides; refresh; schema).",
				     METRIC_COUNTER, labels, NULL, 0);
	read_store(s, NULL, true); /* start from the store's versions: replicas key the answer cache alike */
	p->sync = s;
	if (pthread_create(&s->thread, NULL, run, s) != 0) {
		p->sync = sync_free(s);
		return t2s_error_set(err, T2S_ERR_INTERNAL, "the replica sync thread could not start");
	}
	s->thread_started = true;
	if (p->redis_url) {
		struct redis_subscriber_options so = {.url = p->redis_url, .timeout_ms = p->redis_timeout_ms,
						      .channel = SYNC_CHANNEL, .on_message = on_message,
						      .on_state = on_state, .ctx = s};
		int rc = redis_subscriber_start(&so, &s->sub, err);
		if (rc < 0) {
			pipeline_sync_stop(p);
			return rc;
		}
	}
	return 0;
}

void pipeline_sync_stop(struct pipeline *p)
{
	struct pipeline_sync *s = p->sync;
	if (!s)
		return;
	s->sub = redis_subscriber_stop(s->sub);
	atomic_store(&s->stopping, true);
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->thread_started)
		pthread_join(s->thread, NULL);
	p->sync = sync_free(s);
}

int64_t pipeline_sync_state_version(struct pipeline *p, const struct catalog_db *db)
{
	return p->sync ? atomic_load(&db->sync.version) : 0;
}

void pipeline_sync_state_changed(struct pipeline *p, struct catalog_db *db)
{
	if (!p->sync)
		return;
	read_store(p->sync, NULL, false);
	publish(p->sync, "state", db->cfg->name);
}

void pipeline_sync_refreshed(struct pipeline *p, struct catalog_db *db)
{
	struct pipeline_sync *s = p->sync;
	if (!s)
		return;
	struct t2s_error e = {0};
	_Atomic int64_t *seen = &db->sync.refreshes;
	int64_t before = atomic_load(seen), count = 0;
	/* Our own is not to be applied again, unless another replica's came in between (then the poll applies both). */
	if (p->state && state_store_refresh_note(p->state, db->cfg->name, &count, &e) == 0 && count == before + 1)
		atomic_compare_exchange_strong(seen, &before, count);
	publish(s, "refresh", db->cfg->name);
}
