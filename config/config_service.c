/*
 * config_service.c - the config sections of the service itself: listen,
 * limits, execution, catalog, databases, redis, state, cache, auth, cors,
 * log (see config.h for their meaning, config_internal.h for the getters).
 */
#include "config/config_internal.h"

#include "common/cidr.h"
#include "common/hash.h"
#include "common/limits.h"
#include "common/workers.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* listen.trusted_proxies: an array (possibly empty) of CIDR ranges or addresses. */
static int read_trusted_proxies(struct reader *r, json_t *arr)
{
	const char *p = "listen.trusted_proxies";
	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return conf_bad(r, p, "must be an array of CIDR ranges (\"10.0.0.0/8\") or addresses");
	size_t n = json_array_size(arr);
	struct cidr *list = arena_calloc(&r->cfg->arena, n ? n : 1, sizeof(*list));
	if (!list)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(arr, i);
		if (!json_is_string(s) || !cidr_parse(json_string_value(s), &list[i]))
			return conf_bad(r, arena_printf(&r->cfg->arena, "%s[%zu]", p, i),
				        "must be a CIDR range (\"10.0.0.0/8\", \"fd00::/8\") or an address");
	}
	r->cfg->listen.trusted_proxies = list;
	r->cfg->listen.n_trusted_proxies = n;
	return 0;
}

int conf_read_listen(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"host", "port", "reuse_port", "trusted_proxies", NULL};
	long port = r->cfg->listen.port;
	int rc;
	if ((rc = conf_check_keys(r, o, "listen", keys)) < 0 ||
	    (rc = conf_get_string(r, o, "listen", "host", false, &r->cfg->listen.host)) < 0 ||
	    (rc = conf_get_long(r, o, "listen", "port", 0, 65535, &port)) < 0 ||
	    (rc = conf_get_bool(r, o, "listen", "reuse_port", &r->cfg->listen.reuse_port)) < 0 ||
	    (rc = read_trusted_proxies(r, json_object_get(o, "trusted_proxies"))) < 0)
		return rc;
	r->cfg->listen.port = (int)port;
	return 0;
}

