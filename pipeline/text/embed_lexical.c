/*
 * embed_lexical.c - the built-in lexical embedder (see embed_lexical.h).
 *
 * The work is a streaming pipeline without per-word allocation: the
 * tokeniser walks the text, normalises each word into a bounded scratch
 * buffer (words longer than WORD_MAX bytes are cut at a UTF-8 boundary) and
 * hands it to a callback; the feature layer turns each word into unigram,
 * bigram and trigram hashes; the fit counts document frequencies of those
 * hashes, the vector functions scatter weighted values into D dimensions.
 * Nothing here touches global mutable state, so a fitted model can be shared
 * by threads.
 */
#include "pipeline/text/embed_lexical.h"

#include "common/hash.h"
#include "pipeline/text/stopwords.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORD_MAX 64

/* ---------------------------------------------------------------- words */

enum char_class { C_SEP, C_LOWER, C_UPPER, C_DIGIT, C_UTF8 };

static enum char_class char_class(unsigned char c)
{
	if (c >= 'a' && c <= 'z')
		return C_LOWER;
	if (c >= 'A' && c <= 'Z')
		return C_UPPER;
	if (c >= '0' && c <= '9')
		return C_DIGIT;
	if (c >= 0x80)
		return C_UTF8;
	return C_SEP;
}

/*
 * Is there a word boundary between s[i-1] and s[i] (both word bytes, i < n)?
 * See embed_lexical_words() in the header for the rules.
 */
static bool is_boundary(const unsigned char *s, size_t i, size_t n)
{
	enum char_class prev = char_class(s[i - 1]), cur = char_class(s[i]);

	if ((prev == C_DIGIT) != (cur == C_DIGIT))
		return true;
	if (prev == C_LOWER && cur == C_UPPER)
		return true;
	if (prev == C_UPPER && cur == C_UPPER && i + 1 < n && char_class(s[i + 1]) == C_LOWER) {
		/* "XMLParser": split before P; "userIDs": a lone plural s stays. */
		bool lone_s = s[i + 1] == 's' &&
			      (i + 2 >= n || (char_class(s[i + 2]) != C_LOWER &&
					      char_class(s[i + 2]) != C_UTF8));
		return !lone_s;
	}
	return false;
}

static bool is_vowel_at(const char *w, size_t i)
{
	switch (w[i]) {
	case 'a': case 'e': case 'i': case 'o': case 'u':
		return true;
	case 'y':
		return i > 0 && !is_vowel_at(w, i - 1);
	default:
		return false;
	}
}

static bool is_consonant_at(const char *w, size_t i)
{
	return w[i] >= 'a' && w[i] <= 'z' && !is_vowel_at(w, i);
}

static bool has_vowel(const char *w, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (is_vowel_at(w, i))
			return true;
	return false;
}

/* Porter's measure m of w[0..len): the number of vowel-consonant sequences. */
static int measure(const char *w, size_t len)
{
	int m = 0;
	size_t i = 0;

	while (i < len && !is_vowel_at(w, i))
		i++;
	while (i < len) {
		while (i < len && is_vowel_at(w, i))
			i++;
		if (i >= len)
			break;
		while (i < len && !is_vowel_at(w, i))
			i++;
		m++;
	}
	return m;
}

static bool ends_with(const char *w, size_t len, const char *suf)
{
	size_t sl = strlen(suf);

	return len >= sl && memcmp(w + len - sl, suf, sl) == 0;
}

/* Porter's *o: w ends consonant-vowel-consonant, the last not w, x or y. */
static bool ends_cvc(const char *w, size_t len)
{
	if (len < 3)
		return false;
	if (!is_consonant_at(w, len - 1) || is_consonant_at(w, len - 2) ||
	    !is_consonant_at(w, len - 3))
		return false;
	return w[len - 1] != 'w' && w[len - 1] != 'x' && w[len - 1] != 'y';
}

/* Plurals (Porter step 1a, keeping -y and -e forms).  Returns the new length. */
static size_t stem_plural(char *w, size_t len)
{
	if (ends_with(w, len, "sses"))
		return len - 2;
	if (ends_with(w, len, "ies")) {
		if (len > 4) {
			w[len - 3] = 'y';
			return len - 2;
		}
		return len - 1;
	}
	if (ends_with(w, len, "ches") || ends_with(w, len, "shes") || ends_with(w, len, "xes") ||
	    ends_with(w, len, "zzes"))
		return len - 2;
	if (ends_with(w, len, "ss") || ends_with(w, len, "us") || ends_with(w, len, "is"))
		return len;
	if (len >= 3 && w[len - 1] == 's')
		return len - 1;
	return len;
}

