/*
 * test_model_client.c - model_client against the protocol stub.
 *
 * Starts tests/stub/model_stub.py (path from $T2S_STUB, else
 * $T2S_SOURCE_ROOT/tests/stub/model_stub.py, else relative to the working
 * directory) with `python3 ... --port 0`, reads its "LISTENING <port>" line,
 * scripts it through POST /_stub/rules, inspects what it received through
 * GET /_stub/requests, and kills it at the end.  Prints TAP.
 *
 * Documented choice: a refused connection is -T2S_ERR_UNAVAILABLE.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "pipeline/models/model_client.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/stub_process.h"
#include "tests/unit/tap.h"

#define STUB_API_KEY "sk-test-7f3a9c"

static pid_t stub_pid = -1;
static int stub_port;
static char base_url[64];

/* ---- the stub process -------------------------------------------------- */

static struct stub_process stub = {.pid = -1};

/* Start the stub (tests/unit/stub_process.c); 0 once its port is known. */
static int stub_start(void)
{
	static const char *const extra[] = {"--api-key", STUB_API_KEY, NULL};
	int rc = stub_process_start(&stub, extra);
	stub_pid = stub.pid;
	stub_port = stub.port;
	snprintf(base_url, sizeof(base_url), "%s", stub.base_url);
	return rc;
}

static void stub_stop(void)
{
	stub_process_stop(&stub);
	stub_pid = -1;
}

/* GET (body NULL) or POST the stub's control route path; the answer as JSON (new ref). */
static json_t *stub_call(const char *path, const char *body)
{
	return stub_process_call(&stub, path, body);
}

static void set_rules(const char *rules_json)
{
	json_decref(stub_call("/_stub/reset", "{}"));
	json_decref(stub_call("/_stub/rules", rules_json));
}

/* The last model request the stub received (new reference), or NULL. */
static json_t *last_request(void)
{
	json_t *all = stub_call("/_stub/requests", NULL), *reqs, *last;

	reqs = json_object_get(all, "requests");
	last = json_array_get(reqs, json_array_size(reqs) - 1);
	json_incref(last);
	json_decref(all);
	return last;
}

static size_t request_count(void)
{
	json_t *all = stub_call("/_stub/requests", NULL);
	size_t n = json_array_size(json_object_get(all, "requests"));

	json_decref(all);
	return n;
}

/* ---- helpers ----------------------------------------------------------- */

static struct model_endpoint endpoint(void)
{
	struct model_endpoint ep = {
		.stage = "generate",
		.base_url = base_url,
		.model = "gen-model",
		.api_key = NULL,
		.timeout_ms = 5000,
		.connect_timeout_ms = 2000,
		.retries = 0,
		.temperature = 0.25,
		.max_tokens = 77,
	};
	return ep;
}

static const struct model_message question[] = {
	{"system", "You write SQL."},
	{"user", "How many singers are there?"},
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int closed_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t n = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &n);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* ---- chat -------------------------------------------------------------- */

