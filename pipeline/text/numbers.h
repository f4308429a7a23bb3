/*
 * numbers.h - the one number grammar: how a number is written in a question
 * or printed by a database.
 *
 * Accepted: an optional sign, digits with optional thousands commas in
 * groups of three ("80,000", "1,234,567.5"), an optional fraction and
 * exponent ("-3.5", ".5", "1e6").  Rejected: anything else in the text
 * ("1.2.3", "1,0", "12a", ""), and values that are not finite.  Pure
 * functions, thread-safe.
 */
#ifndef T2S_TEXT_NUMBERS_H
#define T2S_TEXT_NUMBERS_H

#include <stdbool.h>
#include <stddef.h>

/* True when s[0..len) is a number as above; *ret gets its value (written only on success). */
bool number_parse(const char *s, size_t len, double *ret);

#endif