/* After removing -ed/-ing: restore a plausible base form (Porter 1b and a few more). */
static size_t stem_restore(char *w, size_t len)
{
	char last = w[len - 1];

	if (ends_with(w, len, "at") || ends_with(w, len, "bl") || ends_with(w, len, "iz"))
		goto add_e;
	if (len >= 2 && last == w[len - 2] && is_consonant_at(w, len - 1) && last != 'l' &&
	    last != 's' && last != 'z')
		return len - 1;
	if (measure(w, len) == 1 && ends_cvc(w, len))
		goto add_e;
	if (last == 'v')  /* English words do not end in v: receiv-ed */
		goto add_e;
	if (len >= 4 && last == 's' &&
	    (strchr("aeio", w[len - 2]) || (w[len - 2] == 'u' && is_vowel_at(w, len - 3))))
		goto add_e;  /* releas-ed, purchas-ing, hous-ing; not focus-ed */
	if (len >= 4 && last == 'c' && strchr("nru", w[len - 2]))  /* balanc-ed, produc-ed */
		goto add_e;
	if (len >= 5 && ends_with(w, len, "ur") && is_consonant_at(w, len - 3))  /* featur-ed */
		goto add_e;
	return len;
add_e:
	w[len] = 'e';
	return len + 1;
}

/* -eed / -ed / -ing (Porter step 1b).  Returns the new length. */
static size_t stem_verb(char *w, size_t len)
{
	if (ends_with(w, len, "eed"))
		return measure(w, len - 3) > 0 ? len - 1 : len;
	if (ends_with(w, len, "ed") && len > 3 && has_vowel(w, len - 2))
		return stem_restore(w, len - 2);
	if (ends_with(w, len, "ing") && len > 4 && has_vowel(w, len - 3))
		return stem_restore(w, len - 3);
	return len;
}

/* Adverbs in -ly after a consonant other than b or p (monthly, directly; not family, supply). */
static size_t stem_adverb(const char *w, size_t len)
{
	if (len >= 6 && ends_with(w, len, "ly") && is_consonant_at(w, len - 3) &&
	    w[len - 3] != 'b' && w[len - 3] != 'p' && w[len - 3] != 'y')
		return len - 2;
	return len;
}

/*
 * Light stemming of a lower-case word in w (capacity WORD_MAX + 1, so the
 * restore step may append one byte).  Returns the new length (never 0).
 */
static size_t stem_word(char *w, size_t len)
{
	size_t n;

	if (len < 3 || char_class((unsigned char)w[len - 1]) == C_DIGIT)
		return len;
	n = stem_plural(w, len);
	if (n >= 5 && ends_with(w, n, "ie")) {  /* movie(s) -> movy, like cookies -> cooky */
		w[n - 2] = 'y';
		n--;
	}
	size_t v = stem_verb(w, n);
	if (v != n)
		return v;
	return stem_adverb(w, n);
}

typedef void (*word_fn)(void *ctx, const char *w, size_t len);

/*
 * Walk text and give every normalised word to fn.  The word buffer passed to
 * fn is only valid during the call.  Text NULL gives no words.
 */
static void tokenise(const char *text, unsigned flags, word_fn fn, void *ctx)
{
	const unsigned char *s = (const unsigned char *)text;
	char buf[WORD_MAX + 2];
	size_t n, i = 0;

	if (!text)
		return;
	n = strlen(text);
	while (i < n) {
		size_t start, len;

		while (i < n && char_class(s[i]) == C_SEP)
			i++;
		if (i >= n)
			break;
		start = i++;
		while (i < n && char_class(s[i]) != C_SEP && !is_boundary(s, i, n))
			i++;
		len = i - start;
		if (len > WORD_MAX) {
			len = WORD_MAX;
			while (len > 0 && (s[start + len] & 0xC0) == 0x80)
				len--;  /* do not cut a UTF-8 sequence */
			if (len == 0)
				len = WORD_MAX;
		}
		for (size_t j = 0; j < len; j++) {
			unsigned char c = s[start + j];
			buf[j] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
		}
		buf[len] = '\0';
		if (!(flags & EMBED_WORDS_KEEP_STOP) && stopword_is(buf, len, STOPWORD_RETRIEVAL))
			continue;
		if (!(flags & EMBED_WORDS_NO_STEM))
			len = stem_word(buf, len);
		buf[len] = '\0';
		fn(ctx, buf, len);
	}
}

