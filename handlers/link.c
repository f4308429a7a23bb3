/*
 * link.c - POST /link {database, question, evidence?, top_k?, mode?}: the linked
 * schema a question needs (pipeline/link.h), with scores, reasons, the join
 * scaffold, timings and model calls.
 */
#include "handlers/handlers.h"

#include "pipeline/link/link.h"
#include "handlers/request_bodies.h"
#include "handlers/request_json.h"

#include <stdio.h>
#include <string.h>

static const char *edge_kind(enum link_edge_kind k)
{
	return k == LINK_EDGE_FOREIGN_KEY ? "foreign_key" : "inferred";
}

static const char *table_name(const struct schema *s, int t)
{
	return s->tables[t].api_name;
}

static json_t *table_reasons(const struct link_result *r, const struct link_table *lt)
{
	const struct schema *s = r->index->schema;
	json_t *reasons = json_array();
	char text[512];
	if (lt->reasons & LINK_BY_RETRIEVAL) {
		const struct link_column_ref *c = &r->index->columns[lt->best_column];
		snprintf(text, sizeof(text), "retrieval: column %s scores %.3f", s->tables[c->table].columns[c->column].name,
			 lt->score);
		json_array_append_new(reasons, json_string(text));
	}
	if (lt->reasons & LINK_BY_LLM) {
		snprintf(text, sizeof(text), "link model: named in %d of %d answers%s", lt->votes, r->answers,
			 lt->low_votes ? ", fewer than link.llm_min_vote_share: its best columns only"
			 : lt->whole   ? ": all its columns"
				       : "");
		json_array_append_new(reasons, json_string(text));
	}
	if (lt->reasons & LINK_BY_VALUE)
		json_array_append_new(reasons, json_string("values: the question names values stored in it"));
	if (lt->reasons & LINK_BY_BRIDGE)
		json_array_append_new(reasons, json_string("join scaffold: connects required tables"));
	return reasons;
}

static json_t *column_ref(const struct schema *s, int table, int column)
{
	return json_pack("{s:s, s:s}", "table", table_name(s, table), "column",
			 s->tables[table].columns[column].name);
}

/* {budget_tokens, estimated_tokens, cut: [{table, column, score}]}: what the column budget did. */
static json_t *column_budget_json(const struct link_result *r)
{
	const struct schema *s = r->index->schema;
	json_t *cut = json_array();
	for (size_t i = 0; i < r->n_cut; i++) {
		json_t *o = column_ref(s, r->cut[i].table, r->cut[i].column);
		json_object_set_new(o, "score", json_real(r->cut[i].score));
		json_array_append_new(cut, o);
	}
	return json_pack("{s:I, s:I, s:o}", "budget_tokens", (json_int_t)r->column_budget_tokens, "estimated_tokens",
			 (json_int_t)r->column_tokens, "cut", cut);
}

/* {left, right, kind, cost} of edge e of idx. */
static json_t *join_json(const struct column_index *idx, size_t e)
{
	const struct schema *s = idx->schema;
	const struct link_edge *edge = &idx->edges[e];
	return json_pack("{s:o, s:o, s:s, s:f}", "left", column_ref(s, edge->left_table, edge->left_column), "right",
			 column_ref(s, edge->right_table, edge->right_column), "kind", edge_kind(edge->kind), "cost",
			 edge->cost);
}

