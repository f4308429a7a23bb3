/*
 * introspect_common.c - pieces both introspectors share.
 */
#include "introspect.h"

#include "common/utf8.h"

#include <string.h>

int introspect_add_sample(struct schema *s, struct schema_column *col, size_t *cap,
			  const struct introspect_options *o, const char *value, size_t len)
{
	if ((int)col->n_samples >= o->sample_values || len == 0)
		return 0;
	size_t keep = utf8_prefix_len(value, len, (size_t)o->sample_value_max_len);
	for (size_t i = 0; i < col->n_samples; i++)
		if (strncmp(col->samples[i], value, keep) == 0 && col->samples[i][keep] == '\0')
			return 0;
	col->samples = arena_grow(&s->arena, col->samples, col->n_samples, cap, sizeof(*col->samples));
	if (!col->samples)
		return -T2S_ERR_NOMEM;
	const char *copy = utf8_sanitize(&s->arena, value, keep);
	if (!copy)
		return -T2S_ERR_NOMEM;
	col->samples[col->n_samples++] = copy;
	return 0;
}
