/*
 * test_defaults.c - one default per setting.
 *
 * config/text2sqld.example.json documents every default; this test fails
 * when it drifts from the compiled-in ones: the config loader's own
 * defaults (service settings) and each stage's options defaults
 * (value_index_options_init, evidence_options_init, link_params_default,
 * column_index_options_init), which the loader leaves to the stages.  Also:
 * the loader leaves absent stage settings unset and reads given ones, and
 * the question limit of openapi/openapi.json is T2S_QUESTION_MAX_BYTES.
 * The models section too: every setting an example model endpoint (and its
 * fallback) shows, other than where the server is (base_url, model,
 * api_key_env, health_url), equals the loader's default for a model entry.
 * Prints TAP.
 */
#include "common/limits.h"
#include "config/config.h"
#include "pipeline/evidence/evidence.h"
#include "pipeline/generate/answer_cache.h"
#include "pipeline/generate/generate.h"
#include "pipeline/link/column_index.h"
#include "pipeline/link/link.h"
#include "pipeline/pipeline.h"
#include "pipeline/text/wordnet.h"
#include "pipeline/values/value_index.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/tap.h"

static const char *source_root(void)
{
	const char *r = getenv("T2S_SOURCE_ROOT");
	return r && *r ? r : ".";
}

static json_t *load_json(const char *relative)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", source_root(), relative);
	json_error_t e;
	json_t *j = json_load_file(path, 0, &e);
	if (!j)
		printf("# cannot read %s: %s\n", path, e.text);
	return j;
}

/* The HTTP front door's defaults (listen.reuse_port and trusted_proxies, the connection limits, deadlines and drain delay) and the worker pool's into all. */
static void add_http_defaults(json_t *all, const struct config *c)
{
	json_t *listen = json_object_get(all, "listen"), *limits = json_object_get(all, "limits");
	json_object_set_new(listen, "reuse_port", json_boolean(c->listen.reuse_port));
	json_t *trusted = json_array(); /* the example lists none: the compiled default is none */
	for (size_t i = 0; i < c->listen.n_trusted_proxies; i++)
		json_array_append_new(trusted, json_string("(a range)"));
	json_object_set_new(listen, "trusted_proxies", trusted);
	json_object_set_new(limits, "drain_delay_ms", json_integer(c->limits.drain_delay_ms));
	json_object_set_new(limits, "max_pending_connections", json_integer(c->limits.max_pending_connections));
	json_object_set_new(limits, "request_head_timeout_ms", json_integer(c->limits.request_head_timeout_ms));
	json_object_set_new(limits, "request_body_timeout_ms", json_integer(c->limits.request_body_timeout_ms));
	json_object_set_new(limits, "max_uri_bytes", json_integer((json_int_t)c->limits.max_uri_bytes));
	json_object_set_new(limits, "key_rate_per_s", json_real(c->limits.key_rate_per_s));
	json_object_set_new(limits, "key_burst", json_integer(c->limits.key_burst));
	json_object_set_new(limits, "key_max_concurrent", json_integer(c->limits.key_max_concurrent));
	json_object_set_new(limits, "key_max_timeout_ms", json_integer(c->limits.key_max_timeout_ms));
	json_object_set_new(limits, "worker_threads", json_integer(c->limits.worker_threads));
	json_object_set_new(limits, "max_list_page_bytes", json_integer((json_int_t)c->limits.max_list_page_bytes));
	json_object_set_new(limits, "mcp_max_sessions", json_integer(c->limits.mcp_max_sessions));
	json_object_set_new(limits, "mcp_session_idle_s", json_integer(c->limits.mcp_session_idle_s));
}

