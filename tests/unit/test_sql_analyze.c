/*
 * test_sql_analyze.c - specification of the parse-tree facts of a statement
 * (pipeline/sql/sql_analyze.c): table refs, column refs and their blocks,
 * join predicates, grouping and aggregate facts, string literals, the
 * SQLite normalisation and repairs, errors and limits; then robustness on
 * random and truncated statements and on every Spider dev gold query
 * (skipped when the datasets are absent: $T2S_DATASETS, else
 * $T2S_SOURCE_ROOT/../shared/datasets), and concurrent calls.
 *
 * Run under ASan/UBSan/LSan.
 */
#include "pipeline/sql/sql_analyze.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tests/unit/tap.h"

/* Analyse sql, expecting success; on failure prints the error and returns false. */
/* n bytes for a fixture; the test stops (abort) when there is no memory. */
static char *test_alloc(size_t n)
{
	char *p = malloc(n);
	if (!p) {
		printf("Bail out! out of memory for a %zu-byte fixture\n", n);
		abort();
	}
	return p;
}

/* Append s to buf (cap bytes, NUL-terminated at *len); the fixtures are sized to hold it, else the test stops. */
static void append(char *buf, size_t cap, size_t *len, const char *s)
{
	size_t n = strlen(s);
	if (*len + n + 1 > cap) {
		printf("Bail out! a fixture outgrew its %zu bytes\n", cap);
		abort();
	}
	memcpy(buf + *len, s, n + 1);
	*len += n;
}

static bool analyse(const char *sql, enum sql_dialect dialect, struct sql_analysis *a)
{
	struct t2s_error err;
	t2s_error_clear(&err);
	memset(a, 0, sizeof(*a));
	int r = sql_analyze(sql, dialect, a, &err);
	if (r != 0)
		printf("#   sql_analyze(%s) = %d (%s) '%s'\n", sql, r, t2s_code_slug(err.code), err.message);
	return r == 0;
}

static bool lite(const char *sql, struct sql_analysis *a)
{
	return analyse(sql, SQL_DIALECT_SQLITE, a);
}

