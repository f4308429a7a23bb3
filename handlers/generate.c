/*
 * generate.c - POST /generate and POST /query {database, question,
 * evidence?, history?, options?}: parse and check the request, make one
 * pipeline call (pipeline_generate: the main job behind the answer cache),
 * answer its body (generate_json.h) or problem.
 * /query's answer also carries the rows of the final statement.
 *
 * The answer cache: Cache-Control: no-cache asks for a fresh answer (it is
 * still stored); X-Cache says hit, miss or bypass when caching is on, and a
 * hit carries Age (seconds since the answer was stored).
 *
 * A plain request whose client disconnects stops too: an observer asks
 * http_request_client_gone after each stage, so no model call starts once
 * the client has gone (the one under way finishes), and a database
 * statement under way is cancelled (generate_observer.gone).
 *
 * POST /query/stream, and /query with Accept: text/event-stream, answer as server-sent events
 * (server/http_stream.h): one event per pipeline stage as it completes
 * (generate.h's observer), then "result" with the same body as the plain
 * answer, or "error" with the problem body.  Request errors found before
 * the pipeline starts are ordinary problem responses.
 */
#include "handlers/handlers.h"

#include "handlers/request_bodies.h"
#include "handlers/request_observer.h"
#include "handlers/request_json.h"
#include "handlers/result_csv.h"
#include "handlers/result_json.h"
#include "server/audit_request.h"
#include "server/http_stream.h"
#include "server/log.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* What a streamed /query owns while its worker runs (freed by job_free). */
struct stream_job {
	struct pipeline *pipeline;
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

static bool stream_gone(void *ctx)
{
	return http_stream_gone(ctx);
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
	struct pipeline_answer answer = {0};
	json_t *problem = NULL;
	sj->observer = (struct generate_observer){on_stage, s, stream_gone};
	sj->rq.observer = &sj->observer;
	int rc = pipeline_generate(sj->pipeline, &sj->rq, &answer, &problem, &err);
	struct http_request *req = http_stream_request(s);
	if (rc == 0) {
		json_t *body = pipeline_answer_json(&answer);
		audit_note_answer(req, sj->rq.db->cfg->name, sj->rq.question, body);
		send_event(s, "result", body);
		json_decref(body);
	} else if (rc == -T2S_ERR_CANCELLED || http_stream_gone(s)) {
		log_msg(LOG_INFO, "streamed query stopped: the client went away");
	} else {
		/* The problem body exactly as the plain answer would carry it. */
		audit_note_answer(req, sj->rq.db->cfg->name, sj->rq.question, problem);
		audit_note_status(req, http_status_for(err.code));
		struct http_response pr = {0};
		http_reply_error_ext(&pr, req, &err, problem);
		problem = NULL;
		if (pr.body && http_stream_event(s, "error", pr.body) < 0) {
			/* The client went away (or no memory): the stream's last event is lost, nothing else to do. */
		}
		free(pr.body);
	}
	pipeline_answer_release(&answer);
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
	*sj = (struct stream_job){.pipeline = &req->app->pipeline, .rq = *rq, .body = body, .history = history, .key = key};
	int rc = http_stream_start(req, res, run_stream, sj, job_free);
	if (rc < 0) {
		struct t2s_error err = {0};
		t2s_error_set(&err, -rc, "could not start the event stream");
		http_reply_error(res, req, &err);
	}
}


/* Does Cache-Control hold the no-cache directive (RFC 9111 5.2.1.4)? */
static bool wants_fresh(struct http_request *req)
{
	const char *cc = http_request_header(req, "Cache-Control");
	while (cc && *cc) {
		cc += strspn(cc, " \t,");
		size_t n = strcspn(cc, ",=; \t");
		if (n == 8 && strncasecmp(cc, "no-cache", 8) == 0)
			return true;
		cc += strcspn(cc, ",");
	}
	return false;
}

/* X-Cache and, for a hit, Age. */
static void cache_headers(struct http_request *req, struct http_response *res, const struct pipeline_answer *a)
{
	static const char *const status[] = {[PIPELINE_CACHE_HIT] = "hit", [PIPELINE_CACHE_MISS] = "miss",
					     [PIPELINE_CACHE_BYPASS] = "bypass"};
	if (a->cache == PIPELINE_CACHE_OFF)
		return;
	char age[32];
	snprintf(age, sizeof(age), "%ld", a->age_s);
	const char *v = a->from_cache ? arena_strdup(&req->arena, age) : NULL;
	if (http_reply_header(res, "X-Cache", status[a->cache]) < 0 || (v && http_reply_header(res, "Age", v) < 0)) {
		/* Cannot happen: at most two of HTTP_MAX_EXTRA_HEADERS; both only inform caches. */
	}
}

/* The rows of a /query answer (borrowed) as CSV; a 422 no-rows problem when its statement did not run. */
static void reply_csv(struct http_request *req, struct http_response *res, json_t *answer)
{
	json_t *columns = json_object_get(answer, "columns");
	if (!columns) {
		http_reply_problem(res, req, 422, "no-rows", "No rows to send as CSV",
				   "the answer's statement did not run; ask for JSON to see why");
		return;
	}
	result_csv_truncated_header(req, res, json_string_value(json_object_get(answer, "truncated_by")));
	result_csv_reply(req, res, columns, json_object_get(answer, "rows"), "attachment; filename=\"query.csv\"");
}

enum answer_form { FORM_GENERATE, FORM_QUERY, FORM_QUERY_STREAM };

static void handle(struct http_request *req, struct http_response *res, enum answer_form form)
{
	bool execute = form != FORM_GENERATE;
	const struct generate_env *env = pipeline_generate_env(&req->app->pipeline);
	struct t2s_error err = {0};
	json_t *body = NULL, *answer = NULL, *problem = NULL;
	struct pipeline_answer result = {0};
	struct prompt_pair *history = NULL;
	char *key = NULL;
	struct generate_request rq = {.max_rounds = -1, .candidates = -1, .execute = execute};
	const char *database = NULL;
	bool big_as_strings = req->cfg->execution.big_integers_as_strings;
	int csv = 0;
	if (form == FORM_QUERY && !http_accepts_event_stream(req) && (csv = result_csv_negotiate(req, res)) < 0)
		return;
	int rc = generate_body_read(req, env, &rq, &database, &history, &big_as_strings, &body, &err);
	if (rc == 0)
		rc = request_database(req, database, &rq.db, &err);
	if (rc == 0)
		rq.grant = request_grant(req, rq.db); /* the caller's tables: every stage, the statements, the cache key */
	if (rc == 0) {
		/* The cache key: the canonical request and the endpoint that answers it. */
		json_object_set_new(body, "endpoint", json_string(execute ? "query" : "generate"));
		key = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
		rq.request_key = key;
		rq.cache_bypass = wants_fresh(req);
		if (form == FORM_QUERY_STREAM || (execute && http_accepts_event_stream(req))) {
			start_stream(req, res, &rq, body, history, key); /* takes body, history and key */
			return;
		}
		struct generate_observer watch = request_client_observer(req);
		rq.observer = &watch;
		rc = pipeline_generate(&req->app->pipeline, &rq, &result, &problem, &err);
		if (rc == -T2S_ERR_CANCELLED)
			log_json(LOG_INFO, "request stopped: the client went away",
				 json_pack("{s:s}", "endpoint", execute ? "query" : "generate"));
	}
	if (rc == 0 && !(answer = pipeline_answer_json(&result)))
		rc = t2s_error_set(&err, T2S_ERR_NOMEM, "out of memory rendering the answer");
	if (database && body) /* the strings live in body, which a failed read has already freed */
		audit_note_answer(req, database, rq.question, rc == 0 ? answer : problem);
	if (rc == 0 && csv == 1) {
		reply_csv(req, res, answer);
		json_decref(answer);
		cache_headers(req, res, &result);
	} else if (rc == 0) {
		if (big_as_strings)
			result_json_stringify_big_integers(json_object_get(answer, "rows"));
		http_reply_json(res, 200, answer);
		cache_headers(req, res, &result);
	}
	else
		http_reply_error_ext(res, req, &err, problem);
	pipeline_answer_release(&result);
	free(key);
	free(history);
	json_decref(body);
}

void handle_generate(struct http_request *req, struct http_response *res)
{
	handle(req, res, FORM_GENERATE);
}

void handle_query(struct http_request *req, struct http_response *res)
{
	handle(req, res, FORM_QUERY);
}

void handle_query_stream(struct http_request *req, struct http_response *res)
{
	handle(req, res, FORM_QUERY_STREAM);
}
