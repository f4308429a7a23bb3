/*
 * test_builtin.c - the built-in generator's parts: words and stems, schema
 * names, the reading of each shape into SQL (SQLite and PostgreSQL
 * quoting), refusals with their codes, and readings that do not depend on
 * the order the schema lists its tables in (MySQL lists them by name).
 */
#include "pipeline/builtin/builtin.h"
#include "pipeline/builtin/builtin_names.h"
#include "pipeline/text/wordnet.h"

#include "tests/unit/tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct db_engine *engine_now;
static const struct wordnet *wordnet_now; /* the readings that need WordNet set it */

static void column(struct schema_column *c, const char *name, const char *type)
{
	/* PostgreSQL's format_type() spells types in lower case */
	*c = (struct schema_column){.name = name, .nullable = true,
				    .type = engine_now == DB_ENGINE_SQLITE ? type
					    : strcmp(type, "TEXT") == 0 ? "text" : strcmp(type, "REAL") == 0 ? "real"
					    : "integer"};
}

/* singer(Singer_ID PK, Name, Country, Age, Net_Worth_Millions); concert(concert_ID PK, concert_Name, Year,
   Stadium_ID -> stadium); stadium(Stadium_ID PK, Location, Capacity, Name); singer_in_concert(concert_ID ->
   concert, Singer_ID -> singer) */
/* One more single-column foreign key of t (its foreign_keys array has room). */
static void foreign_key(struct arena *a, struct schema_table *t, const char *col, const char *ref, const char *ref_col)
{
	if (!t->foreign_keys)
		t->foreign_keys = arena_calloc(a, 1, sizeof(struct schema_foreign_key));
	struct schema_foreign_key *fk = &t->foreign_keys[t->n_foreign_keys++];
	fk->columns = arena_calloc(a, 1, sizeof(char *));
	fk->columns[0] = col;
	fk->n_columns = 1;
	fk->ref_table = ref;
	fk->ref_columns = arena_calloc(a, 1, sizeof(char *));
	fk->ref_columns[0] = ref_col;
}

static struct schema *make_schema(const struct db_engine *engine)
{
	engine_now = engine;
	struct schema *s = schema_new("db", engine);
	struct arena *a = &s->arena;
	s->n_tables = 4;
	s->tables = arena_calloc(a, 4, sizeof(struct schema_table));
	struct schema_table *si = &s->tables[0], *co = &s->tables[1], *st = &s->tables[2], *sc = &s->tables[3];
	const char *sch = engine == DB_ENGINE_POSTGRES ? "public" : "main";
	si->schema = co->schema = st->schema = sc->schema = sch;
	si->name = "singer";
	si->n_columns = 5;
	si->columns = arena_calloc(a, 5, sizeof(struct schema_column));
	column(&si->columns[0], "Singer_ID", "INTEGER");
	column(&si->columns[1], "Name", "TEXT");
	column(&si->columns[2], "Country", "TEXT");
	column(&si->columns[3], "Age", "INTEGER");
	column(&si->columns[4], "Net_Worth_Millions", "REAL");
	si->primary_key = arena_calloc(a, 1, sizeof(char *));
	si->primary_key[0] = "Singer_ID";
	si->n_primary_key = 1;
	co->name = "concert";
	co->n_columns = 4;
	co->columns = arena_calloc(a, 4, sizeof(struct schema_column));
	column(&co->columns[0], "concert_ID", "INTEGER");
	column(&co->columns[1], "concert_Name", "TEXT");
	column(&co->columns[2], "Year", "INTEGER");
	column(&co->columns[3], "Stadium_ID", "INTEGER");
	co->primary_key = arena_calloc(a, 1, sizeof(char *));
	co->primary_key[0] = "concert_ID";
	co->n_primary_key = 1;
	foreign_key(a, co, "Stadium_ID", "stadium", "Stadium_ID");
	st->name = "stadium";
	st->n_columns = 4;
	st->columns = arena_calloc(a, 4, sizeof(struct schema_column));
	column(&st->columns[0], "Stadium_ID", "INTEGER");
	column(&st->columns[1], "Location", "TEXT");
	column(&st->columns[2], "Capacity", "INTEGER");
	column(&st->columns[3], "Name", "TEXT");
	st->primary_key = arena_calloc(a, 1, sizeof(char *));
	st->primary_key[0] = "Stadium_ID";
	st->n_primary_key = 1;
	sc->name = "singer_in_concert";
	sc->n_columns = 2;
	sc->columns = arena_calloc(a, 2, sizeof(struct schema_column));
	column(&sc->columns[0], "concert_ID", "INTEGER");
	column(&sc->columns[1], "Singer_ID", "INTEGER");
	sc->foreign_keys = arena_calloc(a, 2, sizeof(struct schema_foreign_key));
	foreign_key(a, sc, "concert_ID", "concert", "concert_ID");
	foreign_key(a, sc, "Singer_ID", "singer", "Singer_ID");
	TAP_SETUP(schema_finish(s));
	return s;
}

