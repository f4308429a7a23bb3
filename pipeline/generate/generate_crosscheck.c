/*
 * generate_crosscheck.c - a step of the job: the built-in generator's
 * independent reading of the question set against a model's answer.  The
 * built-in reads the question with no model (pipeline/builtin/, about a
 * tenth of a millisecond); when it answers, its statement runs read-only
 * under the job's limits, and its result is compared with the answer's
 * as the vote compares candidates (vote.h).  Agreement is the answer
 * scorer's strongest single-answer feature (confidence.h); the reading
 * never replaces the answer.
 */
#include "pipeline/generate/generate_internal.h"

#include "pipeline/generate/vote.h"
#include "pipeline/sql/exec.h"

#include <stdio.h>

/* Below this many milliseconds left, the cross-check is not worth the statement it runs. */
#define CROSSCHECK_MIN_TIME_MS 50.0

void generate_crosscheck(struct generate_job *j, const struct generate_try *final)
{
	j->crosscheck = GENERATE_CROSSCHECK_NONE;
	j->crosscheck_why = "not_run";
	if (!final->v.executed || generate_time_left(j) < CROSSCHECK_MIN_TIME_MS)
		return;
	struct builtin_input in = generate_builtin_input(j);
	struct builtin_result reading = {0};
	if (builtin_generate(&in, &reading) < 0 || !reading.sql) {
		j->crosscheck_why = "refused";
		builtin_result_release(&reading);
		return;
	}
	struct exec_limits limits = j->exec;
	limits.timeout_ms = generate_cut_to_deadline(j, limits.timeout_ms);
	struct exec_result rows = {0};
	struct t2s_error e = {0};
	if (exec_run(j->rq->db, reading.sql, &limits, &rows, &e) < 0) {
		j->crosscheck_why = "failed";
	} else {
		double s = vote_similarity(&rows, &final->v.result);
		if (s < 0) {
			j->crosscheck_why = "failed"; /* out of memory comparing: no evidence either way */
		} else {
			j->crosscheck = s >= 1.0 - 1e-9 ? GENERATE_CROSSCHECK_AGREES : GENERATE_CROSSCHECK_DIFFERS;
			j->crosscheck_why = NULL;
		}
	}
	exec_result_release(&rows);
	builtin_result_release(&reading);
}
