/*
 * link_mentions.c - what the question names: its words as hash keys, the
 * table and column names they mention (in full or in part, acronyms,
 * truncations, compounds) and the stand-ins of its orphan words.
 */
#include "pipeline/link/link_internal.h"

#include "common/limits.h"
#include "common/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * Truncated identifier words: a column word of TRUNCATION_MIN..MAX letters
 * matches a question word it begins, when 3+ letters are cut ("lat" for
 * "latitude", "long" for "longitude", "pop" for "population").
 */
#define TRUNCATION_MIN 3
#define TRUNCATION_MAX 4

void link_set_add(uint64_t *set, size_t mask, uint64_t h)
{
	if (!h)
		return;
	size_t i = (size_t)h & mask;
	while (set[i] && set[i] != h)
		i = (i + 1) & mask;
	set[i] = h;
}

bool link_set_has(const uint64_t *set, size_t mask, uint64_t h)
{
	if (!h)
		return false;
	for (size_t i = (size_t)h & mask; set[i]; i = (i + 1) & mask)
		if (set[i] == h)
			return true;
	return false;
}

int link_question_keys_make(char **words, struct question_keys *ret)
{
	size_t n = 0;
	while (words[n])
		n++;
	size_t slots = 16;
	while (slots < 8 * n)
		slots *= 2;
	ret->v = calloc(n ? n : 1, sizeof(*ret->v));
	ret->all = calloc(4 * slots, sizeof(uint64_t));
	if (!ret->v || !ret->all) {
		free(ret->v);
		free(ret->all);
		return -T2S_ERR_NOMEM;
	}
	ret->longer = ret->all + slots;
	ret->prefixes = ret->all + 2 * slots;
	ret->truncated = ret->all + 3 * slots;
	ret->mask = slots - 1;
	for (size_t i = 0; i < n; i++) {
		struct link_word_key *k = &ret->v[i];
		link_word_key_make(words[i], k);
		link_set_add(ret->all, ret->mask, k->h);
		if (k->len >= 4) {
			link_set_add(ret->longer, ret->mask, k->h);
			link_set_add(ret->prefixes, ret->mask, k->h1);
			link_set_add(ret->prefixes, ret->mask, k->h2);
		}
		/* Truncations: "lat" for "latitude", "long" for "longitude" (the rest is 3+ letters). */
		for (size_t cut = TRUNCATION_MIN; cut <= TRUNCATION_MAX && cut + 3 <= k->len; cut++)
			link_set_add(ret->truncated, ret->mask, link_word_hash(words[i], cut));
		/* Compounds: two consecutive words written as one ("last name" -> lastname). */
		char pair[128];
		if (i + 1 < n && snprintf(pair, sizeof(pair), "%s%s", words[i], words[i + 1]) < (int)sizeof(pair))
			link_set_add(ret->all, ret->mask, link_word_hash(pair, strlen(pair)));
	}
	ret->n = n;
	return 0;
}

void link_question_keys_release(struct question_keys *q)
{
	free(q->v);
	free(q->all);
}

/*
 * A column word matches when it is a question word, or one of them minus a
 * short ending (question "teacher", column "teach"), or one of them plus a
 * short ending (both of 4+ letters; the prefix hashes say so in O(1)).
 */
static bool key_matches(const struct question_keys *q, const struct link_word_key *w)
{
	if (link_set_has(q->all, q->mask, w->h))
		return true;
	if (w->len >= TRUNCATION_MIN && w->len <= TRUNCATION_MAX && link_set_has(q->truncated, q->mask, w->h))
		return true;
	if (w->len < 4)
		return false;
	return link_set_has(q->prefixes, q->mask, w->h) || link_set_has(q->longer, q->mask, w->h1) ||
	       link_set_has(q->longer, q->mask, w->h2);
}

/* True when one of words (3+ letters) is among the question's words, up to a short ending. */
static bool words_mentioned(char **words, const struct question_keys *q)
{
	for (char **tw = words; tw && *tw; tw++) {
		struct link_word_key k;
		if (strlen(*tw) < 3)
			continue;
		link_word_key_make(*tw, &k);
		if (key_matches(q, &k))
			return true;
	}
	return false;
}

/* True when a word of table t's name is among the question's words (see words_mentioned). */
bool link_name_mentioned(const struct run *r, int t, const struct question_keys *q)
{
	return words_mentioned(r->idx->table_words[t], q);
}

/* True when word (2-5 letters) spells the initials of consecutive question words ("mpg"). */
static bool acronym_of(const char *word, char **question_words)
{
	size_t n = strlen(word);
	if (n < 2 || n > 5)
		return false;
	for (char **start = question_words; *start; start++) {
		size_t k = 0;
		while (k < n && start[k] && start[k][0] == word[k])
			k++;
		if (k == n)
			return true;
	}
	return false;
}

/* Last parts of names that say what kind of value, not what about: "role_code", "pet_age"... */
static const char *const generic_parts[] = {"code", "name", "type", "date", "year", "time", "number", "num",
					    "count", "value", "desc", NULL};

