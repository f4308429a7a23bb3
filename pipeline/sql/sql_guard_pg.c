/*
 * sql_guard_pg.c - decides whether a statement is one read-only PostgreSQL
 * query, by walking the raw parse tree that libpg_query gives as JSON.  The
 * parse itself (sql_guard_pg_parse_tree) is shared with modules that need
 * facts about a statement (sql_analyze.c), so libpg_query runs only here.
 *
 * Why a JSON walk: libpg_query prints every node of the raw tree.  A node
 * held in a generic Node field is an object with one key, the node type
 * ({"FuncCall": {...}}); a node held in a typed field is printed bare
 * ("larg": {...}, "withClause": {...}).  Node type keys always start with an
 * upper-case letter and field keys with a lower-case one, so the walker can
 * refuse by key, without knowing every node type:
 *
 *   - a node key ending in "Stmt" other than "SelectStmt" anywhere: a
 *     statement nested where only a query may be (INSERT ... RETURNING in a
 *     CTE, or any utility statement should the grammar ever allow one);
 *   - the field "intoClause" (SELECT INTO creates a table);
 *   - the field "lockingClause" (FOR UPDATE/NO KEY UPDATE/SHARE/KEY SHARE);
 *   - a function call (the field "funcname": only FuncCall holds one inside
 *     a query) that the database's pg_functions does not admit for that
 *     name and argument count, or whose last name part is on the short
 *     deny list below;
 *   - column notation that calls a function: "t.f" (a ColumnRef of two or
 *     more fields) and "(expr).f" (A_Indirection) are PostgreSQL's spelling
 *     of f(t) when f is a one-argument function, so the last field is
 *     checked as such a call;
 *   - an operator whose name pg_functions refuses (some operator of that
 *     name runs a function that is not admitted): the "name" of an A_Expr
 *     ("a === b", "OPERATOR(s.===)", LIKE as "~~", IN and NULLIF as "=",
 *     BETWEEN as its comparisons), the "operName" of a SubLink
 *     ("a === ANY (SELECT ...)"), the "useOp" of a SortBy ("ORDER BY x
 *     USING ==="), and "=" for "CASE x WHEN ...";
 *   - a conversion into a type that pg_functions refuses as a cast target
 *     (a cast, input function or domain constraint into it runs a function
 *     that is not admitted): every "typeName" field (TypeCast: "x::t",
 *     "CAST(x AS t)", "t 'literal'"), and a one-argument call f(x), which
 *     PostgreSQL reads as a cast to type f when no function f fits.
 *
 * A first walk (sql_guard_pg_relations.c) checks every relation, type and
 * schema-qualified function the statement names against the database's
 * schemas, so a name outside them is refused alike whether it exists or not.
 *
 * Anything the walker does not understand (a malformed tree, a JSON error)
 * is refused: the check fails closed.  Nesting is bounded twice: jansson
 * refuses documents deeper than its own limit (2048), and the walker stops at
 * SQL_GUARD_PG_MAX_DEPTH.
 *
 * Where libpg_query runs: never on the caller's thread, but on a few
 * long-lived parser threads owned by this file, for two reasons found by
 * testing libpg_query 15-4.0:
 *   - it creates a new pthread key in every thread that first uses it and
 *     never deletes it; after about 1024 threads (thread-per-connection
 *     servers reach that quickly) pthread_key_create fails process-wide,
 *     which breaks other libraries.  Its pg_query_exit() does not clear the
 *     key either, so calling it in a thread that later exits double-frees.
 *   - its tree printer recurses once per tree level, and a flat 1 MiB
 *     statement like "select 1+1+1+..." is a tree about 500,000 levels deep:
 *     that needs about 100 MiB of stack, so parser threads get a large
 *     (lazily committed) stack, and give the touched pages back after a
 *     large statement.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* pthread_getattr_np, madvise */
#endif

#include "pipeline/sql/sql_guard_pg.h"

#include "pipeline/sql/sql_guard_pg_relations.h"

#include <jansson.h>
#include <pg_query.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * Function calls are admitted by what the function is (pg_functions.h: the
 * database's pg_proc, read at introspection).  This short deny list, by the
 * last name part lower-cased (so "pg_catalog.TABLE_TO_XML" counts), is only
 * for STABLE built-ins that pg_proc's facts would let through but that reach
 * too far: they run a query over whole tables, schemas or databases and build
 * the answer in memory, or assign a transaction id (a write) even in a
 * read-only transaction.  prefix = true matches every name that starts with
 * the pattern.
 */
