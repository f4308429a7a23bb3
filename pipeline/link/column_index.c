/*
 * column_index.c - building the shared per-database column index (see column_index.h).
 */
#include "pipeline/link/column_index.h"

#include "common/clock.h"
#include "common/hash.h"
#include "common/strbuf.h"
#include "pipeline/text/lexicon.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DOC_SAMPLES 3          /* sample values quoted in a column document */
#define DOC_SAMPLE_MAX_LEN 40  /* longer samples are left out of documents */
#define SAME_NAME_MAX_TABLES 200 /* a column name shared by more tables joins nothing useful */
#define REMOTE_BATCH 64        /* documents per /v1/embeddings request */

#define EXPAND_SENSES 2          /* WordNet senses expanded per schema word */
#define SCHEMA_NEAR_WEIGHT 0.35  /* weight of a name's WordNet synonyms etc. in its column's vector */
#define SCHEMA_FAR_WEIGHT 0.2    /* weight of its one-step hypernyms */

/*
 * Words of an identifier for documents: "SingerID" -> "SingerID" (the
 * embedder splits it), followed by its spelled-out form when it holds an
 * abbreviation ("Lname" -> "Lname last name").
 */
static void add_words(struct strbuf *sb, const char *s)
{
	strbuf_adds(sb, s);
	strbuf_adds(sb, " ");
	char **words = NULL;
	bool abbreviated = false;
	if (embed_lexical_words(s, EMBED_WORDS_KEEP_STOP | EMBED_WORDS_NO_STEM, &words, NULL) == 0)
		for (char **w = words; *w && !abbreviated; w++)
			abbreviated = lexicon_abbreviation(*w, strlen(*w)) != NULL;
	free(words);
	char *spelled = abbreviated ? lexicon_spell_out(s) : NULL;
	if (spelled) {
		strbuf_adds(sb, spelled);
		strbuf_adds(sb, " ");
	}
	free(spelled);
}

/* The table a column references through a declared foreign key, or NULL. */
static const char *referenced_table(const struct schema_table *t, int column)
{
	const char *name = t->columns[column].name;
	for (size_t f = 0; f < t->n_foreign_keys; f++)
		for (size_t k = 0; k < t->foreign_keys[f].n_columns; k++)
			if (strcmp(t->foreign_keys[f].columns[k], name) == 0)
				return t->foreign_keys[f].ref_table;
	return NULL;
}

void column_index_options_init(struct column_index_options *o)
{
	*o = (struct column_index_options){
		.lexical_dim = EMBED_LEXICAL_DEFAULT_DIM,
		.weights = {.connect = 0.4, .semantic = 0.4, .statistical = 0.2},
		.remote_retry_ms = 30000,
	};
}

char *link_column_document(const struct schema *s, int table, int column)
{
	const struct schema_table *t = &s->tables[table];
	const struct schema_column *c = &t->columns[column];
	struct strbuf sb;
	strbuf_init(&sb, 1 << 16);
	add_words(&sb, t->name);
	add_words(&sb, c->name);
	add_words(&sb, c->type);
	if (c->primary_key)
		strbuf_adds(&sb, "primary key ");
	const char *ref = referenced_table(t, column);
	if (ref) {
		strbuf_adds(&sb, "foreign key to ");
		add_words(&sb, ref);
	}
	if (c->comment)
		add_words(&sb, c->comment);
	if (t->comment && column == 0)
		add_words(&sb, t->comment);
	int shown = 0;
	for (size_t i = 0; i < c->n_samples && shown < DOC_SAMPLES; i++) {
		if (strlen(c->samples[i]) > DOC_SAMPLE_MAX_LEN)
			continue;
		strbuf_adds(&sb, shown ? ", " : "values ");
		strbuf_adds(&sb, c->samples[i]);
		shown++;
	}
	return strbuf_detach(&sb, NULL);
}

static char *table_document(const struct schema_table *t)
{
	struct strbuf sb;
	strbuf_init(&sb, 1 << 20);
	add_words(&sb, t->name);
	add_words(&sb, t->name); /* the table's own name weighs more than any one column */
	for (size_t c = 0; c < t->n_columns; c++)
		add_words(&sb, t->columns[c].name);
	if (t->comment)
		add_words(&sb, t->comment);
	return strbuf_detach(&sb, NULL);
}

