/*
 * builtin_compound.c - set operations read as two clauses sharing the
 * question's head (issue 17): a question the whole reading refuses is split at
 * a conjunction ("both X and Y", "X and Y", "X but not Y", "X and do not Y"),
 * each clause read as a whole question (head + clause) by builtin_read, and
 * when both read as plain lists of the same columns of the same main table,
 * they are written as A INTERSECT B or A EXCEPT B.  Precision first: any doubt
 * keeps the whole question's refusal.
 */
#include "pipeline/builtin/builtin_internal.h"

#include "common/error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CO_MAX_CHUNKS 128
#define CO_CONFIDENCE 0.9 /* the product of the clauses' confidences, times this */
#define CO_MAX_READS 48   /* clause readings one question may cost (each about 0.1 ms) */

/* A whitespace-separated piece of the question: its bytes, and its word (lower case, no punctuation). */
struct chunk {
	size_t start, end;
	char word[16];
};

struct split {
	const struct builtin_input *in;
	struct chunk c[CO_MAX_CHUNKS];
	size_t n;
	bool truncated; /* more chunks than CO_MAX_CHUNKS: not split (a clause would lose its end) */
	int reads;      /* clause readings left (CO_MAX_READS): then the refusal stands */
	char *text; /* a clause's text: head + clause (malloc'd, the question's length + 1) */
};

/* Negations that turn the clause after "but" / "and" into the rows taken away; the verb after them stays. */
static const char *const NEGATIONS[] = {
	"do not", "does not", "did not", "don't", "doesn't", "didn't", "have never", "has never", "had never",
	"are not", "is not", "was not", "were not", "have not", "has not", "had not", "never", "not", NULL,
};

static void split_chunks(struct split *sp)
{
	const char *q = sp->in->question;
	sp->n = 0;
	for (size_t i = 0; q[i];) {
		while (q[i] && isspace((unsigned char)q[i]))
			i++;
		if (!q[i])
			break;
		if (sp->n == CO_MAX_CHUNKS) {
			sp->truncated = true;
			return;
		}
		struct chunk *ch = &sp->c[sp->n++];
		ch->start = i;
		size_t len = 0;
		for (; q[i] && !isspace((unsigned char)q[i]); i++)
			if ((isalnum((unsigned char)q[i]) || q[i] == '\'') && len + 1 < sizeof(ch->word))
				ch->word[len++] = (char)tolower((unsigned char)q[i]);
		ch->word[len] = '\0';
		ch->end = i;
	}
}

/* The phrase (words separated by one space) at chunk i: the number of chunks it spans, 0 when not there. */
static size_t phrase_at(const struct split *sp, size_t i, const char *phrase)
{
	size_t n = 0;
	while (*phrase) {
		size_t len = strcspn(phrase, " ");
		if (i + n >= sp->n || strlen(sp->c[i + n].word) != len || strncmp(sp->c[i + n].word, phrase, len) != 0)
			return 0;
		n++;
		phrase += len;
		if (*phrase == ' ')
			phrase++;
	}
	return n;
}

/* The chunk ends a quoted value that started before it (or begins one): a conjunction there is the value's. */
static bool inside_quotes(const struct split *sp, size_t at)
{
	const char *q = sp->in->question;
	int open = 0;
	for (size_t i = 0; i < sp->c[at].start; i++)
		if (q[i] == '"')
			open ^= 1;
	return open;
}

/* A run of chunks [from, to) of the question. */
struct run {
	size_t from, to;
};

/* The text of the runs, in order, one space between them, into sp->text (empty runs skipped). */
static void clause_text(struct split *sp, const struct run *runs, size_t n_runs)
{
	const char *q = sp->in->question;
	size_t n = 0;
	for (size_t r = 0; r < n_runs; r++) {
		if (runs[r].to <= runs[r].from)
			continue;
		if (n)
			sp->text[n++] = ' ';
		size_t len = sp->c[runs[r].to - 1].end - sp->c[runs[r].from].start;
		memcpy(sp->text + n, q + sp->c[runs[r].from].start, len);
		n += len;
	}
	sp->text[n] = '\0';
}

/* Read sp->text as a whole question: BI_COMPOUND_READ read as a plain list, BI_COMPOUND_NONE not (refused,
   not a plain list, or no readings left), -T2S_ERR_NOMEM. */
static int read_list(struct split *sp, struct bi_query *q)
{
	if (sp->reads-- <= 0)
		return BI_COMPOUND_NONE;
	struct builtin_input sub = *sp->in;
	sub.question = sp->text;
	struct bi_refusal why = {0};
	int rc = builtin_read(&sub, q, &why, NULL);
	if (rc < 0)
		return rc;
	if (rc == BI_REFUSED_QUESTION)
		return BI_COMPOUND_NONE;
	bool plain = q->agg == BI_NONE && !q->grouped && !q->most && !q->having && !q->ordered && !q->limit &&
		     !q->top && !q->star && !q->per_row && q->n_select > 0;
	return plain ? BI_COMPOUND_READ : BI_COMPOUND_NONE;
}

