/*
 * snapshot_registry.h - per-name slots (a name is a database) each holding
 * the latest published snapshot: an immutable, reference-counted object
 * (an index) built from one version of its input, named by that version's
 * hash (a schema hash).  A snapshot is replaced whole when a build for
 * another hash publishes; readers holding the old one keep it until they
 * release it.  The column index registry and the value index registry are
 * users of this file: they choose when to build and what to report.
 *
 * Builds come two ways, never two at once for one slot:
 *  - in the caller (snapshot_registry_build): concurrent callers wait for
 *    one build instead of each building their own;
 *  - in the background (snapshot_registry_start), as a job on the process's
 *    worker pool (workers.h), one at a time per slot; its failure is kept
 *    with its hash and time so the user can report it and retry later.
 * Background work of the user's own (snapshot_registry_submit) shares the
 * registry's group: snapshot_registry_free waits for every job.
 *
 * Thread-safe.  Library code: it does not log.
 */
#ifndef T2S_SNAPSHOT_REGISTRY_H
#define T2S_SNAPSHOT_REGISTRY_H

#include "common/contract.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/workers.h"

#include <stdbool.h>

/* What the registry does with the snapshots and build inputs of its user. */
struct snapshot_type {
	void *(*ref)(void *snapshot);  /* a new reference */
	void (*unref)(void *snapshot); /* accepts NULL */
	/* Build the snapshot of input: 0 and *ret (a reference the registry takes), or < 0 with err filled. */
	int (*build)(void *ctx, void *input, void **ret, struct t2s_error *err);
	void (*input_free)(void *input); /* a background build's input, after the build; NULL: nothing to free */
	void *ctx;                       /* build's first argument */
};

struct snapshot_registry;

/* type is copied; workers (NULL: builds run in the caller, see workers.h) must outlive the registry. */
T2S_MUST_CHECK
int snapshot_registry_new(const struct snapshot_type *type, struct workers *workers, struct snapshot_registry **ret,
			  struct t2s_error *err);

/* Wait for the background builds and jobs (the user cancels them first if it can), then free.  Accepts NULL. */
void snapshot_registry_free(struct snapshot_registry *reg);

/* A reference to name's snapshot when it was built for hash; NULL otherwise. */
void *snapshot_registry_current(struct snapshot_registry *reg, const char *name, const char *hash);

enum snapshot_state {
	SNAPSHOT_READY,   /* the snapshot of the hash is published */
	SNAPSHOT_FAILED,  /* the last build for the hash failed less than retry_ms ago */
	SNAPSHOT_MISSING, /* neither (a build may run, for this hash or another) */
};

/*
 * The state of name for hash; READY returns a reference to the snapshot,
 * FAILED copies "failed: <reason>" into ret_failure (size bytes, may be
 * NULL), both under the registry's lock.  Other states return NULL.
 */
void *snapshot_registry_lookup(struct snapshot_registry *reg, const char *name, const char *hash, double retry_ms,
			       enum snapshot_state *ret_state, char *ret_failure, size_t size);

/*
 * Build the snapshot of hash for name in the background from input (owned:
 * freed by type.input_free after the build, or now when none starts),
 * unless its snapshot is published or a background build of name runs.
 */
void snapshot_registry_start(struct snapshot_registry *reg, const char *name, const char *hash, void *input);

/*
 * A reference to name's snapshot of hash, built here from input (borrowed)
 * when missing: one caller builds, the others wait and take its snapshot.
 * *ret_built (may be NULL) tells whether this call built it.  Returns 0, or
 * the build's error (err filled) or -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int snapshot_registry_build(struct snapshot_registry *reg, const char *name, const char *hash, void *input,
			    void **ret, bool *ret_built, struct t2s_error *err);

/*
 * When stale (a reference) is still name's published snapshot, published
 * at least age_ms ago, and no build runs, build it again here from input
 * (borrowed) and publish it.  Returns the snapshot to use: the new one
 * (stale released, *ret_built set true) or stale (not due, busy, or a build
 * that failed).
 */
void *snapshot_registry_renew(struct snapshot_registry *reg, const char *name, void *stale, double age_ms,
			      void *input, bool *ret_built);

/* Run fn(arg) in the background as a job snapshot_registry_free waits for (see workers_submit). */
void snapshot_registry_submit(struct snapshot_registry *reg, void (*fn)(void *arg), void *arg);

#endif
