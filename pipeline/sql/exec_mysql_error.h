/*
 * exec_mysql_error.h - a MySQL / MariaDB error code read as one of ours:
 * the one mapping the executor (exec_mysql.c: a statement run, prepared,
 * its session set up) and the table check (exec_mysql_view.c) share.
 */
#ifndef T2S_EXEC_MYSQL_ERROR_H
#define T2S_EXEC_MYSQL_ERROR_H

#include "common/error.h"

#include <stdbool.h>

/* What the executor's own watch did to the statement (exec_mysql.c), for the error's words. */
struct exec_mysql_stop {
	long timeout_ms; /* the statement's time limit; <= 0: none said */
	bool timed_out;  /* the deadline passed and the statement was killed */
	bool cancelled;  /* the request was abandoned and the statement was killed */
};

/*
 * Set err from the server's or the client library's error code and message
 * (msg is copied; stop may be NULL) and return the negative code: a timeout,
 * a cancellation, the server unreachable (client errors 2000-2999 and the
 * server's connection errors), a statement refused (privileges, a read-only
 * transaction), a statement that does not parse or whose names do not
 * resolve; a code of none of these classes gives unknown (T2S_ERR_SQL_FAILED
 * for a statement run, T2S_ERR_SQL_INVALID for one only prepared or
 * expanded, which fails for what it says).
 */
int exec_mysql_error(unsigned code, const char *msg, const struct exec_mysql_stop *stop, enum t2s_code unknown,
		     struct t2s_error *err);

#endif
