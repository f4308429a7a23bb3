/*
 * test_column_index.c - the schema graph of the linking index, built from a
 * real SQLite file: declared, name-inferred and value-inclusion joins.
 */
#include "pipeline/db/db.h"
#include "pipeline/db/introspect.h"
#include "pipeline/link/column_index.h"
#include "tests/unit/tap.h"

#include <sqlite3.h>
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
	schema_unref(s);
	db_pool_release(&pool);
	unlink(path);
	return tap_done();
}
