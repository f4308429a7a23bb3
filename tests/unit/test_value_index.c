/*
 * test_value_index.c - the value index and value probes of the evidence
 * stage against real databases.
 *
 * A fixture SQLite file written here (so the test runs anywhere) covers case
 * and multi-word matches, a value held by two columns, every skip rule, the
 * bounds on a generated 300k-row table, injection-proof probes (the file's
 * SHA-256 is unchanged) and number/date ranges.  When the Spider dev
 * databases are present (T2S_DATASETS, else ../shared/datasets next to the
 * source root) the same behaviours are checked on
 * concert_singer and world_1.  With T2S_TEST_PG_ADMIN_URL set, a throw-away
 * Postgres database and read-only role are created as admin, indexed and
 * probed through the reader role, then dropped.  With WordNet installed,
 * values named by adjectives ("French" -> France, "female" -> F) are checked
 * on a fixture of their own.  Prints TAP.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "common/clock.h"
#include "common/hash.h"
#include "common/workers.h"
#include "pipeline/db/catalog.h"
#include "pipeline/text/question_spans.h"
#include "pipeline/text/wordnet.h"
#include "pipeline/values/value_index.h"
#include "pipeline/values/value_probe.h"
#include "pipeline/values/value_registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/tap.h"

/* ---- helpers ---- */

struct test_db {
	struct config_database cfg;
	struct catalog_db db;
	struct schema *schema;
};

static int test_db_open(struct test_db *t, const char *name, enum db_engine engine, const char *target)
{
	memset(t, 0, sizeof(*t));
	t->cfg.name = name;
	t->cfg.url = target;
	t->cfg.sqlite_path = engine == DB_ENGINE_SQLITE ? target : NULL;
	t->cfg.pool_size = 4;
	t->db.cfg = &t->cfg;
	t->db.engine = engine;
	pthread_mutex_init(&t->db.lock, NULL);
	pthread_mutex_init(&t->db.refresh_lock, NULL);
	t->db.introspect = (struct introspect_options){
		.database = name,
		.sample_values = 5,
		.sample_rows = 50,
		.sample_value_max_len = 60,
		.timeout_ms = 10000,
		.row_count_scan_limit = 1000000,
	};
	if (db_pool_init(&t->db.pool, engine, target, 4, 5000, 5) < 0)
		return -1;
	struct t2s_error err;
	if (catalog_db_schema(&t->db, &t->schema, &err) < 0) {
		printf("# cannot introspect %s: %s\n", name, err.message);
		return -1;
	}
	return 0;
}

static void test_db_close(struct test_db *t)
{
	t->schema = schema_unref(t->schema);
	schema_unref(t->db.schema);
	t->db.schema = NULL;
	db_pool_release(&t->db.pool);
	pthread_mutex_destroy(&t->db.lock);
	pthread_mutex_destroy(&t->db.refresh_lock);
}

static int find_column(const struct schema *s, const char *table, const char *column, int *ret_t, int *ret_c)
{
	for (size_t t = 0; t < s->n_tables; t++) {
		if (strcmp(s->tables[t].name, table) != 0)
			continue;
		for (size_t c = 0; c < s->tables[t].n_columns; c++)
			if (strcmp(s->tables[t].columns[c].name, column) == 0) {
				*ret_t = (int)t;
				*ret_c = (int)c;
				return 0;
			}
	}
	return -1;
}

static const struct value_column_info *info_of(struct value_index *vi, const char *table, const char *column)
{
	int t, c;
	if (find_column(value_index_schema(vi), table, column, &t, &c) < 0)
		return NULL;
	return value_index_column(vi, t, c);
}

/* Position of (table.column = value) among the matches of span, or -1. */
static int match_rank(struct value_index *vi, const char *span, const char *table, const char *column,
		      const char *value, const char **ret_how)
{
	struct value_match m[10];
	size_t n = 0;
	struct t2s_error err;
	if (value_index_lookup(vi, span, 0.8, 10, m, &n, &err) < 0)
		return -1;
	const struct schema *s = value_index_schema(vi);
	for (size_t i = 0; i < n; i++) {
		const struct schema_table *t = &s->tables[m[i].table];
		if (strcmp(t->name, table) == 0 && strcmp(t->columns[m[i].column].name, column) == 0 &&
		    strcmp(m[i].value, value) == 0) {
			if (ret_how)
				*ret_how = m[i].how;
			return (int)i;
		}
	}
	return -1;
}

static bool range_has(struct value_index *vi, const char *text, const char *table, const char *column)
{
	struct value_column_ref refs[64];
	size_t n = 0;
	int t, c;
	if (find_column(value_index_schema(vi), table, column, &t, &c) < 0 ||
	    value_index_range_columns(vi, text, refs, 64, &n) < 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (refs[i].table == t && refs[i].column == c)
			return true;
	return false;
}

static void file_sha256(const char *path, char hex[SHA256_HEX_LEN + 1])
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	if (f && fstat(fileno(f), &st) == 0 && (buf = malloc((size_t)st.st_size + 1)))
		len = fread(buf, 1, (size_t)st.st_size, f);
	hash_sha256_hex(buf ? buf : "", len, hex);
	free(buf);
	if (f)
		fclose(f);
}

