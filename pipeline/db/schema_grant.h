/*
 * schema_grant.h - table-level access: the tables of one database a caller
 * may see (an API key's "tables", a JWT's tables claim), and the view of
 * the schema model that holds only them.
 *
 * The view is how every stage keeps to the grant without knowing of it:
 * linking, descriptions, evidence, value probes, prompts and the built-in
 * read the schema model they are given, and a view is a schema model
 * (schema.h) of the granted tables alone: their columns, samples and keys,
 * foreign keys to tables outside the grant dropped, its own hash, and its
 * own index_name, so its column and value indexes are built from it alone
 * (the registries keep them apart from the whole database's).  The
 * statement guards read the grant from the view too (exec.h): SQLite's
 * authorizer refuses reading any table outside it, through views included;
 * PostgreSQL's guard refuses naming one and then checks the plan.
 *
 * Names are API names (schema.h): "t" in SQLite's main and PostgreSQL's
 * public, "schema.t" otherwise; a name the database does not hold grants
 * nothing.  A grant of no tables is a view of no tables.
 */
#ifndef T2S_SCHEMA_GRANT_H
#define T2S_SCHEMA_GRANT_H

#include "common/contract.h"
#include "common/error.h"
#include "common/hash.h"
#include "pipeline/db/schema.h"

#include <stdbool.h>
#include <stddef.h>

struct schema_grant {
	const char *const *tables; /* API names (borrowed) */
	size_t n_tables;
	char key[SHA256_HEX_LEN + 1]; /* names the table set (schema_grant_init): sorted names, hashed */
};

/* Fill g for tables (borrowed, n names) and compute its key.  0 or -T2S_ERR_NOMEM. */
T2S_MUST_CHECK
int schema_grant_init(struct schema_grant *g, const char *const *tables, size_t n);

/* Does g grant the table whose API name is api_name (exactly, or ignoring case where the engine does)? */
bool schema_grant_allows(const struct schema_grant *g, const struct schema *full, const char *api_name);

/*
 * A new view of full holding the tables g grants (see above), sealed:
 * *ret has one reference (it holds one on full).  Its index_name is
 * "database#<g's key>", or with shared_index "database#shared": views past
 * the catalog's bound share one slot of each index registry (each index
 * there is rebuilt when another view asks, so memory stays bounded however
 * many table sets callers bring).  0 or -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int schema_restrict(struct schema *full, const struct schema_grant *g, bool shared_index, struct schema **ret,
		    struct t2s_error *err);

/* Is s a caller's view (schema_restrict)? */
static inline bool schema_is_view(const struct schema *s)
{
	return s && s->parent != NULL;
}

/*
 * May a statement on the view s read the table (schema may be NULL: the
 * engine's home schema) of that name?  True for every table when s is not a
 * view.  Names compare exactly, or ignoring case where the engine folds
 * them (SQLite).
 */
bool schema_view_allows(const struct schema *s, const char *schema, const char *name);

/*
 * Is (schema, name) a table or view of the whole database that the view s
 * leaves out: one the caller must not learn exists?  False when s is not a
 * view, when the view holds it, and when the database has no such table.
 */
bool schema_view_hides(const struct schema *s, const char *schema, const char *name);

#endif
