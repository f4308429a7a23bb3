/*
 * value_index_internal.h - what the files of the value index share (not for
 * use outside pipeline/values/): the index's private layout (described at
 * the top of value_index.c), the state of one build and of one column scan,
 * and the functions one file calls in another (prefix vi_).
 */
#ifndef T2S_VALUE_INDEX_INTERNAL_H
#define T2S_VALUE_INDEX_INTERNAL_H

#include "common/contract.h"
#include "pipeline/values/value_index.h"

#include "common/arena.h"
#include "pipeline/db/db.h"
#include "pipeline/text/fold.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vi_entry {
	const char *value; /* in a string block, NUL-terminated, as stored */
	int table, column;
	uint32_t hash;     /* of the normalised form */
	int next;          /* next entry in the same bucket, -1 at the end */
};

/* Value strings live in blocks whose whole capacity is counted against max_bytes. */
struct vi_block {
	struct vi_block *next;
	size_t size, used;
	char data[];
};

/*
 * Document frequencies of trigrams (in how many entries each occurs), to
 * choose which trigrams to ask FTS5 for: open addressing, one uint64_t per
 * slot, the trigram's three code points folded to 16 bits each in the top 48
 * bits (code points past U+FFFF share a few values: an estimate may be high,
 * never low) and the count, saturating, in the low 16; 0 = empty.
 */
#define TRI_DF_BITS 16
#define TRI_DF_MAX ((1u << TRI_DF_BITS) - 1)

struct value_index {
	atomic_int refs;
	struct schema *schema;
	struct arena arena; /* column info and range texts */
	struct vi_block *blocks;
	size_t block_bytes; /* sum of sizeof(block) + capacity */
	struct vi_entry *entries;
	size_t n_entries, cap_entries;
	uint64_t *tri;         /* trigram document frequencies, see TRI_DF_BITS */
	size_t tri_cap, tri_n; /* tri_cap: power of two (0 before the first value) */
	int *buckets;
	size_t n_buckets; /* power of two */
	struct value_column_info **cols; /* cols[table][column] */
	sqlite3 *fts;
	sqlite3_stmt *match_all;    /* every row matching ?1, up to ?2 */
	sqlite3_stmt *match_ranked; /* the ?2 best rows by bm25 */
	pthread_mutex_t lock;       /* guards fts and the statements after the build */
	struct value_index_stats stats;
	struct vi_cached *cache;    /* lookup answers (value_index_cache.c), NULL until the first */
	size_t cache_n, cache_hits;
	pthread_mutex_t cache_lock; /* guards cache, cache_n, cache_hits */
};

/* value_index_cache.c: lookup answers of spans up to VI_CACHE_SPAN_MAX bytes with up to VI_CACHE_MATCHES matches */
#define VI_CACHE_SLOTS 1024 /* power of two; filled to three quarters */
#define VI_CACHE_MATCHES 8
#define VI_CACHE_SPAN_MAX 64
struct vi_cached;
bool vi_cache_get(struct value_index *vi, const char *span, size_t len, double min_score, size_t max,
		  struct value_match *ret, size_t *ret_n);
void vi_cache_put(struct value_index *vi, const char *span, size_t len, double min_score, size_t max,
		  const struct value_match *m, size_t n);
/* Frees the cache and destroys its lock (value_index_unref). */
void vi_cache_free(struct value_index *vi);

/* value_index.c: folded text and trigrams shared by the build and the lookup */
uint32_t vi_fold_hash(const struct folded *f);
bool vi_folded_equal(const struct folded *a, const struct folded *b);
size_t vi_trigrams(const struct folded *f, uint64_t *out);

/* value_index.c: a new, empty index over s (every column skipped), or NULL */
struct value_index *vi_new(struct schema *s);

/* ---- the build ---- */

struct scanned {
	const char *v; /* NUL-terminated copy, NULL when longer than max_value_len or not UTF-8 */
	size_t len;    /* byte length as stored */
};

struct scan {
	struct arena tmp;
	struct scanned *rows;
	size_t n, cap;
	bool timed_out;
	bool failed;
	char *min_text, *max_text; /* range queries (in tmp) */
};

struct build {
	struct value_index *vi;
	const struct value_index_options *o;
	struct t2s_error *err;
	sqlite3_stmt *insert;
	double deadline;  /* 0: none */
	size_t limit;     /* max_bytes less what finishing the index needs */
	size_t measured;  /* bytes at the last measure */
	size_t charged;   /* estimate added since */
	bool full;        /* max_bytes reached */
	const char *stop; /* "max_build_ms" or "cancelled" once the build must stop */
	struct folded fold;         /* scratch for add_entry */
	uint64_t tri_buf[FOLD_MAX]; /* scratch for add_entry */
};

enum scan_what { SCAN_TEXT, SCAN_ANY, SCAN_NUMBER_RANGE, SCAN_DATE_RANGE };

/*
 * value_index_add.c: whether the build must stop now (cancelled, or past
 * max_build_ms: b->stop says which); adding a column's scanned values to the
 * index; the document frequency of a trigram (0 when absent); the memory the
 * index holds (during the build, with the bucket array it will need), the
 * bucket count for n entries, and measuring the index again (the budget's
 * estimates start over).
 */
bool vi_should_stop(struct build *b);
T2S_MUST_CHECK
int vi_index_values(struct build *b, int table, int column, struct value_column_info *info, const struct scan *sc);
uint32_t vi_tri_df(const struct value_index *vi, uint64_t tri);
size_t vi_index_bytes(const struct value_index *vi);
size_t vi_bucket_count(size_t n_entries);
void vi_remeasure(struct build *b);

/* value_index_scan.c: the bounded scan of one column into sc, and freeing sc's contents. */
void vi_scan_release(struct scan *sc);
T2S_MUST_CHECK
int vi_scan_column(struct build *b, struct db_conn *c, const struct schema_table *t, const struct schema_column *col,
		   enum scan_what what, struct scan *sc);

/*
 * value_index_columns.c: deciding and building one column's part of the
 * index (skipped, indexed or ranged); marking a column skipped; a number as
 * printed by the database or written in a question.
 */
T2S_MUST_CHECK
int vi_do_column(struct build *b, struct db_conn *c, int table, int column);
void vi_skip(struct value_column_info *info, enum value_skip_reason why);
bool vi_parse_number(const char *s, double *ret);

#endif