/* Index of the table ref named name (case-sensitive: checks spelling), or -1. */
static int table(const struct sql_analysis *a, const char *name)
{
	for (size_t i = 0; i < a->n_tables; i++)
		if (a->tables[i].name && strcmp(a->tables[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Index of the nth (0-based) column ref named name, or -1. */
static int column_n(const struct sql_analysis *a, const char *name, int nth)
{
	for (size_t i = 0; i < a->n_columns; i++)
		if (strcmp(a->columns[i].name, name) == 0 && nth-- == 0)
			return (int)i;
	return -1;
}

static int column(const struct sql_analysis *a, const char *name)
{
	return column_n(a, name, 0);
}

static const char *str_or_null(const char *s)
{
	return s ? s : "(null)";
}

/* Index of the string literal with value v, or -1. */
static int literal(const struct sql_analysis *a, const char *v)
{
	for (size_t i = 0; i < a->n_string_literals; i++)
		if (strcmp(a->string_literals[i].value, v) == 0)
			return (int)i;
	return -1;
}

/* True when join j links columns named x and y (either order). */
static bool join_links(const struct sql_analysis *a, size_t j, const char *x, const char *y)
{
	const char *l = a->columns[a->joins[j].left_column].name, *r = a->columns[a->joins[j].right_column].name;
	return (strcmp(l, x) == 0 && strcmp(r, y) == 0) || (strcmp(l, y) == 0 && strcmp(r, x) == 0);
}

static void test_table_refs(void)
{
	struct sql_analysis a;

	TAP_OK(lite("SELECT T1.Name FROM main.Singer AS T1 JOIN concert c ON T1.Singer_ID = c.singer_id", &a),
	       "table_refs_statement_analyses");
	int s = table(&a, "Singer"), c = table(&a, "concert");
	TAP_INT_EQ(a.n_tables, 2, "table_refs_two_tables");
	TAP_OK(s >= 0 && c >= 0, "table_refs_names_as_written_in_sqlite");
	if (s >= 0 && c >= 0) {
		TAP_STR_EQ(a.tables[s].schema, "main", "table_refs_schema");
		TAP_STR_EQ(a.tables[s].alias, "T1", "table_refs_alias_with_as_as_written");
		TAP_STR_EQ(a.tables[c].alias, "c", "table_refs_alias_without_as");
		TAP_OK(a.tables[c].schema == NULL, "table_refs_unqualified_has_no_schema");
		TAP_INT_EQ(a.tables[s].scope, 0, "table_refs_scope_is_block_0");
		TAP_OK(!a.tables[s].is_cte && !a.tables[s].is_derived, "table_refs_base_table");
	}
	int name = column(&a, "Name");
	TAP_OK(name >= 0, "column_refs_name_as_written");
	if (name >= 0) {
		TAP_STR_EQ(a.columns[name].qualifier, "T1", "column_refs_qualifier_as_written");
		TAP_INT_EQ(a.columns[name].table_ref, s, "column_refs_qualifier_resolves_to_alias");
		TAP_INT_EQ(a.columns[name].clause, SQL_IN_SELECT, "column_refs_clause_select");
	}
	TAP_INT_EQ(a.blocks[0].n_from_items, 2, "table_refs_join_counts_two_from_items");
	TAP_INT_EQ(a.n_statements, 1, "one_statement");
	sql_analysis_release(&a);

	TAP_OK(analyse("SELECT T1.Name FROM Singer AS T1", SQL_DIALECT_POSTGRES, &a), "postgres_dialect_analyses");
	TAP_OK(table(&a, "singer") >= 0 && a.tables[0].alias && strcmp(a.tables[0].alias, "t1") == 0,
	       "postgres_dialect_names_are_folded_as_postgres_resolves_them");
	TAP_OK(a.n_columns == 1 && a.columns[0].table_ref == 0, "postgres_dialect_qualifier_resolves");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT x FROM t WHERE q.y = 1", &a), "unknown_qualifier_analyses");
	TAP_INT_EQ(a.columns[column(&a, "y")].table_ref, -1, "unknown_qualifier_does_not_resolve");
	TAP_INT_EQ(a.columns[column(&a, "x")].table_ref, -1, "unqualified_column_does_not_resolve");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT t.*, * FROM t", &a), "stars_analyse");
	TAP_OK(a.n_columns == 2 && strcmp(a.columns[0].name, "*") == 0 && a.columns[0].table_ref == 0 &&
	       strcmp(a.columns[1].name, "*") == 0 && a.columns[1].qualifier == NULL, "stars_are_column_refs_named_star");
	sql_analysis_release(&a);
}

static void test_join_predicates(void)
{
	struct sql_analysis a;

	TAP_OK(lite("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id "
		    "JOIN stadium AS T3 ON T2.stadium_id = T3.stadium_id AND T3.capacity > 10", &a),
	       "join_on_analyses");
	TAP_INT_EQ(a.n_joins, 2, "join_on_gives_one_pred_per_equality");
	if (a.n_joins == 2) {
		TAP_OK(join_links(&a, 0, "singer_id", "singer_id"), "join_on_first_pred_columns");
		TAP_OK(join_links(&a, 1, "stadium_id", "stadium_id"), "join_on_second_pred_through_and");
		TAP_INT_EQ(a.columns[a.joins[0].left_column].clause, SQL_IN_JOIN_ON, "join_on_columns_clause_join_on");
		TAP_OK(a.columns[a.joins[0].left_column].table_ref != a.columns[a.joins[0].right_column].table_ref,
		       "join_on_pred_links_two_table_refs");
	}
	TAP_INT_EQ(a.blocks[0].n_from_items, 3, "join_on_three_from_items");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT a.n FROM a, b WHERE a.x = b.y AND a.z = 5 AND a.x = a.y AND a.k = 'v'", &a),
	       "join_where_analyses");
	TAP_INT_EQ(a.n_joins, 1, "join_where_only_col_eq_col_of_two_tables");
	if (a.n_joins == 1)
		TAP_OK(join_links(&a, 0, "x", "y") && a.columns[a.joins[0].left_column].clause == SQL_IN_WHERE,
		       "join_where_pred_is_a_x_b_y");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT 1 FROM a, b WHERE a.x = b.y OR a.z = 1", &a), "join_under_or_analyses");
	TAP_INT_EQ(a.n_joins, 1, "join_under_or_is_a_join_pred");
	TAP_OK(a.n_joins == 1 && !a.joins[0].conjunct, "join_under_or_is_not_a_conjunct");
	sql_analysis_release(&a);
	TAP_OK(lite("SELECT 1 FROM a JOIN b ON a.x = b.y OR a.x = b.z", &a), "join_on_with_or_analyses");
	TAP_INT_EQ(a.n_joins, 2, "both_sides_of_an_or_join_are_preds");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT 1 FROM a, b WHERE NOT a.x = b.y AND a.p < b.q", &a), "join_under_not_analyses");
	TAP_INT_EQ(a.n_joins, 0, "join_under_not_or_inequality_is_not_a_join_pred");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT 1 FROM a WHERE x = y", &a), "unqualified_equality_analyses");
	TAP_INT_EQ(a.n_joins, 0, "unqualified_equality_is_not_a_join_pred");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT t2.name FROM course AS t1 JOIN teacher AS t2 ON t1.course_id = t3.course_id "
		    "JOIN course_arrange AS t3 ON t2.teacher_id = t3.teacher_id", &a), "on_naming_a_later_table_analyses");
	TAP_INT_EQ(a.n_joins, 2, "on_naming_a_later_table_is_a_join_pred");
	int later = column_n(&a, "course_id", 1);
	TAP_OK(later >= 0 && a.columns[later].table_ref == table(&a, "course_arrange") &&
	       a.columns[later].clause == SQL_IN_JOIN_ON, "on_naming_a_later_table_resolves_to_it");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT 1 FROM s AS T1 JOIN v AS T2 ON T1.id = senator_vote AND T2.k = \"x\" AND a = b "
		    "AND T1.id = T2.id AND T1.a = T1.b", &a), "unqualified_join_columns_analyse");
	TAP_INT_EQ(a.n_joins, 1, "qualified_join_preds_only_in_joins");
	TAP_INT_EQ(a.n_unqualified_joins, 2, "unqualified_side_joins_recorded_apart");
	TAP_OK(a.n_unqualified_joins == 2 && strcmp(a.columns[a.unqualified_joins[0].right_column].name,
						    "senator_vote") == 0 && a.unqualified_joins[0].conjunct,
	       "unqualified_join_columns_as_written");
	sql_analysis_release(&a);
	TAP_OK(lite("SELECT 1 FROM s AS T1 WHERE T1.id = (SELECT max(x) FROM u WHERE u.k = T1.k)", &a),
	       "correlated_equality_analyses");
	TAP_INT_EQ(a.n_joins + a.n_unqualified_joins, 0, "correlated_equality_is_no_join");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT name FROM singer JOIN singer_in_concert USING (singer_id) "
		    "NATURAL JOIN concert JOIN stadium ON 1 = 1", &a), "using_and_natural_analyse");
	TAP_INT_EQ(a.n_using_joins, 2, "using_and_natural_joins_are_recorded");
	if (a.n_using_joins == 2) {
		TAP_STR_EQ(a.tables[a.using_joins[0].left_table].name, "singer", "using_join_left_side");
		TAP_STR_EQ(a.tables[a.using_joins[0].right_table].name, "singer_in_concert", "using_join_right_side");
		TAP_STR_EQ(a.tables[a.using_joins[1].right_table].name, "concert", "natural_join_right_side");
	}
	sql_analysis_release(&a);
}

