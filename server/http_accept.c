/*
 * http_accept.c - content negotiation on the Accept header (see
 * http_negotiate in http.h).
 */
#include "server/http.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct range {
	const char *type, *sub; /* into the header; not NUL-terminated */
	size_t type_len, sub_len;
	double q;
};

/* The q parameter of a range's parameters (text between ';' and the range's end); 1 when absent. */
static double q_of(const char *params, const char *end)
{
	const char *p = params;
	while (p && p < end) {
		p += strspn(p, " \t;");
		if (p + 1 < end && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
			double q = strtod(p + 2, NULL);
			return q < 0 ? 0 : q > 1 ? 1 : q;
		}
		p = memchr(p, ';', (size_t)(end - p));
	}
	return 1;
}

/* Parse accept into ranges (at most max); returns how many were well-formed. */
static size_t parse(const char *accept, struct range *out, size_t max)
{
	size_t n = 0;
	while (accept && *accept && n < max) {
		accept += strspn(accept, " \t,");
		const char *end = accept + strcspn(accept, ",");
		const char *semi = memchr(accept, ';', (size_t)(end - accept));
		const char *type_end = semi ? semi : end;
		while (type_end > accept && (type_end[-1] == ' ' || type_end[-1] == '\t'))
			type_end--;
		const char *slash = memchr(accept, '/', (size_t)(type_end - accept));
		if (slash && slash > accept && slash + 1 < type_end) {
			out[n] = (struct range){accept, slash + 1, (size_t)(slash - accept), (size_t)(type_end - slash - 1),
						q_of(semi, end)};
			n++;
		}
		accept = end;
	}
	return n;
}

static bool part_is(const char *s, size_t len, const char *want, size_t want_len)
{
	return len == want_len && strncasecmp(s, want, len) == 0;
}

/* How specifically r matches offer "type/sub": 3 exactly, 2 type/\*, 1 *\/\*, 0 not at all. */
static int match(const struct range *r, const char *offer)
{
	const char *slash = strchr(offer, '/');
	size_t tl = (size_t)(slash - offer), sl = strlen(slash + 1);
	if (part_is(r->type, r->type_len, "*", 1))
		return part_is(r->sub, r->sub_len, "*", 1) ? 1 : 0;
	if (!part_is(r->type, r->type_len, offer, tl))
		return 0;
	if (part_is(r->sub, r->sub_len, "*", 1))
		return 2;
	return part_is(r->sub, r->sub_len, slash + 1, sl) ? 3 : 0;
}

int http_negotiate(struct http_request *req, const char *const *offers, size_t n)
{
	struct range ranges[HTTP_ACCEPT_MAX_RANGES];
	size_t nr = parse(http_request_header(req, "Accept"), ranges, HTTP_ACCEPT_MAX_RANGES);
	bool wants_some = false;
	for (size_t k = 0; k < nr; k++)
		wants_some |= ranges[k].q > 0;
	int best = -1, fallback = -1;
	double best_q = 0;
	for (size_t i = 0; i < n; i++) {
		int spec = 0;
		double q = 0;
		for (size_t k = 0; k < nr; k++) {
			int m = match(&ranges[k], offers[i]);
			if (m > spec || (m == spec && m && ranges[k].q > q)) {
				spec = m;
				q = ranges[k].q;
			}
		}
		if (q > best_q) {
			best_q = q;
			best = (int)i;
		}
		if (fallback < 0 && !(spec && q <= 0))
			fallback = (int)i; /* not excluded by name */
	}
	if (best >= 0)
		return best;
	return wants_some ? -1 : fallback;
}
