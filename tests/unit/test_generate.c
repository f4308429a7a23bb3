/*
 * test_generate.c - the parts of generation that need no database: SQL in a
 * model's answer (reply.h), the prompt's profiles and token budget
 * (prompt.h), and model routes with breakers and fallbacks (model_route.h)
 * against the model-server stub.
 */
#include "tests/unit/tap.h"

#include "common/arena.h"
#include "common/clock.h"
#include "pipeline/generate/generate_job.h"
#include "pipeline/generate/prompt.h"
#include "pipeline/generate/repair.h"
#include "pipeline/generate/reply.h"
#include "pipeline/generate/reuse.h"
#include "pipeline/text/numbers.h"
#include "pipeline/models/model_route.h"
#include "tests/unit/stub_process.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* got (freed here) is want, or NULL when want is. */
static void expect_text(char *got, const char *want, const char *name)
{
	if (want)
		TAP_STR_EQ(got ? got : "(null)", want, name);
	else
		TAP_OK(got == NULL, name);
	free(got);
}

static void expect_sql(const char *answer, const char *want, const char *name)
{
	expect_text(reply_extract_sql(answer, NULL), want, name);
}

static void test_reply(void)
{
	expect_sql("```sql\nSELECT 1;\n```", "SELECT 1", "fenced_sql_without_semicolon");
	expect_sql("Here it is:\n```SQL\nSELECT a\nFROM t\n```\nIt selects a.", "SELECT a\nFROM t",
		   "prose_around_the_fence_is_ignored_and_tag_case_insensitive");
	expect_sql("```python\nprint(1)\n```\n```sql\nSELECT 2\n```", "SELECT 2", "the_sql_fence_wins_over_other_fences");
	expect_sql("```\nSELECT 3\n```", "SELECT 3", "an_untagged_fence_is_taken");
	expect_sql("SELECT count(*) FROM singer", "SELECT count(*) FROM singer", "a_bare_statement");
	expect_sql("The query is:\nSELECT name\nFROM singer\n\nWHERE age > 3\n\nThis lists names.",
		   "SELECT name\nFROM singer\n\nWHERE age > 3", "bare_statement_ends_at_prose_after_a_blank_line");
	expect_sql("SQLQuery: SELECT 4", "SELECT 4", "a_label_before_the_statement_is_dropped");
	expect_sql("WITH x AS (SELECT 1) SELECT * FROM x", "WITH x AS (SELECT 1) SELECT * FROM x", "with_statement");
	expect_sql("I cannot answer that.", NULL, "no_sql_gives_null");
	expect_sql("Selection of data is hard.", NULL, "a_word_starting_with_select_is_not_sql");
	expect_sql("```sql\n\n```", NULL, "an_empty_fence_gives_null");
	expect_sql("```sql\nSELECT 1; DROP TABLE t;\n```", "SELECT 1; DROP TABLE t",
		   "several_statements_are_kept_for_validation_to_refuse");
	expect_sql("```sql\nSELECT 5", "SELECT 5", "an_unclosed_fence_runs_to_the_end");
}

static void test_unanswerable_sentinel(void)
{
	char why[32];
	TAP_OK(reply_unanswerable("  UNANSWERABLE: the schema\n  holds no jokes.\n", why, sizeof(why)) == 1,
	       "sentinel_reply_is_unanswerable");
	TAP_STR_EQ(why, "the schema holds no jokes.", "sentinel_reason_is_whitespace_folded");
	TAP_OK(reply_unanswerable("UNANSWERABLE:", why, sizeof(why)) == 1 && why[0] == '\0',
	       "sentinel_without_reason_has_an_empty_reason");
	TAP_OK(reply_unanswerable("UNANSWERABLE: a reason far longer than the buffer it is written to", why,
				  sizeof(why)) == 1 && strlen(why) == sizeof(why) - 1,
	       "sentinel_reason_is_cut_to_the_buffer");
	TAP_OK(reply_unanswerable("UNANSWERABLE: no", NULL, 0) == 1, "sentinel_reason_may_be_ignored");
	TAP_OK(!reply_unanswerable("unanswerable: lower case", why, sizeof(why)), "sentinel_is_case_sensitive");
	TAP_OK(!reply_unanswerable("It is UNANSWERABLE: maybe", why, sizeof(why)), "sentinel_must_begin_the_reply");
	TAP_OK(!reply_unanswerable("UNANSWERABLE: but\n```sql\nSELECT 1\n```", why, sizeof(why)),
	       "a_reply_with_a_fence_is_not_the_sentinel");
	TAP_OK(!reply_unanswerable(NULL, why, sizeof(why)), "no_reply_is_not_the_sentinel");
}

