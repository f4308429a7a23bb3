/*
 * builtin_order.c - the ordering a question asks for: "ordered by X", "sorted
 * by X in descending order", "in descending order of X", "ordered descending
 * by X", a direction naming no column ("the names in alphabetical order"),
 * and an ordering verb away from its ordering ("Sort the names ... in
 * ascending order of population"), and an ordering by the groups' sizes ("in
 * descending order of the number of companies", "ordered by the count").  The
 * English is in the cue tables below.
 */
#include "pipeline/builtin/builtin_reader.h"

#include <string.h>

/* Ordering: phrases before the column, and direction phrases after it (or before "order of"). */
static const char *const ORDER_BY[] = {"ordered by", "order by", "sorted by", "sort by", "ranked by", "in order of",
				       "arranged by", "sorted in order of", "ordered in order of", "listed by",
				       "in the order of", NULL};
/* A phrase that says the ordering's direction. */
struct directed {
	const char *phrase;
	bool desc;
};
static const struct directed DIRECTIONS[] = {
	{"in descending order", true}, {"in ascending order", false}, {"in decreasing order", true},
	{"in increasing order", false}, {"in alphabetical order", false}, {"in reverse alphabetical order", true},
	{"in descending", true}, {"in ascending", false}, {"descending", true}, {"ascending", false},
	{"alphabetically", false}, {"from highest to lowest", true}, {"from lowest to highest", false},
	{"from largest to smallest", true}, {"from smallest to largest", false}, {"from high to low", true},
	{"from low to high", false}, {"from the highest to the lowest", true},
	{"from the lowest to the highest", false}, {"from the largest to the smallest", true},
	{"from the smallest to the largest", false}, {"from the oldest to the youngest", true},
	{"in ascending alphabetical order", false}, {"in descending alphabetical order", true},
	{"in alphabetical ascending order", false}, {"in alphabetic order", false},
	{"in lexicographic order", false}, {"in lexicographical order", false}, {"desc", true}, {"asc", false},
	{"in the alphabetical order", false}, {"in the descending order", true}, {"in the ascending order", false},
	{"in a descending order", true}, {"in an ascending order", false}, {"in the reverse alphabetical order", true},
	{"by alphabetical order", false}, {"from greatest to least", true}, {"from least to greatest", false},
	{"from the greatest to the least", true}, {"from the least to the greatest", false},
	{"from most to least", true}, {"from least to most", false}, {"from biggest to smallest", true},
	{"from smallest to biggest", false},
};
/* Ordering phrases that say the direction before the column. */
static const struct directed ORDER_BY_DIRECTED[] = {
	{"ordered descending by", true},   {"ordered ascending by", false},   {"sorted descending by", true},
	{"sorted ascending by", false},    {"ordered by descending", true},   {"ordered by ascending", false},
	{"sorted by descending", true},    {"sorted by ascending", false},    {"ranked by descending", true},
	{"by alphabetical order of", false}, {"in alphabetical order of", false}, {"sorted by the order of", false},
	{"in alphabetical order by", false}, {"ordered alphabetically by", false}, {"sorted alphabetically by", false},
};
static const char *const ORDER_VERBS[] = {"sorted", "ordered", "listed", "arranged", "ranked", "sort", "order",
					  NULL};

size_t bi_order_phrase_at(const struct question_words *ws, size_t i)
{
	for (size_t d = 0; d < sizeof(DIRECTIONS) / sizeof(DIRECTIONS[0]); d++)
		if (question_words_phrase_at(ws, i, DIRECTIONS[d].phrase))
			return question_phrase_words(DIRECTIONS[d].phrase);
	for (const char *const *o = ORDER_BY; *o; o++)
		if (question_words_phrase_at(ws, i, *o))
			return question_phrase_words(*o);
	for (size_t d = 0; d < sizeof(ORDER_BY_DIRECTED) / sizeof(ORDER_BY_DIRECTED[0]); d++)
		if (question_words_phrase_at(ws, i, ORDER_BY_DIRECTED[d].phrase))
			return question_phrase_words(ORDER_BY_DIRECTED[d].phrase);
	return 0;
}

