/*
 * pg_functions.h - the functions of one PostgreSQL database, as pg_proc
 * describes them, and which of them a user statement may call.
 *
 * The statement guard (pipeline/sql/sql_guard_pg.c) sees only names in a
 * parse tree; this module tells it what a name is.  A function is admitted
 * by what it is, not by its name:
 *
 *   - IMMUTABLE or STABLE (PostgreSQL's own promise that it changes nothing
 *     and depends only on the database state seen by the statement), and
 *   - not SECURITY DEFINER (it would run with its owner's rights), and
 *   - a plain, aggregate or window function (not a procedure);
 *   - or one of a short explicit list of harmless VOLATILE built-ins in
 *     pg_catalog (random(), clock_timestamp(), gen_random_uuid(), ...).
 *
 * So every function that can run SQL given as text, sleep, take locks,
 * signal backends, read or write files or change settings is refused
 * whatever its name (they are all VOLATILE in pg_catalog: ts_rewrite(tsquery,
 * text), query_to_xml, pg_sleep, pg_terminate_backend, set_config, ...).  A
 * few STABLE built-ins still reach too far; the guard keeps a short deny list
 * for them.
 *
 * A call names a function, perhaps schema-qualified, and passes some number of
 * arguments; the parse tree does not say which overload PostgreSQL will
 * pick.  pg_functions_check therefore looks at every candidate: all overloads
 * of that name (in the named schema, or in any schema when unqualified) that
 * can take that many arguments.  A call is allowed only when there is at
 * least one candidate and every candidate is admitted: ts_rewrite with three
 * arguments (IMMUTABLE) is allowed, with two (VOLATILE, runs its second
 * argument as SQL) is not.  A name no pg_proc row carries is refused (fail
 * closed: a function created after the last introspection waits for the
 * next refresh).
 *
 * Operators and casts run functions too, without naming them: "a === b"
 * calls pg_operator.oprcode (and the planner calls its estimators oprrest
 * and oprjoin), "x::t" calls the pg_cast.castfunc of a cast into t, t's
 * input function (typinput) for a literal, and, when t is a domain, the
 * functions its CHECK constraints use.  The parse tree says neither which
 * operator of a name nor which cast is meant (both depend on argument types
 * only PostgreSQL resolves), so the rule is by name, and errs towards
 * refusing:
 *
 *   - an operator name (in its schema) is refused when ANY operator of that
 *     name has a function that is not admitted (pg_functions_add_operator);
 *   - a type is refused as a cast target when ANY function that a conversion
 *     into it runs is not admitted (pg_functions_add_cast_target).
 *
 * Only refused operators and targets are kept; every name not recorded is
 * left to PostgreSQL (an unknown operator or type fails there).  PostgreSQL's
 * own operators, casts, input functions and estimators are all IMMUTABLE
 * or STABLE (checked on 15), so none of them is ever refused.
 *
 * Lifecycle: built by the PostgreSQL introspector (introspect_pg.c) with
 * pg_functions_new / _add / _seal, then owned by the schema model it is part
 * of (struct schema.pg_functions) and, like it, immutable once sealed: any
 * number of threads may call pg_functions_check.  A refresh builds a new
 * one with the new schema.  Names are compared exactly (PostgreSQL folds
 * unquoted identifiers to lower case before they reach the parse tree).
 */
#ifndef T2S_PG_FUNCTIONS_H
#define T2S_PG_FUNCTIONS_H

#include "common/contract.h"

#include <stdbool.h>
#include <stddef.h>

struct pg_functions;

/* One pg_proc row, as the introspector reads it (strings are copied by _add). */
struct pg_function_info {
	const char *schema;    /* pg_namespace.nspname */
	const char *name;      /* pg_proc.proname */
	int nargs;             /* pronargs */
	int nargdefaults;      /* pronargdefaults */
	bool variadic;         /* provariadic <> 0: takes any number of trailing arguments */
	char volatility;       /* provolatile: 'i', 's' or 'v' */
	bool security_definer; /* prosecdef */
	char kind;             /* prokind: 'f' function, 'a' aggregate, 'w' window, 'p' procedure */
};

