/*
 * engine.h - one table of functions and facts per database engine.
 *
 * Everything the service does differently on SQLite and on PostgreSQL is
 * reached through a struct db_engine: connecting, resetting and cancelling
 * a connection, introspecting the schema model, the data version, our own
 * bounded read-only statements (value probes and scans) and their SQL, and
 * the dialect facts that writers of SQL and prompts need (quoting, reserved
 * words, the case-insensitive LIKE, which tables are named bare).  A schema,
 * a pool, a connection and a catalog entry each point at their engine; no
 * stage above pipeline/db/ and pipeline/sql/ names an engine, it asks the
 * one it is given.
 *
 * An engine is one file here (engine_sqlite.c, engine_pg.c, engine_mysql.c) plus its
 * execution of user SQL in pipeline/sql/ (sql_engine.h).  The tables are
 * constant and live for the whole process.
 */
#ifndef T2S_ENGINE_H
#define T2S_ENGINE_H

#include "common/error.h"

#include <stdbool.h>
#include <stddef.h>

struct catalog_db;
struct db_conn;
struct db_pool;
struct introspect_options;
struct schema;
struct schema_table;

/* Who writes a name into SQL text, for the words each one quotes (see db_engine_plain_name). */
enum db_name_use {
	DB_NAME_SQL,    /* SQL that is run (the built-in generator's statements) */
	DB_NAME_PROMPT, /* the schema shown to a model in a prompt */
};

/* A word quoted when a name is spelled like it; uses: a mask of 1 << enum db_name_use. */
struct db_reserved_word {
	const char *word; /* lower case */
	unsigned uses;
};

/*
 * Called by db_engine.query once per result row: ncols values as text
 * (NULL: SQL NULL) of lens[i] bytes, valid only during the call.  0 goes
 * on; a negative code stops the statement and query returns it.
 */
typedef int (*db_row_fn)(void *ctx, int ncols, const char *const *vals, const size_t *lens);

/* One read-only statement of the service's own (not user SQL), see db_engine.query. */
struct db_query {
	const char *sql;   /* one statement, from the engine's probe_sql / scan_sql */
	const char *param; /* its one text parameter (?1 / $1); NULL: none */
	long timeout_ms;
	bool catalog;      /* a scan of the catalog's kind (SQLite: the introspection guard) rather than a probe */
	const char *what;  /* names it in messages: "value probe" -> "value probe timed out" */
	db_row_fn fn;
	void *ctx;
};

/* The bounded scans of one column behind the value index (db_engine.scan_sql). */
enum db_scan {
	DB_SCAN_TEXT,         /* the most frequent distinct text values: (value cut to cut characters, its bytes) */
	DB_SCAN_ANY,          /* the same over every non-null value as text */
	DB_SCAN_NUMBER_RANGE, /* (min, max) of the numbers */
	DB_SCAN_DATE_RANGE,   /* (min, max) of the dates, as YYYY-MM-DD where the engine has a date type */
};

struct db_engine {
	/* ---- names and dialect facts ---- */
	const char *name;        /* "sqlite", "postgresql": responses, metrics, the schema hash */
	const char *const *url_prefixes; /* the URLs of its databases ("postgresql://"), NULL-ended */
	const char *dialect;     /* "SQLite", "PostgreSQL": the dialect's name in prompts */
	/* tables of this schema are named bare ("main", "public"); NULL: every table is (MySQL: the
	   URL's database is the only one introspected) */
	const char *home_schema;
	char quote;              /* the identifier quote, doubled inside a quoted name */
	bool folds_case;         /* unquoted names fold to lower case: a name with capitals needs quotes */
	/* a column without a declared type holds any value, and text holding a number compares and sums as one */
	bool loose_types;
	const char *like_nocase; /* the case-insensitive LIKE operator, spaced: " ILIKE " */
	bool no_nulls_order;     /* ORDER BY has no NULLS FIRST / LAST (MySQL): write x IS NULL, x instead */
	/* Lines of the prompt's dialect notes ("- ...\n"): always (NULL: none), and when strings, dates or ratios matter. */
	struct {
		const char *always, *strings, *dates, *ratios;
	} prompt_notes;
	const struct db_reserved_word *reserved; /* ended by a NULL word */

