/*
 * builtin_rows.c - the built-in generator's reading of a join's relation
 * (see builtin.h): the joined table's rows counted per row of the main
 * table ("the artist with the most albums", "customers with at least 2
 * orders"), and verbs standing between the two tables ("made", "teaches")
 * read as the foreign key that joins them; a verb sharing the stem of the
 * column whose value follows it ("located in Tokyo": location); the rows
 * of the main table no row of another table refers to ("without orders");
 * two stored values of one column joined by "or".
 */
#include "pipeline/builtin/builtin_reader.h"

#include <stdio.h>
#include <string.h>

bool bi_stored_count(const struct reader *rd, int t)
{
	static const char *const COUNT_WORDS[] = {"number", "no", "num", "count", "total", NULL};
	char tw[8][QUESTION_MAX_WORD], cw[8][QUESTION_MAX_WORD];
	int tn = bi_name_words(rd->s->tables[t].name, tw, 8);
	/* a number column of t named as t is ("faculty" of the faculty table: how many staff a year) */
	const struct schema_table *own = &rd->s->tables[t];
	for (size_t c = 0; c < own->n_columns && tn > 0; c++) {
		int n = bi_name_words(own->columns[c].name, cw, 8);
		bool same = n == tn && schema_column_is_number(&own->columns[c]) && !own->columns[c].key;
		for (int k = 0; k < n && same; k++)
			same = strcmp(cw[k], tw[k]) == 0;
		if (same)
			return true;
	}
	for (size_t u = 0; u < rd->s->n_tables && tn > 0; u++) {
		const struct schema_table *other = &rd->s->tables[u];
		for (size_t c = 0; c < other->n_columns && (int)u != t; c++) {
			int n = bi_name_words(other->columns[c].name, cw, 8);
			bool names_t = false, counts = false; /* a count word, then t's name ("invoice_number" is not) */
			for (int k = 0; k < n; k++) {
				names_t |= counts && strcmp(cw[k], tw[tn - 1]) == 0;
				counts |= bi_in_list(cw[k], COUNT_WORDS);
			}
			if (names_t && counts && schema_column_is_number(&other->columns[c]))
				return true;
		}
	}
	return false;
}

bool bi_counted_rows(struct reader *rd, const struct bi_mention *m)
{
	struct bi_query *q = rd->q;
	if (!m || m->col.table != -1)
		return false;
	if (bi_stored_count(rd, m->col.column))
		return false; /* "the party with the most hosts" and a column number_of_hosts: which is meant? */
	if (m->col.column == q->table && q->join_table < 0)
		return true;
	if (q->bridge >= 0 && m->col.column == q->join_table && q->links[0].from == q->bridge) {
		/* "the activity with the most students": rows of the bridge referring to each main row */
		q->per_row = true;
		return true;
	}
	if (q->join_table < 0 || m->col.column != q->join_table || q->join_from != q->join_table)
		return false;
	q->per_row = true;
	return true;
}

/* Verbs that state a condition of their own, not the relation a foreign key holds. */
static const char *const NOT_RELATIONS[] = {
	"contain", "include", "start", "begin", "end", "exceed", "lack", "miss", "equal", "exclude", "surpass",
	"precede", "follow", "mention", "share", "sort", "order", "rank", "arrange", "list", "show", "give",
	"find", "tell", "return", "display", "count", "compare", "differ", "range", "average", "total", "group",
	"except", NULL,
};

/* Words that may stand between the verb and what it relates to. */
static const char *const PREPOSITIONS[] = {"by", "to", "at", "in", "into", "on", "onto", "for", "with", "from",
					   "under", "through", "a", "an", "the", NULL};

bool bi_relation_verb(const struct wordnet *wn, const char *w)
{
	const char *base[4];
	size_t n = wordnet_morphy(wn, w, WORDNET_VERB, base, 4);
	if (n == 0)
		return false;
	size_t len = strlen(w);
	bool past = len > 3 && strcmp(w + len - 2, "ed") == 0;
	const char *noun[4];
	if (!past && wordnet_morphy(wn, w, WORDNET_NOUN, noun, 4) > 0)
		return false;
	for (size_t k = 0; k < n; k++)
		if (bi_in_list(base[k], NOT_RELATIONS))
			return false;
	return true;
}

/* The table of the name or value starting at word j, or -1. */
static int table_at(const struct reader *rd, size_t j)
{
	int mi = rd->r.mention_at[j];
	if (mi >= 0) {
		const struct bi_mention *m = &rd->r.mentions[mi];
		return m->col.table == -1 ? m->col.column : m->col.table;
	}
	for (size_t v = 0; v < rd->r.n_values; v++)
		if (rd->r.values[v].start == (int)j && rd->r.values[v].used)
			return rd->r.values[v].v->table;
	return -1;
}

