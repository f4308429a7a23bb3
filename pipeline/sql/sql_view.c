/*
 * sql_view.c - the tables a statement reads, against a caller's view (see
 * sql_view.h), from the statement's analysis (sql_analyze.h).
 */
#include "pipeline/sql/sql_view.h"

#include "pipeline/sql/sql_engine.h"

bool sql_reads_only_view(const struct schema *s, const char *sql)
{
	if (!schema_is_view(s))
		return true;
	struct sql_analysis a;
	if (!sql || sql_analyze(sql, sql_engine_of(s->engine)->dialect, &a, NULL) < 0)
		return false;
	bool ok = true;
	for (size_t i = 0; ok && i < a.n_tables; i++) {
		const struct sql_table_ref *t = &a.tables[i];
		if (!t->is_cte && !t->is_derived)
			ok = t->name && schema_view_allows(s, t->schema, t->name);
	}
	sql_analysis_release(&a);
	return ok;
}
