/*
 * value_index.c - building and querying the value index (see value_index.h).
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
 * a query touches short posting lists; candidates are then scored here.
 */
#include "pipeline/values/value_index.h"

#include "common/arena.h"
#include "common/hash.h"
#include "common/clock.h"
#include "common/utf8.h"
#include "pipeline/text/dates.h"
#include "pipeline/text/fold.h"
#include "pipeline/text/numbers.h"
#include "pipeline/values/value_probe.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FTS_UNRANKED_MAX 256      /* up to this many postings: take every matching row, unranked */
#define FTS_RANKED 64             /* beyond: the best rows by bm25 */
#define MAX_QUERY_TRIGRAMS 4      /* each OR'ed phrase costs FTS5 ~5 us; see choose_trigrams */
#define FUZZY_MIN_SHARE 0.5       /* fuzzy candidates share at least half of the span's trigrams */
#define FUZZY_MAX_POSTINGS 4096   /* beyond this the span is ordinary text: no fuzzy query */
#define MAX_LOOKUP_CANDIDATES (FTS_UNRANKED_MAX + 64)
#define INSERT_BATCH 256          /* values per private transaction during the build */
#define FINISH_RESERVE ((size_t)32 << 10) /* kept free for the lookup statements and the final merge */

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

#define BLOCK_SIZE ((size_t)64 << 10) /* string blocks start at SMALL_BLOCK_SIZE and double up to this */
#define SMALL_BLOCK_SIZE ((size_t)4 << 10)

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
};

/* ---- folded text ---- */

/* FNV-1a of the code points' bytes, folded to 32 bits for the slot tables. */
static uint32_t fold_hash(const struct folded *f)
{
	uint64_t h = hash_fnv1a64(HASH_FNV1A64_SEED, f->cp, f->n * sizeof(f->cp[0]));
	return (uint32_t)(h ^ (h >> 32));
}

static bool folded_equal(const struct folded *a, const struct folded *b)
{
	return a->n == b->n && memcmp(a->cp, b->cp, a->n * sizeof(a->cp[0])) == 0;
}

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

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* Sorted distinct trigrams of f into out (at most FOLD_MAX); returns the count. */
static size_t trigrams(const struct folded *f, uint64_t *out)
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

/* ---- numbers and dates (the grammars of pipeline/text) ---- */

/* A NUL-terminated number as the database printed it or a question wrote it. */
static bool parse_number(const char *s, double *ret)
{
	return number_parse(s, strlen(s), ret);
}

/* A NUL-terminated date in the given forms (see pipeline/text/dates.h): first and last day covered. */
static bool parse_date(const char *s, unsigned forms, double *lo, double *hi)
{
	struct date_range r;
	if (!date_parse(s, strlen(s), forms, &r))
		return false;
	*lo = r.first_day;
	*hi = r.last_day;
	return true;
}

/* Ends of a range that min()/max() found on text: only year-first dates sort as text. */
#define SORTED_DATE_FORMS (DATE_ISO | DATE_BARE_YEAR | DATE_WITH_TIME)
/* Values of a DATE column: year-first (possibly with a time), a year, or with a month name. */
#define STORED_DATE_FORMS (DATE_ISO | DATE_BARE_YEAR | DATE_NAMED | DATE_WITH_TIME)
/* A text column is a date column when nearly all its values are full year-first dates. */
#define TEXT_DATE_FORMS (DATE_ISO | DATE_WITH_TIME | DATE_NEED_DAY)

/* ---- column rules ---- */

