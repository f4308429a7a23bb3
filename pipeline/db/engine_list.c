/*
 * engine_list.c - the engines this build knows (engine.h), found by the URL
 * of a database.  A new engine adds its table here.
 */
#include "pipeline/db/engine.h"

#include <string.h>

static const struct db_engine *const engines[] = {&db_engine_sqlite, &db_engine_pg, &db_engine_mysql};

const struct db_engine *db_engine_for_url(const char *url)
{
	for (size_t i = 0; url && i < sizeof(engines) / sizeof(*engines); i++)
		for (const char *const *p = engines[i]->url_prefixes; *p; p++)
			if (strncmp(url, *p, strlen(*p)) == 0)
				return engines[i];
	return NULL;
}
