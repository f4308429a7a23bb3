/*
 * reply.c - finding the SQL in a model's answer (see reply.h).
 */
#include "pipeline/generate/reply.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Body of the first fence whose tag satisfies want_sql (or any tag), as [*ret_start, *ret_end). */
static bool find_fence(const char *text, bool want_sql, const char **ret_start, const char **ret_end)
{
	for (const char *p = strstr(text, "```"); p; p = strstr(p + 3, "```")) {
		const char *tag = p + 3, *eol = strchr(tag, '\n');
		if (!eol)
			return false;
		const char *close = strstr(eol + 1, "```");
		size_t tag_len = (size_t)(eol - tag);
		while (tag_len && isspace((unsigned char)tag[tag_len - 1]))
			tag_len--;
		bool is_sql = tag_len >= 3 && strncasecmp(tag, "sql", 3) == 0 &&
			      (tag_len == 3 || !isalnum((unsigned char)tag[3]));
		if (!want_sql || is_sql) {
			*ret_start = eol + 1;
			*ret_end = close ? close : eol + 1 + strlen(eol + 1);
			return true;
		}
		if (!close)
			return false;
		p = close; /* skip this block's closing fence */
	}
	return false;
}

static bool keyword_at(const char *p, const char *kw)
{
	size_t n = strlen(kw);
	return strncasecmp(p, kw, n) == 0 && !isalnum((unsigned char)p[n]) && p[n] != '_';
}

/* Where the statement on this line starts (after blanks and a "SQL:"-style label), or NULL. */
static const char *statement_start(const char *line)
{
	static const char *const labels[] = {"SQLQuery:", "SQL query:", "SQL:", "Query:", NULL};
	const char *p = line;
	while (*p == ' ' || *p == '\t')
		p++;
	for (const char *const *l = labels; *l; l++)
		if (strncasecmp(p, *l, strlen(*l)) == 0) {
			p += strlen(*l);
			while (*p == ' ' || *p == '\t')
				p++;
			break;
		}
	return keyword_at(p, "SELECT") || keyword_at(p, "WITH") ? p : NULL;
}

/* Words that continue a statement after a blank line. */
static bool continues_statement(const char *p)
{
	static const char *const words[] = {"FROM", "WHERE", "GROUP", "ORDER", "LIMIT", "HAVING", "UNION",
					    "INTERSECT", "EXCEPT", "JOIN", "LEFT", "INNER", "AND", "OR", "ON", NULL};
	for (const char *const *w = words; *w; w++)
		if (keyword_at(p, *w))
			return true;
	return false;
}

/* A bare statement: from the first line starting one, to the end or a blank line followed by prose. */
static bool find_bare(const char *text, const char **ret_start, const char **ret_end)
{
	for (const char *line = text; line && *line;) {
		const char *p = statement_start(line);
		if (p) {
			const char *end = p + strlen(p);
			for (const char *q = strstr(p, "\n\n"); q; q = strstr(q + 1, "\n\n")) {
				const char *next = q;
				while (*next && isspace((unsigned char)*next))
					next++;
				if (*next && !continues_statement(next) && !statement_start(next)) {
					end = q;
					break;
				}
			}
			*ret_start = p;
			*ret_end = end;
			return true;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return false;
}

char *reply_extract_sql(const char *answer, int *ret_nomem)
{
	const char *start = NULL, *end = NULL;
	if (ret_nomem)
		*ret_nomem = 0;
	if (!answer)
		return NULL;
	if (!find_fence(answer, true, &start, &end) && !find_fence(answer, false, &start, &end) &&
	    !find_bare(answer, &start, &end))
		return NULL;
	while (start < end && isspace((unsigned char)*start))
		start++;
	while (end > start && (isspace((unsigned char)end[-1]) || end[-1] == ';'))
		end--;
	if (end == start)
		return NULL;
	char *sql = strndup(start, (size_t)(end - start));
	if (!sql && ret_nomem)
		*ret_nomem = 1;
	return sql;
}

int reply_unanswerable(const char *answer, char *reason, size_t size)
{
	size_t n = strlen(REPLY_UNANSWERABLE), k = 0;
	if (!answer)
		return 0;
	while (isspace((unsigned char)*answer))
		answer++;
	if (strncmp(answer, REPLY_UNANSWERABLE, n) != 0 || strstr(answer, "```"))
		return 0;
	if (!reason || !size)
		return 1;
	bool space = false;
	for (const char *p = answer + n; *p && k + 1 < size; p++) {
		if (isspace((unsigned char)*p)) {
			space = k > 0;
			continue;
		}
		if (space && k + 2 < size)
			reason[k++] = ' ';
		space = false;
		reason[k++] = *p;
	}
	reason[k] = '\0';
	return 1;
}
