/*
 * engine_mysql.c - the MySQL / MariaDB engine's table (see engine.h), on
 * Debian's libmariadb (MariaDB Connector/C, which speaks to both servers).
 *
 * URLs: mysql://user[:password]@host[:port]/database or mariadb://...,
 * user and password percent-decoded, a [v6] host in brackets; the only
 * parameter is ?socket=/path (a unix socket instead of TCP).  The password
 * may come from password_env / password_file instead (db_pool_set_password).
 *
 * Every connection is opened the same way and set up again after each
 * reset (mysql_reset_connection drops session state: variables, temporary
 * tables, locks, user variables, prepared statements):
 *   - multi-statements off (the client flag is never given), so one
 *     mysql_real_query is one statement; local infile refused;
 *   - sql_mode = NO_BACKSLASH_ESCAPES,PIPES_AS_CONCAT,NO_ENGINE_SUBSTITUTION:
 *     strings are standard SQL ('' doubles a quote, a backslash is itself),
 *     exactly as the statement guard reads them (sql_guard_mysql.h), and ||
 *     concatenates as on the other engines; double quotes stay strings;
 *   - SET SESSION TRANSACTION READ ONLY, and every statement of ours and of
 *     the user's runs inside START TRANSACTION READ ONLY, rolled back;
 *   - div_precision_increment = 30: / and AVG() keep the digits a double has
 *     (MySQL's default keeps 4: AVG of 1, 2, 2 would be 1.6667);
 *   - the statement time limit is max_statement_time (MariaDB, seconds) or
 *     max_execution_time (MySQL, milliseconds), set before each statement;
 *   - the client accepts no packet (one result row) over MYSQL_PACKET_MAX.
 * A cancel is KILL QUERY <the session's id> from a second, short-lived
 * connection with the same credentials (any user may kill its own sessions).
 *
 * Data version: the server's InnoDB row counters (Innodb_rows_inserted,
 * _updated, _deleted: global, so a write to any database of the server moves
 * them, which only costs cache misses) with the newest UPDATE_TIME and the
 * table count of the database (for MyISAM / Aria tables, whose UPDATE_TIME
 * is exact).  Limits, in the README: a server restart resets the counters
 * (a version could repeat after it), and TRUNCATE / DDL on InnoDB are seen
 * only through the table count or a later write.
 */
#include "pipeline/db/catalog.h"
#include "pipeline/db/engine.h"
#include "pipeline/db/mysql_session.h"

#include <errmsg.h>
#include <mysqld_error.h>

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest packet (one result row) the client accepts; the server's max_allowed_packet bounds it too. */
#define MYSQL_PACKET_MAX (32UL << 20)

/* ---- the URL ---- */

struct my_target {
	char *user, *password, *host, *db, *socket;
	unsigned port;
};

static void target_release(struct my_target *t)
{
	if (t->password)
		explicit_bzero(t->password, strlen(t->password));
	free(t->user);
	free(t->password);
	free(t->host);
	free(t->db);
	free(t->socket);
	memset(t, 0, sizeof(*t));
}

/* s[0, n) percent-decoded (malloc'd), or NULL (out of memory or a bad %xx). */
static char *decode(const char *s, size_t n)
{
	char *out = malloc(n + 1);
	size_t o = 0;
	for (size_t i = 0; out && i < n; i++) {
		if (s[i] != '%') {
			out[o++] = s[i];
			continue;
		}
		if (i + 2 >= n) {
			free(out);
			return NULL;
		}
		char hex[3] = {s[i + 1], s[i + 2], 0};
		char *end;
		long v = strtol(hex, &end, 16);
		if (*end || !isxdigit((unsigned char)hex[0]) || v == 0) {
			free(out);
			return NULL;
		}
		out[o++] = (char)v;
		i += 2;
	}
	if (out)
		out[o] = '\0';
	return out;
}

