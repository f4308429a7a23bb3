/*
 * wordnet.h - WordNet 3.0 lexical knowledge, loaded once into read-only tables.
 *
 * Reads the database files of Princeton WordNet (Debian package
 * `wordnet-base`, under /usr/share/wordnet: index.{noun,verb,adj,adv},
 * data.{noun,verb,adj,adv} and {noun,verb,adj,adv}.exc) directly, without
 * libwordnet, whose global state and static buffers do not fit a
 * multithreaded server.  Only what linking uses is kept: every lemma, its
 * senses per part of speech in WordNet's frequency order, each synset's
 * words, and the pointers hypernym (@), derivationally related form (+),
 * attribute (=) and pertainym (\); glosses and the other pointers are
 * skipped.  The tables are built by wordnet_load and never written again:
 * any number of threads may read one struct wordnet at the same time.
 *
 * Words are looked up lower-cased; collocations are spelled with spaces or
 * underscores ("last name", "last_name").  Lemmas handed to callbacks use
 * spaces.
 *
 * Morphology follows WordNet's morphy(): the exception lists first, then
 * the detachment rules of each part of speech (nouns: -s, -ses, -xes, -zes,
 * -ches, -shes, -men, -ies; verbs: -s, -ies, -es, -ed, -ing; adjectives:
 * -er, -est), keeping only forms that are lemmas of that part of speech.
 */
#ifndef T2S_TEXT_WORDNET_H
#define T2S_TEXT_WORDNET_H

#include "common/contract.h"
#include "common/error.h"

#include <stddef.h>
#include <stdint.h>

/* Where Debian's wordnet-base puts the database. */
#define WORDNET_DEFAULT_DIR "/usr/share/wordnet"
/* The Debian package that holds the database, named in load errors. */
#define WORDNET_PACKAGE "wordnet-base"

enum wordnet_pos { WORDNET_NOUN, WORDNET_VERB, WORDNET_ADJ, WORDNET_ADV, WORDNET_N_POS };

/* Relations wordnet_related reports (a bit mask selects them). */
enum wordnet_relation {
	WORDNET_BASE = 1 << 0,      /* a base form of the word itself ("injuries" -> injury) */
	WORDNET_SYNONYM = 1 << 1,   /* another word of one of its synsets ("vocalist" -> singer) */
	WORDNET_DERIVED = 1 << 2,   /* derivationally related form ("injury" -> injure) */
	WORDNET_ATTRIBUTE = 1 << 3, /* adjective <-> the attribute it values ("tall" -> height) */
	WORDNET_PERTAINYM = 1 << 4, /* adjective -> noun it pertains to ("national" -> nation) */
	WORDNET_HYPERNYM = 1 << 5,  /* a word of a noun synset one step more general ("worker" <- employee) */
};

struct wordnet;

struct wordnet_stats {
	size_t lemmas, synsets, pointers, senses;
	size_t bytes;   /* heap memory held by the tables */
	double load_ms; /* wall time of wordnet_load */
};

/*
 * Read the database under dir (NULL: WORDNET_DEFAULT_DIR).  On success
 * *ret is the caller's and is freed with wordnet_free.  Errors:
 * -T2S_ERR_NOT_FOUND when a file is missing (the message names the
 * directory and the package WORDNET_PACKAGE), -T2S_ERR_INVALID when a file
 * is not in WordNet's format, -T2S_ERR_NOMEM.
 */
T2S_MUST_CHECK
int wordnet_load(const char *dir, struct wordnet **ret, struct t2s_error *err);

/* Free wn (may be NULL); returns NULL. */
struct wordnet *wordnet_free(struct wordnet *wn);

void wordnet_stats(const struct wordnet *wn, struct wordnet_stats *ret);

/*
 * Base forms of word for pos (morphy), as lemma strings that live in wn
 * (underscores for spaces), at most max of them into ret_bases; the word
 * itself comes first when it is a lemma.  Returns how many were written.
 */
size_t wordnet_morphy(const struct wordnet *wn, const char *word, enum wordnet_pos pos, const char **ret_bases,
		      size_t max);

/* True when word (any case, spaces or underscores) is a lemma of some part of speech. */
int wordnet_is_lemma(const struct wordnet *wn, const char *word);

/*
 * Call fn(lemma, relation, ctx) for the words related to word by the
 * relations in the mask, over the first max_senses senses of each base
 * form in each part of speech.  The same lemma may be reported more than
 * once (under several relations or senses); the word itself is not
 * reported.  lemma is valid only during the call.  Never allocates.
 */
void wordnet_related(const struct wordnet *wn, const char *word, unsigned relations, unsigned max_senses,
		     void (*fn)(const char *lemma, unsigned relation, void *ctx), void *ctx);

/*
 * Synset ids (opaque numbers, equal when the synsets are) of the first
 * max_senses noun senses of each base form of word, distinct, at most max
 * of them into ret.  Returns how many were written.
 */
size_t wordnet_noun_synsets(const struct wordnet *wn, const char *word, unsigned max_senses, uint32_t *ret,
			    size_t max);

/*
 * The one-step noun hypernyms of synsets[0..n_synsets), distinct, at most
 * max into ret.  Returns how many were written.
 */
size_t wordnet_noun_hypernyms(const struct wordnet *wn, const uint32_t *synsets, size_t n_synsets, uint32_t *ret,
			      size_t max);

/*
 * The noun synsets related to synsets[0..n_synsets) by membership, either
 * way (member meronyms and holonyms: person <-> people, professor <->
 * faculty), distinct, at most max into ret.  Returns how many were written.
 */
size_t wordnet_noun_members(const struct wordnet *wn, const uint32_t *synsets, size_t n_synsets, uint32_t *ret,
			    size_t max);

#endif