static const struct denied_function {
	const char *name;
	bool prefix;
} denied_functions[] = {
	{"table_to_xml", true},        /* also table_to_xml_and_xmlschema, table_to_xmlschema */
	{"schema_to_xml", true},
	{"database_to_xml", true},
	{"txid_current", false},       /* assigns a transaction id; txid_current_if_assigned does not */
	{"pg_current_xact_id", false},
	/* Other sessions, databases and settings of the cluster: the functions behind pg_stat_activity and
	   every other statistics view, pg_settings and pg_replication_slots, and oracles of other databases. */
	{"pg_stat_get_", true},
	{"pg_stat_statements", true},  /* the extension's functions, in whatever schema */
	{"pg_show_all_settings", false},
	{"pg_get_replication_slots", false},
	{"pg_tablespace_databases", false},
	{"has_database_privilege", false},
	/* Objects of other schemas found by name or by OID (issue 30: the schemas boundary): to_regclass('other.t'),
	   has_table_privilege('other.t', ...) (an error for a missing one), pg_get_viewdef(16390), obj_description,
	   format_type and the *_is_visible checks answer for every schema. */
	{"to_reg", true},
	{"has_", true},
	{"pg_get_", true},
	{"obj_description", false},
	{"col_description", false},
	{"shobj_description", false},
	{"format_type", false},
	{"pg_describe_object", false},
	{"pg_identify_object", true},
	{"pg_table_is_visible", false},
	{"pg_type_is_visible", false},
	{"pg_function_is_visible", false},
	{"pg_relation_is_updatable", false},
	{"pg_column_is_updatable", false},
	{"pg_index_column_has_property", false},
	{"pg_index_has_property", false},
};

/* Upper-case SQL spelling of statement nodes whose name does not say it. */
static const struct {
	const char *node;
	const char *sql;
} statement_names[] = {
	{"CreateStmt", "CREATE TABLE"},
	{"ViewStmt", "CREATE VIEW"},
	{"IndexStmt", "CREATE INDEX"},
	{"RuleStmt", "CREATE RULE"},
	{"DefineStmt", "CREATE"},
	{"CreatedbStmt", "CREATE DATABASE"},
	{"DropdbStmt", "DROP DATABASE"},
	{"CreateSeqStmt", "CREATE SEQUENCE"},
	{"AlterSeqStmt", "ALTER SEQUENCE"},
	{"CompositeTypeStmt", "CREATE TYPE"},
	{"RenameStmt", "ALTER ... RENAME"},
	{"CheckPointStmt", "CHECKPOINT"},
	{"RefreshMatViewStmt", "REFRESH MATERIALIZED VIEW"},
	{"ClosePortalStmt", "CLOSE"},
	{"SecLabelStmt", "SECURITY LABEL"},
	{"ConstraintsSetStmt", "SET CONSTRAINTS"},
	{"VariableShowStmt", "SHOW"},
	{"PLAssignStmt", "PL/pgSQL assignment"},
	{"ReturnStmt", "RETURN"},
};

