/*
 * state_backend_sqlite.c - the state store in one SQLite file (see
 * state_store_internal.h, struct store_backend): its migrations, the file
 * opened read-write in WAL mode, sessions under the store's mutex (BEGIN or
 * BEGIN IMMEDIATE), parameterised statements and SQLite's error codes
 * mapped to the service's.  SQLite is a library here, the service's own
 * file; users' databases are pipeline/db/'s.
 */
#include "pipeline/store/state_store_internal.h"

#include "common/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SQLite: a trigger bumping the version of the database of row (NEW or OLD) on op of table. */
#define LITE_BUMP(name, op, table, row)                                                                             \
	"CREATE TRIGGER " name " AFTER " op " ON " table " BEGIN"                                                    \
	" INSERT INTO state_versions (db_name, version) VALUES (" row ".db_name, 1)"                                 \
	" ON CONFLICT (db_name) DO UPDATE SET version = version + 1; END;"

/* Scripts taking the schema from version i to i + 1. */
static const char *const migrations[STATE_STORE_SCHEMA_VERSION] = {
	"CREATE TABLE examples ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" db_name TEXT NOT NULL,"
	" question TEXT NOT NULL,"
	" sql_text TEXT NOT NULL,"
	" created_at TEXT NOT NULL DEFAULT (" NOW_LITE "));"
	"CREATE INDEX examples_by_db ON examples (db_name, id);"
	"CREATE TABLE description_overrides ("
	" db_name TEXT NOT NULL,"
	" table_name TEXT NOT NULL,"
	" column_name TEXT NOT NULL," /* '' = the table itself */
	" text TEXT NOT NULL,"
	" updated_at TEXT NOT NULL,"
	" PRIMARY KEY (db_name, table_name, column_name)) WITHOUT ROWID;"
	"CREATE TABLE description_cache ("
	" db_name TEXT NOT NULL,"
	" schema_hash TEXT NOT NULL,"
	" table_name TEXT NOT NULL,"
	" column_name TEXT NOT NULL,"
	" text TEXT NOT NULL,"
	" source TEXT NOT NULL,"
	" updated_at TEXT NOT NULL,"
	" PRIMARY KEY (db_name, schema_hash, table_name, column_name)) WITHOUT ROWID;",
	/* 1 -> 2: feedback on answers */
	"CREATE TABLE feedback ("
	" id INTEGER PRIMARY KEY AUTOINCREMENT,"
	" db_name TEXT NOT NULL,"
	" question TEXT NOT NULL,"
	" sql_text TEXT NOT NULL,"
	" correct INTEGER NOT NULL,"
	" note TEXT,"
	" example_id INTEGER,"
	" created_at TEXT NOT NULL DEFAULT (" NOW_LITE "));"
	"CREATE INDEX feedback_by_db ON feedback (db_name, correct, id);",
	/* 2 -> 3: a version per database that every change of its examples or overrides bumps */
	"CREATE TABLE state_versions ("
	" db_name TEXT PRIMARY KEY,"
	" version INTEGER NOT NULL DEFAULT 0,"
	" refreshes INTEGER NOT NULL DEFAULT 0);"
	LITE_BUMP("examples_added", "INSERT", "examples", "NEW")
	LITE_BUMP("examples_deleted", "DELETE", "examples", "OLD")
	LITE_BUMP("examples_updated", "UPDATE", "examples", "NEW")
	LITE_BUMP("overrides_added", "INSERT", "description_overrides", "NEW")
	LITE_BUMP("overrides_deleted", "DELETE", "description_overrides", "OLD")
	LITE_BUMP("overrides_updated", "UPDATE", "description_overrides", "NEW"),
};

int store_sqlite_failure(struct state_store *s, int rc, struct t2s_error *err)
{
	const char *msg = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
	switch (rc & 0xff) {
	case SQLITE_NOMEM:
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory in the state store");
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE,
				     "state store is locked by another writer (waited %ld ms)", s->opt.busy_timeout_ms);
	case SQLITE_IOERR:
	case SQLITE_FULL:
	case SQLITE_CANTOPEN:
	case SQLITE_READONLY:
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
	case SQLITE_PERM:
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "state store file unusable: %s", msg);
	default:
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store: %s", msg);
	}
}

/*
 * Put the file in WAL mode; returns an SQLite result code.  The switch reads
 * the file header and then takes the write lock inside that same read
 * transaction, where SQLite never calls the busy handler (waiting there
 * could deadlock two upgrading readers): a connection that races another
 * one creating or switching the same fresh file gets SQLITE_BUSY at once.
 * Every attempt ends its transaction and releases its locks, so retrying
 * until the busy timeout is safe; once the file is in WAL mode the pragma
 * takes no write lock and succeeds at the first attempt.
 */
static int sqlite_use_wal(struct state_store *s)
{
	double deadline = clock_now_ms() + (double)s->opt.busy_timeout_ms;
	for (int delay_ms = 1;; delay_ms = delay_ms < 50 ? delay_ms * 2 : 50) {
		int rc = sqlite3_exec(s->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
		if ((rc & 0xff) != SQLITE_BUSY || clock_now_ms() >= deadline)
			return rc;
		sqlite3_sleep(delay_ms);
	}
}

/* Take the file's path from url ("sqlite://" then the path); the file is opened by lite_connect. */
static int lite_init(struct state_store *s, const char *url, struct t2s_error *err)
{
	const char *path = url + strlen("sqlite://");
	if (!*path)
		return t2s_error_set(err, T2S_ERR_INVALID, "state store URL needs a path: sqlite:///abs/path.db");
	if (pthread_mutex_init(&s->lock, NULL) != 0)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "cannot create the state store lock");
	s->lock_ready = true;
	s->sqlite_path = strdup(path);
	return s->sqlite_path ? 0 : t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
}

