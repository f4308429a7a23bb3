/*
 * config_internal.h - what the files of the config loader share: the
 * reading context, the typed getters (config_get.c) and the reader of each
 * top-level section (config_service.c: the service's own settings;
 * config_stages.c: the pipeline stages' and the models').  Not included
 * from outside config/.
 *
 * Every getter leaves *out untouched when the key is absent, checks type
 * and range when present, and reports the full key path ("limits.
 * max_body_bytes: must be an integer between ...") with -T2S_ERR_INVALID;
 * -T2S_ERR_NOMEM when the arena is exhausted.
 */
#ifndef T2S_CONFIG_INTERNAL_H
#define T2S_CONFIG_INTERNAL_H

#include "common/contract.h"
#include "config/config.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Reading context: the arena that receives strings and the error sink. */
struct reader {
	struct config *cfg;
	struct t2s_error *err;
	const char *config_dir; /* directory of the config file, for relative sqlite paths */
};

/* -T2S_ERR_INVALID with "config <path>: <what>". */
int conf_bad(struct reader *r, const char *path, const char *what);
/* "parent.key" (or "key" at the top level), in the config's arena. */
char *conf_join_path(struct reader *r, const char *parent, const char *key);
/* Reject any key of obj not in allowed (NULL-terminated); obj must be an object. */
T2S_MUST_CHECK
int conf_check_keys(struct reader *r, json_t *obj, const char *path, const char *const *allowed);

T2S_MUST_CHECK
int conf_get_string(struct reader *r, json_t *obj, const char *path, const char *key, bool required,
		    const char **out);
T2S_MUST_CHECK
int conf_get_long(struct reader *r, json_t *obj, const char *path, const char *key, long min, long max, long *out);
T2S_MUST_CHECK
int conf_get_int(struct reader *r, json_t *obj, const char *path, const char *key, long min, long max, int *out);
T2S_MUST_CHECK
int conf_get_unsigned(struct reader *r, json_t *obj, const char *path, const char *key, long min, long max,
		      unsigned *out);
T2S_MUST_CHECK
int conf_get_size(struct reader *r, json_t *obj, const char *path, const char *key, long min, long max,
		  size_t *out);
T2S_MUST_CHECK
int conf_get_bool(struct reader *r, json_t *obj, const char *path, const char *key, bool *out);
/* A tri-state boolean: 0 or 1 when given, *out untouched (CONFIG_UNSET) when absent. */
T2S_MUST_CHECK
int conf_get_tristate(struct reader *r, json_t *obj, const char *path, const char *key, int *out);
T2S_MUST_CHECK
int conf_get_double(struct reader *r, json_t *obj, const char *path, const char *key, double min, double max,
		    double *out);
/* Array of non-empty strings into an arena array; *ret_n set. */
T2S_MUST_CHECK
int conf_get_string_array(struct reader *r, json_t *arr, const char *path, const char *const **ret, size_t *ret_n);

/* auth.jwt (config_auth.c); turns auth on. */
T2S_MUST_CHECK
int conf_read_jwt(struct reader *r, json_t *o);
/* path.tables of an API key o (config_auth.c): {"<database>": ["table", ...]}; absent: every table. */
T2S_MUST_CHECK
int conf_read_key_tables(struct reader *r, json_t *o, const char *path, struct config_api_key *k);

/* The sections of the service (config_service.c); catalog comes first: database entries inherit its pool_size. */
T2S_MUST_CHECK
int conf_read_listen(struct reader *r, json_t *o);
T2S_MUST_CHECK
int conf_read_limits(struct reader *r, json_t *o);
/* The limits derived from others when not set: limits.key_max_concurrent. */
void conf_limits_finish(struct config *c);
T2S_MUST_CHECK
int conf_read_execution(struct reader *r, json_t *o);
T2S_MUST_CHECK
int conf_read_catalog(struct reader *r, json_t *o);
T2S_MUST_CHECK
int conf_read_databases(struct reader *r, json_t *a);
T2S_MUST_CHECK
int conf_read_redis(struct reader *r, json_t *o);
T2S_MUST_CHECK
int conf_read_state(struct reader *r, json_t *o);
T2S_MUST_CHECK
int conf_read_cache(struct reader *r, json_t *o);
T2S_MUST_CHECK
int conf_read_auth(struct reader *r, json_t *o); /* after limits: keys inherit its rate */
T2S_MUST_CHECK
int conf_read_cors(struct reader *r, json_t *o);
T2S_MUST_CHECK
int conf_read_log(struct reader *r, json_t *o);

/* The sections of the stages and models (config_stages.c). */
T2S_MUST_CHECK
int conf_read_values(struct reader *r, json_t *o);
T2S_MUST_CHECK
int conf_read_evidence(struct reader *r, json_t *o);
T2S_MUST_CHECK
int conf_read_link(struct reader *r, json_t *o);
T2S_MUST_CHECK
int conf_read_generate(struct reader *r, json_t *o);
T2S_MUST_CHECK
int conf_read_models(struct reader *r, json_t *o);

#endif
