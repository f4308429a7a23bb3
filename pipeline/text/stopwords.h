/*
 * stopwords.h - the one stop-word list of the service.
 *
 * Each word carries the uses that drop it, because the uses differ:
 *
 *   STOPWORD_RETRIEVAL   plain English function words ("the", "of", "could"):
 *                        the lexical embedder leaves them out of its vectors.
 *   STOPWORD_VALUE_SPAN  words that never start or end a span naming a
 *                        database value: function words plus the words of
 *                        asking ("list", "show", "count", "names", "distinct",
 *                        "id"): question_spans skips them.
 *
 * A word may carry both.  Lookups are case-insensitive (ASCII) and take a
 * length, so callers pass words in place.  The table is static and
 * read-only: thread-safe.
 */
#ifndef T2S_TEXT_STOPWORDS_H
#define T2S_TEXT_STOPWORDS_H

#include <stdbool.h>
#include <stddef.h>

enum stopword_use {
	STOPWORD_RETRIEVAL = 1 << 0,
	STOPWORD_VALUE_SPAN = 1 << 1,
};

/* True when w[0..len) is on the list for any of the uses in the mask uses. */
bool stopword_is(const char *w, size_t len, unsigned uses);

#endif
