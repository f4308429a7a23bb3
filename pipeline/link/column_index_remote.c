/*
 * column_index_remote.c - the remote vectors of a column index: the column
 * documents embedded by models.embed in batches, through the embedding cache.
 */
#include "pipeline/link/column_index_internal.h"

#include "common/hash.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REMOTE_BATCH 64        /* documents per /v1/embeddings request */

/* Cache key of a remote vector: embedder identity + hash of the document. */
static char *remote_key(const char *embedder_id, const char *doc)
{
	char hex[SHA256_HEX_LEN + 1];
	hash_sha256_hex(doc, strlen(doc), hex);
	size_t n = strlen(embedder_id) + 2 + SHA256_HEX_LEN;
	char *k = malloc(n);
	if (k)
		snprintf(k, n, "%s:%s", embedder_id, hex);
	return k;
}

static void normalise(float *v, size_t dim)
{
	double sum = 0;
	for (size_t i = 0; i < dim; i++)
		sum += (double)v[i] * v[i];
	if (sum <= 0)
		return;
	float inv = (float)(1.0 / sqrt(sum));
	for (size_t i = 0; i < dim; i++)
		v[i] *= inv;
}

/* The most common vector size among cached blobs (in floats), 0 when none is usable. */
static size_t cached_dimension(const struct embed_cache_blob *blobs, size_t n)
{
	size_t best = 0, best_count = 0;
	for (size_t i = 0; i < n; i++) {
		if (!blobs[i].data || !blobs[i].len || blobs[i].len % sizeof(float))
			continue;
		size_t d = blobs[i].len / sizeof(float), count = 0;
		if (d == best)
			continue;
		for (size_t j = i; j < n; j++)
			count += blobs[j].data && blobs[j].len == blobs[i].len;
		if (count > best_count) {
			best = d;
			best_count = count;
		}
	}
	return best;
}

/*
 * Remote vectors of the column documents, from the cache where possible.
 * One pass embeds the documents listed in missing[] in batches of
 * REMOTE_BATCH; the first batch fixes the dimension when nothing usable was
 * cached.  When a batch answers another dimension than the cached vectors
 * (the server's model changed), a second pass re-embeds every document; a
 * change of dimension within a pass that embeds everything is an error.
 */
struct remote_build {
	const struct column_index_options *o;
	char **docs;                   /* n column documents (borrowed) */
	char **keys;                   /* n cache keys (owned) */
	struct embed_cache_blob *blobs; /* n vectors, cached or embedded (owned) */
	size_t n;
	size_t *missing;               /* the documents still to embed (owned) */
	size_t n_missing;
	size_t dim;                    /* 0 until known */
	size_t other_dim;              /* the dimension a batch answered instead of dim */
	struct embed_cache_stats stats;
};

#define REMOTE_DIMENSION_CHANGED 1 /* a pass's result: a batch answered another dimension than dim */

static int remote_build_init(struct remote_build *rb, struct column_index *idx, char **docs,
			     const struct column_index_options *o)
{
	size_t n = idx->n_columns;
	*rb = (struct remote_build){.o = o, .docs = docs, .n = n};
	rb->keys = calloc(n ? n : 1, sizeof(*rb->keys));
	rb->blobs = calloc(n ? n : 1, sizeof(*rb->blobs));
	rb->missing = calloc(n ? n : 1, sizeof(*rb->missing));
	if (!rb->keys || !rb->blobs || !rb->missing)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		if (!(rb->keys[i] = remote_key(idx->remote_id, docs[i])))
			return -T2S_ERR_NOMEM;
	return 0;
}

static void remote_build_release(struct remote_build *rb)
{
	for (size_t i = 0; i < rb->n; i++) {
		if (rb->keys)
			free(rb->keys[i]);
		if (rb->blobs)
			free(rb->blobs[i].data);
	}
	free(rb->keys);
	free(rb->blobs);
	free(rb->missing);
}

/* Cached vectors of the most common dimension are kept; every other document is missing. */
static int remote_from_cache(struct column_index *idx, struct remote_build *rb)
{
	if (rb->o->cache) {
		int rc = embed_cache_get_many(rb->o->cache, (const char *const *)rb->keys, rb->n, rb->blobs, &rb->stats);
		if (rc < 0)
			return rc;
	}
	rb->dim = cached_dimension(rb->blobs, rb->n);
	rb->n_missing = 0;
	for (size_t i = 0; i < rb->n; i++)
		if (!rb->blobs[i].data || !rb->dim || rb->blobs[i].len != rb->dim * sizeof(float))
			rb->missing[rb->n_missing++] = i;
	idx->remote_cache_hits = rb->n - rb->n_missing;
	idx->remote_cache_misses = rb->n_missing;
	return 0;
}

/* Every document is missing again, and the dimension unknown: the cached vectors are of no use. */
static void remote_forget_cache(struct column_index *idx, struct remote_build *rb)
{
	for (size_t i = 0; i < rb->n; i++)
		rb->missing[i] = i;
	rb->n_missing = rb->n;
	rb->dim = 0;
	idx->remote_cache_hits = 0;
	idx->remote_cache_misses = rb->n;
}

