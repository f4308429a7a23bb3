/*
 * test_sql_explain.c - specification of the plain-English explanation of a
 * statement (pipeline/sql/sql_explain.c): the golden file
 * tests/unit/explain_golden.txt (one statement a line, both dialects,
 * every construct the explanation names), then the errors, the fallback for
 * a statement that does not parse, limits, and concurrent calls.
 *
 * Also the tool behind bench/explain_eval.py (not a test mode):
 *   test_sql_explain --explain sqlite|postgres   one statement a line on
 *       stdin, its explanation a line on stdout ("\N" when there is none);
 *   test_sql_explain --time N                   the golden file's statements
 *       explained N times over, the mean microseconds per statement (and
 *       sql_analyze's on the same statements: the same parse, for scale);
 *   test_sql_explain --print                    the golden file with the
 *       explanations written now (for reviewing a change by eye).
 *
 * Run under ASan/UBSan/LSan.
 */
#include "pipeline/sql/sql_explain.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/unit/tap.h"

#define LINE_MAX_BYTES 8192
#define GOLDEN_MAX 512

struct golden {
	enum sql_dialect dialect;
	char *sql, *want; /* want NULL: no explanation expected */
	size_t line;
};

static struct golden golden[GOLDEN_MAX];
static size_t n_golden;

static bool parse_dialect(const char *s, enum sql_dialect *ret)
{
	if (strcmp(s, "sqlite") == 0)
		*ret = SQL_DIALECT_SQLITE;
	else if (strcmp(s, "postgres") == 0)
		*ret = SQL_DIALECT_POSTGRES;
	else
		return false;
	return true;
}

/* The golden file: "dialect<TAB>sql<TAB>explanation" a line, '#' comments; false when unreadable. */
static bool load_golden(void)
{
	const char *root = getenv("T2S_SOURCE_ROOT");
	char path[4096], line[LINE_MAX_BYTES];
	snprintf(path, sizeof(path), "%s/tests/unit/explain_golden.txt", root ? root : ".");
	FILE *fp = fopen(path, "r");
	if (!fp)
		return false;
	for (size_t lineno = 1; fgets(line, sizeof(line), fp); lineno++) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		char *tab1 = strchr(line, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
		if (!tab2 || n_golden >= GOLDEN_MAX) {
			printf("Bail out! golden line %zu is not dialect<TAB>sql<TAB>explanation\n", lineno);
			exit(1);
		}
		*tab1 = *tab2 = '\0';
		struct golden *g = &golden[n_golden];
		if (!parse_dialect(line, &g->dialect)) {
			printf("Bail out! golden line %zu: unknown dialect '%s'\n", lineno, line);
			exit(1);
		}
		g->sql = strdup(tab1 + 1);
		g->want = strcmp(tab2 + 1, "-") == 0 ? NULL : strdup(tab2 + 1);
		g->line = lineno;
		if (!g->sql || (strcmp(tab2 + 1, "-") != 0 && !g->want)) {
			printf("Bail out! out of memory\n");
			exit(1);
		}
		n_golden++;
	}
	fclose(fp);
	return true;
}

static void free_golden(void)
{
	for (size_t i = 0; i < n_golden; i++) {
		free(golden[i].sql);
		free(golden[i].want);
	}
}

static char *explain(const char *sql, enum sql_dialect d)
{
	char *text = NULL;
	if (sql_explain(sql, d, &text, NULL) < 0)
		return NULL;
	return text;
}

static void check_golden(void)
{
	char name[128];
	for (size_t i = 0; i < n_golden; i++) {
		char *got = explain(golden[i].sql, golden[i].dialect);
		snprintf(name, sizeof(name), "golden_line_%zu", golden[i].line);
		if (golden[i].want) {
			TAP_STR_EQ(got, golden[i].want, name);
		} else if (!TAP_OK(got == NULL, name)) {
			printf("#   got '%s', want none\n", got);
		}
		free(got);
	}
}

/* The golden file's constructs: each must appear in some statement of it (the file covers them). */
static void check_coverage(void)
{
	static const char *const constructs[] = {
		"count(", "sum(", "avg(", "min(", "max(", "JOIN", "LEFT JOIN", "GROUP BY", "HAVING", "ORDER BY",
		"DESC", "LIMIT", "OFFSET", "DISTINCT", "UNION", "UNION ALL", "INTERSECT", "EXCEPT", " IN (SELECT",
		"NOT IN", "NOT EXISTS", "EXISTS", "CASE", "LIKE", "NOT LIKE", "BETWEEN", "IS NULL", "WITH", "OR",
	};
	char name[96];
	for (size_t c = 0; c < sizeof(constructs) / sizeof(constructs[0]); c++) {
		bool seen[2] = {false, false};
		for (size_t i = 0; i < n_golden; i++)
			if (strstr(golden[i].sql, constructs[c]))
				seen[golden[i].dialect == SQL_DIALECT_POSTGRES] = true;
		snprintf(name, sizeof(name), "golden_covers_%s_in_both_dialects", constructs[c]);
		TAP_OK(seen[0] && seen[1], name);
	}
}

