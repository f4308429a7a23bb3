/*
 * hash.h - the service's hashes: SHA-256 (OpenSSL libcrypto) for schema
 * hashes, cache keys and API-key checks, HMAC-SHA256 for cache entries, and the one FNV-1a for in-memory
 * hash tables and hashed features (lexical embedder, embedding cache, word
 * keys, value index).
 */
#ifndef T2S_HASH_H
#define T2S_HASH_H

#include "common/contract.h"

#include <stddef.h>
#include <stdint.h>

#define SHA256_HEX_LEN 64

/* Lower-case hex SHA-256 of data into ret_hex (SHA256_HEX_LEN + 1 bytes). */
void hash_sha256_hex(const void *data, size_t len, char ret_hex[SHA256_HEX_LEN + 1]);
/* Raw SHA-256 of data into ret_digest (32 bytes). */
void hash_sha256(const void *data, size_t len, unsigned char ret_digest[32]);
/* HMAC-SHA256 of data under key into ret_mac (32 bytes). */
void hash_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len, unsigned char ret_mac[32]);
/* Fill ret with n bytes from the system's CSPRNG; 0, or -1 when it cannot. */
T2S_MUST_CHECK
int hash_random_bytes(unsigned char *ret, size_t n);
/* Lower-case hex of 32 bytes into ret_hex (SHA256_HEX_LEN + 1 bytes). */
void hash_hex32(const unsigned char d[32], char ret_hex[SHA256_HEX_LEN + 1]);
/* Parse 64 hex digits into 32 bytes; 0 on success, -1 when malformed. */
T2S_MUST_CHECK
int hash_hex_decode32(const char *hex, unsigned char ret_digest[32]);
/* Constant-time comparison of two 32-byte digests; 1 when equal. */
int hash_digest_equal(const unsigned char a[32], const unsigned char b[32]);

/* The 64-bit FNV-1a offset basis: the seed of a fresh hash. */
#define HASH_FNV1A64_SEED 14695981039346656037ULL

/*
 * 64-bit FNV-1a of data[0..len), continuing from h (HASH_FNV1A64_SEED for a
 * fresh hash; a previous result to hash several pieces as one).
 */
static inline uint64_t hash_fnv1a64(uint64_t h, const void *data, size_t len)
{
	const unsigned char *b = data;
	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	return h;
}

#endif