int bi_read_relation_verbs(struct reader *rd)
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
		while (j < rd->r.ws.n && rd->r.mention_at[j] < 0 && table_at(rd, j) < 0 &&
		       (bi_in_list(rd->r.ws.w[j], PREPOSITIONS) || rd->read[j]))
			j++;
		/* it relates the main table's rows to the joined table's: a stored value there, or its rows counted */
		int t = j < rd->r.ws.n ? table_at(rd, j) : -1;
		bool counted = q->per_row && rd->r.mention_at[j] >= 0 && rd->r.mentions[rd->r.mention_at[j]].col.table == -1;
		bool value = t >= 0 && rd->r.mention_at[j] < 0;
		if (t != q->join_table || !(counted || value))
			continue;
		bi_mark(rd, i, 1);
		rd->q->n_verbs++;
		for (size_t k = i + 1; k < j; k++)
			if (bi_in_list(rd->r.ws.w[k], PREPOSITIONS))
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
	if (wordnet_morphy(rd->in->wordnet, rd->r.ws.w[i], WORDNET_VERB, base, 1) == 0 || bi_in_list(base[0], NOT_RELATIONS))
		return false;
	const char *prev = rd->r.ws.w[i - 1];
	int o = rd->r.mention_at[i - 1];
	bool plural_table = o >= 0 && rd->r.mentions[o].col.table == -1 && prev[strlen(prev) - 1] == 's';
	return plural_table || bi_in_list(prev, (const char *const[]){"who", "that", "which", "they", "we", NULL});
}

int bi_read_idle_verbs(struct reader *rd)
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
		while (j < rd->r.ws.n && !rd->read[j] && bi_in_list(rd->r.ws.w[j], PREPOSITIONS))
			j++;
		bi_mark(rd, i, 1);
		rd->q->n_verbs++;
		/* and a preposition left at the question's end ("which banks are located at") */
		for (size_t k = i + 1; (j == rd->r.ws.n || rd->read[j]) && k < j; k++)
			bi_mark(rd, k, 1);
	}
	return 0;
}

int bi_read_idle_words(struct reader *rd)
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
		int t = j < rd->r.ws.n ? table_at(rd, j) : -1;
		int before = rd->r.mention_at[i - 1];
		bool after_table = before >= 0 && rd->r.mentions[before].col.table == -1;
		if (t >= 0 && t != rd->q->table && (after_table || strcmp(rd->r.ws.w[i - 1], "corresponding") == 0))
			bi_mark(rd, i, j - i);
	}
	return 0;
}

bool bi_shares_stem(const char *w, const char *name)
{
	char words[8][QUESTION_MAX_WORD];
	int n = bi_name_words(name, words, 8);
	size_t len = strlen(w);
	size_t root = len > 5 && strcmp(w + len - 3, "ing") == 0 ? len - 3
		      : len > 4 && strcmp(w + len - 2, "ed") == 0 ? len - 2 : len;
	for (int k = 0; k < n; k++) {
		size_t c = 0;
		while (w[c] && words[k][c] && w[c] == words[k][c])
			c++;
		if (c >= 5 || (root >= 4 && c >= root))
			return true;
	}
	return false;
}

static const char *const VALUE_PREPS[] = {"in", "at", "from", "by", "on", "for", "as", "to", NULL};

