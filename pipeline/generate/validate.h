/*
 * validate.h - the three levels of checks on a generated statement
 * (SteinerSQL's validation, LitE-SQL's gold-free wrongness tests).
 *
 *   1 executability   statement_present, statement_allowed (one read-only
 *                     statement: the guards of pipeline/sql), names_resolve
 *                     (the database prepares / EXPLAINs it), executes (runs
 *                     within the time limit);
 *   2 semantics       (semantics.h) joins follow edges of the schema graph,
 *                     every table of a query block is joined, GROUP BY
 *                     consistent with the select list, aggregates where legal,
 *                     tables outside the linked schema flagged;
 *   3 result sanity   result_not_empty, first_value_meaningful (the first
 *                     row not all 0, NULL or ''), rows_not_all_null,
 *                     row_count_plausible (no more rows than the joined
 *                     tables' sizes allow).  An empty result, or a one-row
 *                     result of nothing but 0 / NULL, is judged by the
 *                     string literals the statement compares with columns
 *                     (level 2 lists them), each probed on the database
 *                     (pipeline/values/value_probe.h): one that is not a
 *                     stored value fails the check, naming the literal and
 *                     the stored spelling a case-insensitive probe finds;
 *                     when every literal is stored (and, for 0 / NULL, the
 *                     statement filters at all) the answer is plausible and
 *                     passes; so is an empty result of groups filtered by
 *                     HAVING (a count of something that may not exist).
 *                     Any other empty result fails.
 *                     Then the result against the statement and the
 *                     question: question_checks.h (rows_not_repeated,
 *                     references_not_repeated, count_answered_by_one_row,
 *                     each_answered_per_group).
 *
 * Each check is reported as {level, check, ok, blocking, detail}.  A failed
 * blocking check makes the statement wrong and is sent to the debug model;
 * a failed non-blocking check is a flag for the reader (a warning).  Levels
 * stop at the first that fails blocking: a statement that does not run is
 * not judged on its result.
 *
 * The report and the kernel the checks append with are validation.h's
 * (validation.c).  validate_sql is the one way to run the checks: it alone
 * names the levels (semantics.h, question_checks.h); it is called by the
 * main job's steps that try a statement (generate_try.c, reuse_answer.c).
 */
#ifndef T2S_GENERATE_VALIDATE_H
#define T2S_GENERATE_VALIDATE_H

#include "common/contract.h"
#include "pipeline/generate/validation.h"

/*
 * Check sql (NULL: the model gave no statement) at every level.  *ret is
 * filled on 0 and released with validation_release.  Fails only for
 * -T2S_ERR_NOMEM or when the database cannot be reached
 * (-T2S_ERR_UNAVAILABLE); a bad statement is a result, not an error.
 */
T2S_MUST_CHECK
int validate_sql(const struct validate_context *cx, const char *sql, struct validation *ret, struct t2s_error *err);

#endif
