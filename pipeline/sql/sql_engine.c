/*
 * sql_engine.c - the execution half of each engine, found by its
 * pipeline/db/ half (see sql_engine.h).  A new engine adds its table here.
 */
#include "pipeline/sql/sql_engine.h"

#include <stddef.h>

static const struct sql_engine *const engines[] = {&sql_engine_sqlite, &sql_engine_pg, &sql_engine_mysql};

const struct sql_engine *sql_engine_of(const struct db_engine *e)
{
	for (size_t i = 0; i < sizeof(engines) / sizeof(*engines); i++)
		if (engines[i]->db == e)
			return engines[i];
	return NULL;
}
