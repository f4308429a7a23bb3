/*
 * describe_overrides.c - the user's overrides in a run (describe_internal.h,
 * describe.h): the table and column an override names, the override text
 * of every item of the asked tables, and whether a table is wholly
 * overridden (no model call needed).  Called by the driver (describe.c), the
 * model phase (describe_model.c) and the serving layer (describe_serve.c);
 * it calls only the prompt's column matcher (describe_prompt.c).
 */
#include "pipeline/describe/describe_internal.h"

#include <stdlib.h>

bool describe_override_target(const struct schema *s, const struct describe_override *ov, int *ret_table,
			      int *ret_column)
{
	if (!s || !ov || !ov->table || !ov->text || !*ov->text)
		return false;
	int t = schema_resolve_table(s, ov->table, SCHEMA_NAME_NOCASE, NULL, 0), c = -1;
	if (t < 0)
		return false;
	if (ov->column) {
		c = describe_column_index(&s->tables[t], ov->column, true);
		if (c < 0)
			c = describe_column_index(&s->tables[t], ov->column, false);
		if (c < 0)
			return false;
	}
	*ret_table = t;
	*ret_column = c;
	return true;
}

int describe_resolve_overrides(struct run *r, struct t2s_error *err)
{
	size_t total = 0;
	int *pos = malloc((r->s->n_tables + 1) * sizeof(int)); /* table index -> position in r->tables */

	r->ov_offset = malloc((r->n_tables + 1) * sizeof(size_t));
	if (!pos || !r->ov_offset) {
		free(pos);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < r->s->n_tables; i++)
		pos[i] = -1;
	for (size_t i = 0; i < r->n_tables; i++) {
		pos[r->tables[i]] = (int)i;
		r->ov_offset[i] = total;
		total += 1 + r->s->tables[r->tables[i]].n_columns;
	}
	r->ov_offset[r->n_tables] = total;
	r->ov = calloc(total ? total : 1, sizeof(*r->ov));
	if (!r->ov) {
		free(pos);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; r->o && i < r->o->n_overrides; i++) {
		int t, c;
		if (describe_override_target(r->s, &r->o->overrides[i], &t, &c) && pos[t] >= 0)
			r->ov[r->ov_offset[pos[t]] + (size_t)(c + 1)] = r->o->overrides[i].text;
	}
	free(pos);
	return 0;
}

bool describe_fully_overridden(const struct run *r, size_t i)
{
	size_t n = 1 + r->s->tables[r->tables[i]].n_columns;

	for (size_t k = 0; k < n; k++)
		if (!r->ov[r->ov_offset[i] + k])
			return false;
	return true;
}
