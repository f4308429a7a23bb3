/*
 * test_builtin_corpus.c - the built-in generator's golden corpus
 * (tests/unit/builtin_corpus.txt): each line a reading on one of the
 * fixture schemas below - the question, the SQL it is written as or the
 * refusal code, and its claims (which rule read each word, and which rule
 * refused) - checked whole; then every rule of the built-in's rule tables
 * must be named by the claims of some line, so a rule whose lines are
 * removed fails here.
 *
 * Corpus lines, tab-separated: fixture, stored values ("-" or
 * "table.column=Value" joined by ";": the evidence stage's finds), the
 * question, "SQL" or "refused:<code>", the claims ("word=rule" for each word
 * a rule read, in order, then "!rule" for the rule that refused).  "#"
 * opens a comment line.  With T2S_CORPUS_PRINT=1 in the environment the
 * test also prints each line as the built-in reads it now (to stderr), to
 * write new lines from.
 */
#include "pipeline/builtin/builtin.h"
#include "pipeline/builtin/builtin_reader.h"
#include "pipeline/text/wordnet.h"

#include "tests/unit/tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The fixtures: tables separated by ";", each "name(column type [pk] [{sample sample}] [-> table.column],
 * ...)"; types "int", "real", "text", "date" (SQLite spelling).  Written for this corpus; no dataset's.
 */
static const struct {
	const char *name;
	const char *spec;
} FIXTURES[] = {
	{"concert", "singer(Singer_ID int pk, Name text, Country text, Age int, Net_Worth_Millions real);"
		    "concert(concert_ID int pk, concert_Name text, Year int, Stadium_ID int -> stadium.Stadium_ID);"
		    "stadium(Stadium_ID int pk, Location text, Capacity int, Name text);"
		    "singer_in_concert(concert_ID int -> concert.concert_ID, Singer_ID int -> singer.Singer_ID)"},
	{"school", "student(student_id int pk, name text, sex text {F M}, age int, city text, enrolled_year int, "
		   "credits int, advisor_id int -> teacher.teacher_id);"
		   "teacher(teacher_id int pk, name text, department text, salary real, hire_year int);"
		   "course(course_id int pk, title text, organizer text, fee real, start_date date);"
		   "enrollment(student_id int -> student.student_id, course_id int -> course.course_id, grade text)"},
	{"club", "member(member_id int pk, name text, age int, height real, club_id int -> club.club_id);"
		 "club(club_id int pk, name text, city text, budget real)"},
};

#define N_FIXTURES (sizeof(FIXTURES) / sizeof(FIXTURES[0]))

static const char *type_of(const char *t)
{
	return strcmp(t, "int") == 0 ? "INTEGER" : strcmp(t, "real") == 0 ? "REAL" : strcmp(t, "date") == 0 ? "DATE"
											   : "TEXT";
}

/* The words of s up to one of the stop bytes, trimmed, copied into the arena. */
static char *token(struct arena *a, const char **s, const char *stop)
{
	while (**s == ' ')
		(*s)++;
	size_t n = strcspn(*s, stop);
	size_t m = n;
	while (m > 0 && (*s)[m - 1] == ' ')
		m--;
	char *t = arena_strndup(a, *s, m);
	*s += n;
	return t;
}

/* One column spec ("name type [pk] [{a b}] [-> t.c]") of table t; fills c and t's keys. */
static void add_column(struct arena *a, struct schema_table *t, struct schema_column *c, char *spec)
{
	char *words[8] = {"", "text"};
	size_t n = 0;
	for (char *save = NULL, *w = strtok_r(spec, " ", &save); w && n < 8; w = strtok_r(NULL, " ", &save))
		words[n++] = w;
	*c = (struct schema_column){.name = words[0], .type = type_of(words[1]), .nullable = true};
	for (size_t k = 2; k < n; k++) {
		if (strcmp(words[k], "pk") == 0) {
			t->primary_key = arena_calloc(a, 1, sizeof(char *));
			t->primary_key[0] = c->name;
			t->n_primary_key = 1;
		} else if (words[k][0] == '{') {
			c->samples = arena_calloc(a, 8, sizeof(char *));
			for (; k < n && c->n_samples < 8; k++) {
				char *v = words[k] + (words[k][0] == '{');
				size_t len = strlen(v);
				bool last = len > 0 && v[len - 1] == '}';
				c->samples[c->n_samples++] = arena_strndup(a, v, len - last);
				if (last)
					break;
			}
		} else if (strcmp(words[k], "->") == 0 && k + 1 < n) {
			char *dot = strchr(words[k + 1], '.');
			struct schema_foreign_key *fk = &t->foreign_keys[t->n_foreign_keys++];
			fk->columns = arena_calloc(a, 1, sizeof(char *));
			fk->columns[0] = c->name;
			fk->n_columns = 1;
			fk->ref_table = arena_strndup(a, words[k + 1], (size_t)(dot - words[k + 1]));
			fk->ref_columns = arena_calloc(a, 1, sizeof(char *));
			fk->ref_columns[0] = dot + 1;
			k++;
		}
	}
}

