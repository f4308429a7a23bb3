/*
 * value_probe.c - parameterised, read-only confirmation of a value in one
 * column (see value_probe.h).
 */
#include "pipeline/values/value_probe.h"

#include "common/clock.h"
#include "common/strbuf.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void value_probe_result_release(struct value_probe_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_rows; i++)
		free(r->rows[i]);
	free(r->rows);
	free(r->sql);
	free(r->param);
	memset(r, 0, sizeof(*r));
}

/* '%' + value with \ % _ escaped and each run of white space as '%' + '%'; malloc'd. */
static char *like_pattern(const char *value)
{
	struct strbuf sb;
	strbuf_init(&sb, 4 * VALUE_PROBE_MAX_VALUE_LEN + 8);
	int rc = strbuf_adds(&sb, "%");
	bool space = false;
	for (const char *p = value; *p && rc == 0; p++) {
		if (isspace((unsigned char)*p)) {
			space = true;
			continue;
		}
		if (space && sb.len > 1)
			rc = strbuf_adds(&sb, "%");
		space = false;
		if (rc == 0 && (*p == '\\' || *p == '%' || *p == '_'))
			rc = strbuf_adds(&sb, "\\");
		if (rc == 0)
			rc = strbuf_add(&sb, p, 1);
	}
	if (rc == 0 && sb.buf[sb.len - 1] != '%')
		rc = strbuf_adds(&sb, "%");
	char *out = rc == 0 ? strbuf_detach(&sb, NULL) : NULL;
	strbuf_release(&sb);
	return out;
}

/* Append a copy of v[0..len) to r->rows, an exact match of want moved first. */
static int add_row(struct value_probe_result *r, const char *v, size_t len, const char *want)
{
	if (r->n_rows >= VALUE_PROBE_MAX_ROWS)
		return 0;
	char *copy = strndup(v, len);
	if (!copy)
		return -T2S_ERR_NOMEM;
	if (!r->rows) {
		r->rows = calloc(VALUE_PROBE_MAX_ROWS, sizeof(*r->rows));
		if (!r->rows) {
			free(copy);
			return -T2S_ERR_NOMEM;
		}
	}
	r->rows[r->n_rows++] = copy;
	if (strcmp(copy, want) == 0 && r->n_rows > 1) {
		memmove(&r->rows[1], &r->rows[0], (r->n_rows - 1) * sizeof(*r->rows));
		r->rows[0] = copy;
	}
	return 0;
}

/* Row callback of a probe: the first column's value into the result (ctx: struct probe_rows). */
struct probe_rows {
	struct value_probe_result *r;
	const char *value; /* the mention, to put an exact match first */
};

static int probe_row(void *ctx, int ncols, const char *const *vals, const size_t *lens)
{
	struct probe_rows *p = ctx;
	return ncols > 0 && vals[0] ? add_row(p->r, vals[0], lens[0], p->value) : 0;
}

/*
 * Run one probe statement (q->sql, q->param) through the engine.  An
 * interrupted statement fails as a failed probe; out of memory reading rows
 * is -T2S_ERR_NOMEM.
 */
static int run_probe(struct db_conn *c, struct db_query *q, struct t2s_error *err)
{
	int rc = c->engine->query(c, q, err);
	if (rc == -T2S_ERR_CANCELLED) {
		char msg[T2S_ERROR_MESSAGE_MAX];
		snprintf(msg, sizeof(msg), "%s", err ? err->message : "");
		rc = t2s_error_set(err, T2S_ERR_SQL_FAILED, "%s", msg);
	} else if (rc == -T2S_ERR_NOMEM) { /* from probe_row */
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	return rc;
}

/* Both statements of a probe for column col of table t, malloc'd into *eq and *like. */
static int build_sql(struct db_conn *c, const struct schema_table *t, const struct schema_column *col, char **eq,
		     char **like)
{
	char *tab = c->engine->quote_table(c, t);
	char *qc = c->engine->quote_name(c, col->name);
	*eq = NULL;
	*like = NULL;
	int rc = tab && qc ? 0 : -T2S_ERR_NOMEM;
	if (rc == 0)
		rc = c->engine->probe_sql(qc, tab, false, VALUE_PROBE_MAX_ROWS, eq);
	if (rc == 0)
		rc = c->engine->probe_sql(qc, tab, true, VALUE_PROBE_MAX_ROWS, like);
	free(tab);
	free(qc);
	if (rc < 0) {
		free(*eq);
		free(*like);
		*eq = NULL;
		*like = NULL;
	}
	return rc;
}

int value_probe_run(struct catalog_db *db, const struct schema *s, int table, int column, const char *value,
		    long timeout_ms, struct value_probe_result *ret, struct t2s_error *err)
{
	if (!s || table < 0 || (size_t)table >= s->n_tables || column < 0 ||
	    (size_t)column >= s->tables[table].n_columns)
		return t2s_error_set(err, T2S_ERR_INVALID, "no such column to probe");
	size_t len = value ? strlen(value) : 0;
	if (len == 0 || len > VALUE_PROBE_MAX_VALUE_LEN)
		return t2s_error_set(err, T2S_ERR_INVALID, "probe value must be 1 to %d bytes",
				     VALUE_PROBE_MAX_VALUE_LEN);
	const struct schema_table *t = &s->tables[table];
	struct value_probe_result r = {0};
	struct db_conn *c;
	int rc = db_pool_acquire(&db->pool, &c, err);
	if (rc < 0)
		return rc;
	double start = clock_now_ms();
	char *eq = NULL, *like = NULL;
	struct probe_rows rows = {.r = &r, .value = value};
	struct db_query q = {.timeout_ms = timeout_ms > 0 ? timeout_ms : VALUE_PROBE_TIMEOUT_DEFAULT_MS,
			     .what = "value probe",
			     .fn = probe_row,
			     .ctx = &rows};
	rc = build_sql(c, t, &t->columns[column], &eq, &like);
	if (rc == 0) {
		q.sql = eq;
		q.param = value;
		r.how = "equal";
		rc = run_probe(c, &q, err);
	} else {
		t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	char *pattern = NULL;
	if (rc == 0 && r.n_rows == 0) {
		pattern = like_pattern(value);
		if (!pattern) {
			rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
		} else if (strcmp(pattern, "%") != 0) {
			q.sql = like;
			q.param = pattern;
			r.how = "like";
			rc = run_probe(c, &q, err);
		}
	}
	db_pool_put(&db->pool, c, rc == -T2S_ERR_UNAVAILABLE);
	r.elapsed_ms = clock_now_ms() - start;
	if (rc == 0) {
		r.sql = strdup(q.sql);
		r.param = strdup(q.param);
		if (!r.sql || !r.param)
			rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	free(eq);
	free(like);
	free(pattern);
	if (rc < 0) {
		value_probe_result_release(&r);
		return rc;
	}
	*ret = r;
	return 0;
}
