/*
 * builtin_relations.c - the relations phase and the last words of a reading
 * (see builtin_reader.h).  Relations: unread verbs between the two tables
 * of a join ("made", "teaches"), read as the key that joins them.  Last,
 * after the select list: a verb no other rule read ("the ships involved",
 * "classes offered", "clients who use") read as the relation the tables
 * already hold, unless it shares a column's stem or spells one with its
 * particle ("logged in": user_login) or follows "the" / a number ("two
 * affected regions"); "available" where no column says it; a preposition
 * between the two tables' names ("albums by the artist"); a relative
 * "where" ("the department where has the most").
 */
#include "pipeline/builtin/builtin_reader.h"

#include <stdio.h>
#include <string.h>

static enum bi_verdict read_relation_verbs(struct reader *rd)
{
	const struct bi_query *q = rd->q;
	if (!rd->in->wordnet || q->join_table < 0)
		return 0;
	for (size_t i = 0; i < rd->r.ws.n; i++) {
		if (rd->read[i] || rd->r.mention_at[i] >= 0 || rd->r.is_number[i] || bi_filler(rd, i) ||
		    !bi_relation_verb(rd->in->wordnet, rd->r.ws.w[i]))
			continue;
		/* what it relates to: a name or value of the join after it, past prepositions and read cue words */
		size_t j = i + 1;
		while (j < rd->r.ws.n && rd->r.mention_at[j] < 0 && bi_table_at(rd, j) < 0 &&
		       (bi_verb_preposition(rd->r.ws.w[j]) || rd->read[j]))
			j++;
		/* it relates the main table's rows to the joined table's: a stored value there, or its rows counted */
		int t = j < rd->r.ws.n ? bi_table_at(rd, j) : -1;
		bool counted = q->per_row && rd->r.mention_at[j] >= 0 && rd->r.mentions[rd->r.mention_at[j]].col.table == -1;
		bool value = t >= 0 && rd->r.mention_at[j] < 0;
		if (t != q->join_table || !(counted || value))
			continue;
		bi_mark(rd, i, 1);
		rd->q->n_verbs++;
		for (size_t k = i + 1; k < j; k++)
			if (bi_verb_preposition(rd->r.ws.w[k]))
				bi_mark(rd, k, 1);
	}
	return 0;
}

/* Does verb i share a stem with a column of a table the reading uses, or its base form and the particle
   after it spell a word of one ("logged in": user_login)? */
static bool stem_of_a_column(const struct reader *rd, size_t i)
{
	const char *w = rd->r.ws.w[i];
	char phrasal[4][2 * QUESTION_MAX_WORD];
	size_t n_phrasal = 0;
	const char *base[4];
	size_t nb = i + 1 < rd->r.ws.n && bi_in_list(rd->r.ws.w[i + 1], (const char *const[]){"in", "out", "up", "on",
										  "off", "over", NULL})
			    ? wordnet_morphy(rd->in->wordnet, w, WORDNET_VERB, base, 4)
			    : 0;
	for (size_t k = 0; k < nb; k++)
		snprintf(phrasal[n_phrasal++], sizeof(phrasal[0]), "%s%s", base[k], rd->r.ws.w[i + 1]);
	const int tables[3] = {rd->q->table, rd->q->join_table, rd->q->bridge};
	char cw[8][QUESTION_MAX_WORD];
	for (int k = 0; k < 3; k++)
		for (size_t c = 0; tables[k] >= 0 && c < rd->s->tables[tables[k]].n_columns; c++) {
			const char *name = rd->s->tables[tables[k]].columns[c].name;
			if (bi_shares_stem(w, name))
				return true;
			int n = n_phrasal ? bi_name_words(name, cw, 8) : 0;
			for (int x = 0; x < n; x++)
				for (size_t p = 0; p < n_phrasal; p++)
					if (strcmp(cw[x], phrasal[p]) == 0)
						return true;
		}
	return false;
}

/* A word that is a noun too, placed as a verb: after a relative pronoun or a plural table's name ("clients who
   use", "mountains they climb", "students living in"). */
static bool verb_in_place(const struct reader *rd, size_t i)
{
	const char *base[1];
	if (wordnet_morphy(rd->in->wordnet, rd->r.ws.w[i], WORDNET_VERB, base, 1) == 0 || bi_not_relation(base[0]))
		return false;
	const char *prev = rd->r.ws.w[i - 1];
	int o = rd->r.mention_at[i - 1];
	bool plural_table = o >= 0 && rd->r.mentions[o].col.table == -1 && prev[strlen(prev) - 1] == 's';
	return plural_table || bi_in_list(prev, (const char *const[]){"who", "that", "which", "they", "we", NULL});
}

