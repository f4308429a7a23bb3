/*
 * repair.c - the repairs a failed check names (see repair.h), and the correction
 * rounds' step that tries one (generate_repair, generate_internal.h).
 */
#include "pipeline/generate/repair.h"

#include "common/strbuf.h"
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

/*
 * The quoted string at p (opening quote *p, a doubled quote read as one):
 * *ret_end is the byte after its closing quote (NULL if unclosed); whether
 * its text is literal.
 */
static bool quoted_is(const char *p, const char *literal, const char **ret_end)
{
	char quote = *p++;
	bool same = true;
	*ret_end = NULL;
	for (; *p; p++) {
		if (*p == quote && p[1] != quote) {
			*ret_end = p + 1;
			return same && !*literal;
		}
		if (*p == quote)
			p++;
		same = same && *literal == *p;
		literal += same;
	}
	return false;
}

/* spelling as an SQL string ('...', quotes doubled) appended to out. */
static int add_sql_string(struct strbuf *out, const char *spelling)
{
	int rc = strbuf_add(out, "'", 1);
	for (const char *c = spelling; rc == 0 && *c; c++)
		rc = strbuf_add(out, c, 1) < 0 || (*c == '\'' && strbuf_add(out, c, 1) < 0) ? -T2S_ERR_NOMEM : 0;
	return rc == 0 ? strbuf_add(out, "'", 1) : rc;
}

int repair_stored_value(const char *sql, const char *literal, const char *spelling, char **ret_sql)
{
	*ret_sql = NULL;
	if (!sql || !literal || !spelling)
		return 0;
	struct strbuf out;
	strbuf_init(&out, 4 * (strlen(sql) + 1) + 4 * strlen(spelling) + 64);
	size_t replaced = 0;
	int rc = 0;
	for (const char *p = sql; *p && rc == 0;) {
		const char *end = NULL;
		if (*p != '\'' && *p != '"') {
			rc = strbuf_add(&out, p++, 1);
		} else if (quoted_is(p, literal, &end)) {
			rc = add_sql_string(&out, spelling);
			replaced++;
			p = end;
		} else {
			size_t n = end ? (size_t)(end - p) : strlen(p);
			rc = strbuf_add(&out, p, n);
			p += n;
		}
	}
	if (rc < 0 || !replaced) {
		strbuf_release(&out);
		return rc < 0 ? -T2S_ERR_NOMEM : 0;
	}
	*ret_sql = strbuf_detach(&out, NULL);
	return *ret_sql ? 0 : -T2S_ERR_NOMEM;
}

/* Whether every row of rows equals the first. */
static bool one_row_repeated(const json_t *rows)
{
	for (size_t i = 1; i < json_array_size(rows); i++)
		if (!json_equal(json_array_get(rows, i), json_array_get(rows, 0)))
			return false;
	return true;
}

/*
 * The statement the check that failed prev names (*ret_name its repair's
 * name), or *ret_sql = NULL when it names none.  0 or -T2S_ERR_NOMEM.
 */
static int named_repair(const struct generate_try *prev, char **ret_sql, const char **ret_name)
{
	if (prev->v.stored_spelling) {
		*ret_name = "stored_value";
		return repair_stored_value(prev->sql, prev->v.stored_literal, prev->v.stored_spelling, ret_sql);
	}
	*ret_name = "distinct";
	*ret_sql = NULL;
	/* One row repeated: the select list shows the filtered thing once per joined row; DISTINCT would hide that. */
	if (!prev->v.rows_repeated || one_row_repeated(prev->v.result.rows))
		return 0;
	return repair_distinct(prev->sql, ret_sql);
}

/* See generate_internal.h. */
int generate_repair(struct generate_job *j, const struct generate_try *prev, int round, bool *ret_repaired,
		    struct t2s_error *err)
{
	*ret_repaired = false;
	char *sql = NULL;
	const char *name = NULL;
	if (j->n_tries == MAX_TRIES)
		return 0;
	if (named_repair(prev, &sql, &name) < 0)
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
	if (rc == 0 && (rc = generate_record_correction(j, prev, t, name)) < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	*ret_repaired = rc == 0;
	return rc;
}
