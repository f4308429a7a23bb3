/*
 * config_stages.c - the config sections of the pipeline stages and their
 * models: values, evidence, link, generate, models (see config.h; a stage
 * setting left out stays unset and the stage's default applies).
 */
#include "config/config_internal.h"

#include "common/limits.h"

#include <stdio.h>
#include <string.h>

int conf_read_values(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"max_values_per_column", "max_value_len", "max_bytes", "column_timeout_ms",
					   "max_rows_scanned", "skip_ids", "skip_urls_emails", "skip_long_text", NULL};
	const char *p = "values";
	struct config *c = r->cfg;
	int rc;
	if ((rc = conf_check_keys(r, o, p, keys)) < 0 ||
	    (rc = conf_get_int(r, o, p, "max_values_per_column", 1, 1000000, &c->values.max_values_per_column)) < 0 ||
	    (rc = conf_get_int(r, o, p, "max_value_len", 8, 10000, &c->values.max_value_len)) < 0 ||
	    (rc = conf_get_size(r, o, p, "max_bytes", 1024, 1L << 36, &c->values.max_bytes)) < 0 ||
	    (rc = conf_get_long(r, o, p, "column_timeout_ms", 10, 3600000, &c->values.column_timeout_ms)) < 0 ||
	    (rc = conf_get_long(r, o, p, "max_rows_scanned", 1, 1000000000, &c->values.max_rows_scanned)) < 0 ||
	    (rc = conf_get_tristate(r, o, p, "skip_ids", &c->values.skip_ids)) < 0 ||
	    (rc = conf_get_tristate(r, o, p, "skip_urls_emails", &c->values.skip_urls_emails)) < 0 ||
	    (rc = conf_get_tristate(r, o, p, "skip_long_text", &c->values.skip_long_text)) < 0)
		return rc;
	return 0;
}

int conf_read_evidence(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"max_values", "min_score", "probe_timeout_ms", "max_examples", NULL};
	const char *p = "evidence";
	struct config *c = r->cfg;
	int rc;
	if ((rc = conf_check_keys(r, o, p, keys)) < 0 || (rc = conf_get_int(r, o, p, "max_values", 1, 1000, &c->evidence.max_values)) < 0 ||
	    (rc = conf_get_double(r, o, p, "min_score", 0.0, 1.0, &c->evidence.min_score)) < 0 ||
	    (rc = conf_get_long(r, o, p, "probe_timeout_ms", 10, 600000, &c->evidence.probe_timeout_ms)) < 0 ||
	    (rc = conf_get_int(r, o, p, "max_examples", 0, 100, &c->evidence.max_examples)) < 0)
		return rc;
	return 0;
}

int conf_read_link(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"default_mode", "prebuild", "top_k", "min_k", "budget_tokens", "table_ratio",
					   "max_tables", "lexical_weight", "shuffles", "llm_max_tables", "llm_min_vote_share",
					   "llm_column_budget_tokens", "lexical_dim", "weights", "wordnet", "wordnet_dir",
					   "scorer_file", NULL};
	static const char *const weight_keys[] = {"connect", "semantic", "statistical", NULL};
	const char *p = "link";
	struct config *c = r->cfg;
	int rc;
	if ((rc = conf_check_keys(r, o, p, keys)) < 0 ||
	    (rc = conf_get_string(r, o, p, "default_mode", false, &c->link.default_mode)) < 0 ||
	    (rc = conf_get_bool(r, o, p, "prebuild", &c->link.prebuild)) < 0 ||
	    (rc = conf_get_bool(r, o, p, "wordnet", &c->link.wordnet)) < 0 ||
	    (rc = conf_get_string(r, o, p, "wordnet_dir", false, &c->link.wordnet_dir)) < 0 ||
	    (rc = conf_get_int(r, o, p, "top_k", 1, 10000, &c->link.top_k)) < 0 ||
	    (rc = conf_get_int(r, o, p, "min_k", 1, 10000, &c->link.min_k)) < 0 ||
	    (rc = conf_get_long(r, o, p, "budget_tokens", 0, 10000000, &c->link.budget_tokens)) < 0 ||
	    (rc = conf_get_string(r, o, p, "scorer_file", false, &c->link.scorer_file)) < 0 ||
	    (rc = conf_get_double(r, o, p, "table_ratio", 0.0, 1.0, &c->link.table_ratio)) < 0 ||
	    (rc = conf_get_int(r, o, p, "max_tables", 1, 10000, &c->link.max_tables)) < 0 ||
	    (rc = conf_get_double(r, o, p, "lexical_weight", 0.0, 1.0, &c->link.lexical_weight)) < 0 ||
	    (rc = conf_get_int(r, o, p, "shuffles", 1, 16, &c->link.shuffles)) < 0 ||
	    (rc = conf_get_int(r, o, p, "llm_max_tables", 1, 10000, &c->link.llm_max_tables)) < 0 ||
	    (rc = conf_get_double(r, o, p, "llm_min_vote_share", 0.0, 1.0, &c->link.llm_min_vote_share)) < 0 ||
	    (rc = conf_get_long(r, o, p, "llm_column_budget_tokens", 0, 10000000, &c->link.llm_column_budget_tokens)) < 0 ||
	    (rc = conf_get_int(r, o, p, "lexical_dim", 64, 65536, &c->link.lexical_dim)) < 0)
		return rc;
	const char *m = c->link.default_mode;
	if (m && strcmp(m, "vector") && strcmp(m, "llm") && strcmp(m, "hybrid"))
		return conf_bad(r, "link.default_mode", "must be one of vector, llm, hybrid");
	/* with one of them unset, server/app.c checks against the stage's default */
	if (c->link.min_k != CONFIG_UNSET && c->link.top_k != CONFIG_UNSET && c->link.min_k > c->link.top_k)
		return conf_bad(r, "link.min_k", "must not exceed link.top_k");
	json_t *w = json_object_get(o, "weights");
	if (w && ((rc = conf_check_keys(r, w, "link.weights", weight_keys)) < 0 ||
		  (rc = conf_get_double(r, w, "link.weights", "connect", 0.0, 100.0, &c->link.weight_connect)) < 0 ||
		  (rc = conf_get_double(r, w, "link.weights", "semantic", 0.0, 100.0, &c->link.weight_semantic)) < 0 ||
		  (rc = conf_get_double(r, w, "link.weights", "statistical", 0.0, 100.0, &c->link.weight_statistical)) < 0))
		return rc;
	return 0;
}

