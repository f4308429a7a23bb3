/*
 * answer_cache.c - a TTL layer over the two-layer blob cache of
 * pipeline/models/embed_cache.h (see answer_cache.h).  Blob layout:
 * "<64 hex digits of the MAC>\n<unix seconds when stored>\n<JSON body>",
 * the MAC taken over "<key>\0<unix seconds>\n<JSON body>".
 */
#include "pipeline/generate/answer_cache.h"

#include "common/hash.h"
#include "common/metrics.h"
#include "common/strbuf.h"
#include "pipeline/models/embed_cache.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAC_HEAD (SHA256_HEX_LEN + 1) /* the MAC's hex digits and their newline */
#define STAMP_DIGITS_MAX 12           /* unix seconds up to year 33658: more digits are malformed */

struct answer_cache {
	struct embed_cache *blobs;
	long ttl_s;
	unsigned char secret[32]; /* the MAC key */
	struct metric_family *rejected;
};

static void count_rejected(struct answer_cache *c, const char *reason)
{
	const char *labels[] = {reason, NULL};
	metrics_add(c->rejected, labels, 1);
}

/* The MAC of rest[0..len) stored under key; 0, or -1 when out of memory. */
static int entry_mac(const struct answer_cache *c, const char *key, const char *rest, size_t len,
		     unsigned char ret_mac[32])
{
	size_t klen = strlen(key);
	char *msg = malloc(klen + 1 + len);
	if (!msg)
		return -1;
	memcpy(msg, key, klen + 1); /* the NUL too: no key can run into the time */
	memcpy(msg + klen + 1, rest, len);
	hash_hmac_sha256(c->secret, sizeof(c->secret), msg, klen + 1 + len, ret_mac);
	free(msg);
	return 0;
}

/* The decimal time at the start of s[0..len), ending in '\n', into *ret; its length with the newline, or -1. */
static long parse_stamp(const char *s, size_t len, long long *ret)
{
	long long v = 0;
	size_t i = 0;
	for (; i < len && i <= STAMP_DIGITS_MAX && s[i] >= '0' && s[i] <= '9'; i++)
		v = v * 10 + (s[i] - '0');
	if (i == 0 || i > STAMP_DIGITS_MAX || i >= len || s[i] != '\n')
		return -1;
	*ret = v;
	return (long)i + 1;
}

/* Is body what generate_result_json renders? */
static bool answer_shaped(json_t *body)
{
	return json_is_object(body) &&
	       json_unpack_ex(body, NULL, JSON_VALIDATE_ONLY, "{s:s, s:s, s:s, s:s, s:b, s:o, s:o}", "database",
			      "question", "sql", "dialect", "ok", "validation", "trace") == 0;
}

/* The answer cache's own families: its lookups are not embedding lookups. */
static const struct embed_cache_metrics answer_metrics = {
	.lookups = "text2sqld_answer_cache_lookups_total",
	.lookups_help = "Answer cache lookups by layer and result (an expired entry found is a hit here and a miss "
			"to the caller: see text2sqld_generations_total{outcome=\"cached\"}).",
	.redis_errors = "text2sqld_answer_cache_redis_errors_total",
	.redis_errors_help = "Answer cache Redis failures (connect, I/O, timeout, error reply).",
	.memory_bytes = "text2sqld_answer_cache_memory_bytes",
	.memory_bytes_help = "Bytes (keys and values) held by the in-process answer cache.",
};

int answer_cache_new(const struct answer_cache_options *o, struct answer_cache **ret, struct t2s_error *err)
{
	*ret = NULL;
	if (o->ttl_s <= 0)
		return 0;
	struct answer_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	struct embed_cache_options eo = {
		.redis_url = o->redis_url,
		.redis_timeout_ms = o->redis_timeout_ms,
		.redis_pool_size = o->redis_pool_size,
		.memory_max_bytes = o->memory_max_bytes,
		.key_prefix = "t2s:answer:",
		.retry_after_ms = o->retry_after_ms,
		.redis_ttl_s = o->ttl_s,
		.metrics = &answer_metrics,
	};
	int rc = embed_cache_new(&eo, &c->blobs, err);
	if (rc < 0) {
		free(c);
		return rc;
	}
	c->ttl_s = o->ttl_s;
	if (o->secret && o->secret_len) {
		hash_sha256(o->secret, o->secret_len, c->secret); /* any length in, one MAC key out */
	} else if (hash_random_bytes(c->secret, sizeof(c->secret)) < 0) {
		answer_cache_free(c);
		return t2s_error_set(err, T2S_ERR_INTERNAL, "answer cache: no random secret could be drawn");
	}
	static const char *const labels[] = {"reason", NULL};
	c->rejected = metrics_family("text2sqld_answer_cache_rejected_total",
				     "Answer-cache entries refused and treated as misses, by reason.", METRIC_COUNTER,
				     labels, NULL, 0);
	*ret = c;
	return 0;
}

