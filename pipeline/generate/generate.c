/*
 * generate.c - the main job, composed from the stages (see generate.h): the
 * driver, the one file that names the job's steps (generate_internal.h:
 * reuse, the built-in, repairs, the confirmation, the JSON of the stage
 * events) and runs them in order, with the stages before the prompt, the
 * prompt and conversation, the first round, the vote and the correction
 * rounds.
 *
 * One struct generate_job (generate_job.h) holds everything a request owns
 * while it runs: the schema and index references, each stage's result, the
 * view of the schema shown to the model, every statement tried with its
 * validation, and the trace.  generate_job_release (generate_job.c) frees
 * it all in one place; model calls and validation go through
 * generate_try.c.
 */
#include "pipeline/generate/generate_internal.h"

#include "common/clock.h"
#include "pipeline/describe/describe_serve.h"
#include "pipeline/generate/reply.h"
#include "pipeline/generate/schema_view.h"
#include "pipeline/generate/generate_json.h"
#include "pipeline/generate/trace.h"
#include "pipeline/sql/exec_json.h"
#include "pipeline/generate/validate.h"
#include "pipeline/generate/vote.h"
#include "pipeline/models/stage_metrics.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const struct generate_options generate_options_default = {
	.max_rounds = 3,
	.max_rounds_limit = 10,
	.candidates = 1,
	.max_candidates = 8,
	.confirm_calls = 2,
	.adaptive_sampling = true,
	.vote_by_confidence = false,
	.builtin_min_confidence = -1,
	.timeout_ms = 120000,
	.max_timeout_ms = 120000, /* = timeout_ms and limits.key_max_timeout_ms: the default drain (125 s) covers it */
	.token_budget = 100000,
	.max_examples = 3,
	.sample_values = 2,
	.max_history = 6,
	.reuse_min_similarity = 0.97,
	.reuse_min_similarity_no_model = 0.75,
};

/*
 * Tell the request's observer that a stage completed; event is stolen
 * (NULL: out of memory, nothing is said).  Returns -T2S_ERR_CANCELLED
 * (with err filled) when the observer asks to stop, else 0.
 */
static int observe(struct generate_job *j, const char *stage, json_t *event, struct t2s_error *err)
{
	const struct generate_observer *o = j->rq->observer;
	int stop = 0;
	if (o && o->fn && event)
		stop = o->fn(o->ctx, stage, event);
	json_decref(event);
	if (stop)
		return t2s_error_set(err, T2S_ERR_CANCELLED, "stopped by the caller after the %s stage", stage);
	return 0;
}

static bool observed(const struct generate_job *j)
{
	return j->rq->observer && j->rq->observer->fn;
}

/* ---- the time budget of each stage ---------------------------------------------- */

/*
 * Start step `stage`: -T2S_ERR_TIMEOUT when the request's time budget is
 * already spent (generate_run then names the stage), else 0.
 */
static int enter_stage(struct generate_job *j, const char *stage, struct t2s_error *err)
{
	j->stage = stage;
	if (generate_time_left(j) >= 1)
		return 0;
	j->budget_exhausted = "time";
	return t2s_error_set(err, T2S_ERR_TIMEOUT, "no time was left");
}

/* ep cut to the time left (model_route.h), in *buf; NULL stays NULL. */
static const struct model_endpoint *fitted(const struct generate_job *j, const struct model_endpoint *ep,
					   struct model_endpoint *buf)
{
	if (!ep)
		return NULL;
	if (!model_endpoint_fit(ep, j->deadline, buf)) {
		/* No time left: the call fails at once as a timeout would. */
		buf->timeout_ms = 1;
		buf->retries = 0;
		buf->connect_timeout_ms = 1;
	}
	return buf;
}


/* ---- stages before the prompt ----------------------------------------------- */

/*
 * The linked columns take at most this share of the generate model's
 * context (its context_tokens): the rest holds the instructions, joins,
 * evidence, examples, the conversation and the answer.
 */
#define LINK_CONTEXT_SHARE 0.25

