/*
 * test_describe.c - the describe stage: metadata sentences, model answers
 * through the protocol stub (good, partial, malformed, failing), overrides,
 * the cache and bounded parallelism.
 *
 * The schema is built by hand (Spider's concert_singer, with samples), so the
 * expected sentences are known exactly.  The model is
 * tests/stub/model_stub.py (path from $T2S_STUB, else
 * $T2S_SOURCE_ROOT/tests/stub/model_stub.py, else relative to the working
 * directory), started with --port 0 and scripted through POST /_stub/rules;
 * its GET /_stub/requests shows what the stage sent.  Prints TAP.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "common/clock.h"
#include "common/metrics.h"
#include "common/workers.h"
#include "pipeline/describe/describe.h"

#include <curl/curl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/stub_process.h"
#include "tests/unit/tap.h"

static pid_t stub_pid = -1;
static int stub_port;
static char base_url[64];

/* ---- the stub process (as in test_model_client.c) ----------------------- */

static struct stub_process stub = {.pid = -1};

/* Start the stub (tests/unit/stub_process.c); 0 once its port is known. */
static int stub_start(void)
{
	int rc = stub_process_start(&stub, NULL);
	stub_pid = stub.pid;
	stub_port = stub.port;
	snprintf(base_url, sizeof(base_url), "%s", stub.base_url);
	return rc;
}

static void stub_stop(void)
{
	stub_process_stop(&stub);
	stub_pid = -1;
}

/* GET (body NULL) or POST the stub's control route path; the answer as JSON (new ref). */
static json_t *stub_call(const char *path, const char *body)
{
	return stub_process_call(&stub, path, body);
}

/* Replace the stub's rules with rules (a JSON array, stolen) and forget past requests. */
static void set_rules(json_t *rules)
{
	json_t *fixture = json_pack("{s:o}", "rules", rules);
	char *text = json_dumps(fixture, JSON_COMPACT);

	json_decref(stub_call("/_stub/reset", "{}"));
	json_decref(stub_call("/_stub/rules", text));
	free(text);
	json_decref(fixture);
}

/* A chat rule answering content when the prompt contains needle (NULL: always). */
static json_t *rule(const char *needle, const char *content)
{
	json_t *r = json_pack("{s:{s:s}, s:{s:s}}", "match", "path", "/v1/chat/completions", "respond", "content",
			      content);
	if (needle)
		json_object_set_new(json_object_get(r, "match"), "contains", json_string(needle));
	return r;
}

static json_t *requests(void)
{
	json_t *all = stub_call("/_stub/requests", NULL), *reqs = json_object_get(all, "requests");

	json_incref(reqs);
	json_decref(all);
	return reqs;
}

static size_t request_count(void)
{
	json_t *r = requests();
	size_t n = json_array_size(r);

	json_decref(r);
	return n;
}

/* The user message of request i (malloc'd copy), or NULL. */
static char *request_prompt(size_t i)
{
	json_t *r = requests();
	json_t *msgs = json_object_get(json_object_get(json_array_get(r, i), "body"), "messages");
	const char *p = json_string_value(json_object_get(json_array_get(msgs, 1), "content"));
	char *copy = p ? strdup(p) : NULL;

	json_decref(r);
	return copy;
}

/* ---- a hand-built schema ------------------------------------------------- */

struct col_spec {
	const char *name, *type;
	bool not_null;
	const char *comment;
	const char *samples[6];
};

struct fk_spec {
	const char *columns[2], *ref_table, *ref_columns[2];
};

struct table_spec {
	const char *name;
	long long rows;
	const char *comment;
	struct col_spec cols[8];
	const char *pk[3];
	struct fk_spec fks[3];
};

static size_t count_strings(const char *const *v, size_t max)
{
	size_t n = 0;

	while (n < max && v[n])
		n++;
	return n;
}

static struct schema *build_schema(const char *db, const struct table_spec *specs, size_t n)
{
	struct schema *s = schema_new(db, DB_ENGINE_SQLITE);
	struct arena *a = &s->arena;

