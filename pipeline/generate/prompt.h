/*
 * prompt.h - the generator's prompt, from the linked schema, the join
 * scaffold, evidence, examples and the conversation.
 *
 * Profiles:
 *   "default"   a system message (which offers the model reply.h's sentinel for
 *               a question the database cannot answer) and one user message: the linked schema as
 *               CREATE TABLE statements (descriptions and a few sample values
 *               as comments, primary and foreign keys), the join scaffold,
 *               evidence with values spelled as stored, the user's evidence,
 *               similar examples as question/SQL pairs, the conversation so
 *               far, dialect notes, the question, and the instruction to
 *               answer with one statement in a ```sql fence;
 *   "lite-sql"  the format LitE-SQL's fine-tuned generator was trained on:
 *               one user message, "### Question", then "### Database" with
 *               "-- Tables and Columns" lines
 *               `table.column = {type, primary_key, values (...), description, comment}`,
 *               "-- Foreign Keys" lines `a.x = b.y`, then "-- Evidence".
 *
 * Token budget: tokens are estimated as bytes / 4, rounded up (common/tokens.h; BPE
 * tokenizers average about four bytes per token on English and SQL; the
 * estimate errs high on identifiers).  The prompt must fit context_tokens
 * minus answer_tokens.  Over budget, columns are dropped lowest score first,
 * never key columns (primary, foreign, join endpoints) nor columns marked
 * keep, and never a table; then examples, oldest conversation turns, and
 * sample values.  What was dropped is reported; a prompt that still does not
 * fit is built anyway and flagged over_budget.
 */
#ifndef T2S_GENERATE_PROMPT_H
#define T2S_GENERATE_PROMPT_H

#include "common/contract.h"
#include "common/error.h"
#include "pipeline/db/schema.h"

#include <stdbool.h>
#include <stddef.h>

struct prompt_table {
	int table;               /* index into schema->tables */
	const char *description; /* NULL: none */
};

struct prompt_column {
	int table, column;       /* indexes into the schema */
	double score;            /* linking score: the lowest go first over budget */
	bool key;                /* primary/foreign key or join endpoint: never dropped */
	bool keep;               /* the question names it or its values: never dropped */
	const char *description; /* NULL: none */
};

struct prompt_join {
	int left_table, left_column, right_table, right_column;
};

struct prompt_pair {
	const char *question, *sql;
};

struct prompt_input {
	const struct schema *schema;
	const char *profile;   /* "default" (NULL) or "lite-sql" */
	const char *question;
	const char *user_evidence; /* NULL: none */
	const struct prompt_table *tables;
	size_t n_tables;
	const struct prompt_column *columns; /* of the tables above, in any order */
	size_t n_columns;
	const struct prompt_join *joins;
	size_t n_joins;
	const char *const *evidence; /* evidence sentences */
	size_t n_evidence;
	const struct prompt_pair *examples; /* best first */
	size_t n_examples;
	const struct prompt_pair *history;  /* oldest first */
	size_t n_history;
	int sample_values;     /* per column */
	long context_tokens;   /* <= 0: no budget */
	long answer_tokens;    /* kept free for the answer */
};

struct prompt_output {
	char *system;          /* malloc'd; NULL for profiles without one */
	char *user;            /* malloc'd */
	long estimated_tokens; /* of system + user */
	long budget_tokens;    /* context_tokens - answer_tokens; 0: none */
	bool over_budget;
	size_t columns_shown, columns_dropped;
	size_t examples_shown, examples_dropped;
	size_t history_shown, history_dropped;
	bool samples_dropped;
	bool *column_shown;    /* malloc'd, n_columns entries: was input column i rendered */
};

/* Estimated tokens of text (bytes / 4, rounded up). */
long prompt_estimate_tokens(const char *text);

/*
 * Build the prompt.  On success *ret holds malloc'd texts (release with
 * prompt_output_release).  Errors: -T2S_ERR_INVALID (unknown profile, index
 * out of range), -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int prompt_build(const struct prompt_input *in, struct prompt_output *ret, struct t2s_error *err);
void prompt_output_release(struct prompt_output *o);

#endif
