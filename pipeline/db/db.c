/*
 * db.c - the per-database pool of connections (see db.h); the engine opens,
 * resets, cancels and closes each one (engine.h).
 */
#include "pipeline/db/db.h"

#include "common/clock.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void conn_close(struct db_conn *c)
{
	if (!c)
		return;
	c->engine->close(c);
	free(c);
}

static _Atomic(db_connect_note_fn) connect_note;

void db_set_connect_note(db_connect_note_fn note)
{
	atomic_store(&connect_note, note);
}

void db_pool_set_name(struct db_pool *p, const char *name)
{
	snprintf(p->name, sizeof(p->name), "%s", name ? name : "");
}

void db_pool_connect_error(struct db_pool *p, char *buf, size_t size)
{
	pthread_mutex_lock(&p->lock);
	snprintf(buf, size, "%s", p->connect_error);
	pthread_mutex_unlock(&p->lock);
}

/* A connect failed with err: keep and note the driver's reason, leave the client a stable message. */
static void connect_failed(struct db_pool *p, struct t2s_error *err, int rc)
{
	const char *detail = err && err->message[0] ? err->message : t2s_code_title((enum t2s_code)-rc);
	pthread_mutex_lock(&p->lock);
	snprintf(p->connect_error, sizeof(p->connect_error), "%s", detail);
	pthread_mutex_unlock(&p->lock);
	db_connect_note_fn note = atomic_load(&connect_note);
	if (note)
		note(p->name, detail);
	if (rc == -T2S_ERR_UNAVAILABLE)
		t2s_error_set(err, T2S_ERR_UNAVAILABLE, DB_CONNECT_FAILED_MESSAGE);
}

static int conn_open(struct db_pool *p, struct db_conn **ret, struct t2s_error *err)
{
	struct db_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	c->engine = p->engine;
	struct t2s_error e = {0};
	int rc = p->engine->open(p, c, &e);
	if (rc < 0) {
		conn_close(c);
		connect_failed(p, &e, rc);
		if (err)
			*err = e;
		return rc;
	}
	pthread_mutex_lock(&p->lock);
	p->connect_error[0] = '\0';
	pthread_mutex_unlock(&p->lock);
	*ret = c;
	return 0;
}

int db_pool_init(struct db_pool *p, const struct db_engine *engine, const char *target, int size, long wait_ms,
		 long connect_timeout_s)
{
	memset(p, 0, sizeof(*p));
	p->engine = engine;
	p->target = strdup(target);
	p->size = size > 0 ? size : 1;
	p->wait_ms = wait_ms;
	p->connect_timeout_s = connect_timeout_s;
	if (!p->target)
		return -T2S_ERR_NOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &attr);
	pthread_condattr_destroy(&attr);
	return 0;
}

void db_pool_drain_idle(struct db_pool *p)
{
	pthread_mutex_lock(&p->lock);
	struct db_conn *idle = p->idle;
	p->idle = NULL;
	p->n_idle = 0;
	pthread_mutex_unlock(&p->lock);
	while (idle) {
		struct db_conn *next = idle->next;
		conn_close(idle);
		idle = next;
	}
}

int db_pool_set_password(struct db_pool *p, const char *password)
{
	if (!password)
		return 0;
	p->password = strdup(password);
	return p->password ? 0 : -T2S_ERR_NOMEM;
}

void db_pool_release(struct db_pool *p)
{
	if (!p->target)
		return;
	if (p->password) {
		explicit_bzero(p->password, strlen(p->password));
		free(p->password);
		p->password = NULL;
	}
	db_pool_drain_idle(p);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p->target);
	p->target = NULL;
}

int db_pool_acquire(struct db_pool *p, struct db_conn **ret, struct t2s_error *err)
{
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += p->wait_ms / 1000;
	deadline.tv_nsec += (p->wait_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&p->lock);
	for (;;) {
		if (p->idle) {
			struct db_conn *c = p->idle;
			p->idle = c->next;
			p->n_idle--;
			p->n_in_use++;
			c->next = NULL;
			c->busy_next = p->busy;
			p->busy = c;
			pthread_mutex_unlock(&p->lock);
			*ret = c;
			return 0;
		}
		if (p->n_in_use + p->n_idle + p->n_opening < p->size)
			break;
		if (pthread_cond_timedwait(&p->cond, &p->lock, &deadline) == ETIMEDOUT) {
			pthread_mutex_unlock(&p->lock);
			return t2s_error_set(err, T2S_ERR_UNAVAILABLE,
					     "no free database connection within %ld ms (pool of %d)", p->wait_ms,
					     p->size);
		}
	}
	p->n_opening++;
	pthread_mutex_unlock(&p->lock);

	struct db_conn *c = NULL;
	int rc = conn_open(p, &c, err);

	pthread_mutex_lock(&p->lock);
	p->n_opening--;
	if (rc == 0) {
		p->n_in_use++;
		c->busy_next = p->busy;
		p->busy = c;
	} else
		pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	if (rc == 0)
		*ret = c;
	return rc;
}

void db_pool_put(struct db_pool *p, struct db_conn *c, bool broken)
{
	if (!c)
		return;
	if (!broken)
		broken = !c->engine->reset(c);
	pthread_mutex_lock(&p->lock);
	p->n_in_use--;
	for (struct db_conn **b = &p->busy; *b; b = &(*b)->busy_next)
		if (*b == c) {
			*b = c->busy_next;
			break;
		}
	c->busy_next = NULL;
	if (!broken) {
		c->next = p->idle;
		p->idle = c;
		p->n_idle++;
	}
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	if (broken)
		conn_close(c);
}

void db_pool_stats(struct db_pool *p, int *ret_in_use, int *ret_idle)
{
	pthread_mutex_lock(&p->lock);
	*ret_in_use = p->n_in_use;
	*ret_idle = p->n_idle;
	pthread_mutex_unlock(&p->lock);
}

void db_pool_cancel_all(struct db_pool *p)
{
	pthread_mutex_lock(&p->lock);
	for (struct db_conn *c = p->busy; c; c = c->busy_next)
		c->engine->cancel(c);
	pthread_mutex_unlock(&p->lock);
}
