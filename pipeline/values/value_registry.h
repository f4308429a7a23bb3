/*
 * value_registry.h - one value index per database, built in the background
 * after registration and after every refresh (a build reads many values and
 * must not hold up requests).  A request that comes before the index of the
 * current schema hash is ready gets the previous index when its hash
 * matches, else none (the evidence is then marked partial).  Builds run
 * as background jobs of the worker pool (common/workers.h), at most two at
 * once; they are cancelled and waited for by value_registry_free.  The
 * slots are those of common/snapshot_registry.h.
 */
#ifndef T2S_VALUE_REGISTRY_H
#define T2S_VALUE_REGISTRY_H

#include "common/contract.h"
#include "pipeline/db/catalog.h"
#include "pipeline/values/value_index.h"

struct workers;

struct value_registry;

/*
 * o is copied (its cancel flag is replaced by the registry's own).  Builds
 * run on workers (NULL: in the calling thread; it must outlive the registry).
 */
T2S_MUST_CHECK
int value_registry_new(const struct value_index_options *o, struct workers *workers, struct value_registry **ret,
		       struct t2s_error *err);
void value_registry_free(struct value_registry *reg);

/* Start a background build for schema s of db unless one for its hash exists or runs. */
void value_registry_prepare(struct value_registry *reg, struct catalog_db *db, struct schema *s);

/* Room for the state text of value_registry_get, NUL included. */
#define VALUE_REGISTRY_STATE_MAX (T2S_ERROR_MESSAGE_MAX + 16)

/*
 * A reference to the ready index of s's hash, or NULL (a build is then
 * started when none runs).  ret_state (may be NULL; the caller's buffer of
 * VALUE_REGISTRY_STATE_MAX bytes) gets "ready", "building" or
 * "failed: <reason>", copied under the registry's lock: it stays valid and
 * unchanged whatever builds run later.
 */
struct value_index *value_registry_get(struct value_registry *reg, struct catalog_db *db, struct schema *s,
				       char *ret_state);

#endif