/*
 * One model endpoint at path p into *m.  A stage's entry (fallback_allowed)
 * may hold a "fallback" entry of the same form, itself without a fallback.
 */
static int read_model_at(struct reader *r, json_t *o, const char *p, struct config_model *m, bool fallback_allowed)
{
	static const char *const keys[] = {"base_url", "model", "api_key_env", "timeout_ms", "connect_timeout_ms",
					   "retries", "temperature", "max_tokens", "context_tokens", "profile",
					   "breaker", "fallback", "health_url", "logprobs", NULL};
	static const char *const breaker_keys[] = {"failures", "cooldown_ms", NULL};
	int rc;
	m->timeout_ms = T2S_MODEL_TIMEOUT_DEFAULT_MS;
	m->connect_timeout_ms = T2S_MODEL_CONNECT_TIMEOUT_DEFAULT_MS;
	m->retries = 2;
	m->temperature = 0.0;
	m->max_tokens = 1024;
	m->context_tokens = 8192;
	m->profile = "default";
	m->breaker_failures = 5;
	m->breaker_cooldown_ms = 30000;
	json_t *breaker = json_object_get(o, "breaker"), *fallback = json_object_get(o, "fallback");
	if ((rc = conf_check_keys(r, o, p, keys)) < 0)
		return rc;
	if (fallback && !fallback_allowed)
		return conf_bad(r, conf_join_path(r, p, "fallback"), "a fallback has no fallback of its own");
	if (breaker) {
		char *bp = conf_join_path(r, p, "breaker");
		if ((rc = conf_check_keys(r, breaker, bp, breaker_keys)) < 0 ||
		    (rc = conf_get_int(r, breaker, bp, "failures", 1, 1000, &m->breaker_failures)) < 0 ||
		    (rc = conf_get_long(r, breaker, bp, "cooldown_ms", 1, 3600000, &m->breaker_cooldown_ms)) < 0)
			return rc;
	}
	if ((rc = conf_get_string(r, o, p, "profile", false, &m->profile)) < 0)
		return rc;
	if (strcmp(m->profile, "default") != 0 && strcmp(m->profile, "lite-sql") != 0)
		return conf_bad(r, conf_join_path(r, p, "profile"), "must be \"default\" or \"lite-sql\"");
	if ((rc = conf_get_long(r, o, p, "context_tokens", 256, 10000000, &m->context_tokens)) < 0 ||
	    (rc = conf_get_string(r, o, p, "base_url", true, &m->base_url)) < 0 ||
	    (rc = conf_get_string(r, o, p, "model", true, &m->model)) < 0 ||
	    (rc = conf_get_string(r, o, p, "api_key_env", false, &m->api_key_env)) < 0 ||
	    (rc = conf_get_long(r, o, p, "timeout_ms", 1, 3600000, &m->timeout_ms)) < 0 ||
	    (rc = conf_get_long(r, o, p, "connect_timeout_ms", 1, 600000, &m->connect_timeout_ms)) < 0 ||
	    (rc = conf_get_int(r, o, p, "retries", 0, 10, &m->retries)) < 0 ||
	    (rc = conf_get_double(r, o, p, "temperature", 0.0, 2.0, &m->temperature)) < 0 ||
	    (rc = conf_get_int(r, o, p, "max_tokens", 1, 1000000, &m->max_tokens)) < 0 ||
	    (rc = conf_get_bool(r, o, p, "logprobs", &m->logprobs)) < 0)
		return rc;
	if (strncmp(m->base_url, "http://", 7) != 0 && strncmp(m->base_url, "https://", 8) != 0)
		return conf_bad(r, conf_join_path(r, p, "base_url"), "must start with http:// or https://");
	if ((rc = conf_get_string(r, o, p, "health_url", false, &m->health_url)) < 0)
		return rc;
	if (m->health_url && strncmp(m->health_url, "http://", 7) != 0 && strncmp(m->health_url, "https://", 8) != 0)
		return conf_bad(r, conf_join_path(r, p, "health_url"), "must start with http:// or https://");
	if (m->api_key_env) {
		const char *key = getenv(m->api_key_env);
		if (!key || !*key)
			return conf_bad(r, conf_join_path(r, p, "api_key_env"), "names an environment variable that is not set");
		m->api_key = arena_strdup(&r->cfg->arena, key);
	}
	if (fallback) {
		if (!json_is_object(fallback))
			return conf_bad(r, conf_join_path(r, p, "fallback"), "must be an object");
		m->fallback = arena_alloc(&r->cfg->arena, sizeof(*m->fallback));
		if (!m->fallback)
			return conf_bad(r, p, "out of memory");
		memset(m->fallback, 0, sizeof(*m->fallback));
		if ((rc = read_model_at(r, fallback, conf_join_path(r, p, "fallback"), m->fallback, false)) < 0)
			return rc;
	}
	m->present = true;
	return 0;
}

