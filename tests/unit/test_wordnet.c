/*
 * test_wordnet.c - the WordNet tables (pipeline/text/wordnet.c) and the
 * lexicon on top of them (pipeline/text/lexicon.c): morphy base forms,
 * synonyms, collocations, derived forms, attributes, hypernyms, the
 * abbreviation table, the load error that names the package, and reads of
 * one loaded database from several threads.
 */
#include "pipeline/text/lexicon.h"
#include "pipeline/text/wordnet.h"
#include "tests/unit/tap.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct find {
	const char *want;
	unsigned relation; /* the relation want was reported under (0: not seen) */
};

static void find_cb(const char *lemma, unsigned relation, void *ctx)
{
	struct find *f = ctx;
	if (strcmp(lemma, f->want) == 0)
		f->relation |= relation;
}

static unsigned related(const struct wordnet *wn, const char *word, const char *want)
{
	struct find f = {want, 0};
	wordnet_related(wn, word, ~0u, 3, find_cb, &f);
	return f.relation;
}

static bool has_base(const struct wordnet *wn, const char *word, enum wordnet_pos pos, const char *base)
{
	const char *b[8];
	size_t n = wordnet_morphy(wn, word, pos, b, 8);
	for (size_t i = 0; i < n; i++)
		if (strcmp(b[i], base) == 0)
			return true;
	return false;
}

static void *reader(void *arg)
{
	const struct wordnet *wn = arg;
	int ok = 1;
	for (int i = 0; i < 2000; i++)
		ok &= (related(wn, "vocalists", "singer") & WORDNET_SYNONYM) != 0;
	return ok ? arg : NULL;
}

int main(void)
{
	struct t2s_error err = {0};
	struct wordnet *missing = NULL;
	int rc = wordnet_load("/nonexistent-wordnet-dir", &missing, &err);
	TAP_OK(rc == -T2S_ERR_NOT_FOUND && missing == NULL, "load_of_missing_dir_fails_not_found");
	TAP_OK(strstr(err.message, WORDNET_PACKAGE) != NULL && strstr(err.message, "link.wordnet") != NULL,
	       "load_error_names_the_package_and_the_option");

	struct wordnet *wn = NULL;
	if (wordnet_load(NULL, &wn, &err) < 0) {
		printf("# %s\n", err.message);
		TAP_OK(0, "wordnet_loads_from_default_dir");
		return tap_done();
	}
	struct wordnet_stats st;
	wordnet_stats(wn, &st);
	printf("# %zu lemmas, %zu synsets, %.1f MiB, %.0f ms\n", st.lemmas, st.synsets, st.bytes / 1048576.0,
	       st.load_ms);
	TAP_OK(st.synsets > 100000 && st.lemmas > 140000, "wordnet_3_0_is_loaded_whole");

	TAP_OK(has_base(wn, "youngest", WORDNET_ADJ, "young"), "morphy_adjective_exception_youngest_young");
	TAP_OK(has_base(wn, "men", WORDNET_NOUN, "man"), "morphy_noun_exception_men_man");
	TAP_OK(has_base(wn, "countries", WORDNET_NOUN, "country"), "morphy_rule_ies_y");
	TAP_OK(has_base(wn, "hired", WORDNET_VERB, "hire"), "morphy_rule_ed");
	TAP_OK(!has_base(wn, "singerzz", WORDNET_NOUN, "singerzz"), "morphy_unknown_word_has_no_base");
	TAP_OK(wordnet_is_lemma(wn, "Last Name") && !wordnet_is_lemma(wn, "last nameq"), "collocations_are_lemmas");

	TAP_OK(related(wn, "vocalist", "singer") & WORDNET_SYNONYM, "synonym_vocalist_singer");
	TAP_OK(related(wn, "aerodrome", "airport") & WORDNET_SYNONYM, "synonym_aerodrome_airport");
	TAP_OK(related(wn, "family name", "last name") & WORDNET_SYNONYM, "collocation_family_name_last_name");
	TAP_OK(related(wn, "injury", "injure") & WORDNET_DERIVED, "derived_injury_injure");
	TAP_OK(related(wn, "independence", "independent") & WORDNET_DERIVED, "derived_independence_independent");
	TAP_OK(related(wn, "tall", "height") & WORDNET_ATTRIBUTE, "attribute_tall_height");
	TAP_OK(related(wn, "oldest", "age") & WORDNET_ATTRIBUTE, "attribute_through_base_form_oldest_age");
	TAP_OK(related(wn, "employee", "worker") & WORDNET_HYPERNYM, "hypernym_employee_worker");
	TAP_OK(related(wn, "singer", "singer") == 0, "the_word_itself_is_not_reported");

	TAP_STR_EQ(lexicon_abbreviation("LName", 5), "last name", "abbreviation_lname_any_case");
	TAP_OK(lexicon_abbreviation("name", 4) == NULL, "an_english_word_is_no_abbreviation");
	char *sp = lexicon_spell_out("dept_ID");
	TAP_STR_EQ(sp, "department id", "spell_out_splits_and_expands");
	free(sp);

	struct lexicon_expansion x;
	TAP_OK(lexicon_expand(wn, "Which vocalist is the youngest?", LEXICON_QUESTION, 2, &x) == 0, "expand_question");
	TAP_OK(strstr(x.near, "singer") && strstr(x.near, "age"), "question_near_holds_synonym_and_attribute");
	TAP_OK(!strstr(x.near, "vocalist,") && !strstr(x.near, "which"), "question_words_and_stop_words_not_expanded");
	lexicon_expansion_release(&x);
	TAP_OK(lexicon_expand(NULL, "When was it founded?", LEXICON_QUESTION, 2, &x) == 0 && strstr(x.near, "date"),
	       "idioms_work_without_wordnet");
	lexicon_expansion_release(&x);
	TAP_OK(lexicon_expand(NULL, "List their full names.", LEXICON_QUESTION, 2, &x) == 0 && strstr(x.near, "first") &&
	       strstr(x.near, "last"),
	       "full_name_idiom_adds_first_and_last");
	lexicon_expansion_release(&x);
	TAP_OK(lexicon_expand(wn, "emp_lname", LEXICON_SCHEMA, 2, &x) == 0 && strstr(x.near, "surname"),
	       "schema_names_are_spelled_out_before_expansion");
	lexicon_expansion_release(&x);

	pthread_t th[4];
	int started = 0;
	for (int i = 0; i < 4; i++)
		started += pthread_create(&th[i], NULL, reader, wn) == 0;
	int good = 0;
	for (int i = 0; i < started; i++) {
		void *res = NULL;
		pthread_join(th[i], &res);
		good += res != NULL;
	}
	TAP_OK(started == 4 && good == 4, "concurrent_readers_of_one_database_agree");
	wordnet_free(wn);
	return tap_done();
}
