/*
 * model_client_http.c - the transport of model_client (see model_client.h):
 * one HTTP exchange with a model server, retried, timed and classified.
 *
 * One call = one curl easy handle taken from a small mutex-protected pool
 * (so that keep-alive connections are reused across calls and threads, one
 * thread per handle at a time) and put back when the call ends.  A call makes
 * up to 1 + retries attempts; mc_perform() owns that loop, the classification
 * of each outcome, and the final error message.  The JSON side
 * (model_client.c) only builds the request body and reads the response body.
 *
 * Error messages name the stage and the HTTP status, and may quote the
 * server's own error message (at most MC_DETAIL_MAX bytes, withheld when it
 * contains the API key).  They never name the base URL or the key.
 */
#define _POSIX_C_SOURCE 200809L

#include "pipeline/models/model_client_internal.h"

#include "common/limits.h"
#include "common/trace.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MC_RETRY_AFTER_MAX_MS 5000L        /* cap on a 429's Retry-After */
#define MC_BACKOFF_BASE_MS 100L            /* first backoff, doubled per attempt */
#define MC_BACKOFF_MAX_MS 2000L
#define MC_POOL_MAX 16                     /* idle curl handles kept */
#define MC_RETRIES_MAX 10
#define MC_DETAIL_MAX 200                  /* bytes of the server's message quoted */

/* ---- handle pool ------------------------------------------------------- */

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static CURL *pool[MC_POOL_MAX];
static size_t pool_len;

/* A handle with default options (live connections kept), or NULL. */
static CURL *pool_acquire(void)
{
	CURL *h = NULL;

	pthread_mutex_lock(&pool_lock);
	if (pool_len > 0)
		h = pool[--pool_len];
	pthread_mutex_unlock(&pool_lock);
	if (h) {
		curl_easy_reset(h);
		return h;
	}
	return curl_easy_init();
}

/* Give h back to the pool, or close it when the pool is full.  h may be NULL. */
static void pool_release(CURL *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&pool_lock);
	if (pool_len < MC_POOL_MAX) {
		pool[pool_len++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&pool_lock);
	if (h)
		curl_easy_cleanup(h);
}

int model_client_global_init(void)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -T2S_ERR_INTERNAL;
	return 0;
}

void model_client_global_cleanup(void)
{
	pthread_mutex_lock(&pool_lock);
	while (pool_len > 0)
		curl_easy_cleanup(pool[--pool_len]);
	pthread_mutex_unlock(&pool_lock);
	curl_global_cleanup();
}

/* ---- small helpers ----------------------------------------------------- */

double mc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

const char *mc_stage_name(const struct model_endpoint *ep)
{
	return ep->stage && *ep->stage ? ep->stage : "?";
}

/* ---- one HTTP exchange ------------------------------------------------- */

/* The response of one attempt.  data is NUL-terminated when not NULL. */
struct mc_body {
	char *data;
	size_t len;
	size_t cap;
	size_t max;   /* the request's body_max */
	int overflow; /* the body grew past max */
	int nomem;
	long retry_after_s; /* Retry-After in seconds, -1 when absent */
};

static void mc_body_reset(struct mc_body *b)
{
	size_t max = b->max;
	free(b->data);
	memset(b, 0, sizeof(*b));
	b->max = max;
	b->retry_after_s = -1;
}

static size_t mc_body_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct mc_body *b = userdata;
	size_t n = size * nmemb, cap;
	char *p;

	if (n > b->max - b->len) {
		b->overflow = 1;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		if (cap > b->max + 1)
			cap = b->max + 1;
		p = realloc(b->data, cap);
		if (!p) {
			b->nomem = 1;
			return 0;
		}
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, ptr, n);
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

/*
 * Records "Retry-After: <seconds>" or "Retry-After: <HTTP-date>" (RFC 9110
 * 10.2.3) as seconds from now: a date already past is 0, one too far away
 * is held at 1000000 (the caller caps the wait and the call's budget).
 */
