/*
 * test_related_words.c - stand-ins for the question words a schema never
 * says (pipeline/link/related_words.c), on hand-made schema word lists:
 * each tier, the closest tier winning, table and column words found apart,
 * anchored words and capitalised value names left alone, collocations anchored
 * only by all their words, no WordNet.
 */
#include "pipeline/link/related_words.h"
#include "pipeline/text/wordnet.h"
#include "tests/unit/tap.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The stand-ins of question over a schema of the given table and column name words. */
static char *stand_ins(const struct wordnet *wn, char **table_words, char **column_words, const char *question)
{
	char **tables[1] = {table_words}, **columns[1] = {column_words};
	struct related_words rw;
	if (related_words_build(wn, tables, 1, columns, 1, &rw) < 0)
		return NULL;
	struct strbuf sb;
	strbuf_init(&sb, 1 << 16);
	int rc = related_words_of_question(&rw, wn, question, &sb);
	related_words_release(&rw);
	if (rc < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; p && (p = strstr(p, word)) != NULL; p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
	return false;
}

static void check(const struct wordnet *wn, char **tables, char **columns, const char *question, const char *want,
		  const char *unwanted, const char *name)
{
	char *got = stand_ins(wn, tables, columns, question);
	bool ok = got && (!want || has_word(got, want)) && (!unwanted || !has_word(got, unwanted)) &&
		  (want || unwanted || !*got);
	if (!ok)
		printf("# %s -> [%s]\n", question, got ? got : "(out of memory)");
	TAP_OK(ok, name);
	free(got);
}

/* Which of related_words_stand_ins' two lists check_one reads. */
enum { TABLE_WORDS = 1, COLUMN_WORDS = 2 };

/* related_words_stand_ins of one word, among the words where says. */
static void check_one(const struct wordnet *wn, char **table_words, char **column_words, const char *word,
		      unsigned where, const char *want, const char *unwanted, const char *name)
{
	char **tables[1] = {table_words}, **columns[1] = {column_words};
	struct related_words rw;
	struct strbuf as[2], sb;
	strbuf_init(&as[0], 1024);
	strbuf_init(&as[1], 1024);
	strbuf_init(&sb, 1024);
	bool ok = related_words_build(wn, tables, 1, columns, 1, &rw) == 0;
	ok = ok && related_words_stand_ins(&rw, wn, word, true, &as[0], &as[1]) == 0;
	for (int k = 0; ok && k < 2; k++)
		ok = !(where & (k ? COLUMN_WORDS : TABLE_WORDS)) || !as[k].buf || strbuf_adds(&sb, as[k].buf) == 0;
	const char *got = sb.buf ? sb.buf : "";
	ok = ok && (!want || has_word(got, want)) && (!unwanted || !has_word(got, unwanted)) && (want || !*got);
	if (!ok)
		printf("# %s -> [%s]\n", word, got);
	TAP_OK(ok, name);
	related_words_release(&rw);
	strbuf_release(&as[0]);
	strbuf_release(&as[1]);
	strbuf_release(&sb);
}

int main(void)
{
	struct t2s_error err = {0};
	struct wordnet *wn = NULL;
	if (wordnet_load(NULL, &wn, &err) < 0) {
		printf("# %s\n", err.message);
		TAP_OK(0, "wordnet_loads_from_default_dir");
		return tap_done();
	}
	char *shop_tables[] = {"product", "complaint", NULL};
	char *shop_columns[] = {"product", "name", "price", "complaint", "status", "code", NULL};
	/* A product is a kind of commodity, whose words include "good". */
	check(wn, shop_tables, shop_columns, "List the name of all goods.", "product", NULL,
	      "tier1_goods_stands_for_product");
	/* "districts" is a kind of region. */
	char *storm_tables[] = {"storm", "affected", "region", NULL};
	char *storm_columns[] = {"storm", "name", "region", "damage", NULL};
	check(wn, storm_tables, storm_columns, "Which districts did the storm hit?", "region", NULL,
	      "tier1_district_stands_for_region");
	/* Town and city are both municipalities; a hometown is a town (closer, but a column word). */
	char *city_tables[] = {"city", "member", NULL};
	char *city_columns[] = {"city", "name", "population", "hometown", NULL};
	char *got = stand_ins(wn, city_tables, city_columns, "How many towns are there?");
	TAP_OK(got && has_word(got, "city") && has_word(got, "hometown"),
	       "table_and_column_words_are_matched_apart_town_city_and_hometown");
	if (got && !(has_word(got, "city") && has_word(got, "hometown")))
		printf("# [%s]\n", got);
	free(got);
	/* The closest tier wins: people is a whole whose member is a person (tier 1); a body
	   is two steps from a person's third sense. */
	char *people_tables[] = {"people", "body", NULL};
	char *people_columns[] = {"people", "name", NULL};
	check(wn, people_tables, people_columns, "How many persons are there?", "people", "body",
	      "membership_is_closer_than_two_steps");
	/* A staff's members are staff members, and a staff member is an employee: tier 2. */
	char *staff_tables[] = {"staff", "department", NULL};
	char *staff_columns[] = {"staff", "name", "department", NULL};
	check(wn, staff_tables, staff_columns, "How many employees work in each department?", "staff", NULL,
	      "tier2_a_member_of_the_staff_is_an_employee");
	/* Words the schema says, or says a near word of, have no stand-ins. */
	check(wn, shop_tables, shop_columns, "List the name and price of all products.", NULL, NULL,
	      "anchored_words_have_no_stand_ins");
	check(wn, shop_tables, shop_columns, "What does the merchandise cost?", NULL, NULL,
	      "a_synonym_of_a_schema_word_is_not_an_orphan");
	/* A capitalised word inside the sentence names a value ("Goods" a shop), not a schema thing. */
	check(wn, shop_tables, shop_columns, "How many complaints name Goods?", NULL, NULL,
	      "capitalised_words_inside_the_sentence_are_values");
	check(wn, shop_tables, shop_columns, "Show the complaints. Goods priced over 10 only.", "product", NULL,
	      "a_capital_after_a_full_stop_starts_a_sentence");
	/* One word's stand-ins, among the table words or the column words only. */
	check_one(wn, city_tables, city_columns, "towns", TABLE_WORDS, "city", "hometown",
		  "one_word_among_the_table_words");
	check_one(wn, city_tables, city_columns, "Towns", COLUMN_WORDS, "hometown", NULL,
		  "one_word_among_the_column_words_in_any_case");
	check_one(wn, shop_tables, shop_columns, "products", TABLE_WORDS | COLUMN_WORDS, NULL, NULL,
		  "one_anchored_word_has_no_stand_ins");
	/* A collocation is anchored only when the schema says each of its words: a "drink" column does not
	   say "alcoholic drink", whose kind wine is a table; "drink price" is said whole. */
	char *wine_tables[] = {"wine", "grape", NULL};
	char *wine_columns[] = {"wine", "name", "drink", "price", NULL};
	check_one(wn, wine_tables, wine_columns, "alcoholic drink", TABLE_WORDS, "wine", NULL,
		  "a_collocation_one_of_whose_words_the_schema_says_has_stand_ins");
	char *drink_columns[] = {"wine", "name", "drink", "alcoholic", NULL};
	check_one(wn, wine_tables, drink_columns, "alcoholic drink", TABLE_WORDS | COLUMN_WORDS, NULL, NULL,
		  "a_collocation_the_schema_says_word_for_word_has_none");
	/* Asked for a word the schema says a near word of, not only for orphans: "merchandise" (a synonym
	   of product's) stands for product. */
	{
		char **tables[1] = {shop_tables}, **columns[1] = {shop_columns};
		struct related_words rw;
		struct strbuf as[2];
		strbuf_init(&as[0], 256);
		strbuf_init(&as[1], 256);
		bool ok = related_words_build(wn, tables, 1, columns, 1, &rw) == 0 &&
			  related_words_stand_ins(&rw, wn, "merchandise", true, &as[0], &as[1]) == 0 &&
			  !as[0].len && related_words_stand_ins(&rw, wn, "merchandise", false, &as[0], &as[1]) == 0 &&
			  as[0].buf && has_word(as[0].buf, "product");
		TAP_OK(ok, "a_word_not_an_orphan_has_stand_ins_when_asked_for");
		related_words_release(&rw);
		strbuf_release(&as[0]);
		strbuf_release(&as[1]);
	}
	/* Without WordNet there is nothing to relate. */
	check(NULL, shop_tables, shop_columns, "List the name of all goods.", NULL, NULL, "without_wordnet_nothing");
	wordnet_free(wn);
	return tap_done();
}