/* Evidence of one stored value, as the evidence stage reports it. */
static struct evidence_value values[2];
static struct evidence_result evidence;

static void set_value(size_t i, int table, int col, const char *value, const char *matched)
{
	values[i] = (struct evidence_value){.table = table, .column = col, .value = (char *)value,
					    .matched = (char *)matched, .score = 0.8, .source = "value_index"};
	evidence = (struct evidence_result){.values = values, .n_values = i + 1};
}

/* The SQL for question (NULL when refused; then *code is the refusal's). */
static char *ask(const struct schema *s, const char *question, const struct evidence_result *ev, const char **code)
{
	struct builtin_input in = {.question = question, .schema = s, .evidence = ev, .wordnet = wordnet_now};
	struct builtin_result r;
	*code = NULL;
	if (builtin_generate(&in, &r) < 0)
		return NULL;
	char *sql = r.sql ? strdup(r.sql) : NULL;
	*code = r.refusal;
	if (r.sql && (r.confidence <= 0 || r.confidence > 1))
		*code = "bad_confidence";
	builtin_result_release(&r);
	return sql;
}

static void expect(const struct schema *s, const char *question, const struct evidence_result *ev, const char *want,
		   const char *name)
{
	const char *code;
	char *sql = ask(s, question, ev, &code);
	if (!TAP_OK(sql && strcmp(sql, want) == 0, name))
		printf("#   question: %s\n#   got: %s (%s)\n#   want: %s\n", question, sql ? sql : "(refused)",
		       code ? code : "-", want);
	free(sql);
}

static void expect_refusal(const struct schema *s, const char *question, const struct evidence_result *ev,
			   const char *want_code, const char *name)
{
	const char *code;
	char *sql = ask(s, question, ev, &code);
	if (!TAP_OK(!sql && code && strcmp(code, want_code) == 0, name))
		printf("#   question: %s\n#   got: %s (%s), want refusal %s\n", question, sql ? sql : "(refused)",
		       code ? code : "-", want_code);
	free(sql);
}

