/*
 * auth_jwt.c - bearer JWTs verified against the JWKS in force (see
 * auth_jwt.h): the key set, the signature, the registered claims, and the
 * claims that say what the caller may reach.
 */
#include "server/auth_jwt.h"

#include "server/jwks.h"

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Longest token accepted (a few claims; providers' tokens are 1-2 KB). */
#define JWT_MAX_BYTES 16384
/* Longest subject kept as the caller's name. */
#define JWT_MAX_SUBJECT 256

static pthread_mutex_t keys_lock = PTHREAD_MUTEX_INITIALIZER;
static struct jwks *keys_in_force; /* guarded by keys_lock */

bool auth_jwt_shaped(const char *text)
{
	size_t dots = 0;
	for (const char *c = text; *c; c++)
		dots += *c == '.';
	return dots == 2 && strncmp(text, "eyJ", 3) == 0; /* base64url of '{"' */
}

int auth_jwt_keys_check(const struct config *cfg, struct t2s_error *err)
{
	struct jwks *s = NULL;
	int rc = cfg->auth.jwt.present ? jwks_load(cfg->auth.jwt.jwks_file, &s, err) : 0;
	jwks_unref(s);
	return rc;
}

int auth_jwt_keys_load(const struct config *cfg, struct t2s_error *err)
{
	struct jwks *s = NULL;
	if (cfg->auth.jwt.present) {
		int rc = jwks_load(cfg->auth.jwt.jwks_file, &s, err);
		if (rc < 0)
			return rc;
	}
	pthread_mutex_lock(&keys_lock);
	struct jwks *old = keys_in_force;
	keys_in_force = s;
	pthread_mutex_unlock(&keys_lock);
	jwks_unref(old);
	return 0;
}

void auth_jwt_keys_release(void)
{
	pthread_mutex_lock(&keys_lock);
	struct jwks *old = keys_in_force;
	keys_in_force = NULL;
	pthread_mutex_unlock(&keys_lock);
	jwks_unref(old);
}

static struct jwks *keys_acquire(void)
{
	pthread_mutex_lock(&keys_lock);
	struct jwks *s = jwks_ref(keys_in_force);
	pthread_mutex_unlock(&keys_lock);
	return s;
}

static int refuse(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, size, fmt, ap);
	va_end(ap);
	return -1;
}

