/*
 * value_index.h - the text values of one database, for the evidence stage
 * (SEED): which column holds "France", "Aberdeen", "United States".
 *
 * Built per database and schema hash from the live database through its
 * pool, read-only, and bounded everywhere:
 *
 *   - per text column: at most max_values_per_column distinct values, the
 *     most frequent first, found among the first max_rows_scanned rows in at
 *     most column_timeout_ms (statement_timeout on Postgres, the SQLite
 *     guard's deadline); values longer than max_value_len bytes, empty or not
 *     valid UTF-8 are left out;
 *   - the whole index: at most max_bytes of memory (then it stops adding and
 *     is marked truncated) and max_build_ms of build time.
 *
 * Columns are skipped by rule (each rule can be turned off): types that are
 * neither text, number nor date; id-like columns (the name's last word is
 * "id"/"uuid"/"guid", or a primary/foreign key column, or any column, whose
 * values look like opaque codes: mostly containing digits with no spaces,
 * UUIDs, long hex); e-mail and URL columns (half the values or more look like
 * one); long free text (mean length over long_text_mean_len, or more than
 * long_text_share of the values over max_value_len).  Text-typed columns whose
 * values are nearly all ISO dates are treated as dates.
 *
 * Number and date columns are not indexed as text: they keep their range
 * (min/max over the same bounded scan), and value_index_range_columns says
 * which columns a number or date mentioned in a question could belong to.
 *
 * Fuzzy matching: a private in-memory SQLite database owned by the index
 * holds one contentless FTS5 table with the trigram tokenizer (rowid = entry
 * number).  A lookup takes every value whose normalised form (case folded,
 * white space trimmed and collapsed) equals the span's (a hash lookup), plus
 * FTS5 candidates: values holding one of the span's rarest trigrams (all of
 * them when their postings are few, else the best 64 by bm25), kept when they
 * share at least half of the span's trigrams.  Scores: exact 1.0, equal but
 * for case 0.98, equal after normalisation 0.96, else 0.95 x max(Jaro-
 * Winkler, trigram Dice) of the folded strings.  Spans under 3 characters,
 * and lookups with min_score above 0.95, skip the fuzzy stage (hash only,
 * under a microsecond); a span whose rarest trigrams are all very common in
 * the index (ordinary words, not values) gets no fuzzy candidates either.
 * Case folding covers ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic.
 *
 * Ownership and threads: a built index is immutable and reference-counted
 * (value_index_ref / value_index_unref; the last unref frees it).  It holds a
 * reference to the schema it was built from.  Strings it returns (matched
 * values, column info) belong to the index and live as long as the caller's
 * reference.  Lookups may run from any number of threads: the private SQLite
 * connection and its two prepared statements are used under a mutex held
 * only for the FTS5 query (hashing and scoring run outside it).
 *
 * Lookup cache: each index remembers the answers of its lookups (span up to
 * 64 bytes, up to 8 matches; at most 768 of them, then no more are added),
 * since the FTS5 query under the one mutex is most of a lookup's cost and
 * questions repeat their words.  The cache belongs to the index: a refresh
 * that rebuilds the index starts from an empty one.
 */
#ifndef T2S_VALUE_INDEX_H
#define T2S_VALUE_INDEX_H

#include "common/contract.h"
#include "pipeline/db/catalog.h"
#include "common/error.h"
#include "pipeline/db/schema.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

enum value_column_kind {
	VALUE_KIND_TEXT,
	VALUE_KIND_NUMBER,
	VALUE_KIND_DATE,
	VALUE_KIND_OTHER, /* boolean, binary, JSON, arrays, ...: neither indexed nor ranged */
};

enum value_column_state {
	VALUE_COLUMN_INDEXED, /* text values are in the index (n_values may be cut by a bound) */
	VALUE_COLUMN_RANGE,   /* number or date column with a range */
	VALUE_COLUMN_SKIPPED, /* see skip */
};

enum value_skip_reason {
	VALUE_SKIP_NONE,
	VALUE_SKIP_TYPE,      /* neither text, number nor date */
	VALUE_SKIP_ID,        /* id-like name or opaque key values */
	VALUE_SKIP_EMAIL,     /* e-mail addresses */
	VALUE_SKIP_URL,       /* URLs */
	VALUE_SKIP_LONG_TEXT, /* free text */
	VALUE_SKIP_VIEW,      /* a view, and options.skip_views */
	VALUE_SKIP_EMPTY,     /* no usable value in the scanned rows */
	VALUE_SKIP_BUDGET,    /* the index was full (max_bytes) or the build out of time/cancelled */
	VALUE_SKIP_FAILED,    /* the scan failed or timed out before returning anything */
	VALUE_SKIP_COUNT
};

struct value_index_options {
	int max_values_per_column; /* distinct values kept per column (default 10000) */
	int max_value_len;         /* bytes; longer values are left out (default 100) */
	size_t max_bytes;          /* memory of the whole index (default 64 MiB) */
	long column_timeout_ms;    /* per scan statement (default 2000) */
	long max_rows_scanned;     /* rows read per column (default 200000) */
	long max_build_ms;         /* whole build; <= 0: no limit (default 60000) */
	double long_text_mean_len; /* default 60 */
	double long_text_share;    /* share of values over max_value_len that makes free text (default 0.1) */
	bool skip_ids;             /* default true */
	bool skip_urls_emails;     /* default true */
	bool skip_long_text;       /* default true */
	bool skip_views;           /* default false: views are scanned like tables */
	const atomic_bool *cancel; /* optional: the build stops (truncated, "cancelled") once it reads true */
};

/* Fill o with the defaults above (the only place they are defined; the config leaves them to this). */
void value_index_options_init(struct value_index_options *o);