/* The fill's token budget for this request: link.budget_tokens, within the generate model's context share. */
static long link_budget(const struct generate_env *env)
{
	long budget = env->link_params->budget_tokens;
	long share = (long)(LINK_CONTEXT_SHARE * (double)env->context_tokens);
	if (env->context_tokens > 0 && (budget <= 0 || share < budget))
		budget = share > 0 ? share : 1;
	return budget;
}

static int run_link_and_evidence(struct generate_job *j, struct t2s_error *err)
{
	const struct generate_env *env = j->env;
	int rc = enter_stage(j, "link", err);
	if (rc < 0)
		return rc;
	char *q = link_question_text(j->rq->question, j->rq->evidence); /* as evidence reads it, like linking */
	if (!q)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	double t0 = clock_now_ms();
	struct model_endpoint link_buf, embed_buf, evidence_buf;
	const struct model_endpoint *link_model = fitted(j, env->link_model, &link_buf);
	struct link_request lr = {.question = j->rq->question, .evidence = j->rq->evidence, .mode = env->link_mode,
				  .values = j->values, .model_only_if_related = true, .budget_tokens = link_budget(env)};
	rc = link_run(j->index, env->link_params, link_model, fitted(j, env->embed_model, &embed_buf), &lr, &j->link,
		      err);
	if (rc < 0 && lr.mode != LINK_MODE_VECTOR && rc != -T2S_ERR_NOMEM) {
		/* The link model failed: vector linking still answers, and the trace says so. */
		generate_add_fallback(j, "link", err->message);
		lr.mode = LINK_MODE_VECTOR;
		rc = link_run(j->index, env->link_params, NULL, fitted(j, env->embed_model, &embed_buf), &lr, &j->link,
			      err);
	}
	j->ms_link = clock_now_ms() - t0;
	if (rc < 0) {
		free(q);
		return rc;
	}
	j->link_ok = true;
	for (size_t i = 0; i < j->link.n_fallbacks; i++) {
		const struct stage_fallback *f = &j->link.fallbacks[i];
		json_array_append_new(j->fallbacks, json_pack("{s:s, s:s, s:s}", "stage", f->stage, "reason", f->reason,
							      "detail", f->detail));
	}
	if (link_relates_to_nothing(&j->link)) {
		/* Nothing to show a model: the stream still sees what linking found. */
		free(q);
		rc = observed(j) ? observe(j, "link", generate_link_json(j), err) : 0;
		return rc < 0 ? rc
			      : t2s_error_set(err, T2S_ERR_UNANSWERABLE,
					      "nothing in the schema of this database relates to the question");
	}
	if ((rc = enter_stage(j, "evidence", err)) < 0) {
		free(q);
		return rc;
	}
	t0 = clock_now_ms();
	struct t2s_error e = {0};
	struct evidence_options eo = env->evidence;
	eo.model = fitted(j, env->evidence.model, &evidence_buf);
	eo.probe_timeout_ms = generate_cut_to_deadline(j, eo.probe_timeout_ms);
	eo.report_index_fallback = false; /* linking reported the index's embed fallback */
	if (evidence_run(j->rq->db, j->values, j->index, env->state, q, &eo, &j->evidence, &e) == 0)
		j->evidence_ok = true;
	else if (e.code == T2S_ERR_NOMEM)
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	else
		generate_add_fallback(j, "evidence", e.message);
	j->ms_evidence = clock_now_ms() - t0;
	free(q);
	if (rc == 0 && observed(j))
		rc = observe(j, "link", generate_link_json(j), err);
	if (rc == 0 && observed(j))
		rc = observe(j, "evidence", json_pack("{s:o}", "evidence", generate_evidence_json(j)), err);
	return rc;
}

/*
 * Descriptions of the view's tables as /describe gives them (overrides, the
 * describe model's text kept in the state store, metadata); a failure
 * leaves the prompt without descriptions and says so in the trace.
 */
