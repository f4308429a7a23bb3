/*
 * json_text.c - compact JSON text of a jansson value, byte for byte what
 * json_dumps(json, JSON_COMPACT) writes, at a fraction of its cost (see
 * json_text.h).  jansson checks every object and array against a table of
 * its parents (an snprintf of the pointer and a hash insert each) and grows
 * its buffer through a generic byte appender; a response tree built by the
 * service has no cycles, so this writer walks it straight into one buffer.
 */
#include "common/json_text.h"

#include "common/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(struct json_text *o, size_t extra)
{
	if (o->failed)
		return -1;
	if (o->len + extra + 1 <= o->alloc)
		return 0;
	size_t n = o->alloc ? o->alloc : 1024;
	while (n < o->len + extra + 1)
		n *= 2;
	char *p = realloc(o->buf, n);
	if (!p) {
		o->failed = 1;
		return -1;
	}
	o->buf = p;
	o->alloc = n;
	return 0;
}

static void put(struct json_text *o, const char *s, size_t n)
{
	if (reserve(o, n) == 0) {
		memcpy(o->buf + o->len, s, n);
		o->len += n;
	}
}

static void put_char(struct json_text *o, char c)
{
	if (reserve(o, 1) == 0)
		o->buf[o->len++] = c;
}

/*
 * A string as jansson escapes it without JSON_ENSURE_ASCII: '"', '\\' and
 * control characters; invalid UTF-8 fails the text, as it fails json_dumps.
 */
static void put_string(struct json_text *o, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	put_char(o, '"');
	size_t run = 0;
	int high = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		high |= c >= 0x80;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		put(o, s + run, i - run);
		run = i + 1;
		char esc[7] = {'\\', 0};
		size_t k = 2;
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			k = 6;
		}
		put(o, esc, k);
	}
	put(o, s + run, n - run);
	put_char(o, '"');
	if (high && !utf8_valid(s, n))
		o->failed = 1;
}

/* A real as jansson's jsonp_dtostr writes it: %.17g, ".0" when neither '.' nor 'e', exponent without '+' or leading zeros. */
static void put_real(struct json_text *o, double v)
{
	char b[40];
	int n = snprintf(b, sizeof(b), "%.17g", v);
	if (n <= 0 || (size_t)n >= sizeof(b) - 3) {
		o->failed = 1;
		return;
	}
	size_t len = (size_t)n;
	for (size_t i = 0; i < len; i++)
		if (b[i] == ',') /* a locale's decimal comma */
			b[i] = '.';
	char *e = memchr(b, 'e', len);
	if (!e && !memchr(b, '.', len)) {
		memcpy(b + len, ".0", 3);
		len += 2;
	}
	if (e) {
		char *start = e + 1, *end = e + 2;
		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start) {
			memmove(start, end, len - (size_t)(end - b) + 1);
			len -= (size_t)(end - start);
		}
	}
	put(o, b, len);
}

static void put_value(struct json_text *o, const json_t *j, int depth)
{
	if (o->failed)
		return;
	if (depth > JSON_TEXT_MAX_DEPTH) {
		o->failed = 1;
		return;
	}
	switch (json_typeof(j)) {
	case JSON_OBJECT: {
		put_char(o, '{');
		const char *key;
		json_t *v;
		size_t i = 0;
		json_object_foreach ((json_t *)j, key, v) {
			if (i++)
				put_char(o, ',');
			put_string(o, key, strlen(key));
			put_char(o, ':');
			put_value(o, v, depth + 1);
		}
		put_char(o, '}');
		break;
	}
	case JSON_ARRAY: {
		put_char(o, '[');
		for (size_t i = 0; i < json_array_size(j); i++) {
			if (i)
				put_char(o, ',');
			put_value(o, json_array_get(j, i), depth + 1);
		}
		put_char(o, ']');
		break;
	}
	case JSON_STRING: put_string(o, json_string_value(j), json_string_length(j)); break;
	case JSON_INTEGER: {
		char b[32];
		int n = snprintf(b, sizeof(b), "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		put(o, b, (size_t)n);
		break;
	}
	case JSON_REAL: put_real(o, json_real_value(j)); break;
	case JSON_TRUE: put(o, "true", 4); break;
	case JSON_FALSE: put(o, "false", 5); break;
	case JSON_NULL: put(o, "null", 4); break;
	}
}

void json_text_add(struct json_text *t, const json_t *json)
{
	if (!json)
		t->failed = 1;
	else
		put_value(t, json, 0);
}

void json_text_raw(struct json_text *t, const char *text)
{
	put(t, text, strlen(text));
}

char *json_text_detach(struct json_text *t, size_t *ret_len)
{
	char *text = NULL;
	if (!t->failed && reserve(t, 0) == 0) {
		t->buf[t->len] = '\0';
		text = t->buf;
		if (ret_len)
			*ret_len = t->len;
	} else {
		free(t->buf);
	}
	*t = (struct json_text){0};
	return text;
}

char *json_text_compact(const json_t *json, size_t *ret_len)
{
	struct json_text t = {0};
	if (!json || (!json_is_object(json) && !json_is_array(json)))
		return NULL;
	json_text_add(&t, json);
	return json_text_detach(&t, ret_len);
}
