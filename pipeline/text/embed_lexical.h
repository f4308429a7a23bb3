/*
 * embed_lexical.h - the built-in lexical embedder of the schema-linking stage.
 *
 * Needs no model server.  Text (a column document or a question) is split
 * into normalised words (identifier splitting: snake_case, camelCase,
 * PascalCase with acronyms, letters/digits; ASCII lower-casing; a small
 * English stop-word list; light Porter-step-1-like stemming).  Three feature
 * kinds are taken from the words: word unigrams, word bigrams (of adjacent
 * kept words) and character trigrams of each word with boundary markers
 * ("^ab", "abc", "bc$").  Each feature is hashed (64-bit FNV-1a seeded per
 * kind, then a mixing finaliser) to a signed position in a fixed dimension D,
 * weighted by its kind and by its IDF, and the vector is L2-normalised.
 *
 * IDF is fitted on a corpus (the database's column documents).  Document
 * frequencies are counted in a private hash space of EMBED_LEXICAL_IDF_SIZE
 * buckets, much larger than D, so that the IDF of a feature is not blurred by
 * the collisions of the small output dimension.  Smoothing:
 * idf = log((1 + N) / (1 + df)) + 1.  An unfitted model uses idf = 1.
 *
 * Lifecycle: embed_lexical_init, then optionally embed_lexical_fit (may be
 * called again to refit), then any number of embed_lexical_vector /
 * embed_lexical_sparse calls, then embed_lexical_release.  Once fitted the
 * struct is only read: concurrent vector calls from several threads are safe
 * as long as no thread fits or releases it at the same time.
 *
 * Identity: embed_lexical_id() names the model for cache keys.  Because the
 * vectors depend on the fitted IDF, the identity of a fitted model carries a
 * fingerprint of its document-frequency table ("lexical-v1-d1024-f<16 hex>"):
 * two processes fitted on the same corpus (in any order) agree on it, and a
 * cached vector is never reused under a different IDF.
 */
#ifndef T2S_EMBED_LEXICAL_H
#define T2S_EMBED_LEXICAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/contract.h"
#include "common/error.h"

#define EMBED_LEXICAL_DEFAULT_DIM 1024u
#define EMBED_LEXICAL_MAX_DIM 65536u
/* Buckets of the private document-frequency hash space (a power of two). */
#define EMBED_LEXICAL_IDF_BITS 18u
#define EMBED_LEXICAL_IDF_SIZE (1u << EMBED_LEXICAL_IDF_BITS)
#define EMBED_LEXICAL_ID_MAX 64

/* Weights of the three feature kinds (before IDF). */
#define EMBED_LEXICAL_W_UNIGRAM 1.0f
#define EMBED_LEXICAL_W_BIGRAM 0.5f
#define EMBED_LEXICAL_W_TRIGRAM 0.25f

struct embed_lexical {
	unsigned dim;                    /* D, fixed at init */
	size_t n_docs;                   /* N of the last fit, 0 when unfitted */
	float *idf;                      /* EMBED_LEXICAL_IDF_SIZE entries, NULL when unfitted */
	char id[EMBED_LEXICAL_ID_MAX];   /* see embed_lexical_id() */
};

/*
 * Set up m for vectors of dim floats (0 means EMBED_LEXICAL_DEFAULT_DIM).
 * Allocates nothing.  Returns 0, or -T2S_ERR_INVALID when dim exceeds
 * EMBED_LEXICAL_MAX_DIM (m is then left unusable but safe to release).
 */
T2S_MUST_CHECK
int embed_lexical_init(struct embed_lexical *m, unsigned dim);

/* Free the fitted IDF table; m may be NULL.  m may be re-initialised after. */
void embed_lexical_release(struct embed_lexical *m);

/*
 * Fit the IDF on n documents (docs[i] NUL-terminated; a NULL entry counts as
 * an empty document).  Replaces any previous fit.  The documents are only
 * read during the call.  Returns 0, or -T2S_ERR_NOMEM / -T2S_ERR_INVALID
 * (filling err, which may be NULL); on failure the previous fit is kept.
 */
T2S_MUST_CHECK
int embed_lexical_fit(struct embed_lexical *m, const char *const *docs, size_t n,
		      struct t2s_error *err);