/* The SQL of TransactionStmt kinds. */
static const struct {
	const char *kind;
	const char *sql;
} transaction_kinds[] = {
	{"TRANS_STMT_BEGIN", "BEGIN"},
	{"TRANS_STMT_START", "START TRANSACTION"},
	{"TRANS_STMT_COMMIT", "COMMIT"},
	{"TRANS_STMT_ROLLBACK", "ROLLBACK"},
	{"TRANS_STMT_SAVEPOINT", "SAVEPOINT"},
	{"TRANS_STMT_RELEASE", "RELEASE SAVEPOINT"},
	{"TRANS_STMT_ROLLBACK_TO", "ROLLBACK TO SAVEPOINT"},
	{"TRANS_STMT_PREPARE", "PREPARE TRANSACTION"},
	{"TRANS_STMT_COMMIT_PREPARED", "COMMIT PREPARED"},
	{"TRANS_STMT_ROLLBACK_PREPARED", "ROLLBACK PREPARED"},
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Longest name or keyword we copy into a message; PostgreSQL names are <= 63 bytes. */
#define NAME_BUF 128

static char ascii_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static char ascii_upper(char c)
{
	return (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
}

static bool is_upper(char c)
{
	return c >= 'A' && c <= 'Z';
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* Object member `key` as a string, or NULL (borrowed from the tree). */
static const char *member_string(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/*
 * Write the SQL keyword of statement node `node` (e.g. "InsertStmt" with body
 * `body`) into buf: from the tables above, from the node's kind, or by
 * splitting the CamelCase name ("AlterTableStmt" -> "ALTER TABLE").
 */
static void statement_keyword(const char *node, const json_t *body, char *buf, size_t size)
{
	const char *kind = member_string(body, "kind");
	size_t n = 0, i;

	if (strcmp(node, "TransactionStmt") == 0 && kind) {
		for (i = 0; i < ARRAY_SIZE(transaction_kinds); i++)
			if (strcmp(kind, transaction_kinds[i].kind) == 0) {
				snprintf(buf, size, "%s", transaction_kinds[i].sql);
				return;
			}
	}
	if (strcmp(node, "VariableSetStmt") == 0) {
		bool reset = kind && strncmp(kind, "VAR_RESET", 9) == 0;
		snprintf(buf, size, "%s", reset ? "RESET" : "SET");
		return;
	}
	if (strcmp(node, "GrantStmt") == 0) {
		snprintf(buf, size, "%s", json_is_true(json_object_get(body, "is_grant")) ? "GRANT" : "REVOKE");
		return;
	}
	if (strcmp(node, "VacuumStmt") == 0) {
		snprintf(buf, size, "%s",
			 json_is_true(json_object_get(body, "is_vacuumcmd")) ? "VACUUM" : "ANALYZE");
		return;
	}
	if (strcmp(node, "FetchStmt") == 0) {
		snprintf(buf, size, "%s", json_is_true(json_object_get(body, "ismove")) ? "MOVE" : "FETCH");
		return;
	}
	for (i = 0; i < ARRAY_SIZE(statement_names); i++)
		if (strcmp(node, statement_names[i].node) == 0) {
			snprintf(buf, size, "%s", statement_names[i].sql);
			return;
		}

	/* CamelCase without the "Stmt" suffix, a space before each word. */
	size_t len = strlen(node);
	if (has_suffix(node, "Stmt"))
		len -= 4;
	for (i = 0; i < len && n + 2 < size; i++) {
		if (i > 0 && is_upper(node[i]) && !is_upper(node[i - 1]))
			buf[n++] = ' ';
		buf[n++] = ascii_upper(node[i]);
	}
	buf[n] = '\0';
}

static bool is_data_modifying(const char *node)
{
	return strcmp(node, "InsertStmt") == 0 || strcmp(node, "UpdateStmt") == 0 ||
	       strcmp(node, "DeleteStmt") == 0 || strcmp(node, "MergeStmt") == 0;
}

/* True when lower-cased `name` is on the deny list. */
static bool function_denied(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(denied_functions); i++) {
		const struct denied_function *d = &denied_functions[i];
		size_t m = strlen(d->name);
		if (d->prefix ? strncmp(name, d->name, m) == 0 : strcmp(name, d->name) == 0)
			return true;
	}
	return false;
}

/* What the walker carries: the database's functions and where refusals go. */
struct walk_ctx {
	const struct pg_functions *functions;
	struct t2s_error *err;
};

/* The sval of a {"String": {"sval": ...}} element, or NULL. */
static const char *string_node(const json_t *node)
{
	return member_string(json_object_get(node, "String"), "sval");
}

/* Refuses when the last name part, lower-cased, is on the deny list. */
static int check_denied(const char *name, struct t2s_error *err)
{
	char lower[NAME_BUF];
	size_t i, len = strlen(name);

	if (len >= sizeof(lower)) /* longer than any PostgreSQL identifier: refuse rather than truncate */
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "function name too long");
	for (i = 0; i <= len; i++)
		lower[i] = ascii_lower(name[i]);
	if (function_denied(lower))
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "function %s is not allowed", lower);
	return 0;
}

static int check_cast_target(const json_t *list, struct walk_ctx *cx);

/*
 * Check a FuncCall body: its "funcname" list ([{"String": {"sval":
 * "pg_catalog"}}, ...]) with the number of arguments it passes (ordered-set
 * aggregates count their WITHIN GROUP columns too).  A name we cannot read is
 * refused.
 */
static int check_function_call(const json_t *call, struct walk_ctx *cx)
{
	const json_t *list = json_object_get(call, "funcname");
	const char *name, *schema = NULL, *reason = "";
	size_t parts;
	int nargs, r;

	if (!json_is_array(list) || (parts = json_array_size(list)) == 0)
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED, "function call without a name is not allowed");
	name = string_node(json_array_get(list, parts - 1));
	if (parts >= 2 && !(schema = string_node(json_array_get(list, parts - 2))))
		name = NULL;
	if (!name)
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED, "function call with an unreadable name is not allowed");
	if ((r = check_denied(name, cx->err)) < 0)
		return r;

	nargs = (int)json_array_size(json_object_get(call, "args"));
	if (json_is_true(json_object_get(call, "agg_within_group")))
		nargs += (int)json_array_size(json_object_get(call, "agg_order"));
	if (nargs == 1 && (r = check_cast_target(list, cx)) < 0)
		return r; /* f(x) is a cast to type f when no function f fits x */
	switch (pg_functions_check(cx->functions, schema, name, nargs, &reason)) {
	case PG_FUNCTION_ALLOWED:
		return 0;
	case PG_FUNCTION_REFUSED:
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED, "function %s is not allowed: %s", name, reason);
	default:
		if (!cx->functions)
			return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED,
					     "function %s is not allowed: the database's functions are not known", name);
		return t2s_error_set(cx->err, T2S_ERR_SQL_INVALID,
				     "function %s%s%s taking %d argument%s does not exist in this database",
				     schema ? schema : "", schema ? "." : "", name, nargs, nargs == 1 ? "" : "s");
	}
}