static int run_describe(struct generate_job *j, struct t2s_error *err)
{
	const struct generate_env *env = j->env;
	int rc = enter_stage(j, "describe", err);
	if (rc < 0)
		return rc;
	double t0 = clock_now_ms();
	struct model_endpoint describe_buf;
	const char **names = malloc((j->view.n_tables ? j->view.n_tables : 1) * sizeof(char *));
	if (!names)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < j->view.n_tables; i++)
		names[i] = j->schema->tables[j->view.tables[i].table].api_name;
	struct describe_request dr = {.schema = j->schema, .tables = names, .n_tables = j->view.n_tables,
				      .state = env->state, .model = fitted(j, env->describe_model, &describe_buf),
				      .cache = env->describe_cache, .workers = env->workers};
	struct t2s_error e = {0};
	if (j->view.n_tables && describe_serve(&dr, &j->describe, &e) == 0)
		j->describe_ok = true;
	else if (e.code == T2S_ERR_NOMEM)
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	else if (j->view.n_tables)
		generate_add_fallback(j, "describe", e.message);
	free(names);
	j->ms_describe = clock_now_ms() - t0;
	if (rc == 0 && observed(j))
		rc = observe(j, "describe", generate_describe_json(j), err);
	return rc;
}

/* Point the view's entries at the model's and the user's descriptions (metadata ones add nothing). */
static void attach_descriptions(struct generate_job *j)
{
	if (!j->describe_ok)
		return;
	for (size_t i = 0; i < j->describe.n_items; i++) {
		const struct describe_item *d = &j->describe.items[i];
		if (d->source == describe_source_metadata)
			continue;
		if (d->column < 0) {
			for (size_t k = 0; k < j->view.n_tables; k++)
				if (j->view.tables[k].table == d->table)
					j->view.tables[k].description = d->text;
		} else {
			for (size_t k = 0; k < j->view.n_columns; k++)
				if (j->view.columns[k].table == d->table && j->view.columns[k].column == d->column)
					j->view.columns[k].description = d->text;
		}
	}
}

/* ---- the prompt ----------------------------------------------------------------- */

static int build_prompt(struct generate_job *j, struct t2s_error *err)
{
	const struct generate_env *env = j->env;
	const struct generate_request *rq = j->rq;
	double t0 = clock_now_ms();
	attach_descriptions(j);
	size_t n_examples = j->evidence_ok ? j->evidence.n_examples : 0;
	if (n_examples > (size_t)env->options.max_examples)
		n_examples = (size_t)env->options.max_examples;
	struct prompt_pair examples[64];
	if (n_examples > 64)
		n_examples = 64;
	for (size_t i = 0; i < n_examples; i++)
		examples[i] = (struct prompt_pair){j->evidence.examples[i].question ? j->evidence.examples[i].question : "",
						   j->evidence.examples[i].sql ? j->evidence.examples[i].sql : ""};
	size_t n_history = rq->n_history, first_turn = 0;
	if (n_history > (size_t)env->options.max_history)
		first_turn = n_history - (size_t)env->options.max_history;
	if (!j->evidence_texts && j->evidence_ok && j->evidence.n_items) {
		j->evidence_texts = malloc(j->evidence.n_items * sizeof(char *));
		if (!j->evidence_texts)
			return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
		for (size_t i = 0; i < j->evidence.n_items; i++)
			j->evidence_texts[i] = j->evidence.items[i].text;
	}
	struct prompt_input in = {
		.schema = j->schema,
		.profile = env->profile,
		.question = rq->question,
		.user_evidence = rq->evidence && *rq->evidence ? rq->evidence : NULL,
		.tables = j->view.tables,
		.n_tables = j->view.n_tables,
		.columns = j->view.columns,
		.n_columns = j->view.n_columns,
		.joins = j->view.joins,
		.n_joins = j->view.n_joins,
		.evidence = (const char *const *)j->evidence_texts,
		.n_evidence = j->evidence_ok ? j->evidence.n_items : 0,
		.examples = examples,
		.n_examples = n_examples,
		.history = rq->history + first_turn,
		.n_history = n_history - first_turn,
		.sample_values = env->options.sample_values,
		.context_tokens = env->context_tokens,
		.answer_tokens = env->answer_tokens,
	};
	prompt_output_release(&j->prompt);
	int rc = prompt_build(&in, &j->prompt, err);
	j->ms_prompt += clock_now_ms() - t0;
	return rc;
}

