/*
 * reuse.c - an example's SQL adapted to a new question's values (reuse.h):
 * its literals read, each one the example question says mapped to the new
 * question's value of the same column, the questions masked and compared.
 */
#include "pipeline/generate/reuse.h"

#include "common/strbuf.h"
#include "pipeline/generate/semantics.h"
#include "pipeline/text/numbers.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define REUSE_MAX_LITERALS 32
#define REUSE_MAX_NUMBERS 32

/* A literal of the example SQL. */
struct lit {
	size_t start, end;  /* in the SQL text, quotes included */
	bool number;
	char *value;        /* unquoted (strings: escapes resolved) */
	const char *core;   /* value without a LIKE pattern's leading and trailing % (points into value) */
	size_t core_len;
	int table, column;  /* -1: compared with no column; -2: with several */
	long e_at;          /* where the example question says it, -1: a constant */
	long q_at, q_len;   /* the new question's span that fills it, -1 while unmapped */
	double q_value;     /* numbers: the value of that span (signs, words, thousands commas read) */
	bool q_plain;       /* numbers: the span is plain digits, written into the SQL as it is */
	const char *repl;   /* the new value (borrowed), NULL while unmapped */
};

struct work {
	const char *eq, *q;  /* example question, new question */
	struct lit lits[REUSE_MAX_LITERALS];
	size_t n;
	struct reuse_result *res;
};

static bool word_char(char c)
{
	return isalnum((unsigned char)c) || (unsigned char)c >= 0x80;
}

/* First place of needle[0..n) in hay at word bounds, ignoring case, from offset from; -1 when none. */
static long find_word(const char *hay, const char *needle, size_t n, size_t from)
{
	size_t len = strlen(hay);
	if (n == 0)
		return -1;
	for (size_t i = from; i + n <= len; i++)
		if (strncasecmp(hay + i, needle, n) == 0 && (i == 0 || !word_char(hay[i - 1])) && !word_char(hay[i + n]))
			return (long)i;
	return -1;
}

/* ---- the example SQL's literals --------------------------------------------- */

static void addch(struct strbuf *b, char c)
{
	strbuf_add(b, &c, 1);
}

/* The end of a quoted token starting at p (quote doubled inside), and its value unquoted into *ret. */
static const char *read_quoted(const char *p, char q, char **ret)
{
	struct strbuf b;
	strbuf_init(&b, 64 * 1024);
	for (p++; *p; p++) {
		if (*p == q && p[1] == q) {
			addch(&b, q);
			p++;
		} else if (*p == q) {
			break;
		} else {
			addch(&b, *p);
		}
	}
	*ret = strbuf_detach(&b, NULL);
	return *p ? p + 1 : p;
}

static int add_lit(struct work *w, size_t start, size_t end, bool number, char *value)
{
	if (!value)
		return -T2S_ERR_NOMEM;
	if (w->n == REUSE_MAX_LITERALS) {
		free(value);
		return 1;
	}
	struct lit *l = &w->lits[w->n++];
	*l = (struct lit){.start = start, .end = end, .number = number, .value = value, .core = value,
			  .table = -1, .column = -1, .e_at = -1, .q_at = -1, .q_len = -1};
	size_t len = strlen(value);
	while (!number && len && l->core[0] == '%') {
		l->core++;
		len--;
	}
	while (!number && len && l->core[len - 1] == '%')
		len--;
	l->core_len = len;
	return 0;
}