int conf_read_limits(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"max_connections", "max_pending_connections", "max_connections_per_ip",
					   "connection_timeout_s", "request_head_timeout_ms", "request_body_timeout_ms",
					   "max_body_bytes", "max_header_bytes", "max_uri_bytes", "drain_delay_ms", "drain_timeout_ms",
					   "key_rate_per_s", "key_burst", "key_max_concurrent", "key_max_timeout_ms",
					   "worker_threads", "max_list_page_bytes", "mcp_max_sessions", "mcp_session_idle_s",
					   NULL};
	const char *p = "limits";
	int rc;
	if ((rc = conf_check_keys(r, o, p, keys)) < 0 ||
	    (rc = conf_get_unsigned(r, o, p, "max_connections", 1, 100000, &r->cfg->limits.max_connections)) < 0 ||
	    (rc = conf_get_unsigned(r, o, p, "max_pending_connections", 1, 100000,
			            &r->cfg->limits.max_pending_connections)) < 0 ||
	    (rc = conf_get_unsigned(r, o, p, "max_connections_per_ip", 1, 100000,
			            &r->cfg->limits.max_connections_per_ip)) < 0 ||
	    (rc = conf_get_long(r, o, p, "request_head_timeout_ms", 100, 3600000,
			        &r->cfg->limits.request_head_timeout_ms)) < 0 ||
	    (rc = conf_get_long(r, o, p, "request_body_timeout_ms", 100, 3600000,
			        &r->cfg->limits.request_body_timeout_ms)) < 0 ||
	    (rc = conf_get_unsigned(r, o, p, "connection_timeout_s", 1, 3600,
			            &r->cfg->limits.connection_timeout_s)) < 0 ||
	    (rc = conf_get_size(r, o, p, "max_body_bytes", 1024, 1L << 30, &r->cfg->limits.max_body_bytes)) < 0 ||
	    (rc = conf_get_size(r, o, p, "max_header_bytes", 4096, 1L << 24, &r->cfg->limits.max_header_bytes)) < 0 ||
	    (rc = conf_get_size(r, o, p, "max_uri_bytes", 256, 1L << 24, &r->cfg->limits.max_uri_bytes)) < 0 ||
	    (rc = conf_get_unsigned(r, o, p, "drain_delay_ms", 0, 600000, &r->cfg->limits.drain_delay_ms)) < 0 ||
	    (rc = conf_get_unsigned(r, o, p, "drain_timeout_ms", 0, 600000, &r->cfg->limits.drain_timeout_ms)) < 0 ||
	    (rc = conf_get_double(r, o, p, "key_rate_per_s", 0, 1e6, &r->cfg->limits.key_rate_per_s)) < 0 ||
	    (rc = conf_get_int(r, o, p, "key_burst", 1, 1000000, &r->cfg->limits.key_burst)) < 0 ||
	    (rc = conf_get_unsigned(r, o, p, "key_max_concurrent", 1, 100000, &r->cfg->limits.key_max_concurrent)) < 0 ||
	    (rc = conf_get_long(r, o, p, "key_max_timeout_ms", 100, 3600000, &r->cfg->limits.key_max_timeout_ms)) < 0 ||
	    (rc = conf_get_int(r, o, p, "worker_threads", WORKERS_THREADS_MIN, WORKERS_THREADS_MAX,
				     &r->cfg->limits.worker_threads)) < 0 ||
	    (rc = conf_get_size(r, o, p, "max_list_page_bytes", 16L << 10, 1L << 30,
			        &r->cfg->limits.max_list_page_bytes)) < 0 ||
	    (rc = conf_get_unsigned(r, o, p, "mcp_max_sessions", 1, 1000000, &r->cfg->limits.mcp_max_sessions)) < 0 ||
	    (rc = conf_get_unsigned(r, o, p, "mcp_session_idle_s", 1, 86400, &r->cfg->limits.mcp_session_idle_s)) < 0)
		return rc;
	if (r->cfg->limits.key_max_concurrent > r->cfg->limits.max_connections)
		return conf_bad(r, "limits.key_max_concurrent",
			        arena_printf(&r->cfg->arena, "must be at most limits.max_connections (%u): one key would "
					     "take every served connection", r->cfg->limits.max_connections));
	return 0;
}

void conf_limits_finish(struct config *c)
{
	if (c->limits.key_max_concurrent == 0)
		c->limits.key_max_concurrent = c->limits.max_connections >= 4 ? c->limits.max_connections / 4 : 1;
}

int conf_read_execution(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"timeout_ms", "lock_timeout_ms", "default_max_rows", "max_rows",
					   "max_sql_bytes", "max_result_bytes", "max_statement_memory_bytes", "big_integers", NULL};
	const char *p = "execution";
	const char *big = NULL;
	int rc;
	if ((rc = conf_check_keys(r, o, p, keys)) < 0 ||
	    (rc = conf_get_long(r, o, p, "timeout_ms", 1, 3600000, &r->cfg->execution.timeout_ms)) < 0 ||
	    (rc = conf_get_long(r, o, p, "lock_timeout_ms", 1, 3600000, &r->cfg->execution.lock_timeout_ms)) < 0 ||
	    (rc = conf_get_long(r, o, p, "default_max_rows", 1, 10000000, &r->cfg->execution.default_max_rows)) < 0 ||
	    (rc = conf_get_long(r, o, p, "max_rows", 1, 10000000, &r->cfg->execution.max_rows)) < 0 ||
	    (rc = conf_get_size(r, o, p, "max_sql_bytes", 64, 16L << 20, &r->cfg->execution.max_sql_bytes)) < 0 ||
	    (rc = conf_get_size(r, o, p, "max_result_bytes", 1024, 1L << 30, &r->cfg->execution.max_result_bytes)) < 0 ||
	    (rc = conf_get_size(r, o, p, "max_statement_memory_bytes", 1L << 20, 1L << 40,
			        &r->cfg->execution.max_statement_memory_bytes)) < 0 ||
	    (rc = conf_get_string(r, o, p, "big_integers", false, &big)) < 0)
		return rc;
	if (big && strcmp(big, "number") != 0 && strcmp(big, "string") != 0)
		return conf_bad(r, "execution.big_integers", "must be \"number\" or \"string\"");
	r->cfg->execution.big_integers_as_strings = big && strcmp(big, "string") == 0;
	if (r->cfg->execution.default_max_rows > r->cfg->execution.max_rows)
		return conf_bad(r, "execution.default_max_rows", "must not exceed execution.max_rows");
	return 0;
}

