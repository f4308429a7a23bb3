/*
 * value_index_add.c - adding values to a value index under construction
 * (value_index_internal.h): the memory budget (measured after every batch,
 * charged an estimate per value in between) and the time budget, the string
 * blocks, the FTS5 rows and the trigram frequencies.  The bottom of the
 * build: the driver (value_index_build.c) and the column steps
 * (value_index_columns.c, value_index_scan.c) call it; it calls neither.
 */
#include "pipeline/values/value_index_internal.h"

#include "common/clock.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define INSERT_BATCH 256          /* values per private transaction during the build */

#define BLOCK_SIZE ((size_t)64 << 10) /* string blocks start at SMALL_BLOCK_SIZE and double up to this */
#define SMALL_BLOCK_SIZE ((size_t)4 << 10)

/* ---- memory and time budget ---- */

static size_t fts_bytes(sqlite3 *db)
{
	static const int ops[] = {SQLITE_DBSTATUS_CACHE_USED, SQLITE_DBSTATUS_SCHEMA_USED, SQLITE_DBSTATUS_STMT_USED};
	size_t total = 0;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		int cur = 0, hi = 0;
		if (sqlite3_db_status(db, ops[i], &cur, &hi, 0) == SQLITE_OK && cur > 0)
			total += (size_t)cur;
	}
	return total;
}

size_t vi_bucket_count(size_t n_entries)
{
	size_t nb = 16;
	while (nb < n_entries)
		nb *= 2;
	return nb;
}

/* Memory held by the index; during the build, with the bucket array it will need. */
size_t vi_index_bytes(const struct value_index *vi)
{
	size_t buckets = vi->buckets ? vi->n_buckets : vi_bucket_count(vi->n_entries);
	return sizeof(*vi) + fts_bytes(vi->fts) + vi->arena.used_total + vi->block_bytes +
	       vi->cap_entries * sizeof(*vi->entries) + buckets * sizeof(*vi->buckets) +
	       vi->tri_cap * sizeof(*vi->tri);
}

/*
 * What one value of len bytes may add besides its string block and entry
 * array growth (charged when they happen): its share of the bucket array
 * (at most two slots) and its FTS5 postings (a few bytes per trigram, the
 * row's size record, b-tree overhead: measured at 1-3 bytes per byte of
 * text, charged at 6, plus 64).
 */
static size_t value_cost(size_t len)
{
	return 2 * sizeof(int) + 6 * len + 64;
}

void vi_remeasure(struct build *b)
{
	b->measured = vi_index_bytes(b->vi);
	b->charged = 0;
}

/* Charge bytes against max_bytes; false (and the index is full) when they do not fit. */
static bool reserve(struct build *b, size_t bytes)
{
	if (b->measured + b->charged + bytes > b->limit) {
		b->full = true;
		return false;
	}
	b->charged += bytes;
	return true;
}

/* Copy of v[0..len) in a string block; NULL when out of budget (b->full) or memory. */
static const char *store_string(struct build *b, const char *v, size_t len)
{
	struct value_index *vi = b->vi;
	struct vi_block *blk = vi->blocks;
	if (!blk || blk->size - blk->used < len + 1) {
		size_t size = blk && blk->size < BLOCK_SIZE ? 2 * blk->size : blk ? BLOCK_SIZE : SMALL_BLOCK_SIZE;
		if (size < len + 1)
			size = len + 1;
		if (!reserve(b, sizeof(*blk) + size)) {
			b->full = false;
			size = len + 1 > SMALL_BLOCK_SIZE ? len + 1 : SMALL_BLOCK_SIZE;
			if (!reserve(b, sizeof(*blk) + size))
				return NULL;
		}
		blk = malloc(sizeof(*blk) + size);
		if (!blk)
			return NULL;
		blk->size = size;
		blk->used = 0;
		blk->next = vi->blocks;
		vi->blocks = blk;
		vi->block_bytes += sizeof(*blk) + size;
	}
	char *out = blk->data + blk->used;
	memcpy(out, v, len);
	out[len] = '\0';
	blk->used += len + 1;
	return out;
}

/* Room for one more entry, growing the array by half (or by one batch when the budget is tight). */
static int grow_entries(struct build *b)
{
	struct value_index *vi = b->vi;
	if (vi->n_entries < vi->cap_entries)
		return 0;
	size_t add = vi->cap_entries / 2 > INSERT_BATCH ? vi->cap_entries / 2 : INSERT_BATCH;
	if (!reserve(b, add * sizeof(*vi->entries))) {
		b->full = false;
		add = INSERT_BATCH;
		if (!reserve(b, add * sizeof(*vi->entries)))
			return 1;
	}
	struct vi_entry *e = realloc(vi->entries, (vi->cap_entries + add) * sizeof(*e));
	if (!e)
		return -T2S_ERR_NOMEM;
	vi->entries = e;
	vi->cap_entries += add;
	return 0;
}

bool vi_should_stop(struct build *b)
{
	if (b->stop)
		return true;
	if (b->o->cancel && atomic_load(b->o->cancel))
		b->stop = "cancelled";
	else if (b->deadline > 0 && clock_now_ms() >= b->deadline)
		b->stop = "max_build_ms";
	return b->stop != NULL;
}

/* ---- adding values ---- */

static uint64_t tri_key(uint64_t tri)
{
	uint64_t key = 0;
	for (int k = 2; k >= 0; k--) {
		uint32_t c = (uint32_t)(tri >> (21 * k)) & 0x1FFFFF;
		key = (key << 16) | (c <= 0xFFFF ? c : 0xE000 + c % 0x1000);
	}
	return key << TRI_DF_BITS;
}