static size_t mc_header(char *buf, size_t size, size_t nitems, void *userdata)
{
	static const char name[] = "retry-after:";
	struct mc_body *b = userdata;
	size_t n = size * nitems, i = sizeof(name) - 1;
	long v = 0;
	int digits = 0;

	if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
		b->retry_after_s = -1; /* a new response (after 100 Continue...) */
		return n;
	}
	if (n <= i || strncasecmp(buf, name, i) != 0)
		return n;
	while (i < n && (buf[i] == ' ' || buf[i] == '\t'))
		i++;
	size_t start = i;
	for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++, digits++)
		if (v < 1000000)
			v = v * 10 + (buf[i] - '0');
	while (i < n && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' || buf[i] == '\n'))
		i++;
	if (digits > 0 && i == n) {
		b->retry_after_s = v;
		return n;
	}
	char date[64]; /* an IMF-fixdate is 29 characters */
	size_t len = n - start;
	while (len > 0 && (buf[start + len - 1] == '\r' || buf[start + len - 1] == '\n' || buf[start + len - 1] == ' '))
		len--;
	if (digits > 0 || len == 0 || len >= sizeof(date))
		return n;
	memcpy(date, buf + start, len);
	date[len] = '\0';
	time_t when = curl_getdate(date, NULL);
	if (when == (time_t)-1)
		return n;
	double ahead = difftime(when, time(NULL));
	b->retry_after_s = ahead <= 0 ? 0 : ahead >= 1000000 ? 1000000 : (long)ahead;
	return n;
}

/*
 * Copy into out (size outsz) the error message of an OpenAI-style error
 * body ({"error": {"message"}}, {"error": "..."}, {"message"} or
 * {"detail"}), shortened at a UTF-8 boundary, control characters blanked.
 * out is "" when there is none, or when it quotes api_key.
 */
static void mc_error_detail(const struct mc_body *b, const char *api_key, char *out, size_t outsz)
{
	json_t *root, *e;
	const char *msg = NULL;
	size_t n, i;

	out[0] = '\0';
	if (!b->data)
		return;
	root = json_loadb(b->data, b->len, 0, NULL);
	if (!root)
		return;
	e = json_object_get(root, "error");
	if (json_is_object(e))
		msg = json_string_value(json_object_get(e, "message"));
	else if (json_is_string(e))
		msg = json_string_value(e);
	if (!msg)
		msg = json_string_value(json_object_get(root, "message"));
	if (!msg)
		msg = json_string_value(json_object_get(root, "detail"));
	if (msg && !(api_key && *api_key && strstr(msg, api_key))) {
		n = strlen(msg);
		if (n > outsz - 1) {
			n = outsz - 1;
			while (n > 0 && ((unsigned char)msg[n] & 0xC0) == 0x80)
				n--;
		}
		for (i = 0; i < n; i++)
			out[i] = (unsigned char)msg[i] < 0x20 ? ' ' : msg[i];
		out[n] = '\0';
	}
	json_decref(root);
}

/* How an attempt failed; turned into the message once attempts are over. */
enum mc_failure { MC_FAIL_HTTP, MC_FAIL_TIMEOUT, MC_FAIL_UNREACHABLE, MC_FAIL_TRANSPORT,
		  MC_FAIL_TOO_BIG, MC_FAIL_NOMEM, MC_FAIL_BAD_URL };

static struct curl_slist *mc_headers(const struct model_endpoint *ep, int post)
{
	struct curl_slist *list = NULL, *next;
	char *auth;
	size_t n;

	if (post && !(list = curl_slist_append(list, "Content-Type: application/json")))
		return NULL;
	if (!(next = curl_slist_append(list, "Accept: application/json")))
		goto fail;
	list = next;
	if (!(next = curl_slist_append(list, "Expect:")))
		goto fail;
	list = next;
	char trace[sizeof("traceparent: ") + TRACE_PARENT_LEN];
	memcpy(trace, "traceparent: ", sizeof("traceparent: ") - 1);
	if (trace_child(trace + sizeof("traceparent: ") - 1, sizeof(trace) - (sizeof("traceparent: ") - 1))) {
		if (!(next = curl_slist_append(list, trace)))
			goto fail;
		list = next;
	}
	if (ep->api_key && *ep->api_key) {
		n = strlen(ep->api_key) + sizeof("Authorization: Bearer ");
		if (!(auth = malloc(n)))
			goto fail;
		memcpy(auth, "Authorization: Bearer ", sizeof("Authorization: Bearer ") - 1);
		memcpy(auth + sizeof("Authorization: Bearer ") - 1, ep->api_key,
		       strlen(ep->api_key) + 1);
		next = curl_slist_append(list, auth);
		free(auth);
		if (!next)
			goto fail;
		list = next;
	}
	return list;
fail:
	curl_slist_free_all(list);
	return NULL;
}

