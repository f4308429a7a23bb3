/*
 * numbers.c - the number grammar (see numbers.h).
 */
#include "pipeline/text/numbers.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NUMBER_MAX_LEN 63 /* longer text is no number anyone writes */

/* Copy the integer part of *p into buf at *n, dropping well-placed thousands commas; false on a misplaced one. */
static bool integer_part(const char **p, char *buf, size_t *n)
{
	int group = -1; /* digits since the last comma, -1 before any comma */
	int lead = 0;   /* digits before the first comma */
	for (;; (*p)++) {
		if (isdigit((unsigned char)**p)) {
			buf[(*n)++] = **p;
			if (group >= 0)
				group++;
			else
				lead++;
		} else if (**p == ',' && (group == 3 || (group < 0 && lead >= 1 && lead <= 3))) {
			group = 0;
		} else {
			break;
		}
	}
	return group < 0 || group == 3;
}

bool number_parse(const char *s, size_t len, double *ret)
{
	char text[NUMBER_MAX_LEN + 1], buf[NUMBER_MAX_LEN + 1];
	if (len == 0 || len > NUMBER_MAX_LEN)
		return false;
	memcpy(text, s, len);
	text[len] = '\0';
	const char *p = text;
	size_t n = 0;
	if (*p == '+' || *p == '-')
		buf[n++] = *p++;
	if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
		return false;
	if (!integer_part(&p, buf, &n))
		return false;
	while (isdigit((unsigned char)*p) || *p == '.' || *p == 'e' || *p == 'E' ||
	       ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E')))
		buf[n++] = *p++;
	if (*p)
		return false;
	buf[n] = '\0';
	char *end;
	double v = strtod(buf, &end);
	if (*end || !isfinite(v))
		return false;
	*ret = v;
	return true;
}
