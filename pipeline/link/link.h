/*
 * link.h - the schema-linking stage: which tables, columns and joins a
 * question needs.
 *
 *   1. column retrieval (LitE-SQL): the question is embedded (lexical, and
 *      the remote embedder when configured, fused by a weighted sum), every
 *      column document is scored by cosine, the top k are kept; tables are
 *      required by names, mentions, stand-ins, values and score, then by the
 *      learned table scorer (link_scorer.h "tables", link_tables.c);
 *   2. LLM table linking (X-SQL X-Linking), with a link model and mode llm
 *      or hybrid: the candidate tables, their columns and foreign keys are
 *      shown N times in shuffled order (concurrent requests); each answer is
 *      parsed strictly (unknown names dropped and reported); the union is
 *      kept with a vote count per table;
 *   2b. columns of the tables (see "Columns" below);
 *   3. join scaffold (SteinerSQL): the required tables are the terminals of
 *      a KMB Steiner tree on the schema graph, which brings in bridge tables
 *      and the join conditions; terminals it cannot connect are reported.
 *
 * Columns.  A table the link model chose (mode llm or hybrid) brings its
 * columns whole: the model picked the table, not its columns, and any of them
 * may be the one the answer reads.  A table the model named in fewer than
 * llm_min_vote_share of its answers is kept (the union, as X-SQL) but marked
 * low_votes and does not bring its columns whole.  Every other table
 * (retrieval, values, low votes) shows its primary key, its label column,
 * the columns the question names or holds values of, the names it shares
 * with a required table no key joins it to and its join keys to the other
 * required tables; all of its columns when the question asks for its
 * information or when it is small (within budget_tokens); then the fill
 * adds the columns the learned scorer (link_scorer.h) rates at least its
 * threshold, most probable first across tables, while the linked columns
 * fit budget_tokens (at least min_k per table, top_k in all;
 * pipeline/link/README.md, "Token budget and learned scorer").  In hybrid, a table retrieval required that
 * the model saw and did not name stays (recall when the model errs) but shows
 * only what the question points at: its best column, the columns the question
 * names or holds values of, and join endpoints (when the model named no table
 * at all, retrieval's tables keep the rule above).  Bridge tables show their
 * join columns.
 *
 * Column budget.  The columns brought whole must fit llm_column_budget_tokens
 * together with the other linked columns.  A column costs the token estimate
 * (common/tokens.h, bytes / 4) of its line in the generator's CREATE TABLE:
 * name, declared type, comment, three sample values.  Over budget, columns
 * brought whole are dropped lowest retrieval score first, never a primary or
 * foreign key, never the table's label or best column, never a column the
 * question names (by its words or by a stored value); the dropped columns are
 * listed in the result.  When only protected columns remain the result may
 * stay over budget.  0: no budget.
 *
 * Fallbacks (pipeline/models/fallback.h; each is listed in the result's
 * fallbacks and counted in text2sqld_fallbacks_total):
 *   embed     an embed model is configured but the question could not be
 *             embedded (unreachable, timeout, http_error, bad_response,
 *             dimension_mismatch) or the index was built without it (its
 *             remote_failure): the columns are scored with the lexical
 *             vectors alone (lexical_weight 1), which every index holds for
 *             the same documents, so scores stay comparable;
 *   link_llm  mode llm or hybrid, and no link model is configured
 *             (not_configured), every model call failed (unreachable,
 *             timeout, http_error, bad_response) or the answers named no
 *             candidate table (unparseable): mode llm answers as mode vector
 *             (and says mode "vector"), hybrid with retrieval's tables.
 *
 * The user's evidence, when given, is appended to the question (one space
 * between) for every step: retrieval, mentions, values and the link model.
 *
 * The result is the linked schema generation will be shown: a set of tables
 * and columns (every join endpoint among them) and the joins.  It holds a
 * reference to the index (and so to the schema) its indexes refer to.
 */
#ifndef T2S_LINK_H
#define T2S_LINK_H