static void test_chat_happy_path(void)
{
	struct model_endpoint ep = endpoint();
	struct model_call_stats st = {0};
	struct t2s_error err = {0};
	char *text = NULL;
	json_t *req, *body, *msgs;
	int r;

	set_rules("{\"rules\": [{\"match\": {\"path\": \"/v1/chat/completions\", \"model\": \"gen-model\","
		  " \"contains\": \"How many singers\"}, \"respond\": {\"content\": \"SELECT count(*) FROM singer\"}}]}");
	r = model_chat(&ep, question, 2, &text, &st, &err);
	TAP_INT_EQ(r, 0, "chat_returns_zero_on_success");
	TAP_STR_EQ(text, "SELECT count(*) FROM singer", "chat_returns_first_choice_content");
	TAP_INT_EQ(st.attempts, 1, "chat_success_takes_one_attempt");
	TAP_INT_EQ(st.http_status, 200, "chat_reports_http_status");
	TAP_INT_EQ(st.prompt_tokens, 8, "chat_reports_prompt_tokens_from_usage");
	TAP_INT_EQ(st.completion_tokens, 4, "chat_reports_completion_tokens_from_usage");
	TAP_OK(st.elapsed_ms > 0, "chat_reports_elapsed_time");
	free(text);

	req = last_request();
	body = json_object_get(req, "body");
	msgs = json_object_get(body, "messages");
	TAP_STR_EQ(json_string_value(json_object_get(req, "path")), "/v1/chat/completions",
		   "chat_posts_to_chat_completions");
	TAP_STR_EQ(json_string_value(json_object_get(body, "model")), "gen-model", "chat_sends_model");
	TAP_OK(fabs(json_number_value(json_object_get(body, "temperature")) - 0.25) < 1e-9,
	       "chat_sends_temperature");
	TAP_INT_EQ(json_integer_value(json_object_get(body, "max_tokens")), 77, "chat_sends_max_tokens");
	TAP_INT_EQ(json_array_size(msgs), 2, "chat_sends_every_message");
	TAP_STR_EQ(json_string_value(json_object_get(json_array_get(msgs, 0), "role")), "system",
		   "chat_sends_message_roles_in_order");
	TAP_STR_EQ(json_string_value(json_object_get(json_array_get(msgs, 1), "content")),
		   "How many singers are there?", "chat_sends_message_contents");
	TAP_STR_EQ(json_string_value(json_object_get(json_object_get(req, "headers"), "Content-Type")),
		   "application/json", "chat_sends_json_content_type");
	json_decref(req);
}

static void test_chat_optional_fields(void)
{
	struct model_endpoint ep = endpoint();
	struct model_message m = {"user", "caf\xc3\xa9 \xff bytes"};
	char *text = NULL;
	json_t *req, *body;
	int r;

	set_rules("{\"rules\": []}");
	ep.temperature = -1;
	ep.max_tokens = 0;
	r = model_chat(&ep, &m, 1, &text, NULL, NULL);
	TAP_INT_EQ(r, 0, "chat_accepts_invalid_utf8_content");
	TAP_STR_EQ(text, "stub reply", "chat_without_rule_gets_stub_default");
	free(text);
	req = last_request();
	body = json_object_get(req, "body");
	TAP_OK(json_object_get(body, "temperature") == NULL, "chat_omits_negative_temperature");
	TAP_OK(json_object_get(body, "max_tokens") == NULL, "chat_omits_unset_max_tokens");
	TAP_STR_EQ(json_string_value(json_object_get(json_array_get(json_object_get(body, "messages"), 0),
						     "content")),
		   "caf\xc3\xa9 ? bytes", "chat_replaces_invalid_utf8_bytes");
	json_decref(req);
}

static void test_chat_authorization(void)
{
	struct model_endpoint ep = endpoint();
	char *text = NULL;
	json_t *req;

	set_rules("{\"rules\": []}");
	TAP_INT_EQ(model_chat(&ep, question, 2, &text, NULL, NULL), 0, "chat_without_key_succeeds");
	free(text);
	text = NULL;
	req = last_request();
	TAP_OK(json_is_false(json_object_get(req, "auth")), "chat_without_key_sends_no_authorization");
	json_decref(req);

	ep.api_key = STUB_API_KEY;
	TAP_INT_EQ(model_chat(&ep, question, 2, &text, NULL, NULL), 0, "chat_with_key_succeeds");
	free(text);
	req = last_request();
	TAP_OK(json_is_true(json_object_get(req, "auth")), "chat_with_key_sends_authorization");
	TAP_OK(json_is_true(json_object_get(req, "auth_matches")), "chat_with_key_sends_bearer_key");
	json_decref(req);
}

static void test_chat_error_hides_api_key(void)
{
	struct model_endpoint ep = endpoint();
	struct t2s_error err = {0};
	char *text = NULL;
	int r;

	set_rules("{\"rules\": [{\"respond\": {\"status\": 401, \"content\": \"Incorrect API key provided: "
		  STUB_API_KEY "\"}}]}");
	ep.api_key = STUB_API_KEY;
	ep.retries = 2;
	r = model_chat(&ep, question, 2, &text, NULL, &err);
	TAP_INT_EQ(r, -T2S_ERR_UPSTREAM, "chat_401_is_upstream_error");
	TAP_OK(strstr(err.message, "401") != NULL, "chat_401_message_names_status");
	TAP_OK(strstr(err.message, STUB_API_KEY) == NULL, "chat_error_message_never_quotes_api_key");
	TAP_OK(text == NULL, "chat_failure_leaves_ret_text_untouched");
}

