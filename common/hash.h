/*
 * hash.h - SHA-256 helpers (OpenSSL libcrypto) used for schema hashes,
 * cache keys and API-key checks.
 */
#ifndef T2S_HASH_H
#define T2S_HASH_H

#include <stddef.h>

#define SHA256_HEX_LEN 64

/* Lower-case hex SHA-256 of data into ret_hex (SHA256_HEX_LEN + 1 bytes). */
void hash_sha256_hex(const void *data, size_t len, char ret_hex[SHA256_HEX_LEN + 1]);
/* Raw SHA-256 of data into ret_digest (32 bytes). */
void hash_sha256(const void *data, size_t len, unsigned char ret_digest[32]);
/* Parse 64 hex digits into 32 bytes; 0 on success, -1 when malformed. */
int hash_hex_decode32(const char *hex, unsigned char ret_digest[32]);
/* Constant-time comparison of two 32-byte digests; 1 when equal. */
int hash_digest_equal(const unsigned char a[32], const unsigned char b[32]);

#endif
