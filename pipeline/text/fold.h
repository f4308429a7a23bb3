/*
 * fold.h - case folding and white-space normalisation of UTF-8 text, the
 * form in which values and question spans are compared.
 *
 * Folding is simple (one code point to one code point) and covers ASCII,
 * Latin-1, Latin Extended-A, Greek and Cyrillic capitals; other code points
 * are kept.  Invalid UTF-8 reads as U+FFFD, one byte at a time (ASCII bytes
 * stay themselves).  Pure functions, thread-safe.
 */
#ifndef T2S_TEXT_FOLD_H
#define T2S_TEXT_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FOLD_MAX 512 /* code points kept per string; longer text is compared on its prefix */

/* Folded code points of a text (caller's storage, e.g. on the stack or in a scratch struct). */
struct folded {
	uint32_t cp[FOLD_MAX];
	size_t n;
};

/* Next code point of s[*i..len), advancing *i (which must be < len). */
uint32_t fold_next_cp(const char *s, size_t len, size_t *i);

/* The lower-case form of code point c (c itself when it has none here). */
uint32_t fold_cp(uint32_t c);

/* Case-folded code points of s[0..len) into *f, white space trimmed and each run collapsed to one space. */
void fold_text(const char *s, size_t len, struct folded *f);

/* True when a and b hold the same code points once case is folded (white space untouched). */
bool fold_equal_but_case(const char *a, size_t alen, const char *b, size_t blen);

#endif
