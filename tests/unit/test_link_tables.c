/*
 * test_link_tables.c - the learned table scorer (pipeline/link/link_scorer.h
 * "tables", pipeline/link/link_tables.c): its weights parse from a good
 * document and file, a corrupt part or a missing file fails naming what is
 * wrong, a document without it leaves the hand rules alone; applied, it
 * requires a table no rule named (keyed to the question's table) that the
 * hand rules leave out, and leaves out a table it rates low; features: true
 * lists every table with its features and whether the scorer decided it.
 */
#include "pipeline/link/link.h"
#include "pipeline/link/link_scorer.h"
#include "tests/unit/link_fixture.h"
#include "tests/unit/tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COLUMN_PART                                                                                                    \
	"\"version\": 1, \"features\": [\"score\", \"score_rel\", \"score_table_rel\", \"table_best\", \"rank_inv\","   \
	" \"mention_full\", \"mention_part\", \"stand_in\", \"label\", \"value\", \"primary_key\", \"foreign_key\","    \
	" \"shared_name\", \"table_rel\", \"table_named\", \"table_log_columns\", \"numeric\"],"                        \
	" \"weights\": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], \"intercept\": -1, \"threshold\": 0.25"

#define TABLE_FEATURES                                                                                                 \
	"[\"score\", \"score_rel\", \"rank_inv\", \"top3_rel\", \"score_rule\", \"mention_full\", \"mention_part\","    \
	" \"stand_in\", \"value\", \"stand_in_name\", \"far_name\", \"keyed_firm\", \"bridge\", \"no_firm\","           \
	" \"firm_log\", \"log_columns\"]"

/* keyed_firm (weight 10) is 0.5 for a table keyed to one required table: probability 0.5, the threshold. */
static const char good_doc[] = "{" COLUMN_PART ", \"tables\": {\"features\": " TABLE_FEATURES
			       ", \"weights\": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0],"
			       " \"intercept\": -5, \"threshold\": 0.5, \"fit\": {\"cv_auc\": 0.9}}}";

static void test_parse(void)
{
	struct link_scorer s = {0};
	struct t2s_error err = {0};
	int rc = link_scorer_parse(good_doc, strlen(good_doc), &s, &err);
	double f[LINK_TABLE_FEATURES] = {[LTF_KEYED_FIRM] = 0.5};
	TAP_OK(rc == 0 && s.tables.present && s.tables.weights[LTF_KEYED_FIRM] == 10 && s.tables.threshold == 0.5 &&
		       link_table_scorer_probability(&s.tables, f) == 0.5,
	       "table_weights_parse");

	static const char no_tables[] = "{" COLUMN_PART "}";
	rc = link_scorer_parse(no_tables, strlen(no_tables), &s, &err);
	TAP_OK(rc == 0 && !s.tables.present && link_table_scorer_probability(&s.tables, f) == 0,
	       "without_tables_the_hand_rules_alone_pick_tables");

	char *bad = strdup(good_doc);
	memcpy(strstr(bad, "\"far_name\""), "\"far_nome\"", 10);
	rc = link_scorer_parse(bad, strlen(bad), &s, &err);
	TAP_OK(rc == -T2S_ERR_INVALID && strstr(err.message, "tables.feature 10") && strstr(err.message, "'far_name'"),
	       "wrong_table_feature_is_named");
	free(bad);
	bad = strdup(good_doc);
	memcpy(strstr(bad, "\"threshold\": 0.5"), "\"threshold\": 7.5", 16);
	rc = link_scorer_parse(bad, strlen(bad), &s, &err);
	TAP_OK(rc == -T2S_ERR_INVALID && strstr(err.message, "tables.threshold"), "table_threshold_outside_0_1_is_refused");
	free(bad);
	static const char not_object[] = "{" COLUMN_PART ", \"tables\": [1]}";
	rc = link_scorer_parse(not_object, strlen(not_object), &s, &err);
	TAP_OK(rc == -T2S_ERR_INVALID && strstr(err.message, "'tables' must be an object"), "tables_not_an_object_is_refused");
	static const char short_weights[] = "{" COLUMN_PART ", \"tables\": {\"features\": " TABLE_FEATURES
					    ", \"weights\": [1, 2], \"intercept\": 0, \"threshold\": 0.5}}";
	rc = link_scorer_parse(short_weights, strlen(short_weights), &s, &err);
	TAP_OK(rc == -T2S_ERR_INVALID && strstr(err.message, "tables.weights"), "short_table_weights_are_refused");

	char path[] = "/tmp/t2s-link-tables-XXXXXX";
	int fd = mkstemp(path);
	rc = fd >= 0 && write(fd, good_doc, strlen(good_doc)) == (ssize_t)strlen(good_doc) ? 0 : -1;
	memset(&s, 0, sizeof(s));
	if (rc == 0)
		rc = link_scorer_load(path, &s, &err);
	TAP_OK(rc == 0 && s.tables.present && s.tables.intercept == -5, "table_weights_load_from_a_file");
	if (fd >= 0) {
		if (ftruncate(fd, 0) == 0 && pwrite(fd, "{\"version\": 1, \"tables\": {", 26, 0) == 26)
			rc = link_scorer_load(path, &s, &err);
		TAP_OK(rc < 0 && strstr(err.message, path), "corrupt_file_names_its_path");
		close(fd);
		unlink(path);
	}
	rc = link_scorer_load("/nonexistent/link_tables.json", &s, &err);
	TAP_OK(rc < 0 && strstr(err.message, "/nonexistent/link_tables.json"), "missing_file_names_its_path");
	const struct link_scorer *b = link_scorer_builtin(&err);
	TAP_OK(b && b->tables.present && b->tables.threshold > 0 && b->tables.threshold < 1,
	       "built_in_weights_carry_a_table_scorer");
}

