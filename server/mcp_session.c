/*
 * mcp_session.c - the MCP session table (see mcp_session.h): an array of at
 * most limits.mcp_max_sessions entries under one mutex; expired entries are
 * swept whenever the table is touched.
 */
#include "server/mcp_session.h"

#include "common/clock.h"
#include "common/metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct mcp_session {
	char id[MCP_SESSION_ID_SIZE];
	char version[MCP_PROTOCOL_VERSION_SIZE];
	char *owner;    /* the key's name, malloc'd; "" with auth off */
	double used_ms; /* last use (clock_now_ms) */
};

struct mcp_sessions {
	pthread_mutex_t lock;
	struct mcp_session *v; /* n used of cap */
	size_t n, cap;
	unsigned long long ended_idle, ended_evicted; /* counted for the metrics */
};

static struct metric_family *m_sessions;
static struct metric_family *m_ended;

static void collect(void *ctx)
{
	struct mcp_sessions *s = ctx;
	pthread_mutex_lock(&s->lock);
	double n = (double)s->n;
	pthread_mutex_unlock(&s->lock);
	metrics_set(m_sessions, NULL, n);
}

struct mcp_sessions *mcp_sessions_new(void)
{
	struct mcp_sessions *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pthread_mutex_init(&s->lock, NULL);
	static const char *const reason[] = {"reason", NULL};
	m_sessions = metrics_family("text2sqld_mcp_sessions", "MCP sessions open (limits.mcp_max_sessions).",
				    METRIC_GAUGE, NULL, NULL, 0);
	m_ended = metrics_family("text2sqld_mcp_sessions_ended_total",
				 "MCP sessions ended, by reason: deleted (the client's DELETE), idle "
				 "(limits.mcp_session_idle_s), evicted (the table was full when the same key opened one).",
				 METRIC_COUNTER, reason, NULL, 0);
	metrics_add_collector(collect, s);
	return s;
}

void mcp_sessions_free(struct mcp_sessions *s)
{
	if (!s)
		return;
	metrics_remove_collectors(s);
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].owner);
	free(s->v);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static const char *owner_of(const struct http_request *req)
{
	return req->principal ? req->principal->name : "";
}

/* Remove entry i (order is not kept); under the lock. */
static void drop(struct mcp_sessions *s, size_t i, const char *reason)
{
	const char *labels[] = {reason, NULL};
	metrics_add(m_ended, labels, 1);
	free(s->v[i].owner);
	s->v[i] = s->v[--s->n];
}

/* End the sessions unused for idle_s; under the lock. */
static void sweep(struct mcp_sessions *s, unsigned idle_s, double now)
{
	for (size_t i = s->n; i-- > 0;)
		if (now - s->v[i].used_ms > idle_s * 1000.0)
			drop(s, i, "idle");
}

/* The index of id owned by owner, or -1; under the lock. */
static long find(const struct mcp_sessions *s, const char *id, const char *owner)
{
	if (!id || strlen(id) != MCP_SESSION_ID_SIZE - 1)
		return -1;
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].id, id) == 0)
			return strcmp(s->v[i].owner, owner) == 0 ? (long)i : -1;
	return -1;
}

/* Make room for one more under a table of at most max: 0, or -1 when only other keys' sessions hold it. */
static int make_room(struct mcp_sessions *s, size_t max, const char *owner)
{
	while (s->n >= max) {
		long lru = -1;
		for (size_t i = 0; i < s->n; i++)
			if (strcmp(s->v[i].owner, owner) == 0 && (lru < 0 || s->v[i].used_ms < s->v[lru].used_ms))
				lru = (long)i;
		if (lru < 0)
			return -1;
		drop(s, (size_t)lru, "evicted");
	}
	if (s->n < s->cap)
		return 0;
	size_t cap = s->cap ? s->cap * 2 : 16;
	struct mcp_session *v = realloc(s->v, cap * sizeof(*v));
	if (!v)
		return -2;
	s->v = v;
	s->cap = cap;
	return 0;
}

int mcp_session_open(struct http_request *req, const char *version, char ret_id[MCP_SESSION_ID_SIZE],
		     struct t2s_error *err)
{
	struct mcp_sessions *s = req->app->mcp_sessions;
	const char *owner = owner_of(req);
	char *copy = strdup(owner);
	if (!s || !copy) {
		free(copy);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	double now = clock_now_ms();
	pthread_mutex_lock(&s->lock);
	sweep(s, req->cfg->limits.mcp_session_idle_s, now);
	int room = make_room(s, req->cfg->limits.mcp_max_sessions, owner);
	if (room == 0) {
		struct mcp_session *e = &s->v[s->n++];
		*e = (struct mcp_session){.owner = copy, .used_ms = now};
		http_request_id_new(e->id);
		snprintf(e->version, sizeof(e->version), "%s", version);
		memcpy(ret_id, e->id, MCP_SESSION_ID_SIZE);
	}
	pthread_mutex_unlock(&s->lock);
	if (room == 0)
		return 0;
	free(copy);
	if (room == -2)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	return t2s_error_set(err, T2S_ERR_UNAVAILABLE,
			     "every MCP session is in use (limits.mcp_max_sessions = %u); end one with DELETE /mcp, "
			     "or retry once one has been idle for limits.mcp_session_idle_s",
			     req->cfg->limits.mcp_max_sessions);
}

int mcp_session_use(struct http_request *req, const char *id, char ret_version[MCP_PROTOCOL_VERSION_SIZE])
{
	struct mcp_sessions *s = req->app->mcp_sessions;
	if (!s)
		return -T2S_ERR_NOT_FOUND;
	double now = clock_now_ms();
	pthread_mutex_lock(&s->lock);
	sweep(s, req->cfg->limits.mcp_session_idle_s, now);
	long i = find(s, id, owner_of(req));
	if (i >= 0) {
		s->v[i].used_ms = now;
		if (ret_version)
			memcpy(ret_version, s->v[i].version, MCP_PROTOCOL_VERSION_SIZE);
	}
	pthread_mutex_unlock(&s->lock);
	return i >= 0 ? 0 : -T2S_ERR_NOT_FOUND;
}

int mcp_session_close(struct http_request *req, const char *id)
{
	struct mcp_sessions *s = req->app->mcp_sessions;
	if (!s)
		return -T2S_ERR_NOT_FOUND;
	pthread_mutex_lock(&s->lock);
	sweep(s, req->cfg->limits.mcp_session_idle_s, clock_now_ms());
	long i = find(s, id, owner_of(req));
	if (i >= 0)
		drop(s, (size_t)i, "deleted");
	pthread_mutex_unlock(&s->lock);
	return i >= 0 ? 0 : -T2S_ERR_NOT_FOUND;
}