static void check_errors(void)
{
	char *text = (char *)"untouched";
	struct t2s_error err = {0};
	TAP_INT_EQ(sql_explain(NULL, SQL_DIALECT_SQLITE, &text, &err), -T2S_ERR_INVALID, "no_sql_is_invalid");
	TAP_OK(text == NULL, "no_sql_leaves_no_text");
	TAP_INT_EQ(sql_explain("SELECT 1", SQL_DIALECT_SQLITE, NULL, NULL), -T2S_ERR_INVALID, "no_result_pointer_is_invalid");
	TAP_INT_EQ(sql_explain("SELECT 1", (enum sql_dialect)7, &text, NULL), -T2S_ERR_INVALID, "unknown_dialect_is_invalid");
	TAP_INT_EQ(sql_explain("", SQL_DIALECT_SQLITE, &text, NULL), -T2S_ERR_SQL_INVALID, "empty_statement_has_none");
	TAP_INT_EQ(sql_explain("hello there", SQL_DIALECT_POSTGRES, &text, &err), -T2S_ERR_SQL_INVALID,
		   "text_naming_no_table_has_none");
	TAP_OK(err.message[0] != '\0', "no_explanation_says_why");

	/* A statement longer than the parser reads. */
	size_t n = (size_t)(2 << 20);
	char *big = malloc(n + 1);
	if (big) {
		memset(big, ' ', n);
		memcpy(big, "SELECT 1", 8);
		big[n] = '\0';
		TAP_INT_EQ(sql_explain(big, SQL_DIALECT_SQLITE, &text, NULL), -T2S_ERR_SQL_REJECTED, "too_long_is_rejected");
		free(big);
	}
}

/* Deep nesting and a wide IN list: an explanation or a clean refusal, never a crash. */
static void check_limits(void)
{
	size_t cap = 64 * 1024, len = 0;
	char *s = malloc(cap);
	if (!s)
		return;
	len = (size_t)snprintf(s, cap, "SELECT a FROM t WHERE ");
	for (int i = 0; i < 300; i++)
		len += (size_t)snprintf(s + len, cap - len, "(");
	len += (size_t)snprintf(s + len, cap - len, "a = 1");
	for (int i = 0; i < 300; i++)
		len += (size_t)snprintf(s + len, cap - len, ")");
	char *text = NULL;
	int rc = sql_explain(s, SQL_DIALECT_POSTGRES, &text, NULL);
	TAP_OK(rc == 0 && text && strstr(text, "a = 1") == NULL && strstr(text, "a is 1"), "deep_parentheses_are_explained");
	free(text);
	text = NULL;
	/* 120 nested NOTs and 100 nested IN subqueries: past EX_MAX_DEPTH the words stop at a placeholder. */
	len = (size_t)snprintf(s, cap, "SELECT a FROM t WHERE ");
	for (int i = 0; i < 120; i++)
		len += (size_t)snprintf(s + len, cap - len, "NOT (");
	len += (size_t)snprintf(s + len, cap - len, "a = 1");
	for (int i = 0; i < 120; i++)
		len += (size_t)snprintf(s + len, cap - len, ")");
	rc = sql_explain(s, SQL_DIALECT_POSTGRES, &text, NULL);
	TAP_OK(rc == 0 && text && strstr(text, "a nested expression"), "deep_expressions_end_in_a_placeholder");
	free(text);
	text = NULL;
	len = (size_t)snprintf(s, cap, "SELECT a FROM t WHERE ");
	for (int i = 0; i < 100; i++)
		len += (size_t)snprintf(s + len, cap - len, "a IN (SELECT a FROM t%d WHERE ", i);
	len += (size_t)snprintf(s + len, cap - len, "a = 1");
	for (int i = 0; i < 100; i++)
		len += (size_t)snprintf(s + len, cap - len, ")");
	rc = sql_explain(s, SQL_DIALECT_SQLITE, &text, NULL);
	TAP_OK(rc == 0 && text && strstr(text, "t0") && strstr(text, "a nested"), "deep_subqueries_end_in_a_placeholder");
	free(text);
	text = NULL;
	len = (size_t)snprintf(s, cap, "SELECT a FROM t WHERE a IN (");
	for (int i = 0; i < 5000 && len + 16 < cap; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s'value%d'", i ? "," : "", i);
	snprintf(s + len, cap - len, ")");
	rc = sql_explain(s, SQL_DIALECT_SQLITE, &text, NULL);
	TAP_OK(rc == 0 && text && strlen(text) <= SQL_EXPLAIN_MAX_LEN && strstr(text, "too long to explain in full") &&
		       strstr(text, "Reads t ") && strstr(text, "'value0'"),
	       "a_huge_in_list_gets_the_fallback_within_the_limit");
	free(text);
	free(s);
}

/* Statements that do not parse even after the SQLite repairs: the fallback names their parts. */
static void check_fallback(void)
{
	char *t = explain("SELECT Name, Age FROM singer WHERE Country = 'France' AND AND", SQL_DIALECT_SQLITE);
	TAP_OK(t && strstr(t, "singer") && strstr(t, "Name") && strstr(t, "Age") && strstr(t, "'France'") &&
		       strstr(t, "could not be read in full"),
	       "fallback_names_tables_columns_and_values");
	free(t);
	t = explain("SELECT T1.a FROM x AS T1 JOIN y AS T2 ON T1.k = T2.k WHERE WHERE 3", SQL_DIALECT_POSTGRES);
	TAP_OK(t && strstr(t, "x and y") && strstr(t, "3") && !strstr(t, "T1"), "fallback_skips_aliases_and_qualifiers");
	free(t);
}

static void *worker(void *arg)
{
	(void)arg;
	for (int round = 0; round < 20; round++)
		for (size_t i = 0; i < n_golden; i++) {
			char *got = explain(golden[i].sql, golden[i].dialect);
			bool same = (!got && !golden[i].want) || (got && golden[i].want && strcmp(got, golden[i].want) == 0);
			free(got);
			if (!same)
				return (void *)1;
		}
	return NULL;
}

static void check_threads(void)
{
	pthread_t t[4];
	int started = 0, bad = 0;
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, worker, NULL) == 0)
			started++;
	for (int i = 0; i < started; i++) {
		void *r;
		pthread_join(t[i], &r);
		bad += r != NULL;
	}
	TAP_OK(started == 4 && bad == 0, "concurrent_calls_agree_with_the_golden_file");
}

