/*
 * catalog.c - registered databases and their published schema models
 * (see catalog.h).
 */
#include "pipeline/db/catalog.h"

#include "common/clock.h"
#include "common/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct metric_family *m_introspect_seconds;
static struct metric_family *m_introspect_total;
static struct metric_family *m_pool;

static void register_metrics(void)
{
	static const char *const db_label[] = {"database", NULL};
	static const char *const db_result[] = {"database", "result", NULL};
	static const char *const db_state[] = {"database", "state", NULL};
	m_introspect_seconds = metrics_family("text2sqld_catalog_introspection_duration_seconds",
					      "Time taken by schema introspections.", METRIC_HISTOGRAM, db_label,
					      metrics_latency_buckets, metrics_latency_buckets_count);
	m_introspect_total = metrics_family("text2sqld_catalog_introspections_total",
					    "Schema introspections by database and result.", METRIC_COUNTER,
					    db_result, NULL, 0);
	m_pool = metrics_family("text2sqld_db_pool_connections",
				"Database connections per pool by state (in_use, idle).", METRIC_GAUGE, db_state,
				NULL, 0);
}

static void collect_pool_metrics(void *ctx)
{
	const struct catalog_list *l = catalog_list(ctx);
	for (size_t i = 0; i < l->n; i++) {
		int in_use, idle;
		db_pool_stats(&l->dbs[i]->pool, &in_use, &idle);
		const char *l1[] = {l->dbs[i]->cfg->name, "in_use", NULL};
		const char *l2[] = {l->dbs[i]->cfg->name, "idle", NULL};
		metrics_set(m_pool, l1, in_use);
		metrics_set(m_pool, l2, idle);
	}
}

static void set_last_error(struct catalog_db *db, const char *msg)
{
	pthread_mutex_lock(&db->lock);
	snprintf(db->last_error, sizeof(db->last_error), "%s", msg);
	pthread_mutex_unlock(&db->lock);
}

void catalog_db_last_error(struct catalog_db *db, char *buf, size_t size)
{
	pthread_mutex_lock(&db->lock);
	snprintf(buf, size, "%s", db->last_error);
	pthread_mutex_unlock(&db->lock);
}

bool catalog_db_role_privilege(struct catalog_db *db, char *buf, size_t size)
{
	pthread_mutex_lock(&db->lock);
	snprintf(buf, size, "%s", db->role_privilege);
	bool serving = db->role_privilege[0] && !db->role_refused;
	pthread_mutex_unlock(&db->lock);
	return serving;
}

/*
 * An engine with roles (PostgreSQL): check the role on c before introspecting.  0 when the database
 * may serve; -T2S_ERR_UNAVAILABLE (err names the privilege) when the role
 * may do more than read and the config does not allow it; *ret_refused says
 * which of the two a failure is (a failed check itself is not a refusal).
 */
static int check_role(struct catalog_db *db, struct db_conn *c, bool *ret_refused, struct t2s_error *err)
{
	char privilege[T2S_ERROR_MESSAGE_MAX - 200];
	*ret_refused = false;
	if (!db->engine->role_privilege)
		return 0;
	int rc = db->engine->role_privilege(c, db->introspect.timeout_ms, privilege, sizeof(privilege), err);
	if (rc < 0)
		return rc;
	bool refused = privilege[0] && !db->cfg->allow_privileged_role;
	pthread_mutex_lock(&db->lock);
	snprintf(db->role_privilege, sizeof(db->role_privilege), "%s", privilege);
	db->role_refused = refused;
	pthread_mutex_unlock(&db->lock);
	if (!refused)
		return 0;
	*ret_refused = true;
	return t2s_error_set(err, T2S_ERR_UNAVAILABLE,
			     "database not ready: %s, but the service must connect as a role that can only read "
			     "(or set allow_privileged_role in this database's config entry)",
			     privilege);
}