/* Parse url into t (owned strings); 0 or -T2S_ERR_INVALID / -T2S_ERR_NOMEM with err filled. */
static int parse_target(const char *url, struct my_target *t, struct t2s_error *err)
{
	memset(t, 0, sizeof(*t));
	const char *rest = strstr(url, "://");
	if (!rest)
		return t2s_error_set(err, T2S_ERR_INVALID, "a MySQL URL is mysql://user@host:port/database");
	rest += 3;
	const char *slash = strchr(rest, '/');
	const char *query = strchr(rest, '?');
	if (!slash || (query && query < slash))
		return t2s_error_set(err, T2S_ERR_INVALID, "the MySQL URL names no database (mysql://user@host/database)");
	const char *at = memchr(rest, '@', (size_t)(slash - rest));
	const char *hostp = rest;
	if (at) {
		const char *colon = memchr(rest, ':', (size_t)(at - rest));
		t->user = decode(rest, (size_t)((colon ? colon : at) - rest));
		if (colon)
			t->password = decode(colon + 1, (size_t)(at - colon - 1));
		hostp = at + 1;
	}
	const char *host_end = slash;
	const char *portp = NULL;
	if (*hostp == '[') {
		const char *close = memchr(hostp, ']', (size_t)(slash - hostp));
		if (!close)
			return t2s_error_set(err, T2S_ERR_INVALID, "the MySQL URL's [host] is not closed");
		t->host = strndup(hostp + 1, (size_t)(close - hostp - 1));
		if (close[1] == ':')
			portp = close + 2;
	} else {
		const char *colon = memchr(hostp, ':', (size_t)(slash - hostp));
		host_end = colon ? colon : slash;
		t->host = strndup(hostp, (size_t)(host_end - hostp));
		if (colon)
			portp = colon + 1;
	}
	if (portp) {
		char *end;
		long port = strtol(portp, &end, 10);
		if (end != slash || port <= 0 || port > 65535) {
			target_release(t);
			return t2s_error_set(err, T2S_ERR_INVALID, "the MySQL URL's port is not a number from 1 to 65535");
		}
		t->port = (unsigned)port;
	}
	const char *db_end = query ? query : slash + strlen(slash);
	t->db = decode(slash + 1, (size_t)(db_end - slash - 1));
	if (query && strncmp(query, "?socket=", 8) == 0 && !strchr(query + 8, '&'))
		t->socket = decode(query + 8, strlen(query + 8));
	else if (query) {
		target_release(t);
		return t2s_error_set(err, T2S_ERR_INVALID, "the MySQL URL takes one parameter only: ?socket=/path");
	}
	if (!t->host || !t->db || (at && !t->user) || (query && !t->socket)) {
		target_release(t);
		return t2s_error_set(err, T2S_ERR_INVALID, "the MySQL URL is malformed (or out of memory)");
	}
	if (!t->db[0]) {
		target_release(t);
		return t2s_error_set(err, T2S_ERR_INVALID, "the MySQL URL names no database (mysql://user@host/database)");
	}
	return 0;
}

/* ---- connections ---- */

static const char session_sql[] =
	"SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES,PIPES_AS_CONCAT,NO_ENGINE_SUBSTITUTION', "
	"SESSION group_concat_max_len = 65536, SESSION div_precision_increment = 30";

/* mysql_library_init is not thread-safe: once, before the first handle (pools open lazily on any thread). */
static pthread_once_t library_once = PTHREAD_ONCE_INIT;

static void library_init(void)
{
	(void)mysql_library_init(0, NULL, NULL);
}

/* Connect to p's target (a fresh handle into *ret): 0 or -T2S_ERR_UNAVAILABLE / -T2S_ERR_NOMEM. */
static int connect_target(const struct db_pool *p, bool nonblock, long timeout_s, MYSQL **ret, struct t2s_error *err)
{
	struct my_target t;
	struct t2s_error why = {0};
	int rc = parse_target(p->target, &t, &why);
	if (rc < 0)
		return t2s_error_set(err, rc == -T2S_ERR_INVALID ? T2S_ERR_UNAVAILABLE : (enum t2s_code)-rc, "%s", why.message);
	pthread_once(&library_once, library_init);
	MYSQL *m = mysql_init(NULL);
	if (!m) {
		target_release(&t);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory opening a MySQL connection");
	}
	unsigned timeout = (unsigned)(timeout_s > 0 ? timeout_s : 10);
	unsigned long packet = MYSQL_PACKET_MAX;
	unsigned no = 0;
	mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(m, MYSQL_OPT_MAX_ALLOWED_PACKET, &packet);
	mysql_options(m, MYSQL_OPT_LOCAL_INFILE, &no);
	mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	if (nonblock)
		mysql_options(m, MYSQL_OPT_NONBLOCK, 0);
	const char *password = p->password ? p->password : t.password;
	/* client flags: no CLIENT_MULTI_STATEMENTS, no CLIENT_LOCAL_FILES */
	MYSQL *ok = mysql_real_connect(m, t.socket ? NULL : t.host, t.user, password, t.db, t.port, t.socket, 0);
	target_release(&t);
	if (!ok) {
		rc = t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot connect to MySQL: %s", mysql_error(m));
		mysql_close(m);
		return rc;
	}
	*ret = m;
	return 0;
}

