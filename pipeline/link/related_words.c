/*
 * related_words.c - see related_words.h.
 */
#include "pipeline/link/related_words.h"

#include "common/error.h"
#include "pipeline/text/embed_lexical.h"
#include "pipeline/text/stopwords.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define SENSES_MAX 8     /* synsets of a word: RELATED_SENSES of up to two base forms */
#define HYPERNYMS_MAX 16 /* one step up */
#define GRAND_MAX 32     /* two steps up */
#define MEMBERS_MAX 16   /* wholes it is a member of, members it has */
#define KINDS_MAX 16     /* what those members are kinds of */
#define WORD_MAX 64
#define SHORT_ENDING 2   /* "up to a short ending": this many letters more or fewer */

/* A word's neighbourhood: synsets, their hypernyms, and theirs. */
struct hood {
	uint32_t syn[SENSES_MAX + HYPERNYMS_MAX + GRAND_MAX + MEMBERS_MAX + KINDS_MAX];
	uint8_t n0, n1, n2, nm, nk;
};

enum { IN_TABLE_NAME = 1, IN_COLUMN_NAME = 2 };

struct related_word {
	char *word;
	unsigned where; /* IN_TABLE_NAME | IN_COLUMN_NAME */
	struct hood h;
};

static void hood_of(const struct wordnet *wn, const char *word, struct hood *h)
{
	h->n0 = (uint8_t)wordnet_noun_synsets(wn, word, RELATED_SENSES, h->syn, SENSES_MAX);
	h->n1 = (uint8_t)wordnet_noun_hypernyms(wn, h->syn, h->n0, h->syn + h->n0, HYPERNYMS_MAX);
	h->n2 = (uint8_t)wordnet_noun_hypernyms(wn, h->syn + h->n0, h->n1, h->syn + h->n0 + h->n1, GRAND_MAX);
	uint32_t *m = h->syn + h->n0 + h->n1 + h->n2;
	h->nm = (uint8_t)wordnet_noun_members(wn, h->syn, h->n0, m, MEMBERS_MAX);
	h->nk = (uint8_t)wordnet_noun_hypernyms(wn, m, h->nm, m + h->nm, KINDS_MAX);
}

static bool meet(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			if (a[i] == b[j])
				return true;
	return false;
}

#define TIER_NONE 9

/* The tier of related_words.h relating q to s. */
static int tier(const struct hood *q, const struct hood *s)
{
	const uint32_t *q0 = q->syn, *q1 = q0 + q->n0, *q2 = q1 + q->n1;
	const uint32_t *s0 = s->syn, *s1 = s0 + s->n0, *s2 = s1 + s->n1;
	const uint32_t *qm = q2 + q->n2; /* membership is loaded both ways: one side suffices */
	const uint32_t *qk = qm + q->nm, *sk = s2 + s->n2 + s->nm;
	if (meet(q0, q->n0, s0, s->n0))
		return 0;
	if (meet(q1, q->n1, s0, s->n0) || meet(s1, s->n1, q0, q->n0) || meet(qm, q->nm, s0, s->n0))
		return 1;
	if (meet(q1, q->n1, s1, s->n1) || meet(q2, q->n2, s0, s->n0) || meet(s2, s->n2, q0, q->n0) ||
	    meet(qk, q->nk, s0, s->n0) || meet(sk, s->nk, q0, q->n0))
		return 2;
	return TIER_NONE;
}

/* A schema word as the build first collects it: borrowed from the caller's lists, not yet deduplicated. */
struct seen_word {
	const char *word;
	unsigned where;
};

static int cmp_seen(const void *a, const void *b)
{
	return strcmp(((const struct seen_word *)a)->word, ((const struct seen_word *)b)->word);
}

/*
 * Append each word (3+ letters) of lists[0..n_lists) to *seen, found where.
 * The words are borrowed: a schema of 71,833 columns says a few hundred
 * thousand words but only some thousands distinct ones, and only those get a
 * copy and a neighbourhood (368 bytes each).
 */
static int add_words(struct seen_word **seen, size_t *n, size_t *cap, char ***lists, size_t n_lists, unsigned where)
{
	for (size_t i = 0; i < n_lists; i++)
		for (char **w = lists[i]; w && *w; w++) {
			if (strlen(*w) < 3 || strlen(*w) > WORD_MAX)
				continue;
			if (*n == *cap) {
				size_t c = *cap ? 2 * *cap : 64;
				struct seen_word *v = realloc(*seen, c * sizeof(*v));
				if (!v)
					return -T2S_ERR_NOMEM;
				*seen = v;
				*cap = c;
			}
			(*seen)[(*n)++] = (struct seen_word){*w, where};
		}
	return 0;
}

