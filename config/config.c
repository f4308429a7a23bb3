/*
 * config.c - strict JSON configuration loader (see config.h).
 *
 * Each object is read by a small function that first rejects keys it does
 * not know, then reads every known key with a typed getter that checks range
 * and reports the full key path.  Defaults are set before reading, so a
 * missing optional key keeps its safe default, or stays unset for a stage
 * setting whose default belongs to the stage (see config.h).
 */
#include "config/config.h"

#include "common/hash.h"
#include "common/limits.h"

#include <jansson.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MAX_FILE_BYTES (4u << 20)

static const char *const stage_names[MODEL_STAGE_COUNT] = {
	"embed", "link", "describe", "evidence", "generate", "debug",
};

const char *model_stage_name(enum model_stage stage)
{
	return stage < MODEL_STAGE_COUNT ? stage_names[stage] : "unknown";
}

/* Reading context: the arena that receives strings and the error sink. */
struct reader {
	struct config *cfg;
	struct t2s_error *err;
	const char *config_dir; /* directory of the config file, for relative sqlite paths */
};

static int bad(struct reader *r, const char *path, const char *what)
{
	return t2s_error_set(r->err, T2S_ERR_INVALID, "config %s: %s", path, what);
}

static char *join_path(struct reader *r, const char *parent, const char *key)
{
	return arena_printf(&r->cfg->arena, "%s%s%s", parent, *parent ? "." : "", key);
}

/* Reject any key of obj not in allowed (NULL-terminated). */
static int check_keys(struct reader *r, json_t *obj, const char *path, const char *const *allowed)
{
	const char *key;
	json_t *v;
	if (!json_is_object(obj))
		return bad(r, *path ? path : "(top level)", "must be an object");
	json_object_foreach(obj, key, v) {
		int known = 0;
		for (const char *const *a = allowed; *a; a++)
			known |= strcmp(*a, key) == 0;
		if (!known)
			return t2s_error_set(r->err, T2S_ERR_INVALID, "config %s%s%s: unknown key", path,
					     *path ? "." : "", key);
	}
	return 0;
}

static int get_string(struct reader *r, json_t *obj, const char *path, const char *key, bool required,
		      const char **out)
{
	json_t *v = json_object_get(obj, key);
	if (!v) {
		if (required)
			return bad(r, join_path(r, path, key), "is required");
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) == 0)
		return bad(r, join_path(r, path, key), "must be a non-empty string");
	*out = arena_strdup(&r->cfg->arena, json_string_value(v));
	return *out ? 0 : -T2S_ERR_NOMEM;
}

static int get_long(struct reader *r, json_t *obj, const char *path, const char *key, long min, long max,
		    long *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
		char msg[128];
		snprintf(msg, sizeof(msg), "must be an integer between %ld and %ld", min, max);
		return bad(r, join_path(r, path, key), msg);
	}
	*out = (long)json_integer_value(v);
	return 0;
}

static int get_int(struct reader *r, json_t *obj, const char *path, const char *key, long min, long max,
		   int *out)
{
	long v = *out;
	int rc = get_long(r, obj, path, key, min, max, &v);
	*out = (int)v;
	return rc;
}

static int get_unsigned(struct reader *r, json_t *obj, const char *path, const char *key, long min,
			long max, unsigned *out)
{
	long v = (long)*out;
	int rc = get_long(r, obj, path, key, min, max, &v);
	*out = (unsigned)v;
	return rc;
}

static int get_size(struct reader *r, json_t *obj, const char *path, const char *key, long min, long max,
		    size_t *out)
{
	long v = (long)*out;
	int rc = get_long(r, obj, path, key, min, max, &v);
	*out = (size_t)v;
	return rc;
}

static int get_bool(struct reader *r, json_t *obj, const char *path, const char *key, bool *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return bad(r, join_path(r, path, key), "must be true or false");
	*out = json_is_true(v);
	return 0;
}

/* A tri-state boolean: 0 or 1 when given, *out untouched (CONFIG_UNSET) when absent. */
static int get_tristate(struct reader *r, json_t *obj, const char *path, const char *key, int *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return 0;
	bool b = false; /* get_bool sets it whenever it returns 0 here; -O3 cannot see that */
	int rc = get_bool(r, obj, path, key, &b);
	if (rc == 0)
		*out = b;
	return rc;
}

static int get_double(struct reader *r, json_t *obj, const char *path, const char *key, double min,
		      double max, double *out)
{
	json_t *v = json_object_get(obj, key);
	if (!v)
		return 0;
	if (!json_is_number(v) || json_number_value(v) < min || json_number_value(v) > max) {
		char msg[128];
		snprintf(msg, sizeof(msg), "must be a number between %g and %g", min, max);
		return bad(r, join_path(r, path, key), msg);
	}
	*out = json_number_value(v);
	return 0;
}