	s->tables = arena_calloc(a, n, sizeof(*s->tables));
	s->n_tables = n;
	for (size_t i = 0; i < n; i++) {
		const struct table_spec *ts = &specs[i];
		struct schema_table *t = &s->tables[i];
		size_t nc = 0, nf = 0;
		while (nc < 8 && ts->cols[nc].name)
			nc++;
		while (nf < 3 && ts->fks[nf].ref_table)
			nf++;
		*t = (struct schema_table){.schema = "main", .name = ts->name, .kind = "table", .comment = ts->comment,
					   .row_count = ts->rows, .n_columns = nc, .n_foreign_keys = nf};
		t->columns = arena_calloc(a, nc ? nc : 1, sizeof(*t->columns));
		t->n_primary_key = count_strings(ts->pk, 3);
		t->primary_key = (const char **)ts->pk;
		for (size_t c = 0; c < nc; c++) {
			const struct col_spec *cs = &ts->cols[c];
			t->columns[c] = (struct schema_column){
				.name = cs->name, .type = cs->type, .nullable = !cs->not_null,
				.primary_key = t->n_primary_key == 1 && strcmp(ts->pk[0], cs->name) == 0,
				.comment = cs->comment, .samples = (const char **)cs->samples,
				.n_samples = count_strings(cs->samples, 6)};
		}
		t->foreign_keys = arena_calloc(a, nf ? nf : 1, sizeof(*t->foreign_keys));
		for (size_t f = 0; f < nf; f++)
			t->foreign_keys[f] = (struct schema_foreign_key){
				.columns = (const char **)ts->fks[f].columns, .n_columns = count_strings(ts->fks[f].columns, 2),
				.ref_table = ts->fks[f].ref_table, .ref_columns = (const char **)ts->fks[f].ref_columns};
	}
	if (schema_finish(s) < 0)
		abort();
	return s;
}

/* Spider's concert_singer, trimmed, with samples. */
static const struct table_spec concert_singer[] = {
	{.name = "stadium", .rows = 9, .pk = {"Stadium_ID"},
	 .cols = {{"Stadium_ID", "INT", true, NULL, {"1", "2", "10"}},
		  {"Location", "TEXT", false, NULL, {"Raith Rovers", "Ayr United"}},
		  {"Capacity", "INT", false, "Seats, as built", {"52500", "11998", "4125"}},
		  {"Opened", "TEXT", false, NULL, {"2004-08-01", "1999-12-31", "2012-05-20"}}}},
	{.name = "singer", .rows = 6, .pk = {"Singer_ID"},
	 .cols = {{"Singer_ID", "INT", true, NULL, {"1", "2", "3"}},
		  {"Name", "TEXT", false, NULL, {"Joe Sharp", "Timbaland"}},
		  {"Country", "TEXT", false, NULL, {"France", "Netherlands", "United States"}},
		  {"Age", "INT", false, NULL, {"52", "32", "41"}},
		  {"Is_male", "bool", false, NULL, {"F", "T", " F\n"}}}},
	{.name = "concert", .rows = 6, .pk = {"concert_ID"},
	 .cols = {{"concert_ID", "INT", true, NULL, {"1", "2"}},
		  {"concert_Name", "TEXT", false, NULL, {"Auditions", "Super bootcamp"}},
		  {"Stadium_ID", "TEXT", false, NULL, {"1", "2", "7"}},
		  {"Year", "TEXT", false, NULL, {"2014", "2015"}}},
	 .fks = {{{"Stadium_ID"}, "stadium", {"Stadium_ID"}}}},
	{.name = "singer_in_concert", .rows = 10, .pk = {"concert_ID", "Singer_ID"},
	 .cols = {{"concert_ID", "INT", true, NULL, {"1", "2"}}, {"Singer_ID", "TEXT", true, NULL, {"2", "3"}}},
	 .fks = {{{"concert_ID"}, "concert", {"concert_ID"}}, {{"Singer_ID"}, "singer", {"Singer_ID"}}}},
};
enum { T_STADIUM, T_SINGER, T_CONCERT, T_SIC };

static struct schema *cs_schema(void)
{
	return build_schema("concert_singer", concert_singer, sizeof(concert_singer) / sizeof(concert_singer[0]));
}

static int col_index(const struct schema *s, int t, const char *name)
{
	for (size_t c = 0; c < s->tables[t].n_columns; c++)
		if (strcmp(s->tables[t].columns[c].name, name) == 0)
			return (int)c;
	return -2;
}

