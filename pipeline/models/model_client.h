/*
 * model_client.h - the one seam through which pipeline stages talk to remote
 * open-model inference servers.
 *
 * Every server speaks the OpenAI-compatible HTTP API as served by vLLM,
 * llama.cpp's server, Ollama, TGI and TEI:
 *
 *   POST {base_url}/chat/completions   (model_chat)
 *   POST {base_url}/embeddings         (model_embed)
 *   GET  {base_url}/models             (model_ping)
 *
 * where base_url ends in "/v1" (a trailing slash is tolerated).
 *
 * Errors (all fill err, never with the API key):
 *   -T2S_ERR_UPSTREAM_TIMEOUT  the last attempt ran out of timeout_ms or
 *                              connect_timeout_ms;
 *   -T2S_ERR_UNAVAILABLE       the server could not be reached at all
 *                              (connection refused, host not resolved);
 *   -T2S_ERR_UPSTREAM          an HTTP error status (the message names it),
 *                              a body that is not the expected JSON, a body
 *                              over its bound (below), missing
 *                              choices/content, a wrong number of embeddings
 *                              or inconsistent dimensions;
 *   -T2S_ERR_INVALID           the caller's arguments are unusable;
 *   -T2S_ERR_NOMEM.
 *
 * Bounds: a response body is read up to MODEL_BODY_MAX (8 MiB); a chat
 * answer of an endpoint with max_tokens, up to model_chat_body_max(ep)
 * (MODEL_REPLY_BYTES_PER_TOKEN bytes a token plus MODEL_REPLY_FIXED_BYTES,
 * at most MODEL_BODY_MAX): a server cannot send a reply longer than
 * max_tokens allows, so a longer body is a misbehaving server, cut off as it
 * arrives and answered -T2S_ERR_UPSTREAM ("larger than N bytes"), never
 * retried.
 *
 * Retries: 429, 408, every 5xx and transport errors (including timeouts and
 * refused connections) are retried up to ep->retries extra times, with
 * exponential backoff (100 ms doubling, at most 2 s, with jitter) or, on 429
 * with a Retry-After in seconds, that delay capped at 5 s (a Retry-After given
 * as an HTTP date is ignored: backoff applies).  The whole call ends within a
 * budget of timeout_ms * (retries + 1) counted from its start: a later
 * attempt's timeout is cut to what is left of it, and when the wait before
 * the next attempt would reach its end (an absurd Retry-After), the call
 * ends at once with the last attempt's error.  Other 4xx (400, 401, 403,
 * 404...) are answered at once, never retried.
 *
 * Tracing: when the calling thread has a W3C trace context (common/trace.h,
 * set by the HTTP layer for the request it serves), every request carries a
 * `traceparent` header with the same trace id and a new span id.
 *
 * Threads: every function here may be called from many threads at once once
 * model_client_global_init() has returned.  Connections are reused through a
 * small mutex-protected pool of curl easy handles.  No function logs.
 */
#ifndef T2S_MODEL_CLIENT_H
#define T2S_MODEL_CLIENT_H

#include <stddef.h>

#include "common/contract.h"
#include "common/error.h"

#include <stdbool.h>

/*
 * One endpoint per pipeline stage, filled from the config.  The strings are
 * borrowed: they are owned by the config and must outlive every call.
 */
struct model_endpoint {
	const char *stage;       /* "embed", "link", "describe", "evidence", "generate", "debug" */
	const char *base_url;    /* e.g. "http://127.0.0.1:9000/v1" */
	const char *model;
	const char *api_key;     /* NULL or "": no Authorization header */
	long timeout_ms;         /* whole-request timeout per attempt; <= 0: T2S_MODEL_TIMEOUT_DEFAULT_MS */
	long connect_timeout_ms; /* <= 0: T2S_MODEL_CONNECT_TIMEOUT_DEFAULT_MS (never more than timeout_ms) */
	int retries;             /* extra attempts after the first; < 0: 0; at most 10 */
	double temperature;      /* < 0: not sent (the server's default) */
	int max_tokens;          /* <= 0: not sent */
	bool logprobs;           /* chat: ask for the answer tokens' log-probabilities ("logprobs": true) */
	const char *health_url;  /* NULL: model_ping probes {base_url}/models; else GET this absolute URL */
};

#define MODEL_BODY_MAX ((size_t)8 << 20)   /* largest response body accepted */
#define MODEL_REPLY_BYTES_PER_TOKEN 16u     /* a token's bytes in a chat answer's body, JSON escapes included */
#define MODEL_REPLY_FIXED_BYTES (64u << 10) /* the body around the answer (ids, usage, reasoning headers) */

/* The largest chat response body accepted from ep (see Bounds above). */
size_t model_chat_body_max(const struct model_endpoint *ep);

struct model_message {
	const char *role;    /* "system", "user", "assistant" */
	const char *content;
};

/*
 * What one call cost.  Token counts come from the response's "usage" object
 * and are 0 when the server did not report them.  http_status is the status
 * of the last attempt (0 when no response arrived).
 */
struct model_call_stats {
	int attempts;
	long prompt_tokens;
	long completion_tokens;
	double elapsed_ms; /* whole call, retries and waits included */
	/*
	 * Chat with logprobs asked: the sum of the answer tokens' log-probabilities
	 * and how many the server returned (0: none; the server may ignore the ask).
	 */
	double logprob_sum;
	long logprob_tokens;
	int http_status;
};

/*
 * curl_global_init().  Call once at program start, before any thread calls
 * the functions below.  Returns 0 or -T2S_ERR_INTERNAL.
 */
T2S_MUST_CHECK
int model_client_global_init(void);

/*
 * Free the pooled curl handles (closing their connections) and call
 * curl_global_cleanup().  Call once at exit, when no call is in flight.
 */
void model_client_global_cleanup(void);

/*
 * Send msgs[0..n_msgs) to ep's chat completions route and return the first
 * choice's message content.
 *
 * ret_text: on success, a NUL-terminated malloc'd copy the caller frees.
 * ret_stats: may be NULL.  Unlike other ret_* parameters it is written on
 *            success and on failure alike, so that metrics can count the
 *            attempts and status of failed calls.
 * err: may be NULL.
 */
T2S_MUST_CHECK
int model_chat(const struct model_endpoint *ep, const struct model_message *msgs, size_t n_msgs,
	       char **ret_text, struct model_call_stats *ret_stats, struct t2s_error *err);

/*
 * Embed inputs[0..n_inputs) (n_inputs >= 1) with ep's embeddings route.
 *
 * ret_vectors: on success, a malloc'd array of n_inputs * *ret_dim floats,
 *              row i being the vector of inputs[i] (the response's items
 *              are placed by their "index" field); the caller frees it.
 * ret_dim: on success, the common dimension (>= 1).
 * ret_stats, err: as for model_chat.
 */
T2S_MUST_CHECK
int model_embed(const struct model_endpoint *ep, const char *const *inputs, size_t n_inputs,
		float **ret_vectors, size_t *ret_dim, struct model_call_stats *ret_stats,
		struct t2s_error *err);

/*
 * Readiness probe, once, without retries, within timeout_ms (<= 0: ep's
 * timeout): GET ep->health_url when set, else GET {base_url}/models.
 * Returns 0 when a 2xx status arrives, whatever the body.  Servers without
 * /models (TEI): when it answers 404 for the embed stage, one embeddings call
 * with a one-word input decides instead; for other stages the error says to
 * set health_url.
 */
T2S_MUST_CHECK
int model_ping(const struct model_endpoint *ep, long timeout_ms, struct t2s_error *err);

#endif