int conf_read_catalog(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"pool_size", "pool_wait_ms", "connect_timeout_s", "sample_values",
					   "sample_rows", "sample_value_max_len", "introspect_timeout_ms",
					   "row_count_scan_limit", "recheck_s", NULL};
	const char *p = "catalog";
	struct config *c = r->cfg;
	int rc;
	if ((rc = conf_check_keys(r, o, p, keys)) < 0 ||
	    (rc = conf_get_int(r, o, p, "pool_size", 1, 1024, &c->catalog.pool_size)) < 0 ||
	    (rc = conf_get_long(r, o, p, "pool_wait_ms", 0, 600000, &c->catalog.pool_wait_ms)) < 0 ||
	    (rc = conf_get_long(r, o, p, "connect_timeout_s", 1, 600, &c->catalog.connect_timeout_s)) < 0 ||
	    (rc = conf_get_int(r, o, p, "sample_values", 0, 100, &c->catalog.sample_values)) < 0 ||
	    (rc = conf_get_int(r, o, p, "sample_rows", 0, 1000000, &c->catalog.sample_rows)) < 0 ||
	    (rc = conf_get_int(r, o, p, "sample_value_max_len", 8, 4096, &c->catalog.sample_value_max_len)) < 0 ||
	    (rc = conf_get_long(r, o, p, "introspect_timeout_ms", 100, 3600000, &c->catalog.introspect_timeout_ms)) < 0 ||
	    (rc = conf_get_long(r, o, p, "row_count_scan_limit", 0, 1000000000, &c->catalog.row_count_scan_limit)) < 0 ||
	    (rc = conf_get_long(r, o, p, "recheck_s", 0, 7L * 86400, &c->catalog.recheck_s)) < 0)
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
		return conf_bad(r, path, "sqlite URL needs a path: sqlite:///abs/path.sqlite");
	if (rest[0] == '/')
		d->sqlite_path = arena_strdup(&r->cfg->arena, rest);
	else
		d->sqlite_path = arena_printf(&r->cfg->arena, "%s/%s", r->config_dir, rest);
	return d->sqlite_path ? 0 : -T2S_ERR_NOMEM;
}

/* A MySQL / MariaDB database's URL (pipeline/db/engine_mysql.c reads it). */
static bool is_mysql_url(const char *url)
{
	return strncmp(url, "mysql://", 8) == 0 || strncmp(url, "mariadb://", 10) == 0;
}

/* Does a PostgreSQL or MySQL URL carry a password (user:password@ before the host, or a password= parameter)? */
static bool url_has_password(const char *url)
{
	const char *rest = strstr(url, "://");
	rest = rest ? rest + 3 : url;
	size_t authority = strcspn(rest, "/?");
	const char *at = memchr(rest, '@', authority);
	if (at && memchr(rest, ':', (size_t)(at - rest)))
		return true;
	const char *query = strchr(rest, '?');
	return query && (strstr(query, "?password=") || strstr(query, "&password="));
}

/* The secret of password_file (relative to the config's folder) into *ret (the arena's), one trailing newline dropped. */
static int read_password_file(struct reader *r, const char *path, const char *file, const char **ret)
{
	const char *full = file[0] == '/' ? file : arena_printf(&r->cfg->arena, "%s/%s", r->config_dir, file);
	if (!full)
		return -T2S_ERR_NOMEM;
	FILE *f = fopen(full, "rb");
	if (!f)
		return conf_bad(r, path, arena_printf(&r->cfg->arena, "cannot read %s: %s", full, strerror(errno)));
	char buf[CONFIG_PASSWORD_MAX + 2];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '\r')
		buf[--n] = '\0';
	if (n > CONFIG_PASSWORD_MAX)
		return conf_bad(r, path, arena_printf(&r->cfg->arena, "names a file longer than %u bytes", CONFIG_PASSWORD_MAX));
	if (n == 0 || strlen(buf) != n)
		return conf_bad(r, path, n ? "names a file holding a NUL byte" : "names an empty file");
	*ret = arena_strdup(&r->cfg->arena, buf);
	explicit_bzero(buf, sizeof(buf));
	return *ret ? 0 : -T2S_ERR_NOMEM;
}

