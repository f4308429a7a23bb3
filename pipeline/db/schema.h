/*
 * schema.h - the introspected schema model of one database.
 *
 * A struct schema is built once by an introspector (introspect_sqlite.c,
 * introspect_pg.c), then published by the catalog and never modified: any
 * number of threads may read it.  It is reference-counted; the catalog holds
 * one reference and every reader takes its own with schema_ref and drops it
 * with schema_unref (the last unref frees it).  All strings and arrays live
 * in the schema's arena.
 *
 * Names keep the database's own spelling and case.
 *
 * Table identity.  A table's API name (schema_table.api_name) is its bare
 * name when it lives in SQLite's "main" or PostgreSQL's "public" schema, and
 * "schema.table" otherwise.  It is the one name every response shows, every
 * request and model answer is matched against, and the state store keys on;
 * it is set once by schema_finish and no caller builds it again.  Two
 * PostgreSQL schemas each holding a table "t" are two tables ("a.t", "b.t");
 * a bare "t" then names neither of them (unless public holds a "t" too).
 */
#ifndef T2S_SCHEMA_H
#define T2S_SCHEMA_H

#include "common/arena.h"
#include "common/error.h"
#include "common/hash.h"
#include "pipeline/db/pg_functions.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

enum db_engine { DB_ENGINE_SQLITE, DB_ENGINE_POSTGRES };

/* "sqlite" or "postgresql". */
const char *db_engine_name(enum db_engine engine);

struct schema_column {
	const char *name;
	const char *type;    /* declared type as the database spells it; "" when none */
	bool nullable;
	bool primary_key;
	const char *comment; /* NULL when none */
	const char **samples; /* distinct non-null sample values as text */
	size_t n_samples;
};

struct schema_foreign_key {
	const char **columns;
	size_t n_columns;
	const char *ref_schema; /* NULL for SQLite */
	const char *ref_table;
	const char **ref_columns; /* same count as columns; may name the referenced key */
	/* Set by schema_finish: */
	int ref_index;            /* index of the referenced table in schema.tables; -1: not in the model */
	const char *ref_api_name; /* API name of (ref_schema, ref_table) as the key spells it */
};

struct schema_table {
	const char *schema; /* "main" for SQLite, the Postgres schema otherwise */
	const char *name;   /* bare name, as the database spells it */
	const char *api_name; /* the table's identity: see "Table identity" above; set by schema_finish */
	const char *kind;   /* "table", "view", "materialized_view", "foreign_table" */
	const char *comment;
	long long row_count; /* -1 when unknown */
	bool row_count_estimated;
	struct schema_column *columns;
	size_t n_columns;
	const char **primary_key;
	size_t n_primary_key;
	struct schema_foreign_key *foreign_keys;
	size_t n_foreign_keys;
};

struct schema {
	atomic_int refs;
	struct arena arena;
	const char *database;
	enum db_engine engine;
	struct schema_table *tables;
	size_t n_tables;
	char hash[SHA256_HEX_LEN + 1]; /* over the DDL facts, see schema_compute_hash */
	double introspect_ms;
	char introspected_at[40];
	size_t *by_api_name; /* table indexes sorted by api_name (schema_finish) */
	/* PostgreSQL: the database's functions and which a statement may call
	   (pg_functions.h), owned by the schema and freed with it; NULL for SQLite. */
	struct pg_functions *pg_functions;
};

/* A new empty schema with one reference, or NULL when out of memory. */
struct schema *schema_new(const char *database, enum db_engine engine);
struct schema *schema_ref(struct schema *s);
/* Drops one reference; frees on the last. Accepts NULL; returns NULL. */
struct schema *schema_unref(struct schema *s);

/*
 * Seal a schema whose tables are filled in: set every table's api_name and
 * every foreign key's ref_index and ref_api_name, index the tables by API
 * name and compute the hash.  Introspectors (and tests building a schema by
 * hand) call it once, before the schema is shared.  Returns 0 or
 * -T2S_ERR_NOMEM.
 */
int schema_finish(struct schema *s);

/*
 * Hash of the DDL facts: tables (schema, name, kind, comment), columns (name,
 * type, nullability, key role, comment), primary and foreign keys.  Row
 * counts and samples are data, not DDL, and do not change the hash.
 */
void schema_compute_hash(struct schema *s);

/*
 * The table whose API name is exactly name (case-sensitive; O(log n)), or
 * NULL.  A bare name is not looked up in other schemas: with tables "a.t"
 * and "b.t" (and none in public), "t" is NULL.  Should two tables share an
 * API name (a public table literally named "a.t" beside table "t" of schema
 * "a"), the name is ambiguous and NULL too.
 */
const struct schema_table *schema_find_table(const struct schema *s, const char *name);

/* JSON of the whole model (new reference). */
json_t *schema_to_json(const struct schema *s);

#endif
