/*
 * sql_analyze.c - extracts facts about a statement from libpg_query's parse
 * tree (see sql_analyze.h for what and why).
 *
 * Three steps:
 *   1. Text.  For SQLite the statement is copied with SQLite-only tokens
 *      rewritten (backticks, brackets, ==).  The copy carries a map from
 *      each of its bytes to a byte of the original, so parser positions
 *      (node "location", error "cursorpos") always lead back to the
 *      original text: to report names as written and errors where the
 *      caller's text has them.
 *   2. Parse, through sql_guard_pg_parse_tree (libpg_query runs only on the
 *      guard's parser threads).  For SQLite, a failed parse whose error
 *      names a construct SQLite accepts (FROM subquery without alias, JOIN
 *      without ON, LIMIT n, m) is repaired in the copy and retried.
 *   3. Walk the JSON tree once, depth-first, with a small context (block,
 *      clause, inside an aggregate, on an AND-only path).  A SelectStmt is
 *      walked in a fixed order - WITH, FROM, select list, WHERE, GROUP BY,
 *      HAVING, ORDER BY, the rest - so that qualifiers resolve against the
 *      FROM items of the block and its parents, which are already known.
 *      Node types the walk does not know are walked member by member, so
 *      column references and subqueries are found wherever they stand.
 *
 * Every array grows under SQL_ANALYZE_MAX_ITEMS and the walk under
 * SQL_ANALYZE_MAX_DEPTH; anything unreadable in the tree is skipped, never
 * trusted.
 */
#include "pipeline/sql/sql_analyze.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pipeline/sql/sql_guard_pg.h"
#include "pipeline/sql/sql_text.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Longest identifier recovered from the original text; longer ones keep the parser's spelling. */
#define IDENT_BUF 256

/* Alias given to a FROM subquery that had none (SQLite allows that, PostgreSQL 15 does not). */
#define DERIVED_ALIAS_PREFIX "t2s_derived_"

/* ---------------------------------------------------------------- text -- */

/* A copy of the statement with, for each byte, the offset of the original byte it stands for. */
struct ntext {
	char *s;      /* NUL-terminated */
	size_t *map;  /* map[i] for i < len; map[len] = length of the original */
	size_t len, cap;
};

static void ntext_release(struct ntext *t)
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
static size_t ntext_orig(const struct ntext *t, size_t pos)
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
static int normalise(const char *sql, size_t len, enum sql_dialect dialect, struct ntext *t, bool *ret_changed)
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

enum tok_kind { TOK_END, TOK_WORD, TOK_QUOTED, TOK_STRING, TOK_NUMBER, TOK_PUNCT };

struct tok {
	enum tok_kind kind;
	size_t start, end;
};

static bool is_ident_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static bool is_ident_char(unsigned char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9') || c == '$';
}

/* The token at or after s[p] (whitespace and comments skipped). */
static struct tok next_tok(const char *s, size_t len, size_t p)
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

static bool tok_is(const char *s, struct tok t, const char *word)
{
	size_t n = strlen(word);
	return (t.kind == TOK_WORD || t.kind == TOK_PUNCT) && t.end - t.start == n &&
	       strncasecmp(s + t.start, word, n) == 0;
}

/*
 * The identifier token t of s, unquoted, into buf; false when t is no
 * identifier or does not fit.
 */
static bool tok_ident(const char *s, struct tok t, char *buf, size_t size)
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
	size_t anchor = ntext_orig(t, from);

	if (ntext_put_n(&out, t->s, from, t->map, 0) < 0 || ntext_put_n(&out, repl, strlen(repl), NULL, anchor) < 0 ||
	    ntext_put_n(&out, t->s + to, t->len - to, t->map + to, 0) < 0 || ntext_finish(&out, t->map[t->len]) < 0) {
		ntext_release(&out);
		return -1;
	}
	ntext_release(t);
	*t = out;
	return 0;
}

/* Offset just past the parenthesis closing the one at s[p], or 0 when unbalanced. */
static size_t matching_paren(const char *s, size_t len, size_t p)
{
	int depth = 0;

	for (struct tok t = next_tok(s, len, p); t.kind != TOK_END; t = next_tok(s, len, t.end)) {
		if (tok_is(s, t, "("))
			depth++;
		else if (tok_is(s, t, ")") && --depth == 0)
			return t.end;
	}
	return 0;
}

/*
 * True when the tokens of s before offset pos end with "JOIN name [[AS]
 * alias]" (name possibly schema-qualified): a join that lacks ON.
 */
static bool join_without_on_before(const char *s, size_t len, size_t pos)
{
	struct tok last[6];
	size_t n = 0;

	for (struct tok t = next_tok(s, len, 0); t.kind != TOK_END && t.start < pos; t = next_tok(s, len, t.end)) {
		if (n == ARRAY_SIZE(last)) {
			memmove(last, last + 1, sizeof(last) - sizeof(last[0]));
			n--;
		}
		last[n++] = t;
	}
	/* Try each shape, longest first: JOIN a . b AS c / JOIN a . b c / JOIN a AS c / JOIN a c / JOIN a . b / JOIN a */
	for (size_t k = n; k-- > 0;) {
		if (!tok_is(s, last[k], "join"))
			continue;
		size_t i = k + 1, m = n - i;
		bool ident[6] = {0};
		for (size_t j = i; j < n; j++)
			ident[j - i] = last[j].kind == TOK_WORD || last[j].kind == TOK_QUOTED;
		if (m == 1 && ident[0])
			return true;
		if (m == 2 && ident[0] && ident[1])
			return true;
		if (m == 3 && ident[0] && ((tok_is(s, last[i + 1], ".") && ident[2]) ||
					   (tok_is(s, last[i + 1], "as") && ident[2])))
			return true;
		if (m == 4 && ident[0] && tok_is(s, last[i + 1], ".") && ident[2] && ident[3])
			return true;
		if (m == 5 && ident[0] && tok_is(s, last[i + 1], ".") && ident[2] && tok_is(s, last[i + 3], "as") &&
		    ident[4])
			return true;
		return false;
	}
	return false;
}