static size_t tri_slot_of(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 21) & (cap - 1);
}

uint32_t vi_tri_df(const struct value_index *vi, uint64_t tri)
{
	if (vi->tri_cap == 0)
		return 0;
	uint64_t key = tri_key(tri);
	for (size_t i = tri_slot_of(key, vi->tri_cap);; i = (i + 1) & (vi->tri_cap - 1)) {
		if ((vi->tri[i] & ~(uint64_t)TRI_DF_MAX) == key)
			return (uint32_t)(vi->tri[i] & TRI_DF_MAX);
		if (vi->tri[i] == 0)
			return 0;
	}
}

/* Room for n more trigrams, the table at most 3/4 full: 0, 1 when out of budget, -T2S_ERR_NOMEM. */
static int tri_reserve(struct build *b, size_t n)
{
	struct value_index *vi = b->vi;
	size_t cap = vi->tri_cap ? vi->tri_cap : 256;
	while (4 * (vi->tri_n + n) > 3 * cap)
		cap *= 2;
	if (cap == vi->tri_cap)
		return 0;
	if (!reserve(b, cap * sizeof(*vi->tri)))
		return 1;
	uint64_t *t = calloc(cap, sizeof(*t));
	if (!t)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < vi->tri_cap; i++) {
		if (vi->tri[i] == 0)
			continue;
		size_t j = tri_slot_of(vi->tri[i] & ~(uint64_t)TRI_DF_MAX, cap);
		while (t[j])
			j = (j + 1) & (cap - 1);
		t[j] = vi->tri[i];
	}
	free(vi->tri);
	vi->tri = t;
	vi->tri_cap = cap;
	return 0;
}

/* Count the distinct trigrams of one value (room made by tri_reserve). */
static void tri_count(struct value_index *vi, const uint64_t *tri, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t key = tri_key(tri[k]);
		size_t i = tri_slot_of(key, vi->tri_cap);
		while (vi->tri[i] && (vi->tri[i] & ~(uint64_t)TRI_DF_MAX) != key)
			i = (i + 1) & (vi->tri_cap - 1);
		if (!vi->tri[i]) {
			vi->tri[i] = key;
			vi->tri_n++;
		}
		if ((vi->tri[i] & TRI_DF_MAX) < TRI_DF_MAX)
			vi->tri[i]++;
	}
}

/* Add one value: 0, 1 when the budget is exhausted (b->full), or -T2S_ERR_*. */
static int add_entry(struct build *b, int table, int column, const char *v, size_t len)
{
	struct value_index *vi = b->vi;
	if (!reserve(b, value_cost(len)))
		return 1;
	int rc = grow_entries(b);
	if (rc != 0)
		return rc;
	struct vi_entry *e = &vi->entries[vi->n_entries];
	e->value = store_string(b, v, len);
	if (!e->value)
		return b->full ? 1 : -T2S_ERR_NOMEM;
	fold_text(v, len, &b->fold);
	e->hash = vi_fold_hash(&b->fold);
	size_t nt = vi_trigrams(&b->fold, b->tri_buf);
	rc = tri_reserve(b, nt);
	if (rc != 0)
		return rc;
	tri_count(vi, b->tri_buf, nt);
	e->table = table;
	e->column = column;
	e->next = -1;
	sqlite3_bind_int64(b->insert, 1, (sqlite3_int64)vi->n_entries + 1);
	sqlite3_bind_text(b->insert, 2, e->value, (int)len, SQLITE_STATIC);
	rc = sqlite3_step(b->insert);
	sqlite3_reset(b->insert);
	if (rc != SQLITE_DONE)
		return rc == SQLITE_NOMEM ? -T2S_ERR_NOMEM : -T2S_ERR_INTERNAL;
	vi->n_entries++;
	return 0;
}

/*
 * Add the column's usable values, most frequent first, while the memory
 * budget allows: in batches of INSERT_BATCH, each its own transaction, so
 * that the index is measured again (pending FTS5 data flushed) at least
 * every INSERT_BATCH values and estimates only cover the current batch.
 */
int vi_index_values(struct build *b, int table, int column, struct value_column_info *info, const struct scan *sc)
{
	size_t keep = sc->n;
	if (keep > (size_t)b->o->max_values_per_column) {
		keep = (size_t)b->o->max_values_per_column;
		info->truncated = true;
		info->truncated_by = "max_values_per_column";
	}
	int rc = 0;
	bool letters = keep > 0 && !info->truncated;
	for (size_t i = 0; i < keep && letters; i++)
		letters = sc->rows[i].v && sc->rows[i].len == 1 && isalpha((unsigned char)sc->rows[i].v[0]);
	for (size_t i = 0; i < keep && rc == 0 && !b->full;) {
		if (sqlite3_exec(b->vi->fts, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
			return -T2S_ERR_INTERNAL;
		for (size_t end = i + INSERT_BATCH; i < keep && i < end && rc == 0; i++) {
			const struct scanned *r = &sc->rows[i];
			if (!r->v || r->len == 0)
				continue;
			rc = add_entry(b, table, column, r->v, r->len);
			if (rc == 0)
				info->n_values++;
		}
		if (rc == 1) {
			info->truncated = true;
			info->truncated_by = "max_bytes";
			rc = 0;
		}
		if (sqlite3_exec(b->vi->fts, "COMMIT", NULL, NULL, NULL) != SQLITE_OK && rc == 0)
			rc = -T2S_ERR_INTERNAL;
		if (rc == 0)
			vi_remeasure(b);
	}
	info->single_letters = rc == 0 && letters && !info->truncated && info->n_values == keep;
	return rc;
}
