/*
 * test_forwarded.c - CIDR ranges (common/cidr.c) and the client address
 * behind trusted proxies (server/forwarded.c): X-Forwarded-For is believed
 * only from a trusted peer and read from the right.  Prints TAP.
 */
#include "common/cidr.h"
#include "server/forwarded.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "tests/unit/tap.h"

static void test_cidr(void)
{
	struct cidr c;
	TAP_OK(cidr_parse("10.0.0.0/8", &c) && c.family == AF_INET && c.prefix == 8, "ipv4_range_parses");
	TAP_OK(cidr_parse("192.0.2.7", &c) && c.prefix == 32, "bare_ipv4_address_is_a_32_bit_range");
	TAP_OK(cidr_parse("fd00::/8", &c) && c.family == AF_INET6 && c.prefix == 8, "ipv6_range_parses");
	TAP_OK(!cidr_parse("10.0.0.0/33", &c), "ipv4_prefix_over_32_is_refused");
	TAP_OK(!cidr_parse("10.0.0.0/", &c) && !cidr_parse("10.0.0.0/x", &c), "empty_or_bad_prefix_is_refused");
	TAP_OK(!cidr_parse("gateway.local", &c) && !cidr_parse("", &c), "a_name_is_not_a_range");
	struct cidr list[2];
	cidr_parse("10.1.0.0/16", &list[0]);
	cidr_parse("2001:db8::/32", &list[1]);
	TAP_OK(cidr_list_contains_text(list, 2, "10.1.200.3"), "address_inside_the_range_is_contained");
	TAP_OK(!cidr_list_contains_text(list, 2, "10.2.0.1"), "address_outside_the_range_is_not");
	TAP_OK(cidr_list_contains_text(list, 2, "::ffff:10.1.0.9"), "mapped_ipv4_is_compared_as_ipv4");
	TAP_OK(cidr_list_contains_text(list, 2, "2001:db8:1::5"), "ipv6_inside_the_range_is_contained");
	TAP_OK(!cidr_list_contains_text(list, 2, "not an address"), "text_that_is_no_address_is_not_contained");
	struct cidr odd;
	cidr_parse("192.168.4.0/22", &odd);
	TAP_OK(cidr_list_contains_text(&odd, 1, "192.168.7.255") && !cidr_list_contains_text(&odd, 1, "192.168.8.0"),
	       "prefix_not_on_a_byte_boundary_masks_the_partial_byte");
	struct sockaddr_in6 sa = {.sin6_family = AF_INET6};
	inet_pton(AF_INET6, "::ffff:10.1.2.3", &sa.sin6_addr);
	char text[64];
	cidr_addr_text((struct sockaddr *)&sa, text, sizeof(text));
	TAP_STR_EQ(text, "10.1.2.3", "mapped_socket_address_prints_as_ipv4");
	TAP_OK(cidr_list_contains(list, 2, (struct sockaddr *)&sa), "mapped_socket_address_is_in_the_ipv4_range");
}

static void test_forwarded(void)
{
	struct cidr trusted[1];
	cidr_parse("10.0.0.0/8", &trusted[0]);
	char out[64];
	forwarded_client(trusted, 1, "203.0.113.5", "198.51.100.1", out, sizeof(out));
	TAP_STR_EQ(out, "203.0.113.5", "xff_from_an_untrusted_peer_is_ignored");
	forwarded_client(NULL, 0, "10.0.0.2", "198.51.100.1", out, sizeof(out));
	TAP_STR_EQ(out, "10.0.0.2", "xff_is_ignored_without_trusted_proxies");
	forwarded_client(trusted, 1, "10.0.0.2", NULL, out, sizeof(out));
	TAP_STR_EQ(out, "10.0.0.2", "trusted_peer_without_xff_is_the_client");
	forwarded_client(trusted, 1, "10.0.0.2", "1.2.3.4, 198.51.100.1", out, sizeof(out));
	TAP_STR_EQ(out, "198.51.100.1", "rightmost_untrusted_hop_is_the_client_not_the_spoofable_leftmost");
	forwarded_client(trusted, 1, "10.0.0.2", "198.51.100.1, 10.9.9.9 ,10.0.0.7", out, sizeof(out));
	TAP_STR_EQ(out, "198.51.100.1", "trusted_hops_on_the_right_are_skipped");
	forwarded_client(trusted, 1, "10.0.0.2", "10.3.3.3, 10.0.0.7", out, sizeof(out));
	TAP_STR_EQ(out, "10.3.3.3", "every_hop_trusted_gives_the_leftmost");
	forwarded_client(trusted, 1, "10.0.0.2", "198.51.100.1, garbage, 10.0.0.7", out, sizeof(out));
	TAP_STR_EQ(out, "10.0.0.7", "an_entry_that_is_no_address_stops_the_walk_at_the_last_trusted_hop");
	forwarded_client(trusted, 1, "10.0.0.2", "2001:db8::9", out, sizeof(out));
	TAP_STR_EQ(out, "2001:db8::9", "ipv6_hop_is_a_client");
	forwarded_client(trusted, 1, "10.0.0.2", " , ", out, sizeof(out));
	TAP_STR_EQ(out, "10.0.0.2", "empty_entries_leave_the_peer");
}

int main(void)
{
	test_cidr();
	test_forwarded();
	return tap_done();
}
