/*
 * reload.c - SIGHUP's config reload (see reload.h): the new file's document
 * with every part that needs a restart put back as it is in force, loaded
 * and validated as a whole, then handed to the HTTP server.
 */
#include "server/reload.h"

#include "server/app.h"
#include "server/log.h"

#include <stdlib.h>
#include <string.h>

/* The sections a reload may change as a whole; in "listen" and "limits", only the keys below. */
static const char *const reloadable_sections[] = {"auth", NULL};
static const char *const reloadable_listen[] = {"trusted_proxies", NULL};
static const char *const reloadable_limits[] = {"request_body_timeout_ms", "drain_delay_ms", "drain_timeout_ms",
						"key_rate_per_s", "key_burst", "key_max_concurrent",
						"key_max_timeout_ms", "max_list_page_bytes", "mcp_max_sessions",
						"mcp_session_idle_s", NULL};

static bool listed(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (strcmp(*list, name) == 0)
			return true;
	return false;
}

static bool same(const json_t *a, const json_t *b)
{
	return (!a && !b) || (a && b && json_equal((json_t *)a, (json_t *)b));
}

/* Set obj[key] to a copy of value, or remove it when value is NULL. */
static void put(json_t *obj, const char *key, const json_t *value)
{
	if (value)
		json_object_set_new(obj, key, json_deep_copy(value));
	else
		json_object_del(obj, key);
}

/* An object (new reference) with a key for every key of a and of b (objects). */
static json_t *key_union(const json_t *a, const json_t *b)
{
	json_t *names = json_object();
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)a, k, v)
		json_object_set_new(names, k, json_true());
	json_object_foreach((json_t *)b, k, v)
		json_object_set_new(names, k, json_true());
	return names;
}

/*
 * In section (an object of both documents, NULL when absent), put back every
 * key not in reloadable that differs from old, naming it in refused; name
 * the reloadable keys that differ in changed.
 */
static void merge_keys(json_t *merged, const json_t *old, const char *section, const char *const *reloadable,
		       json_t *refused, json_t *changed)
{
	const json_t *o = json_object_get(old, section);
	json_t *m = json_object_get(merged, section);
	if (!json_is_object(o) || !json_is_object(m)) {
		if (!same(o, m)) { /* a section appeared, vanished or is not an object: keep the old one */
			json_array_append_new(refused, json_string(section));
			put(merged, section, o);
		}
		return;
	}
	json_t *names = key_union(o, m);
	const char *k;
	json_t *v;
	json_object_foreach(names, k, v) {
		const json_t *ov = json_object_get(o, k);
		if (same(ov, json_object_get(m, k)))
			continue;
		json_t *name = json_sprintf("%s.%s", section, k);
		if (listed(reloadable, k)) {
			json_array_append_new(changed, name);
		} else {
			json_array_append_new(refused, name);
			put(m, k, ov);
		}
	}
	json_decref(names);
}

static const char *entry_name(const json_t *entry)
{
	const char *name = json_string_value(json_object_get(entry, "name"));
	return name ? name : "";
}

static const json_t *entry_named(const json_t *arr, const char *name)
{
	size_t i;
	json_t *e;
	json_array_foreach((json_t *)arr, i, e)
		if (strcmp(entry_name(e), name) == 0)
			return e;
	return NULL;
}

/*
 * "databases": entries come and go by name (changed names them "added" or
 * "removed"); an entry whose name stays but whose settings differ is put
 * back as it was (refused: a database never changes in place).
 */
static void merge_databases(json_t *merged, const json_t *old, json_t *refused, json_t *changed)
{
	const json_t *o = json_object_get(old, "databases");
	json_t *m = json_object_get(merged, "databases");
	if (!json_is_array(o) || !json_is_array(m)) {
		if (!same(o, m)) {
			json_array_append_new(refused, json_string("databases"));
			put(merged, "databases", o);
		}
		return;
	}
	size_t i;
	json_t *e;
	json_array_foreach(m, i, e) {
		const json_t *was = entry_named(o, entry_name(e));
		if (!was) {
			json_array_append_new(changed, json_sprintf("databases.%s (added)", entry_name(e)));
		} else if (!json_equal(e, (json_t *)was)) {
			json_array_append_new(refused, json_sprintf("databases.%s", entry_name(e)));
			json_array_set_new(m, i, json_deep_copy(was));
		}
	}
	json_array_foreach((json_t *)o, i, e)
		if (!entry_named(m, entry_name(e)))
			json_array_append_new(changed, json_sprintf("databases.%s (removed)", entry_name(e)));
}

/* A copy of doc with every part that needs a restart as in old; refused and changed name the parts. */
static json_t *merge(const json_t *doc, const json_t *old, json_t *refused, json_t *changed)
{
	json_t *merged = json_deep_copy(doc);
	if (!merged)
		return NULL;
	json_t *names = key_union(old, merged);
	const char *k;
	json_t *v;
	json_object_foreach(names, k, v) {
		if (strcmp(k, "listen") == 0) {
			merge_keys(merged, old, k, reloadable_listen, refused, changed);
		} else if (strcmp(k, "limits") == 0) {
			merge_keys(merged, old, k, reloadable_limits, refused, changed);
		} else if (strcmp(k, "databases") == 0) {
			merge_databases(merged, old, refused, changed);
		} else if (!same(json_object_get(old, k), json_object_get(merged, k))) {
			bool ok = listed(reloadable_sections, k);
			json_array_append_new(ok ? changed : refused, json_string(k));
			if (!ok)
				put(merged, k, json_object_get(old, k));
		}
	}
	json_decref(names);
	return merged;
}

