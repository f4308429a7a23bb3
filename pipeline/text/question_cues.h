/*
 * question_cues.h - the English cue phrases every stage reads a question
 * by: its words (lower-cased runs of letters, digits and apostrophes; a '.'
 * or ',' between digits stays inside a number, a '-' before digits starts one) and
 * the one table of cue
 * phrases ("how many", "what is the number of", ... at the start; "each",
 * "per", "for every", "average", the ends of a scale: "highest", "least"...
 * anywhere).  Validation (generate/question_checks.c) and
 * the built-in generator (builtin/) read the same table.  Pure functions,
 * thread-safe.
 */
#ifndef T2S_TEXT_QUESTION_CUES_H
#define T2S_TEXT_QUESTION_CUES_H

#include <stdbool.h>
#include <stddef.h>

/* Most words of the question read (a longer question is read up to here). */
#define QUESTION_MAX_WORDS 128
#define QUESTION_MAX_WORD 32

struct question_words {
	char w[QUESTION_MAX_WORDS][QUESTION_MAX_WORD];
	size_t at[QUESTION_MAX_WORDS], end[QUESTION_MAX_WORDS]; /* each word's bytes in the question: [at, end) */
	size_t n;
	bool truncated; /* the question had more words than QUESTION_MAX_WORDS */
};

/* The question's words (longer words cut to QUESTION_MAX_WORD - 1 bytes). */
void question_words_split(const char *q, struct question_words *ret);

/* Do the words from index at on spell phrase (lower-case words separated by one space)? */
bool question_words_phrase_at(const struct question_words *ws, size_t at, const char *phrase);

/* How many words a phrase of lower-case words separated by one space has. */
size_t question_phrase_words(const char *phrase);

/* What the question asks for, as far as its cue phrases tell. */
struct question_reading {
	bool asks_count;  /* opens with "how many", "what is the number of", "count the number of", ... */
	bool asks_each;   /* "each", "per", "for every" */
	size_t count_cue_words; /* words of the count cue at the start; 0: none */
	bool asks_average; /* "average", "averaged", "mean" */
	bool asks_highest; /* "highest", "largest", "most", "maximum", ... ("at most" is a bound) */
	bool asks_lowest;  /* "lowest", "smallest", "least", "fewest", "minimum", "rarest" ("at least": a bound) */
	bool asks_sort_desc; /* "descending", "from high to low", "reverse alphabetical", ... */
	bool asks_sort_asc;  /* "ascending", "from low to high", ... */
};

/* Read question (NULL reads as nothing asked). */
void question_read(const char *question, struct question_reading *ret);

/* The same reading of words already split. */
void question_read_words(const struct question_words *ws, struct question_reading *ret);

#endif
