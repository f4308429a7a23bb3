/*
 * test_link_budget.c - the fill of /link's columns within its token budget
 * (pipeline/link/link_columns.c) and the learned scorer's weights
 * (pipeline/link/link_scorer.h): a small table is shown whole, the join keys
 * of every required table are kept even where the scaffold joins through
 * other keys, the budget caps what the fill adds; a good weights document
 * parses, a corrupt or missing one fails with a message naming what is wrong,
 * and the weights built into the binary parse.
 */
#include "pipeline/link/link.h"
#include "pipeline/link/link_scorer.h"
#include "tests/unit/link_fixture.h"
#include "tests/unit/tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * vets is small (five columns); owners, pets and visits are wide (twenty-six
 * padding columns each, too many tokens to show whole); visits joins both pets and owners, and pets joins
 * owners: a triangle, of which the scaffold uses two joins (no foreign key
 * is named after the table it references, so the question names none of
 * them).  accounts is wide and joins nothing.
 */
/* Append count padding columns ", <prefix><letter> TEXT" to sql at n; the new length. */
static int pad(char *sql, size_t size, int n, const char *prefix, int count)
{
	for (int k = 0; k < count; k++)
		n += snprintf(sql + n, size - (size_t)n, ", %s%c TEXT", prefix, 'a' + k);
	return n;
}

/* The fixture's SQL into sql (size bytes). */
static void fixture_sql(char *sql, size_t size)
{
	int n = snprintf(sql, size,
			 "CREATE TABLE owners (owner_id INTEGER PRIMARY KEY, surname TEXT");
	n = pad(sql, size, n, "extra_field_", 26);
	n += snprintf(sql + n, size - (size_t)n,
		      ");"
		      "CREATE TABLE vets (vet_id INTEGER PRIMARY KEY, clinic TEXT, city TEXT, phone TEXT, fee REAL);"
		      "CREATE TABLE pets (pet_id INTEGER PRIMARY KEY, kind TEXT, age INTEGER, weight REAL,"
		      " keeper INTEGER REFERENCES owners(owner_id)");
	n = pad(sql, size, n, "trait_field_", 26);
	n += snprintf(sql + n, size - (size_t)n,
		      ");"
		      "CREATE TABLE visits (visit_id INTEGER PRIMARY KEY, patient INTEGER REFERENCES pets(pet_id),"
		      " payer INTEGER REFERENCES owners(owner_id)");
	n = pad(sql, size, n, "detail_field_", 26);
	n += snprintf(sql + n, size - (size_t)n, ");CREATE TABLE accounts (acct_id INTEGER PRIMARY KEY");
	for (int k = 0; k < 40; k++)
		n += snprintf(sql + n, size - (size_t)n, ", note_%c%c TEXT", 'a' + k / 26, 'a' + k % 26);
	snprintf(sql + n, size - (size_t)n,
		 ");INSERT INTO owners (owner_id, surname) VALUES (1, 'Smith'), (2, 'Jones');"
		 "INSERT INTO pets (pet_id, kind, age, weight, keeper) VALUES (1, 'dog', 3, 10.5, 1), (2, 'cat', 5, 4.0, 2);"
		 "INSERT INTO visits (visit_id, patient, payer) VALUES (1, 1, 1), (2, 2, 2);");
}

/* True when the result links table.column. */
static bool linked(const struct link_result *r, const char *table, const char *column)
{
	const struct schema *s = r->index->schema;
	for (size_t i = 0; i < r->n_columns; i++)
		if (!strcmp(s->tables[r->columns[i].table].name, table) &&
		    !strcmp(s->tables[r->columns[i].table].columns[r->columns[i].column].name, column))
			return true;
	return false;
}

/* Columns of table the result links. */
static size_t linked_of(const struct link_result *r, const char *table)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_columns; i++)
		n += !strcmp(r->index->schema->tables[r->columns[i].table].name, table);
	return n;
}

static int run(struct column_index *idx, const struct link_scorer *sc, long budget, const char *question,
	       struct link_result *ret)
{
	struct link_params p = link_params_default;
	p.scorer = sc;
	p.budget_tokens = budget;
	p.top_k = 100;
	struct link_request rq = {.question = question, .mode = LINK_MODE_VECTOR};
	struct t2s_error err = {0};
	return link_run(idx, &p, NULL, NULL, &rq, ret, &err);
}

