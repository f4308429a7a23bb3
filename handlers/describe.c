/*
 * describe.c - schema descriptions (pipeline/describe.h):
 *   POST /describe {database, tables?}            one description per table and column, with its source
 *   GET  /databases/{name}/descriptions           the user's overrides
 *   PUT  /databases/{name}/descriptions {descriptions: [{table, column?, text|null}]}
 * Overrides live in the state store: they survive refresh and restart and
 * win over generated text.  Model-written descriptions are cached by schema
 * hash in Redis (through the describe stage) and in the state store.
 */
#include "handlers/handlers.h"

#include "pipeline/describe/describe.h"
#include "handlers/request_json.h"

#include <string.h>
#include <strings.h>

static json_t *overrides_json(const struct state_overrides *l)
{
	json_t *a = json_array();
	for (size_t i = 0; i < l->n; i++) {
		const struct state_override *o = &l->items[i];
		json_array_append_new(a, json_pack("{s:s, s:o, s:s, s:s}", "table", o->table, "column",
						   o->column ? json_string(o->column) : json_null(), "text", o->text,
						   "updated_at", o->updated_at));
	}
	return a;
}

static int load_overrides(struct http_request *req, const char *database, struct state_overrides *ret,
			  struct t2s_error *err)
{
	if (!req->app->state)
		return t2s_error_set(err, T2S_ERR_UNAVAILABLE, "the state store is unavailable: %s", req->app->state_error);
	return state_store_overrides_list(req->app->state, database, ret, err);
}

