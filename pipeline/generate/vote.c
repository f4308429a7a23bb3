/*
 * vote.c - result similarity and the soft-consensus choice among
 * candidates (see vote.h for the rules).
 *
 * Each result is first put in a canonical form, once per vote: every cell
 * as a comparable text ("n" + a number, "s" + a string, "z" for NULL), and
 * per column its texts sorted (the column's value multiset).  Comparing two
 * results then pairs columns by the Jaccard index of those multisets and
 * compares the rows projected on the pairs as sorted keys.  All memory of a
 * vote is one arena, released at its end.
 */
#include "pipeline/generate/vote.h"

#include "common/arena.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each warning's factor (see vote.h). */
#define WARNING_FACTOR 0.9
/* The similarity left to equal rows in a different order when both statements sort (see vote.h). */
#define ORDER_FACTOR 0.0
/* Columns of a result the comparison reads (later ones are ignored). */
#define MAX_COLUMNS 64
/* The least weight of a scored candidate that ran: a probability near 0 still tells its class apart. */
#define MIN_SCORED_WEIGHT 0.001
/* Separates cells in a row's key (not expected inside values). */
#define CELL_SEP "\x1f"

/* A result as the comparison reads it. */
struct canon {
	size_t n_rows, n_cols;
	const char **cells;   /* n_rows * n_cols, row-major */
	const char ***column; /* per column: its n_rows texts, sorted */
};

