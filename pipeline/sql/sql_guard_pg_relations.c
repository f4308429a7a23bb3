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

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * Catalog views a statement may read, whatever the schemas: each lists
 * what this one database holds (table and column names the role may use)
 * and nothing of other databases, roles, sessions or settings.
 */
static const struct {
	const char *schema;
	const char *name;
	const char *schema_column; /* the column naming a row's schema: the narrowing's predicate */
} allowed_catalog_views[] = {
	{"information_schema", "tables", "table_schema"},
	{"information_schema", "columns", "table_schema"},
	{"pg_catalog", "pg_tables", "schemaname"},
};

/* Types that look an object up by its name in every schema ('other.t'::regclass): never a cast target. */
static const char *const name_lookup_types[] = {"regclass",     "regtype",    "regproc",      "regprocedure",
						"regoper",      "regoperator", "regnamespace", "regrole",
						"regconfig",    "regdictionary", "regcollation", NULL};

/*
 * The types of pg_catalog a bare name finds before any schema of the search
 * path (pg_catalog is searched first): PostgreSQL 15's base and pseudo
 * types, sorted (its composite types are all named pg_*; the SQL standard's
 * names, integer or timestamp with time zone, reach the tree already
 * qualified as pg_catalog.int4 ...).  A hidden table of one of these names
 * is not what `NULL::name` reads, so it is not refused there.
 */
static const char *const catalog_types[] = {
	"aclitem", "any", "anyarray", "anycompatible", "anycompatiblearray", "anycompatiblemultirange",
	"anycompatiblenonarray", "anycompatiblerange", "anyelement", "anyenum", "anymultirange", "anynonarray",
	"anyrange", "bit", "bool", "box", "bpchar", "bytea", "char", "cid", "cidr", "circle", "cstring", "date",
	"datemultirange", "daterange", "event_trigger", "fdw_handler", "float4", "float8", "gtsvector",
	"index_am_handler", "inet", "int2", "int2vector", "int4", "int4multirange", "int4range", "int8",
	"int8multirange", "int8range", "internal", "interval", "json", "jsonb", "jsonpath", "language_handler", "line",
	"lseg", "macaddr", "macaddr8", "money", "name", "numeric", "nummultirange", "numrange", "oid", "oidvector",
	"path", "point", "polygon", "record", "refcursor", "regclass", "regcollation", "regconfig", "regdictionary",
	"regnamespace", "regoper", "regoperator", "regproc", "regprocedure", "regrole", "regtype", "table_am_handler",
	"text", "tid", "time", "timestamp", "timestamptz", "timetz", "trigger", "tsm_handler", "tsmultirange",
	"tsquery", "tsrange", "tstzmultirange", "tstzrange", "tsvector", "txid_snapshot", "unknown", "uuid", "varbit",
	"varchar", "void", "xid", "xid8", "xml",
};

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool is_catalog_type(const char *name)
{
	return bsearch(&name, catalog_types, sizeof(catalog_types) / sizeof(*catalog_types), sizeof(*catalog_types),
		       compare_names) != NULL;
}

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
	struct sql_guard_pg_catalog_refs *refs; /* where the catalog views are read (NULL: not wanted) */
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

/* The index of (schema, name) in allowed_catalog_views, or -1. */
static int catalog_view(const char *schema, const char *name)
{
	for (size_t i = 0; i < sizeof(allowed_catalog_views) / sizeof(allowed_catalog_views[0]); i++)
		if (strcmp(schema, allowed_catalog_views[i].schema) == 0 && strcmp(name, allowed_catalog_views[i].name) == 0)
			return (int)i;
	return -1;
}

static bool is_allowed_catalog_view(const char *schema, const char *name)
{
	return catalog_view(schema, name) >= 0;
}

/* A catalog view read at rv (its RangeVar body): noted for the narrowing (sql_guard_pg_scope_catalogs). */
static int note_catalog_view(const json_t *rv, const char *schema, const char *name, struct relations_ctx *cx)
{
	if (!cx->refs || cx->n_schemas == 0)
		return 0;
	const json_t *loc = json_object_get(rv, "location");
	if (!json_is_integer(loc) || json_integer_value(loc) < 0 || cx->refs->n == SQL_GUARD_PG_MAX_CATALOG_REFS)
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED,
				     "reading the catalog views more than %d times in one statement is not allowed",
				     SQL_GUARD_PG_MAX_CATALOG_REFS);
	cx->refs->at[cx->refs->n++] = (struct sql_guard_pg_catalog_ref){
		.location = (size_t)json_integer_value(loc),
		.view = catalog_view(schema, name),
		.aliased = json_object_get(rv, "alias") != NULL,
	};
	return 0;
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

#define PATH_MAX_SCHEMAS 64

