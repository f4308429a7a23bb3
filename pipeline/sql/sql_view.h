/*
 * sql_view.h - does a statement read only the tables of a caller's view
 * (schema_grant.h)?  For stored examples: one that reads another table is
 * not shown to, nor reused for, a caller limited to some tables.
 */
#ifndef T2S_SQL_VIEW_H
#define T2S_SQL_VIEW_H

#include "pipeline/db/schema_grant.h"

#include <stdbool.h>

/*
 * True when s is not a view, or when every base table sql reads (FROM and
 * JOIN of every block, subqueries and CTE bodies; CTE names are not tables)
 * is one of s's tables.  A statement that does not parse is false.
 */
bool sql_reads_only_view(const struct schema *s, const char *sql);

#endif