/* A PostgreSQL database's password_env or password_file (one of them, and no password in its URL). */
static int read_database_password(struct reader *r, json_t *o, const char *p, struct config_database *d)
{
	const char *env = NULL, *file = NULL;
	int rc;
	if ((rc = conf_get_string(r, o, p, "password_env", false, &env)) < 0 ||
	    (rc = conf_get_string(r, o, p, "password_file", false, &file)) < 0)
		return rc;
	const char *key = env ? "password_env" : "password_file";
	if (!env && !file)
		return 0;
	if (env && file)
		return conf_bad(r, conf_join_path(r, p, "password_file"), "give password_env or password_file, not both");
	if (d->sqlite_path)
		return conf_bad(r, conf_join_path(r, p, key), "applies to PostgreSQL and MySQL databases only");
	if (url_has_password(d->url))
		return conf_bad(r, conf_join_path(r, p, key),
				"the url holds a password too: give the password in one place");
	if (file)
		return read_password_file(r, conf_join_path(r, p, key), file, &d->password);
	const char *v = getenv(env);
	if (!v || !*v)
		return conf_bad(r, conf_join_path(r, p, key),
				arena_printf(&r->cfg->arena, "names the environment variable %s, which is not set", env));
	if (strlen(v) > CONFIG_PASSWORD_MAX)
		return conf_bad(r, conf_join_path(r, p, key),
				arena_printf(&r->cfg->arena, "names a variable longer than %u bytes", CONFIG_PASSWORD_MAX));
	d->password = arena_strdup(&r->cfg->arena, v);
	return d->password ? 0 : -T2S_ERR_NOMEM;
}

static int read_database(struct reader *r, json_t *o, size_t i, struct config_database *d)
{
	static const char *const keys[] = {"name", "url", "pool_size", "schemas", "allow_privileged_role",
					   "password_env", "password_file", NULL};
	char *p = arena_printf(&r->cfg->arena, "databases[%zu]", i);
	int rc;
	d->pool_size = r->cfg->catalog.pool_size;
	if ((rc = conf_check_keys(r, o, p, keys)) < 0 || (rc = conf_get_string(r, o, p, "name", true, &d->name)) < 0 ||
	    (rc = conf_get_string(r, o, p, "url", true, &d->url)) < 0 ||
	    (rc = conf_get_int(r, o, p, "pool_size", 1, 1024, &d->pool_size)) < 0 ||
	    (rc = conf_get_bool(r, o, p, "allow_privileged_role", &d->allow_privileged_role)) < 0)
		return rc;
	if (!valid_name(d->name))
		return conf_bad(r, conf_join_path(r, p, "name"), "must be 1-64 characters of A-Z a-z 0-9 _ -");
	if (strncmp(d->url, "sqlite://", 9) == 0) {
		if ((rc = resolve_sqlite_path(r, d, conf_join_path(r, p, "url"))) < 0)
			return rc;
	} else if (strncmp(d->url, "postgresql://", 13) != 0 && strncmp(d->url, "postgres://", 11) != 0 &&
		   !is_mysql_url(d->url)) {
		return conf_bad(r, conf_join_path(r, p, "url"), "must start with sqlite://, postgresql://, mysql:// or mariadb://");
	} else if (is_mysql_url(d->url) && !strchr(strstr(d->url, "://") + 3, '/')) {
		return conf_bad(r, conf_join_path(r, p, "url"), "names no database: mysql://user@host:port/database");
	}
	if ((rc = read_database_password(r, o, p, d)) < 0)
		return rc;
	if (json_object_get(o, "allow_privileged_role") && d->sqlite_path)
		return conf_bad(r, conf_join_path(r, p, "allow_privileged_role"),
				"applies to PostgreSQL and MySQL databases only");
	json_t *schemas = json_object_get(o, "schemas");
	if (schemas) {
		if (d->sqlite_path || is_mysql_url(d->url))
			return conf_bad(r, conf_join_path(r, p, "schemas"), "applies to PostgreSQL databases only");
		if ((rc = conf_get_string_array(r, schemas, conf_join_path(r, p, "schemas"), &d->schemas, &d->n_schemas)) < 0)
			return rc;
		for (size_t j = 0; j < d->n_schemas; j++)
			if (strncmp(d->schemas[j], "pg_", 3) == 0 || strcmp(d->schemas[j], "information_schema") == 0)
				return conf_bad(r, arena_printf(&r->cfg->arena, "%s.schemas[%zu]", p, j),
						"is a system schema: statements never read it (pg_catalog, information_schema "
						"and pg_* are outside every database's schemas)");
	}
	for (size_t j = 0; j < i; j++)
		if (strcmp(r->cfg->databases[j].name, d->name) == 0)
			return conf_bad(r, conf_join_path(r, p, "name"), "duplicates another database's name");
	return 0;
}

