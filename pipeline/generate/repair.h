/*
 * repair.h - the repairs a failed check names, made without a model call.
 *
 * A check that can say exactly how its statement is wrong can also say how
 * to right it.  Today one: rows_not_repeated and references_not_repeated
 * (question_checks.c) find rows the statement's one top-level SELECT repeats
 * (a join repeating the one side, foreign keys listed once per referencing
 * row; validation.rows_repeated); the repair is that SELECT made DISTINCT.
 * The correction rounds (generate.c) validate a repair like any statement
 * before a model is asked, and it takes no round.  Not when the result is
 * one row repeated: the select list then shows the filtered thing itself
 * once per joined row, the wrong side of the join, which DISTINCT would
 * hide.  Measured on real models' answers, 108 of the 146 statements flagged
 * so whose result is not one row repeated become right, none of the 9 that
 * are (pipeline/generate/README.md).
 *
 * The second: result_not_empty or first_value_meaningful failed on a literal
 * that is not stored while one stored value, and only one, spells its letters
 * and digits ('North Carolina' for the stored 'NorthCarolina', 'Dog' for
 * 'dog'; validation.stored_spelling); the repair is the statement with that
 * value in the literal's place.  Measured on real models' answers, 37 of
 * the 51 statements so flagged become right, 1 right one (an empty answer
 * the gold spells so) becomes wrong (pipeline/generate/README.md).
 *
 * Pure text work: nothing here knows the database, logs or keeps state.
 */
#ifndef T2S_GENERATE_REPAIR_H
#define T2S_GENERATE_REPAIR_H

#include "common/contract.h"
#include "common/error.h"

/*
 * sql with DISTINCT after its leading SELECT into *ret_sql (the caller
 * frees it), or *ret_sql = NULL when sql does not open with a plain SELECT
 * (leading whitespace allowed; SELECT DISTINCT or SELECT ALL is left
 * alone).  0 or -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int repair_distinct(const char *sql, char **ret_sql);

/*
 * sql with every quoted string whose text is literal ('...' or "...",
 * doubled quotes read as one) written as the SQL string 'spelling' into
 * *ret_sql (the caller frees it), or *ret_sql = NULL when none is.
 * 0 or -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int repair_stored_value(const char *sql, const char *literal, const char *spelling, char **ret_sql);

#endif
