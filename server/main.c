/*
 * main.c - text2sqld entry point: load the config, build the catalog, serve
 * HTTP, and on SIGTERM/SIGINT drain (readiness turns 503, requests in flight
 * finish within limits.drain_timeout_ms) and exit 0.
 *
 * Signals are blocked in every thread (they inherit the mask) and taken
 * synchronously here with sigtimedwait.
 */
#include "app.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "http_server.h"
#include "log.h"
#include "pipeline/model_client.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const char embedded_openapi_json[];
extern const size_t embedded_openapi_json_len;

#define T2S_VERSION "0.1.0"

static void usage(FILE *out)
{
	fputs("usage: text2sqld --config FILE [--check-config]\n"
	      "       text2sqld --version\n"
	      "Serves text-to-SQL over HTTP for the databases of FILE (JSON).\n"
	      "  --check-config  load and validate FILE, then exit (0 when valid)\n"
	      "Environment: TEXT2SQLD_CONFIG (default for --config), TEXT2SQLD_LISTEN_HOST,\n"
	      "             TEXT2SQLD_LISTEN_PORT, TEXT2SQLD_REDIS_URL (empty disables Redis)\n",
	      out);
}

/* Wait for the first termination signal; returns it. */
static void drain_wait(struct app *app, const sigset_t *set);

static int wait_for_signal(const sigset_t *set)
{
	for (;;) {
		int sig = sigwaitinfo(set, NULL);
		if (sig == SIGTERM || sig == SIGINT)
			return sig;
	}
}

/*
 * Poll until nothing is in flight, the drain time is up, or a second signal
 * asks to hurry; then stop what still runs on the databases so the
 * connection threads can finish and the daemon can stop.
 */
static void drain(struct app *app, const sigset_t *set)
{
	drain_wait(app, set);
	if (atomic_load(&app->in_flight) > 0)
		catalog_cancel_all(&app->catalog);
}

static void drain_wait(struct app *app, const sigset_t *set)
{
	double deadline = clock_now_ms() + app->cfg->limits.drain_timeout_ms;
	struct timespec tick = {.tv_sec = 0, .tv_nsec = 20 * 1000000L};
	while (atomic_load(&app->in_flight) > 0 && clock_now_ms() < deadline) {
		int sig = sigtimedwait(set, NULL, &tick);
		if (sig == SIGTERM || sig == SIGINT) {
			log_msg(LOG_WARN, "second signal: stopping without waiting for %d requests",
				atomic_load(&app->in_flight));
			return;
		}
	}
	if (atomic_load(&app->in_flight) > 0)
		log_msg(LOG_WARN, "drain time of %u ms is up with %d requests in flight",
			app->cfg->limits.drain_timeout_ms, atomic_load(&app->in_flight));
}

/* Model endpoints, the embedding cache and the linking registry from the config. */
static int app_init_pipeline(struct app *app, struct t2s_error *err)
{
	const struct config *cfg = app->cfg;
	for (int s = 0; s < MODEL_STAGE_COUNT; s++)
		app->model_present[s] = config_model_endpoint(cfg, (enum model_stage)s, &app->models[s]);
	struct embed_cache_options co = {
		.redis_url = cfg->redis.url,
		.redis_timeout_ms = cfg->redis.timeout_ms,
		.redis_pool_size = cfg->redis.pool_size,
		.memory_max_bytes = cfg->cache.memory_max_bytes,
		.key_prefix = "t2s:emb:",
		.retry_after_ms = cfg->cache.redis_retry_after_ms,
	};
	int rc = embed_cache_new(&co, &app->cache, err);
	if (rc < 0)
		return rc;
	app->link_params = (struct link_params){
		.top_k = cfg->link.top_k,
		.min_k = cfg->link.min_k,
		.column_share = cfg->link.column_share,
		.table_ratio = cfg->link.table_ratio,
		.max_tables = cfg->link.max_tables,
		.lexical_weight = cfg->link.lexical_weight,
		.shuffles = cfg->link.shuffles,
		.llm_max_tables = cfg->link.llm_max_tables,
	};
	const struct model_endpoint *link_model = app_model(app, MODEL_STAGE_LINK);
	app->link_default_mode = cfg->link.default_mode ? (enum link_mode)link_mode_parse(cfg->link.default_mode)
				 : link_model ? LINK_MODE_HYBRID : LINK_MODE_VECTOR;
	struct link_index_options lo = {
		.lexical_dim = (unsigned)cfg->link.lexical_dim,
		.weights = {cfg->link.weight_connect, cfg->link.weight_semantic, cfg->link.weight_statistical},
		.embed_model = app_model(app, MODEL_STAGE_EMBED),
		.cache = app->cache,
	};
	rc = link_registry_new(&lo, &app->links, err);
	if (rc < 0)
		return rc;
	struct value_index_options vo;
	value_index_options_init(&vo);
	vo.max_values_per_column = cfg->values.max_values_per_column;
	vo.max_value_len = cfg->values.max_value_len;
	vo.max_bytes = cfg->values.max_bytes;
	vo.column_timeout_ms = cfg->values.column_timeout_ms;
	vo.max_rows_scanned = cfg->values.max_rows_scanned;
	vo.skip_ids = cfg->values.skip_ids;
	vo.skip_urls_emails = cfg->values.skip_urls_emails;
	vo.skip_long_text = cfg->values.skip_long_text;
	if ((rc = value_registry_new(&vo, &app->values, err)) < 0)
		return rc;
	/* The state store is not needed to serve queries: a failure is reported, not fatal. */
	struct state_store_options so = {.pool_size = cfg->state.pool_size};
	struct t2s_error serr = {0};
	if (state_store_open(cfg->state.url, &so, &app->state, &serr) < 0) {
		snprintf(app->state_error, sizeof(app->state_error), "%s", serr.message);
		log_json(LOG_WARN, "state store unavailable", json_pack("{s:s}", "error", serr.message));
	}
	return 0;
}

