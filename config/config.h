/*
 * config.h - the service configuration: a JSON file plus TEXT2SQLD_*
 * environment overrides.
 *
 * Loading is strict: an unknown key or a value of the wrong type or range is
 * rejected with its JSON path ("limits.max_body_bytes: must be an integer
 * between 1024 and 1073741824").  After config_load returns, the struct is
 * read-only and shared by every thread; config_release frees it.
 *
 * Defaults: settings of the service itself (listen, limits, execution,
 * catalog, redis, cache, state, link.prebuild, log) get their defaults here.
 * Settings of a pipeline stage (values, evidence, and link but for
 * default_mode and prebuild) have their one default next to the stage's
 * options struct (value_index_options_init, evidence_options_init,
 * link_params_default, column_index_options_init), which config/ may not
 * include: a key absent from the file is left unset (CONFIG_UNSET for
 * integers and tri-state booleans, CONFIG_UNSET_SIZE for sizes, NaN for
 * numbers, see config_is_set_double), and server/app.c starts from the
 * stage's defaults and copies only the settings that are set.
 * config/text2sqld.example.json documents every default (a unit test checks
 * that it matches the compiled-in ones).
 */
#ifndef T2S_CONFIG_H
#define T2S_CONFIG_H

#include "common/contract.h"
#include "common/arena.h"
#include "common/cidr.h"
#include "common/error.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

/* An absent stage setting (int, long or tri-state boolean); see the top of this file. */
#define CONFIG_UNSET (-1)
/* An absent stage setting of type size_t. */
#define CONFIG_UNSET_SIZE ((size_t)0)

/* True when a stage setting of type double was given (absent ones are NaN). */
static inline bool config_is_set_double(double v)
{
	return !isnan(v);
}

enum model_stage {
	MODEL_STAGE_EMBED,
	MODEL_STAGE_LINK,
	MODEL_STAGE_DESCRIBE,
	MODEL_STAGE_EVIDENCE,
	MODEL_STAGE_GENERATE,
	MODEL_STAGE_DEBUG,
	MODEL_STAGE_COUNT
};

/* "embed", "link", ... */
const char *model_stage_name(enum model_stage stage);

struct config_model {
	bool present;
	const char *base_url;
	const char *model;
	const char *api_key_env; /* NULL when no key */
	const char *api_key;     /* value of that variable at load time, or NULL */
	long timeout_ms;
	long connect_timeout_ms;
	int retries;
	double temperature;
	int max_tokens;
	bool logprobs;           /* ask chat answers for their tokens' log-probabilities (the answer scorer's feature) */
	long context_tokens;     /* prompt budget of the model (prompt + answer) */
	const char *profile;     /* prompt profile: "default" or "lite-sql" */
	int breaker_failures;    /* consecutive failures that open the breaker */
	long breaker_cooldown_ms; /* open time before one trial call (half-open) */
	const char *health_url;  /* readiness probe URL; NULL: {base_url}/models (see model_ping) */
	struct config_model *fallback; /* used when this one fails or its breaker is open; NULL when none */
};

struct config_database {
	const char *name;
	const char *url;         /* as written in the config (may hold a password: never shown) */
	const char *sqlite_path; /* resolved absolute path for sqlite URLs, else NULL */
	/* PostgreSQL, MySQL: the password read at load from password_env (an environment variable) or
	   password_file (a file, e.g. a mounted Kubernetes Secret; one trailing newline dropped);
	   NULL: the URL's, else libpq's own (PGPASSWORD, PGPASSFILE). Never shown. */
	const char *password;
	int pool_size;
	const char *const *schemas; /* Postgres schemas introspected and the only ones statements may read
				       (pipeline/sql/sql_guard_pg_relations.h); NULL = all non-system */
	size_t n_schemas;
	/* Postgres: serve even when the role is a superuser, holds pg_write_server_files,
	   pg_read_server_files or pg_execute_server_program, or may write a table; MySQL:
	   when the account holds any grant beyond SELECT, SHOW VIEW and USAGE
	   (default false: the database is then not ready) */
	bool allow_privileged_role;
};

/*
 * What a key may do (bits of config_api_key.scopes, and of struct route's
 * scope): query reads a database and answers questions on it (/link,
 * /evidence, /describe, /generate, /query, /execute, reading the schema,
 * descriptions, examples and one feedback entry, and feedback saying an
 * answer was wrong); admin changes what every key's prompts say about it
 * (descriptions, examples, a feedback verdict "correct", which stores an
 * example), refreshes it and reviews its feedback.
 */