static bool generic_part(const char *w)
{
	for (const char *const *g = generic_parts; *g; g++)
		if (strcmp(*g, w) == 0)
			return true;
	return false;
}

/* True when word is a word of table t's name. */
static bool own_table_word(const struct run *r, int t, const char *word)
{
	for (char **tw = r->idx->table_words[t]; tw && *tw; tw++)
		if (strcmp(*tw, word) == 0)
			return true;
	return false;
}

/*
 * MENTION_FULL when the words (3+ letters) of the column's name are in the
 * question (up to a short ending; all but one for names of three words or
 * more), or the name is an acronym of question words; MENTION_PART when
 * only the informative word of a two-word name is ("surface area" by
 * "area", "role_code" by "role"), or the first word of a longer name
 * ("budget_in_billions" by "budget").  A partial mention marks the column
 * but never requires its table.
 */
/* What a column's name alone says (its table aside), as bits: the same for every column of that name. */
enum { NAME_DONE = 1, NAME_ACRONYM = 2, NAME_FULL = 4, NAME_HIT0 = 8, NAME_HIT1 = 16 };

static unsigned name_mention(const struct run *r, size_t col, const struct question_keys *q, char **all_words)
{
	char **cw = r->idx->column_words[col];
	if (cw && cw[0] && !cw[1] && acronym_of(cw[0], all_words))
		return NAME_DONE | NAME_ACRONYM;
	size_t id = r->idx->column_name_id[col];
	size_t first = r->idx->column_word_first[id], end = r->idx->column_word_first[id + 1];
	int words = (int)(end - first), seen = 0;
	unsigned bits = NAME_DONE;
	for (size_t k = first; k < end; k++) {
		bool m = key_matches(q, &r->idx->column_word_keys[k]);
		seen += m;
		if (m && k - first < 2)
			bits |= k == first ? NAME_HIT0 : NAME_HIT1;
	}
	if (seen > 0 && (seen == words || (words >= 3 && seen >= words - 1)))
		bits |= NAME_FULL;
	return bits;
}

/*
 * link_column_mentioned with memo: NULL, or one byte per distinct column
 * name (zeroed for each question keys q), so that the name's part is
 * computed once per name.
 */
static enum mention column_mentioned(const struct run *r, size_t col, const struct question_keys *q, char **all_words,
				     uint8_t *memo)
{
	size_t id = r->idx->column_name_id[col];
	unsigned bits;
	if (memo && memo[id])
		bits = memo[id];
	else
		bits = name_mention(r, col, q, all_words);
	if (memo)
		memo[id] = (uint8_t)bits;
	if (bits & (NAME_ACRONYM | NAME_FULL))
		return MENTION_FULL;
	char **cw = r->idx->column_words[col];
	int words = (int)(r->idx->column_word_first[id + 1] - r->idx->column_word_first[id]);
	bool hit[2] = {(bits & NAME_HIT0) != 0, (bits & NAME_HIT1) != 0};
	/* A partial mention needs a word that says something of the column: in table products,
	   "product_price" is a price, and the question's "products" names the table, not it. */
	int t = r->idx->columns[col].table;
	for (int k = 0; k < 2 && cw && cw[0]; k++)
		if (hit[k] && own_table_word(r, t, cw[k]))
			hit[k] = false;
	if (words == 2 && cw && cw[0] && cw[1] && !cw[2]) {
		bool head = hit[1] && !generic_part(cw[1]) && strlen(cw[1]) >= 4;
		bool modifier = hit[0] && generic_part(cw[1]) && strlen(cw[0]) >= 4;
		if (head || modifier)
			return MENTION_PART;
	}
	/* The first word of a longer name is its subject; the rest often says the unit
	   ("budget_in_billions", "height_feet", "price_in_dollar"). */
	if (words >= 2 && cw && cw[0] && cw[1] && hit[0] && strlen(cw[0]) >= 4 && !generic_part(cw[0]))
		return MENTION_PART;
	return MENTION_NONE;
}

enum mention link_column_mentioned(const struct run *r, size_t col, const struct question_keys *q,
				   char **all_words)
{
	return column_mentioned(r, col, q, all_words, NULL);
}

/* Order of flat columns by name, case-insensitively (ctx: the run). */
static int cmp_column_name(const void *a, const void *b, void *ctx)
{
	const struct run *r = ctx;
	const struct link_column_ref *x = &r->idx->columns[*(const size_t *)a], *y = &r->idx->columns[*(const size_t *)b];
	return strcasecmp(r->s->tables[x->table].columns[x->column].name, r->s->tables[y->table].columns[y->column].name);
}

