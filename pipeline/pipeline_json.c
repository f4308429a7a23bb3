/*
 * pipeline_json.c - the service layer's own results as JSON (see
 * pipeline_json.h).
 */
#include "pipeline/pipeline_json.h"

#include <string.h>

json_t *pipeline_database_summary_json(struct catalog_db *db, const struct schema_grant *grant)
{
	struct schema *s = catalog_db_current_schema(db);
	if (s && grant) { /* published: the view is made without introspecting */
		schema_unref(s);
		if (catalog_db_schema_granted(db, grant, &s, NULL) < 0)
			s = NULL;
	}
	char last_error[T2S_ERROR_MESSAGE_MAX];
	catalog_db_last_error(db, last_error, sizeof(last_error));
	json_t *o = json_pack("{s:s, s:s, s:s}", "name", db->cfg->name, "engine", db->engine->name, "status",
			      s && !last_error[0] ? "up" : "down");
	if (o && s) {
		json_object_set_new(o, "tables", json_integer((json_int_t)s->n_tables));
		json_object_set_new(o, "schema_hash", json_string(s->hash));
		json_object_set_new(o, "introspected_at", json_string(s->introspected_at));
	}
	if (o && last_error[0])
		json_object_set_new(o, "error", json_string(last_error));
	schema_unref(s);
	return o;
}

json_t *pipeline_refresh_json(const struct pipeline_refresh *r)
{
	const struct schema *fresh = r->fresh;
	return json_pack("{s:s, s:s, s:o, s:b, s:I, s:f}", "name", r->db->cfg->name, "schema_hash", fresh->hash,
			 "previous_schema_hash", r->previous_hash[0] ? json_string(r->previous_hash) : json_null(),
			 "changed", strcmp(r->previous_hash, fresh->hash) != 0, "tables", (json_int_t)fresh->n_tables,
			 "introspection_ms", fresh->introspect_ms);
}

static json_t *check_json(const struct pipeline_check *c, bool admin)
{
	json_t *o = json_pack("{s:s}", "status", c->up ? "up" : "down");
	if (o && !c->up && c->error[0])
		json_object_set_new(o, "error", json_string(c->error));
	if (o && !c->up && admin && c->detail[0])
		json_object_set_new(o, "detail", json_string(c->detail));
	if (o && c->warning[0])
		json_object_set_new(o, "warning", json_string(c->warning));
	return o;
}

static json_t *breakers_json(const struct pipeline_breakers *b)
{
	json_t *o = json_pack("{s:s}", "primary", model_breaker_state_name(b->primary));
	if (o && b->has_fallback)
		json_object_set_new(o, "fallback", json_string(model_breaker_state_name(b->fallback)));
	return o;
}

/*
 * Without a generate model the built-in generator serves (builtin_only, not down); else each route's breakers
 * (the built-in stands in while they are open).
 */
static json_t *generation_json(const struct pipeline_health *h)
{
	if (!h->generation_available)
		return json_pack("{s:s, s:s, s:[s]}", "status", "builtin_only", "reason",
				 "no generate model is configured (models.generate): the built-in generator answers "
				 "the questions it reads with confidence and refuses the others",
				 "generators", "builtin");
	json_t *breakers = json_object();
	if (h->generate.present)
		json_object_set_new(breakers, "generate", breakers_json(&h->generate));
	if (h->debug.present)
		json_object_set_new(breakers, "debug", breakers_json(&h->debug));
	return json_pack("{s:s, s:o, s:[s, s]}", "status", h->generation_down ? "down" : "up", "breakers", breakers,
			 "generators", "model", "builtin");
}

json_t *pipeline_health_json(const struct pipeline_health *h, bool admin, bool (*show)(void *ctx, const char *name),
			     void *ctx)
{
	json_t *checks = json_object(), *dbs = json_object(), *models = json_object();
	json_object_set_new(checks, "config", json_pack("{s:s}", "status", "up"));
	for (size_t i = 0; i < h->n_databases; i++)
		if (!show || show(ctx, h->databases[i].name))
			json_object_set_new(dbs, h->databases[i].name, check_json(&h->databases[i], admin));
	json_object_set_new(checks, "databases", dbs);
	if (h->redis.configured)
		json_object_set_new(checks, "redis", check_json(&h->redis, false));
	for (int s = 0; s < MODEL_STAGE_COUNT; s++)
		if (h->models[s].configured)
			json_object_set_new(models, h->models[s].name, check_json(&h->models[s], false));
	json_object_set_new(checks, "models", models);
	json_object_set_new(checks, "generation", generation_json(h));
	json_object_set_new(checks, "state", check_json(&h->state, false));
	return checks;
}
