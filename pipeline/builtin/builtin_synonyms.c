/*
 * builtin_synonyms.c - words the schema never says, read as a schema name:
 * a WordNet synonym of the word (or of one word of a two-word column name),
 * or the schema word linking's related-words index stands in for it, read
 * whole or as if the question said it instead ("information" for
 * project_details).
 */
#include "pipeline/builtin/builtin_names.h"

#include "common/strbuf.h"

#include <stdio.h>
#include <string.h>

struct synonyms {
	char lemma[16][QUESTION_MAX_WORD * 2];
	size_t n;
};

static void collect(const char *lemma, unsigned relation, void *ctx)
{
	(void)relation;
	struct synonyms *x = ctx;
	if (x->n < 16 && strlen(lemma) < sizeof(x->lemma[0]))
		strcpy(x->lemma[x->n++], lemma);
}

static int synonym_match(const struct schema *s, struct bi_words *r, size_t at, const struct synonyms *xp);

/* The distinct stems of the space-separated words of text, into st (at most 8); their count, 9 when more. */
static int word_stems(const char *text, char st[][QUESTION_MAX_WORD])
{
	int n = 0;
	for (const char *p = text; p && *p;) {
		size_t len = strcspn(p, " ");
		char one[QUESTION_MAX_WORD], stem[QUESTION_MAX_WORD];
		if (len >= sizeof(one))
			return 9;
		if (len) {
			memcpy(one, p, len);
			one[len] = '\0';
			bi_stem(one, stem);
			bool seen = false;
			for (int k = 0; k < n && !seen; k++)
				seen = strcmp(st[k], stem) == 0;
			if (!seen && n == 8)
				return 9;
			if (!seen)
				strcpy(st[n++], stem);
		}
		p += len;
		while (*p == ' ')
			p++;
	}
	return n;
}

/*
 * The schema words the related-words index stands in for word: the table-name words, and the column-name
 * words that are not also a table's (account_details says "account" only as its table's name), each up
 * to a plural ("product products").  Into one: the one table-name word and the one column-name word,
 * each when there is only one; into all: the one table-name word and every column-name word (at most 8).
 */
static void stand_in(const struct related_words *rw, const struct wordnet *wn, const char *word, struct synonyms *one,
		     struct synonyms *all)
{
	struct strbuf out[2];
	char st[2][9][QUESTION_MAX_WORD];
	int n[2] = {0, 0};
	strbuf_init(&out[0], 1024);
	strbuf_init(&out[1], 1024);
	/* also where the schema says a near word of it ("terminals" and an end_date column), but for a word
	   that may be an adjective ("female": the sex words are read on their own) */
	const char *adj[1];
	bool orphans_only = wordnet_morphy(wn, word, WORDNET_ADJ, adj, 1) > 0;
	if (related_words_stand_ins(rw, wn, word, orphans_only, &out[0], &out[1]) == 0)
		for (int k = 0; k < 2; k++)
			n[k] = word_stems(out[k].buf, st[k]);
	strbuf_release(&out[0]);
	strbuf_release(&out[1]);
	if (n[0] == 1) {
		strcpy(one->lemma[one->n++], st[0][0]);
		strcpy(all->lemma[all->n++], st[0][0]);
	}
	int kept = 0;
	for (int i = 0; i < n[1] && n[1] <= 8; i++) {
		bool of_table = false;
		for (int j = 0; j < n[0] && n[0] <= 8 && !of_table; j++)
			of_table = strcmp(st[1][i], st[0][j]) == 0;
		if (!of_table) {
			kept++;
			strcpy(all->lemma[all->n++], st[1][i]);
		}
	}
	if (kept == 1)
		strcpy(one->lemma[one->n++], all->lemma[all->n - 1]);
}

/* Add mention m (a synonym's reading) over its words; a mention already on them gives way.  1, or -1
   when the mentions are full. */
