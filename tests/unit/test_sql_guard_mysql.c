/*
 * test_sql_guard_mysql.c - specification of the MySQL / MariaDB statement
 * guard (pipeline/sql/sql_guard_mysql.c): which statements pass, which are
 * refused and with which code, that the message names what was refused, and
 * where the statement to send ends; and how the executor reads the server's
 * error codes (pipeline/sql/exec_mysql_error.c).  The real server is
 * exercised by tests/integration/test_mariadb.py and the hostile corpus.
 */
#include "pipeline/sql/exec_mysql_error.h"
#include "pipeline/sql/sql_guard_mysql.h"

#include <stdio.h>
#include <string.h>

#include "tests/unit/tap.h"

static int check(const char *sql, size_t *end, struct t2s_error *err)
{
	memset(err, 0, sizeof(*err));
	return sql_guard_mysql_check(sql, end, err);
}

static void admits(const char *sql, const char *name)
{
	size_t end = 0;
	struct t2s_error err;
	int rc = check(sql, &end, &err);
	if (!TAP_OK(rc == 0, name))
		fprintf(stderr, "# %s: %d %s\n", sql, rc, err.message);
}

static void refuses(const char *sql, int code, const char *words, const char *name)
{
	size_t end = 0;
	struct t2s_error err;
	int rc = check(sql, &end, &err);
	if (!TAP_OK(rc == -code && strstr(err.message, words), name))
		fprintf(stderr, "# %s: %d %s\n", sql, rc, err.message);
}

static void test_admitted(void)
{
	admits("SELECT count(*) FROM singer", "select_admitted");
	admits("  (SELECT 1) UNION (SELECT 2)", "parenthesised_union_admitted");
	admits("WITH a AS (SELECT 1 AS x) SELECT x FROM a", "with_admitted");
	admits("VALUES (1, 2), (3, 4)", "values_admitted");
	admits("TABLE singer", "table_statement_admitted");
	admits("SELECT `update`, `set`, `into` FROM `delete`", "quoted_reserved_names_admitted");
	admits("SELECT 'INTO OUTFILE', \"SLEEP(5)\", 'a;b' FROM t", "words_inside_strings_admitted");
	admits("SELECT name FROM singer WHERE note = 'it''s'", "doubled_quote_admitted");
	admits("SELECT 1 -- a comment; DELETE\n", "line_comment_admitted");
	admits("SELECT 1 # DELETE FROM t\n", "hash_comment_admitted");
	admits("SELECT 1 /* ; DELETE */", "c_comment_admitted");
	admits("SELECT replace(name, 'a', 'b'), lower(name), concat(a, b) FROM t", "string_functions_admitted");
	admits("SELECT t.name FROM t JOIN u ON t.id = u.t_id", "qualified_columns_admitted");
	admits("SELECT table_name FROM information_schema.tables", "information_schema_tables_admitted");
	admits("SELECT column_name FROM INFORMATION_SCHEMA.COLUMNS", "information_schema_columns_any_case_admitted");
	admits("SELECT 5--3", "double_minus_without_space_is_arithmetic");
}

