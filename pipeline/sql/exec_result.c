/*
 * exec_result.c - an execution result and its limits, shared by every
 * engine's executor (see exec.h): rows are accepted here, so the row and
 * byte caps mean the same on each engine, and number values are read the
 * same way (exec_number_json).
 */
#include "pipeline/sql/exec.h"

#include "common/utf8.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void exec_result_release(struct exec_result *r)
{
	if (!r)
		return;
	json_decref(r->columns);
	json_decref(r->column_types);
	json_decref(r->rows);
	memset(r, 0, sizeof(*r));
}

bool exec_result_row_fits(const struct exec_result *res, const struct exec_limits *lim, size_t row_bytes)
{
	return res->bytes + row_bytes <= lim->max_result_bytes;
}

/* Called with a row that is already complete; steals row. */
bool exec_result_accept_row(struct exec_result *res, const struct exec_limits *lim, json_t *row,
			    size_t row_bytes)
{
	if (res->row_count >= lim->max_rows) {
		json_decref(row);
		res->truncated = true;
		res->truncated_by = "max_rows";
		return false;
	}
	if (res->bytes + row_bytes > lim->max_result_bytes) {
		json_decref(row);
		res->truncated = true;
		res->truncated_by = "max_result_bytes";
		return false;
	}
	res->bytes += row_bytes;
	json_array_append_new(res->rows, row);
	res->row_count++;
	return true;
}

/* Is s a whole integer as a driver writes it (an optional sign, then digits only)? */
static bool integer_text(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

json_t *exec_number_json(const char *v, size_t n)
{
	errno = 0;
	if (integer_text(v)) {
		long long ll = strtoll(v, NULL, 10);
		if (errno == 0)
			return json_integer(ll);
		return utf8_json_string(v, n); /* past 64 bits: a double would change its digits */
	}
	char *end;
	double d = strtod(v, &end);
	if (end != v && *end == '\0' && isfinite(d) && errno == 0)
		return json_real(d);
	return utf8_json_string(v, n); /* NaN, Infinity, out of range: keep the text */
}
