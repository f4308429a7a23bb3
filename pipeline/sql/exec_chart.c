/*
 * exec_chart.c - a Vega-Lite spec suggested for an execution result (see
 * exec_chart.h): each column classified once over all its values, then the
 * first columns of each kind pick the mark and the encodings, and the
 * charted columns are copied into the spec's inline data.
 */
#include "pipeline/sql/exec_chart.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define VEGA_LITE_SCHEMA "https://vega.github.io/schema/vega-lite/v6.json"
#define BAR_LONG_LABEL 12   /* a bar label longer than this turns the bars horizontal */
#define BAR_MANY 10         /* and so do more bars than this */

enum kind { K_NONE, K_NUMBER, K_DATE, K_YEAR, K_TIME, K_CATEGORY, K_MIXED };

struct column {
	const char *name;
	enum kind kind;
	bool numeric;      /* the values are numbers (a K_YEAR or K_CATEGORY of numbers), not strings */
	bool date_only;    /* K_DATE without a time of day: read and shown as UTC dates */
};

/* n digits at s. */
static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* "hh:mm", "hh:mm:ss" or "hh:mm:ss.fff", then an optional zone; true when s ends there. */
static bool time_of_day(const char *s)
{
	if (!digits(s, 2) || s[2] != ':' || !digits(s + 3, 2))
		return false;
	s += 5;
	if (*s == ':') {
		if (!digits(s + 1, 2))
			return false;
		s += 3;
		if (*s == '.') {
			s++;
			if (!isdigit((unsigned char)*s))
				return false;
			while (isdigit((unsigned char)*s))
				s++;
		}
	}
	if (*s == 'Z' || *s == 'z')
		s++;
	else if (*s == '+' || *s == '-') {
		if (!digits(s + 1, 2))
			return false;
		s += 3;
		if (*s == ':')
			s++;
		if (digits(s, 2))
			s += 2;
	}
	return *s == '\0';
}

/* ISO 8601 "yyyy-mm", "yyyy-mm-dd", then optionally "T" or " " and a time of day. */
static bool iso_date(const char *s)
{
	if (!digits(s, 4) || s[4] != '-' || !digits(s + 5, 2))
		return false;
	s += 7;
	if (*s == '\0')
		return true;
	if (*s != '-' || !digits(s + 1, 2))
		return false;
	s += 3;
	if (*s == '\0')
		return true;
	return (*s == 'T' || *s == ' ') && time_of_day(s + 1);
}

static bool icontains(const char *s, const char *part)
{
	size_t n = strlen(part);
	for (; s && *s; s++)
		if (strncasecmp(s, part, n) == 0)
			return true;
	return false;
}

/* "id", "singer_id", "SingerID": a key, charted as a category even when it holds numbers. */
static bool key_name(const char *name)
{
	size_t n = strlen(name);
	if (n < 2 || strcasecmp(name + n - 2, "id") != 0)
		return false;
	return n == 2 || name[n - 3] == '_' || (name[n - 2] == 'I' && islower((unsigned char)name[n - 3]));
}

/* The kind of column i of rows: from its declared type (may be NULL) and every value. */
static enum kind classify(const char *declared, const json_t *rows, size_t i, struct column *c)
{
	const char *name = c->name;
	size_t r;
	const json_t *row;
	size_t numbers = 0, integers = 0, years = 0, strings = 0, dates = 0, days = 0, times = 0, year_strings = 0,
	       others = 0;
	bool yearish = icontains(name, "year") || (declared && icontains(declared, "year"));
	json_array_foreach(rows, r, row) {
		const json_t *v = json_array_get(row, i);
		if (!v || json_is_null(v))
			continue;
		if (json_is_number(v)) {
			numbers++;
			integers += json_is_integer(v);
			if (json_is_integer(v) && json_integer_value(v) >= 1000 && json_integer_value(v) <= 2999)
				years++;
		} else if (json_is_string(v)) {
			const char *s = json_string_value(v);
			strings++;
			dates += iso_date(s);
			days += iso_date(s) && strlen(s) <= 10;
			times += time_of_day(s);
			year_strings += strlen(s) == 4 && digits(s, 4);
		} else if (json_is_boolean(v)) {
			strings++; /* a category */
		} else {
			others++;
		}
	}
	if (others || (numbers && strings))
		return K_MIXED;
	if (numbers) {
		c->numeric = true;
		if (yearish && years == numbers)
			return K_YEAR;
		/* Keys and booleans stored as 0/1 (SQLite) are categories. */
		bool boolean = declared && icontains(declared, "bool");
		return (key_name(name) || boolean) && integers == numbers ? K_CATEGORY : K_NUMBER;
	}
	if (!strings)
		return K_NONE;
	if (dates == strings) {
		c->date_only = days == strings;
		return K_DATE;
	}
	if (times == strings)
		return K_TIME;
	if (yearish && year_strings == strings)
		return K_YEAR;
	return K_CATEGORY;
}

