/*
 * test_http_head.c - the request head checker of the listener
 * (server/http_head.c): what is complete, what is sound, and the status of
 * each kind of bad head, also when the bytes arrive one at a time.  Prints TAP.
 */
#include "server/http_head.h"

#include <stdio.h>
#include <string.h>

#include "tests/unit/tap.h"

static const struct http_head_limits lim = {.max_header_bytes = 1024, .max_uri_bytes = 128, .max_body_bytes = 4096};

static enum http_head_state check(const char *s, struct http_head_verdict *v)
{
	return http_head_check(s, strlen(s), &lim, v);
}

/* The verdict on s once complete, and every proper prefix of it is INCOMPLETE or the same BAD status. */
static int status_bytewise(const char *s)
{
	struct http_head_verdict v;
	size_t n = strlen(s);
	for (size_t i = 1; i < n; i++) {
		enum http_head_state st = http_head_check(s, i, &lim, &v);
		if (st == HTTP_HEAD_BAD)
			return v.status;
		if (st == HTTP_HEAD_OK)
			return -1; /* complete too early */
	}
	enum http_head_state st = http_head_check(s, n, &lim, &v);
	return st == HTTP_HEAD_OK ? 200 : st == HTTP_HEAD_BAD ? v.status : 0;
}

static void test_sound_heads(void)
{
	struct http_head_verdict v;
	const char *get = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	TAP_OK(check(get, &v) == HTTP_HEAD_OK && v.head_len == strlen(get), "complete_get_is_ok_with_its_length");
	TAP_STR_EQ(v.method, "GET", "method_label_is_get");
	TAP_INT_EQ(status_bytewise(get), 200, "get_arriving_byte_by_byte_is_incomplete_until_the_blank_line");
	TAP_INT_EQ(status_bytewise("POST /execute HTTP/1.0\nContent-Length: 12\n\n"), 200, "bare_lf_and_http_1_0_are_ok");
	TAP_OK(check("POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde", &v) == HTTP_HEAD_OK && v.head_len == 39,
	       "body_bytes_after_the_head_are_not_part_of_it");
	TAP_OK(check("\r\nGET / HTTP/1.1\r\n\r\n", &v) == HTTP_HEAD_OK, "empty_line_before_the_request_line_is_ignored");
	TAP_OK(check("BREW /pot HTTP/1.1\r\n\r\n", &v) == HTTP_HEAD_OK && strcmp(v.method, "other") == 0,
	       "unknown_method_is_labelled_other");
	TAP_OK(check("GET / HTTP/1.1\r\nX-A: 1\r\n\tcontinued\r\n\r\n", &v) == HTTP_HEAD_OK,
	       "obs_fold_line_is_passed_to_the_library");
}

