/*
 * sql_analyze_text.c - the text side of sql_analyze (see sql_analyze.c):
 * the normalised copy of the statement with its map back to the original
 * (step 1), a small tokenizer over SQL text, and the repairs of SQLite-only
 * constructs that PostgreSQL's parser rejects (step 2).
 */
#include "pipeline/sql/sql_analyze_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pipeline/sql/sql_text.h"

/* ---------------------------------------------------------------- text -- */

void sa_ntext_release(struct ntext *t)
{
	free(t->s);
	free(t->map);
	memset(t, 0, sizeof(*t));
}

/* Append c standing for original offset orig; -1 on allocation failure. */
static int ntext_put(struct ntext *t, char c, size_t orig)
{
	if (t->len + 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		char *s = realloc(t->s, cap);
		if (!s)
			return -1;
		t->s = s;
		size_t *map = realloc(t->map, cap * sizeof(*map));
		if (!map)
			return -1;
		t->map = map;
		t->cap = cap;
	}
	t->s[t->len] = c;
	t->map[t->len] = orig;
	t->len++;
	t->s[t->len] = '\0';
	return 0;
}

/* Append n bytes of src, byte i standing for orig_of[i] (or for orig when orig_of is NULL). */
static int ntext_put_n(struct ntext *t, const char *src, size_t n, const size_t *orig_of, size_t orig)
{
	for (size_t i = 0; i < n; i++)
		if (ntext_put(t, src[i], orig_of ? orig_of[i] : orig) < 0)
			return -1;
	return 0;
}

/* Close t: map[len] = orig_len. */
static int ntext_finish(struct ntext *t, size_t orig_len)
{
	if (ntext_put(t, '\0', orig_len) < 0)
		return -1;
	t->len--;
	return 0;
}

/* Original offset of copy offset pos (clamped). */
size_t sa_ntext_orig(const struct ntext *t, size_t pos)
{
	return t->map[pos > t->len ? t->len : pos];
}

/* End of the quoted token opening at s[p] with quote q (doubled q is an escape); len when unterminated. */
static size_t quoted_end(const char *s, size_t len, size_t p, char close)
{
	size_t i = p + 1;
	while (i < len) {
		if (s[i] == close) {
			if (close != ']' && i + 1 < len && s[i + 1] == close) {
				i += 2;
				continue;
			}
			return i + 1;
		}
		i++;
	}
	return len;
}

/* End of the comment opening at s[p] (-- or / *), else p. */
static size_t comment_end(const char *s, size_t len, size_t p)
{
	if (p + 1 < len && s[p] == '-' && s[p + 1] == '-') {
		const char *nl = memchr(s + p, '\n', len - p);
		return nl ? (size_t)(nl - s) : len;
	}
	if (p + 1 < len && s[p] == '/' && s[p + 1] == '*') {
		const char *end = strstr(s + p + 2, "*/");
		return end ? (size_t)(end - s) + 2 : len;
	}
	return p;
}

/*
 * Copy `x` or [x] at s[p] (ending before end) as "x", doubling any " inside
 * and undoubling ``.  Returns 0 or -1 (no memory).
 */
static int put_requoted(struct ntext *t, const char *s, size_t p, size_t end)
{
	char open = s[p], close = open == '[' ? ']' : '`';
	bool closed = end > p + 1 && s[end - 1] == close;
	size_t stop = closed ? end - 1 : end;

	if (!closed) /* unterminated: leave it as it was, the parser will say so */
		return ntext_put_n(t, s + p, end - p, NULL, p) < 0 ? -1 : 0;
	if (ntext_put(t, '"', p) < 0)
		return -1;
	for (size_t i = p + 1; i < stop; i++) {
		if (open == '`' && s[i] == '`' && i + 1 < stop && s[i + 1] == '`')
			i++;
		if (s[i] == '"' && ntext_put(t, '"', i) < 0)
			return -1;
		if (ntext_put(t, s[i], i) < 0)
			return -1;
	}
	return ntext_put(t, '"', end - 1);
}

/*
 * The copy of sql that libpg_query reads: for SQLite, `x` and [x] become
 * "x" and == becomes =, outside strings and comments; for PostgreSQL an
 * exact copy.  Returns 0 or -1 (no memory).
 */