static void test_grouping(void)
{
	struct sql_analysis a;

	TAP_OK(lite("SELECT name, count(*) FROM t GROUP BY id", &a), "group_by_other_column_analyses");
	TAP_OK(a.blocks[0].has_group_by && a.blocks[0].has_aggregate_in_select, "group_by_flags");
	TAP_INT_EQ(a.blocks[0].n_ungrouped_select_columns, 1, "group_by_other_column_one_ungrouped");
	if (a.blocks[0].n_ungrouped_select_columns == 1)
		TAP_STR_EQ(a.columns[a.blocks[0].ungrouped_select_columns[0]].name, "name",
			   "group_by_other_column_name_is_ungrouped");
	TAP_INT_EQ(a.columns[column(&a, "id")].clause, SQL_IN_GROUP_BY, "group_by_column_clause");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT T1.name, count(*) FROM t AS T1 GROUP BY name", &a), "group_by_same_column_analyses");
	TAP_INT_EQ(a.blocks[0].n_ungrouped_select_columns, 0, "group_by_same_column_unqualified_covers_qualified");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT T1.name, T2.name, count(*) FROM t AS T1 JOIN u AS T2 ON T1.id = T2.id GROUP BY T1.name",
		    &a), "group_by_qualified_analyses");
	TAP_INT_EQ(a.blocks[0].n_ungrouped_select_columns, 1, "group_by_qualified_other_table_same_name_is_ungrouped");
	if (a.blocks[0].n_ungrouped_select_columns == 1)
		TAP_STR_EQ(a.columns[a.blocks[0].ungrouped_select_columns[0]].qualifier, "T2",
			   "group_by_qualified_ungrouped_is_T2_name");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT upper(name) AS n, max(age) FROM t GROUP BY 1", &a), "group_by_ordinal_analyses");
	TAP_INT_EQ(a.blocks[0].n_ungrouped_select_columns, 0, "group_by_ordinal_covers_its_entry");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT upper(name) AS n, max(age) AS m FROM t GROUP BY n ORDER BY m DESC", &a),
	       "group_by_output_name_analyses");
	TAP_INT_EQ(a.blocks[0].n_ungrouped_select_columns, 0, "group_by_output_name_covers_its_entry");
	TAP_OK(a.columns[column_n(&a, "n", 0)].names_output, "group_by_output_name_flagged_names_output");
	TAP_OK(a.columns[column_n(&a, "m", 0)].names_output, "order_by_output_name_flagged_names_output");
	TAP_OK(!a.columns[column(&a, "name")].names_output, "select_column_not_flagged_names_output");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT name, count(*) FROM t", &a), "aggregate_without_group_by_analyses");
	TAP_INT_EQ(a.blocks[0].n_ungrouped_select_columns, 1, "aggregate_without_group_by_plain_column_ungrouped");
	TAP_OK(a.columns[column(&a, "name")].in_aggregate == false, "plain_column_not_in_aggregate");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT name, age FROM t ORDER BY age", &a), "no_grouping_analyses");
	TAP_OK(!a.blocks[0].has_group_by && !a.blocks[0].has_aggregate_in_select &&
	       a.blocks[0].n_ungrouped_select_columns == 0, "no_grouping_no_ungrouped_list");
	TAP_OK(a.has_order_by && !a.has_limit, "top_level_order_by_without_limit");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT max(a, b), count(c) FROM t", &a), "sqlite_scalar_max_analyses");
	TAP_OK(a.columns[column(&a, "a")].in_aggregate == false && a.columns[column(&a, "c")].in_aggregate,
	       "sqlite_two_argument_max_is_scalar_count_is_aggregate");
	TAP_INT_EQ(a.blocks[0].n_ungrouped_select_columns, 2, "sqlite_scalar_max_arguments_are_ungrouped");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT sum(a), avg(b + 1), total(c), sum(DISTINCT d), count(e), max(f) FROM t", &a),
	       "summing_aggregates_analyse");
	TAP_OK(a.columns[column(&a, "a")].in_sum && a.columns[column(&a, "b")].in_sum &&
	       a.columns[column(&a, "c")].in_sum, "sum_avg_total_arguments_are_in_sum");
	TAP_OK(!a.columns[column(&a, "d")].in_sum && !a.columns[column(&a, "e")].in_sum &&
	       !a.columns[column(&a, "f")].in_sum && a.columns[column(&a, "e")].in_aggregate,
	       "distinct_sum_count_and_max_are_not_in_sum");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT sum(a), avg(DISTINCT b), sum(c * 2), count(d), max(e) FROM t", &a), "summed_analyses");
	TAP_OK(a.columns[column(&a, "a")].summed && a.columns[column(&a, "b")].summed,
	       "a_sum_or_average_of_a_column_is_summed");
	TAP_OK(!a.columns[column(&a, "c")].summed && !a.columns[column(&a, "d")].summed &&
	       !a.columns[column(&a, "e")].summed, "expressions_counts_and_max_are_not_summed");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT a FROM t WHERE b > (SELECT avg(b) FROM t) ORDER BY a DESC, c LIMIT 3", &a),
	       "avg_order_limit_analyse");
	TAP_OK(!a.blocks[0].has_avg && a.blocks[1].has_avg, "avg_belongs_to_its_block");
	TAP_OK(a.blocks[0].order_desc && a.blocks[0].order_asc && a.blocks[0].has_limit,
	       "order_directions_and_limit_recorded");
	TAP_OK(!a.blocks[1].order_desc && !a.blocks[1].order_asc && !a.blocks[1].has_limit,
	       "unordered_block_has_no_directions");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT a FROM t UNION SELECT a FROM u ORDER BY a ASC LIMIT 1", &a), "set_order_limit_analyses");
	TAP_OK(a.blocks[0].order_asc && !a.blocks[0].order_desc && a.blocks[0].has_limit && !a.blocks[1].has_limit,
	       "set_operation_order_counts_for_its_first_operand");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT name, rank() OVER (ORDER BY age), sum(age) OVER () FROM t", &a), "window_analyses");
	TAP_OK(!a.blocks[0].has_aggregate_in_select, "window_calls_are_not_aggregates");
	sql_analysis_release(&a);
}

