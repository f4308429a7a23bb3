/*
 * builtin_tables.c - the tables phase of a reading (see builtin_reader.h;
 * its rule table at the end): which tables a question is about: the
 * one table that holds every name and value it uses, or two tables one
 * foreign key joins; each name resolved to its column there, a value two
 * columns store read by the column named next to it, and "director names"
 * read as the column that names things.
 */
#include "pipeline/builtin/builtin_reader.h"

#include <stdio.h>
#include <string.h>

/* ---- which tables ------------------------------------------------------------------- */

static bool joined(const struct schema *s, int from, int to, int *ret_fk)
{
	int found = -1;
	const struct schema_table *t = &s->tables[from];
	for (size_t k = 0; k < t->n_foreign_keys; k++)
		if (t->foreign_keys[k].ref_index == to && t->foreign_keys[k].n_columns == 1) {
			if (found >= 0)
				return false; /* two keys to the same table: which one is meant is not said */
			found = (int)k;
		}
	*ret_fk = found;
	return found >= 0;
}

static bool in_set(int x, const int *tabs, int n)
{
	for (int k = 0; k < n; k++)
		if (tabs[k] == x)
			return true;
	return false;
}

/* The table named right after mention m ("names of the actors"), or -1. */
static int of_table(const struct reader *rd, const struct bi_mention *m)
{
	static const char *const OF[] = {"of", "the", "all", "each", "every", "a", "an", "those", "these", NULL};
	size_t j = (size_t)(m->start + m->len);
	if (j >= rd->r.ws.n || strcmp(rd->r.ws.w[j], "of") != 0)
		return -1;
	while (j < rd->r.ws.n && rd->r.mention_at[j] < 0 && bi_in_list(rd->r.ws.w[j], OF))
		j++;
	if (j >= rd->r.ws.n || rd->r.mention_at[j] < 0)
		return -1;
	const struct bi_mention *t = &rd->r.mentions[rd->r.mention_at[j]];
	return t->start == (int)j && t->table >= 0 && !t->table_ambiguous && !t->dropped ? t->table : -1;
}

/*
 * Resolve every mention and value against the n tables tabs; false when something stays unplaced or
 * could be read two ways: a name of another table (it brings that table in), a column name two of the
 * tables hold, a span holding stored values of two columns of the tables.
 */
static bool resolve(struct reader *rd, const int *tabs, int n, bool commit)
{
	struct bi_words *r = &rd->r;
	for (size_t i = 0; i < r->n_mentions; i++) {
		struct bi_mention *m = &r->mentions[i];
		if (m->dropped)
			continue;
		if (m->table >= 0 && !m->table_ambiguous && in_set(m->table, tabs, n)) {
			if (commit)
				m->col = (struct bi_col){-1, m->table};
			continue;
		}
		if (m->table >= 0)
			return false; /* names a table outside the reading */
		int found = 0, of = of_table(rd, m);
		struct bi_col col = {-1, -1};
		for (int pass = 0; pass < 2 && found != 1; pass++) {
			/* a name two tables hold: the one of the table named after it ("the names of actors") */
			found = 0;
			for (int k = 0; k < m->n_cands; k++)
				if (in_set(m->cands[k].table, tabs, n) && (pass == 0 || m->cands[k].table == of)) {
					found++;
					col = m->cands[k];
				}
			if (of < 0 || !in_set(of, tabs, n))
				break;
		}
		if (found != 1 || m->too_many)
			return false;
		if (commit)
			m->col = col;
	}
	for (size_t i = 0; i < r->n_values; i++) {
		int in = 0, vt = r->values[i].v->table;
		if (r->values[i].skip)
			continue;
		if (!in_set(vt, tabs, n)) {
			/* another value on the same words may be the one meant, not a shorter one ("Smith" of "Smith Hall") */
			bool other = false;
			for (size_t k = 0; k < r->n_values && !other; k++)
				other = k != i && r->values[k].start == r->values[i].start &&
					r->values[k].len >= r->values[i].len && in_set(r->values[k].v->table, tabs, n);
			if (!other)
				return false;
			if (commit)
				r->values[i].skip = true;
			continue;
		}
		for (size_t k = 0; k < r->n_values; k++)
			in += r->values[k].start < r->values[i].start + r->values[i].len &&
			      r->values[i].start < r->values[k].start + r->values[k].len &&
			      in_set(r->values[k].v->table, tabs, n) && !r->values[k].skip;
		if (in != 1)
			return false; /* one span, two columns' values */
	}
	return true;
}