static void test_fill(struct column_index *idx)
{
	/* A scorer that rates every column unlikely: the fill adds only each table's best column (min_k). */
	struct link_scorer strict = {.intercept = -20, .threshold = 0.5};
	/* One that rates every column likely: only the budget stops the fill. */
	struct link_scorer eager = {.intercept = 0, .threshold = 0.1};
	struct link_result r = {0};
	int rc = run(idx, &strict, 600, "Which vets are there?", &r);
	TAP_OK(rc == 0 && linked_of(&r, "vets") == 5, "small_table_is_shown_whole");
	link_result_release(&r);

	rc = run(idx, &strict, 600, "owners pets visits", &r);
	TAP_OK(rc == 0 && linked(&r, "visits", "patient") && linked(&r, "visits", "payer") &&
		       linked(&r, "pets", "keeper") && linked(&r, "owners", "owner_id") && linked(&r, "pets", "pet_id"),
	       "join_keys_of_every_required_table_are_kept");
	TAP_OK(rc == 0 && linked_of(&r, "visits") < 10 && linked_of(&r, "pets") < 10, "a_wide_table_is_not_shown_whole");
	link_result_release(&r);

	rc = run(idx, &eager, 60, "list the accounts", &r);
	TAP_OK(rc == 0 && r.column_tokens <= 60 && linked_of(&r, "accounts") > 2 && linked_of(&r, "accounts") < 41,
	       "fill_stops_at_the_token_budget");
	long small = rc == 0 ? r.column_tokens : 0;
	link_result_release(&r);
	rc = run(idx, &eager, 0, "list the accounts", &r);
	/* every column with a positive score (one of the forty scores 0: its words are not the question's) */
	TAP_OK(rc == 0 && linked_of(&r, "accounts") >= 40 && r.column_tokens > 60 && r.column_tokens > small,
	       "no_budget_lets_the_scorer_alone_decide");
	link_result_release(&r);
}

static const char good_doc[] =
	"{\"version\": 1, \"features\": [\"score\", \"score_rel\", \"score_table_rel\", \"table_best\", \"rank_inv\","
	" \"mention_full\", \"mention_part\", \"stand_in\", \"label\", \"value\", \"primary_key\", \"foreign_key\","
	" \"shared_name\", \"table_rel\", \"table_named\", \"table_log_columns\", \"numeric\"],"
	" \"weights\": [1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], \"intercept\": -1, \"threshold\": 0.25,"
	" \"fit\": {\"cv_auc\": 0.8}}";

static void test_scorer_files(void)
{
	struct link_scorer s = {0};
	struct t2s_error err = {0};
	int rc = link_scorer_parse(good_doc, strlen(good_doc), &s, &err);
	double f[LINK_FEATURES] = {[LF_SCORE] = 1, [LF_SCORE_REL] = 0};
	TAP_OK(rc == 0 && s.weights[LF_SCORE_REL] == 2 && s.threshold == 0.25 &&
		       link_scorer_probability(&s, f) == 0.5,
	       "good_weights_document_parses");

	rc = link_scorer_parse("{\"version\": 1, \"weights\": [", 27, &s, &err);
	TAP_OK(rc == -T2S_ERR_INVALID && strstr(err.message, "not JSON"), "corrupt_weights_document_is_refused");
	char renamed[sizeof(good_doc)];
	memcpy(renamed, good_doc, sizeof(good_doc));
	memcpy(strstr(renamed, "\"numeric\""), "\"numerik\"", 9);
	rc = link_scorer_parse(renamed, strlen(renamed), &s, &err);
	TAP_OK(rc == -T2S_ERR_INVALID && strstr(err.message, "'numeric'"), "wrong_feature_name_is_named");
	char *bad = strdup(good_doc);
	memcpy(strstr(bad, "0.25"), "2.50", 4);
	rc = link_scorer_parse(bad, strlen(bad), &s, &err);
	TAP_OK(rc == -T2S_ERR_INVALID && strstr(err.message, "threshold"), "threshold_outside_0_1_is_refused");
	free(bad);
	rc = link_scorer_load("/nonexistent/link_scorer.json", &s, &err);
	TAP_OK(rc < 0 && strstr(err.message, "/nonexistent/link_scorer.json"), "missing_weights_file_names_its_path");
	TAP_OK(link_scorer_builtin(&err) != NULL, "built_in_weights_parse");
}

int main(void)
{
	test_scorer_files();
	static char sql[16384];
	fixture_sql(sql, sizeof(sql));
	struct link_fixture f;
	int rc = link_fixture_open(&f, sql);
	TAP_INT_EQ(rc, 0, "fixture_index_builds");
	if (rc == 0)
		test_fill(f.idx);
	link_fixture_release(&f);
	return tap_done();
}