/* The defaults the service runs with, as the example config spells them. */
static json_t *compiled_defaults(const struct config *c)
{
	struct value_index_options vo;
	struct evidence_options eo;
	struct column_index_options co;
	const struct link_params *lp = &link_params_default;
	value_index_options_init(&vo);
	evidence_options_init(&eo);
	column_index_options_init(&co);
	const struct generate_options *go = &generate_options_default;
	json_t *generate = json_pack("{s:i, s:i, s:i, s:i, s:i, s:b, s:b, s:f, s:f, s:I, s:I, s:I, s:i, s:i, s:i, s:f, s:f, s:I, s:I}",
				     "max_rounds", go->max_rounds,
				     "max_rounds_limit", go->max_rounds_limit, "candidates", go->candidates,
				     "max_candidates", go->max_candidates, "confirm_calls", go->confirm_calls,
				     "adaptive_sampling", go->adaptive_sampling, "vote_by_confidence", go->vote_by_confidence, "confidence_high", confidence_bands_default.high,
				     "confidence_medium", confidence_bands_default.medium, "timeout_ms", (json_int_t)go->timeout_ms,
				     "max_timeout_ms", (json_int_t)go->max_timeout_ms, "token_budget",
				     (json_int_t)go->token_budget, "max_examples", go->max_examples,
				     "sample_values", go->sample_values, "max_history", go->max_history, "reuse_min_similarity",
				     go->reuse_min_similarity, "reuse_min_similarity_no_model", go->reuse_min_similarity_no_model,
				     "cache_ttl_s",
				     (json_int_t)ANSWER_CACHE_TTL_DEFAULT_S, "cache_max_entries",
				     (json_int_t)ANSWER_CACHE_ENTRIES_DEFAULT);
	json_t *all = json_pack(
		"{s:{s:s, s:i}, s:{s:I, s:I, s:I, s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I},"
		" s:{s:i, s:I, s:I, s:i, s:i, s:i, s:I, s:I}, s:{s:I, s:i}, s:{s:I, s:I}, s:{s:s, s:i, s:I, s:I},"
		" s:{s:b, s:i, s:i, s:I, s:f, s:i, s:f, s:i, s:i, s:f, s:I, s:i, s:{s:f, s:f, s:f}},"
		" s:{s:i, s:i, s:I, s:I, s:I, s:b, s:b, s:b}, s:{s:i, s:f, s:I, s:i}, s:{s:s, s:b}}",
		"listen", "host", c->listen.host, "port", c->listen.port,
		"limits", "max_connections", (json_int_t)c->limits.max_connections, "max_connections_per_ip",
		(json_int_t)c->limits.max_connections_per_ip, "connection_timeout_s", (json_int_t)c->limits.connection_timeout_s,
		"max_body_bytes", (json_int_t)c->limits.max_body_bytes, "max_header_bytes", (json_int_t)c->limits.max_header_bytes,
		"drain_timeout_ms", (json_int_t)c->limits.drain_timeout_ms,
		"execution", "timeout_ms", (json_int_t)c->execution.timeout_ms, "lock_timeout_ms",
		(json_int_t)c->execution.lock_timeout_ms, "default_max_rows", (json_int_t)c->execution.default_max_rows,
		"max_rows", (json_int_t)c->execution.max_rows, "max_sql_bytes", (json_int_t)c->execution.max_sql_bytes,
		"max_result_bytes", (json_int_t)c->execution.max_result_bytes, "max_statement_memory_bytes",
		(json_int_t)c->execution.max_statement_memory_bytes,
		"catalog", "pool_size", c->catalog.pool_size, "pool_wait_ms", (json_int_t)c->catalog.pool_wait_ms,
		"connect_timeout_s", (json_int_t)c->catalog.connect_timeout_s, "sample_values", c->catalog.sample_values,
		"sample_rows", c->catalog.sample_rows, "sample_value_max_len", c->catalog.sample_value_max_len,
		"introspect_timeout_ms", (json_int_t)c->catalog.introspect_timeout_ms, "row_count_scan_limit",
		(json_int_t)c->catalog.row_count_scan_limit,
		"redis", "timeout_ms", (json_int_t)c->redis.timeout_ms, "pool_size", c->redis.pool_size,
		"cache", "memory_max_bytes", (json_int_t)c->cache.memory_max_bytes, "redis_retry_after_ms",
		(json_int_t)c->cache.redis_retry_after_ms,
		"state", "url", c->state.url, "pool_size", c->state.pool_size, "max_examples_per_database",
		(json_int_t)c->state.max_examples_per_database, "max_feedback_per_database",
		(json_int_t)c->state.max_feedback_per_database,
		"link", "prebuild", c->link.prebuild, "top_k", lp->top_k, "min_k", lp->min_k, "budget_tokens",
		(json_int_t)lp->budget_tokens, "table_ratio", lp->table_ratio, "max_tables", lp->max_tables, "lexical_weight",
		lp->lexical_weight, "shuffles", lp->shuffles, "llm_max_tables", lp->llm_max_tables, "llm_min_vote_share",
		lp->llm_min_vote_share, "llm_column_budget_tokens", (json_int_t)lp->llm_column_budget_tokens, "lexical_dim",
		(int)co.lexical_dim, "weights", "connect", co.weights.connect, "semantic", co.weights.semantic, "statistical",
		co.weights.statistical,
		"values", "max_values_per_column", vo.max_values_per_column, "max_value_len", vo.max_value_len, "max_bytes",
		(json_int_t)vo.max_bytes, "column_timeout_ms", (json_int_t)vo.column_timeout_ms, "max_rows_scanned",
		(json_int_t)vo.max_rows_scanned, "skip_ids", vo.skip_ids, "skip_urls_emails", vo.skip_urls_emails,
		"skip_long_text", vo.skip_long_text,
		"evidence", "max_values", eo.max_values, "min_score", eo.min_score, "probe_timeout_ms",
		(json_int_t)eo.probe_timeout_ms, "max_examples", eo.max_examples,
		"log", "level", c->log.level, "access", c->log.access);
	if (all) {
		json_object_set_new(json_object_get(all, "catalog"), "recheck_s",
				    json_integer(PIPELINE_SYNC_RECHECK_DEFAULT_S));
		json_object_set_new(json_object_get(all, "state"), "poll_interval_ms",
				    json_integer(PIPELINE_SYNC_POLL_DEFAULT_MS));
		json_object_set_new(json_object_get(all, "execution"), "big_integers",
				    json_string(c->execution.big_integers_as_strings ? "string" : "number"));
		json_object_set_new(all, "cors", json_pack("{s:[], s:b, s:I}", "allowed_origins", "allow_credentials",
							   c->cors.allow_credentials, "max_age_s", (json_int_t)c->cors.max_age_s));
	}
	if (all) {
		json_object_set_new(all, "generate", generate);
		add_http_defaults(all, c);
		json_t *link = json_object_get(all, "link");
		json_object_set_new(link, "wordnet", json_boolean(c->link.wordnet));
		json_object_set_new(link, "wordnet_dir", json_string(c->link.wordnet_dir ? c->link.wordnet_dir
											: WORDNET_DEFAULT_DIR));
	} else {
		json_decref(generate);
	}
	return all;
}

