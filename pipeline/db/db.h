/*
 * db.h - connections to users' databases and the per-database pool.
 *
 * A struct db_conn is one open connection (sqlite3 handle opened read-only
 * with its guard, a libpq connection, or a MySQL / MariaDB Connector/C one).  A struct db_pool hands out at most
 * `size` connections; one thread holds a connection at a time.  Connections
 * are opened lazily and reused; db_pool_put resets a Postgres connection
 * (ROLLBACK if needed, then DISCARD ALL: settings, advisory locks, prepared
 * statements, temp objects) before it becomes idle, and closes it instead
 * when the reset fails or the caller says it is broken.
 */
#ifndef T2S_DB_H
#define T2S_DB_H

#include "common/contract.h"
#include "common/error.h"
#include "pipeline/db/engine.h"
#include "pipeline/db/schema.h"
#include "pipeline/db/sqlite_guard.h"

#include <libpq-fe.h>
#include <mysql.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>

struct db_conn {
	const struct db_engine *engine; /* the pool's */
	sqlite3 *sqlite;
	PGconn *pg;
	/* MySQL / MariaDB (engine_mysql.c): the handle, the server's id of its session (KILL QUERY
	   from a second connection), the pool whose target opens that second connection, and
	   whether the server is MariaDB (max_statement_time) or MySQL (max_execution_time). */
	MYSQL *my;
	unsigned long my_thread_id;
	const struct db_pool *my_pool;
	bool my_mariadb;
	struct sqlite_guard guard; /* SQLite only */
	struct db_conn *next;      /* idle list link */
	struct db_conn *busy_next; /* in-use list link (for db_pool_cancel_all) */
};

struct db_pool {
	const struct db_engine *engine;
	char *target;           /* sqlite path, Postgres or MySQL URL (owned) */
	char *password;         /* Postgres, MySQL: given after the URL (owned, wiped on release); NULL: none */
	int size;               /* most connections open at once */
	long wait_ms;           /* how long acquire waits for a free connection */
	long connect_timeout_s; /* Postgres connect_timeout */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct db_conn *idle;
	struct db_conn *busy; /* connections handed out */
	int n_idle;
	int n_in_use;
	int n_opening; /* connects in progress, counted against size */
	bool closed;
	char name[64];  /* for the connect-failure note ("" until db_pool_set_name) */
	/* The driver's reason of the last failed connect ("" after a good one), under lock: it names hosts,
	   ports, roles or paths, so it goes to the log and the admin view of /readyz, never to a client */
	char connect_error[T2S_ERROR_MESSAGE_MAX];
};

/* The detail a client sees when a connect fails (the driver's own reason goes to DB_CONNECT_NOTE). */
#define DB_CONNECT_FAILED_MESSAGE \
	"cannot connect to the database (the reason is in the service's log and the admin view of /readyz)"

/*
 * The process's note of failed connects: called with the pool's name and
 * the driver's reason on the thread that tried (the server logs it; NULL:
 * none).  Set once at start, before any pool is used.
 */
typedef void (*db_connect_note_fn)(const char *pool_name, const char *detail);
void db_set_connect_note(db_connect_note_fn note);

/* Name p for the connect-failure note (copied, truncated to 63 bytes). */
void db_pool_set_name(struct db_pool *p, const char *name);

/* The driver's reason of p's last failed connect into buf ("" when the last connect worked). */
void db_pool_connect_error(struct db_pool *p, char *buf, size_t size);

T2S_MUST_CHECK
int db_pool_init(struct db_pool *p, const struct db_engine *engine, const char *target, int size, long wait_ms,
		 long connect_timeout_s);
/*
 * PostgreSQL: connect with this password (copied; NULL: the URL's or libpq's
 * own), given after the URL so it wins.  Before the first acquire.
 * 0, or -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int db_pool_set_password(struct db_pool *p, const char *password);
/* Close idle connections and free the pool's contents. Every connection must have been put back. */
void db_pool_release(struct db_pool *p);

/*
 * Take a connection, opening one if the pool has room.  Waits up to wait_ms
 * for a free one (-T2S_ERR_UNAVAILABLE "pool exhausted" past it); a connect
 * failure is -T2S_ERR_UNAVAILABLE with DB_CONNECT_FAILED_MESSAGE (the
 * driver's reason is kept for db_pool_connect_error and noted).  The caller owns
 * *ret until db_pool_put.
 */
T2S_MUST_CHECK
int db_pool_acquire(struct db_pool *p, struct db_conn **ret, struct t2s_error *err);

/* Give c back; broken = true closes it instead of reusing it. */
void db_pool_put(struct db_pool *p, struct db_conn *c, bool broken);

void db_pool_stats(struct db_pool *p, int *ret_in_use, int *ret_idle);

/*
 * Ask every connection in use to stop its current statement (SQLite:
 * the engine's cancel: sqlite3_interrupt, a PostgreSQL cancel request).  For shutdown, once the
 * drain time is up.  The statements fail with a timeout-like error and the
 * connections come back to the pool as usual.
 */
void db_pool_cancel_all(struct db_pool *p);

/* Close idle connections (after a refresh or when the database went away). */
void db_pool_drain_idle(struct db_pool *p);

#endif
