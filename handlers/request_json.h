/*
 * request_json.h - reading JSON request bodies strictly: the body must be
 * an object, unknown fields are refused by name, and each field is read with
 * a typed getter whose error names the field.  Every error is
 * -T2S_ERR_INVALID with a message fit for a 400 problem body.
 */
#ifndef T2S_REQUEST_JSON_H
#define T2S_REQUEST_JSON_H

#include "common/contract.h"
#include "server/http.h"

#include <jansson.h>
#include <stdbool.h>

/* Parse req's body; *ret is a new reference the caller decrefs. allowed is NULL-terminated. */
T2S_MUST_CHECK
int request_json_object(struct http_request *req, const char *const *allowed, json_t **ret, struct t2s_error *err);

/*
 * obj must be an object holding only fields named in allowed (NULL-terminated);
 * path names obj in messages ("options", "history[2]"; NULL for the body).
 */
T2S_MUST_CHECK
int request_json_fields(json_t *obj, const char *path, const char *const *allowed, struct t2s_error *err);

/* String field; *ret borrowed from obj.  Missing and not required leaves *ret untouched. */
T2S_MUST_CHECK
int request_json_string(json_t *obj, const char *key, bool required, const char **ret, struct t2s_error *err);

/* request_json_string for text a user types (a question, evidence): at most T2S_QUESTION_MAX_BYTES. */
T2S_MUST_CHECK
int request_json_text(json_t *obj, const char *key, bool required, const char **ret, struct t2s_error *err);

/* Integer field within [min, max]; missing leaves *ret untouched. */
T2S_MUST_CHECK
int request_json_int(json_t *obj, const char *key, long long min, long long max, long long *ret,
		     struct t2s_error *err);

/* Boolean field; missing or null leaves *ret untouched. */
T2S_MUST_CHECK
int request_json_bool(json_t *obj, const char *key, bool *ret, struct t2s_error *err);

/* A query-string argument (borrowed from libmicrohttpd), or NULL. */
const char *request_query_arg(struct http_request *req, const char *name);

/* A query-string argument as a long in [min, max], or dflt when absent; *ok cleared when malformed. */
long request_query_long(struct http_request *req, const char *name, long dflt, long min, long max, bool *ok);

/*
 * The registered database called name, if the caller's key may use it:
 * -T2S_ERR_NOT_FOUND otherwise (also for a database the key may not use:
 * it is answered like a missing one).
 */
T2S_MUST_CHECK
int request_database(struct http_request *req, const char *name, struct catalog_db **ret, struct t2s_error *err);

/*
 * The tables of db the caller may see (table-level access: its API key's or
 * JWT's "tables" for db; pipeline.h), in req's arena, for every pipeline
 * call on db that reads tables; NULL when it may see every table.  Out of
 * memory gives a grant of no table (never every table).
 */
const struct schema_grant *request_grant(struct http_request *req, const struct catalog_db *db);

#endif
