/*
 * pg_functions.c - a database's functions and which of them user statements
 * may call (see pg_functions.h): a sorted array of pg_proc facts, searched
 * by name, and two sorted arrays of the operators and cast target types that
 * run a function that is not admitted.
 */
#include "pipeline/db/pg_functions.h"

#include "common/error.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/*
 * VOLATILE built-ins (in pg_catalog) that only read the clock, a random
 * generator or the session's own sequence state: harmless, and common in
 * generated SQL.  setseed() is not here: it changes the session's state.
 */
static const char *const harmless_volatile[] = {
	"random", "clock_timestamp", "timeofday", "gen_random_uuid", "currval",
};

struct pg_function {
	char *schema;
	char *name;
	int min_args;
	int max_args; /* INT_MAX when variadic */
	const char *refusal; /* NULL when admitted, else why not (static) */
};

/* An operator or a cast target type that runs a function not admitted. */
struct pg_refused {
	char *schema;
	char *name;
	char *function;      /* the function it runs */
	const char *refusal; /* why that function is not admitted (static) */
};

struct pg_refused_set {
	struct pg_refused *items;
	size_t n, cap;
};

struct pg_functions {
	struct pg_function *items;
	size_t n, cap;
	struct pg_refused_set operators, casts;
	bool sealed;
};

struct pg_functions *pg_functions_new(void)
{
	return calloc(1, sizeof(struct pg_functions));
}

static void refused_release(struct pg_refused_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		free(set->items[i].schema);
		free(set->items[i].name);
		free(set->items[i].function);
	}
	free(set->items);
}

struct pg_functions *pg_functions_free(struct pg_functions *f)
{
	if (!f)
		return NULL;
	for (size_t i = 0; i < f->n; i++) {
		free(f->items[i].schema);
		free(f->items[i].name);
	}
	free(f->items);
	refused_release(&f->operators);
	refused_release(&f->casts);
	free(f);
	return NULL;
}

static bool harmless(const struct pg_function_info *info)
{
	if (strcmp(info->schema, "pg_catalog") != 0)
		return false; /* a user's function named "random" is judged by what it is */
	for (size_t i = 0; i < sizeof(harmless_volatile) / sizeof(harmless_volatile[0]); i++)
		if (strcmp(info->name, harmless_volatile[i]) == 0)
			return true;
	return false;
}

/* NULL when the function may be called, else a phrase saying why not. */
static const char *refusal_of(const struct pg_function_info *info)
{
	if (info->kind == 'p')
		return "it is a procedure";
	if (info->security_definer)
		return "it is SECURITY DEFINER (it runs with its owner's rights)";
	if (info->volatility == 'i' || info->volatility == 's' || harmless(info))
		return NULL;
	return "it is VOLATILE (it may change state, wait, signal, read files or run SQL)";
}

int pg_functions_add(struct pg_functions *f, const struct pg_function_info *info)
{
	if (!f || f->sealed || !info || !info->schema || !info->name || info->nargs < 0)
		return -T2S_ERR_INVALID;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 256;
		struct pg_function *items = realloc(f->items, cap * sizeof(*items));
		if (!items)
			return -T2S_ERR_NOMEM;
		f->items = items;
		f->cap = cap;
	}
	struct pg_function *p = &f->items[f->n];
	p->schema = strdup(info->schema);
	p->name = strdup(info->name);
	if (!p->schema || !p->name) {
		free(p->schema);
		free(p->name);
		return -T2S_ERR_NOMEM;
	}
	int defaults = info->nargdefaults > 0 && info->nargdefaults <= info->nargs ? info->nargdefaults : 0;
	p->min_args = info->nargs - defaults;
	if (info->variadic && p->min_args > 0)
		p->min_args--; /* counted generously: more candidates can only refuse more */
	p->max_args = info->variadic ? INT_MAX : info->nargs;
	p->refusal = refusal_of(info);
	f->n++;
	return 0;
}

