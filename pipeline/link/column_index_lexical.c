/*
 * column_index_lexical.c - the lexical side of a column index: the fitted
 * lexical embedder, column vectors with their names' WordNet expansions,
 * table vectors, name words and their hash keys; and the lexical scores of
 * a question's vector against every column.
 */
#include "pipeline/link/column_index_internal.h"

#include "common/hash.h"
#include "pipeline/text/lexicon.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXPAND_SENSES 2          /* WordNet senses expanded per schema word */
#define SCHEMA_NEAR_WEIGHT 0.35  /* weight of a name's WordNet synonyms etc. in its column's vector */
#define SCHEMA_FAR_WEIGHT 0.2    /* weight of its one-step hypernyms */

uint64_t link_word_hash(const char *s, size_t len)
{
	return hash_fnv1a64(HASH_FNV1A64_SEED, s, len) | 1; /* never 0: 0 means "no such prefix" */
}

void link_word_key_make(const char *w, struct link_word_key *ret)
{
	size_t n = strlen(w);
	ret->len = (uint32_t)n;
	ret->h = link_word_hash(w, n);
	ret->h1 = n >= 5 ? link_word_hash(w, n - 1) : 0;
	ret->h2 = n >= 6 ? link_word_hash(w, n - 2) : 0;
}

/* Number the distinct column names (exact spelling) into idx->column_name_id. */
static int number_names(struct column_index *idx)
{
	const struct schema *s = idx->schema;
	size_t n = idx->n_columns, mask = 15;
	while (mask + 1 < 2 * n)
		mask = 2 * mask + 1;
	int *slots = malloc((mask + 1) * sizeof(*slots));
	idx->column_name_id = malloc((n ? n : 1) * sizeof(*idx->column_name_id));
	idx->name_first_column = malloc((n ? n : 1) * sizeof(*idx->name_first_column));
	if (!slots || !idx->column_name_id || !idx->name_first_column) {
		free(slots);
		return -T2S_ERR_NOMEM;
	}
	for (size_t k = 0; k <= mask; k++)
		slots[k] = -1;
	for (size_t i = 0; i < n; i++) {
		const char *name = s->tables[idx->columns[i].table].columns[idx->columns[i].column].name;
		size_t at = (size_t)link_word_hash(name, strlen(name)) & mask;
		for (; slots[at] >= 0; at = (at + 1) & mask) {
			const struct link_column_ref *c = &idx->columns[idx->name_first_column[slots[at]]];
			if (strcmp(s->tables[c->table].columns[c->column].name, name) == 0)
				break;
		}
		if (slots[at] < 0) {
			slots[at] = (int)idx->n_names;
			idx->name_first_column[idx->n_names++] = i;
		}
		idx->column_name_id[i] = (uint32_t)slots[at];
	}
	free(slots);
	return 0;
}

/* Hash keys of every distinct column name's words (3+ letters), for the question-time mention tests. */
static int column_word_keys(struct column_index *idx)
{
	int rc = number_names(idx);
	if (rc < 0)
		return rc;
	size_t total = 0;
	for (size_t k = 0; k < idx->n_names; k++)
		for (char **w = idx->column_words[idx->name_first_column[k]]; w && *w; w++)
			total += strlen(*w) >= 3;
	idx->column_word_keys = calloc(total ? total : 1, sizeof(*idx->column_word_keys));
	idx->column_word_first = calloc(idx->n_names + 1, sizeof(*idx->column_word_first));
	if (!idx->column_word_keys || !idx->column_word_first)
		return -T2S_ERR_NOMEM;
	size_t at = 0;
	for (size_t k = 0; k < idx->n_names; k++) {
		idx->column_word_first[k] = at;
		for (char **w = idx->column_words[idx->name_first_column[k]]; w && *w; w++)
			if (strlen(*w) >= 3)
				link_word_key_make(*w, &idx->column_word_keys[at++]);
	}
	idx->column_word_first[idx->n_names] = at;
	return 0;
}

