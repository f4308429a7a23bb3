/*
 * config_names.c - the names and look-ups of a loaded configuration (see
 * config.h): a model stage's and an API scope's name, a database entry by
 * name.  The bottom of config/: the section readers (config_service.c,
 * config_stages.c) and the rest of the service call these; they call
 * nothing else of config/.
 */
#include "config/config.h"

#include <string.h>

static const char *const stage_names[MODEL_STAGE_COUNT] = {
	"embed", "link", "describe", "evidence", "generate", "debug",
};

const char *model_stage_name(enum model_stage stage)
{
	return stage < MODEL_STAGE_COUNT ? stage_names[stage] : "unknown";
}

const char *api_scope_name(unsigned scope)
{
	return scope == API_SCOPE_QUERY ? "query" : scope == API_SCOPE_ADMIN ? "admin" : NULL;
}

const struct config_database *config_database_find(const struct config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_databases; i++)
		if (strcmp(cfg->databases[i].name, name) == 0)
			return &cfg->databases[i];
	return NULL;
}
