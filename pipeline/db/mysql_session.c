/*
 * mysql_session.c - settings of a MySQL / MariaDB session that the engine
 * (engine_mysql.c), its introspection and its execution (pipeline/sql/
 * exec_mysql.c) share; see mysql_session.h.
 */
#include "pipeline/db/mysql_session.h"

#include <stdio.h>

int mysql_session_set_timeout(struct db_conn *c, long timeout_ms)
{
	char sql[96];
	if (c->my_mariadb)
		snprintf(sql, sizeof(sql), "SET SESSION max_statement_time = %.3f",
			 timeout_ms > 0 ? (double)timeout_ms / 1000.0 : 0.0);
	else
		snprintf(sql, sizeof(sql), "SET SESSION max_execution_time = %ld", timeout_ms > 0 ? timeout_ms : 0);
	return mysql_query(c->my, sql);
}