static void words_and_names(void)
{
	char out[QUESTION_MAX_WORD];
	bi_stem("singers", out);
	TAP_STR_EQ(out, "singer", "stem_plural");
	bi_stem("countries", out);
	TAP_STR_EQ(out, "country", "stem_ies");
	bi_stem("singer's", out);
	TAP_STR_EQ(out, "singer", "stem_possessive");
	bi_stem("status", out);
	TAP_STR_EQ(out, "status", "stem_keeps_us");
	char nw[BI_NAME_WORDS][QUESTION_MAX_WORD];
	int n = bi_name_words("Net_Worth_Millions", nw, BI_NAME_WORDS);
	TAP_OK(n == 3 && strcmp(nw[0], "net") == 0 && strcmp(nw[2], "million") == 0, "name_words_snake_case");
	n = bi_name_words("songReleaseYear", nw, BI_NAME_WORDS);
	TAP_OK(n == 3 && strcmp(nw[1], "release") == 0, "name_words_camel_case");
	struct bi_words *w = malloc(sizeof(*w));
	bi_split("Singers older than 3.5 or 1,000?", w);
	TAP_OK(w->ws.n == 6 && w->is_number[3] && w->number[3] == 3.5 && w->is_number[5] && w->number[5] == 1000,
	       "split_keeps_numbers_whole");
	free(w);
	struct question_reading qr;
	question_read("How many singers are there for each country?", &qr);
	TAP_OK(qr.asks_count && qr.asks_each && qr.count_cue_words == 2, "question_read_count_and_each");
}

static void shapes(const struct schema *s)
{
	expect(s, "How many singers are there?", NULL, "SELECT count(*) FROM singer", "count");
	expect(s, "Count the number of different countries of singers.", NULL,
	       "SELECT count(DISTINCT Country) FROM singer", "count_distinct");
	set_value(0, 0, 2, "France", "france");
	expect(s, "How many singers are from France?", &evidence,
	       "SELECT count(*) FROM singer WHERE Country = 'France'", "count_with_stored_value");
	expect(s, "What are the names of singers whose country is France?", &evidence,
	       "SELECT Name FROM singer WHERE Country = 'France'", "list_with_value_and_its_column");
	expect(s, "Show the names of singers whose age is greater than 30.", NULL,
	       "SELECT Name FROM singer WHERE Age > 30", "list_with_comparison");
	expect(s, "List the name and age of singers with age between 20 and 30.", NULL,
	       "SELECT Name, Age FROM singer WHERE Age BETWEEN 20 AND 30", "list_with_range");
	expect(s, "What is the average age of all singers?", NULL, "SELECT avg(Age) FROM singer", "aggregate_avg");
	expect(s, "What is the maximum capacity of stadiums?", NULL, "SELECT max(Capacity) FROM stadium",
	       "aggregate_max");
	expect(s, "What is the name of the singer with the highest net worth millions?", NULL,
	       "SELECT Name FROM singer ORDER BY Net_Worth_Millions DESC NULLS LAST LIMIT 1", "superlative");
	expect(s, "How many singers are there for each country?", NULL,
	       "SELECT Country, count(*) FROM singer GROUP BY Country", "group_count");
	expect(s, "What is the average age of singers in each country?", NULL,
	       "SELECT Country, avg(Age) FROM singer GROUP BY Country", "group_aggregate");
	expect(s, "List the names of singers ordered by age in descending order.", NULL,
	       "SELECT Name FROM singer ORDER BY Age DESC", "ordering_desc");
	expect(s, "Show the distinct countries of singers.", NULL, "SELECT DISTINCT Country FROM singer", "distinct");
	set_value(0, 2, 1, "Glasgow", "glasgow");
	expect(s, "What are the concert names of concerts in location Glasgow?", &evidence,
	       "SELECT T1.concert_Name FROM concert AS T1 JOIN stadium AS T2 ON T1.Stadium_ID = T2.Stadium_ID WHERE "
	       "T2.Location = 'Glasgow'",
	       "join_through_foreign_key");
	expect(s, "How many stadiums do not have any concerts?", NULL,
	       "SELECT count(*) FROM stadium WHERE Stadium_ID NOT IN (SELECT Stadium_ID FROM concert WHERE Stadium_ID IS "
	       "NOT NULL)",
	       "negation_not_in");
	expect(s, "List the names of singers whose age is larger than the average age.", NULL,
	       "SELECT Name FROM singer WHERE Age > (SELECT avg(Age) FROM singer)", "comparison_with_average");
	expect(s, "What is the most common country of singers?", NULL,
	       "SELECT Country FROM singer GROUP BY Country ORDER BY count(*) DESC LIMIT 1", "most_common");
	expect(s, "What is the average and maximum age of singers?", NULL, "SELECT avg(Age), max(Age) FROM singer",
	       "aggregate_chain");
	expect(s, "List the names of the top 3 singers with the highest age.", NULL,
	       "SELECT Name FROM singer ORDER BY Age DESC NULLS LAST LIMIT 3", "top_n_superlative");
	expect(s, "Which countries have more than 2 singers?", NULL,
	       "SELECT Country FROM singer GROUP BY Country HAVING count(*) > 2", "having_count");
	set_value(0, 0, 1, "O'Neil", "o'neil");
	expect(s, "What is the age of the singer whose name is O'Neil?", &evidence,
	       "SELECT Age FROM singer WHERE Name = 'O''Neil'", "literal_quote_doubled");
}

