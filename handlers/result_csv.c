/*
 * result_csv.c - result rows as CSV, written as they are sent (see
 * result_csv.h).
 */
#include "handlers/result_csv.h"

#include "common/json_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct csv_job {
	json_t *columns, *rows; /* references of their own */
	size_t next;            /* the next row; 0 before the header is written */
	bool header_done;
};

/* s (n bytes) as one field: quoted when it must be, and when empty (an unquoted empty field is NULL). */
static int add_text(struct strbuf *out, const char *s, size_t n)
{
	if (n && strcspn(s, ",\"\r\n") >= n && !memchr(s, '\0', n))
		return strbuf_add(out, s, n);
	if (strbuf_add(out, "\"", 1) < 0)
		return -T2S_ERR_INVALID;
	for (size_t i = 0; i < n; i++) {
		const char *q = memchr(s + i, '"', n - i);
		size_t run = q ? (size_t)(q - (s + i)) + 1 : n - i;
		if (strbuf_add(out, s + i, run) < 0 || (q && strbuf_add(out, "\"", 1) < 0))
			return -T2S_ERR_INVALID;
		i += run - 1;
	}
	return strbuf_add(out, "\"", 1);
}

static int add_value(struct strbuf *out, const json_t *v)
{
	char num[32];
	switch (json_typeof(v)) {
	case JSON_NULL:
		return 0;
	case JSON_STRING:
		return add_text(out, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		return strbuf_adds(out, num);
	case JSON_REAL: { /* the shortest text that reads back as the same double */
		double d = json_real_value(v);
		for (int digits = 15; digits <= 17; digits++) {
			snprintf(num, sizeof(num), "%.*g", digits, d);
			if (strtod(num, NULL) == d)
				break;
		}
		return strbuf_adds(out, num);
	}
	case JSON_TRUE:
		return strbuf_adds(out, "true");
	case JSON_FALSE:
		return strbuf_adds(out, "false");
	default: { /* an array, an object: as the JSON answer writes it */
		struct json_text t = {0};
		json_text_add(&t, v);
		size_t n = 0;
		char *text = json_text_detach(&t, &n);
		int rc = text ? add_text(out, text, n) : -T2S_ERR_NOMEM;
		free(text);
		return rc;
	}
	}
}

int result_csv_record(const json_t *values, struct strbuf *out)
{
	size_t i;
	const json_t *v;
	json_array_foreach(values, i, v) {
		if ((i && strbuf_add(out, ",", 1) < 0) || add_value(out, v) < 0)
			return -T2S_ERR_INVALID;
	}
	return strbuf_add(out, "\r\n", 2);
}

/* http_fill_fn: the header, then rows until the piece holds RESULT_CSV_PIECE bytes. */
static int fill(void *ctx, struct strbuf *out)
{
	struct csv_job *job = ctx;
	if (!job->header_done) {
		if (result_csv_record(job->columns, out) < 0)
			return -T2S_ERR_INVALID;
		job->header_done = true;
	}
	size_t n = json_array_size(job->rows);
	while (job->next < n && out->len < RESULT_CSV_PIECE)
		if (result_csv_record(json_array_get(job->rows, job->next++), out) < 0)
			return -T2S_ERR_INVALID; /* a row longer than a piece may be: cannot happen under the byte limit */
	return job->next < n;
}

static void job_free(void *ctx)
{
	struct csv_job *job = ctx;
	json_decref(job->columns);
	json_decref(job->rows);
	free(job);
}

void result_csv_reply(struct http_request *req, struct http_response *res, json_t *columns, json_t *rows,
		      const char *disposition)
{
	struct csv_job *job = calloc(1, sizeof(*job));
	if (!job) {
		http_reply_problem(res, req, 500, "internal", "Internal error", "out of memory writing CSV");
		return;
	}
	*job = (struct csv_job){.columns = json_incref(columns), .rows = json_incref(rows)};
	http_reply_produced(res, 200, RESULT_CSV_CONTENT_TYPE, fill, job, job_free);
	if (http_reply_header(res, "Content-Disposition", disposition) < 0) {
		/* Cannot happen: with X-Cache, Age and X-Truncated-By it is the fourth header at most. */
	}
}

int result_csv_negotiate(struct http_request *req, struct http_response *res)
{
	static const char *const offers[] = {"application/json", "text/csv"};
	int form = http_negotiate(req, offers, 2);
	if (form < 0)
		http_reply_problem(res, req, 406, "not-acceptable", "Not acceptable",
				   "this endpoint answers application/json or text/csv (POST /query also "
				   "text/event-stream); the Accept header allows none of them");
	return form;
}

void result_csv_truncated_header(struct http_request *req, struct http_response *res, const char *truncated_by)
{
	const char *v = truncated_by ? arena_strdup(&req->arena, truncated_by) : NULL;
	if (v && http_reply_header(res, "X-Truncated-By", v) < 0) {
		/* Cannot happen: with X-Cache, Age and Content-Disposition it is the fourth header at most. */
	}
}
