/*
 * introspect_mysql.c - the schema model of a MySQL / MariaDB database (the
 * one its URL names), read from information_schema inside one READ ONLY
 * transaction under the statement time limit; and the account's grants.
 *
 * information_schema lists only the tables, columns and keys the account
 * has some privilege on.  Three catalog queries (tables with their
 * comments, columns with their types and comments, primary and foreign key
 * columns from KEY_COLUMN_USAGE), then per table a bounded row count
 * (exact up to row_count_scan_limit, as on SQLite: InnoDB's TABLE_ROWS is
 * an estimate that can be far off) and the first sample_rows rows for
 * sample values.  A failing count or sample costs that table its count or
 * samples, never the introspection.  Tables are sorted by name as strcmp
 * orders them (information_schema sorts by its collation, which ignores
 * case), so rows are matched to their table by binary search.
 */
#include "pipeline/db/mysql_session.h"
#include "pipeline/db/introspect.h"

#include "common/utf8.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char tables_sql[] =
	"SELECT TABLE_NAME, TABLE_TYPE, TABLE_COMMENT, TABLE_SCHEMA FROM information_schema.TABLES "
	"WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE IN ('BASE TABLE', 'VIEW', 'SYSTEM VERSIONED')";

static const char columns_sql[] =
	"SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_COMMENT FROM information_schema.COLUMNS "
	"WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION";

static const char keys_sql[] =
	"SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, "
	"REFERENCED_COLUMN_NAME, REFERENCED_TABLE_SCHEMA = DATABASE() FROM information_schema.KEY_COLUMN_USAGE "
	"WHERE TABLE_SCHEMA = DATABASE() AND (CONSTRAINT_NAME = 'PRIMARY' OR REFERENCED_TABLE_NAME IS NOT NULL) "
	"ORDER BY TABLE_NAME, CONSTRAINT_NAME = 'PRIMARY' DESC, CONSTRAINT_NAME, ORDINAL_POSITION";

struct my_ctx {
	MYSQL *m;
	const struct introspect_options *o;
	struct schema *s;
	struct t2s_error *err;
};

static int my_fail(struct my_ctx *x, const char *what)
{
	unsigned code = mysql_errno(x->m);
	if (code == 1969 /* ER_STATEMENT_TIMEOUT */ || code == 3024)
		return t2s_error_set(x->err, T2S_ERR_TIMEOUT, "introspection timed out (%s)", what);
	if (code >= 2000 && code < 3000)
		return t2s_error_set(x->err, T2S_ERR_UNAVAILABLE, "connection lost during introspection: %s",
				     mysql_error(x->m));
	return t2s_error_set(x->err, T2S_ERR_SQL_FAILED, "introspection failed (%s): %s", what, mysql_error(x->m));
}

/* Run sql and store its whole result in *ret (caller frees); 0 or my_fail's code. */
static int query(struct my_ctx *x, const char *sql, const char *what, MYSQL_RES **ret)
{
	*ret = NULL;
	if (mysql_query(x->m, sql) != 0 || !(*ret = mysql_store_result(x->m)))
		return my_fail(x, what);
	return 0;
}

/* Column i of row as an arena string (UTF-8 sanitised), NULL for SQL NULL. */
static const char *text(struct my_ctx *x, MYSQL_RES *r, MYSQL_ROW row, unsigned i)
{
	if (!row[i])
		return NULL;
	unsigned long *len = mysql_fetch_lengths(r);
	return utf8_sanitize(&x->s->arena, row[i], (size_t)len[i]);
}

static int cmp_table(const void *a, const void *b)
{
	return strcmp(((const struct schema_table *)a)->name, ((const struct schema_table *)b)->name);
}

static struct schema_table *table_named(struct my_ctx *x, const char *name)
{
	if (!name)
		return NULL;
	struct schema_table key = {.name = name};
	return bsearch(&key, x->s->tables, x->s->n_tables, sizeof(key), cmp_table);
}

static int read_tables(struct my_ctx *x)
{
	MYSQL_RES *r;
	int rc = query(x, tables_sql, "tables", &r);
	if (rc < 0)
		return rc;
	size_t n = (size_t)mysql_num_rows(r);
	x->s->tables = arena_calloc(&x->s->arena, n ? n : 1, sizeof(*x->s->tables));
	if (!x->s->tables) {
		mysql_free_result(r);
		return -T2S_ERR_NOMEM;
	}
	MYSQL_ROW row;
	size_t i = 0;
	while (i < n && (row = mysql_fetch_row(r))) {
		struct schema_table *t = &x->s->tables[i];
		t->name = text(x, r, row, 0);
		if (!t->name)
			continue;
		bool view = row[1] && strcmp(row[1], "VIEW") == 0;
		t->kind = view ? "view" : "table";
		t->comment = view || !row[2] || !row[2][0] ? NULL : text(x, r, row, 2);
		t->schema = text(x, r, row, 3);
		t->row_count = -1;
		i++;
	}
	x->s->n_tables = i;
	mysql_free_result(r);
	qsort(x->s->tables, x->s->n_tables, sizeof(*x->s->tables), cmp_table);
	return 0;
}

