/*
 * forwarded.h - the client's address of a request that may have come
 * through gateways: X-Forwarded-For is believed only from a trusted proxy
 * (listen.trusted_proxies), and then read from the right: each hop appends
 * the address it received from, so the rightmost address that is not a
 * trusted proxy is the client (addresses to its left were written by the
 * client itself and prove nothing).  Pure; no allocation; thread-safe.
 */
#ifndef T2S_FORWARDED_H
#define T2S_FORWARDED_H

#include "common/cidr.h"

#include <stddef.h>

/*
 * Write the client address into out (size >= 46): peer (the socket's
 * address, as text) unless peer is in trusted and xff (the X-Forwarded-For
 * values, joined with commas; NULL when absent) names hops.  Walking xff
 * from the right, the first address not in trusted is the client; an entry
 * that is not an address stops the walk (the last trusted hop is then the
 * client); when every hop is trusted, the leftmost is.
 */
void forwarded_client(const struct cidr *trusted, size_t n_trusted, const char *peer, const char *xff, char *out,
		      size_t size);

#endif
