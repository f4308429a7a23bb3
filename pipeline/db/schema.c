/*
 * schema.c - lifetime, sealing (API names, foreign-key targets, each
 * column's type class, key and reference, the name index), hashing, table
 * lookup by name and JSON form of the schema model.
 */
#include "pipeline/db/schema.h"

#include "common/clock.h"
#include "common/json_text.h"
#include "common/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct schema *schema_new(const char *database, const struct db_engine *engine)
{
	struct schema *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	atomic_init(&s->refs, 1);
	arena_init(&s->arena);
	s->engine = engine;
	s->database = arena_strdup(&s->arena, database);
	s->index_name = s->database;
	clock_rfc3339(s->introspected_at, sizeof(s->introspected_at));
	if (!s->database) {
		free(s);
		return NULL;
	}
	return s;
}

struct schema *schema_ref(struct schema *s)
{
	if (s)
		atomic_fetch_add(&s->refs, 1);
	return s;
}

struct schema *schema_unref(struct schema *s)
{
	if (s && atomic_fetch_sub(&s->refs, 1) == 1) {
		pg_functions_free(s->pg_functions);
		schema_unref(s->parent);
		arena_release(&s->arena);
		free(s);
	}
	return NULL;
}

/* Appends s and a field separator that cannot occur in identifiers' text form. */
static void add_field(struct strbuf *sb, const char *s)
{
	strbuf_adds(sb, s ? s : "\x01");
	strbuf_add(sb, "\x1f", 1);
}

void schema_compute_hash(struct schema *s)
{
	struct strbuf sb;
	strbuf_init(&sb, (size_t)1 << 30);
	add_field(&sb, s->engine->name);
	for (size_t i = 0; i < s->n_tables; i++) {
		const struct schema_table *t = &s->tables[i];
		add_field(&sb, "T");
		add_field(&sb, t->schema);
		add_field(&sb, t->name);
		add_field(&sb, t->kind);
		add_field(&sb, t->comment);
		for (size_t c = 0; c < t->n_columns; c++) {
			const struct schema_column *col = &t->columns[c];
			add_field(&sb, "C");
			add_field(&sb, col->name);
			add_field(&sb, col->type);
			add_field(&sb, col->nullable ? "null" : "not null");
			add_field(&sb, col->primary_key ? "pk" : "");
			add_field(&sb, col->comment);
		}
		for (size_t k = 0; k < t->n_primary_key; k++)
			add_field(&sb, t->primary_key[k]);
		for (size_t f = 0; f < t->n_foreign_keys; f++) {
			const struct schema_foreign_key *fk = &t->foreign_keys[f];
			add_field(&sb, "F");
			add_field(&sb, fk->ref_schema);
			add_field(&sb, fk->ref_table);
			for (size_t k = 0; k < fk->n_columns; k++) {
				add_field(&sb, fk->columns[k]);
				add_field(&sb, fk->ref_columns[k]);
			}
		}
	}
	hash_sha256_hex(sb.buf, sb.len, s->hash);
	strbuf_release(&sb);
}

/* The API name of table name of schema in s (see schema.h); an arena copy or name itself. */
static const char *api_name_of(struct schema *s, const char *schema, const char *name)
{
	return !db_engine_qualifies(s->engine, schema) ? name : arena_printf(&s->arena, "%s.%s", schema, name);
}

static int cmp_api_name(const void *a, const void *b, void *tables)
{
	const struct schema_table *t = tables;
	return strcmp(t[*(const size_t *)a].api_name, t[*(const size_t *)b].api_name);
}

/* ---- column facts ---- */