/* The search path of cx's boundary (sql_guard_pg_search_path) into path; its length. */
static size_t boundary_path(const struct relations_ctx *cx, const char *path[PATH_MAX_SCHEMAS])
{
	return sql_guard_pg_search_path(cx->schemas, cx->n_schemas < PATH_MAX_SCHEMAS ? cx->n_schemas : PATH_MAX_SCHEMAS,
					path);
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
	const char *path[PATH_MAX_SCHEMAS];
	size_t n = schema ? 0 : boundary_path(cx, path);
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
			return note_catalog_view(rv, schema, name, cx);
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED,
				     "relation %.63s (pg_catalog.%.63s) is not allowed: PostgreSQL's catalogs and statistics "
				     "views show other databases, roles and sessions; of the catalogs only " ALLOWED_LIST
				     " may be read",
				     name, name);
	}
	if (is_allowed_catalog_view(schema, name))
		return note_catalog_view(rv, schema, name, cx);
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

/* The sval of a {"String": {"sval": ...}} element, or NULL. */
static const char *string_part(const json_t *node)
{
	return json_string_value(json_object_get(json_object_get(node, "String"), "sval"));
}

/* Is schema.name the row type of a table cx->view hides, or its array type (_name)? */
static bool hides_type(const struct relations_ctx *cx, const char *schema, const char *name)
{
	return schema_view_hides(cx->view, schema, name) || (name[0] == '_' && schema_view_hides(cx->view, schema, name + 1));
}

/*
 * For a caller limited to some tables: is the type (schema may be NULL) the row type of a table the
 * caller may not see, or its array type?  A bare name is found as PostgreSQL finds it: in
 * pg_catalog, then in the search path's schemas in order.
 */
static bool hidden_row_type(const struct relations_ctx *cx, const char *schema, const char *name)
{
	if (schema)
		return hides_type(cx, schema, name);
	if (is_catalog_type(name))
		return false;
	const char *path[PATH_MAX_SCHEMAS];
	size_t n = boundary_path(cx, path);
	for (size_t i = 0; i < n; i++) {
		if (schema_view_allows(cx->view, path[i], name))
			return false;
		if (hides_type(cx, path[i], name))
			return true;
	}
	return false;
}

/* PostgreSQL's own words for a type it does not have (TypeNameToString: the names joined, "[]" for an array). */
static int no_such_type(const json_t *type_name, const json_t *names, struct relations_ctx *cx)
{
	char spelled[256] = "";
	size_t used = 0;
	for (size_t i = 0; i < json_array_size(names) && used < sizeof(spelled); i++) {
		const char *part = string_part(json_array_get(names, i));
		int w = snprintf(spelled + used, sizeof(spelled) - used, "%s%s", i ? "." : "", part ? part : "");
		used += w > 0 ? (size_t)w : 0;
	}
	bool array = json_array_size(json_object_get(type_name, "arrayBounds")) > 0;
	return t2s_error_set(cx->err, T2S_ERR_SQL_INVALID, "type \"%.200s%s\" does not exist (SQLSTATE 42704)", spelled,
			     array ? "[]" : "");
}

/*
 * A type named in the statement (a TypeName's "names": [catalog,] [schema,] name): a cast to a type that
 * looks objects up by name ('other.t'::regclass) is refused, and so is a type of a schema outside the
 * boundary (NULL::other.t, a row type: its mere existence is what the boundary hides), and for a caller
 * limited to some tables the row type of a table it may not see, in PostgreSQL's words for a missing
 * type (NULL::payroll answers as NULL::nothere).  Unqualified names resolve in pg_catalog, then the
 * search_path (the boundary).
 */
static int check_type_name(const json_t *type_name, struct relations_ctx *cx)
{
	const json_t *names = json_object_get(type_name, "names");
	size_t parts = json_array_size(names);
	if (parts == 0)
		return 0;
	const char *name = string_part(json_array_get(names, parts - 1));
	const char *schema = parts >= 2 ? string_part(json_array_get(names, parts - 2)) : NULL;
	if (!name || (parts >= 2 && !schema))
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED, "a type with an unreadable name is not allowed");
	if (!schema || strcmp(schema, "pg_catalog") == 0)
		for (size_t i = 0; name_lookup_types[i]; i++)
			if (strcmp(name, name_lookup_types[i]) == 0)
				return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED,
						     "cast to %.63s is not allowed: it looks objects up by name in every "
						     "schema, also those outside this database's",
						     name);
	if (schema && strcmp(schema, "pg_catalog") != 0 && strcmp(schema, "information_schema") != 0 &&
	    !schema_in_boundary(cx, schema))
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED,
				     "type %.63s.%.63s is not allowed: schema %.63s is not one of this database's schemas",
				     schema, name, schema);
	if (cx->view && !(schema && strcmp(schema, "pg_catalog") == 0) && hidden_row_type(cx, schema, name))
		return no_such_type(type_name, names, cx);
	return 0;
}

