/*
 * app.h - the process-wide state handlers work with.  Built by main before
 * the HTTP server starts and freed after it stops; read-only for handlers
 * except the atomics.
 */
#ifndef T2S_APP_H
#define T2S_APP_H

#include "common/contract.h"
#include "config/config.h"
#include "pipeline/pipeline.h"

#include <stdatomic.h>
#include <stddef.h>

struct mcp_sessions;

struct app {
	/* The config in force: replaced whole by a reload (SIGHUP, server/reload.h), so read it once per
	   use; a request reads its own (http_request.cfg), the one in force when it arrived.  Replaced
	   configs stay allocated until exit (whatever still points into them stays valid). */
	_Atomic(const struct config *) cfg;
	struct pipeline pipeline;     /* every stage's process-wide parts (pipeline/pipeline.h) */
	atomic_bool draining; /* set on SIGTERM/SIGINT: readiness fails at once, answers close their connection */
	atomic_bool refusing_work; /* set limits.drain_delay_ms later: new work is refused 503 "draining" */
	atomic_int in_flight; /* requests between arrival and completion */
	atomic_int work_in_flight; /* of those, requests of non-public routes admitted to run (the drain waits
				      for these; once refusing_work, new ones are refused 503 "draining") */
	struct mcp_sessions *mcp_sessions; /* the MCP endpoint's sessions (server/mcp_session.h), made and freed
					      by main around the HTTP server; handlers reach it through that header */
	const char *openapi_json; /* the embedded OpenAPI document */
	size_t openapi_len;
};

/*
 * Build app->pipeline from app->cfg: model endpoints and routes, the
 * embedding and answer caches, the index registries, the state store and
 * each stage's options (server/app.c).  The catalog is initialised
 * separately (catalog_init on app->pipeline.catalog).  0 or -T2S_ERR_*.
 */
T2S_MUST_CHECK
int app_init_pipeline(struct app *app, struct t2s_error *err);
/*
 * What app_init_pipeline and the HTTP server would refuse at start, checked
 * without starting anything (for --check-config and before serving): the
 * Redis URL, the link and generate settings against the stages' defaults.
 * 0 or -T2S_ERR_INVALID with the config key in err.
 */
T2S_MUST_CHECK
int app_check_config(const struct config *cfg, struct t2s_error *err);

/*
 * When limits.drain_timeout_ms is shorter than the longest a request may
 * run (the largest time budget a request may ask: generate.max_timeout_ms,
 * with auth on at most limits.key_max_timeout_ms; or execution.timeout_ms
 * when longer), a warning naming both into buf and true: a drain would cut
 * such a request (503).  False (buf "") when they agree or the generate
 * settings are invalid (app_check_config says so).
 */
bool app_drain_shorter_than_budget(const struct config *cfg, char *buf, size_t size);

/*
 * Keep this replica in step with the others (pipeline_sync_start) from
 * state.poll_interval_ms and catalog.recheck_s, logging what it receives.
 * After the catalog is made; pipeline_release stops it.
 */
T2S_MUST_CHECK
int app_start_sync(struct app *app, struct t2s_error *err);

#endif
