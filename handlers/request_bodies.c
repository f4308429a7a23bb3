/*
 * request_bodies.c - each computing endpoint's JSON body read into its
 * request fields (see request_bodies.h).
 */
#include "handlers/request_bodies.h"

#include "handlers/request_json.h"
#include "handlers/result_json.h"
#include "common/limits.h"
#include "pipeline/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int execute_args_read(struct http_request *req, json_t *args, long long max_rows_limit, struct execute_body *b,
		      struct t2s_error *err)
{
	static const char *const fields[] = {"database", "sql", "max_rows", "big_integers", NULL};
	(void)req;
	int rc = request_json_fields(args, NULL, fields, err);
	if (rc == 0)
		rc = request_json_string(args, "database", true, &b->database, err);
	if (rc == 0)
		rc = request_json_string(args, "sql", true, &b->sql, err);
	if (rc == 0)
		rc = request_json_int(args, "max_rows", 1, max_rows_limit, &b->max_rows, err);
	if (rc == 0)
		rc = result_json_big_integers(args, "big_integers", "big_integers", &b->big_as_strings, err);
	return rc;
}

int execute_body_read(struct http_request *req, long long max_rows_limit, struct execute_body *b, json_t **ret_body,
		      struct t2s_error *err)
{
	static const char *const fields[] = {"database", "sql", "max_rows", "big_integers", NULL};
	json_t *body = NULL;
	int rc = request_json_object(req, fields, &body, err);
	if (rc == 0)
		rc = execute_args_read(req, body, max_rows_limit, b, err);
	if (rc < 0) {
		json_decref(body);
		return rc;
	}
	*ret_body = body;
	return 0;
}

int link_body_read(struct http_request *req, struct link_body *b, json_t **ret_body, struct t2s_error *err)
{
	static const char *const fields[] = {"database", "question", "evidence", "top_k", "mode", "features", NULL};
	json_t *body = NULL;
	const char *mode = NULL;
	int rc = request_json_object(req, fields, &body, err);
	if (rc == 0)
		rc = request_json_string(body, "database", true, &b->database, err);
	if (rc == 0)
		rc = request_json_string(body, "question", true, &b->question, err);
	if (rc == 0)
		rc = request_json_text(body, "evidence", false, &b->evidence, err);
	if (rc == 0)
		rc = request_json_int(body, "top_k", 1, 10000, &b->top_k, err);
	if (rc == 0)
		rc = request_json_string(body, "mode", false, &mode, err);
	if (rc == 0)
		rc = request_json_bool(body, "features", &b->features, err);
	if (rc == 0 && mode && (b->mode = pipeline_parse_link_mode(mode)) < 0)
		rc = t2s_error_set(err, T2S_ERR_INVALID, "field 'mode' must be one of vector, llm, hybrid");
	if (rc < 0) {
		json_decref(body);
		return rc;
	}
	*ret_body = body;
	return 0;
}

/* Restate err's message for a field inside `parent` ("options.max_rounds"). */
static int nested_error(struct t2s_error *err, const char *parent, int rc)
{
	char msg[T2S_ERROR_MESSAGE_MAX];
	const char *field = strstr(err->message, "field '");
	if (field) {
		snprintf(msg, sizeof(msg), "field '%s.%s", parent, field + 7);
		snprintf(err->message, sizeof(err->message), "%s", msg);
	}
	return rc;
}

/*
 * The most a request's time budget may be: generate.max_timeout_ms, and
 * for a request made with an API key at most limits.key_max_timeout_ms
 * (fair share: one key's request cannot hold a connection for long).
 */
static long timeout_cap(const struct http_request *req, const struct generate_env *env, bool *ret_key_capped)
{
	long key_cap = req->cfg->limits.key_max_timeout_ms;
	*ret_key_capped = req->principal && key_cap < env->options.max_timeout_ms;
	return *ret_key_capped ? key_cap : env->options.max_timeout_ms;
}

static int read_options(json_t *body, const struct generate_env *env, long max_timeout_ms, struct generate_request *rq,
			bool *big_as_strings, struct t2s_error *err)
{
	static const char *const keys[] = {"max_rounds", "candidates", "max_rows", "timeout_ms", "big_integers",
					   "generator", "min_confidence", NULL};
	json_t *o = json_object_get(body, "options");
	if (!o || json_is_null(o))
		return 0;
	long long rounds = -1, candidates = -1, rows = 0, timeout = 0;
	int rc = request_json_fields(o, "options", keys, err);
	if (rc == 0 && (rc = request_json_int(o, "max_rounds", 0, env->options.max_rounds_limit, &rounds, err)) < 0)
		return nested_error(err, "options", rc);
	if (rc == 0 && (rc = request_json_int(o, "candidates", 1, env->options.max_candidates, &candidates, err)) < 0)
		return nested_error(err, "options", rc);
	if (rc == 0 && (rc = request_json_int(o, "max_rows", 1, env->max_rows_limit, &rows, err)) < 0)
		return nested_error(err, "options", rc);
	if (rc == 0 && (rc = request_json_int(o, "timeout_ms", 100, max_timeout_ms, &timeout, err)) < 0)
		return nested_error(err, "options", rc);
	if (rc == 0 && (rc = result_json_big_integers(o, "big_integers", "options.big_integers", big_as_strings, err)) < 0)
		return rc;
	json_t *g = json_object_get(o, "generator");
	if (rc == 0 && g && !json_is_null(g)) {
		int gen = pipeline_parse_generator(json_string_value(g));
		if (gen < 0)
			return t2s_error_set(err, T2S_ERR_INVALID,
					     "field 'options.generator' must be \"auto\", \"model\" or \"builtin\"");
		rq->generator = (enum generate_generator)gen;
	}
	json_t *mc = json_object_get(o, "min_confidence");
	if (rc == 0 && mc && !json_is_null(mc)) {
		double v = json_is_number(mc) ? json_number_value(mc) : -1;
		if (!(v >= 0 && v <= 1))
			return t2s_error_set(err, T2S_ERR_INVALID,
					     "field 'options.min_confidence' must be a number between 0 and 1");
		rq->min_confidence = v;
	}
	rq->max_rounds = (int)rounds;
	rq->candidates = (int)candidates;
	rq->max_rows = (long)rows;
	rq->timeout_ms = (long)timeout;
	return rc;
}

