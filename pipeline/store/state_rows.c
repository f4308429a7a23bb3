/*
 * state_rows.c - reads and single writes of a record kind, each in a
 * session of its own (see state_store_internal.h): store_exec_one, and
 * store_rows_read with the table-driven reading of result rows into a
 * record list (struct row_kind).
 */
#include "pipeline/store/state_store_internal.h"

#include <stdlib.h>
#include <string.h>

int store_exec_one(struct state_store *s, bool write, const char *sql_lite, const char *sql_pg,
		   const struct param *p, int np, int64_t *ret_changes, struct t2s_error *err)
{
	struct session x;
	int rc = store_session_open(s, write, &x, err);
	if (rc < 0)
		return rc;
	rc = store_session_exec(&x, sql_lite, sql_pg, p, np, NULL, NULL, ret_changes, err);
	return store_session_close(&x, rc, err);
}

/* Set the field f of item from a value (see enum field_type). */
static int set_field(struct rows *r, char *item, const struct field *f, const char *v, size_t len, bool *ok,
		     struct t2s_error *err)
{
	void *at = item + f->offset;
	int64_t num = 0;
	switch (f->type) {
	case FIELD_TEXT:
		*(const char **)at = store_dup(&r->arena, v, len, ok);
		return 0;
	case FIELD_COLUMN:
		*(const char **)at = store_dup_column(&r->arena, v, len, ok);
		return 0;
	case FIELD_I64:
		return v ? store_parse_i64(v, at, err) : 0;
	case FIELD_BOOL: {
		int rc = v ? store_parse_i64(v, &num, err) : 0;
		*(bool *)at = num != 0;
		return rc;
	}
	}
	return t2s_error_set(err, T2S_ERR_INTERNAL, "state store: unknown field type");
}

/* Row callback: one more item of r->kind. */
static int rows_add(void *ctx, int ncols, const char *const *vals, const size_t *lens, struct t2s_error *err)
{
	struct rows *r = ctx;
	const struct row_kind *k = r->kind;
	if (ncols != k->ncols)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "state store returned an unexpected %s row", k->row_name);
	char *v = arena_grow(&r->arena, r->items, r->n, &r->cap, k->size);
	if (!v)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading %s", k->list_name);
	r->items = v;
	char *item = v + r->n * k->size;
	memset(item, 0, k->size);
	bool ok = true;
	int rc = 0;
	for (int i = 0; rc == 0 && i < ncols; i++)
		rc = set_field(r, item, &k->fields[i], vals[i], lens[i], &ok, err);
	if (rc == 0 && !ok)
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading %s", k->list_name);
	if (rc == 0)
		r->n++;
	return rc;
}

int store_rows_read(struct state_store *s, const struct row_kind *kind, const struct rows_query *q,
		    const struct param *p, const char *absent, void *ret, struct t2s_error *err)
{
	struct rows r = {.kind = kind};
	struct session x;
	int rc = store_session_open(s, false, &x, err);
	if (rc < 0)
		return rc;
	if (q->count_lite)
		rc = store_session_exec(&x, q->count_lite, q->count_pg, p, q->count_np, store_row_i64, &r.total, NULL,
					err);
	if (rc == 0)
		rc = store_session_exec(&x, q->lite, q->pg, p, q->np, rows_add, &r, NULL, err);
	rc = store_session_close(&x, rc, err);
	if (rc == 0 && absent && r.n == 0)
		rc = t2s_error_set(err, T2S_ERR_NOT_FOUND, "%s", absent);
	if (rc < 0) {
		arena_release(&r.arena);
		return rc;
	}
	if (!q->count_lite)
		r.total = (int64_t)r.n;
	kind->take(&r, ret);
	return 0;
}
