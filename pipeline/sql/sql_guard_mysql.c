/*
 * sql_guard_mysql.c - the MySQL / MariaDB statement guard (see
 * sql_guard_mysql.h): a lexer as the server's under the session's sql_mode,
 * then checks on the token stream.  The lexer keeps the previous two tokens
 * so that a call (name followed by '(') and a qualified name (name '.'
 * name) can be seen.
 */
#include "pipeline/sql/sql_guard_mysql.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum tok_kind { TOK_END, TOK_WORD, TOK_QUOTED_NAME, TOK_STRING, TOK_PUNCT };

struct tok {
	enum tok_kind kind;
	size_t at, len;
};

struct lexer {
	const char *s;
	size_t len; /* the text read: s[0, len); a NUL inside ends it too */
	size_t pos;
	struct t2s_error *err;
	int rc; /* the first error */
};

/* The words that write, lock, or start another statement: refused wherever they stand unquoted. */
static const char *const refused_words[] = {
	"INTO", "UPDATE", "DELETE", "INSERT", "LOCK", "UNLOCK", "SET", "CALL", "PROCEDURE", "GRANT", "REVOKE",
	"CREATE", "DROP", "ALTER", "RENAME", "TRUNCATE", "LOAD", "KILL", "SHUTDOWN", "OUTFILE", "DUMPFILE",
	"HANDLER", "PREPARE", "EXECUTE", "DEALLOCATE", "SIGNAL", "RESIGNAL", NULL,
};

/* Functions that sleep, wait, lock, read files, burn CPU, change session state or advance sequences. */
static const char *const refused_functions[] = {
	"SLEEP", "BENCHMARK", "GET_LOCK", "RELEASE_LOCK", "RELEASE_ALL_LOCKS", "IS_FREE_LOCK", "IS_USED_LOCK",
	"LOAD_FILE", "MASTER_POS_WAIT", "SOURCE_POS_WAIT", "MASTER_GTID_WAIT", "WAIT_FOR_EXECUTED_GTID_SET",
	"WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS", "LAST_INSERT_ID", "NEXTVAL", "SETVAL", "LASTVAL", "SYS_EXEC",
	"SYS_EVAL", "SYS_GET", "SYS_SET", "LOCK", "UUID_SHORT", NULL,
};

/* The statements MySQL and MariaDB know besides those admitted (a first word outside both is a syntax error). */
static const char *const statement_words[] = {
	"ALTER", "ANALYZE", "BACKUP", "BEGIN", "BINLOG", "CACHE", "CALL", "CHANGE", "CHECK", "CHECKSUM", "COMMIT",
	"CREATE", "DEALLOCATE", "DELETE", "DESC", "DESCRIBE", "DO", "DROP", "EXECUTE", "EXPLAIN", "FLUSH", "GET",
	"GRANT", "HANDLER", "HELP", "IMPORT", "INSERT", "INSTALL", "KILL", "LOAD", "LOCK", "OPTIMIZE", "PREPARE",
	"PURGE", "RELEASE", "RENAME", "REPAIR", "REPLACE", "RESET", "RESIGNAL", "REVOKE", "ROLLBACK", "SAVEPOINT",
	"SET", "SHOW", "SHUTDOWN", "SIGNAL", "START", "STOP", "TRUNCATE", "UNINSTALL", "UNLOCK", "UPDATE", "USE",
	"XA", NULL,
};

/* The statements admitted: their first word (after opening parentheses). */
static const char *const first_words[] = {"SELECT", "WITH", "VALUES", "TABLE", NULL};

/* The byte at i, or 0 at and past the end of the text read. */
static unsigned char at(const struct lexer *lx, size_t i)
{
	return i < lx->len ? (unsigned char)lx->s[i] : 0;
}

static bool word_in(const char *s, size_t len, const char *const *list)
{
	for (; *list; list++)
		if (strlen(*list) == len && strncasecmp(s, *list, len) == 0)
			return true;
	return false;
}

static bool is_word_byte(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '$' || c >= 0x80;
}

static int fail(struct lexer *lx, enum t2s_code code, const char *fmt, const char *what, size_t len)
{
	if (lx->rc == 0) {
		char shown[64];
		snprintf(shown, sizeof(shown), "%.*s", (int)(len < 48 ? len : 48), what ? what : "");
		lx->rc = t2s_error_set(lx->err, code, fmt, shown);
	}
	return lx->rc;
}

