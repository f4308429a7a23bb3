/*
 * builtin_sql.c - the built-in generator's reading written as SQL for the
 * schema's engine (identifiers quoted where the engine needs it, engine.h,
 * string literals with doubled quotes).
 */
#include "pipeline/builtin/builtin_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
	char *s;
	size_t n, cap;
	bool nomem;
};

static void put(struct buf *b, const char *fmt, ...)
{
	if (b->nomem)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->nomem = true;
		return;
	}
	if (!b->s || b->n + (size_t)n + 1 > b->cap) {
		size_t cap = (b->cap ? b->cap : 256);
		while (cap < b->n + (size_t)n + 1)
			cap *= 2;
		char *s = realloc(b->s, cap);
		if (!s) {
			b->nomem = true;
			return;
		}
		b->s = s;
		b->cap = cap;
		va_start(ap, fmt);
		vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
	}
	b->n += (size_t)n;
}

static void put_ident(struct buf *b, const struct schema *s, const char *name)
{
	if (db_engine_plain_name(s->engine, name, DB_NAME_SQL)) {
		put(b, "%s", name);
		return;
	}
	char q = s->engine->quote;
	put(b, "%c", q);
	for (const char *p = name; *p; p++) {
		put(b, "%c", *p);
		if (*p == q)
			put(b, "%c", q); /* doubled inside the quotes */
	}
	put(b, "%c", q);
}

static void put_table(struct buf *b, const struct schema *s, int t)
{
	const struct schema_table *tb = &s->tables[t];
	if (db_engine_qualifies(s->engine, tb->schema)) {
		put_ident(b, s, tb->schema);
		put(b, ".");
	}
	put_ident(b, s, tb->name);
}

static void put_col(struct buf *b, const struct schema *s, const struct bi_query *q, struct bi_col c)
{
	if (q->join_table >= 0)
		put(b, "%s.", c.table == q->table ? "T1" : c.table == q->bridge ? "T2" : q->bridge >= 0 ? "T3" : "T2");
	put_ident(b, s, s->tables[c.table].columns[c.column].name);
}

static void put_number(struct buf *b, double v)
{
	if (v == floor(v) && fabs(v) < 1e15)
		put(b, "%lld", (long long)v);
	else
		put(b, "%.15g", v);
}

static void put_literal(struct buf *b, const char *v)
{
	put(b, "'");
	for (const char *p = v; *p; p++)
		put(b, *p == '\'' ? "''" : "%c", *p);
	put(b, "'");
}

static const char *agg_name(enum bi_agg a)
{
	switch (a) {
	case BI_AVG: return "avg";
	case BI_SUM: return "sum";
	case BI_MIN: return "min";
	case BI_MAX: return "max";
	default: return "count";
	}
}

static void put_aggregate(struct buf *b, const struct schema *s, const struct bi_query *q)
{
	if (q->agg == BI_COUNT) {
		put(b, "count(*)");
		return;
	}
	for (size_t c = 0; c <= q->n_more_cols; c++) {
		struct bi_col col = c ? q->more_cols[c - 1] : q->agg_col;
		put(b, "%s%s(%s", c ? ", " : "", agg_name(q->agg), q->agg == BI_COUNT_DISTINCT ? "DISTINCT " : "");
		put_col(b, s, q, col);
		put(b, ")");
		for (size_t i = 0; i < q->n_more_aggs; i++) {
			put(b, ", %s(", agg_name(q->more_aggs[i]));
			put_col(b, s, q, col);
			put(b, ")");
		}
	}
}

static void put_from(struct buf *b, const struct schema *s, const struct bi_query *q)
{
	put(b, " FROM ");
	put_table(b, s, q->table);
	if (q->join_table < 0)
		return;
	if (q->bridge >= 0) {
		/* T1 - T2 (the bridge) - T3, each key between neighbours; without T3 when only its rows are
		   counted (the bridge's rows stand for them) */
		const int tabs[3] = {q->table, q->bridge, q->join_table};
		bool far = !q->per_row;
		for (size_t i = 0; i < q->n_select; i++)
			far |= q->select[i].table == q->join_table;
		for (size_t i = 0; i < q->n_filters; i++)
			far |= q->filters[i].col.table == q->join_table;
		far |= q->ordered && q->order.table == q->join_table;
		put(b, " AS T1");
		for (int k = 0; k < (far ? 2 : 1); k++) {
			const struct bi_link *l = &q->links[k];
			const struct schema_foreign_key *fk = &s->tables[l->from].foreign_keys[l->fk];
			bool left = l->from == tabs[k]; /* the key's holder is the earlier table */
			put(b, " JOIN ");
			put_table(b, s, tabs[k + 1]);
			put(b, " AS T%d ON T%d.", k + 2, left ? k + 1 : k + 2);
			put_ident(b, s, fk->columns[0]);
			put(b, " = T%d.", left ? k + 2 : k + 1);
			put_ident(b, s, fk->ref_columns[0]);
		}
		return;
	}
	const struct schema_foreign_key *fk = &s->tables[q->join_from].foreign_keys[q->join_fk];
	put(b, " AS T1 JOIN ");
	put_table(b, s, q->join_table);
	bool from_first = q->join_from == q->table;
	put(b, " AS T2 ON %s.", from_first ? "T1" : "T2");
	put_ident(b, s, fk->columns[0]);
	put(b, " = %s.", from_first ? "T2" : "T1");
	put_ident(b, s, fk->ref_columns[0]);
}

