/*
 * sql_explain_words.c - the bottom of sql_explain (sql_explain_internal.h):
 * appending words, reading parse-tree nodes, names spelled as the text
 * writes them, the relations of a query block and how a qualifier resolves
 * to one, constants as written.
 */
#include "pipeline/sql/sql_explain_internal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Tokens searched after a node's location for the spelling of its name. */
#define WRITTEN_SCAN_TOKENS 48

int ex_add(struct strbuf *sb, const char *s)
{
	return strbuf_adds(sb, s ? s : "");
}

int ex_addf(struct strbuf *sb, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -T2S_ERR_INVALID;
	if ((size_t)n < sizeof(small))
		return strbuf_add(sb, small, (size_t)n);
	char *big = malloc((size_t)n + 1);
	if (!big)
		return -T2S_ERR_NOMEM;
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	int rc = strbuf_add(sb, big, (size_t)n);
	free(big);
	return rc;
}

/* ------------------------------------------------------------- nodes -- */

const json_t *ex_body(const json_t *node, const char *type)
{
	return json_object_get(node, type);
}

const char *ex_type(const json_t *node)
{
	return sa_node_type(node);
}

const char *ex_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

const char *ex_sval(const json_t *string_node)
{
	return sa_string_node(string_node);
}

bool ex_bool(const json_t *obj, const char *key)
{
	return json_is_true(json_object_get(obj, key));
}

size_t ex_list_len(const json_t *list)
{
	return json_is_array(list) ? json_array_size(list) : 0;
}

/* Offset in the caller's text of body's "location", or SIZE_MAX. */
static size_t location_of(const struct ex *x, const json_t *body)
{
	const json_t *loc = json_object_get(body, "location");
	if (!json_is_integer(loc) || json_integer_value(loc) < 0 || (size_t)json_integer_value(loc) >= x->nt->len)
		return SIZE_MAX;
	return sa_ntext_orig(x->nt, (size_t)json_integer_value(loc));
}

const char *ex_written(const struct ex *x, const json_t *body, const char *folded, char *buf)
{
	size_t pos = location_of(x, body), len = x->nt->map[x->nt->len];
	if (!folded || pos == SIZE_MAX)
		return folded;
	for (int i = 0; i < WRITTEN_SCAN_TOKENS; i++) {
		struct tok t = sa_next_tok(x->orig, len, pos);
		if (t.kind == TOK_END)
			break;
		if (sa_tok_ident(x->orig, t, buf, EX_NAME_MAX) && strcasecmp(buf, folded) == 0)
			return buf;
		pos = t.end;
	}
	return folded;
}

bool ex_double_quoted(const struct ex *x, const json_t *body)
{
	size_t pos = location_of(x, body), len = x->nt->map[x->nt->len];
	if (x->dialect != SQL_DIALECT_SQLITE || pos == SIZE_MAX)
		return false;
	struct tok t = sa_next_tok(x->orig, len, pos);
	return t.kind == TOK_QUOTED && x->orig[t.start] == '"';
}

/* --------------------------------------------------------- relations -- */

int ex_rel_add(struct ex_scope *s, const char *name, const char *alias, struct ex_rel **ret)
{
	if (s->n_rels == s->cap_rels) {
		size_t cap = s->cap_rels ? s->cap_rels * 2 : 4;
		if (cap > SQL_ANALYZE_MAX_ITEMS)
			return -T2S_ERR_SQL_REJECTED;
		struct ex_rel *p = realloc(s->rels, cap * sizeof(*p));
		if (!p)
			return -T2S_ERR_NOMEM;
		s->rels = p;
		s->cap_rels = cap;
	}
	struct ex_rel *r = &s->rels[s->n_rels++];
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "");
	snprintf(r->alias, sizeof(r->alias), "%s", alias ? alias : "");
	if (ret)
		*ret = r;
	return 0;
}

void ex_scope_release(struct ex_scope *s)
{
	free(s->rels);
	s->rels = NULL;
	s->n_rels = s->cap_rels = 0;
}

/* The relation of s that q names: its alias first, then (without alias) its name. */
static const struct ex_rel *resolve_in(const struct ex_scope *s, const char *q)
{
	for (size_t i = 0; i < s->n_rels; i++)
		if (s->rels[i].alias[0] && strcasecmp(s->rels[i].alias, q) == 0)
			return &s->rels[i];
	for (size_t i = 0; i < s->n_rels; i++)
		if (!s->rels[i].alias[0] && s->rels[i].name[0] && strcasecmp(s->rels[i].name, q) == 0)
			return &s->rels[i];
	for (size_t i = 0; i < s->n_rels; i++) /* SQLite also reads a table's name past its alias */
		if (s->rels[i].name[0] && strcasecmp(s->rels[i].name, q) == 0)
			return &s->rels[i];
	return NULL;
}

const struct ex_rel *ex_resolve(const struct ex_scope *s, const char *q, bool *ret_outer)
{
	*ret_outer = false;
	for (; s && q; s = s->parent) {
		const struct ex_rel *r = resolve_in(s, q);
		if (r)
			return r;
		*ret_outer = true;
	}
	*ret_outer = false;
	return NULL;
}

size_t ex_same_table(const struct ex_scope *s, const struct ex_rel *r)
{
	size_t n = 0;
	for (size_t i = 0; s && i < s->n_rels; i++)
		if (r->name[0] && strcasecmp(s->rels[i].name, r->name) == 0)
			n++;
	return n;
}

int ex_add_rel(struct strbuf *sb, const struct ex_scope *s, const struct ex_rel *r)
{
	if (!r->name[0])
		return ex_add(sb, r->alias[0] ? r->alias : "the subquery");
	if (r->alias[0] && ex_same_table(s, r) > 1)
		return ex_addf(sb, "%s %s", r->name, r->alias);
	return ex_add(sb, r->name);
}

int ex_add_possessive(struct strbuf *sb, const char *s)
{
	size_t n = strlen(s);
	return ex_addf(sb, "%s%s", s, n && (s[n - 1] == 's' || s[n - 1] == 'S') ? "'" : "'s");
}

/* ---------------------------------------------------------- constants -- */

int ex_add_const(struct strbuf *sb, const json_t *c)
{
	const json_t *v;
	if (ex_bool(c, "isnull"))
		return ex_add(sb, "NULL");
	if ((v = json_object_get(c, "ival")))
		return ex_addf(sb, "%lld", (long long)json_integer_value(json_object_get(v, "ival")));
	if ((v = json_object_get(c, "fval")))
		return ex_add(sb, ex_str(v, "fval"));
	if ((v = json_object_get(c, "sval")))
		return ex_addf(sb, "'%s'", ex_str(v, "sval") ? ex_str(v, "sval") : "");
	if ((v = json_object_get(c, "boolval")))
		return ex_add(sb, ex_bool(v, "boolval") ? "true" : "false");
	if ((v = json_object_get(c, "bsval")))
		return ex_add(sb, ex_str(v, "bsval"));
	return ex_add(sb, "a constant");
}

long long ex_const_int(const json_t *node)
{
	const json_t *c = ex_body(node, "A_Const"), *v = json_object_get(c, "ival");
	if (!v)
		return -1;
	long long n = (long long)json_integer_value(json_object_get(v, "ival"));
	return n < 0 ? -1 : n;
}

void ex_capitalise(struct strbuf *sb, size_t from)
{
	if (from < sb->len && sb->buf[from] >= 'a' && sb->buf[from] <= 'z')
		sb->buf[from] = (char)(sb->buf[from] - 'a' + 'A');
}