int conf_read_databases(struct reader *r, json_t *a)
{
	if (!json_is_array(a))
		return conf_bad(r, "databases", "must be an array");
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

int conf_read_redis(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"url", "timeout_ms", "pool_size", NULL};
	int rc;
	if ((rc = conf_check_keys(r, o, "redis", keys)) < 0 ||
	    (rc = conf_get_string(r, o, "redis", "url", true, &r->cfg->redis.url)) < 0 ||
	    (rc = conf_get_long(r, o, "redis", "timeout_ms", 1, 600000, &r->cfg->redis.timeout_ms)) < 0 ||
	    (rc = conf_get_int(r, o, "redis", "pool_size", 1, 256, &r->cfg->redis.pool_size)) < 0)
		return rc;
	if (strncmp(r->cfg->redis.url, "redis://", 8) != 0 && strncmp(r->cfg->redis.url, "unix://", 7) != 0)
		return conf_bad(r, "redis.url", "must start with redis:// or unix://");
	return 0;
}

int conf_read_state(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"url", "pool_size", "max_examples_per_database", "max_feedback_per_database",
					   "poll_interval_ms", NULL};
	int rc;
	if ((rc = conf_check_keys(r, o, "state", keys)) < 0 || (rc = conf_get_string(r, o, "state", "url", true, &r->cfg->state.url)) < 0 ||
	    (rc = conf_get_int(r, o, "state", "pool_size", 1, 64, &r->cfg->state.pool_size)) < 0 ||
	    (rc = conf_get_long(r, o, "state", "max_examples_per_database", 1, T2S_STORED_PER_DATABASE_MAX,
				&r->cfg->state.max_examples_per_database)) < 0 ||
	    (rc = conf_get_long(r, o, "state", "max_feedback_per_database", 1, T2S_STORED_PER_DATABASE_MAX,
				&r->cfg->state.max_feedback_per_database)) < 0 ||
	    (rc = conf_get_long(r, o, "state", "poll_interval_ms", 0, 3600000, &r->cfg->state.poll_interval_ms)) < 0)
		return rc;
	const char *u = r->cfg->state.url;
	if (strncmp(u, "sqlite://", 9) && strncmp(u, "postgresql://", 13) && strncmp(u, "postgres://", 11))
		return conf_bad(r, "state.url", "must start with sqlite:// or postgresql://");
	return 0;
}

int conf_read_cache(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"memory_max_bytes", "redis_retry_after_ms", "secret_env", NULL};
	int rc;
	if ((rc = conf_check_keys(r, o, "cache", keys)) < 0 ||
	    (rc = conf_get_size(r, o, "cache", "memory_max_bytes", 0, 1L << 40, &r->cfg->cache.memory_max_bytes)) < 0 ||
	    (rc = conf_get_long(r, o, "cache", "redis_retry_after_ms", 0, 3600000, &r->cfg->cache.redis_retry_after_ms)) < 0 ||
	    (rc = conf_get_string(r, o, "cache", "secret_env", false, &r->cfg->cache.secret_env)) < 0)
		return rc;
	if (r->cfg->cache.secret_env) {
		const char *v = getenv(r->cfg->cache.secret_env);
		if (!v || !*v)
			return conf_bad(r, "cache.secret_env", "names an environment variable that is not set");
		if (strlen(v) < CONFIG_CACHE_SECRET_MIN)
			return conf_bad(r, "cache.secret_env", "names a secret shorter than 32 characters");
		r->cfg->cache.secret = arena_strdup(&r->cfg->arena, v);
	}
	return 0;
}