/* A function named with a schema ("other.f()") outside the boundary (pg_catalog's are the guard's). */
static int check_function_schema(const json_t *funcname, struct relations_ctx *cx)
{
	size_t parts = json_array_size(funcname);
	const char *schema = parts >= 2 ? string_part(json_array_get(funcname, parts - 2)) : NULL;
	const char *name = string_part(json_array_get(funcname, parts ? parts - 1 : 0));
	if (!schema || strcmp(schema, "pg_catalog") == 0 || schema_in_boundary(cx, schema))
		return 0;
	return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED,
			     "function %.63s.%.63s is not allowed: schema %.63s is not one of this database's schemas",
			     schema, name ? name : "?", schema);
}

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
		else {
			r = 0;
			if (strcmp(key, "typeName") == 0 && json_is_object(value))
				r = check_type_name(value, cx);
			else if (strcmp(key, "funcname") == 0)
				r = check_function_schema(value, cx);
			if (r == 0)
				r = walk(value, scope, depth + 1, cx);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int sql_guard_pg_check_relations(const json_t *stmt, const char *const *schemas, size_t n_schemas,
				 struct sql_guard_pg_catalog_refs *refs, struct t2s_error *err)
{
	return sql_guard_pg_check_relations_in(stmt, schemas, n_schemas, NULL, refs, err);
}

int sql_guard_pg_check_relations_in(const json_t *stmt, const char *const *schemas, size_t n_schemas,
				    const struct schema *view, struct sql_guard_pg_catalog_refs *refs, struct t2s_error *err)
{
	struct relations_ctx cx = {.schemas = schemas, .n_schemas = schemas ? n_schemas : 0,
				   .view = schema_is_view(view) ? view : NULL, .refs = refs, .err = err};

	if (refs)
		refs->n = 0;
	return walk(stmt, NULL, 0, &cx);
}

/* The end of a (perhaps qualified, perhaps quoted) name starting at p: "a", a . "b", ... */
static const char *name_end(const char *p)
{
	for (;;) {
		if (*p == '"') {
			for (p++; *p && !(*p == '"' && p[1] != '"'); p += *p == '"' ? 2 : 1)
				;
			if (*p)
				p++;
		} else {
			while (*p && (isalnum((unsigned char)*p) || *p == '_' || *p == '$' || (unsigned char)*p >= 0x80))
				p++;
		}
		const char *q = p;
		while (isspace((unsigned char)*q))
			q++;
		if (*q != '.')
			return p;
		q++;
		while (isspace((unsigned char)*q))
			q++;
		p = q;
	}
}

static int by_location(const void *a, const void *b)
{
	const struct sql_guard_pg_catalog_ref *x = a, *y = b;
	return x->location < y->location ? -1 : x->location > y->location;
}

char *sql_guard_pg_scope_catalogs(const char *sql, size_t end, const struct sql_guard_pg_catalog_refs *refs,
				  const char *const *schemas, size_t n_schemas)
{
	struct sql_guard_pg_catalog_refs sorted = *refs;
	qsort(sorted.at, sorted.n, sizeof(sorted.at[0]), by_location);
	size_t cap = end + 1 + sorted.n * (200 + n_schemas * 140);
	char *out = malloc(cap);
	if (!out)
		return NULL;
	size_t n = 0, pos = 0;
	for (size_t i = 0; i < sorted.n; i++) {
		const struct sql_guard_pg_catalog_ref *r = &sorted.at[i];
		if (r->location < pos || r->location >= end || r->view < 0) {
			free(out);
			return NULL; /* not where a name can be: refuse rather than guess */
		}
		const char *stop = name_end(sql + r->location);
		memcpy(out + n, sql + pos, r->location - pos);
		n += r->location - pos;
		const char *schema = allowed_catalog_views[r->view].schema, *view = allowed_catalog_views[r->view].name;
		n += (size_t)snprintf(out + n, cap - n, "(SELECT * FROM %s.%s WHERE %s IN (", schema, view,
				      allowed_catalog_views[r->view].schema_column);
		for (size_t k = 0; k < n_schemas; k++) {
			out[n++] = k ? ',' : ' ';
			out[n++] = '\'';
			for (const char *c = schemas[k]; *c && *c != '\0'; c++) {
				if (*c == '\'')
					out[n++] = '\'';
				out[n++] = *c;
			}
			out[n++] = '\'';
		}
		n += (size_t)snprintf(out + n, cap - n, "))%s%s", r->aliased ? "" : " AS ", r->aliased ? "" : view);
		pos = (size_t)(stop - sql);
	}
	memcpy(out + n, sql + pos, end - pos);
	n += end - pos;
	out[n] = '\0';
	return out;
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
