/*
 * value_index_columns.c - which columns of the database the value index
 * takes and how (see value_index_internal.h): the column rules (declared
 * type, id-like names, keys, value shapes), the judgement of a text column's
 * scanned values, and the ranges of number and date columns.
 */
#include "pipeline/values/value_index_internal.h"

#include "common/arena.h"
#include "common/clock.h"
#include "pipeline/text/dates.h"
#include "pipeline/text/numbers.h"

#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

/* ---- numbers and dates (the grammars of pipeline/text) ---- */

/* A NUL-terminated number as the database printed it or a question wrote it. */
bool vi_parse_number(const char *s, double *ret)
{
	return number_parse(s, strlen(s), ret);
}

/* A NUL-terminated date in the given forms (see pipeline/text/dates.h): first and last day covered. */
static bool parse_date(const char *s, unsigned forms, double *lo, double *hi)
{
	struct date_range r;
	if (!date_parse(s, strlen(s), forms, &r))
		return false;
	*lo = r.first_day;
	*hi = r.last_day;
	return true;
}

/* Ends of a range that min()/max() found on text: only year-first dates sort as text. */
#define SORTED_DATE_FORMS (DATE_ISO | DATE_BARE_YEAR | DATE_WITH_TIME)
/* Values of a DATE column: year-first (possibly with a time), a year, or with a month name. */
#define STORED_DATE_FORMS (DATE_ISO | DATE_BARE_YEAR | DATE_NAMED | DATE_WITH_TIME)
/* A text column is a date column when nearly all its values are full year-first dates. */
#define TEXT_DATE_FORMS (DATE_ISO | DATE_WITH_TIME | DATE_NEED_DAY)

/* ---- column rules ---- */

/* How the index takes a column of a type class: unknown types are compared as text. */
static enum value_column_kind column_kind(enum schema_type_class class)
{
	switch (class) {
	case SCHEMA_TYPE_INTEGER:
	case SCHEMA_TYPE_REAL: return VALUE_KIND_NUMBER;
	case SCHEMA_TYPE_DATE: return VALUE_KIND_DATE;
	case SCHEMA_TYPE_BOOLEAN:
	case SCHEMA_TYPE_OTHER: return VALUE_KIND_OTHER;
	default: return VALUE_KIND_TEXT;
	}
}

/*
 * The name's last word (split at non-alphanumerics and lower-to-upper case
 * changes: "singer_id", "SingerID", "Id") is id, uid, uuid or guid.
 */
static bool id_like_name(const char *name)
{
	size_t len = strlen(name), end = len;
	while (end > 0 && !isalnum((unsigned char)name[end - 1]))
		end--;
	size_t start = end;
	while (start > 0 && isalnum((unsigned char)name[start - 1])) {
		if (start < end && isupper((unsigned char)name[start]) && islower((unsigned char)name[start - 1]))
			break;
		start--;
	}
	size_t n = end - start;
	const char *w = name + start;
	return (n == 2 && strncasecmp(w, "id", 2) == 0) || (n == 3 && strncasecmp(w, "uid", 3) == 0) ||
	       (n == 4 && (strncasecmp(w, "uuid", 4) == 0 || strncasecmp(w, "guid", 4) == 0));
}

static bool has_space(const char *v)
{
	for (; *v; v++)
		if (isspace((unsigned char)*v))
			return true;
	return false;
}

static bool looks_email(const char *v)
{
	const char *at = strchr(v, '@');
	if (!at || at == v || strchr(at + 1, '@') || has_space(v))
		return false;
	const char *dot = strrchr(at + 1, '.');
	return dot && dot > at + 1 && dot[1] != '\0';
}