static void test_refused(void)
{
	refuses("DELETE FROM singer", T2S_ERR_SQL_REJECTED, "DELETE", "delete_refused_naming_it");
	refuses("SET GLOBAL max_connections = 1", T2S_ERR_SQL_REJECTED, "SET", "set_refused");
	refuses("CALL p()", T2S_ERR_SQL_REJECTED, "CALL", "call_refused");
	refuses("HANDLER t OPEN", T2S_ERR_SQL_REJECTED, "HANDLER", "handler_refused");
	refuses("DO SLEEP(1)", T2S_ERR_SQL_REJECTED, "DO", "do_refused");
	refuses("SELECT 1; SELECT 2", T2S_ERR_SQL_REJECTED, "one statement", "two_statements_refused");
	refuses("SELECT 1 -- x\n; DROP TABLE t", T2S_ERR_SQL_REJECTED, "one statement", "statement_after_a_comment_refused");
	refuses("SELECT '\\'; DELETE FROM t -- '", T2S_ERR_SQL_REJECTED, "one statement",
		"backslash_is_no_escape_so_the_second_statement_is_seen");
	refuses("SELECT * FROM t INTO OUTFILE '/tmp/x'", T2S_ERR_SQL_REJECTED, "INTO", "into_outfile_refused");
	refuses("SELECT a INTO @x FROM t", T2S_ERR_SQL_REJECTED, "INTO", "into_var_refused");
	refuses("SELECT @@version", T2S_ERR_SQL_REJECTED, "variables", "system_variable_refused");
	refuses("SELECT @x := 1", T2S_ERR_SQL_REJECTED, "variables", "assignment_refused");
	refuses("SELECT * FROM t FOR UPDATE", T2S_ERR_SQL_REJECTED, "UPDATE", "for_update_refused");
	refuses("SELECT * FROM t LOCK IN SHARE MODE", T2S_ERR_SQL_REJECTED, "LOCK", "lock_in_share_mode_refused");
	refuses("SELECT * FROM t FOR SHARE", T2S_ERR_SQL_REJECTED, "FOR SHARE", "for_share_refused");
	refuses("SELECT * FROM t PROCEDURE ANALYSE()", T2S_ERR_SQL_REJECTED, "PROCEDURE", "procedure_analyse_refused");
	refuses("SELECT SLEEP(5)", T2S_ERR_SQL_REJECTED, "SLEEP", "sleep_refused");
	refuses("SELECT sleep /* x */ (5)", T2S_ERR_SQL_REJECTED, "sleep", "sleep_with_a_comment_before_the_paren_refused");
	refuses("SELECT BENCHMARK(1e9, MD5('a'))", T2S_ERR_SQL_REJECTED, "BENCHMARK", "benchmark_refused");
	refuses("SELECT GET_LOCK('a', 1)", T2S_ERR_SQL_REJECTED, "GET_LOCK", "get_lock_refused");
	refuses("SELECT is_used_lock('a')", T2S_ERR_SQL_REJECTED, "is_used_lock", "is_used_lock_refused");
	refuses("SELECT LOAD_FILE('/etc/passwd')", T2S_ERR_SQL_REJECTED, "LOAD_FILE", "load_file_refused");
	refuses("SELECT NEXT VALUE FOR s", T2S_ERR_SQL_REJECTED, "NEXT", "next_value_for_refused");
	refuses("SELECT db.f()", T2S_ERR_SQL_REJECTED, "stored functions", "qualified_function_refused");
	refuses("SELECT `f`()", T2S_ERR_SQL_REJECTED, "stored functions", "quoted_function_refused");
	refuses("SELECT /*!50000 SLEEP(5) */ 1", T2S_ERR_SQL_REJECTED, "executable", "executable_comment_refused");
	refuses("SELECT /*M! 1 */ 1", T2S_ERR_SQL_REJECTED, "executable", "mariadb_executable_comment_refused");
	refuses("SELECT /*+ SET_VAR(x=1) */ 1", T2S_ERR_SQL_REJECTED, "optimizer", "optimizer_hint_refused");
	refuses("SELECT * FROM mysql.user", T2S_ERR_SQL_REJECTED, "mysql", "mysql_schema_refused");
	refuses("SELECT * FROM `MySQL` . `user`", T2S_ERR_SQL_REJECTED, "MySQL", "quoted_spaced_mysql_schema_refused");
	refuses("SELECT * FROM sys.processlist", T2S_ERR_SQL_REJECTED, "sys", "sys_schema_refused");
	refuses("SELECT * FROM performance_schema.threads", T2S_ERR_SQL_REJECTED, "performance_schema",
		"performance_schema_refused");
	refuses("SELECT * FROM information_schema.processlist", T2S_ERR_SQL_REJECTED, "processlist",
		"other_information_schema_views_refused");
	refuses("WITH a AS (SELECT 1) DELETE FROM t", T2S_ERR_SQL_REJECTED, "DELETE", "with_delete_refused");
	refuses("SELECT 'unterminated", T2S_ERR_SQL_INVALID, "unterminated", "unterminated_string_invalid");
	refuses("SELECT 1 /* open", T2S_ERR_SQL_INVALID, "unterminated", "unterminated_comment_invalid");
	refuses("  -- nothing\n", T2S_ERR_SQL_INVALID, "no statement", "empty_statement_invalid");
	refuses("SELEC 1", T2S_ERR_SQL_INVALID, "SELEC", "unknown_first_word_is_a_syntax_error");
}