/* Issue 17's wider reading: counts per row over a join, groups of a listed column, "not" and "or" values, three
   tables through a bridge, verbs and superlative adjectives read through WordNet. */
/* Questions without evidence and the SQL each reads as. */
struct shape_case {
	const char *question, *want, *name;
};

static void expect_all(const struct schema *s, const struct shape_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++)
		expect(s, cases[i].question, NULL, cases[i].want, cases[i].name);
}

static void joined_shapes(const struct schema *s)
{
	static const struct shape_case CASES[] = {
		{"What is the location of the stadium with the most concerts?",
		 "SELECT T1.Location FROM stadium AS T1 JOIN concert AS T2 ON T2.Stadium_ID = T1.Stadium_ID GROUP BY "
		 "T1.Stadium_ID ORDER BY count(*) DESC LIMIT 1", "most_rows_of_the_joined_table"},
		{"Show the locations of stadiums with at least 2 concerts.",
		 "SELECT T1.Location FROM stadium AS T1 JOIN concert AS T2 ON T2.Stadium_ID = T1.Stadium_ID GROUP BY "
		 "T1.Stadium_ID HAVING count(*) >= 2", "having_rows_of_the_joined_table"},
		{"Show the location of stadiums and the number of concerts.",
		 "SELECT T1.Location, count(*) FROM stadium AS T1 JOIN concert AS T2 ON T2.Stadium_ID = T1.Stadium_ID "
		 "GROUP BY T1.Stadium_ID", "count_per_row_of_the_main_table"},
		{"Show the countries and the number of singers.", "SELECT Country, count(*) FROM singer GROUP BY Country",
		 "count_per_listed_column"},
		{"What is the name of the singer with the most concerts?",
		 "SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T2.Singer_ID = T1.Singer_ID GROUP BY "
		 "T1.Singer_ID ORDER BY count(*) DESC LIMIT 1", "most_rows_through_a_bridge"},
		{"What is the location of the stadium with the most capacity?",
		 "SELECT Location FROM stadium ORDER BY Capacity DESC NULLS LAST LIMIT 1", "most_of_a_number_column"},
	};
	expect_all(s, CASES, sizeof(CASES) / sizeof(CASES[0]));
	set_value(0, 0, 2, "France", "france");
	expect(s, "What are the names of singers whose country is not France?", &evidence,
	       "SELECT Name FROM singer WHERE Country != 'France'", "value_negated");
	values[1] = (struct evidence_value){.table = 0, .column = 2, .value = "Spain", .matched = "spain", .score = 1};
	evidence.n_values = 2;
	expect(s, "How many singers are from either France or Spain?", &evidence,
	       "SELECT count(*) FROM singer WHERE (Country = 'France' OR Country = 'Spain')", "two_values_or");
	set_value(0, 1, 1, "Super bootcamp", "Super bootcamp");
	expect(s, "List the names of singers in Super bootcamp.", &evidence,
	       "SELECT DISTINCT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T2.Singer_ID = T1.Singer_ID "
	       "JOIN concert AS T3 ON T2.concert_ID = T3.concert_ID WHERE T3.concert_Name = 'Super bootcamp'",
	       "three_tables_through_a_bridge");
	set_value(0, 1, 1, "Super bootcamp", "super bootcamp");
	expect_refusal(s, "List the names of singers in super bootcamp.", &evidence, "no_table",
		       "refuses_a_bridge_to_a_value_spelled_in_another_case");
	expect(s, "What is the name of the stadium of the concert Super bootcamp?", &evidence,
	       "SELECT T1.Name FROM stadium AS T1 JOIN concert AS T2 ON T2.Stadium_ID = T1.Stadium_ID WHERE "
	       "T2.concert_Name = 'Super bootcamp'",
	       "a_name_of_the_table_named_after_it");
	expect_refusal(s, "What is the total capacity of stadiums of the concert Super bootcamp?", &evidence,
		       "count_over_join", "refuses_a_total_over_a_repeating_join");
	set_value(0, 2, 1, "Glasgow", "glasgow");
	expect(s, "What are the names of stadiums located in Glasgow?", &evidence,
	       "SELECT Name FROM stadium WHERE Location = 'Glasgow'", "verb_of_the_value_column");
	expect_refusal(s, "How many concerts are in stadiums whose location is not Glasgow?", &evidence, "unread_negation",
		       "refuses_not_a_value_of_the_joined_table");
}