static int store_mention(struct bi_words *r, struct bi_mention m)
{
	if (r->n_mentions == BI_MAX_MENTIONS)
		return -1;
	for (int k = 0; k < m.len; k++) {
		int o = r->mention_at[m.start + k];
		if (o >= 0)
			r->mentions[o].dropped = true;
		r->mention_at[m.start + k] = (int)r->n_mentions;
	}
	r->mentions[r->n_mentions++] = m;
	return 1;
}

/* Does a mention of the question (not dropped) name table t itself; or any table, when t is -1? */
static bool table_named(const struct bi_words *r, int t)
{
	for (size_t i = 0; i < r->n_mentions; i++)
		if (!r->mentions[i].dropped && r->mentions[i].table >= 0 && (t < 0 || r->mentions[i].table == t))
			return true;
	return false;
}

/* A column mention keeps the columns of the tables named, when some table is; false when none is left. */
static bool keep_named(const struct bi_words *r, struct bi_mention *m)
{
	if (m->table >= 0 || !table_named(r, -1))
		return true;
	int kept = 0;
	for (int c = 0; c < m->n_cands; c++)
		if (table_named(r, m->cands[c].table))
			m->cands[kept++] = m->cands[c];
	return (m->n_cands = kept) > 0;
}

void bi_keep_named_tables(struct bi_words *r)
{
	for (size_t m = 0; m < r->n_mentions; m++) {
		struct bi_mention *x = &r->mentions[m];
		if (!x->named_only || x->dropped || keep_named(r, x))
			continue;
		bi_drop_mention(r, (int)m);
	}
}

/*
 * The word at `at` read as if the question said one of x's one-word lemmas instead: the mention
 * bi_find_mentions would find there (or from "the number of" just before it), also over the next words
 * when they are unread, one-word column mentions (which give way) or name the same table; at least
 * min_len words long, and, for a column, of a table the question names (when it names one).  Adds the
 * mention and returns 1; 0 when no lemma gives one or two lemmas give different ones; -1 when the
 * mentions are full.  r's stems are as before when it returns.
 */
static int said_instead(const struct schema *s, struct bi_words *r, size_t at, const struct synonyms *x,
			int min_len)
{
	struct bi_mention found = {.len = 0};
	char saved[QUESTION_MAX_WORD], lw[BI_NAME_WORDS][QUESTION_MAX_WORD], used[QUESTION_MAX_WORD] = "";
	strcpy(saved, r->stem[at]);
	for (size_t i = 0; i < x->n; i++) {
		if (bi_name_words(x->lemma[i], lw, BI_NAME_WORDS) != 1 || strcmp(lw[0], saved) == 0 ||
		    strcmp(lw[0], used) == 0)
			continue;
		strcpy(r->stem[at], lw[0]);
		struct bi_mention m = bi_mention_from(s, r, at);
		/* "issue day": the word before and the one said instead spell a name whole (issue_date); a one-word
		   column mention on the word before (volume_issue) gives way */
		int before = at > 0 ? r->mention_at[at - 1] : -1;
		if (at > 0 && !r->is_number[at - 1] &&
		    (before < 0 || (r->mentions[before].len == 1 && r->mentions[before].table < 0))) {
			struct bi_mention whole = bi_mention_from(s, r, at - 1);
			if (whole.len >= 2 && whole.len >= m.len + 1)
				m = whole;
		}
		/* "the number of washrooms": bathroom_count */
		if (at >= 2 && r->mention_at[at - 2] < 0 && r->mention_at[at - 1] < 0 &&
		    question_words_phrase_at(&r->ws, at - 2, "number of")) {
			struct bi_mention counted = bi_mention_from(s, r, at - 2);
			if (counted.len >= 3)
				m = counted;
		}
		strcpy(r->stem[at], saved);
		for (int k = 1; k < m.len; k++) {
			size_t w = (size_t)(m.start + k);
			int o = r->mention_at[w];
			/* the next words: unread, or one-word column mentions, or naming the same table ("catalogue
			   contents": catalog_contents, "contents" named it without catalogs' name) */
			if (w > at && (r->is_number[w] || (o >= 0 && (r->mentions[o].len != 1 ||
								 (r->mentions[o].table >= 0 && r->mentions[o].table != m.table)))))
				m.len = 0;
		}
		if (m.len < min_len || m.len == 0 || !keep_named(r, &m))
			continue;
		if (found.len)
			return 0; /* two schema words stand for it */
		found = m;
		strcpy(used, lw[0]);
	}
	if (found.len == 0)
		return 0;
	found.synonym = true;
	found.named_only = found.table < 0;
	return store_mention(r, found);
}

