/*
 * app.c - wiring the config into the pipeline: each stage's options struct
 * and model endpoint are filled here from struct config, so that no stage
 * but the catalog reads the config itself.  Each options struct starts from
 * the stage's own defaults (the one place they are defined); only the
 * settings the config file gives replace them (absent ones are unset in
 * struct config, see config.h).  The pipeline (pipeline/pipeline.h) starts
 * its background index builds and releases what is built here.
 */
#include "server/app.h"
#include "server/auth_jwt.h"
#include "server/log.h"
#include "common/workers.h"
#include "pipeline/db/db.h"
#include "pipeline/models/redis_client.h"
#include "pipeline/models/stage_metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fill *ret (strings borrowed from m) with the endpoint m describes for stage; false when m is absent. */
static bool model_endpoint_from_config(const struct config_model *m, enum model_stage stage,
				       struct model_endpoint *ret)
{
	if (!m || !m->present)
		return false;
	*ret = (struct model_endpoint){
		.stage = model_stage_name(stage),
		.base_url = m->base_url,
		.model = m->model,
		.api_key = m->api_key,
		.timeout_ms = m->timeout_ms,
		.connect_timeout_ms = m->connect_timeout_ms,
		.retries = m->retries,
		.temperature = m->temperature,
		.max_tokens = m->max_tokens,
		.logprobs = m->logprobs,
		.health_url = m->health_url,
	};
	return true;
}

/* Each setting the config gives replaces the stage's default in *dst. */
static void set_int(int *dst, int v)
{
	if (v != CONFIG_UNSET)
		*dst = v;
}

static void set_long(long *dst, long v)
{
	if (v != CONFIG_UNSET)
		*dst = v;
}

static void set_size(size_t *dst, size_t v)
{
	if (v != CONFIG_UNSET_SIZE)
		*dst = v;
}

static void set_bool(bool *dst, int v)
{
	if (v != CONFIG_UNSET)
		*dst = v != 0;
}

static void set_double(double *dst, double v)
{
	if (config_is_set_double(v))
		*dst = v;
}

/* link_params_default with the config's link settings; -T2S_ERR_INVALID when min_k ends above top_k. */
static int link_params_from_config(const struct config *cfg, struct link_params *ret, struct t2s_error *err)
{
	struct link_params p = link_params_default;
	set_int(&p.top_k, cfg->link.top_k);
	set_int(&p.min_k, cfg->link.min_k);
	set_long(&p.budget_tokens, cfg->link.budget_tokens);
	set_double(&p.table_ratio, cfg->link.table_ratio);
	set_int(&p.max_tables, cfg->link.max_tables);
	set_double(&p.lexical_weight, cfg->link.lexical_weight);
	set_int(&p.shuffles, cfg->link.shuffles);
	set_int(&p.llm_max_tables, cfg->link.llm_max_tables);
	set_double(&p.llm_min_vote_share, cfg->link.llm_min_vote_share);
	set_long(&p.llm_column_budget_tokens, cfg->link.llm_column_budget_tokens);
	if (p.min_k > p.top_k)
		return t2s_error_set(err, T2S_ERR_INVALID, "config link.min_k: must not exceed link.top_k (%d)", p.top_k);
	*ret = p;
	return 0;
}

static void column_index_options_from_config(const struct config *cfg, struct column_index_options *o)
{
	column_index_options_init(o);
	if (cfg->link.lexical_dim != CONFIG_UNSET)
		o->lexical_dim = (unsigned)cfg->link.lexical_dim;
	set_double(&o->weights.connect, cfg->link.weight_connect);
	set_double(&o->weights.semantic, cfg->link.weight_semantic);
	set_double(&o->weights.statistical, cfg->link.weight_statistical);
}

static void value_index_options_from_config(const struct config *cfg, struct value_index_options *o)
{
	value_index_options_init(o);
	set_int(&o->max_values_per_column, cfg->values.max_values_per_column);
	set_int(&o->max_value_len, cfg->values.max_value_len);
	set_size(&o->max_bytes, cfg->values.max_bytes);
	set_long(&o->column_timeout_ms, cfg->values.column_timeout_ms);
	set_long(&o->max_rows_scanned, cfg->values.max_rows_scanned);
	set_bool(&o->skip_ids, cfg->values.skip_ids);
	set_bool(&o->skip_urls_emails, cfg->values.skip_urls_emails);
	set_bool(&o->skip_long_text, cfg->values.skip_long_text);
}