/* The session settings of every connection (file comment); false when the server refused them. */
static bool set_up_session(MYSQL *m)
{
	return mysql_query(m, session_sql) == 0 && mysql_query(m, "SET SESSION TRANSACTION READ ONLY") == 0;
}

static int my_open(const struct db_pool *p, struct db_conn *c, struct t2s_error *err)
{
	int rc = connect_target(p, true, p->connect_timeout_s, &c->my, err);
	if (rc < 0)
		return rc;
	c->my_pool = p;
	c->my_thread_id = mysql_thread_id(c->my);
	c->my_mariadb = strstr(mysql_get_server_info(c->my), "MariaDB") != NULL;
	if (!set_up_session(c->my))
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "cannot set up the MySQL session: %s", mysql_error(c->my));
	return 0;
}

static void my_close(struct db_conn *c)
{
	if (c->my)
		mysql_close(c->my);
	c->my = NULL;
}

/* ROLLBACK, mysql_reset_connection, the session settings again; false when the connection cannot be trusted. */
static bool my_reset(struct db_conn *c)
{
	if (!c->my || mysql_query(c->my, "ROLLBACK") != 0)
		return false;
	if (mysql_reset_connection(c->my) != 0)
		return false;
	return set_up_session(c->my);
}

/* KILL QUERY c's session from a second connection (any thread; best effort). */
static void my_cancel(struct db_conn *c)
{
	if (!c->my_pool || !c->my_thread_id)
		return;
	MYSQL *k;
	if (connect_target(c->my_pool, false, 5, &k, NULL) < 0)
		return;
	char sql[64];
	snprintf(sql, sizeof(sql), "KILL QUERY %lu", c->my_thread_id);
	(void)mysql_query(k, sql);
	mysql_close(k);
}

static int my_ping(struct db_conn *c, struct t2s_error *err)
{
	if (mysql_query(c->my, "SELECT 1") != 0)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "MySQL connection lost: %s", mysql_error(c->my));
	MYSQL_RES *r = mysql_store_result(c->my);
	mysql_free_result(r);
	return r ? 0 : t2s_error_set(err, T2S_ERR_UNAVAILABLE, "MySQL connection lost: %s", mysql_error(c->my));
}

/* ---- the schema model ---- */

/* MySQL types by the name information_schema.COLUMNS.COLUMN_TYPE prints ("int(11) unsigned"); first match wins. */
static const struct {
	enum schema_type_class class;
	const char *names[16];
} type_rules[] = {
	{SCHEMA_TYPE_INTEGER, {"tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year"}},
	{SCHEMA_TYPE_REAL, {"decimal", "numeric", "float", "double", "real", "dec", "fixed"}},
	{SCHEMA_TYPE_DATE, {"datetime", "timestamp", "date", "time"}},
	{SCHEMA_TYPE_TEXT, {"varchar", "char", "tinytext", "mediumtext", "longtext", "text", "enum", "set",
			    "national", "nvarchar", "nchar"}},
	{SCHEMA_TYPE_BOOLEAN, {"boolean", "bool"}},
	{SCHEMA_TYPE_OTHER, {"binary", "varbinary", "tinyblob", "mediumblob", "longblob", "blob", "bit", "json",
			     "geometry", "point", "linestring", "polygon", "multi", "uuid", "inet"}},
};

/* The class of a type: the first rule with a name the type starts with as a whole word. */
static int my_type_class(const char *type)
{
	for (size_t r = 0; r < sizeof(type_rules) / sizeof(*type_rules); r++)
		for (const char *const *name = type_rules[r].names; *name; name++) {
			size_t n = strlen(*name);
			if (strncasecmp(type, *name, n) == 0 && (strcmp(*name, "multi") == 0 || !isalnum((unsigned char)type[n])))
				return type_rules[r].class;
		}
	return SCHEMA_TYPE_UNKNOWN;
}