static bool is_time(enum kind k)
{
	return k == K_DATE || k == K_YEAR || k == K_TIME;
}

/* How many distinct values column i takes, up to limit + 1 (limit <= EXEC_CHART_MAX_CATEGORIES). */
static size_t distinct(const json_t *rows, size_t i, size_t limit)
{
	json_t *seen[EXEC_CHART_MAX_CATEGORIES + 1];
	size_t n = 0, r, q;
	const json_t *row;
	json_array_foreach(rows, r, row) {
		json_t *v = json_array_get(row, i);
		for (q = 0; q < n && !json_equal(seen[q], v); q++)
			;
		if (q < n)
			continue;
		if (n == limit || n == EXEC_CHART_MAX_CATEGORIES)
			return n + 1;
		seen[n++] = v;
	}
	return n;
}

/* The longest string value of column i, in bytes. */
static size_t longest(const json_t *rows, size_t i)
{
	size_t best = 0, r;
	const json_t *row;
	json_array_foreach(rows, r, row) {
		const json_t *v = json_array_get(row, i);
		size_t n = json_is_string(v) ? json_string_length(v) : 0;
		best = n > best ? n : best;
	}
	return best;
}

/* name as a Vega-Lite field: '.', '[', ']' and '\' escaped by a backslash (a new reference). */
static json_t *field_of(const char *name)
{
	size_t n = strlen(name), k = 0;
	char *out = malloc(2 * n + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (strchr(".[]\\", name[i]))
			out[k++] = '\\';
		out[k++] = name[i];
	}
	out[k] = '\0';
	json_t *s = json_string(out);
	free(out);
	return s;
}

/* An encoding channel: {field, type, title} plus extra members (stolen; may be NULL). */
static json_t *channel(const struct column *c, const char *type, json_t *extra)
{
	json_t *ch = json_pack("{s:o, s:s, s:s}", "field", field_of(c->name), "type", type, "title", c->name);
	if (ch && extra)
		json_object_update(ch, extra);
	json_decref(extra);
	return ch;
}

/* The x channel of a time column: dates temporal, years numbers without thousands separators, times in order. */
static json_t *time_channel(const struct column *c)
{
	/* "2014" and "2014-05-01" are read as UTC midnight: shown in UTC, they keep their year and day. */
	if (c->kind == K_YEAR && !c->numeric)
		return channel(c, "temporal", json_pack("{s:s}", "timeUnit", "utcyear"));
	if (c->kind == K_DATE)
		return channel(c, "temporal", c->date_only ? json_pack("{s:{s:s}}", "scale", "type", "utc") : NULL);
	if (c->kind == K_YEAR)
		return channel(c, "quantitative", json_pack("{s:{s:s}, s:{s:b}}", "axis", "format", "d", "scale", "zero", 0));
	return channel(c, "ordinal", NULL);
}

/* data.values: the charted columns (idx[0..n)) of every row, keyed by their names. */
static json_t *values_of(const struct exec_result *r, const struct column *cols, const size_t *idx, size_t n)
{
	json_t *values = json_array();
	size_t i;
	const json_t *row;
	json_array_foreach(r->rows, i, row) {
		json_t *o = json_object();
		for (size_t k = 0; k < n && o; k++) {
			json_t *v = json_array_get(row, idx[k]);
			json_object_set(o, cols[idx[k]].name, v ? v : json_null());
		}
		json_array_append_new(values, o);
	}
	return values;
}

/* True when a chosen column can be named by a field: a name of its own, not empty. */
static bool nameable(const struct column *cols, size_t ncols, size_t i)
{
	if (!cols[i].name[0])
		return false;
	for (size_t k = 0; k < ncols; k++)
		if (k != i && strcmp(cols[k].name, cols[i].name) == 0)
			return false;
	return true;
}

static json_t *spec(const struct exec_result *r, const struct column *cols, const size_t *idx, size_t n,
		    json_t *mark, json_t *encoding, const char *description)
{
	return json_pack("{s:s, s:s, s:{s:o}, s:o, s:o}", "$schema", VEGA_LITE_SCHEMA, "description", description,
			 "data", "values", values_of(r, cols, idx, n), "mark", mark, "encoding", encoding);
}