static void evidence_options_from_config(const struct config *cfg, struct evidence_options *o)
{
	evidence_options_init(o);
	set_int(&o->max_values, cfg->evidence.max_values);
	set_double(&o->min_score, cfg->evidence.min_score);
	set_long(&o->probe_timeout_ms, cfg->evidence.probe_timeout_ms);
	set_int(&o->max_examples, cfg->evidence.max_examples);
}

/* Model endpoints, the embedding cache and the linking registry from the config. */
static int init_generate(struct app *app, struct t2s_error *err);

/* Load WordNet once (link.wordnet): its tables are then shared read-only by every thread. */
static int load_wordnet(struct app *app, struct t2s_error *err)
{
	int rc = wordnet_load(app->cfg->link.wordnet_dir, &app->pipeline.wordnet, err);
	if (rc < 0)
		return rc;
	struct wordnet_stats st;
	wordnet_stats(app->pipeline.wordnet, &st);
	log_json(LOG_INFO, "wordnet loaded",
		 json_pack("{s:s, s:I, s:I, s:f, s:f}", "dir",
			   app->cfg->link.wordnet_dir ? app->cfg->link.wordnet_dir : WORDNET_DEFAULT_DIR, "lemmas",
			   (json_int_t)st.lemmas, "synsets", (json_int_t)st.synsets, "memory_mib",
			   (double)st.bytes / (1024.0 * 1024.0), "load_ms", st.load_ms));
	return 0;
}

/*
 * The column scorer's weights: link.scorer_file, else the ones built into the
 * binary.  A file that is missing or does not parse, or a built-in copy that
 * does not, stops the start with an error naming it.
 */
static int load_link_scorer(const struct config *cfg, struct link_scorer *ret, struct t2s_error *err)
{
	if (cfg->link.scorer_file)
		return link_scorer_load(cfg->link.scorer_file, ret, err);
	const struct link_scorer *s = link_scorer_builtin(err);
	if (!s)
		return -T2S_ERR_INVALID;
	*ret = *s;
	return 0;
}

/* A failed database connect, with the driver's reason (hosts, ports, roles), for the log only (db.h). */
static void connect_note(const char *pool_name, const char *detail)
{
	log_json(LOG_WARN, "database connect failed", json_pack("{s:s, s:s}", "database", pool_name, "detail", detail));
}