/*
 * Refuses operator name (a list of String nodes: [schema,] name) when some
 * operator of that name runs a function that is not admitted.  A list we
 * cannot read is refused.
 */
static int check_operator_name(const json_t *list, struct walk_ctx *cx)
{
	size_t parts = json_array_size(list);
	const char *name, *schema = NULL, *function = "", *reason = "";

	if (parts == 0 || !(name = string_node(json_array_get(list, parts - 1))) ||
	    (parts >= 2 && !(schema = string_node(json_array_get(list, parts - 2)))))
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED, "operator with an unreadable name is not allowed");
	if (pg_functions_check_operator(cx->functions, schema, name, &function, &reason) == PG_FUNCTION_REFUSED)
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED, "operator %s%s%s is not allowed: it runs function %s (%s)",
				     schema ? schema : "", schema ? "." : "", name, function, reason);
	return 0;
}

/* Refuses a single operator name given as text (implicit operators: "=" of CASE, BETWEEN's comparisons). */
static int check_operator_text(const char *name, struct walk_ctx *cx)
{
	const char *function = "", *reason = "";

	if (pg_functions_check_operator(cx->functions, NULL, name, &function, &reason) == PG_FUNCTION_REFUSED)
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED, "operator %s is not allowed: it runs function %s (%s)",
				     name, function, reason);
	return 0;
}

/* An A_Expr body: its operator name, or for BETWEEN the comparisons it stands for. */
static int check_operator_expr(const json_t *expr, struct walk_ctx *cx)
{
	static const char *const between_ops[] = {">=", "<=", ">", "<"};
	const char *kind = member_string(expr, "kind");
	int r;

	if (kind && (strncmp(kind, "AEXPR_BETWEEN", 13) == 0 || strncmp(kind, "AEXPR_NOT_BETWEEN", 17) == 0)) {
		for (size_t i = 0; i < ARRAY_SIZE(between_ops); i++)
			if ((r = check_operator_text(between_ops[i], cx)) < 0)
				return r;
		return 0;
	}
	return check_operator_name(json_object_get(expr, "name"), cx);
}

/*
 * Refuses a conversion into the type named by list ([schema,] name, as in
 * a TypeName's "names") when a function it runs is not admitted.
 */
static int check_cast_target(const json_t *list, struct walk_ctx *cx)
{
	size_t parts = json_array_size(list);
	const char *name, *schema = NULL, *function = "", *reason = "";

	if (parts == 0)
		return 0; /* %TYPE references and the like: nothing named */
	if (!(name = string_node(json_array_get(list, parts - 1))) ||
	    (parts >= 2 && !(schema = string_node(json_array_get(list, parts - 2)))))
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED, "cast to an unreadable type name is not allowed");
	if (pg_functions_check_cast(cx->functions, schema, name, &function, &reason) == PG_FUNCTION_REFUSED)
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED,
				     "cast to type %s%s%s is not allowed: it runs function %s (%s)", schema ? schema : "",
				     schema ? "." : "", name, function, reason);
	return 0;
}

