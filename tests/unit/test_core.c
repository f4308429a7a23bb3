/*
 * test_core.c - unit tests of the small shared pieces: arena, strbuf,
 * utf8, SQL text helpers, error codes, config parsing, table identity in
 * the schema model, the compact JSON writer.
 */
#include "common/arena.h"
#include "common/json_text.h"
#include "common/strbuf.h"
#include "common/utf8.h"
#include "config/config.h"
#include "pipeline/text/dates.h"
#include "pipeline/text/numbers.h"
#include "pipeline/db/schema.h"
#include "pipeline/text/question_spans.h"
#include "pipeline/text/stopwords.h"
#include "pipeline/sql/sql_text.h"
#include "tests/unit/tap.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

static void test_arena(void)
{
	struct arena a;
	arena_init(&a);
	char *s = arena_printf(&a, "%s-%d", "x", 42);
	TAP_STR_EQ(s, "x-42", "arena_printf_formats");
	int *v = NULL;
	size_t cap = 0;
	for (int i = 0; i < 1000; i++) {
		v = arena_grow(&a, v, (size_t)i, &cap, sizeof(*v));
		v[i] = i;
	}
	int ok = 1;
	for (int i = 0; i < 1000; i++)
		ok &= v[i] == i;
	TAP_OK(ok && cap >= 1000, "arena_grow_keeps_elements_when_growing");
	void *big = arena_alloc(&a, 1 << 20);
	TAP_OK(big != NULL, "arena_alloc_serves_blocks_larger_than_a_chunk");
	TAP_OK(arena_calloc(&a, SIZE_MAX / 2, 4) == NULL, "arena_calloc_refuses_overflowing_sizes");
	arena_release(&a);
	TAP_OK(a.head == NULL && a.used_total == 0, "arena_release_empties_the_arena");
}

static void test_strbuf(void)
{
	struct strbuf sb;
	strbuf_init(&sb, 8);
	TAP_STR_EQ(sb.buf, "", "strbuf_starts_empty_and_not_null");
	TAP_INT_EQ(strbuf_adds(&sb, "12345678"), 0, "strbuf_accepts_up_to_its_max");
	TAP_OK(strbuf_adds(&sb, "9") < 0 && sb.len == 8, "strbuf_refuses_past_its_max_and_keeps_content");
	size_t len;
	char *s = strbuf_detach(&sb, &len);
	TAP_OK(len == 8 && strcmp(s, "12345678") == 0 && sb.len == 0, "strbuf_detach_hands_over_the_string");
	free(s);
}

static void test_utf8(void)
{
	TAP_OK(utf8_valid("caf\xc3\xa9", 5), "utf8_accepts_two_byte_sequences");
	TAP_OK(!utf8_valid("caf\xe9", 4), "utf8_rejects_latin1_bytes");
	TAP_OK(!utf8_valid("\xed\xa0\x80", 3), "utf8_rejects_surrogates");
	TAP_INT_EQ(utf8_prefix_len("ab\xc3\xa9", 4, 3), 2, "utf8_prefix_does_not_cut_a_sequence");
	struct arena a;
	arena_init(&a);
	TAP_STR_EQ(utf8_sanitize(&a, "a\xff" "b", 3), "a\xef\xbf\xbd" "b", "utf8_sanitize_replaces_invalid_bytes");
	arena_release(&a);
	json_t *j = utf8_json_string("x\x80", 2);
	TAP_OK(j && json_string_length(j) == 4, "utf8_json_string_never_fails_on_bad_bytes");
	json_decref(j);
	char *e = utf8_excerpt("short", 8);
	TAP_STR_EQ(e, "short", "utf8_excerpt_keeps_a_short_text_whole");
	free(e);
	e = utf8_excerpt("abc\xc3\xa9" "def", 4);
	TAP_STR_EQ(e, "abc" UTF8_EXCERPT_MARK " (8 bytes in all)", "utf8_excerpt_cuts_at_a_sequence_boundary_and_says_so");
	free(e);
	j = utf8_json_excerpt(NULL, 4);
	TAP_OK(json_is_null(j), "utf8_json_excerpt_of_null_is_null");
	json_decref(j);
}

