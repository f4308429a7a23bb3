/*
 * schema_restrict.c - a caller's view of a schema model: the granted tables
 * alone (see schema_grant.h).  The view's tables, columns and foreign keys
 * are its own copies (schema_finish writes facts into them); their strings
 * and samples stay in the parent's arena, which the view keeps alive.
 */
#include "pipeline/db/schema_grant.h"

#include "common/strbuf.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int schema_grant_init(struct schema_grant *g, const char *const *tables, size_t n)
{
	g->tables = tables;
	g->n_tables = n;
	const char **sorted = malloc((n ? n : 1) * sizeof(*sorted));
	if (!sorted)
		return -T2S_ERR_NOMEM;
	memcpy(sorted, tables, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_names);
	struct strbuf sb;
	strbuf_init(&sb, (size_t)1 << 24);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		if (i == 0 || strcmp(sorted[i], sorted[i - 1]) != 0)
			rc = strbuf_adds(&sb, sorted[i]) < 0 || strbuf_add(&sb, "\x1f", 1) < 0 ? -T2S_ERR_NOMEM : 0;
	free(sorted);
	if (rc == 0)
		hash_sha256_hex(sb.buf, sb.len, g->key);
	strbuf_release(&sb);
	return rc;
}

/* Do two table names name one table on s's engine (exactly, or ignoring case where names are not folded)? */
static bool same_name(const struct schema *s, const char *a, const char *b)
{
	return s->engine->folds_case ? strcmp(a, b) == 0 : strcasecmp(a, b) == 0;
}

bool schema_grant_allows(const struct schema_grant *g, const struct schema *full, const char *api_name)
{
	for (size_t i = 0; i < g->n_tables; i++)
		if (g->tables[i] && same_name(full, g->tables[i], api_name))
			return true;
	return false;
}

/* Does s hold the table (schema, name), schema NULL: the engine's home schema? */
static bool holds_table(const struct schema *s, const char *schema, const char *name)
{
	const char *home = s->engine->home_schema;
	for (size_t i = 0; i < s->n_tables; i++) {
		const struct schema_table *t = &s->tables[i];
		if (same_name(s, t->name, name) && same_name(s, t->schema, schema ? schema : home))
			return true;
	}
	return false;
}

bool schema_view_allows(const struct schema *s, const char *schema, const char *name)
{
	return !schema_is_view(s) || holds_table(s, schema, name);
}

bool schema_view_hides(const struct schema *s, const char *schema, const char *name)
{
	return schema_is_view(s) && !holds_table(s, schema, name) && holds_table(s->parent, schema, name);
}

/* t's foreign keys whose target is granted, into the view's arena; *ret_n their count.  false: no memory. */
static bool copy_foreign_keys(struct schema *view, const struct schema *full, const struct schema_grant *g,
			      struct schema_table *t)
{
	const struct schema_foreign_key *from = t->foreign_keys;
	size_t n = 0, total = t->n_foreign_keys;
	struct schema_foreign_key *fks = arena_calloc(&view->arena, total ? total : 1, sizeof(*fks));
	if (!fks)
		return false;
	for (size_t f = 0; f < total; f++) {
		int target = from[f].ref_index;
		if (target >= 0 && schema_grant_allows(g, full, full->tables[target].api_name))
			fks[n++] = from[f];
	}
	t->foreign_keys = fks;
	t->n_foreign_keys = n;
	return true;
}

int schema_restrict(struct schema *full, const struct schema_grant *g, bool shared_index, struct schema **ret,
		    struct t2s_error *err)
{
	struct schema *view = schema_new(full->database, full->engine);
	if (!view)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	view->parent = schema_ref(full);
	view->pg_functions = pg_functions_builtins(full->pg_functions); /* the database's own could read any table */
	view->introspect_ms = full->introspect_ms;
	memcpy(view->introspected_at, full->introspected_at, sizeof(view->introspected_at));
	view->index_name = arena_printf(&view->arena, "%s#%s", full->database, shared_index ? "shared" : g->key);
	view->grant_key = arena_strdup(&view->arena, g->key);
	view->tables = arena_calloc(&view->arena, full->n_tables ? full->n_tables : 1, sizeof(*view->tables));
	bool ok = view->index_name && view->grant_key && view->tables && (view->pg_functions || !full->pg_functions);
	for (size_t i = 0; ok && i < full->n_tables; i++) {
		if (!schema_grant_allows(g, full, full->tables[i].api_name))
			continue;
		struct schema_table *t = &view->tables[view->n_tables++];
		*t = full->tables[i];
		t->columns = arena_calloc(&view->arena, t->n_columns ? t->n_columns : 1, sizeof(*t->columns));
		ok = t->columns && copy_foreign_keys(view, full, g, t);
		if (ok)
			memcpy(t->columns, full->tables[i].columns, t->n_columns * sizeof(*t->columns));
	}
	if (!ok || schema_finish(view) < 0) {
		schema_unref(view);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	*ret = view;
	return 0;
}
