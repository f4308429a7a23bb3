/*
 * fuzz_request_json.c - libFuzzer target: a request body as the handlers of
 * POST /execute, /link, /generate and /query read it
 * (handlers/request_bodies.h), without HTTP: only the body of the request
 * struct is set.  The first byte picks the endpoint, the rest is the body;
 * whatever the reader accepts must be usable as the handler uses it (the
 * strings it hands out are read to their end, the history walked).
 */
#include "handlers/request_bodies.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t touch(const char *s)
{
	return s ? strlen(s) : 0;
}

static void read_execute(struct http_request *req)
{
	struct execute_body b = {.max_rows = 1000};
	struct t2s_error err = {0};
	json_t *body = NULL;
	if (execute_body_read(req, 100000, &b, &body, &err) == 0) {
		if (!b.database || !b.sql || b.max_rows < 1 || b.max_rows > 100000)
			abort();
		touch(b.database);
		touch(b.sql);
		json_decref(body);
	} else if (body || !err.message[0]) {
		abort(); /* a refusal owns nothing and says why */
	}
}

static void read_link(struct http_request *req)
{
	struct link_body b = {.mode = 0};
	struct t2s_error err = {0};
	json_t *body = NULL;
	if (link_body_read(req, &b, &body, &err) == 0) {
		if (!b.database || !b.question || b.mode < 0 || b.top_k < 0 || b.top_k > 10000)
			abort();
		touch(b.database);
		touch(b.question);
		json_decref(body);
	} else if (body || !err.message[0]) {
		abort();
	}
}

static void read_generate(struct http_request *req)
{
	struct generate_env env = {.options = generate_options_default, .max_rows_limit = 100000};
	struct generate_request rq = {.max_rounds = -1, .candidates = -1};
	struct prompt_pair *history = NULL;
	const char *database = NULL;
	bool big = false;
	struct t2s_error err = {0};
	json_t *body = NULL;
	if (generate_body_read(req, &env, &rq, &database, &history, &big, &body, &err) == 0) {
		if (!database || !rq.question || rq.history != history)
			abort();
		touch(database);
		touch(rq.question);
		touch(rq.evidence);
		for (size_t i = 0; i < rq.n_history; i++)
			if (touch(history[i].question) == 0 || touch(history[i].sql) == 0)
				abort();
		/* The handler's cache key: the body with the endpoint, canonical. */
		json_object_set_new(body, "endpoint", json_string("generate"));
		free(json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS));
		free(history);
		json_decref(body);
	} else if (body || history || !err.message[0]) {
		abort();
	}
}

/* The process state the readers consult: the config's limits (a key's timeout cap). */
static struct config fuzz_config = {.limits = {.key_max_timeout_ms = 120000}};
static struct app fuzz_app = {.cfg = &fuzz_config};
static const struct config_api_key fuzz_key = {.name = "fuzz"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct http_request req;
	memset(&req, 0, sizeof(req));
	req.app = &fuzz_app;
	req.cfg = &fuzz_config;
	req.principal = data[0] & 4 ? &fuzz_key : NULL; /* with and without an API key */
	/* A copy of exactly the body's bytes, so reads past it are caught. */
	char *copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	req.body.buf = copy;
	req.body.len = size - 1;
	switch (data[0] % 3) {
	case 0:
		read_execute(&req);
		break;
	case 1:
		read_link(&req);
		break;
	default:
		read_generate(&req);
		break;
	}
	free(copy);
	return 0;
}
