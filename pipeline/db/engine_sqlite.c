/*
 * engine_sqlite.c - the SQLite engine's table (see engine.h): read-only
 * guarded connections, introspection, the declared-type classes, the data
 * version, and the statements of value probes and scans.
 *
 * Data version: the file change counter (header bytes 24..27), which every
 * committing writer in rollback-journal mode increments, plus the size and
 * modification time of the "-wal" file when there is one (in WAL mode the
 * counter moves only at checkpoints, while each commit appends to the WAL).
 * PRAGMA data_version cannot serve: it only reports changes made through
 * other connections since that connection's last read.
 */
#include "pipeline/db/catalog.h"
#include "pipeline/db/engine.h"

#include "common/strbuf.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SQLITE_CHANGE_COUNTER_OFFSET 24

/* ---- connections ---- */

static int lite_open(const struct db_pool *p, struct db_conn *c, struct t2s_error *err)
{
	int rc = sqlite3_open_v2(p->target, &c->sqlite, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot open SQLite database: %s",
			      c->sqlite ? sqlite3_errmsg(c->sqlite) : sqlite3_errstr(rc));
		return -T2S_ERR_UNAVAILABLE;
	}
	sqlite3_extended_result_codes(c->sqlite, 1);
	if (sqlite_guard_install(c->sqlite, &c->guard) < 0)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "cannot install the SQLite guard");
	/* Opening is lazy: touch the schema so a missing or corrupt file fails here. */
	sqlite_guard_arm(&c->guard, SQLITE_GUARD_INTROSPECT, 5000);
	rc = sqlite3_exec(c->sqlite, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot read SQLite database: %s",
				     sqlite3_errmsg(c->sqlite));
	return 0;
}

static void lite_close(struct db_conn *c)
{
	if (c->sqlite)
		sqlite3_close_v2(c->sqlite);
	c->sqlite = NULL;
}

/* Reusable when no transaction and no statement is left open. */
static bool lite_reset(struct db_conn *c)
{
	return sqlite3_get_autocommit(c->sqlite) && sqlite3_next_stmt(c->sqlite, NULL) == NULL;
}

static void lite_cancel(struct db_conn *c)
{
	if (c->sqlite)
		sqlite3_interrupt(c->sqlite);
}

static int lite_ping(struct db_conn *c, struct t2s_error *err)
{
	sqlite_guard_arm(&c->guard, SQLITE_GUARD_QUERY, 2000);
	if (sqlite3_exec(c->sqlite, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL) == SQLITE_OK)
		return 0;
	return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "SQLite database unreadable: %s", sqlite3_errmsg(c->sqlite));
}

/* ---- the schema model ---- */

/* SQLite's affinity rules on a declared type, after BOOL and DATE/TIME (see schema.h); first match wins. */
static const struct {
	enum schema_type_class class;
	const char *names[6];
} type_rules[] = {
	{SCHEMA_TYPE_BOOLEAN, {"BOOL"}},
	{SCHEMA_TYPE_DATE, {"DATE", "TIME"}},
	{SCHEMA_TYPE_INTEGER, {"INT"}},
	{SCHEMA_TYPE_TEXT, {"CHAR", "CLOB", "TEXT"}},
	{SCHEMA_TYPE_OTHER, {"BLOB"}},
	{SCHEMA_TYPE_REAL, {"REAL", "FLOA", "DOUB", "NUM", "DEC"}},
};

/* The class of a declared type: the first rule with a name the type contains, ignoring case. */
static int lite_type_class(const char *type)
{
	for (size_t r = 0; r < sizeof(type_rules) / sizeof(*type_rules); r++)
		for (const char *const *name = type_rules[r].names; *name; name++)
			if (strcasestr(type, *name))
				return type_rules[r].class;
	return SCHEMA_TYPE_UNKNOWN;
}

static int lite_data_version(struct catalog_db *db, char *ret, size_t size, struct t2s_error *err)
{
	const char *path = db->cfg->sqlite_path;
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
	snprintf(ret, size, "c%lu.w%lld.%lld", counter, wal_size, wal_ns);
	return 0;
}

/* ---- value probes and scans ---- */

/* "name" with inner quotes doubled. */
static char *lite_quote_name(struct db_conn *c, const char *name)
{
	(void)c;
	struct strbuf sb;
	strbuf_init(&sb, 1 << 16);
	int rc = strbuf_adds(&sb, "\"");
	for (const char *p = name; *p && rc == 0; p++)
		rc = strbuf_add(&sb, *p == '"' ? "\"\"" : p, *p == '"' ? 2 : 1);
	if (rc == 0)
		rc = strbuf_adds(&sb, "\"");
	char *out = rc == 0 ? strbuf_detach(&sb, NULL) : NULL;
	strbuf_release(&sb);
	return out;
}

/* The bare name: every table is in the main database. */
static char *lite_quote_table(struct db_conn *c, const struct schema_table *t)
{
	return lite_quote_name(c, t->name);
}