static enum bi_verdict read_idle_verbs(struct reader *rd)
{
	if (!rd->in->wordnet || rd->q->table < 0)
		return 0;
	for (size_t i = 1; i < rd->r.ws.n; i++) {
		const char *w = rd->r.ws.w[i];
		if (rd->read[i] || rd->r.mention_at[i] >= 0 || rd->r.is_number[i] || bi_filler(rd, i) ||
		    !(bi_relation_verb(rd->in->wordnet, w) || verb_in_place(rd, i)))
			continue;
		if (stem_of_a_column(rd, i)) {
			/* "the describing content": a form of the column the next word names (description); "the
			   investor that has invested in": of a column the question names already */
			for (size_t k = 0; k < rd->r.n_mentions; k++) {
				const struct bi_mention *m = &rd->r.mentions[k];
				bool next = m->start == (int)i + 1;
				if (m->dropped || m->col.table < 0 || m->col.column < 0 || !(next || m->used) ||
				    !bi_shares_stem(w, rd->s->tables[m->col.table].columns[m->col.column].name))
					continue;
				bi_mark(rd, i, 1);
				break;
			}
			continue;
		}
		/* "two affected regions", "the related people": a participle naming a kind of thing */
		if (rd->r.is_number[i - 1] || bi_in_list(rd->r.ws.w[i - 1], (const char *const[]){"the", "a", "an",
						"all", "any", "some", "most", NULL}))
			continue;
		/* "involved in the tryout": the prepositions before a name or value */
		size_t j = i + 1;
		while (j < rd->r.ws.n && !rd->read[j] && bi_verb_preposition(rd->r.ws.w[j]))
			j++;
		bi_mark(rd, i, 1);
		rd->q->n_verbs++;
		/* and a preposition left at the question's end ("which banks are located at") */
		for (size_t k = i + 1; (j == rd->r.ws.n || rd->read[j]) && k < j; k++)
			bi_mark(rd, k, 1);
	}
	return 0;
}

static enum bi_verdict read_idle_words(struct reader *rd)
{
	if (!rd->in->wordnet || rd->q->table < 0)
		return 0;
	/* "available hotels", "the activities available": the rows there are, where no column says so
	   (bikes_available) */
	for (size_t i = 0; i < rd->r.ws.n; i++)
		if (!rd->read[i] && rd->r.mention_at[i] < 0 && strcmp(rd->r.ws.w[i], "available") == 0 &&
		    !stem_of_a_column(rd, i))
			bi_mark(rd, i, 1);
	/* "albums by the artist AC/DC", "invoice dates corresponding to customers": a preposition between
	   the main table's name and the joined table's, read as the key that joins them */
	for (size_t i = 1; rd->q->join_table >= 0 && i + 1 < rd->r.ws.n; i++) {
		if (rd->read[i] || !bi_in_list(rd->r.ws.w[i], (const char *const[]){"by", "to", "from", "for", "with", NULL}))
			continue;
		size_t j = i + 1;
		while (j < rd->r.ws.n && bi_in_list(rd->r.ws.w[j], (const char *const[]){"the", "a", "an", "each", NULL}))
			j++;
		int t = j < rd->r.ws.n ? bi_table_at(rd, j) : -1;
		int before = rd->r.mention_at[i - 1];
		bool after_table = before >= 0 && rd->r.mentions[before].col.table == -1;
		if (t >= 0 && t != rd->q->table && (after_table || strcmp(rd->r.ws.w[i - 1], "corresponding") == 0))
			bi_mark(rd, i, j - i);
	}
	return 0;
}

/* "the department where has the most", "transactions where the amount is": a relative "where" (one that opens
   the question asks where) */
static enum bi_verdict read_relative_where(struct reader *rd)
{
	for (size_t i = 1; i < rd->r.ws.n; i++)
		if (strcmp(rd->r.ws.w[i], "where") == 0)
			bi_mark(rd, i, 1);
	return BI_GOES_ON;
}

static const struct bi_rule RELATION_RULES[] = {
	{"relation_verbs", read_relation_verbs},
};

const struct bi_phase bi_relation_phase = {"relations", RELATION_RULES,
					   sizeof(RELATION_RULES) / sizeof(RELATION_RULES[0])};

static const struct bi_rule LAST_RULES[] = {
	{"idle_verbs", read_idle_verbs},
	{"idle_words", read_idle_words},
	{"relative_where", read_relative_where},
};

const struct bi_phase bi_last_phase = {"last words", LAST_RULES, sizeof(LAST_RULES) / sizeof(LAST_RULES[0])};
