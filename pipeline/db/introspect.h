/*
 * introspect.h - read a database's schema model through one pooled
 * connection: tables and views, columns (type, nullability, key role,
 * comment), primary and foreign keys, row counts and a few distinct sample
 * values per column.  Every query is bounded: samples come from the first
 * sample_rows rows of a table, SQLite counts stop at row_count_scan_limit
 * (then reported as an estimate), Postgres counts come from the catalog, and
 * each statement runs under timeout_ms.
 *
 * On success *ret is a new schema (one reference, sealed by schema_finish:
 * API names, foreign-key targets, hash) that the caller owns.
 */
#ifndef T2S_INTROSPECT_H
#define T2S_INTROSPECT_H

#include "common/contract.h"
#include "pipeline/db/db.h"
#include "common/error.h"
#include "pipeline/db/schema.h"

struct introspect_options {
	const char *database; /* name the schema is registered under */
	int sample_values;
	int sample_rows;
	int sample_value_max_len;
	long timeout_ms;
	long row_count_scan_limit;
	const char *const *pg_schemas; /* NULL: every non-system schema */
	size_t n_pg_schemas;
};

T2S_MUST_CHECK
int introspect_sqlite(struct db_conn *c, const struct introspect_options *o, struct schema **ret,
		      struct t2s_error *err);
T2S_MUST_CHECK
int introspect_pg(struct db_conn *c, const struct introspect_options *o, struct schema **ret,
		  struct t2s_error *err);

/*
 * What the connected PostgreSQL role may do beyond reading, checked at start
 * and on every refresh (the catalog decides what follows, see catalog.h).
 * On 0, ret_privilege holds "" when the role can only read, else one phrase
 * naming the first privilege found, in this order: superuser; membership of
 * pg_write_server_files, pg_read_server_files or pg_execute_server_program;
 * INSERT, UPDATE, DELETE or TRUNCATE on any table, view or foreign table
 * outside the system schemas (e.g. "role \"app\" has INSERT on table
 * public.orders").  -T2S_ERR_* when the check itself fails (err filled).
 */
T2S_MUST_CHECK
int introspect_pg_role(struct db_conn *c, long timeout_ms, char *ret_privilege, size_t size, struct t2s_error *err);

/* The schema model of the MySQL / MariaDB database of c's URL, from information_schema (introspect_mysql.c). */
T2S_MUST_CHECK
int introspect_mysql(struct db_conn *c, const struct introspect_options *o, struct schema **ret,
		     struct t2s_error *err);

/*
 * What the connected MySQL / MariaDB account may do beyond reading, from
 * SHOW GRANTS (the catalog decides what follows, as for PostgreSQL): ""
 * when every grant is SELECT, SHOW VIEW or USAGE, else one phrase naming the
 * first other privilege found (e.g. "account 'app'@'%' has INSERT on
 * `shop`.*"), a grant option, or a granted role.  -T2S_ERR_* when the check
 * itself fails.
 */
T2S_MUST_CHECK
int introspect_mysql_role(struct db_conn *c, long timeout_ms, char *ret_privilege, size_t size,
			  struct t2s_error *err);

/*
 * Shared by both introspectors: keep up to o->sample_values distinct values
 * (UTF-8-safe, cut to sample_value_max_len) in col.  Returns 0 or -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int introspect_add_sample(struct schema *s, struct schema_column *col, size_t *cap,
			  const struct introspect_options *o, const char *value, size_t len);

/*
 * Keys read one (constraint, key position) row at a time, as the PostgreSQL
 * and MySQL catalogs give them: rows grouped by table and constraint, each
 * constraint's positions in order.  A row of a primary key (primary = true)
 * adds column to t's primary key and marks that column; a row of a foreign
 * key starts a new key in t when its table or constraint name differs from
 * the previous row's (ref_schema, ref_table: its target), then adds the pair
 * (column, ref_column).  Every string stays owned by the caller's arena (the
 * schema's); the reader keeps the capacities between rows.  Zero-initialise
 * a struct introspect_keys before the first row.
 */
struct introspect_key_row {
	struct schema_table *table;
	bool primary;
	const char *constraint; /* the constraint's name; NULL: every row a key of its own */
	const char *column;
	const char *ref_schema, *ref_table, *ref_column; /* a foreign key's target */
};

struct introspect_keys {
	struct schema_table *last_table;
	const char *last_constraint;
	size_t pk_cap, fk_cap, col_cap;
};

/* Add one row; 0 or -T2S_ERR_NOMEM. */
T2S_MUST_CHECK
int introspect_add_key(struct schema *s, struct introspect_keys *k, const struct introspect_key_row *row);

/*
 * SQLite's foreign keys come whole from one PRAGMA per table: start a new one
 * in t (*cap: capacity of t->foreign_keys), then add its column pairs
 * (*col_cap: capacity of the new key's arrays, reset by
 * introspect_new_foreign_key).  NULL / -T2S_ERR_NOMEM when out of memory.
 */
struct schema_foreign_key *introspect_new_foreign_key(struct schema *s, struct schema_table *t, size_t *cap,
						      size_t *col_cap);
T2S_MUST_CHECK
int introspect_add_foreign_key_column(struct schema *s, struct schema_foreign_key *fk, size_t *col_cap,
				      const char *column, const char *ref_column);

#endif
