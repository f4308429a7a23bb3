/*
 * http_reply.c - building responses: JSON bodies and RFC 9457 problems.
 */
#include "server/http.h"

#include "common/clock.h"
#include "common/json_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

const char *http_request_header(struct http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *http_request_query(struct http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

static void set_body(struct http_response *res, int status, const char *content_type, char *body, size_t len)
{
	free(res->body);
	res->status = status;
	res->content_type = content_type;
	res->body = body;
	res->len = len;
}

void http_reply_json(struct http_response *res, int status, json_t *json)
{
	size_t len = 0;
	char *text = json_text_compact(json, &len);
	json_decref(json);
	http_reply_json_text(res, status, text, len);
}

void http_reply_json_text(struct http_response *res, int status, char *text, size_t len)
{
	if (!text) {
		static const char fallback[] = "{\"type\":\"urn:text2sqld:problem:internal\",\"title\":\"Internal "
					       "error\",\"status\":500,\"detail\":\"could not encode the response\"}";
		set_body(res, 500, "application/problem+json", strdup(fallback), sizeof(fallback) - 1);
		return;
	}
	set_body(res, status, "application/json", text, len);
}

void http_reply_text(struct http_response *res, int status, const char *content_type, const char *text,
		     size_t len)
{
	char *copy = malloc(len + 1);
	if (copy) {
		memcpy(copy, text, len);
		copy[len] = '\0';
	}
	set_body(res, copy ? status : 500, content_type, copy, copy ? len : 0);
}

void http_reply_problem(struct http_response *res, struct http_request *req, int status, const char *slug,
			const char *title, const char *detail)
{
	char type[128];
	snprintf(type, sizeof(type), "urn:text2sqld:problem:%s", slug);
	json_t *p = json_object();
	json_object_set_new(p, "type", json_string(type));
	json_object_set_new(p, "title", json_string(title));
	json_object_set_new(p, "status", json_integer(status));
	json_t *d = json_string(detail ? detail : title);
	json_object_set_new(p, "detail", d ? d : json_string("(detail not valid UTF-8)"));
	if (req) {
		json_t *inst = json_string(req->path);
		if (inst)
			json_object_set_new(p, "instance", inst);
		json_object_set_new(p, "request_id", json_string(req->request_id));
	}
	http_reply_json(res, status, p);
	if (res->status == status)
		res->content_type = "application/problem+json";
	res->retry_after_s = res->status == 503 ? HTTP_RETRY_AFTER_UNAVAILABLE_S : 0;
}

int http_reply_header(struct http_response *res, const char *name, const char *value)
{
	if (res->n_headers >= HTTP_MAX_EXTRA_HEADERS)
		return -T2S_ERR_INTERNAL;
	res->headers[res->n_headers].name = name;
	res->headers[res->n_headers].value = value;
	res->n_headers++;
	return 0;
}

int http_status_for(enum t2s_code code)
{
	switch (code) {
	case T2S_ERR_INVALID: return 400;
	case T2S_ERR_SQL_INVALID: return 400;
	case T2S_ERR_NOT_FOUND: return 404;
	case T2S_ERR_FORBIDDEN: return 403;
	case T2S_ERR_SQL_REJECTED: return 403;
	case T2S_ERR_SQL_FAILED: return 422;
	case T2S_ERR_TIMEOUT: return 504;
	case T2S_ERR_UNAVAILABLE: return 503;
	case T2S_ERR_NOMEM: return 503;
	case T2S_ERR_UPSTREAM: return 502;
	case T2S_ERR_UPSTREAM_TIMEOUT: return 504;
	case T2S_ERR_GENERATION_UNAVAILABLE: return 422; /* not configured: no retry helps, so no 503 */
	case T2S_ERR_GENERATION_FAILED: return 422;
	case T2S_ERR_UNANSWERABLE: return 422;
	case T2S_ERR_QUOTA: return 409;
	case T2S_ERR_LOW_CONFIDENCE: return 422;
	case T2S_ERR_BUILTIN_REFUSED: return 422;
	default: return 500;
	}
}

void http_reply_error(struct http_response *res, struct http_request *req, const struct t2s_error *err)
{
	http_reply_error_ext(res, req, err, NULL);
}

void http_reply_error_ext(struct http_response *res, struct http_request *req, const struct t2s_error *err,
			  json_t *extensions)
{
	enum t2s_code code = err->code == T2S_OK ? T2S_ERR_INTERNAL : err->code;
	int status = http_status_for(code);
	http_reply_problem(res, req, status, t2s_code_slug(code), t2s_code_title(code),
			   err->message[0] ? err->message : t2s_code_title(code));
	if (!extensions)
		return;
	/* Re-encode with the extension members (RFC 9457 section 3.2); the standard members win. */
	json_t *p = res->status == status ? json_loadb(res->body, res->len, 0, NULL) : NULL;
	const char *key;
	json_t *v;
	json_object_foreach(extensions, key, v)
		if (p && !json_object_get(p, key))
			json_object_set(p, key, v);
	json_decref(extensions);
	if (p) {
		http_reply_json(res, status, p);
		if (res->status == status)
			res->content_type = "application/problem+json";
	}
}

void http_request_id_new(char out[33])
{
	unsigned char rnd[16];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		double t = clock_now_ms();
		memcpy(rnd, &t, sizeof(t));
		memcpy(rnd + 8, &out, sizeof(void *) < 8 ? sizeof(void *) : 8);
	}
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", rnd[i]);
}

static const char *reason_phrase(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

size_t http_problem_raw(char *buf, size_t size, int status, const char *slug, const char *title, const char *detail,
			const char *request_id, int retry_after_s)
{
	char type[128];
	snprintf(type, sizeof(type), "urn:text2sqld:problem:%s", slug);
	json_t *p = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type", type, "title", title, "status", status, "detail",
			      detail, "request_id", request_id);
	char *body = p ? json_dumps(p, JSON_COMPACT) : NULL;
	json_decref(p);
	if (!body)
		return 0;
	char retry[48] = "";
	if (retry_after_s > 0)
		snprintf(retry, sizeof(retry), "Retry-After: %d\r\n", retry_after_s);
	int n = snprintf(buf, size,
			 "HTTP/1.1 %d %s\r\nContent-Type: application/problem+json\r\nCache-Control: no-store\r\n"
			 "Connection: close\r\nX-Request-Id: %s\r\n%sContent-Length: %zu\r\n\r\n%s",
			 status, reason_phrase(status), request_id, retry, strlen(body), body);
	free(body);
	return n > 0 && (size_t)n < size ? (size_t)n : 0;
}