/* Keep schema.name in set when fn is not admitted (copies the strings). */
static int refused_add(struct pg_functions *f, struct pg_refused_set *set, const char *schema, const char *name,
		       const struct pg_function_info *fn)
{
	if (!f || f->sealed || !schema || !name || !fn || !fn->name || !fn->schema)
		return -T2S_ERR_INVALID;
	const char *refusal = refusal_of(fn);
	if (!refusal)
		return 0;
	if (set->n == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 8;
		struct pg_refused *items = realloc(set->items, cap * sizeof(*items));
		if (!items)
			return -T2S_ERR_NOMEM;
		set->items = items;
		set->cap = cap;
	}
	struct pg_refused *p = &set->items[set->n];
	p->schema = strdup(schema);
	p->name = strdup(name);
	p->function = strdup(fn->name);
	p->refusal = refusal;
	if (!p->schema || !p->name || !p->function) {
		free(p->schema);
		free(p->name);
		free(p->function);
		return -T2S_ERR_NOMEM;
	}
	set->n++;
	return 0;
}

int pg_functions_add_operator(struct pg_functions *f, const char *schema, const char *name,
			      const struct pg_function_info *fn)
{
	return f ? refused_add(f, &f->operators, schema, name, fn) : -T2S_ERR_INVALID;
}

int pg_functions_add_cast_target(struct pg_functions *f, const char *schema, const char *name,
				 const struct pg_function_info *fn)
{
	return f ? refused_add(f, &f->casts, schema, name, fn) : -T2S_ERR_INVALID;
}

static int cmp_refused(const void *a, const void *b)
{
	const struct pg_refused *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->schema, y->schema);
}

static int cmp_function(const void *a, const void *b)
{
	const struct pg_function *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->schema, y->schema);
}

int pg_functions_seal(struct pg_functions *f)
{
	if (!f)
		return -T2S_ERR_INVALID;
	if (f->n > 1)
		qsort(f->items, f->n, sizeof(*f->items), cmp_function);
	if (f->operators.n > 1)
		qsort(f->operators.items, f->operators.n, sizeof(*f->operators.items), cmp_refused);
	if (f->casts.n > 1)
		qsort(f->casts.items, f->casts.n, sizeof(*f->casts.items), cmp_refused);
	f->sealed = true;
	return 0;
}