/*
 * Embed text into ret_vec, the caller's buffer of m->dim floats: the
 * IDF-weighted, L2-normalised feature vector.  Text without any kept word
 * (empty, only stop words or punctuation) gives the all-zero vector.
 * Never allocates.  Returns 0, or -T2S_ERR_INVALID (ret_vec untouched) when
 * m was never initialised.  Thread-safe on a fitted model (see the file
 * comment).
 */
T2S_MUST_CHECK
int embed_lexical_vector(const struct embed_lexical *m, const char *text, float *ret_vec);

/*
 * The same vector as embed_lexical_vector, in sparse form: nnz positions in
 * strictly increasing order with their values.  Lexical vectors hold a few
 * dozen non-zeros, so storing documents sparse takes ~8 bytes per non-zero
 * instead of 4*D bytes, and a sparse-dense dot product costs O(nnz).
 */
struct embed_sparse {
	size_t nnz;
	uint32_t *idx;  /* malloc'd, nnz entries (NULL when nnz == 0) */
	float *val;     /* malloc'd, nnz entries (NULL when nnz == 0) */
};

/*
 * Fill *ret with the sparse vector of text.  The caller owns the arrays and
 * frees them with embed_sparse_release.  The values equal the non-zero
 * entries of embed_lexical_vector's output bit for bit.  Returns 0, or
 * -T2S_ERR_INVALID (m not initialised) / -T2S_ERR_NOMEM (*ret untouched).
 * Thread-safe on a fitted model.
 */
T2S_MUST_CHECK
int embed_lexical_sparse(const struct embed_lexical *m, const char *text,
			 struct embed_sparse *ret);

/* Free s's arrays and zero it; s may be NULL. */
void embed_sparse_release(struct embed_sparse *s);

/* Dot product of a sparse vector with a dense one of at least max(idx)+1 floats. */
float embed_sparse_dot(const struct embed_sparse *s, const float *dense);

/*
 * Identity for cache keys: "lexical-v1-d<D>" when unfitted, and
 * "lexical-v1-d<D>-f<16 hex>" after a fit, the hex being a fingerprint of N
 * and the document-frequency table.  The string lives in m.
 */
const char *embed_lexical_id(const struct embed_lexical *m);

/*
 * The IDF weight of one word's unigram feature, after the same normalisation
 * as the documents (so "Singers" and "singer" give the same answer).  A word
 * that normalises to nothing (a stop word) gives 0.  1 when unfitted.
 */
float embed_lexical_word_idf(const struct embed_lexical *m, const char *word);

/*
 * Cosine similarity of two vectors of dim floats; 0 when either is all-zero.
 * (For vectors that are already unit-length this equals their dot product.)
 */
float embed_cosine(const float *a, const float *b, size_t dim);

/* Flags of embed_lexical_words. */
#define EMBED_WORDS_KEEP_STOP 0x1u  /* keep stop words */
#define EMBED_WORDS_NO_STEM 0x2u    /* do not stem (still split and lower-case) */

/*
 * Split text into the embedder's normalised words (flags 0 gives exactly the
 * words the embedder uses).  *ret_words is ONE malloc'd block holding a
 * NULL-terminated array of *ret_n pointers followed by the strings: the
 * caller releases everything with a single free(*ret_words); ret_n may be
 * NULL (the array is NULL-terminated anyway).  Text NULL or
 * without words gives an array holding only the NULL terminator.  Returns 0
 * or -T2S_ERR_NOMEM (outputs untouched).
 *
 * Splitting: any byte that is not an ASCII letter or digit and not >= 0x80
 * separates words; inside a run, a boundary falls between a letter (or UTF-8
 * byte) and a digit, between a lower-case and an upper-case ASCII letter
 * ("householdIncome"), and before the last capital of an upper-case run
 * followed by lower-case letters ("XMLParser" -> xml parser; but a lone plural
 * "s" stays: "userIDs" -> user ids).  UTF-8 bytes are kept inside words
 * unchanged and never start a camelCase boundary.  A word longer than 64
 * bytes is cut to its first 64 (at a UTF-8 character boundary).
 *
 * Stemming (light, Porter-step-1-like, keeping dictionary forms where it
 * can): plurals (countries -> country, names -> name, boxes -> box), -ed /
 * -ing with Porter's restorations (rated -> rate, shipping -> ship), -ly
 * after most consonants (monthly -> month), and -ie -> -y for words of five
 * or more letters so that movie and movies meet (both -> movy).
 */
T2S_MUST_CHECK
int embed_lexical_words(const char *text, unsigned flags, char ***ret_words, size_t *ret_n);

#endif