static void test_aggregate_misuse(void)
{
	struct sql_analysis a;

	TAP_OK(lite("SELECT a FROM t WHERE sum(b) > 1", &a), "aggregate_in_where_analyses");
	TAP_OK(a.blocks[0].aggregate_in_where, "aggregate_in_where_flagged");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT a FROM t JOIN u ON count(u.x) = 1", &a), "aggregate_in_join_on_analyses");
	TAP_OK(a.blocks[0].aggregate_in_where, "aggregate_in_join_on_flagged");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT a FROM t GROUP BY a HAVING sum(b) > 1", &a), "aggregate_in_having_analyses");
	TAP_OK(!a.blocks[0].aggregate_in_where && !a.blocks[0].has_aggregate_in_select,
	       "aggregate_in_having_not_flagged");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT a FROM t WHERE b > (SELECT avg(b) FROM t)", &a), "aggregate_in_where_subquery_analyses");
	TAP_OK(!a.blocks[0].aggregate_in_where && a.n_blocks == 2 && a.blocks[1].has_aggregate_in_select,
	       "aggregate_in_where_subquery_belongs_to_subquery");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT max(count(*)) FROM t GROUP BY a", &a), "nested_aggregate_analyses");
	TAP_OK(a.blocks[0].nested_aggregate, "nested_aggregate_flagged");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT a FROM t GROUP BY count(b)", &a), "aggregate_in_group_by_analyses");
	TAP_OK(a.blocks[0].aggregate_in_group_by, "aggregate_in_group_by_flagged");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT count(DISTINCT a), sum(b) FROM t", &a), "plain_aggregates_analyse");
	TAP_OK(!a.blocks[0].nested_aggregate && !a.blocks[0].aggregate_in_where &&
	       !a.blocks[0].aggregate_in_group_by, "plain_aggregates_not_flagged");
	sql_analysis_release(&a);
}

static void test_blocks(void)
{
	struct sql_analysis a;
	static const struct {
		const char *sql;
		enum sql_set_op op;
		const char *name;
	} setops[] = {
		{"SELECT a FROM t UNION SELECT b FROM u", SQL_SET_UNION, "union_gives_two_blocks"},
		{"SELECT a FROM t UNION ALL SELECT b FROM u", SQL_SET_UNION_ALL, "union_all_gives_two_blocks"},
		{"SELECT a FROM t INTERSECT SELECT b FROM u", SQL_SET_INTERSECT, "intersect_gives_two_blocks"},
		{"SELECT a FROM t EXCEPT SELECT b FROM u", SQL_SET_EXCEPT, "except_gives_two_blocks"},
	};

	for (size_t i = 0; i < sizeof(setops) / sizeof(setops[0]); i++) {
		bool ok = lite(setops[i].sql, &a) && a.n_blocks == 2 && a.blocks[0].set_op == setops[i].op &&
			  a.blocks[1].set_op == setops[i].op && a.blocks[0].parent == -1 && a.blocks[1].parent == -1 &&
			  a.tables[table(&a, "t")].scope == 0 && a.tables[table(&a, "u")].scope == 1 &&
			  a.columns[column(&a, "b")].scope == 1;
		TAP_OK(ok, setops[i].name);
		sql_analysis_release(&a);
	}

	TAP_OK(lite("SELECT a FROM t UNION SELECT b FROM u INTERSECT SELECT c FROM v ORDER BY a LIMIT 3", &a),
	       "three_operands_analyse");
	TAP_INT_EQ(a.n_blocks, 3, "three_operands_three_blocks");
	TAP_OK(a.has_order_by && a.has_limit, "set_operation_order_by_and_limit_are_top_level");
	int oa = column_n(&a, "a", 1);
	TAP_OK(oa >= 0 && a.columns[oa].clause == SQL_IN_ORDER_BY && a.columns[oa].scope == 0,
	       "set_operation_order_by_belongs_to_first_operand");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT count(*) AS n FROM t UNION SELECT count(*) FROM u ORDER BY n", &a),
	       "set_operation_order_by_output_name_analyses");
	TAP_OK(a.n_columns == 1 && a.columns[0].names_output && a.columns[0].scope == 0,
	       "set_operation_order_by_output_name_flagged");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM concert WHERE year = 2014)", &a),
	       "in_subquery_analyses");
	TAP_INT_EQ(a.n_blocks, 2, "in_subquery_two_blocks");
	if (a.n_blocks == 2) {
		TAP_INT_EQ(a.blocks[1].parent, 0, "in_subquery_parent_is_outer_block");
		TAP_INT_EQ(a.tables[table(&a, "concert")].scope, 1, "in_subquery_table_in_inner_block");
		TAP_OK(a.columns[column(&a, "year")].scope == 1 && a.columns[column(&a, "year")].clause == SQL_IN_WHERE,
		       "in_subquery_column_in_inner_where");
		TAP_OK(a.columns[column_n(&a, "singer_id", 0)].scope == 0 &&
		       a.columns[column_n(&a, "singer_id", 0)].clause == SQL_IN_WHERE,
		       "in_subquery_test_expression_in_outer_where");
	}
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT s.name, (SELECT count(*) FROM concert AS c WHERE c.singer_id = s.singer_id) FROM singer AS s",
		    &a), "scalar_subquery_analyses");
	TAP_INT_EQ(a.n_blocks, 2, "scalar_subquery_two_blocks");
	int outer = column_n(&a, "singer_id", 1);
	TAP_OK(outer >= 0 && a.columns[outer].scope == 1 && a.columns[outer].table_ref == table(&a, "singer"),
	       "correlated_reference_resolves_to_outer_table");
	TAP_INT_EQ(a.n_joins, 0, "correlation_is_not_a_join_pred");
	TAP_OK(!a.blocks[0].has_aggregate_in_select, "scalar_subquery_aggregate_not_outer");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT count(*) FROM (SELECT a FROM t WHERE b = 1) AS sub WHERE sub.a > 2", &a),
	       "derived_table_analyses");
	int sub = table(&a, "sub");
	TAP_OK(sub >= 0 && a.tables[sub].is_derived && a.tables[sub].derived_block >= 0 &&
	       a.blocks[a.tables[sub].derived_block].parent == a.tables[sub].scope, "derived_table_ref_and_block");
	TAP_OK(a.columns[column_n(&a, "a", 1)].table_ref == sub, "derived_table_alias_resolves");
	sql_analysis_release(&a);
}