/* Readings through WordNet: verbs relating a join's tables, "never <verb> any", superlative adjectives. */
static void wordnet_shapes(const struct schema *s)
{
	struct wordnet *wn = NULL;
	struct t2s_error err = {0};
	if (wordnet_load(NULL, &wn, &err) < 0) {
		TAP_OK(0, "wordnet_loads_for_the_builtin");
		return;
	}
	static const struct shape_case CASES[] = {
		{"What is the location of the stadium that held the most concerts?",
		 "SELECT T1.Location FROM stadium AS T1 JOIN concert AS T2 ON T2.Stadium_ID = T1.Stadium_ID GROUP BY "
		 "T1.Stadium_ID ORDER BY count(*) DESC LIMIT 1", "verb_between_the_joined_tables"},
		{"How many stadiums never hosted any concerts?",
		 "SELECT count(*) FROM stadium WHERE Stadium_ID NOT IN (SELECT Stadium_ID FROM concert WHERE Stadium_ID IS "
		 "NOT NULL)", "never_verb_any_table"},
		{"What is the name of the oldest singer?", "SELECT Name FROM singer ORDER BY Age DESC NULLS LAST LIMIT 1",
		 "superlative_adjective_attribute"},
		{"What is the name of the youngest singer?", "SELECT Name FROM singer ORDER BY Age ASC NULLS LAST LIMIT 1",
		 "superlative_adjective_low_end"},
	};
	wordnet_now = wn;
	expect_all(s, CASES, sizeof(CASES) / sizeof(CASES[0]));
	expect_refusal(s, "Which singers contain the most concerts?", NULL, "unread_word",
		       "refuses_a_verb_of_a_condition_of_its_own");
	wordnet_now = NULL;
	wordnet_free(wn);
}

