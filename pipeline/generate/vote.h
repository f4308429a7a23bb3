/*
 * vote.h - choosing among a question's first-round candidates by what
 * their results agree on (self-consistency, soft consensus as in Snowflake's
 * "Query and Conquer", 2025).
 *
 * Comparing two results.  A result is read as a multiset of rows, whatever
 * their order.  Cells are compared by value: an integral real equals the
 * integer (2.0 = 2), other reals are rounded to 6 significant digits (float
 * noise of sums and averages), a string that is wholly a number is that
 * number (PostgreSQL's numeric and big integers arrive as text), NULL
 * equals NULL only.  Columns are matched by content, not by position or
 * name: each column of one result is paired with the column of the other
 * whose values it shares most (multiset Jaccard), greedily, best pairs
 * first, the nearer position first among equals.  The similarity is
 *
 *     rows_jaccard(projected on the paired columns) * paired / max(columns_a, columns_b)
 *
 * so that equal results score 1, a result that adds or drops a column of an
 * otherwise equal one scores paired/max (partial credit), and results that
 * share no value score 0.  Two empty results score paired/max too (the
 * columns are then paired by position).  When both statements sort their
 * result (ORDER BY), the order is part of the answer: equal rows in a
 * different sequence (on the paired columns) score 0, different answers.
 *
 * Choosing.  Each candidate has a weight from its validation: 1 when every
 * blocking check passed, VOTE_FLAGGED_WEIGHT when a level-2 or level-3 blocking
 * check failed (the measured ratio P(right | flagged) / P(right | not
 * flagged), pipeline/generate/README.md), 0 when it did not run (it neither votes nor is voted for);
 * each failed warning multiplies it by WARNING_FACTOR.  A candidate's
 * consensus is the weighted sum of the similarities of every candidate's
 * result to its own, itself included:
 *
 *     consensus(i) = sum over j of weight(j) * similarity(i, j)
 *
 * With every weight 1 and only equal or unrelated results this is plain
 * majority voting (the size of the candidate's group).  The winner has the
 * highest consensus; ties (within 1e-9) go to the higher validation score,
 * then the fewer warnings, then the earlier candidate (candidate 0 is the
 * model's first, greedy answer, or the first endpoint's).
 *
 * Scored.  When the answer scorer (confidence.h) has given every candidate
 * that ran its probability of being right, that probability is its weight
 * instead (its validation and warnings are features of it), so a result
 * class weighs what its members are worth; ties go to the more probable
 * candidate first.  Evidence that is no candidate (the built-in generator's
 * independent reading of the question, generate_reading.c) adds its weight
 * times its similarity to each candidate's consensus; it counts no vote.
 *
 * Repeats.  A candidate flagged because its result repeats rows that its
 * SELECT DISTINCT would not (validation.rows_repeated: a join repeating the
 * one side, foreign keys listed once per referencing row) says, without the
 * repeats, which rows answer.  Its voice for each fully valid candidate is
 * VOTE_REPAIRED_WEIGHT times the similarity of that candidate's result to its
 * own rows taken once each (the measured ratio P(right | the flagged answer
 * made DISTINCT) / P(right | not flagged), pipeline/generate/README.md); for
 * the others, and as a candidate itself, it keeps its flagged weight; so
 * also when its rows are one row repeated (the select list shows the
 * filtered thing once per joined row: DISTINCT does not repair that).
 *
 * Nothing here allocates beyond the call, logs or knows JSON beyond the
 * cells of struct exec_result.  Thread-safe (no shared state).
 */
#ifndef T2S_GENERATE_VOTE_H
#define T2S_GENERATE_VOTE_H

#include "common/contract.h"
#include "common/error.h"
#include "pipeline/sql/exec.h"

/* The weight of a candidate that failed a blocking check of level 2 or 3 (see "Choosing"). */
#define VOTE_FLAGGED_WEIGHT 0.1
/* The voice of a candidate flagged for repeated rows, for what its rows say without the repeats (see "Repeats"). */
#define VOTE_REPAIRED_WEIGHT 0.8

#include <stdbool.h>
#include <stddef.h>

/* One candidate as the vote sees it; all borrowed. */
struct vote_candidate {
	const struct exec_result *result; /* NULL: it did not run */
	int score;                        /* validation score, 0..3 (validate.h) */
	int warnings;                     /* failed non-blocking checks */
	bool ordered;                     /* the statement sorts its result (a top-level ORDER BY) */
	bool repeats;                     /* flagged for repeated rows that SELECT DISTINCT repairs (see "Repeats") */
	bool scored;                      /* probability is the answer scorer's (see "Scored") */
	double probability;               /* P(right) when scored */
};

/* A result that supports candidates without being one (see "Scored"); borrowed. */
struct vote_evidence {
	const struct exec_result *result;
	double weight;
};

/* What the vote found about one candidate. */
struct vote_tally {
	double weight;    /* its voice: 1, lower when flagged or warned, 0 when it did not run */
	double consensus; /* weighted similarity of every candidate's result to its own, itself included */
	int votes;        /* candidates that ran whose result equals its own, itself included; 0 when it did not run */
};

/*
 * Similarity of two results in [0, 1] (see above); 1 for equal results.
 * Returns -T2S_ERR_NOMEM (as a negative number) when out of memory.
 */
double vote_similarity(const struct exec_result *a, const struct exec_result *b);

/*
 * Tally n candidates, with n_evidence results of evidence (ev may be NULL
 * when n_evidence is 0), into ret_tally[0..n) and set *ret_winner to the
 * chosen one's index (n when none ran).  0 or -T2S_ERR_NOMEM (then the
 * outputs are unspecified).
 */
T2S_MUST_CHECK
int vote_select(const struct vote_candidate *c, size_t n, const struct vote_evidence *ev, size_t n_evidence,
		struct vote_tally *ret_tally, size_t *ret_winner);

#endif