bool bi_order_cue_word(const char *w)
{
	static const char *const *const LISTS[] = {ORDER_BY, ORDER_VERBS, NULL};
	if (bi_word_of_phrases(w, LISTS))
		return true;
	for (size_t d = 0; d < sizeof(DIRECTIONS) / sizeof(DIRECTIONS[0]); d++)
		if (strstr(DIRECTIONS[d].phrase, w))
			return true;
	return false;
}

/* The longest direction phrase at word i ("in ascending alphabetical order", not "in ascending"); *alphabetical
   (may be NULL) says whether it names the alphabet. */
static bool read_direction(struct reader *rd, size_t i, bool *alphabetical)
{
	size_t best = 0, n = 0;
	for (size_t d = 0; d < sizeof(DIRECTIONS) / sizeof(DIRECTIONS[0]); d++)
		if (i < rd->r.ws.n && bi_at(rd, i, DIRECTIONS[d].phrase) && question_phrase_words(DIRECTIONS[d].phrase) > n) {
			best = d;
			n = question_phrase_words(DIRECTIONS[d].phrase);
		}
	if (!n)
		return false;
	rd->q->desc = DIRECTIONS[best].desc;
	bi_mark(rd, i, n);
	if (alphabetical)
		*alphabetical = strstr(DIRECTIONS[best].phrase, "alphabet") || strstr(DIRECTIONS[best].phrase, "lexicograph");
	return true;
}

/* "count", "frequency", "the number of <the main table>": how many words at i say the groups' sizes (0: none). */
static size_t count_phrase(struct reader *rd, size_t i)
{
	if (i >= rd->r.ws.n)
		return 0;
	if (bi_in_list(rd->r.ws.w[i], (const char *const[]){"count", "frequency", NULL}))
		return 1;
	static const char *const OF[] = {"the number of", "number of", "the count of", "count of", NULL};
	for (const char *const *p = OF; *p; p++) {
		size_t n = question_phrase_words(*p);
		if (!bi_at(rd, i, *p) || i + n >= rd->r.ws.n || rd->r.mention_at[i + n] < 0)
			continue;
		const struct bi_mention *t = &rd->r.mentions[rd->r.mention_at[i + n]];
		if (t->start == (int)(i + n) && t->col.table == -1 && t->col.column == rd->q->table)
			return n + (size_t)t->len;
	}
	return 0;
}

enum bi_verdict bi_read_order(struct reader *rd)
{
	for (size_t i = 0; i < rd->r.ws.n; i++) {
		size_t n = 0;
		bool direction_first = false;
		for (size_t d = 0; d < sizeof(ORDER_BY_DIRECTED) / sizeof(ORDER_BY_DIRECTED[0]) && !n; d++)
			if (bi_at(rd, i, ORDER_BY_DIRECTED[d].phrase)) {
				n = question_phrase_words(ORDER_BY_DIRECTED[d].phrase);
				rd->q->desc = ORDER_BY_DIRECTED[d].desc;
				direction_first = true;
			}
		for (const char *const *o = ORDER_BY; *o && !n; o++)
			if (bi_at(rd, i, *o))
				n = question_phrase_words(*o);
		if (!n) {
			/* "in descending order of X" */
			for (size_t d = 0; d < sizeof(DIRECTIONS) / sizeof(DIRECTIONS[0]) && !n; d++) {
				const char *p = DIRECTIONS[d].phrase;
				size_t pl = question_phrase_words(p);
				if (strncmp(p, "in ", 3) == 0 && bi_at(rd, i, p) && i + pl < rd->r.ws.n &&
				    (strcmp(rd->r.ws.w[i + pl], "of") == 0 || strcmp(rd->r.ws.w[i + pl], "by") == 0)) {
					n = pl + 1;
					rd->q->desc = DIRECTIONS[d].desc;
					direction_first = true;
					if (i > 0 && bi_in_list(rd->r.ws.w[i - 1], ORDER_VERBS))
						bi_mark(rd, i - 1, 1);
				}
			}
		}
		if (!n)
			continue;
		size_t next = bi_next_word(rd, i + n);
		struct bi_mention *m = bi_column_at(rd, next);
		size_t by_count = m ? 0 : count_phrase(rd, next);
		if (by_count) {
			/* "ordered by the number of <table>", "in descending order of count": the groups' sizes */
			if (rd->q->ordered || rd->q->order_count)
				return bi_refuse(rd, "two_orders", "the question orders twice");
			rd->q->order_count = true;
			size_t end = next + by_count;
			bi_mark(rd, i, end - i);
			if (!direction_first) {
				rd->q->desc = false;
				read_direction(rd, end, NULL);
			}
			continue;
		}
		if (!m)
			return bi_refuse(rd, "unread_order", "the ordering names no column");
		if (rd->q->ordered || rd->q->order_count)
			return bi_refuse(rd, "two_orders", "the question orders twice");
		rd->q->ordered = true;
		rd->q->order = m->col;
		m->used = true;
		bi_mark(rd, i, n);
		if (!direction_first) {
			rd->q->desc = false;
			read_direction(rd, (size_t)(m->start + m->len), NULL);
		}
		size_t after = (size_t)(m->start + m->len);
		if (after + 1 < rd->r.ws.n && strcmp(rd->r.ws.w[after], "and") == 0 &&
		    bi_column_at(rd, bi_next_word(rd, after + 1)))
			return bi_refuse(rd, "order_two_columns", "the ordering names two columns");
	}
	return 0;
}

