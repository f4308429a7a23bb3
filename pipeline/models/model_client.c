/*
 * model_client.c - the requests and answers of model_client (see
 * model_client.h): the JSON bodies of chat, embeddings and ping, sent
 * through the transport of model_client_http.c (mc_perform).
 */
#define _POSIX_C_SOURCE 200809L

#include "pipeline/models/model_client_internal.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON text --------------------------------------------------------- */

/*
 * Length of the valid UTF-8 sequence starting at s (which has n bytes
 * left), or 0 when the bytes there are not valid UTF-8.
 */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	unsigned char lo = 0x80, hi = 0xBF;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xE0)
		lo = 0xA0;
	else if (s[0] == 0xED)
		hi = 0x9F;
	else if (s[0] == 0xF0)
		lo = 0x90;
	else if (s[0] == 0xF4)
		hi = 0x8F;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return len;
}

/*
 * A new JSON string reference holding s; bytes that are not valid UTF-8
 * (sample values read from a database may hold any) become '?'.  NULL on
 * allocation failure.
 */
static json_t *json_text(const char *s)
{
	json_t *j = json_string(s);
	size_t n, i = 0, k;
	char *copy;

	if (j)
		return j;
	n = strlen(s);
	copy = malloc(n + 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, n + 1);
	while (i < n) {
		k = utf8_seq_len((const unsigned char *)copy + i, n - i);
		if (k == 0) {
			copy[i] = '?';
			k = 1;
		}
		i += k;
	}
	j = json_string(copy);
	free(copy);
	return j;
}

/* ---- JSON calls -------------------------------------------------------- */

static int mc_check_endpoint(const struct model_endpoint *ep, struct t2s_error *err)
{
	if (!ep || !ep->base_url || !*ep->base_url)
		return t2s_error_set(err, T2S_ERR_INVALID, "model endpoint has no base_url");
	if (!ep->model || !*ep->model)
		return t2s_error_set(err, T2S_ERR_INVALID, "model endpoint of stage '%s' has no model",
				     mc_stage_name(ep));
	return 0;
}

/*
 * Send root (a borrowed JSON object) to ep's path, parse the 2xx answer.
 * On success *ret_root is a new reference the caller releases.
 */
static int mc_json_call(const struct model_endpoint *ep, const char *path, size_t body_max, json_t *root,
			json_t **ret_root, struct model_call_stats *stats, struct t2s_error *err)
{
	struct mc_request rq;
	json_error_t jerr;
	json_t *answer;
	char *out = NULL, *body;
	size_t len = 0;
	int r;

	body = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(6));
	if (!body)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory building a model request");
	mc_request_init(&rq, ep, path);
	rq.body = body;
	rq.body_len = strlen(body);
	rq.body_max = body_max;
	r = mc_perform(&rq, &out, &len, stats, err);
	free(body);
	if (r < 0)
		return r;
	answer = json_loadb(out, len, 0, &jerr);
	free(out);
	if (!json_is_object(answer)) {
		json_decref(answer);
		return t2s_error_set(err, T2S_ERR_UPSTREAM,
				     "model server of stage '%s' answered HTTP %d with a body that is not a JSON object",
				     mc_stage_name(ep), stats->http_status);
	}
	*ret_root = answer;
	return 0;
}

/* Token counts of answer's "usage" object; 0 when absent. */
static void mc_usage(json_t *answer, struct model_call_stats *stats)
{
	json_t *usage = json_object_get(answer, "usage");
	json_t *p = json_object_get(usage, "prompt_tokens");
	json_t *c = json_object_get(usage, "completion_tokens");

	stats->prompt_tokens = json_is_integer(p) ? (long)json_integer_value(p) : 0;
	stats->completion_tokens = json_is_integer(c) ? (long)json_integer_value(c) : 0;
}

/* ---- chat -------------------------------------------------------------- */

/*
 * The answer tokens' log-probabilities of a choice (OpenAI's
 * choice.logprobs.content[].logprob, as vLLM, llama.cpp's server and TGI
 * return them) summed into stats; non-finite or positive values are skipped.
 */