/*
 * Keys anyone would try first.  Only their digests reach the config, so a
 * key's strength cannot be measured: a digest of one of these is refused
 * (unless auth.development), and README.md asks for random keys
 * ("openssl rand -hex 32").  A backstop, not a strength meter.
 */
static const char *const weak_keys[] = {
	"test", "test1", "test2", "test3", "test123", "testing", "testkey", "test-key", "test_key",
	"password", "password1", "passw0rd", "secret", "secret1", "changeme", "change-me", "changeit",
	"admin", "admin123", "administrator", "root", "guest", "user", "demo", "example", "default",
	"key", "key1", "key2", "apikey", "api-key", "api_key", "token", "letmein", "welcome",
	"dev", "development", "prod", "production", "staging", "local", "foo", "bar", "foobar",
	"abc", "abc123", "qwerty", "123", "1234", "12345", "123456", "12345678", "1234567890",
	"text2sqld", "t2s", "sql", "query", "app", "app1", "app2", "mykey", "my-key", "my_key",
	"xxx", "none", "null", "empty", "placeholder", "replace-me", "replace_me", "your-key", NULL,
};

/* True when digest is the SHA-256 of one of weak_keys. */
static bool weak_key_digest(const unsigned char digest[32])
{
	bool weak = false;
	for (const char *const *w = weak_keys; *w; w++) {
		unsigned char d[32];
		hash_sha256(*w, strlen(*w), d);
		weak |= hash_digest_equal(d, digest) != 0;
	}
	return weak;
}

/* auth.api_keys[i].scopes: a non-empty array of scope names, into *ret. */
static int read_scopes(struct reader *r, json_t *o, const char *p, unsigned *ret)
{
	json_t *a = json_object_get(o, "scopes");
	if (!a)
		return 0;
	const char *path = conf_join_path(r, p, "scopes");
	if (!json_is_array(a) || json_array_size(a) == 0)
		return conf_bad(r, path, "must be a non-empty array of \"query\" and \"admin\"");
	unsigned scopes = 0;
	size_t j;
	json_t *v;
	json_array_foreach(a, j, v) {
		unsigned s = 0;
		for (unsigned bit = API_SCOPE_QUERY; bit <= API_SCOPE_ADMIN && !s; bit <<= 1)
			if (json_is_string(v) && strcmp(json_string_value(v), api_scope_name(bit)) == 0)
				s = bit;
		if (!s)
			return conf_bad(r, arena_printf(&r->cfg->arena, "%s[%zu]", path, j), "must be \"query\" or \"admin\"");
		scopes |= s;
	}
	*ret = scopes;
	return 0;
}

static int read_api_key(struct reader *r, json_t *o, size_t i, struct config_api_key *k)
{
	static const char *const keys[] = {"name", "key_sha256", "databases", "scopes", "rate_per_s", "burst", "tables", NULL};
	char *p = arena_printf(&r->cfg->arena, "auth.api_keys[%zu]", i);
	const char *hex = NULL;
	int rc;
	k->rate_per_s = r->cfg->limits.key_rate_per_s;
	k->burst = r->cfg->limits.key_burst;
	k->scopes = API_KEY_SCOPES_DEFAULT;
	if ((rc = conf_check_keys(r, o, p, keys)) < 0 || (rc = conf_get_string(r, o, p, "name", true, &k->name)) < 0 ||
	    (rc = conf_get_string(r, o, p, "key_sha256", true, &hex)) < 0 ||
	    (rc = read_scopes(r, o, p, &k->scopes)) < 0 ||
	    (rc = conf_get_double(r, o, p, "rate_per_s", 0, 1e6, &k->rate_per_s)) < 0 ||
	    (rc = conf_get_int(r, o, p, "burst", 1, 1000000, &k->burst)) < 0)
		return rc;
	if (hash_hex_decode32(hex, k->key_sha256) < 0)
		return conf_bad(r, conf_join_path(r, p, "key_sha256"), "must be 64 hex digits (sha256 of the key)");
	if (!r->cfg->auth.development && weak_key_digest(k->key_sha256))
		return conf_bad(r, conf_join_path(r, p, "key_sha256"),
			        "is the sha256 of a well-known word, a key anyone can guess: use a random key "
			        "(openssl rand -hex 32), or set auth.development: true on a test machine");
	json_t *dbs = json_object_get(o, "databases");
	if (!dbs)
		return conf_bad(r, conf_join_path(r, p, "databases"), "is required (use [\"*\"] for all)");
	if ((rc = conf_get_string_array(r, dbs, conf_join_path(r, p, "databases"), &k->databases, &k->n_databases)) < 0)
		return rc;
	for (size_t j = 0; j < k->n_databases; j++) {
		if (strcmp(k->databases[j], "*") == 0)
			k->all_databases = true;
		else if (!config_database_find(r->cfg, k->databases[j]))
			return conf_bad(r, arena_printf(&r->cfg->arena, "%s.databases[%zu]", p, j),
				        "names a database that is not configured");
	}
	return conf_read_key_tables(r, o, p, k);
}