/* Run sql (one row, one column of text expected) into ret[size]; false on any failure. */
static bool one_text(MYSQL *m, const char *sql, char *ret, size_t size)
{
	if (mysql_query(m, sql) != 0)
		return false;
	MYSQL_RES *r = mysql_store_result(m);
	MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
	bool ok = row != NULL && mysql_num_fields(r) >= 1;
	if (ok)
		snprintf(ret, size, "%s", row[0] ? row[0] : "");
	mysql_free_result(r);
	return ok;
}

static int my_data_version(struct catalog_db *db, char *ret, size_t size, struct t2s_error *err)
{
	struct db_conn *c;
	int rc = db_pool_acquire(&db->pool, &c, err);
	if (rc < 0)
		return rc;
	char rows[64] = "", tables[96] = "";
	bool ok = mysql_query(c->my, "SHOW GLOBAL STATUS WHERE Variable_name IN "
				     "('Innodb_rows_inserted', 'Innodb_rows_updated', 'Innodb_rows_deleted')") == 0;
	MYSQL_RES *r = ok ? mysql_store_result(c->my) : NULL;
	unsigned long long sum = 0;
	MYSQL_ROW row;
	while (r && (row = mysql_fetch_row(r)))
		sum += row[1] ? strtoull(row[1], NULL, 10) : 0;
	mysql_free_result(r);
	ok = ok && r;
	snprintf(rows, sizeof(rows), "%llu", sum);
	ok = ok && one_text(c->my,
			    "SELECT CONCAT(COUNT(*), '.', COALESCE(UNIX_TIMESTAMP(MAX(UPDATE_TIME)), '')) "
			    "FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()",
			    tables, sizeof(tables));
	if (ok)
		snprintf(ret, size, "m%s.%s", rows, tables);
	db_pool_put(&db->pool, c, !ok);
	return ok ? 0 : t2s_error_set(err, T2S_ERR_UNAVAILABLE, "MySQL status unreadable");
}

/* ---- value probes and scans ---- */

/* `name` with backticks doubled (malloc'd). */
static char *my_quote_name(struct db_conn *c, const char *name)
{
	(void)c;
	size_t n = strlen(name), extra = 0;
	for (const char *p = name; *p; p++)
		extra += *p == '`';
	char *out = malloc(n + extra + 3);
	if (!out)
		return NULL;
	char *o = out;
	*o++ = '`';
	for (const char *p = name; *p; p++) {
		if (*p == '`')
			*o++ = '`';
		*o++ = *p;
	}
	*o++ = '`';
	*o = '\0';
	return out;
}

/* The table bare: every table of the model lives in the connection's database. */
static char *my_quote_table(struct db_conn *c, const struct schema_table *t)
{
	return my_quote_name(c, t->name);
}

/* The one parameter is written '?' and replaced by a quoted literal in my_query. */
static int my_probe_sql(const char *col, const char *table, bool like, int limit, char **ret)
{
	int n = like ? asprintf(ret,
				"SELECT DISTINCT CAST(%s AS CHAR) FROM %s WHERE CAST(%s AS CHAR) COLLATE utf8mb4_general_ci "
				"LIKE ? ESCAPE '\\' LIMIT %d",
				col, table, col, limit)
		     : asprintf(ret,
				"SELECT DISTINCT CAST(%s AS CHAR) FROM %s WHERE LOWER(CAST(%s AS CHAR)) = LOWER(?) LIMIT %d",
				col, table, col, limit);
	if (n < 0) {
		*ret = NULL;
		return -T2S_ERR_NOMEM;
	}
	return 0;
}

static int my_scan_sql(enum db_scan what, const char *col, const char *table, long rows, int cut, int limit,
		       char **ret)
{
	int n = -1;
	switch (what) {
	case DB_SCAN_TEXT:
	case DB_SCAN_ANY:
		n = asprintf(ret,
			     "SELECT LEFT(v, %d), OCTET_LENGTH(v) FROM (SELECT CAST(%s AS CHAR) AS v FROM %s LIMIT %ld) s "
			     "WHERE v IS NOT NULL GROUP BY v ORDER BY COUNT(*) DESC LIMIT %d",
			     cut, col, table, rows, limit);
		break;
	case DB_SCAN_NUMBER_RANGE:
		n = asprintf(ret,
			     "SELECT CAST(MIN(v) AS CHAR), CAST(MAX(v) AS CHAR) FROM (SELECT %s AS v FROM %s LIMIT %ld) s",
			     col, table, rows);
		break;
	case DB_SCAN_DATE_RANGE:
		n = asprintf(ret,
			     "SELECT DATE_FORMAT(MIN(v), '%%Y-%%m-%%d'), DATE_FORMAT(MAX(v), '%%Y-%%m-%%d') "
			     "FROM (SELECT %s AS v FROM %s LIMIT %ld) s",
			     col, table, rows);
		break;
	}
	if (n < 0) {
		*ret = NULL;
		return -T2S_ERR_NOMEM;
	}
	return 0;
}