static void test_ctes(void)
{
	struct sql_analysis a;

	TAP_OK(lite("WITH big AS (SELECT id FROM t WHERE n > 5) SELECT * FROM big JOIN u ON big.id = u.id", &a),
	       "cte_analyses");
	int big = table(&a, "big"), t = table(&a, "t");
	TAP_OK(big >= 0 && a.tables[big].is_cte, "cte_reference_is_cte");
	TAP_OK(t >= 0 && !a.tables[t].is_cte && a.tables[table(&a, "u")].is_cte == false, "cte_body_table_is_base");
	TAP_INT_EQ(a.n_blocks, 2, "cte_body_is_a_block");
	TAP_OK(t >= 0 && a.tables[t].scope != a.tables[big].scope, "cte_body_in_its_own_block");
	TAP_INT_EQ(a.n_joins, 1, "cte_join_pred");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT * FROM big", &a), "no_cte_analyses");
	TAP_OK(!a.tables[0].is_cte, "name_without_cte_is_base");
	sql_analysis_release(&a);

	TAP_OK(analyse("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r",
		       SQL_DIALECT_POSTGRES, &a), "recursive_cte_analyses");
	TAP_OK(a.n_tables == 2 && a.tables[0].is_cte && a.tables[1].is_cte, "recursive_cte_self_reference_is_cte");
	sql_analysis_release(&a);
}

static void test_literals(void)
{
	struct sql_analysis a;

	TAP_OK(lite("SELECT name FROM singer WHERE country = 'France' AND city IN ('Paris', 'Lyon') "
		    "AND note LIKE '%it''s%' AND x = ''", &a), "string_literals_analyse");
	int f = literal(&a, "France");
	TAP_OK(f >= 0 && a.string_literals[f].identifier_column == -1, "string_literal_value_unquoted");
	TAP_OK(f >= 0 && a.string_literals[f].compared_column == column(&a, "country"),
	       "string_literal_compared_column");
	TAP_OK(literal(&a, "Lyon") >= 0 && a.string_literals[literal(&a, "Lyon")].compared_column == column(&a, "city"),
	       "in_list_literal_compared_column");
	TAP_OK(literal(&a, "%it's%") >= 0, "like_pattern_escape_resolved");
	TAP_OK(literal(&a, "") >= 0, "empty_string_literal");
	TAP_INT_EQ(a.n_string_literals, 5, "string_literals_count");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT name FROM singer WHERE country = \"France\"", &a), "double_quoted_string_analyses");
	int fr = column(&a, "France");
	TAP_OK(fr >= 0 && a.columns[fr].maybe_string, "double_quoted_identifier_flagged_maybe_string");
	f = literal(&a, "France");
	TAP_OK(f >= 0 && a.string_literals[f].identifier_column == fr &&
	       a.string_literals[f].compared_column == column(&a, "country"),
	       "double_quoted_identifier_listed_as_possible_literal");
	TAP_INT_EQ(a.n_joins, 0, "double_quoted_comparison_is_not_a_join");
	TAP_OK(!a.columns[column(&a, "name")].maybe_string, "bare_identifier_not_maybe_string");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT name FROM singer WHERE country IN (\"France\", \"Spain\")", &a),
	       "double_quoted_in_list_analyses");
	f = literal(&a, "Spain");
	TAP_OK(f >= 0 && a.string_literals[f].identifier_column >= 0 &&
	       a.string_literals[f].compared_column == column(&a, "country"),
	       "double_quoted_in_list_compared_column");
	sql_analysis_release(&a);

	TAP_OK(analyse("SELECT name FROM singer WHERE country = \"France\"", SQL_DIALECT_POSTGRES, &a),
	       "postgres_double_quoted_analyses");
	TAP_OK(a.n_string_literals == 0 && !a.columns[column(&a, "France")].maybe_string,
	       "postgres_double_quoted_is_an_identifier");
	sql_analysis_release(&a);
}