/* A schema: t1(id PK, name, a..h), t2(id PK, t1_id FK -> t1.id, value). */
static struct schema *make_schema(void)
{
	struct schema *s = schema_new("db", DB_ENGINE_SQLITE);
	struct arena *a = &s->arena;
	s->n_tables = 2;
	s->tables = arena_calloc(a, 2, sizeof(struct schema_table));
	static const char *const t1_cols[] = {"id", "name", "alpha", "beta", "gamma", "delta", "epsilon", "zeta"};
	struct schema_table *t1 = &s->tables[0], *t2 = &s->tables[1];
	t1->schema = t2->schema = "main";
	t1->name = "t1";
	t1->n_columns = 8;
	t1->columns = arena_calloc(a, 8, sizeof(struct schema_column));
	for (size_t i = 0; i < 8; i++) {
		t1->columns[i].name = t1_cols[i];
		t1->columns[i].type = i == 0 ? "INTEGER" : "TEXT";
		t1->columns[i].samples = arena_calloc(a, 1, sizeof(char *));
		t1->columns[i].samples[0] = "it's a sample value";
		t1->columns[i].n_samples = 1;
	}
	t1->primary_key = arena_calloc(a, 1, sizeof(char *));
	t1->primary_key[0] = "id";
	t1->n_primary_key = 1;
	t2->name = "t2";
	t2->n_columns = 3;
	t2->columns = arena_calloc(a, 3, sizeof(struct schema_column));
	t2->columns[0] = (struct schema_column){.name = "id", .type = "INTEGER"};
	t2->columns[1] = (struct schema_column){.name = "t1_id", .type = "INTEGER"};
	t2->columns[2] = (struct schema_column){.name = "value", .type = "REAL"};
	t2->primary_key = arena_calloc(a, 1, sizeof(char *));
	t2->primary_key[0] = "id";
	t2->n_primary_key = 1;
	t2->foreign_keys = arena_calloc(a, 1, sizeof(struct schema_foreign_key));
	t2->n_foreign_keys = 1;
	t2->foreign_keys[0].columns = arena_calloc(a, 1, sizeof(char *));
	t2->foreign_keys[0].columns[0] = "t1_id";
	t2->foreign_keys[0].n_columns = 1;
	t2->foreign_keys[0].ref_table = "t1";
	t2->foreign_keys[0].ref_columns = arena_calloc(a, 1, sizeof(char *));
	t2->foreign_keys[0].ref_columns[0] = "id";
	TAP_SETUP(schema_finish(s));
	return s;
}