/* Is the '-' right before digits at d (in sql) a sign: after an operator, '(', ',', a keyword or nothing? */
static bool unary_minus(const char *sql, const char *d)
{
	static const char *const keywords[] = {"and", "or", "not", "between", "then", "else", "when", "select",
					       "limit", "offset", "in", "is", "by", "return", "like", NULL};
	if (d == sql || d[-1] != '-')
		return false;
	const char *c = d - 1;
	while (c > sql && isspace((unsigned char)c[-1]))
		c--;
	if (c == sql || strchr("=<>(,+-*/%", c[-1]))
		return true;
	const char *e = c;
	while (c > sql && (isalpha((unsigned char)c[-1]) || c[-1] == '_'))
		c--;
	if (c > sql && (isalnum((unsigned char)c[-1]) || c[-1] == '_' || c[-1] == '.'))
		return false;
	for (size_t i = 0; keywords[i]; i++)
		if ((size_t)(e - c) == strlen(keywords[i]) && strncasecmp(c, keywords[i], (size_t)(e - c)) == 0)
			return true;
	return false;
}

/*
 * Read the literals of sql: strings in single quotes, strings in double
 * quotes the analysis lists as compared literals (SQLite), numbers outside
 * names.  0, 1 (too many literals), or -T2S_ERR_NOMEM.
 */
static int read_literals(struct work *w, const char *sql, const struct validation_literal *vl, size_t n_vl)
{
	const char *p = sql;
	int rc = 0;
	while (*p && rc == 0) {
		const char *s = p;
		char *value = NULL;
		if (p[0] == '-' && p[1] == '-') {
			p += strcspn(p, "\n");
		} else if (p[0] == '/' && p[1] == '*') {
			const char *e = strstr(p + 2, "*/");
			p = e ? e + 2 : p + strlen(p);
		} else if (*p == '\'' || *p == '"') {
			p = read_quoted(p, *p, &value);
			bool listed = *s == '\'';
			for (size_t i = 0; value && !listed && i < n_vl; i++)
				listed = strcmp(vl[i].value, value) == 0;
			if (listed)
				rc = add_lit(w, (size_t)(s - sql), (size_t)(p - sql), false, value);
			else
				free(value);
		} else if (*p == '`' || *p == '[') {
			const char *e = strchr(p + 1, *p == '[' ? ']' : '`');
			p = e ? e + 1 : p + strlen(p);
		} else if (isalpha((unsigned char)*p) || *p == '_' || (unsigned char)*p >= 0x80) {
			while (isalnum((unsigned char)*p) || *p == '_' || *p == '$' || (unsigned char)*p >= 0x80)
				p++;
		} else if (isdigit((unsigned char)*p)) {
			p += strspn(p, "0123456789");
			if (*p == '.' && isdigit((unsigned char)p[1]))
				p += 1 + strspn(p + 1, "0123456789");
			if (unary_minus(sql, s))
				s--; /* "> -5": the sign is the literal's */
			if (!isalpha((unsigned char)*p) && *p != '_')
				rc = add_lit(w, (size_t)(s - sql), (size_t)(p - sql), true, strndup(s, (size_t)(p - s)));
		} else {
			p++;
		}
	}
	/* Each string's column: the analysis' literal of that value (two columns: ambiguous). */
	for (size_t i = 0; i < w->n; i++)
		for (size_t k = 0; !w->lits[i].number && k < n_vl; k++) {
			struct lit *l = &w->lits[i];
			if (strcmp(vl[k].value, l->value) != 0)
				continue;
			if (l->table == -1)
				l->table = vl[k].table, l->column = vl[k].column;
			else if (l->table != vl[k].table || l->column != vl[k].column)
				l->table = l->column = -2;
		}
	return rc;
}

/* ---- numbers of a question ------------------------------------------------------ */

struct numbers {
	long at[REUSE_MAX_NUMBERS], len[REUSE_MAX_NUMBERS];
	double val[REUSE_MAX_NUMBERS];
	bool plain[REUSE_MAX_NUMBERS]; /* written as plain digits (no sign, word or comma) */
	size_t n;
};

