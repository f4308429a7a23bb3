/*
 * wordnet.c - WordNet's database files as read-only tables (see wordnet.h).
 *
 * Loading reads each file whole, parses it line by line in place and keeps
 * compact tables: a string pool of lemmas with an open-addressing hash, the
 * senses of each lemma per part of speech (synset ids in index-file order,
 * which is WordNet's sense-frequency order), the synsets (their words as
 * lemma ids, their kept pointers), and the exception lists sorted by form.
 * A synset id is the position of its line among all data files; a data
 * file's byte offsets are increasing, so (part of speech, offset) resolves
 * to an id by binary search.  After wordnet_load returns nothing is written.
 *
 * The parsing functions are T2S_TSAN_UNWATCHED (common/contract.h): they run
 * in one thread on tables no other thread sees until wordnet_load returns
 * them, and ThreadSanitizer watching each of the files' 30 MB of bytes made
 * every start of its build take 2.2 s instead of 0.2 s.  The lemma lookup
 * they share with the readers goes unwatched too; the tables it reads are
 * never written again.
 */
#include "pipeline/text/wordnet.h"

#include "common/clock.h"
#include "common/contract.h"
#include "common/hash.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEMMA_MAX 128 /* longer words are never looked up */

struct wn_ptr {
	uint32_t target; /* synset id (a byte offset until resolved) */
	char kind;       /* '@', '+', '=', '\\', 'm' (member meronym or holonym) */
	uint8_t tpos;    /* part of speech of the target */
	uint8_t src, dst; /* word numbers (1-based) of a lexical pointer, 0 for a semantic one */
};

struct wn_synset {
	uint32_t word_first, ptr_first;
	uint16_t n_words, n_ptrs;
};

struct wn_lemma {
	uint32_t off; /* of its string in the pool */
	uint32_t first[WORDNET_N_POS]; /* its senses per part of speech: senses[first..first+n) */
	uint16_t n[WORDNET_N_POS];
};

struct wn_exc {
	uint32_t form, base;
	uint8_t pos;
};

struct wordnet {
	char *pool; /* NUL-terminated lemmas, lower case, underscores for spaces */
	size_t pool_len, pool_cap;
	struct wn_lemma *lemmas; /* by lemma id */
	size_t n_lemmas, cap_lemmas;
	uint32_t *slots; /* hash slots: lemma id + 1, 0 when empty */
	size_t n_slots;
	uint32_t *senses; /* synset ids */
	size_t n_senses, cap_senses;
	struct wn_synset *synsets;
	size_t n_synsets, cap_synsets;
	uint32_t *offsets[WORDNET_N_POS]; /* byte offset of each synset of the part of speech */
	size_t n_offsets[WORDNET_N_POS], cap_offsets[WORDNET_N_POS];
	uint32_t first_synset[WORDNET_N_POS];
	uint32_t *words;
	size_t n_words, cap_words;
	struct wn_ptr *ptrs;
	size_t n_ptrs, cap_ptrs;
	struct wn_exc *exc;
	size_t n_exc, cap_exc;
	double load_ms;
};

static const char *const pos_names[WORDNET_N_POS] = {"noun", "verb", "adj", "adv"};

/* Grow *v (elements of size) so that it holds at least need; 0 or -T2S_ERR_NOMEM. */
T2S_TSAN_UNWATCHED
static int grow(void **v, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 1024;
	while (c < need)
		c *= 2;
	void *p = realloc(*v, c * size);
	if (!p)
		return -T2S_ERR_NOMEM;
	*v = p;
	*cap = c;
	return 0;
}

/* ---- lemma table -------------------------------------------------------- */

T2S_TSAN_UNWATCHED
static uint64_t lemma_hash(const char *s, size_t n)
{
	return hash_fnv1a64(HASH_FNV1A64_SEED, s, n);
}