static void test_chat_client_error_not_retried(void)
{
	struct model_endpoint ep = endpoint();
	struct model_call_stats st = {0};
	struct t2s_error err = {0};
	char *text = NULL;
	int r;

	set_rules("{\"rules\": [{\"respond\": {\"status\": 400, \"content\": \"model gen-model does not exist\"}}]}");
	ep.retries = 3;
	r = model_chat(&ep, question, 2, &text, &st, &err);
	TAP_INT_EQ(r, -T2S_ERR_UPSTREAM, "chat_400_is_upstream_error");
	TAP_INT_EQ(st.attempts, 1, "chat_400_is_not_retried");
	TAP_INT_EQ(st.http_status, 400, "chat_failure_still_reports_stats");
	TAP_OK(strstr(err.message, "model gen-model does not exist") != NULL,
	       "chat_error_quotes_server_message");
}

static void test_chat_retry_after_429(void)
{
	struct model_endpoint ep = endpoint();
	struct model_call_stats st = {0};
	char *text = NULL;
	double t0;
	int r;

	set_rules("{\"rules\": [{\"respond\": {\"status\": 429, \"retry_after\": 1, \"times\": 1}},"
		  " {\"respond\": {\"content\": \"after the wait\"}}]}");
	ep.retries = 2;
	t0 = now_ms();
	r = model_chat(&ep, question, 2, &text, &st, NULL);
	TAP_INT_EQ(r, 0, "chat_429_then_success_succeeds");
	TAP_STR_EQ(text, "after the wait", "chat_429_then_success_returns_second_answer");
	TAP_INT_EQ(st.attempts, 2, "chat_429_then_success_takes_two_attempts");
	TAP_OK(now_ms() - t0 >= 950, "chat_429_honours_retry_after_seconds");
	free(text);
}

/* Retry-After as an HTTP-date a few seconds ahead is waited for like seconds. */
static void test_chat_retry_after_http_date(void)
{
	struct model_endpoint ep = endpoint();
	struct model_call_stats st = {0};
	char *text = NULL, rules[512], date[64];
	time_t when = time(NULL) + 3;
	struct tm tm;

	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&when, &tm));
	snprintf(rules, sizeof(rules),
		 "{\"rules\": [{\"respond\": {\"status\": 429, \"retry_after\": \"%s\", \"times\": 1}},"
		 " {\"respond\": {\"content\": \"after the date\"}}]}",
		 date);
	set_rules(rules);
	ep.retries = 1;
	ep.timeout_ms = 5000;
	double t0 = now_ms();
	int r = model_chat(&ep, question, 2, &text, &st, NULL);
	double took = now_ms() - t0;
	TAP_INT_EQ(r, 0, "chat_429_with_http_date_then_success_succeeds");
	TAP_OK(took >= 1500 && took < 4500, "chat_429_waits_until_the_http_date");
	printf("# Retry-After %s: the call took %.0f ms\n", date, took);
	free(text);
}

/*
 * An absurd Retry-After (999999 s) on a 429, then a server that goes silent:
 * the call must end within its budget of timeout_ms * (retries + 1), not
 * sleep out the rest of the budget and then start one more attempt.
 */