/* history: [{question, sql}], oldest first; *ret is malloc'd (caller frees), strings borrowed from body. */
static int read_history(json_t *body, struct prompt_pair **ret, size_t *ret_n, struct t2s_error *err)
{
	static const char *const keys[] = {"question", "sql", NULL};
	json_t *h = json_object_get(body, "history");
	*ret = NULL;
	*ret_n = 0;
	if (!h || json_is_null(h))
		return 0;
	if (!json_is_array(h))
		return t2s_error_set(err, T2S_ERR_INVALID, "field 'history' must be an array of {question, sql}");
	size_t n = json_array_size(h);
	if (n > REQUEST_HISTORY_MAX_TURNS)
		return t2s_error_set(err, T2S_ERR_INVALID, "field 'history' has %zu turns, more than %d", n,
				     REQUEST_HISTORY_MAX_TURNS);
	struct prompt_pair *turns = calloc(n ? n : 1, sizeof(*turns));
	if (!turns)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *turn = json_array_get(h, i);
		char path[32];
		snprintf(path, sizeof(path), "history[%zu]", i);
		int rc = request_json_fields(turn, path, keys, err);
		if (rc == 0 && (rc = request_json_string(turn, "question", true, &turns[i].question, err)) < 0)
			nested_error(err, path, rc);
		if (rc == 0 && (rc = request_json_string(turn, "sql", true, &turns[i].sql, err)) < 0)
			nested_error(err, path, rc);
		if (rc == 0 && (strlen(turns[i].question) > T2S_QUESTION_MAX_BYTES || strlen(turns[i].sql) > 100000))
			rc = t2s_error_set(err, T2S_ERR_INVALID, "field '%s' is too long", path);
		if (rc < 0) {
			free(turns);
			return rc;
		}
	}
	*ret = turns;
	*ret_n = n;
	return 0;
}

int generate_args_read(struct http_request *req, const struct generate_env *env, json_t *args,
		       struct generate_request *rq, const char **ret_database, struct prompt_pair **ret_history,
		       bool *big_as_strings, struct t2s_error *err)
{
	static const char *const fields[] = {"database", "question", "evidence", "history", "options", NULL};
	struct prompt_pair *history = NULL;
	int rc = request_json_fields(args, NULL, fields, err);
	if (rc == 0)
		rc = request_json_string(args, "database", true, ret_database, err);
	if (rc == 0)
		rc = request_json_text(args, "question", true, &rq->question, err);
	if (rc == 0)
		rc = request_json_text(args, "evidence", false, &rq->evidence, err);
	if (rc == 0)
		rc = read_history(args, &history, &rq->n_history, err);
	bool key_capped = false;
	long max_timeout_ms = timeout_cap(req, env, &key_capped);
	if (rc == 0 && (rc = read_options(args, env, max_timeout_ms, rq, big_as_strings, err)) < 0 && key_capped &&
	    strstr(err->message, "'options.timeout_ms'")) {
		size_t n = strlen(err->message);
		snprintf(err->message + n, sizeof(err->message) - n, " for an API key (limits.key_max_timeout_ms)");
	}
	if (rc == 0 && rq->timeout_ms <= 0 && env->options.timeout_ms > max_timeout_ms)
		rq->timeout_ms = max_timeout_ms; /* the default budget, cut to the key's cap */
	if (rc < 0) {
		free(history);
		return rc;
	}
	rq->history = history;
	*ret_history = history;
	return 0;
}

int generate_body_read(struct http_request *req, const struct generate_env *env, struct generate_request *rq,
		       const char **ret_database, struct prompt_pair **ret_history, bool *big_as_strings,
		       json_t **ret_body, struct t2s_error *err)
{
	static const char *const fields[] = {"database", "question", "evidence", "history", "options", NULL};
	json_t *body = NULL;
	int rc = request_json_object(req, fields, &body, err);
	if (rc == 0)
		rc = generate_args_read(req, env, body, rq, ret_database, ret_history, big_as_strings, err);
	if (rc < 0) {
		json_decref(body);
		return rc;
	}
	*ret_body = body;
	return 0;
}
