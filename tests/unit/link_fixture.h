/*
 * link_fixture.h - a column index over an SQLite database a unit test writes
 * (the link tests' fixture): the SQL runs on a temporary file, the schema is
 * introspected as the service does, and the index is built without WordNet
 * or an embedder.  Header-only (static functions) for the tests that link.
 */
#ifndef T2S_TESTS_UNIT_LINK_FIXTURE_H
#define T2S_TESTS_UNIT_LINK_FIXTURE_H

#include "pipeline/db/db.h"
#include "pipeline/db/introspect.h"
#include "pipeline/link/column_index.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct link_fixture {
	char path[64];
	struct schema *schema;
	struct column_index *idx;
};

static int link_fixture_schema(const char *path, struct schema **ret)
{
	struct db_pool pool;
	struct db_conn *c = NULL;
	struct t2s_error err = {0};
	struct introspect_options io = {.database = "fx", .sample_values = 3, .sample_rows = 100,
					.sample_value_max_len = 32, .timeout_ms = 5000, .row_count_scan_limit = 1000};
	int rc = db_pool_init(&pool, DB_ENGINE_SQLITE, path, 1, 1000, 5);
	if (rc < 0)
		return rc;
	if ((rc = db_pool_acquire(&pool, &c, &err)) == 0) {
		rc = introspect_sqlite(c, &io, ret, &err);
		db_pool_put(&pool, c, false);
	}
	db_pool_release(&pool);
	return rc;
}

/* Run sql on a new temporary database and index it into *f; 0 or -1 (release f either way). */
static int link_fixture_open(struct link_fixture *f, const char *sql)
{
	snprintf(f->path, sizeof(f->path), "/tmp/t2s-link-fixture-XXXXXX");
	f->schema = NULL;
	f->idx = NULL;
	int fd = mkstemp(f->path);
	if (fd < 0)
		return -1;
	close(fd);
	sqlite3 *w = NULL;
	int rc = sqlite3_open(f->path, &w) == SQLITE_OK && sqlite3_exec(w, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
	sqlite3_close(w);
	struct t2s_error err = {0};
	struct column_index_options lo;
	column_index_options_init(&lo);
	if (rc == 0 && link_fixture_schema(f->path, &f->schema) < 0)
		rc = -1;
	if (rc == 0 && column_index_build(f->schema, &lo, &f->idx, &err) < 0)
		rc = -1;
	return rc;
}

static void link_fixture_release(struct link_fixture *f)
{
	column_index_unref(f->idx);
	schema_unref(f->schema);
	if (f->path[0])
		unlink(f->path);
}

#endif
