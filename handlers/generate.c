/*
 * generate.c - POST /generate and POST /query {database, question,
 * evidence?, history?, options?}: parse and check the request, make one
 * pipeline call (pipeline/generate/generate.h), answer its body or problem.
 * /query's answer also carries the rows of the final statement.
 *
 * /query with Accept: text/event-stream answers as server-sent events
 * (server/http_stream.h): one event per pipeline stage as it completes
 * (generate.h's observer), then "result" with the same body as the plain
 * answer, or "error" with the problem body.  Request errors found before
 * the pipeline starts are ordinary problem responses.
 */
#include "handlers/handlers.h"

#include "handlers/request_json.h"
#include "handlers/result_json.h"
#include "pipeline/generate/generate.h"
#include "server/http_stream.h"
#include "server/log.h"

#include <stdio.h>
#include <string.h>

#define QUESTION_MAX_BYTES 4000
#define HISTORY_MAX_TURNS 50

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

static int read_options(json_t *body, const struct generate_env *env, struct generate_request *rq,
			bool *big_as_strings, struct t2s_error *err)
{
	static const char *const keys[] = {"max_rounds", "candidates", "max_rows", "timeout_ms", "big_integers", NULL};
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
	if (rc == 0 && (rc = request_json_int(o, "timeout_ms", 100, env->options.max_timeout_ms, &timeout, err)) < 0)
		return nested_error(err, "options", rc);
	if (rc == 0 && (rc = result_json_big_integers(o, "big_integers", "options.big_integers", big_as_strings, err)) < 0)
		return rc;
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
	if (n > HISTORY_MAX_TURNS)
		return t2s_error_set(err, T2S_ERR_INVALID, "field 'history' has %zu turns, more than %d", n,
				     HISTORY_MAX_TURNS);
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
		if (rc == 0 && (strlen(turns[i].question) > QUESTION_MAX_BYTES || strlen(turns[i].sql) > 100000))
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

/* What a streamed /query owns while its worker runs (freed by job_free). */
struct stream_job {
	const struct generate_env *env;
	struct generate_request rq;
	struct generate_observer observer;
	json_t *body;                /* the request; rq's strings point into it */
	struct prompt_pair *history;
	char *key;
};

static void job_free(void *p)
{
	struct stream_job *sj = p;
	json_decref(sj->body);
	free(sj->history);
	free(sj->key);
	free(sj);
}

/* Send one JSON object as event `name`; non-zero when the client is gone. */
static int send_event(struct http_stream *s, const char *name, json_t *data)
{
	char *text = json_dumps(data, JSON_COMPACT);
	if (!text)
		return 0; /* out of memory: the event is lost, the stream goes on */
	int rc = http_stream_event(s, name, text);
	free(text);
	return rc == -T2S_ERR_CANCELLED;
}

static int on_stage(void *ctx, const char *stage, json_t *event)
{
	return send_event(ctx, stage, event);
}

/* The stream's worker: the pipeline with an observer, then "result" or "error". */
static void run_stream(struct http_stream *s, void *p)
{
	struct stream_job *sj = p;
	struct t2s_error err = {0};
	json_t *answer = NULL, *problem = NULL;
	sj->observer = (struct generate_observer){on_stage, s};
	sj->rq.observer = &sj->observer;
	int rc = generate_run(sj->env, &sj->rq, &answer, &problem, &err);
	if (rc == 0) {
		send_event(s, "result", answer);
	} else if (rc == -T2S_ERR_CANCELLED || http_stream_gone(s)) {
		log_msg(LOG_INFO, "streamed query stopped: the client went away");
	} else {
		/* The problem body exactly as the plain answer would carry it. */
		struct http_response pr = {0};
		http_reply_error_ext(&pr, http_stream_request(s), &err, problem);
		problem = NULL;
		if (pr.body)
			http_stream_event(s, "error", pr.body);
		free(pr.body);
	}
	json_decref(answer);
	json_decref(problem);
}

/* Hand the checked request to a stream; on failure res gets a problem. */
static void start_stream(struct http_request *req, struct http_response *res, const struct generate_request *rq,
			 json_t *body, struct prompt_pair *history, char *key)
{
	struct stream_job *sj = calloc(1, sizeof(*sj));
	if (!sj) {
		json_decref(body);
		free(history);
		free(key);
		struct t2s_error err = {.code = T2S_ERR_NOMEM, .message = "out of memory"};
		http_reply_error(res, req, &err);
		return;
	}
	*sj = (struct stream_job){.env = &req->app->generate, .rq = *rq, .body = body, .history = history, .key = key};
	int rc = http_stream_start(req, res, run_stream, sj, job_free);
	if (rc < 0) {
		struct t2s_error err = {0};
		t2s_error_set(&err, -rc, "could not start the event stream");
		http_reply_error(res, req, &err);
	}
}

static void handle(struct http_request *req, struct http_response *res, bool execute)
{
	static const char *const fields[] = {"database", "question", "evidence", "history", "options", NULL};
	const struct generate_env *env = &req->app->generate;
	struct t2s_error err = {0};
	json_t *body = NULL, *answer = NULL, *problem = NULL;
	struct prompt_pair *history = NULL;
	char *key = NULL;
	struct generate_request rq = {.max_rounds = -1, .candidates = -1, .execute = execute};
	const char *database = NULL;
	bool big_as_strings = req->app->cfg->execution.big_integers_as_strings;
	int rc = request_json_object(req, fields, &body, &err);
	if (rc == 0)
		rc = request_json_string(body, "database", true, &database, &err);
	if (rc == 0)
		rc = request_json_string(body, "question", true, &rq.question, &err);
	if (rc == 0)
		rc = request_json_string(body, "evidence", false, &rq.evidence, &err);
	if (rc == 0 && strlen(rq.question) > QUESTION_MAX_BYTES)
		rc = t2s_error_set(&err, T2S_ERR_INVALID, "field 'question' is longer than %d bytes", QUESTION_MAX_BYTES);
	if (rc == 0 && rq.evidence && strlen(rq.evidence) > QUESTION_MAX_BYTES)
		rc = t2s_error_set(&err, T2S_ERR_INVALID, "field 'evidence' is longer than %d bytes", QUESTION_MAX_BYTES);
	if (rc == 0)
		rc = read_history(body, &history, &rq.n_history, &err);
	if (rc == 0)
		rc = read_options(body, env, &rq, &big_as_strings, &err);
	if (rc == 0)
		rc = request_database(req, database, &rq.db, &err);
	if (rc == 0) {
		rq.history = history;
		/* The cache key: the canonical request and the endpoint that answers it. */
		json_object_set_new(body, "endpoint", json_string(execute ? "query" : "generate"));
		key = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
		rq.request_key = key;
		if (execute && http_accepts_event_stream(req)) {
			start_stream(req, res, &rq, body, history, key); /* takes body, history and key */
			return;
		}
		rc = generate_run(env, &rq, &answer, &problem, &err);
	}
	if (rc == 0 && big_as_strings)
		result_json_stringify_big_integers(json_object_get(answer, "rows"));
	if (rc == 0)
		http_reply_json(res, 200, answer);
	else
		http_reply_error_ext(res, req, &err, problem);
	free(key);
	free(history);
	json_decref(body);
}

void handle_generate(struct http_request *req, struct http_response *res)
{
	handle(req, res, false);
}

void handle_query(struct http_request *req, struct http_response *res)
{
	handle(req, res, true);
}