/* Append cfg (malloc'd, now owned by st) to st->cfgs. */
static int keep(struct reload_state *st, struct config *cfg)
{
	struct config **grown = realloc(st->cfgs, (st->n + 1) * sizeof(*grown));
	if (!grown)
		return -T2S_ERR_NOMEM;
	st->cfgs = grown;
	st->cfgs[st->n++] = cfg;
	return 0;
}

int reload_state_init(struct reload_state *st, const char *path, const struct config **ret_cfg,
		      struct t2s_error *err)
{
	*st = (struct reload_state){.path = path};
	struct config *cfg = malloc(sizeof(*cfg));
	if (!cfg)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	int rc = config_load_file(path, cfg, err);
	if (rc < 0) {
		free(cfg);
		return rc;
	}
	json_error_t jerr;
	st->doc = json_load_file(path, 0, &jerr);
	if (!st->doc || keep(st, cfg) < 0) {
		config_release(cfg);
		free(cfg);
		return t2s_error_set(err, T2S_ERR_INVALID, "config %s: changed while being read", path);
	}
	*ret_cfg = cfg;
	return 0;
}

/* Load the merged document as a config and validate it; the new config (malloc'd) or NULL with err. */
static struct config *load_merged(const struct reload_state *st, const json_t *merged, struct t2s_error *err)
{
	char *text = json_dumps(merged, JSON_COMPACT);
	struct config *cfg = malloc(sizeof(*cfg));
	int rc = text && cfg ? config_load_string(text, st->path, cfg, err)
			     : t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	free(text);
	if (rc == 0 && app_check_config(cfg, err) < 0) {
		config_release(cfg);
		rc = -1;
	}
	if (rc < 0) {
		free(cfg);
		return NULL;
	}
	return cfg;
}

/*
 * Serve cfg's databases (catalog_update) and prepare the indexes of the new
 * ones; *added and *removed count names.  0 or -T2S_ERR_NOMEM (nothing changed).
 */
static int update_databases(struct pipeline *p, const struct config *cfg, size_t *added, size_t *removed,
			    struct t2s_error *err)
{
	const struct catalog_list *old = catalog_list(&p->catalog);
	int rc = catalog_update(&p->catalog, cfg, err);
	if (rc < 0)
		return rc;
	const struct catalog_list *now = catalog_list(&p->catalog);
	*added = 0;
	for (size_t i = 0; i < now->n; i++) {
		bool was = false;
		for (size_t j = 0; j < old->n && !was; j++)
			was = old->dbs[j] == now->dbs[i];
		if (!was) {
			pipeline_prepare_database(p, now->dbs[i]);
			++*added;
		}
	}
	*removed = old->n + *added - now->n;
	return 0;
}

/*
 * Put cfg in force: the databases, then the keys and limits.  0; > 0 when
 * the databases were updated but not the rest (no memory; cfg is kept by
 * st then); < 0 when nothing changed (the caller frees cfg).
 */
static int put_in_force(struct reload_state *st, struct app *app, struct http_server *srv, struct config *cfg,
			size_t *added, size_t *removed, struct t2s_error *err)
{
	if (keep(st, cfg) < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	int rc = update_databases(&app->pipeline, cfg, added, removed, err);
	if (rc < 0) {
		st->n--; /* kept but never in force: nothing points into it */
		return rc;
	}
	return http_server_apply_config(srv, cfg, err) < 0 ? 1 : 0;
}

void reload_config(struct reload_state *st, struct app *app, struct http_server *srv)
{
	struct t2s_error err = {0};
	json_error_t jerr;
	json_t *doc = json_load_file(st->path, 0, &jerr);
	if (!doc) {
		log_json(LOG_ERROR, "reload refused: the config does not parse; the one in force is kept",
			 json_pack("{s:s, s:s, s:i}", "path", st->path, "error", jerr.text, "line", jerr.line));
		return;
	}
	json_t *refused = json_array(), *changed = json_array();
	json_t *merged = merge(doc, st->doc, refused, changed);
	json_decref(doc);
	struct config *cfg = merged ? load_merged(st, merged, &err) : NULL;
	if (!merged)
		t2s_error_set(&err, T2S_ERR_NOMEM, "out of memory");
	size_t added = 0, removed = 0;
	int rc = cfg ? put_in_force(st, app, srv, cfg, &added, &removed, &err) : -1;
	if (rc == 0) {
		json_decref(st->doc);
		st->doc = merged;
		log_json(LOG_INFO, "config reloaded",
			 json_pack("{s:s, s:o, s:o, s:s, s:I, s:I}", "path", st->path, "reloaded", changed, "refused",
				   refused, "refused_because", "needs a restart", "databases_added", (json_int_t)added,
				   "databases_removed", (json_int_t)removed));
		char drain_warning[512];
		if (app_drain_shorter_than_budget(cfg, drain_warning, sizeof(drain_warning)))
			log_json(LOG_WARN, "drain shorter than the longest request",
				 json_pack("{s:s}", "detail", drain_warning));
		return;
	}
	if (rc > 0) {
		log_json(LOG_ERROR, "reload: the databases were updated, the keys and limits were not",
			 json_pack("{s:s}", "error", err.message));
	} else {
		if (cfg) {
			config_release(cfg);
			free(cfg);
		}
		log_json(LOG_ERROR, "reload refused: the config is not valid; the one in force is kept",
			 json_pack("{s:s, s:s}", "path", st->path, "error", err.message));
	}
	json_decref(refused);
	json_decref(changed);
	json_decref(merged);
}

void reload_state_release(struct reload_state *st)
{
	for (size_t i = 0; i < st->n; i++) {
		config_release(st->cfgs[i]);
		free(st->cfgs[i]);
	}
	free(st->cfgs);
	json_decref(st->doc);
	*st = (struct reload_state){0};
}
