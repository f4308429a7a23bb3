/*
 * utf8.c - UTF-8 validation and repair (see utf8.h).
 */
#include "common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid sequence starting at s (1..4), or 0 when invalid. */
static size_t seq_len(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	size_t n;
	unsigned min;
	unsigned cp;
	if (c < 0x80)
		return 1;
	if ((c & 0xE0) == 0xC0)
		n = 2, cp = c & 0x1F, min = 0x80;
	else if ((c & 0xF0) == 0xE0)
		n = 3, cp = c & 0x0F, min = 0x800;
	else if ((c & 0xF8) == 0xF0)
		n = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	if (n > avail)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

bool utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		size_t n = seq_len(p + i, len - i);
		if (!n || (n == 1 && p[i] == 0))
			return false;
		i += n;
	}
	return true;
}

size_t utf8_prefix_len(const char *s, size_t len, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		size_t n = seq_len(p + i, len - i);
		if (!n)
			n = 1;
		if (i + n > max)
			break;
		i += n;
	}
	return i;
}

/* Writes the repaired text into out (room for 3*len+1) and returns its length. */
static size_t repair(const char *s, size_t len, char *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;
	for (size_t i = 0; i < len;) {
		size_t n = seq_len(p + i, len - i);
		if (!n || (n == 1 && p[i] == 0)) {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
		} else {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
		}
	}
	out[o] = '\0';
	return o;
}

char *utf8_sanitize(struct arena *a, const char *s, size_t len)
{
	if (utf8_valid(s, len))
		return arena_strndup(a, s, len);
	char *out = arena_alloc(a, 3 * len + 1);
	if (out)
		repair(s, len, out);
	return out;
}

json_t *utf8_json_string(const char *s, size_t len)
{
	if (utf8_valid(s, len))
		return json_stringn_nocheck(s, len);
	char *out = malloc(3 * len + 1);
	if (!out)
		return NULL;
	size_t n = repair(s, len, out);
	json_t *j = json_stringn_nocheck(out, n);
	free(out);
	return j;
}

char *utf8_excerpt(const char *s, size_t max)
{
	size_t len = strlen(s);
	if (len <= max)
		return strdup(s);
	size_t keep = utf8_prefix_len(s, len, max);
	char tail[64];
	int n = snprintf(tail, sizeof(tail), UTF8_EXCERPT_MARK " (%zu bytes in all)", len);
	char *out = malloc(keep + (size_t)n + 1);
	if (!out)
		return NULL;
	memcpy(out, s, keep);
	memcpy(out + keep, tail, (size_t)n + 1);
	return out;
}

json_t *utf8_json_excerpt(const char *s, size_t max)
{
	if (!s)
		return json_null();
	char *e = utf8_excerpt(s, max);
	json_t *j = e ? utf8_json_string(e, strlen(e)) : NULL;
	free(e);
	return j;
}
