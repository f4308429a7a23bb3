/*
 * builtin_names.c - where the question names the schema: spans of its
 * words that spell a table's or a column's name (singular or plural,
 * snake_case and camelCase names split into words), and spans that hold a
 * stored value the evidence stage confirmed.
 */
#include "pipeline/builtin/builtin_names.h"

#include "common/error.h"
#include "pipeline/text/fold.h"
#include "pipeline/text/numbers.h"
#include "pipeline/text/stopwords.h"

#include <ctype.h>
#include <string.h>

void bi_stem(const char *w, char *out)
{
	size_t n = strlen(w);
	if (n >= QUESTION_MAX_WORD)
		n = QUESTION_MAX_WORD - 1;
	memcpy(out, w, n);
	out[n] = '\0';
	if (n > 2 && out[n - 2] == '\'' && out[n - 1] == 's')
		out[n -= 2] = '\0'; /* possessive */
	if (n > 1 && out[n - 1] == '\'')
		out[--n] = '\0';
	if (n > 4 && strcmp(out + n - 3, "ies") == 0)
		strcpy(out + n - 3, "y");
	else if (n > 4 && (strcmp(out + n - 3, "ses") == 0 || strcmp(out + n - 3, "xes") == 0 ||
			   strcmp(out + n - 4, "ches") == 0 || strcmp(out + n - 4, "shes") == 0))
		out[n - 2] = '\0';
	else if (n >= 3 && out[n - 1] == 's' && out[n - 2] != 's' && out[n - 2] != 'u' && out[n - 2] != 'i')
		out[n - 1] = '\0';
}

int bi_name_words(const char *name, char out[][QUESTION_MAX_WORD], int max)
{
	int n = 0;
	size_t len = 0;
	char w[QUESTION_MAX_WORD];
	for (const char *p = name;; p++) {
		bool boundary = !*p || !isalnum((unsigned char)*p) ||
				(p > name && isupper((unsigned char)*p) && islower((unsigned char)p[-1])) ||
				(p > name && isdigit((unsigned char)*p) != isdigit((unsigned char)p[-1]));
		if (boundary && len) {
			w[len] = '\0';
			if (n == max)
				return -1;
			bi_stem(w, out[n++]);
			len = 0;
		}
		if (!*p)
			break;
		if (isalnum((unsigned char)*p) && len + 1 < QUESTION_MAX_WORD)
			w[len++] = (char)tolower((unsigned char)*p);
	}
	return n;
}

/* Does the name (its stemmed words) spell the question's stems from at on? */
static bool spells(const struct bi_words *r, size_t at, char nw[][QUESTION_MAX_WORD], int n)
{
	if (n <= 0 || at + (size_t)n > r->ws.n)
		return false;
	for (int k = 0; k < n; k++)
		if (strcmp(r->stem[at + k], nw[k]) != 0)
			return false;
	return true;
}

/*
 * How many question words from at one abbreviated name word stands for: "fname" for "first name" (the
 * initial of first, last or middle, then the word), "dob" for "date of birth" (three or four initials).
 * 0: none.
 */
static const char *const INITIALLED[] = {"first", "last", "middle", NULL};

static int abbreviation_words(const struct bi_words *r, size_t at, const char *w)
{
	size_t len = strlen(w);
	if (len >= 4 && at + 1 < r->ws.n && w[0] == r->ws.w[at][0] && strcmp(w + 1, r->stem[at + 1]) == 0)
		for (const char *const *p = INITIALLED; *p; p++)
			if (strcmp(r->ws.w[at], *p) == 0)
				return 2;
	if (len < 3 || len > 4 || at + len > r->ws.n)
		return 0;
	/* initials of words of four letters or more, "of" / "and" / "in" between ("gross domestic product") */
	for (size_t k = 0; k < len; k++) {
		const char *q = r->ws.w[at + k];
		bool joint = k > 0 && k + 1 < len && (!strcmp(q, "of") || !strcmp(q, "and") || !strcmp(q, "in"));
		if (q[0] != w[k] || (!joint && (strlen(q) < 4 || !isalpha((unsigned char)q[1]))))
			return 0;
	}
	return (int)len;
}

/* The question words from at that the name spells, each name word whole or abbreviated; 0: none. */
static int spells_abbreviated(const struct bi_words *r, size_t at, char nw[][QUESTION_MAX_WORD], int n)
{
	size_t pos = at;
	for (int k = 0; k < n; k++) {
		if (pos < r->ws.n && strcmp(r->stem[pos], nw[k]) == 0) {
			pos++;
			continue;
		}
		int a = abbreviation_words(r, pos, nw[k]);
		if (a == 0)
			return 0;
		pos += (size_t)a;
	}
	return n > 0 ? (int)(pos - at) : 0;
}

/* Is w an abbreviation of word (its first letter, then some of its letters in order: "emp", "stu")? */
static bool abbreviates(const char *w, const char *word)
{
	size_t lw = strlen(w), lword = strlen(word);
	if (lw < 3 || lw >= lword || w[0] != word[0])
		return false;
	const char *p = word + 1;
	for (const char *c = w + 1; *c; c++) {
		p = strchr(p, *c);
		if (!p)
			return false;
		p++;
	}
	return true;
}

