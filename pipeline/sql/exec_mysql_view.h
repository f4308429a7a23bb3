/*
 * exec_mysql_view.h - table-level access on MySQL / MariaDB (schema_grant.h):
 * the tables a statement really reads, as the server itself expands it
 * (views merged, names qualified), must all be granted.
 */
#ifndef T2S_EXEC_MYSQL_VIEW_H
#define T2S_EXEC_MYSQL_VIEW_H

#include "common/contract.h"
#include "common/error.h"
#include "pipeline/db/schema.h"

#include <mysql.h>
#include <stddef.h>

/*
 * On connection m, inside the statement's read-only transaction: EXPLAIN
 * EXTENDED sql[0, end) and read the server's expanded statement (note
 * 1003: every table it reads written `db`.`table`, merged views replaced
 * by what they read).  0 when every table named there is one of view's
 * (schema_grant.h) in the connection's database and none of them is a view
 * the server kept whole (its tables cannot be seen); else
 * -T2S_ERR_SQL_INVALID "Table 'db.t' doesn't exist", as MariaDB says of a
 * table it does not have, or -T2S_ERR_SQL_REJECTED when the statement
 * cannot be expanded (fail closed), or the server's error.
 */
T2S_MUST_CHECK
int exec_mysql_within_view(MYSQL *m, const struct schema *view, const char *sql, size_t end, struct t2s_error *err);

#endif