/*
 * Rewrite, in t, the SQLite-only construct a parse error at 1-based
 * position cursor (0: none) with message msg points at.  *ret_done is false
 * when there is nothing to repair.  n numbers the added aliases.  Returns 0
 * or -1 (no memory).
 */
static int repair(struct ntext *t, const char *msg, int cursor, int n, bool *ret_done)
{
	size_t pos = cursor > 0 ? (size_t)cursor - 1 : t->len;
	char buf[64];

	*ret_done = false;
	if (pos > t->len)
		return 0;
	if (strncmp(msg, "subquery in FROM must have an alias", 35) == 0) {
		struct tok open = next_tok(t->s, t->len, pos);
		size_t close = tok_is(t->s, open, "(") ? matching_paren(t->s, t->len, open.start) : 0;
		if (!close)
			return 0;
		snprintf(buf, sizeof(buf), " AS " DERIVED_ALIAS_PREFIX "%d ", n);
		*ret_done = true;
		return ntext_splice(t, close, close, buf);
	}
	if (strncmp(msg, "LIMIT #,# syntax is not supported", 33) == 0) {
		struct tok lim = next_tok(t->s, t->len, pos);
		struct tok a = next_tok(t->s, t->len, lim.end);
		struct tok comma = next_tok(t->s, t->len, a.end);
		struct tok b = next_tok(t->s, t->len, comma.end);
		if (!tok_is(t->s, lim, "limit") || a.kind != TOK_NUMBER || !tok_is(t->s, comma, ",") ||
		    b.kind != TOK_NUMBER || a.end - a.start > 18 || b.end - b.start > 18)
			return 0;
		snprintf(buf, sizeof(buf), "LIMIT %.*s OFFSET %.*s", (int)(b.end - b.start), t->s + b.start,
			 (int)(a.end - a.start), t->s + a.start);
		*ret_done = true;
		return ntext_splice(t, lim.start, b.end, buf);
	}
	if (strncmp(msg, "syntax error at", 15) == 0 && join_without_on_before(t->s, t->len, pos)) {
		*ret_done = true;
		return ntext_splice(t, pos, pos, " ON TRUE ");
	}
	return 0;
}

/* -------------------------------------------------------------- walker -- */

/* Aggregate functions of SQLite and PostgreSQL, by lower-cased name. */
static const char *const aggregate_names[] = {
	"count", "sum", "avg", "min", "max", "total", "group_concat", "string_agg", "array_agg",
	"json_group_array", "json_group_object", "json_agg", "jsonb_agg", "json_object_agg",
	"jsonb_object_agg", "bool_and", "bool_or", "every", "bit_and", "bit_or", "bit_xor", "stddev",
	"stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp", "median", "mode",
	"percentile_cont", "percentile_disc", "corr", "covar_pop", "covar_samp", "regr_avgx", "regr_avgy",
	"regr_count", "regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy",
	"xmlagg", "range_agg", "range_intersect_agg",
};

/* One analysis in progress. */
struct an {
	struct sql_analysis *a;
	enum sql_dialect dialect;
	const char *orig;         /* the caller's text */
	const struct ntext *nt;   /* the parsed copy */
	size_t cap_tables, cap_columns, cap_joins, cap_blocks, cap_literals, cap_using;
	int *col_target;          /* per column: its select-list entry, or -1 */
	size_t cap_col_target;
	const char **ctes;        /* visible CTE names (borrowed from the tree) */
	size_t n_ctes, cap_ctes;
	struct t2s_error *err;
};

/* Where the walk stands. */
struct wc {
	int scope;                /* block, -1 outside any SELECT */
	enum sql_clause clause;
	bool in_agg;
	bool conjunct;            /* reached from a WHERE/ON root through AND only */
	bool disjunct;            /* reached from a WHERE/ON root through AND and OR (not NOT) */
	int target;               /* select-list entry being walked, or -1 */
	const json_t *targets;    /* the block's targetList, for output names */
	int depth;
};

static int walk(struct an *an, const json_t *node, struct wc wc);
static int walk_select(struct an *an, const json_t *body, int parent, enum sql_set_op op, int depth,
		       int *ret_first);

static int too_many(struct an *an)
{
	return t2s_error_set(an->err, T2S_ERR_SQL_REJECTED, "statement too complex to analyse (more than %d %s)",
			     SQL_ANALYZE_MAX_ITEMS, "items of one kind");
}

static int nomem(struct an *an)
{
	return t2s_error_set(an->err, T2S_ERR_NOMEM, "out of memory analysing the statement");
}

/* Make room for one more element of size `size` in *arr (count n, capacity *cap). */
static int grow(struct an *an, void **arr, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return 0;
	if (n >= SQL_ANALYZE_MAX_ITEMS)
		return too_many(an);
	size_t c = *cap ? *cap * 2 : 16;
	if (c > SQL_ANALYZE_MAX_ITEMS)
		c = SQL_ANALYZE_MAX_ITEMS;
	void *p = realloc(*arr, c * size);
	if (!p)
		return nomem(an);
	*arr = p;
	*cap = c;
	return 0;
}

/* A copy of s, or NULL for NULL; *failed set when the copy could not be made. */
static char *dup_or_null(const char *s, bool *failed)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*failed = true;
	return d;
}