int bi_add_candidate(struct bi_mention *m, int table, int column)
{
	if (m->n_cands == BI_MAX_CANDIDATES)
		return -1;
	m->cands[m->n_cands++] = (struct bi_col){table, column};
	return 0;
}

/* The one column of table tb whose last name word is word, when no column is named word alone; else -1. */
static int generic_column(const struct schema_table *tb, const char *word, bool key_only)
{
	char nw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	int found = -1;
	for (size_t c = 0; c < tb->n_columns; c++) {
		int n = bi_name_words(tb->columns[c].name, nw, BI_NAME_WORDS);
		if (n <= 0 || strcmp(nw[n - 1], word) != 0)
			continue;
		if (n == 1)
			return -1; /* the plain name matches it already */
		if (key_only && !(tb->columns[c].primary_key && tb->n_primary_key == 1))
			continue;
		if (found >= 0)
			return -1;
		found = (int)c;
	}
	return found;
}

/* A table naming its rows by a title (movies, songs): its one column ending in "title" when no column ends
   in "name"; else -1. */
static int title_column(const struct schema_table *tb)
{
	char nw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	int found = -1;
	for (size_t c = 0; c < tb->n_columns; c++) {
		int n = bi_name_words(tb->columns[c].name, nw, BI_NAME_WORDS);
		if (n > 0 && strcmp(nw[n - 1], "name") == 0)
			return -1;
		if (n > 0 && strcmp(nw[n - 1], "title") == 0) {
			if (found >= 0)
				return -1;
			found = (int)c;
		}
	}
	return found;
}

int bi_naming_column(const struct schema_table *tb)
{
	char nw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	int found = -1;
	for (size_t c = 0; c < tb->n_columns; c++) {
		int n = bi_name_words(tb->columns[c].name, nw, BI_NAME_WORDS);
		if (n <= 0 || strcmp(nw[n - 1], "name") != 0 || tb->columns[c].key)
			continue;
		if (found >= 0)
			return -1;
		found = (int)c;
	}
	return found >= 0 ? found : title_column(tb);
}

/*
 * Column c is one word made of the initial of one of the table's name words and a word ("gname",
 * "gtype" in video_games, "bname" in bank), and no other column of the table ends in that word so.
 */
static bool initialled_column(const struct schema_table *tb, size_t c, char tw[][QUESTION_MAX_WORD], int tn)
{
	char nw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	if (bi_name_words(tb->columns[c].name, nw, BI_NAME_WORDS) != 1 || strlen(nw[0]) < 4)
		return false;
	bool initial = false;
	for (int k = 0; k < tn && !initial; k++)
		initial = tw[k][0] == nw[0][0];
	if (!initial)
		return false;
	char word[QUESTION_MAX_WORD];
	strcpy(word, nw[0] + 1);
	for (size_t o = 0; o < tb->n_columns; o++) {
		if (o == c || bi_name_words(tb->columns[o].name, nw, BI_NAME_WORDS) != 1)
			continue;
		if (strcmp(nw[0], word) == 0 || (strlen(nw[0]) == strlen(word) + 1 && strcmp(nw[0] + 1, word) == 0))
			return false; /* "name" itself, or fname beside lname */
	}
	return true;
}

/* Is the name (its n stemmed words) a count of the word: word_count, num_word, no_word, num_of_word,
   number_of_word? */
static bool counts(char nw[][QUESTION_MAX_WORD], int n, const char *word)
{
	bool num = n >= 2 && (strcmp(nw[0], "num") == 0 || strcmp(nw[0], "no") == 0 || strcmp(nw[0], "number") == 0);
	return (n == 2 && ((strcmp(nw[1], "count") == 0 && strcmp(nw[0], word) == 0) ||
			   (num && strcmp(nw[0], "number") != 0 && strcmp(nw[1], word) == 0))) ||
	       (n == 3 && num && strcmp(nw[1], "of") == 0 && strcmp(nw[2], word) == 0);
}

/*
 * How many words from at name column c of table t: its whole name, its name without the table's name
 * in front (customer_name in customers: "name"), or for the words "name" and "id" the table's one
 * column of that kind (its one name-like column, its one-column primary key).  0: none.
 */
