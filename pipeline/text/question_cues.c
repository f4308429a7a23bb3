/*
 * question_cues.c - the question's words and the one table of English cue
 * phrases (see question_cues.h).
 */
#include "pipeline/text/question_cues.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

enum cue_kind { CUE_COUNT, CUE_EACH, CUE_AVERAGE, CUE_HIGHEST, CUE_LOWEST, CUE_SORT_DESC, CUE_SORT_ASC };

/* Cue phrases, lower-case words separated by one space; at_start: only as the question's first words. */
static const struct cue {
	const char *phrase;
	enum cue_kind kind;
	bool at_start;
} CUES[] = {
	{"how many", CUE_COUNT, true},
	{"what is the number of", CUE_COUNT, true},
	{"what is the total number of", CUE_COUNT, true},
	{"what are the number of", CUE_COUNT, true},
	{"count the number of", CUE_COUNT, true},
	{"count the total number of", CUE_COUNT, true},
	{"find the total number of", CUE_COUNT, true},
	{"return the total number of", CUE_COUNT, true},
	{"show the total number of", CUE_COUNT, true},
	{"give the total number of", CUE_COUNT, true},
	{"what is the count of", CUE_COUNT, true},
	{"find the number of", CUE_COUNT, true},
	{"return the number of", CUE_COUNT, true},
	{"give the number of", CUE_COUNT, true},
	{"give me the number of", CUE_COUNT, true},
	{"show the number of", CUE_COUNT, true},
	{"tell me the number of", CUE_COUNT, true},
	{"each", CUE_EACH, false},
	{"per", CUE_EACH, false},
	{"for every", CUE_EACH, false},
	{"average", CUE_AVERAGE, false},
	{"averaged", CUE_AVERAGE, false},
	{"mean", CUE_AVERAGE, false},
	/* the ends of a scale; "least" and "most" not after "at" ("at least 2" is a bound) */
	{"highest", CUE_HIGHEST, false},
	{"largest", CUE_HIGHEST, false},
	{"biggest", CUE_HIGHEST, false},
	{"greatest", CUE_HIGHEST, false},
	{"maximum", CUE_HIGHEST, false},
	{"most", CUE_HIGHEST, false},
	{"lowest", CUE_LOWEST, false},
	{"smallest", CUE_LOWEST, false},
	{"fewest", CUE_LOWEST, false},
	{"minimum", CUE_LOWEST, false},
	{"least", CUE_LOWEST, false},
	{"rarest", CUE_LOWEST, false},
	/* the order asked for the whole list */
	{"descending", CUE_SORT_DESC, false},
	{"decreasing", CUE_SORT_DESC, false},
	{"high to low", CUE_SORT_DESC, false},
	{"highest to lowest", CUE_SORT_DESC, false},
	{"largest to smallest", CUE_SORT_DESC, false},
	{"most to least", CUE_SORT_DESC, false},
	{"reverse alphabetical", CUE_SORT_DESC, false},
	{"reverse lexicographical", CUE_SORT_DESC, false},
	{"ascending", CUE_SORT_ASC, false},
	{"increasing", CUE_SORT_ASC, false},
	{"low to high", CUE_SORT_ASC, false},
	{"lowest to highest", CUE_SORT_ASC, false},
	{"smallest to largest", CUE_SORT_ASC, false},
	{"least to most", CUE_SORT_ASC, false},
};

/* Is q[0] inside a word?  A decimal point or thousands comma between digits stays in the number. */
static bool in_word(const char *start, const char *q)
{
	if (isalnum((unsigned char)*q) || *q == '\'')
		return true;
	return (*q == '.' || *q == ',') && q > start && isdigit((unsigned char)q[-1]) && isdigit((unsigned char)q[1]);
}

/* A minus sign starting a number ("-50"), not a hyphen inside a word. */
static bool negative(const char *start, const char *q)
{
	return *q == '-' && isdigit((unsigned char)q[1]) && (q == start || isspace((unsigned char)q[-1]) || q[-1] == '(');
}

void question_words_split(const char *q, struct question_words *ret)
{
	ret->n = 0;
	ret->truncated = false;
	const char *start = q;
	for (;;) {
		while (*q && !isalnum((unsigned char)*q) && *q != '\'' && !negative(start, q))
			q++;
		if (!*q)
			return;
		if (ret->n == QUESTION_MAX_WORDS) {
			ret->truncated = true;
			return;
		}
		size_t len = 0;
		ret->at[ret->n] = (size_t)(q - start);
		if (*q == '-')
			ret->w[ret->n][len++] = *q++;
		for (; *q && in_word(start, q); q++)
			if (len + 1 < QUESTION_MAX_WORD)
				ret->w[ret->n][len++] = (char)tolower((unsigned char)*q);
		ret->w[ret->n][len] = '\0';
		ret->end[ret->n] = (size_t)(q - start);
		ret->n++;
	}
}

bool question_words_phrase_at(const struct question_words *ws, size_t at, const char *phrase)
{
	for (size_t i = at; *phrase; i++) {
		if (i >= ws->n)
			return false;
		size_t len = strcspn(phrase, " ");
		if (strlen(ws->w[i]) != len || strncmp(ws->w[i], phrase, len) != 0)
			return false;
		phrase += len;
		if (*phrase == ' ')
			phrase++;
	}
	return true;
}

size_t question_phrase_words(const char *phrase)
{
	size_t n = 1;
	for (; *phrase; phrase++)
		n += *phrase == ' ';
	return n;
}

void question_read_words(const struct question_words *ws, struct question_reading *ret)
{
	*ret = (struct question_reading){0};
	bool *const flag[] = {[CUE_COUNT] = &ret->asks_count,     [CUE_EACH] = &ret->asks_each,
			      [CUE_AVERAGE] = &ret->asks_average, [CUE_HIGHEST] = &ret->asks_highest,
			      [CUE_LOWEST] = &ret->asks_lowest,   [CUE_SORT_DESC] = &ret->asks_sort_desc,
			      [CUE_SORT_ASC] = &ret->asks_sort_asc};
	for (size_t c = 0; c < sizeof(CUES) / sizeof(CUES[0]); c++) {
		bool found = false;
		bool scale = CUES[c].kind == CUE_HIGHEST || CUES[c].kind == CUE_LOWEST;
		for (size_t at = 0; at < (CUES[c].at_start ? 1 : ws->n) && !found; at++)
			found = question_words_phrase_at(ws, at, CUES[c].phrase) &&
				!(scale && at > 0 && strcmp(ws->w[at - 1], "at") == 0);
		if (!found)
			continue;
		*flag[CUES[c].kind] = true;
		size_t words = question_phrase_words(CUES[c].phrase);
		if (CUES[c].kind == CUE_COUNT && words > ret->count_cue_words)
			ret->count_cue_words = words;
	}
}

void question_read(const char *question, struct question_reading *ret)
{
	*ret = (struct question_reading){0};
	if (!question)
		return;
	struct question_words *ws = malloc(sizeof(*ws));
	if (!ws)
		return; /* nothing read: no question check fires */
	question_words_split(question, ws);
	question_read_words(ws, ret);
	free(ws);
}
