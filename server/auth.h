/*
 * auth.h - API keys: "Authorization: Bearer <key>" checked against the
 * SHA-256 digests of the config, which databases a key may reach, and what
 * it may do there (its scopes, config.h enum api_scope).
 *
 * Order of the checks, so that nothing answers whether a database exists:
 * the key (401), then the route's scope (403, the same for every database,
 * existing or not: server/http_server.c before the handler), then the
 * database (404 for one the key may not use, exactly as for a missing one:
 * handlers/request_json.c request_database).  A check that depends on the
 * body (POST /feedback with "correct": true) runs in its handler after the
 * database was resolved.
 */
#ifndef T2S_AUTH_H
#define T2S_AUTH_H

#include "config/config.h"
#include "server/http.h"

#include <stdbool.h>

/* Rate-limiter slots shared by JWT callers (a subject's slot is a hash of it), after the keys'. */
#define AUTH_JWT_SLOTS 64u
/* Distinct JWT subjects named in text2sqld_caller_requests_total; later ones count as "jwt:other". */
#define AUTH_JWT_LABELS 100u

/*
 * The caller of req (auth on): the API key whose digest matches the bearer
 * token, or, when the token is shaped like a JWT and auth.jwt is set, the
 * caller it names (auth_jwt.h; made in req's arena).  NULL when neither:
 * *res then holds the 401 problem saying why (WWW-Authenticate: Bearer).
 * The caller is named in the request's log lines (log_set_caller) and
 * counted in text2sqld_caller_requests_total{caller}: a key by its name, a
 * JWT by "jwt:" and its subject for the first AUTH_JWT_LABELS subjects seen,
 * then "jwt:other", so that a provider's many users cannot grow the series
 * without bound.
 */
const struct config_api_key *auth_authenticate(struct http_request *req, struct http_response *res);

/*
 * For the public routes that show an identified caller more (/readyz's
 * checks, /metrics' series): the API key or verified JWT caller of req, as
 * auth_authenticate finds it, or NULL; answers nothing, logs and counts
 * nothing.  A JWT caller is made in req's arena.
 */
const struct config_api_key *auth_identify(struct http_request *req);

/* Is label (text2sqld_caller_requests_total's caller) principal's own: its key's name, or "jwt:" and its subject? */
bool auth_is_caller_label(const struct config_api_key *principal, const char *label);

/*
 * principal's rate-limiter slot (server/http_server.c makes n_keys +
 * AUTH_JWT_SLOTS with auth.jwt): a key's index in cfg->auth.keys; for a JWT
 * caller one of the AUTH_JWT_SLOTS after them, by a hash of its subject
 * (subjects that share a slot share its limits).
 */
size_t auth_limiter_slot(const struct config *cfg, const struct config_api_key *principal);

/*
 * The key entry matching the Authorization header value, or NULL.  Every
 * configured digest is compared in constant time.
 */
const struct config_api_key *auth_check_bearer(const struct config *cfg, const char *authorization);

/* Is the Authorization header value auth.metrics_key_sha256's key (compared in constant time)? */
bool auth_check_metrics_key(const struct config *cfg, const char *authorization);

/* May principal (NULL when auth is off) reach the database named name? */
bool auth_may_use_database(const struct config *cfg, const struct config_api_key *principal, const char *name);

/*
 * Does principal hold every API_SCOPE_* bit of need?  With auth off
 * (principal NULL) a caller holds query, and admin only with
 * auth.allow_anonymous_writes.  need 0 (a public route) always holds.
 */
bool auth_has_scope(const struct config *cfg, const struct config_api_key *principal, unsigned need);

/*
 * A 403 forbidden problem for a request whose caller lacks scope (one
 * API_SCOPE_* bit): the detail and the extension member "required_scope"
 * name it.
 */
void auth_reply_missing_scope(struct http_response *res, struct http_request *req, unsigned scope);

#endif