static int column_spelled(const struct bi_words *r, size_t at, const struct schema_table *tb, size_t c,
			  char tw[][QUESTION_MAX_WORD], int tn, int name_col, int id_col)
{
	char nw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	int n = bi_name_words(tb->columns[c].name, nw, BI_NAME_WORDS);
	if (spells(r, at, nw, n))
		return n;
	int a = spells_abbreviated(r, at, nw, n);
	if (a > n)
		return a;
	/* "birthplaces": birth_place, its words run together */
	if (n == 2 && strlen(nw[0]) + strlen(nw[1]) < QUESTION_MAX_WORD && strncmp(r->stem[at], nw[0], strlen(nw[0])) == 0 &&
	    strcmp(r->stem[at] + strlen(nw[0]), nw[1]) == 0)
		return 1;
	/* "amount of outstanding": amount_outstanding */
	if (n == 2 && at + 2 < r->ws.n && strcmp(r->stem[at], nw[0]) == 0 && strcmp(r->ws.w[at + 1], "of") == 0 &&
	    strcmp(r->stem[at + 2], nw[1]) == 0)
		return 3;
	/* "profits": profits_billion, a unit after the name */
	static const char *const UNITS[] = {"billion", "million", "thousand", "usd", "dollars",
					    "kg", "km", "cm", "mm", "inches", "mph", "kmh", NULL};
	/* ("damage_millions_usd": two units) */
	int named = n;
	for (bool unit = true; named >= 2 && unit;) {
		unit = false;
		for (const char *const *u = UNITS; *u && !unit; u++)
			unit = strcmp(nw[named - 1], *u) == 0;
		named -= unit;
	}
	if (named < n && spells(r, at, nw, named))
		return named;
	/* "the number of bedrooms": bedroom_count, num_bedrooms; "the total number of horses": total_horses */
	if (at + 2 < r->ws.n && strcmp(r->ws.w[at], "number") == 0 && strcmp(r->ws.w[at + 1], "of") == 0 &&
	    counts(nw, n, r->stem[at + 2]))
		return 3;
	if (at + 3 < r->ws.n && n == 2 && strcmp(nw[0], "total") == 0 && strcmp(r->ws.w[at], "total") == 0 &&
	    strcmp(r->ws.w[at + 1], "number") == 0 && strcmp(r->ws.w[at + 2], "of") == 0 &&
	    strcmp(r->stem[at + 3], nw[1]) == 0)
		return 4;
	/* "more than 4 bedrooms": the counted word after a number */
	if (at > 0 && r->is_number[at - 1] && counts(nw, n, r->stem[at]))
		return 1;
	/* payment_method_code: "payment method", city_code: "city" (not a key's: "shipping agent" is the agent's table) */
	if (n >= 2 && strcmp(nw[n - 1], "code") == 0 && !tb->columns[c].key && spells(r, at, nw, n - 1))
		return n - 1;
	if (tn > 0 && n > tn) {
		bool prefixed = true;
		for (int k = 0; k < tn && prefixed; k++)
			prefixed = strcmp(nw[k], tw[k]) == 0 || (tn == 1 && abbreviates(nw[k], tw[k]));
		if (prefixed && spells(r, at, nw + tn, n - tn))
			return n - tn;
		if (prefixed && (a = spells_abbreviated(r, at, nw + tn, n - tn)) > n - tn)
			return a;
		/* product_type_code in products: "type" */
		if (prefixed && n - tn >= 2 && strcmp(nw[n - 1], "code") == 0 && spells(r, at, nw + tn, n - tn - 1))
			return n - tn - 1;
	}
	/* booking_start_date in apartment_bookings: the name without the last word of the table's in front, but
	   for a bare name or id (not a key's: document_type_code in all_documents refers to the types) */
	if (tn >= 2 && n >= 2 && (n >= 3 || (strcmp(nw[1], "name") != 0 && strcmp(nw[1], "id") != 0)) &&
	    !tb->columns[c].key && !tb->columns[c].reference && strcmp(nw[0], tw[tn - 1]) == 0 &&
	    spells(r, at, nw + 1, n - 1))
		return n - 1;
	if (n == 1 && strcmp(r->stem[at], nw[0] + 1) == 0 && initialled_column(tb, c, tw, tn))
		return 1; /* "gname" in video_games: "name" */
	/* "latitude": lat, "enrollment": enr; a one-word name that is the word cut short */
	if (n == 1 && strlen(nw[0]) >= 3 && strlen(r->stem[at]) >= strlen(nw[0]) + 3 &&
	    strncmp(r->stem[at], nw[0], strlen(nw[0])) == 0)
		return 1;
	if ((int)c == name_col && strcmp(r->stem[at], "name") == 0)
		return 1;
	if ((int)c == id_col && strcmp(r->stem[at], "id") == 0)
		return 1;
	return 0;
}

/*
 * Where a column name's words (cn of them) start once the table's name (tn words) is taken off its front,
 * when what is left is `want` words long; 0 (the whole name) otherwise.
 */
static int after_table_name(char nw[][QUESTION_MAX_WORD], int cn, char tw[][QUESTION_MAX_WORD], int tn, int want)
{
	if (tn <= 0 || cn != want + tn)
		return 0;
	if (tn == 1 && abbreviates(nw[0], tw[0])) /* emp_fname in employee */
		return 1;
	for (int k = 0; k < tn; k++)
		if (strcmp(nw[k], tw[k]) != 0)
			return 0;
	return tn;
}

/*
 * Every column of the tables read whose name, whole or without the table's name in front, is `want`
 * words long: added to m when match(those words, ctx) says so.
 */