int app_init_pipeline(struct app *app, struct t2s_error *err)
{
	const struct config *cfg = app->cfg;
	struct pipeline *p = &app->pipeline;
	db_set_connect_note(connect_note);
	p->exec = (struct exec_limits){
		.timeout_ms = cfg->execution.timeout_ms,
		.lock_timeout_ms = cfg->execution.lock_timeout_ms,
		.max_rows = cfg->execution.default_max_rows,
		.max_result_bytes = cfg->execution.max_result_bytes,
		.max_sql_bytes = cfg->execution.max_sql_bytes,
		.max_statement_memory_bytes = cfg->execution.max_statement_memory_bytes,
	};
	p->prebuild_links = cfg->link.prebuild;
	p->redis_url = cfg->redis.url;
	p->redis_timeout_ms = cfg->redis.timeout_ms;
	/* First: a missing WordNet stops the start before anything else is made. */
	int rc = cfg->link.wordnet ? load_wordnet(app, err) : 0;
	if (rc < 0 || (rc = workers_new(cfg->limits.worker_threads, 0, &p->workers, err)) < 0)
		return rc;
	for (int s = 0; s < MODEL_STAGE_COUNT; s++)
		app->pipeline.model_present[s] = model_endpoint_from_config(&cfg->models[s], (enum model_stage)s, &app->pipeline.models[s]);
	struct embed_cache_options co = {
		.redis_url = cfg->redis.url,
		.redis_timeout_ms = cfg->redis.timeout_ms,
		.redis_pool_size = cfg->redis.pool_size,
		.memory_max_bytes = cfg->cache.memory_max_bytes,
		.key_prefix = "t2s:emb:",
		.retry_after_ms = cfg->cache.redis_retry_after_ms,
	};
	rc = embed_cache_new(&co, &app->pipeline.cache, err);
	if (rc < 0)
		return rc;
	if ((rc = link_params_from_config(cfg, &app->pipeline.link_params, err)) < 0 ||
	    (rc = load_link_scorer(cfg, &p->link_scorer, err)) < 0)
		return rc;
	p->link_params.scorer = &p->link_scorer;
	p->link_params.workers = p->workers;
	const struct model_endpoint *link_model = pipeline_model(&app->pipeline, MODEL_STAGE_LINK);
	app->pipeline.link_default_mode = cfg->link.default_mode ? (enum link_mode)link_mode_parse(cfg->link.default_mode)
				 : link_model ? LINK_MODE_HYBRID : LINK_MODE_VECTOR;
	struct column_index_options lo;
	column_index_options_from_config(cfg, &lo);
	lo.wordnet = app->pipeline.wordnet;
	lo.embed_model = pipeline_model(&app->pipeline, MODEL_STAGE_EMBED);
	lo.cache = app->pipeline.cache;
	/* A failing embedder leaves a lexical index (reported as a fallback), tried again after its breaker's cooldown. */
	lo.lexical_on_remote_failure = true;
	if (lo.embed_model)
		lo.remote_retry_ms = cfg->models[MODEL_STAGE_EMBED].breaker_cooldown_ms;
	rc = column_index_registry_new(&lo, p->workers, &p->links, err);
	if (rc < 0)
		return rc;
	struct value_index_options vo;
	value_index_options_from_config(cfg, &vo);
	if ((rc = value_registry_new(&vo, p->workers, &p->values, err)) < 0)
		return rc;
	evidence_options_from_config(cfg, &app->pipeline.evidence_options);
	app->pipeline.evidence_options.model = pipeline_model(&app->pipeline, MODEL_STAGE_EVIDENCE);
	/* The state store is not needed to serve queries: a failure is reported, not fatal. */
	struct state_store_options so = {.pool_size = cfg->state.pool_size,
					 .max_examples_per_database = cfg->state.max_examples_per_database,
					 .max_feedback_per_database = cfg->state.max_feedback_per_database,
					 .max_page_bytes = (long)cfg->limits.max_list_page_bytes};
	struct t2s_error serr = {0};
	if (state_store_open_lazy(cfg->state.url, &so, &app->pipeline.state, &serr) < 0) {
		snprintf(app->pipeline.state_error, sizeof(app->pipeline.state_error), "%s", serr.message);
		log_json(LOG_WARN, "state store unusable", json_pack("{s:s}", "error", serr.message));
	} else if (state_store_ping(app->pipeline.state, &serr) < 0) { /* reopened with backoff on later use */
		log_json(LOG_WARN, "state store unavailable", json_pack("{s:s}", "error", serr.message));
	}
	return init_generate(app, err);
}

/* The route of stage: primary and fallback endpoints, each behind its breaker. */
static struct model_route stage_route(struct app *app, enum model_stage s)
{
	const struct config_model *m = &app->cfg->models[s];
	app->pipeline.fallback_present[s] = model_endpoint_from_config(m->fallback, s, &app->pipeline.fallbacks[s]);
	if (app->pipeline.model_present[s])
		model_breaker_init(&app->pipeline.breakers[s][0], model_stage_name(s), "primary", m->breaker_failures,
				   m->breaker_cooldown_ms);
	if (app->pipeline.fallback_present[s])
		model_breaker_init(&app->pipeline.breakers[s][1], model_stage_name(s), "fallback", m->fallback->breaker_failures,
				   m->fallback->breaker_cooldown_ms);
	return (struct model_route){
		.primary = pipeline_model(&app->pipeline, s),
		.primary_breaker = app->pipeline.model_present[s] ? &app->pipeline.breakers[s][0] : NULL,
		.fallback = app->pipeline.fallback_present[s] ? &app->pipeline.fallbacks[s] : NULL,
		.fallback_breaker = app->pipeline.fallback_present[s] ? &app->pipeline.breakers[s][1] : NULL,
	};
}