/* Start the background builds (linking and value indexes) of every database that is up. */
static void prepare_indexes(struct app *app)
{
	for (size_t i = 0; i < app->catalog.n_dbs; i++) {
		struct catalog_db *db = &app->catalog.dbs[i];
		pthread_mutex_lock(&db->lock);
		struct schema *s = schema_ref(db->schema);
		pthread_mutex_unlock(&db->lock);
		if (s) {
			if (app->cfg->link.prebuild)
				link_registry_prepare(app->links, s);
			value_registry_prepare(app->values, db, s);
		}
		schema_unref(s);
	}
}

static int serve(struct config *cfg)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct app app = {.cfg = cfg, .openapi_json = embedded_openapi_json, .openapi_len = embedded_openapi_json_len};
	atomic_init(&app.draining, false);
	atomic_init(&app.in_flight, 0);
	struct t2s_error err = {0};
	if (model_client_global_init() < 0) {
		log_msg(LOG_ERROR, "cannot initialise the HTTP client library");
		return 1;
	}
	if (app_init_pipeline(&app, &err) < 0) {
		log_msg(LOG_ERROR, "%s", err.message);
		return 1;
	}
	catalog_init(&app.catalog, cfg, &err);
	for (size_t i = 0; i < app.catalog.n_dbs; i++) {
		struct catalog_db *db = &app.catalog.dbs[i];
		char last[T2S_ERROR_MESSAGE_MAX];
		catalog_db_last_error(db, last, sizeof(last));
		if (last[0])
			log_json(LOG_WARN, "database unavailable at start",
				 json_pack("{s:s, s:s}", "database", db->cfg->name, "error", last));
	}
	prepare_indexes(&app);
	struct http_server *srv = NULL;
	int status = 0;
	if (http_server_start(&app, &srv, &err) < 0) {
		log_msg(LOG_ERROR, "%s", err.message);
		status = 1;
	} else {
		log_json(LOG_INFO, "listening",
			 json_pack("{s:s, s:i, s:I, s:s}", "host", cfg->listen.host, "port", http_server_port(srv),
				   "databases", (json_int_t)app.catalog.n_dbs, "version", T2S_VERSION));
		int sig = wait_for_signal(&set);
		atomic_store(&app.draining, true);
		log_json(LOG_INFO, "draining", json_pack("{s:s, s:i}", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT",
							 "in_flight", atomic_load(&app.in_flight)));
		drain(&app, &set);
		http_server_stop(srv);
		log_msg(LOG_INFO, "stopped");
	}
	value_registry_free(app.values); /* cancels and joins builds before the pools go */
	catalog_release(&app.catalog);
	link_registry_free(app.links);
	state_store_close(app.state);
	embed_cache_free(app.cache);
	model_client_global_cleanup();
	metrics_shutdown();
	return status;
}

int main(int argc, char **argv)
{
	const char *config_path = getenv("TEXT2SQLD_CONFIG");
	int check_only = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			config_path = argv[++i];
		} else if (strcmp(argv[i], "--check-config") == 0) {
			check_only = 1;
		} else if (strcmp(argv[i], "--version") == 0) {
			puts("text2sqld " T2S_VERSION);
			return 0;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "text2sqld: unknown argument '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (!config_path || !*config_path) {
		fputs("text2sqld: --config FILE is required\n", stderr);
		usage(stderr);
		return 2;
	}
	struct config cfg;
	struct t2s_error err = {0};
	if (config_load_file(config_path, &cfg, &err) < 0) {
		fprintf(stderr, "text2sqld: %s\n", err.message);
		return 2;
	}
	if (check_only) {
		printf("text2sqld: %s is valid (%zu database%s)\n", config_path, cfg.n_databases,
		       cfg.n_databases == 1 ? "" : "s");
		config_release(&cfg);
		return 0;
	}
	log_set_level_name(cfg.log.level);
	int status = serve(&cfg);
	config_release(&cfg);
	return status;
}
