/*
 * http_head.c - checking a request head as it arrives (see http_head.h).
 *
 * One pass over the bytes so far: the request line, then header lines up to
 * the blank line.  A line not yet ended by LF is checked as far as it goes
 * (so garbage is refused at once, not at the deadline) and makes the result
 * HTTP_HEAD_INCOMPLETE.  Lines may end in CRLF or a bare LF, as the library
 * accepts both.
 */
#include "server/http_head.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 token characters. */
static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A byte that may not appear in a field value (controls but HTAB). */
static bool is_value_ctl(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

static enum http_head_state bad(struct http_head_verdict *v, int status, const char *detail)
{
	v->status = status;
	switch (status) {
	case 413: v->slug = "payload-too-large", v->title = "Payload too large"; break;
	case 414: v->slug = "uri-too-long", v->title = "URI too long"; break;
	case 431: v->slug = "headers-too-large", v->title = "Request header fields too large"; break;
	case 501: v->slug = "not-implemented", v->title = "Not implemented"; break;
	case 505: v->slug = "http-version-not-supported", v->title = "HTTP version not supported"; break;
	default: v->slug = "bad-request", v->title = "Bad request"; break;
	}
	snprintf(v->detail, sizeof(v->detail), "%s", detail);
	return HTTP_HEAD_BAD;
}

const char *http_method_label(const char *method, size_t n)
{
	static const char *const known[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH",
					    "OPTIONS", "TRACE", "CONNECT", NULL};
	for (const char *const *k = known; *k; k++)
		if (strlen(*k) == n && memcmp(*k, method, n) == 0)
			return *k;
	return "other";
}

/*
 * The line starting at p: its end (before CR LF or LF) in *ret_end, the next
 * line in *ret_next; false when no LF yet (then *ret_end is the end of the
 * bytes so far, before a trailing CR).
 */
static bool line_at(const char *buf, size_t len, size_t p, size_t *ret_end, size_t *ret_next)
{
	const char *lf = memchr(buf + p, '\n', len - p);
	if (!lf) {
		*ret_end = len > p && buf[len - 1] == '\r' ? len - 1 : len; /* a CR whose LF is still to come */
		return false;
	}
	size_t e = (size_t)(lf - buf);
	*ret_next = e + 1;
	if (e > p && buf[e - 1] == '\r')
		e--;
	*ret_end = e;
	return true;
}

/* The request line [p, e); complete says whether it ended.  HTTP_HEAD_OK when sound so far. */
static enum http_head_state check_request_line(const char *buf, size_t p, size_t e, bool complete,
					       const struct http_head_limits *lim, struct http_head_verdict *v)
{
	size_t m = p;
	while (m < e && is_tchar((unsigned char)buf[m]))
		m++;
	if (m < e || complete) {
		if (m == p || m == e || buf[m] != ' ')
			return bad(v, 400, "the request line must be METHOD SP target SP HTTP/1.1");
		snprintf(v->method, sizeof(v->method), "%s", http_method_label(buf + p, m - p));
	}
	if (m >= e)
		return HTTP_HEAD_OK;
	size_t t = m + 1, te = t;
	while (te < e && (unsigned char)buf[te] > 0x20 && buf[te] != 0x7f)
		te++;
	if (te - t > lim->max_uri_bytes) {
		char d[96];
		snprintf(d, sizeof(d), "the request target is longer than the limit of %zu bytes", lim->max_uri_bytes);
		return bad(v, 414, d);
	}
	if (te == e && !complete)
		return HTTP_HEAD_OK;
	if (te == t || te == e || buf[te] != ' ')
		return bad(v, 400, "the request line must be METHOD SP target SP HTTP/1.1");
	const char *ver = buf + te + 1;
	size_t vn = e - (te + 1);
	static const char proto[] = "HTTP/d.d";
	for (size_t i = 0; i < vn && i < sizeof(proto) - 1; i++) {
		bool digit = ver[i] >= '0' && ver[i] <= '9';
		if (proto[i] == 'd' ? !digit : ver[i] != proto[i])
			return bad(v, 400, "the request line must end with an HTTP version such as HTTP/1.1");
	}
	if (vn > sizeof(proto) - 1 || (complete && vn != sizeof(proto) - 1))
		return bad(v, 400, "the request line must end with an HTTP version such as HTTP/1.1");
	if (vn >= 6 && ver[5] != '1')
		return bad(v, 505, "only HTTP/1.0 and HTTP/1.1 are served");
	return HTTP_HEAD_OK;
}

/*
 * Decimal Content-Length value [s, e) without surrounding blanks (UINT64_MAX
 * when larger); false when not a plain number.
 */
static bool parse_length(const char *s, const char *e, uint64_t *ret)
{
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (s == e)
		return false;
	uint64_t n = 0;
	for (; s < e; s++) {
		if (*s < '0' || *s > '9')
			return false;
		unsigned d = (unsigned)(*s - '0');
		n = n > (UINT64_MAX - d) / 10 ? UINT64_MAX : n * 10 + d;
	}
	*ret = n;
	return true;
}

static bool value_is(const char *s, const char *e, const char *word)
{
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	size_t n = strlen(word);
	return (size_t)(e - s) == n && strncasecmp(s, word, n) == 0;
}

struct framing {
	bool have_length, chunked;
	uint64_t length;
};

/* One header line [p, e); complete says whether it ended. */
static enum http_head_state check_field(const char *buf, size_t p, size_t e, bool complete,
					const struct http_head_limits *lim, struct framing *f,
					struct http_head_verdict *v)
{
	if (buf[p] == ' ' || buf[p] == '\t')
		return HTTP_HEAD_OK; /* obs-fold continuation: the library joins it to the previous field */
	size_t c = p;
	while (c < e && is_tchar((unsigned char)buf[c]))
		c++;
	if (c == e && !complete)
		return HTTP_HEAD_OK;
	if (c == p || c == e || buf[c] != ':')
		return bad(v, 400, "a header line must be a field name, a colon and a value");
	for (size_t i = c + 1; i < e; i++)
		if (is_value_ctl((unsigned char)buf[i]))
			return bad(v, 400, "a header field value holds a control character");
	if (!complete)
		return HTTP_HEAD_OK;
	const char *name = buf + p, *val = buf + c + 1, *end = buf + e;
	size_t nn = c - p;
	if (nn == 14 && strncasecmp(name, "Content-Length", nn) == 0) {
		uint64_t n;
		if (!parse_length(val, end, &n))
			return bad(v, 400, "Content-Length must be a non-negative decimal integer");
		if (f->have_length && n != f->length)
			return bad(v, 400, "two Content-Length fields disagree");
		f->have_length = true;
		f->length = n;
		if (n > lim->max_body_bytes) {
			char d[96];
			snprintf(d, sizeof(d), "request body is larger than the limit of %zu bytes", lim->max_body_bytes);
			return bad(v, 413, d);
		}
	} else if (nn == 17 && strncasecmp(name, "Transfer-Encoding", nn) == 0) {
		if (!value_is(val, end, "chunked"))
			return bad(v, 501, "the only transfer coding accepted is chunked");
		f->chunked = true;
	}
	return HTTP_HEAD_OK;
}

static enum http_head_state too_long(const struct http_head_limits *lim, struct http_head_verdict *v)
{
	char d[96];
	snprintf(d, sizeof(d), "the request head is longer than the limit of %zu bytes", lim->max_header_bytes);
	return bad(v, 431, d);
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/*
 * The chunked body bytes that came with the head, b[0..n), as far as they go:
 * every chunk line ends in CRLF (a bare LF is framing another parser may read
 * otherwise: a smuggling shape), has at most 16 hex digits, and the sizes add
 * up to no more than the body limit (the library would answer either with an
 * HTML page).  HTTP_HEAD_OK when nothing is wrong so far.
 */
static enum http_head_state check_chunks(const char *b, size_t n, const struct http_head_limits *lim,
					 struct http_head_verdict *v)
{
	uint64_t total = 0;
	for (size_t p = 0; p < n;) {
		uint64_t size = 0;
		size_t digits = 0;
		for (; p < n && hex_digit(b[p]) >= 0; p++, digits++) {
			if (digits == 16)
				return bad(v, 413, "a chunk size has more than 16 hex digits");
			size = size << 4 | (uint64_t)hex_digit(b[p]);
		}
		if (p == n)
			return HTTP_HEAD_OK;
		if (digits == 0)
			return bad(v, 400, "a chunk line does not start with its size in hex");
		if (size > lim->max_body_bytes || (total += size) > lim->max_body_bytes) {
			char d[96];
			snprintf(d, sizeof(d), "the chunked body is larger than the limit of %zu bytes", lim->max_body_bytes);
			return bad(v, 413, d);
		}
		const char *lf = memchr(b + p, '\n', n - p);
		if (!lf)
			return HTTP_HEAD_OK;
		if (lf == b + p || lf[-1] != '\r')
			return bad(v, 400, "a chunk line ends in a bare LF: chunk lines end in CRLF");
		p = (size_t)(lf - b) + 1;
		if (size == 0)
			return HTTP_HEAD_OK; /* the trailer section: checked by the library */
		if (n - p <= size)
			return HTTP_HEAD_OK;
		p += (size_t)size;
		if (b[p] != '\r' || (p + 1 < n && b[p + 1] != '\n'))
			return bad(v, 400, "a chunk's data is not followed by CRLF");
		p += 2;
	}
	return HTTP_HEAD_OK;
}

enum http_head_state http_head_check(const char *buf, size_t len, const struct http_head_limits *lim,
				     struct http_head_verdict *ret)
{
	memset(ret, 0, sizeof(*ret));
	size_t start = 0;
	while (start < len && (buf[start] == '\r' || buf[start] == '\n'))
		start++; /* RFC 9112 2.2: empty lines before the request line are ignored */
	if (memchr(buf + start, '\0', len - start))
		return bad(ret, 400, "the request head holds a NUL byte");
	size_t e, next = 0;
	bool complete = line_at(buf, len, start, &e, &next);
	enum http_head_state s = check_request_line(buf, start, e, complete, lim, ret);
	if (s != HTTP_HEAD_OK)
		return s;
	if (!complete && len - start > lim->max_header_bytes) {
		char d[96];
		snprintf(d, sizeof(d), "the request line is longer than the head limit of %zu bytes", lim->max_header_bytes);
		return bad(ret, 414, d);
	}
	if (!complete)
		return HTTP_HEAD_INCOMPLETE;
	struct framing f = {0};
	for (size_t p = next;;) {
		if (p - start > lim->max_header_bytes)
			return too_long(lim, ret);
		complete = line_at(buf, len, p, &e, &next);
		if (complete && e == p) { /* the blank line */
			if (next - start > lim->max_header_bytes)
				return too_long(lim, ret);
			if (f.have_length && f.chunked)
				return bad(ret, 400, "Content-Length and Transfer-Encoding must not both be given");
			if (f.chunked && (s = check_chunks(buf + next, len - next, lim, ret)) != HTTP_HEAD_OK)
				return s;
			ret->head_len = next;
			return HTTP_HEAD_OK;
		}
		if (!complete && e == p)
			return HTTP_HEAD_INCOMPLETE;
		s = check_field(buf, p, e, complete, lim, &f, ret);
		if (s != HTTP_HEAD_OK)
			return s;
		if (!complete)
			return len - start > lim->max_header_bytes ? too_long(lim, ret) : HTTP_HEAD_INCOMPLETE;
		p = next;
	}
}

bool http_content_type_is_json(const char *ct)
{
	if (!ct)
		return true; /* be liberal: many clients omit it */
	size_t n = strcspn(ct, ";");
	while (n && ct[n - 1] == ' ')
		n--;
	if (n == 16 && strncasecmp(ct, "application/json", 16) == 0)
		return true;
	return n > 5 && strncasecmp(ct + n - 5, "+json", 5) == 0;
}