static void test_sql_text(void)
{
	char kw[16];
	sql_leading_keyword("  -- hello\n /* block */ select 1", kw, sizeof(kw));
	TAP_STR_EQ(kw, "SELECT", "leading_keyword_skips_comments");
	sql_leading_keyword("/* unterminated", kw, sizeof(kw));
	TAP_STR_EQ(kw, "", "leading_keyword_of_only_comment_is_empty");
	TAP_STR_EQ(sql_skip_space_and_comments(" ;"), ";", "skip_stops_at_semicolon");
}

static int load(const char *json, struct config *cfg, struct t2s_error *err)
{
	return config_load_string(json, "/etc/t2s/config.json", cfg, err);
}

static void test_config(void)
{
	struct config cfg;
	struct t2s_error err;
	int rc = load("{\"databases\": [{\"name\": \"a\", \"url\": \"sqlite://rel/a.sqlite\"}]}", &cfg, &err);
	TAP_INT_EQ(rc, 0, "config_minimal_loads");
	if (rc == 0) {
		TAP_STR_EQ(cfg.databases[0].sqlite_path, "/etc/t2s/rel/a.sqlite",
			   "config_relative_sqlite_path_resolves_against_config_dir");
		TAP_INT_EQ(cfg.listen.port, 8080, "config_default_port_is_8080");
		TAP_INT_EQ(cfg.execution.default_max_rows, 1000, "config_default_row_cap");
		config_release(&cfg);
	}
	rc = load("{\"databases\": [], \"limits\": {\"max_body_bytes\": 12}}", &cfg, &err);
	TAP_OK(rc < 0 && strstr(err.message, "limits.max_body_bytes"), "config_out_of_range_names_the_key_path");
	rc = load("{\"databases\": [], \"listen\": {\"hots\": \"x\"}}", &cfg, &err);
	TAP_OK(rc < 0 && strstr(err.message, "listen.hots") && strstr(err.message, "unknown"),
	       "config_unknown_key_names_the_key_path");
	rc = load("{\"databases\": [{\"name\": \"a\", \"url\": \"mysql://x\"}]}", &cfg, &err);
	TAP_OK(rc < 0 && strstr(err.message, "databases[0].url"), "config_unsupported_url_scheme_rejected");
	rc = load("{\"databases\": [{\"name\": \"a\", \"url\": \"sqlite:///a\"}, {\"name\": \"a\", \"url\": "
		  "\"sqlite:///b\"}]}",
		  &cfg, &err);
	TAP_OK(rc < 0 && strstr(err.message, "databases[1].name"), "config_duplicate_database_names_rejected");
	rc = load("{\"databases\": [], \"models\": {\"link\": {\"base_url\": \"http://x/v1\"}}}", &cfg, &err);
	TAP_OK(rc < 0 && strstr(err.message, "models.link.model"), "config_model_without_name_rejected");
	rc = load("{\"databases\": [", &cfg, &err);
	TAP_OK(rc < 0 && strstr(err.message, "not valid JSON"), "config_malformed_json_rejected");
}

static bool has_span(const struct span_list *l, enum span_kind kind, const char *text)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].kind == kind && strcmp(l->v[i].text, text) == 0)
			return true;
	return false;
}

