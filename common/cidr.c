/*
 * cidr.c - CIDR ranges: parsing and membership (see cidr.h).
 */
#include "common/cidr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* The address in bytes (4 for IPv4, also for a mapped one, else 16); the family, or 0 when not an address. */
static int addr_bytes(const char *text, unsigned char out[16])
{
	if (inet_pton(AF_INET, text, out) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, text, out) != 1)
		return 0;
	if (memcmp(out, v4_mapped_prefix, 12) == 0) {
		memmove(out, out + 12, 4);
		return AF_INET;
	}
	return AF_INET6;
}

bool cidr_parse(const char *text, struct cidr *ret)
{
	char buf[64];
	size_t n = strcspn(text, "/");
	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, text, n);
	buf[n] = '\0';
	struct cidr c = {0};
	c.family = addr_bytes(buf, c.addr);
	if (!c.family)
		return false;
	unsigned max = c.family == AF_INET ? 32 : 128;
	c.prefix = max;
	if (text[n] == '/') {
		const char *p = text + n + 1;
		char *end;
		if (*p < '0' || *p > '9')
			return false;
		unsigned long v = strtoul(p, &end, 10);
		if (*end || v > max)
			return false;
		c.prefix = (unsigned)v;
	}
	*ret = c;
	return true;
}

static bool contains(const struct cidr *c, int family, const unsigned char *addr)
{
	if (c->family != family)
		return false;
	unsigned whole = c->prefix / 8, rest = c->prefix % 8;
	if (memcmp(c->addr, addr, whole) != 0)
		return false;
	if (!rest)
		return true;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));
	return (c->addr[whole] & mask) == (addr[whole] & mask);
}

static bool list_contains(const struct cidr *list, size_t n, int family, const unsigned char *addr)
{
	for (size_t i = 0; i < n; i++)
		if (contains(&list[i], family, addr))
			return true;
	return false;
}

bool cidr_list_contains_text(const struct cidr *list, size_t n, const char *text)
{
	unsigned char addr[16];
	int family = addr_bytes(text, addr);
	return family && list_contains(list, n, family, addr);
}

bool cidr_list_contains(const struct cidr *list, size_t n, const struct sockaddr *addr)
{
	if (addr->sa_family == AF_INET)
		return list_contains(list, n, AF_INET,
				     (const unsigned char *)&((const struct sockaddr_in *)addr)->sin_addr);
	if (addr->sa_family != AF_INET6)
		return false;
	const unsigned char *b = ((const struct sockaddr_in6 *)addr)->sin6_addr.s6_addr;
	if (memcmp(b, v4_mapped_prefix, 12) == 0)
		return list_contains(list, n, AF_INET, b + 12);
	return list_contains(list, n, AF_INET6, b);
}

void cidr_addr_text(const struct sockaddr *addr, char *buf, size_t size)
{
	buf[0] = '\0';
	if (addr->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)addr)->sin_addr, buf, (socklen_t)size);
	} else if (addr->sa_family == AF_INET6) {
		const unsigned char *b = ((const struct sockaddr_in6 *)addr)->sin6_addr.s6_addr;
		if (memcmp(b, v4_mapped_prefix, 12) == 0)
			inet_ntop(AF_INET, b + 12, buf, (socklen_t)size);
		else
			inet_ntop(AF_INET6, b, buf, (socklen_t)size);
	}
}
