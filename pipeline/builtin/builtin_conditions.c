/*
 * builtin_conditions.c - the conditions phase of a reading (see
 * builtin_reader.h; its rule table at the end): counts of groups (HAVING;
 * "more than N times"), comparisons of a number column with a number
 * ("greater than 30", "between 10 and 20", "2005 or after", "more than 20
 * credits", "requested more than 140000": a word sharing the number column's
 * stem), comparative adjectives (builtin_adjectives.c), the unit after an
 * age ("30 years old"), a verb and a year ("held after 2017"), stored values
 * the question spells (column = 'value', "not", "a or b"), text patterns
 * (builtin_like.c) and sex words read as a sex column's stored code.
 */
#include "pipeline/builtin/builtin_reader.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Comparison phrases before a number (longest first). */
static const struct {
	const char *phrase;
	const char *op;
} COMPARISONS[] = {
	{"greater than or equal to", ">="}, {"more than or equal to", ">="}, {"larger than or equal to", ">="},
	{"less than or equal to", "<="}, {"smaller than or equal to", "<="}, {"not equal to", "!="},
	{"no less than", ">="}, {"no more than", "<="}, {"not less than", ">="}, {"not more than", "<="},
	{"at least", ">="}, {"at most", "<="}, {"greater than", ">"}, {"more than", ">"}, {"larger than", ">"},
	{"bigger than", ">"}, {"higher than", ">"}, {"less than", "<"}, {"fewer than", "<"},
	{"smaller than", "<"}, {"lower than", "<"}, {"equal to", "="}, {"above", ">"}, {"over", ">"},
	{"higher than", ">"}, {"longer than", ">"}, {"shorter than", "<"}, {"cheaper than", "<"},
	{"exceeding", ">"}, {"below", "<"}, {"under", "<"}, {"equals", "="}, {"is", "="}, {"of", "="},
	{"=", "="},
};

/* Words that may stand between a column's name and its value or comparison. */
static const char *const LINKS[] = {"is", "are", "was", "were", "of", "with", "that", "whose", "has", "have",
				    "named", "called", "titled", "equal", "to", "as", NULL};

static size_t or_suffix(const struct reader *rd, size_t i, const char **op)
{
	static const char *const UP[] = {"more", "above", "higher", "greater", "over", "after", "later", "larger",
					 "bigger", "longer", "older", NULL};
	static const char *const DOWN[] = {"less", "fewer", "below", "lower", "under", "before", "earlier", "smaller",
					   "shorter", "younger", NULL};
	if (i + 1 >= rd->r.ws.n || strcmp(rd->r.ws.w[i], "or") != 0 || rd->read[i] || rd->read[i + 1])
		return 0;
	if (bi_in_list(rd->r.ws.w[i + 1], UP))
		*op = ">=";
	else if (bi_in_list(rd->r.ws.w[i + 1], DOWN))
		*op = "<=";
	else
		return 0;
	return 2;
}