int sa_normalise(const char *sql, size_t len, enum sql_dialect dialect, struct ntext *t, bool *ret_changed)
{
	size_t p = 0;
	bool changed = false;

	while (p < len) {
		char c = sql[p];
		size_t end;

		if (dialect == SQL_DIALECT_SQLITE && (c == '`' || c == '[')) {
			end = quoted_end(sql, len, p, c == '[' ? ']' : '`');
			if (put_requoted(t, sql, p, end) < 0)
				return -1;
			changed = true;
		} else if (dialect == SQL_DIALECT_SQLITE && c == '=' && p + 1 < len && sql[p + 1] == '=') {
			if (ntext_put(t, '=', p) < 0)
				return -1;
			end = p + 2;
			changed = true;
		} else {
			if (c == '\'' || c == '"')
				end = quoted_end(sql, len, p, c);
			else if ((end = comment_end(sql, len, p)) == p)
				end = p + 1;
			if (ntext_put_n(t, sql + p, end - p, NULL, 0) < 0)
				return -1;
			for (size_t i = p; i < end; i++) /* fix the map: byte for byte */
				t->map[t->len - (end - i)] = i;
		}
		p = end;
	}
	*ret_changed = changed;
	return ntext_finish(t, len);
}

/* ------------------------------------------------------------- tokens -- */

static bool is_ident_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static bool is_ident_char(unsigned char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9') || c == '$';
}

/* The token at or after s[p] (whitespace and comments skipped). */
struct tok sa_next_tok(const char *s, size_t len, size_t p)
{
	struct tok t = {TOK_END, len, len};

	if (p >= len)
		return t;
	p = (size_t)(sql_skip_space_and_comments(s + p) - s);
	if (p >= len)
		return t;
	t.start = p;
	unsigned char c = (unsigned char)s[p];
	if (c == '\'' || c == '"' || c == '`' || c == '[') {
		t.kind = c == '\'' ? TOK_STRING : TOK_QUOTED;
		t.end = quoted_end(s, len, p, c == '[' ? ']' : (char)c);
	} else if (is_ident_start(c)) {
		t.kind = TOK_WORD;
		for (t.end = p + 1; t.end < len && is_ident_char((unsigned char)s[t.end]); t.end++)
			;
	} else if (c >= '0' && c <= '9') {
		t.kind = TOK_NUMBER;
		for (t.end = p + 1; t.end < len && s[t.end] >= '0' && s[t.end] <= '9'; t.end++)
			;
	} else {
		t.kind = TOK_PUNCT;
		t.end = p + 1;
	}
	return t;
}

bool sa_tok_is(const char *s, struct tok t, const char *word)
{
	size_t n = strlen(word);
	return (t.kind == TOK_WORD || t.kind == TOK_PUNCT) && t.end - t.start == n &&
	       strncasecmp(s + t.start, word, n) == 0;
}

/*
 * The identifier token t of s, unquoted, into buf; false when t is no
 * identifier or does not fit.
 */
bool sa_tok_ident(const char *s, struct tok t, char *buf, size_t size)
{
	size_t n = 0, i = t.start, stop = t.end;

	if (t.kind == TOK_QUOTED) {
		char close = s[i] == '[' ? ']' : s[i];
		if (stop - i < 2 || s[stop - 1] != close)
			return false;
		for (i++, stop--; i < stop; i++) {
			if (s[i] == close && close != ']')
				i++; /* doubled quote */
			if (n + 1 >= size)
				return false;
			buf[n++] = s[i];
		}
	} else if (t.kind == TOK_WORD) {
		for (; i < stop; i++) {
			if (n + 1 >= size)
				return false;
			buf[n++] = s[i];
		}
	} else {
		return false;
	}
	buf[n] = '\0';
	return true;
}

/* ------------------------------------------------------------- repairs -- */

/* Replace [from, to) of t by repl (its bytes standing for original offset of `from`). */
static int ntext_splice(struct ntext *t, size_t from, size_t to, const char *repl)
{
	struct ntext out = {0};
	size_t anchor = sa_ntext_orig(t, from);

	if (ntext_put_n(&out, t->s, from, t->map, 0) < 0 || ntext_put_n(&out, repl, strlen(repl), NULL, anchor) < 0 ||
	    ntext_put_n(&out, t->s + to, t->len - to, t->map + to, 0) < 0 || ntext_finish(&out, t->map[t->len]) < 0) {
		sa_ntext_release(&out);
		return -1;
	}
	sa_ntext_release(t);
	*t = out;
	return 0;
}

