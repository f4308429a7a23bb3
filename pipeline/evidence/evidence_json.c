/*
 * evidence_json.c - an evidence result as JSON (see evidence_json.h).
 */
#include "pipeline/evidence/evidence_json.h"

static json_t *string_array(char *const *items, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(items[i]));
	return a;
}

static json_t *values_json(const struct schema *s, const struct evidence_result *r)
{
	json_t *values = json_array();
	for (size_t i = 0; i < r->n_values; i++) {
		const struct evidence_value *v = &r->values[i];
		const struct schema_table *t = &s->tables[v->table];
		json_t *probe = json_pack("{s:s, s:[s], s:s, s:o, s:f}", "sql", v->probe.sql, "params", v->probe.param, "how",
					  v->probe.how, "rows", string_array(v->probe.rows, v->probe.n_rows), "elapsed_ms",
					  v->probe.elapsed_ms);
		json_array_append_new(values, json_pack("{s:s, s:s, s:s, s:s, s:f, s:s, s:o}", "table", t->api_name,
							"column", t->columns[v->column].name, "value", v->value,
							"matched", v->matched, "score", v->score, "source", v->source,
							"probe", probe));
	}
	return values;
}

static json_t *stats_json(const struct value_index_stats *st)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:b}", "columns_indexed", (json_int_t)st->columns_indexed,
			 "columns_ranged", (json_int_t)st->columns_ranged, "columns_skipped",
			 (json_int_t)st->columns_skipped, "values", (json_int_t)st->values, "bytes", (json_int_t)st->bytes,
			 "build_ms", st->build_ms, "truncated", st->truncated);
}

json_t *evidence_result_json(const char *database, const char *question, const char *user_evidence,
			     const struct schema *s, const struct evidence_result *r, const char *index_state,
			     const struct value_index_stats *stats)
{
	json_t *items = json_array(), *examples = json_array();
	for (size_t i = 0; i < r->n_items; i++)
		json_array_append_new(items, json_pack("{s:s, s:s, s:s}", "kind", r->items[i].kind, "text", r->items[i].text,
						       "source", r->items[i].source));
	for (size_t i = 0; i < r->n_examples; i++) {
		const struct evidence_example *e = &r->examples[i];
		json_array_append_new(examples, json_pack("{s:I, s:s, s:s, s:f}", "id", (json_int_t)e->id, "question",
							  e->question ? e->question : "", "sql", e->sql ? e->sql : "",
							  "score", e->score));
	}
	json_t *out = json_pack(
		"{s:s, s:s, s:s, s:o, s:o, s:o, s:b, s:s, s:i, s:i, s:{s:I, s:I}, s:{s:f, s:f, s:f, s:f, s:f}, s:o}",
		"database", database, "question", question, "schema_hash", s->hash, "values", values_json(s, r), "evidence",
		items, "examples", examples, "partial", r->partial, "value_index", index_state, "probes", r->probes,
		"model_calls", r->model_calls, "tokens", "prompt", (json_int_t)r->prompt_tokens, "completion",
		(json_int_t)r->completion_tokens, "timings_ms", "total", r->ms_total, "lookup", r->ms_lookup, "probe",
		r->ms_probe, "model", r->ms_model, "examples", r->ms_examples, "fallbacks",
		fallback_json(r->fallbacks, r->n_fallbacks));
	if (out && user_evidence)
		json_object_set_new(out, "user_evidence", json_string(user_evidence));
	if (out && stats)
		json_object_set_new(out, "value_index_stats", stats_json(stats));
	return out;
}