static void test_spans(void)
{
	struct span_list l;
	int rc = question_spans("Which singers from \"United States\" sang in Old Trafford in 2014 or on 2015-03-01?", &l);
	TAP_INT_EQ(rc, 0, "spans_extract");
	TAP_OK(has_span(&l, SPAN_QUOTED, "United States"), "spans_keep_quoted_strings_without_quotes");
	TAP_OK(has_span(&l, SPAN_CAPITALISED, "Old Trafford"), "spans_find_capitalised_runs");
	TAP_OK(!has_span(&l, SPAN_CAPITALISED, "Which"), "spans_skip_a_capitalised_question_word");
	TAP_OK(has_span(&l, SPAN_NUMBER, "2014"), "spans_find_numbers");
	TAP_OK(has_span(&l, SPAN_DATE, "2015-03-01"), "spans_find_iso_dates");
	TAP_OK(has_span(&l, SPAN_NGRAM, "singers"), "spans_include_single_words");
	TAP_OK(!has_span(&l, SPAN_NGRAM, "from"), "spans_skip_stop_words");
	TAP_OK(!has_span(&l, SPAN_NGRAM, "in Old"), "spans_do_not_start_with_a_stop_word");
	question_spans_release(&l);
	rc = question_spans("Who is O'Brien's manager born in March 1990?", &l);
	TAP_OK(rc == 0 && has_span(&l, SPAN_DATE, "March 1990") && has_span(&l, SPAN_CAPITALISED, "O'Brien's"),
	       "spans_keep_apostrophes_and_month_dates");
	question_spans_release(&l);
	rc = question_spans("Who signed on 25/12/2009, on May 1, 2009 or on 21.07.2003?", &l);
	TAP_OK(rc == 0 && has_span(&l, SPAN_DATE, "25/12/2009") && has_span(&l, SPAN_DATE, "May 1, 2009") &&
		       has_span(&l, SPAN_DATE, "21.07.2003") && !has_span(&l, SPAN_NUMBER, "21.07.2003"),
	       "spans_find_dates_in_every_form_of_the_date_grammar");
	question_spans_release(&l);
}

static bool date_is(const char *text, unsigned forms, const char *first, const char *last)
{
	struct date_range got, want_first, want_last;
	if (!date_parse(text, strlen(text), forms, &got))
		return false;
	if (!date_parse(first, strlen(first), DATE_ISO, &want_first) || !date_parse(last, strlen(last), DATE_ISO, &want_last))
		return false;
	return got.first_day == want_first.first_day && got.last_day == want_last.last_day;
}

static bool not_a_date(const char *text, unsigned forms)
{
	struct date_range ignored;
	return !date_parse(text, strlen(text), forms, &ignored);
}

static void test_dates(void)
{
	const unsigned q = DATE_QUESTION_FORMS;
	TAP_OK(date_is("2009-05-01", q, "2009-05-01", "2009-05-01") && date_is("2009/5/1", q, "2009-05-01", "2009-05-01") &&
		       date_is("2009.05.01", q, "2009-05-01", "2009-05-01"),
	       "dates_year_first_forms");
	TAP_OK(date_is("2009-02", q, "2009-02-01", "2009-02-28") && date_is("2008-02", q, "2008-02-01", "2008-02-29"),
	       "dates_month_covers_its_days_with_leap_years");
	TAP_OK(date_is("25/12/2009", q, "2009-12-25", "2009-12-25") && date_is("25.12.2009", q, "2009-12-25", "2009-12-25") &&
		       date_is("25-12-2009", q, "2009-12-25", "2009-12-25"),
	       "dates_day_first_forms");
	TAP_OK(date_is("03/04/2009", q, "2009-04-03", "2009-04-03"), "dates_ambiguous_numeric_date_reads_day_first");
	TAP_OK(date_is("12/25/2009", q, "2009-12-25", "2009-12-25"), "dates_month_first_when_only_reading");
	TAP_OK(date_is("May 1, 2009", q, "2009-05-01", "2009-05-01") && date_is("1 may 2009", q, "2009-05-01", "2009-05-01") &&
		       date_is("Sept 2009", q, "2009-09-01", "2009-09-30") && date_is("Jan. 2009", q, "2009-01-01", "2009-01-31"),
	       "dates_named_month_forms");
	TAP_OK(not_a_date("31/02/2009", q) && not_a_date("2009-02-29", q) && not_a_date("2009-13-01", q) &&
		       not_a_date("13/13/2009", q) && not_a_date("May 1", q) && not_a_date("Janu 2009", q),
	       "dates_reject_impossible_or_incomplete_dates");
	TAP_OK(not_a_date("2009", q) && date_is("2009", DATE_BARE_YEAR, "2009-01-01", "2009-12-31"),
	       "dates_bare_year_only_when_asked");
	TAP_OK(not_a_date("2009-05-01 10:00", q) && date_is("2009-05-01 10:00", DATE_ISO | DATE_WITH_TIME, "2009-05-01", "2009-05-01"),
	       "dates_time_suffix_only_when_asked");
	TAP_OK(not_a_date("2009-05", DATE_ISO | DATE_NEED_DAY) && not_a_date("May 2009", DATE_NAMED | DATE_NEED_DAY),
	       "dates_need_day_rejects_months");
	TAP_INT_EQ(date_month_from_name("SEPTEMBER", 9), 9, "dates_month_names_any_case");
}