/* Offset just past the parenthesis closing the one at s[p], or 0 when unbalanced. */
static size_t matching_paren(const char *s, size_t len, size_t p)
{
	int depth = 0;

	for (struct tok t = sa_next_tok(s, len, p); t.kind != TOK_END; t = sa_next_tok(s, len, t.end)) {
		if (sa_tok_is(s, t, "("))
			depth++;
		else if (sa_tok_is(s, t, ")") && --depth == 0)
			return t.end;
	}
	return 0;
}

/* Keywords that may follow a FROM item, so are no alias. */
static const char *const after_item_words[] = {
	"on", "using", "join", "inner", "left", "right", "full", "outer", "cross", "natural", "where", "group",
	"order", "limit", "having", "union", "intersect", "except", "window", "offset", "indexed", "not",
};

static bool is_after_item_word(const char *s, struct tok t)
{
	for (size_t i = 0; i < ARRAY_SIZE(after_item_words); i++)
		if (sa_tok_is(s, t, after_item_words[i]))
			return true;
	return false;
}

/* A name SQLite reads as an identifier in FROM: a word, a quoted identifier or a 'string'. */
static bool is_from_name(struct tok t)
{
	return t.kind == TOK_WORD || t.kind == TOK_QUOTED || t.kind == TOK_STRING;
}

/*
 * Offset just past the FROM item whose first token is t: "name", "schema.
 * name" or "( ... )", then "[AS] alias"; 0 when t starts no such item (a
 * table-valued function call, say).
 */
static size_t from_item_end(const char *s, size_t len, struct tok t)
{
	size_t end;

	if (sa_tok_is(s, t, "(")) {
		if (!(end = matching_paren(s, len, t.start)))
			return 0;
	} else if (is_from_name(t)) {
		end = t.end;
		struct tok dot = sa_next_tok(s, len, end);
		if (sa_tok_is(s, dot, "(")) /* a function call */
			return 0;
		if (sa_tok_is(s, dot, ".")) {
			struct tok name = sa_next_tok(s, len, dot.end);
			if (!is_from_name(name))
				return 0;
			end = name.end;
		}
	} else {
		return 0;
	}
	struct tok alias = sa_next_tok(s, len, end);
	if (sa_tok_is(s, alias, "as")) {
		alias = sa_next_tok(s, len, alias.end);
		return is_from_name(alias) ? alias.end : 0;
	}
	if ((alias.kind == TOK_WORD && !is_after_item_word(s, alias)) || alias.kind == TOK_QUOTED ||
	    alias.kind == TOK_STRING)
		return alias.end;
	return end;
}

/*
 * SQLite joins left to right and a JOIN's ON or USING is optional: "a JOIN
 * b WHERE ..." is a cross join, and in "a JOIN b JOIN c ON x AND y" the one
 * ON holds the conditions of both joins (PostgreSQL reads the latter as
 * "a JOIN (b JOIN c ON x AND y)" and wants a second ON).  Adds "ON TRUE"
 * after every "[INNER|LEFT...] JOIN item" of t that has no ON or USING
 * (CROSS and NATURAL joins take none).  *ret_done tells whether any was
 * added.  Returns 0 or -1 (no memory).
 */
static int add_missing_join_conditions(struct ntext *t, bool *ret_done)
{
	bool needs_none = false; /* the join operator being read is CROSS or NATURAL */

	for (struct tok k = sa_next_tok(t->s, t->len, 0); k.kind != TOK_END; k = sa_next_tok(t->s, t->len, k.end)) {
		if (sa_tok_is(t->s, k, "cross") || sa_tok_is(t->s, k, "natural")) {
			needs_none = true;
			continue;
		}
		if (sa_tok_is(t->s, k, "inner") || sa_tok_is(t->s, k, "left") || sa_tok_is(t->s, k, "right") ||
		    sa_tok_is(t->s, k, "full") || sa_tok_is(t->s, k, "outer"))
			continue;
		bool skip = needs_none || !sa_tok_is(t->s, k, "join");
		needs_none = false;
		size_t end = skip ? 0 : from_item_end(t->s, t->len, sa_next_tok(t->s, t->len, k.end));
		if (!end)
			continue;
		struct tok next = sa_next_tok(t->s, t->len, end);
		if (sa_tok_is(t->s, next, "on") || sa_tok_is(t->s, next, "using"))
			continue;
		if (ntext_splice(t, end, end, " ON TRUE") < 0) /* after k: the scan goes on from k.end */
			return -1;
		*ret_done = true;
	}
	return 0;
}

