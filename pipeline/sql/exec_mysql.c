/*
 * exec_mysql.c - run one user statement on MySQL / MariaDB (see exec.h for
 * the layers).  The statement, admitted by sql_guard_mysql, runs as
 *
 *     SET SESSION max_statement_time (MariaDB) | max_execution_time (MySQL)
 *     SET SESSION sql_select_limit = max_rows + 1, lock_wait_timeout, innodb_lock_wait_timeout
 *     START TRANSACTION READ ONLY          -- in a session that is READ ONLY too
 *     EXPLAIN EXTENDED <the statement>     -- for a caller limited to some tables (exec_mysql_view.h)
 *     <the statement>                       -- mysql_use_result: rows read one at a time
 *     ROLLBACK
 *
 * on a connection without multi-statements, and the pool resets the session
 * (mysql_reset_connection, the settings again) before reuse.
 *
 * The statement and its rows are read with Connector/C's non-blocking
 * calls, so the caller's thread asks exec_limits.cancelled every
 * EXEC_MYSQL_CHECK_MS and watches its own deadline (the time limit and a
 * grace of EXEC_MYSQL_GRACE_MS, should the server's limit not fire, e.g.
 * MySQL's max_execution_time, which stops SELECTs only): either sends KILL
 * QUERY from a second connection (engine.h cancel); a statement still not
 * ended EXEC_MYSQL_KILL_WAIT_MS after that has its connection cut.  Rows: at most
 * max_rows + 1 are sent for the outer SELECT (sql_select_limit; a LIMIT of
 * the statement's own can ask more), and once the row or byte cap is
 * reached a statement whose result is not finished is killed before the
 * rest is read.  One row is at most the client's packet limit
 * (engine_mysql.c), and its values are kept only while the byte cap allows.
 */
#include "pipeline/sql/exec.h"

#include "common/clock.h"
#include "common/utf8.h"
#include "pipeline/db/mysql_session.h"
#include "pipeline/sql/sql_engine.h"
#include "pipeline/sql/exec_mysql_error.h"
#include "pipeline/sql/exec_mysql_view.h"
#include "pipeline/sql/sql_guard_mysql.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define EXEC_MYSQL_CHECK_MS 50
#define EXEC_MYSQL_GRACE_MS 1000
#define EXEC_MYSQL_KILL_WAIT_MS 5000 /* after a KILL QUERY, how long the statement may take to end */

/* One statement's run: what stopped it, for the error it ends with. */
struct run {
	struct db_conn *c;
	const struct exec_limits *lim;
	double deadline_ms; /* clock_now_ms() past which the statement is killed */
	bool cancelled;     /* lim->cancelled said true: killed */
	bool timed_out;     /* the deadline passed: killed */
	bool killed;        /* a KILL QUERY was sent (also after the caps) */
	double killed_at;   /* when (clock_now_ms) */
};

static void kill_query(struct run *r)
{
	if (r->killed)
		return;
	r->killed = true;
	r->killed_at = clock_now_ms();
	r->c->engine->cancel(r->c);
}

/*
 * Wait for the events status asks on the connection's socket; every
 * EXEC_MYSQL_CHECK_MS ask lim->cancelled and look at the deadline.  The
 * events that are ready, for the _cont call.
 */
static int wait_io(struct run *r, int status)
{
	MYSQL *m = r->c->my;
	double timeout_at = (status & MYSQL_WAIT_TIMEOUT) ? clock_now_ms() + mysql_get_timeout_value_ms(m) : 0;
	for (;;) {
		struct pollfd p = {.fd = mysql_get_socket(m),
				   .events = (short)(((status & MYSQL_WAIT_READ) ? POLLIN : 0) |
						     ((status & MYSQL_WAIT_WRITE) ? POLLOUT : 0) |
						     ((status & MYSQL_WAIT_EXCEPT) ? POLLPRI : 0))};
		int n = poll(&p, 1, EXEC_MYSQL_CHECK_MS);
		if (n > 0) {
			int ev = 0;
			if (p.revents & (POLLIN | POLLERR | POLLHUP))
				ev |= MYSQL_WAIT_READ;
			if (p.revents & POLLOUT)
				ev |= MYSQL_WAIT_WRITE;
			if (p.revents & POLLPRI)
				ev |= MYSQL_WAIT_EXCEPT;
			return ev ? ev : status & ~MYSQL_WAIT_TIMEOUT;
		}
		if (n < 0 && errno != EINTR)
			return status & ~MYSQL_WAIT_TIMEOUT; /* the _cont call reports the broken connection */
		double now = clock_now_ms();
		if (timeout_at > 0 && now >= timeout_at)
			return MYSQL_WAIT_TIMEOUT;
		if (!r->killed && r->lim->cancelled && r->lim->cancelled(r->lim->cancel_ctx)) {
			r->cancelled = true;
			kill_query(r);
		}
		if (!r->killed && now >= r->deadline_ms) {
			r->timed_out = true;
			kill_query(r);
		}
		/* a server that does not end a killed statement: cut the connection (the call then fails,
		   and the pool closes it as broken) */
		if (r->killed && now >= r->killed_at + EXEC_MYSQL_KILL_WAIT_MS) {
			shutdown(mysql_get_socket(m), SHUT_RDWR);
			return status & ~MYSQL_WAIT_TIMEOUT;
		}
	}
}