/* Messages of the conversation: the prompt, then per earlier try its SQL and its error. */
static size_t conversation(struct generate_job *j, const struct generate_try *const *chain, size_t n_chain, struct model_message *msgs,
			   char **owned, size_t *n_owned)
{
	size_t n = 0;
	if (j->prompt.system)
		msgs[n++] = (struct model_message){"system", j->prompt.system};
	msgs[n++] = (struct model_message){"user", j->prompt.user};
	for (size_t i = 0; i < n_chain; i++) {
		const struct generate_try *t = chain[i];
		char *assistant = NULL, *error = NULL;
		if (t->sql && asprintf(&assistant, "```sql\n%s\n```", t->sql) < 0)
			assistant = NULL;
		const struct validation_check *c = t->v.failed >= 0 ? &t->v.checks[t->v.failed] : NULL;
		/* A result check may misjudge a right query: the model may stand by it (the loop then stops). */
		bool result_check = c && c->level == 3;
		if (asprintf(&error,
			     "### Error Message\n%s\n(check %s, level %d)\n\nWrite the corrected query as one %s "
			     "SELECT statement in a ```sql fence.%s",
			     c ? c->detail : "the statement failed validation", c ? c->check : "?", c ? c->level : 1,
			     j->schema->engine->dialect,
			     result_check ? " If the query is right and this result is the true answer, repeat it unchanged."
					  : "") < 0)
			error = NULL;
		if (assistant)
			owned[(*n_owned)++] = assistant;
		if (error)
			owned[(*n_owned)++] = error;
		msgs[n++] = (struct model_message){"assistant", assistant ? assistant : (t->reply ? t->reply : "")};
		msgs[n++] = (struct model_message){"user", error ? error : "The statement failed validation."};
	}
	return n;
}

static json_t *messages_json(const struct model_message *msgs, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s}", "role", msgs[i].role, "content", msgs[i].content));
	return a;
}

/*
 * The trace of the first round's prompt: its messages exactly as sent and
 * what it showed and dropped (later rounds' prompts grow where errors point;
 * their growth is in fallbacks).
 */
static json_t *prompt_trace(const struct generate_job *j, const struct model_message *msgs, size_t n)
{
	const struct prompt_output *p = &j->prompt;
	return json_pack("{s:s, s:o, s:I, s:I, s:b, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:b}}", "profile",
			 j->env->profile ? j->env->profile : "default", "messages", messages_json(msgs, n),
			 "estimated_tokens", (json_int_t)p->estimated_tokens, "budget_tokens", (json_int_t)p->budget_tokens,
			 "over_budget", p->over_budget, "shown", "tables", (int)j->view.n_tables, "columns",
			 (int)p->columns_shown, "examples", (int)p->examples_shown, "history", (int)p->history_shown,
			 "columns_dropped", (int)p->columns_dropped, "examples_dropped", (int)p->examples_dropped,
			 "history_dropped", (int)p->history_dropped, "samples_dropped", p->samples_dropped);
}

/* ---- the statements tried --------------------------------------------------------- */

/* Whether t's statement was tried before it (generate_same_sql). */
static bool tried_before(const struct generate_job *j, const struct generate_try *t)
{
	for (size_t i = 0; i + 1 < j->n_tries; i++)
		if (&j->tries[i] != t && j->tries[i].sql && generate_same_sql(j->tries[i].sql, t->sql))
			return true;
	return false;
}

/* The best try: highest score, the latest among equals; candidates the vote passed over do not compete. */
static const struct generate_try *best_try(const struct generate_job *j)
{
	const struct generate_try *best = NULL;
	for (size_t i = 0; i < j->n_tries; i++)
		if (!j->tries[i].outvoted && (!best || j->tries[i].v.score >= best->v.score))
			best = &j->tries[i];
	return best;
}

/* ---- the loop ---------------------------------------------------------------------- */