/* Array of non-empty strings into an arena array; *ret_n set. */
static int get_string_array(struct reader *r, json_t *arr, const char *path, const char *const **ret,
			    size_t *ret_n)
{
	if (!json_is_array(arr) || json_array_size(arr) == 0)
		return bad(r, path, "must be a non-empty array of strings");
	size_t n = json_array_size(arr);
	const char **out = arena_calloc(&r->cfg->arena, n, sizeof(*out));
	if (!out)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(arr, i);
		if (!json_is_string(s) || json_string_length(s) == 0)
			return bad(r, arena_printf(&r->cfg->arena, "%s[%zu]", path, i),
				   "must be a non-empty string");
		out[i] = arena_strdup(&r->cfg->arena, json_string_value(s));
	}
	*ret = out;
	*ret_n = n;
	return 0;
}

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
	c->limits.drain_timeout_ms = 15000;
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
	c->link.column_share = NAN;
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
	c->generate.candidates = c->generate.max_candidates = CONFIG_UNSET;
	c->generate.timeout_ms = c->generate.max_timeout_ms = CONFIG_UNSET;
	c->generate.token_budget = CONFIG_UNSET;
	c->generate.max_examples = c->generate.sample_values = c->generate.max_history = CONFIG_UNSET;
	c->generate.cache_ttl_s = c->generate.cache_max_entries = CONFIG_UNSET;
	c->log.level = "info";
	c->log.access = true;
	c->cors.max_age_s = 600;
}

static int read_listen(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"host", "port", "reuse_port", NULL};
	long port = r->cfg->listen.port;
	int rc;
	if ((rc = check_keys(r, o, "listen", keys)) < 0 ||
	    (rc = get_string(r, o, "listen", "host", false, &r->cfg->listen.host)) < 0 ||
	    (rc = get_long(r, o, "listen", "port", 0, 65535, &port)) < 0 ||
	    (rc = get_bool(r, o, "listen", "reuse_port", &r->cfg->listen.reuse_port)) < 0)
		return rc;
	r->cfg->listen.port = (int)port;
	return 0;
}

static int read_limits(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"max_connections", "max_pending_connections", "max_connections_per_ip",
					   "connection_timeout_s", "request_head_timeout_ms", "request_body_timeout_ms",
					   "max_body_bytes", "max_header_bytes", "max_uri_bytes", "drain_timeout_ms",
					   "key_rate_per_s", "key_burst", NULL};
	const char *p = "limits";
	int rc;
	if ((rc = check_keys(r, o, p, keys)) < 0 ||
	    (rc = get_unsigned(r, o, p, "max_connections", 1, 100000, &r->cfg->limits.max_connections)) < 0 ||
	    (rc = get_unsigned(r, o, p, "max_pending_connections", 1, 100000,
			       &r->cfg->limits.max_pending_connections)) < 0 ||
	    (rc = get_unsigned(r, o, p, "max_connections_per_ip", 1, 100000,
			       &r->cfg->limits.max_connections_per_ip)) < 0 ||
	    (rc = get_long(r, o, p, "request_head_timeout_ms", 100, 3600000,
			   &r->cfg->limits.request_head_timeout_ms)) < 0 ||
	    (rc = get_long(r, o, p, "request_body_timeout_ms", 100, 3600000,
			   &r->cfg->limits.request_body_timeout_ms)) < 0 ||
	    (rc = get_unsigned(r, o, p, "connection_timeout_s", 1, 3600,
			       &r->cfg->limits.connection_timeout_s)) < 0 ||
	    (rc = get_size(r, o, p, "max_body_bytes", 1024, 1L << 30, &r->cfg->limits.max_body_bytes)) < 0 ||
	    (rc = get_size(r, o, p, "max_header_bytes", 4096, 1L << 24, &r->cfg->limits.max_header_bytes)) < 0 ||
	    (rc = get_size(r, o, p, "max_uri_bytes", 256, 1L << 24, &r->cfg->limits.max_uri_bytes)) < 0 ||
	    (rc = get_unsigned(r, o, p, "drain_timeout_ms", 0, 600000, &r->cfg->limits.drain_timeout_ms)) < 0 ||
	    (rc = get_double(r, o, p, "key_rate_per_s", 0, 1e6, &r->cfg->limits.key_rate_per_s)) < 0 ||
	    (rc = get_int(r, o, p, "key_burst", 1, 1000000, &r->cfg->limits.key_burst)) < 0)
		return rc;
	return 0;
}

