/*
 * generate_internal.h - the steps of the main job, which generate.c (the
 * driver, the one file that names them) runs in order: an answer reused
 * from a stored example (reuse_answer.c), the built-in generator
 * (generate_builtin.c), a failed check's own repair (repair.c), the
 * confirmation of a passing answer (confirm.c), and the stage events and
 * problem members the driver sends (generate_json.c).
 *
 * A step works on the job through generate_job.h's helpers and never calls
 * another step or the driver.  Included by generate.c and by the file
 * defining each step; not outside pipeline/generate/.
 */
#ifndef T2S_GENERATE_INTERNAL_H
#define T2S_GENERATE_INTERNAL_H

#include "common/contract.h"
#include "pipeline/generate/generate_job.h"

#include <jansson.h>

/*
 * Answer from a stored example (reuse_answer.c): the evidence's examples
 * adapted to the question (reuse.h) at generate_reuse_threshold; the first
 * whose SQL passes every blocking check becomes the job's only try and
 * *ret_answered is true.  A refused or failing example leaves no try (the
 * trace's "reuse" says why).  0, -T2S_ERR_NOMEM or validation's errors.
 */
T2S_MUST_CHECK
int generate_reuse(struct generate_job *j, bool *ret_answered, struct t2s_error *err);
/* The similarity a reuse needs: the setting with a generate model, or the one without (> 1: never). */
double generate_reuse_threshold(const struct generate_env *env);

/*
 * The built-in generator answers the job (generate_builtin.c): its
 * statement becomes a try validated like a model's.  model_err: the
 * model's error it stands in for (NULL: no model was asked); then 0 means
 * the built-in answered and the answer's fallbacks say so, and a refusal
 * returns the model's error with the refusal added to its message.  Without
 * model_err a refusal is -T2S_ERR_BUILTIN_REFUSED (422).  *ret_problem
 * gets {builtin: {refusal, reason}} on a refusal.
 */
T2S_MUST_CHECK
int generate_builtin_answer(struct generate_job *j, const struct t2s_error *model_err, struct t2s_error *err,
			    json_t **ret_problem);
/* True for the model route's errors the built-in may stand in for (upstream, timeout, breaker open). */
bool generate_builtin_may_stand_in(int rc);
/*
 * The answer's confidence and band (generate_score.c): a model's answer
 * (j->generator NULL, then set to "model") is scored by the answer scorer
 * (confidence.h) on its features, the built-in's reading held against it
 * (j->crosscheck); the built-in's and a stored example's keep the
 * confidence they came with.  Counts the confidence in
 * text2sqld_answer_confidence{generator}.
 */
void generate_score(struct generate_job *j, const struct generate_try *final);
/*
 * Whether t, a statement a model proposed, would be answered with a
 * confidence in the high band already (generate_score.c): then no further
 * candidate or confirmation turn is asked.  May run the built-in's reading.
 */
bool generate_is_high(struct generate_job *j, const struct generate_try *t);
/* The scorer's probability that t, as the answer, is right; -1 without a scorer or when t did not run. */
double generate_probability(struct generate_job *j, const struct generate_try *t);
/* Count an answer by generator (text2sqld_answers_total{generator}). */
void generate_builtin_count(const char *generator);

/*
 * A second reading of an answer that passed every check, asked only where
 * a passing answer is most often wrong (confirm.c): when answer is a set
 * operation (UNION / INTERSECT / EXCEPT), was not corrected by a model, and
 * the request has one candidate and correction rounds, the debug model is
 * shown it and asked to confirm it or correct it (one model call).  A
 * confirmation, a statement failing a blocking check or one whose result
 * equals the answer's ends there: the answer stands.  A passing statement
 * with another result takes a second call, asking the model to choose
 * between the two; the other statement becomes the answer only when that
 * third one's result equals it and not the first answer's (a majority of
 * the three); the statements not chosen are marked outvoted.  At most
 * options.confirm_calls calls (0: never).  0, -T2S_ERR_NOMEM or
 * validation's errors; a failing model ends the confirmation quietly.
 */
T2S_MUST_CHECK
int generate_confirm(struct generate_job *j, const struct generate_try *answer, struct t2s_error *err);

/*
 * The repair prev's failed check names (repair.h), validated as a new try of
 * the given round, when there is one not tried before; *ret_repaired says
 * whether one was tried.  Negative errors only (repair.c).
 */
T2S_MUST_CHECK
int generate_repair(struct generate_job *j, const struct generate_try *prev, int round, bool *ret_repaired,
		    struct t2s_error *err);

/* The stage events of the observer (generate.h) and the trace's parts; each a new reference. */
json_t *generate_link_json(const struct generate_job *j);
json_t *generate_evidence_json(const struct generate_job *j);
json_t *generate_describe_json(const struct generate_job *j);
/* The built-in generator's run: {shape, refusal, reason, confidence, ms}. */
json_t *generate_builtin_json(const struct generate_job *j);
/* A statement tried: {round, sql, ok, score, validation}. */
json_t *generate_try_json(const struct generate_try *t);
/* The extension members of a failed run's problem: {sql, validation, corrections, model_calls, budget_exhausted}. */
json_t *generate_failure_json(const struct generate_job *j, const struct generate_try *final);

#endif