/* The item of (table, column name or NULL) in r, or NULL. */
static const struct describe_item *item(const struct describe_result *r, const struct schema *s, int t,
					const char *col)
{
	int c = col ? col_index(s, t, col) : -1;

	for (size_t i = 0; i < r->n_items; i++)
		if (r->items[i].table == t && r->items[i].column == c)
			return &r->items[i];
	return NULL;
}

static const char *text_of(const struct describe_result *r, const struct schema *s, int t, const char *col)
{
	const struct describe_item *it = item(r, s, t, col);
	return it ? it->text : "(missing)";
}

static const char *source_of(const struct describe_result *r, const struct schema *s, int t, const char *col)
{
	const struct describe_item *it = item(r, s, t, col);
	return it ? it->source : "(missing)";
}

static bool contains(const char *hay, const char *needle)
{
	bool ok = hay && strstr(hay, needle) != NULL;

	if (!ok)
		printf("#   '%s' lacks '%s'\n", hay ? hay : "(null)", needle);
	return ok;
}

static struct model_endpoint endpoint(const char *model)
{
	return (struct model_endpoint){.stage = "describe", .base_url = base_url, .model = model, .timeout_ms = 5000,
				       .connect_timeout_ms = 2000, .retries = 0, .temperature = 0, .max_tokens = 0};
}

/* ---- metadata ------------------------------------------------------------ */

static void test_metadata_without_model(void)
{
	struct schema *s = cs_schema();
	struct describe_result r = {0};
	struct t2s_error err = {0};
	bool all_metadata = true;

	set_rules(json_pack("[o]", rule(NULL, "{\"columns\": {}}")));
	TAP_INT_EQ(describe_run(s, NULL, 0, NULL, &r, &err), 0, "metadata_run_succeeds_without_options");
	TAP_INT_EQ(r.n_items, 4 + 5 + 4 + 2 + 4, "metadata_run_describes_every_table_and_column");
	TAP_OK(r.n_items && r.items[0].table == 0 && r.items[0].column == -1 && r.items[1].column == 0,
	       "items_come_table_first_then_columns_in_order");
	for (size_t i = 0; i < r.n_items; i++)
		all_metadata = all_metadata && strcmp(r.items[i].source, "metadata") == 0 && r.items[i].text[0];
	TAP_OK(all_metadata, "metadata_items_are_marked_metadata_and_non_empty");
	TAP_INT_EQ(r.model_calls, 0, "metadata_run_makes_no_model_call");
	TAP_INT_EQ(request_count(), 0, "metadata_run_sends_nothing_to_the_model_server");

	TAP_OK(contains(text_of(&r, s, T_SINGER, "Singer_ID"), "Primary key of singer."),
	       "metadata_names_primary_key_role");
	TAP_OK(contains(text_of(&r, s, T_CONCERT, "Stadium_ID"), "Foreign key to stadium.Stadium_ID."),
	       "metadata_names_foreign_key_target");
	TAP_OK(contains(text_of(&r, s, T_STADIUM, "Stadium_ID"), "Referenced by concert.Stadium_ID."),
	       "metadata_names_referencing_columns");
	TAP_OK(contains(text_of(&r, s, T_SIC, "Singer_ID"),
			"Part of the primary key of singer_in_concert (concert_ID, Singer_ID)."),
	       "metadata_names_composite_primary_key");
	TAP_OK(contains(text_of(&r, s, T_SINGER, "Country"), "Values such as France, Netherlands, United States."),
	       "metadata_lists_sample_values");
	TAP_OK(contains(text_of(&r, s, T_SINGER, "Age"), "(sampled values range from 32 to 52)"),
	       "metadata_gives_numeric_range_of_samples");
	TAP_OK(contains(text_of(&r, s, T_STADIUM, "Stadium_ID"), "(sampled values range from 1 to 10)"),
	       "metadata_numeric_range_compares_numbers_not_text");
	TAP_OK(contains(text_of(&r, s, T_STADIUM, "Opened"), "(sampled dates range from 1999-12-31 to 2012-05-20)"),
	       "metadata_gives_date_range_of_samples");
	TAP_STR_EQ(text_of(&r, s, T_SINGER, "Is_male"), "Type bool. Values such as F, T.",
		   "metadata_shows_samples_equal_after_cleaning_once_and_no_range_for_text");
	TAP_OK(contains(text_of(&r, s, T_STADIUM, "Capacity"), "Seats, as built."), "metadata_starts_with_comment");
	TAP_OK(contains(text_of(&r, s, T_SINGER, "Singer_ID"), "Type INT, NOT NULL."),
	       "metadata_gives_type_and_nullability");
	TAP_OK(contains(text_of(&r, s, T_SINGER, NULL), "Table with 6 rows and 5 columns."),
	       "metadata_table_gives_row_and_column_counts");
	TAP_OK(contains(text_of(&r, s, T_SINGER, NULL), "Referenced by singer_in_concert."),
	       "metadata_table_names_referencing_tables");
	TAP_OK(contains(text_of(&r, s, T_SIC, NULL), "References concert (concert_ID) and singer (Singer_ID)."),
	       "metadata_table_names_referenced_tables");
	TAP_STR_EQ(text_of(&r, s, T_SINGER, "Name"), "Type TEXT. Values such as Joe Sharp, Timbaland.",
		   "metadata_states_only_facts_not_meaning_guessed_from_names");
	describe_result_release(&r);
	describe_result_release(&r); /* zeroed: a second release is harmless */
	schema_unref(s);
}