static int read_execution(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"timeout_ms", "lock_timeout_ms", "default_max_rows", "max_rows",
					   "max_sql_bytes", "max_result_bytes", "max_statement_memory_bytes", "big_integers", NULL};
	const char *p = "execution";
	const char *big = NULL;
	int rc;
	if ((rc = check_keys(r, o, p, keys)) < 0 ||
	    (rc = get_long(r, o, p, "timeout_ms", 1, 3600000, &r->cfg->execution.timeout_ms)) < 0 ||
	    (rc = get_long(r, o, p, "lock_timeout_ms", 1, 3600000, &r->cfg->execution.lock_timeout_ms)) < 0 ||
	    (rc = get_long(r, o, p, "default_max_rows", 1, 10000000, &r->cfg->execution.default_max_rows)) < 0 ||
	    (rc = get_long(r, o, p, "max_rows", 1, 10000000, &r->cfg->execution.max_rows)) < 0 ||
	    (rc = get_size(r, o, p, "max_sql_bytes", 64, 16L << 20, &r->cfg->execution.max_sql_bytes)) < 0 ||
	    (rc = get_size(r, o, p, "max_result_bytes", 1024, 1L << 30, &r->cfg->execution.max_result_bytes)) < 0 ||
	    (rc = get_size(r, o, p, "max_statement_memory_bytes", 1L << 20, 1L << 40,
			   &r->cfg->execution.max_statement_memory_bytes)) < 0 ||
	    (rc = get_string(r, o, p, "big_integers", false, &big)) < 0)
		return rc;
	if (big && strcmp(big, "number") != 0 && strcmp(big, "string") != 0)
		return bad(r, "execution.big_integers", "must be \"number\" or \"string\"");
	r->cfg->execution.big_integers_as_strings = big && strcmp(big, "string") == 0;
	if (r->cfg->execution.default_max_rows > r->cfg->execution.max_rows)
		return bad(r, "execution.default_max_rows", "must not exceed execution.max_rows");
	return 0;
}

static int read_catalog(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"pool_size", "pool_wait_ms", "connect_timeout_s", "sample_values",
					   "sample_rows", "sample_value_max_len", "introspect_timeout_ms",
					   "row_count_scan_limit", NULL};
	const char *p = "catalog";
	struct config *c = r->cfg;
	int rc;
	if ((rc = check_keys(r, o, p, keys)) < 0 ||
	    (rc = get_int(r, o, p, "pool_size", 1, 1024, &c->catalog.pool_size)) < 0 ||
	    (rc = get_long(r, o, p, "pool_wait_ms", 0, 600000, &c->catalog.pool_wait_ms)) < 0 ||
	    (rc = get_long(r, o, p, "connect_timeout_s", 1, 600, &c->catalog.connect_timeout_s)) < 0 ||
	    (rc = get_int(r, o, p, "sample_values", 0, 100, &c->catalog.sample_values)) < 0 ||
	    (rc = get_int(r, o, p, "sample_rows", 0, 1000000, &c->catalog.sample_rows)) < 0 ||
	    (rc = get_int(r, o, p, "sample_value_max_len", 8, 4096, &c->catalog.sample_value_max_len)) < 0 ||
	    (rc = get_long(r, o, p, "introspect_timeout_ms", 100, 3600000, &c->catalog.introspect_timeout_ms)) < 0 ||
	    (rc = get_long(r, o, p, "row_count_scan_limit", 0, 1000000000, &c->catalog.row_count_scan_limit)) < 0)
		return rc;
	return 0;
}

/* Database names become URL path segments and metric labels. */
static bool valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64)
		return false;
	for (const char *p = s; *p; p++) {
		char ch = *p;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      ch == '_' || ch == '-'))
			return false;
	}
	return true;
}

static int resolve_sqlite_path(struct reader *r, struct config_database *d, const char *path)
{
	const char *rest = d->url + strlen("sqlite://");
	if (*rest == '\0')
		return bad(r, path, "sqlite URL needs a path: sqlite:///abs/path.sqlite");
	if (rest[0] == '/')
		d->sqlite_path = arena_strdup(&r->cfg->arena, rest);
	else
		d->sqlite_path = arena_printf(&r->cfg->arena, "%s/%s", r->config_dir, rest);
	return d->sqlite_path ? 0 : -T2S_ERR_NOMEM;
}

