/*
 * snapshot_registry.c - the per-name slots of published snapshots: see
 * snapshot_registry.h.
 *
 * Locks: reg->lock guards the slot list and every slot's published
 * snapshot, hash and failure; a slot's build_lock is held for the whole of
 * each build of that slot (taken before reg->lock, never inside it).
 */
#include "common/snapshot_registry.h"
#include "common/clock.h"
#include "common/memory.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct snapshot_slot {
	char *name;
	void *snapshot;                         /* guarded by reg->lock, like the fields up to build_lock */
	char hash[SHA256_HEX_LEN + 1];          /* the snapshot's */
	double published_at_ms;
	char building_hash[SHA256_HEX_LEN + 1]; /* of the background build queued or running; "" when none */
	char failed_hash[SHA256_HEX_LEN + 1];   /* of the last failed build; "" after a success */
	char failure[T2S_ERROR_MESSAGE_MAX + 16];
	double failed_at_ms;
	pthread_mutex_t build_lock; /* one build at a time */
};

struct snapshot_registry {
	struct snapshot_type type;
	struct workers *workers;
	struct workers_group jobs;
	pthread_mutex_t lock;
	struct snapshot_slot **slots;
	size_t n_slots;
};

/* A background build: see snapshot_registry_start. */
struct build_job {
	struct snapshot_registry *reg;
	struct snapshot_slot *slot;
	char hash[SHA256_HEX_LEN + 1];
	void *input;
};

int snapshot_registry_new(const struct snapshot_type *type, struct workers *workers, struct snapshot_registry **ret,
			  struct t2s_error *err)
{
	struct snapshot_registry *reg = calloc(1, sizeof(*reg));
	if (!reg)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	reg->type = *type;
	reg->workers = workers;
	workers_group_init(&reg->jobs);
	pthread_mutex_init(&reg->lock, NULL);
	*ret = reg;
	return 0;
}

void snapshot_registry_free(struct snapshot_registry *reg)
{
	if (!reg)
		return;
	workers_group_wait(&reg->jobs);
	for (size_t i = 0; i < reg->n_slots; i++) {
		reg->type.unref(reg->slots[i]->snapshot);
		pthread_mutex_destroy(&reg->slots[i]->build_lock);
		free(reg->slots[i]->name);
		free(reg->slots[i]);
	}
	free(reg->slots);
	pthread_mutex_destroy(&reg->lock);
	workers_group_release(&reg->jobs);
	free(reg);
}

/* The slot of name, created when missing (NULL: out of memory); call with reg->lock held. */
static struct snapshot_slot *slot_for(struct snapshot_registry *reg, const char *name)
{
	for (size_t i = 0; i < reg->n_slots; i++)
		if (strcmp(reg->slots[i]->name, name) == 0)
			return reg->slots[i];
	struct snapshot_slot **v = realloc(reg->slots, (reg->n_slots + 1) * sizeof(*v));
	if (!v)
		return NULL;
	reg->slots = v;
	struct snapshot_slot *slot = calloc(1, sizeof(*slot));
	if (!slot || !(slot->name = strdup(name))) {
		free(slot);
		return NULL;
	}
	pthread_mutex_init(&slot->build_lock, NULL);
	reg->slots[reg->n_slots++] = slot;
	return slot;
}

static struct snapshot_slot *slot_locked(struct snapshot_registry *reg, const char *name)
{
	pthread_mutex_lock(&reg->lock);
	struct snapshot_slot *slot = slot_for(reg, name);
	pthread_mutex_unlock(&reg->lock);
	return slot;
}

/* The slot's snapshot when built for hash, as a new reference; call with reg->lock held. */
static void *current_of(struct snapshot_registry *reg, struct snapshot_slot *slot, const char *hash)
{
	return slot->snapshot && strcmp(slot->hash, hash) == 0 ? reg->type.ref(slot->snapshot) : NULL;
}

static void *current_locked(struct snapshot_registry *reg, struct snapshot_slot *slot, const char *hash)
{
	pthread_mutex_lock(&reg->lock);
	void *snapshot = current_of(reg, slot, hash);
	pthread_mutex_unlock(&reg->lock);
	return snapshot;
}

void *snapshot_registry_current(struct snapshot_registry *reg, const char *name, const char *hash)
{
	pthread_mutex_lock(&reg->lock);
	struct snapshot_slot *slot = slot_for(reg, name);
	void *snapshot = slot ? current_of(reg, slot, hash) : NULL;
	pthread_mutex_unlock(&reg->lock);
	return snapshot;
}

void *snapshot_registry_lookup(struct snapshot_registry *reg, const char *name, const char *hash, double retry_ms,
			       enum snapshot_state *ret_state, char *ret_failure, size_t size)
{
	pthread_mutex_lock(&reg->lock);
	struct snapshot_slot *slot = slot_for(reg, name);
	void *snapshot = slot ? current_of(reg, slot, hash) : NULL;
	*ret_state = SNAPSHOT_MISSING;
	if (snapshot) {
		*ret_state = SNAPSHOT_READY;
	} else if (slot && strcmp(slot->failed_hash, hash) == 0 && clock_now_ms() - slot->failed_at_ms < retry_ms) {
		*ret_state = SNAPSHOT_FAILED;
		if (ret_failure) /* copied under the lock: a retry's build rewrites slot->failure */
			snprintf(ret_failure, size, "%s", slot->failure);
	}
	pthread_mutex_unlock(&reg->lock);
	return snapshot;
}

