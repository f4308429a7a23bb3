/*
 * validate.c - levels 1 and 3 of validation, and the order of the levels
 * (see validate.h): the driver of validation, the one file that names the
 * levels (level 2 is semantics.c, level 3's question checks
 * question_checks.c); every level appends to the report through
 * validation.c.
 */
#include "pipeline/generate/validate.h"

#include "common/strbuf.h"
#include "pipeline/generate/question_checks.h"
#include "pipeline/generate/semantics.h"
#include "pipeline/values/value_probe.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names the database did not know ------------------------------------ */

/* Copy the name after prefix in msg (up to a quote, space or end), unquoted, without a qualifier. */
static char *name_after(const char *msg, const char *prefix)
{
	const char *p = strstr(msg, prefix);
	if (!p)
		return NULL;
	p += strlen(prefix);
	while (*p == '"' || *p == ' ')
		p++;
	const char *end = p;
	while (*end && *end != '"' && *end != ' ' && *end != ',')
		end++;
	if (end == p)
		return NULL;
	const char *dot = memchr(p, '.', (size_t)(end - p));
	if (dot && dot + 1 < end)
		p = dot + 1;
	return strndup(p, (size_t)(end - p));
}

/*
 * From SQLite's "no such column: t.x" / "no such table: x" and PostgreSQL's
 * `column "x" does not exist` / `relation "x" does not exist`.
 */
static void record_unknown_name(struct validation *v, const char *msg)
{
	char *name;
	if ((name = name_after(msg, "no such column:")) || (name = name_after(msg, "column "))) {
		if (strstr(msg, "does not exist") || strstr(msg, "no such column")) {
			v->unknown_name = name;
			v->unknown_is_table = false;
			return;
		}
		free(name);
	}
	if ((name = name_after(msg, "no such table:")) || (name = name_after(msg, "relation "))) {
		if (strstr(msg, "does not exist") || strstr(msg, "no such table")) {
			v->unknown_name = name;
			v->unknown_is_table = true;
			return;
		}
		free(name);
	}
}

/* ---- level 1 -------------------------------------------------------------- */

static const char *level1_check_of(enum t2s_code code)
{
	switch (code) {
	case T2S_ERR_SQL_REJECTED: return "statement_allowed";
	case T2S_ERR_INVALID: return "statement_allowed";
	case T2S_ERR_TIMEOUT: return "executes";
	default: return "names_resolve";
	}
}

/* Level 1; 0 with v->failed set when the statement is not executable. */
static int level1(const struct validate_context *cx, const char *sql, struct validation *v, struct t2s_error *err)
{
	if (!sql)
		return validation_add(v, 1, "statement_present", false, true,
				      "the answer holds no SQL statement: answer with one SELECT statement in a ```sql fence");
	int rc = validation_add(v, 1, "statement_present", true, true, "one statement found in the answer");
	if (rc < 0)
		return rc;
	struct t2s_error e = {0};
	rc = exec_validate(cx->db, sql, &cx->limits, &e);
	if (rc == -T2S_ERR_UNAVAILABLE || rc == -T2S_ERR_NOMEM) {
		if (err)
			*err = e;
		return rc;
	}
	if (rc < 0) {
		v->exec_code = e.code;
		const char *check = level1_check_of(e.code);
		if (strcmp(check, "statement_allowed") != 0)
			rc = validation_add(v, 1, "statement_allowed", true, true, "one read-only statement");
		else
			rc = 0;
		if (rc == 0)
			rc = validation_add(v, 1, check, false, true, "%s", e.message);
		record_unknown_name(v, e.message);
		return rc;
	}
	if ((rc = validation_add(v, 1, "statement_allowed", true, true, "one read-only statement")) < 0 ||
	    (rc = validation_add(v, 1, "names_resolve", true, true, "the database accepts the statement")) < 0)
		return rc;
	rc = exec_run(cx->db, sql, &cx->limits, &v->result, &e);
	if (rc == -T2S_ERR_UNAVAILABLE || rc == -T2S_ERR_NOMEM) {
		if (err)
			*err = e;
		return rc;
	}
	if (rc < 0) {
		v->exec_code = e.code;
		record_unknown_name(v, e.message);
		return validation_add(v, 1, "executes", false, true, "%s", e.message);
	}
	v->executed = true;
	return validation_add(v, 1, "executes", true, true, "%ld rows in %.1f ms%s", v->result.row_count,
			      v->result.elapsed_ms, v->result.truncated ? " (truncated)" : "");
}

/* ---- level 3 -------------------------------------------------------------- */

static bool empty_value(json_t *x)
{
	return json_is_null(x) || (json_is_integer(x) && json_integer_value(x) == 0) ||
	       (json_is_real(x) && json_real_value(x) == 0.0) ||
	       (json_is_string(x) && json_string_length(x) == 0);
}

/* Every value of the row is 0, NULL or '' (whatever the column order: min, max or max, min). */
static bool row_empty(json_t *row)
{
	size_t j;
	json_t *x;
	if (!json_array_size(row))
		return true;
	json_array_foreach(row, j, x)
		if (!empty_value(x))
			return false;
	return true;
}

