/*
 * pipeline_internal.h - what the service layer's own files share (files
 * directly in pipeline/ only; handlers and stages never include it): the
 * refresh they all apply, and the replica synchronisation's hooks
 * (pipeline_sync.c) that the entry points call.
 */
#ifndef T2S_PIPELINE_INTERNAL_H
#define T2S_PIPELINE_INTERNAL_H

#include "pipeline/pipeline.h"

/*
 * Introspect db again and publish it (pipeline_refresh's work, without
 * telling other replicas).  The indexes are rebuilt for the new schema
 * always, or only when its hash changed (always = false: the periodic
 * recheck).
 */
int pipeline_refresh_apply(struct pipeline *p, struct catalog_db *db, bool always, struct pipeline_refresh *ret,
			   struct t2s_error *err);

/* The version of db's prompt state (examples, overrides) as this replica knows it; 0 without a sync. */
int64_t pipeline_sync_state_version(struct pipeline *p, const struct catalog_db *db);

/*
 * After this replica changed db's examples, overrides or feedback: learn the
 * new version from the store at once and tell the other replicas.
 */
void pipeline_sync_state_changed(struct pipeline *p, struct catalog_db *db);

/* After this replica refreshed db: count it in the store and tell the other replicas. */
void pipeline_sync_refreshed(struct pipeline *p, struct catalog_db *db);

/* Stop the sync's threads (pipeline_release, before the catalog goes). */
void pipeline_sync_stop(struct pipeline *p);

#endif