static struct schema *make_fixture(const char *spec)
{
	struct schema *s = schema_new("db", DB_ENGINE_SQLITE);
	struct arena *a = &s->arena;
	size_t n = 1;
	for (const char *p = spec; *p; p++)
		n += *p == ';';
	s->tables = arena_calloc(a, n, sizeof(struct schema_table));
	for (const char *p = spec; *p;) {
		struct schema_table *t = &s->tables[s->n_tables++];
		t->schema = "main";
		t->name = token(a, &p, "(");
		p++;
		char *cols = token(a, &p, ")");
		p += *p == ')';
		p += *p == ';';
		size_t nc = 1;
		for (const char *c = cols; *c; c++)
			nc += *c == ',';
		t->columns = arena_calloc(a, nc, sizeof(struct schema_column));
		t->foreign_keys = arena_calloc(a, nc, sizeof(struct schema_foreign_key));
		for (char *save = NULL, *c = strtok_r(cols, ",", &save); c; c = strtok_r(NULL, ",", &save))
			add_column(a, t, &t->columns[t->n_columns++], c);
	}
	TAP_SETUP(schema_finish(s));
	return s;
}

/* The stored values of a line ("-" or "table.column=Value;..."), as the evidence stage reports them. */
struct values {
	struct evidence_value v[8];
	char text[8][64], matched[8][64];
	struct evidence_result ev;
};

static bool read_values(const struct schema *s, const char *spec, struct values *out)
{
	memset(out, 0, sizeof(*out));
	out->ev.values = out->v;
	if (strcmp(spec, "-") == 0)
		return true;
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *save = NULL, *item = strtok_r(buf, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
		char *dot = strchr(item, '.'), *eq = strchr(item, '=');
		if (!dot || !eq || out->ev.n_values == 8)
			return false;
		*dot = *eq = '\0';
		int table = -1, column = -1;
		for (size_t t = 0; t < s->n_tables; t++)
			if (strcmp(s->tables[t].name, item) == 0)
				table = (int)t;
		for (size_t c = 0; table >= 0 && c < s->tables[table].n_columns; c++)
			if (strcmp(s->tables[table].columns[c].name, dot + 1) == 0)
				column = (int)c;
		if (column < 0)
			return false;
		size_t k = out->ev.n_values++;
		snprintf(out->text[k], sizeof(out->text[k]), "%s", eq + 1);
		for (size_t i = 0; i <= strlen(out->text[k]); i++)
			out->matched[k][i] = (char)(out->text[k][i] >= 'A' && out->text[k][i] <= 'Z' ? out->text[k][i] + 32
												   : out->text[k][i]);
		out->v[k] = (struct evidence_value){.table = table, .column = column, .value = out->text[k],
						    .matched = out->matched[k], .score = 0.8, .source = "value_index"};
	}
	return true;
}

/* The claims of r as a corpus line writes them. */
static void claims_text(const struct builtin_result *r, char *out, size_t size)
{
	size_t n = 0;
	out[0] = '\0';
	for (size_t i = 0; i < r->n_claims && n < size; i++)
		if (r->claims[i].rule)
			n += (size_t)snprintf(out + n, size - n, "%s%s=%s", n ? " " : "", r->claims[i].word, r->claims[i].rule);
	if (r->refused_by && n < size)
		snprintf(out + n, size - n, "%s!%s", n ? " " : "", r->refused_by);
}

/* Rule names the corpus's claims name (each once). */
static const char *named[256];
static size_t n_named;

static void note_names(const char *claims)
{
	char buf[2048];
	snprintf(buf, sizeof(buf), "%s", claims);
	for (char *save = NULL, *c = strtok_r(buf, " ", &save); c; c = strtok_r(NULL, " ", &save)) {
		const char *rule = c[0] == '!' ? c + 1 : strchr(c, '=') ? strchr(c, '=') + 1 : NULL;
		bool seen = !rule;
		for (size_t k = 0; k < n_named && !seen; k++)
			seen = strcmp(named[k], rule) == 0;
		if (!seen && n_named < 256)
			named[n_named++] = strdup(rule);
	}
}