void bi_add_columns_named(const struct schema *s, const struct bi_words *r, int want,
			      bool (*match)(char words[][QUESTION_MAX_WORD], const void *ctx), const void *ctx,
			      struct bi_mention *m)
{
	char tw[BI_NAME_WORDS][QUESTION_MAX_WORD], nw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	for (size_t t = 0; t < s->n_tables; t++) {
		if (!bi_table_read(r, t))
			continue;
		int tn = bi_name_words(s->tables[t].name, tw, BI_NAME_WORDS);
		for (size_t c = 0; c < s->tables[t].n_columns; c++) {
			int cn = bi_name_words(s->tables[t].columns[c].name, nw, BI_NAME_WORDS);
			int o = after_table_name(nw, cn, tw, tn, want);
			if (cn - o == want && match(nw + o, ctx) && bi_add_candidate(m, (int)t, (int)c) < 0)
				m->too_many = true;
		}
	}
}

struct word_seq {
	char (*w)[QUESTION_MAX_WORD];
	int n;
};

static bool same_words(char words[][QUESTION_MAX_WORD], const void *ctx)
{
	const struct word_seq *q = ctx;
	for (int k = 0; k < q->n; k++)
		if (strcmp(words[k], q->w[k]) != 0)
			return false;
	return true;
}

/* One name word that is the initial of "first", "last" or "middle" and the next word: "fname". */
static bool initialled_word(char words[][QUESTION_MAX_WORD], const void *ctx)
{
	const struct word_seq *q = ctx;
	bool initialled = false;
	for (const char *const *p = INITIALLED; *p; p++)
		initialled |= strcmp(q->w[0], *p) == 0;
	return initialled && words[0][0] == q->w[0][0] && strcmp(words[0] + 1, q->w[1]) == 0;
}

/*
 * "first and last names", "first, middle, and last name": words before a two-or-more-word column name,
 * joined to it by "and", each read with that name's last words (first name) when that names a column.
 */
static int find_coordinated(const struct schema *s, struct bi_words *r)
{
	for (size_t i = 0; i + 2 < r->ws.n; i++) {
		if (r->mention_at[i] >= 0 || r->is_number[i])
			continue;
		size_t j = i; /* words w1 [w2 ...] "and" <name of two or more words> */
		while (j < r->ws.n && r->mention_at[j] < 0 && !r->is_number[j] && strcmp(r->ws.w[j], "and") != 0)
			j++;
		if (j + 1 >= r->ws.n || strcmp(r->ws.w[j], "and") != 0 || j - i > 3 || r->mention_at[j + 1] < 0)
			continue;
		const struct bi_mention *head = &r->mentions[r->mention_at[j + 1]];
		if (head->start != (int)j + 1 || head->len < 2 || head->table >= 0)
			continue;
		for (size_t k = i; k < j; k++) {
			char seq[BI_NAME_WORDS][QUESTION_MAX_WORD];
			int n = 1;
			strcpy(seq[0], r->stem[k]);
			for (int w = 1; w < head->len && n < BI_NAME_WORDS; w++)
				strcpy(seq[n++], r->stem[head->start + w]);
			struct bi_mention m = {.start = (int)k, .len = 1, .table = -1};
			bi_add_columns_named(s, r, n, same_words, &(struct word_seq){seq, n}, &m);
			if (n == 2) /* "first and last name" for fname and lname too */
				bi_add_columns_named(s, r, 1, initialled_word, &(struct word_seq){seq, n}, &m);
			if (m.n_cands == 0)
				continue;
			if (r->n_mentions == BI_MAX_MENTIONS)
				return -1;
			r->mention_at[k] = (int)r->n_mentions;
			r->mentions[r->n_mentions++] = m;
		}
		i = j;
	}
	return 0;
}

bool bi_name_has_word(const char *name, const char *const *words)
{
	char nw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	int n = bi_name_words(name, nw, BI_NAME_WORDS);
	for (int k = 0; k < n; k++)
		for (const char *const *w = words; *w; w++)
			if (strcmp(nw[k], *w) == 0)
				return true;
	return false;
}

/* Is `word` the whole name of a table other than t ("customer" of customers)? */
static bool named_by_table(const struct schema *s, size_t t, const char *word)
{
	char tw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	for (size_t u = 0; u < s->n_tables; u++)
		if (u != t && bi_name_words(s->tables[u].name, tw, BI_NAME_WORDS) == 1 && strcmp(tw[0], word) == 0)
			return true;
	return false;
}

/* Two-word names whose head says the column: "phone number" for phone, "email address" for email. */
static const char *const COMPOUND[][2] = {{"phone", "number"}, {"email", "address"}, {"zip", "code"},
					  {"telephone", "number"}, {"mobile", "number"}};

void bi_drop_mention(struct bi_words *r, int k)
{
	struct bi_mention *m = &r->mentions[k];
	m->dropped = true;
	for (int w = 0; w < m->len; w++)
		r->mention_at[m->start + w] = -1;
}

void bi_extend_mention_back(struct bi_words *r, int k)
{
	struct bi_mention *m = &r->mentions[k];
	m->start--;
	m->len++;
	r->mention_at[m->start] = k;
}