struct words_count {
	size_t n, bytes;
};

static void count_word(void *ctx, const char *w, size_t len)
{
	struct words_count *c = ctx;

	(void)w;
	c->n++;
	c->bytes += len + 1;
}

struct words_fill {
	char **ptrs;
	char *next;
	size_t i;
};

static void fill_word(void *ctx, const char *w, size_t len)
{
	struct words_fill *f = ctx;

	memcpy(f->next, w, len);
	f->next[len] = '\0';
	f->ptrs[f->i++] = f->next;
	f->next += len + 1;
}

int embed_lexical_words(const char *text, unsigned flags, char ***ret_words, size_t *ret_n)
{
	struct words_count c = {0, 0};
	struct words_fill f;
	char **block;

	tokenise(text, flags, count_word, &c);
	block = malloc((c.n + 1) * sizeof(char *) + c.bytes);
	if (!block)
		return -T2S_ERR_NOMEM;
	f.ptrs = block;
	f.next = (char *)(block + c.n + 1);
	f.i = 0;
	tokenise(text, flags, fill_word, &f);
	block[c.n] = NULL;
	*ret_words = block;
	if (ret_n)
		*ret_n = c.n;
	return 0;
}

/* ------------------------------------------------------------- features */

enum feature_kind { F_UNIGRAM = 1, F_BIGRAM = 2, F_TRIGRAM = 3 };

static uint64_t fnv_seed(enum feature_kind kind)
{
	return HASH_FNV1A64_SEED ^ ((uint64_t)kind * 0x9E3779B97F4A7C15ULL);
}

/* splitmix64 finaliser: every output bit depends on every input bit. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBULL;
	x ^= x >> 31;
	return x;
}

/* Called once per feature occurrence with the mixed hash and the kind weight. */
typedef void (*feature_fn)(void *ctx, uint64_t h, float weight);

struct feature_walk {
	feature_fn fn;
	void *ctx;
	char prev[WORD_MAX + 2];
	size_t prev_len;  /* 0: no previous word */
};

static void features_of_word(void *ctx, const char *w, size_t len)
{
	struct feature_walk *fw = ctx;
	unsigned char pad[WORD_MAX + 4];
	uint64_t h;

	h = hash_fnv1a64(fnv_seed(F_UNIGRAM), w, len);
	fw->fn(fw->ctx, mix64(h), EMBED_LEXICAL_W_UNIGRAM);

	if (fw->prev_len) {
		static const unsigned char sep = 0x1f;
		h = hash_fnv1a64(fnv_seed(F_BIGRAM), fw->prev, fw->prev_len);
		h = hash_fnv1a64(h, &sep, 1);
		h = hash_fnv1a64(h, w, len);
		fw->fn(fw->ctx, mix64(h), EMBED_LEXICAL_W_BIGRAM);
	}

	pad[0] = 0x02;  /* start marker: never a word byte */
	memcpy(pad + 1, w, len);
	pad[len + 1] = 0x03;  /* end marker */
	for (size_t i = 0; i + 3 <= len + 2; i++) {
		h = hash_fnv1a64(fnv_seed(F_TRIGRAM), pad + i, 3);
		fw->fn(fw->ctx, mix64(h), EMBED_LEXICAL_W_TRIGRAM);
	}

	memcpy(fw->prev, w, len);
	fw->prev_len = len;
}

static void walk_features(const char *text, feature_fn fn, void *ctx)
{
	struct feature_walk fw = {.fn = fn, .ctx = ctx, .prev_len = 0};

	tokenise(text, 0, features_of_word, &fw);
}

static uint32_t idf_slot(uint64_t h)
{
	return (uint32_t)(h & (EMBED_LEXICAL_IDF_SIZE - 1));
}

/* Output position: bits independent of the IDF slot; sign from the top bit. */
static uint32_t dim_slot(uint64_t h, unsigned dim)
{
	return (uint32_t)((h >> EMBED_LEXICAL_IDF_BITS) % dim);
}

static float feature_value(const struct embed_lexical *m, uint64_t h, float weight)
{
	float idf = m->idf ? m->idf[idf_slot(h)] : 1.0f;
	float v = weight * idf;

	return (h >> 63) ? -v : v;
}

/* ------------------------------------------------------------ lifecycle */