static json_t *result_json(const char *database, const char *question, const char *evidence, const struct link_result *r,
			   bool built)
{
	const struct column_index *idx = r->index;
	const struct schema *s = idx->schema;
	json_t *tables = json_array(), *columns = json_array(), *joins = json_array(), *alternative_joins = json_array();
	json_t *disconnected = json_array(), *unknown = json_array();
	for (size_t i = 0; i < r->n_tables; i++) {
		const struct link_table *t = &r->tables[i];
		json_t *o = json_pack("{s:s, s:f, s:o}", "name", table_name(s, t->table), "score",
				      t->score, "reasons", table_reasons(r, t));
		if (r->shuffles) {
			json_object_set_new(o, "votes", json_integer(t->votes));
			json_object_set_new(o, "low_votes", json_boolean(t->low_votes));
		}
		json_array_append_new(tables, o);
	}
	for (size_t i = 0; i < r->n_columns; i++) {
		const struct link_column *c = &r->columns[i];
		json_t *o = column_ref(s, c->table, c->column);
		json_object_set_new(o, "score", json_real(c->score));
		json_array_append_new(columns, o);
	}
	for (size_t i = 0; i < r->n_joins; i++)
		json_array_append_new(joins, join_json(idx, r->joins[i]));
	for (size_t i = 0; i < r->n_alternative_joins; i++)
		json_array_append_new(alternative_joins, join_json(idx, r->alternative_joins[i]));
	for (size_t i = 0; i < r->n_disconnected; i++)
		json_array_append_new(disconnected, json_string(table_name(s, r->disconnected[i])));
	for (size_t i = 0; i < r->n_unknown; i++)
		json_array_append_new(unknown, json_string(r->unknown_names[i]));
	json_t *timings = json_pack("{s:f, s:f, s:f, s:f, s:f}", "total", r->ms_total, "embed", r->ms_embed, "retrieve",
				    r->ms_retrieve, "llm", r->ms_llm, "steiner", r->ms_steiner);
	if (built)
		json_object_set_new(timings, "index_build", json_real(idx->build_ms));
	json_t *out = json_pack(
		"{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:{s:I, s:I}, s:o, s:{s:s, s:I, s:I, s:b, s:s*, s:I, s:I}}",
		"database", database, "question", question, "mode", link_mode_name(r->mode), "schema_hash", s->hash,
		"tables", tables, "columns", columns, "joins", joins, "alternative_joins", alternative_joins,
		"disconnected", disconnected, "unknown_tables",
		unknown, "model_calls", r->model_calls, "tokens", "prompt", (json_int_t)r->prompt_tokens, "completion",
		(json_int_t)r->completion_tokens, "timings_ms", timings, "index", "embedder", idx->lexical.id, "columns",
		(json_int_t)idx->n_columns, "edges", (json_int_t)idx->n_edges, "built_now", built, "remote_embedder",
		idx->remote_vectors ? idx->remote_id : NULL, "remote_cache_hits", (json_int_t)idx->remote_cache_hits,
		"remote_cache_misses", (json_int_t)idx->remote_cache_misses);
	if (out && r->fallback)
		json_object_set_new(out, "fallback", json_string(r->fallback));
	if (out)
		json_object_set_new(out, "fallbacks", fallback_json(r->fallbacks, r->n_fallbacks));
	if (out && evidence)
		json_object_set_new(out, "user_evidence", json_string(evidence));
	if (out && r->shuffles)
		json_object_set_new(out, "column_budget", column_budget_json(r));
	return out;
}

void handle_link(struct http_request *req, struct http_response *res)
{
	struct app *app = req->app;
	struct t2s_error err = {0};
	json_t *body = NULL;
	struct link_body b = {.mode = (int)app->link_default_mode};
	struct catalog_db *db;
	struct schema *s = NULL;
	struct column_index *idx = NULL;
	struct link_result result;
	bool built = false;
	if (link_body_read(req, &b, &body, &err) < 0)
		goto fail;
	if (request_database(req, b.database, &db, &err) < 0 || catalog_db_schema(db, &s, &err) < 0 ||
	    column_index_registry_get(app->links, s, &idx, &built, &err) < 0)
		goto fail;
	struct value_index *vi = value_registry_get(app->values, db, s, NULL); /* NULL while it builds */
	struct link_request rq = {.question = b.question, .evidence = b.evidence, .mode = (enum link_mode)b.mode, .top_k = (int)b.top_k, .values = vi};
	int rc = link_run(idx, &app->link_params, app_model(app, MODEL_STAGE_LINK), app_model(app, MODEL_STAGE_EMBED), &rq,
			  &result, &err);
	value_index_unref(vi);
	if (rc < 0)
		goto fail;
	http_reply_json(res, 200, result_json(b.database, b.question, b.evidence, &result, built));
	link_result_release(&result);
	column_index_unref(idx);
	schema_unref(s);
	json_decref(body);
	return;
fail:
	http_reply_error(res, req, &err);
	column_index_unref(idx);
	schema_unref(s);
	json_decref(body);
}
