/*
 * confidence_builtin.c - the built-in generator's reading as the named
 * features its scorer weighs (confidence.h, "builtin"), and the abstention
 * they decide: which rules read the question's words ("rule:<name>"), the
 * shape read ("shape:<shape>"), the share of words no rule read
 * ("unclaimed": fillers), the question's length ("words") and the reading's
 * own hand-set confidence ("hand", which already counts joins, synonyms and
 * verbs read as relations).  A helper: it calls no step.
 */
#include "pipeline/generate/confidence_builtin.h"

#include <stdio.h>
#include <string.h>

/* Name storage for one reading's features (rule names are static; the composed names live here). */
struct named_buf {
	char names[CONFIDENCE_BUILTIN_MAX][CONFIDENCE_NAME_MAX];
};

static size_t add(struct confidence_named_value *v, size_t n, struct named_buf *buf, const char *prefix,
		  const char *name, double value)
{
	if (n >= CONFIDENCE_BUILTIN_MAX || !name)
		return n;
	char full[CONFIDENCE_NAME_MAX];
	snprintf(full, sizeof(full), "%s%s", prefix, name);
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, full) == 0)
			return n; /* a rule reading several words fires once */
	snprintf(buf->names[n], sizeof(buf->names[n]), "%s", full);
	v[n] = (struct confidence_named_value){.name = buf->names[n], .value = value};
	return n + 1;
}

size_t confidence_builtin_features(const struct builtin_result *b, struct confidence_builtin_features *ret)
{
	struct confidence_named_value *v = ret->values;
	struct named_buf *buf = (struct named_buf *)ret->names;
	size_t n = 0, unclaimed = 0;
	for (size_t i = 0; i < b->n_claims; i++) {
		if (b->claims[i].rule)
			n = add(v, n, buf, "rule:", b->claims[i].rule, 1.0);
		else
			unclaimed++;
	}
	n = add(v, n, buf, "shape:", b->shape, 1.0);
	n = add(v, n, buf, "", "unclaimed", b->n_claims ? (double)unclaimed / (double)b->n_claims : 0.0);
	n = add(v, n, buf, "", "words", (double)(b->n_claims > 40 ? 40 : b->n_claims) / 40.0);
	n = add(v, n, buf, "", "hand", b->confidence);
	ret->n = n;
	return n;
}

json_t *confidence_builtin_features_json(const struct confidence_builtin_features *f)
{
	json_t *o = json_object();
	for (size_t i = 0; o && i < f->n; i++)
		json_object_set_new(o, f->values[i].name, json_real(f->values[i].value));
	return o;
}