static void test_sqlite_syntax(void)
{
	struct sql_analysis a;
	struct t2s_error err;

	TAP_OK(lite("SELECT `first name`, [last name], m.[x\"y] FROM `my table` AS m WHERE a == 1", &a),
	       "backticks_brackets_and_double_equals_analyse");
	TAP_OK(table(&a, "my table") >= 0 && column(&a, "first name") >= 0 && column(&a, "last name") >= 0,
	       "backtick_and_bracket_identifiers_unquoted");
	TAP_OK(column(&a, "x\"y") >= 0 && a.columns[column(&a, "x\"y")].table_ref == table(&a, "my table"),
	       "bracket_identifier_with_double_quote");
	TAP_OK(a.normalised, "normalised_flag_set");
	TAP_OK(!a.columns[column(&a, "first name")].maybe_string, "backtick_identifier_not_maybe_string");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT '`x`', '[y]' FROM t -- [z]", &a), "quotes_inside_strings_and_comments_analyse");
	TAP_OK(literal(&a, "`x`") >= 0 && literal(&a, "[y]") >= 0 && !a.normalised,
	       "quotes_inside_strings_untouched");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT COUNT(*) FROM (SELECT T1.Name FROM country AS T1 WHERE T1.c = \"English\" "
		    "INTERSECT SELECT Name FROM country)", &a), "from_subquery_without_alias_repaired");
	int d = -1;
	for (size_t i = 0; i < a.n_tables; i++)
		if (a.tables[i].is_derived)
			d = (int)i;
	TAP_OK(d >= 0 && a.tables[d].alias == NULL && a.tables[d].name == NULL, "repair_alias_not_reported");
	TAP_INT_EQ(a.n_blocks, 3, "repaired_statement_blocks");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT T1.a FROM p AS T1 JOIN q AS T2 WHERE T1.x < 5", &a), "join_without_on_repaired");
	TAP_OK(a.n_tables == 2 && a.columns[column(&a, "x")].clause == SQL_IN_WHERE, "join_without_on_facts");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT a FROM p JOIN q", &a), "join_without_on_at_end_repaired");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT T1.Name FROM visitor AS T1 JOIN visit AS T2 JOIN museum AS T3 ON T1.ID = T2.visitor_ID "
		    "AND T2.Museum_ID = T3.Museum_ID WHERE T3.Open_Year < 2009", &a),
	       "join_chain_with_one_on_for_several_joins_repaired");
	TAP_OK(a.n_tables == 3 && a.n_joins == 2 && a.normalised, "join_chain_one_on_gives_both_join_preds");
	TAP_OK(a.n_joins == 2 && join_links(&a, 0, "ID", "visitor_ID") && join_links(&a, 1, "Museum_ID", "Museum_ID"),
	       "join_chain_one_on_preds_as_written");
	sql_analysis_release(&a);
	TAP_OK(lite("SELECT T3.Fname FROM e AS T1 JOIN g AS T2 JOIN s AS T3 ON T1.Grade = T2.letter AND T1.StuID = "
		    "T3.StuID", &a), "join_chain_one_on_at_end_of_input_repaired");
	TAP_INT_EQ(a.n_joins, 2, "join_chain_one_on_at_end_gives_both_preds");
	sql_analysis_release(&a);
	TAP_OK(lite("SELECT a.x FROM a JOIN b LEFT JOIN c ON a.x = c.x JOIN main.d AS e JOIN (SELECT y FROM f) "
		    "JOIN g USING (y) WHERE a.z IN (SELECT p.z FROM p JOIN q)", &a), "joins_without_on_anywhere_repaired");
	TAP_OK(a.n_tables == 9 && a.n_using_joins == 1, "joins_without_on_anywhere_facts");
	sql_analysis_release(&a);
	TAP_OK(lite("SELECT t.a FROM t CROSS JOIN u JOIN w NATURAL JOIN v JOIN x", &a),
	       "cross_and_natural_joins_get_no_on");
	TAP_INT_EQ(a.n_tables, 5, "cross_and_natural_joins_tables");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT 'T1'.name AS 'Full Name' FROM 'singer' AS 'T1' JOIN 'concert' c ON 'T1'.id = c.sid, "
		    "'it''s' WHERE c.year = 'x'", &a), "single_quoted_identifiers_repaired");
	int sg = table(&a, "singer"), cc = table(&a, "concert"), q = table(&a, "it's");
	TAP_OK(sg >= 0 && cc >= 0 && q >= 0, "single_quoted_table_names_unquoted");
	TAP_OK(sg >= 0 && strcmp(str_or_null(a.tables[sg].alias), "T1") == 0, "single_quoted_alias_unquoted");
	TAP_OK(column(&a, "name") >= 0 && a.columns[column(&a, "name")].table_ref == sg,
	       "single_quoted_qualifier_resolves");
	TAP_INT_EQ(a.n_joins, 1, "single_quoted_qualifier_join_pred");
	TAP_OK(literal(&a, "x") >= 0 && literal(&a, "Full Name") < 0, "single_quoted_string_stays_a_string");
	sql_analysis_release(&a);

	TAP_OK(lite("SELECT a FROM t ORDER BY a LIMIT 5, 10", &a), "limit_comma_repaired");
	TAP_OK(a.has_limit && a.has_order_by, "limit_comma_has_limit");
	sql_analysis_release(&a);

	t2s_error_clear(&err);
	memset(&a, 0, sizeof(a));
	TAP_INT_EQ(sql_analyze("SELECT a FROM t LIMIT 5, 10", SQL_DIALECT_POSTGRES, &a, &err), -T2S_ERR_SQL_INVALID,
		   "postgres_dialect_does_not_repair");
}