static bool same_value(json_t *a, json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	return json_equal(a, b);
}

/* Every key of want (nested objects too) is in got with the same value; mismatches printed. */
static int compare(json_t *want, json_t *got, const char *path)
{
	int bad = 0;
	const char *key;
	json_t *w;
	json_object_foreach(want, key, w) {
		json_t *g = json_object_get(got, key);
		char sub[256];
		snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", key);
		if (json_is_object(w) && json_is_object(g)) {
			bad += compare(w, g, sub);
		} else if (!g || !same_value(w, g)) {
			char *ws = json_dumps(w, JSON_ENCODE_ANY), *gs = g ? json_dumps(g, JSON_ENCODE_ANY) : NULL;
			printf("#   %s: example has %s, compiled default is %s\n", sub, gs ? gs : "nothing", ws ? ws : "?");
			free(ws);
			free(gs);
			bad++;
		}
	}
	return bad;
}

/* Keys of the example's default-documenting sections that no compiled default backs. */
static int undocumented(json_t *example, json_t *want)
{
	static const char *const examples_only[] = {"databases", "models", "auth", "link.default_mode", "redis.url", NULL};
	int bad = 0;
	const char *section, *key;
	json_t *obj, *v;
	json_object_foreach(example, section, obj) {
		bool skip = false;
		for (const char *const *e = examples_only; *e; e++)
			skip |= strcmp(*e, section) == 0;
		if (skip || !json_is_object(obj))
			continue;
		json_object_foreach(obj, key, v) {
			char full[256];
			snprintf(full, sizeof(full), "%s.%s", section, key);
			bool example_only = false;
			for (const char *const *e = examples_only; *e; e++)
				example_only |= strcmp(*e, full) == 0;
			if (!example_only && !json_object_get(json_object_get(want, section), key)) {
				printf("#   %s: in the example, but no compiled default is checked\n", full);
				bad++;
			}
		}
	}
	return bad;
}

