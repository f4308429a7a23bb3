/*
 * traceparent.c - parsing W3C traceparent headers (see traceparent.h).
 */
#include "server/traceparent.h"

#include <string.h>

/* n lower-case hex digits at s, not all zero when nonzero is set. */
static bool hex_field(const char *s, size_t n, bool nonzero)
{
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
		any |= c != '0';
	}
	return any || !nonzero;
}

bool traceparent_parse(const char *value, char *ret, size_t ret_size)
{
	if (ret_size)
		ret[0] = '\0';
	if (!value || ret_size <= TRACEPARENT_LEN)
		return false;
	size_t n = strlen(value);
	/* version "00" is exactly 55 characters; a later version may append "-..." fields. */
	if (n < TRACEPARENT_LEN || !hex_field(value, 2, false) || strncmp(value, "ff", 2) == 0)
		return false;
	if (strncmp(value, "00", 2) == 0 ? n != TRACEPARENT_LEN : (n > TRACEPARENT_LEN && value[TRACEPARENT_LEN] != '-'))
		return false;
	if (value[2] != '-' || value[35] != '-' || value[52] != '-' || !hex_field(value + 3, 32, true) ||
	    !hex_field(value + 36, 16, true) || !hex_field(value + 53, 2, false))
		return false;
	memcpy(ret, value, TRACEPARENT_LEN);
	ret[TRACEPARENT_LEN] = '\0';
	return true;
}