/*
 * "x.f" and "(expr).f" call f(x) when f is a function of one argument: a
 * last field that names such a function that is not admitted is refused.
 * A name that is no one-argument function is a column, left to PostgreSQL.
 */
static int check_column_notation(const json_t *field, struct walk_ctx *cx)
{
	const char *name = string_node(field), *reason = "";
	int r;

	if (!name)
		return 0; /* "*" or a subscript */
	if ((r = pg_functions_check(cx->functions, NULL, name, 1, &reason)) == PG_FUNCTION_REFUSED)
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED,
				     "function %s (called as a column: x.%s) is not allowed: %s", name, name, reason);
	return 0;
}

/* A ColumnRef body {"fields": [...]} or an A_Indirection body {"indirection": [...]}. */
static int check_field_list(const json_t *list, bool skip_first, struct walk_ctx *cx)
{
	size_t n = json_array_size(list);
	int r;

	if (skip_first) {
		if (n < 2)
			return 0; /* a bare column name */
		return check_column_notation(json_array_get(list, n - 1), cx);
	}
	for (size_t i = 0; i < n; i++)
		if ((r = check_column_notation(json_array_get(list, i), cx)) < 0)
			return r;
	return 0;
}

/* Message for a "lockingClause" list: names the first clause's strength. */
static int reject_locking(const json_t *list, struct t2s_error *err)
{
	const char *strength = member_string(json_object_get(json_array_get(list, 0), "LockingClause"), "strength");
	const char *sql = "FOR UPDATE/SHARE";

	if (strength) {
		if (strcmp(strength, "LCS_FORUPDATE") == 0)
			sql = "FOR UPDATE";
		else if (strcmp(strength, "LCS_FORNOKEYUPDATE") == 0)
			sql = "FOR NO KEY UPDATE";
		else if (strcmp(strength, "LCS_FORSHARE") == 0)
			sql = "FOR SHARE";
		else if (strcmp(strength, "LCS_FORKEYSHARE") == 0)
			sql = "FOR KEY SHARE";
	}
	return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "FOR UPDATE/SHARE is not allowed, got %s", sql);
}

/* A statement node found below the top-level SelectStmt. */
static int reject_nested_statement(const char *node, const json_t *body, struct t2s_error *err)
{
	char keyword[NAME_BUF];

	statement_keyword(node, body, keyword, sizeof(keyword));
	if (is_data_modifying(node))
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED,
				     "data-modifying statement inside WITH is not allowed, got %s", keyword);
	return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "%s statement inside a query is not allowed", keyword);
}

/* Check one member of object parent: key names a node type or a field. */
static int check_member(const json_t *parent, const char *key, const json_t *value, struct walk_ctx *cx)
{
	struct t2s_error *err = cx->err;

	if (is_upper(key[0])) {
		if (has_suffix(key, "Stmt") && strcmp(key, "SelectStmt") != 0)
			return reject_nested_statement(key, value, err);
		if (strcmp(key, "ColumnRef") == 0)
			return check_field_list(json_object_get(value, "fields"), true, cx);
		if (strcmp(key, "A_Indirection") == 0)
			return check_field_list(json_object_get(value, "indirection"), false, cx);
		if (strcmp(key, "A_Expr") == 0)
			return check_operator_expr(value, cx);
		if (strcmp(key, "SubLink") == 0 && json_object_get(value, "operName"))
			return check_operator_name(json_object_get(value, "operName"), cx);
		if (strcmp(key, "SortBy") == 0 && json_object_get(value, "useOp"))
			return check_operator_name(json_object_get(value, "useOp"), cx);
		if (strcmp(key, "CaseExpr") == 0 && json_object_get(value, "arg"))
			return check_operator_text("=", cx);
		return 0;
	}
	if (strcmp(key, "typeName") == 0 && json_is_object(value))
		return check_cast_target(json_object_get(value, "names"), cx);
	if (strcmp(key, "intoClause") == 0 && !json_is_null(value))
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "SELECT INTO is not allowed");
	if (strcmp(key, "lockingClause") == 0 && !json_is_null(value))
		return reject_locking(value, err);
	if (strcmp(key, "funcname") == 0)
		return check_function_call(parent, cx);
	return 0;
}