/* What the probes of the statement's literals say (see validate.h). */
enum literals_verdict {
	LITERALS_NONE,     /* no literal compared with a column */
	LITERALS_STORED,   /* each is a stored value of its column */
	LITERALS_UNSTORED, /* one is not: *detail says which, and the stored spellings found */
};

/* a and b are equal but for white space around them ('Aberdeen' and a CHAR-padded 'Aberdeen '). */
static bool equal_but_padding(const char *a, const char *b)
{
	while (isspace((unsigned char)*a))
		a++;
	while (isspace((unsigned char)*b))
		b++;
	size_t n = strlen(a), m = strlen(b);
	while (n && isspace((unsigned char)a[n - 1]))
		n--;
	while (m && isspace((unsigned char)b[m - 1]))
		m--;
	return n == m && memcmp(a, b, n) == 0;
}

/* a and b spell the same letters and digits, whatever their case and the characters between them. */
static bool same_letters(const char *a, const char *b)
{
	for (;;) {
		while (*a && (unsigned char)*a < 0x80 && !isalnum((unsigned char)*a))
			a++;
		while (*b && (unsigned char)*b < 0x80 && !isalnum((unsigned char)*b))
			b++;
		if (!*a || !*b)
			return !*a && !*b;
		if (tolower((unsigned char)*a++) != tolower((unsigned char)*b++))
			return false;
	}
}

/*
 * The one stored value among the probe's rows that spells value's letters
 * and digits ('NorthCarolina' for 'North Carolina', 'dog' for 'Dog') into
 * v->stored_literal / v->stored_spelling; none when no row or several do.
 * -T2S_ERR_NOMEM only.
 */
static int record_spelling(struct validation *v, const char *value, const struct value_probe_result *p)
{
	const char *found = NULL;
	for (size_t k = 0; k < p->n_rows; k++) {
		if (!same_letters(p->rows[k], value))
			continue;
		if (found)
			return 0;
		found = p->rows[k];
	}
	if (!found || v->stored_literal)
		return 0;
	v->stored_literal = strdup(value);
	v->stored_spelling = strdup(found);
	return v->stored_literal && v->stored_spelling ? 0 : -T2S_ERR_NOMEM;
}

/*
 * Probe each literal of v (case-insensitive equality, then a partial match:
 * value_probe.h) within the validation's time limit.  A probe that cannot
 * run (time out, database error) proves nothing: that literal counts as
 * stored.  So does a literal stored with white space around it (a CHAR
 * column's padding, which PostgreSQL's comparison ignores and SQLite's does
 * not): *padded (malloc'd, NULL when none) names the first such one.  On
 * LITERALS_UNSTORED *detail is malloc'd, and the unstored literal's one
 * stored spelling, if the probe found it, is recorded (record_spelling).  Negative: -T2S_ERR_NOMEM.
 */
static int probe_literals(const struct validate_context *cx, struct validation *v, char **detail, char **padded)
{
	enum literals_verdict verdict = v->n_literals ? LITERALS_STORED : LITERALS_NONE;
	for (size_t i = 0; i < v->n_literals; i++) {
		const struct validation_literal *l = &v->literals[i];
		struct value_probe_result p = {0};
		struct t2s_error e = {0};
		int rc = value_probe_run(cx->db, cx->schema, l->table, l->column, l->value, cx->limits.timeout_ms, &p, &e);
		if (rc == -T2S_ERR_NOMEM)
			return rc;
		bool stored = rc < 0;
		for (size_t k = 0; rc == 0 && k < p.n_rows && !stored; k++)
			stored = strcmp(p.rows[k], l->value) == 0;
		for (size_t k = 0; rc == 0 && k < p.n_rows && !stored; k++) {
			if (!equal_but_padding(p.rows[k], l->value))
				continue;
			stored = true;
			if (!*padded) {
				const struct schema_table *t = &cx->schema->tables[l->table];
				if (asprintf(padded, "'%s' is stored in %s.%s with white space around it: '%s'", l->value,
					     t->api_name, t->columns[l->column].name, p.rows[k]) < 0) {
					*padded = NULL;
					value_probe_result_release(&p);
					return -T2S_ERR_NOMEM;
				}
			}
		}
		if (!stored && record_spelling(v, l->value, &p) < 0) {
			value_probe_result_release(&p);
			return -T2S_ERR_NOMEM;
		}
		if (!stored) {
			const struct schema_table *t = &cx->schema->tables[l->table];
			struct strbuf out;
			strbuf_init(&out, 4096);
			strbuf_addf(&out, "'%s' is not a stored value of %s.%s", l->value, t->api_name,
				    t->columns[l->column].name);
			for (size_t k = 0; k < p.n_rows; k++)
				strbuf_addf(&out, "%s'%s'", k ? ", " : "; stored values like it: ", p.rows[k]);
			if (!p.n_rows)
				strbuf_addf(&out, " (no stored value resembles it)");
			value_probe_result_release(&p);
			if (!(*detail = strbuf_detach(&out, NULL))) {
				strbuf_release(&out);
				return -T2S_ERR_NOMEM;
			}
			return LITERALS_UNSTORED;
		}
		value_probe_result_release(&p);
	}
	return (int)verdict;
}