/* A base64url part of the token as a JSON object (a new reference), or NULL. */
static json_t *json_part(const char *s, size_t len)
{
	unsigned char *b;
	size_t n;
	if (jwks_b64url_decode(s, len, &b, &n) < 0)
		return NULL;
	json_t *o = json_loadb((const char *)b, n, JSON_REJECT_DUPLICATES, NULL);
	free(b);
	if (o && !json_is_object(o)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* ES256's r||s (64 bytes) as the DER ECDSA-Sig-Value OpenSSL verifies; malloc'd, or NULL. */
static unsigned char *es256_der(const unsigned char *sig, size_t len, size_t *ret_len)
{
	if (len != 64)
		return NULL;
	ECDSA_SIG *es = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
	if (!es || !r || !s || !ECDSA_SIG_set0(es, r, s)) {
		BN_free(r);
		BN_free(s);
		ECDSA_SIG_free(es);
		return NULL;
	}
	unsigned char *der = NULL;
	int n = i2d_ECDSA_SIG(es, &der);
	ECDSA_SIG_free(es);
	if (n <= 0)
		return NULL;
	*ret_len = (size_t)n;
	return der; /* OPENSSL_malloc'd: freed with OPENSSL_free */
}

/* Does sig sign data under key (SHA-256; RSA PKCS#1 v1.5 or ECDSA)? */
static bool signature_ok(const struct jwk *key, const char *data, size_t data_len, const unsigned char *sig,
			 size_t sig_len)
{
	unsigned char *der = NULL;
	if (key->type == JWK_EC_P256) {
		der = es256_der(sig, sig_len, &sig_len);
		if (!der)
			return false;
		sig = der;
	}
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	bool ok = md && EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key->key) == 1 &&
		  EVP_DigestVerify(md, sig, sig_len, (const unsigned char *)data, data_len) == 1;
	EVP_MD_CTX_free(md);
	OPENSSL_free(der);
	return ok;
}

/* The header's alg, kid and key; -1 with why when the token may not be checked against any key. */
static int pick_key(json_t *header, const struct jwks *set, const struct jwk **ret, char *why, size_t size)
{
	const char *alg = json_string_value(json_object_get(header, "alg"));
	json_t *kidv = json_object_get(header, "kid");
	if (!alg)
		return refuse(why, size, "the token's header names no alg");
	enum jwk_type type;
	if (strcmp(alg, "RS256") == 0)
		type = JWK_RSA;
	else if (strcmp(alg, "ES256") == 0)
		type = JWK_EC_P256;
	else
		return refuse(why, size, "the token's alg \"%.16s\" is not accepted (RS256 or ES256 only)", alg);
	if (kidv && !json_is_string(kidv))
		return refuse(why, size, "the token's kid is not a string");
	if (json_object_get(header, "crit"))
		return refuse(why, size, "the token's header has critical extensions (crit), which are not understood");
	*ret = jwks_find(set, json_string_value(kidv), type);
	if (!*ret)
		return refuse(why, size, kidv ? "no key of the JWKS has the token's kid for its alg"
					      : "the token names no kid and the JWKS has not exactly one key for its alg");
	return 0;
}

/* Is v a string equal to want, or an array holding it? */
static bool holds(json_t *v, const char *want)
{
	size_t i;
	json_t *x;
	if (json_is_string(v))
		return strcmp(json_string_value(v), want) == 0;
	json_array_foreach(v, i, x)
		if (json_is_string(x) && strcmp(json_string_value(x), want) == 0)
			return true;
	return false;
}

/* exp, nbf, iss, aud and sub of claims; -1 with why. */
static int check_registered(const struct config_jwt *j, json_t *claims, char *why, size_t size)
{
	double now = (double)time(NULL);
	json_t *exp = json_object_get(claims, "exp"), *nbf = json_object_get(claims, "nbf");
	const char *iss = json_string_value(json_object_get(claims, "iss"));
	const char *sub = json_string_value(json_object_get(claims, "sub"));
	if (!json_is_number(exp))
		return refuse(why, size, "the token has no exp (expiry) claim");
	if (now > json_number_value(exp) + (double)j->leeway_s)
		return refuse(why, size, "the token has expired");
	if (nbf && (!json_is_number(nbf) || now + (double)j->leeway_s < json_number_value(nbf)))
		return refuse(why, size, "the token is not valid yet (nbf)");
	if (!iss || strcmp(iss, j->issuer) != 0)
		return refuse(why, size, "the token's issuer (iss) is not the one configured");
	if (!holds(json_object_get(claims, "aud"), j->audience))
		return refuse(why, size, "the token's audience (aud) does not hold the one configured");
	if (!sub || !*sub || strlen(sub) > JWT_MAX_SUBJECT)
		return refuse(why, size, "the token has no subject (sub) of 1 to %d characters", JWT_MAX_SUBJECT);
	return 0;
}

/* An array of strings (or one string when one is allowed) into an arena array; -1 when v is of another type. */
static int string_list(json_t *v, bool split_spaces, struct arena *a, const char *const **ret, size_t *ret_n)
{
	*ret = NULL;
	*ret_n = 0;
	if (!v)
		return 0;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t cap = strlen(s) / 2 + 2, n = 0;
		const char **out = arena_calloc(a, cap, sizeof(*out));
		while (out && *s) {
			size_t len = split_spaces ? strcspn(s, " ") : strlen(s);
			if (len && !(out[n++] = arena_strndup(a, s, len)))
				return -1;
			s += len;
			s += strspn(s, " ");
		}
		*ret = out;
		*ret_n = n;
		return out ? 0 : -1;
	}
	if (!json_is_array(v))
		return -1;
	const char **out = arena_calloc(a, json_array_size(v) + 1, sizeof(*out));
	size_t i;
	json_t *x;
	json_array_foreach(v, i, x) {
		if (!json_is_string(x) || !out || !(out[i] = arena_strdup(a, json_string_value(x))))
			return -1;
	}
	*ret = out;
	*ret_n = json_array_size(v);
	return 0;
}