/* Before asking the debug model: grow the view where the error points. */
static int prepare_correction(struct generate_job *j, const struct generate_try *t, struct t2s_error *err)
{
	bool changed = false;
	int rc = 0;
	size_t before_tables = j->view.n_tables, before_columns = j->view.n_columns;
	if (t->v.unknown_name) {
		char *added = NULL;
		size_t before_t = j->view.n_tables, before_c = j->view.n_columns;
		rc = schema_view_widen(&j->view, t->v.unknown_name, t->v.unknown_is_table, &added);
		if (rc < 0)
			return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
		changed = j->view.n_tables != before_t || j->view.n_columns != before_c;
		if (added) {
			json_array_append_new(j->fallbacks, json_pack("{s:s, s:s, s:s}", "stage", "generate", "reason",
								      "schema widened for an unknown name", "added",
								      added));
			free(added);
		}
	}
	if (t->v.join_problem && t->v.n_used_tables >= 2) {
		bool replanned = false;
		if ((rc = schema_view_replan(&j->view, t->v.used_tables, t->v.n_used_tables, &replanned, err)) < 0)
			return rc;
		if (replanned)
			json_array_append_new(j->fallbacks, json_pack("{s:s, s:s}", "stage", "generate", "reason",
								      "join scaffold re-planned from the tables the SQL uses"));
		changed |= replanned;
	}
	assert(j->view.n_tables >= before_tables && j->view.n_columns >= before_columns); /* the view only grows */
	return changed ? build_prompt(j, err) : 0;
}

/*
 * Adaptive sampling: whether the first-round candidates from first on (n
 * drawn so far, of j->n_candidates asked) already settle the answer, so
 * that no further one is drawn: the first one alone when the scorer rates
 * it high; else once one result is shared by a majority of the candidates
 * asked (no later candidates could outvote it).
 */
static bool candidates_settled(struct generate_job *j, size_t first, size_t n)
{
	if (n == 1 && generate_is_high(j, &j->tries[first]))
		return true;
	size_t majority = (size_t)j->n_candidates / 2 + 1;
	for (size_t a = first; a < first + n; a++) {
		if (!j->tries[a].v.executed)
			continue;
		size_t same = 1;
		for (size_t b = a + 1; b < first + n; b++)
			same += generate_same_result(&j->tries[a], &j->tries[b]);
		if (same >= majority)
			return true;
	}
	return false;
}

static int first_round(struct generate_job *j, struct t2s_error *err)
{
	struct model_message msgs[2];
	char *owned[1];
	size_t n_owned = 0;
	size_t n = conversation(j, NULL, 0, msgs, owned, &n_owned);
	j->first_prompt = prompt_trace(j, msgs, n);
	if (observed(j)) {
		size_t chars = 0;
		for (size_t i = 0; i < n; i++)
			chars += strlen(msgs[i].content);
		json_t *ev = json_deep_copy(j->first_prompt);
		if (ev)
			json_object_set_new(ev, "chars", json_integer((json_int_t)chars));
		int rc = observe(j, "prompt", ev, err);
		if (rc < 0)
			return rc;
	}
	size_t first = j->n_tries;
	for (int c = 0; c < j->n_candidates; c++) {
		struct generate_try *t;
		j->stage = "generate";
		if (c > 0 && generate_budget_spent(j))
			break; /* later candidates are best effort */
		if (c > 0 && j->env->options.adaptive_sampling && candidates_settled(j, first, (size_t)c))
			break; /* options.candidates caps the candidates; these already settle it */
		int rc = generate_ask(j, "generate", msgs, n, 0, &t, err);
		if (rc < 0 && (c == 0 || rc == -T2S_ERR_NOMEM))
			return rc;
		if (rc < 0)
			break; /* later candidates are best effort */
		char why[256];
		if (c == 0 && reply_unanswerable(t->reply, why, sizeof(why)))
			return t2s_error_set(err, T2S_ERR_UNANSWERABLE, "the model says the database cannot answer it: %s",
					     *why ? why : "no reason given");
		if (observed(j)) {
			json_t *ev = generate_try_json(t);
			if (ev)
				json_object_set_new(ev, "candidate", json_integer(c));
			if ((rc = observe(j, "generation", ev, err)) < 0)
				return rc;
		}
	}
	return 0;
}

