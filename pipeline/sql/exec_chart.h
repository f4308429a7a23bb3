/*
 * exec_chart.h - a chart suggested for an execution result: a Vega-Lite v6
 * spec chosen from the result's column types and shape, or JSON null when a
 * chart would not help.  Every answer with rows carries it as `chart`
 * (exec_json.h puts it beside the rows).
 *
 * Each column gets a kind from its declared type (column_types) and its
 * values: a number (every value a JSON number; an integer column named like
 * a key, "id" or "..._id", is a category instead), a date or date-time
 * (declared date/time/timestamp, or every value an ISO 8601 date string),
 * a year (a column whose name holds "year" with whole numbers 1000-2999, or
 * four-digit strings), a time of day ("12:30", "12:30:05"), or a category
 * (text, booleans).  The first columns of each kind pick the chart:
 *
 *   a time, a number and a category  -> line, one coloured line per category
 *   a time and a number              -> line
 *   a category and a number          -> bar (horizontal past 10 bars or with long labels)
 *   two numbers                      -> point (also when there are too many bars)
 *
 * (a text category is preferred to a key's numbers as the bars' labels)
 *
 * and null otherwise: fewer than two rows (one value), more than
 * EXEC_CHART_MAX_ROWS rows, more than EXEC_CHART_MAX_CATEGORIES bars or
 * EXEC_CHART_MAX_SERIES lines, text only, a single number column, or a
 * chosen column whose name is empty or given to two columns.
 *
 * The data is inline (`data.values`): one object per row holding only the
 * charted columns, keyed by the column names exactly, values as in `rows`,
 * in the rows' order (bars keep it: `sort: null`).  Encodings name those
 * columns, with `.`, `[`, `]` and `\` escaped by a backslash as Vega-Lite
 * reads field names (a column "t.a" is the field "t\\.a").  A client draws
 * the spec as it is with any Vega-Lite renderer.
 */
#ifndef T2S_EXEC_CHART_H
#define T2S_EXEC_CHART_H

#include "pipeline/sql/exec.h"

#include <jansson.h>

#define EXEC_CHART_MAX_ROWS 1000
#define EXEC_CHART_MAX_CATEGORIES 40
#define EXEC_CHART_MAX_SERIES 12

/* The spec for r (a new reference): an object, or JSON null; NULL only when out of memory. */
json_t *exec_chart_json(const struct exec_result *r);

#endif