/* The tables claim {"db": ["t", ...]} into ret's grants; -1 when it is of another shape. */
static int table_grants(json_t *v, struct arena *a, struct config_api_key *ret)
{
	if (!v)
		return 0;
	if (!json_is_object(v))
		return -1;
	struct config_table_grant *g = arena_calloc(a, json_object_size(v) + 1, sizeof(*g));
	size_t n = 0;
	const char *db;
	json_t *list;
	json_object_foreach(v, db, list) {
		if (!g || !json_is_array(list) || !(g[n].database = arena_strdup(a, db)) ||
		    string_list(list, false, a, &g[n].tables, &g[n].n_tables) < 0)
			return -1;
		n++;
	}
	ret->table_grants = g;
	ret->n_table_grants = n;
	return 0;
}

/* The claims that say what the caller may reach, into ret; -1 with why. */
static int map_claims(const struct config *cfg, json_t *claims, struct arena *a, struct config_api_key *ret,
		      char *why, size_t size)
{
	const struct config_jwt *j = &cfg->auth.jwt;
	const char *const *scopes;
	size_t n_scopes;
	json_t *dbs = json_object_get(claims, j->databases_claim);
	json_t *sc = json_object_get(claims, j->scopes_claim);
	if (string_list(dbs, false, a, &ret->databases, &ret->n_databases) < 0)
		return refuse(why, size, "the token's %.64s claim is not an array of database names", j->databases_claim);
	if (string_list(sc, true, a, &scopes, &n_scopes) < 0)
		return refuse(why, size, "the token's %.64s claim is not a list of scopes", j->scopes_claim);
	if (table_grants(json_object_get(claims, j->tables_claim), a, ret) < 0)
		return refuse(why, size, "the token's %.64s claim is not an object of database names and table arrays",
			      j->tables_claim);
	for (size_t i = 0; i < ret->n_databases; i++)
		ret->all_databases |= strcmp(ret->databases[i], "*") == 0;
	ret->scopes = sc ? 0u : API_KEY_SCOPES_DEFAULT;
	for (size_t i = 0; i < n_scopes; i++)
		for (unsigned bit = API_SCOPE_QUERY; bit <= API_SCOPE_ADMIN; bit <<= 1)
			if (strcmp(scopes[i], api_scope_name(bit)) == 0)
				ret->scopes |= bit;
	ret->rate_per_s = cfg->limits.key_rate_per_s;
	ret->burst = cfg->limits.key_burst;
	ret->jwt = true;
	return 0;
}

int auth_jwt_verify(const struct config *cfg, const char *token, struct arena *arena, struct config_api_key *ret,
		    char *why, size_t size)
{
	*ret = (struct config_api_key){0};
	if (!cfg->auth.jwt.present)
		return refuse(why, size, "bearer JWTs are not accepted here (no auth.jwt)");
	size_t len = strlen(token);
	const char *dot1 = strchr(token, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	if (len > JWT_MAX_BYTES || !dot2)
		return refuse(why, size, "the token is not a compact JWT of at most %d bytes", JWT_MAX_BYTES);
	json_t *header = json_part(token, (size_t)(dot1 - token));
	json_t *claims = json_part(dot1 + 1, (size_t)(dot2 - dot1 - 1));
	unsigned char *sig = NULL;
	size_t sig_len = 0;
	struct jwks *set = keys_acquire();
	const struct jwk *key = NULL;
	int rc = -1;
	if (!header || !claims)
		refuse(why, size, "the token's header or claims are not base64url JSON objects");
	else if (pick_key(header, set, &key, why, size) < 0)
		;
	else if (jwks_b64url_decode(dot2 + 1, strlen(dot2 + 1), &sig, &sig_len) < 0 ||
		 !signature_ok(key, token, (size_t)(dot2 - token), sig, sig_len))
		refuse(why, size, "the token's signature does not verify");
	else if (check_registered(&cfg->auth.jwt, claims, why, size) == 0 &&
		 map_claims(cfg, claims, arena, ret, why, size) == 0 &&
		 (ret->name = arena_strdup(arena, json_string_value(json_object_get(claims, "sub")))) != NULL)
		rc = 0;
	jwks_unref(set);
	free(sig);
	json_decref(header);
	json_decref(claims);
	return rc;
}