/* Each column's type class, key role and reference (see struct schema_column). */
static void set_column_facts(const struct schema *s, struct schema_table *t)
{
	for (size_t c = 0; c < t->n_columns; c++) {
		struct schema_column *col = &t->columns[c];
		const char *type = col->type ? col->type : "";
		col->type_class = (enum schema_type_class)s->engine->type_class(type);
		for (size_t k = 0; k < t->n_primary_key && !col->primary_key; k++)
			col->primary_key = t->primary_key[k] && strcmp(t->primary_key[k], col->name) == 0;
		col->reference = NULL;
		for (size_t f = 0; f < t->n_foreign_keys && !col->reference; f++)
			for (size_t k = 0; k < t->foreign_keys[f].n_columns && !col->reference; k++)
				if (strcmp(t->foreign_keys[f].columns[k], col->name) == 0)
					col->reference = &t->foreign_keys[f];
		col->key = col->primary_key || col->reference;
	}
}

bool schema_column_is_number(const struct schema_column *c)
{
	return c->type_class == SCHEMA_TYPE_INTEGER || c->type_class == SCHEMA_TYPE_REAL;
}

size_t schema_column_numeric_samples(const struct schema_column *c)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n_samples; i++) {
		char *end = NULL;
		const char *v = c->samples[i];
		if (!v)
			continue;
		strtod(v, &end);
		n += end != v && *end == '\0';
	}
	return n;
}

/* ---- sealing ---- */

/* The table a foreign key references: its schema and name exactly; SQLite's (no schema) also case-insensitively. */
static int fk_ref_index(const struct schema *s, const struct schema_foreign_key *fk)
{
	for (size_t i = 0; fk->ref_table && i < s->n_tables; i++)
		if (strcmp(s->tables[i].name, fk->ref_table) == 0 &&
		    (!fk->ref_schema || strcmp(s->tables[i].schema, fk->ref_schema) == 0))
			return (int)i;
	for (size_t i = 0; fk->ref_table && !fk->ref_schema && i < s->n_tables; i++)
		if (strcasecmp(s->tables[i].name, fk->ref_table) == 0)
			return (int)i;
	return -1;
}

int schema_finish(struct schema *s)
{
	s->by_api_name = arena_calloc(&s->arena, s->n_tables ? s->n_tables : 1, sizeof(*s->by_api_name));
	if (!s->by_api_name)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < s->n_tables; i++) {
		struct schema_table *t = &s->tables[i];
		if (!(t->api_name = api_name_of(s, t->schema, t->name)))
			return -T2S_ERR_NOMEM;
		s->by_api_name[i] = i;
	}
	qsort_r(s->by_api_name, s->n_tables, sizeof(*s->by_api_name), cmp_api_name, s->tables);
	for (size_t i = 0; i < s->n_tables; i++)
		set_column_facts(s, &s->tables[i]);
	for (size_t i = 0; i < s->n_tables; i++)
		for (size_t f = 0; f < s->tables[i].n_foreign_keys; f++) {
			struct schema_foreign_key *fk = &s->tables[i].foreign_keys[f];
			fk->ref_index = fk_ref_index(s, fk);
			/* As the key spells it (SQLite matches names case-insensitively). */
			fk->ref_api_name = api_name_of(s, fk->ref_schema, fk->ref_table ? fk->ref_table : "?");
			if (!fk->ref_api_name)
				return -T2S_ERR_NOMEM;
		}
	schema_compute_hash(s);
	return 0;
}