static const char *member_string(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* The body of a node wrapped as {"Type": body}, or NULL. */
static const json_t *node_body(const json_t *node, const char *type)
{
	return json_object_get(node, type);
}

/* The node's type key when node is {"Type": {...}}, else NULL. */
static const char *node_type(const json_t *node)
{
	if (!json_is_object(node) || json_object_size(node) != 1)
		return NULL;
	const char *key = json_object_iter_key(json_object_iter((json_t *)node));
	return key && key[0] >= 'A' && key[0] <= 'Z' ? key : NULL;
}

/* The sval of a {"String": {"sval": ...}} node, or NULL. */
static const char *string_node(const json_t *node)
{
	return member_string(node_body(node, "String"), "sval");
}

/* Byte offset in the original text of a node's "location", or SIZE_MAX. */
static size_t orig_location(struct an *an, const json_t *body)
{
	const json_t *loc = json_object_get(body, "location");
	if (!json_is_integer(loc) || json_integer_value(loc) < 0 || (size_t)json_integer_value(loc) >= an->nt->len)
		return SIZE_MAX;
	return ntext_orig(an->nt, (size_t)json_integer_value(loc));
}

/*
 * Spellings of the dotted name at original offset pos (a.b.c, parts quoted
 * any SQLite way): parts[i] receives part i when it equals folded[i]
 * case-insensitively, else folded[i] stays.  Only in the SQLite dialect.
 * Returns the offset after the last part read.
 */
static size_t recover_names(struct an *an, size_t pos, const char **folded, char (*bufs)[IDENT_BUF], size_t n)
{
	const char *s = an->orig;
	size_t len = an->nt->map[an->nt->len];

	if (an->dialect != SQL_DIALECT_SQLITE || pos == SIZE_MAX)
		return SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		struct tok t = next_tok(s, len, pos);
		if (i > 0) {
			if (!tok_is(s, t, "."))
				return SIZE_MAX;
			t = next_tok(s, len, t.end);
		}
		if (!folded[i] || !tok_ident(s, t, bufs[i], IDENT_BUF) || strcasecmp(bufs[i], folded[i]) != 0)
			return SIZE_MAX;
		folded[i] = bufs[i];
		pos = t.end;
	}
	return pos;
}

/* The SQLite spelling of alias (folded) written after original offset pos ("[AS] alias"). */
static const char *recover_alias(struct an *an, size_t pos, const char *folded, char *buf)
{
	const char *s = an->orig;
	size_t len = an->nt->map[an->nt->len];

	if (pos == SIZE_MAX || !folded)
		return folded;
	struct tok t = next_tok(s, len, pos);
	if (tok_is(s, t, "as"))
		t = next_tok(s, len, t.end);
	if (tok_ident(s, t, buf, IDENT_BUF) && strcasecmp(buf, folded) == 0)
		return buf;
	return folded;
}

static bool cte_visible(struct an *an, const char *name)
{
	for (size_t i = 0; i < an->n_ctes; i++)
		if (strcasecmp(an->ctes[i], name) == 0)
			return true;
	return false;
}

/* Append a table ref; *ret_index its index. */
static int add_table(struct an *an, const char *schema, const char *name, const char *alias, int scope,
		     int derived_block, int *ret_index)
{
	struct sql_analysis *a = an->a;
	bool failed = false;
	int r = grow(an, (void **)&a->tables, a->n_tables, &an->cap_tables, sizeof(*a->tables));
	if (r < 0)
		return r;
	struct sql_table_ref *t = &a->tables[a->n_tables];
	memset(t, 0, sizeof(*t));
	t->schema = dup_or_null(schema, &failed);
	t->name = dup_or_null(name, &failed);
	t->alias = dup_or_null(alias, &failed);
	t->scope = scope;
	t->is_derived = derived_block >= 0;
	t->derived_block = derived_block;
	t->is_cte = !t->is_derived && !schema && name && cte_visible(an, name);
	a->n_tables++;
	if (failed)
		return nomem(an);
	*ret_index = (int)a->n_tables - 1;
	return 0;
}

/* A FROM RangeVar. */
static int add_range_var(struct an *an, const json_t *rv, struct wc wc)
{
	const char *parts[2] = {member_string(rv, "schemaname"), member_string(rv, "relname")};
	const char *alias = member_string(json_object_get(rv, "alias"), "aliasname");
	char bufs[2][IDENT_BUF], alias_buf[IDENT_BUF];
	int index;

	if (!parts[1])
		return 0;
	size_t pos = orig_location(an, rv), end;
	if (parts[0])
		end = recover_names(an, pos, parts, bufs, 2);
	else
		end = recover_names(an, pos, parts + 1, bufs + 1, 1);
	if (an->dialect == SQL_DIALECT_SQLITE)
		alias = recover_alias(an, end, alias, alias_buf);
	return add_table(an, parts[0], parts[1], alias, wc.scope, -1, &index);
}

static bool same_name(const char *x, const char *y)
{
	return x && y && strcasecmp(x, y) == 0;
}

/* Blocks searched outwards for a qualifier: the column's own and this many enclosing ones. */
#define RESOLVE_MAX_HOPS 64

/*
 * The table ref that qualifier names, in block scope or the nearest
 * enclosing block that has one, or -1.  One pass over the tables, so the
 * cost stays linear in their number however deep the nesting.
 */
static int resolve(struct an *an, const char *qualifier, int scope)
{
	const struct sql_analysis *a = an->a;
	int chain[RESOLVE_MAX_HOPS + 1], n_chain = 0, best = -1, best_hops = RESOLVE_MAX_HOPS + 1;

	if (!qualifier)
		return -1;
	for (int s = scope; s >= 0 && (size_t)s < a->n_blocks && n_chain <= RESOLVE_MAX_HOPS; s = a->blocks[s].parent)
		chain[n_chain++] = s;
	for (size_t i = 0; i < a->n_tables; i++) {
		const struct sql_table_ref *t = &a->tables[i];
		if (!same_name(t->alias ? t->alias : t->name, qualifier))
			continue;
		for (int h = 0; h < n_chain && h < best_hops; h++)
			if (chain[h] == t->scope) {
				best = (int)i;
				best_hops = h;
				break;
			}
	}
	return best;
}

/* True when name equals an output name (AS alias) of the select list targets. */
static bool is_output_name(const json_t *targets, const char *name)
{
	size_t i;
	const json_t *t;

	json_array_foreach(targets, i, t) {
		if (same_name(member_string(node_body(t, "ResTarget"), "name"), name))
			return true;
	}
	return false;
}

