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
#include "common/contract.h"
#include "common/error.h"
#include "common/hash.h"
#include "pipeline/db/engine.h"
#include "pipeline/db/pg_functions.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>


/*
 * The class of a column's declared type, the one every stage reads (set by
 * schema_finish).  SQLite: its affinity rules on the declared type (INT
 * integer; CHAR, CLOB, TEXT text; BLOB other; REAL, FLOA, DOUB, NUM, DEC
 * real), after BOOL (boolean) and DATE or TIME (date).  PostgreSQL: the
 * type's name as format_type() prints it.
 */
enum schema_type_class {
	SCHEMA_TYPE_UNKNOWN, /* no declared type or an unrecognised one: SQLite's untyped columns (any
				value); PostgreSQL's enums, domains, reg* and extension types */
	SCHEMA_TYPE_INTEGER,
	SCHEMA_TYPE_REAL,    /* floating point, numeric, decimal, money */
	SCHEMA_TYPE_TEXT,
	SCHEMA_TYPE_DATE,    /* dates, timestamps and times of day */
	SCHEMA_TYPE_BOOLEAN,
	SCHEMA_TYPE_OTHER,   /* binary, JSON, XML, UUID, network, geometric, bit strings, arrays, ranges, ... */
};

struct schema_foreign_key;

struct schema_column {
	const char *name;
	const char *type;    /* declared type as the database spells it; "" when none */
	bool nullable;
	bool primary_key;    /* part of the primary key (schema_finish sets it for those the table lists) */
	const char *comment; /* NULL when none */
	const char **samples; /* distinct non-null sample values as text */
	size_t n_samples;
	/* Set by schema_finish: */
	enum schema_type_class type_class;
	bool key;                                 /* primary_key, or part of a foreign key */
	const struct schema_foreign_key *reference; /* the first foreign key holding it; NULL: none */
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
	const struct db_engine *engine; /* its engine's table (engine.h) */
	struct schema_table *tables;
	size_t n_tables;
	char hash[SHA256_HEX_LEN + 1]; /* over the DDL facts, see schema_compute_hash */
	double introspect_ms;
	char introspected_at[40];
	size_t *by_api_name; /* table indexes sorted by api_name (schema_finish) */
	/* PostgreSQL: the database's functions and which a statement may call
	   (pg_functions.h), owned by the schema and freed with it; NULL for SQLite. */
	struct pg_functions *pg_functions;
	/* A caller's view (schema_grant.h, schema_restrict): the granted tables of parent (a reference,
	   whose strings this one shares; its pg_functions are parent's built-ins alone); NULL for the
	   database's own model. */
	struct schema *parent;
	/* The name the index registries keep this model's indexes under: database, or for a view
	   "database#<grant key>" (each table set its own column and value index). */
	const char *index_name;
	const char *grant_key; /* a view's grant key (schema_grant.h); NULL for the database's own model */
};

/* A new empty schema with one reference, or NULL when out of memory. */
struct schema *schema_new(const char *database, const struct db_engine *engine);
struct schema *schema_ref(struct schema *s);
/* Drops one reference; frees on the last. Accepts NULL; returns NULL. */
struct schema *schema_unref(struct schema *s);

/*
 * Seal a schema whose tables are filled in: set every table's api_name,
 * every foreign key's ref_index and ref_api_name, every column's type_class,
 * key and reference, index the tables by API name and compute the hash.
 * Introspectors (and tests building a schema by hand) call it once, before
 * the schema is shared.  Returns 0 or -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
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

/* How loosely schema_resolve_table may match a name; each step is tried after the stricter ones. */
enum schema_name_match {
	SCHEMA_NAME_EXACT,  /* the API name as spelled */
	SCHEMA_NAME_NOCASE, /* the API name, or "schema.table", ignoring case */
	SCHEMA_NAME_BARE,   /* the bare table name ignoring case, in any schema */
};

/*
 * The table a name written by a person, a model or a statement names, as an
 * index into s->tables, or -1: the steps from SCHEMA_NAME_EXACT to loosest
 * are tried in turn and the first step that matches decides; a step that
 * matches two tables names neither (-1: the name is not guessed at).  among
 * (n_among indexes) limits the tables considered; NULL: all of them.
 * schema_find_table is the exact step over all tables, in O(log n).
 */
int schema_resolve_table(const struct schema *s, const char *name, enum schema_name_match loosest, const int *among,
			 size_t n_among);

/* True when c's type class is a number: SCHEMA_TYPE_INTEGER or SCHEMA_TYPE_REAL. */
bool schema_column_is_number(const struct schema_column *c);

/*
 * How many of c's sampled values are numbers as a whole text ("1995", "3.5", not "80,000" or "3:45",
 * whose leading digits are all SQLite would add up).
 */
size_t schema_column_numeric_samples(const struct schema_column *c);

/* JSON of the whole model (new reference). */
json_t *schema_to_json(const struct schema *s);

/*
 * The compact text of schema_to_json(s), written one table at a time so
 * that only one table's tree exists at once (fec, 71,833 columns: 8 MB of
 * text instead of a 98 MB tree).  Malloc'd (the caller frees it), its length
 * in *ret_len (may be NULL); NULL when out of memory.
 */
char *schema_to_json_text(const struct schema *s, size_t *ret_len);

#endif