static void test_chat_absurd_retry_after_within_budget(void)
{
	struct model_endpoint ep = endpoint();
	struct model_call_stats st = {0};
	struct t2s_error err = {0};
	char *text = NULL;
	double t0, took;
	int r;

	set_rules("{\"rules\": [{\"respond\": {\"status\": 429, \"retry_after\": 999999, \"times\": 1}},"
		  " {\"respond\": {\"hang\": true}}]}");
	ep.timeout_ms = 700;
	ep.retries = 1; /* budget: 1400 ms */
	t0 = now_ms();
	r = model_chat(&ep, question, 2, &text, &st, &err);
	took = now_ms() - t0;
	printf("# absurd Retry-After: the call ended after %.0f ms\n", took);
	TAP_INT_EQ(r, -T2S_ERR_UPSTREAM, "chat_absurd_retry_after_ends_with_the_429");
	TAP_OK(took < 1400, "chat_absurd_retry_after_ends_within_the_call_budget");
	TAP_OK(strstr(err.message, "HTTP 429") != NULL, "chat_absurd_retry_after_message_names_429");

	/* A 429 asking for 1 s, then silence: the second attempt gets only what is left (400 ms). */
	set_rules("{\"rules\": [{\"respond\": {\"status\": 429, \"retry_after\": 1, \"times\": 1}},"
		  " {\"respond\": {\"hang\": true}}]}");
	t0 = now_ms();
	r = model_chat(&ep, question, 2, &text, &st, &err);
	took = now_ms() - t0;
	printf("# 429 for 1 s, then silence: the call ended after %.0f ms\n", took);
	TAP_INT_EQ(r, -T2S_ERR_UPSTREAM_TIMEOUT, "chat_429_then_silence_is_upstream_timeout");
	TAP_OK(took >= 1000, "chat_429_then_silence_honoured_the_retry_after");
	TAP_OK(took < 1400 + 150, "chat_429_then_silence_ends_within_the_call_budget");
	free(text);
}

static void test_chat_retries_5xx(void)
{
	struct model_endpoint ep = endpoint();
	struct model_call_stats st = {0};
	struct t2s_error err = {0};
	char *text = NULL;
	int r;

	set_rules("{\"rules\": [{\"respond\": {\"status\": 500, \"times\": 2}},"
		  " {\"respond\": {\"content\": \"third time\"}}]}");
	ep.retries = 2;
	r = model_chat(&ep, question, 2, &text, &st, NULL);
	TAP_INT_EQ(r, 0, "chat_500_twice_then_success_within_retries");
	TAP_STR_EQ(text, "third time", "chat_retried_answer_is_returned");
	TAP_INT_EQ(st.attempts, 3, "chat_500_twice_takes_three_attempts");
	free(text);
	text = NULL;

	set_rules("{\"rules\": [{\"respond\": {\"status\": 503}}]}");
	ep.retries = 1;
	r = model_chat(&ep, question, 2, &text, &st, &err);
	TAP_INT_EQ(r, -T2S_ERR_UPSTREAM, "chat_retries_exhausted_is_upstream_error");
	TAP_INT_EQ(st.attempts, 2, "chat_retries_exhausted_after_one_plus_retries");
	TAP_OK(strstr(err.message, "HTTP 503") != NULL, "chat_retries_exhausted_message_names_status");
	TAP_OK(strstr(err.message, "generate") != NULL, "chat_error_message_names_stage");
	TAP_INT_EQ(request_count(), 2, "chat_retries_send_exactly_one_plus_retries_requests");
}

static void test_chat_malformed_answers(void)
{
	static const struct {
		const char *rules;
		const char *name;
	} cases[] = {
		{"{\"rules\": [{\"respond\": {\"raw_body\": \"not json{\"}}]}", "chat_malformed_json_is_upstream_error"},
		{"{\"rules\": [{\"respond\": {\"raw_body\": \"{\\\"id\\\": \\\"x\\\"}\"}}]}", "chat_missing_choices_is_upstream_error"},
		{"{\"rules\": [{\"respond\": {\"raw_body\": \"{\\\"choices\\\": []}\"}}]}", "chat_empty_choices_is_upstream_error"},
		{"{\"rules\": [{\"respond\": {\"raw_body\": \"{\\\"choices\\\": [{\\\"message\\\": {\\\"content\\\": null}}]}\"}}]}",
		 "chat_null_content_is_upstream_error"},
		{"{\"rules\": [{\"respond\": {\"raw_body\": \"[1, 2]\"}}]}", "chat_non_object_body_is_upstream_error"},
	};
	struct model_endpoint ep = endpoint();
	struct t2s_error err;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = NULL;
		set_rules(cases[i].rules);
		t2s_error_clear(&err);
		TAP_INT_EQ(model_chat(&ep, question, 2, &text, NULL, &err), -T2S_ERR_UPSTREAM, cases[i].name);
		free(text);
	}
}

