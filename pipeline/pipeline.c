/*
 * pipeline.c - the service layer's lifecycle, databases, refresh and
 * readiness (see pipeline.h).  The stages' entry points are in
 * pipeline_stages.c, the state store's in pipeline_state.c; the refresh
 * both this file and the replica sync apply is in pipeline_refresh.c.
 */
#include "pipeline/pipeline_internal.h"

#include "pipeline/models/redis_client.h"
#include "pipeline/generate/answer_cache.h"

#include <stdio.h>
#include <stdlib.h>

void pipeline_prepare_indexes(struct pipeline *p)
{
	const struct catalog_list *l = catalog_list(&p->catalog);
	for (size_t i = 0; i < l->n; i++)
		pipeline_prepare_database(p, l->dbs[i]);
}

void pipeline_release(struct pipeline *p)
{
	pipeline_sync_stop(p); /* its thread refreshes databases: first */
	answer_cache_free(p->answers);
	for (int s = 0; s < MODEL_STAGE_COUNT; s++) {
		model_breaker_release(&p->breakers[s][0]);
		model_breaker_release(&p->breakers[s][1]);
	}
	for (size_t k = 0; k < p->n_candidate_models; k++) {
		model_breaker_release(&p->candidate_models[k].breakers[0]);
		model_breaker_release(&p->candidate_models[k].breakers[1]);
	}
	free(p->candidate_models);
	free(p->candidate_routes);
	value_registry_free(p->values); /* cancels and joins builds before the pools go */
	catalog_release(&p->catalog);
	column_index_registry_free(p->links);
	p->wordnet = wordnet_free(p->wordnet); /* after every index that borrows it */
	state_store_close(p->state);
	embed_cache_free(p->cache);
	p->workers = workers_free(p->workers); /* after the registries, which wait for their jobs */
}

/* ---- databases ------------------------------------------------------------ */

const struct catalog_list *pipeline_databases(struct pipeline *p)
{
	return catalog_list(&p->catalog);
}

struct catalog_db *pipeline_database_find(struct pipeline *p, const char *name)
{
	return catalog_find(&p->catalog, name);
}

int pipeline_database_check(struct catalog_db *db, struct t2s_error *err)
{
	struct schema *s = NULL;
	int rc = catalog_db_schema(db, &s, err);
	schema_unref(s);
	return rc;
}

int pipeline_grant_init(struct schema_grant *g, const char *const *tables, size_t n_tables)
{
	return schema_grant_init(g, tables, n_tables);
}

int pipeline_database_schema_json(struct catalog_db *db, const struct schema_grant *grant, char **ret_text,
				  size_t *ret_len, struct t2s_error *err)
{
	struct schema *s;
	int rc = catalog_db_schema_granted(db, grant, &s, err);
	if (rc < 0)
		return rc;
	*ret_len = 0;
	*ret_text = schema_to_json_text(s, ret_len); /* a table at a time: a wide schema's tree would be 10x its text */
	schema_unref(s);
	return 0;
}

int pipeline_refresh(struct pipeline *p, struct catalog_db *db, struct pipeline_refresh *ret, struct t2s_error *err)
{
	int rc = pipeline_refresh_apply(p, db, true, ret, err);
	if (rc == 0)
		pipeline_sync_refreshed(p, db); /* every replica refreshes it */
	return rc;
}

/* ---- readiness -------------------------------------------------------------- */

static void check_set(struct pipeline_check *c, const char *name, bool up, const struct t2s_error *e)
{
	c->name = name;
	c->configured = true;
	c->up = up;
	if (!up)
		snprintf(c->error, sizeof(c->error), "%s", e->message);
}

/* The breaker states of route r; true when every endpoint it has is open. */
static bool read_breakers(const struct model_route *r, struct pipeline_breakers *ret)
{
	*ret = (struct pipeline_breakers){.present = r->primary != NULL};
	if (!r->primary)
		return false;
	ret->primary = model_breaker_state(r->primary_breaker);
	ret->has_fallback = r->fallback != NULL;
	bool all_open = ret->primary == BREAKER_OPEN;
	if (r->fallback) {
		ret->fallback = model_breaker_state(r->fallback_breaker);
		all_open = all_open && ret->fallback == BREAKER_OPEN;
	}
	return all_open;
}

int pipeline_health(struct pipeline *p, long probe_timeout_ms, struct pipeline_health *ret, struct t2s_error *err)
{
	*ret = (struct pipeline_health){0};
	const struct catalog_list *l = catalog_list(&p->catalog);
	ret->databases = calloc(l->n + 1, sizeof(*ret->databases));
	if (!ret->databases)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	ret->n_databases = l->n;
	for (size_t i = 0; i < l->n; i++) {
		struct catalog_db *db = l->dbs[i];
		struct t2s_error e = {0};
		bool up = catalog_db_ping(db, &e) == 0;
		check_set(&ret->databases[i], db->cfg->name, up, &e);
		if (!up)
			db_pool_connect_error(&db->pool, ret->databases[i].detail, sizeof(ret->databases[i].detail));
		if (db->role_shared_with > 0)
			snprintf(ret->databases[i].warning, sizeof(ret->databases[i].warning),
				 "role \"%s\" also reads %zu other configured database%s: a role sees its own sessions "
				 "in pg_stat_activity, so give each database a role of its own",
				 db->role_name[0] ? db->role_name : "(libpq's default)", db->role_shared_with,
				 db->role_shared_with == 1 ? "" : "s");
		*(up ? &ret->databases_up : &ret->databases_down) += 1;
	}
	if (p->redis_url) {
		struct t2s_error e = {0};
		check_set(&ret->redis, "redis", redis_ping(p->redis_url, p->redis_timeout_ms, &e) == 0, &e);
		ret->others_down += !ret->redis.up;
	}
	for (int s = 0; s < MODEL_STAGE_COUNT; s++) {
		const struct model_endpoint *m = pipeline_model(p, (enum model_stage)s);
		if (!m)
			continue;
		struct model_endpoint ep = *m;
		ep.timeout_ms = ep.connect_timeout_ms = probe_timeout_ms;
		struct t2s_error e = {0};
		check_set(&ret->models[s], ep.stage, model_ping(&ep, probe_timeout_ms, &e) == 0, &e);
		ret->others_down += !ret->models[s].up;
	}
	ret->generation_available = p->generate.generate.primary != NULL;
	if (ret->generation_available) {
		bool down = read_breakers(&p->generate.generate, &ret->generate);
		down |= read_breakers(&p->generate.debug, &ret->debug);
		ret->generation_down = down;
		ret->others_down += down;
	}
	struct t2s_error e = {0};
	if (!p->state)
		t2s_error_set(&e, T2S_ERR_UNAVAILABLE, "%s", p->state_error);
	check_set(&ret->state, "state", p->state && state_store_ping(p->state, &e) == 0, &e);
	ret->others_down += !ret->state.up;
	return 0;
}

void pipeline_health_release(struct pipeline_health *h)
{
	free(h->databases);
	h->databases = NULL;
}
