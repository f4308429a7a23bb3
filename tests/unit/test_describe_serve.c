/*
 * test_describe_serve.c - describe_serve (pipeline/describe/describe_serve.h):
 * a /describe request merged from the state store's stored descriptions,
 * the user's overrides and the describe stage, with every allocation of a
 * run made to fail in turn.
 *
 * The schema is built by hand; the state store is a SQLite file in a scratch
 * directory; the describe model is an address where nothing listens, so
 * every model call fails at once and is reported in the result's errors
 * (the path where the result owns an error list).
 *
 * Allocation failures are injected by linking this test with
 * -Wl,--wrap=malloc,calloc,realloc,strdup,strndup (tests/meson.build): every
 * allocation the core library makes goes through the __wrap_ functions
 * below, which fail the N-th one when armed.  A double free or a leak on a
 * failure path is caught by glibc's checks and, in the sanitizer build, by
 * ASan and LeakSanitizer.  Prints TAP.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "common/metrics.h"
#include "pipeline/describe/describe_serve.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/tap.h"

/* ---- allocation failure injection ---------------------------------------- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

static atomic_long fail_at;  /* 0: off; else the allocation number that fails */
static atomic_long n_allocs; /* allocations counted since armed */

static bool injected_failure(void)
{
	long at = atomic_load(&fail_at);
	return at > 0 && atomic_fetch_add(&n_allocs, 1) + 1 == at;
}

void *__wrap_malloc(size_t n)
{
	return injected_failure() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return injected_failure() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return injected_failure() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	return injected_failure() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	return injected_failure() ? NULL : __real_strndup(s, n);
}

/* ---- fixture -------------------------------------------------------------- */

static char scratch[64];
static char store_url[128];

static const char *const band_cols[] = {"band_id", "name", "genre"};
static const char *const album_cols[] = {"album_id", "band_id", "title", "year"};

static void add_table(struct schema *s, size_t i, const char *name, const char *const *cols, size_t n)
{
	struct schema_table *t = &s->tables[i];
	*t = (struct schema_table){.schema = "main", .name = name, .kind = "table", .row_count = 3, .n_columns = n};
	t->columns = arena_calloc(&s->arena, n, sizeof(*t->columns));
	for (size_t c = 0; c < n; c++)
		t->columns[c] = (struct schema_column){.name = cols[c], .type = c ? "TEXT" : "INTEGER", .nullable = c > 0};
}

/* band and album; a third table "wide" with n_wide columns when n_wide > 0. */
static struct schema *fixture_schema(size_t n_wide)
{
	struct schema *s = schema_new("music", DB_ENGINE_SQLITE);
	s->n_tables = n_wide ? 3 : 2;
	s->tables = arena_calloc(&s->arena, s->n_tables, sizeof(*s->tables));
	add_table(s, 0, "band", band_cols, 3);
	add_table(s, 1, "album", album_cols, 4);
	if (n_wide) {
		const char **cols = arena_calloc(&s->arena, n_wide, sizeof(*cols));
		for (size_t c = 0; c < n_wide; c++)
			cols[c] = arena_printf(&s->arena, "c%05zu", c);
		add_table(s, 2, "wide", cols, n_wide);
	}
	if (schema_finish(s) < 0)
		abort();
	return s;
}

/* Store model text for table t of s (every column) in st, as a past model run would have. */
static bool store_table(struct state_store *st, const struct schema *s, size_t t, const char *prefix)
{
	const struct schema_table *tab = &s->tables[t];
	struct state_description *items = calloc(tab->n_columns + 1, sizeof(*items));
	char **texts = calloc(tab->n_columns + 1, sizeof(*texts));
	struct t2s_error err = {0};
	bool ok = items && texts;
	for (size_t k = 0; ok && k <= tab->n_columns; k++) {
		const char *col = k ? tab->columns[k - 1].name : NULL;
		ok = asprintf(&texts[k], "%s %s%s%s.", prefix, tab->name, col ? " column " : "", col ? col : "") > 0;
		items[k] = (struct state_description){tab->name, col, texts[k], "model"};
	}
	ok = ok && state_store_descriptions_put_many(st, s->database, s->hash, items, tab->n_columns + 1, &err) == 0;
	if (!ok)
		printf("# store_table %s: %s\n", tab->name, err.message);
	for (size_t k = 0; texts && k <= tab->n_columns; k++)
		free(texts[k]);
	free(texts);
	free(items);
	return ok;
}