static void test_prompt(void)
{
	struct schema *s = make_schema();
	struct prompt_table tables[] = {{0, "people"}, {1, NULL}};
	struct prompt_column cols[11];
	size_t n = 0;
	for (int c = 0; c < 8; c++)
		cols[n++] = (struct prompt_column){0, c, 0.9 - 0.1 * c, c == 0, c == 7, NULL};
	for (int c = 0; c < 3; c++)
		cols[n++] = (struct prompt_column){1, c, 0.5, c < 2, false, c == 2 ? "the value of a thing" : NULL};
	struct prompt_join joins[] = {{1, 1, 0, 0}, {1, 2, 0, 2}}; /* the foreign key, and an inferred join */
	struct prompt_pair examples[] = {{"how many t1", "SELECT count(*) FROM t1"}};
	struct prompt_input in = {.schema = s, .question = "What is the value of zeta?", .user_evidence = "zeta is z",
				  .tables = tables, .n_tables = 2, .columns = cols, .n_columns = n, .joins = joins,
				  .n_joins = 2, .examples = examples, .n_examples = 1, .sample_values = 2};
	struct prompt_output out;
	struct t2s_error err = {0};
	TAP_INT_EQ(prompt_build(&in, &out, &err), 0, "default_prompt_builds");
	TAP_OK(out.system && strstr(out.system, "SQLite"), "default_profile_has_a_system_message");
	TAP_OK(out.system && strstr(out.system, REPLY_UNANSWERABLE), "default_profile_offers_the_unanswerable_sentinel");
	TAP_OK(strstr(out.user, "-- people\nCREATE TABLE t1 (\n  id INTEGER PRIMARY KEY,\n  name TEXT, -- e.g. 'it''s a sample value'\n"),
	       "create_table_with_description_key_without_samples_comma_before_comment_and_quoted_sample");
	TAP_OK(strstr(out.user, "  FOREIGN KEY (t1_id) REFERENCES t1(id)\n);"), "foreign_key_line_ends_the_table");
	TAP_OK(strstr(out.user, "value REAL, -- the value of a thing"), "column_description_is_a_comment");
	TAP_OK(!strstr(out.user, "t2.t1_id = t1.id") && strstr(out.user, "### Joins between these tables\nt2.value = t1.alpha\n"),
	       "declared_joins_are_the_foreign_keys_inferred_ones_are_listed");
	TAP_OK(strstr(out.user, "### Notes\n- = is case-sensitive; LIKE is not (ASCII).\n\n### Question"),
	       "no_date_or_ratio_notes_when_not_needed");
	TAP_OK(strstr(out.user, "- zeta is z") && strstr(out.user, "-- Question: how many t1\nSELECT count(*) FROM t1;"),
	       "user_evidence_and_examples_listed");
	TAP_OK(strstr(out.user, "### Question\nWhat is the value of zeta?"), "question_last");
	TAP_INT_EQ((long)out.columns_dropped, 0, "no_budget_drops_nothing");
	long full = out.estimated_tokens;
	TAP_OK(full == prompt_estimate_tokens(out.system) + prompt_estimate_tokens(out.user), "estimate_is_bytes_over_4");
	prompt_output_release(&out);

	in.context_tokens = full - 40;
	TAP_INT_EQ(prompt_build(&in, &out, &err), 0, "budgeted_prompt_builds");
	TAP_OK(out.columns_dropped >= 1 && out.estimated_tokens <= in.context_tokens, "over_budget_columns_dropped_to_fit");
	TAP_OK(!out.column_shown[6] && out.column_shown[0] && out.column_shown[7] && out.column_shown[9],
	       "lowest_score_dropped_first_keys_and_kept_columns_stay");
	TAP_INT_EQ((long)out.examples_dropped, 0, "examples_stay_while_columns_can_go");
	prompt_output_release(&out);

	in.context_tokens = 50;
	TAP_INT_EQ(prompt_build(&in, &out, &err), 0, "tiny_budget_still_builds");
	TAP_OK(out.over_budget && out.examples_dropped == 1 && out.samples_dropped, "tiny_budget_drops_all_it_may");
	TAP_OK(out.column_shown[0] && out.column_shown[7] && out.column_shown[8] && out.column_shown[9],
	       "join_keys_and_kept_columns_never_dropped");
	TAP_OK(strstr(out.user, "t1_id INTEGER") != NULL, "the_join_key_is_still_rendered");
	prompt_output_release(&out);

	in.context_tokens = 0;
	in.profile = "lite-sql";
	TAP_INT_EQ(prompt_build(&in, &out, &err), 0, "lite_sql_prompt_builds");
	TAP_OK(out.system == NULL, "lite_sql_has_no_system_message");
	TAP_OK(!strstr(out.user, REPLY_UNANSWERABLE), "lite_sql_keeps_its_trained_format_without_the_sentinel");
	TAP_OK(strncmp(out.user, "### Question\nWhat is the value of zeta?\n### Database\n-- Tables and Columns\n"
				 "t1.id = {INTEGER, primary_key, values ('it''s a sample value')}\n",
		       strlen("### Question\nWhat is the value of zeta?\n### Database\n-- Tables and Columns\n"
			      "t1.id = {INTEGER, primary_key, values ('it''s a sample value')}\n")) == 0,
	       "lite_sql_starts_with_question_then_column_lines");
	TAP_OK(strstr(out.user, "t2.value = {REAL, the value of a thing}\n"), "lite_sql_column_description");
	TAP_OK(strstr(out.user, "-- Foreign Keys\nt2.t1_id = t1.id\nt2.value = t1.alpha\n-- Evidence\nzeta is z\n"),
	       "lite_sql_keys_and_evidence");
	prompt_output_release(&out);
	in.profile = "other";
	TAP_INT_EQ(prompt_build(&in, &out, &err), -T2S_ERR_INVALID, "unknown_profile_is_invalid");
	schema_unref(s);
}

