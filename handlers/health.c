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
 * are shown only to a valid key or JWT, and only for the databases that
 * caller may use; without one the answer is the status alone, unless the config sets
 * auth.public_readiness_details.  The status and HTTP code are the same
 * for everyone.  A database that cannot be connected to shows a stable
 * error; the driver's reason (host, port, role) is logged and shown as its
 * "detail" only to an admin key (or to everyone with auth off).
 */
#include "handlers/handlers.h"

#include "pipeline/pipeline_json.h"
#include "server/auth.h"

#include <string.h>

#define READY_PROBE_TIMEOUT_MS 1000

void handle_healthz(struct http_request *req, struct http_response *res)
{
	(void)req;
	http_reply_json(res, 200, json_pack("{s:s}", "status", "ok"));
}

/* Which databases the readiness details list: all without a key, else those the key may use. */
struct shown {
	const struct config *cfg;
	const struct config_api_key *principal;
};

static bool show_database(void *ctx, const char *name)
{
	const struct shown *s = ctx;
	return !s->principal || auth_may_use_database(s->cfg, s->principal, name);
}

void handle_readyz(struct http_request *req, struct http_response *res)
{
	const struct config *cfg = req->cfg;
	const char *query = http_request_query(req, "strict");
	bool strict = query && strcmp(query, "0") != 0 && strcmp(query, "false") != 0;
	struct shown shown = {.cfg = cfg};
	bool details = !cfg->auth.enabled || cfg->auth.public_readiness_details;
	bool admin = !cfg->auth.enabled; /* who sees a database's connect failure as the driver gave it */
	if (cfg->auth.enabled) {
		shown.principal = auth_identify(req); /* an API key or a JWT */
		details |= shown.principal != NULL;
		admin = shown.principal && auth_has_scope(cfg, shown.principal, API_SCOPE_ADMIN);
	}
	struct t2s_error err = {0};
	struct pipeline_health h;
	if (pipeline_health(&req->app->pipeline, READY_PROBE_TIMEOUT_MS, &h, &err) < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	const char *status = "ready";
	int code = 200;
	if (atomic_load(&req->app->draining)) {
		status = "draining";
		code = 503;
	} else if (h.databases_up == 0 && h.databases_down > 0) {
		status = "not_ready";
		code = 503;
	} else if (h.databases_down || h.others_down) {
		status = "degraded";
		code = strict ? 503 : 200;
	}
	if (details)
		http_reply_json(res, code,
				json_pack("{s:s, s:o}", "status", status, "checks", pipeline_health_json(&h, admin, show_database, &shown)));
	else
		http_reply_json(res, code, json_pack("{s:s}", "status", status));
	pipeline_health_release(&h);
}
