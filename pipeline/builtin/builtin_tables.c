/*
 * builtin_tables.c - which tables a question is about (see builtin.h): the
 * one table that holds every name and value it uses, or two tables one
 * foreign key joins; each name resolved to its column there.
 */
#include "pipeline/builtin/builtin_reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int bi_refuse(struct reader *rd, const char *code, const char *fmt, ...)
{
	rd->why->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rd->why->reason, sizeof(rd->why->reason), fmt, ap);
	va_end(ap);
	return 1;
}

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

/*
 * Resolve every mention and value against tables {t, u} (u -1: t alone); false when something stays
 * unplaced or could be read two ways: a name of another table (it brings that table in), a column name
 * both tables hold, a span holding stored values of two columns of the tables.
 */
static bool resolve(struct reader *rd, int t, int u, bool commit)
{
	struct bi_words *r = &rd->r;
	for (size_t i = 0; i < r->n_mentions; i++) {
		struct bi_mention *m = &r->mentions[i];
		if (m->dropped)
			continue;
		if (m->table >= 0 && !m->table_ambiguous && (m->table == t || m->table == u)) {
			if (commit)
				m->col = (struct bi_col){-1, m->table};
			continue;
		}
		if (m->table >= 0)
			return false; /* names a table outside the reading */
		int found = 0;
		struct bi_col col = {-1, -1};
		for (int k = 0; k < m->n_cands; k++)
			if (m->cands[k].table == t || (u >= 0 && m->cands[k].table == u)) {
				found++;
				col = m->cands[k];
			}
		if (found != 1 || m->too_many)
			return false;
		if (commit)
			m->col = col;
	}
	for (size_t i = 0; i < r->n_values; i++) {
		int in = 0, vt = r->values[i].v->table;
		if (vt != t && vt != u) {
			/* another value on the same words may be the one meant */
			bool other = false;
			for (size_t k = 0; k < r->n_values && !other; k++)
				other = k != i && r->values[k].start == r->values[i].start &&
					(r->values[k].v->table == t || r->values[k].v->table == u);
			if (!other)
				return false;
			if (commit)
				r->values[i].skip = true;
			continue;
		}
		for (size_t k = 0; k < r->n_values; k++)
			in += r->values[k].start < r->values[i].start + r->values[i].len &&
			      r->values[i].start < r->values[k].start + r->values[k].len &&
			      (r->values[k].v->table == t || r->values[k].v->table == u);
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
		if (r->values[i].v->table != t)
			return r->values[i].v->value;
	return "?";
}

/* The table the question is about: named by a table mention, else the one table every name fits. */
int bi_choose_tables(struct reader *rd)
{
	const struct schema *s = rd->s;
	struct bi_words *r = &rd->r;
	int named = -1;
	for (size_t i = 0; i < r->n_mentions; i++) {
		const struct bi_mention *m = &r->mentions[i];
		if (m->table < 0 || m->n_cands > 0 || m->dropped)
			continue; /* a name that is also a column's is not sure to name the table */
		if (m->table_ambiguous)
			return bi_refuse(rd, "ambiguous_table", "several tables are named '%s'", r->ws.w[m->start]);
		if (named >= 0 && named != m->table)
			continue; /* a second table: only as the joined one */
		named = m->table;
	}
	int fits = -1, n_fits = 0;
	for (size_t t = 0; t < s->n_tables; t++) {
		if (named >= 0 && (int)t != named)
			continue;
		if (resolve(rd, (int)t, -1, false)) {
			fits = (int)t;
			n_fits++;
		}
	}
	if (n_fits == 1) {
		rd->q->table = fits;
		rd->q->join_table = -1;
		resolve(rd, fits, -1, true);
		return 0;
	}
	if (n_fits > 1)
		return bi_refuse(rd, "ambiguous_table", "the names the question uses fit %d tables equally", n_fits);
	/* Two tables one foreign key joins (either way round; the named one is the main table). */
	int from = -1, to = -1, fk = -1, n_pairs = 0;
	for (size_t t = 0; t < s->n_tables; t++) {
		const struct schema_table *tb = &s->tables[t];
		for (size_t k = 0; k < tb->n_foreign_keys; k++) {
			int u = tb->foreign_keys[k].ref_index, one;
			if (u < 0 || u == (int)t || !joined(s, (int)t, u, &one) || one != (int)k)
				continue;
			if (named >= 0 && named != (int)t && named != u)
				continue;
			if (!resolve(rd, (int)t, u, false))
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
		return bi_refuse(rd, "no_table", "no table, alone or with one table a foreign key joins, holds every name "
					      "and value the question uses (%s)", unplaced(rd, named >= 0 ? named : 0));
	rd->q->table = named >= 0 ? named : from;
	rd->q->join_table = rd->q->table == from ? to : from;
	rd->q->join_from = from;
	rd->q->join_fk = fk;
	resolve(rd, from, to, true);
	return 0;
}

