/*
 * cidr.h - address ranges written as CIDR ("10.0.0.0/8", "::1/128", or a
 * bare address, meaning that one address): parsing and membership.
 *
 * Used for listen.trusted_proxies: the config parses the list at load (so a
 * bad entry is a config error), the server asks whether a peer or a
 * forwarded address is in it.  IPv4-mapped IPv6 addresses (::ffff:a.b.c.d)
 * are compared as the IPv4 address they carry.  Pure functions, no
 * allocation; thread-safe.
 */
#ifndef T2S_CIDR_H
#define T2S_CIDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct cidr {
	int family;              /* AF_INET or AF_INET6 */
	unsigned char addr[16];  /* network order; 4 bytes used for AF_INET */
	unsigned prefix;         /* leading bits that must match: 0..32 or 0..128 */
};

/* Parse text ("a.b.c.d[/n]" or "v6[/n]"); false when it is not one (*ret untouched). */
bool cidr_parse(const char *text, struct cidr *ret);

/* Whether the address written as text (no prefix) is in one of the n ranges; false when it is no address. */
bool cidr_list_contains_text(const struct cidr *list, size_t n, const char *text);

/* Whether addr (AF_INET or AF_INET6; others: false) is in one of the n ranges. */
bool cidr_list_contains(const struct cidr *list, size_t n, const struct sockaddr *addr);

/* addr as text ("127.0.0.1", "::1"; mapped IPv4 as IPv4) into buf of size >= 46; "" for other families. */
void cidr_addr_text(const struct sockaddr *addr, char *buf, size_t size);

#endif