static int read_model(struct reader *r, json_t *o, enum model_stage stage)
{
	char *p = arena_printf(&r->cfg->arena, "models.%s", model_stage_name(stage));
	if (!json_is_object(o))
		return conf_bad(r, p, "must be an object");
	return read_model_at(r, o, p, &r->cfg->models[stage], true);
}

/* Both given: lo must not exceed hi (a single one is checked against the stage's default at start). */
static int check_order(struct reader *r, long lo, long hi, const char *lo_key, const char *hi_key)
{
	if (lo != CONFIG_UNSET && hi != CONFIG_UNSET && lo > hi)
		return t2s_error_set(r->err, T2S_ERR_INVALID, "config generate.%s: must not exceed generate.%s", lo_key,
				     hi_key);
	return 0;
}

int conf_read_generate(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"max_rounds", "max_rounds_limit", "candidates", "max_candidates",
					   "confirm_calls", "timeout_ms", "max_timeout_ms", "token_budget", "max_examples",
					   "sample_values", "max_history", "cache_ttl_s", "cache_max_entries",
					   "reuse_min_similarity", "reuse_min_similarity_no_model", "confidence_file",
					   "confidence_high", "confidence_medium", "adaptive_sampling",
					   "builtin_min_confidence", "vote_by_confidence", NULL};
	const char *p = "generate";
	struct config *c = r->cfg;
	int rc;
	bool adaptive = false;
	if (json_object_get(o, "adaptive_sampling")) {
		if ((rc = conf_get_bool(r, o, p, "adaptive_sampling", &adaptive)) < 0)
			return rc;
		c->generate.adaptive_sampling = adaptive;
	}
	bool by_confidence = false;
	if (json_object_get(o, "vote_by_confidence")) {
		if ((rc = conf_get_bool(r, o, p, "vote_by_confidence", &by_confidence)) < 0)
			return rc;
		c->generate.vote_by_confidence = by_confidence;
	}
	if ((rc = conf_check_keys(r, o, p, keys)) < 0 ||
	    (rc = conf_get_int(r, o, p, "max_rounds_limit", 0, 20, &c->generate.max_rounds_limit)) < 0 ||
	    (rc = conf_get_int(r, o, p, "max_rounds", 0, 20, &c->generate.max_rounds)) < 0 ||
	    (rc = conf_get_int(r, o, p, "max_candidates", 1, 32, &c->generate.max_candidates)) < 0 ||
	    (rc = conf_get_int(r, o, p, "candidates", 1, 32, &c->generate.candidates)) < 0 ||
	    (rc = conf_get_int(r, o, p, "confirm_calls", 0, 2, &c->generate.confirm_calls)) < 0 ||
	    (rc = conf_get_long(r, o, p, "max_timeout_ms", 100, 3600000, &c->generate.max_timeout_ms)) < 0 ||
	    (rc = conf_get_long(r, o, p, "timeout_ms", 100, 3600000, &c->generate.timeout_ms)) < 0 ||
	    (rc = conf_get_long(r, o, p, "token_budget", 0, 100000000, &c->generate.token_budget)) < 0 ||
	    (rc = conf_get_int(r, o, p, "max_examples", 0, 50, &c->generate.max_examples)) < 0 ||
	    (rc = conf_get_int(r, o, p, "sample_values", 0, 20, &c->generate.sample_values)) < 0 ||
	    (rc = conf_get_int(r, o, p, "max_history", 0, 100, &c->generate.max_history)) < 0 ||
	    (rc = conf_get_double(r, o, p, "reuse_min_similarity", 0.5, 2.0, &c->generate.reuse_min_similarity)) < 0 ||
	    (rc = conf_get_double(r, o, p, "reuse_min_similarity_no_model", 0.5, 2.0,
				  &c->generate.reuse_min_similarity_no_model)) < 0 ||
	    (rc = conf_get_string(r, o, p, "confidence_file", false, &c->generate.confidence_file)) < 0 ||
	    (rc = conf_get_double(r, o, p, "confidence_high", 0.0, 1.0, &c->generate.confidence_high)) < 0 ||
	    (rc = conf_get_double(r, o, p, "confidence_medium", 0.0, 1.0, &c->generate.confidence_medium)) < 0 ||
	    (rc = conf_get_double(r, o, p, "builtin_min_confidence", 0.0, 1.0, &c->generate.builtin_min_confidence)) < 0 ||
	    (rc = conf_get_long(r, o, p, "cache_ttl_s", 0, 30L * 86400, &c->generate.cache_ttl_s)) < 0 ||
	    (rc = conf_get_long(r, o, p, "cache_max_entries", 1, 10000000, &c->generate.cache_max_entries)) < 0 ||
	    (rc = check_order(r, c->generate.max_rounds, c->generate.max_rounds_limit, "max_rounds",
			      "max_rounds_limit")) < 0 ||
	    (rc = check_order(r, c->generate.candidates, c->generate.max_candidates, "candidates",
			      "max_candidates")) < 0 ||
	    (rc = check_order(r, c->generate.timeout_ms, c->generate.max_timeout_ms, "timeout_ms",
			      "max_timeout_ms")) < 0)
		return rc;
	return 0;
}