/*
 * sql with its one '?' outside quotes replaced by param as a string
 * literal ('' doubling quotes: the session has NO_BACKSLASH_ESCAPES).
 * Malloc'd; NULL when out of memory.
 */
static char *bind_param(const char *sql, const char *param)
{
	size_t n = strlen(sql), pn = param ? strlen(param) : 0;
	char *out = malloc(n + 2 * pn + 3);
	if (!out)
		return NULL;
	char *o = out, quote = 0;
	bool bound = false;
	for (const char *p = sql; *p; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
		} else if (*p == '`' || *p == '\'' || *p == '"') {
			quote = *p;
		} else if (*p == '?' && param && !bound) {
			*o++ = '\'';
			for (const char *v = param; *v; v++) {
				if (*v == '\'')
					*o++ = '\'';
				*o++ = *v;
			}
			*o++ = '\'';
			bound = true;
			continue;
		}
		*o++ = *p;
	}
	*o = '\0';
	return out;
}

/* err filled for the failed statement what on m: timeout, lost connection or a failure. */
static int query_error(MYSQL *m, const char *what, struct t2s_error *err)
{
	unsigned code = mysql_errno(m);
	if (code == ER_STATEMENT_TIMEOUT || code == 3024 /* MySQL's ER_QUERY_TIMEOUT */)
		return t2s_error_set(err, T2S_ERR_TIMEOUT, "%s timed out", what);
	if (code == ER_QUERY_INTERRUPTED)
		return t2s_error_set(err, T2S_ERR_CANCELLED, "%s interrupted", what);
	if (code >= CR_MIN_ERROR && code <= CR_MAX_ERROR)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "connection lost during %s: %s", what, mysql_error(m));
	return t2s_error_set(err, T2S_ERR_SQL_FAILED, "%s failed: %s", what, mysql_error(m));
}

#define QUERY_COLS_MAX 4

