/*
 * auth.h - API keys: "Authorization: Bearer <key>" checked against the
 * SHA-256 digests of the config, and which databases a key may reach.
 */
#ifndef T2S_AUTH_H
#define T2S_AUTH_H

#include "config/config.h"

#include <stdbool.h>

/*
 * The key entry matching the Authorization header value, or NULL.  Every
 * configured digest is compared in constant time.
 */
const struct config_api_key *auth_check_bearer(const struct config *cfg, const char *authorization);

/* Is the Authorization header value auth.metrics_key_sha256's key (compared in constant time)? */
bool auth_check_metrics_key(const struct config *cfg, const char *authorization);

/* May principal (NULL when auth is off) reach the database named name? */
bool auth_may_use_database(const struct config *cfg, const struct config_api_key *principal, const char *name);

#endif
