/*
 * describe.h - the describe stage: a natural-language description of every
 * table and column of a schema (X-SQL's X-Admin).
 *
 * Three sources, in order of precedence:
 *
 *   override  text a user stored for a table or column (the caller passes
 *             them; they win over everything else);
 *   model     with a describe model: one chat call per table, asking for
 *             strict JSON {"table": "<sentence>", "columns": {"<col>":
 *             "<sentence>"}} from the table's name, columns, types, keys,
 *             sample values and its neighbouring tables (those joined to it
 *             by a foreign key, either way).  Tables are described in
 *             parallel by at most max_parallel threads (the caller's and
 *             the worker pool's).  Answers are checked
 *             strictly: columns the table does not have are dropped and
 *             counted, a column the answer leaves out gets its metadata text,
 *             an answer that is not such a JSON object (or a failed call)
 *             makes the whole table fall back to metadata, with the error
 *             recorded in the result;
 *   metadata  without a model (or as the fallback): short factual sentences
 *             composed from the comment, key roles, declared type and
 *             nullability, sample values and their numeric or date range,
 *             and, for tables, kind, row count and foreign-key neighbours.
 *             Nothing is guessed from names.
 *
 * Cache: given an embed_cache, a table's validated model answer is stored
 * under a key derived from (database, schema hash, model name, table, prompt
 * version), so a second run with the same schema and model makes no model
 * call for it.  Only model answers are cached (never fallbacks or
 * overrides).  Redis trouble never fails a run (see embed_cache.h).
 *
 * Threads: describe_run may be called from many threads at once; the schema
 * is only read.  model_client_global_init() must have been called.  No
 * function logs; model calls and step latencies are recorded in the stage
 * metrics under stage "describe".
 */
#ifndef T2S_DESCRIBE_H
#define T2S_DESCRIBE_H

#include "common/contract.h"
#include "pipeline/models/embed_cache.h"
#include "common/error.h"
#include "pipeline/models/model_client.h"
#include "pipeline/db/schema.h"

#include <stdbool.h>
#include <stddef.h>

struct workers;

/* Default and largest number of tables described at once with a model. */
#define DESCRIBE_PARALLEL_DEFAULT 4
#define DESCRIBE_PARALLEL_MAX 16
/* Longest description kept (bytes, cut on a UTF-8 boundary). */
#define DESCRIBE_TEXT_MAX 600
/* Most columns of one table shown to the model; the rest get metadata text. */
#define DESCRIBE_MODEL_MAX_COLUMNS 200

/*
 * A user's description of a table (column NULL) or of one of its columns.
 * table is the table's API name (schema.h), matched exactly, else
 * case-insensitively when only one table's API name matches that way; column
 * exactly, then case-insensitively.  An
 * override naming a table or column the schema does not have is ignored
 * (stored overrides may outlive a schema change).  When two overrides name
 * the same item, the later one wins.  Empty text is ignored.
 */
struct describe_override {
	const char *table;
	const char *column; /* NULL: the table itself */
	const char *text;
};

/*
 * Where override ov applies in s, by the rule above: *ret_table (an index
 * into s->tables) and *ret_column (-1: the table itself).  False, with
 * nothing written, when ov has no text or names a table or column that s
 * does not have.
 */
bool describe_override_target(const struct schema *s, const struct describe_override *ov, int *ret_table,
			      int *ret_column);

/* Everything is borrowed for the duration of describe_run. */
struct describe_options {
	const struct model_endpoint *model; /* NULL: metadata only */
	struct embed_cache *cache;          /* NULL: no caching */
	int max_parallel;                   /* <= 0: DESCRIBE_PARALLEL_DEFAULT; capped at DESCRIBE_PARALLEL_MAX */
	struct workers *workers;            /* the pool that helps the caller (common/workers.h); NULL: the
					       caller's thread makes every call */
	const struct describe_override *overrides;
	size_t n_overrides;
};

/* Values of describe_item.source (static strings; compare with strcmp or ==). */
extern const char describe_source_model[];    /* "model" */
extern const char describe_source_metadata[]; /* "metadata" */
extern const char describe_source_override[]; /* "override" */

struct describe_item {
	int table;          /* index into schema->tables */
	int column;         /* index into that table's columns; -1: the table */
	char *text;         /* malloc'd, owned by the result; never NULL, never empty */
	const char *source; /* one of the describe_source_* strings */
};

/*
 * Items come table by table in the order asked, each table's item first,
 * then its columns in schema order.
 *
 * model_calls     chat calls made (cache hits make none);
 * model_errors    tables whose model text could not be had (failed call,
 *                 malformed answer, prompt over its size bound) and fell
 *                 back to metadata;
 * cache_hits      tables served from the cache;
 * unknown_columns column names in model answers that the table lacks (dropped);
 * errors          one message per model error ("singer: ..."), malloc'd.
 */
struct describe_result {
	struct describe_item *items;
	size_t n_items;
	int model_calls, model_errors, cache_hits, unknown_columns;
	bool state_unavailable; /* describe_serve: the state store could not be read (no overrides applied) */
	long prompt_tokens, completion_tokens;
	double ms_total;
	char **errors;
	size_t n_errors;
};

/*
 * Describe tables[0..n_tables) of s (indexes; NULL and 0: every table;
 * repeated indexes are described once).  o may be NULL (metadata only, no
 * overrides).
 *
 * Model failures are not errors of the run: they fall back to metadata and
 * are reported in ret.  Returns 0, -T2S_ERR_INVALID (NULL schema or result,
 * a table index out of range) or -T2S_ERR_NOMEM.  *ret is written only on
 * success; the caller then frees its contents with describe_result_release.
 */
T2S_MUST_CHECK
int describe_run(const struct schema *s, const int *tables, size_t n_tables, const struct describe_options *o,
		 struct describe_result *ret, struct t2s_error *err);

/* Free the contents of r (not r itself) and zero it.  Accepts NULL. */
void describe_result_release(struct describe_result *r);

/*
 * The metadata description of table t (column -1: the table itself) of s:
 * a malloc'd string the caller frees, or NULL when out of memory or t/column
 * is out of range.  Exposed for callers that need one item and for tests.
 */
char *describe_metadata_text(const struct schema *s, int table, int column);

/*
 * Parse a describe model answer for table `table` of s.  Accepts the JSON
 * object alone, or surrounded by other text or a Markdown code fence (the
 * first '{' to the last '}'; duplicate keys make it malformed).  Column
 * names match exactly, else case-insensitively; non-string or blank
 * sentences count as left out; a "table" sentence that only repeats the
 * table's name is ignored.  Sentences are cleaned (white space collapsed,
 * cut at DESCRIBE_TEXT_MAX bytes).
 *
 * On success: *ret_table is the table sentence or NULL; *ret_columns has one
 * entry per column of the table, a sentence or NULL when left out;
 * *ret_unknown counts the dropped unknown names.  All malloc'd: the caller
 * frees each entry, then the array.  Returns 0, -T2S_ERR_UPSTREAM (err
 * filled) when the answer is not the expected JSON object, -T2S_ERR_INVALID
 * or -T2S_ERR_NOMEM; outputs are written only on success.
 */
T2S_MUST_CHECK
int describe_parse_answer(const struct schema *s, int table, const char *answer, char **ret_table,
			  char ***ret_columns, int *ret_unknown, struct t2s_error *err);

#endif