/* base_url without its trailing slashes, then path; malloc'd or NULL. */
static char *mc_url(const char *base_url, const char *path)
{
	size_t n = strlen(base_url), p = strlen(path);
	char *url;

	while (n > 0 && base_url[n - 1] == '/')
		n--;
	if (!(url = malloc(n + p + 1)))
		return NULL;
	memcpy(url, base_url, n);
	memcpy(url + n, path, p + 1);
	return url;
}

static void mc_setopts(CURL *h, const struct mc_request *rq, const char *url,
		       struct curl_slist *headers, struct mc_body *b)
{
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, rq->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, rq->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "text2sqld");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, mc_body_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, mc_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, b);
	if (rq->body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body);
	} else {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	}
}

/* Wait before attempt number `attempt + 1` when no Retry-After applies. */
static long mc_backoff_ms(int attempt, uint64_t *rng)
{
	long wait = MC_BACKOFF_BASE_MS;
	int i;

	for (i = 1; i < attempt && wait < MC_BACKOFF_MAX_MS; i++)
		wait *= 2;
	if (wait > MC_BACKOFF_MAX_MS)
		wait = MC_BACKOFF_MAX_MS;
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return wait / 2 + (long)(*rng % (uint64_t)(wait / 2 + 1)); /* equal jitter */
}

/* Sort the outcome of a failed attempt; returns whether it may be retried. */
static int mc_classify(CURLcode cc, long status, const struct mc_body *b, enum mc_failure *ret)
{
	if (cc == CURLE_OK) {
		*ret = MC_FAIL_HTTP;
		return status == 429 || status == 408 || status >= 500;
	}
	switch (cc) {
	case CURLE_WRITE_ERROR:
		*ret = b->overflow ? MC_FAIL_TOO_BIG : b->nomem ? MC_FAIL_NOMEM : MC_FAIL_TRANSPORT;
		return 0;
	case CURLE_OUT_OF_MEMORY:
		*ret = MC_FAIL_NOMEM;
		return 0;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		*ret = MC_FAIL_BAD_URL;
		return 0;
	case CURLE_OPERATION_TIMEDOUT:
		*ret = MC_FAIL_TIMEOUT;
		return 1;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		*ret = MC_FAIL_UNREACHABLE;
		return 1;
	default:
		*ret = MC_FAIL_TRANSPORT;
		return 1;
	}
}

/* The error of the last failed attempt, as model_client.h documents it. */
static int mc_fail(const struct mc_request *rq, enum mc_failure f, CURLcode cc, long status,
		   const struct mc_body *b, int attempts, struct t2s_error *err)
{
	const char *stage = mc_stage_name(rq->ep);
	const char *s = attempts == 1 ? "" : "s";
	char detail[MC_DETAIL_MAX + 1];

	switch (f) {
	case MC_FAIL_HTTP:
		mc_error_detail(b, rq->ep->api_key, detail, sizeof(detail));
		return t2s_error_set(err, T2S_ERR_UPSTREAM,
				     "model server of stage '%s' answered HTTP %ld (%d attempt%s)%s%s",
				     stage, status, attempts, s, detail[0] ? ": " : "", detail);
	case MC_FAIL_TIMEOUT:
		return t2s_error_set(err, T2S_ERR_UPSTREAM_TIMEOUT,
				     "model server of stage '%s' did not answer within %ld ms (%d attempt%s)",
				     stage, rq->timeout_ms, attempts, s);
	case MC_FAIL_UNREACHABLE:
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE,
				     "model server of stage '%s' is unreachable: %s (%d attempt%s)",
				     stage, curl_easy_strerror(cc), attempts, s);
	case MC_FAIL_TOO_BIG:
		return t2s_error_set(err, T2S_ERR_UPSTREAM,
				     "model server of stage '%s' sent a response larger than %zu bytes%s",
				     stage, rq->body_max,
				     rq->body_max < MODEL_BODY_MAX ? " (the bound its max_tokens sets)" : "");
	case MC_FAIL_NOMEM:
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading a model response");
	case MC_FAIL_BAD_URL:
		return t2s_error_set(err, T2S_ERR_UPSTREAM,
				     "base_url of stage '%s' is not a usable http(s) URL", stage);
	case MC_FAIL_TRANSPORT:
	default:
		return t2s_error_set(err, T2S_ERR_UPSTREAM,
				     "transport error talking to the model server of stage '%s': %s (%d attempt%s)",
				     stage, curl_easy_strerror(cc), attempts, s);
	}
}

