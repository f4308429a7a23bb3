/*
 * config_auth.c - the parts of the auth section that say who a caller is
 * beyond an API key, and how little it may see: auth.jwt (bearer JWTs
 * checked against a JWKS file) and an API key's "tables" (see config.h).
 */
#include "config/config_internal.h"

#include <string.h>

int conf_read_jwt(struct reader *r, json_t *o)
{
	static const char *const keys[] = {"jwks_file", "issuer", "audience", "databases_claim", "scopes_claim",
					   "tables_claim", "leeway_s", NULL};
	struct config *c = r->cfg;
	struct config_jwt *j = &c->auth.jwt;
	if (!o)
		return 0;
	const char *file = NULL;
	j->databases_claim = "databases";
	j->scopes_claim = "scope";
	j->tables_claim = "tables";
	j->leeway_s = 60;
	int rc;
	if ((rc = conf_check_keys(r, o, "auth.jwt", keys)) < 0 ||
	    (rc = conf_get_string(r, o, "auth.jwt", "jwks_file", true, &file)) < 0 ||
	    (rc = conf_get_string(r, o, "auth.jwt", "issuer", true, &j->issuer)) < 0 ||
	    (rc = conf_get_string(r, o, "auth.jwt", "audience", true, &j->audience)) < 0 ||
	    (rc = conf_get_string(r, o, "auth.jwt", "databases_claim", false, &j->databases_claim)) < 0 ||
	    (rc = conf_get_string(r, o, "auth.jwt", "scopes_claim", false, &j->scopes_claim)) < 0 ||
	    (rc = conf_get_string(r, o, "auth.jwt", "tables_claim", false, &j->tables_claim)) < 0 ||
	    (rc = conf_get_long(r, o, "auth.jwt", "leeway_s", 0, 600, &j->leeway_s)) < 0)
		return rc;
	if (!*file || !*j->issuer || !*j->audience)
		return conf_bad(r, !*file ? "auth.jwt.jwks_file" : !*j->issuer ? "auth.jwt.issuer" : "auth.jwt.audience",
				"must not be empty");
	j->jwks_file = file[0] == '/' ? file : arena_printf(&c->arena, "%s/%s", r->config_dir, file);
	if (!j->jwks_file)
		return -T2S_ERR_NOMEM;
	if (c->auth.allow_anonymous_writes)
		return conf_bad(r, "auth.allow_anonymous_writes",
			        "applies only without auth.api_keys and auth.jwt: give callers the \"admin\" scope instead");
	j->present = true;
	c->auth.enabled = true;
	return 0;
}

/* May key k use the database called name (its "databases")? */
static bool key_has_database(const struct config_api_key *k, const char *name)
{
	for (size_t i = 0; i < k->n_databases; i++)
		if (strcmp(k->databases[i], name) == 0)
			return true;
	return k->all_databases;
}

int conf_read_key_tables(struct reader *r, json_t *o, const char *path, struct config_api_key *k)
{
	json_t *t = json_object_get(o, "tables");
	if (!t)
		return 0;
	const char *tp = conf_join_path(r, path, "tables");
	if (!json_is_object(t) || json_object_size(t) == 0)
		return conf_bad(r, tp, "must be an object of database names, each with an array of table names");
	struct config_table_grant *g = arena_calloc(&r->cfg->arena, json_object_size(t), sizeof(*g));
	if (!g)
		return -T2S_ERR_NOMEM;
	size_t n = 0;
	const char *db;
	json_t *list;
	json_object_foreach(t, db, list) {
		const char *dp = conf_join_path(r, tp, db);
		if (!config_database_find(r->cfg, db) || !key_has_database(k, db))
			return conf_bad(r, dp, "names a database that is not configured or not among the key's databases");
		if (!json_is_array(list))
			return conf_bad(r, dp, "must be an array of table names (an empty one: no table)");
		g[n].database = arena_strdup(&r->cfg->arena, db);
		if (!g[n].database)
			return -T2S_ERR_NOMEM;
		if (json_array_size(list) > 0) {
			int rc = conf_get_string_array(r, list, dp, &g[n].tables, &g[n].n_tables);
			if (rc < 0)
				return rc;
		}
		n++;
	}
	k->table_grants = g;
	k->n_table_grants = n;
	return 0;
}
