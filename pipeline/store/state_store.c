/*
 * state_store.c - the store's life: options, the backend its URL picks
 * (state_backend_sqlite.c: a file; state_backend_pg.c: a pool), migrating
 * the schema (serialised between processes), reopening a store that was not
 * there yet, readiness and the last write's outcome, closing (see
 * state_store.h).
 *
 * Stored shapes: a table-level override or description has column_name ''
 * (a NULL inside a primary key would not be unique); the API maps NULL <-> ''.
 * Timestamps are RFC 3339 UTC text in SQLite and timestamptz in Postgres.
 * The record kinds live in state_examples.c, state_feedback.c,
 * state_overrides.c and state_descriptions.c; sessions and statements in
 * state_session.c, run by the backend; a session per read in state_rows.c.
 */
#include "pipeline/store/state_store_internal.h"

#include "common/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BUSY_TIMEOUT_MS 5000L
#define DEFAULT_STATEMENT_TIMEOUT_MS 10000L
#define DEFAULT_POOL_SIZE 4
#define DEFAULT_POOL_WAIT_MS 5000L
#define DEFAULT_CONNECT_TIMEOUT_S 5L
#define DEFAULT_PG_SCHEMA "text2sqld"

/* Reopening a store that was unavailable: first retry after this, doubling up to the maximum. */
#define REOPEN_BACKOFF_FIRST_MS 500.0
#define REOPEN_BACKOFF_MAX_MS 30000.0

/* ---- schema and migrations ----------------------------------------------- */

/* Bring the schema to STATE_STORE_SCHEMA_VERSION, serialised against other processes. */
static int migrate(struct state_store *s, struct t2s_error *err)
{
	struct session x;
	int rc = store_session_begin(s, true, &x, err);
	if (rc < 0)
		return rc;
	rc = s->backend->prepare_migration(&x, err);
	int64_t version = 0;
	if (rc == 0)
		rc = store_session_exec(&x, "SELECT max(version) FROM schema_version", NULL, NULL, 0, store_row_i64, &version, NULL,
				  err);
	if (rc == 0 && (version < 0 || version > STATE_STORE_SCHEMA_VERSION))
		rc = t2s_error_set(err, T2S_ERR_UNAVAILABLE,
				   "state store schema version %lld is not one this build reads (%d); upgrade text2sqld",
				   (long long)version, STATE_STORE_SCHEMA_VERSION);
	const char *const *steps = s->backend->migrations;
	for (int64_t v = version; rc == 0 && v < STATE_STORE_SCHEMA_VERSION; v++)
		rc = store_session_script(&x, steps[v], err);
	if (rc == 0 && version < STATE_STORE_SCHEMA_VERSION) {
		struct param p = P_NUM(STATE_STORE_SCHEMA_VERSION);
		rc = store_session_script(&x, "DELETE FROM schema_version", err);
		if (rc == 0)
			rc = store_session_exec(&x, "INSERT INTO schema_version (version) VALUES ($1)", NULL, &p, 1, NULL, NULL,
					  NULL, err);
	}
	return store_session_end(&x, rc, err);
}

/* ---- open and close ------------------------------------------------------ */

static bool valid_pg_schema(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > PG_SCHEMA_NAME_MAX || (name[0] >= '0' && name[0] <= '9'))
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

