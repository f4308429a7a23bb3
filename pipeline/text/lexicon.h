/*
 * lexicon.h - lexical expansion for the lexical retriever: what a word may
 * also be called.
 *
 * Users do not phrase questions the way schemas do ("vocalist" for singer,
 * "family name" for last_name, "youngest" for age, "lname" in the schema).
 * Three sources, each documented where it is defined:
 *
 *   - WordNet (pipeline/text/wordnet.h), when loaded: base forms, synonyms,
 *     derivationally related forms, attributes and pertainyms ("near"
 *     words), and one-step noun hypernyms ("far" words), over the first
 *     max_senses senses of each word and of each two-word collocation;
 *   - a small table of identifier abbreviations (lname, dept, qty, num, yr,
 *     ...), spelled out on the schema side as if the schema had said them;
 *   - a small table of question idioms that are not word relations and
 *     that WordNet therefore cannot give ("when" asks for a date, "where"
 *     for a location, "populous" for a population).
 *
 * Nothing here names a table, column or value of a particular database.
 * The tables are static and the WordNet tables read-only: every function
 * is thread-safe.
 */
#ifndef T2S_TEXT_LEXICON_H
#define T2S_TEXT_LEXICON_H

#include "common/contract.h"
#include "pipeline/text/wordnet.h"

#include <stddef.h>

/* The words an identifier abbreviation stands for ("dept" -> "department"), or NULL. */
const char *lexicon_abbreviation(const char *word, size_t len);

/*
 * name split into lower-case words (the lexical embedder's identifier
 * splitting), each abbreviation spelled out: "Lname" -> "last name",
 * "dept_ID" -> "department id".  malloc'd (the caller frees), NULL when out
 * of memory.
 */
char *lexicon_spell_out(const char *name);

enum lexicon_side {
	LEXICON_QUESTION, /* a question: stop words skipped, idioms applied */
	LEXICON_SCHEMA,   /* a table or column name: abbreviations spelled out first */
};

struct lexicon_expansion {
	char *near; /* space/comma-separated words; "" when none */
	char *far;  /* the same for one-step hypernyms */
};

/*
 * Expand text.  wn may be NULL (then only the idioms of a question are
 * added).  Words of text itself are never repeated in the expansion.
 * On success ret's strings are malloc'd; release with
 * lexicon_expansion_release.  Returns 0 or -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int lexicon_expand(const struct wordnet *wn, const char *text, enum lexicon_side side, unsigned max_senses,
		   struct lexicon_expansion *ret);

/*
 * Call fn once per word of question that has near words (idioms, base
 * forms, synonyms, derived forms, attributes; no hypernyms), with the word
 * and its near words separated by spaces.  Both strings are valid only
 * during the call.  Out of memory ends the walk silently.
 */
void lexicon_each(const struct wordnet *wn, const char *question, unsigned max_senses,
		  void (*fn)(const char *word, const char *adds, void *ctx), void *ctx);

/* Free e's strings (e may be NULL) and zero it. */
void lexicon_expansion_release(struct lexicon_expansion *e);

#endif
