/*
 * test_exec_chart.c - the boundaries of exec_chart_json (pipeline/sql/exec_chart.h) on results
 * built here: 40 bars are drawn and 41 are not, 12 coloured lines are and 13 are not, 1,000
 * rows are and 1,001 are not; two rows are the fewest; field names escape Vega-Lite's path
 * characters; key columns ("singer_id") are categories, integer years are years, declared
 * booleans held as 0/1 are categories; mixed columns are not charted.  test_chart.py checks
 * the specs against the Vega-Lite schema; this checks the choices at their edges.  Prints TAP.
 */
#include "pipeline/sql/exec_chart.h"

#include <stdio.h>
#include <string.h>

#include "tests/unit/tap.h"

/* A result of n rows over columns "a,b,..." whose row i is made by row(i). */
static struct exec_result result(const char *const *names, const char *const *types, size_t ncols, size_t n,
				 json_t *(*row)(size_t i))
{
	struct exec_result r = {.columns = json_array(), .column_types = json_array(), .rows = json_array()};
	for (size_t c = 0; c < ncols; c++) {
		json_array_append_new(r.columns, json_string(names[c]));
		json_array_append_new(r.column_types, types && types[c] ? json_string(types[c]) : json_null());
	}
	for (size_t i = 0; i < n; i++)
		json_array_append_new(r.rows, row(i));
	r.row_count = (long)n;
	return r;
}

static const char *mark_of(json_t *chart)
{
	return json_string_value(json_object_get(json_object_get(chart, "mark"), "type"));
}

static const char *field_of(json_t *chart, const char *channel)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(chart, "encoding"), channel), "field"));
}

static const char *type_of(json_t *chart, const char *channel)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(chart, "encoding"), channel), "type"));
}

static size_t g_categories;
static json_t *category_row(size_t i)
{
	char name[32];
	snprintf(name, sizeof(name), "c%zu", i % g_categories);
	return json_pack("[s, i]", name, (int)i);
}

static json_t *series_row(size_t i)
{
	char day[32], name[32];
	snprintf(day, sizeof(day), "2024-01-%02zu", 1 + i / g_categories);
	snprintf(name, sizeof(name), "s%zu", i % g_categories);
	return json_pack("[s, s, f]", day, name, 1.5 * (double)i);
}

static json_t *number_row(size_t i)
{
	return json_pack("[f, i]", 0.5 * (double)i, (int)(i * i));
}

static json_t *key_row(size_t i)
{
	return json_pack("[i, i]", (int)i + 1, (int)(10 - i));
}

static json_t *year_row(size_t i)
{
	return json_pack("[i, i]", 2000 + (int)i, (int)i * 3);
}

static json_t *mixed_row(size_t i)
{
	return i % 2 ? json_pack("[s, i]", "x", 1) : json_pack("[i, i]", 3, 1);
}

/* The chart of a freshly built result (the result released). */
static json_t *chart(const char *const *names, const char *const *types, size_t ncols, size_t n,
		     json_t *(*row)(size_t))
{
	struct exec_result r = result(names, types, ncols, n, row);
	json_t *c = exec_chart_json(&r);
	exec_result_release(&r);
	return c;
}

int main(void)
{
	static const char *const cat_num[] = {"t.name", "v[0]"};
	json_t *c;

	g_categories = EXEC_CHART_MAX_CATEGORIES;
	c = chart(cat_num, NULL, 2, EXEC_CHART_MAX_CATEGORIES, category_row);
	TAP_OK(json_is_object(c) && strcmp(mark_of(c), "bar") == 0, "forty_bars_are_drawn");
	TAP_STR_EQ(field_of(c, "y"), "t\\.name", "a_dot_in_a_field_name_is_escaped");
	TAP_STR_EQ(field_of(c, "x"), "v\\[0\\]", "brackets_in_a_field_name_are_escaped");
	TAP_OK(json_object_get(json_array_get(json_object_get(json_object_get(c, "data"), "values"), 0), "t.name") != NULL,
	       "data_values_keep_the_column_name_unescaped");
	json_decref(c);
	g_categories = EXEC_CHART_MAX_CATEGORIES + 1;
	c = chart(cat_num, NULL, 2, EXEC_CHART_MAX_CATEGORIES + 1, category_row);
	TAP_OK(json_is_null(c), "forty_one_bars_are_not");
	json_decref(c);
	g_categories = 3;
	c = chart(cat_num, NULL, 2, 3, category_row);
	TAP_OK(json_is_object(c) && strcmp(field_of(c, "x"), "t\\.name") == 0, "three_short_bars_stand_upright");
	json_decref(c);

	static const char *const day_series_num[] = {"day", "series", "value"};
	g_categories = EXEC_CHART_MAX_SERIES;
	c = chart(day_series_num, NULL, 3, EXEC_CHART_MAX_SERIES * 3, series_row);
	TAP_OK(json_is_object(c) && strcmp(mark_of(c), "line") == 0 && field_of(c, "color") &&
		       strcmp(field_of(c, "color"), "series") == 0 && strcmp(type_of(c, "x"), "temporal") == 0,
	       "twelve_coloured_lines_are_drawn");
	json_decref(c);
	g_categories = EXEC_CHART_MAX_SERIES + 1;
	c = chart(day_series_num, NULL, 3, (EXEC_CHART_MAX_SERIES + 1) * 3, series_row);
	TAP_OK(json_is_null(c), "thirteen_lines_are_not");
	json_decref(c);

	static const char *const two_numbers[] = {"x", "y"};
	c = chart(two_numbers, NULL, 2, EXEC_CHART_MAX_ROWS, number_row);
	TAP_OK(json_is_object(c) && strcmp(mark_of(c), "point") == 0, "a_thousand_points_are_drawn");
	json_decref(c);
	c = chart(two_numbers, NULL, 2, EXEC_CHART_MAX_ROWS + 1, number_row);
	TAP_OK(json_is_null(c), "a_thousand_and_one_are_not");
	json_decref(c);
	c = chart(two_numbers, NULL, 2, 2, number_row);
	TAP_OK(json_is_object(c), "two_rows_are_enough");
	json_decref(c);
	c = chart(two_numbers, NULL, 2, 1, number_row);
	TAP_OK(json_is_null(c), "one_row_is_not");
	json_decref(c);

	static const char *const key_num[] = {"singer_id", "n"};
	c = chart(key_num, NULL, 2, 5, key_row);
	TAP_OK(json_is_object(c) && strcmp(mark_of(c), "bar") == 0 && strcmp(type_of(c, "x"), "nominal") == 0,
	       "a_key_column_is_a_category");
	json_decref(c);
	static const char *const flag_num[] = {"flag", "n"};
	static const char *const flag_types[] = {"BOOLEAN", "INTEGER"};
	c = chart(flag_num, flag_types, 2, 2, key_row);
	TAP_OK(json_is_object(c) && strcmp(mark_of(c), "bar") == 0, "a_declared_boolean_held_as_integers_is_a_category");
	json_decref(c);
	static const char *const year_num[] = {"Year", "n"};
	c = chart(year_num, NULL, 2, 6, year_row);
	TAP_OK(json_is_object(c) && strcmp(mark_of(c), "line") == 0 && strcmp(type_of(c, "x"), "quantitative") == 0,
	       "integer_years_draw_a_line");
	json_decref(c);
	static const char *const mixed[] = {"m", "n"};
	c = chart(mixed, NULL, 2, 6, mixed_row);
	TAP_OK(json_is_null(c), "a_mixed_column_is_not_charted");
	json_decref(c);
	return tap_done();
}
