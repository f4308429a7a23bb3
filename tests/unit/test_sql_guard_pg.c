/*
 * test_sql_guard_pg.c - specification of the PostgreSQL statement guard
 * (pipeline/sql_guard_pg.c): which statements pass, which are refused, with
 * which code, and that the message names what was refused.
 *
 * Each case is one TAP line; a failing line prints the code and message the
 * guard gave.  Run under ASan/UBSan/LSan.
 *
 * Function calls are judged against a database's functions; here a small
 * pg_functions built from the pg_proc facts of PostgreSQL 15 (volatility,
 * SECURITY DEFINER, kind, argument counts) for the functions the cases call,
 * plus a few user-defined ones.  The real catalog is exercised by
 * tests/integration/test_execute_pg.py and the hostile corpus.
 */
#include "pipeline/sql/sql_guard_pg.h"
#include "pipeline/sql/sql_guard_pg_relations.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/tap.h"

/* pg_proc facts: schema, name, nargs, nargdefaults, variadic, volatility, security definer, kind. */
static const struct pg_function_info fixture_functions[] = {
	{"pg_catalog", "lower", 1, 0, false, 'i', false, 'f'},
	{"pg_catalog", "row_number", 0, 0, false, 'i', false, 'w'},
	{"pg_catalog", "sum", 1, 0, false, 'i', false, 'a'},
	{"pg_catalog", "count", 0, 0, false, 'i', false, 'a'},
	{"pg_catalog", "count", 1, 0, false, 'i', false, 'a'},
	{"pg_catalog", "percentile_cont", 2, 0, false, 'i', false, 'a'},
	{"pg_catalog", "current_setting", 1, 0, false, 's', false, 'f'},
	{"pg_catalog", "current_setting", 2, 0, false, 's', false, 'f'},
	{"pg_catalog", "currval", 1, 0, false, 'v', false, 'f'},
	{"pg_catalog", "pg_current_xact_id_if_assigned", 0, 0, false, 's', false, 'f'},
	{"pg_catalog", "now", 0, 0, false, 's', false, 'f'},
	{"pg_catalog", "version", 0, 0, false, 's', false, 'f'},
	{"pg_catalog", "generate_series", 2, 0, false, 'i', false, 'f'},
	{"pg_catalog", "generate_series", 3, 0, false, 'i', false, 'f'},
	{"pg_catalog", "generate_series", 3, 0, false, 's', false, 'f'},
	{"pg_catalog", "unnest", 1, 0, false, 'i', false, 'f'},
	{"pg_catalog", "concat", 1, 0, true, 's', false, 'f'},
	{"pg_catalog", "to_json", 1, 0, false, 's', false, 'f'},
	{"pg_catalog", "random", 0, 0, false, 'v', false, 'f'},
	{"pg_catalog", "clock_timestamp", 0, 0, false, 'v', false, 'f'},
	{"pg_catalog", "setseed", 1, 0, false, 'v', false, 'f'},
	{"pg_catalog", "pg_sleep", 1, 0, false, 'v', false, 'f'},
	{"pg_catalog", "ts_rewrite", 2, 0, false, 'v', false, 'f'},
	{"pg_catalog", "ts_rewrite", 3, 0, false, 'i', false, 'f'},
	{"pg_catalog", "pg_terminate_backend", 2, 1, false, 'v', false, 'f'},
	/* STABLE, yet refused by the guard's short deny list */
	{"pg_catalog", "table_to_xml", 4, 0, false, 's', false, 'f'},
	{"pg_catalog", "schema_to_xml", 4, 0, false, 's', false, 'f'},
	{"pg_catalog", "database_to_xml", 3, 0, false, 's', false, 'f'},
	{"pg_catalog", "txid_current", 0, 0, false, 's', false, 'f'},
	{"pg_catalog", "pg_current_xact_id", 0, 0, false, 's', false, 'f'},
	/* user-defined */
	{"public", "evil_definer", 0, 0, false, 's', true, 'f'},
	{"public", "evil_proc", 0, 0, false, 'v', false, 'p'},
	{"public", "my_stable", 1, 0, false, 's', false, 'f'},
	{"public", "harmless_looking", 1, 0, false, 'v', false, 'f'},
	{"public", "row_hook", 1, 0, false, 'v', false, 'f'}, /* takes a table's row: t.row_hook calls it */
	{"shop", "clock_timestamp", 0, 0, false, 'v', false, 'f'}, /* not the built-in: judged by what it is */
};

/*
 * Functions refused whatever their name: VOLATILE in pg_catalog (as
 * PostgreSQL 15 declares them); the checks call each with one argument.
 */
static const char *const volatile_builtins[] = {
	"pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_ls_waldir", "pg_stat_file",
	"pg_file_write", "pg_cancel_backend", "pg_reload_conf",
	"pg_rotate_logfile", "pg_switch_wal", "pg_promote", "pg_create_logical_replication_slot",
	"pg_create_restore_point", "pg_drop_replication_slot", "pg_logical_slot_get_changes",
	"pg_replication_origin_create", "pg_import_system_collations", "pg_export_snapshot",
	"pg_advisory_lock", "pg_advisory_xact_lock", "pg_try_advisory_lock", "pg_notify",
	"set_config", "dblink", "dblink_exec", "dblink_connect", "lo_import", "lo_export",
	"lo_unlink", "nextval", "setval", "query_to_xml", "query_to_xml_and_xmlschema",
	"cursor_to_xml", "ts_stat", "pg_stat_reset", "pg_sleep_for", "pg_blocking_pids",
	"pg_logical_emit_message", "lo_get",
};

