/*
 * mysql_session.h - what the MySQL / MariaDB engine (engine_mysql.c), its
 * introspection and its execution half in pipeline/sql/ (exec_mysql.c)
 * share about a session: its statement time limit.
 */
#ifndef T2S_MYSQL_SESSION_H
#define T2S_MYSQL_SESSION_H

#include "pipeline/db/db.h"

/*
 * Set the statement time limit of c's session for the statements that
 * follow: max_statement_time (MariaDB, seconds) or max_execution_time
 * (MySQL, milliseconds; SELECT only); timeout_ms <= 0: none.  0, or
 * mysql_query's non-zero return (mysql_error(c->my) says why).
 */
int mysql_session_set_timeout(struct db_conn *c, long timeout_ms);

#endif
