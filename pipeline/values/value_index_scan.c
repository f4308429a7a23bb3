/*
 * value_index_scan.c - reading one column's values for the value index
 * build: the bounded queries (most frequent distinct values, or min/max) on
 * SQLite and PostgreSQL, their rows kept in a struct scan.
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

/* Run one statement of ours; rows go to sc (values: 2 columns) or sc->min/max_text (ranges). */
static int run_sqlite(struct build *b, struct db_conn *c, const char *sql, bool range, struct scan *sc)
{
	sqlite3_stmt *st;
	sqlite_guard_arm(&c->guard, SQLITE_GUARD_INTROSPECT, column_timeout(b));
	if (sqlite3_prepare_v2(c->sqlite, sql, -1, &st, NULL) != SQLITE_OK) {
		sc->failed = true;
		return 0;
	}
	int rc, ret = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && ret == 0) {
		const char *v = (const char *)sqlite3_column_text(st, 0);
		size_t got = (size_t)sqlite3_column_bytes(st, 0);
		if (range) {
			const char *hi = (const char *)sqlite3_column_text(st, 1);
			if (v && hi) {
				sc->min_text = arena_strndup(&sc->tmp, v, got);
				sc->max_text = arena_strdup(&sc->tmp, hi);
				if (!sc->min_text || !sc->max_text)
					ret = -T2S_ERR_NOMEM;
			}
		} else if (v) {
			ret = scan_add(b, sc, v, got, (size_t)sqlite3_column_int64(st, 1));
		}
	}
	if (ret == 0 && rc != SQLITE_DONE && rc != SQLITE_ROW) {
		if (c->guard.timed_out || rc == SQLITE_INTERRUPT)
			sc->timed_out = true;
		else
			sc->failed = true;
	}
	sqlite3_finalize(st);
	return ret;
}

static int run_pg(struct build *b, struct db_conn *c, const char *sql, bool range, struct scan *sc)
{
	struct t2s_error e;
	int rc = value_probe_pg_begin(c->pg, column_timeout(b), &e);
	if (rc < 0) {
		if (rc == -T2S_ERR_UNAVAILABLE)
			return t2s_error_set(b->err, T2S_ERR_UNAVAILABLE, "%s", e.message);
		sc->failed = true;
		return 0;
	}
	PGresult *r = PQexec(c->pg, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = value_probe_pg_error(c->pg, r, "value scan", &e);
		value_probe_pg_end(c->pg);
		if (rc == -T2S_ERR_UNAVAILABLE)
			return t2s_error_set(b->err, T2S_ERR_UNAVAILABLE, "%s", e.message);
		if (rc == -T2S_ERR_TIMEOUT)
			sc->timed_out = true;
		else
			sc->failed = true;
		return 0;
	}
	int ret = 0;
	for (int i = 0; i < PQntuples(r) && ret == 0; i++) {
		if (PQgetisnull(r, i, 0))
			continue;
		const char *v = PQgetvalue(r, i, 0);
		size_t got = (size_t)PQgetlength(r, i, 0);
		if (range) {
			if (PQgetisnull(r, i, 1))
				continue;
			sc->min_text = arena_strndup(&sc->tmp, v, got);
			sc->max_text = arena_strdup(&sc->tmp, PQgetvalue(r, i, 1));
			if (!sc->min_text || !sc->max_text)
				ret = -T2S_ERR_NOMEM;
		} else {
			ret = scan_add(b, sc, v, got, (size_t)strtoull(PQgetvalue(r, i, 1), NULL, 10));
		}
	}
	PQclear(r);
	value_probe_pg_end(c->pg);
	return ret;
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
	char *tab = value_probe_quote_table(c, t);
	char *qc = value_probe_quote_ident(c, col->name);
	char *sql = NULL;
	int rc = 0;
	if (!tab || !qc) {
		rc = t2s_error_set(b->err, T2S_ERR_NOMEM, "out of memory");
		goto out;
	}
	long rows = b->o->max_rows_scanned;
	int limit = b->o->max_values_per_column + 1, cut = b->o->max_value_len + 1;
	bool sqlite = c->engine == DB_ENGINE_SQLITE;
	int n = -1;
	switch (what) {
	case SCAN_TEXT:
	case SCAN_ANY:
		if (sqlite)
			n = asprintf(&sql,
				     "SELECT substr(v, 1, %d), length(CAST(v AS BLOB)) FROM (SELECT %s AS v FROM %s "
				     "LIMIT %ld) WHERE %s GROUP BY v ORDER BY count(*) DESC LIMIT %d",
				     cut, qc, tab, rows, what == SCAN_TEXT ? "typeof(v) = 'text'" : "v IS NOT NULL",
				     limit);
		else
			n = asprintf(&sql,
				     "SELECT left(v, %d), octet_length(v) FROM (SELECT %s::text AS v FROM %s LIMIT %ld) s "
				     "WHERE v IS NOT NULL GROUP BY v ORDER BY count(*) DESC LIMIT %d",
				     cut, qc, tab, rows, limit);
		break;
	case SCAN_NUMBER_RANGE:
	case SCAN_DATE_RANGE:
		if (sqlite)
			n = asprintf(&sql, "SELECT min(v), max(v) FROM (SELECT %s AS v FROM %s LIMIT %ld) WHERE %s", qc,
				     tab, rows,
				     what == SCAN_NUMBER_RANGE ? "typeof(v) IN ('integer', 'real')" : "typeof(v) = 'text'");
		else if (what == SCAN_NUMBER_RANGE)
			n = asprintf(&sql, "SELECT min(v)::text, max(v)::text FROM (SELECT %s AS v FROM %s LIMIT %ld) s",
				     qc, tab, rows);
		else
			n = asprintf(&sql,
				     "SELECT to_char(min(v), 'YYYY-MM-DD'), to_char(max(v), 'YYYY-MM-DD') "
				     "FROM (SELECT %s AS v FROM %s LIMIT %ld) s",
				     qc, tab, rows);
		break;
	}
	if (n < 0) {
		sql = NULL;
		rc = t2s_error_set(b->err, T2S_ERR_NOMEM, "out of memory");
		goto out;
	}
	bool range = what == SCAN_NUMBER_RANGE || what == SCAN_DATE_RANGE;
	rc = sqlite ? run_sqlite(b, c, sql, range, sc) : run_pg(b, c, sql, range, sc);
	if (rc == -T2S_ERR_NOMEM)
		t2s_error_set(b->err, T2S_ERR_NOMEM, "out of memory");
out:
	free(sql);
	free(tab);
	free(qc);
	return rc;
}