static void test_argument_checks(void)
{
	struct schema *s = cs_schema();
	struct describe_result r = {.n_items = 12345};
	struct t2s_error err = {0};
	int bad[] = {1, 99}, dup[] = {T_SINGER, T_SINGER, T_STADIUM};

	TAP_INT_EQ(describe_run(s, bad, 2, NULL, &r, &err), -T2S_ERR_INVALID, "table_index_out_of_range_is_invalid");
	TAP_INT_EQ(r.n_items, 12345, "failed_run_leaves_result_untouched");
	TAP_OK(contains(err.message, "99"), "out_of_range_error_names_the_index");
	r = (struct describe_result){0};
	TAP_INT_EQ(describe_run(s, dup, 3, NULL, &r, &err), 0, "repeated_table_indexes_are_accepted");
	TAP_INT_EQ(r.n_items, 6 + 5, "repeated_table_is_described_once");
	TAP_OK(r.n_items == 11 && r.items[0].table == T_SINGER && r.items[6].table == T_STADIUM,
	       "tables_come_in_the_order_asked");
	describe_result_release(&r);
	TAP_OK(describe_metadata_text(s, T_SINGER, 42) == NULL, "metadata_text_rejects_unknown_column");
	schema_unref(s);
}

/* ---- model answers ------------------------------------------------------- */

static const char singer_answer[] =
	"```json\n{\"table\": \"One row per singer who performs in concerts.\", \"columns\": {"
	"\"Singer_ID\": \"Identifier of the singer.\", \"Name\": \"Full name of the singer.\", "
	"\"country\": \"Country  the singer\\n comes from.\", \"Is_male\": \"Whether the singer is male (T or F).\", "
	"\"Nickname\": \"Stage name of the singer.\"}}\n```";

