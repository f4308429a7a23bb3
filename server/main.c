/*
 * main.c - text2sqld entry point: load the config, build the catalog, serve
 * HTTP; on SIGHUP reload the config (server/reload.h); on SIGTERM/SIGINT
 * stop as a gateway expects:
 *   1. readiness turns 503 at once, while every request is still served for
 *      limits.drain_delay_ms (the gateway's health checks see the 503 and
 *      send no more requests here; a gateway checking every 1-2 s needs a
 *      few seconds);
 *   2. the listening socket closes (a gateway's new connection is refused,
 *      which it retries elsewhere), new requests of non-public routes on
 *      open connections are refused 503 "draining", and the requests
 *      already running finish within limits.drain_timeout_ms (those still
 *      running then are answered 503 "draining", never a closed connection);
 *   3. exit 0.
 * A second SIGTERM/SIGINT skips what is left of both waits.
 *
 * Signals are blocked in every thread (they inherit the mask) and taken
 * synchronously here with sigtimedwait.
 */
#include "server/app.h"
#include "server/audit.h"
#include "server/auth_jwt.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "common/process_metrics.h"
#include "server/build_commit.h"
#include "server/http_server.h"
#include "server/log.h"
#include "server/mcp_session.h"
#include "server/reload.h"
#include "pipeline/db/sqlite_guard.h"
#include "pipeline/models/model_client.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern const char embedded_openapi_json[];
extern const size_t embedded_openapi_json_len;

static void usage(FILE *out)
{
	fputs("usage: text2sqld --config FILE [--check-config]\n"
	      "       text2sqld --health URL|PATH\n"
	      "       text2sqld --version\n"
	      "Serves text-to-SQL over HTTP for the databases of FILE (JSON).\n"
	      "  --check-config  load and validate FILE, then exit (0 when valid)\n"
	      "  --health        GET URL (a PATH such as /readyz means http://HOST:PORT/PATH, with the listen\n"
	      "                  host and port of the config (--config or TEXT2SQLD_CONFIG; a wildcard host\n"
	      "                  means loopback), else 127.0.0.1 and TEXT2SQLD_LISTEN_PORT or 8080) within\n"
	      "                  5 s; exit 0 on a 2xx answer, else 1 (a container HEALTHCHECK needs no curl)\n"
	      "Environment: TEXT2SQLD_CONFIG (default for --config), TEXT2SQLD_LISTEN_HOST,\n"
	      "             TEXT2SQLD_LISTEN_PORT, TEXT2SQLD_REDIS_URL (empty disables Redis)\n",
	      out);
}

/* Serve until the first termination signal (SIGTERM or SIGINT), reloading on SIGHUP; returns the signal. */
static int wait_for_signal(const sigset_t *set, struct reload_state *reload, struct app *app,
			   struct http_server *srv)
{
	for (;;) {
		int sig = sigwaitinfo(set, NULL);
		if (sig == SIGTERM || sig == SIGINT)
			return sig;
		if (sig == SIGHUP) {
			log_msg(LOG_INFO, "SIGHUP: reloading the config");
			reload_config(reload, app, srv);
			struct t2s_error err = {0};
			if (audit_reopen(&err) < 0) /* a rotated audit log: a new file at its path */
				log_msg(LOG_ERROR, "%s", err.message);
			if (auth_jwt_keys_load(atomic_load(&app->cfg), &err) < 0) /* the provider's keys, rotated */
				log_msg(LOG_ERROR, "%s (the keys in force are kept)", err.message);
		}
	}
}

/*
 * Keep serving while readiness fails, for limits.drain_delay_ms; false when a
 * second termination signal asks to hurry.  A SIGHUP now is logged and ignored.
 */
static bool drain_delay(const struct app *app, const sigset_t *set)
{
	double deadline = clock_now_ms() + app->cfg->limits.drain_delay_ms;
	for (double now = clock_now_ms(); now < deadline; now = clock_now_ms()) {
		long ms = (long)(deadline - now) + 1;
		struct timespec wait = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
		int sig = sigtimedwait(set, NULL, &wait);
		if (sig == SIGTERM || sig == SIGINT) {
			log_msg(LOG_WARN, "second signal: skipping the rest of the drain delay and the drain");
			return false;
		}
		if (sig == SIGHUP)
			log_msg(LOG_WARN, "SIGHUP while stopping: not reloaded");
	}
	return true;
}

/*
 * Wait until no admitted work is in flight (requests of non-public routes;
 * new ones are refused 503 "draining" from the moment app->draining is set),
 * the drain time is up, or a second signal asks to hurry (then return at once).
 */
static void drain_wait(struct app *app, const sigset_t *set)
{
	double deadline = clock_now_ms() + app->cfg->limits.drain_timeout_ms;
	struct timespec tick = {.tv_sec = 0, .tv_nsec = 20 * 1000000L};
	while (atomic_load(&app->work_in_flight) > 0 && clock_now_ms() < deadline) {
		int sig = sigtimedwait(set, NULL, &tick);
		if (sig == SIGTERM || sig == SIGINT) {
			log_msg(LOG_WARN, "second signal: stopping without waiting for %d requests",
				atomic_load(&app->work_in_flight));
			return;
		}
	}
	if (atomic_load(&app->work_in_flight) > 0)
		log_msg(LOG_WARN, "drain time of %u ms is up with %d requests in flight",
			app->cfg->limits.drain_timeout_ms, atomic_load(&app->work_in_flight));
}