int link_select_mentioned_columns(struct run *r, const struct question_keys *q, char **all_words)
{
	size_t n_cols = r->idx->n_columns, n = 0, cap = 0;
	size_t *mentioned = NULL;
	uint8_t *memo = calloc(r->idx->n_names ? r->idx->n_names : 1, 1);
	if (!memo)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < n_cols; i++) {
		enum mention m = column_mentioned(r, i, q, all_words, memo);
		if (m == MENTION_NONE)
			continue;
		if (r->col_mention[i] < m)
			r->col_mention[i] = (unsigned char)m;
		if (m == MENTION_PART) { /* marks the column only */
			r->col_reason[i] |= LINK_BY_RETRIEVAL;
			continue;
		}
		if (n == cap) {
			size_t *v = realloc(mentioned, (cap = cap ? 2 * cap : 16) * sizeof(*v));
			if (!v) {
				free(mentioned);
				free(memo);
				return -T2S_ERR_NOMEM;
			}
			mentioned = v;
		}
		mentioned[n++] = i;
		r->col_reason[i] |= LINK_BY_RETRIEVAL;
	}
	/* A mentioned name held by at most two tables requires them; a commoner one ("name") does not.
	   Sorted by name, the holders of a name are one run (n log n: an expanded question may
	   mention thousands of columns of a wide schema). */
	if (n > 1)
		qsort_r(mentioned, n, sizeof(*mentioned), cmp_column_name, r);
	for (size_t a = 0; a < n;) {
		size_t end = a + 1;
		while (end < n && cmp_column_name(&mentioned[a], &mentioned[end], r) == 0)
			end++;
		for (size_t k = a; end - a <= 2 && k < end; k++) {
			const struct link_column_ref *c = &r->idx->columns[mentioned[k]];
			/* A foreign key named after the table it references ("student_id") names that table, not its own. */
			if (!r->s->tables[c->table].columns[c->column].reference)
				r->table_reason[c->table] |= LINK_BY_RETRIEVAL;
		}
		a = end;
	}
	free(mentioned);
	free(memo);
	return 0;
}

/* "question near words" (malloc'd; NULL when out of memory). */
char *link_question_with(const char *question, const char *near)
{
	struct strbuf sb;
	strbuf_init(&sb, T2S_QUESTION_MAX_BYTES + (64u << 10));
	if (strbuf_adds(&sb, question) < 0 || strbuf_adds(&sb, " ") < 0 || strbuf_adds(&sb, near) < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

/* True when the last word of table t's name, its head, is among the keys ("region" of affected_region). */
static bool head_mentioned(const struct run *r, int t, const struct question_keys *q)
{
	char **tw = r->idx->table_words[t];
	size_t n = 0;
	while (tw && tw[n])
		n++;
	char *head[2] = {n ? tw[n - 1] : NULL, NULL};
	return n && words_mentioned(head, q);
}

/*
 * The stand-ins of the question's orphan words (r->related, see
 * related_words.h) name the tables whose head they are ("goods" names
 * products, "districts" region, not product_characteristics), and mark the
 * columns the question names with their help ("goods name": product_name).
 * A marked column does not require its table: a stand-in is weaker evidence
 * than a word the user typed.
 */
int link_select_by_stand_ins(struct run *r, const char *question, char **all_words, int *named)
{
	if (!r->related || !*r->related)
		return 0;
	char **swords = NULL, **cwords = NULL;
	struct question_keys sk = {0}, ck = {0};
	char *with = link_question_with(question, r->related);
	int rc = !with || embed_lexical_words(r->related, 0, &swords, NULL) < 0 || link_question_keys_make(swords, &sk) < 0 ||
			 embed_lexical_words(with, 0, &cwords, NULL) < 0 || link_question_keys_make(cwords, &ck) < 0
		 ? -T2S_ERR_NOMEM
		 : 0;
	for (size_t t = 0; rc == 0 && t < r->s->n_tables && *named < r->p->max_tables; t++)
		if (head_mentioned(r, (int)t, &sk)) {
			*named += !r->table_reason[t];
			r->table_reason[t] |= LINK_BY_RETRIEVAL;
		}
	for (size_t i = 0; rc == 0 && i < r->idx->n_columns; i++)
		if (!r->col_reason[i] && link_column_mentioned(r, i, &ck, all_words) != MENTION_NONE) {
			r->col_reason[i] |= LINK_BY_RETRIEVAL;
			r->col_mention[i] = MENTION_STAND_IN;
		}
	link_question_keys_release(&sk);
	link_question_keys_release(&ck);
	free(swords);
	free(cwords);
	free(with);
	return rc;
}

/*
 * True when a word of words is a question word (of any length: "id"), or
 * begins with one of 4+ letters (identifiers glue words: "user" in useracct).
 */
static bool words_touched(char **words, const struct question_keys *q)
{
	for (char **w = words; w && *w; w++) {
		size_t n = strlen(*w);
		if (link_set_has(q->all, q->mask, link_word_hash(*w, n)))
			return true;
		for (size_t len = 4; len < n; len++)
			if (link_set_has(q->longer, q->mask, link_word_hash(*w, len)))
				return true;
	}
	return false;
}

int link_count_touched(const struct run *r, const struct question_keys *q)
{
	int n = 0;
	for (size_t t = 0; t < r->s->n_tables; t++)
		n += words_touched(r->idx->table_words[t], q);
	for (size_t i = 0; i < r->idx->n_columns; i++)
		n += words_touched(r->idx->column_words[i], q);
	return n;
}
