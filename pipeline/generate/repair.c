/*
 * repair.c - the repairs a failed check names (see repair.h), and the correction
 * rounds' step that tries one (generate_repair, generate_internal.h).
 */
#include "pipeline/generate/repair.h"

#include "pipeline/generate/generate_internal.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Whether s opens with word (any case) followed by a character that cannot continue it. */
static bool opens_with_word(const char *s, const char *word)
{
	size_t n = strlen(word);
	return strncasecmp(s, word, n) == 0 && !isalnum((unsigned char)s[n]) && s[n] != '_';
}

int repair_distinct(const char *sql, char **ret_sql)
{
	*ret_sql = NULL;
	if (!sql)
		return 0;
	const char *p = sql;
	while (isspace((unsigned char)*p))
		p++;
	if (!opens_with_word(p, "select"))
		return 0;
	const char *rest = p + strlen("select");
	const char *q = rest;
	while (isspace((unsigned char)*q))
		q++;
	if (opens_with_word(q, "distinct") || opens_with_word(q, "all"))
		return 0;
	if (asprintf(ret_sql, "%.*s DISTINCT%s", (int)(rest - sql), sql, rest) < 0) {
		*ret_sql = NULL;
		return -T2S_ERR_NOMEM;
	}
	return 0;
}

/* Whether every row of rows equals the first. */
static bool one_row_repeated(const json_t *rows)
{
	for (size_t i = 1; i < json_array_size(rows); i++)
		if (!json_equal(json_array_get(rows, i), json_array_get(rows, 0)))
			return false;
	return true;
}

/* See generate_internal.h. */
int generate_repair(struct generate_job *j, const struct generate_try *prev, int round, bool *ret_repaired,
		    struct t2s_error *err)
{
	*ret_repaired = false;
	char *sql = NULL;
	/* One row repeated: the select list shows the filtered thing once per joined row; DISTINCT would hide that. */
	if (!prev->v.rows_repeated || one_row_repeated(prev->v.result.rows) || j->n_tries == MAX_TRIES)
		return 0;
	if (repair_distinct(prev->sql, &sql) < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	for (size_t i = 0; sql && i < j->n_tries; i++)
		if (generate_same_sql(j->tries[i].sql, sql)) {
			free(sql);
			return 0;
		}
	if (!sql)
		return 0;
	struct generate_try *t = &j->tries[j->n_tries];
	*t = (struct generate_try){.sql = sql, .round = round};
	int rc = generate_validate_try(j, t, err);
	if (rc == 0 && (rc = generate_record_correction(j, prev, t, "distinct")) < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	*ret_repaired = rc == 0;
	return rc;
}
