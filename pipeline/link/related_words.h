/*
 * related_words.h - what a question word the schema never says may stand for.
 *
 * A user says "goods" where the schema says product, "districts" where it
 * says region, "category" where it says type.  Such a word is an orphan: no
 * word of any table or column name is the word, one of its base forms or one
 * of its WordNet near words (synonyms, derived forms), up to a short ending.
 * An orphan still means something in the schema, and WordNet's noun
 * hierarchy says how close each schema word comes to it:
 *
 *   tier 0  a synonym in some sense (of up to RELATED_SENSES senses each)
 *   tier 1  one hypernym step, either way ("district" is a region; a
 *           product is a kind of goods), or membership (a person is a member
 *           of people)
 *   tier 2  two steps either way, a shared hypernym ("town" and "city"
 *           are both municipalities; a type is a kind, a kind a category), or
 *           what a member is a kind of (a staff's members are staff members,
 *           a kind of employee)
 *
 * For each orphan the schema words of its closest tier stand in for it (at
 * most RELATED_MAX_HITS of them: a word related to many is too vague to
 * say which), the closest among table-name words and the closest among
 * column-name words apart (an orphan may name a thing or a property), and
 * linking reads them as if the question had said them (link.c).
 * Words written with a capital inside a sentence (not first, nor after a
 * full stop, question or exclamation mark) are names of values, not of
 * schema things, and are skipped.
 *
 * The index is built once per column index from its table and column words
 * and is read-only afterwards (thread-safe); WordNet must outlive it.
 */
#ifndef T2S_LINK_RELATED_WORDS_H
#define T2S_LINK_RELATED_WORDS_H

#include "common/contract.h"
#include "common/strbuf.h"
#include "pipeline/text/wordnet.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RELATED_SENSES 4    /* noun senses read of each word, both sides */
#define RELATED_MAX_HITS 16 /* an orphan standing for more schema words than this stands for none */

struct related_word; /* one distinct schema word and its WordNet neighbourhood */

struct related_words {
	struct related_word *v;
	size_t n;
	bool spelled; /* the words as spelled (related_words_build_spelled), not stemmed */
};

/*
 * Index the distinct words (3+ letters) of the NULL-terminated word arrays
 * tables[0..n_tables) and columns[0..n_columns) (the column index's
 * normalised name words).  wn may be NULL: an empty index.  On success *ret
 * is the caller's (release with related_words_release).  0 or
 * -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int related_words_build(const struct wordnet *wn, char ***tables, size_t n_tables, char ***columns, size_t n_columns,
			struct related_words *ret);

/*
 * The same index of words as spelled (lower case, not stemmed: WordNet knows "rating", where the stem
 * is "rate"), whose near words are compared unstemmed too; the built-in generator reads it.
 */
T2S_MUST_CHECK
int related_words_build_spelled(const struct wordnet *wn, char ***tables, size_t n_tables, char ***columns,
				size_t n_columns, struct related_words *ret);

void related_words_release(struct related_words *rw);

/*
 * Append to out, each followed by a space, the schema words that stand in
 * for the orphan words of question (see above).  Appends nothing without
 * WordNet.  0, or -T2S_ERR_NOMEM (out may hold part of the words).
 */
T2S_MUST_CHECK
int related_words_of_question(const struct related_words *rw, const struct wordnet *wn, const char *question,
			      struct strbuf *out);

/*
 * Append the stand-ins of one word (any case), each followed by a space:
 * the closest table-name words to tables, the closest column-name words to
 * columns (one WordNet walk serves both).  With orphans_only, appends
 * nothing for a word that is not an orphan; without, also gives them for a
 * word a near word of which the schema says (for a reader that found no
 * schema name in the word itself: "terminals" where end_date says "end", a
 * near word of one sense of terminal).  Appends nothing for a stop word or
 * a word shorter than 3 letters.  0 or -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int related_words_stand_ins(const struct related_words *rw, const struct wordnet *wn, const char *word,
			    bool orphans_only, struct strbuf *tables, struct strbuf *columns);

#endif