static void test_model_answers(void)
{
	struct schema *s = cs_schema();
	struct model_endpoint ep = endpoint("describe-model");
	struct describe_options o = {.model = &ep};
	struct describe_result r = {0};
	struct t2s_error err = {0};
	int only[] = {T_SINGER};
	char *prompt;

	set_rules(json_pack("[o]", rule("Table: singer (", singer_answer)));
	TAP_INT_EQ(describe_run(s, only, 1, &o, &r, &err), 0, "model_run_succeeds");
	TAP_INT_EQ(r.model_calls, 1, "model_run_makes_one_call_per_table");
	TAP_INT_EQ(r.model_errors, 0, "good_answer_is_no_model_error");
	TAP_INT_EQ(r.n_items, 6, "model_run_describes_table_and_its_columns");
	TAP_STR_EQ(text_of(&r, s, T_SINGER, NULL), "One row per singer who performs in concerts.",
		   "model_table_sentence_is_used");
	TAP_STR_EQ(source_of(&r, s, T_SINGER, NULL), "model", "model_table_sentence_is_marked_model");
	TAP_STR_EQ(text_of(&r, s, T_SINGER, "Name"), "Full name of the singer.", "model_column_sentence_is_used");
	TAP_STR_EQ(source_of(&r, s, T_SINGER, "Name"), "model", "model_column_sentence_is_marked_model");
	TAP_STR_EQ(text_of(&r, s, T_SINGER, "Country"), "Country the singer comes from.",
		   "model_column_matched_case_insensitively_and_whitespace_collapsed");
	TAP_STR_EQ(source_of(&r, s, T_SINGER, "Age"), "metadata", "column_missing_from_answer_falls_back_to_metadata");
	TAP_OK(contains(text_of(&r, s, T_SINGER, "Age"), "range from 32 to 52"),
	       "column_missing_from_answer_gets_metadata_text");
	TAP_INT_EQ(r.unknown_columns, 1, "unknown_column_in_answer_is_counted");
	bool dropped = r.n_items == 6;
	for (size_t i = 0; i < r.n_items; i++)
		dropped = dropped && !strstr(r.items[i].text, "Stage name");
	TAP_OK(dropped, "unknown_column_in_answer_is_dropped");
	TAP_OK(r.prompt_tokens > 0 && r.completion_tokens > 0, "model_run_reports_tokens");

	prompt = request_prompt(0);
	TAP_OK(contains(prompt, "- Country TEXT; sample values: France | Netherlands | United States"),
	       "prompt_shows_columns_types_and_samples");
	TAP_OK(contains(prompt, "- Singer_ID INT, primary key, NOT NULL"), "prompt_shows_key_roles");
	TAP_OK(contains(prompt, "- singer_in_concert.Singer_ID = singer.Singer_ID"), "prompt_shows_foreign_keys");
	TAP_OK(contains(prompt, "- singer_in_concert(concert_ID, Singer_ID)"), "prompt_shows_neighbouring_tables");
	TAP_OK(!strstr(prompt, "- stadium("), "prompt_omits_tables_not_joined_by_a_foreign_key");
	TAP_OK(contains(prompt, "\"columns\""), "prompt_asks_for_the_json_form");
	free(prompt);
	describe_result_release(&r);
	schema_unref(s);
}

static void test_malformed_answers(void)
{
	struct schema *s = cs_schema();
	struct model_endpoint ep = endpoint("describe-model");
	struct describe_options o = {.model = &ep};
	struct describe_result r = {0};
	struct t2s_error err = {0};
	int two[] = {T_CONCERT, T_STADIUM};
	bool concert_metadata = true;

	set_rules(json_pack("[o, o]",
			    rule("Table: concert (", "Sure! Here it is: {\"table\": \"Concerts\", \"columns\": {\"Year\": }}"),
			    rule("Table: stadium (", "{\"table\": \"Stadiums that host concerts.\"}")));
	TAP_INT_EQ(describe_run(s, two, 2, &o, &r, &err), 0, "malformed_answers_do_not_fail_the_run");
	TAP_INT_EQ(r.model_calls, 2, "malformed_answers_still_count_as_calls");
	TAP_INT_EQ(r.model_errors, 2, "malformed_answers_count_as_model_errors");
	for (size_t i = 0; i < r.n_items; i++)
		if (r.items[i].table == T_CONCERT)
			concert_metadata = concert_metadata && strcmp(r.items[i].source, "metadata") == 0;
	TAP_OK(concert_metadata, "invalid_json_answer_falls_back_to_metadata_for_whole_table");
	TAP_STR_EQ(source_of(&r, s, T_STADIUM, NULL), "metadata", "answer_without_columns_object_falls_back_too");
	TAP_INT_EQ(r.n_errors, 2, "each_malformed_answer_records_an_error");
	TAP_OK(r.n_errors == 2 && contains(r.errors[0], "concert: ") && contains(r.errors[0], "not valid JSON"),
	       "error_names_table_and_problem");
	TAP_OK(r.n_errors == 2 && contains(r.errors[1], "\"columns\""), "error_says_columns_object_missing");
	describe_result_release(&r);
	schema_unref(s);
}

