/*
 * pipeline.h - the service layer: one struct pipeline owns every process-wide
 * part of the stages (catalog, WordNet, embedding and answer caches, index
 * registries, state store, model routes and each stage's options), and one
 * entry point per operation composes the stages for it.  Handlers parse a
 * request, call one entry point and render its result with the renderer
 * beside the result's struct (link_json.h, evidence_json.h,
 * describe_json.h, exec_json.h, state_json.h, pipeline_json.h); they reach
 * nothing else of pipeline/ (scripts/check-layers.py).
 *
 * Building: server/app.c fills the struct from the config (it is the one
 * place that translates config into stage options) and then calls
 * pipeline_prepare_indexes; pipeline_release frees it all.  After start
 * the struct is read-only: every entry point may run on any number of
 * threads at once.
 *
 * Ownership: each entry point fills a result struct the caller releases
 * with the matching *_release (also after a failure: a zeroed or partly
 * filled result is released safely).  Stage inputs (the schema, the column
 * and value indexes) are acquired once per call and held by the result
 * until it is released.  Errors are -T2S_ERR_* with err filled.
 */
#ifndef T2S_PIPELINE_H
#define T2S_PIPELINE_H

#include "common/contract.h"
#include "common/arena.h"
#include "common/error.h"
#include "common/workers.h"
#include "pipeline/db/catalog.h"
#include "pipeline/describe/describe.h"
#include "pipeline/evidence/evidence.h"
#include "pipeline/generate/answer_cache.h"
#include "pipeline/generate/generate.h"
#include "pipeline/link/column_index_registry.h"
#include "pipeline/link/link.h"
#include "pipeline/models/embed_cache.h"
#include "pipeline/models/model_client.h"
#include "pipeline/models/model_route.h"
#include "pipeline/sql/exec.h"
#include "pipeline/store/state_store.h"
#include "pipeline/text/wordnet.h"
#include "pipeline/values/value_registry.h"

#include <stdbool.h>
#include <stdint.h>

/* One of models.generate_candidates: its endpoints and their breakers (labelled "candidate-K"). */
struct pipeline_candidate_model {
	struct model_endpoint primary, fallback;
	struct model_breaker breakers[2]; /* [0 primary, 1 fallback] */
	char label[32];
};

struct pipeline {
	struct workers *workers;          /* the bounded thread pool (limits.worker_threads); freed last */
	struct catalog catalog;
	struct wordnet *wordnet;          /* read-only after start; NULL when link.wordnet is off */
	struct embed_cache *cache;        /* embeddings and model descriptions: Redis when configured, in-process always */
	struct column_index_registry *links; /* linking index per database */
	struct value_registry *values;    /* value index per database, built in the background */
	struct state_store *state;        /* examples, overrides, feedback; NULL when it could not open */
	char state_error[T2S_ERROR_MESSAGE_MAX]; /* why state is NULL */
	struct answer_cache *answers;     /* NULL when generate.cache_ttl_s is 0 */
	struct model_endpoint models[MODEL_STAGE_COUNT];
	bool model_present[MODEL_STAGE_COUNT];
	struct model_endpoint fallbacks[MODEL_STAGE_COUNT];
	bool fallback_present[MODEL_STAGE_COUNT];
	struct model_breaker breakers[MODEL_STAGE_COUNT][2]; /* [stage][0 primary, 1 fallback] */
	struct pipeline_candidate_model *candidate_models; /* models.generate_candidates (malloc'd), or NULL */
	struct model_route *candidate_routes;  /* one per candidate model (malloc'd); generate.candidate_routes */
	size_t n_candidate_models;
	struct link_params link_params;
	struct link_scorer link_scorer;   /* link_params.scorer points here: link.scorer_file or the built-in one */
	struct confidence_scorer confidence_scorer; /* generate.confidence points here: generate.confidence_file
						       or the built-in one */
	enum link_mode link_default_mode;
	bool prebuild_links;              /* build linking indexes at start and on refresh, not on first use */
	struct evidence_options evidence_options;
	struct generate_env generate;     /* what /generate and /query use */
	struct exec_limits exec;          /* max_rows: the default of a request */
	const char *redis_url;            /* NULL: no Redis (readiness checks it) */
	long redis_timeout_ms;
	char model_fingerprint[2048];     /* identity of the generation models, for the answer cache */
	struct pipeline_sync *sync;       /* replicas agreeing (pipeline_sync_start), or NULL */
};

