/*
 * sql_text.c - see sql_text.h.
 */
#include "pipeline/sql/sql_text.h"

#include <ctype.h>
#include <string.h>

const char *sql_skip_space_and_comments(const char *p)
{
	for (;;) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (p[0] == '-' && p[1] == '-') {
			p += strcspn(p, "\n");
		} else if (p[0] == '/' && p[1] == '*') {
			const char *end = strstr(p + 2, "*/");
			p = end ? end + 2 : p + strlen(p);
		} else {
			return p;
		}
	}
}

void sql_leading_keyword(const char *sql, char *buf, size_t size)
{
	const char *p = sql_skip_space_and_comments(sql);
	size_t n = 0;
	while (size && n + 1 < size && isalpha((unsigned char)p[n])) {
		buf[n] = (char)toupper((unsigned char)p[n]);
		n++;
	}
	if (size)
		buf[n] = '\0';
}
