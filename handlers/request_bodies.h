/*
 * request_bodies.h - the JSON body of each endpoint that computes on one
 * (POST /execute, /link, /generate, /query), read into that endpoint's
 * request fields: parse (request_json.h's strict rules: an object, no
 * unknown field), check every field's type and range, and nothing else.
 * Looking up the database and running the pipeline stay in the handler.
 *
 * Kept apart from the handlers so that the reading can be called without
 * HTTP (fuzz/fuzz_request_json.c): only req->body is read.
 *
 * Each reader returns 0 and *ret_body, the parsed body (a new reference the
 * caller decrefs; every string the reader hands out is borrowed from it), or
 * -T2S_ERR_INVALID / -T2S_ERR_NOMEM with err's message fit for a 400 problem
 * body, and then nothing is owned and *ret_body is untouched.
 */
#ifndef T2S_REQUEST_BODIES_H
#define T2S_REQUEST_BODIES_H

#include "common/contract.h"
#include "pipeline/pipeline.h"
#include "server/http.h"

#include <jansson.h>
#include <stdbool.h>

/* Most turns of a /generate or /query history. */
#define REQUEST_HISTORY_MAX_TURNS 50

/* POST /execute {database, sql, max_rows?, big_integers?}. */
struct execute_body {
	const char *database;
	const char *sql;
	long long max_rows;  /* in: the default (left when absent); out: the request's */
	bool big_as_strings; /* in: the config's default; out: the request's */
};
T2S_MUST_CHECK
int execute_body_read(struct http_request *req, long long max_rows_limit, struct execute_body *b, json_t **ret_body,
		      struct t2s_error *err);
/* The same fields read from args, an object parsed elsewhere (an MCP tool's arguments; borrowed: b's strings too). */
T2S_MUST_CHECK
int execute_args_read(struct http_request *req, json_t *args, long long max_rows_limit, struct execute_body *b,
		      struct t2s_error *err);

/* POST /link {database, question, top_k?, mode?}. */
struct link_body {
	const char *database;
	const char *question;
	const char *evidence; /* the user's hint; NULL when absent */
	long long top_k;      /* 0 when absent */
	int mode;        /* in: the default mode; out: the request's (enum link_mode) */
	bool features;   /* list the fill's candidates with their scorer features */
};
T2S_MUST_CHECK
int link_body_read(struct http_request *req, struct link_body *b, json_t **ret_body, struct t2s_error *err);

/*
 * POST /generate and /query {database, question, evidence?, history?,
 * options?}: fills rq's question, evidence, history, n_history and the
 * options (left at rq's values when absent), *ret_database and
 * *big_as_strings (in: the config's default).  On 0, *ret_history is the
 * history, malloc'd, or NULL when the body has none; the caller frees it
 * after the body's last use, and rq->history points at it.
 */
T2S_MUST_CHECK
int generate_body_read(struct http_request *req, const struct generate_env *env, struct generate_request *rq,
		       const char **ret_database, struct prompt_pair **ret_history, bool *big_as_strings,
		       json_t **ret_body, struct t2s_error *err);
/*
 * The same fields read from args, an object parsed elsewhere (an MCP tool's
 * arguments, borrowed: rq's strings point into it); the history as above.
 */
T2S_MUST_CHECK
int generate_args_read(struct http_request *req, const struct generate_env *env, json_t *args,
		       struct generate_request *rq, const char **ret_database, struct prompt_pair **ret_history,
		       bool *big_as_strings, struct t2s_error *err);

#endif