/*
 * Walk node and everything under it; 0 when nothing refused, else the
 * negative code from the first refusal (err filled).  depth bounds the
 * recursion.
 */
static int walk(const json_t *node, int depth, struct walk_ctx *cx)
{
	int r;

	if (depth > SQL_GUARD_PG_MAX_DEPTH)
		return t2s_error_set(cx->err, T2S_ERR_SQL_REJECTED, "statement too deeply nested");

	if (json_is_object(node)) {
		const char *key;
		json_t *value;
		json_object_foreach((json_t *)node, key, value) {
			r = check_member(node, key, value, cx);
			if (r < 0)
				return r;
			r = walk(value, depth + 1, cx);
			if (r < 0)
				return r;
		}
	} else if (json_is_array(node)) {
		size_t i;
		json_t *value;
		json_array_foreach(node, i, value) {
			r = walk(value, depth + 1, cx);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* Check the parsed tree {"version": ..., "stmts": [{"stmt": {...}}, ...]}. */
static int check_tree(const json_t *tree, const struct sql_guard_pg_scope *scope,
		      struct sql_guard_pg_catalog_refs *refs, struct t2s_error *err)
{
	struct walk_ctx cx = {.functions = scope ? scope->functions : NULL, .err = err};
	const json_t *stmts = json_object_get(tree, "stmts");
	const json_t *stmt;
	const char *node;
	char keyword[NAME_BUF];
	size_t n;

	if (!json_is_array(stmts))
		return t2s_error_set(err, T2S_ERR_INTERNAL, "parse tree has no statement list");
	n = json_array_size(stmts);
	if (n == 0)
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "empty statement");
	if (n > 1)
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "exactly one statement is allowed, got %zu", n);

	stmt = json_object_get(json_array_get(stmts, 0), "stmt");
	if (!json_is_object(stmt) || json_object_size(stmt) != 1)
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "statement could not be analysed");
	node = json_object_iter_key(json_object_iter((json_t *)stmt));
	if (strcmp(node, "SelectStmt") != 0) {
		statement_keyword(node, json_object_get(stmt, node), keyword, sizeof(keyword));
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED,
				     "only SELECT, WITH and VALUES statements are allowed, got %s", keyword);
	}
	/* The schemas boundary first: a name outside it is refused the same way whether it exists or not. */
	int r = sql_guard_pg_check_relations_in(stmt, scope ? scope->schemas : NULL, scope ? scope->n_schemas : 0,
						scope ? scope->view : NULL, refs, err);
	if (r < 0)
		return r;
	return walk(stmt, 0, &cx);
}

/*
 * Parser threads.  A caller queues a parse_job on its own stack and waits
 * until a parser thread has filled job->result; the caller then owns the
 * result and frees it with pg_query_free_parse_result (plain free(), any
 * thread).  The threads live until the process exits; the process must not
 * fork after the first check (the child would have no parser threads).
 */
#define PARSER_THREADS 2
#if defined(__SANITIZE_ADDRESS__)
#define PARSER_STACK_SIZE ((size_t)512 << 20) /* ASan frames are larger */
#else
#define PARSER_STACK_SIZE ((size_t)256 << 20) /* ~100 MiB measured for 1 MiB of "1+1+..." */
#endif
/* After a statement longer than this, the parser thread gives back its touched stack. */
#define PARSER_STACK_TRIM_AFTER ((size_t)64 << 10)
/* Stack kept resident just below the trimming frame (signal handlers, libc calls). */
#define PARSER_STACK_KEEP ((size_t)64 << 10)

struct parse_job {
	const char *sql;           /* borrowed from the caller */
	size_t len;                /* strlen(sql) */
	PgQueryParseResult result; /* written by the parser thread */
	bool done;
	struct parse_job *next;
};

static pthread_mutex_t parser_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t parser_has_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t parser_did_work = PTHREAD_COND_INITIALIZER;
static struct parse_job *parser_queue_head, *parser_queue_tail;
static int parser_threads_started;
/* libpg_query's first use in a thread writes a process-wide variable: one at a time. */
static pthread_mutex_t parser_warmup_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Give back the pages of this thread's stack [stack_low, stack_low +
 * stack_size) that lie more than PARSER_STACK_KEEP below the current frame.
 * Everything above (live frames, and glibc's TLS and thread control block at
 * the top of the block) is left alone.  Called between jobs, when nothing
 * lives below this frame.
 */
