/*
 * introspect_sqlite.c - the schema model of a SQLite database, read with the
 * schema pragmas (table_info, foreign_key_list) as table-valued functions.
 */
#include "pipeline/db/introspect.h"

#include "common/strbuf.h"
#include "common/utf8.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct sqlite_ctx {
	struct db_conn *c;
	const struct introspect_options *o;
	struct schema *s;
	struct t2s_error *err;
};

static const char *col_text(struct sqlite_ctx *x, sqlite3_stmt *st, int i)
{
	const char *t = (const char *)sqlite3_column_text(st, i);
	if (!t)
		return NULL;
	return utf8_sanitize(&x->s->arena, t, (size_t)sqlite3_column_bytes(st, i));
}

static int prepare(struct sqlite_ctx *x, const char *sql, sqlite3_stmt **ret)
{
	sqlite_guard_arm(&x->c->guard, SQLITE_GUARD_INTROSPECT, x->o->timeout_ms);
	if (sqlite3_prepare_v2(x->c->sqlite, sql, -1, ret, NULL) != SQLITE_OK)
		return t2s_error_set(x->err, T2S_ERR_SQL_FAILED, "introspection failed: %s",
				     sqlite3_errmsg(x->c->sqlite));
	return 0;
}

static int step_error(struct sqlite_ctx *x, sqlite3_stmt *st)
{
	int rc = x->c->guard.timed_out ? t2s_error_set(x->err, T2S_ERR_TIMEOUT, "introspection timed out")
				       : t2s_error_set(x->err, T2S_ERR_SQL_FAILED, "introspection failed: %s",
						       sqlite3_errmsg(x->c->sqlite));
	sqlite3_finalize(st);
	return rc;
}

/* "name" with embedded quotes doubled, into the schema arena. */
static char *quote_ident(struct arena *a, const char *name)
{
	struct strbuf sb;
	strbuf_init(&sb, 1 << 16);
	strbuf_adds(&sb, "\"");
	for (const char *p = name; *p; p++) {
		if (*p == '"')
			strbuf_adds(&sb, "\"\"");
		else
			strbuf_add(&sb, p, 1);
	}
	strbuf_adds(&sb, "\"");
	char *out = arena_strdup(a, sb.buf);
	strbuf_release(&sb);
	return out;
}

static int read_tables(struct sqlite_ctx *x)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int rc = prepare(x,
			 "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') "
			 "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid",
			 &st);
	if (rc < 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		x->s->tables = arena_grow(&x->s->arena, x->s->tables, x->s->n_tables, &cap, sizeof(*x->s->tables));
		if (!x->s->tables) {
			sqlite3_finalize(st);
			return -T2S_ERR_NOMEM;
		}
		struct schema_table *t = &x->s->tables[x->s->n_tables++];
		memset(t, 0, sizeof(*t));
		t->schema = "main";
		t->name = col_text(x, st, 0);
		t->kind = strcmp((const char *)sqlite3_column_text(st, 1), "view") == 0 ? "view" : "table";
		t->row_count = -1;
	}
	if (rc != SQLITE_DONE)
		return step_error(x, st);
	sqlite3_finalize(st);
	return 0;
}

static int read_columns(struct sqlite_ctx *x, struct schema_table *t)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int pk_pos[2000];
	int rc = prepare(x, "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1)", &st);
	if (rc < 0)
		return rc;
	sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && t->n_columns < 2000) {
		t->columns = arena_grow(&x->s->arena, t->columns, t->n_columns, &cap, sizeof(*t->columns));
		if (!t->columns) {
			sqlite3_finalize(st);
			return -T2S_ERR_NOMEM;
		}
		struct schema_column *col = &t->columns[t->n_columns];
		memset(col, 0, sizeof(*col));
		col->name = col_text(x, st, 0);
		col->type = col_text(x, st, 1);
		if (!col->type)
			col->type = "";
		int pk = sqlite3_column_int(st, 3);
		col->primary_key = pk > 0;
		col->nullable = !sqlite3_column_int(st, 2) && !col->primary_key;
		pk_pos[t->n_columns++] = pk;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return step_error(x, st);
	sqlite3_finalize(st);
	/* Primary key columns in key order (pk is the 1-based position). */
	for (size_t i = 0; i < t->n_columns; i++)
		t->n_primary_key += pk_pos[i] > 0;
	t->primary_key = arena_calloc(&x->s->arena, t->n_primary_key, sizeof(*t->primary_key));
	if (!t->primary_key)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < t->n_columns; i++)
		if (pk_pos[i] > 0 && (size_t)pk_pos[i] <= t->n_primary_key)
			t->primary_key[pk_pos[i] - 1] = t->columns[i].name;
	return 0;
}