static struct stub_process stub;

static void stub_rules(const char *json)
{
	json_decref(stub_process_call(&stub, "/_stub/reset", "{}"));
	json_decref(stub_process_call(&stub, "/_stub/rules", json));
}

static size_t stub_chat_count(void)
{
	json_t *r = stub_process_call(&stub, "/_stub/requests", NULL);
	size_t n = 0, i;
	json_t *q;
	json_array_foreach(json_object_get(r, "requests"), i, q)
		n += strcmp(json_string_value(json_object_get(q, "path")), "/v1/chat/completions") == 0;
	json_decref(r);
	return n;
}

static void test_routes(void)
{
	if (stub_process_start(&stub, NULL) < 0) {
		tap_skip("model_routes", "the model stub did not start");
		return;
	}
	struct model_endpoint primary = {.stage = "generate", .base_url = stub.base_url, .model = "big", .timeout_ms = 2000};
	struct model_endpoint fallback = {.stage = "generate", .base_url = stub.base_url, .model = "small", .timeout_ms = 2000};
	struct model_breaker bp, bf;
	model_breaker_init(&bp, "generate", "primary", 2, 300);
	model_breaker_init(&bf, "generate", "fallback", 2, 300);
	struct model_route route = {&primary, &bp, NULL, NULL};
	struct model_message msg = {"user", "hello"};
	struct model_route_attempt at[MODEL_ROUTE_MAX_ATTEMPTS];
	size_t n_at;
	char *text = NULL;
	struct t2s_error err = {0};

	stub_rules("{\"rules\": [{\"match\": {\"model\": \"big\"}, \"respond\": {\"status\": 500}}], "
		   "\"default_content\": \"from small\"}");
	TAP_INT_EQ(model_route_chat(&route, &msg, 1, 0, &text, at, &n_at, &err), -T2S_ERR_UPSTREAM, "failure_1_is_upstream");
	TAP_INT_EQ(model_breaker_state(&bp), BREAKER_CLOSED, "one_failure_keeps_it_closed");
	TAP_EXPECT_FAIL(model_route_chat(&route, &msg, 1, 0, &text, at, &n_at, &err));
	TAP_INT_EQ(model_breaker_state(&bp), BREAKER_OPEN, "two_failures_open_it");
	size_t before = stub_chat_count();
	TAP_INT_EQ(model_route_chat(&route, &msg, 1, 0, &text, at, &n_at, &err), -T2S_ERR_UNAVAILABLE,
		   "open_breaker_refuses");
	TAP_STR_EQ(at[0].outcome, "breaker_open", "refusal_outcome_is_breaker_open");
	TAP_INT_EQ((long)stub_chat_count(), (long)before, "open_breaker_sends_nothing");

	route.fallback = &fallback;
	route.fallback_breaker = &bf;
	text = NULL;
	TAP_INT_EQ(model_route_chat(&route, &msg, 1, 0, &text, at, &n_at, &err), 0, "fallback_answers_while_primary_open");
	TAP_OK(n_at == 2 && strcmp(at[1].endpoint, "fallback") == 0 && text && strcmp(text, "from small") == 0,
	       "fallback_attempt_recorded_with_its_answer");
	free(text);
	text = NULL;

	usleep(350 * 1000);
	TAP_INT_EQ(model_breaker_state(&bp), BREAKER_HALF_OPEN, "cooldown_makes_it_half_open");
	stub_rules("{\"rules\": [], \"default_content\": \"ok\"}");
	route.fallback = NULL;
	TAP_INT_EQ(model_route_chat(&route, &msg, 1, 0, &text, at, &n_at, &err), 0, "trial_call_passes");
	TAP_INT_EQ(model_breaker_state(&bp), BREAKER_CLOSED, "successful_trial_closes_it");
	free(text);
	text = NULL;

	stub_rules("{\"rules\": [{\"respond\": {\"status\": 503}}]}");
	TAP_EXPECT_FAIL(model_route_chat(&route, &msg, 1, 0, &text, at, &n_at, &err));
	TAP_EXPECT_FAIL(model_route_chat(&route, &msg, 1, 0, &text, at, &n_at, &err));
	usleep(350 * 1000);
	TAP_EXPECT_FAIL(model_route_chat(&route, &msg, 1, 0, &text, at, &n_at, &err));
	TAP_INT_EQ(model_breaker_state(&bp), BREAKER_OPEN, "failed_trial_opens_it_again");

	stub_rules("{\"rules\": [], \"default_content\": \"ok\"}");
	struct model_breaker fresh;
	model_breaker_init(&fresh, "generate", "primary", 2, 300);
	route.primary_breaker = &fresh;
	TAP_INT_EQ(model_route_chat(&route, &msg, 1, clock_now_ms() - 1, &text, at, &n_at, &err),
		   -T2S_ERR_UPSTREAM_TIMEOUT, "a_spent_deadline_fails_before_calling");
	model_breaker_release(&fresh);
	model_breaker_release(&bp);
	model_breaker_release(&bf);
	stub_process_stop(&stub);
}

