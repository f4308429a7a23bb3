/*
 * answer_cache.c - a TTL layer over the two-layer blob cache of
 * pipeline/models/embed_cache.h (see answer_cache.h).  Blob layout:
 * "<unix seconds when stored>\n<JSON body>".
 */
#include "pipeline/generate/answer_cache.h"

#include "common/hash.h"
#include "common/strbuf.h"
#include "pipeline/models/embed_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct answer_cache {
	struct embed_cache *blobs;
	long ttl_s;
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
	};
	int rc = embed_cache_new(&eo, &c->blobs, err);
	if (rc < 0) {
		free(c);
		return rc;
	}
	c->ttl_s = o->ttl_s;
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

void answer_cache_key(const char *database, const char *schema_hash, const char *fingerprint,
		      const char *request_key, char ret_key[65])
{
	struct strbuf sb;
	strbuf_init(&sb, (size_t)1 << 26);
	/* NUL separators: no field can run into the next. */
	const char *parts[] = {database, schema_hash, fingerprint, request_key};
	for (size_t i = 0; i < 4; i++)
		strbuf_add(&sb, parts[i] ? parts[i] : "", strlen(parts[i] ? parts[i] : "") + 1);
	hash_sha256_hex(sb.buf, sb.len, ret_key);
	strbuf_release(&sb);
}

json_t *answer_cache_get(struct answer_cache *c, const char *key)
{
	if (!c)
		return NULL;
	struct embed_cache_blob blob = {0};
	const char *keys[] = {key};
	if (embed_cache_get_many(c->blobs, keys, 1, &blob, NULL) < 0 || !blob.data)
		return NULL;
	json_t *body = NULL;
	char *nl = memchr(blob.data, '\n', blob.len);
	if (nl) {
		long long stored = strtoll(blob.data, NULL, 10);
		if ((long long)time(NULL) - stored <= c->ttl_s)
			body = json_loadb(nl + 1, blob.len - (size_t)(nl + 1 - (char *)blob.data), 0, NULL);
	}
	free(blob.data);
	return body;
}

void answer_cache_put(struct answer_cache *c, const char *key, json_t *body)
{
	if (!c)
		return;
	char *text = json_dumps(body, JSON_COMPACT);
	if (!text)
		return;
	char head[32];
	int n = snprintf(head, sizeof(head), "%lld\n", (long long)time(NULL));
	size_t len = (size_t)n + strlen(text);
	char *blob = len <= EMBED_CACHE_BLOB_MAX ? malloc(len) : NULL;
	if (blob) {
		memcpy(blob, head, (size_t)n);
		memcpy(blob + n, text, len - (size_t)n);
		const char *keys[] = {key};
		struct embed_cache_blob b = {blob, len};
		embed_cache_put_many(c->blobs, keys, &b, 1, NULL);
	}
	free(blob);
	free(text);
}