static enum value_column_kind sqlite_kind(const char *type, bool *ret_loose)
{
	*ret_loose = false;
	if (strcasestr(type, "BOOL"))
		return VALUE_KIND_OTHER;
	if (strcasestr(type, "DATE") || strcasestr(type, "TIME"))
		return VALUE_KIND_DATE;
	if (strcasestr(type, "INT"))
		return VALUE_KIND_NUMBER;
	if (strcasestr(type, "CHAR") || strcasestr(type, "CLOB") || strcasestr(type, "TEXT"))
		return VALUE_KIND_TEXT;
	if (strcasestr(type, "BLOB"))
		return VALUE_KIND_OTHER;
	if (strcasestr(type, "REAL") || strcasestr(type, "FLOA") || strcasestr(type, "DOUB") ||
	    strcasestr(type, "NUM") || strcasestr(type, "DEC"))
		return VALUE_KIND_NUMBER;
	*ret_loose = true; /* no type or an unusual one: whatever the values are */
	return VALUE_KIND_TEXT;
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static enum value_column_kind pg_kind(const char *type)
{
	static const char *const text[] = {"text", "character", "varchar", "char", "bpchar", "citext", "name", NULL};
	static const char *const number[] = {"smallint", "integer", "bigint", "numeric", "real",
					     "double precision", "decimal", "money", NULL};
	static const char *const other[] = {"time", "interval", "boolean", "bytea", "json", "xml", "uuid", "inet",
					    "cidr", "macaddr", "ts", "point", "line", "lseg", "box", "path",
					    "polygon", "circle", "bit", "oid", "pg_", "hstore", "geometry", "geography",
					    "vector", NULL};
	size_t len = strlen(type);
	if ((len >= 2 && strcmp(type + len - 2, "[]") == 0) || strstr(type, "range"))
		return VALUE_KIND_OTHER;
	if (starts_with(type, "timestamp") || strcmp(type, "date") == 0)
		return VALUE_KIND_DATE;
	for (int i = 0; text[i]; i++)
		if (starts_with(type, text[i]))
			return VALUE_KIND_TEXT;
	for (int i = 0; number[i]; i++)
		if (starts_with(type, number[i]))
			return VALUE_KIND_NUMBER;
	for (int i = 0; other[i]; i++)
		if (starts_with(type, other[i]))
			return VALUE_KIND_OTHER;
	return VALUE_KIND_TEXT; /* enums, domains, extension types: compared as text */
}

/*
 * The name's last word (split at non-alphanumerics and lower-to-upper case
 * changes: "singer_id", "SingerID", "Id") is id, uid, uuid or guid.
 */
static bool id_like_name(const char *name)
{
	size_t len = strlen(name), end = len;
	while (end > 0 && !isalnum((unsigned char)name[end - 1]))
		end--;
	size_t start = end;
	while (start > 0 && isalnum((unsigned char)name[start - 1])) {
		if (start < end && isupper((unsigned char)name[start]) && islower((unsigned char)name[start - 1]))
			break;
		start--;
	}
	size_t n = end - start;
	const char *w = name + start;
	return (n == 2 && strncasecmp(w, "id", 2) == 0) || (n == 3 && strncasecmp(w, "uid", 3) == 0) ||
	       (n == 4 && (strncasecmp(w, "uuid", 4) == 0 || strncasecmp(w, "guid", 4) == 0));
}

static bool is_key_column(const struct schema_table *t, const struct schema_column *c)
{
	if (c->primary_key)
		return true;
	for (size_t f = 0; f < t->n_foreign_keys; f++)
		for (size_t k = 0; k < t->foreign_keys[f].n_columns; k++)
			if (strcmp(t->foreign_keys[f].columns[k], c->name) == 0)
				return true;
	return false;
}

static bool has_space(const char *v)
{
	for (; *v; v++)
		if (isspace((unsigned char)*v))
			return true;
	return false;
}

static bool looks_email(const char *v)
{
	const char *at = strchr(v, '@');
	if (!at || at == v || strchr(at + 1, '@') || has_space(v))
		return false;
	const char *dot = strrchr(at + 1, '.');
	return dot && dot > at + 1 && dot[1] != '\0';
}

static bool looks_url(const char *v)
{
	if (has_space(v))
		return false;
	if (strncasecmp(v, "www.", 4) == 0)
		return true;
	const char *p = v;
	while (isalpha((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
		p++;
	return p > v && strncmp(p, "://", 3) == 0 && p[3] != '\0';
}

/* UUID (8-4-4-4-12 hex) or 16+ hex digits. */
static bool looks_uuid_or_hex(const char *v)
{
	size_t n = strlen(v), hex = 0, dashes = 0;
	for (size_t i = 0; i < n; i++) {
		if (isxdigit((unsigned char)v[i]))
			hex++;
		else if (v[i] == '-')
			dashes++;
		else
			return false;
	}
	return (n == 36 && hex == 32 && dashes == 4) || (dashes == 0 && hex >= 16);
}

/* A code with digits and no spaces ("A1034", "09700166582"). */
static bool looks_opaque(const char *v)
{
	bool digit = false;
	for (const char *p = v; *p; p++) {
		if (isspace((unsigned char)*p))
			return false;
		digit |= isdigit((unsigned char)*p) != 0;
	}
	return digit;
}

/* ---- build ---- */

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

static size_t bucket_count(size_t n_entries)
{
	size_t nb = 16;
	while (nb < n_entries)
		nb *= 2;
	return nb;
}

/* Memory held by the index; during the build, with the bucket array it will need. */
static size_t index_bytes(const struct value_index *vi)
{
	size_t buckets = vi->buckets ? vi->n_buckets : bucket_count(vi->n_entries);
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

static void remeasure(struct build *b)
{
	b->measured = index_bytes(b->vi);
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

static long column_timeout(struct build *b)
{
	long t = b->o->column_timeout_ms;
	if (b->deadline > 0) {
		double left = b->deadline - clock_now_ms();
		if (left < (double)t)
			t = left > 1 ? (long)left : 1;
	}
	return t;
}

static bool should_stop(struct build *b)
{
	if (b->stop)
		return true;
	if (b->o->cancel && atomic_load(b->o->cancel))
		b->stop = "cancelled";
	else if (b->deadline > 0 && clock_now_ms() >= b->deadline)
		b->stop = "max_build_ms";
	return b->stop != NULL;
}

static void scan_release(struct scan *sc)
{
	free(sc->rows);
	arena_release(&sc->tmp);
	memset(sc, 0, sizeof(*sc));
}

/* Row of a values query: value (maybe cut at max_value_len + 1 characters) and its full byte length. */
static int scan_add(struct build *b, struct scan *sc, const char *v, size_t got, size_t full_len)
{
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? 2 * sc->cap : 64;
		struct scanned *rows = realloc(sc->rows, cap * sizeof(*rows));
		if (!rows)
			return -T2S_ERR_NOMEM;
		sc->rows = rows;
		sc->cap = cap;
	}
	struct scanned *r = &sc->rows[sc->n++];
	r->len = full_len;
	r->v = NULL;
	if (full_len <= (size_t)b->o->max_value_len && got == full_len && utf8_valid(v, got)) {
		r->v = arena_strndup(&sc->tmp, v, got);
		if (!r->v)
			return -T2S_ERR_NOMEM;
	}
	return 0;
}

/* Run one statement of ours; rows go to sc (values: 2 columns) or sc->min/max_text (ranges). */
static int run_sqlite(struct build *b, struct db_conn *c, const char *sql, bool range, struct scan *sc)
{
	sqlite3_stmt *st;
	sqlite_guard_arm(&c->guard, SQLITE_GUARD_INTROSPECT, column_timeout(b));
	if (sqlite3_prepare_v2(c->sqlite, sql, -1, &st, NULL) != SQLITE_OK) {
		sc->failed = true;
		return 0;
	}
	int rc, ret = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && ret == 0) {
		const char *v = (const char *)sqlite3_column_text(st, 0);
		size_t got = (size_t)sqlite3_column_bytes(st, 0);
		if (range) {
			const char *hi = (const char *)sqlite3_column_text(st, 1);
			if (v && hi) {
				sc->min_text = arena_strndup(&sc->tmp, v, got);
				sc->max_text = arena_strdup(&sc->tmp, hi);
				if (!sc->min_text || !sc->max_text)
					ret = -T2S_ERR_NOMEM;
			}
		} else if (v) {
			ret = scan_add(b, sc, v, got, (size_t)sqlite3_column_int64(st, 1));
		}
	}
	if (ret == 0 && rc != SQLITE_DONE && rc != SQLITE_ROW) {
		if (c->guard.timed_out || rc == SQLITE_INTERRUPT)
			sc->timed_out = true;
		else
			sc->failed = true;
	}
	sqlite3_finalize(st);
	return ret;
}

static int run_pg(struct build *b, struct db_conn *c, const char *sql, bool range, struct scan *sc)
{
	struct t2s_error e;
	int rc = value_probe_pg_begin(c->pg, column_timeout(b), &e);
	if (rc < 0) {
		if (rc == -T2S_ERR_UNAVAILABLE)
			return t2s_error_set(b->err, T2S_ERR_UNAVAILABLE, "%s", e.message);
		sc->failed = true;
		return 0;
	}
	PGresult *r = PQexec(c->pg, sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = value_probe_pg_error(c->pg, r, "value scan", &e);
		value_probe_pg_end(c->pg);
		if (rc == -T2S_ERR_UNAVAILABLE)
			return t2s_error_set(b->err, T2S_ERR_UNAVAILABLE, "%s", e.message);
		if (rc == -T2S_ERR_TIMEOUT)
			sc->timed_out = true;
		else
			sc->failed = true;
		return 0;
	}
	int ret = 0;
	for (int i = 0; i < PQntuples(r) && ret == 0; i++) {
		if (PQgetisnull(r, i, 0))
			continue;
		const char *v = PQgetvalue(r, i, 0);
		size_t got = (size_t)PQgetlength(r, i, 0);
		if (range) {
			if (PQgetisnull(r, i, 1))
				continue;
			sc->min_text = arena_strndup(&sc->tmp, v, got);
			sc->max_text = arena_strdup(&sc->tmp, PQgetvalue(r, i, 1));
			if (!sc->min_text || !sc->max_text)
				ret = -T2S_ERR_NOMEM;
		} else {
			ret = scan_add(b, sc, v, got, (size_t)strtoull(PQgetvalue(r, i, 1), NULL, 10));
		}
	}
	PQclear(r);
	value_probe_pg_end(c->pg);
	return ret;
}

enum scan_what { SCAN_TEXT, SCAN_ANY, SCAN_NUMBER_RANGE, SCAN_DATE_RANGE };

/*
 * The bounded scan of one column: the most frequent distinct values
 * (SCAN_TEXT: text values only; SCAN_ANY: every value as text), or min/max.
 * Failures and timeouts are recorded in sc; only lost connections and
 * out-of-memory are returned as errors.
 */
static int scan_column(struct build *b, struct db_conn *c, const struct schema_table *t,
		       const struct schema_column *col, enum scan_what what, struct scan *sc)
{
	char *tab = value_probe_quote_table(c, t);
	char *qc = value_probe_quote_ident(c, col->name);
	char *sql = NULL;
	int rc = 0;
	if (!tab || !qc) {
		rc = t2s_error_set(b->err, T2S_ERR_NOMEM, "out of memory");
		goto out;
	}
	long rows = b->o->max_rows_scanned;
	int limit = b->o->max_values_per_column + 1, cut = b->o->max_value_len + 1;
	bool sqlite = c->engine == DB_ENGINE_SQLITE;
	int n = -1;
	switch (what) {
	case SCAN_TEXT:
	case SCAN_ANY:
		if (sqlite)
			n = asprintf(&sql,
				     "SELECT substr(v, 1, %d), length(CAST(v AS BLOB)) FROM (SELECT %s AS v FROM %s "
				     "LIMIT %ld) WHERE %s GROUP BY v ORDER BY count(*) DESC LIMIT %d",
				     cut, qc, tab, rows, what == SCAN_TEXT ? "typeof(v) = 'text'" : "v IS NOT NULL",
				     limit);
		else
			n = asprintf(&sql,
				     "SELECT left(v, %d), octet_length(v) FROM (SELECT %s::text AS v FROM %s LIMIT %ld) s "
				     "WHERE v IS NOT NULL GROUP BY v ORDER BY count(*) DESC LIMIT %d",
				     cut, qc, tab, rows, limit);
		break;
	case SCAN_NUMBER_RANGE:
	case SCAN_DATE_RANGE:
		if (sqlite)
			n = asprintf(&sql, "SELECT min(v), max(v) FROM (SELECT %s AS v FROM %s LIMIT %ld) WHERE %s", qc,
				     tab, rows,
				     what == SCAN_NUMBER_RANGE ? "typeof(v) IN ('integer', 'real')" : "typeof(v) = 'text'");
		else if (what == SCAN_NUMBER_RANGE)
			n = asprintf(&sql, "SELECT min(v)::text, max(v)::text FROM (SELECT %s AS v FROM %s LIMIT %ld) s",
				     qc, tab, rows);
		else
			n = asprintf(&sql,
				     "SELECT to_char(min(v), 'YYYY-MM-DD'), to_char(max(v), 'YYYY-MM-DD') "
				     "FROM (SELECT %s AS v FROM %s LIMIT %ld) s",
				     qc, tab, rows);
		break;
	}
	if (n < 0) {
		sql = NULL;
		rc = t2s_error_set(b->err, T2S_ERR_NOMEM, "out of memory");
		goto out;
	}
	bool range = what == SCAN_NUMBER_RANGE || what == SCAN_DATE_RANGE;
	rc = sqlite ? run_sqlite(b, c, sql, range, sc) : run_pg(b, c, sql, range, sc);
	if (rc == -T2S_ERR_NOMEM)
		t2s_error_set(b->err, T2S_ERR_NOMEM, "out of memory");
out:
	free(sql);
	free(tab);
	free(qc);
	return rc;
}

static void skip(struct value_column_info *info, enum value_skip_reason why)
{
	info->state = VALUE_COLUMN_SKIPPED;
	info->skip = why;
}

/* Range from two printed ends; numbers for NUMBER, day numbers for DATE. */
static void set_range(struct build *b, struct value_column_info *info, const char *lo, const char *hi)
{
	double min, max, ignored;
	bool ok;
	if (info->kind == VALUE_KIND_NUMBER) {
		ok = parse_number(lo, &min) && parse_number(hi, &max);
	} else {
		/* min/max of text only mean something for ISO dates, which sort as text */
		ok = parse_date(lo, SORTED_DATE_FORMS, &min, &ignored) && parse_date(hi, SORTED_DATE_FORMS, &ignored, &max);
	}
	if (!ok || min > max)
		return;
	info->has_range = true;
	info->min = min;
	info->max = max;
	info->min_text = arena_strdup(&b->vi->arena, lo);
	info->max_text = arena_strdup(&b->vi->arena, hi);
	if (!info->min_text || !info->max_text)
		info->has_range = false;
}

/* Range of a DATE column from its scanned values (formats that do not sort as text). */
static void range_from_values(struct build *b, struct value_column_info *info, const struct scan *sc)
{
	double lo = INFINITY, hi = -INFINITY;
	const char *lo_text = NULL, *hi_text = NULL;
	for (size_t i = 0; i < sc->n; i++) {
		double a, z;
		if (!sc->rows[i].v || !parse_date(sc->rows[i].v, STORED_DATE_FORMS, &a, &z))
			continue;
		if (a < lo) {
			lo = a;
			lo_text = sc->rows[i].v;
		}
		if (z > hi) {
			hi = z;
			hi_text = sc->rows[i].v;
		}
	}
	if (!lo_text)
		return;
	info->has_range = true;
	info->min = lo;
	info->max = hi;
	info->min_text = arena_strdup(&b->vi->arena, lo_text);
	info->max_text = arena_strdup(&b->vi->arena, hi_text);
	if (!info->min_text || !info->max_text)
		info->has_range = false;
}

static void mark_scan_bounds(struct build *b, const struct schema_table *t, struct value_column_info *info,
			     const struct scan *sc)
{
	if (sc->timed_out) {
		info->truncated = true;
		info->truncated_by = "column_timeout_ms";
	} else if (t->row_count > b->o->max_rows_scanned) {
		info->truncated = true;
		info->truncated_by = "max_rows_scanned";
	}
}

static int do_range(struct build *b, struct db_conn *c, const struct schema_table *t, struct value_column_info *info,
		    const struct schema_column *col)
{
	struct scan sc = {0};
	arena_init(&sc.tmp);
	int rc = scan_column(b, c, t, col, info->kind == VALUE_KIND_NUMBER ? SCAN_NUMBER_RANGE : SCAN_DATE_RANGE, &sc);
	if (rc == 0 && sc.min_text)
		set_range(b, info, sc.min_text, sc.max_text);
	bool failed = sc.failed || (sc.timed_out && !sc.min_text);
	if (rc == 0 && !info->has_range && info->kind == VALUE_KIND_DATE && !failed) {
		/* dates that do not sort as text ("May 1, 2009"): parse the most frequent values */
		scan_release(&sc);
		arena_init(&sc.tmp);
		rc = scan_column(b, c, t, col, SCAN_ANY, &sc);
		if (rc == 0)
			range_from_values(b, info, &sc);
		failed = sc.failed || (sc.timed_out && sc.n == 0);
	}
	if (rc == 0) {
		mark_scan_bounds(b, t, info, &sc);
		if (info->has_range)
			info->state = VALUE_COLUMN_RANGE;
		else
			skip(info, failed ? VALUE_SKIP_FAILED : VALUE_SKIP_EMPTY);
	}
	scan_release(&sc);
	return rc;
}

/* Rules on the scanned values of a text column; VALUE_SKIP_NONE to index it. */
static enum value_skip_reason judge_values(struct build *b, const struct schema_table *t,
					   const struct schema_column *col, const struct scan *sc, size_t *ret_usable)
{
	size_t n = sc->n, usable = 0, too_long = 0, email = 0, url = 0, opaque = 0, uuid = 0;
	double total_len = 0;
	for (size_t i = 0; i < n; i++) {
		const struct scanned *r = &sc->rows[i];
		total_len += (double)r->len;
		if (r->len > (size_t)b->o->max_value_len)
			too_long++;
		if (!r->v)
			continue;
		usable++;
		email += looks_email(r->v);
		url += looks_url(r->v);
		opaque += looks_opaque(r->v);
		uuid += looks_uuid_or_hex(r->v);
	}
	*ret_usable = usable;
	if (n == 0)
		return VALUE_SKIP_EMPTY;
	if (b->o->skip_long_text &&
	    (total_len / (double)n > b->o->long_text_mean_len || (double)too_long > b->o->long_text_share * (double)n))
		return VALUE_SKIP_LONG_TEXT;
	if (usable == 0)
		return VALUE_SKIP_EMPTY;
	if (b->o->skip_urls_emails && 2 * email >= usable)
		return VALUE_SKIP_EMAIL;
	if (b->o->skip_urls_emails && 2 * url >= usable)
		return VALUE_SKIP_URL;
	if (b->o->skip_ids && (10 * uuid >= 9 * usable || (is_key_column(t, col) && 10 * opaque >= 9 * usable)))
		return VALUE_SKIP_ID;
	return VALUE_SKIP_NONE;
}

/* Text columns holding ISO dates (nearly all values) are date columns. */
static bool values_are_dates(const struct scan *sc, size_t usable)
{
	size_t dates = 0;
	for (size_t i = 0; i < sc->n; i++) {
		double lo, hi;
		if (sc->rows[i].v && parse_date(sc->rows[i].v, TEXT_DATE_FORMS, &lo, &hi))
			dates++;
	}
	return usable > 0 && 10 * dates >= 9 * usable;
}

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

static uint32_t tri_df(const struct value_index *vi, uint64_t tri)
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
	e->hash = fold_hash(&b->fold);
	size_t nt = trigrams(&b->fold, b->tri_buf);
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
static int index_values(struct build *b, int table, int column, struct value_column_info *info, const struct scan *sc)
{
	size_t keep = sc->n;
	if (keep > (size_t)b->o->max_values_per_column) {
		keep = (size_t)b->o->max_values_per_column;
		info->truncated = true;
		info->truncated_by = "max_values_per_column";
	}
	int rc = 0;
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
			remeasure(b);
	}
	return rc;
}

static int do_text(struct build *b, struct db_conn *c, int table, int column, struct value_column_info *info,
		   bool loose)
{
	const struct schema_table *t = &b->vi->schema->tables[table];
	const struct schema_column *col = &t->columns[column];
	struct scan sc = {0};
	arena_init(&sc.tmp);
	int rc = scan_column(b, c, t, col, SCAN_TEXT, &sc);
	if (rc < 0)
		goto out;
	if (sc.n == 0) {
		if (loose && !sc.failed) {
			/* an untyped SQLite column holding numbers only */
			info->kind = VALUE_KIND_NUMBER;
			rc = do_range(b, c, t, info, col);
		} else {
			skip(info, sc.failed || sc.timed_out ? VALUE_SKIP_FAILED : VALUE_SKIP_EMPTY);
		}
		goto out;
	}
	mark_scan_bounds(b, t, info, &sc);
	size_t usable;
	enum value_skip_reason why = judge_values(b, t, col, &sc, &usable);
	if (why == VALUE_SKIP_NONE && values_are_dates(&sc, usable)) {
		info->kind = VALUE_KIND_DATE;
		range_from_values(b, info, &sc);
		if (info->has_range)
			info->state = VALUE_COLUMN_RANGE;
		else
			skip(info, VALUE_SKIP_EMPTY);
		goto out;
	}
	if (why != VALUE_SKIP_NONE) {
		skip(info, why);
		goto out;
	}
	if (b->full) {
		skip(info, VALUE_SKIP_BUDGET);
		goto out;
	}
	info->state = VALUE_COLUMN_INDEXED;
	rc = index_values(b, table, column, info, &sc);
	if (rc < 0)
		t2s_error_set(b->err, rc == -T2S_ERR_NOMEM ? T2S_ERR_NOMEM : T2S_ERR_INTERNAL,
			      "cannot add values to the index: %s", sqlite3_errmsg(b->vi->fts));
	else if (info->n_values == 0)
		skip(info, VALUE_SKIP_BUDGET);
out:
	scan_release(&sc);
	return rc;
}

static int do_column(struct build *b, struct db_conn *c, int table, int column)
{
	const struct schema_table *t = &b->vi->schema->tables[table];
	const struct schema_column *col = &t->columns[column];
	struct value_column_info *info = &b->vi->cols[table][column];
	bool loose = false;
	info->kind = c->engine == DB_ENGINE_SQLITE ? sqlite_kind(col->type, &loose) : pg_kind(col->type);
	info->state = VALUE_COLUMN_SKIPPED;
	if (info->kind == VALUE_KIND_OTHER) {
		skip(info, VALUE_SKIP_TYPE);
		return 0;
	}
	if (b->o->skip_views && strcmp(t->kind, "view") == 0) {
		skip(info, VALUE_SKIP_VIEW);
		return 0;
	}
	if (b->o->skip_ids && id_like_name(col->name)) {
		skip(info, VALUE_SKIP_ID);
		return 0;
	}
	if (should_stop(b)) {
		skip(info, VALUE_SKIP_BUDGET);
		return 0;
	}
	double start = clock_now_ms();
	int rc = info->kind == VALUE_KIND_TEXT ? do_text(b, c, table, column, info, loose) : do_range(b, c, t, info, col);
	info->scan_ms = clock_now_ms() - start;
	return rc;
}

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
	size_t nb = bucket_count(vi->n_entries);
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
	st->bytes = index_bytes(vi);
}

static struct value_index *vi_new(struct schema *s)
{
	struct value_index *vi = calloc(1, sizeof(*vi));
	if (!vi)
		return NULL;
	atomic_init(&vi->refs, 1);
	arena_init(&vi->arena);
	pthread_mutex_init(&vi->lock, NULL);
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

void value_index_options_init(struct value_index_options *o)
{
	*o = (struct value_index_options){
		.max_values_per_column = 2000,
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
		remeasure(&b);
	for (size_t t = 0; rc == 0 && t < s->n_tables; t++) {
		struct db_conn *c = NULL;
		if (!should_stop(&b))
			rc = db_pool_acquire(&db->pool, &c, err);
		for (size_t col = 0; rc == 0 && col < s->tables[t].n_columns; col++) {
			if (c)
				rc = do_column(&b, c, (int)t, (int)col);
			else
				skip(&vi->cols[t][col], VALUE_SKIP_BUDGET);
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

const char *value_skip_reason_name(enum value_skip_reason r)
{
	static const char *const names[VALUE_SKIP_COUNT] = {"none",  "type",  "id",     "email",  "url",
							    "long_text", "view", "empty", "budget", "failed"};
	return r >= 0 && r < VALUE_SKIP_COUNT ? names[r] : "unknown";
}

const char *value_column_kind_name(enum value_column_kind k)
{
	switch (k) {
	case VALUE_KIND_TEXT: return "text";
	case VALUE_KIND_NUMBER: return "number";
	case VALUE_KIND_DATE: return "date";
	default: return "other";
	}
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
	uint32_t h = fold_hash(&l->key);
	for (int i = vi->buckets[h & (vi->n_buckets - 1)]; i >= 0; i = vi->entries[i].next) {
		const struct vi_entry *e = &vi->entries[i];
		if (e->hash != h)
			continue;
		size_t len = strlen(e->value);
		fold_text(e->value, len, &l->tmp);
		if (!folded_equal(&l->tmp, &l->key))
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
		uint32_t df = tri_df(vi, l->key_tri[i]);
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
	size_t nt = trigrams(&l->tmp, l->tmp_tri);
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
	struct lookup *l = malloc(sizeof(*l));
	if (!l)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	while (isspace((unsigned char)*span))
		span++;
	size_t len = strlen(span);
	while (len > 0 && isspace((unsigned char)span[len - 1]))
		len--;
	l->span = span;
	l->span_len = len;
	l->n_cand = 0;
	fold_text(span, len, &l->key);
	int rc = 0;
	if (l->key.n > 0 && vi->n_entries > 0) {
		exact_candidates(vi, l);
		if (l->key.n >= 3 && min_score <= 0.95) { /* fuzzy scores never exceed 0.95 */
			l->n_key_tri = trigrams(&l->key, l->key_tri);
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
	bool is_number = parse_number(buf, &x);
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
