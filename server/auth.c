/*
 * auth.c - bearer key checks (see auth.h).
 */
#include "server/auth.h"

#include "common/hash.h"

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
