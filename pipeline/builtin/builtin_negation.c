/*
 * builtin_negation.c - negation (see builtin.h): the negated table ("that do
 * not have any <table>", "did not receive any <table>", "never attended
 * <table>", "are not perpetrators", "not on any committee", "without
 * <table>"), read while lexing and placed with the tables (the rows of the
 * main table no row of that table refers to: NOT IN over its one foreign
 * key); and the "not" before a value ("not from Spain") the conditions read.
 */
#include "pipeline/builtin/builtin_reader.h"

#include <string.h>

size_t bi_value_negation(const struct reader *rd, size_t b)
{
	size_t j = b;
	static const char *const NOT[] = {"not", "don't", "doesn't", "didn't", NULL};
	while (j > 0 && !rd->read[j - 1] && rd->r.mention_at[j - 1] < 0 &&
	       (bi_value_preposition(rd->r.ws.w[j - 1]) || strcmp(rd->r.ws.w[j - 1], "the") == 0))
		j--;
	/* "not living in Hartford": a verb between "not" and the value's preposition */
	const char *verb[1];
	if (j >= 2 && j < b && !rd->read[j - 1] && rd->r.mention_at[j - 1] < 0 && !rd->r.is_number[j - 1] &&
	    rd->in->wordnet && wordnet_morphy(rd->in->wordnet, rd->r.ws.w[j - 1], WORDNET_VERB, verb, 1) > 0 &&
	    !rd->read[j - 2] && bi_in_list(rd->r.ws.w[j - 2], NOT))
		j--;
	if (j == 0 || rd->read[j - 1] || !bi_in_list(rd->r.ws.w[j - 1], NOT))
		return b;
	/* "do not belong to": the auxiliary before "not" too */
	if (strcmp(rd->r.ws.w[j - 1], "not") == 0 && j >= 2 && !rd->read[j - 2] &&
	    bi_in_list(rd->r.ws.w[j - 2], (const char *const[]){"do", "does", "did", NULL}))
		return j - 2;
	return j - 1;
}

/*
 * "that do not have any <table>", "without <table>": the rows of the main table no row of that
 * table refers to (NOT IN over its one foreign key to the main table).  Read before the tables
 * are chosen: the negated table's name does not count as a name of the main reading.
 */
enum bi_verdict bi_read_negated_table(struct reader *rd)
{
	static const char *const NEG[] = {"do not have any", "does not have any", "did not have any", "do not have",
					  "does not have", "did not have", "don't have any", "doesn't have any",
					  "don't have", "doesn't have", "have no", "has no", "had no", "without any",
					  "without", NULL};
	/* "did not receive any <table>", "never attended <table>", "not used by any <table>": a verb between */
	static const char *const NOT_VERB[] = {"do not", "does not", "did not", "don't", "doesn't", "didn't", "never",
					       "not", NULL};
	static const char *const BEFORE_TABLE[] = {"a", "an", "any", "in", "on", "at", "by", "to", "for", "with",
						   "from", "into", "part", "of", NULL};
	/* "people that are not perpetrators", "editors not on any journal committee": only before a table */
	static const char *const NOT_BE[] = {"are not", "is not", "were not", "was not", "not", NULL};
	for (size_t i = 0; i < rd->r.ws.n; i++)
		for (const char *const *p = NEG; *p; p++) {
			size_t n = 0;
			bool verb = false;
			if (question_words_phrase_at(&rd->r.ws, i, *p)) {
				n = question_phrase_words(*p);
			} else if (p == NEG) {
				for (const char *const *v = NOT_VERB; rd->in->wordnet && *v && !n; v++) {
					size_t k = i + question_phrase_words(*v);
					if (question_words_phrase_at(&rd->r.ws, i, *v) && k < rd->r.ws.n &&
					    rd->r.mention_at[k] < 0 && bi_relation_verb(rd->in->wordnet, rd->r.ws.w[k]))
						n = k + 1 - i;
				}
				for (const char *const *b = NOT_BE; *b && !n; b++)
					if (question_words_phrase_at(&rd->r.ws, i, *b))
						n = question_phrase_words(*b);
				verb = n > 0;
			}
			if (!n)
				continue;
			size_t j = bi_next_word(rd, i + n);
			while (j < rd->r.ws.n && bi_in_list(rd->r.ws.w[j], verb ? BEFORE_TABLE : (const char *const[]){"a", "an", NULL}))
				j++;
			int mi = j < rd->r.ws.n ? rd->r.mention_at[j] : -1;
			struct bi_mention *m = mi >= 0 ? &rd->r.mentions[mi] : NULL;
			if (verb && (!m || m->table < 0 || m->start != (int)j))
				break; /* not a table after the verb: another rule's ("is not located in Tokyo") */
			if (!m || m->table < 0 || m->table_ambiguous || m->start != (int)j)
				return bi_refuse(rd, "unread_negation", "'%s' of something the built-in does not read", *p);
			/* "locations which don't have a station with at least 15 platforms": a condition on the negated
			   rows, not on the main table's */
			size_t after = j + (size_t)m->len;
			if (after < rd->r.ws.n && bi_in_list(rd->r.ws.w[after], (const char *const[]){"with", "that", "which",
												   "whose", "where", NULL}))
				return bi_refuse(rd, "negation_shape", "a condition on the negated table's rows");
			rd->q->neg_table = m->table;
			bi_drop_mention(&rd->r, mi);
			bi_mark(rd, i, j + (size_t)m->len - i);
			return 0;
		}
	return 0;
}

/* After the tables: the negated table refers to the main table by one foreign key. */
enum bi_verdict bi_place_negated_table(struct reader *rd)
{
	struct bi_query *q = rd->q;
	if (q->neg_table < 0)
		return 0;
	if (q->join_table >= 0 || q->neg_table == q->table)
		return bi_refuse(rd, "negation_shape", "a negated table beside a join");
	const struct schema_table *u = &rd->s->tables[q->neg_table];
	int found = -1;
	for (size_t k = 0; k < u->n_foreign_keys; k++)
		if (u->foreign_keys[k].ref_index == q->table && u->foreign_keys[k].n_columns == 1) {
			if (found >= 0)
				return bi_refuse(rd, "negation_shape", "two keys of the negated table refer to the main one");
			found = (int)k;
		}
	if (found < 0)
		return bi_refuse(rd, "negation_shape", "the negated table does not refer to the main table");
	q->neg_fk = found;
	return 0;
}
