/*
 * sql_guard_pg_relations.c - the relations a PostgreSQL statement reads,
 * checked against the database's schemas (see sql_guard_pg_relations.h for
 * the rule).
 *
 * In libpg_query's JSON tree every relation a query reads is a RangeVar
 * node ({"RangeVar": {"schemaname": ..., "relname": ...}}): in FROM, in
 * JOIN, in TABLE t, under TABLESAMPLE, in any subquery.  A walk over the
 * whole tree finds them all without knowing where each may stand; what it
 * must know is where CTE names are visible, so it treats SelectStmt nodes
 * apart: their withClause opens a scope, and their "larg"/"rarg" (the two
 * sides of UNION/INTERSECT/EXCEPT, printed bare, not as {"SelectStmt": ...})
 * are select statements too.
 */
#include "pipeline/sql/sql_guard_pg_relations.h"

#include "pipeline/sql/sql_guard_pg.h"
#include "pipeline/db/schema_grant.h"

#include <stdbool.h>
#include <string.h>

/*
 * Catalog views a statement may read, whatever the schemas: each lists
 * what this one database holds (table and column names the role may use)
 * and nothing of other databases, roles, sessions or settings.
 */
static const struct {
	const char *schema;
	const char *name;
} allowed_catalog_views[] = {
	{"information_schema", "tables"},
	{"information_schema", "columns"},
	{"pg_catalog", "pg_tables"},
};

#define ALLOWED_LIST "information_schema.tables, information_schema.columns and pg_catalog.pg_tables"

/* CTE names visible at a point of the tree: the first `visible` of a WITH list, then the enclosing ones. */
struct cte_scope {
	const json_t *ctes; /* a withClause's "ctes" array */
	size_t visible;
	const struct cte_scope *outer;
};

struct relations_ctx {
	const char *const *schemas;
	size_t n_schemas;
	const struct schema *view; /* a caller's view (schema_grant.h): only its tables; NULL: no such limit */
	struct t2s_error *err;
};

static bool starts_with_pg(const char *name)
{
	return strncmp(name, "pg_", 3) == 0;
}

/* pg_catalog, information_schema, pg_toast, pg_temp_N: never within the boundary. */
static bool is_system_schema(const char *schema)
{
	return starts_with_pg(schema) || strcmp(schema, "information_schema") == 0;
}

static bool is_allowed_catalog_view(const char *schema, const char *name)
{
	for (size_t i = 0; i < sizeof(allowed_catalog_views) / sizeof(allowed_catalog_views[0]); i++)
		if (strcmp(schema, allowed_catalog_views[i].schema) == 0 && strcmp(name, allowed_catalog_views[i].name) == 0)
			return true;
	return false;
}

static bool schema_in_boundary(const struct relations_ctx *cx, const char *schema)
{
	if (is_system_schema(schema))
		return false;
	if (!cx->schemas || cx->n_schemas == 0)
		return true;
	for (size_t i = 0; i < cx->n_schemas; i++)
		if (strcmp(schema, cx->schemas[i]) == 0)
			return true;
	return false;
}

/* True when unqualified name is a CTE visible in scope. */
static bool names_cte(const struct cte_scope *scope, const char *name)
{
	for (; scope; scope = scope->outer)
		for (size_t i = 0; i < scope->visible; i++) {
			const json_t *cte = json_object_get(json_array_get(scope->ctes, i), "CommonTableExpr");
			const char *cte_name = json_string_value(json_object_get(cte, "ctename"));
			if (cte_name && strcmp(cte_name, name) == 0)
				return true;
		}
	return false;
}

/* Refusal naming the configured schemas (or "every non-system schema"). */
static int reject_schema(const struct relations_ctx *cx, const char *schema, const char *name)
{
	char list[256] = "";
	size_t used = 0;

	for (size_t i = 0; i < cx->n_schemas && used < sizeof(list); i++) {
		int n = snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", cx->schemas[i]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED,
			     "relation %.63s.%.63s is not allowed: schema %.63s is not one of this database's schemas (%s); "
			     "of the catalogs only " ALLOWED_LIST " may be read",
			     schema, name, schema, cx->n_schemas ? list : "every schema but the system ones");
}

/*
 * A relation a caller limited to cx->view's tables names (not a CTE): one of
 * them, or refused exactly as PostgreSQL refuses a relation it does not have
 * (no existence oracle).  An unqualified name passes when some schema of the
 * search path holds a granted table of that name: which one PostgreSQL reads
 * is checked on the plan (exec_pg.c).
 */
static int check_granted(const struct relations_ctx *cx, const char *schema, const char *name)
{
	const char *path[64];
	size_t n = schema ? 0 : sql_guard_pg_search_path(cx->schemas, cx->n_schemas < 64 ? cx->n_schemas : 64, path);
	bool ok = schema ? schema_view_allows(cx->view, schema, name) : false;
	for (size_t i = 0; i < n && !ok && !starts_with_pg(name); i++)
		ok = schema_view_allows(cx->view, path[i], name);
	if (ok)
		return 0;
	return schema ? t2s_error_set(cx->err, T2S_ERR_SQL_INVALID, "relation \"%.63s.%.63s\" does not exist", schema, name)
		      : t2s_error_set(cx->err, T2S_ERR_SQL_INVALID, "relation \"%.63s\" does not exist", name);
}