static void parser_trim_stack(void *stack_low, size_t stack_size)
{
	char here;
	uintptr_t low = (uintptr_t)stack_low, frame = (uintptr_t)&here;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	if (!stack_low || page == 0 || frame < low || frame >= low + stack_size ||
	    frame - low <= PARSER_STACK_KEEP)
		return; /* unknown bounds, or a frame elsewhere (e.g. a sanitizer's fake stack) */
	uintptr_t start = (low + page - 1) & ~(page - 1);
	uintptr_t end = (frame - PARSER_STACK_KEEP) & ~(page - 1);
	if (end > start)
		(void)madvise((void *)start, end - start, MADV_DONTNEED); /* a hint: failure is harmless */
}

static void *parser_main(void *arg)
{
	pthread_attr_t attr;
	void *stack_low = NULL;
	size_t stack_size = 0;
	(void)arg;

	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &stack_low, &stack_size) != 0)
			stack_low = NULL;
		pthread_attr_destroy(&attr);
	}

	pthread_mutex_lock(&parser_warmup_lock);
	pg_query_free_parse_result(pg_query_parse("select 1"));
	pthread_mutex_unlock(&parser_warmup_lock);

	for (;;) {
		struct parse_job *job;
		PgQueryParseResult result;

		pthread_mutex_lock(&parser_lock);
		while (!parser_queue_head)
			pthread_cond_wait(&parser_has_work, &parser_lock);
		job = parser_queue_head;
		parser_queue_head = job->next;
		if (!parser_queue_head)
			parser_queue_tail = NULL;
		pthread_mutex_unlock(&parser_lock);

		result = pg_query_parse(job->sql);
		bool trim = job->len > PARSER_STACK_TRIM_AFTER;

		pthread_mutex_lock(&parser_lock);
		job->result = result;
		job->done = true; /* job may vanish once the lock is released */
		pthread_cond_broadcast(&parser_did_work);
		pthread_mutex_unlock(&parser_lock);

		if (trim)
			parser_trim_stack(stack_low, stack_size);
	}
	return NULL;
}

/* Start the parser threads not yet running; call with parser_lock held.  0 when at least one runs. */
static int parser_start_locked(void)
{
	pthread_attr_t attr;

	if (parser_threads_started == PARSER_THREADS)
		return 0;
	if (pthread_attr_init(&attr) != 0)
		return parser_threads_started > 0 ? 0 : -1;
	if (pthread_attr_setstacksize(&attr, PARSER_STACK_SIZE) == 0 &&
	    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0) {
		while (parser_threads_started < PARSER_THREADS) {
			pthread_t thread;
			if (pthread_create(&thread, &attr, parser_main, NULL) != 0)
				break;
			parser_threads_started++;
		}
	}
	pthread_attr_destroy(&attr);
	return parser_threads_started > 0 ? 0 : -1;
}

/*
 * Parse sql on a parser thread; on 0, *ret_result is the caller's to free
 * with pg_query_free_parse_result.  Fails only when no parser thread can be
 * started.
 */
static int parse_on_parser_thread(const char *sql, size_t len, PgQueryParseResult *ret_result)
{
	struct parse_job job = {.sql = sql, .len = len};

	pthread_mutex_lock(&parser_lock);
	if (parser_start_locked() < 0) {
		pthread_mutex_unlock(&parser_lock);
		return -1;
	}
	if (parser_queue_tail)
		parser_queue_tail->next = &job;
	else
		parser_queue_head = &job;
	parser_queue_tail = &job;
	pthread_cond_signal(&parser_has_work);
	while (!job.done)
		pthread_cond_wait(&parser_did_work, &parser_lock);
	pthread_mutex_unlock(&parser_lock);
	*ret_result = job.result;
	return 0;
}

