/*
 * pipeline_json.h - the JSON of the service layer's own results: a
 * database's summary, a refresh, the readiness checks.  Each returns a new
 * reference (NULL only when out of memory).
 */
#ifndef T2S_PIPELINE_JSON_H
#define T2S_PIPELINE_JSON_H

#include "pipeline/pipeline.h"

#include <jansson.h>
#include <stdbool.h>

/*
 * {name, engine, status, tables?, schema_hash?, introspected_at?, error?} without touching the database;
 * with a grant (schema_grant.h; NULL: every table) tables and schema_hash are the caller's view's.
 */
json_t *pipeline_database_summary_json(struct catalog_db *db, const struct schema_grant *grant);

/* {name, schema_hash, previous_schema_hash, changed, tables, introspection_ms} */
json_t *pipeline_refresh_json(const struct pipeline_refresh *r);

/*
 * The readiness checks {databases, redis?, models, generation, state}; a
 * database is listed only when show(ctx, name) is true (show NULL: all).
 * admin: a database that is down also shows the driver's reason ("detail":
 * hosts, ports, roles), which other callers never see.
 */
json_t *pipeline_health_json(const struct pipeline_health *h, bool admin, bool (*show)(void *ctx, const char *name),
			     void *ctx);

#endif
