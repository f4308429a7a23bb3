/*
 * column_index.h - the shared column index: what is precomputed per database
 * and schema hash, read by linking (retrieval, Steiner scaffold) and by the
 * evidence stage (column documents and vectors): one document and one
 * vector per column (LitE-SQL), one vector per table, and the schema graph of
 * the join scaffold (SteinerSQL).
 *
 * Column documents: table name, column name split into words (and spelled
 * out where they hold identifier abbreviations: "lname" -> last name), type,
 * key role, comment and a few sample values.  With WordNet, the lexical
 * vector of a column also holds the WordNet expansion of its table's and
 * its own name (pipeline/text/lexicon.h) at a lower weight than the
 * document itself (SCHEMA_NEAR_WEIGHT, SCHEMA_FAR_WEIGHT in column_index_lexical.c),
 * so an exact mention still outranks a synonym.  Vectors come from the built-in
 * lexical embedder fitted on the database's own column documents (always),
 * and, when an embed model is configured, from that remote /v1/embeddings
 * server too (cached per embedder and document in the embedding cache, so a
 * schema change re-embeds only changed columns and a second replica starts
 * warm).
 *
 * Schema graph: a node per table; an edge per declared foreign key and per
 * inferred join (same column name with compatible types, `x_id` to table
 * x's key), each costed 0.4*connect + 0.4*semantic + 0.2*statistical
 * (weights configurable): connect 0 for a declared key and larger for
 * weaker evidence, semantic = 1 - cosine of the two tables' vectors,
 * statistical = 1 - overlap of the two columns' sample values.
 *
 * Value inclusion: a column whose distinctive sample values all occur among
 * another table's single-column key samples joins that key (connect 0.6),
 * where no other edge links the two tables.
 *
 * An index is immutable once built and reference-counted like the schema it
 * holds; column_index_registry.c keeps one per database and swaps it when
 * the hash changes.
 */
#ifndef T2S_COLUMN_INDEX_H
#define T2S_COLUMN_INDEX_H

#include "common/contract.h"
#include "pipeline/models/embed_cache.h"
#include "pipeline/models/fallback.h"
#include "pipeline/text/embed_lexical.h"
#include "pipeline/text/wordnet.h"
#include "common/error.h"
#include "pipeline/models/model_client.h"
#include "pipeline/db/schema.h"
#include "pipeline/link/related_words.h"
#include "pipeline/link/steiner.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdbool.h>

enum link_edge_kind { LINK_EDGE_FOREIGN_KEY, LINK_EDGE_SAME_NAME, LINK_EDGE_NAME_TO_KEY, LINK_EDGE_VALUE_INCLUSION };

struct link_edge {
	int left_table, left_column;
	int right_table, right_column;
	enum link_edge_kind kind;
	double connect, semantic, statistical, cost;
};

struct link_weights {
	double connect, semantic, statistical;
};

struct column_index_options {
	unsigned lexical_dim;            /* default EMBED_LEXICAL_DEFAULT_DIM (0 means it too) */
	struct link_weights weights;     /* join edge cost weights (default 0.4, 0.4, 0.2) */
	const struct model_endpoint *embed_model; /* NULL: lexical only (default) */
	struct embed_cache *cache;       /* may be NULL: remote vectors are not cached (default) */
	const struct wordnet *wordnet;   /* NULL: no WordNet expansion (default); must outlive the index */
	bool lexical_on_remote_failure;  /* a failing embed_model leaves a lexical-only index, not an error (default false) */
	long remote_retry_ms;            /* registry: a lexical-only index of a failed embedder is rebuilt (the
					    embedder tried again) after this long (default 30000) */
};

/* Fill o with the defaults above (the only place they are defined; the config leaves them to this). */
void column_index_options_init(struct column_index_options *o);

struct link_column_ref {
	int table, column;
};

/*
 * A normalised word as hashes, for fast "same word up to a short ending"
 * tests: h of the word, h1/h2 of the word without its last one/two letters
 * (0 when that prefix would be shorter than 4 letters).
 */
struct link_word_key {
	uint64_t h, h1, h2;
	uint32_t len;
};