/* Replace the 'string' token str of t by the "identifier" it names; *ret_end: where it now ends. */
static int requote_string(struct ntext *t, struct tok str, size_t *ret_end)
{
	struct ntext q = {0};
	int r = -1;

	if (ntext_put(&q, '"', 0) < 0)
		goto out;
	for (size_t i = str.start + 1; i + 1 < str.end; i++) {
		if (t->s[i] == '\'')
			i++; /* '' stands for ' */
		if ((t->s[i] == '"' && ntext_put(&q, '"', 0) < 0) || ntext_put(&q, t->s[i], 0) < 0)
			goto out;
	}
	if (ntext_put(&q, '"', 0) < 0)
		goto out;
	*ret_end = str.start + q.len;
	r = ntext_splice(t, str.start, str.end, q.s);
out:
	sa_ntext_release(&q);
	return r;
}

/*
 * SQLite reads a 'string' where only an identifier may stand as that
 * identifier: FROM 't', JOIN 't', AS 'alias', 'alias'.column.  When the
 * parse error at pos is a string (or a "." right after one), that string
 * and every other one in such a place become double-quoted identifiers
 * (PostgreSQL admits no string there, so none is a string SQLite would read
 * as one).  *ret_done tells whether the one at pos was.  Returns 0 or -1
 * (no memory).
 */
static int requote_string_identifiers(struct ntext *t, size_t pos, bool *ret_done)
{
	struct tok prev = {TOK_END, 0, 0};

	for (struct tok k = sa_next_tok(t->s, t->len, 0); k.kind != TOK_END; k = sa_next_tok(t->s, t->len, k.end)) {
		struct tok next = sa_next_tok(t->s, t->len, k.end);
		bool at_error = k.start == pos || (next.start == pos && sa_tok_is(t->s, next, "."));
		bool named = sa_tok_is(t->s, prev, "from") || sa_tok_is(t->s, prev, "join") ||
			     sa_tok_is(t->s, prev, "as") || sa_tok_is(t->s, next, ".");
		prev = k;
		if (k.kind != TOK_STRING || k.end - k.start < 2 || t->s[k.end - 1] != '\'' || !(at_error || named))
			continue;
		if (requote_string(t, k, &k.end) < 0)
			return -1;
		*ret_done |= at_error;
		prev = k;
	}
	return 0;
}

/*
 * Rewrite, in t, the SQLite-only construct a parse error at 1-based
 * position cursor (0: none) with message msg points at.  *ret_done is false
 * when there is nothing to repair.  n numbers the added aliases.  Returns 0
 * or -1 (no memory).
 */
int sa_repair(struct ntext *t, const char *msg, int cursor, int n, bool *ret_done)
{
	size_t pos = cursor > 0 ? (size_t)cursor - 1 : t->len;
	char buf[64];

	*ret_done = false;
	if (pos > t->len)
		return 0;
	if (strncmp(msg, "subquery in FROM must have an alias", 35) == 0) {
		struct tok open = sa_next_tok(t->s, t->len, pos);
		size_t close = sa_tok_is(t->s, open, "(") ? matching_paren(t->s, t->len, open.start) : 0;
		if (!close)
			return 0;
		snprintf(buf, sizeof(buf), " AS " DERIVED_ALIAS_PREFIX "%d ", n);
		*ret_done = true;
		return ntext_splice(t, close, close, buf);
	}
	if (strncmp(msg, "LIMIT #,# syntax is not supported", 33) == 0) {
		struct tok lim = sa_next_tok(t->s, t->len, pos);
		struct tok a = sa_next_tok(t->s, t->len, lim.end);
		struct tok comma = sa_next_tok(t->s, t->len, a.end);
		struct tok b = sa_next_tok(t->s, t->len, comma.end);
		if (!sa_tok_is(t->s, lim, "limit") || a.kind != TOK_NUMBER || !sa_tok_is(t->s, comma, ",") ||
		    b.kind != TOK_NUMBER || a.end - a.start > 18 || b.end - b.start > 18)
			return 0;
		snprintf(buf, sizeof(buf), "LIMIT %.*s OFFSET %.*s", (int)(b.end - b.start), t->s + b.start,
			 (int)(a.end - a.start), t->s + a.start);
		*ret_done = true;
		return ntext_splice(t, lim.start, b.end, buf);
	}
	if (strncmp(msg, "syntax error at", 15) != 0)
		return 0;
	if (requote_string_identifiers(t, pos, ret_done) < 0)
		return -1;
	return *ret_done ? 0 : add_missing_join_conditions(t, ret_done);
}