/*
 * Drain: wait (drain_wait), then answer what still runs 503 (its client gets
 * a problem, not a closed connection) and stop it on the databases so the
 * connection threads can finish and the daemon can stop.
 */
static void drain(struct app *app, struct http_server *srv, const sigset_t *set, bool hurry)
{
	if (!hurry)
		drain_wait(app, set);
	if (atomic_load(&app->work_in_flight) > 0) {
		int cut = http_server_cut_in_flight(srv);
		if (cut)
			log_json(LOG_WARN, "drain cut requests: answered 503",
				 json_pack("{s:i}", "requests", cut));
		catalog_cancel_all(&app->pipeline.catalog);
	}
}


/*
 * The stop of a served process (see the top of this file): readiness fails,
 * the drain delay, then no new connections, the drain.
 */
static void stop_gracefully(struct app *app, struct http_server *srv, const sigset_t *set, int sig)
{
	atomic_store(&app->draining, true);
	log_json(LOG_INFO, "stopping: readiness fails, still serving for the drain delay",
		 json_pack("{s:s, s:i, s:i}", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT", "drain_delay_ms",
			   (int)app->cfg->limits.drain_delay_ms, "in_flight", atomic_load(&app->work_in_flight)));
	bool hurry = !drain_delay(app, set);
	http_server_stop_accepting(srv);
	atomic_store(&app->refusing_work, true);
	log_json(LOG_INFO, "draining: no new connections or requests, waiting for those in flight",
		 json_pack("{s:i, s:i}", "in_flight", atomic_load(&app->work_in_flight), "drain_timeout_ms",
			   (int)app->cfg->limits.drain_timeout_ms));
	drain(app, srv, set, hurry);
}

static int serve(const struct config *cfg, struct reload_state *reload)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct app app = {.cfg = cfg, .openapi_json = embedded_openapi_json, .openapi_len = embedded_openapi_json_len};
	atomic_init(&app.refusing_work, false);
	atomic_init(&app.draining, false);
	atomic_init(&app.in_flight, 0);
	atomic_init(&app.work_in_flight, 0);
	struct t2s_error err = {0};
	process_metrics_register(T2S_VERSION, build_commit);
	if (sqlite_guard_global_init() < 0) /* before any other SQLite use (the state store opens one) */
		log_msg(LOG_WARN, "SQLite was initialised early: no per-statement memory ceiling for SQLite");
	if (model_client_global_init() < 0) {
		log_msg(LOG_ERROR, "cannot initialise the HTTP client library");
		return 1;
	}
	if (audit_open(cfg->log.audit_file, &err) < 0 || auth_jwt_keys_load(cfg, &err) < 0) {
		log_msg(LOG_ERROR, "%s", err.message);
		model_client_global_cleanup();
		metrics_shutdown();
		return 1;
	}
	if (app_init_pipeline(&app, &err) < 0) {
		log_msg(LOG_ERROR, "%s", err.message);
		pipeline_release(&app.pipeline); /* what was built before the failure */
		model_client_global_cleanup();
		metrics_shutdown();
		return 1;
	}
	/* Fails only out of memory; a database that cannot be reached is listed with its last_error (below). */
	if (catalog_init(&app.pipeline.catalog, cfg, &err) < 0) {
		log_msg(LOG_ERROR, "%s", err.message);
		pipeline_release(&app.pipeline);
		model_client_global_cleanup();
		metrics_shutdown();
		return 1;
	}
	const struct catalog_list *dbs = catalog_list(&app.pipeline.catalog);
	for (size_t i = 0; i < dbs->n; i++) {
		struct catalog_db *db = dbs->dbs[i];
		char last[T2S_ERROR_MESSAGE_MAX];
		catalog_db_last_error(db, last, sizeof(last));
		if (last[0])
			log_json(LOG_WARN, "database unavailable at start",
				 json_pack("{s:s, s:s}", "database", db->cfg->name, "error", last));
	}
	if (cfg->auth.development)
		log_msg(LOG_WARN, "auth.development is set: API keys that are well-known words are accepted");
	char drain_warning[512];
	if (app_drain_shorter_than_budget(cfg, drain_warning, sizeof(drain_warning)))
		log_json(LOG_WARN, "drain shorter than the longest request", json_pack("{s:s}", "detail", drain_warning));
	pipeline_prepare_indexes(&app.pipeline);
	struct http_server *srv = NULL;
	int status = 0;
	if (!(app.mcp_sessions = mcp_sessions_new()))
		t2s_error_set(&err, T2S_ERR_NOMEM, "out of memory");
	if (!app.mcp_sessions || app_start_sync(&app, &err) < 0 || http_server_start(&app, &srv, &err) < 0) {
		log_msg(LOG_ERROR, "%s", err.message);
		status = 1;
	} else {
		log_json(LOG_INFO, "listening",
			 json_pack("{s:s, s:i, s:I, s:s}", "host", cfg->listen.host, "port", http_server_port(srv),
				   "databases", (json_int_t)dbs->n, "version", T2S_VERSION));
		int sig = wait_for_signal(&set, reload, &app, srv);
		stop_gracefully(&app, srv, &set, sig);
		http_server_stop(srv);
		log_msg(LOG_INFO, "stopped");
	}
	mcp_sessions_free(app.mcp_sessions);
	pipeline_release(&app.pipeline);
	audit_close();
	auth_jwt_keys_release();
	model_client_global_cleanup();
	metrics_shutdown();
	return status;
}

