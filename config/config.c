/*
 * config.c - strict JSON configuration loader (see config.h).
 *
 * Each object is read by a small function that first rejects keys it does
 * not know, then reads every known key with a typed getter that checks range
 * and reports the full key path.  Defaults are set before reading, so a
 * missing optional key keeps its safe default, or stays unset for a stage
 * setting whose default belongs to the stage (see config.h).
 *
 * This file: defaults, environment overrides, the top level and loading;
 * the sections are read by config_service.c and config_stages.c with the
 * getters of config_get.c (config_internal.h); the names and look-ups the
 * section readers and the rest of the service share are in config_names.c.
 */
#include "config/config_internal.h"

#include "common/limits.h"
#include "common/workers.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MAX_FILE_BYTES (4u << 20)

static void set_defaults(struct config *c)
{
	c->listen.host = "127.0.0.1";
	c->listen.port = 8080;
	c->limits.max_connections = 256;
	c->limits.max_pending_connections = 1024;
	c->limits.max_connections_per_ip = 64;
	c->limits.connection_timeout_s = 30;
	c->limits.request_head_timeout_ms = 10000;
	c->limits.request_body_timeout_ms = 30000;
	c->limits.max_body_bytes = 1u << 20;
	c->limits.max_header_bytes = 32u << 10;
	c->limits.max_uri_bytes = 8u << 10;
	c->limits.key_rate_per_s = 0;
	c->limits.key_burst = 20;
	c->limits.key_max_concurrent = 0; /* unset: a quarter of max_connections (conf_limits_finish) */
	c->limits.key_max_timeout_ms = 120000;
	c->limits.drain_delay_ms = 5000;
	c->limits.drain_timeout_ms = 125000; /* the longest default budget (120 s) and a margin: no request cut */
	c->limits.worker_threads = WORKERS_THREADS_DEFAULT;
	c->limits.max_list_page_bytes = (size_t)T2S_LIST_PAGE_BYTES_DEFAULT;
	c->limits.mcp_max_sessions = 256;
	c->limits.mcp_session_idle_s = 1800;
	c->execution.timeout_ms = 5000;
	c->execution.lock_timeout_ms = 1000;
	c->execution.default_max_rows = 1000;
	c->execution.max_rows = 10000;
	c->execution.max_sql_bytes = 100u << 10;
	c->execution.max_result_bytes = 8u << 20;
	c->execution.max_statement_memory_bytes = 64u << 20;
	c->catalog.pool_size = 4;
	c->catalog.pool_wait_ms = 5000;
	c->catalog.connect_timeout_s = 5;
	c->catalog.sample_values = 5;
	c->catalog.sample_rows = 1000;
	c->catalog.sample_value_max_len = 64;
	c->catalog.introspect_timeout_ms = 10000;
	c->catalog.row_count_scan_limit = 1000000;
	c->redis.timeout_ms = T2S_REDIS_TIMEOUT_DEFAULT_MS;
	c->redis.pool_size = 4;
	c->cache.memory_max_bytes = 256u << 20;
	c->state.url = "sqlite://text2sqld-state.sqlite";
	c->state.pool_size = 4;
	c->state.max_examples_per_database = T2S_EXAMPLES_PER_DATABASE_DEFAULT;
	c->state.max_feedback_per_database = T2S_FEEDBACK_PER_DATABASE_DEFAULT;
	c->state.poll_interval_ms = c->catalog.recheck_s = CONFIG_UNSET;
	c->cache.redis_retry_after_ms = 5000;
	c->link.prebuild = true;
	c->link.wordnet = true;
	/* Stage settings: unset, the stages' own defaults apply (server/app.c). */
	c->values.max_values_per_column = CONFIG_UNSET;
	c->values.max_value_len = CONFIG_UNSET;
	c->values.max_bytes = CONFIG_UNSET_SIZE;
	c->values.column_timeout_ms = CONFIG_UNSET;
	c->values.max_rows_scanned = CONFIG_UNSET;
	c->values.skip_ids = c->values.skip_urls_emails = c->values.skip_long_text = CONFIG_UNSET;
	c->evidence.max_values = CONFIG_UNSET;
	c->evidence.min_score = NAN;
	c->evidence.probe_timeout_ms = CONFIG_UNSET;
	c->evidence.max_examples = CONFIG_UNSET;
	c->link.top_k = CONFIG_UNSET;
	c->link.min_k = CONFIG_UNSET;
	c->link.budget_tokens = CONFIG_UNSET;
	c->link.table_ratio = NAN;
	c->link.max_tables = CONFIG_UNSET;
	c->link.lexical_weight = NAN;
	c->link.shuffles = CONFIG_UNSET;
	c->link.llm_max_tables = CONFIG_UNSET;
	c->link.llm_min_vote_share = NAN;
	c->link.llm_column_budget_tokens = CONFIG_UNSET;
	c->link.lexical_dim = CONFIG_UNSET;
	c->link.weight_connect = c->link.weight_semantic = c->link.weight_statistical = NAN;
	c->generate.max_rounds = c->generate.max_rounds_limit = CONFIG_UNSET;
	c->generate.candidates = c->generate.max_candidates = c->generate.confirm_calls = CONFIG_UNSET;
	c->generate.adaptive_sampling = CONFIG_UNSET;
	c->generate.vote_by_confidence = CONFIG_UNSET;
	c->generate.builtin_min_confidence = NAN;
	c->generate.timeout_ms = c->generate.max_timeout_ms = CONFIG_UNSET;
	c->generate.token_budget = CONFIG_UNSET;
	c->generate.max_examples = c->generate.sample_values = c->generate.max_history = CONFIG_UNSET;
	c->generate.reuse_min_similarity = c->generate.reuse_min_similarity_no_model = NAN;
	c->generate.confidence_high = c->generate.confidence_medium = NAN;
	c->generate.cache_ttl_s = c->generate.cache_max_entries = CONFIG_UNSET;
	c->log.level = "info";
	c->log.access = true;
	c->cors.max_age_s = 600;
}
/* TEXT2SQLD_LISTEN_HOST, TEXT2SQLD_LISTEN_PORT, TEXT2SQLD_REDIS_URL (empty disables Redis). */
static int apply_env(struct reader *r)
{
	const char *v;
	if ((v = getenv("TEXT2SQLD_LISTEN_HOST")) && *v)
		r->cfg->listen.host = arena_strdup(&r->cfg->arena, v);
	if ((v = getenv("TEXT2SQLD_LISTEN_PORT")) && *v) {
		char *end;
		long port = strtol(v, &end, 10);
		if (*end || port < 0 || port > 65535)
			return t2s_error_set(r->err, T2S_ERR_INVALID,
					     "environment TEXT2SQLD_LISTEN_PORT: must be an integer between 0 and 65535");
		r->cfg->listen.port = (int)port;
	}
	if ((v = getenv("TEXT2SQLD_REDIS_URL"))) {
		if (!*v) {
			r->cfg->redis.url = NULL;
		} else if (strncmp(v, "redis://", 8) && strncmp(v, "unix://", 7)) {
			return t2s_error_set(r->err, T2S_ERR_INVALID,
					     "environment TEXT2SQLD_REDIS_URL: must start with redis:// or unix://");
		} else {
			r->cfg->redis.url = arena_strdup(&r->cfg->arena, v);
		}
	}
	return 0;
}