/* The routes of models.generate_candidates, each endpoint behind its own breaker ("candidate-K"). */
static int candidate_routes(struct app *app, struct t2s_error *err)
{
	const struct config *cfg = app->cfg;
	struct pipeline *p = &app->pipeline;
	size_t n = cfg->n_generate_candidates;
	if (n == 0)
		return 0;
	p->candidate_models = calloc(n, sizeof(*p->candidate_models));
	p->candidate_routes = calloc(n, sizeof(*p->candidate_routes));
	if (!p->candidate_models || !p->candidate_routes)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	p->n_candidate_models = n;
	for (size_t k = 0; k < n; k++) {
		const struct config_model *m = &cfg->generate_candidates[k];
		struct pipeline_candidate_model *cm = &p->candidate_models[k];
		snprintf(cm->label, sizeof(cm->label), "candidate-%zu", k);
		model_endpoint_from_config(m, MODEL_STAGE_GENERATE, &cm->primary);
		model_breaker_init(&cm->breakers[0], "generate", cm->label, m->breaker_failures, m->breaker_cooldown_ms);
		bool fallback = model_endpoint_from_config(m->fallback, MODEL_STAGE_GENERATE, &cm->fallback);
		if (fallback)
			model_breaker_init(&cm->breakers[1], "generate", cm->label, m->fallback->breaker_failures,
					   m->fallback->breaker_cooldown_ms);
		p->candidate_routes[k] = (struct model_route){
			.primary = &cm->primary,
			.primary_breaker = &cm->breakers[0],
			.fallback = fallback ? &cm->fallback : NULL,
			.fallback_breaker = fallback ? &cm->breakers[1] : NULL,
		};
	}
	p->generate.candidate_routes = p->candidate_routes;
	p->generate.n_candidate_routes = n;
	return 0;
}

/* What identifies the answers of the generation models, for the answer cache's keys. */
static void fingerprint(struct app *app)
{
	size_t off = 0;
	const enum model_stage stages[] = {MODEL_STAGE_GENERATE, MODEL_STAGE_DEBUG, MODEL_STAGE_LINK, MODEL_STAGE_EMBED};
	for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++) {
		const struct config_model *m = &app->cfg->models[stages[i]];
		int n = snprintf(app->pipeline.model_fingerprint + off, sizeof(app->pipeline.model_fingerprint) - off, "%s=%s|%s|%s|%g|%d|%ld;",
				 model_stage_name(stages[i]), m->present ? m->base_url : "", m->present ? m->model : "",
				 m->present ? m->profile : "", m->temperature, m->max_tokens, m->context_tokens);
		if (n < 0 || (size_t)n >= sizeof(app->pipeline.model_fingerprint) - off)
			break;
		off += (size_t)n;
	}
	for (size_t k = 0; k < app->cfg->n_generate_candidates; k++) {
		const struct config_model *m = &app->cfg->generate_candidates[k];
		int n = snprintf(app->pipeline.model_fingerprint + off, sizeof(app->pipeline.model_fingerprint) - off,
				 "candidate%zu=%s|%s|%s|%g|%d|%ld;", k, m->base_url, m->model, m->profile, m->temperature,
				 m->max_tokens, m->context_tokens);
		if (n < 0 || (size_t)n >= sizeof(app->pipeline.model_fingerprint) - off)
			break;
		off += (size_t)n;
	}
}

/*
 * The answer scorer's weights: generate.confidence_file, else the ones built
 * into the binary; a file that is missing or does not parse stops the start.
 */
static int load_confidence_scorer(const struct config *cfg, struct confidence_scorer *ret, struct t2s_error *err)
{
	if (cfg->generate.confidence_file)
		return confidence_scorer_load(cfg->generate.confidence_file, ret, err);
	const struct confidence_scorer *s = confidence_scorer_builtin(err);
	if (!s)
		return -T2S_ERR_INVALID;
	*ret = *s;
	return 0;
}

/* confidence_bands_default with the config's generate.confidence_high / _medium, in order. */
static int confidence_bands_from_config(const struct config *cfg, struct confidence_bands *ret, struct t2s_error *err)
{
	struct confidence_bands b = confidence_bands_default;
	set_double(&b.high, cfg->generate.confidence_high);
	set_double(&b.medium, cfg->generate.confidence_medium);
	if (b.medium > b.high)
		return t2s_error_set(err, T2S_ERR_INVALID,
				     "config generate.confidence_medium (%g) exceeds generate.confidence_high (%g)", b.medium,
				     b.high);
	*ret = b;
	return 0;
}

