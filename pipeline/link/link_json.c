/*
 * link_json.c - a link result as JSON (see link_json.h).
 */
#include "pipeline/link/link_json.h"

#include <stdio.h>

static const char *table_name(const struct schema *s, int t)
{
	return s->tables[t].api_name;
}

/* Set key of o to the value v (the reference is taken); a NULL v (out of memory) leaves the key out. Returns o. */
static json_t *put(json_t *o, const char *key, json_t *v)
{
	if (o)
		json_object_set_new_nocheck(o, key, v);
	else
		json_decref(v);
	return o;
}

/* {table, column}; built with direct calls: a json_pack format is parsed anew on every call. */
static json_t *column_ref(const struct schema *s, int table, int column)
{
	json_t *o = json_object();
	put(o, "table", json_string(table_name(s, table)));
	return put(o, "column", json_string(s->tables[table].columns[column].name));
}

/* Why the table is linked, in words (one sentence per reason). */
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
	if (lt->reasons & LINK_BY_JOIN)
		json_array_append_new(reasons, json_string("join scaffold: holds a join column"));
	return reasons;
}

/* The same reasons as codes: retrieval, link_model, bridge, join, value. */
static json_t *reason_codes(unsigned reasons)
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

/* [{table, column, probability, features: {name: value}}]: the columns the fill weighed (link_request.features). */
static json_t *candidates_json(const struct link_result *r)
{
	const struct schema *s = r->index->schema;
	json_t *v = json_array();
	for (size_t i = 0; i < r->n_candidates; i++) {
		const struct link_candidate *c = &r->candidates[i];
		json_t *o = column_ref(s, c->table, c->column), *f = json_object();
		for (size_t k = 0; k < LINK_FEATURES; k++)
			json_object_set_new(f, link_feature_names[k], json_real(c->features[k]));
		json_object_set_new(o, "probability", json_real(c->probability));
		json_object_set_new(o, "features", f);
		json_array_append_new(v, o);
	}
	return v;
}

/* [{table, probability, decided, features: {name: value}}]: the tables the table scorer weighed. */
static json_t *table_candidates_json(const struct link_result *r)
{
	const struct schema *s = r->index->schema;
	json_t *v = json_array();
	for (size_t i = 0; i < r->n_table_candidates; i++) {
		const struct link_table_candidate *c = &r->table_candidates[i];
		json_t *o = json_object(), *f = json_object();
		for (size_t k = 0; k < LINK_TABLE_FEATURES; k++)
			json_object_set_new(f, link_table_feature_names[k], json_real(c->features[k]));
		json_object_set_new(o, "table", json_string(s->tables[c->table].name));
		json_object_set_new(o, "probability", json_real(c->probability));
		json_object_set_new(o, "decided", json_boolean(c->decided));
		json_object_set_new(o, "features", f);
		json_array_append_new(v, o);
	}
	return v;
}

/* {left, right, kind, cost} of edge e of idx. */
static json_t *join_json(const struct column_index *idx, size_t e)
{
	const struct schema *s = idx->schema;
	const struct link_edge *edge = &idx->edges[e];
	json_t *o = json_object();
	put(o, "left", column_ref(s, edge->left_table, edge->left_column));
	put(o, "right", column_ref(s, edge->right_table, edge->right_column));
	put(o, "kind", json_string(edge->kind == LINK_EDGE_FOREIGN_KEY ? "foreign_key" : "inferred"));
	return put(o, "cost", json_real(edge->cost));
}

static json_t *tables_json(const struct link_result *r)
{
	const struct schema *s = r->index->schema;
	json_t *tables = json_array();
	for (size_t i = 0; i < r->n_tables; i++) {
		const struct link_table *t = &r->tables[i];
		json_t *o = json_object();
		put(o, "name", json_string(table_name(s, t->table)));
		put(o, "score", json_real(t->score));
		put(o, "reasons", table_reasons(r, t));
		put(o, "reason_codes", reason_codes(t->reasons));
		if (r->shuffles) {
			json_object_set_new(o, "votes", json_integer(t->votes));
			json_object_set_new(o, "low_votes", json_boolean(t->low_votes));
		}
		json_array_append_new(tables, o);
	}
	return tables;
}

json_t *link_result_json(const char *database, const char *question, const char *user_evidence,
			 const struct link_result *r, bool built_now)
{
	const struct column_index *idx = r->index;
	const struct schema *s = idx->schema;
	json_t *columns = json_array(), *joins = json_array(), *alternative_joins = json_array();
	json_t *disconnected = json_array(), *unknown = json_array();
	for (size_t i = 0; i < r->n_columns; i++) {
		const struct link_column *c = &r->columns[i];
		json_array_append_new(columns, put(column_ref(s, c->table, c->column), "score", json_real(c->score)));
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
	if (built_now)
		json_object_set_new(timings, "index_build", json_real(idx->build_ms));
	json_t *out = json_pack(
		"{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:{s:I, s:I}, s:o, s:{s:s, s:I, s:I, s:b, s:s*, s:I, s:I}}",
		"database", database, "question", question, "mode", link_mode_name(r->mode), "schema_hash", s->hash,
		"tables", tables_json(r), "columns", columns, "joins", joins, "alternative_joins", alternative_joins,
		"disconnected", disconnected, "unknown_tables", unknown, "model_calls", r->model_calls, "tokens", "prompt",
		(json_int_t)r->prompt_tokens, "completion", (json_int_t)r->completion_tokens, "timings_ms", timings, "index",
		"embedder", idx->lexical.id, "columns", (json_int_t)idx->n_columns, "edges", (json_int_t)idx->n_edges,
		"built_now", built_now, "remote_embedder", idx->remote_vectors ? idx->remote_id : NULL,
		"remote_cache_hits", (json_int_t)idx->remote_cache_hits, "remote_cache_misses",
		(json_int_t)idx->remote_cache_misses);
	if (out && r->fallback)
		json_object_set_new(out, "fallback", json_string(r->fallback));
	if (out)
		json_object_set_new(out, "fallbacks", fallback_json(r->fallbacks, r->n_fallbacks));
	if (out)
		json_object_set_new(out, "relevance",
				    json_pack("{s:i, s:i, s:i, s:i, s:f}", "named", r->relevance.named, "stand_ins",
					      r->relevance.stand_ins, "values", r->relevance.values, "touched",
					      r->relevance.touched, "best_lexical",
					      r->relevance.best_lexical));
	if (out && user_evidence)
		json_object_set_new(out, "user_evidence", json_string(user_evidence));
	if (out && r->shuffles)
		json_object_set_new(out, "column_budget", column_budget_json(r));
	if (out)
		json_object_set_new(out, "fill", json_pack("{s:I, s:I}", "budget_tokens", (json_int_t)r->fill_budget_tokens,
							   "column_tokens", (json_int_t)r->column_tokens));
	if (out && r->candidates)
		json_object_set_new(out, "candidates", candidates_json(r));
	if (out && r->table_candidates)
		json_object_set_new(out, "table_candidates", table_candidates_json(r));
	return out;
}
