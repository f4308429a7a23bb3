/*
 * auth_jwt.h - bearer JWTs (auth.jwt): a token signed by the identity
 * provider whose public keys are in a JWKS file is a caller, mapped to
 * databases, scopes and tables by its claims exactly as an API key's config
 * maps a key.
 *
 * Verified: the compact JWS form (three base64url parts), the header's alg
 * RS256 (RSASSA-PKCS1-v1_5, SHA-256, keys of at least 2048 bits) or ES256
 * (ECDSA P-256, SHA-256, the 64-byte r||s signature), checked with
 * OpenSSL's EVP API against the JWKS key of the token's kid (or the only key
 * of the algorithm's type when the token has no kid) whose kty matches the
 * alg (and whose "alg" and "use", when present, allow it).  Refused: "none",
 * HS* (a public key is not an HMAC secret: the header never chooses how a
 * key is used), any other alg, an unknown kid, a bad signature; then exp
 * (required) and nbf against the wall clock with leeway_s, iss equal to
 * auth.jwt.issuer, aud (a string or an array) holding auth.jwt.audience,
 * and a non-empty sub (the caller's name in logs and metrics).
 *
 * Why not libjwt: Debian 12 ships libjwt 1.10, which reads no JWKS (its
 * jwks_* API came with later versions), so the keys would be built with
 * OpenSSL anyway, and its jwt_decode lets the token's header pick the
 * algorithm for the key given; the checks above would have to run first
 * regardless.  What is left, one EVP_DigestVerify, is OpenSSL's.
 *
 * Claims (names from auth.jwt): databases_claim, an array of database names
 * or "*" (a name not configured here is ignored: a provider may list other
 * services'); scopes_claim, an array or a space-separated string, of which
 * "query" and "admin" count (absent: query, a key's default); tables_claim,
 * {"<database>": ["table", ...]} as an API key's "tables".  A claim of the
 * wrong type refuses the token.
 *
 * The key set is process-wide, loaded at start (auth_jwt_keys_load) and again
 * on SIGHUP; a set in use by a request stays valid until it is done
 * (reference-counted).  A file that does not load keeps the set in force.
 */
#ifndef T2S_AUTH_JWT_H
#define T2S_AUTH_JWT_H

#include "common/arena.h"
#include "common/contract.h"
#include "common/error.h"
#include "config/config.h"

#include <stddef.h>

/* Is text shaped like a compact JWT (three base64url parts)?  API keys are not. */
bool auth_jwt_shaped(const char *text);

/*
 * Load cfg->auth.jwt.jwks_file and put its keys in force (cfg without
 * auth.jwt: the set is emptied).  0, or -T2S_ERR_INVALID / -T2S_ERR_NOMEM
 * with err naming the file and what is wrong (the set in force is kept).
 * A set without a usable RS256 or ES256 key is refused.
 */
T2S_MUST_CHECK
int auth_jwt_keys_load(const struct config *cfg, struct t2s_error *err);

/* Load and check cfg's JWKS file without putting it in force (--check-config). */
T2S_MUST_CHECK
int auth_jwt_keys_check(const struct config *cfg, struct t2s_error *err);

/* Free the keys in force (at exit). */
void auth_jwt_keys_release(void);

/*
 * Verify token under cfg->auth.jwt and fill *ret with the caller it names
 * (strings and arrays in arena; ret->jwt set).  0, or -1 with why (size
 * bytes) saying what was wrong, fit for a 401 problem ("the token has
 * expired").
 */
int auth_jwt_verify(const struct config *cfg, const char *token, struct arena *arena, struct config_api_key *ret,
		    char *why, size_t size);

#endif