static int lite_probe_sql(const char *col, const char *table, bool like, int limit, char **ret)
{
	int n = like ? asprintf(ret, "SELECT DISTINCT %s FROM %s WHERE %s LIKE ?1 ESCAPE '\\' LIMIT %d", col, table,
				col, limit)
		     : asprintf(ret, "SELECT DISTINCT %s FROM %s WHERE lower(%s) = lower(?1) LIMIT %d", col, table, col,
				limit);
	if (n < 0) {
		*ret = NULL;
		return -T2S_ERR_NOMEM;
	}
	return 0;
}

static int lite_scan_sql(enum db_scan what, const char *col, const char *table, long rows, int cut, int limit,
			 char **ret)
{
	int n = -1;
	switch (what) {
	case DB_SCAN_TEXT:
	case DB_SCAN_ANY:
		n = asprintf(ret,
			     "SELECT substr(v, 1, %d), length(CAST(v AS BLOB)) FROM (SELECT %s AS v FROM %s "
			     "LIMIT %ld) WHERE %s GROUP BY v ORDER BY count(*) DESC LIMIT %d",
			     cut, col, table, rows, what == DB_SCAN_TEXT ? "typeof(v) = 'text'" : "v IS NOT NULL", limit);
		break;
	case DB_SCAN_NUMBER_RANGE:
	case DB_SCAN_DATE_RANGE:
		n = asprintf(ret, "SELECT min(v), max(v) FROM (SELECT %s AS v FROM %s LIMIT %ld) WHERE %s", col, table,
			     rows, what == DB_SCAN_NUMBER_RANGE ? "typeof(v) IN ('integer', 'real')" : "typeof(v) = 'text'");
		break;
	}
	if (n < 0) {
		*ret = NULL;
		return -T2S_ERR_NOMEM;
	}
	return 0;
}

#define QUERY_COLS_MAX 4

static int lite_query(struct db_conn *c, const struct db_query *q, struct t2s_error *err)
{
	sqlite3_stmt *st = NULL;
	sqlite_guard_arm(&c->guard, q->catalog ? SQLITE_GUARD_INTROSPECT : SQLITE_GUARD_QUERY, q->timeout_ms);
	if (sqlite3_prepare_v2(c->sqlite, q->sql, -1, &st, NULL) != SQLITE_OK)
		return t2s_error_set(err, T2S_ERR_SQL_FAILED, "%s failed: %s", q->what, sqlite3_errmsg(c->sqlite));
	if (q->param)
		sqlite3_bind_text(st, 1, q->param, -1, SQLITE_STATIC);
	int ncols = sqlite3_column_count(st);
	if (ncols > QUERY_COLS_MAX)
		ncols = QUERY_COLS_MAX;
	int rc = SQLITE_DONE, ret = 0;
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *vals[QUERY_COLS_MAX];
		size_t lens[QUERY_COLS_MAX];
		for (int i = 0; i < ncols; i++) {
			vals[i] = (const char *)sqlite3_column_text(st, i);
			lens[i] = (size_t)sqlite3_column_bytes(st, i);
		}
		ret = q->fn(q->ctx, ncols, vals, lens);
	}
	if (ret == 0 && rc != SQLITE_DONE) {
		if (c->guard.timed_out)
			ret = t2s_error_set(err, T2S_ERR_TIMEOUT, "%s timed out", q->what);
		else
			ret = t2s_error_set(err, (rc & 0xff) == SQLITE_INTERRUPT ? T2S_ERR_CANCELLED : T2S_ERR_SQL_FAILED,
					    "%s failed: %s", q->what, sqlite3_errmsg(c->sqlite));
	}
	sqlite3_finalize(st);
	return ret;
}

const struct db_engine db_engine_sqlite = {
	.name = "sqlite",
	.url_prefixes = (const char *const[]){"sqlite://", NULL},
	.dialect = "SQLite",
	.home_schema = "main",
	.quote = '"',
	.folds_case = false,
	.loose_types = true,
	.like_nocase = " LIKE ",
	.prompt_notes = {.always = NULL,
			 .strings = "- = is case-sensitive; LIKE is not (ASCII).\n",
			 .dates = "- Dates are text: strftime('%Y', d), date('now'), julianday().\n",
			 .ratios = "- Integer division truncates: CAST(x AS REAL) for ratios.\n"},
	.reserved = db_sql_reserved_words,
	.open = lite_open,
	.close = lite_close,
	.reset = lite_reset,
	.cancel = lite_cancel,
	.ping = lite_ping,
	.introspect = introspect_sqlite,
	.role_privilege = NULL,
	.type_class = lite_type_class,
	.data_version = lite_data_version,
	.quote_name = lite_quote_name,
	.quote_table = lite_quote_table,
	.probe_sql = lite_probe_sql,
	.scan_sql = lite_scan_sql,
	.query = lite_query,
};
