/*
 * link_registry.h - one linking index per database, rebuilt when the
 * schema hash changes.  Thread-safe: concurrent requests for a database
 * whose index is missing or stale wait for one build instead of each
 * building their own; requests holding an older index keep it (it is
 * reference-counted) until they finish.
 */
#ifndef T2S_LINK_REGISTRY_H
#define T2S_LINK_REGISTRY_H

#include "link_index.h"

#include <stdbool.h>

struct link_registry;

/*
 * Build the index of s in the background (after start and refresh), so the
 * first /link does not pay for it.  Threads are joined by link_registry_free.
 */
void link_registry_prepare(struct link_registry *reg, struct schema *s);

/* o is copied (its pointers must outlive the registry). */
int link_registry_new(const struct link_index_options *o, struct link_registry **ret, struct t2s_error *err);
void link_registry_free(struct link_registry *reg);

/*
 * A reference to the index of schema s (keyed by s->database), building it
 * when absent or built for another schema hash.  *ret_built (may be NULL)
 * tells whether this call built it.
 */
int link_registry_get(struct link_registry *reg, struct schema *s, struct link_index **ret, bool *ret_built,
		      struct t2s_error *err);

#endif