/*
 * "the names of people in alphabetical order", "sorted in descending order": a direction that names no
 * column orders by the one column shown (an alphabetical one, beside several, by the table's naming column
 * among them).  Read after the select list; an ordering verb and "them"
 * just before it are read with it.
 */
enum bi_verdict bi_read_bare_direction(struct reader *rd)
{
	for (size_t i = 0; i < rd->r.ws.n; i++) {
		size_t b = i;
		if (b > 0 && bi_in_list(rd->r.ws.w[b - 1], (const char *const[]){"them", "it", NULL}) && !rd->read[b - 1])
			b--;
		if (b > 0 && bi_in_list(rd->r.ws.w[b - 1], ORDER_VERBS) && !rd->read[b - 1])
			b--;
		bool alphabetical = false;
		if (rd->read[i] || !read_direction(rd, i, &alphabetical))
			continue;
		struct bi_query *q = rd->q;
		/* "the names and urls of images, sorted alphabetically": by the naming column among those shown */
		int by = q->n_select == 1 ? 0 : -1;
		int naming = alphabetical && q->n_select > 1 && q->table >= 0 ? bi_naming_column(&rd->s->tables[q->table]) : -1;
		for (size_t k = 0; naming >= 0 && k < q->n_select; k++)
			if (q->select[k].table == q->table && q->select[k].column == naming)
				by = (int)k;
		if (q->ordered || q->order_count || by < 0 || q->agg != BI_NONE || q->star || q->grouped || q->most)
			return bi_refuse(rd, "unread_order", "a direction that names no column, beside no one column shown");
		q->ordered = true;
		q->order = q->select[by];
		bi_mark(rd, b, i - b);
		return 0;
	}
	return 0;
}

/*
 * "Sort the names of all counties in ascending order of population", "... and sort the results in
 * alphabetic order": an ordering verb away from the ordering it asks for, read with it ("the
 * result(s)" / "the list" after it too).
 */
enum bi_verdict bi_read_sort_verb(struct reader *rd)
{
	if (!rd->q->ordered)
		return 0;
	for (size_t i = 0; i < rd->r.ws.n; i++) {
		if (rd->read[i] || rd->r.mention_at[i] >= 0 ||
		    !bi_in_list(rd->r.ws.w[i], (const char *const[]){"sort", "order", "arrange", "rank", NULL}))
			continue;
		bi_mark(rd, i, 1);
		size_t j = i + 1;
		if (j < rd->r.ws.n && strcmp(rd->r.ws.w[j], "the") == 0)
			j++;
		if (j < rd->r.ws.n && !rd->read[j] && rd->r.mention_at[j] < 0 &&
		    bi_in_list(rd->r.ws.w[j], (const char *const[]){"result", "results", "list", "output", NULL}))
			bi_mark(rd, i, j + 1 - i);
	}
	return 0;
}
