/*
 * generate.h - the main job: a question in, validated SQL (and, for /query,
 * its rows) out.  One call composes every stage:
 *
 *   link (tables, columns, Steiner scaffold; the user's evidence is read as
 *   part of the question) -> evidence (values spelled as stored, examples) ->
 *   descriptions (describe model or overrides) -> prompt (prompt.h, within
 *   the generate model's token budget) -> generate model (model_route.h:
 *   breaker and fallback) -> validation at three levels (validate.h) ->
 *   correction rounds with the debug model (the previous SQL as the
 *   assistant's turn, then the error and the failing check), widening the
 *   schema shown where the database names an unknown table or column, and
 *   re-planning the scaffold where level 2 blames the joins.
 *
 * The final statement is the best tried: the highest validation score,
 * the latest among equals.  The loop stops when every blocking check
 * passes, when max_rounds corrections were made, or when the debug model
 * repeats a statement already tried (it stands by it).  With candidates > 1
 * the first round samples that many statements (candidate k from
 * candidate_routes[k % n] when the config lists several generate models,
 * else from the generate route) and the soft consensus of their results
 * chooses one (vote.h); the candidates it passed over are never the answer,
 * a correction of the chosen one may be.  A check naming its own repair
 * (repair.h) is answered by it before any debug call.  With one candidate,
 * a passing set-operation answer is confirmed by the debug model within
 * options.confirm_calls (generate_confirm, generate_internal.h).
 *
 * The answer is a struct generate_result, rendered as the response body
 * by generate_json.h (the trace holds every stage's result as that stage's
 * own renderer writes it).  The answer cache is the service layer's
 * (pipeline/pipeline.h), not this stage's.
 *
 * Budgets.  Every stage runs within the request's time budget (timeout_ms):
 * each model call is cut to the time left (model_route.h's
 * model_endpoint_fit), each validation statement and evidence probe to the
 * time left.  Model tokens (prompt + completion, every stage's calls) are
 * counted against options.token_budget.  When a budget stops the work, no
 * further candidate or correction round is asked, the best statement so far
 * is the answer, with "budget_exhausted": "time" or "tokens" (null
 * otherwise), and text2sqld_budget_exhausted_total{kind} counts it.  When
 * the time budget runs out before any executable statement, the error is
 * -T2S_ERR_TIMEOUT (504) naming the stage, and *ret_problem holds
 * {"budget_exhausted": "time"}.  An answer a budget cut short is not cached.
 *
 * Errors: -T2S_ERR_GENERATION_UNAVAILABLE (the model asked for, none
 * configured), -T2S_ERR_BUILTIN_REFUSED (the built-in refuses, no model
 * stands in),
 * -T2S_ERR_GENERATION_FAILED (no executable read-only statement was
 * reached; *ret_problem then holds the extension members sql, validation,
 * corrections), the model route's errors for the first generation
 * (-T2S_ERR_UPSTREAM, -T2S_ERR_UPSTREAM_TIMEOUT, -T2S_ERR_UNAVAILABLE),
 * the catalog's for the database, -T2S_ERR_NOMEM, -T2S_ERR_CANCELLED (the
 * observer asked to stop), and -T2S_ERR_UNANSWERABLE (below).
 *
 * Stored examples.  Before the first generate model call, the evidence's
 * examples are adapted to the question (reuse.h: the example's SQL with its
 * literals replaced by the question's values); one whose masked question is
 * at least options.reuse_min_similarity alike (without a generate model:
 * reuse_min_similarity_no_model) and whose SQL passes every blocking check
 * is the answer, with no model call ("generator": "example").  Otherwise
 * the model answers, or without one the built-in (-T2S_ERR_BUILTIN_REFUSED
 * when it refuses).
 *
 * Unanswerable.  A question that relates to nothing in the schema
 * (link_relates_to_nothing, link.h: nothing named, stood in for, touched or
 * valued, every column scoring under LINK_UNRELATED_MAX_SCORE) ends after
 * linking, before any generate model call; a first answer that is reply.h's
 * sentinel (`UNANSWERABLE: <reason>`, offered by the default profile) ends
 * after that one call, with no correction round.  Both are
 * -T2S_ERR_UNANSWERABLE, its detail saying why (the model's reason).  The
 * sentinel in a correction round ends the rounds; a later candidate's is a
 * candidate without SQL.
 *
 * Generators.  rq->generator chooses who writes the SQL: GENERATOR_MODEL
 * the generate model (-T2S_ERR_GENERATION_UNAVAILABLE without one),
 * GENERATOR_BUILTIN the built-in generator (pipeline/builtin/builtin.h:
 * deterministic, no model; a question it refuses is
 * -T2S_ERR_BUILTIN_REFUSED naming its reason, with *ret_problem
 * {builtin: {refusal, reason}}), GENERATOR_AUTO (the default) the model when
 * one is configured, else the built-in.  Under auto, when the model's first
 * call fails (upstream error, timeout, breaker open) with time left in the
 * request's budget the built-in stands in (a spent budget stays a 504):
 * its answer lists the fallback {stage: "generate", reason, detail}; when it
 * refuses too, the model's error stands, its message naming the refusal.
 * Before any of them (except under GENERATOR_BUILTIN) a stored example
 * close enough answers (reuse_answer.c; generate_reuse_threshold: near-exact
 * with a model, looser without one).  Every statement is validated and (for
 * /query) executed read-only like a model's.  The answer says who wrote it
 * (result.generator, "model", "builtin" or "example") and how sure it is
 * ("confidence" in [0, 1]: the built-in's own; an example's similarity; for
 * a model answer its validation score / 3, times 0.9 per failed warning).
 * Only model answers are cached.  text2sqld_answers_total{generator} counts
 * the answers.
 *
 * Observing: with rq->observer set, its fn is called on the caller's
 * thread as each stage completes, with the stage's name and a small JSON
 * object (borrowed: copy what must outlive the call):
 *
 *   "link"        the linked tables (scores, reasons), columns, joins
 *   "evidence"    values with their probe SQL, evidence sentences, examples
 *                 (null when evidence failed: see the trace's fallbacks)
 *   "describe"    the descriptions shown, with their source
 *   "prompt"      the first prompt: messages, size (chars, estimated
 *                 tokens, budget) and what it showed and dropped
 *   "generation"  each first-round statement: round 0, candidate, sql,
 *                 ok, score, validation
 *   "correction"  each correction round: round, the check it answers, the
 *                 error, the new sql, ok, score, validation
 *   "validation"  the final statement and its validation report
 *   "rows"        /query: the final statement's result
 *
 * A cached answer calls no observer.  When fn returns non-zero the job
 * stops before its next step (no further model call) and generate_run
 * returns -T2S_ERR_CANCELLED with nothing in *ret or *ret_problem.
 */
