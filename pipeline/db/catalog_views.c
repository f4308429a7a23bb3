/*
 * catalog_views.c - callers' views of a database's schema model (see
 * catalog_db_schema_granted in catalog.h, schema_grant.h): kept per grant
 * key beside the published model, under the database's lock, so that a
 * table-limited caller's requests share one view (and through its
 * index_name one column and one value index) instead of making their own.
 */
#include "pipeline/db/catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Does view (of some model) carry grant key? */
static bool view_has_key(const struct schema *view, const char *key)
{
	return view->grant_key && strcmp(view->grant_key, key) == 0;
}

/* Under db->lock: does key get indexes of its own (one of the first CATALOG_INDEXED_GRANTS_MAX seen)? */
static bool indexed_locked(struct catalog_db *db, const char *key)
{
	for (size_t i = 0; i < db->n_indexed_grants; i++)
		if (strcmp(db->indexed_grants[i], key) == 0)
			return true;
	if (db->n_indexed_grants == CATALOG_INDEXED_GRANTS_MAX)
		return false;
	snprintf(db->indexed_grants[db->n_indexed_grants++], SHA256_HEX_LEN + 1, "%s", key);
	return true;
}

/*
 * Under db->lock: db's kept view of full for key (a new reference) or NULL;
 * views of another model are dropped into *ret_dropped (unref'd by the
 * caller outside the lock), up to CATALOG_VIEWS_MAX of them.
 */
static struct schema *find_locked(struct catalog_db *v, struct schema *full, const char *key,
				  struct schema **ret_dropped)
{
	struct schema *found = NULL;
	for (size_t i = 0; i < CATALOG_VIEWS_MAX; i++) {
		struct schema *s = v->views[i];
		if (s && s->parent != full) {
			ret_dropped[i] = s;
			v->views[i] = NULL;
		} else if (s && !found && view_has_key(s, key)) {
			found = schema_ref(s);
		}
	}
	return found;
}

/* Under db->lock: keep view (a reference taken here) in a free slot of db, else in place of the oldest. */
static void keep_locked(struct catalog_db *v, struct schema *view, struct schema **ret_replaced)
{
	size_t slot = CATALOG_VIEWS_MAX;
	for (size_t i = 0; i < CATALOG_VIEWS_MAX && slot == CATALOG_VIEWS_MAX; i++)
		if (!v->views[i])
			slot = i;
	if (slot == CATALOG_VIEWS_MAX) {
		slot = v->views_next;
		v->views_next = (v->views_next + 1) % CATALOG_VIEWS_MAX;
		*ret_replaced = v->views[slot];
	}
	v->views[slot] = schema_ref(view);
}

int catalog_db_schema_granted(struct catalog_db *db, const struct schema_grant *grant, struct schema **ret,
			      struct t2s_error *err)
{
	struct schema *full;
	int rc = catalog_db_schema(db, &full, err);
	if (rc < 0 || !grant) {
		if (rc == 0)
			*ret = full;
		return rc;
	}
	struct schema *dropped[CATALOG_VIEWS_MAX] = {0}, *replaced = NULL, *view = NULL;
	pthread_mutex_lock(&db->lock);
	view = find_locked(db, full, grant->key, dropped);
	bool own_index = view || indexed_locked(db, grant->key);
	pthread_mutex_unlock(&db->lock);
	for (size_t i = 0; i < CATALOG_VIEWS_MAX; i++)
		schema_unref(dropped[i]);
	if (!view) {
		rc = schema_restrict(full, grant, !own_index, &view, err);
		if (rc == 0) { /* two requests may both make it: one is kept, both are right */
			pthread_mutex_lock(&db->lock);
			keep_locked(db, view, &replaced);
			pthread_mutex_unlock(&db->lock);
			schema_unref(replaced);
		}
	}
	schema_unref(full);
	if (rc == 0)
		*ret = view;
	return rc;
}