struct value_column_info {
	enum value_column_kind kind;
	enum value_column_state state;
	enum value_skip_reason skip; /* VALUE_SKIP_NONE unless state is SKIPPED */
	size_t n_values;             /* values of this column in the index */
	bool single_letters;         /* every value of the column (not cut by a bound) is one ASCII letter */
	bool truncated;              /* a per-column bound cut the values or the scan */
	const char *truncated_by;    /* "max_values_per_column", "max_rows_scanned", "column_timeout_ms",
					"max_bytes", or NULL; static string */
	bool has_range;
	double min, max;             /* numbers: the values; dates: days since 1970-01-01 */
	const char *min_text;        /* range ends as the database printed them (owned by the index) */
	const char *max_text;
	double scan_ms;
};

struct value_index_stats {
	size_t columns_indexed;
	size_t columns_ranged;
	size_t columns_skipped;
	size_t skipped[VALUE_SKIP_COUNT]; /* columns_skipped by reason */
	size_t columns_truncated;         /* indexed columns cut by a per-column bound */
	size_t values;                    /* entries in the index */
	size_t bytes;                     /* memory the index holds (FTS5 database + values + tables) */
	double build_ms;
	bool truncated;                   /* a whole-index bound stopped the build */
	const char *truncated_by;         /* "max_bytes", "max_build_ms", "cancelled" or NULL; static */
};

struct value_index;

/*
 * Build the index of database db, whose current schema model is s (the
 * index takes its own reference to s).  Holds one pooled connection per
 * table at a time.  A column whose scan fails or times out is skipped (or
 * kept with what it returned, SQLite) and the build goes on; the build fails
 * only when no connection can be had (-T2S_ERR_UNAVAILABLE, also when it is
 * lost midway), on -T2S_ERR_NOMEM, or when the private FTS5 database cannot
 * be created (-T2S_ERR_INTERNAL).  o may be NULL (defaults).  On success *ret
 * holds one reference that the caller owns.
 */
T2S_MUST_CHECK
int value_index_build(struct catalog_db *db, struct schema *s, const struct value_index_options *o,
		      struct value_index **ret, struct t2s_error *err);

struct value_index *value_index_ref(struct value_index *vi);
/* Drops one reference; frees on the last.  Accepts NULL; returns NULL. */
struct value_index *value_index_unref(struct value_index *vi);

/* The schema the index was built from (borrowed; lives as long as the index). */
const struct schema *value_index_schema(const struct value_index *vi);
/* Lookup answers the cache holds and lookups it has answered. */
void value_index_cache_stats(struct value_index *vi, size_t *ret_entries, size_t *ret_hits);

/* Build statistics (borrowed). */
const struct value_index_stats *value_index_get_stats(const struct value_index *vi);
/* What happened to one column, or NULL when table/column are out of range (borrowed). */
const struct value_column_info *value_index_column(const struct value_index *vi, int table, int column);

struct wordnet;

struct value_match {
	int table, column;  /* indexes into value_index_schema(vi) */
	const char *value;  /* as stored in the database; owned by the index */
	double score;       /* 0..1 */
	const char *how;    /* "exact", "case", "normalized", "fuzzy"; static string */
};

/*
 * Best matches of a question span (any UTF-8 text, e.g. "united states"):
 * candidates as described at the top, scored, kept when score >= min_score,
 * best first (ties in schema order), at most max of them in ret[] (caller's
 * array of max elements).  *ret_n gets the count (0 when nothing matches).
 * -T2S_ERR_INVALID for a NULL span; -T2S_ERR_INTERNAL when the FTS5 query
 * fails.  Thread-safe.
 */
T2S_MUST_CHECK
int value_index_lookup(struct value_index *vi, const char *span, double min_score, size_t max,
		       struct value_match *ret, size_t *ret_n, struct t2s_error *err);

struct value_column_ref {
	int table, column;
};

/*
 * Columns whose range could hold the number or date written in text:
 * numbers ("1995", "-3.5", "80,000"; pipeline/text/numbers.h) match number
 * columns with min <= x <= max; dates as a question writes them
 * (DATE_QUESTION_FORMS of pipeline/text/dates.h, the grammar question_spans
 * uses: "2009-05-01", "2009-05", "01/05/2009", "May 1, 2009", "1 May 2009")
 * match date columns whose range overlaps the day, month or year; a plain
 * year (1000-2999) matches both number and date columns.  Up to max
 * columns in schema order into ret[]; *ret_n gets the count.
 * -T2S_ERR_INVALID when text is neither a number nor a date.  Thread-safe.
 */
T2S_MUST_CHECK
int value_index_range_columns(struct value_index *vi, const char *text, struct value_column_ref *ret, size_t max,
			      size_t *ret_n);

/*
 * Stored values that the question word word (lower case) names without
 * spelling them, found through WordNet (value_words.c), at most max into ret:
 *   - "pertainym": a value spelled as a noun the adjective word pertains to
 *     or derives from ("french" -> France, "italian" -> Italy), exact up to
 *     case and white space, score 0.9 x the match;
 *   - "initial": the adjective's initial as a single-letter code ("female"
 *     -> F), only in a column whose stored values are all single letters,
 *     that holds exactly one value with that initial, and whose name says
 *     the attribute the adjective values or a synonym of it (female values
 *     sex; gender is a synonym), score 0.85 x the match.
 * Nothing for words that are not WordNet adjectives, under 3 letters, or
 * without wn.  Returns how many were written; strings belong to the index.
 */
size_t value_index_word_values(struct value_index *vi, const struct wordnet *wn, const char *word,
			       struct value_match *ret, size_t max);

#endif
