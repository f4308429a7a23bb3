/*
 * exec_mysql_view.c - the tables of a statement, as MySQL / MariaDB expands
 * it, held against a caller's view (see exec_mysql_view.h).
 *
 * There is no MySQL parser in Debian to read the statement with, and the
 * plan (EXPLAIN FORMAT=JSON) names tables by their aliases.  EXPLAIN
 * EXTENDED leaves a note (code 1003) with the statement as the optimizer
 * rewrote it: views of the MERGE kind replaced by their tables, every
 * table written `db`.`table` after "from" or "join", every column
 * `db`.`table`.`column`.  Read there, outside string literals:
 *   - a name of three parts is a column: its table must be granted;
 *   - a name of two parts after "from" / "join" (parentheses between) is a
 *     table: it must be granted;
 *   - other names of two parts are a derived table's columns (alias.column)
 *     and one part is an alias or a CTE: nothing to check.
 * A table of another database is never granted; a granted table that is a
 * view still named there is one the server materialises (TEMPTABLE): what
 * it reads cannot be seen, so it is refused.
 *
 * The optimizer folds what it can compute before the statement runs: an
 * uncorrelated scalar subquery is run during EXPLAIN and written as its
 * value, so its table leaves the expansion.  The statement as written is
 * therefore read first: any identifier (bare, `quoted` or "quoted", outside
 * string literals and comments) that is the name of one of the database's
 * tables outside the grant refuses it, whatever it stands for there (fail
 * closed: a column or alias spelled like a hidden table is refused too).
 */
#include "pipeline/sql/exec_mysql_view.h"

#include "common/strbuf.h"
#include "pipeline/db/schema_grant.h"
#include "pipeline/sql/exec_mysql_error.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_PARTS 3

/* One name: up to MAX_PARTS backquoted parts joined by dots, copied unquoted. */
struct name {
	char part[MAX_PARTS][256];
	int n;
};

/* Read a backquoted identifier at *p (on the opening `) into out; *p moves past it.  false: not closed. */
static bool read_quoted(const char **p, char *out, size_t cap)
{
	const char *s = *p + 1;
	size_t n = 0;
	for (;;) {
		if (!*s)
			return false;
		if (*s == '`') {
			if (s[1] != '`')
				break;
			s++; /* a doubled backquote is one */
		}
		if (n + 1 < cap)
			out[n++] = *s;
		s++;
	}
	out[n] = '\0';
	*p = s + 1;
	return true;
}

/* Whether the word before `at` (spaces and opening parentheses skipped) is "from" or ends in "join". */
static bool after_from_or_join(const char *text, const char *at)
{
	const char *e = at;
	while (e > text && (isspace((unsigned char)e[-1]) || e[-1] == '('))
		e--;
	const char *b = e;
	while (b > text && (isalnum((unsigned char)b[-1]) || b[-1] == '_'))
		b--;
	size_t len = (size_t)(e - b);
	return (len == 4 && strncasecmp(b, "from", 4) == 0) || (len >= 4 && strncasecmp(e - 4, "join", 4) == 0);
}

/* Is the table db.table readable through view (granted, in the connection's database, not a kept view)? */
static int check_table(const struct schema *view, const char *database, const char *db, const char *table,
                       struct t2s_error *err)
{
	bool granted = database && strcmp(db, database) == 0 && schema_view_allows(view, db, table);
	for (size_t i = 0; granted && i < view->n_tables; i++)
		if (strcmp(view->tables[i].name, table) == 0 && view->tables[i].kind &&
		    strcmp(view->tables[i].kind, "view") == 0)
			return t2s_error_set(err, T2S_ERR_SQL_REJECTED,
			                     "the statement reads the view %s, which the server keeps whole: the "
			                     "tables "
			                     "it reads cannot be checked against the tables this caller may read",
			                     table);
	if (!granted)
		return t2s_error_set(err, T2S_ERR_SQL_INVALID, "Table '%s.%s' doesn't exist", db, table);
	return 0;
}

