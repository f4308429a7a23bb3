/* TEMPORARY local placeholder while the analyser is written on branch analyze; never committed. */
#include "pipeline/sql/sql_analyze.h"
#include <string.h>
int sql_analyze(const char *sql, enum sql_dialect dialect, struct sql_analysis *ret, struct t2s_error *err)
{
	(void)sql; (void)dialect; (void)ret;
	return t2s_error_set(err, T2S_ERR_SQL_INVALID, "analyser not built yet");
}
void sql_analysis_release(struct sql_analysis *a) { if (a) memset(a, 0, sizeof(*a)); }
