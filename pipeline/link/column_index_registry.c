/*
 * column_index_registry.c - see column_index_registry.h: the column index
 * as a snapshot of common/snapshot_registry.h, built by the request that
 * needs it or by a background job that asks for it.
 */
#include "pipeline/link/column_index_registry.h"
#include "common/memory.h"
#include "common/snapshot_registry.h"

#include <stdlib.h>

struct column_index_registry {
	struct column_index_options options;
	struct snapshot_registry *indexes; /* a build's input: the schema (borrowed) */
};

/* A background build (column_index_registry_prepare). */
struct prepare_job {
	struct column_index_registry *reg;
	struct schema *schema; /* reference */
};

static void *index_ref(void *idx)
{
	return column_index_ref(idx);
}

static void index_unref(void *idx)
{
	column_index_unref(idx);
}

static int build(void *ctx, void *input, void **ret, struct t2s_error *err)
{
	const struct column_index_registry *reg = ctx;
	struct column_index *idx = NULL;
	int rc = column_index_build(input, &reg->options, &idx, err);
	*ret = idx;
	return rc;
}

int column_index_registry_new(const struct column_index_options *o, struct workers *workers,
			      struct column_index_registry **ret, struct t2s_error *err)
{
	struct column_index_registry *reg = calloc(1, sizeof(*reg));
	if (!reg)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	reg->options = *o;
	struct snapshot_type type = {.ref = index_ref, .unref = index_unref, .build = build, .ctx = reg};
	int rc = snapshot_registry_new(&type, workers, &reg->indexes, err);
	if (rc < 0) {
		free(reg);
		return rc;
	}
	*ret = reg;
	return 0;
}

void column_index_registry_free(struct column_index_registry *reg)
{
	if (!reg)
		return;
	snapshot_registry_free(reg->indexes); /* waits for the background builds */
	free(reg);
}

int column_index_registry_get(struct column_index_registry *reg, struct schema *s, struct column_index **ret, bool *ret_built,
		      struct t2s_error *err)
{
	void *idx = NULL;
	bool built = false;
	int rc = snapshot_registry_build(reg->indexes, s->index_name, s->hash, s, &idx, &built, err);
	if (rc < 0)
		return rc;
	/* lexical-only because its embedder failed: one caller rebuilds it once the retry time has come */
	if (!built && ((struct column_index *)idx)->remote_failure)
		idx = snapshot_registry_renew(reg->indexes, s->index_name, idx, (double)reg->options.remote_retry_ms, s,
					      &built);
	if (ret_built)
		*ret_built = built;
	*ret = idx;
	return 0;
}

static void prepare_run(void *arg)
{
	struct prepare_job *job = arg;
	struct column_index *idx = NULL;
	struct t2s_error ignored; /* a failed build is retried by the first request */
	if (column_index_registry_get(job->reg, job->schema, &idx, NULL, &ignored) == 0)
		column_index_unref(idx);
	schema_unref(job->schema);
	free(job);
	memory_give_back(); /* the build's temporary documents were freed in this thread's arena: give them back */
}

void column_index_registry_prepare(struct column_index_registry *reg, struct schema *s)
{
	struct prepare_job *job = malloc(sizeof(*job));
	if (!job)
		return;
	*job = (struct prepare_job){reg, schema_ref(s)};
	snapshot_registry_submit(reg->indexes, prepare_run, job);
}
