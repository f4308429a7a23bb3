/*
 * evidence.h - evidence from database values (SEED): which stored values a
 * question names, spelled exactly as stored and in which column, plus
 * synonyms, domain knowledge (with an evidence model) and the most similar
 * stored examples.
 *
 *   1. question spans (question_spans.h) are looked up in the value index
 *      (trigram similarity) and, for numbers and dates, matched to columns
 *      by range;
 *   2. candidates are ranked by match quality and by how well their column
 *      fits the question (the linking index's lexical score);
 *   3. the best are confirmed by a parameterised probe on the live database
 *      (value_probe.h) that returns the stored spelling; each value carries
 *      its probe SQL and rows;
 *   4. with an evidence model, SEED's step: the model proposes schema-value
 *      pairs as strict JSON (probed like the others) and domain knowledge.
 *
 * Without a value index yet (still building) the result is marked partial.
 */
#ifndef T2S_EVIDENCE_H
#define T2S_EVIDENCE_H

#include "common/contract.h"
#include "pipeline/db/catalog.h"
#include "common/error.h"
#include "pipeline/link/column_index.h"
#include "pipeline/models/fallback.h"
#include "pipeline/models/model_client.h"
#include "pipeline/store/state_store.h"
#include "pipeline/values/value_index.h"
#include "pipeline/values/value_probe.h"

#include <stdbool.h>
#include <stdint.h>

struct evidence_options {
	int max_values;         /* values returned (default 5) */
	double min_score;       /* similarity a value match needs (default 0.8) */
	long probe_timeout_ms;  /* per confirming probe (default VALUE_PROBE_TIMEOUT_DEFAULT_MS) */
	int max_examples;       /* similar stored examples returned (default 3) */
	const struct model_endpoint *model; /* NULL: no domain knowledge, no model pairs (default NULL) */
	bool report_index_fallback; /* a linking index built without its failed embedder is listed in fallbacks
				       (default true; /generate leaves it to linking, which reports it once) */
};

/* Fill o with the defaults above (the only place they are defined; the config leaves them to this). */
void evidence_options_init(struct evidence_options *o);

struct evidence_value {
	int table, column;
	char *value;   /* as stored (from the probe) */
	char *matched; /* the question's words it matched */
	double score;
	const char *source; /* "value_index", "model" */
	struct value_probe_result probe;
};

struct evidence_item {
	const char *kind; /* "value", "synonym", "domain" */
	char *text;
	const char *source; /* "value_index", "range", "lexicon", "model" */
};

struct evidence_example {
	int64_t id;
	char *question, *sql;
	double score;
};

struct evidence_result {
	struct evidence_value *values;
	size_t n_values;
	struct evidence_item *items;
	size_t n_items;
	struct evidence_example *examples;
	size_t n_examples;
	bool partial;       /* the value index was not ready */
	struct stage_fallback fallbacks[FALLBACK_MAX]; /* "embed": li was built without its failed embed model
							  (columns are ranked by lexical scores, as always here) */
	size_t n_fallbacks;
	int probes, model_calls, model_errors;
	long prompt_tokens, completion_tokens;
	double ms_lookup, ms_probe, ms_model, ms_examples, ms_total;
};

/*
 * vi may be NULL (partial), li must be the linking index of the same schema,
 * st may be NULL (no examples).  On success *ret is released with
 * evidence_result_release.
 */
T2S_MUST_CHECK
int evidence_run(struct catalog_db *db, struct value_index *vi, struct column_index *li, struct state_store *st,
		 const char *question, const struct evidence_options *o, struct evidence_result *ret,
		 struct t2s_error *err);
void evidence_result_release(struct evidence_result *r);

#endif