/* Every name of text (the expanded statement) against view; see the top of this file. */
static int check_expanded(const struct schema *view, const char *database, const char *text, struct t2s_error *err)
{
	const char *p = text;
	while (*p) {
		if (*p == '\'' || *p == '"') { /* a string literal: skip it (doubled or
                                      escaped quotes inside) */
			char q = *p++;
			while (*p && !(*p == q && p[1] != q)) {
				if (*p == '\\' && p[1])
					p++;
				else if (*p == q)
					p++; /* a doubled quote */
				p++;
			}
			if (*p)
				p++;
			continue;
		}
		if (*p != '`') {
			p++;
			continue;
		}
		const char *start = p;
		struct name nm = {.n = 0};
		while (*p == '`' && nm.n < MAX_PARTS) {
			if (!read_quoted(&p, nm.part[nm.n], sizeof(nm.part[0])))
				return t2s_error_set(err, T2S_ERR_SQL_REJECTED,
				                     "the statement's expansion could not be read");
			nm.n++;
			if (*p != '.' || p[1] != '`')
				break;
			p++;
		}
		if (*p == '.' && p[1] == '`')
			return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "the statement's expansion could not be read");
		int rc = 0;
		if (nm.n == 3)
			rc = check_table(view, database, nm.part[0], nm.part[1], err);
		else if (nm.n == 2 && after_from_or_join(text, start))
			rc = check_table(view, database, nm.part[0], nm.part[1], err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Is word (n bytes) the name of a table of view's database that view does not grant? */
static const char *hidden_table(const struct schema *view, const char *word, size_t n)
{
	const struct schema *full = view->parent;
	for (size_t i = 0; i < full->n_tables; i++) {
		const char *name = full->tables[i].name;
		if (strlen(name) == n && strncasecmp(name, word, n) == 0 &&
		    !schema_view_allows(view, full->tables[i].schema, name))
			return name;
	}
	return NULL;
}

/* The identifiers of sql[0, end) as written against the tables view hides (see the top of this file). */
static int check_written(const struct schema *view, const char *database, const char *sql, size_t end,
                         struct t2s_error *err)
{
	const char *p = sql, *e = sql + end;
	while (p < e) {
		const char *word = NULL;
		size_t n = 0;
		char q = *p;
		if (q == '\'' || q == '"' || q == '`') { /* a literal or a quoted identifier: "..." may be either */
			const char *b = ++p;
			while (p < e && !(*p == q && (p + 1 >= e || p[1] != q))) {
				if (q == '\'' && *p == '\\' && p + 1 < e)
					p++;
				else if (*p == q)
					p++; /* doubled */
				p++;
			}
			if (q != '\'')
				word = b, n = (size_t)(p - b);
			if (p < e)
				p++;
		} else if (q == '#' || (q == '-' && p + 2 < e && p[1] == '-' && isspace((unsigned char)p[2]))) {
			while (p < e && *p != '\n')
				p++;
		} else if (q == '/' && p + 1 < e && p[1] == '*') {
			const char *close = strstr(p + 2, "*/");
			p = close && close < e ? close + 2 : e;
		} else if (isalnum((unsigned char)q) || q == '_' || q == '$' || (unsigned char)q >= 0x80) {
			word = p;
			while (p < e &&
			       (isalnum((unsigned char)*p) || *p == '_' || *p == '$' || (unsigned char)*p >= 0x80))
				p++;
			n = (size_t)(p - word);
		} else {
			p++;
		}
		const char *hidden = word && n ? hidden_table(view, word, n) : NULL;
		if (hidden)
			return t2s_error_set(err, T2S_ERR_SQL_INVALID, "Table '%s.%s' doesn't exist", database, hidden);
	}
	return 0;
}

/* The first column of the one row sql answers, copied into out; false when there is none. */
static bool one_value(MYSQL *m, const char *sql, char *out, size_t cap)
{
	if (mysql_query(m, sql) != 0)
		return false;
	MYSQL_RES *r = mysql_store_result(m);
	MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
	bool ok = row && row[0];
	if (ok)
		snprintf(out, cap, "%s", row[0]);
	mysql_free_result(r);
	return ok;
}

/* The connection's last error: a statement that cannot be expanded fails for what it says. */
static int server_error(MYSQL *m, struct t2s_error *err)
{
	return exec_mysql_error(mysql_errno(m), mysql_error(m), NULL, T2S_ERR_SQL_INVALID, err);
}

int exec_mysql_within_view(MYSQL *m, const struct schema *view, const char *sql, size_t end, struct t2s_error *err)
{
	if (!schema_is_view(view))
		return 0;
	char database[256];
	if (!one_value(m, "SELECT DATABASE()", database, sizeof(database)))
		return server_error(m, err);
	int written = check_written(view, database, sql, end, err);
	if (written < 0)
		return written;
	struct strbuf explain;
	strbuf_init(&explain, end + 32);
	if (strbuf_adds(&explain, "EXPLAIN EXTENDED ") < 0 || strbuf_add(&explain, sql, end) < 0) {
		strbuf_release(&explain);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	int q = mysql_real_query(m, explain.buf, (unsigned long)explain.len);
	strbuf_release(&explain);
	if (q != 0)
		return server_error(m, err);
	mysql_free_result(mysql_store_result(m)); /* the plan itself is not read */
	if (mysql_query(m, "SHOW WARNINGS") != 0)
		return server_error(m, err);
	MYSQL_RES *w = mysql_store_result(m);
	int rc = t2s_error_set(err, T2S_ERR_SQL_REJECTED,
	                       "the statement's tables could not be checked against "
	                       "the tables this caller may read");
	for (MYSQL_ROW row; w && (row = mysql_fetch_row(w));)
		if (row[1] && strcmp(row[1], "1003") == 0 && row[2]) {
			rc = check_expanded(view, database, row[2], err);
			break;
		}
	mysql_free_result(w);
	return rc;
}