/* The connection's last error as ours (exec_mysql_error.h), with what the watch did; err filled. */
static int my_error(struct run *r, struct t2s_error *err)
{
	struct exec_mysql_stop stop = {.timeout_ms = r->lim->timeout_ms, .timed_out = r->timed_out,
				       .cancelled = r->cancelled};
	return exec_mysql_error(mysql_errno(r->c->my), mysql_error(r->c->my), &stop, T2S_ERR_SQL_FAILED, err);
}

static bool is_number_type(enum enum_field_types t)
{
	switch (t) {
	case MYSQL_TYPE_TINY:
	case MYSQL_TYPE_SHORT:
	case MYSQL_TYPE_LONG:
	case MYSQL_TYPE_INT24:
	case MYSQL_TYPE_LONGLONG:
	case MYSQL_TYPE_YEAR:
	case MYSQL_TYPE_DECIMAL:
	case MYSQL_TYPE_NEWDECIMAL:
	case MYSQL_TYPE_FLOAT:
	case MYSQL_TYPE_DOUBLE:
		return true;
	default:
		return false;
	}
}

/* The SQL name of a result column's type, or NULL when unknown. */
static const char *type_name(const MYSQL_FIELD *f)
{
	bool binary = f->charsetnr == 63;
	switch (f->type) {
	case MYSQL_TYPE_TINY: return "tinyint";
	case MYSQL_TYPE_SHORT: return "smallint";
	case MYSQL_TYPE_INT24: return "mediumint";
	case MYSQL_TYPE_LONG: return "int";
	case MYSQL_TYPE_LONGLONG: return "bigint";
	case MYSQL_TYPE_YEAR: return "year";
	case MYSQL_TYPE_DECIMAL:
	case MYSQL_TYPE_NEWDECIMAL: return "decimal";
	case MYSQL_TYPE_FLOAT: return "float";
	case MYSQL_TYPE_DOUBLE: return "double";
	case MYSQL_TYPE_DATE:
	case MYSQL_TYPE_NEWDATE: return "date";
	case MYSQL_TYPE_TIME: return "time";
	case MYSQL_TYPE_DATETIME: return "datetime";
	case MYSQL_TYPE_TIMESTAMP: return "timestamp";
	case MYSQL_TYPE_BIT: return "bit";
	case MYSQL_TYPE_JSON: return "json";
	case MYSQL_TYPE_ENUM: return "enum";
	case MYSQL_TYPE_SET: return "set";
	case MYSQL_TYPE_GEOMETRY: return "geometry";
	case MYSQL_TYPE_VARCHAR:
	case MYSQL_TYPE_VAR_STRING: return binary ? "varbinary" : "varchar";
	case MYSQL_TYPE_STRING: return binary ? "binary" : "char";
	case MYSQL_TYPE_TINY_BLOB:
	case MYSQL_TYPE_MEDIUM_BLOB:
	case MYSQL_TYPE_LONG_BLOB:
	case MYSQL_TYPE_BLOB: return binary ? "blob" : "text";
	default: return NULL;
	}
}

