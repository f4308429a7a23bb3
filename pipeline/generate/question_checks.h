/*
 * question_checks.h - level-3 checks that compare the result's shape with
 * the statement and with what the question asks for (issue 16: wrong
 * answers that execute and look plausible).
 *
 *   rows_not_repeated          the result repeats rows while its one
 *                              top-level block joins two or more relations
 *                              without DISTINCT or GROUP BY: the join
 *                              repeats each row once per matching row of
 *                              the joined table (blocking);
 *   references_not_repeated    the result repeats rows while the block reads
 *                              one relation, without DISTINCT or GROUP BY,
 *                              and shows only declared foreign keys: the
 *                              referenced things listed once per referencing
 *                              row (blocking);
 *   count_answered_by_one_row  the question opens by asking how many (the
 *                              number of ...) and not per thing, yet the
 *                              statement, without GROUP BY, returns several
 *                              rows: values listed where one count or sum
 *                              is asked for (blocking);
 *   each_answered_per_group    the question asks for something for each /
 *                              per thing, yet the statement, without GROUP
 *                              BY, returns one row (blocking);
 *   groups_named               the top-level block groups and shows only
 *                              aggregates, and returns several rows: values
 *                              per group with nothing saying which group
 *                              (blocking);
 *   average_computed           the question says "average" / "mean", yet no
 *                              block calls avg() and no column read is named
 *                              as an average (avg, average, mean) (blocking);
 *   order_direction_asked      the question asks for one end of a scale
 *                              ("highest", "most" / "lowest", "fewest"; not
 *                              "at least", "at most"), yet no block's ORDER
 *                              BY ... LIMIT runs that way; or it asks for the
 *                              list in one order ("descending", "from high
 *                              to low" / "ascending", ...), yet the
 *                              top-level ORDER BY has no key that way
 *                              (blocking).
 *
 * The question is read by lower-cased word matching against one table of
 * English cue phrases (question_checks.c); no dataset's tables or values.
 * The question checks are skipped when the validate_context has no
 * question; all but average_computed and order_direction_asked when level
 * 2 could not tell the top-level block's shape (set operations, CTEs), and
 * all when it could not analyse the statement.
 */
#ifndef T2S_GENERATE_QUESTION_CHECKS_H
#define T2S_GENERATE_QUESTION_CHECKS_H

#include "common/contract.h"
#include "pipeline/generate/validation.h"
#include "pipeline/text/question_cues.h"

#include <stdbool.h>

/*
 * Append the checks above for v's executed result (v->executed, v->top_*
 * from level 2).  0 or -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int question_checks(const struct validate_context *cx, struct validation *v);

#endif