#include "common/contract.h"
#include "common/error.h"
#include "pipeline/link/column_index.h"
#include "pipeline/link/link_scorer.h"
#include "pipeline/models/fallback.h"
#include "pipeline/models/model_client.h"

#include <stdbool.h>

enum link_mode { LINK_MODE_VECTOR, LINK_MODE_LLM, LINK_MODE_HYBRID };

const char *link_mode_name(enum link_mode m);
/* Parse "vector", "llm", "hybrid"; -1 when unknown. */
int link_mode_parse(const char *s);

struct link_params {
	int top_k;             /* most columns retrieval keeps */
	int min_k;             /* fewest columns kept per required table */
	long budget_tokens;    /* estimated tokens the fill may bring the linked columns to; 0: no budget
				  (see "Columns") */
	double table_ratio;    /* a table is required when its best column scores >= ratio x the best */
	int max_tables;        /* most tables retrieval alone may require */
	double lexical_weight; /* weight of the lexical score when a remote embedder is fused */
	int shuffles;          /* LLM self-consistency rounds */
	int llm_max_tables;    /* most candidate tables shown to the link model */
	double llm_min_vote_share;     /* a model table named in fewer answers than this share is low_votes */
	long llm_column_budget_tokens; /* estimated tokens the linked columns may take; 0: no budget */
	const struct link_scorer *scorer; /* the column scorer (link_scorer.h); NULL: the built-in one */
	struct workers *workers;       /* the pool that helps run the shuffles (common/workers.h); NULL: the
					  caller's thread runs them one after another */
};

/* Defaults of struct link_params: the only place they are defined (the config leaves them to this). */
extern const struct link_params link_params_default;

struct value_index;
struct workers;

struct link_request {
	const char *question;      /* at most T2S_QUESTION_MAX_BYTES */
	const char *evidence;      /* the user's hint (BIRD style), read as part of the question; NULL or at
				      most T2S_QUESTION_MAX_BYTES */
	enum link_mode mode;
	int top_k;                 /* 0: params */
	struct value_index *values; /* value index of the same schema, or NULL (no value hits) */
	bool model_only_if_related; /* hybrid mode: skip the link model when retrieval finds the question
				       relates to nothing (link_relates_to_nothing); vector linking answers */
	long budget_tokens;         /* the fill's token budget; 0: params (generation passes its model's share) */
	bool features;              /* fill link_result.candidates and table_candidates (bench/fit_link_scorer.py) */
};

enum link_reason {
	LINK_BY_RETRIEVAL = 1 << 0,
	LINK_BY_LLM = 1 << 1,
	LINK_BY_BRIDGE = 1 << 2,
	LINK_BY_JOIN = 1 << 3,
	LINK_BY_VALUE = 1 << 4, /* a stored value of the column is named in the question */
};

struct link_table {
	int table;
	double score;       /* best column score */
	int votes;          /* LLM answers naming it */
	bool low_votes;     /* named by the model, in fewer than llm_min_vote_share of its answers */
	bool whole;         /* brought its columns whole (see "Columns") */
	unsigned reasons;   /* enum link_reason bits */
	int best_column;    /* its best-scoring column */
};

struct link_column {
	int table, column;
	double score;
	unsigned reasons;
};

/* A column of a required table the fill weighed: its scorer features and probability. */
struct link_candidate {
	int table, column;
	double features[LINK_FEATURES];
	double probability;
};

/* A table the table scorer weighed (link_request.features): its features, probability and whether
   the scorer decided it (no firm rule required it). */
struct link_table_candidate {
	int table;
	double features[LINK_TABLE_FEATURES];
	double probability;
	bool decided;
};

/*
 * What in the schema the question relates to, found before any score selects
 * a table: generation ends early on a question that relates to nothing
 * (pipeline/generate/generate.h, "Unanswerable").  Counted by retrieval and
 * values (modes vector and hybrid, and llm when its model named nothing); in
 * mode llm the model's own pick stands for them.
 */
