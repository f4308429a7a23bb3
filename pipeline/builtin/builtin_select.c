/*
 * builtin_select.c - the select-list phase of a reading (see
 * builtin_reader.h): "all information" as `*`, "different" before a column
 * (or before a table's name and its column: "the different goods colours")
 * as DISTINCT, "of all different <table>" as DISTINCT rows, then each name
 * left, in the question's order, shown: a table's name reads as the FROM
 * (or as its naming column: "what campuses opened"), a column named after
 * "with" / "whose" states a condition no rule read (refused), a column named
 * twice is another thing (refused, unless said again in a later sentence).
 * Then the orderings that need the select list (builtin_order.c): a
 * direction naming no column, an ordering verb away from its ordering.
 */
#include "pipeline/builtin/builtin_reader.h"

#include <string.h>

static size_t phrase_len(const char *p)
{
	return question_phrase_words(p);
}

/*
 * Of mention m naming table T and a column: the one candidate column that is T's own and not a key
 * (campuses.campus); table -1 when none or two.  (A foreign key to T shows ids, not the things.)
 */
static struct bi_col naming_column(const struct reader *rd, const struct bi_mention *m)
{
	int t = m->col.column; /* the table it was resolved to */
	struct bi_col own = {-1, -1};
	int n_own = 0;
	for (int k = 0; k < m->n_cands; k++)
		if (m->cands[k].table == t && !rd->s->tables[t].columns[m->cands[k].column].key) {
			own = m->cands[k];
			n_own++;
		}
	return n_own == 1 ? own : (struct bi_col){-1, -1};
}

/* Is m's column named by an earlier mention ending before a full stop or question mark that comes
   before m? */
static bool said_before_a_sentence_end(const struct reader *rd, const struct bi_mention *m)
{
	for (size_t k = 0; k < rd->r.n_mentions; k++) {
		const struct bi_mention *e = &rd->r.mentions[k];
		if (e == m || e->dropped || e->start >= m->start || e->col.table != m->col.table ||
		    e->col.column != m->col.column)
			continue;
		size_t from = rd->r.ws.end[e->start + e->len - 1], to = rd->r.ws.at[m->start];
		for (size_t c = from; c < to; c++)
			if (rd->in->question[c] == '?' || rd->in->question[c] == '.')
				return true;
	}
	return false;
}