/* Stored examples reused (reuse.h): similarity of masked questions, literals mapped by column, refusals. */
/* The SQL reuse_example makes of example (eq, esql) for question q without string values; NULL when refused.
   The caller frees it. */
static char *reused(struct schema *s, const char *q, const char *eq, const char *esql, double *ret_similarity)
{
	struct reuse_result r;
	if (reuse_example(s, NULL, q, NULL, 0, eq, esql, &r) < 0)
		return NULL;
	char *sql = r.sql ? strdup(r.sql) : NULL;
	if (ret_similarity)
		*ret_similarity = r.similarity;
	reuse_result_release(&r);
	return sql;
}

static void expect_reused(struct schema *s, const char *q, const char *eq, const char *esql, const char *want,
			  const char *name)
{
	expect_text(reused(s, q, eq, esql, NULL), want, name);
}

/* Issue 30: a number's sign, words, thousands commas and decimals are read, never dropped. */
static void test_reuse_numbers(struct schema *s)
{
	const char *eq = "Which rows are older than 5?";
	const char *esql = "SELECT name FROM t1 WHERE alpha > 5";
	expect_reused(s, "Which rows are older than -5?", eq, esql, "SELECT name FROM t1 WHERE alpha > (-5)",
		      "reuse_keeps_a_minus_sign");
	expect_reused(s, "Which rows are older than minus 5?", eq, esql, "SELECT name FROM t1 WHERE alpha > (-5)",
		      "reuse_reads_minus_as_a_sign");
	expect_reused(s, "Which rows are older than negative 5?", eq, esql, "SELECT name FROM t1 WHERE alpha > (-5)",
		      "reuse_reads_negative_as_a_sign");
	expect_reused(s, "Which rows are older than negative five?", eq, esql,
		      "SELECT name FROM t1 WHERE alpha > (-5)", "reuse_reads_negative_five");
	expect_reused(s, "Which rows are older than twenty-one?", eq, esql, "SELECT name FROM t1 WHERE alpha > 21",
		      "reuse_reads_a_number_in_words_where_the_example_has_digits");
	expect_reused(s, "Which rows are older than 80,000?", eq, esql, "SELECT name FROM t1 WHERE alpha > 80000",
		      "reuse_drops_thousands_commas_in_the_sql");
	expect_reused(s, "Which rows are older than 2.75?", eq, esql, "SELECT name FROM t1 WHERE alpha > 2.75",
		      "reuse_keeps_decimals");
	expect_reused(s, "Which rows are older than 7?", "Which rows are older than -5?",
		      "SELECT name FROM t1 WHERE alpha > -5", "SELECT name FROM t1 WHERE alpha > 7",
		      "reuse_replaces_a_signed_literal_whole");
	expect_reused(s, "Which rows are older than 5?", "Which rows are older than -5?",
		      "SELECT name FROM t1 WHERE alpha > -5", "SELECT name FROM t1 WHERE alpha > 5",
		      "reuse_drops_the_examples_sign_for_a_positive_number");
	expect_reused(s, "Which rows are older than 5 minus 2?", "Which rows are older than 5?",
		      "SELECT name FROM t1 WHERE alpha > 5", NULL, "reuse_refuses_arithmetic_it_cannot_pair");
	/* a number that is no slot must be equal in value, sign included */
	const char *eq2 = "Which rows have alpha above 5 among the top 3?";
	const char *esql2 = "SELECT name FROM t1 WHERE alpha > 5 ORDER BY alpha DESC LIMIT 3";
	expect_reused(s, "Which rows have alpha above 9 among the top 3?", eq2, esql2,
		      "SELECT name FROM t1 WHERE alpha > 9 ORDER BY alpha DESC LIMIT 3", "reuse_pairs_numbers_in_order");
	double sim = 1;
	char *got = reused(s, "Which rows are older than -5?", eq, esql, &sim);
	TAP_OK(!got || (strstr(got, "-5") && !strstr(got, "> 5")), "reuse_never_answers_minus_5_as_5");
	free(got);
	double v = 0;
	TAP_OK(number_words_parse("three hundred and five rows", &v) == 22 && v == 305, "number_words_hundreds_and");
	TAP_OK(number_words_parse("two thousand five", &v) == 17 && v == 2005, "number_words_thousands");
	TAP_OK(number_words_parse("one", &v) == 0 && number_words_parse("ones", &v) == 0 &&
		       number_words_parse("fivefold", &v) == 0,
	       "number_words_one_alone_and_longer_words_are_no_numbers");
	TAP_OK(number_words_parse("five six", &v) == 4 && v == 5, "number_words_two_numbers_stay_two");
	TAP_OK(number_words_parse("one hundred", &v) == 11 && v == 100, "number_words_one_hundred");
}

