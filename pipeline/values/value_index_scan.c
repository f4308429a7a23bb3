/*
 * value_index_scan.c - reading one column's values for the value index
 * build: the bounded queries (most frequent distinct values, or min/max),
 * written and run by the database's engine (pipeline/db/engine.h), their
 * rows kept in a struct scan.
 */
#include "pipeline/values/value_index_internal.h"

#include "common/arena.h"
#include "common/clock.h"
#include "common/utf8.h"
#include "pipeline/values/value_probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- scan ---- */

static long column_timeout(struct build *b)
{
	long t = b->o->column_timeout_ms;
	if (b->deadline > 0) {
		double left = b->deadline - clock_now_ms();
		if (left < (double)t)
			t = left > 1 ? (long)left : 1;
	}
	return t;
}

void vi_scan_release(struct scan *sc)
{
	free(sc->rows);
	arena_release(&sc->tmp);
	memset(sc, 0, sizeof(*sc));
}

/* Row of a values query: value (maybe cut at max_value_len + 1 characters) and its full byte length. */
static int scan_add(struct build *b, struct scan *sc, const char *v, size_t got, size_t full_len)
{
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? 2 * sc->cap : 64;
		struct scanned *rows = realloc(sc->rows, cap * sizeof(*rows));
		if (!rows)
			return -T2S_ERR_NOMEM;
		sc->rows = rows;
		sc->cap = cap;
	}
	struct scanned *r = &sc->rows[sc->n++];
	r->len = full_len;
	r->v = NULL;
	if (full_len <= (size_t)b->o->max_value_len && got == full_len && utf8_valid(v, got)) {
		r->v = arena_strndup(&sc->tmp, v, got);
		if (!r->v)
			return -T2S_ERR_NOMEM;
	}
	return 0;
}

/* Row callback of a scan (ctx: struct scan_rows): values (2 columns) into sc, or a range into sc->min/max_text. */
struct scan_rows {
	struct build *b;
	struct scan *sc;
	bool range;
};

static int scan_row(void *ctx, int ncols, const char *const *vals, const size_t *lens)
{
	struct scan_rows *x = ctx;
	struct scan *sc = x->sc;
	if (ncols < 2 || !vals[0])
		return 0;
	if (x->range) {
		if (!vals[1])
			return 0;
		sc->min_text = arena_strndup(&sc->tmp, vals[0], lens[0]);
		sc->max_text = arena_strdup(&sc->tmp, vals[1]);
		return sc->min_text && sc->max_text ? 0 : -T2S_ERR_NOMEM;
	}
	return scan_add(x->b, sc, vals[0], lens[0], vals[1] ? (size_t)strtoull(vals[1], NULL, 10) : 0);
}

/*
 * Run one statement of ours through the engine.  A failed or timed-out
 * statement is recorded in sc; a lost connection is returned (b->err
 * filled), as is out of memory.
 */
static int run_scan(struct build *b, struct db_conn *c, const char *sql, bool range, struct scan *sc)
{
	struct scan_rows x = {.b = b, .sc = sc, .range = range};
	struct db_query q = {.sql = sql,
			     .timeout_ms = column_timeout(b),
			     .catalog = true,
			     .what = "value scan",
			     .fn = scan_row,
			     .ctx = &x};
	struct t2s_error e;
	int rc = c->engine->query(c, &q, &e);
	switch (rc) {
	case 0:
	case -T2S_ERR_NOMEM:
		return rc;
	case -T2S_ERR_UNAVAILABLE:
		return t2s_error_set(b->err, T2S_ERR_UNAVAILABLE, "%s", e.message);
	case -T2S_ERR_TIMEOUT:
	case -T2S_ERR_CANCELLED:
		sc->timed_out = true;
		return 0;
	default:
		sc->failed = true;
		return 0;
	}
}

/*
 * The bounded scan of one column: the most frequent distinct values
 * (SCAN_TEXT: text values only; SCAN_ANY: every value as text), or min/max.
 * Failures and timeouts are recorded in sc; only lost connections and
 * out-of-memory are returned as errors.
 */
int vi_scan_column(struct build *b, struct db_conn *c, const struct schema_table *t,
		   const struct schema_column *col, enum scan_what what, struct scan *sc)
{
	char *tab = c->engine->quote_table(c, t);
	char *qc = c->engine->quote_name(c, col->name);
	char *sql = NULL;
	int rc = 0;
	if (!tab || !qc) {
		rc = t2s_error_set(b->err, T2S_ERR_NOMEM, "out of memory");
		goto out;
	}
	long rows = b->o->max_rows_scanned;
	int limit = b->o->max_values_per_column + 1, cut = b->o->max_value_len + 1;
	static const enum db_scan scans[] = {[SCAN_TEXT] = DB_SCAN_TEXT,
					     [SCAN_ANY] = DB_SCAN_ANY,
					     [SCAN_NUMBER_RANGE] = DB_SCAN_NUMBER_RANGE,
					     [SCAN_DATE_RANGE] = DB_SCAN_DATE_RANGE};
	int n = c->engine->scan_sql(scans[what], qc, tab, rows, cut, limit, &sql);
	if (n < 0) {
		sql = NULL;
		rc = t2s_error_set(b->err, T2S_ERR_NOMEM, "out of memory");
		goto out;
	}
	bool range = what == SCAN_NUMBER_RANGE || what == SCAN_DATE_RANGE;
	rc = run_scan(b, c, sql, range, sc);
	if (rc == -T2S_ERR_NOMEM)
		t2s_error_set(b->err, T2S_ERR_NOMEM, "out of memory");
out:
	free(sql);
	free(tab);
	free(qc);
	return rc;
}
