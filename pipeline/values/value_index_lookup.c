/*
 * value_index_lookup.c - matching question spans against the value index
 * (value_index_lookup, value_index_range_columns; see value_index.h):
 * exact and normalised matches through the hash buckets, fuzzy ones through
 * a few rare trigrams asked of FTS5 and scored here.
 */
#include "pipeline/values/value_index_internal.h"

#include "pipeline/text/dates.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FTS_UNRANKED_MAX 256      /* up to this many postings: take every matching row, unranked */
#define FTS_RANKED 64             /* beyond: the best rows by bm25 */
#define MAX_QUERY_TRIGRAMS 4      /* each OR'ed phrase costs FTS5 ~5 us; see choose_trigrams */
#define FUZZY_MIN_SHARE 0.5       /* fuzzy candidates share at least half of the span's trigrams */
#define FUZZY_MAX_POSTINGS 4096   /* beyond this the span is ordinary text: no fuzzy query */
#define MAX_LOOKUP_CANDIDATES (FTS_UNRANKED_MAX + 64)

/* ---- similarity ---- */

static double jaro_winkler(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
	if (na == 0 || nb == 0)
		return na == nb ? 1.0 : 0.0;
	bool am[FOLD_MAX] = {false}, bm[FOLD_MAX] = {false};
	size_t window = (na > nb ? na : nb) / 2;
	window = window > 0 ? window - 1 : 0;
	size_t matches = 0;
	for (size_t i = 0; i < na; i++) {
		size_t lo = i > window ? i - window : 0, hi = i + window + 1 < nb ? i + window + 1 : nb;
		for (size_t j = lo; j < hi; j++)
			if (!bm[j] && a[i] == b[j]) {
				am[i] = bm[j] = true;
				matches++;
				break;
			}
	}
	if (matches == 0)
		return 0.0;
	size_t t = 0, k = 0;
	for (size_t i = 0; i < na; i++) {
		if (!am[i])
			continue;
		while (!bm[k])
			k++;
		t += a[i] != b[k];
		k++;
	}
	double m = (double)matches;
	double jaro = (m / (double)na + m / (double)nb + (m - (double)t / 2.0) / m) / 3.0;
	size_t prefix = 0;
	while (prefix < 4 && prefix < na && prefix < nb && a[prefix] == b[prefix])
		prefix++;
	return jaro + (double)prefix * 0.1 * (1.0 - jaro);
}

static double dice(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
	if (na == 0 || nb == 0)
		return 0.0;
	size_t i = 0, j = 0, common = 0;
	while (i < na && j < nb) {
		if (a[i] == b[j]) {
			common++;
			i++;
			j++;
		} else if (a[i] < b[j]) {
			i++;
		} else {
			j++;
		}
	}
	return 2.0 * (double)common / (double)(na + nb);
}

/* ---- lookup ---- */

struct candidate {
	int entry;
	double score;
	const char *how;
};

struct lookup {
	const char *span; /* trimmed */
	size_t span_len;
	struct folded key;
	uint64_t key_tri[FOLD_MAX];
	size_t n_key_tri;
	struct folded tmp;
	uint64_t tmp_tri[FOLD_MAX];
	struct candidate cand[MAX_LOOKUP_CANDIDATES];
	size_t n_cand;
};

static bool have_candidate(const struct lookup *l, int entry)
{
	for (size_t i = 0; i < l->n_cand; i++)
		if (l->cand[i].entry == entry)
			return true;
	return false;
}

static void add_candidate(struct lookup *l, int entry, double score, const char *how)
{
	if (l->n_cand < MAX_LOOKUP_CANDIDATES)
		l->cand[l->n_cand++] = (struct candidate){entry, score, how};
}

static void exact_candidates(struct value_index *vi, struct lookup *l)
{
	uint32_t h = vi_fold_hash(&l->key);
	for (int i = vi->buckets[h & (vi->n_buckets - 1)]; i >= 0; i = vi->entries[i].next) {
		const struct vi_entry *e = &vi->entries[i];
		if (e->hash != h)
			continue;
		size_t len = strlen(e->value);
		fold_text(e->value, len, &l->tmp);
		if (!vi_folded_equal(&l->tmp, &l->key))
			continue;
		if (len == l->span_len && memcmp(e->value, l->span, len) == 0)
			add_candidate(l, i, 1.0, "exact");
		else if (fold_equal_but_case(e->value, len, l->span, l->span_len))
			add_candidate(l, i, 0.98, "case");
		else
			add_candidate(l, i, 0.96, "normalized");
	}
}

static size_t put_utf8(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xC0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xE0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		out[2] = (char)(0x80 | (c & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3F));
	out[3] = (char)(0x80 | (c & 0x3F));
	return 4;
}