static int read_database(struct reader *r, json_t *o, size_t i, struct config_database *d)
{
	static const char *const keys[] = {"name", "url", "pool_size", "schemas", "allow_privileged_role", NULL};
	char *p = arena_printf(&r->cfg->arena, "databases[%zu]", i);
	int rc;
	d->pool_size = r->cfg->catalog.pool_size;
	if ((rc = check_keys(r, o, p, keys)) < 0 || (rc = get_string(r, o, p, "name", true, &d->name)) < 0 ||
	    (rc = get_string(r, o, p, "url", true, &d->url)) < 0 ||
	    (rc = get_int(r, o, p, "pool_size", 1, 1024, &d->pool_size)) < 0 ||
	    (rc = get_bool(r, o, p, "allow_privileged_role", &d->allow_privileged_role)) < 0)
		return rc;
	if (!valid_name(d->name))
		return bad(r, join_path(r, p, "name"), "must be 1-64 characters of A-Z a-z 0-9 _ -");
	if (strncmp(d->url, "sqlite://", 9) == 0) {
		if ((rc = resolve_sqlite_path(r, d, join_path(r, p, "url"))) < 0)
			return rc;
	} else if (strncmp(d->url, "postgresql://", 13) != 0 && strncmp(d->url, "postgres://", 11) != 0) {
		return bad(r, join_path(r, p, "url"), "must start with sqlite:// or postgresql://");
	}
	if (json_object_get(o, "allow_privileged_role") && d->sqlite_path)
		return bad(r, join_path(r, p, "allow_privileged_role"), "applies to PostgreSQL databases only");
	json_t *schemas = json_object_get(o, "schemas");
	if (schemas) {
		if (d->sqlite_path)
			return bad(r, join_path(r, p, "schemas"), "applies to PostgreSQL databases only");
		if ((rc = get_string_array(r, schemas, join_path(r, p, "schemas"), &d->schemas, &d->n_schemas)) < 0)
			return rc;
	}
	for (size_t j = 0; j < i; j++)
		if (strcmp(r->cfg->databases[j].name, d->name) == 0)
			return bad(r, join_path(r, p, "name"), "duplicates another database's name");
	return 0;
}

static int read_databases(struct reader *r, json_t *a)
{
	if (!json_is_array(a))
		return bad(r, "databases", "must be an array");
	size_t n = json_array_size(a);
	r->cfg->databases = arena_calloc(&r->cfg->arena, n, sizeof(*r->cfg->databases));
	if (!r->cfg->databases)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		int rc = read_database(r, json_array_get(a, i), i, &r->cfg->databases[i]);
		if (rc < 0)
			return rc;
		r->cfg->n_databases = i + 1;
	}
	return 0;
}

static int read_redis(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"url", "timeout_ms", "pool_size", NULL};
	int rc;
	if ((rc = check_keys(r, o, "redis", keys)) < 0 ||
	    (rc = get_string(r, o, "redis", "url", true, &r->cfg->redis.url)) < 0 ||
	    (rc = get_long(r, o, "redis", "timeout_ms", 1, 600000, &r->cfg->redis.timeout_ms)) < 0 ||
	    (rc = get_int(r, o, "redis", "pool_size", 1, 256, &r->cfg->redis.pool_size)) < 0)
		return rc;
	if (strncmp(r->cfg->redis.url, "redis://", 8) != 0 && strncmp(r->cfg->redis.url, "unix://", 7) != 0)
		return bad(r, "redis.url", "must start with redis:// or unix://");
	return 0;
}

static int read_state(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"url", "pool_size", NULL};
	int rc;
	if ((rc = check_keys(r, o, "state", keys)) < 0 || (rc = get_string(r, o, "state", "url", true, &r->cfg->state.url)) < 0 ||
	    (rc = get_int(r, o, "state", "pool_size", 1, 64, &r->cfg->state.pool_size)) < 0)
		return rc;
	const char *u = r->cfg->state.url;
	if (strncmp(u, "sqlite://", 9) && strncmp(u, "postgresql://", 13) && strncmp(u, "postgres://", 11))
		return bad(r, "state.url", "must start with sqlite:// or postgresql://");
	return 0;
}

static int read_values(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"max_values_per_column", "max_value_len", "max_bytes", "column_timeout_ms",
					   "max_rows_scanned", "skip_ids", "skip_urls_emails", "skip_long_text", NULL};
	const char *p = "values";
	struct config *c = r->cfg;
	int rc;
	if ((rc = check_keys(r, o, p, keys)) < 0 ||
	    (rc = get_int(r, o, p, "max_values_per_column", 1, 1000000, &c->values.max_values_per_column)) < 0 ||
	    (rc = get_int(r, o, p, "max_value_len", 8, 10000, &c->values.max_value_len)) < 0 ||
	    (rc = get_size(r, o, p, "max_bytes", 1024, 1L << 36, &c->values.max_bytes)) < 0 ||
	    (rc = get_long(r, o, p, "column_timeout_ms", 10, 3600000, &c->values.column_timeout_ms)) < 0 ||
	    (rc = get_long(r, o, p, "max_rows_scanned", 1, 1000000000, &c->values.max_rows_scanned)) < 0 ||
	    (rc = get_tristate(r, o, p, "skip_ids", &c->values.skip_ids)) < 0 ||
	    (rc = get_tristate(r, o, p, "skip_urls_emails", &c->values.skip_urls_emails)) < 0 ||
	    (rc = get_tristate(r, o, p, "skip_long_text", &c->values.skip_long_text)) < 0)
		return rc;
	return 0;
}

