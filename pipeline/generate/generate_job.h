/*
 * generate_job.h - the state of one run of the main job (struct
 * generate_job, its statements tried) and the helpers every step of the
 * job shares: the job's life (generate_job.c: set up, budgets, the trace's
 * fallbacks, released in one place) and its statements (generate_try.c: a
 * model asked for one, one validated and counted, two compared, a
 * correction recorded).
 *
 * The bottom of pipeline/generate/'s job files: these helpers call no step
 * of the job (generate_internal.h) and not the driver (generate.c); the
 * steps and the driver call them.  Included by the files of
 * pipeline/generate/ that work on a job (generate.c, its steps, the JSON
 * rendering) and by the unit tests; not outside pipeline/generate/ (the
 * rest of the service sees a struct generate_result, generate.h).
 */
#ifndef T2S_GENERATE_JOB_H
#define T2S_GENERATE_JOB_H

#include "common/contract.h"
#include "pipeline/builtin/builtin.h"
#include "pipeline/describe/describe.h"
#include "pipeline/generate/confidence.h"
#include "pipeline/generate/confidence_builtin.h"
#include "pipeline/generate/generate.h"
#include "pipeline/generate/schema_view.h"
#include "pipeline/generate/validation.h"

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
	double logprob_sum;  /* the reply's token log-probabilities summed, when the server returned them */
	long logprob_tokens; /* how many it returned (0: none) */
};

/* What the built-in generator's independent reading says of a model's answer (generate_reading.c). */
enum generate_crosscheck {
	GENERATE_CROSSCHECK_NONE,    /* not run, refused, or its statement did not run */
	GENERATE_CROSSCHECK_AGREES,  /* its result equals the answer's */
	GENERATE_CROSSCHECK_DIFFERS, /* its result differs */
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
	enum generate_crosscheck crosscheck; /* the built-in's reading against a model's answer */
	bool reading_done, reading_ran;   /* the built-in's reading was tried / its statement ran (generate_reading.c) */
	struct exec_result reading_rows;  /* its result, when it ran */
	const char *reading_why;          /* static: why there is none ("refused", "not_run", "failed"), else NULL */
	double reading_p;                 /* its calibrated probability (confidence.h, "builtin"); 0 unscored */
	double confidence_features[CONFIDENCE_FEATURES]; /* of a model's answer (confidence_features.h) */
	const struct confidence_scorer *scorer; /* that scored the answer (features set); NULL: not scored */
	bool builtin_scored;            /* the built-in's reading was scored (confidence.h, "builtin") */
	double builtin_p, builtin_threshold; /* its probability and the threshold it was held to */
	struct confidence_builtin_features builtin_features; /* its features, when scored */
	const char *confidence_band;   /* "high", "medium" or "low" (static), once the answer is known */
};

/* ---- the job's life (generate_job.c) ------------------------------------------ */

/*
 * Start j for rq under env (both borrowed, outliving j): the time budget
 * from now, rounds and candidates within MAX_TRIES, the statements' limits,
 * the trace's arrays, the schema of rq's database.  Whatever the outcome j
 * is released with generate_job_release.  0, -T2S_ERR_NOMEM or the
 * catalog's error.
 */
T2S_MUST_CHECK
int generate_job_init(struct generate_job *j, const struct generate_env *env, const struct generate_request *rq,
		      struct t2s_error *err);
/* Free everything j owns (not j itself); the one place a job is freed. */
void generate_job_release(struct generate_job *j);

/* Milliseconds left before the job's deadline (negative once past it). */
double generate_time_left(const struct generate_job *j);
/* limit_ms (<= 0: none) cut to the time left, at least 1 ms. */
long generate_cut_to_deadline(const struct generate_job *j, long limit_ms);
/* Model tokens (prompt + completion) every stage of the job spent so far. */
long generate_tokens_spent(const struct generate_job *j);
/*
 * Whether the time or token budget forbids another model call now; the
 * first budget found spent is recorded in j->budget_exhausted (and the
 * trace's fallbacks, under j->stage).
 */
bool generate_budget_spent(struct generate_job *j);
/* Add {stage, reason} to the trace's fallbacks (both copied). */
void generate_add_fallback(struct generate_job *j, const char *stage, const char *reason);
/* The answer scorer the job uses: generate.confidence_file's, else the embedded one (NULL only if that fails to parse). */
const struct confidence_scorer *generate_confidence_scorer(const struct generate_job *j);
/* The built-in generator's input for j's question (every pointer borrowed from j). */
struct builtin_input generate_builtin_input(const struct generate_job *j);

/* ---- the built-in's independent reading (generate_reading.c) --------------------- */

/*
 * What the built-in generator's reading of the question says of t, a
 * statement tried: AGREES when its result equals t's, DIFFERS when not,
 * NONE when t did not run or there is no reading (refused, its statement
 * failed, too little time left: j->reading_why says which).  The reading
 * and its statement run on the first call only (read-only, under the job's
 * limits); never fails the job.
 */
enum generate_crosscheck generate_reading_check(struct generate_job *j, const struct generate_try *t);
/*
 * The reading as evidence for the vote (vote.h, "Scored"): its result
 * (borrowed, the job's until it ends) and its calibrated probability as
 * the weight.  False when there is none or it was not scored.
 */
bool generate_reading_evidence(struct generate_job *j, const struct exec_result **ret_rows, double *ret_weight);

/* ---- the statements tried (generate_try.c) ------------------------------------- */

/*
 * Ask the stage's route ("debug" falls back to generate; first-round
 * candidates go to the candidate routes) with msgs: on success *ret is a
 * new try of the given round (reply, SQL), validated.  Model errors are
 * returned (and recorded in the trace); -T2S_ERR_INTERNAL when MAX_TRIES
 * statements were tried.
 */
T2S_MUST_CHECK
int generate_ask(struct generate_job *j, const char *stage, const struct model_message *msgs, size_t n_msgs, int round,
		 struct generate_try **ret, struct t2s_error *err);
/*
 * Validate t, the job's next try (&j->tries[j->n_tries], its reply and sql
 * set), as every statement is, and count it as tried.  On error t's strings
 * are freed and it is not counted.
 */
T2S_MUST_CHECK
int generate_validate_try(struct generate_job *j, struct generate_try *t, struct t2s_error *err);
/* Equality of two statements with white space and case folded outside quoted strings and names (NULL equals NULL only). */
bool generate_same_sql(const char *a, const char *b);
/* Both statements ran and their results are equal as the vote compares them (vote.h). */
bool generate_same_result(const struct generate_try *a, const struct generate_try *b);
/*
 * Append to the answer's corrections the round that made t from prev (a
 * statement that failed a blocking check); repair: the repair.h repair that
 * made it without a model call, NULL for a model's answer.  0 or
 * -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int generate_record_correction(struct generate_job *j, const struct generate_try *prev, const struct generate_try *t,
			       const char *repair);

#endif
