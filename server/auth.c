/*
 * auth.c - bearer key checks (see auth.h).
 */
#include "server/auth.h"

#include "common/hash.h"
#include "common/metrics.h"
#include "server/auth_jwt.h"
#include "server/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>
#include <strings.h>

/* The SHA-256 of the key of "Bearer <key>" into ret_digest; false when there is none. */
static bool bearer_digest(const char *authorization, unsigned char ret_digest[32])
{
	if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
		return false;
	const char *key = authorization + 7;
	while (*key == ' ')
		key++;
	if (!*key || strlen(key) > 4096)
		return false;
	hash_sha256(key, strlen(key), ret_digest);
	return true;
}

bool auth_check_metrics_key(const struct config *cfg, const char *authorization)
{
	unsigned char digest[32];
	return cfg->auth.has_metrics_key && bearer_digest(authorization, digest) &&
	       hash_digest_equal(digest, cfg->auth.metrics_key_sha256);
}

const struct config_api_key *auth_check_bearer(const struct config *cfg, const char *authorization)
{
	unsigned char digest[32];
	if (!bearer_digest(authorization, digest))
		return NULL;
	const struct config_api_key *found = NULL;
	for (size_t i = 0; i < cfg->auth.n_keys; i++)
		if (hash_digest_equal(digest, cfg->auth.keys[i].key_sha256) && !found)
			found = &cfg->auth.keys[i];
	return found;
}

bool auth_may_use_database(const struct config *cfg, const struct config_api_key *principal, const char *name)
{
	if (!cfg->auth.enabled)
		return true;
	if (!principal)
		return false;
	if (principal->all_databases)
		return true;
	for (size_t i = 0; i < principal->n_databases; i++)
		if (strcmp(principal->databases[i], name) == 0)
			return true;
	return false;
}

bool auth_has_scope(const struct config *cfg, const struct config_api_key *principal, unsigned need)
{
	unsigned held = principal ? principal->scopes
		      : cfg->auth.enabled ? 0u
					  : API_SCOPE_QUERY | (cfg->auth.allow_anonymous_writes ? API_SCOPE_ADMIN : 0u);
	return (held & need) == need;
}

void auth_reply_missing_scope(struct http_response *res, struct http_request *req, unsigned scope)
{
	const char *name = api_scope_name(scope);
	struct t2s_error err = {0};
	if (req->principal)
		t2s_error_set(&err, T2S_ERR_FORBIDDEN, "API key '%.64s' lacks the scope '%s' this request needs",
			      req->principal->name, name);
	else
		t2s_error_set(&err, T2S_ERR_FORBIDDEN,
			      "without API keys, requests of the scope '%s' (changing descriptions, examples or the "
			      "index, reviewing feedback) are refused unless auth.allow_anonymous_writes is set", name);
	http_reply_error_ext(res, req, &err, json_pack("{s:s}", "required_scope", name));
}

#define JWT_LABEL_PREFIX "jwt:" /* a JWT caller's label: the prefix and its subject */

static struct metric_family *m_callers;
static pthread_mutex_t labels_lock = PTHREAD_MUTEX_INITIALIZER;
static char *jwt_labels[AUTH_JWT_LABELS]; /* subjects with a series of their own (guarded by labels_lock) */
static size_t n_jwt_labels;

static void register_callers(void)
{
	static const char *const names[] = {"caller", NULL};
	m_callers = metrics_family("text2sqld_caller_requests_total",
				   "Authenticated requests by caller: an API key's name, or \"jwt:\" and a JWT's subject "
				   "(the first 100 subjects; later ones as \"jwt:other\").",
				   METRIC_COUNTER, names, NULL, 0);
}

/* Count one request of p under its bounded label. */
static void count_caller(const struct config_api_key *p)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, register_callers);
	char label[300];
	if (!p->jwt) {
		metrics_add(m_callers, (const char *const[]){p->name, NULL}, 1);
		return;
	}
	snprintf(label, sizeof(label), JWT_LABEL_PREFIX "other");
	pthread_mutex_lock(&labels_lock);
	size_t i = 0;
	while (i < n_jwt_labels && strcmp(jwt_labels[i], p->name) != 0)
		i++;
	if (i == n_jwt_labels && n_jwt_labels < AUTH_JWT_LABELS && (jwt_labels[i] = strdup(p->name)) != NULL)
		n_jwt_labels++;
	if (i < n_jwt_labels)
		snprintf(label, sizeof(label), JWT_LABEL_PREFIX "%s", p->name);
	pthread_mutex_unlock(&labels_lock);
	metrics_add(m_callers, (const char *const[]){label, NULL}, 1);
}

/* The key or JWT caller of req, or NULL (why: the reason a token was refused, when it was one). */
static const struct config_api_key *identify(struct http_request *req, char *why, size_t why_size)
{
	const char *authorization = http_request_header(req, "Authorization");
	const struct config_api_key *p = auth_check_bearer(req->cfg, authorization);
	if (!p && req->cfg->auth.jwt.present && authorization && strncasecmp(authorization, "Bearer ", 7) == 0) {
		const char *token = authorization + 7 + strspn(authorization + 7, " ");
		struct config_api_key *caller = arena_calloc(&req->arena, 1, sizeof(*caller));
		if (auth_jwt_shaped(token) && caller &&
		    auth_jwt_verify(req->cfg, token, &req->arena, caller, why, why_size) == 0)
			p = caller;
	}
	return p;
}

const struct config_api_key *auth_identify(struct http_request *req)
{
	char why[160];
	return identify(req, why, sizeof(why));
}

bool auth_is_caller_label(const struct config_api_key *principal, const char *label)
{
	if (!principal)
		return false;
	if (!principal->jwt)
		return strcmp(label, principal->name) == 0;
	size_t n = strlen(JWT_LABEL_PREFIX);
	return strncmp(label, JWT_LABEL_PREFIX, n) == 0 && strcmp(label + n, principal->name) == 0;
}

const struct config_api_key *auth_authenticate(struct http_request *req, struct http_response *res)
{
	char why[160] = "a valid API key or token is required: Authorization: Bearer <key or JWT>";
	const struct config_api_key *p = identify(req, why, sizeof(why));
	if (!p) {
		res->www_authenticate = true;
		http_reply_problem(res, req, 401, "unauthorized", "Unauthorized", why);
		return NULL;
	}
	log_set_caller(p->name);
	count_caller(p);
	return p;
}

size_t auth_limiter_slot(const struct config *cfg, const struct config_api_key *principal)
{
	if (!principal->jwt)
		return (size_t)(principal - cfg->auth.keys);
	uint64_t h = hash_fnv1a64(HASH_FNV1A64_SEED, principal->name, strlen(principal->name));
	return cfg->auth.n_keys + (size_t)(h % AUTH_JWT_SLOTS);
}
