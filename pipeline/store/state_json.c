/*
 * state_json.c - stored records as JSON (see state_json.h).
 */
#include "pipeline/store/state_json.h"

json_t *state_example_json(const struct state_example *e)
{
	return json_pack("{s:I, s:s, s:s, s:s}", "id", (json_int_t)e->id, "question", e->question, "sql",
			 e->sql ? e->sql : "", "created_at", e->created_at);
}

json_t *state_examples_page_json(const char *database, const struct state_examples *l, long limit, long offset)
{
	json_t *items = json_array();
	for (size_t i = 0; i < l->n; i++)
		json_array_append_new(items, state_example_json(&l->items[i]));
	return json_pack("{s:s, s:o, s:I, s:i, s:i}", "database", database, "examples", items, "total",
			 (json_int_t)l->total, "limit", (int)limit, "offset", (int)offset);
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

json_t *state_feedbacks_page_json(const struct state_feedbacks *l, long limit, long offset)
{
	json_t *items = json_array();
	for (size_t i = 0; i < l->n; i++)
		json_array_append_new(items, state_feedback_json(&l->items[i]));
	return json_pack("{s:o, s:I, s:i, s:i}", "feedback", items, "total", (json_int_t)l->total, "limit", (int)limit,
			 "offset", (int)offset);
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