/* FTS5 query "t1" OR "t2" ... of the n trigram codes in tri (each phrase one trigram, quotes doubled). */
static void match_expression(const uint64_t *tri, size_t n, char *buf)
{
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		if (i > 0) {
			memcpy(buf + len, " OR ", 4);
			len += 4;
		}
		buf[len++] = '"';
		for (int k = 2; k >= 0; k--) {
			uint32_t c = (uint32_t)(tri[i] >> (21 * k)) & 0x1FFFFF;
			if (c == '"')
				buf[len++] = '"';
			len += put_utf8(buf + len, c);
		}
		buf[len++] = '"';
	}
	buf[len] = '\0';
}

struct rare {
	uint64_t tri;
	uint32_t df;
};

static int cmp_rare(const void *x, const void *y)
{
	const struct rare *a = x, *b = y;
	return a->df < b->df ? -1 : a->df > b->df;
}

/*
 * Which trigrams to ask FTS5 for (prefix filtering): a value sharing at
 * least `need` = ceil(FUZZY_MIN_SHARE x n) of the span's n trigrams shares
 * `need` of those present in the index at all, so it contains one of the
 * (present - need + 1) rarest of them.  That set is cut to the
 * MAX_QUERY_TRIGRAMS rarest: a value sharing half of a long span's trigrams
 * while missing all of its rarest ones is a poor match anyway, and every
 * phrase of the query costs time.  Returns how many were chosen into
 * out (0: no value can qualify, or the rarest trigrams are so common that the
 * span is ordinary text rather than a value: their postings exceed
 * FUZZY_MAX_POSTINGS), and their total postings in *ret_postings.
 */
static size_t choose_trigrams(const struct value_index *vi, const struct lookup *l, uint64_t *out,
			      size_t *ret_postings)
{
	struct rare r[FOLD_MAX];
	size_t present = 0, need = (size_t)ceil(FUZZY_MIN_SHARE * (double)l->n_key_tri);
	for (size_t i = 0; i < l->n_key_tri; i++) {
		uint32_t df = vi_tri_df(vi, l->key_tri[i]);
		if (df > 0)
			r[present++] = (struct rare){l->key_tri[i], df};
	}
	if (need == 0 || present < need)
		return 0;
	qsort(r, present, sizeof(r[0]), cmp_rare);
	size_t k = present - need + 1, postings = 0;
	if (k > MAX_QUERY_TRIGRAMS)
		k = MAX_QUERY_TRIGRAMS;
	for (size_t i = 0; i < k; i++) {
		postings += r[i].df;
		out[i] = r[i].tri;
	}
	*ret_postings = postings;
	return postings > FUZZY_MAX_POSTINGS ? 0 : k;
}

/*
 * Score one candidate: 0 unless it shares at least `need` of the span's
 * trigrams (the FUZZY_MIN_SHARE rule that choose_trigrams relies on), else
 * 0.95 x max(Jaro-Winkler, Dice).  An upper bound from the lengths skips the
 * quadratic Jaro-Winkler when it cannot beat Dice: with m <= min(na, nb)
 * matches, jaro <= (m/na + m/nb + 1) / 3, and Winkler adds at most
 * 0.4 x (1 - jaro).
 */
static double fuzzy_score(struct lookup *l, const char *v, size_t need)
{
	fold_text(v, strlen(v), &l->tmp);
	size_t nt = vi_trigrams(&l->tmp, l->tmp_tri);
	size_t na = l->key.n, nb = l->tmp.n;
	double dc = dice(l->key_tri, l->n_key_tri, l->tmp_tri, nt);
	if (dc * (double)(l->n_key_tri + nt) / 2.0 + 0.5 < (double)need)
		return 0.0;
	double m = (double)(na < nb ? na : nb);
	double jaro_max = (m / (double)na + m / (double)nb + 1.0) / 3.0;
	double best = dc;
	if (jaro_max + 0.4 * (1.0 - jaro_max) > best) {
		double jw = jaro_winkler(l->key.cp, na, l->tmp.cp, nb);
		if (jw > best)
			best = jw;
	}
	return 0.95 * best;
}

static int fuzzy_candidates(struct value_index *vi, struct lookup *l, double min_score, struct t2s_error *err)
{
	uint64_t chosen[MAX_QUERY_TRIGRAMS];
	size_t postings = 0, need = (size_t)ceil(FUZZY_MIN_SHARE * (double)l->n_key_tri);
	size_t k = choose_trigrams(vi, l, chosen, &postings);
	if (k == 0)
		return 0;
	char expr[MAX_QUERY_TRIGRAMS * 24 + 8];
	match_expression(chosen, k, expr);
	int rowids[FTS_UNRANKED_MAX];
	int limit = postings <= FTS_UNRANKED_MAX ? FTS_UNRANKED_MAX : FTS_RANKED;
	size_t n = 0;
	pthread_mutex_lock(&vi->lock);
	sqlite3_stmt *st = postings <= FTS_UNRANKED_MAX ? vi->match_all : vi->match_ranked;
	sqlite3_bind_text(st, 1, expr, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, limit);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < (size_t)limit)
		rowids[n++] = (int)sqlite3_column_int64(st, 0);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		t2s_error_set(err, T2S_ERR_INTERNAL, "value lookup failed: %s", sqlite3_errmsg(vi->fts));
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	pthread_mutex_unlock(&vi->lock);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return -T2S_ERR_INTERNAL;
	for (size_t i = 0; i < n; i++) {
		int e = rowids[i] - 1;
		if (e < 0 || (size_t)e >= vi->n_entries || have_candidate(l, e))
			continue;
		double score = fuzzy_score(l, vi->entries[e].value, need);
		if (score >= min_score)
			add_candidate(l, e, score, "fuzzy");
	}
	return 0;
}

