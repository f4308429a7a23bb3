/*
 * jwks.c - JWKS file to OpenSSL public keys (see jwks.h), with OpenSSL 3's
 * EVP_PKEY_fromdata.
 */
#include "server/jwks.h"

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <stdlib.h>
#include <string.h>

/* Value of a base64url character, or -1. */
static int b64url_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '-' ? 62 : c == '_' ? 63 : -1;
}

int jwks_b64url_decode(const char *in, size_t len, unsigned char **ret, size_t *ret_len)
{
	if (len % 4 == 1)
		return -1;
	unsigned char *out = malloc(len * 3 / 4 + 3);
	if (!out)
		return -1;
	size_t n = 0;
	unsigned acc = 0;
	int bits = 0;
	for (size_t i = 0; i < len; i++) {
		int v = b64url_value((unsigned char)in[i]);
		if (v < 0) {
			free(out);
			return -1;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0) { /* leftover bits must be zero: one spelling per value */
		free(out);
		return -1;
	}
	*ret = out;
	*ret_len = n;
	return 0;
}

/* The member key of a JWK, base64url-decoded (malloc'd), or NULL. */
static unsigned char *member_bytes(json_t *jwk, const char *key, size_t *ret_len)
{
	const char *s = json_string_value(json_object_get(jwk, key));
	unsigned char *b = NULL;
	if (!s || jwks_b64url_decode(s, strlen(s), &b, ret_len) < 0)
		return NULL;
	return b;
}

/* A public key from params (built into bld) of OpenSSL's type name; NULL when invalid. */
static EVP_PKEY *key_from(const char *type, OSSL_PARAM_BLD *bld)
{
	EVP_PKEY *key = NULL;
	OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
	EVP_PKEY_CTX *ctx = params ? EVP_PKEY_CTX_new_from_name(NULL, type, NULL) : NULL;
	if (!ctx || EVP_PKEY_fromdata_init(ctx) <= 0 || EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) <= 0)
		key = NULL;
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	if (!key)
		return NULL;
	EVP_PKEY_CTX *check = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
	bool ok = check && EVP_PKEY_public_check(check) == 1; /* an EC point on the curve, a sane RSA modulus */
	EVP_PKEY_CTX_free(check);
	if (!ok) {
		EVP_PKEY_free(key);
		return NULL;
	}
	return key;
}

static EVP_PKEY *rsa_key(json_t *jwk)
{
	size_t nl = 0, el = 0;
	unsigned char *nb = member_bytes(jwk, "n", &nl), *eb = member_bytes(jwk, "e", &el);
	BIGNUM *n = nb ? BN_bin2bn(nb, (int)nl, NULL) : NULL, *e = eb ? BN_bin2bn(eb, (int)el, NULL) : NULL;
	free(nb);
	free(eb);
	EVP_PKEY *key = NULL;
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	if (n && e && bld && BN_num_bits(n) >= 2048 && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) &&
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e))
		key = key_from("RSA", bld);
	OSSL_PARAM_BLD_free(bld);
	BN_free(n);
	BN_free(e);
	return key;
}

static EVP_PKEY *ec_key(json_t *jwk)
{
	const char *crv = json_string_value(json_object_get(jwk, "crv"));
	if (!crv || strcmp(crv, "P-256") != 0)
		return NULL;
	size_t xl = 0, yl = 0;
	unsigned char *x = member_bytes(jwk, "x", &xl), *y = member_bytes(jwk, "y", &yl);
	EVP_PKEY *key = NULL;
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	if (x && y && xl == 32 && yl == 32 && bld) {
		unsigned char point[65] = {0x04}; /* uncompressed: 04 || x || y */
		memcpy(point + 1, x, 32);
		memcpy(point + 33, y, 32);
		if (OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) &&
		    OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof(point)))
			key = key_from("EC", bld);
	}
	OSSL_PARAM_BLD_free(bld);
	free(x);
	free(y);
	return key;
}

/* One JWK into *k; false when it is skipped (another type, use or alg, or not a valid key). */
static bool read_jwk(json_t *jwk, struct jwk *k)
{
	const char *kty = json_string_value(json_object_get(jwk, "kty"));
	const char *use = json_string_value(json_object_get(jwk, "use"));
	const char *alg = json_string_value(json_object_get(jwk, "alg"));
	const char *kid = json_string_value(json_object_get(jwk, "kid"));
	if (!kty || (use && strcmp(use, "sig") != 0))
		return false;
	if (strcmp(kty, "RSA") == 0 && (!alg || strcmp(alg, "RS256") == 0)) {
		k->type = JWK_RSA;
		k->key = rsa_key(jwk);
	} else if (strcmp(kty, "EC") == 0 && (!alg || strcmp(alg, "ES256") == 0)) {
		k->type = JWK_EC_P256;
		k->key = ec_key(jwk);
	} else {
		return false;
	}
	if (!k->key)
		return false;
	k->kid = kid ? strdup(kid) : NULL;
	if (kid && !k->kid) {
		EVP_PKEY_free(k->key);
		return false;
	}
	return true;
}

int jwks_load(const char *path, struct jwks **ret, struct t2s_error *err)
{
	json_error_t jerr;
	json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return t2s_error_set(err, T2S_ERR_INVALID, "auth.jwt.jwks_file: cannot read %s: %s", path, jerr.text);
	json_t *keys = json_object_get(doc, "keys");
	struct jwks *s = calloc(1, sizeof(*s));
	if (!json_is_array(keys) || !s || !(s->keys = calloc(json_array_size(keys) + 1, sizeof(*s->keys)))) {
		json_decref(doc);
		free(s);
		return t2s_error_set(err, json_is_array(keys) ? T2S_ERR_NOMEM : T2S_ERR_INVALID,
				     "auth.jwt.jwks_file: %s holds no \"keys\" array", path);
	}
	atomic_init(&s->refs, 1);
	size_t i;
	json_t *jwk;
	json_array_foreach(keys, i, jwk)
		if (json_is_object(jwk) && read_jwk(jwk, &s->keys[s->n]))
			s->n++;
	json_decref(doc);
	if (s->n == 0) {
		jwks_unref(s);
		return t2s_error_set(err, T2S_ERR_INVALID, "auth.jwt.jwks_file: %s holds no usable key (RSA of at least "
				     "2048 bits for RS256, EC P-256 for ES256, \"use\": \"sig\")", path);
	}
	*ret = s;
	return 0;
}

struct jwks *jwks_ref(struct jwks *s)
{
	if (s)
		atomic_fetch_add(&s->refs, 1);
	return s;
}

void jwks_unref(struct jwks *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	for (size_t i = 0; i < s->n; i++) {
		EVP_PKEY_free(s->keys[i].key);
		free(s->keys[i].kid);
	}
	free(s->keys);
	free(s);
}

const struct jwk *jwks_find(const struct jwks *s, const char *kid, enum jwk_type type)
{
	const struct jwk *found = NULL;
	size_t n = 0;
	for (size_t i = 0; s && i < s->n; i++) {
		const struct jwk *k = &s->keys[i];
		if (k->type != type)
			continue;
		if (kid ? k->kid && strcmp(k->kid, kid) == 0 : true) {
			found = k;
			n++;
		}
	}
	return n == 1 ? found : NULL;
}