static int exec_sql(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		printf("# fixture: %s\n", msg ? msg : "?");
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* ---- fixture ---- */

static const char fixture_sql[] =
	"CREATE TABLE singer (Singer_ID INTEGER PRIMARY KEY, Name TEXT, Country TEXT, Birth_Country TEXT,"
	" Email TEXT, Homepage TEXT, Bio TEXT, Age INTEGER, Debut DATE, Joined VARCHAR(20), Is_male BOOL);"
	"INSERT INTO singer VALUES"
	" (1, 'Joe Sharp', 'Netherlands', 'France', 'joe@example.com', 'https://joe.example.com',"
	"  'Joe grew up in a small village near the sea and started singing in the church choir at seven.',"
	"  52, '1998-03-04', '2001-01-15', 1),"
	" (2, 'Timbaland', 'United States', 'United States', 'tim@example.org', 'http://timbaland.example.org/',"
	"  'A producer and rapper who worked with many famous artists across three decades of pop music.',"
	"  32, '2003-07-21', '2004-02-01', 1),"
	" (3, 'Justin Brown', 'France', 'Belgium', 'justin@example.net', 'www.justin.example.net',"
	"  'Justin studied classical piano before switching to pop and later moved to Paris to record.',"
	"  29, '2009-11-30', '2010-05-05', 1),"
	" (4, 'Rose White', 'France', 'France', 'rose@example.com', 'https://rose.example.com/home',"
	"  'Rose writes her own songs and has toured through Europe, Asia and the Americas many times.',"
	"  41, '2012-01-09', '2012-03-03', 0),"
	" (5, 'John Nizinik', 'Caribbean', 'Jamaica', 'john@example.com', 'https://john.example.com',"
	"  'John mixes reggae with electronic music and runs a small independent label in Kingston town.',"
	"  43, '2005-05-05', '2006-06-06', 1),"
	" (6, 'Tribal King', 'United Kingdom', 'Ireland', 'king@example.com', 'https://king.example.com',"
	"  'A band leader whose group has played festivals in every country of the European Union so far.',"
	"  25, '2015-09-19', '2016-10-10', 1);"
	"CREATE TABLE language (Language TEXT PRIMARY KEY, Family TEXT);"
	"INSERT INTO language VALUES ('English', 'Germanic'), ('Dutch', 'Germanic'), ('French', 'Romance'),"
	" ('Papiamento', 'Creole');"
	"CREATE TABLE member (member_ref TEXT PRIMARY KEY, Full_Name TEXT, Language TEXT REFERENCES language(Language),"
	" Notes TEXT, Token TEXT);"
	"INSERT INTO member VALUES ('M1001', 'Ann O''Brien', 'English', 'x', '3f2504e0-4f89-11d3-9a0c-0305e82c3301'),"
	" ('M1002', 'Bob Stone', 'Dutch', 'y', '3f2504e0-4f89-11d3-9a0c-0305e82c3302'),"
	" ('M1003', 'Carla Diaz', 'French', 'z', '3f2504e0-4f89-11d3-9a0c-0305e82c3303');"
	"CREATE TABLE \"we\"\"ird\" (\"na\"\"me\" TEXT);"
	"INSERT INTO \"we\"\"ird\" VALUES ('Quoted Name'), ('Other Name');"
	"CREATE TABLE t (x TEXT);"
	"INSERT INTO t VALUES ('a'), ('b');";

static int make_fixture(const char *path)
{
	unlink(path);
	sqlite3 *db;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	int rc = exec_sql(db, fixture_sql);
	sqlite3_close(db);
	return rc;
}

/*
 * 300k rows: four text columns with about 50k distinct values each (in a,
 * seven values fill a tenth of the rows), plus a number.
 */
static int make_big(const char *path)
{
	unlink(path);
	sqlite3 *db;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	int rc = exec_sql(db,
			  "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
			  "CREATE TABLE big (n INTEGER, a TEXT, b TEXT, c TEXT, d TEXT);"
			  "WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 299999)"
			  " INSERT INTO big SELECT i, CASE WHEN i % 10 = 0 THEN 'alpha popular ' || (i % 7)"
			  " ELSE 'alpha item ' || (i % 50000) END, 'beta thing ' || ((i * 7) % 50000),"
			  " 'gamma piece ' || ((i * 13) % 50000), 'delta part ' || ((i * 17) % 50000) FROM r;");
	sqlite3_close(db);
	return rc;
}

/* ---- checks on the fixture ---- */

static void check_lookup_fixture(struct value_index *vi)
{
	const char *how = NULL;
	TAP_INT_EQ(match_rank(vi, "france", "singer", "Country", "France", &how) >= 0, 1,
		   "lookup_finds_stored_case_from_lower_case_span");
	TAP_STR_EQ(how, "case", "lookup_reports_case_insensitive_match");
	TAP_OK(match_rank(vi, "France", "singer", "Country", "France", &how) >= 0 && strcmp(how, "exact") == 0,
	       "lookup_reports_exact_match");
	TAP_OK(match_rank(vi, "united states", "singer", "Country", "United States", NULL) == 0 ||
		       match_rank(vi, "united states", "singer", "Country", "United States", NULL) == 1,
	       "lookup_finds_multi_word_value");
	TAP_OK(match_rank(vi, "France", "singer", "Country", "France", NULL) >= 0 &&
		       match_rank(vi, "France", "singer", "Birth_Country", "France", NULL) >= 0,
	       "value_in_two_columns_returns_both");
	TAP_OK(match_rank(vi, "Carribean", "singer", "Country", "Caribbean", &how) >= 0 && strcmp(how, "fuzzy") == 0,
	       "lookup_finds_misspelled_value_fuzzily");
	TAP_OK(match_rank(vi, "  quoted   name ", "we\"ird", "na\"me", "Quoted Name", NULL) >= 0,
	       "lookup_normalises_space_and_quoted_identifiers_are_scanned");
	struct value_match m[4];
	size_t n = 99;
	struct t2s_error err;
	TAP_OK(value_index_lookup(vi, "zzqqxx", 0.8, 4, m, &n, &err) == 0 && n == 0,
	       "lookup_of_unknown_span_returns_nothing");
	TAP_OK(value_index_lookup(vi, "France", 0.0, 1, m, &n, &err) == 0 && n == 1 && m[0].score == 1.0,
	       "lookup_honours_max_results");
	TAP_INT_EQ(value_index_lookup(vi, NULL, 0.8, 4, m, &n, &err), -T2S_ERR_INVALID, "lookup_rejects_null_span");
	/* short spans: exact lookups only (member.Notes holds 'x', 'y', 'z'; t.x holds 'a', 'b') */
	TAP_OK(value_index_lookup(vi, "Y", 0.9, 4, m, &n, &err) == 0 && n == 1 && strcmp(m[0].value, "y") == 0 &&
		       strcmp(m[0].how, "case") == 0,
	       "short_span_found_by_exact_lookup");
	TAP_OK(value_index_lookup(vi, "q", 0.0, 4, m, &n, &err) == 0 && n == 0, "short_span_absent_matches_nothing");
}

static void check_skips_fixture(struct value_index *vi)
{
	const struct value_column_info *i;
	i = info_of(vi, "singer", "Singer_ID");
	TAP_OK(i && i->state == VALUE_COLUMN_SKIPPED && i->skip == VALUE_SKIP_ID, "skips_id_named_column");
	i = info_of(vi, "singer", "Email");
	TAP_OK(i && i->skip == VALUE_SKIP_EMAIL, "skips_email_column");
	i = info_of(vi, "singer", "Homepage");
	TAP_OK(i && i->skip == VALUE_SKIP_URL, "skips_url_column");
	i = info_of(vi, "singer", "Bio");
	TAP_OK(i && i->skip == VALUE_SKIP_LONG_TEXT, "skips_long_free_text_column");
	i = info_of(vi, "singer", "Is_male");
	TAP_OK(i && i->skip == VALUE_SKIP_TYPE, "skips_boolean_column");
	i = info_of(vi, "member", "member_ref");
	TAP_OK(i && i->skip == VALUE_SKIP_ID, "skips_key_column_of_opaque_codes");
	i = info_of(vi, "member", "Token");
	TAP_OK(i && i->skip == VALUE_SKIP_ID, "skips_uuid_column");
	i = info_of(vi, "language", "Language");
	TAP_OK(i && i->state == VALUE_COLUMN_INDEXED && i->n_values == 4, "keeps_text_primary_key_with_words");
	i = info_of(vi, "singer", "Age");
	TAP_OK(i && i->state == VALUE_COLUMN_RANGE && i->min == 25 && i->max == 52, "number_column_keeps_its_range");
	i = info_of(vi, "singer", "Joined");
	TAP_OK(i && i->kind == VALUE_KIND_DATE && i->state == VALUE_COLUMN_RANGE,
	       "text_column_of_iso_dates_becomes_date_range");
	TAP_OK(match_rank(vi, "joe@example.com", "singer", "Email", "joe@example.com", NULL) < 0,
	       "skipped_column_values_are_not_matched");
	const struct value_index_stats *st = value_index_get_stats(vi);
	TAP_OK(st->skipped[VALUE_SKIP_EMAIL] == 1 && st->skipped[VALUE_SKIP_URL] == 1 && st->columns_indexed >= 6 &&
		       !st->truncated && st->bytes > 0,
	       "stats_count_columns_by_outcome");
}

static void check_ranges_fixture(struct value_index *vi)
{
	TAP_OK(range_has(vi, "41", "singer", "Age"), "number_matches_column_whose_range_holds_it");
	TAP_OK(!range_has(vi, "99", "singer", "Age"), "number_outside_range_does_not_match");
	TAP_OK(range_has(vi, "2005-05-05", "singer", "Debut"), "iso_date_matches_date_column");
	TAP_OK(range_has(vi, "May 2010", "singer", "Joined") && range_has(vi, "5 May 2010", "singer", "Joined") &&
		       range_has(vi, "May 5, 2010", "singer", "Joined"),
	       "named_month_dates_match_date_column");
	TAP_OK(range_has(vi, "2010", "singer", "Debut") && !range_has(vi, "2010", "singer", "Age"),
	       "year_matches_date_range_not_small_numbers");
	TAP_OK(!range_has(vi, "1950-01-01", "singer", "Debut"), "date_outside_range_does_not_match");
	struct value_column_ref refs[4];
	size_t n;
	TAP_INT_EQ(value_index_range_columns(vi, "France", refs, 4, &n), -T2S_ERR_INVALID,
		   "range_rejects_text_that_is_no_number_or_date");
	TAP_OK(value_index_range_columns(vi, "1,000", refs, 4, &n) == 0 && n == 0,
	       "number_with_thousands_separator_parses");
}

/*
 * The question's date spans (question_spans) reach table.column by range:
 * the two stages share one date grammar, so a date the question names in
 * any accepted form finds the column whose range holds it.
 */
static bool question_date_hits(struct value_index *vi, const char *question, const char *table, const char *column)
{
	struct span_list l;
	bool hit = false;
	if (question_spans(question, &l) < 0)
		return false;
	for (size_t i = 0; i < l.n; i++)
		if (l.v[i].kind == SPAN_DATE && range_has(vi, l.v[i].text, table, column))
			hit = true;
	question_spans_release(&l);
	return hit;
}

static void check_question_dates_fixture(struct value_index *vi)
{
	/* singer.Debut holds 1998-03-04 .. 2015-09-19 (a DATE column); singer.Joined ISO text to 2016-10-10 */
	TAP_OK(question_date_hits(vi, "Which singers debuted on 2003-07-21?", "singer", "Debut"),
	       "question_iso_date_matches_date_column");
	TAP_OK(question_date_hits(vi, "Which singers debuted on 21/07/2003?", "singer", "Debut"),
	       "question_day_first_slash_date_matches_date_column");
	TAP_OK(question_date_hits(vi, "Which singers debuted on 21.07.2003?", "singer", "Debut") &&
		       question_date_hits(vi, "Which singers debuted on 21-07-2003?", "singer", "Debut"),
	       "question_day_first_dot_and_dash_dates_match_date_column");
	TAP_OK(question_date_hits(vi, "Who joined on 12/25/2009?", "singer", "Joined"),
	       "question_month_first_date_matches_when_only_that_reading_is_valid");
	TAP_OK(question_date_hits(vi, "Which singers debuted on July 21, 2003?", "singer", "Debut") &&
		       question_date_hits(vi, "Which singers debuted on 21 July 2003?", "singer", "Debut") &&
		       question_date_hits(vi, "Which singers debuted in July 2003?", "singer", "Debut"),
	       "question_named_month_dates_match_date_column");
	TAP_OK(!question_date_hits(vi, "Which singers debuted on 21/07/1950?", "singer", "Debut"),
	       "question_day_first_date_outside_range_matches_nothing");
	TAP_OK(!question_date_hits(vi, "Which singers debuted on 31/02/2003?", "singer", "Debut"),
	       "question_impossible_date_matches_nothing");
}

static void check_skip_flags(struct test_db *t)
{
	struct value_index_options o;
	value_index_options_init(&o);
	o.skip_urls_emails = false;
	o.skip_long_text = false;
	o.skip_ids = false;
	struct value_index *vi = NULL;
	struct t2s_error err;
	int rc = value_index_build(&t->db, t->schema, &o, &vi, &err);
	TAP_OK(rc == 0, "build_without_skip_rules");
	if (rc < 0)
		return;
	TAP_OK(match_rank(vi, "joe@example.com", "singer", "Email", "joe@example.com", NULL) >= 0 &&
		       info_of(vi, "singer", "Bio")->state == VALUE_COLUMN_INDEXED &&
		       info_of(vi, "member", "member_ref")->state == VALUE_COLUMN_INDEXED,
	       "skip_rules_can_be_turned_off");
	value_index_unref(vi);
}

static void check_probes_fixture(struct test_db *t, const char *path)
{
	int tab, col;
	struct value_probe_result r;
	struct t2s_error err;
	find_column(t->schema, "singer", "Country", &tab, &col);
	int rc = value_probe_run(&t->db, t->schema, tab, col, "france", 1000, &r, &err);
	TAP_OK(rc == 0 && r.n_rows == 1 && strcmp(r.rows[0], "France") == 0 && strcmp(r.how, "equal") == 0,
	       "probe_returns_exact_stored_case");
	if (rc == 0) {
		TAP_STR_EQ(r.sql, "SELECT DISTINCT \"Country\" FROM \"singer\" WHERE lower(\"Country\") = lower(?1) LIMIT 5",
			   "probe_sql_has_placeholder_not_value");
		TAP_STR_EQ(r.param, "france", "probe_reports_bound_value");
		value_probe_result_release(&r);
	}
	rc = value_probe_run(&t->db, t->schema, tab, col, "united", 1000, &r, &err);
	TAP_OK(rc == 0 && r.n_rows == 2 && strcmp(r.how, "like") == 0 && strcmp(r.param, "%united%") == 0,
	       "probe_falls_back_to_partial_match");
	value_probe_result_release(&r);
	rc = value_probe_run(&t->db, t->schema, tab, col, "united   kingdom", 1000, &r, &err);
	TAP_OK(rc == 0 && r.n_rows == 1 && strcmp(r.rows[0], "United Kingdom") == 0,
	       "probe_equal_then_like_with_spaces_as_wildcards");
	value_probe_result_release(&r);

	char before[SHA256_HEX_LEN + 1], after[SHA256_HEX_LEN + 1];
	file_sha256(path, before);
	find_column(t->schema, "t", "x", &tab, &col);
	rc = value_probe_run(&t->db, t->schema, tab, col, "x' OR 1=1; DROP TABLE t; --", 1000, &r, &err);
	TAP_OK(rc == 0 && r.n_rows == 0, "probe_with_sql_text_returns_no_rows");
	value_probe_result_release(&r);
	rc = value_probe_run(&t->db, t->schema, tab, col, "%", 1000, &r, &err);
	TAP_OK(rc == 0 && r.n_rows == 0, "probe_escapes_like_wildcards");
	value_probe_result_release(&r);
	file_sha256(path, after);
	TAP_STR_EQ(after, before, "database_unchanged_after_hostile_probes");

	find_column(t->schema, "member", "Full_Name", &tab, &col);
	rc = value_probe_run(&t->db, t->schema, tab, col, "ann o'brien", 1000, &r, &err);
	TAP_OK(rc == 0 && r.n_rows == 1 && strcmp(r.rows[0], "Ann O'Brien") == 0, "probe_finds_value_with_quote");
	value_probe_result_release(&r);
	find_column(t->schema, "we\"ird", "na\"me", &tab, &col);
	rc = value_probe_run(&t->db, t->schema, tab, col, "quoted name", 1000, &r, &err);
	TAP_OK(rc == 0 && r.n_rows == 1, "probe_quotes_identifiers_with_quotes");
	value_probe_result_release(&r);
	TAP_INT_EQ(value_probe_run(&t->db, t->schema, 999, 0, "x", 1000, &r, &err), -T2S_ERR_INVALID,
		   "probe_rejects_unknown_column");
	TAP_INT_EQ(value_probe_run(&t->db, t->schema, tab, col, "", 1000, &r, &err), -T2S_ERR_INVALID,
		   "probe_rejects_empty_value");
}

struct lookup_thread {
	struct value_index *vi;
	int ok;
};

static void *lookup_worker(void *arg)
{
	struct lookup_thread *lt = arg;
	for (int i = 0; i < 300; i++) {
		if (match_rank(lt->vi, i % 2 ? "france" : "united kingdom", "singer", "Country",
			       i % 2 ? "France" : "United Kingdom", NULL) >= 0)
			lt->ok++;
	}
	return NULL;
}

static void check_threads(struct value_index *vi)
{
	pthread_t th[4];
	struct lookup_thread lt[4];
	for (int i = 0; i < 4; i++) {
		lt[i] = (struct lookup_thread){value_index_ref(vi), 0};
		pthread_create(&th[i], NULL, lookup_worker, &lt[i]);
	}
	int ok = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ok += lt[i].ok;
		value_index_unref(lt[i].vi);
	}
	TAP_INT_EQ(ok, 1200, "concurrent_lookups_agree");
}