static void mc_logprobs(json_t *choice, struct model_call_stats *stats)
{
	json_t *content = json_object_get(json_object_get(choice, "logprobs"), "content"), *tok;
	size_t i;
	json_array_foreach(content, i, tok) {
		json_t *lp = json_object_get(tok, "logprob");
		double v = json_is_number(lp) ? json_number_value(lp) : 1.0;
		if (isfinite(v) && v <= 0) {
			stats->logprob_sum += v;
			stats->logprob_tokens++;
		}
	}
}

size_t model_chat_body_max(const struct model_endpoint *ep)
{
	if (ep->max_tokens <= 0 || (size_t)ep->max_tokens > (MODEL_BODY_MAX - MODEL_REPLY_FIXED_BYTES) /
								     MODEL_REPLY_BYTES_PER_TOKEN)
		return MODEL_BODY_MAX;
	return (size_t)ep->max_tokens * MODEL_REPLY_BYTES_PER_TOKEN + MODEL_REPLY_FIXED_BYTES;
}

/* The request body of model_chat; new reference or NULL (out of memory). */
static json_t *chat_body(const struct model_endpoint *ep, const struct model_message *msgs,
			 size_t n_msgs)
{
	json_t *root = json_object(), *list = json_array(), *m;
	size_t i;

	if (!root || !list || json_object_set_new(root, "model", json_text(ep->model)) ||
	    json_object_set(root, "messages", list))
		goto fail;
	for (i = 0; i < n_msgs; i++) {
		m = json_object();
		if (!m || json_array_append_new(list, m) ||
		    json_object_set_new(m, "role", json_text(msgs[i].role)) ||
		    json_object_set_new(m, "content", json_text(msgs[i].content)))
			goto fail;
	}
	if (ep->temperature >= 0 && json_object_set_new(root, "temperature", json_real(ep->temperature)))
		goto fail;
	if (ep->max_tokens > 0 && json_object_set_new(root, "max_tokens", json_integer(ep->max_tokens)))
		goto fail;
	if (json_object_set_new(root, "stream", json_false()))
		goto fail;
	if (ep->logprobs && json_object_set_new(root, "logprobs", json_true()))
		goto fail;
	json_decref(list);
	return root;
fail:
	json_decref(list);
	json_decref(root);
	return NULL;
}

int model_chat(const struct model_endpoint *ep, const struct model_message *msgs, size_t n_msgs,
	       char **ret_text, struct model_call_stats *ret_stats, struct t2s_error *err)
{
	struct model_call_stats stats = {0};
	json_t *root = NULL, *answer = NULL, *choice, *content;
	double start = mc_now_ms();
	char *text;
	size_t i;
	int r;

	if ((r = mc_check_endpoint(ep, err)) < 0)
		goto out;
	if (!msgs || n_msgs == 0 || !ret_text) {
		r = t2s_error_set(err, T2S_ERR_INVALID, "chat call of stage '%s' has no messages",
				  mc_stage_name(ep));
		goto out;
	}
	for (i = 0; i < n_msgs; i++)
		if (!msgs[i].role || !msgs[i].content) {
			r = t2s_error_set(err, T2S_ERR_INVALID, "chat message %zu of stage '%s' is incomplete",
					  i, mc_stage_name(ep));
			goto out;
		}
	if (!(root = chat_body(ep, msgs, n_msgs))) {
		r = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory building a chat request");
		goto out;
	}
	if ((r = mc_json_call(ep, "/chat/completions", model_chat_body_max(ep), root, &answer, &stats, err)) < 0)
		goto out;
	mc_usage(answer, &stats);
	choice = json_array_get(json_object_get(answer, "choices"), 0);
	content = json_object_get(json_object_get(choice, "message"), "content");
	if (ep->logprobs)
		mc_logprobs(choice, &stats);
	if (!json_is_string(content)) {
		r = t2s_error_set(err, T2S_ERR_UPSTREAM,
				  "model server of stage '%s' answered without %s", mc_stage_name(ep),
				  choice ? "message content" : "choices");
		goto out;
	}
	if (!(text = strdup(json_string_value(content)))) {
		r = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory copying a chat answer");
		goto out;
	}
	*ret_text = text;
	r = 0;
out:
	json_decref(root);
	json_decref(answer);
	stats.elapsed_ms = mc_now_ms() - start;
	if (ret_stats)
		*ret_stats = stats;
	return r;
}