/* A binary string (BINARY, VARBINARY, BLOB): shown as \\x and hex digits, as SQLite's and PostgreSQL's bytes are. */
static bool is_binary(const MYSQL_FIELD *f)
{
	if (f->charsetnr != 63)
		return false;
	switch (f->type) {
	case MYSQL_TYPE_VARCHAR:
	case MYSQL_TYPE_VAR_STRING:
	case MYSQL_TYPE_STRING:
	case MYSQL_TYPE_TINY_BLOB:
	case MYSQL_TYPE_MEDIUM_BLOB:
	case MYSQL_TYPE_LONG_BLOB:
	case MYSQL_TYPE_BLOB:
		return true;
	default:
		return false;
	}
}

static json_t *hex_json(const char *v, unsigned long n, size_t *bytes)
{
	static const char digits[] = "0123456789abcdef";
	char *out = malloc(2 * (size_t)n + 3);
	if (!out)
		return json_null();
	out[0] = '\\';
	out[1] = 'x';
	for (unsigned long i = 0; i < n; i++) {
		out[2 + 2 * i] = digits[(unsigned char)v[i] >> 4];
		out[3 + 2 * i] = digits[(unsigned char)v[i] & 15];
	}
	*bytes += (size_t)n; /* twice the bytes in hex */
	json_t *j = json_stringn(out, 2 * (size_t)n + 2);
	free(out);
	return j;
}

static json_t *value_json(const MYSQL_FIELD *f, const char *v, unsigned long n, size_t *bytes)
{
	if (!v) {
		*bytes += 4;
		return json_null();
	}
	*bytes += (size_t)n + 2;
	if (is_number_type(f->type))
		return exec_number_json(v, (size_t)n);
	if (is_binary(f))
		return hex_json(v, n, bytes);
	return utf8_json_string(v, (size_t)n);
}

/* The statement itself, non-blocking (wait_io between the steps). 0 or mysql_real_query's error. */
static int send_statement(struct run *r, const char *sql, size_t len)
{
	int ret = 0;
	int status = mysql_real_query_start(&ret, r->c->my, sql, (unsigned long)len);
	while (status)
		status = mysql_real_query_cont(&ret, r->c->my, wait_io(r, status));
	return ret;
}

static MYSQL_ROW fetch_row(struct run *r, MYSQL_RES *res)
{
	MYSQL_ROW row = NULL;
	int status = mysql_fetch_row_start(&row, res);
	while (status)
		status = mysql_fetch_row_cont(&row, res, wait_io(r, status));
	return row;
}

/* Read the rows of the statement just sent into res (caps of exec_result); 0 or the error. */
static int read_rows(struct run *r, struct exec_result *res, struct t2s_error *err)
{
	MYSQL *m = r->c->my;
	MYSQL_RES *rs = mysql_use_result(m);
	if (!rs)
		return mysql_errno(m) ? my_error(r, err)
				      : t2s_error_set(err, T2S_ERR_SQL_REJECTED, "the statement returns no rows");
	unsigned nf = mysql_num_fields(rs);
	MYSQL_FIELD *fields = mysql_fetch_fields(rs);
	for (unsigned i = 0; i < nf; i++) {
		json_array_append_new(res->columns, utf8_json_string(fields[i].name, strlen(fields[i].name)));
		const char *t = type_name(&fields[i]);
		json_array_append_new(res->column_types, t ? json_string(t) : json_null());
	}
	bool accepting = true;
	MYSQL_ROW row;
	while (accepting && (row = fetch_row(r, rs))) {
		unsigned long *lens = mysql_fetch_lengths(rs);
		json_t *values = json_array();
		size_t bytes = 4;
		for (unsigned i = 0; i < nf && exec_result_row_fits(res, r->lim, bytes); i++)
			json_array_append_new(values, value_json(&fields[i], row[i], lens[i], &bytes));
		accepting = exec_result_accept_row(res, r->lim, values, bytes);
	}
	int rc = 0;
	if (accepting && mysql_errno(m))
		rc = my_error(r, err);
	else if (!accepting && !mysql_eof(rs))
		kill_query(r); /* the caps are reached: stop the rest before it is read (and dropped) */
	/* freeing reads what the server still sends: non-blocking too, under the same watch */
	int status = mysql_free_result_start(rs);
	while (status)
		status = mysql_free_result_cont(rs, wait_io(r, status));
	return rc;
}