static void test_model_failure(void)
{
	struct schema *s = cs_schema();
	struct model_endpoint ep = endpoint("describe-model");
	struct describe_options o = {.model = &ep};
	struct describe_result r = {0};
	struct t2s_error err = {0};
	int only[] = {T_SINGER};

	set_rules(json_pack("[{s:{s:i}}]", "respond", "status", 500));
	ep.retries = 1;
	TAP_INT_EQ(describe_run(s, only, 1, &o, &r, &err), 0, "server_errors_do_not_fail_the_run");
	TAP_INT_EQ(request_count(), 2, "server_errors_are_retried_by_the_client");
	TAP_INT_EQ(r.model_errors, 1, "server_error_counts_as_model_error");
	TAP_STR_EQ(source_of(&r, s, T_SINGER, "Country"), "metadata", "server_error_falls_back_to_metadata");
	TAP_OK(contains(text_of(&r, s, T_SINGER, "Country"), "France"), "fallback_text_is_the_metadata_sentence");
	TAP_OK(r.n_errors == 1 && contains(r.errors[0], "singer: ") && contains(r.errors[0], "500"),
	       "server_error_is_recorded_with_status");
	describe_result_release(&r);
	schema_unref(s);
}

/* ---- overrides ----------------------------------------------------------- */

static void test_overrides(void)
{
	struct schema *s = cs_schema();
	struct model_endpoint ep = endpoint("describe-model");
	const struct describe_override ov[] = {
		{"singer", NULL, "People who sing."},
		{"SINGER", "country", "Nationality of the singer."},
		{"singer", "Name", "first text"},
		{"singer", "Name", "Stage name, as billed."},
		{"nosuch", NULL, "ignored"},
		{"singer", "nosuch", "ignored"},
		{"singer", "Age", ""},
	};
	const struct describe_override full[] = {
		{"singer_in_concert", NULL, "Who sang at which concert."},
		{"singer_in_concert", "concert_ID", "The concert."},
		{"singer_in_concert", "Singer_ID", "The singer."},
	};
	struct describe_options o = {.overrides = ov, .n_overrides = sizeof(ov) / sizeof(ov[0])};
	struct describe_result r = {0};
	struct t2s_error err = {0};
	int only[] = {T_SINGER}, sic[] = {T_SIC};

	TAP_INT_EQ(describe_run(s, only, 1, &o, &r, &err), 0, "run_with_overrides_succeeds");
	TAP_STR_EQ(text_of(&r, s, T_SINGER, NULL), "People who sing.", "table_override_wins_over_metadata");
	TAP_STR_EQ(source_of(&r, s, T_SINGER, NULL), "override", "override_is_marked_override");
	TAP_STR_EQ(text_of(&r, s, T_SINGER, "Country"), "Nationality of the singer.",
		   "override_names_match_case_insensitively");
	TAP_STR_EQ(text_of(&r, s, T_SINGER, "Name"), "Stage name, as billed.", "later_override_of_same_item_wins");
	TAP_STR_EQ(source_of(&r, s, T_SINGER, "Age"), "metadata", "empty_override_is_ignored");
	TAP_INT_EQ(r.n_items, 6, "overrides_for_unknown_names_are_ignored");
	describe_result_release(&r);

	set_rules(json_pack("[o]", rule("Table: singer (", singer_answer)));
	o.model = &ep;
	TAP_INT_EQ(describe_run(s, only, 1, &o, &r, &err), 0, "run_with_model_and_overrides_succeeds");
	TAP_STR_EQ(text_of(&r, s, T_SINGER, "Country"), "Nationality of the singer.", "override_wins_over_model");
	TAP_STR_EQ(source_of(&r, s, T_SINGER, "Is_male"), "model", "items_without_override_keep_model_text");
	describe_result_release(&r);

	o.overrides = full;
	o.n_overrides = 3;
	TAP_INT_EQ(describe_run(s, sic, 1, &o, &r, &err), 0, "fully_overridden_table_run_succeeds");
	TAP_INT_EQ(r.model_calls, 0, "fully_overridden_table_needs_no_model_call");
	TAP_STR_EQ(text_of(&r, s, T_SIC, "Singer_ID"), "The singer.", "fully_overridden_table_uses_overrides");
	describe_result_release(&r);
	schema_unref(s);
}

/* ---- cache --------------------------------------------------------------- */