T2S_TSAN_UNWATCHED
static int lemma_find(const struct wordnet *wn, const char *s, size_t n)
{
	if (!wn->n_slots)
		return -1;
	size_t mask = wn->n_slots - 1;
	for (size_t i = lemma_hash(s, n) & mask;; i = (i + 1) & mask) {
		uint32_t v = wn->slots[i];
		if (!v)
			return -1;
		const char *l = wn->pool + wn->lemmas[v - 1].off;
		size_t k = 0; /* strncmp by hand: ThreadSanitizer's interceptor would watch it */
		while (k < n && l[k] == s[k])
			k++;
		if (k == n && l[n] == '\0')
			return (int)(v - 1);
	}
}

T2S_TSAN_UNWATCHED
static int rehash(struct wordnet *wn, size_t n_slots)
{
	uint32_t *slots = calloc(n_slots, sizeof(*slots));
	if (!slots)
		return -T2S_ERR_NOMEM;
	for (size_t id = 0; id < wn->n_lemmas; id++) {
		const char *l = wn->pool + wn->lemmas[id].off;
		size_t i = lemma_hash(l, strlen(l)) & (n_slots - 1);
		while (slots[i])
			i = (i + 1) & (n_slots - 1);
		slots[i] = (uint32_t)id + 1;
	}
	free(wn->slots);
	wn->slots = slots;
	wn->n_slots = n_slots;
	return 0;
}

/* The id of lemma s[0..n) (already normalised), added when new; -T2S_ERR_NOMEM. */
T2S_TSAN_UNWATCHED
static int lemma_intern(struct wordnet *wn, const char *s, size_t n)
{
	int id = lemma_find(wn, s, n);
	if (id >= 0)
		return id;
	if ((wn->n_lemmas + 1) * 2 > wn->n_slots && rehash(wn, wn->n_slots ? wn->n_slots * 2 : 1u << 16) < 0)
		return -T2S_ERR_NOMEM;
	if (grow((void **)&wn->pool, &wn->pool_cap, wn->pool_len + n + 1, 1) < 0)
		return -T2S_ERR_NOMEM;
	if (grow((void **)&wn->lemmas, &wn->cap_lemmas, wn->n_lemmas + 1, sizeof(*wn->lemmas)) < 0)
		return -T2S_ERR_NOMEM;
	memcpy(wn->pool + wn->pool_len, s, n);
	wn->pool[wn->pool_len + n] = '\0';
	wn->lemmas[wn->n_lemmas] = (struct wn_lemma){.off = (uint32_t)wn->pool_len};
	wn->pool_len += n + 1;
	id = (int)wn->n_lemmas++;
	size_t mask = wn->n_slots - 1;
	size_t i = lemma_hash(s, n) & mask;
	while (wn->slots[i])
		i = (i + 1) & mask;
	wn->slots[i] = (uint32_t)id + 1;
	return id;
}

/* Lower-case s into buf (size bytes), spaces to underscores, "(a)"-style markers cut; length or -1. */
T2S_TSAN_UNWATCHED
static int normalise(const char *s, char *buf, size_t size)
{
	size_t n = 0;
	for (; s[n] && s[n] != '('; n++) {
		if (n + 1 >= size)
			return -1;
		unsigned char c = (unsigned char)s[n];
		buf[n] = c == ' ' ? '_' : (char)tolower(c);
	}
	buf[n] = '\0';
	return (int)n;
}

/* ---- files -------------------------------------------------------------- */

static int read_file(const char *dir, const char *name, char **ret, struct t2s_error *err)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return t2s_error_set(err, T2S_ERR_NOT_FOUND,
				     "WordNet database file %s cannot be read (%s): install the Debian package %s, "
				     "or set link.wordnet to false",
				     path, strerror(errno), WORDNET_PACKAGE);
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc = 0;
	for (;;) {
		if (grow((void **)&buf, &cap, len + 65536 + 1, 1) < 0) {
			rc = t2s_error_set(err, T2S_ERR_NOMEM, "out of memory reading %s", path);
			break;
		}
		size_t got = fread(buf + len, 1, 65536, f);
		len += got;
		if (got < 65536)
			break;
	}
	if (rc == 0 && ferror(f))
		rc = t2s_error_set(err, T2S_ERR_INVALID, "WordNet database file %s: read error", path);
	fclose(f);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[len] = '\0';
	*ret = buf;
	return 0;
}