static int read_columns(struct my_ctx *x)
{
	MYSQL_RES *r;
	int rc = query(x, columns_sql, "columns", &r);
	if (rc < 0)
		return rc;
	struct schema_table *t = NULL;
	size_t cap = 0;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(r))) {
		struct schema_table *owner = table_named(x, row[0]);
		if (!owner || !row[1])
			continue;
		if (owner != t) {
			t = owner;
			cap = t->n_columns;
		}
		t->columns = arena_grow(&x->s->arena, t->columns, t->n_columns, &cap, sizeof(*t->columns));
		if (!t->columns) {
			mysql_free_result(r);
			return -T2S_ERR_NOMEM;
		}
		struct schema_column *c = &t->columns[t->n_columns++];
		memset(c, 0, sizeof(*c));
		c->name = text(x, r, row, 1);
		c->type = row[2] ? text(x, r, row, 2) : "";
		c->nullable = !row[3] || strcmp(row[3], "NO") != 0;
		c->comment = row[4] && row[4][0] ? text(x, r, row, 4) : NULL;
	}
	mysql_free_result(r);
	return 0;
}

/* Rows come one per (constraint, key position), grouped by table, the primary key first, then by name. */
static int read_keys(struct my_ctx *x)
{
	MYSQL_RES *r;
	int rc = query(x, keys_sql, "constraints", &r);
	if (rc < 0)
		return rc;
	struct introspect_keys keys = {0};
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(r))) {
		struct schema_table *t = table_named(x, row[0]);
		if (!t || !row[1] || !row[2])
			continue;
		bool own_database = row[6] && row[6][0] == '1';
		struct introspect_key_row key = {
			.table = t,
			.primary = strcmp(row[1], "PRIMARY") == 0,
			.constraint = text(x, r, row, 1),
			.column = text(x, r, row, 2),
			/* the database's own tables are named bare, as SQLite's are */
			.ref_schema = own_database ? NULL : text(x, r, row, 3),
			.ref_table = text(x, r, row, 4),
			.ref_column = text(x, r, row, 5),
		};
		if (introspect_add_key(x->s, &keys, &key) < 0)
			goto nomem;
	}
	mysql_free_result(r);
	return 0;
nomem:
	mysql_free_result(r);
	return -T2S_ERR_NOMEM;
}

static char *quoted(struct my_ctx *x, const char *name)
{
	size_t n = strlen(name);
	char *out = arena_alloc(&x->s->arena, 2 * n + 3);
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

/* A bounded count and the sample rows of t; a failure costs only them. */
static int read_data(struct my_ctx *x, struct schema_table *t)
{
	char *q = quoted(x, t->name);
	if (!q)
		return -T2S_ERR_NOMEM;
	if (x->o->row_count_scan_limit > 0) {
		char *sql = arena_printf(&x->s->arena, "SELECT COUNT(*) FROM (SELECT 1 FROM %s LIMIT %ld) s", q,
					 x->o->row_count_scan_limit);
		MYSQL_RES *r = NULL;
		if (sql && mysql_query(x->m, sql) == 0 && (r = mysql_store_result(x->m))) {
			MYSQL_ROW row = mysql_fetch_row(r);
			if (row && row[0]) {
				t->row_count = strtoll(row[0], NULL, 10);
				t->row_count_estimated = t->row_count >= x->o->row_count_scan_limit;
			}
		}
		mysql_free_result(r);
	}
	if (x->o->sample_values <= 0 || x->o->sample_rows <= 0 || t->n_columns == 0)
		return 0;
	char *sql = arena_printf(&x->s->arena, "SELECT * FROM %s LIMIT %d", q, x->o->sample_rows);
	MYSQL_RES *r = NULL;
	if (!sql || mysql_query(x->m, sql) != 0 || !(r = mysql_store_result(x->m)))
		return 0;
	size_t *caps = calloc(t->n_columns, sizeof(*caps));
	int rc = caps ? 0 : -T2S_ERR_NOMEM;
	unsigned cols = mysql_num_fields(r);
	MYSQL_FIELD *fields = mysql_fetch_fields(r);
	MYSQL_ROW row;
	while (rc == 0 && (row = mysql_fetch_row(r))) {
		unsigned long *len = mysql_fetch_lengths(r);
		for (unsigned j = 0; j < cols && j < t->n_columns && rc == 0; j++)
			if (row[j] && fields[j].charsetnr != 63 /* binary */)
				rc = introspect_add_sample(x->s, &t->columns[j], &caps[j], x->o, row[j], (size_t)len[j]);
	}
	free(caps);
	mysql_free_result(r);
	return rc;
}

int introspect_mysql(struct db_conn *c, const struct introspect_options *o, struct schema **ret,
		     struct t2s_error *err)
{
	struct schema *s = schema_new(o->database, c->engine);
	if (!s)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	struct my_ctx x = {.m = c->my, .o = o, .s = s, .err = err};
	int rc = 0;
	if (mysql_session_set_timeout(c, o->timeout_ms) != 0 || mysql_query(c->my, "START TRANSACTION READ ONLY") != 0)
		rc = my_fail(&x, "read-only transaction");
	if (rc == 0)
		rc = read_tables(&x);
	if (rc == 0)
		rc = read_columns(&x);
	if (rc == 0)
		rc = read_keys(&x);
	for (size_t i = 0; rc == 0 && i < s->n_tables; i++)
		rc = read_data(&x, &s->tables[i]);
	(void)mysql_query(c->my, "ROLLBACK");
	if (rc < 0) {
		if (rc == -T2S_ERR_NOMEM)
			t2s_error_set(err, T2S_ERR_NOMEM, "out of memory during introspection");
		schema_unref(s);
		return rc;
	}
	if (schema_finish(s) < 0) {
		schema_unref(s);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory during introspection");
	}
	*ret = s;
	return 0;
}

/* ---- the account's grants ---- */

/* The next privilege name of list (up to ',' at depth 0, column lists dropped) into buf; the rest after it. */
static const char *next_privilege(const char *list, char *buf, size_t size)
{
	size_t o = 0;
	int depth = 0;
	char quote = 0;
	const char *p = list;
	for (; *p; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
			continue;
		}
		if (*p == '`' || *p == '\'') {
			quote = *p;
			continue;
		}
		if (*p == '(')
			depth++;
		else if (*p == ')')
			depth--;
		else if (*p == ',' && depth == 0)
			break;
		else if (depth == 0 && o + 1 < size && !(o == 0 && *p == ' '))
			buf[o++] = (char)toupper((unsigned char)*p);
	}
	while (o > 0 && buf[o - 1] == ' ')
		o--;
	buf[o] = '\0';
	return *p ? p + 1 : p;
}

