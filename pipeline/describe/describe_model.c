/*
 * describe_model.c - the model phase of a run: one job per asked table, its
 * answer looked up in the cache (one batched lookup), the misses sent to the
 * worker pool (common/workers.h: the caller and idle pool threads each take
 * the next table, call the model, parse the answer), the good answers
 * stored back (one batched store).
 * The jobs are private to this file: the run reads their text through
 * describe_job_text.
 */
#include "pipeline/describe/describe_internal.h"

#include "common/clock.h"
#include "common/workers.h"
#include "pipeline/models/stage_metrics.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- one table's model job ----------------------------------------------- */

struct job {
	int table;
	char key[96];
	bool from_cache;
	bool called;
	int rc;               /* model_chat's result */
	int parse_rc;         /* describe_parse_answer's result (when rc == 0) */
	struct t2s_error err; /* of whichever failed */
	struct model_call_stats stats;
	char *tsentence;      /* parsed answer, owned */
	char **cols;
	int unknown;
};

struct pool {
	const struct schema *s;
	const struct model_endpoint *ep;
	struct job **jobs; /* jobs that need a model call */
};

static void run_job(const struct pool *p, struct job *j)
{
	struct model_message msgs[2] = {{"system", describe_system_prompt}, {"user", NULL}};
	char *prompt = NULL, *answer = NULL;

	j->rc = describe_build_prompt(p->s, j->table, &prompt, &j->err);
	if (j->rc < 0)
		return; /* not called */
	msgs[1].content = prompt;
	j->called = true;
	j->rc = model_chat(p->ep, msgs, 2, &answer, &j->stats, &j->err);
	free(prompt);
	if (j->rc == 0) {
		j->parse_rc = describe_parse_answer(p->s, j->table, answer, &j->tsentence, &j->cols, &j->unknown, &j->err);
		free(answer);
	}
}

/* Job i of the pool arg (a task of workers_for, which carries the request's trace). */
static void pool_task(void *arg, size_t i)
{
	const struct pool *p = arg;

	run_job(p, p->jobs[i]);
}

static void free_columns(char **cols, size_t n)
{
	if (!cols)
		return;
	for (size_t i = 0; i < n; i++)
		free(cols[i]);
	free(cols);
}
int describe_jobs_new(struct run *r)
{
	r->jobs = calloc(r->n_tables ? r->n_tables : 1, sizeof(*r->jobs));
	if (!r->jobs)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < r->n_tables; i++)
		r->jobs[i].table = r->tables[i];
	return 0;
}

void describe_jobs_free(struct run *r)
{
	for (size_t i = 0; r->jobs && i < r->n_tables; i++) {
		free(r->jobs[i].tsentence);
		free_columns(r->jobs[i].cols, r->s->tables[r->jobs[i].table].n_columns);
	}
	free(r->jobs);
	r->jobs = NULL;
}

const char *describe_job_text(const struct run *r, size_t i, int ci)
{
	const struct job *j = &r->jobs[i];
	bool model_ok = j->from_cache || (j->called && j->rc == 0 && j->parse_rc == 0);

	return !model_ok ? NULL : ci < 0 ? j->tsentence : j->cols[ci];
}

/* ---- cache and model calls ----------------------------------------------- */

/* Look every model job up in the cache; hits are parsed into their jobs. */
static int cache_lookup(struct run *r, struct job **pending, size_t n)
{
	const char **keys = malloc((n ? n : 1) * sizeof(*keys));
	struct embed_cache_blob *blobs = calloc(n ? n : 1, sizeof(*blobs));
	int rc = 0;

	if (!keys || !blobs) {
		free(keys);
		free(blobs);
		return -T2S_ERR_NOMEM;
	}
	for (size_t i = 0; i < n; i++)
		keys[i] = pending[i]->key;
	rc = embed_cache_get_many(r->o->cache, keys, n, blobs, NULL);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct job *j = pending[i];
		char *text;
		if (!blobs[i].data)
			continue;
		text = malloc(blobs[i].len + 1);
		if (!text) {
			rc = -T2S_ERR_NOMEM;
			break;
		}
		memcpy(text, blobs[i].data, blobs[i].len);
		text[blobs[i].len] = '\0';
		/* A blob that no longer parses (corrupt, foreign) is a miss. */
		if (describe_parse_answer(r->s, j->table, text, &j->tsentence, &j->cols, &j->unknown, NULL) == 0) {
			j->from_cache = true;
			j->unknown = 0;
			r->res.cache_hits++;
		}
		free(text);
	}
	for (size_t i = 0; i < n; i++)
		free(blobs[i].data);
	free(blobs);
	free(keys);
	return rc;
}