static int my_query(struct db_conn *c, const struct db_query *q, struct t2s_error *err)
{
	MYSQL *m = c->my;
	if (mysql_session_set_timeout(c, q->timeout_ms) != 0 || mysql_query(m, "START TRANSACTION READ ONLY") != 0)
		return query_error(m, "read-only transaction", err);
	char *sql = bind_param(q->sql, q->param);
	if (!sql) {
		(void)mysql_query(m, "ROLLBACK");
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	int rc = 0;
	MYSQL_RES *r = NULL;
	if (mysql_query(m, sql) != 0 || !(r = mysql_store_result(m))) {
		rc = query_error(m, q->what, err);
	} else {
		unsigned nf = mysql_num_fields(r);
		int ncols = nf < QUERY_COLS_MAX ? (int)nf : QUERY_COLS_MAX;
		MYSQL_ROW row;
		while (rc == 0 && (row = mysql_fetch_row(r))) {
			unsigned long *l = mysql_fetch_lengths(r);
			const char *vals[QUERY_COLS_MAX];
			size_t lens[QUERY_COLS_MAX];
			for (int i = 0; i < ncols; i++) {
				vals[i] = row[i];
				lens[i] = row[i] ? (size_t)l[i] : 0;
			}
			rc = q->fn(q->ctx, ncols, vals, lens);
		}
	}
	mysql_free_result(r);
	free(sql);
	(void)mysql_query(m, "ROLLBACK");
	return rc;
}

/* MySQL's and MariaDB's reserved words a schema may use as a name (all quoted, in SQL and prompts). */
#define SP ((1u << DB_NAME_SQL) | (1u << DB_NAME_PROMPT))
static const struct db_reserved_word mysql_reserved_words[] = {
	{"accessible", SP}, {"add", SP}, {"all", SP}, {"alter", SP}, {"analyze", SP}, {"and", SP}, {"as", SP},
	{"asc", SP}, {"before", SP}, {"between", SP}, {"both", SP}, {"by", SP}, {"call", SP}, {"cascade", SP},
	{"case", SP}, {"change", SP}, {"char", SP}, {"character", SP}, {"check", SP}, {"collate", SP},
	{"column", SP}, {"condition", SP}, {"constraint", SP}, {"convert", SP}, {"create", SP}, {"cross", SP},
	{"current_date", SP}, {"current_time", SP}, {"current_timestamp", SP}, {"current_user", SP},
	{"database", SP}, {"databases", SP}, {"default", SP}, {"delete", SP}, {"desc", SP}, {"describe", SP},
	{"distinct", SP}, {"div", SP}, {"do", SP}, {"drop", SP}, {"else", SP}, {"elseif", SP}, {"end", SP},
	{"except", SP}, {"exists", SP}, {"explain", SP}, {"false", SP}, {"fetch", SP}, {"for", SP},
	{"force", SP}, {"foreign", SP}, {"from", SP}, {"full", SP}, {"fulltext", SP}, {"grant", SP},
	{"group", SP}, {"groups", SP}, {"having", SP}, {"if", SP}, {"ignore", SP}, {"in", SP}, {"index", SP},
	{"inner", SP}, {"insert", SP}, {"interval", SP}, {"intersect", SP}, {"into", SP}, {"is", SP},
	{"join", SP}, {"key", SP}, {"keys", SP}, {"kill", SP}, {"lag", SP}, {"lead", SP}, {"leading", SP},
	{"left", SP}, {"like", SP}, {"limit", SP}, {"lines", SP}, {"load", SP}, {"lock", SP}, {"long", SP},
	{"match", SP}, {"mod", SP}, {"natural", SP}, {"not", SP}, {"null", SP}, {"of", SP}, {"offset", SP},
	{"on", SP}, {"option", SP}, {"or", SP}, {"order", SP}, {"outer", SP}, {"over", SP}, {"partition", SP},
	{"primary", SP}, {"procedure", SP}, {"range", SP}, {"rank", SP}, {"read", SP}, {"recursive", SP},
	{"references", SP}, {"regexp", SP}, {"release", SP}, {"rename", SP}, {"repeat", SP}, {"replace", SP},
	{"require", SP}, {"restrict", SP}, {"return", SP}, {"right", SP}, {"rlike", SP}, {"row", SP},
	{"rows", SP}, {"schema", SP}, {"select", SP}, {"separator", SP}, {"set", SP}, {"show", SP},
	{"signal", SP}, {"table", SP}, {"then", SP}, {"to", SP}, {"trailing", SP}, {"trigger", SP},
	{"true", SP}, {"union", SP}, {"unique", SP}, {"unlock", SP}, {"unsigned", SP}, {"update", SP},
	{"usage", SP}, {"use", SP}, {"user", SP}, {"using", SP}, {"values", SP}, {"when", SP}, {"where", SP},
	{"while", SP}, {"window", SP}, {"with", SP}, {"write", SP}, {"xor", SP},
	{NULL, 0},
};

const struct db_engine db_engine_mysql = {
	.name = "mysql",
	.url_prefixes = (const char *const[]){"mysql://", "mariadb://", NULL},
	.dialect = "MySQL",
	.home_schema = NULL, /* the URL's database, the only one introspected: its tables are named bare */
	.quote = '`',
	.folds_case = false,
	.loose_types = false,
	.no_nulls_order = true,
	.like_nocase = " LIKE ",
	.prompt_notes = {.always = "- Quote identifiers with backticks (`Name`). No NULLS FIRST/LAST: ORDER BY x IS NULL, x.\n",
			 .strings = "- = and LIKE ignore case with the default collations; || concatenates.\n",
			 .dates = "- Dates: YEAR(d), CURDATE(), DATE_SUB(d, INTERVAL 1 DAY), DATEDIFF(a, b).\n",
			 .ratios = "- / gives a decimal; DIV is integer division.\n"},
	.reserved = mysql_reserved_words,
	.open = my_open,
	.close = my_close,
	.reset = my_reset,
	.cancel = my_cancel,
	.ping = my_ping,
	.introspect = introspect_mysql,
	.role_privilege = introspect_mysql_role,
	.type_class = my_type_class,
	.data_version = my_data_version,
	.quote_name = my_quote_name,
	.quote_table = my_quote_table,
	.probe_sql = my_probe_sql,
	.scan_sql = my_scan_sql,
	.query = my_query,
};