/* Whether [at, at+len) overlaps a span the literals already fill in the example (side 'e') or new question. */
static bool covered(const struct work *w, bool example, long at, long len)
{
	for (size_t i = 0; i < w->n; i++) {
		const struct lit *l = &w->lits[i];
		long s = example ? l->e_at : l->q_at, n = example ? (long)l->core_len : l->q_len;
		if (s >= 0 && !l->number && at < s + n && s < at + len)
			return true;
	}
	return false;
}

/* "minus " or "negative " before a number at p: the bytes up to the number, else 0. */
static size_t sign_word(const char *p)
{
	static const char *const words[] = {"minus", "negative", NULL};
	double v;
	for (size_t i = 0; words[i]; i++) {
		size_t n = strlen(words[i]);
		if (strncasecmp(p, words[i], n) != 0 || p[n] != ' ')
			continue;
		while (p[n] == ' ')
			n++;
		if (isdigit((unsigned char)p[n]) || number_words_parse(p + n, &v))
			return n;
	}
	return 0;
}

/*
 * The number at p (at a word's start in t), its sign read: "-5", "+5", "minus 5", "negative five",
 * "80,000", "3.5", "twenty-one".  Its end, or NULL when p starts none (or a word like "5th").
 */
static const char *read_number(const char *t, const char *p, double *ret, bool *ret_plain)
{
	bool neg = false, signed_ = false;
	size_t n = sign_word(p);
	if (n) {
		neg = signed_ = true;
		p += n;
	} else if ((*p == '-' || *p == '+') && isdigit((unsigned char)p[1]) &&
		   (p == t || isspace((unsigned char)p[-1]) || p[-1] == '(')) {
		neg = *p == '-';
		signed_ = true;
		p++;
	}
	double v;
	const char *e = p;
	bool plain = false;
	if (isdigit((unsigned char)*p)) {
		e += strspn(e, "0123456789");
		plain = true;
		while (*e == ',' && strspn(e + 1, "0123456789") == 3)
			e += 4, plain = false;
		if (*e == '.' && isdigit((unsigned char)e[1]))
			e += 1 + strspn(e + 1, "0123456789");
		if (word_char(*e) || !number_parse(p, (size_t)(e - p), &v))
			return NULL;
	} else if ((n = number_words_parse(p, &v))) {
		e = p + n;
	} else {
		return NULL;
	}
	*ret = neg ? -v : v;
	*ret_plain = plain && !signed_;
	return e;
}

/* The numbers written in text at word bounds, outside string slots.  false when there are too many. */
static bool question_numbers(const struct work *w, bool example, struct numbers *ret)
{
	const char *t = example ? w->eq : w->q;
	ret->n = 0;
	for (const char *p = t; *p;) {
		double v;
		bool plain;
		const char *e = NULL;
		if (!(p > t && (word_char(p[-1]) || p[-1] == '.')))
			e = read_number(t, p, &v, &plain);
		if (!e) {
			/* past this word (a "5th" is no number, nor the "5" in it) */
			if (word_char(*p))
				while (word_char(*p))
					p++;
			else
				p++;
			continue;
		}
		if (!covered(w, example, p - t, e - p)) {
			if (ret->n == REUSE_MAX_NUMBERS)
				return false;
			ret->at[ret->n] = p - t;
			ret->len[ret->n] = e - p;
			ret->val[ret->n] = v;
			ret->plain[ret->n++] = plain;
		}
		p = e;
	}
	return true;
}

static bool same_value(double x, const char *b, size_t blen)
{
	double y;
	return number_parse(b, blen, &y) && x == y;
}

/* ---- mapping ---------------------------------------------------------------------- */

static int refuse(struct work *w, const char *why, const char *literal)
{
	snprintf(w->res->reason, sizeof(w->res->reason), "%s%s%.80s%s", why, literal ? ": '" : "",
		 literal ? literal : "", literal ? "'" : "");
	return 1;
}

/*
 * A literal the example question does not say stays; refused when the new
 * question names another value of its column (the example fixed a value
 * the question changes).
 */
