/*
 * jwks.h - a JSON Web Key Set read from a file into OpenSSL public keys
 * (RFC 7517): RSA keys ("kty": "RSA", n and e; at least 2048 bits) and EC
 * P-256 keys ("kty": "EC", "crv": "P-256", x and y, checked to lie on the
 * curve).  Keys of other types or curves, and keys whose "use" is not "sig"
 * or whose "alg" is neither RS256 nor ES256, are skipped.  Immutable once
 * loaded; reference-counted so that a set replaced on SIGHUP stays valid for
 * the requests still using it.  Used by auth_jwt.c.
 */
#ifndef T2S_JWKS_H
#define T2S_JWKS_H

#include "common/contract.h"
#include "common/error.h"

#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

enum jwk_type { JWK_RSA, JWK_EC_P256 };

struct jwk {
	char *kid;            /* NULL when the key has none */
	enum jwk_type type;
	EVP_PKEY *key;
};

struct jwks {
	atomic_int refs;
	struct jwk *keys;
	size_t n;
};

/* Base64url (no padding) of len bytes into *ret (malloc'd, the caller frees), *ret_len its length.  -1 when invalid. */
int jwks_b64url_decode(const char *in, size_t len, unsigned char **ret, size_t *ret_len);

/* Read path: 0 and *ret (one reference), or -T2S_ERR_INVALID / -T2S_ERR_NOMEM with err naming what is wrong. */
T2S_MUST_CHECK
int jwks_load(const char *path, struct jwks **ret, struct t2s_error *err);

struct jwks *jwks_ref(struct jwks *s);
/* Drop one reference; frees on the last.  Accepts NULL. */
void jwks_unref(struct jwks *s);

/*
 * The key a token of this type names: the one whose kid is kid, else (kid
 * NULL) the only key of the type.  NULL when none (or, without kid, several).
 */
const struct jwk *jwks_find(const struct jwks *s, const char *kid, enum jwk_type type);

#endif