static struct pg_functions *functions;

static void build_functions(void)
{
	functions = pg_functions_new();
	int bad = !functions;
	for (size_t i = 0; !bad && i < sizeof(fixture_functions) / sizeof(fixture_functions[0]); i++)
		bad = pg_functions_add(functions, &fixture_functions[i]) < 0;
	for (size_t i = 0; !bad && i < sizeof(volatile_builtins) / sizeof(volatile_builtins[0]); i++) {
		struct pg_function_info f = {"pg_catalog", volatile_builtins[i], 1, 0, true, 'v', false, 'f'};
		bad = pg_functions_add(functions, &f) < 0;
	}
	/* An operator and conversions into two types that run VOLATILE functions (created by the database's owner). */
	struct pg_function_info vol_eq = {"public", "vol_eq", 2, 0, false, 'v', false, 'f'};
	struct pg_function_info vol_cast = {"public", "vol_cast", 1, 0, false, 'v', false, 'f'};
	struct pg_function_info definer_chk = {"public", "definer_chk", 1, 0, false, 's', true, 'f'};
	struct pg_function_info pure = {"public", "pure_eq", 2, 0, false, 'i', false, 'f'};
	bad = bad || pg_functions_add_operator(functions, "public", "===", &vol_eq) < 0;
	bad = bad || pg_functions_add_operator(functions, "public", "=~=", &pure) < 0; /* admitted: not kept */
	bad = bad || pg_functions_add_cast_target(functions, "public", "mytype", &vol_cast) < 0;
	bad = bad || pg_functions_add_cast_target(functions, "public", "posint", &definer_chk) < 0;
	bad = bad || pg_functions_add_cast_target(functions, "public", "goodtype", &pure) < 0;
	bad = bad || pg_functions_seal(functions) < 0;
	TAP_OK(!bad, "builds_fixture_functions");
}

static int check(const char *sql, struct t2s_error *err)
{
	return sql_guard_pg_check(sql, &(struct sql_guard_pg_scope){.functions = functions}, err);
}

/*
 * Check sql against the guard: the return must be -want_code (0 when
 * allowed), and when want_text is not NULL the message must contain it.
 */
static void expect(const char *name, const char *sql, enum t2s_code want_code, const char *want_text)
{
	struct t2s_error err;
	int r;

	t2s_error_clear(&err);
	r = check(sql, &err);
	bool ok = r == -(int)want_code;
	if (ok && want_code != T2S_OK)
		ok = err.code == want_code;
	if (ok && want_text)
		ok = strstr(err.message, want_text) != NULL;
	if (!TAP_OK(ok, name))
		printf("#   got %d (%s) '%s', want %d '%s'\n", r, t2s_code_slug(err.code), err.message,
		       -(int)want_code, want_text ? want_text : "");
}

static void allow(const char *name, const char *sql)
{
	expect(name, sql, T2S_OK, NULL);
}

static void reject(const char *name, const char *sql, const char *want_text)
{
	expect(name, sql, T2S_ERR_SQL_REJECTED, want_text);
}

static void test_allowed(void)
{
	allow("allows_plain_select", "select a, b from t where a > 1 order by a limit 10");
	allow("allows_joins", "select t.a, u.b from t join u on t.id = u.t_id left join v using (id)");
	allow("allows_subqueries", "select * from (select a from t) s where a in (select a from u) "
				   "and exists (select 1 from v where v.a = s.a)");
	allow("allows_with_select", "with x as (select a from t) select * from x");
	allow("allows_recursive_cte",
	      "with recursive r(n) as (select 1 union all select n + 1 from r where n < 10) select n from r");
	allow("allows_values", "values (1, 'a'), (2, 'b')");
	allow("allows_union_intersect_except",
	      "select a from t union select a from u intersect select a from v except select 1");
	allow("allows_window_functions",
	      "select a, row_number() over (partition by b order by c), sum(d) over w from t window w as (order by a)");
	allow("allows_lower", "select lower(name) from singer");
	allow("allows_current_setting", "select current_setting('x')");
	allow("allows_comments", "/* block */ select 1 -- trailing comment\n");
	allow("allows_trailing_semicolon", "select 1;");
	allow("allows_quoted_identifiers_named_like_keywords",
	      "select \"insert\", \"delete from t; drop\" from \"update\" as \"for update\"");
	allow("allows_string_literal_holding_sql", "select 'drop table x; select pg_read_file(''/etc/passwd'')'");
	allow("allows_column_named_like_denied_function", "select pg_read_file, nextval from t");
	allow("allows_table_shorthand", "table singer");
	allow("allows_aggregates_group_by_having",
	      "select country, count(*) from singer group by country having count(*) > 1");
	allow("allows_read_only_sequence_and_xact_functions",
	      "select currval('s'), pg_current_xact_id_if_assigned(), now(), version()");
	allow("allows_lateral_and_set_returning_function",
	      "select * from t, lateral generate_series(1, t.n) g, unnest(array[1, 2]) u");
	allow("allows_case_cast_and_like",
	      "select case when a::int > 0 then 'x' else 'y' end from t where b ilike '%fremont%'");
}

