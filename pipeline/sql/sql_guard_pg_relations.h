/*
 * sql_guard_pg_relations.h - which relations a PostgreSQL statement may
 * read: the part of the statement guard (sql_guard_pg.h) that makes a
 * database's configured schemas (databases[].schemas) a boundary.
 *
 * A statement may read
 *   - relations of the database's schemas: the configured ones, or, when
 *     none are configured, every schema but the system ones (pg_catalog,
 *     information_schema and every schema whose name begins with "pg_":
 *     pg_toast, pg_temp_N);
 *   - three catalog views that list what the database holds and nothing
 *     of any other database or session: information_schema.tables,
 *     information_schema.columns and pg_catalog.pg_tables (models write
 *     them for "which tables are there" questions).  They list the tables
 *     the role may use in every schema of that database, names only.
 *     When the database has configured schemas, the statement runs with
 *     each of them narrowed to those schemas (sql_guard_pg_scope_catalogs:
 *     "(SELECT * FROM information_schema.columns WHERE table_schema IN
 *     ('public')) AS columns"), so another schema's tables and columns are
 *     not listed.  (The service is read-only: it cannot create filtering
 *     views, and a role's privileges do not hide pg_tables' rows.)
 * Types a statement names follow the same boundary: a cast to a type that
 * looks objects up by name (regclass, regtype, regnamespace, ... :
 * 'other.t'::regclass) is refused, and so is a type or function qualified
 * with a schema outside the boundary (NULL::other.t, other.f()), whose
 * existence alone is what the boundary hides.  For a caller limited to some
 * tables (a view, schema_grant.h), the row type of a table it may not see
 * (NULL::payroll, its array type _payroll) is refused in PostgreSQL's
 * words for a type it does not have, so it answers as a missing table's.
 * Everything else is refused, among it the cluster-wide catalogs and
 * statistics (pg_stat_activity and every pg_stat_* view, pg_database,
 * pg_roles, pg_authid, pg_settings, pg_locks, pg_prepared_xacts, ...) and,
 * in any schema, a relation whose name begins with "pg_" (every relation
 * of pg_catalog is named so, and so are extensions' views wherever they
 * are installed, e.g. pg_stat_statements).
 *
 * Names resolve as PostgreSQL resolves them: a name in a WITH list that is
 * visible where it is used names that CTE, not a relation (PostgreSQL's
 * scoping: a CTE of a plain WITH is visible in the CTEs after it and in the
 * query below; of a WITH RECURSIVE, in all of them); any other unqualified
 * name is looked up in pg_catalog first (so "pg_stat_activity" is
 * pg_catalog's), then in the session's search_path, which the executor sets
 * for every statement to the schemas sql_guard_pg_search_path gives (the
 * configured ones, else public), so it never reaches a schema outside the
 * boundary.  Subquery and table aliases are not relations.
 */
#ifndef T2S_SQL_GUARD_PG_RELATIONS_H
#define T2S_SQL_GUARD_PG_RELATIONS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/contract.h"
#include "common/error.h"

/*
 * Checks every relation that stmt (a statement node of libpg_query's JSON
 * parse tree, {"SelectStmt": {...}}) reads against the boundary above;
 * schemas (n_schemas names) are the database's configured schemas, NULL for
 * every schema but the system ones.
 *
 * Returns 0 when every relation may be read; -T2S_ERR_SQL_REJECTED naming
 * the first relation that may not ("relation pg_catalog.pg_database is not
 * allowed: ...", "relation other.secret is not allowed: schema other is not
 * one of this database's schemas (public)"), or when the tree is nested
 * deeper than SQL_GUARD_PG_MAX_DEPTH or a relation name is unreadable.
 * stmt and schemas are borrowed; err (may be NULL) is filled on failure.
 */
/* Most catalog-view reads one statement may make (beyond: refused). */
#define SQL_GUARD_PG_MAX_CATALOG_REFS 16

/* Where a statement reads an allowed catalog view: the byte offset of its name in the statement. */
struct sql_guard_pg_catalog_ref {
	size_t location;
	int view;     /* which of the allowed views */
	bool aliased; /* the reference has an alias of its own ("... AS c") */
};

struct sql_guard_pg_catalog_refs {
	struct sql_guard_pg_catalog_ref at[SQL_GUARD_PG_MAX_CATALOG_REFS];
	size_t n;
};

/* As above; refs (may be NULL) gets where the statement reads the catalog views when schemas are configured. */
T2S_MUST_CHECK
int sql_guard_pg_check_relations(const json_t *stmt, const char *const *schemas, size_t n_schemas,
				 struct sql_guard_pg_catalog_refs *refs, struct t2s_error *err);

/*
 * The statement sql[0, end) with each catalog-view read of refs replaced by
 * the view narrowed to schemas (n_schemas > 0): a new string the caller
 * frees, or NULL when out of memory or a reference is not where a name can
 * be (the caller then refuses the statement).
 */
char *sql_guard_pg_scope_catalogs(const char *sql, size_t end, const struct sql_guard_pg_catalog_refs *refs,
				  const char *const *schemas, size_t n_schemas);

/*
 * As sql_guard_pg_check_relations (refs likewise), for a caller limited to the tables of
 * view (schema_grant.h; NULL or not a view: no such limit): every relation
 * it names that is not a CTE must be one of them (so no catalog view
 * either), else -T2S_ERR_SQL_INVALID 'relation "x" does not exist', as
 * PostgreSQL says of a relation it does not have.  What the names resolve to
 * (and what views read) is checked on the plan (exec_pg.c).
 */
struct schema;
T2S_MUST_CHECK
int sql_guard_pg_check_relations_in(const json_t *stmt, const char *const *schemas, size_t n_schemas,
				    const struct schema *view, struct sql_guard_pg_catalog_refs *refs, struct t2s_error *err);

/*
 * The schemas the session's search_path must hold, in order, while a
 * statement checked against schemas runs: schemas less the system ones
 * (which the boundary never holds), or "public" when schemas is NULL or
 * empty.  ret_path (room for n_schemas entries, at least 1) gets them,
 * borrowed from schemas or static; returns their count (0 when every
 * configured schema is a system one: the path must then be empty).
 */
size_t sql_guard_pg_search_path(const char *const *schemas, size_t n_schemas, const char **ret_path);

#endif