/*
 * Build from input for hash and publish the result in slot: a success
 * replaces the snapshot, a failure is kept with its time.  Call with
 * slot->build_lock held.  *ret (may be NULL): a new reference on success.
 */
static int build_and_publish(struct snapshot_registry *reg, struct snapshot_slot *slot, const char *hash, void *input,
			     void **ret, struct t2s_error *err)
{
	void *snapshot = NULL, *old = NULL;
	int rc = reg->type.build(reg->type.ctx, input, &snapshot, err);
	pthread_mutex_lock(&reg->lock);
	if (rc == 0) {
		old = slot->snapshot;
		slot->snapshot = snapshot;
		snprintf(slot->hash, sizeof(slot->hash), "%s", hash);
		slot->published_at_ms = clock_now_ms();
		slot->failed_hash[0] = '\0';
		if (ret)
			*ret = reg->type.ref(snapshot);
	} else {
		snprintf(slot->failed_hash, sizeof(slot->failed_hash), "%s", hash);
		snprintf(slot->failure, sizeof(slot->failure), "failed: %s", err->message);
		slot->failed_at_ms = clock_now_ms();
	}
	pthread_mutex_unlock(&reg->lock);
	reg->type.unref(old);
	return rc;
}

static void build_job_run(void *arg)
{
	struct build_job *job = arg;
	struct snapshot_registry *reg = job->reg;
	struct t2s_error err = {0};
	pthread_mutex_lock(&job->slot->build_lock);
	build_and_publish(reg, job->slot, job->hash, job->input, NULL, &err);
	pthread_mutex_unlock(&job->slot->build_lock);
	pthread_mutex_lock(&reg->lock);
	job->slot->building_hash[0] = '\0';
	pthread_mutex_unlock(&reg->lock);
	if (reg->type.input_free)
		reg->type.input_free(job->input);
	free(job);
	memory_give_back(); /* the build's temporary buffers were freed in this thread's arena: give them back */
}

void snapshot_registry_start(struct snapshot_registry *reg, const char *name, const char *hash, void *input)
{
	struct build_job *job = malloc(sizeof(*job));
	pthread_mutex_lock(&reg->lock);
	struct snapshot_slot *slot = job ? slot_for(reg, name) : NULL;
	bool start = slot && !slot->building_hash[0] && !(slot->snapshot && strcmp(slot->hash, hash) == 0);
	if (start) {
		*job = (struct build_job){.reg = reg, .slot = slot, .input = input};
		snprintf(job->hash, sizeof(job->hash), "%s", hash);
		snprintf(slot->building_hash, sizeof(slot->building_hash), "%s", hash);
	}
	pthread_mutex_unlock(&reg->lock);
	if (start) {
		workers_submit(reg->workers, &reg->jobs, build_job_run, job);
		return;
	}
	free(job);
	if (reg->type.input_free)
		reg->type.input_free(input);
}

int snapshot_registry_build(struct snapshot_registry *reg, const char *name, const char *hash, void *input,
			    void **ret, bool *ret_built, struct t2s_error *err)
{
	struct snapshot_slot *slot = slot_locked(reg, name);
	if (!slot)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	if (ret_built)
		*ret_built = false;
	void *snapshot = current_locked(reg, slot, hash);
	if (snapshot) {
		*ret = snapshot;
		return 0;
	}
	pthread_mutex_lock(&slot->build_lock);
	snapshot = current_locked(reg, slot, hash); /* another caller may have built it meanwhile */
	int rc = 0;
	if (!snapshot) {
		rc = build_and_publish(reg, slot, hash, input, &snapshot, err);
		if (rc == 0 && ret_built)
			*ret_built = true;
	}
	pthread_mutex_unlock(&slot->build_lock);
	if (rc == 0)
		*ret = snapshot;
	return rc;
}

void *snapshot_registry_renew(struct snapshot_registry *reg, const char *name, void *stale, double age_ms,
			      void *input, bool *ret_built)
{
	struct snapshot_slot *slot = slot_locked(reg, name);
	if (!slot)
		return stale;
	pthread_mutex_lock(&reg->lock);
	bool due = slot->snapshot == stale && clock_now_ms() >= slot->published_at_ms + age_ms;
	char hash[SHA256_HEX_LEN + 1];
	snprintf(hash, sizeof(hash), "%s", slot->hash);
	pthread_mutex_unlock(&reg->lock);
	if (!due || pthread_mutex_trylock(&slot->build_lock) != 0)
		return stale;
	void *fresh = NULL;
	struct t2s_error ignored; /* a failed build keeps stale */
	if (build_and_publish(reg, slot, hash, input, &fresh, &ignored) == 0) {
		reg->type.unref(stale);
		stale = fresh;
		*ret_built = true;
	}
	pthread_mutex_unlock(&slot->build_lock);
	return stale;
}

void snapshot_registry_submit(struct snapshot_registry *reg, void (*fn)(void *arg), void *arg)
{
	workers_submit(reg->workers, &reg->jobs, fn, arg);
}
