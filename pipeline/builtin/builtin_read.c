/*
 * builtin_read.c - the built-in generator's reading of a question (see
 * builtin.h): the main table (and at most one table a foreign key of it
 * joins), then the cue phrases in a fixed order (count, aggregates and
 * superlatives, grouping, ordering, comparisons, stored values, DISTINCT),
 * the select list from the column names left, and last the rule that makes
 * it precise: every word is read, or the question is refused.
 */
#include "pipeline/builtin/builtin_internal.h"
#include "pipeline/builtin/builtin_names.h"
#include "pipeline/builtin/builtin_reader.h"

#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* Aggregate words: the function they ask for before a column name. */
static const struct {
	const char *word;
	enum bi_agg agg;
} AGGREGATES[] = {
	{"average", BI_AVG}, {"mean", BI_AVG}, {"avg", BI_AVG}, {"total", BI_SUM}, {"sum", BI_SUM},
	{"maximum", BI_MAX}, {"max", BI_MAX}, {"highest", BI_MAX}, {"largest", BI_MAX}, {"biggest", BI_MAX},
	{"greatest", BI_MAX}, {"minimum", BI_MIN}, {"min", BI_MIN}, {"lowest", BI_MIN}, {"smallest", BI_MIN},
	{"longest", BI_MAX}, {"shortest", BI_MIN}, {"latest", BI_MAX}, {"earliest", BI_MIN},
};


static const char *const DISTINCT[] = {"distinct", "different", "unique", NULL};
static const char *const GROUP_BY[] = {"for each", "for every", "in each", "of each", "at each", "from each", "per",
				       "by each", "each", "for different", "in different", "across different",
				       "of different", "for all different", NULL};

static int aggregate_of(const char *w)
{
	for (size_t a = 0; a < sizeof(AGGREGATES) / sizeof(AGGREGATES[0]); a++)
		if (strcmp(w, AGGREGATES[a].word) == 0)
			return (int)AGGREGATES[a].agg;
	return -1;
}

bool bi_in_list(const char *w, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(w, *list) == 0)
			return true;
	return false;
}

static size_t phrase_len(const char *p)
{
	return question_phrase_words(p);
}

/* phrase at word i, none of its words read yet by another rule */
bool bi_at(const struct reader *rd, size_t i, const char *phrase)
{
	if (!question_words_phrase_at(&rd->r.ws, i, phrase))
		return false;
	for (size_t k = 0; k < phrase_len(phrase); k++)
		if (rd->read[i + k] || rd->r.mention_at[i + k] >= 0)
			return false;
	return true;
}

void bi_mark(struct reader *rd, size_t i, size_t n)
{
	for (size_t k = 0; k < n && i + k < rd->r.ws.n; k++)
		rd->read[i + k] = true;
}