void handle_descriptions_get(struct http_request *req, struct http_response *res)
{
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct state_overrides l;
	if (request_database(req, req->params[0], &db, &err) < 0 || load_overrides(req, db->cfg->name, &l, &err) < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	http_reply_json(res, 200, json_pack("{s:s, s:o}", "database", db->cfg->name, "overrides", overrides_json(&l)));
	state_overrides_release(&l);
}

/*
 * Check one {table, column?, text} entry against the schema and, when apply
 * is set, store or delete it.  PUT checks every entry before applying any,
 * so a rejected request changes nothing.
 */
static int put_one(struct http_request *req, const struct schema *s, const char *database, json_t *entry, size_t i,
		   bool apply, struct t2s_error *err)
{
	static const char *const fields[] = {"table", "column", "text", NULL};
	const char *key;
	json_t *v;
	if (!json_is_object(entry))
		return t2s_error_set(err, T2S_ERR_INVALID, "descriptions[%zu] must be an object", i);
	json_object_foreach(entry, key, v) {
		bool known = false;
		for (const char *const *f = fields; *f; f++)
			known |= strcmp(*f, key) == 0;
		if (!known)
			return t2s_error_set(err, T2S_ERR_INVALID, "descriptions[%zu]: unknown field '%.60s'", i, key);
	}
	const char *table = NULL, *column = NULL, *text = NULL;
	if (request_json_string(entry, "table", true, &table, err) < 0 ||
	    request_json_string(entry, "column", false, &column, err) < 0)
		return -T2S_ERR_INVALID;
	json_t *t = json_object_get(entry, "text");
	if (!t || !(json_is_string(t) || json_is_null(t)))
		return t2s_error_set(err, T2S_ERR_INVALID, "descriptions[%zu].text must be a string, or null to remove", i);
	text = json_is_string(t) && json_string_length(t) ? json_string_value(t) : NULL;
	const struct schema_table *tab = schema_find_table(s, table);
	if (!tab)
		return t2s_error_set(err, T2S_ERR_INVALID, "descriptions[%zu]: no table '%.100s' in %s", i, table, database);
	bool found = !column;
	for (size_t c = 0; column && c < tab->n_columns; c++)
		found |= strcmp(tab->columns[c].name, column) == 0;
	if (!found)
		return t2s_error_set(err, T2S_ERR_INVALID, "descriptions[%zu]: no column '%.100s' in table %s", i, column,
				     tab->name);
	if (!apply)
		return 0;
	if (!text) {
		int rc = state_store_override_delete(req->app->state, database, tab->name, column, err);
		return rc == -T2S_ERR_NOT_FOUND ? 0 : rc;
	}
	return state_store_override_put(req->app->state, database, tab->name, column, text, err);
}

void handle_descriptions_put(struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = {"descriptions", NULL};
	struct t2s_error err = {0};
	struct catalog_db *db;
	struct schema *s = NULL;
	json_t *body = NULL;
	struct state_overrides l;
	int rc = request_database(req, req->params[0], &db, &err);
	if (rc == 0)
		rc = request_json_object(req, fields, &body, &err);
	json_t *list = body ? json_object_get(body, "descriptions") : NULL;
	if (rc == 0 && (!json_is_array(list) || json_array_size(list) == 0 || json_array_size(list) > 10000))
		rc = t2s_error_set(&err, T2S_ERR_INVALID, "field 'descriptions' must be an array of 1 to 10000 entries");
	if (rc == 0 && !req->app->state)
		rc = t2s_error_set(&err, T2S_ERR_UNAVAILABLE, "the state store is unavailable: %s", req->app->state_error);
	if (rc == 0)
		rc = catalog_db_schema(db, &s, &err);
	for (size_t i = 0; rc == 0 && i < json_array_size(list); i++)
		rc = put_one(req, s, db->cfg->name, json_array_get(list, i), i, false, &err);
	for (size_t i = 0; rc == 0 && i < json_array_size(list); i++)
		rc = put_one(req, s, db->cfg->name, json_array_get(list, i), i, true, &err);
	if (rc == 0)
		rc = load_overrides(req, db->cfg->name, &l, &err);
	schema_unref(s);
	json_decref(body);
	if (rc < 0) {
		http_reply_error(res, req, &err);
		return;
	}
	http_reply_json(res, 200, json_pack("{s:s, s:o}", "database", db->cfg->name, "overrides", overrides_json(&l)));
	state_overrides_release(&l);
}

/* Table indexes named in body's "tables" (all when absent). *ret malloc'd. */
static int requested_tables(const struct schema *s, json_t *body, int **ret, size_t *ret_n, struct t2s_error *err)
{
	json_t *names = json_object_get(body, "tables");
	if (names && !json_is_null(names) && (!json_is_array(names) || json_array_size(names) == 0))
		return t2s_error_set(err, T2S_ERR_INVALID, "field 'tables' must be a non-empty array of table names");
	size_t n = names && !json_is_null(names) ? json_array_size(names) : s->n_tables;
	int *v = calloc(n ? n : 1, sizeof(int));
	if (!v)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (!names || json_is_null(names)) {
			v[i] = (int)i;
			continue;
		}
		json_t *name = json_array_get(names, i);
		const struct schema_table *t = json_is_string(name) ? schema_find_table(s, json_string_value(name)) : NULL;
		if (!t) {
			free(v);
			return t2s_error_set(err, json_is_string(name) ? T2S_ERR_NOT_FOUND : T2S_ERR_INVALID,
					     "tables[%zu]: no table named '%.100s'", i,
					     json_is_string(name) ? json_string_value(name) : "(not a string)");
		}
		v[i] = (int)(t - s->tables);
	}
	size_t kept = 0; /* a table named twice is described once */
	for (size_t i = 0; i < n; i++) {
		bool dup = false;
		for (size_t j = 0; j < kept && !dup; j++)
			dup = v[j] == v[i];
		if (!dup)
			v[kept++] = v[i];
	}
	*ret = v;
	*ret_n = kept;
	return 0;
}

static json_t *describe_json(const struct schema *s, const struct describe_result *r)
{
	char buf[512];
	json_t *tables = json_array(), *cur = NULL;
	for (size_t i = 0; i < r->n_items; i++) {
		const struct describe_item *it = &r->items[i];
		const struct schema_table *t = &s->tables[it->table];
		if (it->column < 0) {
			cur = json_pack("{s:s, s:s, s:s, s:[]}", "name", schema_table_display_name(s, t, buf, sizeof(buf)),
					"description", it->text, "source", it->source, "columns");
			json_array_append_new(tables, cur);
		} else if (cur) {
			json_array_append_new(json_object_get(cur, "columns"),
					      json_pack("{s:s, s:s, s:s}", "name", t->columns[it->column].name, "description",
							it->text, "source", it->source));
		}
	}
	json_t *errors = json_array();
	for (size_t i = 0; i < r->n_errors; i++)
		json_array_append_new(errors, json_string(r->errors[i]));
	return json_pack("{s:s, s:o, s:i, s:i, s:i, s:{s:I, s:I}, s:o, s:{s:f}}", "schema_hash", s->hash, "tables", tables,
			 "model_calls", r->model_calls, "model_errors", r->model_errors, "cache_hits", r->cache_hits,
			 "tokens", "prompt", (json_int_t)r->prompt_tokens, "completion", (json_int_t)r->completion_tokens,
			 "errors", errors, "timings_ms", "total", r->ms_total);
}