int catalog_db_refresh(struct catalog_db *db, struct schema **ret, struct t2s_error *err)
{
	struct db_conn *c;
	struct schema *fresh = NULL;
	bool refused = false;
	double start = clock_now_ms();
	pthread_mutex_lock(&db->refresh_lock);
	int rc = db_pool_acquire(&db->pool, &c, err);
	if (rc == 0) {
		rc = check_role(db, c, &refused, err);
		if (rc == 0)
			rc = db->engine->introspect(c, &db->introspect, &fresh, err);
		db_pool_put(&db->pool, c, rc == -T2S_ERR_UNAVAILABLE && !refused);
	}
	double elapsed = clock_now_ms() - start;
	const char *labels[] = {db->cfg->name, rc == 0 ? "ok" : "error", NULL};
	metrics_add(m_introspect_total, labels, 1);
	if (rc < 0) {
		struct schema *withdrawn = NULL;
		pthread_mutex_lock(&db->lock);
		snprintf(db->last_error, sizeof(db->last_error), "%s", err ? err->message : "introspection failed");
		if (refused) { /* a model published before must not keep serving */
			withdrawn = db->schema;
			db->schema = NULL;
		}
		pthread_mutex_unlock(&db->lock);
		pthread_mutex_unlock(&db->refresh_lock);
		schema_unref(withdrawn);
		return rc;
	}
	fresh->introspect_ms = elapsed;
	metrics_observe(m_introspect_seconds, labels, elapsed / 1000.0);
	pthread_mutex_lock(&db->lock);
	struct schema *old = db->schema;
	db->schema = fresh;
	db->last_error[0] = '\0';
	if (ret)
		*ret = schema_ref(fresh);
	pthread_mutex_unlock(&db->lock);
	pthread_mutex_unlock(&db->refresh_lock);
	schema_unref(old);
	return 0;
}

struct schema *catalog_db_current_schema(struct catalog_db *db)
{
	pthread_mutex_lock(&db->lock);
	struct schema *s = schema_ref(db->schema);
	pthread_mutex_unlock(&db->lock);
	return s;
}

int catalog_db_schema(struct catalog_db *db, struct schema **ret, struct t2s_error *err)
{
	struct schema *s = catalog_db_current_schema(db);
	if (s) {
		*ret = s;
		return 0;
	}
	int rc = catalog_db_refresh(db, ret, err);
	if (rc < 0 && err)
		err->code = T2S_ERR_UNAVAILABLE; /* the database, not the request, is at fault */
	return rc < 0 ? -T2S_ERR_UNAVAILABLE : 0;
}

int catalog_db_ping(struct catalog_db *db, struct t2s_error *err)
{
	struct db_conn *c;
	int rc = db_pool_acquire(&db->pool, &c, err);
	if (rc < 0) {
		set_last_error(db, err ? err->message : "unreachable");
		return rc;
	}
	bool ok = c->engine->ping(c, err) == 0;
	db_pool_put(&db->pool, c, !ok);
	if (!ok) {
		set_last_error(db, err ? err->message : "unreachable");
		return -T2S_ERR_UNAVAILABLE;
	}
	pthread_mutex_lock(&db->lock);
	bool refused = db->role_refused;
	if (refused)
		t2s_error_set(err, T2S_ERR_UNAVAILABLE, "%s", db->last_error);
	pthread_mutex_unlock(&db->lock);
	return refused ? -T2S_ERR_UNAVAILABLE : 0;
}

int catalog_db_data_version(struct catalog_db *db, char ret[CATALOG_DATA_VERSION_MAX], struct t2s_error *err)
{
	return db->engine->data_version(db, ret, CATALOG_DATA_VERSION_MAX, err);
}