/* Copy the m vectors of vec (rb->dim each) into the blobs of missing[first..first+m) and cache them. */
static int remote_store_batch(struct remote_build *rb, size_t first, size_t m, const float *vec)
{
	struct embed_cache_blob put[REMOTE_BATCH];
	const char *put_keys[REMOTE_BATCH];
	for (size_t k = 0; k < m; k++) {
		struct embed_cache_blob *blob = &rb->blobs[rb->missing[first + k]];
		free(blob->data);
		blob->len = rb->dim * sizeof(float);
		blob->data = malloc(blob->len);
		if (!blob->data)
			return -T2S_ERR_NOMEM;
		memcpy(blob->data, vec + k * rb->dim, blob->len);
		put[k] = *blob;
		put_keys[k] = rb->keys[rb->missing[first + k]];
	}
	if (rb->o->cache && embed_cache_put_many(rb->o->cache, put_keys, put, m, &rb->stats) < 0) {
		/* Storing is best effort: the vectors stand, a later build asks the server again. */
	}
	return 0;
}

/*
 * Embed the m documents of missing[first..first+m) in one call.  0 when
 * stored, REMOTE_DIMENSION_CHANGED (rb->other_dim set, nothing stored) when
 * the answer's dimension differs from a known rb->dim, else the call's error.
 */
static int remote_embed_batch(struct column_index *idx, struct remote_build *rb, size_t first, size_t m,
			      struct t2s_error *err)
{
	const char *batch[REMOTE_BATCH];
	for (size_t k = 0; k < m; k++)
		batch[k] = rb->docs[rb->missing[first + k]];
	float *vec = NULL;
	size_t got_dim = 0;
	struct model_call_stats cs = {0};
	int rc = model_embed(rb->o->embed_model, batch, m, &vec, &got_dim, &cs, err);
	idx->remote_calls++;
	idx->remote_http_status = cs.http_status;
	if (rc < 0)
		return rc;
	if (rb->dim && got_dim != rb->dim) {
		rb->other_dim = got_dim;
		rc = REMOTE_DIMENSION_CHANGED;
	} else {
		rb->dim = got_dim;
		rc = remote_store_batch(rb, first, m, vec);
	}
	free(vec);
	return rc;
}

/* One pass over the missing documents, batch by batch: 0, REMOTE_DIMENSION_CHANGED or an error. */
static int remote_embed_missing(struct column_index *idx, struct remote_build *rb, struct t2s_error *err)
{
	int rc = 0;
	for (size_t first = 0; rc == 0 && first < rb->n_missing; first += REMOTE_BATCH) {
		size_t left = rb->n_missing - first;
		rc = remote_embed_batch(idx, rb, first, left < REMOTE_BATCH ? left : REMOTE_BATCH, err);
	}
	return rc;
}

/* The missing documents embedded; all of them again once if the server's dimension is not the cached one. */
static int remote_embed(struct column_index *idx, struct remote_build *rb, struct t2s_error *err)
{
	bool embeds_everything = rb->n_missing == rb->n;
	int rc = remote_embed_missing(idx, rb, err);
	if (rc == REMOTE_DIMENSION_CHANGED && !embeds_everything) {
		remote_forget_cache(idx, rb);
		rc = remote_embed_missing(idx, rb, err);
	}
	if (rc == REMOTE_DIMENSION_CHANGED)
		rc = t2s_error_set(err, T2S_ERR_UPSTREAM, "embedding dimension changed from %zu to %zu within one build",
				   rb->dim, rb->other_dim);
	return rc;
}

/* idx->remote_vectors: every document's vector, normalised. */
static int remote_publish(struct column_index *idx, const struct remote_build *rb)
{
	if (!rb->n || !rb->dim)
		return 0;
	idx->remote_dim = rb->dim;
	idx->remote_vectors = malloc(rb->n * rb->dim * sizeof(float));
	if (!idx->remote_vectors)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < rb->n; i++) {
		memcpy(idx->remote_vectors + i * rb->dim, rb->blobs[i].data, rb->dim * sizeof(float));
		normalise(idx->remote_vectors + i * rb->dim, rb->dim);
	}
	return 0;
}

/* Fill idx->remote_vectors for docs, from the cache where possible. */
int column_index_remote_vectors(struct column_index *idx, char **docs, const struct column_index_options *o,
				struct t2s_error *err)
{
	const struct model_endpoint *ep = o->embed_model;
	snprintf(idx->remote_id, sizeof(idx->remote_id), "%s|%s", ep->base_url, ep->model);
	struct remote_build rb;
	int rc = remote_build_init(&rb, idx, docs, o);
	if (rc == 0)
		rc = remote_from_cache(idx, &rb);
	if (rc == 0)
		rc = remote_embed(idx, &rb, err);
	if (rc == 0)
		rc = remote_publish(idx, &rb);
	remote_build_release(&rb);
	if (rc == -T2S_ERR_NOMEM)
		t2s_error_set(err, T2S_ERR_NOMEM, "out of memory embedding columns");
	return rc;
}