static bool same_filter(const struct bi_filter *a, const struct bi_filter *b)
{
	if (a->col.table != b->col.table || a->col.column != b->col.column || strcmp(a->op, b->op) != 0)
		return false;
	if (a->text || b->text)
		return a->text && b->text && strcmp(a->text, b->text) == 0;
	return a->num == b->num && a->num2 == b->num2 && a->average == b->average;
}

/* b repeats none of a's conditions, and both have one of their own. */
static bool distinct_conditions(const struct bi_query *a, const struct bi_query *b)
{
	if (a->n_filters + (a->neg_table >= 0) == 0 || b->n_filters + (b->neg_table >= 0) == 0)
		return false;
	if (a->neg_table >= 0 && a->neg_table == b->neg_table)
		return false;
	for (size_t i = 0; i < a->n_filters; i++)
		for (size_t j = 0; j < b->n_filters; j++)
			if (same_filter(&a->filters[i], &b->filters[j]))
				return false;
	return true;
}

static bool same_select(const struct bi_query *a, const struct bi_query *b)
{
	if (a->table != b->table || a->n_select != b->n_select)
		return false;
	for (size_t i = 0; i < a->n_select; i++)
		if (a->select[i].table != b->select[i].table || a->select[i].column != b->select[i].column)
			return false;
	return true;
}

/* Conditions one row cannot meet at once: one column filtered in both, or a condition on another table. */
static bool cannot_hold_on_one_row(const struct bi_query *a, const struct bi_query *b)
{
	for (size_t i = 0; i < a->n_filters; i++)
		for (size_t j = 0; j < b->n_filters; j++)
			if (a->filters[i].col.table == b->filters[j].col.table &&
			    a->filters[i].col.column == b->filters[j].col.column)
				return true;
	const struct bi_query *qs[2] = {a, b};
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < qs[k]->n_filters; i++)
			if (qs[k]->filters[i].col.table != qs[k]->table)
				return true;
	return false;
}

/* Each of b's conditions is on a column a filters too. */
static bool filters_one_column(const struct bi_query *a, const struct bi_query *b)
{
	for (size_t j = 0; j < b->n_filters; j++) {
		bool found = false;
		for (size_t i = 0; i < a->n_filters && !found; i++)
			found = a->filters[i].col.table == b->filters[j].col.table &&
				a->filters[i].col.column == b->filters[j].col.column;
		if (!found)
			return false;
	}
	return true;
}

/* The compound's two readings and its operator. */
struct compound {
	struct bi_query a, b;
	const char *op; /* "INTERSECT", "EXCEPT", "UNION" */
};

/* B, head [0, k) then chunks [rest, n): the longest head (k = both when there is one) with which B reads as
   the same list as co->a with conditions of its own.  BI_COMPOUND_READ when found, BI_COMPOUND_NONE not,
   -T2S_ERR_NOMEM. */
static int read_second(struct split *sp, size_t cue, size_t both, size_t rest, struct compound *co)
{
	size_t top = both < cue ? both : cue - 1;
	size_t low = both < cue ? both : 1;
	for (size_t k = top + 1; k-- > low;) {
		clause_text(sp, (struct run[]){{0, k}, {rest, sp->n}}, 2);
		int rc = read_list(sp, &co->b);
		if (rc < 0)
			return rc;
		if (rc == BI_COMPOUND_READ && same_select(&co->a, &co->b) && distinct_conditions(&co->a, &co->b))
			return BI_COMPOUND_READ;
	}
	/* "both players having more than 20 points and less than 10 points": B says only its condition on the
	   column A filters; the words of A before that condition are its head too */
	for (size_t k = cue; both < cue && k-- > both + 2;) {
		clause_text(sp, (struct run[]){{0, both}, {both + 1, k}, {rest, sp->n}}, 3);
		int rc = read_list(sp, &co->b);
		if (rc < 0)
			return rc;
		if (rc == BI_COMPOUND_READ && same_select(&co->a, &co->b) && distinct_conditions(&co->a, &co->b) &&
		    co->a.n_filters == co->b.n_filters && filters_one_column(&co->a, &co->b))
			return BI_COMPOUND_READ;
	}
	return BI_COMPOUND_NONE;
}

/*
 * Clause A is chunks [0, cue) without the chunk `both` (SIZE_MAX: none); B as read_second.  Not
 * tried: A followed by B's last words ("both the X and Y genres"): measured, those words were read
 * as shown columns more often than as the noun both values qualify.  BI_COMPOUND_READ when found
 * (in co), BI_COMPOUND_NONE not, -T2S_ERR_NOMEM.
 */