/* The session limits of the statement and its read-only transaction. */
static int begin(struct run *r, struct t2s_error *err)
{
	const struct exec_limits *lim = r->lim;
	long lock_s = lim->lock_timeout_ms > 0 ? (lim->lock_timeout_ms + 999) / 1000 : 1;
	char sql[192];
	snprintf(sql, sizeof(sql),
		 "SET SESSION sql_select_limit = %ld, SESSION lock_wait_timeout = %ld, "
		 "SESSION innodb_lock_wait_timeout = %ld",
		 lim->max_rows + 1, lock_s, lock_s);
	MYSQL *m = r->c->my;
	if (mysql_session_set_timeout(r->c, lim->timeout_ms) != 0 || mysql_query(m, sql) != 0 ||
	    mysql_query(m, "START TRANSACTION READ ONLY") != 0)
		return my_error(r, err);
	return 0;
}

static int my_run(struct db_conn *c, const struct exec_scope *scope, const char *sql, const struct exec_limits *lim,
		  struct exec_result *res, struct t2s_error *err)
{
	size_t end;
	int rc = sql_guard_mysql_check(sql, &end, err);
	if (rc < 0)
		return rc;
	struct run r = {.c = c, .lim = lim,
			.deadline_ms = clock_now_ms() + (double)(lim->timeout_ms > 0 ? lim->timeout_ms : 0) +
				       EXEC_MYSQL_GRACE_MS};
	if (lim->timeout_ms <= 0)
		r.deadline_ms = INFINITY;
	if ((rc = begin(&r, err)) == 0 && (rc = exec_mysql_within_view(c->my, scope->schema, sql, end, err)) == 0) {
		if (send_statement(&r, sql, end) != 0)
			rc = my_error(&r, err);
		else
			rc = read_rows(&r, res, err);
	}
	if (rc == 0 && (r.timed_out || r.cancelled) && !res->truncated)
		rc = r.timed_out ? t2s_error_set(err, T2S_ERR_TIMEOUT, "statement stopped after the time limit of %ld ms",
						 lim->timeout_ms)
				 : t2s_error_set(err, T2S_ERR_CANCELLED, "statement cancelled: its request was abandoned");
	/* After a KILL QUERY the ROLLBACK may meet the kill (it came after the statement ended): the
	   result stands, and the pool's reset rolls back again or closes the connection. */
	if (mysql_query(c->my, "ROLLBACK") != 0 && rc == 0 && !r.killed)
		rc = my_error(&r, err);
	return rc;
}

/* Guard, then prepare the statement (the server parses it and resolves its names without running it). */
static int my_validate(struct db_conn *c, const struct exec_scope *scope, const char *sql,
		       const struct exec_limits *lim, struct t2s_error *err)
{
	size_t end;
	int rc = sql_guard_mysql_check(sql, &end, err);
	if (rc < 0)
		return rc;
	struct run r = {.c = c, .lim = lim, .deadline_ms = INFINITY};
	if ((rc = begin(&r, err)) < 0)
		return rc;
	rc = exec_mysql_within_view(c->my, scope->schema, sql, end, err);
	MYSQL_STMT *st = rc == 0 ? mysql_stmt_init(c->my) : NULL;
	if (rc == 0 && !st)
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	else if (rc == 0 && mysql_stmt_prepare(st, sql, (unsigned long)end) != 0) {
		struct exec_mysql_stop stop = {.timeout_ms = lim->timeout_ms};
		rc = exec_mysql_error(mysql_stmt_errno(st), mysql_stmt_error(st), &stop, T2S_ERR_SQL_INVALID, err);
	}
	if (st)
		mysql_stmt_close(st);
	if (mysql_query(c->my, "ROLLBACK") != 0 && rc == 0)
		rc = my_error(&r, err);
	return rc;
}

const struct sql_engine sql_engine_mysql = {
	.db = &db_engine_mysql,
	/* sql_analyze reads MySQL as it reads SQLite: `names` and "strings" normalised, names matched
	   ignoring case (MySQL's columns are; its table names are on Linux only as spelled) */
	.dialect = SQL_DIALECT_SQLITE,
	/* not for the guard (it reads no model), but the model comes with the role check: a database
	   whose account may write (catalog.h) has none and runs nothing */
	.needs_model = true,
	/* a caller's tables are checked on the statement as the server expands it (exec_mysql_view.h) */
	.enforces_views = true,
	.validate = my_validate,
	.run = my_run,
};