enum api_scope {
	API_SCOPE_QUERY = 1u << 0,
	API_SCOPE_ADMIN = 1u << 1,
};

/* A key without "scopes" may query only. */
#define API_KEY_SCOPES_DEFAULT API_SCOPE_QUERY

/* "query", "admin"; NULL for anything else. */
const char *api_scope_name(unsigned scope);

/* The tables a caller may read in one database (auth.api_keys[].tables, a JWT's tables claim). */
struct config_table_grant {
	const char *database;
	const char *const *tables; /* API names (schema.h): "t", or "schema.t" outside public */
	size_t n_tables;
};

struct config_api_key {
	const char *name;
	unsigned char key_sha256[32];
	unsigned scopes;         /* API_SCOPE_* bits (API_KEY_SCOPES_DEFAULT) */
	double rate_per_s;       /* requests a second (token bucket refill); 0: unlimited */
	int burst;               /* bucket size */
	bool all_databases;
	const char *const *databases;
	size_t n_databases;
	/* "tables": per database named here, the only tables the key may see and read there (a database
	   not named keeps all its tables); NULL and 0: every table */
	const struct config_table_grant *table_grants;
	size_t n_table_grants;
	bool jwt;                /* a JWT's caller, made per request (server/auth_jwt.h); not in auth.keys */
};

/* auth.jwt: bearer JWTs verified against a JWKS file (server/auth_jwt.h). */
struct config_jwt {
	bool present;
	const char *jwks_file;       /* absolute path (relative ones resolved against the config's folder) */
	const char *issuer;          /* the "iss" a token must carry */
	const char *audience;        /* a value its "aud" must hold */
	const char *databases_claim; /* default "databases": array of names, or "*" */
	const char *scopes_claim;    /* default "scope": array or space-separated names; absent: query */
	const char *tables_claim;    /* default "tables": {"<database>": ["table", ...]} */
	long leeway_s;               /* clock skew allowed on exp and nbf (default 60) */
};

/* The shortest answer-cache secret (cache.secret_env) accepted: 32 characters. */
#define CONFIG_CACHE_SECRET_MIN 32u
/* Longest database password read from password_env or password_file. */
#define CONFIG_PASSWORD_MAX 1024u

/* auth.public_metrics: what /metrics shows a scrape without a key (with auth on).  The zero
   value is the default. */
enum config_public_metrics {
	CONFIG_METRICS_AGGREGATE = 0, /* "aggregate": series summed over their database label */
	CONFIG_METRICS_FULL,          /* "full": everything, databases named */
	CONFIG_METRICS_NONE,          /* "none": 401, like a protected route */
};

struct config {
	struct arena arena; /* owns every string and array below */
	const char *path;   /* file the config came from */

	struct {
		const char *host;
		int port;
		bool reuse_port; /* SO_REUSEPORT: several processes share the port (off: "address in use") */
		/* Gateways whose X-Forwarded-For is believed, and which the per-address cap on connections
		   still sending their head does not apply to (common/cidr.h; in the config's arena) */
		const struct cidr *trusted_proxies;
		size_t n_trusted_proxies;
	} listen;

	struct {
		unsigned max_connections;         /* served at once; beyond: 503 */
		unsigned max_pending_connections; /* first request head still arriving; beyond: the oldest goes */
		unsigned max_connections_per_ip;
		unsigned connection_timeout_s;    /* idle: between bytes, and waiting for a request line in all */
		long request_head_timeout_ms;     /* request line to the end of the head; beyond: 408 */
		long request_body_timeout_ms;     /* end of the head to the end of the body; beyond: 408 */
		size_t max_body_bytes;
		size_t max_header_bytes;
		size_t max_uri_bytes;             /* request target; beyond: 414 */
		double key_rate_per_s;            /* default per-key request rate (0: unlimited); beyond: 429 */
		int key_burst;                    /* default per-key burst */
		unsigned key_max_concurrent;      /* requests of one API key running at once (fair share of
						     max_connections); beyond: 429.  Default a quarter of
						     max_connections (at least 1), set by the loader */
		long key_max_timeout_ms;          /* most an API key's options.timeout_ms may ask (and the cap
						     on generate.timeout_ms for it); beyond: 400 */
		unsigned drain_delay_ms;          /* SIGTERM: readiness fails, requests still served this long */
		unsigned drain_timeout_ms;        /* then: most time in-flight work gets to finish */
		int worker_threads;               /* the process's thread pool (common/workers.h): shuffles,
						     describe calls and index builds share it */
		size_t max_list_page_bytes;       /* a page of GET /feedback or /databases/{name}/examples */
		unsigned mcp_max_sessions;        /* MCP sessions held at once (handlers/mcp.c); beyond: the
						     key's least recently used goes, else 503 */
		unsigned mcp_session_idle_s;      /* an MCP session unused this long is ended (404 after) */
	} limits;