static void test_fixture(const char *dir)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/fixture.sqlite", dir);
	struct test_db t;
	if (make_fixture(path) < 0 || test_db_open(&t, "fixture", DB_ENGINE_SQLITE, path) < 0) {
		TAP_OK(0, "fixture_database_opens");
		return;
	}
	struct value_index *vi = NULL;
	struct t2s_error err;
	int rc = value_index_build(&t.db, t.schema, NULL, &vi, &err);
	TAP_OK(rc == 0, "build_on_fixture");
	if (rc == 0) {
		TAP_OK(value_index_schema(vi) == t.schema, "index_keeps_its_schema");
		check_lookup_fixture(vi);
		check_skips_fixture(vi);
		check_ranges_fixture(vi);
		check_question_dates_fixture(vi);
		check_threads(vi);
		value_index_unref(vi);
	} else {
		printf("# %s\n", err.message);
	}
	check_skip_flags(&t);
	check_probes_fixture(&t, path);
	test_db_close(&t);
	unlink(path);
}

/* ---- the registry's failure state ---- */

/* Poll value_registry_get until its state holds want (up to 10 s); the last state is in state. */
static bool wait_state(struct value_registry *reg, struct test_db *t, struct schema *s, const char *want,
		       char state[VALUE_REGISTRY_STATE_MAX])
{
	for (int i = 0; i < 1000; i++) {
		struct value_index *vi = value_registry_get(reg, &t->db, s, state);
		value_index_unref(vi);
		if (strstr(state, want))
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * A failed build's reason, as value_registry_get reported it, must not
 * change when a retry fails with another reason: the state is the caller's
 * copy, not a pointer into the slot that the retry's thread rewrites.  Two
 * pools of one connection each, both held here, make the builds fail with
 * reasons that differ in the pool's wait (50 ms, then 80 ms).
 */
static void test_registry_failure_state(const char *dir)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/registry.sqlite", dir);
	struct test_db a, b;
	if (make_fixture(path) < 0 || test_db_open(&a, "fixture", DB_ENGINE_SQLITE, path) < 0 ||
	    test_db_open(&b, "fixture", DB_ENGINE_SQLITE, path) < 0) {
		TAP_OK(0, "registry_fixture_opens");
		return;
	}
	db_pool_release(&a.db.pool);
	db_pool_release(&b.db.pool);
	struct db_conn *ca = NULL, *cb = NULL;
	struct t2s_error err;
	struct value_registry *reg = NULL;
	struct workers *pool = NULL; /* the builds run in the background, as in the service */
	struct value_index_options o;
	value_index_options_init(&o);
	if (db_pool_init(&a.db.pool, DB_ENGINE_SQLITE, path, 1, 50, 5) < 0 ||
	    db_pool_init(&b.db.pool, DB_ENGINE_SQLITE, path, 1, 80, 5) < 0 || db_pool_acquire(&a.db.pool, &ca, &err) < 0 ||
	    db_pool_acquire(&b.db.pool, &cb, &err) < 0 || workers_new(2, 0, &pool, &err) < 0 ||
	    value_registry_new(&o, pool, &reg, &err) < 0) {
		TAP_OK(0, "registry_fixture_opens");
		return;
	}
	char first[VALUE_REGISTRY_STATE_MAX], second[VALUE_REGISTRY_STATE_MAX];
	TAP_OK(wait_state(reg, &a, a.schema, "failed: no free database connection within 50 ms", first),
	       "registry_reports_the_failed_build");
	value_registry_prepare(reg, &b.db, a.schema); /* a retry, failing for another reason */
	TAP_OK(wait_state(reg, &a, a.schema, "within 80 ms", second), "registry_reports_the_retry_failure");
	TAP_OK(strstr(first, "within 50 ms") && !strstr(first, "80 ms"),
	       "registry_state_is_a_copy_unchanged_by_a_later_build");
	value_registry_free(reg);
	workers_free(pool);
	db_pool_put(&a.db.pool, ca, false);
	db_pool_put(&b.db.pool, cb, false);
	test_db_close(&a);
	test_db_close(&b);
	unlink(path);
}

/* ---- bounds on a large table ---- */

static void test_bounds(const char *dir)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/big.sqlite", dir);
	double t0 = clock_now_ms();
	struct test_db t;
	if (make_big(path) < 0 || test_db_open(&t, "big", DB_ENGINE_SQLITE, path) < 0) {
		TAP_OK(0, "big_database_opens");
		return;
	}
	printf("# generated 300k rows in %.0f ms\n", clock_now_ms() - t0);
	struct value_index_options o;
	value_index_options_init(&o);
	o.max_values_per_column = 20000;
	o.max_bytes = (size_t)3 << 20;
	o.max_rows_scanned = 250000;
	o.column_timeout_ms = 60000; /* slow sanitizer builds: this part tests the memory bounds */
	o.max_build_ms = 0;
	struct value_index *vi = NULL;
	struct t2s_error err;
	int rc = value_index_build(&t.db, t.schema, &o, &vi, &err);
	TAP_OK(rc == 0, "build_on_large_table");
	if (rc == 0) {
		const struct value_index_stats *st = value_index_get_stats(vi);
		printf("# large: %zu values, %zu bytes, %.0f ms, truncated by %s\n", st->values, st->bytes, st->build_ms,
		       st->truncated_by ? st->truncated_by : "-");
		TAP_OK(st->bytes <= o.max_bytes, "index_memory_stays_under_max_bytes");
		TAP_OK(st->truncated && strcmp(st->truncated_by, "max_bytes") == 0, "full_index_is_marked_truncated");
		const struct value_column_info *a = info_of(vi, "big", "a");
		TAP_OK(a && a->n_values == 20000 && a->truncated, "values_per_column_capped");
		TAP_OK(info_of(vi, "big", "d")->skip == VALUE_SKIP_BUDGET, "columns_after_full_index_skipped_for_budget");
		TAP_OK(match_rank(vi, "alpha popular 3", "big", "a", "alpha popular 3", NULL) >= 0 &&
			       match_rank(vi, "alpha popular 6", "big", "a", "alpha popular 6", NULL) >= 0,
		       "most_frequent_values_kept_first");
		const struct value_column_info *n = info_of(vi, "big", "n");
		TAP_OK(n && n->state == VALUE_COLUMN_RANGE && n->max < 250000 &&
			       strcmp(n->truncated_by ? n->truncated_by : "", "max_rows_scanned") == 0,
		       "scan_stops_at_max_rows_scanned");
		vi = value_index_unref(vi);
	}
	/* time bounds: a 1 ms statement limit and a 40 ms build limit */
	value_index_options_init(&o);
	o.column_timeout_ms = 1;
	o.max_build_ms = 40;
	double start = clock_now_ms();
	rc = value_index_build(&t.db, t.schema, &o, &vi, &err);
	double took = clock_now_ms() - start;
	printf("# time-bounded build: %.1f ms\n", took);
	TAP_OK(rc == 0 && took < 40 + 200, "build_stops_within_time_bound");
	if (rc == 0) {
		const struct value_column_info *a = info_of(vi, "big", "a");
		TAP_OK(a && (a->skip == VALUE_SKIP_FAILED || (a->truncated && strcmp(a->truncated_by, "column_timeout_ms") == 0)),
		       "column_scan_stops_at_statement_timeout");
		value_index_unref(vi);
	}
	atomic_bool cancel = true;
	value_index_options_init(&o);
	o.cancel = &cancel;
	rc = value_index_build(&t.db, t.schema, &o, &vi, &err);
	TAP_OK(rc == 0 && value_index_get_stats(vi)->values == 0 &&
		       strcmp(value_index_get_stats(vi)->truncated_by, "cancelled") == 0,
	       "cancelled_build_stops");
	if (rc == 0)
		value_index_unref(vi);
	test_db_close(&t);
	unlink(path);
}