/*
 * generate_options_default with the config's generate settings;
 * -T2S_ERR_INVALID when a default and a given setting end out of order.
 */
static int generate_options_from_config(const struct config *cfg, struct generate_options *ret, struct t2s_error *err)
{
	struct generate_options o = generate_options_default;
	set_int(&o.max_rounds, cfg->generate.max_rounds);
	set_int(&o.max_rounds_limit, cfg->generate.max_rounds_limit);
	set_int(&o.candidates, cfg->generate.candidates);
	set_int(&o.max_candidates, cfg->generate.max_candidates);
	set_int(&o.confirm_calls, cfg->generate.confirm_calls);
	set_double(&o.builtin_min_confidence, cfg->generate.builtin_min_confidence);
	if (cfg->generate.adaptive_sampling != CONFIG_UNSET)
		o.adaptive_sampling = cfg->generate.adaptive_sampling != 0;
	if (cfg->generate.vote_by_confidence != CONFIG_UNSET)
		o.vote_by_confidence = cfg->generate.vote_by_confidence != 0;
	set_long(&o.timeout_ms, cfg->generate.timeout_ms);
	set_long(&o.max_timeout_ms, cfg->generate.max_timeout_ms);
	set_long(&o.token_budget, cfg->generate.token_budget);
	set_int(&o.max_examples, cfg->generate.max_examples);
	set_int(&o.sample_values, cfg->generate.sample_values);
	set_int(&o.max_history, cfg->generate.max_history);
	set_double(&o.reuse_min_similarity, cfg->generate.reuse_min_similarity);
	set_double(&o.reuse_min_similarity_no_model, cfg->generate.reuse_min_similarity_no_model);
	if (o.max_rounds > o.max_rounds_limit)
		return t2s_error_set(err, T2S_ERR_INVALID, "config generate.max_rounds (%d) exceeds generate.max_rounds_limit (%d)",
				     o.max_rounds, o.max_rounds_limit);
	if (o.candidates > o.max_candidates)
		return t2s_error_set(err, T2S_ERR_INVALID, "config generate.candidates (%d) exceeds generate.max_candidates (%d)",
				     o.candidates, o.max_candidates);
	if (o.timeout_ms > o.max_timeout_ms)
		return t2s_error_set(err, T2S_ERR_INVALID, "config generate.timeout_ms (%ld) exceeds generate.max_timeout_ms (%ld)",
				     o.timeout_ms, o.max_timeout_ms);
	*ret = o;
	return 0;
}

/* The generation environment: routes, options, limits and the answer cache. */
static int init_generate(struct app *app, struct t2s_error *err)
{
	const struct config *cfg = app->cfg;
	struct generate_env *g = &app->pipeline.generate;
	const struct config_model *gm = &cfg->models[MODEL_STAGE_GENERATE];
	g->generate = stage_route(app, MODEL_STAGE_GENERATE);
	g->debug = stage_route(app, MODEL_STAGE_DEBUG);
	g->links = app->pipeline.links;
	g->values = app->pipeline.values;
	g->state = app->pipeline.state;
	g->describe_cache = app->pipeline.cache;
	g->workers = app->pipeline.workers;
	g->link_params = &app->pipeline.link_params;
	g->link_mode = app->pipeline.link_default_mode;
	g->link_model = pipeline_model(&app->pipeline, MODEL_STAGE_LINK);
	g->embed_model = pipeline_model(&app->pipeline, MODEL_STAGE_EMBED);
	g->describe_model = pipeline_model(&app->pipeline, MODEL_STAGE_DESCRIBE);
	g->evidence = app->pipeline.evidence_options; /* /evidence's options, defaults applied */
	g->profile = gm->present ? gm->profile : "default";
	g->context_tokens = gm->present ? gm->context_tokens : 0;
	g->answer_tokens = gm->present ? gm->max_tokens : 0;
	g->exec = app->pipeline.exec;
	g->max_rows_limit = cfg->execution.max_rows;
	int rc = generate_options_from_config(cfg, &g->options, err);
	if (rc == 0)
		rc = load_confidence_scorer(cfg, &app->pipeline.confidence_scorer, err);
	if (rc == 0)
		rc = confidence_bands_from_config(cfg, &g->confidence_bands, err);
	g->confidence = &app->pipeline.confidence_scorer;
	if (rc == 0)
		rc = candidate_routes(app, err);
	if (rc < 0)
		return rc;
	stage_metrics_budgets_init();
	fingerprint(app);
	g->model_fingerprint = app->pipeline.model_fingerprint;
	long ttl_s = ANSWER_CACHE_TTL_DEFAULT_S, entries = ANSWER_CACHE_ENTRIES_DEFAULT;
	set_long(&ttl_s, cfg->generate.cache_ttl_s);
	set_long(&entries, cfg->generate.cache_max_entries);
	struct answer_cache_options ao = {
		.redis_url = cfg->redis.url,
		.redis_timeout_ms = cfg->redis.timeout_ms,
		.redis_pool_size = cfg->redis.pool_size,
		.memory_max_bytes = (size_t)entries * ANSWER_CACHE_ENTRY_BYTES,
		.ttl_s = ttl_s,
		.retry_after_ms = cfg->cache.redis_retry_after_ms,
		.secret = cfg->cache.secret,
		.secret_len = cfg->cache.secret ? strlen(cfg->cache.secret) : 0,
	};
	rc = answer_cache_new(&ao, &app->pipeline.answers, err);
	return rc;
}