/*
 * With several candidates, the soft consensus of their results chooses one
 * (vote.h); the answer's candidates say each one's votes, consensus and
 * validation.  -T2S_ERR_NOMEM only.
 */
static int vote(struct generate_job *j, struct t2s_error *err)
{
	if (j->n_tries < 2)
		return 0;
	struct vote_candidate c[MAX_TRIES];
	struct vote_tally tally[MAX_TRIES];
	struct vote_evidence ev = {0};
	size_t winner = j->n_tries;
	bool scored = j->env->options.vote_by_confidence && generate_confidence_scorer(j) != NULL;
	for (size_t i = 0; i < j->n_tries; i++) {
		const struct validation *v = &j->tries[i].v;
		c[i] = (struct vote_candidate){.result = v->executed ? &v->result : NULL, .score = v->score,
					       .ordered = v->ordered, .repeats = v->rows_repeated};
		for (size_t k = 0; k < v->n_checks; k++)
			c[i].warnings += !v->checks[k].ok && !v->checks[k].blocking;
		c[i].probability = scored ? generate_probability(j, &j->tries[i]) : -1;
		c[i].scored = c[i].probability >= 0;
	}
	size_t n_ev = scored && generate_reading_evidence(j, &ev.result, &ev.weight);
	j->candidates = json_array();
	if (!j->candidates || vote_select(c, j->n_tries, &ev, n_ev, tally, &winner) < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < j->n_tries; i++) {
		json_t *o = json_pack("{s:s?, s:i, s:i, s:i, s:f, s:f, s:b}", "sql", j->tries[i].sql, "score",
				      j->tries[i].v.score, "votes", tally[i].votes, "warnings", c[i].warnings, "consensus",
				      round(tally[i].consensus * 1000) / 1000, "weight", round(tally[i].weight * 1000) / 1000,
				      "chosen", i == winner);
		if (o && c[i].scored)
			json_object_set_new(o, "probability", json_real(round(c[i].probability * 1000) / 1000));
		json_array_append_new(j->candidates, o);
	}
	for (size_t i = 0; winner < j->n_tries && i < j->n_tries; i++)
		j->tries[i].outvoted = i != winner;
	if (winner < j->n_tries && winner != j->n_tries - 1) {
		/* Move the winner last (the trace lists the tries in the order best_try weighs them). */
		struct generate_try tmp = j->tries[winner];
		memmove(&j->tries[winner], &j->tries[winner + 1], (j->n_tries - winner - 1) * sizeof(struct generate_try));
		j->tries[j->n_tries - 1] = tmp;
	}
	assert(winner == j->n_tries || !j->tries[j->n_tries - 1].outvoted);
	return 0;
}

