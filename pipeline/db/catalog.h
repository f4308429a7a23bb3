/*
 * catalog.h - the registered databases: one pool and one published schema
 * model per database.
 *
 * The catalog is built from the config at start, and its list of databases
 * replaced whole by catalog_update (a config reload): a database whose name
 * stays keeps its pool and schema, a new name gets a new entry, a name that
 * went is no longer listed.  Lists and entries are never freed before
 * catalog_release, so a request holding an entry (or a list) from before an
 * update finishes with it; a removed database's pool stays open until then.
 *
 * The catalog is built from the config at start.  A database that cannot be
 * reached is kept and reported (status down, last error), never fatal; its
 * schema is retried on first use and on refresh.  A published schema is
 * immutable: readers take a reference with catalog_db_schema; a refresh
 * builds a new model and swaps the pointer under the database's lock, so
 * requests already holding the old model finish on it.
 *
 * The PostgreSQL role is checked at start and on every refresh (before the
 * schema is read): a role that is a superuser, a member of
 * pg_write_server_files / pg_read_server_files / pg_execute_server_program,
 * or that may write any table makes the database not ready: no schema is
 * published (an older one is withdrawn), requests on it fail with
 * -T2S_ERR_UNAVAILABLE and a message naming the privilege, and
 * catalog_db_ping fails with that message, unless the database's config
 * entry sets allow_privileged_role.  Then it serves, and
 * catalog_db_role_privilege still reports what was found (for readiness).
 * A MySQL / MariaDB account is checked the same way, from SHOW GRANTS
 * (introspect_mysql_role).
 *
 * Two PostgreSQL databases configured with one role (the same user, host
 * and port in their URLs) are counted at start (role_shared_with): a role
 * sees its own sessions' statements in pg_stat_activity, so a query on one
 * database could read what is running on the other were it not for the
 * statement guard; readiness warns about it.
 */
#ifndef T2S_CATALOG_H
#define T2S_CATALOG_H

#include "common/contract.h"
#include "config/config.h"
#include "pipeline/db/db.h"
#include "common/error.h"
#include "pipeline/db/introspect.h"
#include "pipeline/db/schema.h"
#include "pipeline/db/schema_grant.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Views of one database's model kept at most (catalog_db_schema_granted); older grants are made again. */
#define CATALOG_VIEWS_MAX 32
/* Table sets of one database whose views get column and value indexes of their own; later ones share one. */
#define CATALOG_INDEXED_GRANTS_MAX 64

struct catalog_db {
	const struct config_database *cfg; /* name, url, options (borrowed from the config) */
	const struct db_engine *engine;
	struct db_pool pool;
	struct introspect_options introspect;
	pthread_mutex_t lock;         /* guards schema and last_error */
	pthread_mutex_t refresh_lock; /* one introspection at a time per database */
	struct schema *schema;        /* NULL until introspected */
	/* Callers' views of schema (catalog_views.c), each a reference; guarded by lock */
	struct schema *views[CATALOG_VIEWS_MAX];
	size_t views_next;            /* the slot replaced when all are taken */
	/* The grant keys whose views have indexes of their own (schema_restrict); later ones share one */
	char indexed_grants[CATALOG_INDEXED_GRANTS_MAX][SHA256_HEX_LEN + 1];
	size_t n_indexed_grants;
	char last_error[T2S_ERROR_MESSAGE_MAX];
	/* Guarded by lock: the last role check (PostgreSQL). */
	char role_privilege[T2S_ERROR_MESSAGE_MAX]; /* "" when the role can only read */
	bool role_refused; /* privileged and not allowed: not ready until a check passes */
	/* Set at init, then read-only: PostgreSQL's user as the URL gives it ("" for libpq's default), and how
	   many other configured PostgreSQL databases connect as that user to the same host and port. */
	char role_name[64];
	size_t role_shared_with;
	/* The service layer's replica sync (pipeline/pipeline_sync.c) keeps its per-database counters here,
	   so they follow the entry across reloads; the catalog only zeroes them. */
	struct {
		_Atomic int64_t version;   /* prompt state version known here */
		_Atomic int64_t refreshes; /* refreshes of the store's count already applied */
		atomic_bool pending;       /* a refresh to apply */
	} sync;
};

