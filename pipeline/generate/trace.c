/*
 * trace.c - stage results as JSON for the answer's trace (see trace.h).
 */
#include "pipeline/generate/trace.h"

static json_t *column_json(const struct schema *s, int table, int column)
{
	return json_pack("{s:s, s:s}", "table", s->tables[table].api_name,
			 "column", s->tables[table].columns[column].name);
}

static json_t *reasons_json(unsigned reasons)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {{LINK_BY_RETRIEVAL, "retrieval"}, {LINK_BY_LLM, "link_model"}, {LINK_BY_BRIDGE, "bridge"},
		     {LINK_BY_JOIN, "join"}, {LINK_BY_VALUE, "value"}};
	json_t *a = json_array();
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (reasons & names[i].bit)
			json_array_append_new(a, json_string(names[i].name));
	return a;
}

json_t *trace_link_json(const struct link_result *r)
{
	const struct schema *s = r->index->schema;
	json_t *tables = json_array(), *columns = json_array(), *joins = json_array();
	for (size_t i = 0; i < r->n_tables; i++) {
		const struct link_table *t = &r->tables[i];
		json_t *o = json_pack("{s:s, s:f, s:o}", "name",
				      s->tables[t->table].api_name, "score",
				      t->score, "reasons", reasons_json(t->reasons));
		if (r->shuffles)
			json_object_set_new(o, "votes", json_integer(t->votes));
		json_array_append_new(tables, o);
	}
	for (size_t i = 0; i < r->n_columns; i++) {
		json_t *o = column_json(s, r->columns[i].table, r->columns[i].column);
		json_object_set_new(o, "score", json_real(r->columns[i].score));
		json_array_append_new(columns, o);
	}
	for (size_t i = 0; i < r->n_joins; i++) {
		const struct link_edge *e = &r->index->edges[r->joins[i]];
		json_array_append_new(joins, json_pack("{s:o, s:o, s:s, s:f}", "left",
						       column_json(s, e->left_table, e->left_column), "right",
						       column_json(s, e->right_table, e->right_column), "kind",
						       e->kind == LINK_EDGE_FOREIGN_KEY ? "foreign_key" : "inferred",
						       "cost", e->cost));
	}
	json_t *o = json_pack("{s:s, s:o, s:o, s:o, s:i, s:{s:I, s:I}, s:f}", "mode", link_mode_name(r->mode), "tables",
			      tables, "columns", columns, "joins", joins, "model_calls", r->model_calls, "tokens",
			      "prompt", (json_int_t)r->prompt_tokens, "completion", (json_int_t)r->completion_tokens,
			      "elapsed_ms", r->ms_total);
	if (o && r->fallback)
		json_object_set_new(o, "fallback", json_string(r->fallback));
	if (o)
		json_object_set_new(o, "fallbacks", fallback_json(r->fallbacks, r->n_fallbacks));
	return o;
}

json_t *trace_evidence_json(const struct schema *s, const struct evidence_result *r)
{
	json_t *values = json_array(), *items = json_array(), *examples = json_array();
	for (size_t i = 0; i < r->n_values; i++) {
		const struct evidence_value *v = &r->values[i];
		const struct schema_table *t = &s->tables[v->table];
		json_array_append_new(values, json_pack("{s:s, s:s, s:s, s:s?, s:f, s:{s:s?, s:i}}", "table",
							t->api_name, "column",
							t->columns[v->column].name, "value", v->value, "matched", v->matched,
							"score", v->score, "probe", "sql", v->probe.sql, "rows",
							(int)v->probe.n_rows));
	}
	for (size_t i = 0; i < r->n_items; i++)
		json_array_append_new(items, json_pack("{s:s, s:s}", "kind", r->items[i].kind, "text", r->items[i].text));
	for (size_t i = 0; i < r->n_examples; i++) {
		const struct evidence_example *e = &r->examples[i];
		json_array_append_new(examples, json_pack("{s:s, s:s, s:f}", "question", e->question ? e->question : "",
							  "sql", e->sql ? e->sql : "", "score", e->score));
	}
	return json_pack("{s:o, s:o, s:o, s:b, s:i, s:f}", "values", values, "evidence", items, "examples", examples,
			 "partial", r->partial, "model_calls", r->model_calls, "elapsed_ms", r->ms_total);
}

json_t *trace_validation_json(const struct validation *v)
{
	json_t *a = json_array();
	for (size_t i = 0; i < v->n_checks; i++) {
		const struct validation_check *c = &v->checks[i];
		json_array_append_new(a, json_pack("{s:i, s:s, s:b, s:s, s:s}", "level", c->level, "check", c->check, "ok",
						   c->ok, "severity", c->blocking ? "error" : "warning", "detail",
						   c->detail));
	}
	return a;
}

json_t *trace_model_call_json(const char *stage, const struct model_route_attempt *a)
{
	return json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:f}", "stage", stage, "endpoint", a->endpoint, "outcome",
			 a->outcome ? a->outcome : "?", "attempts", a->stats.attempts, "prompt_tokens",
			 (json_int_t)a->stats.prompt_tokens, "completion_tokens", (json_int_t)a->stats.completion_tokens,
			 "elapsed_ms", a->stats.elapsed_ms);
}