/*
 * Run rq until a 2xx arrives or attempts are over.  On success *ret_body is
 * the malloc'd, NUL-terminated body (caller frees) and *ret_len its length.
 * stats->attempts, ->http_status and ->elapsed_ms are updated either way.
 */
int mc_perform(const struct mc_request *rq, char **ret_body, size_t *ret_len,
	       struct model_call_stats *stats, struct t2s_error *err)
{
	double start = mc_now_ms(), budget = (double)rq->timeout_ms * (rq->retries + 1), left;
	struct mc_body b = {.retry_after_s = -1, .max = rq->body_max};
	struct curl_slist *headers = NULL;
	uint64_t rng = (uint64_t)start ^ ((uint64_t)(uintptr_t)&b << 16) ^ 0x9E3779B97F4A7C15ull;
	enum mc_failure f = MC_FAIL_TRANSPORT;
	CURLcode cc = CURLE_OK;
	long status = 0, wait;
	char *url = NULL;
	CURL *h = NULL;
	int attempt, r;

	url = mc_url(rq->ep->base_url, rq->path);
	headers = mc_headers(rq->ep, rq->body != NULL);
	h = pool_acquire();
	if (!url || !headers || !h) {
		r = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory preparing a model request");
		goto out;
	}
	mc_setopts(h, rq, url, headers, &b);
	for (attempt = 1;; attempt++) {
		mc_body_reset(&b);
		/* A later attempt gets only what is left of the budget. */
		left = budget - (mc_now_ms() - start);
		if (attempt > 1 && left < (double)rq->timeout_ms) {
			curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left > 0 ? (long)left : 1L);
			if (rq->connect_timeout_ms > (long)left)
				curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)left > 0 ? (long)left : 1L);
		}
		cc = curl_easy_perform(h);
		status = 0;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		stats->attempts = attempt;
		stats->http_status = (int)status;
		if (cc == CURLE_OK && status >= 200 && status < 300) {
			*ret_body = b.data ? b.data : calloc(1, 1);
			*ret_len = b.len;
			b.data = NULL;
			r = *ret_body ? 0 : t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
			goto out;
		}
		if (!mc_classify(cc, status, &b, &f) || attempt > rq->retries)
			break;
		if (cc == CURLE_OK && status == 429 && b.retry_after_s >= 0)
			wait = b.retry_after_s > MC_RETRY_AFTER_MAX_MS / 1000 ? MC_RETRY_AFTER_MAX_MS
									: b.retry_after_s * 1000;
		else
			wait = mc_backoff_ms(attempt, &rng);
		/* A wait that would spend the rest of the budget leaves no time to try again: stop now. */
		left = budget - (mc_now_ms() - start);
		if (left <= 0 || (double)wait >= left)
			break;
		sleep_ms(wait);
	}
	r = mc_fail(rq, f, cc, status, &b, attempt, err);
out:
	stats->elapsed_ms = mc_now_ms() - start;
	mc_body_reset(&b);
	pool_release(h);
	curl_slist_free_all(headers);
	free(url);
	return r;
}

/* Fill rq's limits from ep (defaults for unset values). */
void mc_request_init(struct mc_request *rq, const struct model_endpoint *ep, const char *path)
{
	memset(rq, 0, sizeof(*rq));
	rq->ep = ep;
	rq->path = path;
	rq->timeout_ms = ep->timeout_ms > 0 ? ep->timeout_ms : T2S_MODEL_TIMEOUT_DEFAULT_MS;
	rq->connect_timeout_ms = ep->connect_timeout_ms > 0 ? ep->connect_timeout_ms
							    : T2S_MODEL_CONNECT_TIMEOUT_DEFAULT_MS;
	if (rq->connect_timeout_ms > rq->timeout_ms)
		rq->connect_timeout_ms = rq->timeout_ms;
	rq->retries = ep->retries < 0 ? 0 : ep->retries > MC_RETRIES_MAX ? MC_RETRIES_MAX : ep->retries;
	rq->body_max = MODEL_BODY_MAX;
}