/* FNV-1a of the first len bytes of s. */
uint64_t link_word_hash(const char *s, size_t len);
void link_word_key_make(const char *w, struct link_word_key *ret);

struct column_index {
	atomic_int refs;
	struct schema *schema; /* a reference */
	struct embed_lexical lexical;
	size_t n_columns;
	struct link_column_ref *columns;  /* flat list, table by table */
	size_t *table_first_column;       /* index into columns of each table's first column */
	/* Lexical vector of column i: column_vectors[i] + column_expansion_scale[i] *
	   expansions[column_expansion[i]] (L2-normalised as a whole; see column_index_lexical_score).
	   The WordNet expansion depends on the column's name alone, so columns of the same name share
	   one (a wide schema of same-shaped tables scores each name's expansion once per question). */
	struct embed_sparse *column_vectors; /* lexical, one per column: its document's part */
	int *column_expansion;            /* per column: index into expansions, -1 for none */
	float *column_expansion_scale;    /* per column: weight of its expansion */
	struct embed_sparse *expansions;  /* distinct name expansions (unnormalised), n_expansions */
	size_t n_expansions;
	float *table_vectors;             /* lexical dense, n_tables x lexical.dim */
	char ***table_words;              /* per table: normalised words of its spelled-out name (embed_lexical_words blocks) */
	char ***column_words;             /* per flat column: normalised words of its spelled-out name */
	const struct wordnet *wordnet;    /* borrowed from the options; NULL without WordNet */
	/* Distinct column names (fec: 71,833 columns, far fewer names): the hash keys of each name's
	   words once, so that a question's mention tests run once per name, not per column. */
	uint32_t *column_name_id;         /* per flat column: its name's number, 0..n_names-1 */
	size_t n_names;
	size_t *name_first_column;        /* per name: a flat column of that name (its words) */
	struct link_word_key *column_word_keys; /* all names' words, name by name */
	size_t *column_word_first;        /* n_names + 1 offsets into column_word_keys */
	struct related_words related;     /* the schema's words for orphan question words (empty without WordNet) */
	struct related_words related_spelled; /* the same, of the words as spelled: the built-in's */
	float *remote_vectors;            /* remote, n_columns x remote_dim, L2-normalised; NULL when none */
	size_t remote_dim;
	char remote_id[160];              /* embedder identity of remote_vectors */
	const char *remote_failure;       /* embed_model failed during the build (lexical_on_remote_failure): the
					     reason code (pipeline/models/fallback.h); NULL otherwise */
	char remote_failure_detail[FALLBACK_DETAIL_MAX]; /* the embedder's error, when remote_failure */
	int remote_http_status;           /* HTTP status of the build's last remote call (0: none arrived) */
	struct link_edge *edges;
	size_t n_edges;
	struct steiner_graph graph;       /* node = table index, edge tag = index into edges */
	double build_ms;
	size_t remote_cache_hits, remote_cache_misses;
	int remote_calls;
};

/*
 * Build the index of schema s (a new reference is taken).  A remote embedder
 * failure is an error (the caller may retry without it), unless
 * o->lexical_on_remote_failure: then the index is built with its lexical
 * vectors only (which every index has, so lexical question vectors stay
 * comparable with it), remote_vectors is NULL and remote_failure says why.
 * *ret has one reference; release with column_index_unref.
 */
T2S_MUST_CHECK
int column_index_build(struct schema *s, const struct column_index_options *o, struct column_index **ret,
		     struct t2s_error *err);
/*
 * Lexical cosine of column i with q (a dense, L2-normalised lexical vector of
 * idx->lexical.dim floats).
 */
double column_index_lexical_score(const struct column_index *idx, size_t i, const float *q);

/*
 * Lexical cosines of every column with q into ret (n_columns doubles, the
 * caller's), each name's expansion scored once.  Returns 0 or -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int column_index_lexical_scores(const struct column_index *idx, const float *q, double *ret);

struct column_index *column_index_ref(struct column_index *idx);
struct column_index *column_index_unref(struct column_index *idx);

/* The document text of a column (malloc'd, caller frees). */
char *link_column_document(const struct schema *s, int table, int column);

#endif
