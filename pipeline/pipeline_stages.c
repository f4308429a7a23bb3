/*
 * pipeline_stages.c - the entry points of the stages (see pipeline.h):
 * each acquires its stage inputs (schema, column index, value index) once,
 * runs the stage and hands the inputs to the result, which releases them.
 */
#include "pipeline/pipeline_internal.h"

#include "common/clock.h"
#include "common/metrics.h"

#include "pipeline/describe/describe_serve.h"
#include "pipeline/generate/answer_cache.h"
#include "pipeline/generate/generate_json.h"
#include "pipeline/models/stage_metrics.h"
#include "pipeline/sql/sql_engine.h"
#include "pipeline/sql/sql_explain.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The schema and its column index; on failure nothing is held. */
static int acquire_index(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant,
			 struct schema **ret_schema, struct column_index **ret_index, bool *built, struct t2s_error *err)
{
	*ret_index = NULL;
	int rc = catalog_db_schema_granted(db, grant, ret_schema, err); /* a view's index is its own (index_name) */
	if (rc == 0 && (rc = column_index_registry_get(p->links, *ret_schema, ret_index, built, err)) < 0) {
		schema_unref(*ret_schema);
		*ret_schema = NULL;
	}
	return rc;
}

int pipeline_parse_link_mode(const char *name)
{
	return link_mode_parse(name);
}

int pipeline_link(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant,
		  const struct pipeline_link_request *rq, struct pipeline_link *ret, struct t2s_error *err)
{
	*ret = (struct pipeline_link){0};
	struct column_index *idx;
	int rc = acquire_index(p, db, grant, &ret->schema, &idx, &ret->built_now, err);
	if (rc < 0)
		return rc;
	struct value_index *vi = value_registry_get(p->values, db, ret->schema, NULL); /* NULL while it builds */
	struct link_request lr = {.question = rq->question, .evidence = rq->evidence,
				  .mode = rq->mode < 0 ? p->link_default_mode : (enum link_mode)rq->mode,
				  .top_k = rq->top_k, .values = vi, .features = rq->features};
	rc = link_run(idx, &p->link_params, pipeline_model(p, MODEL_STAGE_LINK), pipeline_model(p, MODEL_STAGE_EMBED), &lr,
		      &ret->result, err);
	value_index_unref(vi);
	column_index_unref(idx); /* the result holds its own reference */
	if (rc < 0)
		ret->result = (struct link_result){0};
	return rc;
}

void pipeline_link_release(struct pipeline_link *r)
{
	if (r->result.index)
		link_result_release(&r->result);
	schema_unref(r->schema);
	*r = (struct pipeline_link){0};
}

int pipeline_evidence(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant,
		      const char *question, const char *user_evidence, struct arena *arena,
		      struct pipeline_evidence *ret, struct t2s_error *err)
{
	*ret = (struct pipeline_evidence){0};
	snprintf(ret->index_state, sizeof(ret->index_state), "building");
	char *joined = link_question_text(question, user_evidence); /* as linking reads it */
	const char *text = joined ? arena_strdup(arena, joined) : NULL;
	free(joined);
	if (!text)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	struct column_index *li;
	int rc = acquire_index(p, db, grant, &ret->schema, &li, NULL, err);
	if (rc < 0)
		return rc;
	ret->values = value_registry_get(p->values, db, ret->schema, ret->index_state);
	struct state_store *st = p->state;
	rc = evidence_run(db, ret->values, li, st, text, &p->evidence_options, &ret->result, err);
	column_index_unref(li);
	if (rc < 0)
		ret->result = (struct evidence_result){0};
	return rc;
}

void pipeline_evidence_release(struct pipeline_evidence *r)
{
	evidence_result_release(&r->result);
	value_index_unref(r->values);
	schema_unref(r->schema);
	*r = (struct pipeline_evidence){0};
}

const struct value_index_stats *pipeline_value_index_stats(const struct pipeline_evidence *r)
{
	return r->values ? value_index_get_stats(r->values) : NULL;
}

int pipeline_describe(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant,
		      const char *const *tables, size_t n_tables, struct pipeline_describe *ret, struct t2s_error *err)
{
	*ret = (struct pipeline_describe){0};
	int rc = catalog_db_schema_granted(db, grant, &ret->schema, err);
	if (rc < 0)
		return rc;
	/* A store not opened (yet): describe from metadata, as without one. */
	struct state_store *state = p->state && state_store_available(p->state) ? p->state : NULL;
	struct describe_request rq = {.schema = ret->schema, .tables = tables, .n_tables = n_tables, .state = state,
				      .model = pipeline_model(p, MODEL_STAGE_DESCRIBE), .cache = p->cache,
				      .workers = p->workers};
	rc = describe_serve(&rq, &ret->result, err);
	if (rc < 0) {
		ret->result = (struct describe_result){0};
		return rc;
	}
	ret->overrides_missing = !state || ret->result.state_unavailable;
	return 0;
}