/*
 * Tables the model described go to the state store whole (their columns the
 * model left out keep their metadata text and source), so a restart without
 * Redis serves them without model calls.  Overrides are not stored here.
 */
static void persist(struct http_request *req, const struct schema *s, const struct describe_result *r)
{
	if (!req->app->state)
		return;
	struct state_description *items = calloc(r->n_items ? r->n_items : 1, sizeof(*items));
	size_t n = 0;
	int model_table = -1;
	for (size_t i = 0; items && i < r->n_items; i++) {
		const struct describe_item *it = &r->items[i];
		if (it->column < 0)
			model_table = strcmp(it->source, describe_source_model) == 0 ? it->table : -1;
		if (it->table != model_table || strcmp(it->source, describe_source_override) == 0)
			continue;
		items[n++] = (struct state_description){s->tables[it->table].name,
							it->column < 0 ? NULL : s->tables[it->table].columns[it->column].name,
							it->text, it->source};
	}
	struct t2s_error ignored;
	if (n)
		state_store_descriptions_put_many(req->app->state, s->database, s->hash, items, n, &ignored);
	free(items);
}

/* The cached item of (table, column) for this schema hash, or NULL. */
static const struct state_description *cached_item(const struct state_descriptions *c, const char *table,
						   const char *column)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->items[i].table, table) == 0 &&
		    ((!column && !c->items[i].column) || (column && c->items[i].column && strcmp(c->items[i].column, column) == 0)))
			return &c->items[i];
	return NULL;
}

static const char *cached_text(const struct state_descriptions *c, const char *table, const char *column)
{
	const struct state_description *d = cached_item(c, table, column);
	return d ? d->text : NULL;
}

/* The describe stage's static source string for a stored one. */
static const char *source_of(const struct state_description *d)
{
	return d && strcmp(d->source, describe_source_model) == 0 ? describe_source_model : describe_source_metadata;
}

static const char *override_text(const struct state_overrides *ov, const char *table, const char *column)
{
	for (size_t i = 0; ov && i < ov->n; i++)
		if (strcasecmp(ov->items[i].table, table) == 0 &&
		    ((!column && !ov->items[i].column) || (column && ov->items[i].column && strcasecmp(ov->items[i].column, column) == 0)))
			return ov->items[i].text;
	return NULL;
}

/* True when the state store (or an override) has text for the table and every column of it. */
static bool fully_cached(const struct schema *s, int t, const struct state_descriptions *c,
			 const struct state_overrides *ov)
{
	const struct schema_table *tab = &s->tables[t];
	if (!cached_text(c, tab->name, NULL) && !override_text(ov, tab->name, NULL))
		return false;
	for (size_t k = 0; k < tab->n_columns; k++)
		if (!cached_text(c, tab->name, tab->columns[k].name) && !override_text(ov, tab->name, tab->columns[k].name))
			return false;
	return true;
}

static int push_result_item(struct describe_result *r, int table, int column, const char *text, const char *source)
{
	struct describe_item *v = realloc(r->items, (r->n_items + 1) * sizeof(*v));
	if (!v)
		return -T2S_ERR_NOMEM;
	r->items = v;
	char *copy = strdup(text);
	if (!copy)
		return -T2S_ERR_NOMEM;
	v[r->n_items++] = (struct describe_item){table, column, copy, source};
	return 0;
}

/*
 * Model descriptions already in the state store for this schema hash are
 * served from there (a restart without Redis makes no model call); the
 * other tables go to the describe stage.  Items keep the requested order.
 */
