/*
 * builtin_shape.c - the shape phase, the last of a reading (see
 * builtin_reader.h): which SQL form the read cues make (count, list,
 * aggregate, superlative, group, most, having), the combinations refused,
 * and the answer's confidence.
 */
#include "pipeline/builtin/builtin_reader.h"

#include <string.h>

/* The table's one primary-key column, or -1. */
static int one_key(const struct schema_table *t)
{
	if (t->n_primary_key != 1)
		return -1;
	for (size_t c = 0; c < t->n_columns; c++)
		if (t->columns[c].primary_key)
			return (int)c;
	return -1;
}

static enum bi_verdict decide_shape(struct reader *rd)
{
	struct bi_query *q = rd->q;
	for (size_t k = 0; k < q->n_filters && q->n_filters > 1; k++)
		if (q->filters[k].average)
			return bi_refuse(rd, "average_shape", "an average beside other conditions: over which rows is not said");
	for (size_t k = 0; k < q->n_filters; k++)
		for (size_t c = 0; c < q->n_select; c++)
			if (q->filters[k].text && !q->filters[k].or_text && strcmp(q->filters[k].op, "=") == 0 &&
			    q->select[c].table == q->filters[k].col.table && q->select[c].column == q->filters[k].col.column)
				return bi_refuse(rd, "select_filtered", "a column shown is the one its value picks: another "
									"row is meant");
	/* "the industries in descending order of the number of companies": the groups of the one column shown,
	   by their sizes (with their count shown, or not) */
	if (q->order_count && !q->grouped && !q->most && !q->having && q->agg == BI_NONE && q->n_select == 1) {
		q->most = true;
		q->limit = 0;
	}
	if (q->order_count && !(q->most || (q->grouped && q->agg == BI_COUNT) || q->count_listed))
		return bi_refuse(rd, "unread_order", "an ordering by a count of groups the built-in does not read");
	if (q->star && (q->n_select > 0 || q->agg != BI_NONE || q->grouped))
		return bi_refuse(rd, "star_shape", "all information beside other things asked");
	if (q->bridge >= 0 && !q->per_row && (q->having || q->most || q->grouped))
		return bi_refuse(rd, "count_over_join", "groups counted over a bridge table: which rows count is not said");
	if (q->having || q->most) {
		/* groups by their row count: of the one column shown, or the one named after "each" */
		const char *code = q->having ? "having_shape" : "most_shape";
		if (q->per_row) {
			/* rows of the main table by how many rows of the joined table refer to each */
			if (q->agg != BI_NONE || q->grouped || q->n_select == 0 || (q->most && (q->having || q->ordered)))
				return bi_refuse(rd, code, "a count of joined rows the built-in does not read");
			for (size_t k = 0; k < q->n_select; k++)
				if (q->select[k].table != q->table)
					return bi_refuse(rd, code, "a column of the counted table beside its count");
			q->shape = q->having ? "having" : "most";
			q->confidence = 0.8 * 0.9;
			return 0;
		}
		if (q->agg != BI_NONE || (q->having && (q->most || q->ordered || q->limit || q->n_filters)))
			return bi_refuse(rd, code, "a count of groups beside other conditions");
		if (q->grouped ? q->n_select > 0 : q->n_select != 1)
			return bi_refuse(rd, code, "a count of groups the built-in does not read");
		if (!q->grouped) {
			/* "rooms reserved more than 60 times": not the rows of one room name, another table's */
			if (rd->s->tables[q->select[0].table].columns[q->select[0].column].key ||
			    (q->having_times && q->select[0].column == bi_naming_column(&rd->s->tables[q->select[0].table])))
				return bi_refuse(rd, code, "which column's groups are counted is not said");
			q->grouped = true;
			q->group = q->select[0];
			q->n_select = 0;
		}
		q->shape = q->having ? "having" : "most";
		q->confidence = 0.8;
		return 0;
	}
	if (q->star) {
		q->shape = "list";
		q->confidence = 0.85;
		return 0;
	}
	/* "the type and the number of <table>": the count per value of the one column shown, or per row of
	   the main table when the joined table's rows are counted */
	if (q->agg == BI_COUNT && q->count_listed && q->counted_table >= 0 && !q->grouped && q->n_select > 0 &&
	    !q->ordered && !q->limit && !q->distinct) {
		bool main_only = true;
		for (size_t k = 0; k < q->n_select; k++)
			main_only &= q->select[k].table == q->table;
		const struct schema_column *c = &rd->s->tables[q->select[0].table].columns[q->select[0].column];
		if (q->join_table >= 0 && q->counted_table == q->join_table && q->join_from == q->join_table &&
		    main_only) {
			q->per_row = true;
			q->shape = "group";
			q->confidence = 0.85 * 0.9;
			return 0;
		}
		if (q->join_table < 0 && q->n_select == 1 && !c->key) {
			q->grouped = true;
			q->group = q->select[0];
			q->n_select = 0;
		}
	}
	/* "how many exhibitions has each artist had": the count per row of the table named after "each" */
	if (q->per_row && q->agg == BI_COUNT && !q->most && !q->having && !q->grouped && q->n_select == 1 &&
	    q->select[0].table == q->table && !q->ordered && !q->limit && !q->distinct) {
		q->shape = "group";
		q->confidence = 0.85 * 0.9;
		return 0;
	}
	/* "each state and the number of addresses in each state": the group's column shown */
	if (q->grouped && q->n_select == 1 && q->select[0].table == q->group.table &&
	    q->select[0].column == q->group.column)
		q->n_select = 0;
	if (q->grouped) {
		if (q->agg == BI_NONE || q->n_select > 0 || q->ordered || q->limit)
			return bi_refuse(rd, "group_shape", "a per-group question the built-in does not read");
		q->shape = "group";
		q->confidence = 0.85;
	} else if (q->agg != BI_NONE) {
		if (q->n_select > 0 || q->ordered || q->distinct || q->limit)
			return bi_refuse(rd, "aggregate_shape", "an aggregate beside other columns");
		q->shape = q->agg == BI_COUNT || q->agg == BI_COUNT_DISTINCT ? "count" : "aggregate";
		q->confidence = 0.95;
	} else if (q->n_select == 0) {
		return bi_refuse(rd, "nothing_asked", "the question names no column to show");
	} else if (q->limit) {
		q->shape = "superlative";
		q->confidence = 0.85;
	} else {
		q->shape = "list";
		q->confidence = 0.9;
		q->distinct |= q->bridge >= 0; /* rows of one end met through several rows of the bridge: each once */
		/* "show all majors": the values of one plain column, each once */
		const struct schema_column *c = &rd->s->tables[q->select[0].table].columns[q->select[0].column];
		char nw[8][QUESTION_MAX_WORD];
		int n = bi_name_words(c->name, nw, 8);
		/* (not a name, nor a detail each row has its own: a phone, an email, a description) */
		bool own = n > 0 && bi_in_list(nw[n - 1], (const char *const[]){"name", "phone", "email", "fax", "detail",
										  "description", NULL});
		if (q->n_select == 1 && q->n_filters == 0 && !q->ordered && !c->key && !own)
			q->distinct = true;
	}
	/* "How many students have advisors?": the main table's rows the join repeats, each counted once (by its
	   one-column key) */
	int key = q->table >= 0 ? one_key(&rd->s->tables[q->table]) : -1;
	if (q->join_table >= 0 && q->agg == BI_COUNT && q->counted_table == q->table && key >= 0 &&
	    (q->counted_table != q->join_from || q->join_from < 0) && !q->grouped && !q->per_row) {
		q->agg = BI_COUNT_DISTINCT;
		q->agg_col = (struct bi_col){q->table, key};
		q->confidence *= 0.9;
	} else if (q->join_table >= 0 && (q->agg == BI_COUNT || q->agg == BI_COUNT_DISTINCT) &&
		   (q->counted_table != q->join_from || q->join_from < 0)) {
		return bi_refuse(rd, "count_over_join", "counting the table a join repeats: which rows count is not said");
	}
	if (q->join_table >= 0 && (q->agg == BI_AVG || q->agg == BI_SUM) && q->agg_col.table != q->join_from)
		return bi_refuse(rd, "count_over_join", "an average or total of the table a join repeats");
	if (q->join_table >= 0 || q->neg_table >= 0)
		q->confidence *= 0.9;
	if (q->bridge >= 0)
		q->confidence *= 0.9;
	for (int k = 0; k < q->n_verbs; k++)
		q->confidence *= 0.9;
	for (size_t i = 0; i < rd->r.n_mentions; i++)
		if (rd->r.mentions[i].synonym && !rd->r.mentions[i].dropped)
			q->confidence *= 0.9;
	return 0;
}

static const struct bi_rule RULES[] = {
	{"shape", decide_shape},
};

const struct bi_phase bi_shape_phase = {"shape", RULES, sizeof(RULES) / sizeof(RULES[0])};