static void test_example_config_documents_the_defaults(void)
{
	struct config cfg;
	struct t2s_error err;
	json_t *example = load_json("config/text2sqld.example.json");
	int rc = config_load_string("{\"databases\": []}", NULL, &cfg, &err);
	TAP_OK(example && rc == 0, "example_config_and_defaults_load");
	if (!example || rc < 0)
		return;
	json_t *want = compiled_defaults(&cfg);
	/* the loader resolves the relative state file against the config's directory (".": none given) */
	const char *url = cfg.state.url;
	if (strncmp(url, "sqlite://./", 11) == 0)
		json_object_set_new(json_object_get(want, "state"), "url",
				    json_sprintf("sqlite://%s", url + 11));
	TAP_INT_EQ(compare(want, example, ""), 0, "example_config_values_equal_the_compiled_defaults");
	TAP_INT_EQ(undocumented(example, want), 0, "every_default_in_the_example_config_is_checked");
	json_decref(want);
	json_decref(example);
	config_release(&cfg);
}

/* The defaults of one model endpoint (config.c read_model_at), as the example spells them. */
static json_t *model_defaults(const struct config_model *m)
{
	return json_pack("{s:I, s:I, s:i, s:f, s:i, s:I, s:s, s:{s:i, s:I}}", "timeout_ms", (json_int_t)m->timeout_ms,
			 "connect_timeout_ms", (json_int_t)m->connect_timeout_ms, "retries", m->retries, "temperature",
			 m->temperature, "max_tokens", m->max_tokens, "context_tokens", (json_int_t)m->context_tokens,
			 "profile", m->profile, "breaker", "failures", m->breaker_failures, "cooldown_ms",
			 (json_int_t)m->breaker_cooldown_ms);
}

/*
 * Compare one example endpoint (at path) with the defaults: every key it
 * shows is either where the server is or a default with the same value.
 */
static int compare_model(json_t *entry, json_t *want, const char *path)
{
	static const char *const placement[] = {"base_url", "model", "api_key_env", "health_url", "fallback", NULL};
	int bad = 0;
	const char *key;
	json_t *v;
	json_object_foreach(entry, key, v) {
		bool where = false;
		for (const char *const *k = placement; *k; k++)
			where |= strcmp(*k, key) == 0;
		if (where)
			continue;
		json_t *w = json_object_get(want, key);
		char sub[256];
		snprintf(sub, sizeof(sub), "%s.%s", path, key);
		if (!w) {
			printf("#   %s: in the example, but no compiled default is checked\n", sub);
			bad++;
		} else if (json_is_object(w) && json_is_object(v)) {
			json_t *shown = json_object();
			const char *k2;
			json_t *v2;
			json_object_foreach(v, k2, v2) /* only what the example shows, each must exist */
				json_object_set(shown, k2, json_object_get(w, k2) ? json_object_get(w, k2) : json_null());
			bad += compare(shown, v, sub);
			json_decref(shown);
		} else {
			json_t *one = json_pack("{s:O}", key, w);
			json_t *got = json_pack("{s:O}", key, v);
			bad += compare(one, got, path);
			json_decref(one);
			json_decref(got);
		}
	}
	return bad;
}

