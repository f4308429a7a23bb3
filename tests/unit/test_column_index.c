/*
 * test_column_index.c - the schema graph of the linking index, built from a
 * real SQLite file: declared, name-inferred and value-inclusion joins; and
 * the remote column vectors, embedded in batches through the model-server
 * stub (tests/stub/model_stub.py) with an in-process cache: exact batch
 * boundaries, a warm cache, a failed batch and a later retry, a server whose
 * dimension no longer matches the cache, and a dimension change within one
 * build; the lexical vectors with WordNet: columns of one name share their
 * name's expansion, and the stored parts add up to the unit vector.
 */
#include "pipeline/db/db.h"
#include "pipeline/db/introspect.h"
#include "pipeline/link/column_index.h"
#include "pipeline/models/embed_cache.h"
#include "pipeline/text/wordnet.h"
#include "tests/unit/stub_process.h"
#include "tests/unit/tap.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char fixture_sql[] =
	"CREATE TABLE ports (code TEXT PRIMARY KEY, city TEXT);"
	"INSERT INTO ports VALUES ('AXQ7','Oslo'),('BQZ2','Rome'),('CZW9','Lima'),('DWX4','Kyiv'),('EVY1','Baku');"
	"CREATE TABLE shipments (shipment_no INTEGER PRIMARY KEY, destination TEXT, weight INTEGER);"
	"INSERT INTO shipments VALUES (1,'BQZ2',10),(2,'AXQ7',20),(3,'CZW9',30),(4,'BQZ2',40);"
	"CREATE TABLE owners (owner_id INTEGER PRIMARY KEY, name TEXT);"
	"INSERT INTO owners VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d');"
	"CREATE TABLE boats (boat_id INTEGER PRIMARY KEY, owner_id INTEGER, crew INTEGER);"
	"INSERT INTO boats VALUES (1,1,2),(2,2,3),(3,3,4),(4,4,1);"
	"CREATE TABLE crews (crew_id INTEGER PRIMARY KEY, boat INTEGER REFERENCES boats(boat_id));"
	"INSERT INTO crews VALUES (1,1),(2,2),(3,3);"
	"CREATE TABLE berths (berth_no INTEGER PRIMARY KEY, code TEXT);"
	"INSERT INTO berths VALUES (1,'AXQ7'),(2,'EVY1');";

static const struct link_edge *edge_between(const struct column_index *idx, const char *a, const char *b)
{
	const struct schema *s = idx->schema;
	for (size_t i = 0; i < idx->n_edges; i++) {
		const char *l = s->tables[idx->edges[i].left_table].name, *r = s->tables[idx->edges[i].right_table].name;
		if ((!strcmp(l, a) && !strcmp(r, b)) || (!strcmp(l, b) && !strcmp(r, a)))
			return &idx->edges[i];
	}
	return NULL;
}

/* ---- remote vectors in batches ---- */

static struct stub_process stub = {.pid = -1};

