/*
 * lexicon.c - see lexicon.h.
 */
#include "pipeline/text/lexicon.h"

#include "common/strbuf.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

struct lexicon_entry {
	const char *words; /* space-separated lower-case forms that trigger it */
	const char *adds;  /* attribute words appended to the question */
};

static const struct lexicon_entry lexicon[] = {
	{"young younger youngest old older oldest elderly aged", "age"},
	{"born birth birthday", "birth date born"},
	{"heavy heavier heaviest light lighter lightest weigh weighs weighed", "weight"},
	{"tall taller tallest short shorter shortest", "height"},
	{"long longer longest lengthy", "length"},
	{"gender male female males females men women", "sex gender"},
	{"expensive cheap cheaper cheapest costly pricey", "price cost"},
	{"earn earns earned earning earnings income paid", "salary earnings income"},
	{"large larger largest big bigger biggest small smaller smallest", "size area capacity"},
	{"populous populated inhabitants residents people", "population"},
	{"spend spends spent spending paid pay pays money", "cost amount price"},
	{"independent independence", "indep independence"},
	{"predominantly predominant mostly majority proportion", "percentage"},
	{"recent recently latest earliest newest", "date time"},
	{"fast faster fastest slow slower slowest", "speed"},
	{"nation nations nationality", "country nationality"},
	{"where located location", "location city address country"},
	{"when", "date year time"},
	{"firstname", "first name fname"},
	{"fullname", "first name last name full name"},
	{"lastname surname", "last name lname"},
	{"phone telephone", "phone number"},
	{"mail email", "email address"},
	{"rank ranked ranking", "rank ranking"},
	{"score scored scores", "score points"},
	{"attend attended attendance", "attendance"},
	{"capacity seats", "capacity"},
	{"abbreviation abbreviated", "abbreviation code"},
	{"percentage percent", "percentage"},
	{"official", "official"},
	{"hire hired hiring", "hire date"},
	{"speak speaks spoken speaking", "language"},
	{"live lives lived living reside resides", "address city"},
	{"open opened opening", "open year date"},
};

static bool word_in(const char *word, size_t len, const char *list)
{
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

/* "first name" and "last name" are two words in questions; join them for the lexicon. */
static bool pair_is(const char *a, size_t alen, const char *b, size_t blen, const char *x, const char *y)
{
	return alen == strlen(x) && blen == strlen(y) && strncmp(a, x, alen) == 0 && strncmp(b, y, blen) == 0;
}

void lexicon_each(const char *question, void (*fn)(const char *word, const char *adds, void *ctx), void *ctx)
{
	bool used[sizeof(lexicon) / sizeof(lexicon[0])] = {false};
	char word[64], prev[64] = "";
	size_t prev_len = 0;
	const char *p = question;
	while (*p) {
		while (*p && !isalpha((unsigned char)*p))
			p++;
		size_t n = 0;
		while (isalpha((unsigned char)p[n]))
			n++;
		if (n == 0)
			break;
		size_t len = n < sizeof(word) - 1 ? n : sizeof(word) - 1;
		for (size_t i = 0; i < len; i++)
			word[i] = (char)tolower((unsigned char)p[i]);
		word[len] = '\0';
		const char *joined = NULL;
		if (pair_is(prev, prev_len, word, len, "first", "name"))
			joined = "firstname";
		else if (pair_is(prev, prev_len, word, len, "last", "name"))
			joined = "lastname";
		else if (pair_is(prev, prev_len, word, len, "first", "names"))
			joined = "firstname";
		else if (pair_is(prev, prev_len, word, len, "last", "names"))
			joined = "lastname";
		else if (pair_is(prev, prev_len, word, len, "full", "name") || pair_is(prev, prev_len, word, len, "full", "names"))
			joined = "fullname";
		for (size_t e = 0; e < sizeof(lexicon) / sizeof(lexicon[0]); e++) {
			if (used[e])
				continue;
			if (word_in(word, len, lexicon[e].words) || (joined && word_in(joined, strlen(joined), lexicon[e].words))) {
				used[e] = true;
				fn(joined && !word_in(word, len, lexicon[e].words) ? joined : word, lexicon[e].adds, ctx);
			}
		}
		memcpy(prev, word, len + 1);
		prev_len = len;
		p += n;
	}
}

static void append_adds(const char *word, const char *adds, void *ctx)
{
	(void)word;
	strbuf_adds(ctx, " ");
	strbuf_adds(ctx, adds);
}

char *lexicon_expand_question(const char *question)
{
	struct strbuf sb;
	strbuf_init(&sb, 64u << 10);
	if (strbuf_adds(&sb, question) < 0)
		return NULL;
	lexicon_each(question, append_adds, &sb);
	return strbuf_detach(&sb, NULL);
}
