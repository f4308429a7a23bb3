/*
 * link.c - the schema-linking stage (see link.h).
 */
#include "pipeline/link/link.h"

#include "common/clock.h"
#include "common/hash.h"
#include "common/limits.h"
#include "common/strbuf.h"
#include "common/tokens.h"
#include "common/workers.h"
#include "pipeline/text/question_spans.h"
#include "pipeline/text/lexicon.h"
#include "pipeline/values/value_index.h"
#include "pipeline/models/stage_metrics.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LINK_MAX_SHUFFLES 16

/*
 * Question-side lexical expansion (pipeline/text/lexicon.h): the question's
 * lexical vector is v(question) + NEAR_WEIGHT * v(near words) + FAR_WEIGHT *
 * v(hypernyms), normalised, so that a word the question says outranks one
 * it only implies.  Tuned on spider-train (see pipeline/link/README.md).
 * Four senses per question word: a paraphrase often uses a word in its
 * third or fourth sense ("point" for an item of a list); 5 sent more
 * columns for less.
 */
#define QUESTION_SENSES 4
#define QUESTION_NEAR_WEIGHT 0.5
#define QUESTION_FAR_WEIGHT 0.2

const struct link_params link_params_default = {
	.top_k = 25,
	.min_k = 1,
	.column_share = 0.5,
	.table_ratio = 0.75,
	.max_tables = 8,
	.lexical_weight = 0.5,
	.shuffles = 5,
	.llm_max_tables = 40,
	.llm_min_vote_share = 0.5,
	.llm_column_budget_tokens = 1500,
};

const char *link_mode_name(enum link_mode m)
{
	return m == LINK_MODE_LLM ? "llm" : m == LINK_MODE_HYBRID ? "hybrid" : "vector";
}

int link_mode_parse(const char *s)
{
	if (strcmp(s, "vector") == 0)
		return LINK_MODE_VECTOR;
	if (strcmp(s, "llm") == 0)
		return LINK_MODE_LLM;
	if (strcmp(s, "hybrid") == 0)
		return LINK_MODE_HYBRID;
	return -1;
}

/* Working state of one run. */
struct run {
	struct column_index *idx;
	const struct schema *s;
	const struct link_params *p;
	double *col_score;   /* per flat column */
	double *table_score; /* per table: best column score */
	int *table_best;     /* per table: flat index of its best column */
	unsigned *table_reason;
	int *table_votes;
	unsigned *col_reason;
	bool *table_whole;   /* per table: brings its columns whole (see "Columns" in link.h) */
	bool *table_low;     /* per table: named by the model in too few answers */
	int answers;         /* link model calls that answered */
	bool model_named;    /* the answers named at least one candidate table */
	int llm_http_status; /* HTTP status of the link model call whose error is reported */
	char *related;       /* schema words standing in for the question's orphan words (related_words.h) */
};

/* ---- retrieval ---------------------------------------------------------- */

/* q += w * lexical vector of text, using scratch (dim floats). */
static void add_expansion(const struct embed_lexical *m, const char *text, double w, float *scratch, float *q)
{
	if (!text || !*text || w == 0)
		return;
	embed_lexical_vector(m, text, scratch);
	for (unsigned k = 0; k < m->dim; k++)
		q[k] += (float)w * scratch[k];
}

/* The question's lexical vector with its expansion (see QUESTION_NEAR_WEIGHT), L2-normalised, into q. */
static int question_vector(const struct embed_lexical *m, const char *question, const struct lexicon_expansion *x,
			   float *q)
{
	embed_lexical_vector(m, question, q);
	if (!x || (!*x->near && !*x->far))
		return 0;
	float *scratch = malloc(m->dim * sizeof(float));
	if (!scratch)
		return -T2S_ERR_NOMEM;
	add_expansion(m, x->near, QUESTION_NEAR_WEIGHT, scratch, q);
	add_expansion(m, x->far, QUESTION_FAR_WEIGHT, scratch, q);
	free(scratch);
	double norm = 0;
	for (unsigned k = 0; k < m->dim; k++)
		norm += (double)q[k] * q[k];
	if (norm > 0)
		for (unsigned k = 0; k < m->dim; k++)
			q[k] = (float)(q[k] / sqrt(norm));
	return 0;
}

