/*
 * health.c - GET /healthz (the process answers) and GET /readyz (config
 * loaded, not draining, each database, Redis and model server reachable).
 *
 * /readyz answers 200 "ready" when every check passes and 200 "degraded"
 * when some databases, Redis or model servers are down but at least one
 * database is up (the down parts are listed); 503 "not_ready" while
 * draining or when no database is reachable.  With ?strict=1 any down part
 * gives 503, for deployments that prefer to drop a degraded replica.
 *
 * With auth on, the checks (which name databases and quote their errors)
 * are shown only to a valid key, and only for the databases that key may
 * use; without one the answer is the status alone, unless the config sets
 * auth.public_readiness_details.  The status and HTTP code are the same
 * for everyone.
 */
#include "handlers/handlers.h"

#include "server/auth.h"
#include "pipeline/models/model_client.h"
#include "pipeline/models/redis_client.h"

#include <string.h>

#define READY_PROBE_TIMEOUT_MS 1000

void handle_healthz(struct http_request *req, struct http_response *res)
{
	(void)req;
	http_reply_json(res, 200, json_pack("{s:s}", "status", "ok"));
}

static json_t *check(bool up, const char *detail)
{
	json_t *c = json_pack("{s:s}", "status", up ? "up" : "down");
	if (!up && detail && *detail)
		json_object_set_new(c, "error", json_string(detail));
	return c;
}

/*
 * Each database: ping through its pool. Counts go to *up and *down; listed
 * are all (show_all) or those principal may use.
 */
static json_t *check_databases(struct app *app, bool show_all, const struct config_api_key *principal, int *up,
			       int *down)
{
	json_t *dbs = json_object();
	for (size_t i = 0; i < app->catalog.n_dbs; i++) {
		struct catalog_db *db = &app->catalog.dbs[i];
		struct t2s_error err = {0};
		bool ok = catalog_db_ping(db, &err) == 0;
		*(ok ? up : down) += 1;
		if (show_all || auth_may_use_database(app->cfg, principal, db->cfg->name))
			json_object_set_new(dbs, db->cfg->name, check(ok, err.message));
	}
	return dbs;
}

/* Each configured model server: GET {base_url}/models with a short timeout. */
static json_t *check_models(const struct app *app, int *down)
{
	json_t *models = json_object();
	for (int s = 0; s < MODEL_STAGE_COUNT; s++) {
		const struct model_endpoint *m = app_model(app, (enum model_stage)s);
		if (!m)
			continue;
		struct model_endpoint ep = *m;
		ep.timeout_ms = ep.connect_timeout_ms = READY_PROBE_TIMEOUT_MS;
		struct t2s_error err = {0};
		bool ok = model_ping(&ep, READY_PROBE_TIMEOUT_MS, &err) == 0;
		*down += !ok;
		json_object_set_new(models, ep.stage, check(ok, err.message));
	}
	return models;
}

/*
 * Generation: unavailable without a generate model (reported, not counted as
 * down: the other endpoints serve); each configured endpoint's breaker.  A
 * stage whose every endpoint has an open breaker counts as down.
 */
static json_t *check_generation(struct app *app, int *down)
{
	const struct generate_env *g = &app->generate;
	if (!g->generate.primary)
		return json_pack("{s:s, s:s}", "status", "unavailable", "reason",
				 "no generate model is configured (models.generate)");
	json_t *breakers = json_object();
	bool stage_down = false;
	const struct model_route *routes[] = {&g->generate, &g->debug};
	const char *names[] = {"generate", "debug"};
	for (size_t i = 0; i < 2; i++) {
		const struct model_route *r = routes[i];
		if (!r->primary)
			continue;
		enum breaker_state p = model_breaker_state(r->primary_breaker);
		json_t *o = json_pack("{s:s}", "primary", model_breaker_state_name(p));
		bool all_open = p == BREAKER_OPEN;
		if (r->fallback) {
			enum breaker_state f = model_breaker_state(r->fallback_breaker);
			json_object_set_new(o, "fallback", json_string(model_breaker_state_name(f)));
			all_open = all_open && f == BREAKER_OPEN;
		}
		stage_down |= all_open;
		json_object_set_new(breakers, names[i], o);
	}
	*down += stage_down;
	return json_pack("{s:s, s:o}", "status", stage_down ? "down" : "up", "breakers", breakers);
}

void handle_readyz(struct http_request *req, struct http_response *res)
{
	struct app *app = req->app;
	const char *query = MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, "strict");
	bool strict = query && strcmp(query, "0") != 0 && strcmp(query, "false") != 0;
	int db_up = 0, db_down = 0, other_down = 0;
	json_t *checks = json_object();
	json_object_set_new(checks, "config", json_pack("{s:s}", "status", "up"));
	const struct config_api_key *principal = NULL;
	bool details = !app->cfg->auth.enabled || app->cfg->auth.public_readiness_details;
	if (app->cfg->auth.enabled) {
		principal = auth_check_bearer(app->cfg, http_request_header(req, "Authorization"));
		details |= principal != NULL;
	}
	json_object_set_new(checks, "databases", check_databases(app, !principal, principal, &db_up, &db_down));
	if (app->cfg->redis.url) {
		struct t2s_error err = {0};
		bool ok = redis_ping(app->cfg->redis.url, app->cfg->redis.timeout_ms, &err) == 0;
		other_down += !ok;
		json_object_set_new(checks, "redis", check(ok, err.message));
	}
	json_object_set_new(checks, "models", check_models(app, &other_down));
	json_object_set_new(checks, "generation", check_generation(app, &other_down));
	struct t2s_error serr = {0};
	bool state_ok = app->state && state_store_ping(app->state, &serr) == 0;
	other_down += !state_ok;
	json_object_set_new(checks, "state", check(state_ok, app->state ? serr.message : app->state_error));

	const char *status = "ready";
	int code = 200;
	if (atomic_load(&app->draining)) {
		status = "draining";
		code = 503;
	} else if (db_up == 0 && db_down > 0) {
		status = "not_ready";
		code = 503;
	} else if (db_down || other_down) {
		status = "degraded";
		code = strict ? 503 : 200;
	}
	if (!details) {
		json_decref(checks);
		http_reply_json(res, code, json_pack("{s:s}", "status", status));
		return;
	}
	http_reply_json(res, code, json_pack("{s:s, s:o}", "status", status, "checks", checks));
}