static void test_end(void)
{
	size_t end = 0;
	struct t2s_error err;
	const char *sql = "SELECT 1 ;  -- done\n";
	TAP_INT_EQ(check(sql, &end, &err), 0, "trailing_semicolon_and_comment_admitted");
	TAP_INT_EQ((long)end, 8, "statement_ends_before_the_semicolon");
	end = 0;
	TAP_INT_EQ(check("TABLE s", &end, &err), 0, "whole_text_admitted");
	TAP_INT_EQ((long)end, 7, "statement_without_a_cut_ends_at_the_text_end");
	/* cut before the comment, "1--" would end in a comment on the server: not what was read here */
	TAP_INT_EQ(check("SELECT 1----", &end, &err), -T2S_ERR_SQL_INVALID, "statement_ending_in_dashes_when_cut_invalid");
}

static void maps(unsigned code, const struct exec_mysql_stop *stop, enum t2s_code unknown, int want,
		 const char *words, const char *name)
{
	struct t2s_error err;
	memset(&err, 0, sizeof(err));
	int rc = exec_mysql_error(code, "the server's words", stop, unknown, &err);
	if (!TAP_OK(rc == -want && (int)err.code == want && strstr(err.message, words), name))
		fprintf(stderr, "# error %u: %d %s\n", code, rc, err.message);
}

static void test_errors(void)
{
	struct exec_mysql_stop timed = {.timeout_ms = 1500, .timed_out = true};
	struct exec_mysql_stop cancelled = {.timeout_ms = 1500, .cancelled = true};
	struct exec_mysql_stop watched = {.timeout_ms = 1500};
	maps(1969, &watched, T2S_ERR_SQL_FAILED, T2S_ERR_TIMEOUT, "1500 ms", "server_timeout_names_the_limit");
	maps(1969, NULL, T2S_ERR_SQL_INVALID, T2S_ERR_TIMEOUT, "its time limit", "server_timeout_without_a_limit");
	maps(1317, &timed, T2S_ERR_SQL_FAILED, T2S_ERR_TIMEOUT, "1500 ms", "interrupted_by_our_deadline_is_a_timeout");
	maps(1317, &cancelled, T2S_ERR_SQL_FAILED, T2S_ERR_CANCELLED, "abandoned", "interrupted_by_a_gone_client");
	maps(1317, &watched, T2S_ERR_SQL_FAILED, T2S_ERR_SQL_FAILED, "(error 1317)", "interrupted_by_someone_else_failed");
	maps(1205, NULL, T2S_ERR_SQL_FAILED, T2S_ERR_TIMEOUT, "lock", "lock_wait_is_a_timeout");
	maps(2013, NULL, T2S_ERR_SQL_FAILED, T2S_ERR_UNAVAILABLE, "(error 2013)", "lost_connection_unavailable");
	maps(1040, NULL, T2S_ERR_SQL_INVALID, T2S_ERR_UNAVAILABLE, "unavailable", "too_many_connections_unavailable");
	maps(1142, NULL, T2S_ERR_SQL_INVALID, T2S_ERR_SQL_REJECTED, "server's words", "privilege_refused_when_prepared");
	maps(1792, NULL, T2S_ERR_SQL_FAILED, T2S_ERR_SQL_REJECTED, "(error 1792)", "read_only_transaction_refused");
	maps(1146, NULL, T2S_ERR_SQL_FAILED, T2S_ERR_SQL_INVALID, "(error 1146)", "unknown_table_invalid_when_run");
	maps(1365, NULL, T2S_ERR_SQL_FAILED, T2S_ERR_SQL_FAILED, "(error 1365)", "division_by_zero_fails_a_run");
	maps(1365, NULL, T2S_ERR_SQL_INVALID, T2S_ERR_SQL_INVALID, "(error 1365)", "unknown_code_when_prepared_invalid");
}

int main(void)
{
	test_admitted();
	test_refused();
	test_end();
	test_errors();
	return tap_done();
}