static int db_init(struct catalog_db *db, const struct config *cfg, const struct config_database *d)
{
	memset(db, 0, sizeof(*db));
	db->cfg = d;
	db->engine = d->sqlite_path ? DB_ENGINE_SQLITE : db_engine_for_url(d->url);
	if (!db->engine) /* the config admits no other URL */
		db->engine = DB_ENGINE_POSTGRES;
	pthread_mutex_init(&db->lock, NULL);
	pthread_mutex_init(&db->refresh_lock, NULL);
	db->introspect = (struct introspect_options){
		.database = d->name,
		.sample_values = cfg->catalog.sample_values,
		.sample_rows = cfg->catalog.sample_rows,
		.sample_value_max_len = cfg->catalog.sample_value_max_len,
		.timeout_ms = cfg->catalog.introspect_timeout_ms,
		.row_count_scan_limit = cfg->catalog.row_count_scan_limit,
		.pg_schemas = d->schemas,
		.n_pg_schemas = d->n_schemas,
	};
	int rc = db_pool_init(&db->pool, db->engine, d->sqlite_path ? d->sqlite_path : d->url, d->pool_size,
			      cfg->catalog.pool_wait_ms, cfg->catalog.connect_timeout_s);
	if (rc == 0)
		db_pool_set_name(&db->pool, d->name);
	return rc < 0 ? rc : db_pool_set_password(&db->pool, d->password);
}

/*
 * Who a PostgreSQL URL connects as, into key: user, host and port as the
 * URL spells them (libpq's defaults, the same for every URL of this process,
 * stay empty).  The user alone goes to user.  An unparsable URL gets a key
 * of its own (the pool reports the URL's error).
 */
static void pg_role_key(const char *url, char *key, size_t key_size, char *user, size_t user_size)
{
	const char *parts[3] = {"", "", ""}; /* user, host, port */
	char *msg = NULL;
	PQconninfoOption *opts = PQconninfoParse(url, &msg);

	for (PQconninfoOption *o = opts; o && o->keyword; o++) {
		if (!o->val)
			continue;
		if (strcmp(o->keyword, "user") == 0)
			parts[0] = o->val;
		else if (strcmp(o->keyword, "host") == 0 || (strcmp(o->keyword, "hostaddr") == 0 && !parts[1][0]))
			parts[1] = o->val;
		else if (strcmp(o->keyword, "port") == 0)
			parts[2] = o->val;
	}
	if (opts)
		snprintf(key, key_size, "%s\x1f%s\x1f%s", parts[0], parts[1], parts[2]);
	else
		snprintf(key, key_size, "\x1funparsable\x1f%s", url);
	if (user)
		snprintf(user, user_size, "%s", parts[0]);
	PQconninfoFree(opts);
	PQfreemem(msg);
}

/*
 * Count, for every PostgreSQL database of l from index first on, the others
 * of l configured with the same role (entries before first were counted
 * when they were made and are published: they are not written).
 */
static int count_shared_roles(struct catalog_list *l, size_t first)
{
	char (*keys)[512] = calloc(l->n ? l->n : 1, sizeof(*keys));

	if (!keys)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < l->n; i++)
		if (l->dbs[i]->engine == DB_ENGINE_POSTGRES)
			pg_role_key(l->dbs[i]->cfg->url, keys[i], sizeof(keys[i]), i >= first ? l->dbs[i]->role_name : NULL,
				    i >= first ? sizeof(l->dbs[i]->role_name) : 0);
	for (size_t i = first; i < l->n; i++) {
		struct catalog_db *db = l->dbs[i];
		if (db->engine != DB_ENGINE_POSTGRES)
			continue;
		for (size_t j = 0; j < l->n; j++)
			if (i != j && l->dbs[j]->engine == DB_ENGINE_POSTGRES && strcmp(keys[i], keys[j]) == 0)
				db->role_shared_with++;
	}
	free(keys);
	return 0;
}