static enum bi_verdict read_select(struct reader *rd)
{
	static const char *const STAR[] = {"all information about", "all the information about", "all details about",
					   "all the details about", "all info about", "all the info about",
					   "all information", "all the information", "all details",
					   "all the details", "all info", "all the info", "all attributes", NULL};
	for (size_t i = 0; i < rd->r.ws.n; i++)
		for (const char *const *p = STAR; *p; p++)
			if (bi_at(rd, i, *p)) {
				rd->q->star = true;
				bi_mark(rd, i, phrase_len(*p));
			}
	for (size_t i = 0; i < rd->r.ws.n; i++) {
		if (rd->read[i] || !bi_distinct_word(rd->r.ws.w[i]))
			continue;
		size_t j = bi_next_word(rd, i + 1);
		struct bi_mention *m = bi_column_at(rd, j), *t = j < rd->r.ws.n && rd->r.mention_at[j] >= 0
								     ? &rd->r.mentions[rd->r.mention_at[j]] : NULL;
		bool table_next = t && t->start == (int)j && t->col.table == -1 && !t->dropped;
		/* "the different goods colours": the table's name, then its column */
		if (!m && table_next)
			m = bi_column_at(rd, (size_t)(t->start + t->len));
		if (m && m->col.table >= 0 && t && t->col.table == -1 && m->col.table != t->col.column)
			m = NULL;
		/* "the first names of the different drivers": the rows shown, each once */
		if (!m && table_next && i >= 2 &&
		    bi_in_list(rd->r.ws.w[i - 1], (const char *const[]){"the", "all", NULL}) &&
		    (strcmp(rd->r.ws.w[i - 2], "of") == 0 || (i >= 3 && strcmp(rd->r.ws.w[i - 2], "all") == 0 &&
							    strcmp(rd->r.ws.w[i - 3], "of") == 0))) {
			rd->q->distinct = true;
			bi_mark(rd, i, 1);
			continue;
		}
		if (!m)
			return bi_refuse(rd, "unread_distinct", "'%s' is not followed by a column's name", rd->r.ws.w[i]);
		rd->q->distinct = true;
		bi_mark(rd, i, 1);
	}
	static const char *const CONDITION[] = {"with", "has", "have", "having", "whose", "where", "had", NULL};
	for (size_t i = 0; i < rd->r.ws.n; i++) { /* in the question's order */
		int mi = rd->r.mention_at[i];
		struct bi_mention *m = mi >= 0 ? &rd->r.mentions[mi] : NULL;
		if (!m || m->start != (int)i || m->dropped)
			continue;
		bi_mark(rd, (size_t)m->start, (size_t)m->len);
		if (m->col.table < 0) {
			/* a table's name reads as the FROM, unless it may be a column too, or is listed */
			bool also_column = false;
			for (int k = 0; k < m->n_cands; k++)
				also_column |= m->cands[k].table == rd->q->table || m->cands[k].table == rd->q->join_table ||
					       m->cands[k].table == rd->q->bridge;
			static const char *const FROM[] = {"of", "for", "from", "in", "among", "by", "about", NULL};
			size_t b = (size_t)m->start;
			while (b > 0 && bi_in_list(rd->r.ws.w[b - 1], (const char *const[]){"the", "all", "a", "an", "each",
											 "every", "those", "these", NULL}))
				b--;
			if (also_column && rd->q->agg == BI_NONE && !(b > 0 && bi_in_list(rd->r.ws.w[b - 1], FROM))) {
				/* "what campuses opened", "the grapes of wines": the column that spells the table's
				   name, in the table itself or as a key referring to it */
				bool opening = true; /* "what campuses ...": only filler before it */
				for (size_t k = 0; k < (size_t)m->start && opening; k++)
					opening = bi_filler(rd, k);
				struct bi_col own = opening ? naming_column(rd, m) : (struct bi_col){-1, -1};
				if (own.table < 0)
					return bi_refuse(rd, "table_or_column", "'%s' names a table and a column of it",
						      rd->r.ws.w[m->start]);
				m->col = own;
				goto column;
			}
			size_t a = (size_t)m->start; /* "and their corresponding parties" */
			while (a > 0 && bi_in_list(rd->r.ws.w[a - 1], (const char *const[]){"their", "its", "corresponding",
											       "respective", "all", NULL}))
				a--;
			if (a > 0 && strcmp(rd->r.ws.w[a - 1], "and") == 0)
				return bi_refuse(rd, "table_listed", "a table's name among the things to show");
			/* "show all video games and their types": the things themselves, then a column */
			size_t z = (size_t)(m->start + m->len);
			if (z + 1 < rd->r.ws.n && strcmp(rd->r.ws.w[z], "and") == 0 &&
			    bi_in_list(rd->r.ws.w[z + 1], (const char *const[]){"their", "its", "the", NULL}) &&
			    b == 0 + (size_t)(b > 0 && bi_in_list(rd->r.ws.w[0], (const char *const[]){"show", "list", "find",
					    "display", "give", "return", "get", NULL})))
				return bi_refuse(rd, "table_listed", "a table's name among the things to show");
			continue;
		}
	column:
		if (m->used)
			continue;
		/* "the full name of the instructor" (a key referring to the shown columns' table): whose they are */
		const struct schema_foreign_key *fk = rd->s->tables[m->col.table].columns[m->col.column].reference;
		if (fk && rd->q->n_select > 0 && fk->ref_index == rd->q->select[rd->q->n_select - 1].table &&
		    fk->ref_index != m->col.table && m->start >= 2 && strcmp(rd->r.ws.w[m->start - 1], "the") == 0 &&
		    strcmp(rd->r.ws.w[m->start - 2], "of") == 0) {
			m->used = true;
			continue;
		}
		size_t b = (size_t)m->start;
		while (b > 0 && !rd->read[b - 1] && bi_in_list(rd->r.ws.w[b - 1], (const char *const[]){"the", "a", "an", NULL}))
			b--;
		if (b > 0 && bi_in_list(rd->r.ws.w[b - 1], CONDITION))
			return bi_refuse(rd, "unread_condition", "'%s %s' states a condition the built-in does not read",
				      rd->r.ws.w[b - 1], rd->r.ws.w[m->start]);
		/* "students who are on scholarship": a relative clause's column is a condition, not shown */
		size_t c = b > 0 && bi_in_list(rd->r.ws.w[b - 1], (const char *const[]){"on", "in", NULL}) ? b - 1 : b;
		if (c >= 3 && bi_in_list(rd->r.ws.w[c - 1], (const char *const[]){"is", "are", "was", "were", NULL}) &&
		    bi_in_list(rd->r.ws.w[c - 2], (const char *const[]){"who", "that", "which", NULL}))
			return bi_refuse(rd, "unread_condition", "'%s %s' states a condition the built-in does not read",
				      rd->r.ws.w[c - 1], rd->r.ws.w[m->start]);
		for (size_t k = 0; k < rd->q->n_filters; k++)
			if (rd->q->filters[k].or_text && rd->q->filters[k].end == m->start)
				return bi_refuse(rd, "unread_condition", "'%s' after 'a or b': which column holds the values?",
					      rd->r.ws.w[m->start]);
		bool again = false;
		for (size_t k = 0; k < rd->q->n_select; k++)
			again |= rd->q->select[k].table == m->col.table && rd->q->select[k].column == m->col.column;
		/* "Which room has the cheapest base price? List the name and the base price.": named again in
		   a later sentence, the same column */
		if (again && said_before_a_sentence_end(rd, m)) {
			m->used = true;
			continue;
		}
		if (again)
			return bi_refuse(rd, "column_twice", "one column named twice: the second is another thing");
		if (rd->q->n_select == BI_MAX_SELECT)
			return bi_refuse(rd, "too_many_columns", "more columns than the built-in lists");
		rd->q->select[rd->q->n_select++] = m->col;
		m->used = true;
	}
	return 0;
}

static const struct bi_rule RULES[] = {
	{"select", read_select},
	{"bare_direction", bi_read_bare_direction},
	{"sort_verb", bi_read_sort_verb},
};

const struct bi_phase bi_select_phase = {"select list", RULES, sizeof(RULES) / sizeof(RULES[0])};