static int correction_rounds(struct generate_job *j, struct t2s_error *err)
{
	const struct generate_try *chain[MAX_TRIES];
	size_t n_chain = 0;
	for (int round = 1; round <= j->max_rounds; round++) {
		const struct generate_try *prev = best_try(j);
		if (!prev || prev->v.failed < 0)
			return 0;
		/* A round corrects the best statement so far, a counted try failing a blocking check. */
		assert(!prev->outvoted && prev >= j->tries && prev < j->tries + j->n_tries && j->n_tries <= MAX_TRIES);
		assert(prev->v.failed < (int)prev->v.n_checks && prev->v.score < 3);
		/* The check's own repair first: no model call, no round. */
		bool repaired = false;
		int rc = generate_repair(j, prev, round, &repaired, err);
		if (rc < 0)
			return rc;
		if (repaired) {
			round--;
			continue;
		}
		j->stage = "debug";
		if (generate_budget_spent(j))
			return 0; /* the best statement so far is the answer */
		if ((rc = prepare_correction(j, prev, err)) < 0)
			return rc;
		assert(n_chain < MAX_TRIES - 1);
		if (n_chain == 0 || chain[n_chain - 1] != prev)
			chain[n_chain++] = prev;
		struct model_message msgs[2 + 2 * MAX_TRIES];
		char *owned[2 * MAX_TRIES];
		size_t n_owned = 0;
		size_t n = conversation(j, chain, n_chain, msgs, owned, &n_owned);
		struct generate_try *t = NULL;
		struct t2s_error e = {0};
		rc = generate_ask(j, "debug", msgs, n, round, &t, &e);
		for (size_t i = 0; i < n_owned; i++)
			free(owned[i]);
		if (rc == -T2S_ERR_NOMEM)
			return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
		if (rc == 0 && !t->sql && reply_unanswerable(t->reply, NULL, 0))
			return 0; /* the model gives up on the question: the best statement so far stands */
		if (rc < 0) {
			/* The debug model failed: keep the best statement so far. */
			generate_add_fallback(j, "debug", e.message);
			if (generate_time_left(j) < BUDGET_SLACK_MS && !j->budget_exhausted)
				j->budget_exhausted = "time";
			return 0;
		}
		if ((rc = generate_record_correction(j, prev, t, NULL)) < 0)
			return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
		if (observed(j)) {
			/* The correction as the answer lists it, with the new statement's whole report. */
			json_t *ev = json_deep_copy(json_array_get(j->corrections, json_array_size(j->corrections) - 1));
			if (ev) {
				json_object_set_new(ev, "score", json_integer(t->v.score));
				json_object_set_new(ev, "validation", trace_validation_json(&t->v));
			}
			if ((rc = observe(j, "correction", ev, err)) < 0)
				return rc;
		}
		if (t->sql && tried_before(j, t))
			return 0; /* the model stands by a statement already judged */
		chain[n_chain++] = t;
		if (n_chain >= MAX_TRIES - 1)
			return 0;
	}
	return 0;
}

/* ---- the answer -------------------------------------------------------------------- */

/* The last two events: the final statement's validation, then (for /query) its rows. */
static int observe_final(struct generate_job *j, const struct generate_try *final, struct t2s_error *err)
{
	int rc = observe(j, "validation", generate_try_json(final), err);
	if (rc < 0 || !j->rq->execute || !final->v.executed)
		return rc;
	return observe(j, "rows", exec_result_json(&final->v.result, NULL), err);
}

/*
 * The job failed with the time budget spent: one 504 timeout problem naming
 * the budget and the step it ran out in (the step's own error as detail).
 */
static int time_budget_error(struct generate_job *j, struct t2s_error *err, json_t **ret_problem)
{
	char cause[T2S_ERROR_MESSAGE_MAX];
	snprintf(cause, sizeof(cause), "%s", err->message);
	if (!*ret_problem)
		*ret_problem = json_object(); /* the failure's members (sql, validation...) stay when there are some */
	if (*ret_problem) {
		json_object_set_new(*ret_problem, "budget_exhausted", json_string("time"));
		json_object_set_new(*ret_problem, "stage", json_string(j->stage ? j->stage : "?"));
		json_object_set_new(*ret_problem, "timeout_ms", json_integer((json_int_t)j->timeout_ms));
	}
	return t2s_error_set(err, T2S_ERR_TIMEOUT, "the request's time budget of %ld ms ran out in the %s stage: %.300s",
			     j->timeout_ms, j->stage ? j->stage : "?", cause);
}

/* ---- entry -------------------------------------------------------------------------- */

