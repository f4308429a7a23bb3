/*
 * pipeline_refresh.c - the refresh of one database that the service layer's
 * files share (pipeline_internal.h): introspect it again, publish the new
 * schema and have the indexes follow it, prune descriptions written for
 * older schemas.  The bottom of the service layer: the refresh entry point
 * (pipeline.c), the start-up index builds and the replica sync
 * (pipeline_sync.c) call it; it calls no other file of the service layer.
 */
#include "pipeline/pipeline_internal.h"

#include <stdio.h>
#include <string.h>

void pipeline_prepare_database(struct pipeline *p, struct catalog_db *db)
{
	struct schema *s = catalog_db_current_schema(db);
	if (s) {
		if (p->prebuild_links)
			column_index_registry_prepare(p->links, s);
		value_registry_prepare(p->values, db, s);
	}
	schema_unref(s);
}

int pipeline_refresh_apply(struct pipeline *p, struct catalog_db *db, bool always, struct pipeline_refresh *ret,
			   struct t2s_error *err)
{
	*ret = (struct pipeline_refresh){.db = db};
	struct schema *old = catalog_db_current_schema(db);
	if (old)
		snprintf(ret->previous_hash, sizeof(ret->previous_hash), "%s", old->hash);
	schema_unref(old);
	if (catalog_db_refresh(db, &ret->fresh, err) < 0) {
		if (err->code != T2S_ERR_TIMEOUT && err->code != T2S_ERR_NOMEM)
			err->code = T2S_ERR_UNAVAILABLE;
		return -(int)err->code;
	}
	bool changed = strcmp(ret->previous_hash, ret->fresh->hash) != 0;
	if (!always && !changed)
		return 0;
	if (p->prebuild_links) /* the indexes follow the new schema */
		column_index_registry_prepare(p->links, ret->fresh);
	value_registry_prepare(p->values, db, ret->fresh);
	/* Descriptions the describe model wrote for older schemas are stale: keep only the new schema's. */
	if (p->state && changed) {
		struct t2s_error ignored = {0};
		if (state_store_descriptions_prune(p->state, db->cfg->name, ret->fresh->hash, NULL, &ignored) < 0) {
			/* Best effort: stale rows name an old schema hash, so they are never read, only kept. */
		}
	}
	return 0;
}

void pipeline_refresh_release(struct pipeline_refresh *r)
{
	schema_unref(r->fresh);
	r->fresh = NULL;
}