/* What pg_functions_check decided. */
enum pg_function_verdict {
	PG_FUNCTION_ALLOWED,
	PG_FUNCTION_REFUSED, /* a candidate is not admitted; the reason says why */
	PG_FUNCTION_UNKNOWN, /* no function of that name takes that many arguments */
};

/* An empty, unsealed set, or NULL when out of memory. */
struct pg_functions *pg_functions_new(void);

/* Add one row (copied).  Only before pg_functions_seal.  0 or -T2S_ERR_NOMEM / -T2S_ERR_INVALID. */
T2S_MUST_CHECK
int pg_functions_add(struct pg_functions *f, const struct pg_function_info *info);

/* Sort and index the rows; after this the set is read-only.  0 or -T2S_ERR_NOMEM. */
T2S_MUST_CHECK
int pg_functions_seal(struct pg_functions *f);

/*
 * A sealed copy of f holding only PostgreSQL's own functions (schema
 * pg_catalog), for a caller limited to some tables (schema_grant.h): a
 * function of the database's own could read any table, so to that caller
 * it does not exist; nor do the built-ins that look a relation up by name
 * (to_regclass, has_table_privilege, pg_relation_size, obj_description,
 * ...: pg_functions.c relation_lookups), which would tell a hidden table
 * from a missing one.  NULL when f is NULL or out of memory.
 */
struct pg_functions *pg_functions_builtins(const struct pg_functions *f);

/* Free the set.  Accepts NULL; returns NULL. */
struct pg_functions *pg_functions_free(struct pg_functions *f);

/*
 * Record that operator schema.name (pg_operator.oprnamespace, oprname) runs
 * function fn (its oprcode, oprrest or oprjoin).  Kept only when fn is not
 * admitted (by the same rule as a call of fn); strings are copied.  Only
 * before pg_functions_seal.  0 or -T2S_ERR_NOMEM / -T2S_ERR_INVALID.
 */
T2S_MUST_CHECK
int pg_functions_add_operator(struct pg_functions *f, const char *schema, const char *name,
			      const struct pg_function_info *fn);

/*
 * Record that converting a value into type schema.name (pg_type.typname:
 * "int4", "mytype") runs function fn (a pg_cast.castfunc into it, its
 * typinput, or a function a domain CHECK constraint of it uses).  Kept only
 * when fn is not admitted; strings are copied.  Only before
 * pg_functions_seal.  0 or -T2S_ERR_NOMEM / -T2S_ERR_INVALID.
 */
T2S_MUST_CHECK
int pg_functions_add_cast_target(struct pg_functions *f, const char *schema, const char *name,
				 const struct pg_function_info *fn);

/*
 * Whether a call of schema.name (schema NULL when unqualified) with nargs
 * arguments is allowed (see the top of this file).  On PG_FUNCTION_REFUSED,
 * *ret_reason (may be NULL) points to a static phrase saying why ("it is
 * VOLATILE: it may change state, wait or run SQL", "it is SECURITY DEFINER",
 * "it is a procedure").  f must be sealed; f NULL refuses every call as
 * unknown.
 */
enum pg_function_verdict pg_functions_check(const struct pg_functions *f, const char *schema, const char *name,
					    int nargs, const char **ret_reason);

/*
 * Whether operator schema.name (schema NULL when unqualified: any schema)
 * may be used: PG_FUNCTION_REFUSED when an operator of that name runs a
 * function that is not admitted, else PG_FUNCTION_ALLOWED (never UNKNOWN).
 * On refusal, *ret_function (may be NULL) points to that function's name
 * and *ret_reason (may be NULL) to a static phrase, both valid as long as f.
 * f must be sealed; f NULL allows (no facts: PostgreSQL's own operators).
 */
enum pg_function_verdict pg_functions_check_operator(const struct pg_functions *f, const char *schema,
						     const char *name, const char **ret_function,
						     const char **ret_reason);

/*
 * As pg_functions_check_operator, for a conversion into type schema.name
 * ("x::name", "CAST(x AS name)", "name 'literal'", or name(x) when that
 * resolves to a cast).
 */
enum pg_function_verdict pg_functions_check_cast(const struct pg_functions *f, const char *schema, const char *name,
						 const char **ret_function, const char **ret_reason);

#endif
