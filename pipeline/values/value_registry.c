/*
 * value_registry.c - see value_registry.h.
 */
#include "pipeline/values/value_registry.h"
#include "common/memory.h"

#include "common/clock.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VALUE_RETRY_MS 30000.0 /* e.g. the pool was busy or the database down */
#define VALUE_PARALLEL_BUILDS 2 /* builds scan databases: a few at a time, whatever their number */

struct value_slot {
	char *database;
	struct value_index *index; /* ready index (any hash), guarded by reg->lock */
	char building_hash[SHA256_HEX_LEN + 1]; /* "" when no build runs */
	char failed_hash[SHA256_HEX_LEN + 1];
	char failure[VALUE_REGISTRY_STATE_MAX]; /* guarded by reg->lock; rewritten by each failed build */
	double failed_at_ms; /* a failed build is retried after VALUE_RETRY_MS */
	pthread_t thread;
	bool has_thread;
};

struct value_registry {
	struct value_index_options options;
	atomic_bool cancel;
	sem_t builders; /* VALUE_PARALLEL_BUILDS permits */
	pthread_mutex_t lock;
	struct value_slot **slots;
	size_t n_slots;
};

struct build_job {
	struct value_registry *reg;
	struct value_slot *slot;
	struct catalog_db *db;
	struct schema *schema; /* reference */
};

int value_registry_new(const struct value_index_options *o, struct value_registry **ret, struct t2s_error *err)
{
	struct value_registry *reg = calloc(1, sizeof(*reg));
	if (!reg)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	reg->options = *o;
	atomic_init(&reg->cancel, false);
	reg->options.cancel = &reg->cancel;
	sem_init(&reg->builders, 0, VALUE_PARALLEL_BUILDS);
	pthread_mutex_init(&reg->lock, NULL);
	*ret = reg;
	return 0;
}

void value_registry_free(struct value_registry *reg)
{
	if (!reg)
		return;
	atomic_store(&reg->cancel, true);
	for (size_t i = 0; i < reg->n_slots; i++) {
		pthread_mutex_lock(&reg->lock);
		bool join = reg->slots[i]->has_thread;
		reg->slots[i]->has_thread = false;
		pthread_mutex_unlock(&reg->lock);
		if (join)
			pthread_join(reg->slots[i]->thread, NULL);
	}
	for (size_t i = 0; i < reg->n_slots; i++) {
		value_index_unref(reg->slots[i]->index);
		free(reg->slots[i]->database);
		free(reg->slots[i]);
	}
	free(reg->slots);
	pthread_mutex_destroy(&reg->lock);
	sem_destroy(&reg->builders);
	free(reg);
}

/* Call with reg->lock held. */
static struct value_slot *slot_for(struct value_registry *reg, const char *database)
{
	for (size_t i = 0; i < reg->n_slots; i++)
		if (strcmp(reg->slots[i]->database, database) == 0)
			return reg->slots[i];
	struct value_slot **v = realloc(reg->slots, (reg->n_slots + 1) * sizeof(*v));
	if (!v)
		return NULL;
	reg->slots = v;
	struct value_slot *slot = calloc(1, sizeof(*slot));
	if (!slot || !(slot->database = strdup(database))) {
		free(slot);
		return NULL;
	}
	reg->slots[reg->n_slots++] = slot;
	return slot;
}

static void *build_thread(void *arg)
{
	struct build_job *job = arg;
	struct value_registry *reg = job->reg;
	struct value_index *vi = NULL;
	struct t2s_error err = {0};
	sem_wait(&reg->builders);
	int rc = atomic_load(&reg->cancel) ? t2s_error_set(&err, T2S_ERR_UNAVAILABLE, "shutting down")
					   : value_index_build(job->db, job->schema, &reg->options, &vi, &err);
	sem_post(&reg->builders);
	pthread_mutex_lock(&reg->lock);
	struct value_slot *slot = job->slot;
	struct value_index *old = NULL;
	if (rc == 0) {
		old = slot->index;
		slot->index = vi;
		slot->failed_hash[0] = '\0';
	} else {
		snprintf(slot->failed_hash, sizeof(slot->failed_hash), "%s", job->schema->hash);
		snprintf(slot->failure, sizeof(slot->failure), "failed: %s", err.message);
		slot->failed_at_ms = clock_now_ms();
	}
	slot->building_hash[0] = '\0';
	pthread_mutex_unlock(&reg->lock);
	value_index_unref(old);
	schema_unref(job->schema);
	free(job);
	memory_give_back(); /* scan buffers were freed in this thread's arena: give them back */
	return NULL;
}

/* Start a build for s; call with reg->lock held.  A previous finished thread is joined first. */
static void start_build(struct value_registry *reg, struct value_slot *slot, struct catalog_db *db, struct schema *s)
{
	if (atomic_load(&reg->cancel) || slot->building_hash[0])
		return;
	if (slot->has_thread) {
		pthread_join(slot->thread, NULL); /* finished: building_hash is "" */
		slot->has_thread = false;
	}
	struct build_job *job = calloc(1, sizeof(*job));
	if (!job)
		return;
	*job = (struct build_job){reg, slot, db, schema_ref(s)};
	snprintf(slot->building_hash, sizeof(slot->building_hash), "%s", s->hash);
	if (pthread_create(&slot->thread, NULL, build_thread, job) == 0) {
		slot->has_thread = true;
	} else {
		slot->building_hash[0] = '\0';
		schema_unref(job->schema);
		free(job);
	}
}

void value_registry_prepare(struct value_registry *reg, struct catalog_db *db, struct schema *s)
{
	pthread_mutex_lock(&reg->lock);
	struct value_slot *slot = slot_for(reg, s->database);
	bool current = slot && slot->index && strcmp(value_index_schema(slot->index)->hash, s->hash) == 0;
	if (slot && !current && strcmp(slot->building_hash, s->hash) != 0)
		start_build(reg, slot, db, s);
	pthread_mutex_unlock(&reg->lock);
}

struct value_index *value_registry_get(struct value_registry *reg, struct catalog_db *db, struct schema *s,
				       char *ret_state)
{
	pthread_mutex_lock(&reg->lock);
	struct value_slot *slot = slot_for(reg, s->database);
	struct value_index *vi = NULL;
	const char *state = "building";
	if (slot && slot->index && strcmp(value_index_schema(slot->index)->hash, s->hash) == 0) {
		vi = value_index_ref(slot->index);
		state = "ready";
	} else if (slot && strcmp(slot->failed_hash, s->hash) == 0 && clock_now_ms() - slot->failed_at_ms < VALUE_RETRY_MS) {
		state = slot->failure;
	} else if (slot) {
		start_build(reg, slot, db, s);
	}
	/* copied under the lock: a retry's build thread rewrites slot->failure */
	if (ret_state)
		snprintf(ret_state, VALUE_REGISTRY_STATE_MAX, "%s", state);
	pthread_mutex_unlock(&reg->lock);
	return vi;
}