/* Two numbers: a point per row. */
static json_t *points(const struct exec_result *r, const struct column *cols, size_t ncols, size_t num, size_t num2)
{
	char what[256];
	if (!nameable(cols, ncols, num) || !nameable(cols, ncols, num2))
		return json_null();
	json_t *enc = json_pack("{s:o, s:o}", "x", channel(&cols[num], "quantitative", NULL), "y",
				channel(&cols[num2], "quantitative", NULL));
	snprintf(what, sizeof(what), "%.70s against %.70s", cols[num2].name, cols[num].name);
	return spec(r, cols, (size_t[]){num, num2}, 2, json_pack("{s:s, s:b}", "type", "point", "tooltip", 1), enc,
		    what);
}

/* Pick the chart from the first columns of each kind (see exec_chart.h); json null when none fits. */
static json_t *choose(const struct exec_result *r, const struct column *cols, size_t ncols)
{
	size_t t = ncols, num = ncols, num2 = ncols, cat = ncols;
	for (size_t i = 0; i < ncols; i++) {
		if (is_time(cols[i].kind) && t == ncols)
			t = i;
		else if (cols[i].kind == K_NUMBER && num == ncols)
			num = i;
		else if (cols[i].kind == K_NUMBER && num2 == ncols)
			num2 = i;
		else if (cols[i].kind == K_CATEGORY && (cat == ncols || (cols[cat].numeric && !cols[i].numeric)))
			cat = i; /* a text category is a better label than a key's numbers */
	}
	const json_t *rows = r->rows;
	char what[256];
	if (t < ncols && num < ncols) {
		if (!nameable(cols, ncols, t) || !nameable(cols, ncols, num))
			return json_null();
		json_t *enc = json_pack("{s:o, s:o}", "x", time_channel(&cols[t]), "y",
					channel(&cols[num], "quantitative", NULL));
		json_t *mark = json_pack("{s:s, s:b, s:b}", "type", "line", "point", 1, "tooltip", 1);
		if (cat < ncols) {
			if (!nameable(cols, ncols, cat) || distinct(rows, cat, EXEC_CHART_MAX_SERIES) > EXEC_CHART_MAX_SERIES) {
				json_decref(enc);
				json_decref(mark);
				return json_null();
			}
			json_object_set_new(enc, "color", channel(&cols[cat], "nominal", NULL));
			snprintf(what, sizeof(what), "%.50s over %.50s, one line per %.50s", cols[num].name, cols[t].name,
				 cols[cat].name);
			return spec(r, cols, (size_t[]){t, num, cat}, 3, mark, enc, what);
		}
		snprintf(what, sizeof(what), "%.70s over %.70s", cols[num].name, cols[t].name);
		return spec(r, cols, (size_t[]){t, num}, 2, mark, enc, what);
	}
	if (cat < ncols && num < ncols) {
		size_t bars = distinct(rows, cat, EXEC_CHART_MAX_CATEGORIES);
		if (bars > EXEC_CHART_MAX_CATEGORIES || !nameable(cols, ncols, cat) || !nameable(cols, ncols, num))
			return num2 < ncols ? points(r, cols, ncols, num, num2) : json_null();
		bool across = bars > BAR_MANY || longest(rows, cat) > BAR_LONG_LABEL;
		json_t *c = channel(&cols[cat], "nominal", json_pack("{s:n}", "sort"));
		json_t *v = channel(&cols[num], "quantitative", NULL);
		json_t *enc = across ? json_pack("{s:o, s:o}", "y", c, "x", v) : json_pack("{s:o, s:o}", "x", c, "y", v);
		snprintf(what, sizeof(what), "%.70s by %.70s", cols[num].name, cols[cat].name);
		return spec(r, cols, (size_t[]){cat, num}, 2, json_pack("{s:s, s:b}", "type", "bar", "tooltip", 1), enc,
			    what);
	}
	if (num < ncols && num2 < ncols)
		return points(r, cols, ncols, num, num2);
	return json_null();
}

json_t *exec_chart_json(const struct exec_result *r)
{
	size_t ncols = json_array_size(r->columns), nrows = json_array_size(r->rows);
	if (ncols < 2 || nrows < 2 || nrows > EXEC_CHART_MAX_ROWS)
		return json_null();
	struct column *cols = calloc(ncols, sizeof(*cols));
	if (!cols)
		return NULL;
	for (size_t i = 0; i < ncols; i++) {
		const char *name = json_string_value(json_array_get(r->columns, i));
		cols[i].name = name ? name : "";
		cols[i].kind = classify(json_string_value(json_array_get(r->column_types, i)), r->rows, i, &cols[i]);
	}
	json_t *out = choose(r, cols, ncols);
	free(cols);
	return out;
}