/* The next space-separated token of *p (NUL-terminated in place), or NULL at the end of the line. */
T2S_TSAN_UNWATCHED
static char *token(char **p)
{
	char *s = *p;
	while (*s == ' ')
		s++;
	if (!*s)
		return NULL;
	char *e = s;
	while (*e && *e != ' ')
		e++;
	if (*e)
		*e++ = '\0';
	*p = e;
	return s;
}

/* Split buf into lines in place: call fn on each line that is not a licence header line. */
T2S_TSAN_UNWATCHED
static int each_line(char *buf, int (*fn)(struct wordnet *, char *, int), struct wordnet *wn, int pos)
{
	char *line = buf;
	while (*line) {
		char *nl = line;
		while (*nl && *nl != '\n')
			nl++;
		if (*nl)
			*nl = '\0';
		else
			nl = NULL;
		if (line[0] != ' ' && line[0] != '\0') {
			int rc = fn(wn, line, pos);
			if (rc < 0)
				return rc;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return 0;
}

T2S_TSAN_UNWATCHED
static int pos_of(char c)
{
	switch (c) {
	case 'n': return WORDNET_NOUN;
	case 'v': return WORDNET_VERB;
	case 'a': case 's': return WORDNET_ADJ;
	case 'r': return WORDNET_ADV;
	default: return -1;
	}
}

T2S_TSAN_UNWATCHED
static char ptr_kind(const char *sym)
{
	if (strcmp(sym, "@") == 0)
		return '@';
	if (strcmp(sym, "+") == 0)
		return '+';
	if (strcmp(sym, "=") == 0)
		return '=';
	if (strcmp(sym, "\\") == 0)
		return '\\';
	if (strcmp(sym, "%m") == 0 || strcmp(sym, "#m") == 0)
		return 'm'; /* member meronym or holonym: a person is a member of people */
	return 0;
}

/* One line of data.<pos>: a synset, its words and kept pointers. */
T2S_TSAN_UNWATCHED
static int data_line(struct wordnet *wn, char *line, int pos)
{
	char *p = line, *off = token(&p), *lexfile = token(&p), *type = token(&p), *wcnt = token(&p);
	if (!off || !lexfile || !type || !wcnt)
		return -T2S_ERR_INVALID;
	size_t no = wn->n_offsets[pos];
	if (grow((void **)&wn->offsets[pos], &wn->cap_offsets[pos], no + 1, sizeof(uint32_t)) < 0)
		return -T2S_ERR_NOMEM;
	wn->offsets[pos][no] = (uint32_t)strtoul(off, NULL, 10);
	wn->n_offsets[pos]++;
	if (grow((void **)&wn->synsets, &wn->cap_synsets, wn->n_synsets + 1, sizeof(*wn->synsets)) < 0)
		return -T2S_ERR_NOMEM;
	struct wn_synset *ss = &wn->synsets[wn->n_synsets++];
	ss->word_first = (uint32_t)wn->n_words;
	ss->ptr_first = (uint32_t)wn->n_ptrs;
	unsigned long nw = strtoul(wcnt, NULL, 16);
	ss->n_words = (uint16_t)nw;
	ss->n_ptrs = 0;
	for (unsigned long i = 0; i < nw; i++) {
		char *w = token(&p), *lexid = token(&p), buf[LEMMA_MAX];
		if (!w || !lexid)
			return -T2S_ERR_INVALID;
		int n = normalise(w, buf, sizeof(buf));
		int id = n > 0 ? lemma_intern(wn, buf, (size_t)n) : lemma_intern(wn, "", 0);
		if (id < 0)
			return id;
		if (grow((void **)&wn->words, &wn->cap_words, wn->n_words + 1, sizeof(*wn->words)) < 0)
			return -T2S_ERR_NOMEM;
		wn->words[wn->n_words++] = (uint32_t)id;
	}
	char *pcnt = token(&p);
	if (!pcnt)
		return -T2S_ERR_INVALID;
	unsigned long np = strtoul(pcnt, NULL, 10);
	for (unsigned long i = 0; i < np; i++) {
		char *sym = token(&p), *toff = token(&p), *tpos = token(&p), *st = token(&p);
		if (!sym || !toff || !tpos || !st || strlen(st) != 4)
			return -T2S_ERR_INVALID;
		char kind = ptr_kind(sym);
		int tp = pos_of(tpos[0]);
		if (!kind || tp < 0)
			continue;
		if (grow((void **)&wn->ptrs, &wn->cap_ptrs, wn->n_ptrs + 1, sizeof(*wn->ptrs)) < 0)
			return -T2S_ERR_NOMEM;
		unsigned long sd = strtoul(st, NULL, 16);
		wn->ptrs[wn->n_ptrs++] = (struct wn_ptr){.target = (uint32_t)strtoul(toff, NULL, 10),
							 .kind = kind,
							 .tpos = (uint8_t)tp,
							 .src = (uint8_t)(sd >> 8),
							 .dst = (uint8_t)(sd & 0xff)};
		ss->n_ptrs++;
	}
	return 0;
}

/* The synset id at byte offset off of part of speech pos, or -1. */
T2S_TSAN_UNWATCHED
static long synset_at(const struct wordnet *wn, int pos, uint32_t off)
{
	size_t lo = 0, hi = wn->n_offsets[pos];
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (wn->offsets[pos][mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < wn->n_offsets[pos] && wn->offsets[pos][lo] == off)
		return (long)(wn->first_synset[pos] + lo);
	return -1;
}

/* One line of index.<pos>: a lemma and its synsets in sense order. */
T2S_TSAN_UNWATCHED
static int index_line(struct wordnet *wn, char *line, int pos)
{
	char *p = line, *lemma = token(&p), *ps = token(&p), *scnt = token(&p), *pcnt = token(&p), buf[LEMMA_MAX];
	if (!lemma || !ps || !scnt || !pcnt)
		return -T2S_ERR_INVALID;
	unsigned long ns = strtoul(scnt, NULL, 10), np = strtoul(pcnt, NULL, 10);
	for (unsigned long i = 0; i < np; i++)
		if (!token(&p))
			return -T2S_ERR_INVALID;
	if (!token(&p) || !token(&p)) /* sense_cnt, tagsense_cnt */
		return -T2S_ERR_INVALID;
	int n = normalise(lemma, buf, sizeof(buf));
	if (n <= 0)
		return 0;
	int id = lemma_intern(wn, buf, (size_t)n);
	if (id < 0)
		return id;
	if (grow((void **)&wn->senses, &wn->cap_senses, wn->n_senses + ns, sizeof(*wn->senses)) < 0)
		return -T2S_ERR_NOMEM;
	struct wn_lemma *s = &wn->lemmas[id];
	s->first[pos] = (uint32_t)wn->n_senses;
	s->n[pos] = 0;
	for (unsigned long i = 0; i < ns; i++) {
		char *off = token(&p);
		if (!off)
			return -T2S_ERR_INVALID;
		long syn = synset_at(wn, pos, (uint32_t)strtoul(off, NULL, 10));
		if (syn < 0)
			return -T2S_ERR_INVALID;
		wn->senses[wn->n_senses++] = (uint32_t)syn;
		s->n[pos]++;
	}
	return 0;
}

/* One line of <pos>.exc: an inflected form and its base forms. */
T2S_TSAN_UNWATCHED
static int exc_line(struct wordnet *wn, char *line, int pos)
{
	char *p = line, *form = token(&p), buf[LEMMA_MAX];
	if (!form)
		return 0;
	int n = normalise(form, buf, sizeof(buf));
	if (n <= 0)
		return 0;
	int fid = lemma_intern(wn, buf, (size_t)n);
	if (fid < 0)
		return fid;
	for (char *base; (base = token(&p));) {
		n = normalise(base, buf, sizeof(buf));
		if (n <= 0)
			continue;
		int bid = lemma_intern(wn, buf, (size_t)n);
		if (bid < 0)
			return bid;
		if (grow((void **)&wn->exc, &wn->cap_exc, wn->n_exc + 1, sizeof(*wn->exc)) < 0)
			return -T2S_ERR_NOMEM;
		wn->exc[wn->n_exc++] = (struct wn_exc){(uint32_t)fid, (uint32_t)bid, (uint8_t)pos};
	}
	return 0;
}

static int cmp_exc(const void *a, const void *b)
{
	const struct wn_exc *x = a, *y = b;
	if (x->form != y->form)
		return x->form < y->form ? -1 : 1;
	return (int)x->pos - (int)y->pos;
}

static int load_file(struct wordnet *wn, const char *dir, const char *name, int pos,
		     int (*fn)(struct wordnet *, char *, int), struct t2s_error *err)
{
	char *buf = NULL;
	int rc = read_file(dir, name, &buf, err);
	if (rc < 0)
		return rc;
	rc = each_line(buf, fn, wn, pos);
	free(buf);
	if (rc == -T2S_ERR_NOMEM)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory loading WordNet");
	if (rc < 0)
		return t2s_error_set(err, T2S_ERR_INVALID, "WordNet database file %s/%s is not in WordNet 3.0's format",
				     dir, name);
	return 0;
}

T2S_TSAN_UNWATCHED
static int resolve_pointers(struct wordnet *wn, struct t2s_error *err)
{
	for (size_t i = 0; i < wn->n_ptrs; i++) {
		long syn = synset_at(wn, wn->ptrs[i].tpos, wn->ptrs[i].target);
		if (syn < 0)
			return t2s_error_set(err, T2S_ERR_INVALID, "WordNet: a pointer names no synset");
		wn->ptrs[i].target = (uint32_t)syn;
	}
	return 0;
}

int wordnet_load(const char *dir, struct wordnet **ret, struct t2s_error *err)
{
	double t0 = clock_now_ms();
	if (!dir)
		dir = WORDNET_DEFAULT_DIR;
	struct wordnet *wn = calloc(1, sizeof(*wn));
	if (!wn)
		return t2s_error_set(err, T2S_ERR_NOMEM, "out of memory loading WordNet");
	int rc = 0;
	char name[32];
	for (int pos = 0; rc == 0 && pos < WORDNET_N_POS; pos++) {
		wn->first_synset[pos] = (uint32_t)wn->n_synsets;
		snprintf(name, sizeof(name), "data.%s", pos_names[pos]);
		rc = load_file(wn, dir, name, pos, data_line, err);
	}
	if (rc == 0)
		rc = resolve_pointers(wn, err);
	for (int pos = 0; rc == 0 && pos < WORDNET_N_POS; pos++) {
		snprintf(name, sizeof(name), "index.%s", pos_names[pos]);
		rc = load_file(wn, dir, name, pos, index_line, err);
	}
	for (int pos = 0; rc == 0 && pos < WORDNET_N_POS; pos++) {
		snprintf(name, sizeof(name), "%s.exc", pos_names[pos]);
		rc = load_file(wn, dir, name, pos, exc_line, err);
	}
	if (rc == 0 && wn->n_synsets == 0)
		rc = t2s_error_set(err, T2S_ERR_INVALID, "WordNet database under %s holds no synsets", dir);
	if (rc < 0) {
		wordnet_free(wn);
		return rc;
	}
	if (wn->n_exc)
		qsort(wn->exc, wn->n_exc, sizeof(*wn->exc), cmp_exc);
	wn->load_ms = clock_now_ms() - t0;
	*ret = wn;
	return 0;
}

struct wordnet *wordnet_free(struct wordnet *wn)
{
	if (!wn)
		return NULL;
	free(wn->pool);
	free(wn->lemmas);
	free(wn->slots);
	free(wn->senses);
	free(wn->synsets);
	for (int pos = 0; pos < WORDNET_N_POS; pos++)
		free(wn->offsets[pos]);
	free(wn->words);
	free(wn->ptrs);
	free(wn->exc);
	free(wn);
	return NULL;
}

void wordnet_stats(const struct wordnet *wn, struct wordnet_stats *ret)
{
	size_t bytes = sizeof(*wn) + wn->pool_cap + wn->cap_lemmas * sizeof(struct wn_lemma) +
		       wn->n_slots * sizeof(uint32_t) + wn->cap_senses * sizeof(uint32_t) +
		       wn->cap_synsets * sizeof(struct wn_synset) + wn->cap_words * sizeof(uint32_t) +
		       wn->cap_ptrs * sizeof(struct wn_ptr) + wn->cap_exc * sizeof(struct wn_exc);
	for (int pos = 0; pos < WORDNET_N_POS; pos++)
		bytes += wn->cap_offsets[pos] * sizeof(uint32_t);
	*ret = (struct wordnet_stats){.lemmas = wn->n_lemmas,
				      .synsets = wn->n_synsets,
				      .pointers = wn->n_ptrs,
				      .senses = wn->n_senses,
				      .bytes = bytes,
				      .load_ms = wn->load_ms};
}

/* ---- lookups ------------------------------------------------------------ */

static const char *lemma_str(const struct wordnet *wn, uint32_t id)
{
	return wn->pool + wn->lemmas[id].off;
}

static int lemma_of_pos(const struct wordnet *wn, const char *s, size_t n, int pos)
{
	int id = lemma_find(wn, s, n);
	return id >= 0 && wn->lemmas[id].n[pos] ? id : -1;
}

int wordnet_is_lemma(const struct wordnet *wn, const char *word)
{
	char buf[LEMMA_MAX];
	int n = normalise(word, buf, sizeof(buf));
	if (n <= 0)
		return 0;
	for (int pos = 0; pos < WORDNET_N_POS; pos++)
		if (lemma_of_pos(wn, buf, (size_t)n, pos) >= 0)
			return 1;
	return 0;
}

struct rule {
	const char *suffix, *ending;
};

static const struct rule noun_rules[] = {{"s", ""},     {"ses", "s"},  {"xes", "x"},   {"zes", "z"},
					 {"ches", "ch"}, {"shes", "sh"}, {"men", "man"}, {"ies", "y"}, {NULL, NULL}};
static const struct rule verb_rules[] = {{"s", ""},   {"ies", "y"}, {"es", "e"}, {"es", ""},
					 {"ed", "e"}, {"ed", ""},   {"ing", "e"}, {"ing", ""}, {NULL, NULL}};
static const struct rule adj_rules[] = {{"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"}, {NULL, NULL}};
static const struct rule adv_rules[] = {{NULL, NULL}};
static const struct rule *const rules[WORDNET_N_POS] = {noun_rules, verb_rules, adj_rules, adv_rules};

static size_t add_base(const char **ret, size_t n, size_t max, const char *base)
{
	if (n >= max)
		return n;
	for (size_t i = 0; i < n; i++)
		if (ret[i] == base)
			return n;
	ret[n] = base;
	return n + 1;
}

static size_t morphy_norm(const struct wordnet *wn, const char *w, size_t len, int pos, const char **ret, size_t max)
{
	size_t n = 0;
	int id = lemma_of_pos(wn, w, len, pos);
	if (id >= 0)
		n = add_base(ret, n, max, lemma_str(wn, (uint32_t)id));
	int fid = lemma_find(wn, w, len);
	if (fid >= 0 && wn->n_exc) {
		struct wn_exc key = {(uint32_t)fid, 0, (uint8_t)pos};
		size_t lo = 0, hi = wn->n_exc;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (cmp_exc(&wn->exc[mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < wn->n_exc && cmp_exc(&wn->exc[lo], &key) == 0; lo++)
			if (wn->lemmas[wn->exc[lo].base].n[pos])
				n = add_base(ret, n, max, lemma_str(wn, wn->exc[lo].base));
	}
	char buf[LEMMA_MAX];
	for (const struct rule *r = rules[pos]; r->suffix; r++) {
		size_t sl = strlen(r->suffix), el = strlen(r->ending);
		if (len <= sl || memcmp(w + len - sl, r->suffix, sl) != 0 || len - sl + el >= sizeof(buf))
			continue;
		memcpy(buf, w, len - sl);
		memcpy(buf + len - sl, r->ending, el);
		id = lemma_of_pos(wn, buf, len - sl + el, pos);
		if (id >= 0)
			n = add_base(ret, n, max, lemma_str(wn, (uint32_t)id));
	}
	return n;
}

size_t wordnet_morphy(const struct wordnet *wn, const char *word, enum wordnet_pos pos, const char **ret_bases,
		      size_t max)
{
	char buf[LEMMA_MAX];
	int n = normalise(word, buf, sizeof(buf));
	if (n <= 0 || (unsigned)pos >= WORDNET_N_POS)
		return 0;
	return morphy_norm(wn, buf, (size_t)n, pos, ret_bases, max);
}

/* Append syn to ret[0..n) unless it is there or ret is full; returns the new n. */
static size_t add_synset(uint32_t *ret, size_t n, size_t max, uint32_t syn)
{
	for (size_t i = 0; i < n; i++)
		if (ret[i] == syn)
			return n;
	if (n < max)
		ret[n++] = syn;
	return n;
}

/* Hand lemma (underscores) to fn with spaces. */
static void emit(const char *lemma, unsigned rel, void (*fn)(const char *, unsigned, void *), void *ctx)
{
	char buf[LEMMA_MAX];
	size_t i = 0;
	for (; lemma[i] && i + 1 < sizeof(buf); i++)
		buf[i] = lemma[i] == '_' ? ' ' : lemma[i];
	buf[i] = '\0';
	if (i)
		fn(buf, rel, ctx);
}

static void emit_synset(const struct wordnet *wn, uint32_t syn, unsigned word_no, const char *self, unsigned rel,
			void (*fn)(const char *, unsigned, void *), void *ctx)
{
	const struct wn_synset *ss = &wn->synsets[syn];
	for (unsigned w = 0; w < ss->n_words; w++) {
		if (word_no && w + 1 != word_no)
			continue;
		const char *l = lemma_str(wn, wn->words[ss->word_first + w]);
		if (strcmp(l, self) != 0)
			emit(l, rel, fn, ctx);
	}
}

static void related_of_synset(const struct wordnet *wn, uint32_t syn, const char *base, unsigned relations,
			      void (*fn)(const char *, unsigned, void *), void *ctx)
{
	const struct wn_synset *ss = &wn->synsets[syn];
	unsigned self_no = 0;
	for (unsigned w = 0; w < ss->n_words && !self_no; w++)
		if (strcmp(lemma_str(wn, wn->words[ss->word_first + w]), base) == 0)
			self_no = w + 1;
	if (relations & WORDNET_SYNONYM)
		emit_synset(wn, syn, 0, base, WORDNET_SYNONYM, fn, ctx);
	for (unsigned k = 0; k < ss->n_ptrs; k++) {
		const struct wn_ptr *p = &wn->ptrs[ss->ptr_first + k];
		if (p->src && p->src != self_no)
			continue; /* a lexical pointer of another word of the synset */
		if (p->kind == 'm')
			continue; /* membership is not a near word (see wordnet_noun_members) */
		unsigned rel = p->kind == '@'  ? WORDNET_HYPERNYM
			       : p->kind == '+' ? WORDNET_DERIVED
			       : p->kind == '=' ? WORDNET_ATTRIBUTE
						: WORDNET_PERTAINYM;
		if (rel == WORDNET_HYPERNYM && p->tpos != WORDNET_NOUN)
			continue; /* only nouns' hypernyms are the same thing said more generally */
		if (relations & rel)
			emit_synset(wn, p->target, p->dst, base, rel, fn, ctx);
	}
}

void wordnet_related(const struct wordnet *wn, const char *word, unsigned relations, unsigned max_senses,
		     void (*fn)(const char *lemma, unsigned relation, void *ctx), void *ctx)
{
	char buf[LEMMA_MAX];
	int len = normalise(word, buf, sizeof(buf));
	if (len <= 0)
		return;
	for (int pos = 0; pos < WORDNET_N_POS; pos++) {
		const char *bases[8];
		size_t nb = morphy_norm(wn, buf, (size_t)len, pos, bases, 8);
		for (size_t b = 0; b < nb; b++) {
			if ((relations & WORDNET_BASE) && strcmp(bases[b], buf) != 0)
				emit(bases[b], WORDNET_BASE, fn, ctx);
			int id = lemma_find(wn, bases[b], strlen(bases[b]));
			const struct wn_lemma *s = &wn->lemmas[id];
			unsigned n = s->n[pos] < max_senses ? s->n[pos] : max_senses;
			for (unsigned k = 0; k < n; k++)
				related_of_synset(wn, wn->senses[s->first[pos] + k], bases[b], relations, fn, ctx);
		}
	}
}

size_t wordnet_noun_synsets(const struct wordnet *wn, const char *word, unsigned max_senses, uint32_t *ret,
			    size_t max)
{
	char buf[LEMMA_MAX];
	int len = normalise(word, buf, sizeof(buf));
	if (len <= 0)
		return 0;
	const char *bases[8];
	size_t nb = morphy_norm(wn, buf, (size_t)len, WORDNET_NOUN, bases, 8), n = 0;
	for (size_t b = 0; b < nb; b++) {
		const struct wn_lemma *s = &wn->lemmas[lemma_find(wn, bases[b], strlen(bases[b]))];
		unsigned k_max = s->n[WORDNET_NOUN] < max_senses ? s->n[WORDNET_NOUN] : max_senses;
		for (unsigned k = 0; k < k_max; k++)
			n = add_synset(ret, n, max, wn->senses[s->first[WORDNET_NOUN] + k]);
	}
	return n;
}

/* The noun synsets one pointer of kind away from synsets[0..n_synsets), distinct, at most max into ret. */
static size_t noun_neighbours(const struct wordnet *wn, char kind, const uint32_t *synsets, size_t n_synsets,
			      uint32_t *ret, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < n_synsets; i++) {
		const struct wn_synset *ss = &wn->synsets[synsets[i]];
		for (unsigned k = 0; k < ss->n_ptrs; k++) {
			const struct wn_ptr *p = &wn->ptrs[ss->ptr_first + k];
			if (p->kind == kind && p->tpos == WORDNET_NOUN)
				n = add_synset(ret, n, max, p->target);
		}
	}
	return n;
}

size_t wordnet_noun_hypernyms(const struct wordnet *wn, const uint32_t *synsets, size_t n_synsets, uint32_t *ret,
			      size_t max)
{
	return noun_neighbours(wn, '@', synsets, n_synsets, ret, max);
}

size_t wordnet_noun_members(const struct wordnet *wn, const uint32_t *synsets, size_t n_synsets, uint32_t *ret,
			    size_t max)
{
	return noun_neighbours(wn, 'm', synsets, n_synsets, ret, max);
}