static void test_cache(void)
{
	struct schema *s = cs_schema();
	struct model_endpoint ep = endpoint("describe-model"), other = endpoint("other-model");
	struct embed_cache_options co = {.redis_url = NULL, .key_prefix = "t2s:test:"};
	struct embed_cache *cache = NULL;
	struct describe_options o = {.model = &ep, .max_parallel = 2};
	struct describe_result r1 = {0}, r2 = {0}, r3 = {0};
	struct t2s_error err = {0};
	bool same = true;

	TAP_INT_EQ(embed_cache_new(&co, &cache, &err), 0, "in_process_cache_is_created");
	o.cache = cache;
	set_rules(json_pack("[o, o]", rule("Table: singer (", singer_answer),
			    rule(NULL, "{\"table\": \"Some table.\", \"columns\": {}}")));
	TAP_INT_EQ(describe_run(s, NULL, 0, &o, &r1, &err), 0, "first_cached_run_succeeds");
	TAP_INT_EQ(r1.model_calls, 4, "first_run_calls_the_model_per_table");
	TAP_INT_EQ(r1.cache_hits, 0, "first_run_has_no_cache_hits");

	json_decref(stub_call("/_stub/reset", "{}"));
	TAP_INT_EQ(describe_run(s, NULL, 0, &o, &r2, &err), 0, "second_cached_run_succeeds");
	TAP_INT_EQ(r2.model_calls, 0, "second_run_makes_no_model_call");
	TAP_INT_EQ(request_count(), 0, "second_run_sends_nothing_to_the_model_server");
	TAP_INT_EQ(r2.cache_hits, 4, "second_run_serves_every_table_from_cache");
	for (size_t i = 0; i < r1.n_items && r1.n_items == r2.n_items; i++)
		same = same && strcmp(r1.items[i].text, r2.items[i].text) == 0 &&
		       strcmp(r1.items[i].source, r2.items[i].source) == 0;
	TAP_OK(same && r1.n_items == r2.n_items, "cached_run_returns_the_same_items");
	TAP_STR_EQ(source_of(&r2, s, T_SINGER, "Name"), "model", "cached_model_text_stays_marked_model");
	TAP_STR_EQ(source_of(&r2, s, T_SINGER, "Age"), "metadata", "cached_partial_answer_keeps_metadata_fallback");

	o.model = &other;
	TAP_INT_EQ(describe_run(s, NULL, 0, &o, &r3, &err), 0, "run_with_other_model_succeeds");
	TAP_INT_EQ(r3.model_calls, 4, "cache_is_keyed_by_model");
	describe_result_release(&r1);
	describe_result_release(&r2);
	describe_result_release(&r3);
	embed_cache_free(cache);
	schema_unref(s);
}

static void test_failures_are_not_cached(void)
{
	struct schema *s = cs_schema();
	struct model_endpoint ep = endpoint("describe-model");
	struct embed_cache_options co = {0};
	struct embed_cache *cache = NULL;
	struct describe_options o = {.model = &ep};
	struct describe_result r = {0};
	struct t2s_error err = {0};
	int only[] = {T_CONCERT};

	TAP_SETUP(embed_cache_new(&co, &cache, &err));
	o.cache = cache;
	set_rules(json_pack("[o]", rule(NULL, "not json")));
	TAP_SETUP(describe_run(s, only, 1, &o, &r, &err));
	describe_result_release(&r);
	set_rules(json_pack("[o]", rule(NULL, "{\"columns\": {\"Year\": \"Year the concert took place.\"}}")));
	TAP_INT_EQ(describe_run(s, only, 1, &o, &r, &err), 0, "run_after_failure_succeeds");
	TAP_INT_EQ(r.model_calls, 1, "failed_answer_was_not_cached");
	TAP_STR_EQ(text_of(&r, s, T_CONCERT, "Year"), "Year the concert took place.", "retry_uses_the_new_answer");
	describe_result_release(&r);
	embed_cache_free(cache);
	schema_unref(s);
}

/* ---- parallelism ------------------------------------------------------------ */