int related_words_build_spelled(const struct wordnet *wn, char ***tables, size_t n_tables, char ***columns,
				size_t n_columns, struct related_words *ret)
{
	int rc = related_words_build(wn, tables, n_tables, columns, n_columns, ret);
	ret->spelled = rc == 0;
	return rc;
}

int related_words_build(const struct wordnet *wn, char ***tables, size_t n_tables, char ***columns, size_t n_columns,
			struct related_words *ret)
{
	struct related_words rw = {0};
	struct seen_word *seen = NULL;
	size_t n_seen = 0, cap = 0, distinct = 0;
	if (wn && (add_words(&seen, &n_seen, &cap, tables, n_tables, IN_TABLE_NAME) < 0 ||
		   add_words(&seen, &n_seen, &cap, columns, n_columns, IN_COLUMN_NAME) < 0)) {
		free(seen);
		return -T2S_ERR_NOMEM;
	}
	if (n_seen)
		qsort(seen, n_seen, sizeof(*seen), cmp_seen);
	for (size_t i = 0; i < n_seen; i++) {
		if (distinct && strcmp(seen[distinct - 1].word, seen[i].word) == 0)
			seen[distinct - 1].where |= seen[i].where;
		else
			seen[distinct++] = seen[i];
	}
	if (distinct && !(rw.v = calloc(distinct, sizeof(*rw.v)))) {
		free(seen);
		return -T2S_ERR_NOMEM;
	}
	for (size_t i = 0; i < distinct; i++, rw.n++) {
		if (!(rw.v[i].word = strdup(seen[i].word))) {
			free(seen);
			related_words_release(&rw);
			return -T2S_ERR_NOMEM;
		}
		rw.v[i].where = seen[i].where;
		hood_of(wn, rw.v[i].word, &rw.v[i].h);
	}
	free(seen);
	*ret = rw;
	return 0;
}

void related_words_release(struct related_words *rw)
{
	for (size_t i = 0; i < rw->n; i++)
		free(rw->v[i].word);
	free(rw->v);
	*rw = (struct related_words){0};
}

