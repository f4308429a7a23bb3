/*
 * forwarded.c - the client address behind trusted proxies (see forwarded.h).
 */
#include "server/forwarded.h"

#include <stdio.h>
#include <string.h>

/* The entry of xff that ends at end (exclusive), trimmed, into buf; returns the start of the entry. */
static const char *entry_before(const char *xff, const char *end, char *buf, size_t size)
{
	const char *start = end;
	while (start > xff && start[-1] != ',')
		start--;
	const char *a = start, *b = end;
	while (a < b && (*a == ' ' || *a == '\t'))
		a++;
	while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
		b--;
	size_t n = (size_t)(b - a);
	if (n >= size)
		n = 0; /* too long to be an address: an empty entry, which is none */
	memcpy(buf, a, n);
	buf[n] = '\0';
	return start;
}

void forwarded_client(const struct cidr *trusted, size_t n_trusted, const char *peer, const char *xff, char *out,
		      size_t size)
{
	snprintf(out, size, "%s", peer);
	if (!xff || !n_trusted || !cidr_list_contains_text(trusted, n_trusted, peer))
		return;
	const char *end = xff + strlen(xff);
	while (end > xff) {
		char hop[64];
		const char *start = entry_before(xff, end, hop, sizeof(hop));
		struct cidr parsed;
		if (!strchr(hop, '/') && cidr_parse(hop, &parsed)) {
			snprintf(out, size, "%s", hop);
			if (!cidr_list_contains_text(trusted, n_trusted, hop))
				return; /* the rightmost untrusted address: the client */
		} else if (hop[0]) {
			return; /* not an address: believe nothing further left */
		}
		end = start > xff ? start - 1 : xff;
	}
}