	struct {
		long timeout_ms;      /* per statement */
		long lock_timeout_ms; /* Postgres lock_timeout */
		long default_max_rows;
		long max_rows;        /* hard cap on a request's max_rows */
		size_t max_sql_bytes;
		size_t max_result_bytes;
		/* Memory one statement may take in the service (SQLite: everything its
		   connection allocates while it runs; PostgreSQL: the result row being
		   read), and from which the session's work_mem (a quarter) and
		   temp_file_limit (16 times) are derived on PostgreSQL */
		size_t max_statement_memory_bytes;
		bool big_integers_as_strings; /* "big_integers": "string": rows' integers beyond 2^53-1 as strings */
	} execution;

	/* Cross-origin requests from browsers (off while allowed_origins is empty). */
	struct {
		const char *const *allowed_origins; /* exact "scheme://host[:port]" values, or "*" alone */
		size_t n_allowed_origins;
		bool any_origin;          /* allowed_origins is ["*"] (never with allow_credentials) */
		bool allow_credentials;   /* send Access-Control-Allow-Credentials: true */
		long max_age_s;           /* how long a browser may cache a preflight answer */
	} cors;

	struct {
		int pool_size;        /* default per database */
		long pool_wait_ms;    /* wait for a free connection */
		long connect_timeout_s;
		int sample_values;    /* distinct samples kept per column */
		int sample_rows;      /* rows scanned per table for samples */
		int sample_value_max_len;
		long introspect_timeout_ms; /* per introspection query */
		long row_count_scan_limit;  /* SQLite: rows counted before estimating */
		long recheck_s;             /* introspect every database this often (0: never); CONFIG_UNSET: the default */
	} catalog;

	struct config_database *databases;
	size_t n_databases;

	struct {
		const char *url; /* NULL: no Redis configured */
		long timeout_ms;
		int pool_size;
	} redis;

	struct {
		const char *url; /* sqlite:///abs, sqlite://relative-to-config, or postgresql://... */
		int pool_size;
		long max_examples_per_database; /* beyond: 409 quota-exceeded */
		long max_feedback_per_database;
		long poll_interval_ms; /* read the store's versions this often (0: never); CONFIG_UNSET: the default */
	} state;

	/* Stage settings (value_index_options): CONFIG_UNSET / CONFIG_UNSET_SIZE when absent. */
	struct {
		int max_values_per_column;
		int max_value_len;
		size_t max_bytes;
		long column_timeout_ms;
		long max_rows_scanned;
		int skip_ids, skip_urls_emails, skip_long_text; /* 0, 1 or CONFIG_UNSET */
	} values;

	/* Stage settings (evidence_options): CONFIG_UNSET or NaN when absent. */
	struct {
		int max_values;      /* values returned by /evidence */
		double min_score;    /* similarity a value match needs */
		long probe_timeout_ms;
		int max_examples;
	} evidence;

	struct {
		size_t memory_max_bytes; /* in-process layer of the embedding cache */
		long redis_retry_after_ms; /* after a Redis failure, skip Redis this long */
		const char *secret_env; /* names the variable holding the answer cache's MAC secret; NULL: random */
		const char *secret;     /* its value at load time (at least CONFIG_CACHE_SECRET_MIN chars), or NULL */
	} cache;