static void test_example_models_show_the_defaults(void)
{
	struct config cfg;
	struct t2s_error err;
	json_t *example = load_json("config/text2sqld.example.json");
	int rc = config_load_string("{\"databases\": [], \"models\": {\"link\": {\"base_url\": \"http://127.0.0.1:1/v1\", "
				    "\"model\": \"m\", \"fallback\": {\"base_url\": \"http://127.0.0.1:2/v1\", \"model\": \"n\"}}}}",
				    NULL, &cfg, &err);
	json_t *models = json_object_get(example, "models");
	TAP_OK(rc == 0 && json_is_object(models) && json_object_size(models) > 0, "example_models_and_model_defaults_load");
	if (rc < 0 || !json_is_object(models)) {
		json_decref(example);
		if (rc == 0)
			config_release(&cfg);
		return;
	}
	const struct config_model *m = &cfg.models[MODEL_STAGE_LINK];
	json_t *want = model_defaults(m), *want_fallback = m->fallback ? model_defaults(m->fallback) : NULL;
	TAP_OK(want && want_fallback && json_equal(want, want_fallback), "a_fallback_has_the_same_defaults_as_its_stage");
	int bad = 0;
	const char *stage;
	json_t *entry;
	json_object_foreach(models, stage, entry) {
		char path[128];
		if (json_is_array(entry)) { /* generate_candidates: a list of model entries */
			size_t k;
			json_t *e;
			json_array_foreach(entry, k, e) {
				snprintf(path, sizeof(path), "models.%s[%zu]", stage, k);
				bad += compare_model(e, want, path);
			}
			continue;
		}
		snprintf(path, sizeof(path), "models.%s", stage);
		bad += compare_model(entry, want, path);
		json_t *fb = json_object_get(entry, "fallback");
		if (json_is_object(fb)) {
			snprintf(path, sizeof(path), "models.%s.fallback", stage);
			bad += compare_model(fb, want, path);
		}
	}
	TAP_INT_EQ(bad, 0, "example_model_settings_equal_the_compiled_defaults");
	json_decref(want);
	json_decref(want_fallback);
	json_decref(example);
	config_release(&cfg);
}

static void test_stage_settings_left_to_the_stages(void)
{
	struct config cfg;
	struct t2s_error err;
	int rc = config_load_string("{\"databases\": []}", NULL, &cfg, &err);
	TAP_OK(rc == 0 && cfg.values.max_values_per_column == CONFIG_UNSET && cfg.values.max_bytes == CONFIG_UNSET_SIZE &&
		       cfg.values.skip_ids == CONFIG_UNSET && cfg.link.top_k == CONFIG_UNSET &&
		       cfg.link.budget_tokens == CONFIG_UNSET && !config_is_set_double(cfg.evidence.min_score),
	       "absent_stage_settings_stay_unset");
	if (rc == 0)
		config_release(&cfg);
	rc = config_load_string("{\"databases\": [], \"values\": {\"max_values_per_column\": 7, \"skip_ids\": false},"
				" \"link\": {\"budget_tokens\": 0, \"top_k\": 3}, \"evidence\": {\"min_score\": 0.5}}",
				NULL, &cfg, &err);
	TAP_OK(rc == 0 && cfg.values.max_values_per_column == 7 && cfg.values.skip_ids == 0 &&
		       cfg.values.skip_long_text == CONFIG_UNSET && cfg.link.budget_tokens == 0 && cfg.link.top_k == 3 &&
		       cfg.link.min_k == CONFIG_UNSET && cfg.evidence.min_score == 0.5,
	       "given_stage_settings_are_read");
	if (rc == 0)
		config_release(&cfg);
	rc = config_load_string("{\"databases\": [], \"link\": {\"top_k\": 3, \"min_k\": 4}}", NULL, &cfg, &err);
	TAP_OK(rc < 0 && strstr(err.message, "link.min_k"), "min_k_above_top_k_rejected_when_both_given");
}

