/*
 * builtin_cues.c - the cues phase of a reading (see builtin_reader.h): the
 * English cue tables of counts, aggregates, DISTINCT and grouping, and the
 * rules that read them, in this order: a count ("how many", "the number of
 * <table>", "and the count" said last), the rows a superlative keeps ("top
 * 5", "the three most recent"), the group with the most rows ("the most
 * common X", "which X has the most <table>"), the superlative adjectives
 * (builtin_adjectives.c), aggregates and their chains ("average and total
 * X"), superlatives of a column ("with the highest X"), grouping ("for each
 * X", "for each grape" by the main table's column naming that table), and
 * the ordering (builtin_order.c).
 */
#include "pipeline/builtin/builtin_reader.h"

#include <string.h>

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

static size_t phrase_len(const char *p)
{
	return question_phrase_words(p);
}

bool bi_cue_phrase_word(const char *w)
{
	static const char *const *const LISTS[] = {DISTINCT, GROUP_BY, NULL};
	return bi_word_of_phrases(w, LISTS) || aggregate_of(w) >= 0;
}

bool bi_distinct_word(const char *w)
{
	return bi_in_list(w, DISTINCT);
}

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

static enum bi_verdict read_count(struct reader *rd)
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
static enum bi_verdict read_top(struct reader *rd)
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

static enum bi_verdict read_aggregates(struct reader *rd)
{
	long top = rd->q->top;
	for (size_t i = 0; i < rd->r.ws.n; i++) {
		/* not words kept for a later rule: "at least", "larger than the average" (the comparisons'), "from
		   highest to lowest" (the ordering's) */
		if (rd->read[i] || rd->r.mention_at[i] >= 0 || rd->reserved[i])
			continue;
		int first = aggregate_of(rd->r.ws.w[i]);
		if (first < 0)
			continue;
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
static enum bi_verdict read_most(struct reader *rd)
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
			/* "the most recent", "the most expensive": a word kept for a later rule (the superlative
			   adjectives') */
			if (i + n < rd->r.ws.n && rd->reserved[i + n])
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

static enum bi_verdict read_group(struct reader *rd)
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

static const struct bi_rule RULES[] = {
	{"count", read_count},
	{"top", read_top},
	{"most", read_most},
	{"superlative_adjectives", bi_read_superlative_adjectives},
	{"aggregates", read_aggregates},
	{"group", read_group},
	{"order", bi_read_order},
};

const struct bi_phase bi_cue_phase = {"cues", RULES, sizeof(RULES) / sizeof(RULES[0])};
