/*
 * evidence.c - POST /evidence {database, question, evidence?}: values the question
 * (read with the user's evidence appended, as linking reads it)
 * names (spelled as stored, with the probe that confirmed them), evidence
 * sentences and the most similar stored examples (pipeline/evidence.h).
 */
#include "handlers/handlers.h"

#include "pipeline/evidence/evidence.h"
#include "pipeline/link/link.h"
#include "handlers/request_json.h"

#include <string.h>

static json_t *string_array(char *const *items, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(items[i]));
	return a;
}

static json_t *result_json(const struct schema *s, const struct evidence_result *r, const char *index_state)
{
	json_t *values = json_array(), *items = json_array(), *examples = json_array();
	for (size_t i = 0; i < r->n_values; i++) {
		const struct evidence_value *v = &r->values[i];
		const struct schema_table *t = &s->tables[v->table];
		json_t *probe = json_pack("{s:s, s:[s], s:s, s:o, s:f}", "sql", v->probe.sql, "params", v->probe.param, "how",
					  v->probe.how, "rows", string_array(v->probe.rows, v->probe.n_rows), "elapsed_ms",
					  v->probe.elapsed_ms);
		json_array_append_new(values, json_pack("{s:s, s:s, s:s, s:s, s:f, s:s, s:o}", "table",
							t->api_name, "column",
							t->columns[v->column].name, "value", v->value, "matched", v->matched,
							"score", v->score, "source", v->source, "probe", probe));
	}
	for (size_t i = 0; i < r->n_items; i++)
		json_array_append_new(items, json_pack("{s:s, s:s, s:s}", "kind", r->items[i].kind, "text", r->items[i].text,
						       "source", r->items[i].source));
	for (size_t i = 0; i < r->n_examples; i++) {
		const struct evidence_example *e = &r->examples[i];
		json_array_append_new(examples, json_pack("{s:I, s:s, s:s, s:f}", "id", (json_int_t)e->id, "question",
							  e->question ? e->question : "", "sql", e->sql ? e->sql : "",
							  "score", e->score));
	}
	return json_pack("{s:o, s:o, s:o, s:b, s:s, s:i, s:i, s:{s:I, s:I}, s:{s:f, s:f, s:f, s:f, s:f}}", "values", values,
			 "evidence", items, "examples", examples, "partial", r->partial, "value_index", index_state,
			 "probes", r->probes, "model_calls", r->model_calls, "tokens", "prompt",
			 (json_int_t)r->prompt_tokens, "completion", (json_int_t)r->completion_tokens, "timings_ms", "total",
			 r->ms_total, "lookup", r->ms_lookup, "probe", r->ms_probe, "model", r->ms_model, "examples",
			 r->ms_examples);
}

void handle_evidence(struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = {"database", "question", "evidence", NULL};
	struct app *app = req->app;
	struct t2s_error err = {0};
	json_t *body = NULL;
	const char *database = NULL, *question = NULL, *user_evidence = NULL;
	char *text = NULL;
	char state[VALUE_REGISTRY_STATE_MAX] = "building";
	struct catalog_db *db;
	struct schema *s = NULL;
	struct column_index *li = NULL;
	struct value_index *vi = NULL;
	struct evidence_result result;
	int rc = request_json_object(req, fields, &body, &err);
	if (rc == 0)
		rc = request_json_string(body, "database", true, &database, &err);
	if (rc == 0)
		rc = request_json_text(body, "question", true, &question, &err);
	if (rc == 0)
		rc = request_json_text(body, "evidence", false, &user_evidence, &err);
	if (rc == 0 && !(text = link_question_text(question, user_evidence)))
		rc = t2s_error_set(&err, T2S_ERR_NOMEM, "out of memory");
	if (rc == 0)
		rc = request_database(req, database, &db, &err);
	if (rc == 0)
		rc = catalog_db_schema(db, &s, &err);
	if (rc == 0)
		rc = column_index_registry_get(app->links, s, &li, NULL, &err);
	if (rc == 0) {
		vi = value_registry_get(app->values, db, s, state);
		rc = evidence_run(db, vi, li, app->state, text, &app->evidence_options, &result, &err);
	}
	if (rc == 0) {
		json_t *out = result_json(s, &result, state);
		json_object_set_new(out, "database", json_string(database));
		json_object_set_new(out, "question", json_string(question));
		if (user_evidence)
			json_object_set_new(out, "user_evidence", json_string(user_evidence));
		json_object_set_new(out, "fallbacks", fallback_json(result.fallbacks, result.n_fallbacks));
		json_object_set_new(out, "schema_hash", json_string(s->hash));
		if (vi) {
			const struct value_index_stats *st = value_index_get_stats(vi);
			json_object_set_new(out, "value_index_stats",
					    json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:b}", "columns_indexed",
						      (json_int_t)st->columns_indexed, "columns_ranged",
						      (json_int_t)st->columns_ranged, "columns_skipped",
						      (json_int_t)st->columns_skipped, "values", (json_int_t)st->values,
						      "bytes", (json_int_t)st->bytes, "build_ms", st->build_ms, "truncated",
						      st->truncated));
		}
		http_reply_json(res, 200, out);
		evidence_result_release(&result);
	} else {
		http_reply_error(res, req, &err);
	}
	free(text);
	value_index_unref(vi);
	column_index_unref(li);
	schema_unref(s);
	json_decref(body);
}