static void test_rejected_statement_kinds(void)
{
	static const struct {
		const char *name, *sql, *keyword;
	} cases[] = {
		{"rejects_insert", "insert into t values (1)", "got INSERT"},
		{"rejects_update", "update t set a = 1", "got UPDATE"},
		{"rejects_delete", "delete from t", "got DELETE"},
		{"rejects_merge", "merge into t using s on t.id = s.id when matched then delete", "got MERGE"},
		{"rejects_truncate", "truncate t", "got TRUNCATE"},
		{"rejects_drop", "drop table t", "got DROP"},
		{"rejects_create_table", "create table t (a int)", "got CREATE TABLE"},
		{"rejects_create_table_as", "create table t as select 1", "got CREATE TABLE AS"},
		{"rejects_alter_table", "alter table t add column b int", "got ALTER TABLE"},
		{"rejects_grant", "grant select on t to public", "got GRANT"},
		{"rejects_revoke", "revoke select on t from public", "got REVOKE"},
		{"rejects_copy", "copy t to stdout", "got COPY"},
		{"rejects_copy_from_program", "copy t from program 'id'", "got COPY"},
		{"rejects_set", "set statement_timeout = 0", "got SET"},
		{"rejects_set_transaction_read_write", "set transaction read write", "got SET"},
		{"rejects_reset", "reset all", "got RESET"},
		{"rejects_begin", "begin", "got BEGIN"},
		{"rejects_commit", "commit", "got COMMIT"},
		{"rejects_rollback", "rollback", "got ROLLBACK"},
		{"rejects_lock", "lock table t", "got LOCK"},
		{"rejects_vacuum", "vacuum t", "got VACUUM"},
		{"rejects_analyze", "analyze t", "got ANALYZE"},
		{"rejects_call", "call p()", "got CALL"},
		{"rejects_do", "do 'begin perform 1; end'", "got DO"},
		{"rejects_prepare", "prepare p as select 1", "got PREPARE"},
		{"rejects_execute", "execute p", "got EXECUTE"},
		{"rejects_listen", "listen c", "got LISTEN"},
		{"rejects_notify", "notify c", "got NOTIFY"},
		{"rejects_explain_analyze", "explain analyze select 1", "got EXPLAIN"},
		{"rejects_show", "show search_path", "got SHOW"},
		{"rejects_declare_cursor", "declare c cursor for select 1", "got DECLARE CURSOR"},
		{"rejects_checkpoint", "checkpoint", "got CHECKPOINT"},
		{"rejects_refresh_materialized_view", "refresh materialized view v", "got REFRESH MATERIALIZED VIEW"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char want[128];
		snprintf(want, sizeof(want), "only SELECT, WITH and VALUES statements are allowed, %s",
			 cases[i].keyword);
		reject(cases[i].name, cases[i].sql, want);
	}
}

static void test_statement_count(void)
{
	reject("rejects_two_selects", "select 1; select 2", "exactly one statement is allowed, got 2");
	reject("rejects_select_then_drop", "select 1; drop table x", "exactly one statement is allowed, got 2");
	reject("rejects_three_statements_with_empty_ones", ";select 1;;select 2;select 3;",
	       "exactly one statement is allowed, got 3");
	reject("rejects_empty_string", "", "empty statement");
	reject("rejects_whitespace_only", " \n\t ", "empty statement");
	reject("rejects_line_comment_only", "-- select 1", "empty statement");
	reject("rejects_block_comment_only", "/* select 1 */", "empty statement");
	reject("rejects_semicolon_only", ";", "empty statement");
}

static void test_nested_writes_and_clauses(void)
{
	reject("rejects_delete_inside_cte", "with x as (delete from t returning *) select * from x",
	       "data-modifying statement inside WITH is not allowed, got DELETE");
	reject("rejects_insert_inside_cte", "with x as (insert into t values (1) returning a) select * from x",
	       "data-modifying statement inside WITH is not allowed, got INSERT");
	reject("rejects_update_inside_cte_not_selected",
	       "with x as (update t set a = 1 returning a), y as (select 1) select * from y",
	       "data-modifying statement inside WITH is not allowed, got UPDATE");
	reject("rejects_insert_inside_cte_of_subquery",
	       "select * from (with x as (insert into t values (1) returning a) select * from x) s",
	       "data-modifying statement inside WITH is not allowed, got INSERT");
	reject("rejects_select_into", "select * into new_t from t", "SELECT INTO is not allowed");
	reject("rejects_select_into_temp", "select 1 into temp x", "SELECT INTO is not allowed");
	reject("rejects_for_update", "select * from t for update", "FOR UPDATE/SHARE is not allowed, got FOR UPDATE");
	reject("rejects_for_share", "select * from t for share", "FOR UPDATE/SHARE is not allowed, got FOR SHARE");
	reject("rejects_for_no_key_update", "select * from t for no key update",
	       "FOR UPDATE/SHARE is not allowed, got FOR NO KEY UPDATE");
	reject("rejects_for_key_share", "select * from t for key share skip locked",
	       "FOR UPDATE/SHARE is not allowed, got FOR KEY SHARE");
	reject("rejects_for_update_in_subquery", "select * from (select * from t for update nowait) s",
	       "FOR UPDATE/SHARE is not allowed");
	reject("rejects_for_update_in_cte", "with x as (select * from t for update) select * from x",
	       "FOR UPDATE/SHARE is not allowed");
}

static void test_denied_functions(void)
{
	size_t i;

	for (i = 0; i < sizeof(volatile_builtins) / sizeof(volatile_builtins[0]); i++) {
		char name[128], sql[256], want[160];
		snprintf(name, sizeof(name), "rejects_volatile_function_%s", volatile_builtins[i]);
		snprintf(sql, sizeof(sql), "select %s('x')", volatile_builtins[i]);
		snprintf(want, sizeof(want), "function %s is not allowed: it is VOLATILE", volatile_builtins[i]);
		reject(name, sql, want);
	}
	static const char *const stable_denied[] = {"table_to_xml", "schema_to_xml", "database_to_xml",
						    "txid_current", "pg_current_xact_id"};
	for (i = 0; i < sizeof(stable_denied) / sizeof(stable_denied[0]); i++) {
		char name[128], sql[256], want[160];
		snprintf(name, sizeof(name), "rejects_deny_listed_stable_function_%s", stable_denied[i]);
		snprintf(sql, sizeof(sql), "select %s()", stable_denied[i]);
		snprintf(want, sizeof(want), "function %s is not allowed", stable_denied[i]);
		reject(name, sql, want);
	}

	reject("rejects_schema_qualified_denied_function", "select pg_catalog.pg_read_file('/etc/passwd')",
	       "function pg_read_file is not allowed");
	reject("rejects_upper_case_denied_function", "SELECT PG_READ_FILE('/etc/passwd')",
	       "function pg_read_file is not allowed");
	reject("rejects_quoted_denied_function", "select \"pg_read_file\"('/etc/passwd')",
	       "function pg_read_file is not allowed");
	expect("quoted_upper_case_name_is_no_function_of_the_database", "select \"PG_READ_FILE\"('/etc/passwd')",
	       T2S_ERR_SQL_INVALID, "function PG_READ_FILE taking 1 argument does not exist in this database");
	reject("rejects_set_config_in_subquery",
	       "select * from t where a = (select set_config('statement_timeout', '0', false))",
	       "function set_config is not allowed");
	reject("rejects_denied_function_in_from", "select * from pg_ls_dir('.')", "function pg_ls_dir is not allowed");
	reject("rejects_denied_function_as_argument", "select lower(pg_read_file('x'))",
	       "function pg_read_file is not allowed");
	reject("rejects_denied_function_in_cte", "with x as (select nextval('s')) select * from x",
	       "function nextval is not allowed");
	reject("rejects_denied_function_in_values", "values (1), (pg_advisory_lock(42))",
	       "function pg_advisory_lock is not allowed");
	reject("rejects_denied_function_in_order_by", "select a from t order by setval('s', 1)",
	       "function setval is not allowed");
	reject("rejects_denied_function_in_case", "select case when a then dblink_exec('x', 'y') end from t",
	       "function dblink_exec is not allowed");
	reject("rejects_denied_function_in_union_arm", "select 1 union all select lo_import('/etc/passwd')",
	       "function lo_import is not allowed");
	reject("rejects_query_to_xml_running_delete", "select query_to_xml('delete from t', true, true, '')",
	       "function query_to_xml is not allowed");
}

/* Function calls admitted by what the function is, not by its name (issue 10, item 1). */
static void test_functions_by_what_they_are(void)
{
	reject("rejects_ts_rewrite_running_sql_text",
	       "select ts_rewrite('a'::tsquery, 'select pg_terminate_backend(pid) from pg_stat_activity')",
	       "function ts_rewrite is not allowed: it is VOLATILE");
	allow("allows_ts_rewrite_with_three_queries", "select ts_rewrite('a & b'::tsquery, 'a'::tsquery, 'c'::tsquery)");
	reject("rejects_pg_sleep", "select pg_sleep(10)", "function pg_sleep is not allowed: it is VOLATILE");
	reject("rejects_pg_terminate_backend_with_default_argument", "select pg_terminate_backend(42)",
	       "function pg_terminate_backend is not allowed");
	reject("rejects_user_volatile_function_whatever_its_name", "select harmless_looking(a) from t",
	       "function harmless_looking is not allowed: it is VOLATILE");
	reject("rejects_security_definer_function_even_when_stable", "select evil_definer()",
	       "function evil_definer is not allowed: it is SECURITY DEFINER");
	reject("rejects_procedure_called_as_function", "select evil_proc()", "function evil_proc is not allowed: it is a procedure");
	allow("allows_user_stable_function", "select public.my_stable(a) from t");
	allow("allows_harmless_volatile_random_and_clock", "select random(), pg_catalog.clock_timestamp(), currval('s')");
	reject("rejects_setseed_which_changes_the_session", "select setseed(0.5)", "function setseed is not allowed");
	reject("rejects_user_function_named_like_a_harmless_builtin", "select shop.clock_timestamp()",
	       "function clock_timestamp is not allowed: it is VOLATILE");
	reject("rejects_unqualified_name_when_any_schema_has_a_volatile_one", "select clock_timestamp()",
	       "function clock_timestamp is not allowed");
	allow("allows_ordered_set_aggregate_counting_within_group",
	      "select percentile_cont(0.5) within group (order by a) from t");
	allow("allows_variadic_function", "select concat(a, b, 'c', 1, 2) from t");
	allow("allows_schema_qualified_builtin", "select pg_catalog.lower(a) from t");
	expect("unknown_function_is_sql_invalid", "select no_such_function(1)", T2S_ERR_SQL_INVALID,
	       "function no_such_function taking 1 argument does not exist in this database");
	expect("known_function_with_wrong_argument_count_is_sql_invalid", "select lower(a, b) from t",
	       T2S_ERR_SQL_INVALID, "function lower taking 2 arguments does not exist");
	expect("function_in_wrong_schema_is_sql_invalid", "select shop.lower(a) from t", T2S_ERR_SQL_INVALID,
	       "function shop.lower taking 1 argument does not exist");
	reject("rejects_volatile_function_called_as_a_column", "select t.row_hook from t",
	       "function row_hook (called as a column: x.row_hook) is not allowed");
	reject("rejects_volatile_function_called_through_indirection", "select (t).row_hook from t",
	       "function row_hook (called as a column: x.row_hook) is not allowed");
	reject("rejects_volatile_function_called_as_qualified_column", "select public.t.row_hook from public.t",
	       "function row_hook");
	allow("allows_column_named_like_a_stable_function", "select t.lower, t.a from t");
	allow("allows_star_and_plain_columns", "select t.*, row_hook from t");

	struct t2s_error err;
	t2s_error_clear(&err);
	int r = sql_guard_pg_check("select lower('a')", NULL, &err);
	if (!TAP_OK(r == -T2S_ERR_SQL_REJECTED && strstr(err.message, "functions are not known"),
		    "without_the_database_functions_every_call_is_refused"))
		printf("#   got %d '%s'\n", r, err.message);
	TAP_INT_EQ(sql_guard_pg_check("select 1, a from t", NULL, NULL), 0, "without_functions_plain_queries_pass");
}

static void test_invalid_and_limits(void)
{
	expect("syntax_error_is_sql_invalid_with_position", "selec 1", T2S_ERR_SQL_INVALID,
	       "syntax error at or near \"selec\" at character 1");
	expect("unterminated_string_is_sql_invalid", "select 'abc", T2S_ERR_SQL_INVALID, "unterminated");
	expect("syntax_error_in_second_statement_is_sql_invalid", "select 1; select from where",
	       T2S_ERR_SQL_INVALID, "at character");
	expect("invalid_utf8_is_sql_invalid", "select '\xff\xfe'", T2S_ERR_SQL_INVALID, "not valid UTF-8");
	expect("null_sql_is_invalid_request", NULL, T2S_ERR_INVALID, NULL);

	/* A statement exactly at the limit is looked at; one byte more is not. */
	char *sql = malloc((size_t)SQL_GUARD_PG_MAX_LEN + 2);
	if (!TAP_OK(sql != NULL, "allocates_long_statement"))
		return;
	memset(sql, ' ', (size_t)SQL_GUARD_PG_MAX_LEN + 1);
	memcpy(sql, "select 1", 8);
	sql[SQL_GUARD_PG_MAX_LEN] = '\0';
	allow("allows_statement_of_max_len", sql);
	sql[SQL_GUARD_PG_MAX_LEN] = ' ';
	sql[SQL_GUARD_PG_MAX_LEN + 1] = '\0';
	reject("rejects_statement_longer_than_max_len", sql, "too long");
	free(sql);

	/* 1000 nested scalar subqueries parse, but their tree is deeper than the guard walks. */
	enum { LEVELS = 1000 };
	size_t cap = LEVELS * 9 + 16, n = 0;
	char *deep = malloc(cap);
	if (!TAP_OK(deep != NULL, "allocates_deep_statement"))
		return;
	n += (size_t)snprintf(deep + n, cap - n, "select ");
	for (int i = 0; i < LEVELS; i++)
		n += (size_t)snprintf(deep + n, cap - n, "(select ");
	n += (size_t)snprintf(deep + n, cap - n, "1");
	for (int i = 0; i < LEVELS; i++)
		n += (size_t)snprintf(deep + n, cap - n, ")");
	reject("rejects_too_deeply_nested_statement", deep, "statement too deeply nested");
	free(deep);

	/* A flat chain "1+1+...": about 150,000 tree levels, which overflows an
	 * 8 MiB thread stack in libpg_query's tree printer unless it has more. */
	enum { TERMS = 150000 };
	char *chain = malloc(TERMS * 2 + 16);
	if (!TAP_OK(chain != NULL, "allocates_long_operator_chain"))
		return;
	memcpy(chain, "select 1", 8);
	n = 8;
	for (int i = 1; i < TERMS; i++) {
		chain[n++] = '+';
		chain[n++] = '1';
	}
	chain[n] = '\0';
	reject("rejects_long_operator_chain_without_crashing", chain, "statement too deeply nested");
	free(chain);

	allow("allows_moderately_nested_statement",
	      "select (select (select (select (select (select (select (select 1)))))))");
}

static void test_error_argument_optional(void)
{
	TAP_INT_EQ(check("insert into t values (1)", NULL), -T2S_ERR_SQL_REJECTED,
		   "rejects_without_error_struct");
	TAP_INT_EQ(check("select 1", NULL), 0, "allows_without_error_struct");
}

/* Threads run the same mixed checks at once and must all get the expected answers. */
static void *check_many(void *arg)
{
	long bad = 0;
	(void)arg;
	for (int i = 0; i < 200; i++) {
		struct t2s_error err;
		if (check("with x as (select a from t) select lower(a) from x", &err) != 0)
			bad++;
		if (check("select pg_read_file('x')", &err) != -T2S_ERR_SQL_REJECTED ||
		    !strstr(err.message, "pg_read_file"))
			bad++;
		if (check("selec 1", &err) != -T2S_ERR_SQL_INVALID)
			bad++;
	}
	return (void *)bad;
}

static void test_threads(void)
{
	pthread_t threads[4];
	long bad = 0;
	int started = 0;

	for (int i = 0; i < 4; i++)
		if (pthread_create(&threads[i], NULL, check_many, NULL) == 0)
			started++;
	for (int i = 0; i < started; i++) {
		void *ret;
		pthread_join(threads[i], &ret);
		bad += (long)ret;
	}
	TAP_OK(started == 4 && bad == 0, "gives_same_answers_from_concurrent_threads");
}

static void *check_once(void *arg)
{
	*(int *)arg = check("select 1", NULL);
	return NULL;
}

/*
 * A thread-per-connection server calls the guard from threads that come and
 * go.  libpg_query used directly would take one pthread key per such thread
 * and never give it back (about 1024 exist per process), so afterwards no
 * library could create a key.  Here 1100 threads each check once, then a key
 * must still be available.
 */
static void test_short_lived_threads(void)
{
	int failures = 0, result;
	pthread_key_t key;

	for (int i = 0; i < 1100; i++) {
		pthread_t thread;
		result = -1;
		if (pthread_create(&thread, NULL, check_once, &result) != 0 || pthread_join(thread, NULL) != 0 ||
		    result != 0)
			failures++;
	}
	TAP_INT_EQ(failures, 0, "allows_checks_from_many_short_lived_threads");
	int rc = pthread_key_create(&key, NULL);
	TAP_INT_EQ(rc, 0, "leaves_pthread_keys_available_after_many_threads");
	if (rc == 0)
		pthread_key_delete(key);
}

/* Operators and casts run functions without naming them: judged by the function they run. */
static void test_operators_and_casts(void)
{
	reject("refuses_operator_running_volatile_function", "select 1 operator(public.===) 2", "VOLATILE");
	reject("refuses_unqualified_operator_running_volatile_function", "select a === b from t", "vol_eq");
	reject("refuses_volatile_operator_in_any_sublink", "select 1 where 1 === any (select 2)", "===");
	reject("refuses_volatile_operator_in_any_array", "select 1 where 1 === any (array[2])", "===");
	reject("refuses_volatile_operator_in_order_by_using", "select a from t order by a using ===", "===");
	reject("refuses_volatile_operator_inside_subquery", "select (select 1 where 2 === 3)", "===");
	reject("refuses_cast_running_volatile_function", "select 'x'::text::mytype", "cast to type mytype");
	reject("refuses_qualified_cast_running_volatile_function", "select cast(v as public.mytype) from t",
	       "vol_cast");
	reject("refuses_literal_cast_to_refused_type", "select mytype '(x)'", "mytype");
	reject("refuses_array_cast_to_refused_element_type", "select array['x']::mytype[]", "mytype");
	reject("refuses_function_style_cast_to_refused_type", "select mytype('x'::text)", "mytype");
	reject("refuses_cast_to_domain_whose_check_is_security_definer", "select 5::posint", "SECURITY DEFINER");
	allow("allows_operator_of_admitted_function", "select 1 operator(public.=~=) 2");
	allow("allows_cast_to_type_whose_functions_are_admitted", "select 'x'::goodtype");
	allow("allows_same_operator_name_in_another_schema", "select 1 operator(pg_catalog.===) 2");
	allow("allows_builtin_operators_and_casts",
	      "select 1 = 1, 1 + 2, 'a' || 'b', 'abc' like 'a%', 'x' ilike 'X', 3 between 1 and 5, "
	      "2 in (1, 2), nullif(1, 2), 1 is distinct from 2, '1'::int, 1::text, '2024-01-01'::date, "
	      "cast(1 as bigint), date '2024-01-01', case 1 when 1 then 'a' end, 1 < all (select 2) "
	      "from t order by a using <");
}

/* A database configured with schemas public and sales (databases[].schemas). */
static const char *const configured_schemas[] = {"public", "sales"};

/*
 * Check sql against a scope with the fixture functions and schemas (NULL:
 * every non-system schema): allowed when want_text is NULL, else refused
 * with a message holding want_text.
 */
static void expect_scope(const char *name, const char *sql, const char *const *schemas, size_t n_schemas,
			 const char *want_text)
{
	struct sql_guard_pg_scope scope = {.functions = functions, .schemas = schemas, .n_schemas = n_schemas};
	struct t2s_error err;

	t2s_error_clear(&err);
	int r = sql_guard_pg_check(sql, &scope, &err);
	bool ok = want_text ? r == -T2S_ERR_SQL_REJECTED && strstr(err.message, want_text) != NULL : r == 0;
	if (!TAP_OK(ok, name))
		printf("#   got %d '%s', want %s '%s'\n", r, err.message, want_text ? "refusal" : "0",
		       want_text ? want_text : "");
}

static void allow_in(const char *name, const char *sql)
{
	expect_scope(name, sql, configured_schemas, 2, NULL);
}

static void reject_in(const char *name, const char *sql, const char *want_text)
{
	expect_scope(name, sql, configured_schemas, 2, want_text);
}

static void test_relations_allowed(void)
{
	allow_in("relations_joins_of_the_configured_schemas_pass",
		 "select o.id, t.a from sales.orders o join t on t.id = o.t_id join public.u using (id)");
	allow_in("relations_information_schema_tables_and_columns_pass",
		 "select table_name, (select count(*) from information_schema.columns c where c.table_name = t.table_name) "
		 "from information_schema.tables t where table_schema = 'public'");
	allow_in("relations_pg_tables_passes_qualified_or_not",
		 "select tablename from pg_tables union select tablename from pg_catalog.pg_tables");
	allow_in("relations_cte_named_like_a_catalog_is_the_cte",
		 "with pg_stat_activity as (select 1 as query) select query from pg_stat_activity");
	allow_in("relations_recursive_cte_named_like_a_catalog_is_the_cte",
		 "with recursive pg_locks(n) as (select 1 union all select n + 1 from pg_locks where n < 3) "
		 "select n from pg_locks");
	allow_in("relations_cte_is_visible_in_subqueries_and_both_union_sides",
		 "with pg_roles as (select 1 as a) select a from (select a from pg_roles) s "
		 "where a in (select a from pg_roles) union select a from pg_roles");
	allow_in("relations_earlier_cte_is_visible_in_a_later_one",
		 "with pg_user as (select 1 as x), b as (select x from pg_user) select x from b");
	allow_in("relations_aliases_named_like_catalogs_are_not_relations",
		 "select pg_database.a from t as pg_database, (select 1 as b) as pg_authid");
	allow_in("relations_unqualified_names_pass", "select * from anything");
	expect_scope("relations_any_non_system_schema_passes_without_configured_schemas",
		     "select * from sales.orders, other.secret", NULL, 0, NULL);
	TAP_INT_EQ(sql_guard_pg_check("select * from other.t", NULL, NULL), 0,
		   "relations_without_a_scope_every_non_system_schema_passes");
}

static void test_relations_refused(void)
{
	static const char *const catalogs[] = {
		"pg_stat_activity", "pg_database", "pg_roles", "pg_authid", "pg_settings", "pg_shadow", "pg_user",
		"pg_locks", "pg_prepared_xacts", "pg_file_settings", "pg_hba_file_rules", "pg_stat_statements",
		"pg_stat_user_tables", "pg_stat_database", "pg_class", "pg_namespace", "pg_replication_slots",
	};
	char sql[128], name[128], want[128];

	for (size_t i = 0; i < sizeof(catalogs) / sizeof(catalogs[0]); i++) {
		snprintf(sql, sizeof(sql), "select * from %s", catalogs[i]);
		snprintf(name, sizeof(name), "relations_unqualified_%s_is_refused_as_pg_catalogs", catalogs[i]);
		snprintf(want, sizeof(want), "relation %s (pg_catalog.%s) is not allowed", catalogs[i], catalogs[i]);
		reject_in(name, sql, want);
		snprintf(sql, sizeof(sql), "select * from pg_catalog.%s", catalogs[i]);
		snprintf(name, sizeof(name), "relations_pg_catalog_%s_is_refused", catalogs[i]);
		snprintf(want, sizeof(want), "relation pg_catalog.%s is not allowed", catalogs[i]);
		reject_in(name, sql, want);
	}
	reject_in("relations_extension_view_in_a_configured_schema_is_refused",
		  "select query from public.pg_stat_statements", "relation public.pg_stat_statements is not allowed");
	reject_in("relations_other_information_schema_views_are_refused",
		  "select * from information_schema.schemata", "relation information_schema.schemata is not allowed");
	reject_in("relations_toast_and_temp_schemas_are_refused", "select * from pg_toast.pg_toast_2619",
		  "relation pg_toast.pg_toast_2619 is not allowed");
	reject_in("relations_another_schema_is_refused_naming_the_configured_ones", "select * from other.secret",
		  "relation other.secret is not allowed: schema other is not one of this database's schemas "
		  "(public, sales)");
	expect_scope("relations_system_schemas_are_refused_without_configured_schemas",
		     "select * from information_schema.views", NULL, 0, "relation information_schema.views");
	reject_in("relations_three_part_name_is_refused", "select * from db.pg_catalog.pg_database",
		  "relation pg_catalog.pg_database");
	reject_in("relations_table_statement_is_checked", "table pg_stat_activity", "pg_catalog.pg_stat_activity");
	reject_in("relations_in_a_sublink_are_checked", "select (select count(*) from pg_locks)",
		  "pg_catalog.pg_locks");
	reject_in("relations_in_a_join_are_checked", "select * from t join pg_catalog.pg_user u on true",
		  "pg_catalog.pg_user");
	reject_in("relations_in_a_lateral_subquery_are_checked",
		  "select * from t, lateral (select usename from pg_stat_activity where pid = t.a) s",
		  "pg_catalog.pg_stat_activity");
	reject_in("relations_cte_of_a_subquery_does_not_cover_the_outer_query",
		  "select * from (with pg_database as (select 1) select 1) s, pg_database", "pg_catalog.pg_database");
	reject_in("relations_later_cte_is_not_visible_in_an_earlier_one",
		  "with a as (select * from pg_database), pg_database as (select 1) select * from a",
		  "pg_catalog.pg_database");
	reject_in("relations_cte_of_one_union_side_does_not_cover_the_other",
		  "(with pg_roles as (select 1) select * from pg_roles) union all select 1 from pg_roles",
		  "pg_catalog.pg_roles");
	reject_in("relations_qualified_name_is_never_a_cte",
		  "with pg_database as (select 1) select * from pg_catalog.pg_database", "pg_catalog.pg_database");
	reject_in("relations_cte_body_is_checked", "with x as (select datname from pg_database) select * from x",
		  "pg_catalog.pg_database");
}

static void test_snooping_functions(void)
{
	reject_in("snooping_pg_stat_get_activity_is_refused", "select query from pg_stat_get_activity(null)",
		  "function pg_stat_get_activity is not allowed");
	reject_in("snooping_backend_activity_is_refused", "select pg_stat_get_backend_activity(1)",
		  "function pg_stat_get_backend_activity is not allowed");
	reject_in("snooping_has_database_privilege_is_refused", "select has_database_privilege('other', 'connect')",
		  "function has_database_privilege is not allowed");
	reject_in("snooping_pg_show_all_settings_is_refused", "select * from pg_catalog.pg_show_all_settings()",
		  "function pg_show_all_settings is not allowed");
	reject_in("snooping_pg_stat_statements_function_is_refused", "select * from public.pg_stat_statements(true)",
		  "function pg_stat_statements is not allowed");
}

/* Issue 30: names of other schemas are not reachable through casts, row types, functions or the catalogs. */
static void test_schema_boundary_types(void)
{
	reject_in("boundary_regclass_cast_is_refused", "select 'other.t'::regclass", "cast to regclass is not allowed");
	reject_in("boundary_cast_syntax_to_regclass_is_refused", "select cast('other.t' as pg_catalog.regclass)",
		  "cast to regclass");
	reject_in("boundary_regtype_literal_is_refused", "select regtype 'other.t'", "cast to regtype");
	reject_in("boundary_regnamespace_is_refused", "select 'other'::regnamespace::oid", "cast to regnamespace");
	reject_in("boundary_row_type_of_another_schema_is_refused", "select NULL::other.t",
		  "type other.t is not allowed: schema other is not one of this database's schemas");
	reject_in("boundary_row_type_in_a_function_argument_is_refused",
		  "select * from json_populate_record(null::other.t, '{}')", "type other.t is not allowed");
	reject_in("boundary_function_of_another_schema_is_refused", "select other.f(1)",
		  "function other.f is not allowed");
	reject_in("boundary_to_regclass_is_refused", "select to_regclass('other.t')", "function to_regclass is not allowed");
	reject_in("boundary_has_table_privilege_is_refused", "select has_table_privilege('other.t', 'select')",
		  "function has_table_privilege is not allowed");
	reject_in("boundary_pg_get_viewdef_is_refused", "select pg_get_viewdef(16390)", "function pg_get_viewdef");
	allow_in("boundary_types_of_the_catalog_and_configured_schemas_pass",
		 "select 1::pg_catalog.int4, NULL::sales.orders, 'a'::text, '2024-01-01'::date");
	expect_scope("boundary_any_non_system_schema_type_passes_without_configured_schemas", "select NULL::other.t",
		     NULL, 0, NULL);
}

/* The statement exec_pg runs for sql with configured_schemas (NULL when it needs no narrowing). */
static char *scoped(const char *sql, int *ret_rc)
{
	struct sql_guard_pg_scope scope = {.functions = functions, .schemas = configured_schemas, .n_schemas = 2};
	char *out = NULL;
	size_t end = 0;
	*ret_rc = sql_guard_pg_check_scoped(sql, &scope, &end, &out, NULL);
	return out;
}

static void test_catalog_narrowing(void)
{
	int rc;
	char *got = scoped("select table_name from information_schema.tables", &rc);
	TAP_STR_EQ(got, "select table_name from (SELECT * FROM information_schema.tables WHERE table_schema IN "
			"( 'public','sales')) AS tables",
		   "narrowing_information_schema_tables_to_the_configured_schemas");
	free(got);
	got = scoped("select c.column_name from \"information_schema\" . \"columns\" c join pg_tables p on "
		     "p.tablename = c.table_name;", &rc);
	TAP_STR_EQ(got, "select c.column_name from (SELECT * FROM information_schema.columns WHERE table_schema IN "
			"( 'public','sales')) c join (SELECT * FROM pg_catalog.pg_tables WHERE schemaname IN "
			"( 'public','sales')) p on p.tablename = c.table_name",
		   "narrowing_quoted_aliased_and_unqualified_views_each");
	free(got);
	got = scoped("select tablename from pg_tables", &rc);
	TAP_STR_EQ(got, "select tablename from (SELECT * FROM pg_catalog.pg_tables WHERE schemaname IN "
			"( 'public','sales')) AS pg_tables",
		   "narrowing_an_unaliased_view_keeps_its_name_as_the_alias");
	free(got);
	got = scoped("select 1 from t", &rc);
	TAP_OK(rc == 0 && got == NULL, "narrowing_leaves_other_statements_alone");
	got = scoped("with tables as (select 1 as a) select a from tables", &rc);
	TAP_OK(rc == 0 && got == NULL, "narrowing_leaves_a_cte_named_tables_alone");
	struct sql_guard_pg_scope open_scope = {.functions = functions};
	size_t end;
	TAP_OK(sql_guard_pg_check_scoped("select * from information_schema.tables", &open_scope, &end, &got, NULL) == 0 &&
		       got == NULL,
	       "narrowing_without_configured_schemas_leaves_the_views_whole");
}

static void test_search_path(void)
{
	static const char *const with_system[] = {"pg_catalog", "sales", "information_schema", "public"};
	const char *path[4];

	size_t n = sql_guard_pg_search_path(NULL, 0, path);
	TAP_OK(n == 1 && strcmp(path[0], "public") == 0, "search_path_without_configured_schemas_is_public");
	n = sql_guard_pg_search_path(configured_schemas, 2, path);
	TAP_OK(n == 2 && strcmp(path[0], "public") == 0 && strcmp(path[1], "sales") == 0,
	       "search_path_is_the_configured_schemas_in_order");
	n = sql_guard_pg_search_path(with_system, 4, path);
	TAP_OK(n == 2 && strcmp(path[0], "sales") == 0 && strcmp(path[1], "public") == 0,
	       "search_path_never_holds_a_system_schema");
	TAP_INT_EQ((int)sql_guard_pg_search_path(with_system, 1, path), 0,
		   "search_path_of_only_system_schemas_is_empty");
}

int main(void)
{
	build_functions();
	test_allowed();
	test_rejected_statement_kinds();
	test_statement_count();
	test_nested_writes_and_clauses();
	test_denied_functions();
	test_functions_by_what_they_are();
	test_operators_and_casts();
	test_relations_allowed();
	test_relations_refused();
	test_snooping_functions();
	test_schema_boundary_types();
	test_catalog_narrowing();
	test_search_path();
	test_invalid_and_limits();
	test_error_argument_optional();
	test_threads();
	test_short_lived_threads();
	pg_functions_free(functions);
	return tap_done();
}