/* Every "question" property of the OpenAPI document has maxLength T2S_QUESTION_MAX_BYTES; counts them. */
static int question_limits(json_t *node, int *ret_wrong)
{
	int n = 0;
	if (json_is_object(node)) {
		const char *key;
		json_t *v;
		json_object_foreach(node, key, v) {
			json_t *max = json_object_get(v, "maxLength");
			if (strcmp(key, "question") == 0 && json_is_object(v) && max) {
				n++;
				if (json_integer_value(max) != T2S_QUESTION_MAX_BYTES)
					(*ret_wrong)++;
			}
			n += question_limits(v, ret_wrong);
		}
	} else if (json_is_array(node)) {
		size_t i;
		json_t *v;
		json_array_foreach(node, i, v)
			n += question_limits(v, ret_wrong);
	}
	return n;
}

/*
 * Fair share: one key's running requests default to a quarter of the served
 * connections (at least 1), follow max_connections when only that is set,
 * and one key may not ask more time than the generate stage's default budget.
 */
static void test_fair_share_defaults(void)
{
	struct config cfg;
	struct t2s_error err;
	int rc = config_load_string("{\"databases\": []}", NULL, &cfg, &err);
	TAP_OK(rc == 0 && cfg.limits.key_max_concurrent == cfg.limits.max_connections / 4,
	       "key_max_concurrent_defaults_to_a_quarter_of_max_connections");
	TAP_OK(rc == 0 && cfg.limits.key_max_timeout_ms == generate_options_default.timeout_ms &&
	       cfg.limits.key_max_timeout_ms <= generate_options_default.max_timeout_ms,
	       "key_max_timeout_ms_defaults_to_the_default_budget_within_max_timeout_ms");
	/* the default drain lets the longest default budget finish: a default start warns of nothing */
	TAP_OK(rc == 0 && (long)cfg.limits.drain_timeout_ms > generate_options_default.max_timeout_ms &&
	       (long)cfg.limits.drain_timeout_ms > cfg.execution.timeout_ms,
	       "default_drain_outlasts_the_default_budgets");
	if (rc == 0)
		config_release(&cfg);
	rc = config_load_string("{\"databases\": [], \"limits\": {\"max_connections\": 40}}", NULL, &cfg, &err);
	TAP_OK(rc == 0 && cfg.limits.key_max_concurrent == 10, "key_max_concurrent_follows_max_connections");
	if (rc == 0)
		config_release(&cfg);
	rc = config_load_string("{\"databases\": [], \"limits\": {\"max_connections\": 3}}", NULL, &cfg, &err);
	TAP_OK(rc == 0 && cfg.limits.key_max_concurrent == 1, "key_max_concurrent_is_at_least_1");
	if (rc == 0)
		config_release(&cfg);
	rc = config_load_string("{\"databases\": [], \"limits\": {\"max_connections\": 8, \"key_max_concurrent\": 9}}",
				NULL, &cfg, &err);
	TAP_OK(rc < 0 && strstr(err.message, "limits.key_max_concurrent"), "key_max_concurrent_above_max_connections_refused");
	if (rc == 0)
		config_release(&cfg);
}

static void test_question_limit_documented(void)
{
	json_t *doc = load_json("openapi/openapi.json");
	int wrong = 0, n = doc ? question_limits(doc, &wrong) : 0;
	TAP_OK(n >= 3 && wrong == 0, "openapi_question_max_length_is_the_compiled_limit");
	json_decref(doc);
}

int main(void)
{
	test_example_config_documents_the_defaults();
	test_example_models_show_the_defaults();
	test_stage_settings_left_to_the_stages();
	test_question_limit_documented();
	test_fair_share_defaults();
	return tap_done();
}
