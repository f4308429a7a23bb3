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

/* Append the feature prefix + name with value to f, once per name (a rule reading several words fires once). */
static void add(struct confidence_builtin_features *f, const char *prefix, const char *name, double value)
{
	if (f->n >= CONFIDENCE_BUILTIN_MAX || !name)
		return;
	char full[CONFIDENCE_NAME_MAX];
	snprintf(full, sizeof(full), "%s%s", prefix, name);
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->values[i].name, full) == 0)
			return;
	memcpy(f->names[f->n], full, sizeof(full));
	f->values[f->n] = (struct confidence_named_value){.name = f->names[f->n], .value = value};
	f->n++;
}

size_t confidence_builtin_features(const struct builtin_result *b, struct confidence_builtin_features *ret)
{
	size_t unclaimed = 0;
	ret->n = 0;
	for (size_t i = 0; i < b->n_claims; i++) {
		if (b->claims[i].rule)
			add(ret, "rule:", b->claims[i].rule, 1.0);
		else
			unclaimed++;
	}
	add(ret, "shape:", b->shape, 1.0);
	add(ret, "", "unclaimed", b->n_claims ? (double)unclaimed / (double)b->n_claims : 0.0);
	add(ret, "", "words", (double)(b->n_claims > 40 ? 40 : b->n_claims) / 40.0);
	add(ret, "", "hand", b->confidence);
	return ret->n;
}

json_t *confidence_builtin_features_json(const struct confidence_builtin_features *f)
{
	json_t *o = json_object();
	for (size_t i = 0; o && i < f->n; i++)
		json_object_set_new(o, f->values[i].name, json_real(f->values[i].value));
	return o;
}