/* The endpoint of stage, or NULL when none is configured. */
static inline const struct model_endpoint *pipeline_model(const struct pipeline *p, enum model_stage stage)
{
	return p->model_present[stage] ? &p->models[stage] : NULL;
}

/* Start the background index builds of every database whose schema is known. */
void pipeline_prepare_indexes(struct pipeline *p);
/* The same for one database (one added by a reload: catalog_update). */
void pipeline_prepare_database(struct pipeline *p, struct catalog_db *db);
/*
 * Free everything the pipeline holds (index builds are cancelled and joined
 * first).  Parts never made are NULL and skipped.
 */
void pipeline_release(struct pipeline *p);

/* ---- replicas that agree ----------------------------------------------------- */

/* Defaults of the config's state.poll_interval_ms and catalog.recheck_s. */
#define PIPELINE_SYNC_POLL_DEFAULT_MS 2000L
#define PIPELINE_SYNC_RECHECK_DEFAULT_S 300L

struct pipeline_sync_options {
	long poll_ms;                     /* read the state store's versions this often; 0: only when woken */
	long recheck_s;                   /* introspect every database this often, applying a changed schema; 0: never */
	/* Told of every invalidation received and of the channel's state (database or detail may be NULL). */
	void (*note)(void *ctx, const char *what, const char *database, const char *detail);
	void *note_ctx;
};

/*
 * Start keeping this replica in step with the others (pipeline_sync.c):
 * refreshes, examples, overrides and feedback made on any replica reach
 * this one through Redis pub/sub (when redis_url is set) and by polling
 * the state store's versions; schemas are rechecked every recheck_s.
 * After the catalog and the state store are made; pipeline_release stops it.
 */
T2S_MUST_CHECK
int pipeline_sync_start(struct pipeline *p, const struct pipeline_sync_options *o, struct t2s_error *err);

/* ---- databases ------------------------------------------------------------ */

/* The databases served now (catalog.h), borrowed for the pipeline's life: read n and dbs from this one list. */
const struct catalog_list *pipeline_databases(struct pipeline *p);
/* The registered database called name, or NULL (borrowed). */
struct catalog_db *pipeline_database_find(struct pipeline *p, const char *name);
/* 0 when db's schema model is known or introspected now (on first use); else the catalog's error. */
T2S_MUST_CHECK
int pipeline_database_check(struct catalog_db *db, struct t2s_error *err);
/*
 * db's schema model as JSON text (schema.h's schema_to_json_text, a table at
 * a time): 0 and *ret_text malloc'd (the caller frees it; NULL when it could
 * not be encoded, out of memory) with *ret_len its length, or the error of
 * pipeline_database_check.
 *
 * Table-level access: pipeline_grant_init makes a grant of tables (borrowed, API
 * names; schema_grant_init), and every entry point below taking a grant
 * (schema_grant.h; the caller's tables of db, NULL: every table) runs on
 * the caller's view of the schema, so that nothing it returns, links,
 * describes, probes, prompts or runs reaches another table.
 */
T2S_MUST_CHECK
int pipeline_grant_init(struct schema_grant *g, const char *const *tables, size_t n_tables);
T2S_MUST_CHECK
int pipeline_database_schema_json(struct catalog_db *db, const struct schema_grant *grant, char **ret_text,
				  size_t *ret_len, struct t2s_error *err);

struct pipeline_refresh {
	struct catalog_db *db;
	struct schema *fresh;             /* reference */
	char previous_hash[65];           /* "" when there was no schema before */
};

/*
 * Introspect db again; the indexes follow the new schema (built in the
 * background) and the stored descriptions of older schemas are pruned.  A
 * failure to reach the database is -T2S_ERR_UNAVAILABLE (timeouts and out
 * of memory keep their codes).
 */
T2S_MUST_CHECK
int pipeline_refresh(struct pipeline *p, struct catalog_db *db, struct pipeline_refresh *ret, struct t2s_error *err);
void pipeline_refresh_release(struct pipeline_refresh *r);

/* ---- readiness -------------------------------------------------------------- */

struct pipeline_check {
	const char *name;                 /* the database's or the stage's name (borrowed) */
	bool configured;                  /* for redis and the model stages: false means not checked */
	bool up;
	char error[T2S_ERROR_MESSAGE_MAX];
	char warning[T2S_ERROR_MESSAGE_MAX]; /* databases: what is wrong though it serves ("" when nothing) */
	char detail[T2S_ERROR_MESSAGE_MAX]; /* databases: the driver's reason of the last failed connect
					     (hosts, ports, roles): for the admin view only */
};