/* Skip blanks and comments; refuse the comments the server executes. 0 or the error. */
static int skip_space(struct lexer *lx)
{
	for (;;) {
		size_t p = lx->pos;
		unsigned char c = at(lx, p);
		if (c && isspace(c)) {
			lx->pos++;
		} else if (c == '#' || (c == '-' && at(lx, p + 1) == '-' &&
					(at(lx, p + 2) == '\0' || isspace(at(lx, p + 2)) || iscntrl(at(lx, p + 2))))) {
			while (at(lx, lx->pos) && at(lx, lx->pos) != '\n')
				lx->pos++;
		} else if (c == '/' && at(lx, p + 1) == '*') {
			unsigned char b0 = at(lx, p + 2), b1 = at(lx, p + 3);
			if (b0 == '!' || b0 == '+' || ((b0 == 'M' || b0 == 'm') && b1 == '!'))
				return fail(lx, T2S_ERR_SQL_REJECTED,
					    "executable comments and optimizer hints (%s...) are not allowed", lx->s + p, 3);
			size_t q = p + 2;
			while (at(lx, q) && !(at(lx, q) == '*' && at(lx, q + 1) == '/'))
				q++;
			if (!at(lx, q))
				return fail(lx, T2S_ERR_SQL_INVALID, "unterminated comment%s", "", 0);
			lx->pos = q + 2;
		} else {
			return 0;
		}
	}
}

/* The next token into *t (TOK_END at the end of the text); 0 or the error. */
static int next(struct lexer *lx, struct tok *t)
{
	if (skip_space(lx) < 0)
		return lx->rc;
	size_t p = lx->pos;
	t->at = p;
	unsigned char c = at(lx, p);
	if (!c) {
		t->kind = TOK_END;
		t->len = 0;
		return 0;
	}
	if (c == '\'' || c == '"' || c == '`') {
		size_t q = p + 1;
		for (;;) {
			if (!at(lx, q))
				return fail(lx, T2S_ERR_SQL_INVALID, "unterminated %s", c == '`' ? "quoted name" : "string",
					    c == '`' ? 11 : 6);
			if (at(lx, q) == c) {
				if (at(lx, q + 1) == c) {
					q += 2;
					continue;
				}
				break;
			}
			q++;
		}
		t->kind = c == '`' ? TOK_QUOTED_NAME : TOK_STRING;
		t->len = q + 1 - p;
	} else if (is_word_byte(c)) {
		size_t q = p;
		while (is_word_byte(at(lx, q)))
			q++;
		t->kind = TOK_WORD;
		t->len = q - p;
	} else {
		t->kind = TOK_PUNCT;
		t->len = (c == ':' && at(lx, p + 1) == '=') ? 2 : 1;
	}
	lx->pos = p + t->len;
	return 0;
}

static bool punct(const struct lexer *lx, const struct tok *t, char c)
{
	return t->kind == TOK_PUNCT && lx->s[t->at] == c;
}

static bool word(const struct lexer *lx, const struct tok *t, const char *w)
{
	return t->kind == TOK_WORD && t->len == strlen(w) && strncasecmp(lx->s + t->at, w, t->len) == 0;
}

/* The name a word or quoted name spells, unquoted, into buf (cut to size - 1 bytes). */
static void name_of(const struct lexer *lx, const struct tok *t, char *buf, size_t size)
{
	const char *s = lx->s + t->at;
	size_t n = t->len;
	if (t->kind == TOK_QUOTED_NAME) {
		s++;
		n -= 2;
	}
	size_t o = 0;
	for (size_t i = 0; i < n && o + 1 < size; i++) {
		if (t->kind == TOK_QUOTED_NAME && s[i] == '`')
			i++;
		buf[o++] = s[i];
	}
	buf[o] = '\0';
}

static bool is_name(const struct tok *t)
{
	return t->kind == TOK_WORD || t->kind == TOK_QUOTED_NAME;
}

/* A qualifier (name before '.') that names a system schema: refuse it, or information_schema's other views. */
static int check_schema(struct lexer *lx, const struct tok *qual, const struct tok *after)
{
	char name[72];
	name_of(lx, qual, name, sizeof(name));
	if (strcasecmp(name, "mysql") == 0 || strcasecmp(name, "performance_schema") == 0 ||
	    strcasecmp(name, "sys") == 0)
		return fail(lx, T2S_ERR_SQL_REJECTED, "the system schema %s is not readable", name, strlen(name));
	if (strcasecmp(name, "information_schema") != 0)
		return 0;
	char view[72] = "";
	if (is_name(after))
		name_of(lx, after, view, sizeof(view));
	if (strcasecmp(view, "tables") == 0 || strcasecmp(view, "columns") == 0)
		return 0;
	return fail(lx, T2S_ERR_SQL_REJECTED,
		    "information_schema.%s is not readable (only information_schema.tables and .columns are)", view,
		    strlen(view));
}

