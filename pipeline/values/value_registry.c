/*
 * value_registry.c - see value_registry.h: the value index as a snapshot of
 * common/snapshot_registry.h, built in the background only.
 */
#include "pipeline/values/value_registry.h"
#include "common/snapshot_registry.h"

#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define VALUE_RETRY_MS 30000.0 /* e.g. the pool was busy or the database down */
#define VALUE_PARALLEL_BUILDS 2 /* builds scan databases: a few at a time, whatever their number */

struct value_registry {
	struct value_index_options options;
	atomic_bool cancel;
	sem_t builders; /* VALUE_PARALLEL_BUILDS permits */
	struct snapshot_registry *indexes;
};

/* A build's input. */
struct build_input {
	struct catalog_db *db;
	struct schema *schema; /* reference */
};

static void *index_ref(void *vi)
{
	return value_index_ref(vi);
}

static void index_unref(void *vi)
{
	value_index_unref(vi);
}

static void input_free(void *input)
{
	struct build_input *in = input;
	schema_unref(in->schema);
	free(in);
}

static int build(void *ctx, void *input, void **ret, struct t2s_error *err)
{
	struct value_registry *reg = ctx;
	struct build_input *in = input;
	struct value_index *vi = NULL;
	sem_wait(&reg->builders);
	int rc = atomic_load(&reg->cancel) ? t2s_error_set(err, T2S_ERR_UNAVAILABLE, "shutting down")
					   : value_index_build(in->db, in->schema, &reg->options, &vi, err);
	sem_post(&reg->builders);
	*ret = vi;
	return rc;
}

int value_registry_new(const struct value_index_options *o, struct workers *workers, struct value_registry **ret,
		       struct t2s_error *err)
{
	struct value_registry *reg = calloc(1, sizeof(*reg));
	if (!reg)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	reg->options = *o;
	atomic_init(&reg->cancel, false);
	reg->options.cancel = &reg->cancel;
	struct snapshot_type type = {.ref = index_ref, .unref = index_unref, .build = build, .input_free = input_free,
				     .ctx = reg};
	int rc = snapshot_registry_new(&type, workers, &reg->indexes, err);
	if (rc < 0) {
		free(reg);
		return rc;
	}
	sem_init(&reg->builders, 0, VALUE_PARALLEL_BUILDS);
	*ret = reg;
	return 0;
}

void value_registry_free(struct value_registry *reg)
{
	if (!reg)
		return;
	atomic_store(&reg->cancel, true);
	snapshot_registry_free(reg->indexes); /* waits for the builds */
	sem_destroy(&reg->builders);
	free(reg);
}

/* Start a build for s unless one runs or its index is ready. */
static void start_build(struct value_registry *reg, struct catalog_db *db, struct schema *s)
{
	struct build_input *in = atomic_load(&reg->cancel) ? NULL : malloc(sizeof(*in));
	if (!in)
		return;
	*in = (struct build_input){db, schema_ref(s)};
	snapshot_registry_start(reg->indexes, s->index_name, s->hash, in);
}

void value_registry_prepare(struct value_registry *reg, struct catalog_db *db, struct schema *s)
{
	start_build(reg, db, s);
}

struct value_index *value_registry_get(struct value_registry *reg, struct catalog_db *db, struct schema *s,
				       char *ret_state)
{
	enum snapshot_state st;
	char failure[VALUE_REGISTRY_STATE_MAX];
	struct value_index *vi =
		snapshot_registry_lookup(reg->indexes, s->index_name, s->hash, VALUE_RETRY_MS, &st, failure, sizeof(failure));
	if (st == SNAPSHOT_MISSING)
		start_build(reg, db, s);
	if (ret_state)
		snprintf(ret_state, VALUE_REGISTRY_STATE_MAX, "%s",
			 st == SNAPSHOT_READY ? "ready" : st == SNAPSHOT_FAILED ? failure : "building");
	return vi;
}