/* teachers is what the question names; ledger is keyed to it and shares no word with the question; weather neither. */
static const char fixture_sql[] =
	"CREATE TABLE teachers (teacher_id INTEGER PRIMARY KEY, full_name TEXT, age INTEGER);"
	"CREATE TABLE ledger (ledger_id INTEGER PRIMARY KEY, amount_due REAL, staff INTEGER REFERENCES teachers(teacher_id));"
	"CREATE TABLE weather (reading_id INTEGER PRIMARY KEY, temperature REAL);"
	"INSERT INTO teachers VALUES (1, 'Ada Byron', 36), (2, 'Alan Turing', 41);"
	"INSERT INTO ledger VALUES (1, 10.5, 1), (2, 3.0, 2);"
	"INSERT INTO weather VALUES (1, 3.5);";

static bool has_table(const struct link_result *r, const char *name)
{
	for (size_t i = 0; i < r->n_tables; i++)
		if (!strcmp(r->index->schema->tables[r->tables[i].table].name, name))
			return true;
	return false;
}

static const struct link_table_candidate *candidate(const struct link_result *r, const char *name)
{
	for (size_t i = 0; i < r->n_table_candidates; i++)
		if (!strcmp(r->index->schema->tables[r->table_candidates[i].table].name, name))
			return &r->table_candidates[i];
	return NULL;
}

static int run(struct column_index *idx, const struct link_scorer *sc, bool features, struct link_result *ret)
{
	struct link_params p = link_params_default;
	p.scorer = sc;
	struct link_request rq = {.question = "How old is each teacher?", .mode = LINK_MODE_VECTOR, .features = features};
	struct t2s_error err = {0};
	return link_run(idx, &p, NULL, NULL, &rq, ret, &err);
}

static void test_apply(struct column_index *idx)
{
	struct link_scorer hand = {.intercept = -1, .threshold = 0.25}, learned = hand;
	struct t2s_error err = {0};
	TAP_OK(link_scorer_parse(good_doc, strlen(good_doc), &learned, &err) == 0, "fixture_weights_parse");
	struct link_result r = {0};
	int rc = run(idx, &hand, false, &r);
	TAP_OK(rc == 0 && has_table(&r, "teachers") && !has_table(&r, "ledger") && r.table_candidates == NULL,
	       "hand_rules_leave_out_the_keyed_table");
	link_result_release(&r);
	rc = run(idx, &learned, false, &r);
	TAP_OK(rc == 0 && has_table(&r, "teachers") && has_table(&r, "ledger") && !has_table(&r, "weather"),
	       "table_scorer_requires_the_keyed_table_and_not_the_unrelated_one");
	link_result_release(&r);
	learned.tables.threshold = 0.6;
	rc = run(idx, &learned, true, &r);
	const struct link_table_candidate *t = rc == 0 ? candidate(&r, "teachers") : NULL,
					  *l = rc == 0 ? candidate(&r, "ledger") : NULL;
	TAP_OK(rc == 0 && !has_table(&r, "ledger"), "below_its_threshold_the_table_is_left_out");
	TAP_OK(r.n_table_candidates == 3 && t && !t->decided && l && l->decided && l->features[LTF_KEYED_FIRM] == 0.5 &&
		       l->probability == 0.5,
	       "features_list_every_table_and_what_the_scorer_decided");
	link_result_release(&r);
}

int main(void)
{
	test_parse();
	struct link_fixture f;
	int rc = link_fixture_open(&f, fixture_sql);
	TAP_INT_EQ(rc, 0, "fixture_index_builds");
	if (rc == 0)
		test_apply(f.idx);
	link_fixture_release(&f);
	return tap_done();
}
