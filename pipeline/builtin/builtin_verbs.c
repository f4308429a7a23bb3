/*
 * builtin_verbs.c - verbs, the helpers of the relations, negation and
 * conditions (see builtin.h): a verb form that may state the relation a
 * foreign key holds ("made", "teaches"; not "contain", "sort", nor a noun
 * "plays"), the words that may stand between a verb and what it relates to,
 * the table a name or value at a word belongs to, and a verb before a value
 * naming the value's column ("located in Tokyo": location; "owned": owner
 * through WordNet's derived forms; "belong to").
 */
#include "pipeline/builtin/builtin_reader.h"

#include <string.h>

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

bool bi_not_relation(const char *base)
{
	return bi_in_list(base, NOT_RELATIONS);
}

bool bi_verb_preposition(const char *w)
{
	return bi_in_list(w, PREPOSITIONS);
}

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
		if (bi_not_relation(base[k]))
			return false;
	return true;
}

/* The table of the name or value starting at word j, or -1. */
int bi_table_at(const struct reader *rd, size_t j)
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

static const char *const VALUE_PREPS[] = {"in", "at", "from", "by", "on", "for", "as", "to", NULL};

bool bi_value_preposition(const char *w)
{
	return bi_in_list(w, VALUE_PREPS);
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