/* The first token must open an admitted statement (after '(' only). */
static int check_first(struct lexer *lx, struct tok *t)
{
	while (punct(lx, t, '('))
		if (next(lx, t) < 0)
			return lx->rc;
	if (t->kind == TOK_END)
		return fail(lx, T2S_ERR_SQL_INVALID, "no statement%s", "", 0);
	if (t->kind == TOK_WORD && word_in(lx->s + t->at, t->len, first_words))
		return 0;
	if (t->kind == TOK_WORD && word_in(lx->s + t->at, t->len, statement_words))
		return fail(lx, T2S_ERR_SQL_REJECTED,
			    "only one SELECT, WITH, VALUES or TABLE statement is allowed, not %s", lx->s + t->at, t->len);
	return fail(lx, T2S_ERR_SQL_INVALID, "syntax error: a statement cannot start with %s", lx->s + t->at, t->len);
}

/* The check of sql[0, len) (see sql_guard_mysql_check). */
static int check_text(const char *sql, size_t len, size_t *ret_end, struct t2s_error *err)
{
	struct lexer lx = {.s = sql, .len = len, .err = err};
	struct tok t, prev = {.kind = TOK_END}, prev2 = {.kind = TOK_END};
	if (next(&lx, &t) < 0 || check_first(&lx, &t) < 0)
		return lx.rc;
	size_t end = 0;
	while (t.kind != TOK_END) {
		const char *at = sql + t.at;
		if (punct(&lx, &t, ';')) {
			if (next(&lx, &t) < 0)
				return lx.rc;
			if (t.kind != TOK_END)
				return fail(&lx, T2S_ERR_SQL_REJECTED, "only one statement is allowed%s", "", 0);
			break;
		}
		end = t.at + t.len;
		if (punct(&lx, &t, '@'))
			return fail(&lx, T2S_ERR_SQL_REJECTED, "variables (%s...) are not allowed", at, 2);
		if (t.kind == TOK_PUNCT && t.len == 2)
			return fail(&lx, T2S_ERR_SQL_REJECTED, "assignments (%s) are not allowed", at, 2);
		if (t.kind == TOK_WORD && word_in(at, t.len, refused_words))
			return fail(&lx, T2S_ERR_SQL_REJECTED, "%s is not allowed in a read-only statement", at, t.len);
		if (t.kind == TOK_WORD && word(&lx, &prev, "FOR") && word(&lx, &t, "SHARE"))
			return fail(&lx, T2S_ERR_SQL_REJECTED, "FOR %s (a locking read) is not allowed", at, t.len);
		if (t.kind == TOK_WORD && (word(&lx, &t, "VALUE") && (word(&lx, &prev, "NEXT") || word(&lx, &prev, "PREVIOUS"))))
			return fail(&lx, T2S_ERR_SQL_REJECTED, "sequences (%s VALUE FOR) are not allowed", sql + prev.at,
				    prev.len);
		if (is_name(&prev) && punct(&lx, &t, '.')) {
			struct tok after;
			size_t save = lx.pos;
			if (next(&lx, &after) < 0 || check_schema(&lx, &prev, &after) < 0)
				return lx.rc;
			lx.pos = save;
		}
		if (punct(&lx, &t, '(') && is_name(&prev)) {
			if (punct(&lx, &prev2, '.'))
				return fail(&lx, T2S_ERR_SQL_REJECTED, "stored functions (%s(...)) are not allowed",
					    sql + prev.at, prev.len);
			if (prev.kind == TOK_QUOTED_NAME)
				return fail(&lx, T2S_ERR_SQL_REJECTED,
					    "stored functions (%s(...), a quoted name called) are not allowed", sql + prev.at,
					    prev.len);
			if (word_in(sql + prev.at, prev.len, refused_functions))
				return fail(&lx, T2S_ERR_SQL_REJECTED, "function %s is not allowed", sql + prev.at,
					    prev.len);
		}
		prev2 = prev;
		prev = t;
		if (next(&lx, &t) < 0)
			return lx.rc;
	}
	*ret_end = end;
	return 0;
}

int sql_guard_mysql_check(const char *sql, size_t *ret_end, struct t2s_error *err)
{
	size_t len = strlen(sql), end = 0;
	int rc = check_text(sql, len, &end, err);
	if (rc == 0 && end == len)
		*ret_end = end;
	if (rc < 0 || end == len)
		return rc;
	/* What is sent is sql[0, end): the server must read it as it was read here.  Cut before a ';'
	   or a comment, a statement ending in dashes ("1--") would end in a comment there. */
	size_t again = 0;
	rc = check_text(sql, end, &again, err);
	if (rc == 0 && again != end)
		rc = t2s_error_set(err, T2S_ERR_SQL_INVALID, "the statement ends in a sequence of dashes, which MySQL "
							    "reads as a comment");
	if (rc == 0)
		*ret_end = end;
	return rc;
}