static void test_numbers_and_stop_words(void)
{
	double x = 0;
	TAP_OK(number_parse("80,000", 6, &x) && x == 80000, "numbers_thousands_commas");
	TAP_OK(number_parse("-3.5", 4, &x) && x == -3.5, "numbers_sign_and_fraction");
	TAP_OK(!number_parse("1,0", 3, &x) && !number_parse("1.2.3", 5, &x) && !number_parse("12a", 3, &x),
	       "numbers_reject_malformed");
	TAP_OK(stopword_is("The", 3, STOPWORD_RETRIEVAL) && stopword_is("The", 3, STOPWORD_VALUE_SPAN),
	       "stop_words_shared_and_case_insensitive");
	TAP_OK(stopword_is("list", 4, STOPWORD_VALUE_SPAN) && !stopword_is("list", 4, STOPWORD_RETRIEVAL),
	       "stop_words_of_asking_are_only_for_value_spans");
	TAP_OK(!stopword_is("singer", 6, STOPWORD_RETRIEVAL | STOPWORD_VALUE_SPAN) && !stopword_is("th", 2, ~0u) &&
		       !stopword_is("them", 3, 0),
	       "stop_words_match_whole_words_only");
}

/* A PostgreSQL schema model with tables (schema, name) in that order; FK from tables[i] to (ref_schema, ref_table). */
static struct schema *pg_model(const char *const (*tables)[2], size_t n)
{
	struct schema *s = schema_new("db", DB_ENGINE_POSTGRES);
	s->tables = arena_calloc(&s->arena, n, sizeof(*s->tables));
	s->n_tables = n;
	for (size_t i = 0; i < n; i++)
		s->tables[i] = (struct schema_table){.schema = tables[i][0], .name = tables[i][1], .kind = "table"};
	return s;
}