void pipeline_describe_release(struct pipeline_describe *r)
{
	describe_result_release(&r->result);
	schema_unref(r->schema);
	*r = (struct pipeline_describe){0};
}

int pipeline_execute(struct pipeline *p, struct catalog_db *db, const struct schema_grant *grant, const char *sql,
		     long max_rows, struct pipeline_execute *ret, struct t2s_error *err)
{
	*ret = (struct pipeline_execute){.limits = p->exec};
	ret->limits.max_rows = max_rows;
	ret->limits.grant = grant;
	int rc = exec_run(db, sql, &ret->limits, &ret->result, err);
	if (rc < 0)
		ret->result = (struct exec_result){0};
	return rc;
}

void pipeline_execute_release(struct pipeline_execute *r)
{
	exec_result_release(&r->result);
}

/* ---- the main job, with the answer cache ---------------------------------------- */

int pipeline_parse_generator(const char *name)
{
	return generate_generator_parse(name);
}

const struct generate_env *pipeline_generate_env(const struct pipeline *p)
{
	return &p->generate;
}

/*
 * What an answer is made from beyond the request and the schema, as text:
 * db's prompt state version (examples, overrides) and its data version.
 * Without a data version (unreadable) the answer is not cached: false.
 */
static bool answer_versions(struct pipeline *p, const struct generate_request *rq, char *buf, size_t size)
{
	char data[CATALOG_DATA_VERSION_MAX];
	struct t2s_error e = {0};
	if (catalog_db_data_version(rq->db, data, &e) < 0)
		return false;
	/* The caller's table set too: an answer is never served to a caller with other tables. */
	snprintf(buf, size, "state=%lld;data=%s;tables=%s", (long long)pipeline_sync_state_version(p, rq->db), data,
		 rq->grant ? rq->grant->key : "*");
	return true;
}

/*
 * A cached body made this request's: marked cached, its timings this
 * request's own (no stage ran), its explanation written when an older
 * version cached it without one (dialect: the database's).
 */
static void answer_from_cache(json_t *body, double started_ms, enum sql_dialect dialect)
{
	json_object_set_new(body, "cached", json_true());
	if (!json_object_get(body, "explanation"))
		json_object_set_new(body, "explanation",
				    sql_explain_json(json_string_value(json_object_get(body, "sql")), dialect));
	json_t *timings = json_object_get(json_object_get(body, "trace"), "timings_ms");
	const char *k;
	json_t *v;
	json_object_foreach(timings, k, v)
		json_real_set(v, 0.0);
	json_object_set_new(timings, "total", json_real(clock_now_ms() - started_ms));
	if (json_object_get(body, "elapsed_ms")) /* /query: the rows were not read now */
		json_object_set_new(body, "elapsed_ms", json_real(0.0));
}

static int answer(struct pipeline *p, const struct generate_request *rq, struct pipeline_answer *ret,
		  json_t **ret_problem, struct t2s_error *err)
{
	const struct generate_env *env = &p->generate;
	double started_ms = clock_now_ms();
	*ret = (struct pipeline_answer){0};
	*ret_problem = NULL;
	char key[65] = "", versions[CATALOG_DATA_VERSION_MAX + 160];
	if (env->generate.primary && p->answers && rq->request_key && answer_versions(p, rq, versions, sizeof(versions))) {
		ret->cache = rq->cache_bypass ? PIPELINE_CACHE_BYPASS : PIPELINE_CACHE_MISS;
		struct schema *s;
		if (catalog_db_schema_granted(rq->db, rq->grant, &s, err) < 0)
			return -(int)err->code;
		answer_cache_key(rq->db->cfg->name, s->hash, env->model_fingerprint, versions, rq->request_key, key);
		enum sql_dialect dialect = sql_engine_of(s->engine)->dialect;
		schema_unref(s);
		if (!rq->cache_bypass && (ret->body = answer_cache_get(p->answers, key, &ret->age_s)) != NULL) {
			answer_from_cache(ret->body, started_ms, dialect);
			ret->from_cache = true;
			ret->cache = PIPELINE_CACHE_HIT;
			return 0;
		}
	}
	int rc = generate_run(env, rq, &ret->result, ret_problem, err);
	if (rc == 0 && key[0] && !ret->result.budget_exhausted && strcmp(ret->result.generator, "model") == 0) {
		/*
		 * Stored under the schema the answer was made on (a refresh in between changes the key) and the
		 * versions read before it was made (a change in between makes it a miss, never stale).
		 */
		answer_cache_key(rq->db->cfg->name, ret->result.schema_hash, env->model_fingerprint, versions,
				 rq->request_key, key);
		ret->body = generate_result_json(&ret->result); /* rendered once: for the cache and the caller */
		if (ret->body)
			answer_cache_put(p->answers, key, ret->body);
	}
	return rc;
}

