/*
 * sql_explain_fallback.c - what a statement names when even the repaired
 * parse fails (sql_explain_internal.h): read with sql_analyze's tokenizer,
 * the tables after FROM / JOIN (and commas of a FROM list), the other
 * names (keywords, aliases' qualifiers and function names left out) and
 * the literal values, each once, in the order written.
 */
#include "pipeline/sql/sql_explain_internal.h"

#include <string.h>
#include <strings.h>

/* Most names of one kind listed. */
#define FALLBACK_MAX_ITEMS 24

/* Words that are SQL's, not the schema's. */
static const char *const keywords[] = {
	"select", "from", "where", "and", "or", "not", "in", "is", "null", "like", "glob", "between", "join",
	"on", "as", "group", "by", "order", "having", "limit", "offset", "union", "intersect", "except", "all",
	"distinct", "inner", "left", "right", "outer", "full", "cross", "natural", "using", "case", "when",
	"then", "else", "end", "asc", "desc", "exists", "with", "values", "true", "false", "escape", "cast",
	"collate", "nulls", "first", "last", "insert", "update", "delete", "into", "set", "any", "some",
};

struct names {
	char items[FALLBACK_MAX_ITEMS][EX_NAME_MAX];
	size_t n;
};

static bool is_keyword(const char *w)
{
	for (size_t i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
		if (strcasecmp(w, keywords[i]) == 0)
			return true;
	return false;
}

static bool has(const struct names *n, const char *w)
{
	for (size_t i = 0; i < n->n; i++)
		if (strcasecmp(n->items[i], w) == 0)
			return true;
	return false;
}

static void put(struct names *n, const char *w, size_t len)
{
	if (n->n >= FALLBACK_MAX_ITEMS || len == 0 || len >= EX_NAME_MAX)
		return;
	char buf[EX_NAME_MAX];
	memcpy(buf, w, len);
	buf[len] = '\0';
	if (!has(n, buf))
		memcpy(n->items[n->n++], buf, len + 1);
}

/* "a, b and c" of n, into sb. */
static int add_names(struct strbuf *sb, const struct names *n)
{
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n->n; i++) {
		if (i)
			rc = ex_add(sb, i + 1 == n->n ? " and " : ", ");
		if (rc == 0)
			rc = ex_add(sb, n->items[i]);
	}
	return rc;
}

/* The tokens of sql sorted into tables, other names and values. */
static void scan(const char *sql, struct names *tables, struct names *columns, struct names *values)
{
	size_t len = strlen(sql), p = 0;
	bool in_from = false, expect_table = false;
	char buf[EX_NAME_MAX];
	struct tok prev = {TOK_END, 0, 0};
	for (;;) {
		struct tok t = sa_next_tok(sql, len, p);
		if (t.kind == TOK_END)
			break;
		struct tok next = sa_next_tok(sql, len, t.end);
		bool word = t.kind == TOK_WORD || (t.kind == TOK_QUOTED && sql[t.start] != '"');
		if (t.kind == TOK_WORD && (sa_tok_is(sql, t, "from") || sa_tok_is(sql, t, "join"))) {
			in_from = expect_table = true;
		} else if (t.kind == TOK_STRING || t.kind == TOK_NUMBER ||
			   (t.kind == TOK_QUOTED && sql[t.start] == '"' && !expect_table)) {
			put(values, sql + t.start, t.end - t.start);
		} else if ((word || t.kind == TOK_QUOTED) && sa_tok_ident(sql, t, buf, sizeof(buf))) {
			bool kw = t.kind == TOK_WORD && is_keyword(buf);
			if (kw && !sa_tok_is(sql, t, "as"))
				in_from = false; /* past the FROM list (its aliases are no columns) */
			if (!kw && expect_table)
				put(tables, buf, strlen(buf));
			else if (!kw && !sa_tok_is(sql, next, ".") && !sa_tok_is(sql, next, "(") &&
				 !(prev.kind == TOK_WORD && sa_tok_is(sql, prev, "as")) && !in_from)
				put(columns, buf, strlen(buf));
			expect_table = false;
		} else if (sa_tok_is(sql, t, ",")) {
			expect_table = in_from;
		} else if (!sa_tok_is(sql, t, ".")) {
			in_from = expect_table = false;
		}
		prev = t;
		p = t.end;
	}
}

int ex_fallback(const char *sql, const char *why, struct strbuf *sb)
{
	static struct names zero;
	struct names tables = zero, columns = zero, values = zero;
	scan(sql, &tables, &columns, &values);
	if (tables.n == 0)
		return -T2S_ERR_SQL_INVALID;
	int rc = ex_add(sb, "Reads ");
	if (rc == 0)
		rc = add_names(sb, &tables);
	if (rc == 0)
		rc = ex_addf(sb, " (%s", why);
	if (rc == 0 && columns.n && (rc = ex_add(sb, "; it names ")) == 0)
		rc = add_names(sb, &columns);
	if (rc == 0 && values.n && (rc = ex_add(sb, columns.n ? " and the values " : "; it names the values ")) == 0)
		rc = add_names(sb, &values);
	return rc ? rc : ex_add(sb, ").");
}