static void test_table_identity(void)
{
	static const char *const pg[][2] = {{"north", "t"}, {"public", "t"}, {"south", "t"}, {"north", "v"},
					    {"south", "v"}, {"public", "a.b"}, {"a", "b"}, {"south", "w"}};
	struct schema *s = pg_model(pg, 8);
	static const char *const fk_cols[] = {"t_id"}, *const fk_refs[] = {"id"};
	struct schema_foreign_key fks[2] = {
		{.columns = (const char **)fk_cols, .n_columns = 1, .ref_schema = "south", .ref_table = "t",
		 .ref_columns = (const char **)fk_refs},
		{.columns = (const char **)fk_cols, .n_columns = 1, .ref_schema = "gone", .ref_table = "x",
		 .ref_columns = (const char **)fk_refs}};
	s->tables[7].foreign_keys = fks;
	s->tables[7].n_foreign_keys = 2;
	struct schema_column pg_cols[] = {{.name = "a", .type = "bigint"}, {.name = "b", .type = "double precision"},
					  {.name = "c", .type = "character varying(20)"},
					  {.name = "d", .type = "timestamp without time zone"}, {.name = "e", .type = "point"},
					  {.name = "f", .type = "integer[]"}, {.name = "g", .type = "boolean"},
					  {.name = "h", .type = "mood"}};
	s->tables[0].columns = pg_cols;
	s->tables[0].n_columns = 8;
	TAP_INT_EQ(schema_finish(s), 0, "schema_finish_seals_a_model");
	TAP_OK(pg_cols[0].type_class == SCHEMA_TYPE_INTEGER && pg_cols[1].type_class == SCHEMA_TYPE_REAL &&
		       pg_cols[2].type_class == SCHEMA_TYPE_TEXT && pg_cols[3].type_class == SCHEMA_TYPE_DATE &&
		       pg_cols[4].type_class == SCHEMA_TYPE_OTHER && pg_cols[5].type_class == SCHEMA_TYPE_OTHER &&
		       pg_cols[6].type_class == SCHEMA_TYPE_BOOLEAN && pg_cols[7].type_class == SCHEMA_TYPE_UNKNOWN,
	       "postgres_type_classes_by_type_name");
	TAP_STR_EQ(s->tables[0].api_name, "north.t", "api_name_outside_public_is_schema_dot_table");
	TAP_STR_EQ(s->tables[1].api_name, "t", "api_name_in_public_is_the_bare_name");
	TAP_OK(schema_find_table(s, "t") == &s->tables[1], "find_bare_name_is_the_public_table");
	TAP_OK(schema_find_table(s, "south.t") == &s->tables[2], "find_qualified_name_is_that_schemas_table");
	TAP_OK(schema_find_table(s, "v") == NULL, "find_bare_name_of_two_other_schemas_is_none");
	TAP_OK(schema_find_table(s, "public.t") == NULL && schema_find_table(s, "T") == NULL,
	       "find_is_exact_on_the_api_name");
	TAP_OK(schema_find_table(s, "a.b") == NULL, "find_an_api_name_two_tables_share_is_none");
	TAP_OK(fks[0].ref_index == 2 && strcmp(fks[0].ref_api_name, "south.t") == 0,
	       "foreign_key_target_is_resolved_by_schema_and_name");
	TAP_OK(fks[1].ref_index == -1 && strcmp(fks[1].ref_api_name, "gone.x") == 0,
	       "foreign_key_to_a_table_outside_the_model_keeps_its_api_name");
	TAP_OK(schema_resolve_table(s, "SOUTH.T", SCHEMA_NAME_NOCASE, NULL, 0) == 2 &&
		       schema_resolve_table(s, "Public.T", SCHEMA_NAME_NOCASE, NULL, 0) == 1,
	       "resolve_matches_schema_dot_table_ignoring_case");
	TAP_OK(schema_resolve_table(s, "W", SCHEMA_NAME_NOCASE, NULL, 0) == -1 &&
		       schema_resolve_table(s, "W", SCHEMA_NAME_BARE, NULL, 0) == 7,
	       "resolve_bare_name_in_another_schema_only_at_the_loosest_step");
	TAP_OK(schema_resolve_table(s, "v", SCHEMA_NAME_BARE, NULL, 0) == -1 &&
		       schema_resolve_table(s, "v", SCHEMA_NAME_BARE, (const int[]){4, 4}, 2) == 4,
	       "resolve_a_name_two_tables_share_is_none_unless_one_is_considered");
	json_t *j = schema_to_json(s);
	TAP_STR_EQ(json_string_value(json_object_get(json_array_get(json_object_get(j, "tables"), 2), "qualified_name")),
		   "south.t", "json_qualified_name_is_the_api_name");
	char *dumped = json_dumps(j, JSON_COMPACT), *text = schema_to_json_text(s, NULL);
	TAP_STR_EQ(text, dumped, "schema_text_a_table_at_a_time_is_the_whole_trees_text");
	free(dumped);
	free(text);
	json_decref(j);
	schema_unref(s);

	static const char *const lite[][2] = {{"main", "Singer"}};
	s = pg_model(lite, 1);
	s->engine = DB_ENGINE_SQLITE;
	struct schema_column cols[] = {{.name = "id", .type = "INTEGER"}, {.name = "t_id", .type = "int(11)"},
				       {.name = "born", .type = "DATETIME"}, {.name = "name", .type = "varchar(20)"},
				       {.name = "pay", .type = "DECIMAL(19,4)"}, {.name = "ok", .type = "bool"},
				       {.name = "year", .type = "YEAR"}, {.name = "x", .type = ""}};
	static const char *const pk[] = {"id"};
	s->tables[0].columns = cols;
	s->tables[0].n_columns = 8;
	s->tables[0].primary_key = (const char **)pk;
	s->tables[0].n_primary_key = 1;
	s->tables[0].foreign_keys = fks;
	s->tables[0].n_foreign_keys = 1;
	TAP_INT_EQ(schema_finish(s), 0, "schema_finish_seals_a_sqlite_model");
	TAP_OK(cols[0].type_class == SCHEMA_TYPE_INTEGER && cols[1].type_class == SCHEMA_TYPE_INTEGER &&
		       cols[2].type_class == SCHEMA_TYPE_DATE && cols[3].type_class == SCHEMA_TYPE_TEXT &&
		       cols[4].type_class == SCHEMA_TYPE_REAL && cols[5].type_class == SCHEMA_TYPE_BOOLEAN &&
		       cols[6].type_class == SCHEMA_TYPE_UNKNOWN && cols[7].type_class == SCHEMA_TYPE_UNKNOWN,
	       "sqlite_type_classes_follow_affinity_after_bool_and_date");
	TAP_OK(cols[0].primary_key && cols[0].key && !cols[0].reference && cols[1].key && cols[1].reference == &fks[0] &&
		       !cols[3].key && !cols[3].reference,
	       "columns_know_their_key_role_and_reference");
	TAP_OK(strcmp(s->tables[0].api_name, "Singer") == 0 && schema_find_table(s, "Singer") == &s->tables[0] &&
		       schema_find_table(s, "main.Singer") == NULL,
	       "sqlite_main_tables_are_named_bare");
	schema_unref(s);
}