static struct state_store *open_store(const char *name)
{
	struct state_store *st = NULL;
	struct t2s_error err = {0};
	snprintf(store_url, sizeof(store_url), "sqlite://%s/%s", scratch, name);
	if (state_store_open(store_url, NULL, &st, &err) < 0)
		printf("# state_store_open: %s\n", err.message);
	return st;
}

/* A describe model where nothing listens: every call fails at once. */
static const struct model_endpoint dead_model = {.stage = "describe", .base_url = "http://127.0.0.1:1/v1",
						  .model = "m", .timeout_ms = 2000, .connect_timeout_ms = 1000};

static const struct describe_item *find_item(const struct describe_result *r, int t, int c)
{
	for (size_t i = 0; i < r->n_items; i++)
		if (r->items[i].table == t && r->items[i].column == c)
			return &r->items[i];
	return NULL;
}

static const char *item_text(const struct describe_result *r, int t, int c)
{
	const struct describe_item *it = find_item(r, t, c);
	return it ? it->text : "(missing)";
}

static const char *item_source(const struct describe_result *r, int t, int c)
{
	const struct describe_item *it = find_item(r, t, c);
	return it ? it->source : "(missing)";
}

/* ---- behaviour ------------------------------------------------------------ */

static void test_stored_tables_merge_with_fresh_ones(void)
{
	struct schema *s = fixture_schema(0);
	struct state_store *st = open_store("merge.sqlite");
	struct t2s_error err = {0};
	struct describe_result r = {0};
	const char *names[] = {"album", "band", "album"};
	struct describe_request rq = {.schema = s, .tables = names, .n_tables = 3, .state = st, .model = &dead_model};

	TAP_OK(st && store_table(st, s, 0, "Stored"), "serve_fixture_stores_band");
	TAP_OK(st && state_store_override_put(st, "music", "band", "genre", "The style of music.", &err) == 0,
	       "serve_fixture_overrides_band_genre");
	int rc = describe_serve(&rq, &r, &err);
	TAP_INT_EQ(rc, 0, "serve_answers_a_mix_of_stored_and_fresh_tables");
	TAP_INT_EQ((long)r.n_items, 5 + 4, "serve_describes_a_table_named_twice_once");
	TAP_OK(r.n_items == 9 && r.items[0].table == 1 && r.items[0].column == -1 && r.items[5].table == 0 &&
		       r.items[5].column == -1,
	       "serve_keeps_the_order_asked_each_table_first_then_its_columns");
	TAP_STR_EQ(item_source(&r, 0, -1), "model", "serve_stored_model_text_keeps_source_model");
	TAP_STR_EQ(item_text(&r, 0, 1), "Stored band column name.", "serve_stored_text_is_served_verbatim");
	TAP_STR_EQ(item_source(&r, 0, 2), "override", "serve_override_wins_over_stored_text");
	TAP_STR_EQ(item_text(&r, 0, 2), "The style of music.", "serve_override_text_is_served");
	TAP_STR_EQ(item_source(&r, 1, -1), "metadata", "serve_failed_model_table_falls_back_to_metadata");
	TAP_INT_EQ(r.cache_hits, 1, "serve_counts_the_stored_table_as_a_cache_hit");
	TAP_INT_EQ(r.model_errors, 1, "serve_reports_the_failed_model_table");
	TAP_OK(r.n_errors == 1 && strncmp(r.errors[0], "album: ", 7) == 0, "serve_lists_the_model_error_by_table");
	describe_result_release(&r);

	const char *unknown[] = {"band", "nope"};
	rq.tables = unknown;
	rq.n_tables = 2;
	memset(&err, 0, sizeof(err));
	rc = describe_serve(&rq, &r, &err);
	TAP_INT_EQ(rc, -T2S_ERR_NOT_FOUND, "serve_unknown_table_is_not_found");
	TAP_STR_EQ(err.message, "tables[1]: no table named 'nope'", "serve_not_found_names_the_entry");

	rq.tables = NULL;
	rq.n_tables = 0;
	rq.state = NULL;
	rq.model = NULL;
	rc = describe_serve(&rq, &r, &err);
	TAP_OK(rc == 0 && r.n_items == 9 && r.cache_hits == 0 && r.n_errors == 0 &&
		       strcmp(item_source(&r, 0, -1), "metadata") == 0,
	       "serve_without_store_or_model_describes_every_table_from_metadata");
	describe_result_release(&r);
	state_store_close(st);
	schema_unref(s);
}