/* Copy opts with defaults applied into s->opt; -T2S_ERR_INVALID on a bad value. */
static int apply_options(struct state_store *s, const struct state_store_options *opts, struct t2s_error *err)
{
	struct state_store_options o = {0};
	if (opts)
		o = *opts;
	if (o.busy_timeout_ms < 0 || o.statement_timeout_ms < 0 || o.pool_size < 0 || o.pool_wait_ms < 0 ||
	    o.connect_timeout_s < 0 || o.max_examples_per_database < 0 || o.max_feedback_per_database < 0 ||
	    (o.max_page_bytes != 0 && o.max_page_bytes < 1024) || o.busy_timeout_ms > 3600000L ||
	    o.statement_timeout_ms > 3600000L || o.pool_size > 1024 || o.pool_wait_ms > 3600000L ||
	    o.connect_timeout_s > 3600L)
		return t2s_error_set(err, T2S_ERR_INVALID, "state store options out of range");
	if (o.max_examples_per_database > STATE_EXAMPLES_MAX)
		return t2s_error_set(err, T2S_ERR_INVALID, "state store: max_examples_per_database must be at most %ld",
				     STATE_EXAMPLES_MAX);
	if (o.max_feedback_per_database > STATE_FEEDBACK_MAX)
		return t2s_error_set(err, T2S_ERR_INVALID, "state store: max_feedback_per_database must be at most %ld",
				     STATE_FEEDBACK_MAX);
	s->opt.busy_timeout_ms = o.busy_timeout_ms ? o.busy_timeout_ms : DEFAULT_BUSY_TIMEOUT_MS;
	s->opt.statement_timeout_ms = o.statement_timeout_ms ? o.statement_timeout_ms : DEFAULT_STATEMENT_TIMEOUT_MS;
	s->opt.pool_size = o.pool_size ? o.pool_size : DEFAULT_POOL_SIZE;
	s->opt.pool_wait_ms = o.pool_wait_ms ? o.pool_wait_ms : DEFAULT_POOL_WAIT_MS;
	s->opt.connect_timeout_s = o.connect_timeout_s ? o.connect_timeout_s : DEFAULT_CONNECT_TIMEOUT_S;
	s->opt.max_examples_per_database = o.max_examples_per_database ? o.max_examples_per_database
								       : T2S_EXAMPLES_PER_DATABASE_DEFAULT;
	s->opt.max_feedback_per_database = o.max_feedback_per_database ? o.max_feedback_per_database
								       : T2S_FEEDBACK_PER_DATABASE_DEFAULT;
	s->opt.max_page_bytes = o.max_page_bytes ? o.max_page_bytes : T2S_LIST_PAGE_BYTES_DEFAULT;
	const char *schema = o.pg_schema && *o.pg_schema ? o.pg_schema : DEFAULT_PG_SCHEMA;
	if (!valid_pg_schema(schema))
		return t2s_error_set(err, T2S_ERR_INVALID,
				     "state store: pg_schema must be 1-63 characters of a-z 0-9 _ not starting with a digit");
	snprintf(s->pg_schema_buf, sizeof(s->pg_schema_buf), "%s", schema);
	s->opt.pg_schema = s->pg_schema_buf;
	return 0;
}

/*
 * Make the store usable: open the SQLite file and migrate, once; until that
 * succeeds every call tries again, but not before the backoff (500 ms,
 * doubling up to 30 s) since the last failure has passed.
 */
static int ensure_ready(struct state_store *s, struct t2s_error *err)
{
	if (atomic_load(&s->ready))
		return 0;
	pthread_mutex_lock(&s->reopen_lock);
	int rc = 0;
	double now = clock_now_ms();
	if (atomic_load(&s->ready)) {
		rc = 0;
	} else if (now < s->next_attempt_ms) {
		rc = t2s_error_set(err, T2S_ERR_UNAVAILABLE, "%s (next attempt in %.0f ms)", s->open_error,
				   s->next_attempt_ms - now);
	} else {
		struct t2s_error e = {0};
		rc = s->backend->connect(s, &e);
		if (rc == 0)
			rc = migrate(s, &e);
		if (rc == 0) {
			s->backoff_ms = 0;
			s->open_error[0] = '\0';
			store_note_write(s, 0, NULL); /* writes that failed for want of the store no longer count */
			atomic_store(&s->ready, true);
		} else {
			s->backend->disconnect(s);
			s->backoff_ms = s->backoff_ms > 0 ? s->backoff_ms * 2 : REOPEN_BACKOFF_FIRST_MS;
			if (s->backoff_ms > REOPEN_BACKOFF_MAX_MS)
				s->backoff_ms = REOPEN_BACKOFF_MAX_MS;
			s->next_attempt_ms = clock_now_ms() + s->backoff_ms;
			snprintf(s->open_error, sizeof(s->open_error), "%s", e.message);
			rc = t2s_error_set(err, e.code == T2S_ERR_INVALID ? T2S_ERR_INVALID : T2S_ERR_UNAVAILABLE, "%s",
					   e.message);
		}
	}
	pthread_mutex_unlock(&s->reopen_lock);
	return rc;
}

void store_note_write(struct state_store *s, int rc, const struct t2s_error *err)
{
	if (rc == -T2S_ERR_INVALID || rc == -T2S_ERR_NOT_FOUND)
		return;
	pthread_mutex_lock(&s->write_lock);
	s->last_write_failed = rc < 0;
	snprintf(s->last_write_error, sizeof(s->last_write_error), "%s",
		 rc < 0 ? (err && err->message[0] ? err->message : "write failed") : "");
	pthread_mutex_unlock(&s->write_lock);
}

int store_session_open(struct state_store *s, bool write, struct session *x, struct t2s_error *err)
{
	int rc = ensure_ready(s, err);
	if (rc == 0)
		rc = store_session_begin(s, write, x, err);
	if (rc < 0) {
		if (write)
			store_note_write(s, rc, err);
		return rc;
	}
	x->write = write;
	return 0;
}

