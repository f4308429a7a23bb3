/*
 * state_descriptions.c - the generated descriptions record kind: text from
 * the describe model or metadata, cached per database and schema hash (a
 * different hash sees nothing; see state_store.h).
 */
#include "pipeline/store/state_store_internal.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

static const struct field description_fields[] = DESCRIPTION_FIELDS(struct state_description, source);

/* Move r into the struct state_descriptions at ret. */
static void take_descriptions(struct rows *r, void *ret)
{
	struct state_descriptions *l = ret;
	*l = (struct state_descriptions){.arena = r->arena, .items = r->items, .n = r->n};
}

static const struct row_kind description_rows =
	ROW_KIND("description", "descriptions", struct state_description, description_fields, take_descriptions);

void state_descriptions_release(struct state_descriptions *l)
{
	if (l)
		store_list_release(&l->arena, l, sizeof(*l));
}

/* A database name and a schema hash. */
static int check_database_hash(const char *database, const char *hash, struct t2s_error *err)
{
	int rc = store_check_database(database, err);
	return rc == 0 ? store_check_text("schema_hash", hash, STATE_SCHEMA_HASH_MAX, false, err) : rc;
}

static int check_description(const struct state_description *d, size_t i, struct t2s_error *err)
{
	char field[48];
	int rc = store_check_target(d->table, d->column, err);
	if (rc == 0) {
		snprintf(field, sizeof(field), "descriptions[%zu].text", i);
		rc = store_check_text(field, d->text, STATE_TEXT_MAX, false, err);
	}
	if (rc == 0) {
		snprintf(field, sizeof(field), "descriptions[%zu].source", i);
		rc = store_check_text(field, d->source, STATE_SOURCE_MAX, false, err);
	}
	return rc;
}

/* The items as one JSON array text [{"t","c","x","s"}...] (malloc'd, caller frees), or NULL on OOM. */
static char *descriptions_json(const struct state_description *items, size_t n)
{
	json_t *arr = json_array();
	if (!arr)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "t", items[i].table, "c",
				      items[i].column ? items[i].column : "", "x", items[i].text, "s", items[i].source);
		if (!o || json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	char *text = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return text;
}

int state_store_descriptions_put_many(struct state_store *s, const char *database, const char *schema_hash,
				      const struct state_description *items, size_t n, struct t2s_error *err)
{
	int rc = check_database_hash(database, schema_hash, err);
	if (rc < 0)
		return rc;
	if (n > STATE_DESCRIPTIONS_PUT_MAX)
		return t2s_error_set(err, T2S_ERR_INVALID, "at most %u descriptions per call",
				     STATE_DESCRIPTIONS_PUT_MAX);
	if (n == 0)
		return 0;
	if (!items)
		return t2s_error_set(err, T2S_ERR_INVALID, "descriptions are required");
	for (size_t i = 0; i < n; i++)
		if ((rc = check_description(&items[i], i, err)) < 0)
			return rc;
	char *json = descriptions_json(items, n);
	if (!json)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory encoding descriptions");
	struct param p[] = {P_TEXT(database), P_TEXT(schema_hash), P_TEXT(json)};
	/* One statement per batch; rows are applied in array order, so a later duplicate wins. */
	rc = store_exec_one(s, true,
			  "INSERT INTO description_cache"
			  " (db_name, schema_hash, table_name, column_name, text, source, updated_at)"
			  " SELECT $1, $2, json_extract(value, '$.t'), json_extract(value, '$.c'),"
			  " json_extract(value, '$.x'), json_extract(value, '$.s'), " NOW_LITE
			  " FROM json_each($3) WHERE true ORDER BY key"
			  " ON CONFLICT (db_name, schema_hash, table_name, column_name)"
			  " DO UPDATE SET text = excluded.text, source = excluded.source, updated_at = excluded.updated_at",
			  "INSERT INTO description_cache (db_name, schema_hash, table_name, column_name, text, source)"
			  " SELECT DISTINCT ON (r.t, r.c) $1, $2, r.t, r.c, r.x, r.s"
			  " FROM ROWS FROM (json_to_recordset($3::json) AS (t text, c text, x text, s text))"
			  " WITH ORDINALITY AS r(t, c, x, s, n)"
			  " ORDER BY r.t, r.c, r.n DESC"
			  " ON CONFLICT (db_name, schema_hash, table_name, column_name)"
			  " DO UPDATE SET text = excluded.text, source = excluded.source, updated_at = now()",
			  p, 3, NULL, err);
	free(json);
	return rc;
}

int state_store_descriptions_get_all(struct state_store *s, const char *database, const char *schema_hash,
				     struct state_descriptions *ret, struct t2s_error *err)
{
	static const struct rows_query q = {
		.lite = "SELECT table_name, column_name, text, source FROM description_cache"
			" WHERE db_name = $1 AND schema_hash = $2 ORDER BY table_name, column_name",
		.pg = "SELECT table_name, column_name, text, source FROM description_cache"
		      " WHERE db_name = $1 AND schema_hash = $2"
		      " ORDER BY table_name COLLATE \"C\", column_name COLLATE \"C\"",
		.np = 2,
	};
	int rc = check_database_hash(database, schema_hash, err);
	if (rc < 0)
		return rc;
	struct param p[] = {P_TEXT(database), P_TEXT(schema_hash)};
	return store_rows_read(s, &description_rows, &q, p, NULL, ret, err);
}

int state_store_descriptions_prune(struct state_store *s, const char *database, const char *keep_hash,
				   int64_t *ret_removed, struct t2s_error *err)
{
	int rc = check_database_hash(database, keep_hash, err);
	if (rc < 0)
		return rc;
	struct param p[] = {P_TEXT(database), P_TEXT(keep_hash)};
	int64_t removed = 0;
	rc = store_exec_one(s, true, "DELETE FROM description_cache WHERE db_name = $1 AND schema_hash <> $2", NULL, p,
			    2, &removed, err);
	if (rc == 0 && ret_removed)
		*ret_removed = removed;
	return rc;
}