static void test_errors(void)
{
	struct sql_analysis a;
	struct t2s_error err;
	char buf[64];
	int r;

	memset(&a, 0, sizeof(a));
	t2s_error_clear(&err);
	r = sql_analyze("SELEC name FROM singer", SQL_DIALECT_SQLITE, &a, &err);
	TAP_INT_EQ(r, -T2S_ERR_SQL_INVALID, "unparseable_is_sql_invalid");
	TAP_OK(err.code == T2S_ERR_SQL_INVALID && strstr(err.message, "syntax error"), "unparseable_carries_parser_message");
	TAP_OK(a.tables == NULL && a.n_tables == 0, "failure_leaves_ret_untouched");

	/* == shrinks by one byte and `x` keeps its length: the position is the original's */
	const char *sql = "SELECT `a` FROM t WHERE a == 1 ORDER";
	t2s_error_clear(&err);
	r = sql_analyze(sql, SQL_DIALECT_SQLITE, &a, &err);
	snprintf(buf, sizeof(buf), "at character %d", (int)(strstr(sql, "ORDER") - sql) + 1 + 5);
	TAP_INT_EQ(r, -T2S_ERR_SQL_INVALID, "error_after_normalisation_is_sql_invalid");
	if (!TAP_OK(strstr(err.message, buf) != NULL, "error_position_counted_in_original_text"))
		printf("#   message '%s', want '%s'\n", err.message, buf);

	TAP_INT_EQ(sql_analyze(NULL, SQL_DIALECT_SQLITE, &a, &err), -T2S_ERR_INVALID, "null_sql_is_invalid");
	TAP_INT_EQ(sql_analyze("select 1", (enum sql_dialect)7, &a, &err), -T2S_ERR_INVALID, "bad_dialect_is_invalid");
	TAP_INT_EQ(sql_analyze("select 1", SQL_DIALECT_SQLITE, NULL, &err), -T2S_ERR_INVALID, "null_ret_is_invalid");

	TAP_OK(lite("SELECT 1; SELECT a FROM t", &a), "two_statements_analyse");
	TAP_OK(a.n_statements == 2 && a.n_blocks == 2, "two_statements_counted");
	sql_analysis_release(&a);
	sql_analysis_release(NULL);

	/* limits: deep nesting and too many items are refused, not crashed */
	size_t n = 1200, cap = n * 16 + 64, len = 0;
	char *deep = test_alloc(cap);
	for (size_t i = 0; i < n; i++)
		append(deep, cap, &len, "(SELECT ");
	append(deep, cap, &len, "1");
	for (size_t i = 0; i < n; i++)
		append(deep, cap, &len, ")");
	size_t stmt_cap = len + 16, stmt_len = 0;
	char *stmt = test_alloc(stmt_cap);
	append(stmt, stmt_cap, &stmt_len, "SELECT ");
	append(stmt, stmt_cap, &stmt_len, deep);
	r = sql_analyze(stmt, SQL_DIALECT_SQLITE, &a, &err);
	TAP_INT_EQ(r, -T2S_ERR_SQL_REJECTED, "deeply_nested_subqueries_refused");
	free(stmt);
	free(deep);

	cap = SQL_ANALYZE_MAX_ITEMS * 4 + 64;
	len = 0;
	char *wide = test_alloc(cap);
	append(wide, cap, &len, "SELECT a");
	for (int i = 0; i < SQL_ANALYZE_MAX_ITEMS + 10; i++)
		append(wide, cap, &len, ",a");
	append(wide, cap, &len, " FROM t");
	r = sql_analyze(wide, SQL_DIALECT_SQLITE, &a, &err);
	TAP_OK(r == -T2S_ERR_SQL_REJECTED && strstr(err.message, "too complex"), "too_many_columns_refused");
	free(wide);

	cap = 200000 + 64;
	len = 0;
	char *sum = test_alloc(cap);
	append(sum, cap, &len, "SELECT 1");
	for (int i = 0; i < 50000; i++)
		append(sum, cap, &len, "+1");
	r = sql_analyze(sum, SQL_DIALECT_POSTGRES, &a, &err);
	TAP_INT_EQ(r, -T2S_ERR_SQL_REJECTED, "deep_expression_refused");
	free(sum);
}

/* Analyse and release; true when the outcome is success or a documented error. */
static bool survives(const char *sql, enum sql_dialect dialect, int *ret_r)
{
	struct sql_analysis a;
	struct t2s_error err;
	int r = sql_analyze(sql, dialect, &a, &err);
	if (r == 0)
		sql_analysis_release(&a);
	if (ret_r)
		*ret_r = r;
	return r == 0 || r == -T2S_ERR_SQL_INVALID || r == -T2S_ERR_SQL_REJECTED;
}