struct link_relevance {
	int named;           /* tables and columns the question's words or their near words name */
	int stand_ins;       /* tables and columns the stand-ins of its orphan words name */
	int values;          /* columns holding a value the question names */
	int touched;         /* only counted when named and stand_ins are 0: tables and columns a word of whose
				name is a question word or near word of any length ("id"), or begins with one
				of 4+ letters ("user" in useracct) */
	double best_lexical; /* best lexical score of any column (the same with or without a remote
				embedder) */
};

/*
 * Below this best lexical score, a question that names nothing, has no
 * stand-in, no stored value and touches no name relates to nothing in the
 * schema.  Measured (bench/relevance_eval.py, pipeline/generate/README.md):
 * the lowest real question relating to nothing scores 0.022 (spider-train
 * question_syn); no Spider dev or train question falls below this.
 */
#define LINK_UNRELATED_MAX_SCORE 0.02

struct link_result {
	struct column_index *index; /* reference */
	struct link_relevance relevance;
	enum link_mode mode;      /* the mode actually used */
	const char *fallback;     /* why another mode than asked was used, or NULL (static string) */
	struct stage_fallback fallbacks[FALLBACK_MAX]; /* every fallback of the run (see "Fallbacks") */
	size_t n_fallbacks;
	struct link_table *tables;
	size_t n_tables;
	struct link_column *columns;
	size_t n_columns;
	size_t *joins; /* indexes into index->edges: the scaffold, a forest */
	size_t n_joins;
	/* Declared foreign keys of the other tables keyed to both ends of a scaffold path through
	   a third table (drivers and races meet in results and in lap times alike): each such
	   table is linked as a bridge and its two joins are here, outside the forest. */
	size_t *alternative_joins; /* indexes into index->edges */
	size_t n_alternative_joins;
	int *disconnected; /* required tables the scaffold could not connect */
	size_t n_disconnected;
	char **unknown_names; /* names in model answers that match no candidate table */
	size_t n_unknown;
	struct link_candidate *candidates; /* with link_request.features: every column of the required tables
					      (the hybrid mode's unnamed tables aside); else NULL */
	size_t n_candidates;
	struct link_table_candidate *table_candidates; /* with link_request.features: every table; else NULL */
	size_t n_table_candidates;
	struct link_column *cut;  /* columns of tables brought whole dropped for the column budget */
	size_t n_cut;
	long column_tokens;        /* estimated tokens of the linked columns (see "Column budget") */
	long column_budget_tokens; /* the budget applied; 0: none */
	long fill_budget_tokens;   /* the fill's token budget (link_request.budget_tokens or params); 0: none */
	int shuffles, model_calls, model_errors;
	int answers;               /* model calls that answered (the votes' denominator) */
	long prompt_tokens, completion_tokens;
	double ms_embed, ms_retrieve, ms_llm, ms_steiner, ms_total;
};

/*
 * Link question against idx.  link_model / embed_model may be NULL (the
 * stage then uses its deterministic path and says so in ret->fallback).
 * On success *ret must be released with link_result_release.
 */
T2S_MUST_CHECK
int link_run(struct column_index *idx, const struct link_params *p, const struct model_endpoint *link_model,
	     const struct model_endpoint *embed_model, const struct link_request *rq, struct link_result *ret,
	     struct t2s_error *err);
void link_result_release(struct link_result *r);

/*
 * True when r relates the question to nothing in the schema: no table or
 * column named, stood in for, touched or holding a named value, no table
 * the link model named, and no column scoring LINK_UNRELATED_MAX_SCORE.
 */
bool link_relates_to_nothing(const struct link_result *r);

/*
 * The text linking and evidence read: question, then a space and evidence
 * when evidence is non-empty.  Malloc'd (caller frees); NULL when out of memory.
 */
char *link_question_text(const char *question, const char *evidence);

/* Used by link_run, exposed for tests: strict parse of a model's answer against candidate tables. */
T2S_MUST_CHECK
int link_parse_answer(const struct schema *s, const int *candidates, size_t n_candidates, const char *answer,
		      int *ret_tables, size_t *ret_n, char ***ret_unknown, size_t *ret_n_unknown);

#endif
