/*
 * column_index_registry.c - see column_index_registry.h.
 */
#include "pipeline/link/column_index_registry.h"
#include "common/clock.h"
#include "common/memory.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct registry_slot {
	char *database;
	struct column_index *index;   /* guarded by the registry lock */
	double remote_retry_at_ms;    /* guarded by the registry lock: when a lexical-only index of a failed
					 embedder may be rebuilt (see column_index_registry.h) */
	pthread_mutex_t build_lock; /* one build at a time per database */
};

struct prepare_job {
	struct prepare_job *next;
	struct column_index_registry *reg;
	struct schema *schema; /* reference */
	pthread_t thread;
};

struct column_index_registry {
	struct column_index_options options;
	pthread_mutex_t lock;
	struct registry_slot **slots;
	size_t n_slots;
	struct prepare_job *jobs; /* background builds, joined at free */
};

int column_index_registry_new(const struct column_index_options *o, struct column_index_registry **ret, struct t2s_error *err)
{
	struct column_index_registry *reg = calloc(1, sizeof(*reg));
	if (!reg)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	reg->options = *o;
	pthread_mutex_init(&reg->lock, NULL);
	*ret = reg;
	return 0;
}

void column_index_registry_free(struct column_index_registry *reg)
{
	if (!reg)
		return;
	while (reg->jobs) {
		struct prepare_job *job = reg->jobs;
		reg->jobs = job->next;
		pthread_join(job->thread, NULL);
		schema_unref(job->schema);
		free(job);
	}
	for (size_t i = 0; i < reg->n_slots; i++) {
		column_index_unref(reg->slots[i]->index);
		pthread_mutex_destroy(&reg->slots[i]->build_lock);
		free(reg->slots[i]->database);
		free(reg->slots[i]);
	}
	free(reg->slots);
	pthread_mutex_destroy(&reg->lock);
	free(reg);
}

/* The slot of database, created when missing; call with reg->lock held. */
static struct registry_slot *slot_for(struct column_index_registry *reg, const char *database)
{
	for (size_t i = 0; i < reg->n_slots; i++)
		if (strcmp(reg->slots[i]->database, database) == 0)
			return reg->slots[i];
	struct registry_slot **v = realloc(reg->slots, (reg->n_slots + 1) * sizeof(*v));
	if (!v)
		return NULL;
	reg->slots = v;
	struct registry_slot *slot = calloc(1, sizeof(*slot));
	if (!slot || !(slot->database = strdup(database))) {
		free(slot);
		return NULL;
	}
	pthread_mutex_init(&slot->build_lock, NULL);
	reg->slots[reg->n_slots++] = slot;
	return slot;
}

/* The slot's index when it matches hash, as a new reference; NULL otherwise. */
static struct column_index *current(struct column_index_registry *reg, struct registry_slot *slot, const char *hash)
{
	pthread_mutex_lock(&reg->lock);
	struct column_index *idx = slot->index && strcmp(slot->index->schema->hash, hash) == 0
					 ? column_index_ref(slot->index)
					 : NULL;
	pthread_mutex_unlock(&reg->lock);
	return idx;
}

/* Build the index of s and publish it in slot; call with slot->build_lock held.  *ret: a new reference. */
static int build_and_publish(struct column_index_registry *reg, struct registry_slot *slot, struct schema *s,
			     struct column_index **ret, struct t2s_error *err)
{
	struct column_index *idx = NULL;
	int rc = column_index_build(s, &reg->options, &idx, err);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&reg->lock);
	struct column_index *old = slot->index;
	slot->index = column_index_ref(idx);
	slot->remote_retry_at_ms = clock_now_ms() + (double)reg->options.remote_retry_ms;
	pthread_mutex_unlock(&reg->lock);
	column_index_unref(old);
	*ret = idx;
	return 0;
}

/*
 * idx (a reference) is lexical-only because its embedder failed: once the
 * retry time has come, one caller rebuilds it (trying the embedder again)
 * while the others keep using idx.  Returns the index to use (idx, or the
 * rebuilt one with idx released) and sets *built when it rebuilt.
 */
static struct column_index *retry_remote(struct column_index_registry *reg, struct registry_slot *slot,
					 struct schema *s, struct column_index *idx, bool *built)
{
	pthread_mutex_lock(&reg->lock);
	bool due = slot->index == idx && clock_now_ms() >= slot->remote_retry_at_ms;
	pthread_mutex_unlock(&reg->lock);
	if (!due || pthread_mutex_trylock(&slot->build_lock) != 0)
		return idx;
	struct column_index *fresh = NULL;
	struct t2s_error ignored; /* a failed rebuild keeps the lexical index */
	if (build_and_publish(reg, slot, s, &fresh, &ignored) == 0) {
		column_index_unref(idx);
		idx = fresh;
		*built = true;
	}
	pthread_mutex_unlock(&slot->build_lock);
	return idx;
}

int column_index_registry_get(struct column_index_registry *reg, struct schema *s, struct column_index **ret, bool *ret_built,
		      struct t2s_error *err)
{
	pthread_mutex_lock(&reg->lock);
	struct registry_slot *slot = slot_for(reg, s->database);
	pthread_mutex_unlock(&reg->lock);
	if (!slot)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	if (ret_built)
		*ret_built = false;
	struct column_index *idx = current(reg, slot, s->hash);
	if (idx) {
		bool built = false;
		if (idx->remote_failure)
			idx = retry_remote(reg, slot, s, idx, &built);
		if (ret_built)
			*ret_built = built;
		*ret = idx;
		return 0;
	}
	pthread_mutex_lock(&slot->build_lock);
	idx = current(reg, slot, s->hash); /* another request may have built it meanwhile */
	int rc = 0;
	if (!idx) {
		rc = build_and_publish(reg, slot, s, &idx, err);
		if (rc == 0 && ret_built)
			*ret_built = true;
	}
	pthread_mutex_unlock(&slot->build_lock);
	if (rc == 0)
		*ret = idx;
	return rc;
}

static void *prepare_thread(void *arg)
{
	struct prepare_job *job = arg;
	struct column_index *idx = NULL;
	struct t2s_error ignored; /* a failed build is retried by the first request */
	if (column_index_registry_get(job->reg, job->schema, &idx, NULL, &ignored) == 0)
		column_index_unref(idx);
	memory_give_back(); /* the build's temporary documents were freed in this thread's arena: give them back */
	return NULL;
}

void column_index_registry_prepare(struct column_index_registry *reg, struct schema *s)
{
	struct prepare_job *job = calloc(1, sizeof(*job));
	if (!job)
		return;
	job->reg = reg;
	job->schema = schema_ref(s);
	pthread_mutex_lock(&reg->lock);
	if (pthread_create(&job->thread, NULL, prepare_thread, job) == 0) {
		job->next = reg->jobs;
		reg->jobs = job;
		job = NULL;
	}
	pthread_mutex_unlock(&reg->lock);
	if (job) {
		schema_unref(job->schema);
		free(job);
	}
}