/* A SQLite file with one table of n TEXT columns named field_0 .. field_<n-1>; its schema into *ret. */
static int wide_schema(int n, struct schema **ret)
{
	char path[] = "/tmp/t2s-link-wide-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	char sql[8192];
	int len = snprintf(sql, sizeof(sql), "CREATE TABLE wide (");
	for (int i = 0; i < n; i++)
		len += snprintf(sql + len, sizeof(sql) - (size_t)len, "%sfield_%d TEXT", i ? ", " : "", i);
	snprintf(sql + len, sizeof(sql) - (size_t)len, ");");
	sqlite3 *w = NULL;
	int rc = sqlite3_open(path, &w) == SQLITE_OK && sqlite3_exec(w, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
	sqlite3_close(w);
	struct db_pool pool;
	struct db_conn *c = NULL;
	struct t2s_error err = {0};
	struct introspect_options io = {.database = "wide", .sample_values = 5, .sample_rows = 10,
					.sample_value_max_len = 64, .timeout_ms = 5000, .row_count_scan_limit = 1000};
	if (rc == 0)
		rc = db_pool_init(&pool, DB_ENGINE_SQLITE, path, 1, 1000, 5);
	if (rc == 0) {
		rc = db_pool_acquire(&pool, &c, &err);
		if (rc == 0) {
			rc = introspect_sqlite(c, &io, ret, &err);
			db_pool_put(&pool, c, false);
		}
		db_pool_release(&pool);
	}
	unlink(path);
	return rc;
}

static void set_rules(const char *rules)
{
	json_decref(stub_process_call(&stub, "/_stub/reset", "{}"));
	json_decref(stub_process_call(&stub, "/_stub/rules", rules));
}

/* Number of documents in each /v1/embeddings request since the last reset, as "64,64,2". */
static void batch_sizes(char *buf, size_t size)
{
	json_t *all = stub_process_call(&stub, "/_stub/requests", NULL), *r;
	size_t i, len = 0;
	buf[0] = '\0';
	json_array_foreach(json_object_get(all, "requests"), i, r)
	{
		if (strcmp(json_string_value(json_object_get(r, "path")) ?: "", "/v1/embeddings") != 0)
			continue;
		json_t *input = json_object_get(json_object_get(r, "body"), "input");
		len += (size_t)snprintf(buf + len, size - len, "%s%zu", len ? "," : "", json_array_size(input));
		if (len >= size)
			break;
	}
	json_decref(all);
}

/* Build the index of a wide schema of n columns with the stub's rules; its remote counters and the batch sizes. */
struct remote_run {
	int rc;
	struct t2s_error err;
	size_t calls, hits, misses, dim;
	char batches[256];
};

static struct remote_run remote_build(int n, const struct model_endpoint *ep, struct embed_cache *cache,
				      const char *rules)
{
	struct remote_run r = {.rc = -1};
	struct schema *s = NULL;
	struct column_index *idx = NULL;
	struct column_index_options lo = {.weights = {0.4, 0.4, 0.2}, .embed_model = ep, .cache = cache};
	set_rules(rules); /* also forgets earlier requests */
	if (wide_schema(n, &s) < 0)
		return r;
	r.rc = column_index_build(s, &lo, &idx, &r.err);
	if (r.rc == 0) {
		r.calls = idx->remote_calls;
		r.hits = idx->remote_cache_hits;
		r.misses = idx->remote_cache_misses;
		r.dim = idx->remote_dim;
	}
	batch_sizes(r.batches, sizeof(r.batches));
	column_index_unref(idx);
	schema_unref(s);
	return r;
}

static void test_remote_batches(void)
{
	if (stub_process_start(&stub, NULL) < 0) {
		TAP_OK(0, "model_stub_starts");
		return;
	}
	struct model_endpoint ep = {.stage = "embed", .base_url = stub.base_url, .model = "emb", .timeout_ms = 10000,
				    .retries = 0};
	struct embed_cache *cache = NULL;
	struct t2s_error err;
	if (embed_cache_new(&(struct embed_cache_options){0}, &cache, &err) < 0) {
		TAP_OK(0, "embed_cache_created");
		stub_process_stop(&stub);
		return;
	}
	struct remote_run r = remote_build(128, &ep, NULL, "[]");
	TAP_OK(r.rc == 0 && r.calls == 2 && r.misses == 128 && r.dim == 64, "remote_exact_multiple_of_the_batch_is_two_calls");
	TAP_STR_EQ(r.batches, "64,64", "remote_batches_are_full_with_no_empty_last_call");
	r = remote_build(130, &ep, NULL, "[]");
	TAP_STR_EQ(r.batches, "64,64,2", "remote_last_batch_holds_the_remainder");

	/* A failed batch fails the build; the batches before it are cached, and a retry embeds only the rest. */
	set_rules("[{\"match\": {\"path\": \"/v1/embeddings\"}, \"respond\": {\"times\": 1}},"
				      " {\"match\": {\"path\": \"/v1/embeddings\"}, \"respond\": {\"status\": 500}}]");
	struct schema *s = NULL;
	struct column_index *idx = NULL;
	struct column_index_options lo = {.weights = {0.4, 0.4, 0.2}, .embed_model = &ep, .cache = cache};
	int rc = wide_schema(128, &s) == 0 ? column_index_build(s, &lo, &idx, &err) : 0;
	TAP_OK(rc < 0 && idx == NULL, "remote_failed_batch_fails_the_build");
	schema_unref(s);
	r = remote_build(128, &ep, cache, "[]");
	TAP_OK(r.rc == 0 && r.hits == 64 && r.misses == 64 && r.calls == 1, "remote_retry_embeds_only_what_failed");
	TAP_STR_EQ(r.batches, "64", "remote_retry_sends_one_batch");

	/* The server answers another dimension than the cache holds: everything is embedded again. */
	r = remote_build(129, &ep, cache, "[]");
	TAP_OK(r.rc == 0 && r.hits == 128 && r.misses == 1 && r.calls == 1, "remote_warm_cache_embeds_only_the_new_column");
	r = remote_build(130, &ep, cache, "[{\"match\": {\"path\": \"/v1/embeddings\"}, \"respond\": {\"dim\": 32}}]");
	TAP_OK(r.rc == 0 && r.dim == 32 && r.hits == 0 && r.misses == 130 && r.calls == 4,
	       "remote_changed_dimension_re_embeds_every_column");
	TAP_STR_EQ(r.batches, "1,64,64,2", "remote_re_embedding_restarts_at_the_first_batch");

	/* A dimension change within a build that embeds everything is an error. */
	r = remote_build(130, &ep, NULL,
			 "[{\"match\": {\"path\": \"/v1/embeddings\"}, \"respond\": {\"dim\": 16, \"times\": 1}}]");
	TAP_OK(r.rc == -T2S_ERR_UPSTREAM && strstr(r.err.message, "from 16 to 64") && r.calls == 0,
	       "remote_dimension_change_within_a_cold_build_is_an_error");
	TAP_STR_EQ(r.batches, "64,64", "remote_cold_build_stops_at_the_changed_batch");

	embed_cache_free(cache);
	stub_process_stop(&stub);
}

/* ---- lexical vectors with WordNet ---- */

static size_t column_at(const struct column_index *idx, const char *table, const char *column)
{
	const struct schema *s = idx->schema;
	for (size_t i = 0; i < idx->n_columns; i++)
		if (!strcmp(s->tables[idx->columns[i].table].name, table) &&
		    !strcmp(s->tables[idx->columns[i].table].columns[idx->columns[i].column].name, column))
			return i;
	return (size_t)-1;
}

static void test_shared_expansions(struct schema *s)
{
	struct wordnet *wn = NULL;
	struct t2s_error err = {0};
	if (wordnet_load(NULL, &wn, &err) < 0) {
		TAP_OK(0, "wordnet_loads_for_the_expanded_vectors");
		return;
	}
	struct column_index_options lo = {.weights = {0.4, 0.4, 0.2}, .wordnet = wn};
	struct column_index *idx = NULL;
	int rc = column_index_build(s, &lo, &idx, &err);
	TAP_INT_EQ(rc, 0, "index_builds_with_wordnet");
	if (rc == 0) {
		size_t a = column_at(idx, "ports", "code"), b = column_at(idx, "berths", "code");
		TAP_OK(a != (size_t)-1 && b != (size_t)-1 && idx->column_expansion[a] >= 0 &&
			       idx->column_expansion[a] == idx->column_expansion[b],
		       "columns_of_one_name_share_its_expansion");
		TAP_OK(idx->n_expansions < idx->n_columns, "expansions_are_stored_once_per_name");
		/* Each column's whole vector (document part + scaled expansion) is a unit vector: scored
		   against itself it gives 1, and both scorers agree. */
		unsigned dim = idx->lexical.dim;
		float *v = malloc(dim * sizeof(float));
		double *all = malloc(idx->n_columns * sizeof(double));
		bool unit = v && all, agree = unit;
		for (size_t i = 0; unit && i < idx->n_columns; i++) {
			memset(v, 0, dim * sizeof(float));
			const struct embed_sparse *d = &idx->column_vectors[i];
			for (size_t k = 0; k < d->nnz; k++)
				v[d->idx[k]] += d->val[k];
			int e = idx->column_expansion[i];
			for (size_t k = 0; e >= 0 && k < idx->expansions[e].nnz; k++)
				v[idx->expansions[e].idx[k]] += idx->column_expansion_scale[i] * idx->expansions[e].val[k];
			double n2 = 0;
			for (unsigned k = 0; k < dim; k++)
				n2 += (double)v[k] * v[k];
			unit = fabs(n2 - 1.0) < 1e-4 && fabs(column_index_lexical_score(idx, i, v) - 1.0) < 1e-4;
			if (unit && column_index_lexical_scores(idx, v, all) == 0)
				agree = agree && fabs(all[i] - column_index_lexical_score(idx, i, v)) < 1e-9;
		}
		TAP_OK(unit, "expanded_column_vectors_are_unit_vectors");
		TAP_OK(agree, "all_columns_scorer_matches_the_one_column_scorer");
		free(v);
		free(all);
	}
	column_index_unref(idx);
	wordnet_free(wn);
}

int main(void)
{
	char path[] = "/tmp/t2s-link-index-XXXXXX";
	int fd = mkstemp(path);
	sqlite3 *w = NULL;
	if (fd < 0 || sqlite3_open(path, &w) != SQLITE_OK || sqlite3_exec(w, fixture_sql, NULL, NULL, NULL) != SQLITE_OK) {
		TAP_OK(0, "fixture_database_written");
		return tap_done();
	}
	sqlite3_close(w);
	close(fd);

	struct db_pool pool;
	struct db_conn *c = NULL;
	struct schema *s = NULL;
	struct column_index *idx = NULL;
	struct t2s_error err = {0};
	struct introspect_options io = {.database = "fx", .sample_values = 5, .sample_rows = 1000,
					.sample_value_max_len = 64, .timeout_ms = 5000, .row_count_scan_limit = 100000};
	struct column_index_options lo = {.weights = {0.4, 0.4, 0.2}};
	int rc = db_pool_init(&pool, DB_ENGINE_SQLITE, path, 1, 1000, 5);
	if (rc == 0)
		rc = db_pool_acquire(&pool, &c, &err);
	if (rc == 0)
		rc = introspect_sqlite(c, &io, &s, &err);
	if (c)
		db_pool_put(&pool, c, false);
	if (rc == 0)
		rc = column_index_build(s, &lo, &idx, &err);
	TAP_INT_EQ(rc, 0, "index_builds_from_an_introspected_schema");
	if (rc == 0) {
		const struct link_edge *e = edge_between(idx, "shipments", "ports");
		TAP_OK(e && e->kind == LINK_EDGE_VALUE_INCLUSION, "distinctive_values_included_in_a_key_give_an_inferred_join");
		TAP_OK(e && e->connect > 0.5 && e->cost > 0, "value_inclusion_join_costs_more_than_a_declared_key");
		const struct link_edge *o = edge_between(idx, "boats", "owners");
		TAP_OK(o && o->kind == LINK_EDGE_NAME_TO_KEY, "x_id_column_joins_table_x_key");
		const struct link_edge *b = edge_between(idx, "berths", "ports");
		TAP_OK(b && b->kind == LINK_EDGE_SAME_NAME, "same_name_as_another_table_key_gives_an_inferred_join");
		TAP_OK(!edge_between(idx, "boats", "crews") || edge_between(idx, "boats", "crews")->kind == LINK_EDGE_FOREIGN_KEY,
		       "declared_foreign_key_is_kept_as_declared");
		TAP_OK(!edge_between(idx, "owners", "crews"), "small_integers_alone_infer_no_join");
		TAP_OK(edge_between(idx, "crews", "boats") && edge_between(idx, "crews", "boats")->connect == 0.0,
		       "declared_foreign_key_has_no_connect_cost");
	}
	column_index_unref(idx);
	if (s)
		test_shared_expansions(s);
	schema_unref(s);
	db_pool_release(&pool);
	unlink(path);
	test_remote_batches();
	return tap_done();
}