/* ---- Spider ---- */

static const char *datasets_dir(char *buf, size_t size)
{
	const char *env = getenv("T2S_DATASETS"), *root = getenv("T2S_SOURCE_ROOT");
	if (env && *env)
		return env;
	snprintf(buf, size, "%s/../shared/datasets", root && *root ? root : ".");
	return buf;
}

static void test_spider(void)
{
	char dbuf[512], path[1024];
	const char *dir = datasets_dir(dbuf, sizeof(dbuf));
	snprintf(path, sizeof(path), "%s/spider-dev/database/concert_singer/concert_singer.sqlite", dir);
	if (access(path, R_OK) != 0) {
		tap_skip("spider_concert_singer", "Spider dev databases not found");
		return;
	}
	struct test_db t;
	struct value_index *vi = NULL;
	struct t2s_error err;
	if (test_db_open(&t, "concert_singer", DB_ENGINE_SQLITE, path) == 0 &&
	    value_index_build(&t.db, t.schema, NULL, &vi, &err) == 0) {
		const char *how = NULL;
		TAP_OK(match_rank(vi, "france", "singer", "Country", "France", &how) == 0 && strcmp(how, "case") == 0,
		       "spider_france_found_as_France_in_singer_country");
		int tab, col;
		struct value_probe_result r;
		find_column(t.schema, "singer", "Country", &tab, &col);
		TAP_OK(value_probe_run(&t.db, t.schema, tab, col, "FRANCE", 1000, &r, &err) == 0 && r.n_rows == 1 &&
			       strcmp(r.rows[0], "France") == 0,
		       "spider_probe_confirms_France");
		value_probe_result_release(&r);
		TAP_OK(info_of(vi, "singer", "Is_male")->skip == VALUE_SKIP_TYPE &&
			       info_of(vi, "singer", "Singer_ID")->skip == VALUE_SKIP_ID,
		       "spider_concert_singer_skips_bool_and_ids");
		TAP_OK(range_has(vi, "30", "singer", "Age"), "spider_age_matched_by_range");
		value_index_unref(vi);
	} else {
		TAP_OK(0, "spider_concert_singer_builds");
	}
	test_db_close(&t);

	snprintf(path, sizeof(path), "%s/spider-dev/database/world_1/world_1.sqlite", dir);
	vi = NULL;
	struct value_index_options capped;
	value_index_options_init(&capped);
	capped.max_values_per_column = 2000; /* world_1 has ~4000 city names */
	if (test_db_open(&t, "world_1", DB_ENGINE_SQLITE, path) == 0 &&
	    value_index_build(&t.db, t.schema, &capped, &vi, &err) == 0) {
		const struct value_index_stats *st = value_index_get_stats(vi);
		printf("# world_1: %zu values, %zu bytes, %.1f ms\n", st->values, st->bytes, st->build_ms);
		TAP_OK(match_rank(vi, "united states", "country", "Name", "United States", NULL) == 0,
		       "spider_multi_word_value_ranks_first");
		TAP_OK(match_rank(vi, "english", "countrylanguage", "Language", "English", NULL) >= 0,
		       "spider_language_key_column_is_indexed");
		TAP_OK(match_rank(vi, "Carribean", "country", "Region", "Caribbean", NULL) >= 0,
		       "spider_misspelled_region_found");
		TAP_OK(range_has(vi, "1776", "country", "IndepYear") && range_has(vi, "1776", "country", "Population"),
		       "spider_year_matched_by_range");
		TAP_OK(info_of(vi, "city", "ID")->skip == VALUE_SKIP_ID, "spider_city_id_skipped");
		const struct value_column_info *ci = info_of(vi, "city", "Name");
		TAP_OK(ci && ci->n_values == 2000 && ci->truncated, "spider_city_names_capped_at_max_values_per_column");
		value_index_unref(vi);
	} else {
		TAP_OK(0, "spider_world_1_builds");
	}
	test_db_close(&t);
}