/* A new entry for d (owned by cat), or NULL: no memory. */
static struct catalog_db *db_new(struct catalog *cat, const struct config *cfg, const struct config_database *d)
{
	struct catalog_db **grown = realloc(cat->owned, (cat->n_owned + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	cat->owned = grown;
	struct catalog_db *db = malloc(sizeof(*db));
	if (!db)
		return NULL;
	if (db_init(db, cfg, d) < 0) { /* as at start: a pool that failed to set up is not released */
		pthread_mutex_destroy(&db->lock);
		pthread_mutex_destroy(&db->refresh_lock);
		free(db);
		return NULL;
	}
	cat->owned[cat->n_owned++] = db;
	return db;
}

static struct catalog_db *list_find(const struct catalog_list *l, const char *name)
{
	for (size_t i = 0; l && i < l->n; i++)
		if (strcmp(l->dbs[i]->cfg->name, name) == 0)
			return l->dbs[i];
	return NULL;
}

/*
 * The list of cfg's databases: the entries of old (may be NULL) whose names
 * stay, in config order, then new entries for the other names, in config
 * order, introspected here.  NULL: no memory.
 */
static struct catalog_list *list_build(struct catalog *cat, const struct catalog_list *old, const struct config *cfg)
{
	struct catalog_list *l = calloc(1, sizeof(*l) + (cfg->n_databases + 1) * sizeof(l->dbs[0]));
	if (!l)
		return NULL;
	size_t kept = 0;
	for (size_t i = 0; i < cfg->n_databases; i++) /* kept entries first, so the new ones are a tail */
		if ((l->dbs[kept] = list_find(old, cfg->databases[i].name)))
			kept++;
	l->n = kept;
	for (size_t i = 0; i < cfg->n_databases; i++) {
		if (list_find(old, cfg->databases[i].name))
			continue;
		struct catalog_db *db = db_new(cat, cfg, &cfg->databases[i]);
		if (!db) {
			free(l); /* the entries made stay owned by cat: freed with it */
			return NULL;
		}
		l->dbs[l->n++] = db;
	}
	if (count_shared_roles(l, kept) < 0) {
		free(l);
		return NULL;
	}
	for (size_t i = kept; i < l->n; i++) {
		struct t2s_error ignored;
		if (catalog_db_refresh(l->dbs[i], NULL, &ignored) < 0) {
			/* Recorded as the database's last_error; the service serves the others anyway. */
		}
	}
	return l;
}

int catalog_init(struct catalog *cat, const struct config *cfg, struct t2s_error *err)
{
	register_metrics();
	memset(cat, 0, sizeof(*cat)); /* {0} would initialise the atomic list pointer from an int (clang refuses) */
	struct catalog_list *l = list_build(cat, NULL, cfg);
	if (!l) {
		catalog_release(cat);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	atomic_init(&cat->list, l);
	metrics_add_collector(collect_pool_metrics, cat);
	return 0;
}

int catalog_update(struct catalog *cat, const struct config *cfg, struct t2s_error *err)
{
	struct catalog_list *old = atomic_load(&cat->list);
	struct catalog_list *l = list_build(cat, old, cfg);
	if (!l)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	l->older = old;
	atomic_store(&cat->list, l);
	return 0;
}

const struct catalog_list *catalog_list(struct catalog *cat)
{
	static const struct catalog_list none; /* before catalog_init, or when it failed */
	const struct catalog_list *l = atomic_load(&cat->list);
	return l ? l : &none;
}

void catalog_release(struct catalog *cat)
{
	struct catalog_list *l = atomic_load(&cat->list);
	if (l)
		metrics_remove_collectors(cat);
	while (l) {
		struct catalog_list *older = l->older;
		free(l);
		l = older;
	}
	for (size_t i = 0; i < cat->n_owned; i++) {
		struct catalog_db *db = cat->owned[i];
		for (size_t v = 0; v < CATALOG_VIEWS_MAX; v++)
			schema_unref(db->views[v]);
		schema_unref(db->schema);
		db_pool_release(&db->pool);
		pthread_mutex_destroy(&db->lock);
		pthread_mutex_destroy(&db->refresh_lock);
		free(db);
	}
	free(cat->owned);
	memset(cat, 0, sizeof(*cat)); /* {0} would initialise the atomic list pointer from an int (clang refuses) */
}

struct catalog_db *catalog_find(struct catalog *cat, const char *name)
{
	return list_find(catalog_list(cat), name);
}

void catalog_cancel_all(struct catalog *cat)
{
	const struct catalog_list *l = catalog_list(cat);
	for (size_t i = 0; i < l->n; i++)
		db_pool_cancel_all(&l->dbs[i]->pool);
}
