/*
 * lexicon.c - see lexicon.h.
 */
#include "pipeline/text/lexicon.h"

#include "common/strbuf.h"
#include "pipeline/text/embed_lexical.h"
#include "pipeline/text/stopwords.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPANSION_MAX (16u << 10) /* bytes of each expansion text; later words are dropped */

/*
 * Identifier abbreviations common in schemas, with what they stand for.
 * Only abbreviations that are not English words themselves (so "no" and
 * "pos" are not here: a question's "no" is not a number).
 */
struct abbreviation {
	const char *abbr, *words;
};

/* Sorted by abbr (byte order) for bsearch. */
static const struct abbreviation abbreviations[] = {
	{"acct", "account"},    {"addr", "address"},    {"amt", "amount"},       {"avg", "average"},
	{"cnt", "count"},       {"cust", "customer"},   {"dept", "department"},  {"desc", "description"},
	{"dob", "date of birth"}, {"dt", "date"},       {"emp", "employee"},     {"fname", "first name"},
	{"lname", "last name"}, {"loc", "location"},    {"mgr", "manager"},      {"mname", "middle name"},
	{"num", "number"},      {"pct", "percent"},     {"prod", "product"},     {"qty", "quantity"},
	{"tel", "telephone"},   {"yr", "year"},
};

static int cmp_abbr(const void *key, const void *elem)
{
	return strcmp(key, ((const struct abbreviation *)elem)->abbr);
}

const char *lexicon_abbreviation(const char *word, size_t len)
{
	char buf[16];
	if (len == 0 || len >= sizeof(buf))
		return NULL;
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(word[i] >= 'A' && word[i] <= 'Z' ? word[i] - 'A' + 'a' : word[i]);
	buf[len] = '\0';
	const struct abbreviation *a =
		bsearch(buf, abbreviations, sizeof(abbreviations) / sizeof(abbreviations[0]), sizeof(abbreviations[0]),
			cmp_abbr);
	return a ? a->words : NULL;
}