#ifndef T2S_GENERATE_H
#define T2S_GENERATE_H

#include "common/contract.h"
#include "common/error.h"
#include "pipeline/db/catalog.h"
#include "pipeline/evidence/evidence.h"
#include "pipeline/generate/confidence.h"
#include "pipeline/generate/prompt.h"
#include "pipeline/link/column_index_registry.h"
#include "pipeline/link/link.h"
#include "pipeline/models/embed_cache.h"
#include "pipeline/models/model_route.h"
#include "pipeline/sql/exec.h"
#include "pipeline/store/state_store.h"
#include "pipeline/values/value_registry.h"

#include <jansson.h>
#include <stdbool.h>

/* Defaults and limits of a request's options. */
struct generate_options {
	int max_rounds, max_rounds_limit;
	int candidates, max_candidates;
	int confirm_calls;               /* model calls a confirmation may take (generate_internal.h); 0: none */
	bool adaptive_sampling;          /* draw a request's candidates adaptively (generate.c, candidates_settled) */
	bool vote_by_confidence;         /* the vote weighs candidates by the answer scorer (vote.h, "Scored") */
	double builtin_min_confidence;   /* the built-in abstains below this calibrated confidence; < 0: the
					    weights file's threshold (confidence.h, "builtin") */
	long timeout_ms, max_timeout_ms; /* the request's time budget, all stages included */
	long token_budget;               /* model tokens one request may spend; 0: no limit */
	int max_examples;
	int sample_values;
	int max_history;
	double reuse_min_similarity;          /* a stored example answers instead of the generate model
						 at this similarity (reuse.h; > 1: never) */
	double reuse_min_similarity_no_model; /* the same without a generate model configured */
};

/* Defaults of struct generate_options (the config's defaults). */
extern const struct generate_options generate_options_default;