/* Append a string literal. */
static int add_literal(struct an *an, const char *value, int scope, int compared, int identifier)
{
	struct sql_analysis *a = an->a;
	int r = grow(an, (void **)&a->string_literals, a->n_string_literals, &an->cap_literals,
		     sizeof(*a->string_literals));
	if (r < 0)
		return r;
	struct sql_string_literal *l = &a->string_literals[a->n_string_literals];
	l->value = strdup(value);
	if (!l->value)
		return nomem(an);
	l->scope = scope;
	l->compared_column = compared;
	l->identifier_column = identifier;
	a->n_string_literals++;
	return 0;
}

/* The value of an A_Const body holding a string, or NULL. */
static const char *const_string(const json_t *aconst)
{
	const json_t *sval = json_object_get(aconst, "sval");
	if (!json_is_object(sval))
		return NULL;
	const char *v = member_string(sval, "sval");
	return v ? v : ""; /* the empty string is printed as {} */
}

/* Append the ColumnRef body cr; *ret_index its index. */
static int add_column(struct an *an, const json_t *cr, struct wc wc, int *ret_index)
{
	struct sql_analysis *a = an->a;
	const json_t *fields = json_object_get(cr, "fields");
	size_t n = json_array_size(fields);
	const char *parts[3] = {NULL, NULL, NULL};
	char bufs[3][IDENT_BUF];
	bool star = false, failed = false;
	int r;

	if (n == 0)
		return 0;
	/* keep the last (at most) three parts: [schema.]table.column */
	size_t first = n > 3 ? n - 3 : 0, k = n - first;
	for (size_t i = first; i < n; i++) {
		const json_t *f = json_array_get(fields, i);
		if (i == n - 1 && node_body(f, "A_Star"))
			star = true;
		else
			parts[i - first] = string_node(f);
	}
	if (!star && !parts[k - 1])
		return 0;
	size_t pos = orig_location(an, cr);
	recover_names(an, pos, parts, bufs, star ? k - 1 : k);

	r = grow(an, (void **)&a->columns, a->n_columns, &an->cap_columns, sizeof(*a->columns));
	if (r < 0)
		return r;
	if (an->cap_col_target < an->cap_columns) {
		int *ct = realloc(an->col_target, an->cap_columns * sizeof(*ct));
		if (!ct)
			return nomem(an);
		an->col_target = ct;
		an->cap_col_target = an->cap_columns;
	}
	struct sql_column_ref *c = &a->columns[a->n_columns];
	memset(c, 0, sizeof(*c));
	c->name = dup_or_null(star ? "*" : parts[k - 1], &failed);
	c->qualifier = k >= 2 ? dup_or_null(parts[k - 2], &failed) : NULL;
	c->scope = wc.scope;
	c->clause = wc.clause;
	c->in_aggregate = wc.in_agg;
	c->table_ref = resolve(an, c->qualifier, wc.scope);
	c->names_output = !star && k == 1 && wc.targets &&
			  (wc.clause == SQL_IN_GROUP_BY || wc.clause == SQL_IN_HAVING || wc.clause == SQL_IN_ORDER_BY) &&
			  is_output_name(wc.targets, c->name);
	c->maybe_string = an->dialect == SQL_DIALECT_SQLITE && !star && k == 1 && pos != SIZE_MAX &&
			  an->orig[pos] == '"' && !c->names_output;
	an->col_target[a->n_columns] = wc.clause == SQL_IN_SELECT ? wc.target : -1;
	a->n_columns++;
	if (failed)
		return nomem(an);
	*ret_index = (int)a->n_columns - 1;
	if (c->maybe_string)
		return add_literal(an, c->name, wc.scope, -1, *ret_index);
	return 0;
}

/* Set compared_column of the literal standing for double-quoted column ref col, if any. */
static void compare_quoted(struct an *an, int col, int other)
{
	struct sql_analysis *a = an->a;
	for (size_t i = a->n_string_literals; i-- > 0 && a->n_string_literals - i <= 2;)
		if (a->string_literals[i].identifier_column == col)
			a->string_literals[i].compared_column = other;
}

static struct wc deeper(struct wc wc)
{
	wc.depth++;
	wc.conjunct = false;
	wc.disjunct = false;
	return wc;
}

/* Walk one operand of a comparison with column col: string constants get compared_column = col. */
static int walk_compared(struct an *an, const json_t *node, int col, struct wc wc)
{
	const json_t *c = node_body(node, "A_Const");
	const json_t *list = node_body(node, "List");
	const json_t *cr = node_body(node, "ColumnRef");

	if (cr) { /* x IN ("a", "b") in SQLite: double-quoted strings */
		int index = -1, r = add_column(an, cr, wc, &index);
		if (r == 0 && index >= 0)
			compare_quoted(an, index, col);
		return r;
	}
	if (c) {
		const char *v = const_string(c);
		return v ? add_literal(an, v, wc.scope, col, -1) : 0;
	}
	if (list) {
		size_t i;
		const json_t *item;
		json_array_foreach(json_object_get(list, "items"), i, item) {
			int r = walk_compared(an, item, col, deeper(wc));
			if (r < 0)
				return r;
		}
		return 0;
	}
	return walk(an, node, deeper(wc));
}