/* Entries of models.generate_candidates (as many as generate.max_candidates may ask). */
#define GENERATE_CANDIDATE_MODELS_MAX 32

/* models.generate_candidates: a list of generate endpoints, one per first-round candidate (wrapping). */
static int read_generate_candidates(struct reader *r, json_t *a)
{
	const char *p = "models.generate_candidates";
	struct config *c = r->cfg;
	size_t n = json_array_size(a);
	if (!json_is_array(a) || n < 1 || n > GENERATE_CANDIDATE_MODELS_MAX)
		return conf_bad(r, p, "must be an array of 1 to 32 model objects");
	if (!c->models[MODEL_STAGE_GENERATE].present)
		return conf_bad(r, p, "needs models.generate (corrections and readiness use it)");
	c->generate_candidates = arena_calloc(&c->arena, n, sizeof(*c->generate_candidates));
	if (!c->generate_candidates)
		return conf_bad(r, p, "out of memory");
	for (size_t k = 0; k < n; k++) {
		char *ep = arena_printf(&c->arena, "%s[%zu]", p, k);
		json_t *m = json_array_get(a, k);
		if (!json_is_object(m))
			return conf_bad(r, ep, "must be an object");
		int rc = read_model_at(r, m, ep, &c->generate_candidates[k], true);
		if (rc < 0)
			return rc;
	}
	c->n_generate_candidates = n;
	return 0;
}

int conf_read_models(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"embed", "link", "describe", "evidence", "generate", "debug",
					   "generate_candidates", NULL};
	int rc = conf_check_keys(r, o, "models", keys);
	for (int s = 0; rc == 0 && s < MODEL_STAGE_COUNT; s++) {
		json_t *m = json_object_get(o, model_stage_name((enum model_stage)s));
		if (m)
			rc = read_model(r, m, (enum model_stage)s);
	}
	json_t *candidates = json_object_get(o, "generate_candidates");
	if (rc == 0 && candidates)
		rc = read_generate_candidates(r, candidates);
	return rc;
}