/* auth.public_metrics and auth.metrics_key_sha256. */
static int read_metrics_access(struct reader *r, json_t *o)
{
	static const char *const names[] = {"aggregate", "full", "none"}; /* in enum config_public_metrics order */
	const char *mode = NULL, *hex = NULL;
	int rc;
	if ((rc = conf_get_string(r, o, "auth", "public_metrics", false, &mode)) < 0 ||
	    (rc = conf_get_string(r, o, "auth", "metrics_key_sha256", false, &hex)) < 0)
		return rc;
	if (hex && hash_hex_decode32(hex, r->cfg->auth.metrics_key_sha256) < 0)
		return conf_bad(r, "auth.metrics_key_sha256", "must be 64 hex digits (sha256 of the key)");
	r->cfg->auth.has_metrics_key = hex != NULL;
	for (size_t i = 0; mode && i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(mode, names[i]) == 0) {
			r->cfg->auth.public_metrics = (enum config_public_metrics)i;
			return 0;
		}
	return mode ? conf_bad(r, "auth.public_metrics", "must be \"aggregate\", \"full\" or \"none\"") : 0;
}

static int load_api_keys_file(struct reader *r, const char *file, json_t **ret);
static int read_api_keys(struct reader *r, json_t *a);

int conf_read_auth(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"api_keys", "api_keys_file", "public_readiness_details", "public_metrics",
					   "metrics_key_sha256", "allow_anonymous_writes", "development", "jwt", NULL};
	struct config *c = r->cfg;
	int rc = conf_check_keys(r, o, "auth", keys);
	if (rc < 0 || (rc = conf_get_bool(r, o, "auth", "public_readiness_details", &c->auth.public_readiness_details)) < 0 ||
	    (rc = read_metrics_access(r, o)) < 0 ||
	    (rc = conf_get_bool(r, o, "auth", "allow_anonymous_writes", &c->auth.allow_anonymous_writes)) < 0 ||
	    (rc = conf_get_bool(r, o, "auth", "development", &c->auth.development)) < 0)
		return rc;
	const char *file = NULL;
	if ((rc = conf_get_string(r, o, "auth", "api_keys_file", false, &file)) < 0)
		return rc;
	if (file && json_object_get(o, "api_keys"))
		return conf_bad(r, "auth.api_keys_file", "give auth.api_keys or auth.api_keys_file, not both");
	json_t *loaded = NULL;
	if (file && (rc = load_api_keys_file(r, file, &loaded)) < 0)
		return rc;
	rc = read_api_keys(r, loaded ? loaded : json_object_get(o, "api_keys"));
	json_decref(loaded);
	return rc < 0 ? rc : conf_read_jwt(r, json_object_get(o, "jwt"));
}

/*
 * auth.api_keys_file: a JSON file (relative to the config's folder) holding
 * what auth.api_keys would, e.g. a Kubernetes Secret mounted as a file.
 * *ret is a new reference.
 */