/* w with a British ending spelled the American way, into out (QUESTION_MAX_WORD bytes). */
static void american(const char *w, char *out)
{
	static const char *const ENDINGS[][2] = {{"our", "or"},   {"ours", "ors"}, {"mme", "m"},     {"mmes", "ms"},
						 {"tre", "ter"},  {"tres", "ters"}, {"ogue", "og"},  {"ogues", "ogs"},
						 {"isation", "ization"}, {"ise", "ize"}};
	size_t n = strlen(w);
	snprintf(out, QUESTION_MAX_WORD, "%s", w);
	for (size_t k = 0; k < sizeof(ENDINGS) / sizeof(ENDINGS[0]); k++) {
		size_t e = strlen(ENDINGS[k][0]);
		if (n > e + 2 && n - e + strlen(ENDINGS[k][1]) < QUESTION_MAX_WORD && strcmp(w + n - e, ENDINGS[k][0]) == 0) {
			strcpy(out + n - e, ENDINGS[k][1]);
			return;
		}
	}
}

/* w's stem (into stem) and that stem spelled the American way, stemmed again (into key). */
static void spelling_key(const char *w, char *stem, char *key)
{
	char us[QUESTION_MAX_WORD];
	bi_stem(w, stem);
	american(stem, us);
	bi_stem(us, key);
}

/* Keep of x the one-word lemmas that are word spelled another way ("colour": color, "programme": program). */
static void keep_spellings(const char *word, struct synonyms *x)
{
	char stem[QUESTION_MAX_WORD], key[QUESTION_MAX_WORD], lstem[QUESTION_MAX_WORD], lkey[QUESTION_MAX_WORD];
	spelling_key(word, stem, key);
	size_t kept = 0;
	for (size_t i = 0; i < x->n; i++) {
		spelling_key(x->lemma[i], lstem, lkey);
		if (strcmp(stem, lstem) != 0 && strcmp(key, lkey) == 0)
			memmove(x->lemma[kept++], x->lemma[i], sizeof(x->lemma[0]));
	}
	x->n = kept;
}

int bi_synonym_mention(const struct schema *s, const struct wordnet *wn, const struct related_words *rw,
		       struct bi_words *r, size_t at)
{
	if (!wn || strlen(r->ws.w[at]) < 3)
		return 0;
	struct synonyms x = {.n = 0};
	wordnet_related(wn, r->ws.w[at], WORDNET_BASE | WORDNET_SYNONYM, 3, collect, &x);
	/* first a name spelled another way, read as the schema spells it ("colours", "programmes": the
	   program table, though a programme is a broadcast too) */
	struct synonyms spellings = x;
	keep_spellings(r->ws.w[at], &spellings);
	int found = spellings.n ? said_instead(s, r, at, &spellings, 1) : 0;
	if (found == 0)
		found = synonym_match(s, r, at, &x);
	/* a noun's synonym said instead ("telephone" for customer_phone); not a verb's ("described"), nor the
	   imperative opening a question ("Count the number of ...") */
	const char *base[1];
	if (found == 0 && at > 0 && wordnet_morphy(wn, r->ws.w[at], WORDNET_NOUN, base, 1) > 0)
		found = said_instead(s, r, at, &x, 1);
	if (found || !rw)
		return found;
	struct synonyms all = {.n = 0};
	x.n = 0;
	stand_in(rw, wn, r->ws.w[at], &x, &all);
	/* a name of several words said with it first ("goods sizes": product_size), then the word alone */
	if (all.n)
		found = said_instead(s, r, at, &all, 2);
	if (x.n && found == 0 && (found = synonym_match(s, r, at, &x)) == 1)
		r->mentions[r->n_mentions - 1].named_only = r->mentions[r->n_mentions - 1].table < 0;
	if (all.n && found == 0)
		found = said_instead(s, r, at, &all, 1);
	return found;
}