static int read_evidence(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"max_values", "min_score", "probe_timeout_ms", "max_examples", NULL};
	const char *p = "evidence";
	struct config *c = r->cfg;
	int rc;
	if ((rc = check_keys(r, o, p, keys)) < 0 || (rc = get_int(r, o, p, "max_values", 1, 1000, &c->evidence.max_values)) < 0 ||
	    (rc = get_double(r, o, p, "min_score", 0.0, 1.0, &c->evidence.min_score)) < 0 ||
	    (rc = get_long(r, o, p, "probe_timeout_ms", 10, 600000, &c->evidence.probe_timeout_ms)) < 0 ||
	    (rc = get_int(r, o, p, "max_examples", 0, 100, &c->evidence.max_examples)) < 0)
		return rc;
	return 0;
}

static int read_cache(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"memory_max_bytes", "redis_retry_after_ms", NULL};
	int rc;
	if ((rc = check_keys(r, o, "cache", keys)) < 0 ||
	    (rc = get_size(r, o, "cache", "memory_max_bytes", 0, 1L << 40, &r->cfg->cache.memory_max_bytes)) < 0 ||
	    (rc = get_long(r, o, "cache", "redis_retry_after_ms", 0, 3600000, &r->cfg->cache.redis_retry_after_ms)) < 0)
		return rc;
	return 0;
}