static bool looks_url(const char *v)
{
	if (has_space(v))
		return false;
	if (strncasecmp(v, "www.", 4) == 0)
		return true;
	const char *p = v;
	while (isalpha((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
		p++;
	return p > v && strncmp(p, "://", 3) == 0 && p[3] != '\0';
}

/* UUID (8-4-4-4-12 hex) or 16+ hex digits. */
static bool looks_uuid_or_hex(const char *v)
{
	size_t n = strlen(v), hex = 0, dashes = 0;
	for (size_t i = 0; i < n; i++) {
		if (isxdigit((unsigned char)v[i]))
			hex++;
		else if (v[i] == '-')
			dashes++;
		else
			return false;
	}
	return (n == 36 && hex == 32 && dashes == 4) || (dashes == 0 && hex >= 16);
}

/* A code with digits and no spaces ("A1034", "09700166582"). */
static bool looks_opaque(const char *v)
{
	bool digit = false;
	for (const char *p = v; *p; p++) {
		if (isspace((unsigned char)*p))
			return false;
		digit |= isdigit((unsigned char)*p) != 0;
	}
	return digit;
}

/* ---- columns ---- */

void vi_skip(struct value_column_info *info, enum value_skip_reason why)
{
	info->state = VALUE_COLUMN_SKIPPED;
	info->skip = why;
}

/* Record the range [min, max] of info with the stored texts of its ends (copied); none when out of memory. */
static void store_range(struct build *b, struct value_column_info *info, double min, double max, const char *min_text,
			const char *max_text)
{
	info->has_range = true;
	info->min = min;
	info->max = max;
	info->min_text = arena_strdup(&b->vi->arena, min_text);
	info->max_text = arena_strdup(&b->vi->arena, max_text);
	if (!info->min_text || !info->max_text)
		info->has_range = false;
}

/* Range from two printed ends; numbers for NUMBER, day numbers for DATE. */
static void set_range(struct build *b, struct value_column_info *info, const char *lo, const char *hi)
{
	double min, max, ignored;
	bool ok;
	if (info->kind == VALUE_KIND_NUMBER) {
		ok = vi_parse_number(lo, &min) && vi_parse_number(hi, &max);
	} else {
		/* min/max of text only mean something for ISO dates, which sort as text */
		ok = parse_date(lo, SORTED_DATE_FORMS, &min, &ignored) && parse_date(hi, SORTED_DATE_FORMS, &ignored, &max);
	}
	if (!ok || min > max)
		return;
	store_range(b, info, min, max, lo, hi);
}

/* Range of a DATE column from its scanned values (formats that do not sort as text). */
static void range_from_values(struct build *b, struct value_column_info *info, const struct scan *sc)
{
	double lo = INFINITY, hi = -INFINITY;
	const char *lo_text = NULL, *hi_text = NULL;
	for (size_t i = 0; i < sc->n; i++) {
		double a, z;
		if (!sc->rows[i].v || !parse_date(sc->rows[i].v, STORED_DATE_FORMS, &a, &z))
			continue;
		if (a < lo) {
			lo = a;
			lo_text = sc->rows[i].v;
		}
		if (z > hi) {
			hi = z;
			hi_text = sc->rows[i].v;
		}
	}
	if (!lo_text)
		return;
	store_range(b, info, lo, hi, lo_text, hi_text);
}

static void mark_scan_bounds(struct build *b, const struct schema_table *t, struct value_column_info *info,
			     const struct scan *sc)
{
	if (sc->timed_out) {
		info->truncated = true;
		info->truncated_by = "column_timeout_ms";
	} else if (t->row_count > b->o->max_rows_scanned) {
		info->truncated = true;
		info->truncated_by = "max_rows_scanned";
	}
}

static int do_range(struct build *b, struct db_conn *c, const struct schema_table *t, struct value_column_info *info,
		    const struct schema_column *col)
{
	struct scan sc = {0};
	arena_init(&sc.tmp);
	int rc = vi_scan_column(b, c, t, col, info->kind == VALUE_KIND_NUMBER ? SCAN_NUMBER_RANGE : SCAN_DATE_RANGE, &sc);
	if (rc == 0 && sc.min_text)
		set_range(b, info, sc.min_text, sc.max_text);
	bool failed = sc.failed || (sc.timed_out && !sc.min_text);
	if (rc == 0 && !info->has_range && info->kind == VALUE_KIND_DATE && !failed) {
		/* dates that do not sort as text ("May 1, 2009"): parse the most frequent values */
		vi_scan_release(&sc);
		arena_init(&sc.tmp);
		rc = vi_scan_column(b, c, t, col, SCAN_ANY, &sc);
		if (rc == 0)
			range_from_values(b, info, &sc);
		failed = sc.failed || (sc.timed_out && sc.n == 0);
	}
	if (rc == 0) {
		mark_scan_bounds(b, t, info, &sc);
		if (info->has_range)
			info->state = VALUE_COLUMN_RANGE;
		else
			vi_skip(info, failed ? VALUE_SKIP_FAILED : VALUE_SKIP_EMPTY);
	}
	vi_scan_release(&sc);
	return rc;
}

/* Rules on the scanned values of a text column; VALUE_SKIP_NONE to index it. */
static enum value_skip_reason judge_values(struct build *b, const struct schema_column *col, const struct scan *sc,
					   size_t *ret_usable)
{
	size_t n = sc->n, usable = 0, too_long = 0, email = 0, url = 0, opaque = 0, uuid = 0;
	double total_len = 0;
	for (size_t i = 0; i < n; i++) {
		const struct scanned *r = &sc->rows[i];
		total_len += (double)r->len;
		if (r->len > (size_t)b->o->max_value_len)
			too_long++;
		if (!r->v)
			continue;
		usable++;
		email += looks_email(r->v);
		url += looks_url(r->v);
		opaque += looks_opaque(r->v);
		uuid += looks_uuid_or_hex(r->v);
	}
	*ret_usable = usable;
	if (n == 0)
		return VALUE_SKIP_EMPTY;
	if (b->o->skip_long_text &&
	    (total_len / (double)n > b->o->long_text_mean_len || (double)too_long > b->o->long_text_share * (double)n))
		return VALUE_SKIP_LONG_TEXT;
	if (usable == 0)
		return VALUE_SKIP_EMPTY;
	if (b->o->skip_urls_emails && 2 * email >= usable)
		return VALUE_SKIP_EMAIL;
	if (b->o->skip_urls_emails && 2 * url >= usable)
		return VALUE_SKIP_URL;
	if (b->o->skip_ids && (10 * uuid >= 9 * usable || (col->key && 10 * opaque >= 9 * usable)))
		return VALUE_SKIP_ID;
	return VALUE_SKIP_NONE;
}

/* Text columns holding ISO dates (nearly all values) are date columns. */
static bool values_are_dates(const struct scan *sc, size_t usable)
{
	size_t dates = 0;
	for (size_t i = 0; i < sc->n; i++) {
		double lo, hi;
		if (sc->rows[i].v && parse_date(sc->rows[i].v, TEXT_DATE_FORMS, &lo, &hi))
			dates++;
	}
	return usable > 0 && 10 * dates >= 9 * usable;
}

static int do_text(struct build *b, struct db_conn *c, int table, int column, struct value_column_info *info,
		   bool loose)
{
	const struct schema_table *t = &b->vi->schema->tables[table];
	const struct schema_column *col = &t->columns[column];
	struct scan sc = {0};
	arena_init(&sc.tmp);
	int rc = vi_scan_column(b, c, t, col, SCAN_TEXT, &sc);
	if (rc < 0)
		goto out;
	if (sc.n == 0) {
		if (loose && !sc.failed) {
			/* an untyped SQLite column holding numbers only */
			info->kind = VALUE_KIND_NUMBER;
			rc = do_range(b, c, t, info, col);
		} else {
			vi_skip(info, sc.failed || sc.timed_out ? VALUE_SKIP_FAILED : VALUE_SKIP_EMPTY);
		}
		goto out;
	}
	mark_scan_bounds(b, t, info, &sc);
	size_t usable;
	enum value_skip_reason why = judge_values(b, col, &sc, &usable);
	if (why == VALUE_SKIP_NONE && values_are_dates(&sc, usable)) {
		info->kind = VALUE_KIND_DATE;
		range_from_values(b, info, &sc);
		if (info->has_range)
			info->state = VALUE_COLUMN_RANGE;
		else
			vi_skip(info, VALUE_SKIP_EMPTY);
		goto out;
	}
	if (why != VALUE_SKIP_NONE) {
		vi_skip(info, why);
		goto out;
	}
	if (b->full) {
		vi_skip(info, VALUE_SKIP_BUDGET);
		goto out;
	}
	info->state = VALUE_COLUMN_INDEXED;
	rc = vi_index_values(b, table, column, info, &sc);
	if (rc < 0)
		t2s_error_set(b->err, rc == -T2S_ERR_NOMEM ? T2S_ERR_NOMEM : T2S_ERR_INTERNAL,
			      "cannot add values to the index: %s", sqlite3_errmsg(b->vi->fts));
	else if (info->n_values == 0)
		vi_skip(info, VALUE_SKIP_BUDGET);
out:
	vi_scan_release(&sc);
	return rc;
}

int vi_do_column(struct build *b, struct db_conn *c, int table, int column)
{
	const struct schema_table *t = &b->vi->schema->tables[table];
	const struct schema_column *col = &t->columns[column];
	struct value_column_info *info = &b->vi->cols[table][column];
	/* an untyped column of an engine with loose types (SQLite): whatever its values are */
	bool loose = col->type_class == SCHEMA_TYPE_UNKNOWN && c->engine->loose_types;
	info->kind = column_kind(col->type_class);
	info->state = VALUE_COLUMN_SKIPPED;
	if (info->kind == VALUE_KIND_OTHER) {
		vi_skip(info, VALUE_SKIP_TYPE);
		return 0;
	}
	if (b->o->skip_views && strcmp(t->kind, "view") == 0) {
		vi_skip(info, VALUE_SKIP_VIEW);
		return 0;
	}
	if (b->o->skip_ids && id_like_name(col->name)) {
		vi_skip(info, VALUE_SKIP_ID);
		return 0;
	}
	if (vi_should_stop(b)) {
		vi_skip(info, VALUE_SKIP_BUDGET);
		return 0;
	}
	double start = clock_now_ms();
	int rc = info->kind == VALUE_KIND_TEXT ? do_text(b, c, table, column, info, loose) : do_range(b, c, t, info, col);
	info->scan_ms = clock_now_ms() - start;
	return rc;
}
