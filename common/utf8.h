/*
 * utf8.h - keep text from databases valid UTF-8 before it reaches JSON.
 */
#ifndef T2S_UTF8_H
#define T2S_UTF8_H

#include "common/arena.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* True when s[0..len) is well-formed UTF-8. */
bool utf8_valid(const char *s, size_t len);

/*
 * Length of the longest prefix of s[0..len) that is at most max bytes and
 * does not cut a multi-byte sequence.
 */
size_t utf8_prefix_len(const char *s, size_t len, size_t max);

/* Copy of s[0..len) into the arena with each invalid byte replaced by U+FFFD. */
char *utf8_sanitize(struct arena *a, const char *s, size_t len);

/* json string of s[0..len), invalid bytes replaced by U+FFFD (new reference; NULL on OOM). */
json_t *utf8_json_string(const char *s, size_t len);

#endif
