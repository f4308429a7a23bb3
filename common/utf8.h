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

/* What ends an excerpt: the marker, then " (N bytes in all)". */
#define UTF8_EXCERPT_MARK "\xE2\x80\xA6"

/*
 * A malloc'd excerpt of s (NUL-terminated): s itself when it has at most max
 * bytes, else its longest prefix of at most max bytes that does not cut a
 * UTF-8 sequence, followed by UTF8_EXCERPT_MARK and " (N bytes in all)".
 * The caller frees it; NULL when out of memory.
 */
char *utf8_excerpt(const char *s, size_t max);

/* utf8_excerpt of s as a JSON string (invalid bytes replaced); json null for NULL s; NULL on OOM. */
json_t *utf8_json_excerpt(const char *s, size_t max);

#endif