/* ---- Postgres ---- */

static int pg_exec(PGconn *pg, const char *sql)
{
	PGresult *r = PQexec(pg, sql);
	int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
	if (!ok)
		printf("# pg: %s", PQerrorMessage(pg));
	PQclear(r);
	return ok ? 0 : -1;
}

static PGconn *pg_connect_db(const char *admin_url, const char *dbname)
{
	const char *keys[] = {"dbname", "dbname", NULL};
	const char *values[] = {admin_url, dbname, NULL};
	return PQconnectdbParams(keys, values, 1);
}

static char *pg_checksum(PGconn *pg)
{
	PGresult *r = PQexec(pg, "SELECT md5(string_agg(x, ',' ORDER BY x)) || count(*) FROM vi.t");
	char *out = PQresultStatus(r) == PGRES_TUPLES_OK ? strdup(PQgetvalue(r, 0, 0)) : strdup("error");
	PQclear(r);
	return out;
}

static void test_pg_checks(struct test_db *t, PGconn *admin_db)
{
	struct value_index *vi = NULL;
	struct t2s_error err;
	int rc = value_index_build(&t->db, t->schema, NULL, &vi, &err);
	TAP_OK(rc == 0, "pg_build");
	if (rc < 0) {
		printf("# %s\n", err.message);
		return;
	}
	const char *how = NULL;
	TAP_OK(match_rank(vi, "france", "singer", "country", "France", &how) >= 0 && strcmp(how, "case") == 0,
	       "pg_lookup_finds_stored_case");
	TAP_OK(match_rank(vi, "united states", "singer", "country", "United States", NULL) >= 0 &&
		       match_rank(vi, "United States", "singer", "birth_country", "United States", NULL) >= 0,
	       "pg_multi_word_value_in_two_columns");
	TAP_OK(match_rank(vi, "Beta", "singer", "mood", "beta", NULL) >= 0, "pg_enum_values_indexed_as_text");
	TAP_OK(info_of(vi, "singer", "singer_id")->skip == VALUE_SKIP_ID &&
		       info_of(vi, "singer", "email")->skip == VALUE_SKIP_EMAIL &&
		       info_of(vi, "singer", "active")->skip == VALUE_SKIP_TYPE &&
		       info_of(vi, "singer", "meta")->skip == VALUE_SKIP_TYPE,
	       "pg_skip_rules_honoured");
	TAP_OK(range_has(vi, "41", "singer", "age") && !range_has(vi, "100", "singer", "age"),
	       "pg_number_matched_by_range");
	TAP_OK(range_has(vi, "2005-05-05", "singer", "debut") && range_has(vi, "2012", "singer", "debut") &&
		       !range_has(vi, "1990", "singer", "debut"),
	       "pg_date_matched_by_range");
	int tab, col;
	struct value_probe_result r;
	find_column(t->schema, "singer", "country", &tab, &col);
	rc = value_probe_run(&t->db, t->schema, tab, col, "FRANCE", 1000, &r, &err);
	TAP_OK(rc == 0 && r.n_rows == 1 && strcmp(r.rows[0], "France") == 0 && strstr(r.sql, "$1") &&
		       strstr(r.sql, "\"vi\".\"singer\""),
	       "pg_probe_returns_exact_stored_case");
	value_probe_result_release(&r);
	rc = value_probe_run(&t->db, t->schema, tab, col, "kingdom", 1000, &r, &err);
	TAP_OK(rc == 0 && r.n_rows == 1 && strcmp(r.how, "like") == 0, "pg_probe_partial_match");
	value_probe_result_release(&r);
	char *before = pg_checksum(admin_db);
	find_column(t->schema, "t", "x", &tab, &col);
	rc = value_probe_run(&t->db, t->schema, tab, col, "x' OR 1=1; DROP TABLE vi.t; --", 1000, &r, &err);
	TAP_OK(rc == 0 && r.n_rows == 0, "pg_probe_with_sql_text_returns_no_rows");
	value_probe_result_release(&r);
	rc = value_probe_run(&t->db, t->schema, tab, col, "a'); DELETE FROM vi.t; --", 1000, &r, &err);
	value_probe_result_release(&r);
	char *after = pg_checksum(admin_db);
	TAP_OK(strcmp(before, "error") != 0, "pg_checksum_readable");
	TAP_STR_EQ(after, before, "pg_database_unchanged_after_hostile_probes");
	free(before);
	free(after);
	value_index_unref(vi);
}