static void test_chat_usage_absent(void)
{
	struct model_endpoint ep = endpoint();
	struct model_call_stats st = {.prompt_tokens = 99, .completion_tokens = 99};
	char *text = NULL;

	set_rules("{\"rules\": [{\"respond\": {\"content\": \"ok\", \"usage\": null}}]}");
	TAP_INT_EQ(model_chat(&ep, question, 2, &text, &st, NULL), 0, "chat_without_usage_succeeds");
	TAP_OK(st.prompt_tokens == 0 && st.completion_tokens == 0, "chat_without_usage_reports_zero_tokens");
	free(text);
}

static void test_chat_timeout(void)
{
	struct model_endpoint ep = endpoint();
	struct model_call_stats st = {0};
	struct t2s_error err = {0};
	char *text = NULL;
	double t0, took;
	int r;

	set_rules("{\"rules\": [{\"respond\": {\"hang\": true}}]}");
	ep.timeout_ms = 300;
	t0 = now_ms();
	r = model_chat(&ep, question, 2, &text, &st, &err);
	took = now_ms() - t0;
	TAP_INT_EQ(r, -T2S_ERR_UPSTREAM_TIMEOUT, "chat_hang_is_upstream_timeout");
	TAP_OK(took < 5 * 300, "chat_hang_gives_up_near_timeout");
	TAP_OK(strstr(err.message, "300 ms") != NULL, "chat_timeout_message_names_limit");
	printf("# hang gave up after %.0f ms\n", took);

	set_rules("{\"rules\": [{\"respond\": {\"hang\": true, \"times\": 1}}, {\"respond\": {\"content\": \"awake\"}}]}");
	ep.retries = 1;
	r = model_chat(&ep, question, 2, &text, &st, &err);
	TAP_INT_EQ(r, 0, "chat_timeout_is_retried");
	TAP_INT_EQ(st.attempts, 2, "chat_timeout_then_success_takes_two_attempts");
	free(text);
}

static void test_chat_body_cap(void)
{
	struct model_endpoint ep = endpoint();
	struct t2s_error err = {0};
	char *text = NULL;

	/* 9 MiB of content: past the 8 MiB cap. */
	set_rules("{\"rules\": [{\"respond\": {\"content\": \"x\", \"repeat\": 9437184}}]}");
	TAP_INT_EQ(model_chat(&ep, question, 2, &text, NULL, &err), -T2S_ERR_UPSTREAM,
		   "chat_response_over_8_mib_is_upstream_error");
	TAP_OK(strstr(err.message, "larger than") != NULL, "chat_oversized_message_says_so");
	free(text);
	text = NULL;

	/* Without max_tokens only the 8 MiB cap applies. */
	ep.max_tokens = 0;
	set_rules("{\"rules\": [{\"respond\": {\"content\": \"y\", \"repeat\": 1048576}}]}");
	TAP_INT_EQ(model_chat(&ep, question, 2, &text, NULL, &err), 0, "chat_response_of_1_mib_is_accepted");
	TAP_INT_EQ(text ? strlen(text) : 0, 1048576, "chat_large_response_arrives_whole");
	free(text);
	text = NULL;

	/* With max_tokens: 16 bytes a token plus 64 KiB. */
	ep.max_tokens = 1024;
	TAP_INT_EQ(model_chat_body_max(&ep), 1024 * 16 + 65536, "chat_body_bound_follows_max_tokens");
	TAP_INT_EQ(model_chat(&ep, question, 2, &text, NULL, &err), -T2S_ERR_UPSTREAM,
		   "chat_response_far_over_max_tokens_is_upstream_error");
	TAP_OK(strstr(err.message, "larger than 81920 bytes") != NULL, "chat_over_max_tokens_message_names_the_bound");
	free(text);
	text = NULL;
	set_rules("{\"rules\": [{\"respond\": {\"content\": \"y\", \"repeat\": 60000}}]}");
	TAP_INT_EQ(model_chat(&ep, question, 2, &text, NULL, &err), 0, "chat_response_within_max_tokens_bound_is_accepted");
	free(text);
	ep.max_tokens = 1000000;
	TAP_INT_EQ(model_chat_body_max(&ep), 8u << 20, "chat_body_bound_never_passes_8_mib");
}

