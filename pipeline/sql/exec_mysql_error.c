/*
 * exec_mysql_error.c - MySQL / MariaDB error codes read as ours (see
 * exec_mysql_error.h).  The bottom of the MySQL executor: it calls nothing
 * of its folder.
 */
#include "pipeline/sql/exec_mysql_error.h"

#include <stddef.h>

static bool listed(unsigned code, const unsigned *codes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (codes[i] == code)
			return true;
	return false;
}

#define LISTED(code, codes) listed(code, codes, sizeof(codes) / sizeof(*(codes)))

/* the server gone or refusing connections: too many, shutting down, packets lost */
static const unsigned UNAVAILABLE[] = {1040, 1041, 1053, 1158, 1159, 1160, 1161, 1927};
/* privileges, a read-only transaction or server, a write refused */
static const unsigned REJECTED[] = {1792, 1142, 1143, 1044, 1227, 1370, 1290, 1045, 1095, 1288};
/* syntax, names that do not resolve, a grouping or a subquery the server does not accept */
static const unsigned INVALID[] = {1064, 1054, 1146, 1052, 1305, 1582, 1583, 1584, 1055, 1056, 1111, 1248,
				   1060, 1241, 1140, 1221, 1222, 1247, 1109, 1630, 1066, 1049, 1210, 1463};

int exec_mysql_error(unsigned code, const char *msg, const struct exec_mysql_stop *stop, enum t2s_code unknown,
		     struct t2s_error *err)
{
	bool timed_out = stop && stop->timed_out, cancelled = stop && stop->cancelled;
	if (code == 1969 /* ER_STATEMENT_TIMEOUT */ || code == 3024 /* MySQL: ER_QUERY_TIMEOUT */ ||
	    (code == 1317 /* ER_QUERY_INTERRUPTED */ && timed_out)) {
		if (stop && stop->timeout_ms > 0)
			return t2s_error_set(err, T2S_ERR_TIMEOUT, "statement stopped after the time limit of %ld ms",
					     stop->timeout_ms);
		return t2s_error_set(err, T2S_ERR_TIMEOUT, "statement stopped after its time limit");
	}
	if (code == 1317 && cancelled)
		return t2s_error_set(err, T2S_ERR_CANCELLED, "statement cancelled: its request was abandoned");
	if (code == 1205 /* ER_LOCK_WAIT_TIMEOUT */)
		return t2s_error_set(err, T2S_ERR_TIMEOUT, "statement waited too long for a lock: %s", msg);
	if ((code >= 2000 && code < 3000) || LISTED(code, UNAVAILABLE))
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "MySQL is unavailable: %s (error %u)", msg, code);
	if (LISTED(code, REJECTED))
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "%s (error %u)", msg, code);
	if (LISTED(code, INVALID))
		return t2s_error_set(err, T2S_ERR_SQL_INVALID, "%s (error %u)", msg, code);
	return t2s_error_set(err, unknown, "%s (error %u)", msg, code);
}
