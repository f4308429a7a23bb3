/*
 * describe_json.c - a describe result as JSON (see describe_json.h).
 */
#include "pipeline/describe/describe_json.h"

static json_t *tables_json(const struct schema *s, const struct describe_result *r)
{
	json_t *tables = json_array(), *cur = NULL;
	for (size_t i = 0; i < r->n_items; i++) {
		const struct describe_item *it = &r->items[i];
		const struct schema_table *t = &s->tables[it->table];
		if (it->column < 0) {
			cur = json_pack("{s:s, s:s, s:s, s:[]}", "name", t->api_name, "description", it->text, "source",
					it->source, "columns");
			json_array_append_new(tables, cur);
		} else if (cur) {
			json_array_append_new(json_object_get(cur, "columns"),
					      json_pack("{s:s, s:s, s:s}", "name", t->columns[it->column].name, "description",
							it->text, "source", it->source));
		}
	}
	return tables;
}

json_t *describe_result_json(const char *database, const struct schema *s, const struct describe_result *r,
			     bool overrides_missing)
{
	json_t *errors = json_array();
	for (size_t i = 0; i < r->n_errors; i++)
		json_array_append_new(errors, json_string(r->errors[i]));
	json_t *out = json_pack("{s:s, s:s, s:o, s:i, s:i, s:i, s:{s:I, s:I}, s:o, s:{s:f}}", "database", database,
				"schema_hash", s->hash, "tables", tables_json(s, r), "model_calls", r->model_calls,
				"model_errors", r->model_errors, "cache_hits", r->cache_hits, "tokens", "prompt",
				(json_int_t)r->prompt_tokens, "completion", (json_int_t)r->completion_tokens, "errors",
				errors, "timings_ms", "total", r->ms_total);
	if (out && overrides_missing)
		json_object_set_new(out, "warning", json_string("state store unavailable: overrides not applied"));
	return out;
}