	/* ---- connections (db.c calls these for the pool) ---- */
	/* Open c (c->engine set) on the pool's target; -T2S_ERR_UNAVAILABLE with the driver's reason. */
	int (*open)(const struct db_pool *p, struct db_conn *c, struct t2s_error *err);
	void (*close)(struct db_conn *c);
	/* Before c goes back to the idle list: false when it cannot be trusted (then it is closed). */
	bool (*reset)(struct db_conn *c);
	/* Ask c's running statement to stop (any thread). */
	void (*cancel)(struct db_conn *c);
	/* A cheap round trip; -T2S_ERR_UNAVAILABLE when c is unusable. */
	int (*ping)(struct db_conn *c, struct t2s_error *err);

	/* ---- the schema model ---- */
	int (*introspect)(struct db_conn *c, const struct introspect_options *o, struct schema **ret,
			  struct t2s_error *err);
	/*
	 * What the connected role may do beyond reading ("" when nothing; see
	 * introspect_pg_role), checked before each introspection; NULL: the
	 * engine has no roles (nothing to check).
	 */
	int (*role_privilege)(struct db_conn *c, long timeout_ms, char *ret_privilege, size_t size,
			      struct t2s_error *err);
	/* The class of a declared type as the database spells it: an enum schema_type_class (schema_finish). */
	int (*type_class)(const char *type);
	/* A token that changes with the database's data, into ret[size] (catalog_db_data_version). */
	int (*data_version)(struct catalog_db *db, char *ret, size_t size, struct t2s_error *err);

	/* ---- our own read-only statements: value probes and scans ---- */
	/* name as a quoted identifier for c (malloc'd; NULL: out of memory). */
	char *(*quote_name)(struct db_conn *c, const char *name);
	/* The table as its probes and scans name it (malloc'd; NULL: out of memory). */
	char *(*quote_table)(struct db_conn *c, const struct schema_table *t);
	/*
	 * The probe of column col (quoted) of table (quoted) for the value in
	 * the one parameter: like false, equal ignoring case; like true, LIKE
	 * ignoring case with '\' escaping.  Distinct values as text, at most
	 * limit.  *ret malloc'd; 0 or -T2S_ERR_NOMEM.
	 */
	int (*probe_sql)(const char *col, const char *table, bool like, int limit, char **ret);
	/*
	 * The scan what of col over the first rows rows of table; DB_SCAN_TEXT
	 * and DB_SCAN_ANY keep the limit most frequent values, each cut to cut
	 * characters, with its full length in bytes.  *ret malloc'd; 0 or
	 * -T2S_ERR_NOMEM.
	 */
	int (*scan_sql)(enum db_scan what, const char *col, const char *table, long rows, int cut, int limit,
			char **ret);
	/*
	 * Run q read-only under q->timeout_ms, each row to q->fn.  0, fn's
	 * negative code, or with err filled: -T2S_ERR_TIMEOUT ("<what> timed
	 * out"), -T2S_ERR_CANCELLED (interrupted without a timeout),
	 * -T2S_ERR_UNAVAILABLE (the connection is lost), -T2S_ERR_SQL_FAILED.
	 */
	int (*query)(struct db_conn *c, const struct db_query *q, struct t2s_error *err);
};

extern const struct db_engine db_engine_sqlite;
extern const struct db_engine db_engine_pg;
extern const struct db_engine db_engine_mysql;

/* The engine whose url_prefixes url starts with (engine_list.c), or NULL. */
const struct db_engine *db_engine_for_url(const char *url);

/* The engines by name, for pipeline/db/ (which picks one per configured database) and the tests. */
#define DB_ENGINE_SQLITE (&db_engine_sqlite)
#define DB_ENGINE_POSTGRES (&db_engine_pg)
#define DB_ENGINE_MYSQL (&db_engine_mysql)

/*
 * True when name can be written bare for use: an identifier of letters,
 * digits and '_' not starting with a digit, with no capital where the
 * engine folds case, and not one of the engine's reserved words for use.
 */
bool db_engine_plain_name(const struct db_engine *e, const char *name, enum db_name_use use);

/* True when a table of schema is named schema-qualified (schema is not the engine's home schema). */
bool db_engine_qualifies(const struct db_engine *e, const char *schema);

/*
 * The words SQLite and PostgreSQL reserve that a schema may use as a name,
 * one list for both engines (their writers have always quoted the same
 * words): every word is quoted in SQL that runs, a core subset in prompts.
 */
extern const struct db_reserved_word db_sql_reserved_words[];

#endif