static void test_pg(void)
{
	const char *admin_url = getenv("T2S_TEST_PG_ADMIN_URL");
	if (!admin_url || !*admin_url) {
		tap_skip("pg_value_index", "T2S_TEST_PG_ADMIN_URL not set");
		return;
	}
	char dbname[64], role[64], sql[512], url[512];
	snprintf(dbname, sizeof(dbname), "t2s_vi_%d", (int)getpid());
	snprintf(role, sizeof(role), "t2s_vi_reader_%d", (int)getpid());
	PGconn *admin = PQconnectdb(admin_url);
	if (PQstatus(admin) != CONNECTION_OK) {
		TAP_OK(0, "pg_admin_connects");
		PQfinish(admin);
		return;
	}
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", dbname);
	int ok = pg_exec(admin, sql) == 0;
	snprintf(sql, sizeof(sql), "CREATE ROLE %s LOGIN", role);
	ok = ok && pg_exec(admin, sql) == 0;
	PGconn *adb = ok ? pg_connect_db(admin_url, dbname) : NULL;
	ok = ok && PQstatus(adb) == CONNECTION_OK;
	snprintf(sql, sizeof(sql),
		 "CREATE SCHEMA vi; GRANT USAGE ON SCHEMA vi TO %s; ALTER DEFAULT PRIVILEGES IN SCHEMA vi "
		 "GRANT SELECT ON TABLES TO %s",
		 role, role);
	ok = ok && pg_exec(adb, sql) == 0;
	ok = ok && pg_exec(adb,
			   "CREATE TYPE vi.mood AS ENUM ('alpha', 'beta');"
			   "CREATE TABLE vi.singer (singer_id serial PRIMARY KEY, name text, country varchar(40),"
			   " birth_country character(20), email text, active boolean, meta jsonb, age integer,"
			   " debut date, mood vi.mood);"
			   "INSERT INTO vi.singer (name, country, birth_country, email, active, meta, age, debut, mood) VALUES"
			   " ('Joe Sharp', 'France', 'United States', 'joe@example.com', true, '{}', 52, '1998-03-04', 'alpha'),"
			   " ('Rose White', 'United States', 'France', 'rose@example.com', false, '{}', 41, '2012-01-09', 'beta'),"
			   " ('Tribal King', 'United Kingdom', 'Ireland', 'king@example.com', true, '{}', 25, '2015-09-19', 'beta');"
			   "CREATE TABLE vi.t (x text); INSERT INTO vi.t VALUES ('a'), ('b');") == 0;
	PGconn *host = adb ? adb : admin;
	snprintf(url, sizeof(url), "postgresql://%s@%s:%s/%s", role, PQhost(host), PQport(host), dbname);
	if (ok) {
		struct test_db t;
		if (test_db_open(&t, "pgfixture", DB_ENGINE_POSTGRES, url) == 0) {
			test_pg_checks(&t, adb);
		} else {
			TAP_OK(0, "pg_reader_introspects");
		}
		test_db_close(&t);
	} else {
		TAP_OK(0, "pg_fixture_created");
	}
	PQfinish(adb);
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", dbname);
	pg_exec(admin, sql);
	snprintf(sql, sizeof(sql), "DROP ROLE IF EXISTS %s", role);
	TAP_OK(pg_exec(admin, sql) == 0, "pg_fixture_dropped");
	PQfinish(admin);
}

