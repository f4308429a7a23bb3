/*
 * fuzz_sqlite_guard.c - libFuzzer target: a statement through the SQLite
 * side of safe execution (pipeline/db/sqlite_guard.h and
 * pipeline/sql/exec.h's exec_sqlite) on a real database: a small file
 * created once per process (victim, big, singer, concert), opened the way
 * the service opens it (db_pool: read-only, guard installed, memory
 * ceiling).  Limits are small so each input runs in milliseconds.
 *
 * Beyond the sanitizers, one property is checked: nothing an input does
 * changes the data.  The database's checksum, taken through a separate
 * read-write connection, must be the same after every input.
 */
#include "pipeline/db/db.h"
#include "pipeline/sql/exec.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static const char schema_sql[] =
	"CREATE TABLE victim(k INTEGER PRIMARY KEY, v TEXT);"
	"INSERT INTO victim VALUES (1, 'one'), (2, 'two'), (3, NULL);"
	"CREATE TABLE big(i INTEGER, pad TEXT);"
	"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 64)"
	" INSERT INTO big SELECT i, printf('%.*c', 32, 'x') FROM n;"
	"CREATE TABLE singer(singer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT, age INTEGER,"
	" is_male INTEGER, photo BLOB);"
	"INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52, 1, x'00ff10'),"
	" (2, 'Timbaland', 'United States', 32, 1, NULL), (3, 'Justin Brown', 'France', 29, 1, NULL),"
	" (4, 'Rose White', 'France', 41, 0, NULL), (5, 'John Nizinik', 'France', 43, 1, NULL);"
	"CREATE TABLE concert(concert_id INTEGER PRIMARY KEY, concert_name TEXT, year TEXT,"
	" singer_id INTEGER REFERENCES singer(singer_id));"
	"INSERT INTO concert VALUES (1, 'Auditions', '2014', 1), (2, 'Super bootcamp', '2014', 2),"
	" (3, 'Home Visits', '2015', 4);"
	"CREATE VIEW french AS SELECT name, age FROM singer WHERE country = 'France';"
	"CREATE INDEX singer_country ON singer(country);";

static const char checksum_sql[] =
	"SELECT (SELECT group_concat(k || ':' || ifnull(v, '-'), ',') FROM victim)"
	" || (SELECT count(*) || ':' || sum(i) || ':' || sum(length(pad)) FROM big)"
	" || (SELECT group_concat(singer_id || name || ifnull(country, '') || age || hex(photo), ',') FROM singer)"
	" || (SELECT group_concat(concert_id || concert_name || year || singer_id, ',') FROM concert)"
	" || (SELECT group_concat(type || name || sql, ',') FROM sqlite_schema)";

static char path[64];
static struct db_pool pool;
static sqlite3 *admin; /* read-write, for the checksum only */
static char *checksum;

static char *take_checksum(void)
{
	sqlite3_stmt *st = NULL;
	char *sum = NULL;
	if (sqlite3_prepare_v2(admin, checksum_sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_text(st, 0))
		sum = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return sum;
}

static void remove_db(void)
{
	sqlite3_close(admin);
	db_pool_release(&pool);
	unlink(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (sqlite_guard_global_init() < 0) { /* before any other SQLite call, as the service does */
		fprintf(stderr, "fuzz_sqlite_guard: SQLite was initialised early: no memory ceiling to fuzz\n");
		abort();
	}
	snprintf(path, sizeof(path), "/tmp/t2s-fuzz-%ld.sqlite", (long)getpid());
	unlink(path);
	if (sqlite3_open(path, &admin) != SQLITE_OK || sqlite3_exec(admin, schema_sql, NULL, NULL, NULL) != SQLITE_OK)
		abort();
	checksum = take_checksum();
	struct t2s_error err = {0};
	if (!checksum || db_pool_init(&pool, DB_ENGINE_SQLITE, path, 1, 1000, 5) < 0)
		abort();
	struct db_conn *c;
	if (db_pool_acquire(&pool, &c, &err) < 0) {
		fprintf(stderr, "fuzz_sqlite_guard: %s\n", err.message);
		abort();
	}
	db_pool_put(&pool, c, false);
	atexit(remove_db);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *sql = strndup((const char *)data, size); /* the text up to the first NUL */
	if (!sql)
		return 0;
	struct exec_limits lim = {
		.timeout_ms = 200,
		.lock_timeout_ms = 50,
		.max_rows = 100,
		.max_result_bytes = 64 << 10,
		.max_sql_bytes = 100000,
		.max_statement_memory_bytes = 8 << 20,
	};
	struct exec_result res = {.columns = json_array(), .column_types = json_array(), .rows = json_array()};
	struct t2s_error err = {0};
	struct db_conn *c;
	if (db_pool_acquire(&pool, &c, &err) < 0)
		abort();
	int rc = exec_sqlite(c, sql, &lim, &res, &err);
	db_pool_put(&pool, c, false);
	if (rc < 0 && !err.message[0])
		abort(); /* a refusal says why */
	if (rc == 0 && (json_array_size(res.rows) > (size_t)lim.max_rows || !json_is_array(res.columns)))
		abort();
	exec_result_release(&res);
	char *now = take_checksum();
	if (!now || strcmp(now, checksum) != 0) {
		fprintf(stderr, "fuzz_sqlite_guard: the data changed through the guard\n");
		abort();
	}
	free(now);
	free(sql);
	return 0;
}
