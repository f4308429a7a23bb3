/*
 * builtin_rows.c - rows counted per row of another table (see builtin.h),
 * the helpers the cues and conditions call: the rows a count of groups
 * counts ("the artist with the most albums", "customers with at least 2
 * orders": the joined table's rows per row of the main table, through a
 * foreign key or a bridge), a column of another table keeping that count
 * already (number_of_hosts), the main table's column naming another table
 * ("for each grape"), and "how many exhibitions has each artist had" read
 * per row of the table after "each".
 */
#include "pipeline/builtin/builtin_reader.h"

#include <string.h>

bool bi_stored_count(const struct reader *rd, int t)
{
	static const char *const COUNT_WORDS[] = {"number", "no", "num", "count", "total", NULL};
	char tw[8][QUESTION_MAX_WORD], cw[8][QUESTION_MAX_WORD];
	int tn = bi_name_words(rd->s->tables[t].name, tw, 8);
	/* a number column of t named as t is ("faculty" of the faculty table: how many staff a year) */
	const struct schema_table *own = &rd->s->tables[t];
	for (size_t c = 0; c < own->n_columns && tn > 0; c++) {
		int n = bi_name_words(own->columns[c].name, cw, 8);
		bool same = n == tn && schema_column_is_number(&own->columns[c]) && !own->columns[c].key;
		for (int k = 0; k < n && same; k++)
			same = strcmp(cw[k], tw[k]) == 0;
		if (same)
			return true;
	}
	for (size_t u = 0; u < rd->s->n_tables && tn > 0; u++) {
		const struct schema_table *other = &rd->s->tables[u];
		for (size_t c = 0; c < other->n_columns && (int)u != t; c++) {
			int n = bi_name_words(other->columns[c].name, cw, 8);
			bool names_t = false, counts = false; /* a count word, then t's name ("invoice_number" is not) */
			for (int k = 0; k < n; k++) {
				names_t |= counts && strcmp(cw[k], tw[tn - 1]) == 0;
				counts |= bi_in_list(cw[k], COUNT_WORDS);
			}
			if (names_t && counts && schema_column_is_number(&other->columns[c]))
				return true;
		}
	}
	return false;
}

bool bi_counted_rows(struct reader *rd, const struct bi_mention *m)
{
	struct bi_query *q = rd->q;
	if (!m || m->col.table != -1)
		return false;
	if (bi_stored_count(rd, m->col.column))
		return false; /* "the party with the most hosts" and a column number_of_hosts: which is meant? */
	if (m->col.column == q->table && q->join_table < 0)
		return true;
	if (q->bridge >= 0 && m->col.column == q->join_table && q->links[0].from == q->bridge) {
		/* "the activity with the most students": rows of the bridge referring to each main row */
		q->per_row = true;
		return true;
	}
	if (q->join_table < 0 || m->col.column != q->join_table || q->join_from != q->join_table)
		return false;
	q->per_row = true;
	return true;
}

/* Of a mention naming another table than the main one: the one candidate column of the main table
   (its key to that table, or a column spelling its name); table -1 when none or two. */
struct bi_col bi_main_column_named(const struct reader *rd, const struct bi_mention *m)
{
	struct bi_col one = {-1, -1};
	int n = 0;
	if (m->col.table != -1 || m->used || m->col.column == rd->q->table)
		return one; /* "for every company" of company: every row */
	for (int k = 0; k < m->n_cands; k++)
		if (m->cands[k].table == rd->q->table) {
			one = m->cands[k];
			n++;
		}
	return n == 1 ? one : (struct bi_col){-1, -1};
}

/*
 * "How many exhibitions has each artist had?": the counted (main) table refers to the table named after
 * "each", joined already: the count per row of that table, shown by its naming column.  The reading
 * turns round (that table main, the counted one joined); true when so read.
 */
bool bi_per_row_of_each(struct reader *rd, size_t j)
{
	struct bi_query *q = rd->q;
	int mi = rd->r.mention_at[j];
	if (mi < 0 || rd->r.mentions[mi].col.table != -1 || rd->r.mentions[mi].used || q->agg != BI_COUNT ||
	    q->count_listed || q->counted_table != q->table || q->join_table < 0 || q->bridge >= 0 ||
	    q->join_from != q->table || rd->r.mentions[mi].col.column != q->join_table || q->n_filters > 0)
		return false;
	/* a key of text (dept_code) names the groups itself: grouped by it (read_group) */
	const struct schema_foreign_key *fk = &rd->s->tables[q->table].foreign_keys[q->join_fk];
	const struct schema_table *main = &rd->s->tables[q->table];
	for (size_t c = 0; c < main->n_columns; c++)
		if (fk->n_columns == 1 && strcmp(main->columns[c].name, fk->columns[0]) == 0 &&
		    !schema_column_is_number(&main->columns[c]))
			return false;
	int t = q->join_table, name = bi_naming_column(&rd->s->tables[t]);
	if (name < 0)
		return false;
	q->join_table = q->table;
	q->table = t;
	q->per_row = true;
	q->select[q->n_select++] = (struct bi_col){t, name};
	rd->r.mentions[mi].used = true;
	bi_mark(rd, j, (size_t)rd->r.mentions[mi].len);
	return true;
}
