/*
 * state_overrides.c - the description overrides record kind: a user's text
 * for a table or a column, keyed by names so that it outlives schema
 * refreshes (see state_store.h).
 */
#include "pipeline/store/state_store_internal.h"

#include <stddef.h>

static const struct field override_fields[] = DESCRIPTION_FIELDS(struct state_override, updated_at);

/* Move r into the struct state_overrides at ret. */
static void take_overrides(struct rows *r, void *ret)
{
	struct state_overrides *l = ret;
	*l = (struct state_overrides){.arena = r->arena, .items = r->items, .n = r->n};
}

static const struct row_kind override_rows =
	ROW_KIND("override", "overrides", struct state_override, override_fields, take_overrides);

void state_overrides_release(struct state_overrides *l)
{
	if (l)
		store_list_release(&l->arena, l, sizeof(*l));
}

int state_store_override_put(struct state_store *s, const char *database, const char *table, const char *column,
			     const char *text, struct t2s_error *err)
{
	int rc = store_check_database(database, err);
	if (rc == 0)
		rc = store_check_target(table, column, err);
	if (rc == 0)
		rc = store_check_text("text", text, STATE_TEXT_MAX, false, err);
	if (rc < 0)
		return rc;
	struct param p[] = {P_TEXT(database), P_TEXT(table), P_TEXT(column ? column : ""), P_TEXT(text)};
	int64_t exists = 0, count = 0;
	struct session x;
	if ((rc = store_session_open(s, true, &x, err)) < 0)
		return rc;
	rc = store_lock_database(&x, LOCK_OVERRIDES, database, err);
	if (rc == 0)
		rc = store_session_exec(&x,
					"SELECT count(*) FROM description_overrides"
					" WHERE db_name = $1 AND table_name = $2 AND column_name = $3",
					NULL, p, 3, store_row_i64, &exists, NULL, err);
	if (rc == 0 && !exists)
		rc = store_session_exec(&x, "SELECT count(*) FROM description_overrides WHERE db_name = $1", NULL, p, 1,
					store_row_i64, &count, NULL, err);
	if (rc == 0 && count >= STATE_OVERRIDES_MAX)
		rc = t2s_error_set(err, T2S_ERR_INVALID,
				   "the database already holds the maximum of %ld description overrides",
				   STATE_OVERRIDES_MAX);
	if (rc == 0)
		rc = store_session_exec(&x,
					"INSERT INTO description_overrides (db_name, table_name, column_name, text, updated_at)"
					" VALUES ($1, $2, $3, $4, " NOW_LITE ")"
					" ON CONFLICT (db_name, table_name, column_name)"
					" DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
					"INSERT INTO description_overrides (db_name, table_name, column_name, text, updated_at)"
					" VALUES ($1, $2, $3, $4, now())"
					" ON CONFLICT (db_name, table_name, column_name)"
					" DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
					p, 4, NULL, NULL, NULL, err);
	return store_session_close(&x, rc, err);
}

int state_store_override_delete(struct state_store *s, const char *database, const char *table,
				const char *column, struct t2s_error *err)
{
	int rc = store_check_database(database, err);
	if (rc == 0)
		rc = store_check_target(table, column, err);
	if (rc < 0)
		return rc;
	struct param p[] = {P_TEXT(database), P_TEXT(table), P_TEXT(column ? column : "")};
	int64_t changed = 0;
	rc = store_exec_one(s, true,
			    "DELETE FROM description_overrides WHERE db_name = $1 AND table_name = $2 AND column_name = $3",
			    NULL, p, 3, &changed, err);
	if (rc == 0 && changed == 0)
		rc = t2s_error_set(err, T2S_ERR_NOT_FOUND, "no description override for this %s",
				   column ? "column" : "table");
	return rc;
}

int state_store_overrides_list(struct state_store *s, const char *database, struct state_overrides *ret,
			       struct t2s_error *err)
{
	static const struct rows_query q = {
		.lite = "SELECT table_name, column_name, text, updated_at FROM description_overrides"
			" WHERE db_name = $1 ORDER BY table_name, column_name",
		.pg = "SELECT table_name, column_name, text, " TS_PG("updated_at") " FROM description_overrides"
		      " WHERE db_name = $1 ORDER BY table_name COLLATE \"C\", column_name COLLATE \"C\"",
		.np = 1,
	};
	int rc = store_check_database(database, err);
	if (rc < 0)
		return rc;
	struct param p = P_TEXT(database);
	return store_rows_read(s, &override_rows, &q, &p, NULL, ret, err);
}