static void set_id(struct embed_lexical *m, const uint32_t *df)
{
	if (!df) {
		snprintf(m->id, sizeof(m->id), "lexical-v1-d%u", m->dim);
		return;
	}
	uint64_t h = HASH_FNV1A64_SEED, n = m->n_docs;
	h = hash_fnv1a64(h, &n, sizeof(n));
	for (size_t i = 0; i < EMBED_LEXICAL_IDF_SIZE; i++) {
		unsigned char le[4] = {(unsigned char)df[i], (unsigned char)(df[i] >> 8),
				       (unsigned char)(df[i] >> 16), (unsigned char)(df[i] >> 24)};
		h = hash_fnv1a64(h, le, 4);
	}
	snprintf(m->id, sizeof(m->id), "lexical-v1-d%u-f%016llx", m->dim,
		 (unsigned long long)mix64(h));
}

int embed_lexical_init(struct embed_lexical *m, unsigned dim)
{
	memset(m, 0, sizeof(*m));
	if (dim == 0)
		dim = EMBED_LEXICAL_DEFAULT_DIM;
	if (dim > EMBED_LEXICAL_MAX_DIM)
		return -T2S_ERR_INVALID;
	m->dim = dim;
	set_id(m, NULL);
	return 0;
}

void embed_lexical_release(struct embed_lexical *m)
{
	if (!m)
		return;
	free(m->idf);
	m->idf = NULL;
	m->n_docs = 0;
	if (m->dim)
		set_id(m, NULL);
}

struct df_count {
	uint32_t *df;
	uint32_t *stamp;  /* doc index + 1 of the last document that counted a slot */
	uint32_t doc;
};

static void count_feature(void *ctx, uint64_t h, float weight)
{
	struct df_count *c = ctx;
	uint32_t s = idf_slot(h);

	(void)weight;
	if (c->stamp[s] != c->doc) {
		c->stamp[s] = c->doc;
		c->df[s]++;
	}
}

int embed_lexical_fit(struct embed_lexical *m, const char *const *docs, size_t n,
		      struct t2s_error *err)
{
	struct df_count c;
	float *idf;

	if (!m->dim)
		return t2s_error_set(err, T2S_ERR_INVALID, "lexical embedder not initialised");
	if (n >= UINT32_MAX)
		return t2s_error_set(err, T2S_ERR_INVALID, "too many documents to fit (%zu)", n);
	c.df = calloc(EMBED_LEXICAL_IDF_SIZE, sizeof(uint32_t));
	c.stamp = calloc(EMBED_LEXICAL_IDF_SIZE, sizeof(uint32_t));
	idf = malloc(EMBED_LEXICAL_IDF_SIZE * sizeof(float));
	if (!c.df || !c.stamp || !idf) {
		free(c.df);
		free(c.stamp);
		free(idf);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory fitting the lexical embedder");
	}
	for (size_t i = 0; i < n; i++) {
		c.doc = (uint32_t)(i + 1);
		walk_features(docs[i], count_feature, &c);
	}
	for (size_t i = 0; i < EMBED_LEXICAL_IDF_SIZE; i++)
		idf[i] = (float)(log((1.0 + (double)n) / (1.0 + (double)c.df[i])) + 1.0);

	free(m->idf);
	m->idf = idf;
	m->n_docs = n;
	set_id(m, c.df);
	free(c.df);
	free(c.stamp);
	return 0;
}

const char *embed_lexical_id(const struct embed_lexical *m)
{
	return m->id;
}

/* -------------------------------------------------------------- vectors */

struct dense_acc {
	const struct embed_lexical *m;
	float *vec;
};

static void dense_add(void *ctx, uint64_t h, float weight)
{
	struct dense_acc *a = ctx;

	a->vec[dim_slot(h, a->m->dim)] += feature_value(a->m, h, weight);
}

int embed_lexical_vector(const struct embed_lexical *m, const char *text, float *ret_vec)
{
	struct dense_acc a = {m, ret_vec};
	double norm = 0.0;

	if (!m->dim)
		return -T2S_ERR_INVALID;
	memset(ret_vec, 0, m->dim * sizeof(float));
	walk_features(text, dense_add, &a);
	for (unsigned i = 0; i < m->dim; i++)
		norm += (double)ret_vec[i] * ret_vec[i];
	if (norm > 0.0) {
		float inv = (float)(1.0 / sqrt(norm));
		for (unsigned i = 0; i < m->dim; i++)
			ret_vec[i] *= inv;
	}
	return 0;
}