void answer_cache_free(struct answer_cache *c)
{
	if (!c)
		return;
	embed_cache_free(c->blobs);
	free(c);
}

void answer_cache_key(const char *database, const char *schema_hash, const char *fingerprint, const char *versions,
		      const char *request_key, char ret_key[65])
{
	struct strbuf sb;
	strbuf_init(&sb, (size_t)1 << 26);
	/* NUL separators: no field can run into the next. */
	const char *parts[] = {database, schema_hash, fingerprint, versions, request_key};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		strbuf_add(&sb, parts[i] ? parts[i] : "", strlen(parts[i] ? parts[i] : "") + 1);
	hash_sha256_hex(sb.buf, sb.len, ret_key);
	strbuf_release(&sb);
}

/* The body of blob stored under key when it is genuine, fresh and an answer; else NULL (counted).  *ret_age_s its age. */
static json_t *entry_open(struct answer_cache *c, const char *key, const char *blob, size_t len, long *ret_age_s)
{
	unsigned char want[32], got[32];
	const char *rest = blob + MAC_HEAD;
	size_t rest_len = len - MAC_HEAD;
	long long stored;
	long stamp_len;
	if (len <= MAC_HEAD || blob[SHA256_HEX_LEN] != '\n') {
		count_rejected(c, "malformed");
		return NULL;
	}
	char hex[SHA256_HEX_LEN + 1];
	memcpy(hex, blob, SHA256_HEX_LEN);
	hex[SHA256_HEX_LEN] = '\0';
	if (hash_hex_decode32(hex, got) < 0) {
		count_rejected(c, "malformed");
		return NULL;
	}
	if (entry_mac(c, key, rest, rest_len, want) < 0)
		return NULL;
	if (!hash_digest_equal(want, got)) {
		count_rejected(c, "mac");
		return NULL;
	}
	if ((stamp_len = parse_stamp(rest, rest_len, &stored)) < 0) {
		count_rejected(c, "malformed");
		return NULL;
	}
	long long now = (long long)time(NULL); /* both below 10^12: no overflow in the differences */
	if (stored > now + ANSWER_CACHE_CLOCK_SKEW_S) {
		count_rejected(c, "time");
		return NULL;
	}
	if (now - stored > c->ttl_s)
		return NULL; /* expired: an ordinary miss */
	json_t *body = json_loadb(rest + stamp_len, rest_len - (size_t)stamp_len, 0, NULL);
	if (!answer_shaped(body)) {
		count_rejected(c, "shape");
		json_decref(body);
		return NULL;
	}
	*ret_age_s = now > stored ? (long)(now - stored) : 0;
	return body;
}

json_t *answer_cache_get(struct answer_cache *c, const char *key, long *ret_age_s)
{
	long age_s = 0;
	if (!c)
		return NULL;
	struct embed_cache_blob blob = {0};
	const char *keys[] = {key};
	if (embed_cache_get_many(c->blobs, keys, 1, &blob, NULL) < 0 || !blob.data)
		return NULL;
	json_t *body = entry_open(c, key, blob.data, blob.len, &age_s);
	free(blob.data);
	if (body && ret_age_s)
		*ret_age_s = age_s;
	return body;
}

void answer_cache_put(struct answer_cache *c, const char *key, json_t *body)
{
	if (!c)
		return;
	char *text = json_dumps(body, JSON_COMPACT);
	if (!text)
		return;
	char stamp[32];
	int n = snprintf(stamp, sizeof(stamp), "%lld\n", (long long)time(NULL));
	size_t text_len = strlen(text), len = MAC_HEAD + (size_t)n + text_len;
	char *blob = len <= EMBED_CACHE_BLOB_MAX ? malloc(len) : NULL;
	unsigned char mac[32];
	if (blob) {
		char *rest = blob + MAC_HEAD;
		memcpy(rest, stamp, (size_t)n);
		memcpy(rest + n, text, text_len);
		char hex[SHA256_HEX_LEN + 1];
		if (entry_mac(c, key, rest, len - MAC_HEAD, mac) == 0) {
			hash_hex32(mac, hex);
			memcpy(blob, hex, SHA256_HEX_LEN);
			blob[SHA256_HEX_LEN] = '\n';
			const char *keys[] = {key};
			struct embed_cache_blob b = {blob, len};
			if (embed_cache_put_many(c->blobs, keys, &b, 1, NULL) < 0) {
				/* Storing is best effort: the answer stands, the next request computes it again. */
			}
		}
	}
	free(blob);
	free(text);
}
