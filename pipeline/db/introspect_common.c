/*
 * introspect_common.c - pieces both introspectors share.
 */
#include "pipeline/db/introspect.h"

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

struct schema_foreign_key *introspect_new_foreign_key(struct schema *s, struct schema_table *t, size_t *cap,
						      size_t *col_cap)
{
	t->foreign_keys = arena_grow(&s->arena, t->foreign_keys, t->n_foreign_keys, cap, sizeof(*t->foreign_keys));
	if (!t->foreign_keys)
		return NULL;
	struct schema_foreign_key *fk = &t->foreign_keys[t->n_foreign_keys++];
	memset(fk, 0, sizeof(*fk));
	*col_cap = 0;
	return fk;
}

int introspect_add_foreign_key_column(struct schema *s, struct schema_foreign_key *fk, size_t *col_cap,
				      const char *column, const char *ref_column)
{
	size_t ref_cap = *col_cap; /* both arrays always share one capacity */
	fk->columns = arena_grow(&s->arena, fk->columns, fk->n_columns, col_cap, sizeof(*fk->columns));
	fk->ref_columns = arena_grow(&s->arena, fk->ref_columns, fk->n_columns, &ref_cap, sizeof(*fk->ref_columns));
	if (!fk->columns || !fk->ref_columns)
		return -T2S_ERR_NOMEM;
	fk->columns[fk->n_columns] = column;
	fk->ref_columns[fk->n_columns] = ref_column;
	fk->n_columns++;
	return 0;
}