struct sparse_entry {
	uint32_t idx;
	uint32_t seq;  /* emission order: sums happen in the same order as the dense path */
	float val;
};

struct sparse_acc {
	const struct embed_lexical *m;
	struct sparse_entry *e;
	size_t n, cap;
	bool failed;
};

static void sparse_add(void *ctx, uint64_t h, float weight)
{
	struct sparse_acc *a = ctx;

	if (a->failed)
		return;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct sparse_entry *e = realloc(a->e, cap * sizeof(*e));
		if (!e) {
			a->failed = true;
			return;
		}
		a->e = e;
		a->cap = cap;
	}
	a->e[a->n].idx = dim_slot(h, a->m->dim);
	a->e[a->n].seq = (uint32_t)a->n;
	a->e[a->n].val = feature_value(a->m, h, weight);
	a->n++;
}

static int sparse_cmp(const void *x, const void *y)
{
	const struct sparse_entry *a = x, *b = y;

	if (a->idx != b->idx)
		return a->idx < b->idx ? -1 : 1;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

int embed_lexical_sparse(const struct embed_lexical *m, const char *text,
			 struct embed_sparse *ret)
{
	struct sparse_acc a = {m, NULL, 0, 0, false};
	struct embed_sparse out = {0, NULL, NULL};
	size_t k = 0;
	double norm = 0.0;

	if (!m->dim)
		return -T2S_ERR_INVALID;
	walk_features(text, sparse_add, &a);
	if (a.failed)
		goto nomem;
	if (a.n == 0) {
		*ret = out;
		return 0;
	}
	qsort(a.e, a.n, sizeof(a.e[0]), sparse_cmp);
	/* Merge equal positions in place, summing in emission order. */
	for (size_t i = 0; i < a.n;) {
		uint32_t idx = a.e[i].idx;
		float sum = 0.0f;
		while (i < a.n && a.e[i].idx == idx)
			sum += a.e[i++].val;
		if (sum != 0.0f) {
			a.e[k].idx = idx;
			a.e[k].val = sum;
			k++;
		}
	}
	if (k == 0) {
		free(a.e);
		*ret = out;
		return 0;
	}
	out.idx = malloc(k * sizeof(uint32_t));
	out.val = malloc(k * sizeof(float));
	if (!out.idx || !out.val)
		goto nomem;
	for (size_t i = 0; i < k; i++)
		norm += (double)a.e[i].val * a.e[i].val;
	float inv = (float)(1.0 / sqrt(norm));
	for (size_t i = 0; i < k; i++) {
		out.idx[i] = a.e[i].idx;
		out.val[i] = a.e[i].val * inv;
	}
	out.nnz = k;
	free(a.e);
	*ret = out;
	return 0;
nomem:
	free(a.e);
	free(out.idx);
	free(out.val);
	return -T2S_ERR_NOMEM;
}

void embed_sparse_release(struct embed_sparse *s)
{
	if (!s)
		return;
	free(s->idx);
	free(s->val);
	s->idx = NULL;
	s->val = NULL;
	s->nnz = 0;
}

float embed_sparse_dot(const struct embed_sparse *s, const float *dense)
{
	double sum = 0.0;

	for (size_t i = 0; i < s->nnz; i++)
		sum += (double)s->val[i] * dense[s->idx[i]];
	return (float)sum;
}

/* ---------------------------------------------------------------- misc */

struct first_word {
	uint64_t h;
	bool found;
};

static void take_first(void *ctx, const char *w, size_t len)
{
	struct first_word *f = ctx;

	if (!f->found) {
		f->h = mix64(hash_fnv1a64(fnv_seed(F_UNIGRAM), w, len));
		f->found = true;
	}
}

float embed_lexical_word_idf(const struct embed_lexical *m, const char *word)
{
	struct first_word f = {0, false};

	tokenise(word, 0, take_first, &f);
	if (!f.found)
		return 0.0f;
	return m->idf ? m->idf[idf_slot(f.h)] : 1.0f;
}

float embed_cosine(const float *a, const float *b, size_t dim)
{
	double dot = 0.0, na = 0.0, nb = 0.0;

	for (size_t i = 0; i < dim; i++) {
		dot += (double)a[i] * b[i];
		na += (double)a[i] * a[i];
		nb += (double)b[i] * b[i];
	}
	if (na == 0.0 || nb == 0.0)
		return 0.0f;
	return (float)(dot / (sqrt(na) * sqrt(nb)));
}