static void refusals(const struct schema *s)
{
	expect_refusal(s, "Which singers sing loudly?", NULL, "unread_word", "refuses_unread_word");
	expect_refusal(s, "Delete all singers.", NULL, "unread_word", "refuses_a_write");
	expect_refusal(s, "Tell me a joke.", NULL, "no_names", "refuses_no_schema_name");
	expect_refusal(s, "What are the names?", NULL, "ambiguous_table", "refuses_ambiguous_table");
	expect_refusal(s, "What is the average country of singers?", NULL, "not_a_number", "refuses_avg_of_text");
	expect_refusal(s, "Which stadiums have the most singers?", NULL, "no_table", "refuses_tables_no_key_joins");
	expect_refusal(s, "How many singers are not from France or Spain?", NULL, "unread_word", "refuses_negation");
	char long_q[4096] = "How many singers";
	for (int i = 0; i < 200; i++)
		strcat(long_q, " and");
	expect_refusal(s, long_q, NULL, "too_long", "refuses_a_question_longer_than_it_reads");
	expect_refusal(s, "42 3.5 -7 1,000", NULL, "no_names", "refuses_numbers_alone");
	expect_refusal(s, "Wie viele S\xc3\xa4nger gibt es? \xe2\x80\x9csingers\xe2\x80\x9d", NULL, "unread_quote",
		       "refuses_other_languages_and_curly_quotes");
	set_value(0, 0, 2, "France", "france");
	values[1] = (struct evidence_value){.table = 0, .column = 2, .value = "Spain", .matched = "spain", .score = 1};
	evidence.n_values = 2;
	expect_refusal(s, "How many singers are from France and Spain?", &evidence, "one_column_two_values",
		       "refuses_two_values_of_one_column");
}

/* people(person_id PK, first_name, last_name): names joined by "and" share their last word. */
static void coordinated_names(void)
{
	struct schema *s = schema_new("db", DB_ENGINE_SQLITE);
	s->n_tables = 1;
	s->tables = arena_calloc(&s->arena, 1, sizeof(struct schema_table));
	struct schema_table *p = &s->tables[0];
	p->schema = "main";
	p->name = "people";
	p->n_columns = 3;
	p->columns = arena_calloc(&s->arena, 3, sizeof(struct schema_column));
	engine_now = DB_ENGINE_SQLITE;
	column(&p->columns[0], "person_id", "INTEGER");
	column(&p->columns[1], "first_name", "TEXT");
	column(&p->columns[2], "last_name", "TEXT");
	TAP_SETUP(schema_finish(s));
	expect(s, "What are the first and last names of people?", NULL, "SELECT first_name, last_name FROM people",
	       "names_joined_by_and");
	set_value(0, 0, 1, "Ann", "ann");
	expect_refusal(s, "What is the first name of the people whose first name is Ann?", &evidence, "select_filtered",
		       "refuses_a_column_its_own_value_picks");
	schema_unref(s);
}

/* clubs(club_id PK, club), video_games(game_id PK, gname, gtype), ref_club_types(club_type_code PK,
   club_type_description): "types" names gtype of the video games, and ref_club_types by its name's tail beside
   clubs. */
static const char *const GAMES[3] = {"clubs", "video_games", "ref_club_types"};
static const char *const GAMES_COLUMNS[3][3] = {{"club_id", "club", NULL}, {"game_id", "gname", "gtype"},
						{"club_type_code", "club_type_description", NULL}};

/* products(product_id PK, product_name, product_category_code -> ref_product_categories), clubs(club_id PK, club),
   ref_product_categories(product_category_code PK, product_category_description): "category" names the key
   product_category_code, and the lookup table by its name's tail beside products. */
static const char *const PRODUCTS[3] = {"products", "clubs", "ref_product_categories"};
static const char *const PRODUCTS_COLUMNS[3][3] = {{"product_id", "product_name", "product_category_code"},
						   {"club_id", "club", NULL},
						   {"product_category_code", "product_category_description", NULL}};

/* The schema of tables names with columns cols, listed in `order` (indexes into names; SQLite and PostgreSQL list
   tables as created, MySQL by name); the caller unrefs it. */