/* A_Expr: comparisons, joins, string constants compared with a column. */
static int walk_aexpr(struct an *an, const json_t *body, struct wc wc)
{
	const json_t *lexpr = json_object_get(body, "lexpr"), *rexpr = json_object_get(body, "rexpr");
	const json_t *lcr = node_body(lexpr, "ColumnRef"), *rcr = node_body(rexpr, "ColumnRef");
	const json_t *name = json_object_get(body, "name");
	const char *op = string_node(json_array_get(name, json_array_size(name) - 1));
	const char *kind = member_string(body, "kind");
	struct wc sub = deeper(wc);
	int l = -1, r = -1, rc;

	if (lcr && (rc = add_column(an, lcr, sub, &l)) < 0)
		return rc;
	if (rcr && (rc = add_column(an, rcr, sub, &r)) < 0)
		return rc;
	if (!lcr && (rc = r >= 0 ? walk_compared(an, lexpr, r, sub) : walk(an, lexpr, sub)) < 0)
		return rc;
	if (!rcr && (rc = l >= 0 ? walk_compared(an, rexpr, l, sub) : walk(an, rexpr, sub)) < 0)
		return rc;
	if (l < 0 || r < 0)
		return 0;

	compare_quoted(an, l, r);
	compare_quoted(an, r, l);
	const struct sql_analysis *a = an->a;
	const struct sql_column_ref *cl = &a->columns[l], *cr = &a->columns[r];
	if (!(wc.conjunct || wc.disjunct) || !kind || strcmp(kind, "AEXPR_OP") != 0 || !op || strcmp(op, "=") != 0)
		return 0;
	if (cl->table_ref < 0 || cr->table_ref < 0 || cl->table_ref == cr->table_ref ||
	    strcmp(cl->name, "*") == 0 || strcmp(cr->name, "*") == 0)
		return 0;
	if (a->tables[cl->table_ref].scope != wc.scope || a->tables[cr->table_ref].scope != wc.scope)
		return 0;
	rc = grow(an, (void **)&an->a->joins, a->n_joins, &an->cap_joins, sizeof(*a->joins));
	if (rc < 0)
		return rc;
	an->a->joins[a->n_joins] = (struct sql_join_pred){.left_column = l, .right_column = r, .scope = wc.scope,
							  .conjunct = wc.conjunct};
	an->a->n_joins++;
	return 0;
}

/* Lower-cased last part of a funcname list into buf; false when unreadable. */
static bool function_name(const json_t *funcname, char *buf, size_t size)
{
	const char *name = string_node(json_array_get(funcname, json_array_size(funcname) - 1));
	size_t i, n;

	if (!name || (n = strlen(name)) >= size)
		return false;
	for (i = 0; i <= n; i++)
		buf[i] = (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] - 'A' + 'a') : name[i];
	return true;
}

/* True when FuncCall body fc is an aggregate call (not a window call, not SQLite's scalar min/max). */
static bool is_aggregate(const json_t *fc)
{
	char name[64];

	if (json_object_get(fc, "over") || !function_name(json_object_get(fc, "funcname"), name, sizeof(name)))
		return false;
	if ((strcmp(name, "min") == 0 || strcmp(name, "max") == 0) && json_array_size(json_object_get(fc, "args")) > 1)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(aggregate_names); i++)
		if (strcmp(name, aggregate_names[i]) == 0)
			return true;
	return false;
}

static int walk_func(struct an *an, const json_t *body, struct wc wc)
{
	struct sql_block *b = wc.scope >= 0 ? &an->a->blocks[wc.scope] : NULL;

	if (is_aggregate(body)) {
		if (b) {
			if (wc.in_agg)
				b->nested_aggregate = true;
			if (wc.clause == SQL_IN_SELECT)
				b->has_aggregate_in_select = true;
			else if (wc.clause == SQL_IN_WHERE || wc.clause == SQL_IN_JOIN_ON)
				b->aggregate_in_where = true;
			else if (wc.clause == SQL_IN_GROUP_BY)
				b->aggregate_in_group_by = true;
		}
		wc.in_agg = true;
	}
	return walk(an, body, deeper(wc));
}

/* One FROM item (RangeVar, JoinExpr, RangeSubselect, RangeFunction...). */
static int walk_from_item(struct an *an, const json_t *item, struct wc wc)
{
	const char *type = node_type(item);
	const json_t *body = type ? node_body(item, type) : NULL;
	struct sql_block *b;
	int r;

	if (wc.depth > SQL_ANALYZE_MAX_DEPTH)
		return t2s_error_set(an->err, T2S_ERR_SQL_REJECTED, "statement too deeply nested to analyse");
	if (!body)
		return walk(an, item, deeper(wc));
	if (strcmp(type, "JoinExpr") == 0) {
		struct wc on = deeper(wc);
		size_t left_start = an->a->n_tables;
		if ((r = walk_from_item(an, json_object_get(body, "larg"), deeper(wc))) < 0)
			return r;
		size_t right_start = an->a->n_tables;
		if ((r = walk_from_item(an, json_object_get(body, "rarg"), deeper(wc))) < 0)
			return r;
		/* USING (...) and NATURAL join the two sides without a col = col predicate. */
		bool natural = json_is_true(json_object_get(body, "isNatural"));
		if ((natural || json_array_size(json_object_get(body, "usingClause")) > 0) && right_start > left_start &&
		    an->a->n_tables > right_start) {
			if ((r = grow(an, (void **)&an->a->using_joins, an->a->n_using_joins, &an->cap_using,
				      sizeof(*an->a->using_joins))) < 0)
				return r;
			an->a->using_joins[an->a->n_using_joins++] = (struct sql_using_join){
				.left_table = (int)right_start - 1, .right_table = (int)right_start, .scope = wc.scope};
		}
		on.clause = SQL_IN_JOIN_ON;
		on.conjunct = on.disjunct = true;
		return walk(an, json_object_get(body, "quals"), on);
	}
	b = wc.scope >= 0 ? &an->a->blocks[wc.scope] : NULL;
	if (b)
		b->n_from_items++;
	if (strcmp(type, "RangeVar") == 0)
		return add_range_var(an, body, wc);
	if (strcmp(type, "RangeSubselect") == 0) {
		const char *alias = member_string(json_object_get(body, "alias"), "aliasname");
		int first = -1, index;
		if ((r = walk_select(an, node_body(json_object_get(body, "subquery"), "SelectStmt"), wc.scope,
				     SQL_SET_NONE, wc.depth + 1, &first)) < 0)
			return r;
		if (alias && strncmp(alias, DERIVED_ALIAS_PREFIX, strlen(DERIVED_ALIAS_PREFIX)) == 0 &&
		    !strstr(an->orig, alias))
			alias = NULL; /* added by the repair */
		return add_table(an, NULL, alias, alias, wc.scope, first, &index);
	}
	return walk(an, item, deeper(wc));
}