int bi_synonym_compound_mention(const struct schema *s, const struct wordnet *wn, const struct related_words *rw,
				struct bi_words *r, size_t at)
{
	if (!wn || at + 1 >= r->ws.n || r->is_number[at + 1] || r->mention_at[at] >= 0)
		return 0;
	int o = r->mention_at[at + 1];
	if (o >= 0 && (r->mentions[o].len != 1 || r->mentions[o].table >= 0))
		return 0;
	/* the collocation as said, or with its last word's base form ("alcoholic drinks") */
	char compound[2 * QUESTION_MAX_WORD + 1];
	const char *base[1];
	uint32_t sense;
	snprintf(compound, sizeof(compound), "%s %s", r->ws.w[at], r->ws.w[at + 1]);
	if (wordnet_noun_synsets(wn, compound, 1, &sense, 1) == 0) {
		if (wordnet_morphy(wn, r->ws.w[at + 1], WORDNET_NOUN, base, 1) == 0)
			return 0;
		snprintf(compound, sizeof(compound), "%s %s", r->ws.w[at], base[0]);
		if (wordnet_noun_synsets(wn, compound, 1, &sense, 1) == 0)
			return 0;
	}
	struct synonyms x = {.n = 0}, one = {.n = 0}, all = {.n = 0};
	wordnet_related(wn, compound, WORDNET_SYNONYM, 3, collect, &x);
	int found = said_instead(s, r, at + 1, &x, 1);
	/* a synonym of several words that is a name of the schema ("last names": family_name) */
	if (found == 0)
		found = synonym_match(s, r, at + 1, &x);
	if (found == 0 && rw) {
		stand_in(rw, wn, compound, &one, &all);
		if (one.n && (found = synonym_match(s, r, at + 1, &one)) == 1)
			r->mentions[r->n_mentions - 1].named_only = r->mentions[r->n_mentions - 1].table < 0;
		if (all.n && found == 0)
			found = said_instead(s, r, at + 1, &all, 1);
	}
	if (found != 1)
		return found;
	/* the mention read on the collocation's last word covers its first too */
	bi_extend_mention_back(r, (int)r->n_mentions - 1);
	return 1;
}

/* Is stem one of the lemmas of x (stemmed, one word)? */
static bool among_lemmas(const struct synonyms *x, const char *stem)
{
	char lw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	for (size_t i = 0; i < x->n; i++)
		if (bi_name_words(x->lemma[i], lw, BI_NAME_WORDS) == 1 && strcmp(lw[0], stem) == 0)
			return true;
	return false;
}

struct pair_words {
	const struct bi_words *r;
	size_t at;
	const struct synonyms *x; /* the synonyms of words at and at + 1 */
};

/* Each word as the schema says it or a synonym of the schema's word, not both as said ("telephone number",
   "begin day"). */
static bool one_word_a_synonym(char words[][QUESTION_MAX_WORD], const void *ctx)
{
	const struct pair_words *p = ctx;
	bool same0 = strcmp(p->r->stem[p->at], words[0]) == 0, same1 = strcmp(p->r->stem[p->at + 1], words[1]) == 0;
	return !(same0 && same1) && (same0 || among_lemmas(&p->x[0], words[0])) && (same1 || among_lemmas(&p->x[1], words[1]));
}