static int cmp_candidates(const void *x, const void *y, void *vi_v)
{
	const struct value_index *vi = vi_v;
	const struct candidate *a = x, *b = y;
	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	const struct vi_entry *ea = &vi->entries[a->entry], *eb = &vi->entries[b->entry];
	if (ea->table != eb->table)
		return ea->table < eb->table ? -1 : 1;
	if (ea->column != eb->column)
		return ea->column < eb->column ? -1 : 1;
	return a->entry < b->entry ? -1 : a->entry > b->entry;
}

int value_index_lookup(struct value_index *vi, const char *span, double min_score, size_t max,
		       struct value_match *ret, size_t *ret_n, struct t2s_error *err)
{
	if (!span)
		return t2s_error_set(err, T2S_ERR_INVALID, "no span to look up");
	while (isspace((unsigned char)*span))
		span++;
	size_t len = strlen(span);
	while (len > 0 && isspace((unsigned char)span[len - 1]))
		len--;
	if (vi_cache_get(vi, span, len, min_score, max, ret, ret_n))
		return 0;
	struct lookup *l = malloc(sizeof(*l));
	if (!l)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	l->span = span;
	l->span_len = len;
	l->n_cand = 0;
	fold_text(span, len, &l->key);
	int rc = 0;
	if (l->key.n > 0 && vi->n_entries > 0) {
		exact_candidates(vi, l);
		if (l->key.n >= 3 && min_score <= 0.95) { /* fuzzy scores never exceed 0.95 */
			l->n_key_tri = vi_trigrams(&l->key, l->key_tri);
			rc = fuzzy_candidates(vi, l, min_score, err);
		}
	}
	if (rc < 0) {
		free(l);
		return rc;
	}
	qsort_r(l->cand, l->n_cand, sizeof(l->cand[0]), cmp_candidates, vi);
	size_t n = 0;
	for (size_t i = 0; i < l->n_cand && n < max; i++) {
		if (l->cand[i].score < min_score)
			break;
		const struct vi_entry *e = &vi->entries[l->cand[i].entry];
		ret[n++] = (struct value_match){.table = e->table, .column = e->column, .value = e->value,
						.score = l->cand[i].score, .how = l->cand[i].how};
	}
	free(l);
	vi_cache_put(vi, span, len, min_score, max, ret, n);
	*ret_n = n;
	return 0;
}

int value_index_range_columns(struct value_index *vi, const char *text, struct value_column_ref *ret, size_t max,
			      size_t *ret_n)
{
	char buf[128];
	if (!text)
		return -T2S_ERR_INVALID;
	while (isspace((unsigned char)*text))
		text++;
	size_t len = strlen(text);
	while (len > 0 && isspace((unsigned char)text[len - 1]))
		len--;
	if (len == 0 || len >= sizeof(buf))
		return -T2S_ERR_INVALID;
	memcpy(buf, text, len);
	buf[len] = '\0';
	double x = 0;
	bool is_number = vi_parse_number(buf, &x);
	bool is_year = is_number && x >= 1000 && x <= 2999 && x == floor(x);
	struct date_range days = {0, 0};
	bool is_date = is_year ? date_range_of((long)x, 0, 0, &days)
			       : !is_number && date_parse(buf, len, DATE_QUESTION_FORMS | DATE_WITH_TIME, &days);
	if (!is_number && !is_date)
		return -T2S_ERR_INVALID;
	size_t n = 0;
	for (size_t t = 0; t < vi->schema->n_tables; t++)
		for (size_t c = 0; c < vi->schema->tables[t].n_columns && n < max; c++) {
			const struct value_column_info *info = &vi->cols[t][c];
			if (!info->has_range)
				continue;
			bool hit = (info->kind == VALUE_KIND_NUMBER && is_number && x >= info->min && x <= info->max) ||
				   (info->kind == VALUE_KIND_DATE && is_date && days.last_day >= info->min && days.first_day <= info->max);
			if (hit)
				ret[n++] = (struct value_column_ref){(int)t, (int)c};
		}
	*ret_n = n;
	return 0;
}
