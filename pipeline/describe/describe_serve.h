/*
 * describe_serve.h - one /describe request end to end: the describe stage
 * (describe.h) combined with the state store (pipeline/store/state_store.h).
 *
 * A request names tables (or none: every table).  describe_serve:
 *   1. resolves the names with schema_find_table (exact API names; an
 *      unknown or ambiguous name is -T2S_ERR_NOT_FOUND, a name given twice
 *      is described once, the first time it is named; a NULL name, which
 *      a caller uses for an entry that is not a string, is
 *      -T2S_ERR_INVALID "tables[i]: no table named '(not a string)'");
 *   2. reads the user's overrides of the database from the state store;
 *   3. with a describe model, reads the descriptions the state store keeps
 *      for this schema hash: a table whose own item and every column have a
 *      stored text or an override is served from there (no model call,
 *      counted in cache_hits), override first;
 *   4. sends the other tables to describe_run, with the overrides;
 *   5. merges both into one result, in the order asked, each table's item
 *      first, then its columns in schema order;
 *   6. stores in the state store the tables the model described just now
 *      (whole: columns the model left out keep their metadata text and
 *      source; overrides are never stored there), so a restart without Redis
 *      serves them without model calls.  A failure to store is ignored.
 *
 * Ownership: everything in *ret (items, their texts, errors) is owned by
 * *ret alone and freed with describe_result_release; nothing in it points
 * into the request, the state store's results or the stage's own result.
 *
 * Threads: may be called from many threads at once (the schema is only read;
 * the state store and the describe stage are thread-safe).  Nothing is
 * logged.
 */
#ifndef T2S_DESCRIBE_SERVE_H
#define T2S_DESCRIBE_SERVE_H

#include "common/contract.h"
#include "common/error.h"
#include "pipeline/describe/describe.h"
#include "pipeline/store/state_store.h"

#include <stddef.h>

/* Everything is borrowed for the duration of describe_serve. */
struct describe_request {
	const struct schema *schema;
	const char *const *tables;          /* API names of the tables asked; NULL: every table */
	size_t n_tables;                    /* entries of tables (>= 1 when tables is set) */
	struct state_store *state;          /* NULL: no overrides, nothing stored or reused */
	const struct model_endpoint *model; /* NULL: metadata only */
	struct embed_cache *cache;          /* NULL: no Redis cache of model answers */
	int max_parallel;                   /* as describe_options.max_parallel */
	struct workers *workers;            /* as describe_options.workers */
};

/*
 * Describe the tables of rq (see above).  Returns 0 and fills *ret (the
 * caller releases it with describe_result_release), or: -T2S_ERR_NOT_FOUND
 * ("tables[i]: no table named '...'"), -T2S_ERR_INVALID (a NULL name, no
 * schema, no result, n_tables 0 with tables set), -T2S_ERR_NOMEM, or the state store's
 * error when the overrides cannot be read; err is filled and *ret untouched
 * on failure.  Model failures are not errors: they fall back to metadata
 * and are listed in ret->errors.
 */
T2S_MUST_CHECK
int describe_serve(const struct describe_request *rq, struct describe_result *ret, struct t2s_error *err);

#endif
