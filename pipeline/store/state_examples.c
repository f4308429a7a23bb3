/*
 * state_examples.c - the examples record kind: (id, question, sql,
 * created_at) per database, at most max_examples_per_database of them (see
 * state_store.h).
 */
#include "pipeline/store/state_store_internal.h"

#include <stddef.h>
#include <stdio.h>

#define EXAMPLE_COLS_LITE "id, question, sql_text, created_at"
#define EXAMPLE_COLS_PG "id, question, sql_text, " TS_PG("created_at")

/* The columns above, in order. */
static const struct field example_fields[] = {
	{offsetof(struct state_example, id), FIELD_I64},
	{offsetof(struct state_example, question), FIELD_TEXT},
	{offsetof(struct state_example, sql), FIELD_TEXT},
	{offsetof(struct state_example, created_at), FIELD_TEXT},
};

/* Move r into the struct state_examples at ret. */
static void take_examples(struct rows *r, void *ret)
{
	struct state_examples *l = ret;
	*l = (struct state_examples){.arena = r->arena, .items = r->items, .n = r->n, .total = r->total};
}

static const struct row_kind example_rows =
	ROW_KIND("example", "examples", struct state_example, example_fields, take_examples);

void state_examples_release(struct state_examples *l)
{
	if (l)
		store_list_release(&l->arena, l, sizeof(*l));
}

int store_example_insert(struct session *x, const char *database, const char *question, const char *sql,
			 int64_t *ret_id, struct t2s_error *err)
{
	struct param p[] = {P_TEXT(database), P_TEXT(question), P_TEXT(sql)};
	int rc = store_check_quota(x, LOCK_EXAMPLES, "examples", database, x->s->opt.max_examples_per_database,
				   "examples", err);
	if (rc == 0)
		rc = store_session_exec(x,
					"INSERT INTO examples (db_name, question, sql_text) VALUES ($1, $2, $3) RETURNING id",
					NULL, p, 3, store_row_i64, ret_id, NULL, err);
	return rc;
}

int state_store_example_add(struct state_store *s, const char *database, const char *question, const char *sql,
			    int64_t *ret_id, struct t2s_error *err)
{
	int rc = store_check_database(database, err);
	if (rc == 0)
		rc = store_check_text("question", question, STATE_QUESTION_MAX, false, err);
	if (rc == 0)
		rc = store_check_text("sql", sql, STATE_SQL_MAX, false, err);
	if (rc < 0)
		return rc;
	struct session x;
	if ((rc = store_session_open(s, true, &x, err)) < 0)
		return rc;
	int64_t id = 0;
	rc = store_example_insert(&x, database, question, sql, &id, err);
	rc = store_session_close(&x, rc, err);
	if (rc == 0)
		*ret_id = id;
	return rc;
}

int state_store_example_get(struct state_store *s, const char *database, int64_t id, struct state_examples *ret,
			    struct t2s_error *err)
{
	static const struct rows_query q = {
		.lite = "SELECT " EXAMPLE_COLS_LITE " FROM examples WHERE db_name = $1 AND id = $2",
		.pg = "SELECT " EXAMPLE_COLS_PG " FROM examples WHERE db_name = $1 AND id = $2",
		.np = 2,
	};
	int rc = store_check_database(database, err);
	if (rc < 0)
		return rc;
	struct param p[] = {P_TEXT(database), P_NUM(id)};
	char absent[64];
	snprintf(absent, sizeof(absent), "no example %lld in this database", (long long)id);
	return store_rows_read(s, &example_rows, &q, p, absent, ret, err);
}

int state_store_example_delete(struct state_store *s, const char *database, int64_t id, struct t2s_error *err)
{
	int rc = store_check_database(database, err);
	if (rc < 0)
		return rc;
	struct param p[] = {P_TEXT(database), P_NUM(id)};
	int64_t changed = 0;
	rc = store_exec_one(s, true, "DELETE FROM examples WHERE db_name = $1 AND id = $2", NULL, p, 2, &changed, err);
	if (rc == 0 && changed == 0)
		rc = t2s_error_set(err, T2S_ERR_NOT_FOUND, "no example %lld in this database", (long long)id);
	return rc;
}

int state_store_examples_list(struct state_store *s, const char *database, long limit, long offset,
			      struct state_examples *ret, struct t2s_error *err)
{
	static const struct rows_query q = {
		.count_lite = "SELECT count(*) FROM examples WHERE db_name = $1",
		.count_np = 1,
		.lite = "SELECT " EXAMPLE_COLS_LITE " FROM examples" PAGE_WITHIN_BYTES(
			"SELECT id AS pid, " BYTES_LITE("question") " + " BYTES_LITE("sql_text") " AS sz FROM examples"
			" WHERE db_name = $1 ORDER BY id LIMIT $2 OFFSET $3", "$4"),
		.pg = "SELECT " EXAMPLE_COLS_PG " FROM examples" PAGE_WITHIN_BYTES(
			"SELECT id AS pid, " BYTES_PG("question") " + " BYTES_PG("sql_text") " AS sz FROM examples"
			" WHERE db_name = $1 ORDER BY id LIMIT $2 OFFSET $3", "$4::bigint"),
		.np = 4,
	};
	int rc = store_check_database(database, err);
	if (rc == 0)
		rc = store_check_page(limit, offset, err);
	if (rc < 0)
		return rc;
	struct param p[] = {P_TEXT(database), P_NUM(limit), P_NUM(offset), P_NUM(s->opt.max_page_bytes)};
	return store_rows_read(s, &example_rows, &q, p, NULL, ret, err);
}

int state_store_examples_all(struct state_store *s, const char *database, bool with_sql,
			     struct state_examples *ret, struct t2s_error *err)
{
	static const struct rows_query with = {
		.lite = "SELECT " EXAMPLE_COLS_LITE " FROM examples WHERE db_name = $1 ORDER BY id",
		.pg = "SELECT " EXAMPLE_COLS_PG " FROM examples WHERE db_name = $1 ORDER BY id",
		.np = 1,
	};
	static const struct rows_query without = {
		.lite = "SELECT id, question, NULL, created_at FROM examples WHERE db_name = $1 ORDER BY id",
		.pg = "SELECT id, question, NULL, " TS_PG("created_at") " FROM examples WHERE db_name = $1 ORDER BY id",
		.np = 1,
	};
	int rc = store_check_database(database, err);
	if (rc < 0)
		return rc;
	struct param p = P_TEXT(database);
	return store_rows_read(s, &example_rows, with_sql ? &with : &without, &p, NULL, ret, err);
}