static int constants_unchallenged(struct work *w, const struct reuse_value *values, size_t n_values)
{
	for (size_t i = 0; i < w->n; i++) {
		const struct lit *l = &w->lits[i];
		if (l->number || l->e_at >= 0 || l->table < 0)
			continue;
		for (size_t k = 0; k < n_values; k++) {
			const struct reuse_value *v = &values[k];
			if (v->table != l->table || v->column != l->column || !v->matched || strcmp(v->value, l->value) == 0)
				continue;
			long a = find_word(w->q, v->matched, strlen(v->matched), 0);
			if (a >= 0 && !covered(w, false, a, (long)strlen(v->matched)))
				return refuse(w, "the question names another value of a column the example fixes", l->value);
		}
	}
	return 0;
}

/* The string slots: the literal where the new question says it, else the new question's values of its column. */
static int map_strings(struct work *w, const struct reuse_value *values, size_t n_values)
{
	for (size_t i = 0; i < w->n; i++) {
		struct lit *l = &w->lits[i];
		if (l->number || (l->e_at = find_word(w->eq, l->core, l->core_len, 0)) < 0)
			continue;
		long at = find_word(w->q, l->core, l->core_len, 0);
		if (at >= 0 && !covered(w, false, at, (long)l->core_len)) {
			l->q_at = at, l->q_len = (long)l->core_len, l->repl = l->value; /* unchanged */
		}
	}
	for (size_t i = 0; i < w->n; i++) {
		struct lit *l = &w->lits[i];
		if (l->number || l->e_at < 0 || l->repl)
			continue;
		if (l->table < 0)
			return refuse(w, "a literal of the example is compared with no single column", l->value);
		if (l->core != l->value)
			return refuse(w, "a pattern of the example is not in the question", l->value);
		/* The slots of this column and the question's values of it, each in question order. */
		struct lit *slots[REUSE_MAX_LITERALS];
		size_t n_slots = 0;
		for (size_t k = i; k < w->n; k++) {
			const struct lit *o = &w->lits[k];
			bool again = false; /* a value the SQL repeats is one slot */
			for (size_t m = 0; !again && m < n_slots; m++)
				again = strcmp(slots[m]->value, o->value) == 0;
			if (!again && !o->number && o->e_at >= 0 && !o->repl && o->table == l->table &&
			    o->column == l->column)
				slots[n_slots++] = &w->lits[k];
		}
		long at[REUSE_MAX_LITERALS], len[REUSE_MAX_LITERALS];
		const char *val[REUSE_MAX_LITERALS];
		size_t n_vals = 0;
		for (size_t k = 0; k < n_values && n_vals < REUSE_MAX_LITERALS; k++) {
			const struct reuse_value *v = &values[k];
			if (v->table != l->table || v->column != l->column || !v->matched)
				continue;
			long a = find_word(w->q, v->matched, strlen(v->matched), 0);
			bool dup = a < 0 || covered(w, false, a, (long)strlen(v->matched));
			for (size_t m = 0; !dup && m < n_vals; m++) /* one value per span: the evidence's best */
				dup = a < at[m] + len[m] && at[m] < a + (long)strlen(v->matched);
			if (!dup) {
				at[n_vals] = a, len[n_vals] = (long)strlen(v->matched), val[n_vals++] = v->value;
			}
		}
		if (n_vals != n_slots)
			return refuse(w, n_vals ? "the question has another number of values for a column of the example"
						: "the question names no value for a literal of the example",
				      l->value);
		/* Pair in order of appearance (insertion sorts: a handful each). */
		for (size_t a = 1; a < n_slots; a++)
			for (size_t b = a; b > 0 && slots[b]->e_at < slots[b - 1]->e_at; b--) {
				struct lit *t = slots[b];
				slots[b] = slots[b - 1], slots[b - 1] = t;
			}
		for (size_t a = 1; a < n_vals; a++)
			for (size_t b = a; b > 0 && at[b] < at[b - 1]; b--) {
				long t = at[b];
				at[b] = at[b - 1], at[b - 1] = t;
				t = len[b], len[b] = len[b - 1], len[b - 1] = t;
				const char *s = val[b];
				val[b] = val[b - 1], val[b - 1] = s;
			}
		for (size_t k = 0; k < n_slots; k++)
			slots[k]->q_at = at[k], slots[k]->q_len = len[k], slots[k]->repl = val[k];
		for (size_t k = i; k < w->n; k++) /* the repeats */
			for (size_t m = 0; !w->lits[k].number && !w->lits[k].repl && m < n_slots; m++)
				if (strcmp(slots[m]->value, w->lits[k].value) == 0)
					w->lits[k].q_at = slots[m]->q_at, w->lits[k].q_len = slots[m]->q_len,
					w->lits[k].repl = slots[m]->repl;
	}
	return constants_unchallenged(w, values, n_values);
}

