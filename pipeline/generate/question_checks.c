/*
 * question_checks.c - the result's shape against the statement and the
 * question (see question_checks.h).  The English the checks understand is
 * the table CUES below and nothing else.
 */
#include "pipeline/generate/question_checks.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Most words of the question read (a longer question is read up to here). */
#define QUESTION_MAX_WORDS 128
#define QUESTION_MAX_WORD 32

enum cue_kind { CUE_COUNT, CUE_EACH };

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
	{"find the number of", CUE_COUNT, true},
	{"return the number of", CUE_COUNT, true},
	{"give the number of", CUE_COUNT, true},
	{"give me the number of", CUE_COUNT, true},
	{"show the number of", CUE_COUNT, true},
	{"tell me the number of", CUE_COUNT, true},
	{"each", CUE_EACH, false},
	{"per", CUE_EACH, false},
	{"for every", CUE_EACH, false},
};

struct words {
	char w[QUESTION_MAX_WORDS][QUESTION_MAX_WORD];
	size_t n;
};

/* The question's words: runs of letters, digits and apostrophes, lower-cased (longer words cut). */
static void split_words(const char *q, struct words *ret)
{
	ret->n = 0;
	while (*q && ret->n < QUESTION_MAX_WORDS) {
		while (*q && !isalnum((unsigned char)*q) && *q != '\'')
			q++;
		size_t len = 0;
		while (*q && (isalnum((unsigned char)*q) || *q == '\'')) {
			if (len + 1 < QUESTION_MAX_WORD)
				ret->w[ret->n][len++] = (char)tolower((unsigned char)*q);
			q++;
		}
		if (len) {
			ret->w[ret->n][len] = '\0';
			ret->n++;
		}
	}
}

/* Do the words from index at on spell phrase? */
static bool phrase_at(const struct words *ws, size_t at, const char *phrase)
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

void question_read(const char *question, struct question_reading *ret)
{
	*ret = (struct question_reading){0};
	if (!question)
		return;
	struct words *ws = malloc(sizeof(*ws));
	if (!ws)
		return; /* nothing read: no question check fires */
	split_words(question, ws);
	for (size_t c = 0; c < sizeof(CUES) / sizeof(CUES[0]); c++) {
		bool found = false;
		for (size_t at = 0; at < (CUES[c].at_start ? 1 : ws->n) && !found; at++)
			found = phrase_at(ws, at, CUES[c].phrase);
		if (found && CUES[c].kind == CUE_COUNT)
			ret->asks_count = true;
		if (found && CUES[c].kind == CUE_EACH)
			ret->asks_each = true;
	}
	free(ws);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Rows of rows equal to an earlier one (as compact JSON); -T2S_ERR_NOMEM. */
static long repeated_rows(json_t *rows)
{
	size_t n = json_array_size(rows);
	if (n < 2)
		return 0;
	char **text = calloc(n, sizeof(*text));
	long repeated = 0;
	if (!text)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < n && repeated >= 0; i++)
		if (!(text[i] = json_dumps(json_array_get(rows, i), JSON_COMPACT | JSON_ENCODE_ANY)))
			repeated = -T2S_ERR_NOMEM;
	if (repeated == 0) {
		qsort(text, n, sizeof(*text), cmp_str);
		for (size_t i = 1; i < n; i++)
			repeated += strcmp(text[i - 1], text[i]) == 0;
	}
	for (size_t i = 0; i < n; i++)
		free(text[i]);
	free(text);
	return repeated;
}

static int rows_not_repeated(struct validation *v)
{
	if (!v->top_joined || !v->top_multiplied || v->top_distinct || v->top_grouped)
		return 0;
	long repeated = repeated_rows(v->result.rows);
	if (repeated < 0)
		return (int)repeated;
	if (repeated > 0)
		return validation_add(v, 3, "rows_not_repeated", false, true,
				      "%ld of the %ld rows repeat an earlier row: the join repeats each row once per "
				      "matching row of the joined table; use SELECT DISTINCT if distinct things are "
				      "asked for", repeated, v->result.row_count);
	return validation_add(v, 3, "rows_not_repeated", true, true, "no row of the join repeats");
}

int question_checks(const struct validate_context *cx, struct validation *v)
{
	if (!v->executed || !v->top_known)
		return 0;
	int rc = rows_not_repeated(v);
	if (rc < 0 || !cx->question)
		return rc;
	struct question_reading q;
	question_read(cx->question, &q);
	long rows = v->result.row_count;
	if (q.asks_count && !q.asks_each && !v->top_grouped &&
	    (rc = validation_add(v, 3, "count_answered_by_one_row", rows <= 1, true, rows <= 1 ? "%ld row" :
				 "the question asks how many, but the result has %ld rows: answer with one count "
				 "(count(*), or sum() of a quantity), or GROUP BY if a count per group is meant",
				 rows)) < 0)
		return rc;
	if (q.asks_each && !v->top_grouped)
		rc = validation_add(v, 3, "each_answered_per_group", rows != 1, true, rows != 1 ? "%ld rows" :
				    "the question asks for something for each thing, but the result is one row "
				    "without GROUP BY: group the rows (GROUP BY) to give one row per thing",
				    rows);
	return rc;
}