static int try_split(struct split *sp, size_t cue, size_t both, size_t rest, struct compound *co)
{
	if (rest >= sp->n || cue == 0)
		return BI_COMPOUND_NONE;
	size_t head = both < cue ? both : cue;
	clause_text(sp, (struct run[]){{0, head}, {head < cue ? head + 1 : cue, cue}}, 2);
	int rc = read_list(sp, &co->a);
	return rc ? rc : read_second(sp, cue, both, rest, co);
}

/* The cue at chunk i: BI_COMPOUND_READ and co filled when a compound reads there, BI_COMPOUND_NONE not,
   -T2S_ERR_NOMEM. */
static int try_cue(struct split *sp, size_t i, struct compound *co)
{
	const char *w = sp->c[i].word;
	bool but = strcmp(w, "but") == 0, or = strcmp(w, "or") == 0;
	if ((!but && !or && strcmp(w, "and") != 0) || inside_quotes(sp, i))
		return BI_COMPOUND_NONE;
	size_t rest = i + 1, neg = 0;
	for (const char *const *p = NEGATIONS; *p && !neg && !or; p++)
		neg = phrase_at(sp, rest, *p);
	if (neg) {
		co->op = "EXCEPT";
		rest += neg;
	} else if (but) {
		return BI_COMPOUND_NONE; /* "X but Y": both, though not always (refused) */
	} else {
		co->op = or ? "UNION" : "INTERSECT";
	}
	/* "both X and Y", "either X or Y": the head ends before the cue's partner */
	size_t both = SIZE_MAX;
	for (size_t k = 0; k < i && !neg; k++)
		if (strcmp(sp->c[k].word, or ? "either" : "both") == 0)
			both = k;
	int rc = try_split(sp, i, both, rest, co);
	if (rc)
		return rc;
	if (!neg && !or && both == SIZE_MAX && !cannot_hold_on_one_row(&co->a, &co->b))
		return BI_COMPOUND_NONE; /* two conditions one row may meet: the reading's AND, not an intersection */
	return BI_COMPOUND_READ;
}

/*
 * a OR-ed with b when both select the same columns from the same one table (a and b up to their
 * first " WHERE " are the same text, no quoted name in it): "SELECT c FROM t WHERE (p) OR (q)",
 * which keeps the rows a UNION would merge.  malloc'd; NULL when they do not, or out of memory.
 */
static char *or_conditions(const char *a, const char *b)
{
	const char *wa = strstr(a, " WHERE ");
	size_t head = wa ? (size_t)(wa - a) + 7 : 0;
	if (!wa || strncmp(a, b, head) != 0 || memchr(a, '"', head) || strstr(a, " JOIN "))
		return NULL;
	size_t n = strlen(a) + strlen(b) - head + 12;
	char *sql = malloc(n);
	if (sql)
		snprintf(sql, n, "%.*s(%s) OR (%s)", (int)head, a, a + head, b + head);
	return sql;
}

int builtin_read_compound(const struct builtin_input *in, struct builtin_result *ret)
{
	struct split *sp = calloc(1, sizeof(*sp));
	struct compound *co = malloc(sizeof(*co));
	char *text = malloc(strlen(in->question) + 2);
	int rc = sp && co && text ? BI_COMPOUND_NONE : -T2S_ERR_NOMEM;
	if (rc > 0) {
		sp->in = in;
		sp->text = text;
		sp->reads = CO_MAX_READS;
		split_chunks(sp);
	}
	for (size_t i = 1; rc == BI_COMPOUND_NONE && !sp->truncated && i + 1 < sp->n; i++)
		rc = try_cue(sp, i, co);
	if (rc == BI_COMPOUND_READ) {
		char *a = builtin_write_sql(in->schema, &co->a), *b = builtin_write_sql(in->schema, &co->b);
		bool or = strcmp(co->op, "UNION") == 0;
		size_t n = a && b ? strlen(a) + strlen(co->op) + strlen(b) + 3 : 0;
		if (n && or)
			ret->sql = or_conditions(a, b);
		if (n && !ret->sql && (ret->sql = malloc(n)))
			snprintf(ret->sql, n, "%s %s %s", a, co->op, b);
		if (ret->sql) {
			ret->shape = or ? "union" : strcmp(co->op, "INTERSECT") == 0 ? "intersect" : "except";
			ret->confidence = co->a.confidence * co->b.confidence * CO_CONFIDENCE;
		} else {
			rc = -T2S_ERR_NOMEM;
		}
		free(a);
		free(b);
	}
	free(text);
	free(co);
	free(sp);
	return rc;
}