static int read_link(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"default_mode", "prebuild", "top_k", "min_k", "column_share", "table_ratio",
					   "max_tables", "lexical_weight", "shuffles", "llm_max_tables", "llm_min_vote_share",
					   "llm_column_budget_tokens", "lexical_dim", "weights", "wordnet", "wordnet_dir", NULL};
	static const char *const weight_keys[] = {"connect", "semantic", "statistical", NULL};
	const char *p = "link";
	struct config *c = r->cfg;
	int rc;
	if ((rc = check_keys(r, o, p, keys)) < 0 ||
	    (rc = get_string(r, o, p, "default_mode", false, &c->link.default_mode)) < 0 ||
	    (rc = get_bool(r, o, p, "prebuild", &c->link.prebuild)) < 0 ||
	    (rc = get_bool(r, o, p, "wordnet", &c->link.wordnet)) < 0 ||
	    (rc = get_string(r, o, p, "wordnet_dir", false, &c->link.wordnet_dir)) < 0 ||
	    (rc = get_int(r, o, p, "top_k", 1, 10000, &c->link.top_k)) < 0 ||
	    (rc = get_int(r, o, p, "min_k", 1, 10000, &c->link.min_k)) < 0 ||
	    (rc = get_double(r, o, p, "column_share", 0.0, 1.0, &c->link.column_share)) < 0 ||
	    (rc = get_double(r, o, p, "table_ratio", 0.0, 1.0, &c->link.table_ratio)) < 0 ||
	    (rc = get_int(r, o, p, "max_tables", 1, 10000, &c->link.max_tables)) < 0 ||
	    (rc = get_double(r, o, p, "lexical_weight", 0.0, 1.0, &c->link.lexical_weight)) < 0 ||
	    (rc = get_int(r, o, p, "shuffles", 1, 16, &c->link.shuffles)) < 0 ||
	    (rc = get_int(r, o, p, "llm_max_tables", 1, 10000, &c->link.llm_max_tables)) < 0 ||
	    (rc = get_double(r, o, p, "llm_min_vote_share", 0.0, 1.0, &c->link.llm_min_vote_share)) < 0 ||
	    (rc = get_long(r, o, p, "llm_column_budget_tokens", 0, 10000000, &c->link.llm_column_budget_tokens)) < 0 ||
	    (rc = get_int(r, o, p, "lexical_dim", 64, 65536, &c->link.lexical_dim)) < 0)
		return rc;
	const char *m = c->link.default_mode;
	if (m && strcmp(m, "vector") && strcmp(m, "llm") && strcmp(m, "hybrid"))
		return bad(r, "link.default_mode", "must be one of vector, llm, hybrid");
	/* with one of them unset, server/app.c checks against the stage's default */
	if (c->link.min_k != CONFIG_UNSET && c->link.top_k != CONFIG_UNSET && c->link.min_k > c->link.top_k)
		return bad(r, "link.min_k", "must not exceed link.top_k");
	json_t *w = json_object_get(o, "weights");
	if (w && ((rc = check_keys(r, w, "link.weights", weight_keys)) < 0 ||
		  (rc = get_double(r, w, "link.weights", "connect", 0.0, 100.0, &c->link.weight_connect)) < 0 ||
		  (rc = get_double(r, w, "link.weights", "semantic", 0.0, 100.0, &c->link.weight_semantic)) < 0 ||
		  (rc = get_double(r, w, "link.weights", "statistical", 0.0, 100.0, &c->link.weight_statistical)) < 0))
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
					   "breaker", "fallback", "health_url", NULL};
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
	if ((rc = check_keys(r, o, p, keys)) < 0)
		return rc;
	if (fallback && !fallback_allowed)
		return bad(r, join_path(r, p, "fallback"), "a fallback has no fallback of its own");
	if (breaker) {
		char *bp = join_path(r, p, "breaker");
		if ((rc = check_keys(r, breaker, bp, breaker_keys)) < 0 ||
		    (rc = get_int(r, breaker, bp, "failures", 1, 1000, &m->breaker_failures)) < 0 ||
		    (rc = get_long(r, breaker, bp, "cooldown_ms", 1, 3600000, &m->breaker_cooldown_ms)) < 0)
			return rc;
	}
	if ((rc = get_string(r, o, p, "profile", false, &m->profile)) < 0)
		return rc;
	if (strcmp(m->profile, "default") != 0 && strcmp(m->profile, "lite-sql") != 0)
		return bad(r, join_path(r, p, "profile"), "must be \"default\" or \"lite-sql\"");
	if ((rc = get_long(r, o, p, "context_tokens", 256, 10000000, &m->context_tokens)) < 0 ||
	    (rc = get_string(r, o, p, "base_url", true, &m->base_url)) < 0 ||
	    (rc = get_string(r, o, p, "model", true, &m->model)) < 0 ||
	    (rc = get_string(r, o, p, "api_key_env", false, &m->api_key_env)) < 0 ||
	    (rc = get_long(r, o, p, "timeout_ms", 1, 3600000, &m->timeout_ms)) < 0 ||
	    (rc = get_long(r, o, p, "connect_timeout_ms", 1, 600000, &m->connect_timeout_ms)) < 0 ||
	    (rc = get_int(r, o, p, "retries", 0, 10, &m->retries)) < 0 ||
	    (rc = get_double(r, o, p, "temperature", 0.0, 2.0, &m->temperature)) < 0 ||
	    (rc = get_int(r, o, p, "max_tokens", 1, 1000000, &m->max_tokens)) < 0)
		return rc;
	if (strncmp(m->base_url, "http://", 7) != 0 && strncmp(m->base_url, "https://", 8) != 0)
		return bad(r, join_path(r, p, "base_url"), "must start with http:// or https://");
	if ((rc = get_string(r, o, p, "health_url", false, &m->health_url)) < 0)
		return rc;
	if (m->health_url && strncmp(m->health_url, "http://", 7) != 0 && strncmp(m->health_url, "https://", 8) != 0)
		return bad(r, join_path(r, p, "health_url"), "must start with http:// or https://");
	if (m->api_key_env) {
		const char *key = getenv(m->api_key_env);
		if (!key || !*key)
			return bad(r, join_path(r, p, "api_key_env"), "names an environment variable that is not set");
		m->api_key = arena_strdup(&r->cfg->arena, key);
	}
	if (fallback) {
		if (!json_is_object(fallback))
			return bad(r, join_path(r, p, "fallback"), "must be an object");
		m->fallback = arena_alloc(&r->cfg->arena, sizeof(*m->fallback));
		if (!m->fallback)
			return bad(r, p, "out of memory");
		memset(m->fallback, 0, sizeof(*m->fallback));
		if ((rc = read_model_at(r, fallback, join_path(r, p, "fallback"), m->fallback, false)) < 0)
			return rc;
	}
	m->present = true;
	return 0;
}

