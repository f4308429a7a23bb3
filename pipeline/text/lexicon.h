/*
 * lexicon.h - question expansion for the lexical retriever.
 *
 * A lexical embedder cannot know that "youngest" asks for an age or "how
 * much does it weigh" for a weight.  A small, general English lexicon maps
 * such words (comparatives, superlatives, common paraphrases of attributes)
 * to the attribute names schemas use, and the expansion is appended to the
 * question before it is embedded.  The lexicon knows English, not any
 * schema: no entry names a table, column or value of a particular database.
 */
#ifndef T2S_LINK_LEXICON_H
#define T2S_LINK_LEXICON_H

/* The question followed by the expansions of its words (malloc'd; NULL when out of memory). */
char *lexicon_expand_question(const char *question);

/*
 * Call fn once per lexicon entry the question triggers, with the question
 * word that triggered it and the entry's attribute words (space-separated).
 */
void lexicon_each(const char *question, void (*fn)(const char *word, const char *adds, void *ctx), void *ctx);

#endif