/* The databases served at one time (config order; after an update, the kept ones first); immutable once published. */
struct catalog_list {
	struct catalog_list *older; /* the list this one replaced (freed with the catalog) */
	size_t n;
	struct catalog_db *dbs[];
};

struct catalog {
	_Atomic(struct catalog_list *) list; /* the databases served now (catalog_list) */
	struct catalog_db **owned;           /* every entry ever made, listed or not (update and release only) */
	size_t n_owned;
};

/* Create pools and introspect every database (failures are recorded per database). */
T2S_MUST_CHECK
int catalog_init(struct catalog *cat, const struct config *cfg, struct t2s_error *err);
void catalog_release(struct catalog *cat);

/* The databases served now (never NULL after catalog_init); valid until catalog_release. */
const struct catalog_list *catalog_list(struct catalog *cat);

/*
 * Serve cfg's databases from now on: an entry whose name is listed now is
 * kept as it is (its settings are the ones it was made with: a reload never
 * changes a database in place), a new name gets a new entry (pool made,
 * schema introspected here, failures recorded on it as at start), a name
 * not in cfg is no longer listed.  One caller at a time (the reload);
 * readers may run meanwhile.  0 or -T2S_ERR_NOMEM (then nothing changed).
 */
T2S_MUST_CHECK
int catalog_update(struct catalog *cat, const struct config *cfg, struct t2s_error *err);

struct catalog_db *catalog_find(struct catalog *cat, const char *name);

/* Stop the statements running on every database (shutdown after the drain time). */
void catalog_cancel_all(struct catalog *cat);

/*
 * A new reference to the published schema (caller unrefs), or NULL when none
 * is published yet.  Never introspects; never blocks on an introspection.
 */
struct schema *catalog_db_current_schema(struct catalog_db *db);

/*
 * A new reference to the database's schema (caller unrefs), introspecting
 * first when none is published yet.  -T2S_ERR_UNAVAILABLE when the database
 * cannot be read.
 */
T2S_MUST_CHECK
int catalog_db_schema(struct catalog_db *db, struct schema **ret, struct t2s_error *err);

/*
 * A new reference to db's schema as a caller holding grant sees it
 * (schema_grant.h): grant NULL is catalog_db_schema; else the view of the
 * published model, made once per model and grant and kept (for the last
 * CATALOG_VIEWS_MAX grants; views of a replaced model are dropped).  The
 * first CATALOG_INDEXED_GRANTS_MAX table sets of a database get indexes of
 * their own, later ones share one (schema_restrict).  Errors
 * as catalog_db_schema's, or -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int catalog_db_schema_granted(struct catalog_db *db, const struct schema_grant *grant, struct schema **ret,
			      struct t2s_error *err);

/* Introspect again and publish the result; *ret (optional) gets a reference to the new model. */
T2S_MUST_CHECK
int catalog_db_refresh(struct catalog_db *db, struct schema **ret, struct t2s_error *err);

/* Check that a connection can be taken and answers a trivial query. */
T2S_MUST_CHECK
int catalog_db_ping(struct catalog_db *db, struct t2s_error *err);

/* Bytes of a data version token, with its NUL. */
#define CATALOG_DATA_VERSION_MAX 96

/*
 * A short token that changes when db's data changes (engine_sqlite.c and
 * engine_pg.c say how and how soon), into ret.  -T2S_ERR_UNAVAILABLE when
 * it cannot be read; callers then do not use the answer cache.
 */
T2S_MUST_CHECK
int catalog_db_data_version(struct catalog_db *db, char ret[CATALOG_DATA_VERSION_MAX], struct t2s_error *err);

/* Copy of the last introspection or connection error ("" when none). */
void catalog_db_last_error(struct catalog_db *db, char *buf, size_t size);

/*
 * What the last role check found beyond reading ("role \"x\" is a
 * superuser", ...; "" when the role can only read or for SQLite), copied into
 * buf.  Returns true when the database serves anyway (allow_privileged_role),
 * so readiness can report it degraded; false otherwise (then the privilege,
 * if any, already made the database not ready).
 */
bool catalog_db_role_privilege(struct catalog_db *db, char *buf, size_t size);

#endif