bool bi_filler(const struct reader *rd, size_t i)
{
	return bi_in_list(rd->r.ws.w[i], FILLER);
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

/*
 * Words of an ordering phrase ("in descending order", "sorted by") are cue words, not names: a
 * table "orders" does not make "order" a name.  Mentions over them are dropped before the tables
 * are chosen.
 */
static int unmention_cues(struct reader *rd)
{
	struct bi_words *r = &rd->r;
	for (size_t i = 0; i < r->ws.n; i++) {
		size_t n = bi_order_phrase_at(&r->ws, i);
		/* "the number of": a count, not a column "number" (a column "number of rooms" is a longer name) */
		if (!n && question_words_phrase_at(&r->ws, i, "number of") && r->mention_at[i] >= 0 &&
		    r->mentions[r->mention_at[i]].len == 1 && r->mentions[r->mention_at[i]].table < 0)
			n = 1;
		for (size_t k = 0; k < n; k++) {
			if (r->mention_at[i + k] >= 0)
				bi_drop_mention(r, r->mention_at[i + k]);
		}
	}
	return 0;
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

/* Is w a word of some cue phrase (then it is not read as a schema name's synonym)? */
static bool cue_word(const char *w)
{
	static const char *const *const LISTS[] = {FILLER, DISTINCT, GROUP_BY, NULL};
	return bi_word_of_phrases(w, LISTS) || aggregate_of(w) >= 0 || bi_link_word(w) || bi_comparison_word(w) ||
	       bi_order_cue_word(w);
}

/* Does table t store word i as a value (case and a plural 's' aside: "professors" and 'Professor')? */
static bool stored_word(const struct reader *rd, size_t i, int t)
{
	const struct evidence_result *ev = rd->in->evidence;
	for (size_t v = 0; ev && v < ev->n_values; v++) {
		const char *x = ev->values[v].value, *w = rd->r.ws.w[i];
		size_t n = x ? strlen(x) : 0;
		if (ev->values[v].table == t && n > 0 &&
		    (strcasecmp(x, w) == 0 || (strncasecmp(x, w, n) == 0 && strcmp(w + n, "s") == 0)))
			return true;
	}
	return false;
}

/* "Report all majors ...", "For each cycle, report the number of ...": "report" opening a clause asks, like
   "show"; a schema name it may be gives way. */
static int read_imperatives(struct reader *rd)
{
	struct bi_words *r = &rd->r;
	for (size_t i = 0; i < r->ws.n; i++) {
		if (strcmp(r->ws.w[i], "report") != 0 || !(i == 0 || rd->in->question[r->ws.end[i - 1]] == ','))
			continue;
		int o = r->mention_at[i];
		if (o >= 0 && r->mentions[o].len != 1)
			continue;
		if (o >= 0)
			bi_drop_mention(r, o);
		bi_mark(rd, i, 1);
	}
	return 0;
}

/* Words the schema never says: read as the table or column name WordNet gives as their synonym. */
static int read_synonyms(struct reader *rd)
{
	struct bi_words *r = &rd->r;
	if (!rd->in->wordnet)
		return 0;
	for (size_t i = 0; i < r->ws.n; i++) {
		/* not words a rule read already ("never placed any"), nor the count in "the number of" */
		if (r->mention_at[i] >= 0 || r->is_number[i] || rd->read[i] || cue_word(r->ws.w[i]) ||
		    (question_words_phrase_at(&r->ws, i, "number of") && (i == 0 || r->mention_at[i - 1] < 0)))
			continue;
		bool in_value = false;
		for (size_t v = 0; v < r->n_values && !in_value; v++)
			in_value = (int)i >= r->values[v].start && (int)i < r->values[v].start + r->values[v].len;
		int pair = 0;
		if (!in_value && i + 1 < r->ws.n && !rd->read[i + 1] && !cue_word(r->ws.w[i + 1]))
			pair = bi_synonym_pair_mention(rd->s, rd->in->wordnet, rd->in->related, r, i);
		if (pair == 0 && !in_value && i + 1 < r->ws.n && !rd->read[i + 1] && !cue_word(r->ws.w[i + 1]))
			pair = bi_synonym_compound_mention(rd->s, rd->in->wordnet, rd->in->related, r, i);
		if (pair == 0 && !in_value)
			pair = bi_synonym_mention(rd->s, rd->in->wordnet, rd->in->related, r, i);
		if (pair < 0)
			return bi_refuse(rd, "too_many_names", "the question names more of the schema than the built-in reads");
		if (pair == 1 && r->mentions[r->mention_at[i]].table >= 0 && stored_word(rd, i, r->mentions[r->mention_at[i]].table))
			return bi_refuse(rd, "table_or_value", "'%s' is a synonym of a table and a value stored in it",
				      r->ws.w[i]);
	}
	bi_keep_named_tables(&rd->r);
	bi_extend_compounds(&rd->r);
	/* "gymnastics athletes" (athletes: gymnast): a word before a table's name sharing that name's stem
	   says the table again */
	for (size_t k = 0; k < r->n_mentions; k++) {
		struct bi_mention *m = &r->mentions[k];
		size_t b = (size_t)m->start;
		if (m->dropped || m->table < 0 || m->n_cands > 0 || b == 0 || r->mention_at[b - 1] >= 0 ||
		    r->is_number[b - 1] || rd->read[b - 1] || !bi_shares_stem(r->ws.w[b - 1], rd->s->tables[m->table].name))
			continue;
		bi_extend_mention_back(r, (int)k);
	}
	return 0;
}

/* After the synonyms: a question naming nothing of the schema, not even through a synonym, is refused. */
static int need_names(struct reader *rd)
{
	for (size_t i = 0; i < rd->r.n_mentions; i++)
		if (!rd->r.mentions[i].dropped)
			return 0;
	return bi_refuse(rd, "no_names", "the question names no table or column of the schema");
}

/* ---- cue rules ---------------------------------------------------------------------- */

/* A table of things: a one-column primary key that refers to nothing (not a table of links). */
static bool entity_table(const struct schema_table *t)
{
	if (t->n_primary_key != 1)
		return false;
	for (size_t c = 0; c < t->n_columns; c++)
		if (t->columns[c].primary_key && t->columns[c].reference)
			return false;
	return true;
}

/* Does an ordering phrase end right before word i, but for "of", "by" and "the" ("sorted by the", "in
   descending order of")? */
static bool after_order_phrase(const struct reader *rd, size_t i)
{
	size_t j = i;
	while (j > 0 && bi_in_list(rd->r.ws.w[j - 1], (const char *const[]){"of", "by", "the", NULL}) && i - j < 2)
		j--;
	for (size_t k = j > 6 ? j - 6 : 0; k < i; k++) {
		size_t n = bi_order_phrase_at(&rd->r.ws, k);
		if (n && k + n >= j && k + n <= i)
			return true;
	}
	return false;
}

static int read_count(struct reader *rd)
{
	struct question_reading qr;
	question_read_words(&rd->r.ws, &qr);
	size_t cue = qr.count_cue_words, start = 0;
	for (size_t i = 0; i + 1 < rd->r.ws.n && !cue; i++) {
		/* "the number of <table>" elsewhere: counted rows of the main table, or of the joined one
		   referring to it (then per row of the main table) */
		static const char *const NUMBER_OF[] = {"the number of", "the total number of", "the count of",
							"number of", "how many", NULL};
		for (const char *const *p = NUMBER_OF; *p && !cue; p++) {
			size_t n = phrase_len(*p), j = bi_next_word(rd, i + n);
			const struct bi_mention *m = j < rd->r.ws.n && rd->r.mention_at[j] >= 0
							     ? &rd->r.mentions[rd->r.mention_at[j]] : NULL;
			bool superlative = i > 0 && (aggregate_of(rd->r.ws.w[i - 1]) >= 0 ||
						     bi_in_list(rd->r.ws.w[i - 1], (const char *const[]){"most", "least",
							     "fewest", "top", NULL}));
			if (bi_at(rd, i, *p) && m && m->col.table == -1 && !superlative && !after_order_phrase(rd, i) &&
			    (m->col.column == rd->q->table ||
			     (m->col.column == rd->q->join_table && rd->q->join_from == rd->q->join_table))) {
				cue = n;
				start = i;
				rd->q->count_listed = i > 0;
			}
		}
	}
	/* "In how many different cities are banks located?": a preposition before the count that opens the question */
	static const char *const OPENING[] = {"in", "for", "on", "at", "from", "to", "with", "by", NULL};
	if (!cue && rd->r.ws.n > 3 && bi_in_list(rd->r.ws.w[0], OPENING) && bi_at(rd, 1, "how many")) {
		cue = 3;
		start = 0;
	}
	/* "the type of the festivals and the count": the main table's rows counted, said last */
	size_t e = rd->r.ws.n;
	if (!cue && e >= 3 && strcmp(rd->r.ws.w[e - 3], "and") == 0 &&
	    (bi_at(rd, e - 2, "the count") || bi_at(rd, e - 2, "their count"))) {
		cue = 2;
		start = e - 2;
		rd->q->count_listed = true;
		rd->q->counted_table = rd->q->table;
	}
	if (!cue)
		return 0;
	bi_mark(rd, start, cue);
	size_t t = bi_next_word(rd, start + cue);
	if (t < rd->r.ws.n && bi_in_list(rd->r.ws.w[t], DISTINCT)) /* "how many different colleges" */
		t = bi_next_word(rd, t + 1);
	if (t < rd->r.ws.n && rd->r.mention_at[t] >= 0 && rd->r.mentions[rd->r.mention_at[t]].col.table == -1)
		rd->q->counted_table = rd->r.mentions[rd->r.mention_at[t]].col.column;
	/* "How many movie directors are there?": the different values of a column (not a number's: "the total
	   number of hours"; nor one read through a synonym) counted */
	struct bi_mention *counted = rd->q->counted_table < 0 ? bi_column_at(rd, start + cue) : NULL;
	if (counted && !counted->synonym && !bi_is_number_col(rd, counted->col)) {
		counted->used = true;
		rd->q->agg = BI_COUNT_DISTINCT;
		rd->q->agg_col = counted->col;
		return 0;
	}
	if (rd->q->counted_table >= 0 && bi_stored_count(rd, rd->q->counted_table))
		return bi_refuse(rd, "stored_count", "a count of rows, and a column keeping that count: which is meant?");
	for (size_t i = 0; i + 1 < rd->r.ws.n; i++)
		if (bi_at(rd, i, "in total"))
			bi_mark(rd, i, 2);
	rd->q->agg = BI_COUNT;
	size_t i = bi_next_word(rd, start + cue);
	if (i < rd->r.ws.n && bi_in_list(rd->r.ws.w[i], DISTINCT) && rd->q->counted_table >= 0 &&
	    rd->r.mention_at[bi_next_word(rd, i + 1)] >= 0 &&
	    rd->r.mentions[rd->r.mention_at[bi_next_word(rd, i + 1)]].col.table == -1 &&
	    entity_table(&rd->s->tables[rd->q->counted_table])) {
		bi_mark(rd, i, 1); /* "how many different colleges": rows of a table are different things */
	} else if (i < rd->r.ws.n && bi_in_list(rd->r.ws.w[i], DISTINCT)) {
		struct bi_mention *m = bi_column_at(rd, bi_next_word(rd, i + 1));
		if (!m)
			return bi_refuse(rd, "unread_distinct", "'%s' is not followed by a column's name", rd->r.ws.w[i]);
		bi_mark(rd, i, 1);
		m->used = true;
		rd->q->agg = BI_COUNT_DISTINCT;
		rd->q->agg_col = m->col;
	}
	return 0;
}

/* "with the highest X", "has the most X": a superlative, not an aggregate. */
static bool superlative_context(const struct reader *rd, size_t i)
{
	static const char *const BEFORE[] = {"with", "has", "have", "having", "had", "whose", NULL};
	if (i < 2 || strcmp(rd->r.ws.w[i - 1], "the") != 0)
		return false;
	if (bi_in_list(rd->r.ws.w[i - 2], BEFORE))
		return true;
	/* "the host of the highest age": after "of" and a table's name */
	int t = i >= 3 && strcmp(rd->r.ws.w[i - 2], "of") == 0 ? rd->r.mention_at[i - 3] : -1;
	return t >= 0 && rd->r.mentions[t].col.table == -1;
}

static bool row_count(const struct reader *rd, size_t i)
{
	return rd->r.is_number[i] && rd->r.number[i] >= 1 && rd->r.number[i] <= 1000 &&
	       rd->r.number[i] == (long)rd->r.number[i];
}

/* "top 5 ... highest X", "the three most recent", "the 5 highest": the superlative's row count */
static int read_top(struct reader *rd)
{
	for (size_t i = 0; i + 1 < rd->r.ws.n; i++) {
		if (bi_at(rd, i, "top") && row_count(rd, i + 1)) {
			rd->q->top = (long)rd->r.number[i + 1];
			bi_mark(rd, i, 2);
			return 0;
		}
		/* a number right after "the" and before a superlative word (the rules after read the word) */
		const char *next = rd->r.ws.w[i + 1];
		size_t len = strlen(next);
		/* "the 3 counties with the smallest population": the rows' count before the table's name (a
		   superlative must follow: else 'top' is refused below) */
		if (i > 0 && strcmp(rd->r.ws.w[i - 1], "the") == 0 && row_count(rd, i) && !rd->read[i] &&
		    rd->r.mention_at[i + 1] >= 0 && rd->r.mentions[rd->r.mention_at[i + 1]].col.table == -1 &&
		    rd->r.mentions[rd->r.mention_at[i + 1]].col.column == rd->q->table) {
			rd->q->top = (long)rd->r.number[i];
			bi_mark(rd, i, 1);
			return 0;
		}
		if (i > 0 && (strcmp(rd->r.ws.w[i - 1], "the") == 0 || strcmp(rd->r.ws.w[i - 1], "with") == 0) &&
		    row_count(rd, i) && !rd->read[i] && rd->r.mention_at[i + 1] < 0 &&
		    (aggregate_of(next) == BI_MAX || aggregate_of(next) == BI_MIN || strcmp(next, "most") == 0 ||
		     strcmp(next, "least") == 0 || strcmp(next, "fewest") == 0 ||
		     (len >= 5 && strcmp(next + len - 3, "est") == 0))) {
			rd->q->top = (long)rd->r.number[i];
			bi_mark(rd, i, 1);
			return 0;
		}
	}
	return 0;
}

static int read_aggregates(struct reader *rd)
{
	long top = rd->q->top;
	for (size_t i = 0; i < rd->r.ws.n; i++) {
		if (rd->read[i] || rd->r.mention_at[i] >= 0 || (i > 0 && strcmp(rd->r.ws.w[i - 1], "at") == 0))
			continue; /* "at least", "at most": comparisons */
		size_t p = i > 0 && strcmp(rd->r.ws.w[i - 1], "the") == 0 ? i - 1 : i;
		if (p > 0 && (strcmp(rd->r.ws.w[p - 1], "from") == 0 || strcmp(rd->r.ws.w[p - 1], "to") == 0))
			continue; /* "from highest to lowest": an ordering's direction */
		int first = aggregate_of(rd->r.ws.w[i]);
		if (first < 0 || (i >= 2 && strcmp(rd->r.ws.w[i - 2], "than") == 0 && strcmp(rd->r.ws.w[i - 1], "the") == 0) ||
		    (i >= 1 && strcmp(rd->r.ws.w[i - 1], "than") == 0))
			continue; /* "larger than the average": a comparison's */
		/* a chain of aggregate words ("average and total", "maximum, minimum") ends at the column */
		enum bi_agg chain[4] = {(enum bi_agg)first};
		size_t n = 1, j = bi_next_word(rd, i + 1);
		while (j < rd->r.ws.n && !rd->read[j] && rd->r.mention_at[j] < 0 && aggregate_of(rd->r.ws.w[j]) >= 0 &&
		       n < 4) {
			chain[n++] = (enum bi_agg)aggregate_of(rd->r.ws.w[j]);
			j = bi_next_word(rd, j + 1);
		}
		/* "the highest average salary": the group with the highest average, not two aggregates */
		if (n >= 2 && i + 1 < rd->r.ws.n && aggregate_of(rd->r.ws.w[i + 1]) >= 0 &&
		    (chain[0] == BI_MAX || chain[0] == BI_MIN) && chain[1] != BI_MAX && chain[1] != BI_MIN &&
		    rd->r.ws.at[i + 1] == rd->r.ws.end[i] + 1 && rd->in->question[rd->r.ws.end[i]] == ' ')
			return bi_refuse(rd, "aggregate_shape", "'%s %s': a superlative of an aggregate", rd->r.ws.w[i],
				      rd->r.ws.w[i + 1]);
		struct bi_mention *m = bi_column_at(rd, j);
		/* "the total checking balance": the table's name before its column */
		if (!m && j < rd->r.ws.n && rd->r.mention_at[j] >= 0) {
			const struct bi_mention *t = &rd->r.mentions[rd->r.mention_at[j]];
			struct bi_mention *c = t->col.table == -1 ? bi_column_at(rd, (size_t)(t->start + t->len)) : NULL;
			if (c && c->col.table == t->col.column)
				m = c;
		}
		/* "the average number of floors", "the total amount of sales": a number column's values */
		if (!m && j + 2 < rd->r.ws.n && (bi_at(rd, j, "number of") || bi_at(rd, j, "amount of")) &&
		    (m = bi_column_at(rd, bi_next_word(rd, j + 2))) != NULL && !bi_is_number_col(rd, m->col))
			m = NULL;
		if (m && (size_t)m->start != j)
			j = (size_t)m->start;
		if (!m)
			return bi_refuse(rd, "unread_aggregate", "'%s' is not followed by a column's name", rd->r.ws.w[i]);
		bool number = bi_is_number_col(rd, m->col);
		bool date = rd->s->tables[m->col.table].columns[m->col.column].type_class == SCHEMA_TYPE_DATE;
		for (size_t k = 0; k < n; k++)
			if (!number && !(date && (chain[k] == BI_MAX || chain[k] == BI_MIN)))
				return bi_refuse(rd, "not_a_number", "'%s' asks for a number, but the column is not one",
					      rd->r.ws.w[i]);
		/* "the highest rank": rank 1 is the highest */
		if (n == 1 && bi_in_list(rd->r.ws.w[i], (const char *const[]){"highest", "lowest", NULL}) &&
		    bi_name_has_word(rd->s->tables[m->col.table].columns[m->col.column].name,
				     (const char *const[]){"rank", "ranking", NULL}))
			chain[0] = chain[0] == BI_MAX ? BI_MIN : BI_MAX;
		if (n == 1 && (superlative_context(rd, i) || top) && (chain[0] == BI_MAX || chain[0] == BI_MIN)) {
			if (rd->q->ordered)
				return bi_refuse(rd, "two_superlatives", "the question asks for two superlatives");
			rd->q->ordered = true;
			rd->q->order = m->col;
			rd->q->desc = chain[0] == BI_MAX;
			rd->q->limit = top ? top : 1;
		} else {
			if (rd->q->agg != BI_NONE)
				return bi_refuse(rd, "two_aggregates", "the question asks for more than one aggregate");
			rd->q->agg = chain[0];
			rd->q->agg_col = m->col;
			for (size_t k = 1; k < n; k++)
				rd->q->more_aggs[rd->q->n_more_aggs++] = chain[k];
			/* "the average height and weight": more number columns under the same aggregates */
			size_t a = (size_t)(m->start + m->len);
			struct bi_mention *more;
			while (rd->q->n_more_cols < 3 && a + 1 < rd->r.ws.n && strcmp(rd->r.ws.w[a], "and") == 0 &&
			       !rd->read[a] && (more = bi_column_at(rd, a + 1)) != NULL && more->start == (int)a + 1 &&
			       more->col.table == m->col.table && bi_is_number_col(rd, more->col) &&
			       !(more->col.column == m->col.column)) {
				rd->q->more_cols[rd->q->n_more_cols++] = more->col;
				more->used = true;
				bi_mark(rd, a, 1);
				a = (size_t)(more->start + more->len);
			}
		}
		m->used = true;
		bi_mark(rd, i, j - i);
		i = j;
	}
	if (top && !rd->q->ordered && !rd->q->most)
		return bi_refuse(rd, "unread_top", "'top' without an ordering");
	return 0;
}

/* "the most common X", "which X has the most <table>": the group with the most rows. */
static int read_most(struct reader *rd)
{
	static const struct {
		const char *phrase;
		bool desc;
		bool table_follows;
	} MOST[] = {
		{"most common", true, false}, {"most frequent", true, false}, {"most popular", true, false},
		{"least common", false, false}, {"least frequent", false, false}, {"least popular", false, false},
		{"the most number of", true, true}, {"the largest number of", true, true},
		{"the greatest number of", true, true}, {"the highest number of", true, true},
		{"the most", true, true}, {"the fewest", false, true}, {"the least number of", false, true},
		{"the smallest number of", false, true}, {"the lowest number of", false, true},
		{"most number of", true, true}, {"largest number of", true, true}, {"greatest number of", true, true},
		{"highest number of", true, true}, {"least number of", false, true}, {"smallest number of", false, true},
		{"fewest number of", false, true}, {"with most", true, true}, {"has most", true, true},
		{"have most", true, true}, {"with fewest", false, true}, {"has fewest", false, true},
		{"most frequently", true, false}, {"most often", true, false}, {"least frequently", false, false},
		{"least often", false, false},
	};
	for (size_t k = 0; k < sizeof(MOST) / sizeof(MOST[0]); k++)
		for (size_t i = 0; i < rd->r.ws.n; i++) {
			if (!bi_at(rd, i, MOST[k].phrase))
				continue;
			size_t n = phrase_len(MOST[k].phrase), j = bi_next_word(rd, i + n);
			/* "the most recent", "the most expensive": the superlative adjectives' */
			if (i + n < rd->r.ws.n && (bi_in_list(rd->r.ws.w[i + n], (const char *const[]){"recent", "recently", NULL}) ||
						   bi_measure_adjective(rd->r.ws.w[i + n])))
				continue;
			struct bi_mention *m = j < rd->r.ws.n && rd->r.mention_at[j] >= 0
						       ? &rd->r.mentions[rd->r.mention_at[j]] : NULL;
			struct bi_mention *group = NULL;
			if (MOST[k].table_follows) {
				/* the rows counted are the main table's: its name follows */
				if (m && m->start == (int)j && m->col.table == rd->q->table && !m->used &&
				    bi_is_number_col(rd, m->col)) {
					/* "the largest number of passengers", "the fewest days held": a number column */
					if (rd->q->ordered)
						return bi_refuse(rd, "two_superlatives", "the question asks for two superlatives");
					rd->q->ordered = true;
					rd->q->order = m->col;
					rd->q->desc = MOST[k].desc;
					rd->q->limit = rd->q->top ? rd->q->top : 1;
					m->used = true;
					bi_mark(rd, i, n);
					return 0;
				}
				if (!bi_counted_rows(rd, m))
					return bi_refuse(rd, "unread_most", "'%s' of something the built-in does not count",
						      MOST[k].phrase);
				m->used = true;
				bi_mark(rd, i, n);
			} else {
				group = bi_column_at(rd, j);
				/* "the card type code that is most common": the column just before */
				size_t b = i;
				const char *base[1];
				/* "the payment method that is used most often": after an adverb, a verb between too */
				bool adverb = strstr(MOST[k].phrase, "frequently") || strstr(MOST[k].phrase, "often");
				while (!group && b > 0 && !rd->read[b - 1] &&
				       (bi_in_list(rd->r.ws.w[b - 1], (const char *const[]){"the", "is", "are", "that", "which",
											 "was", "were", NULL}) ||
					(adverb && rd->in->wordnet && rd->r.mention_at[b - 1] < 0 &&
					 wordnet_morphy(rd->in->wordnet, rd->r.ws.w[b - 1], WORDNET_VERB, base, 1) > 0)))
					b--;
				if (!group && b > 0 && b < i && rd->r.mention_at[b - 1] >= 0) {
					struct bi_mention *p = &rd->r.mentions[rd->r.mention_at[b - 1]];
					group = p->col.table >= 0 && !p->used ? p : NULL;
				}
				if (!group)
					return bi_refuse(rd, "unread_most", "'%s' is not followed by a column's name",
						      MOST[k].phrase);
				group->used = true;
				bi_mark(rd, i, n);
			}
			if (rd->q->ordered || rd->q->grouped || rd->q->agg != BI_NONE)
				return bi_refuse(rd, "most_shape", "a most-rows question with other aggregates");
			rd->q->most = true;
			rd->q->desc = MOST[k].desc;
			rd->q->limit = rd->q->top ? rd->q->top : 1;
			if (group) {
				rd->q->grouped = true;
				rd->q->group = group->col;
			}
			return 0;
		}
	return 0;
}

static int read_group(struct reader *rd)
{
	for (size_t i = 0; i < rd->r.ws.n; i++)
		for (const char *const *g = GROUP_BY; *g; g++) {
			if (!bi_at(rd, i, *g))
				continue;
			/* "the average age for different jobs": groups only beside an aggregate ("in different cities"
			   alone is a list of each city once) */
			if (strstr(*g, "different") && rd->q->agg == BI_NONE)
				continue;
			size_t n = phrase_len(*g), j = bi_next_word(rd, i + n);
			if (j < rd->r.ws.n && rd->r.mention_at[j] >= 0 &&
			    rd->r.mentions[rd->r.mention_at[j]].col.table == -1 && rd->q->agg == BI_NONE &&
			    strcmp(*g, "per") != 0)
				break; /* "the name of each singer": every row of the table, not a group */
			/* "the names of aircraft and the number of flights for each aircraft": the count is per
			   row of the main table already (the joined table's rows referring to it) */
			if (j < rd->r.ws.n && rd->r.mention_at[j] >= 0 &&
			    rd->r.mentions[rd->r.mention_at[j]].col.table == -1 &&
			    rd->r.mentions[rd->r.mention_at[j]].col.column == rd->q->table && rd->q->agg == BI_COUNT &&
			    rd->q->count_listed && rd->q->join_table >= 0 && rd->q->counted_table == rd->q->join_table &&
			    rd->q->join_from == rd->q->join_table) {
				bi_mark(rd, i, n);
				break;
			}
			if (j < rd->r.ws.n && bi_per_row_of_each(rd, j)) {
				bi_mark(rd, i, n);
				break;
			}
			/* "the allergy types and how many allergies correspond to each one": the count listed is per
			   value of the column shown */
			size_t pronoun = j >= rd->r.ws.n ? 0 : bi_at(rd, j, "of them") || bi_at(rd, j, "of these") ? 2
								: bi_at(rd, j, "one") ? 1 : 0;
			if ((j >= rd->r.ws.n || pronoun) && rd->q->agg == BI_COUNT && rd->q->count_listed) {
				bi_mark(rd, i, n + pronoun);
				break;
			}
			struct bi_mention *m = bi_column_at(rd, j);
			struct bi_col own = {-1, -1};
			if (!m && j < rd->r.ws.n && rd->r.mention_at[j] >= 0)
				own = bi_main_column_named(rd, &rd->r.mentions[rd->r.mention_at[j]]);
			if (own.table >= 0) { /* "for each grape": a table's name, and the main table's column spelling it */
				m = &rd->r.mentions[rd->r.mention_at[j]];
				m->col = own;
			}
			/* "for each faculty rank": the table's name before its column */
			if (!m && j < rd->r.ws.n && rd->r.mention_at[j] >= 0) {
				const struct bi_mention *t = &rd->r.mentions[rd->r.mention_at[j]];
				struct bi_mention *c = t->col.table == -1 ? bi_column_at(rd, (size_t)(t->start + t->len)) : NULL;
				const char *verb[1];
				/* not a synonym that may be a verb ("does each department offer") */
				if (c && c->col.table == t->col.column &&
				    (!c->synonym || !rd->in->wordnet ||
				     wordnet_morphy(rd->in->wordnet, rd->r.ws.w[c->start], WORDNET_VERB, verb, 1) == 0))
					m = c;
			}
			if (!m)
				return bi_refuse(rd, "unread_group", "'%s' is not followed by a column's name", *g);
			const struct schema_column *gc = &rd->s->tables[m->col.table].columns[m->col.column];
			/* a key of numbers: the thing it refers to is meant (its name); a key of text names it */
			if (gc->reference && schema_column_is_number(gc))
				return bi_refuse(rd, "group_by_key", "grouping by a foreign key: the thing it refers to is meant");
			if (rd->q->grouped && (rd->q->group.table != m->col.table || rd->q->group.column != m->col.column))
				return bi_refuse(rd, "two_groups", "the question groups twice");
			rd->q->grouped = true;
			rd->q->group = m->col;
			m->used = true;
			bi_mark(rd, i, n);
			break;
		}
	return 0;
}

/*
 * Of mention m naming table T and a column: the one candidate column that is T's own and not a key
 * (campuses.campus); table -1 when none or two.  (A foreign key to T shows ids, not the things.)
 */
static struct bi_col naming_column(const struct reader *rd, const struct bi_mention *m)
{
	int t = m->col.column; /* the table it was resolved to */
	struct bi_col own = {-1, -1};
	int n_own = 0;
	for (int k = 0; k < m->n_cands; k++)
		if (m->cands[k].table == t && !rd->s->tables[t].columns[m->cands[k].column].key) {
			own = m->cands[k];
			n_own++;
		}
	return n_own == 1 ? own : (struct bi_col){-1, -1};
}

/* Is m's column named by an earlier mention ending before a full stop or question mark that comes
   before m? */
static bool said_before_a_sentence_end(const struct reader *rd, const struct bi_mention *m)
{
	for (size_t k = 0; k < rd->r.n_mentions; k++) {
		const struct bi_mention *e = &rd->r.mentions[k];
		if (e == m || e->dropped || e->start >= m->start || e->col.table != m->col.table ||
		    e->col.column != m->col.column)
			continue;
		size_t from = rd->r.ws.end[e->start + e->len - 1], to = rd->r.ws.at[m->start];
		for (size_t c = from; c < to; c++)
			if (rd->in->question[c] == '?' || rd->in->question[c] == '.')
				return true;
	}
	return false;
}

static int read_select(struct reader *rd)
{
	static const char *const STAR[] = {"all information about", "all the information about", "all details about",
					   "all the details about", "all info about", "all the info about",
					   "all information", "all the information", "all details",
					   "all the details", "all info", "all the info", "all attributes", NULL};
	for (size_t i = 0; i < rd->r.ws.n; i++)
		for (const char *const *p = STAR; *p; p++)
			if (bi_at(rd, i, *p)) {
				rd->q->star = true;
				bi_mark(rd, i, phrase_len(*p));
			}
	for (size_t i = 0; i < rd->r.ws.n; i++) {
		if (rd->read[i] || !bi_in_list(rd->r.ws.w[i], DISTINCT))
			continue;
		size_t j = bi_next_word(rd, i + 1);
		struct bi_mention *m = bi_column_at(rd, j), *t = j < rd->r.ws.n && rd->r.mention_at[j] >= 0
								     ? &rd->r.mentions[rd->r.mention_at[j]] : NULL;
		bool table_next = t && t->start == (int)j && t->col.table == -1 && !t->dropped;
		/* "the different goods colours": the table's name, then its column */
		if (!m && table_next)
			m = bi_column_at(rd, (size_t)(t->start + t->len));
		if (m && m->col.table >= 0 && t && t->col.table == -1 && m->col.table != t->col.column)
			m = NULL;
		/* "the first names of the different drivers": the rows shown, each once */
		if (!m && table_next && i >= 2 &&
		    bi_in_list(rd->r.ws.w[i - 1], (const char *const[]){"the", "all", NULL}) &&
		    (strcmp(rd->r.ws.w[i - 2], "of") == 0 || (i >= 3 && strcmp(rd->r.ws.w[i - 2], "all") == 0 &&
							    strcmp(rd->r.ws.w[i - 3], "of") == 0))) {
			rd->q->distinct = true;
			bi_mark(rd, i, 1);
			continue;
		}
		if (!m)
			return bi_refuse(rd, "unread_distinct", "'%s' is not followed by a column's name", rd->r.ws.w[i]);
		rd->q->distinct = true;
		bi_mark(rd, i, 1);
	}
	static const char *const CONDITION[] = {"with", "has", "have", "having", "whose", "where", "had", NULL};
	for (size_t i = 0; i < rd->r.ws.n; i++) { /* in the question's order */
		int mi = rd->r.mention_at[i];
		struct bi_mention *m = mi >= 0 ? &rd->r.mentions[mi] : NULL;
		if (!m || m->start != (int)i || m->dropped)
			continue;
		bi_mark(rd, (size_t)m->start, (size_t)m->len);
		if (m->col.table < 0) {
			/* a table's name reads as the FROM, unless it may be a column too, or is listed */
			bool also_column = false;
			for (int k = 0; k < m->n_cands; k++)
				also_column |= m->cands[k].table == rd->q->table || m->cands[k].table == rd->q->join_table ||
					       m->cands[k].table == rd->q->bridge;
			static const char *const FROM[] = {"of", "for", "from", "in", "among", "by", "about", NULL};
			size_t b = (size_t)m->start;
			while (b > 0 && bi_in_list(rd->r.ws.w[b - 1], (const char *const[]){"the", "all", "a", "an", "each",
											 "every", "those", "these", NULL}))
				b--;
			if (also_column && rd->q->agg == BI_NONE && !(b > 0 && bi_in_list(rd->r.ws.w[b - 1], FROM))) {
				/* "what campuses opened", "the grapes of wines": the column that spells the table's
				   name, in the table itself or as a key referring to it */
				bool opening = true; /* "what campuses ...": only filler before it */
				for (size_t k = 0; k < (size_t)m->start && opening; k++)
					opening = bi_filler(rd, k);
				struct bi_col own = opening ? naming_column(rd, m) : (struct bi_col){-1, -1};
				if (own.table < 0)
					return bi_refuse(rd, "table_or_column", "'%s' names a table and a column of it",
						      rd->r.ws.w[m->start]);
				m->col = own;
				goto column;
			}
			size_t a = (size_t)m->start; /* "and their corresponding parties" */
			while (a > 0 && bi_in_list(rd->r.ws.w[a - 1], (const char *const[]){"their", "its", "corresponding",
											       "respective", "all", NULL}))
				a--;
			if (a > 0 && strcmp(rd->r.ws.w[a - 1], "and") == 0)
				return bi_refuse(rd, "table_listed", "a table's name among the things to show");
			/* "show all video games and their types": the things themselves, then a column */
			size_t z = (size_t)(m->start + m->len);
			if (z + 1 < rd->r.ws.n && strcmp(rd->r.ws.w[z], "and") == 0 &&
			    bi_in_list(rd->r.ws.w[z + 1], (const char *const[]){"their", "its", "the", NULL}) &&
			    b == 0 + (size_t)(b > 0 && bi_in_list(rd->r.ws.w[0], (const char *const[]){"show", "list", "find",
					    "display", "give", "return", "get", NULL})))
				return bi_refuse(rd, "table_listed", "a table's name among the things to show");
			continue;
		}
	column:
		if (m->used)
			continue;
		/* "the full name of the instructor" (a key referring to the shown columns' table): whose they are */
		const struct schema_foreign_key *fk = rd->s->tables[m->col.table].columns[m->col.column].reference;
		if (fk && rd->q->n_select > 0 && fk->ref_index == rd->q->select[rd->q->n_select - 1].table &&
		    fk->ref_index != m->col.table && m->start >= 2 && strcmp(rd->r.ws.w[m->start - 1], "the") == 0 &&
		    strcmp(rd->r.ws.w[m->start - 2], "of") == 0) {
			m->used = true;
			continue;
		}
		size_t b = (size_t)m->start;
		while (b > 0 && !rd->read[b - 1] && bi_in_list(rd->r.ws.w[b - 1], (const char *const[]){"the", "a", "an", NULL}))
			b--;
		if (b > 0 && bi_in_list(rd->r.ws.w[b - 1], CONDITION))
			return bi_refuse(rd, "unread_condition", "'%s %s' states a condition the built-in does not read",
				      rd->r.ws.w[b - 1], rd->r.ws.w[m->start]);
		/* "students who are on scholarship": a relative clause's column is a condition, not shown */
		size_t c = b > 0 && bi_in_list(rd->r.ws.w[b - 1], (const char *const[]){"on", "in", NULL}) ? b - 1 : b;
		if (c >= 3 && bi_in_list(rd->r.ws.w[c - 1], (const char *const[]){"is", "are", "was", "were", NULL}) &&
		    bi_in_list(rd->r.ws.w[c - 2], (const char *const[]){"who", "that", "which", NULL}))
			return bi_refuse(rd, "unread_condition", "'%s %s' states a condition the built-in does not read",
				      rd->r.ws.w[c - 1], rd->r.ws.w[m->start]);
		for (size_t k = 0; k < rd->q->n_filters; k++)
			if (rd->q->filters[k].or_text && rd->q->filters[k].end == m->start)
				return bi_refuse(rd, "unread_condition", "'%s' after 'a or b': which column holds the values?",
					      rd->r.ws.w[m->start]);
		bool again = false;
		for (size_t k = 0; k < rd->q->n_select; k++)
			again |= rd->q->select[k].table == m->col.table && rd->q->select[k].column == m->col.column;
		/* "Which room has the cheapest base price? List the name and the base price.": named again in
		   a later sentence, the same column */
		if (again && said_before_a_sentence_end(rd, m)) {
			m->used = true;
			continue;
		}
		if (again)
			return bi_refuse(rd, "column_twice", "one column named twice: the second is another thing");
		if (rd->q->n_select == BI_MAX_SELECT)
			return bi_refuse(rd, "too_many_columns", "more columns than the built-in lists");
		rd->q->select[rd->q->n_select++] = m->col;
		m->used = true;
	}
	return 0;
}

int builtin_read(const struct builtin_input *in, struct bi_query *q, struct bi_refusal *why)
{
	struct reader *rd = calloc(1, sizeof(*rd));
	if (!rd)
		return -T2S_ERR_NOMEM;
	*rd = (struct reader){.in = in, .s = in->schema, .q = q, .why = why};
	*q = (struct bi_query){.table = -1, .join_table = -1, .bridge = -1, .counted_table = -1, .neg_table = -1};
	bool *tables_read = NULL;
	if (in->link && in->schema->n_tables > BI_WIDE_SCHEMA) {
		/* a wide schema: only the tables linking found are read (reading every name of thousands of
		   columns per word would cost tens of milliseconds) */
		tables_read = calloc(in->schema->n_tables, sizeof(*tables_read));
		if (!tables_read) {
			free(rd);
			return -T2S_ERR_NOMEM;
		}
		for (size_t k = 0; k < in->link->n_tables; k++)
			if (in->link->tables[k].table >= 0 && (size_t)in->link->tables[k].table < in->schema->n_tables)
				tables_read[in->link->tables[k].table] = true;
		rd->r.tables_read = tables_read;
	}
	bi_split(in->question, &rd->r);
	bi_person_names(in->schema, &rd->r);
	int rc = 0;
	if (rd->r.ws.truncated)
		rc = bi_refuse(rd, "too_long", "the question is longer than the built-in reads");
	if (!rc && bi_find_mentions(in->schema, &rd->r) < 0)
		rc = bi_refuse(rd, "too_many_names", "the question names more of the schema than the built-in reads");
	if (!rc)
		rc = bi_find_values(in->evidence, in->wordnet, &rd->r);
	bool quote = rd->r.n_values == 0 && strpbrk(in->question, "\"\xe2");
	/* The rules, in their order: names first, then the tables, then each kind of cue phrase. */
	static int (*const RULES[])(struct reader *) = {
		read_imperatives, unmention_cues, bi_read_negated_table, read_synonyms, need_names, bi_choose_tables,
		bi_read_column_names, bi_place_negated_table, read_count, read_top, read_most,
		bi_read_superlative_adjectives, read_aggregates, read_group, bi_read_order, bi_read_having,
		bi_read_comparisons, bi_read_comparisons_before, bi_read_verb_comparisons, bi_read_comparative_adjectives,
		bi_read_age_units, bi_read_year_verbs, bi_read_values, bi_read_like, bi_read_sex_words,
		bi_read_relation_verbs, read_select, bi_read_bare_direction, bi_read_sort_verb, bi_read_idle_verbs,
		bi_read_idle_words,
	};
	for (size_t k = 0; !rc && k < sizeof(RULES) / sizeof(RULES[0]); k++)
		rc = RULES[k](rd);
	/* "the department where has the most", "transactions where the amount is": a relative "where" (one
	   that opens the question asks where) */
	for (size_t i = 1; !rc && i < rd->r.ws.n; i++)
		if (strcmp(rd->r.ws.w[i], "where") == 0)
			rd->read[i] = true;
	/* a quote that is neither a stored value nor a text pattern */
	for (size_t k = 0; quote && k < q->n_filters; k++)
		quote = strcmp(q->filters[k].op, "LIKE") != 0;
	if (!rc && quote)
		rc = bi_refuse(rd, "unread_quote", "the question quotes something that is not a stored value");
	for (size_t i = 0; !rc && i < rd->r.ws.n; i++)
		if (!rd->read[i] && !bi_filler(rd, i))
			rc = bi_refuse(rd, "unread_word", "the built-in cannot read '%s' here", rd->r.ws.w[i]);
	if (!rc)
		rc = bi_decide_shape(rd);
	free(tables_read);
	free(rd);
	return rc;
}