/* "X greater than 30", "X between 10 and 20", "X is 30": a numeric column, then a comparison and a number. */
static enum bi_verdict read_comparisons(struct reader *rd)
{
	for (size_t i = 0; i < rd->r.ws.n; i++) {
		struct bi_mention *m = bi_column_at(rd, i);
		if (!m)
			continue;
		size_t j = (size_t)(m->start + m->len);
		for (; j < rd->r.ws.n && !rd->read[j] && bi_in_list(rd->r.ws.w[j], LINKS) &&
		       !(j + 1 < rd->r.ws.n && rd->r.is_number[j + 1]);
		     j++)
			;
		if (j >= rd->r.ws.n)
			continue;
		struct bi_filter f = {.col = m->col};
		size_t n = 0;
		if (bi_at(rd, j, "between") && j + 3 < rd->r.ws.n && rd->r.is_number[j + 1] &&
		    strcmp(rd->r.ws.w[j + 2], "and") == 0 && rd->r.is_number[j + 3]) {
			f.op = "BETWEEN";
			f.num = rd->r.number[j + 1];
			f.num2 = rd->r.number[j + 3];
			n = 4;
		}
		for (size_t c = 0; c < sizeof(COMPARISONS) / sizeof(COMPARISONS[0]) && !n; c++) {
			size_t pl = question_phrase_words(COMPARISONS[c].phrase);
			if (bi_at(rd, j, COMPARISONS[c].phrase) && j + pl < rd->r.ws.n && rd->r.is_number[j + pl]) {
				f.op = COMPARISONS[c].op;
				f.num = rd->r.number[j + pl];
				n = pl + 1;
			}
			/* "larger than the average", "higher than average": the column's average over the table */
			size_t avg = bi_average_at(rd, j + pl);
			if (!n && strcmp(COMPARISONS[c].op, "=") != 0 && strcmp(COMPARISONS[c].op, "!=") != 0 &&
			    bi_at(rd, j, COMPARISONS[c].phrase) && avg) {
				f.op = COMPARISONS[c].op;
				f.average = true;
				n = pl + avg;
				/* "... than the average revenue", "... than the average of all revenues" */
				size_t k = j + n;
				while (k < rd->r.ws.n && !rd->read[k] && rd->r.mention_at[k] < 0 &&
				       bi_in_list(rd->r.ws.w[k], (const char *const[]){"of", "all", "the", NULL}))
					k++;
				struct bi_mention *same = bi_column_at(rd, k);
				if (same && same->col.table == m->col.table && same->col.column == m->col.column) {
					same->used = true;
					n = k - j + (size_t)same->len;
				}
			}
		}
		if (!n && rd->r.is_number[j] && j == (size_t)(m->start + m->len)) {
			f.op = "=";
			f.num = rd->r.number[j];
			n = 1;
		}
		if (!n)
			continue;
		if (strcmp(f.op, "=") == 0)
			n += or_suffix(rd, j + n, &f.op);
		if (!bi_is_number_col(rd, m->col))
			return bi_refuse(rd, "not_a_number", "a number compared with a column that is not a number");
		enum bi_verdict rc = bi_add_filter(rd, f);
		if (rc)
			return rc;
		m->used = true;
		bi_mark(rd, (size_t)(m->start + m->len), j + n - (size_t)(m->start + m->len));
	}
	return 0;
}

/* The words of the first comparison phrase at word i that orders (not "=" nor "!=") and is followed by an unread
   number, its operator into *op; 0 when none. */
static size_t ordering_comparison(const struct reader *rd, size_t i, const char **op)
{
	for (size_t c = 0; c < sizeof(COMPARISONS) / sizeof(COMPARISONS[0]); c++) {
		size_t pl = question_phrase_words(COMPARISONS[c].phrase);
		if (strcmp(COMPARISONS[c].op, "=") == 0 || strcmp(COMPARISONS[c].op, "!=") == 0 ||
		    !bi_at(rd, i, COMPARISONS[c].phrase) || i + pl >= rd->r.ws.n || !rd->r.is_number[i + pl] ||
		    rd->read[i + pl])
			continue;
		*op = COMPARISONS[c].op;
		return pl;
	}
	return 0;
}

/* "courses with more than 2 credits", "at least 20 floors", "between 100 and 300 hours": a comparison, a number
   (or two), then a number column. */
static enum bi_verdict read_comparisons_before(struct reader *rd)
{
	for (size_t i = 0; i < rd->r.ws.n; i++) {
		/* "players who train between 500 and 1500 hours": the range, then its number column */
		struct bi_mention *ranged = i + 4 < rd->r.ws.n && bi_at(rd, i, "between") && rd->r.is_number[i + 1] &&
						    !rd->read[i + 1] && strcmp(rd->r.ws.w[i + 2], "and") == 0 &&
						    rd->r.is_number[i + 3] && !rd->read[i + 3]
					    ? bi_column_at(rd, i + 4)
					    : NULL;
		if (ranged && bi_is_number_col(rd, ranged->col)) {
			enum bi_verdict rc = bi_add_filter(rd, (struct bi_filter){.col = ranged->col, .op = "BETWEEN",
								      .num = rd->r.number[i + 1], .num2 = rd->r.number[i + 3]});
			if (rc)
				return rc;
			ranged->used = true;
			bi_mark(rd, i, 4);
			continue;
		}
		const char *op;
		size_t pl = ordering_comparison(rd, i, &op);
		struct bi_mention *m = pl ? bi_column_at(rd, i + pl + 1) : NULL;
		if (!m || !bi_is_number_col(rd, m->col))
			continue;
		enum bi_verdict rc = bi_add_filter(rd, (struct bi_filter){.col = m->col, .op = op, .num = rd->r.number[i + pl]});
		if (rc)
			return rc;
		m->used = true;
		bi_mark(rd, i, pl + 1);
	}
	return 0;
}