/* Type family for join compatibility: 'i'nteger, 'n'umeric, 't'ext, 'o'ther. */
static char type_family(const char *type)
{
	char up[64];
	size_t n = 0;
	for (; type[n] && n + 1 < sizeof(up); n++)
		up[n] = (char)toupper((unsigned char)type[n]);
	up[n] = '\0';
	if (strstr(up, "INT") || strstr(up, "SERIAL"))
		return 'i';
	if (strstr(up, "CHAR") || strstr(up, "TEXT") || strstr(up, "CLOB") || strstr(up, "STRING"))
		return 't';
	if (strstr(up, "REAL") || strstr(up, "FLOA") || strstr(up, "DOUB") || strstr(up, "NUM") ||
	    strstr(up, "DEC"))
		return 'n';
	return 'o';
}

static bool types_compatible(const char *a, const char *b)
{
	char fa = type_family(a), fb = type_family(b);
	if (fa == 'o' || fb == 'o' || fa == fb)
		return true;
	return (fa == 'i' && fb == 'n') || (fa == 'n' && fb == 'i');
}

static int find_column(const struct schema_table *t, const char *name)
{
	for (size_t i = 0; i < t->n_columns; i++)
		if (strcmp(t->columns[i].name, name) == 0)
			return (int)i;
	for (size_t i = 0; i < t->n_columns; i++)
		if (strcasecmp(t->columns[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Share of the smaller sample set found in the other (0.5 when either has none). */
static double sample_overlap(const struct schema_column *a, const struct schema_column *b)
{
	if (!a->n_samples || !b->n_samples)
		return 0.5;
	size_t hit = 0;
	for (size_t i = 0; i < a->n_samples; i++)
		for (size_t j = 0; j < b->n_samples; j++)
			if (strcmp(a->samples[i], b->samples[j]) == 0) {
				hit++;
				break;
			}
	size_t m = a->n_samples < b->n_samples ? a->n_samples : b->n_samples;
	double o = (double)hit / (double)m;
	return o > 1 ? 1 : o;
}

struct edge_list {
	struct link_edge *v;
	size_t n, cap;
};

static bool has_edge_between(const struct edge_list *l, int a, int b)
{
	for (size_t i = 0; i < l->n; i++)
		if ((l->v[i].left_table == a && l->v[i].right_table == b) ||
		    (l->v[i].left_table == b && l->v[i].right_table == a))
			return true;
	return false;
}

static int add_edge(struct column_index *idx, struct edge_list *l, int lt, int lc, int rt, int rc,
		    enum link_edge_kind kind, double connect, const struct link_weights *w)
{
	if (lt == rt)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct link_edge *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -T2S_ERR_NOMEM;
		l->v = v;
		l->cap = cap;
	}
	const struct schema *s = idx->schema;
	unsigned dim = idx->lexical.dim;
	struct link_edge *e = &l->v[l->n++];
	e->left_table = lt, e->left_column = lc, e->right_table = rt, e->right_column = rc;
	e->kind = kind;
	e->connect = connect;
	double cos = embed_cosine(idx->table_vectors + (size_t)lt * dim, idx->table_vectors + (size_t)rt * dim, dim);
	e->semantic = 1.0 - (cos < 0 ? 0 : cos > 1 ? 1 : cos);
	e->statistical = 1.0 - sample_overlap(&s->tables[lt].columns[lc], &s->tables[rt].columns[rc]);
	e->cost = w->connect * e->connect + w->semantic * e->semantic + w->statistical * e->statistical + 1e-6;
	return 0;
}

static int declared_edges(struct column_index *idx, struct edge_list *l, const struct link_weights *w)
{
	const struct schema *s = idx->schema;
	for (size_t t = 0; t < s->n_tables; t++) {
		const struct schema_table *tab = &s->tables[t];
		for (size_t f = 0; f < tab->n_foreign_keys; f++) {
			const struct schema_foreign_key *fk = &tab->foreign_keys[f];
			int rt = fk->ref_index; /* resolved by schema_finish */
			if (rt < 0)
				continue;
			for (size_t k = 0; k < fk->n_columns; k++) {
				int lc = find_column(tab, fk->columns[k]);
				int rc = fk->ref_columns[k] ? find_column(&s->tables[rt], fk->ref_columns[k]) : -1;
				if (lc < 0 || rc < 0)
					continue;
				int rc2 = add_edge(idx, l, (int)t, lc, rt, rc, LINK_EDGE_FOREIGN_KEY, 0.0, w);
				if (rc2 < 0)
					return rc2;
			}
		}
	}
	return 0;
}

/* The single-column primary key of t, or -1. */
static int single_key(const struct schema_table *t)
{
	if (t->n_primary_key != 1)
		return -1;
	return find_column(t, t->primary_key[0]);
}

static void lower_copy(char *dst, size_t size, const char *src)
{
	size_t i = 0;
	for (; src[i] && i + 1 < size; i++)
		dst[i] = (char)tolower((unsigned char)src[i]);
	dst[i] = '\0';
}

/* "singer_id" / "SingerID" -> "singer"; "" when the name does not end in id. */
static void id_stem(const char *name, char *out, size_t size)
{
	lower_copy(out, size, name);
	size_t n = strlen(out);
	if (n > 3 && strcmp(out + n - 3, "_id") == 0)
		out[n - 3] = '\0';
	else if (n > 2 && strcmp(out + n - 2, "id") == 0)
		out[n - 2] = '\0';
	else
		out[0] = '\0';
}

/*
 * Table other than self whose lower-cased bare name is stem, stem+"s" or
 * stem+"es": the first one in self's own schema, else the only one in the
 * other schemas (two there: none, the name does not say which).
 */
static int table_for_stem(const struct schema *s, const char *stem, int self)
{
	char name[256];
	int other = -1, n_other = 0;
	for (size_t i = 0; i < s->n_tables && *stem; i++) {
		if ((int)i == self)
			continue;
		lower_copy(name, sizeof(name), s->tables[i].name);
		size_t n = strlen(stem);
		if (strncmp(name, stem, n) != 0 ||
		    !(name[n] == '\0' || strcmp(name + n, "s") == 0 || strcmp(name + n, "es") == 0))
			continue;
		if (strcmp(s->tables[i].schema, s->tables[self].schema) == 0)
			return (int)i;
		if (n_other++ == 0)
			other = (int)i;
	}
	return n_other == 1 ? other : -1;
}

static int name_to_key_edges(struct column_index *idx, struct edge_list *l, const struct link_weights *w)
{
	const struct schema *s = idx->schema;
	char stem[256];
	for (size_t t = 0; t < s->n_tables; t++)
		for (size_t c = 0; c < s->tables[t].n_columns; c++) {
			id_stem(s->tables[t].columns[c].name, stem, sizeof(stem));
			size_t n = strlen(stem);
			if (n && stem[n - 1] == '_')
				stem[n - 1] = '\0';
			int rt = table_for_stem(s, stem, (int)t);
			if (rt < 0 || has_edge_between(l, (int)t, rt))
				continue;
			const struct schema_table *ref = &s->tables[rt];
			int rc = single_key(ref);
			if (rc < 0)
				rc = find_column(ref, "id");
			if (rc < 0)
				rc = find_column(ref, s->tables[t].columns[c].name);
			if (rc < 0 || !types_compatible(s->tables[t].columns[c].type, ref->columns[rc].type))
				continue;
			int r = add_edge(idx, l, (int)t, (int)c, rt, rc, LINK_EDGE_NAME_TO_KEY, 0.3, w);
			if (r < 0)
				return r;
		}
	return 0;
}

static bool key_like(const char *name)
{
	char low[256];
	lower_copy(low, sizeof(low), name);
	size_t n = strlen(low);
	return (n >= 2 && strcmp(low + n - 2, "id") == 0) || (n >= 4 && strcmp(low + n - 4, "code") == 0) ||
	       (n >= 3 && strcmp(low + n - 3, "key") == 0) || (n >= 2 && strcmp(low + n - 2, "no") == 0);
}

static int cmp_name_ref(const void *a, const void *b, void *ctx)
{
	const struct schema *s = ctx;
	const struct link_column_ref *x = a, *y = b;
	int r = strcasecmp(s->tables[x->table].columns[x->column].name, s->tables[y->table].columns[y->column].name);
	if (r)
		return r;
	return x->table != y->table ? (x->table < y->table ? -1 : 1) : (x->column < y->column ? -1 : 1);
}

/* Same column name (case-insensitive) in two tables, with compatible types, one side a key. */
static int same_name_edges(struct column_index *idx, struct edge_list *l, const struct link_weights *w)
{
	const struct schema *s = idx->schema;
	size_t n = idx->n_columns;
	struct link_column_ref *sorted = malloc((n ? n : 1) * sizeof(*sorted));
	if (!sorted)
		return -T2S_ERR_NOMEM;
	memcpy(sorted, idx->columns, n * sizeof(*sorted));
	qsort_r(sorted, n, sizeof(*sorted), cmp_name_ref, (void *)s);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0;) {
		size_t j = i + 1;
		while (j < n && strcasecmp(s->tables[sorted[i].table].columns[sorted[i].column].name,
				  s->tables[sorted[j].table].columns[sorted[j].column].name) == 0)
			j++;
		/* "id" is every table's own key: sharing that name says nothing about a join. */
		bool generic = strcasecmp(s->tables[sorted[i].table].columns[sorted[i].column].name, "id") == 0;
		if (!generic && j - i >= 2 && j - i <= SAME_NAME_MAX_TABLES) {
			for (size_t a = i; a < j && rc == 0; a++)
				for (size_t b = a + 1; b < j && rc == 0; b++) {
					const struct link_column_ref *x = &sorted[a], *y = &sorted[b];
					const struct schema_column *cx = &s->tables[x->table].columns[x->column];
					const struct schema_column *cy = &s->tables[y->table].columns[y->column];
					if (x->table == y->table || !types_compatible(cx->type, cy->type))
						continue;
					bool kx = single_key(&s->tables[x->table]) == x->column;
					bool ky = single_key(&s->tables[y->table]) == y->column;
					if (!kx && !ky && !key_like(cx->name))
						continue;
					if (has_edge_between(l, x->table, y->table))
						continue;
					double connect = (kx || ky) ? 0.4 : 0.7;
					/* The key side goes on the right, like a foreign key's target. */
					rc = kx && !ky ? add_edge(idx, l, y->table, y->column, x->table, x->column,
								  LINK_EDGE_SAME_NAME, connect, w)
						       : add_edge(idx, l, x->table, x->column, y->table, y->column,
								  LINK_EDGE_SAME_NAME, connect, w);
				}
		}
		i = j;
	}
	free(sorted);
	return rc;
}

#define INCLUSION_MAX_TABLES 2000     /* the adjacency bitmap stays small */
#define INCLUSION_MAX_CHECKS 2000000L /* column pairs looked at, whatever the schema size */

/* Enough samples, and not only small integers (1, 2, 3 are in every key). */
static bool distinctive(const struct schema_column *c)
{
	if (c->n_samples < 3)
		return false;
	for (size_t i = 0; i < c->n_samples; i++) {
		char *end;
		long v = strtol(c->samples[i], &end, 10);
		if (*end || v >= 100 || v <= -100)
			return true;
	}
	return false;
}

/* Every sample of a is among b's samples. */
static bool samples_included(const struct schema_column *a, const struct schema_column *b)
{
	for (size_t i = 0; i < a->n_samples; i++) {
		bool found = false;
		for (size_t j = 0; j < b->n_samples && !found; j++)
			found = strcmp(a->samples[i], b->samples[j]) == 0;
		if (!found)
			return false;
	}
	return true;
}

static int value_inclusion_edges(struct column_index *idx, struct edge_list *l, const struct link_weights *w)
{
	const struct schema *s = idx->schema;
	size_t n = s->n_tables;
	if (n < 2 || n > INCLUSION_MAX_TABLES)
		return 0;
	unsigned char *adj = calloc(n * n / 8 + 1, 1);
	if (!adj)
		return -T2S_ERR_NOMEM;
#define ADJ(a, b) (adj[((size_t)(a) * n + (size_t)(b)) / 8] & (1u << (((size_t)(a) * n + (size_t)(b)) % 8)))
#define SET_ADJ(a, b) (adj[((size_t)(a) * n + (size_t)(b)) / 8] |= (unsigned char)(1u << (((size_t)(a) * n + (size_t)(b)) % 8)))
	for (size_t e = 0; e < l->n; e++) {
		SET_ADJ(l->v[e].left_table, l->v[e].right_table);
		SET_ADJ(l->v[e].right_table, l->v[e].left_table);
	}
	long checks = 0;
	int rc = 0;
	for (size_t rt = 0; rc == 0 && rt < n && checks < INCLUSION_MAX_CHECKS; rt++) {
		int rk = single_key(&s->tables[rt]);
		if (rk < 0 || !distinctive(&s->tables[rt].columns[rk]))
			continue;
		const struct schema_column *key = &s->tables[rt].columns[rk];
		for (size_t t = 0; rc == 0 && t < n && checks < INCLUSION_MAX_CHECKS; t++) {
			if (t == rt || ADJ(t, rt))
				continue;
			for (size_t c = 0; c < s->tables[t].n_columns; c++) {
				const struct schema_column *col = &s->tables[t].columns[c];
				checks++;
				if (col->primary_key || !distinctive(col) || !types_compatible(col->type, key->type) ||
				    !samples_included(col, key))
					continue;
				rc = add_edge(idx, l, (int)t, (int)c, (int)rt, rk, LINK_EDGE_VALUE_INCLUSION, 0.6, w);
				SET_ADJ(t, rt);
				SET_ADJ(rt, t);
				break;
			}
		}
	}
#undef ADJ
#undef SET_ADJ
	free(adj);
	return rc;
}

static int build_edges(struct column_index *idx, const struct link_weights *w)
{
	struct edge_list l = {0};
	int rc = declared_edges(idx, &l, w);
	if (rc == 0)
		rc = name_to_key_edges(idx, &l, w);
	if (rc == 0)
		rc = same_name_edges(idx, &l, w);
	if (rc == 0)
		rc = value_inclusion_edges(idx, &l, w);
	if (rc == 0)
		rc = steiner_graph_init(&idx->graph, (int)idx->schema->n_tables);
	for (size_t i = 0; rc == 0 && i < l.n; i++)
		rc = steiner_graph_add_edge(&idx->graph, l.v[i].left_table, l.v[i].right_table, l.v[i].cost, (int)i);
	idx->edges = l.v;
	idx->n_edges = l.n;
	return rc;
}

/* Cache key of a remote vector: embedder identity + hash of the document. */
static char *remote_key(const char *embedder_id, const char *doc)
{
	char hex[SHA256_HEX_LEN + 1];
	hash_sha256_hex(doc, strlen(doc), hex);
	size_t n = strlen(embedder_id) + 2 + SHA256_HEX_LEN;
	char *k = malloc(n);
	if (k)
		snprintf(k, n, "%s:%s", embedder_id, hex);
	return k;
}

static void normalise(float *v, size_t dim)
{
	double sum = 0;
	for (size_t i = 0; i < dim; i++)
		sum += (double)v[i] * v[i];
	if (sum <= 0)
		return;
	float inv = (float)(1.0 / sqrt(sum));
	for (size_t i = 0; i < dim; i++)
		v[i] *= inv;
}

/* The most common vector size among cached blobs (in floats), 0 when none is usable. */
static size_t cached_dimension(const struct embed_cache_blob *blobs, size_t n)
{
	size_t best = 0, best_count = 0;
	for (size_t i = 0; i < n; i++) {
		if (!blobs[i].data || !blobs[i].len || blobs[i].len % sizeof(float))
			continue;
		size_t d = blobs[i].len / sizeof(float), count = 0;
		if (d == best)
			continue;
		for (size_t j = i; j < n; j++)
			count += blobs[j].data && blobs[j].len == blobs[i].len;
		if (count > best_count) {
			best = d;
			best_count = count;
		}
	}
	return best;
}

/*
 * Remote vectors of the column documents, from the cache where possible.
 * One pass embeds the documents listed in missing[] in batches of
 * REMOTE_BATCH; the first batch fixes the dimension when nothing usable was
 * cached.  When a batch answers another dimension than the cached vectors
 * (the server's model changed), a second pass re-embeds every document; a
 * change of dimension within a pass that embeds everything is an error.
 */
struct remote_build {
	const struct column_index_options *o;
	char **docs;                   /* n column documents (borrowed) */
	char **keys;                   /* n cache keys (owned) */
	struct embed_cache_blob *blobs; /* n vectors, cached or embedded (owned) */
	size_t n;
	size_t *missing;               /* the documents still to embed (owned) */
	size_t n_missing;
	size_t dim;                    /* 0 until known */
	size_t other_dim;              /* the dimension a batch answered instead of dim */
	struct embed_cache_stats stats;
};

#define REMOTE_DIMENSION_CHANGED 1 /* a pass's result: a batch answered another dimension than dim */

static int remote_build_init(struct remote_build *rb, struct column_index *idx, char **docs,
			     const struct column_index_options *o)
{
	size_t n = idx->n_columns;
	*rb = (struct remote_build){.o = o, .docs = docs, .n = n};
	rb->keys = calloc(n ? n : 1, sizeof(*rb->keys));
	rb->blobs = calloc(n ? n : 1, sizeof(*rb->blobs));
	rb->missing = calloc(n ? n : 1, sizeof(*rb->missing));
	if (!rb->keys || !rb->blobs || !rb->missing)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < n; i++)
		if (!(rb->keys[i] = remote_key(idx->remote_id, docs[i])))
			return -T2S_ERR_NOMEM;
	return 0;
}

static void remote_build_release(struct remote_build *rb)
{
	for (size_t i = 0; i < rb->n; i++) {
		if (rb->keys)
			free(rb->keys[i]);
		if (rb->blobs)
			free(rb->blobs[i].data);
	}
	free(rb->keys);
	free(rb->blobs);
	free(rb->missing);
}

/* Cached vectors of the most common dimension are kept; every other document is missing. */
static int remote_from_cache(struct column_index *idx, struct remote_build *rb)
{
	if (rb->o->cache) {
		int rc = embed_cache_get_many(rb->o->cache, (const char *const *)rb->keys, rb->n, rb->blobs, &rb->stats);
		if (rc < 0)
			return rc;
	}
	rb->dim = cached_dimension(rb->blobs, rb->n);
	rb->n_missing = 0;
	for (size_t i = 0; i < rb->n; i++)
		if (!rb->blobs[i].data || !rb->dim || rb->blobs[i].len != rb->dim * sizeof(float))
			rb->missing[rb->n_missing++] = i;
	idx->remote_cache_hits = rb->n - rb->n_missing;
	idx->remote_cache_misses = rb->n_missing;
	return 0;
}

/* Every document is missing again, and the dimension unknown: the cached vectors are of no use. */
static void remote_forget_cache(struct column_index *idx, struct remote_build *rb)
{
	for (size_t i = 0; i < rb->n; i++)
		rb->missing[i] = i;
	rb->n_missing = rb->n;
	rb->dim = 0;
	idx->remote_cache_hits = 0;
	idx->remote_cache_misses = rb->n;
}

/* Copy the m vectors of vec (rb->dim each) into the blobs of missing[first..first+m) and cache them. */
static int remote_store_batch(struct remote_build *rb, size_t first, size_t m, const float *vec)
{
	struct embed_cache_blob put[REMOTE_BATCH];
	const char *put_keys[REMOTE_BATCH];
	for (size_t k = 0; k < m; k++) {
		struct embed_cache_blob *blob = &rb->blobs[rb->missing[first + k]];
		free(blob->data);
		blob->len = rb->dim * sizeof(float);
		blob->data = malloc(blob->len);
		if (!blob->data)
			return -T2S_ERR_NOMEM;
		memcpy(blob->data, vec + k * rb->dim, blob->len);
		put[k] = *blob;
		put_keys[k] = rb->keys[rb->missing[first + k]];
	}
	if (rb->o->cache)
		embed_cache_put_many(rb->o->cache, put_keys, put, m, &rb->stats);
	return 0;
}

/*
 * Embed the m documents of missing[first..first+m) in one call.  0 when
 * stored, REMOTE_DIMENSION_CHANGED (rb->other_dim set, nothing stored) when
 * the answer's dimension differs from a known rb->dim, else the call's error.
 */
static int remote_embed_batch(struct column_index *idx, struct remote_build *rb, size_t first, size_t m,
			      struct t2s_error *err)
{
	const char *batch[REMOTE_BATCH];
	for (size_t k = 0; k < m; k++)
		batch[k] = rb->docs[rb->missing[first + k]];
	float *vec = NULL;
	size_t got_dim = 0;
	struct model_call_stats cs = {0};
	int rc = model_embed(rb->o->embed_model, batch, m, &vec, &got_dim, &cs, err);
	idx->remote_calls++;
	idx->remote_http_status = cs.http_status;
	if (rc < 0)
		return rc;
	if (rb->dim && got_dim != rb->dim) {
		rb->other_dim = got_dim;
		rc = REMOTE_DIMENSION_CHANGED;
	} else {
		rb->dim = got_dim;
		rc = remote_store_batch(rb, first, m, vec);
	}
	free(vec);
	return rc;
}

/* One pass over the missing documents, batch by batch: 0, REMOTE_DIMENSION_CHANGED or an error. */
static int remote_embed_missing(struct column_index *idx, struct remote_build *rb, struct t2s_error *err)
{
	int rc = 0;
	for (size_t first = 0; rc == 0 && first < rb->n_missing; first += REMOTE_BATCH) {
		size_t left = rb->n_missing - first;
		rc = remote_embed_batch(idx, rb, first, left < REMOTE_BATCH ? left : REMOTE_BATCH, err);
	}
	return rc;
}

/* The missing documents embedded; all of them again once if the server's dimension is not the cached one. */
static int remote_embed(struct column_index *idx, struct remote_build *rb, struct t2s_error *err)
{
	bool embeds_everything = rb->n_missing == rb->n;
	int rc = remote_embed_missing(idx, rb, err);
	if (rc == REMOTE_DIMENSION_CHANGED && !embeds_everything) {
		remote_forget_cache(idx, rb);
		rc = remote_embed_missing(idx, rb, err);
	}
	if (rc == REMOTE_DIMENSION_CHANGED)
		rc = t2s_error_set(err, T2S_ERR_UPSTREAM, "embedding dimension changed from %zu to %zu within one build",
				   rb->dim, rb->other_dim);
	return rc;
}

/* idx->remote_vectors: every document's vector, normalised. */
static int remote_publish(struct column_index *idx, const struct remote_build *rb)
{
	if (!rb->n || !rb->dim)
		return 0;
	idx->remote_dim = rb->dim;
	idx->remote_vectors = malloc(rb->n * rb->dim * sizeof(float));
	if (!idx->remote_vectors)
		return -T2S_ERR_NOMEM;
	for (size_t i = 0; i < rb->n; i++) {
		memcpy(idx->remote_vectors + i * rb->dim, rb->blobs[i].data, rb->dim * sizeof(float));
		normalise(idx->remote_vectors + i * rb->dim, rb->dim);
	}
	return 0;
}

/* Fill idx->remote_vectors for docs, from the cache where possible. */
static int remote_vectors(struct column_index *idx, char **docs, const struct column_index_options *o,
			  struct t2s_error *err)
{
	const struct model_endpoint *ep = o->embed_model;
	snprintf(idx->remote_id, sizeof(idx->remote_id), "%s|%s", ep->base_url, ep->model);
	struct remote_build rb;
	int rc = remote_build_init(&rb, idx, docs, o);
	if (rc == 0)
		rc = remote_from_cache(idx, &rb);
	if (rc == 0)
		rc = remote_embed(idx, &rb, err);
	if (rc == 0)
		rc = remote_publish(idx, &rb);
	remote_build_release(&rb);
	if (rc == -T2S_ERR_NOMEM)
		t2s_error_set(err, T2S_ERR_NOMEM, "out of memory embedding columns");
	return rc;
}

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

/* Hash keys of every column's words (3+ letters), for the question-time mention tests. */
static int column_word_keys(struct column_index *idx)
{
	size_t total = 0;
	for (size_t i = 0; i < idx->n_columns; i++)
		for (char **w = idx->column_words[i]; w && *w; w++)
			total += strlen(*w) >= 3;
	idx->column_word_keys = calloc(total ? total : 1, sizeof(*idx->column_word_keys));
	idx->column_word_first = calloc(idx->n_columns + 1, sizeof(*idx->column_word_first));
	if (!idx->column_word_keys || !idx->column_word_first)
		return -T2S_ERR_NOMEM;
	size_t k = 0;
	for (size_t i = 0; i < idx->n_columns; i++) {
		idx->column_word_first[i] = k;
		for (char **w = idx->column_words[i]; w && *w; w++)
			if (strlen(*w) >= 3)
				link_word_key_make(*w, &idx->column_word_keys[k++]);
	}
	idx->column_word_first[idx->n_columns] = k;
	return 0;
}

/* The embedder's words of name with its abbreviations spelled out (one malloc'd block, see embed_lexical_words). */
static int spelled_words(const char *name, char ***ret)
{
	char *spelled = lexicon_spell_out(name);
	if (!spelled)
		return -T2S_ERR_NOMEM;
	int rc = embed_lexical_words(spelled, 0, ret, NULL);
	free(spelled);
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

static int lexical_vectors(struct column_index *idx, char **docs, const struct column_index_options *o,
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
		rc = spelled_words(s->tables[t].name, &idx->table_words[t]);
	idx->column_words = calloc(idx->n_columns ? idx->n_columns : 1, sizeof(*idx->column_words));
	if (rc == 0 && !idx->column_words)
		rc = -T2S_ERR_NOMEM;
	for (size_t i = 0; rc == 0 && i < idx->n_columns; i++)
		rc = spelled_words(s->tables[idx->columns[i].table].columns[idx->columns[i].column].name,
				   &idx->column_words[i]);
	if (rc == 0)
		rc = column_word_keys(idx);
	if (rc == 0)
		rc = related_words_build(idx->wordnet, idx->table_words, s->n_tables, idx->column_words, idx->n_columns,
					 &idx->related);
	for (size_t t = 0; rc == 0 && t < s->n_tables; t++) {
		char *doc = table_document(&s->tables[t]);
		rc = doc ? embed_lexical_vector(&idx->lexical, doc, idx->table_vectors + t * idx->lexical.dim)
			 : -T2S_ERR_NOMEM;
		free(doc);
	}
	if (rc == -T2S_ERR_NOMEM)
		t2s_error_set(err, T2S_ERR_NOMEM, "out of memory building the lexical index");
	return rc;
}

static int flatten_columns(struct column_index *idx)
{
	const struct schema *s = idx->schema;
	size_t n = 0;
	for (size_t t = 0; t < s->n_tables; t++)
		n += s->tables[t].n_columns;
	idx->columns = calloc(n ? n : 1, sizeof(*idx->columns));
	idx->table_first_column = calloc(s->n_tables + 1, sizeof(*idx->table_first_column));
	if (!idx->columns || !idx->table_first_column)
		return -T2S_ERR_NOMEM;
	size_t k = 0;
	for (size_t t = 0; t < s->n_tables; t++) {
		idx->table_first_column[t] = k;
		for (size_t c = 0; c < s->tables[t].n_columns; c++)
			idx->columns[k++] = (struct link_column_ref){(int)t, (int)c};
	}
	idx->table_first_column[s->n_tables] = k;
	idx->n_columns = n;
	return 0;
}

int column_index_build(struct schema *s, const struct column_index_options *o, struct column_index **ret,
		     struct t2s_error *err)
{
	double start = clock_now_ms();
	struct column_index *idx = calloc(1, sizeof(*idx));
	if (!idx)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	atomic_init(&idx->refs, 1);
	idx->schema = schema_ref(s);
	idx->wordnet = o->wordnet;
	int rc = flatten_columns(idx);
	char **docs = rc == 0 ? calloc(idx->n_columns ? idx->n_columns : 1, sizeof(*docs)) : NULL;
	if (!docs)
		rc = -T2S_ERR_NOMEM;
	for (size_t i = 0; rc == 0 && i < idx->n_columns; i++)
		if (!(docs[i] = link_column_document(s, idx->columns[i].table, idx->columns[i].column)))
			rc = -T2S_ERR_NOMEM;
	if (rc == 0)
		rc = lexical_vectors(idx, docs, o, err);
	if (rc == 0 && o->embed_model) {
		rc = remote_vectors(idx, docs, o, err);
		if (rc < 0 && rc != -T2S_ERR_NOMEM && o->lexical_on_remote_failure) {
			/* The lexical vectors are complete: keep them, and say why the remote ones are missing. */
			free(idx->remote_vectors);
			idx->remote_vectors = NULL;
			idx->remote_dim = 0;
			idx->remote_failure = fallback_reason_of(rc, idx->remote_http_status);
			snprintf(idx->remote_failure_detail, sizeof(idx->remote_failure_detail), "%.*s",
				 (int)sizeof(idx->remote_failure_detail) - 1, err ? err->message : "the embedding server failed");
			rc = 0;
		}
	}
	if (rc == 0)
		rc = build_edges(idx, &o->weights);
	for (size_t i = 0; docs && i < idx->n_columns; i++)
		free(docs[i]);
	free(docs);
	if (rc < 0) {
		if (rc == -T2S_ERR_NOMEM)
			t2s_error_set(err, T2S_ERR_NOMEM, "out of memory building the linking index");
		column_index_unref(idx);
		return rc;
	}
	idx->build_ms = clock_now_ms() - start;
	*ret = idx;
	return 0;
}

struct column_index *column_index_ref(struct column_index *idx)
{
	if (idx)
		atomic_fetch_add(&idx->refs, 1);
	return idx;
}

struct column_index *column_index_unref(struct column_index *idx)
{
	if (!idx || atomic_fetch_sub(&idx->refs, 1) != 1)
		return NULL;
	for (size_t i = 0; idx->column_vectors && i < idx->n_columns; i++)
		embed_sparse_release(&idx->column_vectors[i]);
	free(idx->column_vectors);
	for (size_t k = 0; idx->expansions && k < idx->n_expansions; k++)
		embed_sparse_release(&idx->expansions[k]);
	free(idx->expansions);
	free(idx->column_expansion);
	free(idx->column_expansion_scale);
	free(idx->table_vectors);
	for (size_t t = 0; idx->table_words && t < idx->schema->n_tables; t++)
		free(idx->table_words[t]);
	free(idx->table_words);
	related_words_release(&idx->related);
	for (size_t i = 0; idx->column_words && i < idx->n_columns; i++)
		free(idx->column_words[i]);
	free(idx->column_words);
	free(idx->column_word_keys);
	free(idx->column_word_first);
	free(idx->remote_vectors);
	free(idx->columns);
	free(idx->table_first_column);
	free(idx->edges);
	steiner_graph_release(&idx->graph);
	embed_lexical_release(&idx->lexical);
	schema_unref(idx->schema);
	free(idx);
	return NULL;
}
