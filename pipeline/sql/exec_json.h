/*
 * exec_json.h - the one JSON form of an execution result: the body of
 * POST /execute, the rows part of a /query answer and its "rows" event.
 */
#ifndef T2S_EXEC_JSON_H
#define T2S_EXEC_JSON_H

#include "pipeline/sql/exec.h"

#include <jansson.h>

/*
 * r as JSON, a new reference (NULL only when out of memory): columns,
 * column_types, rows, row_count, truncated, truncated_by, elapsed_ms, chart
 * (exec_chart.h: a Vega-Lite spec or null) and,
 * when lim is not NULL, the limits it ran under (max_rows, timeout_ms,
 * max_result_bytes).  The arrays are shared with r (incref'd), not copied.
 */
json_t *exec_result_json(const struct exec_result *r, const struct exec_limits *lim);

#endif
