/*
 * value_words.c - stored values a question word names without spelling
 * them (see value_index_word_values in value_index.h): the nouns WordNet
 * says an adjective pertains to or derives from ("French" -> France), and a
 * single-letter code from an adjective's initial ("female" -> F).
 */
#include "pipeline/values/value_index_internal.h"

#include "pipeline/text/embed_lexical.h"
#include "pipeline/text/wordnet.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FORM_SENSES 2   /* senses of the question word read for its pertainyms and derived forms */
#define FORMS_MAX 8     /* noun forms looked up per word */
#define ATTR_MAX 8      /* attributes (and their synonyms) per word */
#define FORM_SCORE 0.9  /* a value named through a pertainym: below any spelled match */
#define LETTER_SCORE 0.85
#define WORD_LEN 64

struct lemmas {
	char v[FORMS_MAX][WORD_LEN];
	size_t n;
	const char *self;
};

static void collect(const char *lemma, unsigned relation, void *ctx)
{
	(void)relation;
	struct lemmas *l = ctx;
	size_t len = strlen(lemma);
	if (l->n == FORMS_MAX || len >= WORD_LEN || strcasecmp(lemma, l->self) == 0)
		return;
	char w[WORD_LEN];
	for (size_t i = 0; i <= len; i++)
		w[i] = lemma[i] == '_' ? ' ' : lemma[i];
	for (size_t i = 0; i < l->n; i++)
		if (strcasecmp(l->v[i], w) == 0)
			return;
	memcpy(l->v[l->n++], w, len + 1);
}

static size_t push(struct value_match *ret, size_t n, size_t max, const struct value_match *m, double score,
		   const char *how)
{
	for (size_t i = 0; i < n; i++)
		if (ret[i].table == m->table && ret[i].column == m->column && ret[i].value == m->value)
			return n;
	if (n < max) {
		ret[n] = *m;
		ret[n].score = score;
		ret[n].how = how;
		n++;
	}
	return n;
}

/* True when a word of the column's name is one of attrs (the attributes an adjective values, with their synonyms). */
static bool column_names_attribute(const struct value_index *vi, int table, int column, const struct lemmas *attrs)
{
	char **words = NULL;
	if (embed_lexical_words(vi->schema->tables[table].columns[column].name, EMBED_WORDS_NO_STEM, &words, NULL) < 0)
		return false;
	bool hit = false;
	for (char **w = words; *w && !hit; w++)
		for (size_t i = 0; i < attrs->n && !hit; i++)
			hit = strcasecmp(*w, attrs->v[i]) == 0;
	free(words);
	return hit;
}

/*
 * The single-letter code of word: its initial, in a column whose stored
 * values are all single letters and that the word's attribute names ("female"
 * values sex; "gender" is a synonym of sex), when that column holds exactly
 * one value with that initial (either case).
 */
static size_t letter_values(struct value_index *vi, const struct wordnet *wn, const char *word, struct value_match *ret,
			    size_t n, size_t max)
{
	const char *bases[2];
	if (!isalpha((unsigned char)word[0]) || wordnet_morphy(wn, word, WORDNET_ADJ, bases, 2) == 0)
		return n;
	struct lemmas attrs = {.self = word};
	wordnet_related(wn, word, WORDNET_ATTRIBUTE, FORM_SENSES, collect, &attrs);
	for (size_t i = 0, n_attr = attrs.n; i < n_attr; i++) {
		char a[WORD_LEN];
		memcpy(a, attrs.v[i], sizeof(a));
		wordnet_related(wn, a, WORDNET_SYNONYM, FORM_SENSES, collect, &attrs);
	}
	if (!attrs.n)
		return n;
	char initial[2] = {word[0], '\0'};
	struct value_match m[8];
	size_t k = 0;
	struct t2s_error ignored;
	if (value_index_lookup(vi, initial, 0.98, sizeof(m) / sizeof(m[0]), m, &k, &ignored) < 0)
		return n;
	for (size_t i = 0; i < k; i++) {
		const struct value_column_info *ci = value_index_column(vi, m[i].table, m[i].column);
		size_t same = 0;
		for (size_t j = 0; j < k; j++)
			same += m[j].table == m[i].table && m[j].column == m[i].column;
		if (ci && ci->single_letters && same == 1 && column_names_attribute(vi, m[i].table, m[i].column, &attrs))
			n = push(ret, n, max, &m[i], LETTER_SCORE * m[i].score, "initial");
	}
	return n;
}

size_t value_index_word_values(struct value_index *vi, const struct wordnet *wn, const char *word,
			       struct value_match *ret, size_t max)
{
	if (!vi || !wn || !word || strlen(word) < 3 || strlen(word) >= WORD_LEN)
		return 0;
	const char *bases[2];
	if (wordnet_morphy(wn, word, WORDNET_ADJ, bases, 2) == 0)
		return 0;
	struct lemmas forms = {.self = word};
	wordnet_related(wn, word, WORDNET_PERTAINYM | WORDNET_DERIVED, FORM_SENSES, collect, &forms);
	size_t n = 0;
	struct value_match m[4];
	struct t2s_error ignored;
	for (size_t f = 0; f < forms.n; f++) {
		size_t k = 0;
		if (value_index_lookup(vi, forms.v[f], 0.96, sizeof(m) / sizeof(m[0]), m, &k, &ignored) < 0)
			continue;
		for (size_t i = 0; i < k; i++)
			n = push(ret, n, max, &m[i], FORM_SCORE * m[i].score, "pertainym");
	}
	return letter_values(vi, wn, word, ret, n, max);
}