static int read_top(struct reader *r, json_t *root)
{
	static const char *const keys[] = {"listen", "limits", "execution", "catalog", "databases", "redis", "cache",
					   "link", "state", "values", "evidence", "generate", "models", "auth", "cors", "log", NULL};
	int rc = conf_check_keys(r, root, "", keys);
	json_t *v;
	if (rc < 0)
		return rc;
	/* catalog first: database entries inherit its pool_size. */
	if ((v = json_object_get(root, "catalog")) && (rc = conf_read_catalog(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "listen")) && (rc = conf_read_listen(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "limits")) && (rc = conf_read_limits(r, v)) < 0)
		return rc;
	conf_limits_finish(r->cfg);
	if ((v = json_object_get(root, "execution")) && (rc = conf_read_execution(r, v)) < 0)
		return rc;
	if (!(v = json_object_get(root, "databases")))
		return conf_bad(r, "databases", "is required (an array of {name, url})");
	if ((rc = conf_read_databases(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "redis")) && (rc = conf_read_redis(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "cache")) && (rc = conf_read_cache(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "state")) && (rc = conf_read_state(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "values")) && (rc = conf_read_values(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "evidence")) && (rc = conf_read_evidence(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "link")) && (rc = conf_read_link(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "generate")) && (rc = conf_read_generate(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "models")) && (rc = conf_read_models(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "auth")) && (rc = conf_read_auth(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "cors")) && (rc = conf_read_cors(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "log")) && (rc = conf_read_log(r, v)) < 0)
		return rc;
	rc = apply_env(r);
	if (rc == 0 && strncmp(r->cfg->state.url, "sqlite://", 9) == 0 && r->cfg->state.url[9] != '/')
		r->cfg->state.url = arena_printf(&r->cfg->arena, "sqlite://%s/%s", r->config_dir, r->cfg->state.url + 9);
	return rc;
}