/* ---- values named by adjectives (value_words.c) ---- */

/* True when one of m[0..n) is table.column = value, found how. */
static bool has_word_value(const struct value_index *vi, const struct value_match *m, size_t n, const char *table,
			   const char *column, const char *value, const char *how)
{
	const struct schema *s = value_index_schema(vi);
	for (size_t i = 0; i < n; i++)
		if (strcmp(s->tables[m[i].table].name, table) == 0 &&
		    strcmp(s->tables[m[i].table].columns[m[i].column].name, column) == 0 && strcmp(m[i].value, value) == 0 &&
		    strcmp(m[i].how, how) == 0)
			return true;
	return false;
}

static void test_word_values(const char *dir)
{
	struct wordnet *wn = NULL;
	struct t2s_error err;
	if (wordnet_load(NULL, &wn, &err) < 0) {
		tap_skip("word_values", "WordNet is not installed");
		return;
	}
	char path[512];
	snprintf(path, sizeof(path), "%s/words.sqlite", dir);
	unlink(path);
	sqlite3 *db = NULL;
	bool made = sqlite3_open(path, &db) == SQLITE_OK &&
		    sqlite3_exec(db,
				 "CREATE TABLE person (name TEXT, nationality TEXT, sex TEXT, grade TEXT);"
				 "INSERT INTO person VALUES ('Ann Lee', 'France', 'F', 'A'), ('Bo Chen', 'Italy', 'M', 'F'),"
				 " ('Cy Diaz', 'Italy', 'F', 'B'), ('Di Ek', 'France', 'M', 'C');"
				 "CREATE TABLE athlete (name TEXT, gender TEXT);"
				 "INSERT INTO athlete VALUES ('Ed Fox', 'F'), ('Fa Gu', 'M');"
				 "CREATE TABLE runner (name TEXT, sex TEXT);"
				 "INSERT INTO runner VALUES ('Gi Ho', 'F'), ('Hu Ip', 'female'), ('Jo Ka', 'M');",
				 NULL, NULL, NULL) == SQLITE_OK;
	sqlite3_close(db);
	struct test_db t;
	struct value_index *vi = NULL;
	if (!made || test_db_open(&t, "words", DB_ENGINE_SQLITE, path) < 0) {
		TAP_OK(0, "word_values_fixture_opens");
		wordnet_free(wn);
		return;
	}
	if (value_index_build(&t.db, t.schema, NULL, &vi, &err) < 0) {
		TAP_OK(0, "word_values_fixture_builds");
	} else {
		struct value_match m[8];
		size_t n = value_index_word_values(vi, wn, "french", m, 8);
		TAP_OK(has_word_value(vi, m, n, "person", "nationality", "France", "pertainym"),
		       "word_values_french_names_france_through_its_pertainym");
		n = value_index_word_values(vi, wn, "italian", m, 8);
		TAP_OK(has_word_value(vi, m, n, "person", "nationality", "Italy", "pertainym"),
		       "word_values_italian_names_italy");
		n = value_index_word_values(vi, wn, "female", m, 8);
		TAP_OK(has_word_value(vi, m, n, "person", "sex", "F", "initial"),
		       "word_values_female_names_the_single_letter_code_of_a_sex_column");
		TAP_OK(has_word_value(vi, m, n, "athlete", "gender", "F", "initial"),
		       "word_values_female_names_f_in_a_gender_column_a_synonym_of_its_attribute");
		TAP_OK(!has_word_value(vi, m, n, "person", "grade", "F", "initial"),
		       "word_values_no_initial_in_a_column_its_attribute_does_not_name");
		TAP_OK(!has_word_value(vi, m, n, "runner", "sex", "F", "initial"),
		       "word_values_no_initial_where_the_values_are_not_all_single_letters");
		n = value_index_word_values(vi, wn, "male", m, 8);
		TAP_OK(has_word_value(vi, m, n, "person", "sex", "M", "initial"), "word_values_male_names_m");
		TAP_OK(value_index_word_values(vi, wn, "france", m, 8) == 0 && value_index_word_values(vi, wn, "fox", m, 8) == 0,
		       "word_values_nothing_for_words_that_are_not_adjectives");
		TAP_OK(value_index_word_values(vi, NULL, "french", m, 8) == 0, "word_values_nothing_without_wordnet");
		/* The lookup cache answers a repeated lookup as the first, and keeps (span, min_score, max) apart. */
		struct value_match a[8], b[8];
		size_t na = 0, nb = 0, entries = 0, hits0 = 0, hits1 = 0;
		value_index_cache_stats(vi, &entries, &hits0);
		bool same = value_index_lookup(vi, "italy", 0.5, 8, a, &na, &err) == 0 &&
			    value_index_lookup(vi, "italy", 0.5, 8, b, &nb, &err) == 0 && na == nb && na > 0;
		for (size_t i = 0; same && i < na; i++)
			same = a[i].value == b[i].value && a[i].score == b[i].score && a[i].how == b[i].how;
		value_index_cache_stats(vi, &entries, &hits1);
		TAP_OK(same && hits1 == hits0 + 1 && entries > 0, "lookup_cache_answers_a_repeated_lookup_as_the_first");
		TAP_OK(value_index_lookup(vi, "italy", 0.99, 8, b, &nb, &err) == 0 && nb == 0,
		       "lookup_cache_keeps_min_scores_apart");
		const struct value_column_info *sex = value_index_column(vi, 0, 2), *name = value_index_column(vi, 0, 0);
		TAP_OK(sex && sex->single_letters && name && !name->single_letters,
		       "value_index_marks_columns_of_single_letters");
		value_index_unref(vi);
	}
	test_db_close(&t);
	unlink(path);
	wordnet_free(wn);
}

int main(void)
{
	char dir[] = "/tmp/t2s-vi-XXXXXX";
	if (!mkdtemp(dir)) {
		TAP_OK(0, "temp_dir_created");
		return tap_done();
	}
	test_fixture(dir);
	test_registry_failure_state(dir);
	test_bounds(dir);
	test_word_values(dir);
	test_spider();
	test_pg();
	char path[512];
	snprintf(path, sizeof(path), "%s/fixture.sqlite", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/big.sqlite", dir);
	unlink(path);
	rmdir(dir);
	return tap_done();
}
