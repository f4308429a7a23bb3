/*
 * value_index.c - the value index (see value_index.h): its layout, the
 * helpers that its build and its lookup share (folded text, trigrams), and
 * its life (creation, references, accessors).
 *
 * Layout: every kept value is one entry (table, column, value copied into
 * a string block, hash of its normalised form).  Entry i is row i + 1 of
 * the contentless FTS5 table `v` in the private in-memory SQLite database,
 * and sits in a chained hash table (buckets[], entry.next) keyed on the
 * normalised form, for exact and short lookups.
 *
 * Memory is measured, not guessed, after every batch of values: the private
 * database's page cache, schema and statement memory (sqlite3_db_status)
 * plus the string blocks, arrays and arena (the arena by bytes handed out;
 * it only holds column info and range ends).  Within a batch
 * each value is charged a conservative estimate before it is added, so the
 * total never passes max_bytes; FTS5's pending-term buffer is flushed by the
 * commit that ends each batch, so it is empty whenever the index is measured
 * or published.
 *
 * Fuzzy lookups ask FTS5 only for a few rare trigrams of the span (prefix
 * filtering on trigram document frequencies kept in a small hash table), so
 * a query touches short posting lists; candidates are then scored in
 * value_index_lookup.c.
 *
 * Files (shared layout and declarations in value_index_internal.h):
 *   value_index.c          this file;
 *   value_index_build.c    value_index_build: the memory budget, adding
 *                          values (string blocks, FTS5 rows, trigram
 *                          frequencies), finishing the index;
 *   value_index_columns.c  which columns to index and how: the column rules,
 *                          the judgement of scanned values, ranges;
 *   value_index_scan.c     reading a column's values from the database;
 *   value_index_lookup.c   matching question spans against the index.
 */
#include "pipeline/values/value_index_internal.h"

#include "common/hash.h"

#include <stdlib.h>
#include <string.h>

/* ---- folded text ---- */

/* FNV-1a of the code points' bytes, folded to 32 bits for the slot tables. */
uint32_t vi_fold_hash(const struct folded *f)
{
	uint64_t h = hash_fnv1a64(HASH_FNV1A64_SEED, f->cp, f->n * sizeof(f->cp[0]));
	return (uint32_t)(h ^ (h >> 32));
}

bool vi_folded_equal(const struct folded *a, const struct folded *b)
{
	return a->n == b->n && memcmp(a->cp, b->cp, a->n * sizeof(a->cp[0])) == 0;
}

/* ---- trigrams ---- */

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* Sorted distinct trigrams of f into out (at most FOLD_MAX); returns the count. */
size_t vi_trigrams(const struct folded *f, uint64_t *out)
{
	if (f->n < 3)
		return 0;
	size_t n = 0;
	for (size_t i = 0; i + 2 < f->n; i++)
		out[n++] = ((uint64_t)f->cp[i] << 42) | ((uint64_t)f->cp[i + 1] << 21) | f->cp[i + 2];
	if (n > 48) {
		qsort(out, n, sizeof(*out), cmp_u64);
	} else {
		for (size_t i = 1; i < n; i++) {
			uint64_t x = out[i];
			size_t j = i;
			for (; j > 0 && out[j - 1] > x; j--)
				out[j] = out[j - 1];
			out[j] = x;
		}
	}
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (u == 0 || out[u - 1] != out[i])
			out[u++] = out[i];
	return u;
}

/* ---- life ---- */

struct value_index *vi_new(struct schema *s)
{
	struct value_index *vi = calloc(1, sizeof(*vi));
	if (!vi)
		return NULL;
	atomic_init(&vi->refs, 1);
	arena_init(&vi->arena);
	pthread_mutex_init(&vi->lock, NULL);
	pthread_mutex_init(&vi->cache_lock, NULL);
	vi->schema = schema_ref(s);
	vi->cols = arena_calloc(&vi->arena, s->n_tables ? s->n_tables : 1, sizeof(*vi->cols));
	for (size_t t = 0; vi->cols && t < s->n_tables; t++) {
		size_t n = s->tables[t].n_columns;
		vi->cols[t] = arena_calloc(&vi->arena, n ? n : 1, sizeof(**vi->cols));
		if (!vi->cols[t])
			vi->cols = NULL;
		for (size_t c = 0; vi->cols && c < n; c++)
			vi->cols[t][c].state = VALUE_COLUMN_SKIPPED;
	}
	if (!vi->cols)
		return value_index_unref(vi);
	return vi;
}

struct value_index *value_index_ref(struct value_index *vi)
{
	if (vi)
		atomic_fetch_add(&vi->refs, 1);
	return vi;
}

struct value_index *value_index_unref(struct value_index *vi)
{
	if (!vi || atomic_fetch_sub(&vi->refs, 1) != 1)
		return NULL;
	sqlite3_finalize(vi->match_all);
	sqlite3_finalize(vi->match_ranked);
	sqlite3_close_v2(vi->fts);
	pthread_mutex_destroy(&vi->lock);
	vi_cache_free(vi);
	free(vi->entries);
	free(vi->buckets);
	free(vi->tri);
	while (vi->blocks) {
		struct vi_block *next = vi->blocks->next;
		free(vi->blocks);
		vi->blocks = next;
	}
	arena_release(&vi->arena);
	schema_unref(vi->schema);
	free(vi);
	return NULL;
}

const struct schema *value_index_schema(const struct value_index *vi)
{
	return vi->schema;
}

const struct value_index_stats *value_index_get_stats(const struct value_index *vi)
{
	return &vi->stats;
}

const struct value_column_info *value_index_column(const struct value_index *vi, int table, int column)
{
	if (table < 0 || (size_t)table >= vi->schema->n_tables || column < 0 ||
	    (size_t)column >= vi->schema->tables[table].n_columns)
		return NULL;
	return &vi->cols[table][column];
}