/* Index of the first row named name, or f->n when none. */
static size_t first_named(const struct pg_functions *f, const char *name)
{
	size_t lo = 0, hi = f->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(f->items[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < f->n && strcmp(f->items[lo].name, name) == 0 ? lo : f->n;
}

enum pg_function_verdict pg_functions_check(const struct pg_functions *f, const char *schema, const char *name,
					    int nargs, const char **ret_reason)
{
	if (!f || !f->sealed || !name)
		return PG_FUNCTION_UNKNOWN;
	size_t candidates = 0;
	for (size_t i = first_named(f, name); i < f->n && strcmp(f->items[i].name, name) == 0; i++) {
		const struct pg_function *p = &f->items[i];
		if (schema && strcmp(p->schema, schema) != 0)
			continue;
		if (nargs < p->min_args || nargs > p->max_args)
			continue;
		candidates++;
		if (p->refusal) {
			if (ret_reason)
				*ret_reason = p->refusal;
			return PG_FUNCTION_REFUSED;
		}
	}
	return candidates ? PG_FUNCTION_ALLOWED : PG_FUNCTION_UNKNOWN;
}

/* The verdict for schema.name in set (see pg_functions_check_operator). */
static enum pg_function_verdict refused_check(const struct pg_functions *f, const struct pg_refused_set *set,
					      const char *schema, const char *name, const char **ret_function,
					      const char **ret_reason)
{
	if (!f || !f->sealed || !name)
		return PG_FUNCTION_ALLOWED;
	size_t lo = 0, hi = set->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(set->items[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < set->n && strcmp(set->items[i].name, name) == 0; i++) {
		const struct pg_refused *p = &set->items[i];
		if (schema && strcmp(p->schema, schema) != 0)
			continue;
		if (ret_function)
			*ret_function = p->function;
		if (ret_reason)
			*ret_reason = p->refusal;
		return PG_FUNCTION_REFUSED;
	}
	return PG_FUNCTION_ALLOWED;
}

enum pg_function_verdict pg_functions_check_operator(const struct pg_functions *f, const char *schema,
						     const char *name, const char **ret_function,
						     const char **ret_reason)
{
	return f ? refused_check(f, &f->operators, schema, name, ret_function, ret_reason) : PG_FUNCTION_ALLOWED;
}

enum pg_function_verdict pg_functions_check_cast(const struct pg_functions *f, const char *schema, const char *name,
						 const char **ret_function, const char **ret_reason)
{
	return f ? refused_check(f, &f->casts, schema, name, ret_function, ret_reason) : PG_FUNCTION_ALLOWED;
}

/* Copies of set's entries into out (empty).  0 or -T2S_ERR_NOMEM. */
static int refused_copy(struct pg_refused_set *out, const struct pg_refused_set *set)
{
	out->items = calloc(set->n ? set->n : 1, sizeof(*out->items));
	if (!out->items)
		return -T2S_ERR_NOMEM;
	out->cap = set->n ? set->n : 1;
	for (size_t i = 0; i < set->n; i++) {
		struct pg_refused *p = &out->items[out->n];
		*p = (struct pg_refused){strdup(set->items[i].schema), strdup(set->items[i].name),
					 strdup(set->items[i].function), set->items[i].refusal};
		out->n++;
		if (!p->schema || !p->name || !p->function)
			return -T2S_ERR_NOMEM;
	}
	return 0;
}

/*
 * PostgreSQL functions that look a relation up by name or OID and say
 * whether it exists, what it is or how big it is: left out of the built-ins
 * a table-limited caller may call (pg_functions_builtins), which would
 * otherwise tell a hidden table from a missing one.
 */
static const char *const relation_lookups[] = {
	"to_regclass", "has_table_privilege", "has_column_privilege", "has_any_column_privilege",
	"has_sequence_privilege", "pg_table_is_visible", "pg_relation_size", "pg_total_relation_size",
	"pg_table_size", "pg_indexes_size", "pg_relation_filenode", "pg_relation_filepath", "pg_get_viewdef",
	"pg_get_indexdef", "pg_get_constraintdef", "pg_get_triggerdef", "pg_get_ruledef", "pg_get_expr",
	"pg_get_serial_sequence", "pg_get_partkeydef", "pg_get_statisticsobjdef", "pg_get_replica_identity_index",
	"pg_partition_tree", "pg_partition_root", "pg_partition_ancestors", "obj_description", "col_description",
	"shobj_description", "row_security_active", "pg_describe_object", "pg_identify_object",
	"pg_identify_object_as_address", "pg_get_object_address", "pg_column_is_updatable",
	"pg_relation_is_updatable", "pg_options_to_table", "pg_get_keywords",
	/* a type by name is a table's row type too; a schema by name is one outside the boundary */
	"to_regtype", "to_regtypemod", "has_type_privilege", "format_type", "to_regnamespace",
	"has_schema_privilege", "pg_input_is_valid", "pg_input_error_info", NULL,
};

static bool is_relation_lookup(const char *name)
{
	for (const char *const *n = relation_lookups; *n; n++)
		if (strcmp(*n, name) == 0)
			return true;
	return false;
}

struct pg_functions *pg_functions_builtins(const struct pg_functions *f)
{
	struct pg_functions *b = f ? pg_functions_new() : NULL;
	int rc = b ? 0 : -T2S_ERR_NOMEM;
	for (size_t i = 0; rc == 0 && i < f->n; i++) {
		const struct pg_function *p = &f->items[i];
		if (strcmp(p->schema, "pg_catalog") != 0 || is_relation_lookup(p->name))
			continue;
		if (b->n == b->cap) {
			size_t cap = b->cap ? b->cap * 2 : 256;
			struct pg_function *items = realloc(b->items, cap * sizeof(*items));
			if (!items) {
				rc = -T2S_ERR_NOMEM;
				break;
			}
			b->items = items;
			b->cap = cap;
		}
		b->items[b->n] = (struct pg_function){strdup(p->schema), strdup(p->name), p->min_args, p->max_args,
						      p->refusal};
		b->n++;
		if (!b->items[b->n - 1].schema || !b->items[b->n - 1].name)
			rc = -T2S_ERR_NOMEM;
	}
	if (rc == 0)
		rc = refused_copy(&b->operators, &f->operators);
	if (rc == 0)
		rc = refused_copy(&b->casts, &f->casts);
	if (rc < 0)
		return pg_functions_free(b);
	b->sealed = true; /* items stay in f's order: sorted */
	return b;
}