/* "entrepreneurs who requested more than 140000", "phones with memories bigger than 32": a word no name reads
   sharing the stem of the main table's one number column so (money_requested, memory_in_g), then a comparison
   and a number with no name after it. */
static enum bi_verdict read_verb_comparisons(struct reader *rd)
{
	if (rd->q->table < 0)
		return 0;
	const struct schema_table *t = &rd->s->tables[rd->q->table];
	for (size_t i = 0; i + 2 < rd->r.ws.n; i++) {
		if (rd->read[i] || rd->r.mention_at[i] >= 0 || rd->r.is_number[i] || strlen(rd->r.ws.w[i]) < 5)
			continue;
		const char *op;
		size_t pl = ordering_comparison(rd, i + 1, &op);
		if (!pl || (i + 2 + pl < rd->r.ws.n && rd->r.mention_at[i + 2 + pl] >= 0))
			continue;
		int found = -1, n = 0;
		for (size_t k = 0; k < t->n_columns; k++)
			if (!t->columns[k].key && bi_is_number_col(rd, (struct bi_col){rd->q->table, (int)k}) &&
			    bi_shares_stem(rd->r.ws.w[i], t->columns[k].name)) {
				found = (int)k;
				n++;
			}
		if (n != 1)
			continue;
		enum bi_verdict rc = bi_add_filter(rd, (struct bi_filter){.col = {rd->q->table, found}, .op = op,
							      .num = rd->r.number[i + 1 + pl]});
		if (rc)
			return rc;
		bi_mark(rd, i, 2 + pl);
	}
	return 0;
}

/* "which countries have more than 2 singers": groups holding more (fewer) than N rows of the main table. */
static enum bi_verdict read_having(struct reader *rd)
{
	for (size_t i = 0; i < rd->r.ws.n; i++)
		for (size_t c = 0; c < sizeof(COMPARISONS) / sizeof(COMPARISONS[0]); c++) {
			const char *op = COMPARISONS[c].op;
			size_t pl = question_phrase_words(COMPARISONS[c].phrase), after = 0;
			/* "two or more <table>": the number first, its suffix the comparison */
			if (c == 0 && rd->r.is_number[i] && !rd->read[i] && (after = or_suffix(rd, i + 1, &op)) > 0)
				pl = 0;
			else if (strcmp(op, "=") == 0 || !bi_at(rd, i, COMPARISONS[c].phrase) || i + pl + 1 >= rd->r.ws.n ||
				 !rd->r.is_number[i + pl])
				continue;
			size_t j = bi_next_word(rd, i + pl + 1 + after);
			int mi = j < rd->r.ws.n ? rd->r.mention_at[j] : -1;
			struct bi_mention *m = mi >= 0 ? &rd->r.mentions[mi] : NULL;
			/* "nominated more than two times": the main table's rows, once per time */
			bool times = j < rd->r.ws.n && mi < 0 && rd->q->join_table < 0 && rd->q->table >= 0 &&
				     (strcmp(rd->r.ws.w[j], "times") == 0 || strcmp(rd->r.ws.w[j], "time") == 0);
			if (!times && !bi_counted_rows(rd, m))
				continue;
			if (rd->q->having)
				return bi_refuse(rd, "two_groups", "two counts of groups");
			rd->q->having = true;
			rd->q->having_op = op;
			rd->q->having_num = rd->r.number[i + pl];
			rd->q->having_times = times;
			if (times)
				bi_mark(rd, j, 1);
			else
				m->used = true;
			bi_mark(rd, i, pl + 1 + after);
			/* "locations shared by more than two wrestlers", "types used by at least 2 customers" */
			if (i >= 2 && !rd->read[i - 2] && strcmp(rd->r.ws.w[i - 1], "by") == 0 &&
			    bi_in_list(rd->r.ws.w[i - 2], (const char *const[]){"shared", "used", NULL}))
				bi_mark(rd, i - 2, 2);
			break;
		}
	return 0;
}