	/* default_mode and prebuild are the service's; the rest are stage settings (link_params,
	   column_index_options): CONFIG_UNSET or NaN when absent. */
	struct {
		const char *default_mode; /* "vector", "llm", "hybrid"; NULL: hybrid with a link model, else vector */
		bool prebuild;            /* build each database's index in the background at start and refresh */
		bool wordnet;             /* load WordNet for lexical expansion (default true; start fails without it) */
		const char *wordnet_dir;  /* where its database files are; NULL: WORDNET_DEFAULT_DIR */
		int top_k;
		int min_k;
		long budget_tokens;      /* the fill's token budget (link_params.budget_tokens) */
		const char *scorer_file; /* weights replacing the built-in scorer's (link_scorer.h); NULL: built in */
		double table_ratio;
		int max_tables;
		double lexical_weight;
		int shuffles;
		int llm_max_tables;
		double llm_min_vote_share;
		long llm_column_budget_tokens; /* 0: no budget */
		int lexical_dim;
		double weight_connect, weight_semantic, weight_statistical;
	} link;

	struct config_model models[MODEL_STAGE_COUNT];
	/* models.generate_candidates: entry k % n answers first-round candidate k (several models voting,
	   X-SQL's multi-LLM idea); corrections stay with models.debug / models.generate.  n 0: none. */
	struct config_model *generate_candidates;
	size_t n_generate_candidates;

	/* Generation (generate_options, answer cache): CONFIG_UNSET when absent. */
	struct {
		int max_rounds;       /* correction rounds by default */
		int max_rounds_limit; /* most a request's options.max_rounds may ask */
		int candidates;       /* SQL candidates sampled and voted by result (1: no voting) */
		int max_candidates;   /* most a request's options.candidates may ask */
		int confirm_calls;    /* model calls a confirmation of a passing set operation may take; 0: none */
		int adaptive_sampling; /* 0 / 1: draw candidates adaptively; CONFIG_UNSET: the default */
		int vote_by_confidence; /* 0 / 1: the vote weighs candidates by the answer scorer; CONFIG_UNSET: the default */
		double builtin_min_confidence; /* the built-in abstains below it; NAN: the weights file's threshold */
		long timeout_ms;      /* whole generation of one request, by default */
		long max_timeout_ms;  /* most a request's options.timeout_ms may ask */
		long token_budget;    /* model tokens (prompt + completion) one request may spend; 0: no limit */
		int max_examples;     /* stored examples shown as few-shot pairs */
		int sample_values;    /* sample values per column in the prompt */
		int max_history;      /* conversation turns kept in the prompt */
		double reuse_min_similarity;          /* a stored example answers instead of the model at this similarity */
		double reuse_min_similarity_no_model; /* the same without a generate model */
		long cache_ttl_s;     /* /query and /generate answers cached this long; 0: off */
		long cache_max_entries; /* in-process cache entries */
		const char *confidence_file; /* weights replacing the answer scorer's (confidence.h); NULL: built in */
		double confidence_high, confidence_medium; /* the bands' lower bounds (confidence_bands) */
	} generate;

	struct {
		bool enabled;
		struct config_api_key *keys;
		size_t n_keys;
		bool public_readiness_details; /* /readyz shows its checks without a key */
		enum config_public_metrics public_metrics; /* what /metrics shows without a key */
		bool has_metrics_key;                      /* metrics_key_sha256 was given */
		unsigned char metrics_key_sha256[32];      /* a key that may read /metrics whole, nothing else */
		/* Without api_keys: anonymous callers may also administer (API_SCOPE_ADMIN); default false. */
		bool allow_anonymous_writes;
		/* Accept keys whose digest is one of a well-known word's (config_service.c); default false. */
		bool development;
		struct config_jwt jwt;
	} auth;

	struct {
		const char *level; /* "debug", "info", "warn", "error" */
		bool access;
		const char *audit_file; /* one JSON line per answer and admin write (server/audit.h); NULL: none */
	} log;
};

/*
 * Parse the JSON text (path is used to resolve relative sqlite paths and in
 * messages; may be NULL), apply environment overrides, validate.  On success
 * *ret is filled and must be released with config_release; on failure *ret is
 * untouched and err names the offending key path.
 */
T2S_MUST_CHECK
int config_load_string(const char *json_text, const char *path, struct config *ret,
		       struct t2s_error *err);
T2S_MUST_CHECK
int config_load_file(const char *path, struct config *ret, struct t2s_error *err);
void config_release(struct config *cfg);

/* The database entry named name, or NULL. */
const struct config_database *config_database_find(const struct config *cfg, const char *name);

#endif