int bi_synonym_pair_mention(const struct schema *s, const struct wordnet *wn, const struct related_words *rw,
			    struct bi_words *r, size_t at)
{
	if (!wn || at + 1 >= r->ws.n || r->is_number[at + 1] ||
	    (r->mention_at[at + 1] >= 0 && (r->mentions[r->mention_at[at + 1]].len != 1 ||
					    r->mentions[r->mention_at[at + 1]].table >= 0)))
		return 0;
	struct synonyms x[2] = {{.n = 0}, {.n = 0}};
	for (int k = 0; k < 2; k++) {
		/* the column-name words rw stands in for it first ("match scores": match_rating), then its
		   WordNet synonyms */
		struct synonyms one = {.n = 0};
		if (rw)
			stand_in(rw, wn, r->ws.w[at + (size_t)k], &one, &x[k]);
		wordnet_related(wn, r->ws.w[at + (size_t)k], WORDNET_BASE | WORDNET_SYNONYM, 3, collect, &x[k]);
	}
	struct bi_mention m = {.start = (int)at, .len = 2, .table = -1, .synonym = true};
	bi_add_columns_named(s, r, 2, one_word_a_synonym, &(struct pair_words){r, at, x}, &m);
	return m.n_cands == 0 ? 0 : store_mention(r, m);
}

static int synonym_match(const struct schema *s, struct bi_words *r, size_t at, const struct synonyms *xp)
{
	const struct synonyms x = *xp;
	struct bi_mention m = {.start = (int)at, .len = 1, .table = -1, .synonym = true};
	char lw[BI_NAME_WORDS][QUESTION_MAX_WORD], nw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	for (size_t i = 0; i < x.n; i++) {
		int ln = bi_name_words(x.lemma[i], lw, BI_NAME_WORDS);
		if (ln <= 0 || (ln == 1 && strcmp(lw[0], r->stem[at]) == 0))
			continue;
		for (size_t t = 0; t < s->n_tables; t++) {
			if (!bi_table_read(r, t))
				continue;
			int n = bi_name_words(s->tables[t].name, nw, BI_NAME_WORDS);
			bool same = n == ln;
			for (int k = 0; k < n && same; k++)
				same = strcmp(nw[k], lw[k]) == 0;
			/* a compound synonym whose head is the table's one-word name ("mountaineer": mountain climber,
			   "curriculum": course of study), not the word itself before a head ("female": female person) */
			same |= n == 1 && ln == 2 && strcmp(nw[0], lw[1]) == 0 && strcmp(lw[0], r->stem[at]) != 0;
			same |= n == 1 && ln >= 3 && strcmp(lw[1], "of") == 0 && strcmp(nw[0], lw[0]) == 0;
			if (same && m.table != (int)t) {
				m.table_ambiguous |= m.table >= 0;
				m.table = (int)t;
			}
			int tn = n;
			for (size_t c = 0; c < s->tables[t].n_columns; c++) {
				char cw[BI_NAME_WORDS][QUESTION_MAX_WORD];
				n = bi_name_words(s->tables[t].columns[c].name, cw, BI_NAME_WORDS);
				/* the whole name, or a two-word synonym without the table's name in front (customer_first_name) */
				int skip = 0;
				while (tn > 0 && ln >= 2 && n - tn == ln && skip < tn && strcmp(cw[skip], nw[skip]) == 0)
					skip++;
				skip = skip == tn ? tn : 0;
				same = n - skip == ln;
				for (int k = 0; k < ln && same; k++)
					same = strcmp(cw[skip + k], lw[k]) == 0;
				bool seen = false;
				for (int k = 0; k < m.n_cands && !seen; k++)
					seen = m.cands[k].table == (int)t && m.cands[k].column == (int)c;
				if (same && !seen && bi_add_candidate(&m, (int)t, (int)c) < 0)
					m.too_many = true;
			}
		}
	}
	if (m.table < 0 && m.n_cands == 0)
		return 0;
	if (m.table >= 0)
		m.n_cands = 0; /* a table's synonym names the table */
	return store_mention(r, m);
}