/* The first name or value the table t does not hold (for the refusal's reason). */
static const char *unplaced(struct reader *rd, int t)
{
	struct bi_words *r = &rd->r;
	for (size_t i = 0; i < r->n_mentions; i++) {
		const struct bi_mention *m = &r->mentions[i];
		bool ok = m->table == t || m->dropped;
		for (int k = 0; k < m->n_cands && !ok; k++)
			ok = m->cands[k].table == t && m->table < 0;
		if (!ok)
			return r->ws.w[m->start];
	}
	for (size_t i = 0; i < r->n_values; i++)
		if (r->values[i].v->table != t && !r->values[i].skip)
			return r->values[i].v->value;
	/* a value two of t's columns store ("from Sevilla": the city, or the birth place?) */
	for (size_t i = 0; i < r->n_values; i++)
		for (size_t k = i + 1; k < r->n_values; k++)
			if (!r->values[i].skip && !r->values[k].skip && r->values[i].start == r->values[k].start)
				return r->values[i].v->value;
	return "?";
}

/* The one single-column foreign key between tables a and b, either way round: 1 and *ret, else 0. */
static int link(const struct schema *s, int a, int b, struct bi_link *ret)
{
	int n = 0;
	*ret = (struct bi_link){-1, -1};
	for (int side = 0; side < 2; side++) {
		int from = side ? b : a, to = side ? a : b;
		const struct schema_table *t = &s->tables[from];
		for (size_t k = 0; k < t->n_foreign_keys; k++)
			if (t->foreign_keys[k].ref_index == to && (n++, t->foreign_keys[k].n_columns == 1))
				*ret = (struct bi_link){from, (int)k};
	}
	return n == 1 && ret->from >= 0;
}

/* Does a foreign key join tables a and b, either way round? */
static bool related(const struct schema *s, int a, int b)
{
	for (int side = 0; side < 2; side++) {
		const struct schema_table *t = &s->tables[side ? b : a];
		for (size_t k = 0; k < t->n_foreign_keys; k++)
			if (t->foreign_keys[k].ref_index == (side ? a : b))
				return true;
	}
	return false;
}

/* The question names table t (loose: or a synonym of it) or spells one of its stored values. */
static bool named_or_valued(const struct reader *rd, int t, bool loose)
{
	for (size_t i = 0; i < rd->r.n_mentions; i++)
		if (rd->r.mentions[i].table == t && !rd->r.mentions[i].dropped && (loose || !rd->r.mentions[i].synonym))
			return true;
	for (size_t i = 0; i < rd->r.n_values; i++)
		if (rd->r.values[i].v->table == t && strcmp(rd->r.values[i].v->matched, rd->r.values[i].v->value) == 0)
			return true; /* spelled as stored, case too: "an order" is not the value 'Order' */
	return false;
}

/*
 * Three tables: the two that hold the question's names and values, and the one between them each
 * refers to or is referred to by (a bridge "enrollment" between "students" and "classes", or a chain),
 * tried when no table alone or pair holds everything; each end is named or holds a value the
 * question spells (a column name alone does not bring a table in); the named table is the main one.
 */
