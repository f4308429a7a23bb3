/*
 * generate_reading.c - the built-in generator's independent reading of the
 * job's question, held against the statements a model proposed (see
 * generate_job.h).  The built-in reads the question with no model
 * (pipeline/builtin/, about a tenth of a millisecond); when it answers, its
 * statement runs once, read-only under the job's limits, and each
 * statement's result is compared with it as the vote compares candidates
 * (vote.h).  Agreement is the answer scorer's strongest single-answer
 * feature (confidence.h), and the reading, weighed by its own calibrated
 * probability, is evidence in the vote (vote.h, "Scored"); it never
 * becomes the answer here.  A
 * helper of the job: it calls no step.
 */
#include "pipeline/generate/generate_job.h"

#include "pipeline/generate/confidence_builtin.h"

#include "pipeline/generate/vote.h"
#include "pipeline/sql/exec.h"

/* Below this many milliseconds left, the reading is not worth the statement it runs. */
#define READING_MIN_TIME_MS 50.0

/* The reading's calibrated probability (confidence.h, "builtin"), or 0 without that scorer. */
static double reading_probability(const struct generate_job *j, const struct builtin_result *reading)
{
	const struct confidence_scorer *s = generate_confidence_scorer(j);
	if (!s || !s->builtin.present)
		return 0;
	struct confidence_builtin_features f;
	confidence_builtin_features(reading, &f);
	return confidence_named_probability(&s->builtin, f.values, f.n);
}

/* Read the question and run the reading's statement, once per job. */
static void read_once(struct generate_job *j)
{
	if (j->reading_done)
		return;
	j->reading_done = true;
	j->reading_why = "not_run";
	if (generate_time_left(j) < READING_MIN_TIME_MS)
		return;
	struct builtin_input in = generate_builtin_input(j);
	struct builtin_result reading = {0};
	if (builtin_generate(&in, &reading) < 0 || !reading.sql) {
		j->reading_why = "refused";
		builtin_result_release(&reading);
		return;
	}
	struct exec_limits limits = j->exec;
	limits.timeout_ms = generate_cut_to_deadline(j, limits.timeout_ms);
	struct t2s_error e = {0};
	if (exec_run(j->rq->db, reading.sql, &limits, &j->reading_rows, &e) < 0) {
		j->reading_why = "failed";
	} else {
		j->reading_ran = true;
		j->reading_why = NULL;
		j->reading_p = reading_probability(j, &reading);
	}
	builtin_result_release(&reading);
}

bool generate_reading_evidence(struct generate_job *j, const struct exec_result **ret_rows, double *ret_weight)
{
	read_once(j);
	if (!j->reading_ran || j->reading_p <= 0)
		return false;
	*ret_rows = &j->reading_rows;
	*ret_weight = j->reading_p;
	return true;
}

enum generate_crosscheck generate_reading_check(struct generate_job *j, const struct generate_try *t)
{
	if (!t->v.executed)
		return GENERATE_CROSSCHECK_NONE;
	read_once(j);
	if (!j->reading_ran)
		return GENERATE_CROSSCHECK_NONE;
	double s = vote_similarity(&j->reading_rows, &t->v.result);
	if (s < 0)
		return GENERATE_CROSSCHECK_NONE; /* out of memory comparing: no evidence either way */
	return s >= 1.0 - 1e-9 ? GENERATE_CROSSCHECK_AGREES : GENERATE_CROSSCHECK_DIFFERS;
}