void bi_extend_compounds(struct bi_words *r)
{
	for (size_t mi = 0; mi < r->n_mentions; mi++) {
		struct bi_mention *m = &r->mentions[mi];
		size_t end = (size_t)(m->start + m->len);
		/* the tail read alone only through a synonym ("number" for quantity) gives way */
		struct bi_mention *t = end < r->ws.n && r->mention_at[end] >= 0 ? &r->mentions[r->mention_at[end]] : NULL;
		if (m->dropped || end >= r->ws.n || (t && !(t->synonym && t->len == 1 && t != m)))
			continue;
		bool tail = m->table >= 0 && strcmp(r->stem[end], "member") == 0; /* "faculty members" */
		for (size_t k = 0; k < sizeof(COMPOUND) / sizeof(COMPOUND[0]) && !tail && m->len == 1 && m->n_cands > 0; k++)
			tail = strcmp(r->stem[m->start], COMPOUND[k][0]) == 0 && strcmp(r->stem[end], COMPOUND[k][1]) == 0;
		if (tail) {
			if (t)
				t->dropped = true;
			m->len++;
			r->mention_at[end] = (int)mi;
		}
	}
}

/* A word right after a relative pronoun is a verb's place ("students who play Football"), not a table's
   name.  (After a plural table's name it is not said: "students play video games" names plays_games.) */
static bool after_relative(const struct bi_words *r, size_t at)
{
	static const char *const RELATIVE[] = {"who", "that", "which", NULL};
	for (const char *const *p = RELATIVE; at > 0 && *p; p++)
		if (strcmp(r->ws.w[at - 1], *p) == 0)
			return true;
	return false;
}

/*
 * Nothing else named at `at`: the one table of several words whose first word it says ("counties" for
 * county_public_safety) or, when last, whose last word, its head, it says as the question spells it, not a
 * synonym read in its place ("transactions" for financial_transactions; "letter" read as type names no
 * table).  Not when another table's name has that word, nor a column's but a key's or, for the last word,
 * the table's own column starting with it (transaction_type); nor a stopword ("all" of All_Documents).
 */
static struct bi_mention edge_word_names(const struct schema *s, const struct bi_words *r, size_t at, bool last)
{
	char tw[BI_NAME_WORDS][QUESTION_MAX_WORD], cw[BI_NAME_WORDS][QUESTION_MAX_WORD], said[QUESTION_MAX_WORD];
	struct bi_mention m = {.start = (int)at, .table = -1}, none = m;
	bi_stem(r->ws.w[at], said);
	if (stopword_is(r->stem[at], strlen(r->stem[at]), STOPWORD_RETRIEVAL) || after_relative(r, at) ||
	    (last && strcmp(said, r->stem[at]) != 0))
		return none;
	for (size_t t = 0; t < s->n_tables; t++) {
		int tn = bi_name_words(s->tables[t].name, tw, BI_NAME_WORDS), edge = last ? tn - 1 : 0;
		bool hit = tn >= 2 && strcmp(tw[edge], r->stem[at]) == 0;
		for (int k = 0; k < tn; k++)
			if (!(hit && k == edge) && strcmp(tw[k], r->stem[at]) == 0)
				return none;
		/* nor a column's name ("memberships" and membership_amount) */
		for (size_t c = 0; c < s->tables[t].n_columns; c++) {
			const struct schema_column *col = &s->tables[t].columns[c];
			int cn = col->reference || col->primary_key ? 0 : bi_name_words(col->name, cw, BI_NAME_WORDS);
			for (int k = 0; k < cn; k++)
				if (strcmp(cw[k], r->stem[at]) == 0 && !(last && hit && k == 0))
					return none;
		}
		if (hit && m.table >= 0)
			return none;
		if (hit && bi_table_read(r, t))
			m = (struct bi_mention){.start = (int)at, .table = (int)t, .len = 1};
	}
	return m;
}

/* Nothing else named at `at`: the one column of the tables read whose two-word name ends with the word
   ("officers" for police_officers), when no other name has that word; not a key, nor a word that may be a
   verb's form or a superlative ("played", "tallest"), a count or a unit. */
static struct bi_mention head_word_names(const struct schema *s, const struct bi_words *r, size_t at)
{
	char cw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	struct bi_mention m = {.start = (int)at, .table = -1};
	size_t len = strlen(r->stem[at]);
	static const char *const COUNTS_AND_UNITS[] = {"number", "count", "total", "amount", "million", "billion",
						       "thousand", "percent", NULL};
	if (stopword_is(r->stem[at], len, STOPWORD_RETRIEVAL) || len < 4 || strcmp(r->stem[at] + len - 3, "est") == 0 ||
	    strcmp(r->stem[at] + len - 2, "ed") == 0 || strcmp(r->stem[at] + len - 3, "ing") == 0)
		return m;
	for (const char *const *w = COUNTS_AND_UNITS; *w; w++)
		if (strcmp(r->stem[at], *w) == 0)
			return m;
	for (size_t t = 0; t < s->n_tables; t++) {
		if (!bi_table_read(r, t))
			continue;
		for (size_t c = 0; c < s->tables[t].n_columns; c++) {
			const struct schema_column *col = &s->tables[t].columns[c];
			int cn = bi_name_words(col->name, cw, BI_NAME_WORDS);
			for (int k = 0; k < cn; k++) {
				if (strcmp(cw[k], r->stem[at]) != 0)
					continue;
				if (k != cn - 1 || cn != 2 || col->reference || col->primary_key || m.n_cands > 0)
					return (struct bi_mention){.start = (int)at, .table = -1};
				m.len = 1;
				bi_add_candidate(&m, (int)t, (int)c);
			}
		}
	}
	return m;
}