static enum bi_verdict choose_three(struct reader *rd, int named)
{
	const struct schema *s = rd->s;
	int n_found = 0, strict = 0, found[3] = {-1, -1, -1};
	struct bi_link links[2] = {{-1, -1}, {-1, -1}};
	for (int b = 0; b < (int)s->n_tables; b++)
		for (int t = 0; t < (int)s->n_tables; t++) {
			struct bi_link l1 = {-1, -1}, l2 = {-1, -1};
			if (t == b || !link(s, t, b, &l1))
				continue;
			for (int u = t + 1; u < (int)s->n_tables; u++) {
				if (u == b || !link(s, b, u, &l2))
					continue;
				if (named >= 0 && named != t && named != u && named != b)
					continue;
				/* ends named through synonyms count towards ambiguity, but do not answer */
				if (!named_or_valued(rd, t, true) || !named_or_valued(rd, u, true) ||
				    !resolve(rd, (const int[]){t, b, u}, 3, false))
					continue;
				/* the two ends joined directly too: the names may be read along either path */
				if (related(s, t, u))
					return bi_refuse(rd, "ambiguous_join", "the tables the question names join two ways");
				strict += named_or_valued(rd, t, false) && named_or_valued(rd, u, false);
				bool swap = named == u;
				found[0] = swap ? u : t;
				found[1] = b;
				found[2] = swap ? t : u;
				links[0] = swap ? l2 : l1;
				links[1] = swap ? l1 : l2;
				n_found++;
			}
		}
	if (n_found > 1)
		return bi_refuse(rd, "ambiguous_join", "the names the question uses fit %d ways of joining three tables",
			      n_found);
	if (n_found == 0 || !strict)
		return bi_refuse(rd, "no_table", "no table, alone or with the tables foreign keys join to it, holds every "
					      "name and value the question uses (%s)", unplaced(rd, named >= 0 ? named : 0));
	struct bi_query *q = rd->q;
	q->table = found[0];
	q->bridge = found[1];
	q->join_table = found[2];
	q->join_from = -1; /* no one table holds the key: counts per row and of one table are not read */
	q->links[0] = links[0];
	q->links[1] = links[1];
	resolve(rd, found, 3, true);
	return 0;
}

/* Does the mention at word w (when there is one) name column (table, column)? */
static bool names_column(const struct bi_words *r, int w, int table, int column)
{
	if (w < 0 || (size_t)w >= r->ws.n || r->mention_at[w] < 0)
		return false;
	const struct bi_mention *m = &r->mentions[r->mention_at[w]];
	for (int k = 0; k < m->n_cands && !m->dropped; k++)
		if (m->cands[k].table == table && m->cands[k].column == column)
			return true;
	return false;
}

/* "in Los Angeles county": of values two columns store on the same words, the one whose column's name is
   next to them (after or before) is read; the others are skipped. */
static void values_by_column_named(struct bi_words *r)
{
	for (size_t i = 0; i < r->n_values; i++) {
		const struct bi_value *v = &r->values[i];
		if (v->skip)
			continue;
		int vt = v->v->table, vc = v->v->column;
		if (!names_column(r, v->start + v->len, vt, vc) && !names_column(r, v->start - 1, vt, vc))
			continue;
		for (size_t k = 0; k < r->n_values; k++) {
			struct bi_value *o = &r->values[k];
			if (k != i && o->start == v->start && o->len == v->len && !(o->v->table == vt && o->v->column == vc) &&
			    !names_column(r, v->start + v->len, o->v->table, o->v->column) &&
			    !names_column(r, v->start - 1, o->v->table, o->v->column))
				o->skip = true;
		}
	}
}