/* The number slots: the example question's numbers and the new question's pair in order. */
static int map_numbers(struct work *w)
{
	struct numbers en, qn;
	if (!question_numbers(w, true, &en) || !question_numbers(w, false, &qn))
		return refuse(w, "too many numbers", NULL);
	if (en.n != qn.n)
		return refuse(w, "the questions hold different counts of numbers", NULL);
	bool slot[REUSE_MAX_NUMBERS] = {false};
	for (size_t i = 0; i < w->n; i++) {
		struct lit *l = &w->lits[i];
		for (size_t k = 0; l->number && k < en.n; k++)
			if (same_value(en.val[k], l->value, strlen(l->value))) {
				l->e_at = en.at[k], l->core_len = (size_t)en.len[k];
				l->q_at = qn.at[k], l->q_len = qn.len[k];
				l->q_value = qn.val[k], l->q_plain = qn.plain[k];
				slot[k] = true;
				break;
			}
	}
	for (size_t k = 0; k < en.n; k++)
		if (!slot[k] && en.val[k] != qn.val[k])
			return refuse(w, "a number of the question is not one the example's SQL uses", NULL);
	return 0;
}

/* ---- masking, substitution ------------------------------------------------------- */

/* text with the literals' spans (example or new question) replaced by a mark of their kind; NULL: no memory. */
static char *masked(const struct work *w, bool example)
{
	const char *t = example ? w->eq : w->q;
	struct strbuf b;
	strbuf_init(&b, 64 * 1024);
	for (size_t pos = 0; t[pos];) {
		const struct lit *hit = NULL;
		for (size_t i = 0; !hit && i < w->n; i++) {
			const struct lit *l = &w->lits[i];
			if ((example ? l->e_at : l->q_at) == (long)pos && l->q_at >= 0)
				hit = l;
		}
		if (!hit) {
			addch(&b, t[pos++]);
			continue;
		}
		strbuf_adds(&b, hit->number ? " qnumq " : " qvalq ");
		pos += example ? hit->core_len : (size_t)hit->q_len;
	}
	return strbuf_detach(&b, NULL);
}

/* The SQL text of number slot l's new value: the question's digits as written, else the value printed.
   NULL: no memory. */
static char *number_text(const char *q, const struct lit *l)
{
	if (l->q_plain)
		return strndup(q + l->q_at, (size_t)l->q_len);
	char buf[64];
	if (l->q_value == (double)(long long)l->q_value && l->q_value < 1e15 && l->q_value > -1e15)
		snprintf(buf, sizeof(buf), "%lld", (long long)l->q_value);
	else
		snprintf(buf, sizeof(buf), "%.15g", l->q_value);
	return strdup(buf);
}