static const char *const corpus[] = {
	"SELECT T1.name, count(*) FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.sid GROUP BY T1.id HAVING count(*) > 1",
	"WITH x AS (SELECT a FROM t) SELECT * FROM x WHERE a IN (SELECT b FROM `u`) ORDER BY 1 LIMIT 2, 3",
	"SELECT [a b], \"c\" FROM (SELECT * FROM t) JOIN s WHERE x == 'it''s' /* c */ -- d",
	"SELECT max(count(*)), (SELECT avg(x) FROM y WHERE y.k = t.k) FROM t GROUP BY 1 UNION SELECT 1, 2",
};

static void test_fuzz(void)
{
	unsigned seed = 12345;
	size_t runs = 0;
	bool ok = true;
	char buf[512];

	for (size_t c = 0; c < sizeof(corpus) / sizeof(corpus[0]); c++) {
		size_t len = strlen(corpus[c]);
		for (size_t cut = 0; cut <= len; cut++) { /* every truncation */
			memcpy(buf, corpus[c], cut);
			buf[cut] = '\0';
			ok &= survives(buf, SQL_DIALECT_SQLITE, NULL);
			ok &= survives(buf, SQL_DIALECT_POSTGRES, NULL);
			runs += 2;
		}
		for (int m = 0; m < 300; m++) { /* random byte mutations */
			static const char alphabet[] = "`[]\"'()=,.* \t\n-/;aAzZ019";
			memcpy(buf, corpus[c], len + 1);
			for (int k = 0; k < 3; k++) {
				seed = seed * 1103515245u + 12345u;
				size_t at = (seed >> 8) % len;
				seed = seed * 1103515245u + 12345u;
				buf[at] = alphabet[(seed >> 8) % (sizeof(alphabet) - 1)];
			}
			ok &= survives(buf, SQL_DIALECT_SQLITE, NULL);
			runs++;
		}
	}
	for (int m = 0; m < 500; m++) { /* random bytes, invalid UTF-8 included */
		size_t len = 1 + (size_t)m % (sizeof(buf) - 1);
		for (size_t k = 0; k < len; k++) {
			seed = seed * 1103515245u + 12345u;
			buf[k] = (char)(1 + (seed >> 8) % 255);
		}
		buf[len] = '\0';
		if (m % 2 == 0)
			memcpy(buf, "SELECT ", 7 < len ? 7 : len);
		ok &= survives(buf, m % 3 ? SQL_DIALECT_SQLITE : SQL_DIALECT_POSTGRES, NULL);
		runs++;
	}
	TAP_OK(ok, "fuzzed_statements_give_success_or_documented_errors");
	printf("# %zu fuzzed statements analysed\n", runs);
}

/* Path of Spider's dev.json, or NULL when the datasets are absent (caller frees). */
static char *spider_dev_json(void)
{
	const char *datasets = getenv("T2S_DATASETS");
	const char *root = getenv("T2S_SOURCE_ROOT");
	char path[4096];

	if (datasets && *datasets)
		snprintf(path, sizeof(path), "%s/spider-dev/dev.json", datasets);
	else
		snprintf(path, sizeof(path), "%s/../shared/datasets/spider-dev/dev.json", root && *root ? root : ".");
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	fclose(f);
	return strdup(path);
}

static void test_spider_dev(void)
{
	char *path = spider_dev_json();
	json_error_t jerr;

	if (!path) {
		tap_skip("spider_dev_gold_queries_analyse", "no Spider data (../shared/datasets)");
		return;
	}
	json_t *dev = json_load_file(path, 0, &jerr);
	free(path);
	if (!TAP_OK(json_is_array(dev), "spider_dev_json_reads"))
		return;
	size_t i, parsed = 0, total = 0;
	bool ok = true;
	const json_t *q;
	json_array_foreach(dev, i, q) {
		const char *sql = json_string_value(json_object_get(q, "query"));
		int r;
		if (!sql)
			continue;
		total++;
		ok &= survives(sql, SQL_DIALECT_SQLITE, &r);
		if (r == 0)
			parsed++;
		else
			printf("#   not analysed (%d): %s\n", r, sql);
	}
	json_decref(dev);
	printf("# Spider dev gold: %zu of %zu queries analysed\n", parsed, total);
	TAP_OK(ok && total == 1034, "spider_dev_gold_queries_analyse_without_crash");
	TAP_INT_EQ(parsed, total, "spider_dev_gold_queries_all_parse");
}

#define THREADS 8

static void *thread_main(void *arg)
{
	bool *ok = arg;
	for (int i = 0; i < 50 && *ok; i++) {
		struct sql_analysis a;
		if (sql_analyze(corpus[i % 4], SQL_DIALECT_SQLITE, &a, NULL) != 0) {
			*ok = false;
			break;
		}
		if (i % 4 == 0)
			*ok = a.n_tables == 2 && a.n_joins == 1 && a.n_blocks == 1 &&
			      strcmp(str_or_null(a.tables[0].alias), "T1") == 0;
		sql_analysis_release(&a);
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t threads[THREADS];
	bool ok[THREADS];
	bool all = true;

	for (int i = 0; i < THREADS; i++) {
		ok[i] = true;
		pthread_create(&threads[i], NULL, thread_main, &ok[i]);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(threads[i], NULL);
		all &= ok[i];
	}
	TAP_OK(all, "concurrent_calls_give_the_same_facts");
}

int main(void)
{
	test_table_refs();
	test_join_predicates();
	test_grouping();
	test_aggregate_misuse();
	test_blocks();
	test_ctes();
	test_literals();
	test_sqlite_syntax();
	test_errors();
	test_fuzz();
	test_spider_dev();
	test_threads();
	return tap_done();
}