/* Walk member key of obj with wc (nothing when absent). */
static int walk_member(struct an *an, const json_t *obj, const char *key, struct wc wc)
{
	const json_t *v = json_object_get(obj, key);
	return v ? walk(an, v, wc) : 0;
}

static enum sql_set_op set_op_of(const json_t *body)
{
	const char *op = member_string(body, "op");
	bool all = json_is_true(json_object_get(body, "all"));

	if (!op)
		return SQL_SET_NONE;
	if (strcmp(op, "SETOP_UNION") == 0)
		return all ? SQL_SET_UNION_ALL : SQL_SET_UNION;
	if (strcmp(op, "SETOP_INTERSECT") == 0)
		return SQL_SET_INTERSECT;
	if (strcmp(op, "SETOP_EXCEPT") == 0)
		return SQL_SET_EXCEPT;
	return SQL_SET_NONE;
}

static int new_block(struct an *an, int parent, enum sql_set_op op, int *ret_index)
{
	struct sql_analysis *a = an->a;
	int r = grow(an, (void **)&a->blocks, a->n_blocks, &an->cap_blocks, sizeof(*a->blocks));
	if (r < 0)
		return r;
	struct sql_block *b = &a->blocks[a->n_blocks];
	memset(b, 0, sizeof(*b));
	b->parent = parent;
	b->set_op = op;
	*ret_index = (int)a->n_blocks++;
	return 0;
}

/* True when select column c is covered by a GROUP BY column g of the same block. */
static bool grouped_by(const struct sql_column_ref *c, const struct sql_column_ref *g)
{
	if (g->names_output || !same_name(c->name, g->name))
		return false;
	if (!c->qualifier || !g->qualifier)
		return true;
	if (c->table_ref >= 0 && c->table_ref == g->table_ref)
		return true;
	return same_name(c->qualifier, g->qualifier);
}

/*
 * Fill block b's ungrouped_select_columns.  grouped_targets[i] is true when
 * select-list entry i is named in GROUP BY by ordinal or output name.
 */
static int fill_ungrouped(struct an *an, int b, size_t first_column, const bool *grouped_targets, size_t n_targets)
{
	struct sql_analysis *a = an->a;
	struct sql_block *blk = &a->blocks[b];
	size_t n = 0;

	if (!blk->has_group_by && !blk->has_aggregate_in_select)
		return 0;
	for (size_t pass = 0; pass < 2; pass++) {
		for (size_t i = first_column; i < a->n_columns; i++) {
			const struct sql_column_ref *c = &a->columns[i];
			if (c->scope != b || c->clause != SQL_IN_SELECT || c->in_aggregate)
				continue;
			int t = an->col_target[i];
			if (t >= 0 && (size_t)t < n_targets && grouped_targets[t])
				continue;
			bool grouped = false;
			for (size_t j = first_column; j < a->n_columns && !grouped; j++)
				grouped = a->columns[j].scope == b && a->columns[j].clause == SQL_IN_GROUP_BY &&
					  grouped_by(c, &a->columns[j]);
			if (grouped)
				continue;
			if (pass == 1)
				blk->ungrouped_select_columns[n] = (int)i;
			n++;
		}
		if (pass == 0) {
			if (n == 0)
				return 0;
			blk->ungrouped_select_columns = malloc(n * sizeof(int));
			if (!blk->ungrouped_select_columns)
				return nomem(an);
			n = 0;
		}
	}
	blk->n_ungrouped_select_columns = n;
	return 0;
}

/* Mark in grouped (n entries) the select-list entries GROUP BY names by ordinal or output name. */
static void group_targets(const json_t *group, const json_t *targets, bool *grouped, size_t n)
{
	size_t i, j;
	const json_t *g, *t;

	json_array_foreach(group, i, g) {
		const json_t *c = node_body(g, "A_Const");
		const json_t *cr = node_body(g, "ColumnRef");
		if (c) {
			json_int_t k = json_integer_value(json_object_get(json_object_get(c, "ival"), "ival"));
			if (k >= 1 && (size_t)k <= n)
				grouped[k - 1] = true;
		} else if (cr && json_array_size(json_object_get(cr, "fields")) == 1) {
			const char *name = string_node(json_array_get(json_object_get(cr, "fields"), 0));
			json_array_foreach(targets, j, t) {
				if (j < n && same_name(member_string(node_body(t, "ResTarget"), "name"), name))
					grouped[j] = true;
			}
		}
	}
}

/* The clauses of a plain SELECT (op SETOP_NONE) as block b. */
static int walk_leaf_select(struct an *an, const json_t *body, int b, int depth)
{
	const json_t *targets = json_object_get(body, "targetList");
	const json_t *group = json_object_get(body, "groupClause");
	struct wc wc = {.scope = b, .clause = SQL_IN_OTHER, .target = -1, .depth = depth + 1};
	size_t first_column = an->a->n_columns, n_targets = json_array_size(targets), i;
	const json_t *v;
	const char *key;
	int r;

	an->a->blocks[b].is_distinct = json_object_get(body, "distinctClause") != NULL;
	an->a->blocks[b].n_select_items = n_targets;
	an->a->blocks[b].has_group_by = json_array_size(group) > 0;

	json_array_foreach(json_object_get(body, "fromClause"), i, v) {
		if ((r = walk_from_item(an, v, wc)) < 0)
			return r;
	}
	wc.clause = SQL_IN_SELECT;
	json_array_foreach(targets, i, v) {
		wc.target = (int)i;
		if ((r = walk_member(an, node_body(v, "ResTarget"), "val", wc)) < 0)
			return r;
	}
	wc.target = -1;
	wc.targets = targets;
	wc.clause = SQL_IN_WHERE;
	wc.conjunct = wc.disjunct = true;
	if ((r = walk_member(an, body, "whereClause", wc)) < 0)
		return r;
	wc.conjunct = wc.disjunct = false;
	wc.clause = SQL_IN_GROUP_BY;
	if ((r = walk_member(an, body, "groupClause", wc)) < 0)
		return r;
	wc.clause = SQL_IN_HAVING;
	if ((r = walk_member(an, body, "havingClause", wc)) < 0)
		return r;
	wc.clause = SQL_IN_ORDER_BY;
	if ((r = walk_member(an, body, "sortClause", wc)) < 0)
		return r;
	wc.clause = SQL_IN_OTHER;
	json_object_foreach((json_t *)body, key, v) {
		static const char *const done[] = {"fromClause", "targetList", "whereClause", "groupClause",
						   "havingClause", "sortClause", "withClause", "larg", "rarg"};
		bool skip = false;
		for (size_t k = 0; k < ARRAY_SIZE(done) && !skip; k++)
			skip = strcmp(key, done[k]) == 0;
		if (!skip && (r = walk(an, v, wc)) < 0)
			return r;
	}

	bool *grouped = calloc(n_targets ? n_targets : 1, sizeof(bool));
	if (!grouped)
		return nomem(an);
	group_targets(group, targets, grouped, n_targets);
	r = fill_ungrouped(an, b, first_column, grouped, n_targets);
	free(grouped);
	return r;
}