/* "X of (the) Y" at `at` naming a column Y_X of the tables read ("the names of the chairs": chair_name); len 0
   when none. */
static struct bi_mention inverted_name(const struct schema *s, const struct bi_words *r, size_t at)
{
	struct bi_mention m = {.start = (int)at, .table = -1};
	size_t y = at + 2;
	if (y < r->ws.n && strcmp(r->ws.w[at + 1], "of") == 0 && strcmp(r->ws.w[y], "the") == 0)
		y++;
	if (y >= r->ws.n || strcmp(r->ws.w[at + 1], "of") != 0 || r->is_number[y] || r->is_number[at])
		return m;
	/* not where Y names a table ("the name of the customer": the customers' name) */
	for (size_t t = 0; t < s->n_tables; t++)
		if (bi_name_has_word(s->tables[t].name, (const char *const[]){r->stem[y], NULL}))
			return m;
	char pair[2][QUESTION_MAX_WORD];
	strcpy(pair[0], r->stem[y]);
	strcpy(pair[1], r->stem[at]);
	bi_add_columns_named(s, r, 2, same_words, &(struct word_seq){pair, 2}, &m);
	if (m.n_cands > 0)
		m.len = (int)(y - at + 1);
	return m;
}

/*
 * A table named by its name's tail only (tail, of tail_len words) beside columns the same words name, whichever
 * table the schema lists first (SQLite and PostgreSQL list tables as created, MySQL by name): it gives way to a
 * column of another table that is not a key referring to it ("video games and their types": video_games.gtype,
 * not ref_club_types beside clubs), else it is named with them ("products in the category": the lookup table
 * Ref_Product_Categories and Products.product_category_code).  table_tail: m->table is that table.
 */
static void resolve_tail(const struct schema *s, struct bi_mention *m, int tail, int tail_len, bool ambiguous,
			 bool table_tail)
{
	if (tail < 0 || tail_len != m->len || m->n_cands == 0 || (m->table >= 0 && !table_tail))
		return;
	for (int k = 0; k < m->n_cands; k++) {
		const struct schema_column *col = &s->tables[m->cands[k].table].columns[m->cands[k].column];
		if (m->cands[k].table != tail && !(col->reference && col->reference->ref_index == tail)) {
			m->table = -1;
			m->table_ambiguous = false;
			return;
		}
	}
	m->table = tail;
	m->table_ambiguous = ambiguous;
}

/* The longest span from `at` naming a table or columns of the tables read (len 0: none). */
struct bi_mention bi_mention_from(const struct schema *s, const struct bi_words *r, size_t at)
{
	char tw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	struct bi_mention m = {.start = (int)at, .table = -1};
	bool table_tail = false; /* m.table was named by its name's tail */
	int tail = -1, tail_len = 0; /* the (first) table its name's tail names, the longest, and its length */
	bool tail_ambiguous = false;
	for (size_t t = 0; t < s->n_tables; t++) {
		if (!bi_table_read(r, t))
			continue;
		const struct schema_table *tb = &s->tables[t];
		int tn = bi_name_words(tb->name, tw, BI_NAME_WORDS);
		/* a lookup table's prefix (Ref_document_types): the table is the document types, and its
		   columns document_type_name */
		static const char *const LOOKUP[] = {"ref", "tbl", "lkp", "lu", NULL};
		for (const char *const *p = LOOKUP; tn >= 2 && *p; p++)
			if (strcmp(tw[0], *p) == 0) {
				memmove(tw[0], tw[1], sizeof(tw[0]) * (size_t)(tn - 1));
				tn--;
				break;
			}
		/* customer_orders named "orders" (customers is a table): its name without the other's, unless a
		   table is so named whole */
		bool whole = spells(r, at, tw, tn);
		int tl = whole ? tn
			 : tn >= 2 && spells(r, at, tw + 1, tn - 1) && named_by_table(s, t, tw[0]) ? tn - 1 : 0;
		if (tl > 0 && !whole && tl >= tail_len) {
			tail_ambiguous = tl == tail_len;
			tail = tl > tail_len ? (int)t : tail;
			tail_len = tl;
		}
		if (tl > 0 && (tl > m.len || (tl == m.len && (whole || table_tail)))) {
			if (tl > m.len || (whole && table_tail))
				m = (struct bi_mention){.start = (int)at, .table = -1, .len = tl};
			if (m.table >= 0 && m.table != (int)t)
				m.table_ambiguous = true;
			m.table = (int)t;
			table_tail = !whole;
		}
		bool generic = strcmp(r->stem[at], "name") == 0 || strcmp(r->stem[at], "id") == 0;
		int name_col = generic ? generic_column(tb, "name", false) : -1;
		if (generic && name_col < 0 && strcmp(r->stem[at], "name") == 0)
			name_col = title_column(tb);
		int id_col = generic ? generic_column(tb, "id", true) : -1;
		for (size_t c = 0; c < tb->n_columns; c++) {
			int n = column_spelled(r, at, tb, c, tw, tn, name_col, id_col);
			if (n == 0 || n < m.len)
				continue;
			if (n > m.len)
				m = (struct bi_mention){.start = (int)at, .table = -1, .len = n};
			if (bi_add_candidate(&m, (int)t, (int)c) < 0)
				m.too_many = true;
		}
	}
	resolve_tail(s, &m, tail, tail_len, tail_ambiguous, table_tail);
	/* "the names of the chairs": chair_name, the words the other way round */
	struct bi_mention inverted = inverted_name(s, r, at);
	if (inverted.len > m.len)
		return inverted;
	if (m.len == 0)
		m = edge_word_names(s, r, at, false);
	if (m.len == 0)
		m = edge_word_names(s, r, at, true);
	if (m.len == 0)
		return head_word_names(s, r, at);
	/* "phone number" for a column phone, "email address" for email: the compound's head says it */
	for (size_t k = 0; k < sizeof(COMPOUND) / sizeof(COMPOUND[0]) && m.len <= 2 && m.table < 0; k++)
		if (at + 1 < r->ws.n && strcmp(r->stem[at], COMPOUND[k][0]) == 0 &&
		    strcmp(r->stem[at + 1], COMPOUND[k][1]) == 0 && r->mention_at[at + 1] < 0) {
			char head[1][QUESTION_MAX_WORD];
			strcpy(head[0], r->stem[at]);
			if (m.len == 2) /* phone_number columns named already: phone columns too */
				bi_add_columns_named(s, r, 1, same_words, &(struct word_seq){head, 1}, &m);
			if (m.n_cands > 0)
				m.len = 2;
		}
	return m;
}

