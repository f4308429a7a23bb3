/*
 * confidence_builtin.h - the built-in generator's reading as the named
 * features of its scorer (confidence.h, "builtin"); see
 * confidence_builtin.c.
 */
#ifndef T2S_GENERATE_CONFIDENCE_BUILTIN_H
#define T2S_GENERATE_CONFIDENCE_BUILTIN_H

#include "pipeline/builtin/builtin.h"
#include "pipeline/generate/confidence.h"

#include <jansson.h>

/* Most features of one reading (a rule per claimed word at most, and four more). */
#define CONFIDENCE_BUILTIN_MAX 96

/* One reading's features; the names point into names[] (owned by the struct). */
struct confidence_builtin_features {
	struct confidence_named_value values[CONFIDENCE_BUILTIN_MAX];
	char names[CONFIDENCE_BUILTIN_MAX][CONFIDENCE_NAME_MAX];
	size_t n;
};

/* The features of b, an answered reading, into *ret; returns their number. */
size_t confidence_builtin_features(const struct builtin_result *b, struct confidence_builtin_features *ret);
/* {name: value} of f; a new reference (NULL when out of memory). */
json_t *confidence_builtin_features_json(const struct confidence_builtin_features *f);

#endif
