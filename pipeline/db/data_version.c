/*
 * data_version.c - a cheap token that changes when a database's data
 * changes (catalog.h, catalog_db_data_version), for the answer cache.
 *
 * SQLite: the file change counter (header bytes 24..27), which every
 * committing writer in rollback-journal mode increments, plus the size and
 * modification time of the "-wal" file when there is one (in WAL mode the
 * counter moves only at checkpoints, while each commit appends to the WAL).
 * PRAGMA data_version cannot serve: it only reports changes made through
 * other connections since that connection's last read.
 *
 * PostgreSQL: pg_stat_database's tup_inserted + tup_updated + tup_deleted for
 * the current database, with stats_reset.  Reads do not move it (unlike
 * xact_commit, which every read-only transaction increments).  Backends
 * report their counts when they go idle, at most once a second, so a
 * change is seen within about a second of its commit; TRUNCATE is not
 * counted (the README says so).
 */
#include "pipeline/db/catalog.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define SQLITE_CHANGE_COUNTER_OFFSET 24

static int sqlite_version(const char *path, char ret[CATALOG_DATA_VERSION_MAX], struct t2s_error *err)
{
	unsigned char b[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "SQLite database file cannot be opened");
	ssize_t n = pread(fd, b, sizeof(b), SQLITE_CHANGE_COUNTER_OFFSET);
	close(fd);
	if (n != (ssize_t)sizeof(b))
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "SQLite database file has no header");
	unsigned long counter = (unsigned long)b[0] << 24 | (unsigned long)b[1] << 16 | (unsigned long)b[2] << 8 | b[3];
	char wal[4096];
	struct stat st;
	long long wal_size = -1, wal_ns = 0;
	if (snprintf(wal, sizeof(wal), "%s-wal", path) < (int)sizeof(wal) && stat(wal, &st) == 0) {
		wal_size = (long long)st.st_size;
		wal_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	}
	snprintf(ret, CATALOG_DATA_VERSION_MAX, "c%lu.w%lld.%lld", counter, wal_size, wal_ns);
	return 0;
}

static int pg_version(struct catalog_db *db, char ret[CATALOG_DATA_VERSION_MAX], struct t2s_error *err)
{
	struct db_conn *c;
	int rc = db_pool_acquire(&db->pool, &c, err);
	if (rc < 0)
		return rc;
	PGresult *r = PQexec(c->pg, "SELECT (tup_inserted + tup_updated + tup_deleted)::text || '.' ||"
				    " coalesce(extract(epoch FROM stats_reset)::text, '')"
				    " FROM pg_catalog.pg_stat_database WHERE datname = current_database()");
	bool ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
	if (ok)
		snprintf(ret, CATALOG_DATA_VERSION_MAX, "p%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	db_pool_put(&db->pool, c, !ok);
	return ok ? 0 : t2s_error_set(err, T2S_ERR_UNAVAILABLE, "PostgreSQL statistics unreadable");
}

int catalog_db_data_version(struct catalog_db *db, char ret[CATALOG_DATA_VERSION_MAX], struct t2s_error *err)
{
	return db->engine == DB_ENGINE_SQLITE ? sqlite_version(db->cfg->sqlite_path, ret, err) : pg_version(db, ret, err);
}