/* The embedder's words of name with its abbreviations spelled out, split with flags (EMBED_WORDS_*; one malloc'd
   block, see embed_lexical_words). */
static int spelled_words(const char *name, unsigned flags, char ***ret)
{
	char *spelled = lexicon_spell_out(name);
	if (!spelled)
		return -T2S_ERR_NOMEM;
	int rc = embed_lexical_words(spelled, flags, ret, NULL);
	free(spelled);
	return rc;
}

/*
 * The built-in's related-words index of the schema's table and column names, each word as spelled
 * (unstemmed: WordNet knows "rating", not the stem "rate"; it finds a plural's base itself).  The word
 * lists are built here and freed: the index keeps copies of the distinct words.
 */
static int build_related_spelled(struct column_index *idx)
{
	const struct schema *s = idx->schema;
	char ***tw = calloc(s->n_tables ? s->n_tables : 1, sizeof(*tw));
	char ***cw = calloc(idx->n_columns ? idx->n_columns : 1, sizeof(*cw));
	int rc = tw && cw ? 0 : -T2S_ERR_NOMEM;
	for (size_t t = 0; rc == 0 && t < s->n_tables; t++)
		rc = spelled_words(s->tables[t].name, EMBED_WORDS_NO_STEM, &tw[t]);
	for (size_t i = 0; rc == 0 && i < idx->n_columns; i++)
		rc = spelled_words(s->tables[idx->columns[i].table].columns[idx->columns[i].column].name,
				      EMBED_WORDS_NO_STEM, &cw[i]);
	if (rc == 0)
		rc = related_words_build_spelled(idx->wordnet, tw, s->n_tables, cw, idx->n_columns, &idx->related_spelled);
	for (size_t t = 0; tw && t < s->n_tables; t++)
		free(tw[t]);
	for (size_t i = 0; cw && i < idx->n_columns; i++)
		free(cw[i]);
	free(tw);
	free(cw);
	return rc;
}

/* dense += w * lexical vector of text (skipped when text is empty). */
static int add_scaled(const struct embed_lexical *m, const char *text, double w, float *scratch, float *dense)
{
	if (!*text || w == 0)
		return 0;
	int rc = embed_lexical_vector(m, text, scratch);
	for (unsigned k = 0; rc == 0 && k < m->dim; k++)
		dense[k] += (float)w * scratch[k];
	return rc;
}

/* *ret = the sparse form of scale * dense. */
static int sparse_scaled(const float *dense, unsigned dim, double scale, struct embed_sparse *ret)
{
	size_t nnz = 0;
	for (unsigned k = 0; k < dim; k++)
		nnz += dense[k] != 0;
	*ret = (struct embed_sparse){0};
	if (!nnz)
		return 0;
	ret->idx = malloc(nnz * sizeof(*ret->idx));
	ret->val = malloc(nnz * sizeof(*ret->val));
	if (!ret->idx || !ret->val) {
		embed_sparse_release(ret);
		return -T2S_ERR_NOMEM;
	}
	for (unsigned k = 0; k < dim; k++)
		if (dense[k] != 0) {
			ret->idx[ret->nnz] = k;
			ret->val[ret->nnz++] = (float)(dense[k] * scale);
		}
	return 0;
}

/* Index of name's expansion in idx->expansions, found through the open-addressing
   table slots (mask + 1 entries, -1 = empty) or added; -T2S_ERR_NOMEM. */