int bi_find_mentions(const struct schema *s, struct bi_words *r)
{
	for (size_t i = 0; i < r->ws.n; i++)
		r->mention_at[i] = -1;
	for (size_t at = 0; at < r->ws.n; at++) {
		if (r->is_number[at] || r->mention_at[at] >= 0)
			continue;
		struct bi_mention m = bi_mention_from(s, r, at);
		if (m.len == 0)
			continue;
		if (r->n_mentions == BI_MAX_MENTIONS)
			return -1;
		for (int k = 0; k < m.len; k++)
			r->mention_at[at + (size_t)k] = (int)r->n_mentions;
		r->mentions[r->n_mentions++] = m;
		at += (size_t)m.len - 1;
	}
	return find_coordinated(s, r);
}

/* A verb the question writes in lower case where the value is stored capitalised: "tracks that belong to
   the rock genre" and a track named 'Belong' (a word WordNet knows as a verb only, in its base form: a
   status 'Cancelled' is still read). */
static bool verb_not_value(const struct wordnet *wn, const char *matched, const char *value)
{
	const char *base[1];
	return wn && islower((unsigned char)matched[0]) && strcmp(matched, value) != 0 &&
	       wordnet_morphy(wn, matched, WORDNET_NOUN, base, 1) == 0 &&
	       wordnet_morphy(wn, matched, WORDNET_VERB, base, 1) > 0 && strcmp(base[0], matched) == 0;
}

int bi_find_values(const struct evidence_result *ev, const struct wordnet *wn, struct bi_words *r)
{
	if (!ev)
		return 0;
	struct question_words *mw = malloc(sizeof(*mw));
	if (!mw)
		return -T2S_ERR_NOMEM;
	for (size_t v = 0; v < ev->n_values && r->n_values < BI_MAX_VALUES; v++) {
		const struct evidence_value *e = &ev->values[v];
		if (!e->matched || !e->value ||
		    !fold_equal_but_case(e->matched, strlen(e->matched), e->value, strlen(e->value)))
			continue; /* only a value the question spells as stored (but for case) */
		question_words_split(e->matched, mw);
		if (mw->n == 0 || (mw->n == 1 && verb_not_value(wn, e->matched, e->value)))
			continue;
		for (size_t at = 0; at + mw->n <= r->ws.n; at++) {
			bool same = true, all_numbers = true, on_name = false, off_name = false;
			for (size_t k = 0; k < mw->n && same; k++) {
				same = strcmp(r->ws.w[at + k], mw->w[k]) == 0;
				all_numbers &= r->is_number[at + k];
				on_name |= r->mention_at[at + k] >= 0;
				off_name |= r->mention_at[at + k] < 0 && !r->is_number[at + k];
			}
			if (!same)
				continue;
			/* numbers are read as numbers; a schema name wins over a value, but for a value of several
			   words reaching past the names in it ("Team Orton" and a column team) */
			if (all_numbers || (on_name && !(mw->n >= 2 && off_name)))
				break;
			/* the column names inside give way; a table's name stays ("Progress Party" of party) */
			for (size_t k = 0; on_name && k < mw->n; k++) {
				int o = r->mention_at[at + k];
				const struct bi_mention *m = o >= 0 ? &r->mentions[o] : NULL;
				if (m && m->table < 0 && m->start >= (int)at && m->start + m->len <= (int)(at + mw->n))
					bi_drop_mention(r, o);
			}
			r->values[r->n_values++] = (struct bi_value){.start = (int)at, .len = (int)mw->n, .v = e};
			break;
		}
	}
	free(mw);
	return 0;
}