static int read_model(struct reader *r, json_t *o, enum model_stage stage)
{
	char *p = arena_printf(&r->cfg->arena, "models.%s", stage_names[stage]);
	if (!json_is_object(o))
		return bad(r, p, "must be an object");
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

static int read_generate(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"max_rounds", "max_rounds_limit", "candidates", "max_candidates",
					   "timeout_ms", "max_timeout_ms", "token_budget", "max_examples",
					   "sample_values", "max_history", "cache_ttl_s", "cache_max_entries", NULL};
	const char *p = "generate";
	struct config *c = r->cfg;
	int rc;
	if ((rc = check_keys(r, o, p, keys)) < 0 ||
	    (rc = get_int(r, o, p, "max_rounds_limit", 0, 20, &c->generate.max_rounds_limit)) < 0 ||
	    (rc = get_int(r, o, p, "max_rounds", 0, 20, &c->generate.max_rounds)) < 0 ||
	    (rc = get_int(r, o, p, "max_candidates", 1, 32, &c->generate.max_candidates)) < 0 ||
	    (rc = get_int(r, o, p, "candidates", 1, 32, &c->generate.candidates)) < 0 ||
	    (rc = get_long(r, o, p, "max_timeout_ms", 100, 3600000, &c->generate.max_timeout_ms)) < 0 ||
	    (rc = get_long(r, o, p, "timeout_ms", 100, 3600000, &c->generate.timeout_ms)) < 0 ||
	    (rc = get_long(r, o, p, "token_budget", 0, 100000000, &c->generate.token_budget)) < 0 ||
	    (rc = get_int(r, o, p, "max_examples", 0, 50, &c->generate.max_examples)) < 0 ||
	    (rc = get_int(r, o, p, "sample_values", 0, 20, &c->generate.sample_values)) < 0 ||
	    (rc = get_int(r, o, p, "max_history", 0, 100, &c->generate.max_history)) < 0 ||
	    (rc = get_long(r, o, p, "cache_ttl_s", 0, 30L * 86400, &c->generate.cache_ttl_s)) < 0 ||
	    (rc = get_long(r, o, p, "cache_max_entries", 1, 10000000, &c->generate.cache_max_entries)) < 0 ||
	    (rc = check_order(r, c->generate.max_rounds, c->generate.max_rounds_limit, "max_rounds",
			      "max_rounds_limit")) < 0 ||
	    (rc = check_order(r, c->generate.candidates, c->generate.max_candidates, "candidates",
			      "max_candidates")) < 0 ||
	    (rc = check_order(r, c->generate.timeout_ms, c->generate.max_timeout_ms, "timeout_ms",
			      "max_timeout_ms")) < 0)
		return rc;
	return 0;
}

static int read_models(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"embed", "link", "describe", "evidence", "generate", "debug", NULL};
	int rc = check_keys(r, o, "models", keys);
	for (int s = 0; rc == 0 && s < MODEL_STAGE_COUNT; s++) {
		json_t *m = json_object_get(o, stage_names[s]);
		if (m)
			rc = read_model(r, m, (enum model_stage)s);
	}
	return rc;
}

static int read_api_key(struct reader *r, json_t *o, size_t i, struct config_api_key *k)
{
	static const char *const keys[] = {"name", "key_sha256", "databases", "rate_per_s", "burst", NULL};
	char *p = arena_printf(&r->cfg->arena, "auth.api_keys[%zu]", i);
	const char *hex = NULL;
	int rc;
	k->rate_per_s = r->cfg->limits.key_rate_per_s;
	k->burst = r->cfg->limits.key_burst;
	if ((rc = check_keys(r, o, p, keys)) < 0 || (rc = get_string(r, o, p, "name", true, &k->name)) < 0 ||
	    (rc = get_string(r, o, p, "key_sha256", true, &hex)) < 0 ||
	    (rc = get_double(r, o, p, "rate_per_s", 0, 1e6, &k->rate_per_s)) < 0 ||
	    (rc = get_int(r, o, p, "burst", 1, 1000000, &k->burst)) < 0)
		return rc;
	if (hash_hex_decode32(hex, k->key_sha256) < 0)
		return bad(r, join_path(r, p, "key_sha256"), "must be 64 hex digits (sha256 of the key)");
	json_t *dbs = json_object_get(o, "databases");
	if (!dbs)
		return bad(r, join_path(r, p, "databases"), "is required (use [\"*\"] for all)");
	if ((rc = get_string_array(r, dbs, join_path(r, p, "databases"), &k->databases, &k->n_databases)) < 0)
		return rc;
	for (size_t j = 0; j < k->n_databases; j++) {
		if (strcmp(k->databases[j], "*") == 0)
			k->all_databases = true;
		else if (!config_database_find(r->cfg, k->databases[j]))
			return bad(r, arena_printf(&r->cfg->arena, "%s.databases[%zu]", p, j),
				   "names a database that is not configured");
	}
	return 0;
}