/* --explain: stdin to stdout, one statement a line. */
static int tool_explain(const char *dialect)
{
	enum sql_dialect d;
	static char line[1 << 20];
	if (!parse_dialect(dialect, &d))
		return 2;
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		char *t = explain(line, d);
		printf("%s\n", t ? t : "\\N");
		free(t);
	}
	return 0;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--explain") == 0)
		return tool_explain(argv[2]);
	if (!load_golden()) {
		printf("Bail out! tests/unit/explain_golden.txt not found (T2S_SOURCE_ROOT)\n");
		return 1;
	}
	if (argc == 2 && strcmp(argv[1], "--print") == 0) {
		for (size_t i = 0; i < n_golden; i++) {
			char *t = explain(golden[i].sql, golden[i].dialect);
			printf("%s\t%s\t%s\n", golden[i].dialect == SQL_DIALECT_SQLITE ? "sqlite" : "postgres", golden[i].sql,
			       t ? t : "-");
			free(t);
		}
		free_golden();
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--time") == 0) {
		long v = strtol(argv[2], NULL, 10);
		int rounds = v > 0 && v < 1000000 ? (int)v : 100;
		worker(NULL); /* parser threads started */
		double t0 = now_us();
		for (int r = 0; r < rounds; r++)
			for (size_t i = 0; i < n_golden; i++)
				free(explain(golden[i].sql, golden[i].dialect));
		double per = (now_us() - t0) / ((double)rounds * (double)n_golden);
		/* The same statements through sql_analyze (the same parse, facts instead of words): the parse's share. */
		t0 = now_us();
		for (int r = 0; r < rounds; r++)
			for (size_t i = 0; i < n_golden; i++) {
				struct sql_analysis a;
				if (sql_analyze(golden[i].sql, golden[i].dialect, &a, NULL) == 0)
					sql_analysis_release(&a);
			}
		double analyze = (now_us() - t0) / ((double)rounds * (double)n_golden);
		printf("{\"statements\": %zu, \"rounds\": %d, \"us_per_statement\": %.1f, "
		       "\"sql_analyze_us_per_statement\": %.1f}\n",
		       n_golden, rounds, per, analyze);
		free_golden();
		return 0;
	}
	TAP_OK(n_golden > 0, "golden_file_has_lines");
	check_golden();
	check_coverage();
	check_errors();
	check_limits();
	check_fallback();
	check_threads();
	free_golden();
	return tap_done();
}