static void test_reuse(void)
{
	TAP_OK(reuse_similarity(NULL, "How many rows are there?", "how many rows are there", false) == 1.0,
	       "reuse_similarity_ignores_case_and_punctuation");
	TAP_OK(reuse_similarity(NULL, "names of rows with qvalq", "names of rows without qvalq", false) < 0.9,
	       "reuse_similarity_drops_for_a_changed_word");
	TAP_OK(reuse_similarity(NULL, "rows older than 30", "rows older than 40", false) == 0,
	       "reuse_similarity_is_zero_for_a_number_left_in_one_side");
	double loose = reuse_similarity(NULL, "male members of qvalq with a long name", "female members of qvalq with a long name", false);
	TAP_OK(reuse_similarity(NULL, "male members of qvalq with a long name", "female members of qvalq with a long name",
				true) < loose - 0.1,
	       "reuse_similarity_when_strict_weighs_every_unmatched_content_word_more");
	TAP_OK(reuse_similarity(NULL, "rows with the highest alpha in a long list of words", "rows with the lowest alpha in a long list of words",
				false) < 0.8,
	       "reuse_similarity_weighs_an_unmatched_turning_word_more");
	struct schema *s = make_schema();
	const char *eq = "Show the beta of rows named Ann older than 30.";
	const char *esql = "SELECT beta FROM t1 WHERE name = 'Ann' AND alpha > 30 LIMIT 1";
	struct reuse_value v[] = {{"Bob", "Bob", 0, 1}, {"red", "Red", 0, 5}};
	struct reuse_result r;
	TAP_OK(reuse_example(s, NULL, "Show the beta of rows named Bob older than 45.", v, 1, eq, esql, &r) == 0 && r.sql &&
		       strcmp(r.sql, "SELECT beta FROM t1 WHERE name = 'Bob' AND alpha > 45 LIMIT 1") == 0 &&
		       r.similarity == 1.0 && json_array_size(r.substitutions) == 2,
	       "reuse_substitutes_the_value_of_the_same_column_and_the_number");
	reuse_result_release(&r);
	TAP_OK(reuse_example(s, NULL, "Show the beta of rows named Ann older than 30.", NULL, 0, eq, esql, &r) == 0 &&
		       r.sql && strstr(r.sql, "'Ann'") && strstr(r.sql, "> 30"),
	       "reuse_keeps_a_value_the_question_repeats");
	reuse_result_release(&r);
	TAP_OK(reuse_example(s, NULL, "Show the beta of rows named Bob older than 45.", v + 1, 1, eq, esql, &r) == 0 &&
		       !r.sql && *r.reason,
	       "reuse_refuses_a_literal_without_a_value_of_its_column");
	reuse_result_release(&r);
	struct reuse_value two[] = {{"Bob", "Bob", 0, 1}, {"Cy", "Cy", 0, 1}};
	TAP_OK(reuse_example(s, NULL, "Show the beta of rows named Bob or Cy older than 45.", two, 2, eq, esql, &r) == 0 &&
		       !r.sql,
	       "reuse_refuses_two_values_for_one_literal");
	reuse_result_release(&r);
	TAP_OK(reuse_example(s, NULL, "Show the beta of rows named Bob older than 45 and 50.", v, 1, eq, esql, &r) == 0 &&
		       !r.sql,
	       "reuse_refuses_unpaired_numbers");
	reuse_result_release(&r);
	TAP_OK(reuse_example(s, NULL, "Show the beta of red rows named Bob older than 45.", v, 2, eq,
			     "SELECT beta FROM t1 WHERE name = 'Ann' AND delta = 'Blue' AND alpha > 30", &r) == 0 &&
		       !r.sql,
	       "reuse_refuses_when_the_question_changes_a_value_the_example_fixes");
	reuse_result_release(&r);
	test_reuse_numbers(s);
	schema_unref(s);
}