static int compare_text(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* x as "n" + its canonical text: integral values as integers, others to 6 significant digits. */
static char *number_text(struct arena *a, double x)
{
	if (x == 0.0)
		x = 0.0; /* -0 */
	if (isfinite(x) && x == floor(x) && fabs(x) < 9007199254740992.0)
		return arena_printf(a, "n%lld", (long long)x);
	return arena_printf(a, "n%.6g", x);
}

/* A string that is wholly a decimal number (digits, sign, point, exponent): its value. */
static bool decimal_string(const char *s, double *ret)
{
	bool digit = false;
	for (const char *p = s; *p; p++) {
		if (*p >= '0' && *p <= '9')
			digit = true;
		else if (!strchr("+-.eE", *p))
			return false;
	}
	char *end = NULL;
	double x = digit ? strtod(s, &end) : 0.0;
	if (!digit || !end || *end || !isfinite(x))
		return false;
	*ret = x;
	return true;
}

static char *cell_text(struct arena *a, const json_t *v)
{
	double x;
	switch (json_typeof(v)) {
	case JSON_NULL:
		return arena_strdup(a, "z");
	case JSON_TRUE:
		return number_text(a, 1.0);
	case JSON_FALSE:
		return number_text(a, 0.0);
	case JSON_INTEGER:
		return arena_printf(a, "n%lld", (long long)json_integer_value(v));
	case JSON_REAL:
		return number_text(a, json_real_value(v));
	case JSON_STRING:
		if (decimal_string(json_string_value(v), &x))
			return number_text(a, x);
		return arena_printf(a, "s%s", json_string_value(v));
	default: {
		char *dump = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		char *t = dump ? arena_printf(a, "j%s", dump) : NULL;
		free(dump);
		return t;
	}
	}
}

/* The canonical form of r into *ret (memory from a); 0 or -T2S_ERR_NOMEM. */
/* ret->column: each column's cells of ret->cells, sorted (memory from a); 0 or -T2S_ERR_NOMEM. */
static int sort_columns(struct arena *a, struct canon *ret)
{
	ret->column = arena_calloc(a, ret->n_cols + 1, sizeof(char **));
	if (!ret->column)
		return -T2S_ERR_NOMEM;
	for (size_t c = 0; c < ret->n_cols; c++) {
		const char **col = arena_calloc(a, ret->n_rows + 1, sizeof(char *));
		if (!col)
			return -T2S_ERR_NOMEM;
		for (size_t i = 0; i < ret->n_rows; i++)
			col[i] = ret->cells[i * ret->n_cols + c];
		qsort(col, ret->n_rows, sizeof(char *), compare_text);
		ret->column[c] = col;
	}
	return 0;
}

static int canon_init(struct arena *a, const struct exec_result *r, struct canon *ret)
{
	size_t n_rows = json_array_size(r->rows), n_cols = json_array_size(r->columns);
	if (n_cols > MAX_COLUMNS)
		n_cols = MAX_COLUMNS;
	*ret = (struct canon){.n_rows = n_rows, .n_cols = n_cols};
	ret->cells = arena_calloc(a, n_rows * n_cols + 1, sizeof(char *));
	if (!ret->cells)
		return -T2S_ERR_NOMEM;
	for (size_t c = 0; c < n_cols; c++)
		for (size_t i = 0; i < n_rows; i++) {
			const json_t *cell = json_array_get(json_array_get(r->rows, i), c);
			const char *t = cell ? cell_text(a, cell) : "z";
			if (!t)
				return -T2S_ERR_NOMEM;
			ret->cells[i * n_cols + c] = t;
		}
	return sort_columns(a, ret);
}

/* Multiset Jaccard index of two sorted text arrays (1 when both are empty). */
static double jaccard(const char *const *x, size_t nx, const char *const *y, size_t ny)
{
	if (nx == 0 && ny == 0)
		return 1.0;
	size_t i = 0, k = 0, common = 0;
	while (i < nx && k < ny) {
		int d = strcmp(x[i], y[k]);
		if (d == 0) {
			common++;
			i++;
			k++;
		} else if (d < 0) {
			i++;
		} else {
			k++;
		}
	}
	return (double)common / (double)(nx + ny - common);
}

struct column_pair {
	size_t a, b;
	double sim;
};

static int compare_pair(const void *x, const void *y)
{
	const struct column_pair *p = x, *q = y;
	if (p->sim != q->sim)
		return p->sim > q->sim ? -1 : 1;
	size_t dp = p->a > p->b ? p->a - p->b : p->b - p->a, dq = q->a > q->b ? q->a - q->b : q->b - q->a;
	if (dp != dq)
		return dp < dq ? -1 : 1;
	return p->a < q->a ? -1 : p->a > q->a;
}

/*
 * Pair the columns of x and y by content into pairs[] (best first); returns
 * how many (0 also when out of memory: the results then count as unrelated).
 * With no rows on either side, columns pair by position.
 */
static size_t pair_columns(struct arena *a, const struct canon *x, const struct canon *y, struct column_pair *pairs)
{
	struct column_pair *all = arena_calloc(a, x->n_cols * y->n_cols + 1, sizeof(*all));
	size_t n = 0, n_pairs = 0;
	if (!all)
		return 0;
	bool by_position = x->n_rows == 0 && y->n_rows == 0;
	for (size_t i = 0; i < x->n_cols; i++)
		for (size_t k = 0; k < y->n_cols; k++) {
			double s = by_position ? (i == k)
					       : jaccard(x->column[i], x->n_rows, y->column[k], y->n_rows);
			if (s > 0)
				all[n++] = (struct column_pair){i, k, s};
		}
	qsort(all, n, sizeof(*all), compare_pair);
	bool used_a[MAX_COLUMNS] = {0}, used_b[MAX_COLUMNS] = {0};
	for (size_t p = 0; p < n; p++) {
		if (used_a[all[p].a] || used_b[all[p].b])
			continue;
		used_a[all[p].a] = used_b[all[p].b] = true;
		pairs[n_pairs++] = all[p];
	}
	return n_pairs;
}

/* The rows of x projected on the pairs' columns (side a or b), as keys in the result's order; NULL when out of
 * memory. */
static const char **row_keys(struct arena *a, const struct canon *x, const struct column_pair *pairs, size_t n_pairs,
			     bool side_a)
{
	const char **keys = arena_calloc(a, x->n_rows + 1, sizeof(char *));
	if (!keys)
		return NULL;
	for (size_t i = 0; i < x->n_rows; i++) {
		size_t len = 1;
		for (size_t p = 0; p < n_pairs; p++)
			len += strlen(x->cells[i * x->n_cols + (side_a ? pairs[p].a : pairs[p].b)]) + 1;
		char *k = arena_alloc(a, len), *w = k;
		if (!k)
			return NULL;
		for (size_t p = 0; p < n_pairs; p++) {
			const char *cell = x->cells[i * x->n_cols + (side_a ? pairs[p].a : pairs[p].b)];
			size_t l = strlen(cell);
			memcpy(w, cell, l);
			w += l;
			*w++ = CELL_SEP[0];
		}
		*w = '\0';
		keys[i] = k;
	}
	return keys;
}

/* ordered: both statements sort their rows (see vote.h: a different order is a different answer). */
static double canon_similarity(struct arena *a, const struct canon *x, const struct canon *y, bool ordered)
{
	size_t widest = x->n_cols > y->n_cols ? x->n_cols : y->n_cols;
	if (widest == 0 || (x->n_rows == 0) != (y->n_rows == 0))
		return 0.0;
	struct column_pair pairs[MAX_COLUMNS];
	size_t n_pairs = pair_columns(a, x, y, pairs);
	if (n_pairs == 0)
		return 0.0;
	const char **kx = row_keys(a, x, pairs, n_pairs, true), **ky = row_keys(a, y, pairs, n_pairs, false);
	if (!kx || !ky)
		return -T2S_ERR_NOMEM;
	/* in the results' own order first: the same rows in another sequence are another answer */
	bool reordered = false;
	for (size_t i = 0; ordered && x->n_rows == y->n_rows && i < x->n_rows && !reordered; i++)
		reordered = strcmp(kx[i], ky[i]) != 0;
	qsort(kx, x->n_rows, sizeof(char *), compare_text);
	qsort(ky, y->n_rows, sizeof(char *), compare_text);
	double rows = jaccard(kx, x->n_rows, ky, y->n_rows);
	if (reordered && rows >= 1.0)
		rows *= ORDER_FACTOR;
	return rows * (double)n_pairs / (double)widest;
}

double vote_similarity(const struct exec_result *a, const struct exec_result *b)
{
	struct arena ar;
	arena_init(&ar);
	struct canon x, y;
	double s = -T2S_ERR_NOMEM;
	if (canon_init(&ar, a, &x) == 0 && canon_init(&ar, b, &y) == 0)
		s = canon_similarity(&ar, &x, &y, false);
	arena_release(&ar);
	return s;
}

/* x's rows taken once each, in their first occurrence's order, into *ret (memory from a); 0 or -T2S_ERR_NOMEM. */
static int canon_distinct(struct arena *a, const struct canon *x, struct canon *ret)
{
	struct column_pair all[MAX_COLUMNS];
	for (size_t c = 0; c < x->n_cols; c++)
		all[c] = (struct column_pair){c, c, 1.0};
	const char **keys = row_keys(a, x, all, x->n_cols, true);
	const char **sorted = arena_calloc(a, x->n_rows + 1, sizeof(char *));
	*ret = (struct canon){.n_cols = x->n_cols};
	ret->cells = arena_calloc(a, x->n_rows * x->n_cols + 1, sizeof(char *));
	if (!keys || !sorted || !ret->cells)
		return -T2S_ERR_NOMEM;
	memcpy(sorted, keys, x->n_rows * sizeof(char *));
	qsort(sorted, x->n_rows, sizeof(char *), compare_text);
	bool *taken = arena_calloc(a, x->n_rows + 1, sizeof(bool)); /* per sorted key: a row of it is kept */
	if (!taken)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < x->n_rows; i++) {
		const char **at = bsearch(&keys[i], sorted, x->n_rows, sizeof(char *), compare_text);
		while (at > sorted && strcmp(at[-1], keys[i]) == 0)
			at--; /* the first of equal keys marks them all */
		if (taken[at - sorted])
			continue;
		taken[at - sorted] = true;
		memcpy(&ret->cells[ret->n_rows++ * x->n_cols], &x->cells[i * x->n_cols], x->n_cols * sizeof(char *));
	}
	return sort_columns(a, ret);
}

