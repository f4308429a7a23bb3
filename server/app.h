/*
 * app.h - the process-wide state handlers work with.  Built by main before
 * the HTTP server starts and freed after it stops; read-only for handlers
 * except the atomics.
 */
#ifndef T2S_APP_H
#define T2S_APP_H

#include "config/config.h"
#include "pipeline/db/catalog.h"
#include "pipeline/evidence/evidence.h"
#include "pipeline/models/embed_cache.h"
#include "pipeline/sql/exec.h"
#include "pipeline/link/link.h"
#include "pipeline/generate/generate.h"
#include "pipeline/link/column_index_registry.h"
#include "pipeline/models/model_client.h"
#include "pipeline/store/state_store.h"
#include "pipeline/values/value_registry.h"

#include <stdatomic.h>
#include <stddef.h>

struct app {
	const struct config *cfg;
	struct catalog catalog;
	atomic_bool draining; /* set on SIGTERM/SIGINT: readiness fails, connections close */
	atomic_int in_flight; /* requests between arrival and completion */
	atomic_int work_in_flight; /* of those, requests of non-public routes admitted to run (the drain waits
				      for these; once draining, new ones are refused 503 "draining") */
	const char *openapi_json; /* the embedded OpenAPI document */
	size_t openapi_len;
	struct embed_cache *cache;     /* embeddings: Redis when configured, in-process always */
	struct workers *workers;       /* the bounded thread pool (limits.worker_threads) */
	struct column_index_registry *links;   /* linking index per database */
	struct wordnet *wordnet;       /* WordNet tables, read-only after start; NULL when link.wordnet is off */
	struct link_params link_params;
	enum link_mode link_default_mode;
	struct model_endpoint models[MODEL_STAGE_COUNT];
	bool model_present[MODEL_STAGE_COUNT];
	struct model_endpoint fallbacks[MODEL_STAGE_COUNT];
	bool fallback_present[MODEL_STAGE_COUNT];
	struct model_breaker breakers[MODEL_STAGE_COUNT][2]; /* [stage][0 primary, 1 fallback] */
	struct generate_env generate;       /* what /generate and /query use */
	struct answer_cache *answers;       /* NULL when generate.cache_ttl_s is 0 */
	char model_fingerprint[2048];
	struct value_registry *values;      /* value index per database, built in the background */
	struct evidence_options evidence_options; /* from the config, with the evidence model */
	struct state_store *state;          /* examples, description overrides; NULL when it could not open */
	char state_error[T2S_ERROR_MESSAGE_MAX]; /* why state is NULL */
};

/*
 * Fill app's model endpoints, embedding cache, column index registry, value
 * registry and state store from app->cfg (server/app.c).  The catalog is
 * initialised separately (catalog_init).  0 or -T2S_ERR_*.
 */
int app_init_pipeline(struct app *app, struct t2s_error *err);
/*
 * What app_init_pipeline and the HTTP server would refuse at start, checked
 * without starting anything (for --check-config and before serving): the
 * Redis URL, the link and generate settings against the stages' defaults.
 * 0 or -T2S_ERR_INVALID with the config key in err.
 */
int app_check_config(const struct config *cfg, struct t2s_error *err);
/* Start the background index builds of every database whose schema is known. */
void app_prepare_indexes(struct app *app);
/*
 * Free what app_init_pipeline made, and the catalog (value builds are joined
 * first).  Also after a failed app_init_pipeline: parts never made are NULL.
 */
void app_release_pipeline(struct app *app);

/* Execution limits of the config, with max_rows rows. */
static inline struct exec_limits app_exec_limits(const struct app *app, long max_rows)
{
	const struct config *cfg = app->cfg;
	return (struct exec_limits){
		.timeout_ms = cfg->execution.timeout_ms,
		.lock_timeout_ms = cfg->execution.lock_timeout_ms,
		.max_rows = max_rows,
		.max_result_bytes = cfg->execution.max_result_bytes,
		.max_sql_bytes = cfg->execution.max_sql_bytes,
		.max_statement_memory_bytes = cfg->execution.max_statement_memory_bytes,
	};
}

/* The endpoint of stage, or NULL when none is configured. */
static inline const struct model_endpoint *app_model(const struct app *app, enum model_stage stage)
{
	return app->model_present[stage] ? &app->models[stage] : NULL;
}

#endif