/* json_text_compact writes what json_dumps(JSON_COMPACT) writes, for every kind of value. */
static void test_json_text(void)
{
	json_t *j = json_pack("{s:s, s:i, s:f, s:f, s:f, s:f, s:f, s:b, s:n, s:[], s:{}, s:[s, s, s, f]}", "plain",
			      "caf\xc3\xa9 \"q\" back\\slash\n\t\x01\x1f/", "int", -42, "real", 0.26620326551616547,
			      "whole", 3.0, "tiny", 1e-300, "huge", 1.5e300, "neg", -0.000125, "yes", 1, "none", "empty_a",
			      "empty_o", "list", "a", "", "\r\b\f", 1e21);
	json_object_set_new(j, "nested", json_pack("{s:[{s:[i, i]}, null]}", "k", "x", 1, 2));
	char *want = json_dumps(j, JSON_COMPACT);
	size_t len = 0;
	char *got = json_text_compact(j, &len);
	TAP_STR_EQ(got, want, "json_text_writes_what_json_dumps_compact_writes");
	TAP_OK(got && len == strlen(got), "json_text_reports_its_length");
	free(got);
	free(want);
	json_decref(j);
	json_t *bad = json_array();
	json_array_append_new(bad, json_stringn_nocheck("\xff\xfe", 2));
	TAP_OK(json_text_compact(bad, NULL) == NULL && json_dumps(bad, JSON_COMPACT) == NULL,
	       "json_text_fails_on_invalid_utf8_as_json_dumps_does");
	json_decref(bad);
	json_t *deep = json_array();
	for (int i = 0; i < JSON_TEXT_MAX_DEPTH + 2; i++) {
		json_t *outer = json_array();
		json_array_append_new(outer, deep);
		deep = outer;
	}
	TAP_OK(json_text_compact(deep, NULL) == NULL, "json_text_refuses_nesting_deeper_than_its_limit");
	json_decref(deep);
	json_t *scalar = json_integer(1);
	TAP_OK(json_text_compact(scalar, NULL) == NULL, "json_text_writes_only_objects_and_arrays");
	json_decref(scalar);
}

int main(void)
{
	test_arena();
	test_strbuf();
	test_utf8();
	test_sql_text();
	test_config();
	test_spans();
	test_dates();
	test_numbers_and_stop_words();
	test_table_identity();
	test_json_text();
	return tap_done();
}