static int expansion_of(struct column_index *idx, const char *name, int *slots, size_t mask, const char **names,
			float *scratch, float *x)
{
	uint64_t h = link_word_hash(name, strlen(name));
	size_t at = (size_t)h & mask;
	for (; slots[at] >= 0; at = (at + 1) & mask)
		if (strcmp(names[slots[at]], name) == 0)
			return slots[at];
	struct lexicon_expansion e = {0};
	int rc = lexicon_expand(idx->wordnet, name, LEXICON_SCHEMA, EXPAND_SENSES, &e);
	unsigned dim = idx->lexical.dim;
	for (unsigned k = 0; k < dim; k++)
		x[k] = 0;
	if (rc == 0)
		rc = add_scaled(&idx->lexical, e.near, SCHEMA_NEAR_WEIGHT, scratch, x);
	if (rc == 0)
		rc = add_scaled(&idx->lexical, e.far, SCHEMA_FAR_WEIGHT, scratch, x);
	lexicon_expansion_release(&e);
	size_t k = idx->n_expansions;
	if (rc == 0)
		rc = sparse_scaled(x, dim, 1.0, &idx->expansions[k]);
	if (rc < 0)
		return rc;
	names[k] = name;
	slots[at] = (int)k;
	idx->n_expansions++;
	return (int)k;
}

/*
 * Lexical vectors with WordNet: the column's document plus the expansion of
 * the column's name at SCHEMA_NEAR_WEIGHT (synonyms, derived forms...) and
 * SCHEMA_FAR_WEIGHT (hypernyms), L2-normalised.  Table names are not
 * expanded into every column: on wide tables that multiplies the non-zeros
 * each question is scored against (fec: 9 -> 80 ms per /link) for little
 * gain.  Stored as
 * the document's part and the name's shared expansion with its scale (see
 * struct column_index).
 */
static int expanded_vectors(struct column_index *idx, char **docs)
{
	const struct schema *s = idx->schema;
	unsigned dim = idx->lexical.dim;
	size_t n = idx->n_columns, mask = 15;
	while (mask + 1 < 2 * n)
		mask = 2 * mask + 1;
	float *doc = malloc(dim * sizeof(float)), *scratch = malloc(dim * sizeof(float));
	float *x = malloc(dim * sizeof(float));
	int *slots = malloc((mask + 1) * sizeof(int));
	const char **names = malloc((n ? n : 1) * sizeof(*names));
	idx->expansions = calloc(n ? n : 1, sizeof(*idx->expansions));
	int rc = doc && scratch && x && slots && names && idx->expansions ? 0 : -T2S_ERR_NOMEM;
	for (size_t k = 0; rc == 0 && k <= mask; k++)
		slots[k] = -1;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct link_column_ref *c = &idx->columns[i];
		int e = expansion_of(idx, s->tables[c->table].columns[c->column].name, slots, mask, names, scratch, x);
		if (e < 0) {
			rc = e;
			break;
		}
		rc = embed_lexical_vector(&idx->lexical, docs[i], doc);
		if (rc < 0)
			break;
		/* |doc + x|^2 = |doc|^2 + 2 doc.x + |x|^2 */
		const struct embed_sparse *xs = &idx->expansions[e];
		double dd = 0, xx = 0;
		for (unsigned k = 0; k < dim; k++)
			dd += (double)doc[k] * doc[k];
		for (size_t k = 0; k < xs->nnz; k++)
			xx += (double)xs->val[k] * xs->val[k];
		double norm2 = dd + 2.0 * embed_sparse_dot(xs, doc) + xx;
		double inv = norm2 > 0 ? 1.0 / sqrt(norm2) : 1.0;
		rc = sparse_scaled(doc, dim, inv, &idx->column_vectors[i]);
		idx->column_expansion[i] = xs->nnz ? e : -1;
		idx->column_expansion_scale[i] = (float)inv;
	}
	free(doc);
	free(scratch);
	free(x);
	free(slots);
	free(names);
	return rc;
}

double column_index_lexical_score(const struct column_index *idx, size_t i, const float *q)
{
	double s = embed_sparse_dot(&idx->column_vectors[i], q);
	int e = idx->column_expansion ? idx->column_expansion[i] : -1;
	if (e >= 0)
		s += (double)idx->column_expansion_scale[i] * embed_sparse_dot(&idx->expansions[e], q);
	return s;
}