static struct schema *three_tables(const char *const names[3], const char *const cols[3][3], const int order[3])
{
	struct schema *s = schema_new("db", DB_ENGINE_SQLITE);
	engine_now = DB_ENGINE_SQLITE;
	s->n_tables = 3;
	s->tables = arena_calloc(&s->arena, 3, sizeof(struct schema_table));
	for (int i = 0; i < 3; i++) {
		struct schema_table *t = &s->tables[i];
		int k = order[i];
		t->schema = "main";
		t->name = names[k];
		t->n_columns = cols[k][2] ? 3 : 2;
		t->columns = arena_calloc(&s->arena, t->n_columns, sizeof(struct schema_column));
		for (size_t c = 0; c < t->n_columns; c++)
			column(&t->columns[c], cols[k][c], c == 0 && k != 2 ? "INTEGER" : "TEXT");
		t->primary_key = arena_calloc(&s->arena, 1, sizeof(char *));
		t->primary_key[0] = cols[k][0];
		t->n_primary_key = 1;
		if (k == 0 && cols == PRODUCTS_COLUMNS)
			foreign_key(&s->arena, t, "product_category_code", "ref_product_categories", "product_category_code");
	}
	TAP_SETUP(schema_finish(s));
	return s;
}

static struct schema *games_schema(const int order[3])
{
	return three_tables(GAMES, GAMES_COLUMNS, order);
}

/* The mention bi_mention_from finds at word `at` of question: its table's name ("-": none) and its first
   candidate column ("-": none), as "table column" in ret. */
static void mention_of(const struct schema *s, const char *question, size_t at, char *ret, size_t size)
{
	struct bi_words *w = calloc(1, sizeof(*w));
	snprintf(ret, size, "(no memory)");
	if (!w)
		return;
	bi_split(question, w);
	for (size_t i = 0; i < w->ws.n; i++)
		w->mention_at[i] = -1;
	struct bi_mention m = bi_mention_from(s, w, at);
	snprintf(ret, size, "%s %s", m.table >= 0 ? s->tables[m.table].name : "-",
		 m.n_cands > 0 ? s->tables[m.cands[0].table].columns[m.cands[0].column].name : "-");
	free(w);
}

/* The reading does not depend on the order the schema lists its tables in. */
static void table_order(void)
{
	static const int orders[2][3] = {{0, 1, 2}, {2, 0, 1}};
	static const char *const label[2] = {"tail_table_last", "tail_table_first"};
	for (int o = 0; o < 2; o++) {
		struct schema *s = games_schema(orders[o]);
		char name[96];
		snprintf(name, sizeof(name), "a_tail_named_table_gives_way_to_a_column_%s", label[o]);
		expect_refusal(s, "Show all video games and their types.", NULL, "table_listed", name);
		snprintf(name, sizeof(name), "a_column_of_the_named_table_read_%s", label[o]);
		expect(s, "What are the types of video games?", NULL, "SELECT DISTINCT gtype FROM video_games", name);
		char got[160];
		mention_of(s, "Show all video games and their types.", 6, got, sizeof(got));
		snprintf(name, sizeof(name), "types_names_the_column_not_the_tail_named_table_%s", label[o]);
		TAP_STR_EQ(got, "- gtype", name);
		schema_unref(s);
		s = three_tables(PRODUCTS, PRODUCTS_COLUMNS, orders[o]);
		mention_of(s, "List the products in the category Seeds.", 5, got, sizeof(got));
		snprintf(name, sizeof(name), "a_key_referring_to_the_tail_named_table_names_it_too_%s", label[o]);
		TAP_STR_EQ(got, "ref_product_categories product_category_code", name);
		schema_unref(s);
	}
}

int main(void)
{
	words_and_names();
	coordinated_names();
	table_order();
	struct schema *s = make_schema(DB_ENGINE_SQLITE);
	shapes(s);
	joined_shapes(s);
	wordnet_shapes(s);
	refusals(s);
	schema_unref(s);
	struct schema *pg = make_schema(DB_ENGINE_POSTGRES);
	expect(pg, "What are the names of singers whose age is at least 30?", NULL,
	       "SELECT \"Name\" FROM singer WHERE \"Age\" >= 30", "postgres_quotes_mixed_case");
	expect(pg, "What is the total capacity of stadiums?", NULL, "SELECT sum(\"Capacity\") FROM stadium",
	       "postgres_aggregate");
	schema_unref(pg);
	return tap_done();
}