char *lexicon_spell_out(const char *name)
{
	char **words = NULL;
	if (embed_lexical_words(name, EMBED_WORDS_KEEP_STOP | EMBED_WORDS_NO_STEM, &words, NULL) < 0)
		return NULL;
	struct strbuf sb;
	strbuf_init(&sb, 1u << 16);
	int rc = 0;
	for (char **w = words; *w && rc == 0; w++) {
		const char *full = lexicon_abbreviation(*w, strlen(*w));
		if (w != words)
			rc = strbuf_adds(&sb, " ");
		if (rc == 0)
			rc = strbuf_adds(&sb, full ? full : *w);
	}
	free(words);
	if (rc < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

/*
 * Question idioms: words whose schema counterpart is a convention, not a
 * word relation, so WordNet does not give it.  Each entry was kept only
 * where WordNet's expansion of the trigger words lacks the added words.
 */
struct idiom {
	const char *words; /* space-separated lower-case forms that trigger it */
	const char *adds;  /* words added to the expansion */
};

static const struct idiom idioms[] = {
	{"when", "date year time"},
	{"where located location", "location city address country"},
	{"born birthday", "birth date"},
	{"populous populated inhabitants residents", "population"},
	{"expensive cheap cheaper cheapest costly pricey", "price cost"},
	{"spend spends spent spending paid pay pays", "cost amount price"},
	{"earn earns earned earning paid", "salary income"},
	{"large larger largest big bigger biggest small smaller smallest", "size area capacity"},
	{"predominantly predominant mostly majority", "percentage"},
	{"recent recently latest earliest newest oldest", "date time"},
	{"speak speaks spoken speaking", "language"},
	{"live lives lived living reside resides", "address city"},
	{"open opened opening", "year date"},
	{"hire hired hiring", "date"},
	{"full", "first last"}, /* a person's full name: first and last name */
};

static bool word_in(const char *word, size_t len, const char *list)
{
	if (len == 0 || !strstr(list, word)) /* most words are in no list: one scan says so */
		return false;
	const char *p = list;
	while (*p) {
		size_t n = strcspn(p, " ");
		if (n == len && strncmp(p, word, len) == 0)
			return true;
		p += n;
		while (*p == ' ')
			p++;
	}
	return false;
}

/* Expansion being built: texts and the words to leave out (the source's own). */
struct expand_ctx {
	struct strbuf near, far;
	char **own; /* NULL-terminated, the source text's words */
	int rc;
};

/* True when phrase is already in buf as a whole entry (entries end with ", "). */
static bool has_entry(const struct strbuf *sb, const char *phrase)
{
	size_t n = strlen(phrase);
	for (const char *p = sb->buf; (p = strstr(p, phrase)); p += n)
		if ((p == sb->buf || p[-1] == ' ') && strncmp(p + n, ", ", 2) == 0)
			return true;
	return false;
}

static void add_entry(const char *lemma, unsigned relation, void *arg)
{
	struct expand_ctx *x = arg;
	for (char **w = x->own; *w; w++)
		if (strcmp(*w, lemma) == 0)
			return;
	if (strchr(lemma, '-') || strchr(lemma, '.') || strchr(lemma, '\''))
		return; /* "e-mail", "st.": spelling variants the embedder splits into noise */
	struct strbuf *sb = relation == WORDNET_HYPERNYM ? &x->far : &x->near;
	if (has_entry(sb, lemma) || (sb == &x->far && has_entry(&x->near, lemma)))
		return;
	if (sb->len + strlen(lemma) + 2 > sb->max)
		return;
	if (x->rc == 0 && (strbuf_adds(sb, lemma) < 0 || strbuf_adds(sb, ", ") < 0))
		x->rc = -T2S_ERR_NOMEM;
}

static bool expandable(const char *w, enum lexicon_side side)
{
	size_t n = strlen(w);
	if (n < 3 || (w[0] >= '0' && w[0] <= '9'))
		return false;
	return side == LEXICON_SCHEMA || !stopword_is(w, n, STOPWORD_RETRIEVAL | STOPWORD_VALUE_SPAN);
}

static void add_idioms(struct expand_ctx *x, char **words)
{
	bool used[sizeof(idioms) / sizeof(idioms[0])] = {false};
	for (char **w = words; *w; w++)
		for (size_t e = 0; e < sizeof(idioms) / sizeof(idioms[0]); e++)
			if (!used[e] && word_in(*w, strlen(*w), idioms[e].words)) {
				used[e] = true;
				char **adds = NULL;
				if (embed_lexical_words(idioms[e].adds, EMBED_WORDS_KEEP_STOP | EMBED_WORDS_NO_STEM, &adds,
							NULL) < 0) {
					x->rc = -T2S_ERR_NOMEM;
					return;
				}
				for (char **a = adds; *a; a++)
					add_entry(*a, WORDNET_SYNONYM, x);
				free(adds);
			}
}

int lexicon_expand(const struct wordnet *wn, const char *text, enum lexicon_side side, unsigned max_senses,
		   struct lexicon_expansion *ret)
{
	char *spelled = side == LEXICON_SCHEMA ? lexicon_spell_out(text) : NULL;
	if (side == LEXICON_SCHEMA && !spelled)
		return -T2S_ERR_NOMEM;
	struct expand_ctx x = {.rc = 0};
	strbuf_init(&x.near, EXPANSION_MAX);
	strbuf_init(&x.far, EXPANSION_MAX);
	if (embed_lexical_words(spelled ? spelled : text, EMBED_WORDS_KEEP_STOP | EMBED_WORDS_NO_STEM, &x.own, NULL) < 0)
		x.rc = -T2S_ERR_NOMEM;
	if (x.rc == 0 && side == LEXICON_QUESTION)
		add_idioms(&x, x.own);
	unsigned rel_near = WORDNET_BASE | WORDNET_SYNONYM | WORDNET_DERIVED | WORDNET_ATTRIBUTE | WORDNET_PERTAINYM;
	for (char **w = x.own; wn && x.rc == 0 && *w; w++) {
		/* a two-word collocation ("family name") first, then the word alone */
		if (w[1] && expandable(w[1], side) && strlen(*w) >= 2) {
			char pair[128];
			int n = snprintf(pair, sizeof(pair), "%s %s", *w, w[1]);
			if (n > 0 && (size_t)n < sizeof(pair) && wordnet_is_lemma(wn, pair))
				wordnet_related(wn, pair, rel_near | WORDNET_HYPERNYM, max_senses, add_entry, &x);
		}
		if (expandable(*w, side))
			wordnet_related(wn, *w, rel_near | WORDNET_HYPERNYM, max_senses, add_entry, &x);
	}
	free(x.own);
	free(spelled);
	ret->near = x.rc == 0 ? strbuf_detach(&x.near, NULL) : NULL;
	ret->far = x.rc == 0 ? strbuf_detach(&x.far, NULL) : NULL;
	strbuf_release(&x.near);
	strbuf_release(&x.far);
	if (!ret->near || !ret->far) {
		lexicon_expansion_release(ret);
		return -T2S_ERR_NOMEM;
	}
	return 0;
}

void lexicon_each(const struct wordnet *wn, const char *question, unsigned max_senses,
		  void (*fn)(const char *word, const char *adds, void *ctx), void *ctx)
{
	char **words = NULL;
	if (embed_lexical_words(question, EMBED_WORDS_KEEP_STOP | EMBED_WORDS_NO_STEM, &words, NULL) < 0)
		return;
	unsigned rel = WORDNET_BASE | WORDNET_SYNONYM | WORDNET_DERIVED | WORDNET_ATTRIBUTE | WORDNET_PERTAINYM;
	for (char **w = words; *w; w++) {
		if (!expandable(*w, LEXICON_QUESTION))
			continue;
		char *one[2] = {*w, NULL};
		struct expand_ctx x = {.own = one}; /* the other question words may be its synonyms ("age", "youngest") */
		strbuf_init(&x.near, EXPANSION_MAX);
		strbuf_init(&x.far, EXPANSION_MAX);
		add_idioms(&x, one);
		if (wn)
			wordnet_related(wn, *w, rel, max_senses, add_entry, &x);
		for (size_t i = 0; i < x.near.len; i++)
			if (x.near.buf[i] == ',')
				x.near.buf[i] = ' ';
		if (x.rc == 0 && x.near.len)
			fn(*w, x.near.buf, ctx);
		strbuf_release(&x.near);
		strbuf_release(&x.far);
	}
	free(words);
}

void lexicon_expansion_release(struct lexicon_expansion *e)
{
	if (!e)
		return;
	free(e->near);
	free(e->far);
	e->near = e->far = NULL;
}