/*
 * "Human Resource or Manager": a second value of a column one filter already compares with a value,
 * "or" (and "in", "from", "the") alone between them, joins that filter (c = 'a' OR c = 'b'); "either"
 * before the first is read.  True when joined.
 */
static bool or_value(struct reader *rd, const struct bi_value *v, struct bi_col col)
{
	static const char *const BETWEEN[] = {"in", "from", "at", "by", "of", "the", "a", "an", NULL};
	for (size_t k = 0; k < rd->q->n_filters; k++) {
		struct bi_filter *f = &rd->q->filters[k];
		if (f->col.table != col.table || f->col.column != col.column || !f->text || f->or_text ||
		    strcmp(f->op, "=") != 0)
			continue;
		int lo = f->end <= v->start ? f->end : v->start + v->len, hi = f->end <= v->start ? v->start : f->start;
		int n_or = 0;
		bool only = lo < hi;
		for (int i = lo; i < hi && only; i++) {
			n_or += strcmp(rd->r.ws.w[i], "or") == 0;
			only = !rd->read[i] && rd->r.mention_at[i] < 0 &&
			       (strcmp(rd->r.ws.w[i], "or") == 0 || bi_in_list(rd->r.ws.w[i], BETWEEN));
		}
		if (!only || n_or != 1)
			return false;
		f->or_text = v->v->value;
		bi_mark(rd, (size_t)lo, (size_t)(hi - lo));
		int first = f->end <= v->start ? f->start : v->start;
		f->end = f->end <= v->start ? v->start + v->len : f->end; /* the words of both values */
		f->start = first;
		if (first > 0 && !rd->read[first - 1] && strcmp(rd->r.ws.w[first - 1], "either") == 0)
			bi_mark(rd, (size_t)first - 1, 1);
		return true;
	}
	return false;
}

/* Stored values: column = 'value', the column's name before it read too. */
static enum bi_verdict read_values(struct reader *rd)
{
	for (size_t i = 0; i < rd->r.n_values; i++) {
		struct bi_value *v = &rd->r.values[i];
		if (v->skip) {
			bi_mark(rd, (size_t)v->start, (size_t)v->len);
			continue;
		}
		struct bi_col col = {v->v->table, v->v->column};
		/* "located in Tokyo": a verb of the column's name before the value */
		size_t b = bi_value_verb(rd, (size_t)v->start, col);
		/* "is not Tournament", "not from Spain": a "not" before it; then the column's own name just before,
		   or a word naming it ("named", "called"); or a "not" before that name ("not from the country of
		   Switzerland") */
		size_t not_at = bi_value_negation(rd, b), j = not_at;
		while (j > 0 && !rd->read[j - 1] && rd->r.mention_at[j - 1] < 0 && bi_in_list(rd->r.ws.w[j - 1], LINKS))
			j--;
		struct bi_mention *named = j > 0 && rd->r.mention_at[j - 1] >= 0 ? &rd->r.mentions[rd->r.mention_at[j - 1]]
										   : NULL;
		if (named && (named->col.table != col.table || named->col.column != col.column || named->used))
			named = NULL;
		size_t head = b;
		if (not_at == b && named)
			not_at = bi_value_negation(rd, head = (size_t)named->start);
		bool negated = not_at < head;
		if (negated && rd->q->join_table >= 0 && col.table != rd->q->table)
			return bi_refuse(rd, "unread_negation", "'not' a value of the joined table: no row or not every row?");
		if (!(!negated && or_value(rd, v, col)) &&
		    bi_add_filter(rd, (struct bi_filter){.col = col, .op = negated ? "!=" : "=", .text = v->v->value,
							 .start = v->start, .end = v->start + v->len}) == BI_REFUSED)
			return BI_REFUSED;
		if (negated)
			bi_mark(rd, not_at, head - not_at);
		bi_mark(rd, (size_t)v->start, (size_t)v->len);
		v->used = true;
		if (named) {
			named->used = true;
			bi_mark(rd, j, (size_t)v->start - j);
		}
		if (v->start > 0 && !rd->read[v->start - 1] &&
		    bi_in_list(rd->r.ws.w[v->start - 1], (const char *const[]){"named", "called", "titled", NULL}))
			bi_mark(rd, (size_t)v->start - 1, 1);
		/* "in the Los Angeles county": the column's name just after it */
		struct bi_mention *after = bi_column_at(rd, (size_t)(v->start + v->len));
		if (after && after->col.table == col.table && after->col.column == col.column)
			after->used = true;
	}
	return 0;
}

