/*
 * introspect_common.c - pieces the introspectors share: sample values kept,
 * primary and foreign keys read row by row.
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

static struct schema_column *column_named(struct schema_table *t, const char *name)
{
	for (size_t i = 0; name && i < t->n_columns; i++)
		if (strcmp(t->columns[i].name, name) == 0)
			return &t->columns[i];
	return NULL;
}

int introspect_add_key(struct schema *s, struct introspect_keys *k, const struct introspect_key_row *row)
{
	struct schema_table *t = row->table;
	if (t != k->last_table)
		k->pk_cap = k->fk_cap = 0;
	bool same_key = t == k->last_table && k->last_constraint && row->constraint &&
			strcmp(k->last_constraint, row->constraint) == 0;
	k->last_table = t;
	k->last_constraint = row->constraint;
	if (row->primary) {
		t->primary_key = arena_grow(&s->arena, t->primary_key, t->n_primary_key, &k->pk_cap,
					    sizeof(*t->primary_key));
		if (!t->primary_key)
			return -T2S_ERR_NOMEM;
		t->primary_key[t->n_primary_key++] = row->column;
		struct schema_column *c = column_named(t, row->column);
		if (c)
			c->primary_key = true;
		return 0;
	}
	if (!same_key) {
		struct schema_foreign_key *fk = introspect_new_foreign_key(s, t, &k->fk_cap, &k->col_cap);
		if (!fk)
			return -T2S_ERR_NOMEM;
		fk->ref_schema = row->ref_schema;
		fk->ref_table = row->ref_table;
	}
	return introspect_add_foreign_key_column(s, &t->foreign_keys[t->n_foreign_keys - 1], &k->col_cap,
						 row->column, row->ref_column);
}