/* ---- embeddings -------------------------------------------------------- */

static json_t *embed_body(const struct model_endpoint *ep, const char *const *inputs, size_t n)
{
	json_t *root = json_object(), *list = json_array();
	size_t i;

	if (!root || !list || json_object_set_new(root, "model", json_text(ep->model)) ||
	    json_object_set(root, "input", list) ||
	    json_object_set_new(root, "encoding_format", json_string("float")))
		goto fail;
	for (i = 0; i < n; i++)
		if (json_array_append_new(list, json_text(inputs[i])))
			goto fail;
	json_decref(list);
	return root;
fail:
	json_decref(list);
	json_decref(root);
	return NULL;
}

/*
 * Read answer's "data" into a new n * *ret_dim float array (caller frees),
 * each item at the row its "index" names (its position when it has none).
 */
static int embed_parse(const struct model_endpoint *ep, json_t *answer, size_t n,
		       float **ret_vectors, size_t *ret_dim, struct t2s_error *err)
{
	json_t *data = json_object_get(answer, "data"), *item, *vec, *idx;
	const char *stage = mc_stage_name(ep);
	float *out = NULL;
	unsigned char *seen = NULL;
	size_t dim = 0, i, j, row;
	int r;

	if (!json_is_array(data))
		return t2s_error_set(err, T2S_ERR_UPSTREAM, "model server of stage '%s' answered without data",
				     stage);
	if (json_array_size(data) != n)
		return t2s_error_set(err, T2S_ERR_UPSTREAM,
				     "model server of stage '%s' returned %zu embeddings for %zu inputs",
				     stage, json_array_size(data), n);
	if (!(seen = calloc(n, 1)))
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading embeddings");
	json_array_foreach(data, i, item) {
		vec = json_object_get(item, "embedding");
		idx = json_object_get(item, "index");
		if (!json_is_array(vec) || json_array_size(vec) == 0) {
			r = t2s_error_set(err, T2S_ERR_UPSTREAM,
					  "model server of stage '%s' sent embedding %zu without a float array",
					  stage, i);
			goto fail;
		}
		if (!out) {
			dim = json_array_size(vec);
			if (dim > SIZE_MAX / sizeof(float) / n || !(out = malloc(n * dim * sizeof(float)))) {
				r = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading embeddings");
				goto fail;
			}
		} else if (json_array_size(vec) != dim) {
			r = t2s_error_set(err, T2S_ERR_UPSTREAM,
					  "model server of stage '%s' sent embeddings of dimensions %zu and %zu",
					  stage, dim, json_array_size(vec));
			goto fail;
		}
		if (idx && (!json_is_integer(idx) || json_integer_value(idx) < 0 ||
			    (size_t)json_integer_value(idx) >= n)) {
			r = t2s_error_set(err, T2S_ERR_UPSTREAM,
					  "model server of stage '%s' sent an embedding index out of range",
					  stage);
			goto fail;
		}
		row = idx ? (size_t)json_integer_value(idx) : i;
		if (seen[row]) {
			r = t2s_error_set(err, T2S_ERR_UPSTREAM,
					  "model server of stage '%s' sent embedding index %zu twice", stage, row);
			goto fail;
		}
		seen[row] = 1;
		for (j = 0; j < dim; j++) {
			json_t *x = json_array_get(vec, j);
			if (!json_is_number(x)) {
				r = t2s_error_set(err, T2S_ERR_UPSTREAM,
						  "model server of stage '%s' sent a non-numeric embedding value",
						  stage);
				goto fail;
			}
			out[row * dim + j] = (float)json_number_value(x);
		}
	}
	free(seen);
	*ret_vectors = out;
	*ret_dim = dim;
	return 0;
fail:
	free(seen);
	free(out);
	return r;
}