/* Make the CTE names of withClause visible; *ret_pushed how many were added. */
static int push_ctes(struct an *an, const json_t *with, size_t *ret_pushed)
{
	size_t i, n = 0;
	const json_t *cte;

	json_array_foreach(json_object_get(with, "ctes"), i, cte) {
		const char *name = member_string(node_body(cte, "CommonTableExpr"), "ctename");
		if (!name)
			continue;
		int r = grow(an, (void **)&an->ctes, an->n_ctes, &an->cap_ctes, sizeof(*an->ctes));
		if (r < 0)
			return r;
		an->ctes[an->n_ctes++] = name;
		n++;
		*ret_pushed = n;
	}
	*ret_pushed = n;
	return 0;
}

/*
 * A SelectStmt body: its CTE bodies, then either the two operands of a set
 * operation or one leaf block.  parent is the enclosing block (-1 none), op
 * the set operation this statement is an operand of.  *ret_first is its
 * first leaf block (-1 when none was made).
 */
static int walk_select(struct an *an, const json_t *body, int parent, enum sql_set_op op, int depth,
		       int *ret_first)
{
	const json_t *with = json_object_get(body, "withClause");
	enum sql_set_op own = set_op_of(body);
	size_t pushed = 0, i;
	const json_t *cte;
	int r = 0, first = -1, unused;

	*ret_first = -1;
	if (!json_is_object(body))
		return 0;
	if (depth > SQL_ANALYZE_MAX_DEPTH)
		return t2s_error_set(an->err, T2S_ERR_SQL_REJECTED, "statement too deeply nested to analyse");
	if (with && (r = push_ctes(an, with, &pushed)) < 0)
		goto out;
	json_array_foreach(json_object_get(with, "ctes"), i, cte) {
		const json_t *query = node_body(node_body(cte, "CommonTableExpr"), "ctequery");
		if ((r = walk_select(an, node_body(query, "SelectStmt"), parent, SQL_SET_NONE, depth + 1, &unused)) < 0)
			goto out;
	}
	if (own != SQL_SET_NONE) {
		struct wc wc = {.clause = SQL_IN_ORDER_BY, .target = -1, .depth = depth + 1};
		if ((r = walk_select(an, json_object_get(body, "larg"), parent, own, depth + 1, &first)) < 0 ||
		    (r = walk_select(an, json_object_get(body, "rarg"), parent, own, depth + 1, &unused)) < 0)
			goto out;
		wc.scope = first;
		const json_t *leftmost = body; /* its select list names the output columns */
		for (int hops = 0; hops < SQL_ANALYZE_MAX_DEPTH && set_op_of(leftmost) != SQL_SET_NONE; hops++)
			leftmost = json_object_get(leftmost, "larg");
		wc.targets = json_object_get(leftmost, "targetList");
		if ((r = walk_member(an, body, "sortClause", wc)) < 0)
			goto out;
		wc.clause = SQL_IN_OTHER;
		if ((r = walk_member(an, body, "limitCount", wc)) < 0 ||
		    (r = walk_member(an, body, "limitOffset", wc)) < 0)
			goto out;
	} else {
		if ((r = new_block(an, parent, op, &first)) < 0)
			goto out;
		if ((r = walk_leaf_select(an, body, first, depth)) < 0)
			goto out;
	}
	*ret_first = first;
out:
	an->n_ctes -= pushed;
	return r;
}

/* Generic walk: dispatch known node types, descend into everything else. */
static int walk(struct an *an, const json_t *node, struct wc wc)
{
	int r;

	if (wc.depth > SQL_ANALYZE_MAX_DEPTH)
		return t2s_error_set(an->err, T2S_ERR_SQL_REJECTED, "statement too deeply nested to analyse");
	if (json_is_array(node)) {
		size_t i;
		const json_t *v;
		json_array_foreach(node, i, v) {
			if ((r = walk(an, v, deeper(wc))) < 0)
				return r;
		}
		return 0;
	}
	if (!json_is_object(node))
		return 0;

	const char *type = node_type(node);
	const json_t *body = type ? node_body(node, type) : NULL;
	if (body && json_is_object(body)) {
		int unused;
		if (strcmp(type, "SelectStmt") == 0)
			return walk_select(an, body, wc.scope, SQL_SET_NONE, wc.depth + 1, &unused);
		if (strcmp(type, "ColumnRef") == 0)
			return add_column(an, body, wc, &unused);
		if (strcmp(type, "A_Expr") == 0)
			return walk_aexpr(an, body, wc);
		if (strcmp(type, "FuncCall") == 0)
			return walk_func(an, body, wc);
		if (strcmp(type, "A_Const") == 0) {
			const char *v = const_string(body);
			return v ? add_literal(an, v, wc.scope, -1, -1) : 0;
		}
		if (strcmp(type, "BoolExpr") == 0) {
			bool and = same_name(member_string(body, "boolop"), "AND_EXPR");
			bool or = same_name(member_string(body, "boolop"), "OR_EXPR");
			struct wc sub = deeper(wc);
			size_t i;
			const json_t *arg;
			sub.conjunct = and && wc.conjunct;
			sub.disjunct = (and || or) && (wc.conjunct || wc.disjunct);
			json_array_foreach(json_object_get(body, "args"), i, arg) {
				if ((r = walk(an, arg, sub)) < 0)
					return r;
			}
			return 0;
		}
		if (strcmp(type, "RangeVar") == 0 || strcmp(type, "JoinExpr") == 0 ||
		    strcmp(type, "RangeSubselect") == 0)
			return walk_from_item(an, node, wc);
	}

	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)node, key, v) {
		if ((r = walk(an, v, deeper(wc))) < 0)
			return r;
	}
	return 0;
}