static int read_auth(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"api_keys", "public_readiness_details", NULL};
	int rc = check_keys(r, o, "auth", keys);
	if (rc < 0 || (rc = get_bool(r, o, "auth", "public_readiness_details", &r->cfg->auth.public_readiness_details)) < 0)
		return rc;
	json_t *a = json_object_get(o, "api_keys");
	if (!json_is_array(a) || json_array_size(a) == 0)
		return bad(r, "auth.api_keys", "must be a non-empty array");
	size_t n = json_array_size(a);
	r->cfg->auth.keys = arena_calloc(&r->cfg->arena, n, sizeof(*r->cfg->auth.keys));
	if (!r->cfg->auth.keys)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		if ((rc = read_api_key(r, json_array_get(a, i), i, &r->cfg->auth.keys[i])) < 0)
			return rc;
	r->cfg->auth.n_keys = n;
	r->cfg->auth.enabled = true;
	return 0;
}

/* An origin as browsers send it: scheme://host[:port], no path, no trailing slash. */
static bool valid_origin(const char *s)
{
	const char *host = strncmp(s, "https://", 8) == 0 ? s + 8 : strncmp(s, "http://", 7) == 0 ? s + 7 : NULL;
	if (!host || !*host)
		return false;
	for (const char *c = host; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '.' || *c == ':' ||
		      *c == '[' || *c == ']'))
			return false; /* browsers send lower-case hosts; paths and slashes are not part of an origin */
	return true;
}

static int read_cors(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"allowed_origins", "allow_credentials", "max_age_s", NULL};
	struct config *c = r->cfg;
	int rc;
	if ((rc = check_keys(r, o, "cors", keys)) < 0 ||
	    (rc = get_bool(r, o, "cors", "allow_credentials", &c->cors.allow_credentials)) < 0 ||
	    (rc = get_long(r, o, "cors", "max_age_s", 0, 86400, &c->cors.max_age_s)) < 0)
		return rc;
	json_t *a = json_object_get(o, "allowed_origins");
	if (!a || (json_is_array(a) && json_array_size(a) == 0))
		return 0; /* off */
	if ((rc = get_string_array(r, a, "cors.allowed_origins", &c->cors.allowed_origins,
				   &c->cors.n_allowed_origins)) < 0)
		return rc;
	for (size_t i = 0; i < c->cors.n_allowed_origins; i++) {
		const char *origin = c->cors.allowed_origins[i];
		char *ip = arena_printf(&c->arena, "cors.allowed_origins[%zu]", i);
		if (strcmp(origin, "*") == 0) {
			if (c->cors.n_allowed_origins != 1)
				return bad(r, ip, "\"*\" must be the only entry");
			if (c->cors.allow_credentials)
				return bad(r, ip, "\"*\" cannot be combined with cors.allow_credentials: list the origins");
			c->cors.any_origin = true;
		} else if (!valid_origin(origin)) {
			return bad(r, ip, "must be an origin such as \"https://app.example.com\" (scheme, lower-case host, "
				   "optional port; no path)");
		}
	}
	return 0;
}

static int read_log(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"level", "access", NULL};
	int rc;
	if ((rc = check_keys(r, o, "log", keys)) < 0 || (rc = get_string(r, o, "log", "level", false, &r->cfg->log.level)) < 0 ||
	    (rc = get_bool(r, o, "log", "access", &r->cfg->log.access)) < 0)
		return rc;
	const char *l = r->cfg->log.level;
	if (strcmp(l, "debug") && strcmp(l, "info") && strcmp(l, "warn") && strcmp(l, "error"))
		return bad(r, "log.level", "must be one of debug, info, warn, error");
	return 0;
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
	int rc = check_keys(r, root, "", keys);
	json_t *v;
	if (rc < 0)
		return rc;
	/* catalog first: database entries inherit its pool_size. */
	if ((v = json_object_get(root, "catalog")) && (rc = read_catalog(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "listen")) && (rc = read_listen(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "limits")) && (rc = read_limits(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "execution")) && (rc = read_execution(r, v)) < 0)
		return rc;
	if (!(v = json_object_get(root, "databases")))
		return bad(r, "databases", "is required (an array of {name, url})");
	if ((rc = read_databases(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "redis")) && (rc = read_redis(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "cache")) && (rc = read_cache(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "state")) && (rc = read_state(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "values")) && (rc = read_values(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "evidence")) && (rc = read_evidence(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "link")) && (rc = read_link(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "generate")) && (rc = read_generate(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "models")) && (rc = read_models(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "auth")) && (rc = read_auth(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "cors")) && (rc = read_cors(r, v)) < 0)
		return rc;
	if ((v = json_object_get(root, "log")) && (rc = read_log(r, v)) < 0)
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

const struct config_database *config_database_find(const struct config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_databases; i++)
		if (strcmp(cfg->databases[i].name, name) == 0)
			return &cfg->databases[i];
	return NULL;
}
