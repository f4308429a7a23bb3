/*
 * describe_internal.h - what the files of the describe stage share
 * (pipeline/describe/ only, never included from outside): the working state
 * of one run, the text helpers of the metadata composer that the prompt
 * reuses, the steps describe_run (describe.c) takes in turn and the
 * helpers they share (overrides, the result).
 */
#ifndef T2S_DESCRIBE_INTERNAL_H
#define T2S_DESCRIBE_INTERNAL_H

#include "common/contract.h"
#include "common/strbuf.h"
#include "pipeline/describe/describe.h"

#include <stdbool.h>
#include <stddef.h>

/* Bounds of what one description and one prompt may hold. */
#define SAMPLES_SHOWN 5
#define SAMPLE_MAX 40
#define COMMENT_MAX 300

struct job; /* one table's model job (describe_model.c) */

/* Working state of one run. */
struct run {
	const struct schema *s;
	const struct describe_options *o;
	int *tables;         /* asked tables, deduplicated */
	size_t n_tables;
	size_t *ov_offset;   /* per asked table: first slot in ov (table item, then columns) */
	const char **ov;     /* override text per item, or NULL */
	struct job *jobs;    /* per asked table */
	struct describe_result res;
};

/* ---- describe_metadata.c: text helpers ---- */

/*
 * Append s to sb with every run of white space or control characters turned
 * into one space and both ends trimmed, cut to at most max bytes on a UTF-8
 * boundary ("..." marks a cut).  Appends nothing for blank text.
 */
void describe_add_clean(struct strbuf *sb, const char *s, size_t max);
/* A malloc'd cleaned copy of s capped at DESCRIBE_TEXT_MAX, NULL when blank or out of memory. */
char *describe_clean_dup(const char *s);
/* The API name of the table a foreign key points at (schema.h). */
void describe_add_ref_table(struct strbuf *sb, const struct schema_foreign_key *fk);
/* "Table", "View", "Materialized view" or "Foreign table" for a schema table's kind. */
const char *describe_kind_word(const char *kind);

/* ---- describe_prompt.c: the model prompt and its answer ---- */

extern const char describe_system_prompt[];
/*
 * The user message for table ti: 0 and *ret_prompt (malloc'd, caller frees),
 * -T2S_ERR_NOMEM, or -T2S_ERR_INVALID when it would exceed the prompt bound;
 * err filled on failure.
 */
T2S_MUST_CHECK
int describe_build_prompt(const struct schema *s, int ti, char **ret_prompt, struct t2s_error *err);
/* Index of the column called name in t: exact match when exact, else case-insensitive; -1. */
int describe_column_index(const struct schema_table *t, const char *name, bool exact);
/* The cached form of a parsed answer: {"table": ..., "columns": {...}} (malloc'd) or NULL. */
char *describe_answer_to_blob(const struct schema_table *t, const char *tsentence, char *const *cols);
/* "describe:v1:" + SHA-256 of (database, schema hash, model, table) into buf. */
void describe_cache_key(const struct schema *s, const struct model_endpoint *ep, int ti, char *buf, size_t size);

/* ---- describe_model.c: the model jobs ---- */

/* One job per asked table into r->jobs (none called yet); -T2S_ERR_NOMEM. */
T2S_MUST_CHECK
int describe_jobs_new(struct run *r);
/* Free r->jobs and what they hold.  Accepts r->jobs == NULL. */
void describe_jobs_free(struct run *r);
/* The model's text for column ci (-1: the table itself) of asked table i, or NULL when it gave none. */
const char *describe_job_text(const struct run *r, size_t i, int ci);
/* Calls the model for every asked table that needs it (cache first). */
T2S_MUST_CHECK
int describe_model_phase(struct run *r, struct t2s_error *err);

/* ---- describe_overrides.c: the overrides of a run ---- */

/*
 * The override text of every item of the asked tables into r->ov (NULL
 * where none), r->ov_offset giving each table's first slot (table item,
 * then its columns); 0, or -T2S_ERR_NOMEM with err filled.  Freed by the run.
 */
T2S_MUST_CHECK
int describe_resolve_overrides(struct run *r, struct t2s_error *err);
/* True when every item of asked table i has an override (no model call needed). */
bool describe_fully_overridden(const struct run *r, size_t i);

/* ---- describe_result.c: the run's result ---- */

/* Append "table: message" to res->errors; -T2S_ERR_NOMEM. */
T2S_MUST_CHECK
int describe_push_error(struct describe_result *res, const char *table, const struct t2s_error *e);

#endif