size_t bi_value_negation(const struct reader *rd, size_t b)
{
	size_t j = b;
	static const char *const NOT[] = {"not", "don't", "doesn't", "didn't", NULL};
	while (j > 0 && !rd->read[j - 1] && rd->r.mention_at[j - 1] < 0 &&
	       (bi_in_list(rd->r.ws.w[j - 1], VALUE_PREPS) || strcmp(rd->r.ws.w[j - 1], "the") == 0))
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

struct derived_walk {
	char words[8][QUESTION_MAX_WORD]; /* a column name's words, stemmed */
	int n;
	bool found;
};

static void derived_in_name(const char *lemma, unsigned relation, void *ctx)
{
	(void)relation;
	struct derived_walk *d = ctx;
	char stem[QUESTION_MAX_WORD];
	bi_stem(lemma, stem);
	for (int k = 0; k < d->n && !d->found; k++)
		d->found = strcmp(d->words[k], stem) == 0;
}

/* Does verb w name the column: its stem ("located": location), a form WordNet derives from it ("owned":
   owner), or "belong" (to a value of it)? */
static bool verb_of_column(const struct reader *rd, size_t at, const char *name)
{
	const char *w = rd->r.ws.w[at];
	if (bi_shares_stem(w, name))
		return true;
	if (bi_in_list(w, (const char *const[]){"belong", "belongs", "belonged", "belonging", NULL}))
		return at + 1 < rd->r.ws.n && strcmp(rd->r.ws.w[at + 1], "to") == 0;
	struct derived_walk d = {.found = false};
	d.n = bi_name_words(name, d.words, 8);
	if (rd->in->wordnet)
		wordnet_related(rd->in->wordnet, w, WORDNET_BASE | WORDNET_DERIVED, 2, derived_in_name, &d);
	return d.found;
}

size_t bi_value_verb(struct reader *rd, size_t start, struct bi_col col)
{
	size_t j = start;
	while (j > 0 && !rd->read[j - 1] && rd->r.mention_at[j - 1] < 0 && bi_in_list(rd->r.ws.w[j - 1], VALUE_PREPS))
		j--;
	if (j == 0 || rd->read[j - 1] || rd->r.mention_at[j - 1] >= 0 || rd->r.is_number[j - 1] ||
	    !verb_of_column(rd, j - 1, rd->s->tables[col.table].columns[col.column].name))
		return start;
	bi_mark(rd, j - 1, start - j + 1);
	return j - 1;
}

/*
 * "that do not have any <table>", "without <table>": the rows of the main table no row of that
 * table refers to (NOT IN over its one foreign key to the main table).  Read before the tables
 * are chosen: the negated table's name does not count as a name of the main reading.
 */
int bi_read_negated_table(struct reader *rd)
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
int bi_place_negated_table(struct reader *rd)
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

/*
 * "Human Resource or Manager": a second value of a column one filter already compares with a value,
 * "or" (and "in", "from", "the") alone between them, joins that filter (c = 'a' OR c = 'b'); "either"
 * before the first is read.  0 when joined, 1 when not.
 */
int bi_or_value(struct reader *rd, const struct bi_value *v, struct bi_col col)
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
			return 1;
		f->or_text = v->v->value;
		bi_mark(rd, (size_t)lo, (size_t)(hi - lo));
		int first = f->end <= v->start ? f->start : v->start;
		f->end = f->end <= v->start ? v->start + v->len : f->end; /* the words of both values */
		f->start = first;
		if (first > 0 && !rd->read[first - 1] && strcmp(rd->r.ws.w[first - 1], "either") == 0)
			bi_mark(rd, (size_t)first - 1, 1);
		return 0;
	}
	return 1;
}

/* Of a mention naming another table than the main one: the one candidate column of the main table
   (its key to that table, or a column spelling its name); table -1 when none or two. */
struct bi_col bi_main_column_named(const struct reader *rd, const struct bi_mention *m)
{
	struct bi_col one = {-1, -1};
	int n = 0;
	if (m->col.table != -1 || m->used || m->col.column == rd->q->table)
		return one; /* "for every company" of company: every row */
	for (int k = 0; k < m->n_cands; k++)
		if (m->cands[k].table == rd->q->table) {
			one = m->cands[k];
			n++;
		}
	return n == 1 ? one : (struct bi_col){-1, -1};
}

/*
 * "How many exhibitions has each artist had?": the counted (main) table refers to the table named after
 * "each", joined already: the count per row of that table, shown by its naming column.  The reading
 * turns round (that table main, the counted one joined); true when so read.
 */
bool bi_per_row_of_each(struct reader *rd, size_t j)
{
	struct bi_query *q = rd->q;
	int mi = rd->r.mention_at[j];
	if (mi < 0 || rd->r.mentions[mi].col.table != -1 || rd->r.mentions[mi].used || q->agg != BI_COUNT ||
	    q->count_listed || q->counted_table != q->table || q->join_table < 0 || q->bridge >= 0 ||
	    q->join_from != q->table || rd->r.mentions[mi].col.column != q->join_table || q->n_filters > 0)
		return false;
	/* a key of text (dept_code) names the groups itself: grouped by it (read_group) */
	const struct schema_foreign_key *fk = &rd->s->tables[q->table].foreign_keys[q->join_fk];
	const struct schema_table *main = &rd->s->tables[q->table];
	for (size_t c = 0; c < main->n_columns; c++)
		if (fk->n_columns == 1 && strcmp(main->columns[c].name, fk->columns[0]) == 0 &&
		    !schema_column_is_number(&main->columns[c]))
			return false;
	int t = q->join_table, name = bi_naming_column(&rd->s->tables[t]);
	if (name < 0)
		return false;
	q->join_table = q->table;
	q->table = t;
	q->per_row = true;
	q->select[q->n_select++] = (struct bi_col){t, name};
	rd->r.mentions[mi].used = true;
	bi_mark(rd, j, (size_t)rd->r.mentions[mi].len);
	return true;
}
