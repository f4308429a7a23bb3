/*
 * state_versions.c - the versions record kind: per database, how often its
 * examples and overrides changed (triggers of the store's own schema bump
 * it) and how many refreshes were asked for (see state_store.h).
 */
#include "pipeline/store/state_store_internal.h"

#include <stddef.h>

static const struct field version_fields[] = {
	{offsetof(struct state_version, database), FIELD_TEXT},
	{offsetof(struct state_version, version), FIELD_I64},
	{offsetof(struct state_version, refreshes), FIELD_I64},
};

/* Move r into the struct state_versions at ret. */
static void take_versions(struct rows *r, void *ret)
{
	struct state_versions *l = ret;
	*l = (struct state_versions){.arena = r->arena, .items = r->items, .n = r->n};
}

static const struct row_kind version_rows =
	ROW_KIND("version", "versions", struct state_version, version_fields, take_versions);

void state_versions_release(struct state_versions *l)
{
	if (l)
		store_list_release(&l->arena, l, sizeof(*l));
}

int state_store_versions(struct state_store *s, struct state_versions *ret, struct t2s_error *err)
{
	static const struct rows_query q = {
		.lite = "SELECT db_name, version, refreshes FROM state_versions ORDER BY db_name",
		.pg = "SELECT db_name, version, refreshes FROM state_versions ORDER BY db_name COLLATE \"C\"",
	};
	return store_rows_read(s, &version_rows, &q, NULL, NULL, ret, err);
}

int state_store_refresh_note(struct state_store *s, const char *database, int64_t *ret_refreshes,
			     struct t2s_error *err)
{
	int rc = store_check_database(database, err);
	if (rc < 0)
		return rc;
	struct param p = P_TEXT(database);
	struct session x;
	int64_t n = 0;
	if ((rc = store_session_open(s, true, &x, err)) < 0)
		return rc;
	rc = store_session_exec(&x,
				"INSERT INTO state_versions AS v (db_name, refreshes) VALUES ($1, 1)"
				" ON CONFLICT (db_name) DO UPDATE SET refreshes = v.refreshes + 1 RETURNING refreshes",
				NULL, &p, 1, store_row_i64, &n, NULL, err);
	rc = store_session_close(&x, rc, err);
	if (rc == 0 && ret_refreshes)
		*ret_refreshes = n;
	return rc;
}
