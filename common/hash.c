/*
 * hash.c - SHA-256 and HMAC-SHA256 through OpenSSL.
 */
#include "common/hash.h"

#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

void hash_sha256(const void *data, size_t len, unsigned char ret_digest[32])
{
	unsigned int n = 32;
	EVP_Digest(data, len, ret_digest, &n, EVP_sha256(), NULL);
}

void hash_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len, unsigned char ret_mac[32])
{
	unsigned int n = 32;
	HMAC(EVP_sha256(), key, (int)key_len, data, len, ret_mac, &n);
}

int hash_random_bytes(unsigned char *ret, size_t n)
{
	return n <= INT_MAX && RAND_bytes(ret, (int)n) == 1 ? 0 : -1;
}

void hash_sha256_hex(const void *data, size_t len, char ret_hex[SHA256_HEX_LEN + 1])
{
	unsigned char d[32];
	hash_sha256(data, len, d);
	hash_hex32(d, ret_hex);
}

void hash_hex32(const unsigned char d[32], char ret_hex[SHA256_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 32; i++) {
		ret_hex[2 * i] = digits[d[i] >> 4];
		ret_hex[2 * i + 1] = digits[d[i] & 15];
	}
	ret_hex[SHA256_HEX_LEN] = '\0';
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int hash_hex_decode32(const char *hex, unsigned char ret_digest[32])
{
	unsigned char d[32];
	for (int i = 0; i < 32; i++) {
		int hi = hex_value(hex[2 * i]);
		int lo = hi < 0 ? -1 : hex_value(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		d[i] = (unsigned char)(hi << 4 | lo);
	}
	if (hex[64] != '\0')
		return -1;
	for (int i = 0; i < 32; i++)
		ret_digest[i] = d[i];
	return 0;
}

int hash_digest_equal(const unsigned char a[32], const unsigned char b[32])
{
	return CRYPTO_memcmp(a, b, 32) == 0;
}