/* The sampled value of column c spelling one of forms (case aside), or NULL. */
static const char *sample_spelling(const struct schema_column *c, const char *const *forms)
{
	for (size_t k = 0; k < c->n_samples; k++)
		for (const char *const *f = forms; *f; f++)
			if (c->samples[k] && strcasecmp(c->samples[k], *f) == 0)
				return c->samples[k];
	return NULL;
}

/*
 * "female students", "how many men": a sex or gender column of the main table holding a value that
 * says it ('F', 'female'), read as that filter.
 */
static enum bi_verdict read_sex_words(struct reader *rd)
{
	static const char *const FEMALE[] = {"female", "females", "woman", "women", "girl", "girls", NULL};
	static const char *const MALE[] = {"male", "males", "man", "men", "boy", "boys", NULL};
	static const char *const F[] = {"f", "female", "w", "woman", NULL};
	static const char *const M[] = {"m", "male", "man", NULL};
	for (size_t i = 0; i < rd->r.ws.n; i++) {
		bool female = bi_in_list(rd->r.ws.w[i], FEMALE), male = bi_in_list(rd->r.ws.w[i], MALE);
		if (rd->read[i] || rd->r.mention_at[i] >= 0 || (!female && !male))
			continue;
		const struct schema_table *t = &rd->s->tables[rd->q->table];
		const char *value = NULL;
		struct bi_col col = {-1, -1};
		for (size_t c = 0; c < t->n_columns; c++) {
			bool sex = bi_name_has_word(t->columns[c].name, (const char *const[]){"sex", "gender", NULL});
			const char *v = sex ? sample_spelling(&t->columns[c], female ? F : M) : NULL;
			if (v && value)
				return bi_refuse(rd, "unread_condition", "'%s': two columns say it", rd->r.ws.w[i]);
			if (v) {
				value = v;
				col = (struct bi_col){rd->q->table, (int)c};
			}
		}
		if (!value)
			continue;
		enum bi_verdict rc = bi_add_filter(rd, (struct bi_filter){.col = col, .op = "=", .text = value, .start = (int)i,
							   .end = (int)i + 1});
		if (rc)
			return rc;
		bi_mark(rd, i, 1);
	}
	return 0;
}

bool bi_comparison_word(const char *w)
{
	for (size_t c = 0; c < sizeof(COMPARISONS) / sizeof(COMPARISONS[0]); c++)
		if (strstr(COMPARISONS[c].phrase, w))
			return true;
	return false;
}

bool bi_link_word(const char *w)
{
	return bi_in_list(w, LINKS);
}

/* A year: a whole number from 1000 to 2999. */
static bool year_at(const struct reader *rd, size_t i)
{
	return i < rd->r.ws.n && rd->r.is_number[i] && !rd->read[i] && rd->r.number[i] >= 1000 &&
	       rd->r.number[i] < 3000 && rd->r.number[i] == (long)rd->r.number[i];
}

/* The main table's one number column with "year" in its name (the one sharing the verb's stem when
   several do); table -1 when none or no one. */
