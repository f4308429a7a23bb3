/*
 * column_index_registry.h - one column index per database, rebuilt when the
 * schema hash changes.  Thread-safe: concurrent requests for a database
 * whose index is missing or stale wait for one build instead of each
 * building their own; requests holding an older index keep it (it is
 * reference-counted) until they finish.
 *
 * With options.lexical_on_remote_failure, an index whose embedder failed
 * during its build is published lexical-only (column_index.h,
 * remote_failure) so that requests keep being answered without waiting on
 * the failing server each time; once options.remote_retry_ms have passed
 * since it was built, the next request rebuilds it (one request at a time
 * tries the embedder again; the others keep using the lexical index).
 *
 * The slots are those of common/snapshot_registry.h; background builds are
 * jobs of the worker pool (common/workers.h).
 */
#ifndef T2S_COLUMN_INDEX_REGISTRY_H
#define T2S_COLUMN_INDEX_REGISTRY_H

#include "common/contract.h"
#include "pipeline/link/column_index.h"

#include <stdbool.h>

struct column_index_registry;
struct workers;

/*
 * Build the index of s in the background (after start and refresh), so the
 * first /link does not pay for it.  column_index_registry_free waits for these builds.
 */
void column_index_registry_prepare(struct column_index_registry *reg, struct schema *s);

/*
 * o is copied (its pointers must outlive the registry).  Background builds
 * run on workers (NULL: in the calling thread; it must outlive the registry).
 */
T2S_MUST_CHECK
int column_index_registry_new(const struct column_index_options *o, struct workers *workers,
			      struct column_index_registry **ret, struct t2s_error *err);
void column_index_registry_free(struct column_index_registry *reg);

/*
 * A reference to the index of schema s (keyed by s->database), building it
 * when absent or built for another schema hash.  *ret_built (may be NULL)
 * tells whether this call built it.
 */
T2S_MUST_CHECK
int column_index_registry_get(struct column_index_registry *reg, struct schema *s, struct column_index **ret, bool *ret_built,
		      struct t2s_error *err);

#endif
