/*
 * builtin_adjectives.c - the built-in generator's superlative adjectives
 * that name no column (see builtin.h): "the oldest captain", "the tallest
 * player", "the most expensive" order by the one column WordNet gives as
 * the attribute the adjective measures (old: age, tall: height; expensive
 * and cheap: a price or cost); "the most recent", "the latest" order by the
 * main table's one date column, "the most recent year" by the column of
 * dates or years it names; "older than 25", "taller than average" compare
 * that column.  The direction is English: a small list of which pole each
 * adjective names.
 */
#include "pipeline/builtin/builtin_reader.h"

#include <string.h>

/* Adjectives naming the high end of their attribute, and the low end. */
static const char *const HIGH[] = {"old", "tall", "long", "heavy", "big", "large", "high", "expensive", "rich",
				   "fast", "wide", "deep", "far", NULL};
static const char *const LOW[] = {"young", "short", "light", "small", "low", "cheap", "poor", "slow", "narrow",
				  "shallow", "near", NULL};
/* Adjectives of price, whose attribute WordNet names "expensiveness": the column is a price or cost. */
static const char *const PRICED[] = {"expensive", "cheap", NULL};
static const char *const PRICE[] = {"price", "cost", NULL};

/* An adjective naming one end of a measure ("old", "expensive", "cheap"). */
static bool measure_adjective(const char *w)
{
	return bi_in_list(w, HIGH) || bi_in_list(w, LOW);
}

bool bi_superlative_adjective_word(const char *w)
{
	return bi_in_list(w, (const char *const[]){"recent", "recently", NULL}) || measure_adjective(w);
}

/* Words for the end of time, and the start. */
static const char *const LATE[] = {"recent", "recently", "latest", "newest", NULL};
static const char *const EARLY[] = {"earliest", NULL};

struct attributes {
	char lemma[8][QUESTION_MAX_WORD];
	size_t n;
};

static void collect(const char *lemma, unsigned relation, void *ctx)
{
	struct attributes *a = ctx;
	if ((relation & WORDNET_ATTRIBUTE) && a->n < 8 && strlen(lemma) < QUESTION_MAX_WORD)
		strcpy(a->lemma[a->n++], lemma);
}

/*
 * How many columns of the reading's tables are a number whose name ends in one of a's lemmas (date:
 * the main table's columns of a date, or whose name ends in "date", a joined table's counting twice:
 * which of them is meant is not said); *ret the last of them.
 */
static int one_column(const struct reader *rd, const struct attributes *a, bool date, struct bi_col *ret)
{
	const int tabs[3] = {rd->q->table, rd->q->join_table, rd->q->bridge};
	int found = 0;
	for (int k = 0; k < 3; k++) {
		if (tabs[k] < 0)
			continue;
		const struct schema_table *t = &rd->s->tables[tabs[k]];
		for (size_t c = 0; c < t->n_columns; c++) {
			char nw[8][QUESTION_MAX_WORD];
			int n = bi_name_words(t->columns[c].name, nw, 8);
			bool match = false;
			if (date)
				match = t->columns[c].type_class == SCHEMA_TYPE_DATE || (n > 0 && strcmp(nw[n - 1], "date") == 0);
			for (size_t l = 0; l < a->n && !match && n > 0; l++)
				match = strcmp(nw[n - 1], a->lemma[l]) == 0 && schema_column_is_number(&t->columns[c]);
			/* a date of the joined tables too: "the customer who made an order most recently" may mean the
			   order's date */
			if (match && date && k > 0)
				found += 2;
			if (match && (date ? k == 0 : true)) {
				found++;
				*ret = (struct bi_col){tabs[k], (int)c};
			}
		}
	}
	return found;
}

/* The main table's one column of a date of birth ("dob", "birth_date", "date_of_birth", "born"). */
static bool birth_column(const struct reader *rd, struct bi_col *ret)
{
	const struct schema_table *t = &rd->s->tables[rd->q->table];
	int found = 0;
	for (size_t c = 0; c < t->n_columns; c++) {
		static const char *const BIRTH[] = {"birth", "dob", "born", "birthday", "birthdate", NULL};
		if (bi_name_has_word(t->columns[c].name, BIRTH) && !schema_column_is_number(&t->columns[c])) {
			found++;
			*ret = (struct bi_col){rd->q->table, (int)c};
		}
	}
	return found == 1;
}