/*
 * --health: one GET of target within HEALTH_TIMEOUT_MS, no retries, no
 * proxy; 0 on a 2xx status, 1 otherwise (the reason on stderr).
 */
#define HEALTH_TIMEOUT_MS 5000L

/*
 * The URL of path on the configured listen address: the config at
 * config_path (with its environment overrides) when given, else 127.0.0.1
 * and TEXT2SQLD_LISTEN_PORT or 8080.  A wildcard host means loopback.
 * -1 when the config does not load (the reason on stderr).
 */
static int health_url(const char *config_path, const char *path, char *url, size_t size)
{
	if (!config_path || !*config_path) {
		const char *port = getenv("TEXT2SQLD_LISTEN_PORT");
		snprintf(url, size, "http://127.0.0.1:%s%s", port && *port ? port : "8080", path);
		return 0;
	}
	struct config cfg;
	struct t2s_error err = {0};
	if (config_load_file(config_path, &cfg, &err) < 0) {
		fprintf(stderr, "text2sqld --health: %s\n", err.message);
		return -1;
	}
	const char *host = cfg.listen.host;
	if (!*host || strcmp(host, "0.0.0.0") == 0)
		host = "127.0.0.1";
	else if (strcmp(host, "::") == 0 || strcmp(host, "[::]") == 0)
		host = "::1";
	bool v6 = strchr(host, ':') && host[0] != '[';
	snprintf(url, size, "http://%s%s%s:%d%s", v6 ? "[" : "", host, v6 ? "]" : "", cfg.listen.port, path);
	config_release(&cfg);
	return 0;
}

static int health_probe(const char *config_path, const char *target)
{
	char url[1024];
	if (target[0] == '/') {
		if (health_url(config_path, target, url, sizeof(url)) < 0)
			return 1;
	} else {
		snprintf(url, sizeof(url), "%s", target);
	}
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
		fprintf(stderr, "text2sqld --health: '%s' is neither an http(s) URL nor a path\n", target);
		return 2;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return 1;
	CURL *h = curl_easy_init();
	long status = 0;
	CURLcode cc = CURLE_FAILED_INIT;
	if (h) {
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, HEALTH_TIMEOUT_MS);
		curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h, CURLOPT_PROXY, "");
		curl_easy_setopt(h, CURLOPT_NOBODY, 0L);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, fwrite);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, stdout);
		cc = curl_easy_perform(h);
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_cleanup(h);
	}
	curl_global_cleanup();
	if (cc != CURLE_OK) {
		fprintf(stderr, "\ntext2sqld --health: %s: %s\n", url, curl_easy_strerror(cc));
		return 1;
	}
	fputc('\n', stdout);
	if (status < 200 || status > 299) {
		fprintf(stderr, "text2sqld --health: %s answered %ld\n", url, status);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *config_path = getenv("TEXT2SQLD_CONFIG");
	const char *health_target = NULL;
	int check_only = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			config_path = argv[++i];
		} else if (strcmp(argv[i], "--health") == 0 && i + 1 < argc) {
			health_target = argv[++i];
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
	if (health_target)
		return health_probe(config_path, health_target);
	if (!config_path || !*config_path) {
		fputs("text2sqld: --config FILE is required\n", stderr);
		usage(stderr);
		return 2;
	}
	struct reload_state reload;
	const struct config *cfg;
	struct t2s_error err = {0};
	if (reload_state_init(&reload, config_path, &cfg, &err) < 0) {
		fprintf(stderr, "text2sqld: %s\n", err.message);
		reload_state_release(&reload);
		return 2;
	}
	/* What would only fail at start fails here, with the same exit status as any config error. */
	if (app_check_config(cfg, &err) < 0 || http_server_check_listen(cfg, &err) < 0) {
		fprintf(stderr, "text2sqld: %s\n", err.message);
		reload_state_release(&reload);
		return 2;
	}
	char drain_warning[512];
	if (app_drain_shorter_than_budget(cfg, drain_warning, sizeof(drain_warning)))
		fprintf(stderr, "text2sqld: warning: %s\n", drain_warning);
	if (check_only) {
		printf("text2sqld: %s is valid (%zu database%s)\n", config_path, cfg->n_databases,
		       cfg->n_databases == 1 ? "" : "s");
		reload_state_release(&reload);
		return 0;
	}
	log_set_level_name(cfg->log.level);
	int status = serve(cfg, &reload);
	reload_state_release(&reload);
	return status;
}