/* Does some column of the schema have exactly these name words (stems)? */
static bool schema_says(const struct schema *s, const char *const *stems, int n)
{
	char nw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	for (size_t t = 0; t < s->n_tables; t++)
		for (size_t c = 0; c < s->tables[t].n_columns; c++) {
			int cn = bi_name_words(s->tables[t].columns[c].name, nw, BI_NAME_WORDS);
			bool same = cn >= n;
			for (int k = 0; k < n && same; k++) /* the name's last words: customer_surname too */
				same = strcmp(nw[cn - n + k], stems[k]) == 0;
			if (same)
				return true;
		}
	return false;
}

/* Replace words [at, at + n) of r by the words of with (one space between), when they fit. */
static void replace_words(struct bi_words *r, size_t at, size_t n, const char *with)
{
	char words[4][QUESTION_MAX_WORD];
	size_t m = 0;
	for (const char *p = with; *p && m < 4;) {
		size_t len = strcspn(p, " ");
		memcpy(words[m], p, len);
		words[m++][len] = '\0';
		p += len + (p[len] == ' ');
	}
	if (r->ws.n - n + m > QUESTION_MAX_WORDS)
		return;
	size_t tail = r->ws.n - at - n;
	memmove(r->ws.w[at + m], r->ws.w[at + n], tail * sizeof(r->ws.w[0]));
	memmove(r->stem[at + m], r->stem[at + n], tail * sizeof(r->stem[0]));
	memmove(&r->is_number[at + m], &r->is_number[at + n], tail * sizeof(r->is_number[0]));
	memmove(&r->number[at + m], &r->number[at + n], tail * sizeof(r->number[0]));
	for (size_t k = 0; k < m; k++) {
		strcpy(r->ws.w[at + k], words[k]);
		bi_stem(words[k], r->stem[at + k]);
		r->is_number[at + k] = false;
	}
	r->ws.n = r->ws.n - n + m;
}

void bi_person_names(const struct schema *s, struct bi_words *r)
{
	/* a person's name said another way, the schema saying none of it so */
	static const struct {
		const char *said, *stems[2], *as;
	} SAID[] = {
		{"full name", {"full", "name"}, "first and last name"},
		{"full names", {"full", "name"}, "first and last names"},
		{"forename", {"forename", NULL}, "first name"},
		{"forenames", {"forename", NULL}, "first names"},
		{"given name", {"given", "name"}, "first name"},
		{"given names", {"given", "name"}, "first names"},
		{"family name", {"family", "name"}, "last name"},
		{"family names", {"family", "name"}, "last names"},
		{"surname", {"surname", NULL}, "last name"},
		{"surnames", {"surname", NULL}, "last names"},
	};
	for (size_t i = 0; i < r->ws.n; i++)
		for (size_t k = 0; k < sizeof(SAID) / sizeof(SAID[0]); k++) {
			size_t n = question_phrase_words(SAID[k].said);
			if (!question_words_phrase_at(&r->ws, i, SAID[k].said) || (i + n < r->ws.n &&
			    strcmp(r->ws.w[i + n], "name") == 0) || schema_says(s, SAID[k].stems, SAID[k].stems[1] ? 2 : 1))
				continue;
			replace_words(r, i, n, SAID[k].as);
			break;
		}
}

/* Numbers written as words ("more than two ships"): their value is their index + 1. */
static const char *const NUMBER_WORDS[] = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
					   "ten", "eleven", "twelve", NULL};

void bi_split(const char *question, struct bi_words *r)
{
	question_words_split(question, &r->ws);
	for (size_t i = 0; i < r->ws.n; i++) {
		/* 'Spices', 'Deleted Scenes': the single quotes around a value are not part of its words (the
		   offsets at / end still cover them) */
		char *word = r->ws.w[i];
		size_t len = strlen(word);
		if (len > 1 && word[0] == '\'')
			memmove(word, word + 1, len--);
		if (len > 1 && word[len - 1] == '\'')
			word[--len] = '\0';
		bi_stem(r->ws.w[i], r->stem[i]);
		char buf[QUESTION_MAX_WORD];
		size_t n = 0;
		for (const char *p = r->ws.w[i]; *p; p++)
			if (*p != ',')
				buf[n++] = *p;
		const char *w = r->ws.w[i];
		r->is_number[i] = isdigit((unsigned char)w[*w == '-']) && number_parse(buf, n, &r->number[i]);
		for (size_t k = 0; !r->is_number[i] && NUMBER_WORDS[k]; k++)
			if (strcmp(w, NUMBER_WORDS[k]) == 0) {
				r->is_number[i] = true;
				r->number[i] = (double)(k + 1);
			}
	}
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