/* A table of 3000 columns served wholly from the store (the merge looks each one up). */
static void test_wide_stored_table(void)
{
	struct schema *s = fixture_schema(3000);
	struct state_store *st = open_store("wide.sqlite");
	struct t2s_error err = {0};
	struct describe_result r = {0};
	const char *names[] = {"wide"};
	struct describe_request rq = {.schema = s, .tables = names, .n_tables = 1, .state = st, .model = &dead_model};

	TAP_OK(st && store_table(st, s, 2, "Kept"), "serve_fixture_stores_a_wide_table");
	int rc = describe_serve(&rq, &r, &err);
	TAP_OK(rc == 0 && r.n_items == 3001 && r.model_calls == 0 && r.cache_hits == 1,
	       "serve_wide_stored_table_needs_no_model_call");
	TAP_STR_EQ(item_text(&r, 2, 2999), "Kept wide column c02999.", "serve_wide_table_last_column_is_found");
	describe_result_release(&r);
	state_store_close(st);
	schema_unref(s);
}

/*
 * Fail the 1st, 2nd, ... allocation of a run (once each) until a run makes
 * fewer allocations than the armed number.  Each run must succeed or fail
 * with a clean error; the allocator and the sanitizers see the rest.
 */
static void test_every_allocation_failure(void)
{
	struct schema *s = fixture_schema(0);
	struct state_store *st = open_store("faults.sqlite");
	struct t2s_error err = {0};
	const char *names[] = {"album", "band"};
	struct describe_request rq = {.schema = s, .tables = names, .n_tables = 2, .state = st, .model = &dead_model};
	long runs = 0, failed_clean = 0, bad_rc = 0, succeeded_with_errors = 0;
	bool finished = false;

	TAP_OK(st && store_table(st, s, 0, "Stored"), "faults_fixture_stores_band");
	TAP_OK(st && state_store_override_put(st, "music", "album", NULL, "A record.", &err) == 0,
	       "faults_fixture_overrides_album");
	for (long n = 1; n <= 20000 && !finished; n++) {
		struct describe_result r = {0};
		atomic_store(&n_allocs, 0);
		atomic_store(&fail_at, n);
		int rc = describe_serve(&rq, &r, &err);
		atomic_store(&fail_at, 0);
		runs++;
		if (rc == 0) {
			succeeded_with_errors += r.n_errors > 0;
			finished = atomic_load(&n_allocs) < n;
			describe_result_release(&r);
		} else if (rc == -T2S_ERR_NOMEM || rc == -T2S_ERR_INTERNAL || rc == -T2S_ERR_UNAVAILABLE) {
			failed_clean++;
		} else {
			bad_rc++;
			printf("# allocation %ld: rc %d (%s)\n", n, rc, err.message);
		}
	}
	printf("# %ld runs, %ld failed cleanly, %ld succeeded with model errors\n", runs, failed_clean,
	       succeeded_with_errors);
	TAP_OK(finished, "faults_a_run_without_injected_failure_completes");
	TAP_INT_EQ(bad_rc, 0, "faults_every_failed_run_reports_a_clean_error");
	TAP_OK(failed_clean > 0, "faults_injected_failures_reach_describe_serve");
	TAP_OK(succeeded_with_errors > 0, "faults_runs_carry_model_errors_through_the_merge");
	state_store_close(st);
	schema_unref(s);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	snprintf(scratch, sizeof(scratch), "/tmp/t2s-describe-serve-XXXXXX");
	if (!mkdtemp(scratch) || model_client_global_init() != 0) {
		printf("Bail out! no scratch directory or curl\n");
		return 1;
	}
	test_stored_tables_merge_with_fresh_ones();
	test_wide_stored_table();
	test_every_allocation_failure();
	model_client_global_cleanup();
	metrics_shutdown();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", scratch);
	return tap_done();
}