static void expect_distinct(const char *sql, const char *want, const char *name)
{
	char *got = NULL;
	TAP_OK(repair_distinct(sql, &got) == 0, name);
	expect_text(got, want, name);
}

/* repair.h: the repair rows_not_repeated names. */
static void test_repair(void)
{
	expect_distinct("SELECT s.name FROM singer s JOIN singer_in_concert sc ON sc.singer_id = s.singer_id",
			"SELECT DISTINCT s.name FROM singer s JOIN singer_in_concert sc ON sc.singer_id = s.singer_id",
			"distinct_follows_the_leading_select");
	expect_distinct("  select\tname FROM t", "  select DISTINCT\tname FROM t", "leading_space_and_case_are_kept");
	expect_distinct("SELECT DISTINCT name FROM t", NULL, "a_distinct_select_is_left_alone");
	expect_distinct("select all name FROM t", NULL, "a_select_all_is_left_alone");
	expect_distinct("SELECT distinctive FROM t", "SELECT DISTINCT distinctive FROM t",
			"a_column_starting_with_distinct_is_a_column");
	expect_distinct("WITH x AS (SELECT 1) SELECT * FROM x", NULL, "a_statement_not_opening_with_select_is_left_alone");
	expect_distinct("SELECTname FROM t", NULL, "select_must_be_a_whole_word");
	expect_distinct(NULL, NULL, "no_statement_no_repair");
}

