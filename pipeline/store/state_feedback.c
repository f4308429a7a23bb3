/*
 * state_feedback.c - the feedback record kind: a user's verdict on an
 * answer; a correct one also becomes an example in the same transaction
 * (see state_store.h).
 */
#include "pipeline/store/state_store_internal.h"

#include <stddef.h>
#include <stdio.h>

#define FEEDBACK_COLS_LITE "id, db_name, question, sql_text, correct, note, example_id, created_at"
#define FEEDBACK_COLS_PG "id, db_name, question, sql_text, correct, note, example_id, " TS_PG("created_at")
/* NULL parameters match everything: one statement per engine for every filter. */
#define FEEDBACK_WHERE_LITE " WHERE ($1 IS NULL OR db_name = $1) AND ($2 IS NULL OR correct = $2)"
#define FEEDBACK_WHERE_PG " WHERE ($1::text IS NULL OR db_name = $1) AND ($2::int IS NULL OR correct = $2)"

/* The bytes a feedback row stores, with a dialect's BYTES_* (state_store_internal.h). */
#define FEEDBACK_BYTES(bytes) bytes("db_name") " + " bytes("question") " + " bytes("sql_text") " + coalesce(" bytes("note") ", 0)"

/* The columns of FEEDBACK_COLS_*, in order. */
static const struct field feedback_fields[] = {
	{offsetof(struct state_feedback, id), FIELD_I64},
	{offsetof(struct state_feedback, database), FIELD_TEXT},
	{offsetof(struct state_feedback, question), FIELD_TEXT},
	{offsetof(struct state_feedback, sql), FIELD_TEXT},
	{offsetof(struct state_feedback, correct), FIELD_BOOL},
	{offsetof(struct state_feedback, note), FIELD_TEXT},
	{offsetof(struct state_feedback, example_id), FIELD_I64},
	{offsetof(struct state_feedback, created_at), FIELD_TEXT},
};

/* Move r into the struct state_feedbacks at ret. */
static void take_feedback(struct rows *r, void *ret)
{
	struct state_feedbacks *l = ret;
	*l = (struct state_feedbacks){.arena = r->arena, .items = r->items, .n = r->n, .total = r->total};
}

static const struct row_kind feedback_rows =
	ROW_KIND("feedback", "feedback", struct state_feedback, feedback_fields, take_feedback);

void state_feedbacks_release(struct state_feedbacks *l)
{
	if (l)
		store_list_release(&l->arena, l, sizeof(*l));
}

int state_store_feedback_add(struct state_store *s, const char *database, const char *question, const char *sql,
			     bool correct, const char *note, int64_t *ret_id, int64_t *ret_example_id,
			     struct t2s_error *err)
{
	int rc = store_check_database(database, err);
	if (rc == 0)
		rc = store_check_text("question", question, STATE_QUESTION_MAX, false, err);
	if (rc == 0)
		rc = store_check_text("sql", sql, STATE_SQL_MAX, false, err);
	if (rc == 0 && note)
		rc = store_check_text("note", note, STATE_NOTE_MAX, true, err);
	if (rc < 0)
		return rc;
	struct session x;
	if ((rc = store_session_open(s, true, &x, err)) < 0)
		return rc;
	int64_t example_id = 0, id = 0;
	rc = store_check_quota(&x, LOCK_FEEDBACK, "feedback", database, s->opt.max_feedback_per_database,
			       "feedback entries", err);
	if (rc == 0 && correct) {
		struct param q[] = {P_TEXT(database), P_TEXT(question), P_TEXT(sql)};
		rc = store_lock_database(&x, LOCK_EXAMPLES, database, err);
		if (rc == 0)
			rc = store_session_exec(&x,
						"SELECT id FROM examples WHERE db_name = $1 AND question = $2 AND sql_text = $3"
						" ORDER BY id LIMIT 1",
						NULL, q, 3, store_row_i64, &example_id, NULL, err);
		if (rc == 0 && !example_id)
			rc = store_example_insert(&x, database, question, sql, &example_id, err);
	}
	struct param p[] = {P_TEXT(database), P_TEXT(question), P_TEXT(sql), P_NUM(correct ? 1 : 0), P_TEXT(note),
			    correct ? P_NUM(example_id) : P_TEXT(NULL)};
	if (rc == 0)
		rc = store_session_exec(&x,
					"INSERT INTO feedback (db_name, question, sql_text, correct, note, example_id)"
					" VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
					NULL, p, 6, store_row_i64, &id, NULL, err);
	rc = store_session_close(&x, rc, err);
	if (rc == 0) {
		*ret_id = id;
		*ret_example_id = example_id;
	}
	return rc;
}

int state_store_feedback_get(struct state_store *s, int64_t id, struct state_feedbacks *ret, struct t2s_error *err)
{
	static const struct rows_query q = {
		.lite = "SELECT " FEEDBACK_COLS_LITE " FROM feedback WHERE id = $1",
		.pg = "SELECT " FEEDBACK_COLS_PG " FROM feedback WHERE id = $1",
		.np = 1,
	};
	struct param p = P_NUM(id);
	char absent[64];
	snprintf(absent, sizeof(absent), "no feedback with id %lld", (long long)id);
	return store_rows_read(s, &feedback_rows, &q, &p, absent, ret, err);
}

int state_store_feedback_list(struct state_store *s, const char *database, int correct, long limit, long offset,
			      struct state_feedbacks *ret, struct t2s_error *err)
{
	static const struct rows_query q = {
		.count_lite = "SELECT count(*) FROM feedback" FEEDBACK_WHERE_LITE,
		.count_pg = "SELECT count(*) FROM feedback" FEEDBACK_WHERE_PG,
		.count_np = 2,
		.lite = "SELECT " FEEDBACK_COLS_LITE " FROM feedback" PAGE_WITHIN_BYTES(
			"SELECT id AS pid, " FEEDBACK_BYTES(BYTES_LITE) " AS sz FROM feedback" FEEDBACK_WHERE_LITE
			" ORDER BY id LIMIT $3 OFFSET $4", "$5"),
		.pg = "SELECT " FEEDBACK_COLS_PG " FROM feedback" PAGE_WITHIN_BYTES(
			"SELECT id AS pid, " FEEDBACK_BYTES(BYTES_PG) " AS sz FROM feedback" FEEDBACK_WHERE_PG
			" ORDER BY id LIMIT $3 OFFSET $4", "$5::bigint"),
		.np = 5,
	};
	int rc = database ? store_check_database(database, err) : 0;
	if (rc == 0)
		rc = store_check_page(limit, offset, err);
	if (rc < 0)
		return rc;
	struct param p[] = {P_TEXT(database), correct < 0 ? P_TEXT(NULL) : P_NUM(correct), P_NUM(limit), P_NUM(offset),
			    P_NUM(s->opt.max_page_bytes)};
	return store_rows_read(s, &feedback_rows, &q, p, NULL, ret, err);
}