struct pipeline_breakers {
	bool present;                     /* the route has a primary endpoint */
	enum breaker_state primary, fallback;
	bool has_fallback;
};

struct pipeline_health {
	struct pipeline_check *databases; /* one per registered database, in catalog order */
	size_t n_databases;
	int databases_up, databases_down;
	struct pipeline_check redis;
	struct pipeline_check models[MODEL_STAGE_COUNT];
	bool generation_available;        /* a generate model is configured */
	bool generation_down;             /* every endpoint of the generate or debug route has an open breaker */
	struct pipeline_breakers generate, debug;
	struct pipeline_check state;
	int others_down;                  /* Redis, model servers, generation and the state store that are down */
};

/*
 * Ping every database (through its pool), Redis, each configured model
 * server (GET {base_url}/models, probe_timeout_ms each) and the state
 * store; read the generation routes' breakers.  Only out of memory fails.
 */
T2S_MUST_CHECK
int pipeline_health(struct pipeline *p, long probe_timeout_ms, struct pipeline_health *ret, struct t2s_error *err);
void pipeline_health_release(struct pipeline_health *h);

/* ---- stages ----------------------------------------------------------------- */

/* A request's "mode" of /link: "vector", "llm" or "hybrid" as an enum link_mode; -1 when unknown. */
int pipeline_parse_link_mode(const char *name);

struct pipeline_link_request {
	const char *question;
	const char *evidence;             /* the user's hint, or NULL */
	int mode;                         /* enum link_mode, or -1: the configured default */
	int top_k;                        /* 0: the configured one */
	bool features;                    /* the result lists the fill's candidates (link_request.features) */
};

struct pipeline_link {
	struct link_result result;        /* result.index: the column index it ran on (a reference) */
	struct schema *schema;            /* reference */
	bool built_now;                   /* the column index was built by this call */
};

T2S_MUST_CHECK
int pipeline_link(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant,
		  const struct pipeline_link_request *rq, struct pipeline_link *ret, struct t2s_error *err);
void pipeline_link_release(struct pipeline_link *r);

struct pipeline_evidence {
	struct evidence_result result;
	struct schema *schema;            /* reference */
	struct value_index *values;       /* reference; NULL while the value index builds */
	char index_state[VALUE_REGISTRY_STATE_MAX]; /* "ready", "building" or "failed: ..." */
};

/*
 * Evidence for question, read with the user's evidence appended (as linking
 * reads it); the combined text is allocated in arena (the request's).
 */
T2S_MUST_CHECK
int pipeline_evidence(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant,
		      const char *question, const char *user_evidence, struct arena *arena,
		      struct pipeline_evidence *ret, struct t2s_error *err);
void pipeline_evidence_release(struct pipeline_evidence *r);
/* The build statistics of the value index r ran on (borrowed from r), or NULL while it builds. */
const struct value_index_stats *pipeline_value_index_stats(const struct pipeline_evidence *r);

struct pipeline_describe {
	struct describe_result result;
	struct schema *schema;            /* reference */
	bool overrides_missing;           /* the state store could not be read: no overrides applied */
};

/* Describe tables (API names; NULL and 0: every table) of db. */
T2S_MUST_CHECK
int pipeline_describe(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant,
		      const char *const *tables, size_t n_tables, struct pipeline_describe *ret, struct t2s_error *err);
void pipeline_describe_release(struct pipeline_describe *r);

struct pipeline_execute {
	struct exec_result result;
	struct exec_limits limits;        /* what it ran under */
};

/* Run one read-only statement under the configured limits and max_rows rows. */
T2S_MUST_CHECK
int pipeline_execute(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant, const char *sql,
		     long max_rows, struct pipeline_execute *ret, struct t2s_error *err);
void pipeline_execute_release(struct pipeline_execute *r);

/*
 * The main job (generate.h): rq->db set by the caller.  On 0, *ret holds the
 * answer: from the answer cache (body, with "cached": true and this call's
 * own timings: trace.timings_ms.total is the lookup, every stage 0, and
 * /query's elapsed_ms 0) or computed now (result; body too when it was
 * rendered for the cache); release it with pipeline_answer_release.  On a
 * failure, *ret_problem (new reference or NULL) holds the problem body's
 * extension members.
 *
 * The cache key covers the request, the schema hash, the models, db's
 * prompt state version (examples and overrides, as this replica knows it:
 * pipeline_sync_start) and its data version (catalog_db_data_version; an
 * unreadable one means no caching).  rq->cache_bypass skips the lookup but
 * stores the new answer.
 */