static struct bi_col year_column(const struct reader *rd, const char *verb)
{
	const struct schema_table *t = &rd->s->tables[rd->q->table];
	struct bi_col any = {-1, -1}, stem = {-1, -1};
	int n_any = 0, n_stem = 0;
	for (size_t c = 0; c < t->n_columns; c++) {
		bool year = bi_name_has_word(t->columns[c].name, (const char *const[]){"year", NULL});
		struct bi_col col = {rd->q->table, (int)c};
		if (!year || t->columns[c].key || !bi_is_number_col(rd, col))
			continue;
		any = col;
		n_any++;
		if (bi_shares_stem(verb, t->columns[c].name)) {
			stem = col;
			n_stem++;
		}
	}
	return n_stem == 1 ? stem : n_any == 1 ? any : (struct bi_col){-1, -1};
}

static enum bi_verdict read_year_verbs(struct reader *rd)
{
	static const struct {
		const char *phrase;
		const char *op;
	} WHEN[] = {
		{"before", "<"}, {"prior to", "<"}, {"after", ">"}, {"since", ">="}, {"in", "="}, {"in the year", "="},
		{"in year", "="}, {"during", "="}, {"between", "BETWEEN"},
	};
	for (size_t i = 0; i + 2 < rd->r.ws.n; i++) {
		const char *verb = rd->r.ws.w[i];
		size_t len = strlen(verb);
		if (rd->read[i] || rd->r.mention_at[i] >= 0 || rd->r.is_number[i] || len < 4 ||
		    !(strcmp(verb + len - 2, "ed") == 0 ||
		      bi_in_list(verb, (const char *const[]){"made", "held", "built", "born", "begun", "run", "won", "sold",
							"written", "shot", "set", "taken", "given", "sung", NULL})))
			continue;
		for (size_t w = 0; w < sizeof(WHEN) / sizeof(WHEN[0]); w++) {
			size_t pl = question_phrase_words(WHEN[w].phrase), y = i + 1 + pl;
			if (!bi_at(rd, i + 1, WHEN[w].phrase) || !year_at(rd, y))
				continue;
			bool between = strcmp(WHEN[w].op, "BETWEEN") == 0;
			if (between && !(y + 2 < rd->r.ws.n && strcmp(rd->r.ws.w[y + 1], "and") == 0 && year_at(rd, y + 2)))
				continue;
			struct bi_col col = year_column(rd, verb);
			if (col.table < 0)
				break;
			struct bi_filter f = {.col = col, .op = WHEN[w].op, .num = rd->r.number[y]};
			if (between)
				f.num2 = rd->r.number[y + 2];
			enum bi_verdict rc = bi_add_filter(rd, f);
			if (rc)
				return rc;
			bi_mark(rd, i, 1 + pl + (between ? 3 : 1));
			break;
		}
	}
	return 0;
}

static enum bi_verdict read_age_units(struct reader *rd)
{
	bool age = false;
	for (size_t k = 0; k < rd->q->n_filters; k++)
		age |= rd->q->filters[k].col.table >= 0 &&
		       bi_name_has_word(rd->s->tables[rd->q->filters[k].col.table].columns[rd->q->filters[k].col.column].name,
					(const char *const[]){"age", NULL});
	for (size_t i = 0; age && i + 2 < rd->r.ws.n; i++)
		if (rd->r.is_number[i] && rd->read[i] && !rd->read[i + 2] && strcmp(rd->r.ws.w[i + 2], "old") == 0 &&
		    bi_in_list(rd->r.ws.w[i + 1], (const char *const[]){"years", "year", NULL}))
			bi_mark(rd, i + 1, 2);
	return 0;
}

static const struct bi_rule RULES[] = {
	{"having", read_having},
	{"comparisons", read_comparisons},
	{"comparisons_before", read_comparisons_before},
	{"verb_comparisons", read_verb_comparisons},
	{"comparative_adjectives", bi_read_comparative_adjectives},
	{"age_units", read_age_units},
	{"year_verbs", read_year_verbs},
	{"values", read_values},
	{"like", bi_read_like},
	{"sex_words", read_sex_words},
};

const struct bi_phase bi_condition_phase = {"conditions", RULES, sizeof(RULES) / sizeof(RULES[0])};
