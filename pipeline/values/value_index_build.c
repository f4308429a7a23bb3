/*
 * value_index_build.c - value_index_build (see value_index.h), the driver
 * of a build: the options, the walk over the schema's columns (each one
 * decided and built by value_index_columns.c), and finishing the index
 * (buckets, lookup statements, statistics).  Adding values under the memory
 * and time budget is value_index_add.c's, which the column steps call too.
 */
#include "pipeline/values/value_index_internal.h"

#include "common/arena.h"
#include "common/clock.h"

#include <stdlib.h>

#define FINISH_RESERVE ((size_t)32 << 10) /* kept free for the lookup statements and the final merge */

/* ---- finishing ---- */

static int open_fts(struct value_index *vi, sqlite3_stmt **ret_insert, struct t2s_error *err)
{
	if (sqlite3_open_v2(":memory:", &vi->fts, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "cannot open the value index database");
	if (sqlite3_exec(vi->fts,
			 "PRAGMA journal_mode = OFF; PRAGMA auto_vacuum = FULL; "
			 "CREATE VIRTUAL TABLE v USING fts5(value, tokenize = 'trigram', content = '', detail = 'none')",
			 NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(vi->fts, "INSERT INTO v(rowid, value) VALUES (?1, ?2)", -1, ret_insert, NULL) != SQLITE_OK)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "cannot create the FTS5 trigram index: %s",
				     sqlite3_errmsg(vi->fts));
	return 0;
}

static int finish(struct value_index *vi, struct t2s_error *err)
{
	/* One segment: smaller and faster to query. */
	if (vi->n_entries > 0 &&
	    sqlite3_exec(vi->fts, "INSERT INTO v(v) VALUES ('optimize')", NULL, NULL, NULL) != SQLITE_OK)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "cannot optimise the value index: %s", sqlite3_errmsg(vi->fts));
	/*
	 * bm25(v) rather than FTS5's "ORDER BY rank", which prepares a new
	 * internal statement for every query.
	 */
	if (sqlite3_prepare_v3(vi->fts, "SELECT rowid FROM v WHERE v MATCH ?1 LIMIT ?2", -1,
			       SQLITE_PREPARE_PERSISTENT, &vi->match_all, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(vi->fts, "SELECT rowid FROM v WHERE v MATCH ?1 ORDER BY bm25(v) LIMIT ?2", -1,
			       SQLITE_PREPARE_PERSISTENT, &vi->match_ranked, NULL) != SQLITE_OK)
		return t2s_error_set(err, T2S_ERR_INTERNAL, "cannot prepare the value lookup: %s", sqlite3_errmsg(vi->fts));
	size_t nb = vi_bucket_count(vi->n_entries);
	vi->buckets = malloc(nb * sizeof(*vi->buckets));
	if (!vi->buckets)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	vi->n_buckets = nb;
	for (size_t i = 0; i < nb; i++)
		vi->buckets[i] = -1;
	for (size_t i = vi->n_entries; i-- > 0;) {
		struct vi_entry *e = &vi->entries[i];
		size_t slot = e->hash & (nb - 1);
		e->next = vi->buckets[slot];
		vi->buckets[slot] = (int)i;
	}
	return 0;
}

static void tally(struct value_index *vi)
{
	struct value_index_stats *st = &vi->stats;
	for (size_t t = 0; t < vi->schema->n_tables; t++)
		for (size_t c = 0; c < vi->schema->tables[t].n_columns; c++) {
			const struct value_column_info *info = &vi->cols[t][c];
			if (info->state == VALUE_COLUMN_INDEXED) {
				st->columns_indexed++;
				st->columns_truncated += info->truncated;
			} else if (info->state == VALUE_COLUMN_RANGE) {
				st->columns_ranged++;
			} else {
				st->columns_skipped++;
				st->skipped[info->skip]++;
			}
		}
	st->values = vi->n_entries;
	st->bytes = vi_index_bytes(vi);
}

/* ---- value_index_build ---- */

void value_index_options_init(struct value_index_options *o)
{
	*o = (struct value_index_options){
		.max_values_per_column = 10000,
		.max_value_len = 100,
		.max_bytes = (size_t)64 << 20,
		.column_timeout_ms = 2000,
		.max_rows_scanned = 200000,
		.max_build_ms = 60000,
		.long_text_mean_len = 60,
		.long_text_share = 0.1,
		.skip_ids = true,
		.skip_urls_emails = true,
		.skip_long_text = true,
		.skip_views = false,
	};
}

/* Unset (zero or negative) bounds fall back to the defaults. */
static void effective_options(const struct value_index_options *in, struct value_index_options *o)
{
	struct value_index_options d;
	value_index_options_init(&d);
	*o = in ? *in : d;
	if (o->max_values_per_column <= 0)
		o->max_values_per_column = d.max_values_per_column;
	if (o->max_value_len <= 0)
		o->max_value_len = d.max_value_len;
	if (o->max_bytes == 0)
		o->max_bytes = d.max_bytes;
	if (o->column_timeout_ms <= 0)
		o->column_timeout_ms = d.column_timeout_ms;
	if (o->max_rows_scanned <= 0)
		o->max_rows_scanned = d.max_rows_scanned;
	if (o->long_text_mean_len <= 0)
		o->long_text_mean_len = d.long_text_mean_len;
	if (o->long_text_share < 0)
		o->long_text_share = d.long_text_share;
}

int value_index_build(struct catalog_db *db, struct schema *s, const struct value_index_options *opts,
		      struct value_index **ret, struct t2s_error *err)
{
	struct value_index_options o;
	effective_options(opts, &o);
	double start = clock_now_ms();
	struct value_index *vi = vi_new(s);
	if (!vi)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	struct build b = {.vi = vi, .o = &o, .err = err,
			  .limit = o.max_bytes > 2 * FINISH_RESERVE ? o.max_bytes - FINISH_RESERVE : o.max_bytes / 2,
			  .deadline = o.max_build_ms > 0 ? start + (double)o.max_build_ms : 0};
	int rc = open_fts(vi, &b.insert, err);
	if (rc == 0)
		vi_remeasure(&b);
	for (size_t t = 0; rc == 0 && t < s->n_tables; t++) {
		struct db_conn *c = NULL;
		if (!vi_should_stop(&b))
			rc = db_pool_acquire(&db->pool, &c, err);
		for (size_t col = 0; rc == 0 && col < s->tables[t].n_columns; col++) {
			if (c)
				rc = vi_do_column(&b, c, (int)t, (int)col);
			else
				vi_skip(&vi->cols[t][col], VALUE_SKIP_BUDGET);
		}
		if (c)
			db_pool_put(&db->pool, c, rc == -T2S_ERR_UNAVAILABLE);
	}
	sqlite3_finalize(b.insert);
	if (rc == 0)
		rc = finish(vi, err);
	if (rc < 0) {
		value_index_unref(vi);
		return rc;
	}
	tally(vi);
	vi->stats.truncated = b.full || b.stop;
	vi->stats.truncated_by = b.full ? "max_bytes" : b.stop;
	vi->stats.build_ms = clock_now_ms() - start;
	*ret = vi;
	return 0;
}