enum pipeline_cache_status {
	PIPELINE_CACHE_OFF,               /* no cache, no generate model, or no data version */
	PIPELINE_CACHE_HIT,
	PIPELINE_CACHE_MISS,
	PIPELINE_CACHE_BYPASS,            /* rq->cache_bypass */
};

struct pipeline_answer {
	json_t *body;                     /* the rendered answer (a reference), or NULL: render result */
	bool from_cache;
	enum pipeline_cache_status cache;
	long age_s;                       /* from_cache: seconds since the answer was stored */
	struct generate_result result;    /* the answer computed now (when not from_cache) */
};

/* The generation settings a request is checked against (option limits, max_rows limit); borrowed. */
const struct generate_env *pipeline_generate_env(const struct pipeline *p);
/* A request's options.generator: "auto", "model" or "builtin" as an enum generate_generator; -1 when unknown. */
int pipeline_parse_generator(const char *name);

T2S_MUST_CHECK
int pipeline_generate(struct pipeline *p, const struct generate_request *rq, struct pipeline_answer *ret,
		      json_t **ret_problem, struct t2s_error *err);
void pipeline_answer_release(struct pipeline_answer *a);
/* The answer's body (a new reference): the stored or already rendered one, else the result rendered. */
json_t *pipeline_answer_json(const struct pipeline_answer *a);

/* ---- state: description overrides, examples, feedback ------------------------ */

/* Every call below fails -T2S_ERR_UNAVAILABLE (naming why) when the state store could not be opened. */

T2S_MUST_CHECK
/* With a grant (schema_grant.h): only the overrides of the granted tables. */
int pipeline_overrides_list(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant,
			    struct state_overrides *ret, struct t2s_error *err);
/* Free what the calls below filled (accept a zeroed struct). */
void pipeline_overrides_release(struct state_overrides *l);
void pipeline_examples_release(struct state_examples *l);
void pipeline_feedbacks_release(struct state_feedbacks *l);

struct pipeline_override {
	const char *table;                /* the table's API name */
	const char *column;               /* NULL: the table's own description */
	const char *text;                 /* NULL: remove the override */
};

/*
 * Check every entry against db's schema, then store or delete them all (a
 * rejected entry changes nothing; its error names descriptions[i]); *ret
 * gets the overrides after the change.
 */
T2S_MUST_CHECK
int pipeline_overrides_put(struct pipeline *p, struct catalog_db *db, const struct pipeline_override *items, size_t n,
			   struct state_overrides *ret, struct t2s_error *err);

/* With a grant: only the examples whose SQL reads the granted tables alone (sql_view.h) are listed. */
T2S_MUST_CHECK
int pipeline_examples_list(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant, long limit,
			   long offset, struct state_examples *ret, struct t2s_error *err);
/* Validate sql on db (it must run read-only), store it, *ret the stored example. */
T2S_MUST_CHECK
int pipeline_example_add(struct pipeline *p, struct catalog_db *db, const char *question, const char *sql,
			 struct state_examples *ret, struct t2s_error *err);
/* -T2S_ERR_NOT_FOUND when db holds no example id. */
T2S_MUST_CHECK
int pipeline_example_get(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant, int64_t id,
			 struct state_examples *ret, struct t2s_error *err);
T2S_MUST_CHECK
int pipeline_example_delete(struct pipeline *p, struct catalog_db *db, int64_t id, struct t2s_error *err);

/*
 * Store feedback on an answer; a correct one's SQL is validated first and
 * becomes an example.  *ret holds the stored feedback.  Counted in
 * text2sqld_feedback_total{verdict} (and _rejected_total for correct SQL
 * that failed validation).
 */
T2S_MUST_CHECK
int pipeline_feedback_add(struct pipeline *p, struct catalog_db *db, const char *question, const char *sql,
			  bool correct, const char *note, struct state_feedbacks *ret, struct t2s_error *err);
/* database NULL: every database's; correct -1: both verdicts. */
T2S_MUST_CHECK
int pipeline_feedback_list(struct pipeline *p, const char *database, int correct, long limit, long offset,
			   struct state_feedbacks *ret, struct t2s_error *err);
T2S_MUST_CHECK
int pipeline_feedback_get(struct pipeline *p, int64_t id, struct state_feedbacks *ret, struct t2s_error *err);

#endif