/* Store the good fresh answers; cache trouble is ignored (the run does not depend on it). */
static void cache_store(struct run *r)
{
	const char **keys = malloc((r->n_tables ? r->n_tables : 1) * sizeof(*keys));
	struct embed_cache_blob *blobs = calloc(r->n_tables ? r->n_tables : 1, sizeof(*blobs));
	size_t n = 0;

	for (size_t i = 0; keys && blobs && i < r->n_tables; i++) {
		struct job *j = &r->jobs[i];
		if (!j->called || j->rc != 0 || j->parse_rc != 0)
			continue;
		char *text = describe_answer_to_blob(&r->s->tables[j->table], j->tsentence, j->cols);
		if (!text || strlen(text) > EMBED_CACHE_BLOB_MAX) {
			free(text);
			continue;
		}
		keys[n] = j->key;
		blobs[n].data = text;
		blobs[n++].len = strlen(text);
	}
	if (n && embed_cache_put_many(r->o->cache, keys, blobs, n, NULL) < 0) {
		/* Storing is best effort: the descriptions stand, the next run asks the model again. */
	}
	for (size_t i = 0; blobs && i < n; i++)
		free(blobs[i].data);
	free(blobs);
	free(keys);
}

/* Calls the model for every asked table that needs it (cache first). */
int describe_model_phase(struct run *r, struct t2s_error *err)
{
	const struct model_endpoint *ep = r->o->model;
	struct job **pending = malloc((r->n_tables ? r->n_tables : 1) * sizeof(*pending));
	size_t n = 0, n_call = 0;
	double t0 = clock_now_ms();
	int rc = 0;

	if (!pending)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < r->n_tables; i++) {
		if (describe_fully_overridden(r, i))
			continue;
		describe_cache_key(r->s, ep, r->tables[i], r->jobs[i].key, sizeof(r->jobs[i].key));
		pending[n++] = &r->jobs[i];
	}
	if (r->o->cache && n)
		rc = cache_lookup(r, pending, n);
	for (size_t i = 0; i < n; i++)
		if (!pending[i]->from_cache)
			pending[n_call++] = pending[i];
	if (rc == 0 && n_call) {
		int par = r->o->max_parallel > 0 ? r->o->max_parallel : DESCRIBE_PARALLEL_DEFAULT;
		struct pool p = {.s = r->s, .ep = ep, .jobs = pending};
		workers_for(r->o->workers, n_call, pool_task, &p, par > DESCRIBE_PARALLEL_MAX ? DESCRIBE_PARALLEL_MAX : par);
	}
	for (size_t i = 0; rc == 0 && i < n_call; i++) {
		struct job *j = pending[i];
		if (!j->called) { /* no prompt: out of memory fails the run, an oversized one falls back */
			if (j->rc == -T2S_ERR_NOMEM) {
				rc = -T2S_ERR_NOMEM;
			} else {
				r->res.model_errors++;
				rc = describe_push_error(&r->res, r->s->tables[j->table].api_name, &j->err);
			}
			continue;
		}
		int metric_rc = j->rc != 0 ? j->rc : j->parse_rc == -T2S_ERR_NOMEM ? 0 : j->parse_rc;
		stage_metrics_model_call("describe", metric_rc, &j->stats);
		r->res.model_calls++;
		r->res.prompt_tokens += j->stats.prompt_tokens;
		r->res.completion_tokens += j->stats.completion_tokens;
		if (j->rc == 0 && j->parse_rc == -T2S_ERR_NOMEM)
			rc = -T2S_ERR_NOMEM;
		else if (j->rc != 0 || j->parse_rc != 0) {
			r->res.model_errors++;
			rc = describe_push_error(&r->res, r->s->tables[j->table].api_name, &j->err);
		} else {
			r->res.unknown_columns += j->unknown;
		}
	}
	if (n_call)
		stage_metrics_step("describe", "model", clock_now_ms() - t0);
	if (rc == 0 && r->o->cache)
		cache_store(r);
	free(pending);
	return rc < 0 ? t2s_error_set(err, (enum t2s_code)-rc, "out of memory") : 0;
}