static int load_api_keys_file(struct reader *r, const char *file, json_t **ret)
{
	const char *full = file[0] == '/' ? file : arena_printf(&r->cfg->arena, "%s/%s", r->config_dir, file);
	if (!full)
		return -T2S_ERR_NOMEM;
	json_error_t jerr;
	*ret = json_load_file(full, JSON_REJECT_DUPLICATES, &jerr);
	if (!*ret)
		return conf_bad(r, "auth.api_keys_file",
				arena_printf(&r->cfg->arena, "cannot read %s: %s (line %d)", full, jerr.text, jerr.line));
	return 0;
}

/* auth.api_keys (or the array of auth.api_keys_file); absent: auth off. */
static int read_api_keys(struct reader *r, json_t *a)
{
	struct config *c = r->cfg;
	int rc;
	if (!a)
		return 0; /* auth off: anonymous callers query (and administer with allow_anonymous_writes) */
	if (!json_is_array(a) || json_array_size(a) == 0)
		return conf_bad(r, "auth.api_keys", "must be a non-empty array (leave it out to turn auth off)");
	if (c->auth.allow_anonymous_writes)
		return conf_bad(r, "auth.allow_anonymous_writes",
			        "applies only without auth.api_keys: give a key the \"admin\" scope instead");
	size_t n = json_array_size(a);
	c->auth.keys = arena_calloc(&c->arena, n, sizeof(*c->auth.keys));
	if (!c->auth.keys)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		if ((rc = read_api_key(r, json_array_get(a, i), i, &c->auth.keys[i])) < 0)
			return rc;
	c->auth.n_keys = n;
	c->auth.enabled = true;
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

int conf_read_cors(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"allowed_origins", "allow_credentials", "max_age_s", NULL};
	struct config *c = r->cfg;
	int rc;
	if ((rc = conf_check_keys(r, o, "cors", keys)) < 0 ||
	    (rc = conf_get_bool(r, o, "cors", "allow_credentials", &c->cors.allow_credentials)) < 0 ||
	    (rc = conf_get_long(r, o, "cors", "max_age_s", 0, 86400, &c->cors.max_age_s)) < 0)
		return rc;
	json_t *a = json_object_get(o, "allowed_origins");
	if (!a || (json_is_array(a) && json_array_size(a) == 0))
		return 0; /* off */
	if ((rc = conf_get_string_array(r, a, "cors.allowed_origins", &c->cors.allowed_origins,
				        &c->cors.n_allowed_origins)) < 0)
		return rc;
	for (size_t i = 0; i < c->cors.n_allowed_origins; i++) {
		const char *origin = c->cors.allowed_origins[i];
		char *ip = arena_printf(&c->arena, "cors.allowed_origins[%zu]", i);
		if (strcmp(origin, "*") == 0) {
			if (c->cors.n_allowed_origins != 1)
				return conf_bad(r, ip, "\"*\" must be the only entry");
			if (c->cors.allow_credentials)
				return conf_bad(r, ip, "\"*\" cannot be combined with cors.allow_credentials: list the origins");
			c->cors.any_origin = true;
		} else if (!valid_origin(origin)) {
			return conf_bad(r, ip, "must be an origin such as \"https://app.example.com\" (scheme, lower-case host, "
				        "optional port; no path)");
		}
	}
	return 0;
}

int conf_read_log(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"level", "access", "audit_file", NULL};
	int rc;
	const char *audit = NULL;
	if ((rc = conf_check_keys(r, o, "log", keys)) < 0 || (rc = conf_get_string(r, o, "log", "level", false, &r->cfg->log.level)) < 0 ||
	    (rc = conf_get_bool(r, o, "log", "access", &r->cfg->log.access)) < 0 ||
	    (rc = conf_get_string(r, o, "log", "audit_file", false, &audit)) < 0)
		return rc;
	if (audit && !*audit)
		return conf_bad(r, "log.audit_file", "must name a file (leave it out for no audit log)");
	if (audit) /* relative to the config file's folder, like sqlite paths */
		r->cfg->log.audit_file = audit[0] == '/' ? audit : arena_printf(&r->cfg->arena, "%s/%s", r->config_dir, audit);
	const char *l = r->cfg->log.level;
	if (strcmp(l, "debug") && strcmp(l, "info") && strcmp(l, "warn") && strcmp(l, "error"))
		return conf_bad(r, "log.level", "must be one of debug, info, warn, error");
	return 0;
}