static void test_chat_connection_reuse(void)
{
	struct model_endpoint ep = endpoint();
	json_t *all, *reqs;
	const char *c1, *c2;
	char *text = NULL;
	size_t n;

	set_rules("{\"rules\": []}");
	TAP_SETUP(model_chat(&ep, question, 2, &text, NULL, NULL));
	free(text);
	text = NULL;
	TAP_SETUP(model_chat(&ep, question, 2, &text, NULL, NULL));
	free(text);
	all = stub_call("/_stub/requests", NULL);
	reqs = json_object_get(all, "requests");
	n = json_array_size(reqs);
	c1 = json_string_value(json_object_get(json_array_get(reqs, n - 2), "client"));
	c2 = json_string_value(json_object_get(json_array_get(reqs, n - 1), "client"));
	TAP_OK(n >= 2 && c1 && c2 && strcmp(c1, c2) == 0, "sequential_calls_reuse_the_connection");
	json_decref(all);
}

static void test_chat_sequence(void)
{
	struct model_endpoint ep = endpoint();
	char *a = NULL, *b = NULL;

	set_rules("{\"rules\": [{\"respond\": {\"sequence\": [\"first\", \"second\"]}}]}");
	TAP_SETUP(model_chat(&ep, question, 2, &a, NULL, NULL));
	TAP_SETUP(model_chat(&ep, question, 2, &b, NULL, NULL));
	TAP_OK(a && b && strcmp(a, "first") == 0 && strcmp(b, "second") == 0,
	       "stub_sequence_gives_successive_contents");
	free(a);
	free(b);
}

static void test_chat_invalid_arguments(void)
{
	struct model_endpoint ep = endpoint();
	struct model_message bad = {"user", NULL};
	char *text = NULL;

	TAP_INT_EQ(model_chat(&ep, question, 0, &text, NULL, NULL), -T2S_ERR_INVALID,
		   "chat_without_messages_is_invalid");
	TAP_INT_EQ(model_chat(&ep, &bad, 1, &text, NULL, NULL), -T2S_ERR_INVALID,
		   "chat_with_null_content_is_invalid");
	ep.model = NULL;
	TAP_INT_EQ(model_chat(&ep, question, 2, &text, NULL, NULL), -T2S_ERR_INVALID,
		   "chat_without_model_is_invalid");
	TAP_OK(text == NULL, "invalid_chat_leaves_ret_text_untouched");
}

/* ---- unreachable server ------------------------------------------------ */

static void test_connection_refused(void)
{
	struct model_endpoint ep = endpoint();
	struct model_call_stats st = {0};
	struct t2s_error err = {0};
	char url[64], *text = NULL;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", closed_port());
	ep.base_url = url;
	ep.retries = 1;
	TAP_INT_EQ(model_chat(&ep, question, 2, &text, &st, &err), -T2S_ERR_UNAVAILABLE,
		   "chat_connection_refused_is_unavailable");
	TAP_INT_EQ(st.attempts, 2, "chat_connection_refused_is_retried");
	TAP_OK(strstr(err.message, url) == NULL, "chat_error_message_does_not_name_base_url");
	TAP_INT_EQ(model_ping(&ep, 1000, NULL), -T2S_ERR_UNAVAILABLE, "ping_connection_refused_is_unavailable");
}

static void test_ping(void)
{
	struct model_endpoint ep = endpoint();
	json_t *req;

	TAP_INT_EQ(model_ping(&ep, 2000, NULL), 0, "ping_returns_zero_on_2xx");
	req = last_request();
	TAP_STR_EQ(json_string_value(json_object_get(req, "path")), "/v1/models", "ping_gets_models");
	json_decref(req);
	ep.base_url = "http://127.0.0.1:1/v1/"; /* also: trailing slash tolerated */
	TAP_OK(model_ping(&ep, 1000, NULL) < 0, "ping_fails_without_server");
}

/* ---- embeddings -------------------------------------------------------- */