/* The table the question is about: named by a table mention, else the one table every name fits. */
static enum bi_verdict choose_tables(struct reader *rd)
{
	const struct schema *s = rd->s;
	struct bi_words *r = &rd->r;
	int named = -1, named_at = -1;
	values_by_column_named(r);
	for (size_t i = 0; i < r->n_mentions; i++) {
		const struct bi_mention *m = &r->mentions[i];
		if (m->table < 0 || m->n_cands > 0 || m->dropped)
			continue; /* a name that is also a column's is not sure to name the table */
		if (m->table_ambiguous)
			return bi_refuse(rd, "ambiguous_table", "several tables are named '%s'", r->ws.w[m->start]);
		if (named >= 0 && m->start > named_at)
			continue; /* a second table: only as the joined one */
		named = m->table; /* the first in the question (synonyms are found after the names) */
		named_at = m->start;
	}
	int fits = -1, n_fits = 0;
	for (size_t t = 0; t < s->n_tables; t++) {
		if ((named >= 0 && (int)t != named) || !bi_table_read(&rd->r, t))
			continue;
		if (resolve(rd, (const int[]){(int)t}, 1, false)) {
			fits = (int)t;
			n_fits++;
		}
	}
	if (n_fits == 1) {
		rd->q->table = fits;
		rd->q->join_table = -1;
		resolve(rd, (const int[]){fits}, 1, true);
		return 0;
	}
	if (n_fits > 1)
		return bi_refuse(rd, "ambiguous_table", "the names the question uses fit %d tables equally", n_fits);
	/* Two tables one foreign key joins (either way round; the named one is the main table). */
	int from = -1, to = -1, fk = -1, n_pairs = 0;
	for (size_t t = 0; t < s->n_tables; t++) {
		const struct schema_table *tb = &s->tables[t];
		for (size_t k = 0; k < tb->n_foreign_keys && bi_table_read(&rd->r, t); k++) {
			int u = tb->foreign_keys[k].ref_index, one;
			if (u < 0 || u == (int)t || !bi_table_read(&rd->r, (size_t)u) || !joined(s, (int)t, u, &one) ||
			    one != (int)k)
				continue;
			if (named >= 0 && named != (int)t && named != u)
				continue;
			if (!resolve(rd, (const int[]){(int)t, u}, 2, false))
				continue;
			n_pairs++;
			from = (int)t;
			to = u;
			fk = (int)k;
		}
	}
	if (n_pairs > 1)
		return bi_refuse(rd, "ambiguous_join", "the names the question uses fit %d pairs of joined tables", n_pairs);
	if (n_pairs == 0)
		return choose_three(rd, named);
	rd->q->table = named >= 0 ? named : from;
	rd->q->join_table = rd->q->table == from ? to : from;
	rd->q->join_from = from;
	rd->q->join_fk = fk;
	resolve(rd, (const int[]){from, to}, 2, true);
	return 0;
}

/* Is mention p a text column that names things (not a key, nor a name, id or code) of the table whose naming
   column mention o, the word "name(s)", was read as? */
static bool names_things(const struct reader *rd, int o, int p)
{
	const struct bi_mention *name = &rd->r.mentions[o], *col = &rd->r.mentions[p];
	if (name->len != 1 || name->col.table < 0 || col->col.table != name->col.table || col->col.column < 0 ||
	    col->col.column == name->col.column || bi_is_number_col(rd, col->col))
		return false;
	const struct schema_column *c = &rd->s->tables[col->col.table].columns[col->col.column];
	return !c->key && !c->reference && !bi_name_has_word(c->name, (const char *const[]){"name", "id", "code", NULL});
}

/* After the tables are chosen: "director names" or "the names of (the) studios", a text column that names
   things beside "names" read as the table's naming column (title): the column's own values are the names. */
static enum bi_verdict read_column_names(struct reader *rd)
{
	struct bi_words *r = &rd->r;
	for (size_t i = 1; i < r->ws.n; i++) {
		int o = r->mention_at[i], p = r->mention_at[i - 1];
		if (o < 0 || p < 0 || o == p || (strcmp(r->ws.w[i], "name") != 0 && strcmp(r->ws.w[i], "names") != 0) ||
		    r->ws.at[i] != r->ws.end[i - 1] + 1 || rd->in->question[r->ws.end[i - 1]] != ' ')
			continue; /* not "card number, name" */
		if (!names_things(rd, o, p))
			continue;
		bi_drop_mention(r, o);
		bi_mark(rd, i, 1);
	}
	/* "the names of studios": "names of", then such a column ("studio" of films) */
	for (size_t i = 0; i + 2 < r->ws.n; i++) {
		size_t j = strcmp(r->ws.w[i + 2], "the") == 0 ? i + 3 : i + 2;
		int o = r->mention_at[i], p = j < r->ws.n ? r->mention_at[j] : -1;
		if (o < 0 || p < 0 || strcmp(r->ws.w[i + 1], "of") != 0 ||
		    (strcmp(r->ws.w[i], "name") != 0 && strcmp(r->ws.w[i], "names") != 0) ||
		    r->mentions[p].start != (int)j || !names_things(rd, o, p))
			continue;
		bi_drop_mention(r, o);
		bi_mark(rd, i, j - i);
	}
	return 0;
}

static const struct bi_rule RULES[] = {
	{"choose_tables", choose_tables},
	{"column_names", read_column_names},
	{"place_negated_table", bi_place_negated_table},
};

const struct bi_phase bi_table_phase = {"tables", RULES, sizeof(RULES) / sizeof(RULES[0])};