/* A RangeVar body: the relation it names, resolved as PostgreSQL would, inside the boundary or refused. */
static int check_range_var(const json_t *rv, const struct cte_scope *scope, struct relations_ctx *cx)
{
	const char *name = json_string_value(json_object_get(rv, "relname"));
	const json_t *schema_node = json_object_get(rv, "schemaname");
	const char *schema = json_string_value(schema_node);

	if (!name || (schema_node && !schema))
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED, "relation with an unreadable name is not allowed");
	if (cx->view && (schema || !names_cte(scope, name)))
		return check_granted(cx, schema, name);
	if (!schema) {
		if (names_cte(scope, name))
			return 0;
		if (!starts_with_pg(name))
			return 0; /* not in pg_catalog: found in the search_path, which holds only the boundary */
		schema = "pg_catalog"; /* pg_catalog is searched before the search_path */
		if (is_allowed_catalog_view(schema, name))
			return 0;
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED,
				     "relation %.63s (pg_catalog.%.63s) is not allowed: PostgreSQL's catalogs and statistics "
				     "views show other databases, roles and sessions; of the catalogs only " ALLOWED_LIST
				     " may be read",
				     name, name);
	}
	if (is_allowed_catalog_view(schema, name))
		return 0;
	if (is_system_schema(schema) || starts_with_pg(name))
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED,
				     "relation %.63s.%.63s is not allowed: PostgreSQL's catalogs and statistics views (and "
				     "relations named pg_*) show other databases, roles and sessions; of the catalogs only "
				     ALLOWED_LIST " may be read",
				     schema, name);
	if (!schema_in_boundary(cx, schema))
		return reject_schema(cx, schema, name);
	return 0;
}

static int walk(const json_t *node, const struct cte_scope *scope, int depth, struct relations_ctx *cx);

/*
 * A SelectStmt body: its WITH list's CTEs each see the ones before it (all
 * of them under RECURSIVE), the rest of the statement sees all of them.
 */
static int walk_select(const json_t *select, const struct cte_scope *scope, int depth, struct relations_ctx *cx)
{
	const json_t *with = json_object_get(select, "withClause");
	const json_t *ctes = json_object_get(with, "ctes");
	struct cte_scope inner = {.ctes = ctes, .outer = scope};
	const char *key;
	json_t *value;
	size_t n = json_array_size(ctes);
	int r;

	if (depth > SQL_GUARD_PG_MAX_DEPTH)
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED, "statement too deeply nested");
	bool recursive = json_is_true(json_object_get(with, "recursive"));
	for (size_t i = 0; i < n; i++) {
		inner.visible = recursive ? n : i;
		if ((r = walk(json_array_get(ctes, i), &inner, depth + 1, cx)) < 0)
			return r;
	}
	inner.visible = n;
	json_object_foreach((json_t *)select, key, value) {
		if (strcmp(key, "withClause") == 0)
			continue;
		if (strcmp(key, "larg") == 0 || strcmp(key, "rarg") == 0)
			r = json_is_object(value) ? walk_select(value, &inner, depth + 1, cx) : 0;
		else
			r = walk(value, &inner, depth + 1, cx);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Every relation under node; scope: the CTE names visible there. */
static int walk(const json_t *node, const struct cte_scope *scope, int depth, struct relations_ctx *cx)
{
	const char *key;
	json_t *value;
	size_t i;
	int r;

	if (depth > SQL_GUARD_PG_MAX_DEPTH)
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED, "statement too deeply nested");
	if (json_is_array(node)) {
		json_array_foreach(node, i, value) {
			if ((r = walk(value, scope, depth + 1, cx)) < 0)
				return r;
		}
		return 0;
	}
	json_object_foreach((json_t *)node, key, value) {
		if (strcmp(key, "SelectStmt") == 0)
			r = walk_select(value, scope, depth + 1, cx);
		else if (strcmp(key, "RangeVar") == 0)
			r = check_range_var(value, scope, cx);
		else
			r = walk(value, scope, depth + 1, cx);
		if (r < 0)
			return r;
	}
	return 0;
}

int sql_guard_pg_check_relations(const json_t *stmt, const char *const *schemas, size_t n_schemas,
				 struct t2s_error *err)
{
	return sql_guard_pg_check_relations_in(stmt, schemas, n_schemas, NULL, err);
}

int sql_guard_pg_check_relations_in(const json_t *stmt, const char *const *schemas, size_t n_schemas,
				    const struct schema *view, struct t2s_error *err)
{
	struct relations_ctx cx = {.schemas = schemas, .n_schemas = schemas ? n_schemas : 0,
				   .view = schema_is_view(view) ? view : NULL, .err = err};

	return walk(stmt, NULL, 0, &cx);
}

size_t sql_guard_pg_search_path(const char *const *schemas, size_t n_schemas, const char **ret_path)
{
	size_t n = 0;

	if (!schemas || n_schemas == 0) {
		ret_path[0] = "public";
		return 1;
	}
	for (size_t i = 0; i < n_schemas; i++)
		if (!is_system_schema(schemas[i]))
			ret_path[n++] = schemas[i];
	return n;
}