int generate_run(const struct generate_env *env, const struct generate_request *rq, struct generate_result *ret,
		 json_t **ret_problem, struct t2s_error *err)
{
	*ret = (struct generate_result){0};
	*ret_problem = NULL;
	if (!env->generate.primary && rq->generator == GENERATOR_MODEL)
		return t2s_error_set(err, T2S_ERR_GENERATION_UNAVAILABLE, "%s", GENERATE_NO_MODEL);
	/* Without a model, or when asked, the built-in generator answers (generate_builtin.c). */
	bool builtin_only = !env->generate.primary || rq->generator == GENERATOR_BUILTIN;
	struct generate_job *job = calloc(1, sizeof(*job));
	if (!job)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	struct generate_job *j = job;
	int rc = generate_job_init(j, env, rq, err);
	if (rc == 0)
		rc = column_index_registry_get(env->links, j->schema, &j->index, NULL, err);
	if (rc == 0) {
		j->values = value_registry_get(env->values, rq->db, j->schema, j->values_state);
		rc = run_link_and_evidence(j, err);
	}
	if (rc == 0 && (rc = schema_view_init(&j->view, &j->link, j->evidence_ok ? &j->evidence : NULL)) < 0)
		t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	/* A stored example close enough answers first (reuse_answer.c), unless the built-in is asked for. */
	bool reused = false;
	if (rc == 0 && rq->generator != GENERATOR_BUILTIN) {
		j->reuse_asked = true;
		rc = generate_reuse(j, &reused, err);
	}
	if (rc == 0 && !reused && builtin_only) {
		rc = generate_builtin_answer(j, NULL, err, ret_problem);
	} else if (!reused) {
		if (rc == 0)
			rc = run_describe(j, err);
		if (rc == 0)
			rc = build_prompt(j, err);
		if (rc == 0)
			rc = first_round(j, err);
		/* The model failed with time left in the budget: the built-in stands in (a spent budget stays a 504). */
		if (rc < 0 && rq->generator == GENERATOR_AUTO && generate_builtin_may_stand_in(rc) &&
		    generate_time_left(j) >= BUDGET_SLACK_MS)
			rc = generate_builtin_answer(j, err, err, ret_problem);
		else if (rc == 0)
			rc = vote(j, err);
		if (rc == 0 && !j->generator)
			rc = correction_rounds(j, err);
		/* Confirmation is offered for set operations only; one the scorer rates high is not asked about again. */
		const struct generate_try *best = rc == 0 && !j->generator ? best_try(j) : NULL;
		if (best && !(best->v.set_operation && generate_is_high(j, best)))
			rc = generate_confirm(j, best, err);
	}
	const struct generate_try *final = rc == 0 ? best_try(j) : NULL;
	if (rc == 0 && (!final || final->v.score == 0)) {
		const char *why = final ? validation_error(&final->v) : "no statement";
		t2s_error_set(err, T2S_ERR_GENERATION_FAILED,
			      "no executable read-only SQL after %zu statement%s: %s", j->n_tries,
			      j->n_tries == 1 ? "" : "s", why);
		*ret_problem = generate_failure_json(j, final);
		rc = -T2S_ERR_GENERATION_FAILED;
	}
	/* Whatever failed once the time budget was spent failed for want of time: one 504 that says so. */
	if (rc < 0 && rc != -T2S_ERR_NOMEM && rc != -T2S_ERR_CANCELLED && generate_time_left(j) < BUDGET_SLACK_MS) {
		j->budget_exhausted = "time";
		rc = time_budget_error(j, err, ret_problem);
	}
	if (rc == 0) { /* the answer is known: how far to trust it (generate_score.c) */
		generate_score(j, final);
	}
	if (rc == 0 && observed(j))
		rc = observe_final(j, final, err);
	if (j->budget_exhausted)
		stage_metrics_budget_exhausted(j->budget_exhausted);
	j->ms_total = clock_now_ms() - j->start;
	stage_metrics_step("generate", "total", j->ms_total);
	if (rc < 0) {
		generate_job_release(j);
		free(job);
		return rc;
	}
	/* The answer is a counted try that executes (score >= 1), never one outvoted. */
	assert(final && final >= j->tries && final < j->tries + j->n_tries && final->v.score > 0 && !final->outvoted);
	j->final = final;
	generate_builtin_count(j->generator);
	*ret = (struct generate_result){.sql = final->sql, .ok = final->v.failed < 0, .schema_hash = j->schema->hash,
					.budget_exhausted = j->budget_exhausted, .generator = j->generator,
					.confidence = round(j->confidence * 1000) / 1000, .job = job};
	return 0;
}

void generate_result_release(struct generate_result *r)
{
	if (r->job) {
		generate_job_release(r->job);
		free(r->job);
	}
	*r = (struct generate_result){0};
}