static int substitute(struct work *w, const char *sql, const struct schema *s)
{
	struct strbuf b;
	strbuf_init(&b, 256 * 1024);
	json_t *subs = json_array();
	size_t pos = 0;
	for (size_t i = 0; i < w->n; i++) {
		const struct lit *l = &w->lits[i];
		if (l->q_at < 0)
			continue;
		strbuf_add(&b, sql + pos, l->start - pos);
		pos = l->end;
		char *nv = l->number ? number_text(w->q, l) : NULL;
		if (l->number) {
			/* a negative value where the SQL had no sign of its own: "x-5" must not become "x--5" */
			bool wrap = nv && nv[0] == '-' && l->value[0] != '-';
			strbuf_adds(&b, wrap ? "(" : "");
			strbuf_adds(&b, nv ? nv : "");
			strbuf_adds(&b, wrap ? ")" : "");
		} else {
			addch(&b, '\'');
			strbuf_add(&b, l->value, (size_t)(l->core - l->value)); /* a pattern's leading % */
			for (const char *p = l->repl; *p; p++) {
				if (*p == '\'')
					addch(&b, '\'');
				addch(&b, *p);
			}
			strbuf_adds(&b, l->core + l->core_len);
			addch(&b, '\'');
		}
		char column[256] = "";
		if (l->table >= 0)
			snprintf(column, sizeof(column), "%s.%s", s->tables[l->table].api_name,
				 s->tables[l->table].columns[l->column].name);
		json_array_append_new(subs, json_pack("{s:s, s:s?, s:s?}", "literal", l->value, "value",
						      l->number ? nv : l->repl, "column", *column ? column : NULL));
		free(nv);
	}
	strbuf_adds(&b, sql + pos);
	w->res->sql = strbuf_detach(&b, NULL);
	w->res->substitutions = subs;
	return w->res->sql && subs ? 0 : -T2S_ERR_NOMEM;
}

int reuse_example(const struct schema *s, const struct wordnet *wn, const char *question,
		  const struct reuse_value *values, size_t n_values, const char *example_question,
		  const char *example_sql, struct reuse_result *ret)
{
	*ret = (struct reuse_result){0};
	struct validation_literal *vl = NULL;
	size_t n_vl = 0;
	int rc = semantics_literals(s, example_sql, &vl, &n_vl);
	if (rc == -T2S_ERR_NOMEM)
		return rc;
	struct work *w = calloc(1, sizeof(*w));
	if (!w) {
		free(vl);
		return -T2S_ERR_NOMEM;
	}
	*w = (struct work){.eq = example_question, .q = question, .res = ret};
	if (rc < 0)
		rc = refuse(w, "the analyser cannot read the example's SQL", NULL);
	if (rc == 0)
		rc = read_literals(w, example_sql, vl, n_vl);
	if (rc == 1)
		refuse(w, "the example's SQL has too many literals", NULL);
	if (rc == 0)
		rc = map_strings(w, values, n_values);
	if (rc == 0)
		rc = map_numbers(w);
	char *me = NULL, *mq = NULL;
	if (rc == 0 && (!(me = masked(w, true)) || !(mq = masked(w, false))))
		rc = -T2S_ERR_NOMEM;
	if (rc == 0) {
		bool strict = false; /* a value of the SQL its question does not spell is in some word of it */
		for (size_t i = 0; i < w->n; i++)
			strict |= !w->lits[i].number && w->lits[i].e_at < 0 && w->lits[i].table >= 0;
		ret->similarity = reuse_similarity(wn, me, mq, strict);
		rc = substitute(w, example_sql, s);
	}
	free(me);
	free(mq);
	for (size_t i = 0; i < w->n; i++)
		free(w->lits[i].value);
	free(w);
	for (size_t i = 0; i < n_vl; i++)
		free(vl[i].value);
	free(vl);
	if (rc == -T2S_ERR_NOMEM) {
		reuse_result_release(ret);
		return rc;
	}
	return 0;
}

void reuse_result_release(struct reuse_result *r)
{
	free(r->sql);
	json_decref(r->substitutions);
	*r = (struct reuse_result){0};
}