static void test_bad_heads(void)
{
	TAP_INT_EQ(status_bytewise("GET /healthz HTTP/1.1\r\nContent-Length: -5\r\n\r\n"), 400, "negative_content_length_is_400");
	TAP_INT_EQ(status_bytewise("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), 400,
		   "disagreeing_content_lengths_are_400");
	TAP_INT_EQ(status_bytewise("GET / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n"), 413,
		   "content_length_of_23_digits_is_413");
	TAP_INT_EQ(status_bytewise("POST / HTTP/1.1\r\nContent-Length: 4097\r\n\r\n"), 413, "content_length_over_the_body_limit_is_413");
	TAP_INT_EQ(status_bytewise("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"), 400,
		   "content_length_with_transfer_encoding_is_400");
	TAP_INT_EQ(status_bytewise("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"), 501, "transfer_coding_other_than_chunked_is_501");
	TAP_INT_EQ(status_bytewise("GET / HTTP/2.0\r\n\r\n"), 505, "http_2_0_is_505");
	TAP_INT_EQ(status_bytewise("GET / HTTP/9.9\r\n\r\n"), 505, "http_9_9_is_505");
	TAP_INT_EQ(status_bytewise("GET / FTP/1.1\r\n\r\n"), 400, "other_protocol_is_400");
	TAP_INT_EQ(status_bytewise("HELLO WORLD\r\n\r\n"), 400, "request_line_without_version_is_400");
	TAP_INT_EQ(status_bytewise("GET /healthz HTTP/1.1\r\nBad Header Without Colon\r\n\r\n"), 400, "header_without_colon_is_400");
	TAP_INT_EQ(status_bytewise("GET / HTTP/1.1\r\nHost : x\r\n\r\n"), 400, "space_before_colon_is_400");
	TAP_INT_EQ(status_bytewise("GET / HTTP/1.1\r\nX: a\x01z\r\n\r\n"), 400, "control_byte_in_a_value_is_400");
	struct http_head_verdict v;
	TAP_OK(http_head_check("\x16\x03\x01\x02", 4, &lim, &v) == HTTP_HEAD_BAD && v.status == 400,
	       "tls_hello_is_refused_at_once");
	TAP_OK(http_head_check("GET /\0 HTTP/1.1", 15, &lim, &v) == HTTP_HEAD_BAD && v.status == 400, "nul_byte_is_400");
	char uri[300];
	snprintf(uri, sizeof(uri), "GET /%0200d HTTP/1.1\r\n\r\n", 0);
	TAP_INT_EQ(status_bytewise(uri), 414, "target_over_max_uri_bytes_is_414");
	char big[1400];
	snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nX-Big: %01100d\r\n\r\n", 0);
	TAP_INT_EQ(status_bytewise(big), 431, "head_over_max_header_bytes_is_431");
	char line[1400];
	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	memcpy(line, "GET ", 4);
	TAP_OK(check(line, &v) == HTTP_HEAD_BAD && (v.status == 414 || v.status == 431), "endless_request_line_is_414");
	TAP_OK(check("GET / HTTP/1.1\r\nX-A: 1\r", &v) == HTTP_HEAD_INCOMPLETE, "cr_awaiting_its_lf_is_incomplete");
}

/* The chunk lines that came with the head (issue 19): CRLF-terminated, sizes bounded. */
static void test_chunk_framing(void)
{
	struct http_head_verdict v;
#define CHUNKED "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	TAP_OK(check(CHUNKED "3\r\nabc\r\n0\r\n\r\n", &v) == HTTP_HEAD_OK, "sound_chunked_body_is_ok");
	TAP_OK(check(CHUNKED "3;ext=1\r\nab", &v) == HTTP_HEAD_OK, "partial_chunk_with_extension_is_ok_so_far");
	TAP_OK(check(CHUNKED "3\r\nabc\r\n0\n\r\n", &v) == HTTP_HEAD_BAD && v.status == 400,
	       "bare_lf_last_chunk_line_is_400");
	TAP_OK(check(CHUNKED "3\nabc\r\n", &v) == HTTP_HEAD_BAD && v.status == 400, "bare_lf_chunk_line_is_400");
	TAP_OK(check(CHUNKED "3\r\nabcX\r\n", &v) == HTTP_HEAD_BAD && v.status == 400, "chunk_data_overrunning_its_size_is_400");
	TAP_OK(check(CHUNKED "FFFFFFFFFFFFFFFFFFFF\r\n", &v) == HTTP_HEAD_BAD && v.status == 413,
	       "chunk_size_of_20_hex_digits_is_413");
	TAP_OK(check(CHUNKED "1001\r\n", &v) == HTTP_HEAD_BAD && v.status == 413, "chunk_size_over_the_body_limit_is_413");
	TAP_OK(check(CHUNKED "800\r\n", &v) == HTTP_HEAD_OK, "chunk_size_within_the_body_limit_is_ok");
	TAP_OK(check(CHUNKED "zz\r\n", &v) == HTTP_HEAD_BAD && v.status == 400, "chunk_line_without_hex_size_is_400");
#undef CHUNKED
}

static void test_method_labels(void)
{
	TAP_STR_EQ(http_method_label("DELETE", 6), "DELETE", "delete_is_its_own_label");
	TAP_STR_EQ(http_method_label("GETX", 4), "other", "near_miss_is_other");
	TAP_STR_EQ(http_method_label("GE", 2), "other", "prefix_is_other");
}

int main(void)
{
	test_sound_heads();
	test_bad_heads();
	test_chunk_framing();
	test_method_labels();
	return tap_done();
}
