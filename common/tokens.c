/*
 * tokens.c - the token estimate (see tokens.h).
 */
#include "common/tokens.h"

#include <string.h>

long tokens_estimate_bytes(size_t n)
{
	return (long)((n + 3) / 4);
}

long tokens_estimate(const char *text)
{
	return text ? tokens_estimate_bytes(strlen(text)) : 0;
}