static void expect_stored(const char *sql, const char *literal, const char *spelling, const char *want,
			  const char *name)
{
	char *got = NULL;
	TAP_OK(repair_stored_value(sql, literal, spelling, &got) == 0, name);
	expect_text(got, want, name);
}

/* repair.h: the repair an unstored literal with one stored spelling names. */
static void test_repair_stored_value(void)
{
	expect_stored("SELECT name FROM singer WHERE country = 'united states'", "united states", "United States",
		      "SELECT name FROM singer WHERE country = 'United States'", "the_literal_becomes_the_stored_spelling");
	expect_stored("SELECT a FROM t WHERE s = \"North Carolina\" EXCEPT SELECT a FROM u WHERE s = 'North Carolina'",
		      "North Carolina", "NorthCarolina",
		      "SELECT a FROM t WHERE s = 'NorthCarolina' EXCEPT SELECT a FROM u WHERE s = 'NorthCarolina'",
		      "every_quoted_occurrence_single_or_double_quoted_is_replaced");
	expect_stored("SELECT a FROM t WHERE s = 'o''brien'", "o'brien", "O'Brien", "SELECT a FROM t WHERE s = 'O''Brien'",
		      "doubled_quotes_are_read_and_written");
	expect_stored("SELECT 'North Carolina x' FROM t WHERE s = 'North'", "North Carolina", "NorthCarolina", NULL,
		      "a_longer_or_shorter_string_is_left_alone");
	expect_stored("SELECT a FROM t WHERE s = 'dog", "dog", "Dog", NULL, "an_unclosed_string_is_left_alone");
	expect_stored(NULL, "dog", "Dog", NULL, "no_statement_no_stored_value_repair");
}

/* generate_job.h: statements compared with case and white space folded outside quotes only. */
static void test_same_sql(void)
{
	TAP_OK(generate_same_sql("SELECT name  FROM t", "select name from t"), "case_and_space_fold_outside_quotes");
	TAP_OK(!generate_same_sql("SELECT a FROM t WHERE s = 'dog'", "SELECT a FROM t WHERE s = 'Dog'"),
	       "a_literal_in_another_case_is_another_statement");
	TAP_OK(!generate_same_sql("SELECT a FROM t WHERE s = 'a b'", "SELECT a FROM t WHERE s = 'ab'"),
	       "space_inside_a_literal_counts");
	TAP_OK(generate_same_sql("SELECT a FROM t WHERE s = 'o''k'", "select a from t where s='o''k'"),
	       "doubled_quotes_compare_as_text");
	TAP_OK(generate_same_sql(NULL, NULL) && !generate_same_sql("SELECT 1", NULL), "null_equals_null_only");
}

int main(void)
{
	test_same_sql();
	test_repair();
	test_repair_stored_value();
	test_reuse();
	test_reply();
	test_unanswerable_sentinel();
	test_prompt();
	test_routes();
	return tap_done();
}
