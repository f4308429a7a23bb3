/*
 * schema_view.h - the part of the schema the generator is shown, as it
 * grows during correction.
 *
 * Built from the linking result (its tables, columns and scaffold joins)
 * with the key columns of those tables (primary keys, foreign keys between
 * tables shown, join endpoints: marked key, never trimmed) and the columns
 * that hold the question's values (marked keep).  During correction it only grows:
 *   widen   a name the database did not know brings the nearest real
 *           tables or columns (edit distance on lower-cased names, and
 *           containment);
 *   replan  the tables a statement uses become the terminals of a new
 *           Steiner tree on the schema graph, whose joins replace the
 *           scaffold and whose bridge tables join the view.
 */
#ifndef T2S_GENERATE_SCHEMA_VIEW_H
#define T2S_GENERATE_SCHEMA_VIEW_H

#include "common/contract.h"
#include "common/error.h"
#include "pipeline/evidence/evidence.h"
#include "pipeline/generate/prompt.h"
#include "pipeline/link/link.h"

#include <stdbool.h>

struct schema_view {
	const struct schema *schema;
	const struct column_index *index;
	struct prompt_table *tables;
	size_t n_tables, cap_tables;
	struct prompt_column *columns;
	size_t n_columns, cap_columns;
	struct prompt_join *joins;
	size_t n_joins;
	bool *in_view; /* per schema table */
};

/* The view of a linking result plus the evidence values' columns.  0 or -T2S_ERR_NOMEM. */
T2S_MUST_CHECK
int schema_view_init(struct schema_view *v, const struct link_result *link, const struct evidence_result *ev);
void schema_view_release(struct schema_view *v);

/* Add table t with its key columns (no-op when present). */
T2S_MUST_CHECK
int schema_view_add_table(struct schema_view *v, int t);
/* Add column c of t (and t); an existing entry only gains the key/keep marks. */
T2S_MUST_CHECK
int schema_view_add_column(struct schema_view *v, int t, int c, double score, bool key, bool keep);

/*
 * Add the real names nearest to name (a table when is_table, else a column)
 * to the view; *ret_added (malloc'd, caller frees; NULL when nothing was
 * added) lists them as "table" or "table.column" for the debug model.
 */
T2S_MUST_CHECK
int schema_view_widen(struct schema_view *v, const char *name, bool is_table, char **ret_added);

/*
 * Re-plan the scaffold with tables[0..n) as terminals.  *ret_changed tells
 * whether the joins changed.  0, -T2S_ERR_NOMEM or the Steiner errors.
 */
T2S_MUST_CHECK
int schema_view_replan(struct schema_view *v, const int *tables, size_t n, bool *ret_changed, struct t2s_error *err);

#endif