static char *dir_of(struct arena *a, const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	if (!slash)
		return arena_strdup(a, ".");
	if (slash == path)
		return arena_strdup(a, "/");
	return arena_strndup(a, path, (size_t)(slash - path));
}

int config_load_string(const char *json_text, const char *path, struct config *ret, struct t2s_error *err)
{
	struct config cfg;
	memset(&cfg, 0, sizeof(cfg));
	arena_init(&cfg.arena);
	set_defaults(&cfg);
	cfg.path = arena_strdup(&cfg.arena, path ? path : "(string)");
	struct reader r = {.cfg = &cfg, .err = err, .config_dir = dir_of(&cfg.arena, path)};

	json_error_t jerr;
	json_t *root = json_loads(json_text, JSON_REJECT_DUPLICATES, &jerr);
	int rc;
	if (!root)
		rc = t2s_error_set(err, T2S_ERR_INVALID, "config %s: not valid JSON at line %d column %d: %s",
				   cfg.path, jerr.line, jerr.column, jerr.text);
	else
		rc = read_top(&r, root);
	json_decref(root);
	if (rc < 0) {
		if (rc == -T2S_ERR_NOMEM)
			t2s_error_set(err, T2S_ERR_NOMEM, "config: out of memory");
		arena_release(&cfg.arena);
		return rc;
	}
	*ret = cfg;
	return 0;
}

int config_load_file(const char *path, struct config *ret, struct t2s_error *err)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return t2s_error_set(err, T2S_ERR_INVALID, "config %s: cannot open: %s", path, strerror(errno));
	char *text = malloc(CONFIG_MAX_FILE_BYTES + 1);
	if (!text) {
		fclose(f);
		return t2s_error_set(err, T2S_ERR_NOMEM, "config: out of memory");
	}
	size_t n = fread(text, 1, CONFIG_MAX_FILE_BYTES + 1, f);
	fclose(f);
	if (n > CONFIG_MAX_FILE_BYTES) {
		free(text);
		return t2s_error_set(err, T2S_ERR_INVALID, "config %s: larger than %u bytes", path,
				     CONFIG_MAX_FILE_BYTES);
	}
	text[n] = '\0';
	int rc = config_load_string(text, path, ret, err);
	free(text);
	return rc;
}

void config_release(struct config *cfg)
{
	if (cfg)
		arena_release(&cfg->arena);
}