/* Index of the first word of rw not ordered before w (binary search). */
static size_t lower_bound(const struct related_words *rw, const char *w)
{
	size_t lo = 0, hi = rw->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(rw->v[mid].word, w) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool has_word(const struct related_words *rw, const char *w, size_t len)
{
	char buf[WORD_MAX + 1];
	if (len > WORD_MAX)
		return false;
	memcpy(buf, w, len);
	buf[len] = '\0';
	size_t i = lower_bound(rw, buf);
	return i < rw->n && strcmp(rw->v[i].word, buf) == 0;
}

/*
 * True when the normalised word w is a schema word up to a short ending:
 * the same, the schema word minus up to SHORT_ENDING letters of w, or w plus
 * up to SHORT_ENDING letters (both of 4+ letters).
 */
static bool schema_says(const struct related_words *rw, const char *w)
{
	size_t len = strlen(w);
	if (has_word(rw, w, len))
		return true;
	if (len < 4)
		return false;
	for (size_t cut = 1; cut <= SHORT_ENDING && len - cut >= 4; cut++)
		if (has_word(rw, w, len - cut))
			return true;
	for (size_t i = lower_bound(rw, w); i < rw->n && strncmp(rw->v[i].word, w, len) == 0; i++)
		if (strlen(rw->v[i].word) <= len + SHORT_ENDING)
			return true;
	return false;
}

struct near_walk {
	const struct related_words *rw;
	bool every; /* said only when the schema says each word of a near word, not one of them */
	bool said;
};

/* wordnet_related callback: does the schema say this near word (one of its words, or each)? */
static void near_said(const char *lemma, unsigned relation, void *ctx)
{
	(void)relation;
	struct near_walk *nw = ctx;
	char **words = NULL;
	if (nw->said || embed_lexical_words(lemma, nw->rw->spelled ? EMBED_WORDS_NO_STEM : 0, &words, NULL) < 0)
		return;
	size_t n = 0, says = 0;
	for (char **w = words; *w; w++, n++)
		says += schema_says(nw->rw, *w);
	nw->said = nw->every ? n > 0 && says == n : says > 0;
	free(words);
}

/* True when the schema says word (lower case) or one of its near words; a collocation ("alcoholic
   drink") only when it says each of its words (a column "drink" does not say it). */
static bool anchored(const struct related_words *rw, const struct wordnet *wn, const char *word)
{
	struct near_walk nw = {.rw = rw, .every = strchr(word, ' ') != NULL};
	near_said(word, 0, &nw);
	if (!nw.said)
		wordnet_related(wn, word,
				WORDNET_BASE | WORDNET_SYNONYM | WORDNET_DERIVED | WORDNET_ATTRIBUTE | WORDNET_PERTAINYM,
				RELATED_SENSES, near_said, &nw);
	return nw.said;
}

/*
 * Mark in emitted the schema words found where (a table or a column name)
 * of the closest tier, given each word's tier to the orphan in tiers.
 */
static void closest(const struct related_words *rw, const unsigned char *tiers, unsigned where, bool *emitted)
{
	int best = TIER_NONE;
	size_t hits = 0;
	for (size_t i = 0; i < rw->n; i++) {
		if (!(rw->v[i].where & where))
			continue;
		if (tiers[i] < best) {
			best = tiers[i];
			hits = 0;
		}
		hits += tiers[i] == best && best != TIER_NONE;
	}
	if (best == TIER_NONE || hits > RELATED_MAX_HITS)
		return;
	for (size_t i = 0; i < rw->n; i++)
		if ((rw->v[i].where & where) && tiers[i] == best)
			emitted[i] = true;
}

/*
 * Mark the stand-ins of the orphan word: an orphan may name a thing (a
 * table) or a property (a column), so the closest table-name words (into
 * as_table) and the closest column-name words (into as_column, which may be
 * as_table) are found apart ("towns" stands for the city table even where a
 * hometown column is closer).  tiers is scratch space of rw->n entries.
 */
static void stand_ins(const struct related_words *rw, const struct wordnet *wn, const char *word,
		      unsigned char *tiers, bool *as_table, bool *as_column)
{
	struct hood q;
	hood_of(wn, word, &q);
	if (!q.n0)
		return;
	for (size_t i = 0; i < rw->n; i++)
		tiers[i] = (unsigned char)tier(&q, &rw->v[i].h);
	closest(rw, tiers, IN_TABLE_NAME, as_table);
	closest(rw, tiers, IN_COLUMN_NAME, as_column);
}

/* Append the emitted words of rw to out, each followed by a space. */
static int append_emitted(const struct related_words *rw, const bool *emitted, struct strbuf *out)
{
	for (size_t i = 0; i < rw->n; i++)
		if (emitted[i] && (strbuf_adds(out, rw->v[i].word) < 0 || strbuf_adds(out, " ") < 0))
			return -T2S_ERR_NOMEM;
	return 0;
}

int related_words_stand_ins(const struct related_words *rw, const struct wordnet *wn, const char *word,
			    bool orphans_only, struct strbuf *tables, struct strbuf *columns)
{
	size_t len = strlen(word);
	if (!wn || !rw->n || len < 3 || len > WORD_MAX || stopword_is(word, len, STOPWORD_RETRIEVAL | STOPWORD_VALUE_SPAN))
		return 0;
	char lower[WORD_MAX + 1];
	for (size_t i = 0; i <= len; i++)
		lower[i] = (char)(word[i] >= 'A' && word[i] <= 'Z' ? word[i] - 'A' + 'a' : word[i]);
	if (orphans_only && anchored(rw, wn, lower))
		return 0;
	bool *emitted = calloc(2 * rw->n, sizeof(bool));
	unsigned char *tiers = malloc(rw->n);
	int rc = emitted && tiers ? 0 : -T2S_ERR_NOMEM;
	if (rc == 0) {
		stand_ins(rw, wn, lower, tiers, emitted, emitted + rw->n);
		rc = append_emitted(rw, emitted, tables);
		if (rc == 0)
			rc = append_emitted(rw, emitted + rw->n, columns);
	}
	free(emitted);
	free(tiers);
	return rc;
}

static bool is_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int related_words_of_question(const struct related_words *rw, const struct wordnet *wn, const char *question,
			      struct strbuf *out)
{
	if (!wn || !rw->n)
		return 0;
	bool *emitted = calloc(rw->n, sizeof(bool));
	unsigned char *tiers = malloc(rw->n);
	if (!emitted || !tiers) {
		free(emitted);
		free(tiers);
		return -T2S_ERR_NOMEM;
	}
	int rc = 0;
	bool first = true;
	for (const char *p = question; *p;) {
		if (!is_letter(*p)) {
			first |= *p == '.' || *p == '?' || *p == '!'; /* a new sentence starts capitalised */
			p++;
			continue;
		}
		size_t len = 0;
		while (is_letter(p[len]))
			len++;
		bool capital = *p >= 'A' && *p <= 'Z';
		char word[WORD_MAX + 1];
		if (len >= 3 && len <= WORD_MAX && (first || !capital) &&
		    !stopword_is(p, len, STOPWORD_RETRIEVAL | STOPWORD_VALUE_SPAN)) {
			for (size_t i = 0; i < len; i++)
				word[i] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] - 'A' + 'a' : p[i]);
			word[len] = '\0';
			if (!anchored(rw, wn, word))
				stand_ins(rw, wn, word, tiers, emitted, emitted);
		}
		first = false;
		p += len;
	}
	rc = append_emitted(rw, emitted, out);
	free(emitted);
	free(tiers);
	return rc;
}
