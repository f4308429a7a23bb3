/*
 * link_internal.h - what the files of the linking stage share (pipeline/link/
 * only, never included from outside): the working state of one run, the
 * question's hash keys, and the steps link_run (link.c) takes in turn.
 */
#ifndef T2S_LINK_INTERNAL_H
#define T2S_LINK_INTERNAL_H

#include "common/contract.h"
#include "pipeline/link/link.h"
#include "pipeline/text/lexicon.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Question-side lexical expansion (pipeline/text/lexicon.h): the question's
 * lexical vector is v(question) + NEAR_WEIGHT * v(near words) + FAR_WEIGHT *
 * v(hypernyms), normalised, so that a word the question says outranks one
 * it only implies.  Tuned on spider-train (see pipeline/link/README.md).
 * Four senses per question word: a paraphrase often uses a word in its
 * third or fourth sense ("point" for an item of a list); 5 sent more
 * columns for less.
 */
#define QUESTION_SENSES 4
#define QUESTION_NEAR_WEIGHT 0.5
#define QUESTION_FAR_WEIGHT 0.2

/* Working state of one run. */
struct run {
	struct column_index *idx;
	const struct schema *s;
	const struct link_params *p;
	double *col_score;   /* per flat column */
	double *table_score; /* per table: best column score */
	int *table_best;     /* per table: flat index of its best column */
	unsigned *table_reason;
	int *table_votes;
	unsigned *col_reason;
	bool *table_whole;   /* per table: brings its columns whole (see "Columns" in link.h) */
	bool *table_low;     /* per table: named by the model in too few answers */
	int answers;         /* link model calls that answered */
	bool model_named;    /* the answers named at least one candidate table */
	int llm_http_status; /* HTTP status of the link model call whose error is reported */
	char *related;       /* schema words standing in for the question's orphan words (related_words.h) */
	unsigned char *col_mention; /* per flat column: enum mention, or MENTION_STAND_IN (link_mentions.c) */
	bool *table_named;   /* per table: the question names it (link_name_mentioned) */
	bool *table_by_score; /* per table: required by the score rule alone (link_select_by_retrieval) */
	const char *far;      /* the question's far words (lexicon_expansion.far; the table scorer reads them) */
	struct link_relevance relevance; /* the result's (link.h) */
};

/*
 * The question's words as hash keys: a column word matches when it is one of
 * them, or one of them minus a short ending (question "teacher", column
 * "teach"), or it is one of them plus a short ending.
 */
struct question_keys {
	struct link_word_key *v;
	size_t n;
	/* Hash sets (open addressing, 0 = empty) so that a test costs O(1) however many
	   words the expansion adds: every key's h; the h of keys of 4+ letters; their h1, h2. */
	uint64_t *all, *longer, *prefixes, *truncated;
	size_t mask;
};

enum mention { MENTION_NONE, MENTION_PART, MENTION_FULL };
#define MENTION_STAND_IN 3 /* run.col_mention: a stand-in of an orphan word names the column */

/* ---- link_retrieval.c ---- */

/* Score every column (r->col_score) and table (best column) against the question. */
T2S_MUST_CHECK
int link_score_columns(struct run *r, const char *question, const struct lexicon_expansion *x,
		       const struct model_endpoint *embed_model, struct link_result *res, struct t2s_error *err);
/* qsort_r comparator of indexes by score (ctx: double[]) descending, ties by index. */
int link_cmp_desc(const void *a, const void *b, void *ctx);
/* Indexes 0..n-1 sorted by score descending (ties by index); caller frees. */
int *link_rank(const double *score, size_t n);
/* Required tables and columns from retrieval alone (rq->question: with its near words). */
T2S_MUST_CHECK
int link_select_by_retrieval(struct run *r, const struct link_request *rq, const char *original);
/* Columns and tables the question's values, numbers and dates point at. */
T2S_MUST_CHECK
int link_select_by_values(struct run *r, const struct link_request *rq);

/* ---- link_mentions.c ---- */

/* Open-addressing hash set of non-zero hashes (mask + 1 slots, 0 = empty). */
void link_set_add(uint64_t *set, size_t mask, uint64_t h);
bool link_set_has(const uint64_t *set, size_t mask, uint64_t h);
/* The keys of a NULL-terminated word list; released by link_question_keys_release. */
T2S_MUST_CHECK
int link_question_keys_make(char **words, struct question_keys *ret);
void link_question_keys_release(struct question_keys *q);
/* True when a word of table t's name is among the question's words. */
bool link_name_mentioned(const struct run *r, int t, const struct question_keys *q);
/* How the question names flat column col (see enum mention). */
enum mention link_column_mentioned(const struct run *r, size_t col, const struct question_keys *q,
				   char **all_words);
/* Columns the question names, and the tables of those held by at most two tables. */
T2S_MUST_CHECK
int link_select_mentioned_columns(struct run *r, const struct question_keys *q, char **all_words);
/* Tables and columns the stand-ins of the question's orphan words name. */
T2S_MUST_CHECK
int link_select_by_stand_ins(struct run *r, const char *question, char **all_words, int *named);
/* Tables and columns a word of whose name is a question word or begins with one (link_relevance.touched). */
int link_count_touched(const struct run *r, const struct question_keys *q);
/* "question near words" (malloc'd; NULL when out of memory). */
char *link_question_with(const char *question, const char *near);

/* ---- link_tables.c ---- */

/* The learned table scorer (link_scorer.h) over the tables the firm rules did not require; with
   rq->features, res->table_candidates.  0 or -T2S_ERR_NOMEM. */
T2S_MUST_CHECK
int link_select_by_table_scorer(struct run *r, const struct link_request *rq, struct link_result *res);

/* ---- link_columns.c ---- */

/* The columns of the required tables (keys, labels, small and whole tables, the scorer's fill within the
   token budget); with rq->features, res->candidates. */
T2S_MUST_CHECK
int link_select_columns(struct run *r, const struct link_request *rq, struct link_result *res);
/* Over llm_column_budget_tokens, drop columns brought whole (see "Column budget" in link.h). */
T2S_MUST_CHECK
int link_apply_column_budget(struct run *r, const struct link_request *rq, struct link_result *res);
/* Bytes of the columns linked so far (their lines in the generator's CREATE TABLE). */
size_t link_linked_bytes(const struct run *r);

/* ---- link_llm.c ---- */

/* The link model's votes over the candidate tables, r->p->shuffles calls at once. */
T2S_MUST_CHECK
int link_with_model(struct run *r, const struct link_request *rq, const struct model_endpoint *ep,
		    struct link_result *res, struct t2s_error *err);

/* ---- link_scaffold.c ---- */

/* The Steiner tree over the required tables: joins, bridges, disconnected terminals. */
T2S_MUST_CHECK
int link_steiner_step(struct run *r, struct link_result *res, struct t2s_error *err);
/* The result's tables (best score first) and columns. */
T2S_MUST_CHECK
int link_assemble(struct run *r, struct link_result *res);

#endif