/* Where " ON " is in the GRANT line g, outside quotes and parentheses, or NULL. */
static const char *find_on(const char *g)
{
	char quote = 0;
	int depth = 0;
	for (const char *p = g; *p; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
		} else if (*p == '`' || *p == '\'') {
			quote = *p;
		} else if (*p == '(') {
			depth++;
		} else if (*p == ')') {
			depth--;
		} else if (depth == 0 && strncmp(p, " ON ", 4) == 0) {
			return p;
		}
	}
	return NULL;
}

/* The first privilege of one SHOW GRANTS line beyond reading, into ret ("" when none). */
static void grant_privilege(const char *g, char *ret, size_t size)
{
	ret[0] = '\0';
	if (strncmp(g, "GRANT ", 6) != 0)
		return; /* SET DEFAULT ROLE ...: the role's own GRANT line says what it is */
	const char *on = find_on(g);
	if (!on) {
		snprintf(ret, size, "is granted a role (%.80s)", g + 6);
		return;
	}
	const char *object = on + 4;
	size_t object_len = strcspn(object, " ");
	char list[512];
	snprintf(list, sizeof(list), "%.*s", (int)(on - g - 6), g + 6);
	for (const char *p = list; *p;) {
		char priv[64];
		p = next_privilege(p, priv, sizeof(priv));
		if (!priv[0] || strcmp(priv, "SELECT") == 0 || strcmp(priv, "USAGE") == 0 ||
		    strcmp(priv, "SHOW VIEW") == 0)
			continue;
		snprintf(ret, size, "has %s on %.*s", priv, (int)(object_len < 120 ? object_len : 120), object);
		return;
	}
	if (strstr(g, " WITH GRANT OPTION"))
		snprintf(ret, size, "may grant its privileges on %.*s (WITH GRANT OPTION)",
			 (int)(object_len < 120 ? object_len : 120), object);
}

int introspect_mysql_role(struct db_conn *c, long timeout_ms, char *ret_privilege, size_t size, struct t2s_error *err)
{
	struct my_ctx x = {.m = c->my, .err = err};
	char account[160] = "";
	if (mysql_session_set_timeout(c, timeout_ms) != 0)
		return my_fail(&x, "role privileges");
	MYSQL_RES *r = NULL;
	if (mysql_query(c->my, "SELECT CURRENT_USER()") == 0 && (r = mysql_store_result(c->my))) {
		MYSQL_ROW row = mysql_fetch_row(r);
		if (row && row[0])
			snprintf(account, sizeof(account), "%s", row[0]);
	}
	mysql_free_result(r);
	if (mysql_query(c->my, "SHOW GRANTS") != 0 || !(r = mysql_store_result(c->my)))
		return my_fail(&x, "role privileges");
	ret_privilege[0] = '\0';
	MYSQL_ROW row;
	while (!ret_privilege[0] && (row = mysql_fetch_row(r))) {
		char found[256];
		grant_privilege(row[0] ? row[0] : "", found, sizeof(found));
		if (found[0])
			snprintf(ret_privilege, size, "account %s %s", account, found);
	}
	mysql_free_result(r);
	return 0;
}