static int score_columns(struct run *r, const char *question, const struct lexicon_expansion *x,
			 const struct model_endpoint *embed_model, struct link_result *res, struct t2s_error *err)
{
	struct column_index *idx = r->idx;
	double t0 = clock_now_ms();
	float *q = malloc(idx->lexical.dim * sizeof(float));
	if (!q || question_vector(&idx->lexical, question, x, q) < 0) {
		free(q);
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	float *rq = NULL;
	size_t rdim = 0;
	if (embed_model && !idx->remote_vectors && idx->remote_failure)
		fallback_add(res->fallbacks, &res->n_fallbacks, "embed", idx->remote_failure,
			     "models.embed failed while the column index was built (%.200s): lexical scores only until "
			     "the index is rebuilt",
			     idx->remote_failure_detail);
	if (embed_model && idx->remote_vectors) {
		struct model_call_stats st = {0};
		const char *in[1] = {question};
		int rc = model_embed(embed_model, in, 1, &rq, &rdim, &st, err);
		stage_metrics_model_call("embed", rc, &st);
		res->model_calls++;
		if (rc == -T2S_ERR_NOMEM || rc == -T2S_ERR_INVALID) {
			free(q);
			return rc;
		}
		if (rc < 0)
			fallback_add(res->fallbacks, &res->n_fallbacks, "embed", fallback_reason_of(rc, st.http_status),
				     "models.embed failed (%.200s): the question was scored with the built-in lexical "
				     "embedder",
				     err->message);
		else if (rdim != idx->remote_dim)
			fallback_add(res->fallbacks, &res->n_fallbacks, "embed", FALLBACK_DIMENSION,
				     "the question's embedding has dimension %zu, the columns' %zu: the question was "
				     "scored with the built-in lexical embedder",
				     rdim, idx->remote_dim);
		if (rc < 0 || rdim != idx->remote_dim) {
			free(rq);
			rq = NULL;
			rdim = 0;
			t2s_error_clear(err);
		}
	}
	res->ms_embed = clock_now_ms() - t0;
	double qnorm = 0;
	for (size_t i = 0; rq && i < rdim; i++)
		qnorm += (double)rq[i] * rq[i];
	qnorm = qnorm > 0 ? sqrt(qnorm) : 1;
	double w = rq ? r->p->lexical_weight : 1.0;
	int lrc = column_index_lexical_scores(idx, q, r->col_score);
	for (size_t i = 0; lrc == 0 && i < idx->n_columns; i++) {
		double s = r->col_score[i];
		if (rq) {
			const float *v = idx->remote_vectors + i * rdim;
			double dot = 0;
			for (size_t k = 0; k < rdim; k++)
				dot += (double)v[k] * rq[k];
			s = w * s + (1 - w) * (dot / qnorm);
		}
		r->col_score[i] = s;
	}
	free(q);
	free(rq);
	if (lrc < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	for (size_t t = 0; t < r->s->n_tables; t++) {
		r->table_score[t] = -1;
		r->table_best[t] = -1;
		for (size_t i = idx->table_first_column[t]; i < idx->table_first_column[t + 1]; i++)
			if (r->col_score[i] > r->table_score[t]) {
				r->table_score[t] = r->col_score[i];
				r->table_best[t] = (int)i;
			}
	}
	return 0;
}

static int cmp_desc(const void *a, const void *b, void *ctx)
{
	const double *score = ctx;
	double x = score[*(const int *)a], y = score[*(const int *)b];
	if (x != y)
		return x > y ? -1 : 1;
	return *(const int *)a - *(const int *)b;
}

/* Indexes 0..n-1 sorted by score descending (ties by index); caller frees. */
static int *rank(const double *score, size_t n)
{
	int *order = malloc((n ? n : 1) * sizeof(*order));
	if (!order)
		return NULL;
	for (size_t i = 0; i < n; i++)
		order[i] = (int)i;
	qsort_r(order, n, sizeof(*order), cmp_desc, (void *)score);
	return order;
}

/*
 * The question's words as hash keys: a column word matches when it is one of
 * them, or one of them minus a short ending (question "teacher", column
 * "teach"), or it is one of them plus a short ending.
 */
/*
 * Truncated identifier words: a column word of TRUNCATION_MIN..MAX letters
 * matches a question word it begins, when 3+ letters are cut ("lat" for
 * "latitude", "long" for "longitude", "pop" for "population").
 */
#define TRUNCATION_MIN 3
#define TRUNCATION_MAX 4

struct question_keys {
	struct link_word_key *v;
	size_t n;
	/* Hash sets (open addressing, 0 = empty) so that a test costs O(1) however many
	   words the expansion adds: every key's h; the h of keys of 4+ letters; their h1, h2. */
	uint64_t *all, *longer, *prefixes, *truncated;
	size_t mask;
};

static void set_add(uint64_t *set, size_t mask, uint64_t h)
{
	if (!h)
		return;
	size_t i = (size_t)h & mask;
	while (set[i] && set[i] != h)
		i = (i + 1) & mask;
	set[i] = h;
}

static bool set_has(const uint64_t *set, size_t mask, uint64_t h)
{
	if (!h)
		return false;
	for (size_t i = (size_t)h & mask; set[i]; i = (i + 1) & mask)
		if (set[i] == h)
			return true;
	return false;
}

static int question_keys_make(char **words, struct question_keys *ret)
{
	size_t n = 0;
	while (words[n])
		n++;
	size_t slots = 16;
	while (slots < 8 * n)
		slots *= 2;
	ret->v = calloc(n ? n : 1, sizeof(*ret->v));
	ret->all = calloc(4 * slots, sizeof(uint64_t));
	if (!ret->v || !ret->all) {
		free(ret->v);
		free(ret->all);
		return -T2S_ERR_NOMEM;
	}
	ret->longer = ret->all + slots;
	ret->prefixes = ret->all + 2 * slots;
	ret->truncated = ret->all + 3 * slots;
	ret->mask = slots - 1;
	for (size_t i = 0; i < n; i++) {
		struct link_word_key *k = &ret->v[i];
		link_word_key_make(words[i], k);
		set_add(ret->all, ret->mask, k->h);
		if (k->len >= 4) {
			set_add(ret->longer, ret->mask, k->h);
			set_add(ret->prefixes, ret->mask, k->h1);
			set_add(ret->prefixes, ret->mask, k->h2);
		}
		/* Truncations: "lat" for "latitude", "long" for "longitude" (the rest is 3+ letters). */
		for (size_t cut = TRUNCATION_MIN; cut <= TRUNCATION_MAX && cut + 3 <= k->len; cut++)
			set_add(ret->truncated, ret->mask, link_word_hash(words[i], cut));
		/* Compounds: two consecutive words written as one ("last name" -> lastname). */
		char pair[128];
		if (i + 1 < n && snprintf(pair, sizeof(pair), "%s%s", words[i], words[i + 1]) < (int)sizeof(pair))
			set_add(ret->all, ret->mask, link_word_hash(pair, strlen(pair)));
	}
	ret->n = n;
	return 0;
}

static void question_keys_release(struct question_keys *q)
{
	free(q->v);
	free(q->all);
}

/*
 * A column word matches when it is a question word, or one of them minus a
 * short ending (question "teacher", column "teach"), or one of them plus a
 * short ending (both of 4+ letters; the prefix hashes say so in O(1)).
 */
static bool key_matches(const struct question_keys *q, const struct link_word_key *w)
{
	if (set_has(q->all, q->mask, w->h))
		return true;
	if (w->len >= TRUNCATION_MIN && w->len <= TRUNCATION_MAX && set_has(q->truncated, q->mask, w->h))
		return true;
	if (w->len < 4)
		return false;
	return set_has(q->prefixes, q->mask, w->h) || set_has(q->longer, q->mask, w->h1) ||
	       set_has(q->longer, q->mask, w->h2);
}

/* True when one of words (3+ letters) is among the question's words, up to a short ending. */
static bool words_mentioned(char **words, const struct question_keys *q)
{
	for (char **tw = words; tw && *tw; tw++) {
		struct link_word_key k;
		if (strlen(*tw) < 3)
			continue;
		link_word_key_make(*tw, &k);
		if (key_matches(q, &k))
			return true;
	}
	return false;
}

/* True when a word of table t's name is among the question's words (see words_mentioned). */
static bool name_mentioned(const struct run *r, int t, const struct question_keys *q)
{
	return words_mentioned(r->idx->table_words[t], q);
}

/* True when word (2-5 letters) spells the initials of consecutive question words ("mpg"). */
static bool acronym_of(const char *word, char **question_words)
{
	size_t n = strlen(word);
	if (n < 2 || n > 5)
		return false;
	for (char **start = question_words; *start; start++) {
		size_t k = 0;
		while (k < n && start[k] && start[k][0] == word[k])
			k++;
		if (k == n)
			return true;
	}
	return false;
}

/* Last parts of names that say what kind of value, not what about: "role_code", "pet_age"... */
static const char *const generic_parts[] = {"code", "name", "type", "date", "year", "time", "number", "num",
					    "count", "value", "desc", NULL};

static bool generic_part(const char *w)
{
	for (const char *const *g = generic_parts; *g; g++)
		if (strcmp(*g, w) == 0)
			return true;
	return false;
}

enum mention { MENTION_NONE, MENTION_PART, MENTION_FULL };

/* True when word is a word of table t's name. */
static bool own_table_word(const struct run *r, int t, const char *word)
{
	for (char **tw = r->idx->table_words[t]; tw && *tw; tw++)
		if (strcmp(*tw, word) == 0)
			return true;
	return false;
}

/*
 * MENTION_FULL when the words (3+ letters) of the column's name are in the
 * question (up to a short ending; all but one for names of three words or
 * more), or the name is an acronym of question words; MENTION_PART when
 * only the informative word of a two-word name is ("surface area" by
 * "area", "role_code" by "role"), or the first word of a longer name
 * ("budget_in_billions" by "budget").  A partial mention marks the column
 * but never requires its table.
 */
static enum mention column_mentioned(const struct run *r, size_t col, const struct question_keys *q,
				     char **all_words)
{
	char **cw = r->idx->column_words[col];
	if (cw && cw[0] && !cw[1] && acronym_of(cw[0], all_words))
		return MENTION_FULL;
	size_t first = r->idx->column_word_first[col], end = r->idx->column_word_first[col + 1];
	int words = (int)(end - first), seen = 0;
	bool hit[2] = {false, false};
	for (size_t k = first; k < end; k++) {
		bool m = key_matches(q, &r->idx->column_word_keys[k]);
		seen += m;
		if (k - first < 2)
			hit[k - first] = m;
	}
	if (seen > 0 && (seen == words || (words >= 3 && seen >= words - 1)))
		return MENTION_FULL;
	/* A partial mention needs a word that says something of the column: in table products,
	   "product_price" is a price, and the question's "products" names the table, not it. */
	int t = r->idx->columns[col].table;
	for (int k = 0; k < 2 && cw && cw[0]; k++)
		if (hit[k] && own_table_word(r, t, cw[k]))
			hit[k] = false;
	if (words == 2 && cw && cw[0] && cw[1] && !cw[2]) {
		bool head = hit[1] && !generic_part(cw[1]) && strlen(cw[1]) >= 4;
		bool modifier = hit[0] && generic_part(cw[1]) && strlen(cw[0]) >= 4;
		if (head || modifier)
			return MENTION_PART;
	}
	/* The first word of a longer name is its subject; the rest often says the unit
	   ("budget_in_billions", "height_feet", "price_in_dollar"). */
	if (words >= 2 && cw && cw[0] && cw[1] && hit[0] && strlen(cw[0]) >= 4 && !generic_part(cw[0]))
		return MENTION_PART;
	return MENTION_NONE;
}

static bool is_foreign_key(const struct schema_table *t, const char *column)
{
	for (size_t f = 0; f < t->n_foreign_keys; f++)
		for (size_t k = 0; k < t->foreign_keys[f].n_columns; k++)
			if (strcmp(t->foreign_keys[f].columns[k], column) == 0)
				return true;
	return false;
}

/* Order of flat columns by name, case-insensitively (ctx: the run). */
static int cmp_column_name(const void *a, const void *b, void *ctx)
{
	const struct run *r = ctx;
	const struct link_column_ref *x = &r->idx->columns[*(const size_t *)a], *y = &r->idx->columns[*(const size_t *)b];
	return strcasecmp(r->s->tables[x->table].columns[x->column].name, r->s->tables[y->table].columns[y->column].name);
}

static int select_mentioned_columns(struct run *r, const struct question_keys *q, char **all_words)
{
	size_t n_cols = r->idx->n_columns, n = 0, cap = 0;
	size_t *mentioned = NULL;
	for (size_t i = 0; i < n_cols; i++) {
		enum mention m = column_mentioned(r, i, q, all_words);
		if (m == MENTION_NONE)
			continue;
		if (m == MENTION_PART) { /* marks the column only */
			r->col_reason[i] |= LINK_BY_RETRIEVAL;
			continue;
		}
		if (n == cap) {
			size_t *v = realloc(mentioned, (cap = cap ? 2 * cap : 16) * sizeof(*v));
			if (!v) {
				free(mentioned);
				return -T2S_ERR_NOMEM;
			}
			mentioned = v;
		}
		mentioned[n++] = i;
		r->col_reason[i] |= LINK_BY_RETRIEVAL;
	}
	/* A mentioned name held by at most two tables requires them; a commoner one ("name") does not.
	   Sorted by name, the holders of a name are one run (n log n: an expanded question may
	   mention thousands of columns of a wide schema). */
	if (n > 1)
		qsort_r(mentioned, n, sizeof(*mentioned), cmp_column_name, r);
	for (size_t a = 0; a < n;) {
		size_t end = a + 1;
		while (end < n && cmp_column_name(&mentioned[a], &mentioned[end], r) == 0)
			end++;
		for (size_t k = a; end - a <= 2 && k < end; k++) {
			const struct link_column_ref *c = &r->idx->columns[mentioned[k]];
			/* A foreign key named after the table it references ("student_id") names that table, not its own. */
			if (!is_foreign_key(&r->s->tables[c->table], r->s->tables[c->table].columns[c->column].name))
				r->table_reason[c->table] |= LINK_BY_RETRIEVAL;
		}
		a = end;
	}
	free(mentioned);
	return 0;
}

/* "question near words" (malloc'd; NULL when out of memory). */
static char *question_with(const char *question, const char *near)
{
	struct strbuf sb;
	strbuf_init(&sb, T2S_QUESTION_MAX_BYTES + (64u << 10));
	if (strbuf_adds(&sb, question) < 0 || strbuf_adds(&sb, " ") < 0 || strbuf_adds(&sb, near) < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

/* True when the last word of table t's name, its head, is among the keys ("region" of affected_region). */
static bool head_mentioned(const struct run *r, int t, const struct question_keys *q)
{
	char **tw = r->idx->table_words[t];
	size_t n = 0;
	while (tw && tw[n])
		n++;
	char *head[2] = {n ? tw[n - 1] : NULL, NULL};
	return n && words_mentioned(head, q);
}

/*
 * The stand-ins of the question's orphan words (r->related, see
 * related_words.h) name the tables whose head they are ("goods" names
 * products, "districts" region, not product_characteristics), and mark the
 * columns the question names with their help ("goods name": product_name).
 * A marked column does not require its table: a stand-in is weaker evidence
 * than a word the user typed.
 */
static int select_by_stand_ins(struct run *r, const char *question, char **all_words, int *named)
{
	if (!r->related || !*r->related)
		return 0;
	char **swords = NULL, **cwords = NULL;
	struct question_keys sk = {0}, ck = {0};
	char *with = question_with(question, r->related);
	int rc = !with || embed_lexical_words(r->related, 0, &swords, NULL) < 0 || question_keys_make(swords, &sk) < 0 ||
			 embed_lexical_words(with, 0, &cwords, NULL) < 0 || question_keys_make(cwords, &ck) < 0
		 ? -T2S_ERR_NOMEM
		 : 0;
	for (size_t t = 0; rc == 0 && t < r->s->n_tables && *named < r->p->max_tables; t++)
		if (head_mentioned(r, (int)t, &sk)) {
			*named += !r->table_reason[t];
			r->table_reason[t] |= LINK_BY_RETRIEVAL;
		}
	for (size_t i = 0; rc == 0 && i < r->idx->n_columns; i++)
		if (!r->col_reason[i] && column_mentioned(r, i, &ck, all_words) != MENTION_NONE)
			r->col_reason[i] |= LINK_BY_RETRIEVAL;
	question_keys_release(&sk);
	question_keys_release(&ck);
	free(swords);
	free(cwords);
	free(with);
	return rc;
}

/*
 * Required tables and columns from retrieval alone.  rq->question is the
 * question with its near words (mentions); original is the question itself
 * (acronyms spell the initials of what the user typed).
 */
static int select_by_retrieval(struct run *r, const struct link_request *rq, const char *original)
{
	char **qwords = NULL, **all_words = NULL;
	struct question_keys q = {0};
	/* Unstemmed, with stop words: acronyms use every word ("miles per gallon"). */
	int rc = embed_lexical_words(rq->question, 0, &qwords, NULL) < 0 ||
			 embed_lexical_words(original, EMBED_WORDS_KEEP_STOP | EMBED_WORDS_NO_STEM, &all_words, NULL) < 0 ||
			 question_keys_make(qwords, &q) < 0
		 ? -T2S_ERR_NOMEM
		 : 0;
	int named = 0;
	for (size_t t = 0; rc == 0 && t < r->s->n_tables && named < r->p->max_tables; t++)
		if (name_mentioned(r, (int)t, &q)) {
			r->table_reason[t] |= LINK_BY_RETRIEVAL;
			named++;
		}
	if (rc == 0)
		rc = select_mentioned_columns(r, &q, all_words);
	if (rc == 0)
		rc = select_by_stand_ins(r, rq->question, all_words, &named);
	question_keys_release(&q);
	free(qwords);
	free(all_words);
	if (rc < 0)
		return rc;
	size_t n_tables = r->s->n_tables;
	int *torder = rank(r->table_score, n_tables);
	if (!torder)
		return -T2S_ERR_NOMEM;
	double best = n_tables ? r->table_score[torder[0]] : 0;
	int chosen = 0;
	for (size_t i = 0; i < n_tables && chosen + named < r->p->max_tables; i++) {
		int t = torder[i];
		if (r->table_score[t] <= 0 || (i > 0 && r->table_score[t] < r->p->table_ratio * best))
			break; /* a question sharing nothing with the schema links nothing */
		chosen += !r->table_reason[t];
		r->table_reason[t] |= LINK_BY_RETRIEVAL;
	}
	free(torder);
	return 0;
}

#define VALUE_HIT_MIN_SCORE 0.9
#define VALUE_HITS_PER_SPAN 4

#define RANGE_HITS_PER_SPAN 2

/*
 * A number or date in the question ("after 1980") belongs to a column whose
 * range holds it: among the required tables' such columns, the best-scoring
 * ones are kept.
 */
static void range_hits(struct run *r, struct value_index *vi, const char *text)
{
	struct value_column_ref cols[64];
	size_t n = 0;
	if (value_index_range_columns(vi, text, cols, 64, &n) < 0)
		return;
	for (int kept = 0; kept < RANGE_HITS_PER_SPAN; kept++) {
		size_t best = n;
		double best_score = -1;
		for (size_t k = 0; k < n; k++) {
			size_t flat = r->idx->table_first_column[cols[k].table] + (size_t)cols[k].column;
			const struct schema_table *t = &r->s->tables[cols[k].table];
			if (!r->table_reason[cols[k].table] || (r->col_reason[flat] & LINK_BY_VALUE) ||
			    t->columns[cols[k].column].primary_key || is_foreign_key(t, t->columns[cols[k].column].name))
				continue; /* keys are identifiers, not quantities */
			if (r->col_score[flat] > best_score) {
				best_score = r->col_score[flat];
				best = k;
			}
		}
		if (best == n)
			break;
		r->col_reason[r->idx->table_first_column[cols[best].table] + (size_t)cols[best].column] |= LINK_BY_VALUE;
	}
}

/*
 * Value hits: a question span that matches stored values (quoted and
 * capitalised spans, n-grams) requires the column holding them, unless the
 * same span matches values in more than two tables (then it only marks
 * columns of tables required otherwise).
 */
static int select_by_values(struct run *r, const struct link_request *rq)
{
	if (!rq->values || strcmp(value_index_schema(rq->values)->hash, r->s->hash) != 0)
		return 0;
	struct span_list spans;
	if (question_spans(rq->question, &spans) < 0)
		return -T2S_ERR_NOMEM;
	struct value_match m[VALUE_HITS_PER_SPAN];
	for (size_t i = 0; i < spans.n; i++) {
		const struct span *sp = &spans.v[i];
		size_t n = 0;
		struct t2s_error ignored;
		if (sp->kind == SPAN_NUMBER || sp->kind == SPAN_DATE) {
			range_hits(r, rq->values, sp->text);
			continue;
		}
		if (strlen(sp->text) < 3 ||
		    value_index_lookup(rq->values, sp->text, VALUE_HIT_MIN_SCORE, VALUE_HITS_PER_SPAN, m, &n, &ignored) < 0)
			continue;
		int tables = 0;
		for (size_t k = 0; k < n; k++) {
			bool seen = false;
			for (size_t j = 0; j < k; j++)
				seen |= m[j].table == m[k].table;
			tables += !seen;
		}
		for (size_t k = 0; k < n; k++) {
			size_t flat = r->idx->table_first_column[m[k].table] + (size_t)m[k].column;
			if (tables > 2 && !r->table_reason[m[k].table])
				continue;
			r->col_reason[flat] |= LINK_BY_VALUE;
			r->table_reason[m[k].table] |= LINK_BY_VALUE;
		}
	}
	question_spans_release(&spans);
	return 0;
}

/*
 * Columns of the required tables: each keeps its best-scoring columns, up to
 * column_share of its columns (at least min_k), and top_k in all.  Columns
 * named in the question are already in.
 */
/* The first text column whose name holds "name" or "title", else -1. */
static int label_column(const struct schema_table *t)
{
	for (size_t c = 0; c < t->n_columns; c++) {
		const struct schema_column *col = &t->columns[c];
		if (col->primary_key)
			continue;
		if (strcasestr(col->name, "name") || strcasestr(col->name, "title"))
			return (int)c;
	}
	return -1;
}

/* Tables the model chose bring their columns whole; those it named in too few answers are low_votes. */
static void mark_whole_tables(struct run *r)
{
	int need = (int)ceil(r->p->llm_min_vote_share * (double)r->answers - 1e-9);
	if (need < 1)
		need = 1;
	for (size_t t = 0; t < r->s->n_tables; t++) {
		if (!(r->table_reason[t] & LINK_BY_LLM))
			continue;
		r->model_named = true;
		if (r->table_votes[t] < need) {
			r->table_low[t] = true;
			continue;
		}
		r->table_whole[t] = true;
		for (size_t i = r->idx->table_first_column[t]; i < r->idx->table_first_column[t + 1]; i++)
			r->col_reason[i] |= LINK_BY_LLM;
	}
}

/*
 * A question asking for a thing's information ("all the information about
 * each election", "list all info about people") wants whole rows: the
 * best-scoring required table brings every column.
 */
static const char *const whole_row_words[] = {"information", "info", NULL};

static int whole_row_table(const struct run *r, const char *question)
{
	char **words = NULL, **stems = NULL;
	if (embed_lexical_words(question, EMBED_WORDS_KEEP_STOP | EMBED_WORDS_NO_STEM, &words, NULL) < 0)
		return -1;
	bool asks = false;
	for (char **w = words; *w && !asks; w++)
		for (const char *const *x = whole_row_words; *x && !asks; x++)
			asks = strcmp(*w, *x) == 0;
	free(words);
	struct question_keys q = {0};
	if (!asks || embed_lexical_words(question, 0, &stems, NULL) < 0 || question_keys_make(stems, &q) < 0) {
		free(stems);
		return -1;
	}
	/* The thing is the table the question names, else the best-scoring one. */
	int best = -1;
	bool best_named = false;
	for (size_t t = 0; t < r->s->n_tables; t++) {
		if (!r->table_reason[t])
			continue;
		bool named = name_mentioned(r, (int)t, &q);
		if (best < 0 || named > best_named || (named == best_named && r->table_score[t] > r->table_score[best])) {
			best = (int)t;
			best_named = named;
		}
	}
	question_keys_release(&q);
	free(stems);
	return best;
}

/* Case-insensitive hash of a column name (0 never: set_add's empty slot). */
static uint64_t name_hash(const char *name)
{
	char buf[256];
	size_t n = 0;
	for (; name[n] && n < sizeof(buf); n++)
		buf[n] = (char)tolower((unsigned char)name[n]);
	uint64_t h = link_word_hash(buf, n);
	return h ? h : 1;
}

/* True when a key join (declared or inferred) links table t to another required table. */
static bool joined_to_required(const struct run *r, int t)
{
	for (size_t e = 0; e < r->idx->n_edges; e++) {
		const struct link_edge *x = &r->idx->edges[e];
		int other = x->left_table == t ? x->right_table : x->right_table == t ? x->left_table : -1;
		if (other >= 0 && other != t && r->table_reason[other])
			return true;
	}
	return false;
}

/*
 * A required table no key joins to the other required tables joins them, if
 * at all, on a column name they share (teachers.classroom = list.classroom):
 * those columns are shown on both sides.  Tables sharing more than
 * SHARED_NAMES_MAX names are copies of one shape (yearly tables), not a join.
 */
#define SHARED_NAMES_MAX 3

static int shared_name_columns(struct run *r)
{
	size_t cap = 0;
	for (size_t t = 0; t < r->s->n_tables; t++)
		if (r->table_reason[t] && r->s->tables[t].n_columns > cap)
			cap = r->s->tables[t].n_columns;
	size_t slots = 16;
	while (slots < 2 * cap)
		slots *= 2;
	uint64_t *set = malloc(slots * sizeof(*set));
	if (!set)
		return -T2S_ERR_NOMEM;
	for (size_t t = 0; t < r->s->n_tables; t++) {
		if (!r->table_reason[t] || joined_to_required(r, (int)t))
			continue;
		const struct schema_table *a = &r->s->tables[t];
		memset(set, 0, slots * sizeof(*set));
		for (size_t i = 0; i < a->n_columns; i++)
			set_add(set, slots - 1, name_hash(a->columns[i].name));
		for (size_t u = 0; u < r->s->n_tables; u++) {
			if (u == t || !r->table_reason[u])
				continue;
			const struct schema_table *b = &r->s->tables[u];
			int shared[SHARED_NAMES_MAX], n = 0;
			for (size_t j = 0; j < b->n_columns && n <= SHARED_NAMES_MAX; j++)
				if (set_has(set, slots - 1, name_hash(b->columns[j].name))) {
					if (n < SHARED_NAMES_MAX)
						shared[n] = (int)j;
					n++;
				}
			for (int k = 0; n <= SHARED_NAMES_MAX && k < n; k++)
				for (size_t i = 0; i < a->n_columns; i++)
					if (strcasecmp(a->columns[i].name, b->columns[shared[k]].name) == 0) {
						r->col_reason[r->idx->table_first_column[t] + i] |= LINK_BY_JOIN;
						r->col_reason[r->idx->table_first_column[u] + (size_t)shared[k]] |= LINK_BY_JOIN;
					}
		}
	}
	free(set);
	return 0;
}

/*
 * The share rule fills a table only with columns scoring at least this
 * fraction of the best candidate column's score: a table the question barely
 * touches does not bring half of its columns (tuned on spider-train: 0.2,
 * 0.3, a third, 0.36, 0.4 traded recall for columns sent; 0.43 with four
 * question senses, whose near words mention more columns).
 */
#define COLUMN_FLOOR_RATIO 0.43

static int select_columns(struct run *r, const struct link_request *rq)
{
	size_t n_tables = r->s->n_tables;
	mark_whole_tables(r);
	int top_k = rq->top_k > 0 ? rq->top_k : r->p->top_k;
	int *budget = calloc(n_tables + 1, sizeof(int));
	size_t n_candidates = 0;
	for (size_t t = 0; t < n_tables; t++)
		if (r->table_reason[t])
			n_candidates += r->idx->table_first_column[t + 1] - r->idx->table_first_column[t];
	/* Only the required tables' columns compete: big schemas never sort every column. */
	int *cand = malloc((n_candidates ? n_candidates : 1) * sizeof(int));
	if (!budget || !cand) {
		free(budget);
		free(cand);
		return -T2S_ERR_NOMEM;
	}
	n_candidates = 0;
	for (size_t t = 0; t < n_tables; t++) {
		if (!r->table_reason[t])
			continue;
		const struct schema_table *tab = &r->s->tables[t];
		size_t first = r->idx->table_first_column[t], end = r->idx->table_first_column[t + 1];
		int b = (int)ceil(r->p->column_share * (double)(end - first));
		budget[t] = b < r->p->min_k ? r->p->min_k : b;
		/* Hybrid: the model saw this table and named others, not it.  It stays (recall if the model
		   erred), showing only what the question points at: its best column, the columns the
		   question names or holds values of, and join endpoints. */
		if (r->model_named && !(r->table_reason[t] & LINK_BY_LLM)) {
			budget[t] = 0;
			for (size_t i = first; i < end; i++)
				cand[n_candidates++] = (int)i;
			continue;
		}
		for (size_t i = first; i < end; i++) {
			cand[n_candidates++] = (int)i;
			if (tab->columns[r->idx->columns[i].column].primary_key) /* keys count rows and join */
				r->col_reason[i] |= LINK_BY_JOIN;
		}
		/* The label column (a name or title) stands for the table's rows in answers. */
		int label = label_column(tab);
		if (label >= 0)
			r->col_reason[first + (size_t)label] |= LINK_BY_RETRIEVAL;
		/* Foreign-key columns are not brought for themselves: the joins between required tables
		   bring their endpoints (steiner_step), and the fill below keeps those the question scores. */
	}
	if (!r->model_named && shared_name_columns(r) < 0) {
		free(budget);
		free(cand);
		return -T2S_ERR_NOMEM;
	}
	int whole = r->model_named ? -1 : whole_row_table(r, rq->question);
	for (size_t i = whole >= 0 ? r->idx->table_first_column[whole] : 0;
	     whole >= 0 && i < r->idx->table_first_column[whole + 1]; i++)
		r->col_reason[i] |= LINK_BY_RETRIEVAL;
	qsort_r(cand, n_candidates, sizeof(*cand), cmp_desc, r->col_score);
	double floor = n_candidates ? COLUMN_FLOOR_RATIO * r->col_score[cand[0]] : 0;
	int total = 0;
	for (size_t i = 0; i < n_candidates; i++)
		if (r->col_reason[cand[i]] && !r->table_whole[r->idx->columns[cand[i]].table]) {
			budget[r->idx->columns[cand[i]].table]--;
			total++;
		}
	for (size_t i = 0; i < n_candidates && total < top_k; i++) {
		int c = cand[i];
		int t = r->idx->columns[c].table;
		if (r->col_reason[c] || budget[t] <= 0 || r->col_score[c] <= 0 || r->col_score[c] < floor)
			continue;
		r->col_reason[c] |= LINK_BY_RETRIEVAL;
		budget[t]--;
		total++;
	}
	free(budget);
	free(cand);
	return 0;
}

/* ---- column budget ------------------------------------------------------ */

#define BUDGET_SAMPLES 3 /* sample values a column's prompt line shows (generate.sample_values) */

/* Bytes of column c's line in the generator's CREATE TABLE: "  name type, -- comment; 'v', ...". */
static size_t column_bytes(const struct schema_column *c)
{
	size_t n = strlen(c->name) + strlen(c->type) + 5;
	if (c->comment)
		n += strlen(c->comment) + 4;
	for (size_t k = 0; k < c->n_samples && k < BUDGET_SAMPLES; k++)
		n += strlen(c->samples[k]) + 4;
	return n;
}

static const struct schema_column *flat_column(const struct run *r, size_t i)
{
	const struct link_column_ref *c = &r->idx->columns[i];
	return &r->s->tables[c->table].columns[c->column];
}

/* Bytes of the columns linked so far. */
static size_t linked_bytes(const struct run *r)
{
	size_t bytes = 0;
	for (size_t i = 0; i < r->idx->n_columns; i++)
		if (r->col_reason[i] && r->table_reason[r->idx->columns[i].table])
			bytes += column_bytes(flat_column(r, i));
	return bytes;
}

/*
 * The columns a budget may drop: brought whole and for no other reason (not
 * a key, the label, a value hit), not the table's best column, not named by
 * the question's words.  Returned sorted lowest score first; caller frees.
 */
static int droppable_columns(const struct run *r, const char *question, int **ret, size_t *ret_n)
{
	char **qwords = NULL, **all_words = NULL;
	struct question_keys q = {0};
	int *v = malloc((r->idx->n_columns ? r->idx->n_columns : 1) * sizeof(*v));
	int rc = !v || embed_lexical_words(question, 0, &qwords, NULL) < 0 ||
			 embed_lexical_words(question, EMBED_WORDS_KEEP_STOP | EMBED_WORDS_NO_STEM, &all_words, NULL) < 0 ||
			 question_keys_make(qwords, &q) < 0
		 ? -T2S_ERR_NOMEM
		 : 0;
	size_t n = 0;
	for (size_t i = 0; rc == 0 && i < r->idx->n_columns; i++) {
		int t = r->idx->columns[i].table;
		if (!r->table_whole[t] || r->col_reason[i] != LINK_BY_LLM || r->table_best[t] == (int)i ||
		    column_mentioned(r, i, &q, all_words) != MENTION_NONE)
			continue;
		v[n++] = (int)i;
	}
	question_keys_release(&q);
	free(qwords);
	free(all_words);
	if (rc < 0) {
		free(v);
		return rc;
	}
	qsort_r(v, n, sizeof(*v), cmp_desc, r->col_score);
	for (size_t a = 0, b = n ? n - 1 : 0; a < b; a++, b--) { /* lowest first */
		int tmp = v[a];
		v[a] = v[b];
		v[b] = tmp;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* Over llm_column_budget_tokens, drop columns brought whole (see "Column budget" in link.h). */
static int apply_column_budget(struct run *r, const struct link_request *rq, struct link_result *res)
{
	long budget = r->p->llm_column_budget_tokens;
	res->column_budget_tokens = budget > 0 ? budget : 0;
	size_t bytes = linked_bytes(r);
	if (budget <= 0 || tokens_estimate_bytes(bytes) <= budget)
		return 0;
	int *drop = NULL;
	size_t n = 0;
	int rc = droppable_columns(r, rq->question, &drop, &n);
	if (rc < 0)
		return rc;
	res->cut = malloc((n ? n : 1) * sizeof(*res->cut));
	if (!res->cut) {
		free(drop);
		return -T2S_ERR_NOMEM;
	}
	for (size_t k = 0; k < n && tokens_estimate_bytes(bytes) > budget; k++) {
		size_t i = (size_t)drop[k];
		const struct link_column_ref *c = &r->idx->columns[i];
		bytes -= column_bytes(flat_column(r, i));
		r->col_reason[i] = 0;
		res->cut[res->n_cut++] =
			(struct link_column){c->table, c->column, r->col_score[i] > 0 ? r->col_score[i] : 0, LINK_BY_LLM};
	}
	free(drop);
	return 0;
}

/* ---- LLM table linking -------------------------------------------------- */

struct shuffle_job {
	const struct run *r;
	const struct model_endpoint *ep;
	const char *question;
	const int *candidates;
	size_t n_candidates;
	unsigned seed;
	/* results */
	int rc;
	struct t2s_error err;
	char *answer;
	struct model_call_stats stats;
};

static unsigned next_rand(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 8;
}

static char *build_prompt(const struct shuffle_job *job)
{
	const struct schema *s = job->r->s;
	struct strbuf sb;
	strbuf_init(&sb, 4u << 20);
	int *order = malloc((job->n_candidates ? job->n_candidates : 1) * sizeof(*order));
	if (!order)
		return NULL;
	memcpy(order, job->candidates, job->n_candidates * sizeof(*order));
	unsigned state = job->seed;
	for (size_t i = job->n_candidates; i > 1; i--) { /* Fisher-Yates */
		size_t j = next_rand(&state) % i;
		int tmp = order[i - 1];
		order[i - 1] = order[j];
		order[j] = tmp;
	}
	strbuf_adds(&sb, "Tables of the database, with their columns:\n");
	for (size_t i = 0; i < job->n_candidates; i++) {
		const struct schema_table *t = &s->tables[order[i]];
		strbuf_addf(&sb, "- %s(", t->api_name);
		for (size_t c = 0; c < t->n_columns; c++)
			strbuf_addf(&sb, "%s%s", c ? ", " : "", t->columns[c].name);
		strbuf_adds(&sb, ")\n");
	}
	strbuf_adds(&sb, "Foreign keys:\n");
	for (size_t i = 0; i < job->n_candidates; i++) {
		const struct schema_table *t = &s->tables[order[i]];
		for (size_t f = 0; f < t->n_foreign_keys; f++)
			for (size_t k = 0; k < t->foreign_keys[f].n_columns; k++)
				strbuf_addf(&sb, "- %s.%s = %s.%s\n", t->api_name, t->foreign_keys[f].columns[k],
					    t->foreign_keys[f].ref_api_name, t->foreign_keys[f].ref_columns[k]);
	}
	strbuf_addf(&sb, "Question: %s\n", job->question);
	strbuf_adds(&sb, "List every table needed to write the SQL query that answers the question, including "
			 "tables needed only to join others. Answer with a JSON array of table names and nothing else.");
	free(order);
	return strbuf_detach(&sb, NULL);
}

/* Shuffle i of the jobs array arg (a task of workers_for, which carries the request's trace). */
static void shuffle_task(void *arg, size_t i)
{
	struct shuffle_job *job = (struct shuffle_job *)arg + i;
	char *prompt = build_prompt(job);
	if (!prompt) {
		job->rc = t2s_error_set(&job->err, T2S_ERR_NOMEM, "out of memory");
		return;
	}
	struct model_message msgs[2] = {
		{"system", "You are an expert database engineer. You pick the tables a SQL query needs."},
		{"user", prompt},
	};
	job->rc = model_chat(job->ep, msgs, 2, &job->answer, &job->stats, &job->err);
	free(prompt);
}

/* How a model's answer may name table t, loosest last (see find_candidate). */
static bool names_table(const struct schema_table *t, const char *name, int tier)
{
	if (tier == 0)
		return strcmp(t->api_name, name) == 0;
	if (tier == 2)
		return strcasecmp(t->name, name) == 0;
	const char *dot = strchr(name, '.');
	return strcasecmp(t->api_name, name) == 0 ||
	       (dot && strlen(t->schema) == (size_t)(dot - name) &&
		strncasecmp(t->schema, name, (size_t)(dot - name)) == 0 && strcasecmp(t->name, dot + 1) == 0);
}

/*
 * The candidate a model's answer names: by its API name exactly; else by
 * its API name or "schema.table" case-insensitively; else by its bare name
 * case-insensitively.  At each step but the first, a name two candidates
 * share names none (a bare "t" for "a.t" and "b.t"): the answer is not
 * guessed at.
 */
static int find_candidate(const struct schema *s, const int *candidates, size_t n, const char *name)
{
	for (int tier = 0; tier < 3; tier++) {
		int found = -1;
		for (size_t i = 0; i < n; i++) {
			if (!names_table(&s->tables[candidates[i]], name, tier) || found == candidates[i])
				continue;
			if (found >= 0 || tier == 0)
				return tier == 0 ? candidates[i] : -1;
			found = candidates[i];
		}
		if (found >= 0)
			return found;
	}
	return -1;
}

/* Trim spaces, quotes, backticks, brackets and list bullets from both ends, in place. */
static char *trim_name(char *p)
{
	while (*p && (isspace((unsigned char)*p) || strchr("\"'`[*-", *p)))
		p++;
	size_t n = strlen(p);
	while (n && (isspace((unsigned char)p[n - 1]) || strchr("\"'`].,;", p[n - 1])))
		p[--n] = '\0';
	return p;
}

static int add_unknown(char ***unknown, size_t *n, const char *name)
{
	if (!*name || *n >= 64)
		return 0;
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*unknown)[i], name) == 0)
			return 0;
	char **v = realloc(*unknown, (*n + 1) * sizeof(*v));
	if (!v)
		return -T2S_ERR_NOMEM;
	*unknown = v;
	v[*n] = strndup(name, 200);
	if (!v[*n])
		return -T2S_ERR_NOMEM;
	(*n)++;
	return 0;
}

static int take_name(const struct schema *s, const int *candidates, size_t n_candidates, const char *name,
		     int *ret_tables, size_t *ret_n, char ***unknown, size_t *n_unknown)
{
	int t = find_candidate(s, candidates, n_candidates, name);
	if (t < 0)
		return add_unknown(unknown, n_unknown, name);
	for (size_t i = 0; i < *ret_n; i++)
		if (ret_tables[i] == t)
			return 0;
	if (*ret_n < n_candidates)
		ret_tables[(*ret_n)++] = t;
	return 0;
}

int link_parse_answer(const struct schema *s, const int *candidates, size_t n_candidates, const char *answer,
		      int *ret_tables, size_t *ret_n, char ***ret_unknown, size_t *ret_n_unknown)
{
	*ret_n = 0;
	*ret_unknown = NULL;
	*ret_n_unknown = 0;
	int rc = 0;
	/* Preferred form: a JSON array of strings somewhere in the answer. */
	const char *open = strchr(answer, '[');
	const char *close = open ? strrchr(answer, ']') : NULL;
	if (open && close && close > open) {
		json_t *arr = json_loadb(open, (size_t)(close - open + 1), 0, NULL);
		if (json_is_array(arr)) {
			size_t i;
			json_t *v;
			json_array_foreach(arr, i, v) {
				if (json_is_string(v) && rc == 0)
					rc = take_name(s, candidates, n_candidates, json_string_value(v), ret_tables, ret_n,
						       ret_unknown, ret_n_unknown);
			}
			json_decref(arr);
			return rc;
		}
		json_decref(arr);
	}
	/* Otherwise names separated by commas or new lines. */
	char *copy = strdup(answer);
	if (!copy)
		return -T2S_ERR_NOMEM;
	char *save = NULL;
	for (char *tok = strtok_r(copy, ",\n", &save); tok && rc == 0; tok = strtok_r(NULL, ",\n", &save)) {
		char *name = trim_name(tok);
		if (*name && strlen(name) <= 128 && !strchr(name, ' '))
			rc = take_name(s, candidates, n_candidates, name, ret_tables, ret_n, ret_unknown, ret_n_unknown);
	}
	free(copy);
	return rc;
}

static int link_with_model(struct run *r, const struct link_request *rq, const struct model_endpoint *ep,
			   struct link_result *res, struct t2s_error *err)
{
	double t0 = clock_now_ms();
	size_t n_tables = r->s->n_tables;
	int *order = rank(r->table_score, n_tables);
	if (!order)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	size_t n_candidates = n_tables < (size_t)r->p->llm_max_tables ? n_tables : (size_t)r->p->llm_max_tables;
	int shuffles = r->p->shuffles < 1 ? 1 : r->p->shuffles > LINK_MAX_SHUFFLES ? LINK_MAX_SHUFFLES : r->p->shuffles;
	struct shuffle_job jobs[LINK_MAX_SHUFFLES];
	unsigned seed = 0;
	for (const char *q = rq->question; *q; q++)
		seed = seed * 31u + (unsigned char)*q;
	for (int i = 0; i < shuffles; i++)
		jobs[i] = (struct shuffle_job){.r = r, .ep = ep, .question = rq->question, .candidates = order,
					       .n_candidates = n_candidates, .seed = seed + 7919u * (unsigned)i};
	workers_for(r->p->workers, (size_t)shuffles, shuffle_task, jobs, shuffles);
	int rc = 0, ok = 0;
	int *answer_tables = malloc((n_candidates ? n_candidates : 1) * sizeof(int));
	if (!answer_tables)
		rc = -T2S_ERR_NOMEM;
	for (int i = 0; i < shuffles; i++) {
		struct shuffle_job *job = &jobs[i];
		stage_metrics_model_call("link", job->rc, &job->stats);
		res->model_calls++;
		res->prompt_tokens += job->stats.prompt_tokens;
		res->completion_tokens += job->stats.completion_tokens;
		if (job->rc < 0) {
			res->model_errors++;
			if (ok == 0) {
				*err = job->err;
				r->llm_http_status = job->stats.http_status;
			}
			continue;
		}
		ok++;
		size_t n = 0, n_unknown = 0;
		char **unknown = NULL;
		if (rc == 0)
			rc = link_parse_answer(r->s, order, n_candidates, job->answer, answer_tables, &n, &unknown, &n_unknown);
		for (size_t k = 0; k < n; k++) {
			r->table_votes[answer_tables[k]]++;
			r->table_reason[answer_tables[k]] |= LINK_BY_LLM;
		}
		for (size_t k = 0; k < n_unknown; k++) {
			if (rc == 0)
				rc = add_unknown(&res->unknown_names, &res->n_unknown, unknown[k]);
			free(unknown[k]);
		}
		free(unknown);
		free(job->answer);
	}
	res->shuffles = shuffles;
	res->answers = r->answers = ok;
	free(answer_tables);
	free(order);
	res->ms_llm = clock_now_ms() - t0;
	stage_metrics_step("link", "llm", res->ms_llm);
	if (rc < 0)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	return ok ? 0 : -(int)err->code;
}

/* ---- scaffold and result ------------------------------------------------ */

static int push_table(struct link_result *res, const struct run *r, int t)
{
	struct link_table *v = realloc(res->tables, (res->n_tables + 1) * sizeof(*v));
	if (!v)
		return -T2S_ERR_NOMEM;
	res->tables = v;
	v[res->n_tables++] = (struct link_table){.table = t,
						 .score = r->table_score[t] > 0 ? r->table_score[t] : 0,
						 .votes = r->table_votes[t],
						 .low_votes = r->table_low[t],
						 .whole = r->table_whole[t],
						 .reasons = r->table_reason[t],
						 .best_column = r->table_best[t]};
	return 0;
}

/* The other end of edge e from table t, or -1 when e is no declared foreign key at t. */
static int key_neighbour(const struct link_edge *e, int t)
{
	if (e->kind != LINK_EDGE_FOREIGN_KEY)
		return -1;
	return e->left_table == t ? e->right_table : e->right_table == t ? e->left_table : -1;
}

/* Index into idx->edges of a declared foreign key between tables a and b, or -1. */
static long key_edge(const struct column_index *idx, int a, int b)
{
	for (size_t e = 0; e < idx->n_edges; e++)
		if (key_neighbour(&idx->edges[e], a) == b)
			return (long)e;
	return -1;
}

/* Mark the two endpoint columns of join edge e (an index into idx->edges) as join columns. */
static void mark_join_columns(struct run *r, size_t e)
{
	const struct link_edge *edge = &r->idx->edges[e];
	r->col_reason[r->idx->table_first_column[edge->left_table] + (size_t)edge->left_column] |= LINK_BY_JOIN;
	r->col_reason[r->idx->table_first_column[edge->right_table] + (size_t)edge->right_column] |= LINK_BY_JOIN;
}

/* Append edge e to the alternative joins (capacity *cap) and mark its endpoints as join columns. */
static int add_alternative_join(struct run *r, struct link_result *res, size_t e, size_t *cap)
{
	if (res->n_alternative_joins == *cap) {
		size_t *v = realloc(res->alternative_joins, (*cap = 2 * *cap + 4) * sizeof(*v));
		if (!v)
			return -T2S_ERR_NOMEM;
		res->alternative_joins = v;
	}
	res->alternative_joins[res->n_alternative_joins++] = e;
	mark_join_columns(r, e);
	return 0;
}

/* At most this many alternative bridges per pair of tables: a star schema keys many fact
   tables to the same two dimensions. */
#define ALTERNATIVE_BRIDGES_MAX 4

struct alternative {
	int table;
	size_t to_t1, to_t2; /* its two joins: indexes into index->edges */
};

/* Insert c into best[0..n) (best score first, at most ALTERNATIVE_BRIDGES_MAX); returns the new n. */
static size_t keep_best(struct alternative *best, size_t n, struct alternative c, const double *score)
{
	size_t at = n;
	while (at > 0 && score[best[at - 1].table] < score[c.table])
		at--;
	if (at >= ALTERNATIVE_BRIDGES_MAX)
		return n;
	if (n == ALTERNATIVE_BRIDGES_MAX)
		n--;
	memmove(best + at + 1, best + at, (n - at) * sizeof(*best));
	best[at] = c;
	return n + 1;
}

/*
 * Where the scaffold joins two required tables through a third (a bridge,
 * or a table required itself), that table may not be the one the question
 * means: drivers and races meet in results, lap times and standings alike,
 * and retrieval may have scored the wrong one highest.  Every other table
 * with declared foreign keys to both joins them too, and is linked as a
 * bridge with its two joins (its join columns only): the
 * ALTERNATIVE_BRIDGES_MAX the question scores highest.
 */
static int alternative_bridges(struct run *r, struct link_result *res)
{
	size_t n_tree = res->n_joins, cap = 0;
	const unsigned required = ~(unsigned)(LINK_BY_BRIDGE | LINK_BY_JOIN);
	for (size_t i = 0; i < n_tree; i++)
		for (size_t j = i + 1; j < n_tree; j++) {
			const struct link_edge *a = &r->idx->edges[res->joins[i]], *b = &r->idx->edges[res->joins[j]];
			/* a and b meet at a table between t1 and t2 */
			int bridge = a->left_table == b->left_table || a->left_table == b->right_table ? a->left_table
				     : a->right_table == b->left_table || a->right_table == b->right_table ? a->right_table
													   : -1;
			if (bridge < 0)
				continue;
			int t1 = a->left_table == bridge ? a->right_table : a->left_table;
			int t2 = b->left_table == bridge ? b->right_table : b->left_table;
			if (t1 == t2 || !(r->table_reason[t1] & required) || !(r->table_reason[t2] & required))
				continue;
			/* The candidates the question scores highest, at most ALTERNATIVE_BRIDGES_MAX. */
			struct alternative best[ALTERNATIVE_BRIDGES_MAX];
			size_t n_best = 0;
			for (size_t e = 0; e < r->idx->n_edges; e++) {
				int other = key_neighbour(&r->idx->edges[e], t1);
				if (other < 0 || other == t2 || r->table_reason[other])
					continue;
				long e2 = key_edge(r->idx, other, t2);
				if (e2 >= 0)
					n_best = keep_best(best, n_best, (struct alternative){other, e, (size_t)e2},
							   r->table_score);
			}
			for (size_t k = 0; k < n_best; k++) {
				if (r->table_reason[best[k].table])
					continue; /* keyed to t1 twice: taken once */
				r->table_reason[best[k].table] |= LINK_BY_BRIDGE;
				if (add_alternative_join(r, res, best[k].to_t1, &cap) < 0 ||
				    add_alternative_join(r, res, best[k].to_t2, &cap) < 0)
					return -T2S_ERR_NOMEM;
			}
		}
	return 0;
}

static int steiner_step(struct run *r, struct link_result *res, struct t2s_error *err)
{
	double t0 = clock_now_ms();
	size_t n_tables = r->s->n_tables;
	int *terminals = malloc((n_tables ? n_tables : 1) * sizeof(int));
	if (!terminals)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	size_t n_terminals = 0;
	/* Highest scores first, so group 0 of the forest is the most relevant table's. */
	int *order = rank(r->table_score, n_tables);
	for (size_t i = 0; order && i < n_tables; i++)
		if (r->table_reason[order[i]])
			terminals[n_terminals++] = order[i];
	free(order);
	struct steiner_result st;
	int rc = n_terminals ? steiner_kmb(&r->idx->graph, terminals, n_terminals, &st, err) : 0;
	free(terminals);
	if (rc < 0)
		return rc;
	if (n_terminals) {
		res->joins = malloc((st.n_edges ? st.n_edges : 1) * sizeof(*res->joins));
		res->disconnected = malloc((st.n_unreached ? st.n_unreached : 1) * sizeof(int));
		if (!res->joins || !res->disconnected) {
			steiner_result_release(&st);
			return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
		}
		for (size_t i = 0; i < st.n_edges; i++) {
			size_t e = (size_t)r->idx->graph.edges[st.edges[i]].tag;
			const struct link_edge *edge = &r->idx->edges[e];
			res->joins[res->n_joins++] = e;
			r->table_reason[edge->left_table] |= r->table_reason[edge->left_table] ? 0 : LINK_BY_BRIDGE;
			r->table_reason[edge->right_table] |= r->table_reason[edge->right_table] ? 0 : LINK_BY_BRIDGE;
			mark_join_columns(r, e);
		}
		for (size_t i = 0; i < st.n_unreached; i++)
			res->disconnected[res->n_disconnected++] = st.unreached[i];
		steiner_result_release(&st);
		if (alternative_bridges(r, res) < 0)
			return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	}
	res->ms_steiner = clock_now_ms() - t0;
	return 0;
}

static int assemble(struct run *r, struct link_result *res)
{
	size_t n_tables = r->s->n_tables;
	int *order = rank(r->table_score, n_tables);
	if (!order)
		return -T2S_ERR_NOMEM;
	int rc = 0;
	for (size_t i = 0; i < n_tables && rc == 0; i++) {
		int t = order[i];
		if (!r->table_reason[t])
			continue;
		rc = push_table(res, r, t);
		/* A required table always shows at least its best column. */
		if (r->table_best[t] >= 0 && !(r->table_reason[t] & LINK_BY_BRIDGE))
			r->col_reason[r->table_best[t]] |= LINK_BY_RETRIEVAL;
	}
	free(order);
	for (size_t i = 0; rc == 0 && i < r->idx->n_columns; i++) {
		const struct link_column_ref *c = &r->idx->columns[i];
		if (!r->col_reason[i] || !r->table_reason[c->table])
			continue;
		struct link_column *v = realloc(res->columns, (res->n_columns + 1) * sizeof(*v));
		if (!v)
			return -T2S_ERR_NOMEM;
		res->columns = v;
		v[res->n_columns++] = (struct link_column){c->table, c->column, r->col_score[i] > 0 ? r->col_score[i] : 0,
							   r->col_reason[i]};
	}
	res->column_tokens = tokens_estimate_bytes(linked_bytes(r));
	return rc;
}

static void run_free(struct run *r)
{
	free(r->col_score);
	free(r->table_score);
	free(r->table_best);
	free(r->table_reason);
	free(r->table_votes);
	free(r->col_reason);
	free(r->table_whole);
	free(r->table_low);
	free(r->related);
}

/*
 * The schema words that stand in for the question's orphan words
 * (related_words.h), space-separated (malloc'd; NULL when out of memory).
 */
static char *related_text(const struct column_index *idx, const char *question)
{
	struct strbuf sb;
	strbuf_init(&sb, T2S_QUESTION_MAX_BYTES + (64u << 10));
	if (related_words_of_question(&idx->related, idx->wordnet, question, &sb) < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

char *link_question_text(const char *question, const char *evidence)
{
	if (!evidence || !*evidence)
		return strdup(question);
	size_t n = strlen(question) + strlen(evidence) + 2;
	char *q = malloc(n);
	if (q)
		snprintf(q, n, "%s %s", question, evidence);
	return q;
}

/* True when some answer of the link model named a candidate table. */
static bool model_named_any(const struct run *r)
{
	for (size_t t = 0; t < r->s->n_tables; t++)
		if (r->table_reason[t] & LINK_BY_LLM)
			return true;
	return false;
}

/*
 * The link model gave nothing usable (rc < 0: every call failed; else no
 * answer named a candidate): report it; mode llm goes on as mode vector
 * (retrieval and values select the tables).  0, or -T2S_ERR_NOMEM.
 */
static int llm_fallback(struct run *r, const struct link_request *rq, const struct link_request *erq,
			int rc, const struct t2s_error *err, struct link_result *res)
{
	if (rc < 0) {
		fallback_add(res->fallbacks, &res->n_fallbacks, "link_llm", fallback_reason_of(rc, r->llm_http_status),
			     "every link model call failed (%.200s): %s", err->message,
			     res->mode == LINK_MODE_LLM ? "vector linking was used" : "retrieval alone was used");
		res->fallback = res->mode == LINK_MODE_LLM ? "every link model call failed: vector mode used"
							   : "every link model call failed: retrieval alone used";
	} else {
		fallback_add(res->fallbacks, &res->n_fallbacks, "link_llm", FALLBACK_UNPARSEABLE,
			     "the link model answered %d time%s without naming a candidate table: %s", r->answers,
			     r->answers == 1 ? "" : "s",
			     res->mode == LINK_MODE_LLM ? "vector linking was used" : "retrieval alone was used");
		res->fallback = res->mode == LINK_MODE_LLM ? "the link model named no candidate table: vector mode used"
							   : "the link model named no candidate table: retrieval alone used";
	}
	if (res->mode != LINK_MODE_LLM)
		return 0;
	res->mode = LINK_MODE_VECTOR;
	return select_by_retrieval(r, erq, rq->question) < 0 || select_by_values(r, rq) < 0 ? -T2S_ERR_NOMEM : 0;
}

int link_run(struct column_index *idx, const struct link_params *p, const struct model_endpoint *link_model,
	     const struct model_endpoint *embed_model, const struct link_request *rq_in, struct link_result *ret,
	     struct t2s_error *err)
{
	double t0 = clock_now_ms();
	if (strlen(rq_in->question) > T2S_QUESTION_MAX_BYTES)
		return t2s_error_set(err, T2S_ERR_INVALID, "question is longer than %d bytes", T2S_QUESTION_MAX_BYTES);
	if (rq_in->evidence && strlen(rq_in->evidence) > T2S_QUESTION_MAX_BYTES)
		return t2s_error_set(err, T2S_ERR_INVALID, "evidence is longer than %d bytes", T2S_QUESTION_MAX_BYTES);
	char *text = link_question_text(rq_in->question, rq_in->evidence);
	if (!text)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	struct link_request text_rq = *rq_in;
	text_rq.question = text; /* every step reads the question with the user's evidence */
	const struct link_request *rq = &text_rq;
	struct link_result res = {.index = column_index_ref(idx), .mode = rq->mode};
	size_t n_tables = idx->schema->n_tables, n_cols = idx->n_columns;
	struct run r = {.idx = idx, .s = idx->schema, .p = p};
	r.col_score = calloc(n_cols + 1, sizeof(double));
	r.col_reason = calloc(n_cols + 1, sizeof(unsigned));
	r.table_score = calloc(n_tables + 1, sizeof(double));
	r.table_best = calloc(n_tables + 1, sizeof(int));
	r.table_reason = calloc(n_tables + 1, sizeof(unsigned));
	r.table_votes = calloc(n_tables + 1, sizeof(int));
	r.table_whole = calloc(n_tables + 1, sizeof(bool));
	r.table_low = calloc(n_tables + 1, sizeof(bool));
	int rc = 0;
	if (!r.col_score || !r.col_reason || !r.table_score || !r.table_best || !r.table_reason || !r.table_votes ||
	    !r.table_whole || !r.table_low)
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	if (rc == 0 && rq->mode != LINK_MODE_VECTOR && !link_model) {
		res.mode = LINK_MODE_VECTOR;
		res.fallback = "no link model is configured: vector mode used";
		fallback_add(res.fallbacks, &res.n_fallbacks, "link_llm", FALLBACK_NOT_CONFIGURED,
			     "mode %s needs models.link, which is not configured: vector linking was used",
			     link_mode_name(rq->mode));
	}
	struct lexicon_expansion x = {0};
	char *expanded = NULL;
	if (rc == 0 && lexicon_expand(idx->wordnet, rq->question, LEXICON_QUESTION, QUESTION_SENSES, &x) == 0 &&
	    (r.related = related_text(idx, rq->question)) != NULL)
		expanded = question_with(rq->question, x.near);
	if (rc == 0 && !expanded)
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	struct link_request erq = *rq;
	if (expanded)
		erq.question = expanded; /* mentions: the question's words and its near words */
	/* The question's vector reads the stand-ins of its orphan words as near words. */
	if (rc == 0 && *r.related) {
		char *near = question_with(x.near, r.related);
		if (near) {
			free(x.near);
			x.near = near;
		} else {
			rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
		}
	}
	double t_retrieve = clock_now_ms();
	if (rc == 0)
		rc = score_columns(&r, rq->question, &x, embed_model, &res, err);
	if (rc == 0 && res.mode != LINK_MODE_LLM)
		rc = select_by_retrieval(&r, &erq, rq->question) < 0 || select_by_values(&r, rq) < 0
			     ? t2s_error_set(err, T2S_ERR_NOMEM, "out of memory")
			     : 0;
	res.ms_retrieve = clock_now_ms() - t_retrieve - res.ms_embed; /* scoring and selection */
	stage_metrics_step("link", "retrieve", res.ms_retrieve);
	if (rc == 0 && res.mode != LINK_MODE_VECTOR) {
		rc = link_with_model(&r, rq, link_model, &res, err);
		if (rc != -T2S_ERR_NOMEM && (rc < 0 || !model_named_any(&r))) {
			struct t2s_error model_err = *err;
			t2s_error_clear(err);
			rc = llm_fallback(&r, rq, &erq, rc, &model_err, &res) < 0
				     ? t2s_error_set(err, T2S_ERR_NOMEM, "out of memory")
				     : 0;
		}
	}
	if (rc == 0 && (select_columns(&r, rq) < 0 || apply_column_budget(&r, &erq, &res) < 0))
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	if (rc == 0)
		rc = steiner_step(&r, &res, err);
	if (rc == 0 && assemble(&r, &res) < 0)
		rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory");
	run_free(&r);
	free(expanded);
	free(text);
	lexicon_expansion_release(&x);
	if (rc < 0) {
		link_result_release(&res);
		return rc;
	}
	stage_metrics_step("link", "steiner", res.ms_steiner);
	res.ms_total = clock_now_ms() - t0;
	stage_metrics_step("link", "total", res.ms_total);
	*ret = res;
	return 0;
}

void link_result_release(struct link_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_unknown; i++)
		free(r->unknown_names[i]);
	free(r->unknown_names);
	free(r->tables);
	free(r->columns);
	free(r->cut);
	free(r->joins);
	free(r->alternative_joins);
	free(r->disconnected);
	column_index_unref(r->index);
	memset(r, 0, sizeof(*r));
}