static bool all_null(json_t *rows)
{
	size_t i, j;
	json_t *row, *x;
	json_array_foreach(rows, i, row)
		json_array_foreach(row, j, x)
			if (!json_is_null(x))
				return false;
	return true;
}

/* Most rows the statement's tables allow without a missing join: the largest table's row count, -1 unknown. */
static long long row_bound(const struct validate_context *cx, const struct validation *v)
{
	long long bound = -1;
	if (v->n_used_tables < 2 || v->set_operation)
		return -1;
	for (size_t i = 0; i < v->n_used_tables; i++) {
		long long n = cx->schema->tables[v->used_tables[i]].row_count;
		if (n < 0)
			return -1;
		if (n > bound)
			bound = n;
	}
	return bound;
}

/* The verdict on an empty or all-0/NULL result: a failure unless the literals make it plausible. */
static int judge_result(const struct validate_context *cx, struct validation *v, const char *check, bool empty)
{
	const char *what = empty ? "no rows" : "only 0 or NULL";
	char *detail = NULL, *padded = NULL;
	int verdict = probe_literals(cx, v, &detail, &padded);
	if (verdict < 0)
		return verdict;
	int rc = 0;
	if (padded) /* worth saying, not a reason to correct: the engine's comparison decides */
		rc = validation_add(v, 3, "literals_spelled_as_stored", false, false, "%s", padded);
	free(padded);
	if (rc < 0) {
		free(detail);
		return rc;
	}
	if (verdict == LITERALS_UNSTORED)
		rc = validation_add(v, 3, check, false, true, "the query returned %s: %s", what, detail);
	else if (verdict == LITERALS_STORED || (!empty && v->filters))
		rc = validation_add(v, 3, check, true, true,
				    "%s, and every value the statement compares with is stored: a plausible answer", what);
	else if (v->having)
		rc = validation_add(v, 3, check, true, true, "%s: no group passes HAVING, a plausible answer", what);
	else if (empty)
		rc = validation_add(v, 3, check, false, true,
				    "the query returned no rows: check filter values (spelling, case, stored format) "
				    "and join conditions");
	else
		rc = validation_add(v, 3, check, false, true,
				    "the result is only 0 or NULL: check that the filters match stored values");
	free(detail);
	return rc;
}

static int level3(const struct validate_context *cx, struct validation *v)
{
	const struct exec_result *r = &v->result;
	int rc;
	if (r->row_count == 0)
		return judge_result(cx, v, "result_not_empty", true);
	if ((rc = validation_add(v, 3, "result_not_empty", true, true, "%ld rows", r->row_count)) < 0)
		return rc;
	if (r->row_count == 1 && row_empty(json_array_get(r->rows, 0)))
		rc = judge_result(cx, v, "first_value_meaningful", false);
	else
		rc = validation_add(v, 3, "first_value_meaningful", true, true, "the first row is not all 0, NULL or empty");
	if (rc < 0 || v->failed >= 0)
		return rc;
	bool nulls = all_null(r->rows);
	if ((rc = validation_add(v, 3, "rows_not_all_null", !nulls, true, "%s",
				 nulls ? "every value of every row is NULL" : "values present")) < 0)
		return rc;
	long long bound = row_bound(cx, v);
	if (bound >= 0 && r->row_count > bound)
		return validation_add(v, 3, "row_count_plausible", false, true,
				      "%ld%s rows from tables of at most %lld rows: a join condition is probably missing",
				      r->row_count, r->truncated ? "+" : "", bound);
	if ((rc = validation_add(v, 3, "row_count_plausible", true, true,
				 "row count within what the joined tables allow")) < 0)
		return rc;
	return question_checks(cx, v);
}

int validate_sql(const struct validate_context *cx, const char *sql, struct validation *ret, struct t2s_error *err)
{
	struct validation v = {.failed = -1};
	int rc = level1(cx, sql, &v, err);
	if (rc == 0 && v.failed < 0) {
		v.score = 1;
		rc = semantics_check(cx, sql, &v, err);
	}
	if (rc == 0 && v.failed < 0) {
		v.score = 2;
		rc = level3(cx, &v);
	}
	if (rc == 0 && v.failed < 0)
		v.score = 3;
	if (rc < 0) {
		validation_release(&v);
		if (rc == -T2S_ERR_NOMEM)
			t2s_error_set(err, T2S_ERR_NOMEM, "out of memory validating SQL");
		return rc;
	}
	/* The score says how far the statement got: every blocking check passed exactly when it is 3. */
	assert((v.failed < 0) == (v.score == 3) && v.failed < (int)v.n_checks);
	*ret = v;
	return 0;
}
