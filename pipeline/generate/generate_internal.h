/*
 * generate_internal.h - the state of one run of the main job, shared by
 * generate.c (which runs it) and generate_json.c (which renders what it
 * did).  Not for use outside pipeline/generate/.
 */
#ifndef T2S_GENERATE_INTERNAL_H
#define T2S_GENERATE_INTERNAL_H

#include "pipeline/builtin/builtin.h"
#include "pipeline/describe/describe.h"
#include "pipeline/generate/generate.h"
#include "pipeline/generate/schema_view.h"
#include "pipeline/generate/validate.h"

#include <jansson.h>

#define MAX_TRIES 64
/*
 * A step that ends this close to the deadline ran out of the time budget: a
 * model call cut to the time left times out a hair before the deadline.
 */
#define BUDGET_SLACK_MS 10.0

/* One statement the models proposed, with its validation. */
struct generate_try {
	char *reply;  /* the model's whole answer */
	char *sql;    /* NULL: none found in it */
	struct validation v;
	int round;    /* 0: first generation */
	bool outvoted; /* a first-round candidate the vote did not choose, or a statement a confirmation
			  turned down (confirm.c): never the answer */
};

/*
 * Everything one request owns while it runs, and afterwards what its
 * answer shows (generate_result.job): schema and index references, each
 * stage's result, the view shown to the model, every statement tried with
 * its validation, and the trace.  rq is borrowed: the request outlives
 * the result's rendering.
 */
struct generate_job {
	const struct generate_env *env;
	const struct generate_request *rq;
	double start, deadline;
	struct schema *schema;
	struct column_index *index;
	struct value_index *values;
	char values_state[VALUE_REGISTRY_STATE_MAX];
	bool link_ok, evidence_ok, describe_ok;
	struct link_result link;
	struct evidence_result evidence;
	struct describe_result describe;
	struct schema_view view;
	char **evidence_texts;
	struct prompt_output prompt;  /* the current prompt */
	json_t *first_prompt;         /* the first round's messages and what its prompt showed, for the trace */
	struct generate_try tries[MAX_TRIES];
	size_t n_tries;
	json_t *corrections, *model_calls, *fallbacks, *candidates;
	long prompt_tokens, completion_tokens;
	double ms_link, ms_evidence, ms_describe, ms_prompt, ms_generate, ms_validate, ms_total;
	int max_rounds, n_candidates;
	struct exec_limits exec;
	long timeout_ms;               /* the time budget: deadline - start */
	const char *stage;             /* the step running, for errors */
	const char *budget_exhausted;  /* NULL, "time" or "tokens": the budget that stopped the work */
	const struct generate_try *final; /* the answer's statement, once the run is done */
	const char *generator;         /* "model", "builtin": who wrote the answer (static); NULL until known */
	double confidence;             /* of the answer, in [0, 1] (generate.h, "Generators") */
	struct builtin_result builtin; /* the built-in generator's answer or refusal, once it ran */
	bool builtin_ran;
	json_t *reuse;                 /* the stored examples tried (reuse_answer.c), NULL when none was */
	bool reuse_asked;              /* generate_reuse ran (whether or not an example came close) */
	int64_t example_id;            /* the example that answered (0: none did); its similarity is confidence */
};

/*
 * Answer from a stored example (reuse_answer.c): the evidence's examples
 * adapted to the question (reuse.h) at generate_reuse_threshold; the first
 * whose SQL passes every blocking check becomes the job's only try and
 * *ret_answered is true.  A refused or failing example leaves no try (the
 * trace's "reuse" says why).  0, -T2S_ERR_NOMEM or validation's errors.
 */
int generate_reuse(struct generate_job *j, bool *ret_answered, struct t2s_error *err);
/* The similarity a reuse needs: the setting with a generate model, or the one without (> 1: never). */
double generate_reuse_threshold(const struct generate_env *env);

/* Validate t (its sql) as every statement is, and count it as tried; on error t's strings are freed. */
int generate_validate_try(struct generate_job *j, struct generate_try *t, struct t2s_error *err);

/*
 * The built-in generator answers the job (generate_builtin.c): its
 * statement becomes a try validated like a model's.  model_err: the
 * model's error it stands in for (NULL: no model was asked); then 0 means
 * the built-in answered and the answer's fallbacks say so, and a refusal
 * returns the model's error with the refusal added to its message.  Without
 * model_err a refusal is -T2S_ERR_GENERATION_UNAVAILABLE.  *ret_problem
 * gets {builtin: {refusal, reason}} on a refusal.
 */
int generate_builtin_answer(struct generate_job *j, const struct t2s_error *model_err, struct t2s_error *err,
			    json_t **ret_problem);
/* True for the model route's errors the built-in may stand in for (upstream, timeout, breaker open). */
bool generate_builtin_may_stand_in(int rc);
/* A model answer's confidence: its validation score (0..3) / 3, times 0.9 per failed warning. */
double generate_model_confidence(const struct validation *v);
/* Count an answer by generator (text2sqld_answers_total{generator}). */
void generate_builtin_count(const char *generator);

/*
 * Ask the stage's route ("debug" falls back to generate; first-round
 * candidates go to the candidate routes) with msgs: on success *ret is a
 * new try of the given round (reply, SQL), validated.  Model errors are
 * returned (and recorded in the trace).  generate.c.
 */
int generate_ask(struct generate_job *j, const char *stage, const struct model_message *msgs, size_t n_msgs, int round,
		 struct generate_try **ret, struct t2s_error *err);
/* Whether the time or token budget forbids another model call now (recorded in j->budget_exhausted). */
bool generate_budget_spent(struct generate_job *j);

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
int generate_confirm(struct generate_job *j, const struct generate_try *answer, struct t2s_error *err);

/* Equality of two statements with white space and case folded outside quoted strings and names (NULL equals NULL only). */
bool generate_same_sql(const char *a, const char *b);
/*
 * Append to the answer's corrections the round that made t from prev;
 * repair: the repair.h repair that made it without a model call, NULL for a
 * model's answer.  0 or -T2S_ERR_NOMEM.
 */
int generate_record_correction(struct generate_job *j, const struct generate_try *prev, const struct generate_try *t,
			       const char *repair);
/*
 * The repair prev's failed check names (repair.h), validated as a new try of
 * the given round, when there is one not tried before; *ret_repaired says
 * whether one was tried.  Negative errors only (repair.c).
 */
int generate_repair(struct generate_job *j, const struct generate_try *prev, int round, bool *ret_repaired,
		    struct t2s_error *err);

/* Model tokens (prompt + completion) every stage of the job spent so far. */
long generate_tokens_spent(const struct generate_job *j);

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
