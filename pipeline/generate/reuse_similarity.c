/*
 * reuse_similarity.c - whether two questions with their values masked say
 * the same (reuse.h's reuse_similarity): the embedder's word normalisation
 * (embed_lexical.h, stop words kept: "not", "each", "most" change a
 * query), and the lexicon's near words (lexicon.h: WordNet synonyms, base
 * and derived forms) so that "clients" meets "customers".
 */
#include "pipeline/generate/reuse.h"

#include "pipeline/text/embed_lexical.h"
#include "pipeline/text/lexicon.h"
#include "pipeline/text/stopwords.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* WordNet senses of a word whose near words count (as evidence's synonyms read them). */
#define REUSE_NEAR_SENSES 3u
/* Weight of a stop word or a word of asking against a content word's 1. */
#define REUSE_STOP_WEIGHT 0.25

/* Words that ask without saying what (a paraphrase swaps them freely); stemmed as embed_lexical_words does. */
static const char *const asking_words[] = {"show", "list", "find", "give", "return", "display", "tell", "what", "which",
					   NULL};

/* One question's words and, per word with near words, those words (all normalised). */
struct side {
	char **words;  /* embed_lexical_words block */
	size_t n;
	char ***near;  /* near[i]: embed_lexical_words block of words[i]'s near words, or NULL */
	bool nomem;
};

static bool in_words(char *const *words, const char *w)
{
	for (size_t i = 0; words && words[i]; i++)
		if (strcmp(words[i], w) == 0)
			return true;
	return false;
}

/* lexicon_each's callback: the near words of one word go to the side's first equal normalised word. */
static void add_near(const char *word, const char *adds, void *ctx)
{
	struct side *s = ctx;
	char **w = NULL, **n = NULL;
	if (embed_lexical_words(word, EMBED_WORDS_KEEP_STOP, &w, NULL) < 0 ||
	    embed_lexical_words(adds, EMBED_WORDS_KEEP_STOP, &n, NULL) < 0) {
		s->nomem = true;
		free(w);
		return;
	}
	bool kept = false;
	for (size_t i = 0; w[0] && !kept && i < s->n; i++)
		if (!s->near[i] && strcmp(s->words[i], w[0]) == 0) {
			s->near[i] = n; /* the first equal word holds them; later equal words meet them there */
			kept = true;
		}
	free(w);
	if (!kept)
		free(n);
}

static int side_init(struct side *s, const struct wordnet *wn, const char *text)
{
	*s = (struct side){0};
	if (embed_lexical_words(text, EMBED_WORDS_KEEP_STOP, &s->words, &s->n) < 0)
		return -1;
	s->near = calloc(s->n ? s->n : 1, sizeof(char **));
	if (!s->near)
		return -1;
	if (wn)
		lexicon_each(wn, text, REUSE_NEAR_SENSES, add_near, s);
	return s->nomem ? -1 : 0;
}

static void side_release(struct side *s)
{
	for (size_t i = 0; s->near && i < s->n; i++)
		free(s->near[i]);
	free(s->near);
	free(s->words);
}

static bool is_number(const char *w)
{
	for (const char *p = w; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return *w != 0;
}

/*
 * Words that turn a query around (negation, extremes, comparison, order,
 * set operations): one of them left unmatched weighs REUSE_TURN_WEIGHT, so
 * "highest" for "lowest" is never outweighed by a long question.
 */
#define REUSE_TURN_WEIGHT 3.0
static const char *const turning_words[] = {
	"not", "no", "never", "without", "except", "but", "neither", "nor", "none", "most", "least", "more", "less",
	"fewer", "greater", "larger", "smaller", "higher", "lower", "highest", "lowest", "largest", "smallest",
	"biggest", "maximum", "minimum", "max", "min", "ascend", "descend", "increase", "decrease", "first", "last",
	"oldest", "youngest", "older", "younger", "earliest", "latest", "before", "after", "above", "below", "over",
	"under", "and", "or", "both", "either", "each", "every", "per", "average", "total", "sum", "count", "distinct",
	"top", "bottom", "between", "same", "different", "other", "only", "all", "any", NULL};

/* A word's weight: 1 for content, REUSE_STOP_WEIGHT for stop and asking words, -1 for turning words. */
static double weight(const char *w)
{
	for (size_t i = 0; turning_words[i]; i++)
		if (strcmp(turning_words[i], w) == 0)
			return -1;
	for (size_t i = 0; asking_words[i]; i++)
		if (strcmp(asking_words[i], w) == 0)
			return REUSE_STOP_WEIGHT;
	return stopword_is(w, strlen(w), STOPWORD_RETRIEVAL) ? REUSE_STOP_WEIGHT : 1.0;
}

/* Weight of a's words found in b (equal, or near words either way); -1 when a number of a is not in b. */
static double found_weight(const struct side *a, const struct side *b, bool strict, double *ret_total)
{
	double found = 0, total = 0;
	for (size_t i = 0; i < a->n; i++) {
		const char *w = a->words[i];
		double wt = weight(w);
		bool turning = wt < 0 || (strict && wt == 1.0);
		if (turning)
			wt = wt < 0 ? REUSE_STOP_WEIGHT : wt; /* its weight when found, REUSE_TURN_WEIGHT when not */
		bool hit = in_words(b->words, w);
		for (size_t k = 0; !hit && a->near[i] && a->near[i][k]; k++)
			hit = in_words(b->words, a->near[i][k]);
		for (size_t k = 0; !hit && k < b->n; k++)
			hit = b->near[k] && in_words(b->near[k], w);
		if (!hit && is_number(w))
			return -1;
		found += hit ? wt : 0;
		total += hit || !turning ? wt : REUSE_TURN_WEIGHT;
	}
	*ret_total = total;
	return found;
}

double reuse_similarity(const struct wordnet *wn, const char *a, const char *b, bool strict)
{
	struct side sa, sb;
	double score = 0;
	int rc = side_init(&sa, wn, a);
	if (rc == 0)
		rc = side_init(&sb, wn, b);
	else
		sb = (struct side){0};
	if (rc == 0) {
		double ta = 0, tb = 0;
		double fa = found_weight(&sa, &sb, strict, &ta), fb = found_weight(&sb, &sa, strict, &tb);
		if (fa >= 0 && fb >= 0 && ta + tb > 0)
			score = (fa + fb) / (ta + tb);
	}
	side_release(&sa);
	side_release(&sb);
	return score;
}