static int read_foreign_keys(struct sqlite_ctx *x, struct schema_table *t)
{
	sqlite3_stmt *st;
	size_t cap = 0, col_cap = 0;
	int last_id = -1;
	int rc = prepare(x, "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?1) ORDER BY id, seq",
			 &st);
	if (rc < 0)
		return rc;
	sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int id = sqlite3_column_int(st, 0);
		if (id != last_id) {
			struct schema_foreign_key *fk = introspect_new_foreign_key(x->s, t, &cap, &col_cap);
			if (!fk)
				goto nomem;
			fk->ref_table = col_text(x, st, 1);
			last_id = id;
		}
		/* A NULL "to" means the referenced table's primary key (resolved later). */
		if (introspect_add_foreign_key_column(x->s, &t->foreign_keys[t->n_foreign_keys - 1], &col_cap,
						      col_text(x, st, 2), col_text(x, st, 3)) < 0)
			goto nomem;
	}
	if (rc != SQLITE_DONE)
		return step_error(x, st);
	sqlite3_finalize(st);
	return 0;
nomem:
	sqlite3_finalize(st);
	return -T2S_ERR_NOMEM;
}

/* "REFERENCES t" without columns means t's primary key; resolve once all tables are read. */
static void resolve_implicit_references(struct schema *s)
{
	for (size_t i = 0; i < s->n_tables; i++) {
		struct schema_table *t = &s->tables[i];
		for (size_t f = 0; f < t->n_foreign_keys; f++) {
			struct schema_foreign_key *fk = &t->foreign_keys[f];
			const struct schema_table *ref = NULL;
			for (size_t j = 0; j < s->n_tables && !ref; j++)
				if (strcasecmp(s->tables[j].name, fk->ref_table) == 0)
					ref = &s->tables[j];
			for (size_t k = 0; k < fk->n_columns; k++)
				if (!fk->ref_columns[k])
					fk->ref_columns[k] = ref && k < ref->n_primary_key ? ref->primary_key[k] : "";
		}
	}
}

/* Bounded count; a count that reaches the bound is reported as an estimate. Never fatal. */
static void read_row_count(struct sqlite_ctx *x, struct schema_table *t, const char *qname)
{
	char *sql = arena_printf(&x->s->arena, "SELECT count(*) FROM (SELECT 1 FROM %s LIMIT %ld)", qname,
				 x->o->row_count_scan_limit);
	sqlite3_stmt *st;
	struct t2s_error ignored;
	struct t2s_error *saved = x->err;
	x->err = &ignored;
	if (sql && prepare(x, sql, &st) == 0) {
		if (sqlite3_step(st) == SQLITE_ROW) {
			t->row_count = sqlite3_column_int64(st, 0);
			t->row_count_estimated = t->row_count >= x->o->row_count_scan_limit;
		}
		sqlite3_finalize(st);
	}
	x->err = saved;
}

/* Distinct samples from the first sample_rows rows; partial on timeout, never fatal. */
static int read_samples(struct sqlite_ctx *x, struct schema_table *t, const char *qname)
{
	if (x->o->sample_values <= 0 || x->o->sample_rows <= 0 || t->n_columns == 0)
		return 0;
	char *sql = arena_printf(&x->s->arena, "SELECT * FROM %s LIMIT %d", qname, x->o->sample_rows);
	size_t *caps = calloc(t->n_columns, sizeof(*caps));
	sqlite3_stmt *st;
	struct t2s_error ignored;
	int rc = 0;
	if (!sql || !caps) {
		free(caps);
		return -T2S_ERR_NOMEM;
	}
	struct t2s_error *saved = x->err;
	x->err = &ignored;
	if (prepare(x, sql, &st) == 0) {
		int n = sqlite3_column_count(st);
		while (rc == 0 && sqlite3_step(st) == SQLITE_ROW)
			for (int i = 0; i < n && (size_t)i < t->n_columns && rc == 0; i++) {
				int type = sqlite3_column_type(st, i);
				if (type == SQLITE_NULL || type == SQLITE_BLOB)
					continue;
				const char *v = (const char *)sqlite3_column_text(st, i);
				rc = introspect_add_sample(x->s, &t->columns[i], &caps[i], x->o, v,
							   (size_t)sqlite3_column_bytes(st, i));
			}
		sqlite3_finalize(st);
	}
	x->err = saved;
	free(caps);
	return rc;
}

int introspect_sqlite(struct db_conn *c, const struct introspect_options *o, struct schema **ret,
		      struct t2s_error *err)
{
	struct schema *s = schema_new(o->database, c->engine);
	if (!s)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	struct sqlite_ctx x = {.c = c, .o = o, .s = s, .err = err};
	int rc = read_tables(&x);
	for (size_t i = 0; rc == 0 && i < s->n_tables; i++) {
		struct schema_table *t = &s->tables[i];
		char *qname = quote_ident(&s->arena, t->name);
		if (!qname)
			rc = -T2S_ERR_NOMEM;
		if (rc == 0)
			rc = read_columns(&x, t);
		if (rc == 0)
			rc = read_foreign_keys(&x, t);
		if (rc == 0) {
			read_row_count(&x, t, qname);
			rc = read_samples(&x, t, qname);
		}
	}
	sqlite_guard_arm(&c->guard, SQLITE_GUARD_QUERY, 0);
	if (rc < 0) {
		if (rc == -T2S_ERR_NOMEM)
			t2s_error_set(err, T2S_ERR_NOMEM, "out of memory during introspection");
		schema_unref(s);
		return rc;
	}
	resolve_implicit_references(s);
	if (schema_finish(s) < 0) {
		schema_unref(s);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory during introspection");
	}
	*ret = s;
	return 0;
}
