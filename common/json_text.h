/*
 * json_text.h - compact JSON text of a jansson value, the response writer.
 *
 * json_text_compact(json) writes exactly what json_dumps(json, JSON_COMPACT)
 * writes (keys in insertion order, reals as %.17g, strings escaped the same
 * way), without jansson's per-container cycle check, so a response body costs
 * a third of jansson's instructions.  The value must be a tree (no value
 * contains itself): every tree jansson's own constructors build is one.
 */
#ifndef T2S_JSON_TEXT_H
#define T2S_JSON_TEXT_H

#include <jansson.h>
#include <stddef.h>

/* Deeper nesting fails (NULL): more than any response has, fewer than a stack allows. */
#define JSON_TEXT_MAX_DEPTH 256

/*
 * The compact text of an object or array: a malloc'd NUL-terminated string
 * the caller frees, its length in *ret_len (may be NULL).  NULL when json is
 * NULL, not an object or array (as json_dumps without JSON_ENCODE_ANY), nested
 * deeper than JSON_TEXT_MAX_DEPTH, or out of memory.
 */
char *json_text_compact(const json_t *json, size_t *ret_len);

/*
 * A text written in parts, so that a large document need not exist as one
 * jansson tree (GET /databases/{name} of a 71,833-column schema: a 98 MB
 * tree for 8 MB of text).  Start from {0}; json_text_add appends a value's
 * compact text (any type), json_text_raw literal text (punctuation, keys
 * already in JSON form); a failure (NULL value, invalid UTF-8, out of
 * memory) sticks, and json_text_detach then frees the parts and returns NULL.
 * Otherwise json_text_detach returns the malloc'd text (the caller frees it)
 * and its length in *ret_len (may be NULL).  Either way t is empty after it.
 */
struct json_text {
	char *buf;
	size_t len, alloc;
	int failed;
};

void json_text_add(struct json_text *t, const json_t *json);
void json_text_raw(struct json_text *t, const char *text);
char *json_text_detach(struct json_text *t, size_t *ret_len);

#endif
