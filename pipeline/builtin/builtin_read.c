/*
 * builtin_read.c - the reader's primitives (see builtin_reader.h), the bottom
 * of pipeline/builtin/: a phrase at a word, a word's claim by the rule that
 * reads it, the filler words, the next word, the column named at a word, a
 * number column, a refusal, a condition added.  Every rule calls these; they
 * call no rule.
 */
#include "pipeline/builtin/builtin_reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Words that carry no meaning of their own here: read wherever they stand. */
static const char *const FILLER[] = {
	"the", "a", "an", "of", "all", "are", "is", "was", "were", "be", "been", "there", "what", "which", "who",
	"whom", "whose", "that", "those", "these", "in", "on", "for", "with", "from", "have", "has", "had", "do",
	"does", "did", "me", "us", "we", "you", "please", "give", "show", "list", "find", "return", "tell",
	"display", "get", "provide", "their", "its", "his", "her", "they", "them", "it", "and", "each", "every",
	"any", "whole", "entire", "table", "database", "records", "record", "stored", "listed", "recorded",
	"exist", "existing", "currently", "across", "corresponding", "respective", "respectively", "along",
	"together", "among", "compute", "live", "lives", "lived", NULL,
};

enum bi_verdict bi_refuse(struct reader *rd, const char *code, const char *fmt, ...)
{
	rd->why->code = code;
	rd->why->rule = rd->rule;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rd->why->reason, sizeof(rd->why->reason), fmt, ap);
	va_end(ap);
	return BI_REFUSED;
}

bool bi_in_list(const char *w, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(w, *list) == 0)
			return true;
	return false;
}

/* phrase at word i, none of its words read yet by another rule */
bool bi_at(const struct reader *rd, size_t i, const char *phrase)
{
	if (!question_words_phrase_at(&rd->r.ws, i, phrase))
		return false;
	for (size_t k = 0; k < question_phrase_words(phrase); k++)
		if (rd->read[i + k] || rd->r.mention_at[i + k] >= 0)
			return false;
	return true;
}

void bi_mark(struct reader *rd, size_t i, size_t n)
{
	for (size_t k = 0; k < n && i + k < rd->r.ws.n; k++) {
		rd->read[i + k] = true;
		if (!rd->claim[i + k])
			rd->claim[i + k] = rd->rule;
	}
}

bool bi_filler_word(const char *w)
{
	return bi_in_list(w, FILLER);
}

bool bi_filler(const struct reader *rd, size_t i)
{
	return bi_filler_word(rd->r.ws.w[i]);
}

/* The next word at or after i that is not filler (words read by a rule are skipped too when skip_read). */
size_t bi_next_word(const struct reader *rd, size_t i)
{
	while (i < rd->r.ws.n && rd->r.mention_at[i] < 0 && !rd->r.is_number[i] && bi_filler(rd, i) && !rd->read[i])
		i++;
	return i;
}

/* The mention starting at word i whose resolved column is set (not the table), or NULL. */
struct bi_mention *bi_column_at(struct reader *rd, size_t i)
{
	if (i >= rd->r.ws.n || rd->r.mention_at[i] < 0)
		return NULL;
	struct bi_mention *m = &rd->r.mentions[rd->r.mention_at[i]];
	return m->start == (int)i && m->col.table >= 0 && !m->used ? m : NULL;
}

/*
 * A number column, or on SQLite a text column whose sampled values are all numbers (a year kept as
 * text: SQLite compares and sums such values; PostgreSQL refuses text against a number).
 */
bool bi_is_number_col(const struct reader *rd, struct bi_col c)
{
	const struct schema_column *col = &rd->s->tables[c.table].columns[c.column];
	if (schema_column_is_number(col))
		return true;
	if (!rd->s->engine->loose_types || col->type_class == SCHEMA_TYPE_DATE || col->n_samples == 0 || col->key)
		return false;
	return schema_column_numeric_samples(col) == col->n_samples;
}

bool bi_word_of_phrases(const char *w, const char *const *const *lists)
{
	size_t n = strlen(w);
	for (const char *const *const *l = lists; *l; l++)
		for (const char *const *p = *l; *p; p++)
			for (const char *q = *p; (q = strstr(q, w)) != NULL; q += n)
				if ((q == *p || q[-1] == ' ') && (q[n] == '\0' || q[n] == ' '))
					return true;
	return false;
}

enum bi_verdict bi_add_filter(struct reader *rd, struct bi_filter f)
{
	for (size_t k = 0; k < rd->q->n_filters; k++)
		if (rd->q->filters[k].col.table == f.col.table && rd->q->filters[k].col.column == f.col.column)
			return bi_refuse(rd, "one_column_two_values", "two conditions on one column: both or either is not said");
	if (rd->q->n_filters == BI_MAX_FILTERS)
		return bi_refuse(rd, "too_many_filters", "more conditions than the built-in reads");
	rd->q->filters[rd->q->n_filters++] = f;
	return BI_GOES_ON;
}

size_t bi_average_at(const struct reader *rd, size_t i)
{
	if (question_words_phrase_at(&rd->r.ws, i, "the average"))
		return 2;
	return question_words_phrase_at(&rd->r.ws, i, "average") ? 1 : 0;
}