int store_session_close(struct session *x, int rc, struct t2s_error *err)
{
	struct state_store *s = x->s;
	rc = store_session_end(x, rc, err);
	if (x->write)
		store_note_write(s, rc, err);
	return rc;
}

bool state_store_available(struct state_store *s)
{
	return ensure_ready(s, NULL) == 0;
}

bool state_store_last_write(struct state_store *s, char *buf, size_t size)
{
	pthread_mutex_lock(&s->write_lock);
	bool ok = !s->last_write_failed;
	if (buf && size)
		snprintf(buf, size, "%s", s->last_write_error);
	pthread_mutex_unlock(&s->write_lock);
	return ok;
}

/* The backend serving url, or NULL. */
static const struct store_backend *backend_for(const char *url)
{
	static const struct store_backend *const backends[] = {&store_backend_sqlite, &store_backend_pg};
	for (size_t i = 0; i < sizeof(backends) / sizeof(*backends); i++)
		for (const char *const *p = backends[i]->url_prefixes; *p; p++)
			if (strncmp(url, *p, strlen(*p)) == 0)
				return backends[i];
	return NULL;
}

/* A store object for url, not yet opened (ensure_ready does that). */
static int store_new(const char *url, const struct state_store_options *opts, struct state_store **ret,
		     struct t2s_error *err)
{
	if (!url || !*url)
		return t2s_error_set(err, T2S_ERR_INVALID, "state store URL is required");
	struct state_store *s = calloc(1, sizeof(*s));
	if (!s)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	atomic_init(&s->ready, false);
	s->reopen_lock_ready = pthread_mutex_init(&s->reopen_lock, NULL) == 0;
	s->write_lock_ready = pthread_mutex_init(&s->write_lock, NULL) == 0;
	if (!s->reopen_lock_ready || !s->write_lock_ready) {
		state_store_close(s);
		return t2s_error_set(err, T2S_ERR_INTERNAL, "cannot create the state store locks");
	}
	int rc = apply_options(s, opts, err);
	if (rc == 0) {
		s->backend = backend_for(url);
		rc = s->backend ? s->backend->init(s, url, err)
				: t2s_error_set(err, T2S_ERR_INVALID,
						"state store URL must start with sqlite:// or postgresql://");
	}
	if (rc < 0) {
		state_store_close(s);
		return rc;
	}
	*ret = s;
	return 0;
}

int state_store_open(const char *url, const struct state_store_options *opts, struct state_store **ret,
		     struct t2s_error *err)
{
	struct state_store *s;
	int rc = store_new(url, opts, &s, err);
	if (rc < 0)
		return rc;
	if ((rc = ensure_ready(s, err)) < 0) {
		state_store_close(s);
		return rc;
	}
	*ret = s;
	return 0;
}

int state_store_open_lazy(const char *url, const struct state_store_options *opts, struct state_store **ret,
			  struct t2s_error *err)
{
	struct state_store *s;
	int rc = store_new(url, opts, &s, err);
	if (rc < 0)
		return rc;
	struct t2s_error first = {0};
	rc = ensure_ready(s, &first);
	if (rc == -T2S_ERR_INVALID) {
		state_store_close(s);
		return t2s_error_set(err, T2S_ERR_INVALID, "%s", first.message);
	}
	*ret = s;
	return 0;
}

struct state_store *state_store_close(struct state_store *s)
{
	if (!s)
		return NULL;
	if (s->backend)
		s->backend->release(s);
	if (s->reopen_lock_ready)
		pthread_mutex_destroy(&s->reopen_lock);
	if (s->write_lock_ready)
		pthread_mutex_destroy(&s->write_lock);
	free(s);
	return NULL;
}

const char *state_store_backend(const struct state_store *s)
{
	return s->backend->name;
}

int state_store_ping(struct state_store *s, struct t2s_error *err)
{
	struct session x;
	int64_t one = 0;
	int rc = store_session_open(s, false, &x, err);
	if (rc < 0)
		return rc;
	rc = store_session_exec(&x, "SELECT 1", NULL, NULL, 0, store_row_i64, &one, NULL, err);
	rc = store_session_close(&x, rc, err);
	char last[T2S_ERROR_MESSAGE_MAX];
	if (rc == 0 && !state_store_last_write(s, last, sizeof(last)))
		rc = t2s_error_set(err, T2S_ERR_UNAVAILABLE, "the last write failed: %s", last);
	return rc;
}
