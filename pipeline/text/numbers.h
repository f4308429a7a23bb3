/*
 * numbers.h - the one number grammar: how a number is written in a question
 * or printed by a database.
 *
 * Accepted: an optional sign, digits with optional thousands commas in
 * groups of three ("80,000", "1,234,567.5"), an optional fraction and
 * exponent ("-3.5", ".5", "1e6"); and numbers in words ("twenty-one").  Rejected: anything else in the text
 * ("1.2.3", "1,0", "12a", ""), and values that are not finite.  Pure
 * functions, thread-safe.
 */
#ifndef T2S_TEXT_NUMBERS_H
#define T2S_TEXT_NUMBERS_H

#include <stdbool.h>
#include <stddef.h>

/* True when s[0..len) is a number as above; *ret gets its value (written only on success). */
bool number_parse(const char *s, size_t len, double *ret);

/*
 * A number written in English words at s ("five", "twenty-one", "three
 * hundred and five", "two thousand"): its value into *ret and the bytes it
 * spans; 0 (and *ret untouched) when s starts no number word.  "one" alone
 * is no number ("which one"); "a hundred" is not read.  Case-insensitive.
 */
size_t number_words_parse(const char *s, double *ret);

#endif