static double weight(const struct vote_candidate *c)
{
	if (!c->result)
		return 0.0;
	if (c->scored)
		return c->probability > MIN_SCORED_WEIGHT ? c->probability : MIN_SCORED_WEIGHT;
	double w = c->score >= 3 ? 1.0 : VOTE_FLAGGED_WEIGHT;
	for (int i = 0; i < c->warnings; i++)
		w *= WARNING_FACTOR;
	return w;
}

/* Whether candidate i ranks before candidate k (see vote.h: consensus, score, warnings, order). */
static bool ranks_before(const struct vote_candidate *c, const struct vote_tally *t, size_t i, size_t k)
{
	if (fabs(t[i].consensus - t[k].consensus) > 1e-9)
		return t[i].consensus > t[k].consensus;
	if (c[i].scored && c[k].scored && fabs(c[i].probability - c[k].probability) > 1e-9)
		return c[i].probability > c[k].probability;
	if (c[i].score != c[k].score)
		return c[i].score > c[k].score;
	if (c[i].warnings != c[k].warnings)
		return c[i].warnings < c[k].warnings;
	return i < k;
}

/*
 * What candidate k's voice adds to candidate i's consensus (s: the
 * similarity of their results); a negative error when out of memory.
 */
static double support(struct arena *a, const struct vote_candidate *c, const struct vote_tally *t,
		      const struct canon *forms, const struct canon *once, size_t i, size_t k, double s)
{
	if (!c[k].repeats || c[i].score < 3 || once[k].n_rows < 2)
		return t[k].weight * s;
	double r = canon_similarity(a, &forms[i], &once[k], c[i].ordered && c[k].ordered);
	return r < 0 ? r : VOTE_REPAIRED_WEIGHT * r;
}