/* Walk every statement of tree into an->a. */
static int walk_tree(struct an *an, const json_t *tree)
{
	const json_t *stmts = json_object_get(tree, "stmts"), *s;
	struct wc wc = {.scope = -1, .clause = SQL_IN_OTHER, .target = -1};
	size_t i;
	int r;

	if (!json_is_array(stmts))
		return t2s_error_set(an->err, T2S_ERR_INTERNAL, "parse tree has no statement list");
	an->a->n_statements = (int)json_array_size(stmts);
	json_array_foreach(stmts, i, s) {
		const json_t *stmt = json_object_get(s, "stmt");
		const json_t *select = node_body(stmt, "SelectStmt");
		if (i == 0 && select) {
			an->a->has_order_by = json_array_size(json_object_get(select, "sortClause")) > 0;
			an->a->has_limit = json_object_get(select, "limitCount") != NULL;
		}
		if ((r = walk(an, stmt, wc)) < 0)
			return r;
	}
	return 0;
}

/* ---------------------------------------------------------------- API -- */

void sql_analysis_release(struct sql_analysis *a)
{
	size_t i;

	if (!a)
		return;
	for (i = 0; i < a->n_tables; i++) {
		free(a->tables[i].schema);
		free(a->tables[i].name);
		free(a->tables[i].alias);
	}
	for (i = 0; i < a->n_columns; i++) {
		free(a->columns[i].qualifier);
		free(a->columns[i].name);
	}
	for (i = 0; i < a->n_blocks; i++)
		free(a->blocks[i].ungrouped_select_columns);
	for (i = 0; i < a->n_string_literals; i++)
		free(a->string_literals[i].value);
	free(a->tables);
	free(a->columns);
	free(a->joins);
	free(a->using_joins);
	free(a->blocks);
	free(a->string_literals);
	memset(a, 0, sizeof(*a));
}

/*
 * The parser's error for the copy t, re-stated with the position counted in
 * the original text.  Returns -T2S_ERR_SQL_INVALID.
 */
static int invalid_error(const struct ntext *t, const struct t2s_error *perr, int cursor, struct t2s_error *err)
{
	char message[T2S_ERROR_MESSAGE_MAX];
	char *at;

	snprintf(message, sizeof(message), "%s", perr->message);
	at = NULL; /* the last " at character " is the one sql_guard_pg_parse_tree appended */
	for (char *p = strstr(message, " at character "); p; p = strstr(p + 1, " at character "))
		at = p;
	if (at && cursor > 0) {
		*at = '\0';
		size_t pos = ntext_orig(t, (size_t)cursor - 1);
		return t2s_error_set(err, T2S_ERR_SQL_INVALID, "%s at character %zu", message, pos + 1);
	}
	return t2s_error_set(err, T2S_ERR_SQL_INVALID, "%s", message);
}

/*
 * Parse t, repairing SQLite-only constructs on failure; on 0 *ret_tree is
 * the caller's.  When it fails for good, the error is the last attempt's,
 * its position mapped through t as it then is.
 */
static int parse(struct ntext *t, enum sql_dialect dialect, json_t **ret_tree, bool *repaired,
		 struct t2s_error *err)
{
	struct t2s_error perr;
	int cursor, r;

	for (int attempt = 0;; attempt++) {
		t2s_error_clear(&perr);
		r = sql_guard_pg_parse_tree(t->s, ret_tree, &cursor, &perr);
		if (r == 0)
			return 0;
		if (r != -T2S_ERR_SQL_INVALID) {
			if (err)
				*err = perr;
			return r;
		}
		bool done = false;
		if (dialect == SQL_DIALECT_SQLITE && attempt < SQL_ANALYZE_MAX_REPAIRS &&
		    repair(t, perr.message, cursor, attempt + 1, &done) < 0)
			return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory analysing the statement");
		if (!done)
			return invalid_error(t, &perr, cursor, err);
		*repaired = true;
	}
}

int sql_analyze(const char *sql, enum sql_dialect dialect, struct sql_analysis *ret, struct t2s_error *err)
{
	struct sql_analysis a = {0};
	struct ntext t = {0};
	struct an an = {.a = &a, .dialect = dialect, .orig = sql, .nt = &t, .err = err};
	json_t *tree = NULL;
	bool changed = false;
	size_t len;
	int r;

	if (!sql || !ret || (dialect != SQL_DIALECT_SQLITE && dialect != SQL_DIALECT_POSTGRES))
		return t2s_error_set(err, T2S_ERR_INVALID, "no SQL or no dialect given");
	len = strnlen(sql, (size_t)SQL_GUARD_PG_MAX_LEN + 1);
	if (len > SQL_GUARD_PG_MAX_LEN)
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "statement is too long (limit %d bytes)",
				     SQL_GUARD_PG_MAX_LEN);
	if (normalise(sql, len, dialect, &t, &changed) < 0) {
		r = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory analysing the statement");
		goto out;
	}
	if ((r = parse(&t, dialect, &tree, &changed, err)) < 0)
		goto out;
	a.normalised = changed;
	if ((r = walk_tree(&an, tree)) < 0)
		goto out;
	*ret = a;
	memset(&a, 0, sizeof(a));
out:
	sql_analysis_release(&a);
	json_decref(tree);
	free(an.col_target);
	free(an.ctes);
	ntext_release(&t);
	return r;
}