int model_embed(const struct model_endpoint *ep, const char *const *inputs, size_t n_inputs,
		float **ret_vectors, size_t *ret_dim, struct model_call_stats *ret_stats,
		struct t2s_error *err)
{
	struct model_call_stats stats = {0};
	json_t *root = NULL, *answer = NULL;
	double start = mc_now_ms();
	size_t i;
	int r;

	if ((r = mc_check_endpoint(ep, err)) < 0)
		goto out;
	if (!inputs || n_inputs == 0 || !ret_vectors || !ret_dim) {
		r = t2s_error_set(err, T2S_ERR_INVALID, "embedding call of stage '%s' has no inputs",
				  mc_stage_name(ep));
		goto out;
	}
	for (i = 0; i < n_inputs; i++)
		if (!inputs[i]) {
			r = t2s_error_set(err, T2S_ERR_INVALID, "embedding input %zu of stage '%s' is NULL",
					  i, mc_stage_name(ep));
			goto out;
		}
	if (!(root = embed_body(ep, inputs, n_inputs))) {
		r = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory building an embedding request");
		goto out;
	}
	if ((r = mc_json_call(ep, "/embeddings", MODEL_BODY_MAX, root, &answer, &stats, err)) < 0)
		goto out;
	mc_usage(answer, &stats);
	r = embed_parse(ep, answer, n_inputs, ret_vectors, ret_dim, err);
out:
	json_decref(root);
	json_decref(answer);
	stats.elapsed_ms = mc_now_ms() - start;
	if (ret_stats)
		*ret_stats = stats;
	return r;
}

/* ---- ping -------------------------------------------------------------- */

/* GET {ep->base_url}{path} once within timeout_ms; *stats gets the status. */
static int ping_path(const struct model_endpoint *ep, const char *path, long timeout_ms,
		     struct model_call_stats *stats, struct t2s_error *err)
{
	struct mc_request rq;
	char *body = NULL;
	size_t len = 0;
	int r;

	mc_request_init(&rq, ep, path);
	rq.retries = 0;
	if (timeout_ms > 0) {
		rq.timeout_ms = timeout_ms;
		if (rq.connect_timeout_ms > timeout_ms)
			rq.connect_timeout_ms = timeout_ms;
	}
	r = mc_perform(&rq, &body, &len, stats, err);
	free(body);
	return r;
}

int model_ping(const struct model_endpoint *ep, long timeout_ms, struct t2s_error *err)
{
	struct model_call_stats stats = {0};
	int r;

	if (!ep || !ep->base_url || !*ep->base_url)
		return t2s_error_set(err, T2S_ERR_INVALID, "model endpoint has no base_url");
	if (ep->health_url && *ep->health_url) {
		struct model_endpoint h = *ep;
		h.base_url = ep->health_url;
		return ping_path(&h, "", timeout_ms, &stats, err);
	}
	r = ping_path(ep, "/models", timeout_ms, &stats, err);
	if (r == 0 || stats.http_status != 404)
		return r;
	if (strcmp(mc_stage_name(ep), "embed") != 0) {
		if (err) {
			char msg[T2S_ERROR_MESSAGE_MAX];
			snprintf(msg, sizeof(msg), "%.400s (the server has no /models route: set health_url)", err->message);
			memcpy(err->message, msg, sizeof(msg));
		}
		return r;
	}
	/* No /models (TEI): the route the stage uses answers or not. */
	struct model_endpoint q = *ep;
	const char *input = "ping";
	float *vectors = NULL;
	size_t dim = 0;
	q.retries = 0;
	if (timeout_ms > 0) {
		q.timeout_ms = timeout_ms;
		if (q.connect_timeout_ms <= 0 || q.connect_timeout_ms > timeout_ms)
			q.connect_timeout_ms = timeout_ms;
	}
	if (err)
		memset(err, 0, sizeof(*err));
	r = model_embed(&q, &input, 1, &vectors, &dim, &stats, err);
	free(vectors);
	return r;
}