int column_index_lexical_scores(const struct column_index *idx, const float *q, double *ret)
{
	double *xs = malloc((idx->n_expansions ? idx->n_expansions : 1) * sizeof(double));
	if (!xs)
		return -T2S_ERR_NOMEM;
	for (size_t k = 0; k < idx->n_expansions; k++)
		xs[k] = embed_sparse_dot(&idx->expansions[k], q);
	for (size_t i = 0; i < idx->n_columns; i++) {
		double s = embed_sparse_dot(&idx->column_vectors[i], q);
		int e = idx->column_expansion ? idx->column_expansion[i] : -1;
		ret[i] = e >= 0 ? s + (double)idx->column_expansion_scale[i] * xs[e] : s;
	}
	free(xs);
	return 0;
}

int column_index_lexical_vectors(struct column_index *idx, char **docs, const struct column_index_options *o,
				 struct t2s_error *err)
{
	const struct schema *s = idx->schema;
	int rc = embed_lexical_init(&idx->lexical, o->lexical_dim);
	if (rc == 0)
		rc = embed_lexical_fit(&idx->lexical, (const char *const *)docs, idx->n_columns, err);
	idx->column_vectors = calloc(idx->n_columns ? idx->n_columns : 1, sizeof(*idx->column_vectors));
	idx->column_expansion = malloc((idx->n_columns ? idx->n_columns : 1) * sizeof(*idx->column_expansion));
	idx->column_expansion_scale = calloc(idx->n_columns ? idx->n_columns : 1, sizeof(float));
	for (size_t i = 0; idx->column_expansion && i < idx->n_columns; i++)
		idx->column_expansion[i] = -1;
	if (rc == 0 && (!idx->column_expansion || !idx->column_expansion_scale))
		rc = -T2S_ERR_NOMEM;
	idx->table_vectors = calloc(s->n_tables ? s->n_tables * idx->lexical.dim : 1, sizeof(float));
	if (rc == 0 && (!idx->column_vectors || !idx->table_vectors))
		rc = -T2S_ERR_NOMEM;
	if (rc == 0 && idx->wordnet)
		rc = expanded_vectors(idx, docs);
	for (size_t i = 0; rc == 0 && !idx->wordnet && i < idx->n_columns; i++)
		rc = embed_lexical_sparse(&idx->lexical, docs[i], &idx->column_vectors[i]);
	idx->table_words = calloc(s->n_tables ? s->n_tables : 1, sizeof(*idx->table_words));
	if (rc == 0 && !idx->table_words)
		rc = -T2S_ERR_NOMEM;
	for (size_t t = 0; rc == 0 && t < s->n_tables; t++)
		rc = spelled_words(s->tables[t].name, 0, &idx->table_words[t]);
	idx->column_words = calloc(idx->n_columns ? idx->n_columns : 1, sizeof(*idx->column_words));
	if (rc == 0 && !idx->column_words)
		rc = -T2S_ERR_NOMEM;
	for (size_t i = 0; rc == 0 && i < idx->n_columns; i++)
		rc = spelled_words(s->tables[idx->columns[i].table].columns[idx->columns[i].column].name, 0,
				   &idx->column_words[i]);
	if (rc == 0)
		rc = column_word_keys(idx);
	if (rc == 0)
		rc = related_words_build(idx->wordnet, idx->table_words, s->n_tables, idx->column_words, idx->n_columns,
					 &idx->related);
	if (rc == 0)
		rc = build_related_spelled(idx);
	for (size_t t = 0; rc == 0 && t < s->n_tables; t++) {
		char *doc = column_index_table_document(&s->tables[t]);
		rc = doc ? embed_lexical_vector(&idx->lexical, doc, idx->table_vectors + t * idx->lexical.dim)
			 : -T2S_ERR_NOMEM;
		free(doc);
	}
	if (rc == -T2S_ERR_NOMEM)
		t2s_error_set(err, T2S_ERR_NOMEM, "out of memory building the lexical index");
	return rc;
}
