/*
 * state_json.c - stored records as JSON (see state_json.h).
 */
#include "pipeline/store/state_json.h"

json_t *state_example_json(const struct state_example *e)
{
	return json_pack("{s:I, s:s, s:s, s:s}", "id", (json_int_t)e->id, "question", e->question, "sql",
			 e->sql ? e->sql : "", "created_at", e->created_at);
}

/* Bytes a page's members other than its items take at most (keys, numbers, a database name). */
#define PAGE_ENVELOPE_BYTES 512u

/*
 * Append item (stolen) to items when the page stays within max bytes as
 * rendered (compact), or when items is empty; *used counts the bytes so far.
 * False when it did not fit (item released).
 */
static bool page_add(json_t *items, json_t *item, size_t *used, size_t max)
{
	size_t n = item ? json_dumpb(item, NULL, 0, JSON_COMPACT) + 1 : 0;
	if (!item || (json_array_size(items) > 0 && *used + n > max)) {
		json_decref(item);
		return false;
	}
	*used += n;
	json_array_append_new(items, item);
	return true;
}

/* The paging members of a page of n items out of total: {total, limit, offset, truncated, next_offset}. */
static json_t *page_members(json_t *page, size_t n, int64_t total, long limit, long offset)
{
	int64_t next = (int64_t)offset + (int64_t)n;
	if (page) {
		json_object_set_new(page, "total", json_integer(total));
		json_object_set_new(page, "limit", json_integer(limit));
		json_object_set_new(page, "offset", json_integer(offset));
		json_object_set_new(page, "truncated", json_boolean((long)n < limit && next < total));
		json_object_set_new(page, "next_offset", next < total ? json_integer(next) : json_null());
	}
	return page;
}

json_t *state_examples_page_json(const char *database, const struct state_examples *l, long limit, long offset,
				 size_t max_bytes)
{
	json_t *items = json_array();
	size_t used = PAGE_ENVELOPE_BYTES;
	for (size_t i = 0; i < l->n && page_add(items, state_example_json(&l->items[i]), &used, max_bytes); i++)
		;
	size_t n = json_array_size(items);
	return page_members(json_pack("{s:s, s:o}", "database", database, "examples", items), n, l->total, limit,
			    offset);
}

json_t *state_feedback_json(const struct state_feedback *f)
{
	json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:b, s:s}", "id", (json_int_t)f->id, "database", f->database,
			      "question", f->question, "sql", f->sql, "correct", f->correct, "created_at", f->created_at);
	if (o) {
		json_object_set_new(o, "note", f->note ? json_string(f->note) : json_null());
		json_object_set_new(o, "example_id", f->example_id ? json_integer(f->example_id) : json_null());
	}
	return o;
}

json_t *state_feedbacks_page_json(const struct state_feedbacks *l, long limit, long offset, size_t max_bytes)
{
	json_t *items = json_array();
	size_t used = PAGE_ENVELOPE_BYTES;
	for (size_t i = 0; i < l->n && page_add(items, state_feedback_json(&l->items[i]), &used, max_bytes); i++)
		;
	size_t n = json_array_size(items);
	return page_members(json_pack("{s:o}", "feedback", items), n, l->total, limit, offset);
}

json_t *state_overrides_json(const char *database, const struct state_overrides *l)
{
	json_t *a = json_array();
	for (size_t i = 0; i < l->n; i++) {
		const struct state_override *o = &l->items[i];
		json_array_append_new(a, json_pack("{s:s, s:o, s:s, s:s}", "table", o->table, "column",
						   o->column ? json_string(o->column) : json_null(), "text", o->text,
						   "updated_at", o->updated_at));
	}
	return json_pack("{s:s, s:o}", "database", database, "overrides", a);
}