static int describe_with_store(struct http_request *req, const struct schema *s, const int *tables, size_t n_tables,
			       const struct describe_options *o, const struct state_overrides *ov,
			       struct describe_result *ret, struct t2s_error *err)
{
	struct state_descriptions cached = {0};
	struct t2s_error ignored;
	bool have_cache = o->model && req->app->state &&
			  state_store_descriptions_get_all(req->app->state, s->database, s->hash, &cached, &ignored) == 0;
	int *todo = calloc(n_tables ? n_tables : 1, sizeof(int));
	size_t n_todo = 0;
	if (!todo) {
		if (have_cache)
			state_descriptions_release(&cached);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < n_tables; i++)
		if (!have_cache || !fully_cached(s, tables[i], &cached, ov))
			todo[n_todo++] = tables[i];
	struct describe_result fresh = {0};
	int rc = n_todo ? describe_run(s, todo, n_todo, o, &fresh, err) : 0;
	struct describe_result out = {0};
	if (rc == 0) {
		out = fresh;
		out.items = NULL;
		out.n_items = 0;
	}
	for (size_t i = 0; rc == 0 && i < n_tables; i++) {
		const struct schema_table *tab = &s->tables[tables[i]];
		bool from_fresh = false;
		for (size_t k = 0; k < n_todo && !from_fresh; k++)
			from_fresh = todo[k] == tables[i];
		for (size_t k = 0; from_fresh && rc == 0 && k < fresh.n_items; k++)
			if (fresh.items[k].table == tables[i])
				rc = push_result_item(&out, fresh.items[k].table, fresh.items[k].column, fresh.items[k].text,
						      fresh.items[k].source);
		for (int c = -1; !from_fresh && rc == 0 && c < (int)tab->n_columns; c++) {
			const char *column = c < 0 ? NULL : tab->columns[c].name;
			const char *o_text = override_text(ov, tab->name, column);
			const struct state_description *d = cached_item(&cached, tab->name, column);
			rc = push_result_item(&out, tables[i], c, o_text ? o_text : d->text,
					      o_text ? describe_source_override : source_of(d));
			out.cache_hits += c < 0;
		}
	}
	if (rc == 0) {
		fresh.n_errors = 0; /* moved to out */
		fresh.errors = NULL;
		describe_result_release(&fresh);
		*ret = out;
	} else {
		describe_result_release(&fresh);
		describe_result_release(&out);
		if (rc == -T2S_ERR_NOMEM)
			t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	free(todo);
	if (have_cache)
		state_descriptions_release(&cached);
	return rc;
}

void handle_describe(struct http_request *req, struct http_response *res)
{
	static const char *const fields[] = {"database", "tables", NULL};
	struct app *app = req->app;
	struct t2s_error err = {0};
	json_t *body = NULL;
	const char *database = NULL;
	struct catalog_db *db;
	struct schema *s = NULL;
	int *tables = NULL;
	size_t n_tables = 0;
	struct state_overrides ov = {0};
	struct describe_override *overrides = NULL;
	struct describe_result result;
	int rc = request_json_object(req, fields, &body, &err);
	if (rc == 0)
		rc = request_json_string(body, "database", true, &database, &err);
	if (rc == 0)
		rc = request_database(req, database, &db, &err);
	if (rc == 0)
		rc = catalog_db_schema(db, &s, &err);
	if (rc == 0)
		rc = requested_tables(s, body, &tables, &n_tables, &err);
	if (rc == 0 && app->state)
		rc = state_store_overrides_list(app->state, db->cfg->name, &ov, &err);
	if (rc == 0 && ov.n && !(overrides = calloc(ov.n, sizeof(*overrides))))
		rc = t2s_error_set(&err, T2S_ERR_NOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < ov.n; i++)
		overrides[i] = (struct describe_override){ov.items[i].table, ov.items[i].column, ov.items[i].text};
	struct describe_options o = {.model = app_model(app, MODEL_STAGE_DESCRIBE), .cache = app->cache,
				     .overrides = overrides, .n_overrides = ov.n};
	if (rc == 0)
		rc = describe_with_store(req, s, tables, n_tables, &o, &ov, &result, &err);
	if (rc == 0) {
		persist(req, s, &result);
		json_t *out = describe_json(s, &result);
		json_object_set_new(out, "database", json_string(db->cfg->name));
		if (!app->state)
			json_object_set_new(out, "warning", json_string("state store unavailable: overrides not applied"));
		http_reply_json(res, 200, out);
		describe_result_release(&result);
	} else {
		http_reply_error(res, req, &err);
	}
	free(overrides);
	if (ov.n || ov.items)
		state_overrides_release(&ov);
	free(tables);
	schema_unref(s);
	json_decref(body);
}