const struct schema_table *schema_find_table(const struct schema *s, const char *name)
{
	size_t lo = 0, hi = s->by_api_name && name ? s->n_tables : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct schema_table *t = &s->tables[s->by_api_name[mid]];
		int c = strcmp(t->api_name, name);
		if (c == 0) {
			bool twice = (mid > 0 && strcmp(s->tables[s->by_api_name[mid - 1]].api_name, name) == 0) ||
				     (mid + 1 < s->n_tables && strcmp(s->tables[s->by_api_name[mid + 1]].api_name, name) == 0);
			return twice ? NULL : t;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Does table t answer to name at step step of enum schema_name_match? */
static bool names_table(const struct schema_table *t, const char *name, enum schema_name_match step)
{
	if (step == SCHEMA_NAME_EXACT)
		return strcmp(t->api_name, name) == 0;
	if (step == SCHEMA_NAME_BARE)
		return strcasecmp(t->name, name) == 0;
	const char *dot = strchr(name, '.');
	return strcasecmp(t->api_name, name) == 0 ||
	       (dot && strlen(t->schema) == (size_t)(dot - name) &&
		strncasecmp(t->schema, name, (size_t)(dot - name)) == 0 && strcasecmp(t->name, dot + 1) == 0);
}

int schema_resolve_table(const struct schema *s, const char *name, enum schema_name_match loosest, const int *among,
			 size_t n_among)
{
	size_t n = among ? n_among : s->n_tables;
	for (int step = SCHEMA_NAME_EXACT; name && step <= (int)loosest; step++) {
		int found = -1;
		for (size_t i = 0; i < n; i++) {
			int t = among ? among[i] : (int)i;
			if (t == found || !names_table(&s->tables[t], name, (enum schema_name_match)step))
				continue;
			if (found >= 0)
				return -1;
			found = t;
		}
		if (found >= 0)
			return found;
	}
	return -1;
}

static json_t *string_array(const char *const *items, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(items[i]));
	return a;
}

static json_t *nullable_string(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *column_to_json(const struct schema_column *c)
{
	return json_pack("{s:s, s:s, s:b, s:b, s:o, s:o}", "name", c->name, "type", c->type, "nullable",
			 c->nullable, "primary_key", c->primary_key, "comment", nullable_string(c->comment),
			 "samples", string_array(c->samples, c->n_samples));
}

static json_t *foreign_key_to_json(const struct schema_foreign_key *fk)
{
	return json_pack("{s:o, s:{s:o, s:s, s:o}}", "columns", string_array(fk->columns, fk->n_columns),
			 "references", "schema", nullable_string(fk->ref_schema), "table", fk->ref_table,
			 "columns", string_array(fk->ref_columns, fk->n_columns));
}

static json_t *table_to_json(const struct schema_table *t)
{
	json_t *cols = json_array(), *fks = json_array();
	for (size_t i = 0; i < t->n_columns; i++)
		json_array_append_new(cols, column_to_json(&t->columns[i]));
	for (size_t i = 0; i < t->n_foreign_keys; i++)
		json_array_append_new(fks, foreign_key_to_json(&t->foreign_keys[i]));
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:b, s:o, s:o, s:o}", "schema", t->schema, "name",
			 t->name, "qualified_name", t->api_name, "kind",
			 t->kind, "comment", nullable_string(t->comment), "row_count",
			 t->row_count >= 0 ? json_integer(t->row_count) : json_null(), "row_count_estimated",
			 t->row_count_estimated, "columns", cols, "primary_key",
			 string_array(t->primary_key, t->n_primary_key), "foreign_keys", fks);
}

/* The model's own fields, without its tables (new reference). */
static json_t *schema_head_json(const struct schema *s)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:f}", "name", s->database, "engine", s->engine->name,
			 "schema_hash", s->hash, "introspected_at", s->introspected_at, "introspection_ms",
			 s->introspect_ms);
}

json_t *schema_to_json(const struct schema *s)
{
	json_t *tables = json_array();
	for (size_t i = 0; i < s->n_tables; i++)
		json_array_append_new(tables, table_to_json(&s->tables[i]));
	json_t *out = schema_head_json(s);
	if (out)
		json_object_set_new(out, "tables", tables);
	else
		json_decref(tables);
	return out;
}

char *schema_to_json_text(const struct schema *s, size_t *ret_len)
{
	json_t *head = schema_head_json(s);
	char *h = head ? json_text_compact(head, NULL) : NULL;
	json_decref(head);
	if (!h)
		return NULL;
	struct json_text t = {0};
	h[strlen(h) - 1] = '\0'; /* the head object without its closing brace */
	json_text_raw(&t, h);
	free(h);
	json_text_raw(&t, ",\"tables\":[");
	for (size_t i = 0; i < s->n_tables; i++) {
		json_t *one = table_to_json(&s->tables[i]);
		if (i)
			json_text_raw(&t, ",");
		json_text_add(&t, one);
		json_decref(one);
	}
	json_text_raw(&t, "]}");
	return json_text_detach(&t, ret_len);
}