enum bi_verdict bi_read_superlative_adjectives(struct reader *rd)
{
	const struct wordnet *wn = rd->in->wordnet;
	for (size_t i = 0; i < rd->r.ws.n; i++) {
		if (rd->read[i] || rd->r.mention_at[i] >= 0 || rd->r.is_number[i])
			continue;
		/* "most recent", "least recently": the adjective after */
		bool flip = strcmp(rd->r.ws.w[i], "least") == 0;
		size_t n = 1;
		const char *adj = rd->r.ws.w[i];
		if ((flip || strcmp(adj, "most") == 0) && i + 1 < rd->r.ws.n && rd->r.mention_at[i + 1] < 0) {
			adj = rd->r.ws.w[i + 1];
			n = 2;
		}
		size_t len = strlen(adj);
		bool late = bi_in_list(adj, LATE), early = bi_in_list(adj, EARLY);
		/* "the most expensive", "the least expensive": a measure said with most / least */
		bool measured = n == 2 && measure_adjective(adj);
		if (!late && !early && !measured && (n == 2 || len < 5 || strcmp(adj + len - 3, "est") != 0 || !wn))
			continue;
		struct bi_mention *named = bi_column_at(rd, i + n);
		struct bi_col col;
		bool desc;
		if (named && n == 2 && (late || early)) {
			/* "in the most recent year": that column ("the earliest date of birth": the aggregate rule's) */
			const struct schema_column *c = &rd->s->tables[named->col.table].columns[named->col.column];
			if (c->type_class != SCHEMA_TYPE_DATE && !schema_column_is_number(c) &&
			    !bi_name_has_word(c->name, (const char *const[]){"date", "year", "time", NULL}))
				continue;
			named->used = true;
			col = named->col;
			desc = late != flip;
		} else if (named) {
			continue; /* "the highest price": the aggregate rule's */
		} else if (late || early) {
			struct attributes none = {.n = 0};
			if (one_column(rd, &none, true, &col) != 1)
				continue;
			desc = late != flip;
		} else {
			const char *base[4];
			size_t nb = measured ? 1 : wn ? wordnet_morphy(wn, adj, WORDNET_ADJ, base, 4) : 0;
			if (measured)
				base[0] = adj;
			if (nb == 0)
				continue;
			bool high = bi_in_list(base[0], HIGH), low = bi_in_list(base[0], LOW);
			if (high == low)
				continue;
			struct attributes a = {.n = 0};
			if (wn)
				wordnet_related(wn, base[0], WORDNET_ATTRIBUTE, 3, collect, &a);
			for (const char *const *p = PRICE; bi_in_list(base[0], PRICED) && *p && a.n < 8; p++)
				strcpy(a.lemma[a.n++], *p);
			desc = high != flip;
			if (one_column(rd, &a, false, &col) != 1) {
				/* "the oldest employee" with no age: the earliest date of birth */
				if ((strcmp(base[0], "old") != 0 && strcmp(base[0], "young") != 0) || !birth_column(rd, &col))
					continue;
				desc = !high;
			}
		}
		if (rd->q->ordered)
			return bi_refuse(rd, "two_superlatives", "the question asks for two superlatives");
		rd->q->ordered = true;
		rd->q->order = col;
		rd->q->desc = desc;
		rd->q->limit = rd->q->top ? rd->q->top : 1;
		bi_mark(rd, i, n);
	}
	return 0;
}

enum bi_verdict bi_read_comparative_adjectives(struct reader *rd)
{
	const struct wordnet *wn = rd->in->wordnet;
	for (size_t i = 0; wn && i + 2 < rd->r.ws.n; i++) {
		const char *adj = rd->r.ws.w[i];
		size_t len = strlen(adj);
		if (rd->read[i] || rd->r.mention_at[i] >= 0 || len < 5 || strcmp(adj + len - 2, "er") != 0 ||
		    strcmp(rd->r.ws.w[i + 1], "than") != 0 || rd->read[i + 1])
			continue;
		size_t avg = bi_average_at(rd, i + 2);
		if (!avg && (!rd->r.is_number[i + 2] || rd->read[i + 2]))
			continue;
		/* the positive form: "older" is a WordNet adjective of its own ("elder"), so the comparative's
		   ending comes off first (older, larger, heavier) */
		char pos[QUESTION_MAX_WORD];
		const char *found = NULL;
		for (int cut = 0; cut < 4 && !found; cut++) {
			memcpy(pos, adj, len - 2);
			pos[len - 2] = '\0';
			if (cut == 1)
				strcat(pos, "e"); /* larger: large */
			if (cut == 2 && pos[len - 3] == 'i')
				pos[len - 3] = 'y'; /* heavier: heavy */
			if (cut == 3 && len >= 6 && pos[len - 3] == pos[len - 4])
				pos[len - 3] = '\0'; /* bigger: big */
			if (bi_in_list(pos, HIGH) || bi_in_list(pos, LOW))
				found = pos;
		}
		if (!found)
			continue;
		bool high = bi_in_list(found, HIGH);
		struct attributes a = {.n = 0};
		wordnet_related(wn, found, WORDNET_ATTRIBUTE, 3, collect, &a);
		struct bi_col col;
		if (one_column(rd, &a, false, &col) != 1)
			continue;
		struct bi_filter f = {.col = col, .op = high ? ">" : "<", .average = avg > 0};
		if (!avg)
			f.num = rd->r.number[i + 2];
		enum bi_verdict rc = bi_add_filter(rd, f);
		if (rc)
			return rc;
		bi_mark(rd, i, 2 + (avg ? avg : 1));
	}
	return 0;
}