static double dot(const float *a, const float *b, size_t n)
{
	double s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += (double)a[i] * b[i];
	return s;
}

static void test_embed_default_vectors(void)
{
	static const char *const inputs[] = {"singer name", "name of the singer", "stadium capacity"};
	struct model_endpoint ep = endpoint();
	struct model_call_stats st = {0};
	float *v = NULL;
	size_t dim = 0;
	json_t *req, *input;
	int r;

	ep.stage = "embed";
	ep.model = "embed-model";
	set_rules("{\"rules\": []}");
	r = model_embed(&ep, inputs, 3, &v, &dim, &st, NULL);
	TAP_INT_EQ(r, 0, "embed_returns_zero_on_success");
	TAP_INT_EQ(dim, 64, "embed_reports_dimension");
	TAP_OK(v && fabs(dot(v, v, dim) - 1.0) < 1e-4, "embed_returns_stub_unit_vectors");
	TAP_OK(v && dot(v, v + dim, dim) > dot(v, v + 2 * dim, dim),
	       "embed_similar_texts_are_closer_than_unrelated_ones");
	TAP_INT_EQ(st.prompt_tokens, 8, "embed_reports_prompt_tokens");
	free(v);

	req = last_request();
	input = json_object_get(json_object_get(req, "body"), "input");
	TAP_STR_EQ(json_string_value(json_object_get(req, "path")), "/v1/embeddings", "embed_posts_to_embeddings");
	TAP_STR_EQ(json_string_value(json_object_get(json_object_get(req, "body"), "model")), "embed-model",
		   "embed_sends_model");
	TAP_OK(json_array_size(input) == 3 &&
		       strcmp(json_string_value(json_array_get(input, 2)), "stadium capacity") == 0,
	       "embed_sends_inputs_in_order");
	json_decref(req);
}

static void test_embed_ordering(void)
{
	static const char *const inputs[] = {"a", "b", "c"};
	struct model_endpoint ep = endpoint();
	float *v = NULL;
	size_t dim = 0;
	int r;

	set_rules("{\"rules\": [{\"match\": {\"path\": \"/v1/embeddings\"}, \"respond\": {\"embeddings\":"
		  " [[1, 0, 0], [0, 1, 0], [0, 0, 1]], \"reverse\": true}}]}");
	r = model_embed(&ep, inputs, 3, &v, &dim, NULL, NULL);
	TAP_INT_EQ(r, 0, "embed_out_of_order_answer_succeeds");
	TAP_INT_EQ(dim, 3, "embed_out_of_order_dimension");
	TAP_OK(v && v[0] == 1 && v[4] == 1 && v[8] == 1 && v[2] == 0 && v[6] == 0,
	       "embed_rows_are_placed_by_index");
	free(v);
	v = NULL;

	set_rules("{\"rules\": [{\"respond\": {\"embeddings\": [[1, 2], [3, 4], [5, 6]], \"no_index\": true}}]}");
	r = model_embed(&ep, inputs, 3, &v, &dim, NULL, NULL);
	TAP_OK(r == 0 && v && v[0] == 1 && v[3] == 4 && v[5] == 6, "embed_without_index_keeps_positions");
	free(v);
}