/* What the evidence adds to each candidate's consensus (see vote.h, "Scored"). */
static int add_evidence(struct arena *a, const struct vote_candidate *c, size_t n, const struct canon *forms,
			const struct vote_evidence *ev, size_t n_evidence, struct vote_tally *t)
{
	for (size_t e = 0; e < n_evidence; e++) {
		struct canon form;
		if (!ev[e].result || ev[e].weight <= 0)
			continue;
		if (canon_init(a, ev[e].result, &form) < 0)
			return -T2S_ERR_NOMEM;
		for (size_t i = 0; i < n; i++) {
			if (!c[i].result)
				continue;
			double s = canon_similarity(a, &forms[i], &form, false);
			if (s < 0)
				return -T2S_ERR_NOMEM;
			t[i].consensus += ev[e].weight * s;
		}
	}
	return 0;
}

int vote_select(const struct vote_candidate *c, size_t n, const struct vote_evidence *ev, size_t n_evidence,
		struct vote_tally *ret_tally, size_t *ret_winner)
{
	struct arena ar;
	arena_init(&ar);
	struct canon *forms = arena_calloc(&ar, n + 1, sizeof(*forms));
	struct canon *once = arena_calloc(&ar, n + 1, sizeof(*once)); /* repeats: the rows taken once each */
	int rc = forms && once ? 0 : -T2S_ERR_NOMEM;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		ret_tally[i] = (struct vote_tally){.weight = weight(&c[i])};
		if (c[i].result)
			rc = canon_init(&ar, c[i].result, &forms[i]);
		if (rc == 0 && c[i].result && c[i].repeats)
			rc = canon_distinct(&ar, &forms[i], &once[i]);
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (!c[i].result)
			continue;
		ret_tally[i].consensus += ret_tally[i].weight;
		ret_tally[i].votes++;
		for (size_t k = i + 1; k < n; k++) {
			if (!c[k].result)
				continue;
			double s = canon_similarity(&ar, &forms[i], &forms[k], c[i].ordered && c[k].ordered);
			double to_i = s < 0 ? s : support(&ar, c, ret_tally, forms, once, i, k, s);
			double to_k = s < 0 ? s : support(&ar, c, ret_tally, forms, once, k, i, s);
			if (to_i < 0 || to_k < 0) {
				rc = -T2S_ERR_NOMEM;
				break;
			}
			ret_tally[i].consensus += to_i;
			ret_tally[k].consensus += to_k;
			ret_tally[i].votes += s >= 1.0;
			ret_tally[k].votes += s >= 1.0;
		}
	}
	if (rc == 0)
		rc = add_evidence(&ar, c, n, forms, ev, n_evidence, ret_tally);
	arena_release(&ar);
	if (rc < 0)
		return rc;
	size_t best = n;
	for (size_t i = 0; i < n; i++)
		if (c[i].result && (best == n || ranks_before(c, ret_tally, i, best)))
			best = i;
	*ret_winner = best;
	return 0;
}