/* (Re)open the SQLite file; on failure s->db is closed again. */
static int lite_connect(struct state_store *s, struct t2s_error *err)
{
	const char *path = s->sqlite_path;
	if (s->db) {
		sqlite3_close_v2(s->db);
		s->db = NULL;
	}
	int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
				 NULL);
	if (rc != SQLITE_OK)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot open the state store file %s: %s", path,
				     s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, (int)s->opt.busy_timeout_ms);
	sqlite3_db_config(s->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	/* WAL lets readers in other processes proceed during a write; FULL syncs every commit. */
	rc = sqlite_use_wal(s);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		int code = store_sqlite_failure(s, rc, err);
		return t2s_error_set(err, (enum t2s_code)-code, "cannot use the state store file %s: %s", path,
				     sqlite3_errmsg(s->db));
	}
	return 0;
}

static void lite_disconnect(struct state_store *s)
{
	if (s->db) {
		sqlite3_close_v2(s->db);
		s->db = NULL;
	}
}

static void lite_release(struct state_store *s)
{
	lite_disconnect(s);
	if (s->lock_ready)
		pthread_mutex_destroy(&s->lock);
	s->lock_ready = false;
	free(s->sqlite_path);
	s->sqlite_path = NULL;
}

/* BEGIN IMMEDIATE already serialises migrators: only create the version table when missing. */
static int lite_prepare_migration(struct session *x, struct t2s_error *err)
{
	return store_session_script(x, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)", err);
}

/* Run a parameterless SQL script (may hold several statements). */
static int lite_script(struct session *x, const char *sql, struct t2s_error *err)
{
	struct state_store *s = x->s;
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : store_sqlite_failure(s, rc, err);
}

/* The store's mutex, then BEGIN (IMMEDIATE for a write); a write is refused once the file was moved. */
static int lite_begin(struct session *x, bool write, struct t2s_error *err)
{
	struct state_store *s = x->s;
	pthread_mutex_lock(&s->lock);
	/* A file deleted or replaced under us would take writes that vanish at the next start. */
	int moved = 0;
	if (write && sqlite3_file_control(s->db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK && moved) {
		pthread_mutex_unlock(&s->lock);
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE,
				     "the state store file %s was deleted or replaced while open: writes are "
				     "refused until the service restarts", s->sqlite_path);
	}
	int rc = sqlite3_exec(s->db, write ? "BEGIN IMMEDIATE" : "BEGIN", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		int code = store_sqlite_failure(s, rc, err);
		pthread_mutex_unlock(&s->lock);
		return code;
	}
	return 0;
}

static int lite_end(struct session *x, int rc, struct t2s_error *err)
{
	struct state_store *s = x->s;
	if (rc == 0) {
		int src = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
		if (src != SQLITE_OK)
			rc = store_sqlite_failure(s, src, err);
	}
	/* SQLite rolls back by itself after some errors: only roll back what is open. */
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Feed the current SQLite row to fn. */
static int sqlite_row(sqlite3_stmt *st, row_fn fn, void *ctx, struct t2s_error *err)
{
	const char *vals[ROW_COLS_MAX];
	size_t lens[ROW_COLS_MAX];
	int ncols = sqlite3_column_count(st);
	if (ncols > ROW_COLS_MAX)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store statement returns too many columns");
	for (int i = 0; i < ncols; i++) {
		if (sqlite3_column_type(st, i) == SQLITE_NULL) {
			vals[i] = NULL;
			lens[i] = 0;
			continue;
		}
		vals[i] = (const char *)sqlite3_column_text(st, i);
		lens[i] = (size_t)sqlite3_column_bytes(st, i);
		if (!vals[i])
			return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading the state store");
	}
	return fn(ctx, ncols, vals, lens, err);
}

/* The SQLite text of a statement (NULL: none for SQLite, skipped), bound by name ($1 ...), rows to fn. */
static int lite_exec(struct session *x, const char *sql, const char *sql_pg, const struct param *p, int np, row_fn fn,
		     void *ctx, int64_t *ret_changes, struct t2s_error *err)
{
	(void)sql_pg;
	if (!sql)
		return 0;
	struct state_store *s = x->s;
	sqlite3_stmt *st = NULL;
	int src = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (src != SQLITE_OK)
		return store_sqlite_failure(s, src, err);
	for (int i = 0; i < np; i++) {
		char name[16];
		snprintf(name, sizeof(name), "$%d", i + 1);
		int idx = sqlite3_bind_parameter_index(st, name);
		if (idx == 0)
			continue; /* not used by this dialect's text */
		src = p[i].is_num ? sqlite3_bind_int64(st, idx, p[i].num)
				  : sqlite3_bind_text(st, idx, p[i].text, -1, SQLITE_STATIC);
		if (src != SQLITE_OK) {
			sqlite3_finalize(st);
			return store_sqlite_failure(s, src, err);
		}
	}
	int rc = 0;
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		if (!fn)
			continue;
		if ((rc = sqlite_row(st, fn, ctx, err)) < 0)
			break;
	}
	if (rc == 0 && src != SQLITE_DONE)
		rc = store_sqlite_failure(s, src, err);
	if (rc == 0 && ret_changes)
		*ret_changes = sqlite3_changes64(s->db);
	sqlite3_finalize(st);
	return rc;
}

const struct store_backend store_backend_sqlite = {
	.name = "sqlite",
	.url_prefixes = (const char *const[]){"sqlite://", NULL},
	.migrations = migrations,
	.init = lite_init,
	.connect = lite_connect,
	.disconnect = lite_disconnect,
	.release = lite_release,
	.prepare_migration = lite_prepare_migration,
	.begin = lite_begin,
	.end = lite_end,
	.script = lite_script,
	.exec = lite_exec,
};