static struct metric_family *m_generations;
static pthread_once_t generations_once = PTHREAD_ONCE_INIT;

static void register_generations(void)
{
	static const char *const outcome[] = {"outcome", NULL};
	m_generations = metrics_family("text2sqld_generations_total",
				       "Generations (/generate and /query) by outcome: ok, invalid (answered, a "
				       "blocking check failed), cached, unanswerable, refused (the built-in "
				       "generator refuses and no model stands in, or a model is asked for and none "
				       "is configured: 422, not a failure), failed (no executable statement), "
				       "withheld (below options.min_confidence), timeout, cancelled, unavailable "
				       "(models or database), error.",
				       METRIC_COUNTER, outcome, NULL, 0);
}

/* The outcome label of one pipeline_generate call that returned rc. */
static const char *generation_outcome(int rc, const struct pipeline_answer *a)
{
	if (rc == 0)
		return a->from_cache ? "cached" : a->result.ok ? "ok" : "invalid";
	switch (-rc) {
	case T2S_ERR_UNANSWERABLE:
		return "unanswerable";
	case T2S_ERR_GENERATION_FAILED:
		return "failed";
	case T2S_ERR_TIMEOUT:
	case T2S_ERR_UPSTREAM_TIMEOUT:
		return "timeout";
	case T2S_ERR_CANCELLED:
		return "cancelled";
	case T2S_ERR_LOW_CONFIDENCE:
		return "withheld";
	case T2S_ERR_BUILTIN_REFUSED:
	case T2S_ERR_GENERATION_UNAVAILABLE:
		return "refused"; /* the service works; the question (or the request) is beyond it */
	case T2S_ERR_UNAVAILABLE:
	case T2S_ERR_UPSTREAM:
		return "unavailable";
	default:
		return "error";
	}
}

/*
 * options.min_confidence: an answer (fresh or cached) below it is withheld:
 * a is released and *ret_problem carries its SQL, confidence, band,
 * generator and the reasons the scorer gave (-T2S_ERR_LOW_CONFIDENCE, 422).
 */
static int withhold_below(const struct generate_request *rq, struct pipeline_answer *a, json_t **ret_problem,
			  struct t2s_error *err)
{
	if (rq->min_confidence <= 0)
		return 0;
	/* A cached answer's rendered confidence, else the fresh one's (the same three decimals): no render to pass. */
	double c = a->body ? json_number_value(json_object_get(a->body, "confidence")) : a->result.confidence;
	if (c >= rq->min_confidence)
		return 0;
	json_t *body = pipeline_answer_json(a);
	if (!body)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	const char *generator = json_string_value(json_object_get(body, "generator"));
	json_t *why = json_object_get(json_object_get(json_object_get(body, "trace"), "confidence"), "reasons");
	*ret_problem = json_pack("{s:O?, s:f, s:O?, s:s?, s:O?}", "sql", json_object_get(body, "sql"), "confidence", c,
				 "confidence_band", json_object_get(body, "confidence_band"), "generator", generator,
				 "reasons", why ? why : json_array());
	stage_metrics_abstained(generator ? generator : "model");
	int rc = t2s_error_set(err, T2S_ERR_LOW_CONFIDENCE,
			       "the answer's confidence %.3f is below options.min_confidence %.3f: it is withheld", c, rq->min_confidence);
	json_decref(body);
	pipeline_answer_release(a);
	return rc;
}

int pipeline_generate(struct pipeline *p, const struct generate_request *rq, struct pipeline_answer *ret,
		      json_t **ret_problem, struct t2s_error *err)
{
	pthread_once(&generations_once, register_generations);
	int rc = answer(p, rq, ret, ret_problem, err);
	if (rc == 0)
		rc = withhold_below(rq, ret, ret_problem, err);
	metrics_add(m_generations, (const char *const[]){generation_outcome(rc, ret), NULL}, 1);
	return rc;
}

void pipeline_answer_release(struct pipeline_answer *a)
{
	json_decref(a->body);
	generate_result_release(&a->result);
	*a = (struct pipeline_answer){0};
}

json_t *pipeline_answer_json(const struct pipeline_answer *a)
{
	return a->body ? json_incref(a->body) : generate_result_json(&a->result);
}