static void test_parallel(void)
{
	struct table_spec specs[8];
	static const char *const names[8] = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"};
	struct schema *s;
	struct model_endpoint ep = endpoint("describe-model");
	struct describe_options o = {.model = &ep, .max_parallel = 4};
	struct describe_result r = {0};
	struct t2s_error err = {0};
	struct workers *pool = NULL; /* more threads than max_parallel: the bound is describe's */
	double t0, took, ts[8];
	json_t *reqs, *slow;
	size_t n;

	memset(specs, 0, sizeof(specs));
	for (int i = 0; i < 8; i++) {
		specs[i].name = names[i];
		specs[i].rows = 3;
		specs[i].cols[0] = (struct col_spec){"id", "INT", true, NULL, {"1"}};
	}
	s = build_schema("wide", specs, 8);
	slow = rule(NULL, "{\"columns\": {\"id\": \"Row identifier.\"}}");
	json_object_set_new(json_object_get(slow, "respond"), "delay_ms", json_integer(300));
	set_rules(json_pack("[o]", slow));
	TAP_INT_EQ(workers_new(6, 0, &pool, &err), 0, "worker_pool_starts");
	o.workers = pool;
	t0 = clock_now_ms();
	TAP_INT_EQ(describe_run(s, NULL, 0, &o, &r, &err), 0, "parallel_run_succeeds");
	took = clock_now_ms() - t0;
	printf("# 8 tables x 300 ms with 4 threads took %.0f ms\n", took);
	TAP_INT_EQ(r.model_calls, 8, "parallel_run_calls_once_per_table");
	TAP_OK(took < 2000, "parallel_run_finishes_well_under_the_serial_time");
	TAP_STR_EQ(text_of(&r, s, 7, "id"), "Row identifier.", "parallel_run_keeps_each_tables_answer");

	reqs = requests();
	n = json_array_size(reqs);
	for (size_t i = 0; i < n && i < 8; i++)
		ts[i] = json_number_value(json_object_get(json_array_get(reqs, i), "ts"));
	json_decref(reqs);
	/* Arrival order is request order: the fifth can only start once one of the first four answered. */
	TAP_OK(n == 8 && ts[4] - ts[0] >= 0.2, "parallel_run_never_exceeds_max_parallel_requests");
	describe_result_release(&r);
	workers_free(pool);
	schema_unref(s);
}

/* ---- the parser alone ------------------------------------------------------ */

static void test_parse_answer(void)
{
	struct schema *s = cs_schema();
	struct t2s_error err = {0};
	char *table = NULL, **cols = NULL;
	int unknown = -1;

	TAP_INT_EQ(describe_parse_answer(s, T_CONCERT,
					 "{\"table\": \"concert\", \"columns\": {\"Year\": 2014, \"YEAR\": \"Year held.\", "
					 "\"concert_Name\": \"   \"}}",
					 &table, &cols, &unknown, &err),
		   0, "parser_accepts_object");
	TAP_OK(table == NULL, "parser_ignores_table_sentence_that_only_repeats_the_name");
	TAP_STR_EQ(cols ? cols[3] : NULL, "Year held.", "parser_skips_non_string_values_and_uses_case_insensitive_match");
	TAP_OK(cols && cols[1] == NULL, "parser_treats_blank_sentence_as_missing");
	TAP_INT_EQ(unknown, 0, "parser_counts_no_unknown_for_known_names");
	free(table);
	for (size_t i = 0; cols && i < s->tables[T_CONCERT].n_columns; i++)
		free(cols[i]);
	free(cols);
	table = NULL;
	cols = NULL;
	TAP_INT_EQ(describe_parse_answer(s, T_CONCERT, "[\"Year\"]", &table, &cols, &unknown, &err), -T2S_ERR_UPSTREAM,
		   "parser_rejects_answer_without_object");
	TAP_INT_EQ(describe_parse_answer(s, T_CONCERT, "{\"columns\": {\"Year\": \"a\", \"Year\": \"b\"}}", &table,
					 &cols, &unknown, &err),
		   -T2S_ERR_UPSTREAM, "parser_rejects_duplicate_keys");
	TAP_OK(table == NULL && cols == NULL, "parser_failure_leaves_outputs_untouched");
	schema_unref(s);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (model_client_global_init() != 0 || stub_start() != 0) {
		printf("Bail out! cannot start the model stub\n");
		stub_stop();
		return 1;
	}
	test_metadata_without_model();
	test_argument_checks();
	test_parse_answer();
	test_model_answers();
	test_malformed_answers();
	test_model_failure();
	test_overrides();
	test_cache();
	test_failures_are_not_cached();
	test_parallel();
	stub_stop();
	model_client_global_cleanup();
	metrics_shutdown();
	return tap_done();
}
