/*
 * fuzz_sql_guard_pg.c - libFuzzer target: a statement through the
 * PostgreSQL guard (pipeline/sql/sql_guard_pg.h) on libpg_query's parser
 * threads, judged against a small function catalog built from PostgreSQL
 * 15's pg_proc facts (as tests/unit/test_sql_guard_pg.c does).  The guard
 * must answer with one of its documented codes, and an allowed statement's
 * end must lie within it.
 */
#include "pipeline/sql/sql_guard_pg.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* pg_proc facts: schema, name, nargs, nargdefaults, variadic, volatility, security definer, kind. */
static const struct pg_function_info catalog[] = {
	{"pg_catalog", "lower", 1, 0, false, 'i', false, 'f'},
	{"pg_catalog", "upper", 1, 0, false, 'i', false, 'f'},
	{"pg_catalog", "length", 1, 0, false, 'i', false, 'f'},
	{"pg_catalog", "row_number", 0, 0, false, 'i', false, 'w'},
	{"pg_catalog", "sum", 1, 0, false, 'i', false, 'a'},
	{"pg_catalog", "avg", 1, 0, false, 'i', false, 'a'},
	{"pg_catalog", "count", 0, 0, false, 'i', false, 'a'},
	{"pg_catalog", "count", 1, 0, false, 'i', false, 'a'},
	{"pg_catalog", "max", 1, 0, false, 'i', false, 'a'},
	{"pg_catalog", "min", 1, 0, false, 'i', false, 'a'},
	{"pg_catalog", "coalesce", 1, 0, true, 'i', false, 'f'},
	{"pg_catalog", "now", 0, 0, false, 's', false, 'f'},
	{"pg_catalog", "current_setting", 1, 0, false, 's', false, 'f'},
	{"pg_catalog", "generate_series", 2, 0, false, 'i', false, 'f'},
	{"pg_catalog", "repeat", 2, 0, false, 'i', false, 'f'},
	{"pg_catalog", "concat", 1, 0, true, 's', false, 'f'},
	{"pg_catalog", "random", 0, 0, false, 'v', false, 'f'},
	{"pg_catalog", "pg_sleep", 1, 0, false, 'v', false, 'f'},
	{"pg_catalog", "ts_rewrite", 2, 0, false, 'v', false, 'f'},
	{"pg_catalog", "pg_read_file", 1, 0, false, 'v', false, 'f'},
	{"pg_catalog", "set_config", 3, 0, false, 'v', false, 'f'},
	{"pg_catalog", "dblink_exec", 1, 0, true, 'v', false, 'f'},
	{"pg_catalog", "query_to_xml", 4, 0, false, 'v', false, 'f'},
	{"pg_catalog", "table_to_xml", 4, 0, false, 's', false, 'f'},
	{"pg_catalog", "txid_current", 0, 0, false, 's', false, 'f'},
	{"public", "evil_definer", 0, 0, false, 's', true, 'f'},
	{"public", "evil_proc", 0, 0, false, 'v', false, 'p'},
	{"public", "row_hook", 1, 0, false, 'v', false, 'f'},
};

static struct pg_functions *functions;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	functions = pg_functions_new();
	if (!functions)
		abort();
	for (size_t i = 0; i < sizeof(catalog) / sizeof(catalog[0]); i++)
		if (pg_functions_add(functions, &catalog[i]) < 0)
			abort();
	if (pg_functions_seal(functions) < 0)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *sql = strndup((const char *)data, size); /* the text up to the first NUL */
	if (!sql)
		return 0;
	struct t2s_error err = {0};
	size_t end = (size_t)-1;
	int rc = sql_guard_pg_check_statement(sql, &(struct sql_guard_pg_scope){.functions = functions}, &end, &err);
	if (rc == 0 && end > strlen(sql))
		abort();
	if (rc < 0 && rc != -T2S_ERR_SQL_INVALID && rc != -T2S_ERR_SQL_REJECTED)
		abort(); /* no NOMEM, INTERNAL or UNAVAILABLE for a statement's text */
	free(sql);
	return 0;
}