static void put_where(struct buf *b, const struct schema *s, const struct bi_query *q)
{
	size_t n = 0;
	if (q->neg_table >= 0) {
		const struct schema_foreign_key *fk = &s->tables[q->neg_table].foreign_keys[q->neg_fk];
		put(b, " WHERE ");
		put_ident(b, s, fk->ref_columns[0]);
		put(b, " NOT IN (SELECT ");
		put_ident(b, s, fk->columns[0]);
		put(b, " FROM ");
		put_table(b, s, q->neg_table);
		put(b, " WHERE ");
		put_ident(b, s, fk->columns[0]);
		put(b, " IS NOT NULL)");
		n++;
	}
	for (size_t i = 0; i < q->n_filters; i++) {
		const struct bi_filter *f = &q->filters[i];
		put(b, n++ == 0 ? " WHERE " : " AND ");
		if (f->or_text) {
			put(b, "(");
			put_col(b, s, q, f->col);
			put(b, " = ");
			put_literal(b, f->text);
			put(b, " OR ");
			put_col(b, s, q, f->col);
			put(b, " = ");
			put_literal(b, f->or_text);
			put(b, ")");
			continue;
		}
		put_col(b, s, q, f->col);
		if (strcmp(f->op, "LIKE") == 0) {
			put(b, "%s", s->engine->like_nocase);
			put_literal(b, f->pattern);
			continue;
		}
		put(b, " %s ", f->op);
		if (f->average) {
			put(b, "(SELECT avg(");
			put_ident(b, s, s->tables[f->col.table].columns[f->col.column].name);
			put(b, ") FROM ");
			put_table(b, s, f->col.table);
			put(b, ")");
		} else if (f->text) {
			put_literal(b, f->text);
		} else {
			put_number(b, f->num);
			if (strcmp(f->op, "BETWEEN") == 0) {
				put(b, " AND ");
				put_number(b, f->num2);
			}
		}
	}
}

char *builtin_write_sql(const struct schema *s, const struct bi_query *q)
{
	struct buf b = {0};
	put(&b, "SELECT ");
	if (q->star) {
		put(&b, "*");
	} else if ((q->most || q->having) && !q->per_row) {
		put_col(&b, s, q, q->group);
	} else if (q->grouped) {
		put_col(&b, s, q, q->group);
		put(&b, ", ");
		put_aggregate(&b, s, q);
	} else if (q->agg != BI_NONE && !q->per_row) {
		put_aggregate(&b, s, q);
	} else {
		if (q->distinct)
			put(&b, "DISTINCT ");
		for (size_t i = 0; i < q->n_select; i++) {
			if (i)
				put(&b, ", ");
			put_col(&b, s, q, q->select[i]);
		}
		if (q->agg != BI_NONE) {
			put(&b, ", ");
			put_aggregate(&b, s, q);
		}
	}
	put_from(&b, s, q);
	put_where(&b, s, q);
	if (q->grouped) {
		put(&b, " GROUP BY ");
		put_col(&b, s, q, q->group);
	}
	if (q->per_row) {
		/* the key the joined rows refer to, and the columns shown unless it is the primary key (PostgreSQL) */
		const struct bi_link *l = q->bridge >= 0 ? &q->links[0] : &(struct bi_link){q->join_from, q->join_fk};
		const struct schema_foreign_key *fk = &s->tables[l->from].foreign_keys[l->fk];
		const struct schema_table *main = &s->tables[q->table];
		bool pk = main->n_primary_key == 1 && strcmp(main->primary_key[0], fk->ref_columns[0]) == 0;
		put(&b, " GROUP BY T1.");
		put_ident(&b, s, fk->ref_columns[0]);
		for (size_t i = 0; i < q->n_select && !pk; i++)
			if (strcmp(s->tables[q->select[i].table].columns[q->select[i].column].name, fk->ref_columns[0])) {
				put(&b, ", ");
				put_col(&b, s, q, q->select[i]);
			}
	}
	if (q->having) {
		put(&b, " HAVING count(*) %s ", q->having_op);
		put_number(&b, q->having_num);
	}
	if (q->most || q->order_count)
		put(&b, " ORDER BY count(*) %s", q->desc ? "DESC" : "ASC");
	if (q->ordered) {
		put(&b, " ORDER BY ");
		if (q->limit && s->engine->no_nulls_order) { /* NULLS LAST where the engine has no such clause */
			put_col(&b, s, q, q->order);
			put(&b, " IS NULL, ");
		}
		put_col(&b, s, q, q->order);
		put(&b, q->desc ? " DESC" : " ASC");
		if (q->limit && !s->engine->no_nulls_order)
			put(&b, " NULLS LAST");
	}
	if (q->limit)
		put(&b, " LIMIT %ld", q->limit);
	if (b.nomem) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