static void test_embed_bad_answers(void)
{
	static const char *const inputs[] = {"a", "b", "c"};
	struct model_endpoint ep = endpoint();
	struct t2s_error err = {0};
	float *v = NULL;
	size_t dim = 0;

	set_rules("{\"rules\": [{\"respond\": {\"embeddings\": [[1, 0], [0, 1]]}}]}");
	TAP_INT_EQ(model_embed(&ep, inputs, 3, &v, &dim, NULL, &err), -T2S_ERR_UPSTREAM,
		   "embed_wrong_count_is_upstream_error");
	TAP_OK(strstr(err.message, "2 embeddings for 3 inputs") != NULL, "embed_wrong_count_message_says_counts");

	set_rules("{\"rules\": [{\"respond\": {\"embeddings\": [[1, 0], [0, 1, 2], [1, 1]]}}]}");
	TAP_INT_EQ(model_embed(&ep, inputs, 3, &v, &dim, NULL, &err), -T2S_ERR_UPSTREAM,
		   "embed_inconsistent_dimensions_is_upstream_error");

	set_rules("{\"rules\": [{\"respond\": {\"raw_body\": \"{\\\"data\\\": [{\\\"index\\\": 0, \\\"embedding\\\": [1]},"
		  " {\\\"index\\\": 0, \\\"embedding\\\": [2]}, {\\\"index\\\": 2, \\\"embedding\\\": [3]}]}\"}}]}");
	TAP_INT_EQ(model_embed(&ep, inputs, 3, &v, &dim, NULL, &err), -T2S_ERR_UPSTREAM,
		   "embed_duplicate_index_is_upstream_error");

	set_rules("{\"rules\": [{\"respond\": {\"raw_body\": \"{\\\"data\\\": [{\\\"index\\\": 0, \\\"embedding\\\": \\\"AAAA\\\"},"
		  " {\\\"index\\\": 1, \\\"embedding\\\": [2]}, {\\\"index\\\": 2, \\\"embedding\\\": [3]}]}\"}}]}");
	TAP_INT_EQ(model_embed(&ep, inputs, 3, &v, &dim, NULL, &err), -T2S_ERR_UPSTREAM,
		   "embed_non_array_embedding_is_upstream_error");
	TAP_OK(v == NULL && dim == 0, "embed_failure_leaves_outputs_untouched");
}

/* ---- many threads ------------------------------------------------------ */

#define N_THREADS 8
#define CALLS_PER_THREAD 5

struct worker {
	int id;
	int ok;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct model_endpoint ep = endpoint();
	char q[64], want[32];
	int i;

	snprintf(q, sizeof(q), "question from thread %d.", w->id);
	snprintf(want, sizeof(want), "answer %d", w->id);
	for (i = 0; i < CALLS_PER_THREAD; i++) {
		struct model_message m = {"user", q};
		char *text = NULL;

		if (model_chat(&ep, &m, 1, &text, NULL, NULL) == 0 && strcmp(text, want) == 0)
			w->ok++;
		free(text);
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t th[N_THREADS];
	struct worker w[N_THREADS];
	char rules[4096];
	size_t len;
	int i, all = 0;

	len = (size_t)snprintf(rules, sizeof(rules), "{\"rules\": [");
	for (i = 0; i < N_THREADS; i++)
		len += (size_t)snprintf(rules + len, sizeof(rules) - len,
					"%s{\"match\": {\"contains\": \"thread %d.\"}, \"respond\": {\"content\": \"answer %d\", \"delay_ms\": 20}}",
					i ? ", " : "", i, i);
	snprintf(rules + len, sizeof(rules) - len, "]}");
	set_rules(rules);
	for (i = 0; i < N_THREADS; i++) {
		w[i].id = i;
		w[i].ok = 0;
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	for (i = 0; i < N_THREADS; i++) {
		pthread_join(th[i], NULL);
		all += w[i].ok;
	}
	TAP_INT_EQ(all, N_THREADS * CALLS_PER_THREAD, "eight_threads_calling_chat_at_once_all_get_their_answer");
}

int main(void)
{
	if (model_client_global_init() != 0 || stub_start() != 0) {
		printf("Bail out! cannot start the model stub (python3 tests/stub/model_stub.py)\n");
		stub_stop();
		return 1;
	}
	test_chat_happy_path();
	test_chat_optional_fields();
	test_chat_authorization();
	test_chat_error_hides_api_key();
	test_chat_client_error_not_retried();
	test_chat_retry_after_429();
	test_chat_retry_after_http_date();
	test_chat_absurd_retry_after_within_budget();
	test_chat_retries_5xx();
	test_chat_malformed_answers();
	test_chat_usage_absent();
	test_chat_timeout();
	test_chat_body_cap();
	test_chat_connection_reuse();
	test_chat_sequence();
	test_chat_invalid_arguments();
	test_connection_refused();
	test_ping();
	test_embed_default_vectors();
	test_embed_ordering();
	test_embed_bad_answers();
	test_threads();
	stub_stop();
	model_client_global_cleanup();
	return tap_done();
}
