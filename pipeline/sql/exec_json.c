/*
 * exec_json.c - an execution result as JSON (see exec_json.h).
 */
#include "pipeline/sql/exec_json.h"

#include "pipeline/sql/exec_chart.h"

json_t *exec_result_json(const struct exec_result *r, const struct exec_limits *lim)
{
	json_t *out = json_pack("{s:O, s:O, s:O, s:I, s:b, s:o, s:f}", "columns", r->columns, "column_types",
				r->column_types ? r->column_types : json_null(), "rows", r->rows, "row_count",
				(json_int_t)r->row_count, "truncated", r->truncated, "truncated_by",
				r->truncated_by ? json_string(r->truncated_by) : json_null(), "elapsed_ms", r->elapsed_ms);
	if (out && lim)
		json_object_set_new(out, "limits",
				    json_pack("{s:I, s:I, s:I}", "max_rows", (json_int_t)lim->max_rows, "timeout_ms",
					      (json_int_t)lim->timeout_ms, "max_result_bytes", (json_int_t)lim->max_result_bytes));
	if (out)
		json_object_set_new(out, "chart", exec_chart_json(r));
	return out;
}