/* The replica sync's notes (pipeline_sync_options.note) as log lines. */
static void sync_note(void *ctx, const char *what, const char *database, const char *detail)
{
	(void)ctx;
	json_t *fields = json_object();
	if (database)
		json_object_set_new(fields, "database", json_string(database));
	if (detail)
		json_object_set_new(fields, "detail", json_string(detail));
	log_json(LOG_INFO, what, fields);
}

int app_start_sync(struct app *app, struct t2s_error *err)
{
	struct pipeline_sync_options o = {.poll_ms = PIPELINE_SYNC_POLL_DEFAULT_MS,
					  .recheck_s = PIPELINE_SYNC_RECHECK_DEFAULT_S, .note = sync_note};
	set_long(&o.poll_ms, app->cfg->state.poll_interval_ms);
	set_long(&o.recheck_s, app->cfg->catalog.recheck_s);
	return pipeline_sync_start(&app->pipeline, &o, err);
}

bool app_drain_shorter_than_budget(const struct config *cfg, char *buf, size_t size)
{
	struct generate_options go = generate_options_default;
	struct t2s_error e = {0};
	buf[0] = '\0';
	if (generate_options_from_config(cfg, &go, &e) < 0)
		return false;
	long budget = go.max_timeout_ms;
	if (cfg->auth.enabled && cfg->limits.key_max_timeout_ms < budget)
		budget = cfg->limits.key_max_timeout_ms;
	long longest = budget > cfg->execution.timeout_ms ? budget : cfg->execution.timeout_ms;
	if ((long)cfg->limits.drain_timeout_ms >= longest)
		return false;
	snprintf(buf, size, "limits.drain_timeout_ms (%u) is shorter than the longest request budget (%ld ms: %s): "
		 "a drain would cut such a request with 503; raise it (and the gateway's or Kubernetes' grace "
		 "period) or lower the budget", cfg->limits.drain_timeout_ms, longest,
		 longest == cfg->execution.timeout_ms ? "execution.timeout_ms"
		 : cfg->auth.enabled && budget == cfg->limits.key_max_timeout_ms ? "limits.key_max_timeout_ms"
										  : "generate.max_timeout_ms");
	return true;
}

int app_check_config(const struct config *cfg, struct t2s_error *err)
{
	struct t2s_error e = {0};
	if (cfg->redis.url && redis_url_check(cfg->redis.url, &e) < 0)
		return t2s_error_set(err, T2S_ERR_INVALID, "config redis.url: %s", e.message);
	struct link_params lp;
	struct link_scorer sc;
	struct generate_options go;
	struct confidence_scorer cs;
	struct confidence_bands cb;
	int rc = link_params_from_config(cfg, &lp, err);
	if (rc == 0)
		rc = load_link_scorer(cfg, &sc, err);
	if (rc == 0)
		rc = load_confidence_scorer(cfg, &cs, err);
	if (rc == 0)
		rc = confidence_bands_from_config(cfg, &cb, err);
	if (rc == 0)
		rc = auth_jwt_keys_check(cfg, err); /* auth.jwt.jwks_file loads */
	return rc < 0 ? rc : generate_options_from_config(cfg, &go, err);
}