/* Split line at tabs into at most max fields; their count. */
static size_t fields(char *line, char **f, size_t max)
{
	size_t n = 0;
	for (char *p = line; n < max;) {
		f[n++] = p;
		char *tab = strchr(p, '\t');
		if (!tab)
			break;
		*tab = '\0';
		p = tab + 1;
	}
	return n;
}

static void run_line(char *line, size_t lineno, struct schema *const *schemas, const struct wordnet *wn, bool print)
{
	char *f[5];
	if (fields(line, f, 5) != 5) {
		TAP_OK(0, "corpus_line_has_five_fields");
		printf("#   line %zu\n", lineno);
		return;
	}
	const struct schema *s = NULL;
	for (size_t k = 0; k < N_FIXTURES; k++)
		if (strcmp(FIXTURES[k].name, f[0]) == 0)
			s = schemas[k];
	struct values *v = malloc(sizeof(*v));
	if (!s || !v || !read_values(s, f[1], v)) {
		TAP_OK(0, "corpus_line_fixture_and_values");
		printf("#   line %zu: fixture '%s', values '%s'\n", lineno, f[0], f[1]);
		free(v);
		return;
	}
	struct builtin_input in = {.question = f[2], .schema = s, .evidence = v->ev.n_values ? &v->ev : NULL,
				   .wordnet = wn};
	struct builtin_result r;
	char got[1024], claims[2048];
	if (builtin_generate(&in, &r) < 0) {
		TAP_OK(0, "corpus_line_reads");
		free(v);
		return;
	}
	if (r.sql)
		snprintf(got, sizeof(got), "%s", r.sql);
	else
		snprintf(got, sizeof(got), "refused:%s", r.refusal);
	claims_text(&r, claims, sizeof(claims));
	bool ok = strcmp(got, f[3]) == 0 && strcmp(claims, f[4]) == 0;
	char name[64];
	snprintf(name, sizeof(name), "corpus_line_%zu", lineno);
	if (!TAP_OK(ok, name))
		printf("#   %s\n#   got:  %s\n#         %s\n#   want: %s\n#         %s\n", f[2], got, claims, f[3], f[4]);
	if (print)
		fprintf(stderr, "%s\t%s\t%s\t%s\t%s\n", f[0], f[1], f[2], got, claims);
	note_names(f[4]);
	builtin_result_release(&r);
	free(v);
}

int main(void)
{
	const char *root = getenv("T2S_SOURCE_ROOT");
	char path[4096];
	snprintf(path, sizeof(path), "%s/tests/unit/builtin_corpus.txt", root ? root : ".");
	FILE *fp = fopen(path, "r");
	if (!TAP_OK(fp != NULL, "corpus_file_opens")) {
		printf("#   %s\n", path);
		return tap_done();
	}
	struct wordnet *wn = NULL;
	struct t2s_error err = {0};
	if (!TAP_OK(wordnet_load(NULL, &wn, &err) == 0, "wordnet_loads_for_the_corpus")) {
		fclose(fp);
		return tap_done();
	}
	struct schema *schemas[N_FIXTURES];
	for (size_t k = 0; k < N_FIXTURES; k++)
		schemas[k] = make_fixture(FIXTURES[k].spec);
	bool print = getenv("T2S_CORPUS_PRINT") != NULL;
	char line[4096];
	size_t lineno = 0, n_lines = 0;
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '\0' || line[0] == '#')
			continue;
		run_line(line, lineno, schemas, wn, print);
		n_lines++;
	}
	fclose(fp);
	TAP_OK(n_lines > 0, "corpus_has_lines");
	/* every rule of every phase named by some line's claims */
	size_t n_phases;
	const struct bi_phase *const *phases = bi_phases(&n_phases);
	for (size_t p = 0; p < n_phases; p++)
		for (size_t k = 0; k < phases[p]->n_rules; k++) {
			const char *rule = phases[p]->rules[k].name;
			bool found = false;
			for (size_t i = 0; i < n_named && !found; i++)
				found = strcmp(named[i], rule) == 0;
			char name[96];
			snprintf(name, sizeof(name), "corpus_covers_rule_%s", rule);
			if (!TAP_OK(found, name))
				printf("#   no corpus line's claims name the %s rule '%s'\n", phases[p]->name, rule);
		}
	for (size_t i = 0; i < n_named; i++)
		free((char *)named[i]);
	for (size_t k = 0; k < N_FIXTURES; k++)
		schema_unref(schemas[k]);
	wordnet_free(wn);
	return tap_done();
}