int sql_guard_pg_parse_tree(const char *sql, json_t **ret_tree, int *ret_error_pos, struct t2s_error *err)
{
	PgQueryParseResult parsed;
	json_error_t jerr;
	json_t *tree;
	size_t len;
	int r;

	if (ret_error_pos)
		*ret_error_pos = 0;
	if (!sql || !ret_tree)
		return t2s_error_set(err, T2S_ERR_INVALID, "no SQL given");
	len = strnlen(sql, (size_t)SQL_GUARD_PG_MAX_LEN + 1);
	if (len > SQL_GUARD_PG_MAX_LEN)
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "statement is too long (limit %d bytes)",
				     SQL_GUARD_PG_MAX_LEN);

	if (parse_on_parser_thread(sql, len, &parsed) < 0)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "SQL parser thread could not be started");
	if (parsed.error) {
		const char *message = parsed.error->message ? parsed.error->message : "syntax error";
		if (parsed.error->cursorpos > 0)
			r = t2s_error_set(err, T2S_ERR_SQL_INVALID, "%s at character %d", message,
					  parsed.error->cursorpos);
		else
			r = t2s_error_set(err, T2S_ERR_SQL_INVALID, "%s", message);
		if (ret_error_pos && parsed.error->cursorpos > 0)
			*ret_error_pos = parsed.error->cursorpos;
		pg_query_free_parse_result(parsed);
		return r;
	}
	if (!parsed.parse_tree) {
		pg_query_free_parse_result(parsed);
		return t2s_error_set(err, T2S_ERR_NOMEM, "parser returned no tree");
	}

	tree = json_loads(parsed.parse_tree, 0, &jerr);
	pg_query_free_parse_result(parsed);
	if (!tree) {
		if (json_error_code(&jerr) == json_error_stack_overflow)
			return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "statement too deeply nested");
		if (json_error_code(&jerr) == json_error_out_of_memory)
			return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading the parse tree");
		if (json_error_code(&jerr) == json_error_invalid_utf8)
			return t2s_error_set(err, T2S_ERR_SQL_INVALID, "statement is not valid UTF-8");
		/* a tree we cannot read: fail closed */
		return t2s_error_set(err, T2S_ERR_SQL_REJECTED, "statement could not be analysed: %s", jerr.text);
	}
	*ret_tree = tree;
	return 0;
}

/* sql_guard_pg_check_statement; refs (may be NULL) as sql_guard_pg_check_relations fills it. */
static int check_statement(const char *sql, const struct sql_guard_pg_scope *scope, size_t *ret_end,
			   struct sql_guard_pg_catalog_refs *refs, struct t2s_error *err)
{
	json_t *tree;
	int r;

	r = sql_guard_pg_parse_tree(sql, &tree, NULL, err);
	if (r < 0)
		return r;
	r = check_tree(tree, scope, refs, err);
	if (r == 0 && ret_end) {
		/* RawStmt: stmt_location (absent: 0) and stmt_len (absent: to the end of the text). */
		const json_t *raw = json_array_get(json_object_get(tree, "stmts"), 0);
		json_int_t loc = json_integer_value(json_object_get(raw, "stmt_location"));
		json_int_t len = json_integer_value(json_object_get(raw, "stmt_len"));
		size_t total = strlen(sql);
		*ret_end = len > 0 && loc >= 0 && (size_t)(loc + len) <= total ? (size_t)(loc + len) : total;
	}
	json_decref(tree);
	return r;
}

int sql_guard_pg_check_statement(const char *sql, const struct sql_guard_pg_scope *scope, size_t *ret_end,
				 struct t2s_error *err)
{
	return check_statement(sql, scope, ret_end, NULL, err);
}

int sql_guard_pg_check_scoped(const char *sql, const struct sql_guard_pg_scope *scope, size_t *ret_end,
			      char **ret_sql, struct t2s_error *err)
{
	struct sql_guard_pg_catalog_refs refs;
	size_t end;
	*ret_sql = NULL;
	int r = check_statement(sql, scope, &end, &refs, err);
	if (r < 0)
		return r;
	if (refs.n > 0) {
		*ret_sql = sql_guard_pg_scope_catalogs(sql, end, &refs, scope->schemas, scope->n_schemas);
		if (!*ret_sql)
			return t2s_error_set(err, T2S_ERR_SQL_REJECTED,
					     "the catalog views this statement reads could not be narrowed to this "
					     "database's schemas");
		end = strlen(*ret_sql);
	}
	if (ret_end)
		*ret_end = end;
	return 0;
}

int sql_guard_pg_check(const char *sql, const struct sql_guard_pg_scope *scope, struct t2s_error *err)
{
	return sql_guard_pg_check_statement(sql, scope, NULL, err);
}