/* The process-wide parts generation uses; all borrowed, NULL where absent. */
struct generate_env {
	struct column_index_registry *links;
	struct value_registry *values;
	struct state_store *state;
	struct embed_cache *describe_cache;
	struct workers *workers;            /* helps describe's model calls (link's: link_params->workers) */
	const struct link_params *link_params;
	enum link_mode link_mode;
	const struct model_endpoint *link_model, *embed_model, *describe_model;
	struct evidence_options evidence;
	struct model_route generate, debug; /* debug.primary NULL: corrections use generate */
	const struct model_route *candidate_routes; /* n > 0: route k % n answers first-round candidate k */
	size_t n_candidate_routes;
	const char *profile;                /* of the generate model: "default" or "lite-sql" */
	long context_tokens;                /* of the generate model */
	int answer_tokens;                  /* its max_tokens */
	const char *model_fingerprint;      /* identity of the generation models, for cache keys */
	struct exec_limits exec;            /* max_rows: the default */
	long max_rows_limit;
	struct generate_options options;
	const struct confidence_scorer *confidence; /* the answer scorer (generate.confidence_file); NULL: the embedded one */
	struct confidence_bands confidence_bands;   /* high 0 (unset): confidence_bands_default */
};

/*
 * Called at each stage (see above); return 0 to go on, non-zero to stop.
 * gone (may be NULL) is asked, with the same ctx, while a database
 * statement runs: true cancels it (exec_limits.cancelled), and the job
 * stops at the next stage.
 */
struct generate_observer {
	int (*fn)(void *ctx, const char *stage, json_t *event);
	void *ctx;
	bool (*gone)(void *ctx);
};

/* Who writes the SQL (see "Generators" above). */
enum generate_generator { GENERATOR_AUTO, GENERATOR_MODEL, GENERATOR_BUILTIN };

/* "auto", "model", "builtin"; parse returns -1 when unknown. */
const char *generate_generator_name(enum generate_generator g);
int generate_generator_parse(const char *s);

/* The detail of -T2S_ERR_GENERATION_UNAVAILABLE when no generate model is configured. */
#define GENERATE_NO_MODEL                                                                                        \
	"no generate model is configured: set models.generate in the config to an OpenAI-compatible server "  \
	"(vLLM, llama.cpp, Ollama, TGI)"

struct generate_request {
	struct catalog_db *db;
	const struct schema_grant *grant;   /* the caller's tables of db (schema_grant.h); NULL: every table */
	enum generate_generator generator;  /* GENERATOR_AUTO (0) unless asked */
	const char *question;
	const char *evidence;               /* the user's hint, or NULL */
	const struct prompt_pair *history;  /* oldest first */
	size_t n_history;
	int max_rounds, candidates;         /* < 0: the defaults */
	long max_rows, timeout_ms;          /* <= 0: the defaults */
	bool execute;                       /* /query: the answer carries the rows */
	double min_confidence;              /* an answer below it is withheld: 422 low-confidence (0: none) */
	const char *request_key;            /* canonical text of the request, for the cache; NULL: no caching */
	bool cache_bypass;                  /* read no cached answer (Cache-Control: no-cache); the new one is stored */
	const struct generate_observer *observer; /* NULL: none */
};

struct generate_job;

/*
 * The answer of a run.  The scalar members are for callers that decide on
 * the answer (the service layer's cache); everything the response shows is
 * rendered from job by generate_result_json (generate_json.h).  The result
 * borrows the request's strings (rq): render it before the request goes.
 */
struct generate_result {
	const char *sql;              /* the final statement (owned by job) */
	bool ok;                      /* every blocking check passed */
	const char *schema_hash;      /* of the schema the answer was made on (owned by job) */
	const char *budget_exhausted; /* NULL, "time" or "tokens" (static) */
	const char *generator;        /* "model" or "builtin" (static) */
	double confidence;            /* the answer's, as its JSON renders it (three decimals) */
	struct generate_job *job;     /* the whole run (private to pipeline/generate/) */
};

/*
 * Run the job.  On 0, *ret is the answer, released with
 * generate_result_release (also safe on a zeroed result).  On
 * -T2S_ERR_GENERATION_FAILED and on a time budget's -T2S_ERR_TIMEOUT,
 * *ret_problem (new reference) holds extension members for the problem
 * body; on other errors it is NULL.
 */
T2S_MUST_CHECK
int generate_run(const struct generate_env *env, const struct generate_request *rq, struct generate_result *ret,
		 json_t **ret_problem, struct t2s_error *err);
void generate_result_release(struct generate_result *r);

#endif
