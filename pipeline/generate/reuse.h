/*
 * reuse.h - a stored example answering a question that means the same up to
 * its values: the example's SQL with its literals replaced by the new
 * question's values (no model, no database: pure text work).
 *
 *   1. The example SQL's literals are read by a small lexer ('...' strings,
 *      "..." strings SQLite reads as strings, numbers), each string with the
 *      schema column it is compared with (semantics_literals).
 *   2. A literal written in the example's question (case-insensitive, at word
 *      bounds; a LIKE pattern without its %) is a slot: the question's own
 *      value goes there.  A literal the question does not say (LIMIT 1, a
 *      flag 'T') stays as it is.
 *   3. Each string slot takes the new question's value of the same column
 *      (given by the caller: the evidence stage's values, spelled as stored):
 *      the literal itself when the new question says it, else the values of
 *      that column, as many as the slots and in the same order; numbers pair
 *      with the new question's numbers in order, every number of the example
 *      question with one of the new question (a number that is no slot must
 *      be equal).  Anything else refuses (no reuse): a slot without a value,
 *      two readings, a literal compared with two columns.
 *   4. The similarity of the two questions with their slot values masked
 *      (reuse_similarity) decides whether they mean the same.
 *
 * Nothing here names a table, column or value of a particular database.
 * Every function is thread-safe (the WordNet tables are read-only).
 */
#ifndef T2S_GENERATE_REUSE_H
#define T2S_GENERATE_REUSE_H

#include "common/contract.h"
#include "pipeline/db/schema.h"
#include "pipeline/text/wordnet.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A value the new question names, as the evidence stage found it (all borrowed). */
struct reuse_value {
	const char *matched; /* the question's words it matched */
	const char *value;   /* as stored */
	int table, column;   /* of the schema */
};

/* The outcome of reuse_example. */
struct reuse_result {
	char *sql;           /* the example's SQL with the new values; NULL when refused */
	double similarity;   /* of the masked questions (0 when refused before it was measured) */
	char reason[160];    /* why it was refused; "" when sql is set */
	json_t *substitutions; /* [{literal, value, column}] (new reference; NULL when refused) */
};

/*
 * Adapt example (question, sql) of schema s to question, whose values are
 * values[0..n_values).  wn may be NULL (words then match only when equal).
 * Returns 0 with *ret filled (ret->sql NULL and ret->reason set when the
 * example does not fit), or -T2S_ERR_NOMEM.  Release with
 * reuse_result_release.
 */
T2S_MUST_CHECK
int reuse_example(const struct schema *s, const struct wordnet *wn, const char *question,
		  const struct reuse_value *values, size_t n_values, const char *example_question,
		  const char *example_sql, struct reuse_result *ret);
void reuse_result_release(struct reuse_result *r);

/*
 * The similarity in [0, 1] of two questions whose values are already masked:
 * words (stemmed, stop words kept at half weight) of one side found on the
 * other, equal or WordNet near words, over all words of both; a word that
 * turns a query around (negation, extremes, order, comparison: the table in
 * reuse_similarity.c) weighs 3 when the other side lacks it, and so does
 * every content word when strict (the example's SQL holds a value its
 * question does not spell: "female" for 'F'); a number left in one side and
 * not the other gives 0.
 */
double reuse_similarity(const struct wordnet *wn, const char *a, const char *b, bool strict);

#endif
